//! The closed vocabularies of a claim's fields (`metric`, `relation`, `across`, `aggregate`,
//! `side`, `statistic`): each word is an enum variant, read from claims.toml with the spelling
//! the file uses, so that a word the code does not know is a load error naming the known ones
//! instead of a claim that silently measures nothing.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// Declares a vocabulary: the enum, its words in the documented order (`ALL`), each variant's
/// spelling in claims.toml (`name`), `Display` as that spelling, and `Deserialize` that rejects
/// an unknown word with "unknown FIELD "word" (known: …)".
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $name:ident, $field:literal {
            $($(#[$variant_meta:meta])* $variant:ident = $word:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$variant_meta])* $variant,)+
        }

        impl $name {
            /// Every word, in the documented order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The word as claims.toml spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let word = String::deserialize(deserializer)?;
                $name::ALL
                    .iter()
                    .copied()
                    .find(|known| known.name() == word)
                    .ok_or_else(|| {
                        let known: Vec<&str> = $name::ALL.iter().map(|k| k.name()).collect();
                        serde::de::Error::custom(format!(
                            "unknown {} {word:?} (known: {})",
                            $field,
                            known.join(", ")
                        ))
                    })
            }
        }
    };
}

vocabulary! {
    /// What a claim measures (the keys of claims.toml's `[metrics]`, defined in docs/metrics.md).
    Metric, "metric" {
        /// Bytes sent or delivered per 1 s bin, in kb/s.
        Throughput = "throughput",
        /// Application payload delivered over the run or window, in kb/s.
        Goodput = "goodput",
        /// The receiver's reported p, sampled over time.
        LossEventRate = "loss event rate p",
        /// The sender's RTT estimate, sampled over time.
        ExperiencedRtt = "experienced RTT",
        /// Jain's fairness index over the flows' goodputs.
        JainIndex = "Jain index",
        /// Coefficient of variation of the packets sent per 0.1 s bin.
        Cov = "CoV",
        /// Coefficient of variation of the goodput per 1 s bin.
        BurstinessIndex = "burstiness index",
        /// Packets received over packets sent.
        ReceivingRatio = "receiving ratio",
        /// Mean goodput of the flows (the T2/T1 ratio with its baseline run).
        TcpFriendliness = "TCP-friendliness T2/T1",
        /// Bytes through the bottleneck over its capacity × time.
        LinkUtilization = "link utilization",
        /// Time from a flow's arrival until the flows share fairly.
        ConvergenceTime = "convergence time",
        /// A run's series against its baseline run's, bin by bin (a paired metric).
        SeriesDifference = "series difference",
        /// Time from a flow's start until its 5 s mean rate reaches `level`.
        TimeToLevel = "time to level",
        /// Time after a disturbance until the rate is back.
        RecoveryTime = "recovery time",
    }
}

impl Metric {
    /// Whether the metric gives one figure per run (over all its selected flows) rather than
    /// one per flow, whatever the claim's `aggregate`.
    pub fn is_run_wide(self) -> bool {
        matches!(
            self,
            Metric::JainIndex | Metric::TcpFriendliness | Metric::LinkUtilization
        )
    }
}

vocabulary! {
    /// How our figure is compared with the paper's number.
    Relation, "relation" {
        /// Within ± `tolerance` (10 % by default) of `value`.
        Approx = "approx",
        /// From `min` to `max`.
        Range = "range",
        /// At least `value`, less the tolerance.
        AtLeast = "at_least",
        /// At most `value`, plus the tolerance.
        AtMost = "at_most",
        /// Strictly below `value`.
        Below = "below",
        /// Strictly above `value`.
        Above = "above",
        /// The paper's number printed beside ours, not a criterion.
        Reference = "reference",
        /// No number: see the figure.
        Qualitative = "qualitative",
    }
}

impl Relation {
    /// Whether the relation compares with `value` (and so needs one).
    pub fn needs_value(self) -> bool {
        matches!(
            self,
            Relation::Approx
                | Relation::AtLeast
                | Relation::AtMost
                | Relation::Below
                | Relation::Above
        )
    }

    /// Whether the relation is strict (an interval touching the bound is not wholly inside).
    pub fn is_strict(self) -> bool {
        matches!(self, Relation::Below | Relation::Above)
    }
}

vocabulary! {
    /// How the values of all the selected runs are reduced to one figure.
    Across, "across" {
        /// Their mean.
        Mean = "mean",
        /// The smallest.
        Min = "min",
        /// The largest.
        Max = "max",
        /// The share of values below `cut`.
        ShareBelow = "share_below",
        /// The mean at the largest `along` number over the mean at the smallest.
        LastOverFirst = "last_over_first",
        /// Each next mean along `along` over the previous one: one item per step.
        Steps = "steps",
        /// Spearman's rank correlation of the values with the `along` numbers.
        Spearman = "spearman",
    }
}

impl Across {
    /// Whether the reduction orders the runs by a sweep label (`along`).
    pub fn needs_along(self) -> bool {
        matches!(
            self,
            Across::LastOverFirst | Across::Steps | Across::Spearman
        )
    }
}

vocabulary! {
    /// How the per-flow values of one run are reduced.
    Aggregate, "aggregate" {
        /// Their sum (for `throughput` and `receiving ratio`: of the flows taken together).
        Sum = "sum",
        /// Their mean.
        Mean = "mean",
        /// The first flow's value less the second's.
        Difference = "difference",
    }
}

vocabulary! {
    /// Which side's rate `throughput` takes.
    Side, "side" {
        /// Bytes sent ("the rate of the senders").
        Sender = "sender",
        /// Bytes delivered (the default).
        Receiver = "receiver",
    }
}

/// A statistic of a time series: `mean`, `median`, `min`, `max`, or `pNN` (the NN-th
/// percentile, e.g. `p90`, NN from 0 to 100).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Statistic {
    /// The mean (the default).
    Mean,
    /// The 50th percentile.
    Median,
    /// The smallest value.
    Min,
    /// The largest value.
    Max,
    /// The given percentile, from 0 to 100.
    Percentile(f64),
}

/// A word that is not a statistic; the message says which are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStatistic(pub String);

impl fmt::Display for UnknownStatistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown statistic {:?} (mean, median, min, max or pNN)",
            self.0
        )
    }
}

impl std::error::Error for UnknownStatistic {}

impl Statistic {
    /// The statistic `name` spells.
    ///
    /// # Errors
    /// [`UnknownStatistic`] for any other word, or a percentile outside 0–100.
    pub fn parse(name: &str) -> Result<Statistic, UnknownStatistic> {
        let unknown = || UnknownStatistic(name.to_owned());
        Ok(match name {
            "mean" => Statistic::Mean,
            "median" => Statistic::Median,
            "min" => Statistic::Min,
            "max" => Statistic::Max,
            _ => {
                let percent: f64 = name
                    .strip_prefix('p')
                    .and_then(|digits| digits.parse().ok())
                    .ok_or_else(unknown)?;
                if !(0.0..=100.0).contains(&percent) {
                    return Err(unknown());
                }
                Statistic::Percentile(percent)
            }
        })
    }

    /// The quantile in [0, 1] the statistic takes, `None` for the mean.
    pub fn quantile(self) -> Option<f64> {
        match self {
            Statistic::Mean => None,
            Statistic::Median => Some(0.5),
            Statistic::Min => Some(0.0),
            Statistic::Max => Some(1.0),
            Statistic::Percentile(percent) => Some(percent / 100.0),
        }
    }
}

impl fmt::Display for Statistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statistic::Mean => f.write_str("mean"),
            Statistic::Median => f.write_str("median"),
            Statistic::Min => f.write_str("min"),
            Statistic::Max => f.write_str("max"),
            Statistic::Percentile(percent) => write!(f, "p{percent}"),
        }
    }
}

impl<'de> Deserialize<'de> for Statistic {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Statistic::parse(&name).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A claim field holding `word`, read as claims.toml would.
    fn read<T: for<'de> Deserialize<'de>>(word: &str) -> Result<T, String> {
        #[derive(Deserialize)]
        struct Field<T> {
            word: T,
        }
        toml::from_str::<Field<T>>(&format!("word = {word:?}"))
            .map(|field| field.word)
            .map_err(|error| error.to_string())
    }

    #[test]
    fn words_read_with_the_files_spelling() {
        assert_eq!(read::<Metric>("time to level"), Ok(Metric::TimeToLevel));
        assert_eq!(
            read::<Metric>("TCP-friendliness T2/T1"),
            Ok(Metric::TcpFriendliness)
        );
        assert_eq!(read::<Relation>("at_least"), Ok(Relation::AtLeast));
        assert_eq!(read::<Across>("share_below"), Ok(Across::ShareBelow));
        assert_eq!(read::<Aggregate>("difference"), Ok(Aggregate::Difference));
        assert_eq!(read::<Side>("sender"), Ok(Side::Sender));
        assert_eq!(read::<Statistic>("p90"), Ok(Statistic::Percentile(90.0)));
        for metric in Metric::ALL {
            assert_eq!(read::<Metric>(metric.name()), Ok(*metric));
        }
    }

    #[test]
    fn an_unknown_word_is_a_load_error_naming_the_known_ones() {
        let error = read::<Metric>("speed").unwrap_err();
        assert!(
            error.contains("unknown metric \"speed\"")
                && error.contains("known: throughput, goodput, loss event rate p")
                && error.contains("time to level, recovery time"),
            "{error}"
        );
        let error = read::<Relation>("nearly").unwrap_err();
        assert!(
            error.contains("unknown relation \"nearly\"")
                && error.contains(
                    "(known: approx, range, at_least, at_most, below, above, reference, \
                     qualitative)"
                ),
            "{error}"
        );
        let error = read::<Across>("median").unwrap_err();
        assert!(
            error.contains("unknown across \"median\" (known: mean, min, max, share_below"),
            "{error}"
        );
        let error = read::<Statistic>("mode").unwrap_err();
        assert!(
            error.contains("unknown statistic \"mode\" (mean, median, min, max or pNN)"),
            "{error}"
        );
        assert!(read::<Statistic>("p101").is_err());
    }

    #[test]
    fn statistics_are_quantiles_and_print_as_written() {
        assert_eq!(
            Statistic::parse("median").map(Statistic::quantile),
            Ok(Some(0.5))
        );
        assert_eq!(Statistic::parse("mean").map(Statistic::quantile), Ok(None));
        assert_eq!(
            Statistic::parse("p10").map(Statistic::quantile),
            Ok(Some(0.1))
        );
        for name in ["mean", "median", "min", "max", "p10", "p90", "p99.5"] {
            assert_eq!(Statistic::parse(name).unwrap().to_string(), name);
        }
    }
}
