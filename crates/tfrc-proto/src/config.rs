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

/// TFRC-SP, the small-packet variant of TFRC (RFC 4828), for flows such as VoIP that send
/// small packets at most 100 times a second and want the rate in bytes/s of a TCP flow with
/// large segments. What it changes, each rule quoted from RFC 4828 §3 where it is applied:
/// the equation's s is the nominal segment size ([`SmallPackets::nominal_segment_size`]), the
/// rate is reduced by s_true/(s_true + H) ([`SmallPackets::header_size`]), packets are at least
/// [`SMALL_PACKET_MIN_INTERVAL`] apart, and loss intervals of at most two RTTs count each lost
/// packet ([`crate::loss_history`]). The first loss interval is derived with the nominal size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmallPackets {
    /// The nominal segment size s in bytes used in the throughput equation. RFC 4828 §3: "The
    /// nominal segment size s defaults to 1460 bytes ... If the endpoint knows the MTU ... of
    /// the path and the derived MSS ... is less than 1460 bytes, then the endpoint SHOULD set
    /// the nominal segment size s to MSS bytes."
    pub nominal_segment_size: u32,
    /// H, "the expected size in bytes of network and transport headers to be used on the TFRC
    /// connection's packets" (RFC 4828 §3): "The H parameter is set to the constant 40 bytes",
    /// though a connection "MAY instead use a more precise estimate of H".
    pub header_size: u32,
}

impl Default for SmallPackets {
    fn default() -> Self {
        SmallPackets {
            nominal_segment_size: 1460,
            header_size: 40,
        }
    }
}

/// TFRC-SP's Min Interval between packets. RFC 4828 §3: "TFRC-SP enforces a Min Interval
/// between packets of 10 ms. A flow that wishes its transport protocol to exceed this Min
/// Interval MUST use the conventional TFRC equations, rather than TFRC-SP."
pub const SMALL_PACKET_MIN_INTERVAL: Duration = Duration::from_millis(10);

/// Which reading of TFRC the core follows.
///
/// Both profiles run in the same [`crate::Sender`] and [`crate::Receiver`]; the profile only
/// switches the rules that differ. Sender and receiver must use the same profile (the ns-2
/// profile's receiver relies on the round id the ns-2 sender writes in each data packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// RFC 5348 as written (the default).
    #[default]
    Rfc5348,
    /// ns-2.35's `Agent/TFRC` / `Agent/TFRCSink` with their default Tcl parameters, so that a
    /// side-by-side run separates "our code differs from ns-2" from "the RFC differs from ns-2".
    /// Use [`Config::ns2`] to also get ns-2's defaults for the options shared with the RFC
    /// profile (history discounting `discount_ 1`, √RTT spacing `ca_ 1`). What changes, with the
    /// ns-2 source of each rule (`tcp/tfrc.cc`, `tcp/tfrc-sink.cc`, `tcp/formula.h`):
    ///
    /// Sender (`TfrcAgent`):
    /// - Starts at `InitRate_` = 300 bytes/s with a no-feedback timer of 2s/X (`start()`).
    /// - Slow start (`slowstart()`): the first two feedbacks set the RFC 3390 rate
    ///   k·s/R (k = 4, 3, 2 packets for s ≤ 1095, < 2190, larger); later ones double the rate at
    ///   most once per R, capped by 2·X_recv, and the rate creeps up packet by packet toward the
    ///   new value (`slow_increase_`, in `nextpkt()`). Each slow-start feedback sends a packet at
    ///   once (`nextpkt()` from `recv()`).
    /// - The first feedback with p > 0 sets X = X_calc with no X_recv cap (`recv()`).
    /// - After slow start (`increase_rate()`): when X_calc > X the rate grows by
    ///   s/R·min((t − t_last_change)/R, 2) — about one packet per RTT per RTT — capped at
    ///   min(X_calc, max(2·X_recv, s/R)); otherwise (`decrease_rate()`) X = min(X_calc,
    ///   max(2·X_recv, s/R)). Only the latest X_recv counts (no X_recv set), and the cap is never
    ///   below s/R.
    /// - RTT: EWMA with `df_` = 0.95 (q = 0.9 in the RFC) (`update_rtt()`); the equation's
    ///   t_RTO comes from a TCP-style estimator with `tcp_tick_` = 100 ms ticks
    ///   (srtt + 4·rttvar, in ticks), not 4R; the equation caps its RTO factor at 1
    ///   ([`crate::equation::throughput_ns2`], `p_to_b()`).
    /// - Packets are spaced by s/(X·R_sqmean/√R_sample) with `ca_` (the RFC's optional §4.5
    ///   √RTT damping), and a rate change does not move the packet already scheduled.
    /// - No-feedback timer max(2R, 2s/X) (`recv()`); on expiry it halves X itself (or, after a
    ///   data-limited period, does not go below the RFC 3390 rate) and sends a packet at once
    ///   (`reduce_rate_on_no_feedback()`). The RFC's t_mbi floor is kept only as a safety floor.
    /// - Data packets carry ns-2's `round_id` (feedbacks received plus timer expiries) and
    ///   `UrgentFlag` (set until the first feedback and after each expiry) in the header flags.
    /// - With [`Config::ns2_use_headers`] (`useHeaders_ true`) each packet carries
    ///   `packet_size` bytes plus the 32-byte header on the wire; the equation uses
    ///   `packet_size`.
    ///
    /// Receiver (`TfrcSinkAgent`):
    /// - A gap is a loss as soon as one later packet arrives (`numPkts_ 1`; the RFC waits for
    ///   three). Loss times are interpolated between the send timestamps of the packets around
    ///   the gap, and a loss starts a new event only if it is more than R after the event's
    ///   start and was revealed by a packet of a newer round (`new_loss()`, `PreciseLoss_ 1`).
    /// - The first loss ends slow start: the synthetic interval is 1/p from ns-2's coarse
    ///   inverse (`adjust_history()`, `b_to_p()`), reported at once.
    /// - Loss intervals (`est_loss_WALI()` with `smooth_ 1`): the open interval excludes the
    ///   packet that started the event, and with fewer than eight closed intervals the
    ///   open-interval average includes all of them.
    /// - Feedback (`recv()`, `nextpkt()`, `sendpkt()`): on a data packet when at least
    ///   R/NumFeedback passed since the last report, on every new loss event, and on urgent
    ///   packets; a timer at 1.5·R/NumFeedback sends one when data arrived since the last
    ///   report. NumFeedback is N_fb of the feedbacks-per-RTT extension (1 without `rtt_ref`).
    /// - X_recv (`est_thput()`) is packets over the time since the last report when that is at
    ///   least R, else packets received in the last R over R; times `packet_size`.
    Ns2,
}

/// Configuration of a TFRC [`crate::Sender`] and [`crate::Receiver`].
///
/// Extensions are options, not forks: gTFRC is `target_rate`, several feedbacks per RTT is
/// `rtt_ref`, Veno differentiation is `veno`. `Config::default()` is plain RFC 5348 TFRC.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Segment size s in bytes: the payload of a full-size packet, which the throughput
    /// equation uses. RFC 5348 §3.1: "s is the segment size in bytes (excluding IP and
    /// transport protocol headers)", so the 32-byte TFRC header travels on top: a full packet
    /// is `packet_size + 32` bytes on the wire (as ns-2's `useHeaders_ true`). Only the ns-2
    /// profile with [`Config::ns2_use_headers`] off counts the header inside s. Default 1000.
    pub packet_size: u32,
    /// gTFRC target rate g in bytes/s: the sender uses G = max(g, X). `None` = standard TFRC.
    pub target_rate: Option<f64>,
    /// Feedbacks per RTT: the receiver sends N_fb = max(int(RTT/RTT_ref), 1) reports per RTT,
    /// evenly spread. `None` = standard TFRC (one per RTT).
    pub rtt_ref: Option<Duration>,
    /// A fixed number of feedbacks per RTT, whatever the RTT (ns-2's `NumFeedback_`, as paper
    /// 002 ran it in ns-2.33); takes precedence over `rtt_ref`. `None` = `rtt_ref`'s rule.
    pub feedbacks_per_rtt: Option<u32>,
    /// Veno loss differentiation at the receiver. `None` = standard TFRC. The sender always
    /// reports N; only the receiver acts on it.
    pub veno: Option<Veno>,
    /// TFRC-SP (RFC 4828) at sender and receiver. `None` = standard TFRC. Only under the
    /// RFC 5348 profile (ns-2's own `voip_` mode is run by the ns-2 translator).
    pub small_packets: Option<SmallPackets>,
    /// History discounting of old loss intervals (RFC 5348 §5.5, optional). Default off.
    pub history_discounting: bool,
    /// Oscillation prevention by √RTT spacing (RFC 5348 §4.5, optional). Default off.
    pub oscillation_damping: bool,
    /// Timer granularity t_gran of the driver (RFC 5348 §4.6): packets may leave up to
    /// t_delta = min(t_ipi/2, t_gran/2) early, and a sender scheduled late may catch up at most
    /// max(t_ipi, t_gran) of its schedule in one burst. Default 1 ms; zero sends exactly on
    /// schedule and catches up at most one t_ipi.
    pub timer_granularity: Duration,
    /// Maximum back-off interval t_mbi (RFC 5348 §4.3): the rate never falls below s/t_mbi.
    /// Default 64 s.
    pub max_backoff_interval: Duration,
    /// Which reading of the protocol to follow.
    pub profile: Profile,
    /// ns-2 profile only (`useHeaders_`): the 32-byte header travels on top of `packet_size`
    /// bytes of payload, so packets are `packet_size + 32` bytes on the wire while the equation
    /// uses s = `packet_size` (what RFC 5348 does too). When false, ns-2's `useHeaders_ false`:
    /// packets are `packet_size` bytes in all, header included. Default true, as in ns-2.35.
    /// The RFC 5348 profile ignores it.
    pub ns2_use_headers: bool,
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
            feedbacks_per_rtt: None,
            veno: None,
            small_packets: None,
            history_discounting: false,
            oscillation_damping: false,
            timer_granularity: Duration::from_millis(1),
            max_backoff_interval: Duration::from_secs(64),
            profile: Profile::Rfc5348,
            ns2_use_headers: true,
            max_tracked_gaps: 4096,
        }
    }
}

/// A configuration value outside its domain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// Packet size below the smallest allowed (1 byte of payload, or the data header where s
    /// includes it) or above 65507 bytes (largest UDP payload) on the wire.
    #[error("packet_size must be between {min} and {max} bytes, got {got}")]
    PacketSize {
        /// The smallest allowed size.
        min: usize,
        /// The largest allowed size (65507, less the header when it travels outside s).
        max: u32,
        /// The value given.
        got: u32,
    },
    /// A rate that is not a positive finite number.
    #[error("target_rate must be a positive finite number of bytes/s, got {0}")]
    TargetRate(f64),
    /// A fixed number of feedbacks per RTT of zero.
    #[error("feedbacks_per_rtt must be at least 1")]
    ZeroFeedbacksPerRtt,
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
    /// TFRC-SP with a nominal segment size of zero.
    #[error("TFRC-SP's nominal segment size must be at least 1 byte")]
    SmallPacketSegmentSize,
    /// TFRC-SP asked under the ns-2 profile.
    #[error(
        "TFRC-SP (RFC 4828) is implemented under the RFC 5348 profile only; run ns-2's own \
         small-packet mode (voip_) with the ns-2 translator"
    )]
    SmallPacketsUnderNs2,
}

impl Config {
    /// ns-2.35's defaults: [`Profile::Ns2`] with history discounting (`discount_ 1`) and √RTT
    /// spacing (`ca_ 1`) on and the header counted on the wire only (`useHeaders_ true`).
    /// Other fields as in [`Config::default`].
    pub fn ns2() -> Config {
        Config {
            profile: Profile::Ns2,
            history_discounting: true,
            oscillation_damping: true,
            ns2_use_headers: true,
            ..Config::default()
        }
    }

    /// Checks every field; the sender and receiver constructors call this.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let min = if self.header_outside_s() > 0 {
            1
        } else {
            crate::wire::DATA_HEADER_LEN
        };
        let max = 65_507 - self.header_outside_s() as u32;
        if (self.packet_size as usize) < min || self.packet_size > max {
            return Err(ConfigError::PacketSize {
                min,
                max,
                got: self.packet_size,
            });
        }
        if let Some(g) = self.target_rate {
            if !(g.is_finite() && g > 0.0) {
                return Err(ConfigError::TargetRate(g));
            }
        }
        if self.feedbacks_per_rtt == Some(0) {
            return Err(ConfigError::ZeroFeedbacksPerRtt);
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
        if let Some(small) = self.small_packets {
            if small.nominal_segment_size == 0 {
                return Err(ConfigError::SmallPacketSegmentSize);
            }
            if self.is_ns2() {
                return Err(ConfigError::SmallPacketsUnderNs2);
            }
        }
        Ok(())
    }

    /// Feedbacks per RTT a receiver with this configuration sends when the RTT is `rtt`: the
    /// fixed `feedbacks_per_rtt` if configured, else N_fb = max(int(RTT/RTT_ref), 1), or 1
    /// without RTT_ref or without an RTT.
    pub fn feedbacks_per_rtt_at(&self, rtt: Option<Duration>) -> u32 {
        if let Some(count) = self.feedbacks_per_rtt {
            return count.max(1);
        }
        match (self.rtt_ref, rtt) {
            (Some(reference), Some(rtt)) => {
                let ratio = rtt.as_nanos() / reference.as_nanos().max(1);
                u32::try_from(ratio).unwrap_or(u32::MAX).max(1)
            }
            _ => 1,
        }
    }

    /// s as f64 bytes: the segment actually sent (s_true under TFRC-SP), which sets the
    /// spacing t_ipi = s/X, the t_mbi floor s/t_mbi and the initial window.
    pub(crate) fn s(&self) -> f64 {
        f64::from(self.packet_size)
    }

    /// The s of the throughput equation: the nominal segment size under TFRC-SP (RFC 4828 §3,
    /// also for the first loss interval: "TFRC-SP uses the segment size of 1460 bytes, rather
    /// than the actual segment size used in the connection"), else s.
    pub(crate) fn equation_s(&self) -> f64 {
        self.small_packets
            .map_or(self.s(), |small| f64::from(small.nominal_segment_size))
    }

    /// The factor TFRC-SP applies to the equation's rate, 1 otherwise. RFC 4828 §3: "X := X *
    /// s_true / (s_true + H), where s_true is the true average data segment size for the
    /// connection in bytes, excluding the transport and network headers". s_true is the
    /// configured segment size: RFC 4828 "does not specify a specific algorithm for estimating
    /// the mean segment size". A sender whose payloads are smaller than s stays below what the
    /// RFC's rule would allow it (packets are spaced by s/X, so it sends X_eq/(s + H) of them a
    /// second where the rule allows X_eq/(s_true + H)).
    pub(crate) fn header_factor(&self) -> f64 {
        self.small_packets.map_or(1.0, |small| {
            self.s() / (self.s() + f64::from(small.header_size))
        })
    }

    /// True under the ns-2 profile.
    pub(crate) fn is_ns2(&self) -> bool {
        self.profile == Profile::Ns2
    }

    /// Largest payload of one data packet: s (RFC 5348 §3.1), the header travelling on top;
    /// s − 32 under the ns-2 profile with `ns2_use_headers` off.
    pub fn max_payload(&self) -> usize {
        (self.packet_size as usize + self.header_outside_s())
            .saturating_sub(crate::wire::DATA_HEADER_LEN)
    }

    /// Header bytes sent on top of `packet_size`: the data header (RFC 5348 §3.1, s excludes
    /// transport headers; ns-2 with `useHeaders_ true`), or 0 under the ns-2 profile with
    /// `ns2_use_headers` off.
    pub fn header_outside_s(&self) -> usize {
        if self.is_ns2() && !self.ns2_use_headers {
            0
        } else {
            crate::wire::DATA_HEADER_LEN
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_bad_values_are_named() {
        assert!(Config::default().validate().is_ok());
        for (packet_size, profile) in [
            (0, Config::default()),
            (31, Config::ns2()),
            (65_476, Config::default()),
        ] {
            let bad = Config {
                packet_size,
                ns2_use_headers: false,
                ..profile
            };
            assert!(
                bad.validate()
                    .unwrap_err()
                    .to_string()
                    .contains("packet_size"),
                "{packet_size}"
            );
        }
        // s excludes the header (RFC 5348 §3.1): one byte of payload is a valid segment, and
        // the largest is 65507 − 32 so that the datagram fits UDP.
        for packet_size in [1, 65_475] {
            assert!(Config {
                packet_size,
                ..Config::default()
            }
            .validate()
            .is_ok());
        }
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
