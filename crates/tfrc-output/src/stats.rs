//! The statistics written into run summaries and computed from their rows, defined once: the
//! simulator's `summary.json` and `tfrc-analysis`'s metrics use these functions.
//!
//! A statistic that is undefined for its input (empty input, a non-finite value, a zero
//! denominator) is `None`, never NaN or infinity. Standard deviations are population standard
//! deviations (divide by n): a series is the whole run, not a sample of it.

fn all_finite(values: &[f64]) -> bool {
    values.iter().all(|v| v.is_finite())
}

/// Arithmetic mean; `None` if `values` is empty or holds a non-finite value.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || !all_finite(values) {
        return None;
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

/// Population standard deviation `sqrt(Σ(x − mean)² / n)`; `None` as for [`mean`].
pub fn standard_deviation(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    let variance = values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / values.len() as f64;
    Some(variance.sqrt())
}

/// The `q`-quantile (0 ≤ q ≤ 1) with linear interpolation between order statistics (numpy's
/// default, "type 7"); `None` if empty, non-finite, or `q` outside [0, 1].
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() || !all_finite(values) || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let position = q * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    let fraction = position - below as f64;
    Some(sorted[below] + (sorted[above] - sorted[below]) * fraction)
}

/// Coefficient of variation `std / mean` (population std). `None` if empty, non-finite, or the
/// mean is 0 (nothing was sent: the smoothness of nothing is undefined).
///
/// Paper 003's CoV is this over the packets sent per 0.1 s bin (`summary.json`'s
/// `cov_sent_100ms`).
pub fn coefficient_of_variation(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    if m == 0.0 {
        return None;
    }
    Some(standard_deviation(values)? / m)
}

/// Jain's fairness index `(Σ x_i)² / (n · Σ x_i²)` over per-flow goodputs: 1 when all are
/// equal, 1/n when one flow has everything. `None` if empty, if every value is 0, or if a value
/// is negative or not finite.
pub fn jain_index(goodputs: &[f64]) -> Option<f64> {
    if goodputs.is_empty() || !all_finite(goodputs) || goodputs.iter().any(|&x| x < 0.0) {
        return None;
    }
    let sum: f64 = goodputs.iter().sum();
    let sum_of_squares: f64 = goodputs.iter().map(|x| x * x).sum();
    if sum_of_squares == 0.0 {
        return None;
    }
    Some(sum * sum / (goodputs.len() as f64 * sum_of_squares))
}

/// [`coefficient_of_variation`] of a series of counts fed one bin at a time, in constant
/// memory: a run of 10^9 s has 10^10 bins of 0.1 s, which no vector should hold. Sums are kept
/// as exact integers, and std / mean = sqrt(n·Σx² − (Σx)²) / Σx.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountMoments {
    bins: u64,
    sum: u128,
    squares: u128,
}

impl CountMoments {
    /// Adds one bin holding `count`.
    pub fn add(&mut self, count: u64) {
        self.bins += 1;
        self.sum += u128::from(count);
        self.squares += u128::from(count) * u128::from(count);
    }

    /// Adds `bins` bins holding 0.
    pub fn add_zeros(&mut self, bins: u64) {
        self.bins += bins;
    }

    /// Bins added so far.
    pub fn bins(&self) -> u64 {
        self.bins
    }

    /// Population std / mean; `None` with no bins or a zero mean (as
    /// [`coefficient_of_variation`]).
    pub fn coefficient_of_variation(&self) -> Option<f64> {
        if self.bins == 0 || self.sum == 0 {
            return None;
        }
        let spread = u128::from(self.bins) * self.squares - self.sum * self.sum;
        Some((spread as f64).sqrt() / self.sum as f64)
    }
}
