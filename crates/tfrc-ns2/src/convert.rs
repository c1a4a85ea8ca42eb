//! From the counters the generated script prints to the toolkit's output files
//! (`docs/output-format.md`): `flows.csv`, `state.csv`, `links.csv`, `summary.json`.
//!
//! The script prints cumulative counters at each sampling time; per-interval values are the
//! differences. Cells ns-2 cannot fill (TFRC's p, X_recv and RTT are not bound to Tcl; dsRED
//! keeps no per-colour counters) are left empty, and the matching summary fields are null.

use core::time::Duration;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tfrc_output::{FlowRow, LinkRow, StateRow, SCHEMA_VERSION};

use crate::error::Ns2Error;
use crate::generate::{Layout, SampleKind};

/// A header line of the output schema (`tfrc-output`) as cells.
fn header_cells(header: &str) -> Vec<String> {
    header.split(',').map(str::to_owned).collect()
}

/// The converted run: rows of the three CSV files (header first) and the summary.
#[derive(Debug, Clone)]
pub struct Converted {
    /// `flows.csv`, header row first.
    pub flows: Vec<Vec<String>>,
    /// `state.csv`, header row first.
    pub state: Vec<Vec<String>>,
    /// `links.csv`, header row first.
    pub links: Vec<Vec<String>>,
    /// `summary.json`.
    pub summary: Value,
}

/// Cumulative flow counters at one sampling time.
#[derive(Debug, Clone, Copy, Default)]
struct FlowCounters {
    sent_packets: u64,
    sent_bytes: u64,
    recv_packets: Option<u64>,
    recv_bytes: u64,
}

/// A flow's counts over the run: ns-2's counters summed over the intervals, and the
/// application payload derived from them ([`goodput_bytes`]), which ns-2 does not print.
#[derive(Debug, Clone, Copy, Default)]
struct FlowTotals {
    counters: FlowCounters,
    goodput_bytes: u64,
}

/// The application payload in `recv_bytes` bytes / `recv_packets` packets that ns-2's sink
/// counted for a flow of `packet_size`-byte packets (the output schema's `goodput_bytes`):
/// - `Agent/TCPSink`'s `bytes_` already counts only what it hands up in order, segments whole
///   (`numToDeliver` in `TcpSink::recv()`); every segment is `packet_size` bytes of which 40
///   are the TCP/IP header (`tcpip_base_hdr_size_`), so the payload is `(packet_size − 40) /
///   packet_size` of it.
/// - `Agent/TFRCSink`'s `bytes_` counts every packet (TFRC never sends one twice); with
///   `useHeaders_ false` the 32-byte TFRC header is inside `packet_size`, as in the simulator.
/// - `Agent/LossMonitor` (CBR, on/off): the packet whole, as the simulator counts it.
fn goodput_bytes(kind: SampleKind, packet_size: u32, recv_bytes: u64, recv_packets: u64) -> u64 {
    let size = u64::from(packet_size.max(1));
    match kind {
        SampleKind::Tcp => {
            let header = u64::from(crate::generate::NS2_TCP_HEADER_BYTES).min(size);
            recv_bytes / size * (size - header)
        }
        SampleKind::Tfrc => {
            recv_packets * size.saturating_sub(u64::from(crate::generate::NS2_TFRC_HEADER_BYTES))
        }
        SampleKind::Udp => recv_bytes,
    }
}

/// Cumulative link-direction counters at one sampling time.
#[derive(Debug, Clone, Default)]
struct LinkCounters {
    queue_bytes: u64,
    queue_packets: u64,
    arrivals: u64,
    departures: u64,
    departure_bytes: u64,
    drops: u64,
    average_queue: Option<f64>,
}

/// One state sample of a flow (numbers as ns-2 printed them, `None` for "-").
#[derive(Debug, Clone, Default)]
struct StateSample {
    values: Vec<Option<f64>>,
}

struct Samples {
    flows: Vec<Vec<Option<FlowCounters>>>,
    links: Vec<Vec<Option<LinkCounters>>>,
    state: Vec<Vec<Option<StateSample>>>,
}

/// Parses the script's output (`path` names it in errors) and builds the converted files.
///
/// Lines that do not start with `F `, `S ` or `L ` are ignored (ns-2 prints warnings of its
/// own); a malformed sample line, or a sample missing for some flow, link direction or time
/// (ns-2 stopped early), is an error naming the file and line or the missing sample.
pub fn convert_samples(layout: &Layout, output: &str, path: &Path) -> Result<Converted, Ns2Error> {
    let samples = parse(layout, output, path)?;
    let missing = |what: String| Ns2Error::Parse {
        path: path.to_path_buf(),
        line_number: output.lines().count(),
        line: String::new(),
        message: format!("ns-2's output ends without the sample of {what} (did ns-2 stop early?)"),
    };

    // flows.csv
    let mut flows = vec![header_cells(FlowRow::HEADER)];
    let mut totals = vec![FlowTotals::default(); layout.flows.len()];
    let mut per_interval_sent: Vec<Vec<u64>> = vec![Vec::new(); layout.flows.len()];
    for (k, &time) in layout.flow_times.iter().enumerate() {
        let width = time
            - if k == 0 {
                Duration::ZERO
            } else {
                layout.flow_times[k - 1]
            };
        for (i, flow) in layout.flows.iter().enumerate() {
            let now = samples.flows[k][i].ok_or_else(|| {
                missing(format!("flow {} at {} s", flow.name, seconds_text(time)))
            })?;
            let before = if k == 0 {
                FlowCounters::default()
            } else {
                samples.flows[k - 1][i].unwrap_or_default()
            };
            let size = u64::from(flow.packet_size.max(1));
            let recv_packets_now = now.recv_packets.unwrap_or(now.recv_bytes / size);
            let recv_packets_before = before.recv_packets.unwrap_or(before.recv_bytes / size);
            let sent_bytes = now.sent_bytes.saturating_sub(before.sent_bytes);
            let recv_bytes = now.recv_bytes.saturating_sub(before.recv_bytes);
            let sent_packets = now.sent_packets.saturating_sub(before.sent_packets);
            let recv_packets = recv_packets_now.saturating_sub(recv_packets_before);
            let goodput = goodput_bytes(flow.sample, flow.packet_size, recv_bytes, recv_packets);
            totals[i].goodput_bytes += goodput;
            let counters = &mut totals[i].counters;
            counters.sent_bytes += sent_bytes;
            counters.recv_bytes += recv_bytes;
            counters.sent_packets += sent_packets;
            *counters.recv_packets.get_or_insert(0) += recv_packets;
            if time > flow.start && time - width < flow.stop.min(layout.duration) {
                per_interval_sent[i].push(sent_packets);
            }
            let seconds = width.as_secs_f64();
            flows.push(vec![
                seconds_text(time),
                flow.name.clone(),
                flow.kind.to_owned(),
                sent_bytes.to_string(),
                recv_bytes.to_string(),
                sent_packets.to_string(),
                recv_packets.to_string(),
                number_text(sent_bytes as f64 * 8.0 / seconds / 1000.0),
                number_text(recv_bytes as f64 * 8.0 / seconds / 1000.0),
                goodput.to_string(),
                number_text(goodput as f64 * 8.0 / seconds / 1000.0),
            ]);
        }
    }

    // state.csv
    let mut state = vec![header_cells(StateRow::HEADER)];
    let mut rtt_sums: Vec<(f64, u32)> = vec![(0.0, 0); layout.flows.len()];
    for (k, &time) in layout.state_times.iter().enumerate() {
        for (i, flow) in layout.flows.iter().enumerate() {
            if flow.sample == SampleKind::Udp || time < flow.start || time > flow.stop {
                continue;
            }
            let sample = samples.state[k][i].as_ref().ok_or_else(|| {
                missing(format!(
                    "the state of flow {} at {} s",
                    flow.name,
                    seconds_text(time)
                ))
            })?;
            let value = |index: usize| sample.values.get(index).copied().flatten();
            let mut row = vec![String::new(); state[0].len()];
            row[0] = seconds_text(time);
            row[1] = flow.name.clone();
            row[2] = flow.kind.to_owned();
            match flow.sample {
                SampleKind::Tfrc => {
                    row[3] = optional(value(0).map(|bytes_per_second| bytes_per_second * 8.0));
                    row[9] = flow
                        .feedbacks_per_rtt
                        .map(|n| n.to_string())
                        .unwrap_or_default();
                }
                SampleKind::Tcp => {
                    row[11] = optional(value(0));
                    row[12] = optional(value(1));
                    row[6] = optional(value(2));
                    row[13] = optional(value(3));
                    row[7] = optional(value(4));
                    if let Some(rtt) = value(2) {
                        rtt_sums[i].0 += rtt;
                        rtt_sums[i].1 += 1;
                    }
                }
                SampleKind::Udp => {}
            }
            state.push(row);
        }
    }

    // links.csv
    let mut links = vec![header_cells(LinkRow::HEADER)];
    let mut link_totals = vec![LinkCounters::default(); layout.directions.len()];
    for (k, &time) in layout.flow_times.iter().enumerate() {
        let width = time
            - if k == 0 {
                Duration::ZERO
            } else {
                layout.flow_times[k - 1]
            };
        for (d, direction) in layout.directions.iter().enumerate() {
            let now = samples.links[k][d].clone().ok_or_else(|| {
                missing(format!(
                    "link direction {} -> {} at {} s",
                    direction.from,
                    direction.to,
                    seconds_text(time)
                ))
            })?;
            let before = if k == 0 {
                LinkCounters::default()
            } else {
                samples.links[k - 1][d].clone().unwrap_or_default()
            };
            let arrivals = now.arrivals.saturating_sub(before.arrivals);
            let departures = now.departures.saturating_sub(before.departures);
            let departure_bytes = now.departure_bytes.saturating_sub(before.departure_bytes);
            let drops = now.drops.saturating_sub(before.drops);
            link_totals[d].departures += departures;
            link_totals[d].departure_bytes += departure_bytes;
            link_totals[d].drops += drops;
            let utilization = departure_bytes as f64 * 8.0
                / (direction.capacity_bps as f64 * width.as_secs_f64());
            links.push(vec![
                seconds_text(time),
                direction.from.clone(),
                direction.to.clone(),
                now.queue_packets.to_string(),
                now.queue_bytes.to_string(),
                optional(now.average_queue),
                arrivals.to_string(),
                departures.to_string(),
                departure_bytes.to_string(),
                number_text(utilization),
                drops.to_string(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
    }

    let summary = summarize(layout, &totals, &per_interval_sent, &rtt_sums, &link_totals);
    Ok(Converted {
        flows,
        state,
        links,
        summary,
    })
}

fn summarize(
    layout: &Layout,
    totals: &[FlowTotals],
    per_interval_sent: &[Vec<u64>],
    rtt_sums: &[(f64, u32)],
    link_totals: &[LinkCounters],
) -> Value {
    let duration = layout.duration.as_secs_f64();
    let mut goodputs = Vec::new();
    let mut flows = Vec::new();
    for (i, flow) in layout.flows.iter().enumerate() {
        let start = flow.start.as_secs_f64();
        let stop = flow.stop.min(layout.duration).as_secs_f64();
        let active = stop - start;
        let FlowTotals {
            counters: total,
            goodput_bytes,
        } = totals[i];
        let recv_packets = total.recv_packets.unwrap_or(0);
        let rate = |bytes: u64| {
            if active > 0.0 {
                json!(bytes as f64 * 8.0 / active)
            } else {
                Value::Null
            }
        };
        let goodput = if active > 0.0 {
            goodput_bytes as f64 * 8.0 / active
        } else {
            0.0
        };
        if flow.sample != SampleKind::Udp {
            goodputs.push(goodput);
        }
        let receiving_ratio = if total.sent_packets > 0 {
            json!(recv_packets as f64 / total.sent_packets as f64)
        } else {
            Value::Null
        };
        let mean_rtt = match rtt_sums[i] {
            (_, 0) => Value::Null,
            (sum, count) => json!(sum / f64::from(count)),
        };
        // The CoV of packets per 0.1 s bin is only available when the output interval is 0.1 s.
        let cov = if layout.interval == Duration::from_millis(100) {
            coefficient_of_variation(&per_interval_sent[i])
        } else {
            Value::Null
        };
        flows.push(json!({
            "name": flow.name,
            "kind": flow.kind,
            "from": flow.from,
            "to": flow.to,
            "start_s": start,
            "stop_s": stop,
            "sent_bytes": total.sent_bytes,
            "recv_bytes": total.recv_bytes,
            "sent_packets": total.sent_packets,
            "recv_packets": recv_packets,
            "goodput_bytes": goodput_bytes,
            "send_rate_bps": rate(total.sent_bytes),
            "recv_rate_bps": rate(total.recv_bytes),
            "goodput_bps": rate(goodput_bytes),
            "receiving_ratio": receiving_ratio,
            "mean_p": Value::Null,
            "mean_rtt_s": mean_rtt,
            "cov_sent_100ms": cov,
        }));
    }
    if goodputs.is_empty() {
        goodputs = layout
            .flows
            .iter()
            .zip(totals)
            .map(|(flow, total)| {
                let active =
                    flow.stop.min(layout.duration).as_secs_f64() - flow.start.as_secs_f64();
                if active > 0.0 {
                    total.goodput_bytes as f64 * 8.0 / active
                } else {
                    0.0
                }
            })
            .collect();
    }
    let sum: f64 = goodputs.iter().sum();
    let squares: f64 = goodputs.iter().map(|x| x * x).sum();
    let jain = if sum > 0.0 {
        json!(sum * sum / (goodputs.len() as f64 * squares))
    } else {
        Value::Null
    };
    let utilization = |d: usize| {
        let direction = &layout.directions[d];
        link_totals[d].departure_bytes as f64 * 8.0 / (direction.capacity_bps as f64 * duration)
    };
    let mut crossed: Vec<usize> = layout
        .flows
        .iter()
        .flat_map(|flow| flow.data_path.iter().copied())
        .collect();
    crossed.sort_unstable();
    crossed.dedup();
    let bottleneck = crossed
        .iter()
        .copied()
        .min_by_key(|&d| layout.directions[d].capacity_bps)
        .map(|d| {
            let direction = &layout.directions[d];
            json!({
                "from": direction.from,
                "to": direction.to,
                "capacity_bps": direction.capacity_bps,
                "utilization": utilization(d),
            })
        })
        .unwrap_or(Value::Null);
    let links: Vec<Value> = layout
        .directions
        .iter()
        .enumerate()
        .map(|(d, direction)| {
            json!({
                "from": direction.from,
                "to": direction.to,
                "utilization": utilization(d),
                "drops": link_totals[d].drops,
                "departures": link_totals[d].departures,
            })
        })
        .collect();
    json!({
        "schema_version": SCHEMA_VERSION,
        "tool": format!("ns-2.35 via tfrc {}", env!("CARGO_PKG_VERSION")),
        "scenario": layout.scenario,
        "seed": layout.seed,
        "duration_s": duration,
        "interval_s": layout.interval.as_secs_f64(),
        "flows": flows,
        "jain_index": jain,
        "bottleneck": bottleneck,
        "links": links,
    })
}

fn coefficient_of_variation(values: &[u64]) -> Value {
    if values.is_empty() {
        return Value::Null;
    }
    let n = values.len() as f64;
    let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n;
    if mean == 0.0 {
        return Value::Null;
    }
    let variance = values
        .iter()
        .map(|&v| (v as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    json!(variance.sqrt() / mean)
}

fn parse(layout: &Layout, output: &str, path: &Path) -> Result<Samples, Ns2Error> {
    let flow_count = layout.flows.len();
    let mut samples = Samples {
        flows: vec![vec![None; flow_count]; layout.flow_times.len()],
        links: vec![vec![None; layout.directions.len()]; layout.flow_times.len()],
        state: vec![vec![None; flow_count]; layout.state_times.len()],
    };
    for (number, line) in output.lines().enumerate() {
        let mut fields = line.split_whitespace();
        let tag = fields.next();
        if !matches!(tag, Some("F" | "S" | "L")) {
            continue;
        }
        let fields: Vec<&str> = fields.collect();
        let error = |message: String| Ns2Error::Parse {
            path: path.to_path_buf(),
            line_number: number + 1,
            line: line.to_owned(),
            message,
        };
        let index = |position: usize, limit: usize, what: &str| -> Result<usize, Ns2Error> {
            fields
                .get(position)
                .and_then(|text| text.parse::<usize>().ok())
                .filter(|&value| value < limit)
                .ok_or_else(|| error(format!("expected a {what} index below {limit}")))
        };
        let value = |position: usize| -> Result<Option<f64>, Ns2Error> {
            match fields.get(position) {
                Some(&"-") => Ok(None),
                Some(text) => text
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .map(Some)
                    .ok_or_else(|| error(format!("field {} is not a number", position + 2))),
                None => Err(error(format!("expected at least {} fields", position + 2))),
            }
        };
        let count = |position: usize| -> Result<u64, Ns2Error> {
            value(position)?
                .filter(|v| *v >= 0.0)
                .map(|v| v.round() as u64)
                .ok_or_else(|| error(format!("field {} is not a count", position + 2)))
        };
        match tag {
            Some("F") => {
                let k = index(0, layout.flow_times.len(), "sampling time")?;
                let i = index(1, flow_count, "flow")?;
                let recv_packets = value(4)?.map(|v| v.max(0.0).round() as u64);
                samples.flows[k][i] = Some(FlowCounters {
                    sent_packets: count(2)?,
                    sent_bytes: count(3)?,
                    recv_packets,
                    recv_bytes: count(5)?,
                });
            }
            Some("L") => {
                let k = index(0, layout.flow_times.len(), "sampling time")?;
                let d = index(1, layout.directions.len(), "link direction")?;
                samples.links[k][d] = Some(LinkCounters {
                    queue_bytes: count(2)?,
                    queue_packets: count(3)?,
                    arrivals: count(4)?,
                    departures: count(5)?,
                    departure_bytes: count(6)?,
                    drops: count(7)?,
                    average_queue: value(8)?,
                });
            }
            _ => {
                let k = index(0, layout.state_times.len(), "state sampling time")?;
                let i = index(1, flow_count, "flow")?;
                let expected = match layout.flows[i].sample {
                    SampleKind::Tfrc => 1,
                    SampleKind::Tcp => 5,
                    SampleKind::Udp => 0,
                };
                let values = (0..expected)
                    .map(|position| value(2 + position))
                    .collect::<Result<Vec<_>, _>>()?;
                samples.state[k][i] = Some(StateSample { values });
            }
        }
    }
    Ok(samples)
}

/// Writes `flows.csv`, `state.csv`, `links.csv` and `summary.json` into `directory`.
pub fn write_outputs(converted: &Converted, directory: &Path) -> Result<(), Ns2Error> {
    for (name, rows) in [
        ("flows.csv", &converted.flows),
        ("state.csv", &converted.state),
        ("links.csv", &converted.links),
    ] {
        let path = directory.join(name);
        let csv_error = |source| Ns2Error::Csv {
            path: path.clone(),
            source,
        };
        let mut writer = csv::Writer::from_path(&path).map_err(csv_error)?;
        for row in rows {
            writer.write_record(row).map_err(csv_error)?;
        }
        writer
            .flush()
            .map_err(|source| Ns2Error::io(path.clone(), source))?;
    }
    let path: PathBuf = directory.join("summary.json");
    let text = serde_json::to_string_pretty(&converted.summary).unwrap_or_default() + "\n";
    std::fs::write(&path, text).map_err(|source| Ns2Error::io(path, source))
}

/// Seconds as a decimal with at least one fraction digit (`1.0`, `12.5`, `0.001`).
fn seconds_text(time: Duration) -> String {
    let nanos = time.subsec_nanos();
    if nanos == 0 {
        return format!("{}.0", time.as_secs());
    }
    let fraction = format!("{nanos:09}");
    format!("{}.{}", time.as_secs(), fraction.trim_end_matches('0'))
}

/// A number with at most six decimals, trailing zeros removed (`1632`, `0.01048`): ns-2's
/// doubles carry rounding noise (`1999999.9999999981`) that would only clutter the files.
fn number_text(value: f64) -> String {
    if !value.is_finite() {
        return String::new();
    }
    let text = format!("{value:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

fn optional(value: Option<f64>) -> String {
    value.map(number_text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_text_keeps_a_fraction_digit() {
        assert_eq!(seconds_text(Duration::from_secs(3)), "3.0");
        assert_eq!(seconds_text(Duration::from_millis(12_500)), "12.5");
        assert_eq!(seconds_text(Duration::from_micros(1)), "0.000001");
    }

    #[test]
    fn numbers_drop_rounding_noise() {
        assert_eq!(number_text(1_999_999.999_999_998_1), "2000000");
        assert_eq!(number_text(0.010_48), "0.01048");
        assert_eq!(number_text(1632.0), "1632");
        assert_eq!(number_text(-0.000_000_1), "0");
        assert_eq!(number_text(f64::NAN), "");
    }
}
