//! `tfrc ns2`: a scenario in ns-2.35 (crate `tfrc-ns2`), then the same scenario in our simulator,
//! both plotted on one figure.

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use tfrc_analysis::plot::{self, Source};
use tfrc_analysis::run::{Direction, Run};
use tfrc_scenario::Scenario;
use tfrc_sim::simulation::Simulation;

/// Arguments of `tfrc ns2`.
#[derive(Debug, Args)]
pub struct Ns2CompareArgs {
    #[command(flatten)]
    ns2: crate::ns2_cmd::Ns2Args,
    /// Only run ns-2: no simulator run and no comparison figure.
    #[arg(long)]
    no_compare: bool,
}

/// Runs ns-2, then (unless `--no-compare` or `--dry-run`) our simulator on each variant into
/// `<run dir>/ours/`, and draws `<run dir>/ns2-vs-ours.{png,svg}`: the receiver throughput of
/// every flow in both, on the same axes.
pub fn run(args: &Ns2CompareArgs) -> Result<()> {
    let outcomes = crate::ns2_cmd::run_outcomes(&args.ns2)?;
    if args.no_compare || args.ns2.dry_run {
        return Ok(());
    }
    for outcome in outcomes {
        compare(&outcome.directory)?;
    }
    Ok(())
}

fn compare(directory: &Path) -> Result<()> {
    let scenario = Scenario::from_path(&directory.join("scenario.toml"))
        .map_err(anyhow::Error::new)
        .context("reading the scenario ns-2 ran")?;
    let ours_dir = directory.join("ours");
    Simulation::run(&scenario, Some(&ours_dir))
        .with_context(|| format!("{}: simulator run", scenario.name))?;
    let ns2 = Run::load(directory)?;
    let ours = Run::load(&ours_dir)?;
    // Every flow, UDP ones included (the default would leave the UDP background out, and a
    // UDP-only scenario with nothing to draw).
    let flows: Vec<&str> = ns2
        .summary
        .flows
        .iter()
        .map(|flow| flow.name.as_str())
        .collect();
    let plot = plot::throughput_over_time(
        &format!("{}: ns-2.35 and our simulator", scenario.name),
        &[
            Source {
                name: "ns-2.35",
                run: &ns2,
            },
            Source {
                name: "ours",
                run: &ours,
            },
        ],
        &flows,
        &[Direction::Received],
    );
    for extension in ["png", "svg"] {
        plot.draw(directory.join(format!("ns2-vs-ours.{extension}")))?;
    }
    for flow in &ns2.summary.flows {
        let rate = |run: &Run| {
            run.flow_summary(&flow.name)
                .and_then(|summary| summary.goodput_bps)
                .map_or("n/a".to_string(), |bps| format!("{:.1} kb/s", bps / 1000.0))
        };
        println!(
            "{}: flow {}: mean receiver throughput ns-2 {}, ours {}",
            scenario.name,
            flow.name,
            rate(&ns2),
            rate(&ours)
        );
    }
    println!(
        "{}: figure {}",
        scenario.name,
        directory.join("ns2-vs-ours.png").display()
    );
    Ok(())
}
