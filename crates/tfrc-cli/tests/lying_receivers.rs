//! The adversary suite over real UDP (issue "feedback that cannot hide loss"): `tfrc send`
//! for 6 s through `tfrc emulate --rate 1Mbps --delay 10ms` to `tfrc recv --lie LIES`, each
//! lie against the same path with an honest `tfrc recv`. No receiver strategy may get the
//! sender above 2 Mb/s on average (before loss intervals with proofs, p = 2^-32 with X_recv =
//! 10 Gb/s got 1,400 Mb/s and p = 0 got 5.4 Mb/s), nor much above the honest receiver's rate.
//! Runs four at a time on loopback, each process bounded in time.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use tfrc_test_support::{free_udp_port, spawn_listening, wait_bounded};

fn tfrc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tfrc"))
}

/// `tfrc send`'s mean sent rate (bits/s) and its feedback counters, behind the emulated link,
/// to a receiver telling `lies` (none: honest).
fn run(lies: &str) -> (f64, Value) {
    let mut command = tfrc();
    command.args(["recv", "--listen", "127.0.0.1:0", "--json", "--once"]);
    if !lies.is_empty() {
        command.args(["--lie", lies]);
    }
    let (receiver, address) = spawn_listening(command);
    let relay = format!("127.0.0.1:{}", free_udp_port());
    let emulator = tfrc()
        .args(["emulate", "--listen", &relay, "--forward", &address])
        .args(["--rate", "1Mbps", "--delay", "10ms", "--time", "20"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let sender = tfrc()
        .args(["send", "--to", &relay, "--time", "6", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = wait_bounded(sender, Duration::from_secs(40));
    for child in [emulator, receiver] {
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let _ = wait_bounded(child, Duration::from_secs(20));
    }
    let document: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "{lies}: no JSON report ({error}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let sender = &document["end"]["sender"];
    let bits_per_second = sender["bits_per_second"]
        .as_f64()
        .unwrap_or_else(|| panic!("{lies}: no sender rate in {document}"));
    (bits_per_second, document["end"]["counters"].clone())
}

#[test]
fn no_lying_receiver_gets_tfrc_send_above_2_mbps_through_a_1_mbps_link() {
    let strategies: [&'static str; 14] = [
        "",
        "p=0",
        "p=min,x-recv=1250000000",
        "p=0.000001",
        "p=0.0001",
        "p/10",
        "merge",
        "since-first",
        "tail",
        "synthetic",
        "no-loss,x-recv=1250000000",
        "t-delay+15000",
        "replay,p=min",
        "merge,tail,synthetic,x-recv=1250000000,t-delay+15000",
    ];
    let mut results = Vec::new();
    for group in strategies.chunks(4) {
        let handles: Vec<_> = group
            .iter()
            .map(|&lies| std::thread::spawn(move || (lies, run(lies))))
            .collect();
        results.extend(handles.into_iter().map(|handle| handle.join().unwrap()));
    }
    let honest = results[0].1 .0;
    for (lies, (rate, counters)) in &results {
        println!(
            "{:<55} {:>8.3} Mb/s  taken {} lies {} p raised {} X_recv capped {} refused as unconfirmed {} replayed {}",
            if lies.is_empty() { "honest" } else { lies },
            rate / 1e6,
            counters["feedbacks"],
            counters["lies"],
            counters["p_raised"],
            counters["x_recv_capped"],
            counters["unconfirmed"],
            counters["replayed"],
        );
    }
    assert!(
        honest > 0.5e6 && honest < 1.5e6,
        "the honest receiver's sender: {honest} b/s"
    );
    assert_eq!(
        results[0].1 .1["lies"], 0,
        "the honest receiver was called a liar"
    );
    for (lies, (rate, _)) in &results[1..] {
        assert!(*rate < 2e6, "{lies}: {rate} b/s");
        // A synthetic first interval can be claimed up to the one that twice the delivered
        // rate gives (an honest receiver's can be that long in slow start): 1.18 Mb/s against
        // 0.83 in our runs, for the first eight loss events (docs/udp-tools.md, threat model).
        let bound = if lies.contains("synthetic") {
            1.75
        } else {
            1.25
        };
        assert!(
            *rate < bound * honest,
            "{lies}: {rate} b/s against the honest receiver's {honest} b/s"
        );
    }
}
