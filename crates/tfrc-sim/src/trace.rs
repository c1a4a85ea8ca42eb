//! Mahimahi delivery traces: when a trace-driven link may send.
//!
//! Format (Mahimahi's): one line per delivery opportunity, each a whole number of
//! milliseconds from the start of the trace at which one 1500-byte packet may leave; a time
//! repeated on several lines gives several opportunities in that millisecond. The trace
//! repeats with a period equal to its last timestamp, so a trace whose first line is `0` and
//! last line is `P` has two opportunities at `P`, `2P`, … (the last of one pass and the first of
//! the next), exactly as in Mahimahi's `LinkQueue`.

use core::time::Duration;
use std::path::Path;
use std::sync::Arc;

use tfrc_proto::Instant;

use crate::error::TraceError;

/// Bytes one delivery opportunity carries (Mahimahi's packet size).
pub const TRACE_OPPORTUNITY_BYTES: u32 = 1500;

/// Largest accepted timestamp (about 31 years), so that times never overflow.
const MAX_TIMESTAMP_MS: u64 = 1_000_000_000_000;

const NANOS_PER_MILLI: u64 = 1_000_000;

/// How packets use delivery opportunities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpportunityUse {
    /// One packet per opportunity, whatever its size up to 1500 bytes; a larger packet uses
    /// `⌈size / 1500⌉` consecutive opportunities and leaves at the last one: a trace then gives
    /// the same packet rate to every flow regardless of packet size (scenario key
    /// `trace_opportunity = "packet"`).
    PacketPerOpportunity,
    /// Mahimahi's byte accounting, the default: each opportunity carries 1500 bytes, shared by
    /// as many queued packets as fit; a packet may span opportunities and leaves when its last
    /// byte does. Mahimahi (`LinkQueue` in `link_queue.cc`) refuses packets over 1500 bytes;
    /// here they span opportunities like any other.
    #[default]
    SharedBytes,
}

impl From<tfrc_scenario::TraceOpportunity> for OpportunityUse {
    fn from(opportunity: tfrc_scenario::TraceOpportunity) -> Self {
        match opportunity {
            tfrc_scenario::TraceOpportunity::Bytes => OpportunityUse::SharedBytes,
            tfrc_scenario::TraceOpportunity::Packet => OpportunityUse::PacketPerOpportunity,
        }
    }
}

/// A parsed delivery trace, cheap to clone (the timestamps are shared).
///
/// A trace may start at an offset into itself ([`DeliveryTrace::starting_at`]): the link's time
/// 0 is then the trace's time `offset`, and the opportunities before it are not used (they come
/// back on the next pass).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryTrace {
    name: Arc<str>,
    millis: Arc<[u64]>,
    /// Trace time (ms) at the link's time 0.
    skip_ms: u64,
}

/// Position of a delivery opportunity: which pass over the trace, which line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Opportunity {
    pass: u64,
    index: usize,
}

impl Opportunity {
    /// The first opportunity of the trace.
    pub(crate) const FIRST: Opportunity = Opportunity { pass: 0, index: 0 };

    /// The same line one pass later.
    fn pass_later(self) -> Opportunity {
        Opportunity {
            pass: self.pass.saturating_add(1),
            index: self.index,
        }
    }
}

/// How many parsed trace files [`DeliveryTrace::from_file`] keeps (the most recently read).
pub const READ_TRACES_KEPT: usize = 8;

/// What identifies a trace file's content for [`DeliveryTrace::from_file`]'s memo.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadTraceKey {
    path: std::path::PathBuf,
    length: u64,
    modified: Option<std::time::SystemTime>,
}

/// The process's memo of parsed trace files, most recently read last.
mod read_traces {
    use std::sync::Mutex;

    use super::{DeliveryTrace, ReadTraceKey, READ_TRACES_KEPT};

    static KEPT: Mutex<Vec<(ReadTraceKey, DeliveryTrace)>> = Mutex::new(Vec::new());

    /// The trace read under `key`, if kept.
    pub(super) fn find(key: &ReadTraceKey) -> Option<DeliveryTrace> {
        let kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        kept.iter()
            .find(|(kept_key, _)| kept_key == key)
            .map(|(_, trace)| trace.clone())
    }

    /// Keeps `trace` under `key`, forgetting the oldest beyond [`READ_TRACES_KEPT`].
    pub(super) fn keep(key: ReadTraceKey, trace: DeliveryTrace) {
        let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        kept.retain(|(kept_key, _)| kept_key.path != key.path);
        if kept.len() >= READ_TRACES_KEPT {
            kept.remove(0);
        }
        kept.push((key, trace));
    }
}

fn bad_line(trace: &str, line: usize, content: &str, problem: String) -> TraceError {
    TraceError::BadLine {
        trace: trace.to_owned(),
        line,
        content: content.chars().take(40).collect(),
        problem,
    }
}

impl DeliveryTrace {
    /// Reads a trace file; errors name the file and, for a bad line, its line number.
    ///
    /// A file this process read before, unchanged since (same length and modification time),
    /// is not parsed again: the last [`READ_TRACES_KEPT`] traces read are kept and shared.
    /// `tfrc reproduce` builds 600 trace-driven links from the same two files (229 459 lines);
    /// parsing them each time was about 1 % of its CPU time.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, TraceError> {
        let path = path.as_ref();
        let io_error = |source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let metadata = std::fs::metadata(path).map_err(io_error)?;
        let key = ReadTraceKey {
            path: path.to_path_buf(),
            length: metadata.len(),
            modified: metadata.modified().ok(),
        };
        if let Some(trace) = read_traces::find(&key) {
            return Ok(trace);
        }
        let text = std::fs::read_to_string(path).map_err(io_error)?;
        let trace = Self::parse(&path.display().to_string(), &text)?;
        // A file changed between the metadata and the read is simply not kept under a stale
        // key: its new length differs from the one measured.
        if text.len() as u64 == key.length {
            read_traces::keep(key, trace.clone());
        }
        Ok(trace)
    }

    /// Parses trace text; `name` (a file name, say) appears in errors. Blank lines are
    /// skipped; every other line must be a whole number of milliseconds, not smaller than the
    /// previous one.
    pub fn parse(name: &str, text: &str) -> Result<Self, TraceError> {
        let mut millis: Vec<u64> = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            let value: u64 = trimmed.parse().map_err(|_| {
                bad_line(
                    name,
                    index + 1,
                    line,
                    "expected a whole number of milliseconds".to_owned(),
                )
            })?;
            if value > MAX_TIMESTAMP_MS {
                return Err(bad_line(
                    name,
                    index + 1,
                    line,
                    format!("timestamp larger than {MAX_TIMESTAMP_MS} ms"),
                ));
            }
            if let Some(&previous) = millis.last() {
                if value < previous {
                    return Err(bad_line(
                        name,
                        index + 1,
                        line,
                        format!("timestamps must not decrease (previous line: {previous} ms)"),
                    ));
                }
            }
            millis.push(value);
        }
        Self::from_millis(name, millis)
    }

    /// A trace from timestamps in milliseconds (entry `i` is reported as line `i + 1`).
    pub fn from_millis(name: &str, millis: Vec<u64>) -> Result<Self, TraceError> {
        for (index, pair) in millis.windows(2).enumerate() {
            if pair[1] < pair[0] {
                return Err(bad_line(
                    name,
                    index + 2,
                    &pair[1].to_string(),
                    format!(
                        "timestamps must not decrease (previous line: {} ms)",
                        pair[0]
                    ),
                ));
            }
        }
        if let Some(index) = millis.iter().position(|&t| t > MAX_TIMESTAMP_MS) {
            return Err(bad_line(
                name,
                index + 1,
                &millis[index].to_string(),
                format!("timestamp larger than {MAX_TIMESTAMP_MS} ms"),
            ));
        }
        match millis.last() {
            None => Err(TraceError::Empty {
                trace: name.to_owned(),
            }),
            Some(0) => Err(TraceError::ZeroDuration {
                trace: name.to_owned(),
            }),
            Some(_) => Ok(DeliveryTrace {
                name: name.into(),
                millis: millis.into(),
                skip_ms: 0,
            }),
        }
    }

    /// The trace's name (file name when read from a file).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This trace started `offset` into itself (whole milliseconds; an offset past the end
    /// wraps, as the trace repeats): the link's time 0 is the trace's time `offset`.
    #[must_use]
    pub fn starting_at(mut self, offset: Duration) -> Self {
        let millis = u64::try_from(offset.as_millis()).unwrap_or(u64::MAX);
        self.skip_ms = millis % self.period_ms();
        self
    }

    /// Where in the trace the link's time 0 is.
    pub fn start_offset(&self) -> Duration {
        Duration::from_millis(self.skip_ms)
    }

    /// Delivery opportunities in one pass over the trace.
    pub fn opportunities_per_period(&self) -> usize {
        self.millis.len()
    }

    /// Length of one pass: the last timestamp.
    pub fn period(&self) -> Duration {
        Duration::from_millis(self.period_ms())
    }

    /// Average rate the trace allows, counting 1500 bytes per opportunity.
    pub fn mean_rate_bits_per_second(&self) -> f64 {
        self.millis.len() as f64 * f64::from(TRACE_OPPORTUNITY_BYTES) * 8.0
            / (self.period_ms() as f64 / 1000.0)
    }

    /// The mean rate the link offers over its first `duration` (from its start offset), counting
    /// 1500 bytes per opportunity: what a run of that length on this trace could carry at most.
    /// The whole trace's mean for a zero duration.
    pub fn mean_rate_over(&self, duration: Duration) -> f64 {
        if duration.is_zero() {
            return self.mean_rate_bits_per_second();
        }
        self.count_opportunities(Duration::ZERO, duration) as f64
            * f64::from(TRACE_OPPORTUNITY_BYTES)
            * 8.0
            / duration.as_secs_f64()
    }

    /// Number of opportunities at offsets `t` from the trace start with `after < t ≤ up_to`.
    pub fn count_opportunities(&self, after: Duration, up_to: Duration) -> u64 {
        self.count_up_to(up_to)
            .saturating_sub(self.count_up_to(after))
    }

    fn period_ms(&self) -> u64 {
        // Non-empty with a positive last entry by construction.
        self.millis.last().copied().unwrap_or(1).max(1)
    }

    /// Opportunities with offset ≤ `offset` from the trace's own time 0 (the link's time 0 is
    /// `skip_ms` later, so counts over the link's times add it to both ends).
    fn count_up_to(&self, offset: Duration) -> u64 {
        let millis = u64::try_from(offset.as_millis())
            .unwrap_or(u64::MAX)
            .saturating_add(self.skip_ms);
        let period = self.period_ms();
        let passes = millis / period;
        let rest = millis - passes * period;
        let in_pass = self.millis.partition_point(|&t| t <= rest) as u64;
        passes
            .saturating_mul(self.millis.len() as u64)
            .saturating_add(in_pass)
    }

    /// Offset of an opportunity from the link's time 0, in milliseconds (saturating; an
    /// opportunity before the start offset counts as 0).
    pub(crate) fn offset_ms(&self, opportunity: Opportunity) -> u64 {
        opportunity
            .pass
            .saturating_mul(self.period_ms())
            .saturating_add(self.millis[opportunity.index])
            .saturating_sub(self.skip_ms)
    }

    /// The first opportunity the link uses: the first at or after the start offset.
    pub(crate) fn first(&self) -> Opportunity {
        if self.skip_ms == 0 {
            return Opportunity::FIRST;
        }
        let index = self.millis.partition_point(|&t| t < self.skip_ms);
        if index < self.millis.len() {
            Opportunity { pass: 0, index }
        } else {
            Opportunity::FIRST.pass_later()
        }
    }

    /// Time of an opportunity for a trace started at `start`.
    pub(crate) fn time_of(&self, start: Instant, opportunity: Opportunity) -> Instant {
        let nanos = self.offset_ms(opportunity).saturating_mul(NANOS_PER_MILLI);
        start + Duration::from_nanos(nanos)
    }

    /// The opportunity after `opportunity`.
    pub(crate) fn following(&self, opportunity: Opportunity) -> Opportunity {
        if opportunity.index + 1 < self.millis.len() {
            Opportunity {
                pass: opportunity.pass,
                index: opportunity.index + 1,
            }
        } else {
            Opportunity {
                pass: opportunity.pass.saturating_add(1),
                index: 0,
            }
        }
    }

    /// The first opportunity strictly later than `now` for a trace started at `start`.
    pub(crate) fn first_after(&self, start: Instant, now: Instant) -> Opportunity {
        if now < start {
            return self.first();
        }
        // An opportunity at whole millisecond x is later than `now` iff x > ⌊(now−start)/1ms⌋.
        let millis =
            ((now.as_nanos() - start.as_nanos()) / NANOS_PER_MILLI).saturating_add(self.skip_ms);
        let period = self.period_ms();
        let pass = millis / period;
        let rest = millis - pass * period;
        let index = self.millis.partition_point(|&t| t <= rest);
        if index < self.millis.len() {
            Opportunity { pass, index }
        } else {
            Opportunity {
                pass: pass.saturating_add(1),
                index: 0,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace started at an offset delivers exactly the original's opportunities from that
    /// trace time on, shifted to the link's time 0, pass after pass.
    #[test]
    fn a_trace_started_at_an_offset_is_the_same_sequence_shifted() {
        let original = DeliveryTrace::parse("t", "0\n3\n5\n5\n9\n10\n").unwrap();
        let period = 10u64;
        // The original's infinite sequence of opportunity times (ms from trace time 0).
        let mut sequence: Vec<u64> = Vec::new();
        for pass in 0..6u64 {
            for &t in original.millis.iter() {
                sequence.push(pass * period + t);
            }
        }
        for offset in [0u64, 1, 3, 4, 5, 9, 10, 13, 27] {
            let trace = original.clone().starting_at(Duration::from_millis(offset));
            assert_eq!(trace.start_offset(), Duration::from_millis(offset % period));
            let expected: Vec<u64> = sequence
                .iter()
                .filter(|&&t| t >= offset % period)
                .map(|&t| t - offset % period)
                .take(20)
                .collect();
            let mut opportunity = trace.first();
            let mut got = Vec::new();
            for _ in 0..20 {
                got.push(trace.offset_ms(opportunity));
                opportunity = trace.following(opportunity);
            }
            assert_eq!(got, expected, "offset {offset}");
            // Counting agrees with the sequence: (2, 17] in link time.
            let counted = expected.iter().filter(|&&t| t > 2 && t <= 17).count() as u64;
            assert_eq!(
                trace.count_opportunities(Duration::from_millis(2), Duration::from_millis(17)),
                counted,
                "offset {offset}"
            );
            // The first opportunity after link time 4 ms.
            let start = Instant::from_millis(100);
            let next = trace.first_after(start, start + Duration::from_micros(4500));
            assert_eq!(
                trace.offset_ms(next),
                *expected.iter().find(|&&t| t > 4).unwrap(),
                "offset {offset}"
            );
        }
        assert_eq!(
            original
                .clone()
                .starting_at(Duration::from_millis(3))
                .mean_rate_bits_per_second(),
            original.mean_rate_bits_per_second()
        );
    }

    #[test]
    fn parses_and_reports_bad_lines() {
        let trace = DeliveryTrace::parse("t.down", "0\n5\n5\n\n10\n").unwrap();
        assert_eq!(trace.opportunities_per_period(), 4);
        assert_eq!(trace.period(), Duration::from_millis(10));
        assert_eq!(trace.mean_rate_bits_per_second(), 4.0 * 12_000.0 / 0.01);

        let error = DeliveryTrace::parse("t.down", "0\n5\nabc\n").unwrap_err();
        let message = error.to_string();
        assert!(message.starts_with("t.down:3:"), "{message}");
        assert!(matches!(error, TraceError::BadLine { line: 3, .. }));

        let error = DeliveryTrace::parse("t.down", "0\n5\n4\n").unwrap_err();
        assert!(
            matches!(error, TraceError::BadLine { line: 3, .. }),
            "{error}"
        );
        assert!(DeliveryTrace::parse("t.down", "-1\n").is_err());
        assert!(DeliveryTrace::parse("t.down", "1.5\n").is_err());
        assert!(DeliveryTrace::parse("t.down", "99999999999999999999\n").is_err());
        assert!(matches!(
            DeliveryTrace::parse("t.down", "\n \n"),
            Err(TraceError::Empty { .. })
        ));
        assert!(matches!(
            DeliveryTrace::parse("t.down", "0\n0\n"),
            Err(TraceError::ZeroDuration { .. })
        ));
        assert!(DeliveryTrace::from_millis("v", vec![3, 2]).is_err());
        let missing = DeliveryTrace::from_file("/nonexistent/trace.down").unwrap_err();
        assert!(missing.to_string().contains("/nonexistent/trace.down"));
    }

    /// A file read again is the same trace without a second parse (its timestamps shared),
    /// and a file changed since it was read is read anew: changed length, changed modification
    /// time, or a file that is no longer valid.
    #[test]
    fn a_trace_file_read_again_is_shared_until_it_changes() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let path = directory.path().join("link.down");
        std::fs::write(&path, "0\n5\n10\n").unwrap();
        let first = DeliveryTrace::from_file(&path).unwrap();
        let again = DeliveryTrace::from_file(&path).unwrap();
        assert!(Arc::ptr_eq(&first.millis, &again.millis), "parsed once");
        assert_eq!(first, again);

        // Another length.
        std::fs::write(&path, "0\n5\n7\n10\n").unwrap();
        assert_eq!(
            *DeliveryTrace::from_file(&path).unwrap().millis,
            [0, 5, 7, 10]
        );

        // Same length, another modification time.
        std::fs::write(&path, "0\n4\n7\n10\n").unwrap();
        let later = std::time::SystemTime::now() + Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(
            *DeliveryTrace::from_file(&path).unwrap().millis,
            [0, 4, 7, 10]
        );

        // No longer a trace: the error, not the trace kept from before.
        std::fs::write(&path, "0\nfive\n7\n10\n").unwrap();
        assert!(matches!(
            DeliveryTrace::from_file(&path),
            Err(TraceError::BadLine { line: 2, .. })
        ));
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            DeliveryTrace::from_file(&path),
            Err(TraceError::Io { .. })
        ));
    }

    #[test]
    fn repeats_with_its_period() {
        // Opportunities at 0, 0, 5, 10 | 10, 10, 15, 20 | 20, 20, 25, 30 ...; in (0, 20] there are 8.
        let trace = DeliveryTrace::from_millis("t", vec![0, 0, 5, 10]).unwrap();
        let start = Instant::from_secs(1);
        let mut opportunity = Opportunity::FIRST;
        let mut times = Vec::new();
        for _ in 0..9 {
            times.push(trace.offset_ms(opportunity));
            opportunity = trace.following(opportunity);
        }
        assert_eq!(times, vec![0, 0, 5, 10, 10, 10, 15, 20, 20]);
        assert_eq!(
            trace.count_opportunities(Duration::ZERO, Duration::from_millis(20)),
            8
        );
        assert_eq!(
            trace.count_opportunities(Duration::from_millis(4), Duration::from_millis(10)),
            4
        );
        // First opportunity strictly after a time.
        let after = |ms: u64| {
            trace.offset_ms(trace.first_after(start, start + Duration::from_micros(ms * 1000)))
        };
        assert_eq!(after(0), 5);
        assert_eq!(after(5), 10);
        assert_eq!(after(10), 15);
        assert_eq!(after(12), 15);
        assert_eq!(
            trace
                .first_after(start, start + Duration::from_millis(10))
                .pass,
            1
        );
        assert_eq!(
            trace.time_of(start, trace.first_after(start, Instant::ZERO)),
            start
        );
        assert_eq!(
            trace.first_after(start, start + Duration::from_micros(4_999)),
            Opportunity { pass: 0, index: 2 }
        );
    }
}
