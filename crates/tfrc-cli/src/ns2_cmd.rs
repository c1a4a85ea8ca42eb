//! `tfrc ns2 SCENARIO.toml --out DIR`: the arguments, filled into `tfrc-ns2`'s typed
//! [`RunOptions`], and the printing of what each run produced. The command line lives here, at
//! the edge: `tfrc-ns2` itself has no clap or anyhow.

use core::time::Duration;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use tfrc_ns2::{run_scenario, RunOptions, RunOutcome, DEFAULT_NS_PATH};

use crate::reference_run::{print_limits, ScenarioRunArgs};

/// Arguments of `tfrc ns2`.
#[derive(Debug, Args)]
pub struct Ns2Args {
    /// The scenario, its overrides and the output directory.
    #[command(flatten)]
    pub run: ScenarioRunArgs,
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
    let scenario = args.run.load()?;
    let options = RunOptions {
        ns_path: args.ns.clone(),
        timeout: Duration::from_secs(args.timeout),
        keep_tcl: args.keep_tcl || args.dry_run,
        dry_run: args.dry_run,
    };
    let outcomes = run_scenario(&scenario, &args.run.out, &options)
        .with_context(|| format!("tfrc ns2 {}", args.run.scenario.display()))?;
    for outcome in &outcomes {
        print_limits(
            "ns-2",
            &outcome.scenario,
            &outcome.unsupported,
            &outcome.notes,
        );
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
