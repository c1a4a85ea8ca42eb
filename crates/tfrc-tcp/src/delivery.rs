//! Per-packet send records, the delivery-rate samples BBR reads and the per-ACK RTT samples
//! CUBIC and BBR read (draft-cheng-iccrg-delivery-rate-estimation-00, as Linux's
//! `tcp_rate.c` implements it).
//!
//! The draft: "each time a packet is transmitted, the sender records the amount of data
//! delivered so far, the time of the latest delivery, and the start of the current send
//! interval; when the packet is (S)ACKed, the sender computes the delivery rate over the
//! interval between the two" — `delivered / max(send_elapsed, ack_elapsed)`.
//!
//! Counts are packets, as everywhere in this crate. Records live in a ring indexed by sequence
//! number from the lowest unacknowledged packet, so the memory is the window's, not the
//! connection's.

use core::time::Duration;
use std::collections::VecDeque;

use tfrc_proto::Instant;

/// What the sender knew when it last sent one packet (the draft's `P.*`).
#[derive(Clone, Copy, Debug)]
struct PacketRecord {
    /// When it was (last) sent.
    sent_at: Instant,
    /// `P.delivered`: packets delivered when it was sent.
    delivered: u64,
    /// `P.delivered_time`: when the last of those was delivered.
    delivered_time: Instant,
    /// `P.first_sent_time`: when the first packet of the send interval it belongs to was sent.
    first_sent_time: Instant,
    /// `P.is_app_limited`: the application had nothing more to send when it left.
    app_limited: bool,
    /// Sent more than once: no RTT sample from its ACK (Karn's algorithm).
    retransmitted: bool,
    /// Already counted as delivered (SACKed or acknowledged).
    acknowledged: bool,
}

/// A packet's last transmission, as RACK (RFC 8985 §6.1) needs it: "Segment.xmit_ts" and
/// "Segment.retransmitted".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Transmission {
    /// When it was last sent.
    pub(crate) sent_at: Instant,
    /// Sent more than once.
    pub(crate) retransmitted: bool,
    /// Delivered (SACKed or cumulatively acknowledged).
    pub(crate) delivered: bool,
}

/// One ACK's rate sample (the draft's `rs.*`), valid only when the ACK delivered something
/// and its interval is at least the minimum RTT.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RateSample {
    /// Packets delivered over the interval (`rs.delivered`).
    pub(crate) delivered: u64,
    /// `max(send_elapsed, ack_elapsed)` (`rs.interval`).
    pub(crate) interval: Duration,
    /// `rs.prior_delivered`: the delivered count when the newest acknowledged packet left; BBR
    /// counts round trips with it.
    pub(crate) prior_delivered: u64,
    /// Whether the newest acknowledged packet left while the application was idle.
    pub(crate) app_limited: bool,
}

impl RateSample {
    /// Packets per second.
    pub(crate) fn rate(&self) -> f64 {
        self.delivered as f64 / self.interval.as_secs_f64()
    }
}

/// What one ACK delivered: packets, a rate sample, an RTT sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct AckDelivery {
    /// Packets newly delivered, cumulatively or by SACK (Linux `acked_sacked`).
    pub(crate) packets: u64,
    /// The rate sample, when valid.
    pub(crate) rate: Option<RateSample>,
    /// RTT of the most recently sent packet newly delivered and sent once (Linux `ca_rtt_us`).
    pub(crate) rtt: Option<Duration>,
}

/// The sender's delivery bookkeeping (the draft's `C.*` and every outstanding packet's `P.*`).
#[derive(Clone, Debug)]
pub(crate) struct DeliveryTracker {
    /// Records of packets `base..base + records.len()`.
    records: VecDeque<PacketRecord>,
    base: u64,
    /// `C.delivered`: packets delivered so far.
    delivered: u64,
    /// `C.delivered_time`.
    delivered_time: Instant,
    /// `C.first_sent_time`.
    first_sent_time: Instant,
    /// `C.app_limited`: nonzero while the send interval is application-limited; the delivered
    /// count beyond which it ends.
    app_limited_until: u64,
    /// The smallest RTT sample seen (Linux `tcp_min_rtt`): shorter rate intervals are refused.
    min_rtt: Option<Duration>,
    /// The sample being built for the current ACK.
    pending: Option<Pending>,
}

/// The newest packet an ACK delivered so far, while the ACK is being processed.
#[derive(Clone, Copy, Debug)]
struct Pending {
    prior_delivered: u64,
    prior_time: Instant,
    app_limited: bool,
    send_elapsed: Duration,
    newest_sent: Instant,
    packets: u64,
    rtt: Option<Duration>,
    rtt_sent: Option<Instant>,
    /// The RTT the minimum-RTT filter takes from this ACK: the sample, unless replaced.
    filter_rtt: Option<Duration>,
}

impl DeliveryTracker {
    pub(crate) fn new() -> Self {
        Self {
            records: VecDeque::new(),
            base: 0,
            delivered: 0,
            delivered_time: Instant::ZERO,
            first_sent_time: Instant::ZERO,
            app_limited_until: 0,
            min_rtt: None,
            pending: None,
        }
    }

    /// Packets delivered so far (`C.delivered`).
    pub(crate) fn delivered(&self) -> u64 {
        self.delivered
    }

    /// When the last delivery happened (`C.delivered_time`, Linux `delivered_mstamp`).
    pub(crate) fn delivered_time(&self) -> Instant {
        self.delivered_time
    }

    /// The smallest RTT sample so far (Linux `tcp_min_rtt`, whose 5-minute window outlasts
    /// every simulated run here).
    pub(crate) fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// What is known of packet `sequence`'s last transmission: when it left, whether it was
    /// sent more than once, and whether it was delivered (SACKed or acknowledged). `None`
    /// for a packet without a record (acknowledged and released, or never sent).
    pub(crate) fn transmission(&self, sequence: u64) -> Option<Transmission> {
        let record = self
            .records
            .get(sequence.checked_sub(self.base)? as usize)?;
        Some(Transmission {
            sent_at: record.sent_at,
            retransmitted: record.retransmitted,
            delivered: record.acknowledged,
        })
    }

    /// Records packet `sequence` leaving at `now` with `in_flight` packets already in flight
    /// (the draft's `OnPacketSent`: "if (SND.NXT == SND.UNA) C.first_sent_time =
    /// C.delivered_time = Now()").
    pub(crate) fn on_sent(&mut self, now: Instant, sequence: u64, in_flight: u64) {
        if in_flight == 0 {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        if self.records.is_empty() {
            self.base = sequence;
        }
        let record = PacketRecord {
            sent_at: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited_until != 0,
            retransmitted: false,
            acknowledged: false,
        };
        match sequence.checked_sub(self.base) {
            Some(offset) if (offset as usize) < self.records.len() => {
                // A retransmission takes the send state of its new transmission (the draft: the
                // record is written "each time a packet is transmitted"); a packet already
                // delivered (resent by go-back-N after a timeout) stays counted once.
                let slot = &mut self.records[offset as usize];
                *slot = PacketRecord {
                    retransmitted: true,
                    acknowledged: slot.acknowledged,
                    ..record
                };
            }
            Some(offset) => {
                // New data is sent in order; a gap (never expected) is filled with records of
                // packets that count as already delivered.
                while (self.records.len() as u64) < offset {
                    self.records.push_back(PacketRecord {
                        acknowledged: true,
                        ..record
                    });
                }
                self.records.push_back(record);
            }
            None => {}
        }
    }

    /// Marks the send interval application-limited (the draft's `C.app_limited =
    /// (C.delivered + packets_in_flight) ? : 1`).
    pub(crate) fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited_until = (self.delivered + in_flight).max(1);
    }

    /// Packet `sequence` was delivered (acknowledged or SACKed) at `now`; counts it once.
    /// Returns its last transmission when this call delivered it (RACK reads it).
    pub(crate) fn on_delivered(&mut self, now: Instant, sequence: u64) -> Option<Transmission> {
        let offset = sequence.checked_sub(self.base)?;
        let record = self.records.get_mut(offset as usize)?;
        if record.acknowledged {
            return None;
        }
        record.acknowledged = true;
        let record = *record;
        self.delivered += 1;
        self.delivered_time = now;
        let pending = self.pending.get_or_insert(Pending {
            prior_delivered: record.delivered,
            prior_time: record.delivered_time,
            app_limited: record.app_limited,
            send_elapsed: Duration::ZERO,
            newest_sent: record.sent_at,
            packets: 0,
            rtt: None,
            rtt_sent: None,
            filter_rtt: None,
        });
        pending.packets += 1;
        // The draft's UpdateRateSample: the most recently sent packet defines the interval.
        if record.sent_at >= pending.newest_sent {
            pending.prior_delivered = record.delivered;
            pending.prior_time = record.delivered_time;
            pending.app_limited = record.app_limited;
            pending.send_elapsed = record
                .sent_at
                .saturating_duration_since(record.first_sent_time);
            pending.newest_sent = record.sent_at;
            self.first_sent_time = record.sent_at;
        }
        if !record.retransmitted && pending.rtt_sent.is_none_or(|sent| record.sent_at >= sent) {
            pending.rtt = Some(now.saturating_duration_since(record.sent_at));
            pending.rtt_sent = Some(record.sent_at);
            pending.filter_rtt = pending.rtt;
        }
        Some(Transmission {
            sent_at: record.sent_at,
            retransmitted: record.retransmitted,
            delivered: true,
        })
    }

    /// The current ACK's RTT sample is `rtt` if its packets gave none (all were
    /// retransmitted): the sample Linux takes from the timestamp option, which then stands for
    /// `ca_rtt_us` and `rs->rtt_us` too ("seq_rtt_us = ca_rtt_us = tcp_rtt_tsopt_us(tp)") and
    /// reaches `tcp_update_rtt_min` before `tcp_rate_gen` judges the rate sample.
    pub(crate) fn offer_timestamp_rtt(&mut self, rtt: Duration) {
        if let Some(pending) = &mut self.pending {
            if pending.rtt.is_none() {
                pending.rtt = Some(rtt);
                pending.filter_rtt = Some(rtt);
            }
        }
    }

    /// The current ACK's RTT sample so far (its packets', or the timestamp's).
    pub(crate) fn pending_rtt(&self) -> Option<Duration> {
        self.pending.and_then(|pending| pending.rtt)
    }

    /// Replaces the current ACK's RTT sample with `sample` and the RTT its minimum-RTT filter
    /// takes with `filter_rtt` (ns-3's sampling, [`crate::SenderConfig::cumulative_rtt_samples`];
    /// its rate samples judged against the smallest smoothed RTT, "m_tcb->m_minRtt",
    /// [`crate::SenderConfig::smoothed_rtt_to_congestion_control`]).
    pub(crate) fn replace_rtt(&mut self, sample: Option<Duration>, filter_rtt: Option<Duration>) {
        if let Some(pending) = &mut self.pending {
            pending.rtt = sample;
            pending.filter_rtt = filter_rtt;
        }
    }

    /// Ends the current ACK: its packets, rate sample and RTT sample (the draft's
    /// `GenerateRateSample`).
    pub(crate) fn finish_ack(&mut self) -> AckDelivery {
        // "if (C.app_limited and C.delivered > C.app_limited) C.app_limited = 0"
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let Some(pending) = self.pending.take() else {
            return AckDelivery::default();
        };
        if let Some(rtt) = pending.filter_rtt {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |min| min.min(rtt)));
        }
        let ack_elapsed = self
            .delivered_time
            .saturating_duration_since(pending.prior_time);
        let interval = pending.send_elapsed.max(ack_elapsed);
        let delivered = self.delivered - pending.prior_delivered;
        // Linux tcp_rate_gen: "Normally we expect interval_us >= min-rtt. Note that rate may
        // still be over-estimated when a spuriously retransmitted skb was first (s)acked because
        // "interval_us" is under-estimated (up to an RTT)." Shorter intervals give no sample.
        let valid = !interval.is_zero() && self.min_rtt.is_none_or(|min| interval >= min);
        AckDelivery {
            packets: pending.packets,
            rate: valid.then_some(RateSample {
                delivered,
                interval,
                prior_delivered: pending.prior_delivered,
                app_limited: pending.app_limited,
            }),
            rtt: pending.rtt,
        }
    }

    /// Forgets the records of packets below `acknowledged_up_to` (call after delivering them).
    pub(crate) fn release_below(&mut self, acknowledged_up_to: u64) {
        while self.base < acknowledged_up_to && !self.records.is_empty() {
            self.records.pop_front();
            self.base += 1;
        }
        if self.records.is_empty() {
            self.base = self.base.max(acknowledged_up_to);
        }
    }

    /// Whether packet `sequence` was counted as delivered.
    #[cfg(test)]
    pub(crate) fn is_delivered(&self, sequence: u64) -> bool {
        sequence
            .checked_sub(self.base)
            .and_then(|offset| self.records.get(offset as usize))
            .is_some_and(|record| record.acknowledged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(millis: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(millis)
    }

    #[test]
    fn rate_is_delivered_over_the_longer_of_send_and_ack_intervals() {
        let mut tracker = DeliveryTracker::new();
        // Ten packets leave 1 ms apart from an empty pipe.
        for sequence in 0..10 {
            tracker.on_sent(at(sequence), sequence, sequence);
        }
        // Their ACKs come back 100 ms later, 1 ms apart.
        let mut last = AckDelivery::default();
        for sequence in 0..10 {
            tracker.on_delivered(at(100 + sequence), sequence);
            last = tracker.finish_ack();
        }
        assert_eq!(tracker.delivered(), 10);
        assert_eq!(last.packets, 1);
        assert_eq!(last.rtt, Some(Duration::from_millis(100)));
        // The 10th packet: send interval 9 ms (first sent at 0), ACK interval from the
        // delivered time when it left (0, the pipe was empty) to 109 ms.
        let rate = last.rate.expect("valid");
        assert_eq!(rate.delivered, 10);
        assert_eq!(rate.interval, Duration::from_millis(109));
        assert!(!rate.app_limited);
    }

    #[test]
    fn a_retransmitted_packet_gives_no_rtt_sample_and_counts_once() {
        let mut tracker = DeliveryTracker::new();
        tracker.on_sent(at(0), 0, 0);
        tracker.on_sent(at(0), 1, 1);
        tracker.on_sent(at(300), 0, 1); // retransmission of 0
        tracker.on_delivered(at(350), 0);
        tracker.on_delivered(at(350), 0);
        let ack = tracker.finish_ack();
        assert_eq!(ack.packets, 1);
        assert_eq!(ack.rtt, None);
        assert!(tracker.is_delivered(0));
        assert!(!tracker.is_delivered(1));
        tracker.release_below(1);
        assert!(!tracker.is_delivered(0));
    }

    #[test]
    fn a_delivered_packet_sent_again_is_not_delivered_twice() {
        let mut tracker = DeliveryTracker::new();
        tracker.on_sent(at(0), 0, 0);
        tracker.on_sent(at(0), 1, 1);
        tracker.on_delivered(at(100), 1); // SACKed
        let _ = tracker.finish_ack();
        // A timeout resends both (go-back-N); the ACK for both counts only packet 0.
        tracker.on_sent(at(1000), 0, 0);
        tracker.on_sent(at(1000), 1, 1);
        tracker.on_delivered(at(1100), 0);
        tracker.on_delivered(at(1100), 1);
        assert_eq!(tracker.finish_ack().packets, 1);
        assert_eq!(tracker.delivered(), 2);
    }

    #[test]
    fn the_minimum_rtt_is_tracked_and_an_ack_delivering_nothing_is_no_sample() {
        let mut tracker = DeliveryTracker::new();
        tracker.on_sent(at(0), 0, 0);
        tracker.on_delivered(at(100), 0);
        assert!(tracker.finish_ack().rate.is_some());
        assert_eq!(tracker.min_rtt(), Some(Duration::from_millis(100)));
        tracker.on_sent(at(100), 1, 0);
        tracker.on_delivered(at(150), 1);
        let ack = tracker.finish_ack();
        assert_eq!(ack.rtt, Some(Duration::from_millis(50)));
        assert_eq!(tracker.min_rtt(), Some(Duration::from_millis(50)));
        // A duplicate ACK delivers nothing: no packets, no rate, no RTT.
        tracker.on_delivered(at(160), 1);
        assert_eq!(tracker.finish_ack(), AckDelivery::default());
    }

    #[test]
    fn app_limited_marks_last_until_the_marked_data_is_delivered() {
        let mut tracker = DeliveryTracker::new();
        // The draft: "C.app_limited = (C.delivered + packets_in_flight) ? : 1", cleared once
        // C.delivered exceeds it.
        tracker.mark_app_limited(0);
        tracker.on_sent(at(0), 0, 0);
        tracker.on_delivered(at(10), 0);
        assert!(tracker.finish_ack().rate.unwrap().app_limited);
        tracker.on_sent(at(10), 1, 0);
        tracker.on_delivered(at(20), 1);
        assert!(tracker.finish_ack().rate.unwrap().app_limited);
        tracker.on_sent(at(20), 2, 0);
        tracker.on_delivered(at(30), 2);
        assert!(!tracker.finish_ack().rate.unwrap().app_limited);
    }
}
