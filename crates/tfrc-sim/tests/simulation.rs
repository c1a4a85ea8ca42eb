//! Whole-scenario runs of the simulator: TFRC, TCP and UDP flows on small topologies, checked
//! against what the protocols must do, plus determinism and output-schema checks.

use std::path::Path;

use tfrc_output::{header, RowFile};
use tfrc_proto::equation;
use tfrc_scenario::Scenario;
use tfrc_sim::simulation::{Simulation, Summary};
use tfrc_test_support::DUMBBELL_1MBPS_50MS;

fn scenario(text: &str) -> Scenario {
    Scenario::from_str_named(text, "test.toml").expect("valid scenario")
}

fn run(text: &str) -> Summary {
    Simulation::run(&scenario(text), None).expect("simulation runs")
}

#[test]
fn tfrc_fills_an_unloaded_1mbps_50ms_link() {
    let summary = run(&format!(
        r#"name = "fill"
        duration = "60s"
        {DUMBBELL_1MBPS_50MS}
        [[flow]]
        name = "a"
        kind = "tfrc"
        from = "sender"
        to = "receiver""#
    ));
    let flow = &summary.flows[0];
    let utilization = summary.bottleneck.as_ref().unwrap().utilization.unwrap();
    assert!(
        flow.goodput_bps.unwrap() >= 900_000.0,
        "goodput {} b/s",
        flow.goodput_bps.unwrap()
    );
    assert!(utilization >= 0.9, "utilization {utilization}");
    assert_eq!(summary.bottleneck.as_ref().unwrap().from, "router");
    // The RTT it measures includes queueing but stays bounded by the 50-packet queue
    // (50 ms propagation + at most 400 ms of queue at 1 Mb/s).
    let rtt = flow.mean_rtt_s.unwrap();
    assert!((0.05..0.46).contains(&rtt), "mean RTT {rtt}");
    // Its one-way delay: at least the 25 ms of propagation, at most that plus a full 50-packet
    // queue (about 410 ms) and the serializations; the queue shows above the median.
    let (p50, p95, p99) = (
        flow.delay_p50_s.unwrap(),
        flow.delay_p95_s.unwrap(),
        flow.delay_p99_s.unwrap(),
    );
    assert!(p50 > 0.025 && p50 <= p95 && p95 <= p99, "{p50} {p95} {p99}");
    assert!(p99 < 0.025 + 0.41 + 0.02, "p99 {p99}");
    assert!(
        p99 > p50 * 1.05,
        "no queueing visible: p50 {p50}, p99 {p99}"
    );
}

#[test]
fn tfrc_tracks_the_equation_under_random_loss() {
    // No congestion: a 10 Mb/s path, RTT 100 ms, 1 % Bernoulli loss on the data direction.
    let summary = run(r#"name = "loss"
        duration = "300s"
        [[link]]
        between = ["sender", "receiver"]
        rate = "10Mbps"
        delay = "50ms"
        loss = { kind = "bernoulli", rate = 0.01 }
        [[flow]]
        name = "a"
        kind = "tfrc"
        from = "sender"
        to = "receiver"
        [output]
        state_interval = "100ms""#);
    let flow = &summary.flows[0];
    let p = flow.mean_p.unwrap();
    let rtt = flow.mean_rtt_s.unwrap();
    let expected_bits = equation::throughput(1000.0, rtt, p) * 8.0;
    let ratio = flow.send_rate_bps.unwrap() / expected_bits;
    assert!(
        (0.8..1.2).contains(&ratio),
        "send rate {} vs X(s, R, p) {expected_bits}: {ratio}",
        flow.send_rate_bps.unwrap()
    );
    // The loss event rate is about the loss rate (a bit below: losses within one RTT merge).
    assert!((0.005..0.012).contains(&p), "mean p {p}");
    let drop_ratio = 1.0 - flow.receiving_ratio.unwrap();
    assert!(
        (0.008..0.012).contains(&drop_ratio),
        "receiving ratio {:?}",
        flow.receiving_ratio
    );
}

#[test]
fn gtfrc_keeps_its_target_rate_under_loss() {
    let base = r#"
        duration = "120s"
        [[link]]
        between = ["sender", "receiver"]
        rate = "10Mbps"
        delay = "100ms"
        loss = { kind = "bernoulli", rate = 0.02 }
        [[flow]]
        name = "a"
        kind = "tfrc"
        from = "sender"
        to = "receiver"
    "#;
    let plain = run(&format!("name = \"plain\"\n{base}"));
    let guaranteed = run(&format!("name = \"g\"\n{base}\ntarget_rate = \"1Mbps\""));
    let plain_rate = plain.flows[0].send_rate_bps.unwrap();
    let guaranteed_rate = guaranteed.flows[0].send_rate_bps.unwrap();
    // TFRC at 2 % loss and 200 ms RTT gets about 0.3 Mb/s; gTFRC holds g = 1 Mb/s.
    assert!(plain_rate < 600_000.0, "TFRC {plain_rate}");
    assert!(guaranteed_rate >= 950_000.0, "gTFRC {guaranteed_rate}");
}

#[test]
fn tcp_flows_share_a_droptail_bottleneck_fairly() {
    let summary = run(r#"name = "tcp-fair"
        duration = "120s"
        [[link]]
        between = ["senders", "router"]
        rate = "100Mbps"
        delay = "1ms"
        [[link]]
        between = ["router", "receivers"]
        rate = "10Mbps"
        delay = "20ms"
        queue = { kind = "droptail", limit = 100 }
        [[flow]]
        name = "t"
        count = 4
        kind = "tcp"
        variant = "sack"
        from = "senders"
        to = "receivers""#);
    let jain = summary.jain_index.unwrap();
    assert!(jain >= 0.95, "Jain {jain}");
    let utilization = summary.bottleneck.unwrap().utilization.unwrap();
    assert!(utilization >= 0.9, "utilization {utilization}");
    assert_eq!(summary.flows.len(), 4);
}

#[test]
fn reno_window_saws_on_a_droptail_bottleneck() {
    let directory = tempfile::tempdir().unwrap();
    let scenario = scenario(&format!(
        r#"name = "reno"
        duration = "60s"
        {DUMBBELL_1MBPS_50MS}
        [[flow]]
        name = "r"
        kind = "tcp"
        variant = "reno"
        from = "sender"
        to = "receiver"
        [output]
        state_interval = "10ms""#
    ));
    Simulation::run(&scenario, Some(directory.path())).unwrap();
    let state = std::fs::read_to_string(directory.path().join("state.csv")).unwrap();
    let windows: Vec<f64> = state
        .lines()
        .skip(1)
        .map(|line| line.split(',').nth(11).unwrap().parse().unwrap())
        .collect();
    // Count halvings: the window falls to at most 60 % of its previous sample.
    let halvings = windows
        .windows(2)
        .filter(|pair| pair[1] <= pair[0] * 0.6 && pair[0] >= 8.0)
        .count();
    assert!(halvings >= 5, "{halvings} halvings in 60 s");
    // After the first slow start (which overshoots), the pipe (1 Mb/s × 50 ms ≈ 6 packets)
    // plus the 50-packet queue bounds the window: losses come at about 56 packets.
    let later_peak = windows[1000..].iter().cloned().fold(0.0, f64::max);
    assert!(
        (45.0..=70.0).contains(&later_peak),
        "peak window after 10 s {later_peak}"
    );
}

#[test]
fn udp_sources_send_at_their_rate_and_take_their_share() {
    let summary = run(&format!(
        r#"name = "udp"
        duration = "60s"
        {DUMBBELL_1MBPS_50MS}
        [[flow]]
        name = "a"
        kind = "tfrc"
        from = "sender"
        to = "receiver"
        [[flow]]
        name = "u"
        kind = "cbr"
        rate = "500kbps"
        from = "sender"
        to = "receiver"
        start = "20s"
        stop = "40s""#
    ));
    let cbr = &summary.flows[1];
    assert_eq!(
        cbr.sent_packets, 1250,
        "20 s at 500 kb/s of 1000-byte packets"
    );
    assert!((cbr.send_rate_bps.unwrap() - 500_000.0).abs() < 1.0);
    assert_eq!(cbr.start_s, 20.0);
    assert_eq!(cbr.stop_s, 40.0);
    // Together they keep the link busy.
    assert!(summary.bottleneck.unwrap().utilization.unwrap() > 0.9);
}

#[test]
fn flows_in_both_directions_and_asymmetric_links() {
    // A fast downlink and a slow uplink with its own rate and queue.
    let link = r#"
        duration = "60s"
        [[link]]
        between = ["a", "b"]
        delay = "20ms"
        forward = { rate = "2Mbps" }
        reverse = { rate = "500kbps", queue = { kind = "droptail", limit = 20 } }
    "#;
    let down = r#"
        [[flow]]
        name = "down"
        kind = "tfrc"
        from = "a"
        to = "b"
    "#;
    let up = r#"
        [[flow]]
        name = "up"
        kind = "tfrc"
        from = "b"
        to = "a"
    "#;
    let down_alone = run(&format!("name = \"down\"\n{link}{down}")).flows[0]
        .goodput_bps
        .unwrap();
    let up_alone = run(&format!("name = \"up\"\n{link}{up}")).flows[0]
        .goodput_bps
        .unwrap();
    let both = run(&format!("name = \"both\"\n{link}{down}{up}"));
    assert!(
        (1_800_000.0..2_000_001.0).contains(&down_alone),
        "down alone {down_alone}"
    );
    assert!(
        (400_000.0..500_001.0).contains(&up_alone),
        "up alone {up_alone}"
    );
    // With the uplink full, the downlink flow's feedback queues behind the uplink flow's data
    // and the downlink flow slows down (paper 004's reverse-traffic effect).
    let down_with_up = both.flows[0].goodput_bps.unwrap();
    assert!(
        down_with_up < 0.9 * down_alone,
        "down {down_with_up} vs alone {down_alone}"
    );
    assert!(both.flows[1].goodput_bps.unwrap() > 300_000.0, "{both:?}");
}

#[test]
fn a_flow_without_a_route_is_an_error_naming_it() {
    let text = r#"name = "islands"
        duration = "10s"
        [[link]]
        between = ["a", "b"]
        rate = "1Mbps"
        delay = "1ms"
        [[link]]
        between = ["c", "d"]
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "lost"
        kind = "tfrc"
        from = "a"
        to = "d""#;
    let message = Scenario::from_str_named(text, "islands.toml")
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("islands.toml") && message.contains("flow[0].to"),
        "{message}"
    );
    assert!(message.contains("no path"), "{message}");
}

#[test]
fn a_scenario_with_a_sweep_must_be_expanded_first() {
    let sweep = scenario(&format!(
        r#"name = "sweep"
        duration = "60s"
        {DUMBBELL_1MBPS_50MS}
        [[flow]]
        name = "a"
        kind = "tfrc"
        from = "sender"
        to = "receiver"
        [sweep]
        "link.1.delay" = ["24ms", "49ms"]"#
    ));
    assert!(Simulation::new(&sweep, None)
        .unwrap_err()
        .to_string()
        .contains("sweep"));
    let variants = sweep.expand().unwrap();
    let rates: Vec<f64> = variants
        .iter()
        .map(|variant| {
            Simulation::run(variant, None).unwrap().flows[0]
                .goodput_bps
                .unwrap()
        })
        .collect();
    assert_eq!(rates.len(), 2);
}

const MIXED: &str = r#"
    name = "mixed"
    duration = "30s"
    seed = 7
    [[link]]
    between = ["s", "r"]
    rate = "100Mbps"
    delay = "1ms"
    [[link]]
    between = ["r", "d"]
    rate = "2Mbps"
    delay = "20ms"
    queue = { kind = "red", limit = 50 }
    loss = { kind = "gilbert-elliott", p_good_to_bad = 0.01, p_bad_to_good = 0.3 }
    [[flow]]
    name = "a"
    kind = "tfrc"
    from = "s"
    to = "d"
    [[flow]]
    name = "t"
    kind = "tcp"
    from = "s"
    to = "d"
    [[flow]]
    name = "p"
    kind = "pareto"
    rate = "500kbps"
    packet_size = 512
    burst = "100ms"
    idle = "100ms"
    from = "s"
    to = "d"
    [output]
    interval = "500ms"
"#;

fn run_into(text: &str, directory: &Path) {
    Simulation::run(&scenario(text), Some(directory)).unwrap();
}

#[test]
fn the_same_seed_gives_byte_identical_files_and_another_seed_differs() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let third = tempfile::tempdir().unwrap();
    run_into(MIXED, first.path());
    run_into(MIXED, second.path());
    run_into(&MIXED.replace("seed = 7", "seed = 8"), third.path());
    for file in [
        "flows.csv",
        "state.csv",
        "links.csv",
        "summary.json",
        "scenario.toml",
    ] {
        let a = std::fs::read(first.path().join(file)).unwrap();
        let b = std::fs::read(second.path().join(file)).unwrap();
        assert!(a.len() > 100, "{file} is too short");
        assert_eq!(a, b, "{file} differs between two runs with the same seed");
    }
    let a = std::fs::read(first.path().join("flows.csv")).unwrap();
    let c = std::fs::read(third.path().join("flows.csv")).unwrap();
    assert_ne!(a, c, "seed 8 gave the same flows.csv as seed 7");
    let summary = std::fs::read_to_string(first.path().join("summary.json")).unwrap();
    assert!(summary.contains("\"seed\": 7"), "{summary}");
}

#[test]
fn output_files_follow_the_documented_schema() {
    let directory = tempfile::tempdir().unwrap();
    run_into(MIXED, directory.path());
    let read = |name: &str| std::fs::read_to_string(directory.path().join(name)).unwrap();
    let flows = read("flows.csv");
    let mut lines = flows.lines();
    assert_eq!(lines.next(), Some(header(RowFile::Flows)));
    // 30 s in 0.5 s intervals, 3 flows.
    assert_eq!(lines.clone().count(), 60 * 3);
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(first[..3], ["0.5", "a", "tfrc"]);
    assert_eq!(
        read("state.csv").lines().next(),
        Some(header(RowFile::State))
    );
    // State rows: TFRC and TCP only, every 0.5 s.
    assert_eq!(read("state.csv").lines().count() - 1, 60 * 2);
    let links = read("links.csv");
    assert_eq!(links.lines().next(), Some(header(RowFile::Links)));
    assert_eq!(links.lines().count() - 1, 60 * 4);
    // The sums of flows.csv match the summary.
    let summary: serde_json::Value = serde_json::from_str(&read("summary.json")).unwrap();
    let recv_total: u64 = flows
        .lines()
        .skip(1)
        .filter(|line| line.split(',').nth(1) == Some("p"))
        .map(|line| line.split(',').nth(4).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(summary["flows"][2]["recv_bytes"].as_u64(), Some(recv_total));
    assert_eq!(summary["schema_version"], tfrc_output::SCHEMA_VERSION);
    // Every column is documented in docs/output-format.md.
    let documentation = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/output-format.md"),
    )
    .unwrap();
    for column in header(RowFile::Flows)
        .split(',')
        .chain(header(RowFile::State).split(','))
        .chain(header(RowFile::Links).split(','))
    {
        assert!(
            documentation.contains(&format!("`{column}`")),
            "column {column} is not documented"
        );
    }
}

#[test]
fn token_bucket_marks_and_rio_protects_the_in_profile_flow() {
    // Two CBR flows of 600 kb/s each into a 1 Mb/s RIO bottleneck; "a" is marked with a
    // 500 kb/s profile, "b" is not marked (out of profile). RIO drops b's packets first.
    let directory = tempfile::tempdir().unwrap();
    run_into(
        r#"name = "af"
        duration = "60s"
        [[link]]
        between = ["hosts", "edge"]
        rate = "100Mbps"
        delay = "1ms"
        [[link]]
        between = ["edge", "sink"]
        rate = "1Mbps"
        delay = "10ms"
        queue = { kind = "rio", limit = 50, min_out = 10, max_out = 20, p_out = 0.1, min_in = 20, max_in = 40, p_in = 0.02 }
        [[marker]]
        link = ["hosts", "edge"]
        flows = ["a"]
        rate = "500kbps"
        bucket = 10000
        [[flow]]
        name = "a"
        kind = "cbr"
        rate = "600kbps"
        from = "hosts"
        to = "sink"
        [[flow]]
        name = "b"
        kind = "cbr"
        rate = "600kbps"
        from = "hosts"
        to = "sink""#,
        directory.path(),
    );
    let summary: Summary = serde_json::from_str(
        &std::fs::read_to_string(directory.path().join("summary.json")).unwrap(),
    )
    .unwrap();
    let a = summary.flows[0].goodput_bps.unwrap();
    let b = summary.flows[1].goodput_bps.unwrap();
    // a keeps at least its 500 kb/s profile; b gets what is left of 1 Mb/s.
    assert!(a >= 500_000.0, "a {a}");
    assert!(b <= 500_000.0, "b {b}");
    // The marker coloured about 5/6 of a's packets in profile.
    let links = std::fs::read_to_string(directory.path().join("links.csv")).unwrap();
    let (mut marked_in, mut marked_out) = (0u64, 0u64);
    for line in links.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        if cells[1] == "hosts" {
            marked_in += cells[15].parse::<u64>().unwrap();
            marked_out += cells[16].parse::<u64>().unwrap();
        }
    }
    let fraction = marked_in as f64 / (marked_in + marked_out) as f64;
    assert!(
        (0.8..0.87).contains(&fraction),
        "in-profile fraction {fraction}"
    );
}

#[test]
fn a_trace_driven_link_delivers_what_the_trace_allows() {
    // One 1500-byte opportunity every 10 ms: 100 full-size packets/s whatever the offered load.
    let directory = tempfile::tempdir().unwrap();
    let trace = directory.path().join("every10ms.trace");
    let lines: String = (1..=100).map(|ms| format!("{}\n", ms * 10)).collect();
    std::fs::write(&trace, lines).unwrap();
    let text = format!(
        r#"name = "trace"
        duration = "30s"
        [[link]]
        between = ["a", "b"]
        delay = "10ms"
        forward = {{ trace = "{}" }}
        reverse = {{ rate = "10Mbps" }}
        [[flow]]
        name = "u"
        kind = "cbr"
        rate = "2Mbps"
        packet_size = 1500
        from = "a"
        to = "b""#,
        trace.display()
    );
    let summary = run(&text);
    let packets = summary.flows[0].recv_packets;
    // 30 s × 100 opportunities/s, less the last propagation delay.
    assert!((2990..=3000).contains(&packets), "{packets} packets");
    assert_eq!(summary.bottleneck.as_ref().unwrap().capacity_bps, None);
}

/// Mahimahi's rule (`LinkQueue`, `link_queue.cc`): each trace line is a 1500-byte delivery
/// opportunity that queued packets share. A constant 12 Mb/s trace (one line per ms) then
/// carries a 10 Mb/s CBR flow whole with 200-byte and with 1000-byte packets; the other rule
/// (`trace_opportunity = "packet"`) gives 1000 packets/s whatever their size.
#[test]
fn trace_links_share_each_opportunity_s_1500_bytes_as_mahimahi_does() {
    let directory = tempfile::tempdir().unwrap();
    let trace = directory.path().join("constant12.trace");
    let lines: String = (1..=1000).map(|ms| format!("{ms}\n")).collect();
    std::fs::write(&trace, lines).unwrap();
    let delivered_mbps = |packet_size: u32, opportunity: &str| {
        let summary = run(&format!(
            r#"name = "mahimahi"
            duration = "20s"
            [[link]]
            between = ["a", "b"]
            delay = "10ms"
            forward = {{ trace = "{}", {opportunity} queue = {{ kind = "droptail", limit = 1000 }} }}
            reverse = {{ rate = "12Mbps" }}
            [[flow]]
            name = "c"
            kind = "cbr"
            rate = "10Mbps"
            packet_size = {packet_size}
            from = "a"
            to = "b""#,
            trace.display()
        ));
        let flow = &summary.flows[0];
        (
            flow.recv_bytes as f64 * 8.0 / 20e6,
            flow.recv_bytes as f64 / flow.sent_bytes as f64,
        )
    };
    for size in [200, 1000] {
        let (mbps, share) = delivered_mbps(size, "");
        assert!(
            share >= 0.99,
            "{size} B, shared bytes: {mbps} Mb/s, {share} of sent"
        );
    }
    // One packet per opportunity: 1000 packets/s, 1.6 Mb/s of 200-byte packets, 8 Mb/s of
    // 1000-byte ones (less the queue still held at the end).
    let (small, _) = delivered_mbps(200, "trace_opportunity = \"packet\",");
    assert!((1.55..=1.61).contains(&small), "{small} Mb/s");
    let (large, _) = delivered_mbps(1000, "trace_opportunity = \"packet\",");
    assert!((7.9..=8.01).contains(&large), "{large} Mb/s");
}

#[test]
fn tcp_under_random_loss_is_close_to_the_padhye_model() {
    // 1 % Bernoulli loss, RTT 100 ms, no congestion: the Padhye et al. model (b = 1, the
    // receiver acknowledges every packet; t_RTO = 4R as in RFC 5348's use of it).
    for variant in ["reno", "sack"] {
        let summary = run(&format!(
            r#"name = "padhye"
            duration = "300s"
            [[link]]
            between = ["sender", "receiver"]
            rate = "100Mbps"
            delay = "50ms"
            queue = {{ kind = "droptail", limit = 1000 }}
            loss = {{ kind = "bernoulli", rate = 0.01 }}
            [[flow]]
            name = "t"
            kind = "tcp"
            variant = "{variant}"
            from = "sender"
            to = "receiver"
            [output]
            state_interval = "100ms""#
        ));
        let flow = &summary.flows[0];
        let rtt = flow.mean_rtt_s.unwrap();
        let model = equation::throughput(1000.0, rtt, 0.01) * 8.0;
        let ratio = flow.send_rate_bps.unwrap() / model;
        assert!(
            (0.75..1.25).contains(&ratio),
            "{variant}: {} b/s vs model {model}: {ratio}",
            flow.send_rate_bps.unwrap()
        );
    }
}

#[test]
fn the_ns2_profile_runs_in_the_simulator_with_ns2_packet_sizes() {
    let text = |profile: &str| {
        format!(
            r#"name = "profile"
            duration = "60s"
        {DUMBBELL_1MBPS_50MS}
            [[flow]]
            name = "a"
            kind = "tfrc"
            profile = "{profile}"
            from = "sender"
            to = "receiver""#
        )
    };
    let ns2 = run(&text("ns2"));
    let rfc = run(&text("rfc5348"));
    let flow = &ns2.flows[0];
    // The scenario's packet_size counts headers under both profiles: 1000 bytes on the wire
    // (s = 968 under RFC 5348 §3.1, s = 1000 under ns-2's `useHeaders_ false`).
    assert_eq!(flow.sent_bytes, flow.sent_packets * 1000);
    assert_eq!(rfc.flows[0].sent_bytes, rfc.flows[0].sent_packets * 1000);
    assert!(
        flow.goodput_bps.unwrap() >= 900_000.0,
        "ns2 profile goodput {}",
        flow.goodput_bps.unwrap()
    );
}

/// A TCP flow with `profile = "ns2"` opens with ns-2's SYN: one 40-byte packet and a round
/// trip (at least 50 ms here) before the initial window, then the same bulk transfer. Both
/// profiles send full-size data packets, so sent bytes differ by the SYN's 40 alone over a
/// 1-second run that is still in slow start.
#[test]
fn a_tcp_flow_in_the_ns2_profile_opens_with_a_syn_round_trip() {
    let text = |profile: &str, duration: &str| {
        format!(
            r#"name = "tcp-profile"
            duration = "{duration}"
        {DUMBBELL_1MBPS_50MS}
            [[flow]]
            name = "t"
            kind = "tcp"
            profile = "{profile}"
            from = "sender"
            to = "receiver""#
        )
    };
    // Within the first round trip the RFC profile's initial window (2 × 1000 bytes) is out; the
    // ns2 profile's SYN (40 bytes) alone.
    let rfc = run(&text("rfc", "40ms"));
    let ns2 = run(&text("ns2", "40ms"));
    assert_eq!(
        (rfc.flows[0].sent_packets, rfc.flows[0].sent_bytes),
        (2, 2000)
    );
    assert_eq!(
        (ns2.flows[0].sent_packets, ns2.flows[0].sent_bytes),
        (1, 40)
    );
    // Over a long run both fill the link; the SYN's packet carries no payload.
    let rfc = run(&text("rfc", "60s"));
    let ns2 = run(&text("ns2", "60s"));
    for flow in [&rfc.flows[0], &ns2.flows[0]] {
        assert!(flow.goodput_bps.unwrap() >= 900_000.0, "{flow:?}");
    }
    let ns2 = &ns2.flows[0];
    assert_eq!(ns2.sent_bytes, (ns2.sent_packets - 1) * 1000 + 40);
}

/// gTFRC whose feedback is lost from 20 s to 50 s (paper 000's flow, g = 800 kb/s, on 2 Mb/s):
/// the no-feedback timer brings G down as it brings TFRC's X down, far below g by 40-50 s, and
/// once feedback is back the floor g holds again.
#[test]
fn gtfrc_backs_off_without_feedback_and_recovers_its_floor_with_it() {
    let mut simulation = Simulation::new(
        &scenario(
            r#"name = "gtfrc-outage"
            duration = "70s"
            [[link]]
            between = ["a", "b"]
            delay = "50ms"
            forward = { rate = "2Mbps", queue = { kind = "droptail", limit = 30 } }
            reverse = { rate = "2Mbps", queue = { kind = "droptail", limit = 30 }, loss = { kind = "bernoulli", rate = 1.0, start = "20s", stop = "50s" } }
            [[flow]]
            name = "g"
            kind = "tfrc"
            from = "a"
            to = "b"
            packet_size = 1000
            target_rate = "800kbps""#,
        ),
        None,
    )
    .expect("scenario builds");
    simulation.keep_rows();
    let (_, rows) = simulation.finish_with_rows().expect("simulation runs");
    let mean_kbps = |from: f64, to: f64| {
        let rates: Vec<f64> = rows
            .flows
            .iter()
            .filter(|row| row.time_s > from && row.time_s <= to)
            .map(|row| row.send_kbps)
            .collect();
        rates.iter().sum::<f64>() / rates.len() as f64
    };
    assert!(
        mean_kbps(10.0, 20.0) >= 800.0,
        "{} kb/s before",
        mean_kbps(10.0, 20.0)
    );
    assert!(
        mean_kbps(40.0, 50.0) <= 10.0,
        "{} kb/s without feedback",
        mean_kbps(40.0, 50.0)
    );
    assert!(
        mean_kbps(60.0, 70.0) >= 800.0,
        "{} kb/s after",
        mean_kbps(60.0, 70.0)
    );
}

/// The summary counts the feedbacks a TFRC receiver sent, so a nominal count can be checked
/// against what the run did: 1 and a fixed 4 per RTT on an uncongested 100 ms path.
#[test]
fn summaries_count_tfrc_feedbacks_per_rtt() {
    for nominal in [1, 4] {
        let summary = run(&format!(
            r#"name = "feedbacks"
            duration = "60s"
            [[link]]
            between = ["a", "b"]
            rate = "10Mbps"
            delay = "50ms"
            [[flow]]
            name = "f"
            kind = "tfrc"
            from = "a"
            to = "b"
            feedbacks_per_rtt = {nominal}"#
        ));
        let flow = &summary.flows[0];
        assert!(flow.feedbacks.is_some_and(|count| count > 0));
        let measured = flow.feedbacks_per_rtt().unwrap();
        assert!(
            (measured - f64::from(nominal)).abs() <= 0.1 * f64::from(nominal),
            "nominal {nominal}: {measured} feedbacks per RTT"
        );
    }
}

/// Goodput is what the application got (paper 004 measured "received goodput" with iperf):
/// a TCP sink's in-order payload, duplicates and headers excluded; the payload of distinct TFRC
/// packets (s = packet_size − 32); a CBR packet whole. Received bytes stay their own figure.
#[test]
fn goodput_counts_the_payload_the_application_got() {
    let scenario = scenario(
        r#"name = "goodput"
        duration = "60s"
        [[link]]
        between = ["sender", "router"]
        rate = "100Mbps"
        delay = "1ms"
        [[link]]
        between = ["router", "receiver"]
        rate = "2Mbps"
        delay = "24ms"
        loss = { kind = "bernoulli", rate = 0.02 }
        [[flow]]
        name = "tcp"
        kind = "tcp"
        from = "sender"
        to = "receiver"
        [[flow]]
        name = "tfrc"
        kind = "tfrc"
        from = "sender"
        to = "receiver"
        [[flow]]
        name = "cbr"
        kind = "cbr"
        rate = "100kbps"
        from = "sender"
        to = "receiver""#,
    );
    let mut simulation = Simulation::new(&scenario, None).unwrap();
    simulation.keep_rows();
    let (summary, rows) = simulation.finish_with_rows().unwrap();
    for flow in &summary.flows {
        let interval_sum: u64 = rows
            .flows
            .iter()
            .filter(|row| row.flow == flow.name)
            .map(|row| row.goodput_bytes)
            .sum();
        assert_eq!(interval_sum, flow.goodput_bytes, "{}", flow.name);
        let active = flow.stop_s - flow.start_s;
        assert_eq!(
            flow.goodput_bps,
            Some(flow.goodput_bytes as f64 * 8.0 / active)
        );
        assert_eq!(
            flow.recv_rate_bps,
            Some(flow.recv_bytes as f64 * 8.0 / active)
        );
    }
    let [tcp, tfrc, cbr] = &summary.flows[..] else {
        panic!("three flows");
    };
    // TCP: whole 960-byte segments (1000 less the 40-byte header), at most one per segment
    // that arrived (a duplicate counts once; segments after a hole wait for it).
    assert_eq!(tcp.goodput_bytes % 960, 0);
    assert!(tcp.goodput_bytes <= tcp.recv_packets * 960, "{tcp:?}");
    assert!(tcp.goodput_bytes < tcp.recv_bytes, "{tcp:?}");
    assert!(
        tcp.goodput_bytes > tcp.recv_packets * 960 * 9 / 10,
        "{tcp:?}"
    );
    // TFRC: every distinct packet carries s = 968 bytes of payload.
    assert_eq!(tfrc.goodput_bytes, tfrc.recv_packets * 968, "{tfrc:?}");
    assert_eq!(tfrc.recv_bytes, tfrc.recv_packets * 1000, "{tfrc:?}");
    // CBR: the whole packet.
    assert_eq!(cbr.goodput_bytes, cbr.recv_bytes);
    assert!(cbr.goodput_bytes > 0);
}

/// A TCP flow's summary counts its retransmissions and timeouts: a data packet the link lost
/// is sent again, so retransmissions are about the losses (fewer by the losses of the last
/// round trips, which the run ends before repairing; more when a timeout resends packets that
/// were not lost), and there are no more timeouts than retransmissions. Other kinds leave both
/// empty.
#[test]
fn tcp_summaries_count_retransmissions_and_timeouts() {
    let summary = run(r#"name = "retransmissions"
        duration = "60s"
        [[link]]
        between = ["sender", "receiver"]
        rate = "2Mbps"
        delay = "25ms"
        loss = { kind = "bernoulli", rate = 0.02 }
        [[flow]]
        name = "tcp"
        kind = "tcp"
        from = "sender"
        to = "receiver"
        [[flow]]
        name = "tfrc"
        kind = "tfrc"
        from = "sender"
        to = "receiver""#);
    let tcp = summary.flows.iter().find(|f| f.name == "tcp").unwrap();
    let lost = tcp.sent_packets - tcp.recv_packets;
    let retransmissions = tcp.retransmissions.unwrap();
    let timeouts = tcp.timeouts.unwrap();
    assert!(
        lost > 20,
        "2 % of {} packets: {lost} lost",
        tcp.sent_packets
    );
    assert!(
        (lost * 9 / 10..=2 * lost).contains(&retransmissions),
        "{retransmissions} retransmissions for {lost} losses"
    );
    assert!(timeouts <= retransmissions, "{timeouts} timeouts");
    let tfrc = summary.flows.iter().find(|f| f.name == "tfrc").unwrap();
    assert_eq!((tfrc.retransmissions, tfrc.timeouts), (None, None));
}

/// One-way delay percentiles in summary.json: a CBR flow alone on a link has no queue, so every
/// packet takes serialization plus propagation (8 ms + 10 ms for 1000 bytes at 1 Mb/s). (A TFRC
/// flow that fills a queue: `tfrc_fills_an_unloaded_1mbps_50ms_link`.)
#[test]
fn summaries_give_one_way_delay_percentiles() {
    let summary = run(r#"name = "delay"
        duration = "20s"
        [[link]]
        between = ["a", "b"]
        rate = "1Mbps"
        delay = "10ms"
        [[flow]]
        name = "cbr"
        kind = "cbr"
        rate = "400kbps"
        packet_size = 1000
        from = "a"
        to = "b""#);
    let flow = &summary.flows[0];
    for (name, value) in [
        ("p50", flow.delay_p50_s),
        ("p95", flow.delay_p95_s),
        ("p99", flow.delay_p99_s),
    ] {
        let value = value.expect("a delay percentile");
        // The histogram's buckets are about 3 % wide.
        assert!(
            (value / 0.018 - 1.0).abs() < 0.03,
            "{name} {value} s, expected 18 ms"
        );
    }
}

/// Today's TCPs in the simulator: `variant = "cubic"` and `"bbr"` run, share a DropTail
/// bottleneck, record their state, and a run is reproducible from its seed.
#[test]
fn cubic_and_bbr_run_share_the_bottleneck_and_repeat_from_their_seed() {
    let text = r#"name = "modern"
        duration = "40s"
        seed = 3
        [[link]]
        between = ["senders", "router"]
        rate = "100Mbps"
        delay = "1ms"
        [[link]]
        between = ["router", "receivers"]
        rate = "10Mbps"
        delay = "20ms"
        queue = { kind = "droptail", limit = 50 }
        [[flow]]
        name = "cubic"
        count = 2
        kind = "tcp"
        variant = "cubic"
        from = "senders"
        to = "receivers"
        [[flow]]
        name = "bbr"
        count = 2
        kind = "tcp"
        variant = "bbr"
        from = "senders"
        to = "receivers""#;
    let summary = run(text);
    let utilization = summary.bottleneck.as_ref().unwrap().utilization.unwrap();
    let goodputs: Vec<(String, f64)> = summary
        .flows
        .iter()
        .map(|flow| (flow.name.clone(), flow.goodput_bps.unwrap()))
        .collect();
    eprintln!("cubic + bbr: utilization {utilization:.3}, goodputs {goodputs:?}");
    assert!(utilization > 0.9, "utilization {utilization}");
    for (name, goodput) in &goodputs {
        assert!(*goodput > 0.0, "{name}: {goodput}");
    }
    // With a buffer of about one BDP, BBR takes more than CUBIC (Hock, Bless and Zitterbart,
    // "Experimental evaluation of BBR congestion control", ICNP 2017: BBR dominates loss-based
    // TCP in shallow buffers).
    let class = |prefix: &str| -> f64 {
        goodputs
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(_, goodput)| goodput)
            .sum()
    };
    assert!(class("bbr") > class("cubic"));
    // Same seed, same run; the two BBR flows' seeds differ from each other by flow.
    assert_eq!(run(text), summary);
}
