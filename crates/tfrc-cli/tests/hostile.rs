//! Attacks and faults against the real binaries on loopback (issue "hostile networks and
//! faults"): a receiver that lies, a replayer, strangers filling a receiver's table, input that
//! asks for unbounded output. Each run is bounded in time (the processes are killed past a
//! generous deadline) and asserts that the attack does no harm, with the figures printed.

use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tfrc_proto::wire::{self, DataRepr, FeedbackRepr, Packet, PacketKind};
use tfrc_test_support::wait_bounded;
use tfrc_udp::control::{FlowOptions, Hello, COOKIE_LEN};

fn tfrc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tfrc"))
}

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A fake receiver on loopback: answers hellos with a cookie and every data packet with
/// feedback that claims X_recv = 10 Gb/s and p = 0, with the proof `prove` gives (from the
/// packet's nonce). Runs until `stop`; returns when each data packet arrived.
fn liar(
    socket: UdpSocket,
    stop: Arc<AtomicBool>,
    prove: fn(u32) -> (u16, u32),
) -> std::thread::JoinHandle<Vec<Instant>> {
    std::thread::spawn(move || {
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let mut buffer = [0u8; 2048];
        let mut arrivals = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let Ok((length, from)) = socket.recv_from(&mut buffer) else {
                continue;
            };
            let bytes = &buffer[..length];
            if let Ok(hello) = Hello::parse(bytes) {
                let mut answer = [0u8; COOKIE_LEN];
                let length = hello.answer(1).emit(&mut answer);
                let _ = socket.send_to(&answer[..length], from);
                continue;
            }
            let Ok(packet) = Packet::new_checked(bytes) else {
                continue;
            };
            if packet.kind() != PacketKind::Data {
                continue;
            }
            let Ok(data) = DataRepr::parse(&packet) else {
                continue;
            };
            arrivals.push(Instant::now());
            let (proof_flags, echo_nonce) = prove(data.nonce);
            let feedback = FeedbackRepr {
                session_id: data.session_id,
                echo_sequence: data.sequence,
                echo_timestamp: data.timestamp,
                elapsed_micros: 0,
                x_recv: 1_250_000_000,
                loss_event_rate_raw: 0,
                echo_nonce,
                proof_flags,
                // No loss since packet 0, proven by this packet's mark alone: true of the
                // first packet only.
                intervals: {
                    let mut intervals = wire::LossIntervals::default();
                    intervals.entries[0] = wire::LossInterval {
                        lossy: 0,
                        data: data.sequence.wrapping_add(1),
                        sum: data.nonce as u16,
                        flags: 0,
                    };
                    intervals
                },
            };
            let mut out = [0u8; wire::MAX_FEEDBACK_LEN];
            feedback.emit(&mut out).expect("a feedback fits");
            let _ = socket.send_to(&out[..feedback.buffer_len()], from);
        }
        arrivals
    })
}

/// RFC 5348 §9's lying receiver against `tfrc send`: X_recv = 10 Gb/s, p = 0, echoing
/// sequence, timestamp and token right. With no receipt proof every feedback is refused: the
/// sender stays at its initial rate of about one packet per second (halved by each no-feedback
/// expiry) and exits 1 naming the refusals. Proving only the packet it echoes, its first
/// feedback is taken (the first proof of an honest receiver is one packet too: RFC 5348 §4.2
/// then gives W_init/R, with its X_recv capped) and every later one is a proven lie (its loss
/// intervals claim no loss since packet 0 with a sum that proves only one packet): refused, and
/// the rate halves at once, then falls to one packet per 64 s; after 2 s the liar gets no more
/// than a receiver gone silent after its first report would. Before the receipt proof, the
/// same liar behind a 1 Mb/s link drove `tfrc send` to 1.48 Gb/s.
#[test]
fn a_lying_receiver_does_not_raise_tfrc_sends_rate() {
    let no_proof: fn(u32) -> (u16, u32) = |nonce| (0, nonce);
    // A run of one: the echoed packet's own mark (the nonce's lower half) is its proof's sum.
    let one_packet: fn(u32) -> (u16, u32) = |nonce| (1, nonce);
    for (name, prove) in [("no proof", no_proof), ("one-packet proof", one_packet)] {
        let socket = UdpSocket::bind(loopback()).unwrap();
        let address = socket.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let fake = liar(socket, Arc::clone(&stop), prove);
        let child = tfrc()
            .args(["send", "--to", &address.to_string(), "-t", "4", "-J"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let output = wait_bounded(child, Duration::from_secs(30));
        stop.store(true, Ordering::Relaxed);
        let arrivals = fake.join().unwrap();
        let received = arrivals.len();
        let late = arrivals
            .iter()
            .filter(|at| **at > arrivals[0] + Duration::from_secs(2))
            .count();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let document: Value = serde_json::from_slice(&output.stdout).expect("the JSON report");
        let counters = &document["end"]["counters"];
        println!(
            "{name}: the liar got {received} data packets in 4 s, {late} after the first 2 s; counters {counters}; {}",
            stderr.trim()
        );
        let refused = ["unproven", "unconfirmed", "false_intervals"]
            .iter()
            .map(|name| counters[*name].as_u64().unwrap())
            .sum::<u64>();
        assert!(refused + 1 >= received as u64, "{counters}");
        if name == "no proof" {
            assert_eq!(output.status.code(), Some(1), "{stderr}");
            assert!(stderr.contains("was accepted"), "{stderr}");
            assert!(
                document["error"]
                    .as_str()
                    .is_some_and(|error| error.contains("unproven")),
                "{document}"
            );
            assert_eq!(counters["feedbacks"], 0);
            // The initial rate (one packet per second) halved by expiries: a handful in 4 s.
            assert!(received <= 8, "{received} packets");
        } else {
            assert!(counters["feedbacks"].as_u64().unwrap() <= 1, "{counters}");
            // After 2 s the no-feedback timer has halved the rate a dozen times: 34 to 117
            // packets come in the last 2 s in our runs (of 30,000 to 56,000; the spread comes
            // from loopback's varying first RTT sample). A liar taken at its word would keep
            // W_init/R or more all along: with R up to 1 ms, at least 7,700 packets in 2 s.
            assert!(late <= 1_000, "{late} of {received} packets after 2 s");
        }
    }
}

/// Starts `tfrc recv --json --once` with `extra` flags; returns it and its address.
fn start_receiver(extra: &[&str]) -> (Child, SocketAddr) {
    let mut command = tfrc();
    command
        .args(["recv", "--listen", "127.0.0.1:0", "--json", "--once"])
        .args(extra);
    let (child, address) = tfrc_test_support::spawn_listening(command);
    (child, address.parse().expect("an address"))
}

/// 200 data packets with distinct session ids and forged cookies used to be 64 too many:
/// `tfrc recv`'s table filled and the real sender got no feedback. Now none of them opens a
/// flow, and the real `tfrc send` completes.
#[test]
fn strangers_do_not_lock_tfrc_recv_out() {
    let (receiver, address) = start_receiver(&["--max-flows", "8"]);
    let stranger = UdpSocket::bind(loopback()).unwrap();
    for session in 1..=200u32 {
        let repr = DataRepr {
            session_id: session,
            sequence: 0,
            timestamp: 1,
            rtt_micros: 0,
            veno_backlog_millipackets: 0,
            nonce: session << 16,
        };
        let mut packet = vec![0u8; 200];
        repr.emit(&mut packet).unwrap();
        FlowOptions {
            cookie: u64::from(session),
            ..FlowOptions::default()
        }
        .emit(&mut packet[wire::DATA_HEADER_LEN..])
        .unwrap();
        stranger.send_to(&packet, address).unwrap();
    }
    let sender = tfrc()
        .args(["send", "--to", &address.to_string(), "-t", "2", "-b", "2M"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sent = wait_bounded(sender, Duration::from_secs(30));
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    let received = wait_bounded(receiver, Duration::from_secs(30));
    let document: Value = serde_json::from_slice(&received.stdout).expect("the JSON report");
    let counters = &document["end"]["counters"];
    println!("receiver counters {counters}");
    assert_eq!(counters["unverified"], 200, "{counters}");
    assert_eq!(counters["flows_opened"], 1, "{counters}");
    assert_eq!(counters["rejected_flows"], 0, "{counters}");
    assert_eq!(counters["flows_completed"], 1, "{counters}");
}

/// The replay against the binaries: a relay between `tfrc send` and `tfrc recv` that,
/// after 1.5 s, stops passing data to the receiver and sends the sender a copy of the latest
/// feedback every 20 ms instead. Every copy is refused (`replayed`), so the no-feedback timer
/// fires and halves the rate as if the receiver had gone (before: 328 copies accepted, the
/// timer never fired, and each copy gave a new, growing RTT sample).
#[test]
fn replayed_feedback_does_not_keep_tfrc_send_going() {
    let (receiver, receiver_address) = start_receiver(&[]);
    let relay = UdpSocket::bind(loopback()).unwrap();
    relay
        .set_read_timeout(Some(Duration::from_millis(5)))
        .unwrap();
    let relay_address = relay.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let replays = Arc::new(AtomicU64::new(0));
    let relay_thread = {
        let (stop, replays) = (Arc::clone(&stop), Arc::clone(&replays));
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut sender: Option<SocketAddr> = None;
            let mut latest_feedback: Option<Vec<u8>> = None;
            let mut next_replay = Instant::now();
            let mut buffer = [0u8; 65_536];
            while !stop.load(Ordering::Relaxed) {
                let attacking = started.elapsed() > Duration::from_millis(1500);
                if let Ok((length, from)) = relay.recv_from(&mut buffer) {
                    let bytes = &buffer[..length];
                    if from == receiver_address {
                        if let Some(to) = sender {
                            if !attacking {
                                let is_feedback = Packet::new_checked(bytes)
                                    .is_ok_and(|p| p.kind() == PacketKind::Feedback);
                                if is_feedback {
                                    latest_feedback = Some(bytes.to_vec());
                                }
                                let _ = relay.send_to(bytes, to);
                            }
                        }
                    } else {
                        sender = Some(from);
                        if !attacking {
                            let _ = relay.send_to(bytes, receiver_address);
                        }
                    }
                }
                if attacking && Instant::now() >= next_replay {
                    if let (Some(to), Some(copy)) = (sender, &latest_feedback) {
                        let _ = relay.send_to(copy, to);
                        replays.fetch_add(1, Ordering::Relaxed);
                    }
                    next_replay = Instant::now() + Duration::from_millis(20);
                }
            }
        })
    };
    let child = tfrc()
        .args(["send", "--to", &relay_address.to_string(), "-t", "5", "-J"])
        .args(["-b", "4M", "--connect-timeout", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = wait_bounded(child, Duration::from_secs(40));
    stop.store(true, Ordering::Relaxed);
    relay_thread.join().unwrap();
    let mut receiver = receiver;
    let _ = receiver.kill();
    let _ = receiver.wait();
    let document: Value = serde_json::from_slice(&output.stdout).expect("the JSON report");
    let counters = &document["end"]["counters"];
    let replays = replays.load(Ordering::Relaxed);
    println!("{replays} copies sent; sender counters {counters}");
    assert!(replays >= 50, "{replays}");
    // A few copies may still be on their way at the end; every one that arrived was refused.
    let refused =
        counters["replayed"].as_u64().unwrap() + counters["invalid_echo"].as_u64().unwrap();
    assert!(
        refused + 10 >= replays,
        "{refused} of {replays} refused: {counters}"
    );
    assert!(
        counters["no_feedback_expiries"].as_u64().unwrap() >= 2,
        "{counters}"
    );
}

/// Output that would fill the disk is refused before the run: `output.interval = "1ns"` over
/// 10 s asked for 10^10 rows per flow; a queue of 4·10^9 packets for terabytes of buffer.
#[test]
fn unbounded_output_and_queues_are_refused_naming_the_key() {
    let scratch = tfrc_test_support::Scratch::new();
    for (extra, key) in [
        ("[output]\ninterval = \"1ns\"\n", "output.interval"),
        ("", "link[0].queue.limit"),
    ] {
        let queue = if extra.is_empty() {
            "queue = { limit = 4000000000 }\n"
        } else {
            ""
        };
        let text = format!(
            "name = \"bounds\"\nduration = \"10s\"\n[[link]]\nbetween = [\"a\", \"b\"]\nrate = \"1Mbps\"\ndelay = \"10ms\"\n{queue}{extra}"
        );
        let path = scratch.write("bounds.toml", &text);
        let output = wait_bounded(
            tfrc()
                .args(["sim", path.to_str().unwrap(), "--out"])
                .arg(scratch.path().join("out"))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
            Duration::from_secs(30),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success());
        assert!(stderr.contains(key), "{stderr}");
        assert!(!scratch.path().join("out").join("flows.csv").exists());
    }
}

/// A flow the receiver refuses (its table is full: `--max-flows 1` with another flow running)
/// ends `tfrc send` with status 1 and the reason, not 0: it got a cookie but no feedback.
#[test]
fn a_refused_flow_exits_non_zero() {
    let mut command = tfrc();
    command.args([
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--json",
        "--max-flows",
        "1",
    ]);
    let (mut receiver, address) = tfrc_test_support::spawn_listening(command);
    let first = tfrc()
        .args(["send", "--to", &address, "-t", "4", "-b", "1M"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let refused = wait_bounded(
        tfrc()
            .args(["send", "--to", &address, "-t", "1"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        Duration::from_secs(30),
    );
    let first = wait_bounded(first, Duration::from_secs(30));
    let _ = receiver.kill();
    let _ = receiver.wait();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no feedback arrived"), "{stderr}");
    assert!(first.status.success(), "the first flow still ran");
}
