//! Packet captures in the classic pcap format (nanosecond timestamps, raw IP link type), the
//! one writer of the workspace: the simulator's per-flow captures (`tfrc sim --pcap`), the
//! emulator's relay (UDP payloads behind a made-up IPv4/UDP header, [`ipv4_udp_packet`]) and
//! testbed (the IP packets read from TUN devices, as they are). Files are written big-endian
//! on every machine, so that a simulated run's captures are the same bytes everywhere;
//! Wireshark and tshark read either order. The file format is the `pcap-file` crate's.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddrV4;
use std::path::Path;

use pcap_file::pcap::{PcapHeader, PcapPacket};
use pcap_file::{DataLink, Endianness, TsResolution};

/// Bytes of each packet kept in the file at most.
pub const SNAPLEN: u32 = 65_535;

/// A pcap file being written.
pub struct PcapWriter {
    writer: pcap_file::pcap::PcapWriter<BufWriter<File>>,
    /// Packets written.
    pub packets: u64,
}

impl core::fmt::Debug for PcapWriter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PcapWriter")
            .field("packets", &self.packets)
            .finish()
    }
}

impl PcapWriter {
    /// Creates the file and writes the global header (raw IP, nanosecond timestamps); the
    /// error names the file.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let named = |error: &dyn core::fmt::Display| {
            std::io::Error::other(format!("cannot create {}: {error}", path.display()))
        };
        let file = File::create(path).map_err(|error| named(&error))?;
        let header = PcapHeader {
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::NanoSecond,
            snaplen: SNAPLEN,
            endianness: Endianness::Big,
            ..PcapHeader::default()
        };
        let writer = pcap_file::pcap::PcapWriter::with_header(BufWriter::new(file), header)
            .map_err(|error| named(&error))?;
        Ok(PcapWriter { writer, packets: 0 })
    }

    /// Writes one IP packet seen at `nanos` (since the Unix epoch for real captures, since the
    /// run's start for simulated ones), whole.
    pub fn write_packet(&mut self, nanos: u128, packet: &[u8]) -> std::io::Result<()> {
        self.write_headers(nanos, packet, packet.len() as u32)
    }

    /// Writes the first bytes of an IP packet whose full length is `length` (a capture that
    /// keeps the headers only).
    pub fn write_headers(
        &mut self,
        nanos: u128,
        headers: &[u8],
        length: u32,
    ) -> std::io::Result<()> {
        let kept = &headers[..headers.len().min(SNAPLEN as usize)];
        let seconds = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::from(u32::MAX));
        let timestamp = core::time::Duration::new(
            seconds.min(u64::from(u32::MAX)),
            (nanos % 1_000_000_000) as u32,
        );
        let packet = PcapPacket::new(timestamp, length.max(kept.len() as u32), kept);
        self.writer
            .write_packet(&packet)
            .map_err(std::io::Error::other)?;
        self.packets += 1;
        Ok(())
    }

    /// Flushes what is buffered to the file and closes it.
    pub fn finish(self) -> std::io::Result<()> {
        self.writer.into_writer().flush()
    }
}

/// An IPv4 header without options for a packet of `total` bytes (header included) carrying
/// `protocol`, with the ECN bits `ecn` and its checksum, appended to `packet`.
pub fn push_ipv4_header(
    packet: &mut Vec<u8>,
    total: u32,
    protocol: u8,
    ecn: u8,
    source: [u8; 4],
    destination: [u8; 4],
) {
    let start = packet.len();
    packet.extend_from_slice(&[0x45, ecn & 0b11]);
    packet.extend_from_slice(&(total.min(u32::from(u16::MAX)) as u16).to_be_bytes());
    packet.extend_from_slice(&[0, 0, 0x40, 0, 64, protocol, 0, 0]);
    packet.extend_from_slice(&source);
    packet.extend_from_slice(&destination);
    let checksum = internet_checksum(&packet[start..start + 20]);
    packet[start + 10..start + 12].copy_from_slice(&checksum.to_be_bytes());
}

/// An IPv4/UDP packet around `payload` from `source` to `destination` (header checksum set,
/// UDP checksum 0). Payloads too large for one IPv4 packet are cut to fit.
pub fn ipv4_udp_packet(source: SocketAddrV4, destination: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let payload = &payload[..payload.len().min(65_535 - 28)];
    let total = 28 + payload.len();
    let mut packet = Vec::with_capacity(total);
    push_ipv4_header(
        &mut packet,
        total as u32,
        17,
        0,
        source.ip().octets(),
        destination.ip().octets(),
    );
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
        writer.write_headers(5, &packet[..28], 1028).unwrap();
        writer.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 24 + 16 + 33 + 16 + 28);
        // Nanosecond magic, raw IP, big-endian.
        assert_eq!(&bytes[0..4], &0xa1b2_3c4du32.to_be_bytes());
        assert_eq!(&bytes[20..24], &101u32.to_be_bytes());
        let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!((word(24), word(28)), (1_500_000_000, 123_456_789));
        // The second record keeps 28 bytes of a 1028-byte packet.
        let second = 24 + 16 + 33;
        assert_eq!((word(second + 8), word(second + 12)), (28, 1028));
    }

    #[test]
    fn an_unwritable_path_is_named() {
        let error = PcapWriter::create(Path::new("/nonexistent/dir/x.pcap")).unwrap_err();
        assert!(
            error.to_string().contains("/nonexistent/dir/x.pcap"),
            "{error}"
        );
    }
}
