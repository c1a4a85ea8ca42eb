//! One configuration for sender and receiver, standard TFRC and its extensions alike.

use core::time::Duration;

/// Veno loss differentiation (Zhou et al., "An Enhancement of TFRC over Wireless Networks").
///
/// The sender puts its backlog estimate N = X·(RTT − BaseRTT)/s in every data packet; when the
/// receiver closes a loss interval at a loss event seen while N < β, it counts that interval α
/// times its length, lowering p for losses that Veno deems not caused by congestion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Veno {
    /// Threshold β in packets: N < β means "non-congestion loss". Paper default 1.
    pub beta: f64,
    /// Stretch factor α for non-congestion loss intervals. Paper default 3.
    pub alpha: f64,
}

impl Default for Veno {
    fn default() -> Self {
        Veno {
            beta: 1.0,
            alpha: 3.0,
        }
    }
}

/// Which reading of TFRC the core follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// RFC 5348 as written (the default).
    #[default]
    Rfc5348,
}

/// Configuration of a TFRC [`crate::Sender`] and [`crate::Receiver`].
///
/// Extensions are options, not forks: gTFRC is `target_rate`, several feedbacks per RTT is
/// `rtt_ref`, Veno differentiation is `veno`. `Config::default()` is plain RFC 5348 TFRC.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Segment size s in bytes used by the throughput equation and by the sender's packets
    /// (header included). Default 1000.
    pub packet_size: u32,
    /// gTFRC target rate g in bytes/s: the sender uses G = max(g, X). `None` = standard TFRC.
    pub target_rate: Option<f64>,
    /// Feedbacks per RTT: the receiver sends N_fb = max(int(RTT/RTT_ref), 1) reports per RTT,
    /// evenly spread. `None` = standard TFRC (one per RTT).
    pub rtt_ref: Option<Duration>,
    /// Veno loss differentiation at the receiver. `None` = standard TFRC. The sender always
    /// reports N; only the receiver acts on it.
    pub veno: Option<Veno>,
    /// History discounting of old loss intervals (RFC 5348 §5.5, optional). Default off.
    pub history_discounting: bool,
    /// Oscillation prevention by √RTT spacing (RFC 5348 §4.5, optional). Default off.
    pub oscillation_damping: bool,
    /// Timer granularity t_gran of the driver (RFC 5348 §4.6): packets may leave up to
    /// t_delta = min(t_ipi/2, t_gran/2) early. Default 1 ms; zero sends exactly on schedule.
    pub timer_granularity: Duration,
    /// Maximum back-off interval t_mbi (RFC 5348 §4.3): the rate never falls below s/t_mbi.
    /// Default 64 s.
    pub max_backoff_interval: Duration,
    /// Which reading of the protocol to follow.
    pub profile: Profile,
    /// Most gaps (missing sequence numbers) the receiver tracks at once; larger jumps count the
    /// oldest gaps as lost immediately. Bounds receiver memory against hostile input.
    pub max_tracked_gaps: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            packet_size: 1000,
            target_rate: None,
            rtt_ref: None,
            veno: None,
            history_discounting: false,
            oscillation_damping: false,
            timer_granularity: Duration::from_millis(1),
            max_backoff_interval: Duration::from_secs(64),
            profile: Profile::Rfc5348,
            max_tracked_gaps: 4096,
        }
    }
}

/// A configuration value outside its domain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// Packet size below the data header or above 65507 bytes (largest UDP payload).
    #[error("packet_size must be between {min} and 65507 bytes, got {got}")]
    PacketSize {
        /// The smallest allowed size.
        min: usize,
        /// The value given.
        got: u32,
    },
    /// A rate that is not a positive finite number.
    #[error("target_rate must be a positive finite number of bytes/s, got {0}")]
    TargetRate(f64),
    /// A zero RTT_ref.
    #[error("rtt_ref must be positive")]
    RttRef,
    /// Veno parameters out of range.
    #[error("veno beta must be >= 0 and alpha >= 1 (finite), got beta {beta}, alpha {alpha}")]
    Veno {
        /// β given.
        beta: f64,
        /// α given.
        alpha: f64,
    },
    /// t_mbi of zero.
    #[error("max_backoff_interval must be positive")]
    MaxBackoff,
    /// No room to track gaps.
    #[error("max_tracked_gaps must be at least 1")]
    MaxTrackedGaps,
}

impl Config {
    /// Checks every field; the sender and receiver constructors call this.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let min = crate::wire::DATA_HEADER_LEN;
        if (self.packet_size as usize) < min || self.packet_size > 65_507 {
            return Err(ConfigError::PacketSize {
                min,
                got: self.packet_size,
            });
        }
        if let Some(g) = self.target_rate {
            if !(g.is_finite() && g > 0.0) {
                return Err(ConfigError::TargetRate(g));
            }
        }
        if self.rtt_ref == Some(Duration::ZERO) {
            return Err(ConfigError::RttRef);
        }
        if let Some(v) = self.veno {
            if !(v.beta.is_finite() && v.beta >= 0.0 && v.alpha.is_finite() && v.alpha >= 1.0) {
                return Err(ConfigError::Veno {
                    beta: v.beta,
                    alpha: v.alpha,
                });
            }
        }
        if self.max_backoff_interval.is_zero() {
            return Err(ConfigError::MaxBackoff);
        }
        if self.max_tracked_gaps == 0 {
            return Err(ConfigError::MaxTrackedGaps);
        }
        Ok(())
    }

    /// s as f64 bytes.
    pub(crate) fn s(&self) -> f64 {
        f64::from(self.packet_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_bad_values_are_named() {
        assert!(Config::default().validate().is_ok());
        let bad = Config {
            packet_size: 10,
            ..Config::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("packet_size"));
        let bad = Config {
            target_rate: Some(f64::NAN),
            ..Config::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("target_rate"));
        let bad = Config {
            veno: Some(Veno {
                beta: 1.0,
                alpha: 0.5,
            }),
            ..Config::default()
        };
        assert!(bad.validate().unwrap_err().to_string().contains("alpha"));
        let bad = Config {
            rtt_ref: Some(Duration::ZERO),
            ..Config::default()
        };
        assert!(bad.validate().is_err());
    }
}
