//! The claims file's schema (`scenarios/claims.toml`, documented in `scenarios/README.md`):
//! what serde reads, the vocabularies with meanings that the catalogue prints, and the checks
//! serde cannot make.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use super::vocabulary::{Across, Aggregate, Metric, Relation, Side, Statistic};

/// The whole claims file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimsFile {
    /// The citation of each paper, by number (`"000"`): title, authors, venue, as the report
    /// names them.
    pub papers: BTreeMap<String, String>,
    /// Metric names and definitions.
    pub metrics: BTreeMap<String, String>,
    /// Per experiment id.
    pub experiment: BTreeMap<String, ExperimentClaims>,
    /// Conditions a paper leaves unstated, each at a level fixed from one of the paper's own
    /// figures, under which the claims of some experiments are judged a second time (a
    /// sensitivity column beside the default verdict, never instead of it).
    #[serde(default)]
    pub calibration: BTreeMap<String, Calibration>,
}

/// A calibrated condition: scenario overrides (as `tfrc sim --set` takes them) applied to the
/// runs of some experiments, with where its level comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// The experiments whose runs are repeated under the condition.
    pub experiments: Vec<String>,
    /// What the condition is and why the paper's network had it.
    pub condition: String,
    /// `key.path=value` overrides, applied to every run of those experiments.
    pub set: Vec<String>,
    /// The level, in words (`"2 % random loss on the downlink"`).
    pub value: String,
    /// The paper's figure (and sentence) the level was fixed from.
    pub source: String,
    /// How the level was fixed from it: the rule, the runs and what they measured.
    pub method: String,
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
    /// The values, one or many.
    pub(super) fn values(&self) -> Vec<&str> {
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
    /// The claim in short.
    pub text: String,
    /// The paper's own sentence(s), verbatim.
    pub quote: Option<String>,
    /// Where in the paper (section, figure, table).
    pub source: Option<String>,
    /// Where the bound comes from: `"paper"` (the paper's own number or comparison),
    /// `"catalogue"` (a number the paper leaves unstated, set by the experiment catalogue,
    /// EXPERIMENTS.md: a target split, a run length) or `"ours"` (the paper gives none).
    pub threshold: Option<String>,
    /// Our decision on the independent reading of this claim.
    pub reading: Option<String>,
    /// Why our runs do not show the claim, with the evidence (a sensitivity run, a figure, a
    /// measured cause): printed beside a `differs` or `inconclusive` verdict.
    pub explanation: Option<String>,
    /// The cause of a `differs` or `inconclusive` verdict, one word of [`CAUSES`] chosen from the
    /// evidence in `explanation` (required with it).
    pub cause: Option<String>,
    /// The calibration (a key of `[calibration]`) whose level this claim's paper figure fixed:
    /// under that condition the claim holds by construction, so it is not judged there.
    pub calibrates: Option<String>,
    /// Metric name (a key of the `[metrics]` table).
    pub metric: Metric,
    /// How our figure is compared with the paper's (`approx`, `range`, `at_least`, …).
    pub relation: Relation,
    /// Runs the claim is about, by sweep label.
    #[serde(default)]
    pub variant: BTreeMap<String, OneOrMany>,
    /// Divide by the same metric in the run that differs in these labels.
    pub baseline: Option<BTreeMap<String, OneOrMany>>,
    /// The baseline run is in this other experiment.
    pub baseline_id: Option<String>,
    /// Flow names (or name prefixes of counted flows).
    pub flows: Option<Vec<String>>,
    /// The flows of the ratio's denominator: in the `baseline` run, or in the same run when
    /// there is no `baseline` (default: `flows`).
    pub baseline_flows: Option<Vec<String>>,
    /// `sum` / `mean` over the flows of a run.
    pub aggregate: Option<Aggregate>,
    /// `[start, end]` in seconds.
    pub window: Option<[f64; 2]>,
    /// Divide by the same metric of the same run and flows over this window.
    pub baseline_window: Option<[f64; 2]>,
    /// `mean`, `median`, `min`, `max` or `pNN` of a time series.
    pub statistic: Option<Statistic>,
    /// Reduces the values of all selected runs to one figure.
    pub across: Option<Across>,
    /// The cut of `across = "share_below"`.
    pub cut: Option<f64>,
    /// The sweep label ordering the runs for `last_over_first`, `steps` and `spearman`.
    pub along: Option<String>,
    /// Width in seconds of the bins a time series is cut into before `statistic`: `throughput`
    /// takes the mean of the 1 s rates in each bin, `Jain index` is computed per bin.
    pub bin_s: Option<f64>,
    /// The rate in kb/s that `time to level` waits for.
    pub level: Option<f64>,
    /// Which side's rate `throughput` takes: `"receiver"` (bytes delivered, the default) or
    /// `"sender"` (bytes sent: "the rate of the senders").
    pub side: Option<Side>,
    /// The paper's number.
    pub value: Option<f64>,
    /// Lower end of a `range`.
    pub min: Option<f64>,
    /// Upper end of a `range`.
    pub max: Option<f64>,
    /// Relative slack of `approx`, `at_least`, `at_most`.
    pub tolerance: Option<f64>,
    /// Unit of the numbers.
    pub unit: Option<String>,
}

/// Where a claim's bound comes from (`threshold`), with what the word means.
pub const THRESHOLDS: [(&str, &str); 3] = [
    ("paper", "the paper's own number or comparison"),
    (
        "catalogue",
        "a number the paper leaves unstated, set by the experiment catalogue (EXPERIMENTS.md): \
         a split of a stated sum, a run length",
    ),
    (
        "ours",
        "the paper gives no number; the bound is ours and its reading says why",
    ),
];

/// The causes a `differs` or `inconclusive` verdict is put down to (`cause`), with what each
/// means. Chosen per claim from the measured evidence in its `explanation`.
pub const CAUSES: [(&str, &str); 5] = [
    (
        "paper-network-not-modelled",
        "the paper's network had a condition our scenario does not model (a wireless link's \
         random losses, a real host's load); a calibrated condition can show its effect",
    ),
    (
        "paper-setup-unstated",
        "the verdict turns on a setting the paper does not give (a buffer, an uplink rate, a \
         start-up window); ours is the documented default, and the explanation measures the \
         alternative",
    ),
    (
        "paper-inconsistent",
        "the paper's number does not follow from its own equations, setup or other figures",
    ),
    (
        "model-differs",
        "our model or implementation behaves otherwise than the paper's under the conditions it \
         states: a defect of ours to fix, not to explain",
    ),
    (
        "noise",
        "the measured quantity varies widely from run to run (its interval straddles the \
         bound, or the paper's single run is one draw of a spread our replications show): \
         more runs, not the network, decide it",
    ),
];

/// The cause printed for a `differs` or `inconclusive` claim that records none.
pub const UNEXPLAINED: &str = "unexplained";

/// Checks what serde cannot: the numbers each relation needs, no tolerance where it would be
/// ignored, the fields that go together, the names that must exist elsewhere in the file.
/// Errors name the experiment and the claim. (An unknown metric, relation, statistic, across,
/// aggregate or side is already a load error: see [`super::vocabulary`].)
pub fn validate(file: &ClaimsFile) -> Result<()> {
    for (id, experiment) in &file.experiment {
        if !file.papers.contains_key(&experiment.paper) {
            anyhow::bail!(
                "experiment {id}: paper {:?} has no citation in [papers]",
                experiment.paper
            );
        }
    }
    for (id, experiment) in &file.experiment {
        for claim in &experiment.claim {
            check_claim(file, claim).map_err(|message| {
                anyhow::anyhow!(
                    "claims.toml: [experiment.{id}] claim “{}”: {message}",
                    claim.text
                )
            })?;
        }
    }
    check_calibrations(file)
}

/// One claim's checks, in the order their messages are looked for: what every claim records,
/// its metric's definition, its relation's numbers, its reduction across runs, its words.
fn check_claim(file: &ClaimsFile, claim: &Claim) -> std::result::Result<(), String> {
    for (field, value) in [
        ("quote", &claim.quote),
        ("source", &claim.source),
        ("threshold", &claim.threshold),
        ("reading", &claim.reading),
    ] {
        if value.as_deref().is_none_or(|text| text.trim().is_empty()) {
            return Err(format!(
                "no `{field}`: every claim quotes its paper (`quote`, `source`), says whether \
                 its threshold is the paper's or ours (`threshold`) and records our reading of \
                 it (`reading`)"
            ));
        }
    }
    if !file.metrics.contains_key(claim.metric.name()) {
        return Err(format!(
            "metric {:?} has no definition in [metrics] (defined: {})",
            claim.metric.name(),
            file.metrics.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    check_relation(claim)?;
    check_across(claim)?;
    check_words(file, claim)
}

/// The numbers the claim's relation compares with: a `value`, or `min` and `max` for a range;
/// no tolerance on a strict relation.
fn check_relation(claim: &Claim) -> std::result::Result<(), String> {
    let relation = claim.relation;
    if relation.needs_value() && claim.value.is_none() {
        return Err(format!("relation {relation} needs `value`"));
    }
    if relation == Relation::Range && (claim.min.is_none() || claim.max.is_none()) {
        return Err("relation range needs `min` and `max`".into());
    }
    if relation.is_strict() && claim.tolerance.is_some() {
        return Err(format!(
            "relation {relation} is strict and takes no tolerance (use at_most / at_least)"
        ));
    }
    Ok(())
}

/// What the reduction across runs needs: a `cut` for `share_below`, a sweep label (`along`) to
/// order the runs by.
fn check_across(claim: &Claim) -> std::result::Result<(), String> {
    let Some(across) = claim.across else {
        return Ok(());
    };
    if across == Across::ShareBelow && claim.cut.is_none() {
        return Err("across = \"share_below\" needs `cut`".into());
    }
    if across.needs_along() && claim.along.is_none() {
        return Err(format!(
            "across = \"{across}\" needs `along` (a sweep label)"
        ));
    }
    Ok(())
}

/// Every `[calibration.NAME]` names experiments that exist and sets something.
fn check_calibrations(file: &ClaimsFile) -> Result<()> {
    for (name, calibration) in &file.calibration {
        for id in &calibration.experiments {
            if !file.experiment.contains_key(id) {
                anyhow::bail!("claims.toml: [calibration.{name}]: no experiment {id:?}");
            }
        }
        if calibration.set.is_empty() {
            anyhow::bail!("claims.toml: [calibration.{name}]: `set` is empty");
        }
    }
    Ok(())
}

/// The checks of a claim's words against their vocabularies and of the fields that go
/// together (a cause with its explanation, a paired metric with its baseline run, a level with
/// `time to level`); the message names what is wrong.
fn check_words(file: &ClaimsFile, claim: &Claim) -> std::result::Result<(), String> {
    if let Some(threshold) = &claim.threshold {
        if !THRESHOLDS.iter().any(|(name, _)| name == threshold) {
            return Err(format!(
                "threshold must be one of {}, got {threshold:?}",
                names(&THRESHOLDS)
            ));
        }
    }
    match (&claim.cause, &claim.explanation) {
        (Some(cause), _) if !CAUSES.iter().any(|(name, _)| name == cause) => {
            return Err(format!(
                "unknown cause {cause:?} (known: {})",
                names(&CAUSES)
            ))
        }
        (None, Some(_)) => {
            return Err(format!(
                "an `explanation` needs a `cause` ({})",
                names(&CAUSES)
            ))
        }
        (Some(_), None) => return Err("a `cause` needs the `explanation` that measures it".into()),
        _ => {}
    }
    if let Some(name) = &claim.calibrates {
        if !file.calibration.contains_key(name) {
            return Err(format!("calibrates {name:?}: no such [calibration.{name}]"));
        }
    }
    for (field, value) in [("bin_s", claim.bin_s), ("level", claim.level)] {
        if value.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
            return Err(format!("`{field}` must be a positive number"));
        }
    }
    if claim.metric == Metric::SeriesDifference && claim.baseline.is_none() {
        return Err(format!(
            "metric {:?} compares a run with its `baseline` run: give one",
            Metric::SeriesDifference.name()
        ));
    }
    if claim.metric == Metric::TimeToLevel && claim.level.is_none() {
        return Err("metric \"time to level\" needs `level` (kb/s)".into());
    }
    Ok(())
}

/// The names of a vocabulary, comma-separated.
fn names(vocabulary: &[(&str, &str)]) -> String {
    vocabulary
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads `claims.toml`.
pub fn load(path: &Path) -> Result<ClaimsFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let file: ClaimsFile = toml::from_str(&text)
        .with_context(|| format!("{}: invalid claims file", path.display()))?;
    validate(&file)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_bad_claim() {
        let text = |extra: &str| {
            format!(
                "[papers]\n\"000\" = \"A. Author, \\\"A paper\\\", Venue 2000\"\n[metrics]\ngoodput = \"g\"\n[experiment.e1]\npaper = \"000\"\nwhere = \"x\"\nshow = \"x\"\nmetrics = []\nresult = \"r\"\n[[experiment.e1.claim]]\ntext = \"the claim\"\nquote = \"q\"\nsource = \"§1\"\nthreshold = \"paper\"\nreading = \"ok\"\nmetric = \"goodput\"\n{extra}\n"
            )
        };
        let check = |extra: &str| -> std::result::Result<(), String> {
            let file: ClaimsFile = toml::from_str(&text(extra)).map_err(|e| e.to_string())?;
            validate(&file).map_err(|e| e.to_string())
        };
        assert!(check("relation = \"approx\"\nvalue = 1.0").is_ok());
        // Every experiment's paper is cited.
        let uncited = text("relation = \"approx\"\nvalue = 1.0")
            .replace("[papers]\n\"000\"", "[papers]\n\"001\"");
        let file: ClaimsFile = toml::from_str(&uncited).unwrap();
        assert!(validate(&file)
            .unwrap_err()
            .to_string()
            .contains("paper \"000\" has no citation"));
        let error = check("relation = \"below\"\nvalue = 1.0\ntolerance = 0.1").unwrap_err();
        assert!(
            error.contains("the claim") && error.contains("no tolerance"),
            "{error}"
        );
        assert!(check("relation = \"nearly\"\nvalue = 1.0")
            .unwrap_err()
            .contains("unknown relation"));
        assert!(check("relation = \"approx\"")
            .unwrap_err()
            .contains("needs `value`"));
        assert!(
            check("relation = \"approx\"\nvalue = 1.0\nstatistic = \"mode\"")
                .unwrap_err()
                .contains("statistic")
        );
        assert!(
            check("relation = \"above\"\nvalue = 0.5\nacross = \"share_below\"")
                .unwrap_err()
                .contains("cut")
        );
        assert!(
            check("relation = \"below\"\nvalue = 1.0\nacross = \"spearman\"")
                .unwrap_err()
                .contains("along")
        );
        assert!(
            check("relation = \"approx\"\nvalue = 1.0\nthreshold = \"mine\"")
                .unwrap_err()
                .contains("threshold")
        );
        // A paired metric needs the run it is paired with.
        let paired = text("relation = \"at_most\"\nvalue = 0.05")
            .replace("metric = \"goodput\"", "metric = \"series difference\"")
            .replace("goodput = \"g\"", "\"series difference\" = \"d\"");
        let file: ClaimsFile = toml::from_str(&paired).unwrap();
        assert!(validate(&file)
            .unwrap_err()
            .to_string()
            .contains("compares a run with its `baseline`"));
        let file: ClaimsFile =
            toml::from_str(&format!("{paired}baseline = {{ profile = \"ns2\" }}\n")).unwrap();
        assert!(validate(&file).is_ok());
        // A metric the code does not measure is a load error naming the ones it does; one it
        // measures must still be defined in [metrics].
        let bad_metric = text("relation = \"approx\"\nvalue = 1.0")
            .replace("metric = \"goodput\"", "metric = \"speed\"");
        let error = toml::from_str::<ClaimsFile>(&bad_metric)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("unknown metric \"speed\" (known: throughput, goodput,"),
            "{error}"
        );
        let undefined = text("relation = \"approx\"\nvalue = 1.0")
            .replace("metric = \"goodput\"", "metric = \"throughput\"");
        let file: ClaimsFile = toml::from_str(&undefined).unwrap();
        assert!(validate(&file)
            .unwrap_err()
            .to_string()
            .contains("metric \"throughput\" has no definition in [metrics] (defined: goodput)"));
        // The threshold, cause, aggregate and side vocabularies; an explanation needs a cause
        // and a cause its explanation; a calibration must exist.
        let catalogue = text("relation = \"approx\"\nvalue = 1.0")
            .replace("threshold = \"paper\"", "threshold = \"catalogue\"");
        let file: ClaimsFile = toml::from_str(&catalogue).unwrap();
        assert!(validate(&file).is_ok());
        for (extra, expected) in [
            (
                "explanation = \"why\"\ncause = \"bad luck\"",
                "unknown cause",
            ),
            ("explanation = \"why\"", "needs a `cause`"),
            ("cause = \"noise\"", "needs the `explanation`"),
            ("aggregate = \"median\"", "unknown aggregate"),
            (
                "side = \"middle\"",
                "unknown side \"middle\" (known: sender, receiver)",
            ),
            ("calibrates = \"nowhere\"", "no such [calibration.nowhere]"),
            ("bin_s = -1.0", "`bin_s` must be a positive number"),
        ] {
            let error = check(&format!("relation = \"approx\"\nvalue = 1.0\n{extra}")).unwrap_err();
            assert!(error.contains(expected), "{extra}: {error}");
        }
        assert!(check(
            "relation = \"approx\"\nvalue = 1.0\nexplanation = \"why\"\ncause = \"paper-inconsistent\""
        )
        .is_ok());
        assert!(check("relation = \"below_capacity\"\nvalue = 384.0")
            .unwrap_err()
            .contains("unknown relation"));
        let unquoted = text("relation = \"approx\"\nvalue = 1.0").replace("quote = \"q\"\n", "");
        let file: ClaimsFile = toml::from_str(&unquoted).unwrap();
        assert!(validate(&file)
            .unwrap_err()
            .to_string()
            .contains("no `quote`"));
    }
}
