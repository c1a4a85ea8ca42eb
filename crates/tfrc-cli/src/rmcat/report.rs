//! The RMCAT report's parts: its introduction, each case's setup, per-run tables and rate
//! figure, and the verdict against RFC 8868's fairness bound.

use tfrc_analysis::plot::{Dash, LinePlot, LineStyle};
use tfrc_analysis::report::{format_value, Verdict};
use tfrc_analysis::run::{Direction, Run};
use tfrc_analysis::table::Table;
use tfrc_scenario::{FlowKind, FlowSpec, Scenario};
use tfrc_sim::simulation::Topology;

use super::metrics::{available_at, background, bottleneck_groups, capacity, CaseLine, FlowLine};
use super::{is_media, role, MediaProtocol, FAIRNESS_RATIO_BOUND};

/// The report's introduction: what the cases are, how they run and what is measured.
pub(super) const INTRO: &str =
    "Each case of RFC 8867 §5 is a file in `scenarios/rmcat/` (its numbers quoted \
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

/// The setup of a case's section: its length, its media flows and the case file.
pub(super) fn case_setup(scenario: &Scenario, protocol: MediaProtocol) -> String {
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

/// The section's verdict: RFC 8868's fairness bound where it applies (two or more video flows
/// of the same base RTT on one bottleneck), else no criterion.
pub(super) fn judge(lines: &[(String, CaseLine)]) -> Verdict {
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

/// A run's per-flow table (the CBR background left out).
pub(super) fn flow_table(
    case: &str,
    protocol: MediaProtocol,
    variant: &str,
    flows: &[FlowLine],
) -> Table {
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

/// A section's table of case figures, one row per variant and bottleneck.
pub(super) fn case_table(lines: &[(String, CaseLine)]) -> Table {
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
pub(super) fn rate_figure(
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
    let lines = received_rates(scenario, run);
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
    if let Some((label, points)) = capacity_line(scenario) {
        plot = plot.line(
            label,
            points,
            LineStyle {
                color: shown,
                dash: Dash::Dashed,
                markers: false,
            },
        );
    }
    plot
}

/// The received rate series of every video flow, then of the TCP flows: one line, or their
/// sum when there are several (5.7's ten short flows).
fn received_rates(scenario: &Scenario, run: &Run) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = scenario
        .flows
        .iter()
        .filter(|flow| role(flow) == "video")
        .map(|flow| {
            (
                flow.name.clone(),
                run.throughput_series(&flow.name, Direction::Received),
            )
        })
        .collect();
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
    lines
}

/// The capacity for the media on the first group's bottleneck over time (kb/s, every 0.1 s)
/// with its legend: less the background UDP where only UDP shares the bottleneck, the nominal
/// capacity where TCP does too; `None` for a trace-driven bottleneck.
fn capacity_line(scenario: &Scenario) -> Option<(String, Vec<(f64, f64)>)> {
    let topology = Topology::new(scenario);
    let group = bottleneck_groups(scenario, &topology).into_iter().next()?;
    let capacity = capacity(scenario, &topology, group.direction)?;
    let background = background(scenario, &topology, group.direction);
    let end = scenario.duration.as_secs_f64();
    let steps = (end * 10.0).ceil() as usize;
    let points = (0..=steps)
        .map(|step| {
            // The background's stop times are exclusive: the last point is just before the end.
            let t = (step as f64 / 10.0).min(end - 1e-6);
            let left = background
                .as_deref()
                .map_or(capacity, |udp| available_at(capacity, udp, t));
            (t, left / 1e3)
        })
        .collect();
    let direction = topology.direction_name(group.direction);
    let label = match background {
        Some(_) => format!("capacity for the media on {direction} (less the background UDP)"),
        None => format!("capacity of {direction}"),
    };
    Some((label, points))
}
