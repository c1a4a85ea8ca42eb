//! The run description and the converter, without ns-3: what a scenario becomes in
//! `ns3-run.txt`, what is listed as unsupported, and which rows a small sample text gives.

use std::path::Path;

use tfrc_ns3::{convert_samples, describe, describe_with, BbrModel, Ns3Error};
use tfrc_scenario::Scenario;

fn scenario(text: &str) -> Scenario {
    Scenario::from_str_named(text, "test.toml").expect("valid scenario")
}

/// A dumbbell: two senders, two receivers, a 10 Mb/s bottleneck with asymmetric queues, a
/// CUBIC, a BBR, a delayed-ACK Reno flow with a window, a CBR and a TFRC flow.
const DUMBBELL: &str = r#"
name = "dumbbell"
duration = "10s"
seed = 7

[[link]]
between = ["s1", "r1"]
rate = "100Mbps"
delay = "1ms"

[[link]]
between = ["s2", "r1"]
rate = "100Mbps"
delay = "1ms"

[[link]]
between = ["r1", "r2"]
rate = "10Mbps"
delay = "8ms"
queue = { kind = "droptail", limit = 40 }
reverse = { rate = "5Mbps", queue = { kind = "red", limit = 60, min_th = 5.0, max_th = 15.0, max_p = 0.1, weight = 0.002 } }

[[link]]
between = ["r2", "d1"]
rate = "100Mbps"
delay = "1ms"
loss = { kind = "bernoulli", rate = 0.01, start = "2s" }

[[link]]
between = ["r2", "d2"]
rate = "100Mbps"
delay = "1ms"

[[flow]]
name = "cubic"
kind = "tcp"
variant = "cubic"
from = "s1"
to = "d1"

[[flow]]
name = "bbr"
kind = "tcp"
variant = "bbr"
from = "s2"
to = "d2"
start = "1s"
stop = "8s"

[[flow]]
name = "reno"
kind = "tcp"
variant = "reno"
delayed_ack = true
window = 20
packet_size = 1500
from = "s1"
to = "d2"

[[flow]]
name = "u"
kind = "cbr"
rate = "1Mbps"
from = "s2"
to = "d1"

[[flow]]
name = "t"
kind = "tfrc"
from = "s1"
to = "d1"
"#;

fn lines_starting<'a>(text: &'a str, tag: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|line| line.starts_with(&format!("{tag} ")))
        .collect()
}

#[test]
fn a_dumbbell_lists_both_directions_of_every_link_with_rate_delay_and_queue() {
    let described = describe(&scenario(DUMBBELL)).expect("describes");
    let text = &described.description;
    assert!(text.contains("\nseed 7\n"), "{text}");
    assert!(text.contains("\nduration_ns 10000000000\n"));
    assert!(text.contains("\nnodes 6\n"));
    assert!(!text.contains("\nlink "), "directions only");
    let directions = lines_starting(text, "direction");
    assert_eq!(directions.len(), 10, "two per link");
    // Nodes in order of first appearance: s1 r1 s2 r2 d1 d2. Direction 4 is r1 -> r2.
    assert_eq!(
        directions[0],
        "direction 0 1 100000000 1000000 0 0 0 droptail 50"
    );
    assert_eq!(
        directions[4],
        "direction 1 3 10000000 8000000 0 0 0 droptail 40"
    );
    assert_eq!(
        directions[5],
        "direction 3 1 5000000 8000000 0 0 0 red 60 5 15 0.1 0.002 0 500"
    );
    // Loss on the forward direction r2 -> d1 only, from 2 s on.
    assert_eq!(
        directions[6],
        "direction 3 4 100000000 1000000 0.01 2000000000 0 droptail 50"
    );
    assert_eq!(
        directions[7],
        "direction 4 3 100000000 1000000 0 0 0 droptail 50"
    );
    let layout = &described.layout;
    assert_eq!(layout.directions.len(), 10);
    assert_eq!(
        (
            layout.directions[5].from.as_str(),
            layout.directions[5].to.as_str()
        ),
        ("r2", "r1")
    );
    assert_eq!(layout.directions[5].capacity_bps, 5_000_000);
    assert_eq!(layout.flow_times.len(), 10);
}

#[test]
fn tcp_flows_carry_variant_window_and_ack_policy_and_routes_follow_the_route_function() {
    let described = describe(&scenario(DUMBBELL)).expect("describes");
    let flows = lines_starting(&described.description, "flow");
    assert_eq!(
        flows,
        [
            // kind from to destination-direction start stop size congestion IW delack window sack
            "flow tcp 0 4 6 0 10000000000 1000 ns3::TcpCubic 10 0 0 1",
            "flow tcp 2 5 8 1000000000 8000000000 1000 ns3::TfrcTcpBbrUpstreamFixes 10 0 0 1",
            "flow tcp 0 5 8 0 10000000000 1500 ns3::TcpLinuxReno 2 1 20 0",
            "flow cbr 2 4 6 0 10000000000 1000 1000000",
        ]
    );
    let routes = lines_starting(&described.description, "route");
    // The cubic flow s1 -> d1: data over directions 0, 4, 6 to d1's end of 6; ACKs back over
    // 7, 5, 1 to s1's end of 0.
    for expected in [
        "route 0 6 1 0",
        "route 1 6 1 4",
        "route 3 6 1 6",
        "route 4 0 0 7",
        "route 3 0 0 5",
        "route 1 0 0 1",
    ] {
        assert!(routes.contains(&expected), "{expected} in {routes:?}");
    }
    let layout = &described.layout;
    assert_eq!(layout.flows.len(), 4, "the TFRC flow is left out");
    assert_eq!(layout.flows[0].data_path, [0, 4, 6]);
    assert_eq!(layout.flows[1].start.as_secs(), 1);
    assert_eq!(layout.flows[1].stop.as_secs(), 8);
}

#[test]
fn bbr_runs_with_the_upstream_fixes_unless_asked_for_ns3_as_packaged() {
    let fixed = describe(&scenario(DUMBBELL)).expect("describes");
    assert!(fixed
        .notes
        .iter()
        .any(|note| note.starts_with("flow.bbr.variant") && note.contains("#1026")));
    let packaged = describe_with(&scenario(DUMBBELL), BbrModel::AsPackaged).expect("describes");
    let flows = lines_starting(&packaged.description, "flow");
    assert_eq!(
        flows[1],
        "flow tcp 2 5 8 1000000000 8000000000 1000 ns3::TcpBbr 10 0 0 1"
    );
    assert!(!packaged
        .notes
        .iter()
        .any(|note| note.starts_with("flow.bbr.variant")));
    // Nothing but the BBR flow's congestion control changes.
    let without_bbr = |text: &str| {
        text.lines()
            .filter(|line| !line.contains("Bbr") && !line.contains("flow.bbr.variant"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        without_bbr(&fixed.description),
        without_bbr(&packaged.description)
    );
}

#[test]
fn what_ns3_cannot_express_is_listed_with_what_the_run_does_instead() {
    let described = describe(&scenario(DUMBBELL)).expect("describes");
    let unsupported = described.unsupported.join("\n");
    assert!(
        unsupported.contains("flow.t: ns-3 has no TFRC") && unsupported.contains("left out"),
        "{unsupported}"
    );
    assert!(described
        .notes
        .iter()
        .any(|note| note.starts_with("flow.reno.variant") && note.contains("TcpLinuxReno")));
    // The description repeats them as comments.
    assert!(described
        .description
        .contains("# UNSUPPORTED flow.t: ns-3 has no TFRC"));

    let other = scenario(
        r#"
name = "other"
duration = "5s"
[[link]]
between = ["a", "b"]
rate = "1Mbps"
delay = "10ms"
queue = { kind = "rio" }
loss = { kind = "gilbert-elliott", p_good_to_bad = 0.01, p_bad_to_good = 0.5 }
reverse = { delay = "20ms" }
[[flow]]
name = "f"
kind = "pareto"
rate = "100kbps"
from = "a"
to = "b"
"#,
    );
    let described = describe(&other).expect("describes");
    let unsupported = described.unsupported.join("\n");
    for key in [
        "link[0].queue: ns-3 has no RIO",
        "link[0].loss: only Bernoulli",
    ] {
        assert!(unsupported.contains(key), "{key} in {unsupported}");
    }
    // The RIO queue runs as DropTail of its limit (50 by default), the other loss model not at all.
    assert!(described
        .description
        .contains("\ndirection 0 1 1000000 10000000 0 0 0 droptail 50\n"));
    // Each direction its own delay.
    assert!(described
        .description
        .contains("\ndirection 1 0 1000000 20000000 0 0 0 droptail 50\n"));
    assert!(!unsupported.contains("delay"), "{unsupported}");
    // Pareto on/off: rate, mean on and off times (ns-2's defaults, 500 ms), shape 1.5.
    assert_eq!(
        lines_starting(&described.description, "flow"),
        ["flow onoff 0 1 0 0 5000000000 1000 100000 500000000 500000000 1.5"]
    );
    assert!(described
        .notes
        .iter()
        .any(|note| note.starts_with("flow.f:")));
}

#[test]
fn a_sweep_or_a_tcp_packet_without_payload_is_an_error_naming_the_key() {
    let swept = scenario(&format!(
        "{DUMBBELL}\n[sweep]\n\"link.2.rate\" = [\"5Mbps\", \"10Mbps\"]\n"
    ));
    let error = describe(&swept).expect_err("a sweep is refused");
    assert!(error.to_string().contains("sweep"), "{error}");

    let tiny = scenario(&DUMBBELL.replace("packet_size = 1500", "packet_size = 40"));
    let error = describe(&tiny).expect_err("no payload");
    assert!(
        matches!(&error, Ns3Error::Describe { key, .. } if key == "flow[2].packet_size"),
        "{error}"
    );
}

/// A two-node scenario with one TCP flow, 2 s in 1 s intervals.
const SMALL: &str = r#"
name = "small"
duration = "2s"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "10ms"
[[flow]]
name = "f"
kind = "tcp"
from = "a"
to = "b"
"#;

#[test]
fn the_converter_turns_cumulative_samples_into_interval_rows() {
    let described = describe(&scenario(SMALL)).expect("describes");
    let samples = "\
F 0 0 100 100000 90 90000 86400
L 0 0 5000 5 110 100 100000 10 0
L 0 1 0 0 90 90 3600 0 0
S 0 0 12.5 - 0.021 - 0.2
F 1 0 250 250000 240 240000 230400
L 1 0 3000 3 262 250 250000 12 2
L 1 1 0 0 240 240 9600 0 0
S 1 0 20 10 0.025 0.0235 0.2
R 0 1 12
";
    let converted =
        convert_samples(&described.layout, samples, Path::new("ns3-samples.txt")).expect("parses");
    let flows = &converted.rows.flows;
    assert_eq!(flows.len(), 2);
    assert_eq!(flows[1].time_s, 2.0);
    assert_eq!(flows[1].sent_packets, 150);
    assert_eq!(flows[1].sent_bytes, 150_000);
    assert_eq!(flows[1].recv_packets, 150);
    assert_eq!(flows[1].goodput_bytes, 144_000);
    let links = &converted.rows.links;
    assert_eq!(links.len(), 4);
    assert_eq!((links[2].from.as_str(), links[2].to.as_str()), ("a", "b"));
    assert_eq!(links[2].queue_packets, 3);
    assert_eq!(links[2].arrivals, 152);
    assert_eq!(links[2].departures, 150);
    assert_eq!(links[2].drops, 2);
    assert_eq!(links[2].drops_loss_model, Some(2));
    assert_eq!(links[2].utilization, Some(0.12));
    let states = &converted.rows.states;
    assert_eq!(states.len(), 2);
    assert_eq!(states[0].cwnd, Some(12.5));
    assert_eq!(states[0].ssthresh, None);
    assert_eq!(states[1].rtt_s, Some(0.025));
    assert_eq!(states[0].srtt_s, None);
    assert_eq!(states[1].srtt_s, Some(0.0235));
    assert_eq!(states[1].rto_s, Some(0.2));
    let summary = &converted.summary;
    assert_eq!(summary.flows[0].retransmissions, Some(12));
    assert_eq!(summary.flows[0].timeouts, Some(1));
    assert_eq!(summary.flows[0].goodput_bytes, 230_400);
    let bottleneck = summary.bottleneck.as_ref().expect("a bottleneck");
    assert_eq!(bottleneck.utilization, Some(0.1));
    assert!(summary.tool.starts_with("ns-3.37 via "));
}

#[test]
fn a_malformed_or_missing_sample_is_an_error_naming_the_line() {
    let described = describe(&scenario(SMALL)).expect("describes");
    let path = Path::new("ns3-samples.txt");
    let error =
        convert_samples(&described.layout, "F 0 0 x 1 1 1 1\n", path).expect_err("not a count");
    assert!(
        error
            .to_string()
            .starts_with("ns3-samples.txt:1: field 4 is not a count"),
        "{error}"
    );
    let error =
        convert_samples(&described.layout, "F 0 7 1 1 1 1 1\n", path).expect_err("no flow 7");
    assert!(error.to_string().contains("flow index below 1"), "{error}");
    let error =
        convert_samples(&described.layout, "F 0 0 1 1 1 1 1\n", path).expect_err("stopped early");
    assert!(error.to_string().contains("did ns-3 stop early"), "{error}");
}

#[test]
fn the_instances_of_a_count_flow_share_one_line() {
    let text = format!(
        "{SMALL}[[flow]]\nname = \"f\"\nkind = \"tfrc\"\ncount = 8\nfrom = \"a\"\nto = \"b\"\n"
    );
    let described = describe(&scenario(&text)).expect("describes");
    assert_eq!(
        described.unsupported.len(),
        1,
        "{:?}",
        described.unsupported
    );
    assert!(
        described.unsupported[0].starts_with("flow.f.{1…8} (8 flows): ns-3 has no TFRC"),
        "{}",
        described.unsupported[0]
    );
    assert_eq!(described.layout.flows.len(), 1);
}
