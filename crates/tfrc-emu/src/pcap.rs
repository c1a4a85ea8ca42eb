//! A capture of the bottleneck in the classic pcap format (nanosecond timestamps, raw IP link
//! type), readable by Wireshark and tshark.
//!
//! The testbed writes the IP packets it reads from TUN devices as they are. The relay only sees
//! UDP payloads and writes them behind a made-up IPv4/UDP header carrying the real addresses
//! and ports ([`ipv4_udp_packet`]); its UDP checksum is 0 (none, allowed in IPv4).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddrV4;
use std::path::Path;

/// Link type of raw IPv4/IPv6 packets (`LINKTYPE_RAW`).
pub const LINKTYPE_RAW: u32 = 101;
/// Magic number of a pcap file with nanosecond timestamps.
pub const MAGIC_NANOSECONDS: u32 = 0xa1b2_3c4d;
/// Bytes of each packet kept in the file.
pub const SNAPLEN: u32 = 65_535;

/// A pcap file being written.
#[derive(Debug)]
pub struct PcapWriter {
    writer: BufWriter<File>,
    /// Packets written.
    pub packets: u64,
}

impl PcapWriter {
    /// Creates the file and writes the global header.
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        let file = File::create(path)
            .map_err(|error| anyhow::anyhow!("cannot create {}: {error}", path.display()))?;
        let mut writer = BufWriter::new(file);
        let mut header = Vec::with_capacity(24);
        header.extend_from_slice(&MAGIC_NANOSECONDS.to_le_bytes());
        header.extend_from_slice(&2u16.to_le_bytes());
        header.extend_from_slice(&4u16.to_le_bytes());
        header.extend_from_slice(&0i32.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        header.extend_from_slice(&SNAPLEN.to_le_bytes());
        header.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        writer.write_all(&header)?;
        Ok(PcapWriter { writer, packets: 0 })
    }

    /// Writes one IP packet seen at `unix_nanos` (nanoseconds since the Unix epoch).
    pub fn write_packet(&mut self, unix_nanos: u128, packet: &[u8]) -> std::io::Result<()> {
        let captured = packet.len().min(SNAPLEN as usize);
        let seconds = u32::try_from(unix_nanos / 1_000_000_000).unwrap_or(u32::MAX);
        let nanos = (unix_nanos % 1_000_000_000) as u32;
        let mut record = [0u8; 16];
        record[0..4].copy_from_slice(&seconds.to_le_bytes());
        record[4..8].copy_from_slice(&nanos.to_le_bytes());
        record[8..12].copy_from_slice(&(captured as u32).to_le_bytes());
        record[12..16].copy_from_slice(&(packet.len() as u32).to_le_bytes());
        self.writer.write_all(&record)?;
        self.writer.write_all(&packet[..captured])?;
        self.packets += 1;
        Ok(())
    }

    /// Flushes buffered records to the file.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

/// Nanoseconds since the Unix epoch, now.
pub fn unix_nanos_now() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos())
}

/// An IPv4/UDP packet around `payload` from `source` to `destination` (header checksum set,
/// UDP checksum 0). Payloads too large for one IPv4 packet are cut to fit.
pub fn ipv4_udp_packet(source: SocketAddrV4, destination: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let payload = &payload[..payload.len().min(65_535 - 28)];
    let total = 28 + payload.len();
    let mut packet = Vec::with_capacity(total);
    packet.extend_from_slice(&[0x45, 0]);
    packet.extend_from_slice(&(total as u16).to_be_bytes());
    packet.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    packet.extend_from_slice(&source.ip().octets());
    packet.extend_from_slice(&destination.ip().octets());
    let checksum = internet_checksum(&packet[..20]);
    packet[10..12].copy_from_slice(&checksum.to_be_bytes());
    packet.extend_from_slice(&source.port().to_be_bytes());
    packet.extend_from_slice(&destination.port().to_be_bytes());
    packet.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    packet.extend_from_slice(&[0, 0]);
    packet.extend_from_slice(payload);
    packet
}

/// The Internet checksum (RFC 1071) of `bytes`.
pub fn internet_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for chunk in bytes.chunks(2) {
        let word = u16::from_be_bytes([chunk[0], *chunk.get(1).unwrap_or(&0)]);
        sum += u32::from(word);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_checksum_verifies_and_file_layout_is_pcap() {
        let packet = ipv4_udp_packet(
            "10.0.0.1:4000".parse().unwrap(),
            "10.0.0.2:5201".parse().unwrap(),
            b"hello",
        );
        assert_eq!(packet.len(), 33);
        // A header with its checksum in place sums to zero.
        assert_eq!(internet_checksum(&packet[..20]), 0);
        assert_eq!(u16::from_be_bytes([packet[22], packet[23]]), 5201);

        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("capture.pcap");
        let mut writer = PcapWriter::create(&path).unwrap();
        writer
            .write_packet(1_500_000_000_123_456_789, &packet)
            .unwrap();
        writer.flush().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 24 + 16 + 33);
        assert_eq!(&bytes[0..4], &MAGIC_NANOSECONDS.to_le_bytes());
        assert_eq!(&bytes[20..24], &LINKTYPE_RAW.to_le_bytes());
        assert_eq!(
            u32::from_le_bytes(bytes[24..28].try_into().unwrap()),
            1_500_000_000
        );
        assert_eq!(
            u32::from_le_bytes(bytes[28..32].try_into().unwrap()),
            123_456_789
        );
    }
}
