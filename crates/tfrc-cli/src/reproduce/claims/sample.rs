//! Sampling a claim in one replication: the runs its variant selects, the flows it names, the
//! baseline it is divided by, and the reduction of all the runs' values to the items judged.

use std::collections::BTreeMap;

use tfrc_analysis::metrics;
use tfrc_analysis::run::Run;
use tfrc_output::FlowKind;

use super::measure::{series_difference, Measurement};
use super::schema::{Claim, OneOrMany};
use super::vocabulary::{Across, Aggregate, Metric};
use super::RunView;

/// Whether a run's sweep labels match a claim's selector (every label it names has one of
/// the values it lists).
fn matches(labels: &[(String, String)], selector: &BTreeMap<String, OneOrMany>) -> bool {
    selector.iter().all(|(label, wanted)| {
        labels
            .iter()
            .find(|(name, _)| name == label)
            .is_some_and(|(_, value)| wanted.values().contains(&value.as_str()))
    })
}

/// Whether the claim's flow name `selector` names `flow`: the flow itself, or an instance
/// `selector.N` of a counted flow.
pub(super) fn flow_selected(selector: &str, flow: &str) -> bool {
    flow == selector
        || flow
            .strip_prefix(selector)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// The flows a claim is about in one run.
pub(crate) fn flow_names(run: &Run, flows: Option<&[String]>) -> Vec<String> {
    let all = &run.summary.flows;
    match flows {
        Some(names) => {
            let mut selected = Vec::new();
            for name in names {
                for flow in all {
                    if flow_selected(name, &flow.name) && !selected.contains(&flow.name) {
                        selected.push(flow.name.clone());
                    }
                }
            }
            selected
        }
        None => {
            let tfrc: Vec<String> = all
                .iter()
                .filter(|flow| flow.kind == FlowKind::Tfrc)
                .map(|flow| flow.name.clone())
                .collect();
            if tfrc.is_empty() {
                all.iter()
                    .filter(|flow| flow.kind == FlowKind::Tcp)
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

/// Applies `aggregate` to per-flow values.
fn aggregate(values: Vec<Option<f64>>, claim: &Claim) -> Vec<Option<f64>> {
    // Summed throughput and receiving ratio are measured over the flows taken together.
    let run_wide = claim.metric.is_run_wide()
        || (matches!(claim.metric, Metric::ReceivingRatio | Metric::Throughput)
            && claim.aggregate == Some(Aggregate::Sum));
    if run_wide {
        return values;
    }
    match claim.aggregate {
        Some(Aggregate::Sum) => vec![values.iter().copied().sum::<Option<f64>>()],
        Some(Aggregate::Mean) => vec![mean_of_all(values)],
        // The first flow's value less the second's (B − A: which flow got more of a share).
        Some(Aggregate::Difference) => match values.as_slice() {
            [Some(first), Some(second)] => vec![Some(first - second)],
            _ => vec![None],
        },
        None => values,
    }
}

/// The claim's values in one run: measured over its flows (all TFRC, else TCP, flows when it
/// names none that the run has), aggregated, and divided by the same over `baseline_window`.
fn run_values(view: &RunView<'_>, claim: &Claim, flows: Option<&[String]>) -> Vec<Option<f64>> {
    let flows = flow_names(view.run, flows);
    let flows = if flows.is_empty() {
        flow_names(view.run, None)
    } else {
        flows
    };
    if flows.is_empty() {
        return vec![None];
    }
    let measured = aggregate(
        Measurement::values(view, claim, &flows, claim.window),
        claim,
    );
    let Some(base_window) = claim.baseline_window else {
        return measured;
    };
    let base = aggregate(
        Measurement::values(view, claim, &flows, Some(base_window)),
        claim,
    );
    divided(&measured, &base)
}

/// `values` divided by their baselines: item by item when both have as many items (the same
/// flows), else each by the mean of the defined baselines. Undefined where either side is, or
/// the baseline is 0.
fn divided(values: &[Option<f64>], baselines: &[Option<f64>]) -> Vec<Option<f64>> {
    let ratio = |value: Option<f64>, base: Option<f64>| match (value, base) {
        (Some(value), Some(base)) if base != 0.0 => Some(value / base),
        _ => None,
    };
    if values.len() == baselines.len() {
        return values
            .iter()
            .zip(baselines)
            .map(|(value, base)| ratio(*value, *base))
            .collect();
    }
    let defined: Vec<f64> = baselines.iter().flatten().copied().collect();
    let mean = metrics::mean(&defined);
    values.iter().map(|value| ratio(*value, mean)).collect()
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

/// The last number in a label value (`enh-b2` → 2, `single-p0.01` → 0.01, `500ms-4` → 4), which
/// orders runs for `along`; `None` when it has none.
pub(crate) fn label_number(value: &str) -> Option<f64> {
    let mut numbers = Vec::new();
    let mut current = String::new();
    for character in value.chars().chain(core::iter::once(' ')) {
        if character.is_ascii_digit() || (character == '.' && !current.is_empty()) {
            current.push(character);
        } else if !current.is_empty() {
            numbers.push(current.trim_end_matches('.').to_string());
            current.clear();
        }
    }
    numbers.last()?.parse().ok()
}

/// What one replication gave for a claim: one value per item (a run's flow, or the one figure
/// of `across`), in a fixed order; or why nothing could be measured.
pub type Sample = std::result::Result<Vec<Option<f64>>, String>;

/// One selected run's sweep labels and its per-flow values.
type RunValues = (Vec<(String, String)>, Vec<Option<f64>>);

/// Reduces the per-run values of the selected runs to one figure (`across`), or keeps them all.
fn reduce_across(claim: &Claim, per_run: &[RunValues]) -> Vec<Option<f64>> {
    let flat = || {
        per_run
            .iter()
            .flat_map(|(_, values)| values.iter().copied())
    };
    let Some(across) = claim.across else {
        return flat().collect();
    };
    let all: Option<Vec<f64>> = flat().collect();
    let along = |label: &str| -> Vec<(f64, f64)> {
        per_run
            .iter()
            .filter_map(|(labels, values)| {
                let x = labels
                    .iter()
                    .find(|(name, _)| name == label)
                    .and_then(|(_, value)| label_number(value))?;
                let y = mean_of_all(values.iter().copied())?;
                Some((x, y))
            })
            .collect()
    };
    let figure = match across {
        Across::Mean => all.and_then(|values| metrics::mean(&values)),
        Across::Min => all.and_then(|values| values.into_iter().reduce(f64::min)),
        Across::Max => all.and_then(|values| values.into_iter().reduce(f64::max)),
        Across::ShareBelow => {
            let defined: Vec<f64> = flat().flatten().collect();
            let cut = claim.cut.unwrap_or(f64::NAN);
            (!defined.is_empty())
                .then(|| defined.iter().filter(|v| **v < cut).count() as f64 / defined.len() as f64)
        }
        Across::LastOverFirst => {
            let points = along(claim.along.as_deref().unwrap_or_default());
            let at = |pick: fn(f64, f64) -> f64| -> Option<f64> {
                let x = points.iter().map(|p| p.0).reduce(pick)?;
                let ys: Vec<f64> = points.iter().filter(|p| p.0 == x).map(|p| p.1).collect();
                metrics::mean(&ys)
            };
            match (at(f64::max), at(f64::min)) {
                (Some(last), Some(first)) if first != 0.0 && points.len() >= 2 => {
                    Some(last / first)
                }
                _ => None,
            }
        }
        // Each next value over the previous one along the label: one item per step, so that
        // every step is judged with its own interval ("does not increase with n").
        Across::Steps => {
            let mut points = along(claim.along.as_deref().unwrap_or_default());
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut xs: Vec<f64> = points.iter().map(|p| p.0).collect();
            xs.dedup();
            let at = |x: f64| -> Option<f64> {
                let ys: Vec<f64> = points.iter().filter(|p| p.0 == x).map(|p| p.1).collect();
                metrics::mean(&ys)
            };
            return xs
                .windows(2)
                .map(|pair| match (at(pair[1]), at(pair[0])) {
                    (Some(next), Some(previous)) if previous != 0.0 => Some(next / previous),
                    _ => None,
                })
                .collect();
        }
        Across::Spearman => {
            let points = along(claim.along.as_deref().unwrap_or_default());
            let (xs, ys): (Vec<f64>, Vec<f64>) = points.into_iter().unzip();
            metrics::spearman(&xs, &ys)
        }
    };
    vec![figure]
}

/// Measures one claim in one replication: its runs (`runs`) and every experiment's runs of the
/// same replication (`all`, by id, for `baseline_id`).
pub fn sample(
    claim: &Claim,
    runs: &[RunView<'_>],
    all: &BTreeMap<String, Vec<RunView<'_>>>,
) -> Sample {
    let selected: Vec<&RunView<'_>> = runs
        .iter()
        .filter(|view| matches(view.labels, &claim.variant))
        .collect();
    if selected.is_empty() {
        return Err("no run matches the claim's variant".into());
    }
    let baseline_runs = match &claim.baseline_id {
        Some(id) => all.get(id).map(Vec::as_slice).unwrap_or(&[]),
        None => runs,
    };
    let mut per_run = Vec::new();
    for view in &selected {
        let base_flows = claim.baseline_flows.as_deref().or(claim.flows.as_deref());
        let base = match &claim.baseline {
            Some(baseline) => match find_baseline(claim, baseline, view.labels, baseline_runs) {
                Some(base) => Some(base),
                None => return Err("no baseline run for the claim".into()),
            },
            // Other flows of the same run.
            None => claim.baseline_flows.is_some().then_some(*view),
        };
        let measured: Vec<Option<f64>> = if claim.metric == Metric::SeriesDifference {
            // A paired metric: the run's series against its baseline's, not a ratio.
            let Some(base) = base else {
                return Err(format!(
                    "{} needs a `baseline` run",
                    Metric::SeriesDifference
                ));
            };
            flow_names(view.run, claim.flows.as_deref())
                .iter()
                .map(|flow| series_difference(view, base, flow, claim.window))
                .collect()
        } else {
            let measured = run_values(view, claim, claim.flows.as_deref());
            match base {
                Some(base) => divided(&measured, &run_values(base, claim, base_flows)),
                None => measured,
            }
        };
        let measured = measured
            .into_iter()
            .map(|value| value.filter(|v| v.is_finite()))
            .collect();
        per_run.push((view.labels.to_vec(), measured));
    }
    Ok(reduce_across(claim, &per_run))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::claims::judge::judge;
    use crate::reproduce::claims::measure::binned;
    use crate::reproduce::claims::tests::claim;
    use crate::reproduce::claims::vocabulary::Relation;
    use crate::reproduce::claims::Status;

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
    fn across_reduces_runs_to_one_figure() {
        let runs = |pairs: &[(&str, f64)]| -> Vec<RunValues> {
            pairs
                .iter()
                .map(|(label, value)| {
                    (
                        vec![("protocol".to_string(), label.to_string())],
                        vec![Some(*value)],
                    )
                })
                .collect()
        };
        let per_run = runs(&[
            ("tfrc", 9.0),
            ("enh-b1", 0.9),
            ("enh-b2", 0.8),
            ("enh-b3", 0.5),
        ]);
        let mut c = claim(Relation::Below, Some(1.0), None);
        c.across = Some(Across::ShareBelow);
        c.cut = Some(0.85);
        assert_eq!(reduce_across(&c, &per_run), vec![Some(0.5)]);
        c.across = Some(Across::LastOverFirst);
        c.along = Some("protocol".into());
        // β = 3 over β = 1 ("tfrc" has no number and is left out).
        let ratio = reduce_across(&c, &per_run)[0].unwrap();
        assert!((ratio - 0.5 / 0.9).abs() < 1e-12);
        c.across = Some(Across::Spearman);
        assert_eq!(reduce_across(&c, &per_run), vec![Some(-1.0)]);
        c.across = Some(Across::Max);
        assert_eq!(reduce_across(&c, &per_run), vec![Some(9.0)]);
        c.across = None;
        assert_eq!(reduce_across(&c, &per_run).len(), 4);
    }

    #[test]
    fn steps_give_one_item_per_step_along_the_label() {
        let per_run: Vec<RunValues> = [("4", 1.7), ("8", 1.05), ("16", 1.03), ("64", 1.07)]
            .iter()
            .map(|(n, gain)| {
                (
                    vec![("flows".to_string(), n.to_string())],
                    vec![Some(*gain)],
                )
            })
            .collect();
        let mut c = claim(Relation::AtMost, Some(1.0), Some(0.05));
        c.across = Some(Across::Steps);
        c.along = Some("flows".into());
        let steps = reduce_across(&c, &per_run);
        assert_eq!(steps.len(), 3);
        let expected = [1.05 / 1.7, 1.03 / 1.05, 1.07 / 1.03];
        for (step, expected) in steps.iter().zip(expected) {
            assert!((step.unwrap() - expected).abs() < 1e-12);
        }
        // A gain that rises from one step to the next by more than the tolerance fails the
        // claim, which last_over_first (64 against 4) would have passed.
        let samples: Vec<Sample> = (0..10)
            .map(|i| {
                let jitter = 1e-3 * f64::from(i);
                Ok(vec![
                    Some(0.6 + jitter),
                    Some(0.98 + jitter),
                    Some(1.10 + jitter),
                ])
            })
            .collect();
        assert_eq!(judge(&c, &samples).status, Status::Differs);
    }

    #[test]
    fn difference_and_bins_reduce_as_documented() {
        let mut c = claim(Relation::Above, Some(-391.5), None);
        c.aggregate = Some(Aggregate::Difference);
        assert_eq!(
            aggregate(vec![Some(350.0), Some(640.0)], &c),
            vec![Some(-290.0)]
        );
        assert_eq!(aggregate(vec![Some(350.0), None], &c), vec![None]);
        // Bins of 2 s over 1 s rates; a last, partial bin is left out.
        assert_eq!(
            binned(&[1.0, 3.0, 5.0, 7.0, 9.0], 1.0, Some(2.0)),
            vec![2.0, 6.0]
        );
        assert_eq!(binned(&[1.0, 3.0], 1.0, None), vec![1.0, 3.0]);
    }

    #[test]
    fn label_numbers_are_the_last_number() {
        assert_eq!(label_number("enh-b2"), Some(2.0));
        assert_eq!(label_number("single-p0.01"), Some(0.01));
        assert_eq!(label_number("500ms-4"), Some(4.0));
        assert_eq!(label_number("64"), Some(64.0));
        assert_eq!(label_number("tfrc"), None);
    }
}
