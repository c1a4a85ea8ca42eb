//! Random loss models applied to packets entering a link direction.

use core::time::Duration;

use rand::Rng;
use tfrc_proto::time::{duration_from_secs, secs};
use tfrc_proto::Instant;

use crate::error::{check_probability, ParameterError};
use crate::rng::{element_rng, exponential, ElementRng};

const ELEMENT: &str = "loss model";

/// A half-open interval of time `[start, stop)` during which a loss model is active.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeWindow {
    /// First instant at which the model is active.
    pub start: Instant,
    /// First instant at which it is no longer active; `None` = until the end.
    pub stop: Option<Instant>,
}

impl TimeWindow {
    /// Whether `now` is inside the window.
    pub fn contains(&self, now: Instant) -> bool {
        let before_stop = match self.stop {
            Some(stop) => now < stop,
            None => true,
        };
        now >= self.start && before_stop
    }
}

/// Parameters of a Gilbert–Elliott two-state loss channel, with per-packet transitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GilbertElliottParams {
    /// Probability of moving from the good to the bad state after a packet.
    pub good_to_bad: f64,
    /// Probability of moving from the bad to the good state after a packet.
    pub bad_to_good: f64,
    /// Loss probability of a packet in the good state (0 in Gilbert's original model).
    pub loss_in_good: f64,
    /// Loss probability of a packet in the bad state (1 in Gilbert's original model).
    pub loss_in_bad: f64,
}

impl GilbertElliottParams {
    /// Gilbert's model: no loss in the good state, every packet lost in the bad state, so
    /// loss bursts are exactly the bad periods.
    pub fn gilbert(good_to_bad: f64, bad_to_good: f64) -> Self {
        GilbertElliottParams {
            good_to_bad,
            bad_to_good,
            loss_in_good: 0.0,
            loss_in_bad: 1.0,
        }
    }

    fn validate(&self) -> Result<(), ParameterError> {
        check_probability(ELEMENT, "good_to_bad", self.good_to_bad)?;
        check_probability(ELEMENT, "bad_to_good", self.bad_to_good)?;
        check_probability(ELEMENT, "loss_in_good", self.loss_in_good)?;
        check_probability(ELEMENT, "loss_in_bad", self.loss_in_bad)?;
        if self.good_to_bad + self.bad_to_good == 0.0 {
            return Err(ParameterError::new(
                ELEMENT,
                "bad_to_good",
                self.bad_to_good,
                "a positive transition probability in at least one direction",
            ));
        }
        Ok(())
    }

    /// Long-run fraction of packets seen in the bad state: `p_gb / (p_gb + p_bg)`.
    pub fn bad_state_fraction(&self) -> f64 {
        self.good_to_bad / (self.good_to_bad + self.bad_to_good)
    }

    /// Long-run loss rate: `π_good · h_good + π_bad · h_bad`.
    pub fn loss_rate(&self) -> f64 {
        let bad = self.bad_state_fraction();
        (1.0 - bad) * self.loss_in_good + bad * self.loss_in_bad
    }

    /// Mean number of consecutive packets spent in the bad state: `1 / p_bg` (for Gilbert's
    /// model, the mean loss-burst length).
    pub fn mean_bad_run(&self) -> f64 {
        1.0 / self.bad_to_good
    }
}

/// Which random process decides losses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossKind {
    /// Each packet is lost independently with this probability.
    Bernoulli {
        /// Loss probability per packet.
        probability: f64,
    },
    /// Losses separated by exponentially distributed *times* with this mean: after a loss at
    /// `t` (or from the first packet seen), the first packet arriving at or after
    /// `t + gap` is lost. A time-based gap keeps the loss process independent of the traffic
    /// rate (a packet-based exponential gap would just be a Bernoulli process).
    ExponentialGaps {
        /// Mean time between losses.
        mean_gap: Duration,
    },
    /// Gilbert–Elliott two-state channel.
    GilbertElliott(GilbertElliottParams),
}

/// Parameters of a [`LossModel`], for building one from a scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossConfig {
    /// The random process.
    pub kind: LossKind,
    /// When it is active; `None` = always.
    pub window: Option<TimeWindow>,
}

impl LossConfig {
    /// Builds the model; `seed` seeds its random stream.
    pub fn build(&self, seed: u64) -> Result<LossModel, ParameterError> {
        LossModel::new(self.kind, self.window, seed)
    }
}

/// Mutable state of the random process.
#[derive(Debug, Clone, Copy)]
enum State {
    Stateless,
    NextLossAt(Option<Instant>),
    GilbertElliott { bad: bool },
}

/// A loss model: decides, for each packet entering a link direction, whether it is lost.
///
/// Outside its time window a model lets every packet through and its state does not move
/// (the Gilbert–Elliott chain does not advance; exponential gaps start counting from the first
/// packet seen inside the window).
#[derive(Debug, Clone)]
pub struct LossModel {
    kind: LossKind,
    window: Option<TimeWindow>,
    state: State,
    rng: ElementRng,
}

impl LossModel {
    /// A model of `kind`, active during `window` (always if `None`), seeded by `seed`.
    pub fn new(
        kind: LossKind,
        window: Option<TimeWindow>,
        seed: u64,
    ) -> Result<Self, ParameterError> {
        let state = match kind {
            LossKind::Bernoulli { probability } => {
                check_probability(ELEMENT, "rate", probability)?;
                State::Stateless
            }
            LossKind::ExponentialGaps { mean_gap } => {
                if mean_gap.is_zero() {
                    return Err(ParameterError::new(
                        ELEMENT,
                        "mean_gap",
                        format!("{mean_gap:?}"),
                        "a positive duration",
                    ));
                }
                State::NextLossAt(None)
            }
            LossKind::GilbertElliott(params) => {
                params.validate()?;
                State::GilbertElliott { bad: false }
            }
        };
        if let Some(TimeWindow {
            start,
            stop: Some(stop),
        }) = window
        {
            if stop <= start {
                return Err(ParameterError::new(
                    ELEMENT,
                    "stop",
                    stop,
                    "a time after start",
                ));
            }
        }
        Ok(LossModel {
            kind,
            window,
            state,
            rng: element_rng(seed),
        })
    }

    /// Independent losses with probability `probability`.
    pub fn bernoulli(probability: f64, seed: u64) -> Result<Self, ParameterError> {
        Self::new(LossKind::Bernoulli { probability }, None, seed)
    }

    /// Losses separated by exponentially distributed times of mean `mean_gap`.
    pub fn exponential_gaps(mean_gap: Duration, seed: u64) -> Result<Self, ParameterError> {
        Self::new(LossKind::ExponentialGaps { mean_gap }, None, seed)
    }

    /// A Gilbert–Elliott channel.
    pub fn gilbert_elliott(
        params: GilbertElliottParams,
        seed: u64,
    ) -> Result<Self, ParameterError> {
        Self::new(LossKind::GilbertElliott(params), None, seed)
    }

    /// The same model, active only during `window`.
    pub fn with_window(self, window: TimeWindow) -> Result<Self, ParameterError> {
        let LossModel { kind, rng, .. } = self;
        let mut model = Self::new(kind, Some(window), 0)?;
        model.rng = rng;
        Ok(model)
    }

    /// The random process.
    pub fn kind(&self) -> &LossKind {
        &self.kind
    }

    /// Whether the model is active at `now`.
    pub fn is_active(&self, now: Instant) -> bool {
        match self.window {
            Some(window) => window.contains(now),
            None => true,
        }
    }

    /// Decides whether the packet arriving at `now` is lost.
    pub fn should_drop(&mut self, now: Instant) -> bool {
        if !self.is_active(now) {
            return false;
        }
        match (&self.kind, &mut self.state) {
            (LossKind::Bernoulli { probability }, _) => self.rng.gen::<f64>() < *probability,
            (LossKind::ExponentialGaps { mean_gap }, State::NextLossAt(next)) => {
                let mean = secs(*mean_gap);
                match *next {
                    Some(at) if now >= at => {
                        *next = Some(now + duration_from_secs(exponential(&mut self.rng, mean)));
                        true
                    }
                    Some(_) => false,
                    None => {
                        *next = Some(now + duration_from_secs(exponential(&mut self.rng, mean)));
                        false
                    }
                }
            }
            (LossKind::GilbertElliott(params), State::GilbertElliott { bad }) => {
                let loss_probability = if *bad {
                    params.loss_in_bad
                } else {
                    params.loss_in_good
                };
                let lost = self.rng.gen::<f64>() < loss_probability;
                let switch = if *bad {
                    params.bad_to_good
                } else {
                    params.good_to_bad
                };
                if self.rng.gen::<f64>() < switch {
                    *bad = !*bad;
                }
                lost
            }
            // The state always matches the kind (set together in `new`).
            _ => false,
        }
    }

    /// For Gilbert–Elliott, whether the channel is in the bad state.
    pub fn in_bad_state(&self) -> Option<bool> {
        match self.state {
            State::GilbertElliott { bad } => Some(bad),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_bad_parameter() {
        assert_eq!(LossModel::bernoulli(1.1, 0).unwrap_err().parameter, "rate");
        assert_eq!(
            LossModel::bernoulli(f64::NAN, 0).unwrap_err().parameter,
            "rate"
        );
        assert_eq!(
            LossModel::exponential_gaps(Duration::ZERO, 0)
                .unwrap_err()
                .parameter,
            "mean_gap"
        );
        let bad = GilbertElliottParams {
            loss_in_bad: 2.0,
            ..GilbertElliottParams::gilbert(0.1, 0.1)
        };
        assert_eq!(
            LossModel::gilbert_elliott(bad, 0).unwrap_err().parameter,
            "loss_in_bad"
        );
        assert!(LossModel::gilbert_elliott(GilbertElliottParams::gilbert(0.0, 0.0), 0).is_err());
        let window = TimeWindow {
            start: Instant::from_secs(5),
            stop: Some(Instant::from_secs(5)),
        };
        assert_eq!(
            LossModel::bernoulli(0.1, 0)
                .unwrap()
                .with_window(window)
                .unwrap_err()
                .parameter,
            "stop"
        );
    }

    #[test]
    fn bernoulli_rate_matches() {
        let mut model = LossModel::bernoulli(0.05, 11).unwrap();
        let n = 200_000;
        let lost = (0..n).filter(|_| model.should_drop(Instant::ZERO)).count();
        let rate = lost as f64 / n as f64;
        assert!((rate / 0.05 - 1.0).abs() < 0.03, "{rate}");
        let mut never = LossModel::bernoulli(0.0, 1).unwrap();
        let mut always = LossModel::bernoulli(1.0, 1).unwrap();
        assert!((0..1000).all(|_| !never.should_drop(Instant::ZERO)));
        assert!((0..1000).all(|_| always.should_drop(Instant::ZERO)));
    }

    #[test]
    fn window_limits_losses() {
        let window = TimeWindow {
            start: Instant::from_secs(30),
            stop: Some(Instant::from_secs(90)),
        };
        let mut model = LossModel::bernoulli(1.0, 1)
            .unwrap()
            .with_window(window)
            .unwrap();
        let lost: Vec<u64> = (0..120)
            .filter(|&s| model.should_drop(Instant::from_secs(s)))
            .collect();
        assert_eq!(lost, (30..90).collect::<Vec<_>>());
    }

    /// Gilbert–Elliott: long-run loss rate and mean burst length match the parameters.
    #[test]
    fn gilbert_elliott_rate_and_bursts_match() {
        // Gilbert's model: bursts are the bad periods, mean length 1/p_bg = 4.
        let params = GilbertElliottParams::gilbert(0.01, 0.25);
        let mut model = LossModel::gilbert_elliott(params, 5).unwrap();
        let n = 400_000;
        let (mut lost, mut bursts, mut previous) = (0u64, 0u64, false);
        for _ in 0..n {
            let now_lost = model.should_drop(Instant::ZERO);
            lost += u64::from(now_lost);
            bursts += u64::from(now_lost && !previous);
            previous = now_lost;
        }
        let rate = lost as f64 / n as f64;
        let mean_burst = lost as f64 / bursts as f64;
        assert!((rate / params.loss_rate() - 1.0).abs() < 0.05, "{rate}");
        assert!((mean_burst / 4.0 - 1.0).abs() < 0.05, "{mean_burst}");

        // General Gilbert–Elliott: loss in both states.
        let params = GilbertElliottParams {
            good_to_bad: 0.02,
            bad_to_good: 0.2,
            loss_in_good: 0.01,
            loss_in_bad: 0.5,
        };
        let mut model = LossModel::gilbert_elliott(params, 6).unwrap();
        let (mut lost, mut bad_packets) = (0u64, 0u64);
        for _ in 0..n {
            bad_packets += u64::from(model.in_bad_state() == Some(true));
            lost += u64::from(model.should_drop(Instant::ZERO));
        }
        let rate = lost as f64 / n as f64;
        // π_bad = 0.02/0.22; rate = π_good·0.01 + π_bad·0.5 ≈ 0.0545.
        assert!((rate / params.loss_rate() - 1.0).abs() < 0.05, "{rate}");
        let bad_fraction = bad_packets as f64 / n as f64;
        assert!((bad_fraction / params.bad_state_fraction() - 1.0).abs() < 0.05);
    }

    #[test]
    fn exponential_gaps_have_the_right_mean() {
        // One packet per millisecond, mean gap 100 ms: a loss every ~100.5 ms (the gap plus
        // the wait for the next packet).
        let mut model = LossModel::exponential_gaps(Duration::from_millis(100), 3).unwrap();
        let mut losses = Vec::new();
        for ms in 0..400_000u64 {
            if model.should_drop(Instant::from_millis(ms)) {
                losses.push(ms);
            }
        }
        let mean_gap = (losses[losses.len() - 1] - losses[0]) as f64 / (losses.len() - 1) as f64;
        assert!((mean_gap / 100.5 - 1.0).abs() < 0.05, "{mean_gap}");
        // Loss instants do not depend on the packet rate: at most one loss per gap.
        assert!(losses.windows(2).all(|w| w[1] > w[0]));
    }
}
