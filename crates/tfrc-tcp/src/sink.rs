//! The TCP sink: cumulative ACKs, optional SACK blocks and delayed ACKs, in-order delivery
//! counting.

use std::collections::{BTreeMap, VecDeque};

use tfrc_proto::Instant;
use thiserror::Error;

use crate::config::{ConfigError, SinkConfig};
use crate::ranges::SequenceRanges;
use crate::segment::{Ack, SackBlock, Segment, MAX_SACK_BLOCKS};

/// Out-of-order arrivals remembered to order SACK blocks (one per block); more than enough for
/// the four blocks an ACK can carry.
const RECENT_ARRIVALS: usize = 16;

/// A segment the sink refused; its state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SegmentError {
    /// The segment lies beyond the sink's buffer (`out_of_order_limit` packets past the next
    /// expected one).
    #[error("segment {sequence} is beyond the receive buffer (next expected {next_expected}, limit {limit} packets)")]
    BeyondReceiveBuffer {
        /// The segment's sequence number.
        sequence: u64,
        /// The sink's next expected sequence number.
        next_expected: u64,
        /// The configured `out_of_order_limit`.
        limit: u64,
    },
}

/// Counters for logging and goodput.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SinkStats {
    /// Segments accepted by [`TcpSink::handle_segment`] (duplicates included).
    pub segments_received: u64,
    /// Segments that had already arrived.
    pub duplicate_segments: u64,
    /// Segments that arrived above a hole.
    pub out_of_order_segments: u64,
    /// Segments refused (beyond the receive buffer).
    pub rejected_segments: u64,
    /// Segments delivered in order to the application.
    pub delivered_segments: u64,
    /// Payload bytes delivered in order: the goodput numerator.
    pub delivered_bytes: u64,
    /// ACKs generated.
    pub acks_sent: u64,
}

/// A TCP sink modelled on ns-2's `Agent/TCPSink` (and its `Sack1` and `DelAck` flavours):
/// acknowledges packet sequence numbers, buffers out-of-order packets and counts what it
/// delivers in order.
///
/// # Call order
/// 1. Give every arriving data segment to [`handle_segment`].
/// 2. After every `handle_*` call, call [`poll_ack`] until it returns `None` and send each ACK
///    back to the sender (one ACK per triggering segment, in order).
/// 3. With delayed ACKs, call [`handle_timeout`] when [`poll_timeout`] is reached; an early
///    call does nothing.
///
/// [`handle_segment`]: TcpSink::handle_segment
/// [`poll_ack`]: TcpSink::poll_ack
/// [`handle_timeout`]: TcpSink::handle_timeout
/// [`poll_timeout`]: TcpSink::poll_timeout
#[derive(Clone, Debug)]
pub struct TcpSink {
    config: SinkConfig,
    /// Every packet below this has arrived (RCV.NXT).
    next_expected: u64,
    /// Payload bytes of packets held above a hole, by sequence number.
    out_of_order: BTreeMap<u64, u32>,
    /// The same packets as ranges, for SACK blocks.
    out_of_order_ranges: SequenceRanges,
    /// Out-of-order arrivals, most recent first: each stands for the block holding it.
    recent_arrivals: VecDeque<u64>,
    pending_acks: VecDeque<Ack>,
    /// In-order segments not yet acknowledged (delayed ACKs).
    unacknowledged_segments: u32,
    delayed_ack_deadline: Option<Instant>,
    /// RFC 7323 §4.3 (1): "TS.Recent holds a timestamp to be echoed in TSecr whenever a segment
    /// is sent"; none before the first segment.
    ts_recent: Option<Instant>,
    /// RFC 7323 §4.3 (1): "Last.ACK.sent holds the ACK field from the last segment sent".
    last_ack_sent: u64,
    stats: SinkStats,
}

impl TcpSink {
    /// A sink expecting packet 0.
    pub fn new(config: SinkConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            config,
            next_expected: 0,
            out_of_order: BTreeMap::new(),
            out_of_order_ranges: SequenceRanges::new(),
            recent_arrivals: VecDeque::new(),
            pending_acks: VecDeque::new(),
            unacknowledged_segments: 0,
            delayed_ack_deadline: None,
            ts_recent: None,
            last_ack_sent: 0,
            stats: SinkStats::default(),
        })
    }

    /// Processes a data segment arriving at `now`.
    ///
    /// RFC 5681 §4.2: out-of-order segments, duplicates and segments that fill a hole are
    /// acknowledged at once; with delayed ACKs, other segments are acknowledged every second
    /// one or when the delayed-ACK timer fires.
    pub fn handle_segment(&mut self, now: Instant, segment: &Segment) -> Result<(), SegmentError> {
        let sequence = segment.sequence;
        let limit = self.config.out_of_order_limit;
        if sequence >= self.next_expected.saturating_add(limit) {
            self.stats.rejected_segments += 1;
            return Err(SegmentError::BeyondReceiveBuffer {
                sequence,
                next_expected: self.next_expected,
                limit,
            });
        }
        self.stats.segments_received += 1;
        // RFC 7323 §4.3 (2): "If: SEG.TSval >= TS.Recent and SEG.SEQ <= Last.ACK.sent then
        // SEG.TSval is copied to TS.Recent; otherwise, it is ignored." So the echo is the
        // earliest segment a delayed ACK covers, and, when a retransmission fills a hole, the
        // retransmission's (Linux `tcp_replace_ts_recent`: `!after(seq, tp->rcv_wup)`).
        if sequence <= self.last_ack_sent
            && self
                .ts_recent
                .is_none_or(|recent| segment.timestamp >= recent)
        {
            self.ts_recent = Some(segment.timestamp);
        }
        if sequence < self.next_expected || self.out_of_order.contains_key(&sequence) {
            self.stats.duplicate_segments += 1;
            self.acknowledge_now();
            return Ok(());
        }
        if sequence > self.next_expected {
            self.stats.out_of_order_segments += 1;
            self.out_of_order.insert(sequence, segment.payload_bytes);
            self.out_of_order_ranges.insert(sequence, sequence + 1);
            self.remember_arrival(sequence);
            self.acknowledge_now();
            return Ok(());
        }
        // In order: deliver it and whatever it uncovers.
        let filled_hole = !self.out_of_order.is_empty();
        self.deliver(segment.payload_bytes);
        while let Some(bytes) = self.out_of_order.remove(&self.next_expected) {
            self.deliver(bytes);
        }
        if filled_hole {
            self.out_of_order_ranges.remove_below(self.next_expected);
            let next_expected = self.next_expected;
            self.recent_arrivals
                .retain(|&arrival| arrival >= next_expected);
        }
        if filled_hole || segment.syn || !self.config.delayed_ack {
            self.acknowledge_now();
        } else {
            self.unacknowledged_segments += 1;
            if self.unacknowledged_segments >= 2 {
                self.acknowledge_now();
            } else if self.delayed_ack_deadline.is_none() {
                self.delayed_ack_deadline = Some(now + self.config.delayed_ack_timeout);
            }
        }
        Ok(())
    }

    /// The next ACK to send, oldest first.
    #[must_use]
    pub fn poll_ack(&mut self) -> Option<Ack> {
        self.pending_acks.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called: the delayed-ACK timer.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.delayed_ack_deadline
    }

    /// Sends the delayed ACK if its timer has expired at `now`; earlier calls do nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self
            .delayed_ack_deadline
            .is_some_and(|deadline| now >= deadline)
        {
            self.acknowledge_now();
        }
    }

    /// Every packet below this has arrived.
    #[must_use]
    pub fn next_expected(&self) -> u64 {
        self.next_expected
    }

    /// Payload bytes delivered in order so far (goodput numerator).
    #[must_use]
    pub fn delivered_bytes(&self) -> u64 {
        self.stats.delivered_bytes
    }

    /// Counters for logging.
    #[must_use]
    pub fn stats(&self) -> &SinkStats {
        &self.stats
    }

    /// The configuration the sink was built with.
    #[must_use]
    pub fn config(&self) -> &SinkConfig {
        &self.config
    }

    fn deliver(&mut self, bytes: u32) {
        self.next_expected += 1;
        self.stats.delivered_segments += 1;
        self.stats.delivered_bytes += u64::from(bytes);
    }

    /// Puts `sequence` first in the SACK order, dropping arrivals its block now covers.
    fn remember_arrival(&mut self, sequence: u64) {
        if let Some((start, end)) = self.out_of_order_ranges.range_containing(sequence) {
            self.recent_arrivals
                .retain(|&arrival| arrival < start || arrival >= end);
        }
        self.recent_arrivals.push_front(sequence);
        self.recent_arrivals.truncate(RECENT_ARRIVALS);
    }

    /// Queues an ACK for the current state and clears the delayed-ACK state.
    fn acknowledge_now(&mut self) {
        let ack = if self.config.sack {
            Ack::with_sack_blocks(self.next_expected, &self.sack_blocks())
        } else {
            Ack::new(self.next_expected)
        };
        self.pending_acks.push_back(ack.with_echo(self.ts_recent));
        self.last_ack_sent = self.next_expected;
        self.stats.acks_sent += 1;
        self.unacknowledged_segments = 0;
        self.delayed_ack_deadline = None;
    }

    /// RFC 2018 §4: the first block holds the most recent arrival, the others repeat the most
    /// recently reported blocks, without duplicates.
    fn sack_blocks(&self) -> Vec<SackBlock> {
        let wanted = usize::from(self.config.max_sack_blocks).min(MAX_SACK_BLOCKS);
        let mut blocks: Vec<SackBlock> = Vec::with_capacity(wanted);
        for &arrival in &self.recent_arrivals {
            if blocks.len() >= wanted {
                break;
            }
            if let Some((start, end)) = self.out_of_order_ranges.range_containing(arrival) {
                if !blocks.iter().any(|block| block.start == start) {
                    blocks.push(SackBlock::new(start, end));
                }
            }
        }
        blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn segment(sequence: u64) -> Segment {
        Segment {
            sequence,
            payload_bytes: 1000,
            retransmission: false,
            syn: false,
            timestamp: Instant::ZERO,
        }
    }

    fn drain(sink: &mut TcpSink) -> Vec<Ack> {
        core::iter::from_fn(|| sink.poll_ack()).collect()
    }

    fn sent_at(sequence: u64, millis: u64) -> Segment {
        Segment {
            timestamp: Instant::from_millis(millis),
            ..segment(sequence)
        }
    }

    #[test]
    fn the_echo_follows_rfc_7323_ts_recent() {
        let mut config = SinkConfig::for_variant(crate::Variant::Cubic);
        config.delayed_ack = true;
        let mut sink = TcpSink::new(config).unwrap();
        // Feeds (sequence, send time in ms) pairs; returns the ACKs as (cumulative ACK, echo in ms).
        let mut feed = |segments: &[(u64, u64)]| -> Vec<(u64, Option<u64>)> {
            for &(sequence, millis) in segments {
                sink.handle_segment(Instant::ZERO, &sent_at(sequence, millis))
                    .unwrap();
            }
            drain(&mut sink)
                .iter()
                .map(|ack| {
                    let echo = ack.echo().map(|echo| echo.as_nanos() / 1_000_000);
                    (ack.next_expected(), echo)
                })
                .collect()
        };
        // A delayed ACK covering two segments echoes the first: the second's SEG.SEQ (1) is
        // beyond Last.ACK.sent (0), so it does not replace TS.Recent.
        assert_eq!(feed(&[(0, 10), (1, 11)]), vec![(2, Some(10))]);
        // Packet 2 is lost; 3 and 4 arrive out of order and do not replace TS.Recent (SEG.SEQ
        // beyond Last.ACK.sent), so their duplicate ACKs echo packet 0's timestamp still.
        assert_eq!(
            feed(&[(3, 13), (4, 14)]),
            vec![(2, Some(10)), (2, Some(10))]
        );
        // The retransmission of 2 fills the hole: SEG.SEQ = Last.ACK.sent, so its later
        // timestamp is echoed by the ACK that moves past 4.
        assert_eq!(feed(&[(2, 300)]), vec![(5, Some(300))]);
        // An old duplicate with an older timestamp does not move TS.Recent back.
        assert_eq!(feed(&[(0, 10)]), vec![(5, Some(300))]);
    }

    #[test]
    fn cumulative_acks_and_delivery() {
        let mut sink = TcpSink::new(SinkConfig::new()).unwrap();
        let now = Instant::ZERO;
        for sequence in 0..3 {
            sink.handle_segment(now, &segment(sequence)).unwrap();
        }
        let acks = drain(&mut sink);
        let numbers: Vec<u64> = acks.iter().map(Ack::next_expected).collect();
        assert_eq!(numbers, vec![1, 2, 3]);
        assert_eq!(sink.delivered_bytes(), 3000);
        assert!(acks.iter().all(|ack| ack.sack_blocks().is_empty()));
    }

    #[test]
    fn out_of_order_is_buffered_and_delivered_when_the_hole_fills() {
        let mut sink = TcpSink::new(SinkConfig::new()).unwrap();
        let now = Instant::ZERO;
        sink.handle_segment(now, &segment(0)).unwrap();
        sink.handle_segment(now, &segment(2)).unwrap();
        sink.handle_segment(now, &segment(3)).unwrap();
        assert_eq!(sink.delivered_bytes(), 1000);
        sink.handle_segment(now, &segment(1)).unwrap();
        let numbers: Vec<u64> = drain(&mut sink).iter().map(Ack::next_expected).collect();
        // Duplicate ACKs for 1 while the hole is open, then a jump to 4.
        assert_eq!(numbers, vec![1, 1, 1, 4]);
        assert_eq!(sink.delivered_bytes(), 4000);
        assert_eq!(sink.stats().out_of_order_segments, 2);
    }

    #[test]
    fn sack_blocks_most_recent_first_at_most_three() {
        // RFC 2018 §4: the first block reports the segment that triggered the ACK.
        let mut sink = TcpSink::new(SinkConfig::for_variant(crate::Variant::Sack)).unwrap();
        let now = Instant::ZERO;
        for sequence in [2, 4, 6, 8, 5] {
            sink.handle_segment(now, &segment(sequence)).unwrap();
        }
        let acks = drain(&mut sink);
        assert_eq!(acks[0].sack_blocks(), &[SackBlock::new(2, 3)]);
        assert_eq!(
            acks[3].sack_blocks(),
            &[
                SackBlock::new(8, 9),
                SackBlock::new(6, 7),
                SackBlock::new(4, 5)
            ]
        );
        // 5 joins 4 and 6 into one block, reported first; 8 and 2 follow.
        assert_eq!(
            acks[4].sack_blocks(),
            &[
                SackBlock::new(4, 7),
                SackBlock::new(8, 9),
                SackBlock::new(2, 3)
            ]
        );
        assert!(acks.iter().all(|ack| ack.next_expected() == 0));
        // Filling the first hole moves the cumulative ACK and drops the block below it.
        sink.handle_segment(now, &segment(0)).unwrap();
        sink.handle_segment(now, &segment(1)).unwrap();
        let acks = drain(&mut sink);
        assert_eq!(acks[1].next_expected(), 3);
        assert_eq!(
            acks[1].sack_blocks(),
            &[SackBlock::new(4, 7), SackBlock::new(8, 9)]
        );
    }

    #[test]
    fn the_ns3_sink_sends_four_blocks_where_the_default_sends_three() {
        // ns-3.37 `AddOptionSack`: "allowedSackBlocks = (optionLenAvail - 2) / 8", 4 without
        // timestamps; RFC 2018 §3's 3 beside them (ns-2, Linux).
        let last_ack = |config: SinkConfig| {
            let mut sink = TcpSink::new(config).unwrap();
            for sequence in [2, 4, 6, 8, 10] {
                sink.handle_segment(Instant::ZERO, &segment(sequence))
                    .unwrap();
            }
            *drain(&mut sink).last().unwrap()
        };
        let four = last_ack(SinkConfig::ns3(crate::Variant::Cubic));
        assert_eq!(
            four.sack_blocks(),
            &[
                SackBlock::new(10, 11),
                SackBlock::new(8, 9),
                SackBlock::new(6, 7),
                SackBlock::new(4, 5)
            ]
        );
        assert_eq!(four.wire_size(), 40 + 36);
        let three = last_ack(SinkConfig::for_variant(crate::Variant::Cubic));
        assert_eq!(three.sack_blocks(), &four.sack_blocks()[..3]);
        assert_eq!(three.wire_size(), 40 + 28);
    }

    #[test]
    fn duplicates_are_acknowledged_not_delivered_twice() {
        let mut sink = TcpSink::new(SinkConfig::new()).unwrap();
        let now = Instant::ZERO;
        sink.handle_segment(now, &segment(0)).unwrap();
        sink.handle_segment(now, &segment(0)).unwrap();
        sink.handle_segment(now, &segment(3)).unwrap();
        sink.handle_segment(now, &segment(3)).unwrap();
        assert_eq!(drain(&mut sink).len(), 4);
        assert_eq!(sink.delivered_bytes(), 1000);
        assert_eq!(sink.stats().duplicate_segments, 2);
    }

    #[test]
    fn delayed_ack_every_second_segment_or_on_timer() {
        let mut config = SinkConfig::new();
        config.delayed_ack = true;
        let mut sink = TcpSink::new(config).unwrap();
        let start = Instant::from_millis(10);
        sink.handle_segment(start, &segment(0)).unwrap();
        assert!(sink.poll_ack().is_none());
        assert_eq!(
            sink.poll_timeout(),
            Some(start + Duration::from_millis(100))
        );
        sink.handle_segment(start, &segment(1)).unwrap();
        assert_eq!(sink.poll_ack().map(|ack| ack.next_expected()), Some(2));
        assert_eq!(sink.poll_timeout(), None);

        // A lone segment waits for the 100 ms timer (ns-2 DelAck `interval_`).
        sink.handle_segment(start, &segment(2)).unwrap();
        sink.handle_timeout(start + Duration::from_millis(99));
        assert!(sink.poll_ack().is_none());
        sink.handle_timeout(start + Duration::from_millis(100));
        assert_eq!(sink.poll_ack().map(|ack| ack.next_expected()), Some(3));

        // Out of order: immediate duplicate ACK; the segment filling the hole: immediate ACK.
        sink.handle_segment(start, &segment(4)).unwrap();
        assert_eq!(sink.poll_ack().map(|ack| ack.next_expected()), Some(3));
        sink.handle_segment(start, &segment(3)).unwrap();
        assert_eq!(sink.poll_ack().map(|ack| ack.next_expected()), Some(5));
    }

    #[test]
    fn segments_beyond_the_buffer_are_refused() {
        let mut config = SinkConfig::new();
        config.out_of_order_limit = 100;
        let mut sink = TcpSink::new(config).unwrap();
        let result = sink.handle_segment(Instant::ZERO, &segment(100));
        assert!(matches!(
            result,
            Err(SegmentError::BeyondReceiveBuffer { sequence: 100, .. })
        ));
        assert!(sink.poll_ack().is_none());
        assert!(sink
            .handle_segment(Instant::ZERO, &segment(u64::MAX))
            .is_err());
        sink.handle_segment(Instant::ZERO, &segment(99)).unwrap();
        assert_eq!(sink.stats().rejected_segments, 2);
    }

    /// Random arrivals (duplicates, reordering, far-away and absurd sequence numbers) never
    /// panic, and every packet is delivered exactly once, in order.
    #[test]
    fn random_input_never_panics_and_delivers_each_packet_once() {
        use rand_chacha::rand_core::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for delayed_ack in [false, true] {
            let mut config = SinkConfig::for_variant(crate::Variant::Sack);
            config.delayed_ack = delayed_ack;
            config.out_of_order_limit = 1000;
            let mut sink = TcpSink::new(config).unwrap();
            let mut now = Instant::ZERO;
            for _ in 0..50_000 {
                now += Duration::from_micros(rng.next_u64() % 20_000);
                let next = sink.next_expected();
                let sequence = match rng.next_u64() % 10 {
                    0 => rng.next_u64(),
                    1 => next.saturating_sub(rng.next_u64() % 50),
                    _ => next + rng.next_u64() % 40,
                };
                let _ = sink.handle_segment(now, &segment(sequence));
                sink.handle_timeout(now);
                while let Some(ack) = sink.poll_ack() {
                    assert_eq!(ack.next_expected(), sink.next_expected());
                    for block in ack.sack_blocks() {
                        assert!(block.start > sink.next_expected() && block.start < block.end);
                    }
                }
                assert_eq!(sink.delivered_bytes(), sink.next_expected() * 1000);
            }
            assert!(sink.next_expected() > 1000);
        }
    }
}
