//! Per-direction logs in the simulator's `links.csv` schema (docs/output-format.md).
//!
//! One row per link direction per interval: the queue at the end of the interval and the
//! counters' differences over it, so real and simulated runs of one scenario are read by the
//! same scripts.

use crate::error::{Error, Result};
use core::time::Duration;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use tfrc_output::{CsvLine, CsvRow, LinkRow};
use tfrc_proto::Instant;
use tfrc_sim::simulation::link_interval_row;
use tfrc_sim::{LinkCounters, LinkSample};

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

/// The `links.csv` row of one direction for the interval ending at `time_s` of length
/// `interval`: the simulator's own row ([`tfrc_sim::simulation::link_interval_row`]).
pub fn interval_row(
    time_s: f64,
    interval: Duration,
    name: &LinkName,
    previous: &LinkCounters,
    sample: &LinkSample,
) -> LinkRow {
    link_interval_row(
        time_s,
        (&name.from, &name.to),
        sample,
        previous,
        name.capacity_bits_per_second,
        interval.as_secs_f64(),
    )
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
    /// The line being written, its buffer kept from row to row.
    line: CsvLine,
}

impl LinkLog {
    /// Creates `path` with the header; one row per entry of `names` per `interval`, the first
    /// interval ending at `Instant::ZERO + interval`.
    pub fn create(path: &Path, names: Vec<LinkName>, interval: Duration) -> Result<Self> {
        if interval.is_zero() {
            return Err(Error::Invalid(
                "the links.csv interval must be above 0".into(),
            ));
        }
        let file = File::create(path)
            .map_err(|error| Error::Failed(format!("cannot create {}: {error}", path.display())))?;
        let mut writer = BufWriter::new(file);
        writeln!(
            writer,
            "{}",
            tfrc_output::header(tfrc_output::RowFile::Links)
        )?;
        let count = names.len();
        Ok(LinkLog {
            writer,
            names,
            previous: vec![LinkCounters::default(); count],
            interval,
            next: Instant::ZERO + interval,
            intervals_written: 0,
            line: CsvLine::default(),
        })
    }

    /// When the next rows are due.
    pub fn next_due(&self) -> Instant {
        self.next
    }

    /// Writes the rows of every interval that ended by `now`, from `samples` (one per name).
    /// Several intervals ending at once (a late call) get the same queue state and put every
    /// count in the first of them.
    pub fn write_due(&mut self, now: Instant, samples: &[LinkSample]) -> Result<()> {
        while self.next <= now {
            self.intervals_written += 1;
            let time_s = self.interval.as_secs_f64() * self.intervals_written as f64;
            for ((name, previous), sample) in self.names.iter().zip(&mut self.previous).zip(samples)
            {
                interval_row(time_s, self.interval, name, previous, sample)
                    .write_line(&mut self.writer, &mut self.line)?;
                *previous = sample.counters;
            }
            self.next += self.interval;
        }
        Ok(())
    }

    /// Flushes the file.
    pub fn flush(&mut self) -> Result<()> {
        self.writer.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfrc_sim::{Color, DropReason};

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
            congestion_marks: 6,
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
        let mut row = Vec::new();
        interval_row(2.0, Duration::from_secs(1), &name, &previous, &sample)
            .write_line(&mut row, &mut CsvLine::default())
            .unwrap();
        let row = String::from_utf8(row).unwrap();
        assert_eq!(
            row,
            "2,router,receiver,3,3000,,125,125,125000,1.0000,2,0,2,0,2,4,0,6\n"
        );
        assert_eq!(
            row.split(',').count(),
            tfrc_output::header(tfrc_output::RowFile::Links)
                .split(',')
                .count()
        );
    }
}
