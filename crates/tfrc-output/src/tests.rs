use proptest::prelude::*;
use serde::de::DeserializeOwned;

use super::*;

/// The header csv's serde writer derives from the field names.
fn serde_header<T: Serialize>(row: &T) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.serialize(row).expect("serializable row");
    let text = String::from_utf8(writer.into_inner().expect("flushed")).expect("utf-8");
    text.lines().next().unwrap_or_default().to_owned()
}

/// Parses `header` + one written line the way `tfrc-analysis` reads a run.
fn read_back<T: DeserializeOwned>(header: &str, line: &[u8]) -> T {
    let text = format!("{header}\n{}", String::from_utf8_lossy(line));
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    reader
        .deserialize()
        .next()
        .expect("one row")
        .expect("the written row parses")
}

fn written(row: &impl CsvRow) -> Vec<u8> {
    let mut line = CsvLine::default();
    row.write_csv(&mut line);
    line.finish().to_vec()
}

/// One cell as [`CsvLine`] writes it.
fn cell(write: impl FnOnce(&mut CsvLine)) -> String {
    let mut line = CsvLine::default();
    write(&mut line);
    line.into_text()
}

fn flow_row() -> FlowRow {
    FlowRow {
        time_s: 0.3,
        flow: "a".into(),
        kind: FlowKind::Tfrc,
        sent_bytes: 1,
        recv_bytes: 2,
        sent_packets: 3,
        recv_packets: 4,
        send_kbps: 1.5,
        recv_kbps: 2.0,
        goodput_bytes: 1,
        goodput_kbps: 1.0,
    }
}

fn link_row() -> LinkRow {
    LinkRow {
        time_s: 1.0,
        from: "r1".into(),
        to: "r2".into(),
        queue_packets: 1,
        queue_bytes: 1000,
        average_queue: Some(0.5),
        arrivals: 3,
        departures: 2,
        departure_bytes: 2000,
        utilization: Some(0.99),
        drops: 1,
        drops_unmarked: Some(1),
        drops_in: Some(0),
        drops_out: None,
        drops_loss_model: Some(0),
        marked_in: None,
        marked_out: None,
        ecn_marks: Some(0),
    }
}

#[test]
fn headers_are_the_field_names() {
    assert_eq!(serde_header(&flow_row()), header(RowFile::Flows));
    assert_eq!(
        serde_header(&StateRow::empty(0.0, "a", FlowKind::Tfrc)),
        header(RowFile::State)
    );
    assert_eq!(serde_header(&link_row()), header(RowFile::Links));
    assert_eq!(
        header(RowFile::Flows),
        "time_s,flow,kind,sent_bytes,recv_bytes,sent_packets,recv_packets,send_kbps,recv_kbps,goodput_bytes,goodput_kbps"
    );
}

#[test]
fn cells_are_written_as_documented() {
    let fixed = |value: f64, decimals: usize| cell(|line| line.fixed(Some(value), decimals));
    assert_eq!(fixed(1234.56, 1), "1234.6");
    assert_eq!(fixed(0.0004, 3), "0.000");
    assert_eq!(fixed(-0.0004, 3), "-0.000");
    assert_eq!(fixed(-2.75, 0), "-3");
    assert_eq!(fixed(2.0592555, 6), format!("{:.6}", 2.0592555));
    assert_eq!(fixed(0.000_001_5, 6), "0.000002");
    assert_eq!(fixed(12.0, 4), "12.0000");
    assert_eq!(fixed(1e300, 1), format!("{:.1}", 1e300));
    assert_eq!(cell(|line| line.fixed(None, 3)), "");
    assert_eq!(cell(|line| line.fixed(Some(f64::NAN), 3)), "");
    assert_eq!(cell(|line| line.fixed(Some(f64::INFINITY), 3)), "");
    assert_eq!(cell(|line| line.shortest(Some(4.0))), "4");
    assert_eq!(cell(|line| line.shortest(Some(0.0123))), "0.0123");
    assert_eq!(cell(|line| line.shortest(Some(f64::NAN))), "");
    assert_eq!(format_seconds(0.0), "0");
    assert_eq!(format_seconds(12.0), "12");
    assert_eq!(format_seconds(12.5), "12.5");
    assert_eq!(format_seconds(0.3), "0.3");
    assert_eq!(format_seconds(1e-9), "0.000000001");
    assert_eq!(format_time_nanos(300_000_000), "0.3");
    assert_eq!(format_seconds(-1.5), "-1.5");
}

#[test]
fn fixed_cells_are_the_standard_library_text() {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..200_000 {
        let bits = next();
        let decimals = (bits >> 4) as usize % (cell::MAX_DECIMALS + 1);
        let value = match round % 3 {
            // Any magnitude.
            0 => {
                let magnitude = 10f64.powi((bits % 16) as i32 - 6);
                (bits >> 11) as f64 / (1u64 << 53) as f64 * magnitude
            }
            // Whole nanoseconds in seconds: ties at 6 decimals are common.
            1 => (bits % 10_000_000_000) as f64 / 1e9,
            // Exact and near ties at every number of decimals.
            _ => ((bits % 1_000_000) as f64 + 0.5) / 10f64.powi(decimals as i32),
        };
        let value = if bits & 1 == 0 { value } else { -value };
        assert_eq!(
            cell(|line| line.fixed(Some(value), decimals)),
            format!("{value:.decimals$}"),
            "{value} with {decimals} decimals"
        );
    }
}

fn optional(value: f64, present: bool) -> Option<f64> {
    present.then_some(value)
}

fn any_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        -1e12..1e12f64,
        0.0..1.0f64,
        0.0..1e-6f64,
        Just(f64::NAN),
        Just(-0.0),
        Just(1e300),
        (0u64..1_000_000).prop_map(|n| n as f64 / 1000.0 + 0.0005),
    ]
}

proptest! {
    /// A row kept in memory is the row its written text reads back as, bit for bit.
    #[test]
    fn rows_in_memory_are_their_files_read_back(
        nanos in 0u64..(1u64 << 51),
        values in proptest::collection::vec(any_value(), 12),
        present in proptest::collection::vec(any::<bool>(), 12),
        counts in proptest::collection::vec(any::<u32>(), 6),
    ) {
        let time_s = nanos as f64 / 1e9;
        prop_assert_eq!(format_seconds(time_s), format_time_nanos(nanos));
        let value = |index: usize| optional(values[index], present[index]);
        let finite = |index: usize| if values[index].is_finite() { values[index] } else { 0.0 };

        let flow = FlowRow {
            time_s,
            send_kbps: finite(0),
            recv_kbps: finite(1),
            goodput_kbps: finite(2),
            sent_bytes: u64::from(counts[0]),
            goodput_bytes: u64::from(counts[1]),
            ..flow_row()
        };
        let line = written(&flow);
        let read: FlowRow = read_back(header(RowFile::Flows), &line);
        prop_assert_eq!(&read, &flow.clone().into_written());
        prop_assert_eq!(written(&read), line);

        let state = StateRow {
            x_bps: value(0),
            x_recv_bps: value(1),
            p: value(2),
            rtt_s: value(3),
            rto_s: value(4),
            target_bps: value(5),
            feedbacks_per_rtt: present[6].then_some(f64::from(counts[1] % 64)),
            veno_n: value(7),
            cwnd: value(8),
            ssthresh: present[9].then_some(f64::from(counts[2])),
            srtt_s: value(10),
            ..StateRow::empty(time_s, "flow-1", FlowKind::Tcp)
        };
        let line = written(&state);
        let read: StateRow = read_back(header(RowFile::State), &line);
        // NaN ≠ NaN: compare the texts of what was read and what memory keeps, then the rows.
        let kept = state.clone().into_written();
        prop_assert_eq!(written(&kept), line.clone());
        prop_assert_eq!(format!("{read:?}"), format!("{kept:?}"));

        let link = LinkRow {
            time_s,
            average_queue: value(0),
            utilization: value(11),
            queue_bytes: u64::from(counts[3]),
            drops_out: present[5].then_some(u64::from(counts[4])),
            ..link_row()
        };
        let line = written(&link);
        let read: LinkRow = read_back(header(RowFile::Links), &line);
        prop_assert_eq!(format!("{read:?}"), format!("{:?}", link.clone().into_written()));
    }
}

#[test]
fn jain_index_of_equal_and_unequal_shares() {
    assert_eq!(jain_index(&[1.0, 1.0, 1.0, 1.0]), Some(1.0));
    // One flow takes everything: 1/n.
    assert_eq!(jain_index(&[4.0, 0.0, 0.0, 0.0]), Some(0.25));
    // (1 + 3)^2 / (2 · (1 + 9)) = 16 / 20.
    assert!((jain_index(&[1.0, 3.0]).unwrap_or(0.0) - 0.8).abs() < 1e-12);
    assert_eq!(jain_index(&[]), None);
    assert_eq!(jain_index(&[0.0, 0.0]), None);
}

#[test]
fn coefficient_of_variation_of_constant_and_alternating_counts() {
    assert_eq!(coefficient_of_variation(&[5.0, 5.0, 5.0]), Some(0.0));
    // mean 1, deviations ±1 → std 1 → CoV 1.
    assert_eq!(coefficient_of_variation(&[0.0, 2.0, 0.0, 2.0]), Some(1.0));
    assert_eq!(coefficient_of_variation(&[]), None);
    assert_eq!(coefficient_of_variation(&[0.0, 0.0]), None);
    assert_eq!(coefficient_of_variation(&[1.0, f64::NAN]), None);
}

#[test]
fn quantiles_interpolate_between_order_statistics() {
    assert_eq!(stats::quantile(&[3.0, 1.0, 2.0], 0.5), Some(2.0));
    assert_eq!(stats::quantile(&[1.0, 2.0], 0.25), Some(1.25));
    assert_eq!(stats::quantile(&[1.0], 1.5), None);
    assert_eq!(stats::quantile(&[], 0.5), None);
}

#[test]
fn feedbacks_per_rtt_is_count_times_rtt_over_active_time() {
    let summary = FlowSummary {
        name: "f".into(),
        kind: FlowKind::Tfrc,
        from: "a".into(),
        to: "b".into(),
        start_s: 10.0,
        stop_s: 110.0,
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
        mean_rtt_s: Some(0.25),
        cov_sent_100ms: None,
        feedbacks: Some(1200),
        retransmissions: None,
        timeouts: None,
        delay_p50_s: Some(0.0412),
        delay_p95_s: Some(0.0456),
        delay_p99_s: Some(0.05),
        frames: None,
        frames_on_time: None,
        frames_late: None,
    };
    assert_eq!(summary.feedbacks_per_rtt(), Some(3.0));
    let unknown = FlowSummary {
        feedbacks: None,
        ..summary.clone()
    };
    assert_eq!(unknown.feedbacks_per_rtt(), None);
    // A file written before the field existed reads with `feedbacks` absent.
    let mut json: serde_json::Value = serde_json::to_value(&summary).unwrap();
    for field in [
        "feedbacks",
        "retransmissions",
        "timeouts",
        "delay_p50_s",
        "delay_p95_s",
        "delay_p99_s",
    ] {
        json.as_object_mut().unwrap().remove(field);
    }
    let read: FlowSummary = serde_json::from_value(json).unwrap();
    assert_eq!(
        (read.feedbacks, read.retransmissions, read.timeouts),
        (None, None, None)
    );
    assert_eq!(
        (read.delay_p50_s, read.delay_p95_s, read.delay_p99_s),
        (None, None, None)
    );
}

proptest! {
    /// The streaming CoV of counts is the slice formula's, to rounding.
    #[test]
    fn streaming_count_moments_match_the_slice_formula(
        counts in proptest::collection::vec(0u64..5000, 1..400),
    ) {
        let mut moments = stats::CountMoments::default();
        for &count in &counts {
            if count == 0 { moments.add_zeros(1) } else { moments.add(count) }
        }
        let values: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
        match (moments.coefficient_of_variation(), coefficient_of_variation(&values)) {
            (Some(a), Some(b)) => prop_assert!((a - b).abs() <= 1e-9 * b.max(1e-9), "{} vs {}", a, b),
            (a, b) => prop_assert_eq!(a, b),
        }
    }
}

#[test]
fn summary_write_is_pretty_json_with_a_newline_that_reads_back() {
    let directory = tempfile::tempdir().unwrap();
    let summary = Summary::new(
        RunIdentity {
            tool: "tfrc test".to_owned(),
            scenario: "written".to_owned(),
            seed: 7,
            duration_s: 1.5,
            interval_s: 0.5,
            parameters: Vec::new(),
        },
        Vec::new(),
        None,
        Vec::new(),
    );
    summary.write(directory.path()).unwrap();
    let text = std::fs::read_to_string(directory.path().join(SUMMARY_FILE)).unwrap();
    assert!(text.ends_with("}\n"), "{text}");
    assert!(text.contains("\n  \"scenario\": \"written\""), "{text}");
    let read: Summary = serde_json::from_str(&text).unwrap();
    assert_eq!(read, summary);
}

#[test]
fn summary_write_names_the_file_it_cannot_write() {
    let directory = tempfile::tempdir().unwrap();
    let missing = directory.path().join("no such folder");
    let summary = Summary::new(
        RunIdentity {
            tool: "tfrc test".to_owned(),
            scenario: "s".to_owned(),
            seed: 1,
            duration_s: 1.0,
            interval_s: 1.0,
            parameters: Vec::new(),
        },
        Vec::new(),
        None,
        Vec::new(),
    );
    let error = summary.write(&missing).unwrap_err().to_string();
    assert!(error.contains("no such folder/summary.json"), "{error}");
}
