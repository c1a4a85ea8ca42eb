//! Relay mode over loopback: real TFRC flows and timestamped probes through an emulated link.

use core::time::Duration;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tfrc_emu::element_syntax::{LinkFlags, LinkSpec};
use tfrc_emu::relay::{self, RelayConfig};
use tfrc_proto::Config;
use tfrc_udp::receiver::{ReceiverEvent, ReceiverOptions, UdpReceiver};
use tfrc_udp::sender::{SenderOptions, UdpSender};

/// The tests here run relays on the wall clock, with spinning senders: run side by side (cargo's
/// default) on a 2-core machine they delay each other's threads, and a probe's measured delay
/// then includes another test's CPU time (CI saw a median error of 1.17 ms once). Each test holds
/// this lock, so they run one at a time.
static REAL_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    REAL_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn link(rate: &str, delay: &str, extra_queue: Option<&str>, loss: Option<&str>) -> LinkSpec {
    let rate = vec![rate.to_string()];
    let delay = vec![delay.to_string()];
    let queue: Vec<String> = extra_queue.into_iter().map(str::to_string).collect();
    let loss: Vec<String> = loss.into_iter().map(str::to_string).collect();
    LinkSpec::from_flags(&LinkFlags {
        rate: &rate,
        delay: &delay,
        queue: &queue,
        loss: &loss,
        ..LinkFlags::default()
    })
    .unwrap()
}

type RelayThread = std::thread::JoinHandle<tfrc_emu::Result<relay::RelayReport>>;

/// A relay over `link` to a fresh sink socket (2 s read timeout): the sink, the relay's
/// address, its stop flag and its thread.
fn relay_to_sink(link: LinkSpec) -> (UdpSocket, SocketAddr, Arc<AtomicBool>, RelayThread) {
    let sink = UdpSocket::bind(loopback()).unwrap();
    sink.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    // Room for a whole GSO train at once: the relay may hand the loopback 40 datagrams in one
    // call faster than the test reads them, and a full receive buffer drops silently (CI once
    // saw 41 of 42 arrive while the relay counted 42 sent). The kernel caps the size at twice
    // net.core.rmem_max; what it grants is enough for the 50 kB train.
    let _ = socket2::SockRef::from(&sink).set_recv_buffer_size(4 << 20);
    let config = RelayConfig::new(loopback(), sink.local_addr().unwrap(), link);
    let stop = Arc::new(AtomicBool::new(false));
    let (relay_address, relay_thread) = relay::spawn(config, stop.clone()).unwrap();
    (sink, relay_address, stop, relay_thread)
}

/// The check: a TFRC flow through a 1 Mb/s, 50 ms RTT relay reaches at least 90 % of
/// the link (counted as the link counts: UDP payload + 28 bytes of IPv4/UDP header), once past
/// the loss burst that ends its slow start (TFRC needs a few seconds to climb back, as in ns-2):
/// measured from 6 s to 11 s.
#[test]
fn tfrc_through_a_1_mbps_50_ms_rtt_relay_fills_the_link() {
    let _serial = one_at_a_time();
    let receiver = UdpReceiver::bind(ReceiverOptions {
        report_interval: Some(Duration::from_secs(1)),
        once: true,
        ..ReceiverOptions::new(loopback())
    })
    .unwrap();
    let mut config = RelayConfig::new(
        loopback(),
        receiver.local_addr().unwrap(),
        link("1Mbps", "25ms", None, None),
    );
    let directory = tempfile::tempdir().unwrap();
    let links_csv = directory.path().join("links.csv");
    config.links_csv = Some((links_csv.clone(), Duration::from_secs(1)));
    let stop = Arc::new(AtomicBool::new(false));
    let (relay_address, relay_thread) = relay::spawn(config, stop.clone()).unwrap();
    let receiver_thread = std::thread::spawn(move || {
        let mut steady = (0u64, 0u64, 0.0f64);
        let report = receiver
            .run(&AtomicBool::new(false), &mut |event| {
                if let ReceiverEvent::Interval(interval) = event {
                    if interval.start >= 5.9 && interval.end <= 11.1 {
                        steady.0 += interval.sum.bytes;
                        steady.1 += interval.sum.packets;
                        steady.2 += interval.seconds;
                    }
                }
            })
            .unwrap();
        (report, steady)
    });
    let mut options = SenderOptions::new(relay_address);
    options.bind = Some(loopback());
    options.duration = Duration::from_secs(12);
    options.report_interval = None;
    options.config = Config {
        packet_size: 1000,
        ..Config::default()
    };
    let report = UdpSender::new(options)
        .unwrap()
        .run(&AtomicBool::new(false), &mut |_| {})
        .unwrap();
    let (received, (bytes, packets, seconds)) = receiver_thread.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let relay_report = relay_thread.join().unwrap().unwrap();

    let flow = &received.streams[0];
    assert!(seconds >= 4.0, "only {seconds} s of steady state");
    // Wire rate of what reached the receiver in the steady state.
    let wire_rate = (bytes + 28 * packets) as f64 * 8.0 / seconds;
    assert!(
        wire_rate >= 0.9e6,
        "TFRC got {wire_rate:.0} bit/s of 1 Mb/s (sent {} packets, p = {})",
        report.packets,
        report.mean_p
    );
    // The link cannot carry more than its rate: 1 Mb/s over the run, plus the queue.
    assert!(
        wire_rate <= 1.02e6,
        "{wire_rate:.0} bit/s through a 1 Mb/s link"
    );
    assert_eq!(relay_report.clients, 1);
    // Every data packet the receiver got crossed the link; the rest are END datagrams.
    let delivered = relay_report.forward.deliveries;
    let data = flow.packets + flow.duplicates;
    assert!(
        delivered >= data && delivered <= data + 10,
        "{delivered} vs {data}"
    );
    // links.csv: a header and two rows (forward, reverse) per second.
    let text = std::fs::read_to_string(&links_csv).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert!(rows.len() >= 14, "{} rows", rows.len());
    let busy = rows
        .iter()
        .filter(|row| row.contains(",sender,receiver,"))
        .filter_map(|row| row.split(',').nth(9)?.parse::<f64>().ok())
        .filter(|utilization| *utilization > 0.9)
        .count();
    assert!(
        busy >= 4,
        "forward utilization above 90 % in {busy} rows:\n{text}"
    );
}

/// Timestamped probes at a quarter of the link rate: no queueing, so each probe's one-way delay
/// is the propagation delay plus its serialization time, and the emulator's error is small.
#[test]
fn probes_see_the_configured_delay() {
    let _serial = one_at_a_time();
    let (sink, relay_address, stop, relay_thread) =
        relay_to_sink(link("10Mbps", "20ms", None, None));
    let source = UdpSocket::bind(loopback()).unwrap();
    source.connect(relay_address).unwrap();
    let origin = std::time::Instant::now();
    let count = 200u64;
    // 972-byte payloads: 1000 bytes on the link, 0.8 ms at 10 Mb/s; one every 3.2 ms.
    let sender = std::thread::spawn(move || {
        for index in 0..count {
            let due = origin + Duration::from_micros(3200 * index);
            while std::time::Instant::now() < due {
                std::hint::spin_loop();
            }
            let mut payload = vec![0u8; 972];
            let sent = origin.elapsed().as_nanos() as u64;
            payload[..8].copy_from_slice(&sent.to_le_bytes());
            source.send(&payload).unwrap();
        }
    });
    let mut errors = Vec::new();
    let mut buffer = [0u8; 2048];
    for _ in 0..count {
        let Ok(length) = sink.recv(&mut buffer) else {
            break;
        };
        assert_eq!(length, 972);
        let received = origin.elapsed().as_nanos() as i64;
        let sent = u64::from_le_bytes(buffer[..8].try_into().unwrap()) as i64;
        let expected = 20_000_000 + 800_000;
        errors.push(received - sent - expected);
    }
    sender.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    relay_thread.join().unwrap().unwrap();
    assert_eq!(errors.len() as u64, count, "every probe arrives");
    errors.sort_unstable();
    let median = errors[errors.len() / 2];
    // Never early (beyond clock noise), and the median within 1 ms even on a busy machine.
    assert!(
        errors[0] > -50_000,
        "a probe arrived {} µs early",
        -errors[0] / 1000
    );
    assert!(
        median < 1_000_000,
        "median delay error {} µs",
        median / 1000
    );
}

/// Bernoulli loss of 10 % on the forward direction: about 10 % of probes vanish, none in the
/// reverse direction.
#[test]
fn loss_model_drops_the_configured_fraction() {
    let _serial = one_at_a_time();
    let sink = UdpSocket::bind(loopback()).unwrap();
    sink.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let config = RelayConfig::new(
        loopback(),
        sink.local_addr().unwrap(),
        link(
            "100Mbps",
            "1ms",
            Some("droptail:1000"),
            Some("forward=bernoulli:0.1"),
        ),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (relay_address, relay_thread) = relay::spawn(config, stop.clone()).unwrap();
    let source = UdpSocket::bind(loopback()).unwrap();
    source.connect(relay_address).unwrap();
    let count = 3000;
    let reader = std::thread::spawn(move || {
        let mut received = 0u32;
        let mut buffer = [0u8; 64];
        while sink.recv(&mut buffer).is_ok() {
            received += 1;
        }
        received
    });
    for index in 0u32..count {
        source.send(&index.to_le_bytes()).unwrap();
        if index % 50 == 49 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let received = reader.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let report = relay_thread.join().unwrap().unwrap();
    let lost = count - received;
    assert_eq!(u64::from(lost), report.forward.total_drops());
    let fraction = f64::from(lost) / f64::from(count);
    // 3000 Bernoulli(0.1) trials: standard deviation 0.55 %; ±2 % is over 3.5 sigma.
    assert!((fraction - 0.1).abs() < 0.02, "lost {fraction}");
}

/// Sends `count` UDP payloads of `payload` bytes in a burst through a relay whose forward
/// direction follows a constant trace of one 1500-byte opportunity per millisecond, and returns
/// the seconds between the first and the last arrival.
fn trace_burst_spread(payload: usize, count: u32, opportunity: &str) -> f64 {
    let directory = tempfile::tempdir().unwrap();
    let trace = directory.path().join("constant12.trace");
    let lines: String = (1..=1000).map(|ms| format!("{ms}\n")).collect();
    std::fs::write(&trace, lines).unwrap();
    let trace = vec![format!("forward={}{opportunity}", trace.display())];
    let queue = vec!["droptail:5000".to_string()];
    let spec = LinkSpec::from_flags(&LinkFlags {
        trace: &trace,
        queue: &queue,
        ..LinkFlags::default()
    })
    .unwrap();
    let sink = UdpSocket::bind(loopback()).unwrap();
    sink.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let config = RelayConfig::new(loopback(), sink.local_addr().unwrap(), spec);
    let stop = Arc::new(AtomicBool::new(false));
    let (relay_address, relay_thread) = relay::spawn(config, stop.clone()).unwrap();
    let source = UdpSocket::bind(loopback()).unwrap();
    source.connect(relay_address).unwrap();
    let reader = std::thread::spawn(move || {
        let mut arrivals = Vec::new();
        let mut buffer = [0u8; 2048];
        while sink.recv(&mut buffer).is_ok() {
            arrivals.push(std::time::Instant::now());
        }
        arrivals
    });
    for index in 0..count {
        source.send(&vec![0u8; payload]).unwrap();
        if index % 50 == 49 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let arrivals = reader.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    relay_thread.join().unwrap().unwrap();
    assert_eq!(arrivals.len() as u32, count, "every packet arrives");
    (arrivals[arrivals.len() - 1] - arrivals[0]).as_secs_f64()
}

/// Mahimahi's rule on a trace link (`link_queue.cc`): each opportunity carries 1500 bytes that
/// the queued packets share, so a burst drains at 1.5 MB/s whatever the packet size (the link
/// counts payload + 28 bytes of IPv4/UDP header); one packet per opportunity drains 1000
/// packets/s. Loose bounds: a shared machine wakes the relay late, never early.
#[test]
fn trace_links_drain_1500_bytes_per_opportunity() {
    let _serial = one_at_a_time();
    // 1500 packets of 200 bytes: 0.2 s under Mahimahi's rule, 1.5 s one packet each.
    let small = trace_burst_spread(172, 1500, "");
    assert!((0.17..0.5).contains(&small), "200-byte packets: {small} s");
    let small_per_packet = trace_burst_spread(172, 1500, ":opportunity=packet");
    assert!(
        small_per_packet > 1.3,
        "one packet per opportunity: {small_per_packet} s"
    );
    // 600 packets of 1000 bytes: 0.4 s under Mahimahi's rule, 0.6 s one packet each.
    let large = trace_burst_spread(972, 600, "");
    assert!(
        (0.35..0.52).contains(&large),
        "1000-byte packets: {large} s"
    );
}

/// A relay told to forward to its own listen address would loop every datagram through itself:
/// it refuses to start, naming both addresses.
#[test]
fn forwarding_to_the_own_listen_address_is_refused() {
    let _serial = one_at_a_time();
    let free = UdpSocket::bind(loopback()).unwrap();
    let address = free.local_addr().unwrap();
    drop(free);
    for listen in [address, SocketAddr::from(([0, 0, 0, 0], address.port()))] {
        let config = RelayConfig::new(listen, address, link("1Mbps", "10ms", None, None));
        let error = relay::Relay::bind(config).expect_err("a looping relay");
        let message = error.to_string();
        assert!(message.contains("loop"), "{message}");
        assert!(message.contains(&address.to_string()), "{message}");
    }
    // Another port is fine.
    let other = SocketAddr::from(([127, 0, 0, 1], address.port().wrapping_add(1).max(1024)));
    assert!(relay::Relay::bind(RelayConfig::new(
        address,
        other,
        link("1Mbps", "10ms", None, None)
    ))
    .is_ok());
}

/// Client slots do not fill for good: a client idle past `client_idle_timeout` is forgotten,
/// and when `max_clients` are served a new sender takes the slot of the one idle the longest.
/// The sender that replaced it is served (its datagrams reach the receiver).
#[test]
fn client_slots_expire_and_are_reused_least_recently_used_first() {
    let _serial = one_at_a_time();
    let receiver = UdpSocket::bind(loopback()).unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut config = RelayConfig::new(
        loopback(),
        receiver.local_addr().unwrap(),
        link("100Mbps", "1ms", None, None),
    );
    config.max_clients = 2;
    config.client_idle_timeout = Duration::from_millis(300);
    let stop = Arc::new(AtomicBool::new(false));
    let (relay_address, relay_thread) = relay::spawn(config, stop.clone()).unwrap();
    let senders: Vec<UdpSocket> = (0..3)
        .map(|_| UdpSocket::bind(loopback()).unwrap())
        .collect();
    let received = |expected: &[u8]| {
        let mut buffer = [0u8; 64];
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            if let Ok(length) = receiver.recv(&mut buffer) {
                if &buffer[..length] == expected {
                    return true;
                }
            }
        }
        false
    };
    // Two clients fill the slots; the third evicts the least recently active (the first).
    senders[0].send_to(b"first", relay_address).unwrap();
    assert!(received(b"first"));
    senders[1].send_to(b"second", relay_address).unwrap();
    assert!(received(b"second"));
    senders[2].send_to(b"third", relay_address).unwrap();
    assert!(
        received(b"third"),
        "a new sender beyond max_clients is served"
    );
    // All idle past the timeout: forgotten; a returning sender gets a fresh slot.
    std::thread::sleep(Duration::from_millis(600));
    senders[0].send_to(b"again", relay_address).unwrap();
    assert!(received(b"again"));
    stop.store(true, Ordering::Relaxed);
    let report = relay_thread.join().unwrap().unwrap();
    assert_eq!(report.clients, 4, "every sender's arrival made a client");
    assert_eq!(report.evicted_clients, 1);
    assert!(
        report.expired_clients >= 2,
        "{} expired",
        report.expired_clients
    );
}

/// A packet still on the link when its client is forgotten is dropped and counted, never sent
/// through a socket a newer client owns: 300 ms of delay against a 100 ms idle timeout.
#[test]
fn packets_of_a_forgotten_client_are_dropped() {
    let _serial = one_at_a_time();
    let receiver = UdpSocket::bind(loopback()).unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut config = RelayConfig::new(
        loopback(),
        receiver.local_addr().unwrap(),
        link("100Mbps", "300ms", None, None),
    );
    config.client_idle_timeout = Duration::from_millis(100);
    let stop = Arc::new(AtomicBool::new(false));
    let (relay_address, relay_thread) = relay::spawn(config, stop.clone()).unwrap();
    let sender = UdpSocket::bind(loopback()).unwrap();
    sender.send_to(b"late", relay_address).unwrap();
    let mut buffer = [0u8; 16];
    let deadline = std::time::Instant::now() + Duration::from_millis(800);
    while std::time::Instant::now() < deadline {
        assert!(
            receiver.recv(&mut buffer).is_err(),
            "an orphaned packet was delivered"
        );
    }
    stop.store(true, Ordering::Relaxed);
    let report = relay_thread.join().unwrap().unwrap();
    assert_eq!((report.expired_clients, report.orphaned_packets), (1, 1));
}

/// A GSO train of 40 equal datagrams, a shorter one and an empty one, sent in two calls through
/// a fast relay: the relay reads the train with GRO and sends what leaves the link together in
/// GSO batches, and the receiver sees every datagram, in order, with its size and contents.
#[test]
fn a_gso_train_is_relayed_intact_and_in_order() {
    use tfrc_udp::batch::Offload;
    let _serial = one_at_a_time();
    let (sink, relay_address, stop, relay_thread) =
        relay_to_sink(link("10Gbps", "1ms", Some("droptail:1000"), None));
    let source = UdpSocket::bind(loopback()).unwrap();
    let offload = Offload::new(&source, false).unwrap();
    let size = 1200;
    let mut train: Vec<u8> = (0..40u8)
        .flat_map(|index| std::iter::repeat_n(index, size))
        .collect();
    train.extend(std::iter::repeat_n(40u8, 300));
    let outcome = offload.send(&source, relay_address, &train, size, None);
    assert_eq!(outcome.refused + outcome.unreachable, 0);
    let outcome = offload.send(&source, relay_address, &[], size, None);
    assert_eq!(outcome.refused + outcome.unreachable, 0);

    let mut buffer = [0u8; 2048];
    let mut received = Vec::new();
    while received.len() < 42 {
        let Ok(length) = sink.recv(&mut buffer) else {
            break;
        };
        received.push(buffer[..length].to_vec());
    }
    stop.store(true, Ordering::Relaxed);
    let report = relay_thread.join().unwrap().unwrap();
    assert_eq!(received.len(), 42, "{report:?}");
    for (index, datagram) in received.iter().enumerate().take(41) {
        let expected = if index < 40 { size } else { 300 };
        assert_eq!(datagram.len(), expected, "datagram {index}");
        assert!(
            datagram.iter().all(|&byte| byte == index as u8),
            "datagram {index}"
        );
    }
    assert!(received[41].is_empty());
    assert_eq!(report.forward.departures, 42);
    assert_eq!(report.send_errors, 0);
}

/// ECN end to end over loopback: `tfrc send --ecn` (ECT(0) in the IP header) through a relay
/// whose 2 Mb/s link has a gentle RED queue with `ecn=true`. RED marks the packets CE where it
/// would have dropped them early (RFC 3168), the relay writes CE into the forwarded datagrams'
/// IP headers, and the receiver reads it (`IP_RECVTOS`) and counts the marks in its loss events.
/// The same run without `--ecn`: no marks, the packets are dropped instead.
#[test]
fn ecn_marks_reach_the_receiver_through_a_red_relay() {
    let _serial = one_at_a_time();
    let run = |ecn: bool| {
        let receiver = UdpReceiver::bind(ReceiverOptions {
            report_interval: None,
            once: true,
            ..ReceiverOptions::new(loopback())
        })
        .unwrap();
        let config = RelayConfig::new(
            loopback(),
            receiver.local_addr().unwrap(),
            link(
                "2Mbps",
                "20ms",
                Some("red:limit=100,min_th=5,max_th=15,gentle=true,ecn=true"),
                None,
            ),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let (relay_address, relay_thread) = relay::spawn(config, stop.clone()).unwrap();
        let receiver_thread =
            std::thread::spawn(move || receiver.run(&AtomicBool::new(false), &mut |_| {}));
        let mut options = SenderOptions::new(relay_address);
        options.bind = Some(loopback());
        options.duration = Duration::from_secs(6);
        options.report_interval = None;
        options.ecn = ecn;
        UdpSender::new(options)
            .unwrap()
            .run(&AtomicBool::new(false), &mut |_| {})
            .unwrap();
        let received = receiver_thread.join().unwrap().unwrap();
        stop.store(true, Ordering::Relaxed);
        let relay_report = relay_thread.join().unwrap().unwrap();
        (received.streams[0].clone(), relay_report.forward)
    };
    let (marked, marked_link) = run(true);
    println!(
        "with --ecn: {} marks at the queue, {} marked packets received, {} lost, {} loss events, mean p {:.4}",
        marked_link.congestion_marks, marked.ecn_marked, marked.lost, marked.loss_events, marked.mean_p
    );
    assert!(marked_link.congestion_marks > 0);
    // Every mark the queue made reached the receiver in an IP header: a packet is marked as it
    // enters the queue, and a queued packet always leaves it (only arrivals are dropped).
    assert_eq!(marked.ecn_marked, marked_link.congestion_marks);
    assert!(marked.loss_events > 0 && marked.mean_p > 0.0);
    let (plain, plain_link) = run(false);
    println!(
        "without: {} marks, {} marked received, {} lost, {} loss events",
        plain_link.congestion_marks, plain.ecn_marked, plain.lost, plain.loss_events
    );
    assert_eq!((plain_link.congestion_marks, plain.ecn_marked), (0, 0));
    assert!(plain.lost > 0 && plain.loss_events > 0);
}
