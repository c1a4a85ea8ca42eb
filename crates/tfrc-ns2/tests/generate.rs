//! The generator's output for small scenarios (no ns-2 needed): the Tcl objects each scenario
//! feature maps to, the unsupported list, and the converter on hand-written samples.

use core::time::Duration;
use std::path::Path;

use tfrc_ns2::{convert_samples, generate, run_scenario, Ns2Error, RunOptions, SampleKind};
use tfrc_scenario::Scenario;

fn scenario(text: &str) -> Scenario {
    Scenario::from_str_named(text, "test.toml").expect("valid scenario")
}

const EVERYTHING: &str = r#"
name = "everything"
duration = "60s"

[[link]]
between = ["sender", "router"]
rate = "100Mbps"
delay = "1ms"
queue = { kind = "droptail", limit = 50 }

[[link]]
between = ["router", "receiver"]
rate = "1Mbps"
delay = "250ms"
queue = { kind = "rio", limit = 50, min_out = 10, max_out = 20, p_out = 0.1, min_in = 20, max_in = 40, p_in = 0.02 }
loss = { kind = "bernoulli", rate = 0.01, start = "30s", stop = "50s" }
reverse = { rate = "64kbps", queue = { kind = "red", min_th = 3, max_th = 9, max_p = 0.25, gentle = true } }

[[marker]]
link = ["sender", "router"]
flows = ["a"]
rate = "800kbps"
bucket = 10000

[[flow]]
name = "a"
kind = "tfrc"
from = "sender"
to = "receiver"
rtt_ref = "125ms"
history_discounting = true

[[flow]]
name = "reno"
kind = "tcp"
variant = "reno"
from = "sender"
to = "receiver"
window = 20

[[flow]]
name = "newreno"
kind = "tcp"
variant = "newreno"
delayed_ack = true
profile = "ns2"
from = "sender"
to = "receiver"

[[flow]]
name = "sack"
kind = "tcp"
from = "sender"
to = "receiver"
delayed_ack = true

[[flow]]
name = "u"
kind = "cbr"
rate = "500kbps"
from = "sender"
to = "receiver"
start = "10s"
stop = "40s"

[[flow]]
name = "bg"
kind = "pareto"
count = 3
rate = "500kbps"
burst = "100ms"
idle = "100ms"
packet_size = 512
from = "sender"
to = "receiver"

[[flow]]
name = "e"
kind = "exp-onoff"
rate = "100kbps"
from = "receiver"
to = "sender"
"#;

#[test]
fn every_mapped_feature_has_its_tcl_object() {
    let generated = generate(&scenario(EVERYTHING)).expect("generates");
    let tcl = &generated.tcl;
    for expected in [
        // links: one simplex-link per direction, asymmetric rates, queue kinds
        "$ns simplex-link $n(0) $n(1) 100000000 0.001 dsRED/edge",
        "$ns simplex-link $n(1) $n(2) 1000000 0.25 dsRED/core",
        "$ns simplex-link $n(2) $n(1) 64000 0.25 RED",
        "$q set thresh_ 3; $q set maxthresh_ 9; $q set linterm_ 4; $q set q_weight_ 0.002; $q set gentle_ true",
        "$q set queue_in_bytes_ false",
        // the marked DropTail direction: dsRED DROP mode holding limit - 1 waiting packets
        "$ns queue-limit $n(0) $n(1) 49",
        "setMREDMode DROP",
        "$q configQ 0 0 49 49 1",
        // marker: token bucket keyed on the access node of flow a
        "addPolicyEntry [$n(3) id] -1 TokenBucket 10 800000 10000",
        "addPolicyEntry -1 -1 Null 0",
        "addPolicerEntry TokenBucket 10 11",
        "$ns duplex-link $n(3) $n(0) 100Gb 0 DropTail",
        "$ns attach-agent $n(3) $src(0)",
        // RIO
        "setMREDMode RIO-C",
        "$q configQ 0 0 20 40 0.02; $q configQ 0 1 10 20 0.1",
        "addPHBEntry 0 0 1",
        // loss on the forward direction only, inside its time window
        "$em(2) set rate_ 0;",
        "$ns lossmodel $em(2) $n(1) $n(2)",
        "$ns at 30 \"$em(2) set rate_ 0.01\"",
        "$ns at 50 \"$em(2) set rate_ 0\"",
        // TFRC with its feedback rate and history discounting
        "new Agent/TFRC]; $src(0) set packetSize_ 1000; $src(0) set ca_ 0",
        "new Agent/TFRCSink]; $snk(0) set NumFeedback_ 4; $snk(0) set discount_ 1",
        // TCP variants and sinks, payload = packet_size - 40
        // Reno is `Agent/TCP/Reno` (`Agent/TCP` is Tahoe in ns-2)
        "new Agent/TCP/Reno]; $src(1) set packetSize_ 960; $src(1) set window_ 20",
        "set snk(1) [new Agent/TCPSink]",
        "new Agent/TCP/Newreno]",
        // TCP profile "rfc" (the default): no SYN, rounded halving, 1 s initial RTO, re-read by
        // `reset`; the "ns2" profile keeps ns-2's defaults (checked below)
        "$src(1) set syn_ false; $src(1) set precisionReduce_ false; $src(1) set rtxcur_init_ 1.0; $src(1) reset",
        "$src(3) set syn_ false;",
        "new Agent/TCPSink/DelAck]; $snk(2) set interval_ 0.1",
        "new Agent/TCP/Sack1]",
        "new Agent/TCPSink/Sack1/DelAck]",
        "Application/FTP",
        // UDP sources
        "new Application/Traffic/CBR]",
        "$app(4) set rate_ 500000; $app(4) set random_ 0",
        "$ns at 10 \"$app(4) start\"",
        "$ns at 40 \"$app(4) stop\"",
        "new Application/Traffic/Pareto]",
        "$app(5) set shape_ 1.5",
        "$app(7) set packetSize_ 512",
        "new Application/Traffic/Exponential]",
        "$app(8) use-rng $rng(f8)",
        "new Agent/LossMonitor]",
        // the exponential source goes receiver -> sender: attached at node 2
        "$ns attach-agent $n(2) $src(8); $ns attach-agent $n(0) $snk(8)",
        // monitors and sampling
        "makeflowmon Fid",
        "monitor-queue",
        "proc sample_flows",
        "$ns at 60.000001 \"finish\"",
    ] {
        assert!(tcl.contains(expected), "missing {expected:?} in:\n{tcl}");
    }
    assert!(!tcl.contains("$src(2) set syn_"), "{tcl}");
    // Flows, in order, with their kinds and what the converter samples.
    let kinds: Vec<(&str, &str, SampleKind)> = generated
        .layout
        .flows
        .iter()
        .map(|flow| (flow.name.as_str(), flow.kind.name(), flow.extra.sample))
        .collect();
    assert_eq!(
        kinds,
        [
            ("a", "tfrc", SampleKind::Tfrc),
            ("reno", "tcp", SampleKind::Tcp),
            ("newreno", "tcp", SampleKind::Tcp),
            ("sack", "tcp", SampleKind::Tcp),
            ("u", "cbr", SampleKind::Udp),
            ("bg.1", "pareto", SampleKind::Udp),
            ("bg.2", "pareto", SampleKind::Udp),
            ("bg.3", "pareto", SampleKind::Udp),
            ("e", "exp-onoff", SampleKind::Udp),
        ]
    );
    assert_eq!(generated.layout.directions.len(), 4);
    assert_eq!(generated.layout.directions[3].capacity_bps, 64_000);
    assert_eq!(generated.layout.flows[0].extra.feedbacks_per_rtt, Some(4));
    assert_eq!(generated.layout.flow_times.len(), 60);
    // Nothing here is unsupported, but the rtt_ref mapping is noted.
    assert!(
        generated.unsupported.is_empty(),
        "{:?}",
        generated.unsupported
    );
    assert!(generated
        .notes
        .iter()
        .any(|note| note.starts_with("flow.a.rtt_ref: ") && note.contains("mapped to 4")));
}

/// `variant = "sp"` runs ns-2.35's own TFRC-SP as its test suite does (`voip_ 1` with
/// `fsize_` and `headersize_`, the sink's `ShortIntervals_ 1`); a standard flow sets none of it.
#[test]
fn small_packet_flows_run_ns2_voip_mode() {
    let text = r#"
name = "sp"
duration = "10s"

[[link]]
between = ["s", "r"]
rate = "10Mbps"
delay = "10ms"

[[flow]]
name = "voip"
kind = "tfrc"
from = "s"
to = "r"
packet_size = 232
variant = "sp"
header_size = 32

[[flow]]
name = "plain"
kind = "tfrc"
from = "s"
to = "r"
"#;
    let tcl = generate(&scenario(text)).expect("generates").tcl;
    assert!(
        tcl.contains(
            "$src(0) set voip_ 1; $src(0) set fsize_ 1460; $src(0) set headersize_ 32; \
             $snk(0) set ShortIntervals_ 1"
        ),
        "{tcl}"
    );
    assert!(!tcl.contains("$src(1) set voip_"), "{tcl}");
    assert_eq!(tcl.matches("ShortIntervals_").count(), 1, "{tcl}");
}

#[test]
fn unsupported_features_are_listed_by_key() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let trace = directory.path().join("down.trace");
    // 4 opportunities per 4 ms period = 4 x 1500 B / 4 ms = 12 Mbit/s, less the opportunity
    // of the line `4` at time 0 that the first pass does not have: 9999 in the 10 s run.
    std::fs::write(&trace, "1\n2\n2\n4\n").expect("write trace");
    let text = format!(
        r#"
        name = "unsupported"
        duration = "10s"

        [[link]]
        between = ["a", "b"]
        trace = "{}"
        delay = "10ms"
        loss = {{ kind = "exponential", mean_gap = "2s" }}
        reverse = {{ rate = "1Mbps", loss = {{ kind = "gilbert-elliott", p_good_to_bad = 0.01, p_bad_to_good = 0.5 }} }}

        [[link]]
        between = ["b", "c"]
        rate = "1Mbps"
        delay = "10ms"
        queue = {{ kind = "rio", weight = 0.01 }}

        [[flow]]
        name = "g"
        kind = "tfrc"
        from = "a"
        to = "c"
        target_rate = "400kbps"

        [[flow]]
        name = "v"
        kind = "tfrc"
        count = 4
        veno_beta = 1
        from = "a"
        to = "c"
        "#,
        trace.display()
    );
    let generated = generate(&scenario(&text)).expect("generates");
    let unsupported = &generated.unsupported;
    let starts = |prefix: &str| unsupported.iter().any(|line| line.starts_with(prefix));
    assert!(
        starts("link[0].trace: ") && unsupported[0].contains("mean 11998800 bit/s"),
        "{unsupported:?}"
    );
    assert!(starts("link[0].loss: exponential"), "{unsupported:?}");
    assert!(
        starts("link[0].reverse.loss: the per-packet Gilbert-Elliott"),
        "{unsupported:?}"
    );
    assert!(starts("link[1].queue.weight: "), "{unsupported:?}");
    assert!(starts("link[1].reverse.queue.weight: "), "{unsupported:?}");
    assert!(starts("flow.g.target_rate: "), "{unsupported:?}");
    // The four Veno instances are reported on one line.
    let veno: Vec<&String> = unsupported
        .iter()
        .filter(|line| line.contains("veno_beta"))
        .collect();
    assert_eq!(veno.len(), 1, "{unsupported:?}");
    assert!(
        veno[0].starts_with("flow.v.{1…4}.veno_beta (4 flows): "),
        "{veno:?}"
    );
    assert_eq!(unsupported.len(), 7, "{unsupported:?}");
    // The unsupported losses are absent from the script; the trace link starts at its mean
    // rate over the run, and its schedule (a constant trace here) sets that rate at 0.
    assert!(!generated.tcl.contains("new ErrorModel"));
    assert!(generated
        .tcl
        .contains("$ns simplex-link $n(0) $n(1) 11998800 0.01"));
    assert!(generated.tcl.contains("# UNSUPPORTED flow.g.target_rate"));
}

#[test]
fn aggregate_marker_over_two_source_nodes_is_reported() {
    let generated = generate(&scenario(
        r#"
        name = "split"
        duration = "10s"
        [[link]]
        between = ["s1", "r"]
        rate = "10Mbps"
        delay = "1ms"
        [[link]]
        between = ["s2", "r"]
        rate = "10Mbps"
        delay = "1ms"
        [[link]]
        between = ["r", "d"]
        rate = "1Mbps"
        delay = "1ms"
        [[marker]]
        link = ["r", "d"]
        flows = ["x", "y"]
        rate = "500kbps"
        bucket = 5000
        [[flow]]
        name = "x"
        kind = "cbr"
        rate = "300kbps"
        from = "s1"
        to = "d"
        [[flow]]
        name = "y"
        kind = "cbr"
        rate = "300kbps"
        from = "s2"
        to = "d"
        "#,
    ))
    .expect("generates");
    assert!(
        generated
            .unsupported
            .iter()
            .any(|line| line.starts_with("marker[0].flows: ") && line.contains("2 buckets")),
        "{:?}",
        generated.unsupported
    );
    // Both flows' access nodes get a policy entry on the marked direction.
    assert_eq!(
        generated.tcl.matches("TokenBucket 10 500000 5000").count(),
        2
    );
}

#[test]
fn bad_inputs_are_errors_naming_the_key() {
    let tiny_tcp = scenario(
        r#"
        name = "tiny"
        duration = "10s"
        [[link]]
        between = ["a", "b"]
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "t"
        kind = "tcp"
        packet_size = 40
        from = "a"
        to = "b"
        "#,
    );
    match generate(&tiny_tcp) {
        Err(Ns2Error::Generate { key, message, .. }) => {
            assert_eq!(key, "flow[0].packet_size");
            assert!(message.contains("40 bytes"), "{message}");
        }
        other => panic!("expected a generation error, got {other:?}"),
    }

    let swept = scenario(
        r#"
        name = "swept"
        duration = "10s"
        [[link]]
        between = ["a", "b"]
        rate = "1Mbps"
        delay = "1ms"
        [sweep]
        "link.0.delay" = ["1ms", "2ms"]
        "#,
    );
    match generate(&swept) {
        Err(Ns2Error::Generate { key, .. }) => assert_eq!(key, "sweep"),
        other => panic!("expected a sweep error, got {other:?}"),
    }

    let missing_trace = scenario(
        r#"
        name = "missing"
        duration = "10s"
        [[link]]
        between = ["a", "b"]
        trace = "/nonexistent/down.trace"
        delay = "1ms"
        "#,
    );
    match generate(&missing_trace) {
        Err(error @ Ns2Error::Generate { .. }) => {
            let text = error.to_string();
            assert!(text.contains("link[0].trace"), "{text}");
            assert!(text.contains("/nonexistent/down.trace"), "{text}");
        }
        other => panic!("expected a trace error, got {other:?}"),
    }
}

#[test]
fn a_sweep_gives_one_directory_per_variant_in_a_dry_run() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let swept = scenario(
        r#"
        name = "swept"
        duration = "10s"
        [[link]]
        between = ["a", "b"]
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        kind = "tfrc"
        from = "a"
        to = "b"
        [sweep]
        "link.0.delay" = ["1ms", "2ms"]
        "#,
    );
    let options = RunOptions {
        dry_run: true,
        ns_path: "/nonexistent/ns".into(),
        ..RunOptions::default()
    };
    let outcomes = run_scenario(&swept, directory.path(), &options).expect("dry run");
    assert_eq!(outcomes.len(), 2);
    for (outcome, delay) in outcomes.iter().zip(["0.001", "0.002"]) {
        let script = std::fs::read_to_string(outcome.directory.join("ns2.tcl")).expect("script");
        assert!(
            script.contains(&format!("1000000 {delay} DropTail")),
            "{script}"
        );
        assert!(outcome.directory.join("ns2-unsupported.txt").exists());
        assert!(outcome.directory.join("scenario.toml").exists());
        assert!(outcome.wall_time.is_none());
    }
    assert!(directory.path().join("swept[delay=1ms]").is_dir());
}

#[test]
fn a_missing_ns_binary_is_a_clear_error() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let one = scenario(
        r#"
        name = "one"
        duration = "1s"
        [[link]]
        between = ["a", "b"]
        rate = "1Mbps"
        delay = "1ms"
        "#,
    );
    let options = RunOptions {
        ns_path: "/nonexistent/ns".into(),
        ..RunOptions::default()
    };
    let error = run_scenario(&one, directory.path(), &options).expect_err("no ns");
    assert!(
        error.to_string().contains("/nonexistent/ns") && error.to_string().contains("ns2"),
        "{error}"
    );
}

#[test]
fn a_failing_ns_binary_is_reported_with_its_status() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let one = scenario(
        r#"
        name = "one"
        duration = "1s"
        [[link]]
        between = ["a", "b"]
        rate = "1Mbps"
        delay = "1ms"
        "#,
    );
    let options = RunOptions {
        ns_path: "/bin/false".into(),
        ..RunOptions::default()
    };
    match run_scenario(&one, directory.path(), &options) {
        Err(error @ Ns2Error::NsFailed { .. }) => {
            assert!(error.to_string().contains("ns2.tcl"), "{error}");
            // The script is kept for inspection.
            assert!(directory.path().join("ns2.tcl").exists());
        }
        other => panic!("expected an ns-2 failure, got {other:?}"),
    }
}

const TWO_FLOWS: &str = r#"
name = "convert"
duration = "2.5s"
[[link]]
between = ["a", "b"]
rate = "1Mbps"
delay = "1ms"
[[flow]]
name = "t"
kind = "tfrc"
from = "a"
to = "b"
start = "1s"
[[flow]]
name = "c"
kind = "cbr"
rate = "100kbps"
from = "a"
to = "b"
"#;

#[test]
fn the_converter_turns_cumulative_samples_into_intervals() {
    let generated = generate(&scenario(TWO_FLOWS)).expect("generates");
    let layout = &generated.layout;
    assert_eq!(
        layout.flow_times,
        [
            Duration::from_secs(1),
            Duration::from_secs(2),
            Duration::from_millis(2500)
        ]
    );
    let mut output = String::from("ns-2 says hello\n");
    // cumulative: F k flow sent_packets sent_bytes recv_packets|- recv_bytes
    for (k, (tfrc, cbr)) in [
        ((0, 0), (13, 13)),
        ((100, 80), (26, 25)),
        ((150, 140), (32, 31)),
    ]
    .iter()
    .enumerate()
    {
        output.push_str(&format!(
            "F {k} 0 {} {} - {}\n",
            tfrc.0,
            tfrc.0 * 1000,
            tfrc.1 * 1000
        ));
        output.push_str(&format!(
            "F {k} 1 {} {} {} {}\n",
            cbr.0,
            cbr.0 * 1000,
            cbr.1,
            cbr.1 * 1000
        ));
        for d in 0..2 {
            output.push_str(&format!(
                "L {k} {d} 2000 2 {} {} {} 1 -\n",
                10 * (k + 1),
                9 * (k + 1),
                9000 * (k + 1)
            ));
        }
        output.push_str(&format!("S {k} 0 {}\n", 12500 * k));
    }
    // What ns-2's TFRC sink prints with printLoss_ 1 (its second line and the sample list
    // repeat the value or are something else).
    assert_eq!(tfrc_ns2::loss_rate_flow(&layout.flows), Some(0));
    let printed = "time: 1.50000 loss_rate: 0.01000 \n\
                   time: 1.50000 sample 0:   100 loss_rate: 0.01000 \n\
                   1.500000: sample 0:   100 1:    92 2:   216 3:    84 4:    37\n\
                   time: 2.20000 loss_rate: 0.02000 \n";
    let converted =
        convert_samples(layout, &output, printed, Path::new("output.txt")).expect("converts");
    // Written by the output schema's writer, as the simulator writes its files.
    let directory = tempfile::tempdir().unwrap();
    tfrc_ns2::write_outputs(&converted, directory.path()).unwrap();
    let read = |name: &str| std::fs::read_to_string(directory.path().join(name)).unwrap();
    let flows = read("flows.csv");
    let flows: Vec<&str> = flows.lines().collect();
    assert_eq!(flows[0], tfrc_output::header(tfrc_output::RowFile::Flows));
    assert_eq!(flows.len(), 1 + 3 * 2);
    assert_eq!(flows[1], "1,t,tfrc,0,0,0,0,0.000,0.000,0,0.000");
    // Goodput: 80 TFRC packets of 1000 B, each with ns-2's 32-byte header inside.
    assert_eq!(
        flows[3],
        "2,t,tfrc,100000,80000,100,80,800.000,640.000,77440,619.520"
    );
    // The last interval is 0.5 s long: 50 packets of 1000 B in 0.5 s = 800 kbit/s.
    assert_eq!(
        flows[5],
        "2.5,t,tfrc,50000,60000,50,60,800.000,960.000,58080,929.280"
    );
    // CBR packets carry no modelled header: their goodput is what arrived.
    assert_eq!(
        flows[6],
        "2.5,c,cbr,6000,6000,6,6,96.000,96.000,6000,96.000"
    );
    // State rows only while the TFRC flow exists (from 1 s), none for the CBR flow.
    let state = read("state.csv");
    let state: Vec<Vec<&str>> = state.lines().map(|row| row.split(',').collect()).collect();
    let state_times: Vec<&str> = state[1..].iter().map(|row| row[0]).collect();
    assert_eq!(state_times, ["1", "2", "2.5"]);
    assert_eq!(state[2][3], "100000.0");
    assert_eq!(state[2][9], "1");
    // p as printed at each state time: none yet at 1 s, 0.01 at 2 s, 0.02 at 2.5 s.
    let p_column = state[0].iter().position(|name| *name == "p").unwrap();
    let p: Vec<&str> = state[1..].iter().map(|row| row[p_column]).collect();
    assert_eq!(p, ["0", "0.01", "0.02"]);
    let links = read("links.csv");
    let links: Vec<Vec<&str>> = links.lines().map(|row| row.split(',').collect()).collect();
    assert_eq!(links.len(), 1 + 3 * 2);
    assert_eq!(links[3][6], "10"); // arrivals in the second interval
    assert_eq!(links[3][9], "0.0720"); // 9000 B in 1 s on 1 Mbit/s
    let summary: tfrc_output::Summary = serde_json::from_str(&read("summary.json")).unwrap();
    let tfrc = &summary.flows[0];
    assert_eq!(tfrc.recv_bytes, 140_000);
    assert_eq!(tfrc.recv_rate_bps, Some(140_000.0 * 8.0 / 1.5));
    assert_eq!(tfrc.goodput_bytes, 140 * 968);
    assert_eq!(tfrc.goodput_bps, Some(140.0 * 968.0 * 8.0 / 1.5));
    assert_eq!(summary.flows[1].receiving_ratio, Some(31.0 / 32.0));
    assert!(
        (tfrc.mean_p.unwrap() - 0.01).abs() < 1e-12,
        "{:?}",
        tfrc.mean_p
    );
    assert_eq!(summary.flows[1].mean_p, None);
    assert_eq!(
        summary.bottleneck.as_ref().and_then(|b| b.capacity_bps),
        Some(1_000_000.0)
    );
    assert_eq!(summary.schema_version, tfrc_output::SCHEMA_VERSION);
}

#[test]
fn malformed_or_missing_samples_are_errors() {
    let generated = generate(&scenario(TWO_FLOWS)).expect("generates");
    let bad = "F 0 0 x 0 - 0\n";
    let error =
        convert_samples(&generated.layout, bad, "", Path::new("out.txt")).expect_err("malformed");
    assert!(error.to_string().contains("out.txt:1"), "{error}");
    let out_of_range = "F 0 7 0 0 - 0\n";
    let error = convert_samples(&generated.layout, out_of_range, "", Path::new("out.txt"))
        .expect_err("flow index out of range");
    assert!(error.to_string().contains("flow index below 2"), "{error}");
    let truncated = "F 0 0 0 0 - 0\nF 0 1 0 0 0 0\n";
    let error = convert_samples(&generated.layout, truncated, "", Path::new("out.txt"))
        .expect_err("truncated");
    assert!(error.to_string().contains("did ns-2 stop early"), "{error}");
}

/// A trace-driven link follows the trace over time in 100 ms bins, never one constant mean:
/// 1 opportunity per 12 ms for 10 s (1 Mb/s), then 1 per 4 ms (3 Mb/s).
#[test]
fn a_trace_driven_link_changes_its_rate_over_time() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let trace = directory.path().join("step.trace");
    let mut times = Vec::new();
    let mut t = 0u64;
    while t < 10_000 {
        t += 12;
        times.push(t);
    }
    while t < 20_000 {
        t += 4;
        times.push(t);
    }
    let text: String = times.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&trace, text).expect("write trace");
    let scenario_text = format!(
        "name = \"step\"\nduration = \"20s\"\n[[link]]\nbetween = [\"a\", \"b\"]\ntrace = \"{}\"\n\
         delay = \"20ms\"\nreverse = {{ rate = \"10Mbps\" }}\n[[flow]]\nname = \"c\"\nkind = \"cbr\"\n\
         rate = \"2Mbps\"\nfrom = \"a\"\nto = \"b\"\n",
        trace.display()
    );
    let generated = generate(&scenario(&scenario_text)).expect("generates");
    let tcl = &generated.tcl;
    let change = |at: &str, rate: u64| {
        format!("$ns at {at} \"[[$ns link $n(0) $n(1)] link] set bandwidth_ {rate}\"")
    };
    // 8 opportunities in [0, 100) ms (12 … 96; the last line, 20000, is not at 0):
    // 8 x 12000 bit / 0.1 s.
    assert!(tcl.contains(&change("0", 960_000)), "{tcl}");
    // [10, 10.1) s: 10008 … 10096 ms, 23 opportunities; then 25 per bin.
    assert!(tcl.contains(&change("10", 2_760_000)), "{tcl}");
    assert!(tcl.contains(&change("10.1", 3_000_000)), "{tcl}");
    let changes = tcl.matches("set bandwidth_").count();
    assert!(changes >= 5, "{changes} rate changes");
    // Only the trace direction changes; the reverse keeps its constant 10 Mb/s.
    assert!(!tcl.contains("$n(1) $n(0)] link] set bandwidth_"));
    assert!(
        generated.unsupported[0].contains("in 100 ms bins"),
        "{:?}",
        generated.unsupported
    );
}

/// Bins without an opportunity share the next bin's (an ns-2 link cannot stop), so the bytes
/// the trace delivers are delivered within the same bins.
#[test]
fn empty_trace_bins_share_the_next_opportunities() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let trace = directory.path().join("gap.trace");
    // Period 350 ms: opportunities at 10, 20, 350, 360, 370 ms (the line 350 is one at 350,
    // 700, … but not at 0).
    std::fs::write(&trace, "10\n20\n350\n").expect("write trace");
    let text = format!(
        "name = \"gap\"\nduration = \"400ms\"\n[[link]]\nbetween = [\"a\", \"b\"]\ntrace = \"{}\"\n\
         delay = \"20ms\"\nreverse = {{ rate = \"10Mbps\" }}\n",
        trace.display()
    );
    let tcl = generate(&scenario(&text)).expect("generates").tcl;
    let line = |at: &str, rate: u64| {
        format!("$ns at {at} \"[[$ns link $n(0) $n(1)] link] set bandwidth_ {rate}\"")
    };
    // [0, 100): 2 opportunities; [100, 400): none until 350, 360, 370 → 3 over 300 ms.
    assert!(tcl.contains(&line("0", 240_000)), "{tcl}");
    assert!(tcl.contains(&line("0.1", 120_000)), "{tcl}");
    assert_eq!(tcl.matches("set bandwidth_").count(), 2, "{tcl}");
}

/// A flow marked upstream that crosses a second marked direction whose markers do not select it
/// loses its colour in ns-2 (dsRED re-marks by its own table); the generator says so, naming the
/// flow and both directions, and says nothing for the flow that the second marker selects.
#[test]
fn a_colour_lost_to_a_downstream_edge_is_reported() {
    let text = r#"
        name = "remark"
        duration = "10s"
        [[link]]
        between = ["s", "r"]
        rate = "10Mbps"
        delay = "1ms"
        [[link]]
        between = ["r", "d"]
        rate = "1Mbps"
        delay = "10ms"
        queue = { kind = "rio" }
        [[marker]]
        link = ["s", "r"]
        flows = ["up"]
        rate = "300kbps"
        bucket = 5000
        [[marker]]
        link = ["r", "d"]
        flows = ["down"]
        rate = "300kbps"
        bucket = 5000
        [[flow]]
        name = "up"
        kind = "tfrc"
        from = "s"
        to = "d"
        [[flow]]
        name = "down"
        kind = "tfrc"
        from = "s"
        to = "d"
    "#;
    let generated = generate(&scenario(text)).expect("generates");
    let lost: Vec<&String> = generated
        .notes
        .iter()
        .filter(|note| note.contains("re-marks"))
        .collect();
    assert_eq!(lost.len(), 1, "{:?}", generated.notes);
    assert!(lost[0].starts_with("flow.up:"), "{}", lost[0]);
    assert!(
        lost[0].contains("link[0]") && lost[0].contains("link[1]"),
        "{}",
        lost[0]
    );
}
