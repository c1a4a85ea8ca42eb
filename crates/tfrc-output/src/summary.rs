//! How `summary.json` is computed from what every source counts: one rule for the simulator,
//! the testbed and the ns-2 converter, so the same scenario gives the same kind of figure
//! wherever it ran.
//!
//! - A flow's rates are its totals · 8 over its active time `[start_s, stop_s]`
//!   ([`FlowSummary::from_totals`]).
//! - Jain's index is over the goodputs of the congestion-controlled flows (TFRC and TCP), or of
//!   all flows when there are none ([`jain_over_flows`]).
//! - Utilization is the bytes a link direction sent · 8 over its capacity × the run's duration
//!   ([`utilization`]).
//! - The bottleneck is a trace-driven direction on some flow's data path (its capacity is not
//!   one number), else the slowest direction on one, the first in direction order among equals
//!   ([`bottleneck_direction`]).

use core::time::Duration;

use crate::stats::jain_index;
use crate::{
    BottleneckSummary, FlowKind, FlowRow, FlowSummary, LinkSummary, Summary, SCHEMA_VERSION,
};

/// A flow's counts over a whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowTotals {
    /// Bytes the sender put on its first link (wire sizes).
    pub sent_bytes: u64,
    /// Bytes of data packets delivered to the destination (wire sizes, duplicates included).
    pub recv_bytes: u64,
    /// Data packets sent.
    pub sent_packets: u64,
    /// Data packets delivered.
    pub recv_packets: u64,
    /// Application payload delivered ([`crate::FlowRow::goodput_bytes`] over the run).
    pub goodput_bytes: u64,
}

impl FlowTotals {
    /// The counts of the interval from cumulative counts `before` to these (0 where a counter
    /// went back).
    pub fn since(&self, before: &FlowTotals) -> FlowTotals {
        FlowTotals {
            sent_bytes: self.sent_bytes.saturating_sub(before.sent_bytes),
            recv_bytes: self.recv_bytes.saturating_sub(before.recv_bytes),
            sent_packets: self.sent_packets.saturating_sub(before.sent_packets),
            recv_packets: self.recv_packets.saturating_sub(before.recv_packets),
            goodput_bytes: self.goodput_bytes.saturating_sub(before.goodput_bytes),
        }
    }

    /// The `flows.csv` row of these counts for an interval of `interval_secs` seconds ending
    /// at `time_s`.
    pub fn row(&self, time_s: f64, (flow, kind): (&str, FlowKind), interval_secs: f64) -> FlowRow {
        FlowRow::from_counts(
            time_s,
            (flow.to_owned(), kind),
            [self.sent_bytes, self.recv_bytes, self.goodput_bytes],
            [self.sent_packets, self.recv_packets],
            interval_secs,
        )
    }

    /// Adds one interval's counts.
    pub fn add(&mut self, other: FlowTotals) {
        self.sent_bytes += other.sent_bytes;
        self.recv_bytes += other.recv_bytes;
        self.sent_packets += other.sent_packets;
        self.recv_packets += other.recv_packets;
        self.goodput_bytes += other.goodput_bytes;
    }
}

/// Who a flow is, as `summary.json` names it.
#[derive(Debug, Clone, Copy)]
pub struct FlowIdentity<'a> {
    /// Flow name.
    pub name: &'a str,
    /// The scenario's flow kind.
    pub kind: FlowKind,
    /// Sending node.
    pub from: &'a str,
    /// Receiving node.
    pub to: &'a str,
}

impl FlowSummary {
    /// A flow's entry from its identity, its active time (`start` to `stop`, since the run's
    /// start) and its totals: rates are the totals · 8 over the active time (`None` when it is
    /// empty), the receiving ratio is packets delivered over packets sent (`None` when none
    /// were sent). What only some sources measure (mean p, mean RTT, CoV, feedbacks) starts
    /// empty.
    pub fn from_totals(
        identity: FlowIdentity<'_>,
        (start, stop): (Duration, Duration),
        totals: FlowTotals,
    ) -> FlowSummary {
        let active = stop.saturating_sub(start).as_secs_f64();
        let (start_s, stop_s) = (
            crate::duration_seconds(start),
            crate::duration_seconds(stop),
        );
        let per_second = |bytes: u64| (active > 0.0).then(|| bytes as f64 * 8.0 / active);
        FlowSummary {
            name: identity.name.to_owned(),
            kind: identity.kind,
            from: identity.from.to_owned(),
            to: identity.to.to_owned(),
            start_s,
            stop_s,
            sent_bytes: totals.sent_bytes,
            recv_bytes: totals.recv_bytes,
            sent_packets: totals.sent_packets,
            recv_packets: totals.recv_packets,
            goodput_bytes: totals.goodput_bytes,
            send_rate_bps: per_second(totals.sent_bytes),
            recv_rate_bps: per_second(totals.recv_bytes),
            goodput_bps: per_second(totals.goodput_bytes),
            receiving_ratio: (totals.sent_packets > 0)
                .then(|| totals.recv_packets as f64 / totals.sent_packets as f64),
            mean_p: None,
            mean_rtt_s: None,
            cov_sent_100ms: None,
            feedbacks: None,
            retransmissions: None,
            timeouts: None,
            delay_p50_s: None,
            delay_p95_s: None,
            delay_p99_s: None,
            frames: None,
            frames_on_time: None,
            frames_late: None,
        }
    }

    /// The one-way delay percentiles (p50, p95, p99) of `delays` (nanoseconds), `None` each
    /// when it is empty.
    pub fn with_delays(mut self, delays: &crate::Histogram) -> FlowSummary {
        let seconds =
            |fraction: f64| (delays.count() > 0).then(|| delays.percentile(fraction) as f64 / 1e9);
        self.delay_p50_s = seconds(0.50);
        self.delay_p95_s = seconds(0.95);
        self.delay_p99_s = seconds(0.99);
        self
    }
}

/// Jain's index over the goodputs of the TFRC and TCP flows, or of all flows when there are
/// none (a flow without active time counts 0).
pub fn jain_over_flows(flows: &[FlowSummary]) -> Option<f64> {
    let goodput = |flow: &FlowSummary| flow.goodput_bps.unwrap_or(0.0);
    let protocols: Vec<f64> = flows
        .iter()
        .filter(|flow| flow.kind.is_congestion_controlled())
        .map(goodput)
        .collect();
    if protocols.is_empty() {
        jain_index(&flows.iter().map(goodput).collect::<Vec<_>>())
    } else {
        jain_index(&protocols)
    }
}

/// Bytes sent · 8 / (capacity · duration); `None` for a trace-driven direction (no single
/// capacity) or a run of no duration.
pub fn utilization(
    departure_bytes: u64,
    capacity_bps: Option<u64>,
    duration_s: f64,
) -> Option<f64> {
    capacity_bps
        .filter(|&capacity| capacity > 0 && duration_s > 0.0)
        .map(|capacity| departure_bytes as f64 * 8.0 / (capacity as f64 * duration_s))
}

/// The bottleneck among the link directions on the flows' data paths, given as
/// `(direction index, capacity in b/s or None when trace-driven)`, in any order and with
/// repeats: a trace-driven one (the first by index), else the slowest (the first by index
/// among equals).
pub fn bottleneck_direction(
    on_data_paths: impl IntoIterator<Item = (usize, Option<u64>)>,
) -> Option<usize> {
    let mut directions: Vec<(usize, Option<u64>)> = on_data_paths.into_iter().collect();
    directions.sort_unstable();
    directions.dedup();
    directions
        .iter()
        .find(|(_, capacity)| capacity.is_none())
        .or_else(|| {
            directions
                .iter()
                .min_by_key(|&&(index, capacity)| (capacity, index))
        })
        .map(|&(index, _)| index)
}

/// What names a run in its summary.
#[derive(Debug, Clone)]
pub struct RunIdentity {
    /// The tool, its version and git commit ([`crate::tool`]).
    pub tool: String,
    /// Scenario (variant) name.
    pub scenario: String,
    /// The seed the run used.
    pub seed: u64,
    /// Duration, seconds.
    pub duration_s: f64,
    /// `[output] interval`, seconds.
    pub interval_s: f64,
    /// The sweep grid's `(label, value)` pairs of the run (the scenario's `variant`).
    pub parameters: Vec<(String, String)>,
}

impl Summary {
    /// Writes this summary as `directory/summary.json` ([`crate::SUMMARY_FILE`]): pretty-printed
    /// JSON and a final newline, as the simulator, the testbed and the ns-2 converter write it.
    /// An error names the file; a serialization failure writes nothing (the text is made before
    /// the file is opened).
    pub fn write(&self, directory: &std::path::Path) -> Result<(), crate::WriteError> {
        self.write_text(directory, serde_json::to_string_pretty)
    }

    /// [`Summary::write`] without indentation (the same JSON, about half the size): how
    /// `tfrc reproduce` keeps the replications whose other files it does not keep.
    pub fn write_compact(&self, directory: &std::path::Path) -> Result<(), crate::WriteError> {
        self.write_text(directory, serde_json::to_string)
    }

    /// The one place `summary.json` is written: `to_text(self)` and a newline.
    fn write_text(
        &self,
        directory: &std::path::Path,
        to_text: fn(&Summary) -> serde_json::Result<String>,
    ) -> Result<(), crate::WriteError> {
        let path = directory.join(crate::SUMMARY_FILE);
        let text = to_text(self).map_err(|error| crate::WriteError {
            path: path.clone(),
            source: std::io::Error::other(error),
        })? + "\n";
        std::fs::write(&path, text).map_err(|source| crate::WriteError { path, source })
    }

    /// A run's summary at the current schema version, Jain's index from the flows
    /// ([`jain_over_flows`]).
    pub fn new(
        run: RunIdentity,
        flows: Vec<FlowSummary>,
        bottleneck: Option<BottleneckSummary>,
        links: Vec<LinkSummary>,
    ) -> Summary {
        Summary {
            schema_version: SCHEMA_VERSION,
            tool: run.tool,
            scenario: run.scenario,
            seed: run.seed,
            duration_s: run.duration_s,
            interval_s: run.interval_s,
            jain_index: jain_over_flows(&flows),
            flows,
            bottleneck,
            links,
            parameters: run
                .parameters
                .into_iter()
                .map(|(label, value)| {
                    let typed = crate::ParameterValue::from_text(&value);
                    (label, typed)
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(kind: FlowKind, goodput_bytes: u64, (start, stop): (f64, f64)) -> FlowSummary {
        let active = (
            Duration::from_secs_f64(start),
            Duration::from_secs_f64(stop),
        );
        FlowSummary::from_totals(
            FlowIdentity {
                name: "f",
                kind,
                from: "a",
                to: "b",
            },
            active,
            FlowTotals {
                sent_bytes: 2 * goodput_bytes,
                recv_bytes: goodput_bytes + 10,
                sent_packets: 4,
                recv_packets: 3,
                goodput_bytes,
            },
        )
    }

    #[test]
    fn rates_are_totals_over_the_active_time() {
        let summary = flow(FlowKind::Tfrc, 1000, (2.0, 6.0));
        assert_eq!(summary.goodput_bps, Some(2000.0));
        assert_eq!(summary.send_rate_bps, Some(4000.0));
        assert_eq!(summary.recv_rate_bps, Some(2020.0));
        assert_eq!(summary.receiving_ratio, Some(0.75));
        let idle = flow(FlowKind::Tfrc, 1000, (6.0, 6.0));
        assert_eq!(idle.goodput_bps, None);
        assert_eq!(flow(FlowKind::Cbr, 0, (0.0, 1.0)).goodput_bps, Some(0.0));
    }

    #[test]
    fn jain_counts_protocol_flows_unless_there_are_none() {
        let mixed = [
            flow(FlowKind::Tfrc, 1000, (0.0, 1.0)),
            flow(FlowKind::Tcp, 3000, (0.0, 1.0)),
            flow(FlowKind::Cbr, 100_000, (0.0, 1.0)),
        ];
        assert!((jain_over_flows(&mixed).unwrap() - 0.8).abs() < 1e-12);
        let udp = [
            flow(FlowKind::Cbr, 1000, (0.0, 1.0)),
            flow(FlowKind::ExpOnOff, 0, (0.0, 1.0)),
        ];
        assert_eq!(jain_over_flows(&udp), Some(0.5));
    }

    #[test]
    fn the_bottleneck_is_a_trace_else_the_slowest_first() {
        assert_eq!(
            bottleneck_direction([(3, Some(10)), (1, Some(10)), (2, Some(100))]),
            Some(1)
        );
        assert_eq!(
            bottleneck_direction([(0, Some(1)), (4, None), (2, None)]),
            Some(2)
        );
        assert_eq!(bottleneck_direction([]), None);
        assert_eq!(utilization(125, Some(1000), 1.0), Some(1.0));
        assert_eq!(utilization(125, None, 1.0), None);
        assert_eq!(utilization(125, Some(1000), 0.0), None);
    }
}
