//! Many datagrams per system call: UDP generic segmentation offload (GSO) on send and generic
//! receive offload (GRO) on receive, through the `quinn-udp` crate.
//!
//! One `sendmsg` with a `UDP_SEGMENT` control message hands the kernel a buffer of equal-sized
//! datagrams, which it splits late (or, on loopback to a GRO socket, not at all); one
//! `recvmmsg` on a socket with `UDP_GRO` returns several datagrams of one sender in one buffer
//! with their size (the stride). A 1400-byte packet of `tfrc send` on loopback then costs the
//! sender and the receiver together about 1.3 µs of CPU, against about 10 µs with one system
//! call per datagram (0.11 and 0.92 core-seconds per Gbit, docs/performance.md, "Real UDP").
//!
//! Where the kernel or the path refuses GSO (an old kernel, a device without it, a segment
//! larger than the MTU), `quinn-udp` turns it off for the socket and [`Offload::send`] sends the
//! batch one datagram per call, as before. The pacing is not changed by batching: a batch holds
//! only packets the core's schedule already allows ([`tfrc_proto::Sender::can_send`]).

use std::io::IoSliceMut;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

pub use quinn_udp::EcnCodepoint;
use quinn_udp::{RecvMeta, Transmit, UdpSocketState};

/// Largest UDP payload of one GSO send: the kernel refuses more than 64 KiB in one datagram
/// before segmentation (IPv4's total length field).
const MAX_GSO_BYTES: usize = 65_000;

/// Datagram buffers handed to one `recvmmsg`.
pub const RECEIVE_BATCH: usize = 8;
/// Size of each receive buffer: a whole GRO train (at most 64 KiB) or any one datagram.
pub const RECEIVE_BUFFER_LEN: usize = 1 << 16;

/// How a batch of datagrams fared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendOutcome {
    /// Datagrams the kernel refused (send buffer full: lost, as a router would drop them).
    pub refused: usize,
    /// Datagrams refused because an ICMP error said the peer is unreachable.
    pub unreachable: usize,
}

/// The offload state of one socket.
#[derive(Debug)]
pub struct Offload {
    state: UdpSocketState,
    /// GRO left on: the socket is read with [`Offload::receive`] only.
    gro: bool,
}

impl Offload {
    /// Sets `socket` up for batched sends (and, with `gro`, batched receives): it becomes
    /// non-blocking, the ECN and time-stamp control messages `quinn-udp` reads are turned on
    /// (the packet-info one it also turns on is turned off again, below), and whether the
    /// kernel has GSO is found out.
    ///
    /// `gro` must be false for a socket read by plain `recv`: the kernel coalesces datagrams
    /// for a GRO socket (on loopback, and from NICs that do UDP GRO), and only the control
    /// message of [`Offload::receive`] tells where one ends. The socket's fragmentation setting
    /// is kept as it was: `quinn-udp` forbids fragmentation, which would make a datagram larger
    /// than the path's MTU an error instead of a fragmented packet.
    pub fn new(socket: &UdpSocket, gro: bool) -> std::io::Result<Offload> {
        let fd = socket.as_raw_fd();
        let saved = Fragmentation::read(fd, socket.local_addr()?.is_ipv4());
        let ipv4 = socket.local_addr()?.is_ipv4();
        let state = UdpSocketState::new(socket.into())?;
        saved.restore(fd);
        // quinn-udp also asks for the packet-info control message, which nothing here reads.
        // In a GRO train it would push the TOS message (the ECN field) out of quinn-udp's
        // 96-byte control buffer: time stamp 32 + UDP_GRO 24 + IP_PKTINFO 32 + IP_TOS 24 bytes
        // (measured: a GSO batch sent ECT(0) arrived as not-ECT). Without it, 80 bytes fit.
        if ipv4 {
            crate::sockopt::set_int(fd, libc::IPPROTO_IP, libc::IP_PKTINFO, 0)?;
        } else {
            crate::sockopt::set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 0)?;
        }
        if !gro && state.gro_segments() > 1 {
            crate::sockopt::set_int(fd, libc::SOL_UDP, libc::UDP_GRO, 0)?;
        }
        Ok(Offload { state, gro })
    }

    /// How many datagrams of `length` bytes one [`Offload::send`] may carry: 1 without GSO.
    pub fn max_segments(&self, length: usize) -> usize {
        self.state
            .max_gso_segments()
            .min(MAX_GSO_BYTES / length.max(1))
            .max(1)
    }

    /// "gso" when sends carry several datagrams, else "none".
    pub fn send_mode(&self) -> &'static str {
        if self.state.max_gso_segments() > 1 {
            "gso"
        } else {
            "none"
        }
    }

    /// "gro" when receives may return several datagrams per buffer, else "none".
    pub fn receive_mode(&self) -> &'static str {
        if self.gro && self.state.gro_segments() > 1 {
            "gro"
        } else {
            "none"
        }
    }

    /// Sends `contents`, consecutive datagrams of `segment` bytes each (the last may be
    /// shorter), to `destination`: one system call with GSO, else one per datagram. A batch
    /// GSO fails on is sent again one datagram at a time. `ecn` sets the ECN field of every
    /// datagram's IP header (an `IP_TOS` / `IPV6_TCLASS` control message; `None`: not-ECT).
    pub fn send(
        &self,
        socket: &UdpSocket,
        destination: SocketAddr,
        contents: &[u8],
        segment: usize,
        ecn: Option<EcnCodepoint>,
    ) -> SendOutcome {
        let segment = segment.max(1);
        let count = contents.len().div_ceil(segment);
        if count > 1 && self.state.max_gso_segments() > 1 {
            let transmit = Transmit {
                destination,
                ecn,
                contents,
                segment_size: Some(segment),
                src_ip: None,
            };
            match self.state.try_send(socket.into(), &transmit) {
                Ok(()) => return SendOutcome::default(),
                Err(error) => {
                    if self.state.max_gso_segments() > 1 {
                        return outcome_of(&error, count);
                    }
                    // quinn-udp found the kernel or the device without GSO and turned it off:
                    // the batch goes again, one datagram at a time.
                }
            }
        }
        let mut outcome = SendOutcome::default();
        // An empty `contents` is one empty datagram.
        let empty = contents.is_empty().then_some(&[][..]);
        for datagram in contents.chunks(segment).chain(empty) {
            let transmit = Transmit {
                destination,
                ecn,
                contents: datagram,
                segment_size: None,
                src_ip: None,
            };
            if let Err(error) = self.state.try_send(socket.into(), &transmit) {
                let failed = outcome_of(&error, 1);
                outcome.refused += failed.refused;
                outcome.unreachable += failed.unreachable;
            }
        }
        outcome
    }

    /// Receives what is waiting into `buffers`, then read by [`ReceiveBuffers::datagrams`]:
    /// one GRO train (up to 64 KiB of datagrams from one source), or without GRO up to
    /// [`RECEIVE_BATCH`] datagrams. Fails with `WouldBlock` when nothing was waiting.
    pub fn receive(&self, socket: &UdpSocket, buffers: &mut ReceiveBuffers) -> std::io::Result<()> {
        buffers.filled = 0;
        let slots = if self.gro && self.state.gro_segments() > 1 {
            1
        } else {
            RECEIVE_BATCH
        };
        // On the stack: no allocation per receive on the receiver's and the relay's hot path.
        let available = slots.min(buffers.data.len() / RECEIVE_BUFFER_LEN);
        let mut chunks = buffers.data.chunks_mut(RECEIVE_BUFFER_LEN);
        let mut slices: [IoSliceMut<'_>; RECEIVE_BATCH] =
            std::array::from_fn(|_| IoSliceMut::new(chunks.next().unwrap_or_default()));
        buffers.filled =
            self.state
                .recv(socket.into(), &mut slices[..available], &mut buffers.meta)?;
        Ok(())
    }
}

/// The receive buffers of [`Offload::receive`]: [`RECEIVE_BATCH`] × 64 KiB, allocated once.
#[derive(Debug, Default)]
pub struct ReceiveBuffers {
    data: Vec<u8>,
    meta: Vec<RecvMeta>,
    /// Buffers the last receive filled.
    filled: usize,
}

impl ReceiveBuffers {
    /// Allocates the buffers (`Default` is an empty placeholder that receives nothing).
    pub fn new() -> ReceiveBuffers {
        ReceiveBuffers {
            data: vec![0; RECEIVE_BATCH * RECEIVE_BUFFER_LEN],
            meta: vec![RecvMeta::default(); RECEIVE_BATCH],
            filled: 0,
        }
    }

    /// The datagrams of the last [`Offload::receive`], each with its source and the kernel's
    /// receive time stamp.
    pub fn datagrams(&self) -> impl Iterator<Item = Datagram<'_>> + '_ {
        self.meta
            .iter()
            .take(self.filled)
            .enumerate()
            .flat_map(|(index, meta)| {
                let start = index * RECEIVE_BUFFER_LEN;
                let received = &self.data[start..start + meta.len.min(RECEIVE_BUFFER_LEN)];
                // The stride is the datagrams' size in a GRO train, else the one datagram's.
                let stride = if meta.stride == 0 {
                    received.len().max(1)
                } else {
                    meta.stride
                };
                // An empty datagram is one datagram too (and bad input to count).
                let count = received.len().div_ceil(stride).max(1);
                (0..count).map(move |k| {
                    let end = ((k + 1) * stride).min(received.len());
                    Datagram {
                        bytes: &received[(k * stride).min(end)..end],
                        from: meta.addr,
                        kernel_time: meta.timestamp,
                        ecn: meta.ecn,
                    }
                })
            })
    }
}

/// One received datagram.
#[derive(Debug, Clone, Copy)]
pub struct Datagram<'a> {
    /// Its bytes.
    pub bytes: &'a [u8],
    /// Its source.
    pub from: SocketAddr,
    /// When the kernel received it (`SO_TIMESTAMPNS`: the real-time clock, since the Unix
    /// epoch), if the kernel said: the same for every datagram of a GRO train. It does not
    /// depend on when the reading thread ran.
    pub kernel_time: Option<core::time::Duration>,
    /// The ECN field of its IP header (`IP_RECVTOS`), `None` for not-ECT. The kernel merges
    /// only datagrams with the same TOS into one GRO train, so it holds for each of them.
    pub ecn: Option<EcnCodepoint>,
}

fn outcome_of(error: &std::io::Error, count: usize) -> SendOutcome {
    if error.kind() == std::io::ErrorKind::ConnectionRefused {
        SendOutcome {
            refused: 0,
            unreachable: count,
        }
    } else {
        SendOutcome {
            refused: count,
            unreachable: 0,
        }
    }
}

/// A socket's path-MTU discovery mode (and, for IPv6, its don't-fragment flag).
struct Fragmentation {
    /// (level, option, value) of each setting.
    settings: Vec<(libc::c_int, libc::c_int, libc::c_int)>,
}

impl Fragmentation {
    fn read(fd: RawFd, ipv4: bool) -> Fragmentation {
        let options: &[(libc::c_int, libc::c_int)] = if ipv4 {
            &[(libc::IPPROTO_IP, libc::IP_MTU_DISCOVER)]
        } else {
            &[
                (libc::IPPROTO_IP, libc::IP_MTU_DISCOVER),
                (libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER),
                (libc::IPPROTO_IPV6, libc::IPV6_DONTFRAG),
            ]
        };
        let settings = options
            .iter()
            .filter_map(|&(level, name)| {
                crate::sockopt::get_int(fd, level, name)
                    .ok()
                    .map(|value| (level, name, value))
            })
            .collect();
        Fragmentation { settings }
    }

    fn restore(&self, fd: RawFd) {
        for &(level, name, value) in &self.settings {
            // Best effort: a socket that keeps quinn-udp's setting still works, it only does
            // not fragment.
            let _ = crate::sockopt::set_int(fd, level, name, value);
        }
    }
}
