//! The papers' claims (`scenarios/claims.toml`, schema in `scenarios/README.md`) checked
//! against our runs.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;
use tfrc_analysis::measure::{convergence_times, run_metrics};
use tfrc_analysis::metrics::{self, ConvergenceOptions, RecoveryOptions};
use tfrc_analysis::run::{Direction, Run};

/// The whole claims file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimsFile {
    /// Metric names and definitions.
    pub metrics: BTreeMap<String, String>,
    /// Per experiment id.
    pub experiment: BTreeMap<String, ExperimentClaims>,
}

/// What a paper says about one experiment.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentClaims {
    /// Paper number (`000`).
    pub paper: String,
    /// Section / figure in the paper.
    #[serde(rename = "where")]
    pub location: String,
    /// What the report shows.
    pub show: String,
    /// Metrics used.
    pub metrics: Vec<String>,
    /// The paper's result, in full.
    pub result: String,
    /// Individual claims.
    #[serde(default)]
    pub claim: Vec<Claim>,
}

/// A label value or a list of them.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// One value.
    One(String),
    /// Several values.
    Many(Vec<String>),
}

impl OneOrMany {
    fn values(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(value) => vec![value.as_str()],
            OneOrMany::Many(values) => values.iter().map(String::as_str).collect(),
        }
    }
}

/// One claim.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub text: String,
    pub metric: String,
    pub relation: String,
    #[serde(default)]
    pub variant: BTreeMap<String, OneOrMany>,
    pub baseline: Option<BTreeMap<String, OneOrMany>>,
    pub baseline_id: Option<String>,
    pub flows: Option<Vec<String>>,
    pub aggregate: Option<String>,
    pub window: Option<[f64; 2]>,
    pub statistic: Option<String>,
    pub across: Option<String>,
    pub value: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub tolerance: Option<f64>,
    pub unit: Option<String>,
}

/// Reads `claims.toml`.
pub fn load(path: &Path) -> Result<ClaimsFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("{}: invalid claims file", path.display()))
}

/// One finished run, as the claims see it.
pub struct RunView<'a> {
    /// Sweep labels of the run.
    pub labels: &'a [(String, String)],
    /// The loaded run.
    pub run: &'a Run,
    /// `(start, end)` of the disturbance (loss period, UDP burst), if the scenario has one.
    pub disturbance: Option<(f64, f64)>,
    /// Mean capacity of the bottleneck in kb/s (a trace's mean rate for trace-driven links).
    pub capacity_kbps: Option<f64>,
}

/// How a claim came out.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// The measured value satisfies the relation.
    Holds,
    /// It does not.
    Differs,
    /// A number printed beside ours, not a criterion.
    Reference,
    /// No number: see the figure.
    Qualitative,
    /// Could not be measured (no matching run, undefined metric).
    NotMeasured(String),
}

/// A claim with our measurement.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The claim.
    pub claim: Claim,
    /// The paper's number(s), formatted.
    pub paper: String,
    /// Ours, formatted.
    pub ours: String,
    /// Verdict.
    pub status: Status,
}

fn matches(labels: &[(String, String)], selector: &BTreeMap<String, OneOrMany>) -> bool {
    selector.iter().all(|(label, wanted)| {
        labels
            .iter()
            .find(|(name, _)| name == label)
            .is_some_and(|(_, value)| wanted.values().contains(&value.as_str()))
    })
}

/// The flows a claim is about in one run.
pub(crate) fn flow_names(run: &Run, flows: Option<&[String]>) -> Vec<String> {
    let all = &run.summary.flows;
    match flows {
        Some(names) => {
            let mut selected = Vec::new();
            for name in names {
                let prefix = format!("{name}.");
                for flow in all {
                    if (&flow.name == name || flow.name.starts_with(&prefix))
                        && !selected.contains(&flow.name)
                    {
                        selected.push(flow.name.clone());
                    }
                }
            }
            selected
        }
        None => {
            let tfrc: Vec<String> = all
                .iter()
                .filter(|flow| flow.kind == "tfrc")
                .map(|flow| flow.name.clone())
                .collect();
            if tfrc.is_empty() {
                all.iter()
                    .filter(|flow| flow.kind == "tcp")
                    .map(|flow| flow.name.clone())
                    .collect()
            } else {
                tfrc
            }
        }
    }
}

/// Mean goodput of one flow over its active time, in kb/s.
pub(crate) fn goodput_kbps(run: &Run, flow: &str) -> Option<f64> {
    run.flow_summary(flow)?.goodput_bps.map(|g| g / 1000.0)
}

/// Packets received / packets sent over several flows together.
pub(crate) fn total_receiving_ratio(run: &Run, flows: &[String]) -> Option<f64> {
    let (sent, received) = flows.iter().fold((0u64, 0u64), |(s, r), flow| {
        let summary = run.flow_summary(flow);
        (
            s + summary.map_or(0, |x| x.sent_packets),
            r + summary.map_or(0, |x| x.recv_packets),
        )
    });
    metrics::receiving_ratio(received, sent)
}

/// The mean of values that must all be defined (`None` if one is not, or there are none).
pub(crate) fn mean_of_all(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let defined: Option<Vec<f64>> = values.into_iter().collect();
    defined.and_then(|values| metrics::mean(&values))
}

fn window_rows<'a>(
    run: &'a Run,
    flow: &'a str,
    window: Option<[f64; 2]>,
) -> impl Iterator<Item = &'a tfrc_analysis::run::FlowRow> + 'a {
    run.flow_rows(flow).filter(move |row| match window {
        Some([start, end]) => row.time_s > start && row.time_s <= end + 1e-9,
        None => true,
    })
}

fn statistic(values: &[f64], name: Option<&str>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    match name.unwrap_or("mean") {
        "min" => values.iter().cloned().reduce(f64::min),
        "max" => values.iter().cloned().reduce(f64::max),
        "median" => {
            let mut sorted = values.to_vec();
            sorted.sort_by(f64::total_cmp);
            let middle = sorted.len() / 2;
            Some(if sorted.len().is_multiple_of(2) {
                (sorted[middle - 1] + sorted[middle]) / 2.0
            } else {
                sorted[middle]
            })
        }
        _ => metrics::mean(values),
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
    active
        .iter()
        .zip(smoothed)
        .find(|(_, rate)| *rate >= target)
        .map(|((t, _), _)| t - summary.start_s)
}

/// Convergence time after `flow` arrives ([`convergence_times`]: receivers' rates of all TFRC/TCP
/// flows); a flow alone on the network uses [`transient`].
fn convergence(run: &Run, flow: &str) -> Option<f64> {
    let controlled: Vec<_> = run
        .summary
        .flows
        .iter()
        .filter(|f| f.kind == "tfrc" || f.kind == "tcp")
        .collect();
    let arrival = run.flow_summary(flow)?.start_s;
    let overlapping = controlled
        .iter()
        .filter(|f| f.start_s <= arrival + 1e-9 && f.stop_s > arrival && f.name != flow)
        .count();
    if overlapping == 0 {
        return transient(run, flow);
    }
    convergence_times(run, ConvergenceOptions::default())
        .ok()?
        .into_iter()
        .find(|convergence| convergence.flow == flow)?
        .time_s
}

/// Per-flow values of a metric in one run, or one run-wide value.
fn measure(view: &RunView<'_>, claim: &Claim, flows: &[String]) -> Vec<Option<f64>> {
    let run = view.run;
    // A window reaching past the end of a (shortened) run covers what the run has.
    let duration = run.summary.duration_s;
    let window = match claim.window {
        Some([start, _]) if start >= duration => return vec![None; flows.len().max(1)],
        Some([start, end]) => Some([start, end.min(duration)]),
        None => None,
    };
    let per_flow = |f: &dyn Fn(&str) -> Option<f64>| -> Vec<Option<f64>> {
        flows.iter().map(|flow| f(flow)).collect()
    };
    let goodput_kbps = |flow: &str| -> Option<f64> {
        match window {
            Some([start, end]) => {
                let bytes: u64 = window_rows(run, flow, window).map(|r| r.recv_bytes).sum();
                (end > start).then(|| bytes as f64 * 8.0 / (end - start) / 1000.0)
            }
            None => goodput_kbps(run, flow),
        }
    };
    let state_mean = |flow: &str, column: fn(&tfrc_analysis::run::StateRow) -> Option<f64>| {
        let values: Vec<f64> = run
            .states
            .iter()
            .filter(|row| row.flow == flow)
            .filter(|row| match window {
                Some([start, end]) => row.time_s > start && row.time_s <= end + 1e-9,
                None => {
                    let summary = run.flow_summary(flow);
                    summary.is_none_or(|s| row.time_s >= s.start_s && row.time_s <= s.stop_s)
                }
            })
            .filter_map(column)
            .collect();
        metrics::mean(&values)
    };
    match claim.metric.as_str() {
        "goodput" => per_flow(&goodput_kbps),
        "throughput" => per_flow(&|flow| {
            let rates: Vec<f64> = window_rows(run, flow, window)
                .map(|r| r.recv_kbps)
                .collect();
            statistic(&rates, claim.statistic.as_deref())
        }),
        "loss event rate p" => per_flow(&|flow| state_mean(flow, |row| row.p)),
        "experienced RTT" => per_flow(&|flow| state_mean(flow, |row| row.rtt_s)),
        "receiving ratio" => {
            if claim.aggregate.as_deref() == Some("sum") {
                vec![total_receiving_ratio(run, flows)]
            } else {
                per_flow(&|flow| run.flow_summary(flow)?.receiving_ratio)
            }
        }
        "CoV" => per_flow(&|flow| run.flow_summary(flow)?.cov_sent_100ms),
        "burstiness index" => {
            let measured = run_metrics(run);
            per_flow(&|flow| {
                measured
                    .flows
                    .iter()
                    .find(|f| f.name == flow)?
                    .burstiness_index
            })
        }
        "convergence time" => per_flow(&|flow| convergence(run, flow)),
        "recovery time" => per_flow(&|flow| {
            let (start, end) = view.disturbance?;
            let series = run.throughput_series(flow, Direction::Received);
            let (times, rates): (Vec<f64>, Vec<f64>) = series.into_iter().unzip();
            metrics::recovery_time(&times, &rates, start, end, RecoveryOptions::default())
                .ok()
                .flatten()
        }),
        "Jain index" => {
            let goodputs: Option<Vec<f64>> = flows.iter().map(|f| goodput_kbps(f)).collect();
            vec![goodputs.and_then(|g| metrics::jain_index(&g))]
        }
        "TCP-friendliness T2/T1" => {
            let goodputs: Option<Vec<f64>> = flows.iter().map(|f| goodput_kbps(f)).collect();
            vec![goodputs.and_then(|g| metrics::mean(&g))]
        }
        "link utilization" => vec![run_metrics(run).bottleneck_utilization],
        _ => vec![None],
    }
}

/// Applies `aggregate` to per-flow values.
fn aggregate(values: Vec<Option<f64>>, claim: &Claim) -> Vec<Option<f64>> {
    let run_wide = matches!(
        claim.metric.as_str(),
        "Jain index" | "TCP-friendliness T2/T1" | "link utilization"
    ) || (claim.metric == "receiving ratio"
        && claim.aggregate.as_deref() == Some("sum"));
    if run_wide {
        return values;
    }
    match claim.aggregate.as_deref() {
        Some("sum") => vec![values.iter().copied().sum::<Option<f64>>()],
        Some("mean") => vec![mean_of_all(values)],
        _ => values,
    }
}

fn run_values(view: &RunView<'_>, claim: &Claim) -> Vec<Option<f64>> {
    let flows = flow_names(view.run, claim.flows.as_deref());
    let flows = if flows.is_empty() {
        flow_names(view.run, None)
    } else {
        flows
    };
    if flows.is_empty() {
        return vec![None];
    }
    aggregate(measure(view, claim, &flows), claim)
}

/// The baseline run of `run` for `claim`: same labels except those the baseline sets.
fn find_baseline<'a>(
    claim: &Claim,
    baseline: &BTreeMap<String, OneOrMany>,
    labels: &[(String, String)],
    candidates: &'a [RunView<'a>],
) -> Option<&'a RunView<'a>> {
    let wanted: Vec<(String, String)> = labels
        .iter()
        .map(|(label, value)| match baseline.get(label) {
            Some(OneOrMany::One(base)) => (label.clone(), base.clone()),
            Some(OneOrMany::Many(bases)) => {
                // Pairs with the variant list of the same label, by position.
                let position = claim
                    .variant
                    .get(label)
                    .map(|v| v.values())
                    .and_then(|values| values.iter().position(|v| v == value))
                    .unwrap_or(0);
                (
                    label.clone(),
                    bases.get(position).cloned().unwrap_or_default(),
                )
            }
            None => (label.clone(), value.clone()),
        })
        .collect();
    // Exact match on every label the baseline run has; labels the baseline run lacks (another
    // experiment's runs) are ignored.
    candidates.iter().find(|candidate| {
        baseline.keys().all(|key| {
            let want = wanted
                .iter()
                .find(|(l, _)| l == key)
                .map(|(_, v)| v.as_str());
            let want = want.or_else(|| match baseline.get(key) {
                Some(OneOrMany::One(value)) => Some(value.as_str()),
                _ => None,
            });
            candidate
                .labels
                .iter()
                .any(|(l, v)| l == key && Some(v.as_str()) == want)
        }) && wanted.iter().all(|(label, value)| {
            baseline.contains_key(label)
                || candidate
                    .labels
                    .iter()
                    .find(|(l, _)| l == label)
                    .is_none_or(|(_, v)| v == value)
        })
    })
}

fn format_number(value: f64) -> String {
    if value == 0.0 {
        "0".into()
    } else if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

fn paper_text(claim: &Claim) -> String {
    let unit = claim.unit.as_deref().unwrap_or("");
    let unit = if unit == "ratio" || unit == "index" || unit == "fraction" {
        String::new()
    } else {
        format!(" {unit}")
    };
    let tolerance = claim
        .tolerance
        .map(|t| format!(" (±{:.0} %)", t * 100.0))
        .unwrap_or_default();
    match claim.relation.as_str() {
        "range" => format!(
            "{}–{}{unit}",
            claim.min.map(format_number).unwrap_or_default(),
            claim.max.map(format_number).unwrap_or_default()
        ),
        "qualitative" => "(qualitative)".into(),
        relation => {
            let value = claim.value.map(format_number).unwrap_or_default();
            let symbol = match relation {
                "approx" => "≈ ",
                "at_least" => "≥ ",
                "at_most" => "≤ ",
                "below" => "< ",
                "above" => "> ",
                "below_capacity" => "< capacity; nominal ",
                _ => "",
            };
            format!("{symbol}{value}{unit}{tolerance}")
        }
    }
}

fn satisfies(claim: &Claim, value: f64, capacity_kbps: Option<f64>) -> Option<bool> {
    let tolerance = claim.tolerance.unwrap_or(0.0);
    Some(match claim.relation.as_str() {
        "approx" => {
            let target = claim.value?;
            let tolerance = claim.tolerance.unwrap_or(0.1);
            (value - target).abs() <= tolerance * target.abs() + 1e-12
        }
        "range" => value >= claim.min? - 1e-12 && value <= claim.max? + 1e-12,
        "at_least" => value >= claim.value? * (1.0 - tolerance) - 1e-12,
        "at_most" => value <= claim.value? * (1.0 + tolerance) + 1e-12,
        "below" => value < claim.value?,
        "above" => value > claim.value?,
        "below_capacity" => value < capacity_kbps?,
        _ => return None,
    })
}

/// Checks one claim against the runs of its experiment (`runs`) and of every experiment
/// (`all`, by id, for `baseline_id`).
pub fn evaluate(
    claim: &Claim,
    runs: &[RunView<'_>],
    all: &BTreeMap<String, Vec<RunView<'_>>>,
) -> Outcome {
    let outcome = |ours: String, status: Status| Outcome {
        claim: claim.clone(),
        paper: paper_text(claim),
        ours,
        status,
    };
    let selected: Vec<&RunView<'_>> = runs
        .iter()
        .filter(|view| matches(view.labels, &claim.variant))
        .collect();
    if selected.is_empty() {
        return outcome(
            "—".into(),
            Status::NotMeasured("no run matches the claim's variant".into()),
        );
    }
    let baseline_runs = match &claim.baseline_id {
        Some(id) => all.get(id).map(Vec::as_slice).unwrap_or(&[]),
        None => runs,
    };
    let mut values: Vec<f64> = Vec::new();
    let mut capacity = None;
    for view in &selected {
        capacity = capacity.or(view.capacity_kbps);
        let mut measured = run_values(view, claim);
        if let Some(baseline) = &claim.baseline {
            let Some(base) = find_baseline(claim, baseline, view.labels, baseline_runs) else {
                return outcome(
                    "—".into(),
                    Status::NotMeasured("no baseline run for the claim".into()),
                );
            };
            let base_values = run_values(base, claim);
            let base_mean = {
                let defined: Vec<f64> = base_values.iter().flatten().copied().collect();
                metrics::mean(&defined)
            };
            measured = if base_values.len() == measured.len() {
                measured
                    .iter()
                    .zip(&base_values)
                    .map(|(m, b)| match (m, b) {
                        (Some(m), Some(b)) if *b != 0.0 => Some(m / b),
                        _ => None,
                    })
                    .collect()
            } else {
                measured
                    .iter()
                    .map(|m| match (m, base_mean) {
                        (Some(m), Some(b)) if b != 0.0 => Some(m / b),
                        _ => None,
                    })
                    .collect()
            };
        }
        for value in measured {
            match value {
                Some(value) if value.is_finite() => values.push(value),
                _ => {
                    if claim.relation != "qualitative" {
                        return outcome(
                            "n/a".into(),
                            Status::NotMeasured(format!(
                                "{} is undefined in run {}",
                                claim.metric, view.run.summary.scenario
                            )),
                        );
                    }
                }
            }
        }
    }
    let reduced: Vec<f64> = match claim.across.as_deref() {
        Some("mean") => metrics::mean(&values).into_iter().collect(),
        Some("min") => values
            .iter()
            .cloned()
            .reduce(f64::min)
            .into_iter()
            .collect(),
        Some("max") => values
            .iter()
            .cloned()
            .reduce(f64::max)
            .into_iter()
            .collect(),
        _ => values,
    };
    let ours = match reduced.len() {
        0 => "n/a".to_string(),
        1 => format_number(reduced[0]),
        _ => {
            let low = reduced.iter().cloned().fold(f64::INFINITY, f64::min);
            let high = reduced.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            format!(
                "{}–{} ({} values)",
                format_number(low),
                format_number(high),
                reduced.len()
            )
        }
    };
    let status = match claim.relation.as_str() {
        "reference" => Status::Reference,
        "qualitative" => Status::Qualitative,
        _ => {
            let results: Option<Vec<bool>> = reduced
                .iter()
                .map(|&value| satisfies(claim, value, capacity))
                .collect();
            match results {
                Some(results) if !results.is_empty() => {
                    if results.iter().all(|ok| *ok) {
                        Status::Holds
                    } else {
                        Status::Differs
                    }
                }
                _ => Status::NotMeasured(format!(
                    "relation {} cannot be checked with the given numbers",
                    claim.relation
                )),
            }
        }
    };
    outcome(ours, status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(relation: &str, value: Option<f64>, tolerance: Option<f64>) -> Claim {
        Claim {
            text: "t".into(),
            metric: "goodput".into(),
            relation: relation.into(),
            variant: BTreeMap::new(),
            baseline: None,
            baseline_id: None,
            flows: None,
            aggregate: None,
            window: None,
            statistic: None,
            across: None,
            value,
            min: Some(0.84),
            max: Some(1.14),
            tolerance,
            unit: Some("kb/s".into()),
        }
    }

    #[test]
    fn relations_compare_as_documented() {
        // approx: within ± tolerance of the value (10 % when none is given).
        assert_eq!(
            satisfies(&claim("approx", Some(447.0), Some(0.15)), 390.0, None),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim("approx", Some(447.0), Some(0.15)), 370.0, None),
            Some(false)
        );
        assert_eq!(
            satisfies(&claim("approx", Some(1.0), None), 1.09, None),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim("approx", Some(1.0), None), 1.11, None),
            Some(false)
        );
        // at_least allows the tolerance below the value; below/above are strict.
        assert_eq!(
            satisfies(&claim("at_least", Some(800.0), Some(0.05)), 761.0, None),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim("at_least", Some(800.0), Some(0.05)), 759.0, None),
            Some(false)
        );
        assert_eq!(
            satisfies(&claim("below", Some(500.0), None), 500.0, None),
            Some(false)
        );
        assert_eq!(
            satisfies(&claim("above", Some(1.0), None), 1.01, None),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim("range", None, None), 0.84, None),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim("range", None, None), 1.2, None),
            Some(false)
        );
        // below_capacity needs the capacity.
        assert_eq!(
            satisfies(&claim("below_capacity", Some(384.0), None), 300.0, None),
            None
        );
        assert_eq!(
            satisfies(
                &claim("below_capacity", Some(384.0), None),
                300.0,
                Some(1380.0)
            ),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim("qualitative", None, None), 1.0, None),
            None
        );
    }

    #[test]
    fn paper_numbers_are_written_with_their_relation() {
        assert_eq!(
            paper_text(&claim("approx", Some(447.0), Some(0.15))),
            "≈ 447 kb/s (±15 %)"
        );
        assert_eq!(paper_text(&claim("range", None, None)), "0.840–1.14 kb/s");
        assert_eq!(
            paper_text(&claim("qualitative", None, None)),
            "(qualitative)"
        );
    }

    #[test]
    fn variant_selectors_match_labels() {
        let labels = vec![
            ("flows".to_string(), "2".to_string()),
            ("protocol".to_string(), "enh-b1".to_string()),
        ];
        let mut selector = BTreeMap::new();
        selector.insert(
            "protocol".to_string(),
            OneOrMany::Many(vec!["enh-b1".into(), "enh-b2".into()]),
        );
        assert!(matches(&labels, &selector));
        selector.insert("flows".to_string(), OneOrMany::One("4".into()));
        assert!(!matches(&labels, &selector));
        assert!(matches(&labels, &BTreeMap::new()));
    }

    #[test]
    fn statistics_over_a_window() {
        assert_eq!(statistic(&[1.0, 3.0, 2.0], None), Some(2.0));
        assert_eq!(statistic(&[1.0, 3.0, 2.0, 10.0], Some("median")), Some(2.5));
        assert_eq!(statistic(&[1.0, 3.0], Some("max")), Some(3.0));
        assert_eq!(statistic(&[], Some("min")), None);
    }
}
