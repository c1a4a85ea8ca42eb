//! A TFRC flow whose application caps its data rate (`max_rate`, as `tfrc send -b`): the
//! sender sends the cap, not more, and is data-limited above it (RFC 5348 §4.3).

use tfrc_scenario::Scenario;
use tfrc_sim::simulation::Simulation;

/// One TFRC flow of 1000-byte segments on a 10 Mb/s, 40 ms RTT link, with `max_rate` if given;
/// its mean sending rate (kb/s, the 32-byte header included) from 10 s to 30 s.
fn mean_send_kbps(max_rate: Option<&str>) -> f64 {
    let mut text = String::from(
        "name = \"cap\"\nduration = \"30s\"\n\n[[link]]\nbetween = [\"s\", \"r\"]\nrate = \"10Mbps\"\n\
         delay = \"20ms\"\nqueue = { kind = \"droptail\", limit = 100 }\n\n[[flow]]\nname = \"a\"\n\
         kind = \"tfrc\"\nfrom = \"s\"\nto = \"r\"\npacket_size = 1032\n",
    );
    if let Some(rate) = max_rate {
        text.push_str(&format!("max_rate = \"{rate}\"\n"));
    }
    let scenario = Scenario::from_str_named(&text, "cap.toml").expect("valid scenario");
    let mut simulation = Simulation::new(&scenario, None).expect("builds");
    simulation.keep_rows();
    let end = simulation.end();
    simulation.run_until(end).expect("runs");
    let (_, rows) = simulation.finish_with_rows().expect("finishes");
    let steady: Vec<f64> = rows
        .flows
        .iter()
        .filter(|row| row.time_s > 10.0)
        .map(|row| row.send_kbps)
        .collect();
    steady.iter().sum::<f64>() / steady.len() as f64
}

#[test]
fn a_capped_application_sends_its_cap_and_no_more() {
    // 400 kb/s of data in 1000-byte segments: 50 packets/s of 1032 bytes = 412.8 kb/s.
    let capped = mean_send_kbps(Some("400kbps"));
    assert!((capped - 412.8).abs() < 0.5, "{capped:.2} kb/s");
    // Without the cap the same flow takes most of the 10 Mb/s link.
    let bulk = mean_send_kbps(None);
    assert!(bulk > 8_000.0, "{bulk:.0} kb/s");
}
