//! The TFRC receiver (RFC 5348 §5–§6).
//!
//! Under [`crate::Profile::Ns2`] the same receiver follows ns-2.35's `TfrcSinkAgent` for loss
//! detection, loss events, the first interval, X_recv and feedback timing (see the
//! [`crate::Profile`] docs).
//!
//! # Call order
//! 1. Create with [`Receiver::new`].
//! 2. For every datagram from the sender: [`Receiver::handle_packet`] (or
//!    [`Receiver::handle_packet_ecn`] when the network marked it CE).
//! 3. Whenever [`Receiver::poll_timeout`] returns a time that has come, call
//!    [`Receiver::handle_timeout`]; an early call does nothing.
//! 4. After any of the above, drain [`Receiver::poll_transmit`] until it returns `None` and send
//!    each feedback packet to the sender.

use crate::deque::Deque;
use core::time::Duration;

use crate::config::{Config, ConfigError};
use crate::equation;
use crate::loss_history::LossHistory;
use crate::ns2::Ns2ReceiverState;
use crate::receipts::{ReceivedLedger, RecentMarks};
use crate::receive_rate::ArrivalWindow;
use crate::time::{duration_from_secs, secs, Instant};
use crate::wire::{self, DataRepr, FeedbackRepr, Packet, PacketKind};

/// NDUPACK (RFC 5348 §5.1): a packet is lost once three packets with higher sequence numbers
/// have arrived.
pub const NDUPACK: u32 = 3;

/// ns-2.35's `numPkts_` (ns-2 profile): a gap is a loss once one later packet has arrived.
pub const NS2_LOSS_THRESHOLD: u32 = 1;

/// Most loss events one gap may create; beyond it the remaining losses of that gap join the last
/// event. Only the last nine events matter for p, so this only bounds work on absurd gaps.
const MAX_EVENTS_PER_GAP: u32 = 1000;

/// Offset of the first packet's extended sequence number, so that earlier (reordered) packets
/// still have a non-negative extended number.
const SEQUENCE_ORIGIN: u64 = 1 << 32;

/// Why a datagram was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReceiveError {
    /// The bytes are not a TFRC packet.
    #[error("malformed packet")]
    Malformed,
    /// A feedback packet reached the receiver.
    #[error("unexpected feedback packet")]
    UnexpectedKind,
    /// The packet belongs to another session (or carries the wrong nonce).
    #[error("packet of another session")]
    ForeignSession,
}

/// Counters kept by the receiver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Data packets accepted (duplicates excluded).
    pub packets: u64,
    /// Bytes of accepted data packets (headers included).
    pub bytes: u64,
    /// Payload bytes of accepted data packets.
    pub payload_bytes: u64,
    /// Duplicate or too-old packets.
    pub duplicates: u64,
    /// Packets that arrived after a later one (reordered, not lost).
    pub reordered: u64,
    /// Sequence numbers declared lost.
    pub lost: u64,
    /// CE-marked packets.
    pub ecn_marked: u64,
    /// Loss events.
    pub loss_events: u64,
    /// Malformed datagrams dropped.
    pub malformed: u64,
    /// Datagrams of other sessions dropped.
    pub foreign: u64,
    /// Feedback packets produced.
    pub feedbacks: u64,
}

/// A run of missing sequence numbers [first, end) waiting for NDUPACK later packets.
#[derive(Debug, Clone, Copy)]
struct Gap {
    first: u64,
    end: u64,
    before_sequence: u64,
    before_time: Instant,
    after_sequence: u64,
    after_time: Instant,
    later_packets: u32,
}

impl Gap {
    /// RFC 5348 §5.2: nominal arrival time of a lost packet, interpolated between the packets
    /// received just before and after it.
    fn time_of(&self, sequence: u64) -> Instant {
        let span_sequence = u128::from(self.after_sequence - self.before_sequence);
        let span_time = u128::from(
            self.after_time
                .as_nanos()
                .saturating_sub(self.before_time.as_nanos()),
        );
        let offset = u128::from(sequence - self.before_sequence);
        let added = span_time * offset / span_sequence.max(1);
        Instant::from_nanos(
            self.before_time
                .as_nanos()
                .saturating_add(u64::try_from(added).unwrap_or(u64::MAX)),
        )
    }

    /// The first sequence number in [from, end) whose interpolated time is after `limit`.
    fn first_after(&self, from: u64, limit: Instant) -> Option<u64> {
        if self.time_of(from) > limit {
            return Some(from);
        }
        let span_time = self
            .after_time
            .as_nanos()
            .saturating_sub(self.before_time.as_nanos());
        if span_time == 0 {
            return None;
        }
        let span_sequence = u128::from(self.after_sequence - self.before_sequence);
        let needed = u128::from(limit.as_nanos().saturating_sub(self.before_time.as_nanos()) + 1);
        // Smallest offset with span_time * offset / span_sequence >= needed.
        let offset = (needed * span_sequence).div_ceil(u128::from(span_time));
        let mut candidate = self
            .before_sequence
            .saturating_add(u64::try_from(offset).unwrap_or(u64::MAX))
            .max(from);
        // Integer rounding can leave the candidate one short.
        while candidate < self.end && self.time_of(candidate) <= limit {
            candidate += 1;
        }
        (candidate < self.end).then_some(candidate)
    }
}

/// The TFRC receiver: detects losses, keeps the loss history and produces feedback.
#[derive(Debug, Clone)]
pub struct Receiver {
    config: Config,
    /// Session id and token (the nonce's upper half) learned from the first data packet.
    session: Option<(u32, u16)>,
    /// The marks of recently received packets: what the feedback's receipt proof sums
    /// ([`wire::ReceiptProof`]).
    marks: RecentMarks,
    /// Lowest extended sequence number received (the start of what feedback can prove).
    lowest: Option<u64>,
    /// Highest extended sequence number received and its arrival time.
    highest: Option<(u64, Instant)>,
    gaps: Deque<Gap>,
    history: LossHistory,
    /// R_m: the sender's RTT estimate carried by the latest data packet.
    rtt: Option<Duration>,
    /// Veno backlog N (packets) from the latest data packet.
    veno_backlog: f64,
    /// Latest data packet for the timestamp echo: (sequence, timestamp, arrival).
    latest: Option<(u32, u64, Instant)>,
    bytes_since_feedback: u64,
    packets_since_feedback: u64,
    /// Arrival times and bytes of recent data packets, for X_recv over the last R_m (§6.2).
    arrivals: ArrivalWindow,
    last_feedback: Option<Instant>,
    x_recv: f64,
    reported_p: f64,
    feedback_timer: Option<Instant>,
    feedback_pending: bool,
    stats: ReceiverStats,
    /// ns-2.35 sink state, under [`crate::Profile::Ns2`] only.
    ns2: Option<Ns2ReceiverState>,
    /// The sums of the marks received, for the loss intervals' proofs
    /// ([`wire::LossIntervals`]).
    ledger: ReceivedLedger,
    /// The open interval's last loss whose sum the ledger was asked for.
    requested_last_loss: Option<u64>,
}

impl Receiver {
    /// A receiver waiting for its first data packet.
    pub fn new(config: Config) -> Result<Receiver, ConfigError> {
        config.validate()?;
        let (history, ns2) = if config.is_ns2() {
            (
                LossHistory::new_ns2(config.history_discounting),
                Some(Ns2ReceiverState::default()),
            )
        } else if config.small_packets.is_some() {
            (
                LossHistory::new_small_packets(config.history_discounting),
                None,
            )
        } else {
            (LossHistory::new(config.history_discounting), None)
        };
        Ok(Receiver {
            history,
            ns2,
            config,
            session: None,
            marks: RecentMarks::default(),
            lowest: None,
            highest: None,
            gaps: Deque::default(),
            rtt: None,
            veno_backlog: 0.0,
            latest: None,
            bytes_since_feedback: 0,
            packets_since_feedback: 0,
            arrivals: ArrivalWindow::new(),
            last_feedback: None,
            x_recv: 0.0,
            reported_p: 0.0,
            feedback_timer: None,
            feedback_pending: false,
            stats: ReceiverStats::default(),
            ledger: ReceivedLedger::default(),
            requested_last_loss: None,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Counters.
    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }

    /// The current loss event rate p (0 before any loss), as of the latest arrival.
    pub fn loss_event_rate(&self) -> f64 {
        let latest = self.latest.map_or(Instant::ZERO, |(_, _, arrival)| arrival);
        self.loss_event_rate_at(latest)
    }

    /// p at `now` (TFRC-SP leaves out an open loss interval younger than two RTTs).
    fn loss_event_rate_at(&self, now: Instant) -> f64 {
        match self.highest {
            Some((highest, _)) => self.history.loss_event_rate(highest, now),
            None => 0.0,
        }
    }

    /// The loss history (intervals, events).
    pub fn loss_history(&self) -> &LossHistory {
        &self.history
    }

    /// X_recv reported in the latest feedback, bytes/s.
    pub fn x_recv(&self) -> f64 {
        self.x_recv
    }

    /// The highest sequence number received, extended past the 2^32 wrap (the sender numbers
    /// its packets from 0, so at least this many plus one were sent).
    pub fn highest_sequence(&self) -> Option<u64> {
        self.highest
            .map(|(sequence, _)| sequence.saturating_sub(SEQUENCE_ORIGIN))
    }

    /// R_m, the sender's RTT estimate as last seen in its data packets.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt
    }

    /// The Veno backlog N (packets) of the latest data packet.
    pub fn veno_backlog(&self) -> f64 {
        self.veno_backlog
    }

    /// The session id this receiver is bound to, once the first data packet arrived.
    pub fn session_id(&self) -> Option<u32> {
        self.session.map(|(id, _)| id)
    }

    /// Feedbacks per RTT: the fixed `feedbacks_per_rtt` if configured, else
    /// N_fb = max(int(RTT/RTT_ref), 1), or 1 without RTT_ref.
    pub fn feedbacks_per_rtt(&self) -> u32 {
        self.config.feedbacks_per_rtt_at(self.rtt)
    }

    /// The interval between feedbacks: R_m / N_fb (RFC 5348 §6.2 with the feedbacks-per-RTT
    /// extension); `None` while the receiver has no RTT.
    pub fn feedback_interval(&self) -> Option<Duration> {
        self.rtt.map(|rtt| rtt / self.feedbacks_per_rtt())
    }

    /// Handles one datagram from the sender (not CE-marked).
    pub fn handle_packet(&mut self, now: Instant, bytes: &[u8]) -> Result<(), ReceiveError> {
        self.handle_packet_ecn(now, bytes, false)
    }

    /// Handles one datagram; `ce_marked` says the network marked it Congestion Experienced.
    /// RFC 5348 §5.2: a marked packet counts as a loss at its arrival time.
    pub fn handle_packet_ecn(
        &mut self,
        now: Instant,
        bytes: &[u8],
        ce_marked: bool,
    ) -> Result<(), ReceiveError> {
        let Ok(packet) = Packet::new_checked(bytes) else {
            self.stats.malformed += 1;
            return Err(ReceiveError::Malformed);
        };
        if packet.kind() != PacketKind::Data {
            self.stats.malformed += 1;
            return Err(ReceiveError::UnexpectedKind);
        }
        let Ok(data) = DataRepr::parse(&packet) else {
            self.stats.malformed += 1;
            return Err(ReceiveError::Malformed);
        };
        let token = (data.nonce >> 16) as u16;
        match self.session {
            None => self.session = Some((data.session_id, token)),
            Some(session) if session != (data.session_id, token) => {
                self.stats.foreign += 1;
                return Err(ReceiveError::ForeignSession);
            }
            Some(_) => {}
        }
        self.marks.insert(data.sequence, data.nonce as u16);
        let length = bytes.len() as u64;
        let payload = packet.payload().len() as u64;
        if let Some(state) = &mut self.ns2 {
            state.urgent = packet.flags() & wire::NS2_URGENT_FLAG != 0;
            state.loss_clock = Instant::from_nanos(data.timestamp);
            state.arrival = now;
        }
        let flags = packet.flags();
        self.on_data(now, &data, length, payload, ce_marked, flags);
        Ok(())
    }

    /// The number of later packets after which a gap is lost: NDUPACK, or `numPkts_` = 1 under
    /// the ns-2 profile.
    fn loss_threshold(&self) -> u32 {
        if self.ns2.is_some() {
            NS2_LOSS_THRESHOLD
        } else {
            NDUPACK
        }
    }

    /// RFC 5348 §6.1: a data packet arrives. Its sequence number is extended to 64 bits, the
    /// packet is recorded (duplicates counted and dropped), losses it reveals are detected,
    /// and feedback is scheduled (§6.1 step 3, §6.2, §6.3; or ns-2's rules).
    fn on_data(
        &mut self,
        now: Instant,
        data: &DataRepr,
        length: u64,
        payload: u64,
        ce: bool,
        flags: u16,
    ) {
        if data.rtt_micros > 0 {
            let rtt = Duration::from_micros(u64::from(data.rtt_micros));
            self.rtt = Some(rtt);
            self.history.set_rtt(rtt);
        }
        self.veno_backlog = f64::from(data.veno_backlog_millipackets) / 1000.0;

        let first_packet = self.highest.is_none();
        let Some(sequence) = self.extended_sequence(data.sequence) else {
            self.stats.duplicates += 1;
            return;
        };
        let previous_highest = self.highest.map(|(highest, _)| highest);
        // ns-2 interpolates loss times between send timestamps (tfrc-sink.cc `tsvec_`).
        let loss_clock = self.ns2.as_ref().map_or(now, |state| state.loss_clock);
        if !self.record_arrival(sequence, loss_clock) {
            self.stats.duplicates += 1;
            return;
        }
        self.lowest = Some(self.lowest.map_or(sequence, |lowest| lowest.min(sequence)));
        if first_packet {
            self.start_ledger(data.sequence, sequence, loss_clock);
        }
        self.ledger.received(sequence, data.nonce as u16);
        if let Some(state) = &mut self.ns2 {
            // ns-2 takes round_id from every new packet before judging the losses it reveals.
            state.round = flags & wire::NS2_ROUND_MASK;
        }
        self.count_arrival(now, data, length, payload);

        let events_before = self.history.loss_events();
        self.detect_losses(now);
        if ce {
            self.stats.ecn_marked += 1;
            self.register_loss(sequence, loss_clock, now);
        }
        self.ledger.settle();
        let new_event = self.history.loss_events() > events_before;

        if self.ns2.is_some() {
            let new_highest = previous_highest.is_none_or(|highest| sequence > highest);
            self.on_data_ns2(now, first_packet, new_highest, new_event);
            return;
        }
        self.schedule_feedback(now, first_packet, new_event);
    }

    /// The 64-bit sequence number of a packet carrying `sequence` (its 32 bits), from the
    /// highest so far; `None` for one from before the first packet received.
    fn extended_sequence(&self, sequence: u32) -> Option<u64> {
        match self.highest {
            None => Some(SEQUENCE_ORIGIN + u64::from(sequence)),
            Some((highest, _)) => {
                let distance = wire::sequence_distance(highest as u32, sequence);
                u64::try_from(highest as i64 + distance).ok()
            }
        }
    }

    /// The receipt ledger starts at the first packet; under RFC rules, packets numbered before
    /// it (from 0) count as lost first.
    fn start_ledger(&mut self, wire_sequence: u32, sequence: u64, loss_clock: Instant) {
        let ahead = wire::sequence_distance(0, wire_sequence);
        if self.ns2.is_none() && ahead > 0 {
            self.note_lost_first_packets(wire_sequence, sequence, loss_clock);
            self.ledger.start(sequence - ahead as u64);
        } else {
            self.ledger.start(sequence);
        }
    }

    /// Counts a new packet: statistics, what the next feedback's X_recv covers, the arrival
    /// log and the latest packet (for the echo).
    fn count_arrival(&mut self, now: Instant, data: &DataRepr, length: u64, payload: u64) {
        self.stats.packets += 1;
        self.stats.bytes += length;
        self.stats.payload_bytes += payload;
        // X_recv counts payload bytes, the unit of s (RFC 5348 §3.1: "excluding IP and
        // transport protocol headers"), so that it compares with X.
        self.bytes_since_feedback += payload;
        self.packets_since_feedback += 1;
        if self.ns2.is_none() {
            // Twice R_m is kept so that a growing R_m still finds a full window.
            let keep = self.rtt.map(|rtt| rtt * 2);
            self.arrivals.record(now, payload, keep);
        }
        if self.latest.is_none_or(|(_, _, arrival)| arrival <= now) {
            self.latest = Some((data.sequence, data.timestamp, now));
        }
    }

    /// When to send feedback after a packet (RFC rules).
    fn schedule_feedback(&mut self, now: Instant, first_packet: bool, new_event: bool) {
        if first_packet {
            // RFC 5348 §6.3: the first data packet is answered at once (p = 0, X_recv = 0).
            self.feedback_pending = true;
        } else if new_event && self.loss_event_rate_at(now) > self.reported_p {
            // RFC 5348 §6.1 step 3: a new loss event that raises p expires the feedback timer.
            self.feedback_pending = true;
        } else if self.feedback_timer.is_none() {
            match (self.feedback_interval(), self.last_feedback) {
                (Some(interval), Some(last)) => {
                    // RFC 5348 §6.2 restarts a timer that found no data, so a packet after a
                    // silence would wait for that timer's next expiry. Here the timer stops and
                    // the first packet after the silence is answered at once once an interval
                    // has passed (docs/rfc5348-readings.md says why).
                    let due = last + interval;
                    if due <= now {
                        self.feedback_pending = true;
                    } else {
                        self.feedback_timer = Some(due);
                    }
                }
                // Without an RTT the receiver answers every data packet: the sender sends at
                // most about one packet per second until its first RTT sample.
                _ => self.feedback_pending = true,
            }
        }
    }

    /// ns-2.35 `TfrcSinkAgent::recv()`: report at once on an urgent packet (the sender's
    /// `UrgentFlag`, the first packet, the first loss), on every new loss event, or when a new
    /// packet arrives at least R/NumFeedback after the last report.
    fn on_data_ns2(&mut self, now: Instant, first_packet: bool, new_highest: bool, event: bool) {
        let keep = self.rtt.map(|rtt| rtt * 4);
        let interval = self.feedback_interval();
        let last_feedback = self.last_feedback;
        let Some(state) = &mut self.ns2 else {
            return;
        };
        state.last_arrival = Some(now);
        state.note_arrival(now, keep);
        let mut urgent = state.urgent || first_packet || state.first_loss_p.is_some();
        if new_highest {
            if let Some(interval) = interval.filter(|interval| !interval.is_zero()) {
                if last_feedback.is_none_or(|last| now - last >= interval) {
                    urgent = true;
                }
            }
        }
        if urgent || event {
            self.feedback_pending = true;
        }
    }

    /// A sender numbers its data packets from 0 (`Sender`), so a first arrival numbered k > 0
    /// (k < 2^31, ahead of 0 in wrapping order) means packets 0 … k−1 were lost: RFC 5348
    /// §5.1's loss detection then treats them as any other gap ("a packet is lost if at least
    /// NDUPACK packets with a higher sequence number have arrived"), with the first arrival's
    /// time as their nominal time. Without this, losing packet 0 would go unseen (p = 0) where
    /// losing packet 1 counts. A first arrival behind 0 in wrapping order (a sender that does
    /// not start at 0) opens no gap.
    fn note_lost_first_packets(&mut self, wire_sequence: u32, extended: u64, time: Instant) {
        let ahead = wire::sequence_distance(0, wire_sequence);
        if ahead <= 0 {
            return;
        }
        let first = extended - ahead as u64;
        self.gaps.push_back(Gap {
            first,
            end: extended,
            before_sequence: first - 1,
            before_time: time,
            after_sequence: extended,
            after_time: time,
            later_packets: 1,
        });
    }

    /// Records the arrival of `sequence`; returns false for a duplicate.
    fn record_arrival(&mut self, sequence: u64, now: Instant) -> bool {
        let Some((highest, highest_time)) = self.highest else {
            self.highest = Some((sequence, now));
            return true;
        };
        if sequence > highest {
            if sequence > highest + 1 {
                self.gaps.push_back(Gap {
                    first: highest + 1,
                    end: sequence,
                    before_sequence: highest,
                    before_time: highest_time,
                    after_sequence: sequence,
                    after_time: now,
                    later_packets: 0,
                });
            }
            for gap in &mut self.gaps {
                gap.later_packets += 1;
            }
            self.highest = Some((sequence, now));
            // Bound memory: too many gaps means the oldest is lost for sure.
            let threshold = self.loss_threshold();
            while self.gaps.len() > self.config.max_tracked_gaps {
                if let Some(gap) = self.gaps.front_mut() {
                    gap.later_packets = threshold;
                }
                self.detect_losses(now);
            }
            return true;
        }
        if sequence == highest {
            return false;
        }
        // A late packet: it fills (part of) a gap, or it is a duplicate.
        let Some(index) = self
            .gaps
            .iter()
            .position(|gap| gap.first <= sequence && sequence < gap.end)
        else {
            return false;
        };
        self.stats.reordered += 1;
        // Gaps wholly below the late packet gain a later packet; so does the part of its own gap
        // below it. The part above it does not.
        for gap in self.gaps.range_mut(..index) {
            gap.later_packets += 1;
        }
        let gap = self.gaps[index];
        self.gaps.remove(index);
        if sequence + 1 < gap.end {
            self.gaps.insert(
                index,
                Gap {
                    first: sequence + 1,
                    ..gap
                },
            );
        }
        if gap.first < sequence {
            self.gaps.insert(
                index,
                Gap {
                    end: sequence,
                    later_packets: gap.later_packets + 1,
                    ..gap
                },
            );
        }
        true
    }

    /// Declares lost every gap that has seen NDUPACK later packets, oldest first. `now` is the
    /// arrival time of the packet that revealed the losses.
    fn detect_losses(&mut self, now: Instant) {
        let threshold = self.loss_threshold();
        while let Some(gap) = self.gaps.front().copied() {
            if gap.later_packets < threshold {
                break;
            }
            self.gaps.pop_front();
            self.stats.lost += gap.end - gap.first;
            self.ledger.lost(gap.first, gap.end);
            self.register_gap_losses(&gap, now);
        }
    }

    /// Turns the lost packets of one gap into loss events (RFC 5348 §5.2).
    fn register_gap_losses(&mut self, gap: &Gap, now: Instant) {
        let rtt = self.rtt.unwrap_or(Duration::ZERO);
        let mut sequence = gap.first;
        let mut events = 0;
        // The gap's lost packets up to each new event belong to the interval that event closes
        // (TFRC-SP counts them, RFC 4828 §3).
        let mut counted_to = gap.first;
        while sequence < gap.end && events < MAX_EVENTS_PER_GAP {
            let time = gap.time_of(sequence);
            if self.history.starts_new_event(time, rtt) {
                if !self.ns2_round_allows_event() {
                    // Every loss of this gap was revealed by the same packet, so none of them
                    // can start an event (ns-2 `new_loss()` with `PreciseLoss_ 1`).
                    break;
                }
                self.history.add_losses(sequence - counted_to);
                if sequence > counted_to {
                    self.note_loss(sequence - 1);
                }
                counted_to = sequence;
                self.start_event(sequence, time, now);
                events += 1;
            }
            let Some((_, start)) = self.history.event_start() else {
                break;
            };
            match gap.first_after(sequence + 1, start + rtt) {
                Some(next) => sequence = next,
                None => break,
            }
        }
        self.history.add_losses(gap.end - counted_to);
        // Every lost packet of the gap lies in the lossy part of an event: those that started
        // no event (within one RTT of its first loss, or refused by ns-2's rounds) in the last.
        self.note_loss(gap.end - 1);
    }

    /// Packet `sequence` was lost and belongs to the current loss event: its lossy part
    /// reaches to it, and the ledger keeps the sum through it (where the data part starts).
    fn note_loss(&mut self, sequence: u64) {
        if !self.history.note_loss(sequence) {
            return;
        }
        let Some((start, last)) = self.history.open_lossy_part() else {
            return;
        };
        if sequence < start {
            // In a closed interval: its data part now starts after this loss.
            self.ledger.request(sequence);
            return;
        }
        if self.requested_last_loss == Some(last) {
            return;
        }
        if let Some(previous) = self
            .requested_last_loss
            .filter(|&previous| previous != start)
        {
            self.ledger.forget(previous);
        }
        self.ledger.request(last);
        self.requested_last_loss = Some(last);
    }

    /// A single loss (a CE mark) at a known time, revealed at `now`.
    fn register_loss(&mut self, sequence: u64, time: Instant, now: Instant) {
        let rtt = self.rtt.unwrap_or(Duration::ZERO);
        if self.history.starts_new_event(time, rtt) && self.ns2_round_allows_event() {
            self.start_event(sequence, time, now);
        }
        self.history.add_losses(1);
        self.note_loss(sequence);
    }

    /// ns-2 `new_loss()` with `PreciseLoss_ 1`: a loss starts a new event only when the packet
    /// that revealed it belongs to a later round than the one that revealed the last event.
    /// Always true under RFC 5348.
    fn ns2_round_allows_event(&self) -> bool {
        self.ns2.as_ref().is_none_or(|state| {
            state
                .last_loss_round
                .is_none_or(|last| wire::ns2_round_after(state.round, last))
        })
    }

    /// Starts a loss event at `sequence` (nominal loss time `time`), revealed at `now`.
    fn start_event(&mut self, sequence: u64, time: Instant, now: Instant) {
        self.start_event_history(sequence, time, now);
        // The proofs need the sum below the new interval's start; sums older than every
        // reported interval are no longer needed.
        self.requested_last_loss = None;
        if let Some((start, _)) = self.history.open_lossy_part() {
            self.ledger.request(start);
        }
        if let Some(oldest) = self.oldest_interval_start() {
            self.ledger.forget_below(oldest);
        }
    }

    /// The first packet of the oldest closed interval that spans packets (the synthetic one
    /// spans none).
    fn oldest_interval_start(&self) -> Option<u64> {
        let (mut start, _) = self.history.open_lossy_part()?;
        for interval in self.history.closed_intervals() {
            if interval.synthetic {
                break;
            }
            start = start.saturating_sub(interval.raw_length);
        }
        Some(start)
    }

    /// Records a loss event in the history (RFC 5348, or ns-2.35 under its profile).
    fn start_event_history(&mut self, sequence: u64, time: Instant, now: Instant) {
        let highest = self.highest.map_or(sequence, |(highest, _)| highest);
        self.stats.loss_events += 1;
        if self.ns2.is_some() {
            self.start_event_ns2(sequence, time, highest);
            return;
        }
        // Veno: this event's class (N of the latest data packet against β) is the class of the
        // interval it opens, the first event's included.
        let stretch = self
            .config
            .veno
            .filter(|veno| self.veno_backlog < veno.beta)
            .map(|veno| veno.alpha);
        if self.history.loss_events() == 0 {
            let interval = self.synthetic_first_interval(now);
            self.history.first_event(sequence, time, interval, stretch);
            return;
        }
        self.history.new_event(sequence, time, highest, stretch);
    }

    /// ns-2.35: `new_loss()` records the event's round; the first event is
    /// `adjust_history()`: it starts at the revealing packet's send time, its open interval
    /// counts from the highest packet at the last report, and the synthetic interval is
    /// int(1/p) with p = `b_to_p(est_thput()·s, R, t_RTO)`. ns-2 uses the sender's `tzero_`
    /// there; this receiver does not know it and uses 4R.
    fn start_event_ns2(&mut self, sequence: u64, time: Instant, highest: u64) {
        let s = self.config.s();
        let rtt = self.rtt;
        let (last_feedback, packets) = (self.last_feedback, self.packets_since_feedback);
        let stretch = self
            .config
            .veno
            .filter(|veno| self.veno_backlog < veno.beta)
            .map(|veno| veno.alpha);
        let Some(state) = &mut self.ns2 else {
            return;
        };
        state.last_loss_round = Some(state.round);
        if self.history.loss_events() > 0 {
            self.history.new_event(sequence, time, highest, stretch);
            return;
        }
        let now = state.arrival;
        let rate = state.receive_rate_packets(now, rtt, last_feedback, packets) * s;
        let r = rtt.map_or(1.0, secs).max(1e-6);
        let p = equation::loss_event_rate_for_ns2(s, r, 4.0 * r, rate).unwrap_or(1.0);
        state.first_loss_p = Some(p);
        let start = state
            .highest_at_report
            .filter(|&start| start < sequence)
            .unwrap_or(sequence);
        let interval = (1.0 / p).floor().max(1.0);
        self.history
            .first_event(start, state.loss_clock, interval, stretch);
    }

    /// RFC 5348 §6.3.1: "TFRC approximates this target rate by X_recv, the receive rate over the
    /// most recent round-trip time. After the first loss is detected, the receiver calculates the
    /// loss interval that would be required to produce the data rate X_recv": the p with
    /// X(s, R, p) = X_target, interval = 1/p.
    ///
    /// X_target is the rate of the packets that arrived in the R before `now` (the arrival of the
    /// packet that revealed the loss): bytes and time cover the same span, so a loss revealed just
    /// after a feedback is not divided by a few milliseconds. If nothing arrived in that span, the
    /// last reported X_recv; without any rate, s per R. R is R_m, or 1 s if the receiver has no RTT
    /// yet.
    ///
    /// TFRC-SP (RFC 4828 §1): "In calculating this loss interval, TFRC-SP uses the segment size
    /// of 1460 bytes, rather than the actual segment size used in the connection" (the nominal
    /// segment size).
    fn synthetic_first_interval(&self, now: Instant) -> f64 {
        let s = self.config.s();
        let span = self.rtt.unwrap_or(Duration::from_secs(1));
        let rtt = secs(span).max(1e-6);
        let measured = self.arrivals.rate(now, span);
        let target = Some(measured)
            .filter(|rate| *rate > 0.0)
            .or((self.x_recv > 0.0).then_some(self.x_recv))
            .unwrap_or(s / rtt);
        let p = equation::loss_event_rate_for(self.config.equation_s(), rtt, target).unwrap_or(1.0);
        1.0 / p
    }

    /// X_recv for a feedback sent at `now` (RFC 5348 §6.2 step 2): the payload bytes of the data
    /// packets (the unit of s, which excludes transport headers, §3.1) that arrived in the previous R_m seconds,
    /// divided by R_m, whether the feedback is on time or early because of a loss. The first
    /// report carries 0 (§6.3). Without R_m (the sender has no RTT sample yet, so it sends about
    /// one packet per second and every packet is answered) there is no window to use: the bytes
    /// since the last feedback over the time since it.
    fn measured_receive_rate(&self, now: Instant) -> f64 {
        let Some(last) = self.last_feedback else {
            return 0.0;
        };
        match self.rtt.filter(|rtt| !rtt.is_zero()) {
            Some(rtt) => self.arrivals.rate(now, rtt),
            None if now > last => self.bytes_since_feedback as f64 / secs(now - last),
            None => 0.0,
        }
    }

    /// When [`Receiver::handle_timeout`] should next be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.feedback_timer
    }

    /// Fires the feedback timer if it is due (an early call does nothing).
    pub fn handle_timeout(&mut self, now: Instant) {
        let Some(due) = self.feedback_timer else {
            return;
        };
        if now < due {
            return;
        }
        self.feedback_timer = None;
        if let Some(state) = &self.ns2 {
            // TfrcNackTimer::expire(): report if data arrived since the last report
            // (`last_arrival_ >= last_report_sent`), and restart the timer either way.
            let fresh = state
                .last_arrival
                .is_some_and(|arrival| self.last_feedback.is_none_or(|last| arrival >= last));
            if fresh {
                self.feedback_pending = true;
            } else {
                self.feedback_timer = self.ns2_feedback_timeout().map(|timeout| now + timeout);
            }
            return;
        }
        if self.packets_since_feedback > 0 {
            // RFC 5348 §6.2: data arrived since the last report: send one.
            self.feedback_pending = true;
        }
        // Otherwise the timer stays off until the next data packet re-arms it.
    }

    /// The receipt proof of the next feedback: among the runs of consecutive received packets
    /// ending at most [`wire::PROOF_MAX_OFFSET`] below `echo`, the nearest to it that is
    /// complete (holds every packet of the [`wire::PROOF_WINDOW`] below its end, or all since
    /// the first this receiver got), else the longest. A loss not yet detected (fewer than NDUPACK later
    /// packets) or a packet late in flight then leaves a complete run below it, which is what
    /// a sender may ask of a receiver that reports no loss.
    fn receipt_proof(&self, echo: u32) -> wire::ReceiptProof {
        // Packets from the first this receiver got up to `end`: what a complete run holds
        // (or the whole window). Packets before the first arrival are not ours to prove.
        let since_first = |end: u32| -> u64 {
            match (self.highest, self.lowest) {
                (Some((highest, _)), Some(lowest)) => {
                    let end = highest.saturating_sub(u64::from((highest as u32).wrapping_sub(end)));
                    (end + 1).saturating_sub(lowest)
                }
                _ => 0,
            }
        };
        let mut best = wire::ReceiptProof {
            offset: 0,
            length: 0,
            sum: 0,
        };
        for offset in 0..=wire::PROOF_MAX_OFFSET {
            let end = echo.wrapping_sub(u32::from(offset));
            let (length, sum) = self.marks.run_ending(end, wire::PROOF_WINDOW);
            let proof = wire::ReceiptProof {
                offset,
                length,
                sum,
            };
            let complete = length > 0
                && u64::from(length) >= since_first(end).min(u64::from(wire::PROOF_WINDOW));
            if complete {
                return proof;
            }
            if length > best.length {
                best = proof;
            }
        }
        best
    }

    /// The loss intervals a feedback reports ([`wire::LossIntervals`]): the open interval I_0
    /// and the closed ones, each split into its lossy part (its loss event's first to last
    /// loss) and its data part (all received), with the sum of the data part's marks. Before
    /// any loss, the open interval runs from the first packet sent. Packets above the settled
    /// ones (a gap not yet declared lost, RFC 5348 §5.1) are the open interval's tail. A data
    /// part whose sums the ledger no longer holds is reported as lossy (unproven).
    fn loss_intervals(&self) -> wire::LossIntervals {
        let clamp = |value: u64| u32::try_from(value).unwrap_or(u32::MAX);
        let mut intervals = wire::LossIntervals::default();
        let (Some((highest, _)), Some(origin)) = (self.highest, self.ledger.origin()) else {
            return intervals;
        };
        let settled = self.ledger.settled();
        let (start, lossy, data, sum) = match self.history.open_lossy_part() {
            None => match settled {
                Some((through, sum)) => (origin, 0, through + 1 - origin, sum),
                None => (origin, 0, 0, 0),
            },
            Some((start, last_loss)) => {
                let lossy = (last_loss + 1).saturating_sub(start);
                match (settled, self.ledger.sums_descending().through(last_loss)) {
                    (Some((through, sum)), Some(at_last)) if through > last_loss => {
                        (start, lossy, through - last_loss, sum.wrapping_sub(at_last))
                    }
                    _ => (start, lossy, 0, 0),
                }
            }
        };
        let total = (highest + 1).saturating_sub(start);
        let lossy = lossy.min(total);
        let data = data.min(total - lossy);
        intervals.open_start = start as u32;
        intervals.tail = clamp(total - lossy - data);
        intervals.entries[0] = wire::LossInterval {
            lossy: clamp(lossy),
            data: clamp(data),
            sum,
            flags: if self.history.open_is_stretched() {
                wire::LossInterval::STRETCHED
            } else {
                0
            },
        };
        let mut end = start;
        // Boundaries only go down from here.
        let mut sums = self.ledger.sums_descending();
        for closed in self.history.closed_intervals() {
            if closed.synthetic {
                // Rounded up, and one more: the sender's recomputed p must never exceed ours.
                let length = closed.length.ceil().min(f64::from(u32::MAX - 1)) as u32 + 1;
                intervals.push(wire::LossInterval {
                    lossy: 0,
                    data: length,
                    sum: 0,
                    flags: wire::LossInterval::SYNTHETIC,
                });
                break;
            }
            let first = end.saturating_sub(closed.raw_length);
            let lossy = closed.lossy.min(closed.raw_length);
            let proven = match (sums.below(end), sums.through(first + lossy.max(1) - 1)) {
                (Some(below_next), Some(at_last)) if lossy > 0 => {
                    Some(below_next.wrapping_sub(at_last))
                }
                _ => None,
            };
            let (lossy, data, sum) = match proven {
                Some(sum) => (lossy, closed.raw_length - lossy, sum),
                None => (closed.raw_length, 0, 0),
            };
            intervals.push(wire::LossInterval {
                lossy: clamp(lossy),
                data: clamp(data),
                sum,
                flags: if closed.stretched {
                    wire::LossInterval::STRETCHED
                } else {
                    0
                },
            });
            end = first;
        }
        intervals
    }

    /// Writes the next feedback packet into `buffer` and returns its length, if one is due.
    /// `buffer` must hold [`wire::MAX_FEEDBACK_LEN`] bytes (a feedback is 64 to 160 bytes).
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant, buffer: &mut [u8]) -> Option<usize> {
        if !self.feedback_pending || buffer.len() < wire::MAX_FEEDBACK_LEN {
            return None;
        }
        let (session_id, token) = self.session?;
        let (echo_sequence, echo_timestamp, arrival) = self.latest?;
        let proof = self.receipt_proof(echo_sequence);
        self.feedback_pending = false;

        // X_recv: RFC 5348 §6.2 step 2 (`measured_receive_rate`); ns-2: `est_thput()`·s.
        let mut p = self.loss_event_rate_at(now);
        if let Some(state) = &mut self.ns2 {
            let packets = state.receive_rate_packets(
                now,
                self.rtt,
                self.last_feedback,
                self.packets_since_feedback,
            );
            self.x_recv = packets * self.config.s();
            if let Some(first) = state.first_loss_p.take() {
                p = first;
            }
            state.highest_at_report = self.highest.map(|(highest, _)| highest);
        } else {
            self.x_recv = self.measured_receive_rate(now);
        }
        self.reported_p = p;
        let elapsed = u32::try_from((now - arrival).as_micros()).unwrap_or(u32::MAX);
        let repr = FeedbackRepr {
            session_id,
            echo_sequence,
            echo_timestamp,
            elapsed_micros: elapsed,
            x_recv: crate::numeric::round_to_u64(self.x_recv),
            loss_event_rate_raw: wire::encode_loss_event_rate(p),
            echo_nonce: proof.echo_nonce(token),
            proof_flags: proof.flags(),
            intervals: self.loss_intervals(),
        };
        repr.emit(buffer).ok()?;
        self.last_feedback = Some(now);
        self.bytes_since_feedback = 0;
        self.packets_since_feedback = 0;
        self.stats.feedbacks += 1;
        self.feedback_timer = if self.ns2.is_some() {
            self.ns2_feedback_timeout().map(|timeout| now + timeout)
        } else {
            self.feedback_interval().map(|interval| now + interval)
        };
        Some(repr.buffer_len())
    }

    /// ns-2's report timer, 1.5·R/NumFeedback (`TfrcSinkAgent::nextpkt()`); `None` without R.
    fn ns2_feedback_timeout(&self) -> Option<Duration> {
        self.feedback_interval()
            .filter(|interval| !interval.is_zero())
            .map(|interval| duration_from_secs(1.5 * secs(interval)))
    }
}

#[cfg(test)]
mod ledger_tests {
    use super::*;
    use crate::Sender;

    #[test]
    fn a_loss_free_stream_has_no_tail() {
        let config = Config::default();
        let mut sender = Sender::new(config.clone(), 1, 2, Instant::ZERO).unwrap();
        let mut receiver = Receiver::new(config).unwrap();
        let mut buffer = [0u8; 1500];
        let mut now = Instant::ZERO;
        for _ in 0..30 {
            now = now.max(sender.next_send_time());
            let length = sender.send_padded(now, &mut buffer).unwrap();
            receiver.handle_packet(now, &buffer[..length]).unwrap();
            let intervals = receiver.loss_intervals();
            assert_eq!(intervals.tail, 0, "{intervals:?}");
            now += Duration::from_millis(1);
        }
    }
}
