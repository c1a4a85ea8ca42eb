//! The metrics the papers use (`EXPERIMENTS.md`, "Metrics the papers use"), as pure functions on
//! slices. `docs/metrics.md` lists every definition as implemented here.
//!
//! Conventions:
//! - A metric that is undefined for its input (empty input, a zero denominator, a non-finite
//!   value) is `None`, never NaN or infinity.
//! - Parameters that can only be wrong through a caller's mistake (a bin width ≤ 0, series of
//!   different lengths, times that go backwards) are a [`MetricError`] naming the parameter.
//! - Time series are sampled per interval: `times[k]` is the **end** of interval `k` (as in
//!   `flows.csv`), in seconds, strictly increasing; `rates[k]` is the value over that interval.
//! - Standard deviations are population standard deviations (divide by n): the series is the
//!   whole run, not a sample of it.

use std::fmt;

/// A parameter of a metric that cannot be right (as opposed to an input for which the metric
/// is undefined, which gives `None`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetricError {
    /// Two slices that must be parallel have different lengths.
    #[error("`{name}` has {found} values, expected {expected} (one per time)")]
    LengthMismatch {
        /// The parameter.
        name: String,
        /// Its length.
        found: usize,
        /// The length of `times`.
        expected: usize,
    },
    /// A parameter is out of its range.
    #[error("`{name}` = {value}: {reason}")]
    InvalidParameter {
        /// The parameter.
        name: &'static str,
        /// Its value.
        value: f64,
        /// What it must be.
        reason: &'static str,
    },
    /// `times` is not strictly increasing or not finite.
    #[error("`times` must be finite and strictly increasing (index {index}: {value})")]
    TimesNotIncreasing {
        /// First offending index.
        index: usize,
        /// Its value.
        value: f64,
    },
}

pub use tfrc_output::stats::{
    coefficient_of_variation, jain_index, mean, quantile, standard_deviation,
};

fn all_finite(values: &[f64]) -> bool {
    values.iter().all(|v| v.is_finite())
}

/// Two-sided 97.5 % quantile of Student's t distribution with `df` degrees of freedom (the
/// factor of a 95 % confidence interval). Exact table values for df ≤ 30; above, the
/// Cornish-Fisher expansion z + (z³ + z)/(4·df) + (5z⁵ + 16z³ + 3z)/(96·df²), within 1e-3 of the
/// exact value. `None` for df = 0.
pub fn student_t_975(df: usize) -> Option<f64> {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => None,
        1..=30 => Some(TABLE[df - 1]),
        _ => {
            let z: f64 = 1.959_964;
            let n = df as f64;
            Some(
                z + (z.powi(3) + z) / (4.0 * n)
                    + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n),
            )
        }
    }
}

/// A mean with its 95 % confidence interval over independent replications.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanInterval {
    /// Number of values.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

/// Mean and Student-t 95 % confidence interval `mean ± t(0.975, n−1)·s/√n` (s the sample
/// standard deviation). One value gives a zero-width interval at the value (no spread can be
/// estimated; callers say so). `None` if empty or non-finite.
pub fn confidence_interval_95(values: &[f64]) -> Option<MeanInterval> {
    let m = mean(values)?;
    let n = values.len();
    let half = match student_t_975(n - 1) {
        Some(t) => {
            let variance = values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1) as f64;
            t * (variance / n as f64).sqrt()
        }
        None => 0.0,
    };
    Some(MeanInterval {
        n,
        mean: m,
        low: m - half,
        high: m + half,
    })
}

/// The difference of two ensemble means, `mean(b) − mean(a)`, with the half-width of its 95 %
/// confidence interval by Welch's t (unequal variances, Welch–Satterthwaite degrees of
/// freedom, rounded down). With fewer than two values on a side, or no spread on either,
/// the half-width is 0. `None` if either side is empty or non-finite.
pub fn welch_difference_95(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let (mean_a, mean_b) = (mean(a)?, mean(b)?);
    let difference = mean_b - mean_a;
    if a.len() < 2 || b.len() < 2 {
        return Some((difference, 0.0));
    }
    let variance_of_mean = |values: &[f64], m: f64| {
        values.iter().map(|v| (v - m) * (v - m)).sum::<f64>()
            / (values.len() - 1) as f64
            / values.len() as f64
    };
    let (va, vb) = (variance_of_mean(a, mean_a), variance_of_mean(b, mean_b));
    let spread = va + vb;
    if spread == 0.0 {
        return Some((difference, 0.0));
    }
    let df = spread * spread / (va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64);
    let t = student_t_975((df.floor() as usize).max(1))?;
    Some((difference, t * spread.sqrt()))
}

/// Spearman's rank correlation of `xs` and `ys` (Pearson's correlation of their ranks, ties
/// sharing the mean rank), in [−1, 1]. `None` with fewer than two pairs, different lengths,
/// non-finite values, or when either side is constant.
pub fn spearman(xs: &[f64], ys: &[f64]) -> Option<f64> {
    if xs.len() != ys.len() || xs.len() < 2 || !all_finite(xs) || !all_finite(ys) {
        return None;
    }
    fn ranks(values: &[f64]) -> Vec<f64> {
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
        let mut ranks = vec![0.0; values.len()];
        let mut start = 0;
        while start < order.len() {
            let mut end = start;
            while end + 1 < order.len() && values[order[end + 1]] == values[order[start]] {
                end += 1;
            }
            let shared = (start + end) as f64 / 2.0 + 1.0;
            for &index in &order[start..=end] {
                ranks[index] = shared;
            }
            start = end + 1;
        }
        ranks
    }
    let (rx, ry) = (ranks(xs), ranks(ys));
    let (mx, my) = (mean(&rx)?, mean(&ry)?);
    let covariance: f64 = rx.iter().zip(&ry).map(|(a, b)| (a - mx) * (b - my)).sum();
    let vx: f64 = rx.iter().map(|a| (a - mx) * (a - mx)).sum();
    let vy: f64 = ry.iter().map(|b| (b - my) * (b - my)).sum();
    if vx == 0.0 || vy == 0.0 {
        return None;
    }
    Some(covariance / (vx * vy).sqrt())
}

/// Burstiness index of paper 004: `std / mean` of the received rate series (one value per
/// output interval over the flow's active time). The same formula as
/// [`coefficient_of_variation`], kept as its own name because the papers name it so.
pub fn burstiness_index(received_rates: &[f64]) -> Option<f64> {
    coefficient_of_variation(received_rates)
}

fn check_positive(name: &'static str, value: f64) -> Result<(), MetricError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(MetricError::InvalidParameter {
            name,
            value,
            reason: "must be a finite number > 0",
        })
    }
}

/// Sums event weights into bins of `bin_s` seconds: bin `k` covers
/// `[start_s + k·bin_s, start_s + (k+1)·bin_s)`, and there are `ceil((end_s − start_s) / bin_s)`
/// bins (the last one may be partial). Events outside `[start_s, end_s)` are ignored.
///
/// With `(send time, 1)` per packet this gives the packets sent per 0.1 s bin of paper 003; with
/// `(time, bytes)` it gives bytes per bin for [`throughput_kbps`].
pub fn bin_sums(
    events: &[(f64, u64)],
    start_s: f64,
    end_s: f64,
    bin_s: f64,
) -> Result<Vec<u64>, MetricError> {
    check_positive("bin_s", bin_s)?;
    if !start_s.is_finite() {
        return Err(MetricError::InvalidParameter {
            name: "start_s",
            value: start_s,
            reason: "must be finite",
        });
    }
    if !(end_s.is_finite() && end_s >= start_s) {
        return Err(MetricError::InvalidParameter {
            name: "end_s",
            value: end_s,
            reason: "must be finite and ≥ start_s",
        });
    }
    // Round away float noise such as 0.3 / 0.1 = 2.9999999999999996.
    let count = ((end_s - start_s) / bin_s - 1e-9).ceil().max(0.0) as usize;
    let mut bins = vec![0u64; count];
    if count == 0 {
        return Ok(bins);
    }
    for &(time, weight) in events {
        if !(time >= start_s && time < end_s) {
            continue;
        }
        let index = (((time - start_s) / bin_s + 1e-9).floor() as usize).min(count - 1);
        bins[index] += weight;
    }
    Ok(bins)
}

/// Throughput per bin in kb/s: `bytes · 8 / bin_s / 1000` (1 kb = 1000 bits), as the papers'
/// sender and receiver throughput plots (1 s bins).
pub fn throughput_kbps(bytes_per_bin: &[u64], bin_s: f64) -> Result<Vec<f64>, MetricError> {
    check_positive("bin_s", bin_s)?;
    Ok(bytes_per_bin
        .iter()
        .map(|&b| b as f64 * 8.0 / bin_s / 1000.0)
        .collect())
}

/// Goodput in b/s: application bytes delivered over the run / its duration. `None` if the
/// duration is not > 0.
pub fn goodput_bps(delivered_bytes: u64, duration_s: f64) -> Option<f64> {
    if !(duration_s.is_finite() && duration_s > 0.0) {
        return None;
    }
    Some(delivered_bytes as f64 * 8.0 / duration_s)
}

/// Running mean: element `k` is the mean of `values[..=k]`. The per-flow loss event rate p of
/// papers 002 (Table I) and 003 is the last element over the receiver's reported p, sampled at
/// a fixed interval (so it is the time average). A non-finite value makes it and every later
/// element `None`.
pub fn cumulative_mean(values: &[f64]) -> Vec<Option<f64>> {
    let mut sum = 0.0;
    let mut poisoned = false;
    values
        .iter()
        .enumerate()
        .map(|(index, &v)| {
            poisoned |= !v.is_finite();
            sum += v;
            (!poisoned).then(|| sum / (index + 1) as f64)
        })
        .collect()
}

/// `p_N / p_1` of paper 002's Table I: the loss event rate with N feedbacks per RTT over the
/// one with 1. `None` if `p_1` is 0 or either is not finite.
pub fn loss_event_rate_ratio(p_n: f64, p_1: f64) -> Option<f64> {
    if !(p_n.is_finite() && p_1.is_finite()) || p_1 == 0.0 {
        return None;
    }
    Some(p_n / p_1)
}

/// Receiving ratio of paper 003: packets received / packets sent. `None` if nothing was sent.
pub fn receiving_ratio(received_packets: u64, sent_packets: u64) -> Option<f64> {
    (sent_packets > 0).then(|| received_packets as f64 / sent_packets as f64)
}

/// TCP-friendliness T2/T1 of paper 003. `t1`: the per-flow throughputs of the n TCP flows of
/// the all-TCP run; `t2`: the per-flow throughputs of the n/2 TCP flows left when half of them
/// are replaced by the flows under test. T1 and T2 are their means. Below 1: the flows under
/// test take more than the TCP flows they replaced. `None` if either is empty or T1 is 0.
pub fn tcp_friendliness_ratio(t1: &[f64], t2: &[f64]) -> Option<f64> {
    let t1 = mean(t1)?;
    let t2 = mean(t2)?;
    (t1 != 0.0).then(|| t2 / t1)
}

/// Link utilization: bytes through the bottleneck · 8 / (capacity · time). `None` if the
/// capacity or the time is not > 0.
pub fn link_utilization(bytes: u64, capacity_bps: f64, duration_s: f64) -> Option<f64> {
    if !(capacity_bps.is_finite() && capacity_bps > 0.0 && duration_s.is_finite())
        || duration_s <= 0.0
    {
        return None;
    }
    Some(bytes as f64 * 8.0 / (capacity_bps * duration_s))
}

/// Values of a `(time, value)` series whose interval ends in `(start_s, stop_s]`, i.e. the
/// intervals during a flow's active time (to compute a burstiness index or a mean rate over
/// that time only).
pub fn values_between(series: &[(f64, f64)], start_s: f64, stop_s: f64) -> Vec<f64> {
    series
        .iter()
        .filter(|(t, _)| *t > start_s && *t <= stop_s)
        .map(|&(_, v)| v)
        .collect()
}

/// Trailing moving average: element `k` is the mean of `values[k + 1 − window ..= k]` (fewer
/// at the start). `window` 0 or 1 returns the values unchanged. Used to judge convergence on
/// rates averaged over several intervals rather than on single 1 s bins, which oscillate by
/// more than ±10 % for TFRC and TCP alike.
pub fn trailing_mean(values: &[f64], window: usize) -> Vec<f64> {
    let window = window.max(1);
    let mut sum = 0.0;
    values
        .iter()
        .enumerate()
        .map(|(index, &v)| {
            sum += v;
            if index >= window {
                sum -= values[index - window];
            }
            sum / (index + 1).min(window) as f64
        })
        .collect()
}

/// How long a condition must keep holding for the time at which it starts to count (for
/// [`convergence_time`] and [`recovery_time`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Hold {
    /// In every later interval up to the end of the evaluation window (for convergence: the next
    /// arrival or departure, or the end of the series; for recovery: the end of the series).
    UntilEnd,
    /// In every interval whose end lies within `seconds` after the first one's end; the window
    /// must reach that far, otherwise the start is not confirmed.
    For {
        /// Length of the hold window (s).
        seconds: f64,
    },
}

impl fmt::Display for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hold::UntilEnd => f.write_str("until the end of the window"),
            Hold::For { seconds } => write!(f, "for {seconds} s"),
        }
    }
}

/// The rate every active flow should get, for [`convergence_time`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FairShare {
    /// `capacity / n_active`, the capacity in the same unit as the rates.
    Capacity(f64),
    /// The mean of the active flows' rates in the interval (an equal split of what was
    /// actually delivered; robust to a link not quite fully used).
    MeanOfActive,
}

/// One flow's rate series for [`convergence_time`]; `rates` is parallel to `times`.
#[derive(Debug, Clone, Copy)]
pub struct FlowRates<'a> {
    /// When the flow starts (s).
    pub start_s: f64,
    /// When the flow stops (s); `f64::INFINITY` if it runs to the end.
    pub stop_s: f64,
    /// Its rate in each interval.
    pub rates: &'a [f64],
}

impl FlowRates<'_> {
    /// Active in the interval ending at `t`: `start_s < t ≤ stop_s`.
    fn active_at(&self, t: f64) -> bool {
        self.start_s < t && t <= self.stop_s
    }
}

/// Options of [`convergence_time`]. Default: rates averaged over 10 intervals, within ±10 % of
/// the mean of the active flows, for 30 s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConvergenceOptions {
    /// Allowed relative deviation from the fair share (0.10 for ±10 %).
    pub tolerance: f64,
    /// What the fair share is.
    pub fair_share: FairShare,
    /// How long all flows must stay within the band.
    pub hold: Hold,
    /// Judge each flow's [`trailing_mean`] over this many intervals instead of its raw rate
    /// (1: raw rates).
    pub smoothing_intervals: usize,
}

impl Default for ConvergenceOptions {
    fn default() -> Self {
        ConvergenceOptions {
            tolerance: 0.10,
            fair_share: FairShare::MeanOfActive,
            hold: Hold::For { seconds: 30.0 },
            smoothing_intervals: 10,
        }
    }
}

fn check_times(times: &[f64]) -> Result<(), MetricError> {
    for (index, &value) in times.iter().enumerate() {
        if !value.is_finite() || (index > 0 && value <= times[index - 1]) {
            return Err(MetricError::TimesNotIncreasing { index, value });
        }
    }
    Ok(())
}

fn check_length(name: String, values: &[f64], times: &[f64]) -> Result<(), MetricError> {
    if values.len() != times.len() {
        return Err(MetricError::LengthMismatch {
            name,
            found: values.len(),
            expected: times.len(),
        });
    }
    Ok(())
}

/// First index `k` of `candidates` (indices into `times`, increasing) such that `ok(k)` holds
/// for `k` and keeps holding per `hold` up to the last candidate.
fn first_holding(
    times: &[f64],
    candidates: &[usize],
    hold: Hold,
    ok: impl Fn(usize) -> bool,
) -> Option<usize> {
    let flags: Vec<bool> = candidates.iter().map(|&k| ok(k)).collect();
    let last_time = times[*candidates.last()?];
    match hold {
        Hold::UntilEnd => {
            // The start of the final run of `true`s.
            let mut start = None;
            for (position, &flag) in flags.iter().enumerate() {
                match (flag, start) {
                    (true, None) => start = Some(position),
                    (false, _) => start = None,
                    _ => {}
                }
            }
            start.map(|position| candidates[position])
        }
        Hold::For { seconds } => {
            const EPSILON: f64 = 1e-9;
            (0..candidates.len()).find_map(|position| {
                let until = times[candidates[position]] + seconds;
                let holds = last_time + EPSILON >= until
                    && candidates[position..]
                        .iter()
                        .zip(&flags[position..])
                        .take_while(|(&k, _)| times[k] <= until + EPSILON)
                        .all(|(_, &flag)| flag);
                holds.then_some(candidates[position])
            })
        }
    }
}

/// Convergence time after a flow's arrival (definition ours; paper 002 reads it off plots).
///
/// - The **window** is the intervals whose end is in `(arrival_s, next_change]`, where
///   `next_change` is the first start or stop of any flow after `arrival_s` (the set of
///   active flows is constant in it), or the last time of the series.
/// - A flow is **active** in the interval ending at `t` if `start_s < t ≤ stop_s`.
/// - Each flow's rate `r` in an interval is its [`trailing_mean`] over `smoothing_intervals`
///   intervals (its raw rate for 1). A flow that just arrived thus counts its zeros before the
///   arrival, which keeps it out of band for the first intervals.
/// - An interval is **in band** if at least one flow is active and every active flow's rate `r`
///   satisfies `|r − share| ≤ tolerance · share`, with `share` from [`FairShare`] computed on
///   the same rates.
/// - The flows **stay** in band per [`Hold`]: for `UntilEnd`, every later interval of the
///   window is in band; for `For { seconds }`, every interval ending within `seconds` after it.
///
/// Returns `t_k − arrival_s`, `t_k` being the end of the first in-band interval from which the
/// flows stay in band; `None` if they never do in the window (or the window is empty). The
/// resolution is one interval: 0 < result means converged by the end of that interval.
pub fn convergence_time(
    times: &[f64],
    flows: &[FlowRates<'_>],
    arrival_s: f64,
    options: ConvergenceOptions,
) -> Result<Option<f64>, MetricError> {
    check_times(times)?;
    for (index, flow) in flows.iter().enumerate() {
        check_length(format!("flows[{index}].rates"), flow.rates, times)?;
    }
    check_positive("tolerance", options.tolerance)?;
    if let FairShare::Capacity(capacity) = options.fair_share {
        check_positive("fair_share capacity", capacity)?;
    }
    if let Hold::For { seconds } = options.hold {
        check_positive("hold seconds", seconds)?;
    }
    let smoothed: Vec<Vec<f64>> = flows
        .iter()
        .map(|f| trailing_mean(f.rates, options.smoothing_intervals))
        .collect();
    if !arrival_s.is_finite() {
        return Err(MetricError::InvalidParameter {
            name: "arrival_s",
            value: arrival_s,
            reason: "must be finite",
        });
    }
    let next_change = next_change_after(flows, arrival_s);
    let candidates: Vec<usize> = (0..times.len())
        .filter(|&k| times[k] > arrival_s && times[k] <= next_change)
        .collect();
    let in_band = |k: usize| {
        let t = times[k];
        let active: Vec<f64> = flows
            .iter()
            .zip(&smoothed)
            .filter(|(f, _)| f.active_at(t))
            .map(|(_, rates)| rates[k])
            .collect();
        if active.is_empty() || !all_finite(&active) {
            return false;
        }
        let share = match options.fair_share {
            FairShare::Capacity(capacity) => capacity / active.len() as f64,
            FairShare::MeanOfActive => active.iter().sum::<f64>() / active.len() as f64,
        };
        share > 0.0
            && active
                .iter()
                .all(|r| (r - share).abs() <= options.tolerance * share * (1.0 + 1e-12))
    };
    Ok(first_holding(times, &candidates, options.hold, in_band).map(|k| times[k] - arrival_s))
}

/// The end of the window in which [`convergence_time`] looks for convergence after `arrival_s`:
/// the first start or stop of any flow after it (infinite when there is none).
pub fn next_change_after(flows: &[FlowRates<'_>], arrival_s: f64) -> f64 {
    flows
        .iter()
        .flat_map(|f| [f.start_s, f.stop_s])
        .filter(|&t| t > arrival_s)
        .fold(f64::INFINITY, f64::min)
}

/// Options of [`recovery_time`]. Default: the earlier rate is the mean over the 5 s before the
/// disturbance; recovered at ≥ 90 % of it, holding for 10 s.
///
/// 5 s, not longer: the earlier rate is the rate the flow had when the disturbance came, and a
/// longer look-back takes in its start-up (in e000-loss the flow reaches 1 Mb/s only at 27–28 s,
/// so the mean over 10–30 s was 778–823 kb/s and "recovered" meant 90 % of a ramp average).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecoveryOptions {
    /// The "earlier rate" is the mean rate of the intervals ending in
    /// `(disturbance_start − reference_s, disturbance_start]`.
    pub reference_s: f64,
    /// Fraction of the earlier rate that counts as recovered (0.9).
    pub threshold: f64,
    /// How long the rate must stay at or above it.
    pub hold: Hold,
    /// Judge the [`trailing_mean`] of the rate over this many intervals after the disturbance
    /// (1: the raw rate). The earlier rate is always the plain mean.
    pub smoothing_intervals: usize,
}

impl Default for RecoveryOptions {
    fn default() -> Self {
        RecoveryOptions {
            reference_s: 5.0,
            threshold: 0.9,
            hold: Hold::For { seconds: 10.0 },
            smoothing_intervals: 1,
        }
    }
}

/// Recovery time after a disturbance (a loss period, a UDP burst; definition ours).
///
/// - The **earlier rate** is the mean of the rates of the intervals ending in
///   `(disturbance_start_s − reference_s, disturbance_start_s]`.
/// - The flow is **back** in the interval ending at `t > disturbance_end_s` if its rate (its
///   [`trailing_mean`] over `smoothing_intervals`) is
///   `≥ threshold · earlier rate`, and it **stays** back per [`Hold`] (`UntilEnd`: to the end of
///   the series; `For { seconds }`: every interval ending within `seconds` after `t`, and the
///   series must reach that far).
///
/// Returns `t − disturbance_end_s` for the first such `t`. `None` if the earlier rate is
/// undefined or 0 (no interval before the disturbance, or nothing sent), or the flow never
/// comes back for long enough.
pub fn recovery_time(
    times: &[f64],
    rates: &[f64],
    disturbance_start_s: f64,
    disturbance_end_s: f64,
    options: RecoveryOptions,
) -> Result<Option<f64>, MetricError> {
    check_times(times)?;
    check_length("rates".to_string(), rates, times)?;
    check_positive("reference_s", options.reference_s)?;
    check_positive("threshold", options.threshold)?;
    if let Hold::For { seconds } = options.hold {
        check_positive("hold seconds", seconds)?;
    }
    if !(disturbance_start_s.is_finite()
        && disturbance_end_s.is_finite()
        && disturbance_end_s >= disturbance_start_s)
    {
        return Err(MetricError::InvalidParameter {
            name: "disturbance_end_s",
            value: disturbance_end_s,
            reason: "start and end must be finite, end ≥ start",
        });
    }
    let before: Vec<f64> = times
        .iter()
        .zip(rates)
        .filter(|(&t, _)| t > disturbance_start_s - options.reference_s && t <= disturbance_start_s)
        .map(|(_, &r)| r)
        .collect();
    let Some(earlier) = mean(&before).filter(|&m| m > 0.0) else {
        return Ok(None);
    };
    let level = options.threshold * earlier;
    let candidates: Vec<usize> = (0..times.len())
        .filter(|&k| times[k] > disturbance_end_s)
        .collect();
    let smoothed = trailing_mean(rates, options.smoothing_intervals);
    let back = |k: usize| smoothed[k].is_finite() && smoothed[k] >= level;
    Ok(first_holding(times, &candidates, options.hold, back).map(|k| times[k] - disturbance_end_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let values = [3.0, 1.0, 4.0, 1.0, 5.0];
        assert_eq!(quantile(&values, 0.5), Some(3.0));
        assert_eq!(quantile(&values, 0.0), Some(1.0));
        assert_eq!(quantile(&values, 1.0), Some(5.0));
        // numpy.percentile([1, 1, 3, 4, 5], 90) = 4.6
        assert!((quantile(&values, 0.9).unwrap() - 4.6).abs() < 1e-12);
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&values, 1.5), None);
    }

    #[test]
    fn welch_intervals_of_differences() {
        // Equal sizes and variances: df = 2n − 2 = 6, s²/n = 1/4 + 1/4 (sample variance 1).
        let a = [1.0, 2.0, 3.0, 2.0];
        let b = [3.0, 4.0, 5.0, 4.0];
        let (difference, half) = welch_difference_95(&a, &b).unwrap();
        assert_eq!(difference, 2.0);
        let variance = 2.0 / 3.0; // Σ(x − 2)² / 3
        let expected = 2.447 * (2.0 * variance / 4.0_f64).sqrt();
        assert!((half - expected).abs() < 1e-9, "{half} vs {expected}");
        // No spread, or one value: a zero-width interval.
        assert_eq!(
            welch_difference_95(&[1.0, 1.0], &[2.0, 2.0]),
            Some((1.0, 0.0))
        );
        assert_eq!(welch_difference_95(&[1.0], &[2.0, 3.0]), Some((1.5, 0.0)));
        assert_eq!(welch_difference_95(&[], &[2.0]), None);
    }

    #[test]
    fn confidence_intervals_use_student_t() {
        assert_eq!(student_t_975(0), None);
        assert_eq!(student_t_975(9), Some(2.262));
        // Above the table the expansion is within 1e-3 of the exact quantiles
        // (t(0.975, 40) = 2.0211, t(0.975, 120) = 1.9799).
        assert!((student_t_975(40).unwrap() - 2.0211).abs() < 1e-3);
        assert!((student_t_975(120).unwrap() - 1.9799).abs() < 1e-3);
        // 10 values 1..=10: mean 5.5, s = 3.027650, half-width 2.262·s/√10 = 2.165700.
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        let interval = confidence_interval_95(&values).unwrap();
        assert_eq!(interval.n, 10);
        assert!((interval.mean - 5.5).abs() < 1e-12);
        assert!(
            (interval.high - 5.5 - 2.165700).abs() < 1e-5,
            "{interval:?}"
        );
        assert!((interval.mean - interval.low - 2.165700).abs() < 1e-5);
        let single = confidence_interval_95(&[2.0]).unwrap();
        assert_eq!((single.low, single.high), (2.0, 2.0));
        assert_eq!(confidence_interval_95(&[]), None);
    }

    #[test]
    fn spearman_ranks_with_ties() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
        // scipy.stats.spearmanr([1, 2, 3, 4], [1, 3, 2, 2]) = 0.3162...
        let rho = spearman(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 2.0]).unwrap();
        assert!((rho - 0.316_227_766).abs() < 1e-6, "{rho}");
        assert_eq!(spearman(&[1.0, 2.0], &[5.0, 5.0]), None);
        assert_eq!(spearman(&[1.0], &[5.0]), None);
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn mean_std_and_cov_on_a_textbook_series() {
        let values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&values), Some(5.0));
        assert_eq!(standard_deviation(&values), Some(2.0));
        assert_eq!(coefficient_of_variation(&values), Some(0.4));
        assert_eq!(burstiness_index(&values), Some(0.4));
        assert_eq!(coefficient_of_variation(&[3.0, 3.0, 3.0]), Some(0.0));
    }

    #[test]
    fn undefined_statistics_are_none() {
        assert_eq!(mean(&[]), None);
        assert_eq!(mean(&[1.0, f64::NAN]), None);
        assert_eq!(standard_deviation(&[]), None);
        assert_eq!(coefficient_of_variation(&[0.0, 0.0]), None);
        assert_eq!(coefficient_of_variation(&[]), None);
        assert_eq!(burstiness_index(&[1.0, f64::INFINITY]), None);
    }

    #[test]
    fn bin_sums_counts_half_open_bins() {
        let events = [
            (0.0, 1),
            (0.05, 1),
            (0.1, 1),
            (0.25, 2),
            (0.3, 5),
            (-0.1, 7),
        ];
        assert_eq!(bin_sums(&events, 0.0, 0.3, 0.1).unwrap(), vec![2, 1, 2]);
        // A partial last bin.
        assert_eq!(bin_sums(&events, 0.0, 0.35, 0.1).unwrap(), vec![2, 1, 2, 5]);
        // An offset start.
        assert_eq!(bin_sums(&events, 0.1, 0.3, 0.1).unwrap(), vec![1, 2]);
        assert_eq!(bin_sums(&[], 0.0, 0.0, 0.1).unwrap(), Vec::<u64>::new());
    }

    #[test]
    fn bin_sums_rejects_bad_parameters() {
        assert!(matches!(
            bin_sums(&[], 0.0, 1.0, 0.0),
            Err(MetricError::InvalidParameter { name: "bin_s", .. })
        ));
        assert!(matches!(
            bin_sums(&[], 1.0, 0.5, 0.1),
            Err(MetricError::InvalidParameter { name: "end_s", .. })
        ));
    }

    #[test]
    fn throughput_and_goodput_units() {
        assert_eq!(
            throughput_kbps(&[125_000, 0, 62_500], 1.0).unwrap(),
            vec![1000.0, 0.0, 500.0]
        );
        assert_eq!(throughput_kbps(&[12_500], 0.1).unwrap(), vec![1000.0]);
        assert!(throughput_kbps(&[1], -1.0).is_err());
        assert_eq!(goodput_bps(1_000_000, 8.0), Some(1_000_000.0));
        assert_eq!(goodput_bps(1_000, 0.0), None);
        assert_eq!(goodput_bps(1_000, f64::NAN), None);
    }

    #[test]
    fn cumulative_mean_of_p() {
        let running = cumulative_mean(&[0.1, 0.3, 0.2]);
        assert!(close(running[0].unwrap(), 0.1));
        assert!(close(running[1].unwrap(), 0.2));
        assert!(close(running[2].unwrap(), 0.2));
        assert_eq!(
            cumulative_mean(&[0.1, f64::NAN, 0.2]),
            vec![Some(0.1), None, None]
        );
        assert!(cumulative_mean(&[]).is_empty());
    }

    #[test]
    fn loss_event_rate_ratio_table_one() {
        assert!(close(loss_event_rate_ratio(0.012, 0.01).unwrap(), 1.2));
        assert_eq!(loss_event_rate_ratio(0.01, 0.0), None);
        assert_eq!(loss_event_rate_ratio(f64::NAN, 0.01), None);
    }

    #[test]
    fn jain_index_extremes() {
        assert_eq!(jain_index(&[5.0, 5.0, 5.0, 5.0]), Some(1.0));
        assert_eq!(jain_index(&[1.0, 0.0, 0.0, 0.0]), Some(0.25));
        assert!(close(jain_index(&[1.0, 2.0]).unwrap(), 0.9));
        assert_eq!(jain_index(&[0.0, 0.0]), None);
        assert_eq!(jain_index(&[]), None);
        assert_eq!(jain_index(&[1.0, -1.0]), None);
        assert_eq!(jain_index(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn receiving_ratio_and_utilization() {
        assert_eq!(receiving_ratio(95, 100), Some(0.95));
        assert_eq!(receiving_ratio(0, 0), None);
        assert_eq!(link_utilization(125_000, 1e6, 1.0), Some(1.0));
        assert_eq!(link_utilization(62_500, 1e6, 1.0), Some(0.5));
        assert_eq!(link_utilization(1, 0.0, 1.0), None);
        assert_eq!(link_utilization(1, 1e6, 0.0), None);
    }

    #[test]
    fn tcp_friendliness_ratio_is_mean_over_mean() {
        let t1 = [100.0, 110.0, 90.0, 100.0];
        let t2 = [80.0, 90.0];
        assert!(close(tcp_friendliness_ratio(&t1, &t2).unwrap(), 0.85));
        assert_eq!(tcp_friendliness_ratio(&[], &t2), None);
        assert_eq!(tcp_friendliness_ratio(&t1, &[]), None);
        assert_eq!(tcp_friendliness_ratio(&[0.0, 0.0], &t2), None);
    }

    #[test]
    fn values_between_takes_interval_ends_in_the_active_time() {
        let series = [(1.0, 10.0), (2.0, 20.0), (3.0, 30.0), (4.0, 40.0)];
        assert_eq!(values_between(&series, 1.0, 3.0), vec![20.0, 30.0]);
        assert!(values_between(&series, 4.0, 9.0).is_empty());
    }

    const TIMES: [f64; 10] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];

    fn two_flows<'a>(a: &'a [f64], b: &'a [f64]) -> [FlowRates<'a>; 2] {
        [
            FlowRates {
                start_s: 0.0,
                stop_s: f64::INFINITY,
                rates: a,
            },
            FlowRates {
                start_s: 3.0,
                stop_s: f64::INFINITY,
                rates: b,
            },
        ]
    }

    /// Raw rates, ±10 % of the mean of the active flows, until the end of the window.
    fn raw_until_end() -> ConvergenceOptions {
        ConvergenceOptions {
            tolerance: 0.10,
            fair_share: FairShare::MeanOfActive,
            hold: Hold::UntilEnd,
            smoothing_intervals: 1,
        }
    }

    #[test]
    fn trailing_mean_windows() {
        assert_eq!(
            trailing_mean(&[1.0, 3.0, 5.0, 7.0], 2),
            vec![1.0, 2.0, 4.0, 6.0]
        );
        assert_eq!(trailing_mean(&[1.0, 3.0], 0), vec![1.0, 3.0]);
        assert_eq!(trailing_mean(&[2.0, 4.0, 6.0], 5), vec![2.0, 3.0, 4.0]);
        assert!(trailing_mean(&[], 3).is_empty());
    }

    #[test]
    fn convergence_on_smoothed_rates() {
        // Raw rates alternate ±20 % around 500 from t = 5 on: never in band raw, always in
        // band averaged over 2 intervals once both averages cover that regime.
        let a = [
            1000., 1000., 1000., 1000., 600., 400., 600., 400., 600., 400.,
        ];
        let b = [0., 0., 0., 0., 400., 600., 400., 600., 400., 600.];
        let flows = two_flows(&a, &b);
        assert_eq!(
            convergence_time(&TIMES, &flows, 3.0, raw_until_end()),
            Ok(None)
        );
        let smoothed = ConvergenceOptions {
            smoothing_intervals: 2,
            ..raw_until_end()
        };
        assert_eq!(
            convergence_time(&TIMES, &flows, 3.0, smoothed),
            Ok(Some(3.0))
        );
    }

    #[test]
    fn convergence_after_an_arrival() {
        let a = [
            1000., 1000., 1000., 800., 700., 600., 520., 500., 510., 490.,
        ];
        let b = [0., 0., 0., 200., 300., 400., 480., 500., 490., 510.];
        let flows = two_flows(&a, &b);
        let options = raw_until_end();
        // In band (±10 % of 500) from t = 7 on.
        assert_eq!(
            convergence_time(&TIMES, &flows, 3.0, options),
            Ok(Some(4.0))
        );
        let by_capacity = ConvergenceOptions {
            fair_share: FairShare::Capacity(1000.0),
            ..options
        };
        assert_eq!(
            convergence_time(&TIMES, &flows, 3.0, by_capacity),
            Ok(Some(4.0))
        );
    }

    #[test]
    fn convergence_must_stay_in_band() {
        // A blip out of the band at t = 9.
        let a = [
            1000., 1000., 1000., 800., 700., 600., 520., 500., 600., 490.,
        ];
        let b = [0., 0., 0., 200., 300., 400., 480., 500., 400., 510.];
        let flows = two_flows(&a, &b);
        let until_end = raw_until_end();
        assert_eq!(
            convergence_time(&TIMES, &flows, 3.0, until_end),
            Ok(Some(7.0))
        );
        let hold = |seconds| ConvergenceOptions {
            hold: Hold::For { seconds },
            ..until_end
        };
        assert_eq!(
            convergence_time(&TIMES, &flows, 3.0, hold(1.0)),
            Ok(Some(4.0))
        );
        // From t = 10 a 2 s hold cannot be confirmed: the series ends.
        assert_eq!(convergence_time(&TIMES, &flows, 3.0, hold(2.0)), Ok(None));
    }

    #[test]
    fn convergence_band_edges_and_fair_share_kinds() {
        // Both at 450 while the capacity is 1000: equal (mean share) but 10 % below capacity/2.
        let a = [450.0; 10];
        let b = [450.0; 10];
        let flows = two_flows(&a, &b);
        let by_capacity = ConvergenceOptions {
            fair_share: FairShare::Capacity(1000.0),
            ..raw_until_end()
        };
        // Exactly 10 % off is in band.
        assert_eq!(
            convergence_time(&TIMES, &flows, 3.0, by_capacity),
            Ok(Some(1.0))
        );
        let a = [440.0; 10];
        let b = [440.0; 10];
        let flows = two_flows(&a, &b);
        assert_eq!(convergence_time(&TIMES, &flows, 3.0, by_capacity), Ok(None));
        assert_eq!(
            convergence_time(&TIMES, &flows, 3.0, raw_until_end()),
            Ok(Some(1.0))
        );
    }

    #[test]
    fn convergence_window_ends_at_the_next_arrival() {
        let a = [
            1000., 1000., 1000., 800., 700., 600., 520., 500., 340., 330.,
        ];
        let b = [0., 0., 0., 200., 300., 400., 480., 500., 330., 340.];
        let c = [0., 0., 0., 0., 0., 0., 0., 0., 100., 200.];
        let mut flows = two_flows(&a, &b).to_vec();
        flows.push(FlowRates {
            start_s: 8.0,
            stop_s: f64::INFINITY,
            rates: &c,
        });
        let options = raw_until_end();
        // Window (3, 8]: in band at 7 and 8, whatever happens after C arrives.
        assert_eq!(
            convergence_time(&TIMES, &flows, 3.0, options),
            Ok(Some(4.0))
        );
        // C's arrival: C never reaches its share.
        assert_eq!(convergence_time(&TIMES, &flows, 8.0, options), Ok(None));
        // No interval after the arrival.
        assert_eq!(convergence_time(&TIMES, &flows, 10.0, options), Ok(None));
    }

    #[test]
    fn convergence_rejects_bad_input() {
        let a = [1.0; 3];
        let flows = [FlowRates {
            start_s: 0.0,
            stop_s: 10.0,
            rates: &a,
        }];
        let options = ConvergenceOptions::default();
        assert!(matches!(
            convergence_time(&TIMES, &flows, 0.0, options),
            Err(MetricError::LengthMismatch {
                found: 3,
                expected: 10,
                ..
            })
        ));
        assert!(matches!(
            convergence_time(&[1.0, 3.0, 2.0], &flows, 0.0, options),
            Err(MetricError::TimesNotIncreasing { index: 2, .. })
        ));
        let no_tolerance = ConvergenceOptions {
            tolerance: 0.0,
            ..options
        };
        assert!(convergence_time(&[1.0, 2.0, 3.0], &flows, 0.0, no_tolerance).is_err());
    }

    const RECOVERY_TIMES: [f64; 20] = [
        1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12., 13., 14., 15., 16., 17., 18., 19., 20.,
    ];
    const RECOVERY_RATES: [f64; 20] = [
        1000., 1000., 1000., 1000., 1000., 200., 200., 200., 200., 200., 500., 850., 920., 950.,
        880., 1000., 1000., 1000., 1000., 1000.,
    ];

    fn recovery(hold: Hold) -> Result<Option<f64>, MetricError> {
        let options = RecoveryOptions {
            reference_s: 5.0,
            threshold: 0.9,
            hold,
            smoothing_intervals: 1,
        };
        recovery_time(&RECOVERY_TIMES, &RECOVERY_RATES, 5.0, 10.0, options)
    }

    #[test]
    fn recovery_time_with_each_hold_rule() {
        // Earlier rate 1000, level 900: back at 13, 14; below at 15; back from 16 on.
        assert_eq!(recovery(Hold::UntilEnd), Ok(Some(6.0)));
        assert_eq!(recovery(Hold::For { seconds: 1.0 }), Ok(Some(3.0)));
        assert_eq!(recovery(Hold::For { seconds: 2.0 }), Ok(Some(6.0)));
        // From 16, a 5 s hold would need data up to 21.
        assert_eq!(recovery(Hold::For { seconds: 5.0 }), Ok(None));
        // Averaged over 3 intervals: 13 → (500+850+920)/3 < 900; 14 → 906.7; 15 → 916.7;
        // 16 → 943.3: back from 14 on.
        let smoothed = RecoveryOptions {
            reference_s: 5.0,
            threshold: 0.9,
            hold: Hold::UntilEnd,
            smoothing_intervals: 3,
        };
        assert_eq!(
            recovery_time(&RECOVERY_TIMES, &RECOVERY_RATES, 5.0, 10.0, smoothed),
            Ok(Some(4.0))
        );
    }

    #[test]
    fn recovery_time_undefined_cases() {
        let options = RecoveryOptions::default();
        // No interval before the disturbance.
        assert_eq!(
            recovery_time(&RECOVERY_TIMES, &RECOVERY_RATES, 0.5, 10.0, options),
            Ok(None)
        );
        // Nothing sent before it.
        let zeros = [0.0; 20];
        assert_eq!(
            recovery_time(&RECOVERY_TIMES, &zeros, 5.0, 10.0, options),
            Ok(None)
        );
        assert!(matches!(
            recovery_time(&RECOVERY_TIMES, &RECOVERY_RATES, 10.0, 5.0, options),
            Err(MetricError::InvalidParameter { .. })
        ));
        assert!(matches!(
            recovery_time(&RECOVERY_TIMES, &zeros[..3], 5.0, 10.0, options),
            Err(MetricError::LengthMismatch { .. })
        ));
    }
}
