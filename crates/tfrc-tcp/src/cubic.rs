//! CUBIC's window (RFC 9438) as Linux's `tcp_cubic.c` computes it, with HyStart.
//!
//! What is in, with the text it follows:
//! - the cubic function, RFC 9438 §4.2: "W_cubic(t) = C * (t - K)^3 + W_max", "K = cubic_root(
//!   (W_max - cwnd_epoch) / C)", C = 0.4; the target is the window one RTT ahead (§4.2:
//!   "W_cubic(t + RTT)"; Linux adds `delay_min`), and each ACK raises the window by
//!   `acked / cnt` with `cnt = cwnd / (target - cwnd)` (Linux `bictcp_update`,
//!   `tcp_cong_avoid_ai`), at most one packet per two acknowledged ("ca->cnt = max(ca->cnt,
//!   2U)", §4.2's 1.5 × cwnd bound) and 5 % per RTT before the first loss ("if
//!   (ca->last_max_cwnd == 0 && ca->cnt > 20) ca->cnt = 20");
//! - the Reno-friendly region, §4.3: "W_est = W_est + α_cubic * segments_acked / cwnd" with
//!   α_cubic = 3 (1 − β_cubic) / (1 + β_cubic), and the window grows at least as W_est does
//!   (Linux `tcp_friendliness`);
//! - multiplicative decrease, §4.6: "ssthresh = flight_size * β_cubic", β_cubic = 0.7, at least
//!   2 packets, taken from the window as Linux does (`cubictcp_recalc_ssthresh`: "max((
//!   tcp_snd_cwnd(tp) * beta) / BICTCP_BETA_SCALE, 2U)");
//! - fast convergence, §4.7: "if cwnd < W_max ... W_max = cwnd * (1 + β_cubic) / 2";
//! - a timeout, §4.8 and Linux `cubictcp_state(TCP_CA_Loss)`: ssthresh as above, then every
//!   CUBIC variable is reset (W_max and the minimum delay included) and HyStart starts again;
//! - HyStart (Ha and Rhee 2008, Linux's default `hystart_detect = HYSTART_ACK_TRAIN |
//!   HYSTART_DELAY`, from 16 packets): slow start ends when a round's ACK train spans half the
//!   minimum delay, or when the smallest of a round's first 8 RTT samples exceeds the minimum
//!   delay by `clamp(delay_min / 8, 4 ms, 16 ms)`.
//!
//! What is not: RFC 9406 HyStart++ (Linux does not run it; this follows Linux), the per-jiffy
//! throttling of the `cnt` computation (recomputed on every ACK here: time is continuous), the
//! idle restart (`CA_EVENT_TX_START`: the simulator's bulk senders are never idle), and
//! Linux's 10-bit fixed-point arithmetic (floating point here; β is 0.7 rather than 717/1024,
//! C is 0.4 rather than 410/1024).

use core::time::Duration;

use tfrc_proto::Instant;

/// RFC 9438 §5: "C SHOULD be set to 0.4".
const C: f64 = 0.4;
/// RFC 9438 §4.6: "β_cubic SHOULD be set to 0.7".
const BETA: f64 = 0.7;
/// RFC 9438 §4.3: α_cubic = 3 (1 − β_cubic) / (1 + β_cubic).
const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);
/// Linux `hystart_low_window`: HyStart acts from this window on.
const HYSTART_LOW_WINDOW: f64 = 16.0;
/// Linux `hystart_ack_delta_us`: ACKs this close together belong to one train.
const HYSTART_ACK_DELTA: Duration = Duration::from_millis(2);
/// Linux `HYSTART_MIN_SAMPLES`: RTT samples per round before the delay test.
const HYSTART_MIN_SAMPLES: u32 = 8;
/// Linux `HYSTART_DELAY_MIN`, `HYSTART_DELAY_MAX`: bounds of the delay increase that ends
/// slow start.
const HYSTART_DELAY_MIN: Duration = Duration::from_millis(4);
const HYSTART_DELAY_MAX: Duration = Duration::from_millis(16);
/// ns-3.37 `TcpCubic`'s "HyStartDelayMax" ("TimeValue(MilliSeconds(1000))"); its minimum is
/// Linux's 4 ms.
const NS3_HYSTART_DELAY_MAX: Duration = Duration::from_millis(1000);
/// Linux `cubictcp_acked`: delay samples are discarded for a second after an epoch starts
/// ("if (ca->epoch_start && (s32)(tcp_jiffies32 - ca->epoch_start) < HZ) return;").
const SAMPLE_PAUSE: Duration = Duration::from_secs(1);
/// ns-3.37 `TcpCubic`'s "CubicDelta": "Delta Time to wait after fast recovery before
/// adjusting param", "TimeValue(MilliSeconds(10))".
const NS3_SAMPLE_PAUSE: Duration = Duration::from_millis(10);

/// CUBIC's state (Linux `struct bictcp`).
#[derive(Clone, Debug)]
pub(crate) struct Cubic {
    hystart: bool,
    /// ns-3.37's `TcpCubic` congestion avoidance instead of Linux's
    /// ([`crate::SenderConfig::ns3_cubic_growth`]).
    ns3_growth: bool,
    /// Under `ns3_growth`, the packets acknowledged towards the next one-packet step
    /// (ns-3 `m_cWndCnt`, never reset, as ns-3 keeps it across epochs).
    step_credit: f64,
    /// ns-3.37's HyStart thresholds and sample pause instead of Linux's
    /// ([`crate::SenderConfig::ns3_hystart`]).
    ns3_hystart: bool,
    /// Packets acknowledged per packet of window growth (Linux `cnt`).
    count: f64,
    /// W_max (Linux `last_max_cwnd`); 0 before the first reduction.
    max_window: f64,
    /// The plateau of the current epoch (Linux `bic_origin_point`).
    origin: f64,
    /// K in seconds (Linux `bic_K`).
    k: f64,
    /// Smallest RTT sample (Linux `delay_min`).
    delay_min: Option<Duration>,
    /// Start of the current congestion-avoidance epoch (Linux `epoch_start`).
    epoch_start: Option<Instant>,
    /// Packets acknowledged in the epoch, for W_est (Linux `ack_cnt`).
    acked_in_epoch: f64,
    /// W_est, the window Reno would have (Linux `tcp_cwnd`).
    reno_window: f64,
    /// HyStart found the end of slow start (Linux `found`).
    found: bool,
    /// Start of the current HyStart round (Linux `round_start`).
    round_start: Instant,
    /// The round ends when this packet is acknowledged (Linux `end_seq`).
    round_end: u64,
    /// Last ACK of the current train (Linux `last_ack`).
    last_ack: Instant,
    /// Smallest RTT of the round's first samples (Linux `curr_rtt`).
    round_min_rtt: Option<Duration>,
    /// Samples taken in the round (Linux `sample_cnt`).
    samples: u32,
}

impl Cubic {
    pub(crate) fn new(hystart: bool) -> Self {
        Self {
            hystart,
            ns3_growth: false,
            step_credit: 0.0,
            ns3_hystart: false,
            count: 0.0,
            max_window: 0.0,
            origin: 0.0,
            k: 0.0,
            delay_min: None,
            epoch_start: None,
            acked_in_epoch: 0.0,
            reno_window: 0.0,
            found: false,
            round_start: Instant::ZERO,
            round_end: 0,
            last_ack: Instant::ZERO,
            round_min_rtt: None,
            samples: 0,
        }
    }

    /// The same with ns-3.37's congestion avoidance when `ns3_growth` is set.
    pub(crate) fn with_ns3_growth(hystart: bool, ns3_growth: bool) -> Self {
        Self {
            ns3_growth,
            ..Self::new(hystart)
        }
    }

    /// The same with ns-3.37's HyStart when `ns3_hystart` is set.
    pub(crate) fn with_ns3_hystart(mut self, ns3_hystart: bool) -> Self {
        self.ns3_hystart = ns3_hystart;
        self
    }

    /// W_max, the window at the last reduction (0 before any).
    pub(crate) fn max_window(&self) -> f64 {
        self.max_window
    }

    /// Linux `cubictcp_acked`: an RTT sample of an ACK at `now`, while the window is `window`,
    /// the cumulative ACK is at `unacknowledged` and the next new packet is `next_new`.
    /// Returns the slow-start threshold HyStart sets when it finds the end of slow start.
    pub(crate) fn on_rtt_sample(
        &mut self,
        now: Instant,
        rtt: Duration,
        (window, in_slow_start): (f64, bool),
        (unacknowledged, next_new): (u64, u64),
    ) -> Option<f64> {
        // "Discard delay samples right after fast recovery"
        let pause = if self.ns3_hystart {
            NS3_SAMPLE_PAUSE
        } else {
            SAMPLE_PAUSE
        };
        if self
            .epoch_start
            .is_some_and(|start| now.saturating_duration_since(start) < pause)
        {
            return None;
        }
        let delay = rtt.max(Duration::from_micros(1));
        if self.delay_min.is_none_or(|min| delay < min) {
            self.delay_min = Some(delay);
        }
        if self.found || !in_slow_start || !self.hystart {
            return None;
        }
        self.hystart_update(now, delay, window, (unacknowledged, next_new))
    }

    /// Linux `hystart_update`.
    fn hystart_update(
        &mut self,
        now: Instant,
        delay: Duration,
        window: f64,
        (unacknowledged, next_new): (u64, u64),
    ) -> Option<f64> {
        // "if (after(tp->snd_una, ca->end_seq)) bictcp_hystart_reset(sk);"
        if unacknowledged > self.round_end {
            self.reset_round(now, next_new);
        }
        if window < HYSTART_LOW_WINDOW {
            return None;
        }
        let delay_min = self.delay_min.unwrap_or(delay);
        // ACK-train detection: "Hystart ack train triggers if we get ack past ca->delay_min/2"
        // (the sender is not paced, so the threshold is halved); ns-3.37 `HystartUpdate`: "if
        // ((now - m_roundStart) > m_delayMin)".
        let train = if self.ns3_hystart {
            delay_min
        } else {
            delay_min / 2
        };
        if now.saturating_duration_since(self.last_ack) <= HYSTART_ACK_DELTA {
            self.last_ack = now;
            if now.saturating_duration_since(self.round_start) > train {
                self.found = true;
                return Some(window);
            }
        }
        // Delay detection: "obtain the minimum delay of more than sampling packets".
        self.round_min_rtt = Some(self.round_min_rtt.map_or(delay, |min| min.min(delay)));
        if self.samples < HYSTART_MIN_SAMPLES {
            self.samples += 1;
        } else {
            // Linux: "HYSTART_DELAY_THRESH(ca->delay_min >> 3)"; ns-3.37: "if (m_currRtt >
            // m_delayMin + HystartDelayThresh(m_delayMin))", the minimum delay itself clamped.
            let threshold = if self.ns3_hystart {
                delay_min.clamp(HYSTART_DELAY_MIN, NS3_HYSTART_DELAY_MAX)
            } else {
                (delay_min / 8).clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)
            };
            if self
                .round_min_rtt
                .is_some_and(|current| current > delay_min + threshold)
            {
                self.found = true;
                return Some(window);
            }
        }
        None
    }

    /// Linux `bictcp_hystart_reset`.
    fn reset_round(&mut self, now: Instant, next_new: u64) {
        self.round_start = now;
        self.last_ack = now;
        self.round_end = next_new;
        self.round_min_rtt = None;
        self.samples = 0;
    }

    /// Congestion avoidance for an ACK of `acked` packets at `now` (Linux `bictcp_update` and
    /// `tcp_cong_avoid_ai`): the window after it.
    pub(crate) fn congestion_avoidance(&mut self, now: Instant, window: f64, acked: f64) -> f64 {
        self.acked_in_epoch += acked;
        let epoch_start = match self.epoch_start {
            Some(start) => start,
            None => {
                // "record beginning"; "syn with cubic".
                self.epoch_start = Some(now);
                self.acked_in_epoch = acked;
                self.reno_window = window;
                if self.max_window <= window {
                    self.k = 0.0;
                    self.origin = window;
                } else {
                    // RFC 9438 Eq. 2: K = cubic_root((W_max − cwnd_epoch) / C).
                    self.k = ((self.max_window - window) / C).cbrt();
                    self.origin = self.max_window;
                }
                now
            }
        };
        // RFC 9438 §4.2: the target is W_cubic(t + RTT) (Linux: t + delay_min).
        let t = now.saturating_duration_since(epoch_start) + self.delay_min.unwrap_or_default();
        if self.ns3_growth {
            return self.ns3_congestion_avoidance(t, window, acked);
        }
        let offset = t.as_secs_f64() - self.k;
        let target = self.origin + C * offset * offset * offset;
        self.count = if target > window {
            window / (target - window)
        } else {
            // "very small increment"
            100.0 * window
        };
        if self.max_window == 0.0 && self.count > 20.0 {
            self.count = 20.0;
        }
        // The Reno-friendly region (RFC 9438 §4.3, Linux `tcp_friendliness`).
        self.reno_window += ALPHA * acked / window;
        if self.reno_window > window {
            let max_count = window / (self.reno_window - window);
            self.count = self.count.min(max_count);
        }
        self.count = self.count.max(2.0);
        window + acked / self.count
    }

    /// ns-3.37's `TcpCubic::IncreaseWindow` above ssthresh with its `Update`: the same cubic
    /// function in whole packets ("uint32_t segCwnd = tcb->GetCwndInSegments()", `delta =
    /// m_c * std::pow(offs, 3)` into an integer, "cnt = segCwnd / (bicTarget - segCwnd)"),
    /// with no Reno-friendly region (ns-3.37's `TcpCubic` has none), and at most one packet
    /// per ACK: "m_cWndCnt += segmentsAcked; ... if (m_cWndCnt >= cnt) { tcb->m_cWnd +=
    /// tcb->m_segmentSize; m_cWndCnt -= cnt; }".
    fn ns3_congestion_avoidance(&mut self, t: Duration, window: f64, acked: f64) -> f64 {
        let segments = window.floor();
        let offset = t.as_secs_f64() - self.k;
        let delta = (C * offset.abs().powi(3)).floor();
        let target = if offset < 0.0 {
            (self.origin.floor() - delta).max(0.0)
        } else {
            self.origin.floor() + delta
        };
        let mut count = if target > segments {
            (segments / (target - segments)).floor()
        } else {
            100.0 * segments
        };
        if self.max_window == 0.0 && count > 20.0 {
            count = 20.0;
        }
        self.count = count.max(2.0);
        self.step_credit += acked;
        if self.step_credit >= self.count {
            self.step_credit -= self.count;
            window + 1.0
        } else {
            window
        }
    }

    /// A loss detected by duplicate ACKs or SACK while the window is `window`: the new
    /// slow-start threshold (Linux `cubictcp_recalc_ssthresh`), which is also the window once
    /// the recovery ends.
    pub(crate) fn on_congestion_event(&mut self, window: f64) -> f64 {
        self.epoch_start = None;
        // RFC 9438 §4.7 fast convergence.
        self.max_window = if window < self.max_window {
            window * (1.0 + BETA) / 2.0
        } else {
            window
        };
        (window * BETA).max(2.0)
    }

    /// A retransmission timeout while the window is `window`: the slow-start threshold, after
    /// which CUBIC starts over (Linux `cubictcp_state(TCP_CA_Loss)`: `bictcp_reset` and
    /// `bictcp_hystart_reset`).
    pub(crate) fn on_timeout(&mut self, window: f64) -> f64 {
        let threshold = self.on_congestion_event(window);
        self.restart_epoch();
        threshold
    }

    /// Linux `cubictcp_state` on entering `TCP_CA_Loss`, at every timeout: "bictcp_reset(ca);
    /// bictcp_hystart_reset(sk);", W_max, the epoch and HyStart's state forgotten.
    pub(crate) fn restart_epoch(&mut self) {
        *self = Self {
            step_credit: self.step_credit,
            ..Self::with_ns3_growth(self.hystart, self.ns3_growth)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(millis: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(millis)
    }

    #[test]
    fn reduction_is_beta_with_fast_convergence() {
        let mut cubic = Cubic::new(true);
        // RFC 9438 §4.6: ssthresh = 0.7 cwnd; W_max = cwnd the first time.
        assert!((cubic.on_congestion_event(100.0) - 70.0).abs() < 1e-9);
        assert_eq!(cubic.max_window(), 100.0);
        // §4.7: a loss below W_max remembers W_max = cwnd (1 + β) / 2.
        assert!((cubic.on_congestion_event(80.0) - 56.0).abs() < 1e-9);
        assert!((cubic.max_window() - 68.0).abs() < 1e-9);
        // At least two packets.
        assert_eq!(cubic.on_congestion_event(2.0), 2.0);
    }

    #[test]
    fn window_follows_the_cubic_function_and_reaches_w_max_after_k() {
        let mut cubic = Cubic::new(false);
        let rtt = Duration::from_millis(100);
        cubic.delay_min = Some(rtt);
        let threshold = cubic.on_congestion_event(100.0);
        let mut window = threshold;
        // K = cbrt((100 − 70) / 0.4) = 4.217 s. Drive one ACK per packet, one window per RTT.
        let k = (30.0f64 / C).cbrt();
        let mut now = at(0);
        let mut window_at_k = None;
        while now < at(8000) {
            let acks = window.floor() as u64;
            for _ in 0..acks {
                window = cubic.congestion_avoidance(now, window, 1.0);
            }
            now += rtt;
            if window_at_k.is_none() && now.saturating_duration_since(at(0)).as_secs_f64() >= k {
                window_at_k = Some(window);
            }
        }
        // Concave then convex: the plateau at W_max = 100 is reached around K (the target is
        // one RTT ahead), within a few packets.
        let plateau = window_at_k.unwrap();
        assert!((plateau - 100.0).abs() < 4.0, "window at K: {plateau}");
        // At 8 s: W_cubic(8.1) = 100 + 0.4 (8.1 − 4.217)^3 = 123.4.
        assert!((window - 123.4).abs() < 6.0, "window at 8 s: {window}");
    }

    #[test]
    fn growth_is_at_most_one_packet_per_two_acked() {
        let mut cubic = Cubic::new(false);
        cubic.on_congestion_event(100.0);
        // The epoch starts at 0 with a window of 7 (K = 6.15 s); 20 s later the cubic target
        // is far above the window, and Linux's "ca->cnt = max(ca->cnt, 2U)" caps the growth.
        let _ = cubic.congestion_avoidance(at(0), 7.0, 1.0);
        let window = cubic.congestion_avoidance(at(20_000), 7.0, 1.0);
        assert!((window - 7.5).abs() < 1e-9, "{window}");
    }

    #[test]
    fn reno_friendly_region_grows_like_reno_with_alpha() {
        // Small window and short RTT: the cubic function is flat, W_est leads.
        let mut cubic = Cubic::new(false);
        cubic.delay_min = Some(Duration::from_millis(1));
        let mut window = cubic.on_congestion_event(20.0);
        let start = window;
        let mut now = at(0);
        for _ in 0..10 {
            for _ in 0..window.floor() as u64 {
                window = cubic.congestion_avoidance(now, window, 1.0);
            }
            now += Duration::from_millis(1);
        }
        // About α = 0.53 packet per RTT over 10 RTTs.
        let growth = (window - start) / 10.0;
        assert!((growth - ALPHA).abs() < 0.15, "growth per RTT {growth}");
    }

    #[test]
    fn hystart_delay_detection_ends_slow_start() {
        let mut cubic = Cubic::new(true);
        let base = Duration::from_millis(100);
        // Round 1 at the base RTT sets delay_min; round 2's RTTs are 20 ms higher (above
        // delay_min + clamp(12.5 ms, 4, 16) = 116 ms).
        for index in 0..10 {
            let found = cubic.on_rtt_sample(at(index * 10), base, (20.0, true), (index + 1, 100));
            assert_eq!(found, None);
        }
        let mut found = None;
        for index in 0..10 {
            let now = at(200 + index * 10);
            found = found.or(cubic.on_rtt_sample(
                now,
                base + Duration::from_millis(20),
                (32.0, true),
                (101 + index, 200),
            ));
        }
        assert_eq!(found, Some(32.0));
    }

    #[test]
    fn hystart_ack_train_ends_slow_start() {
        let mut cubic = Cubic::new(true);
        let rtt = Duration::from_millis(40);
        // ACKs 1 ms apart for a round: the train passes delay_min / 2 = 20 ms after 21 ACKs.
        let mut found_at = None;
        for index in 0..40u64 {
            if let Some(window) =
                cubic.on_rtt_sample(at(index), rtt, (20.0, true), (index + 1, 1000))
            {
                found_at = Some((index, window));
                break;
            }
        }
        assert_eq!(found_at, Some((21, 20.0)));
    }

    #[test]
    fn ns3_hystart_waits_for_a_train_of_the_whole_minimum_delay() {
        // ns-3.37 `HystartUpdate`: "if ((now - m_roundStart) > m_delayMin)"; Linux's unpaced
        // train ends at half of it (21 ACKs 1 ms apart for a 40 ms delay, as above).
        let mut cubic = Cubic::new(true).with_ns3_hystart(true);
        let rtt = Duration::from_millis(40);
        let found_at = (0..80u64).find_map(|index| {
            cubic
                .on_rtt_sample(at(index), rtt, (20.0, true), (index + 1, 1000))
                .map(|window| (index, window))
        });
        assert_eq!(found_at, Some((41, 20.0)));
    }

    #[test]
    fn ns3_hystart_takes_the_minimum_delay_as_its_margin() {
        // ns-3.37: "if (m_currRtt > m_delayMin + HystartDelayThresh(m_delayMin))", the margin
        // the minimum delay clamped to [4 ms, 1 s]; Linux's is clamp(delay_min / 8, 4, 16 ms).
        // Samples 20 ms above a 100 ms minimum end Linux's slow start, not ns-3's; 120 ms above
        // end both.
        for (ns3, rise, ends) in [(false, 20, true), (true, 20, false), (true, 120, true)] {
            let mut cubic = Cubic::new(true).with_ns3_hystart(ns3);
            let base = Duration::from_millis(100);
            // ACKs 10 ms apart: no train; round 1 sets delay_min, round 2 is `rise` ms higher.
            for index in 0..10 {
                let now = at(index * 10);
                assert_eq!(
                    cubic.on_rtt_sample(now, base, (20.0, true), (index + 1, 100)),
                    None
                );
            }
            let found = (0..10).find_map(|index| {
                let delay = base + Duration::from_millis(rise);
                cubic.on_rtt_sample(
                    at(200 + index * 10),
                    delay,
                    (32.0, true),
                    (101 + index, 200),
                )
            });
            assert_eq!(found.is_some(), ends, "ns3 {ns3}, {rise} ms above");
        }
    }

    #[test]
    fn ns3_hystart_ignores_samples_for_10_ms_after_an_epoch_starts() {
        // ns-3.37 `PktsAcked`: "if (m_epochStart != Time::Min() && (Simulator::Now() -
        // m_epochStart) < m_cubicDelta) return;" with "CubicDelta" 10 ms; Linux waits 1 s.
        for (ns3, taken) in [(true, true), (false, false)] {
            let mut cubic = Cubic::new(true).with_ns3_hystart(ns3);
            cubic.epoch_start = Some(at(1000));
            cubic.on_rtt_sample(at(1020), Duration::from_millis(50), (20.0, false), (1, 2));
            assert_eq!(cubic.delay_min.is_some(), taken, "ns3 {ns3}");
        }
    }

    #[test]
    fn ns3_growth_is_one_packet_per_ack_with_the_rest_carried() {
        // ns-3.37 `TcpCubic::IncreaseWindow`: "m_cWndCnt += segmentsAcked; ... if (m_cWndCnt
        // >= cnt) { tcb->m_cWnd += tcb->m_segmentSize; m_cWndCnt -= cnt; }"; Linux's
        // `tcp_cong_avoid_ai` adds acked / cnt at once.
        let mut ns3 = Cubic::with_ns3_growth(false, true);
        let mut linux = Cubic::new(false);
        // Before any loss cnt is clamped at 20: an ACK of 50 packets.
        let ns3_window = ns3.congestion_avoidance(at(0), 100.0, 50.0);
        let linux_window = linux.congestion_avoidance(at(0), 100.0, 50.0);
        assert_eq!(ns3_window, 101.0);
        assert!(linux_window > 102.0, "{linux_window}");
        // The 30 left over give one more packet on the next ACK, and 11 then stay.
        assert_eq!(ns3.congestion_avoidance(at(1), 101.0, 1.0), 102.0);
        assert_eq!(ns3.congestion_avoidance(at(2), 102.0, 1.0), 102.0);
    }

    #[test]
    fn ns3_growth_has_no_reno_friendly_region() {
        // ns-3.37's `TcpCubic::Update` has no W_est (RFC 9438 §4.3). Above W_max the cubic
        // function stays within a packet of its origin for the first second (0.4 · 1³ < 1,
        // whole packets in ns-3), while Linux's `tcp_friendliness` lets the window grow as
        // Reno's would (α_cubic ≈ 0.53 packets per window of ACKs).
        let mut ns3 = Cubic::with_ns3_growth(false, true);
        let mut linux = Cubic::new(false);
        ns3.on_congestion_event(100.0);
        linux.on_congestion_event(100.0);
        let (mut ns3_window, mut linux_window) = (150.0, 150.0);
        for ack in 0..1000 {
            ns3_window = ns3.congestion_avoidance(at(ack), ns3_window, 1.0);
            linux_window = linux.congestion_avoidance(at(ack), linux_window, 1.0);
        }
        assert_eq!(ns3_window, 150.0);
        assert!(linux_window > 152.0, "{linux_window}");
    }

    #[test]
    fn timeout_forgets_w_max() {
        let mut cubic = Cubic::new(true);
        cubic.on_congestion_event(50.0);
        assert_eq!(cubic.on_timeout(40.0), 28.0);
        assert_eq!(cubic.max_window(), 0.0);
    }
}
