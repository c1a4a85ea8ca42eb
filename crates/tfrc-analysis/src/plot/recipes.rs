//! The figures of runs, built on the engine of [`super`]: series over time per flow and
//! source (throughput, RTT, protocol state), CDFs, delay against goodput, and one line per
//! group (with or without a band).

use crate::run::{Direction, Run};

use super::{Dash, LinePlot, LineStyle};

/// One run to plot, with the name of where it came from (`ours`, `ns-2`, `real`), shown in the
/// legend when several sources are overlaid.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// Legend prefix.
    pub name: &'a str,
    /// The run.
    pub run: &'a Run,
}

fn series_label(sources: &[Source<'_>], source: &Source<'_>, rest: &str) -> String {
    if sources.len() > 1 {
        format!("{}: {rest}", source.name)
    } else {
        rest.to_string()
    }
}

/// Throughput over time per flow (papers 000, 002, 004): one line per source × flow ×
/// direction, in kb/s per output interval. Each source × flow pair has its own colour; the
/// receiver's throughput is solid, the sender's dashed. `flows` empty means every TFRC/TCP
/// flow of each run (the UDP background is left out).
pub fn throughput_over_time(
    title: &str,
    sources: &[Source<'_>],
    flows: &[&str],
    directions: &[Direction],
) -> LinePlot {
    let mut plot = LinePlot::new(title, "time (s)", "throughput (kb/s)");
    let mut colour = 0;
    for source in sources {
        for flow in flows_to_plot(source.run, flows) {
            for &direction in directions {
                let dash = match direction {
                    Direction::Received => Dash::Solid,
                    Direction::Sent => Dash::Dashed,
                    Direction::Goodput => Dash::Dotted,
                };
                plot = plot.line(
                    series_label(sources, source, &format!("{flow} {direction}")),
                    source.run.throughput_series(flow, direction),
                    LineStyle {
                        color: colour,
                        dash,
                        markers: false,
                    },
                );
            }
            colour += 1;
        }
    }
    plot
}

/// The senders' RTT estimate over time (paper 002, Fig. 2), one line per source × flow.
/// `flows` empty means every TFRC/TCP flow.
pub fn rtt_over_time(title: &str, sources: &[Source<'_>], flows: &[&str]) -> LinePlot {
    let mut plot = LinePlot::new(title, "time (s)", "RTT estimate (s)");
    // The papers' RTT plots zoom on the range the estimate moves in.
    plot.y_from_zero = false;
    line_per_flow(plot, sources, flows, Run::rtt_series)
}

/// Adds one line per source × flow, `series(run, flow)`: a colour per line, a dash per source.
fn line_per_flow(
    mut plot: LinePlot,
    sources: &[Source<'_>],
    flows: &[&str],
    series: impl Fn(&Run, &str) -> Vec<(f64, f64)>,
) -> LinePlot {
    let mut colour = 0;
    for (source_index, source) in sources.iter().enumerate() {
        for flow in flows_to_plot(source.run, flows) {
            plot = plot.line(
                series_label(sources, source, flow),
                series(source.run, flow),
                LineStyle {
                    color: colour,
                    dash: Dash::nth(source_index),
                    markers: false,
                },
            );
            colour += 1;
        }
    }
    plot
}

/// One `state.csv` column (see [`Run::state_columns`]) over time, one line per source × flow:
/// flent's plot of a saved series, for any protocol state the runs sampled (`x_bps`, `p`,
/// `cwnd`, …). Flows that never filled the column draw nothing.
pub fn state_over_time(
    title: &str,
    sources: &[Source<'_>],
    flows: &[&str],
    column: &str,
) -> LinePlot {
    let plot = LinePlot::new(title, "time (s)", column);
    line_per_flow(plot, sources, flows, |run, flow| {
        run.state_column_series(flow, column)
    })
}

/// flent's CDF plot: for each source × flow, the empirical distribution of `values` (a
/// flow's samples, e.g. its receiver throughput per output interval): the share of samples at
/// or below x, a step at each sorted sample. NaN samples are left out.
pub fn cdf(
    title: &str,
    x_label: &str,
    sources: &[Source<'_>],
    flows: &[&str],
    values: impl Fn(&Run, &str) -> Vec<f64>,
) -> LinePlot {
    let plot = LinePlot::new(title, x_label, "fraction of samples ≤ x");
    line_per_flow(plot, sources, flows, |run, flow| {
        let mut samples: Vec<f64> = values(run, flow)
            .into_iter()
            .filter(|value| !value.is_nan())
            .collect();
        samples.sort_by(f64::total_cmp);
        empirical_cdf(&samples)
    })
}

/// The steps of the empirical CDF of sorted `samples`: at each sample, the share below it, then
/// the share at or below it.
fn empirical_cdf(samples: &[f64]) -> Vec<(f64, f64)> {
    let count = samples.len() as f64;
    let mut points = Vec::with_capacity(2 * samples.len());
    for (index, &value) in samples.iter().enumerate() {
        points.push((value, index as f64 / count));
        points.push((value, (index + 1) as f64 / count));
    }
    points
}

/// The colour [`throughput_over_time`] and [`state_over_time`] give `flow` when they draw one
/// source: its place among the flows drawn. For lines that belong to that flow (its target
/// rate as a reference line).
pub fn flow_color(run: &Run, flows: &[&str], flow: &str) -> Option<usize> {
    flows_to_plot(run, flows)
        .iter()
        .position(|drawn| *drawn == flow)
}

fn flows_to_plot<'a>(run: &'a Run, flows: &'a [&'a str]) -> Vec<&'a str> {
    if flows.is_empty() {
        run.summary
            .flows
            .iter()
            .filter(|f| f.kind.is_congestion_controlled())
            .map(|f| f.name.as_str())
            .collect()
    } else {
        flows.to_vec()
    }
}

/// No run of a delay–throughput figure has a one-way delay percentile; names the runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no flow of {} has a one-way delay percentile (summary.json's delay_p95_s: only tfrc sim \
     measures it)",
    runs.join(", ")
)]
pub struct NoDelayPercentile {
    /// The runs' names.
    pub runs: Vec<String>,
}

/// Pantheon's view of saved runs: one point per flow at (95th percentile one-way delay in ms,
/// goodput in Mb/s), one colour per run, no lines (the flows of a run are not a series).
/// Flows without a delay percentile (ns-2 runs, the testbed) are left out; the error names the
/// runs when none has one.
pub fn delay_throughput(
    title: &str,
    sources: &[Source<'_>],
    flows: &[&str],
) -> Result<LinePlot, NoDelayPercentile> {
    let mut plot = LinePlot::new(
        title,
        "one-way delay, 95th percentile (ms)",
        "goodput (Mb/s)",
    );
    let mut any = false;
    for (index, source) in sources.iter().enumerate() {
        let wanted = flows_to_plot(source.run, flows);
        let points: Vec<(f64, f64)> = source
            .run
            .summary
            .flows
            .iter()
            .filter(|flow| wanted.contains(&flow.name.as_str()))
            .filter_map(|flow| Some((flow.delay_p95_s? * 1e3, flow.goodput_bps? / 1e6)))
            .collect();
        any |= !points.is_empty();
        plot = plot.line(
            source.name.to_owned(),
            points,
            LineStyle {
                color: index,
                dash: Dash::Hidden,
                markers: true,
            },
        );
    }
    if !any {
        return Err(NoDelayPercentile {
            runs: sources.iter().map(|s| s.name.to_owned()).collect(),
        });
    }
    Ok(plot)
}

/// One line per group with a marker on every point: goodput vs loss rate per β (use
/// [`LinePlot::log_x`]), Jain index or T2/T1 vs the number of flows. Points are sorted by x.
pub fn grouped_xy(
    title: &str,
    x_label: &str,
    y_label: &str,
    groups: &[(String, Vec<(f64, f64)>)],
) -> LinePlot {
    let mut plot = LinePlot::new(title, x_label, y_label);
    for (index, (label, points)) in groups.iter().enumerate() {
        let mut points = points.clone();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        plot = plot.line(
            label.clone(),
            points,
            LineStyle {
                color: index,
                dash: Dash::Solid,
                markers: true,
            },
        );
    }
    plot
}

/// A labelled line with a band: `(label, [(x, y, low, high)])`.
pub type BandedGroup = (String, Vec<(f64, f64, f64, f64)>);

/// Like [`grouped_xy`] with a band per line: `groups` holds `(label, [(x, y, low, high)])`,
/// `y` drawn as the line and `[low, high]` shaded around it (e.g. the mean over replications
/// and its 95 % confidence interval).
pub fn grouped_xy_with_bands(
    title: &str,
    x_label: &str,
    y_label: &str,
    groups: &[BandedGroup],
) -> LinePlot {
    let mut plot = LinePlot::new(title, x_label, y_label);
    for (index, (label, points)) in groups.iter().enumerate() {
        let mut points = points.clone();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        plot = plot.line_with_band(
            label.clone(),
            points.iter().map(|(x, y, _, _)| (*x, *y)).collect(),
            points
                .iter()
                .map(|(x, _, low, high)| (*x, *low, *high))
                .collect(),
            LineStyle {
                color: index,
                dash: Dash::Solid,
                markers: true,
            },
        );
    }
    plot
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empirical_cdf_steps_at_each_sample() {
        assert_eq!(
            empirical_cdf(&[1.0, 2.0, 2.0, 4.0]),
            vec![
                (1.0, 0.0),
                (1.0, 0.25),
                (2.0, 0.25),
                (2.0, 0.5),
                (2.0, 0.5),
                (2.0, 0.75),
                (4.0, 0.75),
                (4.0, 1.0)
            ]
        );
        assert!(empirical_cdf(&[]).is_empty());
    }
}
