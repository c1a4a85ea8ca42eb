//! What `tfrc ns2` and `tfrc ns3` share at the command line: the scenario and where its runs
//! go ([`ScenarioRunArgs`], flattened into both commands' arguments) and the report of each
//! run's unsupported features and approximations ([`print_limits`]).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use tfrc_scenario::Scenario;

/// The scenario a reference simulator runs, its overrides, and the output directory.
#[derive(Debug, Args)]
pub struct ScenarioRunArgs {
    /// The scenario file (TOML, see docs/scenario-format.md).
    pub scenario: PathBuf,
    /// Output directory (created); a scenario with a [sweep] gets one subdirectory per variant.
    #[arg(long)]
    pub out: PathBuf,
    /// Seed of the run (overrides the scenario's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override a scenario value, e.g. --set link.1.rate=2Mbps (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
}

impl ScenarioRunArgs {
    /// The scenario file with its `--set` overrides and `--seed` applied.
    pub fn load(&self) -> Result<Scenario> {
        let mut scenario = Scenario::from_path(&self.scenario)?;
        let mut sets = self.sets.clone();
        if let Some(seed) = self.seed {
            sets.push(format!("seed={seed}"));
        }
        scenario.apply_sets(&sets)?;
        Ok(scenario)
    }
}

/// Prints, on standard error, what `simulator` could not express of the run of `scenario`
/// and where its mapping is approximate.
pub fn print_limits(simulator: &str, scenario: &str, unsupported: &[String], notes: &[String]) {
    for line in unsupported {
        eprintln!("{scenario}: unsupported in {simulator}: {line}");
    }
    for line in notes {
        eprintln!("{scenario}: note: {line}");
    }
}
