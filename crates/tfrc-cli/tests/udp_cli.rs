//! `tfrc send` and `tfrc recv` as a user runs them, over loopback.
//!
//! Every run is bounded: the processes are killed if they outlive a generous deadline, and the
//! assertions are loose enough for a loaded two-core machine while still meaning something
//! (data arrived, the end was acknowledged, files have the documented columns and rows).

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A scratch directory removed when dropped.
struct ScratchDirectory(std::path::PathBuf);

impl ScratchDirectory {
    fn new(name: &str) -> ScratchDirectory {
        let path = std::env::temp_dir().join(format!("tfrc-udp-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        ScratchDirectory(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDirectory {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tfrc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tfrc"))
}

/// Starts `tfrc recv … --json` on a free port and returns the child and its address (read from
/// the "Server listening on ADDR" line the receiver prints on stderr in JSON mode).
fn start_receiver(extra: &[&str]) -> (Child, String) {
    let mut command = tfrc();
    command
        .args(["recv", "--listen", "127.0.0.1:0", "--json", "--once"])
        .args(extra);
    tfrc_test_support::spawn_listening(command)
}

/// Waits for a child, killing it after `limit`.
fn finish(child: Child, limit: Duration) -> Output {
    tfrc_test_support::wait_bounded(child, limit)
}

fn json_of(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "status {:?}, stderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "not JSON ({error}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// Every object key of a JSON document, nested ones included.
fn collect_keys(value: &Value, names: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                names.push(key.clone());
                collect_keys(inner, names);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_keys(item, names)),
        _ => {}
    }
}

/// Header and rows of a CSV file.
fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    let rows: Vec<Vec<String>> = lines
        .map(|line| line.split(',').map(str::to_string).collect())
        .collect();
    for row in &rows {
        assert_eq!(row.len(), header.len(), "{row:?}");
    }
    (header, rows)
}

fn cell<'a>(header: &[String], row: &'a [String], name: &str) -> &'a str {
    let index = header
        .iter()
        .position(|column| column == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"));
    &row[index]
}

#[test]
fn a_tfrc_run_delivers_data_and_writes_json_and_csv() {
    let directory = ScratchDirectory::new("tfrc-run");
    let receiver_log = directory.path().join("recv.csv");
    let sender_log = directory.path().join("send.csv");
    let (receiver, address) = start_receiver(&[
        "--idle-timeout",
        "5s",
        "--log",
        receiver_log.to_str().unwrap(),
        "--log-interval",
        "100ms",
    ]);
    let sender = tfrc()
        .args(["send", "--to", &address, "--time", "3", "--json"])
        .args(["--max-rate", "20M", "--packet-size", "1200"])
        .args([
            "--log",
            sender_log.to_str().unwrap(),
            "--log-interval",
            "100ms",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sent = json_of(&finish(sender, Duration::from_secs(30)));
    let received = json_of(&finish(receiver, Duration::from_secs(30)));

    // One naming convention (docs/output-format.md, "Names and units"): bits/s is `_bps`,
    // times are seconds (`_s`) or, for timer and pacing errors, `_us`; iperf3's own keys are
    // spelt as iperf3 does. Every key of both documents and every CSV column keeps to it.
    let mut names = Vec::new();
    collect_keys(&sent, &mut names);
    collect_keys(&received, &mut names);
    for log in [&sender_log, &receiver_log] {
        names.extend(read_csv(log).0);
    }
    for name in &names {
        let iperf3 = ["bits_per_second", "jitter_ms"].contains(&name.as_str());
        assert!(
            iperf3 || !(name.contains("bits_per") || name.ends_with("_ms")),
            "{name} breaks the naming convention"
        );
    }

    // The sender's document: start / intervals / end.
    let session = sent["start"]["session_id"].as_str().unwrap().to_string();
    assert_eq!(session.len(), 8);
    assert_eq!(sent["start"]["protocol"], "tfrc");
    assert_eq!(sent["start"]["test_start"]["packet_size"], 1200);
    // t_gran is at least 1 ms unless --timer-granularity says otherwise (RFC 5348 §4.6; see
    // docs/udp-tools.md, "Pacing"), and packets leave in UDP GSO batches on this kernel.
    assert!(
        sent["start"]["timer"]["timer_granularity_us"]
            .as_f64()
            .unwrap()
            >= 1000.0
    );
    assert_eq!(sent["start"]["offload"]["send"], "gso");
    let intervals = sent["intervals"].as_array().unwrap();
    assert!(
        (2..=4).contains(&intervals.len()),
        "{} intervals",
        intervals.len()
    );
    assert_eq!(
        intervals[0]["streams"][0]["flow_id"],
        format!("{session}-sender")
    );
    let end = &sent["end"];
    assert_eq!(end["reason"], "time");
    let packets = end["sender"]["packets"].as_u64().unwrap();
    // 20 Mbit/s of 1200-byte packets for 3 s is 6250 packets; slow start and a loaded machine
    // may cut that, but not below a tenth.
    assert!(packets > 600, "{packets} packets sent");
    let bits_per_second = end["sender"]["bits_per_second"].as_f64().unwrap();
    assert!(
        bits_per_second < 25e6,
        "the 20 Mbit/s cap holds: {bits_per_second}"
    );
    let receiver_packets = end["receiver"]["packets"].as_u64().expect("acknowledged");
    assert!(
        receiver_packets > packets * 9 / 10,
        "{receiver_packets} of {packets}"
    );
    assert!(end["counters"]["feedbacks"].as_u64().unwrap() > 10);
    assert_eq!(end["counters"]["malformed"], 0);
    assert_eq!(end["counters"]["foreign"], 0);
    assert!(end["rtt"]["mean_s"].as_f64().unwrap() > 0.0);
    assert!(end["pacing"]["samples"].as_u64().unwrap() == packets);
    assert!(end["pacing"]["p50_us"].as_f64().is_some());
    // t_gran while running: the start's, or the largest lateness of a second, at most 10 ms.
    let start_t_gran = sent["start"]["timer"]["timer_granularity_us"]
        .as_f64()
        .unwrap();
    let largest_t_gran = end["timer_granularity_max_us"].as_f64().unwrap();
    assert!(
        largest_t_gran >= start_t_gran && largest_t_gran <= start_t_gran.max(10_000.0),
        "{largest_t_gran} against {start_t_gran}"
    );
    assert!(end["cpu_utilization_percent"]["host_total"]
        .as_f64()
        .is_some());

    // The receiver's document.
    assert_eq!(received["start"]["role"], "receiver");
    let streams = received["end"]["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 1);
    let flow = &streams[0];
    assert_eq!(flow["session_id"], session.as_str());
    assert_eq!(flow["reason"], "completed");
    assert_eq!(flow["packets"].as_u64().unwrap(), receiver_packets);
    assert_eq!(flow["sender_packets"].as_u64().unwrap(), packets);
    assert!(flow["goodput_bps"].as_f64().unwrap() > 1e6);
    assert!(flow["loss_ratio"].as_f64().unwrap() < 0.1);
    assert!(!received["intervals"].as_array().unwrap().is_empty());
    assert_eq!(received["end"]["counters"]["malformed"], 0);

    // The CSV logs: documented columns, a row per 100 ms, counters that add up.
    let (header, rows) = read_csv(&sender_log);
    assert_eq!(header[0..3], ["time_s", "unix_time_s", "flow_id"]);
    assert!(rows.len() >= 15, "{} sender rows", rows.len());
    let last = rows.last().unwrap();
    assert_eq!(cell(&header, last, "flow_id"), format!("{session}-sender"));
    assert_eq!(
        cell(&header, last, "packets_sent").parse::<u64>().unwrap(),
        packets
    );
    assert!(cell(&header, last, "rtt_s").parse::<f64>().unwrap() > 0.0);
    let (header, rows) = read_csv(&receiver_log);
    assert!(rows.len() >= 15, "{} receiver rows", rows.len());
    let last = rows.last().unwrap();
    assert_eq!(
        cell(&header, last, "packets").parse::<u64>().unwrap(),
        receiver_packets
    );
}

#[test]
fn text_output_has_interval_lines_and_a_summary() {
    let (receiver, address) = start_receiver(&["--idle-timeout", "5s"]);
    let output = tfrc()
        .args([
            "send",
            "--to",
            &address,
            "--time",
            "1.5",
            "--interval",
            "500ms",
        ])
        .args(["--max-rate", "5M", "--rtt-ref", "10ms", "--veno-beta", "1"])
        .output()
        .unwrap();
    finish(receiver, Duration::from_secs(30));
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let interval_lines = text.lines().filter(|line| line.contains(" s  ")).count();
    assert!(interval_lines >= 3, "{text}");
    assert!(text.contains("sender"), "{text}");
    assert!(text.contains("receiver  lost"), "{text}");
    assert!(text.contains("mean p"), "{text}");
}

#[test]
fn timer_granularity_flag_sets_t_gran_exactly() {
    let (receiver, address) = start_receiver(&["--idle-timeout", "5s"]);
    let output = tfrc()
        .args(["send", "--to", &address, "--time", "1", "--json"])
        .args(["--max-rate", "5M", "--timer-granularity", "250us"])
        .output()
        .unwrap();
    finish(receiver, Duration::from_secs(30));
    assert!(output.status.success());
    let sent = json_of(&output);
    let t_gran = sent["start"]["timer"]["timer_granularity_us"]
        .as_f64()
        .unwrap();
    assert!((t_gran - 250.0).abs() < 1e-6, "{t_gran}");
    // Given, it stays fixed for the whole run, however late the sender was woken.
    let largest = sent["end"]["timer_granularity_max_us"].as_f64().unwrap();
    assert!((largest - 250.0).abs() < 1e-6, "{largest}");
    assert!(sent["end"]["sender"]["packets"].as_u64().unwrap() > 100);
    // A duration without its unit is refused, naming the flag.
    let refused = tfrc()
        .args(["send", "--to", &address, "--timer-granularity", "5"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--timer-granularity"));
}

#[test]
fn bad_flags_are_named_in_the_error() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["send", "--to", "127.0.0.1:9", "--time", "5 parsecs"],
            "--time",
        ),
        (
            &["send", "--to", "127.0.0.1:9", "--target-rate", "fast"],
            "--target-rate",
        ),
        (
            &["send", "--to", "127.0.0.1:9", "--packet-size", "19"],
            "--packet-size",
        ),
        (&["send", "--to", "nowhere"], "--to"),
        (
            &["send", "--to", "127.0.0.1:9", "--congestion", "cubic"],
            "--tcp",
        ),
        (&["recv", "--log-interval", "0"], "--log-interval"),
    ];
    for (arguments, flag) in cases {
        let output = tfrc().args(arguments).output().unwrap();
        assert!(!output.status.success(), "{arguments:?} was accepted");
        let message = String::from_utf8_lossy(&output.stderr);
        assert!(message.contains(flag), "{arguments:?}: {message}");
    }
}

#[test]
fn sigint_ends_a_run_cleanly_with_its_summary_and_log() {
    let directory = ScratchDirectory::new("sigint");
    let log = directory.path().join("send.csv");
    let (receiver, address) = start_receiver(&["--idle-timeout", "5s"]);
    let sender = tfrc()
        .args(["send", "--to", &address, "--time", "60", "--json"])
        .args(["--max-rate", "5M", "--log", log.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let status = Command::new("kill")
        .args(["-INT", &sender.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let sent = json_of(&finish(sender, Duration::from_secs(20)));
    let received = json_of(&finish(receiver, Duration::from_secs(20)));
    assert_eq!(sent["end"]["reason"], "interrupted");
    assert!(sent["end"]["sender"]["seconds"].as_f64().unwrap() < 30.0);
    assert!(sent["end"]["receiver"]["packets"].as_u64().unwrap() > 0);
    assert_eq!(received["end"]["streams"][0]["reason"], "completed");
    let (_, rows) = read_csv(&log);
    assert!(rows.len() >= 5, "{} rows", rows.len());
}

/// Loads a congestion control module if possible (root only); returns why not otherwise.
fn congestion_available(name: &str) -> Result<(), String> {
    let list = |()| {
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            .unwrap_or_default()
    };
    if list(()).split_whitespace().any(|loaded| loaded == name) {
        return Ok(());
    }
    let _ = Command::new("modprobe")
        .arg(format!("tcp_{name}"))
        .stderr(Stdio::null())
        .status();
    if list(()).split_whitespace().any(|loaded| loaded == name) {
        return Ok(());
    }
    Err(format!(
        "TCP congestion control {name} is not loaded ({:?}) and modprobe tcp_{name} did not load it",
        list(()).trim()
    ))
}

#[test]
fn tcp_runs_log_tcp_info_for_each_congestion_control() {
    let in_ci = tfrc_test_support::in_ci();
    for name in ["reno", "cubic", "bbr"] {
        if let Err(reason) = congestion_available(name) {
            if in_ci && name != "bbr" {
                panic!("{reason}");
            }
            eprintln!("skipped {name}: {reason}");
            continue;
        }
        let directory = ScratchDirectory::new(name);
        let log = directory.path().join(format!("{name}.csv"));
        let (receiver, address) = start_receiver(&["--tcp"]);
        let sender = tfrc()
            .args(["send", "--tcp", "--congestion", name, "--to", &address])
            .args(["--time", "2", "--json", "--log", log.to_str().unwrap()])
            .args(["--log-interval", "100ms", "--interval", "500ms"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let sent = json_of(&finish(sender, Duration::from_secs(30)));
        let received = json_of(&finish(receiver, Duration::from_secs(30)));
        assert_eq!(sent["start"]["congestion"], name);
        let summary = &sent["end"]["streams"][0];
        assert_eq!(summary["congestion"], name);
        let bytes = summary["bytes"].as_u64().unwrap();
        assert!(bytes > 1_000_000, "{name}: {bytes} bytes");
        assert_eq!(
            received["end"]["streams"][0]["bytes"].as_u64().unwrap(),
            bytes,
            "{name}: the receiver read everything"
        );
        assert!(!sent["intervals"].as_array().unwrap().is_empty());
        let (header, rows) = read_csv(&log);
        assert!(rows.len() >= 10, "{name}: {} rows", rows.len());
        for row in &rows {
            assert!(cell(&header, row, "cwnd_segments").parse::<u32>().unwrap() >= 1);
            assert!(cell(&header, row, "rtt_s").parse::<f64>().is_ok());
            assert!(cell(&header, row, "total_retrans").parse::<u32>().is_ok());
        }
        assert!(rows
            .iter()
            .any(|row| !cell(&header, row, "delivery_rate_bps").is_empty()));
    }
}

/// With nobody listening, `tfrc send` fails and says why, as iperf3 does when it cannot reach
/// its server.
#[test]
fn send_without_a_receiver_fails_with_a_reason() {
    // A port bound and then released: nobody listens there.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tfrc()
        .args(["send", "--to", &format!("127.0.0.1:{port}"), "--time", "1"])
        .args(["--connect-timeout", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = finish(child, Duration::from_secs(20));
    assert_eq!(output.status.code(), Some(1), "{:?}", output.status);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Its hellos went unanswered, and loopback reports the port closed.
    assert!(
        stderr.contains(&format!(
            "no TFRC receiver answered at 127.0.0.1:{port} within 1s, the port is unreachable"
        )),
        "{stderr}"
    );
    // With -J the document still comes, with the reason in "error" (as iperf3 -J).
    let child = tfrc()
        .args([
            "send",
            "--to",
            &format!("127.0.0.1:{port}"),
            "-t",
            "1",
            "-J",
        ])
        .args(["--connect-timeout", "500ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let output = finish(child, Duration::from_secs(20));
    assert_eq!(output.status.code(), Some(1));
    let document: Value = serde_json::from_slice(&output.stdout).expect("a JSON document");
    assert!(
        document["error"]
            .as_str()
            .is_some_and(|error| error.contains("no TFRC receiver answered")),
        "{document}"
    );
    assert_eq!(document["start"]["connecting_to"]["port"], port);
}

/// A reader that goes away (`tfrc send --json | head -c 1`) ends the sender quietly with the
/// SIGPIPE status, not a panic.
#[test]
fn send_whose_reader_goes_away_does_not_panic() {
    let (receiver, address) = start_receiver(&[]);
    let mut child = tfrc()
        .args(["send", "--to", &address, "--time", "1", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = finish(child, Duration::from_secs(20));
    let _ = finish(receiver, Duration::from_secs(20));
    assert_eq!(output.status.code(), Some(141), "{output:?}");
    assert!(!String::from_utf8_lossy(&output.stderr).contains("panicked"));
}

/// `tfrc emulate` relaying from an ephemeral loopback port to the discard port for `time`.
fn emulate_for(time: &str) -> Command {
    let mut command = tfrc();
    command.args([
        "emulate",
        "--listen",
        "127.0.0.1:0",
        "--forward",
        "127.0.0.1:9",
        "--time",
        time,
    ]);
    command
}

/// Every duration flag reads the same grammar as `tfrc send --time` (iperf3's `-t`): a plain
/// number is seconds, so `tfrc emulate --time 2` runs for 2 s and exits 0, as `--time 2s` does;
/// a duration it cannot read is an error naming the text.
#[test]
fn emulate_reads_durations_as_send_does() {
    for time in ["2", "2s", "2000ms"] {
        let started = Instant::now();
        let mut child = emulate_for(time)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Bounded: a relay that does not stop is killed after 20 s and fails the test.
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if started.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(
            status.is_some_and(|status| status.success()),
            "--time {time}: {status:?}"
        );
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(1900),
            "--time {time} ended after {elapsed:?}"
        );
    }
    let output = emulate_for("5 parsecs").output().unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("5 parsecs"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// One units grammar (`tfrc_units`) behind every input: the same bad rate gets the same message
/// from `tfrc send -b`, `tfrc emulate --rate`, a scenario file's `rate` and `tfrc equation
/// --rate`, and iperf3's `1M` is a rate for the emulator as it is for `send`.
#[test]
fn one_units_grammar_for_flags_and_files() {
    let message = "expected a rate like \"800kbps\", got \"fast\" (no number before the unit)";
    let scenario = tempfile::tempdir().unwrap();
    let file = scenario.path().join("bad.toml");
    std::fs::write(
        &file,
        "name = \"bad\"\nduration = \"1s\"\n[[link]]\nbetween = [\"a\", \"b\"]\nrate = \"fast\"\n\
         delay = \"10ms\"\n[[flow]]\nname = \"f\"\nkind = \"tfrc\"\nfrom = \"a\"\nto = \"b\"\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    for args in [
        vec!["send", "--to", "127.0.0.1:9", "-b", "fast"],
        vec![
            "emulate",
            "--listen",
            "127.0.0.1:0",
            "--forward",
            "127.0.0.1:9",
            "--rate",
            "fast",
        ],
        vec!["sim", file],
        vec!["equation", "--rtt", "0.1", "--rate", "fast"],
    ] {
        let output = tfrc().args(&args).output().unwrap();
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let output = emulate_for("1").args(["--rate", "1M"]).output().unwrap();
    assert!(output.status.success(), "{output:?}");
}

/// iperf3's habits: `tfrc recv -s -p PORT` and `tfrc send -c HOST -p PORT -t 2 -J` work, and the
/// JSON `end` has iperf3's `sum_sent` and `sum_received` with `bits_per_second`,
/// `lost_percent` and `jitter_ms` (RFC 3550), read by the one parser that reads `iperf3 -u -J`
/// (run beside it when iperf3 is installed; CI installs it).
#[test]
fn iperf3_flags_and_json_sums() {
    let probe = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port().to_string();
    drop(probe);
    let mut receiver = tfrc()
        .args(["recv", "-s", "-p", &port, "-1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let output = tfrc()
        .args([
            "send",
            "-c",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "2",
            "-b",
            "2M",
            "-l",
            "500",
            "-J",
        ])
        .output()
        .unwrap();
    let _ = receiver.kill();
    let _ = receiver.wait();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    let end = &document["end"];
    let sent = end["sum_sent"]["bits_per_second"].as_f64().unwrap();
    let received = end["sum_received"]["bits_per_second"].as_f64().unwrap();
    // -b 2M caps the application at 2 Mb/s (TFRC packets of 500 + 32 bytes on the wire).
    assert!((1.5e6..2.5e6).contains(&sent), "sent {sent} b/s");
    assert!(
        received > 0.9 * sent && received <= sent * 1.01,
        "received {received} b/s"
    );
    assert_eq!(end["sum_received"]["lost_packets"], 0);
    assert!(end["sum_sent"]["seconds"].as_f64().unwrap() >= 1.9);
    // The same parser reads iperf3's UDP document (`iperf3 -u -J`).
    let ours = iperf3_udp_summary(&document);
    assert_eq!(ours.lost_percent, 0.0);
    assert!((0.0..50.0).contains(&ours.jitter_ms), "{ours:?}");
    let missing = tfrc_test_support::on_path("iperf3")
        .is_none()
        .then(|| "iperf3 is not installed (apt-get install iperf3)".to_owned());
    if !tfrc_test_support::can_run("iperf3_flags_and_json_sums (iperf3 part)", missing) {
        return;
    }
    let probe = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port().to_string();
    drop(probe);
    let mut server = Command::new("iperf3")
        .args(["-s", "-1", "-p", &port])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let client = Command::new("iperf3")
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &port,
            "-u",
            "-b",
            "2M",
            "-t",
            "2",
            "-l",
            "500",
            "-J",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let output = finish(client, Duration::from_secs(30));
    let _ = server.kill();
    let _ = server.wait();
    let theirs = iperf3_udp_summary(&serde_json::from_slice(&output.stdout).unwrap());
    println!("tfrc send: {ours:?}\niperf3:    {theirs:?}");
    // Both sent about 2 Mb/s by the same keys (iperf3 counts UDP payload, we count it with
    // the TFRC header: 532 vs 500 bytes a datagram).
    for summary in [&ours, &theirs] {
        assert!(
            (1.5e6..2.5e6).contains(&summary.sent_bits_per_second),
            "{summary:?}"
        );
        assert!(summary.received_bits_per_second > 0.9 * summary.sent_bits_per_second);
    }
}

/// What a script reads from an iperf3-style UDP JSON document's `end`.
#[derive(Debug)]
struct UdpSummary {
    sent_bits_per_second: f64,
    received_bits_per_second: f64,
    lost_percent: f64,
    jitter_ms: f64,
}

/// One parser for `iperf3 -u -J` and `tfrc send -J`: `end.sum_sent` and `end.sum_received`.
fn iperf3_udp_summary(document: &Value) -> UdpSummary {
    let end = &document["end"];
    let number = |sum: &str, key: &str| {
        end[sum][key]
            .as_f64()
            .unwrap_or_else(|| panic!("end.{sum}.{key} missing in {end}"))
    };
    UdpSummary {
        sent_bits_per_second: number("sum_sent", "bits_per_second"),
        received_bits_per_second: number("sum_received", "bits_per_second"),
        lost_percent: number("sum_received", "lost_percent"),
        jitter_ms: number("sum_received", "jitter_ms"),
    }
}

/// The shipped Wireshark dissector decodes ETP as well as TFRC: an ETP video stream (`tfrc
/// stream`) through the emulator's relay, captured with `--pcap`, shows in tshark its handshake,
/// DATA packets with the TFRC data header inside and their FRAGMENT frames, and ACKs carrying a
/// TFRC feedback — on ports that are not 5201 (the heuristic finds them).
#[test]
fn the_wireshark_dissector_decodes_etp_through_the_relay() {
    if !tfrc_test_support::tshark_available("the_wireshark_dissector_decodes_etp_through_the_relay")
    {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let capture = scratch.path().join("etp.pcap");
    let (relay_port, receiver_port) = (
        tfrc_test_support::free_udp_port(),
        tfrc_test_support::free_udp_port(),
    );
    let relay = format!("127.0.0.1:{relay_port}");
    let receiver_address = format!("127.0.0.1:{receiver_port}");
    let emulator = tfrc()
        .args([
            "emulate",
            "--listen",
            &relay,
            "--forward",
            &receiver_address,
        ])
        .args(["--delay", "5ms", "--time", "6", "--pcap"])
        .arg(&capture)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let receiver = tfrc()
        .args(["stream", "--listen", &receiver_address, "--duration", "2s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let sender = tfrc()
        .args(["stream", "--connect", &relay, "--duration", "2s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sent = finish(sender, Duration::from_secs(20));
    let _ = finish(receiver, Duration::from_secs(20));
    let relayed = finish(emulator, Duration::from_secs(20));
    assert!(sent.status.success(), "{sent:?}");
    assert!(relayed.status.success(), "{relayed:?}");
    let text = tfrc_test_support::dissect(&capture);
    for field in [
        "ETP INIT",
        "QoS descriptor (JSON)",
        "ETP COOKIE_ECHO",
        "ETP DATA",
        "Packet number: 1",
        "TFRC data",
        "Frame: FRAGMENT (1)",
        "Message length: ",
        "ETP ACK",
        "TFRC feedback",
        "X_recv (bytes/s)",
        "Acknowledged ranges: ",
    ] {
        assert!(text.contains(field), "tshark did not show {field:?}");
    }
    assert!(!text.contains("Malformed"), "a packet did not decode");
}

/// iperf3's `-P N`: N TFRC flows at once, each its own session, reported per flow and summed —
/// every interval's `sum` is its streams' total, `end.sum_sent`/`sum_received` the flows'
/// totals; the receiver serves N flows; `--log FILE` gives one file per flow.
#[test]
fn parallel_flows_are_reported_per_flow_and_summed() {
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("send.csv");
    let (receiver, address) = start_receiver(&["--idle-timeout", "5s"]);
    let output = tfrc()
        .args([
            "send", "--to", &address, "-t", "2", "-P", "3", "-b", "2M", "-J",
        ])
        .arg("--log")
        .arg(&log)
        .output()
        .unwrap();
    let _ = finish(receiver, Duration::from_secs(20));
    let document = json_of(&output);
    let connected = document["start"]["connected"].as_array().unwrap();
    assert_eq!(connected.len(), 3);
    let sessions: std::collections::BTreeSet<&str> = connected
        .iter()
        .map(|flow| flow["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions.len(), 3, "three sessions");
    let intervals = document["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 2, "{} intervals", intervals.len());
    for interval in intervals {
        let streams = interval["streams"].as_array().unwrap();
        assert_eq!(streams.len(), 3);
        let bytes: u64 = streams.iter().map(|s| s["bytes"].as_u64().unwrap()).sum();
        assert_eq!(interval["sum"]["bytes"].as_u64().unwrap(), bytes);
    }
    let end = &document["end"];
    let streams = end["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 3);
    let sent: u64 = streams
        .iter()
        .map(|s| s["sender"]["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(end["sum_sent"]["bytes"].as_u64().unwrap(), sent);
    let received: u64 = streams
        .iter()
        .map(|s| s["receiver"]["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(end["sum_received"]["bytes"].as_u64().unwrap(), received);
    // Each flow is held to 2 Mb/s by -b: the sum is about three times that.
    let total = end["sum_sent"]["bits_per_second"].as_f64().unwrap();
    assert!((5.0e6..6.5e6).contains(&total), "{total} bits/s");
    for k in 1..=3 {
        let path = scratch.path().join(format!("send-{k}.csv"));
        assert!(read_csv(&path).1.len() > 5, "{}", path.display());
    }
}

/// iperf3's `-R`: `tfrc send -R` asks the `tfrc recv` it names to send the flow, receives it and
/// reports iperf3's `sum_sent` (from the sender's end of session) and `sum_received`; the
/// server reports the flow it sent, from its listening port, so that the flow also comes back
/// through a relay. A server started with `--no-reverse` sends nothing, and
/// the client fails within its connect timeout, saying so.
#[test]
fn reverse_mode_receives_a_flow_from_the_server() {
    let mut command = tfrc();
    command.args(["recv", "--listen", "127.0.0.1:0", "--json"]);
    let (server, address) = tfrc_test_support::spawn_listening(command);
    let output = tfrc()
        .args([
            "send", "--to", &address, "-R", "-t", "2", "-b", "2M", "-l", "1200", "-J",
        ])
        .output()
        .unwrap();
    let status = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let served = json_of(&finish(server, Duration::from_secs(20)));
    let received = json_of(&output);
    assert_eq!(received["start"]["role"], "receiver");
    assert_eq!(received["start"]["test_start"]["reverse"], 1);
    let end = &received["end"];
    let got = end["sum_received"]["bytes"].as_u64().unwrap();
    let sent = end["sum_sent"]["bytes"].as_u64().unwrap();
    assert!(got > 0 && got <= sent, "received {got} of {sent} bytes");
    let rate = end["sum_received"]["bits_per_second"].as_f64().unwrap();
    assert!(
        (1.5e6..2.5e6).contains(&rate),
        "{rate} bits/s (asked for 2M)"
    );
    assert!(end["sum_received"]["lost_percent"].as_f64().unwrap() < 10.0);
    assert_eq!(end["streams"][0]["reason"], "completed");
    // The server sent exactly what the client's end of session says it sent, in 1200-byte
    // segments (+ the 32-byte TFRC header).
    let flows = served["end"]["reverse_flows"].as_array().unwrap();
    assert_eq!(flows.len(), 1, "{flows:?}");
    assert_eq!(flows[0]["sender"]["bytes"].as_u64().unwrap(), sent);
    let packets = flows[0]["sender"]["packets"].as_u64().unwrap();
    assert_eq!(sent, packets * 1232);

    // Through a relay (which passes back only what comes from the address it forwards to):
    // the flow leaves from the port the request came to, so it comes back.
    let mut command = tfrc();
    command.args(["recv", "--listen", "127.0.0.1:0", "--json"]);
    let (server, address) = tfrc_test_support::spawn_listening(command);
    let relay = format!("127.0.0.1:{}", tfrc_test_support::free_udp_port());
    let emulator = tfrc()
        .args(["emulate", "--listen", &relay, "--forward", &address])
        .args(["--delay", "10ms", "--time", "4"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let through = tfrc()
        .args(["send", "--to", &relay, "-R", "-t", "1", "-b", "1M", "-J"])
        .output()
        .unwrap();
    let _ = finish(emulator, Duration::from_secs(20));
    let _ = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status();
    let _ = finish(server, Duration::from_secs(20));
    let through = json_of(&through);
    let stream = &through["end"]["streams"][0];
    assert_eq!(stream["reason"], "completed", "{through}");
    let rtt = stream["rtt"]["mean_s"].as_f64().unwrap();
    assert!(
        rtt >= 0.019,
        "R_m {rtt} s: the flow crossed the 2 × 10 ms relay"
    );

    let mut command = tfrc();
    command.args(["recv", "--listen", "127.0.0.1:0", "--json", "--no-reverse"]);
    let (server, address) = tfrc_test_support::spawn_listening(command);
    let started = Instant::now();
    let refused = tfrc()
        .args([
            "send",
            "--to",
            &address,
            "-R",
            "-t",
            "1",
            "--connect-timeout",
            "1",
        ])
        .output()
        .unwrap();
    let _ = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status();
    let served = json_of(&finish(server, Duration::from_secs(20)));
    assert!(!refused.status.success());
    assert!(started.elapsed() < Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("no flow came from"), "{stderr}");
    assert!(
        served["end"]["counters"]["reverse_refused"]
            .as_u64()
            .unwrap()
            >= 1
    );
}
