//! The TCP throughput equation of RFC 5348 §3.1 and its inverse.
//!
//! ```text
//!                               s
//! X_Bps = ----------------------------------------------------------
//!         R*sqrt(2*b*p/3) + (t_RTO * (3*sqrt(3*b*p/8)*p*(1+32*p^2)))
//! ```
//! with b = 1 (RFC 5348 §3.1: "b SHOULD be 1") and t_RTO = 4R (§3.1: "t_RTO = 4*R").

/// Packets acknowledged by one TCP ACK; RFC 5348 §3.1 recommends b = 1.
pub const PACKETS_PER_ACK: f64 = 1.0;

/// Allowed transmit rate X_Bps in bytes/s for segment size `s` (bytes), round-trip time `rtt`
/// (seconds) and loss event rate `p` (0 < p ≤ 1), with b = 1 and t_RTO = 4R.
///
/// Returns `f64::INFINITY` for p = 0 (no loss: the equation places no limit) and 0 for
/// non-finite or non-positive inputs, so callers never divide by zero.
pub fn throughput(s: f64, rtt: f64, p: f64) -> f64 {
    throughput_with_rto(s, rtt, p, 4.0 * rtt)
}

/// The equation with an explicit t_RTO (seconds); [`throughput`] uses t_RTO = 4R.
pub fn throughput_with_rto(s: f64, rtt: f64, p: f64, t_rto: f64) -> f64 {
    if !(s.is_finite() && rtt.is_finite() && p.is_finite() && t_rto.is_finite()) {
        return 0.0;
    }
    if s <= 0.0 || rtt <= 0.0 || p < 0.0 {
        return 0.0;
    }
    if p == 0.0 {
        return f64::INFINITY;
    }
    let b = PACKETS_PER_ACK;
    let denominator = rtt * (2.0 * b * p / 3.0).sqrt()
        + t_rto * (3.0 * (3.0 * b * p / 8.0).sqrt() * p * (1.0 + 32.0 * p * p));
    s / denominator
}

/// The loss event rate p for which [`throughput`]`(s, rtt, p)` equals `target_rate` (bytes/s).
///
/// Used to synthesise the first loss interval (RFC 5348 §6.3.1). The equation is strictly
/// decreasing in p, so the answer is unique; it is found by bisection on log(p) to a relative
/// rate error below 1e-9 (the RFC asks for 5 %). The result is clamped to [1e-12, 1]: a target
/// above X(p = 1e-12) gives 1e-12, a target below X(p = 1) gives 1. Invalid inputs give `None`.
pub fn loss_event_rate_for(s: f64, rtt: f64, target_rate: f64) -> Option<f64> {
    if !(s.is_finite() && rtt.is_finite() && target_rate.is_finite()) {
        return None;
    }
    if s <= 0.0 || rtt <= 0.0 || target_rate <= 0.0 {
        return None;
    }
    const P_MIN: f64 = 1e-12;
    if throughput(s, rtt, P_MIN) <= target_rate {
        return Some(P_MIN);
    }
    if throughput(s, rtt, 1.0) >= target_rate {
        return Some(1.0);
    }
    let (mut low, mut high) = (P_MIN.ln(), 0.0_f64);
    for _ in 0..200 {
        let middle = 0.5 * (low + high);
        let rate = throughput(s, rtt, middle.exp());
        if rate > target_rate {
            low = middle;
        } else {
            high = middle;
        }
        if (high - low) < 1e-12 {
            break;
        }
    }
    Some((0.5 * (low + high)).exp())
}

/// The loss event rate at which [`throughput`]`(s, rtt, p)` is `target_rate` (bytes/s), or
/// `None` when none is: invalid inputs, or a rate the equation does not reach for p in
/// [1e-12, 1] (where [`loss_event_rate_for`] answers with the clamp). A p found by bisection is
/// accepted when its rate is within 1 % of the target.
pub fn attainable_loss_event_rate(s: f64, rtt: f64, target_rate: f64) -> Option<f64> {
    let p = loss_event_rate_for(s, rtt, target_rate)?;
    ((throughput(s, rtt, p) - target_rate).abs() <= 0.01 * target_rate).then_some(p)
}

/// Largest rate ns-2's `p_to_b` returns (`MAXRATE` in ns-2.35 `tcp/formula.h`), bytes/s.
pub const NS2_MAX_RATE: f64 = 25_000_000.0;

/// The throughput equation as ns-2.35 computes it (`p_to_b` in `tcp/formula.h`), bytes/s.
///
/// Two differences from [`throughput_with_rto`]: the RTO term's factor 3·√(3bp/8) is capped at 1
/// (Padhye's form; it only matters for p > 0.296), and the result is capped at
/// [`NS2_MAX_RATE`], which is also the answer for p = 0. `t_rto` is the sender's TCP-style RTO
/// estimate, not 4R. Non-finite or non-positive inputs give 0 (ns-2 would return `MAXRATE` for a
/// negative RTT; the core never passes one).
pub fn throughput_ns2(s: f64, rtt: f64, p: f64, t_rto: f64) -> f64 {
    if !(s.is_finite() && rtt.is_finite() && p.is_finite() && t_rto.is_finite()) {
        return 0.0;
    }
    if s <= 0.0 || rtt <= 0.0 || p < 0.0 || t_rto < 0.0 {
        return 0.0;
    }
    let b = PACKETS_PER_ACK;
    let rto_factor = (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0);
    let denominator =
        rtt * (2.0 * b * p / 3.0).sqrt() + rto_factor * t_rto * p * (1.0 + 32.0 * p * p);
    // ns-2 treats a denominator below 1e-7 (SAMLLFLOAT) as "no limit".
    if denominator < 1e-7 {
        return NS2_MAX_RATE;
    }
    (s / denominator).min(NS2_MAX_RATE)
}

/// ns-2.35's inverse of [`throughput_ns2`] (`b_to_p` in `tcp/formula-with-inverse.h`): a coarse
/// bisection from p = 0.5 that stops as soon as the rate is within ±5 % of `target_rate`, or
/// after 31 steps. The ns-2 profile's receiver uses it for the first loss interval, so that its
/// synthetic interval is the one ns-2 would compute. Invalid inputs give `None`.
pub fn loss_event_rate_for_ns2(s: f64, rtt: f64, t_rto: f64, target_rate: f64) -> Option<f64> {
    if !(s.is_finite() && rtt.is_finite() && t_rto.is_finite() && target_rate.is_finite()) {
        return None;
    }
    if s <= 0.0 || rtt <= 0.0 || t_rto < 0.0 || target_rate <= 0.0 {
        return None;
    }
    let (mut p, mut step) = (0.5_f64, 0.25_f64);
    for _ in 0..=30 {
        let rate = throughput_ns2(s, rtt, p, t_rto);
        if rate > 0.95 * target_rate && rate < 1.05 * target_rate {
            return Some(p);
        }
        if rate > target_rate {
            p += step;
        } else {
            p -= step;
        }
        step /= 2.0;
    }
    Some(p.clamp(f64::MIN_POSITIVE, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values computed independently (Python, double precision, the RFC 5348 §3.1 formula with
    /// b = 1, t_RTO = 4R) for a grid of (s, R, p).
    #[test]
    fn equation_matches_independent_values() {
        // (s bytes, R seconds, p, X bytes/s)
        let grid: &[(f64, f64, f64, f64)] = &[
            (1000.0, 0.1, 0.01, 112_332.234_362_992_98),
            (1000.0, 0.05, 0.001, 767_687.262_782_509_1),
            (1460.0, 0.2, 0.05, 26_906.962_784_574_105),
            (1000.0, 0.25, 0.01, 44_932.893_745_197_194),
            (1500.0, 0.3, 0.1, 8_850.510_388_956_62),
            (100.0, 0.01, 0.5, 417.361_640_378_042_7),
            (1000.0, 1.0, 1.0, 4.109_882_118_763_722),
            (1000.0, 0.1, 1e-6, 12_247_338.487_869_497),
        ];
        for &(s, rtt, p, expected) in grid {
            let x = throughput(s, rtt, p);
            assert!(
                (x - expected).abs() / expected < 1e-9,
                "X({s}, {rtt}, {p}) = {x}, expected {expected}"
            );
        }
    }

    #[test]
    fn equation_edge_cases() {
        assert_eq!(throughput(1000.0, 0.1, 0.0), f64::INFINITY);
        assert_eq!(throughput(0.0, 0.1, 0.1), 0.0);
        assert_eq!(throughput(1000.0, 0.0, 0.1), 0.0);
        assert_eq!(throughput(1000.0, 0.1, f64::NAN), 0.0);
        assert_eq!(throughput(1000.0, -1.0, 0.1), 0.0);
    }

    #[test]
    fn equation_is_decreasing_in_p_and_r() {
        let mut previous = f64::INFINITY;
        for i in 1..=1000 {
            let p = i as f64 / 1000.0;
            let x = throughput(1000.0, 0.1, p);
            assert!(x < previous);
            previous = x;
        }
        assert!(throughput(1000.0, 0.2, 0.01) < throughput(1000.0, 0.1, 0.01));
    }

    #[test]
    fn inverse_recovers_p() {
        for &p in &[1e-6, 1e-4, 0.001, 0.01, 0.05, 0.2, 0.7] {
            for &rtt in &[0.001, 0.05, 0.5, 2.0] {
                let x = throughput(1000.0, rtt, p);
                let found = loss_event_rate_for(1000.0, rtt, x).unwrap();
                assert!(
                    (found - p).abs() / p < 1e-6,
                    "p {p} rtt {rtt} found {found}"
                );
                let x_found = throughput(1000.0, rtt, found);
                assert!((x_found - x).abs() / x < 0.05);
            }
        }
    }

    #[test]
    fn inverse_clamps_and_rejects() {
        assert_eq!(loss_event_rate_for(1000.0, 0.1, 1e30), Some(1e-12));
        assert_eq!(loss_event_rate_for(1000.0, 0.1, 1e-9), Some(1.0));
        assert_eq!(loss_event_rate_for(1000.0, 0.1, 0.0), None);
        assert_eq!(loss_event_rate_for(1000.0, f64::NAN, 1.0), None);
        assert_eq!(loss_event_rate_for(-1.0, 0.1, 1.0), None);
    }

    /// ns-2.35 `p_to_b` (tcp/formula.h): identical to the RFC form with t_RTO given while
    /// 3√(3p/8) ≤ 1, i.e. p ≤ 8/27; above it the RTO term is capped, so ns-2 allows more.
    #[test]
    fn ns2_equation_caps_the_rto_factor() {
        for &p in &[0.001, 0.01, 0.1, 0.29] {
            let rfc = throughput_with_rto(1000.0, 0.2, p, 0.5);
            let ns2 = throughput_ns2(1000.0, 0.2, p, 0.5);
            assert!((rfc - ns2).abs() / rfc < 1e-12, "p {p}: {rfc} vs {ns2}");
        }
        for &p in &[0.3, 0.5, 1.0] {
            let rfc = throughput_with_rto(1000.0, 0.2, p, 0.5);
            let ns2 = throughput_ns2(1000.0, 0.2, p, 0.5);
            assert!(ns2 > rfc, "p {p}: capped term must give a higher rate");
            // By hand: denominator = R√(2p/3) + 1·t_RTO·p(1+32p²).
            let by_hand =
                1000.0 / (0.2 * (2.0 * p / 3.0_f64).sqrt() + 0.5 * p * (1.0 + 32.0 * p * p));
            assert!((ns2 - by_hand).abs() / by_hand < 1e-12);
        }
        assert_eq!(throughput_ns2(1000.0, 0.2, 0.0, 0.5), NS2_MAX_RATE);
        assert_eq!(throughput_ns2(1000.0, 1e-9, 1e-9, 0.0), NS2_MAX_RATE);
        assert_eq!(throughput_ns2(1000.0, f64::NAN, 0.1, 0.5), 0.0);
    }

    /// ns-2.35 `b_to_p` (tcp/formula-with-inverse.h) lands within 5 % of the target rate.
    #[test]
    fn ns2_inverse_is_within_five_percent() {
        for &target in &[2_000.0, 20_000.0, 70_000.0, 500_000.0] {
            let p = loss_event_rate_for_ns2(1500.0, 0.25, 0.4, target).unwrap();
            let rate = throughput_ns2(1500.0, 0.25, p, 0.4);
            assert!(
                (rate / target - 1.0).abs() < 0.05,
                "target {target}: p {p} gives {rate}"
            );
        }
        assert_eq!(loss_event_rate_for_ns2(1500.0, 0.25, 0.4, 0.0), None);
        assert_eq!(loss_event_rate_for_ns2(1500.0, -1.0, 0.4, 1e4), None);
    }
}
