//! `tfrc equation` as a user runs it.

use assert_cmd::Command;

fn tfrc() -> Command {
    Command::cargo_bin("tfrc").unwrap()
}

#[test]
fn prints_the_allowed_rate_as_json() {
    let output = tfrc()
        .args([
            "equation",
            "--packet-size",
            "1000",
            "--rtt",
            "0.1",
            "--loss-event-rate",
            "0.01",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(output.status.success());
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let bytes = value["x_bytes_per_s"].as_f64().unwrap();
    let bits = value["x_bps"].as_f64().unwrap();
    // Independent value (Python): 112332.23436299298 bytes/s.
    assert!((bytes - 112_332.234_362_992_98).abs() < 1e-6);
    assert!((bits - 8.0 * bytes).abs() < 1e-6);
}

#[test]
fn prints_text_by_default() {
    let output = tfrc()
        .args(["equation", "--rtt", "0.1", "--loss-event-rate", "0.01"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("112332.2 bytes/s"), "{text}");
}

/// `--rtt` and `--rate` take the toolkit's units as every other flag does; a plain number is
/// seconds and bits/s.
#[test]
fn rtt_and_rate_take_units() {
    let run = |args: &[&str]| {
        let output = tfrc()
            .arg("equation")
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        let stdout = tfrc_test_support::succeeded(output);
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap()
    };
    let plain = run(&["--rtt", "0.1", "--loss-event-rate", "0.01"]);
    let with_unit = run(&["--rtt", "100ms", "--loss-event-rate", "0.01"]);
    assert_eq!(plain, with_unit);
    let inverse = run(&["--rtt", "100ms", "--rate", "1Mbps"]);
    assert_eq!(inverse, run(&["--rtt", "0.1", "--rate", "1e6"]));
    assert_eq!(inverse["x_bps"].as_f64().unwrap().round(), 1e6);
    let output = tfrc()
        .args([
            "equation",
            "--rtt",
            "100 parsecs",
            "--loss-event-rate",
            "0.01",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("expected a duration like"), "{stderr}");
}

#[test]
fn inverse_mode_finds_p() {
    let output = tfrc()
        .args(["equation", "--rtt", "0.1", "--rate", "898657.87", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let p = value["loss_event_rate"].as_f64().unwrap();
    assert!((p - 0.01).abs() < 1e-6, "p = {p}");
}

#[test]
fn bad_values_give_a_clear_error() {
    for (args, needle) in [
        (
            vec!["--rtt", "0.1", "--loss-event-rate", "0"],
            "--loss-event-rate must be in (0, 1]",
        ),
        (
            vec!["--rtt", "0.1", "--loss-event-rate", "1.5"],
            "--loss-event-rate must be in (0, 1]",
        ),
        (
            vec!["--rtt", "0", "--loss-event-rate", "0.1"],
            "--rtt must be a positive",
        ),
        (
            vec!["--rtt", "-1", "--loss-event-rate", "0.1"],
            "--rtt must be a positive",
        ),
        (
            vec![
                "--rtt",
                "0.1",
                "--loss-event-rate",
                "0.1",
                "--packet-size",
                "0",
            ],
            "--packet-size must be a positive",
        ),
        (
            vec!["--rtt", "0.1", "--loss-event-rate", "abc"],
            "invalid value 'abc'",
        ),
        (
            vec!["--rtt", "0.1", "--loss-event-rate", "NaN"],
            "--loss-event-rate must be in (0, 1]",
        ),
    ] {
        let output = tfrc().arg("equation").args(&args).output().unwrap();
        assert!(!output.status.success(), "{args:?} should fail");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

/// A rate the equation cannot give for this s and R (below X(p = 1), or above X(p = 1e-12))
/// is an error naming the range, not the clamped p's rate.
#[test]
fn an_unattainable_rate_is_said() {
    for rate in ["100", "1e15"] {
        let output = tfrc()
            .args(["equation", "--rtt", "0.1", "--rate", rate])
            .output()
            .unwrap();
        assert!(!output.status.success(), "--rate {rate}");
        let message = String::from_utf8_lossy(&output.stderr);
        assert!(message.contains("is not attainable"), "{message}");
        assert!(message.contains("(p = 1)"), "{message}");
    }
    // Just above X(p = 1) (329 bits/s for s = 1000 B, R = 0.1 s) is fine.
    let output = tfrc()
        .args(["equation", "--rtt", "0.1", "--rate", "400"])
        .output()
        .unwrap();
    assert!(output.status.success());
}

/// `tfrc completions SHELL` prints a completion script naming every subcommand; an unknown
/// shell is refused with the list of known ones.
#[test]
fn completions_cover_every_subcommand() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tfrc"))
        .args(["completions", "bash"])
        .output()
        .unwrap();
    let script = tfrc_test_support::succeeded(output);
    assert!(script.contains("_tfrc()"), "a bash completion function");
    for command in [
        "equation",
        "reproduce",
        "send",
        "recv",
        "sim",
        "ns2",
        "ns3",
        "conformance",
        "plot",
        "stream",
        "emulate",
        "testbed",
    ] {
        assert!(script.contains(command), "{command} missing");
    }
    assert!(script.contains("--pcap"), "flags are completed too");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tfrc"))
        .args(["completions", "cmd"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bash") && stderr.contains("zsh") && stderr.contains("fish"),
        "{stderr}"
    );
}
