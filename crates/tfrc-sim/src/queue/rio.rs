//! RIO-C ("RED with In and Out", coupled averages), as ns-2's `Queue/dsRED` in `RIO-C` mode.

use tfrc_proto::Instant;

use super::{ewma_with_idle, idle_packets, Enqueue, Fifo, Queue, QueueDrop};
use crate::error::ParameterError;
use crate::packet::{Color, PacketMeta};
use crate::rng::{element_rng, uniform_nonzero, ElementRng};

const ELEMENT: &str = "RIO queue";

/// One RED parameter set of a [`Rio`] queue (thresholds in packets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RioThresholds {
    /// Early drops start when the average exceeds this many packets.
    pub min_threshold: f64,
    /// Above this average every packet of the class is dropped.
    pub max_threshold: f64,
    /// Drop probability reached at `max_threshold`.
    pub max_probability: f64,
}

impl RioThresholds {
    /// The base drop probability `p_b` for `average` (as ns-2 dsRED): 0 up to
    /// `min_threshold`, then `max_probability · (average − min) / (max − min)` up to
    /// `max_threshold`, 1 above.
    pub fn base_drop_probability(&self, average: f64) -> f64 {
        if average <= self.min_threshold {
            0.0
        } else if average <= self.max_threshold {
            (self.max_probability * (average - self.min_threshold)
                / (self.max_threshold - self.min_threshold))
                .clamp(0.0, 1.0)
        } else {
            1.0
        }
    }

    fn validate(&self, names: [&'static str; 3]) -> Result<(), ParameterError> {
        super::check_drop_curve(
            ELEMENT,
            names,
            [self.min_threshold, self.max_threshold, self.max_probability],
            "a finite number of packets greater than the class's min_threshold",
        )?;
        Ok(())
    }
}

/// Parameters of a [`Rio`] queue.
///
/// Defaults: limit 50 packets; in-profile 20/40/0.02; out-of-profile 10/20/0.1; weight 0.002
/// (dsRED's default `q_w`); mean packet size 500 bytes; no ECN. dsRED itself has no default
/// thresholds (`configQ` must set them).
#[derive(Debug, Clone, PartialEq)]
pub struct RioParams {
    /// Hard limit: an arrival finding this many packets waiting is dropped.
    pub limit: usize,
    /// Thresholds for in-profile packets, compared with the in-profile average.
    pub in_profile: RioThresholds,
    /// Thresholds for out-of-profile and unmarked packets, compared with the total average.
    pub out_profile: RioThresholds,
    /// Weight of the newest sample in both averages, in `(0, 1]`.
    pub weight: f64,
    /// Average packet size in bytes, to age the averages during idle periods.
    pub mean_packet_size: u32,
    /// Mark ECN-capable packets instead of dropping them (dsRED `ecn_`); overflow still drops.
    pub ecn: bool,
}

impl Default for RioParams {
    fn default() -> Self {
        RioParams {
            limit: 50,
            in_profile: RioThresholds {
                min_threshold: 20.0,
                max_threshold: 40.0,
                max_probability: 0.02,
            },
            out_profile: RioThresholds {
                min_threshold: 10.0,
                max_threshold: 20.0,
                max_probability: 0.1,
            },
            weight: 0.002,
            mean_packet_size: 500,
            ecn: false,
        }
    }
}

impl RioParams {
    /// Checks every parameter, naming the first bad one.
    pub fn validate(&self) -> Result<(), ParameterError> {
        super::check_shared(ELEMENT, self.limit, self.weight, self.mean_packet_size)?;
        self.in_profile.validate([
            "in_profile.min_threshold",
            "in_profile.max_threshold",
            "in_profile.max_probability",
        ])?;
        self.out_profile.validate([
            "out_profile.min_threshold",
            "out_profile.max_threshold",
            "out_profile.max_probability",
        ])?;
        Ok(())
    }

    /// The probability applied to the `count`-th packet of a class since its last drop:
    /// `p_b / (1 − count·p_b)`, and 1 once `count·p_b ≥ 1`. (ns-2's dsRED uses the same
    /// expression but lets it go negative, which stops all early drops; we clamp it to 1.)
    pub fn spaced_drop_probability(base: f64, count: i64) -> f64 {
        let scaled = count as f64 * base;
        if scaled >= 1.0 {
            1.0
        } else {
            (base / (1.0 - scaled)).clamp(0.0, 1.0)
        }
    }
}

/// Per-class RED state of a [`Rio`] queue.
#[derive(Debug, Clone, Copy)]
struct ClassState {
    average: f64,
    /// Arrivals since the last drop; −1 while the average is below `min_threshold`.
    count: i64,
    /// Since when the class's virtual queue has been empty.
    idle_since: Option<Instant>,
}

impl ClassState {
    fn new() -> Self {
        ClassState {
            average: 0.0,
            count: 0,
            idle_since: None,
        }
    }

    /// Ages the average for the idle period and folds in `sample`; the idle period restarts
    /// at `now` so that a dropped arrival does not age the average twice.
    fn update(&mut self, now: Instant, sample: usize, weight: f64, rate: Option<f64>) {
        let idle = idle_packets(rate, self.idle_since, now);
        if self.idle_since.is_some() {
            self.idle_since = Some(now);
        }
        self.average = ewma_with_idle(self.average, sample as f64, weight, idle);
    }
}

/// Verdict of the RED test for one class.
enum Decision {
    Pass,
    Early,
    Forced,
}

/// A RIO-C queue: one FIFO, two RED parameter sets, two coupled averages.
///
/// Mirrors ns-2's `Queue/dsRED` with `setMREDMode RIO-C` and two precedences (in-profile = 0,
/// out-of-profile = 1):
/// - an in-profile arrival updates the in-profile average (from the number of in-profile
///   packets waiting) and the total average (from all packets waiting); an out-of-profile or
///   unmarked arrival updates the total average only;
/// - an in-profile packet is dropped according to the in-profile average and thresholds, an
///   out-of-profile or unmarked packet according to the total average and the out-of-profile
///   thresholds;
/// - an arrival finding `limit` packets waiting is dropped before anything else;
/// - each average ages while its virtual queue is empty, by the number of average-sized
///   packets the link could have sent.
#[derive(Debug, Clone)]
pub struct Rio {
    params: RioParams,
    fifo: Fifo,
    in_profile_waiting: usize,
    in_profile: ClassState,
    /// State of the total average, which the out-of-profile class is judged on.
    total: ClassState,
    rng: ElementRng,
    packets_per_second: Option<f64>,
}

impl Rio {
    /// A RIO queue; `seed` seeds its random drop decisions.
    pub fn new(params: RioParams, seed: u64) -> Result<Self, ParameterError> {
        params.validate()?;
        Ok(Rio {
            params,
            fifo: Fifo::default(),
            in_profile_waiting: 0,
            in_profile: ClassState::new(),
            total: ClassState::new(),
            rng: element_rng(seed),
            packets_per_second: None,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &RioParams {
        &self.params
    }

    /// Average number of waiting in-profile packets.
    pub fn average_in_profile(&self) -> f64 {
        self.in_profile.average
    }

    /// Average number of waiting packets of all colours.
    pub fn average_total(&self) -> f64 {
        self.total.average
    }

    /// Number of waiting in-profile packets.
    pub fn in_profile_waiting(&self) -> usize {
        self.in_profile_waiting
    }

    fn decide(
        state: &mut ClassState,
        thresholds: &RioThresholds,
        rng: &mut ElementRng,
    ) -> Decision {
        let average = state.average;
        if average > thresholds.min_threshold {
            if average <= thresholds.max_threshold {
                state.count += 1;
                let base = thresholds.base_drop_probability(average);
                let probability = RioParams::spaced_drop_probability(base, state.count);
                if uniform_nonzero(rng) <= probability {
                    state.count = 0;
                    Decision::Early
                } else {
                    Decision::Pass
                }
            } else {
                state.count = 0;
                Decision::Forced
            }
        } else {
            state.count = -1;
            Decision::Pass
        }
    }
}

impl Queue for Rio {
    fn enqueue(&mut self, now: Instant, mut packet: PacketMeta) -> Enqueue {
        if self.fifo.len() >= self.params.limit {
            return Enqueue::Dropped(QueueDrop::Overflow);
        }
        let weight = self.params.weight;
        let rate = self.packets_per_second;
        let in_profile = packet.color == Color::In;
        if in_profile {
            self.in_profile
                .update(now, self.in_profile_waiting, weight, rate);
        }
        self.total.update(now, self.fifo.len(), weight, rate);

        let decision = if in_profile {
            Self::decide(&mut self.in_profile, &self.params.in_profile, &mut self.rng)
        } else {
            Self::decide(&mut self.total, &self.params.out_profile, &mut self.rng)
        };
        let marked = match decision {
            Decision::Pass => false,
            Decision::Early | Decision::Forced if self.params.ecn && packet.ecn_capable => true,
            Decision::Early => return Enqueue::Dropped(QueueDrop::Early),
            Decision::Forced => return Enqueue::Dropped(QueueDrop::Forced),
        };
        packet.ce |= marked;
        self.fifo.push(packet);
        if in_profile {
            self.in_profile_waiting += 1;
            self.in_profile.idle_since = None;
        }
        self.total.idle_since = None;
        if marked {
            Enqueue::QueuedWithCongestionMark
        } else {
            Enqueue::Queued
        }
    }

    fn dequeue(&mut self, now: Instant) -> Option<PacketMeta> {
        let packet = self.fifo.pop()?;
        if packet.color == Color::In {
            self.in_profile_waiting -= 1;
            if self.in_profile_waiting == 0 {
                self.in_profile.idle_since = Some(now);
            }
        }
        if self.fifo.len() == 0 {
            self.total.idle_since = Some(now);
        }
        Some(packet)
    }

    fn len_packets(&self) -> usize {
        self.fifo.len()
    }

    fn len_bytes(&self) -> u64 {
        self.fifo.bytes()
    }

    fn set_link_rate(&mut self, bits_per_second: f64) {
        self.packets_per_second = super::packet_rate(bits_per_second, self.params.mean_packet_size);
    }

    fn average_queue(&self) -> Option<f64> {
        Some(self.total.average)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn colored(id: u64, color: Color) -> PacketMeta {
        PacketMeta {
            color,
            ..PacketMeta::new(id, 0, 1000)
        }
    }

    /// Long-run drop fraction of the spacing `p_b / (1 − n·p_b)` for the n-th packet after a
    /// drop: the mean gap between drops is Σ_n P(gap > n).
    fn expected_drop_fraction(base: f64) -> f64 {
        let mut survival = 1.0;
        let mut mean_gap = 0.0;
        for n in 1..100_000u64 {
            mean_gap += survival;
            let scaled = n as f64 * base;
            let p_n = if scaled < 1.0 {
                base / (1.0 - scaled)
            } else {
                1.0
            };
            survival *= 1.0 - p_n.min(1.0);
            if survival == 0.0 {
                break;
            }
        }
        1.0 / mean_gap
    }

    fn rio_with_unit_weight() -> Rio {
        Rio::new(
            RioParams {
                weight: 1.0,
                limit: 1000,
                ..RioParams::default()
            },
            9,
        )
        .unwrap()
    }

    #[test]
    fn validation_names_the_bad_parameter() {
        let mut params = RioParams::default();
        params.in_profile.max_threshold = 10.0;
        assert_eq!(
            Rio::new(params, 1).unwrap_err().parameter,
            "in_profile.max_threshold"
        );
        let mut params = RioParams::default();
        params.out_profile.max_probability = -0.1;
        assert_eq!(
            Rio::new(params, 1).unwrap_err().parameter,
            "out_profile.max_probability"
        );
        let params = RioParams {
            weight: f64::NAN,
            ..RioParams::default()
        };
        assert_eq!(Rio::new(params, 1).unwrap_err().parameter, "weight");
        let params = RioParams {
            limit: 0,
            ..RioParams::default()
        };
        assert_eq!(Rio::new(params, 1).unwrap_err().parameter, "limit");
    }

    #[test]
    fn base_probabilities_follow_the_formula() {
        let params = RioParams::default();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert_eq!(params.out_profile.base_drop_probability(10.0), 0.0);
        assert!(close(params.out_profile.base_drop_probability(15.0), 0.05));
        assert!(close(params.out_profile.base_drop_probability(20.0), 0.1));
        assert_eq!(params.out_profile.base_drop_probability(20.5), 1.0);
        assert!(close(params.in_profile.base_drop_probability(30.0), 0.01));
        assert!(close(RioParams::spaced_drop_probability(0.05, 0), 0.05));
        assert!(close(RioParams::spaced_drop_probability(0.05, 10), 0.1));
        assert_eq!(RioParams::spaced_drop_probability(0.05, 20), 1.0);
        assert_eq!(RioParams::spaced_drop_probability(0.05, 25), 1.0);
    }

    /// Out-of-profile packets are judged on the total average, in-profile ones on their own:
    /// with 15 packets waiting (total average 15) and in-profile average below 20, only
    /// out-of-profile packets are dropped, at the rate the out-of-profile formula gives.
    #[test]
    fn out_profile_decided_on_total_average() {
        let mut rio = rio_with_unit_weight();
        let level = 15;
        for id in 0..level {
            let _ = rio.enqueue(Instant::ZERO, colored(id, Color::Out));
        }
        let (mut out_arrivals, mut out_drops) = (0u64, 0u64);
        for id in level..level + 100_000 {
            let color = if id % 2 == 0 { Color::In } else { Color::Out };
            let verdict = rio.enqueue(Instant::ZERO, colored(id, color));
            match (color, verdict) {
                (_, Enqueue::Queued) => {
                    rio.dequeue(Instant::ZERO);
                }
                (Color::Out, Enqueue::Dropped(QueueDrop::Early)) => out_drops += 1,
                other => panic!("unexpected {other:?}"),
            }
            out_arrivals += u64::from(color == Color::Out);
            assert_eq!(rio.len_packets(), level as usize);
            assert!(rio.average_in_profile() < 20.0);
        }
        let base = RioParams::default().out_profile.base_drop_probability(15.0);
        let measured = out_drops as f64 / out_arrivals as f64;
        let expected = expected_drop_fraction(base);
        assert!(
            (measured / expected - 1.0).abs() < 0.04,
            "measured {measured}, expected {expected}"
        );
    }

    /// With 35 in-profile packets waiting, in-profile arrivals are dropped at the in-profile
    /// formula's rate while every out-of-profile or unmarked arrival is dropped (the total
    /// average is above the out-of-profile max_threshold).
    #[test]
    fn in_profile_decided_on_in_profile_average() {
        let mut rio = rio_with_unit_weight();
        let level = 35;
        for id in 0..level {
            let _ = rio.enqueue(Instant::ZERO, colored(id, Color::In));
        }
        let (mut in_drops, arrivals) = (0u64, 100_000u64);
        for id in level..level + arrivals {
            match rio.enqueue(Instant::ZERO, colored(id, Color::In)) {
                Enqueue::Queued => {
                    rio.dequeue(Instant::ZERO);
                }
                Enqueue::Dropped(QueueDrop::Early) => in_drops += 1,
                other => panic!("unexpected {other:?}"),
            }
            if id % 100 == 0 {
                for color in [Color::Out, Color::Unmarked] {
                    assert_eq!(
                        rio.enqueue(Instant::ZERO, colored(id, color)),
                        Enqueue::Dropped(QueueDrop::Forced)
                    );
                }
            }
        }
        let base = RioParams::default().in_profile.base_drop_probability(35.0);
        let measured = in_drops as f64 / arrivals as f64;
        let expected = expected_drop_fraction(base);
        assert!(
            (measured / expected - 1.0).abs() < 0.05,
            "measured {measured}, expected {expected}"
        );
    }

    #[test]
    fn averages_are_coupled_like_rio_c() {
        let params = RioParams {
            weight: 0.5,
            limit: 100,
            ..RioParams::default()
        };
        let mut rio = Rio::new(params, 1).unwrap();
        let t = Instant::ZERO;
        let _ = rio.enqueue(t, colored(0, Color::Out));
        let _ = rio.enqueue(t, colored(1, Color::Out));
        // Out arrivals leave the in-profile average alone.
        assert_eq!(rio.average_in_profile(), 0.0);
        assert_eq!(rio.average_total(), 0.5); // 0·0.5 + 0.5·0, then 0·0.5 + 0.5·1
        let _ = rio.enqueue(t, colored(2, Color::In));
        assert_eq!(rio.average_in_profile(), 0.0); // no in-profile packet was waiting
        assert_eq!(rio.average_total(), 0.5 * 0.5 + 0.5 * 2.0);
        let _ = rio.enqueue(t, colored(3, Color::In));
        assert_eq!(rio.average_in_profile(), 0.5);
        assert_eq!(rio.in_profile_waiting(), 2);
    }

    #[test]
    fn averages_age_while_idle() {
        let params = RioParams {
            weight: 0.5,
            ..RioParams::default()
        };
        let mut rio = Rio::new(params, 1).unwrap();
        rio.set_link_rate(4_000_000.0); // 1000 packets of 500 B per second
        for id in 0..4 {
            let _ = rio.enqueue(Instant::ZERO, colored(id, Color::In));
        }
        let before = rio.average_total();
        let idle_start = Instant::from_millis(10);
        while rio.dequeue(idle_start).is_some() {}
        // 5 ms idle = 5 packet times: ave·(1−w)^(5+1) + w·0.
        let _ = rio.enqueue(
            idle_start + Duration::from_millis(5),
            colored(9, Color::Out),
        );
        assert!((rio.average_total() - before * 0.5f64.powi(6)).abs() < 1e-12);
    }

    #[test]
    fn hard_limit_comes_first() {
        let params = RioParams {
            limit: 5,
            ..RioParams::default()
        };
        let mut rio = Rio::new(params, 1).unwrap();
        for id in 0..5 {
            assert_eq!(
                rio.enqueue(Instant::ZERO, colored(id, Color::In)),
                Enqueue::Queued
            );
        }
        assert_eq!(
            rio.enqueue(Instant::ZERO, colored(5, Color::In)),
            Enqueue::Dropped(QueueDrop::Overflow)
        );
        assert_eq!(rio.len_packets(), 5);
        assert_eq!(rio.len_bytes(), 5000);
    }
}
