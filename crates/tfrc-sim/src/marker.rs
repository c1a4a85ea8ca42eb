//! Two-colour token-bucket marker (DiffServ edge).

use tfrc_proto::Instant;

use crate::error::{check_nonzero, ParameterError};
use crate::packet::{Color, FlowId, PacketMeta};

const ELEMENT: &str = "token-bucket marker";

/// Nanoseconds per second: tokens are kept in bit·nanosecond-per-second units so that the
/// bucket is refilled with exact integer arithmetic.
const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// Which flows a marker applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowSelector {
    /// Every flow (one aggregate for the whole link direction).
    All,
    /// These flows, as one aggregate sharing the bucket (a single flow is a set of one).
    Flows(Vec<FlowId>),
}

impl FlowSelector {
    /// Whether `flow` is selected.
    pub fn contains(&self, flow: FlowId) -> bool {
        match self {
            FlowSelector::All => true,
            FlowSelector::Flows(flows) => flows.binary_search(&flow).is_ok(),
        }
    }
}

/// Parameters of a [`TokenBucketMarker`], for building one from a scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBucketConfig {
    /// Committed rate in bits/s.
    pub rate_bits_per_second: u64,
    /// Bucket size in bytes.
    pub bucket_bytes: u64,
    /// The flows whose packets are marked.
    pub flows: FlowSelector,
}

impl TokenBucketConfig {
    /// Builds the marker, validating its parameters.
    pub fn build(&self) -> Result<TokenBucketMarker, ParameterError> {
        TokenBucketMarker::new(
            self.rate_bits_per_second,
            self.bucket_bytes,
            self.flows.clone(),
        )
    }
}

/// A two-colour token-bucket marker, like ns-2's DiffServ `TokenBucket` policy with two code
/// points.
///
/// Tokens (bytes) accumulate at the committed rate up to the bucket size; the bucket starts
/// full. A selected packet is marked [`Color::In`] and consumes its size in tokens if enough
/// tokens are available, otherwise it is marked [`Color::Out`] and consumes nothing. Packets of
/// other flows pass unchanged. A bucket smaller than a packet marks every such packet Out.
#[derive(Debug, Clone)]
pub struct TokenBucketMarker {
    rate_bits_per_second: u64,
    bucket_bytes: u64,
    flows: FlowSelector,
    /// Tokens in bits × 10⁹ (so that `elapsed_ns × rate_bps` adds exactly).
    tokens: u128,
    capacity: u128,
    last_update: Option<Instant>,
}

impl TokenBucketMarker {
    /// A marker with committed rate `rate_bits_per_second`, bucket `bucket_bytes`, marking the
    /// packets of `flows`.
    pub fn new(
        rate_bits_per_second: u64,
        bucket_bytes: u64,
        flows: FlowSelector,
    ) -> Result<Self, ParameterError> {
        check_nonzero(ELEMENT, "rate", rate_bits_per_second)?;
        check_nonzero(ELEMENT, "bucket", bucket_bytes)?;
        let flows = match flows {
            FlowSelector::All => FlowSelector::All,
            FlowSelector::Flows(mut flows) => {
                if flows.is_empty() {
                    return Err(ParameterError::new(
                        ELEMENT,
                        "flows",
                        "[]",
                        "at least one flow",
                    ));
                }
                flows.sort_unstable();
                flows.dedup();
                FlowSelector::Flows(flows)
            }
        };
        let capacity = u128::from(bucket_bytes) * 8 * NANOS_PER_SECOND;
        Ok(TokenBucketMarker {
            rate_bits_per_second,
            bucket_bytes,
            flows,
            tokens: capacity,
            capacity,
            last_update: None,
        })
    }

    /// Committed rate in bits/s.
    pub fn rate_bits_per_second(&self) -> u64 {
        self.rate_bits_per_second
    }

    /// Bucket size in bytes.
    pub fn bucket_bytes(&self) -> u64 {
        self.bucket_bytes
    }

    /// The selected flows.
    pub fn flows(&self) -> &FlowSelector {
        &self.flows
    }

    /// Tokens currently in the bucket, in bytes (as of the last marked packet).
    pub fn tokens_bytes(&self) -> f64 {
        self.tokens as f64 / (8.0 * NANOS_PER_SECOND as f64)
    }

    /// Colours `packet` if its flow is selected and returns the colour given; `None` (and the
    /// packet untouched) otherwise.
    pub fn mark(&mut self, now: Instant, packet: &mut PacketMeta) -> Option<Color> {
        if !self.flows.contains(packet.flow) {
            return None;
        }
        if let Some(last) = self.last_update {
            let elapsed = u128::from(now.as_nanos().saturating_sub(last.as_nanos()));
            let added = elapsed.saturating_mul(u128::from(self.rate_bits_per_second));
            self.tokens = self.tokens.saturating_add(added).min(self.capacity);
        }
        self.last_update = Some(self.last_update.map_or(now, |last| last.max(now)));
        let cost = u128::from(packet.size_bits()) * NANOS_PER_SECOND;
        let color = if self.tokens >= cost {
            self.tokens -= cost;
            Color::In
        } else {
            Color::Out
        };
        packet.color = color;
        Some(color)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    #[test]
    fn validation_names_the_bad_parameter() {
        assert_eq!(
            TokenBucketMarker::new(0, 1000, FlowSelector::All)
                .unwrap_err()
                .parameter,
            "rate"
        );
        assert_eq!(
            TokenBucketMarker::new(1000, 0, FlowSelector::All)
                .unwrap_err()
                .parameter,
            "bucket"
        );
        assert_eq!(
            TokenBucketMarker::new(1000, 1000, FlowSelector::Flows(vec![]))
                .unwrap_err()
                .parameter,
            "flows"
        );
    }

    /// A CBR flow at twice the committed rate is about half in profile.
    #[test]
    fn cbr_at_twice_the_rate_is_half_in_profile() {
        let rate = 400_000; // bits/s
        let mut marker = TokenBucketMarker::new(rate, 3000, FlowSelector::Flows(vec![4])).unwrap();
        // 1000-byte packets at 800 kb/s: one every 10 ms.
        let interval = Duration::from_millis(10);
        let mut now = Instant::ZERO;
        let (mut inside, total) = (0u32, 10_000u32);
        for id in 0..total {
            let mut packet = PacketMeta::new(u64::from(id), 4, 1000);
            if marker.mark(now, &mut packet) == Some(Color::In) {
                inside += 1;
            }
            assert_ne!(packet.color, Color::Unmarked);
            now += interval;
        }
        // In-profile bytes ≈ bucket + rate × duration.
        let expected = (3000.0 + rate as f64 / 8.0 * 100.0) / 1000.0;
        assert!(
            (f64::from(inside) - expected).abs() <= 1.0,
            "{inside} vs {expected}"
        );
        let fraction = f64::from(inside) / f64::from(total);
        assert!((fraction - 0.5).abs() < 0.01, "{fraction}");
    }

    #[test]
    fn only_selected_flows_are_marked_and_share_the_bucket() {
        let mut marker =
            TokenBucketMarker::new(8_000, 2000, FlowSelector::Flows(vec![2, 1, 2])).unwrap();
        assert_eq!(marker.flows(), &FlowSelector::Flows(vec![1, 2]));
        let now = Instant::from_secs(1);
        let mut other = PacketMeta::new(0, 3, 1000);
        assert_eq!(marker.mark(now, &mut other), None);
        assert_eq!(other.color, Color::Unmarked);
        let mut colors = Vec::new();
        for (id, flow) in [(1, 1), (2, 2), (3, 1)] {
            let mut packet = PacketMeta::new(id, flow, 1000);
            colors.push(marker.mark(now, &mut packet).unwrap());
        }
        assert_eq!(colors, vec![Color::In, Color::In, Color::Out]);
        // 8 kb/s refills 1000 bytes in exactly one second.
        let mut packet = PacketMeta::new(4, 2, 1000);
        let later = now + Duration::from_millis(999);
        assert_eq!(marker.mark(later, &mut packet), Some(Color::Out));
        let mut packet = PacketMeta::new(5, 2, 1000);
        assert_eq!(
            marker.mark(now + Duration::from_secs(1), &mut packet),
            Some(Color::In)
        );
        assert!(marker.tokens_bytes() < 1.0);
    }
}
