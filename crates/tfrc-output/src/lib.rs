//! The output schema of every TFRC run, defined once (`docs/output-format.md`).
//!
//! A run directory holds `flows.csv`, `state.csv`, `links.csv` and `summary.json`. The
//! simulator writes them, and so do the testbed and the ns-2 converter; `tfrc-analysis` reads
//! them. This crate owns what they share: the row types ([`FlowRow`], [`StateRow`],
//! [`LinkRow`]) with their headers and how each cell is written, the [`Summary`] types, the
//! schema version, and the statistics ([`stats`]: mean, standard deviation, quantiles, CoV,
//! Jain's index) that summaries and metrics compute.
//!
//! Each row type writes itself ([`CsvRow::write_csv`]) with a fixed number of decimals per
//! column, and [`CsvRow::into_written`] gives the row a reader would parse back from that text,
//! bit for bit. A run kept in memory (`tfrc reproduce` keeps most replications that way) is
//! therefore the same run as its files read back.
//!
//! The three CSV files may also be stored gzip-compressed, as `flows.csv.gz` and so on
//! ([`compress_row_files`]; `tfrc reproduce` stores its runs that way): [`open_row_file`] reads
//! either form, so every reader goes through it.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

#[cfg(feature = "arrow")]
pub mod arrow;
mod cell;
pub mod external;
mod histogram;
mod kind;
pub mod stats;
mod summary;
mod writer;

pub use cell::{duration_seconds, format_seconds, format_time_nanos, round_decimals, CsvLine};
pub use histogram::Histogram;
pub use kind::FlowKind;
pub use stats::{coefficient_of_variation, jain_index};
pub use summary::{
    bottleneck_direction, jain_over_flows, utilization, FlowIdentity, FlowTotals, RunIdentity,
};
pub use writer::{
    compress_row_files, header, open_row_file, CsvRow, RowFile, RunWriter, WriteError,
};

/// Version of the output schema, written in `summary.json`. A reader refuses any other
/// version: a change of version means a column was renamed or removed, or changed meaning (a
/// column added at the end keeps the version; readers match columns by name).
///
/// Version 2: `goodput_bps` is the application payload delivered (in order for TCP, distinct
/// packets for TFRC), where version 1 counted every data packet that arrived, headers and
/// duplicates included; that figure is now `recv_rate_bps`, and `flows.csv` gained
/// `goodput_bytes` and `goodput_kbps`.
pub const SCHEMA_VERSION: u32 = 2;

/// Per flow per interval.
pub const FLOWS_FILE: &str = "flows.csv";
/// Sampled protocol state.
pub const STATE_FILE: &str = "state.csv";
/// Per link direction per interval.
pub const LINKS_FILE: &str = "links.csv";
/// One object per run.
pub const SUMMARY_FILE: &str = "summary.json";
/// What a gzip-compressed CSV file's name adds to the plain name (`flows.csv.gz`).
pub const COMPRESSED_SUFFIX: &str = ".gz";

/// One row of `flows.csv`: bytes and packets of one flow in one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowRow {
    /// End of the interval (s since the start of the run).
    pub time_s: f64,
    /// Flow name.
    pub flow: String,
    /// The scenario's flow kind.
    pub kind: FlowKind,
    /// Bytes the sender put on its first link in the interval.
    pub sent_bytes: u64,
    /// Bytes of data packets that reached the destination in the interval (wire sizes,
    /// duplicates included).
    pub recv_bytes: u64,
    /// Data packets sent in the interval.
    pub sent_packets: u64,
    /// Data packets that reached the destination in the interval.
    pub recv_packets: u64,
    /// Sending rate over the interval (kb/s).
    pub send_kbps: f64,
    /// Receiving rate over the interval (kb/s).
    pub recv_kbps: f64,
    /// Application payload delivered in the interval: what a TCP sink handed up in order;
    /// the payload of distinct TFRC packets (headers excluded); a CBR or on/off packet whole
    /// (the simulator models no header under them).
    pub goodput_bytes: u64,
    /// Goodput over the interval (kb/s).
    pub goodput_kbps: f64,
}

/// Decimals of the kb/s columns of `flows.csv` (1 b/s).
const KBPS_DECIMALS: usize = 3;

impl FlowRow {
    /// A row for one interval of `interval_secs` seconds from its byte and packet counts
    /// (`[sent_bytes, recv_bytes, goodput_bytes]`, `[sent_packets, recv_packets]`); the rates
    /// are the counts over the interval.
    pub fn from_counts(
        time_s: f64,
        (flow, kind): (String, FlowKind),
        [sent_bytes, recv_bytes, goodput_bytes]: [u64; 3],
        [sent_packets, recv_packets]: [u64; 2],
        interval_secs: f64,
    ) -> FlowRow {
        let kbps = |bytes: u64| bytes as f64 * 8.0 / interval_secs / 1000.0;
        FlowRow {
            time_s,
            flow,
            kind,
            sent_bytes,
            recv_bytes,
            sent_packets,
            recv_packets,
            send_kbps: kbps(sent_bytes),
            recv_kbps: kbps(recv_bytes),
            goodput_bytes,
            goodput_kbps: kbps(goodput_bytes),
        }
    }
}

impl CsvRow for FlowRow {
    const FILE: RowFile = RowFile::Flows;
    /// Writes the row as one CSV line.
    fn write_csv(&self, line: &mut CsvLine) {
        line.seconds(self.time_s);
        line.text(&self.flow);
        line.text(self.kind.name());
        line.integer(self.sent_bytes);
        line.integer(self.recv_bytes);
        line.integer(self.sent_packets);
        line.integer(self.recv_packets);
        line.fixed(Some(self.send_kbps), KBPS_DECIMALS);
        line.fixed(Some(self.recv_kbps), KBPS_DECIMALS);
        line.integer(self.goodput_bytes);
        line.fixed(Some(self.goodput_kbps), KBPS_DECIMALS);
    }

    /// The row a reader parses back from the text `write_csv` writes.
    fn into_written(mut self) -> Self {
        self.time_s = cell::round_seconds(self.time_s);
        self.send_kbps = round_decimals(self.send_kbps, KBPS_DECIMALS).unwrap_or(f64::NAN);
        self.recv_kbps = round_decimals(self.recv_kbps, KBPS_DECIMALS).unwrap_or(f64::NAN);
        self.goodput_kbps = round_decimals(self.goodput_kbps, KBPS_DECIMALS).unwrap_or(f64::NAN);
        self
    }

    fn rows_of(rows: &mut Rows) -> &mut Vec<Self> {
        &mut rows.flows
    }
}

/// One row of `state.csv`: sampled protocol state of a TFRC or TCP flow. Empty cells are `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateRow {
    /// Sample time (s).
    pub time_s: f64,
    /// Flow name.
    pub flow: String,
    /// The flow's kind (TFRC or TCP: the flows with a protocol state).
    pub kind: FlowKind,
    /// TFRC allowed sending rate X (b/s).
    pub x_bps: Option<f64>,
    /// TFRC: last X_recv the sender received (b/s).
    pub x_recv_bps: Option<f64>,
    /// TFRC: last loss event rate the sender received.
    pub p: Option<f64>,
    /// TFRC: the sender's RTT estimate R; TCP: the latest RTT sample (s).
    pub rtt_s: Option<f64>,
    /// Retransmission / no-feedback timeout (s).
    pub rto_s: Option<f64>,
    /// gTFRC target rate g (b/s).
    pub target_bps: Option<f64>,
    /// Feedbacks per RTT the receiver uses.
    pub feedbacks_per_rtt: Option<f64>,
    /// Veno backlog N (packets).
    pub veno_n: Option<f64>,
    /// TCP congestion window (packets).
    pub cwnd: Option<f64>,
    /// TCP slow-start threshold (packets).
    pub ssthresh: Option<f64>,
    /// TCP smoothed RTT (s).
    pub srtt_s: Option<f64>,
}

/// Decimals of rates in b/s (0.1 b/s).
const BPS_DECIMALS: usize = 1;
/// Decimals of times in s (1 µs).
const SECONDS_DECIMALS: usize = 6;
/// Decimals of packet counts that are not integers (Veno's N, cwnd).
const PACKETS_DECIMALS: usize = 3;

impl StateRow {
    /// A row with every state cell empty.
    pub fn empty(time_s: f64, flow: &str, kind: FlowKind) -> StateRow {
        StateRow {
            time_s,
            flow: flow.to_owned(),
            kind,
            x_bps: None,
            x_recv_bps: None,
            p: None,
            rtt_s: None,
            rto_s: None,
            target_bps: None,
            feedbacks_per_rtt: None,
            veno_n: None,
            cwnd: None,
            ssthresh: None,
            srtt_s: None,
        }
    }
}

impl CsvRow for StateRow {
    const FILE: RowFile = RowFile::State;
    /// Writes the row as one CSV line (`p`, the feedback count and ssthresh in the shortest
    /// form that reads back exactly; the others with fixed decimals).
    fn write_csv(&self, line: &mut CsvLine) {
        line.seconds(self.time_s);
        line.text(&self.flow);
        line.text(self.kind.name());
        line.fixed(self.x_bps, BPS_DECIMALS);
        line.fixed(self.x_recv_bps, BPS_DECIMALS);
        line.shortest(self.p);
        line.fixed(self.rtt_s, SECONDS_DECIMALS);
        line.fixed(self.rto_s, SECONDS_DECIMALS);
        line.fixed(self.target_bps, BPS_DECIMALS);
        line.shortest(self.feedbacks_per_rtt);
        line.fixed(self.veno_n, PACKETS_DECIMALS);
        line.fixed(self.cwnd, PACKETS_DECIMALS);
        line.shortest(self.ssthresh);
        line.fixed(self.srtt_s, SECONDS_DECIMALS);
    }

    /// The row a reader parses back from the text `write_csv` writes.
    fn into_written(mut self) -> Self {
        let fixed = |value: Option<f64>, decimals| value.and_then(|v| round_decimals(v, decimals));
        let finite = |value: Option<f64>| value.filter(|v| v.is_finite());
        self.time_s = cell::round_seconds(self.time_s);
        self.x_bps = fixed(self.x_bps, BPS_DECIMALS);
        self.x_recv_bps = fixed(self.x_recv_bps, BPS_DECIMALS);
        self.p = finite(self.p);
        self.rtt_s = fixed(self.rtt_s, SECONDS_DECIMALS);
        self.rto_s = fixed(self.rto_s, SECONDS_DECIMALS);
        self.target_bps = fixed(self.target_bps, BPS_DECIMALS);
        self.feedbacks_per_rtt = finite(self.feedbacks_per_rtt);
        self.veno_n = fixed(self.veno_n, PACKETS_DECIMALS);
        self.cwnd = fixed(self.cwnd, PACKETS_DECIMALS);
        self.ssthresh = finite(self.ssthresh);
        self.srtt_s = fixed(self.srtt_s, SECONDS_DECIMALS);
        self
    }

    fn rows_of(rows: &mut Rows) -> &mut Vec<Self> {
        &mut rows.states
    }
}

/// One row of `links.csv`: one link direction in one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkRow {
    /// End of the interval (s).
    pub time_s: f64,
    /// Upstream node.
    pub from: String,
    /// Downstream node.
    pub to: String,
    /// Packets waiting at the end of the interval.
    pub queue_packets: u64,
    /// Bytes waiting at the end of the interval.
    pub queue_bytes: u64,
    /// RED/RIO average queue (packets); `None` for DropTail.
    pub average_queue: Option<f64>,
    /// Packets offered.
    pub arrivals: u64,
    /// Packets that finished transmission.
    pub departures: u64,
    /// Bytes that finished transmission.
    pub departure_bytes: u64,
    /// `departure_bytes · 8 / (capacity · interval)`; `None` for trace-driven links.
    pub utilization: Option<f64>,
    /// All drops.
    pub drops: u64,
    /// Drops of packets no marker selected. This and the colour and loss-model counts below
    /// are `None` when the source cannot tell them apart (ns-2's converter).
    pub drops_unmarked: Option<u64>,
    /// Drops of in-profile packets.
    pub drops_in: Option<u64>,
    /// Drops of out-of-profile packets.
    pub drops_out: Option<u64>,
    /// Drops by the loss model (included in `drops`).
    pub drops_loss_model: Option<u64>,
    /// Packets marked in profile.
    pub marked_in: Option<u64>,
    /// Packets marked out of profile.
    pub marked_out: Option<u64>,
    /// ECN-capable packets a RED or RIO queue with `ecn = true` marked Congestion Experienced
    /// instead of dropping (RFC 3168); not counted in `drops`. `None` where the source cannot
    /// tell (ns-2's converter; files written before the column existed).
    pub ecn_marks: Option<u64>,
}

/// Decimals of `average_queue` (packets).
const AVERAGE_QUEUE_DECIMALS: usize = 3;
/// Decimals of `utilization` (a fraction).
const UTILIZATION_DECIMALS: usize = 4;

impl CsvRow for LinkRow {
    const FILE: RowFile = RowFile::Links;
    /// Writes the row as one CSV line.
    fn write_csv(&self, line: &mut CsvLine) {
        line.seconds(self.time_s);
        line.text(&self.from);
        line.text(&self.to);
        line.integer(self.queue_packets);
        line.integer(self.queue_bytes);
        line.fixed(self.average_queue, AVERAGE_QUEUE_DECIMALS);
        line.integer(self.arrivals);
        line.integer(self.departures);
        line.integer(self.departure_bytes);
        line.fixed(self.utilization, UTILIZATION_DECIMALS);
        line.integer(self.drops);
        for count in [
            self.drops_unmarked,
            self.drops_in,
            self.drops_out,
            self.drops_loss_model,
            self.marked_in,
            self.marked_out,
            self.ecn_marks,
        ] {
            line.optional_integer(count);
        }
    }

    /// The row a reader parses back from the text `write_csv` writes.
    fn into_written(mut self) -> Self {
        self.time_s = cell::round_seconds(self.time_s);
        self.average_queue = self
            .average_queue
            .and_then(|v| round_decimals(v, AVERAGE_QUEUE_DECIMALS));
        self.utilization = self
            .utilization
            .and_then(|v| round_decimals(v, UTILIZATION_DECIMALS));
        self
    }

    fn rows_of(rows: &mut Rows) -> &mut Vec<Self> {
        &mut rows.links
    }
}

/// The rows of one run's three CSV files, in file order: a run kept in memory instead of (or
/// as well as) written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rows {
    /// `flows.csv`.
    pub flows: Vec<FlowRow>,
    /// `state.csv`.
    pub states: Vec<StateRow>,
    /// `links.csv`.
    pub links: Vec<LinkRow>,
}

/// The program writing run files, set once per process by [`set_tool`].
static TOOL: OnceLock<String> = OnceLock::new();

/// Names the program that writes this process's run files (`summary.json`'s `tool`), with its
/// version and git commit, e.g. `tfrc 0.1.0 (git 1a2b3c4d5e6f)`, so a run records what made it.
/// The first call wins; the `tfrc` binary makes it at start (its build script knows the commit,
/// which a library crate does not).
pub fn set_tool(name: impl Into<String>) {
    let _ = TOOL.set(name.into());
}

/// The program writing run files: what [`set_tool`] set, else `tfrc` and this crate's version.
#[must_use]
pub fn tool() -> String {
    TOOL.get()
        .cloned()
        .unwrap_or_else(|| format!("tfrc {}", env!("CARGO_PKG_VERSION")))
}

/// `summary.json`: one object per run. The simulator writes it, `tfrc-analysis` reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Output schema version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The tool, its version and git commit ([`tool`]), e.g. `tfrc 0.1.0 (git 1a2b3c4d5e6f)`.
    pub tool: String,
    /// Scenario (variant) name.
    pub scenario: String,
    /// The seed the run used.
    pub seed: u64,
    /// Simulated duration, seconds.
    pub duration_s: f64,
    /// `[output] interval`, seconds.
    pub interval_s: f64,
    /// One entry per flow, in scenario order.
    pub flows: Vec<FlowSummary>,
    /// Jain's index over the goodputs of the TFRC and TCP flows (all flows if there are none).
    pub jain_index: Option<f64>,
    /// The bottleneck link direction.
    pub bottleneck: Option<BottleneckSummary>,
    /// Every link direction over the whole run (absent in files written before it existed).
    #[serde(default)]
    pub links: Vec<LinkSummary>,
    /// The sweep grid's parameters of this run, label → value as the scenario's `[sweep]` gives
    /// it (a number when the text reads as one, else the text). Absent outside a sweep, and in
    /// files written before it existed.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub parameters: std::collections::BTreeMap<String, ParameterValue>,
}

/// One sweep grid value in `summary.json`'s `parameters`: a number when its text reads as one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParameterValue {
    /// `4`.
    Integer(i64),
    /// `0.01`.
    Number(f64),
    /// `"1Mbps"`, `"rfc5348"`.
    Text(String),
}

impl ParameterValue {
    /// The value of a grid text: an integer, else a finite number, else the text.
    pub fn from_text(text: &str) -> ParameterValue {
        if let Ok(integer) = text.parse::<i64>() {
            return ParameterValue::Integer(integer);
        }
        match text.parse::<f64>() {
            Ok(number) if number.is_finite() => ParameterValue::Number(number),
            _ => ParameterValue::Text(text.to_owned()),
        }
    }
}

/// Per-flow figures of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowSummary {
    /// Flow name.
    pub name: String,
    /// Flow kind.
    pub kind: FlowKind,
    /// Sending node.
    pub from: String,
    /// Receiving node.
    pub to: String,
    /// Start time, seconds.
    pub start_s: f64,
    /// Stop time (the run's end if none), seconds.
    pub stop_s: f64,
    /// Bytes sent (wire size).
    pub sent_bytes: u64,
    /// Bytes of data packets delivered to the destination (wire sizes, duplicates included).
    pub recv_bytes: u64,
    /// Data packets sent.
    pub sent_packets: u64,
    /// Data packets delivered.
    pub recv_packets: u64,
    /// Application payload delivered ([`FlowRow::goodput_bytes`] over the run).
    pub goodput_bytes: u64,
    /// `sent_bytes · 8 / active time` (`None` for a flow with no active time).
    pub send_rate_bps: Option<f64>,
    /// `recv_bytes · 8 / active time`: the receiving rate, headers and duplicates included
    /// (`None` for a flow with no active time).
    pub recv_rate_bps: Option<f64>,
    /// `goodput_bytes · 8 / active time` (`None` for a flow with no active time).
    pub goodput_bps: Option<f64>,
    /// `recv_packets / sent_packets`.
    pub receiving_ratio: Option<f64>,
    /// TFRC: mean reported p over the state samples of the active time.
    pub mean_p: Option<f64>,
    /// Mean RTT over the state samples that have one, seconds.
    pub mean_rtt_s: Option<f64>,
    /// Std / mean of packets sent per 0.1 s bin over the active time.
    pub cov_sent_100ms: Option<f64>,
    /// TFRC: feedback packets the receiver sent (absent in files written before it existed,
    /// and where the source does not count them).
    #[serde(default)]
    pub feedbacks: Option<u64>,
    /// TCP: segments the sender retransmitted (ns-2's `nrexmitpack_`); absent for other kinds
    /// and where the source does not count them (files written before the field existed).
    #[serde(default)]
    pub retransmissions: Option<u64>,
    /// TCP: retransmission timeouts the sender took (ns-2's `nrexmit_`); absent as
    /// `retransmissions` is.
    #[serde(default)]
    pub timeouts: Option<u64>,
    /// Median one-way delay of the flow's data packets that reached the receiver, from leaving
    /// the sender to arriving (queueing, serialization and propagation), seconds; about 3 %
    /// resolution ([`Histogram`]). Absent where the source does not measure it (ns-2 runs,
    /// the testbed, files written before the field existed).
    #[serde(default)]
    pub delay_p50_s: Option<f64>,
    /// 95th percentile of that one-way delay, seconds.
    #[serde(default)]
    pub delay_p95_s: Option<f64>,
    /// 99th percentile of that one-way delay, seconds.
    #[serde(default)]
    pub delay_p99_s: Option<f64>,
    /// Media flows: frames the source captured (RFC 8867 §4.3's codec; absent for other flows
    /// and in files written before the field existed).
    #[serde(default)]
    pub frames: Option<u64>,
    /// Media flows: frames whose every packet reached the receiver within the playout deadline
    /// of their capture. `frames − frames_on_time` missed their deadline (lost, late, or not
    /// sent in time).
    #[serde(default)]
    pub frames_on_time: Option<u64>,
    /// Media flows: frames that arrived whole, but after their deadline.
    #[serde(default)]
    pub frames_late: Option<u64>,
}

impl FlowSummary {
    /// TFRC: feedbacks per RTT as sent, `feedbacks · mean_rtt_s / (stop_s − start_s)`: what a
    /// nominal count (a fixed `feedbacks_per_rtt`, or the `rtt_ref` rule, whose count follows
    /// the RTT with its queueing delay) gave in the run.
    pub fn feedbacks_per_rtt(&self) -> Option<f64> {
        let active = self.stop_s - self.start_s;
        match (self.feedbacks, self.mean_rtt_s) {
            (Some(count), Some(rtt)) if active > 0.0 => Some(count as f64 * rtt / active),
            _ => None,
        }
    }
}

/// The bottleneck of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BottleneckSummary {
    /// Link direction source node.
    pub from: String,
    /// Link direction destination node.
    pub to: String,
    /// Capacity in bits/s (`None` for a trace-driven direction).
    pub capacity_bps: Option<f64>,
    /// Bytes transmitted · 8 / (capacity · duration).
    pub utilization: Option<f64>,
}

/// One link direction over a whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkSummary {
    /// Source node.
    pub from: String,
    /// Destination node.
    pub to: String,
    /// Bytes transmitted · 8 / (capacity · duration); `None` for trace-driven directions.
    pub utilization: Option<f64>,
    /// Packets dropped.
    pub drops: u64,
    /// Packets transmitted.
    pub departures: u64,
}

#[cfg(test)]
mod tests;
