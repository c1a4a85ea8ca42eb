//! `tfrc ns3 SCENARIO.toml --out DIR`: the arguments, filled into `tfrc-ns3`'s typed
//! [`RunOptions`], and the printing of what each run produced. The command line lives here, at
//! the edge: `tfrc-ns3` itself has no clap or anyhow.

use core::time::Duration;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use tfrc_ns3::{run_scenario, BbrModel, BuildOptions, RunOptions, RunOutcome};

use crate::reference_run::{print_limits, ScenarioRunArgs};

/// Arguments of `tfrc ns3`.
#[derive(Debug, Args)]
#[command(
    after_help = "The ns-3 program (crates/tfrc-ns3/ns3/tfrc-ns3.cc, built into the \
    binary) is compiled against the installed ns-3.37 (Debian: libns3-dev) on first use and \
    cached in $XDG_CACHE_HOME/tfrc (else ~/.cache/tfrc). What ns-3 cannot express (TFRC flows, \
    markers, traces, …) is listed in ns3-unsupported.txt of each run; see docs/ns3.md."
)]
pub struct Ns3Args {
    /// The scenario, its overrides and the output directory.
    #[command(flatten)]
    pub run: ScenarioRunArgs,
    /// Keep the run description (ns3-run.txt), the program's samples and output after a
    /// successful run.
    #[arg(long)]
    pub keep: bool,
    /// Write the run description and the list of unsupported features only; build and run
    /// nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Kill the ns-3 program after this many seconds.
    #[arg(long, default_value_t = 3600)]
    pub timeout: u64,
    /// The C++ compiler that builds the ns-3 program.
    #[arg(long, default_value = "g++")]
    pub cxx: PathBuf,
    /// The pkg-config that finds ns-3's modules (ns3-core, ns3-internet, …).
    #[arg(long, default_value = "pkg-config")]
    pub pkg_config: PathBuf,
    /// Run BBR flows with ns-3.37's TcpBbr exactly as packaged. By default the program applies
    /// two upstream fixes ns-3.37 predates (#1026, ns-3.41; #735, ns-3.42), without which
    /// ns-3.37's BBR loses its bandwidth estimate after a retransmission timeout (docs/ns3.md).
    #[arg(long)]
    pub bbr_as_packaged: bool,
}

/// Runs `tfrc ns3`: loads the scenario, applies the overrides, runs ns-3 (or only writes the
/// run descriptions with `--dry-run`) and prints what could not be expressed and the times.
pub fn run(args: &Ns3Args) -> Result<()> {
    run_outcomes(args).map(|_| ())
}

/// [`run`], returning what each variant's run produced.
pub fn run_outcomes(args: &Ns3Args) -> Result<Vec<RunOutcome>> {
    let scenario = args.run.load()?;
    let options = RunOptions {
        build: BuildOptions {
            cxx: args.cxx.clone(),
            pkg_config: args.pkg_config.clone(),
            cache_dir: None,
        },
        timeout: Duration::from_secs(args.timeout),
        keep: args.keep || args.dry_run,
        dry_run: args.dry_run,
        bbr: if args.bbr_as_packaged {
            BbrModel::AsPackaged
        } else {
            BbrModel::UpstreamFixes
        },
    };
    let outcomes = run_scenario(&scenario, &args.run.out, &options)
        .with_context(|| format!("tfrc ns3 {}", args.run.scenario.display()))?;
    for outcome in &outcomes {
        print_limits(
            "ns-3",
            &outcome.scenario,
            &outcome.unsupported,
            &outcome.notes,
        );
        if let Some(compile) = outcome.compile_time {
            println!(
                "built the ns-3 program in {:.1} s (cached for later runs)",
                compile.as_secs_f64()
            );
        }
        match outcome.wall_time {
            Some(wall) => println!(
                "{}: ns-3 ran in {:.3} s; results in {}",
                outcome.scenario,
                wall.as_secs_f64(),
                outcome.directory.display()
            ),
            None => println!(
                "{}: dry run: run description in {}",
                outcome.scenario,
                outcome.directory.join(tfrc_ns3::DESCRIPTION_NAME).display()
            ),
        }
    }
    Ok(outcomes)
}
