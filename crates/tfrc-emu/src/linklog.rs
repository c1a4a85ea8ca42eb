//! Per-direction logs in the simulator's `links.csv` schema (docs/output-format.md).
//!
//! One row per link direction per interval: the queue at the end of the interval and the
//! counters' differences over it, so real and simulated runs of one scenario are read by the
//! same scripts.

use core::time::Duration;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use tfrc_proto::Instant;
use tfrc_sim::{Color, DropReason, LinkCounters, LinkSample};

/// The header of `links.csv`.
pub const HEADER: &str = "time_s,from,to,queue_packets,queue_bytes,average_queue,arrivals,departures,departure_bytes,utilization,drops,drops_unmarked,drops_in,drops_out,drops_loss_model,marked_in,marked_out";

/// The identity of one logged link direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkName {
    /// Node the direction leaves.
    pub from: String,
    /// Node it reaches.
    pub to: String,
    /// Constant capacity in bits/s (`None` for a trace: utilization is left empty).
    pub capacity_bits_per_second: Option<u64>,
}

/// Formats one `links.csv` row for the interval ending at `time_s` of length `interval`.
pub fn format_row(
    time_s: f64,
    interval: Duration,
    name: &LinkName,
    previous: &LinkCounters,
    sample: &LinkSample,
) -> String {
    let counters = &sample.counters;
    let departure_bytes = counters.departure_bytes - previous.departure_bytes;
    let utilization = name
        .capacity_bits_per_second
        .map(|capacity| {
            format!(
                "{:.6}",
                departure_bytes as f64 * 8.0 / (capacity as f64 * interval.as_secs_f64())
            )
        })
        .unwrap_or_default();
    let average = sample
        .average_queue
        .map(|average| format!("{average:.4}"))
        .unwrap_or_default();
    let mut row = String::new();
    let _ = write!(
        row,
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        format_seconds(time_s),
        name.from,
        name.to,
        sample.queue_packets,
        sample.queue_bytes,
        average,
        counters.arrivals - previous.arrivals,
        counters.departures - previous.departures,
        departure_bytes,
        utilization,
        counters.total_drops() - previous.total_drops(),
        counters.drops_by_color(Color::Unmarked) - previous.drops_by_color(Color::Unmarked),
        counters.drops_by_color(Color::In) - previous.drops_by_color(Color::In),
        counters.drops_by_color(Color::Out) - previous.drops_by_color(Color::Out),
        counters.drops_by_reason(DropReason::LossModel)
            - previous.drops_by_reason(DropReason::LossModel),
        counters.marked_in - previous.marked_in,
        counters.marked_out - previous.marked_out,
    );
    row
}

/// Seconds as a short decimal (`12.5`, `3`).
pub fn format_seconds(seconds: f64) -> String {
    let text = format!("{seconds:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text.is_empty() {
        "0".to_string()
    } else {
        text.to_string()
    }
}

/// Writes `links.csv` rows as time passes.
#[derive(Debug)]
pub struct LinkLog {
    writer: BufWriter<File>,
    names: Vec<LinkName>,
    previous: Vec<LinkCounters>,
    interval: Duration,
    next: Instant,
    intervals_written: u64,
}

impl LinkLog {
    /// Creates `path` with the header; one row per entry of `names` per `interval`, the first
    /// interval ending at `Instant::ZERO + interval`.
    pub fn create(path: &Path, names: Vec<LinkName>, interval: Duration) -> anyhow::Result<Self> {
        anyhow::ensure!(
            !interval.is_zero(),
            "the links.csv interval must be above 0"
        );
        let file = File::create(path)
            .map_err(|error| anyhow::anyhow!("cannot create {}: {error}", path.display()))?;
        let mut writer = BufWriter::new(file);
        writeln!(writer, "{HEADER}")?;
        let count = names.len();
        Ok(LinkLog {
            writer,
            names,
            previous: vec![LinkCounters::default(); count],
            interval,
            next: Instant::ZERO + interval,
            intervals_written: 0,
        })
    }

    /// When the next rows are due.
    pub fn next_due(&self) -> Instant {
        self.next
    }

    /// Writes the rows of every interval that ended by `now`, from `samples` (one per name).
    /// Several intervals ending at once (a late call) get the same queue state and put every
    /// count in the first of them.
    pub fn write_due(&mut self, now: Instant, samples: &[LinkSample]) -> anyhow::Result<()> {
        while self.next <= now {
            self.intervals_written += 1;
            let time_s = self.interval.as_secs_f64() * self.intervals_written as f64;
            for ((name, previous), sample) in self.names.iter().zip(&mut self.previous).zip(samples)
            {
                let row = format_row(time_s, self.interval, name, previous, sample);
                writeln!(self.writer, "{row}")?;
                *previous = sample.counters;
            }
            self.next += self.interval;
        }
        Ok(())
    }

    /// Flushes the file.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.writer.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_hold_interval_differences() {
        let name = LinkName {
            from: "router".into(),
            to: "receiver".into(),
            capacity_bits_per_second: Some(1_000_000),
        };
        let previous = LinkCounters {
            arrivals: 10,
            departures: 10,
            departure_bytes: 10_000,
            ..LinkCounters::default()
        };
        let mut counters = LinkCounters {
            arrivals: 135,
            departures: 135,
            departure_bytes: 135_000,
            marked_in: 4,
            ..LinkCounters::default()
        };
        counters.drops[DropReason::LossModel.index()][Color::In.index()] = 2;
        let sample = LinkSample {
            counters,
            queue_packets: 3,
            queue_bytes: 3000,
            transmitting: true,
            in_flight: 1,
            average_queue: None,
        };
        let row = format_row(2.0, Duration::from_secs(1), &name, &previous, &sample);
        assert_eq!(
            row,
            "2,router,receiver,3,3000,,125,125,125000,1.000000,2,0,2,0,2,4,0"
        );
        assert_eq!(row.split(',').count(), HEADER.split(',').count());
    }
}
