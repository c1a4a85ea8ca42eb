//! The receiver side of a [`Connection`]: received packet numbers and the ACKs that report
//! them, the TFRC receiver, reassembly of fragments into messages, ordering domains and their
//! FORWARD points, receiver deadlines (mapped from the sender's clock) and delivery.

use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet};

use tfrc_proto::Instant;

use crate::mechanisms::{self, OrderBuffer};
use crate::wire::{self, FragmentFrame, Frame, Frames, Repr};

use super::{tfrc_packet_size, Connection, Message, ACK_DELAY, ACK_EVERY, REASSEMBLY_LIMIT};

/// Most received packet-number ranges remembered.
const MAX_RECEIVED_RANGES: usize = 256;

/// A message being reassembled.
#[derive(Debug)]
struct Partial {
    /// Its stream.
    stream: u16,
    /// The whole message's buffer, filled piece by piece.
    data: Vec<u8>,
    /// Received pieces: offset to length.
    pieces: BTreeMap<u32, u32>,
    /// Bytes received, duplicates not counted.
    received: u32,
    /// Deadline on the sender's clock, ns (0 = none).
    deadline: u64,
}

/// A reassembled message waiting in its domain's order buffer.
#[derive(Debug)]
struct Complete {
    /// The message.
    message: Message,
    /// Deadline on the sender's clock, ns (0 = none).
    deadline: u64,
}

/// The receiving side of an ordering domain.
#[derive(Debug)]
pub(super) struct DomainIn {
    /// Delivered in order (fixed by the first frame seen for the domain).
    ordered: bool,
    /// Messages being reassembled, by number.
    partials: BTreeMap<u32, Partial>,
    /// Complete messages waiting for their turn, and which numbers are done.
    order: Box<dyn OrderBuffer<Complete>>,
}

/// The domain `domain`, created on first use; `None` if the frame contradicts its ordering.
fn domain_entry(
    domains: &mut BTreeMap<u16, DomainIn>,
    domain: u16,
    ordered: bool,
) -> Option<&mut DomainIn> {
    let entry = domains.entry(domain).or_insert_with(|| DomainIn {
        ordered,
        partials: BTreeMap::new(),
        order: mechanisms::order_buffer(ordered),
    });
    (entry.ordered == ordered).then_some(entry)
}

impl Connection {
    /// Records a received packet number; false for a duplicate. The ranges stay sorted and
    /// merged; only the newest [`MAX_RECEIVED_RANGES`] are remembered.
    fn record_received(&mut self, pn: u64) -> bool {
        let position = self.received.partition_point(|range| range.1 < pn);
        if let Some(range) = self.received.get(position) {
            if range.0 <= pn {
                return false;
            }
        }
        let joins_previous = position > 0 && self.received[position - 1].1 + 1 == pn;
        let joins_next = self
            .received
            .get(position)
            .is_some_and(|range| range.0 == pn + 1);
        match (joins_previous, joins_next) {
            (true, true) => {
                let next_end = self.received[position].1;
                self.received[position - 1].1 = next_end;
                self.received.remove(position);
            }
            (true, false) => self.received[position - 1].1 = pn,
            (false, true) => self.received[position].0 = pn,
            (false, false) => {
                self.received.insert(position, (pn, pn));
                if self.received.len() > MAX_RECEIVED_RANGES {
                    self.received.pop_front();
                }
            }
        }
        true
    }

    /// Maps a deadline on the sender's clock (ns, 0 = none) to this end's clock: plus the
    /// smallest observed offset (arrival - sender timestamp, which includes the one-way delay),
    /// minus half the minimum RTT (the peer's, else this end's) as that delay.
    fn local_deadline(&self, sender_deadline: u64) -> Option<Instant> {
        if sender_deadline == 0 {
            return None;
        }
        let min_rtt = if self.peer_min_rtt.is_zero() {
            self.min_rtt.unwrap_or(Duration::ZERO)
        } else {
            self.peer_min_rtt
        };
        let offset = self.clock_offset.unwrap_or(0) - (min_rtt.as_nanos() / 2) as i128;
        let local = i128::from(sender_deadline) + offset;
        Some(Instant::from_nanos(local.clamp(0, u64::MAX as i128) as u64))
    }

    /// A DATA packet: duplicate detection and ACK scheduling, the peer's minimum RTT and clock
    /// offset, the TFRC receiver of the packet's epoch, then its frames; the domains they
    /// touched deliver what they can.
    pub(super) fn on_data(
        &mut self,
        now: Instant,
        packet_number: u64,
        epoch: u16,
        min_rtt: u32,
        tfrc: &[u8],
    ) {
        if !self.record_received(packet_number) {
            self.stats.duplicates_received += 1;
            self.ack_now = true;
            return;
        }
        self.schedule_ack(now, packet_number);
        if min_rtt > 0 {
            self.peer_min_rtt = Duration::from_micros(u64::from(min_rtt));
        }
        let Ok(inner) = tfrc_proto::wire::Packet::new_checked(tfrc) else {
            return;
        };
        let offset = i128::from(now.as_nanos()) - i128::from(inner.timestamp());
        self.clock_offset = Some(self.clock_offset.map_or(offset, |old| old.min(offset)));
        self.tfrc_receive(now, epoch, tfrc);
        let payload = inner.payload();
        let mut touched = BTreeSet::new();
        for frame in Frames::new(payload) {
            match frame {
                Ok(Frame::Fragment(fragment)) => {
                    touched.insert(fragment.domain);
                    self.on_fragment(now, &fragment);
                }
                Ok(Frame::Forward {
                    domain,
                    ordered,
                    forward,
                }) => {
                    touched.insert(domain);
                    self.on_forward(domain, ordered, forward);
                }
                Err(_) => {
                    self.stats.malformed_received += 1;
                    break;
                }
            }
        }
        for domain in touched {
            self.pump(now, domain);
        }
    }

    /// Notes a new data packet for the acknowledgements: an ACK at once after a gap or every
    /// [`ACK_EVERY`] packets, else within [`ACK_DELAY`].
    fn schedule_ack(&mut self, now: Instant, packet_number: u64) {
        let gap = self
            .largest_received
            .is_some_and(|(largest, _)| packet_number > largest + 1);
        if self
            .largest_received
            .is_none_or(|(largest, _)| packet_number > largest)
        {
            self.largest_received = Some((packet_number, now));
        }
        self.unacked_data_packets += 1;
        if gap || self.unacked_data_packets >= ACK_EVERY {
            self.ack_now = true;
        } else if self.ack_timer.is_none() {
            self.ack_timer = Some(now + ACK_DELAY);
        }
    }

    /// Passes a data packet to the TFRC receiver of its rate-control epoch, first building a
    /// new receiver when the packet opens a newer epoch (older epochs' packets are ignored).
    fn tfrc_receive(&mut self, now: Instant, epoch: u16, tfrc: &[u8]) {
        let current = self.tfrc_receiver.as_ref().map(|(epoch, _)| *epoch);
        let newer =
            current.is_none_or(|current| current != epoch && epoch.wrapping_sub(current) < 0x8000);
        if newer {
            let config = crate::rate::tfrc_config(
                self.descriptor.rate_control,
                self.descriptor.target_rate_bytes(),
                tfrc_packet_size(&self.descriptor),
            );
            if let Ok(receiver) = tfrc_proto::Receiver::new(config) {
                self.tfrc_receiver = Some((epoch, receiver));
            }
        }
        if let Some((receiver_epoch, receiver)) = &mut self.tfrc_receiver {
            if *receiver_epoch == epoch {
                let _ = receiver.handle_packet(now, tfrc);
            }
        }
    }

    /// A FRAGMENT frame: checked against the limits and copied into its message's reassembly
    /// buffer; a complete message moves to its domain's order buffer. Frames contradicting
    /// what was received count as malformed.
    fn on_fragment(&mut self, now: Instant, fragment: &FragmentFrame<'_>) {
        let max = self.descriptor.max_message_size;
        if fragment.message_length > max || fragment.stream > crate::descriptor::MAX_STREAM_ID {
            self.stats.malformed_received += 1;
            return;
        }
        let limit_left = REASSEMBLY_LIMIT.saturating_sub(self.reassembly_bytes);
        let mut added_bytes = 0usize;
        let Some(domain) = domain_entry(&mut self.domains_in, fragment.domain, fragment.ordered)
        else {
            self.stats.malformed_received += 1;
            return;
        };
        if domain.order.is_done(fragment.message) {
            self.stats.duplicates_received += 1;
            return;
        }
        let length = fragment.message_length as usize;
        let partial = match domain.partials.entry(fragment.message) {
            std::collections::btree_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::btree_map::Entry::Vacant(entry) => {
                if length > limit_left {
                    self.stats.malformed_received += 1;
                    return;
                }
                added_bytes = length;
                entry.insert(Partial {
                    stream: fragment.stream,
                    data: vec![0u8; length],
                    pieces: BTreeMap::new(),
                    received: 0,
                    deadline: fragment.deadline,
                })
            }
        };
        if partial.data.len() != length || partial.stream != fragment.stream {
            self.stats.malformed_received += 1;
            return;
        }
        let start = fragment.offset as usize;
        let duplicate = partial.pieces.contains_key(&fragment.offset) && length != 0;
        if duplicate {
            self.stats.duplicates_received += 1;
        } else {
            partial.data[start..start + fragment.data.len()].copy_from_slice(fragment.data);
            partial
                .pieces
                .insert(fragment.offset, fragment.data.len() as u32);
            partial.received += fragment.data.len() as u32;
        }
        let complete = partial.received as usize >= length;
        self.reassembly_bytes += added_bytes;
        if complete {
            if let Some(partial) = domain.partials.remove(&fragment.message) {
                domain.order.insert(
                    fragment.message,
                    Complete {
                        message: Message {
                            stream: partial.stream,
                            number: fragment.message,
                            data: partial.data,
                            completed_at: now,
                        },
                        deadline: partial.deadline,
                    },
                );
            }
        }
    }

    /// A FORWARD frame: the sender resolved every message of the domain below `forward`, so the
    /// incomplete ones there are dropped (counted as expired) and ordered delivery moves past
    /// them.
    fn on_forward(&mut self, domain_id: u16, ordered: bool, forward: u32) {
        let Some(domain) = domain_entry(&mut self.domains_in, domain_id, ordered) else {
            self.stats.malformed_received += 1;
            return;
        };
        // Incomplete messages below the forward point will never complete.
        let stale: Vec<u32> = domain.partials.range(..forward).map(|(n, _)| *n).collect();
        let mut freed = 0;
        let mut expired = Vec::new();
        for number in stale {
            if let Some(partial) = domain.partials.remove(&number) {
                domain.order.skip(number);
                freed += partial.data.len();
                expired.push(partial.stream);
            }
        }
        domain.order.forward(forward);
        self.reassembly_bytes = self.reassembly_bytes.saturating_sub(freed);
        for stream in expired {
            self.stream_stats(stream).messages_expired_incomplete += 1;
        }
    }

    /// Delivers what the domain's order allows, dropping late messages.
    fn pump(&mut self, now: Instant, domain_id: u16) {
        loop {
            let Some(domain) = self.domains_in.get_mut(&domain_id) else {
                return;
            };
            let Some((_, complete)) = domain.order.pop_ready() else {
                break;
            };
            let length = complete.message.data.len();
            self.reassembly_bytes = self.reassembly_bytes.saturating_sub(length);
            let late = self
                .local_deadline(complete.deadline)
                .is_some_and(|deadline| now > deadline);
            let stats = self
                .stats
                .streams
                .entry(complete.message.stream)
                .or_default();
            if late {
                stats.messages_late_at_receiver += 1;
            } else {
                stats.messages_delivered += 1;
                stats.bytes_delivered += length as u64;
                self.delivered.push_back(complete.message);
            }
        }
        let missing: u64 = self
            .domains_in
            .values()
            .map(|domain| domain.order.missing())
            .sum();
        self.stats.messages_missing = missing;
    }

    /// Just after the earliest receiver deadline of a partial or held message, on this end's
    /// clock.
    pub(super) fn receiver_deadline_timer(&self) -> Option<Instant> {
        self.domains_in
            .values()
            .flat_map(|domain| {
                let partial = domain.partials.values().map(|partial| partial.deadline);
                let held = domain.order.held().map(|(_, complete)| complete.deadline);
                partial.chain(held).collect::<Vec<_>>()
            })
            .filter(|deadline| *deadline != 0)
            .min()
            .and_then(|deadline| self.local_deadline(deadline))
            .map(|deadline| deadline + Duration::from_nanos(1))
    }

    /// Time control at the receiver: drops partial messages whose deadline passed (counted as
    /// expired incomplete) and held complete ones that can no longer be on time, then delivers
    /// what that unblocked.
    pub(super) fn expire_receiver(&mut self, now: Instant) {
        let mut expired = Vec::new();
        let domains: Vec<u16> = self.domains_in.keys().copied().collect();
        for domain_id in domains {
            let deadlines: Vec<(u32, u64)> = self.domains_in[&domain_id]
                .partials
                .iter()
                .map(|(number, partial)| (*number, partial.deadline))
                .collect();
            for (number, deadline) in deadlines {
                if self
                    .local_deadline(deadline)
                    .is_some_and(|deadline| now > deadline)
                {
                    let domain = self.domains_in.get_mut(&domain_id).expect("listed");
                    if let Some(partial) = domain.partials.remove(&number) {
                        domain.order.skip(number);
                        self.reassembly_bytes =
                            self.reassembly_bytes.saturating_sub(partial.data.len());
                        expired.push(partial.stream);
                    }
                }
            }
            // Held messages past their deadline can never be on time: drop them now.
            let held_late = self.domains_in[&domain_id]
                .order
                .held()
                .any(|(_, complete)| {
                    self.local_deadline(complete.deadline)
                        .is_some_and(|deadline| now > deadline)
                });
            if held_late {
                self.drop_held_late(now, domain_id);
            }
            self.pump(now, domain_id);
        }
        for stream in expired {
            self.stream_stats(stream).messages_expired_incomplete += 1;
        }
    }

    /// Drops the complete messages held in the order buffer of `domain_id` whose deadline
    /// passed, counting them late.
    fn drop_held_late(&mut self, now: Instant, domain_id: u16) {
        let late: Vec<u32> = self.domains_in[&domain_id]
            .order
            .held()
            .filter(|(_, complete)| {
                self.local_deadline(complete.deadline)
                    .is_some_and(|deadline| now > deadline)
            })
            .map(|(number, _)| number)
            .collect();
        for number in late {
            let domain = self.domains_in.get_mut(&domain_id).expect("exists");
            if let Some(complete) = domain.order.remove_held(number) {
                self.reassembly_bytes = self
                    .reassembly_bytes
                    .saturating_sub(complete.message.data.len());
                self.stream_stats(complete.message.stream)
                    .messages_late_at_receiver += 1;
            }
        }
    }

    /// Writes an ACK into `buffer`: the newest received ranges (at most
    /// [`wire::MAX_ACK_RANGES`], newest first), the time since the largest packet arrived, and
    /// the TFRC feedback if due. Resets the ACK triggers.
    pub(super) fn build_ack(&mut self, now: Instant, buffer: &mut [u8]) -> Option<usize> {
        let ranges: Vec<(u64, u64)> = self
            .received
            .iter()
            .rev()
            .take(wire::MAX_ACK_RANGES)
            .copied()
            .collect();
        let delay = self
            .largest_received
            .map_or(Duration::ZERO, |(_, at)| now - at);
        let feedback = self.pending_feedback.take();
        let epoch = self.tfrc_receiver.as_ref().map_or(0, |(epoch, _)| *epoch);
        let repr = Repr::Ack {
            connection_id: self.connection_id,
            epoch,
            ack_delay_micros: u32::try_from(delay.as_micros()).unwrap_or(u32::MAX),
            feedback: feedback.as_ref().map(|(bytes, length)| &bytes[..*length]),
            ranges: wire::AckRanges::Pairs(&ranges),
        };
        let length = repr.emit(buffer).ok()?;
        self.ack_now = false;
        self.ack_timer = None;
        self.unacked_data_packets = 0;
        self.sent_bytes(now, length);
        Some(length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::Policy;
    use crate::descriptor::{Descriptor, RateControlKind};

    /// An established listener's side without an RTT sample.
    fn established() -> Connection {
        Connection::accept(
            Instant::from_secs(1),
            Descriptor::single_stream(RateControlKind::Tfrc),
            9,
            0x1234,
            42,
            Policy::permissive(),
            None,
        )
        .unwrap()
    }

    /// The received packet-number ranges.
    fn ranges(connection: &Connection) -> Vec<(u64, u64)> {
        connection.received.iter().copied().collect()
    }

    /// A FRAGMENT of stream 0 in the ordered domain 0.
    fn fragment(
        message: u32,
        message_length: u32,
        offset: u32,
        deadline: u64,
        data: &[u8],
    ) -> FragmentFrame<'_> {
        FragmentFrame {
            stream: 0,
            domain: 0,
            ordered: true,
            message,
            message_length,
            offset,
            deadline,
            data,
        }
    }

    #[test]
    fn record_received_merges_ranges_and_spots_duplicates() {
        let mut connection = established();
        for pn in [5, 3, 7] {
            assert!(connection.record_received(pn));
        }
        assert_eq!(ranges(&connection), [(3, 3), (5, 5), (7, 7)]);
        assert!(connection.record_received(4));
        assert_eq!(ranges(&connection), [(3, 5), (7, 7)]);
        assert!(connection.record_received(6));
        assert_eq!(ranges(&connection), [(3, 7)]);
        for pn in 3..=7 {
            assert!(!connection.record_received(pn), "{pn} is a duplicate");
        }
        assert!(connection.record_received(8));
        assert!(connection.record_received(1));
        assert_eq!(ranges(&connection), [(1, 1), (3, 8)]);
    }

    #[test]
    fn record_received_forgets_the_oldest_ranges_beyond_the_limit() {
        let mut connection = established();
        let count = MAX_RECEIVED_RANGES as u64 + 1;
        for i in 0..count {
            assert!(connection.record_received(2 * i));
        }
        assert_eq!(connection.received.len(), MAX_RECEIVED_RANGES);
        assert_eq!(connection.received.front(), Some(&(2, 2)));
        let newest = 2 * (count - 1);
        assert_eq!(connection.received.back(), Some(&(newest, newest)));
        assert!(connection.record_received(3));
        assert_eq!(connection.received.front(), Some(&(2, 4)));
    }

    #[test]
    fn local_deadline_adds_the_clock_offset_less_half_the_min_rtt() {
        let mut connection = established();
        assert_eq!(connection.local_deadline(0), None);
        connection.clock_offset = Some(1_000_000);
        connection.min_rtt = Some(Duration::from_millis(40));
        // The peer's minimum RTT is unknown: this end's (40 ms) stands in.
        assert_eq!(
            connection.local_deadline(50_000_000),
            Some(Instant::from_millis(31))
        );
        connection.peer_min_rtt = Duration::from_millis(10);
        assert_eq!(
            connection.local_deadline(50_000_000),
            Some(Instant::from_millis(46))
        );
        // Never before the epoch.
        assert_eq!(connection.local_deadline(1), Some(Instant::ZERO));
    }

    #[test]
    fn fragments_reassemble_in_any_order_and_ordered_delivery_waits_for_the_gap() {
        let now = Instant::from_secs(2);
        let mut connection = established();
        connection.on_fragment(now, &fragment(1, 3, 0, 0, b"xyz"));
        connection.on_fragment(now, &fragment(0, 6, 3, 0, b"def"));
        connection.pump(now, 0);
        assert_eq!(connection.recv(), None);
        assert_eq!(connection.reassembly_bytes, 9);
        connection.on_fragment(now, &fragment(0, 6, 3, 0, b"def"));
        assert_eq!(connection.stats.duplicates_received, 1);
        // Another length for the same message is a contradiction.
        connection.on_fragment(now, &fragment(0, 7, 0, 0, b"abc"));
        assert_eq!(connection.stats.malformed_received, 1);
        connection.on_fragment(now, &fragment(0, 6, 0, 0, b"abc"));
        connection.pump(now, 0);
        let first = connection.recv().unwrap();
        assert_eq!((first.number, &first.data[..]), (0, &b"abcdef"[..]));
        let second = connection.recv().unwrap();
        assert_eq!((second.number, &second.data[..]), (1, &b"xyz"[..]));
        assert_eq!(connection.reassembly_bytes, 0);
        assert_eq!(connection.stats.streams[&0].messages_delivered, 2);
        // A message already delivered comes again: a duplicate.
        connection.on_fragment(now, &fragment(1, 3, 0, 0, b"xyz"));
        assert_eq!(connection.stats.duplicates_received, 2);
        connection.pump(now, 0);
        assert_eq!(connection.recv(), None);
    }

    #[test]
    fn a_forward_drops_incomplete_messages_below_it_and_unblocks_the_order() {
        let now = Instant::from_secs(2);
        let mut connection = established();
        connection.on_fragment(now, &fragment(0, 6, 0, 0, b"abc"));
        connection.on_fragment(now, &fragment(1, 3, 0, 0, b"xyz"));
        connection.on_fragment(now, &fragment(2, 4, 0, 0, b"ab"));
        connection.pump(now, 0);
        assert_eq!(connection.pending_messages(), 0);
        connection.on_forward(0, true, 1);
        connection.pump(now, 0);
        assert_eq!(connection.recv().map(|message| message.number), Some(1));
        assert_eq!(connection.recv(), None);
        assert_eq!(connection.stats.streams[&0].messages_expired_incomplete, 1);
        // Message 2 is still being reassembled.
        assert_eq!(connection.reassembly_bytes, 4);
        // A FORWARD contradicting the domain's ordering is refused.
        connection.on_forward(0, false, 3);
        assert_eq!(connection.stats.malformed_received, 1);
        assert_eq!(connection.reassembly_bytes, 4);
    }

    #[test]
    fn receiver_deadlines_drop_late_held_messages_then_expired_partial_ones() {
        // No clock offset nor RTT: local deadlines equal the sender's.
        let mut connection = established();
        let second = 1_000_000_000;
        let now = Instant::from_secs(1);
        connection.on_fragment(now, &fragment(0, 6, 0, 5 * second, b"abc"));
        connection.on_fragment(now, &fragment(1, 3, 0, 2 * second, b"xyz"));
        connection.on_fragment(now, &fragment(2, 3, 0, 10 * second, b"uvw"));
        assert_eq!(
            connection.receiver_deadline_timer(),
            Some(Instant::from_secs(2) + Duration::from_nanos(1))
        );
        connection.expire_receiver(Instant::from_secs(3));
        let stats = connection.stats.streams[&0];
        assert_eq!(stats.messages_late_at_receiver, 1);
        assert_eq!(stats.messages_expired_incomplete, 0);
        assert_eq!(connection.pending_messages(), 0);
        assert_eq!(connection.reassembly_bytes, 9);
        connection.expire_receiver(Instant::from_secs(6));
        let stats = connection.stats.streams[&0];
        assert_eq!(stats.messages_expired_incomplete, 1);
        assert_eq!(stats.messages_delivered, 1);
        assert_eq!(connection.recv().map(|message| message.number), Some(2));
        assert_eq!(connection.reassembly_bytes, 0);
        assert_eq!(connection.receiver_deadline_timer(), None);
    }

    #[test]
    fn an_ack_reports_the_newest_ranges_first_and_resets_the_triggers() {
        let start = Instant::from_secs(1);
        let mut connection = established();
        for pn in [0, 1, 2, 5, 6, 9] {
            connection.record_received(pn);
        }
        connection.largest_received = Some((9, start));
        connection.ack_now = true;
        connection.unacked_data_packets = 2;
        connection.ack_timer = Some(start + ACK_DELAY);
        let mut buffer = [0u8; 1500];
        let length = connection
            .build_ack(start + Duration::from_millis(3), &mut buffer)
            .unwrap();
        let Ok(Repr::Ack {
            ack_delay_micros,
            feedback,
            ranges,
            ..
        }) = Repr::parse(&buffer[..length])
        else {
            panic!("not an ACK");
        };
        assert_eq!(ranges.iter().collect::<Vec<_>>(), [(9, 9), (5, 6), (0, 2)]);
        assert_eq!(ack_delay_micros, 3000);
        assert_eq!(feedback, None);
        assert!(!connection.ack_now);
        assert_eq!(connection.ack_timer, None);
        assert_eq!(connection.unacked_data_packets, 0);
    }
}
