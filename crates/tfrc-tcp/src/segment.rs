//! What travels between a [`TcpSender`](crate::TcpSender) and a [`TcpSink`](crate::TcpSink):
//! data segments one way, acknowledgements the other.
//!
//! Both are plain structs, not bytes: the simulator only needs their sizes on the wire
//! ([`Segment::wire_size`], [`Ack::wire_size`]) to put them on links. Sequence numbers count
//! packets, not bytes, as in ns-2's one-way `Agent/TCP`.
//!
//! Both carry RFC 7323's timestamp option as values: a segment its send time (TSval), an ACK the
//! send time the sink echoes (TSecr). Only a sender with
//! [`SenderConfig::timestamps`](crate::SenderConfig::timestamps) reads the echo; the option's
//! 12 bytes are not added to the sizes on the wire (ns-2's agents run without it, and the
//! sizes stay those of ns-2's and ns-3's packets).

use tfrc_proto::Instant;

/// IPv4 + TCP header bytes without options, added to every segment and ACK.
///
/// ns-2: `Agent/TCP set tcpip_base_hdr_size_ 40`; its sinks send 40-byte ACKs
/// (`Agent/TCPSink set packetSize_ 40`).
pub const HEADER_BYTES: u32 = 40;

/// Most SACK blocks one ACK can carry: what fits in the 40 bytes of TCP options.
///
/// RFC 2018 §3: "A SACK option that specifies n blocks will have a length of 8*n+2 bytes, so
/// the 40 bytes available for TCP options can specify a maximum of 4 blocks." A sink sends
/// [`DEFAULT_SACK_BLOCKS`] unless configured otherwise ([`crate::SinkConfig::max_sack_blocks`]).
pub const MAX_SACK_BLOCKS: usize = 4;

/// SACK blocks a sink sends by default: the three that fit beside the timestamp option.
///
/// RFC 2018 §3: "It is expected that SACK will often be used in conjunction with the Timestamp
/// option used for RTTM [...], which takes an additional 10 bytes (plus two bytes of padding);
/// thus a maximum of 3 SACK blocks will be allowed in this case." ns-2: `Agent/TCPSink set
/// maxSackBlocks_ 3`; Linux, whose timestamps are on by default.
pub const DEFAULT_SACK_BLOCKS: u8 = 3;

/// A data segment: one packet of payload with its packet sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Segment {
    /// Packet sequence number, counted from 0 (ns-2 `seqno_`).
    pub sequence: u64,
    /// Payload bytes: the sender's segment size, 0 for a SYN.
    pub payload_bytes: u32,
    /// A header-only SYN opening the connection (sequence 0 with
    /// [`SenderConfig::syn_handshake`](crate::SenderConfig::syn_handshake)); the sink
    /// acknowledges it at once, delayed ACKs or not (ns-2 `SYN_immediate_ack_ true`).
    pub syn: bool,
    /// Whether this sequence number was sent before. Real TCP does not carry this flag; it is
    /// here so the simulator can log and count retransmissions without keeping its own state.
    pub retransmission: bool,
    /// When the sender sent this copy: RFC 7323's TSval ("the current value of the timestamp
    /// clock of the TCP sending the option"), at the simulator's resolution.
    pub timestamp: Instant,
}

impl Segment {
    /// Bytes on the wire: payload plus [`HEADER_BYTES`].
    #[must_use]
    pub fn wire_size(&self) -> u32 {
        self.payload_bytes.saturating_add(HEADER_BYTES)
    }
}

/// A SACK block: the receiver holds every packet in `[start, end)` (RFC 2018, in packets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SackBlock {
    /// First packet sequence number held.
    pub start: u64,
    /// One past the last packet sequence number held.
    pub end: u64,
}

impl SackBlock {
    /// The block `[start, end)`.
    #[must_use]
    pub const fn new(start: u64, end: u64) -> Self {
        Self { start, end }
    }

    /// Number of packets in the block (zero if `end <= start`).
    #[must_use]
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// Whether the block holds no packet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `sequence` lies in the block.
    #[must_use]
    pub fn contains(&self, sequence: u64) -> bool {
        self.start <= sequence && sequence < self.end
    }
}

/// An acknowledgement: the cumulative ACK and up to [`MAX_SACK_BLOCKS`] SACK blocks.
///
/// The cumulative ACK uses TCP's convention (the next packet expected: everything below it
/// has arrived), not ns-2's (the highest packet received in order, `-1` at first).
/// SACK blocks are ordered most recent first, as RFC 2018 §4 asks of the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ack {
    next_expected: u64,
    blocks: [SackBlock; MAX_SACK_BLOCKS],
    block_count: u8,
    echo: Option<Instant>,
}

impl Ack {
    /// A plain cumulative ACK: every packet below `next_expected` has arrived.
    #[must_use]
    pub fn new(next_expected: u64) -> Self {
        Self {
            next_expected,
            blocks: [SackBlock::default(); MAX_SACK_BLOCKS],
            block_count: 0,
            echo: None,
        }
    }

    /// The same ACK echoing `timestamp` (RFC 7323's TSecr: the sink's TS.Recent), or none.
    #[must_use]
    pub fn with_echo(mut self, timestamp: Option<Instant>) -> Self {
        self.echo = timestamp;
        self
    }

    /// The timestamp the ACK echoes (TSecr), if the sink had one to echo.
    #[must_use]
    pub fn echo(&self) -> Option<Instant> {
        self.echo
    }

    /// A cumulative ACK carrying SACK blocks; blocks beyond [`MAX_SACK_BLOCKS`] are left out,
    /// as an option that does not fit in the header would be.
    #[must_use]
    pub fn with_sack_blocks(next_expected: u64, blocks: &[SackBlock]) -> Self {
        let mut ack = Self::new(next_expected);
        let count = blocks.len().min(MAX_SACK_BLOCKS);
        ack.blocks[..count].copy_from_slice(&blocks[..count]);
        ack.block_count = count as u8;
        ack
    }

    /// The next packet the receiver expects; all packets below it have arrived.
    #[must_use]
    pub fn next_expected(&self) -> u64 {
        self.next_expected
    }

    /// The SACK blocks, most recently changed first. Not validated: the sender checks them.
    #[must_use]
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.blocks[..usize::from(self.block_count).min(MAX_SACK_BLOCKS)]
    }

    /// Bytes of the SACK option: kind and length (2) plus 8 per block, padded to 32 bits with
    /// NOPs as real stacks do (12, 20, 28 or 36 bytes); zero without blocks.
    #[must_use]
    pub fn sack_option_bytes(&self) -> u32 {
        let blocks = self.sack_blocks().len() as u32;
        if blocks == 0 {
            0
        } else {
            (2 + 8 * blocks).div_ceil(4) * 4
        }
    }

    /// Bytes on the wire: [`HEADER_BYTES`] plus the SACK option.
    #[must_use]
    pub fn wire_size(&self) -> u32 {
        HEADER_BYTES + self.sack_option_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_on_the_wire() {
        let segment = Segment {
            sequence: 7,
            payload_bytes: 1000,
            retransmission: false,
            syn: false,
            timestamp: Instant::ZERO,
        };
        assert_eq!(segment.wire_size(), 1040);
        assert_eq!(Ack::new(3).wire_size(), 40);
        let block = SackBlock::new(5, 6);
        assert_eq!(Ack::with_sack_blocks(3, &[block]).wire_size(), 52);
        assert_eq!(Ack::with_sack_blocks(3, &[block; 2]).wire_size(), 60);
        assert_eq!(Ack::with_sack_blocks(3, &[block; 3]).wire_size(), 68);
    }

    #[test]
    fn extra_sack_blocks_are_left_out() {
        let blocks = [
            SackBlock::new(10, 11),
            SackBlock::new(8, 9),
            SackBlock::new(6, 7),
            SackBlock::new(4, 5),
            SackBlock::new(2, 3),
        ];
        let ack = Ack::with_sack_blocks(1, &blocks);
        assert_eq!(ack.sack_blocks(), &blocks[..MAX_SACK_BLOCKS]);
        assert_eq!(ack.wire_size(), 76);
        assert_eq!(ack.next_expected(), 1);
    }

    #[test]
    fn block_queries() {
        let block = SackBlock::new(4, 7);
        assert_eq!(block.len(), 3);
        assert!(block.contains(4) && block.contains(6) && !block.contains(7));
        assert!(SackBlock::new(9, 3).is_empty());
    }
}
