//! From the counters the generated script prints to the toolkit's output files
//! (`docs/output-format.md`): `flows.csv`, `state.csv`, `links.csv`, `summary.json`.
//!
//! The script prints cumulative counters at each sampling time; per-interval values are the
//! differences. Cells ns-2 cannot fill (TFRC's p, X_recv and RTT are not bound to Tcl; dsRED
//! keeps no per-colour counters) are left empty, and the matching summary fields are null.

use std::path::Path;

use tfrc_output::external::{
    seconds_text, DirectionMeasures, FlowMeasures, LinkCounters, SampleLine, SampleLineError,
};
use tfrc_output::{FlowTotals, StateRow, Summary};

use crate::error::Ns2Error;
use crate::generate::{loss_rate_flow, Layout, SampleKind};

/// The converted run: the rows of the three CSV files and the summary, in the output schema's
/// types (`tfrc-output`), written as the simulator writes its own.
#[derive(Debug, Clone)]
pub struct Converted {
    /// `flows.csv`, `state.csv` and `links.csv`.
    pub rows: tfrc_output::Rows,
    /// `summary.json`.
    pub summary: Summary,
}

/// Cumulative flow counters at one sampling time.
#[derive(Debug, Clone, Copy, Default)]
struct FlowCounters {
    sent_packets: u64,
    sent_bytes: u64,
    recv_packets: Option<u64>,
    recv_bytes: u64,
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

/// One state sample of a flow (numbers as ns-2 printed them, `None` for "-").
#[derive(Debug, Clone, Default)]
struct StateSample {
    values: Vec<Option<f64>>,
}

/// A running sum and how many values it holds.
type SumCount = (f64, u32);

struct Samples {
    flows: Vec<Vec<Option<FlowCounters>>>,
    links: Vec<Vec<Option<LinkCounters>>>,
    state: Vec<Vec<Option<StateSample>>>,
    /// Per flow, TCP's `(nrexmit_, nrexmitpack_)` at the end of the run.
    retransmissions: Vec<Option<(u64, u64)>>,
    /// `(time, p)` as [`loss_rate_flow`]'s sink printed them, in time order.
    loss_rates: Vec<(f64, f64)>,
}

/// Parses the script's samples (`output`, read from `path`, which names it in errors) and builds the converted files.
///
/// Lines that do not start with `F `, `S `, `L ` or `R ` are ignored (ns-2 prints warnings of its own); a malformed sample line, or a sample missing for some flow, link direction or time
/// (ns-2 stopped early), is an error naming the file and line or the missing sample.
///
/// `printed` is what ns-2 itself printed on standard output; the loss event rates of
/// [`loss_rate_flow`] are read from it.
pub fn convert_samples(
    layout: &Layout,
    output: &str,
    printed: &str,
    path: &Path,
) -> Result<Converted, Ns2Error> {
    let samples = parse(layout, output, printed, path)?;
    let missing = |what: String| -> Ns2Error {
        SampleLineError {
            path: path.to_path_buf(),
            line_number: output.lines().count(),
            line: String::new(),
            message: format!(
                "ns-2's output ends without the sample of {what} (did ns-2 stop early?)"
            ),
        }
        .into()
    };

    let mut rows = tfrc_output::Rows::default();
    let (totals, per_interval_sent) = flow_rows(layout, &samples, &mut rows, &missing)?;
    let (rtt_sums, p_sums) = state_rows(layout, &samples, &mut rows, &missing)?;
    let link_totals = tfrc_output::external::link_rows(layout, &samples.links, &mut rows, missing)?;
    let summary = summarize(
        layout,
        &totals,
        &per_interval_sent,
        (&rtt_sums, &p_sums),
        &samples.retransmissions,
        &link_totals,
    );
    Ok(Converted { rows, summary })
}

/// `flows.csv`: each flow's counts per output interval (differences of ns-2's cumulative
/// counters). Returns the flows' totals and the packets each sent per interval while active
/// (for the summary).
fn flow_rows(
    layout: &Layout,
    samples: &Samples,
    rows: &mut tfrc_output::Rows,
    missing: &impl Fn(String) -> Ns2Error,
) -> Result<(Vec<FlowTotals>, Vec<Vec<f64>>), Ns2Error> {
    tfrc_output::external::flow_rows(layout, rows, |k, i| {
        let flow = &layout.flows[i];
        let now = samples.flows[k][i].ok_or_else(|| {
            missing(format!(
                "flow {} at {} s",
                flow.name,
                seconds_text(layout.flow_times[k])
            ))
        })?;
        let before = if k == 0 {
            FlowCounters::default()
        } else {
            samples.flows[k - 1][i].unwrap_or_default()
        };
        let size = u64::from(flow.packet_size.max(1));
        let recv_packets_now = now.recv_packets.unwrap_or(now.recv_bytes / size);
        let recv_packets_before = before.recv_packets.unwrap_or(before.recv_bytes / size);
        let recv_bytes = now.recv_bytes.saturating_sub(before.recv_bytes);
        let recv_packets = recv_packets_now.saturating_sub(recv_packets_before);
        Ok(FlowTotals {
            sent_bytes: now.sent_bytes.saturating_sub(before.sent_bytes),
            recv_bytes,
            sent_packets: now.sent_packets.saturating_sub(before.sent_packets),
            recv_packets,
            goodput_bytes: goodput_bytes(
                flow.extra.sample,
                flow.packet_size,
                recv_bytes,
                recv_packets,
            ),
        })
    })
}

/// `state.csv`: the protocol state of each TFRC and TCP flow at each sampling time (the
/// loss event rate for the one TFRC flow whose sink prints it). Returns the sums and counts
/// of the RTT samples and of p per flow (for the summary).
fn state_rows(
    layout: &Layout,
    samples: &Samples,
    rows: &mut tfrc_output::Rows,
    missing: &impl Fn(String) -> Ns2Error,
) -> Result<(Vec<SumCount>, Vec<SumCount>), Ns2Error> {
    let seconds = tfrc_output::duration_seconds;
    let mut rtt_sums: Vec<(f64, u32)> = vec![(0.0, 0); layout.flows.len()];
    let mut p_sums: Vec<(f64, u32)> = vec![(0.0, 0); layout.flows.len()];
    // The printed p in force at a time: the last printed at or before it, 0 before the first
    // (the sink prints only once p > 0).
    let mut printed = samples.loss_rates.iter().peekable();
    let mut p_now = 0.0;
    let loss_rate = loss_rate_flow(&layout.flows);
    for (k, &time) in layout.state_times.iter().enumerate() {
        for (i, flow) in layout.flows.iter().enumerate() {
            if flow.extra.sample == SampleKind::Udp || time < flow.start || time > flow.stop {
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
            let mut row = StateRow::empty(seconds(time), &flow.name, flow.kind);
            match flow.extra.sample {
                SampleKind::Tfrc => {
                    row.x_bps = value(0).map(|bytes_per_second| bytes_per_second * 8.0);
                    row.feedbacks_per_rtt = flow.extra.feedbacks_per_rtt.map(f64::from);
                    if loss_rate == Some(i) {
                        while let Some(&&(at, p)) = printed.peek() {
                            if at > time.as_secs_f64() + 1e-9 {
                                break;
                            }
                            p_now = p;
                            printed.next();
                        }
                        row.p = Some(p_now);
                        p_sums[i].0 += p_now;
                        p_sums[i].1 += 1;
                    }
                }
                SampleKind::Tcp => {
                    row.cwnd = value(0);
                    row.ssthresh = value(1);
                    row.rtt_s = value(2);
                    row.srtt_s = value(3);
                    row.rto_s = value(4);
                    if let Some(rtt) = value(2) {
                        rtt_sums[i].0 += rtt;
                        rtt_sums[i].1 += 1;
                    }
                }
                SampleKind::Udp => {}
            }
            rows.states.push(row);
        }
    }
    Ok((rtt_sums, p_sums))
}

/// `summary.json` by the output schema's rules, built by [`tfrc_output::external::summarize`]
/// from what this converter measured.
fn summarize(
    layout: &Layout,
    totals: &[FlowTotals],
    per_interval_sent: &[Vec<f64>],
    (rtt_sums, p_sums): (&[SumCount], &[SumCount]),
    retransmissions: &[Option<(u64, u64)>],
    link_totals: &[DirectionMeasures],
) -> Summary {
    let mean = |(sum, count): (f64, u32)| (count > 0).then(|| sum / f64::from(count));
    let flows: Vec<FlowMeasures> = (0..layout.flows.len())
        .map(|i| FlowMeasures {
            totals: totals[i],
            sent_per_interval: per_interval_sent[i].clone(),
            mean_rtt_s: mean(rtt_sums[i]),
            // The time average of the printed p over the state samples, as the simulator's
            // mean of the sender's p: only the flow whose sink prints it has one.
            mean_p: mean(p_sums[i]),
            retransmissions: retransmissions[i],
        })
        .collect();
    tfrc_output::external::summarize(
        &layout.shape(format!("ns-2.35 via {}", tfrc_output::tool())),
        &flows,
        link_totals,
    )
}

/// The loss event rates ns-2's TFRC sink printed (`printLoss_ 1`) on standard output:
/// `TfrcSinkAgent::print_loss` writes "time: %7.5f loss_rate: %7.5f" and a second line
/// ("time: T sample 0: N loss_rate: P") that repeats the value; everything else is skipped.
fn printed_loss_rates(printed: &str) -> Vec<(f64, f64)> {
    printed
        .lines()
        .filter_map(|line| {
            let [tag, time, "loss_rate:", p] = line.split_whitespace().collect::<Vec<_>>()[..]
            else {
                return None;
            };
            let (time, p) = (time.parse::<f64>().ok()?, p.parse::<f64>().ok()?);
            (tag == "time:" && time.is_finite() && (0.0..=1.0).contains(&p)).then_some((time, p))
        })
        .collect()
}

fn parse(layout: &Layout, output: &str, printed: &str, path: &Path) -> Result<Samples, Ns2Error> {
    let flow_count = layout.flows.len();
    let mut samples = Samples {
        flows: vec![vec![None; flow_count]; layout.flow_times.len()],
        links: vec![vec![None; layout.directions.len()]; layout.flow_times.len()],
        state: vec![vec![None; flow_count]; layout.state_times.len()],
        retransmissions: vec![None; flow_count],
        loss_rates: printed_loss_rates(printed),
    };
    for (number, line) in output.lines().enumerate() {
        let mut fields = line.split_whitespace();
        let tag = fields.next();
        if !matches!(tag, Some("F" | "S" | "L" | "R")) {
            continue;
        }
        let line = SampleLine::new(fields, path, number, line);
        match tag {
            Some("F") => samples.record_flow(layout, &line)?,
            Some("L") => samples.record_link(layout, &line)?,
            Some("R") => {
                let i = line.index(0, flow_count, "flow")?;
                samples.retransmissions[i] = Some((line.rounded_count(1)?, line.rounded_count(2)?));
            }
            _ => samples.record_state(layout, &line)?,
        }
    }
    Ok(samples)
}

impl Samples {
    /// An `F` line: a flow's cumulative counters at an output interval's end.
    fn record_flow(&mut self, layout: &Layout, line: &SampleLine<'_>) -> Result<(), Ns2Error> {
        let k = line.index(0, layout.flow_times.len(), "sampling time")?;
        let i = line.index(1, layout.flows.len(), "flow")?;
        let recv_packets = line.value(4)?.map(|v| v.max(0.0).round() as u64);
        self.flows[k][i] = Some(FlowCounters {
            sent_packets: line.rounded_count(2)?,
            sent_bytes: line.rounded_count(3)?,
            recv_packets,
            recv_bytes: line.rounded_count(5)?,
        });
        Ok(())
    }

    /// An `L` line: a link direction's queue and cumulative counters.
    fn record_link(&mut self, layout: &Layout, line: &SampleLine<'_>) -> Result<(), Ns2Error> {
        let k = line.index(0, layout.flow_times.len(), "sampling time")?;
        let d = line.index(1, layout.directions.len(), "link direction")?;
        self.links[k][d] = Some(LinkCounters {
            queue_bytes: line.rounded_count(2)?,
            queue_packets: line.rounded_count(3)?,
            arrivals: line.rounded_count(4)?,
            departures: line.rounded_count(5)?,
            departure_bytes: line.rounded_count(6)?,
            drops: line.rounded_count(7)?,
            average_queue: line.value(8)?,
            loss_drops: None,
        });
        Ok(())
    }

    /// An `S` line: a flow's protocol state (as many values as its kind samples).
    fn record_state(&mut self, layout: &Layout, line: &SampleLine<'_>) -> Result<(), Ns2Error> {
        let k = line.index(0, layout.state_times.len(), "state sampling time")?;
        let i = line.index(1, layout.flows.len(), "flow")?;
        let expected = match layout.flows[i].extra.sample {
            SampleKind::Tfrc => 1,
            SampleKind::Tcp => 5,
            SampleKind::Udp => 0,
        };
        let values = (0..expected)
            .map(|position| line.value(2 + position))
            .collect::<Result<Vec<_>, _>>()?;
        self.state[k][i] = Some(StateSample { values });
        Ok(())
    }
}

/// Writes `flows.csv`, `state.csv`, `links.csv` and `summary.json` into `directory`, with
/// the output schema's writer.
pub fn write_outputs(converted: &Converted, directory: &Path) -> Result<(), Ns2Error> {
    tfrc_output::external::write_run(&converted.rows, &converted.summary, directory)
        .map_err(|error| Ns2Error::io(error.path, error.source))
}
