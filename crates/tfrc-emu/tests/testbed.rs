//! Testbed mode: namespaces, TUN devices and the emulator, with kernel TCP and TFRC flows.
//!
//! Needs root, /dev/net/tun and iproute2. Elsewhere each test prints why it is skipped, except
//! under `CI=true`, where they must run.

use core::time::Duration;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Instant;

use tfrc_emu::element_syntax::{LinkFlags, LinkSpec};
use tfrc_emu::testbed::{self, in_namespace, list_namespaces, Testbed, TestbedConfig, Topology};
use tfrc_proto::Config;
use tfrc_udp::receiver::{ReceiverOptions, UdpReceiver};
use tfrc_udp::sender::{SenderOptions, UdpSender};

/// One testbed at a time: they measure throughput on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn available(test: &str) -> bool {
    let missing =
        testbed::unavailable_reason().map(|reason| format!("the testbed cannot run: {reason}"));
    tfrc_test_support::can_run(test, missing)
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|value| value.to_string()).collect()
}

fn link(rate: &str, delay: &str, queue: &str, markers: &[&str]) -> LinkSpec {
    let rate = strings(&[rate]);
    let delay = strings(&[delay]);
    let queue = strings(&[queue]);
    let marker = strings(markers);
    LinkSpec::from_flags(&LinkFlags {
        rate: &rate,
        delay: &delay,
        queue: &queue,
        marker: &marker,
        ..LinkFlags::default()
    })
    .unwrap()
}

fn assert_gone(prefix: &str) {
    let left: Vec<String> = list_namespaces()
        .into_iter()
        .filter(|name| name.starts_with(&format!("{prefix}-")))
        .collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}

/// The check: a kernel TCP flow and a TFRC flow through the testbed both get
/// throughput, and together they fill at least 90 % of the bottleneck.
#[test]
fn kernel_tcp_and_tfrc_share_the_bottleneck() {
    if !available("kernel_tcp_and_tfrc_share_the_bottleneck") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
    let topology = Topology::dumbbell(2, 1, &link("4Mbps", "10ms", "droptail:50", &[]));
    let directory = tempfile::tempdir().unwrap();
    let links_csv = directory.path().join("links.csv");
    let mut config = TestbedConfig::new(topology);
    config.links_csv = Some((links_csv.clone(), Duration::from_secs(1)));
    let testbed = Testbed::up(config).unwrap();
    let prefix = testbed.prefix().to_string();
    let receiver_host = testbed.host("r1").unwrap().clone();
    let tcp_host = testbed.host("s1").unwrap().clone();
    let tfrc_host = testbed.host("s2").unwrap().clone();
    let run = Duration::from_secs(8);

    // Receivers in r1.
    let tcp_listen: SocketAddr = format!("{}:5001", receiver_host.address).parse().unwrap();
    let tfrc_listen: SocketAddr = format!("{}:5002", receiver_host.address).parse().unwrap();
    let tcp_receiver = in_namespace(&receiver_host.namespace, move || {
        let listener = TcpListener::bind(tcp_listen).unwrap();
        let (mut stream, _) = listener.accept().unwrap();
        let start = Instant::now();
        let mut total = 0u64;
        let mut buffer = vec![0u8; 65_536];
        // Count bytes from 2 s to the end of the run.
        let mut counted = 0u64;
        loop {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(length) => {
                    total += length as u64;
                    if start.elapsed() >= Duration::from_secs(2) {
                        counted += length as u64;
                    }
                }
            }
        }
        (total, counted, start.elapsed())
    })
    .unwrap();
    let tfrc_receiver = in_namespace(&receiver_host.namespace, move || {
        let receiver = UdpReceiver::bind(ReceiverOptions {
            report_interval: None,
            once: true,
            ..ReceiverOptions::new(tfrc_listen)
        })
        .unwrap();
        receiver.run(&AtomicBool::new(false), &mut |_| {}).unwrap()
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(200));

    let tcp_sender = in_namespace(&tcp_host.namespace, move || {
        let mut stream = TcpStream::connect(tcp_listen).unwrap();
        let chunk = vec![0x5a; 65_536];
        let start = Instant::now();
        while start.elapsed() < run {
            if stream.write_all(&chunk).is_err() {
                break;
            }
        }
        drop(stream);
    })
    .unwrap();
    let tfrc_sender = in_namespace(&tfrc_host.namespace, move || {
        let mut options = SenderOptions::new(tfrc_listen);
        options.duration = run;
        options.report_interval = None;
        options.config = Config {
            packet_size: 1000,
            ..Config::default()
        };
        UdpSender::new(options)
            .unwrap()
            .run(&AtomicBool::new(false), &mut |_| {})
            .unwrap()
    })
    .unwrap();
    let tfrc_report = tfrc_sender.join().unwrap();
    tcp_sender.join().unwrap();
    let tfrc_received = tfrc_receiver.join().unwrap();
    let (tcp_total, _, _) = tcp_receiver.join().unwrap();
    let report = testbed.shutdown().unwrap();
    assert_gone(&prefix);

    let tfrc_bytes = tfrc_received.streams[0].bytes;
    let seconds = run.as_secs_f64();
    let tcp_rate = tcp_total as f64 * 8.0 / seconds;
    let tfrc_rate = tfrc_bytes as f64 * 8.0 / seconds;
    // Bottleneck utilization from links.csv (both flows' IP packets), seconds 2 to 8 of the
    // emulator's clock: both flows run then.
    let text = std::fs::read_to_string(&links_csv).unwrap();
    let utilizations: Vec<f64> = text
        .lines()
        .skip(1)
        .filter(|row| row.contains(",left,right,"))
        .skip(2)
        .take(6)
        .map(|row| row.split(',').nth(9).unwrap().parse().unwrap())
        .collect();
    assert_eq!(utilizations.len(), 6, "{text}");
    let link_rate = 4e6 * utilizations.iter().sum::<f64>() / 6.0;
    assert!(
        report.links[0].departure_bytes as f64 * 8.0 <= 4e6 * report.seconds * 1.001,
        "the emulated link sent faster than its rate"
    );
    eprintln!(
        "TCP {tcp_rate:.0} bit/s, TFRC {tfrc_rate:.0} bit/s (sent {} packets), link {link_rate:.0} bit/s",
        tfrc_report.packets
    );
    assert!(tcp_rate > 0.1 * 4e6, "TCP got {tcp_rate:.0} bit/s");
    assert!(tfrc_rate > 0.1 * 4e6, "TFRC got {tfrc_rate:.0} bit/s");
    assert!(
        link_rate >= 0.9 * 4e6,
        "the link carried {link_rate:.0} bit/s of 4 Mb/s:\n{text}"
    );
}

/// A paced UDP source of `payload`-byte datagrams at `rate_bps` (wire: payload + 28).
fn cbr(target: SocketAddr, rate_bps: f64, payload: usize, run: Duration) -> u64 {
    let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
    socket.connect(target).unwrap();
    let interval = Duration::from_secs_f64((payload + 28) as f64 * 8.0 / rate_bps);
    let start = Instant::now();
    let data = vec![0u8; payload];
    let mut sent = 0u64;
    while start.elapsed() < run {
        let due = start + interval.mul_f64(sent as f64);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        if socket.send(&data).is_ok() {
            sent += 1;
        }
    }
    sent
}

fn count_datagrams(socket: UdpSocket) -> u64 {
    socket
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut buffer = [0u8; 2048];
    let mut count = 0;
    while socket.recv(&mut buffer).is_ok() {
        count += 1;
    }
    count
}

/// The check: with a token bucket at the edge and RIO in the core, a flow sending at its
/// target rate (in profile) keeps it while out-of-profile traffic takes the drops.
#[test]
fn token_bucket_and_rio_protect_the_in_profile_flow() {
    if !available("token_bucket_and_rio_protect_the_in_profile_flow") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
    // Flow 5301 is marked with a bucket at its target (400 kb/s); 5302 is not marked. RIO has
    // the gTFRC testbed's thresholds, with a faster average (w = 0.02, so that it tracks the
    // queue within this short run) and room above max_out (limit 100), so that the queue is
    // governed by RED drops of out-of-profile packets rather than by overflow.
    let topology = Topology::dumbbell(
        2,
        1,
        &link(
            "1Mbps",
            "10ms",
            "rio:limit=100,weight=0.02",
            &["forward=token-bucket:400kbps:5000:ports=5301"],
        ),
    );
    let testbed = Testbed::up(TestbedConfig::new(topology)).unwrap();
    let prefix = testbed.prefix().to_string();
    let receiver = testbed.host("r1").unwrap().clone();
    let run = Duration::from_secs(6);
    let in_target: SocketAddr = format!("{}:5301", receiver.address).parse().unwrap();
    let out_target: SocketAddr = format!("{}:5302", receiver.address).parse().unwrap();
    let in_sink = in_namespace(&receiver.namespace, move || {
        count_datagrams(UdpSocket::bind(in_target).unwrap())
    })
    .unwrap();
    let out_sink = in_namespace(&receiver.namespace, move || {
        count_datagrams(UdpSocket::bind(out_target).unwrap())
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let in_source = in_namespace(&testbed.host("s1").unwrap().namespace, move || {
        cbr(in_target, 390_000.0, 972, run)
    })
    .unwrap();
    let out_source = in_namespace(&testbed.host("s2").unwrap().namespace, move || {
        cbr(out_target, 1_200_000.0, 972, run)
    })
    .unwrap();
    let in_sent = in_source.join().unwrap();
    let out_sent = out_source.join().unwrap();
    let in_received = in_sink.join().unwrap();
    let out_received = out_sink.join().unwrap();
    let report = testbed.shutdown().unwrap();
    assert_gone(&prefix);

    let in_loss = 1.0 - in_received as f64 / in_sent as f64;
    let out_loss = 1.0 - out_received as f64 / out_sent as f64;
    eprintln!(
        "in-profile flow: {in_received}/{in_sent} (loss {in_loss:.3}); other: {out_received}/{out_sent} (loss {out_loss:.3}); marked in {} out {}",
        report.links[0].marked_in, report.links[0].marked_out
    );
    assert!(
        report.links[0].marked_in > in_sent * 9 / 10,
        "the marker coloured the flow in profile"
    );
    assert!(in_loss < 0.02, "the in-profile flow lost {in_loss:.3}");
    assert!(
        out_loss > 0.3,
        "out-of-profile traffic lost only {out_loss:.3}"
    );
}

/// Namespaces are removed by `shutdown`, and by the watchdog when the process that made them is
/// killed with SIGKILL (the test re-runs itself as that process).
#[test]
fn namespaces_are_removed_after_shutdown_and_after_a_crash() {
    if std::env::var_os("TFRC_EMU_CRASH_HELPER").is_some() {
        // The child: make a testbed, say its prefix, wait to be killed.
        let testbed = Testbed::up(TestbedConfig::new(Topology::dumbbell(
            1,
            1,
            &LinkSpec::default(),
        )))
        .unwrap();
        println!("PREFIX={}", testbed.prefix());
        std::io::stdout().flush().unwrap();
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    if !available("namespaces_are_removed_after_shutdown_and_after_a_crash") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
    let testbed = Testbed::up(TestbedConfig::new(Topology::dumbbell(
        1,
        2,
        &LinkSpec::default(),
    )))
    .unwrap();
    let prefix = testbed.prefix().to_string();
    let names = list_namespaces();
    for host in ["s1", "r1", "r2"] {
        assert!(names.contains(&format!("{prefix}-{host}")), "{names:?}");
    }
    // Hosts reach each other through the emulator (ping may be missing: use UDP).
    let r1 = testbed.host("r1").unwrap().clone();
    let target: SocketAddr = format!("{}:7000", r1.address).parse().unwrap();
    let sink = in_namespace(&r1.namespace, move || {
        let socket = UdpSocket::bind(target).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let mut buffer = [0u8; 16];
        socket
            .recv(&mut buffer)
            .map(|length| buffer[..length].to_vec())
            .ok()
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    in_namespace(&testbed.host("s1").unwrap().namespace, move || {
        let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
        socket.send_to(b"hello", target).unwrap();
    })
    .unwrap()
    .join()
    .unwrap();
    assert_eq!(sink.join().unwrap().as_deref(), Some(&b"hello"[..]));
    testbed.shutdown().unwrap();
    assert_gone(&prefix);

    // A crash: the child is killed with SIGKILL, the watchdog cleans up.
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "namespaces_are_removed_after_shutdown_and_after_a_crash",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TFRC_EMU_CRASH_HELPER", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The harness prints `test … ... ` before the child's own line: look for the marker
    // anywhere in a line, on a reader thread so that a silent child cannot block the test.
    let stdout = child.stdout.take().unwrap();
    let (found_sender, found) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok) {
            if let Some(position) = line.find("PREFIX=") {
                let _ = found_sender.send(line[position + 7..].trim().to_string());
            }
        }
    });
    let prefix = found
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_default();
    if prefix.is_empty() {
        let _ = child.kill();
    }
    assert!(!prefix.is_empty(), "the child made no testbed");
    assert!(list_namespaces().contains(&format!("{prefix}-s1")));
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline
        && list_namespaces()
            .iter()
            .any(|name| name.starts_with(&format!("{prefix}-")))
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_gone(&prefix);
}

/// A file of `tests/data`.
fn data_file(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Runs `tfrc testbed run` on a scenario of `tests/data`; returns the temporary directory
/// (removed when dropped) and the output directory in it.
fn run_data_scenario(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let directory = tempfile::tempdir().unwrap();
    let out = directory.path().join("run");
    let args = tfrc_emu::testbed_run::RunOptions {
        scenario: data_file(name),
        out: out.clone(),
        set: Vec::new(),
        variant: None,
        tcp_congestion: "reno".into(),
        realtime: false,
    };
    tfrc_emu::testbed_run::run(&args).unwrap();
    (directory, out)
}

/// `tfrc testbed run`: a scenario's flows run for real and the simulator's four files come out,
/// with the schema of docs/output-format.md and numbers that add up.
#[test]
fn scenario_run_writes_the_simulator_outputs() {
    if !available("scenario_run_writes_the_simulator_outputs") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
    let (_directory, out) = run_data_scenario("short-af.toml");
    let flows = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    let mut lines = flows.lines();
    assert_eq!(
        lines.next(),
        Some(tfrc_output::header(tfrc_output::RowFile::Flows))
    );
    // 8 intervals × 3 flows.
    assert_eq!(lines.clone().count(), 24, "{flows}");
    // The CBR flow sends only during [4 s, 6 s): 200 kb/s of 1000-byte packets = 25 packets/s.
    let cbr_sent: Vec<u64> = lines
        .clone()
        .filter(|row| row.split(',').nth(1) == Some("u"))
        .map(|row| row.split(',').nth(5).unwrap().parse().unwrap())
        .collect();
    assert_eq!(cbr_sent[..3], [0, 0, 0], "{flows}");
    assert!(
        (45..=55).contains(&(cbr_sent[4] + cbr_sent[5])),
        "{cbr_sent:?}"
    );
    assert_eq!(cbr_sent[7], 0);
    let links = std::fs::read_to_string(out.join("links.csv")).unwrap();
    assert!(links.starts_with(tfrc_output::header(tfrc_output::RowFile::Links)));
    assert!(links.contains(",edge,dst,"));
    let state = std::fs::read_to_string(out.join("state.csv")).unwrap();
    assert!(
        state.starts_with(tfrc_output::header(tfrc_output::RowFile::State)),
        "{state}"
    );
    assert!(
        state.lines().filter(|row| row.contains(",a,tfrc,")).count() >= 5,
        "{state}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["schema_version"], tfrc_output::SCHEMA_VERSION);
    // Goodput is what the receiving applications counted: some, and never more than the
    // bytes of the IP packets delivered to them.
    for flow in summary["flows"].as_array().unwrap() {
        let goodput = flow["goodput_bytes"].as_u64().unwrap();
        let received = flow["recv_bytes"].as_u64().unwrap();
        assert!(goodput > 0 && goodput < received, "{flow}");
    }
    assert_eq!(summary["bottleneck"]["from"], "edge");
    assert_eq!(summary["bottleneck"]["to"], "dst");
    let utilization = summary["bottleneck"]["utilization"].as_f64().unwrap();
    assert!(
        utilization > 0.7 && utilization <= 1.01,
        "utilization {utilization}"
    );
    let goodput = |name: &str| {
        summary["flows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|flow| flow["name"] == name)
            .unwrap()["goodput_bps"]
            .as_f64()
            .unwrap()
    };
    // The marked gTFRC flow holds most of its 600 kb/s target; both TFRC flows get throughput.
    assert!(goodput("a") > 450_000.0, "a got {}", goodput("a"));
    assert!(goodput("b") > 50_000.0, "b got {}", goodput("b"));
    assert!(std::fs::read_to_string(out.join("scenario.toml"))
        .unwrap()
        .contains("short-af"));
}

/// A kernel TCP flow's summary carries the kernel's own counters (`TCP_INFO` at the sender's
/// end): the segments it retransmitted and, on Linux 6.7 and later, its retransmission
/// timeouts, as the simulators report theirs.
#[test]
fn kernel_tcp_flows_report_the_kernels_retransmissions() {
    if !available("kernel_tcp_flows_report_the_kernels_retransmissions") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
    let (_directory, out) = run_data_scenario("kernel-cubic.toml");
    let summary: tfrc_output::Summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let flow = &summary.flows[0];
    let retransmissions = flow
        .retransmissions
        .expect("the kernel's tcpi_total_retrans");
    assert!(
        retransmissions > 0,
        "slow start overflowing a 10-packet buffer retransmits: {flow:?}"
    );
    let sent = flow.sent_packets;
    assert!(retransmissions < sent, "{retransmissions} of {sent}");
    match flow.timeouts {
        Some(timeouts) => assert!(timeouts < 100, "{timeouts} timeouts in 4 s"),
        None => eprintln!("this kernel predates tcpi_total_rto (Linux 6.7): no timeout count"),
    }
}

/// The testbed honours `profile = "ns2"`: the flow runs ns-2.35's TFRC at both ends (the
/// receiver told by the flow options of each packet) and fills a 2 Mb/s bottleneck as the
/// simulator's ns-2 profile does on the same scenario.
#[test]
fn an_ns2_profile_flow_runs_on_the_testbed() {
    if !available("an_ns2_profile_flow_runs_on_the_testbed") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
    let (_directory, out) = run_data_scenario("ns2-profile.toml");
    let scenario_path = data_file("ns2-profile.toml");
    let summary: tfrc_output::Summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let testbed = summary.flows[0].goodput_bps.unwrap();
    let scenario = tfrc_scenario::Scenario::from_path(&scenario_path).unwrap();
    let simulated = tfrc_sim::simulation::Simulation::run(&scenario.expand_counts(), None)
        .unwrap()
        .flows[0]
        .goodput_bps
        .unwrap();
    eprintln!("ns-2 profile goodput: testbed {testbed:.0} b/s, simulator {simulated:.0} b/s");
    assert!(testbed > 1_000_000.0, "testbed goodput {testbed} b/s");
    assert!(
        (testbed / simulated - 1.0).abs() < 0.25,
        "testbed {testbed} b/s against the simulator's {simulated} b/s"
    );
    // The sender's state rows report ns-2's fixed four feedbacks per RTT.
    let state = std::fs::read_to_string(out.join("state.csv")).unwrap();
    let mut rows = state.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let column = header
        .iter()
        .position(|&name| name == "feedbacks_per_rtt")
        .unwrap();
    let counts: Vec<&str> = rows
        .map(|row| row.split(',').nth(column).unwrap())
        .collect();
    assert!(
        counts.len() >= 5 && counts.iter().all(|&count| count == "4"),
        "{counts:?}"
    );
}
