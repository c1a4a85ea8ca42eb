//! `tfrc ns2`: ns-2's run, ours, and one figure with both.

use std::path::Path;

use assert_cmd::Command;
use tfrc_test_support::{flow, succeeded, Scratch, DUMBBELL_1MBPS_50MS};

/// `tfrc ns2 FILE --out OUT`, which must succeed; its standard output.
fn run_ns2(file: &Path, out: &Path) -> String {
    succeeded(
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
    )
}

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
    let stdout = run_ns2(&file, &out);
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

/// ns-2's TFRC sink prints its loss event rate and its TCP agents count retransmissions; the
/// converted summary carries both (p for the first TFRC flow, whose sink prints, and none for
/// the second), and they are of the size of ours for the same mix.
#[test]
fn ns2_runs_report_p_and_tcp_retransmissions() {
    if !tfrc_test_support::ns2_available("ns2_runs_report_p_and_tcp_retransmissions") {
        return;
    }
    let directory = Scratch::new();
    let text = format!(
        "name = \"mix\"\nduration = \"30s\"\n{DUMBBELL_1MBPS_50MS}{}{}",
        flow("a", "tfrc", &["profile = \"ns2\"", "count = 2"]),
        flow("b", "tcp", &["variant = \"sack\"", "count = 2"])
    );
    let file = directory.write("mix.toml", &text);
    let out = directory.join("out");
    run_ns2(&file, &out);
    let summary = |path: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let (ns2, ours) = (
        summary(&out.join("summary.json")),
        summary(&out.join("ours/summary.json")),
    );
    let ns2_p = ns2["flows"][0]["mean_p"].as_f64().expect("p of a.1");
    let ours_p = ours["flows"][0]["mean_p"].as_f64().unwrap();
    assert!(ns2_p > 0.001 && ns2_p < 0.2, "ns-2 p {ns2_p}");
    assert!(
        ns2_p / ours_p > 0.5 && ns2_p / ours_p < 2.0,
        "ns-2 p {ns2_p}, ours {ours_p}"
    );
    assert!(
        ns2["flows"][1]["mean_p"].is_null(),
        "a.2's sink does not print"
    );
    for index in [2, 3] {
        let tcp = &ns2["flows"][index];
        let retransmissions = tcp["retransmissions"].as_u64().expect("counted");
        assert!(retransmissions > 0, "{tcp}");
        assert!(tcp["timeouts"].as_u64().expect("counted") <= retransmissions);
    }
}

/// A UDP-only scenario on a trace-driven link: `tfrc ns2` draws its figure (it used to stop
/// with "nothing to plot"), and ns-2's link follows the trace over time as ours does — 1 Mb/s
/// for 10 s, then 3 Mb/s under a 2 Mb/s CBR flow — instead of running the trace's mean.
#[test]
fn a_udp_flow_on_a_trace_driven_link_in_ns2() {
    if !tfrc_test_support::ns2_available("a_udp_flow_on_a_trace_driven_link_in_ns2") {
        return;
    }
    let directory = Scratch::new();
    let mut times = Vec::new();
    let mut t = 0u64;
    while t < 10_000 {
        t += 12;
        times.push(t.to_string());
    }
    while t < 20_000 {
        t += 4;
        times.push(t.to_string());
    }
    let trace = directory.write("step.trace", &(times.join("\n") + "\n"));
    let text = format!(
        "name = \"step\"\nduration = \"20s\"\n[[link]]\nbetween = [\"a\", \"b\"]\ntrace = \"{}\"\n\
         delay = \"20ms\"\nqueue = {{ kind = \"droptail\", limit = 100 }}\nreverse = {{ rate = \"10Mbps\" }}\n\
         [[flow]]\nname = \"c\"\nkind = \"cbr\"\nrate = \"2Mbps\"\nfrom = \"a\"\nto = \"b\"\npacket_size = 1500\n",
        trace.display()
    );
    let file = directory.write("step.toml", &text);
    let out = directory.join("out");
    let stdout = run_ns2(&file, &out);
    assert!(out.join("ns2-vs-ours.png").is_file(), "{stdout}");
    let mean_kbps = |run: &Path, from: f64, to: f64| {
        let (header, rows) = tfrc_test_support::read_csv(&run.join("flows.csv"));
        let time = header.iter().position(|h| h == "time_s").unwrap();
        let recv = header.iter().position(|h| h == "recv_kbps").unwrap();
        let values: Vec<f64> = rows
            .iter()
            .filter(|row| {
                let t: f64 = row[time].parse().unwrap();
                t > from && t <= to
            })
            .map(|row| row[recv].parse().unwrap())
            .collect();
        values.iter().sum::<f64>() / values.len() as f64
    };
    for (run, name) in [(out.clone(), "ns-2"), (out.join("ours"), "ours")] {
        let first = mean_kbps(&run, 1.0, 10.0);
        let last = mean_kbps(&run, 15.0, 20.0);
        assert!(
            (950.0..1100.0).contains(&first),
            "{name}: {first} kb/s over 1-10 s"
        );
        assert!(
            (1900.0..2100.0).contains(&last),
            "{name}: {last} kb/s over 15-20 s"
        );
    }
}
