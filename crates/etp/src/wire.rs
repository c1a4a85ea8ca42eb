//! Wire format of ETP packets and of the frames inside data packets.
//!
//! Parsing never panics: [`Packet::new_checked`] checks the common header once, and [`Repr::parse`]
//! and [`Frames`] read every variable part through a bounds-checked [`Reader`]; malformed input
//! gives a [`WireError`] naming what was wrong. Every `Repr` has `parse`, `emit` and
//! `buffer_len`; `emit(parse(x))` reproduces `x` for well-formed packets.
//!
//! All integers are big-endian. Layout (byte offsets):
//!
//! ```text
//! common header (8 bytes)
//!   0      version byte 0xE1 (ETP version 1; never a TFRC version byte)
//!   1      type (below)
//!   2..4   flags, reserved: sent as 0, ignored
//!   4..8   connection id, chosen by the connecting side
//! 1  INIT             client tag u32, descriptor length u16, descriptor (JSON)
//! 2  INIT_ACK         client tag u32, cookie (24 bytes)
//! 3  COOKIE_ECHO      cookie (24), client tag u32, descriptor length u16, descriptor (JSON)
//! 4  COOKIE_ACK       -
//! 5  DATA             packet number u64, rate epoch u16, sender's minimum RTT µs u32,
//!                     then a whole TFRC data packet (tfrc_proto::wire) whose payload is frames
//! 6  ACK              rate epoch u16, ack delay µs u32, has-feedback u8,
//!                     [TFRC feedback packet, 64–160 bytes, its length in its header], range count u8,
//!                     ranges (first u64, last u64), newest first, at most 64
//! 7  CLOSE            code u16, reason length u16, reason (UTF-8)
//! 8  CLOSE_ACK        -
//! 9  ERROR            code u16, reason length u16, reason (UTF-8)
//! 10 PING             -   (asks for an ACK: keep-alive)
//! 11 RECONFIGURE      change id u32, descriptor length u16, descriptor (JSON)
//! 12 RECONFIGURE_ACK  change id u32, accepted u8, reason length u16, reason (UTF-8)
//!
//! frames in the TFRC payload of a DATA packet
//! 0  PADDING          the rest of the packet is padding
//! 1  FRAGMENT         stream u16, domain u16, flags u8 (bit 0: ordered), message number u32,
//!                     message length u32, offset u32, deadline u64 (ns on the sender's clock,
//!                     0 = none), length u16, bytes
//! 2  FORWARD          domain u16, flags u8 (bit 0: ordered), forward u32: every message of the
//!                     domain numbered below `forward` is acknowledged or abandoned
//! ```

use core::fmt;

/// First byte of every ETP packet.
pub const VERSION: u8 = 0xE1;
/// Common header length.
pub const HEADER_LEN: usize = 8;
/// Cookie length.
pub const COOKIE_LEN: usize = 24;
/// ETP part of a DATA packet before the embedded TFRC packet.
pub const DATA_HEADER_LEN: usize = HEADER_LEN + 8 + 2 + 4;
/// Fragment frame header, before its bytes.
pub const FRAGMENT_HEADER_LEN: usize = 1 + 2 + 2 + 1 + 4 + 4 + 4 + 8 + 2;
/// Forward frame length.
pub const FORWARD_LEN: usize = 1 + 2 + 1 + 4;
/// Most acknowledgement ranges in one ACK.
pub const MAX_ACK_RANGES: usize = 64;
/// Most bytes of a reason text.
pub const MAX_REASON_LEN: usize = 512;

/// What was wrong with a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Shorter than the field being read.
    #[error("truncated {0}")]
    Truncated(&'static str),
    /// Not an ETP packet (first byte).
    #[error("not an ETP packet (version byte {0:#04x})")]
    Version(u8),
    /// Unknown packet type.
    #[error("unknown packet type {0}")]
    PacketType(u8),
    /// Unknown frame type.
    #[error("unknown frame type {0}")]
    FrameType(u8),
    /// A field with an impossible value.
    #[error("invalid {0}")]
    Invalid(&'static str),
    /// The output buffer is too small.
    #[error("buffer too small ({needed} bytes needed)")]
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
    },
}

/// Result of wire operations.
pub type Result<T> = core::result::Result<T, WireError>;

/// Packet types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketType {
    /// Connection request.
    Init = 1,
    /// The listener's stateless answer with a cookie.
    InitAck = 2,
    /// The cookie back, proving the requester's address.
    CookieEcho = 3,
    /// Connection established.
    CookieAck = 4,
    /// Data.
    Data = 5,
    /// Acknowledgement and TFRC feedback.
    Ack = 6,
    /// Close request.
    Close = 7,
    /// Close confirmed.
    CloseAck = 8,
    /// Refusal or fatal error.
    Error = 9,
    /// Keep-alive.
    Ping = 10,
    /// Descriptor change request.
    Reconfigure = 11,
    /// Descriptor change answer.
    ReconfigureAck = 12,
}

impl PacketType {
    /// The type of a code.
    pub fn from_code(code: u8) -> Result<PacketType> {
        Ok(match code {
            1 => PacketType::Init,
            2 => PacketType::InitAck,
            3 => PacketType::CookieEcho,
            4 => PacketType::CookieAck,
            5 => PacketType::Data,
            6 => PacketType::Ack,
            7 => PacketType::Close,
            8 => PacketType::CloseAck,
            9 => PacketType::Error,
            10 => PacketType::Ping,
            11 => PacketType::Reconfigure,
            12 => PacketType::ReconfigureAck,
            other => return Err(WireError::PacketType(other)),
        })
    }
}

/// A view of the common header of an ETP packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer and checks the common header (length, version, type).
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let data = buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(WireError::Truncated("header"));
        }
        if data[0] != VERSION {
            return Err(WireError::Version(data[0]));
        }
        PacketType::from_code(data[1])?;
        Ok(Packet { buffer })
    }

    /// The packet type.
    pub fn packet_type(&self) -> PacketType {
        PacketType::from_code(self.buffer.as_ref()[1]).unwrap_or(PacketType::Error)
    }

    /// The connection id.
    pub fn connection_id(&self) -> u32 {
        let data = self.buffer.as_ref();
        u32::from_be_bytes([data[4], data[5], data[6], data[7]])
    }

    /// Everything after the common header.
    pub fn body(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

/// A bounds-checked reader over a byte slice.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes }
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.bytes.len()
    }

    /// The next `count` bytes.
    pub fn take(&mut self, count: usize, what: &'static str) -> Result<&'a [u8]> {
        if self.bytes.len() < count {
            return Err(WireError::Truncated(what));
        }
        let (head, tail) = self.bytes.split_at(count);
        self.bytes = tail;
        Ok(head)
    }

    /// What is left, not consumed.
    pub fn peek(&self) -> &'a [u8] {
        self.bytes
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.bytes)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    /// A byte.
    pub fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    /// A big-endian u16.
    pub fn u16(&mut self, what: &'static str) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    /// A big-endian u32.
    pub fn u32(&mut self, what: &'static str) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    /// A big-endian u64.
    pub fn u64(&mut self, what: &'static str) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array(what)?))
    }

    /// A u16 length followed by that many bytes.
    pub fn bytes16(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let length = self.u16(what)? as usize;
        self.take(length, what)
    }
}

/// A writer into a byte buffer that checks room first.
#[derive(Debug)]
pub struct Writer<'a> {
    buffer: &'a mut [u8],
    position: usize,
}

impl<'a> Writer<'a> {
    /// A writer at the start of `buffer`.
    pub fn new(buffer: &'a mut [u8]) -> Writer<'a> {
        Writer {
            buffer,
            position: 0,
        }
    }

    /// Bytes written so far.
    pub fn position(&self) -> usize {
        self.position
    }

    /// Appends bytes.
    pub fn put(&mut self, bytes: &[u8]) -> Result<()> {
        let end = self.position + bytes.len();
        if end > self.buffer.len() {
            return Err(WireError::BufferTooSmall { needed: end });
        }
        self.buffer[self.position..end].copy_from_slice(bytes);
        self.position = end;
        Ok(())
    }

    /// A u16 length then the bytes.
    pub fn put16(&mut self, bytes: &[u8]) -> Result<()> {
        let length = u16::try_from(bytes.len()).map_err(|_| WireError::Invalid("length"))?;
        self.put(&length.to_be_bytes())?;
        self.put(bytes)
    }
}

/// A parsed ETP packet; variable parts borrow from the datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repr<'a> {
    /// Connection request.
    Init {
        /// Connection id.
        connection_id: u32,
        /// A random value of the requester, echoed in INIT_ACK.
        client_tag: u32,
        /// Descriptor JSON.
        descriptor: &'a [u8],
    },
    /// Stateless answer.
    InitAck {
        /// Connection id.
        connection_id: u32,
        /// Echo of the requester's tag.
        client_tag: u32,
        /// The cookie.
        cookie: [u8; COOKIE_LEN],
    },
    /// Cookie echoed back.
    CookieEcho {
        /// Connection id.
        connection_id: u32,
        /// The cookie from INIT_ACK.
        cookie: [u8; COOKIE_LEN],
        /// The requester's tag.
        client_tag: u32,
        /// Descriptor JSON (again: the listener kept nothing).
        descriptor: &'a [u8],
    },
    /// Established.
    CookieAck {
        /// Connection id.
        connection_id: u32,
    },
    /// Data.
    Data {
        /// Connection id.
        connection_id: u32,
        /// ETP packet number (acknowledged by ACK ranges), never reused.
        packet_number: u64,
        /// Rate-control epoch: changes when the rate control is replaced.
        epoch: u16,
        /// The sender's smallest RTT sample in µs (0 = none), used by the receiver to map
        /// deadlines to its own clock.
        min_rtt_micros: u32,
        /// The embedded TFRC data packet (header and frames).
        tfrc: &'a [u8],
    },
    /// Acknowledgement.
    Ack {
        /// Connection id.
        connection_id: u32,
        /// Rate-control epoch the feedback belongs to.
        epoch: u16,
        /// Time between the newest acknowledged packet's arrival and this ACK, µs.
        ack_delay_micros: u32,
        /// The TFRC feedback packet, if one was due.
        feedback: Option<&'a [u8]>,
        /// Received packet-number ranges (first, last), inclusive, newest first.
        ranges: AckRanges<'a>,
    },
    /// Close request.
    Close {
        /// Connection id.
        connection_id: u32,
        /// Reason code (see `connection::close_code`).
        code: u16,
        /// Reason text.
        reason: &'a [u8],
    },
    /// Close confirmed.
    CloseAck {
        /// Connection id.
        connection_id: u32,
    },
    /// Refusal or fatal error.
    Error {
        /// Connection id.
        connection_id: u32,
        /// Error code.
        code: u16,
        /// Text for the user.
        reason: &'a [u8],
    },
    /// Keep-alive.
    Ping {
        /// Connection id.
        connection_id: u32,
    },
    /// Descriptor change request.
    Reconfigure {
        /// Connection id.
        connection_id: u32,
        /// Id of this change.
        change_id: u32,
        /// New descriptor JSON.
        descriptor: &'a [u8],
    },
    /// Descriptor change answer.
    ReconfigureAck {
        /// Connection id.
        connection_id: u32,
        /// Id of the change answered.
        change_id: u32,
        /// True if applied.
        accepted: bool,
        /// Why not, if refused.
        reason: &'a [u8],
    },
}

/// The ranges of an ACK: borrowed bytes when parsed, or a slice of pairs when built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckRanges<'a> {
    /// Raw pairs from the wire (validated at parse time).
    Wire(&'a [u8]),
    /// Pairs (first, last).
    Pairs(&'a [(u64, u64)]),
}

impl AckRanges<'_> {
    /// Number of ranges.
    pub fn len(&self) -> usize {
        match self {
            AckRanges::Wire(bytes) => bytes.len() / 16,
            AckRanges::Pairs(pairs) => pairs.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ranges as pairs.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..self.len()).map(move |index| match self {
            AckRanges::Wire(bytes) => {
                let chunk = &bytes[index * 16..index * 16 + 16];
                let mut first = [0u8; 8];
                let mut last = [0u8; 8];
                first.copy_from_slice(&chunk[..8]);
                last.copy_from_slice(&chunk[8..]);
                (u64::from_be_bytes(first), u64::from_be_bytes(last))
            }
            AckRanges::Pairs(pairs) => pairs[index],
        })
    }
}

/// The body of a DATA packet after the common header: packet number, epoch, minimum RTT and
/// the embedded TFRC data packet (checked to be one).
fn parse_data<'a>(reader: &mut Reader<'a>, connection_id: u32) -> Result<Repr<'a>> {
    let packet_number = reader.u64("packet number")?;
    let epoch = reader.u16("epoch")?;
    let min_rtt_micros = reader.u32("minimum RTT")?;
    let tfrc = reader.rest();
    tfrc_proto::wire::Packet::new_checked(tfrc)
        .ok()
        .filter(|inner| inner.kind() == tfrc_proto::wire::PacketKind::Data)
        .ok_or(WireError::Invalid("embedded TFRC data packet"))?;
    Ok(Repr::Data {
        connection_id,
        packet_number,
        epoch,
        min_rtt_micros,
        tfrc,
    })
}

/// The body of an ACK packet after the common header: epoch, ACK delay, the optional embedded
/// TFRC feedback packet (checked to be one) and the acknowledged ranges (each first ≤ last).
fn parse_ack<'a>(reader: &mut Reader<'a>, connection_id: u32) -> Result<Repr<'a>> {
    let epoch = reader.u16("epoch")?;
    let ack_delay_micros = reader.u32("ack delay")?;
    let feedback = match reader.u8("feedback flag")? {
        0 => None,
        1 => {
            let length = tfrc_proto::wire::feedback_len_of(reader.peek())
                .map_err(|_| WireError::Invalid("embedded TFRC feedback packet"))?;
            let bytes = reader.take(length, "feedback")?;
            tfrc_proto::wire::Packet::new_checked(bytes)
                .ok()
                .filter(|inner| inner.kind() == tfrc_proto::wire::PacketKind::Feedback)
                .ok_or(WireError::Invalid("embedded TFRC feedback packet"))?;
            Some(bytes)
        }
        _ => return Err(WireError::Invalid("feedback flag")),
    };
    let count = reader.u8("range count")? as usize;
    if count > MAX_ACK_RANGES {
        return Err(WireError::Invalid("range count"));
    }
    let raw = reader.take(count * 16, "ack ranges")?;
    let ranges = AckRanges::Wire(raw);
    if ranges.iter().any(|(first, last)| first > last) {
        return Err(WireError::Invalid("ack range (first > last)"));
    }
    Ok(Repr::Ack {
        connection_id,
        epoch,
        ack_delay_micros,
        feedback,
        ranges,
    })
}

fn cookie(reader: &mut Reader<'_>) -> Result<[u8; COOKIE_LEN]> {
    let mut out = [0u8; COOKIE_LEN];
    out.copy_from_slice(reader.take(COOKIE_LEN, "cookie")?);
    Ok(out)
}

impl<'a> Repr<'a> {
    /// Parses a whole datagram.
    pub fn parse(bytes: &'a [u8]) -> Result<Repr<'a>> {
        let packet = Packet::new_checked(bytes)?;
        let connection_id = packet.connection_id();
        let mut reader = Reader::new(&bytes[HEADER_LEN..]);
        let repr = match packet.packet_type() {
            PacketType::Init => Repr::Init {
                connection_id,
                client_tag: reader.u32("client tag")?,
                descriptor: reader.bytes16("descriptor")?,
            },
            PacketType::InitAck => Repr::InitAck {
                connection_id,
                client_tag: reader.u32("client tag")?,
                cookie: cookie(&mut reader)?,
            },
            PacketType::CookieEcho => Repr::CookieEcho {
                connection_id,
                cookie: cookie(&mut reader)?,
                client_tag: reader.u32("client tag")?,
                descriptor: reader.bytes16("descriptor")?,
            },
            PacketType::CookieAck => Repr::CookieAck { connection_id },
            PacketType::Data => parse_data(&mut reader, connection_id)?,
            PacketType::Ack => parse_ack(&mut reader, connection_id)?,
            PacketType::Close => Repr::Close {
                connection_id,
                code: reader.u16("close code")?,
                reason: reader.bytes16("reason")?,
            },
            PacketType::CloseAck => Repr::CloseAck { connection_id },
            PacketType::Error => Repr::Error {
                connection_id,
                code: reader.u16("error code")?,
                reason: reader.bytes16("reason")?,
            },
            PacketType::Ping => Repr::Ping { connection_id },
            PacketType::Reconfigure => Repr::Reconfigure {
                connection_id,
                change_id: reader.u32("change id")?,
                descriptor: reader.bytes16("descriptor")?,
            },
            PacketType::ReconfigureAck => Repr::ReconfigureAck {
                connection_id,
                change_id: reader.u32("change id")?,
                accepted: match reader.u8("accepted flag")? {
                    0 => false,
                    1 => true,
                    _ => return Err(WireError::Invalid("accepted flag")),
                },
                reason: reader.bytes16("reason")?,
            },
        };
        if !matches!(repr, Repr::Data { .. }) && reader.remaining() != 0 {
            return Err(WireError::Invalid("trailing bytes"));
        }
        Ok(repr)
    }

    fn type_and_id(&self) -> (PacketType, u32) {
        match *self {
            Repr::Init { connection_id, .. } => (PacketType::Init, connection_id),
            Repr::InitAck { connection_id, .. } => (PacketType::InitAck, connection_id),
            Repr::CookieEcho { connection_id, .. } => (PacketType::CookieEcho, connection_id),
            Repr::CookieAck { connection_id } => (PacketType::CookieAck, connection_id),
            Repr::Data { connection_id, .. } => (PacketType::Data, connection_id),
            Repr::Ack { connection_id, .. } => (PacketType::Ack, connection_id),
            Repr::Close { connection_id, .. } => (PacketType::Close, connection_id),
            Repr::CloseAck { connection_id } => (PacketType::CloseAck, connection_id),
            Repr::Error { connection_id, .. } => (PacketType::Error, connection_id),
            Repr::Ping { connection_id } => (PacketType::Ping, connection_id),
            Repr::Reconfigure { connection_id, .. } => (PacketType::Reconfigure, connection_id),
            Repr::ReconfigureAck { connection_id, .. } => {
                (PacketType::ReconfigureAck, connection_id)
            }
        }
    }

    /// The connection id.
    pub fn connection_id(&self) -> u32 {
        self.type_and_id().1
    }

    /// Length of the emitted packet.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match self {
                Repr::Init { descriptor, .. } => 4 + 2 + descriptor.len(),
                Repr::InitAck { .. } => 4 + COOKIE_LEN,
                Repr::CookieEcho { descriptor, .. } => COOKIE_LEN + 4 + 2 + descriptor.len(),
                Repr::CookieAck { .. } | Repr::CloseAck { .. } | Repr::Ping { .. } => 0,
                Repr::Data { tfrc, .. } => 8 + 2 + 4 + tfrc.len(),
                Repr::Ack {
                    feedback, ranges, ..
                } => 2 + 4 + 1 + feedback.map_or(0, <[u8]>::len) + 1 + 16 * ranges.len(),
                Repr::Close { reason, .. } | Repr::Error { reason, .. } => 2 + 2 + reason.len(),
                Repr::Reconfigure { descriptor, .. } => 4 + 2 + descriptor.len(),
                Repr::ReconfigureAck { reason, .. } => 4 + 1 + 2 + reason.len(),
            }
    }

    /// Writes the packet; returns its length.
    pub fn emit(&self, buffer: &mut [u8]) -> Result<usize> {
        let needed = self.buffer_len();
        if buffer.len() < needed {
            return Err(WireError::BufferTooSmall { needed });
        }
        let (packet_type, connection_id) = self.type_and_id();
        let mut writer = Writer::new(buffer);
        writer.put(&[VERSION, packet_type as u8, 0, 0])?;
        writer.put(&connection_id.to_be_bytes())?;
        match self {
            Repr::Init {
                client_tag,
                descriptor,
                ..
            } => {
                writer.put(&client_tag.to_be_bytes())?;
                writer.put16(descriptor)?;
            }
            Repr::InitAck {
                client_tag, cookie, ..
            } => {
                writer.put(&client_tag.to_be_bytes())?;
                writer.put(cookie)?;
            }
            Repr::CookieEcho {
                cookie,
                client_tag,
                descriptor,
                ..
            } => {
                writer.put(cookie)?;
                writer.put(&client_tag.to_be_bytes())?;
                writer.put16(descriptor)?;
            }
            Repr::CookieAck { .. } | Repr::CloseAck { .. } | Repr::Ping { .. } => {}
            Repr::Data {
                packet_number,
                epoch,
                min_rtt_micros,
                tfrc,
                ..
            } => {
                writer.put(&packet_number.to_be_bytes())?;
                writer.put(&epoch.to_be_bytes())?;
                writer.put(&min_rtt_micros.to_be_bytes())?;
                writer.put(tfrc)?;
            }
            Repr::Ack {
                epoch,
                ack_delay_micros,
                feedback,
                ranges,
                ..
            } => emit_ack(&mut writer, (*epoch, *ack_delay_micros), *feedback, ranges)?,
            Repr::Close { code, reason, .. } | Repr::Error { code, reason, .. } => {
                writer.put(&code.to_be_bytes())?;
                writer.put16(reason)?;
            }
            Repr::Reconfigure {
                change_id,
                descriptor,
                ..
            } => {
                writer.put(&change_id.to_be_bytes())?;
                writer.put16(descriptor)?;
            }
            Repr::ReconfigureAck {
                change_id,
                accepted,
                reason,
                ..
            } => {
                writer.put(&change_id.to_be_bytes())?;
                writer.put(&[u8::from(*accepted)])?;
                writer.put16(reason)?;
            }
        }
        Ok(writer.position())
    }
}

/// The body of an ACK packet: epoch, ACK delay, the feedback flag and the embedded TFRC
/// feedback packet if any, then the acknowledged ranges (at most [`MAX_ACK_RANGES`]).
fn emit_ack(
    writer: &mut Writer<'_>,
    (epoch, ack_delay_micros): (u16, u32),
    feedback: Option<&[u8]>,
    ranges: &AckRanges<'_>,
) -> Result<()> {
    writer.put(&epoch.to_be_bytes())?;
    writer.put(&ack_delay_micros.to_be_bytes())?;
    match feedback {
        Some(bytes) => {
            writer.put(&[1])?;
            writer.put(bytes)?;
        }
        None => writer.put(&[0])?,
    }
    if ranges.len() > MAX_ACK_RANGES {
        return Err(WireError::Invalid("range count"));
    }
    writer.put(&[ranges.len() as u8])?;
    for (first, last) in ranges.iter() {
        writer.put(&first.to_be_bytes())?;
        writer.put(&last.to_be_bytes())?;
    }
    Ok(())
}

/// Writes the ETP part of a DATA packet (the first [`DATA_HEADER_LEN`] bytes) in place, in
/// front of a TFRC packet already written at `buffer[DATA_HEADER_LEN..]`.
pub fn emit_data_header(
    buffer: &mut [u8],
    connection_id: u32,
    packet_number: u64,
    epoch: u16,
    min_rtt_micros: u32,
) -> Result<()> {
    if buffer.len() < DATA_HEADER_LEN {
        return Err(WireError::BufferTooSmall {
            needed: DATA_HEADER_LEN,
        });
    }
    let mut writer = Writer::new(&mut buffer[..DATA_HEADER_LEN]);
    writer.put(&[VERSION, PacketType::Data as u8, 0, 0])?;
    writer.put(&connection_id.to_be_bytes())?;
    writer.put(&packet_number.to_be_bytes())?;
    writer.put(&epoch.to_be_bytes())?;
    writer.put(&min_rtt_micros.to_be_bytes())
}

/// One frame of a DATA packet's payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A piece of a message.
    Fragment(FragmentFrame<'a>),
    /// Messages below `forward` in `domain` are resolved (acknowledged or abandoned).
    Forward {
        /// Ordering domain.
        domain: u16,
        /// True if the domain is delivered in order.
        ordered: bool,
        /// First unresolved message number.
        forward: u32,
    },
}

/// A piece of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FragmentFrame<'a> {
    /// Stream id.
    pub stream: u16,
    /// Ordering domain the message is numbered in.
    pub domain: u16,
    /// True if the domain is delivered in order.
    pub ordered: bool,
    /// Message number within the domain.
    pub message: u32,
    /// Whole message length.
    pub message_length: u32,
    /// Offset of these bytes in the message.
    pub offset: u32,
    /// Deadline on the sender's clock (ns), 0 = none.
    pub deadline: u64,
    /// The bytes.
    pub data: &'a [u8],
}

impl<'a> Frame<'a> {
    /// Emitted length.
    pub fn buffer_len(&self) -> usize {
        match self {
            Frame::Fragment(fragment) => FRAGMENT_HEADER_LEN + fragment.data.len(),
            Frame::Forward { .. } => FORWARD_LEN,
        }
    }

    /// Writes the frame; returns its length.
    pub fn emit(&self, buffer: &mut [u8]) -> Result<usize> {
        let needed = self.buffer_len();
        if buffer.len() < needed {
            return Err(WireError::BufferTooSmall { needed });
        }
        let mut writer = Writer::new(buffer);
        match self {
            Frame::Fragment(fragment) => {
                writer.put(&[1])?;
                writer.put(&fragment.stream.to_be_bytes())?;
                writer.put(&fragment.domain.to_be_bytes())?;
                writer.put(&[u8::from(fragment.ordered)])?;
                writer.put(&fragment.message.to_be_bytes())?;
                writer.put(&fragment.message_length.to_be_bytes())?;
                writer.put(&fragment.offset.to_be_bytes())?;
                writer.put(&fragment.deadline.to_be_bytes())?;
                writer.put16(fragment.data)?;
            }
            Frame::Forward {
                domain,
                ordered,
                forward,
            } => {
                writer.put(&[2])?;
                writer.put(&domain.to_be_bytes())?;
                writer.put(&[u8::from(*ordered)])?;
                writer.put(&forward.to_be_bytes())?;
            }
        }
        Ok(writer.position())
    }

    fn parse(reader: &mut Reader<'a>) -> Result<Option<Frame<'a>>> {
        if reader.remaining() == 0 {
            return Ok(None);
        }
        match reader.u8("frame type")? {
            0 => {
                reader.rest();
                Ok(None)
            }
            1 => {
                let stream = reader.u16("fragment stream")?;
                let domain = reader.u16("fragment domain")?;
                let ordered = flag(reader.u8("fragment flags")?)?;
                let message = reader.u32("message number")?;
                let message_length = reader.u32("message length")?;
                let offset = reader.u32("fragment offset")?;
                let deadline = reader.u64("deadline")?;
                let data = reader.bytes16("fragment data")?;
                if u64::from(offset) + data.len() as u64 > u64::from(message_length) {
                    return Err(WireError::Invalid("fragment beyond the message length"));
                }
                if data.is_empty() && message_length != 0 {
                    return Err(WireError::Invalid("empty fragment"));
                }
                Ok(Some(Frame::Fragment(FragmentFrame {
                    stream,
                    domain,
                    ordered,
                    message,
                    message_length,
                    offset,
                    deadline,
                    data,
                })))
            }
            2 => Ok(Some(Frame::Forward {
                domain: reader.u16("forward domain")?,
                ordered: flag(reader.u8("forward flags")?)?,
                forward: reader.u32("forward point")?,
            })),
            other => Err(WireError::FrameType(other)),
        }
    }
}

fn flag(byte: u8) -> Result<bool> {
    match byte {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(WireError::Invalid("frame flags")),
    }
}

/// Iterates over the frames of a DATA payload; stops at the first error.
#[derive(Debug, Clone)]
pub struct Frames<'a> {
    reader: Reader<'a>,
    failed: bool,
}

impl<'a> Frames<'a> {
    /// Frames of a payload.
    pub fn new(payload: &'a [u8]) -> Frames<'a> {
        Frames {
            reader: Reader::new(payload),
            failed: false,
        }
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<Frame<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match Frame::parse(&mut self.reader) {
            Ok(Some(frame)) => Some(Ok(frame)),
            Ok(None) => None,
            Err(error) => {
                self.failed = true;
                Some(Err(error))
            }
        }
    }
}

impl fmt::Display for PacketType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tfrc_data(payload: &[u8]) -> Vec<u8> {
        let repr = tfrc_proto::wire::DataRepr {
            session_id: 1,
            sequence: 2,
            timestamp: 3,
            rtt_micros: 4,
            veno_backlog_millipackets: 5,
            nonce: 6,
        };
        let mut bytes = vec![0u8; tfrc_proto::wire::DATA_HEADER_LEN + payload.len()];
        repr.emit(&mut bytes).unwrap();
        bytes[tfrc_proto::wire::DATA_HEADER_LEN..].copy_from_slice(payload);
        bytes
    }

    fn round_trip(repr: &Repr<'_>) {
        let mut buffer = vec![0u8; repr.buffer_len()];
        assert_eq!(repr.emit(&mut buffer).unwrap(), buffer.len());
        let parsed = Repr::parse(&buffer).unwrap();
        let mut again = vec![0u8; parsed.buffer_len()];
        parsed.emit(&mut again).unwrap();
        assert_eq!(buffer, again);
        assert!(repr.emit(&mut vec![0u8; buffer.len() - 1]).is_err());
    }

    #[test]
    fn fixed_bytes_of_an_init() {
        let repr = Repr::Init {
            connection_id: 0x0102_0304,
            client_tag: 7,
            descriptor: b"{}",
        };
        let mut buffer = [0u8; 16];
        assert_eq!(repr.emit(&mut buffer).unwrap(), 16);
        assert_eq!(
            buffer,
            [0xE1, 1, 0, 0, 1, 2, 3, 4, 0, 0, 0, 7, 0, 2, b'{', b'}']
        );
        assert_eq!(Repr::parse(&buffer).unwrap(), repr);
    }

    #[test]
    fn rejects_malformed_with_a_reason() {
        assert_eq!(Repr::parse(&[]), Err(WireError::Truncated("header")));
        assert_eq!(
            Repr::parse(&[1, 1, 0, 0, 0, 0, 0, 0]),
            Err(WireError::Version(1))
        );
        assert_eq!(
            Repr::parse(&[0xE1, 99, 0, 0, 0, 0, 0, 0]),
            Err(WireError::PacketType(99))
        );
        assert_eq!(
            Repr::parse(&[0xE1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 9, b'{']),
            Err(WireError::Truncated("descriptor"))
        );
        assert_eq!(
            Repr::parse(&[0xE1, 4, 0, 0, 0, 0, 0, 0, 5]),
            Err(WireError::Invalid("trailing bytes"))
        );
        // DATA whose embedded packet is not TFRC data.
        let mut data = vec![0xE1, 5, 0, 0, 0, 0, 0, 0];
        data.extend_from_slice(&[0u8; 14]);
        data.extend_from_slice(&[9u8; 40]);
        assert_eq!(
            Repr::parse(&data),
            Err(WireError::Invalid("embedded TFRC data packet"))
        );
    }

    #[test]
    fn fragment_beyond_message_is_rejected() {
        let frame = Frame::Fragment(FragmentFrame {
            stream: 1,
            domain: 1,
            ordered: true,
            message: 0,
            message_length: 3,
            offset: 2,
            deadline: 0,
            data: b"ab",
        });
        let mut buffer = vec![0u8; frame.buffer_len()];
        frame.emit(&mut buffer).unwrap();
        let parsed: Vec<_> = Frames::new(&buffer).collect();
        assert_eq!(
            parsed,
            vec![Err(WireError::Invalid(
                "fragment beyond the message length"
            ))]
        );
    }

    proptest! {
        #[test]
        fn every_packet_type_round_trips(
            connection_id: u32, tag: u32, number: u64, epoch: u16, code: u16,
            text in proptest::collection::vec(any::<u8>(), 0..40),
            ranges in proptest::collection::vec((any::<u64>(), 0u64..1000), 0..MAX_ACK_RANGES),
            cookie in proptest::array::uniform24(any::<u8>()),
            with_feedback: bool,
        ) {
            let tfrc = tfrc_data(&text);
            let pairs: Vec<(u64, u64)> = ranges.iter().map(|(first, extra)| (*first, first.saturating_add(*extra))).collect();
            let mut feedback = [0u8; tfrc_proto::wire::MIN_FEEDBACK_LEN];
            tfrc_proto::wire::FeedbackRepr {
                session_id: 1, echo_sequence: 2, echo_timestamp: 3, elapsed_micros: 4,
                x_recv: 5, loss_event_rate_raw: 6, echo_nonce: 7, proof_flags: 8,
                intervals: Default::default(),
            }.emit(&mut feedback).unwrap();
            let reprs = [
                Repr::Init { connection_id, client_tag: tag, descriptor: &text },
                Repr::InitAck { connection_id, client_tag: tag, cookie },
                Repr::CookieEcho { connection_id, cookie, client_tag: tag, descriptor: &text },
                Repr::CookieAck { connection_id },
                Repr::Data { connection_id, packet_number: number, epoch, min_rtt_micros: tag, tfrc: &tfrc },
                Repr::Ack { connection_id, epoch, ack_delay_micros: tag,
                    feedback: with_feedback.then_some(&feedback[..]), ranges: AckRanges::Pairs(&pairs) },
                Repr::Close { connection_id, code, reason: &text },
                Repr::CloseAck { connection_id },
                Repr::Error { connection_id, code, reason: &text },
                Repr::Ping { connection_id },
                Repr::Reconfigure { connection_id, change_id: tag, descriptor: &text },
                Repr::ReconfigureAck { connection_id, change_id: tag, accepted: with_feedback, reason: &text },
            ];
            for repr in &reprs {
                round_trip(repr);
            }
        }

        #[test]
        fn frames_round_trip(
            stream in 0u16..0x8000, domain: u16, ordered: bool, message: u32,
            offset in 0u32..1000, data in proptest::collection::vec(any::<u8>(), 1..100),
            extra in 0u32..1000, deadline: u64, forward: u32,
        ) {
            let message_length = offset + data.len() as u32 + extra;
            let frames = [
                Frame::Forward { domain, ordered, forward },
                Frame::Fragment(FragmentFrame { stream, domain, ordered, message, message_length, offset, deadline, data: &data }),
            ];
            let mut buffer = vec![0u8; frames.iter().map(Frame::buffer_len).sum::<usize>() + 5];
            let mut position = 0;
            for frame in &frames {
                position += frame.emit(&mut buffer[position..]).unwrap();
            }
            // Trailing zeros are padding.
            let parsed: Vec<Frame<'_>> = Frames::new(&buffer).collect::<Result<_>>().unwrap();
            prop_assert_eq!(&parsed[..], &frames[..]);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Repr::parse(&bytes);
            let _ = Frames::new(&bytes).count();
            if let Ok(Repr::Data { tfrc, .. }) = Repr::parse(&bytes) {
                let _ = Frames::new(&tfrc[tfrc_proto::wire::DATA_HEADER_LEN..]).count();
            }
        }
    }
}
