//! The papers' claims (`scenarios/claims.toml`, schema in `scenarios/README.md`) checked
//! against our runs: the file's [`schema`] and its closed [`vocabulary`], the metric measured
//! in one run ([`measure`]), the claim sampled over the runs of one replication ([`sample`]),
//! and the verdict over the replications ([`judge`]).

mod judge;
mod measure;
mod sample;
mod schema;
mod vocabulary;

use tfrc_analysis::run::Run;

pub(crate) use judge::{interval_text, paper_text};
pub use judge::{judge, Outcome, Status, CALIBRATION_TARGET};
pub(crate) use sample::{
    flow_names, goodput_kbps, label_number, mean_of_all, total_receiving_ratio,
};
pub use sample::{sample, Sample};
pub use schema::{
    load, Claim, ClaimsFile, ExperimentClaims, OneOrMany, CAUSES, THRESHOLDS, UNEXPLAINED,
};
pub(crate) use vocabulary::Metric;
pub use vocabulary::{Aggregate, Relation};

/// A measurement with no bound (`relation = "reference"`) of `metric`, named `text`, on every
/// run and the default flows: what [`sample`] and [`judge`] need to give a figure its interval
/// over the replications without judging it (the report's "Today's TCP" questions set the
/// runs, flows and window).
pub(crate) fn reference_claim(text: &str, metric: Metric) -> Claim {
    Claim {
        text: text.to_string(),
        quote: None,
        source: None,
        threshold: None,
        reading: None,
        explanation: None,
        cause: None,
        calibrates: None,
        metric,
        relation: Relation::Reference,
        variant: std::collections::BTreeMap::new(),
        baseline: None,
        baseline_id: None,
        flows: None,
        baseline_flows: None,
        aggregate: None,
        window: None,
        baseline_window: None,
        statistic: None,
        across: None,
        cut: None,
        along: None,
        bin_s: None,
        level: None,
        side: None,
        value: None,
        min: None,
        max: None,
        tolerance: None,
        unit: None,
    }
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use super::sample::flow_selected;
    use super::vocabulary::Metric;
    use super::*;

    /// A claim of `goodput` in kb/s with `relation` to `value` (a range: 0.84–1.14).
    pub(super) fn claim(relation: Relation, value: Option<f64>, tolerance: Option<f64>) -> Claim {
        Claim {
            text: "t".into(),
            quote: None,
            source: None,
            threshold: None,
            reading: None,
            explanation: None,
            cause: None,
            calibrates: None,
            metric: Metric::Goodput,
            relation,
            variant: BTreeMap::new(),
            baseline: None,
            baseline_id: None,
            flows: None,
            baseline_flows: None,
            aggregate: None,
            window: None,
            baseline_window: None,
            statistic: None,
            across: None,
            cut: None,
            along: None,
            bin_s: None,
            level: None,
            side: None,
            value,
            min: Some(0.84),
            max: Some(1.14),
            tolerance,
            unit: Some("kb/s".into()),
        }
    }

    /// The repository's scenarios folder.
    fn scenarios() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
    }

    /// Every claim of the repository's claims.toml: valid, quoting its paper with a source, the
    /// origin of its threshold and our reading, and naming only sweep labels and values, flows
    /// and windows its experiment (or its baseline experiment) has.
    #[test]
    fn the_claims_file_quotes_its_papers_and_names_what_exists() {
        use tfrc_scenario::Scenario;
        let dir = scenarios();
        let file = load(&dir.join("claims.toml")).unwrap();
        let expand = |id: &str| -> (Scenario, Vec<Scenario>) {
            let scenario = Scenario::from_path(&dir.join(format!("{id}.toml")))
                .unwrap_or_else(|error| panic!("{id}: {error}"));
            let runs = scenario.expand().unwrap();
            (scenario, runs)
        };
        let check_labels =
            |context: &str, selector: &BTreeMap<String, OneOrMany>, runs: &[Scenario]| {
                for (label, wanted) in selector {
                    let known: Vec<&str> = runs
                        .iter()
                        .flat_map(|run| run.variant.iter())
                        .filter(|(name, _)| name == label)
                        .map(|(_, value)| value.as_str())
                        .collect();
                    assert!(!known.is_empty(), "{context}: no sweep label {label:?}");
                    for value in wanted.values() {
                        assert!(
                            known.contains(&value),
                            "{context}: {label} has no value {value:?}"
                        );
                    }
                }
            };
        let mut claims = 0;
        for (id, experiment) in &file.experiment {
            assert!(
                dir.join(format!("{id}.toml")).is_file(),
                "{id}: no scenario file"
            );
            let (scenario, runs) = expand(id);
            for claim in &experiment.claim {
                claims += 1;
                let context = format!("{id}: “{}”", claim.text);
                for (field, value) in [
                    ("quote", &claim.quote),
                    ("source", &claim.source),
                    ("threshold", &claim.threshold),
                    ("reading", &claim.reading),
                ] {
                    assert!(
                        value.as_deref().is_some_and(|text| !text.trim().is_empty()),
                        "{context}: no {field}"
                    );
                }
                assert!(
                    experiment
                        .metrics
                        .iter()
                        .any(|metric| metric == claim.metric.name()),
                    "{context}: metric {} not in the experiment's list",
                    claim.metric
                );
                check_labels(&context, &claim.variant, &runs);
                let baseline_runs = match &claim.baseline_id {
                    Some(other) => expand(other).1,
                    None => runs.clone(),
                };
                if let Some(baseline) = &claim.baseline {
                    check_labels(&context, baseline, &baseline_runs);
                }
                if let Some(label) = &claim.along {
                    check_labels(
                        &context,
                        &BTreeMap::from([(label.clone(), OneOrMany::Many(Vec::new()))]),
                        &runs,
                    );
                }
                for selector in claim.flows.iter().chain(&claim.baseline_flows).flatten() {
                    assert!(
                        runs.iter()
                            .chain(&baseline_runs)
                            .flat_map(|run| run.flows.iter())
                            .any(|flow| flow_selected(selector, &flow.name)),
                        "{context}: no flow {selector:?}"
                    );
                }
                for window in [claim.window, claim.baseline_window].into_iter().flatten() {
                    let duration = scenario.duration.as_secs_f64();
                    assert!(
                        0.0 <= window[0] && window[0] < window[1] && window[1] <= duration,
                        "{context}: window {window:?} outside 0–{duration} s"
                    );
                }
            }
        }
        assert!(claims >= 83, "{claims} claims");
    }

    /// Every quote is the paper's own words: each piece between elisions ("…") occurs in the
    /// paper's text (white space folded). The papers are beside the project (`../shared/seeds`,
    /// or `PAPERS_DIR`); without them the test says so and checks nothing.
    #[test]
    fn quotes_are_verbatim() {
        let papers = std::env::var_os("PAPERS_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/seeds"));
        let Ok(entries) = std::fs::read_dir(&papers) else {
            println!(
                "skipped: no papers at {} (set PAPERS_DIR)",
                papers.display()
            );
            return;
        };
        let fold = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut texts: BTreeMap<String, String> = BTreeMap::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let (Some(number), Ok(text)) = (
                name.split('_').next(),
                std::fs::read_to_string(entry.path()),
            ) {
                if name.ends_with(".txt") {
                    texts.insert(number.to_string(), fold(&text));
                }
            }
        }
        let file = load(&scenarios().join("claims.toml")).unwrap();
        let mut checked = 0;
        for (id, experiment) in &file.experiment {
            let Some(paper) = texts.get(&experiment.paper) else {
                panic!("{id}: no text of paper {}", experiment.paper);
            };
            for claim in &experiment.claim {
                for piece in claim.quote.as_deref().unwrap_or("").split('…') {
                    let piece = fold(piece);
                    if piece.is_empty() {
                        continue;
                    }
                    assert!(
                        paper.contains(&piece),
                        "{id}: “{}”: not in paper {}: {piece:?}",
                        claim.text,
                        experiment.paper
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked >= 83, "{checked} quoted pieces");
    }
}
