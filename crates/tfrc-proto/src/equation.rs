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
}
