//! Round-trip time estimation and the retransmission timeout of RFC 6298 §2, in integer
//! nanoseconds.

use core::time::Duration;

/// SRTT and RTTVAR, and the retransmission timeout derived from them.
#[derive(Clone, Debug)]
pub(crate) struct RttEstimator {
    smoothed: Option<Duration>,
    variation: Duration,
    latest: Option<Duration>,
    initial_rto: Duration,
    min_rto: Duration,
    max_rto: Duration,
    clock_granularity: Duration,
    /// Linux's floor on the variation term instead of on the whole RTO (see
    /// [`RttEstimator::base_rto`]).
    linux: bool,
}

fn nanos(duration: Duration) -> u128 {
    duration.as_nanos()
}

fn from_nanos(nanos: u128) -> Duration {
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

impl RttEstimator {
    pub(crate) fn new(
        initial_rto: Duration,
        min_rto: Duration,
        max_rto: Duration,
        clock_granularity: Duration,
    ) -> Self {
        Self {
            smoothed: None,
            variation: Duration::ZERO,
            latest: None,
            initial_rto,
            min_rto,
            max_rto,
            clock_granularity,
            linux: false,
        }
    }

    /// Linux's RTO: the minimum RTO bounds the variation term, not the sum (see
    /// [`RttEstimator::base_rto`]).
    pub(crate) fn with_linux_rto(mut self) -> Self {
        self.linux = true;
        self
    }

    /// Takes one RTT measurement `sample`.
    pub(crate) fn on_sample(&mut self, sample: Duration) {
        self.latest = Some(sample);
        match self.smoothed {
            // RFC 6298 §2.2: SRTT <- R, RTTVAR <- R/2.
            None => {
                self.smoothed = Some(sample);
                self.variation = sample / 2;
            }
            // RFC 6298 §2.3: RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|, then
            // SRTT <- 7/8 SRTT + 1/8 R' (RTTVAR uses the old SRTT).
            Some(smoothed) => {
                let deviation = nanos(smoothed).abs_diff(nanos(sample));
                self.variation = from_nanos((3 * nanos(self.variation) + deviation) / 4);
                self.smoothed = Some(from_nanos((7 * nanos(smoothed) + nanos(sample)) / 8));
            }
        }
    }

    /// The timeout before backoff: RTO = SRTT + max(G, 4·RTTVAR) (RFC 6298 §2.2–2.3), or the
    /// initial RTO without a sample (§2.1), clamped to `[min_rto, max_rto]` (§2.4, §2.5).
    ///
    /// With Linux's RTO (CUBIC and BBR), RTO = SRTT + max(4·RTTVAR, min RTO): Linux
    /// `tcp_rtt_estimator` keeps the variation term at or above `tcp_rto_min` ("tp->rttvar_us =
    /// max(tp->mdev_us, tcp_rto_min_us(sk))", and `mdev_max_us` restarts from `tcp_rto_min_us`
    /// every round trip), and `__tcp_set_rto` adds it to SRTT. Linux's variation is the
    /// largest `mdev` of the last round trip, with a smaller gain when the RTT falls; RTTVAR
    /// here stays RFC 6298's. Without it, an RTT sample on every ACK brings RTTVAR near zero
    /// and the RTO to SRTT + 10 ms, so a retransmission that takes one round trip races the
    /// timer.
    pub(crate) fn base_rto(&self) -> Duration {
        let rto = match self.smoothed {
            None => self.initial_rto,
            Some(smoothed) if self.linux => {
                let variation_term = from_nanos(4 * nanos(self.variation));
                smoothed.saturating_add(variation_term.max(self.min_rto))
            }
            Some(smoothed) => {
                let variation_term = from_nanos(4 * nanos(self.variation));
                smoothed.saturating_add(variation_term.max(self.clock_granularity))
            }
        };
        rto.clamp(self.min_rto, self.max_rto)
    }

    /// The timeout with the backoff factor applied (RFC 6298 §5.5), capped at `max_rto`.
    pub(crate) fn backed_off_rto(&self, backoff: u32) -> Duration {
        self.base_rto()
            .checked_mul(backoff.max(1))
            .unwrap_or(self.max_rto)
            .min(self.max_rto)
    }

    pub(crate) fn smoothed(&self) -> Option<Duration> {
        self.smoothed
    }

    pub(crate) fn variation(&self) -> Option<Duration> {
        self.smoothed.map(|_| self.variation)
    }

    pub(crate) fn latest(&self) -> Option<Duration> {
        self.latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimator() -> RttEstimator {
        RttEstimator::new(
            Duration::from_secs(1),
            Duration::from_millis(200),
            Duration::from_secs(60),
            Duration::from_millis(10),
        )
    }

    #[test]
    fn initial_rto_before_any_sample() {
        // RFC 6298 §2.1: until a measurement is made, RTO is the initial value.
        let rtt = estimator();
        assert_eq!(rtt.base_rto(), Duration::from_secs(1));
        assert_eq!(rtt.smoothed(), None);
        assert_eq!(rtt.variation(), None);
    }

    #[test]
    fn linux_rto_bounds_the_variation_term_not_the_sum() {
        // Steady 100 ms samples: RTTVAR falls to about 0, so RFC 6298 gives
        // max(200 ms, 100 ms + 10 ms) = 200 ms and Linux 100 ms + max(4 RTTVAR, 200 ms).
        let mut rfc = estimator();
        let mut linux = estimator().with_linux_rto();
        for _ in 0..100 {
            rfc.on_sample(Duration::from_millis(100));
            linux.on_sample(Duration::from_millis(100));
        }
        assert_eq!(rfc.base_rto(), Duration::from_millis(200));
        let rto = linux.base_rto();
        assert!(
            rto >= Duration::from_millis(300) && rto < Duration::from_micros(300_001),
            "{rto:?}"
        );
        // A large variation still counts in full: 4 RTTVAR = 200 ms after the first sample.
        let mut linux = estimator().with_linux_rto();
        linux.on_sample(Duration::from_millis(100));
        assert_eq!(linux.base_rto(), Duration::from_millis(300));
        linux.on_sample(Duration::from_millis(500));
        // RTTVAR = 3/4·50 + 1/4·400 = 137.5 ms; SRTT = 150 ms; RTO = 150 + 550 ms.
        assert_eq!(linux.base_rto(), Duration::from_millis(700));
    }

    #[test]
    fn first_and_second_sample() {
        let mut rtt = estimator();
        // RFC 6298 §2.2: SRTT = R, RTTVAR = R/2, RTO = SRTT + max(G, 4 RTTVAR).
        rtt.on_sample(Duration::from_millis(100));
        assert_eq!(rtt.smoothed(), Some(Duration::from_millis(100)));
        assert_eq!(rtt.variation(), Some(Duration::from_millis(50)));
        assert_eq!(rtt.base_rto(), Duration::from_millis(300));
        // RFC 6298 §2.3: RTTVAR = 3/4·50 + 1/4·|100 − 180| = 57.5 ms;
        // SRTT = 7/8·100 + 1/8·180 = 110 ms; RTO = 110 + 230 = 340 ms.
        rtt.on_sample(Duration::from_millis(180));
        assert_eq!(rtt.variation(), Some(Duration::from_micros(57_500)));
        assert_eq!(rtt.smoothed(), Some(Duration::from_millis(110)));
        assert_eq!(rtt.base_rto(), Duration::from_millis(340));
    }

    #[test]
    fn bounds_and_backoff() {
        let mut rtt = estimator();
        // RFC 6298 §2.4: a tiny RTT still gives the minimum RTO.
        for _ in 0..50 {
            rtt.on_sample(Duration::from_millis(1));
        }
        assert_eq!(rtt.base_rto(), Duration::from_millis(200));
        // §5.5: backoff doubles; §2.5: capped at the maximum.
        assert_eq!(rtt.backed_off_rto(2), Duration::from_millis(400));
        assert_eq!(rtt.backed_off_rto(64), Duration::from_millis(12_800));
        assert_eq!(rtt.backed_off_rto(u32::MAX), Duration::from_secs(60));
        // Clock granularity bounds the variance term from below: 1 ms + 10 ms, then min RTO.
        let mut steady = RttEstimator::new(
            Duration::from_secs(1),
            Duration::from_millis(1),
            Duration::from_secs(60),
            Duration::from_millis(10),
        );
        for _ in 0..100 {
            steady.on_sample(Duration::from_millis(1));
        }
        assert_eq!(steady.base_rto(), Duration::from_millis(11));
    }
}
