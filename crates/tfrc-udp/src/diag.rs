//! Every TCP socket on the host with its `tcp_info`, through the kernel's sock_diag netlink
//! interface (`NETLINK_SOCK_DIAG`, `inet_diag_req_v2` with `INET_DIAG_INFO`) — what `ss -tin`
//! does. `getsockopt(TCP_INFO)` only works on a process's own sockets; this reaches the sockets of
//! any process (iperf3, a browser, …) without privileges.

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use crate::tcp_info::TcpInfo;

const NETLINK_SOCK_DIAG: libc::c_int = 4;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const INET_DIAG_INFO: u16 = 2;
const INET_DIAG_CONG: u16 = 4;
const NLMSG_HEADER_LEN: usize = 16;
const INET_DIAG_REQUEST_LEN: usize = 56;
const INET_DIAG_MESSAGE_LEN: usize = 72;

/// TCP states worth logging: every connected state (not LISTEN, TIME-WAIT or CLOSE).
const CONNECTED_STATES: u32 =
    (1 << 1) | (1 << 2) | (1 << 3) | (1 << 4) | (1 << 5) | (1 << 8) | (1 << 9) | (1 << 11);

/// One TCP socket found by a dump.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpSocketEntry {
    /// Local address and port.
    pub local: SocketAddr,
    /// Remote address and port.
    pub remote: SocketAddr,
    /// Socket inode (unique while the socket lives).
    pub inode: u32,
    /// `tcp_info`, when the kernel attached it.
    pub info: Option<TcpInfo>,
    /// Congestion control in use (`cubic`, `bbr`, …), when the kernel attached it.
    pub congestion: Option<String>,
}

/// Why a dump failed.
#[derive(Debug, thiserror::Error)]
pub enum DiagError {
    /// The netlink socket could not be opened or used (e.g. no sock_diag in this kernel).
    #[error("sock_diag netlink request failed: {0}")]
    Io(#[from] std::io::Error),
    /// The kernel answered with an error code.
    #[error("sock_diag returned error {0}")]
    Kernel(i32),
}

/// Dumps the connected TCP sockets of both address families with their `tcp_info`.
pub fn dump_tcp_sockets() -> Result<Vec<TcpSocketEntry>, DiagError> {
    let mut entries = dump_family(libc::AF_INET as u8)?;
    entries.extend(dump_family(libc::AF_INET6 as u8)?);
    Ok(entries)
}

fn dump_family(family: u8) -> Result<Vec<TcpSocketEntry>, DiagError> {
    // socket2 opens it close-on-exec and owns the descriptor.
    let socket = Socket::new(
        Domain::from(libc::AF_NETLINK),
        Type::DGRAM,
        Some(Protocol::from(NETLINK_SOCK_DIAG)),
    )?;
    // A receive timeout so that a kernel that never answers cannot hang the logger.
    socket.set_read_timeout(Some(Duration::from_secs(1)))?;

    let mut request = [0u8; NLMSG_HEADER_LEN + INET_DIAG_REQUEST_LEN];
    let total = request.len() as u32;
    request[0..4].copy_from_slice(&total.to_ne_bytes());
    request[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    request[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    request[8..12].copy_from_slice(&1u32.to_ne_bytes()); // sequence
    let body = &mut request[NLMSG_HEADER_LEN..];
    body[0] = family;
    body[1] = libc::IPPROTO_TCP as u8;
    body[2] = (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_CONG - 1));
    body[4..8].copy_from_slice(&CONNECTED_STATES.to_ne_bytes());

    // No destination address: an unconnected netlink socket sends to port 0, the kernel.
    socket.send(&request)?;

    let mut entries = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let received = (&socket).read(&mut buffer)?;
        let mut rest = &buffer[..received];
        if rest.is_empty() {
            return Ok(entries);
        }
        while rest.len() >= NLMSG_HEADER_LEN {
            let length = read_u32(rest, 0) as usize;
            let kind = u16::from_ne_bytes([rest[4], rest[5]]);
            if length < NLMSG_HEADER_LEN || length > rest.len() {
                return Ok(entries);
            }
            match kind {
                NLMSG_DONE => return Ok(entries),
                NLMSG_ERROR => {
                    let code = rest
                        .get(NLMSG_HEADER_LEN..NLMSG_HEADER_LEN + 4)
                        .map_or(0, |bytes| {
                            i32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
                        });
                    return Err(DiagError::Kernel(code));
                }
                SOCK_DIAG_BY_FAMILY => {
                    if let Some(entry) = parse_message(&rest[NLMSG_HEADER_LEN..length]) {
                        entries.push(entry);
                    }
                }
                _ => {}
            }
            let advance = align4(length).min(rest.len());
            rest = &rest[advance..];
        }
    }
}

fn align4(length: usize) -> usize {
    (length + 3) & !3
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Parses one `inet_diag_msg` and its attributes.
fn parse_message(message: &[u8]) -> Option<TcpSocketEntry> {
    if message.len() < INET_DIAG_MESSAGE_LEN {
        return None;
    }
    let family = message[0];
    let id = &message[4..52];
    let local_port = u16::from_be_bytes([id[0], id[1]]);
    let remote_port = u16::from_be_bytes([id[2], id[3]]);
    let address = |bytes: &[u8]| -> Option<IpAddr> {
        if i32::from(family) == libc::AF_INET {
            Some(IpAddr::V4(Ipv4Addr::new(
                bytes[0], bytes[1], bytes[2], bytes[3],
            )))
        } else if i32::from(family) == libc::AF_INET6 {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&bytes[..16]);
            Some(IpAddr::V6(Ipv6Addr::from(octets)))
        } else {
            None
        }
    };
    let local = SocketAddr::new(address(&id[4..20])?, local_port);
    let remote = SocketAddr::new(address(&id[20..36])?, remote_port);
    let inode = read_u32(message, 68);
    let mut info = None;
    let mut congestion = None;
    let mut attributes = &message[INET_DIAG_MESSAGE_LEN..];
    while attributes.len() >= 4 {
        let length = usize::from(u16::from_ne_bytes([attributes[0], attributes[1]]));
        let kind = u16::from_ne_bytes([attributes[2], attributes[3]]);
        if length < 4 || length > attributes.len() {
            break;
        }
        let payload = &attributes[4..length];
        match kind {
            INET_DIAG_INFO => info = TcpInfo::parse(payload),
            INET_DIAG_CONG => {
                let name = payload.split(|&byte| byte == 0).next().unwrap_or(&[]);
                congestion = Some(String::from_utf8_lossy(name).into_owned());
            }
            _ => {}
        }
        attributes = &attributes[align4(length).min(attributes.len())..];
    }
    Some(TcpSocketEntry {
        local,
        remote,
        inode,
        info,
        congestion,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_loopback_connection_with_its_tcp_info() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server, _) = listener.accept().unwrap();
        let entries = match dump_tcp_sockets() {
            Ok(entries) => entries,
            Err(error) => {
                eprintln!("skipped: sock_diag unavailable here ({error})");
                return;
            }
        };
        let local = client.local_addr().unwrap();
        let entry = entries
            .iter()
            .find(|entry| entry.local == local)
            .expect("the client socket is in the dump");
        assert_eq!(entry.remote, listener.local_addr().unwrap());
        let info = entry.info.expect("tcp_info attached");
        assert!(info.snd_cwnd >= 1);
        assert!(entry
            .congestion
            .as_deref()
            .is_some_and(|name| !name.is_empty()));
    }

    #[test]
    fn truncated_messages_are_ignored() {
        assert_eq!(parse_message(&[0u8; 10]), None);
        let mut message = vec![0u8; INET_DIAG_MESSAGE_LEN + 3];
        message[0] = libc::AF_INET as u8;
        let entry = parse_message(&message).unwrap();
        assert_eq!(entry.info, None);
    }
}
