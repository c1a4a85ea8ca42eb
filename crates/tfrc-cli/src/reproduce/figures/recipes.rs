//! The figure recipes of the experiments that have their own figures (data: [`RECIPES`], one
//! function per experiment), in the papers' forms; every other experiment draws
//! [`super::time_series`].

use std::path::{Path, PathBuf};

use anyhow::Result;
use tfrc_analysis::measure::run_metrics;
use tfrc_analysis::metrics;
use tfrc_analysis::plot::{self, BarChart};
use tfrc_output::FlowKind;

use super::super::claims::{
    flow_names, goodput_kbps, label_number, mean_of_all, total_receiving_ratio,
};
use super::super::{Experiment, LoadedRun};
use super::{
    band_note, banded, goodput_against, grouped_banded, label, named_sources, p_of, run_name,
    save_bars, save_line, time_series, GoodputFigure,
};

/// Draws one experiment's figures under `out`: PNG paths relative to `out`, with captions.
pub(super) type Recipe = fn(&Experiment, &Path) -> Result<Vec<(PathBuf, String)>>;

/// The experiments with figures of their own, by id, and the recipe that draws them.
pub(super) const RECIPES: [(&str, Recipe); 9] = [
    ("e002-grid", p_ratio_grid),
    ("e002-rtt", rtt_and_throughput),
    ("e003-single", goodput_vs_loss),
    ("e003-multi", goodput_vs_flows),
    ("e003-ratio", receiving_ratios),
    ("e003-cov", cov_bars),
    ("e003-fairness", jain_per_beta),
    ("e003-friendliness", friendliness),
    ("e004-burstiness", burstiness_bars),
];

/// The flows under test of a run: `f` and its instances.
fn under_test(run: &LoadedRun) -> Vec<String> {
    flow_names(&run.run, Some(&["f".to_string()]))
}

/// e002-grid: p_N / p_1 against the feedbacks per RTT, one line per number of flows and delay,
/// banded over the replications.
fn p_ratio_grid(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let id = experiment.id.as_str();
    let mut figures = Vec::new();
    // p_N / p_1 per (flows, delay) row.
    let lines = banded(experiment, |runs| {
        let mut lines = Vec::new();
        for run in runs {
            let (Some(flows), Some(cell)) = (label(run, "flows"), label(run, "delay_feedbacks"))
            else {
                continue;
            };
            let delay = cell.split('-').next().unwrap_or(cell);
            let Some(base) = runs.iter().find(|other| {
                label(other, "flows") == Some(flows)
                    && label(other, "delay_feedbacks") == Some(&format!("{delay}-1"))
            }) else {
                continue;
            };
            let (Some(n), Some(p), Some(p1)) = (label_number(cell), p_of(run), p_of(base)) else {
                continue;
            };
            let name = format!("{flows} flows, delay {delay}");
            if let Some(ratio) = metrics::loss_event_rate_ratio(p, p1) {
                match lines
                    .iter_mut()
                    .find(|(group, _): &&mut (String, Vec<(f64, f64)>)| *group == name)
                {
                    Some((_, points)) => points.push((n, ratio)),
                    None => lines.push((name, vec![(n, ratio)])),
                }
            }
        }
        lines
    });
    let plot = plot::grouped_xy_with_bands(
        "e002-grid: p_N / p_1 vs feedbacks per RTT",
        "feedbacks per RTT N",
        "p_N / p_1",
        &lines,
    )
    .reference("paper: 0.84", 0.84)
    .reference("paper: 1.14", 1.14);
    figures.push((
                save_line(&plot, out, id, "p-ratio")?,
                format!("p_N / p_1 (mean of the flows' time-average p) against N, one line per number of flows and delay{}", band_note(experiment)),
            ));

    Ok(figures)
}

/// e002-rtt: the senders' RTT estimates over time, then the default throughput figures.
fn rtt_and_throughput(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let id = experiment.id.as_str();
    let runs: Vec<&LoadedRun> = experiment.runs.iter().collect();
    let mut figures = Vec::new();
    let names: Vec<String> = runs.iter().map(|run| run_name(run)).collect();
    let sources = named_sources(runs.iter().copied(), &names);
    let plot = plot::rtt_over_time("e002-rtt: senders' RTT estimate", &sources, &[]);
    figures.push((
        save_line(&plot, out, id, "rtt")?,
        "the senders' RTT estimate over time, each feedback rate".into(),
    ));
    figures.extend(time_series(experiment, out)?);

    Ok(figures)
}

/// e003-single: goodput of the single flow against the loss rate.
fn goodput_vs_loss(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let id = experiment.id.as_str();
    Ok(vec![goodput_against(
            experiment,
            out,
            id,
            &GoodputFigure {
                x_key: "loss",
                x_label: "wireless packet loss rate",
                log_x: true,
                title: "e003-single: goodput vs wireless loss rate",
                y_label: "goodput (kb/s)",
                caption: "goodput of the single flow against the loss rate, TFRC and the Enhancement for each β",
                stem: "goodput-vs-loss",
            },
        )?])
}

/// e003-multi: total goodput of the flows under test against their number.
fn goodput_vs_flows(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let id = experiment.id.as_str();
    Ok(vec![goodput_against(
        experiment,
        out,
        id,
        &GoodputFigure {
            x_key: "flows",
            x_label: "flows",
            log_x: false,
            title: "e003-multi: total goodput vs number of flows (loss 0.01)",
            y_label: "total goodput (kb/s)",
            caption: "total goodput of the flows under test against their number",
            stem: "goodput-vs-flows",
        },
    )?])
}

/// e003-ratio: receiving ratio against the loss rate (single flow) and the number of flows.
fn receiving_ratios(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let id = experiment.id.as_str();
    let mut figures = Vec::new();
    let ratio = |run: &LoadedRun| total_receiving_ratio(&run.run, &under_test(run));
    for (prefix, x_label, log) in [("single", "loss rate", true), ("multi", "flows", false)] {
        let groups = grouped_banded(
            experiment,
            |run| label(run, "setup").is_some_and(|s| s.starts_with(prefix)),
            "protocol",
            |run| label(run, "setup").and_then(label_number),
            ratio,
        );
        let mut plot = plot::grouped_xy_with_bands(
            &format!("e003-ratio: receiving ratio, {prefix} flow(s)"),
            x_label,
            "packets received / sent",
            &groups,
        );
        plot.y_from_zero = false;
        if log {
            plot = plot.log_x();
        }
        figures.push((
            save_line(&plot, out, id, &format!("ratio-{prefix}"))?,
            format!(
                "receiving ratio against the {x_label}, TFRC and the Enhancement for each β{}",
                band_note(experiment)
            ),
        ));
    }

    Ok(figures)
}

/// e003-cov: CoV of the packets sent per 0.1 s, one bar per protocol.
fn cov_bars(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let id = experiment.id.as_str();
    let runs: Vec<&LoadedRun> = experiment.runs.iter().collect();
    let mut figures = Vec::new();
    let categories: Vec<String> = runs
        .iter()
        .map(|run| label(run, "protocol").unwrap_or("run").to_owned())
        .collect();
    let values: Vec<Option<f64>> = runs
        .iter()
        .map(|run| {
            mean_of_all(
                under_test(run)
                    .iter()
                    .map(|flow| run.run.flow_summary(flow).and_then(|f| f.cov_sent_100ms)),
            )
        })
        .collect();
    let chart = BarChart::new(
        "e003-cov: CoV of packets sent per 0.1 s (mean over the flows under test)",
        "CoV",
        categories,
    )
    .series("flows under test", values);
    figures.push((
        save_bars(&chart, out, id, "cov")?,
        "coefficient of variation of the packets sent per 0.1 s".into(),
    ));

    Ok(figures)
}

/// e003-fairness: Jain index against the number of flows, one figure per β.
fn jain_per_beta(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let id = experiment.id.as_str();
    let runs: Vec<&LoadedRun> = experiment.runs.iter().collect();
    let mut figures = Vec::new();
    let mut betas: Vec<&str> = runs.iter().filter_map(|run| label(run, "beta")).collect();
    betas.dedup();
    for beta in betas {
        let groups = grouped_banded(
            experiment,
            |run| label(run, "beta") == Some(beta),
            "loss",
            |run| label(run, "flows").and_then(label_number),
            |run| {
                let goodputs: Option<Vec<f64>> = under_test(run)
                    .iter()
                    .map(|flow| goodput_kbps(&run.run, flow))
                    .collect();
                goodputs.and_then(|g| metrics::jain_index(&g))
            },
        );
        let groups: Vec<plot::BandedGroup> = groups
            .into_iter()
            .map(|(loss, points)| (format!("loss {loss}"), points))
            .collect();
        let plot = plot::grouped_xy_with_bands(
            &format!("e003-fairness: Jain index, {beta}"),
            "flows",
            "Jain index",
            &groups,
        );
        figures.push((
                    save_line(&plot, out, id, &format!("jain-{beta}"))?,
                    format!("Jain index among the Enhancement flows ({beta}) against their number, one line per loss rate{}", band_note(experiment)),
                ));
    }

    Ok(figures)
}

/// e003-friendliness: T2/T1 against the number of flows, per mix and buffer.
fn friendliness(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let id = experiment.id.as_str();
    let mut figures = Vec::new();
    let mean_goodput = |run: &LoadedRun, names: &[String]| {
        let flows = flow_names(&run.run, Some(names));
        mean_of_all(flows.iter().map(|flow| goodput_kbps(&run.run, flow)))
    };
    let tcp = ["tcp".to_string()];
    // T1: the mean over all n TCP flows of the all-TCP run (the paper's definition).
    let all = ["tcp".to_string(), "f".to_string()];
    let groups = banded(experiment, |runs| {
        let mut groups: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for run in runs {
            let (Some(mix), Some(n)) = (label(run, "mix"), label(run, "n")) else {
                continue;
            };
            if mix == "all-tcp" {
                continue;
            }
            let buffer = label(run, "buffer");
            let Some(base) = runs.iter().find(|other| {
                label(other, "n") == Some(n)
                    && label(other, "mix") == Some("all-tcp")
                    && label(other, "buffer") == buffer
            }) else {
                continue;
            };
            let (Some(t2), Some(t1), Some(x)) = (
                mean_goodput(run, &tcp),
                mean_goodput(base, &all),
                label_number(n),
            ) else {
                continue;
            };
            let group = match buffer {
                Some(buffer) => format!("{mix}, buffer {buffer}"),
                None => mix.to_owned(),
            };
            if t1 > 0.0 {
                match groups.iter_mut().find(|(name, _)| *name == group) {
                    Some((_, points)) => points.push((x, t2 / t1)),
                    None => groups.push((group, vec![(x, t2 / t1)])),
                }
            }
        }
        groups
    });
    let plot = plot::grouped_xy_with_bands(
        "e003-friendliness: T2/T1 vs number of flows",
        "flows n",
        "T2 / T1",
        &groups,
    )
    .reference("paper: β = 1 ≈ 0.85", 0.85);
    figures.push((
                save_line(&plot, out, id, "t2-t1")?,
                format!("TCP-friendliness T2/T1: mean goodput of the TCP flows left with half the flows replaced, over the mean of all n flows of the all-TCP run; the paper's 20-packet bottleneck buffer and 100 (sensitivity){}", band_note(experiment)),
            ));

    Ok(figures)
}

/// e004-burstiness: burstiness index and mean goodput per scenario, TCP beside TFRC.
fn burstiness_bars(experiment: &Experiment, out: &Path) -> Result<Vec<(PathBuf, String)>> {
    let id = experiment.id.as_str();
    let runs: Vec<&LoadedRun> = experiment.runs.iter().collect();
    let mut figures = Vec::new();
    let categories: Vec<String> = runs
        .iter()
        .map(|run| {
            let scenario = label(run, "scenario").unwrap_or("run");
            match label(run, "segment") {
                Some(segment) => format!("{scenario} @{segment}"),
                None => scenario.to_owned(),
            }
        })
        .collect();
    let measured: Vec<_> = runs.iter().map(|run| run_metrics(&run.run)).collect();
    let by_kind =
        |kind: FlowKind, pick: &dyn Fn(&tfrc_analysis::measure::FlowMetrics) -> Option<f64>| {
            measured
                .iter()
                .map(|metrics| {
                    mean_of_all(
                        metrics
                            .flows
                            .iter()
                            .filter(|flow| flow.kind == kind && flow.name.starts_with(kind.name()))
                            .map(pick),
                    )
                })
                .collect::<Vec<_>>()
        };
    let burstiness = BarChart::new(
        "e004-burstiness: burstiness index (std / mean of the received rate)",
        "burstiness index",
        categories.clone(),
    )
    .series("TCP", by_kind(FlowKind::Tcp, &|flow| flow.burstiness_index))
    .series(
        "TFRC",
        by_kind(FlowKind::Tfrc, &|flow| flow.burstiness_index),
    );
    figures.push((
        save_bars(&burstiness, out, id, "burstiness")?,
        "burstiness index of the downlink flows in each scenario".into(),
    ));
    let goodput = BarChart::new(
        "e004-burstiness: mean goodput",
        "goodput (kb/s)",
        categories,
    )
    .series(
        "TCP",
        by_kind(FlowKind::Tcp, &|flow| flow.goodput_bps.map(|g| g / 1000.0)),
    )
    .series(
        "TFRC",
        by_kind(FlowKind::Tfrc, &|flow| flow.goodput_bps.map(|g| g / 1000.0)),
    );
    figures.push((
        save_bars(&goodput, out, id, "goodput")?,
        "mean goodput of the downlink flows in each scenario".into(),
    ));

    Ok(figures)
}
