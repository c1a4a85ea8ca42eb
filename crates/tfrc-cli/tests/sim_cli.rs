//! `tfrc sim` as a user runs it.

use assert_cmd::Command;

const SCENARIO: &str = r#"
name = "cli"
duration = "10s"
seed = 3

[[link]]
between = ["sender", "router"]
rate = "100Mbps"
delay = "1ms"

[[link]]
between = ["router", "receiver"]
rate = "1Mbps"
delay = "24ms"

[[flow]]
name = "a"
kind = "tfrc"
from = "sender"
to = "receiver"

[[flow]]
name = "t"
kind = "tcp"
from = "sender"
to = "receiver"
"#;

fn tfrc() -> Command {
    Command::cargo_bin("tfrc").unwrap()
}

#[test]
fn sim_writes_the_four_files_and_prints_a_summary_table() {
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("cli.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let out = directory.path().join("out");
    let output = tfrc()
        .args([
            "sim",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(
        table.contains("goodput kb/s") && table.contains("Jain index"),
        "{table}"
    );
    for name in [
        "flows.csv",
        "state.csv",
        "links.csv",
        "summary.json",
        "scenario.toml",
    ] {
        assert!(out.join(name).is_file(), "{name} missing");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["seed"], 3);
    // 10 s, both flows share the 1 Mb/s link.
    let total: f64 = (0..2)
        .map(|i| summary["flows"][i]["goodput_bps"].as_f64().unwrap())
        .sum();
    assert!(total > 800_000.0, "{total}");
}

#[test]
fn seed_and_set_override_the_file() {
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("cli.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let out = directory.path().join("out");
    tfrc()
        .args([
            "sim",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .args([
            "--seed",
            "42",
            "--set",
            "duration=4s",
            "--set",
            "flow.a.target_rate=900kbps",
        ])
        .assert()
        .success();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["seed"], 42);
    assert_eq!(summary["duration_s"], 4.0);
    let state = std::fs::read_to_string(out.join("state.csv")).unwrap();
    assert!(
        state.lines().any(|line| line.contains(",900000.0,")),
        "{state}"
    );
}

#[test]
fn a_bad_key_is_an_error_naming_file_and_key() {
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("bad.toml");
    std::fs::write(
        &file,
        SCENARIO.replace("delay = \"24ms\"", "dealy = \"24ms\""),
    )
    .unwrap();
    let output = tfrc()
        .args([
            "sim",
            file.to_str().unwrap(),
            "--out",
            directory.path().join("o").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(
        message.contains("bad.toml") && message.contains("dealy"),
        "{message}"
    );
    assert!(!message.contains("panicked"), "{message}");
}

#[test]
fn a_sweep_writes_one_directory_per_variant() {
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("sweep.toml");
    let text = format!("{SCENARIO}\n[sweep]\n\"link.1.delay\" = [\"24ms\", \"49ms\"]\n");
    std::fs::write(&file, text).unwrap();
    let out = directory.path().join("out");
    tfrc()
        .args([
            "sim",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .assert()
        .success();
    for variant in ["delay=24ms", "delay=49ms"] {
        assert!(
            out.join(variant).join("summary.json").is_file(),
            "{variant} missing"
        );
    }
}
