//! `tfrc rmcat`: the wired test cases of RFC 8867 §5 (`scenarios/rmcat/*.toml`) run in the
//! simulator with media flows over TFRC, gTFRC and TFRC-SP, measured with RFC 8868's criteria,
//! and written up as `report.md` / `index.html` with one figure per case and protocol,
//! `rmcat.csv` (one row per flow) and `cases.csv` (one row per case, variant and protocol).
//!
//! A case file describes the network and the media (TFRC flows with a `media` table); the
//! protocol is not in the file: each run applies one arm of [`MediaProtocol`] to every media
//! flow, so one file gives the three protocols the same case.
//!
//! This module is the command (arguments, the runs of each case and protocol, the report's
//! sections); [`metrics`] measures a run with RFC 8868's criteria, [`report`] writes the
//! report's parts.

mod metrics;
mod report;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use tfrc_analysis::report::{format_value, Images, Report, Section};
use tfrc_scenario::{FlowKind, FlowSpec, MediaTransport, Scenario};

use crate::reproduce::figures::save_line;
use crate::reproduce::runner::{self, Job, RunOutcome};
use crate::sim::{variant_directory, variant_label};
use metrics::Measured;
pub use metrics::{CaseLine, FlowLine};

/// RFC 8868 §3, metric 7: "the relative ratio between congestion-controlled RTP flows with the
/// same priority level and similar path RTT should be bounded between 0.333 and 3".
pub const FAIRNESS_RATIO_BOUND: f64 = 3.0;

/// The rate control every media flow of a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub enum MediaProtocol {
    /// RFC 5348 TFRC.
    Tfrc,
    /// gTFRC with the target rate g = the flow's `media.min_rate` (the codec's floor).
    Gtfrc,
    /// TFRC-SP, RFC 4828 (nominal segment 1460 bytes, header 40 bytes).
    TfrcSp,
}

impl MediaProtocol {
    /// Name in files and figures.
    pub fn name(self) -> &'static str {
        match self {
            MediaProtocol::Tfrc => "tfrc",
            MediaProtocol::Gtfrc => "gtfrc",
            MediaProtocol::TfrcSp => "tfrc-sp",
        }
    }

    /// Title in the report.
    fn title(self) -> &'static str {
        match self {
            MediaProtocol::Tfrc => "TFRC",
            MediaProtocol::Gtfrc => "gTFRC",
            MediaProtocol::TfrcSp => "TFRC-SP",
        }
    }

    /// The overrides that make every media flow of `scenario` use this protocol.
    pub fn overrides(self, scenario: &Scenario) -> Vec<String> {
        let mut sets = Vec::new();
        for flow in &scenario.flows {
            let FlowKind::Tfrc(tfrc) = &flow.kind else {
                continue;
            };
            let Some(media) = &tfrc.media else {
                continue;
            };
            let name = &flow.name;
            match self {
                MediaProtocol::Tfrc => {}
                MediaProtocol::Gtfrc => {
                    // g is a TFRC rate: s bytes a packet. Over the bare core the packets carry
                    // s bytes of frames, so the codec's floor is g; over ETP they also carry
                    // a fragment header, so the floor needs a little more.
                    let floor = media.min_rate.bits_per_second() as f64;
                    let g = match media.transport {
                        MediaTransport::Tfrc => floor,
                        MediaTransport::Etp => etp::tfrc_rate_carrying(flow.packet_size, floor),
                    };
                    sets.push(format!("flow.\"{name}\".target_rate={}", g.ceil()))
                }
                MediaProtocol::TfrcSp => sets.push(format!("flow.\"{name}\".variant=sp")),
            }
        }
        sets
    }
}

/// `--transport`: what carries the media flows' frames (scenario key `media.transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportChoice {
    /// An ETP connection per media flow.
    Etp,
    /// The bare TFRC core (no ETP headers, handshake or acknowledgements).
    Tfrc,
}

impl TransportChoice {
    /// The name as the scenario key spells it.
    pub fn name(self) -> &'static str {
        match self {
            TransportChoice::Etp => "etp",
            TransportChoice::Tfrc => "tfrc",
        }
    }
}

/// Arguments of `tfrc rmcat`.
#[derive(Debug, Args)]
pub struct RmcatArgs {
    /// Only the cases whose file name starts with one of these (e.g. `--only 5.1 5.4`).
    #[arg(long, num_args = 1.., value_name = "CASE")]
    pub only: Vec<String>,
    /// The protocols the media flows run (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "tfrc,gtfrc,tfrc-sp"
    )]
    pub protocols: Vec<MediaProtocol>,
    /// Output directory: index.html, report.md, rmcat.csv, cases.csv, figures/ and runs/.
    #[arg(long, short, default_value = "rmcat")]
    pub out: PathBuf,
    /// The folder of case files (default: ./scenarios/rmcat, else the source tree's).
    #[arg(long)]
    pub scenarios: Option<PathBuf>,
    /// Simulations run in parallel (default: the number of cores).
    #[arg(long, short)]
    pub jobs: Option<usize>,
    /// What carries the media flows' frames (default: each case file's, ETP in the shipped
    /// files): `etp` connections or the bare `tfrc` core.
    #[arg(long, value_enum)]
    pub transport: Option<TransportChoice>,
    /// Shortened runs for a smoke test (each case's `quick` overrides).
    #[arg(long)]
    pub quick: bool,
    /// Embed the figures in index.html instead of linking them.
    #[arg(long)]
    pub embed_images: bool,
    /// No progress bar and no summary on the terminal.
    #[arg(long, short)]
    pub quiet: bool,
}

fn cases_dir(args: &RmcatArgs) -> PathBuf {
    if let Some(dir) = &args.scenarios {
        return dir.clone();
    }
    crate::project_path("scenarios/rmcat", Path::is_dir)
}

/// The case files of `dir` (`*.toml`, sorted), those starting with one of `only` if given.
fn case_files(dir: &Path, only: &[String]) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the RMCAT cases folder {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    if !only.is_empty() {
        for wanted in only {
            if !files
                .iter()
                .any(|file| stem(file).starts_with(wanted.as_str()))
            {
                bail!(
                    "--only {wanted}: no case file in {} starts with it (cases: {})",
                    dir.display(),
                    files.iter().map(|f| stem(f)).collect::<Vec<_>>().join(", ")
                );
            }
        }
        files.retain(|file| {
            only.iter()
                .any(|wanted| stem(file).starts_with(wanted.as_str()))
        });
    }
    if files.is_empty() {
        bail!("no case files (*.toml) in {}", dir.display());
    }
    Ok(files)
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Runs `tfrc rmcat`.
pub fn run(args: &RmcatArgs) -> Result<()> {
    let dir = cases_dir(args);
    let files = case_files(&dir, &args.only)?;
    let protocols = selected_protocols(args)?;
    let planned = plan_runs(args, &files, &protocols)?;
    let bar = runner::progress_bar(planned.jobs.len() as u64, args.quiet);
    let outcomes = runner::run_all(planned.jobs, runner::jobs_or_cores(args.jobs), &bar);
    bar.finish_and_clear();

    let mut measured = Measured {
        flows: Vec::new(),
        cases: Vec::new(),
    };
    let mut sections = Vec::new();
    for (case, scenario) in &planned.cases {
        for &protocol in &protocols {
            let runs: Vec<&RunOutcome> = outcomes
                .iter()
                .zip(&planned.job_protocols)
                .filter(|(outcome, &job_protocol)| {
                    outcome.job.experiment == *case && job_protocol == protocol
                })
                .map(|(outcome, _)| outcome)
                .collect();
            sections.push(case_section(
                (case, scenario),
                protocol,
                &runs,
                &args.out,
                &mut measured,
            )?);
        }
    }
    crate::write_csv(&args.out.join("rmcat.csv"), &measured.flows)?;
    crate::write_csv(&args.out.join("cases.csv"), &measured.cases)?;
    write_report(args, sections, &measured.cases)
}

/// The protocols `--protocols` names, each once, in the order given.
fn selected_protocols(args: &RmcatArgs) -> Result<Vec<MediaProtocol>> {
    if args.protocols.is_empty() {
        bail!("--protocols: give at least one of tfrc, gtfrc, tfrc-sp");
    }
    let mut seen = BTreeSet::new();
    Ok(args
        .protocols
        .iter()
        .copied()
        .filter(|protocol| seen.insert(protocol.name()))
        .collect())
}

/// The runs of every case under every protocol: the jobs, each job's protocol (its case is
/// the job's `experiment`), and the cases as loaded (by file stem).
struct Planned {
    jobs: Vec<Job>,
    job_protocols: Vec<MediaProtocol>,
    cases: Vec<(String, Scenario)>,
}

/// Loads every case file and plans its runs: each sweep variant under each protocol.
fn plan_runs(args: &RmcatArgs, files: &[PathBuf], protocols: &[MediaProtocol]) -> Result<Planned> {
    let mut planned = Planned {
        jobs: Vec::new(),
        job_protocols: Vec::new(),
        cases: Vec::new(),
    };
    for file in files {
        let case = stem(file);
        let scenario = load_case(args, file)?;
        for &protocol in protocols {
            let mut arm = scenario.clone();
            arm.apply_sets(protocol.overrides(&scenario))
                .map_err(anyhow::Error::new)?;
            for variant in arm.expand().map_err(anyhow::Error::new)? {
                let directory = args
                    .out
                    .join("runs")
                    .join(&case)
                    .join(protocol.name())
                    .join(variant_directory(&variant));
                planned.jobs.push(Job {
                    experiment: case.clone(),
                    scenario: variant,
                    directory,
                    replication: 0,
                    keep_files: true,
                    compress_files: false,
                });
                planned.job_protocols.push(protocol);
            }
        }
        planned.cases.push((case, scenario));
    }
    Ok(planned)
}

/// A case file as this run takes it: shortened with `--quick`, its media flows on
/// `--transport`'s carrier; an error if it has no media flow.
fn load_case(args: &RmcatArgs, file: &Path) -> Result<Scenario> {
    let mut scenario = Scenario::from_path(file).map_err(anyhow::Error::new)?;
    if args.quick {
        scenario.apply_quick().map_err(anyhow::Error::new)?;
    }
    if !scenario.flows.iter().any(is_media) {
        bail!(
            "{}: no media flow (a tfrc flow with a `media` table): nothing to measure",
            file.display()
        );
    }
    if let Some(transport) = args.transport {
        let sets: Vec<String> = scenario
            .flows
            .iter()
            .filter(|flow| is_media(flow))
            .map(|flow| {
                format!(
                    "flow.\"{}\".media.transport={}",
                    flow.name,
                    transport.name()
                )
            })
            .collect();
        scenario.apply_sets(sets).map_err(anyhow::Error::new)?;
    }
    Ok(scenario)
}

/// The section of one case under one protocol: per run (variant) its rate figure, flow table
/// and raw data; then the case figures and the verdict. Adds the runs' lines to `measured`.
fn case_section(
    (case, scenario): (&str, &Scenario),
    protocol: MediaProtocol,
    runs: &[&RunOutcome],
    out: &Path,
    measured: &mut Measured,
) -> Result<Section> {
    let mut section = Section::new(
        format!("{case}/{}", protocol.name()),
        format!("{} — {}", scenario.name, protocol.title()),
    )
    .setup(report::case_setup(scenario, protocol));
    let mut verdicts = Vec::new();
    for outcome in runs {
        let variant = variant_label(&outcome.job.scenario);
        let (Ok(_), Some(run)) = (&outcome.result, &outcome.run) else {
            let why = outcome
                .result
                .as_ref()
                .err()
                .cloned()
                .or_else(|| outcome.load_error.clone())
                .unwrap_or_default();
            bail!(
                "{case} ({}) {variant}: the run failed: {why}",
                protocol.name()
            );
        };
        let lines = metrics::measure(case, &variant, protocol, &outcome.job.scenario, run);
        let stem = if variant.is_empty() {
            protocol.name().to_string()
        } else {
            format!(
                "{}-{}",
                protocol.name(),
                variant_directory(&outcome.job.scenario)
            )
        };
        let figure = save_line(
            &report::rate_figure(
                &scenario.name,
                &outcome.job.scenario,
                run,
                protocol,
                &variant,
            ),
            out,
            case,
            &stem,
        )?;
        section = section
            .figure(
                figure,
                format!(
                    "{case} {} {variant}: received rate of each video flow (1 s bins) \
                     and the capacity the background traffic leaves (dashed)",
                    protocol.title()
                ),
            )
            .table(report::flow_table(case, protocol, &variant, &lines.flows))
            .raw_data(
                outcome
                    .job
                    .directory
                    .strip_prefix(out)
                    .unwrap_or(&outcome.job.directory)
                    .join("summary.json"),
            );
        for line in &lines.cases {
            verdicts.push((variant.clone(), line.clone()));
        }
        measured.flows.extend(lines.flows);
        measured.cases.extend(lines.cases);
    }
    Ok(section
        .table(report::case_table(&verdicts))
        .verdict(report::judge(&verdicts)))
}

/// Writes `report.md` / `index.html` and, unless quiet, prints each case line and the
/// report's path.
fn write_report(args: &RmcatArgs, sections: Vec<Section>, case_lines: &[CaseLine]) -> Result<()> {
    let transport = match args.transport {
        Some(TransportChoice::Tfrc) => "the bare TFRC core (`--transport tfrc`)",
        Some(TransportChoice::Etp) | None => "ETP connections",
    };
    let mut report =
        Report::new("RMCAT test cases (RFC 8867 §5) for media over TFRC").intro(format!(
            "{}\n\nThis run: media over {transport}. Made by {} (one run per case, variant \
             and protocol; the seeds are in `cases.csv` and each run's `summary.json`).",
            report::INTRO,
            tfrc_output::tool()
        ));
    for section in sections {
        report = report.section(section);
    }
    let files = report
        .images(Images::embedded_if(args.embed_images))
        .write(&args.out)
        .context("cannot write the report")?;
    if !args.quiet {
        for line in case_lines {
            eprintln!(
                "{:<34} {:<14} {:<8} {:<5} utilization {:>6}  worst ratio {:>6}  frames missed {:>5} %",
                line.case,
                line.variant,
                line.protocol,
                line.bottleneck,
                format_value(line.utilization, 3),
                format_value(line.worst_ratio, 2),
                format_value(line.frames_missed_pct, 1)
            );
        }
        println!("{}", files.html.display());
    }
    Ok(())
}

/// Whether a flow is a media flow: a TFRC flow with a `media` table.
fn is_media(flow: &FlowSpec) -> bool {
    matches!(&flow.kind, FlowKind::Tfrc(tfrc) if tfrc.media.is_some())
}

/// `video` for a media flow with a rate range, `audio` for one at a single rate, else the kind.
fn role(flow: &FlowSpec) -> String {
    match &flow.kind {
        FlowKind::Tfrc(tfrc) => match (&tfrc.media, tfrc.max_rate) {
            (Some(media), Some(max)) if media.min_rate == max => "audio".into(),
            (Some(_), _) => "video".into(),
            _ => "tfrc".into(),
        },
        other => other.name().into(),
    }
}

/// Base RTT of a flow: the propagation delays of its route, both ways ([`Scenario::path_base_rtt`]).
fn base_rtt(scenario: &Scenario, flow: &FlowSpec) -> f64 {
    scenario
        .route(&flow.from, &flow.to)
        .map_or(0.0, |route| scenario.path_base_rtt(&route).as_secs_f64())
}
