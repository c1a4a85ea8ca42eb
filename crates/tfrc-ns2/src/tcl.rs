//! Small formatting helpers for the generated Tcl: exact decimal seconds, numbers Tcl reads back
//! unchanged, and seeds in the range ns-2's RNG accepts.

use core::time::Duration;

/// Seconds as an exact decimal (`0.001`, `300`, `0.000000250`→`0.00000025`): every nanosecond
/// duration has a finite decimal form, so nothing is rounded.
pub(crate) fn seconds(duration: Duration) -> String {
    let whole = duration.as_secs();
    let nanos = duration.subsec_nanos();
    if nanos == 0 {
        return whole.to_string();
    }
    let fraction = format!("{nanos:09}");
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

/// A floating-point number as Tcl's `expr` reads it (Rust's shortest round-trip form never uses
/// an exponent, which Tcl would also accept).
pub(crate) fn number(value: f64) -> String {
    format!("{value}")
}

/// ns-2's RNG seeds must lie in 1 … 2^31 − 2 (MRG32k3a seeded from one 31-bit value); seed 0
/// would mean "pick one from the clock". Each random element of the run gets its own seed,
/// derived from the scenario seed and the element's stream number with SplitMix64, so that the
/// same scenario and seed give the same ns-2 run and different elements are not correlated.
pub(crate) fn derived_seed(scenario_seed: u64, stream: u64) -> u64 {
    let mut z = scenario_seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(stream.wrapping_add(1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    1 + z % 2_147_483_646
}

/// A comment line: the text with line breaks replaced, so it cannot end the comment.
pub(crate) fn comment(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("# {flat}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_exact_decimals() {
        assert_eq!(seconds(Duration::from_secs(300)), "300");
        assert_eq!(seconds(Duration::from_millis(1)), "0.001");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5");
        assert_eq!(seconds(Duration::from_nanos(250)), "0.00000025");
        assert_eq!(seconds(Duration::ZERO), "0");
    }

    #[test]
    fn derived_seeds_are_in_range_and_distinct() {
        let seeds: Vec<u64> = (0..100).map(|stream| derived_seed(1, stream)).collect();
        assert!(seeds
            .iter()
            .all(|&seed| (1..=2_147_483_646).contains(&seed)));
        let mut unique = seeds.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), seeds.len());
        assert_ne!(derived_seed(1, 0), derived_seed(2, 0));
        assert_eq!(derived_seed(7, 3), derived_seed(7, 3));
    }

    #[test]
    fn comments_stay_on_one_line() {
        assert_eq!(comment("a\nb"), "# a b");
    }
}
