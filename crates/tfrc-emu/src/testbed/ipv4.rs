//! What the testbed reads and writes in the IPv4 packets it carries: the destination host and
//! flow id ([`classify`]), and the ECN field, rewritten with a valid header checksum.

use std::net::Ipv4Addr;

use tfrc_sim::{FlowId, ECN_MASK};

/// The ECN field of an IPv4 packet (the low two bits of its TOS byte, RFC 3168 §5); 0 for
/// anything shorter than an IPv4 header ([`classify`] refuses those).
pub fn ipv4_ecn(packet: &[u8]) -> u8 {
    match packet {
        [first, tos, ..] if first >> 4 == 4 && packet.len() >= 20 => tos & ECN_MASK,
        _ => 0,
    }
}

/// Sets the ECN field of an IPv4 packet to `ecn` and its header checksum to match (the header
/// is the IHL's length, options included). Packets that are not IPv4, or whose field already
/// holds `ecn`, are left alone.
pub fn set_ipv4_ecn(packet: &mut [u8], ecn: u8) {
    if packet.len() < 20 || packet[0] >> 4 != 4 || packet[1] & ECN_MASK == ecn & ECN_MASK {
        return;
    }
    let header = usize::from(packet[0] & 0x0f) * 4;
    if header < 20 || packet.len() < header {
        return;
    }
    packet[1] = (packet[1] & !ECN_MASK) | (ecn & ECN_MASK);
    packet[10..12].copy_from_slice(&[0, 0]);
    let checksum = tfrc_sim::pcap::internet_checksum(&packet[..header]);
    packet[10..12].copy_from_slice(&checksum.to_be_bytes());
}

/// Source host index, destination host index and flow id of an IPv4 packet between testbed
/// hosts, or `None` for anything else.
pub fn classify(packet: &[u8]) -> Option<(usize, FlowId)> {
    if packet.len() < 20 || packet[0] >> 4 != 4 {
        return None;
    }
    let destination = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
    let [10, 200, 0, last] = destination.octets() else {
        return None;
    };
    if last == 0 || last == 255 {
        return None;
    }
    let header = usize::from(packet[0] & 0x0f) * 4;
    let protocol = packet[9];
    let fragment_offset = u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff;
    let flow = if (protocol == 6 || protocol == 17)
        && fragment_offset == 0
        && packet.len() >= header + 4
    {
        let source_port = u16::from_be_bytes([packet[header], packet[header + 1]]);
        let destination_port = u16::from_be_bytes([packet[header + 2], packet[header + 3]]);
        FlowId::from(source_port.min(destination_port))
    } else {
        0
    };
    Some((usize::from(last) - 1, flow))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The TUN path reads the ECN field of the IPv4 header and writes CE back with a header
    /// checksum that still verifies (options included); other packets are left alone.
    #[test]
    fn ipv4_ecn_is_read_and_set_with_a_valid_checksum() {
        for ihl in [5u8, 6] {
            let header = usize::from(ihl) * 4;
            let mut packet = vec![0u8; header + 8];
            packet[0] = 0x40 | ihl;
            packet[1] = 0xb8 | 0b10; // DSCP EF, ECT(0)
            packet[8] = 64;
            packet[9] = 17;
            packet[12..16].copy_from_slice(&[10, 200, 0, 1]);
            packet[16..20].copy_from_slice(&[10, 200, 0, 2]);
            let checksum = tfrc_sim::pcap::internet_checksum(&packet[..header]);
            packet[10..12].copy_from_slice(&checksum.to_be_bytes());
            assert_eq!(ipv4_ecn(&packet), 0b10);
            set_ipv4_ecn(&mut packet, tfrc_sim::ECN_CE);
            assert_eq!(ipv4_ecn(&packet), 0b11);
            assert_eq!(packet[1] & !0b11, 0xb8, "the DSCP is kept");
            assert_eq!(tfrc_sim::pcap::internet_checksum(&packet[..header]), 0);
        }
        let mut ipv6 = vec![0x60u8; 40];
        set_ipv4_ecn(&mut ipv6, tfrc_sim::ECN_CE);
        assert_eq!(ipv6, vec![0x60u8; 40]);
        assert_eq!(ipv4_ecn(&[0x45, 0b11]), 0);
    }

    #[test]
    fn packets_are_classified_by_destination_and_lower_port() {
        let packet = tfrc_sim::pcap::ipv4_udp_packet(
            "10.200.0.1:40000".parse().unwrap(),
            "10.200.0.3:5201".parse().unwrap(),
            b"x",
        );
        assert_eq!(classify(&packet), Some((2, 5201)));
        let outside = tfrc_sim::pcap::ipv4_udp_packet(
            "10.200.0.1:40000".parse().unwrap(),
            "192.0.2.1:5201".parse().unwrap(),
            b"x",
        );
        assert_eq!(classify(&outside), None);
        assert_eq!(classify(&[0x60; 40]), None);
        assert_eq!(classify(&[]), None);
    }
}
