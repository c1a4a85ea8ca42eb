//! The sender side of a [`Connection`]: messages cut into pieces, DATA packets built under the
//! rate control (the TFRC sender wraps their frames), acknowledgements and RTT samples, loss
//! detection and retransmission, sender deadlines, and the FORWARD points that let the
//! receiver skip abandoned messages.

use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use tfrc_proto::Instant;

use crate::descriptor::StreamDescriptor;
use crate::mechanisms::StreamMechanisms;
use crate::wire::{self, FragmentFrame, Frame};

use super::{Connection, State, ACK_DELAY, PACKET_THRESHOLD};

/// A message accepted by `send`, until acknowledged or abandoned.
#[derive(Debug)]
pub(super) struct OutMessage {
    /// Its stream.
    pub(super) stream: u16,
    /// Contents.
    pub(super) data: Vec<u8>,
    /// Sender deadline (time control), if any.
    pub(super) deadline: Option<Instant>,
    /// First-transmission progress.
    pub(super) sent_offset: u32,
    /// Offsets of the acknowledged pieces.
    pub(super) acked_pieces: BTreeSet<u32>,
    /// Total length of the acknowledged pieces.
    pub(super) acked_bytes: u32,
    /// Pieces waiting in a retransmission queue.
    pub(super) queued_retransmissions: u32,
}

impl OutMessage {
    /// Length in bytes (at most `max_message_size`, a `u32`).
    fn len(&self) -> u32 {
        self.data.len() as u32
    }

    /// True while bytes of the message still wait to be sent (first transmission unfinished,
    /// an empty message, or retransmissions queued): time control may then drop it.
    fn bytes_waiting(&self) -> bool {
        self.sent_offset < self.len()
            || (self.len() == 0 && self.sent_offset == 0 && self.acked_pieces.is_empty())
            || self.queued_retransmissions > 0
    }
}

/// The sending side of an ordering domain: message numbering and the forward point.
#[derive(Debug)]
pub(super) struct DomainOut {
    /// Delivered in order at the receiver (fixed for the domain's life).
    pub(super) ordered: bool,
    /// Number of the next message `send` accepts.
    pub(super) next_number: u32,
    /// Unresolved messages (neither acknowledged nor abandoned), by number.
    pub(super) messages: BTreeMap<u32, OutMessage>,
    /// Highest forward point the peer acknowledged.
    pub(super) forward_acked: u32,
    /// Highest forward point sent (back to `forward_acked` when its packet is lost).
    pub(super) forward_sent: u32,
    /// One past the highest abandoned message number.
    pub(super) abandoned_until: u32,
}

impl DomainOut {
    /// True when a FORWARD frame is due: a message was abandoned beyond the highest forward
    /// point sent, and the forward point has moved past what was sent. Each point is sent once
    /// and again only if its packet is lost (`forward_sent` falls back to `forward_acked`),
    /// as data is: repeating it on every packet until acknowledged would take room from the
    /// data, and keep a message as long as a packet out of every packet for a round trip.
    fn forward_due(&self) -> bool {
        self.abandoned_until > self.forward_sent && self.forward_point() > self.forward_sent
    }

    /// Below this number every message of the domain is resolved: the oldest unresolved
    /// message, or the next number if none is. The receiver may skip what it lacks below it.
    fn forward_point(&self) -> u32 {
        self.messages
            .keys()
            .next()
            .copied()
            .unwrap_or(self.next_number)
    }
}

/// A fragment of a message: what one FRAGMENT frame carries, and what a loss retransmits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Piece {
    /// Ordering domain of the message.
    pub(super) domain: u16,
    /// Message number in the domain.
    pub(super) message: u32,
    /// Offset in the message.
    offset: u32,
    /// Length in bytes.
    length: u32,
    /// Transmissions so far (0 for a piece not yet sent).
    transmissions: u32,
}

/// The sending side of a stream.
#[derive(Debug)]
pub(super) struct StreamOut {
    /// Its descriptor entry (the priority for the scheduler).
    pub(super) descriptor: StreamDescriptor,
    /// Its reliability and time control.
    pub(super) mechanisms: StreamMechanisms,
    /// Ordering domain its messages are numbered in.
    pub(super) domain: u16,
    /// Whether that domain is ordered.
    pub(super) ordered: bool,
    /// Messages with unsent bytes, in order.
    pub(super) new_messages: VecDeque<(u16, u32)>,
    /// Lost pieces to send again, before any new data.
    pub(super) retransmissions: VecDeque<Piece>,
}

/// What a DATA packet carried, to act on when it is acknowledged or lost.
#[derive(Debug, Clone, Copy)]
enum SentFrame {
    /// A FRAGMENT frame.
    Piece(Piece),
    /// A FORWARD frame.
    Forward { domain: u16, forward: u32 },
}

/// A DATA packet in flight.
#[derive(Debug)]
pub(super) struct SentPacket {
    /// When it was sent (RTT samples, time-based loss detection).
    sent_at: Instant,
    /// What it carried.
    frames: Vec<SentFrame>,
}

impl Connection {
    /// Gives up a message. `late` tells whether time control (rather than reliability) did.
    pub(super) fn abandon(&mut self, domain_id: u16, number: u32, late: bool) {
        let Some(domain) = self.domains_out.get_mut(&domain_id) else {
            return;
        };
        let Some(message) = domain.messages.remove(&number) else {
            return;
        };
        domain.abandoned_until = domain.abandoned_until.max(number + 1);
        self.buffered_bytes -= u64::from(message.len());
        if let Some(deadline) = message.deadline {
            self.deadlines.remove(&(deadline, domain_id, number));
        }
        let stats = self.stats.streams.entry(message.stream).or_default();
        if late {
            stats.messages_late_at_sender += 1;
        } else {
            stats.messages_abandoned += 1;
        }
    }

    /// A piece was acknowledged. The message is resolved (its bytes freed) once all its bytes
    /// are acknowledged and no retransmission of it is queued.
    fn on_piece_acked(&mut self, piece: Piece) {
        let Some(domain) = self.domains_out.get_mut(&piece.domain) else {
            return;
        };
        let Some(message) = domain.messages.get_mut(&piece.message) else {
            return;
        };
        if message.acked_pieces.insert(piece.offset) {
            message.acked_bytes += piece.length;
        }
        let complete = if message.len() == 0 {
            true
        } else {
            message.acked_bytes >= message.len()
        };
        if complete && message.queued_retransmissions == 0 {
            let message = domain.messages.remove(&piece.message);
            if let Some(message) = message {
                self.buffered_bytes -= u64::from(message.len());
                if let Some(deadline) = message.deadline {
                    self.deadlines
                        .remove(&(deadline, piece.domain, piece.message));
                }
                self.stream_stats(message.stream).messages_acked += 1;
            }
        }
    }

    /// A piece was lost: queued for retransmission if the stream's reliability allows, else
    /// the message is abandoned (as late if its deadline passed).
    fn on_piece_lost(&mut self, now: Instant, piece: Piece) {
        let Some(domain) = self.domains_out.get_mut(&piece.domain) else {
            return;
        };
        let Some(message) = domain.messages.get_mut(&piece.message) else {
            return;
        };
        if message.acked_pieces.contains(&piece.offset) {
            return;
        }
        let stream_id = message.stream;
        let deadline = message.deadline;
        if deadline.is_some_and(|deadline| now >= deadline) {
            self.abandon(piece.domain, piece.message, true);
            return;
        }
        let allowed = self.streams.get(&stream_id).is_some_and(|stream| {
            stream
                .mechanisms
                .reliability
                .should_retransmit(piece.transmissions, deadline, now)
        });
        if !allowed {
            self.abandon(piece.domain, piece.message, false);
            return;
        }
        message.queued_retransmissions += 1;
        if let Some(stream) = self.streams.get_mut(&stream_id) {
            stream.retransmissions.push_back(piece);
        }
    }

    /// An ACK of packet-number `ranges`: an RTT sample (less the peer's `ack_delay`) if the
    /// largest acknowledged packet is newly acknowledged, then the frames of the acknowledged
    /// packets are resolved and losses looked for.
    pub(super) fn on_ack(&mut self, now: Instant, ack_delay: Duration, ranges: &[(u64, u64)]) {
        let mut newly_acked = Vec::new();
        for &(first, last) in ranges {
            let numbers: Vec<u64> = self.sent.range(first..=last).map(|(pn, _)| *pn).collect();
            for pn in numbers {
                if let Some(packet) = self.sent.remove(&pn) {
                    newly_acked.push((pn, packet));
                }
            }
        }
        let Some(largest_in_ack) = ranges.iter().map(|range| range.1).max() else {
            return;
        };
        if let Some((pn, packet)) = newly_acked.iter().max_by_key(|(pn, _)| *pn) {
            if *pn == largest_in_ack {
                let elapsed = now - packet.sent_at;
                let sample = elapsed.checked_sub(ack_delay).unwrap_or(elapsed);
                let sample = sample.max(Duration::from_micros(1));
                self.latest_rtt = Some(sample);
                self.min_rtt = Some(self.min_rtt.map_or(sample, |min| min.min(sample)));
                self.smoothed_rtt = Some(match self.smoothed_rtt {
                    None => sample,
                    Some(rtt) => (rtt * 7 + sample) / 8,
                });
            }
        }
        self.largest_acked = Some(
            self.largest_acked
                .map_or(largest_in_ack, |largest| largest.max(largest_in_ack)),
        );
        for (_, packet) in newly_acked {
            for frame in packet.frames {
                match frame {
                    SentFrame::Piece(piece) => self.on_piece_acked(piece),
                    SentFrame::Forward { domain, forward } => {
                        if let Some(domain) = self.domains_out.get_mut(&domain) {
                            domain.forward_acked = domain.forward_acked.max(forward);
                            // Acknowledged is sent: a loss that reset `forward_sent` to an
                            // older acknowledged point must not make a FORWARD look due that
                            // `build_data` (which compares with `forward_acked`) would not
                            // send, or the connection would ask to send and send nothing.
                            domain.forward_sent = domain.forward_sent.max(domain.forward_acked);
                        }
                    }
                }
            }
        }
        self.detect_losses(now);
    }

    /// How long a packet may stay unacknowledged before it is declared lost: two smoothed RTTs
    /// plus the peer's ACK delay and a margin, or 1 s before any RTT sample.
    fn loss_timeout(&self) -> Duration {
        match self.smoothed_rtt {
            Some(rtt) => rtt * 2 + ACK_DELAY + Duration::from_millis(10),
            None => Duration::from_secs(1),
        }
    }

    /// Declares lost the packets in flight that are [`PACKET_THRESHOLD`] packets behind the
    /// largest acknowledged one, or overtaken by it for more than 9/8 RTT, or older than the
    /// loss timeout. Their pieces are retransmitted or abandoned; their FORWARD points will be
    /// sent again.
    pub(super) fn detect_losses(&mut self, now: Instant) {
        let largest = self.largest_acked;
        let timeout = self.loss_timeout();
        let reorder_time = self
            .smoothed_rtt
            .max(self.latest_rtt)
            .map_or(timeout, |rtt| rtt * 9 / 8);
        let lost: Vec<u64> = self
            .sent
            .iter()
            .filter(|(pn, packet)| {
                let acked_later = largest.is_some_and(|largest| largest > **pn);
                (acked_later
                    && (largest.is_some_and(|largest| largest >= **pn + PACKET_THRESHOLD)
                        || now >= packet.sent_at + reorder_time))
                    || now >= packet.sent_at + timeout
            })
            .map(|(pn, _)| *pn)
            .collect();
        for pn in lost {
            let Some(packet) = self.sent.remove(&pn) else {
                continue;
            };
            self.stats.data_packets_lost += 1;
            for frame in packet.frames {
                match frame {
                    SentFrame::Piece(piece) => self.on_piece_lost(now, piece),
                    SentFrame::Forward { domain, .. } => {
                        if let Some(domain) = self.domains_out.get_mut(&domain) {
                            domain.forward_sent = domain.forward_acked;
                        }
                    }
                }
            }
        }
    }

    /// When the oldest packet in flight reaches the loss timeout, if a packet is in flight.
    pub(super) fn loss_timer(&self) -> Option<Instant> {
        let timeout = self.loss_timeout();
        self.sent
            .values()
            .map(|packet| packet.sent_at + timeout)
            .min()
    }

    /// Time control at the sender: a message whose deadline passed while bytes of it still
    /// wait is dropped as late.
    pub(super) fn expire_deadlines(&mut self, now: Instant) {
        while let Some(&(deadline, domain, number)) = self.deadlines.first() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_first();
            let waiting = self
                .domains_out
                .get(&domain)
                .and_then(|domain| domain.messages.get(&number))
                .is_some_and(OutMessage::bytes_waiting);
            if waiting {
                self.abandon(domain, number, true);
            }
            // A message wholly sent stays until acknowledged or lost (then dropped as late).
        }
    }

    /// The next piece of `stream_id` that fits in `room` payload bytes: its oldest queued
    /// retransmission (none if that one does not fit), else the next bytes of its oldest
    /// message with unsent bytes. A message not yet started that does not fit whole starts in
    /// `room` only if it would carry more data there than the fragment header the split adds
    /// (else it waits for the next packet): packets are paced by count, so their room is worth
    /// filling, but a sliver of data for a second header is not, and a run of small messages
    /// split that way would keep every later packet carrying two headers.
    fn next_piece(&mut self, stream_id: u16, room: usize) -> Option<Piece> {
        let stream = self.streams.get_mut(&stream_id)?;
        if room <= wire::FRAGMENT_HEADER_LEN {
            return None;
        }
        let space = (room - wire::FRAGMENT_HEADER_LEN).min(u16::MAX as usize) as u32;
        while let Some(piece) = stream.retransmissions.front().copied() {
            let message = self
                .domains_out
                .get_mut(&piece.domain)
                .and_then(|domain| domain.messages.get_mut(&piece.message));
            let Some(message) = message else {
                stream.retransmissions.pop_front();
                continue;
            };
            if message.acked_pieces.contains(&piece.offset) {
                message.queued_retransmissions -= 1;
                stream.retransmissions.pop_front();
                continue;
            }
            if piece.length > space {
                return None;
            }
            message.queued_retransmissions -= 1;
            stream.retransmissions.pop_front();
            return Some(piece);
        }
        while let Some(&(domain_id, number)) = stream.new_messages.front() {
            let message = self
                .domains_out
                .get_mut(&domain_id)
                .and_then(|domain| domain.messages.get_mut(&number));
            let Some(message) = message else {
                stream.new_messages.pop_front();
                continue;
            };
            let offset = message.sent_offset;
            let whole = message.len() as usize + wire::FRAGMENT_HEADER_LEN;
            if offset == 0 && whole > room && room <= 2 * wire::FRAGMENT_HEADER_LEN {
                return None;
            }
            let length = (message.len() - offset).min(space);
            message.sent_offset += length;
            if message.sent_offset >= message.len() {
                stream.new_messages.pop_front();
                if message.len() == 0 {
                    // A zero-length message is one empty piece; mark it sent.
                    message.sent_offset = 0;
                    message.acked_pieces.clear();
                }
            }
            return Some(Piece {
                domain: domain_id,
                message: number,
                offset,
                length,
                transmissions: 0,
            });
        }
        None
    }

    /// True if a stream has a piece to send, new or retransmitted.
    pub(super) fn has_data_waiting(&self) -> bool {
        self.streams
            .values()
            .any(|stream| !stream.retransmissions.is_empty() || !stream.new_messages.is_empty())
    }

    /// Bytes of queued messages not yet sent and of fragments waiting for retransmission: the
    /// sender's backlog (RFC 8698 §5.2.1's "rate-shaping buffer").
    pub fn unsent_bytes(&self) -> u64 {
        self.streams
            .values()
            .map(|stream| {
                let new: u64 = stream
                    .new_messages
                    .iter()
                    .filter_map(|(domain, number)| {
                        self.domains_out.get(domain)?.messages.get(number)
                    })
                    .map(|message| {
                        u64::from(message.len() - message.sent_offset.min(message.len()))
                    })
                    .sum();
                let again: u64 = stream
                    .retransmissions
                    .iter()
                    .map(|piece| u64::from(piece.length))
                    .sum();
                new + again
            })
            .sum()
    }

    /// True if a domain has abandoned messages the receiver was not yet told to skip: a
    /// FORWARD frame is due even without data.
    pub(super) fn forward_needed(&self) -> bool {
        self.domains_out.values().any(DomainOut::forward_due)
    }

    /// Builds a DATA packet into `buffer` if the rate allows and there is something to send:
    /// the FORWARD points due, then fragments of the streams the scheduler
    /// picks, wrapped by the rate control's TFRC header. Sender deadlines are enforced first.
    pub(super) fn build_data(&mut self, now: Instant, buffer: &mut [u8]) -> Option<usize> {
        if self.state != State::Established || !self.rate.can_send(now) {
            return None;
        }
        self.expire_deadlines(now);
        if !self.has_data_waiting() && !self.forward_needed() {
            self.rate.note_data_limited(now);
            return None;
        }
        let capacity = (self.descriptor.packet_size as usize)
            .min(buffer.len())
            .saturating_sub(wire::DATA_HEADER_LEN + tfrc_proto::wire::DATA_HEADER_LEN);
        let mut payload = core::mem::take(&mut self.payload_scratch);
        payload.clear();
        payload.resize(capacity, 0);
        let mut frames = Vec::new();
        let used = self.emit_forwards(&mut payload, &mut frames);
        let used = self.emit_fragments(&mut payload, used, &mut frames);
        if frames.is_empty() {
            self.payload_scratch = payload;
            self.rate.note_data_limited(now);
            return None;
        }
        let tfrc_length = self
            .rate
            .emit(now, &payload[..used], &mut buffer[wire::DATA_HEADER_LEN..])
            .ok();
        self.payload_scratch = payload;
        let tfrc_length = tfrc_length?;
        self.seal_data_packet(now, buffer, frames)?;
        Some(wire::DATA_HEADER_LEN + tfrc_length)
    }

    /// Writes the FORWARD frames due (one per ordering domain whose forward point moved) at
    /// the start of `payload` while they fit; returns the bytes written.
    fn emit_forwards(&mut self, payload: &mut [u8], frames: &mut Vec<SentFrame>) -> usize {
        let capacity = payload.len();
        let mut used = 0;
        let forwards: Vec<(u16, bool, u32)> = self
            .domains_out
            .iter()
            .filter(|(_, domain)| domain.forward_due())
            .map(|(id, domain)| (*id, domain.ordered, domain.forward_point()))
            .collect();
        for (domain_id, ordered, forward) in forwards {
            if capacity - used < wire::FORWARD_LEN {
                break;
            }
            let frame = Frame::Forward {
                domain: domain_id,
                ordered,
                forward,
            };
            used += frame.emit(&mut payload[used..]).unwrap_or(0);
            frames.push(SentFrame::Forward {
                domain: domain_id,
                forward,
            });
            if let Some(domain) = self.domains_out.get_mut(&domain_id) {
                domain.forward_sent = domain.forward_sent.max(forward);
            }
        }
        used
    }

    /// Fills `payload` after its first `used` bytes with fragments of the streams the
    /// scheduler picks (retransmissions first within a stream), counting them in the stream
    /// statistics; returns the bytes used in all.
    fn emit_fragments(
        &mut self,
        payload: &mut [u8],
        mut used: usize,
        frames: &mut Vec<SentFrame>,
    ) -> usize {
        let capacity = payload.len();
        loop {
            let ready: Vec<(u16, u8)> = self
                .streams
                .iter()
                .filter(|(_, stream)| {
                    !stream.retransmissions.is_empty() || !stream.new_messages.is_empty()
                })
                .map(|(id, stream)| (*id, stream.descriptor.priority))
                .collect();
            let Some(stream_id) = self.scheduler.pick(&ready) else {
                break;
            };
            let Some(piece) = self.next_piece(stream_id, capacity - used) else {
                break;
            };
            let Some(message) = self
                .domains_out
                .get(&piece.domain)
                .and_then(|domain| domain.messages.get(&piece.message))
            else {
                continue;
            };
            let start = piece.offset as usize;
            let frame = Frame::Fragment(FragmentFrame {
                stream: stream_id,
                domain: piece.domain,
                ordered: self.domains_out[&piece.domain].ordered,
                message: piece.message,
                message_length: message.len(),
                offset: piece.offset,
                deadline: message.deadline.map_or(0, Instant::as_nanos),
                data: &message.data[start..start + piece.length as usize],
            });
            let Ok(written) = frame.emit(&mut payload[used..]) else {
                break;
            };
            used += written;
            let stats = self.stats.streams.entry(stream_id).or_default();
            if piece.transmissions == 0 {
                stats.bytes_sent += u64::from(piece.length);
            } else {
                stats.fragments_retransmitted += 1;
            }
            frames.push(SentFrame::Piece(Piece {
                transmissions: piece.transmissions + 1,
                ..piece
            }));
        }
        used
    }

    /// Writes the ETP data header (the next packet number, the epoch, our minimum RTT) at the
    /// start of `buffer` and remembers what the packet carries, for its acknowledgement or
    /// loss.
    fn seal_data_packet(
        &mut self,
        now: Instant,
        buffer: &mut [u8],
        frames: Vec<SentFrame>,
    ) -> Option<()> {
        let packet_number = self.next_packet_number;
        self.next_packet_number += 1;
        let min_rtt = self.min_rtt.map_or(0, |rtt| {
            u32::try_from(rtt.as_micros()).unwrap_or(u32::MAX).max(1)
        });
        wire::emit_data_header(
            buffer,
            self.connection_id,
            packet_number,
            self.epoch,
            min_rtt,
        )
        .ok()?;
        self.sent.insert(
            packet_number,
            SentPacket {
                sent_at: now,
                frames,
            },
        );
        self.stats.data_packets_sent += 1;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::{MessageOptions, Policy};
    use crate::descriptor::{Descriptor, RateControlKind};

    /// The RTT the listener's side learns from the handshake in these tests.
    const RTT: Duration = Duration::from_millis(100);

    /// An established listener's side with a first RTT sample of [`RTT`].
    fn established(now: Instant) -> Connection {
        Connection::accept(
            now,
            Descriptor::single_stream(RateControlKind::Tfrc),
            9,
            0x1234,
            42,
            Policy::permissive(),
            Some(RTT),
        )
        .unwrap()
    }

    /// A domain holding empty messages `numbers`, the next to be numbered `next_number`.
    fn domain(next_number: u32, numbers: &[u32]) -> DomainOut {
        let messages = numbers
            .iter()
            .map(|&number| {
                let message = OutMessage {
                    stream: 0,
                    data: Vec::new(),
                    deadline: None,
                    sent_offset: 0,
                    acked_pieces: BTreeSet::new(),
                    acked_bytes: 0,
                    queued_retransmissions: 0,
                };
                (number, message)
            })
            .collect();
        DomainOut {
            ordered: true,
            next_number,
            messages,
            forward_acked: 0,
            forward_sent: 0,
            abandoned_until: 0,
        }
    }

    #[test]
    fn forward_point_is_the_oldest_unresolved_message_else_the_next_number() {
        assert_eq!(domain(5, &[]).forward_point(), 5);
        assert_eq!(domain(5, &[2, 4]).forward_point(), 2);
        assert_eq!(domain(5, &[4]).forward_point(), 4);
    }

    #[test]
    fn bytes_wait_until_sent_and_again_while_a_retransmission_is_queued() {
        let mut message = OutMessage {
            stream: 0,
            data: vec![0; 100],
            deadline: None,
            sent_offset: 40,
            acked_pieces: BTreeSet::new(),
            acked_bytes: 0,
            queued_retransmissions: 0,
        };
        assert!(message.bytes_waiting());
        message.sent_offset = 100;
        assert!(!message.bytes_waiting());
        message.queued_retransmissions = 1;
        assert!(message.bytes_waiting());
    }

    #[test]
    fn loss_timeout_is_one_second_without_rtt_else_two_rtts_and_the_ack_delay() {
        let now = Instant::from_secs(1);
        let descriptor = Descriptor::single_stream(RateControlKind::Tfrc);
        let client = Connection::connect(now, descriptor, 9, 42).unwrap();
        assert_eq!(client.loss_timeout(), Duration::from_secs(1));
        // 2 × 100 ms + 20 ms ACK delay + 10 ms margin.
        assert_eq!(established(now).loss_timeout(), Duration::from_millis(230));
    }

    #[test]
    fn a_new_message_starts_in_the_room_left_only_for_more_data_than_a_header() {
        let now = Instant::from_secs(1);
        let mut connection = established(now);
        for _ in 0..3 {
            connection
                .send(now, 0, vec![7; 600], MessageOptions::default())
                .unwrap();
        }
        let header = wire::FRAGMENT_HEADER_LEN;
        let packet = header + 1000;
        let first = connection.next_piece(0, packet).unwrap();
        assert_eq!((first.message, first.offset, first.length), (0, 0, 600));
        // 372 bytes left: the second message starts there (344 bytes of data for a header).
        let left = packet - header - 600;
        let second = connection.next_piece(0, left).unwrap();
        assert_eq!((second.message, second.offset), (1, 0));
        assert_eq!(second.length as usize, left - header);
        let rest = connection.next_piece(0, packet).unwrap();
        assert_eq!((rest.message, rest.offset), (1, second.length));
        // Room for a header and at most as much data: the third message waits.
        assert!(connection.next_piece(0, 2 * header).is_none());
        let third = connection.next_piece(0, packet).unwrap();
        assert_eq!((third.message, third.offset, third.length), (2, 0, 600));
    }

    #[test]
    fn next_piece_fills_the_room_and_serves_retransmissions_first() {
        let now = Instant::from_secs(1);
        let mut connection = established(now);
        connection
            .send(now, 0, vec![7; 2500], MessageOptions::default())
            .unwrap();
        let room = wire::FRAGMENT_HEADER_LEN + 1000;
        assert!(connection
            .next_piece(0, wire::FRAGMENT_HEADER_LEN)
            .is_none());
        let first = connection.next_piece(0, room).unwrap();
        assert_eq!(
            (
                first.message,
                first.offset,
                first.length,
                first.transmissions
            ),
            (0, 0, 1000, 0)
        );
        let second = connection.next_piece(0, room).unwrap();
        assert_eq!((second.offset, second.length), (1000, 1000));
        // The first piece is lost after one transmission: it goes before the rest of the
        // message, and new data does not overtake it when it does not fit.
        connection.on_piece_lost(
            now,
            Piece {
                transmissions: 1,
                ..first
            },
        );
        assert!(connection
            .next_piece(0, wire::FRAGMENT_HEADER_LEN + 500)
            .is_none());
        let again = connection.next_piece(0, room).unwrap();
        assert_eq!(
            (again.offset, again.length, again.transmissions),
            (0, 1000, 1)
        );
        let last = connection.next_piece(0, room).unwrap();
        assert_eq!((last.offset, last.length), (2000, 500));
        assert!(connection.next_piece(0, room).is_none());
        assert!(!connection.has_data_waiting());
    }

    #[test]
    fn an_ack_samples_the_rtt_and_packets_overtaken_are_lost_by_count_then_time() {
        let start = Instant::from_secs(1);
        let mut connection = established(start);
        for pn in 0..5 {
            let packet = SentPacket {
                sent_at: start,
                frames: Vec::new(),
            };
            connection.sent.insert(pn, packet);
        }
        let in_flight =
            |connection: &Connection| connection.sent.keys().copied().collect::<Vec<_>>();
        connection.on_ack(
            start + Duration::from_millis(50),
            Duration::from_millis(10),
            &[(3, 3)],
        );
        assert_eq!(connection.latest_rtt, Some(Duration::from_millis(40)));
        assert_eq!(connection.min_rtt, Some(Duration::from_millis(40)));
        // (7 × 100 ms + 40 ms) / 8.
        assert_eq!(connection.smoothed_rtt, Some(Duration::from_micros(92_500)));
        assert_eq!(connection.largest_acked, Some(3));
        // 0 is PACKET_THRESHOLD behind 3; 1 and 2 were overtaken for less than 9/8 RTT; nothing
        // overtook 4.
        assert_eq!(in_flight(&connection), [1, 2, 4]);
        assert_eq!(connection.stats.data_packets_lost, 1);
        // 9/8 × 92.5 ms = 104.06 ms.
        connection.detect_losses(start + Duration::from_millis(105));
        assert_eq!(in_flight(&connection), [4]);
        assert_eq!(connection.stats.data_packets_lost, 3);
        // 2 × 92.5 ms + 20 ms + 10 ms.
        let timeout = start + Duration::from_millis(215);
        assert_eq!(connection.loss_timer(), Some(timeout));
        connection.detect_losses(timeout - Duration::from_nanos(1));
        assert_eq!(in_flight(&connection), [4]);
        connection.detect_losses(timeout);
        assert!(connection.sent.is_empty());
        assert_eq!(connection.loss_timer(), None);
        assert_eq!(connection.stats.data_packets_lost, 4);
    }

    #[test]
    fn an_abandoned_message_needs_a_forward_until_one_is_sent() {
        let now = Instant::from_secs(1);
        let mut connection = established(now);
        for _ in 0..2 {
            connection
                .send(now, 0, vec![1; 10], MessageOptions::default())
                .unwrap();
        }
        let domain = connection.streams[&0].domain;
        assert!(!connection.forward_needed());
        connection.abandon(domain, 0, false);
        assert!(connection.forward_needed());
        assert_eq!(connection.buffered_bytes, 10);
        assert_eq!(connection.stats.streams[&0].messages_abandoned, 1);
        assert_eq!(connection.domains_out[&domain].forward_point(), 1);
        connection
            .domains_out
            .get_mut(&domain)
            .unwrap()
            .forward_sent = 1;
        assert!(!connection.forward_needed());
    }
}
