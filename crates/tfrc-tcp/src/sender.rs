//! The TCP sender: slow start, congestion avoidance, fast retransmit and fast recovery (Reno,
//! NewReno or SACK), CUBIC's and BBR's windows, BBR's pacing, and the retransmission timer.

use core::time::Duration;
use std::collections::{BTreeSet, VecDeque};

use tfrc_proto::Instant;
use thiserror::Error;

use crate::bbr::{Bbr, BbrAck, BbrMode, LossState};
use crate::config::{ConfigError, SenderConfig, Variant};
use crate::cubic::Cubic;
use crate::delivery::{AckDelivery, DeliveryTracker};
use crate::rack::{Rack, TailLossProbe};
use crate::ranges::SequenceRanges;
use crate::rtt::RttEstimator;
use crate::segment::{Ack, Segment};

/// An ACK the sender refused; its state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum AckError {
    /// The ACK acknowledges packets that were never sent (RFC 793: such an ACK is dropped).
    #[error("ACK for packet {acknowledged_up_to} but only packets below {sent_up_to} were sent")]
    UnsentData {
        /// The ACK's cumulative acknowledgement (next expected packet).
        acknowledged_up_to: u64,
        /// One past the highest packet sent so far.
        sent_up_to: u64,
    },
}

/// Counters for logging and for the simulator's per-flow statistics. Bytes are payload bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Segments handed out by [`TcpSender::poll_transmit`], retransmissions included
    /// (ns-2 `ndatapack_`).
    pub segments_sent: u64,
    /// Payload bytes of those segments (ns-2 `ndatabytes_`).
    pub bytes_sent: u64,
    /// Segments that repeated an earlier sequence number (ns-2 `nrexmitpack_`).
    pub segments_retransmitted: u64,
    /// Payload bytes of those retransmissions (ns-2 `nrexmitbytes_`).
    pub bytes_retransmitted: u64,
    /// ACKs handed to [`TcpSender::handle_ack`], refused ones included (ns-2 `nackpack_`).
    pub acks_received: u64,
    /// ACKs counted as duplicates (same cumulative ACK, data outstanding).
    pub duplicate_acks: u64,
    /// ACKs below the current cumulative ACK, ignored (reordered or stale).
    pub stale_acks: u64,
    /// ACKs refused because they acknowledged unsent data.
    pub invalid_acks: u64,
    /// Fast retransmits, each starting one fast recovery.
    pub fast_recoveries: u64,
    /// Retransmission timer expiries with data outstanding (ns-2 `nrexmit_`).
    pub timeouts: u64,
    /// Tail loss probes sent (RFC 8985 §7; Linux `TCPLossProbes`); CUBIC and BBR only.
    pub loss_probes: u64,
    /// Reordering timer expiries that marked packets lost (RFC 8985 §6.2 step 5).
    pub reorder_timeouts: u64,
}

/// State of one fast recovery episode.
#[derive(Clone, Copy, Debug)]
struct Recovery {
    /// RFC 6582 `recover` / RFC 6675 `RecoveryPoint`, as one past the highest packet sent
    /// when the loss was detected: an ACK at or above it ends the recovery.
    point: u64,
    /// Partial ACKs seen so far (NewReno resets the timer only on the first, RFC 6582 §3.2).
    partial_acks: u32,
    /// Proportional Rate Reduction's counts, under
    /// [`SenderConfig::proportional_rate_reduction`].
    prr: RateReduction,
}

/// RFC 6937's state for one recovery, in packets: `RecoverFS`, `prr_delivered`, `prr_out`.
#[derive(Clone, Copy, Debug, Default)]
struct RateReduction {
    /// The packets outstanding when the recovery started (ns-3.37 `UnAckDataCount()`).
    flight_size: u64,
    /// Packets delivered to the receiver since, cumulatively or by SACK.
    delivered: u64,
    /// Packets sent since, retransmissions included.
    sent: u64,
}

/// Who sets the congestion window: Reno's AIMD (the papers' three variants), CUBIC or BBR.
#[derive(Clone, Debug)]
enum Control {
    Reno,
    Cubic(Cubic),
    Bbr(Box<Bbr>),
}

/// BBR's pacing (Linux's internal pacing, `tcp_wstamp_ns`): when the next packet may leave.
#[derive(Clone, Copy, Debug)]
struct Pacing {
    /// Earliest departure of the next packet.
    next_departure: Instant,
    /// A packet is waiting for `next_departure` (so the sender asks to be woken then).
    waiting: bool,
}

/// A TCP sender modelled on ns-2's one-way `Agent/TCP/{Reno,Newreno,Sack1}`: packet sequence
/// numbers, a congestion window in packets, no byte stream, and a handshake only as ns-2 models
/// it (a SYN as sequence 0, [`SenderConfig::syn_handshake`]).
///
/// It is sans-IO: it never reads a clock and owns no timer. The driver passes the time in.
///
/// # Call order
/// 1. After creating it, and after every `handle_*` call, call [`poll_transmit`] until it
///    returns `None`, and put each segment on the network.
/// 2. Hand every ACK that arrives to [`handle_ack`].
/// 3. Call [`handle_timeout`] when [`poll_timeout`] is reached (asking again after every call,
///    since any input can move the timer). Calling it early does nothing.
/// 4. [`stop`] ends new data; outstanding data is still delivered. [`is_finished`] tells when
///    everything is acknowledged.
///
/// [`poll_transmit`]: TcpSender::poll_transmit
/// [`handle_ack`]: TcpSender::handle_ack
/// [`handle_timeout`]: TcpSender::handle_timeout
/// [`poll_timeout`]: TcpSender::poll_timeout
/// [`stop`]: TcpSender::stop
/// [`is_finished`]: TcpSender::is_finished
#[derive(Clone, Debug)]
pub struct TcpSender {
    config: SenderConfig,
    rtt: RttEstimator,

    /// Next sequence number the window lets out (ns-2 `t_seqno_`); moves back to
    /// `unacknowledged` on a timeout (go-back-N).
    next_sequence: u64,
    /// One past the highest sequence number ever sent (ns-2 `maxseq_ + 1`, RFC 6675 HighData).
    sent_up_to: u64,
    /// Lowest sequence number not cumulatively acknowledged (SND.UNA; ns-2 `highest_ack_ + 1`).
    unacknowledged: u64,
    /// Sequence numbers below this are the application's data; nothing at or above is sent.
    data_limit: u64,

    /// Congestion window in packets (ns-2 `cwnd_`).
    congestion_window: f64,
    /// Slow-start threshold in packets (ns-2 `ssthresh_`, an integer there too).
    slow_start_threshold: u32,
    /// Reno/NewReno window inflation during fast recovery, one packet per duplicate ACK
    /// (ns-2 `dupwnd_`); the usable window is `congestion_window + window_inflation`.
    window_inflation: u32,
    /// Duplicate ACKs since the last ACK for new data (ns-2 `dupacks_`).
    duplicate_acks: u32,
    recovery: Option<Recovery>,
    /// Where the last fast recovery or timeout started: another fast retransmit needs the
    /// cumulative ACK to have reached it (RFC 6582 §3.2 step 1, ns-2 `recover_` with `bugFix_`).
    last_recovery_point: Option<u64>,

    /// SACK scoreboard: packets above `unacknowledged` the receiver reported holding.
    sacked: SequenceRanges,
    /// Packets retransmitted during the current SACK recovery, for `pipe` (RFC 6675 §4), and,
    /// under [`SenderConfig::sacked_retransmissions_in_flight`], since the last timeout.
    retransmitted: BTreeSet<u64>,
    /// RFC 6675 HighRxt: highest packet retransmitted in this recovery.
    highest_retransmitted: Option<u64>,
    /// Retransmissions decided by an ACK (fast retransmit, NewReno partial ACK), sent first.
    retransmit_queue: VecDeque<u64>,

    /// When the retransmission timer fires, if it runs.
    retransmission_deadline: Option<Instant>,
    /// Factor applied to the RTO after timeouts; back to 1 with the next RTT sample (Karn).
    backoff: u32,
    /// The first packet sent as new data since the last timeout: ns-3's RTT history starts
    /// there ([`SenderConfig::cumulative_rtt_samples`]).
    rtt_history_start: u64,
    /// The one segment being timed for an RTT sample, as in ns-2 without timestamps
    /// (`rtt_seq_`, `rtt_ts_`); cleared by any retransmission (Karn's algorithm).
    timed_segment: Option<(u64, Instant)>,

    /// The SYN timed out before it was acknowledged: the window opens at one packet.
    syn_lost: bool,

    /// Reno's, CUBIC's or BBR's window.
    control: Control,
    /// Per-packet send records, delivery-rate and per-ACK RTT samples (CUBIC and BBR).
    delivery: Option<DeliveryTracker>,
    /// BBR's pacing.
    pacing: Option<Pacing>,
    /// After a timeout, until the cumulative ACK reaches this point (Linux `TCP_CA_Loss`).
    loss_point: Option<u64>,
    /// Whether an ACK has moved the cumulative ACK since the last timeout (Linux clears
    /// `icsk_retransmits` then), for [`SenderConfig::ssthresh_once_per_loss`].
    advanced_since_timeout: bool,
    /// Packets below this were already counted as lost for BBR's `rs.losses`.
    lost_counted_up_to: u64,
    /// The first packet left (BBR starts its min-RTT clock then).
    started: bool,
    /// RACK loss detection (RFC 8985), CUBIC and BBR with [`SenderConfig::rack_tlp`].
    rack: Option<Rack>,
    /// The tail loss probe (RFC 8985 §7), used with `rack`.
    probe: TailLossProbe,
    /// Packets RACK marked lost while processing the current ACK (BBR's `rs.losses`).
    rack_losses: u64,

    stats: SenderStats,
    stopped_at: Option<Instant>,
}

impl Control {
    /// The congestion control `config` asks for, with the rules of its profile.
    fn for_config(config: &SenderConfig) -> Self {
        match config.variant {
            Variant::Cubic => Control::Cubic(
                Cubic::with_ns3_growth(config.hystart, config.ns3_cubic_growth)
                    .with_ns3_hystart(config.ns3_hystart),
            ),
            Variant::Bbr => Control::Bbr(Box::new(
                Bbr::new(
                    config.segment_size,
                    f64::from(config.initial_window),
                    config.seed,
                )
                .with_ns3_min_rtt_filter(config.smoothed_rtt_to_congestion_control)
                .with_ns3_loss_response(config.ns3_bbr_losses)
                .with_ns3_recovery_exit(config.ns3_bbr_recovery_exit)
                .with_ns3_pacing_rate(config.ns3_bbr_pacing_without_margin),
            )),
            Variant::Reno | Variant::NewReno | Variant::Sack => Control::Reno,
        }
    }
}

impl TcpSender {
    /// A sender with nothing sent yet; its first [`poll_transmit`](Self::poll_transmit) releases
    /// the initial window.
    pub fn new(config: SenderConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut rtt = RttEstimator::new(
            config.initial_rto,
            config.min_rto,
            config.max_rto,
            config.clock_granularity,
        );
        if config.linux_rto && config.variant.is_modern() {
            rtt = rtt.with_linux_rto();
        }
        let control = Control::for_config(&config);
        let modern = config.variant.is_modern();
        Ok(Self {
            control,
            delivery: modern.then(DeliveryTracker::new),
            pacing: (config.variant == Variant::Bbr).then_some(Pacing {
                next_departure: Instant::ZERO,
                waiting: false,
            }),
            loss_point: None,
            advanced_since_timeout: false,
            lost_counted_up_to: 0,
            started: false,
            rack: (modern && config.rack_tlp).then(Rack::new),
            probe: TailLossProbe::default(),
            rack_losses: 0,
            rtt,
            next_sequence: 0,
            sent_up_to: 0,
            unacknowledged: 0,
            // With a SYN, sequence 0 is the SYN and the data follows it.
            data_limit: config.packet_limit.map_or(u64::MAX, |packets| {
                packets.saturating_add(u64::from(config.syn_handshake))
            }),
            congestion_window: if config.syn_handshake {
                1.0
            } else {
                f64::from(config.initial_window)
            },
            // BBR: "tp->snd_ssthresh = TCP_INFINITE_SSTHRESH" (bbr_init).
            slow_start_threshold: if config.variant == Variant::Bbr {
                u32::MAX
            } else {
                config
                    .initial_slow_start_threshold
                    .unwrap_or(config.max_window)
            },
            window_inflation: 0,
            duplicate_acks: 0,
            recovery: None,
            last_recovery_point: None,
            sacked: SequenceRanges::new(),
            retransmitted: BTreeSet::new(),
            highest_retransmitted: None,
            retransmit_queue: VecDeque::new(),
            retransmission_deadline: None,
            backoff: 1,
            rtt_history_start: 0,
            timed_segment: None,
            syn_lost: false,
            stats: SenderStats::default(),
            stopped_at: None,
            config,
        })
    }

    /// The next segment to put on the network at `now`, if the window allows one.
    ///
    /// Call repeatedly until `None`. Starts the retransmission timer when it is not running
    /// (RFC 6298 §5.1).
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        if self.is_finished() {
            return None;
        }
        if !self.started {
            self.started = true;
            if let Control::Bbr(bbr) = &mut self.control {
                bbr.start(now);
            }
        }
        if let Some((sequence, retransmission)) = self.probe.pending.take() {
            return Some(self.emit_probe(now, sequence, retransmission));
        }
        if self.paced_out(now) {
            return None;
        }
        let Some(sequence) = self.next_to_send() else {
            self.note_application_limited();
            return None;
        };
        let segment = self.emit(now, sequence);
        self.schedule_next_departure(now, segment.payload_bytes);
        if !segment.retransmission {
            // RFC 8985 §7.2: "The sender SHOULD start or restart a loss probe PTO timer after
            // transmitting new data (that was not itself a loss probe)".
            self.arm_probe_timer(now);
        }
        Some(segment)
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called: the retransmission timer,
    /// (BBR) when a packet held back by pacing may leave, and (CUBIC and BBR) RACK's
    /// reordering timer and the tail loss probe's timer.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let paced = self
            .pacing
            .filter(|pacing| pacing.waiting)
            .map(|pacing| pacing.next_departure);
        let reorder = self.rack.as_ref().and_then(Rack::reorder_deadline);
        [
            self.retransmission_deadline,
            paced,
            reorder,
            self.probe.deadline,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Processes the retransmission timer at `now`; a call before the deadline does nothing.
    ///
    /// On expiry (RFC 6298 §5.4–5.6, RFC 5681 §3.1, ns-2 `TcpAgent::timeout`): ssthresh becomes
    /// half the window (at least 2), the window one packet, the RTO doubles (up to
    /// `max_backoff` and `max_rto`), fast recovery ends, the SACK scoreboard is cleared
    /// (RFC 6675 §5.1, ns-2 Sack1) and sending goes back to the first unacknowledged packet.
    ///
    /// CUBIC and BBR (RACK-TLP) also run RACK's reordering timer and the probe timer here, and
    /// their timeout keeps the SACK scoreboard and marks losses as RFC 8985 §6.3 says instead
    /// of going back to the first unacknowledged packet.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self
            .rack
            .as_ref()
            .and_then(Rack::reorder_deadline)
            .is_some_and(|deadline| now >= deadline)
        {
            self.on_reorder_timeout(now);
        }
        if self.probe.deadline.is_some_and(|deadline| now >= deadline) {
            self.on_probe_timeout(now);
        }
        match self.retransmission_deadline {
            Some(deadline) if now >= deadline => {}
            _ => return,
        }
        if self.unacknowledged >= self.sent_up_to {
            // Nothing outstanding: the timer had no reason to run.
            self.retransmission_deadline = None;
            return;
        }
        self.stats.timeouts += 1;
        if self.config.syn_handshake && self.unacknowledged == 0 {
            // The SYN was lost: RFC 5681 §3.1, "if the SYN or SYN/ACK is lost, the initial
            // window used by a sender after a correctly transmitted SYN MUST be one segment"
            // (ns-2 sets `wnd_init_ = 1` when the first packet is dropped, `bugfix_ss_`).
            self.syn_lost = true;
        }
        let window = self
            .congestion_window
            .min(f64::from(self.config.max_window));
        let reduce = self.timeout_reduces_ssthresh();
        match &mut self.control {
            Control::Reno => self.slow_start_threshold = self.half_window(),
            Control::Cubic(cubic) if reduce => {
                self.slow_start_threshold = cubic.on_timeout(window) as u32;
            }
            Control::Cubic(cubic) => cubic.restart_epoch(),
            Control::Bbr(bbr) => bbr.on_timeout(window, reduce),
        }
        self.advanced_since_timeout = false;
        // RFC 5681 §3.1 "cwnd ... MUST be set to no more than the loss window, LW, which
        // equals 1 full-sized segment"; Linux `tcp_enter_loss`: "tcp_packets_in_flight(tp) + 1"
        // with everything marked lost.
        self.congestion_window = 1.0;
        self.loss_point = Some(self.sent_up_to);
        self.lost_counted_up_to = self.sent_up_to;
        self.window_inflation = 0;
        self.duplicate_acks = 0;
        self.recovery = None;
        // RFC 6582 §3.2 step 4 / RFC 6675 §5.1: no fast retransmit for data sent before the
        // timeout (ns-2 sets `recover_ = maxseq_`).
        self.last_recovery_point = Some(self.sent_up_to);
        self.backoff = self.backoff.saturating_mul(2).min(self.config.max_backoff);
        self.timed_segment = None;
        // ns-3.37 `ReTxTimeout`: "// Empty RTT history m_history.clear();".
        self.rtt_history_start = self.sent_up_to;
        self.retransmitted.clear();
        self.highest_retransmitted = None;
        self.retransmit_queue.clear();
        self.retransmission_deadline = Some(now + self.retransmission_timeout());
        if self.rack.is_some() {
            self.rack_mark_losses_on_timeout(now);
        } else {
            self.next_sequence = self.unacknowledged;
            if !self.config.timeout_keeps_sacks {
                self.sacked.clear();
            }
        }
    }

    /// Processes an ACK arriving at `now`.
    ///
    /// ACKs below the current cumulative ACK are ignored (counted in
    /// [`SenderStats::stale_acks`]); SACK blocks outside the outstanding data are clipped or
    /// ignored. An ACK for data never sent is refused with an error and changes nothing.
    pub fn handle_ack(&mut self, now: Instant, ack: &Ack) -> Result<(), AckError> {
        self.stats.acks_received += 1;
        let acknowledged_up_to = ack.next_expected();
        if acknowledged_up_to > self.sent_up_to {
            self.stats.invalid_acks += 1;
            return Err(AckError::UnsentData {
                acknowledged_up_to,
                sent_up_to: self.sent_up_to,
            });
        }
        if acknowledged_up_to < self.unacknowledged {
            self.stats.stale_acks += 1;
            return Ok(());
        }
        // BBR's `rs.prior_in_flight`; only BBR reads it.
        let prior_in_flight = if matches!(self.control, Control::Bbr(_)) {
            self.pipe()
        } else {
            0
        };
        // ns-3.37's "uint32_t previousLost = m_txBuffer->GetLost();", for `ns3_bbr_losses`.
        let marked_lost_before = self.marked_lost_for_bbr();
        // ns-3.37 `m_isRetransDataAcked`, for PRR's slow-start reduction bound.
        let retransmission_acked = self.config.proportional_rate_reduction
            && self
                .retransmitted
                .first()
                .is_some_and(|&sequence| sequence < acknowledged_up_to);
        let timestamp_rtt = self.timestamp_rtt(now, ack, acknowledged_up_to);
        let delivered = self.account_deliveries(now, ack, acknowledged_up_to, timestamp_rtt);
        let newly_acknowledged = acknowledged_up_to - self.unacknowledged;
        if newly_acknowledged > 0 {
            self.advance(now, acknowledged_up_to);
        }
        let sacked_new = self.config.variant.uses_sack() && self.update_scoreboard(ack);
        self.take_rtt_sample(now, &delivered);
        if self.rack.is_some() {
            self.process_probe_ack(ack, newly_acknowledged);
            self.rack_losses = self.rack_detect_loss(now);
        }
        if newly_acknowledged > 0 {
            self.on_new_ack(now, newly_acknowledged, delivered.packets);
        } else if self.unacknowledged < self.sent_up_to
            && (sacked_new || !self.config.sack_dupacks || !self.config.variant.uses_sack())
        {
            self.on_duplicate_ack(now);
        }
        if self
            .loss_point
            .is_some_and(|point| self.unacknowledged >= point)
        {
            self.loss_point = None;
        }
        self.reduce_proportionally(delivered.packets, retransmission_acked);
        if self.rack.is_some() {
            self.rack_start_recovery(now);
            if newly_acknowledged > 0 {
                // RFC 8985 §7.2: "... or upon receiving an ACK that cumulatively acknowledges
                // new data unless it is already in fast recovery, RTO recovery, or segments
                // have been SACKed".
                self.arm_probe_timer(now);
            } else if !self.probe_timer_allowed() {
                // Linux has one timer for the probe, RACK's reordering timer and the RTO:
                // leaving the Open state on an ACK gives the timer back to the RTO.
                self.probe.deadline = None;
            }
        }
        if self.is_finished() {
            self.retransmission_deadline = None;
            self.recovery = None;
            self.probe.deadline = None;
            if let Some(rack) = &mut self.rack {
                rack.cancel_reorder_timer();
            }
        }
        if matches!(self.control, Control::Bbr(_)) {
            self.bbr_on_ack(now, &delivered, prior_in_flight, marked_lost_before);
        }
        Ok(())
    }

    /// Stops the application at `now`: no new data after this, but what was sent is still
    /// retransmitted until acknowledged (like stopping an ns-2 FTP source).
    pub fn stop(&mut self, now: Instant) {
        self.data_limit = self.data_limit.min(self.sent_up_to);
        if self.stopped_at.is_none() {
            self.stopped_at = Some(now);
        }
        if self.is_finished() {
            self.retransmission_deadline = None;
            self.recovery = None;
            self.probe.deadline = None;
        }
    }

    /// Whether all the application's data has been sent and acknowledged (never for a bulk
    /// sender that was not stopped).
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.unacknowledged >= self.data_limit
    }

    /// When [`stop`](Self::stop) was first called.
    #[must_use]
    pub fn stopped_at(&self) -> Option<Instant> {
        self.stopped_at
    }

    /// The configuration the sender was built with.
    #[must_use]
    pub fn config(&self) -> &SenderConfig {
        &self.config
    }

    /// The loss recovery variant.
    #[must_use]
    pub fn variant(&self) -> Variant {
        self.config.variant
    }

    /// Counters for logging.
    #[must_use]
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    /// Payload bytes sent, retransmissions included (ns-2 `ndatabytes_`).
    #[must_use]
    pub fn bytes_sent(&self) -> u64 {
        self.stats.bytes_sent
    }

    /// Payload bytes retransmitted (ns-2 `nrexmitbytes_`).
    #[must_use]
    pub fn bytes_retransmitted(&self) -> u64 {
        self.stats.bytes_retransmitted
    }

    /// Congestion window in packets (ns-2 `cwnd_`), without the fast recovery inflation.
    #[must_use]
    pub fn congestion_window(&self) -> f64 {
        self.congestion_window
    }

    /// Packets the sender may have outstanding now: the congestion window plus Reno/NewReno
    /// fast recovery inflation, capped by `max_window`.
    #[must_use]
    pub fn effective_window(&self) -> f64 {
        (self.congestion_window + f64::from(self.window_inflation))
            .min(f64::from(self.config.max_window))
    }

    /// Slow-start threshold in packets (ns-2 `ssthresh_`).
    #[must_use]
    pub fn slow_start_threshold(&self) -> u32 {
        self.slow_start_threshold
    }

    /// Whether the window grows exponentially (congestion window below ssthresh).
    #[must_use]
    pub fn in_slow_start(&self) -> bool {
        self.congestion_window < f64::from(self.slow_start_threshold)
    }

    /// BBR's mode (`None` for the other variants).
    #[must_use]
    pub fn bbr_mode(&self) -> Option<BbrMode> {
        match &self.control {
            Control::Bbr(bbr) => Some(bbr.mode()),
            _ => None,
        }
    }

    /// BBR's bottleneck-bandwidth estimate in packets per second and its min-RTT estimate
    /// (`None` for the other variants).
    #[must_use]
    pub fn bbr_model(&self) -> Option<(f64, Option<Duration>)> {
        match &self.control {
            Control::Bbr(bbr) => Some((bbr.bottleneck_bandwidth(), bbr.min_rtt())),
            _ => None,
        }
    }

    /// BBR's pacing rate in payload bytes per second and its pacing gain (`None` for the
    /// other variants, which are not paced).
    #[must_use]
    pub fn pacing(&self) -> Option<(f64, f64)> {
        match &self.control {
            Control::Bbr(bbr) => Some((bbr.pacing_rate(), bbr.pacing_gain())),
            _ => None,
        }
    }

    /// CUBIC's W_max, the window at the last reduction (`None` for the other variants; 0
    /// before the first reduction).
    #[must_use]
    pub fn cubic_max_window(&self) -> Option<f64> {
        match &self.control {
            Control::Cubic(cubic) => Some(cubic.max_window()),
            _ => None,
        }
    }

    /// Whether a fast recovery is in progress.
    #[must_use]
    pub fn in_recovery(&self) -> bool {
        self.recovery.is_some()
    }

    /// Smoothed RTT (RFC 6298 SRTT), once a sample was taken.
    #[must_use]
    pub fn smoothed_rtt(&self) -> Option<Duration> {
        self.rtt.smoothed()
    }

    /// RTT variation (RFC 6298 RTTVAR), once a sample was taken.
    #[must_use]
    pub fn rtt_variation(&self) -> Option<Duration> {
        self.rtt.variation()
    }

    /// The most recent RTT sample.
    #[must_use]
    pub fn latest_rtt(&self) -> Option<Duration> {
        self.rtt.latest()
    }

    /// The retransmission timeout the timer uses now, backoff included.
    #[must_use]
    pub fn retransmission_timeout(&self) -> Duration {
        self.rtt.backed_off_rto(self.backoff)
    }

    /// The retransmission timeout without backoff (what PFTK's T0 stands for).
    #[must_use]
    pub fn base_retransmission_timeout(&self) -> Duration {
        self.rtt.base_rto()
    }

    /// Current backoff factor: 1, doubled by each timeout, back to 1 with the next RTT sample.
    #[must_use]
    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// Lowest packet not yet cumulatively acknowledged (SND.UNA).
    #[must_use]
    pub fn first_unacknowledged(&self) -> u64 {
        self.unacknowledged
    }

    /// Sequence number the next new packet gets: one past the highest packet sent.
    #[must_use]
    pub fn next_new_sequence(&self) -> u64 {
        self.sent_up_to
    }

    /// Packets sent and not cumulatively acknowledged.
    #[must_use]
    pub fn outstanding_packets(&self) -> u64 {
        self.sent_up_to - self.unacknowledged
    }

    /// Packets the receiver reported holding above the cumulative ACK (SACK variant).
    #[must_use]
    pub fn sacked_packets(&self) -> u64 {
        self.sacked.len()
    }

    // ---- sending ----------------------------------------------------------------------

    /// Chooses the sequence number of the next segment, if any may be sent.
    fn next_to_send(&mut self) -> Option<u64> {
        if self.rack.is_some() {
            return self.rack_next_to_send();
        }
        while let Some(sequence) = self.retransmit_queue.pop_front() {
            if sequence >= self.unacknowledged
                && sequence < self.sent_up_to
                && !self.sacked.contains(sequence)
            {
                return Some(sequence);
            }
        }
        if self.config.variant.uses_sack() && self.recovery.is_some() {
            return self.sack_recovery_next();
        }
        let window = self.usable_window();
        loop {
            let sequence = self.next_sequence;
            // After a timeout that kept the SACKed packets, what was sent since; otherwise the
            // window counts from the cumulative ACK.
            let in_flight = self
                .in_flight_after_timeout(sequence)
                .unwrap_or(sequence - self.unacknowledged);
            if sequence >= self.data_limit || in_flight >= window {
                return None;
            }
            self.next_sequence += 1;
            // After a timeout, skip what the receiver reported holding since.
            if !self.sacked.contains(sequence) {
                return Some(sequence);
            }
        }
    }

    /// Packets the window allows beyond the cumulative ACK (ns-2 `window()`): the congestion
    /// window, Reno inflation, and one more per early duplicate ACK with limited transmit
    /// (RFC 3042; ns-2 `send_one`), capped by `max_window`.
    fn usable_window(&self) -> u64 {
        let mut window = self.congestion_window.floor() as u64 + u64::from(self.window_inflation);
        if self.config.limited_transmit
            && self.recovery.is_none()
            && self.duplicate_acks < self.config.duplicate_ack_threshold
        {
            window += u64::from(self.duplicate_acks);
        }
        window.min(u64::from(self.config.max_window))
    }

    /// RFC 6675 §5 step (C): while `cwnd - pipe >= 1`, send what `NextSeg()` picks.
    fn sack_recovery_next(&mut self) -> Option<u64> {
        if !self.pipe_below_window() {
            return None;
        }
        // NextSeg rule 1: the first lost, unSACKed packet above HighRxt.
        if let Some(sequence) = self.next_lost_packet() {
            return Some(sequence);
        }
        // Rule 2: new data. Rules 3 and 4 (retransmitting packets not yet deemed lost, rescue
        // retransmission) are not implemented, as in ns-2's Sack1; the timer covers those cases.
        self.take_new_data()
    }

    /// RFC 6675 §5 step (C)'s condition, `cwnd - pipe >= 1`.
    fn pipe_below_window(&self) -> bool {
        self.congestion_window - (self.pipe() as f64) >= 1.0
    }

    /// Whether the next new packet may leave: the application has it and the receiver's window
    /// holds it.
    fn new_data_allowed(&self) -> bool {
        let window_end = self
            .unacknowledged
            .saturating_add(u64::from(self.config.max_window));
        self.sent_up_to < self.data_limit && self.sent_up_to < window_end
    }

    /// The next new packet, if [`TcpSender::new_data_allowed`]; it becomes the next to send.
    fn take_new_data(&mut self) -> Option<u64> {
        let sequence = self.sent_up_to;
        self.new_data_allowed().then(|| {
            self.next_sequence = sequence + 1;
            sequence
        })
    }

    /// Builds the segment for `sequence` and updates counters, RTT timing and the timer.
    fn emit(&mut self, now: Instant, sequence: u64) -> Segment {
        if self.delivery.is_some() {
            let in_flight = self.pipe();
            if let Some(delivery) = &mut self.delivery {
                delivery.on_sent(now, sequence, in_flight);
            }
        }
        if let Some(rack) = &mut self.rack {
            rack.on_sent(now, sequence);
        }
        let retransmission = sequence < self.sent_up_to;
        let syn = self.config.syn_handshake && sequence == 0;
        // ns-2 sends the SYN as a bare header (`databytes = 0`, size `tcpip_base_hdr_size_`).
        let payload_bytes = if syn { 0 } else { self.config.segment_size };
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += u64::from(payload_bytes);
        if let Some(recovery) = &mut self.recovery {
            // ns-3.37 `SendDataPacket`: "Update bytes sent during recovery phase".
            recovery.prr.sent += 1;
        }
        if retransmission {
            self.stats.segments_retransmitted += 1;
            self.stats.bytes_retransmitted += u64::from(payload_bytes);
            // Karn's algorithm: no RTT sample across a retransmission (ns-2 clears
            // `rtt_active_` whenever it retransmits).
            self.timed_segment = None;
            // RFC 6675's HighRxt and pipe in a SACK recovery; with
            // `sacked_retransmissions_in_flight`, also what is resent after a timeout (with or
            // without SACK), which counts in flight until acknowledged.
            let in_sack_recovery = self.recovery.is_some() && self.config.variant.uses_sack();
            let resent_after_timeout =
                self.config.sacked_retransmissions_in_flight && self.loss_point.is_some();
            if (in_sack_recovery || resent_after_timeout) && self.rack.is_none() {
                self.retransmitted.insert(sequence);
                self.highest_retransmitted = Some(
                    self.highest_retransmitted
                        .map_or(sequence, |high| high.max(sequence)),
                );
            }
        } else {
            self.sent_up_to = sequence + 1;
            // CUBIC and BBR take an RTT sample from every ACK (`delivery`) instead.
            if self.timed_segment.is_none() && self.delivery.is_none() {
                self.timed_segment = Some((sequence, now));
            }
        }
        if self.next_sequence < self.sent_up_to && !retransmission {
            self.next_sequence = self.sent_up_to;
        }
        // RFC 6298 §5.1: start the timer if it is not running.
        if self.retransmission_deadline.is_none() {
            self.retransmission_deadline = Some(now + self.retransmission_timeout());
        } else if retransmission
            && sequence == self.unacknowledged
            && self
                .rack
                .as_ref()
                .is_some_and(|rack| rack.reorder_deadline().is_none())
        {
            // Linux `tcp_xmit_retransmit_queue` (RACK-TLP's recovery): "if (skb == rtx_head &&
            // icsk->icsk_pending != ICSK_TIME_REO_TIMEOUT) rearm_timer = true; ... if
            // (rearm_timer) tcp_reset_xmit_timer(sk, ICSK_TIME_RETRANS, inet_csk(sk)->icsk_rto,
            // TCP_RTO_MAX);": resending the first unacknowledged packet gives it a whole RTO
            // from now, so a retransmission that needs a round trip does not race a timer
            // started at the last cumulative ACK.
            self.restart_timer(now);
        }
        Segment {
            sequence,
            payload_bytes,
            retransmission,
            syn,
            timestamp: now,
        }
    }

    // ---- acknowledgements -------------------------------------------------------------

    /// Moves the cumulative ACK to `acknowledged_up_to` and takes an RTT sample if the timed
    /// segment is covered.
    fn advance(&mut self, now: Instant, acknowledged_up_to: u64) {
        self.unacknowledged = acknowledged_up_to;
        if self.next_sequence < acknowledged_up_to {
            self.next_sequence = acknowledged_up_to;
        }
        self.sacked.remove_below(acknowledged_up_to);
        if let Some(delivery) = &mut self.delivery {
            delivery.release_below(acknowledged_up_to);
        }
        if let Some(rack) = &mut self.rack {
            rack.release_below(acknowledged_up_to);
        }
        self.retransmitted = self.retransmitted.split_off(&acknowledged_up_to);
        self.duplicate_acks = 0;
        self.advanced_since_timeout = true;
        if self.config.backoff_ends_with_new_ack {
            // ns-3.37 `NewAck`: the RTO is recomputed from the estimator, without the doubling.
            self.backoff = 1;
        }
        if let Some((sequence, sent_at)) = self.timed_segment {
            if acknowledged_up_to > sequence {
                self.rtt.on_sample(now.saturating_duration_since(sent_at));
                // RFC 6298 §5.7 / Karn: a fresh sample ends the backoff (ns-2 resets
                // `t_backoff_` here).
                self.backoff = 1;
                self.timed_segment = None;
            }
        }
    }

    /// Records the ACK's SACK blocks, clipped to the outstanding packets (RFC 6675 `Update()`);
    /// whether they SACKed a packet not SACKed before.
    fn update_scoreboard(&mut self, ack: &Ack) -> bool {
        let mut changed = false;
        for block in ack.sack_blocks() {
            let start = block.start.max(self.unacknowledged);
            let end = block.end.min(self.sent_up_to);
            if start < end {
                changed |= self.sacked.insert(start, end) > 0;
            }
        }
        if changed
            && !self.retransmitted.is_empty()
            && !self.config.sacked_retransmissions_in_flight
        {
            let sacked = &self.sacked;
            self.retransmitted
                .retain(|&sequence| !sacked.contains(sequence));
        }
        changed
    }

    /// An ACK that acknowledges new data (`newly_acknowledged` packets; `delivered` counts
    /// the SACKed ones too, for CUBIC).
    fn on_new_ack(&mut self, now: Instant, newly_acknowledged: u64, delivered: u64) {
        let growth = self.packets_for_growth(newly_acknowledged, delivered);
        let Some(mut recovery) = self.recovery else {
            self.open_window(now, growth);
            if self.config.syn_handshake && self.unacknowledged == 1 {
                // The SYN is acknowledged: the initial window opens (ns-2 `recv`: "if
                // (last_ack_ == 0 && delay_growth_) cwnd_ = initial_window();").
                self.congestion_window = if self.syn_lost {
                    1.0
                } else {
                    f64::from(self.config.initial_window)
                };
            }
            self.restart_timer(now);
            return;
        };
        if self.unacknowledged >= recovery.point {
            // Full ACK: fast recovery is over; the window is ssthresh (RFC 5681 §3.2 step 6,
            // RFC 6582 §3.2 step 3 option 2, RFC 6675 §5 step (A)).
            self.exit_recovery();
            self.open_window(now, growth);
            self.restart_timer(now);
            return;
        }
        match self.config.variant {
            Variant::Reno => {
                // Reno leaves fast recovery on the first ACK for new data, partial or not
                // (ns-2 RenoTcpAgent).
                self.exit_recovery();
                self.open_window(now, growth);
                self.restart_timer(now);
            }
            Variant::NewReno => {
                // RFC 6582 §3.2 step 5: retransmit the first unacknowledged packet, deflate the
                // window by the amount acknowledged and add back one packet.
                self.deflate_window(newly_acknowledged.saturating_sub(1));
                self.retransmit_queue.push_back(self.unacknowledged);
                if recovery.partial_acks == 0 {
                    // Only the first partial ACK resets the timer ("Impatient" variant; ns-2
                    // `newreno_changes1_ 1`), so a window with many losses may still time out.
                    self.restart_timer(now);
                }
                recovery.partial_acks = recovery.partial_acks.saturating_add(1);
                self.recovery = Some(recovery);
            }
            Variant::Sack | Variant::Cubic | Variant::Bbr => {
                // RFC 6675: partial ACKs only update the scoreboard; the timer restarts as for
                // any ACK of new data (RFC 6298 §5.3), or, impatient, on the first only.
                if !self.config.impatient_timer || recovery.partial_acks == 0 {
                    self.restart_timer(now);
                }
                if self.config.partial_ack_retransmits
                    && self.rack.is_none()
                    && !self.retransmitted.contains(&self.unacknowledged)
                {
                    self.retransmit_queue.push_back(self.unacknowledged);
                }
                recovery.partial_acks = recovery.partial_acks.saturating_add(1);
                self.recovery = Some(recovery);
            }
        }
    }

    /// The packets an ACK of new data grows CUBIC's window by: those it delivers (`delivered`,
    /// Linux), or with [`SenderConfig::segment_counted_growth`] those its cumulative ACK
    /// covers (ns-3.37's `segsAcked`), only the ones above the recovery point on the ACK that
    /// ends an RTO recovery ("segsAcked = (ackNumber - m_recover) / m_tcb->m_segmentSize").
    fn packets_for_growth(&self, newly_acknowledged: u64, delivered: u64) -> u64 {
        if !self.config.segment_counted_growth {
            return delivered;
        }
        match self.loss_point {
            Some(point) if self.unacknowledged >= point => self.unacknowledged - point,
            _ => newly_acknowledged,
        }
    }

    /// An ACK that acknowledges nothing new while data is outstanding.
    fn on_duplicate_ack(&mut self, now: Instant) {
        self.duplicate_acks = self.duplicate_acks.saturating_add(1);
        self.stats.duplicate_acks += 1;
        if self.recovery.is_some() {
            if !self.config.variant.uses_sack() {
                // RFC 5681 §3.2 step 4: each further duplicate inflates the window by one.
                self.window_inflation = self.window_inflation.saturating_add(1);
            }
            return;
        }
        if self.rack.is_some() {
            // Linux with RACK (`tcp_time_to_recover`): only a loss RACK marked starts a
            // recovery; RFC 6675's duplicate-ACK rules are off ("tcp: disable RFC6675 loss
            // detection"). Three SACKed packets still do it, through RACK.reo_wnd = 0.
            return;
        }
        let threshold_reached = self.duplicate_acks == self.config.duplicate_ack_threshold;
        // RFC 6675 §5 step (2): three SACKed packets above the cumulative ACK also mean loss.
        // ns-3.37 tests the second unacknowledged packet (`DupAck`: "else if
        // (m_txBuffer->IsLost(m_highRxAckMark + m_tcb->m_segmentSize))").
        let tested = self.unacknowledged + u64::from(self.config.loss_test_on_second_packet);
        let sack_detects_loss = self.config.variant.uses_sack() && self.is_lost(tested);
        if (threshold_reached || sack_detects_loss) && self.fast_retransmit_allowed() {
            self.enter_recovery(now);
        }
    }

    /// RFC 6582 §3.2 step 1 / RFC 6675 §5: no new fast retransmit until the cumulative ACK has
    /// passed the point of the last recovery or timeout.
    fn fast_retransmit_allowed(&self) -> bool {
        match self.last_recovery_point {
            None => true,
            Some(point) => self.unacknowledged >= point,
        }
    }

    /// Fast retransmit: halve the window, retransmit the first unacknowledged packet and start
    /// fast recovery (RFC 5681 §3.2 steps 2–3, RFC 6582 §3.2 step 2, RFC 6675 §5 step (4)).
    fn enter_recovery(&mut self, now: Instant) {
        self.stats.fast_recoveries += 1;
        let point = self.sent_up_to;
        self.last_recovery_point = Some(point);
        self.recovery = Some(Recovery {
            point,
            partial_acks: 0,
            prr: RateReduction {
                flight_size: point - self.unacknowledged,
                ..RateReduction::default()
            },
        });
        let window = self
            .congestion_window
            .min(f64::from(self.config.max_window));
        match &mut self.control {
            Control::Reno => {}
            Control::Cubic(cubic) => {
                // RFC 9438 §4.6 (β_cubic), and the window is ssthresh through the recovery.
                self.slow_start_threshold = cubic.on_congestion_event(window) as u32;
                self.congestion_window = f64::from(self.slow_start_threshold);
                self.start_sack_recovery(now);
                return;
            }
            Control::Bbr(bbr) => {
                // BBR keeps ssthresh and its window; the ACK's `bbr_main` applies packet
                // conservation (`bbr_set_cwnd_to_recover_or_restore`).
                bbr.on_congestion_event(window);
                self.start_sack_recovery(now);
                return;
            }
        }
        self.slow_start_threshold = self.half_window();
        self.congestion_window = if self.config.precise_halving {
            // ns-2 `slowdown(CLOSE_SSTHRESH_HALF|CLOSE_CWND_HALF)` with `precisionReduce_`:
            // "halfwin = windowd() / 2; ... cwnd_ = halfwin;", at least 1.
            (self
                .congestion_window
                .min(f64::from(self.config.max_window))
                / 2.0)
                .max(1.0)
        } else {
            f64::from(self.slow_start_threshold)
        };
        // Reno/NewReno: cwnd = ssthresh + 3 (RFC 5681), the three packets that left the
        // network; SACK counts them in `pipe` instead.
        self.window_inflation = if self.config.variant.uses_sack() {
            0
        } else {
            self.config.duplicate_ack_threshold
        };
        self.start_sack_recovery(now);
    }

    /// What every fast retransmit does once the window is set: clear the recovery's
    /// retransmission bookkeeping, queue the first unacknowledged packet, restart the timer.
    fn start_sack_recovery(&mut self, now: Instant) {
        self.retransmitted.clear();
        self.highest_retransmitted = None;
        self.retransmit_queue.clear();
        if self.rack.is_none() {
            self.retransmit_queue.push_back(self.unacknowledged);
        } else {
            // The first retransmission leaves at once, whatever pipe says: RFC 6675 §5 (4.3)
            // "Retransmit the first data segment presumed dropped", Linux PRR's
            // `tcp_cwnd_reduction` ("sndcnt = max(sndcnt, (tp->prr_out ? 0 : 1))").
            if let Some(first) = self.rack.as_ref().and_then(Rack::first_lost) {
                self.retransmit_queue.push_back(first);
            }
            // RACK retransmits what it marked lost. RFC 8985 §7.1: "Reset TLP.is_retrans and
            // TLP.end_seq when initiating a connection, fast recovery, or RTO recovery."
            self.probe = TailLossProbe {
                rtt_sampled: self.probe.rtt_sampled,
                ..TailLossProbe::default()
            };
        }
        self.timed_segment = None;
        // ns-2 restarts the timer on fast retransmit (`reset_rtx_timer(1, 0)`); ns-3.37 does not
        // (`SendDataPacket` starts it only "if (m_retxEvent.IsExpired())"), so the
        // retransmission races the timer started at the last new ACK.
        if !self.config.impatient_timer {
            self.restart_timer(now);
        }
    }

    fn exit_recovery(&mut self) {
        self.recovery = None;
        self.window_inflation = 0;
        // ns-2 with `precisionReduce_` leaves the window where the fast retransmit (and
        // NewReno's deflation, `exit_recovery_fix_ 0`) put it; the RFCs set it to ssthresh.
        // CUBIC as Linux `tcp_end_cwnd_reduction` ("tcp_snd_cwnd_set(tp, tp->snd_ssthresh)");
        // BBR restores its window itself (`bbr_set_cwnd_to_recover_or_restore`).
        if !self.config.precise_halving && !matches!(self.control, Control::Bbr(_)) {
            self.congestion_window = f64::from(self.slow_start_threshold);
        }
        self.retransmitted.clear();
        self.highest_retransmitted = None;
        self.retransmit_queue.clear();
    }

    /// RFC 6937's Proportional Rate Reduction with the slow-start reduction bound, as ns-3.37's
    /// `TcpPrrRecovery::DoRecovery` (its default recovery, `ReductionBound` SSRB) runs it on
    /// every ACK of a fast recovery that delivers data, and on the one that starts it: the
    /// window becomes the packets in flight plus those the ACK lets leave, "if
    /// (tcb->m_bytesInFlight > tcb->m_ssThresh) { sendCount = std::ceil(m_prrDelivered *
    /// tcb->m_ssThresh * 1.0 / m_recoveryFlightSize) - m_prrOut; }" and otherwise, below
    /// ssthresh, "limit = std::max(m_prrDelivered - m_prrOut, deliveredBytes) +
    /// tcb->m_segmentSize" if the ACK acknowledges a retransmission, else "limit =
    /// deliveredBytes", at most up to ssthresh; at least the fast retransmit ("sendCount =
    /// std::max(sendCount, static_cast<int>(m_prrOut > 0 ? 0 : tcb->m_segmentSize))"). CUBIC
    /// without RACK only; the recovery's end sets the window to ssthresh as before.
    fn reduce_proportionally(&mut self, delivered: u64, retransmission_acked: bool) {
        if !self.config.proportional_rate_reduction
            || self.rack.is_some()
            || !matches!(self.control, Control::Cubic(_))
        {
            return;
        }
        let in_flight = self.pipe();
        let threshold = u64::from(self.slow_start_threshold);
        let segment = u64::from(self.config.segment_size.max(1));
        let Some(recovery) = &mut self.recovery else {
            return;
        };
        let prr = &mut recovery.prr;
        if delivered == 0 && prr.sent > 0 {
            return;
        }
        prr.delivered += delivered;
        // In bytes, as ns-3 rounds: a fraction of a segment does not leave.
        let send_bytes: i128 = if in_flight > threshold {
            let dividend = i128::from(prr.delivered * segment) * i128::from(threshold * segment);
            let divisor = i128::from(prr.flight_size.max(1) * segment);
            (dividend + divisor - 1) / divisor - i128::from(prr.sent * segment)
        } else {
            let limit = if retransmission_acked {
                prr.delivered.saturating_sub(prr.sent).max(delivered) + 1
            } else {
                delivered
            };
            i128::from(limit.min(threshold - in_flight) * segment)
        };
        let send_bytes = if prr.sent == 0 {
            send_bytes.max(i128::from(segment))
        } else {
            send_bytes
        };
        let window = in_flight as f64 + send_bytes as f64 / segment as f64;
        self.congestion_window = window.max(1.0);
    }

    /// Removes `packets` from the usable window, inflation first, keeping at least one packet.
    fn deflate_window(&mut self, packets: u64) {
        let from_inflation = packets.min(u64::from(self.window_inflation));
        self.window_inflation -= from_inflation as u32;
        let rest = (packets - from_inflation) as f64;
        self.congestion_window = (self.congestion_window - rest).max(1.0);
    }

    /// Window growth on an ACK for new data outside recovery.
    ///
    /// Reno: slow start (+1 per ACK) below ssthresh, congestion avoidance (+1/cwnd per ACK)
    /// above (RFC 5681 §3.1; ns-2 `opencwnd` with `windowOption_ 1`: one increase per ACK,
    /// however many packets it acknowledges). CUBIC: Linux `tcp_slow_start` ("cwnd =
    /// min(cwnd + acked, tp->snd_ssthresh)", the rest of `acked` to congestion avoidance), then
    /// RFC 9438 for the `delivered` packets; with [`SenderConfig::segment_counted_growth`],
    /// ns-3.37's `TcpCubic::IncreaseWindow`, whose slow start takes them all ("tcb->m_cWnd +=
    /// segmentsAcked * tcb->m_segmentSize; segmentsAcked = 0;"). BBR sets its window on every
    /// ACK instead.
    fn open_window(&mut self, now: Instant, delivered: u64) {
        match &mut self.control {
            Control::Reno => {
                if self.congestion_window < f64::from(self.slow_start_threshold) {
                    self.congestion_window += 1.0;
                } else {
                    self.congestion_window += 1.0 / self.congestion_window;
                }
            }
            Control::Cubic(cubic) => {
                let mut acked = delivered as f64;
                let threshold = f64::from(self.slow_start_threshold);
                if self.congestion_window < threshold && self.config.segment_counted_growth {
                    self.congestion_window += acked;
                    acked = 0.0;
                } else if self.congestion_window < threshold {
                    let grown = (self.congestion_window + acked).min(threshold);
                    acked -= grown - self.congestion_window;
                    self.congestion_window = grown;
                }
                if acked > 0.0 {
                    self.congestion_window =
                        cubic.congestion_avoidance(now, self.congestion_window, acked);
                }
                // Linux `snd_cwnd_clamp`.
                self.congestion_window = self
                    .congestion_window
                    .min(f64::from(self.config.max_window));
            }
            Control::Bbr(_) => {}
        }
    }

    // ---- CUBIC's and BBR's per-ACK inputs, BBR's pacing --------------------------------

    /// Counts the packets `ack` delivers (cumulatively up to `acknowledged_up_to`, or newly
    /// SACKed) and builds the ACK's rate and RTT samples; nothing for Reno's variants.
    fn account_deliveries(
        &mut self,
        now: Instant,
        ack: &Ack,
        acknowledged_up_to: u64,
        timestamp_rtt: Option<Duration>,
    ) -> AckDelivery {
        let Some(delivery) = &mut self.delivery else {
            return AckDelivery::default();
        };
        let min_rtt = delivery.min_rtt();
        let rack = &mut self.rack;
        let mut deliver = |sequence: u64| {
            if let Some(transmission) = delivery.on_delivered(now, sequence) {
                if let Some(rack) = rack.as_mut() {
                    rack.on_delivered(now, sequence, transmission, min_rtt);
                }
            }
        };
        for sequence in self.unacknowledged..acknowledged_up_to {
            deliver(sequence);
        }
        for block in ack.sack_blocks() {
            let start = block.start.max(acknowledged_up_to);
            let end = block.end.min(self.sent_up_to);
            if start < end {
                self.sacked.for_each_gap(start, end, |gap_start, gap_end| {
                    for sequence in gap_start..gap_end {
                        deliver(sequence);
                    }
                });
            }
        }
        if let Some(rack) = &mut self.rack {
            rack.finish_ack(now);
        }
        if let Some(rtt) = timestamp_rtt {
            delivery.offer_timestamp_rtt(rtt);
        }
        if self.config.cumulative_rtt_samples || self.config.smoothed_rtt_to_congestion_control {
            let sample = if self.config.cumulative_rtt_samples {
                // ns-3.37 `EstimateRtt`: the history's oldest packet, if the ACK covers it and
                // it was sent once.
                let oldest = self.unacknowledged.max(self.rtt_history_start);
                (acknowledged_up_to > oldest)
                    .then(|| delivery.transmission(oldest))
                    .flatten()
                    .filter(|transmission| !transmission.retransmitted)
                    .map(|transmission| now.saturating_duration_since(transmission.sent_at))
            } else {
                delivery.pending_rtt()
            };
            // ns-3.37 judges rate samples against "m_tcb->m_minRtt", the smallest smoothed RTT.
            let filter_rtt = if self.config.smoothed_rtt_to_congestion_control {
                sample.and_then(|sample| {
                    let mut estimator = self.rtt.clone();
                    estimator.on_sample(sample);
                    estimator.smoothed()
                })
            } else {
                sample
            };
            delivery.replace_rtt(sample, filter_rtt);
        }
        delivery.finish_ack()
    }

    /// The RTT sample the ACK's timestamp echo gives under [`SenderConfig::timestamps`], used
    /// only where the ACK's packets give none. Linux `tcp_ack_update_rtt`: "RTTM Rule: A TSecr
    /// value received in a segment is used to update the averaged RTT measurement only if the
    /// segment acknowledges some new data, i.e., only if it advances the left edge of the send
    /// window" (`flag & FLAG_ACKED`); `tcp_rtt_tsopt_us`: "delta = tcp_time_stamp_ts(tp) -
    /// tp->rx_opt.rcv_tsecr; ... if (!delta) delta = 1; delta_us = delta * (USEC_PER_SEC /
    /// TCP_TS_HZ)", a millisecond clock (`TCP_TS_HZ` 1000) read by truncation.
    fn timestamp_rtt(&self, now: Instant, ack: &Ack, acknowledged_up_to: u64) -> Option<Duration> {
        if !self.config.timestamps || acknowledged_up_to <= self.unacknowledged {
            return None;
        }
        let echo = ack.echo()?;
        let millis = |instant: Instant| instant.as_nanos() / 1_000_000;
        let delta = millis(now).checked_sub(millis(echo))?.max(1);
        Some(Duration::from_millis(delta))
    }

    /// CUBIC and BBR: the ACK's RTT sample feeds the RFC 6298 estimator (Linux samples every
    /// ACK) and CUBIC's minimum delay and HyStart.
    fn take_rtt_sample(&mut self, now: Instant, delivered: &AckDelivery) {
        let Some(rtt) = delivered.rtt else {
            return;
        };
        self.rtt.on_sample(rtt);
        self.backoff = 1;
        self.probe.rtt_sampled = true;
        if let Control::Cubic(cubic) = &mut self.control {
            let window = (
                self.congestion_window,
                self.congestion_window < f64::from(self.slow_start_threshold),
            );
            let progress = (self.unacknowledged, self.sent_up_to);
            // ns-3.37 `PktsAcked(m_tcb, segsAcked, m_tcb->m_lastRtt)`: the smoothed RTT.
            let rtt = if self.config.smoothed_rtt_to_congestion_control {
                self.rtt.smoothed().unwrap_or(rtt)
            } else {
                rtt
            };
            if let Some(threshold) = cubic.on_rtt_sample(now, rtt, window, progress) {
                // Linux `hystart_update`: "tp->snd_ssthresh = tcp_snd_cwnd(tp)".
                self.slow_start_threshold = threshold as u32;
            }
        }
    }

    /// The recovery state BBR sees (Linux `icsk_ca_state`).
    fn loss_state(&self) -> LossState {
        if self.loss_point.is_some() {
            LossState::Loss
        } else if self.recovery.is_some() {
            LossState::Recovery
        } else {
            LossState::Open
        }
    }

    /// Packets deemed lost (RFC 6675 `IsLost`) since the last count (BBR's `rs.losses`).
    fn newly_lost(&mut self) -> u64 {
        let Some(bound) = self.lost_below() else {
            return 0;
        };
        let from = self.lost_counted_up_to.max(self.unacknowledged);
        if bound <= from {
            return 0;
        }
        self.lost_counted_up_to = bound;
        self.unsacked_between(from, bound)
    }

    /// Packets in `from..to` not SACKed.
    fn unsacked_between(&self, from: u64, to: u64) -> u64 {
        if to <= from {
            return 0;
        }
        (to - from) - (self.sacked.count_below(to) - self.sacked.count_below(from))
    }

    /// ns-3.37's `TcpTxBuffer::m_lostOut` in packets: the outstanding packets marked lost (below
    /// the highest bound [`Self::newly_lost`] has counted, or all of them after a timeout) and
    /// not SACKed since, resent or not.
    fn marked_lost(&self) -> u64 {
        self.unsacked_between(
            self.unacknowledged,
            self.lost_counted_up_to.min(self.sent_up_to),
        )
    }

    /// [`Self::marked_lost`] when BBR reads ns-3's loss count (`ns3_bbr_losses`), else 0.
    fn marked_lost_for_bbr(&self) -> u64 {
        if self.config.ns3_bbr_losses {
            self.marked_lost()
        } else {
            0
        }
    }

    /// Linux `bbr_main` for one ACK: BBR's model, window and pacing rate.
    fn bbr_on_ack(
        &mut self,
        now: Instant,
        delivered: &AckDelivery,
        prior_in_flight: u64,
        marked_lost_before: u64,
    ) {
        let losses = if self.rack.is_some() {
            // Linux `rs.losses`: "tp->lost - prior_lost", the packets marked lost by this ACK.
            self.rack_losses
        } else if self.config.ns3_bbr_losses {
            // Marks this ACK's losses (the count it returns is Linux's, not read here).
            self.newly_lost();
            self.marked_lost().abs_diff(marked_lost_before)
        } else {
            self.newly_lost()
        };
        let in_flight = self.pipe();
        let state = self.loss_state();
        let Some(tracker) = &self.delivery else {
            return;
        };
        let ack = BbrAck {
            now,
            rate: delivered.rate,
            // ns-3.37 `UpdateRTprop` reads `m_lastRtt`, the smoothed RTT, on every ACK.
            rtt: if self.config.smoothed_rtt_to_congestion_control {
                self.rtt.smoothed()
            } else {
                delivered.rtt
            },
            acked: delivered.packets,
            losses,
            prior_in_flight,
            in_flight,
            delivered: tracker.delivered(),
            delivered_time: tracker.delivered_time(),
            state,
            slow_start_threshold: f64::from(self.slow_start_threshold),
            smoothed_rtt: self.rtt.smoothed(),
            earliest_departure: self.pacing.map_or(now, |pacing| pacing.next_departure),
            max_window: f64::from(self.config.max_window),
        };
        let Control::Bbr(bbr) = &mut self.control else {
            return;
        };
        let decision = bbr.on_ack(&ack, self.congestion_window);
        self.congestion_window = decision.window;
        if let Some(threshold) = decision.slow_start_threshold {
            self.slow_start_threshold = threshold as u32;
        }
        if decision.app_limited {
            if let Some(tracker) = &mut self.delivery {
                tracker.mark_app_limited(in_flight);
            }
        }
    }

    /// The draft's application-limited mark: the sender could send but the application has
    /// nothing left (a finite transfer or a stopped one).
    fn note_application_limited(&mut self) {
        if self.delivery.is_none()
            || self.sent_up_to < self.data_limit
            || !self.retransmit_queue.is_empty()
            || self.rack.as_ref().is_some_and(|rack| rack.lost_count() > 0)
        {
            return;
        }
        let in_flight = self.pipe();
        if let Some(delivery) = &mut self.delivery {
            delivery.mark_app_limited(in_flight);
        }
    }

    /// Whether pacing holds the next packet back at `now`. Linux paces from the 10th data
    /// segment on (`tcp_update_skb_after_send`: "tp->data_segs_out >= 10").
    fn paced_out(&mut self, now: Instant) -> bool {
        let data_segments = self.stats.segments_sent;
        let Some(pacing) = &mut self.pacing else {
            return false;
        };
        pacing.waiting = data_segments >= 10 && now < pacing.next_departure;
        pacing.waiting
    }

    /// Linux `tcp_update_skb_after_send`: the next departure moves by the packet's length at
    /// the pacing rate ("len_ns = skb->len * NSEC_PER_SEC / rate", the payload bytes), less up
    /// to half of it for lateness ("take into account OS jitter": a packet sent after its
    /// departure time earns that credit).
    fn schedule_next_departure(&mut self, now: Instant, payload_bytes: u32) {
        let Control::Bbr(bbr) = &self.control else {
            return;
        };
        let rate = bbr.pacing_rate();
        let data_segments = self.stats.segments_sent;
        let Some(pacing) = &mut self.pacing else {
            return;
        };
        let prior = pacing.next_departure;
        pacing.next_departure = pacing.next_departure.max(now);
        if rate <= 0.0 || data_segments < 10 {
            return;
        }
        let length = Duration::from_secs_f64(f64::from(payload_bytes) / rate);
        let credit = pacing.next_departure.saturating_duration_since(prior);
        pacing.next_departure += length - credit.min(length / 2);
    }

    /// ssthresh after a loss: half the window in whole packets, at least 2 (ns-2 `slowdown`
    /// with `CLOSE_SSTHRESH_HALF`: `int(window() / 2)`, with `window() = min(cwnd, window_)`;
    /// with `precisionReduce_`, `int(windowd() / 2)`, the same integer).
    fn half_window(&self) -> u32 {
        let window = self
            .congestion_window
            .min(f64::from(self.config.max_window))
            .floor() as u32;
        (window / 2).max(2)
    }

    /// Whether a timeout now takes ssthresh from the window: always, but with
    /// [`SenderConfig::ssthresh_once_per_loss`] (CUBIC and BBR) only as Linux's
    /// `tcp_enter_loss` does, "if it has not yet been made inside this window": outside a
    /// recovery (`icsk_ca_state <= TCP_CA_Disorder`, or the recovery's point reached:
    /// `!after(tp->high_seq, tp->snd_una)`), or in an RTO recovery once an ACK has moved the
    /// cumulative ACK since the last timeout (`TCP_CA_Loss && !icsk_retransmits`).
    fn timeout_reduces_ssthresh(&self) -> bool {
        if !(self.config.ssthresh_once_per_loss && self.config.variant.is_modern()) {
            return true;
        }
        match (self.recovery, self.loss_point) {
            (Some(_), _) => false,
            (None, Some(_)) => self.advanced_since_timeout,
            (None, None) => true,
        }
    }

    /// RFC 6298 §5.2–5.3: restart the timer if data is outstanding, stop it otherwise.
    fn restart_timer(&mut self, now: Instant) {
        self.retransmission_deadline = if self.unacknowledged < self.sent_up_to {
            Some(now + self.retransmission_timeout())
        } else {
            None
        };
    }

    // ---- RACK-TLP (RFC 8985), CUBIC and BBR ----------------------------------------------

    /// Whether a fast recovery or an RTO recovery is under way (RFC 8985's "Fast or RTO
    /// recovery"; Linux `icsk_ca_state >= TCP_CA_Recovery`).
    fn in_any_recovery(&self) -> bool {
        self.recovery.is_some() || self.loss_point.is_some()
    }

    /// `RACK.reo_wnd` now (RFC 8985 §6.2 step 4).
    fn rack_reordering_window(&self) -> Duration {
        let Some(rack) = &self.rack else {
            return Duration::ZERO;
        };
        rack.reordering_window(
            self.in_any_recovery(),
            self.sacked.len(),
            u64::from(self.config.duplicate_ack_threshold),
            self.delivery.as_ref().and_then(DeliveryTracker::min_rtt),
            self.rtt.smoothed(),
        )
    }

    /// RFC 8985 §6.2 step 5 on an ACK; returns the packets marked lost.
    fn rack_detect_loss(&mut self, now: Instant) -> u64 {
        let window = self.rack_reordering_window();
        let (Some(rack), Some(tracker)) = (&mut self.rack, &self.delivery) else {
            return 0;
        };
        rack.detect_loss(now, window, tracker, self.unacknowledged)
    }

    /// The reordering timer fired (Linux `tcp_rack_reo_timeout`): detect again and, if packets
    /// were marked lost, start a fast recovery when none is under way.
    fn on_reorder_timeout(&mut self, now: Instant) {
        let window = self.rack_reordering_window();
        let (Some(rack), Some(tracker)) = (&mut self.rack, &self.delivery) else {
            return;
        };
        let marked = rack.on_reorder_timeout(now, window, tracker, self.unacknowledged);
        if marked > 0 {
            self.stats.reorder_timeouts += 1;
            self.rack_start_recovery(now);
        }
    }

    /// RFC 8985 §6.3 on a retransmission timeout: the first unacknowledged packet and every
    /// packet sent at least `RACK.rtt + RACK.reo_wnd` ago are lost; the SACKed ones stay
    /// delivered (Linux `tcp_timeout_mark_lost` without SACK reneging, which the sinks here
    /// never do). The probe is reset (§7.1).
    fn rack_mark_losses_on_timeout(&mut self, now: Instant) {
        let window = self.rack_reordering_window();
        self.probe = TailLossProbe {
            rtt_sampled: self.probe.rtt_sampled,
            ..TailLossProbe::default()
        };
        let (Some(rack), Some(tracker)) = (&mut self.rack, &self.delivery) else {
            return;
        };
        rack.on_retransmission_timeout(now, window, tracker, self.unacknowledged);
    }

    /// Linux `tcp_time_to_recover` with RACK ("Trick#1: The loss is proven"): packets marked
    /// lost outside any recovery start a fast recovery.
    fn rack_start_recovery(&mut self, now: Instant) {
        let lost = self.rack.as_ref().is_some_and(|rack| rack.lost_count() > 0);
        if lost && !self.in_any_recovery() && self.fast_retransmit_allowed() {
            self.enter_recovery(now);
        }
    }

    /// What to send with RACK, in recovery or not: while `cwnd - pipe >= 1` (RFC 6675 §5
    /// step (C); Linux `tcp_cwnd_test`: in flight below cwnd), the lowest packet RACK marked
    /// lost — below HighRxt too: a lost retransmission is sent again —, else new data if the
    /// application and the receiver's window allow it (Linux `tcp_xmit_retransmit_queue`,
    /// then `tcp_write_xmit`).
    fn rack_next_to_send(&mut self) -> Option<u64> {
        while let Some(sequence) = self.retransmit_queue.pop_front() {
            if self
                .rack
                .as_ref()
                .is_some_and(|rack| rack.is_lost(sequence))
            {
                return Some(sequence);
            }
        }
        if !self.pipe_below_window() {
            return None;
        }
        if let Some(sequence) = self.rack.as_ref().and_then(Rack::first_lost) {
            return Some(sequence);
        }
        self.take_new_data()
    }

    /// Arms (or re-arms, or stops) the probe timer, RFC 8985 §7.2.
    ///
    /// Conditions: data in flight, no fast or RTO recovery, nothing SACKed and nothing marked
    /// lost ("unless it is already in fast recovery, RTO recovery, or segments have been
    /// SACKed (i.e., RACK.segs_sacked is not zero)"; Linux `tcp_schedule_loss_probe`: state
    /// Open or CWR).
    ///
    /// `TLP_calc_PTO()`: "If SRTT is available: PTO = 2 * SRTT; If FlightSize is one segment:
    /// PTO += TLP.max_ack_delay; Else: PTO = 1 sec; If Now() + PTO > TCP_RTO_expiration():
    /// PTO = TCP_RTO_expiration() - Now()". `TLP.max_ack_delay` is Linux's choice,
    /// `tcp_rto_min` (the minimum RTO, 200 ms; "Add minimum RTO to account for delayed ack
    /// when there's one outstanding packet").
    fn arm_probe_timer(&mut self, now: Instant) {
        let outstanding = self.sent_up_to - self.unacknowledged;
        if !self.probe_timer_allowed() {
            self.probe.deadline = None;
            return;
        }
        let mut timeout = match self.rtt.smoothed() {
            Some(smoothed) => {
                let mut timeout = 2 * smoothed;
                if outstanding == 1 {
                    timeout += self.config.min_rto;
                }
                timeout
            }
            None => Duration::from_secs(1),
        };
        if let Some(deadline) = self.retransmission_deadline {
            timeout = timeout.min(deadline.saturating_duration_since(now));
        }
        self.probe.deadline = Some(now + timeout);
    }

    /// Whether the probe timer may run (see [`Self::arm_probe_timer`]).
    fn probe_timer_allowed(&self) -> bool {
        self.rack
            .as_ref()
            .is_some_and(|rack| rack.lost_count() == 0)
            && self.unacknowledged < self.sent_up_to
            && !self.in_any_recovery()
            && self.sacked.is_empty()
            && !self.is_finished()
    }

    /// The probe timer fired: RFC 8985 §7.3. "When the PTO timer expires, the sender MUST check
    /// whether both of the following conditions are met before sending a loss probe: 1. First,
    /// there is no other previous loss probe still in flight. ... 2. Second, the sender has
    /// obtained an RTT measurement since the last loss probe transmission or the start of the
    /// connection." Then a new packet if the application and the receiver's window allow one,
    /// else "the sender SHOULD retransmit the highest-sequence segment sent so far and set
    /// TLP.is_retrans to true". Either way the retransmission timer is re-armed (§7.3: re-arm
    /// the RTO timer, not the PTO timer, after attempting to send a probe); it restarts from
    /// now when a probe leaves (Linux `tcp_send_loss_probe`: "Reset s.t. tcp_rearm_rto will
    /// restart timer from now").
    fn on_probe_timeout(&mut self, now: Instant) {
        self.probe.deadline = None;
        if self.probe.in_flight.is_some()
            || !self.probe.rtt_sampled
            || self.unacknowledged >= self.sent_up_to
        {
            return;
        }
        self.probe.pending = if self.new_data_allowed() {
            Some((self.sent_up_to, false))
        } else {
            Some((self.sent_up_to - 1, true))
        };
        self.restart_timer(now);
    }

    /// Hands out the probe the PTO decided on: past the congestion window and pacing (Linux
    /// `tcp_write_xmit(..., push_one = 2)`: "Force out a loss probe pkt."), and records
    /// `TLP.end_seq = SND.NXT` (§7.3).
    fn emit_probe(&mut self, now: Instant, sequence: u64, retransmission: bool) -> Segment {
        self.stats.loss_probes += 1;
        let segment = self.emit(now, sequence);
        self.schedule_next_departure(now, segment.payload_bytes);
        self.probe.in_flight = Some((self.sent_up_to, retransmission));
        self.probe.rtt_sampled = false;
        self.restart_timer(now);
        segment
    }

    /// RFC 8985 §7.4.2, `TLP_process_ack(ACK)`, without DSACK (the sinks never send one): "If
    /// TLP.end_seq is not None AND ACK's ack. number >= TLP.end_seq: If not TLP.is_retrans:
    /// TLP.end_seq = None /* TLP of new data delivered */ ... Else If ACK's ack. number >
    /// TLP.end_seq: TLP.end_seq = None /* Repaired the single loss */ (Invoke congestion
    /// control to react to the loss event the probe has repaired) Else If ACK is a DupAck
    /// without any SACK option: TLP.end_seq = None /* Case 2, above */".
    ///
    /// The reaction is Linux's `tcp_process_tlp_ack`: a window reduction (CWR) that ends at
    /// once, CUBIC's `ssthresh` becoming its window; BBR, which sets its window itself
    /// (`cong_control`), keeps it.
    fn process_probe_ack(&mut self, ack: &Ack, newly_acknowledged: u64) {
        let Some((end, retransmission)) = self.probe.in_flight else {
            return;
        };
        let acknowledged_up_to = ack.next_expected();
        if acknowledged_up_to < end {
            return;
        }
        if !retransmission {
            self.probe.in_flight = None;
        } else if acknowledged_up_to > end {
            self.probe.in_flight = None;
            let window = self
                .congestion_window
                .min(f64::from(self.config.max_window));
            if let Control::Cubic(cubic) = &mut self.control {
                self.slow_start_threshold = cubic.on_congestion_event(window) as u32;
                self.congestion_window = f64::from(self.slow_start_threshold);
            }
        } else if newly_acknowledged == 0 && ack.sack_blocks().is_empty() {
            self.probe.in_flight = None;
        }
    }

    // ---- SACK scoreboard queries (RFC 6675 §4) ---------------------------------------

    /// Packets below this one are lost if not SACKed: at least `DupThresh` SACKed packets lie
    /// above them (RFC 6675 `IsLost`, packet-granular).
    fn lost_below(&self) -> Option<u64> {
        self.sacked
            .nth_highest(u64::from(self.config.duplicate_ack_threshold))
    }

    /// RFC 6675 `IsLost(sequence)`.
    fn is_lost(&self, sequence: u64) -> bool {
        !self.sacked.contains(sequence) && self.lost_below().is_some_and(|bound| sequence < bound)
    }

    /// RFC 6675 `SetPipe()`: outstanding packets neither SACKed nor deemed lost, plus
    /// retransmissions not yet SACKed or acknowledged.
    ///
    /// With RACK the lost packets are the ones RACK marked and that were not sent again (Linux
    /// `tcp_packets_in_flight`: "packets_out - (sacked_out + lost_out) + retrans_out"; a
    /// retransmission RACK finds lost again leaves the count, as in `tcp_mark_skb_lost`).
    fn pipe(&self) -> u64 {
        let outstanding = self.sent_up_to - self.unacknowledged;
        let sacked = self.sacked.len();
        if let Some(rack) = &self.rack {
            return outstanding.saturating_sub(sacked + rack.lost_count());
        }
        if let Some(in_flight) = self.in_flight_after_timeout(self.next_sequence) {
            return in_flight;
        }
        let lost = self.lost_below().map_or(0, |bound| {
            (bound - self.unacknowledged) - self.sacked.count_below(bound)
        });
        (outstanding - sacked - lost) + self.retransmitted.len() as u64
    }

    /// Under [`SenderConfig::timeout_keeps_sacks`], between a timeout and the cumulative ACK
    /// passing its point: the packets in flight if the resending has reached `resend_point`,
    /// those below it neither acknowledged nor SACKed (ns-3.37 `BytesInFlight`, "m_sentSize -
    /// leftOut + retrans", after `SetSentListLost` deemed every unSACKed packet lost: the ones
    /// not yet sent again are not in flight). `None` otherwise.
    ///
    /// With [`SenderConfig::sacked_retransmissions_in_flight`], what was sent again since the
    /// timeout counts until the cumulative ACK covers it, SACKed or not, and new packets
    /// until acknowledged or SACKed.
    fn in_flight_after_timeout(&self, resend_point: u64) -> Option<u64> {
        let loss_point = self
            .loss_point
            .filter(|_| self.config.timeout_keeps_sacks)?;
        if self.config.sacked_retransmissions_in_flight {
            let new_end = resend_point.max(loss_point);
            let new_sacked = self.sacked.count_below(new_end) - self.sacked.count_below(loss_point);
            return Some(self.retransmitted.len() as u64 + (new_end - loss_point) - new_sacked);
        }
        Some((resend_point - self.unacknowledged) - self.sacked.count_below(resend_point))
    }

    /// RFC 6675 `NextSeg()` rule 1: the lowest lost, unSACKed packet above HighRxt.
    fn next_lost_packet(&self) -> Option<u64> {
        let bound = self.lost_below()?;
        let from = self
            .highest_retransmitted
            .map_or(self.unacknowledged, |high| high + 1)
            .max(self.unacknowledged);
        let candidate = self.sacked.first_gap_from(from);
        (candidate < bound).then_some(candidate)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod rack_tests;

#[cfg(test)]
mod profile_tests;
