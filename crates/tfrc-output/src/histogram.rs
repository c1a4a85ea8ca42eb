//! A histogram with constant relative resolution, for delay and pacing percentiles.

/// Sub-buckets per power of two: relative resolution 1/32 (about 3 %).
const SUB_BUCKETS: u64 = 32;
const SUB_BUCKET_BITS: u32 = 5;

/// A histogram of non-negative integers (durations in nanoseconds: pacing errors of `tfrc send`,
/// one-way delays of simulated packets) with about 3 % relative resolution: 32 buckets per power
/// of two, grown only up to the largest value recorded (827 buckets, 6.6 KB, for values up to a
/// second in nanoseconds), so memory stays bounded over millions of values and small per
/// flow.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
    sum: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram {
            counts: Vec::new(),
            total: 0,
            max: 0,
            sum: 0.0,
        }
    }

    fn index(value: u64) -> usize {
        if value < SUB_BUCKETS {
            return value as usize;
        }
        let exponent = 63 - value.leading_zeros(); // >= SUB_BUCKET_BITS
        let shift = exponent - SUB_BUCKET_BITS;
        let mantissa = (value >> shift) - SUB_BUCKETS; // in [0, SUB_BUCKETS)
        ((u64::from(shift) + 1) * SUB_BUCKETS + mantissa) as usize
    }

    /// The smallest value of a bucket.
    fn bucket_low(index: usize) -> u64 {
        let index = index as u64;
        if index < SUB_BUCKETS {
            return index;
        }
        let shift = index / SUB_BUCKETS - 1;
        let mantissa = index % SUB_BUCKETS;
        (SUB_BUCKETS + mantissa) << shift
    }

    /// Records one value.
    pub fn record(&mut self, nanos: u64) {
        let index = Histogram::index(nanos);
        if index >= self.counts.len() {
            self.counts.resize(index + 1, 0);
        }
        self.counts[index] += 1;
        self.total += 1;
        self.max = self.max.max(nanos);
        self.sum += nanos as f64;
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The value below which a `fraction` of the recorded values lie (its bucket's midpoint, at
    /// most the largest value); 0 when empty.
    pub fn percentile(&self, fraction: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((self.total as f64 * fraction).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                let low = Histogram::bucket_low(index);
                let high = Histogram::bucket_low(index + 1);
                return (low + (high - low) / 2).min(self.max);
            }
        }
        self.max
    }

    /// Largest value recorded.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Mean value (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum / self.total as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_monotonic_and_tight() {
        let mut previous = 0;
        for value in [
            0u64,
            1,
            31,
            32,
            33,
            63,
            64,
            100,
            1000,
            12_345,
            1 << 40,
            u64::MAX / 2,
        ] {
            let index = Histogram::index(value);
            assert!(index >= previous);
            previous = index;
            let low = Histogram::bucket_low(index);
            let high = Histogram::bucket_low(index + 1);
            assert!(low <= value && value < high, "{value}: [{low}, {high})");
        }
    }

    #[test]
    fn histogram_percentiles() {
        let mut histogram = Histogram::new();
        for value in 1..=1000u64 {
            histogram.record(value * 1000);
        }
        let p50 = histogram.percentile(0.5) as f64;
        let p99 = histogram.percentile(0.99) as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.04, "{p50}");
        assert!((p99 - 990_000.0).abs() / 990_000.0 < 0.04, "{p99}");
        assert_eq!(histogram.max(), 1_000_000);
        assert_eq!(histogram.count(), 1000);
    }
}
