//! Float-to-integer rounding for the per-packet paths.
//!
//! `f64::round` is a call into compiler-builtins' libm on x86-64 without SSE4.1 (the baseline
//! target), about 70 instructions; the sender ran it on every data packet (Veno's backlog) and
//! every feedback (the send interval). [`round_to_u64`] gives the same integer from one
//! truncating conversion and one comparison.

/// `x.round() as u64` (half away from zero, saturating, NaN and negatives to 0) for every `x`.
///
/// Exact: with `whole` = trunc(x), `x − whole` is computed without error (for x < 1 it is x;
/// for 1 ≤ x < 2^53, `whole` ≥ x/2 and Sterbenz's lemma applies; above 2^52 x is an integer and
/// the difference is 0 or negative once the conversion of `whole` back to f64 rounds up).
pub(crate) fn round_to_u64(x: f64) -> u64 {
    let whole = x as u64;
    if x - whole as f64 >= 0.5 {
        whole.saturating_add(1)
    } else {
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ties_and_edges_round_as_f64_round_does() {
        for x in [
            0.0,
            -0.0,
            0.5,
            0.49999999999999994,
            1.5,
            2.5,
            -0.5,
            -1.5,
            4_503_599_627_370_495.5,
            4_503_599_627_370_497.0,
            9_007_199_254_740_993.0,
            18_446_744_073_709_551_615.0,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
        ] {
            assert_eq!(round_to_u64(x), x.round() as u64, "x = {x:e}");
        }
    }

    proptest! {
        /// Any bit pattern: the same integer as `f64::round` and a saturating cast.
        #[test]
        fn matches_f64_round_for_any_bits(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            prop_assert_eq!(round_to_u64(x), x.round() as u64);
        }

        /// Values where the fraction matters (the bit patterns above are mostly huge or tiny).
        #[test]
        fn matches_f64_round_in_the_working_range(x in 0.0f64..1e12) {
            prop_assert_eq!(round_to_u64(x), x.round() as u64);
            let tie = x.trunc() + 0.5;
            prop_assert_eq!(round_to_u64(tie), tie.round() as u64);
        }
    }
}
