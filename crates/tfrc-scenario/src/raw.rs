//! The file format as serde structs, exactly as written (every optional key is `Option`).
//!
//! Every struct denies unknown keys. Kind-specific keys (of flows, queues and loss models) are
//! fields of one flat struct per table; which of them a kind accepts is checked when the raw
//! scenario is resolved into the typed model (see `resolve.rs`).

use core::fmt;
use core::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, IntoDeserializer, Visitor};
use serde::{Deserialize, Deserializer};

use crate::error::{closest, join_key, ScenarioError};
use crate::model::{
    DownloadPhase, MarkerKind, MediaTransport, TcpProfile, TcpVariant, TfrcProfile, TfrcVariant,
};
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

/// The struct field names `T` declares (what its derived `Deserialize` accepts), read from
/// the derive itself so that no second list of keys is kept by hand.
pub(crate) fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct Capture(Option<&'static [&'static str]>);
    impl<'de> Deserializer<'de> for &mut Capture {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(de::Error::custom("captured"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut capture = Capture(None);
    let _ = T::deserialize(&mut capture);
    capture.0.unwrap_or(&[])
}

/// A table whose `kind` chooses which struct of keys it has.
pub(crate) trait TaggedKinds {
    /// Every kind, as written in files.
    const KINDS: &'static [&'static str];
    /// The keys `kind` takes besides `kind` (its struct's fields, in declaration order).
    fn keys(kind: &str) -> Option<&'static [&'static str]>;
    /// Reads `table` (without `kind`) as `kind`'s struct directly, so that an error names the
    /// key it is about (the tagged enum buffers the table and loses the key path).
    fn read_as(
        kind: &str,
        table: toml::Table,
    ) -> Option<serde_path_to_error::Error<toml::de::Error>>;
}

/// Declares a `#[serde(tag = "kind")]` enum of kinds, each a newtype of its keys' struct, and
/// its [`TaggedKinds`]: each kind's name is written once.
macro_rules! tagged_kinds {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($variant:ident($keys:ty) = $kind:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Deserialize)]
        #[serde(tag = "kind")]
        $vis enum $name {
            $(#[serde(rename = $kind)] $variant($keys),)*
        }

        impl TaggedKinds for $name {
            const KINDS: &'static [&'static str] = &[$($kind),*];
            fn keys(kind: &str) -> Option<&'static [&'static str]> {
                match kind {
                    $($kind => Some(field_names::<$keys>()),)*
                    _ => None,
                }
            }
            fn read_as(
                kind: &str,
                table: toml::Table,
            ) -> Option<serde_path_to_error::Error<toml::de::Error>> {
                match kind {
                    $($kind => serde_path_to_error::deserialize::<_, $keys>(toml::Value::Table(table)).err(),)*
                    _ => None,
                }
            }
        }
    };
}

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    pub(crate) name: String,
    pub(crate) duration: DurationText,
    #[serde(default)]
    pub(crate) seed: Option<u64>,
    #[serde(default)]
    pub(crate) quick: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) link: Vec<RawLink>,
    #[serde(default)]
    pub(crate) marker: Vec<RawMarker>,
    #[serde(default)]
    pub(crate) flow: Vec<RawFlow>,
    #[serde(default)]
    pub(crate) output: Option<RawOutput>,
    #[serde(default)]
    pub(crate) sweep: Option<toml::Table>,
    #[serde(default)]
    pub(crate) variant: Option<toml::Table>,
}

/// `[[link]]`: top-level direction keys plus optional per-direction overrides.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLink {
    pub(crate) between: Vec<String>,
    #[serde(default)]
    pub(crate) rate: Option<NoneOr<Rate>>,
    #[serde(default)]
    pub(crate) trace: Option<NoneOr<String>>,
    #[serde(default)]
    pub(crate) trace_offset: Option<DurationText>,
    #[serde(default)]
    pub(crate) trace_opportunity: Option<String>,
    #[serde(default)]
    pub(crate) delay: Option<DurationText>,
    #[serde(default, deserialize_with = "queue_with_default_kind")]
    pub(crate) queue: Option<RawQueue>,
    #[serde(default)]
    pub(crate) loss: Option<NoneOr<RawLoss>>,
    #[serde(default)]
    pub(crate) forward: Option<RawDirection>,
    #[serde(default)]
    pub(crate) reverse: Option<RawDirection>,
}

/// `forward = {…}` / `reverse = {…}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDirection {
    #[serde(default)]
    pub(crate) rate: Option<NoneOr<Rate>>,
    #[serde(default)]
    pub(crate) trace: Option<NoneOr<String>>,
    #[serde(default)]
    pub(crate) trace_offset: Option<DurationText>,
    #[serde(default)]
    pub(crate) trace_opportunity: Option<String>,
    #[serde(default)]
    pub(crate) delay: Option<DurationText>,
    #[serde(default, deserialize_with = "queue_with_default_kind")]
    pub(crate) queue: Option<RawQueue>,
    #[serde(default)]
    pub(crate) loss: Option<NoneOr<RawLoss>>,
}

tagged_kinds! {
    /// `queue = {…}`: one struct per kind, chosen by `kind` (`"droptail"` when absent, see
    /// [`queue_with_default_kind`]); each takes `limit` and its own keys, in their documented order.
    pub(crate) enum RawQueue {
        Droptail(RawDropTail) = "droptail",
        Red(RawRed) = "red",
        Rio(RawRio) = "rio",
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDropTail {
    pub(crate) limit: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRed {
    pub(crate) limit: Option<u32>,
    pub(crate) min_th: Option<f64>,
    pub(crate) max_th: Option<f64>,
    pub(crate) max_p: Option<f64>,
    pub(crate) weight: Option<f64>,
    pub(crate) gentle: Option<bool>,
    pub(crate) ecn: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRio {
    pub(crate) limit: Option<u32>,
    pub(crate) min_in: Option<f64>,
    pub(crate) max_in: Option<f64>,
    pub(crate) p_in: Option<f64>,
    pub(crate) min_out: Option<f64>,
    pub(crate) max_out: Option<f64>,
    pub(crate) p_out: Option<f64>,
    pub(crate) weight: Option<f64>,
    pub(crate) ecn: Option<bool>,
}

/// The default queue kind, `"droptail"`, filled in before the table is read by its kind.
pub(crate) const DEFAULT_QUEUE_KIND: &str = "droptail";

/// Reads a `queue` table whose `kind` may be left out.
pub(crate) fn queue_with_default_kind<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<RawQueue>, D::Error> {
    let mut table = toml::Table::deserialize(deserializer)?;
    table
        .entry("kind")
        .or_insert_with(|| DEFAULT_QUEUE_KIND.into());
    RawQueue::deserialize(toml::Value::Table(table))
        .map(Some)
        .map_err(de::Error::custom)
}

/// The keys a `queue` or `loss` table (`section`) of `kind` takes besides `kind`, in the
/// documented order: a queue's `limit` then its kind's keys; a loss model's keys then `start`
/// and `stop`. `None` for an unknown section or kind. `tfrc emulate` fills bare flag values
/// into these keys in order (`droptail:50` is `limit = 50`).
pub fn table_keys(section: &str, kind: &str) -> Option<Vec<&'static str>> {
    match section {
        "queue" => RawQueue::keys(kind).map(<[_]>::to_vec),
        "loss" => RawLossModel::keys(kind)
            .map(|keys| keys.iter().chain(&["start", "stop"]).copied().collect()),
        _ => None,
    }
}

/// `loss = {…}`: the model (chosen by `kind`) and when it acts.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RawLoss {
    #[serde(flatten)]
    pub(crate) model: RawLossModel,
    pub(crate) start: Option<DurationText>,
    pub(crate) stop: Option<NoneOr<DurationText>>,
}

/// Keys every loss model takes.
pub(crate) const LOSS_COMMON_KEYS: &[&str] = &["kind", "start", "stop"];

tagged_kinds! {
    /// The loss models, one struct of keys each.
    pub(crate) enum RawLossModel {
        Bernoulli(RawBernoulli) = "bernoulli",
        Exponential(RawExponential) = "exponential",
        GilbertElliott(RawGilbertElliott) = "gilbert-elliott",
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBernoulli {
    pub(crate) rate: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExponential {
    pub(crate) mean_gap: Option<DurationText>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGilbertElliott {
    pub(crate) p_good_to_bad: Option<f64>,
    pub(crate) p_bad_to_good: Option<f64>,
    pub(crate) loss_good: Option<f64>,
    pub(crate) loss_bad: Option<f64>,
}

/// `[[marker]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMarker {
    pub(crate) link: Vec<String>,
    #[serde(default)]
    pub(crate) kind: Option<MarkerKind>,
    pub(crate) flows: Vec<String>,
    pub(crate) rate: Rate,
    pub(crate) bucket: u64,
}

/// `[[flow]]`: the common keys, then the keys of its kind.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RawFlow {
    pub(crate) name: String,
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) start: Option<DurationText>,
    pub(crate) stop: Option<NoneOr<DurationText>>,
    pub(crate) packet_size: Option<u32>,
    pub(crate) count: Option<NoneOr<u32>>,
    pub(crate) enabled: Option<bool>,
    #[serde(flatten)]
    pub(crate) kind: RawFlowKind,
}

/// Keys every flow takes (the fields of [`RawFlow`] and `kind`).
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

tagged_kinds! {
    /// The flow kinds, one struct of keys each.
    pub(crate) enum RawFlowKind {
        Tfrc(RawTfrc) = "tfrc",
        Tcp(RawTcp) = "tcp",
        Cbr(RawCbr) = "cbr",
        Pareto(RawOnOff) = "pareto",
        ExpOnoff(RawExpOnOff) = "exp-onoff",
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTfrc {
    pub(crate) target_rate: Option<NoneOr<Rate>>,
    pub(crate) rtt_ref: Option<NoneOr<DurationText>>,
    pub(crate) feedbacks_per_rtt: Option<NoneOr<u32>>,
    pub(crate) veno_beta: Option<NoneOr<f64>>,
    pub(crate) veno_alpha: Option<NoneOr<f64>>,
    pub(crate) profile: Option<TfrcProfile>,
    pub(crate) history_discounting: Option<bool>,
    pub(crate) oscillation_damping: Option<bool>,
    pub(crate) variant: Option<TfrcVariant>,
    pub(crate) nominal_segment_size: Option<u32>,
    pub(crate) header_size: Option<u32>,
    pub(crate) ecn: Option<bool>,
    pub(crate) max_rate: Option<NoneOr<Rate>>,
    pub(crate) media: Option<NoneOr<RawMedia>>,
}

/// A TFRC flow's media source (`media = { … }`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMedia {
    pub(crate) fps: Option<f64>,
    pub(crate) min_rate: Option<Rate>,
    pub(crate) start_rate: Option<Rate>,
    pub(crate) deadline: Option<DurationText>,
    pub(crate) pause: Option<NoneOr<DurationText>>,
    pub(crate) resume: Option<NoneOr<DurationText>>,
    pub(crate) transport: Option<MediaTransport>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTcp {
    pub(crate) variant: Option<TcpVariant>,
    pub(crate) delayed_ack: Option<bool>,
    pub(crate) window: Option<NoneOr<u32>>,
    pub(crate) profile: Option<TcpProfile>,
    pub(crate) downloads: Option<NoneOr<RawDownloads>>,
}

/// A TCP flow's short transfers (`downloads = { … }`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDownloads {
    pub(crate) connections: Option<u32>,
    pub(crate) min_size: Option<u64>,
    pub(crate) max_size: Option<u64>,
    pub(crate) idle: Option<DurationText>,
    pub(crate) first: Option<DownloadPhase>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCbr {
    pub(crate) rate: Option<Rate>,
}

/// Pareto on/off: `rate`, `burst`, `idle`, `shape`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOnOff {
    pub(crate) rate: Option<Rate>,
    pub(crate) burst: Option<DurationText>,
    pub(crate) idle: Option<DurationText>,
    pub(crate) shape: Option<f64>,
}

/// Exponential on/off: as Pareto without `shape`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExpOnOff {
    pub(crate) rate: Option<Rate>,
    pub(crate) burst: Option<DurationText>,
    pub(crate) idle: Option<DurationText>,
}

/// `[output]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOutput {
    #[serde(default)]
    pub(crate) interval: Option<DurationText>,
    #[serde(default)]
    pub(crate) state_interval: Option<NoneOr<DurationText>>,
}

/// The tables whose `kind` chooses their keys.
#[derive(Debug, Clone, Copy)]
enum KindSection {
    Queue,
    Loss,
    Flow,
}

impl KindSection {
    /// The section a deserialization error's path ends at, if it is one of them.
    fn at(path: &[serde_path_to_error::Segment]) -> Option<KindSection> {
        use serde_path_to_error::Segment;
        match path {
            [.., Segment::Map { key }] if key == "queue" => Some(KindSection::Queue),
            [.., Segment::Map { key }] if key == "loss" => Some(KindSection::Loss),
            [Segment::Map { key }, Segment::Seq { .. }] if key == "flow" => Some(KindSection::Flow),
            _ => None,
        }
    }

    fn what(self) -> &'static str {
        match self {
            KindSection::Queue => "queue",
            KindSection::Loss => "loss model",
            KindSection::Flow => "flow",
        }
    }

    /// Keys of the table that are not the kind's own.
    fn common_keys(self) -> &'static [&'static str] {
        match self {
            KindSection::Queue => &["kind"],
            KindSection::Loss => LOSS_COMMON_KEYS,
            KindSection::Flow => FLOW_COMMON_KEYS,
        }
    }

    fn kinds(self) -> &'static [&'static str] {
        match self {
            KindSection::Queue => RawQueue::KINDS,
            KindSection::Loss => RawLossModel::KINDS,
            KindSection::Flow => RawFlowKind::KINDS,
        }
    }

    fn keys(self, kind: &str) -> Option<&'static [&'static str]> {
        match self {
            KindSection::Queue => RawQueue::keys(kind),
            KindSection::Loss => RawLossModel::keys(kind),
            KindSection::Flow => RawFlowKind::keys(kind),
        }
    }

    fn read_as(
        self,
        kind: &str,
        table: toml::Table,
    ) -> Option<serde_path_to_error::Error<toml::de::Error>> {
        match self {
            KindSection::Queue => RawQueue::read_as(kind, table),
            KindSection::Loss => RawLossModel::read_as(kind, table),
            KindSection::Flow => RawFlowKind::read_as(kind, table),
        }
    }
}

/// A deserialization error of `root` (the file's table, or one link's for `tfrc emulate`),
/// with the key it is about. serde reads a table whose `kind` chooses its keys as a whole, so
/// an error inside it is reported at the table: an unknown key is named with the keys its
/// kind takes (and, when it belongs to another kind, said so); a bad value is found by
/// reading the table again as its kind's struct.
pub(crate) fn read_error(
    file: &str,
    error: serde_path_to_error::Error<toml::de::Error>,
    root: &toml::Value,
) -> ScenarioError {
    use serde_path_to_error::Segment;
    let segments: Vec<Segment> = error.path().iter().cloned().collect();
    let (Some(section), Some(table)) = (KindSection::at(&segments), lookup(root, &segments)) else {
        return ScenarioError::from_serde(file, error);
    };
    let kind = match (table.get("kind"), section) {
        (Some(toml::Value::String(kind)), _) => kind.clone(),
        (None, KindSection::Queue) => DEFAULT_QUEUE_KIND.to_owned(),
        (Some(other), _) => {
            let kinds: Vec<String> = section.kinds().iter().map(|k| format!("\"{k}\"")).collect();
            return ScenarioError::invalid(
                file,
                join_key(&error.path().to_string(), "kind"),
                format!(
                    "expected one of {}, got {}",
                    kinds.join(", "),
                    crate::emit::inline(other)
                ),
            );
        }
        (None, _) => return ScenarioError::from_serde(file, error),
    };
    let Some(own_keys) = section.keys(&kind) else {
        let kinds: Vec<String> = section.kinds().iter().map(|k| format!("\"{k}\"")).collect();
        return ScenarioError::invalid(
            file,
            join_key(&error.path().to_string(), "kind"),
            format!("expected one of {}, got \"{kind}\"", kinds.join(", ")),
        );
    };
    let path = error.path().to_string();
    let message = crate::error::one_line(error.inner().message());
    // An unknown key of the table itself (not of a table inside it, as a flow's `media`,
    // which reading the kind's struct below names with its path).
    if let Some(field) = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(field, _)| field.to_owned())
        .filter(|field| table.contains_key(field))
    {
        let text = unknown_key_message(section, &kind, own_keys, &field);
        return ScenarioError::invalid(file, join_key(&path, &field), text);
    }
    let mut own_table = table.clone();
    own_table.retain(|key, _| !section.common_keys().contains(&key));
    match section.read_as(&kind, own_table) {
        Some(inner) => {
            let inner = ScenarioError::from_serde(file, inner);
            // The inner key is a path already (`media.fps` inside a flow).
            let key = match inner.key() {
                Some("") | None => path,
                Some(key) => format!("{path}.{key}"),
            };
            ScenarioError::invalid(file, key, inner.message())
        }
        None => ScenarioError::from_serde(file, error),
    }
}

/// The message for a key `field` that a `kind` table of `section` does not take: whose key
/// it is when another kind takes it, else the nearest key (saying whose, if another kind's)
/// and every key this kind takes.
fn unknown_key_message(section: KindSection, kind: &str, own_keys: &[&str], field: &str) -> String {
    let what = section.what();
    let shared = shared_keys(section);
    let takes: Vec<&str> = own_keys
        .iter()
        .filter(|key| !shared.contains(key))
        .copied()
        .collect();
    let other_kind = section.kinds().iter().any(|other| {
        section
            .keys(other)
            .is_some_and(|keys| keys.contains(&field))
    });
    if other_kind {
        let takes = if takes.is_empty() {
            "no other keys".to_owned()
        } else {
            takes.join(", ")
        };
        format!("`{field}` is not a key of a {kind} {what}; besides the common keys a {kind} {what} takes: {takes}")
    } else {
        let allowed: Vec<String> = section
            .common_keys()
            .iter()
            .chain(own_keys)
            .map(|key| (*key).to_owned())
            .collect();
        let mut text = format!("unknown key `{field}`");
        // The nearest key of any kind: a typo of another kind's key says whose it is.
        let every_key: Vec<String> = section
            .kinds()
            .iter()
            .filter_map(|other| section.keys(other))
            .flatten()
            .map(|key| (*key).to_owned())
            .chain(allowed.iter().cloned())
            .collect();
        if let Some(suggestion) = closest(field, &every_key) {
            if allowed.contains(&suggestion) {
                text.push_str(&format!(" (did you mean `{suggestion}`?)"));
            } else {
                let owners: Vec<&str> = section
                    .kinds()
                    .iter()
                    .filter(|other| {
                        section
                            .keys(other)
                            .is_some_and(|keys| keys.contains(&suggestion.as_str()))
                    })
                    .copied()
                    .collect();
                text.push_str(&format!(
                    " (did you mean `{suggestion}`? it is a key of a {} {what}, not of a {kind} {what})",
                    owners.join(" or ")
                ));
            }
        }
        text.push_str(&format!("; expected one of: {}", allowed.join(", ")));
        text
    }
}

/// Keys every kind of `section` has in its own struct (a queue's `limit`).
fn shared_keys(section: KindSection) -> Vec<&'static str> {
    let mut kinds = section.kinds().iter().filter_map(|kind| section.keys(kind));
    let Some(first) = kinds.next() else {
        return Vec::new();
    };
    let rest: Vec<_> = kinds.collect();
    first
        .iter()
        .filter(|key| rest.iter().all(|keys| keys.contains(key)))
        .copied()
        .collect()
}

/// The table at `path` in `root`.
fn lookup<'a>(
    root: &'a toml::Value,
    path: &[serde_path_to_error::Segment],
) -> Option<&'a toml::Table> {
    use serde_path_to_error::Segment;
    let mut current = root;
    for segment in path {
        current = match segment {
            Segment::Map { key } => current.get(key.as_str())?,
            Segment::Seq { index } => current.get(*index)?,
            _ => return None,
        };
    }
    current.as_table()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_keys_come_from_the_structs_in_their_documented_order() {
        assert_eq!(
            table_keys("queue", "red").unwrap(),
            ["limit", "min_th", "max_th", "max_p", "weight", "gentle", "ecn"]
        );
        assert_eq!(table_keys("queue", "droptail").unwrap(), ["limit"]);
        assert_eq!(
            table_keys("loss", "gilbert-elliott").unwrap(),
            [
                "p_good_to_bad",
                "p_bad_to_good",
                "loss_good",
                "loss_bad",
                "start",
                "stop"
            ]
        );
        assert_eq!(table_keys("queue", "fifo"), None);
        assert_eq!(table_keys("flow", "tfrc"), None);
        assert_eq!(
            RawFlowKind::keys("tcp").unwrap(),
            ["variant", "delayed_ack", "window", "profile", "downloads"]
        );
        assert_eq!(shared_keys(KindSection::Queue), ["limit"]);
    }

    /// The common keys kept by hand for flows are exactly what `RawFlow` reads besides its
    /// kind's keys: a table with all of them parses, and no kind claims one of them.
    #[test]
    fn flow_common_keys_match_the_struct() {
        let table: toml::Table = r#"
            name = "a"
            kind = "cbr"
            from = "s"
            to = "r"
            start = "1s"
            stop = "2s"
            packet_size = 100
            count = 2
            enabled = true
            rate = "1Mbps"
        "#
        .parse()
        .unwrap();
        let keys: Vec<&str> = table
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "rate")
            .collect();
        assert_eq!(keys, FLOW_COMMON_KEYS);
        RawFlow::deserialize(toml::Value::Table(table)).unwrap();
        for kind in RawFlowKind::KINDS {
            let own = RawFlowKind::keys(kind).unwrap();
            assert!(
                own.iter().all(|key| !FLOW_COMMON_KEYS.contains(key)),
                "{kind}"
            );
        }
        for kind in RawLossModel::KINDS {
            let own = RawLossModel::keys(kind).unwrap();
            assert!(
                own.iter().all(|key| !LOSS_COMMON_KEYS.contains(key)),
                "{kind}"
            );
        }
    }
}
