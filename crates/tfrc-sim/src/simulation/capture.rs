//! Packet captures of a simulated run (`tfrc sim --pcap DIR`): one pcap file per flow, holding
//! every packet of the flow as it reaches its destination (data at the receiver, feedback and
//! ACKs at the sender), time-stamped with the simulated time, as a capture at both hosts would
//! show them. Dropped packets never reach a host and are not in the files.
//!
//! Each packet is written as IPv4 (link type 228, `LINKTYPE_IPV4`) with a synthetic header:
//! node k of the topology is 10.0.x.y with x.y = k + 1; ECN bits are set when the packet is
//! ECN-capable or CE-marked. TFRC travels over UDP between port 10000 + flow index and
//! [`TFRC_PORT`] (5201, `tfrc send`'s default), so the Wireshark dissector shipped in
//! `tools/wireshark/tfrc.lua` decodes its data and feedback headers; open-loop UDP flows use
//! port 9. TCP segments carry a 20-byte TCP header whose sequence and acknowledgement numbers
//! count packets, as ns-2's and our TCP models do. Only the headers are stored (the capture
//! length); the original length is the packet's size on the wire plus the IPv4 and UDP/TCP
//! headers.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, TsResolution};
use tfrc_proto::Instant;

/// UDP port of TFRC packets in the captures (the receiver's side).
pub const TFRC_PORT: u16 = 5201;
/// UDP port of open-loop UDP flows (the discard service).
const DISCARD_PORT: u16 = 9;
/// TCP port of TCP flows (the receiver's side).
const TCP_PORT: u16 = 5001;
const IPV4_HEADER: usize = 20;
const UDP_HEADER: usize = 8;
const TCP_HEADER: usize = 20;

/// What a captured packet carries above IPv4.
pub(crate) enum Layer<'a> {
    /// UDP with these header bytes of its payload (the TFRC header, or nothing).
    Udp { payload: &'a [u8] },
    /// A TCP data segment (packet number) or a cumulative ACK (next packet expected).
    Tcp { sequence: u32, ack: Option<u32> },
}

/// One flow's end points in a capture.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Endpoints {
    /// Node the flow's data leaves from.
    pub source_node: u32,
    /// Node the data goes to.
    pub destination_node: u32,
    /// The flow's index (its port offset).
    pub index: u32,
}

/// The open capture files of a run.
pub(crate) struct Capture {
    files: Vec<(PathBuf, PcapWriter<BufWriter<File>>)>,
    frame: Vec<u8>,
    failed: Option<(PathBuf, std::io::Error)>,
}

impl Capture {
    /// Creates `directory` and one `<flow name>.pcap` per flow in it.
    pub(crate) fn create(
        directory: &Path,
        flow_names: &[String],
    ) -> Result<Capture, (PathBuf, std::io::Error)> {
        std::fs::create_dir_all(directory).map_err(|error| (directory.to_path_buf(), error))?;
        let header = PcapHeader {
            datalink: DataLink::IPV4,
            ts_resolution: TsResolution::NanoSecond,
            snaplen: 65_535,
            // Big-endian on every machine: the same run gives the same bytes everywhere.
            endianness: pcap_file::Endianness::Big,
            ..PcapHeader::default()
        };
        let mut files = Vec::with_capacity(flow_names.len());
        for name in flow_names {
            let safe: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._-".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let path = directory.join(format!("{safe}.pcap"));
            let file = File::create(&path).map_err(|error| (path.clone(), error))?;
            let writer = PcapWriter::with_header(BufWriter::new(file), header)
                .map_err(|error| (path.clone(), std::io::Error::other(error)))?;
            files.push((path, writer));
        }
        Ok(Capture {
            files,
            frame: Vec::with_capacity(IPV4_HEADER + TCP_HEADER + 64),
            failed: None,
        })
    }

    /// Records a packet of flow `endpoints.index` arriving at `now`: `reverse` when it goes
    /// from the flow's destination back to its source (feedback, ACKs); `wire_size` is its
    /// size above IPv4 headers (the TFRC packet, the TCP segment's payload and header, ...).
    pub(crate) fn record(
        &mut self,
        now: Instant,
        endpoints: Endpoints,
        reverse: bool,
        layer: Layer<'_>,
        wire_size: u32,
        ecn: u8,
    ) {
        if self.failed.is_some() {
            return;
        }
        let (from, to) = if reverse {
            (endpoints.destination_node, endpoints.source_node)
        } else {
            (endpoints.source_node, endpoints.destination_node)
        };
        let flow_port = 10_000u16.wrapping_add(endpoints.index as u16);
        let frame = &mut self.frame;
        frame.clear();
        let (protocol, transport_header) = match layer {
            Layer::Udp { .. } => (17u8, UDP_HEADER),
            Layer::Tcp { .. } => (6u8, TCP_HEADER),
        };
        let total = (IPV4_HEADER + transport_header) as u32 + wire_size;
        push_ipv4(frame, total, protocol, ecn, address(from), address(to));
        match layer {
            Layer::Udp { payload } => {
                let service = if payload.is_empty() {
                    DISCARD_PORT
                } else {
                    TFRC_PORT
                };
                let (source_port, destination_port) = if reverse {
                    (service, flow_port)
                } else {
                    (flow_port, service)
                };
                frame.extend_from_slice(&source_port.to_be_bytes());
                frame.extend_from_slice(&destination_port.to_be_bytes());
                let length = (UDP_HEADER as u32 + wire_size).min(u32::from(u16::MAX)) as u16;
                frame.extend_from_slice(&length.to_be_bytes());
                frame.extend_from_slice(&[0, 0]); // no checksum (allowed over IPv4)
                frame.extend_from_slice(payload);
            }
            Layer::Tcp { sequence, ack } => {
                let (source_port, destination_port) = if reverse {
                    (TCP_PORT, flow_port)
                } else {
                    (flow_port, TCP_PORT)
                };
                frame.extend_from_slice(&source_port.to_be_bytes());
                frame.extend_from_slice(&destination_port.to_be_bytes());
                frame.extend_from_slice(&sequence.to_be_bytes());
                frame.extend_from_slice(&ack.unwrap_or(0).to_be_bytes());
                frame.push(5 << 4); // data offset: 5 words
                frame.push(if ack.is_some() { 0x10 } else { 0x18 }); // ACK, or PSH|ACK
                frame.extend_from_slice(&u16::MAX.to_be_bytes()); // window
                frame.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
            }
        }
        let timestamp = core::time::Duration::from_nanos(now.as_nanos());
        let (path, writer) = &mut self.files[endpoints.index as usize];
        let packet = PcapPacket::new(timestamp, total, frame);
        if let Err(error) = writer.write_packet(&packet) {
            self.failed = Some((path.clone(), std::io::Error::other(error)));
        }
    }

    /// Flushes every file; the first write error, if any, with its file.
    pub(crate) fn finish(self) -> Result<(), (PathBuf, std::io::Error)> {
        if let Some(failed) = self.failed {
            return Err(failed);
        }
        for (path, writer) in self.files {
            use std::io::Write;
            writer
                .into_writer()
                .flush()
                .map_err(|error| (path.clone(), error))?;
        }
        Ok(())
    }
}

/// The address of node `node`: 10.0.x.y with x.y = node + 1.
fn address(node: u32) -> [u8; 4] {
    let host = node.wrapping_add(1);
    [10, (host >> 16) as u8, (host >> 8) as u8, host as u8]
}

/// An IPv4 header without options, with its checksum.
fn push_ipv4(frame: &mut Vec<u8>, total: u32, protocol: u8, ecn: u8, from: [u8; 4], to: [u8; 4]) {
    let start = frame.len();
    frame.push(0x45);
    frame.push(ecn & 0b11);
    frame.extend_from_slice(&(total.min(u32::from(u16::MAX)) as u16).to_be_bytes());
    frame.extend_from_slice(&[0, 0, 0x40, 0]); // id, don't fragment
    frame.push(64); // TTL
    frame.push(protocol);
    frame.extend_from_slice(&[0, 0]);
    frame.extend_from_slice(&from);
    frame.extend_from_slice(&to);
    let header = &frame[start..start + IPV4_HEADER];
    let mut sum: u32 = header
        .chunks(2)
        .map(|pair| u32::from(u16::from_be_bytes([pair[0], pair[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let checksum = !(sum as u16);
    frame[start + 10..start + 12].copy_from_slice(&checksum.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ipv4_checksum_verifies() {
        let mut frame = Vec::new();
        push_ipv4(&mut frame, 1060, 17, 2, address(0), address(1));
        let mut sum: u32 = frame
            .chunks(2)
            .map(|pair| u32::from(u16::from_be_bytes([pair[0], pair[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff);
        assert_eq!(&frame[12..16], &[10, 0, 0, 1]);
        assert_eq!(&frame[16..20], &[10, 0, 0, 2]);
        assert_eq!(frame[1], 2);
    }
}
