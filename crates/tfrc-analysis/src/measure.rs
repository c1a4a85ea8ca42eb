//! Measurements of a loaded [`Run`], computed from its CSV rows with [`crate::metrics`].
//!
//! These recompute what `summary.json` states (goodput, receiving ratio, mean p, mean RTT, Jain
//! index, bottleneck utilization) from the per-interval files, so a run from any source — ours,
//! ns-2's converter, the testbed — is measured the same way, and add what the summary does not
//! have (burstiness, convergence and recovery times).

use crate::metrics::{self, ConvergenceOptions, FlowRates, MetricError, RecoveryOptions};
use crate::run::{Direction, FlowSummary, Run};
use tfrc_output::FlowKind;

/// Measurements of one flow.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowMetrics {
    /// Flow name.
    pub name: String,
    /// Flow kind.
    pub kind: FlowKind,
    /// Bytes sent (sum of `flows.csv`).
    pub sent_bytes: u64,
    /// Bytes delivered, headers and duplicates included (sum of `flows.csv`).
    pub recv_bytes: u64,
    /// Application payload delivered (sum of `flows.csv`'s `goodput_bytes`).
    pub goodput_bytes: u64,
    /// `goodput_bytes · 8 / (stop_s − start_s)` (b/s).
    pub goodput_bps: Option<f64>,
    /// Received packets / sent packets.
    pub receiving_ratio: Option<f64>,
    /// Mean of the reported p over the state samples that have one (the last value of the
    /// cumulative mean); TFRC only.
    pub mean_p: Option<f64>,
    /// Mean of `rtt_s` over the state samples that have one.
    pub mean_rtt_s: Option<f64>,
    /// Burstiness index: std / mean of `goodput_kbps` over the intervals ending in the flow's
    /// active time `(start_s, stop_s]` (paper 004 takes the received rate from iperf, i.e. what
    /// the application got).
    pub burstiness_index: Option<f64>,
}

/// Measurements of a whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunMetrics {
    /// One per flow, in scenario order.
    pub flows: Vec<FlowMetrics>,
    /// Jain index over the goodputs of the TFRC and TCP flows (of all flows if there are none).
    pub jain_index: Option<f64>,
    /// Bytes through the bottleneck (as named in `summary.json`) · 8 / (capacity · duration);
    /// `None` without a bottleneck or for a trace-driven one.
    pub bottleneck_utilization: Option<f64>,
}

/// Measures every flow of a run and the run as a whole.
pub fn run_metrics(run: &Run) -> RunMetrics {
    let flows: Vec<FlowMetrics> = run
        .summary
        .flows
        .iter()
        .map(|flow| {
            let rows: Vec<_> = run.flow_rows(&flow.name).collect();
            let sent_bytes = rows.iter().map(|r| r.sent_bytes).sum();
            let recv_bytes = rows.iter().map(|r| r.recv_bytes).sum();
            let goodput_bytes = rows.iter().map(|r| r.goodput_bytes).sum();
            let sent_packets = rows.iter().map(|r| r.sent_packets).sum();
            let recv_packets = rows.iter().map(|r| r.recv_packets).sum();
            let p: Vec<f64> = run
                .loss_event_rate_series(&flow.name)
                .into_iter()
                .map(|(_, p)| p)
                .collect();
            let rtt: Vec<f64> = run
                .rtt_series(&flow.name)
                .into_iter()
                .map(|(_, r)| r)
                .collect();
            let received = metrics::values_between(
                &run.throughput_series(&flow.name, Direction::Goodput),
                flow.start_s,
                flow.stop_s,
            );
            FlowMetrics {
                name: flow.name.clone(),
                kind: flow.kind,
                sent_bytes,
                recv_bytes,
                goodput_bytes,
                goodput_bps: metrics::goodput_bps(goodput_bytes, flow.stop_s - flow.start_s),
                receiving_ratio: metrics::receiving_ratio(recv_packets, sent_packets),
                mean_p: metrics::cumulative_mean(&p).last().copied().flatten(),
                mean_rtt_s: metrics::mean(&rtt),
                burstiness_index: metrics::burstiness_index(&received),
            }
        })
        .collect();
    let controlled: Vec<f64> = flows
        .iter()
        .filter(|f| f.kind.is_congestion_controlled())
        .map(|f| f.goodput_bps.unwrap_or(0.0))
        .collect();
    let goodputs = if controlled.is_empty() {
        flows.iter().map(|f| f.goodput_bps.unwrap_or(0.0)).collect()
    } else {
        controlled
    };
    let bottleneck_utilization = bottleneck_utilization(run, None);
    RunMetrics {
        flows,
        jain_index: metrics::jain_index(&goodputs),
        bottleneck_utilization,
    }
}

/// Bytes through the run's bottleneck (as named in `summary.json`) · 8 / (capacity · duration),
/// with the bottleneck's constant capacity, or `capacity_bps` when given (a trace-driven link's
/// mean delivery rate, which the summary does not hold). `None` without a bottleneck or capacity.
pub fn bottleneck_utilization(run: &Run, capacity_bps: Option<f64>) -> Option<f64> {
    let bottleneck = run.summary.bottleneck.as_ref()?;
    let bytes = run
        .link_rows(&bottleneck.from, &bottleneck.to)
        .map(|r| r.departure_bytes)
        .sum();
    let capacity = capacity_bps.or(bottleneck.capacity_bps)?;
    metrics::link_utilization(bytes, capacity, run.summary.duration_s)
}

/// The convergence time after one flow's arrival.
#[derive(Debug, Clone, PartialEq)]
pub struct Convergence {
    /// The flow that arrived.
    pub flow: String,
    /// Its start time (s).
    pub arrival_s: f64,
    /// Time until all active flows stayed within the band; `None` if they never did before the
    /// next arrival/departure or the end of the run.
    pub time_s: Option<f64>,
    /// The end of the window searched (the next arrival or departure, else the end of the
    /// run): a flow that never converged took at least `window_end_s − arrival_s`.
    pub window_end_s: f64,
}

/// Whether two flows compete for the same capacity when converging: they leave from the same
/// node or go to the same node. Flows in opposite directions between two nodes (a download and
/// an upload over one access link) do not: each has its own direction of every link.
pub fn compete(a: &FlowSummary, b: &FlowSummary) -> bool {
    a.from == b.from || a.to == b.to
}

/// Convergence time ([`metrics::convergence_time`]) after the arrival of every TFRC/TCP flow
/// that starts after time 0, on the receivers' throughput (kb/s per interval) of the TFRC and
/// TCP flows that [`compete`] with it. For [`metrics::FairShare::Capacity`] give the capacity in
/// kb/s.
pub fn convergence_times(
    run: &Run,
    options: ConvergenceOptions,
) -> Result<Vec<Convergence>, MetricError> {
    let controlled: Vec<&FlowSummary> = run
        .summary
        .flows
        .iter()
        .filter(|f| f.kind.is_congestion_controlled())
        .collect();
    let Some(first) = controlled.first() else {
        return Ok(Vec::new());
    };
    let times: Vec<f64> = run
        .throughput_series(&first.name, Direction::Received)
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    let rates: Vec<Vec<f64>> = controlled
        .iter()
        .map(|f| {
            run.throughput_series(&f.name, Direction::Received)
                .into_iter()
                .map(|(_, r)| r)
                .collect()
        })
        .collect();
    controlled
        .iter()
        .filter(|f| f.start_s > 0.0)
        .map(|arriving| {
            let flows: Vec<FlowRates<'_>> = controlled
                .iter()
                .zip(&rates)
                .filter(|(other, _)| compete(arriving, other))
                .map(|(f, rates)| FlowRates {
                    start_s: f.start_s,
                    stop_s: f.stop_s,
                    rates,
                })
                .collect();
            Ok(Convergence {
                flow: arriving.name.clone(),
                arrival_s: arriving.start_s,
                time_s: metrics::convergence_time(&times, &flows, arriving.start_s, options)?,
                window_end_s: metrics::next_change_after(&flows, arriving.start_s)
                    .min(run.summary.duration_s),
            })
        })
        .collect()
}

/// Recovery time ([`metrics::recovery_time`]) of one flow's receiver throughput after a
/// disturbance from `start_s` to `end_s`. `None` also if the flow is unknown.
pub fn recovery_time(
    run: &Run,
    flow: &str,
    start_s: f64,
    end_s: f64,
    options: RecoveryOptions,
) -> Result<Option<f64>, MetricError> {
    let series = run.throughput_series(flow, Direction::Received);
    if series.is_empty() {
        return Ok(None);
    }
    let (times, rates): (Vec<f64>, Vec<f64>) = series.into_iter().unzip();
    metrics::recovery_time(&times, &rates, start_s, end_s, options)
}
