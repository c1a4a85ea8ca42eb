//! BBR v1 (draft-cardwell-iccrg-bbr-congestion-control-00) as Linux's `tcp_bbr.c` runs it.
//!
//! Linux's summary (tcp_bbr.c): "On each ACK, update our model of the network path:
//! bottleneck_bandwidth = windowed_max(delivered / elapsed, 10 round trips); min_rtt =
//! windowed_min(rtt, 10 seconds); pacing_rate = pacing_gain * bottleneck_bandwidth; cwnd =
//! max(cwnd_gain * bottleneck_bandwidth * min_rtt, 4)".
//!
//! What is in: STARTUP (gains 2/ln 2), DRAIN (pacing gain ln 2 / 2), PROBE_BW's eight-phase gain
//! cycle (5/4, 3/4, then six of 1) starting at a seeded random phase, PROBE_RTT (4 packets for
//! at least 200 ms and a round trip, when min_rtt is 10 s old), the windowed max-bandwidth
//! filter (Kathleen Nichols' three-sample `minmax` over 10 round trips, as Linux), the min-RTT
//! filter, full-pipe detection (3 rounds without 25 % growth), pacing at 99 % of
//! pacing_gain × BtlBw, the cwnd target with Linux's quantization budget and ACK-aggregation
//! allowance, packet conservation in the first round of a recovery and the cwnd restored after
//! it, and a timeout treated as the end of a round.
//!
//! What is not: Linux's long-term ("LT") bandwidth sampling, which detects token-bucket
//! policers (not in the draft; measured, it moved fairness away from the kernel's in every
//! BBR-only cell recorded: docs/network-elements.md), the idle restart (the
//! simulator's bulk senders are never idle), and undo of spurious recoveries. Rates are in
//! packets per second in floating point where Linux uses fixed point.

use core::time::Duration;

use tfrc_proto::Instant;

use crate::delivery::RateSample;

/// Linux `bbr_high_gain`: "2/ln(2) ... the smallest pacing gain that will allow a smoothly
/// increasing pacing rate that will double each RTT".
pub(crate) const HIGH_GAIN: f64 = 2.885;
/// Linux `bbr_drain_gain`: "calculated to typically drain the queue created in BBR_STARTUP in a
/// single round".
const DRAIN_GAIN: f64 = 1.0 / 2.885;
/// Linux `bbr_cwnd_gain`: "tolerates delayed/stretched ACKs".
const CWND_GAIN: f64 = 2.0;
/// Linux `bbr_pacing_gain[]`: "probe for more available bw", "drain queue and/or yield bw to
/// other flows", "cruise at 1.0*bw to utilize pipe".
const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Linux `bbr_cycle_rand`: "Randomize the starting gain cycling phase over N phases".
const CYCLE_RANDOM_PHASES: u64 = 7;
/// Linux `bbr_bw_rtts`: the bandwidth filter's window, in round trips.
const BANDWIDTH_WINDOW_ROUNDS: u64 = 10;
/// Linux `bbr_min_rtt_win_sec`.
const MIN_RTT_WINDOW: Duration = Duration::from_secs(10);
/// Linux `bbr_probe_rtt_mode_ms`.
const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// Linux `bbr_cwnd_min_target`: "a sliding window protocol ACKing every other packet needs at
/// least 4 packets in flight".
const MIN_WINDOW: f64 = 4.0;
/// Linux `bbr_full_bw_thresh`, `bbr_full_bw_cnt`.
const FULL_BANDWIDTH_GROWTH: f64 = 1.25;
const FULL_BANDWIDTH_ROUNDS: u32 = 3;
/// Linux `bbr_pacing_margin_percent`: "Pace at ~1% below estimated bw".
const PACING_MARGIN: f64 = 0.99;
/// Linux `TCP_INIT_CWND`: the target before any RTT sample.
const INITIAL_WINDOW: f64 = 10.0;
/// Linux `bbr_min_tso_rate`: below 1.2 Mb/s the send quantum is one packet.
const MIN_TSO_RATE_BYTES: f64 = 1_200_000.0 / 8.0;
/// Linux `bbr_extra_acked_win_rtts`, `bbr_extra_acked_max_us`.
const EXTRA_ACKED_WINDOW_ROUNDS: u32 = 5;
const EXTRA_ACKED_MAX: Duration = Duration::from_millis(100);

/// BBR's state machine (Linux `enum bbr_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    /// "ramp up sending rate rapidly to fill pipe"
    Startup,
    /// "drain any queue created during startup"
    Drain,
    /// "discover, share bw: pace around estimated bw"
    ProbeBw,
    /// "cut inflight to min to probe min_rtt"
    ProbeRtt,
}

/// The sender's loss-recovery state as BBR sees it (Linux `icsk_ca_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LossState {
    /// No recovery (`TCP_CA_Open`).
    Open,
    /// Fast recovery (`TCP_CA_Recovery`).
    Recovery,
    /// After a retransmission timeout (`TCP_CA_Loss`).
    Loss,
}

/// What BBR reads from one ACK (Linux's `rate_sample` and socket fields).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BbrAck {
    pub(crate) now: Instant,
    /// The rate sample, when valid.
    pub(crate) rate: Option<RateSample>,
    /// The ACK's RTT sample.
    pub(crate) rtt: Option<Duration>,
    /// Packets it delivered (`rs->acked_sacked`).
    pub(crate) acked: u64,
    /// Packets it newly marked lost (`rs->losses`).
    pub(crate) losses: u64,
    /// Packets in flight before it (`rs->prior_in_flight`).
    pub(crate) prior_in_flight: u64,
    /// Packets in flight after it (`tcp_packets_in_flight`).
    pub(crate) in_flight: u64,
    /// Packets delivered so far (`tp->delivered`) and when the last was (`delivered_mstamp`).
    pub(crate) delivered: u64,
    pub(crate) delivered_time: Instant,
    /// The sender's recovery state after the ACK.
    pub(crate) state: LossState,
    /// The slow-start threshold (`snd_ssthresh`), in packets.
    pub(crate) slow_start_threshold: f64,
    /// The smoothed RTT, for the first pacing rate.
    pub(crate) smoothed_rtt: Option<Duration>,
    /// When the next packet may leave under pacing (Linux `tcp_wstamp_ns`).
    pub(crate) earliest_departure: Instant,
    /// The sender's window cap (`snd_cwnd_clamp`).
    pub(crate) max_window: f64,
}

/// What BBR asks of the sender after an ACK.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BbrDecision {
    /// The congestion window, packets.
    pub(crate) window: f64,
    /// Whether the sender marks its send interval application-limited (PROBE_RTT: "Ignore low
    /// rate samples during this mode").
    pub(crate) app_limited: bool,
    /// The slow-start threshold BBR sets when STARTUP ends (`snd_ssthresh`), if it changed.
    pub(crate) slow_start_threshold: Option<f64>,
}

/// Kathleen Nichols' windowed max filter as Linux's `lib/win_minmax.c`: the best, second and
/// third best samples of the window, so an old maximum expires without keeping every sample.
#[derive(Clone, Copy, Debug, Default)]
struct WindowedMax {
    samples: [(u64, f64); 3],
}

impl WindowedMax {
    fn get(&self) -> f64 {
        self.samples[0].1
    }

    fn reset(&mut self, time: u64, value: f64) {
        self.samples = [(time, value); 3];
    }

    /// Linux `minmax_running_max` with `minmax_subwin_update`.
    fn update(&mut self, window: u64, time: u64, value: f64) {
        let sample = (time, value);
        if value >= self.samples[0].1 || time - self.samples[2].0 > window {
            // "found new max?" / "nothing left in window?"
            self.reset(time, value);
            return;
        }
        if value >= self.samples[1].1 {
            self.samples[2] = sample;
            self.samples[1] = sample;
        } else if value >= self.samples[2].1 {
            self.samples[2] = sample;
        }
        let elapsed = time - self.samples[0].0;
        if elapsed > window {
            // "Passed entire window without a new val so make 2nd choice the new val & 3rd
            // choice the new 2nd choice."
            self.samples = [self.samples[1], self.samples[2], sample];
            if time - self.samples[0].0 > window {
                self.samples = [self.samples[1], self.samples[2], sample];
            }
        } else if self.samples[1].0 == self.samples[0].0 && elapsed > window / 4 {
            // "passed a quarter of the window without a new val so take a 2nd choice from the
            // 2nd quarter of the window."
            self.samples[2] = sample;
            self.samples[1] = sample;
        } else if self.samples[2].0 == self.samples[1].0 && elapsed > window / 2 {
            // "passed half the window without finding a new val so take a 3rd choice from the
            // last half of the window"
            self.samples[2] = sample;
        }
    }
}

/// BBR's state (Linux `struct bbr`).
#[derive(Clone, Debug)]
pub(crate) struct Bbr {
    mode: BbrMode,
    bandwidth: WindowedMax,
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    /// ns-3.37's filter (`UpdateRTprop`: "tcb->m_lastRtt <= m_rtProp"): an RTT equal to the
    /// minimum restarts its window, where Linux's takes only a smaller one.
    min_rtt_at_equal: bool,
    /// ns-3.37's window reduction by the losses, in fast recovery only
    /// ([`crate::SenderConfig::ns3_bbr_losses`]); Linux's in every state.
    losses_cut_window_in_recovery_only: bool,
    /// ns-3.37's window when a recovery ends ([`crate::SenderConfig::ns3_bbr_recovery_exit`]).
    ns3_recovery_exit: bool,
    /// The pacing rate's factor: Linux's [`PACING_MARGIN`], or 1 as in ns-3.37
    /// ([`crate::SenderConfig::ns3_bbr_pacing_without_margin`]).
    pacing_margin: f64,
    probe_rtt_done: Option<Instant>,
    probe_rtt_round_done: bool,
    prior_window: f64,
    packet_conservation: bool,
    previous_state: LossState,
    pacing_gain: f64,
    window_gain: f64,
    full_bandwidth_reached: bool,
    full_bandwidth: f64,
    full_bandwidth_rounds: u32,
    cycle_index: usize,
    cycle_stamp: Instant,
    has_seen_rtt: bool,
    /// Payload bytes per second.
    pacing_rate: f64,
    segment_size: f64,
    ack_epoch_stamp: Instant,
    ack_epoch_acked: u64,
    extra_acked: [u64; 2],
    extra_acked_rounds: u32,
    extra_acked_index: usize,
    random: u64,
}

impl Bbr {
    /// Linux `bbr_init` for a sender of `segment_size` payload bytes with `initial_window`
    /// packets, its gain cycle seeded by `seed`.
    pub(crate) fn new(segment_size: u32, initial_window: f64, seed: u64) -> Self {
        let mut bbr = Self {
            mode: BbrMode::Startup,
            bandwidth: WindowedMax::default(),
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            min_rtt: None,
            min_rtt_stamp: Instant::ZERO,
            min_rtt_at_equal: false,
            losses_cut_window_in_recovery_only: false,
            ns3_recovery_exit: false,
            pacing_margin: PACING_MARGIN,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            prior_window: 0.0,
            packet_conservation: false,
            previous_state: LossState::Open,
            pacing_gain: HIGH_GAIN,
            window_gain: HIGH_GAIN,
            full_bandwidth_reached: false,
            full_bandwidth: 0.0,
            full_bandwidth_rounds: 0,
            cycle_index: 0,
            cycle_stamp: Instant::ZERO,
            has_seen_rtt: false,
            pacing_rate: 0.0,
            segment_size: f64::from(segment_size),
            ack_epoch_stamp: Instant::ZERO,
            ack_epoch_acked: 0,
            extra_acked: [0; 2],
            extra_acked_rounds: 0,
            extra_acked_index: 0,
            random: seed,
        };
        bbr.init_pacing_rate(initial_window, None);
        bbr
    }

    /// The same BBR with ns-3.37's minimum-RTT filter, which an RTT equal to the minimum
    /// renews ([`crate::SenderConfig::smoothed_rtt_to_congestion_control`]).
    pub(crate) fn with_ns3_min_rtt_filter(mut self, ns3: bool) -> Self {
        self.min_rtt_at_equal = ns3;
        self
    }

    /// The same BBR taking losses off its window in fast recovery only, as ns-3.37's does
    /// ([`crate::SenderConfig::ns3_bbr_losses`]).
    pub(crate) fn with_ns3_loss_response(mut self, ns3: bool) -> Self {
        self.losses_cut_window_in_recovery_only = ns3;
        self
    }

    /// The same BBR ending its recoveries as ns-3.37's does
    /// ([`crate::SenderConfig::ns3_bbr_recovery_exit`]).
    pub(crate) fn with_ns3_recovery_exit(mut self, ns3: bool) -> Self {
        self.ns3_recovery_exit = ns3;
        self
    }

    /// The same BBR pacing at its gain times its bandwidth estimate, without Linux's margin, as
    /// ns-3.37's does ([`crate::SenderConfig::ns3_bbr_pacing_without_margin`]).
    pub(crate) fn with_ns3_pacing_rate(mut self, ns3: bool) -> Self {
        self.pacing_margin = if ns3 { 1.0 } else { PACING_MARGIN };
        self
    }

    /// The current mode.
    pub(crate) fn mode(&self) -> BbrMode {
        self.mode
    }

    /// The bottleneck bandwidth estimate, packets per second.
    pub(crate) fn bottleneck_bandwidth(&self) -> f64 {
        self.bandwidth.get()
    }

    /// The min-RTT estimate.
    pub(crate) fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// The pacing rate, payload bytes per second.
    pub(crate) fn pacing_rate(&self) -> f64 {
        self.pacing_rate
    }

    /// The current pacing gain.
    pub(crate) fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    /// Starts the min-RTT filter's clock when the flow starts (Linux `bbr_init`:
    /// `min_rtt_stamp = tcp_jiffies32`).
    pub(crate) fn start(&mut self, now: Instant) {
        self.min_rtt_stamp = now;
        self.ack_epoch_stamp = now;
    }

    /// Linux `bbr_ssthresh` (a loss detected, recovery starts): "save cwnd for when we exit or
    /// undo recovery". The slow-start threshold does not change.
    pub(crate) fn on_congestion_event(&mut self, window: f64) {
        self.save_window(window);
    }

    /// Linux `bbr_ssthresh` then `bbr_set_state(TCP_CA_Loss)`: a retransmission timeout. "treat
    /// RTO like end of a round". `save_window`: whether `tcp_enter_loss` calls `bbr_ssthresh`
    /// (which saves the window) this time; `bbr_set_state` runs at every timeout.
    pub(crate) fn on_timeout(&mut self, window: f64, save_window: bool) {
        if save_window {
            self.save_window(window);
        }
        self.previous_state = LossState::Loss;
        self.full_bandwidth = 0.0;
        self.round_start = true;
    }

    /// Linux `bbr_main`: update the model with an ACK, then the pacing rate and the window.
    pub(crate) fn on_ack(&mut self, ack: &BbrAck, window: f64) -> BbrDecision {
        let mut decision = BbrDecision {
            window,
            app_limited: false,
            slow_start_threshold: None,
        };
        self.update_model(ack, &mut decision);
        let bandwidth = self.bandwidth.get();
        self.set_pacing_rate(
            bandwidth,
            self.pacing_gain,
            ack.smoothed_rtt,
            decision.window,
        );
        decision.window = self.set_window(ack, decision.window, bandwidth);
        decision
    }

    /// Linux `bbr_update_model`.
    fn update_model(&mut self, ack: &BbrAck, decision: &mut BbrDecision) {
        self.update_bandwidth(ack);
        self.update_ack_aggregation(ack, decision.window);
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(ack) {
            self.advance_cycle_phase(ack.delivered_time);
        }
        self.check_full_bandwidth_reached(ack);
        self.check_drain(ack, decision);
        self.update_min_rtt(ack, decision);
        self.update_gains();
    }

    /// Linux `bbr_update_bw`: round trips and the bandwidth filter.
    fn update_bandwidth(&mut self, ack: &BbrAck) {
        self.round_start = false;
        let Some(rate) = ack.rate else {
            return;
        };
        // "See if we've reached the next RTT"
        if rate.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = ack.delivered;
            self.round_count += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        let sample = rate.rate();
        // "we filter out app-limited samples unless they describe the path bw at least as well
        // as our bw model"
        if !rate.app_limited || sample >= self.bandwidth.get() {
            self.bandwidth
                .update(BANDWIDTH_WINDOW_ROUNDS, self.round_count, sample);
        }
    }

    /// Linux `bbr_update_ack_aggregation`: "extra data acked beyond expected".
    fn update_ack_aggregation(&mut self, ack: &BbrAck, window: f64) {
        if ack.acked == 0 || ack.rate.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_rounds = (self.extra_acked_rounds + 1).min(0x1F);
            if self.extra_acked_rounds >= EXTRA_ACKED_WINDOW_ROUNDS {
                self.extra_acked_rounds = 0;
                self.extra_acked_index = 1 - self.extra_acked_index;
                self.extra_acked[self.extra_acked_index] = 0;
            }
        }
        let epoch = ack
            .delivered_time
            .saturating_duration_since(self.ack_epoch_stamp);
        let mut expected = (self.bandwidth.get() * epoch.as_secs_f64()) as u64;
        // "Reset the aggregation epoch if ACK rate is below expected rate or significantly
        // large no. of ack received since epoch"
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + ack.acked >= 1 << 20 {
            self.ack_epoch_acked = 0;
            self.ack_epoch_stamp = ack.delivered_time;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + ack.acked).min(0xF_FFFF);
        let extra = (self.ack_epoch_acked - expected).min(window as u64);
        let slot = &mut self.extra_acked[self.extra_acked_index];
        *slot = (*slot).max(extra);
    }

    /// Linux `bbr_is_next_cycle_phase`: "End cycle phase if it's time and/or we hit the phase's
    /// in-flight target."
    fn is_next_cycle_phase(&self, ack: &BbrAck) -> bool {
        let min_rtt = self.min_rtt.unwrap_or(Duration::MAX);
        let full_length = ack
            .delivered_time
            .saturating_duration_since(self.cycle_stamp)
            > min_rtt;
        if self.pacing_gain == 1.0 {
            return full_length;
        }
        let in_flight = self.packets_in_network_at_departure(ack, ack.prior_in_flight);
        let bandwidth = self.bandwidth.get();
        if self.pacing_gain > 1.0 {
            // "We do not persist if packets are lost, since a path with small buffers may not
            // hold that much."
            return full_length
                && (ack.losses > 0 || in_flight >= self.in_flight(bandwidth, self.pacing_gain));
        }
        full_length || in_flight <= self.in_flight(bandwidth, 1.0)
    }

    /// Linux `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self, delivered_time: Instant) {
        self.cycle_index = (self.cycle_index + 1) % PACING_GAIN_CYCLE.len();
        self.cycle_stamp = delivered_time;
    }

    /// Linux `bbr_check_full_bw_reached`.
    fn check_full_bandwidth_reached(&mut self, ack: &BbrAck) {
        let app_limited = ack.rate.is_some_and(|rate| rate.app_limited);
        if self.full_bandwidth_reached || !self.round_start || app_limited {
            return;
        }
        let bandwidth = self.bandwidth.get();
        if bandwidth >= self.full_bandwidth * FULL_BANDWIDTH_GROWTH {
            self.full_bandwidth = bandwidth;
            self.full_bandwidth_rounds = 0;
            return;
        }
        self.full_bandwidth_rounds += 1;
        self.full_bandwidth_reached = self.full_bandwidth_rounds >= FULL_BANDWIDTH_ROUNDS;
    }

    /// Linux `bbr_check_drain`: "If pipe is probably full, drain the queue and then enter
    /// steady-state."
    fn check_drain(&mut self, ack: &BbrAck, decision: &mut BbrDecision) {
        let bandwidth = self.bandwidth.get();
        if self.mode == BbrMode::Startup && self.full_bandwidth_reached {
            self.mode = BbrMode::Drain;
            decision.slow_start_threshold = Some(self.in_flight(bandwidth, 1.0));
        }
        if self.mode == BbrMode::Drain
            && self.packets_in_network_at_departure(ack, ack.in_flight)
                <= self.in_flight(bandwidth, 1.0)
        {
            self.reset_probe_bw_mode(ack.delivered_time);
        }
    }

    /// Linux `bbr_update_min_rtt`: the min-RTT filter and PROBE_RTT.
    fn update_min_rtt(&mut self, ack: &BbrAck, decision: &mut BbrDecision) {
        let expired = ack.now > self.min_rtt_stamp + MIN_RTT_WINDOW;
        if let Some(rtt) = ack.rtt {
            let new_min = self
                .min_rtt
                .is_none_or(|min| rtt < min || (self.min_rtt_at_equal && rtt == min));
            if new_min || expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = ack.now;
            }
        }
        if expired && self.mode != BbrMode::ProbeRtt {
            // "dip, drain queue"; "note cwnd so we can restore it"
            self.mode = BbrMode::ProbeRtt;
            self.save_window(decision.window);
            self.probe_rtt_done = None;
        }
        if self.mode != BbrMode::ProbeRtt {
            return;
        }
        decision.app_limited = true;
        // "Maintain min packets in flight for max(200 ms, 1 round)."
        match self.probe_rtt_done {
            None if ack.in_flight as f64 <= MIN_WINDOW => {
                self.probe_rtt_done = Some(ack.now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.next_round_delivered = ack.delivered;
            }
            None => {}
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && ack.now > done {
                    // Linux `bbr_check_probe_rtt_done`: "wait a while until PROBE_RTT".
                    self.min_rtt_stamp = ack.now;
                    decision.window = decision.window.max(self.prior_window);
                    self.reset_mode(ack.delivered_time);
                }
            }
        }
    }

    /// Linux `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.window_gain) = match self.mode {
            BbrMode::Startup => (HIGH_GAIN, HIGH_GAIN),
            BbrMode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            BbrMode::ProbeBw => (PACING_GAIN_CYCLE[self.cycle_index], CWND_GAIN),
            BbrMode::ProbeRtt => (1.0, 1.0),
        };
    }

    fn reset_mode(&mut self, delivered_time: Instant) {
        if self.full_bandwidth_reached {
            self.reset_probe_bw_mode(delivered_time);
        } else {
            self.mode = BbrMode::Startup;
        }
    }

    /// Linux `bbr_reset_probe_bw_mode`: "cycle_idx = CYCLE_LEN - 1 - get_random_u32_below(
    /// bbr_cycle_rand)", then "flip to next phase of gain cycle".
    fn reset_probe_bw_mode(&mut self, delivered_time: Instant) {
        self.mode = BbrMode::ProbeBw;
        let draw = self.next_random() % CYCLE_RANDOM_PHASES;
        self.cycle_index = PACING_GAIN_CYCLE.len() - 1 - draw as usize;
        self.advance_cycle_phase(delivered_time);
    }

    /// SplitMix64: the one random draw BBR makes, reproducible from the sender's seed.
    fn next_random(&mut self) -> u64 {
        self.random = self.random.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.random;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Linux `bbr_save_cwnd`: "Save 'last known good' cwnd so we can restore it after losses
    /// or PROBE_RTT".
    fn save_window(&mut self, window: f64) {
        self.prior_window =
            if self.previous_state < LossState::Recovery && self.mode != BbrMode::ProbeRtt {
                window
            } else {
                self.prior_window.max(window)
            };
    }

    /// Linux `bbr_init_pacing_rate_from_rtt`: "high_gain * init_cwnd / RTT", with a nominal
    /// 1 ms before any RTT sample.
    fn init_pacing_rate(&mut self, window: f64, smoothed_rtt: Option<Duration>) {
        let rtt = match smoothed_rtt {
            Some(rtt) => {
                self.has_seen_rtt = true;
                rtt.max(Duration::from_micros(1))
            }
            None => Duration::from_millis(1),
        };
        let bandwidth = window / rtt.as_secs_f64();
        self.pacing_rate = self.rate_bytes(bandwidth, HIGH_GAIN);
    }

    /// Linux `bbr_rate_bytes_per_sec`: packets per second to payload bytes per second, with the
    /// gain and the 1 % margin (none in ns-3.37).
    fn rate_bytes(&self, bandwidth: f64, gain: f64) -> f64 {
        bandwidth * self.segment_size * gain * self.pacing_margin
    }

    /// Linux `bbr_set_pacing_rate`: the rate only falls once the pipe was found full.
    fn set_pacing_rate(
        &mut self,
        bandwidth: f64,
        gain: f64,
        smoothed_rtt: Option<Duration>,
        window: f64,
    ) {
        if !self.has_seen_rtt && smoothed_rtt.is_some() {
            self.init_pacing_rate(window, smoothed_rtt);
        }
        let rate = self.rate_bytes(bandwidth, gain);
        if self.full_bandwidth_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// Linux `bbr_tso_segs_goal`: about 1 ms of data at the pacing rate, at least 1 or 2
    /// packets, at most 127 (and 64 KB).
    fn send_quantum(&self) -> f64 {
        let min_segments: f64 = if self.pacing_rate < MIN_TSO_RATE_BYTES {
            1.0
        } else {
            2.0
        };
        // `sk_pacing_rate >> sk_pacing_shift` (shift 10), capped by GSO_LEGACY_MAX_SIZE − 1 −
        // MAX_TCP_HEADER (65 536 − 1 − 320).
        let bytes = (self.pacing_rate / 1024.0).floor().min(65_215.0);
        (bytes / self.segment_size)
            .floor()
            .max(min_segments)
            .min(127.0)
    }

    /// Linux `bbr_bdp`: "bdp = ceil(bw * min_rtt * gain)", 10 packets before any RTT sample.
    fn bdp(&self, bandwidth: f64, gain: f64) -> f64 {
        match self.min_rtt {
            None => INITIAL_WINDOW,
            Some(min_rtt) => (bandwidth * min_rtt.as_secs_f64() * gain).ceil(),
        }
    }

    /// Linux `bbr_quantization_budget`: room for three send quanta, rounded up to an even
    /// number, and two more in the probing phase ("Ensure gain cycling gets inflight above BDP
    /// even for small BDPs").
    fn quantization_budget(&self, window: f64) -> f64 {
        let mut window = window + 3.0 * self.send_quantum();
        window = 2.0 * (window / 2.0).ceil();
        if self.mode == BbrMode::ProbeBw && self.cycle_index == 0 {
            window += 2.0;
        }
        window
    }

    /// Linux `bbr_inflight`.
    fn in_flight(&self, bandwidth: f64, gain: f64) -> f64 {
        self.quantization_budget(self.bdp(bandwidth, gain))
    }

    /// Linux `bbr_packets_in_net_at_edt`: the packets still in the network when the next paced
    /// packet leaves.
    fn packets_in_network_at_departure(&self, ack: &BbrAck, in_flight_now: u64) -> f64 {
        let wait = ack.earliest_departure.saturating_duration_since(ack.now);
        let delivered_meanwhile = (self.bandwidth.get() * wait.as_secs_f64()).floor();
        let mut in_flight = in_flight_now as f64;
        if self.pacing_gain > 1.0 {
            in_flight += self.send_quantum();
        }
        (in_flight - delivered_meanwhile).max(0.0)
    }

    /// Linux `bbr_ack_aggregation_cwnd`.
    fn aggregation_window(&self) -> f64 {
        if !self.full_bandwidth_reached {
            return 0.0;
        }
        let most = (self.bandwidth.get() * EXTRA_ACKED_MAX.as_secs_f64()).floor();
        (self.extra_acked[0].max(self.extra_acked[1]) as f64).min(most)
    }

    /// Linux `bbr_set_cwnd` with `bbr_set_cwnd_to_recover_or_restore`.
    fn set_window(&mut self, ack: &BbrAck, window: f64, bandwidth: f64) -> f64 {
        let mut window = window;
        let acked = ack.acked as f64;
        // "if (!acked) goto done; /* no packet fully ACKed; just apply caps */"
        if ack.acked > 0 {
            let (recovered, conserving) = self.recover_or_restore(ack, window);
            window = recovered;
            if !conserving {
                let target = self.quantization_budget(
                    self.bdp(bandwidth, self.window_gain) + self.aggregation_window(),
                );
                // "Slow-start up toward target cwnd (if bw estimate is growing, or packet loss
                // has drawn us down below target), or snap down to target if we're above it."
                if self.full_bandwidth_reached {
                    window = (window + acked).min(target);
                } else if window < target || ack.delivered < INITIAL_WINDOW as u64 {
                    window += acked;
                }
                window = window.max(MIN_WINDOW);
            }
        }
        window = window.min(ack.max_window);
        if self.mode == BbrMode::ProbeRtt {
            // "drain queue, refresh min_rtt"
            window = window.min(MIN_WINDOW);
        }
        window
    }

    /// Linux `bbr_set_cwnd_to_recover_or_restore`: "On the first round of recovery, we follow
    /// the packet conservation principle: send P packets per P packets acked. ... After
    /// recovery finishes ... we restore the cwnd we had when recovery started". Returns the
    /// window and whether packet conservation sets it.
    fn recover_or_restore(&mut self, ack: &BbrAck, window: f64) -> (f64, bool) {
        let mut window = window;
        // "An ACK for P pkts should release at most 2*P packets. We do this in two steps.
        // First, here we deduct the number of lost packets."
        if ack.losses > 0
            && (!self.losses_cut_window_in_recovery_only || ack.state == LossState::Recovery)
        {
            window = (window - ack.losses as f64).max(1.0);
        }
        let acked = ack.acked as f64;
        if ack.state == LossState::Recovery && self.previous_state != LossState::Recovery {
            // "Starting 1st round of Recovery, so do packet conservation."
            self.packet_conservation = true;
            self.next_round_delivered = ack.delivered;
            window = ack.in_flight as f64 + acked;
        } else if self.previous_state >= LossState::Recovery && ack.state < LossState::Recovery {
            // "Exiting loss recovery; restore cwnd saved before recovery."
            window = match (self.ns3_recovery_exit, self.previous_state) {
                (false, _) => window.max(self.prior_window),
                // ns-3.37: "m_tcb->m_cWnd = m_tcb->m_ssThresh.Get();" after the restore.
                (true, LossState::Recovery) => ack.slow_start_threshold,
                // ns-3.37 leaves `CA_LOSS` without a restore.
                (true, _) => window,
            };
            self.packet_conservation = false;
        }
        self.previous_state = ack.state;
        if self.packet_conservation {
            return (window.max(ack.in_flight as f64 + acked), true);
        }
        (window, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windowed_max_keeps_the_best_sample_of_the_window_and_lets_it_expire() {
        let mut filter = WindowedMax::default();
        filter.update(10, 0, 100.0);
        filter.update(10, 1, 50.0);
        filter.update(10, 6, 70.0);
        assert_eq!(filter.get(), 100.0);
        // Round 11: the maximum from round 0 is out of the 10-round window; the second choice
        // (70, from the second half) takes over, as Linux's `minmax_subwin_update` does.
        filter.update(10, 11, 60.0);
        assert_eq!(filter.get(), 70.0);
        // A new maximum replaces everything at once.
        filter.update(10, 12, 120.0);
        assert_eq!(filter.get(), 120.0);
        // Nothing in the window any more: the newest sample.
        filter.update(10, 40, 10.0);
        assert_eq!(filter.get(), 10.0);
    }

    #[test]
    fn startup_gains_and_the_first_pacing_rate_follow_linux() {
        let bbr = Bbr::new(1000, 10.0, 0);
        assert_eq!(bbr.mode(), BbrMode::Startup);
        // "high_gain * init_cwnd / RTT" with a nominal 1 ms RTT: 10 packets per ms × 1000 B ×
        // 2.885 × 0.99.
        assert!((bbr.pacing_rate() - 10_000.0 * 1000.0 * HIGH_GAIN * 0.99).abs() < 1e-3);
        assert_eq!(bbr.pacing_gain(), HIGH_GAIN);
    }

    #[test]
    fn the_quantization_budget_adds_three_send_quanta_rounded_up_to_even() {
        let mut bbr = Bbr::new(1000, 10.0, 0);
        // 100 Mb/s of pacing: 12 500 000 B/s >> 10 = 12 207 B, 12 packets per quantum.
        bbr.pacing_rate = 12_500_000.0;
        assert_eq!(bbr.send_quantum(), 12.0);
        assert_eq!(bbr.quantization_budget(41.0), 78.0);
        // Below 1.2 Mb/s one packet per quantum.
        bbr.pacing_rate = 100_000.0;
        assert_eq!(bbr.send_quantum(), 1.0);
        assert_eq!(bbr.quantization_budget(5.0), 8.0);
    }
}
