//! Runs many simulations on a pool of threads, one run per scenario variant.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant as WallInstant};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tfrc_analysis::run::{Run, SUMMARY_FILE};
use tfrc_scenario::Scenario;
use tfrc_sim::simulation::Summary;

use crate::sim::run_scenario;

/// One simulation to run.
#[derive(Debug, Clone)]
pub struct Job {
    /// Experiment id (`e000-loss`).
    pub experiment: String,
    /// The concrete scenario.
    pub scenario: Scenario,
    /// Where its files go.
    pub directory: PathBuf,
    /// Which replication of the experiment.
    pub replication: u32,
    /// Whether the run writes its raw files (`flows.csv`, `state.csv`, `links.csv`,
    /// `summary.json`, `scenario.toml`) into `directory`; otherwise its rows stay in memory and
    /// only `summary.json` is written there (compact: `tfrc sim FILE --replication K` reruns
    /// it whole).
    pub keep_files: bool,
    /// With `keep_files`, whether the three CSV files are stored gzip-compressed
    /// (`flows.csv.gz`, …; [`tfrc_output::compress_row_files`]), which every reader of the
    /// toolkit ([`Run::load`], `tfrc plot`) and pandas read as they are: `tfrc reproduce`'s
    /// runs, a fifth of the space of plain files.
    pub compress_files: bool,
}

/// What a run gave.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The job.
    pub job: Job,
    /// The summary, or why the run failed.
    pub result: Result<Summary, String>,
    /// The run's rows (`None` if it failed or its rows do not match its summary: the reason
    /// is in `load_error`).
    pub run: Option<Arc<Run>>,
    /// Why the finished run's rows could not be used.
    pub load_error: Option<String>,
    /// Wall time of the run.
    pub wall_time: Duration,
    /// Events the simulator processed.
    pub events: u64,
}

/// The number of threads to run simulations on: `requested`, else one per core (1 when the
/// machine does not say).
pub fn jobs_or_cores(requested: Option<usize>) -> usize {
    requested.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A progress bar for `total` runs on stderr (hidden when `quiet`).
pub fn progress_bar(total: u64, quiet: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(total),
        if quiet {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        },
    );
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, eta {eta} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_prefix("simulating");
    bar
}

/// `work(index)` for every index in `order`, on `threads` threads taking the indices in that
/// order; the results come back indexed by `index` (0 … `order.len()`, `order` a permutation).
pub fn parallel_map<R: Send>(
    order: &[usize],
    threads: usize,
    work: impl Fn(usize) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..order.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, order.len().max(1)) {
            scope.spawn(|| loop {
                let position = next.fetch_add(1, Ordering::Relaxed);
                let Some(&index) = order.get(position) else {
                    break;
                };
                let result = work(index);
                if let Ok(mut slots) = results.lock() {
                    slots[index] = Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect()
}

/// Runs `jobs` on `threads` threads, longest first, advancing `bar` by one per run; each run's
/// rows are kept in memory (the same rows as its files read back), so nothing is parsed again.
/// Outcomes come back in the order of `jobs`.
pub fn run_all(jobs: Vec<Job>, threads: usize, bar: &ProgressBar) -> Vec<RunOutcome> {
    // Longest first (simulated time × flows as a proxy), so the pool does not end on one long run.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    let weight =
        |job: &Job| job.scenario.duration.as_secs_f64() * (job.scenario.flows.len() as f64 + 1.0);
    order.sort_by(|&a, &b| weight(&jobs[b]).total_cmp(&weight(&jobs[a])));
    parallel_map(&order, threads, |index| {
        let job = &jobs[index];
        let started = WallInstant::now();
        let directory = job.keep_files.then_some(job.directory.as_path());
        let finished = run_scenario(&job.scenario, directory, true, true, None).and_then(|done| {
            if !job.keep_files {
                write_compact_summary(&job.directory, &done.summary)?;
            } else if job.compress_files {
                tfrc_output::compress_row_files(&job.directory)?;
            }
            Ok(done)
        });
        let outcome = match finished {
            Ok(done) => {
                let (run, load_error) =
                    match Run::from_rows(&job.directory, done.summary.clone(), done.rows) {
                        Ok(run) => (Some(Arc::new(run)), None),
                        Err(error) => (None, Some(error.to_string())),
                    };
                RunOutcome {
                    job: job.clone(),
                    result: Ok(done.summary),
                    run,
                    load_error,
                    wall_time: done.wall_time,
                    events: done.events,
                }
            }
            Err(error) => RunOutcome {
                job: job.clone(),
                result: Err(format!("{error:#}")),
                run: None,
                load_error: None,
                wall_time: started.elapsed(),
                events: 0,
            },
        };
        bar.set_message(job.scenario.name.clone());
        bar.inc(1);
        outcome
    })
}

/// Writes `summary` as the only file of `directory` (created if missing), without indentation
/// (the same JSON as the simulator's, about half the size).
fn write_compact_summary(directory: &std::path::Path, summary: &Summary) -> Result<()> {
    std::fs::create_dir_all(directory)
        .with_context(|| format!("cannot create {}", directory.display()))?;
    summary
        .write_compact(directory)
        .with_context(|| format!("cannot write {}", directory.join(SUMMARY_FILE).display()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::sim::load_variants;

    /// Runs every variant of a scenario both ways and checks that the rows kept in memory are
    /// the files read back, bit for bit (summary included): a replication kept in memory
    /// measures exactly what its files would.
    fn rows_in_memory_are_the_files(file: &str, sets: &[&str]) {
        let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        let sets: Vec<String> = sets.iter().map(|set| set.to_string()).collect();
        let variants = load_variants(&scenarios.join(file), &sets, None).expect("scenario loads");
        let out = tempfile::tempdir().expect("temporary directory");
        for (index, variant) in variants.iter().enumerate() {
            let directory = out.path().join(index.to_string());
            let done = run_scenario(variant, Some(&directory), true, true, None).expect("run");
            let from_files = Run::load(&directory).expect("files load");
            let kept = Run::from_rows(&directory, done.summary, done.rows).expect("rows match");
            assert!(!kept.states.is_empty() && !kept.links.is_empty(), "{file}");
            // NaN-free rows: `==` is exact equality of every field.
            assert!(
                from_files == kept,
                "{file} variant {index}: memory differs from files"
            );
        }
    }

    /// `tfrc reproduce`'s kept runs: the three CSV files only gzip-compressed, read back by
    /// [`Run::load`] as the rows the run kept in memory, bit for bit.
    #[test]
    fn compressed_runs_read_back_as_the_rows_in_memory() {
        let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        let sets = ["duration=10s".to_string()];
        let variants =
            load_variants(&scenarios.join("e003-cov.toml"), &sets, None).expect("scenario loads");
        let out = tempfile::tempdir().expect("temporary directory");
        let jobs: Vec<Job> = variants
            .into_iter()
            .enumerate()
            .map(|(index, scenario)| Job {
                experiment: "e003-cov".into(),
                scenario,
                directory: out.path().join(index.to_string()),
                replication: 0,
                keep_files: true,
                compress_files: true,
            })
            .collect();
        let outcomes = run_all(jobs, 1, &progress_bar(0, true));
        assert!(!outcomes.is_empty());
        for outcome in outcomes {
            let directory = &outcome.job.directory;
            let mut files: Vec<String> = std::fs::read_dir(directory)
                .expect("run directory")
                .map(|entry| {
                    entry
                        .expect("entry")
                        .file_name()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            files.sort();
            assert_eq!(
                files,
                [
                    "flows.csv.gz",
                    "links.csv.gz",
                    "scenario.toml",
                    "state.csv.gz",
                    "summary.json"
                ],
                "{}",
                directory.display()
            );
            let kept = outcome.run.expect("rows kept");
            let from_files = Run::load(directory).expect("compressed files load");
            assert!(!from_files.states.is_empty() && !from_files.links.is_empty());
            assert!(
                from_files == *kept,
                "{}: compressed files differ from the rows in memory",
                directory.display()
            );
        }
    }

    #[test]
    fn rows_in_memory_are_the_files_with_rio_tcp_and_tfrc() {
        rows_in_memory_are_the_files(
            "e000-af-tcp.toml",
            &["duration=15s", "output.state_interval=30ms"],
        );
    }

    #[test]
    fn rows_in_memory_are_the_files_with_a_trace_and_random_sources() {
        rows_in_memory_are_the_files("e004-shared.toml", &["duration=20s"]);
        rows_in_memory_are_the_files("e003-cov.toml", &["duration=10s"]);
    }
}
