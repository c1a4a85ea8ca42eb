//! The rules of the ns-2 profile ([`crate::Profile::Ns2`]) that have no RFC 5348 counterpart:
//! ns-2.35's sender rate state machine (`tcp/tfrc.cc`) and its TCP-style RTO estimator.
//!
//! The [`crate::Sender`] keeps one `Ns2SenderState` under the ns-2 profile and calls these
//! rules where the RFC profile runs RFC 5348 §4.3/§4.4; everything else (wire format, RTT
//! samples, validation, gTFRC, Veno) is shared. Each rule names the ns-2 function it follows.

use core::time::Duration;

use crate::deque::Deque;
use crate::time::{duration_from_secs, secs, Instant};

/// `InitRate_`: the sending rate before the first feedback, bytes/s (ns-2.35 `ns-default.tcl`).
pub const INITIAL_RATE: f64 = 300.0;
/// `df_`: weight of the old value in the RTT and √RTT averages (RFC 5348 suggests 0.9).
pub const RTT_FILTER: f64 = 0.95;
/// `tcp_tick_`: granularity of the TCP-style RTO estimator.
pub const TCP_TICK: Duration = Duration::from_millis(100);
/// `ssmult_`: slow-start rate multiplier per RTT.
pub const SLOW_START_MULTIPLIER: f64 = 2.0;
/// `SMALLFLOAT` of `tcp/tfrc.h`.
const SMALL_FLOAT: f64 = 1e-7;
/// `T_SRTT_BITS`: srtt is kept in ticks × 2^3.
const SRTT_BITS: u32 = 3;
/// `T_RTTVAR_BITS`: rttvar is kept in ticks × 2^2.
const RTTVAR_BITS: u32 = 2;
/// `rttvar_exp_`: the RTO is srtt + 2^2·rttvar.
const RTTVAR_EXPONENT: u32 = 2;
/// Largest RTT sample the estimator takes, in ticks (about 28 hours); bounds hostile input.
const MAX_TICKS: i64 = 1_000_000;

/// Initial window in packets by RFC 3390 as ns-2.35 computes it (`TfrcAgent::rfc3390()`,
/// `rate_init_option_ 2`): 4 packets for s ≤ 1095 bytes, 3 below 2190, else 2.
pub fn rfc3390_packets(s: f64) -> f64 {
    if s <= 1095.0 {
        4.0
    } else if s < 2190.0 {
        3.0
    } else {
        2.0
    }
}

/// ns-2's TCP-style retransmission timeout estimator (`TfrcAgent::update_rtt()`), whose value
/// `tzero_` is the t_RTO of the ns-2 equation: Jacobson's srtt/rttvar in 100 ms ticks with the
/// fixed-point shifts of TCP, RTO = srtt + 4·rttvar (ticks), no minimum (`minrto_ 0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpRtoEstimator {
    /// srtt in ticks × 8 (`t_srtt_`); 0 before the first sample (`srtt_init_ 0`).
    scaled_srtt: i64,
    /// rttvar in ticks × 4 (`t_rttvar_`).
    scaled_rttvar: i64,
    /// The RTO in ticks (`t_rtxcur_` / `tcp_tick_`); 0 before the first sample.
    rto_ticks: i64,
}

impl TcpRtoEstimator {
    /// Takes one RTT sample.
    pub fn update(&mut self, sample: Duration) {
        let ticks = ((secs(sample) / secs(TCP_TICK) + 0.5).floor() as i64).clamp(1, MAX_TICKS);
        if self.scaled_srtt != 0 {
            let mut delta = ticks - (self.scaled_srtt >> SRTT_BITS);
            self.scaled_srtt += delta;
            if self.scaled_srtt <= 0 {
                self.scaled_srtt = 1;
            }
            delta = delta.abs() - (self.scaled_rttvar >> RTTVAR_BITS);
            self.scaled_rttvar += delta;
            if self.scaled_rttvar <= 0 {
                self.scaled_rttvar = 1;
            }
        } else {
            self.scaled_srtt = ticks << SRTT_BITS;
            self.scaled_rttvar = ticks << (RTTVAR_BITS - 1);
        }
        self.rto_ticks = ((self.scaled_rttvar << (RTTVAR_EXPONENT + SRTT_BITS - RTTVAR_BITS))
            + self.scaled_srtt)
            >> SRTT_BITS;
    }

    /// The current RTO (`tzero_`), zero before any sample.
    pub fn timeout(&self) -> Duration {
        TCP_TICK * u32::try_from(self.rto_ticks).unwrap_or(u32::MAX)
    }

    /// Smoothed RTT in whole ticks (srtt >> 3), for tests and logs.
    pub fn srtt_ticks(&self) -> i64 {
        self.scaled_srtt >> SRTT_BITS
    }
}

/// The ns-2 sender's rate state (the `TfrcAgent` members of the same names).
#[derive(Debug, Clone)]
pub(crate) struct Ns2SenderState {
    /// `rate_change_ == SLOW_START`.
    pub slow_start: bool,
    /// `oldrate_`: the rate slow start is creeping up from.
    pub old_rate: f64,
    /// `delta_`: per-packet increment of `old_rate` during slow start.
    pub delta: f64,
    /// `last_change_`: time of the last rate change.
    pub last_change: Instant,
    /// `round_id`: feedbacks received plus no-feedback expiries.
    pub round_id: u32,
    /// `maxrate_`: 2·X_recv from the latest feedback (0 before the second).
    pub max_rate: f64,
    /// `ss_maxrate_`: the same bound used in slow start.
    pub slow_start_max_rate: f64,
    /// The TCP-style estimator giving `tzero_`.
    pub rto: TcpRtoEstimator,
    /// `lastlimited_`: when the application last resumed after a data-limited period.
    pub last_limited: Option<Instant>,
    /// `all_idle_`: data-limited at a no-feedback expiry and not resumed since.
    pub all_idle: bool,
    /// `UrgentFlag`: asks the receiver to report at once (until the next feedback).
    pub urgent: bool,
}

impl Ns2SenderState {
    /// The state of `TfrcAgent::start()`.
    pub fn new(now: Instant) -> Self {
        Ns2SenderState {
            slow_start: true,
            old_rate: INITIAL_RATE,
            delta: 0.0,
            last_change: now,
            round_id: 0,
            max_rate: 0.0,
            slow_start_max_rate: 0.0,
            rto: TcpRtoEstimator::default(),
            last_limited: None,
            all_idle: false,
            urgent: true,
        }
    }

    /// `datalimited_ || lastlimited_ > now - 1.5*rtt_`.
    pub fn recently_limited(&self, data_limited: bool, now: Instant, rtt: f64) -> bool {
        data_limited
            || self
                .last_limited
                .is_some_and(|at| at > now.saturating_sub(duration_from_secs(1.5 * rtt)))
    }

    /// True while slow start creeps the packet rate from `old_rate` up to `rate`
    /// (`slow_increase_ 1` in `TfrcAgent::nextpkt()`).
    pub fn slow_increasing(&self, rate: f64) -> bool {
        self.round_id > 2 && self.slow_start && self.old_rate + SMALL_FLOAT < rate
    }

    /// Sets `old_rate`/`delta` for a change from `old` to `new` over one RTT and returns `new`.
    fn change(&mut self, now: Instant, old: f64, new: f64, s: f64, rtt: f64) -> f64 {
        self.old_rate = old;
        self.delta = (new - old) / (new * rtt / s);
        self.last_change = now;
        new
    }

    /// `TfrcAgent::slowstart()`: the new rate after a feedback in slow start (p = 0).
    pub fn slow_start_rate(
        &mut self,
        rate: f64,
        now: Instant,
        s: f64,
        rtt: f64,
        data_limited: bool,
    ) -> f64 {
        let window = rfc3390_packets(s);
        let initial = window * s / rtt;
        if self.round_id <= 1 || (self.round_id == 2 && window > 1.0) {
            // No good receive-rate report yet: at least the initial rate.
            return self.change(now, rate, rate.max(initial), s, rtt);
        }
        let limit = self.slow_start_max_rate;
        if limit <= 0.0 {
            // The receiver saw nothing: back to one packet per RTT.
            self.old_rate = rate;
            self.delta = 0.0;
            self.last_change = now;
            return s / rtt;
        }
        if self.recently_limited(data_limited, now, rtt) && limit < initial {
            // idleFix_: data-limited recently, do not let a small X_recv go below the initial.
            return self.change(now, rate, rate.max(initial), s, rtt);
        }
        if rate < limit && secs(now - self.last_change) > rtt {
            // Time to multiply, bounded by 2·X_recv and at least s/R.
            let new = (SLOW_START_MULTIPLIER * rate).min(limit).max(s / rtt);
            return self.change(now, rate, new, s, rtt);
        }
        if rate > limit {
            self.old_rate = limit / 2.0;
            self.delta = 0.0;
            self.last_change = now;
            return limit / 2.0;
        }
        rate
    }

    /// `TfrcAgent::increase_rate()`: X_calc above the rate after slow start. Adds
    /// s/R·min((now − last_change)/R, 2), capped at min(X_calc, max(2·X_recv, s/R)) (or the
    /// initial rate instead of s/R after a data-limited period).
    pub fn increased_rate(
        &mut self,
        rate: f64,
        x_calc: f64,
        now: Instant,
        s: f64,
        rtt: f64,
        data_limited: bool,
    ) -> f64 {
        let rounds = (secs(now - self.last_change) / rtt).min(2.0);
        let raised = rate + s / rtt * rounds;
        let floor = if self.recently_limited(data_limited, now, rtt) {
            rfc3390_packets(s) * s / rtt
        } else {
            s / rtt
        };
        let cap = self.max_rate.max(floor).min(x_calc);
        self.slow_start = false;
        self.last_change = now;
        raised.min(cap)
    }

    /// `TfrcAgent::decrease_rate()`: X = min(X_calc, max(2·X_recv, s/R)) (`maxHeavyRounds_ 0`
    /// allows no round above the cap).
    pub fn decreased_rate(&mut self, x_calc: f64, now: Instant, s: f64, rtt: f64) -> f64 {
        self.last_change = now;
        x_calc.min(self.max_rate.max(s / rtt))
    }

    /// `TfrcAgent::reduce_rate_on_no_feedback()`: halves the rate unless the sender was
    /// data-limited, in which case it does not go below the RFC 3390 rate; counts a round and
    /// asks for an urgent report.
    pub fn no_feedback_rate(
        &mut self,
        rate: f64,
        s: f64,
        rtt: Option<f64>,
        data_limited: bool,
    ) -> f64 {
        let new = if !self.all_idle && !data_limited {
            rate * 0.5
        } else {
            match rtt {
                Some(rtt) if rtt > 0.0 => {
                    let initial = rfc3390_packets(s) * s / rtt;
                    if rate > 2.0 * initial {
                        rate * 0.5
                    } else if rate > initial {
                        initial
                    } else {
                        rate
                    }
                }
                // ns-2 divides by rtt_ = 0 here: neither test passes and the rate stays.
                _ => rate,
            }
        };
        self.urgent = true;
        self.round_id = self.round_id.wrapping_add(1);
        if data_limited {
            self.all_idle = true;
        }
        new
    }
}

/// Most arrival times the ns-2 receiver keeps for its "packets in the last RTT" count.
const MAX_RECENT_ARRIVALS: usize = 1 << 16;

/// The ns-2 receiver's extra state (the `TfrcSinkAgent` members it stands for are named).
#[derive(Debug, Clone, Default)]
pub(crate) struct Ns2ReceiverState {
    /// `round_id` of the latest new data packet.
    pub round: u16,
    /// `lastloss_round_id`: round of the packet that revealed the latest loss event.
    pub last_loss_round: Option<u16>,
    /// `UrgentFlag` of the packet being handled.
    pub urgent: bool,
    /// Send timestamp of the packet being handled (ns-2 times losses on the sender's clock).
    pub loss_clock: Instant,
    /// Arrival time of the packet being handled.
    pub arrival: Instant,
    /// `last_arrival_`: arrival of the latest new data packet.
    pub last_arrival: Option<Instant>,
    /// Arrival times of recent packets (`rtvec_`), oldest first, for `est_thput()`.
    pub recent_arrivals: Deque<Instant>,
    /// `maxseq` at the last report: where ns-2's first open interval starts counting.
    pub highest_at_report: Option<u64>,
    /// p computed by `adjust_history()` at the first loss, reported once as is.
    pub first_loss_p: Option<f64>,
}

impl Ns2ReceiverState {
    /// Remembers one arrival, forgetting those older than `keep` before it.
    pub fn note_arrival(&mut self, now: Instant, keep: Option<Duration>) {
        self.recent_arrivals.push_back(now);
        let horizon = keep.map(|keep| now.saturating_sub(keep));
        while let Some(&front) = self.recent_arrivals.front() {
            let too_old = horizon.is_some_and(|horizon| front < horizon);
            if too_old || self.recent_arrivals.len() > MAX_RECENT_ARRIVALS {
                self.recent_arrivals.pop_front();
            } else {
                break;
            }
        }
    }

    /// `TfrcSinkAgent::est_thput()` in packets/s: packets since the last report over the time
    /// since it when that is at least R, else packets that arrived within R of the latest one
    /// over R; 1 without an RTT or without packets.
    pub fn receive_rate_packets(
        &self,
        now: Instant,
        rtt: Option<Duration>,
        last_report: Option<Instant>,
        packets_since_report: u64,
    ) -> f64 {
        let Some(rtt) = rtt.filter(|rtt| !rtt.is_zero()) else {
            return 1.0;
        };
        if let Some(last) = last_report.filter(|&last| now - last >= rtt) {
            return if packets_since_report > 0 {
                packets_since_report as f64 / secs(now - last)
            } else {
                1.0
            };
        }
        let Some(&latest) = self.recent_arrivals.back() else {
            return 1.0;
        };
        let recent = self
            .recent_arrivals
            .iter()
            .rev()
            .take_while(|&&arrival| arrival + rtt > latest)
            .count();
        if recent > 0 {
            recent as f64 / secs(rtt)
        } else {
            1.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ns-2.35 `update_rtt()` by hand: a first sample of 250 ms is int(2.5 + 0.5) = 3 ticks,
    /// srtt = 24/8 = 3, rttvar = 6/4 = 1.5, RTO = (6·8 + 24) >> 3 = 9 ticks = 0.9 s.
    #[test]
    fn rto_estimator_first_sample() {
        let mut estimator = TcpRtoEstimator::default();
        assert_eq!(estimator.timeout(), Duration::ZERO);
        estimator.update(Duration::from_millis(250));
        assert_eq!(estimator.srtt_ticks(), 3);
        assert_eq!(estimator.timeout(), Duration::from_millis(900));
    }

    #[test]
    fn rfc3390_windows() {
        assert_eq!(rfc3390_packets(1000.0), 4.0);
        assert_eq!(rfc3390_packets(1095.0), 4.0);
        assert_eq!(rfc3390_packets(1500.0), 3.0);
        assert_eq!(rfc3390_packets(2190.0), 2.0);
    }
}
