//! Random Early Detection (Floyd and Jacobson, 1993) as implemented by ns-2's `Queue/RED`.

use tfrc_proto::Instant;

use super::{ewma_with_idle, idle_packets, Enqueue, Fifo, Queue, QueueDrop};
use crate::error::ParameterError;
use crate::packet::PacketMeta;
use crate::rng::{element_rng, ElementRng};

const ELEMENT: &str = "RED queue";

/// Parameters of a [`Red`] queue. Thresholds are in packets (ns-2's packet mode).
///
/// The defaults are ns-2's classic RED defaults (`thresh_ 5`, `maxthresh_ 15`,
/// `q_weight_ 0.002`, `linterm_ 10`, `wait_ true`, `gentle_ false`, `mean_pktsize_ 500`,
/// `setbit_ false`, queue limit 50). ns-2.35 ships "automatic" defaults instead
/// (`thresh_ 0`, `q_weight_ -1`, `gentle_ true`), which derive the parameters from the link;
/// set the fields explicitly to reproduce such a configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct RedParams {
    /// Hard limit: an arrival finding this many packets waiting is dropped (ns-2 `limit_`).
    pub limit: usize,
    /// Lower threshold of the average queue, in packets, where early drops start
    /// (ns-2 `thresh_`).
    pub min_threshold: f64,
    /// Upper threshold, in packets: the early-drop probability reaches `max_probability` there
    /// (ns-2 `maxthresh_`).
    pub max_threshold: f64,
    /// Drop probability at `max_threshold` (ns-2 `1 / linterm_`).
    pub max_probability: f64,
    /// Weight of the newest sample in the average queue, in `(0, 1]` (ns-2 `q_weight_`).
    pub weight: f64,
    /// "Gentle" RED: between `max_threshold` and twice it, the probability rises linearly from
    /// `max_probability` to 1 instead of jumping to 1 (ns-2 `gentle_`).
    pub gentle: bool,
    /// Space drops evenly: no drop until `count·p_b ≥ 1`, then `p_b / (2 − count·p_b)`
    /// (ns-2 `wait_`). Without it, `p_b / (1 − count·p_b)` as in the original paper.
    pub wait: bool,
    /// Average packet size in bytes, used only to count how many packets the link could have
    /// sent while idle (ns-2 `mean_pktsize_`).
    pub mean_packet_size: u32,
    /// Mark ECN-capable packets (set CE) instead of dropping them early (ns-2 `setbit_`).
    /// Forced and overflow drops still drop.
    pub ecn: bool,
}

impl Default for RedParams {
    fn default() -> Self {
        RedParams {
            limit: 50,
            min_threshold: 5.0,
            max_threshold: 15.0,
            max_probability: 0.1,
            weight: 0.002,
            gentle: false,
            wait: true,
            mean_packet_size: 500,
            ecn: false,
        }
    }
}

impl RedParams {
    /// Checks every parameter, naming the first bad one.
    pub fn validate(&self) -> Result<(), ParameterError> {
        super::check_shared(ELEMENT, self.limit, self.weight, self.mean_packet_size)?;
        super::check_drop_curve(
            ELEMENT,
            ["min_threshold", "max_threshold", "max_probability"],
            [self.min_threshold, self.max_threshold, self.max_probability],
            "a finite number of packets greater than min_threshold",
        )?;
        Ok(())
    }

    /// The base drop probability `p_b` for an average queue of `average` packets (ns-2's
    /// `calculate_p_new`): 0 below `min_threshold`, rising linearly to `max_probability` at
    /// `max_threshold`; above it 1, or with `gentle` rising linearly to 1 at twice
    /// `max_threshold`.
    pub fn base_drop_probability(&self, average: f64) -> f64 {
        let p = if average < self.min_threshold {
            0.0
        } else if average < self.max_threshold {
            self.max_probability * (average - self.min_threshold)
                / (self.max_threshold - self.min_threshold)
        } else if self.gentle {
            self.max_probability
                + (1.0 - self.max_probability) * (average - self.max_threshold) / self.max_threshold
        } else {
            1.0
        };
        p.clamp(0.0, 1.0)
    }

    /// The probability actually applied to the `count`-th packet since the last drop (ns-2's
    /// `modify_p`), which spaces drops more evenly than independent trials would.
    pub fn spaced_drop_probability(&self, base: f64, count: u64) -> f64 {
        let scaled = count as f64 * base;
        let p = if self.wait {
            if scaled < 1.0 {
                0.0
            } else if scaled < 2.0 {
                base / (2.0 - scaled)
            } else {
                1.0
            }
        } else if scaled < 1.0 {
            base / (1.0 - scaled)
        } else {
            1.0
        };
        p.min(1.0)
    }
}

/// A RED queue, following ns-2's `REDQueue::enque` in packet mode.
///
/// On each arrival: the average is updated from the queue length *before* the arrival (after
/// ageing it for the packets the link could have sent while idle); if the average is at least
/// `min_threshold` and more than one packet waits, the packet may be dropped early with the
/// spaced probability; an average above the upper threshold (`max_threshold`, or twice it when
/// gentle) forces a drop; an arrival finding `limit` packets waiting overflows. The arriving
/// packet is always the victim (ns-2 `drop_tail_ true`).
#[derive(Debug, Clone)]
pub struct Red {
    params: RedParams,
    fifo: Fifo,
    rng: ElementRng,
    average: f64,
    /// Packets since the last drop (ns-2 `count`).
    count: u64,
    /// The average was above `min_threshold` at the previous arrival (ns-2 `old`).
    above_min_threshold: bool,
    /// Since when the link has been idle (ns-2 `idle_` / `idletime_`).
    idle_since: Option<Instant>,
    /// Average-sized packets per second the link can send (ns-2 `ptc`).
    packets_per_second: Option<f64>,
}

impl Red {
    /// A RED queue; `seed` seeds its random drop decisions.
    pub fn new(params: RedParams, seed: u64) -> Result<Self, ParameterError> {
        params.validate()?;
        Ok(Red {
            params,
            fifo: Fifo::default(),
            rng: element_rng(seed),
            average: 0.0,
            count: 0,
            above_min_threshold: false,
            idle_since: None,
            packets_per_second: None,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &RedParams {
        &self.params
    }

    /// The current average queue, in packets.
    pub fn average(&self) -> f64 {
        self.average
    }
}

impl Queue for Red {
    fn enqueue(&mut self, now: Instant, mut packet: PacketMeta) -> Enqueue {
        let params = &self.params;
        let queue_length = self.fifo.len();
        let idle = idle_packets(self.packets_per_second, self.idle_since.take(), now);
        self.average = ewma_with_idle(self.average, queue_length as f64, params.weight, idle);
        self.count += 1;

        let mut verdict = None;
        let mut marked = false;
        if self.average >= params.min_threshold && queue_length > 1 {
            let upper = if params.gentle {
                2.0 * params.max_threshold
            } else {
                params.max_threshold
            };
            if self.average >= upper {
                verdict = Some(QueueDrop::Forced);
            } else if !self.above_min_threshold {
                // The average just crossed min_threshold: start counting, no drop yet.
                self.count = 1;
                self.above_min_threshold = true;
            } else {
                let base = params.base_drop_probability(self.average);
                let probability = params.spaced_drop_probability(base, self.count);
                let draw = crate::rng::uniform_nonzero(&mut self.rng);
                if draw <= probability {
                    self.count = 0;
                    if params.ecn && packet.ecn_capable {
                        marked = true;
                    } else {
                        verdict = Some(QueueDrop::Early);
                    }
                }
            }
        } else {
            self.above_min_threshold = false;
        }
        if queue_length >= params.limit {
            verdict = Some(QueueDrop::Overflow);
        }

        match verdict {
            Some(reason) => {
                self.count = 0;
                Enqueue::Dropped(reason)
            }
            None => {
                if marked {
                    packet.ce = true;
                }
                self.fifo.push(packet);
                if marked {
                    Enqueue::QueuedWithCongestionMark
                } else {
                    Enqueue::Queued
                }
            }
        }
    }

    fn dequeue(&mut self, now: Instant) -> Option<PacketMeta> {
        let packet = self.fifo.pop();
        self.idle_since = if packet.is_none() { Some(now) } else { None };
        packet
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
        Some(self.average)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn packet(id: u64) -> PacketMeta {
        PacketMeta::new(id, 0, 1000)
    }

    #[test]
    fn validation_names_the_bad_parameter() {
        let bad = |params: RedParams| Red::new(params, 1).unwrap_err().parameter;
        let base = RedParams::default();
        assert_eq!(
            bad(RedParams {
                max_threshold: 5.0,
                ..base.clone()
            }),
            "max_threshold"
        );
        assert_eq!(
            bad(RedParams {
                min_threshold: -1.0,
                ..base.clone()
            }),
            "min_threshold"
        );
        assert_eq!(
            bad(RedParams {
                max_probability: 1.5,
                ..base.clone()
            }),
            "max_probability"
        );
        assert_eq!(
            bad(RedParams {
                max_probability: f64::NAN,
                ..base.clone()
            }),
            "max_probability"
        );
        assert_eq!(
            bad(RedParams {
                weight: 0.0,
                ..base.clone()
            }),
            "weight"
        );
        assert_eq!(
            bad(RedParams {
                limit: 0,
                ..base.clone()
            }),
            "limit"
        );
        assert_eq!(
            bad(RedParams {
                mean_packet_size: 0,
                ..base.clone()
            }),
            "mean_packet_size"
        );
        let message = Red::new(
            RedParams {
                weight: 2.0,
                ..base
            },
            1,
        )
        .unwrap_err()
        .to_string();
        assert!(
            message.contains("RED queue") && message.contains("weight"),
            "{message}"
        );
    }

    #[test]
    fn base_probability_follows_the_red_formula() {
        let classic = RedParams::default(); // 5, 15, 0.1
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert_eq!(classic.base_drop_probability(4.99), 0.0);
        assert!(close(classic.base_drop_probability(5.0), 0.0));
        assert!(close(classic.base_drop_probability(10.0), 0.05));
        assert!(close(classic.base_drop_probability(14.0), 0.09));
        assert_eq!(classic.base_drop_probability(15.0), 1.0);
        let gentle = RedParams {
            gentle: true,
            ..classic
        };
        assert!(close(gentle.base_drop_probability(10.0), 0.05));
        assert!(close(gentle.base_drop_probability(15.0), 0.1));
        // max_p + (1 - max_p)(avg - max)/max: halfway between 15 and 30 gives 0.55.
        assert!(close(gentle.base_drop_probability(22.5), 0.55));
        assert_eq!(gentle.base_drop_probability(30.0), 1.0);
        assert_eq!(gentle.base_drop_probability(100.0), 1.0);
    }

    #[test]
    fn spacing_follows_ns2_modify_p() {
        let wait = RedParams::default();
        assert_eq!(wait.spaced_drop_probability(0.05, 19), 0.0);
        assert!((wait.spaced_drop_probability(0.05, 30) - 0.05 / 0.5).abs() < 1e-12);
        assert_eq!(wait.spaced_drop_probability(0.05, 40), 1.0);
        let no_wait = RedParams {
            wait: false,
            ..wait
        };
        assert!((no_wait.spaced_drop_probability(0.05, 10) - 0.1).abs() < 1e-12);
        assert_eq!(no_wait.spaced_drop_probability(0.05, 20), 1.0);
    }

    #[test]
    fn average_is_the_ns2_ewma_with_idle_decay() {
        let params = RedParams {
            min_threshold: 100.0,
            max_threshold: 200.0,
            limit: 1000,
            weight: 0.25,
            ..RedParams::default()
        };
        let mut red = Red::new(params, 1).unwrap();
        red.set_link_rate(1_000_000.0); // 250 packets of 500 B per second: one every 4 ms.
        let mut expected = 0.0;
        for id in 0..10 {
            expected = expected * 0.75 + 0.25 * id as f64;
            assert_eq!(red.enqueue(Instant::ZERO, packet(id)), Enqueue::Queued);
            assert!((red.average() - expected).abs() < 1e-12);
        }
        let idle_start = Instant::from_millis(100);
        while red.dequeue(idle_start).is_some() {}
        // 41 ms idle = 10 whole packet times (ns-2 truncates): ave·(1−w)^(10+1) + w·0.
        let arrival = idle_start + Duration::from_millis(41);
        let _ = red.enqueue(arrival, packet(99));
        expected *= 0.75f64.powi(11);
        assert!(
            (red.average() - expected).abs() < 1e-12,
            "{}",
            red.average()
        );
    }

    /// Holds the queue at exactly `level` packets (dequeuing one packet per accepted
    /// arrival), offers `warmup` packets, then `arrivals` packets, and returns the early and
    /// forced drops among the latter. With weight 1 the average equals the level.
    fn drops_at_level(
        params: RedParams,
        level: u64,
        warmup: u64,
        arrivals: u64,
        seed: u64,
    ) -> (u64, u64) {
        let mut red = Red::new(
            RedParams {
                limit: 1000,
                ..params
            },
            seed,
        )
        .unwrap();
        let mut id = 0;
        while red.len_packets() < level as usize {
            let _ = red.enqueue(Instant::ZERO, packet(id));
            id += 1;
            assert!(id < 1_000_000, "cannot fill the queue to {level}");
        }
        let (mut early, mut forced) = (0, 0);
        for n in 0..warmup + arrivals {
            id += 1;
            let verdict = red.enqueue(Instant::ZERO, packet(id));
            match verdict {
                Enqueue::Queued => {
                    red.dequeue(Instant::ZERO);
                }
                Enqueue::Dropped(QueueDrop::Early) if n >= warmup => early += 1,
                Enqueue::Dropped(QueueDrop::Forced) if n >= warmup => forced += 1,
                Enqueue::Dropped(QueueDrop::Early | QueueDrop::Forced) => {}
                other => panic!("unexpected {other:?}"),
            }
            assert_eq!(red.len_packets(), level as usize);
        }
        (early, forced)
    }

    /// Long-run drop fraction implied by the textbook formulas: the n-th packet after a drop
    /// is dropped with probability p_n, so the mean gap between drops is Σ P(gap > n).
    fn expected_drop_fraction(base: f64, wait: bool) -> f64 {
        let mut survival = 1.0;
        let mut mean_gap = 0.0;
        for n in 1..100_000u64 {
            mean_gap += survival;
            let scaled = n as f64 * base;
            let p_n = match (wait, scaled) {
                (true, s) if s < 1.0 => 0.0,
                (true, s) if s < 2.0 => base / (2.0 - s),
                (false, s) if s < 1.0 => base / (1.0 - s),
                _ => 1.0,
            };
            survival *= 1.0 - p_n.min(1.0);
            if survival == 0.0 {
                break;
            }
        }
        1.0 / mean_gap
    }

    #[test]
    fn early_drop_rate_matches_the_formula() {
        for (gentle, wait, level) in [
            (false, true, 10),
            (false, false, 10),
            (false, true, 7),
            (true, true, 20),
            (true, false, 17),
        ] {
            let params = RedParams {
                gentle,
                wait,
                weight: 1.0,
                ..RedParams::default()
            };
            let base = params.base_drop_probability(level as f64);
            let arrivals = 60_000;
            let (early, forced) = drops_at_level(params, level, 0, arrivals, 3);
            assert_eq!(forced, 0);
            let measured = early as f64 / arrivals as f64;
            let expected = expected_drop_fraction(base, wait);
            assert!(
                (measured / expected - 1.0).abs() < 0.04,
                "gentle {gentle} wait {wait} level {level}: p_b {base}, measured {measured}, \
                 expected {expected}"
            );
        }
    }

    #[test]
    fn average_above_max_threshold_forces_drops() {
        // The queue can only be held above max_threshold while the average lags behind it,
        // so use a small weight and let the average converge during the warm-up.
        let classic = RedParams {
            weight: 0.05,
            ..RedParams::default()
        };
        let (early, forced) = drops_at_level(classic.clone(), 17, 2000, 1000, 1);
        assert_eq!((early, forced), (0, 1000));
        let gentle = RedParams {
            gentle: true,
            ..classic
        };
        let (early, forced) = drops_at_level(gentle.clone(), 29, 2000, 1000, 1);
        assert_eq!(
            forced, 0,
            "gentle RED only forces drops at twice max_threshold"
        );
        assert!(early > 300, "{early}");
        let (_, forced) = drops_at_level(gentle, 31, 2000, 1000, 1);
        assert_eq!(forced, 1000);
    }

    #[test]
    fn hard_limit_overflows() {
        let params = RedParams {
            limit: 8,
            min_threshold: 50.0,
            max_threshold: 60.0,
            ..RedParams::default()
        };
        let mut red = Red::new(params, 1).unwrap();
        for id in 0..8 {
            assert_eq!(red.enqueue(Instant::ZERO, packet(id)), Enqueue::Queued);
        }
        assert_eq!(
            red.enqueue(Instant::ZERO, packet(8)),
            Enqueue::Dropped(QueueDrop::Overflow)
        );
        assert_eq!(red.len_packets(), 8);
    }

    #[test]
    fn ecn_marks_instead_of_dropping_early() {
        let params = RedParams {
            ecn: true,
            weight: 1.0,
            ..RedParams::default()
        };
        let mut red = Red::new(params, 5).unwrap();
        let mut marked = std::collections::HashSet::new();
        for id in 0..2000 {
            let mut p = packet(id);
            p.ecn_capable = true;
            match red.enqueue(Instant::ZERO, p) {
                Enqueue::QueuedWithCongestionMark => {
                    marked.insert(id);
                }
                Enqueue::Queued => {}
                other => panic!("ECN-capable packet dropped: {other:?}"),
            }
            if red.len_packets() >= 10 {
                let head = red.dequeue(Instant::ZERO).unwrap();
                assert_eq!(head.ce, marked.contains(&head.id));
            }
        }
        assert!(marked.len() > 20, "{}", marked.len());
    }

    #[test]
    fn same_seed_same_drops() {
        let run = |seed| {
            let mut red = Red::new(
                RedParams {
                    weight: 1.0,
                    ..RedParams::default()
                },
                seed,
            )
            .unwrap();
            (0..3000u64)
                .map(|id| {
                    let verdict = red.enqueue(Instant::ZERO, packet(id));
                    if red.len_packets() > 11 {
                        red.dequeue(Instant::ZERO);
                    }
                    verdict
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(42), run(42));
        assert_ne!(run(42), run(43));
    }
}
