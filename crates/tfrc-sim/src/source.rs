//! Open-loop traffic sources (sans-IO): CBR and on/off sources with ns-2's timing.
//!
//! A source says when it next wants to send ([`TrafficSource::poll_timeout`]) and, when
//! called at or after that time, how many packets to send ([`TrafficSource::handle_timeout`]).
//! The driver creates the packets (ids, bodies) and hands them to the first link.

use core::time::Duration;

use tfrc_proto::time::duration_from_secs;
use tfrc_proto::Instant;

use crate::error::{check_nonzero, ParameterError};
use crate::rng::{element_rng, exponential, pareto, uniform_nonzero, ElementRng};

/// Packets a source emits at one call: `packets` packets of `size_bytes` each.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Burst {
    /// Number of packets to send now (0 if the call was early).
    pub packets: u32,
    /// Size of each packet in bytes.
    pub size_bytes: u32,
}

/// A traffic source driven by time.
pub trait TrafficSource {
    /// When the source next wants to send; `None` once it has stopped for good.
    fn poll_timeout(&self) -> Option<Instant>;

    /// The packets due at or before `now` (all of them, if the call is late).
    fn handle_timeout(&mut self, now: Instant) -> Burst;
}

fn check_window(
    element: &'static str,
    start: Instant,
    stop: Option<Instant>,
) -> Result<(), ParameterError> {
    match stop {
        Some(stop) if stop <= start => Err(ParameterError::new(
            element,
            "stop",
            stop,
            "a time after start",
        )),
        _ => Ok(()),
    }
}

/// Parameters of a [`CbrSource`] (ns-2's `Application/Traffic/CBR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CbrParams {
    /// Sending rate in bits/s (ns-2 `rate_`).
    pub rate_bits_per_second: u64,
    /// Packet size in bytes (ns-2 `packetSize_`; its default is 210).
    pub packet_size: u32,
    /// First packet time.
    pub start: Instant,
    /// No packet at or after this time; `None` = never stops.
    pub stop: Option<Instant>,
    /// Add uniform noise of ±50 % to each interval (ns-2 `random_ 1`).
    pub jitter: bool,
}

/// A constant-bit-rate source. As in ns-2, the first packet leaves at `start`, then one every
/// `8·size / rate`; without jitter, packet `k` leaves exactly at `start + k·8·size/rate`
/// (rounded down to the nanosecond, with no accumulated drift).
#[derive(Debug, Clone)]
pub struct CbrSource {
    params: CbrParams,
    /// Index of the next packet.
    sent: u64,
    next: Option<Instant>,
    rng: ElementRng,
}

impl CbrSource {
    /// A CBR source; `seed` seeds the jitter (unused without jitter).
    pub fn new(params: CbrParams, seed: u64) -> Result<Self, ParameterError> {
        const ELEMENT: &str = "CBR source";
        check_nonzero(ELEMENT, "rate", params.rate_bits_per_second)?;
        check_nonzero(ELEMENT, "packet_size", u64::from(params.packet_size))?;
        check_window(ELEMENT, params.start, params.stop)?;
        Ok(CbrSource {
            params,
            sent: 0,
            next: Some(params.start),
            rng: element_rng(seed),
        })
    }

    /// The parameters.
    pub fn params(&self) -> &CbrParams {
        &self.params
    }

    fn interval_nanos(&self) -> f64 {
        f64::from(self.params.packet_size) * 8e9 / self.params.rate_bits_per_second as f64
    }

    fn schedule_next(&mut self, previous: Instant) {
        let next = if self.params.jitter {
            let factor = 0.5 + uniform_nonzero(&mut self.rng); // uniform in (0.5, 1.5]
            previous + Duration::from_nanos((self.interval_nanos() * factor).round() as u64)
        } else {
            let bits = u128::from(self.params.packet_size) * 8 * u128::from(self.sent);
            let nanos = bits * 1_000_000_000 / u128::from(self.params.rate_bits_per_second);
            self.params.start + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
        };
        self.next = before_stop(self.params.stop, next);
    }
}

/// `at`, unless the source has stopped by then (`stop` is exclusive).
fn before_stop(stop: Option<Instant>, at: Instant) -> Option<Instant> {
    match stop {
        Some(stop) if at >= stop => None,
        _ => Some(at),
    }
}

/// Sends every packet due by `now`: `next` is the next send time and `advance(due)` the one
/// after a packet sent at `due` (`None` once the source stops). At most `u32::MAX` packets per
/// call; the rest stay due.
fn send_due(
    next: &mut Option<Instant>,
    now: Instant,
    mut advance: impl FnMut(Instant) -> Option<Instant>,
) -> u32 {
    let mut packets = 0u32;
    while let Some(due) = *next {
        if due > now || packets == u32::MAX {
            break;
        }
        packets += 1;
        *next = advance(due);
    }
    packets
}

impl TrafficSource for CbrSource {
    fn poll_timeout(&self) -> Option<Instant> {
        self.next
    }

    fn handle_timeout(&mut self, now: Instant) -> Burst {
        let mut next = self.next;
        let packets = send_due(&mut next, now, |due| {
            self.sent += 1;
            self.schedule_next(due);
            self.next
        });
        self.next = next;
        Burst {
            packets,
            size_bytes: self.params.packet_size,
        }
    }
}

/// Distribution of on (burst) and off (idle) periods of an [`OnOffSource`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OnOffDistribution {
    /// Pareto with this shape (> 1), like ns-2's `Application/Traffic/Pareto` (`shape_`,
    /// default 1.5).
    Pareto {
        /// Shape parameter α; the mean is finite only for α > 1.
        shape: f64,
    },
    /// Exponential, like ns-2's `Application/Traffic/Exponential`.
    Exponential,
}

/// Parameters of an [`OnOffSource`]. Defaults are ns-2's: 64 kb/s, 210-byte packets,
/// 500 ms mean burst, 500 ms mean idle, Pareto shape 1.5.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OnOffParams {
    /// Sending rate during bursts in bits/s (ns-2 `rate_`).
    pub rate_bits_per_second: u64,
    /// Packet size in bytes (ns-2 `packetSize_`).
    pub packet_size: u32,
    /// Mean burst duration (ns-2 `burst_time_`).
    pub mean_burst_time: Duration,
    /// Mean idle duration (ns-2 `idle_time_`).
    pub mean_idle_time: Duration,
    /// Distribution of bursts and idle periods.
    pub distribution: OnOffDistribution,
    /// When the source starts (with an idle period, as in ns-2).
    pub start: Instant,
    /// No packet at or after this time; `None` = never stops.
    pub stop: Option<Instant>,
}

impl Default for OnOffParams {
    fn default() -> Self {
        OnOffParams {
            rate_bits_per_second: 64_000,
            packet_size: 210,
            mean_burst_time: Duration::from_millis(500),
            mean_idle_time: Duration::from_millis(500),
            distribution: OnOffDistribution::Pareto { shape: 1.5 },
            start: Instant::ZERO,
            stop: None,
        }
    }
}

/// An on/off source computing its periods exactly as ns-2's `POO_Traffic` (Pareto) and
/// `EXPOO_Traffic` (exponential) do.
///
/// With `interval = 8·size / rate` and `burst_length = mean_burst_time / interval` packets:
/// at the start of each burst the source draws the number of packets in the burst,
/// `max(1, round(X))` with X Pareto of scale `burst_length·(shape−1)/shape` (mean
/// `burst_length`) or exponential of mean `burst_length`, and the idle time before it, Pareto
/// of scale `mean_idle_time·(shape−1)/shape` or exponential of mean `mean_idle_time`. The first
/// packet of a burst leaves `interval + idle` after the previous packet (after `start` for the
/// first burst), the others `interval` apart.
#[derive(Debug, Clone)]
pub struct OnOffSource {
    params: OnOffParams,
    interval: f64,
    burst_length: f64,
    remaining_in_burst: u64,
    next: Option<Instant>,
    rng: ElementRng,
}

impl OnOffSource {
    /// An on/off source; `seed` seeds its burst and idle draws.
    pub fn new(params: OnOffParams, seed: u64) -> Result<Self, ParameterError> {
        const ELEMENT: &str = "on/off source";
        check_nonzero(ELEMENT, "rate", params.rate_bits_per_second)?;
        check_nonzero(ELEMENT, "packet_size", u64::from(params.packet_size))?;
        if params.mean_burst_time.is_zero() {
            return Err(ParameterError::new(
                ELEMENT,
                "burst_time",
                format!("{:?}", params.mean_burst_time),
                "a positive duration",
            ));
        }
        if let OnOffDistribution::Pareto { shape } = params.distribution {
            if !(shape.is_finite() && shape > 1.0) {
                return Err(ParameterError::new(
                    ELEMENT,
                    "shape",
                    shape,
                    "a finite number greater than 1",
                ));
            }
        }
        check_window(ELEMENT, params.start, params.stop)?;
        let interval = f64::from(params.packet_size) * 8.0 / params.rate_bits_per_second as f64;
        let burst_length = params.mean_burst_time.as_secs_f64() / interval;
        let mut source = OnOffSource {
            params,
            interval,
            burst_length,
            remaining_in_burst: 0,
            next: None,
            rng: element_rng(seed),
        };
        let first = source.next_interval();
        source.next = source.within_stop(params.start + first);
        Ok(source)
    }

    /// The parameters.
    pub fn params(&self) -> &OnOffParams {
        &self.params
    }

    /// Mean number of packets per burst (ns-2 `burstlen_`).
    pub fn mean_burst_packets(&self) -> f64 {
        self.burst_length
    }

    /// ns-2's `next_interval`: the gap before the next packet, drawing a new burst and idle
    /// period when the current burst is exhausted.
    fn next_interval(&mut self) -> Duration {
        let mut gap = self.interval;
        if self.remaining_in_burst == 0 {
            let idle_mean = self.params.mean_idle_time.as_secs_f64();
            let (burst, idle) = match self.params.distribution {
                OnOffDistribution::Pareto { shape } => {
                    let factor = (shape - 1.0) / shape;
                    let burst = pareto(&mut self.rng, self.burst_length * factor, shape);
                    let idle = pareto(&mut self.rng, idle_mean * factor, shape);
                    (burst, idle)
                }
                OnOffDistribution::Exponential => {
                    let burst = exponential(&mut self.rng, self.burst_length);
                    let idle = exponential(&mut self.rng, idle_mean);
                    (burst, idle)
                }
            };
            // `as` saturates huge draws; a burst has at least one packet.
            self.remaining_in_burst = ((burst + 0.5) as u64).max(1);
            gap += idle;
        }
        self.remaining_in_burst -= 1;
        duration_from_secs(gap)
    }

    fn within_stop(&self, at: Instant) -> Option<Instant> {
        before_stop(self.params.stop, at)
    }
}

impl TrafficSource for OnOffSource {
    fn poll_timeout(&self) -> Option<Instant> {
        self.next
    }

    fn handle_timeout(&mut self, now: Instant) -> Burst {
        let mut next = self.next;
        let packets = send_due(&mut next, now, |due| {
            let gap = self.next_interval();
            self.within_stop(due + gap)
        });
        self.next = next;
        Burst {
            packets,
            size_bytes: self.params.packet_size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a source until `end`, returning the send times of its packets.
    fn send_times(source: &mut dyn TrafficSource, end: Instant) -> Vec<Instant> {
        let mut times = Vec::new();
        while let Some(at) = source.poll_timeout() {
            if at > end {
                break;
            }
            let burst = source.handle_timeout(at);
            assert_eq!(
                burst.packets, 1,
                "one packet per timeout when driven on time"
            );
            times.push(at);
        }
        times
    }

    #[test]
    fn validation_names_the_bad_parameter() {
        let cbr = CbrParams {
            rate_bits_per_second: 0,
            packet_size: 1000,
            start: Instant::ZERO,
            stop: None,
            jitter: false,
        };
        assert_eq!(CbrSource::new(cbr, 0).unwrap_err().parameter, "rate");
        let cbr = CbrParams {
            rate_bits_per_second: 1000,
            stop: Some(Instant::ZERO),
            ..cbr
        };
        assert_eq!(CbrSource::new(cbr, 0).unwrap_err().parameter, "stop");
        let pareto = OnOffParams {
            distribution: OnOffDistribution::Pareto { shape: 1.0 },
            ..OnOffParams::default()
        };
        assert_eq!(OnOffSource::new(pareto, 0).unwrap_err().parameter, "shape");
        let no_burst = OnOffParams {
            mean_burst_time: Duration::ZERO,
            ..OnOffParams::default()
        };
        assert_eq!(
            OnOffSource::new(no_burst, 0).unwrap_err().parameter,
            "burst_time"
        );
    }

    #[test]
    fn cbr_sends_at_its_rate_between_start_and_stop() {
        let params = CbrParams {
            rate_bits_per_second: 300_000,
            packet_size: 1000,
            start: Instant::from_secs(30),
            stop: Some(Instant::from_secs(90)),
            jitter: false,
        };
        let mut source = CbrSource::new(params, 0).unwrap();
        let times = send_times(&mut source, Instant::from_secs(200));
        // 300 kb/s of 8000-bit packets = 37.5 packets/s for 60 s.
        assert_eq!(times.len(), 2250);
        assert_eq!(times[0], Instant::from_secs(30));
        // Packet k at start + k·26.666… ms, rounded down: no drift.
        assert_eq!(
            times[3],
            Instant::from_secs(30) + Duration::from_nanos(80_000_000)
        );
        assert_eq!(
            times[1],
            Instant::from_secs(30) + Duration::from_nanos(26_666_666)
        );
        assert!(*times.last().unwrap() < Instant::from_secs(90));
        assert_eq!(source.poll_timeout(), None);
    }

    #[test]
    fn cbr_jitter_keeps_the_mean_rate_and_late_calls_catch_up() {
        let params = CbrParams {
            rate_bits_per_second: 800_000,
            packet_size: 1000,
            start: Instant::ZERO,
            stop: None,
            jitter: true,
        };
        let mut source = CbrSource::new(params, 3).unwrap();
        let times = send_times(&mut source, Instant::from_secs(100));
        let expected = 100.0 * 100.0;
        assert!(
            (times.len() as f64 / expected - 1.0).abs() < 0.02,
            "{}",
            times.len()
        );
        let gaps: Vec<_> = times.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps
            .iter()
            .all(|g| *g >= Duration::from_millis(5) && *g <= Duration::from_millis(15)));
        assert!(gaps.iter().any(|g| *g != gaps[0]));

        let mut late = CbrSource::new(
            CbrParams {
                jitter: false,
                ..params
            },
            0,
        )
        .unwrap();
        let burst = late.handle_timeout(Instant::from_millis(95));
        assert_eq!(
            burst,
            Burst {
                packets: 10,
                size_bytes: 1000
            }
        );
        assert_eq!(late.poll_timeout(), Some(Instant::from_millis(100)));
    }

    /// Mean burst length, idle time and rate of on/off sources match their parameters.
    fn check_on_off(distribution: OnOffDistribution, tolerance: f64) {
        let params = OnOffParams {
            rate_bits_per_second: 400_000,
            packet_size: 500,
            mean_burst_time: Duration::from_millis(200),
            mean_idle_time: Duration::from_millis(300),
            distribution,
            start: Instant::ZERO,
            stop: None,
        };
        let mut source = OnOffSource::new(params, 17).unwrap();
        assert!((source.mean_burst_packets() - 20.0).abs() < 1e-9);
        let times = send_times(&mut source, Instant::from_secs(2_000));
        let interval = Duration::from_millis(10);
        let (mut bursts, mut idle_total) = (1u64, Duration::ZERO);
        for pair in times.windows(2) {
            let gap = pair[1] - pair[0];
            if gap > interval + Duration::from_micros(1) {
                bursts += 1;
                idle_total += gap - interval;
            }
        }
        let packets_per_burst = times.len() as f64 / bursts as f64;
        let mean_idle = idle_total.as_secs_f64() / (bursts - 1) as f64;
        // Bursts are at least one packet and rounded, so allow for that in the mean.
        assert!(
            (packets_per_burst / 20.0 - 1.0).abs() < tolerance,
            "{distribution:?}: {packets_per_burst} packets per burst"
        );
        assert!(
            (mean_idle / 0.3 - 1.0).abs() < tolerance,
            "{distribution:?}: mean idle {mean_idle}"
        );
        // Average rate = peak × on / (on + off) = 400 kb/s × 0.2 / 0.5.
        let rate = times.len() as f64 * 4000.0 / 2000.0;
        assert!(
            (rate / 160_000.0 - 1.0).abs() < tolerance,
            "{distribution:?}: {rate}"
        );
    }

    #[test]
    fn exponential_on_off_matches_its_means() {
        check_on_off(OnOffDistribution::Exponential, 0.05);
    }

    #[test]
    fn pareto_on_off_matches_its_means() {
        // Shape 2.5 has finite variance, so 2000 s of traffic estimate the means well.
        check_on_off(OnOffDistribution::Pareto { shape: 2.5 }, 0.08);
    }

    #[test]
    fn on_off_starts_with_an_idle_period_and_stops() {
        let params = OnOffParams {
            start: Instant::from_secs(10),
            stop: Some(Instant::from_secs(20)),
            distribution: OnOffDistribution::Exponential,
            ..OnOffParams::default()
        };
        let mut source = OnOffSource::new(params, 1).unwrap();
        let first = source.poll_timeout().unwrap();
        // ns-2 waits interval + idle before the first packet (210 B at 64 kb/s = 26.25 ms).
        assert!(first >= Instant::from_secs(10) + Duration::from_micros(26_250));
        let times = send_times(&mut source, Instant::from_secs(100));
        assert!(times.iter().all(|t| *t < Instant::from_secs(20)));
        assert_eq!(source.poll_timeout(), None);
    }

    #[test]
    fn same_seed_same_traffic() {
        let run = |seed| {
            let mut source = OnOffSource::new(OnOffParams::default(), seed).unwrap();
            send_times(&mut source, Instant::from_secs(60))
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }
}
