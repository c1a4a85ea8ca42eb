//! `tfrc conformance`: our simulator against a reference simulator over a designed matrix of
//! cells, each run R times in both, compared by ensemble means with confidence intervals
//! (docs/conformance.md): ns-2.35 for the papers' TCPs and TFRC (`conformance/matrix.toml`),
//! ns-3.37 for today's TCPs (`conformance/modern.toml`, `--modern`).

mod matrix;
mod report;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use tfrc_ns2::RunOptions;
use tfrc_output::Summary;

use crate::reproduce::runner::{parallel_map, progress_bar};
use matrix::{Cell, CellSetup, Reference};
use report::{CellResult, Classes, MetricSet, RunMetrics};

/// Arguments of `tfrc conformance`.
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// The matrix file (its `reference` says which simulator ours is compared with) [default:
    /// conformance/matrix.toml, else the source tree's]
    #[arg(long)]
    matrix: Option<PathBuf>,
    /// Today's TCPs against ns-3.37: the matrix `conformance/modern.toml` (instead of --matrix).
    #[arg(long, conflicts_with = "matrix")]
    modern: bool,
    /// Only the cells marked `quick = true` (about 10), with 4 replications unless
    /// --replications says otherwise.
    #[arg(long)]
    quick: bool,
    /// Only this cell (repeatable).
    #[arg(long, value_name = "CELL")]
    only: Vec<String>,
    /// Replications per cell and simulator (default 16 against ns-2, 8 against ns-3, or 4 with
    /// --quick). 16 because one TFRC flow's whole-run p varies by about 50 % between
    /// replications: 8 estimate its mean to about ±35 %, wider than p's 20 % rule; the ns-3
    /// matrix judges throughput at 10 % and has no p (docs/conformance.md).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=1000))]
    replications: Option<u32>,
    /// Runs at once (default: the number of cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// Directory for conformance.csv, runs.csv, index.html and the runs.
    #[arg(long, default_value = "conformance-report")]
    out: PathBuf,
    /// The ns-2 binary.
    #[arg(long, default_value = tfrc_ns2::DEFAULT_NS_PATH)]
    ns: PathBuf,
    /// Keep every run's files (flows.csv, state.csv, links.csv); by default a run keeps its
    /// scenario.toml and summary.json, enough to rerun it with `tfrc ns2` or `tfrc sim`.
    #[arg(long)]
    keep_runs: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// Which simulator a run is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Simulator {
    /// The matrix's reference (ns-2 or ns-3).
    Reference(Reference),
    Ours,
}

impl Simulator {
    fn directory_name(self) -> &'static str {
        match self {
            Simulator::Reference(reference) => reference.key(),
            Simulator::Ours => "ours",
        }
    }
}

/// How the reference runs: ns-2's binary, or the ns-3 program built once for the whole matrix.
enum ReferenceRunner {
    Ns2(RunOptions),
    Ns3(tfrc_ns3::RunOptions),
}

impl ReferenceRunner {
    /// The simulator it runs.
    fn reference(&self) -> Reference {
        match self {
            ReferenceRunner::Ns2(_) => Reference::Ns2,
            ReferenceRunner::Ns3(_) => Reference::Ns3,
        }
    }
}

/// One run to do.
struct Job {
    cell: usize,
    replication: u32,
    simulator: Simulator,
}

/// What one run gave: its metrics, or why it failed; and ns-2's notes.
type JobOutcome = (Result<RunMetrics, String>, Vec<String>);

/// Runs the matrix, writes the report, prints the verdicts; fails when a cell expected to agree
/// does not (or a run fails).
pub fn run(args: &ConformanceArgs) -> Result<()> {
    let (reference, cells) = selected_cells(args)?;
    let replications = args.replications.unwrap_or(if args.quick {
        4
    } else {
        default_replications(reference)
    });
    // Every scenario is built (and checked) before anything runs.
    for cell in &cells {
        cell.scenario(0)?;
    }
    let runner = reference_runner(args, reference)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let jobs = all_jobs(cells.len(), replications, reference);
    let threads = crate::reproduce::runner::jobs_or_cores(args.jobs.map(usize::from));
    let started = std::time::Instant::now();
    let outcomes = run_jobs(args, &cells, &jobs, &runner, threads);
    let set = MetricSet::of(reference);
    let mut results = Vec::new();
    for (index, cell) in cells.iter().enumerate() {
        results.push(collect(index, cell, &jobs, &outcomes, set));
    }
    let header = format!(
        "{}, matrix {} (against {}), {} cells × {replications} replications × 2 simulators, {:.0} s on {threads} threads",
        tfrc_output::tool(),
        matrix_path(args).display(),
        reference.label(),
        cells.len(),
        started.elapsed().as_secs_f64()
    );
    write_runs_csv(&args.out.join("runs.csv"), &cells, &jobs, &outcomes, set)?;
    report::write_csv(&args.out.join("conformance.csv"), &results, reference)?;
    report::write_html(&args.out.join("index.html"), &results, &header, reference)?;
    print_results(args, &header, &results);
    let regressions: Vec<&str> = results
        .iter()
        .filter(|result| result.expect_agree && result.verdict() != "agrees")
        .map(|result| result.name.as_str())
        .collect();
    if !regressions.is_empty() {
        bail!(
            "{} cell(s) expected to agree (expect = \"agrees\" in {}) do not: {}",
            regressions.len(),
            matrix_path(args).display(),
            regressions.join(", ")
        );
    }
    Ok(())
}

/// The matrix of the papers' TCPs and TFRC against ns-2 (the default).
const MATRIX: &str = "conformance/matrix.toml";

/// The matrix of today's TCPs against ns-3 (`--modern`).
const MODERN_MATRIX: &str = "conformance/modern.toml";

/// The matrix file the arguments name.
fn matrix_path(args: &ConformanceArgs) -> PathBuf {
    match (&args.matrix, args.modern) {
        (Some(given), _) => given.clone(),
        (None, true) => crate::project_path(MODERN_MATRIX, Path::is_file),
        (None, false) => crate::project_path(MATRIX, Path::is_file),
    }
}

/// Replications per cell and simulator without `--replications` or `--quick`: 16 against ns-2
/// (p's 20 % rule needs them), 8 against ns-3 (throughput at 10 %, no p).
fn default_replications(reference: Reference) -> u32 {
    match reference {
        Reference::Ns2 => 16,
        Reference::Ns3 => 8,
    }
}

/// Finds ns-2, or builds the ns-3 program once for every run of the matrix.
fn reference_runner(args: &ConformanceArgs, reference: Reference) -> Result<ReferenceRunner> {
    match reference {
        Reference::Ns2 => {
            let ns_path = tfrc_ns2::find_ns(&args.ns).map_err(|_| {
                anyhow::anyhow!(
                    "ns-2 not found at {} (Debian: apt-get install ns2; or --ns PATH)",
                    args.ns.display()
                )
            })?;
            Ok(ReferenceRunner::Ns2(RunOptions {
                ns_path,
                timeout: Duration::from_secs(1800),
                keep_tcl: false,
                dry_run: false,
            }))
        }
        Reference::Ns3 => {
            let options = tfrc_ns3::RunOptions {
                timeout: Duration::from_secs(1800),
                ..tfrc_ns3::RunOptions::default()
            };
            tfrc_ns3::build_program(&options.build)
                .map_err(anyhow::Error::new)
                .context("cannot build the ns-3 program (Debian: apt-get install libns3-dev g++ pkg-config)")?;
            Ok(ReferenceRunner::Ns3(options))
        }
    }
}

/// The matrix's cells this run takes: the quick ones with `--quick`, those `--only` names
/// (an unknown name is an error listing the cells); at least one. With the matrix's reference.
fn selected_cells(args: &ConformanceArgs) -> Result<(Reference, Vec<Cell>)> {
    let path = matrix_path(args);
    let matrix = matrix::load(&path)?;
    let mut cells = matrix.cells;
    if args.quick {
        cells.retain(|cell| cell.quick);
    }
    if !args.only.is_empty() {
        for name in &args.only {
            if !cells.iter().any(|cell| &cell.name == name) {
                bail!(
                    "--only {name}: no such cell in {}{} (cells: {})",
                    path.display(),
                    if args.quick { " with --quick" } else { "" },
                    cells
                        .iter()
                        .map(|cell| cell.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        cells.retain(|cell| args.only.contains(&cell.name));
    }
    if cells.is_empty() {
        bail!("{}: no cell to run", path.display());
    }
    Ok((matrix.reference, cells))
}

/// Every job: each cell, each replication, the reference then ours.
fn all_jobs(cells: usize, replications: u32, reference: Reference) -> Vec<Job> {
    let mut jobs = Vec::new();
    for index in 0..cells {
        for replication in 0..replications {
            for simulator in [Simulator::Reference(reference), Simulator::Ours] {
                jobs.push(Job {
                    cell: index,
                    replication,
                    simulator,
                });
            }
        }
    }
    jobs
}

/// Runs the jobs on `threads` threads with a progress bar; one outcome per job, in order.
fn run_jobs(
    args: &ConformanceArgs,
    cells: &[Cell],
    jobs: &[Job],
    runner: &ReferenceRunner,
    threads: usize,
) -> Vec<JobOutcome> {
    let bar = progress_bar(jobs.len() as u64, args.quiet);
    bar.set_prefix(match runner {
        ReferenceRunner::Ns2(_) => "ns-2 and ours",
        ReferenceRunner::Ns3(_) => "ns-3 and ours",
    });
    let order: Vec<usize> = (0..jobs.len()).collect();
    let outcomes = parallel_map(&order, threads, |index| {
        let job = &jobs[index];
        let cell = &cells[job.cell];
        let directory = args
            .out
            .join("runs")
            .join(&cell.name)
            .join(job.replication.to_string())
            .join(job.simulator.directory_name());
        let outcome = run_one(cell, job, &directory, runner, args.keep_runs);
        bar.set_message(cell.name.clone());
        bar.inc(1);
        outcome
    });
    bar.finish_and_clear();

    outcomes
}

/// Prints the header, each cell's verdict with its judged metrics, failures and known
/// difference, and how many cells agree.
fn print_results(args: &ConformanceArgs, header: &str, results: &[CellResult]) {
    println!("{header}");
    for result in results {
        let judged: Vec<String> = result
            .rows
            .iter()
            .filter(|row| row.verdict == "agrees" || row.verdict == "disagrees")
            .map(|row| {
                format!(
                    "{} {}{}",
                    row.metric,
                    row.relative_difference
                        .map_or("–".into(), |r| format!("{:+.1}%", 100.0 * r)),
                    if row.verdict == "disagrees" {
                        " ✗"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        println!(
            "{:<28} {:<10} {}",
            result.name,
            result.verdict(),
            judged.join(", ")
        );
        for failure in &result.failures {
            println!("    {failure}");
        }
        if result.verdict() != "agrees" {
            if let Some(note) = &result.note {
                println!("    known difference: {note}");
            }
        }
    }
    let agree = results.iter().filter(|r| r.verdict() == "agrees").count();
    println!(
        "{agree} of {} cells agree; report {}",
        results.len(),
        args.out.join("index.html").display()
    );
}

/// Runs one job into `directory` and measures it.
fn run_one(
    cell: &Cell,
    job: &Job,
    directory: &Path,
    runner: &ReferenceRunner,
    keep_runs: bool,
) -> JobOutcome {
    let scenario = match cell.scenario(job.replication) {
        Ok(scenario) => scenario,
        Err(error) => return (Err(format!("{error:#}")), Vec::new()),
    };
    let mut notes = Vec::new();
    let summary: Result<Summary, String> = (|| {
        std::fs::create_dir_all(directory)
            .map_err(|error| format!("cannot create {}: {error}", directory.display()))?;
        std::fs::write(directory.join("scenario.toml"), scenario.to_toml_string())
            .map_err(|error| format!("cannot write scenario.toml: {error}"))?;
        match (job.simulator, runner) {
            (Simulator::Reference(_), ReferenceRunner::Ns2(options)) => {
                let generated = tfrc_ns2::generate(&scenario).map_err(|e| e.to_string())?;
                note_limits(&mut notes, &generated.unsupported, &generated.notes);
                tfrc_ns2::run_generated(&generated, directory, options)
                    .map_err(|e| e.to_string())?;
                read_summary(directory)
            }
            (Simulator::Reference(_), ReferenceRunner::Ns3(options)) => {
                let described =
                    tfrc_ns3::describe_with(&scenario, options.bbr).map_err(|e| e.to_string())?;
                note_limits(&mut notes, &described.unsupported, &described.notes);
                tfrc_ns3::run_described(&described, directory, options)
                    .map_err(|e| e.to_string())?;
                read_summary(directory)
            }
            (Simulator::Ours, _) => {
                crate::sim::run_scenario(&scenario, Some(directory), false, true, None)
                    .map(|done| done.summary)
                    .map_err(|error| format!("{error:#}"))
            }
        }
    })();
    if !keep_runs {
        for file in [
            "flows.csv",
            "state.csv",
            "links.csv",
            "ns2-unsupported.txt",
            tfrc_ns3::UNSUPPORTED_NAME,
        ] {
            let _ = std::fs::remove_file(directory.join(file));
        }
    }
    let metrics = summary
        .map(|summary| {
            report::run_metrics(MetricSet::of(runner.reference()), &summary, &classes(cell))
        })
        .map_err(|error| {
            format!(
                "{} replication {}: {error}",
                job.simulator.directory_name(),
                job.replication
            )
        });
    (metrics, notes)
}

/// What the reference could not express or approximated, as the page lists them.
fn note_limits(notes: &mut Vec<String>, unsupported: &[String], approximated: &[String]) {
    notes.extend(unsupported.iter().map(|u| format!("unsupported: {u}")));
    notes.extend(approximated.iter().map(|n| format!("approximated: {n}")));
}

/// A finished run's `summary.json`.
fn read_summary(directory: &Path) -> Result<Summary, String> {
    let path = directory.join(tfrc_output::SUMMARY_FILE);
    let text =
        std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    serde_json::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))
}

/// A cell's TCP classes: its flows named by variant (an ns-3 matrix's factor cells).
fn classes(cell: &Cell) -> Classes {
    match &cell.setup {
        CellSetup::Factors(factors) if factors.named_by_variant => Classes {
            a: (factors.tcp > 0).then(|| factors.tcp_variant.clone()),
            b: (factors.tcp2 > 0).then(|| factors.tcp2_variant.clone()),
        },
        _ => Classes::default(),
    }
}

fn collect(
    index: usize,
    cell: &Cell,
    jobs: &[Job],
    outcomes: &[JobOutcome],
    set: MetricSet,
) -> CellResult {
    let metrics = set.metrics();
    let mut values = vec![(Vec::new(), Vec::new()); metrics.len()];
    let mut failures = Vec::new();
    let mut reference_notes: Vec<String> = Vec::new();
    for (job, (outcome, notes)) in jobs.iter().zip(outcomes) {
        if job.cell != index {
            continue;
        }
        for note in notes {
            if !reference_notes.contains(note) {
                reference_notes.push(note.clone());
            }
        }
        match outcome {
            Ok(metrics) => {
                for (slot, value) in values.iter_mut().zip(metrics) {
                    if let Some(value) = value {
                        match job.simulator {
                            Simulator::Reference(_) => slot.0.push(*value),
                            Simulator::Ours => slot.1.push(*value),
                        }
                    }
                }
            }
            Err(error) => failures.push(error.clone()),
        }
    }
    let rows = metrics
        .iter()
        .zip(&values)
        .map(|(&metric, (ns2, ours))| report::compare((&cell.name, &cell.group), metric, ns2, ours))
        .collect();
    CellResult {
        name: cell.name.clone(),
        group: cell.group.clone(),
        note: cell.note.clone(),
        expect_agree: cell.expect_agree,
        rows,
        values,
        failures,
        reference_notes,
    }
}

/// `runs.csv`: one row per run and metric (`cell, replication, simulator, seed, metric,
/// value`), the distributions behind conformance.csv.
fn write_runs_csv(
    path: &Path,
    cells: &[Cell],
    jobs: &[Job],
    outcomes: &[JobOutcome],
    set: MetricSet,
) -> Result<()> {
    let mut writer =
        csv::Writer::from_path(path).with_context(|| format!("cannot write {}", path.display()))?;
    writer
        .write_record(["cell", "replication", "simulator", "metric", "value"])
        .with_context(|| format!("cannot write {}", path.display()))?;
    for (job, (outcome, _)) in jobs.iter().zip(outcomes) {
        let Ok(metrics) = outcome else { continue };
        for ((metric, _), value) in set.metrics().iter().zip(metrics) {
            let Some(value) = value else { continue };
            writer
                .write_record([
                    cells[job.cell].name.as_str(),
                    &job.replication.to_string(),
                    job.simulator.directory_name(),
                    metric,
                    &value.to_string(),
                ])
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    writer
        .flush()
        .with_context(|| format!("cannot write {}", path.display()))
}
