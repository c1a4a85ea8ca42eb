//! Hostile and stray input over loopback: counted, dropped, and without effect on the flows.

use core::time::Duration;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tfrc_proto::wire::{DataRepr, FeedbackRepr, Packet};
use tfrc_proto::Config;
use tfrc_udp::control::{
    Cookie, EndAcknowledgement, EndOfSession, FlowOptions, Hello, COOKIE_LEN, END_ACK_LEN, END_LEN,
    HELLO_LEN,
};
use tfrc_udp::receiver::{FlowEnd, ReceiverOptions, UdpReceiver};
use tfrc_udp::registry::{self, FlowSnapshot, SenderSnapshot};
use tfrc_udp::sender::{SenderOptions, UdpSender};

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Binds a receiver with `options` and runs it on a thread until the returned flag is set;
/// returns its address, the flag and the thread (whose result is the receiver's report).
fn spawn_receiver(
    options: ReceiverOptions,
) -> (
    SocketAddr,
    Arc<AtomicBool>,
    std::thread::JoinHandle<tfrc_udp::receiver::ReceiverReport>,
) {
    let receiver = UdpReceiver::bind(options).unwrap();
    let address = receiver.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || receiver.run(&stop, &mut |_| {}).unwrap())
    };
    (address, stop, thread)
}

fn sender_snapshot(flow_id: &str) -> SenderSnapshot {
    let probe = registry::probes()
        .into_iter()
        .find(|probe| probe.flow_id() == flow_id)
        .expect("the sender is registered");
    match probe.sample() {
        Some(FlowSnapshot::TfrcSender(snapshot)) => snapshot,
        other => panic!("unexpected snapshot {other:?}"),
    }
}

/// A feedback echoing `echo_sequence` whose receipt proof covers that one packet: `nonce` is
/// the packet's (session token and mark, which is the proof's sum for a run of one). Its loss
/// intervals claim no loss since packet 0, proven by that mark alone: true of packet 0.
fn feedback(session_id: u32, nonce: u32, echo_sequence: u32, echo_timestamp: u64) -> Vec<u8> {
    let mut intervals = tfrc_proto::wire::LossIntervals::default();
    intervals.entries[0] = tfrc_proto::wire::LossInterval {
        lossy: 0,
        data: echo_sequence.wrapping_add(1),
        sum: nonce as u16,
        flags: 0,
    };
    let repr = FeedbackRepr {
        session_id,
        echo_sequence,
        echo_timestamp,
        elapsed_micros: 0,
        x_recv: 10_000_000,
        loss_event_rate_raw: 0,
        echo_nonce: nonce,
        proof_flags: 1,
        intervals,
    };
    let mut buffer = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buffer).unwrap();
    buffer
}

/// The test socket plays the receiver: it learns the session from the first data packet, then
/// sends garbage and forged feedback. None of it may change the sender's rate; a genuine feedback
/// afterwards does (so the check is meaningful).
#[test]
fn garbage_and_spoofed_feedback_are_counted_and_do_not_change_the_rate() {
    let fake_receiver = UdpSocket::bind(loopback()).unwrap();
    fake_receiver
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut options = SenderOptions::new(fake_receiver.local_addr().unwrap());
    options.bind = Some(loopback());
    options.duration = Duration::from_secs(30);
    options.report_interval = None;
    options.end_timeout = Duration::from_millis(100);
    let sender = UdpSender::new(options).unwrap();
    let flow_id = sender.flow_id();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || sender.run(&stop, &mut |_| {}).unwrap())
    };

    // The hello: answered with a cookie, as a receiver does.
    let mut buffer = [0u8; 2048];
    let (length, sender_address) = fake_receiver.recv_from(&mut buffer).unwrap();
    let hello = Hello::parse(&buffer[..length]).expect("a hello comes first");
    let mut answer = [0u8; COOKIE_LEN];
    let answer_length = hello.answer(7).emit(&mut answer);
    fake_receiver
        .send_to(&answer[..answer_length], sender_address)
        .unwrap();
    // The first data packet: RFC 5348 §4.2, one packet per second before any feedback (a
    // hello repeated before the answer arrived is skipped).
    let length = loop {
        let (length, _) = fake_receiver.recv_from(&mut buffer).unwrap();
        if Hello::parse(&buffer[..length]).is_err() {
            break length;
        }
    };
    let options = FlowOptions::parse(&buffer[32..length]).expect("flow options");
    assert_eq!(options.cookie, 7, "the data carries the receiver's cookie");
    let data = DataRepr::parse(&Packet::new_checked(&buffer[..length]).unwrap()).unwrap();
    let before = sender_snapshot(&flow_id);
    assert_eq!(before.stats.feedbacks, 0);

    let send = |bytes: &[u8]| {
        fake_receiver.send_to(bytes, sender_address).unwrap();
    };
    // Garbage: empty, short, wrong version, unknown kind, a data packet, random bytes.
    send(&[]);
    send(&[1, 2, 3]);
    send(&[9u8; 40]);
    send(&[1, 7, 0, 0, 0, 0, 0, 0, 0, 0]);
    send(&buffer[..length]);
    send(&[0x5a; 40]);
    let garbage = 6;
    // Forged feedback: another session, the wrong session token.
    send(&feedback(
        data.session_id ^ 1,
        data.nonce,
        data.sequence,
        data.timestamp,
    ));
    send(&feedback(
        data.session_id,
        data.nonce ^ 0x0001_0000,
        data.sequence,
        data.timestamp,
    ));
    let foreign = 2;
    // The right token but a receipt proof that does not add up (the packet's mark is wrong):
    // a receiver claiming a packet it did not get.
    send(&feedback(
        data.session_id,
        data.nonce ^ 1,
        data.sequence,
        data.timestamp,
    ));
    let unproven = 1;
    // Right session and nonce, but echoing a packet never sent or a timestamp from the future.
    send(&feedback(
        data.session_id,
        data.nonce,
        data.sequence + 1000,
        data.timestamp,
    ));
    send(&feedback(
        data.session_id,
        data.nonce,
        data.sequence,
        u64::MAX,
    ));
    let invalid_echo = 2;
    // A forged end acknowledgement (wrong nonce) is ignored too.
    let mut acknowledgement = [0u8; END_ACK_LEN];
    let ack_length = EndAcknowledgement {
        session_id: data.session_id,
        nonce: data.nonce ^ 1,
        packets_received: 1,
        bytes_received: 1000,
        packets_lost: 0,
        loss_events: 0,
        loss_event_rate_raw: 0,
        duplicates: 0,
        jitter_micros: 0,
    }
    .emit(&mut acknowledgement);
    send(&acknowledgement[..ack_length]);

    // Wait until the sender has read all of it (generous on a loaded machine).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let after = loop {
        let snapshot = sender_snapshot(&flow_id);
        let stats = snapshot.stats;
        if stats.malformed >= garbage
            && stats.foreign >= foreign
            && stats.invalid_echo >= invalid_echo
            && stats.unproven >= unproven
        {
            break snapshot;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not all counted: {stats:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(after.stats.malformed, garbage);
    assert_eq!(after.stats.foreign, foreign);
    assert_eq!(after.stats.invalid_echo, invalid_echo);
    assert_eq!(after.stats.unproven, unproven);
    assert_eq!(after.stats.feedbacks, 0, "no forged feedback was acted on");
    assert_eq!(
        after.state.rtt, None,
        "no RTT was measured from forged feedback"
    );
    // The rate is the initial one, halved only by genuine no-feedback expiries (RFC 5348 §4.4).
    let expected = before.state.x / 2f64.powi(after.stats.no_feedback_expiries as i32);
    assert_eq!(after.state.x, expected.max(1000.0 / 64.0));

    // Control: a genuine feedback is accepted and changes the rate.
    send(&feedback(
        data.session_id,
        data.nonce,
        data.sequence,
        data.timestamp,
    ));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let accepted = loop {
        let snapshot = sender_snapshot(&flow_id);
        if snapshot.stats.feedbacks == 1 {
            break snapshot;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "genuine feedback not accepted"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(accepted.state.rtt.is_some());
    assert_ne!(accepted.state.x, after.state.x);

    stop.store(true, Ordering::Relaxed);
    let report = thread.join().unwrap();
    assert_eq!(report.stats.feedbacks, 1);
    assert!(
        report.receiver.is_none(),
        "the forged acknowledgement was not taken"
    );
}

/// Asks the receiver at `address` for the cookie of `session` from `client`'s address.
fn cookie_for(client: &UdpSocket, address: SocketAddr, session_id: u32, nonce: u32) -> u64 {
    let mut hello = [0u8; HELLO_LEN];
    let length = Hello { session_id, nonce }.emit(&mut hello);
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    client.send_to(&hello[..length], address).unwrap();
    let mut answer = [0u8; 64];
    // Feedback for flows this client opened before may come first.
    let (cookie, length) = loop {
        let (length, _) = client.recv_from(&mut answer).expect("the receiver answers");
        if let Ok(cookie) = Cookie::parse(&answer[..length]) {
            break (cookie, length);
        }
    };
    assert_eq!((cookie.session_id, cookie.nonce), (session_id, nonce));
    assert!(
        length <= HELLO_LEN,
        "the answer is no longer than the hello"
    );
    cookie.cookie
}

/// A data packet of `session_id`; with `cookie`, its payload starts with flow options
/// carrying it.
fn data_packet(session_id: u32, nonce: u32, sequence: u32, cookie: Option<u64>) -> Vec<u8> {
    let repr = DataRepr {
        session_id,
        sequence,
        timestamp: 1_000_000,
        rtt_micros: 0,
        veno_backlog_millipackets: 0,
        nonce,
    };
    let mut buffer = vec![0u8; 200];
    repr.emit(&mut buffer).unwrap();
    if let Some(cookie) = cookie {
        FlowOptions {
            cookie,
            ..FlowOptions::default()
        }
        .emit(&mut buffer[32..])
        .unwrap();
    }
    buffer
}

/// Two real flows share one receiver while a test socket injects garbage, forged data and forged
/// ends: both flows complete with their own summaries, the bad input is counted.
#[test]
fn receiver_demultiplexes_flows_and_counts_bad_input() {
    let (address, stop, receiver_thread) = spawn_receiver(ReceiverOptions {
        report_interval: None,
        ..ReceiverOptions::new(loopback())
    });

    let mut senders = Vec::new();
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let mut options = SenderOptions::new(address);
        options.bind = Some(loopback());
        options.duration = Duration::from_secs(2);
        options.max_rate = Some(2_000_000.0 / 8.0);
        options.report_interval = None;
        options.config = Config {
            packet_size: 500,
            ..Config::default()
        };
        let sender = UdpSender::new(options).unwrap();
        sessions.push(sender.session_id());
        senders.push(std::thread::spawn(move || {
            sender.run(&AtomicBool::new(false), &mut |_| {}).unwrap()
        }));
    }

    // Hostile traffic while the flows run.
    std::thread::sleep(Duration::from_millis(300));
    let attacker = UdpSocket::bind(loopback()).unwrap();
    let send = |bytes: &[u8]| {
        attacker.send_to(bytes, address).unwrap();
    };
    send(&[]);
    send(&[0xff; 100]);
    send(&feedback(sessions[0], 1, 0, 0)); // feedback sent to a receiver
    send(&data_packet(0x1234_5678, 1, 0, None)); // new session without flow options
    let malformed = 4;
    // A known session from another address (the nonce cannot be known, any value will do).
    send(&data_packet(sessions[0], 42, 5, Some(0)));
    // A forged end of session from another address.
    let mut end = [0u8; END_LEN];
    let end_length = EndOfSession {
        session_id: sessions[1],
        nonce: 42,
        packets_sent: 1,
        bytes_sent: 1,
        duration_nanos: 1,
    }
    .emit(&mut end);
    send(&end[..end_length]);
    let spoofed = 2;

    let reports: Vec<_> = senders
        .into_iter()
        .map(|thread| thread.join().unwrap())
        .collect();
    stop.store(true, Ordering::Relaxed);
    let report = receiver_thread.join().unwrap();

    assert_eq!(
        report.counters.malformed, malformed,
        "{:?}",
        report.counters
    );
    assert_eq!(report.counters.spoofed, spoofed, "{:?}", report.counters);
    assert_eq!(report.counters.flows_opened, 2);
    assert_eq!(report.counters.flows_completed, 2);
    assert_eq!(report.streams.len(), 2);
    for (session, sender) in sessions.iter().zip(&reports) {
        let flow = report
            .streams
            .iter()
            .find(|flow| flow.session_id == format!("{session:08x}"))
            .expect("a summary per session");
        assert_eq!(flow.reason, FlowEnd::Completed);
        assert!(flow.packets > 50, "{flow:?}");
        assert_eq!(flow.sender_packets, Some(sender.packets));
        let totals = sender.receiver.expect("the end was acknowledged");
        assert_eq!(totals.packets, flow.packets);
        assert!(sender.stats.feedbacks > 0);
        assert_eq!(sender.stats.foreign + sender.stats.malformed, 0);
    }
}

/// At most `max_flows` sessions are held; idle ones expire.
#[test]
fn receiver_state_is_bounded() {
    let (address, stop, thread) = spawn_receiver(ReceiverOptions {
        report_interval: None,
        max_flows: 2,
        idle_timeout: Duration::from_millis(300),
        ..ReceiverOptions::new(loopback())
    });
    let client = UdpSocket::bind(loopback()).unwrap();
    for session in 1..=5u32 {
        let cookie = cookie_for(&client, address, session, 7 << 16);
        client
            .send_to(&data_packet(session, 7 << 16, 0, Some(cookie)), address)
            .unwrap();
    }
    // Long enough for both flows to expire, even on a loaded machine.
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    let report = thread.join().unwrap();
    assert_eq!(report.counters.flows_opened, 2);
    assert_eq!(report.counters.rejected_flows, 3);
    assert_eq!(report.counters.flows_expired, 2);
    assert!(report
        .streams
        .iter()
        .all(|flow| flow.reason == FlowEnd::IdleTimeout && flow.packets == 1));
}

/// One-way delay of the lossy relay, each direction. A real path's round trip (20 ms here) keeps
/// the sender's no-feedback timer (at least 4 R) well above the scheduling stalls of a loaded
/// machine; over bare loopback R is a fraction of a millisecond and CI saw no-feedback expiries
/// cut a 3 s run to 80 packets.
const RELAY_DELAY: Duration = Duration::from_millis(10);

/// Forwards what `inbound` receives to `destination()` after [`RELAY_DELAY`], in order, dropping
/// the packets `drop` says to. Runs until `stop`.
fn delaying_forwarder(
    inbound: Arc<UdpSocket>,
    outbound: Arc<UdpSocket>,
    stop: Arc<AtomicBool>,
    mut on_receive: impl FnMut(SocketAddr, &[u8]) -> bool + Send + 'static,
    destination: impl Fn() -> Option<SocketAddr> + Send + 'static,
) {
    std::thread::spawn(move || {
        let mut buffer = [0u8; 65_536];
        let mut in_flight = std::collections::VecDeque::<(std::time::Instant, Vec<u8>)>::new();
        while !stop.load(Ordering::Relaxed) {
            if let Ok((length, from)) = inbound.recv_from(&mut buffer) {
                if on_receive(from, &buffer[..length]) {
                    in_flight.push_back((
                        std::time::Instant::now() + RELAY_DELAY,
                        buffer[..length].to_vec(),
                    ));
                }
            }
            let now = std::time::Instant::now();
            while in_flight.front().is_some_and(|(due, _)| *due <= now) {
                let (_, packet) = in_flight.pop_front().unwrap();
                if let Some(to) = destination() {
                    let _ = outbound.send_to(&packet, to);
                }
            }
        }
    });
}

/// A relay between sender and receiver that delays both directions by [`RELAY_DELAY`] and drops
/// every `drop_every`-th data packet (and nothing else). Returns its sender-facing address and
/// the drop counter.
fn lossy_relay(
    receiver: SocketAddr,
    drop_every: u64,
    stop: Arc<AtomicBool>,
) -> (SocketAddr, Arc<std::sync::atomic::AtomicU64>) {
    let facing_sender = UdpSocket::bind(loopback()).unwrap();
    let facing_receiver = UdpSocket::bind(loopback()).unwrap();
    for socket in [&facing_sender, &facing_receiver] {
        // Short enough to release delayed packets on time.
        socket
            .set_read_timeout(Some(Duration::from_millis(1)))
            .unwrap();
        // Room for a long stall of the relay thread on a loaded machine: the relay must not
        // lose packets of its own.
        let _ = socket2::SockRef::from(socket).set_recv_buffer_size(4 << 20);
    }
    let address = facing_sender.local_addr().unwrap();
    let dropped = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sender_address = Arc::new(std::sync::Mutex::new(None::<SocketAddr>));
    let facing_sender = Arc::new(facing_sender);
    let facing_receiver = Arc::new(facing_receiver);
    {
        let (dropped, sender_address) = (Arc::clone(&dropped), Arc::clone(&sender_address));
        let mut until_drop = drop_every;
        delaying_forwarder(
            Arc::clone(&facing_sender),
            Arc::clone(&facing_receiver),
            Arc::clone(&stop),
            move |from, packet| {
                *sender_address.lock().unwrap() = Some(from);
                if packet.len() > 1 && packet[1] == 1 {
                    until_drop -= 1;
                    if until_drop == 0 {
                        until_drop = drop_every;
                        dropped.fetch_add(1, Ordering::Relaxed);
                        return false;
                    }
                }
                true
            },
            move || Some(receiver),
        );
    }
    delaying_forwarder(
        facing_receiver,
        facing_sender,
        stop,
        |_, _| true,
        move || *sender_address.lock().unwrap(),
    );
    (address, dropped)
}

/// Sends a 3 s flow with `config` (application rate cap `max_rate`, bytes/s) through
/// [`lossy_relay`] dropping every `drop_every`-th data packet to a receiver; returns the
/// sender's and the receiver's reports and the number of packets the relay dropped.
fn run_through_lossy_relay(
    config: Config,
    drop_every: u64,
    max_rate: Option<f64>,
) -> (
    tfrc_udp::sender::SenderReport,
    tfrc_udp::receiver::ReceiverReport,
    u64,
) {
    let receiver = UdpReceiver::bind(ReceiverOptions {
        report_interval: None,
        once: true,
        ..ReceiverOptions::new(loopback())
    })
    .unwrap();
    let relay_stop = Arc::new(AtomicBool::new(false));
    let (relay, dropped) = lossy_relay(
        receiver.local_addr().unwrap(),
        drop_every,
        Arc::clone(&relay_stop),
    );
    let receiver_thread =
        std::thread::spawn(move || receiver.run(&AtomicBool::new(false), &mut |_| {}).unwrap());
    let mut options = SenderOptions::new(relay);
    options.bind = Some(loopback());
    options.duration = Duration::from_secs(3);
    options.max_rate = max_rate;
    options.report_interval = None;
    options.config = config;
    let report = UdpSender::new(options)
        .unwrap()
        .run(&AtomicBool::new(false), &mut |_| {})
        .unwrap();
    let received = receiver_thread.join().unwrap();
    relay_stop.store(true, Ordering::Relaxed);
    (report, received, dropped.load(Ordering::Relaxed))
}

/// Over a path with a 20 ms round trip that loses every 20th data packet, the receiver detects
/// exactly those losses, the loss event rate reaches the sender and ends its slow start.
#[test]
fn losses_on_the_path_reach_the_sender_as_a_loss_event_rate() {
    losses_reach_the_sender(Config {
        packet_size: 500,
        ..Config::default()
    });
}

fn losses_reach_the_sender(config: Config) {
    let (report, received, dropped) = run_through_lossy_relay(config, 20, Some(4_000_000.0 / 8.0));
    let flow = &received.streams[0];
    eprintln!(
        "{dropped} of {} data packets dropped, {} lost",
        report.packets, flow.lost
    );
    assert!(dropped >= 10, "{dropped} dropped of {}", report.packets);
    // A drop among the last three packets cannot be detected (NDUPACK = 3).
    assert!(
        flow.lost + 1 >= dropped && flow.lost <= dropped,
        "lost {} of {dropped}",
        flow.lost
    );
    assert_eq!(flow.packets + dropped, report.packets);
    assert!(flow.loss_events >= 1);
    assert!(flow.final_p > 0.0);
    assert!(report.final_state.p > 0.0, "p reached the sender");
    assert!(!report.final_state.slow_start);
    assert!(report.mean_p > 0.0);
    let totals = report.receiver.expect("acknowledged");
    assert_eq!(totals.lost, flow.lost);
    assert!((totals.loss_ratio - dropped as f64 / report.packets as f64).abs() < 1e-9);
}

/// TFRC-SP (RFC 4828 §3: "TFRC-SP enforces a Min Interval between packets of 10 ms") over the
/// 20 ms path: 200-byte segments for 3 s leave at most 100 packets a second, where standard
/// TFRC with the same packets sends several times more; the receiver runs the flow (it learns
/// TFRC-SP from the flow options) and acknowledges it.
#[test]
fn a_tfrc_sp_sender_keeps_its_min_interval_end_to_end() {
    let run = |small_packets: bool| {
        let config = Config {
            packet_size: 200,
            small_packets: small_packets.then(tfrc_proto::SmallPackets::default),
            ..Config::default()
        };
        let (report, received, _) = run_through_lossy_relay(config, 1_000_000, None);
        assert!(report.receiver.is_some(), "acknowledged");
        if small_packets {
            // 100 packets a second cross loopback whole.
            assert_eq!(received.streams[0].packets, report.packets);
        }
        report.packets
    };
    let small = run(true);
    let standard = run(false);
    eprintln!("3 s of 200-byte packets: TFRC-SP {small}, standard TFRC {standard}");
    // 100 a second (and the first).
    assert!(small <= 301, "TFRC-SP sent {small} packets in 3 s");
    assert!(standard > 2 * small, "standard TFRC sent {standard}");
}

/// The lock-out: 64 data packets with distinct session ids filled `tfrc recv`'s flow
/// table, and the real sender got no feedback. Now a flow opens only with a cookie the receiver
/// gave to the packet's source address: 200 strangers (no cookie, a guessed one, or a cookie
/// fetched from another address, as a spoofer would replay) leave no state, and the real
/// sender runs as if they were not there.
#[test]
fn strangers_cannot_take_a_receivers_flow_slots() {
    let (address, stop, receiver_thread) = spawn_receiver(ReceiverOptions {
        report_interval: None,
        max_flows: 64,
        ..ReceiverOptions::new(loopback())
    });
    let stranger = UdpSocket::bind(loopback()).unwrap();
    let elsewhere = UdpSocket::bind(loopback()).unwrap();
    let mut strangers = 0;
    for session in 1..=200u32 {
        let nonce = session << 16;
        let cookie = match session % 3 {
            0 => None,
            1 => Some(u64::from(session) * 0x9e37_79b9),
            // A genuine cookie, but for another source address.
            _ => Some(cookie_for(&elsewhere, address, session, nonce)),
        };
        let packet = data_packet(session, nonce, 0, Some(cookie.unwrap_or(0)));
        stranger.send_to(&packet, address).unwrap();
        strangers += 1;
    }

    let mut options = SenderOptions::new(address);
    options.bind = Some(loopback());
    options.duration = Duration::from_secs(2);
    options.report_interval = None;
    options.max_rate = Some(1_000_000.0 / 8.0);
    let sender = UdpSender::new(options).unwrap();
    let report = sender.run(&AtomicBool::new(false), &mut |_| {}).unwrap();
    stop.store(true, Ordering::Relaxed);
    let receiver_report = receiver_thread.join().unwrap();

    let counters = receiver_report.counters;
    println!(
        "{counters:?}; sender: {} packets, {} feedbacks",
        report.packets, report.stats.feedbacks
    );
    assert_eq!(counters.unverified, strangers, "{counters:?}");
    assert_eq!(counters.flows_opened, 1, "{counters:?}");
    assert_eq!(counters.rejected_flows, 0, "{counters:?}");
    assert!(report.stats.feedbacks > 50, "{:?}", report.stats);
    let totals = report.receiver.expect("the end was acknowledged");
    assert_eq!(totals.packets, report.packets);
}

/// Nobody listening: the hellos go unanswered and `run` fails after the connect timeout,
/// naming the address, before any data is sent.
#[test]
fn a_sender_without_a_receiver_fails_after_its_connect_timeout() {
    let silent = UdpSocket::bind(loopback()).unwrap();
    let mut options = SenderOptions::new(silent.local_addr().unwrap());
    options.bind = Some(loopback());
    options.connect_timeout = Duration::from_millis(700);
    options.report_interval = None;
    let sender = UdpSender::new(options).unwrap();
    let started = std::time::Instant::now();
    let error = sender
        .run(&AtomicBool::new(false), &mut |_| {})
        .unwrap_err();
    let waited = started.elapsed();
    let message = error.to_string();
    assert!(message.contains("no TFRC receiver answered"), "{message}");
    assert!(
        message.contains(&silent.local_addr().unwrap().to_string()),
        "{message}"
    );
    assert!(
        (Duration::from_millis(650)..Duration::from_secs(3)).contains(&waited),
        "{waited:?}"
    );
    // Hellos at 0, 200 and 600 ms (the last may be late on a loaded machine); no data packet.
    silent.set_nonblocking(true).unwrap();
    let mut buffer = [0u8; 2048];
    let mut hellos = 0;
    while let Ok((length, _)) = silent.recv_from(&mut buffer) {
        assert!(Hello::parse(&buffer[..length]).is_ok(), "only hellos");
        hellos += 1;
    }
    assert!((2..=3).contains(&hellos), "{hellos} hellos");
}

/// An END from the flow's own sender (right address and token) that claims 2^64 − 1 packets
/// sent: the flow closes and is acknowledged, but the impossible totals are not used (the
/// issue saw them taken at face value).
#[test]
fn an_end_with_impossible_totals_closes_the_flow_without_them() {
    let (address, stop, thread) = spawn_receiver(ReceiverOptions {
        report_interval: None,
        ..ReceiverOptions::new(loopback())
    });
    let client = UdpSocket::bind(loopback()).unwrap();
    let (session, nonce) = (0x00c0_ffee, 0x7777_0000);
    let cookie = cookie_for(&client, address, session, nonce);
    for sequence in 0..10 {
        client
            .send_to(
                &data_packet(session, nonce, sequence, Some(cookie)),
                address,
            )
            .unwrap();
    }
    let mut end = [0u8; END_LEN];
    let length = EndOfSession {
        session_id: session,
        nonce,
        packets_sent: u64::MAX,
        bytes_sent: u64::MAX,
        duration_nanos: 1_000_000_000,
    }
    .emit(&mut end);
    client.send_to(&end[..length], address).unwrap();
    // The acknowledgement comes back (after any feedback).
    let mut buffer = [0u8; 256];
    let acknowledgement = loop {
        let (length, _) = client.recv_from(&mut buffer).expect("an END-ACK");
        if let Ok(acknowledgement) = EndAcknowledgement::parse(&buffer[..length]) {
            break acknowledgement;
        }
    };
    assert_eq!(acknowledgement.packets_received, 10);
    stop.store(true, Ordering::Relaxed);
    let report = thread.join().unwrap();
    assert_eq!(report.counters.implausible_ends, 1, "{:?}", report.counters);
    assert_eq!(report.counters.flows_completed, 1);
    let flow = &report.streams[0];
    assert_eq!(flow.reason, FlowEnd::Completed);
    assert_eq!(flow.sender_packets, None);
    assert_eq!(flow.loss_ratio, 0.0);
}
