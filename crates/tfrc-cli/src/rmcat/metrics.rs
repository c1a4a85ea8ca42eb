//! RFC 8868 §3's metrics of a run of an RMCAT case: per flow (goodput, loss, delay, frames)
//! and per bottleneck of the media (utilization of the capacity the background leaves,
//! fairness between video flows), the lines of `rmcat.csv` and `cases.csv`.

use serde::Serialize;
use tfrc_analysis::run::{Direction, Run};
use tfrc_scenario::{Capacity, FlowKind, FlowSpec, LinkDirectionSpec, Scenario};
use tfrc_sim::simulation::Topology;

use super::{base_rtt, is_media, role, MediaProtocol};

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

/// What one run measured.
pub(super) struct Measured {
    /// One per flow.
    pub(super) flows: Vec<FlowLine>,
    /// One per bottleneck of the media flows.
    pub(super) cases: Vec<CaseLine>,
}

/// `part` as a percentage of `whole` (`None` of nothing).
fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| 100.0 * part as f64 / whole as f64)
}

/// What one run of a case measured: a line per flow, a line per bottleneck of its media.
pub(super) fn measure(
    case: &str,
    variant: &str,
    protocol: MediaProtocol,
    scenario: &Scenario,
    run: &Run,
) -> Measured {
    let identity = LineIdentity {
        case,
        variant,
        seed: scenario.seed,
        protocol,
    };
    let flows = scenario
        .flows
        .iter()
        .filter_map(|flow| flow_line(&identity, flow, run))
        .collect();
    let topology = Topology::new(scenario);
    let cases = bottleneck_groups(scenario, &topology)
        .iter()
        .map(|group| case_line(&identity, scenario, &topology, run, group))
        .collect();
    Measured { flows, cases }
}

/// What names a run's lines in the CSV files.
struct LineIdentity<'a> {
    case: &'a str,
    variant: &'a str,
    seed: u64,
    protocol: MediaProtocol,
}

/// A flow's line of `rmcat.csv`, from its summary (`None` for a flow the run did not have).
fn flow_line(identity: &LineIdentity<'_>, flow: &FlowSpec, run: &Run) -> Option<FlowLine> {
    let summary = run.flow_summary(&flow.name)?;
    Some(FlowLine {
        case: identity.case.into(),
        variant: identity.variant.into(),
        seed: identity.seed,
        protocol: identity.protocol.name().into(),
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
    })
}

/// A bottleneck's line of `cases.csv`: RFC 8868's utilization and fairness there, the frames
/// its media missed, the goodput of the TCP flows crossing it.
fn case_line(
    identity: &LineIdentity<'_>,
    scenario: &Scenario,
    topology: &Topology,
    run: &Run,
    group: &Group,
) -> CaseLine {
    let (worst_ratio, same_rtt) = fairness(scenario, topology, run, group);
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
        .filter(|flow| flow_path(topology, flow).contains(&group.direction))
        .filter_map(|flow| run.flow_summary(&flow.name)?.goodput_bps)
        .collect();
    CaseLine {
        case: identity.case.into(),
        variant: identity.variant.into(),
        seed: identity.seed,
        protocol: identity.protocol.name().into(),
        bottleneck: topology.direction_name(group.direction),
        media_flows: group.media.len(),
        utilization: utilization(scenario, topology, run, group),
        worst_ratio,
        same_rtt,
        frames_missed_pct: percent(frames - on_time.min(frames), frames),
        tcp_goodput_kbps: (!tcp.is_empty()).then(|| tcp.iter().sum::<f64>() / 1e3),
    }
}

/// Media flows that share one bottleneck: the link direction of least nominal capacity on
/// their path (the first of equals).
pub(super) struct Group {
    /// The bottleneck: a direction index of the topology.
    pub(super) direction: usize,
    /// The media flows, by index in the scenario.
    pub(super) media: Vec<usize>,
}

/// The scenario's settings of a topology's link direction.
pub(super) fn direction_spec<'a>(
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
pub(super) fn capacity(scenario: &Scenario, topology: &Topology, direction: usize) -> Option<f64> {
    match &direction_spec(scenario, topology, direction).capacity {
        Capacity::Rate(rate) => Some(rate.bits_per_second() as f64),
        _ => None,
    }
}

/// The link directions a flow's packets cross, in order (none without a route).
pub(super) fn flow_path(topology: &Topology, flow: &FlowSpec) -> Vec<usize> {
    match (topology.node(&flow.from), topology.node(&flow.to)) {
        (Some(from), Some(to)) => topology.path(from, to).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The media flows grouped by their bottleneck, in the order of their first flow.
pub(super) fn bottleneck_groups(scenario: &Scenario, topology: &Topology) -> Vec<Group> {
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
pub(super) fn background(
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
pub(super) fn available_at(capacity: f64, background: &[(f64, f64, f64)], t: f64) -> f64 {
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
    let spans = |flow: &FlowSpec| active_spans(scenario, flow);
    let cuts = change_times(scenario, topology, group, &videos);
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
            .filter_map(|flow| mean_received_kbps(run, &flow.name, (from, to), interval))
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

/// The spans in which a video flow is active (a pause splits its active time in two).
fn active_spans(scenario: &Scenario, flow: &FlowSpec) -> Vec<(f64, f64)> {
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
}

/// Every time something on the group's bottleneck changes (a video flow starts, pauses,
/// resumes or stops; background traffic or another flow crossing it comes or goes), sorted,
/// within the run.
fn change_times(
    scenario: &Scenario,
    topology: &Topology,
    group: &Group,
    videos: &[&FlowSpec],
) -> Vec<f64> {
    let mut cuts: Vec<f64> = videos
        .iter()
        .flat_map(|f| active_spans(scenario, f))
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
    cuts
}

/// The mean of a flow's received rate (kb/s) over the intervals within `(from, to)`; `None`
/// without one.
fn mean_received_kbps(run: &Run, flow: &str, (from, to): (f64, f64), interval: f64) -> Option<f64> {
    let bins: Vec<f64> = run
        // "the average throughput ... obtained by each RTP media stream": what reaches the
        // receiver, whether or not the playout then uses it (goodput counts late frames over
        // the bare core and not over ETP, which drops them; the throughput is the same quantity
        // for both).
        .throughput_series(flow, Direction::Received)
        .into_iter()
        .filter(|(t, _)| *t - interval >= from - 1e-9 && *t <= to + 1e-9)
        .map(|(_, kbps)| kbps)
        .collect();
    (!bins.is_empty()).then(|| bins.iter().sum::<f64>() / bins.len() as f64)
}
