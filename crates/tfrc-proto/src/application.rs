//! An application that has data at a capped rate (iperf3's `-b`, a media encoder's top rate):
//! one packet of `s` bytes every s / rate, so that above that rate the sender is data-limited
//! and RFC 5348 §4.3's data-limited rules apply. Shared by the simulator and `tfrc send`, so
//! that a capped flow behaves the same in both. Reads no clock: the caller passes the time.

use core::time::Duration;

use crate::time::{duration_from_secs, Instant};

/// When the capped application next has a packet to send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CappedApplication {
    /// One packet's worth of data at the cap: s / rate.
    interval: Duration,
    /// When the next packet's data is there.
    next: Instant,
}

impl CappedApplication {
    /// An application with `packet_size`-byte packets of data at `rate` bytes/s, its first packet
    /// there at `start`. `None` unless the rate is positive and finite.
    pub fn new(packet_size: u32, rate: f64, start: Instant) -> Option<CappedApplication> {
        (rate.is_finite() && rate > 0.0).then(|| CappedApplication {
            interval: duration_from_secs(f64::from(packet_size) / rate),
            next: start,
        })
    }

    /// When the next packet's data is there.
    pub fn next_data(&self) -> Instant {
        self.next
    }

    /// True when a packet's data is there at `now`.
    pub fn has_data(&self, now: Instant) -> bool {
        now >= self.next
    }

    /// One packet's data was sent at `now`. The data keeps its average rate as the core's
    /// schedule does (RFC 5348 §4.6): after a late wake-up up to max(interval, `t_gran`) of it is
    /// waiting, and no more is sent in one burst.
    pub fn consume(&mut self, now: Instant, t_gran: Duration) {
        let credit = self.interval.max(t_gran);
        let nominal = if self.next + credit < now {
            now
        } else {
            self.next
        };
        self.next = nominal + self.interval;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_application_has_one_packet_per_interval() {
        // 1000-byte packets at 100 kB/s: one every 10 ms.
        let mut app = CappedApplication::new(1000, 100_000.0, Instant::ZERO).unwrap();
        assert!(app.has_data(Instant::ZERO));
        app.consume(Instant::ZERO, Duration::ZERO);
        assert_eq!(app.next_data(), Instant::from_millis(10));
        assert!(!app.has_data(Instant::from_millis(9)));
        // Woken 15 ms late with t_gran 1 ms: the 10 ms credit bound restarts from now.
        app.consume(Instant::from_millis(35), Duration::from_millis(1));
        assert_eq!(app.next_data(), Instant::from_millis(45));
        // 5 ms late (within the credit): the schedule keeps its nominal times.
        app.consume(Instant::from_millis(50), Duration::from_millis(1));
        assert_eq!(app.next_data(), Instant::from_millis(55));
        assert!(CappedApplication::new(1000, 0.0, Instant::ZERO).is_none());
        assert!(CappedApplication::new(1000, f64::NAN, Instant::ZERO).is_none());
    }
}
