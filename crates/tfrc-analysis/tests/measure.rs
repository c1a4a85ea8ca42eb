//! Run-level measurements: recomputed from the CSV files, they agree with summary.json; and
//! convergence / recovery on a synthetic run.

use std::path::{Path, PathBuf};

use tfrc_analysis::measure::{convergence_times, recovery_time, run_metrics};
use tfrc_analysis::metrics::{ConvergenceOptions, Hold, RecoveryOptions};
use tfrc_analysis::run::{FlowRow, FlowSummary, Run, Summary};

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-4)
}

#[test]
fn fixture_measurements_match_its_summary() {
    let run =
        Run::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/run-small")).unwrap();
    let measured = run_metrics(&run);
    for (ours, stated) in measured.flows.iter().zip(&run.summary.flows) {
        assert_eq!(ours.name, stated.name);
        assert_eq!(ours.recv_bytes, stated.recv_bytes);
        assert_eq!(ours.sent_bytes, stated.sent_bytes);
        assert_eq!(ours.goodput_bps, stated.goodput_bps, "{}", ours.name);
        assert!(
            close(ours.receiving_ratio, stated.receiving_ratio.unwrap()),
            "{}",
            ours.name
        );
        assert_eq!(
            ours.mean_p.is_some(),
            stated.mean_p.is_some(),
            "{}",
            ours.name
        );
        if let Some(p) = stated.mean_p {
            assert!(close(ours.mean_p, p), "{}", ours.name);
        }
        assert!(
            close(ours.mean_rtt_s, stated.mean_rtt_s.unwrap()),
            "{}",
            ours.name
        );
    }
    assert!(close(measured.jain_index, run.summary.jain_index.unwrap()));
    let stated = run
        .summary
        .bottleneck
        .as_ref()
        .unwrap()
        .utilization
        .unwrap();
    assert!(close(measured.bottleneck_utilization, stated));
    // Burstiness over the active intervals: a over (0, 3]: 384, 496, 500; b over (0, 2]: 600, 500.
    assert!(close(measured.flows[0].burstiness_index, 53.765_0 / 460.0));
    assert!(close(measured.flows[1].burstiness_index, 50.0 / 550.0));
}

/// A run of two TFRC flows over 1 s intervals; `b` starts at 3 s.
fn synthetic_run(a: &[f64], b: &[f64]) -> Run {
    let flow = |name: &str, start_s: f64| FlowSummary {
        name: name.into(),
        kind: "tfrc".into(),
        from: "s".into(),
        to: "r".into(),
        start_s,
        stop_s: a.len() as f64,
        sent_bytes: 0,
        recv_bytes: 0,
        sent_packets: 0,
        recv_packets: 0,
        send_rate_bps: None,
        goodput_bps: None,
        receiving_ratio: None,
        mean_p: None,
        mean_rtt_s: None,
        cov_sent_100ms: None,
    };
    let mut flows = Vec::new();
    for (index, (&rate_a, &rate_b)) in a.iter().zip(b).enumerate() {
        for (name, kbps) in [("a", rate_a), ("b", rate_b)] {
            let bytes = (kbps * 1000.0 / 8.0) as u64;
            flows.push(FlowRow {
                time_s: index as f64 + 1.0,
                flow: name.into(),
                kind: "tfrc".into(),
                sent_bytes: bytes,
                recv_bytes: bytes,
                sent_packets: bytes / 1000,
                recv_packets: bytes / 1000,
                send_kbps: kbps,
                recv_kbps: kbps,
            });
        }
    }
    Run {
        dir: PathBuf::from("synthetic"),
        summary: Summary {
            schema_version: 1,
            tool: "test".into(),
            scenario: "synthetic".into(),
            seed: 1,
            duration_s: a.len() as f64,
            interval_s: 1.0,
            flows: vec![flow("a", 0.0), flow("b", 3.0)],
            jain_index: None,
            bottleneck: None,
            links: Vec::new(),
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
