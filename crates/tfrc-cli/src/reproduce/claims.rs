//! The papers' claims (`scenarios/claims.toml`, schema in `scenarios/README.md`) checked
//! against our runs.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;
use tfrc_analysis::measure::{bottleneck_utilization, compete, convergence_times, run_metrics};
use tfrc_analysis::metrics::{self, ConvergenceOptions, RecoveryOptions};
use tfrc_analysis::run::{Direction, Run};

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
    pub metric: String,
    /// How our figure is compared with the paper's (`approx`, `range`, `at_least`, …).
    pub relation: String,
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
    pub aggregate: Option<String>,
    /// `[start, end]` in seconds.
    pub window: Option<[f64; 2]>,
    /// Divide by the same metric of the same run and flows over this window.
    pub baseline_window: Option<[f64; 2]>,
    /// `mean`, `median`, `min`, `max` or `pNN` of a time series.
    pub statistic: Option<String>,
    /// Reduces the values of all selected runs to one figure.
    pub across: Option<String>,
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
    pub side: Option<String>,
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

/// Relations a claim may use.
pub const RELATIONS: [&str; 8] = [
    "approx",
    "range",
    "at_least",
    "at_most",
    "below",
    "above",
    "reference",
    "qualitative",
];

/// Reductions `across` may name.
pub const ACROSS: [&str; 7] = [
    "mean",
    "min",
    "max",
    "share_below",
    "last_over_first",
    "steps",
    "spearman",
];

/// Reductions `aggregate` may name over the flows of a run.
pub const AGGREGATES: [&str; 3] = ["sum", "mean", "difference"];

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

/// Checks what serde cannot: known names, the numbers each relation needs, no tolerance where it
/// would be ignored. Errors name the experiment and the claim.
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
            let fail = |message: String| -> Result<()> {
                anyhow::bail!(
                    "claims.toml: [experiment.{id}] claim “{}”: {message}",
                    claim.text
                )
            };
            for (field, value) in [
                ("quote", &claim.quote),
                ("source", &claim.source),
                ("threshold", &claim.threshold),
                ("reading", &claim.reading),
            ] {
                if value.as_deref().is_none_or(|text| text.trim().is_empty()) {
                    fail(format!(
                        "no `{field}`: every claim quotes its paper (`quote`, `source`), says \
                         whether its threshold is the paper's or ours (`threshold`) and records \
                         our reading of it (`reading`)"
                    ))?;
                }
            }
            if !file.metrics.contains_key(&claim.metric) {
                fail(format!(
                    "unknown metric {:?} (known: {})",
                    claim.metric,
                    file.metrics.keys().cloned().collect::<Vec<_>>().join(", ")
                ))?;
            }
            if !RELATIONS.contains(&claim.relation.as_str()) {
                fail(format!(
                    "unknown relation {:?} (known: {})",
                    claim.relation,
                    RELATIONS.join(", ")
                ))?;
            }
            let needs_value = ["approx", "at_least", "at_most", "below", "above"];
            if needs_value.contains(&claim.relation.as_str()) && claim.value.is_none() {
                fail(format!("relation {} needs `value`", claim.relation))?;
            }
            if claim.relation == "range" && (claim.min.is_none() || claim.max.is_none()) {
                fail("relation range needs `min` and `max`".into())?;
            }
            if matches!(claim.relation.as_str(), "below" | "above") && claim.tolerance.is_some() {
                fail(format!(
                    "relation {} is strict and takes no tolerance (use at_most / at_least)",
                    claim.relation
                ))?;
            }
            if let Some(name) = &claim.statistic {
                if parse_statistic(name).is_none() {
                    fail(format!(
                        "unknown statistic {name:?} (mean, median, min, max or pNN)"
                    ))?;
                }
            }
            if let Some(across) = &claim.across {
                if !ACROSS.contains(&across.as_str()) {
                    fail(format!(
                        "unknown across {across:?} (known: {})",
                        ACROSS.join(", ")
                    ))?;
                }
                if across == "share_below" && claim.cut.is_none() {
                    fail("across = \"share_below\" needs `cut`".into())?;
                }
                if matches!(across.as_str(), "last_over_first" | "steps" | "spearman")
                    && claim.along.is_none()
                {
                    fail(format!("across = {across:?} needs `along` (a sweep label)"))?;
                }
            }
            if let Err(message) = check_words(file, claim) {
                fail(message)?;
            }
        }
    }
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
    if let Some(aggregate) = &claim.aggregate {
        if !AGGREGATES.contains(&aggregate.as_str()) {
            return Err(format!(
                "unknown aggregate {aggregate:?} (known: {})",
                AGGREGATES.join(", ")
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
    if let Some(side) = &claim.side {
        if side != "sender" && side != "receiver" {
            return Err(format!(
                "side must be \"sender\" or \"receiver\", got {side:?}"
            ));
        }
    }
    if claim.metric == SERIES_DIFFERENCE && claim.baseline.is_none() {
        return Err(format!(
            "metric {SERIES_DIFFERENCE:?} compares a run with its `baseline` run: give one"
        ));
    }
    if claim.metric == "time to level" && claim.level.is_none() {
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
    /// The confidence interval of our figure lies on the paper's side of the threshold.
    Holds,
    /// It lies wholly on the other side.
    Differs,
    /// It straddles the threshold.
    Inconclusive,
    /// A number printed beside ours, not a criterion.
    Reference,
    /// No number: see the figure.
    Qualitative,
    /// The claim whose paper figure fixed the calibrated condition it would be judged under:
    /// it holds there by construction.
    CalibrationTarget,
    /// Could not be measured (no matching run, undefined metric).
    NotMeasured(String),
}

/// Why a claim is not sampled under the calibration its own figure fixed.
pub const CALIBRATION_TARGET: &str = "the calibration's target";

impl Status {
    /// The word written in the report and in `claims.csv`.
    pub fn text(&self) -> String {
        match self {
            Status::Holds => "holds".into(),
            Status::Differs => "differs".into(),
            Status::Inconclusive => "inconclusive".into(),
            Status::Reference => "reference".into(),
            Status::Qualitative => "see figure".into(),
            Status::CalibrationTarget => "calibration target".into(),
            Status::NotMeasured(reason) => format!("not measured: {reason}"),
        }
    }
}

/// A claim with our measurement over the replications.
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
    /// The figure that decides the verdict (the item that differs, else the one closest to the
    /// threshold): mean and 95 % interval over the replications in which it was defined.
    pub interval: Option<metrics::MeanInterval>,
    /// The same claim judged under a calibrated condition (its name, and the outcome there).
    pub calibrated: Option<(String, Box<Outcome>)>,
}

impl Outcome {
    /// The cause of a `differs` or `inconclusive` verdict: the claim's recorded `cause`, or
    /// [`UNEXPLAINED`]; empty for any other verdict.
    pub fn cause(&self) -> &str {
        match self.status {
            Status::Differs | Status::Inconclusive => {
                self.claim.cause.as_deref().unwrap_or(UNEXPLAINED)
            }
            _ => "",
        }
    }
}

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
fn flow_selected(selector: &str, flow: &str) -> bool {
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

/// A statistic of a time series: `mean`, `median`, `min`, `max`, or `pNN` (the NN-th
/// percentile, e.g. `p90`), as a quantile in [0, 1] (`None` = mean).
fn parse_statistic(name: &str) -> Option<Option<f64>> {
    match name {
        "mean" => Some(None),
        "median" => Some(Some(0.5)),
        "min" => Some(Some(0.0)),
        "max" => Some(Some(1.0)),
        _ => {
            let percent: f64 = name.strip_prefix('p')?.parse().ok()?;
            (0.0..=100.0)
                .contains(&percent)
                .then_some(Some(percent / 100.0))
        }
    }
}

fn statistic(values: &[f64], name: Option<&str>) -> Option<f64> {
    match parse_statistic(name.unwrap_or("mean"))? {
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
        .filter(|f| f.kind == "tfrc" || f.kind == "tcp")
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
fn binned(rates: &[f64], interval_s: f64, bin_s: Option<f64>) -> Vec<f64> {
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

/// Per-flow values of a metric in one run over `window`, or one run-wide value.
fn measure(
    view: &RunView<'_>,
    claim: &Claim,
    flows: &[String],
    window: Option<[f64; 2]>,
) -> Vec<Option<f64>> {
    let run = view.run;
    // A window reaching past the end of a (shortened) run covers what the run has.
    let duration = run.summary.duration_s;
    let window = match window {
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
                let bytes: u64 = window_rows(run, flow, window)
                    .map(|r| r.goodput_bytes)
                    .sum();
                (end > start).then(|| bytes as f64 * 8.0 / (end - start) / 1000.0)
            }
            None => goodput_kbps(run, flow),
        }
    };
    let state_statistic = |flow: &str, column: fn(&tfrc_analysis::run::StateRow) -> Option<f64>| {
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
        statistic(&values, claim.statistic.as_deref())
    };
    let side_kbps = |row: &tfrc_analysis::run::FlowRow| match claim.side.as_deref() {
        Some("sender") => row.send_kbps,
        _ => row.recv_kbps,
    };
    match claim.metric.as_str() {
        "goodput" => per_flow(&goodput_kbps),
        // The flows' summed series when the claim sums them (an aggregate's rate over time),
        // else one series per flow; binned by `bin_s`, then `statistic`.
        "throughput" if claim.aggregate.as_deref() == Some("sum") => {
            let mut summed: BTreeMap<u64, f64> = BTreeMap::new();
            for flow in flows {
                for row in window_rows(run, flow, window) {
                    *summed.entry((row.time_s * 1e6).round() as u64).or_default() += side_kbps(row);
                }
            }
            let rates: Vec<f64> = summed.into_values().collect();
            vec![statistic(
                &binned(&rates, run.summary.interval_s, claim.bin_s),
                claim.statistic.as_deref(),
            )]
        }
        "throughput" => per_flow(&|flow| {
            let rates: Vec<f64> = window_rows(run, flow, window).map(side_kbps).collect();
            statistic(
                &binned(&rates, run.summary.interval_s, claim.bin_s),
                claim.statistic.as_deref(),
            )
        }),
        "time to level" => per_flow(&|flow| time_to_level(run, flow, claim.level?)),
        "loss event rate p" => per_flow(&|flow| state_statistic(flow, |row| row.p)),
        "experienced RTT" => per_flow(&|flow| state_statistic(flow, |row| row.rtt_s)),
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
            let recovered =
                metrics::recovery_time(&times, &rates, start, end, RecoveryOptions::default())
                    .ok()?;
            // Never recovered: the time left in the run after the disturbance, a lower bound.
            Some(recovered.unwrap_or(run.summary.duration_s - end))
        }),
        // Per bin of `bin_s` seconds when given (the index of each bin's goodputs, then
        // `statistic` over the bins), else over the whole window.
        "Jain index" => match claim.bin_s {
            Some(bin_s) => {
                let per_flow: Vec<Vec<f64>> = flows
                    .iter()
                    .map(|flow| {
                        let rates: Vec<f64> = window_rows(run, flow, window)
                            .map(|r| r.goodput_kbps)
                            .collect();
                        binned(&rates, run.summary.interval_s, Some(bin_s))
                    })
                    .collect();
                let bins = per_flow.iter().map(Vec::len).min().unwrap_or(0);
                let indices: Vec<f64> = (0..bins)
                    .filter_map(|bin| {
                        let goodputs: Vec<f64> = per_flow.iter().map(|rates| rates[bin]).collect();
                        metrics::jain_index(&goodputs)
                    })
                    .collect();
                vec![statistic(&indices, claim.statistic.as_deref())]
            }
            None => {
                let goodputs: Option<Vec<f64>> = flows.iter().map(|f| goodput_kbps(f)).collect();
                vec![goodputs.and_then(|g| metrics::jain_index(&g))]
            }
        },
        "TCP-friendliness T2/T1" => {
            let goodputs: Option<Vec<f64>> = flows.iter().map(|f| goodput_kbps(f)).collect();
            vec![goodputs.and_then(|g| metrics::mean(&g))]
        }
        // A trace-driven bottleneck counts against its mean delivery rate.
        "link utilization" => vec![bottleneck_utilization(
            run,
            view.capacity_kbps.map(|kbps| kbps * 1000.0),
        )],
        _ => vec![None],
    }
}

/// Applies `aggregate` to per-flow values.
fn aggregate(values: Vec<Option<f64>>, claim: &Claim) -> Vec<Option<f64>> {
    let run_wide = matches!(
        claim.metric.as_str(),
        "Jain index" | "TCP-friendliness T2/T1" | "link utilization"
    ) || (matches!(claim.metric.as_str(), "receiving ratio" | "throughput")
        && claim.aggregate.as_deref() == Some("sum"));
    if run_wide {
        return values;
    }
    match claim.aggregate.as_deref() {
        Some("sum") => vec![values.iter().copied().sum::<Option<f64>>()],
        Some("mean") => vec![mean_of_all(values)],
        // The first flow's value less the second's (B − A: which flow got more of a share).
        Some("difference") => match values.as_slice() {
            [Some(first), Some(second)] => vec![Some(first - second)],
            _ => vec![None],
        },
        _ => values,
    }
}

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
    let measured = aggregate(measure(view, claim, &flows, claim.window), claim);
    let Some(base_window) = claim.baseline_window else {
        return measured;
    };
    let base = aggregate(measure(view, claim, &flows, Some(base_window)), claim);
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

/// The paper's number(s) with the relation, as the report writes them (`≈ 447 kb/s (±10 %)`).
pub(crate) fn paper_text(claim: &Claim) -> String {
    let unit = claim.unit.as_deref().unwrap_or("");
    let unit = if unit == "ratio" || unit == "index" || unit == "fraction" {
        String::new()
    } else {
        format!(" {unit}")
    };
    // Whole percents as such (± 10 %), derived ones to the digit that matters (± 1.5 %, ± 2.13 %).
    let tolerance = claim
        .tolerance
        .map(|t| {
            let percent = t * 100.0;
            let text = [0, 1, 2]
                .into_iter()
                .map(|digits| format!("{percent:.digits$}"))
                .find(|text| (text.parse::<f64>().unwrap_or(f64::NAN) - percent).abs() < 1e-9)
                .unwrap_or_else(|| format!("{percent:.2}"));
            format!(" (±{text} %)")
        })
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
                _ => "",
            };
            format!("{symbol}{value}{unit}{tolerance}")
        }
    }
}

/// The values a claim accepts: from `low` to `high`, each end included unless `strict`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Accepted {
    low: f64,
    high: f64,
    strict: bool,
}

impl Accepted {
    fn contains(&self, value: f64) -> bool {
        if self.strict {
            value > self.low && value < self.high
        } else {
            value >= self.low - 1e-12 && value <= self.high + 1e-12
        }
    }
}

/// What `relation` accepts, `None` for relations that are not criteria or lack their numbers.
fn accepted(claim: &Claim) -> Option<Accepted> {
    let tolerance = claim.tolerance.unwrap_or(0.0);
    let closed = |low: f64, high: f64| Accepted {
        low,
        high,
        strict: false,
    };
    let open = |low: f64, high: f64| Accepted {
        low,
        high,
        strict: true,
    };
    Some(match claim.relation.as_str() {
        "approx" => {
            let target = claim.value?;
            let slack = claim.tolerance.unwrap_or(0.1) * target.abs();
            closed(target - slack, target + slack)
        }
        "range" => closed(claim.min?, claim.max?),
        "at_least" => closed(claim.value? * (1.0 - tolerance), f64::INFINITY),
        "at_most" => closed(f64::NEG_INFINITY, claim.value? * (1.0 + tolerance)),
        "below" => open(f64::NEG_INFINITY, claim.value?),
        "above" => open(claim.value?, f64::INFINITY),
        _ => return None,
    })
}

/// The verdict on an interval [low, high] of our figure: holds when every value of it is
/// accepted, differs when none is, inconclusive otherwise. `None` when the relation is not a
/// criterion or its numbers are missing.
fn judge_interval(claim: &Claim, low: f64, high: f64) -> Option<Status> {
    let accepted = accepted(claim)?;
    let (inside_low, inside_high) = (accepted.contains(low), accepted.contains(high));
    Some(if inside_low && inside_high {
        Status::Holds
    } else if (high < accepted.low || (accepted.strict && high <= accepted.low))
        || (low > accepted.high || (accepted.strict && low >= accepted.high))
    {
        Status::Differs
    } else {
        Status::Inconclusive
    })
}

/// One value judged alone (an interval of zero width).
#[cfg(test)]
fn satisfies(claim: &Claim, value: f64) -> Option<bool> {
    judge_interval(claim, value, value).map(|status| status == Status::Holds)
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
    let Some(across) = claim.across.as_deref() else {
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
        "mean" => all.and_then(|values| metrics::mean(&values)),
        "min" => all.and_then(|values| values.into_iter().reduce(f64::min)),
        "max" => all.and_then(|values| values.into_iter().reduce(f64::max)),
        "share_below" => {
            let defined: Vec<f64> = flat().flatten().collect();
            let cut = claim.cut.unwrap_or(f64::NAN);
            (!defined.is_empty())
                .then(|| defined.iter().filter(|v| **v < cut).count() as f64 / defined.len() as f64)
        }
        "last_over_first" => {
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
        "steps" => {
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
        "spearman" => {
            let points = along(claim.along.as_deref().unwrap_or_default());
            let (xs, ys): (Vec<f64>, Vec<f64>) = points.into_iter().unzip();
            metrics::spearman(&xs, &ys)
        }
        _ => None,
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
        let measured: Vec<Option<f64>> = if claim.metric == SERIES_DIFFERENCE {
            // A paired metric: the run's series against its baseline's, not a ratio.
            let Some(base) = base else {
                return Err(format!("{SERIES_DIFFERENCE} needs a `baseline` run"));
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

/// The paired metric comparing two runs' series bin by bin.
pub const SERIES_DIFFERENCE: &str = "series difference";

/// The mean absolute difference of `flow`'s receiver rate per interval in `view` and in `base`
/// (intervals ending at the same time, within `window`), as a fraction of `view`'s bottleneck
/// capacity: 0 when the two series are identical bin by bin, 0.05 when they differ by 5 % of
/// the link on average. `None` without a capacity or a common interval.
fn series_difference(
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

/// How close an interval is to the edge of what the claim accepts (larger: further inside).
fn margin(claim: &Claim, interval: &metrics::MeanInterval) -> f64 {
    match accepted(claim) {
        Some(accepted) => (interval.low - accepted.low).min(accepted.high - interval.high),
        None => 0.0,
    }
}

fn interval_text(interval: &metrics::MeanInterval) -> String {
    if interval.n < 2 {
        format!(
            "{} (1 replication, no interval)",
            format_number(interval.mean)
        )
    } else {
        format!(
            "{} [{}, {}]",
            format_number(interval.mean),
            format_number(interval.low),
            format_number(interval.high)
        )
    }
}

/// The verdict on a claim from its samples over the replications: each item's mean and 95 %
/// interval over the replications in which it is defined, judged against the paper's
/// threshold; the claim differs if one item differs, is inconclusive if one straddles, holds if
/// all hold.
pub fn judge(claim: &Claim, samples: &[Sample]) -> Outcome {
    let outcome = |ours: String, status: Status, interval| Outcome {
        claim: claim.clone(),
        paper: paper_text(claim),
        ours,
        status,
        interval,
        calibrated: None,
    };
    let measured: Vec<&Vec<Option<f64>>> = samples.iter().flatten().collect();
    let calibration_target = |sample: &Sample| {
        sample
            .as_ref()
            .is_err_and(|reason| reason == CALIBRATION_TARGET)
    };
    if !samples.is_empty() && samples.iter().all(calibration_target) {
        return outcome("—".into(), Status::CalibrationTarget, None);
    }
    if measured.is_empty() {
        let reason = samples
            .iter()
            .find_map(|sample| sample.as_ref().err().cloned())
            .unwrap_or_else(|| "no replication ran".into());
        return outcome("—".into(), Status::NotMeasured(reason), None);
    }
    let items = measured
        .iter()
        .map(|values| values.len())
        .max()
        .unwrap_or(0);
    let mut intervals = Vec::new();
    for item in 0..items {
        let values: Vec<f64> = measured
            .iter()
            .filter_map(|values| values.get(item).copied().flatten())
            .collect();
        match metrics::confidence_interval_95(&values) {
            Some(interval) => intervals.push(interval),
            None => {
                return outcome(
                    "n/a".into(),
                    Status::NotMeasured(format!(
                        "{} is undefined in every replication (item {} of {items})",
                        claim.metric,
                        item + 1
                    )),
                    None,
                )
            }
        }
    }
    if intervals.is_empty() {
        return outcome(
            "n/a".into(),
            Status::NotMeasured("nothing to measure".into()),
            None,
        );
    }
    let statuses: Vec<Option<Status>> = intervals
        .iter()
        .map(|interval| judge_interval(claim, interval.low, interval.high))
        .collect();
    let rank = |status: &Option<Status>| match status {
        Some(Status::Differs) => 0,
        Some(Status::Inconclusive) => 1,
        _ => 2,
    };
    // The deciding item: the worst status, and within it the one closest to the threshold.
    let deciding = (0..intervals.len())
        .min_by(|&a, &b| {
            rank(&statuses[a])
                .cmp(&rank(&statuses[b]))
                .then(margin(claim, &intervals[a]).total_cmp(&margin(claim, &intervals[b])))
        })
        .unwrap_or(0);
    let interval = intervals[deciding];
    let ours = if intervals.len() == 1 {
        interval_text(&interval)
    } else {
        let low = intervals
            .iter()
            .map(|i| i.mean)
            .fold(f64::INFINITY, f64::min);
        let high = intervals
            .iter()
            .map(|i| i.mean)
            .fold(f64::NEG_INFINITY, f64::max);
        format!(
            "{} values, means {}–{}; deciding: {}",
            intervals.len(),
            format_number(low),
            format_number(high),
            interval_text(&interval)
        )
    };
    let status = match claim.relation.as_str() {
        "reference" => Status::Reference,
        "qualitative" => Status::Qualitative,
        relation => statuses[deciding].clone().unwrap_or_else(|| {
            Status::NotMeasured(format!(
                "relation {relation} cannot be checked with the given numbers"
            ))
        }),
    };
    outcome(ours, status, Some(interval))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(relation: &str, value: Option<f64>, tolerance: Option<f64>) -> Claim {
        Claim {
            text: "t".into(),
            quote: None,
            source: None,
            threshold: None,
            reading: None,
            explanation: None,
            cause: None,
            calibrates: None,
            metric: "goodput".into(),
            relation: relation.into(),
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

    #[test]
    fn relations_compare_as_documented() {
        // approx: within ± tolerance of the value (10 % when none is given).
        assert_eq!(
            satisfies(&claim("approx", Some(447.0), Some(0.15)), 390.0),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim("approx", Some(447.0), Some(0.15)), 370.0),
            Some(false)
        );
        assert_eq!(
            satisfies(&claim("approx", Some(1.0), None), 1.09),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim("approx", Some(1.0), None), 1.11),
            Some(false)
        );
        // at_least allows the tolerance below the value; below/above are strict.
        assert_eq!(
            satisfies(&claim("at_least", Some(800.0), Some(0.05)), 761.0),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim("at_least", Some(800.0), Some(0.05)), 759.0),
            Some(false)
        );
        assert_eq!(
            satisfies(&claim("below", Some(500.0), None), 500.0),
            Some(false)
        );
        assert_eq!(
            satisfies(&claim("above", Some(1.0), None), 1.01),
            Some(true)
        );
        assert_eq!(satisfies(&claim("range", None, None), 0.84), Some(true));
        assert_eq!(satisfies(&claim("range", None, None), 1.2), Some(false));
        assert_eq!(satisfies(&claim("qualitative", None, None), 1.0), None);
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
        assert_eq!(
            statistic(&[1.0, 2.0, 3.0, 4.0, 5.0], Some("p75")),
            Some(4.0)
        );
        assert_eq!(statistic(&[1.0, 2.0], Some("p101")), None);
        assert_eq!(parse_statistic("median"), Some(Some(0.5)));
        assert_eq!(parse_statistic("average"), None);
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
                    experiment.metrics.contains(&claim.metric),
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

    fn sample_of(values: &[f64]) -> Sample {
        Ok(values.iter().map(|v| Some(*v)).collect())
    }

    #[test]
    fn replications_give_holds_differs_or_inconclusive_from_the_interval() {
        let at_most = claim("at_most", Some(10.0), None);
        // Ten replications around 8 with a small spread: the interval is below 10.
        let samples: Vec<Sample> = (0..10)
            .map(|i| sample_of(&[7.5 + 0.1 * f64::from(i)]))
            .collect();
        let outcome = judge(&at_most, &samples);
        assert_eq!(outcome.status, Status::Holds);
        let interval = outcome.interval.unwrap();
        assert_eq!(interval.n, 10);
        assert!(interval.low < 7.95 && interval.high > 7.95 && interval.high < 10.0);
        // Around 10: the interval straddles the threshold.
        let samples: Vec<Sample> = (0..10)
            .map(|i| sample_of(&[9.0 + 0.2 * f64::from(i)]))
            .collect();
        assert_eq!(judge(&at_most, &samples).status, Status::Inconclusive);
        // Well above.
        let samples: Vec<Sample> = (0..10)
            .map(|i| sample_of(&[12.0 + 0.1 * f64::from(i)]))
            .collect();
        assert_eq!(judge(&at_most, &samples).status, Status::Differs);
        // Two items: one holds, one differs → the claim differs, and the reported figure is the
        // differing one.
        let samples: Vec<Sample> = (0..10)
            .map(|i| sample_of(&[8.0 + 0.01 * f64::from(i), 12.0 + 0.01 * f64::from(i)]))
            .collect();
        let outcome = judge(&at_most, &samples);
        assert_eq!(outcome.status, Status::Differs);
        assert!(outcome.interval.unwrap().mean > 12.0);
        // A strict relation: an interval touching the bound is not wholly below it.
        let below = claim("below", Some(1.0), None);
        assert_eq!(judge_interval(&below, 0.5, 1.0), Some(Status::Inconclusive));
        assert_eq!(judge_interval(&below, 1.0, 1.5), Some(Status::Differs));
        assert_eq!(judge_interval(&below, 0.5, 0.99), Some(Status::Holds));
        // Nothing measured in any replication.
        let failed: Vec<Sample> = vec![Err("no run".into()); 3];
        assert!(matches!(
            judge(&at_most, &failed).status,
            Status::NotMeasured(_)
        ));
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
        let mut c = claim("below", Some(1.0), None);
        c.across = Some("share_below".into());
        c.cut = Some(0.85);
        assert_eq!(reduce_across(&c, &per_run), vec![Some(0.5)]);
        c.across = Some("last_over_first".into());
        c.along = Some("protocol".into());
        // β = 3 over β = 1 ("tfrc" has no number and is left out).
        let ratio = reduce_across(&c, &per_run)[0].unwrap();
        assert!((ratio - 0.5 / 0.9).abs() < 1e-12);
        c.across = Some("spearman".into());
        assert_eq!(reduce_across(&c, &per_run), vec![Some(-1.0)]);
        c.across = Some("max".into());
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
        let mut c = claim("at_most", Some(1.0), Some(0.05));
        c.across = Some("steps".into());
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
        let mut c = claim("above", Some(-391.5), None);
        c.aggregate = Some("difference".into());
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
    fn a_non_hold_carries_its_cause_and_a_calibration_target_is_not_judged() {
        let mut c = claim("at_most", Some(10.0), None);
        let differs: Vec<Sample> = (0..5).map(|i| sample_of(&[12.0 + f64::from(i)])).collect();
        assert_eq!(judge(&c, &differs).cause(), UNEXPLAINED);
        c.cause = Some("noise".into());
        assert_eq!(judge(&c, &differs).cause(), "noise");
        let holds: Vec<Sample> = (0..5).map(|i| sample_of(&[1.0 + f64::from(i)])).collect();
        assert_eq!(judge(&c, &holds).cause(), "");
        let target: Vec<Sample> = vec![Err(CALIBRATION_TARGET.to_string()); 3];
        assert_eq!(judge(&c, &target).status, Status::CalibrationTarget);
    }

    #[test]
    fn label_numbers_are_the_last_number() {
        assert_eq!(label_number("enh-b2"), Some(2.0));
        assert_eq!(label_number("single-p0.01"), Some(0.01));
        assert_eq!(label_number("500ms-4"), Some(4.0));
        assert_eq!(label_number("64"), Some(64.0));
        assert_eq!(label_number("tfrc"), None);
    }

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
        let mut bad_metric = text("relation = \"approx\"\nvalue = 1.0");
        bad_metric = bad_metric.replace("metric = \"goodput\"", "metric = \"speed\"");
        let file: ClaimsFile = toml::from_str(&bad_metric).unwrap();
        assert!(validate(&file)
            .unwrap_err()
            .to_string()
            .contains("unknown metric"));
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
            ("side = \"middle\"", "side must be"),
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
