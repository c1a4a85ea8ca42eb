//! What a run records: the per-interval rows of `flows.csv`, `state.csv` and `links.csv`, and
//! the per-run `summary.json` (schema in `docs/output-format.md`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tfrc_proto::Instant;

use crate::link::{DropReason, LinkCounters, LinkSample};
use crate::packet::Color;

use super::SimulationError;

/// Version of the output schema, written in `summary.json`.
pub const SCHEMA_VERSION: u32 = 1;

/// Width of the bins of the CoV of packets sent (paper 003: 0.1 s).
pub const COV_BIN: core::time::Duration = core::time::Duration::from_millis(100);

/// Header of `flows.csv`.
pub const FLOWS_HEADER: &str =
    "time_s,flow,kind,sent_bytes,recv_bytes,sent_packets,recv_packets,send_kbps,recv_kbps";
/// Header of `state.csv`.
pub const STATE_HEADER: &str = "time_s,flow,kind,x_bps,x_recv_bps,p,rtt_s,rto_s,target_bps,feedbacks_per_rtt,veno_n,cwnd,ssthresh,srtt_s";
/// Header of `links.csv`.
pub const LINKS_HEADER: &str = "time_s,from,to,queue_packets,queue_bytes,average_queue,arrivals,departures,departure_bytes,utilization,drops,drops_unmarked,drops_in,drops_out,drops_loss_model,marked_in,marked_out";

/// Seconds since the start of the run, written exactly (no binary floating-point noise).
pub fn format_time(at: Instant) -> String {
    Time(at).to_string()
}

/// [`format_time`] written straight into a formatter (no allocation per CSV cell).
struct Time(Instant);

impl std::fmt::Display for Time {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nanos = self.0.as_nanos();
        let seconds = nanos / 1_000_000_000;
        let mut fraction = nanos % 1_000_000_000;
        if fraction == 0 {
            return write!(f, "{seconds}");
        }
        let mut width = 9;
        while fraction.is_multiple_of(10) {
            fraction /= 10;
            width -= 1;
        }
        write!(f, "{seconds}.{fraction:0width$}")
    }
}

/// Packets and bytes sent and received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub sent_bytes: u64,
    pub sent_packets: u64,
    pub recv_bytes: u64,
    pub recv_packets: u64,
}

/// Everything recorded about one flow.
#[derive(Debug, Clone)]
pub(crate) struct FlowRecord {
    pub name: String,
    pub kind: &'static str,
    pub from: String,
    pub to: String,
    pub start: Instant,
    pub stop: Instant,
    pub is_protocol: bool,
    pub interval: Counts,
    pub total: Counts,
    /// Packets sent per [`COV_BIN`] over `[start, stop)`.
    pub sent_bins: Vec<u32>,
    pub p_sum: f64,
    pub p_samples: u64,
    pub rtt_sum: f64,
    pub rtt_samples: u64,
}

impl FlowRecord {
    pub fn new(
        name: String,
        kind: &'static str,
        (from, to): (String, String),
        (start, stop): (Instant, Instant),
        is_protocol: bool,
    ) -> FlowRecord {
        let active = stop.saturating_duration_since(start);
        let bins = active.as_nanos().div_ceil(COV_BIN.as_nanos()) as usize;
        FlowRecord {
            name,
            kind,
            from,
            to,
            start,
            stop,
            is_protocol,
            interval: Counts::default(),
            total: Counts::default(),
            sent_bins: vec![0; bins],
            p_sum: 0.0,
            p_samples: 0,
            rtt_sum: 0.0,
            rtt_samples: 0,
        }
    }

    pub fn record_sent(&mut self, now: Instant, bytes: u32) {
        self.interval.sent_bytes += u64::from(bytes);
        self.interval.sent_packets += 1;
        self.total.sent_bytes += u64::from(bytes);
        self.total.sent_packets += 1;
        if now >= self.start {
            let bin = (now.saturating_duration_since(self.start).as_nanos() / COV_BIN.as_nanos())
                as usize;
            if let Some(count) = self.sent_bins.get_mut(bin) {
                *count += 1;
            }
        }
    }

    pub fn record_received(&mut self, bytes: u32) {
        self.interval.recv_bytes += u64::from(bytes);
        self.interval.recv_packets += 1;
        self.total.recv_bytes += u64::from(bytes);
        self.total.recv_packets += 1;
    }
}

/// One row of `state.csv`; `None` is an empty cell.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StateRow {
    /// X after the gTFRC floor, bits/s.
    pub x_bps: Option<f64>,
    /// Last X_recv, bits/s.
    pub x_recv_bps: Option<f64>,
    /// Last loss event rate.
    pub p: Option<f64>,
    /// RTT estimate (TFRC) or latest sample (TCP), seconds.
    pub rtt_s: Option<f64>,
    /// t_RTO (TFRC) or retransmission timeout (TCP), seconds.
    pub rto_s: Option<f64>,
    /// gTFRC target, bits/s.
    pub target_bps: Option<f64>,
    /// N_fb of the receiver.
    pub feedbacks_per_rtt: Option<u32>,
    /// Veno backlog N, packets.
    pub veno_n: Option<f64>,
    /// TCP congestion window, packets.
    pub cwnd: Option<f64>,
    /// TCP slow-start threshold, packets.
    pub ssthresh: Option<u32>,
    /// TCP smoothed RTT, seconds.
    pub srtt_s: Option<f64>,
}

/// An optional CSV cell: the value, or nothing.
struct Cell<T>(Option<T>);

impl<T: std::fmt::Display> std::fmt::Display for Cell<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(value) => value.fmt(f),
            None => Ok(()),
        }
    }
}

fn cell<T: std::fmt::Display>(value: Option<T>) -> Cell<T> {
    Cell(value)
}

/// A finite value with `decimals` decimals, or an empty cell.
struct Rounded(Option<f64>, usize);

impl std::fmt::Display for Rounded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.filter(|value| value.is_finite()) {
            Some(value) => write!(f, "{value:.*}", self.1),
            None => Ok(()),
        }
    }
}

fn rounded(value: Option<f64>, decimals: usize) -> Rounded {
    Rounded(value, decimals)
}

/// The three CSV files of a run.
pub(crate) struct CsvFiles {
    flows: BufWriter<File>,
    state: BufWriter<File>,
    links: BufWriter<File>,
    directory: PathBuf,
}

fn create(directory: &Path, name: &str, header: &str) -> Result<BufWriter<File>, SimulationError> {
    let path = directory.join(name);
    let file = File::create(&path).map_err(|source| SimulationError::Io {
        path: path.clone(),
        source,
    })?;
    let mut writer = BufWriter::with_capacity(1 << 16, file);
    writeln!(writer, "{header}").map_err(|source| SimulationError::Io { path, source })?;
    Ok(writer)
}

impl CsvFiles {
    pub fn create(directory: &Path) -> Result<CsvFiles, SimulationError> {
        std::fs::create_dir_all(directory).map_err(|source| SimulationError::Io {
            path: directory.to_path_buf(),
            source,
        })?;
        Ok(CsvFiles {
            flows: create(directory, "flows.csv", FLOWS_HEADER)?,
            state: create(directory, "state.csv", STATE_HEADER)?,
            links: create(directory, "links.csv", LINKS_HEADER)?,
            directory: directory.to_path_buf(),
        })
    }

    fn io_error(&self, file: &str, source: std::io::Error) -> SimulationError {
        SimulationError::Io {
            path: self.directory.join(file),
            source,
        }
    }

    pub fn flow_row(
        &mut self,
        at: Instant,
        record: &FlowRecord,
        interval_secs: f64,
    ) -> Result<(), SimulationError> {
        let counts = record.interval;
        let kbps = |bytes: u64| bytes as f64 * 8.0 / interval_secs / 1000.0;
        writeln!(
            self.flows,
            "{},{},{},{},{},{},{},{:.3},{:.3}",
            Time(at),
            record.name,
            record.kind,
            counts.sent_bytes,
            counts.recv_bytes,
            counts.sent_packets,
            counts.recv_packets,
            kbps(counts.sent_bytes),
            kbps(counts.recv_bytes),
        )
        .map_err(|error| self.io_error("flows.csv", error))
    }

    pub fn state_row(
        &mut self,
        at: Instant,
        record: &FlowRecord,
        row: &StateRow,
    ) -> Result<(), SimulationError> {
        writeln!(
            self.state,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            Time(at),
            record.name,
            record.kind,
            rounded(row.x_bps, 1),
            rounded(row.x_recv_bps, 1),
            cell(row.p.filter(|p| p.is_finite())),
            rounded(row.rtt_s, 6),
            rounded(row.rto_s, 6),
            rounded(row.target_bps, 1),
            cell(row.feedbacks_per_rtt),
            rounded(row.veno_n, 3),
            rounded(row.cwnd, 3),
            cell(row.ssthresh),
            rounded(row.srtt_s, 6),
        )
        .map_err(|error| self.io_error("state.csv", error))
    }

    #[allow(clippy::too_many_arguments)]
    pub fn link_row(
        &mut self,
        at: Instant,
        (from, to): (&str, &str),
        sample: &LinkSample,
        previous: &LinkCounters,
        capacity_bps: Option<u64>,
        interval_secs: f64,
    ) -> Result<(), SimulationError> {
        let now = &sample.counters;
        let delta = |current: u64, before: u64| current.saturating_sub(before);
        let departure_bytes = delta(now.departure_bytes, previous.departure_bytes);
        let utilization = capacity_bps
            .map(|capacity| departure_bytes as f64 * 8.0 / (capacity as f64 * interval_secs));
        let colour_drops =
            |color: Color| delta(now.drops_by_color(color), previous.drops_by_color(color));
        writeln!(
            self.links,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            Time(at),
            from,
            to,
            sample.queue_packets,
            sample.queue_bytes,
            rounded(sample.average_queue, 3),
            delta(now.arrivals, previous.arrivals),
            delta(now.departures, previous.departures),
            departure_bytes,
            rounded(utilization, 4),
            delta(now.total_drops(), previous.total_drops()),
            colour_drops(Color::Unmarked),
            colour_drops(Color::In),
            colour_drops(Color::Out),
            delta(
                now.drops_by_reason(DropReason::LossModel),
                previous.drops_by_reason(DropReason::LossModel)
            ),
            delta(now.marked_in, previous.marked_in),
            delta(now.marked_out, previous.marked_out),
        )
        .map_err(|error| self.io_error("links.csv", error))
    }

    pub fn finish(mut self) -> Result<(), SimulationError> {
        for (name, writer) in [
            ("flows.csv", &mut self.flows),
            ("state.csv", &mut self.state),
            ("links.csv", &mut self.links),
        ] {
            writer.flush().map_err(|source| SimulationError::Io {
                path: self.directory.join(name),
                source,
            })?;
        }
        Ok(())
    }
}

/// `summary.json`: one object per run (see `docs/output-format.md`). These types are the one
/// definition of the file's schema: the simulator writes them, `tfrc-analysis` reads them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Output schema version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The tool and its version, e.g. `tfrc 0.1.0`.
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
}

/// Per-flow figures of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowSummary {
    /// Flow name.
    pub name: String,
    /// Flow kind (`tfrc`, `tcp`, `cbr`, `pareto`, `exp-onoff`).
    pub kind: String,
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
    /// Bytes of data packets delivered to the destination.
    pub recv_bytes: u64,
    /// Data packets sent.
    pub sent_packets: u64,
    /// Data packets delivered.
    pub recv_packets: u64,
    /// `sent_bytes · 8 / active time` (`None` for a flow with no active time).
    pub send_rate_bps: Option<f64>,
    /// `recv_bytes · 8 / active time` (`None` for a flow with no active time).
    pub goodput_bps: Option<f64>,
    /// `recv_packets / sent_packets`.
    pub receiving_ratio: Option<f64>,
    /// TFRC: mean reported p over the state samples of the active time.
    pub mean_p: Option<f64>,
    /// Mean RTT over the state samples that have one, seconds.
    pub mean_rtt_s: Option<f64>,
    /// Std / mean of packets sent per 0.1 s bin over the active time.
    pub cov_sent_100ms: Option<f64>,
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

/// Jain's fairness index `(Σx)² / (n·Σx²)`; `None` for no values or all zeros.
pub fn jain_index(values: &[f64]) -> Option<f64> {
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|value| value * value).sum();
    (!values.is_empty() && squares > 0.0).then(|| sum * sum / (values.len() as f64 * squares))
}

/// Coefficient of variation (population standard deviation / mean); `None` if the mean is 0.
pub fn coefficient_of_variation(values: &[u32]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let count = values.len() as f64;
    let mean = values.iter().map(|&value| f64::from(value)).sum::<f64>() / count;
    if mean <= 0.0 {
        return None;
    }
    let variance = values
        .iter()
        .map(|&value| (f64::from(value) - mean).powi(2))
        .sum::<f64>()
        / count;
    Some(variance.sqrt() / mean)
}

impl FlowRecord {
    pub fn summary(&self) -> FlowSummary {
        let active = self
            .stop
            .saturating_duration_since(self.start)
            .as_secs_f64();
        let per_second = |bytes: u64| (active > 0.0).then(|| bytes as f64 * 8.0 / active);
        FlowSummary {
            name: self.name.clone(),
            kind: self.kind.to_owned(),
            from: self.from.clone(),
            to: self.to.clone(),
            start_s: self.start.as_secs_f64(),
            stop_s: self.stop.as_secs_f64(),
            sent_bytes: self.total.sent_bytes,
            recv_bytes: self.total.recv_bytes,
            sent_packets: self.total.sent_packets,
            recv_packets: self.total.recv_packets,
            send_rate_bps: per_second(self.total.sent_bytes),
            goodput_bps: per_second(self.total.recv_bytes),
            receiving_ratio: (self.total.sent_packets > 0)
                .then(|| self.total.recv_packets as f64 / self.total.sent_packets as f64),
            mean_p: (self.p_samples > 0).then(|| self.p_sum / self.p_samples as f64),
            mean_rtt_s: (self.rtt_samples > 0).then(|| self.rtt_sum / self.rtt_samples as f64),
            cov_sent_100ms: coefficient_of_variation(&self.sent_bins),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_exactly() {
        assert_eq!(format_time(Instant::ZERO), "0");
        assert_eq!(format_time(Instant::from_secs(12)), "12");
        assert_eq!(format_time(Instant::from_millis(12_500)), "12.5");
        assert_eq!(format_time(Instant::from_millis(300)), "0.3");
        assert_eq!(format_time(Instant::from_nanos(1)), "0.000000001");
    }

    #[test]
    fn jain_index_of_equal_and_unequal_shares() {
        assert_eq!(jain_index(&[1.0, 1.0, 1.0, 1.0]), Some(1.0));
        // One flow takes everything: 1/n.
        assert_eq!(jain_index(&[4.0, 0.0, 0.0, 0.0]), Some(0.25));
        // (1 + 3)^2 / (2 · (1 + 9)) = 16 / 20.
        assert!((jain_index(&[1.0, 3.0]).unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(jain_index(&[]), None);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
    }

    #[test]
    fn coefficient_of_variation_is_population_std_over_mean() {
        assert_eq!(coefficient_of_variation(&[5, 5, 5]), Some(0.0));
        // mean 2, deviations ±2 → std 2 → CoV 1.
        assert!((coefficient_of_variation(&[0, 4]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(coefficient_of_variation(&[0, 0]), None);
        assert_eq!(coefficient_of_variation(&[]), None);
    }

    #[test]
    fn packets_fall_into_tenth_of_second_bins() {
        let mut record = FlowRecord::new(
            "a".into(),
            "cbr",
            ("s".into(), "r".into()),
            (Instant::from_secs(1), Instant::from_millis(1_300)),
            false,
        );
        assert_eq!(record.sent_bins.len(), 3);
        record.record_sent(Instant::from_millis(1_000), 100);
        record.record_sent(Instant::from_millis(1_099), 100);
        record.record_sent(Instant::from_millis(1_250), 100);
        assert_eq!(record.sent_bins, [2, 0, 1]);
        assert_eq!(record.total.sent_bytes, 300);
    }
}
