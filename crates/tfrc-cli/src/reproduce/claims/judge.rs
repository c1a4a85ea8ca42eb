//! Judging a claim: our figure's interval over the replications against what the paper's
//! relation accepts, and the texts the report prints for both.

use tfrc_analysis::metrics;

use super::schema::{Claim, UNEXPLAINED};
use super::vocabulary::Relation;
use super::Sample;

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
    let symbol = match claim.relation {
        Relation::Range => {
            return format!(
                "{}–{}{unit}",
                claim.min.map(format_number).unwrap_or_default(),
                claim.max.map(format_number).unwrap_or_default()
            )
        }
        Relation::Qualitative => return "(qualitative)".into(),
        Relation::Approx => "≈ ",
        Relation::AtLeast => "≥ ",
        Relation::AtMost => "≤ ",
        Relation::Below => "< ",
        Relation::Above => "> ",
        Relation::Reference => "",
    };
    let value = claim.value.map(format_number).unwrap_or_default();
    format!("{symbol}{value}{unit}{tolerance}")
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
    Some(match claim.relation {
        Relation::Approx => {
            let target = claim.value?;
            let slack = claim.tolerance.unwrap_or(0.1) * target.abs();
            closed(target - slack, target + slack)
        }
        Relation::Range => closed(claim.min?, claim.max?),
        Relation::AtLeast => closed(claim.value? * (1.0 - tolerance), f64::INFINITY),
        Relation::AtMost => closed(f64::NEG_INFINITY, claim.value? * (1.0 + tolerance)),
        Relation::Below => open(f64::NEG_INFINITY, claim.value?),
        Relation::Above => open(claim.value?, f64::INFINITY),
        Relation::Reference | Relation::Qualitative => return None,
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

/// How close an interval is to the edge of what the claim accepts (larger: further inside).
fn margin(claim: &Claim, interval: &metrics::MeanInterval) -> f64 {
    match accepted(claim) {
        Some(accepted) => (interval.low - accepted.low).min(accepted.high - interval.high),
        None => 0.0,
    }
}

/// An interval as the report writes ours: `mean [low, high]`, or the one value of a single
/// replication.
pub(crate) fn interval_text(interval: &metrics::MeanInterval) -> String {
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
    let intervals = match item_intervals(claim, samples) {
        Ok(intervals) => intervals,
        Err((ours, status)) => return outcome(ours.into(), status, None),
    };
    let statuses: Vec<Option<Status>> = intervals
        .iter()
        .map(|interval| judge_interval(claim, interval.low, interval.high))
        .collect();
    let deciding = deciding_item(claim, &intervals, &statuses);
    let interval = intervals[deciding];
    let status = match claim.relation {
        Relation::Reference => Status::Reference,
        Relation::Qualitative => Status::Qualitative,
        relation => statuses[deciding].clone().unwrap_or_else(|| {
            Status::NotMeasured(format!(
                "relation {relation} cannot be checked with the given numbers"
            ))
        }),
    };
    outcome(ours_text(&intervals, &interval), status, Some(interval))
}

/// Each item's mean and 95 % interval over the replications in which it is defined; or, when
/// there is nothing to judge, what the report prints for ours and the status (a calibration
/// target, nothing measured, an item undefined in every replication).
fn item_intervals(
    claim: &Claim,
    samples: &[Sample],
) -> Result<Vec<metrics::MeanInterval>, (&'static str, Status)> {
    let measured: Vec<&Vec<Option<f64>>> = samples.iter().flatten().collect();
    let calibration_target = |sample: &Sample| {
        sample
            .as_ref()
            .is_err_and(|reason| reason == CALIBRATION_TARGET)
    };
    if !samples.is_empty() && samples.iter().all(calibration_target) {
        return Err(("—", Status::CalibrationTarget));
    }
    if measured.is_empty() {
        let reason = samples
            .iter()
            .find_map(|sample| sample.as_ref().err().cloned())
            .unwrap_or_else(|| "no replication ran".into());
        return Err(("—", Status::NotMeasured(reason)));
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
        let Some(interval) = metrics::confidence_interval_95(&values) else {
            return Err((
                "n/a",
                Status::NotMeasured(format!(
                    "{} is undefined in every replication (item {} of {items})",
                    claim.metric,
                    item + 1
                )),
            ));
        };
        intervals.push(interval);
    }
    if intervals.is_empty() {
        return Err(("n/a", Status::NotMeasured("nothing to measure".into())));
    }
    Ok(intervals)
}

/// The item that decides the verdict: the worst status (differs, then inconclusive), and
/// within it the one closest to the threshold.
fn deciding_item(
    claim: &Claim,
    intervals: &[metrics::MeanInterval],
    statuses: &[Option<Status>],
) -> usize {
    let rank = |status: &Option<Status>| match status {
        Some(Status::Differs) => 0,
        Some(Status::Inconclusive) => 1,
        _ => 2,
    };
    (0..intervals.len())
        .min_by(|&a, &b| {
            rank(&statuses[a])
                .cmp(&rank(&statuses[b]))
                .then(margin(claim, &intervals[a]).total_cmp(&margin(claim, &intervals[b])))
        })
        .unwrap_or(0)
}

/// Our figure as the report writes it: the deciding interval, after the range of the items'
/// means when there are several.
fn ours_text(intervals: &[metrics::MeanInterval], deciding: &metrics::MeanInterval) -> String {
    if intervals.len() == 1 {
        return interval_text(deciding);
    }
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
        interval_text(deciding)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::claims::tests::claim;

    #[test]
    fn relations_compare_as_documented() {
        // approx: within ± tolerance of the value (10 % when none is given).
        assert_eq!(
            satisfies(&claim(Relation::Approx, Some(447.0), Some(0.15)), 390.0),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim(Relation::Approx, Some(447.0), Some(0.15)), 370.0),
            Some(false)
        );
        assert_eq!(
            satisfies(&claim(Relation::Approx, Some(1.0), None), 1.09),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim(Relation::Approx, Some(1.0), None), 1.11),
            Some(false)
        );
        // at_least allows the tolerance below the value; below/above are strict.
        assert_eq!(
            satisfies(&claim(Relation::AtLeast, Some(800.0), Some(0.05)), 761.0),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim(Relation::AtLeast, Some(800.0), Some(0.05)), 759.0),
            Some(false)
        );
        assert_eq!(
            satisfies(&claim(Relation::Below, Some(500.0), None), 500.0),
            Some(false)
        );
        assert_eq!(
            satisfies(&claim(Relation::Above, Some(1.0), None), 1.01),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim(Relation::Range, None, None), 0.84),
            Some(true)
        );
        assert_eq!(
            satisfies(&claim(Relation::Range, None, None), 1.2),
            Some(false)
        );
        assert_eq!(
            satisfies(&claim(Relation::Qualitative, None, None), 1.0),
            None
        );
    }

    #[test]
    fn paper_numbers_are_written_with_their_relation() {
        assert_eq!(
            paper_text(&claim(Relation::Approx, Some(447.0), Some(0.15))),
            "≈ 447 kb/s (±15 %)"
        );
        assert_eq!(
            paper_text(&claim(Relation::Range, None, None)),
            "0.840–1.14 kb/s"
        );
        assert_eq!(
            paper_text(&claim(Relation::Qualitative, None, None)),
            "(qualitative)"
        );
    }

    pub(super) fn sample_of(values: &[f64]) -> Sample {
        Ok(values.iter().map(|v| Some(*v)).collect())
    }

    #[test]
    fn replications_give_holds_differs_or_inconclusive_from_the_interval() {
        let at_most = claim(Relation::AtMost, Some(10.0), None);
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
        let below = claim(Relation::Below, Some(1.0), None);
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
    fn a_non_hold_carries_its_cause_and_a_calibration_target_is_not_judged() {
        let mut c = claim(Relation::AtMost, Some(10.0), None);
        let differs: Vec<Sample> = (0..5).map(|i| sample_of(&[12.0 + f64::from(i)])).collect();
        assert_eq!(judge(&c, &differs).cause(), UNEXPLAINED);
        c.cause = Some("noise".into());
        assert_eq!(judge(&c, &differs).cause(), "noise");
        let holds: Vec<Sample> = (0..5).map(|i| sample_of(&[1.0 + f64::from(i)])).collect();
        assert_eq!(judge(&c, &holds).cause(), "");
        let target: Vec<Sample> = vec![Err(CALIBRATION_TARGET.to_string()); 3];
        assert_eq!(judge(&c, &target).status, Status::CalibrationTarget);
    }
}
