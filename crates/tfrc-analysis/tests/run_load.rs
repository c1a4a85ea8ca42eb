//! Loading a run directory: the hand-written fixture in tests/data/run-small, and broken copies.

use std::path::{Path, PathBuf};

use tfrc_analysis::metrics;
use tfrc_analysis::run::{Direction, Run, RunError};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/run-small")
}

/// A copy of the fixture in a temporary directory, with `file` replaced by `edit(contents)`.
fn broken_copy(file: &str, edit: impl Fn(&str) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in ["flows.csv", "state.csv", "links.csv", "summary.json"] {
        let text = std::fs::read_to_string(fixture().join(name)).unwrap();
        let text = if name == file { edit(&text) } else { text };
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

#[test]
fn loads_every_file_of_the_fixture() {
    let run = Run::load(fixture()).unwrap();
    assert_eq!(run.summary.scenario, "fixture-small");
    assert_eq!(run.summary.seed, 7);
    assert_eq!(run.flow_names(), vec!["a", "b"]);
    assert_eq!(run.flows.len(), 6);
    assert_eq!(run.states.len(), 5);
    assert_eq!(run.links.len(), 6);
    let b = run.flow_summary("b").unwrap();
    assert_eq!(b.kind, tfrc_output::FlowKind::Tcp);
    assert_eq!(b.mean_p, None);
    let bottleneck = run.summary.bottleneck.as_ref().unwrap();
    assert_eq!(bottleneck.capacity_bps, Some(1_000_000.0));
}

/// A run stored gzip-compressed (as `tfrc reproduce` stores its runs) loads as the same rows,
/// and an error in a compressed file names that file.
#[test]
fn compressed_csv_files_load_as_the_plain_ones() {
    let plain = Run::load(fixture()).unwrap();
    let dir = broken_copy("", |t| t.to_string());
    tfrc_output::compress_row_files(dir.path()).unwrap();
    for name in ["flows.csv", "state.csv", "links.csv"] {
        assert!(!dir.path().join(name).exists(), "{name} left plain");
        assert!(dir.path().join(format!("{name}.gz")).is_file(), "{name}.gz");
    }
    let compressed = Run::load(dir.path()).unwrap();
    assert_eq!(
        Run {
            dir: plain.dir.clone(),
            ..compressed
        },
        plain
    );

    let dir = broken_copy("flows.csv", |t| t.replacen("62500,62000", "62500,lots", 1));
    tfrc_output::compress_row_files(dir.path()).unwrap();
    let message = Run::load(dir.path()).unwrap_err().to_string();
    assert!(message.contains("flows.csv.gz: line 4"), "{message}");
}

#[test]
fn series_come_from_the_right_columns() {
    let run = Run::load(fixture()).unwrap();
    assert_eq!(
        run.throughput_series("a", Direction::Sent),
        vec![(1.0, 400.0), (2.0, 500.0), (3.0, 500.0)]
    );
    assert_eq!(
        run.throughput_series("a", Direction::Received),
        vec![(1.0, 384.0), (2.0, 496.0), (3.0, 500.0)]
    );
    assert_eq!(
        run.throughput_series("a", Direction::Goodput),
        vec![(1.0, 371.712), (2.0, 480.128), (3.0, 484.128)]
    );
    // Empty cells are skipped: flow a has no RTT at t = 1.
    assert_eq!(run.rtt_series("a"), vec![(2.0, 0.062), (3.0, 0.064)]);
    assert_eq!(
        run.loss_event_rate_series("a"),
        vec![(2.0, 0.01), (3.0, 0.02)]
    );
    assert!(run.throughput_series("nope", Direction::Sent).is_empty());
    assert_eq!(run.link_rows("router", "receiver").count(), 3);
    assert_eq!(run.states[1].cwnd, Some(10.0));
    assert_eq!(run.links[0].average_queue, None);
}

#[test]
fn metrics_on_the_fixture_match_its_summary() {
    let run = Run::load(fixture()).unwrap();
    let goodputs: Vec<f64> = run
        .summary
        .flows
        .iter()
        .map(|f| {
            let received: u64 = run.flow_rows(&f.name).map(|r| r.recv_bytes).sum();
            assert_eq!(received, f.recv_bytes, "flow {}", f.name);
            let bytes: u64 = run.flow_rows(&f.name).map(|r| r.goodput_bytes).sum();
            assert_eq!(bytes, f.goodput_bytes, "flow {}", f.name);
            metrics::goodput_bps(bytes, f.stop_s - f.start_s).unwrap()
        })
        .collect();
    // Goodput is the payload delivered, below the received bytes (headers, here).
    assert_eq!(goodputs, vec![166_996.0 * 8.0 / 3.0, 528_080.0]);
    let jain = metrics::jain_index(&goodputs).unwrap();
    assert!((jain - run.summary.jain_index.unwrap()).abs() < 1e-4);
    let bottleneck_bytes: u64 = run
        .link_rows("router", "receiver")
        .map(|r| r.departure_bytes)
        .sum();
    let utilization =
        metrics::link_utilization(bottleneck_bytes, 1e6, run.summary.duration_s).unwrap();
    let expected = run
        .summary
        .bottleneck
        .as_ref()
        .unwrap()
        .utilization
        .unwrap();
    assert!((utilization - expected).abs() < 1e-4);
}

#[test]
fn missing_file_is_named() {
    let dir = broken_copy("state.csv", |t| t.to_string());
    std::fs::remove_file(dir.path().join("state.csv")).unwrap();
    let error = Run::load(dir.path()).unwrap_err();
    assert!(matches!(error, RunError::Io { .. }));
    assert!(error.to_string().contains("state.csv"), "{error}");
}

#[test]
fn bad_csv_value_names_file_line_and_column() {
    let dir = broken_copy("flows.csv", |t| t.replacen("62500,62000", "62500,lots", 1));
    let error = Run::load(dir.path()).unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, RunError::Csv { line: Some(4), .. }),
        "{message}"
    );
    assert!(message.contains("flows.csv"), "{message}");
    assert!(message.contains("recv_bytes"), "{message}");
}

#[test]
fn short_csv_row_is_an_error() {
    let dir = broken_copy("links.csv", |t| format!("{t}4,router,receiver,0\n"));
    let error = Run::load(dir.path()).unwrap_err();
    assert!(
        matches!(error, RunError::Csv { line: Some(8), .. }),
        "{error}"
    );
    assert!(error.to_string().contains("links.csv"), "{error}");
}

#[test]
fn unknown_flow_is_an_error() {
    let dir = broken_copy("state.csv", |t| format!("{t}3,zz,tfrc,,,,,,,,,,,\n"));
    let error = Run::load(dir.path()).unwrap_err();
    assert!(
        matches!(&error, RunError::UnknownFlow { line: 7, flow, .. } if flow == "zz"),
        "{error}"
    );
}

/// Version 1 counted headers and duplicates as goodput: its files are refused, not misread.
#[test]
fn older_schema_is_refused() {
    let dir = broken_copy("summary.json", |t| {
        t.replace("\"schema_version\": 2", "\"schema_version\": 1")
    });
    let error = Run::load(dir.path()).unwrap_err();
    assert!(
        matches!(error, RunError::UnsupportedSchema { found: 1, .. }),
        "{error}"
    );
}

#[test]
fn newer_schema_is_refused_and_bad_json_located() {
    let dir = broken_copy("summary.json", |t| {
        t.replace("\"schema_version\": 2", "\"schema_version\": 3")
    });
    let error = Run::load(dir.path()).unwrap_err();
    assert!(
        matches!(error, RunError::UnsupportedSchema { found: 3, .. }),
        "{error}"
    );

    let dir = broken_copy("summary.json", |t| {
        t.replace("\"seed\": 7", "\"seed\": \"x\"")
    });
    let error = Run::load(dir.path()).unwrap_err();
    assert!(matches!(error, RunError::Json { line: 5, .. }), "{error}");
    assert!(error.to_string().contains("summary.json"), "{error}");
}

#[test]
fn columns_added_at_the_end_are_ignored() {
    let dir = broken_copy("flows.csv", |t| {
        t.lines()
            .enumerate()
            .map(|(i, line)| {
                let extra = if i == 0 { "future_column" } else { "1" };
                format!("{line},{extra}\n")
            })
            .collect()
    });
    let run = Run::load(dir.path()).unwrap();
    assert_eq!(run.flows.len(), 6);
}
