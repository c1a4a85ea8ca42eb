//! CSV rows of flow state, one schema per kind of flow (documented in `docs/udp-tools.md`).
//! Column names follow the toolkit's one convention (docs/output-format.md, "Names and units"):
//! the unit is the suffix, times in seconds (`rtt_s`), rates in bits/s (`x_bps`).
//!
//! Every row is written with a single `write` call on an unbuffered file, so a run that is killed
//! leaves every row written before the kill. Empty cells mean "not known" (no RTT yet, an
//! infinite rate, a field the kernel does not report).

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::registry::{FlowKind, FlowSnapshot, ReceiverSnapshot, SenderSnapshot};
use crate::tcp_info::{state_name, TcpInfo};

/// Columns of a TFRC sender's rows.
pub const SENDER_COLUMNS: &[&str] = &[
    "time_s",
    "unix_time_s",
    "flow_id",
    "x_bps",
    "sending_rate_bps",
    "x_calc_bps",
    "x_recv_bps",
    "recv_limit_bps",
    "target_rate_bps",
    "max_rate_bps",
    "p",
    "rtt_s",
    "base_rtt_s",
    "rto_s",
    "veno_backlog_packets",
    "slow_start",
    "packets_sent",
    "bytes_sent",
    "throughput_bps",
    "feedbacks",
    "malformed",
    "foreign",
    "invalid_echo",
    "unproven",
    "hidden_loss",
    "unconfirmed",
    "replayed",
    "false_intervals",
    "under_reported",
    "lies",
    "p_raised",
    "x_recv_capped",
    "no_feedback_expiries",
    "send_errors",
];

/// Columns of a TFRC receiver flow's rows.
pub const RECEIVER_COLUMNS: &[&str] = &[
    "time_s",
    "unix_time_s",
    "flow_id",
    "packets",
    "bytes",
    "goodput_bps",
    "lost",
    "loss_events",
    "p",
    "x_recv_bps",
    "rtt_s",
    "veno_backlog_packets",
    "duplicates",
    "reordered",
    "ecn_marked",
    "malformed",
    "foreign",
    "feedbacks",
];

/// Columns of a TCP socket's rows (from `tcp_info`).
pub const TCP_COLUMNS: &[&str] = &[
    "time_s",
    "unix_time_s",
    "flow_id",
    "state",
    "ca_state",
    "cwnd_segments",
    "ssthresh_segments",
    "mss_bytes",
    "rtt_s",
    "rttvar_s",
    "min_rtt_s",
    "rto_s",
    "unacked_segments",
    "lost_segments",
    "retransmits",
    "retrans_segments",
    "total_retrans",
    "pacing_rate_bps",
    "delivery_rate_bps",
    "delivery_rate_app_limited",
    "bytes_acked",
    "bytes_received",
    "bytes_sent",
    "bytes_retrans",
    "throughput_bps",
];

/// The columns of a kind of flow.
pub fn columns(kind: FlowKind) -> &'static [&'static str] {
    match kind {
        FlowKind::TfrcSender => SENDER_COLUMNS,
        FlowKind::TfrcReceiver => RECEIVER_COLUMNS,
        FlowKind::Tcp => TCP_COLUMNS,
    }
}

/// A rate cell in bits/s from bytes/s; empty when infinite or unknown.
fn rate_cell(bytes_per_second: f64) -> String {
    if bytes_per_second.is_finite() {
        format!("{:.0}", bytes_per_second * 8.0)
    } else {
        String::new()
    }
}

/// A time cell in seconds, to the nanosecond; empty when unknown.
fn seconds_cell(duration: Option<core::time::Duration>) -> String {
    duration.map_or_else(String::new, |value| format!("{:.9}", value.as_secs_f64()))
}

fn optional<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(String::new, |value| value.to_string())
}

/// An open CSV file (one flow, or several flows told apart by `flow_id`). It remembers each
/// flow's previous byte count to give interval rates.
#[derive(Debug)]
pub struct FlowCsv {
    file: File,
    path: PathBuf,
    kind: FlowKind,
    previous: HashMap<String, (f64, u64)>,
    rows: u64,
}

impl FlowCsv {
    /// Creates (truncates) `path` and writes the header of `kind`.
    pub fn create(path: &Path, kind: FlowKind) -> std::io::Result<FlowCsv> {
        let mut file = File::create(path)?;
        let mut header = columns(kind).join(",");
        header.push('\n');
        file.write_all(header.as_bytes())?;
        Ok(FlowCsv {
            file,
            path: path.to_path_buf(),
            kind,
            previous: HashMap::new(),
            rows: 0,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rows written so far (header excluded).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Writes one row. `time_s` is the time since the flow started; snapshots of another kind
    /// than the file's are ignored.
    pub fn write(
        &mut self,
        time_s: f64,
        unix_time_s: f64,
        flow_id: &str,
        snapshot: &FlowSnapshot,
    ) -> std::io::Result<()> {
        let cells = match (self.kind, snapshot) {
            (FlowKind::TfrcSender, FlowSnapshot::TfrcSender(sender)) => {
                let rate = self.interval_rate(flow_id, time_s, sender.stats.bytes);
                sender_cells(sender, rate)
            }
            (FlowKind::TfrcReceiver, FlowSnapshot::TfrcReceiver(receiver)) => {
                let rate = self.interval_rate(flow_id, time_s, receiver.stats.payload_bytes);
                receiver_cells(receiver, rate)
            }
            (FlowKind::Tcp, FlowSnapshot::Tcp(info)) => {
                let bytes = info.bytes_acked.or(info.bytes_received).unwrap_or(0);
                let rate = self.interval_rate(flow_id, time_s, bytes);
                tcp_cells(info, rate)
            }
            _ => return Ok(()),
        };
        let mut line = format!("{time_s:.6},{unix_time_s:.6},{flow_id}");
        for cell in cells {
            line.push(',');
            line.push_str(&cell);
        }
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.rows += 1;
        Ok(())
    }

    /// Bits/s since the previous row, from a byte counter.
    fn interval_rate(&mut self, flow_id: &str, time_s: f64, bytes: u64) -> String {
        let rate = self
            .previous
            .get(flow_id)
            .and_then(|&(previous_time, previous_bytes)| {
                let elapsed = time_s - previous_time;
                (elapsed > 0.0).then(|| bytes.saturating_sub(previous_bytes) as f64 * 8.0 / elapsed)
            });
        self.previous.insert(flow_id.to_string(), (time_s, bytes));
        rate.map_or_else(String::new, |rate| format!("{rate:.0}"))
    }
}

fn sender_cells(sender: &SenderSnapshot, throughput: String) -> Vec<String> {
    let state = &sender.state;
    let stats = &sender.stats;
    vec![
        rate_cell(state.x),
        rate_cell(state.sending_rate),
        rate_cell(state.x_calc),
        rate_cell(state.x_recv),
        rate_cell(state.recv_limit),
        state.target_rate.map_or_else(String::new, rate_cell),
        sender.max_rate.map_or_else(String::new, rate_cell),
        format!("{:.9}", state.p),
        seconds_cell(state.rtt),
        seconds_cell(state.base_rtt),
        seconds_cell(Some(state.rto)),
        format!("{:.3}", state.veno_backlog),
        u8::from(state.slow_start).to_string(),
        stats.packets.to_string(),
        stats.bytes.to_string(),
        throughput,
        stats.feedbacks.to_string(),
        stats.malformed.to_string(),
        stats.foreign.to_string(),
        stats.invalid_echo.to_string(),
        stats.unproven.to_string(),
        stats.hidden_loss.to_string(),
        stats.unconfirmed.to_string(),
        stats.replayed.to_string(),
        stats.false_intervals.to_string(),
        stats.under_reported.to_string(),
        stats.lies.to_string(),
        stats.p_raised.to_string(),
        stats.x_recv_capped.to_string(),
        stats.no_feedback_expiries.to_string(),
        sender.send_errors.to_string(),
    ]
}

fn receiver_cells(receiver: &ReceiverSnapshot, goodput: String) -> Vec<String> {
    let stats = &receiver.stats;
    vec![
        stats.packets.to_string(),
        stats.bytes.to_string(),
        goodput,
        stats.lost.to_string(),
        stats.loss_events.to_string(),
        format!("{:.9}", receiver.loss_event_rate),
        rate_cell(receiver.x_recv),
        seconds_cell(receiver.rtt),
        format!("{:.3}", receiver.veno_backlog),
        stats.duplicates.to_string(),
        stats.reordered.to_string(),
        stats.ecn_marked.to_string(),
        stats.malformed.to_string(),
        stats.foreign.to_string(),
        stats.feedbacks.to_string(),
    ]
}

fn tcp_cells(info: &TcpInfo, throughput: String) -> Vec<String> {
    let micros_to_seconds = |micros: u32| format!("{:.6}", f64::from(micros) / 1e6);
    vec![
        state_name(info.state).to_string(),
        info.ca_state.to_string(),
        info.snd_cwnd.to_string(),
        info.snd_ssthresh.to_string(),
        info.snd_mss.to_string(),
        micros_to_seconds(info.rtt_us),
        micros_to_seconds(info.rttvar_us),
        info.min_rtt_us.map_or_else(String::new, micros_to_seconds),
        micros_to_seconds(info.rto_us),
        info.unacked.to_string(),
        info.lost.to_string(),
        info.retransmits.to_string(),
        info.retrans.to_string(),
        info.total_retrans.to_string(),
        optional(info.pacing_rate.map(|rate| rate.saturating_mul(8))),
        optional(info.delivery_rate.map(|rate| rate.saturating_mul(8))),
        u8::from(info.delivery_rate_app_limited).to_string(),
        optional(info.bytes_acked),
        optional(info.bytes_received),
        optional(info.bytes_sent),
        optional(info.bytes_retrans),
        throughput,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_match_the_header_width() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("tcp.csv");
        let mut csv = FlowCsv::create(&path, FlowKind::Tcp).unwrap();
        let info = TcpInfo {
            state: 1,
            snd_cwnd: 10,
            bytes_acked: Some(1000),
            ..TcpInfo::default()
        };
        csv.write(0.0, 1.0, "5000-127.0.0.1-4000", &FlowSnapshot::Tcp(info))
            .unwrap();
        let info = TcpInfo {
            bytes_acked: Some(2000),
            ..info
        };
        csv.write(0.5, 1.5, "5000-127.0.0.1-4000", &FlowSnapshot::Tcp(info))
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        for line in &lines {
            assert_eq!(line.split(',').count(), TCP_COLUMNS.len(), "{line}");
        }
        assert!(lines[2].ends_with(",16000"), "{}", lines[2]);
    }
}
