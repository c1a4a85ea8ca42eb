//! `tfrc reproduce`: every experiment of the papers (`scenarios/<id>.toml`) run in the
//! simulator, measured against the papers' claims (`scenarios/claims.toml`), and written up as
//! `report.md` and `index.html` with the figures and the raw files of every run.

pub mod catalogue;
mod claims;
pub(crate) mod figures;
pub mod runner;
pub mod today;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant as WallInstant;

use anyhow::{bail, Context, Result};
use clap::Args;
use tfrc_analysis::report::{ClaimCounts, Images, Report, Section, Verdict};
use tfrc_analysis::run::Run;
use tfrc_analysis::table::Table;
use tfrc_scenario::{Capacity, Scenario};

use crate::sim::variant_directory;
use claims::{Outcome, RunView, Sample, Status};
use runner::{Job, RunOutcome};

/// Replications per experiment unless `--replications` says otherwise.
pub const DEFAULT_REPLICATIONS: u32 = 10;
/// Replications of a `--quick` run unless `--replications` says otherwise.
pub const QUICK_REPLICATIONS: u32 = 2;
/// Most replications `--replications` accepts.
pub const MAX_REPLICATIONS: u32 = 1000;

/// Experiments whose report compares our runs with ns-2's on the same axes.
const NS2_CONFORMANCE: [&str; 3] = ["e000-const-bw", "e000-loss", "e000-udp"];

/// Arguments of `tfrc reproduce`.
#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// Only these experiment ids (e.g. `--only e000-loss e003-single`, or `today-tcp` for the
    /// section on today's TCP); default: all, then the today-tcp section.
    #[arg(long, num_args = 1.., value_name = "ID")]
    pub only: Vec<String>,
    /// Output directory: index.html, report.md, claims.csv, figures/ and runs/ (the raw
    /// files of every run).
    #[arg(long, short, default_value = "report")]
    pub out: PathBuf,
    /// Simulations run in parallel (default: the number of cores).
    #[arg(long, short)]
    pub jobs: Option<usize>,
    /// Shortened runs for a smoke test (each scenario's `quick` overrides).
    #[arg(long)]
    pub quick: bool,
    /// The folder of scenario files and claims.toml (default: ./scenarios, else the one in
    /// the source tree).
    #[arg(long)]
    pub scenarios: Option<PathBuf>,
    /// Skip the ns-2 side-by-side runs of the conformance experiments.
    #[arg(long)]
    pub no_ns2: bool,
    /// Recorded real runs (`tfrc testbed run` output directories) to put beside the simulated
    /// runs of the same scenario variant (default: results/testbed in the source tree).
    #[arg(long)]
    pub testbed: Option<PathBuf>,
    /// Embed the figures in index.html (one self-contained file) instead of linking them.
    #[arg(long)]
    pub embed_images: bool,
    /// No progress bar and no summary on the terminal.
    #[arg(long, short)]
    pub quiet: bool,
    /// Independent replications of every experiment (default 10, 2 with --quick): each draws
    /// new seeds and jitters flow starts by up to one base RTT; every claim is judged on the
    /// mean over replications with its 95 % confidence interval.
    #[arg(long, short = 'r', value_name = "N")]
    pub replications: Option<u32>,
    /// Keep the raw files of every replication (default: replication 0 whole, the others'
    /// summary.json only).
    #[arg(long)]
    pub keep_runs: bool,
}

/// The scenarios folder: the one given, else ./scenarios when it has a claims.toml, else the
/// source tree's.
fn scenarios_dir(given: Option<&PathBuf>) -> PathBuf {
    if let Some(dir) = given {
        return dir.clone();
    }
    crate::project_path("scenarios", |local| local.join("claims.toml").is_file())
}

/// The scenario file of `id`: `<id>.toml` for an experiment of the papers, the today-tcp
/// section's own file for [`today::ID`].
fn scenario_path(dir: &Path, id: &str) -> PathBuf {
    if id == today::ID {
        dir.join(today::FILE)
    } else {
        dir.join(format!("{id}.toml"))
    }
}

/// Experiment ids: the `e*.toml` files of the scenarios folder, sorted.
fn experiment_ids(dir: &Path) -> Result<Vec<String>> {
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the scenarios folder {}", dir.display()))?
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            (name.starts_with('e') && name.ends_with(".toml"))
                .then(|| name.trim_end_matches(".toml").to_owned())
        })
        .collect();
    ids.sort();
    Ok(ids)
}

/// What makes two runs the same run: the resolved scenario without its name and labels.
fn run_key(scenario: &Scenario) -> String {
    let text = scenario.to_toml_string();
    let mut key = String::new();
    let mut in_variant = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_variant = line.trim() == "[variant]";
        }
        if in_variant || line.starts_with("name = ") {
            continue;
        }
        key.push_str(line);
        key.push('\n');
    }
    key
}

/// The disturbance of a scenario: a loss period with an end, else an open-loop flow that
/// starts after 0 and stops before the end.
fn disturbance(scenario: &Scenario) -> Option<(f64, f64)> {
    for link in &scenario.links {
        for direction in [&link.forward, &link.reverse] {
            if let Some(loss) = &direction.loss {
                if let Some(stop) = loss.stop {
                    return Some((loss.start.as_secs_f64(), stop.as_secs_f64()));
                }
            }
        }
    }
    scenario.flows.iter().find_map(|flow| {
        let open_loop = !flow.output_kind().is_congestion_controlled();
        let stop = flow.stop?;
        (open_loop && !flow.start.is_zero() && stop < scenario.duration)
            .then_some((flow.start.as_secs_f64(), stop.as_secs_f64()))
    })
}

/// Mean capacity in kb/s of the bottleneck named in the run's summary; for a trace-driven link,
/// the mean of the segment of the trace the run used (from its `trace_offset`, over the run).
fn capacity_kbps(scenario: &Scenario, run: &Run) -> Option<f64> {
    let bottleneck = run.summary.bottleneck.as_ref()?;
    if let Some(capacity) = bottleneck.capacity_bps {
        return Some(capacity / 1000.0);
    }
    let direction = scenario.link_direction(&bottleneck.from, &bottleneck.to)?;
    match &direction.capacity {
        Capacity::Rate(rate) => Some(rate.kbps()),
        Capacity::Trace { path, offset, .. } => tfrc_sim::DeliveryTrace::from_file(path)
            .ok()
            .map(|trace| trace.starting_at(*offset).mean_rate_over(scenario.duration) / 1000.0),
    }
}

/// One run of an experiment, loaded.
pub struct LoadedRun {
    /// The concrete scenario.
    pub scenario: Scenario,
    /// Its files (shared by the experiments that use the same run).
    pub run: std::sync::Arc<Run>,
}

/// An experiment with its runs.
pub struct Experiment {
    /// Experiment id.
    pub id: String,
    /// The scenario as loaded (before expansion).
    pub scenario: Scenario,
    /// Its runs, in sweep order.
    pub runs: Vec<LoadedRun>,
    /// Runs that failed, with the reason.
    pub failures: Vec<String>,
    /// ns-2's run of the same scenario (conformance experiments), or why there is none.
    pub ns2: Option<std::result::Result<Run, String>>,
    /// Recorded real runs (testbed) of this experiment's variants.
    pub testbed: Vec<Run>,
    /// Replications 1 … N−1 of its runs, summaries only (for the bands of averaged figures).
    pub replicas: Vec<Vec<LoadedRun>>,
    /// The calibrated condition (`[calibration.NAME]` of claims.toml) its runs were made
    /// under; `None` for the experiment as its scenario file states it.
    pub condition: Option<String>,
}

/// Every recorded testbed run under `dir` (run directories with a `summary.json`), in path
/// order. A run the reader refuses (an older output schema) is left out of the report and said
/// so once: it must be recorded again with `tfrc testbed run`.
fn recorded_testbed_runs(dir: &Path) -> Vec<Run> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.join("summary.json").is_file())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| match Run::load(&path) {
            Ok(run) => Some(run),
            Err(error) => {
                eprintln!(
                    "warning: recorded testbed run {} left out of the report: {error}",
                    path.display()
                );
                None
            }
        })
        .collect()
}

/// The recorded runs of experiment `id`: those whose summary names the scenario `id` or one of
/// its variants `id[...]`.
fn testbed_runs(recorded: &[Run], id: &str) -> Vec<Run> {
    recorded
        .iter()
        .filter(|run| {
            run.summary.scenario == id || run.summary.scenario.starts_with(&format!("{id}["))
        })
        .cloned()
        .collect()
}

/// One experiment to run: its id, the scenario as loaded and its concrete variants, under its
/// scenario file's conditions or a calibrated one.
struct Plan {
    id: String,
    scenario: Scenario,
    variants: Vec<Scenario>,
    condition: Option<String>,
}

/// The selected experiments again under each calibrated condition that names them
/// (`[calibration.NAME]` of claims.toml: its overrides applied to the scenario as loaded).
fn calibrated_plans(claims: &claims::ClaimsFile, stated: &[Plan]) -> Result<Vec<Plan>> {
    let mut calibrated = Vec::new();
    for (name, calibration) in &claims.calibration {
        for plan in stated
            .iter()
            .filter(|plan| calibration.experiments.contains(&plan.id))
        {
            let mut scenario = plan.scenario.clone();
            scenario
                .apply_sets(&calibration.set)
                .map_err(anyhow::Error::new)
                .with_context(|| format!("claims.toml: [calibration.{name}] on {}", plan.id))?;
            let variants = scenario.expand().map_err(anyhow::Error::new)?;
            calibrated.push(Plan {
                id: plan.id.clone(),
                scenario,
                variants,
                condition: Some(name.clone()),
            });
        }
    }
    Ok(calibrated)
}

/// The jobs of replication `replication` (runs shared by experiments that summarise others are
/// run once) and, per plan, each variant's replicated scenario with its job index.
fn replication_jobs(
    plans: &[Plan],
    replication: u32,
    out: &Path,
    keep_files: bool,
    keep_calibrated: bool,
) -> (Vec<Job>, Vec<Vec<(Scenario, usize)>>) {
    let mut jobs: Vec<Job> = Vec::new();
    let mut job_of_key: HashMap<String, usize> = HashMap::new();
    let mut runs_of = Vec::new();
    for plan in plans {
        let mut runs = Vec::new();
        for variant in &plan.variants {
            let replicated = variant.replicate(replication);
            let index = *job_of_key.entry(run_key(&replicated)).or_insert_with(|| {
                let mut directory = out.join("runs").join(&plan.id);
                if let Some(condition) = &plan.condition {
                    directory = directory.join(format!("calibrated-{condition}"));
                }
                directory = directory.join(variant_directory(variant));
                if replication > 0 {
                    directory = directory.join(format!("replication-{replication}"));
                }
                jobs.push(Job {
                    experiment: plan.id.clone(),
                    directory,
                    scenario: replicated.clone(),
                    replication,
                    // The figures show the stated conditions only: a calibrated run's claims
                    // are measured in memory, its files kept only with --keep-runs.
                    keep_files: keep_files && (plan.condition.is_none() || keep_calibrated),
                    compress_files: true,
                });
                jobs.len() - 1
            });
            runs.push((replicated, index));
        }
        runs_of.push(runs);
    }
    (jobs, runs_of)
}

/// The experiments of one replication, with their finished runs loaded.
fn load_experiments(
    plans: &[Plan],
    runs_of: Vec<Vec<(Scenario, usize)>>,
    outcomes: &[RunOutcome],
) -> Vec<Experiment> {
    plans
        .iter()
        .zip(runs_of)
        .map(|(plan, runs)| {
            let mut loaded = Vec::new();
            let mut failures = Vec::new();
            for (variant, index) in runs {
                let outcome = &outcomes[index];
                match (&outcome.result, &outcome.run) {
                    (Ok(_), Some(run)) => loaded.push(LoadedRun {
                        scenario: variant,
                        run: run.clone(),
                    }),
                    (Ok(_), None) => failures.push(format!(
                        "{}: {}",
                        variant.name,
                        outcome.load_error.as_deref().unwrap_or("files not loaded")
                    )),
                    (Err(error), _) => failures.push(error.clone()),
                }
            }
            Experiment {
                id: plan.id.clone(),
                scenario: plan.scenario.clone(),
                runs: loaded,
                failures,
                ns2: None,
                testbed: Vec::new(),
                replicas: Vec::new(),
                condition: plan.condition.clone(),
            }
        })
        .collect()
}

/// The runs of one condition (the stated one, or a calibration), by experiment id.
type ViewsById<'a> = BTreeMap<String, Vec<RunView<'a>>>;

/// What the claims see of the experiments' runs, by condition and experiment id: a claim's
/// baseline experiment (`baseline_id`) is looked up under the same condition.
fn run_views(experiments: &[Experiment]) -> BTreeMap<Option<String>, ViewsById<'_>> {
    let mut views: BTreeMap<Option<String>, ViewsById<'_>> = BTreeMap::new();
    for experiment in experiments {
        views
            .entry(experiment.condition.clone())
            .or_default()
            .insert(experiment.id.clone(), experiment_views(experiment));
    }
    views
}

fn experiment_views(experiment: &Experiment) -> Vec<RunView<'_>> {
    experiment
        .runs
        .iter()
        .map(|loaded| RunView {
            labels: &loaded.scenario.variant,
            run: &loaded.run,
            disturbance: disturbance(&loaded.scenario),
            capacity_kbps: capacity_kbps(&loaded.scenario, &loaded.run),
        })
        .collect()
}

/// Measures every claim of every experiment in one replication, on `threads` threads (by
/// experiment); per experiment, one sample per claim, in order. A claim that fixed a calibration's level is not sampled under that calibration (it holds
/// there by construction).
fn sample_claims(
    experiments: &[Experiment],
    claim_lists: &[&[claims::Claim]],
    views: &BTreeMap<Option<String>, ViewsById<'_>>,
    threads: usize,
) -> Vec<Vec<Sample>> {
    let order: Vec<usize> = (0..experiments.len()).collect();
    runner::parallel_map(&order, threads, |index| {
        let experiment = &experiments[index];
        let same_condition = &views[&experiment.condition];
        claim_lists[index]
            .iter()
            .map(|claim| {
                if experiment.condition.is_some() && claim.calibrates == experiment.condition {
                    return Err(claims::CALIBRATION_TARGET.to_string());
                }
                claims::sample(claim, &same_condition[&experiment.id], same_condition)
            })
            .collect()
    })
}

/// `tfrc reproduce`: runs, judges and writes the report; returns the claims table.
pub fn run(args: &ReproduceArgs) -> Result<Vec<ClaimRow>> {
    let started = WallInstant::now();
    let dir = scenarios_dir(args.scenarios.as_ref());
    let ids = selected_ids(args, &dir)?;
    let replications = replication_count(args)?;
    let claims = claims::load(&dir.join("claims.toml"))?;
    let mut plans = stated_plans(&dir, &ids, args.quick)?;
    let calibrated = calibrated_plans(&claims, &plans)?;
    plans.extend(calibrated);
    let threads = runner::jobs_or_cores(args.jobs);
    let distinct = replication_jobs(&plans, 0, &args.out, true, false).0.len();
    if !args.quiet {
        eprintln!(
            "{} experiments, {} runs ({} distinct) × {replications} replication{}{} on {threads} threads → {}",
            ids.len(),
            plans.iter().map(|plan| plan.variants.len()).sum::<usize>(),
            distinct,
            if replications == 1 { "" } else { "s" },
            if args.quick { ", quick" } else { "" },
            args.out.display()
        );
    }
    let bar = runner::progress_bar((distinct as u64) * u64::from(replications), args.quiet);
    let mut ns2 = Ns2Runs::start(args, &plans);
    // The today-tcp section's questions are measured like claims, but are none (today.rs).
    let questions = plans
        .iter()
        .find(|plan| plan.id == today::ID)
        .map(|plan| today::questions(&plan.variants))
        .unwrap_or_default();
    let claim_lists = claim_lists(&plans, &claims, &questions);
    let replicated = run_replications(&plans, &claim_lists, replications, args, &bar);
    bar.finish_and_clear();
    let simulated = started.elapsed();
    write_runs_csv(&args.out, &replicated.outcomes)?;

    // ns-2 side by side for the conformance experiments, recorded testbed runs: beside the runs
    // of replication 0, which the figures show.
    let ns2_results = ns2.results()?;
    let testbed_dir = args
        .testbed
        .clone()
        .unwrap_or_else(|| dir.join("../results/testbed"));
    let recorded = recorded_testbed_runs(&testbed_dir);
    let (experiments, outcomes) =
        judged_experiments(replicated, &claim_lists, |experiment: &mut Experiment| {
            let id = experiment.id.clone();
            if NS2_CONFORMANCE.contains(&id.as_str()) {
                experiment.ns2 = Some(ns2.result_of(&id, &ns2_results));
            }
            experiment.testbed = testbed_runs(&recorded, &id);
        });

    let (report, claim_rows) = build_report(&experiments, &claims, &outcomes, replications, args)?;
    let counts = count_verdicts(&report);
    let files = report
        .images(Images::embedded_if(args.embed_images))
        .write(&args.out)
        .context("cannot write the report")?;
    if !args.quiet {
        eprintln!(
            "simulations {:.1} s, whole report {:.1} s; verdicts: {} hold, {} differ, {} inconclusive, {} not run",
            simulated.as_secs_f64(),
            started.elapsed().as_secs_f64(),
            counts.holds,
            counts.differs,
            counts.inconclusive,
            counts.not_run
        );
        println!("{}", files.html.display());
    }
    Ok(claim_rows)
}

/// What each plan measures, in plan order: its experiment's claims, the today-tcp section's
/// `questions` (measured like claims, but none), or nothing.
fn claim_lists<'a>(
    plans: &[Plan],
    claims: &'a claims::ClaimsFile,
    questions: &'a [claims::Claim],
) -> Vec<&'a [claims::Claim]> {
    plans
        .iter()
        .map(|plan| match claims.experiment.get(&plan.id) {
            Some(paper) => paper.claim.as_slice(),
            None if plan.id == today::ID => questions,
            None => &[],
        })
        .collect()
}

/// The report's experiments and their claims' outcomes: replication 0's experiments with the
/// other replications' runs beside them, every claim judged over the replications, each
/// calibrated outcome beside the stated one ([`beside_stated`]), and `references` (ns-2's
/// run, the testbed's) attached to each stated experiment.
fn judged_experiments(
    replicated: Replicated,
    claim_lists: &[&[claims::Claim]],
    references: impl Fn(&mut Experiment),
) -> (Vec<Experiment>, Vec<Vec<Outcome>>) {
    let mut experiments: Vec<Experiment> = replicated.first;
    for set in replicated.replica_sets {
        for (experiment, runs) in experiments.iter_mut().zip(set) {
            experiment.replicas.push(runs);
        }
    }
    let outcomes: Vec<Vec<Outcome>> = claim_lists
        .iter()
        .zip(&replicated.samples)
        .map(|(list, collected)| {
            list.iter()
                .zip(collected)
                .map(|(claim, samples)| claims::judge(claim, samples))
                .collect()
        })
        .collect();
    let (mut experiments, outcomes) = beside_stated(experiments, outcomes);
    for experiment in &mut experiments {
        references(experiment);
    }
    (experiments, outcomes)
}

/// The experiments `--only` selects (all of `dir`'s without it, then the today-tcp section
/// when its file is there); an unknown id is an error naming the known ones.
fn selected_ids(args: &ReproduceArgs, dir: &Path) -> Result<Vec<String>> {
    let mut known = experiment_ids(dir)?;
    if dir.join(today::FILE).is_file() {
        known.push(today::ID.to_string());
    }
    if args.only.is_empty() {
        return Ok(known);
    }
    for id in &args.only {
        if !known.contains(id) {
            bail!(
                "--only {id}: no such experiment in {} (known: {})",
                dir.display(),
                known.join(", ")
            );
        }
    }
    Ok(args.only.clone())
}

/// The replications to run: `--replications`, else the quick or the default count; from 1 to
/// [`MAX_REPLICATIONS`].
fn replication_count(args: &ReproduceArgs) -> Result<u32> {
    let replications = args.replications.unwrap_or(if args.quick {
        QUICK_REPLICATIONS
    } else {
        DEFAULT_REPLICATIONS
    });
    if !(1..=MAX_REPLICATIONS).contains(&replications) {
        bail!("--replications {replications}: expected 1 to {MAX_REPLICATIONS}");
    }
    Ok(replications)
}

/// The experiments `ids` under their scenario files' conditions (shortened with `quick`).
fn stated_plans(dir: &Path, ids: &[String], quick: bool) -> Result<Vec<Plan>> {
    let mut plans = Vec::new();
    for id in ids {
        let path = scenario_path(dir, id);
        let mut scenario = Scenario::from_path(&path).map_err(anyhow::Error::new)?;
        if quick {
            scenario.apply_quick().map_err(anyhow::Error::new)?;
        }
        let variants = scenario.expand().map_err(anyhow::Error::new)?;
        plans.push(Plan {
            id: id.clone(),
            scenario,
            variants,
            condition: None,
        });
    }
    Ok(plans)
}

/// ns-2's runs of the conformance experiments (replication 0 of their scenarios), on a
/// thread of their own beside the simulations (they are few and single-threaded), or why
/// there are none.
struct Ns2Runs {
    ns_path: PathBuf,
    skipped: bool,
    available: bool,
    thread: Option<std::thread::JoinHandle<Vec<(String, Ns2Result)>>>,
}

/// ns-2's run of one experiment, or why it failed.
type Ns2Result = std::result::Result<Run, String>;

impl Ns2Runs {
    /// Starts ns-2 on the stated conformance plans unless `--no-ns2` or ns-2 is not installed.
    fn start(args: &ReproduceArgs, plans: &[Plan]) -> Ns2Runs {
        let ns_path = PathBuf::from(tfrc_ns2::DEFAULT_NS_PATH);
        let available = tfrc_ns2::find_ns(&ns_path).is_ok();
        let thread = (!args.no_ns2 && available).then(|| {
            let jobs: Vec<(String, Vec<Scenario>)> = plans
                .iter()
                .filter(|plan| {
                    plan.condition.is_none() && NS2_CONFORMANCE.contains(&plan.id.as_str())
                })
                .map(|plan| {
                    let variants = plan.variants.iter().map(|v| v.replicate(0)).collect();
                    (plan.id.clone(), variants)
                })
                .collect();
            let out = args.out.clone();
            let ns_path = ns_path.clone();
            std::thread::spawn(move || {
                jobs.into_iter()
                    .map(|(id, variants)| {
                        let result = run_ns2(&id, &variants, &out, &ns_path);
                        (id, result)
                    })
                    .collect::<Vec<_>>()
            })
        });
        Ns2Runs {
            ns_path,
            skipped: args.no_ns2,
            available,
            thread,
        }
    }

    /// Waits for ns-2's runs: each experiment's run, by id.
    fn results(&mut self) -> Result<HashMap<String, Ns2Result>> {
        Ok(match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| anyhow::anyhow!("the ns-2 runs panicked"))?
                .into_iter()
                .collect(),
            None => HashMap::new(),
        })
    }

    /// What the report shows of ns-2 for experiment `id`: its run, or why there is none.
    fn result_of(&self, id: &str, results: &HashMap<String, Ns2Result>) -> Ns2Result {
        if self.skipped {
            Err("skipped (--no-ns2)".to_string())
        } else if !self.available {
            Err(format!(
                "ns-2 is not installed ({}; Debian package ns2)",
                self.ns_path.display()
            ))
        } else {
            results
                .get(id)
                .cloned()
                .unwrap_or_else(|| Err("ns-2 was not run".to_string()))
        }
    }
}

/// What the replications gave: replication 0's experiments with their runs loaded (the
/// figures show them), the other replications' runs reduced to their summaries, every
/// claim's sample per replication (per plan, per claim), and every run's outcome.
struct Replicated {
    first: Vec<Experiment>,
    replica_sets: Vec<Vec<Vec<LoadedRun>>>,
    samples: Vec<Vec<Vec<Sample>>>,
    outcomes: Vec<RunOutcome>,
}

/// Runs every replication, measures it against the claims and (but for the first) reduces it
/// to its summaries before the next, so memory and disk stay those of one replication.
fn run_replications(
    plans: &[Plan],
    claim_lists: &[&[claims::Claim]],
    replications: u32,
    args: &ReproduceArgs,
    bar: &indicatif::ProgressBar,
) -> Replicated {
    let threads = runner::jobs_or_cores(args.jobs);
    let mut replicated = Replicated {
        first: Vec::new(),
        replica_sets: Vec::new(),
        samples: claim_lists
            .iter()
            .map(|list| vec![Vec::new(); list.len()])
            .collect(),
        outcomes: Vec::new(),
    };
    for replication in 0..replications {
        bar.set_prefix(format!("replication {}/{replications}", replication + 1));
        let keep_files = replication == 0 || args.keep_runs;
        let (jobs, runs_of) =
            replication_jobs(plans, replication, &args.out, keep_files, args.keep_runs);
        let mut outcomes = runner::run_all(jobs, threads, bar);
        let experiments = load_experiments(plans, runs_of, &outcomes);
        // The outcomes keep no second reference to the loaded runs.
        for outcome in &mut outcomes {
            outcome.run = None;
        }
        {
            let views = run_views(&experiments);
            let measured = sample_claims(&experiments, claim_lists, &views, threads);
            for (index, per_claim) in measured.into_iter().enumerate() {
                for (collected, sample) in replicated.samples[index].iter_mut().zip(per_claim) {
                    collected.push(sample);
                }
            }
        }
        if replication == 0 {
            replicated.first = experiments;
        } else {
            replicated.replica_sets.push(summaries_only(&experiments));
            drop(experiments);
        }
        replicated.outcomes.extend(outcomes);
    }
    replicated
}

/// The runs of a replication's experiments reduced to their summaries (what the figures'
/// bands over the replications need).
fn summaries_only(experiments: &[Experiment]) -> Vec<Vec<LoadedRun>> {
    experiments
        .iter()
        .map(|experiment| {
            experiment
                .runs
                .iter()
                .map(|loaded| LoadedRun {
                    scenario: loaded.scenario.clone(),
                    run: std::sync::Arc::new(loaded.run.summary_only()),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The experiments under their stated conditions (the report's sections) with their claims'
/// outcomes, each outcome carrying the same claim's outcome under a calibrated condition
/// (`Outcome::calibrated`) where the experiment was also run under one.
fn beside_stated(
    experiments: Vec<Experiment>,
    outcomes: Vec<Vec<Outcome>>,
) -> (Vec<Experiment>, Vec<Vec<Outcome>>) {
    let mut calibrated: HashMap<String, (String, Vec<Outcome>)> = HashMap::new();
    let mut stated = Vec::new();
    let mut stated_outcomes = Vec::new();
    for (experiment, judged) in experiments.into_iter().zip(outcomes) {
        match &experiment.condition {
            Some(name) => {
                calibrated.insert(experiment.id.clone(), (name.clone(), judged));
            }
            None => {
                stated.push(experiment);
                stated_outcomes.push(judged);
            }
        }
    }
    for (experiment, judged) in stated.iter().zip(stated_outcomes.iter_mut()) {
        if let Some((name, under)) = calibrated.remove(&experiment.id) {
            for (outcome, other) in judged.iter_mut().zip(under) {
                outcome.calibrated = Some((name.clone(), Box::new(other)));
            }
        }
    }
    (stated, stated_outcomes)
}

/// `runs.csv`: every distinct run with its directory, wall time and events, then one
/// `param_<label>` column per sweep label of any experiment (the grid's parameters, empty where
/// a run's experiment has no such label), so that a table of runs can be grouped by them.
fn write_runs_csv(out: &Path, outcomes: &[runner::RunOutcome]) -> Result<()> {
    let labels: std::collections::BTreeSet<&str> = outcomes
        .iter()
        .flat_map(|outcome| outcome.job.scenario.variant.iter())
        .map(|(label, _)| label.as_str())
        .collect();
    let column = |label: &str| -> String {
        let safe: String = label
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        format!("param_{safe}")
    };
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let path = out.join("runs.csv");
    let mut writer = csv::Writer::from_path(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let mut header: Vec<String> = [
        "experiment",
        "run",
        "replication",
        "seed",
        "directory",
        "status",
        "wall_time_s",
        "events",
    ]
    .iter()
    .map(|name| (*name).to_owned())
    .collect();
    header.extend(labels.iter().map(|label| column(label)));
    writer.write_record(&header)?;
    for outcome in outcomes {
        let job = &outcome.job;
        let mut record = vec![
            job.experiment.clone(),
            job.scenario.name.clone(),
            job.replication.to_string(),
            job.scenario.seed.to_string(),
            job.directory
                .strip_prefix(out)
                .unwrap_or(&job.directory)
                .display()
                .to_string(),
            if outcome.result.is_ok() {
                "ok"
            } else {
                "failed"
            }
            .to_owned(),
            format!("{:.3}", outcome.wall_time.as_secs_f64()),
            outcome.events.to_string(),
        ];
        record.extend(labels.iter().map(|label| {
            job.scenario
                .variant
                .iter()
                .find(|(name, _)| name == label)
                .map_or(String::new(), |(_, value)| value.clone())
        }));
        writer.write_record(&record)?;
    }
    writer
        .flush()
        .with_context(|| format!("cannot write {}", path.display()))
}

/// How many experiments got each verdict.
#[derive(Debug, Default)]
struct VerdictCounts {
    holds: usize,
    differs: usize,
    inconclusive: usize,
    not_run: usize,
}

fn count_verdicts(report: &Report) -> VerdictCounts {
    let mut counts = VerdictCounts::default();
    // The today-tcp section is no experiment of the papers: it has no verdict to count.
    for section in report.sections.iter().filter(|s| s.id != today::ID) {
        match section.verdict {
            Verdict::Holds => counts.holds += 1,
            Verdict::Differs(_) => counts.differs += 1,
            Verdict::Inconclusive(_) => counts.inconclusive += 1,
            Verdict::NotRun(_) | Verdict::NoCriterion(_) => counts.not_run += 1,
        }
    }
    counts
}

/// Runs ns-2 on the experiment's scenario (its `profile = "ns2"` variant, ns-2 ignores the
/// profile) into `runs/<id>/ns-2`.
fn run_ns2(
    id: &str,
    variants: &[Scenario],
    out: &Path,
    ns_path: &Path,
) -> std::result::Result<Run, String> {
    let scenario = variants
        .iter()
        .find(|scenario| {
            scenario
                .variant
                .iter()
                .any(|(label, value)| label == "profile" && value == "ns2")
        })
        .or_else(|| variants.first())
        .cloned()
        .ok_or_else(|| "no simulator run to compare with".to_string())?;
    let directory = out.join("runs").join(id).join("ns-2");
    let options = tfrc_ns2::RunOptions {
        ns_path: ns_path.to_path_buf(),
        timeout: std::time::Duration::from_secs(600),
        keep_tcl: true,
        dry_run: false,
    };
    let generated = tfrc_ns2::generate(&scenario).map_err(|error| error.to_string())?;
    tfrc_ns2::run_generated(&generated, &directory, &options).map_err(|error| error.to_string())?;
    Run::load(&directory).map_err(|error| error.to_string())
}

fn setup_text(
    experiment: &Experiment,
    paper: Option<&claims::ExperimentClaims>,
    claims_file: &claims::ClaimsFile,
) -> String {
    let citations = &claims_file.papers;
    let scenario = &experiment.scenario;
    let mut text = String::new();
    if let Some(paper) = paper {
        let citation = citations
            .get(&paper.paper)
            .map_or(String::new(), |citation| format!(" ({citation})"));
        text += &format!(
            "Paper {}{citation}, {}. Shown: {}. Metrics: {}.\n\n",
            paper.paper,
            paper.location,
            paper.show,
            paper.metrics.join(", ")
        );
    }
    text += &format!(
        "Scenario `scenarios/{}.toml`: {} s simulated, seed {}, {} link(s), {} flow entr{}. ",
        experiment.id,
        scenario.duration.as_secs_f64(),
        scenario.seed,
        scenario.links.len(),
        scenario.flows.len(),
        if scenario.flows.len() == 1 {
            "y"
        } else {
            "ies"
        }
    );
    let links: Vec<String> = scenario.links.iter().map(link_text).collect();
    text += &format!("Links: {}.", links.join("; "));
    if !scenario.sweep.is_empty() || experiment.runs.len() > 1 {
        text += &runs_text(experiment);
    }
    for (name, calibration) in &claims_file.calibration {
        if calibration.experiments.contains(&experiment.id) {
            text += &format!(
                "\n\nCalibrated condition `{name}`, a sensitivity column beside the default \
                 verdict, which it never replaces: {} Level: **{}** (`{}`), fixed from {}. {}",
                calibration.condition,
                calibration.value,
                calibration.set.join(" "),
                calibration.source,
                calibration.method
            );
        }
    }
    text
}

/// A link as the setup names it: its ends, its forward direction's rate (or trace), delay and
/// queue limit.
fn link_text(link: &tfrc_scenario::Link) -> String {
    let rate = match &link.forward.capacity {
        Capacity::Rate(rate) => rate.to_string(),
        Capacity::Trace { path, .. } => format!(
            "trace {}",
            path.file_name().unwrap_or_default().to_string_lossy()
        ),
    };
    format!(
        "{}–{} {} {} ms queue {}",
        link.between[0],
        link.between[1],
        rate,
        link.forward.delay.as_millis(),
        link.forward.queue.limit()
    )
}

/// The setup's list of an experiment's runs by their sweep labels (the first six and the last
/// three of more than twelve).
fn runs_text(experiment: &Experiment) -> String {
    let names: Vec<String> = experiment
        .runs
        .iter()
        .map(|run| {
            run.scenario
                .variant
                .iter()
                .map(|(label, value)| format!("{label}={value}"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    format!(
        "\n\n{} runs: {}.",
        experiment.runs.len(),
        if names.len() > 12 {
            format!(
                "{} … {}",
                names[..6].join("; "),
                names[names.len() - 3..].join("; ")
            )
        } else {
            names.join("; ")
        }
    )
}

fn verdict(experiment: &Experiment, outcomes: &[Outcome]) -> Verdict {
    if experiment.runs.is_empty() {
        return Verdict::NotRun(format!(
            "no run finished: {}",
            experiment.failures.join("; ")
        ));
    }
    let listed = |wanted: &Status| -> Vec<String> {
        outcomes
            .iter()
            .filter(|outcome| &outcome.status == wanted)
            .map(|outcome| {
                format!(
                    "“{}”: paper {}, ours {}",
                    outcome.claim.text, outcome.paper, outcome.ours
                )
            })
            .collect()
    };
    let differing = listed(&Status::Differs);
    let inconclusive = listed(&Status::Inconclusive);
    let checked = outcomes
        .iter()
        .filter(|outcome| {
            matches!(
                outcome.status,
                Status::Holds | Status::Differs | Status::Inconclusive
            )
        })
        .count();
    let unmeasured: Vec<String> = outcomes
        .iter()
        .filter_map(|outcome| match &outcome.status {
            Status::NotMeasured(reason) => Some(format!("“{}”: {reason}", outcome.claim.text)),
            _ => None,
        })
        .collect();
    if !differing.is_empty() {
        let mut text = format!(
            "{} of {checked} checked claim(s) differ — {}",
            differing.len(),
            differing.join("; ")
        );
        if !inconclusive.is_empty() {
            text += &format!(
                "; {} inconclusive — {}",
                inconclusive.len(),
                inconclusive.join("; ")
            );
        }
        Verdict::Differs(text)
    } else if !inconclusive.is_empty() {
        Verdict::Inconclusive(format!(
            "{} of {checked} checked claim(s) straddle the threshold — {}",
            inconclusive.len(),
            inconclusive.join("; ")
        ))
    } else if checked > 0 {
        Verdict::Holds
    } else if !unmeasured.is_empty() {
        Verdict::NotRun(format!(
            "the claims could not be measured in these runs — {}",
            unmeasured.join("; ")
        ))
    } else {
        Verdict::NotRun(
            "no numeric claim to check: compare the figure with the paper's".to_string(),
        )
    }
}

/// The claims table of a section: each claim with the paper's words, the threshold's origin,
/// the paper's number, ours with its interval, the verdict, the cause and explanation of a
/// non-hold, and, where the experiment has a calibrated condition, the verdict under it.
fn claims_table(outcomes: &[Outcome], replications: u32) -> Table {
    let calibration = outcomes
        .iter()
        .find_map(|outcome| outcome.calibrated.as_ref().map(|(name, _)| name.clone()));
    let mut columns = vec![
        "claim",
        "the paper says",
        "threshold",
        "paper",
        "ours",
        "verdict",
        "cause",
        "why",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    if let Some(name) = &calibration {
        columns.push(format!("under the calibrated condition ({name})"));
    }
    let mut table = Table::new(
        format!(
            "Claims (ours: mean over {replications} replication(s) [95 % confidence interval])"
        ),
        columns,
    );
    for outcome in outcomes {
        let claim = &outcome.claim;
        let said = match (&claim.quote, &claim.source) {
            (Some(quote), Some(source)) => format!("“{quote}” ({source})"),
            (Some(quote), None) => format!("“{quote}”"),
            _ => "(no quote recorded)".to_string(),
        };
        let threshold = match claim.threshold.as_deref() {
            Some("paper") => "the paper's",
            Some("catalogue") => "the catalogue's (a number the paper leaves unstated)",
            Some("ours") => "ours (the paper gives no number)",
            _ => "not recorded",
        };
        let why = match outcome.status {
            Status::Differs | Status::Inconclusive => claim
                .explanation
                .clone()
                .unwrap_or_else(|| "(no explanation recorded yet)".to_string()),
            _ => String::new(),
        };
        let mut row = vec![
            format!("{} [{}]", claim.text, claim.metric),
            said,
            threshold.to_string(),
            outcome.paper.clone(),
            outcome.ours.clone(),
            outcome.status.text(),
            outcome.cause().to_string(),
            why,
        ];
        if calibration.is_some() {
            row.push(match &outcome.calibrated {
                Some((_, under)) => match under.status {
                    Status::Holds | Status::Differs | Status::Inconclusive => {
                        format!("{}: {}", under.status.text(), under.ours)
                    }
                    _ => under.status.text(),
                },
                None => String::new(),
            });
        }
        table = table.row(row);
    }
    table
}

/// `claims.csv`: every claim with the paper's figure, ours and the verdict.
pub const CLAIMS_FILE: &str = "claims.csv";

/// One claim judged: a row of `claims.csv` and of the Python package's `tfrc.reproduce()`
/// table.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClaimRow {
    /// Experiment id (`e000-loss`).
    pub experiment: String,
    /// The claim, in our words.
    pub claim: String,
    /// The metric measured (`scenarios/claims.toml`).
    pub metric: String,
    /// How ours is compared with the threshold (`>=`, `within`, …).
    pub relation: String,
    /// The paper's figure, as the report writes it.
    pub paper: String,
    /// Ours: the mean with its 95 % interval, as the report writes it.
    pub ours: String,
    /// `holds`, `differs`, `inconclusive` or `not run`, with the reason.
    pub status: String,
    /// Replications the figure is the mean of (empty when not run).
    pub replications: Option<usize>,
    /// Mean over the replications.
    pub mean: Option<f64>,
    /// Lower end of the 95 % Student-t confidence interval.
    pub ci_low: Option<f64>,
    /// Upper end of the interval.
    pub ci_high: Option<f64>,
    /// The threshold (the paper's or ours, as `source` says).
    pub threshold: String,
    /// Where the claim is in its paper.
    pub source: String,
    /// The paper's sentence.
    pub quote: String,
    /// How we read it.
    pub reading: String,
    /// The cause of a `differs` or `inconclusive` verdict (a word of the documented vocabulary,
    /// or `unexplained`); empty for other verdicts.
    pub cause: String,
    /// The verdict under the experiment's calibrated condition (empty where it has none).
    pub calibrated: String,
    /// Mean over the replications under the calibrated condition.
    pub calibrated_mean: Option<f64>,
    /// Lower end of its 95 % interval.
    pub calibrated_ci_low: Option<f64>,
    /// Upper end of its 95 % interval.
    pub calibrated_ci_high: Option<f64>,
    /// The calibrated condition: its name and level.
    pub calibration: String,
}

impl ClaimRow {
    /// The row of one judged claim of experiment `id`.
    fn of(id: &str, outcome: &Outcome, claims_file: &claims::ClaimsFile) -> ClaimRow {
        let claim = &outcome.claim;
        let under = outcome.calibrated.as_ref().map(|(_, under)| under.as_ref());
        ClaimRow {
            experiment: id.to_string(),
            claim: claim.text.clone(),
            metric: claim.metric.to_string(),
            relation: claim.relation.to_string(),
            paper: outcome.paper.clone(),
            ours: outcome.ours.clone(),
            status: outcome.status.text(),
            replications: outcome.interval.map(|i| i.n),
            mean: outcome.interval.map(|i| i.mean),
            ci_low: outcome.interval.map(|i| i.low),
            ci_high: outcome.interval.map(|i| i.high),
            threshold: claim.threshold.clone().unwrap_or_default(),
            source: claim.source.clone().unwrap_or_default(),
            quote: claim.quote.clone().unwrap_or_default(),
            reading: claim.reading.clone().unwrap_or_default(),
            cause: outcome.cause().to_string(),
            calibrated: under.map(|u| u.status.text()).unwrap_or_default(),
            calibrated_mean: under.and_then(|u| u.interval.map(|i| i.mean)),
            calibrated_ci_low: under.and_then(|u| u.interval.map(|i| i.low)),
            calibrated_ci_high: under.and_then(|u| u.interval.map(|i| i.high)),
            calibration: outcome
                .calibrated
                .as_ref()
                .map(|(name, _)| {
                    claims_file
                        .calibration
                        .get(name)
                        .map_or(name.clone(), |c| format!("{name}: {}", c.value))
                })
                .unwrap_or_default(),
        }
    }
}

/// How many of `outcomes` hold, differ and are inconclusive.
fn claim_counts<'a>(outcomes: impl Iterator<Item = &'a Outcome>) -> ClaimCounts {
    let mut counts = ClaimCounts::default();
    for outcome in outcomes {
        match outcome.status {
            Status::Holds => counts.held += 1,
            Status::Differs => counts.differ += 1,
            Status::Inconclusive => counts.inconclusive += 1,
            _ => {}
        }
    }
    counts
}

/// An experiment's claims held / differ / inconclusive under its stated conditions and under
/// its calibrated one (which never replaces them), as a measurement row: the quantity and the
/// counts. `None` for an experiment without a calibrated condition.
fn calibrated_counts(
    outcomes: &[Outcome],
    claims_file: &claims::ClaimsFile,
) -> Option<(String, String)> {
    let (name, _) = outcomes.iter().find_map(|o| o.calibrated.as_ref())?;
    let stated = claim_counts(outcomes.iter());
    let under = claim_counts(
        outcomes
            .iter()
            .filter_map(|o| o.calibrated.as_ref().map(|(_, under)| under.as_ref())),
    );
    let level = claims_file
        .calibration
        .get(name)
        .map_or(String::new(), |c| format!(": {}", c.value));
    Some((
        format!(
            "claims held / differ / inconclusive, stated conditions → calibrated condition {name}{level}"
        ),
        format!("{stated} → {under}"),
    ))
}

fn build_report(
    experiments: &[Experiment],
    claims_file: &claims::ClaimsFile,
    outcomes: &[Vec<Outcome>],
    replications: u32,
    args: &ReproduceArgs,
) -> Result<(Report, Vec<ClaimRow>)> {
    let mut report = Report::new("TFRC and its extensions: the papers' experiments, reproduced")
        .intro(report_intro(claims_file, replications, args.quick));
    let mut claim_rows = Vec::new();
    let mut beyond = None;
    for (experiment, outcomes) in experiments.iter().zip(outcomes) {
        if experiment.id == today::ID {
            // Not a paper's experiment: its own section after the papers', no claim rows.
            beyond = Some(today::section(
                experiment,
                outcomes,
                replications,
                &args.out,
            )?);
            continue;
        }
        let section =
            experiment_section(experiment, outcomes, claims_file, replications, &args.out)?;
        report = report.section(section);
        claim_rows.extend(
            outcomes
                .iter()
                .map(|outcome| ClaimRow::of(&experiment.id, outcome, claims_file)),
        );
    }
    if let Some(section) = beyond {
        report.intro.push_str(today::INTRO);
        report = report.section(section);
    }
    write_claims_csv(&args.out, &claim_rows)?;
    Ok((report, claim_rows))
}

/// The report's introduction: how the experiments ran and were judged, and the metrics.
fn report_intro(claims_file: &claims::ClaimsFile, replications: u32, quick: bool) -> String {
    format!(
        "Every experiment of the four papers (catalogue: docs/experiments.md in the toolkit's \
         source tree) run in our simulator (`tfrc sim`, the same protocol code as the real \
         tools){}. Each experiment ran {replications} independent replication(s): each draws new \
         seeds for every random source and loss model and starts every flow later by a delay \
         drawn uniformly in [0, one base RTT of its path), what the papers leave random or \
         unstated (`Scenario::replicate`; `tfrc sim FILE --replication K` reruns replication K). \
         A claim's figure is the mean over the replications with its 95 % Student-t confidence \
         interval; the claim **holds** when the whole interval lies on the paper's side of its \
         threshold, **differs** when it lies wholly on the other side, and is **inconclusive** \
         when it straddles it. Each claim quotes its paper and says whether its threshold is the \
         paper's, the catalogue's (a number the paper leaves unstated) or ours (where the paper \
         gives no number); every claim that does not hold carries its measured explanation and \
         a cause (`paper-network-not-modelled`, `paper-setup-unstated`, `paper-inconsistent`, \
         `model-differs`, `noise`), counted per experiment in the summary. Where one condition \
         a paper leaves unstated decides verdicts, its experiments are judged again under a \
         calibrated condition whose level comes from one of the paper's own figures, in a \
         column of its own beside the default verdict (docs/claims.md in the source tree lists \
         every claim's encoding and the calibrations). Figures show replication 0; raw \
         files of replication 0 are under `runs/`, the other replications keep their \
         `summary.json` (`runs.csv` lists every run with its seed and wall time); `claims.csv` \
         lists every claim with both numbers and the interval.\n\nMetrics (scenarios/claims.toml): {}",
        if quick {
            " — QUICK MODE: shortened runs, numbers are not comparable with the papers"
        } else {
            ""
        },
        claims_file
            .metrics
            .iter()
            .map(|(name, definition)| format!("{name}: {definition}"))
            .collect::<Vec<_>>()
            .join("; ")
    )
}

/// One experiment's section: setup, figures, claims and other tables, measurements beside ns-2
/// and the testbed, failures, raw data, claim counts and causes, verdict.
fn experiment_section(
    experiment: &Experiment,
    outcomes: &[Outcome],
    claims_file: &claims::ClaimsFile,
    replications: u32,
    out: &Path,
) -> Result<Section> {
    let paper = claims_file.experiment.get(&experiment.id);
    let title = match paper {
        Some(paper) => format!("paper {}, {}", paper.paper, paper.location),
        None => experiment.id.clone(),
    };
    let mut section = Section::new(&experiment.id, title)
        .setup(setup_text(experiment, paper, claims_file))
        .paper_result(
            paper
                .map(|paper| paper.result.clone())
                .unwrap_or_else(|| "(no claims recorded for this id)".into()),
        );
    for (path, caption) in figures::draw(experiment, out)? {
        section = section.figure(path, caption);
    }
    if !outcomes.is_empty() {
        section = section.table(claims_table(outcomes, replications));
    }
    if let Some(table) = figures::table(experiment) {
        section = section.table(table);
    }
    if let Some(table) = figures::feedback_table(experiment) {
        section = section.table(table);
    }
    if let Some(ns2) = &experiment.ns2 {
        for (quantity, paper, ours) in figures::ns2_comparison(experiment, ns2) {
            section = section.measurement(quantity, paper, ours);
        }
    }
    for (quantity, simulated, real) in figures::testbed_comparison(experiment) {
        section = section.measurement(quantity, simulated, real);
    }
    for failure in &experiment.failures {
        section = section.measurement("run failed", "—", failure.clone());
    }
    for loaded in &experiment.runs {
        let summary = loaded.run.dir.join("summary.json");
        if let Ok(relative) = summary.strip_prefix(out) {
            section = section.raw_data(relative.to_path_buf());
        }
    }
    if let Some((quantity, counts)) = calibrated_counts(outcomes, claims_file) {
        section = section.measurement(quantity, "—", counts);
    }
    let counts = claim_counts(outcomes.iter());
    section = section.claim_counts(counts.held, counts.differ, counts.inconclusive);
    section = section.causes(
        outcomes
            .iter()
            .map(Outcome::cause)
            .filter(|cause| !cause.is_empty())
            .map(String::from)
            .collect(),
    );
    Ok(section.verdict(verdict(experiment, outcomes)))
}

/// Writes `claims.csv` (every claim with both numbers and the interval) into `out`.
fn write_claims_csv(out: &Path, claim_rows: &[ClaimRow]) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let path = out.join(CLAIMS_FILE);
    let mut writer = csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::NonNumeric)
        .from_path(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    for row in claim_rows {
        writer
            .serialize(row)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    writer
        .flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
