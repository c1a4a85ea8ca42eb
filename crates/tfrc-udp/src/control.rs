//! What this driver adds on the wire around the core's packets.
//!
//! 1. **Flow options in every data payload.** Everything in a [`Config`] that the receiver acts
//!    on (feedbacks per RTT, Veno, history discounting, the profile) and the segment size are
//!    chosen at the sender, so every data packet's payload starts with a 20-byte [`FlowOptions`]
//!    block. The receiver builds a flow's
//!    `Config` from the first packet it gets (any packet will do, so losing the first one does not
//!    matter). A payload without a valid block is counted as malformed and dropped.
//! 0. **Return routability before any state.** Before its first data packet the sender sends
//!    [`Hello`] (every 200 ms, doubling, until answered or its connect timeout); the receiver
//!    answers with a [`Cookie`]: a keyed hash of the sender's address, session id, session
//!    token and the current minute, computed and checked without keeping anything, as QUIC's
//!    Retry token and ETP's cookie. The sender puts the cookie in every data packet's flow
//!    options, and the receiver opens a flow only for a data packet whose cookie it made for
//!    that source address in the last one to two minutes. A stranger that does not get the
//!    receiver's answers (a spoofed source) cannot take a slot. The HELLO is as long as the
//!    answer, so the receiver never sends more than it got.
//! 2. **End of session.** Out of band, in two control datagrams that share the core's common
//!    header (version 1, a kind byte, the session id) but use kinds the core does not know:
//!    [`EndOfSession`] (sender → receiver: "I am done; here is what I sent") and
//!    [`EndAcknowledgement`] (receiver → sender: "here is what I received"). Both carry the
//!    session nonce, so a stray or spoofed one is counted and ignored like spoofed feedback. The
//!    sender repeats its END until acknowledged or a second has passed; the receiver also expires
//!    flows that stay idle (a sender that crashed never says goodbye).
//!
//! The code follows `tfrc_proto::wire` (smoltcp's style): the byte ranges of the layout below
//! are named once (`mod field`) and used by both directions; [`ControlDatagram`] is a view
//! whose [`ControlDatagram::check_len`] checks version, kind and length once; each datagram's
//! representation ([`Hello`], [`Cookie`], [`EndOfSession`], [`EndAcknowledgement`],
//! [`ReverseRequest`], [`FlowOptions`]) parses to a value or a [`ControlError`] that says why
//! not. A fixed-size datagram is emitted into an array of exactly its length, so emitting
//! cannot fail; the flow options, written at the start of a longer payload, refuse a buffer
//! too short for them.
//!
//! ```text
//! hello (28 bytes)
//!   0 version (1) · 1 kind 0x12 · 2..4 flags (0) · 4..8 session id · 8..12 nonce (session
//!   token in the upper half) · 12..28 zero (padding: the answer is no longer than the request)
//! cookie (20 bytes)
//!   0 version (1) · 1 kind 0x13 · 2..4 flags (0) · 4..8 session id · 8..12 nonce · 12..20 cookie
//! flow options (start of every data payload, 32 bytes, big-endian)
//!   0..4   magic "TFUO"
//!   4      options version (4)
//!   5      flags: bit 0 = rtt_ref present, bit 1 = veno present, bit 2 = history
//!          discounting, bit 3 = ns-2 profile, bit 4 = ns-2 useHeaders_, bit 5 = a fixed
//!          number of feedbacks per RTT present, bit 6 = TFRC-SP (RFC 4828); bit 7 reserved (0)
//!   6..8   feedbacks per RTT (when bit 5 is set)
//!   8..12  rtt_ref in microseconds
//!   12..16 veno beta in thousandths of a packet
//!   16..20 veno alpha in thousandths
//!   20..28 the receiver's cookie (from its answer to the sender's hello)
//!   28..30 TFRC-SP's nominal segment size in bytes (when bit 6 is set) · 30..32 zero
//! end of session (36 bytes)
//!   0 version (1) · 1 kind 0x10 · 2..4 flags (0) · 4..8 session id · 8..12 nonce
//!   12..20 data packets sent · 20..28 bytes sent (headers included) · 28..36 duration in ns
//! reverse request (36 bytes; `tfrc send -R`, iperf3's reverse mode: "send to me")
//!   0 version (1) · 1 kind 0x14 · 2..4 flags (0) · 4..8 request id · 8..12 packet size s
//!   12..20 duration in ns · 20..28 rate cap in bytes/s (0: none) · 28..36 gTFRC target rate
//!   in bytes/s (0: none)
//! end acknowledgement (56 bytes)
//!   0 version (1) · 1 kind 0x11 · 2..4 flags (0) · 4..8 session id · 8..12 nonce
//!   12..20 data packets received · 20..28 bytes received · 28..36 packets declared lost
//!   36..44 loss events · 44..48 loss event rate p (fraction of 2^32, as in feedback)
//!   48..56 duplicate packets · 56..60 interarrival jitter in microseconds (RFC 3550 §6.4.1)
//! ```

use core::ops::Range;
use core::time::Duration;

use tfrc_proto::wire;
use tfrc_proto::{Config, Profile, SmallPackets, Veno};

/// Byte ranges of the fields (the layout above): the one place that both `parse` and `emit`
/// take them from.
mod field {
    use core::ops::Range;

    /// Version byte, shared with the core's packets.
    pub const VERSION: usize = 0;
    /// Kind byte ([`super::ControlKind`]).
    pub const KIND: usize = 1;
    /// Flags: 0 in every control datagram.
    pub const FLAGS: Range<usize> = 2..4;
    /// Session id of the datagrams of a session.
    pub const SESSION: Range<usize> = 4..8;
    /// Session nonce of the datagrams of a session.
    pub const NONCE: Range<usize> = 8..12;

    pub mod hello {
        use core::ops::Range;
        /// Zero: the hello is as long as the answer.
        pub const PADDING: Range<usize> = 12..28;
        pub const END: usize = 28;
    }

    pub mod cookie {
        use core::ops::Range;
        pub const COOKIE: Range<usize> = 12..20;
        pub const END: usize = 20;
    }

    pub mod end {
        use core::ops::Range;
        pub const PACKETS_SENT: Range<usize> = 12..20;
        pub const BYTES_SENT: Range<usize> = 20..28;
        pub const DURATION: Range<usize> = 28..36;
        pub const END: usize = 36;
    }

    pub mod end_ack {
        use core::ops::Range;
        pub const PACKETS_RECEIVED: Range<usize> = 12..20;
        pub const BYTES_RECEIVED: Range<usize> = 20..28;
        pub const PACKETS_LOST: Range<usize> = 28..36;
        pub const LOSS_EVENTS: Range<usize> = 36..44;
        pub const LOSS_RATE: Range<usize> = 44..48;
        pub const DUPLICATES: Range<usize> = 48..56;
        pub const JITTER: Range<usize> = 56..60;
        pub const END: usize = 60;
    }

    /// A reverse request is not part of a session: where the others carry the session id and
    /// nonce, it carries the request id and the segment size.
    pub mod reverse {
        use core::ops::Range;
        pub const REQUEST_ID: Range<usize> = super::SESSION;
        pub const PACKET_SIZE: Range<usize> = super::NONCE;
        pub const DURATION: Range<usize> = 12..20;
        pub const MAX_RATE: Range<usize> = 20..28;
        pub const TARGET_RATE: Range<usize> = 28..36;
        pub const END: usize = 36;
    }

    /// The flow-options block at the start of every data payload.
    pub mod options {
        use core::ops::Range;
        pub const MAGIC: Range<usize> = 0..4;
        pub const VERSION: usize = 4;
        pub const FLAGS: usize = 5;
        pub const FEEDBACKS_PER_RTT: Range<usize> = 6..8;
        pub const RTT_REF: Range<usize> = 8..12;
        pub const VENO_BETA: Range<usize> = 12..16;
        pub const VENO_ALPHA: Range<usize> = 16..20;
        pub const COOKIE: Range<usize> = 20..28;
        pub const NOMINAL_SEGMENT_SIZE: Range<usize> = 28..30;
        pub const END: usize = 32;
    }
}

/// Length of the flow-options block at the start of every data payload.
pub const FLOW_OPTIONS_LEN: usize = field::options::END;
const OPTIONS_MAGIC: &[u8; 4] = b"TFUO";
/// Version 2 added the history-discounting, profile and feedbacks-per-RTT flags; version 3 the
/// cookie; version 4 TFRC-SP and its nominal segment size (the block grew from 28 to 32 bytes).
/// A receiver refuses a block of another version rather than silently running without what it
/// lacks.
const OPTIONS_VERSION: u8 = 4;
const FLAG_RTT_REF: u8 = 1;
const FLAG_VENO: u8 = 1 << 1;
const FLAG_HISTORY_DISCOUNTING: u8 = 1 << 2;
const FLAG_NS2_PROFILE: u8 = 1 << 3;
const FLAG_NS2_USE_HEADERS: u8 = 1 << 4;
const FLAG_FEEDBACKS_PER_RTT: u8 = 1 << 5;
const FLAG_SMALL_PACKETS: u8 = 1 << 6;
const KNOWN_FLAGS: u8 = (1 << 7) - 1;

/// Length of a hello (padded to at least the cookie's length).
pub const HELLO_LEN: usize = field::hello::END;
/// Length of a cookie datagram.
pub const COOKIE_LEN: usize = field::cookie::END;
const _: () = assert!(HELLO_LEN >= COOKIE_LEN);
/// Length of an end-of-session datagram.
pub const END_LEN: usize = field::end::END;
/// Length of an end acknowledgement.
pub const END_ACK_LEN: usize = field::end_ack::END;
/// Length of a reverse request.
pub const REVERSE_LEN: usize = field::reverse::END;
/// Highest rate a reverse request may ask for, bytes/s (8 Pb/s, far beyond any link; below
/// 2^53, so that it is exact as the `f64` the sender takes).
pub const MAX_REQUESTED_RATE: u64 = 1_000_000_000_000_000;
/// Largest segment size a reverse request may ask for: the largest UDP payload over IPv4
/// (65,507 bytes) less the data header.
pub const MAX_SEGMENT_SIZE: u32 = 65_475;
/// Shortest and longest flow a reverse request may ask for.
const REVERSE_DURATIONS: core::ops::RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(3600);

/// What a control datagram is: its kind byte, one the core does not use (it has 1, data, and
/// 3, feedback).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlKind {
    /// [`EndOfSession`], kind 0x10.
    End,
    /// [`EndAcknowledgement`], kind 0x11.
    EndAck,
    /// [`Hello`], kind 0x12.
    Hello,
    /// [`Cookie`], kind 0x13.
    Cookie,
    /// [`ReverseRequest`], kind 0x14.
    Reverse,
}

impl ControlKind {
    /// Every kind, in the order of their codes.
    pub const ALL: [ControlKind; 5] = [
        ControlKind::End,
        ControlKind::EndAck,
        ControlKind::Hello,
        ControlKind::Cookie,
        ControlKind::Reverse,
    ];

    /// The kind byte on the wire.
    pub const fn code(self) -> u8 {
        match self {
            ControlKind::End => 0x10,
            ControlKind::EndAck => 0x11,
            ControlKind::Hello => 0x12,
            ControlKind::Cookie => 0x13,
            ControlKind::Reverse => 0x14,
        }
    }

    /// The kind whose byte this is, if any.
    pub fn from_code(code: u8) -> Option<ControlKind> {
        ControlKind::ALL
            .into_iter()
            .find(|kind| kind.code() == code)
    }

    /// Length of a datagram of this kind.
    pub const fn datagram_len(self) -> usize {
        match self {
            ControlKind::End => END_LEN,
            ControlKind::EndAck => END_ACK_LEN,
            ControlKind::Hello => HELLO_LEN,
            ControlKind::Cookie => COOKIE_LEN,
            ControlKind::Reverse => REVERSE_LEN,
        }
    }

    /// Its name, as the module's documentation writes it.
    pub const fn name(self) -> &'static str {
        match self {
            ControlKind::End => "end of session",
            ControlKind::EndAck => "end acknowledgement",
            ControlKind::Hello => "hello",
            ControlKind::Cookie => "cookie",
            ControlKind::Reverse => "reverse request",
        }
    }
}

impl core::fmt::Display for ControlKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why bytes are not the control datagram (or flow-options block) asked for, or why a buffer
/// cannot hold one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// Fewer bytes than the datagram or block needs.
    #[error("{length} bytes where {needed} are needed")]
    TooShort {
        /// Bytes needed.
        needed: usize,
        /// Bytes there are.
        length: usize,
    },
    /// Not the version this driver speaks.
    #[error("version {0}, not {ours}", ours = wire::VERSION)]
    Version(u8),
    /// A kind byte that is no control datagram's.
    #[error("kind 0x{0:02x} is not a control datagram's")]
    UnknownKind(u8),
    /// A control datagram of another kind.
    #[error("a {found} where a {expected} was expected")]
    WrongKind {
        /// The kind asked for.
        expected: ControlKind,
        /// The kind the datagram is.
        found: ControlKind,
    },
    /// A reverse request for a segment size outside [`FLOW_OPTIONS_LEN`]..=[`MAX_SEGMENT_SIZE`].
    #[error(
        "a reverse request for {0}-byte segments (they must be {FLOW_OPTIONS_LEN} to \
         {MAX_SEGMENT_SIZE} bytes)"
    )]
    SegmentSize(u32),
    /// A reverse request for a flow shorter than 1 ms or longer than an hour.
    #[error("a reverse request for a flow of {0:?} (it must last 1 ms to 1 h)")]
    ReverseDuration(Duration),
    /// A reverse request for a rate above [`MAX_REQUESTED_RATE`].
    #[error("a reverse request for {0} bytes/s (at most {MAX_REQUESTED_RATE})")]
    RequestedRate(u64),
    /// A payload that does not start with the flow options' magic.
    #[error("no flow options: the payload starts {0:02x?}, not \"TFUO\"")]
    Magic([u8; 4]),
    /// Flow options of another version.
    #[error("flow options of version {0} (this driver speaks {OPTIONS_VERSION})")]
    OptionsVersion(u8),
    /// Flow options with a flag this version does not know.
    #[error("flow option flags 0x{0:02x} include bits this version does not know")]
    UnknownFlags(u8),
}

/// `Ok` if `bytes` holds `needed` bytes.
fn check_len(bytes: &[u8], needed: usize) -> Result<(), ControlError> {
    if bytes.len() < needed {
        return Err(ControlError::TooShort {
            needed,
            length: bytes.len(),
        });
    }
    Ok(())
}

/// The bytes of `range` as an array, for `from_be_bytes`.
fn array<const N: usize>(bytes: &[u8], range: Range<usize>) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[range]);
    out
}

/// A read (and, for `AsMut`, write) view of a control datagram, as [`wire::Packet`] is of the
/// core's packets: [`ControlDatagram::new_checked`] checks the version, the kind and the
/// length once, after which no accessor panics.
#[derive(Debug, Clone)]
pub struct ControlDatagram<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ControlDatagram<T> {
    /// Wraps a buffer without checking it: accessors may panic until
    /// [`ControlDatagram::check_len`] passes.
    pub const fn new_unchecked(buffer: T) -> ControlDatagram<T> {
        ControlDatagram { buffer }
    }

    /// Wraps a buffer and checks that it holds a whole control datagram of its kind.
    pub fn new_checked(buffer: T) -> Result<ControlDatagram<T>, ControlError> {
        let datagram = ControlDatagram::new_unchecked(buffer);
        datagram.check_len()?;
        Ok(datagram)
    }

    /// Wraps a buffer and checks that it holds a whole control datagram of kind `expected`.
    pub fn of_kind(buffer: T, expected: ControlKind) -> Result<ControlDatagram<T>, ControlError> {
        let datagram = ControlDatagram::new_unchecked(buffer);
        let found = datagram.check_header()?;
        if found != expected {
            return Err(ControlError::WrongKind { expected, found });
        }
        check_len(datagram.buffer.as_ref(), expected.datagram_len())?;
        Ok(datagram)
    }

    /// The kind, if the version is ours and the kind byte one of ours (the length unchecked).
    pub fn check_header(&self) -> Result<ControlKind, ControlError> {
        let data = self.buffer.as_ref();
        check_len(data, field::KIND + 1)?;
        if data[field::VERSION] != wire::VERSION {
            return Err(ControlError::Version(data[field::VERSION]));
        }
        let kind = data[field::KIND];
        ControlKind::from_code(kind).ok_or(ControlError::UnknownKind(kind))
    }

    /// Checks the version, the kind and that the buffer holds the whole datagram of that kind.
    /// After it succeeds no accessor panics.
    pub fn check_len(&self) -> Result<(), ControlError> {
        let kind = self.check_header()?;
        check_len(self.buffer.as_ref(), kind.datagram_len())
    }

    /// Consumes the view, returning the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Session id (a reverse request's request id).
    pub fn session_id(&self) -> u32 {
        self.u32_at(field::SESSION)
    }

    /// Session nonce (a reverse request's segment size).
    pub fn nonce(&self) -> u32 {
        self.u32_at(field::NONCE)
    }

    fn u32_at(&self, range: Range<usize>) -> u32 {
        u32::from_be_bytes(array(self.buffer.as_ref(), range))
    }

    fn u64_at(&self, range: Range<usize>) -> u64 {
        u64::from_be_bytes(array(self.buffer.as_ref(), range))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ControlDatagram<T> {
    fn put(&mut self, range: Range<usize>, bytes: &[u8]) {
        self.buffer.as_mut()[range].copy_from_slice(bytes);
    }

    /// Writes version, kind and (zero) flags.
    fn set_header(&mut self, kind: ControlKind) {
        let data = self.buffer.as_mut();
        data[field::VERSION] = wire::VERSION;
        data[field::KIND] = kind.code();
        data[field::FLAGS].fill(0);
    }

    /// Writes the header and the session id and nonce: what authenticates a control datagram.
    fn set_session(&mut self, kind: ControlKind, session_id: u32, nonce: u32) {
        self.set_header(kind);
        self.put(field::SESSION, &session_id.to_be_bytes());
        self.put(field::NONCE, &nonce.to_be_bytes());
    }
}

/// The kind of a datagram that looks like one of ours (version 1, a control kind), if any.
pub fn control_kind(bytes: &[u8]) -> Option<ControlKind> {
    ControlDatagram::new_unchecked(bytes).check_header().ok()
}

/// The receiver-side options a sender announces in its data payloads: every field of a
/// [`Config`] that the receiver acts on, so the receiver runs the configuration the sender was
/// given (`tfrc testbed run`, `tfrc send`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FlowOptions {
    /// Feedbacks per RTT: the receiver reports every RTT_ref (`Config::rtt_ref`).
    pub rtt_ref: Option<Duration>,
    /// A fixed number of feedbacks per RTT (`Config::feedbacks_per_rtt`, at most 65,535 here).
    pub feedbacks_per_rtt: Option<u16>,
    /// Veno loss differentiation at the receiver (`Config::veno`).
    pub veno: Option<Veno>,
    /// History discounting of old loss intervals, done by the receiver's loss history
    /// (`Config::history_discounting`, RFC 5348 §5.5).
    pub history_discounting: bool,
    /// Which reading of the protocol the receiver follows (`Config::profile`).
    pub profile: Profile,
    /// ns-2's `useHeaders_` (`Config::ns2_use_headers`); it decides whether s counts the header.
    pub ns2_use_headers: bool,
    /// TFRC-SP's nominal segment size (`Config::small_packets`): the receiver counts short loss
    /// intervals as RFC 4828 does and derives the first interval with this s. `None`: standard
    /// TFRC. (H, the header size, is the sender's alone.)
    pub small_packets_segment_size: Option<u16>,
    /// The receiver's cookie ([`Cookie`]), 0 before the sender has one.
    pub cookie: u64,
}

/// Why a configuration cannot be announced to the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FlowOptionsError {
    /// The options block carries the count in 16 bits.
    #[error("feedbacks_per_rtt = {0} cannot be announced to the receiver (at most 65535)")]
    FeedbacksPerRtt(u32),
    /// The options block carries TFRC-SP's nominal segment size in 16 bits.
    #[error("a TFRC-SP nominal segment size of {0} bytes cannot be announced (at most 65535)")]
    NominalSegmentSize(u32),
}

impl FlowOptions {
    /// The options of a configuration, or why the receiver could not be told them.
    pub fn from_config(config: &Config) -> Result<FlowOptions, FlowOptionsError> {
        let feedbacks_per_rtt = config
            .feedbacks_per_rtt
            .map(|count| u16::try_from(count).map_err(|_| FlowOptionsError::FeedbacksPerRtt(count)))
            .transpose()?;
        let small_packets_segment_size = config
            .small_packets
            .map(|small| {
                u16::try_from(small.nominal_segment_size)
                    .map_err(|_| FlowOptionsError::NominalSegmentSize(small.nominal_segment_size))
            })
            .transpose()?;
        Ok(FlowOptions {
            small_packets_segment_size,
            rtt_ref: config.rtt_ref,
            feedbacks_per_rtt,
            veno: config.veno,
            history_discounting: config.history_discounting,
            profile: config.profile,
            ns2_use_headers: config.ns2_use_headers,
            cookie: 0,
        })
    }

    /// The flags byte: which options are present and the boolean ones.
    fn flags(&self) -> u8 {
        [
            (self.rtt_ref.is_some(), FLAG_RTT_REF),
            (self.feedbacks_per_rtt.is_some(), FLAG_FEEDBACKS_PER_RTT),
            (self.veno.is_some(), FLAG_VENO),
            (self.history_discounting, FLAG_HISTORY_DISCOUNTING),
            (self.profile == Profile::Ns2, FLAG_NS2_PROFILE),
            (self.ns2_use_headers, FLAG_NS2_USE_HEADERS),
            (
                self.small_packets_segment_size.is_some(),
                FLAG_SMALL_PACKETS,
            ),
        ]
        .into_iter()
        .filter(|(set, _)| *set)
        .fold(0, |flags, (_, flag)| flags | flag)
    }

    /// Writes the block into the first [`FLOW_OPTIONS_LEN`] bytes of `buffer`, or says that
    /// `buffer` is too short (and writes nothing).
    pub fn emit(&self, buffer: &mut [u8]) -> Result<(), ControlError> {
        use field::options as at;
        check_len(buffer, FLOW_OPTIONS_LEN)?;
        let block = &mut buffer[..FLOW_OPTIONS_LEN];
        block.fill(0);
        block[at::MAGIC].copy_from_slice(OPTIONS_MAGIC);
        block[at::VERSION] = OPTIONS_VERSION;
        block[at::FLAGS] = self.flags();
        if let Some(count) = self.feedbacks_per_rtt {
            block[at::FEEDBACKS_PER_RTT].copy_from_slice(&count.to_be_bytes());
        }
        if let Some(rtt_ref) = self.rtt_ref {
            let micros = u32::try_from(rtt_ref.as_micros()).unwrap_or(u32::MAX);
            block[at::RTT_REF].copy_from_slice(&micros.to_be_bytes());
        }
        if let Some(veno) = self.veno {
            let thousandths =
                |value: f64| (value * 1000.0).round().clamp(0.0, u32::MAX as f64) as u32;
            block[at::VENO_BETA].copy_from_slice(&thousandths(veno.beta).to_be_bytes());
            block[at::VENO_ALPHA].copy_from_slice(&thousandths(veno.alpha).to_be_bytes());
        }
        block[at::COOKIE].copy_from_slice(&self.cookie.to_be_bytes());
        if let Some(nominal) = self.small_packets_segment_size {
            block[at::NOMINAL_SEGMENT_SIZE].copy_from_slice(&nominal.to_be_bytes());
        }
        Ok(())
    }

    /// Reads the block at the start of a data payload, or says why there is none: too short,
    /// another magic or version, or a flag this version does not know.
    pub fn parse(payload: &[u8]) -> Result<FlowOptions, ControlError> {
        use field::options as at;
        check_len(payload, FLOW_OPTIONS_LEN)?;
        let magic = array(payload, at::MAGIC);
        if &magic != OPTIONS_MAGIC {
            return Err(ControlError::Magic(magic));
        }
        if payload[at::VERSION] != OPTIONS_VERSION {
            return Err(ControlError::OptionsVersion(payload[at::VERSION]));
        }
        let flags = payload[at::FLAGS];
        if flags & !KNOWN_FLAGS != 0 {
            return Err(ControlError::UnknownFlags(flags));
        }
        let has = |flag: u8| flags & flag != 0;
        let word = |range| u32::from_be_bytes(array(payload, range));
        let half = |range| u16::from_be_bytes(array(payload, range));
        Ok(FlowOptions {
            rtt_ref: has(FLAG_RTT_REF).then(|| Duration::from_micros(u64::from(word(at::RTT_REF)))),
            feedbacks_per_rtt: has(FLAG_FEEDBACKS_PER_RTT).then(|| half(at::FEEDBACKS_PER_RTT)),
            veno: has(FLAG_VENO).then(|| Veno {
                beta: f64::from(word(at::VENO_BETA)) / 1000.0,
                alpha: f64::from(word(at::VENO_ALPHA)) / 1000.0,
            }),
            history_discounting: has(FLAG_HISTORY_DISCOUNTING),
            profile: if has(FLAG_NS2_PROFILE) {
                Profile::Ns2
            } else {
                Profile::Rfc5348
            },
            ns2_use_headers: has(FLAG_NS2_USE_HEADERS),
            small_packets_segment_size: has(FLAG_SMALL_PACKETS)
                .then(|| half(at::NOMINAL_SEGMENT_SIZE)),
            cookie: u64::from_be_bytes(array(payload, at::COOKIE)),
        })
    }

    /// The receiver's configuration for a flow whose first packet carried `payload_len` bytes
    /// of payload: these options and s = that payload (RFC 5348 §3.1), or the whole packet
    /// where the ns-2 profile counts the header inside s; validated (hostile values are
    /// refused).
    pub fn receiver_config(&self, payload_len: u32) -> Option<Config> {
        let mut config = Config {
            packet_size: payload_len,
            rtt_ref: self.rtt_ref,
            feedbacks_per_rtt: self.feedbacks_per_rtt.map(u32::from),
            veno: self.veno,
            history_discounting: self.history_discounting,
            profile: self.profile,
            ns2_use_headers: self.ns2_use_headers,
            small_packets: self.small_packets_segment_size.map(|nominal| SmallPackets {
                nominal_segment_size: u32::from(nominal),
                ..SmallPackets::default()
            }),
            ..Config::default()
        };
        let header = wire::DATA_HEADER_LEN - config.header_outside_s();
        config.packet_size = payload_len.checked_add(header as u32)?;
        config.validate().ok().map(|()| config)
    }
}

/// `tfrc send -R`'s request to a `tfrc recv`: send me a TFRC flow with these parameters. The
/// flow that answers is an ordinary one — its sender's HELLO must be answered from the
/// requesting address before any data leaves — so a request with a spoofed source address
/// draws a few HELLOs to that address (no longer than the request), never data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReverseRequest {
    /// Chosen by the client; the receiver starts one flow per (address, request id).
    pub request_id: u32,
    /// Segment size s in bytes (the TFRC payload).
    pub packet_size: u32,
    /// How long to send.
    pub duration: Duration,
    /// Application rate cap in bytes/s, if any.
    pub max_rate: Option<f64>,
    /// gTFRC target rate in bytes/s, if any.
    pub target_rate: Option<f64>,
}

impl ReverseRequest {
    /// Writes the datagram. Returns its length.
    pub fn emit(&self, buffer: &mut [u8; REVERSE_LEN]) -> usize {
        use field::reverse as at;
        let rate = |rate: Option<f64>| rate.map_or(0, |bytes| bytes.round() as u64);
        let nanos = u64::try_from(self.duration.as_nanos()).unwrap_or(u64::MAX);
        let mut datagram = ControlDatagram::new_unchecked(&mut buffer[..]);
        datagram.set_header(ControlKind::Reverse);
        datagram.put(at::REQUEST_ID, &self.request_id.to_be_bytes());
        datagram.put(at::PACKET_SIZE, &self.packet_size.to_be_bytes());
        datagram.put(at::DURATION, &nanos.to_be_bytes());
        datagram.put(at::MAX_RATE, &rate(self.max_rate).to_be_bytes());
        datagram.put(at::TARGET_RATE, &rate(self.target_rate).to_be_bytes());
        REVERSE_LEN
    }

    /// Parses the datagram, or says why it is not a well-formed request for a flow of a valid
    /// segment size ([`FLOW_OPTIONS_LEN`] to [`MAX_SEGMENT_SIZE`] bytes) lasting from 1 ms to
    /// one hour, with rates up to [`MAX_REQUESTED_RATE`].
    pub fn parse(bytes: &[u8]) -> Result<ReverseRequest, ControlError> {
        use field::reverse as at;
        let datagram = ControlDatagram::of_kind(bytes, ControlKind::Reverse)?;
        let rate = |range| match datagram.u64_at(range) {
            0 => Ok(None),
            too_high if too_high > MAX_REQUESTED_RATE => Err(ControlError::RequestedRate(too_high)),
            bytes_per_second => Ok(Some(bytes_per_second as f64)),
        };
        let max_rate = rate(at::MAX_RATE)?;
        let target_rate = rate(at::TARGET_RATE)?;
        let packet_size = datagram.u32_at(at::PACKET_SIZE);
        if !(FLOW_OPTIONS_LEN as u32..=MAX_SEGMENT_SIZE).contains(&packet_size) {
            return Err(ControlError::SegmentSize(packet_size));
        }
        let duration = Duration::from_nanos(datagram.u64_at(at::DURATION));
        if !REVERSE_DURATIONS.contains(&duration) {
            return Err(ControlError::ReverseDuration(duration));
        }
        Ok(ReverseRequest {
            request_id: datagram.u32_at(at::REQUEST_ID),
            packet_size,
            duration,
            max_rate,
            target_rate,
        })
    }
}

/// The sender's request for a cookie, sent before its first data packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// Session id.
    pub session_id: u32,
    /// Session nonce (the session token in the upper half).
    pub nonce: u32,
}

impl Hello {
    /// Writes the datagram. Returns its length.
    pub fn emit(&self, buffer: &mut [u8; HELLO_LEN]) -> usize {
        let mut datagram = ControlDatagram::new_unchecked(&mut buffer[..]);
        datagram.set_session(ControlKind::Hello, self.session_id, self.nonce);
        datagram.buffer[field::hello::PADDING].fill(0);
        HELLO_LEN
    }

    /// The answer to this hello: `cookie` for its session.
    pub fn answer(&self, cookie: u64) -> Cookie {
        Cookie {
            session_id: self.session_id,
            nonce: self.nonce,
            cookie,
        }
    }

    /// Parses the datagram, or says why it is not a well-formed hello (too short included: the
    /// answer must not be longer than the request).
    pub fn parse(bytes: &[u8]) -> Result<Hello, ControlError> {
        let datagram = ControlDatagram::of_kind(bytes, ControlKind::Hello)?;
        Ok(Hello {
            session_id: datagram.session_id(),
            nonce: datagram.nonce(),
        })
    }
}

/// The receiver's answer to a hello: the cookie the sender's data packets must carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cookie {
    /// Session id, as in the hello.
    pub session_id: u32,
    /// Session nonce, as in the hello.
    pub nonce: u32,
    /// The cookie.
    pub cookie: u64,
}

impl Cookie {
    /// Writes the datagram. Returns its length.
    pub fn emit(&self, buffer: &mut [u8; COOKIE_LEN]) -> usize {
        let mut datagram = ControlDatagram::new_unchecked(&mut buffer[..]);
        datagram.set_session(ControlKind::Cookie, self.session_id, self.nonce);
        datagram.put(field::cookie::COOKIE, &self.cookie.to_be_bytes());
        COOKIE_LEN
    }

    /// Parses the datagram, or says why it is not a well-formed cookie.
    pub fn parse(bytes: &[u8]) -> Result<Cookie, ControlError> {
        let datagram = ControlDatagram::of_kind(bytes, ControlKind::Cookie)?;
        Ok(Cookie {
            session_id: datagram.session_id(),
            nonce: datagram.nonce(),
            cookie: datagram.u64_at(field::cookie::COOKIE),
        })
    }
}

/// The receiver's stateless cookie maker: SipHash-1-3 under a key drawn when the receiver
/// starts, of the peer's address and port, the session id, the session token and the minute.
#[derive(Debug, Clone)]
pub struct CookieJar {
    key: (u64, u64),
}

/// How long one cookie period lasts; a cookie is accepted in its period and the next.
pub const COOKIE_PERIOD: Duration = Duration::from_secs(60);

impl CookieJar {
    /// A jar with the given key (draw it from a random source).
    pub fn new(key: (u64, u64)) -> CookieJar {
        CookieJar { key }
    }

    /// The cookie for `peer`'s session at `elapsed` since the receiver started.
    pub fn make(
        &self,
        peer: std::net::SocketAddr,
        session_id: u32,
        nonce: u32,
        elapsed: Duration,
    ) -> u64 {
        self.at_period(
            peer,
            session_id,
            nonce,
            elapsed.as_secs() / COOKIE_PERIOD.as_secs(),
        )
    }

    /// Whether `cookie` was made for `peer`'s session in this period or the previous one.
    pub fn check(
        &self,
        cookie: u64,
        peer: std::net::SocketAddr,
        session_id: u32,
        nonce: u32,
        elapsed: Duration,
    ) -> bool {
        let period = elapsed.as_secs() / COOKIE_PERIOD.as_secs();
        [Some(period), period.checked_sub(1)]
            .into_iter()
            .flatten()
            .any(|period| self.at_period(peer, session_id, nonce, period) == cookie)
    }

    fn at_period(
        &self,
        peer: std::net::SocketAddr,
        session_id: u32,
        nonce: u32,
        period: u64,
    ) -> u64 {
        use core::hash::Hasher;
        let mut hasher = siphasher::sip::SipHasher13::new_with_keys(self.key.0, self.key.1);
        match peer.ip() {
            std::net::IpAddr::V4(ip) => hasher.write(&ip.octets()),
            std::net::IpAddr::V6(ip) => hasher.write(&ip.octets()),
        }
        hasher.write_u16(peer.port());
        hasher.write_u32(session_id);
        hasher.write_u32(nonce & 0xffff_0000);
        hasher.write_u64(period);
        hasher.finish()
    }
}

/// The sender's goodbye, with its totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndOfSession {
    /// Session id.
    pub session_id: u32,
    /// Session nonce.
    pub nonce: u32,
    /// Data packets sent.
    pub packets_sent: u64,
    /// Bytes sent, headers included.
    pub bytes_sent: u64,
    /// Time from the first packet to the end, nanoseconds.
    pub duration_nanos: u64,
}

impl EndOfSession {
    /// Writes the datagram. Returns its length.
    pub fn emit(&self, buffer: &mut [u8; END_LEN]) -> usize {
        use field::end as at;
        let mut datagram = ControlDatagram::new_unchecked(&mut buffer[..]);
        datagram.set_session(ControlKind::End, self.session_id, self.nonce);
        datagram.put(at::PACKETS_SENT, &self.packets_sent.to_be_bytes());
        datagram.put(at::BYTES_SENT, &self.bytes_sent.to_be_bytes());
        datagram.put(at::DURATION, &self.duration_nanos.to_be_bytes());
        END_LEN
    }

    /// Parses the datagram, or says why it is not a well-formed end of session.
    pub fn parse(bytes: &[u8]) -> Result<EndOfSession, ControlError> {
        use field::end as at;
        let datagram = ControlDatagram::of_kind(bytes, ControlKind::End)?;
        Ok(EndOfSession {
            session_id: datagram.session_id(),
            nonce: datagram.nonce(),
            packets_sent: datagram.u64_at(at::PACKETS_SENT),
            bytes_sent: datagram.u64_at(at::BYTES_SENT),
            duration_nanos: datagram.u64_at(at::DURATION),
        })
    }
}

/// The receiver's answer to an end of session, with its totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndAcknowledgement {
    /// Session id.
    pub session_id: u32,
    /// Session nonce.
    pub nonce: u32,
    /// Data packets received (duplicates excluded).
    pub packets_received: u64,
    /// Bytes received, headers included.
    pub bytes_received: u64,
    /// Packets the receiver declared lost.
    pub packets_lost: u64,
    /// Loss events.
    pub loss_events: u64,
    /// Loss event rate p at the end, as a fraction of 2^32.
    pub loss_event_rate_raw: u32,
    /// Duplicate packets.
    pub duplicates: u64,
    /// Interarrival jitter (RFC 3550 §6.4.1) of the data packets, microseconds (saturating).
    pub jitter_micros: u32,
}

impl EndAcknowledgement {
    /// Writes the datagram. Returns its length.
    pub fn emit(&self, buffer: &mut [u8; END_ACK_LEN]) -> usize {
        use field::end_ack as at;
        let mut datagram = ControlDatagram::new_unchecked(&mut buffer[..]);
        datagram.set_session(ControlKind::EndAck, self.session_id, self.nonce);
        datagram.put(at::PACKETS_RECEIVED, &self.packets_received.to_be_bytes());
        datagram.put(at::BYTES_RECEIVED, &self.bytes_received.to_be_bytes());
        datagram.put(at::PACKETS_LOST, &self.packets_lost.to_be_bytes());
        datagram.put(at::LOSS_EVENTS, &self.loss_events.to_be_bytes());
        datagram.put(at::LOSS_RATE, &self.loss_event_rate_raw.to_be_bytes());
        datagram.put(at::DUPLICATES, &self.duplicates.to_be_bytes());
        datagram.put(at::JITTER, &self.jitter_micros.to_be_bytes());
        END_ACK_LEN
    }

    /// Parses the datagram, or says why it is not a well-formed end acknowledgement.
    pub fn parse(bytes: &[u8]) -> Result<EndAcknowledgement, ControlError> {
        use field::end_ack as at;
        let datagram = ControlDatagram::of_kind(bytes, ControlKind::EndAck)?;
        Ok(EndAcknowledgement {
            session_id: datagram.session_id(),
            nonce: datagram.nonce(),
            packets_received: datagram.u64_at(at::PACKETS_RECEIVED),
            bytes_received: datagram.u64_at(at::BYTES_RECEIVED),
            packets_lost: datagram.u64_at(at::PACKETS_LOST),
            loss_events: datagram.u64_at(at::LOSS_EVENTS),
            loss_event_rate_raw: datagram.u32_at(at::LOSS_RATE),
            duplicates: datagram.u64_at(at::DUPLICATES),
            jitter_micros: datagram.u32_at(at::JITTER),
        })
    }

    /// p as a number in [0, 1].
    pub fn loss_event_rate(&self) -> f64 {
        wire::decode_loss_event_rate(self.loss_event_rate_raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes on the wire, field by field (emitted into buffers full of 0xff, so that every
    /// reserved or padding byte is seen written as 0).
    const HELLO_BYTES: [u8; HELLO_LEN] = [
        1, 0x12, 0, 0, // version, kind, flags
        1, 2, 3, 4, // session id
        0xab, 0xcd, 0, 5, // nonce
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // padding
    ];
    const COOKIE_BYTES: [u8; COOKIE_LEN] = [
        1, 0x13, 0, 0, // version, kind, flags
        1, 2, 3, 4, // session id
        0xab, 0xcd, 0, 5, // nonce
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // cookie
    ];
    const END_BYTES: [u8; END_LEN] = [
        1, 0x10, 0, 0, // version, kind, flags
        0, 0, 0, 7, // session id
        0, 0, 0, 9, // nonce
        0, 0, 0, 0, 0, 0, 1, 2, // packets sent
        0, 0, 0, 0, 3, 4, 5, 6, // bytes sent
        0, 0, 0, 1, 0x2a, 0x05, 0xf2, 0x00, // duration: 5 s in ns
    ];
    const END_ACK_BYTES: [u8; END_ACK_LEN] = [
        1, 0x11, 0, 0, // version, kind, flags
        0, 0, 0, 7, // session id
        0, 0, 0, 9, // nonce
        0, 0, 0, 0, 0, 0, 0, 1, // packets received
        0, 0, 0, 0, 0, 0, 0, 2, // bytes received
        0, 0, 0, 0, 0, 0, 0, 3, // packets lost
        0, 0, 0, 0, 0, 0, 0, 4, // loss events
        0, 0, 0, 5, // p
        0, 0, 0, 0, 0, 0, 0, 6, // duplicates
        0, 0, 0, 7, // jitter
    ];
    const REVERSE_BYTES: [u8; REVERSE_LEN] = [
        1, 0x14, 0, 0, // version, kind, flags
        0xde, 0xad, 0xbe, 0xef, // request id
        0, 0, 0x04, 0xb0, // segment size 1200
        0, 0, 0, 0, 0x95, 0x02, 0xf9, 0x00, // duration: 2.5 s in ns
        0, 0, 0, 0, 0, 0x03, 0xd0, 0x90, // rate cap 250000 B/s
        0, 0, 0, 0, 0, 0, 0, 0, // no target rate
    ];
    const OPTIONS_BYTES: [u8; FLOW_OPTIONS_LEN] = [
        b'T', b'F', b'U', b'O', 4,    // magic, version
        0x2f, // flags: rtt_ref, veno, history discounting, ns-2 profile, feedbacks per RTT
        0, 4, // feedbacks per RTT
        0, 0x01, 0x86, 0xa0, // rtt_ref 100 ms in us
        0, 0, 0x03, 0xe8, // veno beta 1.0
        0, 0, 0x0b, 0xb8, // veno alpha 3.0
        0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, // cookie
        0, 0, 0, 0, // no nominal segment size, zero
    ];
    const SMALL_OPTIONS_BYTES: [u8; FLOW_OPTIONS_LEN] = [
        b'T', b'F', b'U', b'O', 4,    // magic, version
        0x50, // flags: ns-2 useHeaders_, TFRC-SP
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // nothing else announced
        0, 0, 0, 0, 0, 0, 0, 1, // cookie
        0x05, 0xb4, 0, 0, // nominal segment size 1460, zero
    ];

    fn golden_hello() -> Hello {
        Hello {
            session_id: 0x0102_0304,
            nonce: 0xabcd_0005,
        }
    }

    fn golden_end() -> EndOfSession {
        EndOfSession {
            session_id: 7,
            nonce: 9,
            packets_sent: 0x0102,
            bytes_sent: 0x0304_0506,
            duration_nanos: 5_000_000_000,
        }
    }

    fn golden_end_ack() -> EndAcknowledgement {
        EndAcknowledgement {
            session_id: 7,
            nonce: 9,
            packets_received: 1,
            bytes_received: 2,
            packets_lost: 3,
            loss_events: 4,
            loss_event_rate_raw: 5,
            duplicates: 6,
            jitter_micros: 7,
        }
    }

    fn golden_reverse() -> ReverseRequest {
        ReverseRequest {
            request_id: 0xdead_beef,
            packet_size: 1200,
            duration: Duration::from_millis(2500),
            max_rate: Some(250_000.0),
            target_rate: None,
        }
    }

    fn golden_options() -> FlowOptions {
        FlowOptions {
            rtt_ref: Some(Duration::from_millis(100)),
            feedbacks_per_rtt: Some(4),
            veno: Some(Veno {
                beta: 1.0,
                alpha: 3.0,
            }),
            history_discounting: true,
            profile: Profile::Ns2,
            ns2_use_headers: false,
            small_packets_segment_size: None,
            cookie: 0x0123_4567_89ab_cdef,
        }
    }

    fn golden_small_options() -> FlowOptions {
        FlowOptions {
            ns2_use_headers: true,
            small_packets_segment_size: Some(1460),
            cookie: 1,
            ..FlowOptions::default()
        }
    }

    #[test]
    fn control_datagrams_are_these_bytes() {
        let mut buffer = [0xffu8; HELLO_LEN];
        assert_eq!(golden_hello().emit(&mut buffer), HELLO_LEN);
        assert_eq!(buffer, HELLO_BYTES);
        let mut buffer = [0xffu8; COOKIE_LEN];
        golden_hello()
            .answer(0x1122_3344_5566_7788)
            .emit(&mut buffer);
        assert_eq!(buffer, COOKIE_BYTES);
        let mut buffer = [0xffu8; END_LEN];
        assert_eq!(golden_end().emit(&mut buffer), END_LEN);
        assert_eq!(buffer, END_BYTES);
        let mut buffer = [0xffu8; END_ACK_LEN];
        assert_eq!(golden_end_ack().emit(&mut buffer), END_ACK_LEN);
        assert_eq!(buffer, END_ACK_BYTES);
        let mut buffer = [0xffu8; REVERSE_LEN];
        assert_eq!(golden_reverse().emit(&mut buffer), REVERSE_LEN);
        assert_eq!(buffer, REVERSE_BYTES);
        let mut buffer = [0xffu8; FLOW_OPTIONS_LEN];
        golden_options().emit(&mut buffer).unwrap();
        assert_eq!(buffer, OPTIONS_BYTES);
        golden_small_options().emit(&mut buffer).unwrap();
        assert_eq!(buffer, SMALL_OPTIONS_BYTES);
    }

    #[test]
    fn these_bytes_parse_to_the_control_datagrams() {
        assert_eq!(Hello::parse(&HELLO_BYTES), Ok(golden_hello()));
        assert_eq!(
            Cookie::parse(&COOKIE_BYTES),
            Ok(golden_hello().answer(0x1122_3344_5566_7788))
        );
        assert_eq!(EndOfSession::parse(&END_BYTES), Ok(golden_end()));
        assert_eq!(
            EndAcknowledgement::parse(&END_ACK_BYTES),
            Ok(golden_end_ack())
        );
        assert_eq!(ReverseRequest::parse(&REVERSE_BYTES), Ok(golden_reverse()));
        assert_eq!(FlowOptions::parse(&OPTIONS_BYTES), Ok(golden_options()));
        assert_eq!(
            FlowOptions::parse(&SMALL_OPTIONS_BYTES),
            Ok(golden_small_options())
        );
    }

    #[test]
    fn reverse_requests_round_trip_and_refuse_nonsense() {
        let request = ReverseRequest {
            request_id: 0xdead_beef,
            packet_size: 1200,
            duration: Duration::from_millis(2500),
            max_rate: Some(250_000.0),
            target_rate: None,
        };
        let mut buffer = [0u8; REVERSE_LEN];
        assert_eq!(request.emit(&mut buffer), REVERSE_LEN);
        assert_eq!(ReverseRequest::parse(&buffer), Ok(request));
        assert_eq!(
            ReverseRequest::parse(&buffer[..REVERSE_LEN - 1]),
            Err(ControlError::TooShort {
                needed: REVERSE_LEN,
                length: REVERSE_LEN - 1
            })
        );
        let second = Duration::from_secs(1);
        for (size, duration, reason) in [
            (27, second, ControlError::SegmentSize(27)),
            // One byte too small for the flow options block, and one too large.
            (
                FLOW_OPTIONS_LEN as u32 - 1,
                second,
                ControlError::SegmentSize(FLOW_OPTIONS_LEN as u32 - 1),
            ),
            (65_476, second, ControlError::SegmentSize(65_476)),
            (
                1000,
                Duration::ZERO,
                ControlError::ReverseDuration(Duration::ZERO),
            ),
            (
                1000,
                Duration::from_secs(7200),
                ControlError::ReverseDuration(Duration::from_secs(7200)),
            ),
        ] {
            let request = ReverseRequest {
                packet_size: size,
                duration,
                ..request
            };
            request.emit(&mut buffer);
            assert_eq!(ReverseRequest::parse(&buffer), Err(reason));
        }
        let greedy = ReverseRequest {
            target_rate: Some((MAX_REQUESTED_RATE + 1) as f64),
            ..request
        };
        greedy.emit(&mut buffer);
        assert_eq!(
            ReverseRequest::parse(&buffer),
            Err(ControlError::RequestedRate(MAX_REQUESTED_RATE + 1))
        );
    }

    #[test]
    fn cookies_depend_on_address_session_token_and_period() {
        let jar = CookieJar::new((1, 2));
        let peer: std::net::SocketAddr = "192.0.2.1:4000".parse().unwrap();
        let minute = Duration::from_secs(61);
        let cookie = jar.make(peer, 7, 0x1234_0000, minute);
        // Accepted in its period and the next, whatever the nonce's mark bits.
        assert!(jar.check(cookie, peer, 7, 0x1234_0000, minute));
        assert!(jar.check(cookie, peer, 7, 0x1234_abcd, Duration::from_secs(150)));
        assert!(!jar.check(cookie, peer, 7, 0x1234_0000, Duration::from_secs(181)));
        let other_port: std::net::SocketAddr = "192.0.2.1:4001".parse().unwrap();
        let other_host: std::net::SocketAddr = "192.0.2.2:4000".parse().unwrap();
        assert!(!jar.check(cookie, other_port, 7, 0x1234_0000, minute));
        assert!(!jar.check(cookie, other_host, 7, 0x1234_0000, minute));
        assert!(!jar.check(cookie, peer, 8, 0x1234_0000, minute));
        assert!(!jar.check(cookie, peer, 7, 0x1235_0000, minute));
        assert!(!CookieJar::new((1, 3)).check(cookie, peer, 7, 0x1234_0000, minute));
    }

    #[test]
    fn hello_and_cookie_round_trip_and_the_answer_is_not_longer() {
        let hello = Hello {
            session_id: 9,
            nonce: 0xabcd_0000,
        };
        let mut buffer = [0u8; HELLO_LEN];
        assert_eq!(hello.emit(&mut buffer), HELLO_LEN);
        assert_eq!(Hello::parse(&buffer), Ok(hello));
        assert_eq!(
            Hello::parse(&buffer[..HELLO_LEN - 1]),
            Err(ControlError::TooShort {
                needed: HELLO_LEN,
                length: HELLO_LEN - 1
            })
        );
        let cookie = Cookie {
            session_id: 9,
            nonce: 0xabcd_0000,
            cookie: u64::MAX - 1,
        };
        let mut answer = [0u8; COOKIE_LEN];
        assert_eq!(cookie.emit(&mut answer), COOKIE_LEN);
        assert_eq!(Cookie::parse(&answer), Ok(cookie));
        assert_eq!(
            Cookie::parse(&buffer),
            Err(ControlError::WrongKind {
                expected: ControlKind::Cookie,
                found: ControlKind::Hello
            })
        );
    }

    #[test]
    fn flow_options_round_trip_and_reject_garbage() {
        let options = golden_options();
        let mut buffer = [0xffu8; 64];
        options.emit(&mut buffer).unwrap();
        assert_eq!(FlowOptions::parse(&buffer), Ok(options));
        assert!(options.receiver_config(1000).is_some());
        assert_eq!(
            FlowOptions::parse(&buffer[..10]),
            Err(ControlError::TooShort {
                needed: FLOW_OPTIONS_LEN,
                length: 10
            })
        );
        assert_eq!(
            FlowOptions::parse(&[0u8; 32]),
            Err(ControlError::Magic([0; 4]))
        );
        // TFRC-SP (RFC 4828) under the RFC 5348 profile: the receiver gets its nominal size.
        let small = FlowOptions {
            profile: Profile::Rfc5348,
            small_packets_segment_size: Some(1460),
            ..options
        };
        small.emit(&mut buffer).unwrap();
        assert_eq!(FlowOptions::parse(&buffer), Ok(small));
        let config = small.receiver_config(200).unwrap();
        assert_eq!(config.small_packets.unwrap().nominal_segment_size, 1460);
        // ... and under the ns-2 profile the core refuses it, so the receiver does too.
        let small_ns2 = FlowOptions {
            profile: Profile::Ns2,
            ..small
        };
        assert!(small_ns2.receiver_config(200).is_none());
        options.emit(&mut buffer).unwrap();
        // A flag this version does not know, or another version, is refused.
        let mut unknown = buffer;
        unknown[5] |= 0x80;
        assert_eq!(
            FlowOptions::parse(&unknown),
            Err(ControlError::UnknownFlags(0xaf))
        );
        let mut version_1 = buffer;
        version_1[4] = 1;
        assert_eq!(
            FlowOptions::parse(&version_1),
            Err(ControlError::OptionsVersion(1))
        );
        // Hostile values parse but give no configuration.
        let hostile = FlowOptions {
            rtt_ref: Some(Duration::ZERO),
            ..FlowOptions::default()
        };
        hostile.emit(&mut buffer).unwrap();
        let parsed = FlowOptions::parse(&buffer).unwrap();
        assert!(parsed.receiver_config(1000).is_none());
        let no_feedback = FlowOptions {
            feedbacks_per_rtt: Some(0),
            ..FlowOptions::default()
        };
        assert!(no_feedback.receiver_config(1000).is_none());
        assert!(FlowOptions::default().receiver_config(u32::MAX).is_none());
    }

    /// Every receiver-side field of the sender's configuration reaches the receiver through
    /// the wire, and s is the same at both ends (the payload of a full packet is what the
    /// receiver sees).
    #[test]
    fn the_receiver_runs_the_senders_configuration() {
        let senders = [
            Config::default(),
            Config {
                packet_size: 1420,
                rtt_ref: Some(Duration::from_millis(20)),
                veno: Some(Veno {
                    beta: 3.0,
                    alpha: 1.5,
                }),
                history_discounting: true,
                ..Config::default()
            },
            Config {
                feedbacks_per_rtt: Some(8),
                ..Config::ns2()
            },
            Config {
                packet_size: 1000,
                ns2_use_headers: false,
                ..Config::ns2()
            },
        ];
        for sender in senders {
            let options = FlowOptions::from_config(&sender).unwrap();
            let mut buffer = [0u8; FLOW_OPTIONS_LEN];
            options.emit(&mut buffer).unwrap();
            let full_payload = sender.packet_size + sender.header_outside_s() as u32
                - wire::DATA_HEADER_LEN as u32;
            let receiver = FlowOptions::parse(&buffer)
                .unwrap()
                .receiver_config(full_payload)
                .unwrap();
            assert_eq!(receiver.packet_size, sender.packet_size, "{sender:?}");
            assert_eq!(receiver.rtt_ref, sender.rtt_ref);
            assert_eq!(receiver.feedbacks_per_rtt, sender.feedbacks_per_rtt);
            assert_eq!(receiver.veno, sender.veno);
            assert_eq!(receiver.history_discounting, sender.history_discounting);
            assert_eq!(receiver.profile, sender.profile);
            assert_eq!(receiver.header_outside_s(), sender.header_outside_s());
        }
        let too_many = Config {
            feedbacks_per_rtt: Some(70_000),
            ..Config::default()
        };
        assert_eq!(
            FlowOptions::from_config(&too_many),
            Err(FlowOptionsError::FeedbacksPerRtt(70_000))
        );
    }

    proptest::proptest! {
        /// Untrusted bytes: parsing never panics, and whatever parses gives a configuration
        /// that validates or none.
        #[test]
        fn arbitrary_bytes_parse_without_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let mut with_magic = bytes.clone();
            if with_magic.len() >= 6 {
                with_magic[..4].copy_from_slice(OPTIONS_MAGIC);
                with_magic[4] = OPTIONS_VERSION;
            }
            for candidate in [&bytes, &with_magic] {
                if let Ok(options) = FlowOptions::parse(candidate) {
                    if let Some(config) = options.receiver_config(candidate.len() as u32) {
                        proptest::prop_assert!(config.validate().is_ok());
                    }
                }
            }
        }

        /// Control datagrams from the network: any bytes with our version byte and one of our
        /// kinds parse or are refused without a panic, and what parses re-emits to its bytes.
        #[test]
        fn arbitrary_control_datagrams_parse_without_panic(
            kind in proptest::sample::select(vec![0x10, 0x11, 0x12, 0x13, 0x14, 0x15]),
            rest in proptest::collection::vec(proptest::num::u8::ANY, 0..70),
        ) {
            let mut bytes = vec![wire::VERSION, kind];
            bytes.extend_from_slice(&rest);
            if let Ok(hello) = Hello::parse(&bytes) {
                let mut buffer = [0u8; HELLO_LEN];
                hello.emit(&mut buffer);
                proptest::prop_assert_eq!(&buffer[4..12], &bytes[4..12]);
            }
            if let Ok(cookie) = Cookie::parse(&bytes) {
                let mut buffer = [0u8; COOKIE_LEN];
                cookie.emit(&mut buffer);
                proptest::prop_assert_eq!(&buffer[4..], &bytes[4..COOKIE_LEN]);
            }
            if let Ok(end) = EndOfSession::parse(&bytes) {
                let mut buffer = [0u8; END_LEN];
                end.emit(&mut buffer);
                proptest::prop_assert_eq!(&buffer[4..], &bytes[4..END_LEN]);
            }
            if let Ok(acknowledgement) = EndAcknowledgement::parse(&bytes) {
                let mut buffer = [0u8; END_ACK_LEN];
                acknowledgement.emit(&mut buffer);
                proptest::prop_assert_eq!(&buffer[4..], &bytes[4..END_ACK_LEN]);
            }
            if let Ok(request) = ReverseRequest::parse(&bytes) {
                let mut buffer = [0u8; REVERSE_LEN];
                request.emit(&mut buffer);
                proptest::prop_assert_eq!(&buffer[4..], &bytes[4..REVERSE_LEN]);
                proptest::prop_assert!(request.duration <= Duration::from_secs(3600));
            }
        }

        /// A reverse request within the bounds parses back as it was emitted.
        #[test]
        fn reverse_requests_parse_back(
            request_id in proptest::num::u32::ANY,
            // The bounds `parse` accepts: a flow options block fits in the smallest segment.
            packet_size in (FLOW_OPTIONS_LEN as u32)..=MAX_SEGMENT_SIZE,
            nanos in 1_000_000u64..=3_600_000_000_000,
            max_rate in proptest::option::of(1u64..=MAX_REQUESTED_RATE),
            target_rate in proptest::option::of(1u64..=MAX_REQUESTED_RATE),
        ) {
            let request = ReverseRequest {
                request_id,
                packet_size,
                duration: Duration::from_nanos(nanos),
                max_rate: max_rate.map(|rate| rate as f64),
                target_rate: target_rate.map(|rate| rate as f64),
            };
            let mut buffer = [0u8; REVERSE_LEN];
            request.emit(&mut buffer);
            proptest::prop_assert_eq!(ReverseRequest::parse(&buffer), Ok(request));
        }

        /// What is emitted parses back as it was (Veno values in thousandths).
        #[test]
        fn emitted_options_parse_back(
            rtt_micros in proptest::option::of(1u32..u32::MAX),
            feedbacks in proptest::option::of(proptest::num::u16::ANY),
            veno in proptest::option::of((0u32..100_000, 1_000u32..100_000)),
            flags in 0u8..8,
            nominal in proptest::option::of(proptest::num::u16::ANY),
            cookie: u64,
        ) {
            let options = FlowOptions {
                rtt_ref: rtt_micros.map(|micros| Duration::from_micros(u64::from(micros))),
                feedbacks_per_rtt: feedbacks,
                veno: veno.map(|(beta, alpha)| Veno {
                    beta: f64::from(beta) / 1000.0,
                    alpha: f64::from(alpha) / 1000.0,
                }),
                history_discounting: flags & 1 != 0,
                profile: if flags & 2 != 0 { Profile::Ns2 } else { Profile::Rfc5348 },
                ns2_use_headers: flags & 4 != 0,
                small_packets_segment_size: nominal,
                cookie,
            };
            let mut buffer = [0u8; FLOW_OPTIONS_LEN];
            options.emit(&mut buffer).unwrap();
            proptest::prop_assert_eq!(FlowOptions::parse(&buffer), Ok(options));
        }
    }

    #[test]
    fn control_datagrams_round_trip() {
        let end = EndOfSession {
            session_id: 7,
            nonce: 9,
            packets_sent: 1234,
            bytes_sent: 1_234_000,
            duration_nanos: 5_000_000_000,
        };
        let mut buffer = [0u8; END_LEN];
        let length = end.emit(&mut buffer);
        assert_eq!(EndOfSession::parse(&buffer[..length]), Ok(end));
        assert_eq!(
            EndOfSession::parse(&buffer[..length - 1]),
            Err(ControlError::TooShort {
                needed: END_LEN,
                length: END_LEN - 1
            })
        );
        assert_eq!(
            EndAcknowledgement::parse(&buffer[..length]),
            Err(ControlError::WrongKind {
                expected: ControlKind::EndAck,
                found: ControlKind::End
            })
        );
        let mut buffer = [0u8; END_ACK_LEN];
        let ack = EndAcknowledgement {
            session_id: 7,
            nonce: 9,
            packets_received: 1200,
            bytes_received: 1_200_000,
            packets_lost: 34,
            loss_events: 3,
            loss_event_rate_raw: wire::encode_loss_event_rate(0.01),
            duplicates: 0,
            jitter_micros: 1234,
        };
        let length = ack.emit(&mut buffer);
        assert_eq!(EndAcknowledgement::parse(&buffer[..length]), Ok(ack));
        assert!((ack.loss_event_rate() - 0.01).abs() < 1e-9);
        assert_eq!(control_kind(&[1, 2, 3]), None);
    }

    /// Each reason a datagram is refused is named, and the message says it.
    #[test]
    fn refusals_say_why() {
        assert_eq!(
            Hello::parse(&[1]),
            Err(ControlError::TooShort {
                needed: 2,
                length: 1
            })
        );
        let mut hello = HELLO_BYTES;
        hello[0] = 2;
        assert_eq!(Hello::parse(&hello), Err(ControlError::Version(2)));
        hello = HELLO_BYTES;
        hello[1] = 3;
        assert_eq!(Hello::parse(&hello), Err(ControlError::UnknownKind(3)));
        let messages = [
            (
                Hello::parse(&hello).unwrap_err(),
                "kind 0x03 is not a control datagram's",
            ),
            (
                Cookie::parse(&HELLO_BYTES).unwrap_err(),
                "a hello where a cookie was expected",
            ),
            (
                Hello::parse(&HELLO_BYTES[..20]).unwrap_err(),
                "20 bytes where 28 are needed",
            ),
            (ControlError::Version(2), "version 2, not 1"),
            (
                ControlError::SegmentSize(27),
                "a reverse request for 27-byte segments (they must be 32 to 65475 bytes)",
            ),
            (
                ControlError::ReverseDuration(Duration::ZERO),
                "a reverse request for a flow of 0ns (it must last 1 ms to 1 h)",
            ),
            (
                ControlError::RequestedRate(2),
                "a reverse request for 2 bytes/s (at most 1000000000000000)",
            ),
            (
                ControlError::Magic(*b"abcd"),
                "no flow options: the payload starts [61, 62, 63, 64], not \"TFUO\"",
            ),
            (
                ControlError::OptionsVersion(3),
                "flow options of version 3 (this driver speaks 4)",
            ),
            (
                ControlError::UnknownFlags(0x80),
                "flow option flags 0x80 include bits this version does not know",
            ),
        ];
        for (error, message) in messages {
            assert_eq!(error.to_string(), message);
        }
    }

    /// The kinds are the five bytes the module's table gives, and only they are ours.
    #[test]
    fn control_kinds_are_the_tables() {
        let codes: Vec<u8> = ControlKind::ALL.iter().map(|kind| kind.code()).collect();
        assert_eq!(codes, [0x10, 0x11, 0x12, 0x13, 0x14]);
        for code in 0..=u8::MAX {
            let kind = control_kind(&[wire::VERSION, code]);
            assert_eq!(kind.map(ControlKind::code), kind.and(Some(code)));
            assert_eq!(kind.is_some(), (0x10..=0x14).contains(&code), "{code}");
        }
        assert_eq!(control_kind(&[2, 0x12]), None);
        assert_eq!(control_kind(&HELLO_BYTES), Some(ControlKind::Hello));
        let lengths = ControlKind::ALL.map(ControlKind::datagram_len);
        assert_eq!(
            lengths,
            [END_LEN, END_ACK_LEN, HELLO_LEN, COOKIE_LEN, REVERSE_LEN]
        );
    }

    /// A buffer too short for the flow options is refused before anything is written.
    #[test]
    fn flow_options_refuse_a_short_buffer_untouched() {
        let mut buffer = [0xffu8; FLOW_OPTIONS_LEN - 1];
        assert_eq!(
            golden_options().emit(&mut buffer),
            Err(ControlError::TooShort {
                needed: FLOW_OPTIONS_LEN,
                length: FLOW_OPTIONS_LEN - 1
            })
        );
        assert_eq!(buffer, [0xff; FLOW_OPTIONS_LEN - 1]);
        // A longer buffer: the block is its start, and the rest is left as it was.
        let mut payload = [0xffu8; FLOW_OPTIONS_LEN + 4];
        golden_options().emit(&mut payload).unwrap();
        assert_eq!(payload[..FLOW_OPTIONS_LEN], OPTIONS_BYTES);
        assert_eq!(payload[FLOW_OPTIONS_LEN..], [0xff; 4]);
        assert_eq!(FlowOptions::parse(&payload), Ok(golden_options()));
    }
}
