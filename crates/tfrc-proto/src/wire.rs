//! Wire format of TFRC data and feedback packets.
//!
//! Parsing follows smoltcp: a [`Packet`] view over any `AsRef<[u8]>` checks its length once in
//! [`Packet::new_checked`], after which no accessor can panic; [`DataRepr`] and [`FeedbackRepr`]
//! are the parsed, high-level forms with `parse`, `emit` and `buffer_len`.
//!
//! All integers are big-endian. Layout (byte offsets):
//!
//! ```text
//! common header (8 bytes)
//!   0      version (= 1)
//!   1      kind: 1 = data, 3 = feedback (kind 2, the 40-byte feedback of wire format 1
//!          without loss intervals, is refused: [`Error`])
//!   2..4   flags: data packets of the RFC profile send 0; data packets of the ns-2
//!          profile: bit 15 = ns-2's UrgentFlag, bits 0..15 = its round_id mod 2^15;
//!          feedback: the receipt proof's run (bits 13..16 offset, bits 0..13 length; below)
//!   4..8   session id
//! data (header 32 bytes, then the payload)
//!   8..12  sequence number (wraps around at 2^32)
//!   12..20 send timestamp, nanoseconds on the sender's clock
//!   20..24 sender's RTT estimate in microseconds (0 = none yet)
//!   24..28 Veno backlog N in thousandths of a packet (saturating)
//!   28..32 nonce: bits 16..32 the session token (the same in every packet of a session),
//!          bits 0..16 the packet's mark (a keyed hash of its sequence number, unpredictable
//!          without the sender's key)
//! feedback (52 + 12·n bytes: 64 with one loss interval, 160 with nine)
//!   8..12  sequence number of the data packet whose timestamp is echoed
//!   12..20 echoed send timestamp (t_recvdata)
//!   20..24 elapsed time at the receiver (t_delay) in microseconds (saturating)
//!   24..32 X_recv in bytes per second
//!   32..36 loss event rate p as a fraction of 2^32 (0 = no loss; saturates just below 1)
//!   36..40 receipt proof: bits 16..32 the session token, bits 0..16 the sum (mod 2^16) of
//!          the marks of the proven run
//!   40     n: loss intervals that follow (1..=9: the open one, then up to 8 closed, newest
//!          first; RFC 5348 §5.4's n = 8)
//!   41..44 reserved (0)
//!   44..48 sequence number of the open interval's first packet (its loss event's first
//!          loss; before any loss, the first packet the receiver was sent)
//!   48..52 the open interval's tail: packets above its proven part, up to the highest
//!          received (losses not yet detected, RFC 5348 §5.1), not proven
//!   52..   n entries of 12 bytes, the open interval first; each interval starts where the
//!          older one ends, so only the open one names its start
//!     0..4   lossy part: packets from the interval's first to its loss event's last loss
//!     4..8   data part: the packets after it, every one received (a synthetic interval,
//!            RFC 5348 §6.3.1: its length)
//!     8..10  sum (mod 2^16) of the marks of the data part's packets
//!     10     flags: bit 0 Veno-stretched (paper 003), bit 1 synthetic (RFC 5348 §6.3.1)
//!     11     reserved (0)
//! ```
//!
//! **Loss intervals with proofs** (wire format 2). The receiver reports its loss intervals as
//! RFC 4342 §8.6's Loss Intervals option does ("Loss Length" and "Data Length", with "the ECN
//! Nonce Echo for the non-lossy part of the loss interval"), and the sender recomputes p from
//! them ([`crate::Sender::handle_packet`]). The data part of an interval holds no loss, so its
//! receiver knows every mark in it: its sum proves the part was received, as RFC 4342 §9.2's
//! nonce echo does ("the receiver cannot successfully lie about the data length of a loss
//! interval unless it also guesses the ECN nonce sum"). A lossy part is not proven, but it
//! cannot span more than a loss event (one RTT of sending, with slack), so a receiver can
//! shorten an interval but not lengthen one, nor hide a loss event, without guessing 16-bit
//! marks.
//!
//! **Receipt proof.** A feedback proves that its receiver got a run of consecutive packets:
//! the `length` packets ending `offset` packets below the echoed one (offset ≤
//! [`PROOF_MAX_OFFSET`], so that reordering in flight does not cut the run; length ≤
//! [`PROOF_WINDOW`]), by the sum of their marks, which only a receiver that got those packets
//! can know. Like the ECN nonce of RFC 3540 (a defence against the misreporting receivers
//! that RFC 5348 §9, Security Considerations, is concerned with), it lets the sender refuse
//! feedback that claims more than the receiver got: a receiver that reports no loss must
//! prove the whole window below the run's end, and one whose proof has shown a loss must
//! report p > 0 ([`crate::Sender::handle_packet`]). Marks are 16 bits of SipHash-1-3 keyed by
//! the sender's 64-bit key, so a receiver that did not get a packet guesses its mark with
//! probability 2^-16 per feedback.

use core::fmt;

/// The only version this crate speaks.
pub const VERSION: u8 = 1;

/// A unit error: the bytes are not a well-formed TFRC packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("malformed TFRC packet")
    }
}

impl std::error::Error for Error {}

/// Result of wire operations.
pub type Result<T> = core::result::Result<T, Error>;

/// What a packet carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketKind {
    /// A data packet from sender to receiver.
    Data,
    /// A feedback report from receiver to sender.
    Feedback,
}

impl PacketKind {
    fn code(self) -> u8 {
        match self {
            PacketKind::Data => 1,
            PacketKind::Feedback => FEEDBACK_KIND,
        }
    }
}

/// The kind code of a feedback packet (wire format 2, with loss intervals).
const FEEDBACK_KIND: u8 = 3;

/// Byte ranges of the fields.
mod field {
    use core::ops::Range;
    pub const VERSION: usize = 0;
    pub const KIND: usize = 1;
    pub const FLAGS: Range<usize> = 2..4;
    pub const SESSION: Range<usize> = 4..8;
    pub const COMMON_END: usize = 8;

    pub const SEQUENCE: Range<usize> = 8..12;
    pub const TIMESTAMP: Range<usize> = 12..20;
    pub const RTT: Range<usize> = 20..24;
    pub const VENO: Range<usize> = 24..28;
    pub const NONCE: Range<usize> = 28..32;
    pub const DATA_HEADER_END: usize = 32;

    pub const ECHO_SEQUENCE: Range<usize> = 8..12;
    pub const ECHO_TIMESTAMP: Range<usize> = 12..20;
    pub const ELAPSED: Range<usize> = 20..24;
    pub const X_RECV: Range<usize> = 24..32;
    pub const LOSS_RATE: Range<usize> = 32..36;
    pub const ECHO_NONCE: Range<usize> = 36..40;
    pub const INTERVAL_COUNT: usize = 40;
    pub const OPEN_START: Range<usize> = 44..48;
    pub const OPEN_TAIL: Range<usize> = 48..52;
    pub const INTERVALS: usize = 52;
}

/// Length of a data packet's header; the payload follows it.
pub const DATA_HEADER_LEN: usize = field::DATA_HEADER_END;
/// Most loss intervals a feedback carries: the open one and RFC 5348 §5.4's n = 8 closed ones.
pub const MAX_LOSS_INTERVALS: usize = 1 + crate::loss_history::INTERVALS_AVERAGED;
/// Bytes of one loss interval entry.
pub const LOSS_INTERVAL_LEN: usize = 12;
/// Length of the shortest feedback packet (one loss interval).
pub const MIN_FEEDBACK_LEN: usize = field::INTERVALS + LOSS_INTERVAL_LEN;
/// Length of the longest feedback packet (nine loss intervals): a buffer this long holds any.
pub const MAX_FEEDBACK_LEN: usize = field::INTERVALS + MAX_LOSS_INTERVALS * LOSS_INTERVAL_LEN;

/// Length of a feedback packet carrying `count` loss intervals.
pub const fn feedback_len(count: usize) -> usize {
    field::INTERVALS + count * LOSS_INTERVAL_LEN
}

/// The length of the feedback packet at the start of `bytes` (which may go on past it), read
/// from its header: for carriers that embed one (ETP's ACK).
pub fn feedback_len_of(bytes: &[u8]) -> Result<usize> {
    let packet = Packet::new_checked(bytes)?;
    if packet.kind() != PacketKind::Feedback {
        return Err(Error);
    }
    Ok(feedback_len(usize::from(bytes[field::INTERVAL_COUNT])))
}

/// A read (and, for `AsMut`, write) view of a TFRC packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it. Accessors may panic until [`Packet::check_len`] passes.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer and checks that every field of its kind is present.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Packet::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks the version, the kind and that the buffer holds the whole header of that kind.
    /// After it succeeds no accessor panics.
    pub fn check_len(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        if data.len() < field::COMMON_END {
            return Err(Error);
        }
        if data[field::VERSION] != VERSION {
            return Err(Error);
        }
        let needed = match data[field::KIND] {
            1 => field::DATA_HEADER_END,
            FEEDBACK_KIND => {
                let count = usize::from(*data.get(field::INTERVAL_COUNT).ok_or(Error)?);
                if count == 0 || count > MAX_LOSS_INTERVALS {
                    return Err(Error);
                }
                feedback_len(count)
            }
            _ => return Err(Error),
        };
        if data.len() < needed {
            return Err(Error);
        }
        Ok(())
    }

    /// Consumes the view, returning the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn bytes<const N: usize>(&self, range: core::ops::Range<usize>) -> [u8; N] {
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buffer.as_ref()[range]);
        out
    }

    /// The version byte.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }

    /// The packet kind (valid after `check_len`).
    pub fn kind(&self) -> PacketKind {
        if self.buffer.as_ref()[field::KIND] == PacketKind::Data.code() {
            PacketKind::Data
        } else {
            PacketKind::Feedback
        }
    }

    /// Reserved flags.
    pub fn flags(&self) -> u16 {
        u16::from_be_bytes(self.bytes(field::FLAGS))
    }

    /// Session identifier.
    pub fn session_id(&self) -> u32 {
        u32::from_be_bytes(self.bytes(field::SESSION))
    }

    /// Data: sequence number.
    pub fn sequence(&self) -> u32 {
        u32::from_be_bytes(self.bytes(field::SEQUENCE))
    }

    /// Data: send timestamp in nanoseconds.
    pub fn timestamp(&self) -> u64 {
        u64::from_be_bytes(self.bytes(field::TIMESTAMP))
    }

    /// Data: sender's RTT estimate in microseconds (0 = none).
    pub fn rtt_micros(&self) -> u32 {
        u32::from_be_bytes(self.bytes(field::RTT))
    }

    /// Data: Veno backlog N in thousandths of a packet.
    pub fn veno_backlog_millipackets(&self) -> u32 {
        u32::from_be_bytes(self.bytes(field::VENO))
    }

    /// Data: the session nonce.
    pub fn nonce(&self) -> u32 {
        u32::from_be_bytes(self.bytes(field::NONCE))
    }

    /// Data: the payload after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA_HEADER_END..]
    }

    /// Feedback: sequence number of the echoed data packet.
    pub fn echo_sequence(&self) -> u32 {
        u32::from_be_bytes(self.bytes(field::ECHO_SEQUENCE))
    }

    /// Feedback: echoed send timestamp.
    pub fn echo_timestamp(&self) -> u64 {
        u64::from_be_bytes(self.bytes(field::ECHO_TIMESTAMP))
    }

    /// Feedback: time the receiver held the echoed packet before answering, microseconds.
    pub fn elapsed_micros(&self) -> u32 {
        u32::from_be_bytes(self.bytes(field::ELAPSED))
    }

    /// Feedback: X_recv in bytes per second.
    pub fn x_recv(&self) -> u64 {
        u64::from_be_bytes(self.bytes(field::X_RECV))
    }

    /// Feedback: p as a fraction of 2^32.
    pub fn loss_event_rate_raw(&self) -> u32 {
        u32::from_be_bytes(self.bytes(field::LOSS_RATE))
    }

    /// Feedback: the session token and the receipt proof's sum ([`ReceiptProof`]).
    pub fn echo_nonce(&self) -> u32 {
        u32::from_be_bytes(self.bytes(field::ECHO_NONCE))
    }

    /// Feedback: the loss intervals ([`LossIntervals`]; valid after `check_len`).
    pub fn loss_intervals(&self) -> LossIntervals {
        let data = self.buffer.as_ref();
        let count = usize::from(data[field::INTERVAL_COUNT]).min(MAX_LOSS_INTERVALS);
        let mut intervals = LossIntervals {
            open_start: u32::from_be_bytes(self.bytes(field::OPEN_START)),
            tail: u32::from_be_bytes(self.bytes(field::OPEN_TAIL)),
            count: count as u8,
            entries: [LossInterval::default(); MAX_LOSS_INTERVALS],
        };
        let table = &data[field::INTERVALS..field::INTERVALS + count * LOSS_INTERVAL_LEN];
        let (rows, _) = table.as_chunks::<LOSS_INTERVAL_LEN>();
        for (entry, row) in intervals.entries.iter_mut().zip(rows) {
            let [l0, l1, l2, l3, d0, d1, d2, d3, s0, s1, flags, _] = *row;
            *entry = LossInterval {
                lossy: u32::from_be_bytes([l0, l1, l2, l3]),
                data: u32::from_be_bytes([d0, d1, d2, d3]),
                sum: u16::from_be_bytes([s0, s1]),
                flags,
            };
        }
        intervals
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn put(&mut self, range: core::ops::Range<usize>, bytes: &[u8]) {
        self.buffer.as_mut()[range].copy_from_slice(bytes);
    }

    /// Overwrites the flags field (the ns-2 profile's round id and urgent flag, see
    /// [`ns2_flags`]); `emit` writes 0.
    pub fn set_flags(&mut self, flags: u16) {
        self.put(field::FLAGS, &flags.to_be_bytes());
    }

    fn set_common(&mut self, kind: PacketKind, session_id: u32) {
        let data = self.buffer.as_mut();
        data[field::VERSION] = VERSION;
        data[field::KIND] = kind.code();
        self.put(field::FLAGS, &0u16.to_be_bytes());
        self.put(field::SESSION, &session_id.to_be_bytes());
    }
}

/// Most packets a feedback's receipt proof covers.
pub const PROOF_WINDOW: u16 = 64;
/// Most packets below the echoed one at which a proven run may end.
pub const PROOF_MAX_OFFSET: u16 = 7;
const PROOF_LENGTH_BITS: u32 = 13;

/// The session token carried in the upper 16 bits of every nonce, from the sender's key.
pub fn session_token(key: u64) -> u16 {
    (keyed_hash(key, u64::MAX) >> 48) as u16
}

/// Packet `sequence`'s mark: 16 bits of a keyed hash (SipHash) of the sequence number, which a
/// receiver cannot compute without the key (the sender keeps it; only marks travel).
pub fn packet_mark(key: u64, sequence: u32) -> u16 {
    keyed_hash(key, u64::from(sequence)) as u16
}

/// A sender's marking: its key and the session token the key gives, computed once (every data
/// packet carries the token and its own mark; every feedback's proof is checked against them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketMarker {
    key: u64,
    token: u16,
}

impl PacketMarker {
    /// The marker of a sender with this key.
    pub fn new(key: u64) -> PacketMarker {
        PacketMarker {
            key,
            token: session_token(key),
        }
    }

    /// The session token.
    pub fn token(&self) -> u16 {
        self.token
    }

    /// The nonce field of data packet `sequence`: session token and the packet's mark.
    pub fn nonce(&self, sequence: u32) -> u32 {
        u32::from(self.token) << 16 | u32::from(packet_mark(self.key, sequence))
    }

    /// The sum (mod 2^16) of the marks of the `length` packets ending at `end`: what a receipt
    /// proof of that run must carry.
    pub fn run_sum(&self, end: u32, length: u16) -> u16 {
        (0..u32::from(length)).fold(0u16, |sum, back| {
            sum.wrapping_add(packet_mark(self.key, end.wrapping_sub(back)))
        })
    }
}

/// SipHash-1-3 keyed with the sender's key (its second half a fixed constant) of `value`.
fn keyed_hash(key: u64, value: u64) -> u64 {
    use core::hash::Hasher;
    let mut hasher = siphasher::sip::SipHasher13::new_with_keys(key, 0x7466_7263_7072_6f66);
    hasher.write_u64(value);
    hasher.finish()
}

/// A receipt proof as carried by a feedback: the run ends `offset` packets below the echoed
/// one and holds `length` packets whose marks sum (mod 2^16) to `sum`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiptProof {
    /// Packets between the echoed one and the run's last.
    pub offset: u16,
    /// Packets in the run (0: no proof).
    pub length: u16,
    /// Sum of their marks, mod 2^16.
    pub sum: u16,
}

impl ReceiptProof {
    /// The proof in a feedback's flags and echoed-nonce fields.
    pub fn from_fields(flags: u16, echo_nonce: u32) -> ReceiptProof {
        ReceiptProof {
            offset: flags >> PROOF_LENGTH_BITS,
            length: flags & ((1 << PROOF_LENGTH_BITS) - 1),
            sum: echo_nonce as u16,
        }
    }

    /// The flags field carrying this proof (offset and length within their bits).
    pub fn flags(&self) -> u16 {
        (self.offset.min(PROOF_MAX_OFFSET) << PROOF_LENGTH_BITS) | self.length.min(PROOF_WINDOW)
    }

    /// The proof a receiver that got every packet from sequence 0 to `end` gives, knowing the
    /// sender's key: for drivers and tests that stand in for a loss-free receiver.
    pub fn of_all(key: u64, end: u32) -> ReceiptProof {
        let length = (u64::from(end) + 1).min(u64::from(PROOF_WINDOW)) as u16;
        ReceiptProof {
            offset: 0,
            length,
            sum: PacketMarker::new(key).run_sum(end, length),
        }
    }

    /// The echoed-nonce field: `token` and the sum.
    pub fn echo_nonce(&self, token: u16) -> u32 {
        u32::from(token) << 16 | u32::from(self.sum)
    }
}

/// Bit of the flags field carrying ns-2's `UrgentFlag` (ns-2 profile data packets).
pub const NS2_URGENT_FLAG: u16 = 0x8000;
/// Mask of the flags field carrying ns-2's `round_id` modulo 2^15 (ns-2 profile data packets).
pub const NS2_ROUND_MASK: u16 = 0x7fff;

/// The flags of an ns-2 profile data packet: ns-2's `round_id` (the sender's count of feedbacks
/// and no-feedback expiries, `tcp/tfrc.cc`) modulo 2^15 and its `UrgentFlag` (report at once).
pub fn ns2_flags(round_id: u32, urgent: bool) -> u16 {
    let round = (round_id & u32::from(NS2_ROUND_MASK)) as u16;
    if urgent {
        round | NS2_URGENT_FLAG
    } else {
        round
    }
}

/// True if round id `later` (15-bit, wrapping) comes after `earlier`: ns-2's
/// `round_id > lastloss_round_id` test of `PreciseLoss_` on wrapped counters.
pub fn ns2_round_after(later: u16, earlier: u16) -> bool {
    let difference = later.wrapping_sub(earlier) & NS2_ROUND_MASK;
    difference != 0 && difference < 0x4000
}

/// Encodes p ∈ [0, 1] as a fraction of 2^32, saturating below 1.
pub fn encode_loss_event_rate(p: f64) -> u32 {
    if p.is_nan() || p <= 0.0 {
        0
    } else if p >= 1.0 {
        u32::MAX
    } else {
        let raw = crate::numeric::round_to_u64(p * 4_294_967_296.0);
        // A positive p must stay positive.
        raw.clamp(1, u64::from(u32::MAX)) as u32
    }
}

/// Decodes p from its wire form.
pub fn decode_loss_event_rate(raw: u32) -> f64 {
    if raw == u32::MAX {
        1.0
    } else {
        raw as f64 / 4_294_967_296.0
    }
}

/// A parsed data packet (its payload stays in the buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataRepr {
    /// Session identifier.
    pub session_id: u32,
    /// Sequence number (wraps).
    pub sequence: u32,
    /// Sender's clock when sent, in nanoseconds.
    pub timestamp: u64,
    /// Sender's RTT estimate in microseconds, 0 if it has none.
    pub rtt_micros: u32,
    /// Veno backlog N in thousandths of a packet.
    pub veno_backlog_millipackets: u32,
    /// Session token and the packet's mark ([`PacketMarker::nonce`]).
    pub nonce: u32,
}

impl DataRepr {
    /// Parses a data packet; errors on a feedback packet or malformed bytes.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<DataRepr> {
        packet.check_len()?;
        if packet.kind() != PacketKind::Data {
            return Err(Error);
        }
        Ok(DataRepr {
            session_id: packet.session_id(),
            sequence: packet.sequence(),
            timestamp: packet.timestamp(),
            rtt_micros: packet.rtt_micros(),
            veno_backlog_millipackets: packet.veno_backlog_millipackets(),
            nonce: packet.nonce(),
        })
    }

    /// Header length (the payload is extra).
    pub const fn buffer_len(&self) -> usize {
        DATA_HEADER_LEN
    }

    /// Writes the header into the first [`DATA_HEADER_LEN`] bytes of `buffer`.
    pub fn emit(&self, buffer: &mut [u8]) -> Result<()> {
        if buffer.len() < DATA_HEADER_LEN {
            return Err(Error);
        }
        let mut packet = Packet::new_unchecked(buffer);
        packet.set_common(PacketKind::Data, self.session_id);
        packet.put(field::SEQUENCE, &self.sequence.to_be_bytes());
        packet.put(field::TIMESTAMP, &self.timestamp.to_be_bytes());
        packet.put(field::RTT, &self.rtt_micros.to_be_bytes());
        packet.put(field::VENO, &self.veno_backlog_millipackets.to_be_bytes());
        packet.put(field::NONCE, &self.nonce.to_be_bytes());
        Ok(())
    }
}

/// A parsed feedback packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedbackRepr {
    /// Session identifier.
    pub session_id: u32,
    /// Sequence number of the data packet whose timestamp is echoed.
    pub echo_sequence: u32,
    /// Echoed send timestamp (t_recvdata), nanoseconds on the sender's clock.
    pub echo_timestamp: u64,
    /// t_delay: time between receipt of that packet and this feedback, microseconds.
    pub elapsed_micros: u32,
    /// X_recv, bytes per second.
    pub x_recv: u64,
    /// Loss event rate p as a fraction of 2^32 (see [`encode_loss_event_rate`]).
    pub loss_event_rate_raw: u32,
    /// The session token and the receipt proof's sum ([`ReceiptProof::echo_nonce`]).
    pub echo_nonce: u32,
    /// The flags field: the receipt proof's run ([`ReceiptProof::flags`]).
    pub proof_flags: u16,
    /// The receiver's loss intervals with their proofs.
    pub intervals: LossIntervals,
}

/// One loss interval as a feedback carries it (RFC 4342 §8.6's Loss Length and Data Length).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LossInterval {
    /// Packets of the lossy part: from the interval's first (its loss event's first loss) to
    /// the event's last loss. Not proven; the sender bounds its span.
    pub lossy: u32,
    /// Packets of the data part, after the lossy part, every one received; a synthetic
    /// interval's length.
    pub data: u32,
    /// Sum (mod 2^16) of the marks of the data part's packets.
    pub sum: u16,
    /// [`LossInterval::STRETCHED`], [`LossInterval::SYNTHETIC`].
    pub flags: u8,
}

impl LossInterval {
    /// Flag: Veno counted the interval α times (paper 003, §III-B).
    pub const STRETCHED: u8 = 1;
    /// Flag: the synthetic first interval of RFC 5348 §6.3.1 (no packets; `data` is its length).
    pub const SYNTHETIC: u8 = 2;

    /// Packets the interval spans (lossy and data parts; 0 for a synthetic one).
    pub fn span(&self) -> u64 {
        if self.is_synthetic() {
            0
        } else {
            u64::from(self.lossy) + u64::from(self.data)
        }
    }

    /// Whether this is the synthetic first interval.
    pub fn is_synthetic(&self) -> bool {
        self.flags & Self::SYNTHETIC != 0
    }

    /// Whether Veno stretched it.
    pub fn is_stretched(&self) -> bool {
        self.flags & Self::STRETCHED != 0
    }
}

/// A feedback's loss intervals: the open interval I_0 (`entries[0]`), then the closed ones,
/// newest first, each ending where the newer one starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossIntervals {
    /// Sequence number of the open interval's first packet.
    pub open_start: u32,
    /// Packets of the open interval above its data part, up to the highest received: losses
    /// not yet detected; not proven.
    pub tail: u32,
    /// Entries in use (1..=[`MAX_LOSS_INTERVALS`]).
    pub count: u8,
    /// The intervals, open first.
    pub entries: [LossInterval; MAX_LOSS_INTERVALS],
}

impl Default for LossIntervals {
    fn default() -> Self {
        LossIntervals {
            open_start: 0,
            tail: 0,
            count: 1,
            entries: [LossInterval::default(); MAX_LOSS_INTERVALS],
        }
    }
}

impl LossIntervals {
    /// The entries in use, open first.
    pub fn iter(&self) -> core::slice::Iter<'_, LossInterval> {
        self.entries[..usize::from(self.count).min(MAX_LOSS_INTERVALS)].iter()
    }

    /// Appends an entry (older than those present); false when full.
    pub fn push(&mut self, entry: LossInterval) -> bool {
        if self.count == 0 {
            self.entries[0] = entry;
            self.count = 1;
            return true;
        }
        let index = usize::from(self.count);
        if index >= MAX_LOSS_INTERVALS {
            return false;
        }
        self.entries[index] = entry;
        self.count += 1;
        true
    }
}

impl FeedbackRepr {
    /// Parses a feedback packet; errors on a data packet or malformed bytes.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<FeedbackRepr> {
        packet.check_len()?;
        if packet.kind() != PacketKind::Feedback {
            return Err(Error);
        }
        Ok(FeedbackRepr {
            session_id: packet.session_id(),
            echo_sequence: packet.echo_sequence(),
            echo_timestamp: packet.echo_timestamp(),
            elapsed_micros: packet.elapsed_micros(),
            x_recv: packet.x_recv(),
            loss_event_rate_raw: packet.loss_event_rate_raw(),
            echo_nonce: packet.echo_nonce(),
            proof_flags: packet.flags(),
            intervals: packet.loss_intervals(),
        })
    }

    /// The receipt proof this feedback carries.
    pub fn proof(&self) -> ReceiptProof {
        ReceiptProof::from_fields(self.proof_flags, self.echo_nonce)
    }

    /// The loss event rate as a number in [0, 1].
    pub fn loss_event_rate(&self) -> f64 {
        decode_loss_event_rate(self.loss_event_rate_raw)
    }

    /// Length of this feedback packet.
    pub fn buffer_len(&self) -> usize {
        feedback_len(usize::from(self.intervals.count))
    }

    /// Writes the packet into the first [`FeedbackRepr::buffer_len`] bytes of `buffer`.
    pub fn emit(&self, buffer: &mut [u8]) -> Result<()> {
        let count = usize::from(self.intervals.count);
        if count == 0 || count > MAX_LOSS_INTERVALS || buffer.len() < self.buffer_len() {
            return Err(Error);
        }
        let mut packet = Packet::new_unchecked(buffer);
        packet.set_common(PacketKind::Feedback, self.session_id);
        packet.put(field::ECHO_SEQUENCE, &self.echo_sequence.to_be_bytes());
        packet.put(field::ECHO_TIMESTAMP, &self.echo_timestamp.to_be_bytes());
        packet.put(field::ELAPSED, &self.elapsed_micros.to_be_bytes());
        packet.put(field::X_RECV, &self.x_recv.to_be_bytes());
        packet.put(field::LOSS_RATE, &self.loss_event_rate_raw.to_be_bytes());
        packet.put(field::ECHO_NONCE, &self.echo_nonce.to_be_bytes());
        packet.put(field::FLAGS, &self.proof_flags.to_be_bytes());
        let data = packet.into_inner();
        data[field::INTERVAL_COUNT] = count as u8;
        data[field::INTERVAL_COUNT + 1..field::OPEN_START.start].fill(0);
        data[field::OPEN_START].copy_from_slice(&self.intervals.open_start.to_be_bytes());
        data[field::OPEN_TAIL].copy_from_slice(&self.intervals.tail.to_be_bytes());
        for (index, entry) in self.intervals.iter().enumerate() {
            let at = field::INTERVALS + index * LOSS_INTERVAL_LEN;
            data[at..at + 4].copy_from_slice(&entry.lossy.to_be_bytes());
            data[at + 4..at + 8].copy_from_slice(&entry.data.to_be_bytes());
            data[at + 8..at + 10].copy_from_slice(&entry.sum.to_be_bytes());
            data[at + 10] = entry.flags;
            data[at + 11] = 0;
        }
        Ok(())
    }
}

/// Either kind of packet, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repr {
    /// A data packet.
    Data(DataRepr),
    /// A feedback packet.
    Feedback(FeedbackRepr),
}

impl Repr {
    /// Parses any TFRC packet.
    pub fn parse(bytes: &[u8]) -> Result<Repr> {
        let packet = Packet::new_checked(bytes)?;
        match packet.kind() {
            PacketKind::Data => DataRepr::parse(&packet).map(Repr::Data),
            PacketKind::Feedback => FeedbackRepr::parse(&packet).map(Repr::Feedback),
        }
    }
}

/// Signed distance from `from` to `to` in 32-bit serial-number arithmetic (RFC 1982 style):
/// positive when `to` is after `from` by less than 2^31.
pub fn sequence_distance(from: u32, to: u32) -> i64 {
    i64::from(to.wrapping_sub(from) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DATA_BYTES: [u8; 36] = [
        1, 1, 0, 0, // version, kind, flags
        0xde, 0xad, 0xbe, 0xef, // session
        0, 0, 0, 7, // sequence
        0, 0, 0, 0, 0, 0, 0x03, 0xe8, // timestamp 1000 ns
        0, 0, 0x27, 0x10, // rtt 10000 us
        0, 0, 0x05, 0xdc, // veno 1500 milli-packets
        0x12, 0x34, 0x56, 0x78, // nonce
        b'a', b'b', b'c', b'd', // payload
    ];

    const FEEDBACK_BYTES: [u8; 76] = [
        1, 3, 0x40, 0x05, // version, kind, flags: proof offset 2, length 5
        0, 0, 0, 9, // session
        0xff, 0xff, 0xff, 0xff, // echo sequence
        0, 0, 0, 0, 0, 0, 0, 5, // echo timestamp
        0, 0, 0, 100, // elapsed
        0, 0, 0, 0, 0, 1, 0x86, 0xa0, // x_recv 100000
        0x01, 0, 0, 0, // p = 1/256
        0x12, 0x34, 0x56, 0x78, // echoed nonce
        2, 0, 0, 0, // two loss intervals, reserved
        0, 0, 0x01, 0x00, // the open interval starts at 256
        0, 0, 0, 3, // its tail: 3 packets
        0, 0, 0, 1, 0, 0, 0, 20, 0xab, 0xcd, 0, 0, // open: lossy 1, data 20, sum 0xabcd
        0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 2, 0, // synthetic, length 99
    ];

    fn intervals() -> LossIntervals {
        let mut intervals = LossIntervals {
            open_start: 256,
            tail: 3,
            count: 0,
            entries: Default::default(),
        };
        intervals.push(LossInterval {
            lossy: 1,
            data: 20,
            sum: 0xabcd,
            flags: 0,
        });
        intervals.push(LossInterval {
            lossy: 0,
            data: 99,
            sum: 0,
            flags: LossInterval::SYNTHETIC,
        });
        intervals
    }

    fn data_repr() -> DataRepr {
        DataRepr {
            session_id: 0xdead_beef,
            sequence: 7,
            timestamp: 1000,
            rtt_micros: 10_000,
            veno_backlog_millipackets: 1500,
            nonce: 0x1234_5678,
        }
    }

    #[test]
    fn parses_fixed_data_bytes() {
        let packet = Packet::new_checked(&DATA_BYTES[..]).unwrap();
        assert_eq!(DataRepr::parse(&packet).unwrap(), data_repr());
        assert_eq!(packet.payload(), b"abcd");
    }

    #[test]
    fn emits_fixed_data_bytes() {
        let mut buffer = [0u8; 36];
        data_repr().emit(&mut buffer).unwrap();
        buffer[32..].copy_from_slice(b"abcd");
        assert_eq!(buffer, DATA_BYTES);
    }

    #[test]
    fn marks_depend_on_key_and_sequence_and_the_token_is_constant() {
        let key = 0x0123_4567_89ab_cdef;
        let token = session_token(key);
        let marks: Vec<u16> = (0..64).map(|sequence| packet_mark(key, sequence)).collect();
        let mut distinct = marks.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() >= 60, "{marks:?}");
        assert_ne!(packet_mark(key ^ 1, 5), packet_mark(key, 5));
        assert_ne!(session_token(key ^ 1), token);
        for sequence in [0, 1, u32::MAX] {
            let nonce = PacketMarker::new(key).nonce(sequence);
            assert_eq!((nonce >> 16) as u16, token);
            assert_eq!(nonce as u16, packet_mark(key, sequence));
        }
    }

    #[test]
    fn fixed_feedback_bytes_both_ways() {
        let repr = FeedbackRepr {
            session_id: 9,
            echo_sequence: u32::MAX,
            echo_timestamp: 5,
            elapsed_micros: 100,
            x_recv: 100_000,
            loss_event_rate_raw: 1 << 24,
            echo_nonce: 0x1234_5678,
            proof_flags: 0x4005,
            intervals: intervals(),
        };
        assert_eq!(Repr::parse(&FEEDBACK_BYTES).unwrap(), Repr::Feedback(repr));
        assert_eq!(repr.buffer_len(), 76);
        assert_eq!(feedback_len_of(&FEEDBACK_BYTES).unwrap(), 76);
        assert_eq!(repr.intervals.entries[1].span(), 0);
        assert_eq!(repr.intervals.entries[0].span(), 21);
        assert_eq!(
            repr.proof(),
            ReceiptProof {
                offset: 2,
                length: 5,
                sum: 0x5678
            }
        );
        assert_eq!(repr.proof().flags(), 0x4005);
        assert_eq!(repr.proof().echo_nonce(0x1234), 0x1234_5678);
        assert_eq!(repr.loss_event_rate(), 1.0 / 256.0);
        let mut buffer = [0xffu8; 76];
        repr.emit(&mut buffer).unwrap();
        assert_eq!(buffer, FEEDBACK_BYTES);
        assert!(repr.emit(&mut [0u8; 75]).is_err());
    }

    #[test]
    fn loss_intervals_hold_at_most_nine() {
        let mut intervals = LossIntervals::default();
        for _ in 1..MAX_LOSS_INTERVALS {
            assert!(intervals.push(LossInterval::default()));
        }
        assert_eq!(usize::from(intervals.count), MAX_LOSS_INTERVALS);
        assert!(!intervals.push(LossInterval::default()));
        assert_eq!(intervals.iter().count(), MAX_LOSS_INTERVALS);
        assert_eq!(feedback_len(MAX_LOSS_INTERVALS), MAX_FEEDBACK_LEN);
        assert_eq!(MAX_FEEDBACK_LEN, 160);
        assert_eq!(MIN_FEEDBACK_LEN, 64);
    }

    #[test]
    fn rejects_malformed() {
        assert_eq!(Repr::parse(&[]), Err(Error));
        assert_eq!(Repr::parse(&DATA_BYTES[..31]), Err(Error));
        assert_eq!(Repr::parse(&FEEDBACK_BYTES[..75]), Err(Error));
        assert_eq!(Repr::parse(&FEEDBACK_BYTES[..40]), Err(Error));
        // Wire format 1's feedback (kind 2, 40 bytes, no loss intervals) is refused.
        let mut version_one = FEEDBACK_BYTES;
        version_one[1] = 2;
        assert_eq!(Repr::parse(&version_one), Err(Error));
        for count in [0, 10, 255] {
            let mut wrong_count = FEEDBACK_BYTES;
            wrong_count[40] = count;
            assert_eq!(Repr::parse(&wrong_count), Err(Error), "count {count}");
        }
        let mut wrong_version = DATA_BYTES;
        wrong_version[0] = 2;
        assert_eq!(Repr::parse(&wrong_version), Err(Error));
        let mut wrong_kind = DATA_BYTES;
        wrong_kind[1] = 3;
        assert_eq!(Repr::parse(&wrong_kind), Err(Error));
        let feedback = Packet::new_checked(&FEEDBACK_BYTES[..]).unwrap();
        assert_eq!(DataRepr::parse(&feedback), Err(Error));
        assert!(data_repr().emit(&mut [0u8; 10]).is_err());
    }

    #[test]
    fn loss_rate_encoding() {
        assert_eq!(encode_loss_event_rate(0.0), 0);
        assert_eq!(encode_loss_event_rate(-1.0), 0);
        assert_eq!(encode_loss_event_rate(f64::NAN), 0);
        assert_eq!(encode_loss_event_rate(1.0), u32::MAX);
        assert_eq!(encode_loss_event_rate(1e-15), 1);
        assert_eq!(decode_loss_event_rate(u32::MAX), 1.0);
        let p = 0.0123;
        assert!((decode_loss_event_rate(encode_loss_event_rate(p)) - p).abs() < 1e-9);
    }

    #[test]
    fn serial_number_distance_wraps() {
        assert_eq!(sequence_distance(u32::MAX, 0), 1);
        assert_eq!(sequence_distance(0, u32::MAX), -1);
        assert_eq!(sequence_distance(10, 20), 10);
    }

    proptest! {
        #[test]
        fn receipt_proof_round_trips_through_its_fields(offset in 0..=PROOF_MAX_OFFSET,
                                                        length in 0..=PROOF_WINDOW,
                                                        sum: u16, token: u16) {
            let proof = ReceiptProof { offset, length, sum };
            let echo_nonce = proof.echo_nonce(token);
            prop_assert_eq!((echo_nonce >> 16) as u16, token);
            prop_assert_eq!(ReceiptProof::from_fields(proof.flags(), echo_nonce), proof);
        }

        #[test]
        fn data_round_trip(session_id: u32, sequence: u32, timestamp: u64, rtt_micros: u32,
                           veno_backlog_millipackets: u32, nonce: u32,
                           payload in proptest::collection::vec(any::<u8>(), 0..64)) {
            let repr = DataRepr { session_id, sequence, timestamp, rtt_micros, veno_backlog_millipackets, nonce };
            let mut buffer = vec![0u8; repr.buffer_len() + payload.len()];
            repr.emit(&mut buffer).unwrap();
            buffer[DATA_HEADER_LEN..].copy_from_slice(&payload);
            let packet = Packet::new_checked(&buffer[..]).unwrap();
            prop_assert_eq!(DataRepr::parse(&packet).unwrap(), repr);
            prop_assert_eq!(packet.payload(), &payload[..]);
        }

        #[test]
        fn feedback_round_trip(session_id: u32, echo_sequence: u32, echo_timestamp: u64,
                               elapsed_micros: u32, x_recv: u64, loss_event_rate_raw: u32, echo_nonce: u32, proof_flags: u16,
                               open_start: u32, tail: u32,
                               entries in proptest::collection::vec((any::<u32>(), any::<u32>(), any::<u16>(), 0u8..4), 1..=MAX_LOSS_INTERVALS)) {
            let mut intervals = LossIntervals { open_start, tail, count: 0, entries: Default::default() };
            for (lossy, data, sum, flags) in entries {
                let pushed = intervals.push(LossInterval { lossy, data, sum, flags });
                prop_assert!(pushed);
            }
            let repr = FeedbackRepr { session_id, echo_sequence, echo_timestamp, elapsed_micros, x_recv, loss_event_rate_raw, echo_nonce, proof_flags, intervals };
            let mut buffer = vec![0u8; repr.buffer_len()];
            repr.emit(&mut buffer).unwrap();
            prop_assert_eq!(Repr::parse(&buffer).unwrap(), Repr::Feedback(repr));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(packet) = Packet::new_checked(&bytes[..]) {
                // Every accessor of the packet's kind is safe after the check.
                let _ = (packet.version(), packet.flags(), packet.session_id());
                match packet.kind() {
                    PacketKind::Data => { let _ = (packet.sequence(), packet.timestamp(), packet.payload()); }
                    PacketKind::Feedback => {
                        let _ = (packet.echo_timestamp(), packet.x_recv(), packet.echo_nonce(), packet.loss_intervals());
                        prop_assert!(feedback_len_of(&bytes).unwrap() <= bytes.len());
                    }
                }
            }
            let _ = Repr::parse(&bytes);
        }
    }

    #[test]
    fn ns2_flags_round_trip_and_wrap() {
        let flags = ns2_flags(0x1_0005, true);
        assert_eq!(flags & NS2_ROUND_MASK, 5);
        assert_ne!(flags & NS2_URGENT_FLAG, 0);
        assert_eq!(ns2_flags(7, false), 7);
        assert!(ns2_round_after(6, 5));
        assert!(!ns2_round_after(5, 5));
        assert!(!ns2_round_after(4, 5));
        assert!(ns2_round_after(1, NS2_ROUND_MASK)); // wrapped
        let mut buffer = [0u8; DATA_HEADER_LEN];
        DataRepr {
            session_id: 1,
            sequence: 2,
            timestamp: 3,
            rtt_micros: 4,
            veno_backlog_millipackets: 5,
            nonce: 6,
        }
        .emit(&mut buffer)
        .unwrap();
        let mut packet = Packet::new_checked(&mut buffer[..]).unwrap();
        packet.set_flags(flags);
        assert_eq!(packet.flags(), flags);
        assert_eq!(DataRepr::parse(&packet).unwrap().sequence, 2);
    }
}
