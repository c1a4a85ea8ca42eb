//! Packet captures of a simulated run (`tfrc sim --pcap DIR`), time-stamped with the simulated
//! time: one pcap file per flow (`<flow>.pcap`), holding every packet of the flow as it reaches
//! its destination (data at the receiver, feedback and ACKs at the sender), as a capture at both
//! hosts would show them; and one per link direction (`link-<from>-<to>.pcap`), holding every
//! packet as it leaves that direction (after its queue, loss and serialization), as a capture on
//! the wire would: comparing a bottleneck's arrivals and departures shows its drops.
//!
//! Each packet is written as raw IPv4 ([`crate::pcap`], the workspace's one pcap writer) with
//! a synthetic header:
//! node k of the topology is 10.0.x.y with x.y = k + 1; ECN bits are set when the packet is
//! ECN-capable or CE-marked. TFRC travels over UDP between port 10000 + flow index and
//! [`TFRC_PORT`] (5201, `tfrc send`'s default), so the Wireshark dissector shipped in
//! `tools/wireshark/tfrc.lua` decodes its data and feedback headers; open-loop UDP flows use
//! port 9. TCP segments carry a 20-byte TCP header whose sequence and acknowledgement numbers
//! count packets, as ns-2's and our TCP models do. Only the headers are stored (the capture
//! length); the original length is the packet's size on the wire plus the IPv4 and UDP/TCP
//! headers.

use std::path::{Path, PathBuf};

use tfrc_proto::Instant;

use crate::pcap::{push_ipv4_header, PcapWriter};

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
    files: Vec<(PathBuf, PcapWriter)>,
    frame: Vec<u8>,
    failed: Option<(PathBuf, std::io::Error)>,
}

impl Capture {
    /// Creates `directory` and in it one `<flow name>.pcap` per flow, then one
    /// `link-<from>-<to>.pcap` per link direction (file index: flows first, then directions).
    pub(crate) fn create(
        directory: &Path,
        flow_names: &[String],
        direction_names: &[(String, String)],
    ) -> Result<Capture, (PathBuf, std::io::Error)> {
        std::fs::create_dir_all(directory).map_err(|error| (directory.to_path_buf(), error))?;
        let safe = |name: &str| -> String {
            name.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._-".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        };
        let names = flow_names.iter().map(|name| safe(name)).chain(
            direction_names
                .iter()
                .map(|(from, to)| format!("link-{}-{}", safe(from), safe(to))),
        );
        let mut files = Vec::with_capacity(flow_names.len() + direction_names.len());
        for name in names {
            let path = directory.join(format!("{name}.pcap"));
            let writer = PcapWriter::create(&path).map_err(|error| (path.clone(), error))?;
            files.push((path, writer));
        }
        Ok(Capture {
            files,
            frame: Vec::with_capacity(IPV4_HEADER + TCP_HEADER + 64),
            failed: None,
        })
    }

    /// Records in file `file` a packet of flow `endpoints.index` seen at `now`: `reverse`
    /// when it goes from the flow's destination back to its source (feedback, ACKs);
    /// `wire_size` is its size above the IPv4 header and the UDP/TCP header.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record(
        &mut self,
        file: usize,
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
        push_ipv4_header(frame, total, protocol, ecn, address(from), address(to));
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
        let Some((path, writer)) = self.files.get_mut(file) else {
            return;
        };
        if let Err(error) = writer.write_headers(u128::from(now.as_nanos()), frame, total) {
            self.failed = Some((path.clone(), error));
        }
    }

    /// Flushes every file; the first write error, if any, with its file.
    pub(crate) fn finish(self) -> Result<(), (PathBuf, std::io::Error)> {
        if let Some(failed) = self.failed {
            return Err(failed);
        }
        for (path, writer) in self.files {
            writer.finish().map_err(|error| (path.clone(), error))?;
        }
        Ok(())
    }
}

/// The address of node `node`: 10.0.x.y with x.y = node + 1.
fn address(node: u32) -> [u8; 4] {
    let host = node.wrapping_add(1);
    [10, (host >> 16) as u8, (host >> 8) as u8, host as u8]
}
