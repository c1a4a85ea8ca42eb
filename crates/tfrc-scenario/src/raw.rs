//! The file format as serde structs, exactly as written (every optional key is `Option`).
//!
//! Every struct denies unknown keys. Kind-specific keys (of flows, queues and loss models) are
//! fields of one flat struct per table; which of them a kind accepts is checked when the raw
//! scenario is resolved into the typed model (see `resolve.rs`).

use core::fmt;
use core::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, IntoDeserializer, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::model::{MarkerKind, TcpVariant, TfrcProfile};
use crate::units::{DurationText, Rate};

/// A value that may also be the string `"none"`, meaning "not set" (so that `--set` and sweeps
/// can switch an optional feature off).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NoneOr<T> {
    None,
    Some(T),
}

impl<T> NoneOr<T> {
    pub(crate) fn into_option(self) -> Option<T> {
        match self {
            NoneOr::None => None,
            NoneOr::Some(value) => Some(value),
        }
    }
}

/// `Option<NoneOr<T>>` → `Option<T>`: absent and `"none"` are the same.
pub(crate) fn flatten<T>(value: Option<NoneOr<T>>) -> Option<T> {
    value.and_then(NoneOr::into_option)
}

impl<T: Serialize> Serialize for NoneOr<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            NoneOr::None => serializer.serialize_str("none"),
            NoneOr::Some(value) => value.serialize(serializer),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for NoneOr<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Forwards whatever the value is to `T`, keeping the (path-tracking) map and sequence
        // accessors, so errors inside tables still name the full key path.
        struct NoneOrVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for NoneOrVisitor<T> {
            type Value = NoneOr<T>;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a value, or \"none\"")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                if text == "none" {
                    Ok(NoneOr::None)
                } else {
                    T::deserialize(text.into_deserializer()).map(NoneOr::Some)
                }
            }
            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                if text == "none" {
                    Ok(NoneOr::None)
                } else {
                    T::deserialize(text.into_deserializer()).map(NoneOr::Some)
                }
            }
            fn visit_bool<E: de::Error>(self, value: bool) -> Result<Self::Value, E> {
                T::deserialize(value.into_deserializer()).map(NoneOr::Some)
            }
            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
                T::deserialize(value.into_deserializer()).map(NoneOr::Some)
            }
            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
                T::deserialize(value.into_deserializer()).map(NoneOr::Some)
            }
            fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
                T::deserialize(value.into_deserializer()).map(NoneOr::Some)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(NoneOr::Some)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                T::deserialize(SeqAccessDeserializer::new(seq)).map(NoneOr::Some)
            }
        }
        deserializer.deserialize_any(NoneOrVisitor(PhantomData))
    }
}

/// The whole file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    pub(crate) name: String,
    pub(crate) duration: DurationText,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) quick: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) link: Vec<RawLink>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) marker: Vec<RawMarker>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) flow: Vec<RawFlow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output: Option<RawOutput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sweep: Option<toml::Table>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) variant: Option<toml::Table>,
}

/// `[[link]]`: top-level direction keys plus optional per-direction overrides.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLink {
    pub(crate) between: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rate: Option<NoneOr<Rate>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace: Option<NoneOr<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace_offset: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace_opportunity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) delay: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) queue: Option<RawQueue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) loss: Option<NoneOr<RawLoss>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) forward: Option<RawDirection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reverse: Option<RawDirection>,
}

/// `forward = {…}` / `reverse = {…}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDirection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rate: Option<NoneOr<Rate>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace: Option<NoneOr<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace_offset: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace_opportunity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) delay: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) queue: Option<RawQueue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) loss: Option<NoneOr<RawLoss>>,
}

/// Queue kinds as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum QueueKindName {
    Droptail,
    Red,
    Rio,
}

impl QueueKindName {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            QueueKindName::Droptail => "droptail",
            QueueKindName::Red => "red",
            QueueKindName::Rio => "rio",
        }
    }
}

/// `queue = {…}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQueue {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<QueueKindName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) limit: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) min_th: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_th: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) gentle: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) min_in: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_in: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) p_in: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) min_out: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_out: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) p_out: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) weight: Option<f64>,
}

impl RawQueue {
    /// The kind-specific keys present.
    pub(crate) fn present_keys(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        for (present, key) in [
            (self.min_th.is_some(), "min_th"),
            (self.max_th.is_some(), "max_th"),
            (self.max_p.is_some(), "max_p"),
            (self.gentle.is_some(), "gentle"),
            (self.min_in.is_some(), "min_in"),
            (self.max_in.is_some(), "max_in"),
            (self.p_in.is_some(), "p_in"),
            (self.min_out.is_some(), "min_out"),
            (self.max_out.is_some(), "max_out"),
            (self.p_out.is_some(), "p_out"),
            (self.weight.is_some(), "weight"),
        ] {
            if present {
                keys.push(key);
            }
        }
        keys
    }
}

/// Keys every queue takes.
pub(crate) const QUEUE_COMMON_KEYS: &[&str] = &["kind", "limit"];
/// Keys of each queue kind besides the common ones.
pub(crate) const QUEUE_KIND_KEYS: &[(&str, &[&str])] = &[
    ("droptail", &[]),
    ("red", &["min_th", "max_th", "max_p", "weight", "gentle"]),
    (
        "rio",
        &[
            "min_in", "max_in", "p_in", "min_out", "max_out", "p_out", "weight",
        ],
    ),
];

/// The keys a `queue` or `loss` table (`section`) of `kind` takes besides `kind`, in the
/// documented order: a queue's `limit` then its kind's keys; a loss model's keys then `start`
/// and `stop`. `None` for an unknown section or kind. `tfrc emulate` fills bare flag values
/// into these keys in order (`droptail:50` is `limit = 50`).
pub fn table_keys(section: &str, kind: &str) -> Option<Vec<&'static str>> {
    let (table, common_first, common_last): (_, &[&'static str], &[&'static str]) = match section {
        "queue" => (QUEUE_KIND_KEYS, &["limit"], &[]),
        "loss" => (LOSS_KIND_KEYS, &[], &["start", "stop"]),
        _ => return None,
    };
    let own = kind_keys(table, kind)?;
    Some(
        common_first
            .iter()
            .chain(own)
            .chain(common_last)
            .copied()
            .collect(),
    )
}

/// Loss kinds as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum LossKindName {
    Bernoulli,
    Exponential,
    GilbertElliott,
}

impl LossKindName {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LossKindName::Bernoulli => "bernoulli",
            LossKindName::Exponential => "exponential",
            LossKindName::GilbertElliott => "gilbert-elliott",
        }
    }
}

/// `loss = {…}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLoss {
    pub(crate) kind: LossKindName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) mean_gap: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) p_good_to_bad: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) p_bad_to_good: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) loss_good: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) loss_bad: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) start: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stop: Option<NoneOr<DurationText>>,
}

impl RawLoss {
    /// The kind-specific keys present.
    pub(crate) fn present_keys(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        for (present, key) in [
            (self.rate.is_some(), "rate"),
            (self.mean_gap.is_some(), "mean_gap"),
            (self.p_good_to_bad.is_some(), "p_good_to_bad"),
            (self.p_bad_to_good.is_some(), "p_bad_to_good"),
            (self.loss_good.is_some(), "loss_good"),
            (self.loss_bad.is_some(), "loss_bad"),
        ] {
            if present {
                keys.push(key);
            }
        }
        keys
    }
}

/// Keys every loss model takes.
pub(crate) const LOSS_COMMON_KEYS: &[&str] = &["kind", "start", "stop"];
/// Keys of each loss model besides the common ones.
pub(crate) const LOSS_KIND_KEYS: &[(&str, &[&str])] = &[
    ("bernoulli", &["rate"]),
    ("exponential", &["mean_gap"]),
    (
        "gilbert-elliott",
        &["p_good_to_bad", "p_bad_to_good", "loss_good", "loss_bad"],
    ),
];

/// `[[marker]]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMarker {
    pub(crate) link: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<MarkerKind>,
    pub(crate) flows: Vec<String>,
    pub(crate) rate: Rate,
    pub(crate) bucket: u64,
}

/// Flow kinds as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum FlowKindName {
    Tfrc,
    Tcp,
    Cbr,
    Pareto,
    ExpOnoff,
}

impl FlowKindName {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FlowKindName::Tfrc => "tfrc",
            FlowKindName::Tcp => "tcp",
            FlowKindName::Cbr => "cbr",
            FlowKindName::Pareto => "pareto",
            FlowKindName::ExpOnoff => "exp-onoff",
        }
    }
}

/// `[[flow]]`: common keys, then the keys of every kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFlow {
    pub(crate) name: String,
    pub(crate) kind: FlowKindName,
    pub(crate) from: String,
    pub(crate) to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) start: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stop: Option<NoneOr<DurationText>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) packet_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) count: Option<NoneOr<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) enabled: Option<bool>,
    // tfrc
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) target_rate: Option<NoneOr<Rate>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rtt_ref: Option<NoneOr<DurationText>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) feedbacks_per_rtt: Option<NoneOr<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) veno_beta: Option<NoneOr<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) veno_alpha: Option<NoneOr<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) profile: Option<TfrcProfile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) history_discounting: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) oscillation_damping: Option<bool>,
    // tcp
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) variant: Option<TcpVariant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) delayed_ack: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) window: Option<NoneOr<u32>>,
    // cbr, pareto, exp-onoff
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rate: Option<Rate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) burst: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) idle: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shape: Option<f64>,
}

impl RawFlow {
    /// The kind-specific keys present.
    pub(crate) fn present_keys(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        for (present, key) in [
            (self.target_rate.is_some(), "target_rate"),
            (self.rtt_ref.is_some(), "rtt_ref"),
            (self.feedbacks_per_rtt.is_some(), "feedbacks_per_rtt"),
            (self.veno_beta.is_some(), "veno_beta"),
            (self.veno_alpha.is_some(), "veno_alpha"),
            (self.profile.is_some(), "profile"),
            (self.history_discounting.is_some(), "history_discounting"),
            (self.oscillation_damping.is_some(), "oscillation_damping"),
            (self.variant.is_some(), "variant"),
            (self.delayed_ack.is_some(), "delayed_ack"),
            (self.window.is_some(), "window"),
            (self.rate.is_some(), "rate"),
            (self.burst.is_some(), "burst"),
            (self.idle.is_some(), "idle"),
            (self.shape.is_some(), "shape"),
        ] {
            if present {
                keys.push(key);
            }
        }
        keys
    }
}

/// Keys every flow takes.
pub(crate) const FLOW_COMMON_KEYS: &[&str] = &[
    "name",
    "kind",
    "from",
    "to",
    "start",
    "stop",
    "packet_size",
    "count",
    "enabled",
];
/// Keys of each flow kind besides the common ones.
pub(crate) const FLOW_KIND_KEYS: &[(&str, &[&str])] = &[
    (
        "tfrc",
        &[
            "target_rate",
            "rtt_ref",
            "feedbacks_per_rtt",
            "veno_beta",
            "veno_alpha",
            "profile",
            "history_discounting",
            "oscillation_damping",
        ],
    ),
    ("tcp", &["variant", "delayed_ack", "window"]),
    ("cbr", &["rate"]),
    ("pareto", &["rate", "burst", "idle", "shape"]),
    ("exp-onoff", &["rate", "burst", "idle"]),
];

/// The keys a kind accepts besides the common ones (`None` for an unknown kind).
pub(crate) fn kind_keys(
    table: &[(&str, &'static [&'static str])],
    kind: &str,
) -> Option<&'static [&'static str]> {
    table
        .iter()
        .find(|(name, _)| *name == kind)
        .map(|(_, keys)| *keys)
}

/// `[output]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOutput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) interval: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) state_interval: Option<NoneOr<DurationText>>,
}
