//! `tfrc sim`: run a scenario file in the simulator.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant as WallInstant};

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tfrc_scenario::Scenario;
use tfrc_sim::simulation::{Rows, Simulation, Summary};

/// Arguments of `tfrc sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Scenario file (TOML; see docs/scenario-format.md).
    pub scenario: PathBuf,
    /// Output directory: flows.csv, state.csv, links.csv, summary.json, scenario.toml (see
    /// docs/output-format.md). A scenario with a sweep writes one sub-directory per variant.
    #[arg(long, short, default_value = "out")]
    pub out: PathBuf,
    /// Seed of the run (overrides the file's `seed`); the same seed gives identical files.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override a key of the file, e.g. `--set duration=60s --set flow.a.target_rate=800kbps`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Run replication K of every variant, exactly as `tfrc reproduce` runs it: a seed derived
    /// from the file's seed (or `--seed`) and K, and flow starts jittered by up to one base RTT.
    #[arg(long, value_name = "K")]
    pub replication: Option<u32>,
    /// No progress bar and no summary table.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also capture packets: DIR/<flow>.pcap (every packet of the flow as it reaches its
    /// destination) and DIR/link-<from>-<to>.pcap (every packet leaving that link direction);
    /// IPv4 with synthetic UDP/TCP headers, TFRC on UDP port 5201, decoded by
    /// tools/wireshark/tfrc.lua. With a sweep, one subdirectory per variant.
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,
}

/// Loads a scenario with its `--set` overrides and `--seed`, and returns its variants.
pub fn load_variants(path: &Path, sets: &[String], seed: Option<u64>) -> Result<Vec<Scenario>> {
    let mut scenario = Scenario::from_path(path).map_err(anyhow::Error::new)?;
    scenario.apply_sets(sets).map_err(anyhow::Error::new)?;
    if let Some(seed) = seed {
        scenario.seed = seed;
    }
    scenario.expand().map_err(anyhow::Error::new)
}

/// A variant's sweep settings as `flows=2,delay=250ms` (empty outside a sweep).
pub fn variant_label(scenario: &Scenario) -> String {
    scenario
        .variant
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A file-system friendly directory name for a variant: `e002-grid[flows=2,delay=250ms]` →
/// `flows=2,delay=250ms`.
pub fn variant_directory(scenario: &Scenario) -> String {
    let name = if scenario.variant.is_empty() {
        scenario.name.clone()
    } else {
        variant_label(scenario)
    };
    name.chars()
        .map(|character| match character {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' | '=' | ',' => character,
            _ => '_',
        })
        .collect()
}

/// A finished run.
pub struct Finished {
    /// Its summary (also in `summary.json`).
    pub summary: Summary,
    /// Its rows, when kept in memory ([`run_scenario`] with `keep_rows`; empty otherwise).
    pub rows: Rows,
    /// Wall time it took.
    pub wall_time: Duration,
    /// Events the simulator processed.
    pub events: u64,
}

/// Runs one concrete scenario, with a progress bar (after two seconds of wall time, on a
/// terminal) and a timing line unless `quiet`; writes the run's files only with a `directory`,
/// keeps its rows in memory with `keep_rows` (each row exactly as its file would read back),
/// and captures its packets into `pcap` ([`Simulation::capture_to`]).
pub fn run_scenario(
    scenario: &Scenario,
    directory: Option<&Path>,
    keep_rows: bool,
    quiet: bool,
    pcap: Option<&Path>,
) -> Result<Finished> {
    let started = WallInstant::now();
    let which = format!("{} ({})", scenario.file(), scenario.name);
    let mut simulation = Simulation::new(scenario, directory)
        .with_context(|| format!("{which}: cannot build the simulation"))?;
    if keep_rows {
        simulation.keep_rows();
    }
    if let Some(pcap) = pcap {
        simulation
            .capture_to(pcap)
            .with_context(|| format!("{which}: cannot open the packet captures"))?;
    }
    let end = simulation.end();
    let bar = ProgressBar::with_draw_target(
        Some(end.as_nanos() / 1_000_000),
        ProgressDrawTarget::hidden(),
    );
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:30}] {pos}/{len} ms simulated, {elapsed} elapsed, eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message(scenario.name.clone());
    let step = core::time::Duration::from_millis(200);
    let mut shown = false;
    while simulation.now() < end {
        let next = (simulation.now() + step).min(end);
        simulation
            .run_until(next)
            .with_context(|| format!("{which}: simulation failed"))?;
        if !quiet && !shown && started.elapsed() > Duration::from_secs(2) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            shown = true;
        }
        bar.set_position(next.as_nanos() / 1_000_000);
    }
    bar.finish_and_clear();
    let events = simulation.events_processed();
    let (summary, rows) = simulation
        .finish_with_rows()
        .with_context(|| format!("{which}: cannot finish the run"))?;
    let elapsed = started.elapsed();
    if !quiet {
        eprintln!(
            "{}: {:.1} s simulated in {:.2} s wall time ({:.2} M events/s), seed {}",
            summary.scenario,
            summary.duration_s,
            elapsed.as_secs_f64(),
            events as f64 / elapsed.as_secs_f64().max(1e-9) / 1e6,
            summary.seed
        );
    }
    Ok(Finished {
        summary,
        rows,
        wall_time: elapsed,
        events,
    })
}

/// The end-of-run table: one line per flow, then the run-wide figures.
pub fn summary_table(summary: &Summary) -> String {
    let mut text = format!(
        "{:<16} {:<9} {:>12} {:>12} {:>9} {:>9} {:>9}\n",
        "flow", "kind", "sent kb/s", "goodput kb/s", "recv/sent", "mean p", "RTT ms"
    );
    let optional = |value: Option<f64>, scale: f64, decimals: usize| {
        value
            .map(|value| format!("{:.decimals$}", value * scale))
            .unwrap_or_else(|| "-".into())
    };
    for flow in &summary.flows {
        text += &format!(
            "{:<16} {:<9} {:>12} {:>12} {:>9} {:>9} {:>9}\n",
            flow.name,
            flow.kind,
            optional(flow.send_rate_bps, 0.001, 1),
            optional(flow.goodput_bps, 0.001, 1),
            optional(flow.receiving_ratio, 1.0, 4),
            optional(flow.mean_p, 1.0, 5),
            optional(flow.mean_rtt_s, 1000.0, 1),
        );
    }
    text += &format!(
        "Jain index {}; bottleneck {}; seed {}\n",
        optional(summary.jain_index, 1.0, 4),
        summary
            .bottleneck
            .as_ref()
            .map(|bottleneck| format!(
                "{}->{} utilization {}",
                bottleneck.from,
                bottleneck.to,
                optional(bottleneck.utilization, 100.0, 1) + " %"
            ))
            .unwrap_or_else(|| "none".into()),
        summary.seed
    );
    text
}

/// `tfrc sim`.
pub fn run(args: &SimArgs) -> Result<()> {
    let mut variants = load_variants(&args.scenario, &args.set, args.seed)?;
    if let Some(replication) = args.replication {
        variants = variants
            .iter()
            .map(|variant| variant.replicate(replication))
            .collect();
    }
    let several = variants.len() > 1;
    for scenario in &variants {
        let directory = if several {
            args.out.join(variant_directory(scenario))
        } else {
            args.out.clone()
        };
        let pcap = args.pcap.as_ref().map(|pcap| {
            if several {
                pcap.join(variant_directory(scenario))
            } else {
                pcap.clone()
            }
        });
        let summary = run_scenario(
            scenario,
            Some(&directory),
            false,
            args.quiet,
            pcap.as_deref(),
        )?
        .summary;
        if !args.quiet {
            if several {
                println!("== {} → {}", summary.scenario, directory.display());
            }
            print!("{}", summary_table(&summary));
        }
    }
    if !args.quiet {
        eprintln!("results in {}", args.out.display());
    }
    Ok(())
}
