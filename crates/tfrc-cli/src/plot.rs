//! `tfrc plot`: saved runs overlaid on one figure (ours, ns-2's via `tfrc ns2`, the testbed's),
//! as flent plots its saved test data.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use tfrc_analysis::plot::{self, LinePlot, Source};
use tfrc_analysis::run::{Direction, Run};

/// `tfrc plot RUN_DIR... --out FILE`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// Run directories, each with the files a run writes (`summary.json`, `flows.csv`,
    /// `state.csv`, plain or `.csv.gz`): `tfrc sim --out`, `tfrc ns2 --out`, `tfrc testbed run
    /// --out`, a variant's directory of a sweep, or a run of `tfrc reproduce` (`runs/ID/RUN`).
    #[arg(required = true, value_name = "RUN_DIR")]
    pub runs: Vec<PathBuf>,
    /// What to draw: the receiver's throughput, the sender's, the goodput, or the senders' RTT
    /// estimate, per flow and 1 output interval; a state.csv column over time; the CDF of a
    /// flow's samples; or each flow's goodput against its 95th percentile one-way delay.
    #[arg(long, value_enum, default_value_t = PlotKind::Throughput)]
    pub kind: PlotKind,
    /// The state.csv column of `--kind state` (default x_bps) and `--kind cdf` (default: the
    /// receiver throughput per interval, flows.csv's recv_kbps): x_bps, x_recv_bps, p, rtt_s,
    /// rto_s, cwnd, …
    #[arg(long, value_name = "COLUMN")]
    pub column: Option<String>,
    /// Only this flow (repeatable; default: every TFRC and TCP flow, or every flow when a run
    /// has no TFRC or TCP flow).
    #[arg(long = "flow", value_name = "NAME")]
    pub flows: Vec<String>,
    /// The image to write: `.png` or `.svg`.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
    /// Title (default: what is drawn and the runs' scenario names).
    #[arg(long)]
    pub title: Option<String>,
}

/// The kinds of figure `tfrc plot` draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlotKind {
    /// Receiver throughput over time.
    Throughput,
    /// Sender throughput over time.
    Sent,
    /// Goodput (payload the application got) over time.
    Goodput,
    /// The senders' RTT estimate over time (TFRC and TCP flows).
    Rtt,
    /// A state.csv column over time (`--column`, default x_bps: TFRC's allowed rate).
    State,
    /// The distribution of a flow's samples, one CDF per run and flow (`--column`, default the
    /// receiver throughput per output interval).
    Cdf,
    /// One point per flow at its 95th percentile one-way delay and its goodput, one colour
    /// per run (Pantheon's throughput-against-delay view; simulator runs, which measure delay).
    DelayThroughput,
}

/// Runs `tfrc plot`.
pub fn run(args: &PlotArgs) -> Result<()> {
    let runs: Vec<Run> = args
        .runs
        .iter()
        .map(|dir| {
            Run::load(dir).with_context(|| format!("{}: not a run directory", dir.display()))
        })
        .collect::<Result<_>>()?;
    let names = legend_names(&args.runs);
    for flow in &args.flows {
        if !runs
            .iter()
            .any(|run| run.summary.flows.iter().any(|f| &f.name == flow))
        {
            bail!("--flow {flow}: no run has a flow of that name");
        }
    }
    let sources: Vec<Source<'_>> = runs
        .iter()
        .zip(&names)
        .map(|(run, name)| Source { name, run })
        .collect();
    let flows: Vec<&str> = if args.flows.is_empty() {
        default_flows(&runs)
    } else {
        args.flows.iter().map(String::as_str).collect()
    };
    let mut scenarios: Vec<&str> = Vec::new();
    for run in &runs {
        if !scenarios.contains(&run.summary.scenario.as_str()) {
            scenarios.push(&run.summary.scenario);
        }
    }
    let column = state_column(args)?;
    let what = figure_subject(args.kind, column);
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| format!("{what}: {}", scenarios.join(" vs ")));
    let figure = figure(args.kind, &title, (&sources, &flows), column)?;
    figure.draw(&args.out)?;
    println!("{}", args.out.display());
    Ok(())
}

/// The `state.csv` column `--column` names (checked), `x_bps` for `--kind state` without one,
/// none otherwise; `--column` with another kind is an error.
fn state_column(args: &PlotArgs) -> Result<Option<&str>> {
    Ok(match (&args.column, args.kind) {
        (None, PlotKind::State) => Some("x_bps"),
        (None, _) => None,
        (Some(column), PlotKind::State | PlotKind::Cdf) => {
            let known = Run::state_columns();
            if !known.contains(&column.as_str()) {
                bail!(
                    "--column {column}: not a state.csv column; the columns are {}",
                    known.join(", ")
                );
            }
            Some(column.as_str())
        }
        (Some(_), _) => bail!("--column applies to --kind state and --kind cdf"),
    })
}

/// What the figure shows, for its default title.
fn figure_subject(kind: PlotKind, column: Option<&str>) -> String {
    match (kind, column) {
        (PlotKind::Throughput, _) => "receiver throughput".to_owned(),
        (PlotKind::Sent, _) => "sender throughput".to_owned(),
        (PlotKind::Goodput, _) => "goodput".to_owned(),
        (PlotKind::Rtt, _) => "RTT estimate".to_owned(),
        (PlotKind::State, Some(column)) => column.to_owned(),
        (PlotKind::Cdf, Some(column)) => format!("CDF of {column}"),
        (PlotKind::Cdf | PlotKind::State, None) => "CDF of receiver throughput".to_owned(),
        (PlotKind::DelayThroughput, _) => "goodput against one-way delay".to_owned(),
    }
}

/// The figure of `kind` over the sources' flows, titled `title`.
fn figure(
    kind: PlotKind,
    title: &str,
    (sources, flows): (&[Source<'_>], &[&str]),
    column: Option<&str>,
) -> Result<LinePlot> {
    Ok(match kind {
        PlotKind::Throughput => {
            plot::throughput_over_time(title, sources, flows, &[Direction::Received])
        }
        PlotKind::Sent => plot::throughput_over_time(title, sources, flows, &[Direction::Sent]),
        PlotKind::Goodput => {
            plot::throughput_over_time(title, sources, flows, &[Direction::Goodput])
        }
        PlotKind::Rtt => plot::rtt_over_time(title, sources, flows),
        PlotKind::State => plot::state_over_time(title, sources, flows, column.unwrap_or("x_bps")),
        PlotKind::Cdf => match column {
            Some(column) => plot::cdf(title, column, sources, flows, |run, flow| {
                let series = run.state_column_series(flow, column);
                series.into_iter().map(|(_, value)| value).collect()
            }),
            None => plot::cdf(
                title,
                "receiver throughput per interval (kb/s)",
                sources,
                flows,
                |run, flow| {
                    let series = run.throughput_series(flow, Direction::Received);
                    series.into_iter().map(|(_, kbps)| kbps).collect()
                },
            ),
        },
        PlotKind::DelayThroughput => plot::delay_throughput(title, sources, flows)?,
    })
}

/// Every TFRC and TCP flow of the runs, or every flow when they have none (a UDP-only run), in
/// order of first appearance.
fn default_flows(runs: &[Run]) -> Vec<&str> {
    let mut protocol = Vec::new();
    let mut all = Vec::new();
    for flow in runs.iter().flat_map(|run| &run.summary.flows) {
        let name = flow.name.as_str();
        if !all.contains(&name) {
            all.push(name);
            if flow.kind.is_congestion_controlled() {
                protocol.push(name);
            }
        }
    }
    if protocol.is_empty() {
        all
    } else {
        protocol
    }
}

/// Legend names: each run directory's last component, or its whole path when two runs share
/// one.
fn legend_names(dirs: &[PathBuf]) -> Vec<String> {
    let short: Vec<String> = dirs
        .iter()
        .map(|dir| {
            dir.file_name().map_or_else(
                || dir.display().to_string(),
                |name| name.to_string_lossy().into_owned(),
            )
        })
        .collect();
    short
        .iter()
        .zip(dirs)
        .map(|(name, dir)| {
            if short.iter().filter(|other| *other == name).count() > 1 {
                dir.display().to_string()
            } else {
                name.clone()
            }
        })
        .collect()
}
