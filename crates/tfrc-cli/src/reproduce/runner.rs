//! Runs many simulations on a pool of threads, one run per scenario variant.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant as WallInstant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tfrc_analysis::run::Run;
use tfrc_scenario::Scenario;
use tfrc_sim::simulation::Summary;

use crate::sim::run_one;

/// One simulation to run.
#[derive(Debug, Clone)]
pub struct Job {
    /// Experiment id (`e000-loss`).
    pub experiment: String,
    /// The concrete scenario.
    pub scenario: Scenario,
    /// Where its files go.
    pub directory: PathBuf,
    /// Which replication of the experiment (0 keeps its raw files).
    pub replication: u32,
}

/// What a run gave.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The job.
    pub job: Job,
    /// The summary, or why the run failed.
    pub result: Result<Summary, String>,
    /// The run's files, loaded in the worker that ran it (`None` if it failed or its files
    /// cannot be read: the reason is in `load_error`).
    pub run: Option<Arc<Run>>,
    /// Why the finished run's files could not be loaded.
    pub load_error: Option<String>,
    /// Wall time of the run.
    pub wall_time: Duration,
    /// Events the simulator processed.
    pub events: u64,
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

/// Runs `jobs` on `threads` threads, longest first, advancing `bar` by one per run, and loads
/// each finished run's files in the worker that ran it. Outcomes come back in the order of
/// `jobs`.
pub fn run_all(jobs: Vec<Job>, threads: usize, bar: &ProgressBar) -> Vec<RunOutcome> {
    // Longest first (simulated time × flows as a proxy), so the pool does not end on one long run.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    let weight =
        |job: &Job| job.scenario.duration.as_secs_f64() * (job.scenario.flows.len() as f64 + 1.0);
    order.sort_by(|&a, &b| weight(&jobs[b]).total_cmp(&weight(&jobs[a])));
    parallel_map(&order, threads, |index| {
        let job = &jobs[index];
        let started = WallInstant::now();
        let outcome = match run_one(&job.scenario, &job.directory, true) {
            Ok(done) => {
                let (run, load_error) = match Run::load(&job.directory) {
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
