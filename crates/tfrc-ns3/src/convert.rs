//! From the counters the ns-3 program writes (`ns3-samples.txt`) to the toolkit's output files
//! (`docs/output-format.md`): `flows.csv`, `state.csv`, `links.csv`, `summary.json`, with
//! `tfrc-output`'s row types and writers, as `tfrc ns2` converts ns-2's.
//!
//! The program writes cumulative counters at each sampling time; per-interval values are the
//! differences. Cells ns-3 does not fill (TFRC's columns, RED's average queue, the per-colour
//! counters) are left empty.

use std::path::Path;

use tfrc_output::external::{
    seconds_text, DirectionMeasures, FlowMeasures, LinkCounters, SampleLine, SampleLineError,
};
use tfrc_output::{FlowTotals, StateRow, Summary};

use crate::describe::Layout;
use crate::error::Ns3Error;

/// The converted run: the rows of the three CSV files and the summary.
#[derive(Debug, Clone)]
pub struct Converted {
    /// `flows.csv`, `state.csv` and `links.csv`.
    pub rows: tfrc_output::Rows,
    /// `summary.json`.
    pub summary: Summary,
}

/// Cumulative flow counters at one sampling time (an `F` line).
#[derive(Debug, Clone, Copy, Default)]
struct FlowCounters {
    sent_packets: u64,
    sent_bytes: u64,
    recv_packets: u64,
    recv_bytes: u64,
    /// What the receiving application got: TCP payload delivered in order; for UDP the
    /// packets whole (IP size), as our simulator counts a UDP flow's goodput.
    sink_bytes: u64,
}

/// `(cwnd, ssthresh, last RTT, SRTT, RTO)` of an `S` line, `None` for `-`.
type StateSample = [Option<f64>; 5];

struct Samples {
    flows: Vec<Vec<Option<FlowCounters>>>,
    links: Vec<Vec<Option<LinkCounters>>>,
    state: Vec<Vec<Option<StateSample>>>,
    /// Per flow, `(timeouts, retransmitted packets)` at the end of the run.
    retransmissions: Vec<Option<(u64, u64)>>,
}

/// Parses the program's samples (`text`, read from `path`, which names it in errors) and
/// builds the converted files. A malformed line, or a sample missing for some flow, direction
/// or time (the program stopped early), is an error naming the file and line or the sample.
pub fn convert_samples(layout: &Layout, text: &str, path: &Path) -> Result<Converted, Ns3Error> {
    let samples = parse(layout, text, path)?;
    let missing = |what: String| -> Ns3Error {
        SampleLineError {
            path: path.to_path_buf(),
            line_number: text.lines().count(),
            line: String::new(),
            message: format!("the samples end without {what} (did ns-3 stop early?)"),
        }
        .into()
    };
    let mut rows = tfrc_output::Rows::default();
    let (totals, per_interval_sent) = flow_rows(layout, &samples, &mut rows, &missing)?;
    let rtt_sums = state_rows(layout, &samples, &mut rows);
    let link_totals =
        tfrc_output::external::link_rows(layout, &samples.links, &mut rows, |what| {
            missing(format!("the sample of {what}"))
        })?;
    let summary = summarize(
        layout,
        (&totals, &per_interval_sent),
        &rtt_sums,
        &samples.retransmissions,
        &link_totals,
    );
    Ok(Converted { rows, summary })
}

/// `flows.csv`: each flow's counts per output interval (the differences of its cumulative `F`
/// samples). Returns the flows' totals and the packets each sent per interval while active.
fn flow_rows(
    layout: &Layout,
    samples: &Samples,
    rows: &mut tfrc_output::Rows,
    missing: &impl Fn(String) -> Ns3Error,
) -> Result<(Vec<FlowTotals>, Vec<Vec<f64>>), Ns3Error> {
    tfrc_output::external::flow_rows(layout, rows, |k, i| {
        let now = samples.flows[k][i].ok_or_else(|| {
            missing(format!(
                "the sample of flow {} at {} s",
                layout.flows[i].name,
                seconds_text(layout.flow_times[k])
            ))
        })?;
        let before = match k {
            0 => FlowCounters::default(),
            _ => samples.flows[k - 1][i].unwrap_or_default(),
        };
        Ok(FlowTotals {
            sent_bytes: now.sent_bytes.saturating_sub(before.sent_bytes),
            recv_bytes: now.recv_bytes.saturating_sub(before.recv_bytes),
            sent_packets: now.sent_packets.saturating_sub(before.sent_packets),
            recv_packets: now.recv_packets.saturating_sub(before.recv_packets),
            goodput_bytes: now.sink_bytes.saturating_sub(before.sink_bytes),
        })
    })
}

/// `state.csv`: each TCP flow's state at each sampling time while it is active and its
/// socket exists. Returns the sums and counts of the RTT samples per flow.
fn state_rows(layout: &Layout, samples: &Samples, rows: &mut tfrc_output::Rows) -> Vec<(f64, u32)> {
    let mut rtt_sums = vec![(0.0, 0); layout.flows.len()];
    for (k, &time) in layout.state_times.iter().enumerate() {
        for (i, flow) in layout.flows.iter().enumerate() {
            if flow.kind != tfrc_output::FlowKind::Tcp || time < flow.start || time > flow.stop {
                continue;
            }
            let Some([cwnd, ssthresh, rtt, srtt, rto]) = samples.state[k][i] else {
                continue;
            };
            let mut row =
                StateRow::empty(tfrc_output::duration_seconds(time), &flow.name, flow.kind);
            row.cwnd = cwnd;
            row.ssthresh = ssthresh;
            row.rtt_s = rtt;
            row.srtt_s = srtt;
            row.rto_s = rto;
            if let Some(rtt) = rtt {
                rtt_sums[i].0 += rtt;
                rtt_sums[i].1 += 1;
            }
            rows.states.push(row);
        }
    }
    rtt_sums
}

/// `summary.json` by the output schema's rules, built by [`tfrc_output::external::summarize`]
/// from what this converter measured.
fn summarize(
    layout: &Layout,
    (totals, per_interval_sent): (&[FlowTotals], &[Vec<f64>]),
    rtt_sums: &[(f64, u32)],
    retransmissions: &[Option<(u64, u64)>],
    link_totals: &[DirectionMeasures],
) -> Summary {
    let mean = |(sum, count): (f64, u32)| (count > 0).then(|| sum / f64::from(count));
    let flows: Vec<FlowMeasures> = (0..layout.flows.len())
        .map(|i| FlowMeasures {
            totals: totals[i],
            sent_per_interval: per_interval_sent[i].clone(),
            mean_rtt_s: mean(rtt_sums[i]),
            mean_p: None,
            retransmissions: retransmissions[i],
        })
        .collect();
    tfrc_output::external::summarize(
        &layout.shape(format!("ns-3.37 via {}", tfrc_output::tool())),
        &flows,
        link_totals,
    )
}

fn parse(layout: &Layout, text: &str, path: &Path) -> Result<Samples, Ns3Error> {
    let flow_count = layout.flows.len();
    let mut samples = Samples {
        flows: vec![vec![None; flow_count]; layout.flow_times.len()],
        links: vec![vec![None; layout.directions.len()]; layout.flow_times.len()],
        state: vec![vec![None; flow_count]; layout.state_times.len()],
        retransmissions: vec![None; flow_count],
    };
    for (number, line) in text.lines().enumerate() {
        let mut fields = line.split_whitespace();
        let Some(tag) = fields.next() else {
            continue;
        };
        let line = SampleLine::new(fields, path, number, line);
        match tag {
            "F" => {
                let k = line.index(0, layout.flow_times.len(), "sampling time")?;
                let i = line.index(1, flow_count, "flow")?;
                samples.flows[k][i] = Some(FlowCounters {
                    sent_packets: line.count(2)?,
                    sent_bytes: line.count(3)?,
                    recv_packets: line.count(4)?,
                    recv_bytes: line.count(5)?,
                    sink_bytes: line.count(6)?,
                });
            }
            "L" => {
                let k = line.index(0, layout.flow_times.len(), "sampling time")?;
                let d = line.index(1, layout.directions.len(), "link direction")?;
                samples.links[k][d] = Some(LinkCounters {
                    queue_bytes: line.count(2)?,
                    queue_packets: line.count(3)?,
                    arrivals: line.count(4)?,
                    departures: line.count(5)?,
                    departure_bytes: line.count(6)?,
                    drops: line.count(7)?,
                    loss_drops: Some(line.count(8)?),
                    average_queue: None,
                });
            }
            "S" => {
                let k = line.index(0, layout.state_times.len(), "state sampling time")?;
                let i = line.index(1, flow_count, "flow")?;
                samples.state[k][i] = Some([
                    line.value(2)?,
                    line.value(3)?,
                    line.value(4)?,
                    line.value(5)?,
                    line.value(6)?,
                ]);
            }
            "R" => {
                let i = line.index(0, flow_count, "flow")?;
                samples.retransmissions[i] = Some((line.count(1)?, line.count(2)?));
            }
            _ => {
                return Err(line
                    .error("expected a line tagged F, L, S or R".to_owned())
                    .into())
            }
        }
    }
    Ok(samples)
}

/// Writes `flows.csv`, `state.csv`, `links.csv` and `summary.json` into `directory`, with
/// the output schema's writer.
pub fn write_outputs(converted: &Converted, directory: &Path) -> Result<(), Ns3Error> {
    tfrc_output::external::write_run(&converted.rows, &converted.summary, directory)
        .map_err(|error| Ns3Error::io(error.path, error.source))
}
