//! `tfrc ns2`: ns-2's run, ours, and one figure with both.

use std::path::Path;

use assert_cmd::Command;
use tfrc_test_support::{flow, succeeded, Scratch, DUMBBELL_1MBPS_50MS};

#[test]
fn ns2_and_our_simulator_on_one_figure() {
    if !tfrc_test_support::ns2_available("ns2_and_our_simulator_on_one_figure") {
        return;
    }
    let directory = Scratch::new();
    let text = format!(
        "name = \"one\"\nduration = \"20s\"\n{DUMBBELL_1MBPS_50MS}{}",
        flow("a", "tfrc", &["profile = \"ns2\""])
    );
    let file = directory.write("one.toml", &text);
    let out = directory.join("out");
    let stdout = succeeded(
        Command::cargo_bin("tfrc")
            .unwrap()
            .args([
                "ns2",
                file.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .output()
            .unwrap(),
    );
    assert!(stdout.contains("mean receiver throughput ns-2"), "{stdout}");
    for file in [
        "summary.json",
        "ours/summary.json",
        "ns2-vs-ours.png",
        "ns2-vs-ours.svg",
    ] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    // Both fill most of the 1 Mb/s link over 20 s, within 10 % of each other.
    let rate = |path: &Path| {
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        summary["flows"][0]["goodput_bps"].as_f64().unwrap()
    };
    let (ns2, ours) = (
        rate(&out.join("summary.json")),
        rate(&out.join("ours/summary.json")),
    );
    assert!(
        ns2 > 700_000.0 && ours > 700_000.0,
        "ns-2 {ns2}, ours {ours}"
    );
    assert!((ours / ns2 - 1.0).abs() < 0.1, "ns-2 {ns2}, ours {ours}");
    let svg = std::fs::read_to_string(out.join("ns2-vs-ours.svg")).unwrap();
    assert!(
        svg.contains("ns-2.35") && svg.contains("ours"),
        "legend missing"
    );
}
