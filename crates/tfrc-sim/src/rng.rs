//! Seeded randomness: one independent, reproducible stream per element.
//!
//! There is no global generator. A run has one seed; each element gets its own seed derived
//! from it with [`derive_seed`] and a stable label (for example `"link:a-b:queue"`), so adding
//! an element does not shift the random numbers seen by the others.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The generator every element owns: ChaCha with 8 rounds (fast, portable, reproducible).
pub type ElementRng = ChaCha8Rng;

/// A generator for one element, seeded from `seed`.
pub fn element_rng(seed: u64) -> ElementRng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// The seed of the random stream named `stream` within a run seeded with `run_seed`.
///
/// Stable across versions (FNV-1a of the label mixed with SplitMix64), because reproducing a
/// published run depends on it.
pub fn derive_seed(run_seed: u64, stream: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in stream.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    splitmix64(run_seed ^ splitmix64(hash))
}

/// One step of SplitMix64, a good 64-bit mixing function.
fn splitmix64(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform number in `(0, 1]` (never zero, so its logarithm is finite).
pub(crate) fn uniform_nonzero(rng: &mut ElementRng) -> f64 {
    1.0 - rng.gen::<f64>()
}

/// An exponentially distributed number with the given mean.
pub(crate) fn exponential(rng: &mut ElementRng, mean: f64) -> f64 {
    -mean * uniform_nonzero(rng).ln()
}

/// A Pareto-distributed number with the given scale (minimum) and shape, drawn as ns-2's
/// `RNG::pareto` does: `scale / U^(1/shape)`.
pub(crate) fn pareto(rng: &mut ElementRng, scale: f64, shape: f64) -> f64 {
    scale * uniform_nonzero(rng).powf(-1.0 / shape)
}

/// `base^exponent` by repeated squaring (multiplications only, so the result is the same on
/// every platform).
pub(crate) fn power(base: f64, mut exponent: u64) -> f64 {
    let mut result = 1.0;
    let mut factor = base;
    while exponent > 0 {
        if exponent & 1 == 1 {
            result *= factor;
        }
        factor *= factor;
        exponent >>= 1;
        if factor == 0.0 && exponent > 0 {
            return 0.0;
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_seeds_are_stable_and_distinct() {
        let a = derive_seed(1, "link:a-b:queue");
        assert_eq!(a, derive_seed(1, "link:a-b:queue"));
        assert_ne!(a, derive_seed(2, "link:a-b:queue"));
        assert_ne!(a, derive_seed(1, "link:b-a:queue"));
        assert_ne!(derive_seed(0, ""), derive_seed(0, "x"));
    }

    #[test]
    fn power_matches_repeated_multiplication() {
        let mut expected = 1.0;
        for exponent in 0..200u64 {
            let got = power(0.998, exponent);
            assert!((got - expected).abs() <= 1e-12 * expected, "{exponent}");
            expected *= 0.998;
        }
        assert_eq!(power(0.5, 100_000), 0.0);
        assert_eq!(power(0.0, 0), 1.0);
    }

    #[test]
    fn distributions_have_the_right_means() {
        let mut rng = element_rng(7);
        let n = 100_000;
        let mean_exp: f64 = (0..n).map(|_| exponential(&mut rng, 2.0)).sum::<f64>() / n as f64;
        assert!((mean_exp - 2.0).abs() < 0.05, "{mean_exp}");
        // Pareto with shape 3 and scale 1 has mean 3/2.
        let mean_pareto: f64 = (0..n).map(|_| pareto(&mut rng, 1.0, 3.0)).sum::<f64>() / n as f64;
        assert!((mean_pareto - 1.5).abs() < 0.05, "{mean_pareto}");
        assert!((0..1000).all(|_| uniform_nonzero(&mut rng) > 0.0));
    }
}
