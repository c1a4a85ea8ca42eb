//! The receiver's measured receive rate over a sliding window of arrival times.
//!
//! RFC 5348 §6.2 step 2: "Calculate the measured receive rate, X_recv, based on the packets
//! received within the previous R_m seconds. This is performed whether the feedback timer expired
//! at its normal time or expired early due to a new lost or marked packet". §6.3.1 uses the same
//! rate for the first loss interval ("the receive rate over the most recent round-trip time").
//!
//! The window keeps, per accepted data packet, its arrival time and the running byte count. A
//! query for the bytes that arrived in `(now − span, now]` subtracts two running counts, so bytes
//! and time always cover the same span (unlike "bytes since the last feedback over the time since
//! it", which divides a burst by a few milliseconds when a loss sends a feedback early).
//!
//! Memory is bounded: entries older than the horizon `keep` the receiver asks for are dropped,
//! and packets that arrive within `keep / (MAX_ENTRIES / 2)` of the newest entry join it, so at
//! most about `MAX_ENTRIES / 2` entries span the horizon whatever the packet rate. A joined packet
//! only coarsens where the window may start: the bytes counted at the start of a window may miss
//! at most one entry's worth (the rate errs low by at most 2/MAX_ENTRIES of `keep`'s bytes); the
//! count at the window's end is always exact. Without a horizon (no RTT yet), more than
//! [`MAX_ENTRIES`] entries are thinned by dropping every other one.

use crate::deque::Deque;
use core::time::Duration;

use crate::time::{secs, Instant};

/// Most arrival entries kept; beyond it the window is thinned (every other entry dropped).
pub const MAX_ENTRIES: usize = 8192;

/// Arrival times and running byte counts of recent data packets.
#[derive(Debug, Clone, Default)]
pub struct ArrivalWindow {
    /// `(arrival, bytes of every packet up to and including this one)`, oldest first.
    entries: Deque<(Instant, u64)>,
    /// Running byte count of the newest entry dropped from the front (0 if none).
    dropped_total: u64,
    /// Running byte count over every packet recorded.
    total: u64,
    /// The last horizon asked for and its resolution (`keep / (MAX_ENTRIES / 2)`): the horizon
    /// changes with the RTT, not with every packet, and the division is two 64-bit divisions.
    resolution_kept: Option<(Duration, Duration)>,
}

impl ArrivalWindow {
    /// An empty window.
    pub fn new() -> ArrivalWindow {
        ArrivalWindow::default()
    }

    /// Records `bytes` that arrived at `now`, then drops entries that arrived more than `keep`
    /// before `now` (keep them all with `None`).
    pub fn record(&mut self, now: Instant, bytes: u64, keep: Option<Duration>) {
        self.total = self.total.saturating_add(bytes);
        let resolution = keep.map_or(Duration::ZERO, |keep| self.resolution(keep));
        match self.entries.back_mut() {
            // Joins the newest entry, which keeps its (earlier) arrival time.
            Some(newest) if now < newest.0 + resolution => newest.1 = self.total,
            _ => self.entries.push_back((now, self.total)),
        }
        if let Some(keep) = keep {
            let horizon = now.saturating_sub(keep);
            while let Some(&(arrival, total)) = self.entries.front() {
                if arrival >= horizon {
                    break;
                }
                self.dropped_total = total;
                self.entries.pop_front();
            }
        }
        if self.entries.len() > MAX_ENTRIES {
            self.thin();
        }
    }

    /// How close to the newest entry a packet joins it for a horizon of `keep`.
    fn resolution(&mut self, keep: Duration) -> Duration {
        match self.resolution_kept {
            Some((kept, resolution)) if kept == keep => resolution,
            _ => {
                let resolution = keep / (MAX_ENTRIES as u32 / 2);
                self.resolution_kept = Some((keep, resolution));
                resolution
            }
        }
    }

    /// Drops every other entry, keeping the newest one.
    fn thin(&mut self) {
        let length = self.entries.len();
        let mut index = 0;
        self.entries.retain(|_| {
            let keep = (length - 1 - index).is_multiple_of(2);
            index += 1;
            keep
        });
    }

    /// Running byte count of the packets that arrived at or before `time`.
    fn total_at(&self, time: Instant) -> u64 {
        let after = self
            .entries
            .partition_point(|&(arrival, _)| arrival <= time);
        match after {
            0 => self.dropped_total,
            n => self.entries[n - 1].1,
        }
    }

    /// Bytes of the packets that arrived in `(now − span, now]`.
    pub fn bytes_within(&self, now: Instant, span: Duration) -> u64 {
        let end = self.total_at(now);
        let before = if u128::from(now.as_nanos()) < span.as_nanos() {
            // The window reaches back before time zero: every packet recorded counts.
            0
        } else {
            self.total_at(now - span)
        };
        end.saturating_sub(before)
    }

    /// The receive rate over the last `span` before `now`, bytes/s: the bytes that arrived in
    /// `(now − span, now]` divided by `span`. 0 for an empty span.
    pub fn rate(&self, now: Instant, span: Duration) -> f64 {
        if span.is_zero() {
            return 0.0;
        }
        self.bytes_within(now, span) as f64 / secs(span)
    }

    /// Entries held (for tests of the memory bound).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn the_joining_resolution_follows_the_horizon_asked_for() {
        // keep / 4096: 1 ms for a horizon of 4.096 s, 10 ms for 40.96 s.
        let short = Some(Duration::from_millis(4096));
        let long = Some(Duration::from_millis(40_960));
        let mut window = ArrivalWindow::new();
        window.record(at(100), 1000, short);
        window.record(at(105), 1000, short);
        assert_eq!(window.len(), 2);
        // Within 10 ms of the newest entry (105): joins it under the longer horizon.
        window.record(at(109), 1000, long);
        assert_eq!(window.len(), 2);
        // Back to the short horizon: 111 is more than 1 ms after 105, a new entry.
        window.record(at(111), 1000, short);
        assert_eq!(window.len(), 3);
        assert_eq!(
            window.bytes_within(at(111), Duration::from_millis(100)),
            4000
        );
    }

    #[test]
    fn counts_only_the_packets_inside_the_window() {
        let mut window = ArrivalWindow::new();
        for ms in (10..=100).step_by(10) {
            window.record(at(ms), 1000, None);
        }
        // (50, 100]: arrivals at 60, 70, 80, 90, 100.
        assert_eq!(
            window.bytes_within(at(100), Duration::from_millis(50)),
            5000
        );
        // (0, 100]: all ten.
        assert_eq!(
            window.bytes_within(at(100), Duration::from_millis(100)),
            10_000
        );
        // A window in the past: (30, 55] holds 40 and 50.
        assert_eq!(window.bytes_within(at(55), Duration::from_millis(25)), 2000);
        assert_eq!(window.rate(at(100), Duration::from_millis(50)), 100_000.0);
    }

    #[test]
    fn a_burst_is_divided_by_the_whole_window() {
        // Three packets 1 ms apart: over a 100 ms window they are 30 kB/s, not 1.5 MB/s.
        let mut window = ArrivalWindow::new();
        for ms in [500, 501, 502] {
            window.record(at(ms), 1000, Some(Duration::from_millis(200)));
        }
        let rate = window.rate(at(502), Duration::from_millis(100));
        assert!((rate - 30_000.0).abs() < 1e-6, "{rate}");
    }

    #[test]
    fn old_entries_are_dropped_but_counted_at_the_edge() {
        let mut window = ArrivalWindow::new();
        for ms in 1..=1000 {
            window.record(at(ms), 100, Some(Duration::from_millis(100)));
        }
        assert!(window.len() <= 101, "{}", window.len());
        assert_eq!(
            window.bytes_within(at(1000), Duration::from_millis(100)),
            100 * 100
        );
    }

    #[test]
    fn memory_is_bounded_and_the_count_stays_close() {
        // 100 000 packets 1 µs apart, horizon 100 ms: at most about MAX_ENTRIES / 2 entries.
        let mut window = ArrivalWindow::new();
        for us in 0..100_000u64 {
            window.record(
                Instant::from_nanos(1_000_000_000 + us * 1000),
                1000,
                Some(Duration::from_millis(100)),
            );
        }
        assert!(window.len() <= MAX_ENTRIES / 2 + 1, "{}", window.len());
        let now = Instant::from_nanos(1_000_000_000 + 99_999 * 1000);
        let counted = window.bytes_within(now, Duration::from_millis(50));
        let exact = 50_000 * 1000;
        let error = (counted as f64 - exact as f64).abs() / exact as f64;
        assert!(error < 0.001, "counted {counted}, exact {exact}");
        assert!(counted <= exact);
    }

    #[test]
    fn without_a_horizon_the_entries_are_thinned() {
        let mut window = ArrivalWindow::new();
        for us in 0..(3 * MAX_ENTRIES as u64) {
            window.record(Instant::from_nanos(us * 1000), 10, None);
        }
        assert!(window.len() <= MAX_ENTRIES);
        // The end of a window is exact: the newest entry always counts every byte.
        let now = Instant::from_nanos((3 * MAX_ENTRIES as u64 - 1) * 1000);
        assert_eq!(
            window.bytes_within(now, Duration::from_secs(1)),
            30 * MAX_ENTRIES as u64
        );
    }
}
