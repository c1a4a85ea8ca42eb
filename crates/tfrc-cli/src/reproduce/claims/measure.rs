//! Measuring a claim's metric in one run: per-flow values over the claim's window, or one
//! run-wide value, each as docs/metrics.md defines it.

use std::collections::BTreeMap;

use tfrc_analysis::measure::{bottleneck_utilization, compete, convergence_times, run_metrics};
use tfrc_analysis::metrics::{self, ConvergenceOptions, RecoveryOptions};
use tfrc_analysis::run::{Direction, FlowRow, Run, StateRow};

use super::sample::{goodput_kbps, total_receiving_ratio};
use super::schema::Claim;
use super::vocabulary::{Aggregate, Metric, Side, Statistic};
use super::RunView;

/// The rows of `flow` whose interval ends inside `window` (all of them without one).
pub(super) fn window_rows<'a>(
    run: &'a Run,
    flow: &'a str,
    window: Option<[f64; 2]>,
) -> impl Iterator<Item = &'a FlowRow> + 'a {
    run.flow_rows(flow).filter(move |row| match window {
        Some([start, end]) => row.time_s > start && row.time_s <= end + 1e-9,
        None => true,
    })
}

/// A statistic of a time series (the mean when the claim names none).
pub(super) fn statistic(values: &[f64], statistic: Option<Statistic>) -> Option<f64> {
    match statistic.unwrap_or(Statistic::Mean).quantile() {
        None => metrics::mean(values),
        Some(q) => metrics::quantile(values, q),
    }
}

/// Start-up transient of a flow alone: time from its start until its rate (5 s trailing mean)
/// first reaches 90 % of its mean over the second half of its active time (definition ours).
fn transient(run: &Run, flow: &str) -> Option<f64> {
    let summary = run.flow_summary(flow)?;
    let series = run.throughput_series(flow, Direction::Received);
    let middle = (summary.start_s + summary.stop_s) / 2.0;
    let late: Vec<f64> = series
        .iter()
        .filter(|(t, _)| *t > middle && *t <= summary.stop_s)
        .map(|(_, r)| *r)
        .collect();
    let target = 0.9 * metrics::mean(&late)?;
    let active: Vec<(f64, f64)> = series
        .into_iter()
        .filter(|(t, _)| *t > summary.start_s)
        .collect();
    let rates: Vec<f64> = active.iter().map(|(_, r)| *r).collect();
    let smoothed = metrics::trailing_mean(&rates, 5);
    let reached = active
        .iter()
        .zip(smoothed)
        .find(|(_, rate)| *rate >= target)
        .map(|((t, _), _)| t - summary.start_s);
    // Never reached: the flow's whole active time, a lower bound (so a claim can fail on it).
    Some(reached.unwrap_or(summary.stop_s - summary.start_s))
}

/// Convergence time after `flow` arrives ([`convergence_times`]: receivers' rates of the TFRC/TCP
/// flows that [`compete`] with it); a flow without a competitor already running uses
/// [`transient`].
fn convergence(run: &Run, flow: &str) -> Option<f64> {
    let arriving = run.flow_summary(flow)?;
    let arrival = arriving.start_s;
    let overlapping = run
        .summary
        .flows
        .iter()
        .filter(|f| f.kind.is_congestion_controlled())
        .filter(|f| compete(arriving, f))
        .filter(|f| f.start_s <= arrival + 1e-9 && f.stop_s > arrival && f.name != flow)
        .count();
    if overlapping == 0 {
        return transient(run, flow);
    }
    let convergence = convergence_times(run, ConvergenceOptions::default())
        .ok()?
        .into_iter()
        .find(|convergence| convergence.flow == flow)?;
    // Never converged: later than the whole window searched (to the next arrival or
    // departure, or the end of the run); counted as converging one interval after it, a lower
    // bound that stays above the window (a "within the window" claim must not pass on it).
    Some(
        convergence
            .time_s
            .unwrap_or(convergence.window_end_s - arrival + run.summary.interval_s),
    )
}

/// A series of per-interval rates (`interval_s` apart) averaged over consecutive bins of
/// `bin_s` seconds (a last, partial bin is left out); the series itself without `bin_s`.
pub(super) fn binned(rates: &[f64], interval_s: f64, bin_s: Option<f64>) -> Vec<f64> {
    let Some(bin_s) = bin_s else {
        return rates.to_vec();
    };
    let per_bin = ((bin_s / interval_s).round() as usize).max(1);
    rates
        .chunks_exact(per_bin)
        .filter_map(metrics::mean)
        .collect()
}

/// Time from a flow's start until the mean of its received rate over the last 5 s (1 s bins,
/// wire bytes, as targets are metered) first reaches `level_kbps`, read at the end of that 5 s
/// window; never reached: its whole active time, a lower bound (a "sooner" claim cannot pass on
/// a flow that never gets there).
fn time_to_level(run: &Run, flow: &str, level_kbps: f64) -> Option<f64> {
    let summary = run.flow_summary(flow)?;
    let active: Vec<(f64, f64)> = run
        .throughput_series(flow, Direction::Received)
        .into_iter()
        .filter(|(t, _)| *t > summary.start_s && *t <= summary.stop_s + 1e-9)
        .collect();
    let rates: Vec<f64> = active.iter().map(|(_, r)| *r).collect();
    let window = ((5.0 / run.summary.interval_s).round() as usize).max(1);
    // Full windows only: a first second of slow start is not a 5 s mean.
    let reached = active
        .iter()
        .zip(metrics::trailing_mean(&rates, window))
        .skip(window - 1)
        .find(|(_, mean)| *mean >= level_kbps)
        .map(|((t, _), _)| t - summary.start_s);
    Some(reached.unwrap_or(summary.stop_s - summary.start_s))
}

/// One claim's metric measured in one run, over the claim's flows and a window.
pub(super) struct Measurement<'a> {
    view: &'a RunView<'a>,
    run: &'a Run,
    claim: &'a Claim,
    flows: &'a [String],
    window: Option<[f64; 2]>,
}

impl<'a> Measurement<'a> {
    /// Per-flow values of the claim's metric in `view` over `window` (a window reaching past
    /// the end of a shortened run covers what the run has), or one run-wide value.
    pub(super) fn values(
        view: &'a RunView<'a>,
        claim: &'a Claim,
        flows: &'a [String],
        window: Option<[f64; 2]>,
    ) -> Vec<Option<f64>> {
        let duration = view.run.summary.duration_s;
        let window = match window {
            Some([start, _]) if start >= duration => return vec![None; flows.len().max(1)],
            Some([start, end]) => Some([start, end.min(duration)]),
            None => None,
        };
        let measurement = Measurement {
            view,
            run: view.run,
            claim,
            flows,
            window,
        };
        measurement.metric()
    }

    /// The metric, by name: one table of what each word of [`Metric`] measures.
    fn metric(&self) -> Vec<Option<f64>> {
        let (run, claim) = (self.run, self.claim);
        let summed = claim.aggregate == Some(Aggregate::Sum);
        match claim.metric {
            Metric::Goodput => self.per_flow(|flow| self.goodput_kbps(flow)),
            // The flows' summed series when the claim sums them (an aggregate's rate over
            // time), else one series per flow; binned by `bin_s`, then `statistic`.
            Metric::Throughput if summed => vec![self.summed_throughput()],
            Metric::Throughput => self.per_flow(|flow| self.throughput(flow)),
            Metric::TimeToLevel => self.per_flow(|flow| time_to_level(run, flow, claim.level?)),
            Metric::LossEventRate => self.per_flow(|flow| self.state_statistic(flow, |row| row.p)),
            Metric::ExperiencedRtt => {
                self.per_flow(|flow| self.state_statistic(flow, |row| row.rtt_s))
            }
            Metric::ReceivingRatio if summed => vec![total_receiving_ratio(run, self.flows)],
            Metric::ReceivingRatio => self.per_flow(|flow| run.flow_summary(flow)?.receiving_ratio),
            Metric::Cov => self.per_flow(|flow| run.flow_summary(flow)?.cov_sent_100ms),
            Metric::BurstinessIndex => {
                let measured = run_metrics(run);
                self.per_flow(|flow| {
                    measured
                        .flows
                        .iter()
                        .find(|f| f.name == flow)?
                        .burstiness_index
                })
            }
            Metric::ConvergenceTime => self.per_flow(|flow| convergence(run, flow)),
            Metric::RecoveryTime => self.per_flow(|flow| self.recovery_time(flow)),
            Metric::JainIndex => vec![self.measured_jain_index()],
            Metric::TcpFriendliness => {
                let goodputs: Option<Vec<f64>> =
                    self.flows.iter().map(|f| self.goodput_kbps(f)).collect();
                vec![goodputs.and_then(|g| metrics::mean(&g))]
            }
            // A trace-driven bottleneck counts against its mean delivery rate.
            Metric::LinkUtilization => vec![bottleneck_utilization(
                run,
                self.view.capacity_kbps.map(|kbps| kbps * 1000.0),
            )],
            // Measured against its baseline run ([`super::sample`]), never alone.
            Metric::SeriesDifference => vec![None],
        }
    }

    /// `value` of each of the claim's flows, in order.
    fn per_flow(&self, value: impl Fn(&str) -> Option<f64>) -> Vec<Option<f64>> {
        self.flows.iter().map(|flow| value(flow)).collect()
    }

    /// A flow's goodput over the window (kb/s), or over its active time without one.
    fn goodput_kbps(&self, flow: &str) -> Option<f64> {
        match self.window {
            Some([start, end]) => {
                let bytes: u64 = window_rows(self.run, flow, self.window)
                    .map(|r| r.goodput_bytes)
                    .sum();
                (end > start).then(|| bytes as f64 * 8.0 / (end - start) / 1000.0)
            }
            None => goodput_kbps(self.run, flow),
        }
    }

    /// The rate of a `flows.csv` row on the claim's side (the receiver's by default).
    fn side_kbps(&self, row: &FlowRow) -> f64 {
        match self.claim.side {
            Some(Side::Sender) => row.send_kbps,
            Some(Side::Receiver) | None => row.recv_kbps,
        }
    }

    /// `statistic` of rates binned by the claim's `bin_s`.
    fn binned_statistic(&self, rates: &[f64]) -> Option<f64> {
        statistic(
            &binned(rates, self.run.summary.interval_s, self.claim.bin_s),
            self.claim.statistic,
        )
    }

    /// The statistic of one flow's rate series over the window.
    fn throughput(&self, flow: &str) -> Option<f64> {
        let rates: Vec<f64> = window_rows(self.run, flow, self.window)
            .map(|row| self.side_kbps(row))
            .collect();
        self.binned_statistic(&rates)
    }

    /// The statistic of the flows' rates summed interval by interval.
    fn summed_throughput(&self) -> Option<f64> {
        let mut summed: BTreeMap<u64, f64> = BTreeMap::new();
        for flow in self.flows {
            for row in window_rows(self.run, flow, self.window) {
                *summed.entry((row.time_s * 1e6).round() as u64).or_default() +=
                    self.side_kbps(row);
            }
        }
        let rates: Vec<f64> = summed.into_values().collect();
        self.binned_statistic(&rates)
    }

    /// The statistic of a `state.csv` column of one flow, over the window (over the flow's
    /// active time without one).
    fn state_statistic(&self, flow: &str, column: fn(&StateRow) -> Option<f64>) -> Option<f64> {
        let values: Vec<f64> = self
            .run
            .states
            .iter()
            .filter(|row| row.flow == flow)
            .filter(|row| match self.window {
                Some([start, end]) => row.time_s > start && row.time_s <= end + 1e-9,
                None => {
                    let summary = self.run.flow_summary(flow);
                    summary.is_none_or(|s| row.time_s >= s.start_s && row.time_s <= s.stop_s)
                }
            })
            .filter_map(column)
            .collect();
        statistic(&values, self.claim.statistic)
    }

    /// Time after the run's disturbance until the flow's rate is back.
    fn recovery_time(&self, flow: &str) -> Option<f64> {
        let (start, end) = self.view.disturbance?;
        let series = self.run.throughput_series(flow, Direction::Received);
        let (times, rates): (Vec<f64>, Vec<f64>) = series.into_iter().unzip();
        let recovered =
            metrics::recovery_time(&times, &rates, start, end, RecoveryOptions::default()).ok()?;
        // Never recovered: the time left in the run after the disturbance, a lower bound.
        Some(recovered.unwrap_or(self.run.summary.duration_s - end))
    }

    /// Jain's index of the flows' goodputs: per bin of `bin_s` seconds when given (the index
    /// of each bin's goodputs, then `statistic` over the bins), else over the whole window.
    fn measured_jain_index(&self) -> Option<f64> {
        let Some(bin_s) = self.claim.bin_s else {
            let goodputs: Option<Vec<f64>> =
                self.flows.iter().map(|f| self.goodput_kbps(f)).collect();
            return goodputs.and_then(|g| metrics::jain_index(&g));
        };
        let per_flow: Vec<Vec<f64>> = self
            .flows
            .iter()
            .map(|flow| {
                let rates: Vec<f64> = window_rows(self.run, flow, self.window)
                    .map(|r| r.goodput_kbps)
                    .collect();
                binned(&rates, self.run.summary.interval_s, Some(bin_s))
            })
            .collect();
        let bins = per_flow.iter().map(Vec::len).min().unwrap_or(0);
        let indices: Vec<f64> = (0..bins)
            .filter_map(|bin| {
                let goodputs: Vec<f64> = per_flow.iter().map(|rates| rates[bin]).collect();
                metrics::jain_index(&goodputs)
            })
            .collect();
        statistic(&indices, self.claim.statistic)
    }
}

/// The mean absolute difference of `flow`'s receiver rate per interval in `view` and in `base`
/// (intervals ending at the same time, within `window`), as a fraction of `view`'s bottleneck
/// capacity: 0 when the two series are identical bin by bin, 0.05 when they differ by 5 % of
/// the link on average. `None` without a capacity or a common interval.
pub(super) fn series_difference(
    view: &RunView<'_>,
    base: &RunView<'_>,
    flow: &str,
    window: Option<[f64; 2]>,
) -> Option<f64> {
    let key = |t: f64| (t * 1e6).round() as i64;
    let base_rates: BTreeMap<i64, f64> = window_rows(base.run, flow, window)
        .map(|row| (key(row.time_s), row.recv_kbps))
        .collect();
    let differences: Vec<f64> = window_rows(view.run, flow, window)
        .filter_map(|row| {
            let other = base_rates.get(&key(row.time_s))?;
            Some((row.recv_kbps - other).abs())
        })
        .collect();
    let capacity = view.capacity_kbps.filter(|c| *c > 0.0)?;
    metrics::mean(&differences).map(|mean| mean / capacity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_over_a_window() {
        assert_eq!(statistic(&[1.0, 3.0, 2.0], None), Some(2.0));
        assert_eq!(
            statistic(&[1.0, 3.0, 2.0, 10.0], Some(Statistic::Median)),
            Some(2.5)
        );
        assert_eq!(statistic(&[1.0, 3.0], Some(Statistic::Max)), Some(3.0));
        assert_eq!(statistic(&[], Some(Statistic::Min)), None);
        assert_eq!(
            statistic(
                &[1.0, 2.0, 3.0, 4.0, 5.0],
                Some(Statistic::Percentile(75.0))
            ),
            Some(4.0)
        );
    }
}
