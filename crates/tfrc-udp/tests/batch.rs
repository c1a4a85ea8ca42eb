//! Batched sends and receives on loopback: what one GSO call carries arrives as the same
//! datagrams, in order, whether the receiver uses GRO or reads one datagram at a time.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use tfrc_udp::batch::{Offload, ReceiveBuffers};

/// `count` datagrams of `size` bytes, each filled with its index.
fn batch(count: usize, size: usize) -> Vec<u8> {
    (0..count)
        .flat_map(|index| std::iter::repeat_n(index as u8, size))
        .collect()
}

fn loopback_socket() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").unwrap()
}

/// Reads until `count` datagrams have come or two seconds have passed.
fn receive_with_gro(offload: &Offload, socket: &UdpSocket, count: usize) -> Vec<Vec<u8>> {
    let mut buffers = ReceiveBuffers::new();
    let mut received = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    while received.len() < count && Instant::now() < deadline {
        match offload.receive(socket, &mut buffers) {
            Ok(()) => {
                for datagram in buffers.datagrams() {
                    assert_eq!(datagram.from.ip().to_string(), "127.0.0.1");
                    // The kernel stamps every datagram on receipt, within a second of now.
                    let stamp = datagram.kernel_time.expect("SO_TIMESTAMPNS");
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap();
                    assert!(now.saturating_sub(stamp) < Duration::from_secs(1));
                    received.push(datagram.bytes.to_vec());
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(error) => panic!("receive failed: {error}"),
        }
    }
    received
}

#[test]
fn a_gso_batch_arrives_as_the_same_datagrams_with_gro() {
    let sender = loopback_socket();
    let receiver = loopback_socket();
    let send_offload = Offload::new(&sender, false).unwrap();
    let receive_offload = Offload::new(&receiver, true).unwrap();
    let size = 1432;
    let count = send_offload.max_segments(size).min(40);
    // Linux ≥ 4.18 has UDP GSO on loopback; the CI kernel and this machine's do.
    assert_eq!(send_offload.send_mode(), "gso");
    assert_eq!(receive_offload.receive_mode(), "gro");
    assert!(count > 1, "GSO allows {count} segments of {size} bytes");
    let contents = batch(count, size);
    let outcome = send_offload.send(
        &sender,
        receiver.local_addr().unwrap(),
        &contents,
        size,
        None,
    );
    assert_eq!(outcome.refused + outcome.unreachable, 0);
    let received = receive_with_gro(&receive_offload, &receiver, count);
    assert_eq!(received.len(), count);
    for (index, datagram) in received.iter().enumerate() {
        assert_eq!(datagram.len(), size);
        assert!(
            datagram.iter().all(|&byte| byte == index as u8),
            "datagram {index}"
        );
    }
}

#[test]
fn a_gso_batch_reaches_a_plain_socket_as_separate_datagrams() {
    let sender = loopback_socket();
    let receiver = loopback_socket();
    // Set up without GRO, as a socket read by plain `recv` is (the sender's, for its
    // feedback): on loopback a GRO socket would get the whole train in one read.
    let _receiver_offload = Offload::new(&receiver, false).unwrap();
    receiver.set_nonblocking(false).unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let offload = Offload::new(&sender, false).unwrap();
    // The last datagram may be shorter than the segment size.
    let size = 1000;
    let mut contents = batch(5, size);
    contents.truncate(4 * size + 300);
    let outcome = offload.send(
        &sender,
        receiver.local_addr().unwrap(),
        &contents,
        size,
        None,
    );
    assert_eq!(outcome.refused + outcome.unreachable, 0);
    let mut buffer = [0u8; 2048];
    for index in 0..5 {
        let length = receiver.recv(&mut buffer).unwrap();
        assert_eq!(length, if index < 4 { size } else { 300 });
        assert!(buffer[..length].iter().all(|&byte| byte == index as u8));
    }
}

#[test]
fn offload_keeps_the_sockets_fragmentation_setting() {
    // quinn-udp forbids fragmentation (IP_PMTUDISC_PROBE), which would make a datagram larger
    // than the path's MTU (`tfrc send -l 8000` over Ethernet) a send error; Offload restores
    // the socket's own setting, under which the kernel fragments it.
    let sender = loopback_socket();
    let before = tfrc_udp::sockopt::get_int(
        std::os::fd::AsRawFd::as_raw_fd(&sender),
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
    )
    .unwrap();
    let _offload = Offload::new(&sender, false).unwrap();
    let after = tfrc_udp::sockopt::get_int(
        std::os::fd::AsRawFd::as_raw_fd(&sender),
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
    )
    .unwrap();
    assert_eq!(before, after);
    assert_ne!(after, libc::IP_PMTUDISC_PROBE);
}

/// The ECN field given to a send is in every datagram's IP header, and the receiver reads it
/// (`IP_TOS` control message out, `IP_RECVTOS` in): not-ECT, ECT(0), ECT(1) and CE, in single
/// sends and in a GSO batch.
#[test]
fn the_ecn_field_crosses_loopback_both_ways() {
    use tfrc_udp::batch::EcnCodepoint;
    let sender = loopback_socket();
    let receiver = loopback_socket();
    let send_offload = Offload::new(&sender, false).unwrap();
    let receive_offload = Offload::new(&receiver, true).unwrap();
    let destination = receiver.local_addr().unwrap();
    for ecn in [
        None,
        Some(EcnCodepoint::Ect0),
        Some(EcnCodepoint::Ect1),
        Some(EcnCodepoint::Ce),
    ] {
        for count in [1, 4] {
            let contents = batch(count, 200);
            let outcome = send_offload.send(&sender, destination, &contents, 200, ecn);
            assert_eq!(outcome.refused + outcome.unreachable, 0);
            let mut buffers = ReceiveBuffers::new();
            let mut seen = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(2);
            while seen.len() < count && Instant::now() < deadline {
                match receive_offload.receive(&receiver, &mut buffers) {
                    Ok(()) => seen.extend(buffers.datagrams().map(|datagram| datagram.ecn)),
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
            assert_eq!(seen, vec![ecn; count], "sent {ecn:?} × {count}");
        }
    }
}
