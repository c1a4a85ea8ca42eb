//! Conformance against real ns-2.35: `tests/ns2/tfrc_loss1.tcl` (one TFRC flow, 1 Mb/s,
//! RTT 250 ms, DropTail 100, uniform loss on the data direction, 1500-byte packets without
//! header overhead) against the pair harness with the same link, under both profiles.
//!
//! The statistic is the mean receive rate over 20–300 s, averaged over seeds 1–10 on each side
//! (the two simulators draw different loss patterns, so single seeds are not comparable; ten
//! seeds bring the seed-to-seed spread of about 4 % down to about 1.3 %).
//!
//! Runs when `ns` is on the PATH. Without it the test prints why it skips, unless `CI` is set,
//! in which case a missing `ns` fails the test.

mod common;

use common::{LinkSpec, Pair};
use core::time::Duration;
use std::process::Command;
use tfrc_proto::{Config, Instant};

/// Largest relative difference allowed between the ns-2 profile and ns-2 itself.
const NS2_TOLERANCE: f64 = 0.05;
/// Largest relative difference allowed between the RFC profile and ns-2 (documented, explained
/// differences: t_RTO = 4R instead of ns-2's TCP-style estimate, a jump to X_calc instead of the
/// additive increase, q = 0.9, NDUPACK = 3).
const RFC_TOLERANCE: f64 = 0.15;
const SEEDS: std::ops::RangeInclusive<u64> = 1..=10;
const WARM_UP: u64 = 20;
const STOP: u64 = 300;

/// Runs the script; `None` when ns is not installed.
fn run_ns(loss: f64, seed: u64) -> Option<f64> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ns2/tfrc_loss1.tcl");
    let output = match Command::new("ns")
        .arg(script)
        .arg(STOP.to_string())
        .arg(loss.to_string())
        .arg(seed.to_string())
        .output()
    {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
        Err(error) => panic!("cannot run ns: {error}"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "ns failed: {stdout}");
    let line = stdout
        .lines()
        .find(|line| line.starts_with("MEAN"))
        .unwrap_or_else(|| panic!("no MEAN line in ns output:\n{stdout}"));
    // "MEAN 20-300 s: 574.6 kb/s"
    let value = line
        .split_whitespace()
        .nth(3)
        .and_then(|field| field.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("cannot parse {line:?}"));
    Some(value)
}

/// Mean receive rate 20–300 s in kb/s of the pair harness on the script's link.
fn run_pair(config: Config, loss: f64, seed: u64) -> f64 {
    let link = LinkSpec {
        rate_bps: 1e6,
        one_way_delay: Duration::from_millis(125),
        queue_limit: 100,
        loss,
        seed,
    };
    let mut pair = Pair::new(config, link);
    let end = Instant::from_secs(STOP);
    pair.run_until(end, 20_000_000);
    pair.receive_rate(Instant::from_secs(WARM_UP), end) * 8.0 / 1000.0
}

/// The script's agent settings: `packetSize_ 1500`, `useHeaders_ false`.
fn ns2_profile() -> Config {
    Config {
        packet_size: 1500,
        ns2_use_headers: false,
        ..Config::ns2()
    }
}

fn rfc_profile() -> Config {
    Config {
        packet_size: 1500,
        ..Config::default()
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn ns_available() -> bool {
    let missing = run_ns(0.01, 1)
        .is_none()
        .then(|| "ns-2 (`ns`) is not on the PATH (apt-get install ns2)".to_owned());
    tfrc_test_support::can_run("the ns-2 conformance runs", missing)
}

#[test]
fn throughput_under_uniform_loss_matches_ns2() {
    if !ns_available() {
        return;
    }
    let reference: Vec<f64> = SEEDS.map(|seed| run_ns(0.01, seed).unwrap()).collect();
    let ns2: Vec<f64> = SEEDS
        .map(|seed| run_pair(ns2_profile(), 0.01, seed))
        .collect();
    let rfc: Vec<f64> = SEEDS
        .map(|seed| run_pair(rfc_profile(), 0.01, seed))
        .collect();
    for (index, seed) in SEEDS.enumerate() {
        println!(
            "seed {seed:2}: ns-2 {:6.1} kb/s   ns2 profile {:6.1}   RFC profile {:6.1}",
            reference[index], ns2[index], rfc[index]
        );
    }
    let (reference, ns2, rfc) = (mean(&reference), mean(&ns2), mean(&rfc));
    let ns2_error = ns2 / reference - 1.0;
    let rfc_error = rfc / reference - 1.0;
    println!(
        "mean of seeds 1-10, 1 % loss: ns-2 {reference:.1} kb/s, ns2 profile {ns2:.1} ({:+.1} %), RFC profile {rfc:.1} ({:+.1} %)",
        100.0 * ns2_error,
        100.0 * rfc_error
    );
    assert!(
        ns2_error.abs() <= NS2_TOLERANCE,
        "ns2 profile {ns2:.1} kb/s vs ns-2 {reference:.1} kb/s"
    );
    assert!(
        rfc_error.abs() <= RFC_TOLERANCE,
        "RFC profile {rfc:.1} kb/s vs ns-2 {reference:.1} kb/s"
    );
}

#[test]
fn throughput_without_loss_matches_ns2() {
    if !ns_available() {
        return;
    }
    let reference = run_ns(0.0, 1).unwrap();
    let ns2 = run_pair(ns2_profile(), 0.0, 1);
    let rfc = run_pair(rfc_profile(), 0.0, 1);
    println!("no loss: ns-2 {reference:.1} kb/s, ns2 profile {ns2:.1}, RFC profile {rfc:.1}");
    for (name, value) in [("ns2", ns2), ("RFC", rfc)] {
        assert!(
            (value / reference - 1.0).abs() <= NS2_TOLERANCE,
            "{name} profile {value:.1} kb/s vs ns-2 {reference:.1} kb/s"
        );
    }
}
