//! `tfrc ns2 SCENARIO.toml --out DIR`: the arguments, filled into `tfrc-ns2`'s typed
//! [`RunOptions`], and the printing of what each run produced. The command line lives here, at
//! the edge: `tfrc-ns2` itself has no clap or anyhow.

use core::time::Duration;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use tfrc_scenario::Scenario;

use tfrc_ns2::{run_scenario, RunOptions, RunOutcome, DEFAULT_NS_PATH};

/// Arguments of `tfrc ns2`.
#[derive(Debug, Args)]
pub struct Ns2Args {
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
    /// Keep the generated script (ns2.tcl) and ns-2's raw output after a successful run.
    #[arg(long)]
    pub keep_tcl: bool,
    /// Write the script and the list of unsupported features only; do not run ns-2.
    #[arg(long)]
    pub dry_run: bool,
    /// The ns-2 binary.
    #[arg(long, default_value = DEFAULT_NS_PATH)]
    pub ns: PathBuf,
    /// Kill ns-2 after this many seconds.
    #[arg(long, default_value_t = 3600)]
    pub timeout: u64,
}

/// Runs `tfrc ns2`: loads the scenario, applies the overrides, runs ns-2 (or only writes the
/// scripts with `--dry-run`) and prints what could not be expressed and the wall time.
pub fn run(args: &Ns2Args) -> Result<()> {
    run_outcomes(args).map(|_| ())
}

/// [`run`], returning what each variant's run produced (for a caller that compares with the
/// simulator).
pub fn run_outcomes(args: &Ns2Args) -> Result<Vec<RunOutcome>> {
    let mut scenario = Scenario::from_path(&args.scenario)?;
    let mut sets = args.sets.clone();
    if let Some(seed) = args.seed {
        sets.push(format!("seed={seed}"));
    }
    scenario.apply_sets(&sets)?;
    let options = RunOptions {
        ns_path: args.ns.clone(),
        timeout: Duration::from_secs(args.timeout),
        keep_tcl: args.keep_tcl || args.dry_run,
        dry_run: args.dry_run,
    };
    let outcomes = run_scenario(&scenario, &args.out, &options)
        .with_context(|| format!("tfrc ns2 {}", args.scenario.display()))?;
    for outcome in &outcomes {
        for line in &outcome.unsupported {
            eprintln!("{}: unsupported in ns-2: {line}", outcome.scenario);
        }
        for line in &outcome.notes {
            eprintln!("{}: note: {line}", outcome.scenario);
        }
        match outcome.wall_time {
            Some(wall) => println!(
                "{}: ns-2 ran in {:.3} s; results in {}",
                outcome.scenario,
                wall.as_secs_f64(),
                outcome.directory.display()
            ),
            None => println!(
                "{}: dry run: script in {}",
                outcome.scenario,
                outcome.directory.join("ns2.tcl").display()
            ),
        }
    }
    Ok(outcomes)
}
