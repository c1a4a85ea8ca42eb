//! `tfrc rmcat`: the wired test cases of RFC 8867 §5 (`scenarios/rmcat/*.toml`) run in the
//! simulator with media flows over TFRC, gTFRC and TFRC-SP, measured with RFC 8868's criteria,
//! and written up as `report.md` / `index.html` with one figure per case and protocol,
//! `rmcat.csv` (one row per flow) and `cases.csv` (one row per case, variant and protocol).
//!
//! A case file describes the network and the media (TFRC flows with a `media` table); the
//! protocol is not in the file: each run applies one arm of [`MediaProtocol`] to every media
//! flow, so one file gives the three protocols the same case.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use serde::Serialize;
use tfrc_analysis::plot::{Dash, LinePlot, LineStyle};
use tfrc_analysis::report::{format_value, Images, Report, Section, Verdict};
use tfrc_analysis::run::{Direction, Run};
use tfrc_analysis::table::Table;
use tfrc_scenario::{Capacity, FlowKind, FlowSpec, LinkDirectionSpec, MediaTransport, Scenario};
use tfrc_sim::simulation::Topology;

use crate::reproduce::figures::save_line;
use crate::reproduce::runner::{self, Job};
use crate::sim::{variant_directory, variant_label};

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
    let local = PathBuf::from("scenarios/rmcat");
    if local.is_dir() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/rmcat")
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

/// One line of `rmcat.csv`: a flow of a run.
#[derive(Debug, Clone, Serialize)]
pub struct FlowLine {
    /// Case (file stem).
    pub case: String,
    /// Sweep variant (`delay=50ms`), empty without a sweep.
    pub variant: String,
    /// The run's seed (its `summary.json` names the tool and commit too).
    pub seed: u64,
    /// `tfrc`, `gtfrc` or `tfrc-sp`.
    pub protocol: String,
    /// Flow name.
    pub flow: String,
    /// `video` (a media flow with a rate range), `audio` (a media flow at one rate), else the
    /// flow's kind (`tcp`, `cbr`, …).
    pub role: String,
    /// When the flow started and stopped, seconds.
    pub start_s: f64,
    /// See `start_s`.
    pub stop_s: f64,
    /// Throughput at the receiver (every byte that arrived, headers included) over the flow's
    /// active time, kb/s: RFC 8868's "receiver rate", the same quantity over ETP and the bare
    /// core.
    pub throughput_kbps: Option<f64>,
    /// Goodput over the flow's active time, kb/s: the payload the application received (over
    /// ETP the frames delivered on time; over the bare core every payload byte, late frames
    /// included).
    pub goodput_kbps: Option<f64>,
    /// Packets lost on the way, percent of those sent.
    pub loss_pct: Option<f64>,
    /// One-way delay of the packets that arrived, median and 95th percentile, ms.
    pub delay_p50_ms: Option<f64>,
    /// See `delay_p50_ms`.
    pub delay_p95_ms: Option<f64>,
    /// Media frames captured.
    pub frames: Option<u64>,
    /// Frames that did not arrive whole within their deadline, percent of those captured.
    pub frames_missed_pct: Option<f64>,
    /// Frames that arrived whole but late, percent of those captured.
    pub frames_late_pct: Option<f64>,
}

/// One line of `cases.csv`: a run's case-level figures on one bottleneck of its media flows (a
/// case with media both ways, 5.3, has two).
#[derive(Debug, Clone, Serialize)]
pub struct CaseLine {
    /// Case (file stem).
    pub case: String,
    /// Sweep variant, empty without a sweep.
    pub variant: String,
    /// The run's seed.
    pub seed: u64,
    /// Protocol.
    pub protocol: String,
    /// The bottleneck (`a->b`): the link direction of least nominal capacity on the path of
    /// the media flows of this line.
    pub bottleneck: String,
    /// Media flows (video and audio) whose bottleneck it is.
    pub media_flows: usize,
    /// RFC 8868 §3 metric 10: the media flows' received bits over the capacity the background
    /// CBR traffic leaves them on that bottleneck, over the media's active time; empty where
    /// other adaptive traffic (TCP) shares it or the capacity is a trace.
    pub utilization: Option<f64>,
    /// RFC 8868 §3 metric 7: the largest ratio of mean throughputs (received rates) between two
    /// video flows on the
    /// same bottleneck, over the periods when two or more are active and nothing changes.
    pub worst_ratio: Option<f64>,
    /// Whether those flows have the same base RTT (the criterion's "similar path RTT").
    pub same_rtt: bool,
    /// Frames of those media flows that missed their deadline, percent.
    pub frames_missed_pct: Option<f64>,
    /// The goodput of the TCP flows crossing the bottleneck, kb/s (empty without TCP).
    pub tcp_goodput_kbps: Option<f64>,
}

/// Runs `tfrc rmcat`.
pub fn run(args: &RmcatArgs) -> Result<()> {
    let dir = cases_dir(args);
    let files = case_files(&dir, &args.only)?;
    if args.protocols.is_empty() {
        bail!("--protocols: give at least one of tfrc, gtfrc, tfrc-sp");
    }
    let protocols: Vec<MediaProtocol> = {
        let mut seen = BTreeSet::new();
        args.protocols
            .iter()
            .copied()
            .filter(|protocol| seen.insert(protocol.name()))
            .collect()
    };
    let mut jobs = Vec::new();
    // The protocol of each job (its case is the job's `experiment`).
    let mut job_protocols = Vec::new();
    let mut cases: Vec<(String, Scenario)> = Vec::new();
    for file in &files {
        let case = stem(file);
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
        for &protocol in &protocols {
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
                jobs.push(Job {
                    experiment: case.clone(),
                    scenario: variant,
                    directory,
                    replication: 0,
                    keep_files: true,
                    compress_files: false,
                });
                job_protocols.push(protocol);
            }
        }
        cases.push((case, scenario));
    }
    let bar = runner::progress_bar(jobs.len() as u64, args.quiet);
    let outcomes = runner::run_all(jobs, runner::jobs_or_cores(args.jobs), &bar);
    bar.finish_and_clear();

    let mut flow_lines = Vec::new();
    let mut case_lines = Vec::new();
    let mut sections = Vec::new();
    for (case, scenario) in &cases {
        for &protocol in &protocols {
            let mut section = Section::new(
                format!("{case}/{}", protocol.name()),
                format!("{} — {}", scenario.name, protocol.title()),
            )
            .setup(case_setup(scenario, protocol));
            let mut verdicts = Vec::new();
            for (outcome, &job_protocol) in outcomes.iter().zip(&job_protocols) {
                if outcome.job.experiment != *case || job_protocol != protocol {
                    continue;
                }
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
                let measured = measure(case, &variant, protocol, &outcome.job.scenario, run);
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
                    &rate_figure(
                        &scenario.name,
                        &outcome.job.scenario,
                        run,
                        protocol,
                        &variant,
                    ),
                    &args.out,
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
                    .table(flow_table(case, protocol, &variant, &measured.flows))
                    .raw_data(
                        outcome
                            .job
                            .directory
                            .strip_prefix(&args.out)
                            .unwrap_or(&outcome.job.directory)
                            .join("summary.json"),
                    );
                for line in &measured.cases {
                    verdicts.push((variant.clone(), line.clone()));
                }
                flow_lines.extend(measured.flows);
                case_lines.extend(measured.cases);
            }
            section = section.table(case_table(&verdicts));
            section = section.verdict(judge(&verdicts));
            sections.push(section);
        }
    }

    crate::write_csv(&args.out.join("rmcat.csv"), &flow_lines)?;
    crate::write_csv(&args.out.join("cases.csv"), &case_lines)?;
    let transport = match args.transport {
        Some(TransportChoice::Tfrc) => "the bare TFRC core (`--transport tfrc`)",
        Some(TransportChoice::Etp) | None => "ETP connections",
    };
    let mut report =
        Report::new("RMCAT test cases (RFC 8867 §5) for media over TFRC").intro(format!(
            "{INTRO}\n\nThis run: media over {transport}. Made by {} (one run per case, variant \
             and protocol; the seeds are in `cases.csv` and each run's `summary.json`).",
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
        for line in &case_lines {
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

const INTRO: &str = "Each case of RFC 8867 §5 is a file in `scenarios/rmcat/` (its numbers quoted \
from the RFC beside them); each runs with every media flow over TFRC (RFC 5348), gTFRC (target \
rate = the codec's floor, `media.min_rate`, as a TFRC rate) and TFRC-SP (RFC 4828). The media \
flows are ETP connections (one unreliable stream whose messages are the frames, with the \
playout deadline as their time control) unless `--transport tfrc` put them on the bare TFRC \
core. The media sources follow RFC \
8867 §4.3 (video 150 kb/s – 1.5 Mb/s at 30 frames/s, starting at 150 kb/s; audio 20 kb/s in \
20 ms frames); a frame misses its deadline unless all its packets arrive within the playout \
deadline of its capture (300 ms). Metrics are RFC 8868 §3's: goodput, loss, one-way delay, \
frames discarded, fairness (the ratio of average throughputs, \"bounded between 0.333 and 3\" \
for flows of similar RTT) and utilization of the capacity the background UDP leaves. See \
docs/rmcat.md for every choice the RFCs leave open.";

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

fn case_setup(scenario: &Scenario, protocol: MediaProtocol) -> String {
    let media: Vec<String> = scenario
        .flows
        .iter()
        .filter(|flow| is_media(flow))
        .map(|flow| {
            format!(
                "{} ({}, {}–{} s)",
                flow.name,
                role(flow),
                flow.start.as_secs_f64(),
                flow.stop.unwrap_or(scenario.duration).as_secs_f64()
            )
        })
        .collect();
    format!(
        "{} s; media flows over {}: {}. The case file is `{}`.",
        scenario.duration.as_secs_f64(),
        protocol.title(),
        media.join(", "),
        scenario.file()
    )
}

/// What one run measured.
struct Measured {
    flows: Vec<FlowLine>,
    /// One per bottleneck of the media flows.
    cases: Vec<CaseLine>,
}

fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| 100.0 * part as f64 / whole as f64)
}

fn measure(
    case: &str,
    variant: &str,
    protocol: MediaProtocol,
    scenario: &Scenario,
    run: &Run,
) -> Measured {
    let mut flows = Vec::new();
    for flow in &scenario.flows {
        let Some(summary) = run.flow_summary(&flow.name) else {
            continue;
        };
        flows.push(FlowLine {
            case: case.into(),
            variant: variant.into(),
            seed: scenario.seed,
            protocol: protocol.name().into(),
            flow: flow.name.clone(),
            role: role(flow),
            start_s: summary.start_s,
            stop_s: summary.stop_s,
            throughput_kbps: summary.recv_rate_bps.map(|bps| bps / 1e3),
            goodput_kbps: summary.goodput_bps.map(|bps| bps / 1e3),
            loss_pct: summary.receiving_ratio.map(|ratio| 100.0 * (1.0 - ratio)),
            delay_p50_ms: summary.delay_p50_s.map(|s| s * 1e3),
            delay_p95_ms: summary.delay_p95_s.map(|s| s * 1e3),
            frames: summary.frames,
            frames_missed_pct: summary
                .frames
                .zip(summary.frames_on_time)
                .and_then(|(all, whole)| percent(all - whole.min(all), all)),
            frames_late_pct: summary
                .frames
                .zip(summary.frames_late)
                .and_then(|(all, late)| percent(late, all)),
        });
    }
    let topology = Topology::new(scenario);
    let cases = bottleneck_groups(scenario, &topology)
        .iter()
        .map(|group| {
            let (worst_ratio, same_rtt) = fairness(scenario, &topology, run, group);
            let (mut frames, mut on_time) = (0u64, 0u64);
            for &index in &group.media {
                if let Some(summary) = run.flow_summary(&scenario.flows[index].name) {
                    frames += summary.frames.unwrap_or(0);
                    on_time += summary.frames_on_time.unwrap_or(0);
                }
            }
            let tcp: Vec<f64> = scenario
                .flows
                .iter()
                .filter(|flow| matches!(flow.kind, FlowKind::Tcp(_)))
                .filter(|flow| flow_path(&topology, flow).contains(&group.direction))
                .filter_map(|flow| run.flow_summary(&flow.name)?.goodput_bps)
                .collect();
            CaseLine {
                case: case.into(),
                variant: variant.into(),
                seed: scenario.seed,
                protocol: protocol.name().into(),
                bottleneck: topology.direction_name(group.direction),
                media_flows: group.media.len(),
                utilization: utilization(scenario, &topology, run, group),
                worst_ratio,
                same_rtt,
                frames_missed_pct: percent(frames - on_time.min(frames), frames),
                tcp_goodput_kbps: (!tcp.is_empty()).then(|| tcp.iter().sum::<f64>() / 1e3),
            }
        })
        .collect();
    Measured { flows, cases }
}

/// Media flows that share one bottleneck: the link direction of least nominal capacity on
/// their path (the first of equals).
struct Group {
    direction: usize,
    media: Vec<usize>,
}

/// The scenario's settings of a topology's link direction.
fn direction_spec<'a>(
    scenario: &'a Scenario,
    topology: &Topology,
    direction: usize,
) -> &'a LinkDirectionSpec {
    let (_, _, link, forward) = topology.directions[direction];
    let link = &scenario.links[link];
    if forward {
        &link.forward
    } else {
        &link.reverse
    }
}

/// A direction's nominal capacity, bits/s (`None` for a trace).
fn capacity(scenario: &Scenario, topology: &Topology, direction: usize) -> Option<f64> {
    match &direction_spec(scenario, topology, direction).capacity {
        Capacity::Rate(rate) => Some(rate.bits_per_second() as f64),
        _ => None,
    }
}

fn flow_path(topology: &Topology, flow: &FlowSpec) -> Vec<usize> {
    match (topology.node(&flow.from), topology.node(&flow.to)) {
        (Some(from), Some(to)) => topology.path(from, to).unwrap_or_default(),
        _ => Vec::new(),
    }
}

fn bottleneck_groups(scenario: &Scenario, topology: &Topology) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for (index, flow) in scenario.flows.iter().enumerate() {
        if !is_media(flow) {
            continue;
        }
        let path = flow_path(topology, flow);
        let Some(&direction) = path.iter().min_by(|&&a, &&b| {
            let (a, b) = (
                capacity(scenario, topology, a).unwrap_or(f64::INFINITY),
                capacity(scenario, topology, b).unwrap_or(f64::INFINITY),
            );
            a.total_cmp(&b)
        }) else {
            continue;
        };
        match groups.iter_mut().find(|group| group.direction == direction) {
            Some(group) => group.media.push(index),
            None => groups.push(Group {
                direction,
                media: vec![index],
            }),
        }
    }
    groups
}

/// The CBR flows crossing `direction`: (rate bits/s, start s, stop s).
fn background(
    scenario: &Scenario,
    topology: &Topology,
    direction: usize,
) -> Option<Vec<(f64, f64, f64)>> {
    let mut cbr = Vec::new();
    for flow in &scenario.flows {
        if is_media(flow) || !flow_path(topology, flow).contains(&direction) {
            continue;
        }
        match &flow.kind {
            FlowKind::Cbr { rate } => cbr.push((
                rate.bits_per_second() as f64,
                flow.start.as_secs_f64(),
                flow.stop
                    .unwrap_or(scenario.duration)
                    .min(scenario.duration)
                    .as_secs_f64(),
            )),
            // Adaptive or random traffic leaves no known capacity.
            _ => return None,
        }
    }
    Some(cbr)
}

/// The capacity the background CBR leaves on `direction` at time `t`, bits/s.
fn available_at(capacity: f64, background: &[(f64, f64, f64)], t: f64) -> f64 {
    let busy: f64 = background
        .iter()
        .filter(|(_, start, stop)| t >= *start && t < *stop)
        .map(|(rate, _, _)| rate)
        .sum();
    (capacity - busy).max(0.0)
}

/// RFC 8868 §3 metric 10 over the group's active time.
fn utilization(scenario: &Scenario, topology: &Topology, run: &Run, group: &Group) -> Option<f64> {
    let capacity = capacity(scenario, topology, group.direction)?;
    let background = background(scenario, topology, group.direction)?;
    let flows: Vec<&FlowSpec> = group.media.iter().map(|&i| &scenario.flows[i]).collect();
    let start = flows
        .iter()
        .map(|f| f.start.as_secs_f64())
        .fold(f64::INFINITY, f64::min);
    let stop = flows
        .iter()
        .map(|f| {
            f.stop
                .unwrap_or(scenario.duration)
                .min(scenario.duration)
                .as_secs_f64()
        })
        .fold(0.0, f64::max);
    // The available capacity is piecewise constant between the background's start and stop
    // times: integrate it exactly.
    let mut cuts: Vec<f64> = background
        .iter()
        .flat_map(|(_, a, b)| [*a, *b])
        .chain([start, stop])
        .filter(|t| *t >= start && *t <= stop)
        .collect();
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let offered: f64 = cuts
        .windows(2)
        .map(|w| available_at(capacity, &background, (w[0] + w[1]) / 2.0) * (w[1] - w[0]))
        .sum();
    let received: f64 = flows
        .iter()
        .filter_map(|flow| run.flow_summary(&flow.name))
        .map(|summary| summary.recv_bytes as f64 * 8.0)
        .sum();
    (offered > 0.0).then(|| received / offered)
}

/// Base RTT of a flow: the propagation delays of its route, both ways ([`Scenario::path_base_rtt`]).
fn base_rtt(scenario: &Scenario, flow: &FlowSpec) -> f64 {
    scenario
        .route(&flow.from, &flow.to)
        .map_or(0.0, |route| scenario.path_base_rtt(&route).as_secs_f64())
}

/// RFC 8868 §3 metric 7 between the group's video flows: the largest ratio of mean goodputs
/// over the periods in which two or more are active and nothing starts, stops, pauses or
/// resumes; and whether their base RTTs are the same.
fn fairness(
    scenario: &Scenario,
    topology: &Topology,
    run: &Run,
    group: &Group,
) -> (Option<f64>, bool) {
    let videos: Vec<&FlowSpec> = group
        .media
        .iter()
        .map(|&i| &scenario.flows[i])
        .filter(|flow| role(flow) == "video")
        .collect();
    if videos.len() < 2 {
        return (None, true);
    }
    let rtts: Vec<f64> = videos.iter().map(|flow| base_rtt(scenario, flow)).collect();
    let same_rtt = rtts.iter().all(|rtt| (rtt - rtts[0]).abs() < 1e-9);
    // Active spans of each video flow (a pause splits one).
    let spans = |flow: &FlowSpec| -> Vec<(f64, f64)> {
        let start = flow.start.as_secs_f64();
        let stop = flow
            .stop
            .unwrap_or(scenario.duration)
            .min(scenario.duration)
            .as_secs_f64();
        match &flow.kind {
            FlowKind::Tfrc(tfrc) => match tfrc.media.as_ref().and_then(|m| m.pause.zip(m.resume)) {
                Some((pause, resume)) => {
                    vec![(start, pause.as_secs_f64()), (resume.as_secs_f64(), stop)]
                }
                None => vec![(start, stop)],
            },
            _ => vec![(start, stop)],
        }
    };
    // Every time something on the bottleneck changes.
    let mut cuts: Vec<f64> = videos
        .iter()
        .flat_map(|f| spans(f))
        .flat_map(|(a, b)| [a, b])
        .collect();
    if let Some(background) = background(scenario, topology, group.direction) {
        cuts.extend(background.iter().flat_map(|(_, a, b)| [*a, *b]));
    }
    for flow in &scenario.flows {
        if flow_path(topology, flow).contains(&group.direction) {
            cuts.push(flow.start.as_secs_f64());
            cuts.push(flow.stop.unwrap_or(scenario.duration).as_secs_f64());
        }
    }
    cuts.retain(|t| *t <= scenario.duration.as_secs_f64());
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let interval = scenario.output.interval.as_secs_f64();
    let mut worst: Option<f64> = None;
    for window in cuts.windows(2) {
        let (from, to) = (window[0], window[1]);
        let active: Vec<&&FlowSpec> = videos
            .iter()
            .filter(|flow| spans(flow).iter().any(|(a, b)| *a <= from && *b >= to))
            .collect();
        if active.len() < 2 || to - from < interval {
            continue;
        }
        let means: Vec<f64> = active
            .iter()
            .filter_map(|flow| {
                let bins: Vec<f64> = run
                    // "the average throughput ... obtained by each RTP media stream": what
                    // reaches the receiver, whether or not the playout then uses it (goodput
                    // counts late frames over the bare core and not over ETP, which drops
                    // them; the throughput is the same quantity for both).
                    .throughput_series(&flow.name, Direction::Received)
                    .into_iter()
                    .filter(|(t, _)| *t - interval >= from - 1e-9 && *t <= to + 1e-9)
                    .map(|(_, kbps)| kbps)
                    .collect();
                (!bins.is_empty()).then(|| bins.iter().sum::<f64>() / bins.len() as f64)
            })
            .collect();
        let (Some(low), Some(high)) = (
            means.iter().copied().reduce(f64::min),
            means.iter().copied().reduce(f64::max),
        ) else {
            continue;
        };
        let ratio = if low > 0.0 { high / low } else { f64::INFINITY };
        worst = Some(worst.map_or(ratio, |w: f64| w.max(ratio)));
    }
    (worst, same_rtt)
}

/// The section's verdict: RFC 8868's fairness bound where it applies (two or more video flows
/// of the same base RTT on one bottleneck), else no criterion.
fn judge(lines: &[(String, CaseLine)]) -> Verdict {
    let judged: Vec<&(String, CaseLine)> = lines
        .iter()
        .filter(|(_, line)| line.same_rtt && line.worst_ratio.is_some())
        .collect();
    if judged.is_empty() {
        return Verdict::NoCriterion(
            "RFC 8867 states this case's expected behaviour in words, and RFC 8868's one \
             numeric bound (throughput ratios within 0.333–3) is for two or more flows of \
             similar RTT on one bottleneck, which this case does not have: the figures and \
             tables are the result"
                .into(),
        );
    }
    let failing: Vec<String> = judged
        .iter()
        .filter(|(_, line)| line.worst_ratio.is_some_and(|r| r > FAIRNESS_RATIO_BOUND))
        .map(|(variant, line)| {
            format!(
                "{}worst ratio {}",
                if variant.is_empty() {
                    String::new()
                } else {
                    format!("{variant}: ")
                },
                format_value(line.worst_ratio, 2)
            )
        })
        .collect();
    if failing.is_empty() {
        Verdict::Holds
    } else {
        Verdict::Differs(format!(
            "RFC 8868 §3 bounds the ratio of average throughputs between flows of similar RTT \
             to 0.333–3; {}",
            failing.join("; ")
        ))
    }
}

fn flow_table(case: &str, protocol: MediaProtocol, variant: &str, flows: &[FlowLine]) -> Table {
    let mut table = Table::new(
        format!("{case} {} {variant}: per flow", protocol.title()),
        [
            "flow",
            "role",
            "active (s)",
            "goodput (kb/s)",
            "loss (%)",
            "delay p50 (ms)",
            "delay p95 (ms)",
            "frames",
            "missed deadline (%)",
            "late (%)",
        ]
        .map(String::from)
        .to_vec(),
    );
    for line in flows.iter().filter(|line| line.role != "cbr") {
        table = table.row(vec![
            line.flow.clone(),
            line.role.clone(),
            format!("{}–{}", line.start_s, line.stop_s),
            format_value(line.goodput_kbps, 1),
            format_value(line.loss_pct, 2),
            format_value(line.delay_p50_ms, 0),
            format_value(line.delay_p95_ms, 0),
            line.frames.map_or("".into(), |n| n.to_string()),
            format_value(line.frames_missed_pct, 1),
            format_value(line.frames_late_pct, 1),
        ]);
    }
    table
}

fn case_table(lines: &[(String, CaseLine)]) -> Table {
    let mut table = Table::new(
        "Case figures (RFC 8868 §3)",
        [
            "variant",
            "bottleneck",
            "utilization",
            "worst throughput ratio",
            "same base RTT",
            "frames missed (%)",
            "TCP goodput (kb/s)",
        ]
        .map(String::from)
        .to_vec(),
    );
    for (variant, line) in lines {
        table = table.row(vec![
            variant.clone(),
            line.bottleneck.clone(),
            format_value(line.utilization, 3),
            format_value(line.worst_ratio, 2),
            if line.same_rtt { "yes" } else { "no" }.into(),
            format_value(line.frames_missed_pct, 1),
            format_value(line.tcp_goodput_kbps, 1),
        ]);
    }
    table
}

/// Received rate of every video flow (and the TCP flows) over time, with the capacity the
/// background CBR leaves on the first group's bottleneck; `case` names the case (its title
/// without the variant).
fn rate_figure(
    case: &str,
    scenario: &Scenario,
    run: &Run,
    protocol: MediaProtocol,
    variant: &str,
) -> LinePlot {
    let mut plot = LinePlot::new(
        format!(
            "{case} over {}{}",
            protocol.title(),
            if variant.is_empty() {
                String::new()
            } else {
                format!(" ({variant})")
            }
        ),
        "time (s)",
        "received rate (kb/s)",
    );
    let videos: Vec<&FlowSpec> = scenario
        .flows
        .iter()
        .filter(|flow| role(flow) == "video")
        .collect();
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = videos
        .iter()
        .map(|flow| {
            (
                flow.name.clone(),
                run.throughput_series(&flow.name, Direction::Received),
            )
        })
        .collect();
    // TCP: one line, or their sum when there are several (5.7's ten short flows).
    let tcp: Vec<&FlowSpec> = scenario
        .flows
        .iter()
        .filter(|flow| matches!(flow.kind, FlowKind::Tcp(_)))
        .collect();
    match tcp.as_slice() {
        [] => {}
        [flow] => lines.push((
            flow.name.clone(),
            run.throughput_series(&flow.name, Direction::Received),
        )),
        flows => {
            let mut sum: std::collections::BTreeMap<u64, f64> = std::collections::BTreeMap::new();
            for flow in flows {
                for (t, kbps) in run.throughput_series(&flow.name, Direction::Received) {
                    *sum.entry(t.to_bits()).or_default() += kbps;
                }
            }
            let mut points: Vec<(f64, f64)> = sum
                .into_iter()
                .map(|(t, kbps)| (f64::from_bits(t), kbps))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            lines.push((format!("TCP, {} flows together", flows.len()), points));
        }
    }
    let shown = lines.len();
    for (index, (label, points)) in lines.into_iter().enumerate() {
        plot = plot.line(
            label,
            points,
            LineStyle {
                color: index,
                ..LineStyle::default()
            },
        );
    }
    let topology = Topology::new(scenario);
    if let Some(group) = bottleneck_groups(scenario, &topology).first() {
        if let Some(capacity) = capacity(scenario, &topology, group.direction) {
            // Less the background UDP where only UDP shares the bottleneck; the nominal
            // capacity where TCP does too.
            let background = background(scenario, &topology, group.direction);
            let end = scenario.duration.as_secs_f64();
            let steps = (end * 10.0).ceil() as usize;
            let points = (0..=steps)
                .map(|step| {
                    // The background's stop times are exclusive: the last point is just
                    // before the end.
                    let t = (step as f64 / 10.0).min(end - 1e-6);
                    let left = background
                        .as_deref()
                        .map_or(capacity, |udp| available_at(capacity, udp, t));
                    (t, left / 1e3)
                })
                .collect();
            let direction = topology.direction_name(group.direction);
            plot = plot.line(
                match background {
                    Some(_) => {
                        format!("capacity for the media on {direction} (less the background UDP)")
                    }
                    None => format!("capacity of {direction}"),
                },
                points,
                LineStyle {
                    color: shown,
                    dash: Dash::Dashed,
                    markers: false,
                },
            );
        }
    }
    plot
}
