//! The ETP connection: a sans-IO state machine composing the micro-mechanisms.
//!
//! # Driving it
//! Like `tfrc_proto`, a [`Connection`] has no sockets, clocks or randomness:
//! - give every datagram from the peer to [`Connection::handle_datagram`];
//! - when [`Connection::poll_timeout`] has come, call [`Connection::handle_timeout`];
//! - after either, and after [`Connection::send`], drain [`Connection::poll_transmit`] and send
//!   each datagram to the peer;
//! - read whole messages with [`Connection::recv`] and happenings with [`Connection::poll_event`].
//!
//! A session is symmetric once established: both ends may send on every stream of the
//! descriptor, and the descriptor applies to both directions.
//!
//! # How the mechanisms fit
//! A message is numbered in its stream's *ordering domain* and cut into fragments. When the rate
//! control allows a packet, the [scheduler](crate::mechanisms::Scheduler) chooses which stream
//! fills it (retransmissions first within a stream). The receiver acknowledges packet-number
//! ranges; a packet is lost when three later packets are acknowledged or after a timeout, and its
//! fragments are retransmitted if the stream's [reliability](crate::mechanisms::Reliability)
//! allows, else the message is abandoned. The sender tells the receiver, with FORWARD frames,
//! below which number every message of a domain is resolved, so that ordered delivery does not
//! wait for abandoned messages. [Time control](crate::mechanisms::TimeControl) drops, at the
//! sender, messages whose deadline passed while bytes of them still waited, and, at the
//! receiver, messages that become deliverable after their deadline (mapped to the receiver's
//! clock with the smallest observed one-way offset and the sender's minimum RTT).

use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tfrc_proto::Instant;

use crate::descriptor::{Descriptor, RateControlKind, StreamDescriptor};
use crate::mechanisms::{self, OrderBuffer, Scheduler, StreamMechanisms};
use crate::rate::{self, RateControl};
use crate::wire::{self, FragmentFrame, Frame, Frames, Repr, COOKIE_LEN};

/// Packets acknowledged later than this many packets after a packet declare it lost.
pub const PACKET_THRESHOLD: u64 = 3;
/// Longest a receiver waits before acknowledging a single data packet.
pub const ACK_DELAY: Duration = Duration::from_millis(20);
/// Acknowledge at once after this many data packets.
pub const ACK_EVERY: u32 = 2;
/// Interval between connection requests (INIT / COOKIE_ECHO) and their number.
pub const HANDSHAKE_INTERVAL: Duration = Duration::from_secs(1);
/// Connection request attempts before giving up.
pub const HANDSHAKE_ATTEMPTS: u32 = 5;
/// Attempts of a CLOSE or RECONFIGURE request.
pub const REQUEST_ATTEMPTS: u32 = 8;
/// Most received packet-number ranges remembered.
const MAX_RECEIVED_RANGES: usize = 256;
/// Most bytes held in reassembly and ordering buffers.
pub const REASSEMBLY_LIMIT: usize = 64 << 20;

/// Close codes carried by CLOSE and ERROR.
pub mod close_code {
    /// Normal close by the application.
    pub const NORMAL: u16 = 0;
    /// The descriptor was refused.
    pub const DESCRIPTOR_REFUSED: u16 = 1;
    /// The cookie was invalid or stale.
    pub const BAD_COOKIE: u16 = 2;
    /// Protocol violation.
    pub const PROTOCOL: u16 = 3;
}

/// What a listener (or a peer asked to reconfigure) accepts. The default refuses unpaced
/// sessions and sets no rate limit.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Policy {
    /// Largest gTFRC target rate or fixed rate accepted, bits/s.
    pub max_rate_bits_per_second: Option<f64>,
    /// Accept the unpaced rate control `none` (only for tests on a private link).
    pub allow_unpaced: bool,
}

impl Policy {
    /// Accepts everything valid (tests).
    pub fn permissive() -> Policy {
        Policy {
            max_rate_bits_per_second: None,
            allow_unpaced: true,
        }
    }

    /// Why `descriptor` is refused, if it is.
    pub fn check(&self, descriptor: &Descriptor) -> Result<(), String> {
        descriptor.validate().map_err(|error| error.to_string())?;
        if descriptor.rate_control == RateControlKind::None && !self.allow_unpaced {
            return Err("rate_control \"none\" (unpaced) is not accepted by this peer".into());
        }
        if let Some(limit) = self.max_rate_bits_per_second {
            let asked = match descriptor.rate_control {
                RateControlKind::Gtfrc => descriptor.target_rate_bytes(),
                RateControlKind::Fixed => descriptor.fixed_rate_bytes(),
                _ => None,
            };
            if let Some(bytes) = asked {
                if bytes * 8.0 > limit {
                    return Err(format!(
                        "requested rate {:.0} bit/s is above this peer's limit of {limit:.0} bit/s",
                        bytes * 8.0
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Why a connection ended abnormally or could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    /// Nothing heard from the peer for the idle timeout.
    #[error("peer gone: nothing heard for {0:?}")]
    PeerGone(Duration),
    /// The listener refused the connection (e.g. the descriptor).
    #[error("connection refused: {0}")]
    Refused(String),
    /// No answer to the connection request.
    #[error("no answer to the connection request after {0} attempts")]
    HandshakeTimeout(u32),
    /// The peer reported an error.
    #[error("peer reported an error: {0}")]
    PeerError(String),
    /// The peer did not confirm the close.
    #[error("no answer to the close request")]
    CloseTimeout,
}

/// How a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// This side closed and the peer confirmed.
    Local,
    /// The peer closed, with its reason text.
    Peer(String),
    /// An error.
    Error(ConnectionError),
}

/// Something the application should know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The handshake completed.
    Connected,
    /// A descriptor change took effect (asked by this side when `by_peer` is false).
    Reconfigured {
        /// Id of the change.
        change_id: u32,
        /// True if the peer asked for it.
        by_peer: bool,
    },
    /// The peer refused a descriptor change; the old descriptor stays.
    ReconfigureRefused {
        /// Id of the change.
        change_id: u32,
        /// The peer's reason.
        reason: String,
    },
    /// The peer did not answer a descriptor change.
    ReconfigureTimedOut {
        /// Id of the change.
        change_id: u32,
    },
    /// The connection ended.
    Closed(CloseReason),
}

/// Connection state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Handshake in progress (client side).
    Connecting,
    /// Data may flow.
    Established,
    /// Draining before or after a CLOSE.
    Closing,
    /// Over.
    Closed,
}

/// Options of one message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageOptions {
    /// Deadline relative to `send`, overriding the stream's.
    pub deadline: Option<Duration>,
}

/// Why `send` refused a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The stream is not in the descriptor.
    #[error("stream {0} is not in the session descriptor")]
    UnknownStream(u16),
    /// Larger than the descriptor's `max_message_size`.
    #[error("message of {size} bytes exceeds max_message_size = {max}")]
    TooLarge {
        /// Message size.
        size: usize,
        /// Limit.
        max: u32,
    },
    /// The send buffer is full.
    #[error("send buffer full ({buffered} of {limit} bytes in use)")]
    BufferFull {
        /// Bytes in use.
        buffered: u64,
        /// Limit.
        limit: u64,
    },
    /// The connection is closing or closed.
    #[error("connection is closed")]
    Closed,
}

/// Why `reconfigure` refused a change locally.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReconfigureError {
    /// The new descriptor is invalid or an impossible change.
    #[error("{0}")]
    Invalid(String),
    /// A change is already waiting for the peer's answer.
    #[error("change {0} is still waiting for the peer's answer")]
    Pending(u32),
    /// Not established.
    #[error("connection is not established")]
    NotEstablished,
}

/// A whole message delivered to the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Stream id.
    pub stream: u16,
    /// Number within its ordering domain.
    pub number: u32,
    /// Contents.
    pub data: Vec<u8>,
    /// When it became complete at this end.
    pub completed_at: Instant,
}

/// Per-stream counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StreamStats {
    /// Messages accepted by `send`.
    pub messages_sent: u64,
    /// Message bytes sent for the first time.
    pub bytes_sent: u64,
    /// Fragments retransmitted.
    pub fragments_retransmitted: u64,
    /// Messages acknowledged by the peer.
    pub messages_acked: u64,
    /// Messages given up by reliability (not retransmitted), not counting late ones.
    pub messages_abandoned: u64,
    /// Messages dropped at the sender because their deadline passed while bytes of them waited.
    pub messages_late_at_sender: u64,
    /// Messages delivered to the application.
    pub messages_delivered: u64,
    /// Bytes delivered.
    pub bytes_delivered: u64,
    /// Messages complete only after their deadline, dropped at the receiver.
    pub messages_late_at_receiver: u64,
    /// Messages still incomplete at their deadline, dropped at the receiver.
    pub messages_expired_incomplete: u64,
}

/// Connection counters and state.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ConnectionStats {
    /// Datagrams sent (all types).
    pub packets_sent: u64,
    /// Bytes sent (all types).
    pub bytes_sent: u64,
    /// DATA packets sent.
    pub data_packets_sent: u64,
    /// DATA packets declared lost.
    pub data_packets_lost: u64,
    /// Datagrams received and accepted.
    pub packets_received: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Datagrams dropped as malformed or out of place.
    pub malformed_received: u64,
    /// Duplicate DATA packets or fragments.
    pub duplicates_received: u64,
    /// Ordered messages skipped because the sender resolved them without this end receiving
    /// them.
    pub messages_missing: u64,
    /// Keep-alives sent.
    pub keepalives_sent: u64,
    /// Smoothed RTT from acknowledgements.
    #[serde(skip)]
    pub rtt: Option<Duration>,
    /// Allowed sending rate, bytes/s (`None` = unpaced).
    pub sending_rate: Option<f64>,
    /// TFRC loss event rate p reported by the peer (0 without TFRC).
    pub loss_event_rate: f64,
    /// Rate control in use.
    pub rate_control: Option<RateControlKind>,
    /// Rate-control epoch (changes when the rate control is replaced).
    pub epoch: u16,
    /// Per-stream counters.
    pub streams: BTreeMap<u16, StreamStats>,
}

impl ConnectionStats {
    /// Sum of the per-stream counters.
    pub fn total(&self) -> StreamStats {
        let mut total = StreamStats::default();
        for stream in self.streams.values() {
            total.messages_sent += stream.messages_sent;
            total.bytes_sent += stream.bytes_sent;
            total.fragments_retransmitted += stream.fragments_retransmitted;
            total.messages_acked += stream.messages_acked;
            total.messages_abandoned += stream.messages_abandoned;
            total.messages_late_at_sender += stream.messages_late_at_sender;
            total.messages_delivered += stream.messages_delivered;
            total.bytes_delivered += stream.bytes_delivered;
            total.messages_late_at_receiver += stream.messages_late_at_receiver;
            total.messages_expired_incomplete += stream.messages_expired_incomplete;
        }
        total
    }
}

#[derive(Debug)]
struct OutMessage {
    stream: u16,
    data: Vec<u8>,
    deadline: Option<Instant>,
    /// First-transmission progress.
    sent_offset: u32,
    /// Offsets of acknowledged pieces and their total.
    acked_pieces: BTreeSet<u32>,
    acked_bytes: u32,
    /// Pieces waiting in a retransmission queue.
    queued_retransmissions: u32,
}

impl OutMessage {
    fn len(&self) -> u32 {
        self.data.len() as u32
    }

    fn bytes_waiting(&self) -> bool {
        self.sent_offset < self.len()
            || (self.len() == 0 && self.sent_offset == 0 && self.acked_pieces.is_empty())
            || self.queued_retransmissions > 0
    }
}

#[derive(Debug)]
struct DomainOut {
    ordered: bool,
    next_number: u32,
    messages: BTreeMap<u32, OutMessage>,
    forward_acked: u32,
    forward_sent: u32,
    /// One past the highest abandoned message number.
    abandoned_until: u32,
}

impl DomainOut {
    fn forward_point(&self) -> u32 {
        self.messages
            .keys()
            .next()
            .copied()
            .unwrap_or(self.next_number)
    }
}

#[derive(Debug, Clone, Copy)]
struct Piece {
    domain: u16,
    message: u32,
    offset: u32,
    length: u32,
    /// Transmissions so far (0 for a piece not yet sent).
    transmissions: u32,
}

#[derive(Debug)]
struct StreamOut {
    descriptor: StreamDescriptor,
    mechanisms: StreamMechanisms,
    domain: u16,
    ordered: bool,
    /// Messages with unsent bytes, in order.
    new_messages: VecDeque<(u16, u32)>,
    retransmissions: VecDeque<Piece>,
}

#[derive(Debug, Clone, Copy)]
enum SentFrame {
    Piece(Piece),
    Forward { domain: u16, forward: u32 },
}

#[derive(Debug)]
struct SentPacket {
    sent_at: Instant,
    frames: Vec<SentFrame>,
}

#[derive(Debug)]
struct Partial {
    stream: u16,
    data: Vec<u8>,
    pieces: BTreeMap<u32, u32>,
    received: u32,
    deadline: u64,
}

#[derive(Debug)]
struct Complete {
    message: Message,
    deadline: u64,
}

#[derive(Debug)]
struct DomainIn {
    ordered: bool,
    partials: BTreeMap<u32, Partial>,
    order: Box<dyn OrderBuffer<Complete>>,
}

#[derive(Debug)]
struct Request {
    packet: Vec<u8>,
    next_at: Instant,
    attempts: u32,
}

#[derive(Debug)]
struct PendingChange {
    change_id: u32,
    descriptor: Descriptor,
    request: Request,
}

/// An ETP connection (either end).
#[derive(Debug)]
pub struct Connection {
    connection_id: u32,
    client_tag: u32,
    is_client: bool,
    state: State,
    handshake: Option<Request>,
    descriptor: Descriptor,
    policy: Policy,
    rng: ChaCha8Rng,
    created_at: Instant,
    // Send half.
    rate: Box<dyn RateControl>,
    epoch: u16,
    streams: BTreeMap<u16, StreamOut>,
    domains_out: BTreeMap<u16, DomainOut>,
    scheduler: Box<dyn Scheduler>,
    deadlines: BTreeSet<(Instant, u16, u32)>,
    next_packet_number: u64,
    sent: BTreeMap<u64, SentPacket>,
    largest_acked: Option<u64>,
    smoothed_rtt: Option<Duration>,
    latest_rtt: Option<Duration>,
    min_rtt: Option<Duration>,
    buffered_bytes: u64,
    payload_scratch: Vec<u8>,
    // Receive half.
    received: VecDeque<(u64, u64)>,
    largest_received: Option<(u64, Instant)>,
    unacked_data_packets: u32,
    ack_timer: Option<Instant>,
    ack_now: bool,
    tfrc_receiver: Option<(u16, tfrc_proto::Receiver)>,
    pending_feedback: Option<[u8; tfrc_proto::wire::FEEDBACK_LEN]>,
    clock_offset: Option<i128>,
    peer_min_rtt: Duration,
    domains_in: BTreeMap<u16, DomainIn>,
    reassembly_bytes: usize,
    delivered: VecDeque<Message>,
    // Control.
    control: VecDeque<Vec<u8>>,
    pending_change: Option<PendingChange>,
    next_change_id: u32,
    peer_change: Option<(u32, bool, String)>,
    close_request: Option<Request>,
    close_wanted: bool,
    last_sent_at: Instant,
    last_received_at: Instant,
    events: VecDeque<Event>,
    close_reason: Option<CloseReason>,
    stats: ConnectionStats,
}

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

/// TFRC's s for a descriptor's datagram size: what is left for frames once the ETP and TFRC
/// headers are counted (RFC 5348 §3.1: s excludes transport headers; TFRC puts its own header
/// on top of s).
fn tfrc_packet_size(descriptor: &Descriptor) -> u32 {
    descriptor
        .packet_size
        .saturating_sub((wire::DATA_HEADER_LEN + tfrc_proto::wire::DATA_HEADER_LEN) as u32)
        .max(1)
}

fn reason_bytes(text: &str) -> Vec<u8> {
    let mut end = text.len().min(wire::MAX_REASON_LEN);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.as_bytes()[..end].to_vec()
}

fn encode(repr: &Repr<'_>) -> Vec<u8> {
    let mut buffer = vec![0u8; repr.buffer_len()];
    let length = repr.emit(&mut buffer).unwrap_or(0);
    buffer.truncate(length);
    buffer
}

impl Connection {
    fn new(
        now: Instant,
        descriptor: Descriptor,
        connection_id: u32,
        seed: u64,
        is_client: bool,
        policy: Policy,
    ) -> Result<Connection, String> {
        descriptor.validate().map_err(|error| error.to_string())?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let nonce = rng.gen();
        let rate = rate::build(
            descriptor.rate_control,
            descriptor.target_rate_bytes(),
            descriptor.fixed_rate_bytes(),
            tfrc_packet_size(&descriptor),
            connection_id,
            nonce,
            now,
        )?;
        let scheduler = mechanisms::scheduler_for(descriptor.scheduler);
        let mut connection = Connection {
            connection_id,
            client_tag: rng.gen(),
            is_client,
            state: if is_client {
                State::Connecting
            } else {
                State::Established
            },
            handshake: None,
            descriptor: descriptor.clone(),
            policy,
            rng,
            created_at: now,
            rate,
            epoch: 0,
            streams: BTreeMap::new(),
            domains_out: BTreeMap::new(),
            scheduler,
            deadlines: BTreeSet::new(),
            next_packet_number: 0,
            sent: BTreeMap::new(),
            largest_acked: None,
            smoothed_rtt: None,
            latest_rtt: None,
            min_rtt: None,
            buffered_bytes: 0,
            payload_scratch: Vec::new(),
            received: VecDeque::new(),
            largest_received: None,
            unacked_data_packets: 0,
            ack_timer: None,
            ack_now: false,
            tfrc_receiver: None,
            pending_feedback: None,
            clock_offset: None,
            peer_min_rtt: Duration::ZERO,
            domains_in: BTreeMap::new(),
            reassembly_bytes: 0,
            delivered: VecDeque::new(),
            control: VecDeque::new(),
            pending_change: None,
            next_change_id: 1,
            peer_change: None,
            close_request: None,
            close_wanted: false,
            last_sent_at: now,
            last_received_at: now,
            events: VecDeque::new(),
            close_reason: None,
            stats: ConnectionStats::default(),
        };
        connection.apply_streams(&descriptor);
        Ok(connection)
    }

    /// Starts a connection to a listener: the INIT goes out at the first `poll_transmit`.
    /// `connection_id` and `seed` should be random (the UDP driver draws them from the OS).
    pub fn connect(
        now: Instant,
        descriptor: Descriptor,
        connection_id: u32,
        seed: u64,
    ) -> Result<Connection, String> {
        let mut connection = Connection::new(
            now,
            descriptor,
            connection_id,
            seed,
            true,
            Policy::permissive(),
        )?;
        let init = encode(&Repr::Init {
            connection_id,
            client_tag: connection.client_tag,
            descriptor: connection.descriptor.to_json().as_bytes(),
        });
        connection.handshake = Some(Request {
            packet: init,
            next_at: now,
            attempts: 0,
        });
        Ok(connection)
    }

    /// The listener's side, created once the cookie proved the peer's address.
    pub(crate) fn accept(
        now: Instant,
        descriptor: Descriptor,
        connection_id: u32,
        client_tag: u32,
        seed: u64,
        policy: Policy,
        handshake_rtt: Option<Duration>,
    ) -> Result<Connection, String> {
        let mut connection = Connection::new(now, descriptor, connection_id, seed, false, policy)?;
        connection.client_tag = client_tag;
        if let Some(rtt) = handshake_rtt {
            connection.note_handshake_rtt(rtt);
        }
        connection
            .control
            .push_back(encode(&Repr::CookieAck { connection_id }));
        connection.events.push_back(Event::Connected);
        Ok(connection)
    }

    /// A first RTT sample from the handshake: it arms the loss timers and the deadline mapping
    /// before any data is acknowledged.
    fn note_handshake_rtt(&mut self, rtt: Duration) {
        let rtt = rtt.max(Duration::from_micros(1));
        self.min_rtt = Some(rtt);
        self.latest_rtt = Some(rtt);
        self.smoothed_rtt = Some(rtt);
    }

    /// The connection id.
    pub fn connection_id(&self) -> u32 {
        self.connection_id
    }

    /// The state.
    pub fn state(&self) -> State {
        self.state
    }

    /// True once closed.
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// How the connection ended, once closed.
    pub fn close_reason(&self) -> Option<&CloseReason> {
        self.close_reason.as_ref()
    }

    /// The descriptor in force.
    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The next whole message received.
    pub fn recv(&mut self) -> Option<Message> {
        self.delivered.pop_front()
    }

    /// Messages waiting in `recv`.
    pub fn pending_messages(&self) -> usize {
        self.delivered.len()
    }

    /// Bytes of messages not yet acknowledged or abandoned.
    pub fn buffered_bytes(&self) -> u64 {
        self.buffered_bytes
    }

    /// Counters and current state.
    pub fn stats(&self) -> ConnectionStats {
        let mut stats = self.stats.clone();
        stats.rtt = self.smoothed_rtt;
        stats.sending_rate = self.rate.sending_rate();
        stats.loss_event_rate = self.rate.tfrc_state().map_or(0.0, |state| state.p);
        stats.rate_control = Some(self.rate.kind());
        stats.epoch = self.epoch;
        stats
    }

    fn stream_stats(&mut self, stream: u16) -> &mut StreamStats {
        self.stats.streams.entry(stream).or_default()
    }

    // ----- application API -----

    /// Queues a message on `stream`. Messages may be queued while connecting.
    pub fn send(
        &mut self,
        now: Instant,
        stream: u16,
        data: Vec<u8>,
        options: MessageOptions,
    ) -> Result<(), SendError> {
        if matches!(self.state, State::Closing | State::Closed) || self.close_wanted {
            return Err(SendError::Closed);
        }
        let max = self.descriptor.max_message_size;
        if data.len() > max as usize {
            return Err(SendError::TooLarge {
                size: data.len(),
                max,
            });
        }
        let limit = self.descriptor.send_buffer;
        if self.buffered_bytes + data.len() as u64 > limit {
            return Err(SendError::BufferFull {
                buffered: self.buffered_bytes,
                limit,
            });
        }
        let out = self
            .streams
            .get_mut(&stream)
            .ok_or(SendError::UnknownStream(stream))?;
        let deadline = out.mechanisms.time.deadline(now, options.deadline);
        let (domain_id, ordered) = (out.domain, out.ordered);
        let domain = self
            .domains_out
            .entry(domain_id)
            .or_insert_with(|| DomainOut {
                ordered,
                next_number: 0,
                messages: BTreeMap::new(),
                forward_acked: 0,
                forward_sent: 0,
                abandoned_until: 0,
            });
        let number = domain.next_number;
        domain.next_number += 1;
        let length = data.len() as u64;
        domain.messages.insert(
            number,
            OutMessage {
                stream,
                data,
                deadline,
                sent_offset: 0,
                acked_pieces: BTreeSet::new(),
                acked_bytes: 0,
                queued_retransmissions: 0,
            },
        );
        out.new_messages.push_back((domain_id, number));
        if let Some(deadline) = deadline {
            self.deadlines.insert((deadline, domain_id, number));
        }
        self.buffered_bytes += length;
        self.stream_stats(stream).messages_sent += 1;
        Ok(())
    }

    /// Asks the peer to switch to `descriptor`; it takes effect at both ends when the peer
    /// accepts ([`Event::Reconfigured`]), without reconnecting.
    pub fn reconfigure(
        &mut self,
        now: Instant,
        descriptor: Descriptor,
    ) -> Result<u32, ReconfigureError> {
        if self.state != State::Established {
            return Err(ReconfigureError::NotEstablished);
        }
        if let Some(pending) = &self.pending_change {
            return Err(ReconfigureError::Pending(pending.change_id));
        }
        descriptor
            .check_change_from(&self.descriptor)
            .map_err(|error| ReconfigureError::Invalid(error.to_string()))?;
        let change_id = self.next_change_id;
        self.next_change_id += 1;
        let packet = encode(&Repr::Reconfigure {
            connection_id: self.connection_id,
            change_id,
            descriptor: descriptor.to_json().as_bytes(),
        });
        self.pending_change = Some(PendingChange {
            change_id,
            descriptor,
            request: Request {
                packet,
                next_at: now,
                attempts: 0,
            },
        });
        Ok(change_id)
    }

    /// Closes gracefully: messages already queued on reliable streams are still delivered, then
    /// CLOSE is sent and the peer's confirmation awaited.
    pub fn close(&mut self, now: Instant) {
        match self.state {
            State::Closed | State::Closing => {}
            State::Connecting => self.finish(CloseReason::Local),
            State::Established => {
                self.close_wanted = true;
                self.maybe_start_close(now);
            }
        }
    }

    fn maybe_start_close(&mut self, now: Instant) {
        if self.close_wanted && self.state == State::Established && self.buffered_bytes == 0 {
            self.state = State::Closing;
            self.close_request = Some(Request {
                packet: encode(&Repr::Close {
                    connection_id: self.connection_id,
                    code: close_code::NORMAL,
                    reason: b"closed by the application",
                }),
                next_at: now,
                attempts: 0,
            });
        }
    }

    fn finish(&mut self, reason: CloseReason) {
        if self.state != State::Closed {
            self.state = State::Closed;
            self.close_reason = Some(reason.clone());
            self.events.push_back(Event::Closed(reason));
        }
    }

    // ----- descriptor application -----

    fn apply_streams(&mut self, descriptor: &Descriptor) {
        let mut kept = BTreeMap::new();
        for stream in &descriptor.streams {
            let (domain, ordered) = descriptor.ordering_domain(stream);
            let mut out = match self.streams.remove(&stream.id) {
                Some(existing) => existing,
                None => StreamOut {
                    descriptor: stream.clone(),
                    mechanisms: mechanisms::for_stream(stream),
                    domain,
                    ordered,
                    new_messages: VecDeque::new(),
                    retransmissions: VecDeque::new(),
                },
            };
            out.descriptor = stream.clone();
            out.mechanisms = mechanisms::for_stream(stream);
            if self
                .domains_out
                .get(&domain)
                .is_some_and(|existing| existing.ordered != ordered)
            {
                // A domain keeps its ordering for life; a stream changing ordering moves to its
                // own fresh domain id only if free, else keeps the old one.
                out.ordered = self.domains_out[&domain].ordered;
            } else {
                out.domain = domain;
                out.ordered = ordered;
            }
            self.stats.streams.entry(stream.id).or_default();
            kept.insert(stream.id, out);
        }
        // Streams no longer described: their waiting messages are abandoned.
        let removed: Vec<StreamOut> = core::mem::take(&mut self.streams).into_values().collect();
        self.streams = kept;
        for stream in removed {
            for (domain, number) in stream.new_messages {
                self.abandon(domain, number, false);
            }
            for piece in stream.retransmissions {
                self.abandon(piece.domain, piece.message, false);
            }
        }
    }

    fn apply_descriptor(&mut self, now: Instant, descriptor: Descriptor) -> Result<(), String> {
        let old = self.rate.kind();
        let new = descriptor.rate_control;
        let tfrc_family = |kind| matches!(kind, RateControlKind::Tfrc | RateControlKind::Gtfrc);
        let same_fixed = old == RateControlKind::Fixed
            && new == RateControlKind::Fixed
            && descriptor.fixed_rate_bytes() == self.descriptor.fixed_rate_bytes();
        if tfrc_family(old) && tfrc_family(new) {
            let target = (new == RateControlKind::Gtfrc)
                .then(|| descriptor.target_rate_bytes())
                .flatten();
            if !self.rate.set_target_rate(target) {
                return Err("the target rate was refused by the rate control".into());
            }
        } else if old != new || !same_fixed {
            let nonce = self.rng.gen();
            self.rate = rate::build(
                new,
                descriptor.target_rate_bytes(),
                descriptor.fixed_rate_bytes(),
                tfrc_packet_size(&descriptor),
                self.connection_id,
                nonce,
                now,
            )?;
            self.epoch = self.epoch.wrapping_add(1);
        }
        if descriptor.scheduler != self.descriptor.scheduler {
            self.scheduler = mechanisms::scheduler_for(descriptor.scheduler);
        }
        self.apply_streams(&descriptor);
        self.descriptor = descriptor;
        Ok(())
    }

    // ----- sender bookkeeping -----

    /// Gives up a message. `late` tells whether time control (rather than reliability) did.
    fn abandon(&mut self, domain_id: u16, number: u32, late: bool) {
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

    fn on_ack(&mut self, now: Instant, ack_delay: Duration, ranges: &[(u64, u64)]) {
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
                        }
                    }
                }
            }
        }
        self.detect_losses(now);
    }

    fn loss_timeout(&self) -> Duration {
        match self.smoothed_rtt {
            Some(rtt) => rtt * 2 + ACK_DELAY + Duration::from_millis(10),
            None => Duration::from_secs(1),
        }
    }

    fn detect_losses(&mut self, now: Instant) {
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

    fn loss_timer(&self) -> Option<Instant> {
        let timeout = self.loss_timeout();
        self.sent
            .values()
            .map(|packet| packet.sent_at + timeout)
            .min()
    }

    fn expire_deadlines(&mut self, now: Instant) {
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

    /// The next piece of `stream_id` that fits in `room` payload bytes.
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

    fn has_data_waiting(&self) -> bool {
        self.streams
            .values()
            .any(|stream| !stream.retransmissions.is_empty() || !stream.new_messages.is_empty())
    }

    fn forward_needed(&self) -> bool {
        self.domains_out.values().any(|domain| {
            domain.abandoned_until > domain.forward_sent
                && domain.forward_point() > domain.forward_sent
        })
    }

    /// Builds a DATA packet into `buffer` if the rate allows and there is something to send.
    fn build_data(&mut self, now: Instant, buffer: &mut [u8]) -> Option<usize> {
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
        let mut used = 0;
        let mut frames = Vec::new();
        let forwards: Vec<(u16, bool, u32)> = self
            .domains_out
            .iter()
            .filter(|(_, domain)| domain.forward_point() > domain.forward_acked)
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
        Some(wire::DATA_HEADER_LEN + tfrc_length)
    }

    // ----- receiver bookkeeping -----

    /// Records a received packet number; false for a duplicate.
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

    fn on_data(&mut self, now: Instant, packet_number: u64, epoch: u16, min_rtt: u32, tfrc: &[u8]) {
        if !self.record_received(packet_number) {
            self.stats.duplicates_received += 1;
            self.ack_now = true;
            return;
        }
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
        if min_rtt > 0 {
            self.peer_min_rtt = Duration::from_micros(u64::from(min_rtt));
        }
        let Ok(inner) = tfrc_proto::wire::Packet::new_checked(tfrc) else {
            return;
        };
        let offset = i128::from(now.as_nanos()) - i128::from(inner.timestamp());
        self.clock_offset = Some(self.clock_offset.map_or(offset, |old| old.min(offset)));
        // TFRC receiver of the current rate-control epoch.
        let current = self.tfrc_receiver.as_ref().map(|(epoch, _)| *epoch);
        let newer =
            current.is_none_or(|current| current != epoch && epoch.wrapping_sub(current) < 0x8000);
        if newer {
            let config = tfrc_proto::Config {
                packet_size: tfrc_packet_size(&self.descriptor),
                ..tfrc_proto::Config::default()
            };
            if let Ok(receiver) = tfrc_proto::Receiver::new(config) {
                self.tfrc_receiver = Some((epoch, receiver));
            }
        }
        if let Some((receiver_epoch, receiver)) = &mut self.tfrc_receiver {
            if *receiver_epoch == epoch {
                let _ = receiver.handle_packet(now, tfrc);
            }
        }
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

    fn receiver_deadline_timer(&self) -> Option<Instant> {
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

    fn expire_receiver(&mut self, now: Instant) {
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

    // ----- packets in -----

    /// Handles one datagram from the peer. Malformed or foreign datagrams are counted and
    /// dropped.
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) {
        let Ok(repr) = Repr::parse(bytes) else {
            self.stats.malformed_received += 1;
            return;
        };
        if repr.connection_id() != self.connection_id || self.state == State::Closed {
            self.stats.malformed_received += 1;
            return;
        }
        self.stats.packets_received += 1;
        self.stats.bytes_received += bytes.len() as u64;
        self.last_received_at = now;
        let from_established_peer = matches!(
            repr,
            Repr::Data { .. } | Repr::Ack { .. } | Repr::Ping { .. } | Repr::Reconfigure { .. }
        );
        if from_established_peer && self.state == State::Connecting && self.handshake_cookie_sent()
        {
            // The COOKIE_ACK was lost but the peer is established.
            self.establish();
        }
        if self.state == State::Connecting
            && !matches!(
                repr,
                Repr::InitAck { .. } | Repr::CookieAck { .. } | Repr::Error { .. }
            )
        {
            return;
        }
        match repr {
            Repr::InitAck {
                client_tag, cookie, ..
            } => {
                self.on_init_ack(now, client_tag, cookie);
            }
            Repr::CookieAck { .. } => self.establish(),
            Repr::CookieEcho { .. } => {
                if !self.is_client {
                    let ack = encode(&Repr::CookieAck {
                        connection_id: self.connection_id,
                    });
                    self.control.push_back(ack);
                }
            }
            Repr::Data {
                packet_number,
                epoch,
                min_rtt_micros,
                tfrc,
                ..
            } => {
                if matches!(self.state, State::Established | State::Closing) {
                    self.on_data(now, packet_number, epoch, min_rtt_micros, tfrc);
                }
            }
            Repr::Ack {
                epoch,
                ack_delay_micros,
                feedback,
                ranges,
                ..
            } => {
                if let Some(feedback) = feedback {
                    if epoch == self.epoch {
                        self.rate.handle_feedback(now, feedback);
                    }
                }
                let pairs: Vec<(u64, u64)> = ranges.iter().collect();
                self.on_ack(
                    now,
                    Duration::from_micros(u64::from(ack_delay_micros)),
                    &pairs,
                );
                self.maybe_start_close(now);
            }
            Repr::Ping { .. } => self.ack_now = true,
            Repr::Close { reason, .. } => {
                self.control.push_back(encode(&Repr::CloseAck {
                    connection_id: self.connection_id,
                }));
                let text = String::from_utf8_lossy(reason).into_owned();
                self.finish(CloseReason::Peer(text));
            }
            Repr::CloseAck { .. } => {
                if self.state == State::Closing {
                    self.finish(CloseReason::Local);
                }
            }
            Repr::Error { code, reason, .. } => {
                let text = String::from_utf8_lossy(reason).into_owned();
                let error =
                    if self.state == State::Connecting || code == close_code::DESCRIPTOR_REFUSED {
                        ConnectionError::Refused(text)
                    } else {
                        ConnectionError::PeerError(text)
                    };
                self.finish(CloseReason::Error(error));
            }
            Repr::Reconfigure {
                change_id,
                descriptor,
                ..
            } => self.on_reconfigure(now, change_id, descriptor),
            Repr::ReconfigureAck {
                change_id,
                accepted,
                reason,
                ..
            } => self.on_reconfigure_ack(now, change_id, accepted, reason),
            Repr::Init { .. } => {
                self.stats.malformed_received += 1;
            }
        }
    }

    fn handshake_cookie_sent(&self) -> bool {
        self.handshake.as_ref().is_some_and(|request| {
            Repr::parse(&request.packet).is_ok_and(|repr| matches!(repr, Repr::CookieEcho { .. }))
        })
    }

    fn on_init_ack(&mut self, now: Instant, client_tag: u32, cookie: [u8; COOKIE_LEN]) {
        if self.state != State::Connecting || client_tag != self.client_tag {
            self.stats.malformed_received += 1;
            return;
        }
        if let Some(request) = &self.handshake {
            // Only an unambiguous sample: the first INIT answered.
            if request.attempts == 1 {
                let sent_at = request.next_at - HANDSHAKE_INTERVAL;
                self.note_handshake_rtt(now - sent_at);
            }
        }
        let echo = encode(&Repr::CookieEcho {
            connection_id: self.connection_id,
            cookie,
            client_tag: self.client_tag,
            descriptor: self.descriptor.to_json().as_bytes(),
        });
        self.handshake = Some(Request {
            packet: echo,
            next_at: now,
            attempts: 0,
        });
    }

    fn establish(&mut self) {
        if self.state == State::Connecting {
            self.state = State::Established;
            self.handshake = None;
            self.events.push_back(Event::Connected);
        }
    }

    fn on_reconfigure(&mut self, now: Instant, change_id: u32, descriptor: &[u8]) {
        if let Some((last, accepted, reason)) = &self.peer_change {
            if change_id <= *last {
                if change_id == *last {
                    let answer = encode(&Repr::ReconfigureAck {
                        connection_id: self.connection_id,
                        change_id,
                        accepted: *accepted,
                        reason: reason.as_bytes(),
                    });
                    self.control.push_back(answer);
                }
                return;
            }
        }
        let outcome = Descriptor::from_json_bytes(descriptor)
            .map_err(|error| error.to_string())
            .and_then(|new| {
                new.check_change_from(&self.descriptor)
                    .map_err(|error| error.to_string())?;
                self.policy.check(&new)?;
                Ok(new)
            })
            .and_then(|new| self.apply_descriptor(now, new));
        let (accepted, reason) = match outcome {
            Ok(()) => {
                self.events.push_back(Event::Reconfigured {
                    change_id,
                    by_peer: true,
                });
                (true, String::new())
            }
            Err(reason) => (false, format!("descriptor refused: {reason}")),
        };
        let answer = encode(&Repr::ReconfigureAck {
            connection_id: self.connection_id,
            change_id,
            accepted,
            reason: &reason_bytes(&reason),
        });
        self.control.push_back(answer);
        self.peer_change = Some((change_id, accepted, reason));
    }

    fn on_reconfigure_ack(&mut self, now: Instant, change_id: u32, accepted: bool, reason: &[u8]) {
        let Some(pending) = self.pending_change.take() else {
            return;
        };
        if pending.change_id != change_id {
            self.pending_change = Some(pending);
            return;
        }
        if accepted {
            match self.apply_descriptor(now, pending.descriptor) {
                Ok(()) => self.events.push_back(Event::Reconfigured {
                    change_id,
                    by_peer: false,
                }),
                Err(reason) => self.events.push_back(Event::ReconfigureRefused {
                    change_id,
                    reason: format!("accepted by the peer but not applicable here: {reason}"),
                }),
            }
        } else {
            self.events.push_back(Event::ReconfigureRefused {
                change_id,
                reason: String::from_utf8_lossy(reason).into_owned(),
            });
        }
    }

    // ----- timers -----

    /// The earliest time [`Connection::handle_timeout`] (or a send) is due.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.state == State::Closed {
            return None;
        }
        let mut times: Vec<Instant> = Vec::new();
        if let Some(request) = &self.handshake {
            times.push(request.next_at);
        }
        if let Some(pending) = &self.pending_change {
            times.push(pending.request.next_at);
        }
        if let Some(request) = &self.close_request {
            times.push(request.next_at);
        }
        if !self.control.is_empty()
            || (self.state != State::Connecting
                && (self.ack_now || self.pending_feedback.is_some()))
        {
            times.push(self.created_at.min(self.last_sent_at));
        }
        times.extend(self.ack_timer);
        if let Some((_, receiver)) = &self.tfrc_receiver {
            times.extend(receiver.poll_timeout());
        }
        if self.state != State::Connecting {
            times.push(self.last_received_at + self.descriptor.idle_timeout_duration());
            times.push(self.last_sent_at + self.descriptor.keepalive_interval());
        }
        if self.state == State::Established {
            times.extend(self.rate.timer());
            if self.has_data_waiting() || self.forward_needed() {
                times.push(self.rate.next_send_time().unwrap_or(self.last_sent_at));
            }
            times.extend(self.loss_timer());
            times.extend(self.deadlines.first().map(|entry| entry.0));
        }
        times.extend(self.receiver_deadline_timer());
        times.into_iter().min()
    }

    /// Fires every due timer.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.state == State::Closed {
            return;
        }
        if self.state != State::Connecting {
            let idle = self.descriptor.idle_timeout_duration();
            if now >= self.last_received_at + idle {
                self.finish(CloseReason::Error(ConnectionError::PeerGone(idle)));
                return;
            }
        }
        if let Some(request) = &self.handshake {
            if request.attempts >= HANDSHAKE_ATTEMPTS && now >= request.next_at {
                self.finish(CloseReason::Error(ConnectionError::HandshakeTimeout(
                    HANDSHAKE_ATTEMPTS,
                )));
                return;
            }
        }
        if let Some(request) = &self.close_request {
            if request.attempts >= REQUEST_ATTEMPTS && now >= request.next_at {
                self.finish(CloseReason::Error(ConnectionError::CloseTimeout));
                return;
            }
        }
        if let Some(pending) = &self.pending_change {
            if pending.request.attempts >= REQUEST_ATTEMPTS && now >= pending.request.next_at {
                let change_id = pending.change_id;
                self.pending_change = None;
                self.events
                    .push_back(Event::ReconfigureTimedOut { change_id });
            }
        }
        if self.ack_timer.is_some_and(|due| now >= due) {
            self.ack_timer = None;
            if self.unacked_data_packets > 0 {
                self.ack_now = true;
            }
        }
        if let Some((_, receiver)) = &mut self.tfrc_receiver {
            receiver.handle_timeout(now);
        }
        self.rate.handle_timeout(now);
        if self.state == State::Established {
            self.detect_losses(now);
            self.expire_deadlines(now);
            self.maybe_start_close(now);
        }
        self.expire_receiver(now);
    }

    // ----- packets out -----

    fn request_interval(&self) -> Duration {
        self.smoothed_rtt.map_or(Duration::from_millis(500), |rtt| {
            (rtt * 2).max(Duration::from_millis(200))
        })
    }

    fn take_request(
        request: &mut Option<Request>,
        now: Instant,
        interval: Duration,
    ) -> Option<Vec<u8>> {
        let request = request.as_mut()?;
        if now < request.next_at {
            return None;
        }
        request.attempts += 1;
        request.next_at = now + interval;
        Some(request.packet.clone())
    }

    fn out(&mut self, now: Instant, packet: &[u8], buffer: &mut [u8]) -> Option<usize> {
        if buffer.len() < packet.len() {
            return None;
        }
        buffer[..packet.len()].copy_from_slice(packet);
        self.sent_bytes(now, packet.len());
        Some(packet.len())
    }

    fn sent_bytes(&mut self, now: Instant, length: usize) {
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += length as u64;
        self.last_sent_at = now;
    }

    fn build_ack(&mut self, now: Instant, buffer: &mut [u8]) -> Option<usize> {
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
            feedback: feedback.as_ref().map(|bytes| &bytes[..]),
            ranges: wire::AckRanges::Pairs(&ranges),
        };
        let length = repr.emit(buffer).ok()?;
        self.ack_now = false;
        self.ack_timer = None;
        self.unacked_data_packets = 0;
        self.sent_bytes(now, length);
        Some(length)
    }

    /// Writes the next datagram for the peer into `buffer` (at least the descriptor's
    /// `packet_size` bytes) and returns its length; `None` when nothing is due.
    pub fn poll_transmit(&mut self, now: Instant, buffer: &mut [u8]) -> Option<usize> {
        if let Some(packet) = self.control.pop_front() {
            return self.out(now, &packet, buffer);
        }
        if self.state == State::Closed {
            return None;
        }
        if self.state == State::Connecting {
            let packet = Connection::take_request(&mut self.handshake, now, HANDSHAKE_INTERVAL)?;
            return self.out(now, &packet, buffer);
        }
        let interval = self.request_interval();
        if let Some(packet) = Connection::take_request(&mut self.close_request, now, interval) {
            return self.out(now, &packet, buffer);
        }
        if let Some(pending) = &mut self.pending_change {
            let mut request = Some(core::mem::replace(
                &mut pending.request,
                Request {
                    packet: Vec::new(),
                    next_at: now,
                    attempts: 0,
                },
            ));
            let packet = Connection::take_request(&mut request, now, interval);
            if let (Some(pending), Some(request)) = (&mut self.pending_change, request) {
                pending.request = request;
            }
            if let Some(packet) = packet {
                return self.out(now, &packet, buffer);
            }
        }
        if let Some((_, receiver)) = &mut self.tfrc_receiver {
            let mut feedback = [0u8; tfrc_proto::wire::FEEDBACK_LEN];
            if receiver.poll_transmit(now, &mut feedback).is_some() {
                self.pending_feedback = Some(feedback);
            }
        }
        if self.ack_now || self.pending_feedback.is_some() {
            return self.build_ack(now, buffer);
        }
        if self.state == State::Established {
            if let Some(length) = self.build_data(now, buffer) {
                self.sent_bytes(now, length);
                return Some(length);
            }
        }
        if now >= self.last_sent_at + self.descriptor.keepalive_interval() {
            self.stats.keepalives_sent += 1;
            let ping = encode(&Repr::Ping {
                connection_id: self.connection_id,
            });
            return self.out(now, &ping, buffer);
        }
        None
    }
}
