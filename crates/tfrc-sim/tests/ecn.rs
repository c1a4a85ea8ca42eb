//! ECN in the simulator: a RED queue with `ecn = true` marks the ECT packets of TFRC flows with
//! `ecn = true` (RFC 3168) instead of dropping them early, `links.csv` counts the marks, and the
//! TFRC receivers take them as congestion (RFC 5348 §5.1: "For an ECN-capable connection, a
//! marked packet is detected as a congestion event as soon as it arrives").

use tfrc_output::{FlowSummary, Rows};
use tfrc_scenario::Scenario;
use tfrc_sim::simulation::Simulation;

/// Four TFRC flows through a 10 Mb/s gentle RED bottleneck, 80 ms RTT; `ecn` on the queue and on
/// flows `a` and `b` (flows `c` and `d` never send ECT).
fn run(ecn: bool) -> (Vec<FlowSummary>, Rows) {
    let mut text = format!(
        r#"name = "ecn"
duration = "60s"
seed = 3

[[link]]
between = ["s", "r"]
rate = "10Mbps"
delay = "40ms"
queue = {{ kind = "red", limit = 200, min_th = 25, max_th = 75, max_p = 0.1, weight = 0.002, gentle = true, ecn = {ecn} }}
"#
    );
    for (name, flow_ecn) in [("a", ecn), ("b", ecn), ("c", false), ("d", false)] {
        text.push_str(&format!(
            "\n[[flow]]\nname = \"{name}\"\nkind = \"tfrc\"\nfrom = \"s\"\nto = \"r\"\necn = {flow_ecn}\n"
        ));
    }
    let scenario = Scenario::from_str_named(&text, "ecn.toml").expect("valid scenario");
    let mut simulation = Simulation::new(&scenario, None).expect("builds");
    simulation.keep_rows();
    let end = simulation.end();
    simulation.run_until(end).expect("runs");
    let (summary, rows) = simulation.finish_with_rows().expect("finishes");
    (summary.flows, rows)
}

fn flow<'a>(flows: &'a [FlowSummary], name: &str) -> &'a FlowSummary {
    flows.iter().find(|flow| flow.name == name).unwrap()
}

/// The fraction of `name`'s packets lost after the first 10 s: slow start's overshoot fills the
/// queue to its limit, and overflow drops every packet, ECT or not.
fn lost_fraction(rows: &Rows, name: &str) -> f64 {
    let (sent, received) = rows
        .flows
        .iter()
        .filter(|row| row.flow == name && row.time_s > STEADY_FROM_S)
        .fold((0, 0), |(sent, received), row| {
            (sent + row.sent_packets, received + row.recv_packets)
        });
    1.0 - received as f64 / sent as f64
}

const STEADY_FROM_S: f64 = 10.0;

#[test]
fn red_marks_ect_packets_and_tfrc_reacts_to_the_marks() {
    let (_, plain_rows) = run(false);
    let (marked, marked_rows) = run(true);
    let total = |rows: &Rows, pick: fn(&tfrc_output::LinkRow) -> u64| -> u64 {
        rows.links
            .iter()
            .filter(|row| row.from == "s" && row.time_s > STEADY_FROM_S)
            .map(pick)
            .sum()
    };
    let marks = total(&marked_rows, |row| row.ecn_marks.unwrap_or(0));
    let drops_marked = total(&marked_rows, |row| row.drops);
    let drops_plain = total(&plain_rows, |row| row.drops);
    println!("drops {drops_plain} without ECN; {drops_marked} drops and {marks} marks with ECN");

    assert_eq!(total(&plain_rows, |row| row.ecn_marks.unwrap_or(0)), 0);
    assert!(marks >= 20, "{marks} marks");
    assert!(
        drops_marked < drops_plain,
        "{drops_marked} drops with ECN, {drops_plain} without"
    );
    // In steady state the ECT flows lose far fewer packets: RED marks them where it would drop
    // them early, and drops them only above 2·max_th or on overflow.
    for name in ["a", "b"] {
        let (with, without) = (
            lost_fraction(&marked_rows, name),
            lost_fraction(&plain_rows, name),
        );
        println!("{name}: lost {with:.5} with ECN, {without:.5} without");
        assert!(
            with < 0.5 * without,
            "{name}: lost {with:.5} with ECN, {without:.5} without"
        );
        // ... yet their receivers see the marks as congestion and report p > 0.
        let p = flow(&marked, name).mean_p.unwrap_or(0.0);
        assert!(p > 0.0, "{name}: p {p}");
    }
    // A flow that does not send ECT is still dropped by the same queue.
    for name in ["c", "d"] {
        assert!(lost_fraction(&marked_rows, name) > 0.0, "{name}");
    }
}
