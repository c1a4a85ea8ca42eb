//! Independent replications of a concrete scenario: what a paper leaves random or unstated is
//! drawn anew, everything it states is kept.
//!
//! Replication `k` of a scenario with seed `s`:
//! - runs with seed [`replication_seed`]`(s, k)`, so every random source and loss model of the
//!   run draws another stream;
//! - starts every flow that starts before the end of its own stop time later by a delay drawn
//!   uniformly in `[0, base RTT of the flow's route)` ([`Scenario::base_rtt`]), so that DropTail
//!   phase effects between flows that a paper starts "at the same time" average out over
//!   replications. Stop times are kept (a disturbance still ends when the paper says).
//!
//! The draw uses ChaCha8 seeded with the replication seed, in flow order, so a replication is
//! reproducible from `(s, k)` alone: `tfrc sim FILE --replication K` runs the same thing as
//! replication `K` of `tfrc reproduce`.

use core::time::Duration;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::resolve::MAX_TOML_INTEGER;
use crate::Scenario;

/// The seed of replication `replication` of a scenario whose seed is `seed`: SplitMix64 of the
/// pair, kept within the integers a TOML file holds.
pub fn replication_seed(seed: u64, replication: u32) -> u64 {
    let mut z = seed
        .wrapping_add(u64::from(replication).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) & MAX_TOML_INTEGER
}

impl Scenario {
    /// Replication `replication` of this concrete scenario (see the module docs): another seed
    /// and flow starts jittered by up to one base RTT. The name and variant labels are kept.
    pub fn replicate(&self, replication: u32) -> Scenario {
        let mut replicated = self.clone();
        replicated.seed = replication_seed(self.seed, replication);
        let mut rng = ChaCha8Rng::seed_from_u64(replicated.seed);
        for flow in &mut replicated.flows {
            let window = self
                .base_rtt(&flow.from, &flow.to)
                .unwrap_or(Duration::ZERO);
            // Drawn for every flow, so that one flow's window does not shift the others' draws.
            let fraction: f64 = rng.gen();
            let jitter = Duration::from_nanos((window.as_nanos() as f64 * fraction) as u64);
            let stop = flow.stop_time(self.duration);
            if flow.start + jitter < stop {
                flow.start += jitter;
            }
        }
        replicated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMBBELL: &str = r#"
        name = "d"
        duration = "60s"
        seed = 7
        [[link]]
        between = ["s", "r1"]
        rate = "100Mbps"
        delay = "1ms"
        [[link]]
        between = ["r1", "r2"]
        rate = "1Mbps"
        delay = "24ms"
        [[link]]
        between = ["r2", "d"]
        rate = "100Mbps"
        delay = "1ms"
        [[flow]]
        name = "a"
        kind = "tfrc"
        from = "s"
        to = "d"
        [[flow]]
        name = "b"
        kind = "cbr"
        rate = "500kbps"
        from = "s"
        to = "d"
        start = "30s"
        stop = "30.01s"
    "#;

    #[test]
    fn base_rtt_sums_the_delays_both_ways() {
        let scenario = Scenario::from_str_named(DUMBBELL, "d.toml").unwrap();
        assert_eq!(scenario.base_rtt("s", "d"), Some(Duration::from_millis(52)));
        assert_eq!(scenario.base_rtt("d", "s"), Some(Duration::from_millis(52)));
        assert_eq!(scenario.base_rtt("s", "r1"), Some(Duration::from_millis(2)));
        assert_eq!(scenario.base_rtt("s", "nowhere"), None);
    }

    #[test]
    fn replications_draw_seeds_and_starts_within_one_rtt() {
        let scenario = Scenario::from_str_named(DUMBBELL, "d.toml").unwrap();
        let mut seeds = Vec::new();
        let mut starts = Vec::new();
        for k in 0..50 {
            let replicated = scenario.replicate(k);
            assert_eq!(replicated, scenario.replicate(k), "deterministic");
            assert!(replicated.seed <= MAX_TOML_INTEGER);
            seeds.push(replicated.seed);
            let a = replicated.flow("a").unwrap().start;
            assert!(a < Duration::from_millis(52), "{a:?}");
            starts.push(a);
            // Stop times are kept; a start that would pass its stop is not moved.
            let b = replicated.flow("b").unwrap();
            assert_eq!(b.stop, Some(Duration::from_millis(30_010)));
            assert!(b.start < b.stop.unwrap());
            assert_eq!(replicated.name, scenario.name);
        }
        seeds.sort_unstable();
        seeds.dedup();
        assert_eq!(seeds.len(), 50, "distinct seeds");
        starts.sort_unstable();
        starts.dedup();
        assert!(starts.len() >= 45, "distinct starts");
        // The draws spread over the window, not into one corner of it.
        let mean = starts.iter().map(|d| d.as_secs_f64()).sum::<f64>() / starts.len() as f64;
        assert!((0.015..0.037).contains(&mean), "mean start {mean}");
    }
}
