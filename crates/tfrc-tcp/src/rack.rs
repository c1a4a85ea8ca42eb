//! RACK-TLP loss detection (RFC 8985) for CUBIC and BBR, as Linux runs it
//! (`net/ipv4/tcp_recovery.c`, `tcp_schedule_loss_probe` and `tcp_send_loss_probe` in
//! `tcp_output.c`). Reno, NewReno and SACK keep RFC 6675: ns-2.35 has no RACK.
//!
//! RFC 8985 §3: "RACK uses a notion of time, instead of packet or sequence counts, to detect
//! losses": a packet is lost once a packet sent after it was delivered and it has not been
//! delivered itself within `RACK.rtt + RACK.reo_wnd` of its own transmission. This finds a
//! lost retransmission (its new transmission time makes it comparable with new data) and,
//! with the tail loss probe (§7), a lost tail, both without waiting for the retransmission
//! timer.
//!
//! Counts are packets, as everywhere in this crate; a packet's "end_seq" is its sequence
//! number. The send times come from [`DeliveryTracker`], which keeps the last transmission of
//! every outstanding packet.

use core::time::Duration;
use std::collections::{BTreeSet, VecDeque};

use tfrc_proto::Instant;

use crate::delivery::{DeliveryTracker, Transmission};

/// RACK's per-connection state (RFC 8985 §5.2) and the packets it marked lost.
#[derive(Clone, Debug)]
pub(crate) struct Rack {
    /// `RACK.xmit_ts` and `RACK.end_seq`: the last transmission time and the sequence number of
    /// the most recently sent packet delivered so far.
    newest: Option<(Instant, u64)>,
    /// `RACK.rtt`: "the RTT of the most recently delivered segment on the connection (either
    /// cumulatively acknowledged or selectively acknowledged) that was not marked as invalid".
    rtt: Duration,
    /// `RACK.fack`: one past the highest packet delivered so far.
    fack: u64,
    /// `RACK.reordering_seen`: a packet was delivered out of order.
    reordering_seen: bool,
    /// Every transmission in the order it left (Linux `tsorted_sent_queue`): (time, sequence).
    /// Entries of packets since delivered, marked lost or sent again are stale and skipped;
    /// they are dropped from the front as the scan meets them, and the whole queue is
    /// compacted when stale entries outnumber the live ones.
    sent_order: VecDeque<(Instant, u64)>,
    /// `Segment.lost`: packets marked lost and not sent again since.
    lost: BTreeSet<u64>,
    /// The most recently sent packet this ACK delivered that passes RFC 8985 §6.2 step 2.
    candidate: Option<(Instant, u64)>,
    /// Highest packet this ACK delivered (RACK.fack moves at the end of the ACK).
    ack_fack: u64,
    /// `RACK.xmit_ts` moved since the last loss detection (Linux `rack.advanced`).
    advanced: bool,
    /// When the reordering timer fires (RFC 8985 §6.2 step 5), if armed.
    reorder_deadline: Option<Instant>,
}

/// `RACK_sent_after(t1, seq1, t2, seq2)` (RFC 8985 §6.2): "If t1 > t2 ... return true; Else if
/// t1 == t2 AND seq1 > seq2 ... return true".
fn sent_after(first: (Instant, u64), second: (Instant, u64)) -> bool {
    first.0 > second.0 || (first.0 == second.0 && first.1 > second.1)
}

impl Rack {
    pub(crate) fn new() -> Self {
        Self {
            newest: None,
            rtt: Duration::ZERO,
            fack: 0,
            reordering_seen: false,
            sent_order: VecDeque::new(),
            lost: BTreeSet::new(),
            candidate: None,
            ack_fack: 0,
            advanced: false,
            reorder_deadline: None,
        }
    }

    /// RFC 8985 §6.1: "Upon transmitting a new segment or retransmitting an old segment, record
    /// the time in Segment.xmit_ts and set Segment.lost to FALSE." (The time itself is in the
    /// [`DeliveryTracker`].)
    pub(crate) fn on_sent(&mut self, now: Instant, sequence: u64) {
        self.sent_order.push_back((now, sequence));
        self.lost.remove(&sequence);
    }

    /// One packet newly delivered (cumulatively or by SACK) by the ACK being processed.
    ///
    /// RFC 8985 §6.2 step 2: "To avoid spurious inferences, ignore a segment as invalid if any
    /// of its sequence range has been retransmitted before and if either of two conditions is
    /// true: 1. The Timestamp Echo Reply field (TSecr) of the ACK's timestamp option [RFC7323],
    /// if available, indicates the ACK was not acknowledging the last retransmission of the
    /// segment. 2. The segment was last retransmitted less than RACK.min_rtt ago." (No
    /// timestamps here: condition 2 only, as Linux `tcp_rack_advance`.)
    ///
    /// Step 3: "If a never-retransmitted segment that's below RACK.fack is (selectively or
    /// cumulatively) acknowledged, it has been delivered out of order. The sender sets
    /// RACK.reordering_seen to TRUE if such a segment is identified." (RACK.fack as it was
    /// before this ACK, as Linux compares with the highest SACK before the ACK.)
    pub(crate) fn on_delivered(
        &mut self,
        now: Instant,
        sequence: u64,
        transmission: Transmission,
        min_rtt: Option<Duration>,
    ) {
        self.lost.remove(&sequence);
        if !transmission.retransmitted && sequence + 1 < self.fack {
            self.reordering_seen = true;
        }
        self.ack_fack = self.ack_fack.max(sequence + 1);
        let rtt = now.saturating_duration_since(transmission.sent_at);
        if transmission.retransmitted && min_rtt.is_some_and(|min| rtt < min) {
            return;
        }
        let this = (transmission.sent_at, sequence);
        if self
            .candidate
            .is_none_or(|candidate| sent_after(this, candidate))
        {
            self.candidate = Some(this);
        }
    }

    /// Ends the ACK's step 2: "Among all the segments newly ACKed or SACKed by this ACK that
    /// pass the checks above, update the RACK.rtt to be the RTT sample calculated using this
    /// ACK. Furthermore, record the most recent Segment.xmit_ts in RACK.xmit_ts if it is ahead
    /// of RACK.xmit_ts." The RTT sample is that of the most recently sent valid packet.
    pub(crate) fn finish_ack(&mut self, now: Instant) {
        self.fack = self.fack.max(self.ack_fack);
        let Some(candidate) = self.candidate.take() else {
            return;
        };
        self.rtt = now.saturating_duration_since(candidate.0);
        self.advanced = true;
        if self
            .newest
            .is_none_or(|newest| sent_after(candidate, newest))
        {
            self.newest = Some(candidate);
        }
    }

    /// `RACK.reo_wnd` (RFC 8985 §6.2 step 4, `RACK_update_reo_wnd` without DSACK, which the
    /// sinks here never send, so `RACK.reo_wnd_mult` stays 1): "If RACK.reordering_seen is
    /// FALSE: If in Fast or RTO recovery: Return 0; Else if RACK.segs_sacked >= DupThresh:
    /// Return 0 ... Return min(RACK.reo_wnd_mult * RACK.min_RTT / 4, SRTT)". Linux
    /// `tcp_rack_reo_wnd` is the same (`tp->sacked_out >= tp->reordering`, 3). Without an RTT
    /// estimate the window is zero (§3.3.2: "or zero if no round-trip time estimate is
    /// available").
    pub(crate) fn reordering_window(
        &self,
        in_recovery: bool,
        sacked: u64,
        duplicate_threshold: u64,
        min_rtt: Option<Duration>,
        smoothed_rtt: Option<Duration>,
    ) -> Duration {
        if !self.reordering_seen && (in_recovery || sacked >= duplicate_threshold) {
            return Duration::ZERO;
        }
        match (min_rtt, smoothed_rtt) {
            (Some(min), Some(smoothed)) => (min / 4).min(smoothed),
            _ => Duration::ZERO,
        }
    }

    /// Whether an entry of `sent_order` stands for a packet still in flight: outstanding, not
    /// delivered, not marked lost, and this is its last transmission.
    fn in_flight(
        &self,
        entry: (Instant, u64),
        tracker: &DeliveryTracker,
        unacknowledged: u64,
    ) -> bool {
        let (sent_at, sequence) = entry;
        sequence >= unacknowledged
            && !self.lost.contains(&sequence)
            && tracker
                .transmission(sequence)
                .is_some_and(|last| !last.delivered && last.sent_at == sent_at)
    }

    /// `RACK_detect_loss()` (RFC 8985 §6.2 step 5), when `RACK.xmit_ts` moved since the last
    /// call (Linux `tcp_rack_mark_lost`): "For each segment, Segment, not acknowledged yet: If
    /// RACK_sent_after(RACK.xmit_ts, RACK.end_seq, Segment.xmit_ts, Segment.end_seq):
    /// remaining = Segment.xmit_ts + RACK.rtt + RACK.reo_wnd - Now(); If remaining <= 0:
    /// Segment.lost = TRUE ... Else: timeout = max(remaining, timeout)", and "If timeout != 0:
    /// Arm the RACK timer to call RACK_detect_loss() after timeout".
    ///
    /// Returns how many packets it marked lost.
    pub(crate) fn detect_loss(
        &mut self,
        now: Instant,
        reordering_window: Duration,
        tracker: &DeliveryTracker,
        unacknowledged: u64,
    ) -> u64 {
        if !core::mem::take(&mut self.advanced) {
            return 0;
        }
        self.scan(now, reordering_window, tracker, unacknowledged)
    }

    /// The reordering timer fired: RFC 8985 §6.2 step 5, "RACK_detect_loss_and_arm_timer()"
    /// again (Linux `tcp_rack_reo_timeout`). Returns how many packets it marked lost.
    pub(crate) fn on_reorder_timeout(
        &mut self,
        now: Instant,
        reordering_window: Duration,
        tracker: &DeliveryTracker,
        unacknowledged: u64,
    ) -> u64 {
        self.advanced = false;
        self.scan(now, reordering_window, tracker, unacknowledged)
    }

    fn scan(
        &mut self,
        now: Instant,
        reordering_window: Duration,
        tracker: &DeliveryTracker,
        unacknowledged: u64,
    ) -> u64 {
        self.reorder_deadline = None;
        let Some(newest) = self.newest else {
            return 0;
        };
        let mut marked = 0;
        let mut index = 0;
        let mut live = 0;
        while index < self.sent_order.len() {
            let entry = self.sent_order[index];
            if !self.in_flight(entry, tracker, unacknowledged) {
                if index == 0 {
                    self.sent_order.pop_front();
                } else {
                    index += 1;
                }
                continue;
            }
            // Sent in order: nothing after this entry was sent before RACK.xmit_ts either.
            if !sent_after(newest, entry) {
                break;
            }
            let deadline = entry.0 + self.rtt + reordering_window;
            if deadline <= now {
                self.lost.insert(entry.1);
                marked += 1;
                if index == 0 {
                    self.sent_order.pop_front();
                    continue;
                }
            } else {
                live += 1;
                self.reorder_deadline = Some(
                    self.reorder_deadline
                        .map_or(deadline, |armed| armed.max(deadline)),
                );
            }
            index += 1;
        }
        // Stale entries left behind a waiting packet are dropped once they are most of the
        // queue, so the scan stays proportional to the packets in flight.
        if index > 2 * live + 64 {
            let mut kept = VecDeque::with_capacity(self.sent_order.len());
            for &entry in &self.sent_order {
                if self.in_flight(entry, tracker, unacknowledged) {
                    kept.push_back(entry);
                }
            }
            self.sent_order = kept;
        }
        marked
    }

    /// RFC 8985 §6.3, `RACK_mark_losses_on_RTO()`: "For each segment, Segment, not
    /// acknowledged yet: If SEG.seq == SND.UNA OR Segment.xmit_ts + RACK.rtt + RACK.reo_wnd -
    /// Now() <= 0: Segment.lost = TRUE" (Linux `tcp_timeout_mark_lost`, which keeps the SACKed
    /// packets as delivered).
    pub(crate) fn on_retransmission_timeout(
        &mut self,
        now: Instant,
        reordering_window: Duration,
        tracker: &DeliveryTracker,
        unacknowledged: u64,
    ) {
        self.reorder_deadline = None;
        self.advanced = false;
        let mut kept = VecDeque::with_capacity(self.sent_order.len());
        let entries = core::mem::take(&mut self.sent_order);
        for entry in entries {
            if !self.in_flight(entry, tracker, unacknowledged) {
                continue;
            }
            if entry.1 == unacknowledged || entry.0 + self.rtt + reordering_window <= now {
                self.lost.insert(entry.1);
            } else {
                kept.push_back(entry);
            }
        }
        self.sent_order = kept;
    }

    /// The cumulative ACK reached `acknowledged_up_to`.
    pub(crate) fn release_below(&mut self, acknowledged_up_to: u64) {
        self.lost = self.lost.split_off(&acknowledged_up_to);
    }

    /// Packets marked lost and not sent again (Linux `lost_out - retrans_out` of the lost).
    pub(crate) fn lost_count(&self) -> u64 {
        self.lost.len() as u64
    }

    /// The lowest packet marked lost and not sent again: what to retransmit next (Linux
    /// `tcp_xmit_retransmit_queue` walks the lost packets in sequence order).
    pub(crate) fn first_lost(&self) -> Option<u64> {
        self.lost.first().copied()
    }

    /// Whether `sequence` is marked lost and not sent again.
    pub(crate) fn is_lost(&self, sequence: u64) -> bool {
        self.lost.contains(&sequence)
    }

    /// When the reordering timer fires, if armed.
    pub(crate) fn reorder_deadline(&self) -> Option<Instant> {
        self.reorder_deadline
    }

    pub(crate) fn cancel_reorder_timer(&mut self) {
        self.reorder_deadline = None;
    }

    /// `RACK.reordering_seen`.
    #[cfg(test)]
    pub(crate) fn reordering_seen(&self) -> bool {
        self.reordering_seen
    }
}

/// The tail loss probe's state (RFC 8985 §7: `TLP.end_seq`, `TLP.is_retrans`) and its timer.
#[derive(Clone, Debug, Default)]
pub(crate) struct TailLossProbe {
    /// When the probe timeout (PTO) fires, if armed.
    pub(crate) deadline: Option<Instant>,
    /// A probe decided by the PTO and not yet handed out: its sequence number and whether it
    /// is a retransmission.
    pub(crate) pending: Option<(u64, bool)>,
    /// `TLP.end_seq` (one past the highest packet sent when the probe left) and
    /// `TLP.is_retrans` of the probe in flight.
    pub(crate) in_flight: Option<(u64, bool)>,
    /// An RTT sample was taken since the last probe (RFC 8985 §7.3 condition 2).
    pub(crate) rtt_sampled: bool,
}
