//! Runs many simulations on a pool of threads, one run per scenario variant.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant as WallInstant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tfrc_scenario::Scenario;
use tfrc_sim::simulation::{Simulation, Summary};

/// One simulation to run.
#[derive(Debug, Clone)]
pub struct Job {
    /// Experiment id (`e000-loss`).
    pub experiment: String,
    /// The concrete scenario.
    pub scenario: Scenario,
    /// Where its files go.
    pub directory: PathBuf,
}

/// What a run gave.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The job.
    pub job: Job,
    /// The summary, or why the run failed.
    pub result: Result<Summary, String>,
    /// Wall time of the run.
    pub wall_time: Duration,
    /// Events the simulator processed.
    pub events: u64,
}

fn run_job(job: &Job) -> (Result<Summary, String>, u64) {
    let mut simulation = match Simulation::new(&job.scenario, Some(&job.directory)) {
        Ok(simulation) => simulation,
        Err(error) => return (Err(format!("{}: {error}", job.scenario.name)), 0),
    };
    if let Err(error) = simulation.run_until(simulation.end()) {
        return (Err(format!("{}: {error}", job.scenario.name)), 0);
    }
    let events = simulation.events_processed();
    (
        simulation
            .finish()
            .map_err(|error| format!("{}: {error}", job.scenario.name)),
        events,
    )
}

/// Runs `jobs` on `threads` threads, longest first, with a progress bar on stderr (unless
/// `quiet`). Outcomes come back in the order of `jobs`.
pub fn run_all(jobs: Vec<Job>, threads: usize, quiet: bool) -> Vec<RunOutcome> {
    let total = jobs.len();
    // Longest first (simulated time × flows as a proxy), so the pool does not end on one long run.
    let mut order: Vec<usize> = (0..total).collect();
    let weight =
        |job: &Job| job.scenario.duration.as_secs_f64() * (job.scenario.flows.len() as f64 + 1.0);
    order.sort_by(|&a, &b| weight(&jobs[b]).total_cmp(&weight(&jobs[a])));
    let bar = ProgressBar::with_draw_target(
        Some(total as u64),
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
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<Option<RunOutcome>>> = Mutex::new(vec![None; total]);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1).min(total.max(1)) {
            scope.spawn(|| loop {
                let position = next.fetch_add(1, Ordering::Relaxed);
                let Some(&index) = order.get(position) else {
                    break;
                };
                let job = &jobs[index];
                let started = WallInstant::now();
                let (result, events) = run_job(job);
                let outcome = RunOutcome {
                    job: job.clone(),
                    result,
                    wall_time: started.elapsed(),
                    events,
                };
                bar.set_message(job.scenario.name.clone());
                bar.inc(1);
                if let Ok(mut slots) = outcomes.lock() {
                    slots[index] = Some(outcome);
                }
            });
        }
    });
    bar.finish_and_clear();
    outcomes
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect()
}
