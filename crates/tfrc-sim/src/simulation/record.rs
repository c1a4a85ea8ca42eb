//! What a run records: the per-interval rows of `flows.csv`, `state.csv` and `links.csv`, and
//! the per-run `summary.json` (schema in `docs/output-format.md`).

use core::time::Duration;
use std::path::Path;

use tfrc_output::stats::CountMoments;
use tfrc_output::Histogram;
use tfrc_output::{
    FlowIdentity, FlowSummary, FlowTotals, LinkRow, Rows, RunWriter, StateRow, WriteError,
};
use tfrc_proto::Instant;

use crate::link::{DropReason, LinkCounters, LinkSample};
use crate::packet::Color;

use super::SimulationError;

/// Width of the bins of the CoV of packets sent (paper 003: 0.1 s).
pub const COV_BIN: core::time::Duration = core::time::Duration::from_millis(100);

/// Seconds since the start of the run, written exactly (no binary floating-point noise).
pub fn format_time(at: Instant) -> String {
    tfrc_output::format_time_nanos(at.as_nanos())
}

/// A time as the rows hold it (the value a reader parses back from its exact text).
pub(crate) fn seconds(at: Instant) -> f64 {
    at.as_nanos() as f64 / 1e9
}

/// Everything recorded about one flow.
#[derive(Debug, Clone)]
pub(crate) struct FlowRecord {
    pub name: String,
    pub kind: tfrc_output::FlowKind,
    pub from: String,
    pub to: String,
    pub start: Instant,
    pub stop: Instant,
    pub interval: FlowTotals,
    pub total: FlowTotals,
    /// Packets sent per [`COV_BIN`] over `[start, stop)`, in constant memory: the bins closed
    /// so far, and the open bin with its count.
    pub sent_bins: CountMoments,
    open_bin: Option<(u64, u64)>,
    /// Bins in `[start, stop)`.
    bin_count: u64,
    pub p_sum: f64,
    pub p_samples: u64,
    pub rtt_sum: f64,
    pub rtt_samples: u64,
    /// One-way delays of the data packets that reached the receiver (ns).
    pub delays: Histogram,
}

impl FlowRecord {
    pub fn new(
        name: String,
        kind: tfrc_output::FlowKind,
        (from, to): (String, String),
        (start, stop): (Instant, Instant),
    ) -> FlowRecord {
        let active = stop.saturating_duration_since(start);
        let bins =
            u64::try_from(active.as_nanos().div_ceil(COV_BIN.as_nanos())).unwrap_or(u64::MAX);
        FlowRecord {
            name,
            kind,
            from,
            to,
            start,
            stop,
            interval: FlowTotals::default(),
            total: FlowTotals::default(),
            sent_bins: CountMoments::default(),
            open_bin: None,
            bin_count: bins,
            p_sum: 0.0,
            p_samples: 0,
            rtt_sum: 0.0,
            rtt_samples: 0,
            delays: Histogram::new(),
        }
    }

    pub fn record_sent(&mut self, now: Instant, bytes: u32) {
        self.interval.sent_bytes += u64::from(bytes);
        self.interval.sent_packets += 1;
        self.total.sent_bytes += u64::from(bytes);
        self.total.sent_packets += 1;
        if now >= self.start {
            let bin = now.saturating_duration_since(self.start).as_nanos() / COV_BIN.as_nanos();
            let bin = u64::try_from(bin).unwrap_or(u64::MAX);
            if bin < self.bin_count {
                match &mut self.open_bin {
                    Some((open, count)) if *open == bin => *count += 1,
                    _ => {
                        self.close_bins_before(bin);
                        self.open_bin = Some((bin, 1));
                    }
                }
            }
        }
    }

    /// Closes the open bin and the empty bins after it, up to (not including) `bin`.
    fn close_bins_before(&mut self, bin: u64) {
        close_bins(&mut self.sent_bins, self.open_bin.take(), bin);
    }

    /// CoV of the packets sent per bin over the whole active time (bins after the last packet
    /// count as empty).
    fn cov_sent(&self) -> Option<f64> {
        let mut moments = self.sent_bins;
        close_bins(&mut moments, self.open_bin, self.bin_count);
        moments.coefficient_of_variation()
    }

    pub fn record_received(&mut self, bytes: u32, delay: Duration) {
        self.delays
            .record(u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX));
        self.interval.recv_bytes += u64::from(bytes);
        self.interval.recv_packets += 1;
        self.total.recv_bytes += u64::from(bytes);
        self.total.recv_packets += 1;
    }

    /// Application payload the receiving endpoint delivered (goodput).
    pub fn record_goodput(&mut self, bytes: u64) {
        self.interval.goodput_bytes += bytes;
        self.total.goodput_bytes += bytes;
    }
}

/// Builds a run's rows from the simulation's state and hands them to the one writer of the
/// output schema ([`RunWriter`]): files, memory, both or nowhere.
#[derive(Default)]
pub(crate) struct Recorder {
    writer: RunWriter,
}

fn io_error(error: WriteError) -> SimulationError {
    SimulationError::Io {
        path: error.path,
        source: error.source,
    }
}

impl Recorder {
    /// Rows written to the CSV files of `directory` (created if missing), if given.
    pub fn new(directory: Option<&Path>) -> Result<Recorder, SimulationError> {
        Ok(Recorder {
            writer: RunWriter::new(directory).map_err(io_error)?,
        })
    }

    /// Also keeps every row in memory.
    pub fn keep_rows(&mut self) {
        self.writer.keep_rows();
    }

    /// Whether rows go anywhere (building them can be skipped otherwise).
    pub fn is_recording(&self) -> bool {
        self.writer.is_recording()
    }

    pub fn flow_row(
        &mut self,
        at: Instant,
        record: &FlowRecord,
        interval_secs: f64,
    ) -> Result<(), SimulationError> {
        let row = record
            .interval
            .row(seconds(at), (&record.name, record.kind), interval_secs);
        self.writer.push(row).map_err(io_error)
    }

    pub fn state_row(&mut self, row: StateRow) -> Result<(), SimulationError> {
        self.writer.push(row).map_err(io_error)
    }

    pub fn link_row(
        &mut self,
        at: Instant,
        names: (&str, &str),
        sample: &LinkSample,
        previous: &LinkCounters,
        capacity_bps: Option<u64>,
        interval_secs: f64,
    ) -> Result<(), SimulationError> {
        let row = link_interval_row(
            seconds(at),
            names,
            sample,
            previous,
            capacity_bps,
            interval_secs,
        );
        self.writer.push(row).map_err(io_error)
    }

    /// Flushes the files and gives back the rows kept in memory, if any.
    pub fn finish(self) -> Result<Option<Rows>, SimulationError> {
        self.writer.finish().map_err(io_error)
    }
}

/// The `links.csv` row of one link direction for the interval of `interval_secs` seconds
/// ending at `time_s`: the queue as `sample` found it, and the counters' growth since
/// `previous`. The simulator and the emulator (`tfrc emulate`, `tfrc testbed`) both write these.
pub fn link_interval_row(
    time_s: f64,
    (from, to): (&str, &str),
    sample: &LinkSample,
    previous: &LinkCounters,
    capacity_bps: Option<u64>,
    interval_secs: f64,
) -> LinkRow {
    let now = &sample.counters;
    let delta = |current: u64, before: u64| current.saturating_sub(before);
    let departure_bytes = delta(now.departure_bytes, previous.departure_bytes);
    let colour_drops = |color: Color| {
        Some(delta(
            now.drops_by_color(color),
            previous.drops_by_color(color),
        ))
    };
    LinkRow {
        time_s,
        from: from.to_owned(),
        to: to.to_owned(),
        queue_packets: sample.queue_packets as u64,
        queue_bytes: sample.queue_bytes,
        average_queue: sample.average_queue,
        arrivals: delta(now.arrivals, previous.arrivals),
        departures: delta(now.departures, previous.departures),
        departure_bytes,
        utilization: capacity_bps
            .map(|capacity| departure_bytes as f64 * 8.0 / (capacity as f64 * interval_secs)),
        drops: delta(now.total_drops(), previous.total_drops()),
        drops_unmarked: colour_drops(Color::Unmarked),
        drops_in: colour_drops(Color::In),
        drops_out: colour_drops(Color::Out),
        drops_loss_model: Some(delta(
            now.drops_by_reason(DropReason::LossModel),
            previous.drops_by_reason(DropReason::LossModel),
        )),
        marked_in: Some(delta(now.marked_in, previous.marked_in)),
        marked_out: Some(delta(now.marked_out, previous.marked_out)),
        ecn_marks: Some(delta(now.congestion_marks, previous.congestion_marks)),
    }
}

/// Adds the `open` bin (index, count) and the empty bins around it to `moments`, up to (not
/// including) bin `until`.
fn close_bins(moments: &mut CountMoments, open: Option<(u64, u64)>, until: u64) {
    if let Some((index, count)) = open {
        moments.add_zeros(index.saturating_sub(moments.bins()));
        moments.add(count);
    }
    moments.add_zeros(until.saturating_sub(moments.bins()));
}

impl FlowRecord {
    /// The flow's line of `summary.json`; `feedbacks` is the TFRC receiver's count.
    pub fn summary(&self, feedbacks: Option<u64>) -> FlowSummary {
        FlowSummary {
            mean_p: (self.p_samples > 0).then(|| self.p_sum / self.p_samples as f64),
            mean_rtt_s: (self.rtt_samples > 0).then(|| self.rtt_sum / self.rtt_samples as f64),
            cov_sent_100ms: self.cov_sent(),
            feedbacks,
            ..FlowSummary::from_totals(
                FlowIdentity {
                    name: &self.name,
                    kind: self.kind,
                    from: &self.from,
                    to: &self.to,
                },
                (
                    Duration::from_nanos(self.start.as_nanos()),
                    Duration::from_nanos(self.stop.as_nanos()),
                ),
                self.total,
            )
            .with_delays(&self.delays)
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
    fn packets_fall_into_tenth_of_second_bins() {
        let mut record = FlowRecord::new(
            "a".into(),
            tfrc_output::FlowKind::Cbr,
            ("s".into(), "r".into()),
            (Instant::from_secs(1), Instant::from_millis(1_300)),
        );
        assert_eq!(record.bin_count, 3);
        record.record_sent(Instant::from_millis(1_000), 100);
        record.record_sent(Instant::from_millis(1_099), 100);
        record.record_sent(Instant::from_millis(1_250), 100);
        // Bins [2, 0, 1]: mean 1, std sqrt(2/3).
        let cov = record.summary(None).cov_sent_100ms.unwrap();
        assert!((cov - (2.0f64 / 3.0).sqrt()).abs() < 1e-12, "{cov}");
        assert_eq!(record.total.sent_bytes, 300);
        // A trailing empty bin counts: [2, 0, 1, 0] over 0.4 s.
        let mut longer = FlowRecord::new(
            "b".into(),
            tfrc_output::FlowKind::Cbr,
            ("s".into(), "r".into()),
            (Instant::from_secs(1), Instant::from_millis(1_400)),
        );
        for at in [1_000, 1_099, 1_250] {
            longer.record_sent(Instant::from_millis(at), 100);
        }
        let cov = longer.summary(None).cov_sent_100ms.unwrap();
        // mean 0.75, variance (1.5625 + 0.5625 + 0.0625 + 0.5625) / 4 = 0.6875.
        assert!((cov - 0.6875f64.sqrt() / 0.75).abs() < 1e-12, "{cov}");
    }
}
