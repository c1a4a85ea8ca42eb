//! Linux `struct tcp_info` (include/uapi/linux/tcp.h), read by byte offset.
//!
//! The same bytes come from `getsockopt(TCP_INFO)` on an own socket and from the
//! `INET_DIAG_INFO` attribute of a sock_diag dump (any process's socket). Reading by offset, with
//! the length the kernel returned, works across kernel versions: fields the kernel did not fill
//! are `None`.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

/// Size of the buffer handed to the kernel; larger than any kernel's `struct tcp_info` today.
pub const TCP_INFO_BUFFER_LEN: usize = 512;

/// The fields of `tcp_info` this toolkit logs. Times in microseconds, as the kernel gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TcpInfo {
    /// TCP state (1 = ESTABLISHED, … as in the kernel's `TCP_*` states).
    pub state: u8,
    /// Congestion-avoidance state (0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss).
    pub ca_state: u8,
    /// Consecutive RTO retransmissions of the head segment (`tcpi_retransmits`).
    pub retransmits: u8,
    /// Retransmission timeout, µs.
    pub rto_us: u32,
    /// Sender MSS, bytes.
    pub snd_mss: u32,
    /// Segments sent but not yet acknowledged.
    pub unacked: u32,
    /// Segments considered lost.
    pub lost: u32,
    /// Segments retransmitted and not yet acknowledged (`tcpi_retrans`).
    pub retrans: u32,
    /// Smoothed RTT, µs.
    pub rtt_us: u32,
    /// RTT variation, µs.
    pub rttvar_us: u32,
    /// Slow-start threshold, segments (a huge value means "not set").
    pub snd_ssthresh: u32,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    /// Retransmissions over the connection's life.
    pub total_retrans: u32,
    /// Pacing rate, bytes/s (kernel 4.0+).
    pub pacing_rate: Option<u64>,
    /// Bytes acknowledged (kernel 4.1+).
    pub bytes_acked: Option<u64>,
    /// Bytes received (kernel 4.1+).
    pub bytes_received: Option<u64>,
    /// Segments sent (kernel 4.2+).
    pub segs_out: Option<u32>,
    /// Segments received (kernel 4.2+).
    pub segs_in: Option<u32>,
    /// Minimum RTT seen, µs (kernel 4.6+).
    pub min_rtt_us: Option<u32>,
    /// Delivery rate estimate, bytes/s (kernel 4.9+).
    pub delivery_rate: Option<u64>,
    /// The delivery rate sample was application-limited.
    pub delivery_rate_app_limited: bool,
    /// Bytes sent, retransmissions included (kernel 4.19+).
    pub bytes_sent: Option<u64>,
    /// Bytes retransmitted (kernel 4.19+).
    pub bytes_retrans: Option<u64>,
    /// Retransmission timeouts over the connection's life (kernel 6.7+): "Total number of RTO
    /// timeouts, including SYN/SYN-ACK and recurring timeouts" (`tcpi_total_rto`).
    pub total_rto: Option<u16>,
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let slice = bytes.get(at..at + 4)?;
    let mut word = [0u8; 4];
    word.copy_from_slice(slice);
    Some(u32::from_ne_bytes(word))
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    let slice = bytes.get(at..at + 2)?;
    Some(u16::from_ne_bytes([slice[0], slice[1]]))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let slice = bytes.get(at..at + 8)?;
    let mut word = [0u8; 8];
    word.copy_from_slice(slice);
    Some(u64::from_ne_bytes(word))
}

impl TcpInfo {
    /// Reads the fields from the bytes the kernel filled (native byte order). `None` if even the
    /// fields every kernel has (up to `tcpi_total_retrans`, 104 bytes) are missing.
    pub fn parse(bytes: &[u8]) -> Option<TcpInfo> {
        if bytes.len() < 104 {
            return None;
        }
        Some(TcpInfo {
            state: bytes[0],
            ca_state: bytes[1],
            retransmits: bytes[2],
            delivery_rate_app_limited: bytes[7] & 1 != 0 && bytes.len() >= 168,
            rto_us: u32_at(bytes, 8)?,
            snd_mss: u32_at(bytes, 16)?,
            unacked: u32_at(bytes, 24)?,
            lost: u32_at(bytes, 32)?,
            retrans: u32_at(bytes, 36)?,
            rtt_us: u32_at(bytes, 68)?,
            rttvar_us: u32_at(bytes, 72)?,
            snd_ssthresh: u32_at(bytes, 76)?,
            snd_cwnd: u32_at(bytes, 80)?,
            total_retrans: u32_at(bytes, 100)?,
            pacing_rate: u64_at(bytes, 104),
            bytes_acked: u64_at(bytes, 120),
            bytes_received: u64_at(bytes, 128),
            segs_out: u32_at(bytes, 136),
            segs_in: u32_at(bytes, 140),
            min_rtt_us: u32_at(bytes, 148),
            delivery_rate: u64_at(bytes, 160),
            bytes_sent: u64_at(bytes, 200),
            bytes_retrans: u64_at(bytes, 208),
            // After tcpi_snd_wnd (228), tcpi_rcv_wnd (232) and tcpi_rehash (236), Linux 6.7's
            // `__u16 tcpi_total_rto;`.
            total_rto: u16_at(bytes, 240),
        })
    }

    /// Reads `TCP_INFO` from a socket of this process.
    pub fn from_socket(socket: impl AsFd) -> std::io::Result<TcpInfo> {
        let mut buffer = [0u8; TCP_INFO_BUFFER_LEN];
        let filled = get_tcp_info(socket.as_fd(), &mut buffer)?;
        TcpInfo::parse(&buffer[..filled]).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("TCP_INFO returned only {filled} bytes"),
            )
        })
    }
}

/// `getsockopt(IPPROTO_TCP, TCP_INFO)` into `buffer`; returns how many bytes the kernel filled.
/// Neither std nor socket2 exposes `TCP_INFO`.
#[allow(unsafe_code)]
fn get_tcp_info(
    socket: BorrowedFd<'_>,
    buffer: &mut [u8; TCP_INFO_BUFFER_LEN],
) -> std::io::Result<usize> {
    let mut length = TCP_INFO_BUFFER_LEN as libc::socklen_t;
    // SAFETY: `socket` is an open descriptor borrowed for the call; the pointer and `length`
    // describe `buffer`, which is exclusively borrowed and valid for `length` bytes; the kernel
    // writes at most `length` bytes into it and stores the count written in `length`.
    let result = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buffer.as_mut_ptr().cast(),
            &mut length,
        )
    };
    if result != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((length as usize).min(TCP_INFO_BUFFER_LEN))
}

/// Name of the TCP state number, as `ss` prints it.
pub fn state_name(state: u8) -> &'static str {
    match state {
        1 => "ESTAB",
        2 => "SYN-SENT",
        3 => "SYN-RECV",
        4 => "FIN-WAIT-1",
        5 => "FIN-WAIT-2",
        6 => "TIME-WAIT",
        7 => "CLOSED",
        8 => "CLOSE-WAIT",
        9 => "LAST-ACK",
        10 => "LISTEN",
        11 => "CLOSING",
        _ => "UNKNOWN",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn short_buffers_are_refused_and_optional_fields_follow_the_length() {
        assert_eq!(TcpInfo::parse(&[0u8; 103]), None);
        let mut bytes = vec![0u8; 104];
        bytes[0] = 1;
        bytes[80..84].copy_from_slice(&10u32.to_ne_bytes());
        let info = TcpInfo::parse(&bytes).unwrap();
        assert_eq!(info.snd_cwnd, 10);
        assert_eq!(info.delivery_rate, None);
        bytes.resize(168, 0);
        bytes[160..168].copy_from_slice(&12_345u64.to_ne_bytes());
        assert_eq!(TcpInfo::parse(&bytes).unwrap().delivery_rate, Some(12_345));
        // Linux 6.1 stops at tcpi_snd_wnd (232 bytes): no RTO count; 6.7 fills it.
        bytes.resize(232, 0);
        assert_eq!(TcpInfo::parse(&bytes).unwrap().total_rto, None);
        bytes.resize(248, 0);
        bytes[240..242].copy_from_slice(&3u16.to_ne_bytes());
        assert_eq!(TcpInfo::parse(&bytes).unwrap().total_rto, Some(3));
    }

    #[test]
    fn reads_a_loopback_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.write_all(&[7u8; 10_000]).unwrap();
        let mut received = vec![0u8; 10_000];
        server.read_exact(&mut received).unwrap();
        let info = TcpInfo::from_socket(&client).unwrap();
        assert_eq!(state_name(info.state), "ESTAB");
        assert!(info.snd_cwnd >= 1);
        assert!(info.snd_mss > 0);
    }
}
