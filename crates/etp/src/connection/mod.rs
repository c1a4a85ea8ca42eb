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
//!
//! # Layout
//! One [`Connection`] holds the whole state; its methods are split by phase:
//! - this module: the public types, the constructors and the public API, which dispatches
//!   datagrams and timers to the phases and assembles the outgoing datagrams;
//! - `handshake`: set-up (INIT / INIT_ACK / COOKIE_ECHO / COOKIE_ACK), descriptor changes
//!   (RECONFIGURE) and their application, and close;
//! - `send`: the sender: messages cut into pieces, DATA packets under the rate control,
//!   acknowledgements, loss detection, retransmission, sender deadlines and FORWARD points;
//! - `receive`: the receiver: received packet numbers and ACKs, reassembly, ordering,
//!   receiver deadlines and delivery.

mod handshake;
mod receive;
mod send;

use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tfrc_proto::Instant;

use crate::descriptor::{Descriptor, DescriptorError, RateControlKind};
use crate::mechanisms::{self, Scheduler};
use crate::rate::{self, RateControl};
use crate::wire::{self, Repr};

use self::receive::DomainIn;
use self::send::{DomainOut, OutMessage, SentPacket, StreamOut};

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
    pub fn check(&self, descriptor: &Descriptor) -> Result<(), PolicyError> {
        descriptor.validate()?;
        if descriptor.rate_control == RateControlKind::None && !self.allow_unpaced {
            return Err(PolicyError::Unpaced);
        }
        if let Some(limit) = self.max_rate_bits_per_second {
            let asked = match descriptor.rate_control {
                RateControlKind::Gtfrc => descriptor.target_rate_bytes(),
                RateControlKind::Fixed => descriptor.fixed_rate_bytes(),
                _ => None,
            };
            if let Some(bytes) = asked {
                if bytes * 8.0 > limit {
                    return Err(PolicyError::AboveLimit {
                        asked: bytes * 8.0,
                        limit,
                    });
                }
            }
        }
        Ok(())
    }
}

/// Why a [`Policy`] refuses a descriptor; the text goes to the peer in the refusal.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// The descriptor itself is invalid.
    #[error(transparent)]
    Invalid(#[from] DescriptorError),
    /// Unpaced sending (`rate_control = "none"`) without [`Policy::allow_unpaced`].
    #[error("rate_control \"none\" (unpaced) is not accepted by this peer")]
    Unpaced,
    /// A gTFRC target rate or fixed rate above [`Policy::max_rate_bits_per_second`].
    #[error("requested rate {asked:.0} bit/s is above this peer's limit of {limit:.0} bit/s")]
    AboveLimit {
        /// The rate asked for, bits/s.
        asked: f64,
        /// The policy's limit, bits/s.
        limit: f64,
    },
}

/// Why a [`Connection`] could not be built from its descriptor.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SetupError {
    /// The descriptor is invalid.
    #[error(transparent)]
    Descriptor(#[from] DescriptorError),
    /// Its rate control could not be built.
    #[error(transparent)]
    RateControl(#[from] rate::RateSetupError),
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

/// A control packet (INIT, COOKIE_ECHO, CLOSE or RECONFIGURE) repeated until it is answered:
/// [`Connection::poll_transmit`] sends it when due and [`Connection::handle_timeout`] gives up
/// after a number of attempts.
#[derive(Debug)]
struct Request {
    /// The encoded datagram, sent again unchanged.
    packet: Vec<u8>,
    /// When it is next due.
    next_at: Instant,
    /// Times sent so far.
    attempts: u32,
}

/// A descriptor change asked by this side, waiting for the peer's RECONFIGURE_ACK.
#[derive(Debug)]
struct PendingChange {
    /// Id of the change, echoed by the answer.
    change_id: u32,
    /// The descriptor that takes effect if the peer accepts.
    descriptor: Descriptor,
    /// The RECONFIGURE request.
    request: Request,
}

/// An ETP connection (either end).
///
/// The state is grouped by phase; the methods of each phase live in a submodule of
/// `connection` (`handshake`, `send`, `receive`), this module holding the public API.
#[derive(Debug)]
pub struct Connection {
    /// Id carried by every packet of the connection, chosen by the client.
    connection_id: u32,
    /// The client's random tag, echoed by INIT_ACK and COOKIE_ECHO to tie them to its INIT.
    client_tag: u32,
    /// True at the end that called [`Connection::connect`].
    is_client: bool,
    /// Where the connection is in its life.
    state: State,
    /// The INIT or COOKIE_ECHO repeated while connecting (client only).
    handshake: Option<Request>,
    /// The descriptor in force, for both directions.
    descriptor: Descriptor,
    /// What a descriptor change asked by the peer must satisfy.
    policy: Policy,
    /// Seeded randomness (client tag, rate-control nonces), so that the machine stays
    /// deterministic.
    rng: ChaCha8Rng,
    /// When the connection was created: control packets and ACKs are due from then on.
    created_at: Instant,
    // Send half.
    /// Rate control of this end's DATA packets.
    rate: Box<dyn RateControl>,
    /// Rate-control epoch, bumped when the rate control is replaced so that feedback meant for
    /// the old one is ignored.
    epoch: u16,
    /// Sending state of each stream, by stream id.
    streams: BTreeMap<u16, StreamOut>,
    /// Unresolved messages and numbering, by ordering domain.
    domains_out: BTreeMap<u16, DomainOut>,
    /// Chooses the stream that fills the next packet.
    scheduler: Box<dyn Scheduler>,
    /// Sender deadlines of the messages still held: (deadline, domain, number), earliest first.
    deadlines: BTreeSet<(Instant, u16, u32)>,
    /// Packet number of the next DATA packet.
    next_packet_number: u64,
    /// DATA packets in flight (neither acknowledged nor declared lost), by packet number.
    sent: BTreeMap<u64, SentPacket>,
    /// Largest packet number the peer acknowledged.
    largest_acked: Option<u64>,
    /// Smoothed RTT (gain 1/8).
    smoothed_rtt: Option<Duration>,
    /// Latest RTT sample.
    latest_rtt: Option<Duration>,
    /// Smallest RTT sample, sent to the peer for its deadline mapping.
    min_rtt: Option<Duration>,
    /// Bytes of messages not yet acknowledged or abandoned (bounded by `send_buffer`).
    buffered_bytes: u64,
    /// Reused buffer for the frames of a DATA packet.
    payload_scratch: Vec<u8>,
    // Receive half.
    /// Received DATA packet numbers as inclusive ranges, oldest first.
    received: VecDeque<(u64, u64)>,
    /// Largest DATA packet number received and when (for the ACK delay).
    largest_received: Option<(u64, Instant)>,
    /// DATA packets received since the last ACK.
    unacked_data_packets: u32,
    /// When a delayed ACK is due.
    ack_timer: Option<Instant>,
    /// An ACK goes out at the next `poll_transmit`.
    ack_now: bool,
    /// TFRC receiver of the peer's current rate-control epoch.
    tfrc_receiver: Option<(u16, tfrc_proto::Receiver)>,
    /// TFRC feedback waiting to ride on the next ACK.
    pending_feedback: Option<([u8; tfrc_proto::wire::MAX_FEEDBACK_LEN], usize)>,
    /// Smallest (local arrival - sender timestamp) seen, ns: maps the peer's clock to ours.
    clock_offset: Option<i128>,
    /// The peer's minimum RTT, from its DATA headers (zero until known).
    peer_min_rtt: Duration,
    /// Messages being reassembled or waiting for their turn, by ordering domain.
    domains_in: BTreeMap<u16, DomainIn>,
    /// Bytes held in `domains_in` (bounded by [`REASSEMBLY_LIMIT`]).
    reassembly_bytes: usize,
    /// Whole messages waiting for [`Connection::recv`].
    delivered: VecDeque<Message>,
    // Control.
    /// Control packets sent once each, before anything else.
    control: VecDeque<Vec<u8>>,
    /// The descriptor change this side asked for, until answered.
    pending_change: Option<PendingChange>,
    /// Id of the next change this side asks for.
    next_change_id: u32,
    /// The peer's last change id and this side's answer (accepted, reason), to answer a
    /// repeated request alike.
    peer_change: Option<(u32, bool, String)>,
    /// The CLOSE repeated until CLOSE_ACK.
    close_request: Option<Request>,
    /// The application asked to close: CLOSE goes out once the send buffer is drained.
    close_wanted: bool,
    /// When a datagram was last sent (keep-alives).
    last_sent_at: Instant,
    /// When a datagram was last accepted (idle timeout).
    last_received_at: Instant,
    /// Events waiting for [`Connection::poll_event`].
    events: VecDeque<Event>,
    /// How the connection ended, once closed.
    close_reason: Option<CloseReason>,
    /// Counters.
    stats: ConnectionStats,
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

/// Message bytes a DATA packet of a `packet_size`-byte datagram carries in one fragment: the
/// datagram less the ETP and TFRC data headers and a fragment header.
pub fn fragment_room(packet_size: u32) -> usize {
    (packet_size as usize).saturating_sub(
        wire::DATA_HEADER_LEN + tfrc_proto::wire::DATA_HEADER_LEN + wire::FRAGMENT_HEADER_LEN,
    )
}

/// The TFRC rate (bytes/s of packets of TFRC's s, as X and gTFRC's `target_rate` count) that
/// carries `message_rate` bytes/s of messages in full packets of one fragment each, with
/// `packet_size`-byte datagrams: `message_rate · s / fragment_room`. An application that needs
/// a floor of message bytes (a codec's lowest rate) asks gTFRC for this much.
pub fn tfrc_rate_carrying(packet_size: u32, message_rate: f64) -> f64 {
    let s = packet_size
        .saturating_sub((wire::DATA_HEADER_LEN + tfrc_proto::wire::DATA_HEADER_LEN) as u32);
    message_rate * f64::from(s) / fragment_room(packet_size).max(1) as f64
}

/// Encodes a control packet into a buffer of its exact length (empty if emitting fails).
fn encode(repr: &Repr<'_>) -> Vec<u8> {
    let mut buffer = vec![0u8; repr.buffer_len()];
    let length = repr.emit(&mut buffer).unwrap_or(0);
    buffer.truncate(length);
    buffer
}

impl Connection {
    /// Builds either end: validates `descriptor`, seeds the randomness from `seed`, builds the
    /// rate control and the streams. A client starts [`State::Connecting`], the listener's side
    /// established.
    fn new(
        now: Instant,
        descriptor: Descriptor,
        connection_id: u32,
        seed: u64,
        is_client: bool,
        policy: Policy,
    ) -> Result<Connection, SetupError> {
        descriptor.validate()?;
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
    ) -> Result<Connection, SetupError> {
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
    ) -> Result<Connection, SetupError> {
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
    /// Message bytes per second the rate control lets out now, in full packets carrying one
    /// fragment each (`None` when unpaced). Under TFRC that is one packet per t_ipi: X, G =
    /// max(g, X) under gTFRC, at most one packet per 10 ms under TFRC-SP. A rate-adaptive codec
    /// follows it (RFC 8867 §4.3).
    pub fn sendable_rate(&self) -> Option<f64> {
        self.rate
            .payload_rate(fragment_room(self.descriptor.packet_size))
    }

    /// The counters of `stream`, created on first use (kept by the send and receive phases).
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
        self.dispatch(now, repr);
    }

    /// Acts on a datagram for this connection, accepted in its state.
    fn dispatch(&mut self, now: Instant, repr: Repr<'_>) {
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
                // The feedback of an older epoch measured an older rate control.
                if let Some(feedback) = feedback.filter(|_| epoch == self.epoch) {
                    self.rate.handle_feedback(now, feedback);
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
            Repr::Error { code, reason, .. } => self.on_error(code, reason),
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

    /// ERROR from the peer: the connection ends, refused (during set-up or for its
    /// descriptor) or on the peer's error.
    fn on_error(&mut self, code: u16, reason: &[u8]) {
        let text = String::from_utf8_lossy(reason).into_owned();
        let error = if self.state == State::Connecting || code == close_code::DESCRIPTOR_REFUSED {
            ConnectionError::Refused(text)
        } else {
            ConnectionError::PeerError(text)
        };
        self.finish(CloseReason::Error(error));
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
    /// Interval between attempts of a CLOSE or RECONFIGURE request: twice the smoothed RTT, at
    /// least 200 ms (500 ms before any RTT sample).
    fn request_interval(&self) -> Duration {
        self.smoothed_rtt.map_or(Duration::from_millis(500), |rtt| {
            (rtt * 2).max(Duration::from_millis(200))
        })
    }

    /// The packet of `request` if it is due, counting the attempt and scheduling the next one
    /// `interval` later.
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

    /// Copies an encoded packet into `buffer` and counts it as sent; `None` if it does not fit.
    fn out(&mut self, now: Instant, packet: &[u8], buffer: &mut [u8]) -> Option<usize> {
        if buffer.len() < packet.len() {
            return None;
        }
        buffer[..packet.len()].copy_from_slice(packet);
        self.sent_bytes(now, packet.len());
        Some(packet.len())
    }

    /// Counts a datagram of `length` bytes as sent now (statistics and the keep-alive clock).
    fn sent_bytes(&mut self, now: Instant, length: usize) {
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += length as u64;
        self.last_sent_at = now;
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
            let mut feedback = [0u8; tfrc_proto::wire::MAX_FEEDBACK_LEN];
            if let Some(length) = receiver.poll_transmit(now, &mut feedback) {
                self.pending_feedback = Some((feedback, length));
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
