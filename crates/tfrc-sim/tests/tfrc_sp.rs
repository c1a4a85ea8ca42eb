//! TFRC-SP (RFC 4828) in the simulator: the repository's scenario
//! `scenarios/tfrc-sp/rfc4828-table9.toml` (RFC 4828 Appendix B.1, Table 9: configured packet
//! drop rates, RTT 240 ms, SACK TCP with 1460-byte segments, TFRC-SP and standard TFRC with
//! 200-byte segments), at two of its drop rates with three flows of each kind.

use std::collections::HashMap;
use std::path::Path;

use tfrc_scenario::Scenario;
use tfrc_sim::simulation::Simulation;

/// Mean sending rate (kb/s, headers included) per flow group over the second half of the run,
/// as RFC 4828 B.1 reports it: "a flow's average sending rate in Kbps over the second half of a
/// 100-second simulation, averaged over ten flows" (three here).
fn second_half_rates(drop_rate: f64) -> HashMap<String, f64> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/tfrc-sp/rfc4828-table9.toml");
    let mut scenario = Scenario::from_path(&path).expect("valid scenario");
    scenario.sweep.clear();
    for assignment in [
        format!("link.0.loss.rate={drop_rate}"),
        "flow.tcp.count=3".into(),
        "flow.sp.count=3".into(),
        "flow.standard.count=3".into(),
    ] {
        scenario.apply_set(&assignment).expect(&assignment);
    }
    let scenario = scenario.expand().expect("expands").remove(0);
    let half = scenario.duration.as_secs_f64() / 2.0;
    let mut simulation = Simulation::new(&scenario, None).expect("builds");
    simulation.keep_rows();
    let end = simulation.end();
    simulation.run_until(end).expect("runs");
    let (_, rows) = simulation.finish_with_rows().expect("finishes");
    let mut sums: HashMap<String, (f64, u32)> = HashMap::new();
    for row in rows.flows.iter().filter(|row| row.time_s > half) {
        let group = row.flow.split('.').next().unwrap_or_default().to_owned();
        let entry = sums.entry(group).or_default();
        entry.0 += row.send_kbps;
        entry.1 += 1;
    }
    sums.into_iter()
        .map(|(group, (sum, count))| (group, sum / f64::from(count)))
        .collect()
}

// RFC 4828 Table 9 at p = 0.01: TFRC-SP 185.33 kb/s (its 100 packets/s Min Interval: 100 ×
// 232 bytes = 185.6 kb/s), standard TFRC with the same packets 92.43 kb/s; B.1: "the
// performance of Standard TFRC is quite poor, while the performance of TFRC-SP is essentially
// as desired".
#[test]
fn at_one_percent_tfrc_sp_sends_at_its_min_interval_and_standard_tfrc_at_half() {
    let rates = second_half_rates(0.01);
    let (sp, standard) = (rates["sp"], rates["standard"]);
    assert!((sp - 185.6).abs() < 0.5, "TFRC-SP {sp:.2} kb/s");
    assert!(standard < 0.6 * sp, "standard TFRC {standard:.2} kb/s");
}

// RFC 4828 Table 9 at p = 0.1: TCP 141.67, TFRC-SP 127.33 (0.90 of TCP), standard TFRC 21.96
// kb/s. TFRC-SP is below its 100 packets/s ceiling and near TCP's rate; standard TFRC, with
// s = 200 in the equation, gets a fraction of it.
#[test]
fn at_ten_percent_tfrc_sp_follows_tcp_and_standard_tfrc_falls_behind() {
    let rates = second_half_rates(0.1);
    let (tcp, sp, standard) = (rates["tcp"], rates["sp"], rates["standard"]);
    assert!(
        sp < 180.0,
        "TFRC-SP {sp:.2} kb/s should be below its ceiling"
    );
    assert!(
        (0.7..=1.1).contains(&(sp / tcp)),
        "TFRC-SP {sp:.2} against TCP {tcp:.2} kb/s"
    );
    assert!(standard < 0.25 * sp, "standard TFRC {standard:.2} kb/s");
}
