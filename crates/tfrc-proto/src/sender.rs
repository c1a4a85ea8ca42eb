//! The TFRC sender (RFC 5348 §4), with the gTFRC rate floor and the Veno backlog report.
//!
//! Under [`crate::Profile::Ns2`] the same sender follows ns-2.35's `TfrcAgent` rate rules
//! instead of §4.2–§4.4 (see [`crate::ns2`] and the [`crate::Profile`] docs).
//!
//! # Call order
//! 1. Create with [`Sender::new`] (the driver chooses the session id and nonce, e.g. at random).
//! 2. Whenever [`Sender::poll_timeout`] returns a time that has come, call
//!    [`Sender::handle_timeout`]; an early call does nothing.
//! 3. When [`Sender::can_send`] is true and the application has data, build a packet with
//!    [`Sender::send_packet`] (or [`Sender::send_padded`] for bulk transfers). If the application
//!    has nothing to send at a send opportunity, call [`Sender::note_data_limited`]: the sender
//!    then stops asking for the send timer and treats the period as data-limited (§4.3, §8.2).
//! 4. Give every datagram from the receiver to [`Sender::handle_packet`].

use core::time::Duration;

use crate::config::{Config, ConfigError, SMALL_PACKET_MIN_INTERVAL};
use crate::deque::Deque;
use crate::equation;
use crate::loss_history;
use crate::ns2::{self, Ns2SenderState};
use crate::receipts::{CheckContext, CheckedIntervals, FalseIntervals, SentLedger};
use crate::receiver::NDUPACK;
use crate::time::{duration_from_secs, secs, Instant};
use crate::wire::{self, DataRepr, FeedbackRepr, Packet, PacketKind};

/// RTT filter constant q (RFC 5348 §4.3: "a value of 0.9 is RECOMMENDED").
pub const RTT_FILTER: f64 = 0.9;
/// Filter constant q2 of the √RTT average (RFC 5348 §4.5: 0.9).
pub const SQRT_RTT_FILTER: f64 = 0.9;
/// Initial no-feedback timeout before any RTT sample (RFC 5348 §4.2: two seconds).
pub const INITIAL_NO_FEEDBACK_TIMEOUT: Duration = Duration::from_secs(2);
/// Packets sent but not yet covered by feedback that the sender remembers for data-limited
/// accounting; older ones are forgotten (bounded memory).
const MAX_SEND_RECORDS: usize = 1 << 16;
/// Proven lies (see [`FeedbackError::is_lie`]) after which the sender keeps the receiver at
/// one packet per t_mbi until it reports truthfully again.
const LIES_BEFORE_FLOOR: u64 = 2;
/// How many R of sending, up to the echoed packet, the proven payload bounding X_recv covers
/// ([`Sender::handle_packet`]).
const X_RECV_WINDOW_RTTS: u32 = 2;

/// Why a packet could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The send schedule does not allow a packet yet.
    #[error("not yet allowed to send (next send at {0:?})")]
    TooEarly(Instant),
    /// The buffer is smaller than the packet.
    #[error("buffer of {got} bytes cannot hold a {needed}-byte packet")]
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        got: usize,
    },
    /// The payload does not fit in one packet of the configured size.
    #[error("payload of {got} bytes exceeds the {max}-byte maximum")]
    PayloadTooLarge {
        /// Largest payload allowed.
        max: usize,
        /// Payload given.
        got: usize,
    },
}

/// How [`Sender::handle_packet`] reads a feedback's loss intervals to recompute p.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// As the receiver claims them, with the most its unproven rules allow: the lie test.
    AsClaimed,
    /// As the sender reads them: the p it uses when higher than the reported one.
    AsRead,
}

/// Why a datagram from the receiver was ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FeedbackError {
    /// Not a TFRC packet.
    #[error("malformed packet")]
    Malformed,
    /// A data packet reached the sender.
    #[error("unexpected data packet")]
    UnexpectedKind,
    /// Wrong session id or token: stray, replayed or spoofed.
    #[error("feedback of another session or with a wrong token")]
    ForeignSession,
    /// Echoes a packet that was never sent or a timestamp from the future.
    #[error("feedback echoes a packet that was not sent")]
    InvalidEcho,
    /// Its receipt proof ([`wire::ReceiptProof`]) is missing or wrong: the receiver did not get
    /// the packets it claims, or is not a TFRC receiver of this session.
    #[error("feedback without a valid receipt proof")]
    Unproven,
    /// It reports no loss (p = 0) while a proof (its own or an earlier one) showed a packet
    /// missing below NDUPACK received ones: a loss the receiver hides (RFC 5348 §9).
    #[error("feedback reports no loss but proves a gap")]
    HiddenLoss,
    /// Reports no loss but proves only a run shorter than NDUPACK above a missing packet: a
    /// loss the receiver may not have detected yet (or one it hides). Ignored until a feedback
    /// tells which.
    #[error("feedback reports no loss but cannot prove the packets below its newest")]
    Unconfirmed,
    /// Echoes the same packet as the feedback used last: a replayed copy (or a repeat that
    /// carries nothing new). It yields no RTT sample and does not restart the no-feedback timer.
    #[error("feedback already used (replayed)")]
    Replayed,
    /// Its loss intervals ([`wire::LossIntervals`]) are false: a data part's mark sum is wrong
    /// (a packet in it was lost: a hidden loss event or a lengthened interval), or the
    /// intervals contradict what was sent or reported before. A proven lie.
    #[error("feedback's loss intervals are false (a data part's proof fails)")]
    FalseIntervals,
    /// Its p is below the p its own proven loss intervals give (RFC 5348 §5.4 from the
    /// intervals, as the receiver must compute it). A proven lie.
    #[error("feedback reports a p below what its proven loss intervals give")]
    UnderReported,
}

impl FeedbackError {
    /// Whether the refusal proves the receiver lied (its proofs fail, or it reports less loss
    /// than it proves): such feedback costs the receiver its rate at once
    /// ([`Sender::handle_packet`]). Other refusals only ignore the feedback.
    pub fn is_lie(&self) -> bool {
        matches!(
            self,
            FeedbackError::HiddenLoss
                | FeedbackError::FalseIntervals
                | FeedbackError::UnderReported
        )
    }
}

/// What the Veno backlog is computed from: the sending rate's bits, R and the base RTT.
type VenoInputs = (u64, Option<Duration>, Option<Duration>);
/// What the packet interval is computed from: the sending rate's bits, the last RTT sample's
/// root's and the mean root's.
type IntervalInputs = (u64, Option<u64>, u64);

/// Counters kept by the sender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Data packets sent.
    pub packets: u64,
    /// Bytes sent (headers included).
    pub bytes: u64,
    /// Payload bytes sent.
    pub payload_bytes: u64,
    /// Feedback packets acted upon.
    pub feedbacks: u64,
    /// Malformed datagrams ignored.
    pub malformed: u64,
    /// Feedback of other sessions / wrong nonce ignored.
    pub foreign: u64,
    /// Feedback with an impossible echo ignored.
    pub invalid_echo: u64,
    /// Feedback without a valid receipt proof ignored ([`FeedbackError::Unproven`]).
    pub unproven: u64,
    /// Feedback that hid a loss its proof shows, ignored ([`FeedbackError::HiddenLoss`]).
    pub hidden_loss: u64,
    /// Feedback with p = 0 and too short a proof to tell, ignored ([`FeedbackError::Unconfirmed`]).
    pub unconfirmed: u64,
    /// Copies of the feedback used last, ignored ([`FeedbackError::Replayed`]).
    pub replayed: u64,
    /// Feedback with false loss intervals, refused ([`FeedbackError::FalseIntervals`]).
    pub false_intervals: u64,
    /// Feedback whose p is below its proven intervals', refused
    /// ([`FeedbackError::UnderReported`]).
    pub under_reported: u64,
    /// Proven lies that cut the rate ([`FeedbackError::is_lie`]).
    pub lies: u64,
    /// Feedback taken with p raised to what the sender reads from its loss intervals (a
    /// lossy part longer than a loss event, or a long tail; [`Sender::handle_packet`]).
    pub p_raised: u64,
    /// Feedback whose X_recv exceeded what its loss intervals prove received over the interval
    /// it covers, used with X_recv capped to that ([`Sender::handle_packet`]).
    pub x_recv_capped: u64,
    /// No-feedback timer expiries.
    pub no_feedback_expiries: u64,
}

/// A snapshot of the sender's congestion state, for logging.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SenderState {
    /// X: TFRC's allowed sending rate, bytes/s.
    pub x: f64,
    /// The rate actually used for sending: max(g, X) with gTFRC, else X (bytes/s).
    pub sending_rate: f64,
    /// X_Bps from the equation (infinite while p = 0), bytes/s.
    pub x_calc: f64,
    /// The sender's cached X_recv, bytes/s: the latest feedback's, halved by every expiry of the
    /// no-feedback timer that found it limiting (RFC 5348 §4.4).
    pub x_recv: f64,
    /// recv_limit of §4.3 step 4 (infinite until limited), bytes/s.
    pub recv_limit: f64,
    /// gTFRC target rate g, bytes/s.
    pub target_rate: Option<f64>,
    /// Loss event rate p from the latest feedback.
    pub p: f64,
    /// Smoothed RTT R.
    pub rtt: Option<Duration>,
    /// Minimum RTT sample (Veno's BaseRTT).
    pub base_rtt: Option<Duration>,
    /// No-feedback timeout t_RTO.
    pub rto: Duration,
    /// Veno backlog N = X·(RTT − BaseRTT)/s in packets.
    pub veno_backlog: f64,
    /// True until the first loss is reported (initial slow start).
    pub slow_start: bool,
}

/// One sent packet, for the data-limited test of §4.3 step 4 (one per packet, in sequence
/// order).
#[derive(Debug, Clone, Copy)]
struct SendRecord {
    sequence: u32,
    /// Number of packets sent at full allowed rate up to and including this one.
    full_rate_count: u64,
}

/// The TFRC sender.
#[derive(Debug, Clone)]
pub struct Sender {
    config: Config,
    session_id: u32,
    /// The key of the packets' marks (never sent) and the session token every nonce and
    /// feedback carries.
    marker: wire::PacketMarker,
    next_sequence: u32,
    /// s/t_mbi ([`Sender::minimum_rate`]).
    minimum_rate: f64,
    /// The last header value of the Veno backlog and its inputs (sending rate's bits, R, base
    /// RTT): [`Sender::veno_backlog_millipackets`].
    veno_backlog_kept: Option<(VenoInputs, u32)>,
    /// The last packet interval outside ns-2's creep and its inputs:
    /// [`Sender::kept_inter_packet_interval`].
    interval_kept: Option<(IntervalInputs, Duration)>,
    /// X, bytes/s.
    x: f64,
    x_calc: f64,
    x_recv: f64,
    recv_limit: f64,
    /// X_recv_set: (time, rate); the initial item is infinite.
    x_recv_set: Vec<(Instant, f64)>,
    /// gTFRC: the most the floor g may give while no feedback arrives (infinite while it does).
    /// Paper 000 (§II): "the rest of the TFRC protocol ... follow entirely the TFRC
    /// specification", and the no-feedback timer (RFC 5348 §4.4) "cut[s] the sending rate in
    /// half" at each expiry: each expiry caps G at half the rate used before it, so a sender
    /// whose receiver is gone comes down to s/t_mbi as plain TFRC does. The first feedback
    /// lifts the cap: G = max(g, X) again.
    target_cap: f64,
    p: f64,
    rtt: Option<Duration>,
    base_rtt: Option<Duration>,
    /// The last RTT sample and its square root in √seconds: §4.5's damping reads the root for
    /// every packet, computed once per sample.
    last_rtt_sample: Option<(Duration, f64)>,
    sqrt_rtt_mean: f64,
    rto: Duration,
    /// tld: time of the last doubling in slow start.
    last_doubled: Option<Instant>,
    feedback_received: bool,
    no_feedback_deadline: Instant,
    no_feedback_set_at: Instant,
    /// t_nom: nominal time of the next packet.
    next_send: Instant,
    last_send: Option<Instant>,
    /// The application had no data at the last send opportunity.
    data_limited: bool,
    full_rate_count: u64,
    send_records: Deque<SendRecord>,
    /// Sequence number echoed by the previous feedback.
    last_echo: Option<u32>,
    /// A valid receipt proof has shown a packet missing below NDUPACK received ones: the
    /// receiver has seen a loss, and must report p > 0 from then on.
    loss_proven: bool,
    /// t_delay of the previous feedback (ns-2 profile: a later report of the same packet).
    last_elapsed: Option<u32>,
    /// Recent packets' send times, running mark sums and payload: what the loss intervals'
    /// proofs are checked against and what bounds X_recv ([`Sender::x_recv_limit`]).
    ledger: SentLedger,
    /// The first packet of the receiver's loss intervals, from the first accepted feedback.
    interval_origin: Option<u64>,
    /// The first loss event's first packet and the most its synthetic interval (RFC 5348
    /// §6.3.1) may count, fixed by the first feedback that reported it.
    first_event: Option<(u64, f64)>,
    /// The least RTT sample taken: one measured without the receiver's help (the driver's
    /// handshake), so that an inflated t_delay cannot shrink R ([`Sender::set_rtt_floor`]).
    rtt_floor: Duration,
    /// A no-feedback expiry happened since the last feedback taken.
    silent: bool,
    /// The packets the latest feedback taken before any loss proved received (first, last).
    loss_free: Option<(u64, u64)>,
    /// The first packet of the tail of the last feedback taken ([`CheckedIntervals`]).
    previous_tail: Option<u64>,
    /// (arrival, payload accounted for) of recent feedbacks taken: the delivery the receiver
    /// has reported, which bounds X_recv ([`Sender::x_recv_limit`]).
    delivered: Deque<(Instant, u64)>,
    /// Where the receiver's proofs start: the first packet of the first accepted feedback's
    /// run (packets before it may have been lost before the receiver got anything).
    receiver_start: Option<u32>,
    stats: SenderStats,
    /// ns-2.35 rate state, under [`crate::Profile::Ns2`] only.
    ns2: Option<Ns2SenderState>,
}

impl Sender {
    /// A sender at time `now`, before any feedback: one packet per second and a 2 s no-feedback
    /// timer (RFC 5348 §4.2). Under the ns-2 profile: `InitRate_` = 300 bytes/s and a
    /// no-feedback timer of 2s/X (`TfrcAgent::start()`).
    pub fn new(
        config: Config,
        session_id: u32,
        key: u64,
        now: Instant,
    ) -> Result<Sender, ConfigError> {
        config.validate()?;
        let s = config.s();
        let ns2 = config.is_ns2().then(|| Ns2SenderState::new(now));
        let (x, no_feedback_timeout) = if ns2.is_some() {
            let rate = ns2::INITIAL_RATE;
            let rate_used = config.target_rate.map_or(rate, |g| g.max(rate));
            (rate, duration_from_secs(2.0 * s / rate_used))
        } else {
            (s, INITIAL_NO_FEEDBACK_TIMEOUT) // one packet per second
        };
        Ok(Sender {
            minimum_rate: s / secs(config.max_backoff_interval),
            veno_backlog_kept: None,
            interval_kept: None,
            x,
            x_calc: f64::INFINITY,
            x_recv: 0.0,
            recv_limit: f64::INFINITY,
            x_recv_set: vec![(now, f64::INFINITY)],
            target_cap: f64::INFINITY,
            p: 0.0,
            rtt: None,
            base_rtt: None,
            last_rtt_sample: None,
            sqrt_rtt_mean: 0.0,
            rto: no_feedback_timeout,
            last_doubled: None,
            feedback_received: false,
            no_feedback_deadline: now + no_feedback_timeout,
            no_feedback_set_at: now,
            next_send: now,
            last_send: None,
            data_limited: false,
            full_rate_count: 0,
            send_records: Deque::default(),
            last_echo: None,
            last_elapsed: None,
            loss_proven: false,
            receiver_start: None,
            ledger: SentLedger::default(),
            interval_origin: None,
            first_event: None,
            rtt_floor: Duration::ZERO,
            silent: false,
            loss_free: None,
            previous_tail: None,
            delivered: Deque::default(),
            stats: SenderStats::default(),
            ns2,
            config,
            session_id,
            marker: wire::PacketMarker::new(key),
            next_sequence: 0,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Counters.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// Session id written in every packet.
    pub fn session_id(&self) -> u32 {
        self.session_id
    }

    fn s(&self) -> f64 {
        self.config.s()
    }

    /// s/t_mbi, the floor of X (RFC 5348 §4.3): fixed for the session (neither s nor t_mbi
    /// changes after [`Sender::new`]), so computed once there; its two divisions were a third
    /// of the per-packet interval's cost.
    fn minimum_rate(&self) -> f64 {
        self.minimum_rate
    }

    /// Initial rate W_init/R with W_init = min(4·s, max(2·s, 4380)) (RFC 5348 §4.2); it is also
    /// recover_rate (§4.4). Needs an RTT.
    fn initial_rate(&self) -> Option<f64> {
        let s = self.s();
        let window = (4.0 * s).min((2.0 * s).max(4380.0));
        self.rtt.map(|rtt| window / secs(rtt).max(1e-9))
    }

    /// The rate used for sending: G = max(g, X) with gTFRC, else X (bytes/s). While feedback
    /// is missing, g is capped by the no-feedback timer ([`Sender::handle_timeout`]).
    pub fn sending_rate(&self) -> f64 {
        match self.target_rate() {
            Some(g) => g.max(self.x),
            None => self.x,
        }
    }

    /// The gTFRC floor in force: g, or less after no-feedback expiries.
    fn target_rate(&self) -> Option<f64> {
        self.config.target_rate.map(|g| g.min(self.target_cap))
    }

    /// Sets t_gran (RFC 5348 §4.6, `Config::timer_granularity`) during the session: a
    /// real-time driver measures how late the operating system actually wakes it, which on a
    /// loaded machine is far more than at start. RFC 3448 §4.6 asks the sender to be
    /// opportunistic "so that the correct average rate is maintained despite the course-grain
    /// or irregular scheduling of the operating system"; with the start's t_gran, every longer
    /// delay would be rate lost.
    pub fn set_timer_granularity(&mut self, t_gran: Duration) {
        self.config.timer_granularity = t_gran;
    }

    /// Sets or clears the gTFRC target rate g (bytes/s) during the session.
    pub fn set_target_rate(&mut self, target_rate: Option<f64>) -> Result<(), ConfigError> {
        let mut config = self.config.clone();
        config.target_rate = target_rate;
        config.validate()?;
        self.config = config;
        self.reschedule();
        Ok(())
    }

    /// The congestion state, for logging.
    /// Under the ns-2 profile `recv_limit` is `maxrate_` (2·X_recv, infinite while unset) and
    /// `slow_start` is `rate_change_ == SLOW_START`.
    pub fn state(&self) -> SenderState {
        let (recv_limit, slow_start) = match &self.ns2 {
            Some(state) if state.max_rate > 0.0 => (state.max_rate, state.slow_start),
            Some(state) => (f64::INFINITY, state.slow_start),
            None => (self.recv_limit, self.p == 0.0),
        };
        SenderState {
            x: self.x,
            sending_rate: self.sending_rate(),
            x_calc: self.x_calc,
            x_recv: self.x_recv,
            recv_limit,
            target_rate: self.target_rate(),
            p: self.p,
            rtt: self.rtt,
            base_rtt: self.base_rtt,
            rto: self.rto,
            veno_backlog: self.veno_backlog(),
            slow_start,
        }
    }

    /// The t_RTO the throughput equation uses: 4R under RFC 5348 (§3.1), ns-2's TCP-style
    /// estimate `tzero_` under the ns-2 profile. Zero before the first RTT sample.
    pub fn equation_rto(&self) -> Duration {
        match &self.ns2 {
            Some(state) => state.rto.timeout(),
            None => self.rtt.map_or(Duration::ZERO, |rtt| rtt * 4),
        }
    }

    /// The sender's round: feedbacks taken plus no-feedback expiries (ns-2's `round_id` under
    /// its profile).
    fn round(&self) -> u32 {
        match &self.ns2 {
            Some(state) => state.round_id,
            None => (self.stats.feedbacks + self.stats.no_feedback_expiries) as u32,
        }
    }

    /// ns-2's `round_id` (feedbacks plus no-feedback expiries) under the ns-2 profile.
    pub fn ns2_round_id(&self) -> Option<u32> {
        self.ns2.as_ref().map(|state| state.round_id)
    }

    /// Veno backlog N = X·(RTT − BaseRTT)/s in packets, with X the sending rate.
    pub fn veno_backlog(&self) -> f64 {
        match (self.rtt, self.base_rtt) {
            (Some(rtt), Some(base)) if rtt > base => {
                self.sending_rate() * secs(rtt - base) / self.s()
            }
            _ => 0.0,
        }
    }

    /// [`Sender::veno_backlog`] in thousandths of a packet, as the data header carries it.
    /// Its inputs change with feedback only, not with every packet: the value is kept for the
    /// inputs it was computed from (its two divisions were 1 % of a Veno simulation's cycles).
    fn veno_backlog_millipackets(&mut self) -> u32 {
        let inputs = (self.sending_rate().to_bits(), self.rtt, self.base_rtt);
        if let Some((kept, value)) = self.veno_backlog_kept {
            if kept == inputs {
                // Every test that sends runs this check: the kept value is the computed one.
                debug_assert_eq!(value, self.computed_veno_backlog_millipackets());
                return value;
            }
        }
        let value = self.computed_veno_backlog_millipackets();
        self.veno_backlog_kept = Some((inputs, value));
        value
    }

    /// [`Sender::veno_backlog`] in thousandths of a packet, computed.
    fn computed_veno_backlog_millipackets(&self) -> u32 {
        crate::numeric::round_to_u64(self.veno_backlog() * 1000.0).min(u64::from(u32::MAX)) as u32
    }

    /// Inter-packet interval t_ipi = s / X_inst, where X_inst is the sending rate, damped by
    /// R_sqmean/√R_sample when oscillation prevention is on (RFC 5348 §4.5–§4.6).
    ///
    /// Under the ns-2 profile the rate is `TfrcAgent::nextpkt()`'s: during slow start's creep
    /// (`slow_increase_`) the next value of `oldrate_`, undamped.
    pub fn inter_packet_interval(&self) -> Duration {
        if let Some(state) = self
            .ns2
            .as_ref()
            .filter(|state| state.slow_increasing(self.x))
        {
            return self.creep_interval(state.old_rate + state.delta);
        }
        let mut rate = self.sending_rate();
        if self.config.oscillation_damping {
            if let Some((_, root)) = self.last_rtt_sample {
                if root > 0.0 && self.sqrt_rtt_mean > 0.0 {
                    rate *= self.sqrt_rtt_mean / root;
                }
            }
        }
        // X itself is never below s/t_mbi (§4.3); nor is the rate that paces it: a damped
        // X_inst below the floor would space packets more than t_mbi apart.
        let interval = duration_from_secs(self.s() / rate.max(self.minimum_rate()));
        if self.config.small_packets.is_some() {
            // RFC 4828 §3: "TFRC-SP enforces a Min Interval between packets of 10 ms."
            interval.max(SMALL_PACKET_MIN_INTERVAL)
        } else {
            interval
        }
    }

    /// ns-2 slow-start creep: s / max(g, `oldrate_`), not damped (`TfrcAgent::nextpkt()`).
    fn creep_interval(&self, old_rate: f64) -> Duration {
        let rate = match self.target_rate() {
            Some(g) => g.max(old_rate),
            None => old_rate,
        };
        duration_from_secs(self.s() / rate.max(self.minimum_rate()))
    }

    /// Whether a packet may leave before its nominal time at all: not with an exact timer (the
    /// simulator; then no t_ipi needs computing), nor under TFRC-SP, whose Min Interval holds
    /// between any two packets.
    fn has_send_allowance(&self) -> bool {
        !self.config.timer_granularity.is_zero() && self.config.small_packets.is_none()
    }

    /// t_delta = min(t_ipi/2, t_gran/2) (RFC 5348 §4.6).
    fn send_allowance_for(t_ipi: Duration, t_gran: Duration) -> Duration {
        (t_ipi / 2).min(t_gran / 2)
    }

    /// t_delta: how early a packet may leave (RFC 5348 §4.6), zero without an allowance.
    fn send_allowance(&self) -> Duration {
        if !self.has_send_allowance() {
            return Duration::ZERO;
        }
        Self::send_allowance_for(self.inter_packet_interval(), self.config.timer_granularity)
    }

    /// [`Sender::send_allowance`] from the kept inter-packet interval: the same value (a debug
    /// assertion checks it in every test that sends), without the interval's division per
    /// packet when the rate has not changed since the last one (`send_padded` and
    /// `send_packet` ask for it with every packet; 11 % of a data packet's instructions).
    fn kept_send_allowance(&mut self) -> Duration {
        if !self.has_send_allowance() {
            return Duration::ZERO;
        }
        let x = self.x;
        let interval = if self
            .ns2
            .as_ref()
            .is_some_and(|state| state.slow_increasing(x))
        {
            self.inter_packet_interval()
        } else {
            self.kept_inter_packet_interval()
        };
        let allowance = Self::send_allowance_for(interval, self.config.timer_granularity);
        debug_assert_eq!(allowance, self.send_allowance());
        allowance
    }

    /// [`Sender::can_send`] for the sending calls, with the kept interval.
    fn may_send_now(&mut self, now: Instant) -> Result<(), SendError> {
        let earliest = self.next_send.saturating_sub(self.kept_send_allowance());
        if now >= earliest {
            Ok(())
        } else {
            Err(SendError::TooEarly(earliest))
        }
    }

    /// Earliest time the next packet may be sent.
    pub fn next_send_time(&self) -> Instant {
        self.next_send.saturating_sub(self.send_allowance())
    }

    /// True when the schedule allows a packet at `now`.
    pub fn can_send(&self, now: Instant) -> bool {
        now >= self.next_send_time()
    }

    /// The earliest of the no-feedback timer and, unless the application reported it had no
    /// data, the next send time.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.data_limited {
            Some(self.no_feedback_deadline)
        } else {
            Some(self.no_feedback_deadline.min(self.next_send_time()))
        }
    }

    /// When the no-feedback timer expires.
    pub fn no_feedback_deadline(&self) -> Instant {
        self.no_feedback_deadline
    }

    /// After a rate change, the next packet is due one new t_ipi after the last one (RFC 5348
    /// §4.6 computes t_ipi from the current rate).
    fn reschedule(&mut self) {
        if let (Some(last), false) = (self.last_send, self.data_limited) {
            self.next_send = last + self.inter_packet_interval();
        }
    }

    /// The application had nothing to send at a send opportunity: the sender is data-limited
    /// (and idle) until the next [`Sender::send_packet`].
    pub fn note_data_limited(&mut self, _now: Instant) {
        self.data_limited = true;
    }

    /// Largest payload of one packet: `packet_size` (s, RFC 5348 §3.1), the header travelling
    /// on top; `packet_size − 32` under the ns-2 profile with `ns2_use_headers` off.
    pub fn max_payload(&self) -> usize {
        self.config.max_payload()
    }

    /// Bytes of a full-size packet on the wire.
    fn wire_size(&self) -> usize {
        self.config.packet_size as usize + self.config.header_outside_s()
    }

    /// Builds a data packet carrying `payload` into `buffer`; returns its length.
    pub fn send_packet(
        &mut self,
        now: Instant,
        payload: &[u8],
        buffer: &mut [u8],
    ) -> Result<usize, SendError> {
        let length = wire::DATA_HEADER_LEN + payload.len();
        if payload.len() > self.max_payload() {
            return Err(SendError::PayloadTooLarge {
                max: self.max_payload(),
                got: payload.len(),
            });
        }
        self.emit(now, length, buffer)?;
        buffer[wire::DATA_HEADER_LEN..length].copy_from_slice(payload);
        self.stats.payload_bytes += payload.len() as u64;
        Ok(length)
    }

    /// Builds a full-size data packet, zero padded (bulk transfer): s bytes of payload plus
    /// the header (s in all under the ns-2 profile with `ns2_use_headers` off).
    pub fn send_padded(&mut self, now: Instant, buffer: &mut [u8]) -> Result<usize, SendError> {
        let length = self.wire_size();
        self.emit(now, length, buffer)?;
        buffer[wire::DATA_HEADER_LEN..length].fill(0);
        self.stats.payload_bytes += (length - wire::DATA_HEADER_LEN) as u64;
        Ok(length)
    }

    /// [`Sender::send_padded`] without the padding: writes the header of a full-size data
    /// packet into `header` and returns the packet's length on the wire. For a caller that
    /// carries headers only (the simulator), which would otherwise zero about a kilobyte per
    /// packet (0.8 % of a simulation's instructions) for bytes nobody reads.
    pub fn send_padded_header(
        &mut self,
        now: Instant,
        header: &mut [u8; wire::DATA_HEADER_LEN],
    ) -> Result<usize, SendError> {
        self.may_send_now(now)?;
        let length = self.wire_size();
        self.emit_header(now, length, header)?;
        self.stats.payload_bytes += (length - wire::DATA_HEADER_LEN) as u64;
        Ok(length)
    }

    fn emit(&mut self, now: Instant, length: usize, buffer: &mut [u8]) -> Result<(), SendError> {
        self.may_send_now(now)?;
        if buffer.len() < length {
            return Err(SendError::BufferTooSmall {
                needed: length,
                got: buffer.len(),
            });
        }
        self.emit_header(now, length, buffer)
    }

    /// Sends a packet of `length` bytes whose header goes in `buffer` (the caller has checked
    /// that sending is allowed now).
    fn emit_header(
        &mut self,
        now: Instant,
        length: usize,
        buffer: &mut [u8],
    ) -> Result<(), SendError> {
        let repr = DataRepr {
            session_id: self.session_id,
            sequence: self.next_sequence,
            timestamp: now.as_nanos(),
            rtt_micros: self.rtt.map_or(0, |rtt| {
                u32::try_from(rtt.as_micros()).unwrap_or(u32::MAX).max(1)
            }),
            veno_backlog_millipackets: self.veno_backlog_millipackets(),
            nonce: self.marker.nonce(self.next_sequence),
        };
        repr.emit(buffer).map_err(|_| SendError::BufferTooSmall {
            needed: length,
            got: buffer.len(),
        })?;
        if let Some(state) = &mut self.ns2 {
            wire::Packet::new_unchecked(&mut *buffer)
                .set_flags(wire::ns2_flags(state.round_id, state.urgent));
            if self.data_limited {
                // TfrcAgent::advanceby(): data again after a data-limited period.
                state.last_limited = Some(now);
                state.all_idle = false;
            }
        }

        self.record_sent(now, &repr, length);

        // RFC 5348 §4.6: t_nom advances by t_ipi per packet, so a sender that the operating
        // system scheduled late sends the packets it owes at once and keeps its average rate,
        // within a bound on the credit it may hold. The bound is that of the RFC's authors'
        // text for §4.6 (S. Floyd, ietf-dccp list, on RFC 3448bis): "the TFRC sender is not
        // allowed to accumulate `credits' of more than max(t_ipi, t_gran) time units in packet
        // scheduling, so the sender is not allowed to send arbitrary bursts of packets after
        // idle periods". So t_nom restarts from now after an idle or data-limited period, and
        // when the schedule is more than max(t_ipi, t_gran) behind (t_gran = 0 in the
        // simulator: one t_ipi).
        // TFRC-SP (RFC 4828 §3) "enforces a Min Interval between packets of 10 ms": between
        // any two packets, so a late sender does not catch up (and none leaves early).
        let interval = self.next_interval();
        let credit = interval.max(self.config.timer_granularity);
        let nominal = if self.data_limited || self.next_send + credit < now {
            now
        } else if self.config.small_packets.is_some() {
            self.next_send.max(now)
        } else {
            self.next_send
        };
        self.next_send = nominal + interval;
        self.data_limited = false;
        self.last_send = Some(now);
        self.next_sequence = self.next_sequence.wrapping_add(1);
        self.stats.packets += 1;
        self.stats.bytes += length as u64;
        Ok(())
    }

    /// What the sender remembers of a packet it sends: for the data-limited test (a packet sent
    /// right after a data-limited opportunity is not a full-rate packet, §4.3 step 4) and for
    /// the loss intervals' proofs ([`SentLedger`]).
    fn record_sent(&mut self, now: Instant, repr: &DataRepr, length: usize) {
        if !self.data_limited {
            self.full_rate_count += 1;
        }
        self.send_records.push_back(SendRecord {
            sequence: self.next_sequence,
            full_rate_count: self.full_rate_count,
        });
        if self.send_records.len() > MAX_SEND_RECORDS {
            self.send_records.pop_front();
        }
        self.ledger.record(
            now,
            repr.nonce as u16,
            (length - wire::DATA_HEADER_LEN) as u64,
            repr.rtt_micros,
            (self.silent, self.round()),
        );
    }

    /// The interval after the packet being sent. Under the ns-2 profile the slow-start creep
    /// advances `oldrate_` by `delta_` per packet (`TfrcAgent::nextpkt()`).
    fn next_interval(&mut self) -> Duration {
        let x = self.x;
        match self.ns2.as_mut().filter(|state| state.slow_increasing(x)) {
            Some(state) => {
                state.old_rate += state.delta;
                let creep = state.old_rate;
                self.creep_interval(creep)
            }
            None => self.kept_inter_packet_interval(),
        }
    }

    /// [`Sender::inter_packet_interval`] outside ns-2's creep, kept for the inputs it was
    /// computed from (the sending rate, the last RTT sample's root and the mean of the roots;
    /// the rest is fixed for the session): they change with feedback, not with every packet,
    /// and its two divisions were 3 % of a simulation's cycles.
    fn kept_inter_packet_interval(&mut self) -> Duration {
        let inputs = (
            self.sending_rate().to_bits(),
            self.last_rtt_sample.map(|(_, root)| root.to_bits()),
            self.sqrt_rtt_mean.to_bits(),
        );
        if let Some((kept, interval)) = self.interval_kept {
            if kept == inputs {
                // Every test that sends runs this check: the kept interval is the computed one.
                debug_assert_eq!(interval, self.inter_packet_interval());
                return interval;
            }
        }
        let interval = self.inter_packet_interval();
        self.interval_kept = Some((inputs, interval));
        interval
    }

    /// Handles one datagram from the receiver. Feedback is used only when it passes, in
    /// order: parsing; session id and token (`foreign`); an echo of a packet sent, not older
    /// than the one used last (`invalid_echo`) nor the same (`replayed`, so a copy gives no RTT
    /// sample and does not restart the no-feedback timer); its receipt proof
    /// ([`wire::ReceiptProof`]: `unproven`); with p = 0, no loss shown by a proof
    /// (`hidden_loss`, `unconfirmed`). Its X_recv is then capped by what this sender sent
    /// (`x_recv_capped`). Each refusal is counted in [`SenderStats`] and returned.
    pub fn handle_packet(&mut self, now: Instant, bytes: &[u8]) -> Result<(), FeedbackError> {
        let Ok(packet) = Packet::new_checked(bytes) else {
            self.stats.malformed += 1;
            return Err(FeedbackError::Malformed);
        };
        if packet.kind() != PacketKind::Feedback {
            self.stats.malformed += 1;
            return Err(FeedbackError::UnexpectedKind);
        }
        let Ok(feedback) = FeedbackRepr::parse(&packet) else {
            self.stats.malformed += 1;
            return Err(FeedbackError::Malformed);
        };
        if feedback.session_id != self.session_id
            || (feedback.echo_nonce >> 16) as u16 != self.marker.token()
        {
            self.stats.foreign += 1;
            return Err(FeedbackError::ForeignSession);
        }
        // The echoed packet must have been sent: its sequence number lies in [0, next) of the
        // sent range and its timestamp is not in the future.
        let sent = self.stats.packets;
        let behind = wire::sequence_distance(feedback.echo_sequence, self.next_sequence);
        if sent == 0
            || behind <= 0
            || behind as u64 > sent
            || feedback.echo_timestamp > now.as_nanos()
        {
            self.stats.invalid_echo += 1;
            return Err(FeedbackError::InvalidEcho);
        }
        if let Some(last) = self.last_echo {
            let distance = wire::sequence_distance(last, feedback.echo_sequence);
            if distance < 0 {
                // Older than feedback already used (reordered or replayed): ignore.
                self.stats.invalid_echo += 1;
                return Err(FeedbackError::InvalidEcho);
            }
            // The same echo as the feedback used last: a copy, taken at most once (RFC 5348
            // §6.2: the receiver reports again only after new data). ns-2's NACK timer does
            // report the same packet again when nothing arrived since a report sent at that
            // packet's arrival (`last_arrival_ >= last_report_sent`), later, and its sender
            // uses it: under the ns-2 profile a later report (longer t_delay) is taken.
            let later_report = self.ns2.is_some()
                && self
                    .last_elapsed
                    .is_some_and(|elapsed| feedback.elapsed_micros > elapsed);
            if distance == 0 && !later_report {
                self.stats.replayed += 1;
                return Err(FeedbackError::Replayed);
            }
        }
        let mut checked = CheckedIntervals::default();
        match self.validate(now, &feedback, behind as u64, &mut checked) {
            Ok(p) => {
                self.last_elapsed = Some(feedback.elapsed_micros);
                self.on_feedback(now, &feedback, &checked, p);
                Ok(())
            }
            Err(error) => {
                if error.is_lie() {
                    self.punish(now);
                }
                Err(error)
            }
        }
    }

    /// The checks that need the proofs: the receipt proof near the echo, the loss intervals,
    /// and p against the p the proven intervals give.
    fn validate(
        &mut self,
        now: Instant,
        feedback: &FeedbackRepr,
        behind: u64,
        checked: &mut CheckedIntervals,
    ) -> Result<f64, FeedbackError> {
        self.check_receipt(feedback, behind)?;
        self.check_intervals(now, feedback, behind, checked)?;
        let checked = &*checked;
        let reported = feedback.loss_event_rate();
        let floor = self.loss_event_rate_from(checked, Reading::AsClaimed);
        // The wire rounds p to the nearest 2^-32; the float sums may differ in the last bits.
        if reported < floor * (1.0 - 1e-9) - 1.0 / 4_294_967_296.0 {
            self.stats.under_reported += 1;
            return Err(FeedbackError::UnderReported);
        }
        // The sender's reading gives the floor again when it reads every interval as claimed.
        let read = if checked.read_as_claimed() {
            floor
        } else {
            self.loss_event_rate_from(checked, Reading::AsRead)
        };
        // Beyond the wire's rounding, so that a p the sender reads as the receiver counts it
        // stays the p the receiver reported.
        let p = if read > reported * (1.0 + 1e-9) + 1.0 / 4_294_967_296.0 {
            self.stats.p_raised += 1;
            read
        } else {
            reported
        };
        // The receipt proof's rules for p = 0 (after the intervals, so that a p = 0 whose own
        // intervals show a loss is the proven lie it is).
        self.check_zero_p(feedback, behind)?;
        // Facts the first accepted feedback fixes for the rest of the session.
        if self.interval_origin.is_none() {
            self.interval_origin = Some(checked.origin);
        }
        self.previous_tail = checked.tail_first;
        if checked.closed_count == 0 && checked.open_data > 0 {
            self.loss_free = Some((checked.origin, checked.origin + checked.open_data - 1));
        }
        if self.first_event.is_none() {
            if let Some(first) = checked.first_event {
                self.first_event = Some((first, checked.synthetic_cap));
            }
        }
        Ok(p)
    }

    /// Checks a feedback's loss intervals against what was sent ([`SentLedger`]); `behind`
    /// as for [`Sender::check_receipt`].
    fn check_intervals(
        &mut self,
        now: Instant,
        feedback: &FeedbackRepr,
        behind: u64,
        checked: &mut CheckedIntervals,
    ) -> Result<(), FeedbackError> {
        let sent = self.stats.packets;
        let intervals = &feedback.intervals;
        let distance = wire::sequence_distance(intervals.open_start, self.next_sequence);
        if distance <= 0 || distance as u64 > sent {
            self.stats.false_intervals += 1;
            return Err(FeedbackError::FalseIntervals);
        }
        let echoed = Instant::from_nanos(feedback.echo_timestamp);
        // R for the spans and the X_recv window: the sender's, or before it has one, the time
        // since the echoed packet left.
        let rtt = self
            .rtt
            .unwrap_or(now - echoed)
            .max(Duration::from_micros(1));
        let context = CheckContext {
            sent,
            open_start: sent - distance as u64,
            rtt,
            receiver_start: self.interval_origin,
            first_event: self.first_event.map(|(first, _)| first),
            window: (
                echoed.saturating_sub(rtt * X_RECV_WINDOW_RTTS),
                sent - behind,
            ),
            receipt_run: {
                // Checked by `check_receipt`: `length` packets ending `offset` below the echo.
                let proof = feedback.proof();
                let end = (sent - behind).saturating_sub(u64::from(proof.offset));
                let length = u64::from(proof.length).min(end + 1);
                (end + 1 - length, length)
            },
            rounds: self.ns2.is_some(),
            loss_free: self.loss_free,
            previous_tail: self.previous_tail,
        };
        match self.ledger.check(intervals, &context, checked) {
            Ok(()) => {}
            Err(FalseIntervals::Proven) => {
                self.stats.false_intervals += 1;
                return Err(FeedbackError::FalseIntervals);
            }
            Err(FalseIntervals::Unknown) => {
                self.stats.unconfirmed += 1;
                return Err(FeedbackError::Unconfirmed);
            }
        };
        checked.window_rtt = rtt;
        checked.origin = if checked.closed_count == 0 {
            context.open_start
        } else {
            checked.first_event.unwrap_or(context.open_start)
        };
        checked.synthetic_cap = match (self.first_event, checked.synthetic) {
            (Some((_, cap)), _) => cap,
            (None, Some(_)) => self.synthetic_cap(now, checked, rtt),
            (None, None) => f64::INFINITY,
        };
        Ok(())
    }

    /// The most packets the synthetic first interval may count (RFC 5348 §6.3.1: "the loss
    /// interval that would be required to produce the data rate X_recv"): the interval that
    /// gives the most X_recv this feedback can report ([`Sender::x_recv_limit`]: twice the rate
    /// the receiver's reports delivered, at most twice the payload proven over 2R per R) at R,
    /// plus one. An honest receiver's X_recv over R_m stays below it (half of it gave p raised
    /// for 688 of 92,430 honest feedbacks in the paper scenarios); a receiver that claims more
    /// gets no more: the sender reads the interval at the cap ([`Reading::AsRead`]).
    fn synthetic_cap(&self, now: Instant, checked: &CheckedIntervals, rtt: Duration) -> f64 {
        let rate = self.x_recv_limit(now, checked);
        let r = secs(rtt);
        let p = if self.ns2.is_some() {
            equation::loss_event_rate_for_ns2(self.s(), r, 4.0 * r, rate)
        } else {
            equation::loss_event_rate_for(self.config.equation_s(), r, rate)
        };
        p.map_or(f64::INFINITY, |p| (1.0 / p).ceil() + 1.0)
    }

    /// p from a feedback's checked loss intervals: RFC 5348 §5.4's weighted mean
    /// ([`loss_history::weighted_mean`]) over the intervals as counted by the receiver's
    /// profile (ns-2.35 counts I_0 one packet shorter), Veno's stretch where this sender asked
    /// for Veno.
    ///
    /// [`Reading::AsClaimed`]: the least p a truthful receiver with these intervals reports.
    /// Where its rules lengthen an interval by what no proof shows, it allows the most they can:
    /// TFRC-SP's short intervals count N packets (not N/K, RFC 4828 §3); with history
    /// discounting (§5.5) I_mean is taken as the longest interval; the synthetic interval as
    /// claimed. [`Reading::AsRead`]: the sender's reading ([`CheckedIntervals`]), the synthetic
    /// interval capped ([`Sender::synthetic_cap`]).
    fn loss_event_rate_from(&self, checked: &CheckedIntervals, reading: Reading) -> f64 {
        if checked.closed_count == 0 {
            return 0.0;
        }
        let as_read = reading == Reading::AsRead;
        let alpha = self.config.veno.map(|veno| veno.alpha);
        let counted = |length: u64, stretched: bool| match (stretched, alpha) {
            (true, Some(alpha)) => length as f64 * alpha,
            _ => length as f64,
        };
        let open_packets = if as_read {
            checked.open_counted
        } else {
            checked.open
        };
        let open = counted(
            open_packets.saturating_sub(u64::from(self.config.is_ns2())),
            checked.open_stretched,
        );
        let synthetic_cap = if as_read {
            checked.synthetic_cap
        } else {
            f64::INFINITY
        };
        let closed = checked.closed[..checked.closed_count]
            .iter()
            .enumerate()
            .map(move |(index, &(claimed, read, stretched))| {
                let synthetic = checked.synthetic.is_some() && index + 1 == checked.closed_count;
                if synthetic {
                    (claimed as f64).min(synthetic_cap)
                } else if as_read {
                    counted(read, stretched)
                } else {
                    counted(claimed, stretched)
                }
            });
        let mean = if self.config.history_discounting {
            closed.fold(open, f64::max)
        } else {
            loss_history::weighted_mean(
                open,
                closed.map(|length| (length, 1.0)),
                1.0,
                self.config.is_ns2(),
            )
        };
        if mean > 0.0 {
            (1.0 / mean).min(1.0)
        } else {
            1.0
        }
    }

    /// A proven lie ([`FeedbackError::is_lie`]) costs the receiver at once: X falls to half,
    /// and no higher than the X_recv last accepted (what was proven received); after
    /// [`LIES_BEFORE_FLOOR`] lies, to s/t_mbi. It extends RFC 5348 §4.4, which halves X when
    /// no feedback arrives ("the sender does not receive feedback ... cut the sending rate in
    /// half"): a feedback that lies is worth less than none. RFC 5348 §9 and RFC 4342 §9
    /// ask the sender to protect the network against a receiver that misreports; the feedback
    /// is not taken, so the no-feedback timer runs on.
    fn punish(&mut self, now: Instant) {
        self.stats.lies += 1;
        let rate_before = self.sending_rate();
        let floor = self.minimum_rate();
        self.x = if self.stats.lies > LIES_BEFORE_FLOOR {
            floor
        } else {
            (self.x / 2.0).min(self.x_recv.max(floor)).max(floor)
        };
        self.recv_limit = self.x;
        self.x_recv = self.x_recv.min(self.x / 2.0);
        self.x_recv_set = vec![(now, self.x / 2.0)];
        if self.config.target_rate.is_some() {
            self.target_cap = if self.stats.lies > LIES_BEFORE_FLOOR {
                floor
            } else {
                self.target_cap.min((rate_before / 2.0).max(floor))
            };
        }
        self.reschedule();
    }

    /// Drops the sender's memo of the last closed loss intervals it checked (the closed
    /// intervals a receiver repeats until its next loss event are read once and replayed):
    /// for tests that show the memo changes no outcome, by running a copy without it.
    #[doc(hidden)]
    pub fn forget_interval_memo(&mut self) {
        self.ledger.forget_closed_memo();
    }

    /// Sets the least RTT sample the sender takes: an RTT measured without the receiver's help
    /// (the driver's handshake round trip, which no t_delay reduces). RFC 5348 §4.3 computes
    /// R_sample = (t_now − t_recvdata) − t_delay with the receiver's t_delay; a receiver that
    /// inflates t_delay would shrink R and raise X_calc, so samples below the floor count as
    /// the floor.
    pub fn set_rtt_floor(&mut self, floor: Duration) {
        self.rtt_floor = floor;
    }

    /// Checks a feedback's receipt proof ([`wire::ReceiptProof`]); `behind` is how many packets
    /// were sent from the echoed one on (≥ 1). The run must lie within what was sent and its
    /// marks must sum as the receiver says: a receiver that did not get the packets near the
    /// packet it echoes is not a receiver of this session.
    fn check_receipt(&mut self, feedback: &FeedbackRepr, behind: u64) -> Result<(), FeedbackError> {
        let proof = feedback.proof();
        // Packets sent up to and including the run's last.
        let sent_to_end = (self.stats.packets + 1).saturating_sub(behind + u64::from(proof.offset));
        let end = feedback.echo_sequence.wrapping_sub(u32::from(proof.offset));
        // The run's sum from the ledger's running sums (two lookups), or where the ledger no
        // longer holds the run, from the marks themselves (one keyed hash per packet).
        let sum_matches = || {
            let first = sent_to_end - u64::from(proof.length);
            self.ledger
                .sum_matches(first, sent_to_end - 1, proof.sum)
                .unwrap_or_else(|| self.marker.run_sum(end, proof.length) == proof.sum)
        };
        let valid = proof.length >= 1
            && proof.length <= wire::PROOF_WINDOW
            && proof.offset <= wire::PROOF_MAX_OFFSET
            && u64::from(proof.length) <= sent_to_end
            && sum_matches();
        if !valid {
            self.stats.unproven += 1;
            return Err(FeedbackError::Unproven);
        }
        Ok(())
    }

    /// The receipt proof's rule for p = 0 (the proof already checked, [`Sender::check_receipt`]):
    /// a feedback with p = 0 must prove every packet of the window below the run's end (or all
    /// since the receiver's start, which the first accepted feedback's run gives): a receiver
    /// that got them all saw no loss there, and one that did not must report the loss once
    /// NDUPACK later packets reached it.
    fn check_zero_p(&mut self, feedback: &FeedbackRepr, behind: u64) -> Result<(), FeedbackError> {
        let proof = feedback.proof();
        let sent_to_end = (self.stats.packets + 1).saturating_sub(behind + u64::from(proof.offset));
        let end = feedback.echo_sequence.wrapping_sub(u32::from(proof.offset));
        let run_start = end.wrapping_sub(u32::from(proof.length) - 1);
        match self.receiver_start {
            None => self.receiver_start = Some(run_start),
            Some(start) => {
                let since_start = (wire::sequence_distance(start, end) + 1).max(0) as u64;
                let window = sent_to_end
                    .min(since_start)
                    .min(u64::from(wire::PROOF_WINDOW));
                // A run shorter than the window: the packet just below it is missing at the
                // receiver. After NDUPACK later packets (the run's) it must have been declared
                // lost (§5.1), and a receiver that has seen a loss reports p > 0 from then on
                // (p is the inverse of its mean loss interval, §5.4).
                let gap = u64::from(proof.length) < window;
                if gap && u32::from(proof.length) >= NDUPACK {
                    self.loss_proven = true;
                }
                if feedback.loss_event_rate_raw == 0 {
                    if self.loss_proven {
                        self.stats.hidden_loss += 1;
                        return Err(FeedbackError::HiddenLoss);
                    }
                    if gap {
                        // A loss not detected yet (a burst of drops just below the newest
                        // packets) or hidden: the next feedback will tell.
                        self.stats.unconfirmed += 1;
                        return Err(FeedbackError::Unconfirmed);
                    }
                }
            }
        }
        Ok(())
    }

    /// The most X_recv a feedback can honestly report: twice the payload its loss intervals
    /// account for among the packets sent over the [`X_RECV_WINDOW_RTTS`] R up to the echoed
    /// one, per R — packets proven received (data parts) and packets inside loss events (lossy parts:
    /// some of them arrived, which no proof can show, and a receiver claims more of them only
    /// by reporting more loss events, which raises p); the unproven tail of the open interval
    /// does not count. The receiver's X_recv counts what arrived over its last R_m (RFC 5348
    /// §6.2) — packets sent over about R_m before the echoed one, stretched or squeezed by the
    /// path's delay variation, or before the receiver has R_m, over the time since its last
    /// report (§6.2), which a burst makes short; 2R and a factor of two leave room for that and
    /// cost an honest flow nothing: X ≤ 2·X_recv (§4.3). Against a receiver that misreports (RFC
    /// 5348 §9), it bounds X_recv by what the receiver accounted for, not by what was sent.
    ///
    /// A sending window says what could have arrived, not when: a sender that fills a queue
    /// sends much more than arrives. So X_recv is also bounded by the delivery the receiver has
    /// reported: twice the payload its intervals came to account for (received, or lost in a
    /// loss event) since the feedback taken at least R before this one, per the time between
    /// the two (the rate at which its reports advance, as measured on this sender's clock).
    fn x_recv_limit(&self, now: Instant, checked: &CheckedIntervals) -> f64 {
        let window = 2.0 * checked.proven_payload as f64 / secs(checked.window_rtt).max(1e-9);
        let span = self.rtt.unwrap_or(checked.window_rtt);
        let earlier = self
            .delivered
            .iter()
            .rev()
            .find(|(at, _)| now - *at >= span)
            .copied();
        match (earlier, checked.accounted_payload) {
            (Some((then, before)), Some(through)) if now > then => {
                let delivery = through.saturating_sub(before) as f64 / secs(now - then);
                window.min(2.0 * delivery)
            }
            _ => window,
        }
    }

    /// Notes what a feedback taken at `now` accounted for ([`Sender::x_recv_limit`]).
    fn note_delivered(&mut self, now: Instant, checked: &CheckedIntervals) {
        let Some(through) = checked.accounted_payload else {
            return;
        };
        let through = self
            .delivered
            .back()
            .map_or(through, |last| last.1.max(through));
        self.delivered.push_back((now, through));
        let keep = self.rtt.map_or(Duration::ZERO, |rtt| rtt * 8);
        while self.delivered.len() > 64
            || (self.delivered.len() > 2
                && self.delivered.front().is_some_and(|f| now - f.0 > keep))
        {
            self.delivered.pop_front();
        }
    }

    /// The feedback's X_recv, capped by [`Sender::x_recv_limit`] (counted in
    /// [`SenderStats::x_recv_capped`] when it is). The caller then records what the feedback
    /// accounted for ([`Sender::note_delivered`]), after the limit is taken from the records
    /// before it.
    fn bounded_x_recv(
        &mut self,
        now: Instant,
        feedback: &FeedbackRepr,
        checked: &CheckedIntervals,
    ) -> f64 {
        let claimed = feedback.x_recv as f64;
        let limit = self.x_recv_limit(now, checked);
        if claimed > limit {
            self.stats.x_recv_capped += 1;
            limit
        } else {
            claimed
        }
    }

    /// RFC 5348 §4.3: sender behaviour when a feedback packet is received.
    fn on_feedback(
        &mut self,
        now: Instant,
        feedback: &FeedbackRepr,
        checked: &CheckedIntervals,
        p: f64,
    ) {
        self.stats.feedbacks += 1;
        self.silent = false;
        self.target_cap = f64::INFINITY;
        let (sample, rtt) = self.update_rtt(now, feedback);
        if let Some(state) = &mut self.ns2 {
            state.rto.update(sample);
            self.on_feedback_ns2(now, feedback, checked, p);
            return;
        }

        // (3) "Update the timeout interval: RTO = max(4*R, 2*s/X)" (§4.3), with the new R and
        // the X of before step 4 updates it.
        let rto = self.no_feedback_interval();

        // (4) Update the allowed sending rate.
        let p_increased = p > self.p;
        let x_recv = self.bounded_x_recv(now, feedback, checked);
        self.note_delivered(now, checked);
        self.x_recv = x_recv;
        let data_limited = self.interval_was_data_limited(feedback.echo_sequence);
        self.last_echo = Some(feedback.echo_sequence);
        self.recv_limit = self.updated_recv_limit(now, x_recv, rtt, data_limited, p_increased);
        self.p = p;
        self.update_allowed_rate(now, rtt, p);
        self.feedback_received = true;

        // (5) "Reset the nofeedback timer to expire after RTO seconds."
        self.set_no_feedback_timer(now, rto);
        self.reschedule();
    }

    /// §4.3 steps (1) and (2) and §4.5's R_sqmean: the feedback's RTT sample (never below the
    /// floor [`Sender::set_rtt_floor`] set) folded into R. Returns (sample, new R).
    fn update_rtt(&mut self, now: Instant, feedback: &FeedbackRepr) -> (Duration, Duration) {
        // (1) RTT sample: R_sample = (t_now - t_recvdata) - t_delay.
        let since_sent = now - Instant::from_nanos(feedback.echo_timestamp);
        let held = Duration::from_micros(u64::from(feedback.elapsed_micros));
        let sample = since_sent
            .checked_sub(held)
            .unwrap_or(since_sent)
            .max(Duration::from_micros(1))
            .max(self.rtt_floor);
        // (2) R = q*R + (1-q)*R_sample, or R_sample for the first (ns-2: q = df_ = 0.95).
        let (rtt_filter, sqrt_filter) = if self.ns2.is_some() {
            (ns2::RTT_FILTER, ns2::RTT_FILTER)
        } else {
            (RTT_FILTER, SQRT_RTT_FILTER)
        };
        let rtt = match self.rtt {
            None => sample,
            Some(rtt) => {
                duration_from_secs(rtt_filter * secs(rtt) + (1.0 - rtt_filter) * secs(sample))
            }
        };
        self.rtt = Some(rtt);
        self.base_rtt = Some(self.base_rtt.map_or(sample, |base| base.min(sample)));
        // §4.5: R_sqmean.
        let root = secs(sample).sqrt();
        self.sqrt_rtt_mean = if self.last_rtt_sample.is_none() {
            root
        } else {
            sqrt_filter * self.sqrt_rtt_mean + (1.0 - sqrt_filter) * root
        };
        self.last_rtt_sample = Some((sample, root));
        (sample, rtt)
    }

    /// §4.3 step (4)'s recv_limit: the X_recv set's maximum, halved first when a data-limited
    /// interval saw p increase, else twice it.
    fn updated_recv_limit(
        &mut self,
        now: Instant,
        x_recv: f64,
        rtt: Duration,
        data_limited: bool,
        p_increased: bool,
    ) -> f64 {
        if !data_limited {
            self.update_x_recv_set(now, x_recv, rtt);
            return 2.0 * self.max_x_recv_set();
        }
        if p_increased {
            // A new loss event or a higher p during a data-limited interval.
            for item in &mut self.x_recv_set {
                item.1 /= 2.0;
            }
            self.maximize_x_recv_set(now, 0.85 * x_recv);
            self.max_x_recv_set()
        } else {
            self.maximize_x_recv_set(now, x_recv);
            2.0 * self.max_x_recv_set()
        }
    }

    /// §4.3 step (4)'s X: from the equation once p > 0, else slow start's doubling once per R.
    fn update_allowed_rate(&mut self, now: Instant, rtt: Duration, p: f64) {
        if p > 0.0 {
            // TFRC-SP (RFC 4828 §3): the equation with the nominal segment size, and "The
            // allowed transmit rate X in bytes per second is reduced by a factor that accounts
            // for packet header size" (both no-ops for standard TFRC).
            self.x_calc = equation::throughput(self.config.equation_s(), secs(rtt), p)
                * self.config.header_factor();
            self.x = self.x_calc.min(self.recv_limit).max(self.minimum_rate());
        } else {
            self.x_calc = f64::INFINITY;
            let due = self.last_doubled.is_none_or(|last| now - last >= rtt);
            if due {
                // Initial slow start: double, bounded by recv_limit, never below W_init/R.
                let initial = self.initial_rate().unwrap_or(self.s());
                self.x = (2.0 * self.x).min(self.recv_limit).max(initial);
                self.last_doubled = Some(now);
            }
        }
    }

    /// ns-2.35 `TfrcAgent::recv()` after `update_rtt()`: X_recv bounds, X_calc with `tzero_`,
    /// the no-feedback timer max(2R, 2s/X) from the rate before this feedback, then slow start,
    /// leaving it on the first loss (X = X_calc), or the additive increase / decrease.
    fn on_feedback_ns2(
        &mut self,
        now: Instant,
        feedback: &FeedbackRepr,
        checked: &CheckedIntervals,
        p: f64,
    ) {
        let s = self.s();
        let r = self.rtt.map_or(1e-9, secs).max(1e-9);
        let x_recv = self.bounded_x_recv(now, feedback, checked);
        self.note_delivered(now, checked);
        self.x_recv = x_recv;
        // Keeps the send records bounded; ns-2 has no data-limited X_recv rules.
        let _ = self.interval_was_data_limited(feedback.echo_sequence);
        self.last_echo = Some(feedback.echo_sequence);
        self.p = p;
        let rate_before = self.sending_rate();
        let data_limited = self.data_limited;
        let first_feedback = !self.feedback_received;
        self.feedback_received = true;
        let Some(state) = self.ns2.as_mut() else {
            return;
        };
        state.round_id = state.round_id.wrapping_add(1);
        state.urgent = false;
        if state.round_id > 1 && x_recv > 0.0 {
            state.slow_start_max_rate = 2.0 * x_recv;
            state.max_rate = 2.0 * x_recv;
        } else {
            state.slow_start_max_rate = 0.0;
            state.max_rate = 0.0;
        }
        self.x_calc = equation::throughput_ns2(s, r, p, secs(state.rto.timeout()));
        let x_calc = self.x_calc;
        let mut send_now = false;
        self.x = if first_feedback || (state.slow_start && p == 0.0) {
            send_now = true;
            state.slow_start_rate(self.x, now, s, r, data_limited)
        } else if state.slow_start {
            state.slow_start = false;
            state.old_rate = x_calc;
            x_calc
        } else if x_calc > self.x {
            state.increased_rate(self.x, x_calc, now, s, r, data_limited)
        } else {
            state.decreased_rate(x_calc, now, s, r)
        }
        .max(self.minimum_rate());
        self.set_no_feedback_timer_ns2(now, rate_before);
        if send_now {
            // nextpkt(): a packet leaves at once and the send timer restarts from it.
            self.next_send = now;
        }
    }

    /// ns-2's no-feedback interval max(2R, 2s/X) for rate `rate` (R = 0 before a sample).
    fn set_no_feedback_timer_ns2(&mut self, now: Instant, rate: f64) {
        let two_rtt = self.rtt.map_or(Duration::ZERO, |rtt| rtt * 2);
        let two_packets = duration_from_secs(2.0 * self.s() / rate.max(self.minimum_rate()));
        self.set_no_feedback_timer(now, two_rtt.max(two_packets));
    }

    fn restart_no_feedback_timer(&mut self, now: Instant) {
        let interval = self.no_feedback_interval();
        self.set_no_feedback_timer(now, interval);
    }

    /// t_RTO = max(4R, 2s/X) (RFC 5348 §4.3 step 3), with X the rate in use now (G for gTFRC).
    fn no_feedback_interval(&self) -> Duration {
        let four_rtt = self.rtt.map_or(Duration::ZERO, |rtt| rtt * 4);
        let two_packets = duration_from_secs(2.0 * self.s() / self.sending_rate().max(1e-9));
        four_rtt.max(two_packets)
    }

    /// Sets t_RTO and starts the no-feedback timer to expire `interval` from `now`.
    fn set_no_feedback_timer(&mut self, now: Instant, interval: Duration) {
        self.rto = interval;
        self.no_feedback_deadline = now + interval;
        self.no_feedback_set_at = now;
    }

    /// True if every packet in the interval covered by this feedback (sent after the packet
    /// echoed by the previous feedback, up to the one echoed now) was sent data-limited, or if no
    /// packet was sent in it (idle).
    fn interval_was_data_limited(&mut self, echo: u32) -> bool {
        // One record per packet sent, in sequence order: packet `sequence`'s is at its distance
        // from the oldest.
        let count_at = |records: &Deque<SendRecord>, sequence: u32| {
            let oldest = records.front()?;
            let index = usize::try_from(wire::sequence_distance(oldest.sequence, sequence)).ok()?;
            records
                .get(index)
                .filter(|record| record.sequence == sequence)
                .map(|record| record.full_rate_count)
        };
        let now_count = count_at(&self.send_records, echo);
        let before_count = match self.last_echo {
            Some(last) => count_at(&self.send_records, last),
            None => Some(0),
        };
        let limited = match (before_count, now_count) {
            (Some(before), Some(after)) => after <= before,
            // Records forgotten: assume not limited (the conservative-for-throughput reading).
            _ => false,
        };
        // Forget records older than the echoed packet, keeping it for the next interval.
        if let Some(front) = self.send_records.front() {
            let older = (wire::sequence_distance(front.sequence, echo).max(0) as usize)
                .min(self.send_records.len());
            self.send_records.drain(..older);
        }
        limited
    }

    fn max_x_recv_set(&self) -> f64 {
        self.x_recv_set
            .iter()
            .map(|item| item.1)
            .fold(0.0, f64::max)
    }

    /// "Update X_recv_set": add X_recv; delete values older than two round-trip times.
    fn update_x_recv_set(&mut self, now: Instant, x_recv: f64, rtt: Duration) {
        self.x_recv_set.retain(|item| now - item.0 <= rtt * 2);
        self.x_recv_set.push((now, x_recv));
    }

    /// "Maximize X_recv_set": keep only the largest of the set and X_recv (Infinity removed),
    /// stamped now.
    fn maximize_x_recv_set(&mut self, now: Instant, x_recv: f64) {
        let largest = self
            .x_recv_set
            .iter()
            .map(|item| item.1)
            .filter(|rate| rate.is_finite())
            .fold(x_recv, f64::max);
        self.x_recv_set.clear();
        self.x_recv_set.push((now, largest));
    }

    /// Fires the no-feedback timer if due (RFC 5348 §4.4); an early call does nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        if now < self.no_feedback_deadline {
            return;
        }
        self.stats.no_feedback_expiries += 1;
        self.silent = true;
        let rate_before = self.sending_rate();
        if let Some(state) = &mut self.ns2 {
            // TfrcAgent::reduce_rate_on_no_feedback().
            let rtt = self.rtt.map(secs);
            self.x = state
                .no_feedback_rate(self.x, self.config.s(), rtt, self.data_limited)
                .max(self.minimum_rate());
            self.cap_target(rate_before);
            self.set_no_feedback_timer_ns2(now, self.sending_rate());
            self.next_send = now;
            return;
        }
        let idle_since_set = self
            .last_send
            .is_none_or(|last| last < self.no_feedback_set_at);
        if self.rtt.is_none() && !self.feedback_received {
            // No RTT sample and no feedback yet: halve, unless the sender was idle all along.
            if !idle_since_set {
                self.x = (self.x / 2.0).max(self.minimum_rate());
                self.cap_target(rate_before);
            }
        } else if idle_since_set
            && self.initial_rate().is_some_and(|recover_rate| {
                // §4.4: "(p > 0 && X_recv < recover_rate) or (p == 0 && X < 2 * recover_rate)".
                (self.p == 0.0 && self.x < 2.0 * recover_rate)
                    || (self.p > 0.0 && self.x_recv < recover_rate)
            })
        {
            // Idle and the receive rate is already below recover_rate: keep the rate.
        } else {
            if self.p == 0.0 {
                // No X_calc yet: halve.
                self.x = (self.x / 2.0).max(self.minimum_rate());
            } else if self.x_calc > 2.0 * self.x_recv {
                // 2*X_recv was limiting the rate.
                self.update_limits(now, self.x_recv);
            } else {
                // X_calc was limiting the rate.
                self.update_limits(now, self.x_calc / 2.0);
            }
            self.cap_target(rate_before);
        }
        self.reschedule();
        self.restart_no_feedback_timer(now);
    }

    /// gTFRC: after a no-feedback expiry that cut X, the floor may give at most half the rate
    /// used before it (see `target_cap`).
    fn cap_target(&mut self, rate_before: f64) {
        if self.config.target_rate.is_some() {
            self.target_cap = self
                .target_cap
                .min((rate_before / 2.0).max(self.minimum_rate()));
        }
    }

    /// Update_Limits(timer_limit) of RFC 5348 §4.4: X_recv_set := {timer_limit/2}, then X is
    /// recomputed as in §4.3 step 4 with recv_limit = timer_limit.
    ///
    /// The halving is done "by modifying the sender's cached copy of X_recv" (§4.4), so the
    /// cached X_recv becomes timer_limit/2 as well: the next expiry then finds
    /// X_calc > 2·X_recv and halves again, every expiry, down to s/t_mbi.
    fn update_limits(&mut self, now: Instant, timer_limit: f64) {
        let timer_limit = timer_limit.max(self.minimum_rate());
        self.x_recv = timer_limit / 2.0;
        self.x_recv_set = vec![(now, timer_limit / 2.0)];
        self.recv_limit = timer_limit;
        self.x = self.x_calc.min(self.recv_limit).max(self.minimum_rate());
    }
}
