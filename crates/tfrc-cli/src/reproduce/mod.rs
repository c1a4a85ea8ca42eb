//! `tfrc reproduce`: every experiment of the papers (`scenarios/<id>.toml`) run in the
//! simulator, measured against the papers' claims (`scenarios/claims.toml`), and written up as
//! `report.md` and `index.html` with the figures and the raw files of every run.

mod claims;
mod figures;
mod runner;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant as WallInstant;

use anyhow::{bail, Context, Result};
use clap::Args;
use tfrc_analysis::report::{Images, Report, Section, Verdict};
use tfrc_analysis::run::Run;
use tfrc_scenario::{Capacity, FlowKind, Scenario};

use crate::sim::variant_directory;
use claims::{Outcome, RunView, Status};
use runner::Job;

/// Experiments whose report compares our runs with ns-2's on the same axes.
const NS2_CONFORMANCE: [&str; 3] = ["e000-const-bw", "e000-loss", "e000-udp"];

/// Arguments of `tfrc reproduce`.
#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// Only these experiment ids (e.g. `--only e000-loss e003-single`); default: all.
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
}

fn scenarios_dir(args: &ReproduceArgs) -> PathBuf {
    if let Some(dir) = &args.scenarios {
        return dir.clone();
    }
    let local = PathBuf::from("scenarios");
    if local.join("claims.toml").is_file() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
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
        let open_loop = !matches!(flow.kind, FlowKind::Tfrc(_) | FlowKind::Tcp(_));
        let stop = flow.stop?;
        (open_loop && !flow.start.is_zero() && stop < scenario.duration)
            .then_some((flow.start.as_secs_f64(), stop.as_secs_f64()))
    })
}

/// Mean capacity in kb/s of the bottleneck named in the run's summary.
fn capacity_kbps(scenario: &Scenario, run: &Run) -> Option<f64> {
    let bottleneck = run.summary.bottleneck.as_ref()?;
    if let Some(capacity) = bottleneck.capacity_bps {
        return Some(capacity / 1000.0);
    }
    let direction = scenario.link_direction(&bottleneck.from, &bottleneck.to)?;
    match &direction.capacity {
        Capacity::Rate(rate) => Some(rate.kbps()),
        Capacity::Trace(path) => tfrc_sim::DeliveryTrace::from_file(path)
            .ok()
            .map(|trace| trace.mean_rate_bits_per_second() / 1000.0),
    }
}

/// One run of an experiment, loaded.
pub struct LoadedRun {
    /// The concrete scenario.
    pub scenario: Scenario,
    /// Its files.
    pub run: Run,
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
}

/// The recorded testbed runs of experiment `id`: run directories under `dir` whose summary names
/// the scenario `id` or one of its variants `id[...]`.
fn testbed_runs(dir: &Path, id: &str) -> Vec<Run> {
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
        .filter_map(|path| Run::load(&path).ok())
        .filter(|run| {
            run.summary.scenario == id || run.summary.scenario.starts_with(&format!("{id}["))
        })
        .collect()
}

/// `tfrc reproduce`.
pub fn run(args: &ReproduceArgs) -> Result<()> {
    let started = WallInstant::now();
    let dir = scenarios_dir(args);
    let known = experiment_ids(&dir)?;
    let ids: Vec<String> = if args.only.is_empty() {
        known.clone()
    } else {
        for id in &args.only {
            if !known.contains(id) {
                bail!(
                    "--only {id}: no such experiment in {} (known: {})",
                    dir.display(),
                    known.join(", ")
                );
            }
        }
        args.only.clone()
    };
    let claims = claims::load(&dir.join("claims.toml"))?;

    // Scenarios → jobs, with runs shared by experiments that summarise others.
    let mut scenarios = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    let mut job_of_key: HashMap<String, usize> = HashMap::new();
    let mut runs_of: Vec<Vec<(Scenario, usize)>> = Vec::new();
    for id in &ids {
        let path = dir.join(format!("{id}.toml"));
        let mut scenario = Scenario::from_path(&path).map_err(anyhow::Error::new)?;
        if args.quick {
            scenario.apply_quick().map_err(anyhow::Error::new)?;
        }
        let variants = scenario.expand().map_err(anyhow::Error::new)?;
        let mut runs = Vec::new();
        for variant in variants {
            let key = run_key(&variant);
            let index = *job_of_key.entry(key).or_insert_with(|| {
                jobs.push(Job {
                    experiment: id.clone(),
                    directory: args
                        .out
                        .join("runs")
                        .join(id)
                        .join(variant_directory(&variant)),
                    scenario: variant.clone(),
                });
                jobs.len() - 1
            });
            runs.push((variant, index));
        }
        scenarios.push(scenario);
        runs_of.push(runs);
    }
    let threads = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    if !args.quiet {
        eprintln!(
            "{} experiments, {} runs ({} distinct){} on {threads} threads → {}",
            ids.len(),
            runs_of.iter().map(Vec::len).sum::<usize>(),
            jobs.len(),
            if args.quick { ", quick" } else { "" },
            args.out.display()
        );
    }
    let outcomes = runner::run_all(jobs, threads, args.quiet);
    let simulated = started.elapsed();
    write_runs_csv(&args.out, &outcomes)?;

    // ns-2 side by side for the conformance experiments.
    let ns_path = PathBuf::from(tfrc_ns2::DEFAULT_NS_PATH);
    let ns_available = tfrc_ns2::find_ns(&ns_path).is_ok();
    let testbed_dir = args
        .testbed
        .clone()
        .unwrap_or_else(|| dir.join("../results/testbed"));

    let mut experiments = Vec::new();
    for ((id, scenario), runs) in ids.iter().zip(scenarios).zip(runs_of) {
        let mut loaded = Vec::new();
        let mut failures = Vec::new();
        for (variant, index) in runs {
            let outcome = &outcomes[index];
            match &outcome.result {
                Ok(_) => match Run::load(&outcome.job.directory) {
                    Ok(run) => loaded.push(LoadedRun {
                        scenario: variant,
                        run,
                    }),
                    Err(error) => failures.push(format!("{}: {error}", variant.name)),
                },
                Err(error) => failures.push(error.clone()),
            }
        }
        let ns2 = if NS2_CONFORMANCE.contains(&id.as_str()) {
            Some(if args.no_ns2 {
                Err("skipped (--no-ns2)".to_string())
            } else if !ns_available {
                Err(format!(
                    "ns-2 is not installed ({}; Debian package ns2)",
                    ns_path.display()
                ))
            } else {
                run_ns2(id, &loaded, &args.out, &ns_path)
            })
        } else {
            None
        };
        experiments.push(Experiment {
            id: id.clone(),
            scenario,
            runs: loaded,
            failures,
            ns2,
            testbed: testbed_runs(&testbed_dir, id),
        });
    }

    let report = build_report(&experiments, &claims, args)?;
    let (holds, differs, not_run) = count_verdicts(&report);
    let files = report
        .images(if args.embed_images {
            Images::Embedded
        } else {
            Images::Linked
        })
        .write(&args.out)
        .context("cannot write the report")?;
    if !args.quiet {
        eprintln!(
            "simulations {:.1} s, whole report {:.1} s; verdicts: {holds} hold, {differs} differ, {not_run} not run",
            simulated.as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
        println!("{}", files.html.display());
    }
    Ok(())
}

/// `runs.csv`: every distinct run with its directory, wall time and events.
fn write_runs_csv(out: &Path, outcomes: &[runner::RunOutcome]) -> Result<()> {
    let mut text = String::from("experiment,run,directory,status,wall_time_s,events\n");
    for outcome in outcomes {
        text += &format!(
            "{},\"{}\",\"{}\",{},{:.3},{}\n",
            outcome.job.experiment,
            outcome.job.scenario.name,
            outcome
                .job
                .directory
                .strip_prefix(out)
                .unwrap_or(&outcome.job.directory)
                .display(),
            if outcome.result.is_ok() {
                "ok"
            } else {
                "failed"
            },
            outcome.wall_time.as_secs_f64(),
            outcome.events
        );
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    std::fs::write(out.join("runs.csv"), text)
        .with_context(|| format!("cannot write {}", out.join("runs.csv").display()))
}

fn count_verdicts(report: &Report) -> (usize, usize, usize) {
    let mut counts = (0, 0, 0);
    for section in &report.sections {
        match section.verdict {
            Verdict::Holds => counts.0 += 1,
            Verdict::Differs(_) => counts.1 += 1,
            Verdict::NotRun(_) => counts.2 += 1,
        }
    }
    counts
}

/// Runs ns-2 on the experiment's scenario (its `profile = "ns2"` variant, ns-2 ignores the
/// profile) into `runs/<id>/ns-2`.
fn run_ns2(
    id: &str,
    runs: &[LoadedRun],
    out: &Path,
    ns_path: &Path,
) -> std::result::Result<Run, String> {
    let scenario = runs
        .iter()
        .find(|run| {
            run.scenario
                .variant
                .iter()
                .any(|(label, value)| label == "profile" && value == "ns2")
        })
        .or_else(|| runs.first())
        .map(|run| run.scenario.clone())
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

fn setup_text(experiment: &Experiment, paper: Option<&claims::ExperimentClaims>) -> String {
    let scenario = &experiment.scenario;
    let mut text = String::new();
    if let Some(paper) = paper {
        text += &format!(
            "Paper {}, {}. Shown: {}. Metrics: {}.\n\n",
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
    let links: Vec<String> = scenario
        .links
        .iter()
        .map(|link| {
            let rate = match &link.forward.capacity {
                Capacity::Rate(rate) => rate.to_string(),
                Capacity::Trace(path) => format!(
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
        })
        .collect();
    text += &format!("Links: {}.", links.join("; "));
    if !scenario.sweep.is_empty() || experiment.runs.len() > 1 {
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
        text += &format!(
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
        );
    }
    text
}

fn status_text(outcome: &Outcome) -> String {
    match &outcome.status {
        Status::Holds => "holds".into(),
        Status::Differs => "differs".into(),
        Status::Reference => "reference".into(),
        Status::Qualitative => "see figure".into(),
        Status::NotMeasured(reason) => format!("not measured: {reason}"),
    }
}

fn verdict(experiment: &Experiment, outcomes: &[Outcome]) -> Verdict {
    if experiment.runs.is_empty() {
        return Verdict::NotRun(format!(
            "no run finished: {}",
            experiment.failures.join("; ")
        ));
    }
    let differing: Vec<String> = outcomes
        .iter()
        .filter(|outcome| outcome.status == Status::Differs)
        .map(|outcome| {
            format!(
                "“{}”: paper {}, ours {}",
                outcome.claim.text, outcome.paper, outcome.ours
            )
        })
        .collect();
    let checked = outcomes
        .iter()
        .filter(|outcome| matches!(outcome.status, Status::Holds | Status::Differs))
        .count();
    let unmeasured: Vec<String> = outcomes
        .iter()
        .filter_map(|outcome| match &outcome.status {
            Status::NotMeasured(reason) => Some(format!("“{}”: {reason}", outcome.claim.text)),
            _ => None,
        })
        .collect();
    if !differing.is_empty() {
        Verdict::Differs(format!(
            "{} of {checked} checked claim(s) differ — {}",
            differing.len(),
            differing.join("; ")
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

fn build_report(
    experiments: &[Experiment],
    claims_file: &claims::ClaimsFile,
    args: &ReproduceArgs,
) -> Result<Report> {
    let mut report = Report::new("TFRC and its extensions: the papers' experiments, reproduced")
        .intro(format!(
            "Every experiment of ../shared/EXPERIMENTS.md run in our simulator (`tfrc sim`, the same \
             protocol code as the real tools){}. For each: the setup, our figures, the paper's stated \
             result, the paper's numbers beside ours, and a verdict. Claims and tolerances come from \
             `scenarios/claims.toml` (tolerances are ours; the papers give none). Raw files of every \
             run are under `runs/` (`runs.csv` lists them with their wall times); `claims.csv` lists \
             every claim with both numbers.\n\nMetrics (scenarios/claims.toml): {}",
            if args.quick {
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
        ));
    let views: BTreeMap<String, Vec<RunView<'_>>> = experiments
        .iter()
        .map(|experiment| {
            let views = experiment
                .runs
                .iter()
                .map(|loaded| RunView {
                    labels: &loaded.scenario.variant,
                    run: &loaded.run,
                    disturbance: disturbance(&loaded.scenario),
                    capacity_kbps: capacity_kbps(&loaded.scenario, &loaded.run),
                })
                .collect();
            (experiment.id.clone(), views)
        })
        .collect();
    let mut csv = String::from("experiment,claim,metric,relation,paper,ours,status\n");
    let quote = |text: &str| format!("\"{}\"", text.replace('"', "\"\""));
    for experiment in experiments {
        let paper = claims_file.experiment.get(&experiment.id);
        let runs = &views[&experiment.id];
        let outcomes: Vec<Outcome> = paper
            .map(|paper| {
                paper
                    .claim
                    .iter()
                    .map(|claim| claims::evaluate(claim, runs, &views))
                    .collect()
            })
            .unwrap_or_default();
        let title = match paper {
            Some(paper) => format!("paper {}, {}", paper.paper, paper.location),
            None => experiment.id.clone(),
        };
        let mut section = Section::new(&experiment.id, title)
            .setup(setup_text(experiment, paper))
            .paper_result(
                paper
                    .map(|paper| paper.result.clone())
                    .unwrap_or_else(|| "(no claims recorded for this id)".into()),
            );
        for (path, caption) in figures::draw(experiment, &args.out)? {
            section = section.figure(path, caption);
        }
        if let Some(table) = figures::table(experiment) {
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
        for outcome in &outcomes {
            section = section.measurement(
                format!(
                    "{} [{}; {}]",
                    outcome.claim.text,
                    outcome.claim.metric,
                    status_text(outcome)
                ),
                outcome.paper.clone(),
                outcome.ours.clone(),
            );
            csv += &format!(
                "{},{},{},{},{},{},{}\n",
                experiment.id,
                quote(&outcome.claim.text),
                quote(&outcome.claim.metric),
                outcome.claim.relation,
                quote(&outcome.paper),
                quote(&outcome.ours),
                quote(&status_text(outcome))
            );
        }
        for failure in &experiment.failures {
            section = section.measurement("run failed", "—", failure.clone());
        }
        for loaded in &experiment.runs {
            let summary = loaded.run.dir.join("summary.json");
            if let Ok(relative) = summary.strip_prefix(&args.out) {
                section = section.raw_data(relative.to_path_buf());
            }
        }
        report = report.section(section.verdict(verdict(experiment, &outcomes)));
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    std::fs::write(args.out.join("claims.csv"), csv)
        .with_context(|| format!("cannot write {}", args.out.join("claims.csv").display()))?;
    Ok(report)
}
