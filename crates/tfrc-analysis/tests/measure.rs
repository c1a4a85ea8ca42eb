//! Run-level measurements: recomputed from the CSV files, they agree with summary.json; and
//! convergence / recovery on a synthetic run.

use std::path::{Path, PathBuf};

use tfrc_analysis::measure::{convergence_times, recovery_time, run_metrics};
use tfrc_analysis::metrics::{ConvergenceOptions, Hold, RecoveryOptions};
use tfrc_analysis::run::{FlowRow, FlowSummary, Run, Summary};

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-4)
}

fn fixture(name: &str) -> Run {
    Run::load(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name),
    )
    .unwrap()
}

/// Equal within 1e-4 relative (the files round their numbers).
fn close_relative(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-4 * b.abs().max(1.0),
        (None, None) => true,
        _ => false,
    }
}

/// Every value `summary.json` states agrees with what `run_metrics` recomputes from the CSVs.
fn assert_agrees_with_summary(run: &Run) {
    let measured = run_metrics(run);
    assert_eq!(measured.flows.len(), run.summary.flows.len());
    for (ours, stated) in measured.flows.iter().zip(&run.summary.flows) {
        let name = &ours.name;
        assert_eq!(name, &stated.name);
        assert_eq!(ours.recv_bytes, stated.recv_bytes, "{name}");
        assert_eq!(ours.sent_bytes, stated.sent_bytes, "{name}");
        let pairs = [
            ("goodput", ours.goodput_bps, stated.goodput_bps),
            (
                "receiving ratio",
                ours.receiving_ratio,
                stated.receiving_ratio,
            ),
            ("mean p", ours.mean_p, stated.mean_p),
            ("mean RTT", ours.mean_rtt_s, stated.mean_rtt_s),
        ];
        for (quantity, ours, stated) in pairs {
            assert!(
                close_relative(ours, stated),
                "{name} {quantity}: {ours:?} vs {stated:?}"
            );
        }
    }
    assert!(close_relative(measured.jain_index, run.summary.jain_index));
    let stated = run.summary.bottleneck.as_ref().and_then(|b| b.utilization);
    assert!(close_relative(measured.bottleneck_utilization, stated));
}

#[test]
fn fixture_measurements_match_its_summary() {
    let run = fixture("run-small");
    assert_agrees_with_summary(&run);
    let measured = run_metrics(&run);
    // Burstiness of the goodput over the active intervals: a over (0, 3]: 371.712, 480.128,
    // 484.128 kb/s (σ 52.0762, mean 445.3227); b over (0, 2]: 576, 480.16 (σ 47.92, mean 528.08).
    assert!(close(
        measured.flows[0].burstiness_index,
        52.076_211 / 445.322_667
    ));
    assert!(close(measured.flows[1].burstiness_index, 47.92 / 528.08));
}

#[test]
fn simulator_output_is_read_and_measured_alike() {
    let run = fixture("sim-loss");
    assert_eq!(run.flows.len(), 180);
    assert_agrees_with_summary(&run);
    // 1 % loss during 30–90 s: the flow comes back to 90 % of its earlier rate after the loss
    // period, and the rate just before the end of it is well below the earlier one.
    let options = RecoveryOptions::default();
    let recovery = recovery_time(&run, "a", 30.0, 90.0, options)
        .unwrap()
        .unwrap();
    assert!(recovery > 0.0 && recovery < 90.0, "{recovery}");
    let during = run.throughput_series("a", tfrc_analysis::run::Direction::Received);
    assert!(
        during[88].1 < 0.5 * during[25].1,
        "{:?} vs {:?}",
        during[88],
        during[25]
    );
}

/// A run of two TFRC flows over 1 s intervals; `b` starts at 3 s.
fn synthetic_run(a: &[f64], b: &[f64]) -> Run {
    let flow = |name: &str, start_s: f64| FlowSummary {
        name: name.into(),
        kind: tfrc_output::FlowKind::Tfrc,
        from: "s".into(),
        to: "r".into(),
        start_s,
        stop_s: a.len() as f64,
        sent_bytes: 0,
        recv_bytes: 0,
        sent_packets: 0,
        recv_packets: 0,
        goodput_bytes: 0,
        send_rate_bps: None,
        recv_rate_bps: None,
        goodput_bps: None,
        receiving_ratio: None,
        mean_p: None,
        mean_rtt_s: None,
        cov_sent_100ms: None,
        feedbacks: None,
        retransmissions: None,
        timeouts: None,
        delay_p50_s: None,
        delay_p95_s: None,
        delay_p99_s: None,
        frames: None,
        frames_on_time: None,
        frames_late: None,
    };
    let mut flows = Vec::new();
    for (index, (&rate_a, &rate_b)) in a.iter().zip(b).enumerate() {
        for (name, kbps) in [("a", rate_a), ("b", rate_b)] {
            let bytes = (kbps * 1000.0 / 8.0) as u64;
            flows.push(FlowRow {
                time_s: index as f64 + 1.0,
                flow: name.into(),
                kind: tfrc_output::FlowKind::Tfrc,
                sent_bytes: bytes,
                recv_bytes: bytes,
                sent_packets: bytes / 1000,
                recv_packets: bytes / 1000,
                send_kbps: kbps,
                recv_kbps: kbps,
                goodput_bytes: bytes,
                goodput_kbps: kbps,
            });
        }
    }
    Run {
        dir: PathBuf::from("synthetic"),
        summary: Summary {
            schema_version: tfrc_output::SCHEMA_VERSION,
            tool: "test".into(),
            scenario: "synthetic".into(),
            seed: 1,
            duration_s: a.len() as f64,
            interval_s: 1.0,
            flows: vec![flow("a", 0.0), flow("b", 3.0)],
            jain_index: None,
            bottleneck: None,
            links: Vec::new(),
            parameters: Default::default(),
        },
        flows,
        states: Vec::new(),
        links: Vec::new(),
    }
}

#[test]
fn convergence_after_each_arrival() {
    let a = [
        1000., 1000., 1000., 800., 700., 600., 520., 500., 510., 490.,
    ];
    let b = [0., 0., 0., 200., 300., 400., 480., 500., 490., 510.];
    let run = synthetic_run(&a, &b);
    let raw_until_end = ConvergenceOptions {
        hold: Hold::UntilEnd,
        smoothing_intervals: 1,
        ..ConvergenceOptions::default()
    };
    let found = convergence_times(&run, raw_until_end).unwrap();
    assert_eq!(found.len(), 1, "only b arrives after 0");
    assert_eq!(found[0].flow, "b");
    assert_eq!(found[0].arrival_s, 3.0);
    assert_eq!(found[0].time_s, Some(4.0));
    // The default (10-interval average held for 30 s) cannot be confirmed in a 10 s run.
    let default = convergence_times(&run, ConvergenceOptions::default()).unwrap();
    assert_eq!(default[0].time_s, None);
    let metrics = run_metrics(&run);
    assert_eq!(metrics.bottleneck_utilization, None);
    assert!(metrics.jain_index.unwrap() < 1.0);
}

#[test]
fn recovery_of_a_flow() {
    let a = [
        1000., 1000., 1000., 100., 100., 600., 950., 1000., 1000., 1000.,
    ];
    let b = [0.0; 10];
    let run = synthetic_run(&a, &b);
    let options = RecoveryOptions {
        reference_s: 3.0,
        threshold: 0.9,
        hold: Hold::UntilEnd,
        smoothing_intervals: 1,
    };
    // Disturbance 3–5 s; back at ≥ 900 kb/s from the interval ending at 7 s.
    assert_eq!(recovery_time(&run, "a", 3.0, 5.0, options), Ok(Some(2.0)));
    assert_eq!(recovery_time(&run, "zz", 3.0, 5.0, options), Ok(None));
}
