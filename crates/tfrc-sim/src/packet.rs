//! The packet metadata that network elements see.
//!
//! Elements never see packet bodies: the simulator and the emulator keep bodies beside,
//! keyed by [`PacketMeta::id`], so the same elements run under both.

/// Identifier of a flow (the simulator maps flow names to these numbers).
pub type FlowId = u32;

/// DiffServ colour of a packet, set by a [`crate::TokenBucketMarker`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Color {
    /// Not marked by any marker (queues treat it like [`Color::Out`]).
    #[default]
    Unmarked,
    /// In profile: within the committed rate.
    In,
    /// Out of profile: above the committed rate.
    Out,
}

impl Color {
    /// Every colour, in the order of [`Color::index`].
    pub const ALL: [Color; 3] = [Color::Unmarked, Color::In, Color::Out];

    /// Position of the colour in per-colour counter arrays.
    pub const fn index(self) -> usize {
        match self {
            Color::Unmarked => 0,
            Color::In => 1,
            Color::Out => 2,
        }
    }

    /// Lower-case name, for CSV columns.
    pub const fn name(self) -> &'static str {
        match self {
            Color::Unmarked => "unmarked",
            Color::In => "in",
            Color::Out => "out",
        }
    }
}

/// The ECN field's bits in an IP header's TOS / traffic class byte (RFC 3168 §5).
pub const ECN_MASK: u8 = 0b11;
/// Congestion Experienced.
pub const ECN_CE: u8 = 0b11;
/// ECT(0).
pub const ECN_ECT0: u8 = 0b10;

/// What a network element knows about a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PacketMeta {
    /// Unique identifier, the key under which the driver keeps the packet's body.
    pub id: u64,
    /// The flow the packet belongs to.
    pub flow: FlowId,
    /// Size on the wire in bytes (what serialization and byte counters use).
    pub size_bytes: u32,
    /// DiffServ colour.
    pub color: Color,
    /// The sender declared the packet ECN-capable (ECT), so an AQM may mark instead of drop.
    pub ecn_capable: bool,
    /// Congestion Experienced: an AQM marked the packet.
    pub ce: bool,
}

impl PacketMeta {
    /// An unmarked, not ECN-capable packet.
    pub const fn new(id: u64, flow: FlowId, size_bytes: u32) -> Self {
        PacketMeta {
            id,
            flow,
            size_bytes,
            color: Color::Unmarked,
            ecn_capable: false,
            ce: false,
        }
    }

    /// The ECN field of the packet's IP header (RFC 3168 §5): [`ECN_CE`] if it was marked,
    /// [`ECN_ECT0`] if it is ECN-capable (an ECT(1) packet is given back as ECT(0)), else 0
    /// (not-ECT).
    pub const fn ecn_field(&self) -> u8 {
        if self.ce {
            ECN_CE
        } else if self.ecn_capable {
            ECN_ECT0
        } else {
            0
        }
    }

    /// Takes `ecn_capable` and `ce` from an IP header's ECN field `bits` (the low two bits): any
    /// codepoint but not-ECT is ECN-capable, and a CE packet stays CE.
    pub fn set_ecn_field(&mut self, bits: u8) {
        self.ecn_capable = bits & ECN_MASK != 0;
        self.ce = bits & ECN_MASK == ECN_CE;
    }

    /// Size in bits.
    pub const fn size_bits(&self) -> u64 {
        self.size_bytes as u64 * 8
    }
}
