//! The figures and tables of each experiment, in the papers' forms: the shared figure
//! builders here, each experiment's own figures in [`recipes`].

mod recipes;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tfrc_analysis::measure::recovery_time;
use tfrc_analysis::metrics::{self, RecoveryOptions};
use tfrc_analysis::plot::{self, BarChart, LinePlot, Source};
use tfrc_analysis::run::{Direction, Run};
use tfrc_analysis::table::{loss_rate_ratio_table, LossRateEntry, Table};
use tfrc_output::FlowKind as OutputKind;
use tfrc_scenario::FlowKind;

use super::claims::{flow_names, goodput_kbps, label_number, mean_of_all};
use super::{disturbance, Experiment, LoadedRun};

/// Most runs drawn as separate throughput figures.
const MAX_TIME_FIGURES: usize = 6;

fn label<'a>(run: &'a LoadedRun, key: &str) -> Option<&'a str> {
    run.scenario
        .variant
        .iter()
        .find(|(label, _)| label == key)
        .map(|(_, value)| value.as_str())
}

fn run_name(run: &LoadedRun) -> String {
    let parts: Vec<String> = run
        .scenario
        .variant
        .iter()
        .map(|(label, value)| format!("{label}={value}"))
        .collect();
    if parts.is_empty() {
        "run".into()
    } else {
        parts.join(", ")
    }
}

fn file_stem(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Draws `plot` as PNG and SVG under `figures/<id>/`; returns the PNG's path relative to `out`.
pub(crate) fn save_line(plot: &LinePlot, out: &Path, id: &str, stem: &str) -> Result<PathBuf> {
    let relative = PathBuf::from("figures")
        .join(id)
        .join(format!("{stem}.png"));
    plot.draw(out.join(&relative))
        .with_context(|| format!("cannot draw {}", relative.display()))?;
    plot.draw(out.join("figures").join(id).join(format!("{stem}.svg")))
        .with_context(|| format!("cannot draw {stem}.svg"))?;
    Ok(relative)
}

fn save_bars(chart: &BarChart, out: &Path, id: &str, stem: &str) -> Result<PathBuf> {
    let relative = PathBuf::from("figures")
        .join(id)
        .join(format!("{stem}.png"));
    chart
        .draw(out.join(&relative))
        .with_context(|| format!("cannot draw {}", relative.display()))?;
    chart
        .draw(out.join("figures").join(id).join(format!("{stem}.svg")))
        .with_context(|| format!("cannot draw {stem}.svg"))?;
    Ok(relative)
}

fn total_goodput_kbps(run: &Run, flows: &[String]) -> Option<f64> {
    flows.iter().map(|flow| goodput_kbps(run, flow)).sum()
}

/// Groups of `(x, y)` points: one group per value of `group_label`.
fn grouped(
    runs: &[&LoadedRun],
    group_label: &str,
    x: impl Fn(&LoadedRun) -> Option<f64>,
    y: impl Fn(&LoadedRun) -> Option<f64>,
) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut groups: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for run in runs {
        let Some(group) = label(run, group_label) else {
            continue;
        };
        let (Some(x), Some(y)) = (x(run), y(run)) else {
            continue;
        };
        match groups.iter_mut().find(|(name, _)| name == group) {
            Some((_, points)) => points.push((x, y)),
            None => groups.push((group.to_owned(), vec![(x, y)])),
        }
    }
    groups
}

/// A figure's points (`(group, [(x, y)])`) computed on replication 0 and on every other
/// replication of the experiment (their summaries): per group and x, the mean of y over the
/// replications with its 95 % confidence interval, `(x, mean, low, high)`.
fn banded(
    experiment: &Experiment,
    compute: impl Fn(&[&LoadedRun]) -> Vec<(String, Vec<(f64, f64)>)>,
) -> Vec<plot::BandedGroup> {
    let first: Vec<&LoadedRun> = experiment.runs.iter().collect();
    let mut sets = vec![compute(&first)];
    for replica in &experiment.replicas {
        let runs: Vec<&LoadedRun> = replica.iter().collect();
        sets.push(compute(&runs));
    }
    // Per group, per x: the y of every replication.
    type Collected = (String, Vec<(f64, Vec<f64>)>);
    let mut merged: Vec<Collected> = Vec::new();
    for set in sets {
        for (group, points) in set {
            let position = match merged.iter().position(|(name, _)| *name == group) {
                Some(position) => position,
                None => {
                    merged.push((group, Vec::new()));
                    merged.len() - 1
                }
            };
            let values = &mut merged[position].1;
            for (x, y) in points {
                match values.iter_mut().find(|(at, _)| *at == x) {
                    Some((_, ys)) => ys.push(y),
                    None => values.push((x, vec![y])),
                }
            }
        }
    }
    merged
        .into_iter()
        .map(|(group, values)| {
            let points = values
                .into_iter()
                .filter_map(|(x, ys)| {
                    let interval = metrics::confidence_interval_95(&ys)?;
                    Some((x, interval.mean, interval.low, interval.high))
                })
                .collect();
            (group, points)
        })
        .collect()
}

/// [`grouped`] over the runs that `keep` selects, with a band over the replications
/// ([`banded`]).
fn grouped_banded(
    experiment: &Experiment,
    keep: impl Fn(&LoadedRun) -> bool,
    group_label: &str,
    x: impl Fn(&LoadedRun) -> Option<f64>,
    y: impl Fn(&LoadedRun) -> Option<f64>,
) -> Vec<plot::BandedGroup> {
    banded(experiment, |runs| {
        let kept: Vec<&LoadedRun> = runs.iter().copied().filter(|run| keep(run)).collect();
        grouped(&kept, group_label, &x, &y)
    })
}

/// The caption's note on what a banded figure shows.
fn band_note(experiment: &Experiment) -> String {
    format!(
        "; mean over {} replication(s), shaded: 95 % confidence interval",
        experiment.replicas.len() + 1
    )
}

/// Each TFRC flow's target rate (kb/s) with the flow's name.
fn target_rates_kbps(run: &LoadedRun) -> Vec<(&str, f64)> {
    run.scenario
        .flows
        .iter()
        .filter_map(|flow| match &flow.kind {
            FlowKind::Tfrc(tfrc) => tfrc
                .target_rate
                .map(|rate| (flow.name.as_str(), rate.kbps())),
            _ => None,
        })
        .collect()
}

/// What the experiment switches on and off during a run, as spans of time to shade: each link
/// direction's loss period (a loss model with a start or a stop) and each background flow that
/// starts late or stops early (the perturbation the papers' figures mark, e.g. paper 000's
/// loss and UDP periods from 30 s to 90 s). Spans are clipped to the run.
fn perturbations(run: &LoadedRun) -> Vec<(String, std::ops::Range<f64>)> {
    let end = run.scenario.duration.as_secs_f64();
    let mut spans: Vec<(String, std::ops::Range<f64>)> = Vec::new();
    let mut add = |label: String, start: f64, stop: f64| {
        let span = start.min(end)..stop.min(end);
        if span.start < span.end && !spans.iter().any(|(l, s)| *l == label && *s == span) {
            spans.push((label, span));
        }
    };
    for link in &run.scenario.links {
        for direction in [&link.forward, &link.reverse] {
            if let Some(loss) = &direction.loss {
                if !loss.start.is_zero() || loss.stop.is_some() {
                    let stop = loss.stop.map_or(end, |stop| stop.as_secs_f64());
                    add("loss period".to_owned(), loss.start.as_secs_f64(), stop);
                }
            }
        }
    }
    for flow in perturbing_flows(run) {
        add(
            format!("{} on", flow.name),
            flow.start.as_secs_f64(),
            flow.stop_time(run.scenario.duration).as_secs_f64(),
        );
    }
    spans
}

/// Background flows (neither TFRC nor TCP) that start after 0 or stop before the end: the
/// experiment's perturbation, drawn beside the flows under test.
fn perturbing_flows(run: &LoadedRun) -> impl Iterator<Item = &tfrc_scenario::FlowSpec> {
    run.scenario.flows.iter().filter(|flow| {
        !flow.output_kind().is_congestion_controlled()
            && (!flow.start.is_zero() || flow.stop.is_some())
    })
}

/// The top of a throughput figure's y axis: 1.3 × the 99th percentile of what the receivers
/// got (a receiver cannot get more than its path carries), so that a sender's start-up peak —
/// many times the link rate while TFRC's slow start overshoots — does not flatten the steady
/// state; never below a reference line. Returns that top and the highest value drawn, or
/// `None` when every value fits under it anyway.
fn throughput_axis_top(plot: &LinePlot, received: &[f64]) -> Option<(f64, f64)> {
    let top = metrics::quantile(received, 0.99)? * 1.3;
    let top = plot
        .references
        .iter()
        .map(|(_, y, _)| y * 1.1)
        .fold(top, f64::max);
    let highest = plot
        .lines
        .iter()
        .flat_map(|line| line.points.iter().map(|(_, y)| *y))
        .fold(f64::NEG_INFINITY, f64::max);
    (top > 0.0 && highest > top).then_some((top, highest))
}

/// The default figure: throughput over time per flow, sender and receiver, one per run; loss
/// periods and background flows that come and go are shaded (and those flows drawn), each TFRC
/// flow's target rate is a dotted line in the flow's colour.
fn time_series(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let mut figures = Vec::new();
    for run in experiment.runs.iter().take(MAX_TIME_FIGURES) {
        let name = run_name(run);
        let source = Source {
            name: "ours",
            run: &run.run,
        };
        let mut flows: Vec<&str> = run
            .run
            .summary
            .flows
            .iter()
            .filter(|flow| flow.kind.is_congestion_controlled())
            .map(|flow| flow.name.as_str())
            .collect();
        flows.extend(perturbing_flows(run).map(|flow| flow.name.as_str()));
        let mut plot = plot::throughput_over_time(
            &format!("{}: {name}", experiment.id),
            &[source],
            &flows,
            &[Direction::Sent, Direction::Received],
        );
        for (flow, rate) in target_rates_kbps(run) {
            let style = plot::LineStyle {
                color: plot::flow_color(&run.run, &flows, flow).unwrap_or_default(),
                dash: plot::Dash::Dotted,
                markers: false,
            };
            plot = plot.reference_styled(format!("target of {flow}"), rate, style);
        }
        let spans = perturbations(run);
        for (label, span) in &spans {
            plot = plot.shade(label.clone(), span.clone());
        }
        let received: Vec<f64> = flows
            .iter()
            .flat_map(|flow| run.run.throughput_series(flow, Direction::Received))
            .map(|(_, kbps)| kbps)
            .collect();
        let cut = throughput_axis_top(&plot, &received);
        plot.y_max = cut.map(|(top, _)| top);
        let path = save_line(
            &plot,
            out,
            &experiment.id,
            &format!("throughput-{}", file_stem(&name)),
        )?;
        figures.push((path, time_series_caption(&name, &spans, cut)));
    }
    if experiment.runs.len() > MAX_TIME_FIGURES {
        figures.push((
            PathBuf::new(),
            format!(
                "(throughput figures of the other {} runs: tfrc plot runs/{}/RUN)",
                experiment.runs.len() - MAX_TIME_FIGURES,
                experiment.id
            ),
        ));
    }
    Ok(figures)
}

/// The caption of a run's throughput figure: what is drawn, the shaded spans, and where the y
/// axis was cut (`cut`: the top and the peak above it).
fn time_series_caption(
    name: &str,
    spans: &[(String, std::ops::Range<f64>)],
    cut: Option<(f64, f64)>,
) -> String {
    let mut caption =
        format!("{name}: throughput per flow per interval, sender (dashed) and receiver (solid)");
    for (label, span) in spans {
        // To 0.1 s: a replication's start jitter would otherwise print as 20.0944 s.
        let tenths = |seconds: f64| plot::tick_label((seconds * 10.0).round() / 10.0);
        caption.push_str(&format!(
            "; shaded: {label} {}–{} s",
            tenths(span.start),
            tenths(span.end)
        ));
    }
    if let Some((top, peak)) = cut {
        caption.push_str(&format!(
            "; y axis cut at {} kb/s (1.3 × the receivers' 99th percentile): the peak, {} kb/s, runs off the top",
            plot::tick_label(top.round()),
            plot::tick_label(peak.round())
        ));
    }
    caption
}

/// The figures of one experiment (PNG paths relative to `out`, with captions): its recipe's
/// ([`recipes::RECIPES`], else [`time_series`]), then ns-2's run beside ours and the testbed's
/// real runs beside the simulated ones where there are any.
pub fn draw(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    if experiment.runs.is_empty() {
        return Ok(Vec::new());
    }
    let recipe = recipes::RECIPES
        .iter()
        .find(|(id, _)| *id == experiment.id)
        .map_or(time_series as recipes::Recipe, |(_, recipe)| *recipe);
    let mut figures = recipe(experiment, out)?;
    figures.extend(ns2_side_by_side(experiment, out)?);
    figures.extend(testbed_figures(experiment, out)?);
    Ok(figures
        .into_iter()
        .filter(|(path, _)| !path.as_os_str().is_empty())
        .collect())
}

/// ns-2's run of the experiment beside ours (each of our runs named by its variant): the TFRC
/// flows' receiver throughput on the same axes; nothing without an ns-2 run.
fn ns2_side_by_side(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let id = experiment.id.as_str();
    let mut figures = Vec::new();
    if let Some(Ok(ns2)) = &experiment.ns2 {
        let names: Vec<String> = experiment
            .runs
            .iter()
            .map(|run| format!("ours ({})", run_name(run)))
            .collect();
        let mut sources = named_sources(experiment.runs.iter(), &names);
        sources.push(Source {
            name: "ns-2.35",
            run: ns2,
        });
        let flows: Vec<&str> = ns2
            .summary
            .flows
            .iter()
            .filter(|flow| flow.kind == OutputKind::Tfrc)
            .map(|flow| flow.name.as_str())
            .collect();
        let plot = plot::throughput_over_time(
            &format!("{id}: receiver throughput, ns-2 and ours"),
            &sources,
            &flows,
            &[Direction::Received],
        );
        figures.push((
            save_line(&plot, out, id, "ns2-side-by-side")?,
            "receiver throughput of the TFRC flow: ns-2.35 (reference) and our simulator with the RFC 5348 and the ns2 profiles, same axes".into(),
        ));
    }
    Ok(figures)
}

/// Each recorded real run (`results/testbed`) beside our simulated run of the same variant.
fn testbed_figures(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let id = experiment.id.as_str();
    let mut figures = Vec::new();
    for (real, simulated) in testbed_pairs(experiment) {
        let name = run_name(simulated);
        let sources = [
            Source {
                name: "simulator",
                run: &simulated.run,
            },
            Source {
                name: "testbed (real)",
                run: real,
            },
        ];
        let plot = plot::throughput_over_time(
            &format!("{id} ({name}): simulated and real"),
            &sources,
            &[],
            &[Direction::Received],
        );
        figures.push((
            save_line(&plot, out, id, &format!("testbed-{}", file_stem(&name)))?,
            format!(
                "{name}: receiver throughput in the simulator and in the real implementation over \
                 the emulated link (tfrc testbed run, recorded in results/testbed)"
            ),
        ));
    }
    Ok(figures)
}

/// Each recorded real run with our simulated run of the same variant (same scenario name).
fn testbed_pairs(experiment: &Experiment) -> Vec<(&Run, &LoadedRun)> {
    experiment
        .testbed
        .iter()
        .filter_map(|real| {
            let simulated = experiment
                .runs
                .iter()
                .find(|run| run.scenario.name == real.summary.scenario)?;
            Some((real, simulated))
        })
        .collect()
}

/// Recorded real runs vs our simulated runs of the same variant: mean receiver throughput per
/// flow.
pub fn testbed_comparison(experiment: &Experiment) -> Vec<(String, String, String)> {
    let mut rows = Vec::new();
    for (real, simulated) in testbed_pairs(experiment) {
        for flow in &real.summary.flows {
            let (Some(real_rate), Some(simulated_rate)) = (
                goodput_kbps(real, &flow.name),
                goodput_kbps(&simulated.run, &flow.name),
            ) else {
                continue;
            };
            let difference = if simulated_rate > 0.0 {
                format!(" ({:+.1} %)", (real_rate / simulated_rate - 1.0) * 100.0)
            } else {
                String::new()
            };
            rows.push((
                format!(
                    "mean receiver throughput of {}, real (testbed) vs simulated ({})",
                    flow.name,
                    run_name(simulated)
                ),
                format!("simulated {simulated_rate:.1} kb/s"),
                format!("real {real_rate:.1} kb/s{difference}"),
            ));
        }
    }
    rows
}

/// What a goodput-against-a-label figure shows.
struct GoodputFigure {
    /// The sweep label whose trailing number is x.
    x_key: &'static str,
    x_label: &'static str,
    log_x: bool,
    title: &'static str,
    y_label: &'static str,
    caption: &'static str,
    stem: &'static str,
}

/// Total goodput of the flows under test (`f`) against the number in a sweep label, one line
/// per protocol (paper 003's Fig. 4).
fn goodput_against(
    experiment: &Experiment,
    out: &Path,
    id: &str,
    figure: &GoodputFigure,
) -> Result<(PathBuf, String)> {
    let groups = grouped_banded(
        experiment,
        |_| true,
        "protocol",
        |run| label(run, figure.x_key).and_then(label_number),
        |run| total_goodput_kbps(&run.run, &flow_names(&run.run, Some(&["f".to_string()]))),
    );
    let mut plot =
        plot::grouped_xy_with_bands(figure.title, figure.x_label, figure.y_label, &groups);
    if figure.log_x {
        plot = plot.log_x();
    }
    Ok((
        save_line(&plot, out, id, figure.stem)?,
        format!("{}{}", figure.caption, band_note(experiment)),
    ))
}

/// Mean over the flows under test of their time-average p.
fn p_of(run: &LoadedRun) -> Option<f64> {
    let flows = flow_names(&run.run, None);
    mean_of_all(
        flows
            .iter()
            .map(|flow| run.run.flow_summary(flow).and_then(|f| f.mean_p)),
    )
}

/// Table I of paper 002 for `e002-grid`.
pub fn table(experiment: &Experiment) -> Option<Table> {
    if experiment.id != "e002-grid" {
        return None;
    }
    let entries: Vec<LossRateEntry> = experiment
        .runs
        .iter()
        .filter_map(|run| {
            let flows = label(run, "flows")?;
            let cell = label(run, "delay_feedbacks")?;
            let delay = cell.split('-').next()?;
            let rtt_ms = tfrc_scenario::units::parse_duration(delay)
                .ok()?
                .as_millis()
                * 2;
            Some(LossRateEntry {
                row: format!("{flows} flows, RTT {rtt_ms} ms"),
                feedbacks_per_rtt: label_number(cell)? as u32,
                p: p_of(run)?,
            })
        })
        .collect();
    (!entries.is_empty()).then(|| {
        loss_rate_ratio_table(
            "Table I (ours): p_N / p_1, mean over the flows of their time-average loss event rate",
            &entries,
            2,
        )
    })
}

/// Feedbacks per RTT, nominal and as sent, for an experiment whose TFRC flows ask for several
/// (a fixed `feedbacks_per_rtt`, or `rtt_ref`, whose count follows the measured RTT with its
/// queueing delay): one row per variant of replication 0, the measured value the mean over its
/// TFRC flows of feedbacks · mean R / active time. `None` when no flow asks for more than one.
pub fn feedback_table(experiment: &Experiment) -> Option<Table> {
    let nominal = |run: &LoadedRun| -> Option<String> {
        let mut kinds: Vec<String> = run
            .scenario
            .flows
            .iter()
            .filter_map(|flow| match &flow.kind {
                FlowKind::Tfrc(spec) => match (spec.feedbacks_per_rtt, spec.rtt_ref) {
                    (Some(count), _) => Some(format!("N = {count} (fixed)")),
                    (None, Some(rtt_ref)) => Some(format!(
                        "RTT_ref = {} ms (N = max(int(R / RTT_ref), 1))",
                        rtt_ref.as_secs_f64() * 1000.0
                    )),
                    (None, None) => Some("N = 1 (RFC 5348)".to_string()),
                },
                _ => None,
            })
            .collect();
        kinds.dedup();
        (!kinds.is_empty()).then(|| kinds.join(", "))
    };
    let asks_for_several = experiment.runs.iter().any(|run| {
        run.scenario.flows.iter().any(|flow| {
            matches!(&flow.kind, FlowKind::Tfrc(spec)
                if spec.rtt_ref.is_some() || spec.feedbacks_per_rtt.is_some_and(|n| n > 1))
        })
    });
    if !asks_for_several {
        return None;
    }
    let mut table = Table::new(
        "Feedbacks per RTT: nominal, and as sent (replication 0; mean over the TFRC flows of feedbacks × mean R / active time)",
        vec!["run".into(), "nominal".into(), "as sent".into()],
    );
    for run in &experiment.runs {
        let Some(nominal) = nominal(run) else {
            continue;
        };
        let measured = mean_of_all(
            run.run
                .summary
                .flows
                .iter()
                .filter(|flow| flow.kind == OutputKind::Tfrc)
                .map(|flow| flow.feedbacks_per_rtt()),
        );
        table = table.row(vec![
            run_name(run),
            nominal,
            measured.map_or_else(|| "n/a".to_string(), |n| format!("{n:.2}")),
        ]);
    }
    Some(table)
}

/// ns-2 vs our runs: mean receiver throughput and recovery time of the TFRC flow.
pub fn ns2_comparison(
    experiment: &Experiment,
    ns2: &std::result::Result<Run, String>,
) -> Vec<(String, String, String)> {
    let ns2 = match ns2 {
        Ok(run) => run,
        Err(reason) => {
            return vec![(
                "ns-2 side by side".into(),
                "—".into(),
                format!("not run: {reason}"),
            )]
        }
    };
    let tfrc = |run: &Run| {
        run.summary
            .flows
            .iter()
            .find(|flow| flow.kind == OutputKind::Tfrc)
            .map(|flow| flow.name.clone())
    };
    let Some(ns2_flow) = tfrc(ns2) else {
        return Vec::new();
    };
    let ns2_goodput = goodput_kbps(ns2, &ns2_flow);
    let window = experiment
        .runs
        .first()
        .and_then(|run| disturbance(&run.scenario));
    let recovery = |run: &Run, flow: &str| {
        window.and_then(|(start, end)| {
            recovery_time(run, flow, start, end, RecoveryOptions::default())
                .ok()
                .flatten()
        })
    };
    let ns2_recovery = recovery(ns2, &ns2_flow);
    let mut rows = Vec::new();
    for run in &experiment.runs {
        let Some(flow) = tfrc(&run.run) else {
            continue;
        };
        let ours = goodput_kbps(&run.run, &flow);
        let difference = match (ours, ns2_goodput) {
            (Some(ours), Some(reference)) if reference > 0.0 => {
                format!(
                    "{ours:.1} kb/s ({:+.1} %)",
                    (ours / reference - 1.0) * 100.0
                )
            }
            _ => "n/a".into(),
        };
        rows.push((
            format!("mean receiver throughput, ours ({}) vs ns-2", run_name(run)),
            ns2_goodput.map_or("n/a".into(), |g| format!("ns-2 {g:.1} kb/s")),
            difference,
        ));
        if window.is_some() {
            let ours = recovery(&run.run, &flow);
            rows.push((
                format!(
                    "recovery time after the disturbance, ours ({}) vs ns-2",
                    run_name(run)
                ),
                ns2_recovery.map_or("ns-2 n/a".into(), |r| format!("ns-2 {r:.0} s")),
                match (ours, ns2_recovery) {
                    (Some(ours), Some(reference)) => {
                        format!("{ours:.0} s ({:+.0} s)", ours - reference)
                    }
                    (Some(ours), None) => format!("{ours:.0} s"),
                    _ => "n/a".into(),
                },
            ));
        }
    }
    rows
}

/// Plot sources: each run under its name (`runs` and `names` in the same order).
fn named_sources<'a>(
    runs: impl Iterator<Item = &'a LoadedRun>,
    names: &'a [String],
) -> Vec<Source<'a>> {
    runs.zip(names)
        .map(|(run, name)| Source {
            name,
            run: &run.run,
        })
        .collect()
}
