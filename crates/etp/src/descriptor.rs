//! The QoS session descriptor: what the application needs from the session, from which ETP
//! composes its micro-mechanisms (rate control, reliability, ordering, time control,
//! multiplexing).
//!
//! It is read from TOML (or JSON, chosen by the file extension or by trying both) and travels as
//! JSON inside the connection request and the reconfiguration request, so the listener can check
//! it ([`Descriptor::validate`]) and refuse it with a reason. See `docs/etp.md` for the schema.
//!
//! Rates are bits per second, given as a number (`2000000`) or a text with a unit (`"2Mbps"`,
//! `"800k"`); durations as a text with a unit (`"150ms"`, `"2s"`) or a number of seconds.

use core::time::Duration;
use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Highest stream id: ids at and above 0x8000 name ordering groups on the wire.
pub const MAX_STREAM_ID: u16 = 0x7fff;
/// Smallest packet size (header of ETP + TFRC data and one fragment header with a byte).
pub const MIN_PACKET_SIZE: u32 = 128;
/// Largest packet size: the largest UDP payload.
pub const MAX_PACKET_SIZE: u32 = 65_507;

/// Which rate control paces the data packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RateControlKind {
    /// TCP-friendly rate control (RFC 5348), the default.
    #[default]
    Tfrc,
    /// gTFRC: TFRC that never goes below the descriptor's `target_rate`.
    Gtfrc,
    /// TFRC-SP, the small-packet variant of RFC 4828 (`"tfrc-sp"`): the rate in bytes/s of a
    /// TCP flow with 1460-byte segments less the headers (H = 40 bytes), at most one packet per
    /// 10 ms, and short loss intervals counting every loss (RFC 4828 §3, §4; the defaults of
    /// `tfrc_proto::SmallPackets`).
    #[serde(rename = "tfrc-sp")]
    TfrcSp,
    /// A constant rate (`fixed_rate`), not congestion controlled.
    Fixed,
    /// No pacing at all: packets leave as soon as there is data (tests only).
    None,
}

impl RateControlKind {
    /// The name as written in descriptors (`"tfrc"`, `"gtfrc"`, `"tfrc-sp"`, `"fixed"`,
    /// `"none"`).
    pub fn name(self) -> &'static str {
        match self {
            RateControlKind::Tfrc => "tfrc",
            RateControlKind::Gtfrc => "gtfrc",
            RateControlKind::TfrcSp => "tfrc-sp",
            RateControlKind::Fixed => "fixed",
            RateControlKind::None => "none",
        }
    }

    /// True for the mechanisms driven by the TFRC core (`tfrc`, `gtfrc`, `tfrc-sp`).
    pub fn is_tfrc(self) -> bool {
        matches!(
            self,
            RateControlKind::Tfrc | RateControlKind::Gtfrc | RateControlKind::TfrcSp
        )
    }
}

/// How lost data of a stream is repaired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReliabilityKind {
    /// Nothing is retransmitted.
    None,
    /// Everything lost is retransmitted until acknowledged (the default).
    #[default]
    Full,
    /// At most `max_retransmissions` retransmissions of each fragment, and none after the
    /// message's deadline.
    Partial,
}

/// In which order complete messages are given to the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OrderingKind {
    /// As soon as complete.
    None,
    /// In sending order within the stream, or within its `group` when one is named.
    Partial,
    /// In sending order across every stream of the session whose ordering is `full` (the
    /// default).
    #[default]
    Full,
}

/// How streams share the packets the rate control allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SchedulerKind {
    /// Strict priority: a stream is served only when every stream of a better (lower)
    /// priority has nothing to send; equal priorities take turns (the default).
    #[default]
    Strict,
    /// Weighted round robin: every stream with data is served, priority `p` with weight
    /// `2^(7 - min(p, 7))`, so better priorities get more packets but none starves.
    Weighted,
}

/// A rate in bits per second: a number or a text such as `"2Mbps"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RateValue {
    /// Bits per second.
    BitsPerSecond(f64),
    /// A text with a unit (`"2Mbps"`, `"800k"`), read by the toolkit's units grammar.
    Text(String),
}

impl RateValue {
    /// The rate in bits per second, or an error naming the bad value.
    pub fn bits_per_second(&self) -> Result<f64, ValueError> {
        match self {
            RateValue::BitsPerSecond(value) if value.is_finite() && *value > 0.0 => Ok(*value),
            RateValue::BitsPerSecond(value) => Err(ValueError::NotPositiveRate(*value)),
            RateValue::Text(text) => Ok(tfrc_units::positive_rate(text)?.bits_per_second() as f64),
        }
    }
}

/// Why a descriptor's rate or duration value is unusable (its text is the `problem` of
/// [`DescriptorError::Invalid`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// A number of bits/s that is not finite and positive.
    #[error("{0} is not a positive number of bits/s")]
    NotPositiveRate(f64),
    /// A number of seconds that is not finite and positive.
    #[error("{0} is not a positive number of seconds")]
    NotPositiveSeconds(f64),
    /// A text the units grammar does not read (the grammar's message).
    #[error(transparent)]
    Units(#[from] tfrc_units::UnitError),
}

/// A duration: a text with a unit such as `"150ms"`, or a number of seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DurationValue {
    /// Seconds.
    Seconds(f64),
    /// A text with a unit (`"150ms"`), read by the toolkit's units grammar as a flag is (a bare
    /// number in the text is seconds).
    Text(String),
}

impl DurationValue {
    /// The duration, or an error naming the bad value.
    pub fn duration(&self) -> Result<Duration, ValueError> {
        match self {
            DurationValue::Seconds(value) if value.is_finite() && *value > 0.0 => {
                Ok(Duration::from_secs_f64(*value))
            }
            DurationValue::Seconds(value) => Err(ValueError::NotPositiveSeconds(*value)),
            DurationValue::Text(text) => Ok(tfrc_units::parse_duration_flag(text)?),
        }
    }

    /// A duration written in milliseconds (for descriptors built in code).
    pub fn millis(millis: u64) -> DurationValue {
        DurationValue::Text(format!("{millis}ms"))
    }
}

/// What one stream needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamDescriptor {
    /// Stream id used by `send`, 0..=32767, unique in the session.
    pub id: u16,
    /// A name for reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Reliability mechanism.
    #[serde(default)]
    pub reliability: ReliabilityKind,
    /// With `partial` reliability: most retransmissions of each fragment (0 = none). Without it,
    /// partial reliability retransmits until the deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retransmissions: Option<u32>,
    /// Ordering mechanism.
    #[serde(default)]
    pub ordering: OrderingKind,
    /// With `partial` ordering: streams naming the same group are ordered together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Time control: a message not delivered within this time after `send` is dropped (at the
    /// sender if not yet sent, at the receiver if it completes later) and counted as late.
    /// Per-message options can override it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DurationValue>,
    /// Priority for multiplexing: 0 is the most urgent.
    #[serde(default)]
    pub priority: u8,
}

impl StreamDescriptor {
    /// A stream with the defaults: full reliability, full ordering, no deadline, priority 0.
    pub fn new(id: u16) -> StreamDescriptor {
        StreamDescriptor {
            id,
            name: None,
            reliability: ReliabilityKind::Full,
            max_retransmissions: None,
            ordering: OrderingKind::Full,
            group: None,
            deadline: None,
            priority: 0,
        }
    }

    /// The deadline as a duration (valid descriptors only).
    pub fn deadline_duration(&self) -> Option<Duration> {
        self.deadline
            .as_ref()
            .and_then(|value| value.duration().ok())
    }
}

/// The QoS session descriptor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Descriptor {
    /// Rate control mechanism.
    #[serde(default)]
    pub rate_control: RateControlKind,
    /// gTFRC target rate g (bits/s): the rate floor. Required with `gtfrc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_rate: Option<RateValue>,
    /// The constant rate (bits/s) of `fixed` rate control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_rate: Option<RateValue>,
    /// Size s of a full data packet in bytes (UDP payload), used by TFRC's equation. Default 1200.
    #[serde(default = "default_packet_size")]
    pub packet_size: u32,
    /// How streams share the rate.
    #[serde(default)]
    pub scheduler: SchedulerKind,
    /// Send a keep-alive after this long without sending anything. Default 1 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keepalive: Option<DurationValue>,
    /// Declare the peer gone after this long without hearing from it. Default 10 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<DurationValue>,
    /// Largest message in bytes. Default 4 MiB.
    #[serde(default = "default_max_message_size")]
    pub max_message_size: u32,
    /// Most bytes of messages waiting at the sender (unsent or unacknowledged). Default 16 MiB.
    #[serde(default = "default_send_buffer")]
    pub send_buffer: u64,
    /// The streams; at least one.
    #[serde(rename = "stream")]
    pub streams: Vec<StreamDescriptor>,
}

fn default_packet_size() -> u32 {
    1200
}

fn default_max_message_size() -> u32 {
    4 << 20
}

fn default_send_buffer() -> u64 {
    16 << 20
}

/// Default keep-alive interval.
pub const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(1);
/// Default idle timeout.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a descriptor was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DescriptorError {
    /// The text is not valid TOML/JSON or does not follow the schema.
    #[error("cannot read the descriptor: {0}")]
    Syntax(String),
    /// A field has a value outside its domain.
    #[error("descriptor field `{field}`: {problem}")]
    Invalid {
        /// Where, e.g. `stream[1].deadline`.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// The file could not be read.
    #[error("cannot read descriptor file {path}: {problem}")]
    File {
        /// The path given.
        path: String,
        /// The I/O error.
        problem: String,
    },
}

fn invalid(field: impl Into<String>, problem: impl ToString) -> DescriptorError {
    DescriptorError::Invalid {
        field: field.into(),
        problem: problem.to_string(),
    }
}

impl Descriptor {
    /// A descriptor with one default stream (id 0) and the given rate control.
    pub fn single_stream(rate_control: RateControlKind) -> Descriptor {
        Descriptor {
            rate_control,
            target_rate: None,
            fixed_rate: None,
            packet_size: default_packet_size(),
            scheduler: SchedulerKind::Strict,
            keepalive: None,
            idle_timeout: None,
            max_message_size: default_max_message_size(),
            send_buffer: default_send_buffer(),
            streams: vec![StreamDescriptor::new(0)],
        }
    }

    /// Parses TOML text and validates it.
    pub fn from_toml(text: &str) -> Result<Descriptor, DescriptorError> {
        let descriptor: Descriptor =
            toml::from_str(text).map_err(|error| DescriptorError::Syntax(error.to_string()))?;
        descriptor.validate()?;
        Ok(descriptor)
    }

    /// Parses JSON text and validates it.
    pub fn from_json(text: &str) -> Result<Descriptor, DescriptorError> {
        let descriptor: Descriptor = serde_json::from_str(text)
            .map_err(|error| DescriptorError::Syntax(error.to_string()))?;
        descriptor.validate()?;
        Ok(descriptor)
    }

    /// Parses JSON bytes received from the peer.
    pub fn from_json_bytes(bytes: &[u8]) -> Result<Descriptor, DescriptorError> {
        let text = core::str::from_utf8(bytes)
            .map_err(|_| DescriptorError::Syntax("descriptor is not UTF-8".into()))?;
        Descriptor::from_json(text)
    }

    /// Reads a descriptor file: `.json` is JSON, anything else TOML.
    pub fn from_file(path: &Path) -> Result<Descriptor, DescriptorError> {
        let text = std::fs::read_to_string(path).map_err(|error| DescriptorError::File {
            path: path.display().to_string(),
            problem: error.to_string(),
        })?;
        let is_json = path
            .extension()
            .is_some_and(|extension| extension.eq_ignore_ascii_case("json"));
        let parsed = if is_json {
            Descriptor::from_json(&text)
        } else {
            Descriptor::from_toml(&text)
        };
        parsed.map_err(|error| match error {
            DescriptorError::Syntax(problem) => {
                DescriptorError::Syntax(format!("{}: {problem}", path.display()))
            }
            other => other,
        })
    }

    /// The JSON form sent on the wire.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Checks every field; the error names the field.
    pub fn validate(&self) -> Result<(), DescriptorError> {
        self.validate_rate_control()?;
        self.validate_session_limits()?;
        self.validate_streams()
    }

    /// The packet size, the rates, and the rate each rate control needs.
    fn validate_rate_control(&self) -> Result<(), DescriptorError> {
        if !(MIN_PACKET_SIZE..=MAX_PACKET_SIZE).contains(&self.packet_size) {
            return Err(invalid(
                "packet_size",
                format!(
                    "must be between {MIN_PACKET_SIZE} and {MAX_PACKET_SIZE} bytes, got {}",
                    self.packet_size
                ),
            ));
        }
        if let Some(rate) = &self.target_rate {
            rate.bits_per_second()
                .map_err(|problem| invalid("target_rate", problem))?;
        }
        if let Some(rate) = &self.fixed_rate {
            rate.bits_per_second()
                .map_err(|problem| invalid("fixed_rate", problem))?;
        }
        match self.rate_control {
            RateControlKind::Gtfrc if self.target_rate.is_none() => {
                return Err(invalid(
                    "target_rate",
                    "rate_control \"gtfrc\" needs a target_rate",
                ))
            }
            RateControlKind::Fixed if self.fixed_rate.is_none() => {
                return Err(invalid(
                    "fixed_rate",
                    "rate_control \"fixed\" needs a fixed_rate",
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// The timers (a keep-alive shorter than the idle timeout) and the message and buffer
    /// sizes.
    fn validate_session_limits(&self) -> Result<(), DescriptorError> {
        for (field, value) in [
            ("keepalive", &self.keepalive),
            ("idle_timeout", &self.idle_timeout),
        ] {
            if let Some(value) = value {
                value
                    .duration()
                    .map_err(|problem| invalid(field, problem))?;
            }
        }
        if self.keepalive_interval() >= self.idle_timeout_duration() {
            return Err(invalid(
                "keepalive",
                "must be shorter than idle_timeout, or the peer would be declared gone between \
                 keep-alives",
            ));
        }
        if self.max_message_size == 0 {
            return Err(invalid("max_message_size", "must be at least 1 byte"));
        }
        if self.send_buffer < u64::from(self.max_message_size) {
            return Err(invalid(
                "send_buffer",
                format!(
                    "must hold at least one message of max_message_size = {} bytes",
                    self.max_message_size
                ),
            ));
        }
        Ok(())
    }

    /// At least one stream, unique ids, each stream valid, not too many ordering groups.
    fn validate_streams(&self) -> Result<(), DescriptorError> {
        if self.streams.is_empty() {
            return Err(invalid("stream", "at least one [[stream]] is needed"));
        }
        let mut ids = BTreeSet::new();
        for (index, stream) in self.streams.iter().enumerate() {
            let field = |name: &str| format!("stream[{index}].{name}");
            if stream.id > MAX_STREAM_ID {
                return Err(invalid(
                    field("id"),
                    format!("must be at most {MAX_STREAM_ID}, got {}", stream.id),
                ));
            }
            if !ids.insert(stream.id) {
                return Err(invalid(
                    field("id"),
                    format!("stream id {} appears twice", stream.id),
                ));
            }
            Self::validate_stream(stream, index)?;
        }
        let groups: BTreeSet<&str> = self
            .streams
            .iter()
            .filter_map(|stream| stream.group.as_deref())
            .collect();
        if groups.len() > 0x7ffe {
            return Err(invalid("stream", "too many ordering groups"));
        }
        Ok(())
    }

    /// A stream's deadline, and the reliability and ordering options that only some modes
    /// take; errors name the field as `stream[index].name`.
    fn validate_stream(stream: &StreamDescriptor, index: usize) -> Result<(), DescriptorError> {
        let field = |name: &str| format!("stream[{index}].{name}");
        if let Some(deadline) = &stream.deadline {
            deadline
                .duration()
                .map_err(|problem| invalid(field("deadline"), problem))?;
        }
        match stream.reliability {
            ReliabilityKind::Partial => {
                if stream.max_retransmissions.is_none() && stream.deadline.is_none() {
                    return Err(invalid(
                        field("reliability"),
                        "partial reliability needs max_retransmissions or a deadline (or \
                         both)",
                    ));
                }
            }
            _ => {
                if stream.max_retransmissions.is_some() {
                    return Err(invalid(
                        field("max_retransmissions"),
                        "only meaningful with reliability = \"partial\"",
                    ));
                }
            }
        }
        if stream.group.is_some() && stream.ordering != OrderingKind::Partial {
            return Err(invalid(
                field("group"),
                "only meaningful with ordering = \"partial\"",
            ));
        }
        Ok(())
    }

    /// The stream with this id.
    pub fn stream(&self, id: u16) -> Option<&StreamDescriptor> {
        self.streams.iter().find(|stream| stream.id == id)
    }

    /// gTFRC target rate in bytes/s, if any.
    pub fn target_rate_bytes(&self) -> Option<f64> {
        self.target_rate
            .as_ref()
            .and_then(|rate| rate.bits_per_second().ok())
            .map(|bits| bits / 8.0)
    }

    /// Fixed rate in bytes/s, if any.
    pub fn fixed_rate_bytes(&self) -> Option<f64> {
        self.fixed_rate
            .as_ref()
            .and_then(|rate| rate.bits_per_second().ok())
            .map(|bits| bits / 8.0)
    }

    /// Keep-alive interval.
    pub fn keepalive_interval(&self) -> Duration {
        self.keepalive
            .as_ref()
            .and_then(|value| value.duration().ok())
            .unwrap_or(DEFAULT_KEEPALIVE)
    }

    /// Idle timeout.
    pub fn idle_timeout_duration(&self) -> Duration {
        self.idle_timeout
            .as_ref()
            .and_then(|value| value.duration().ok())
            .unwrap_or(DEFAULT_IDLE_TIMEOUT)
    }

    /// The ordering domain of a stream: the wire id under which its messages are numbered, and
    /// whether they are delivered in order. Unordered streams and partially ordered streams
    /// without a group are their own domain (the stream id); named groups are `0x8000 + i`
    /// (i = rank of the group name); full ordering is `0xffff`.
    pub fn ordering_domain(&self, stream: &StreamDescriptor) -> (u16, bool) {
        match (stream.ordering, &stream.group) {
            (OrderingKind::None, _) => (stream.id, false),
            (OrderingKind::Partial, None) => (stream.id, true),
            (OrderingKind::Partial, Some(group)) => {
                let groups: BTreeSet<&str> = self
                    .streams
                    .iter()
                    .filter_map(|stream| stream.group.as_deref())
                    .collect();
                let rank = groups.iter().position(|name| *name == group).unwrap_or(0);
                (0x8000 + rank as u16, true)
            }
            (OrderingKind::Full, _) => (FULL_ORDER_DOMAIN, true),
        }
    }

    /// Checks that `self` may replace `current` during a session.
    pub fn check_change_from(&self, current: &Descriptor) -> Result<(), DescriptorError> {
        self.validate()?;
        if self.packet_size != current.packet_size {
            return Err(invalid(
                "packet_size",
                format!(
                    "cannot change during a session ({} -> {})",
                    current.packet_size, self.packet_size
                ),
            ));
        }
        Ok(())
    }
}

/// The wire id of the session-wide ordering domain.
pub const FULL_ORDER_DOMAIN: u16 = 0xffff;

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
rate_control = "gtfrc"
target_rate = "1.5Mbps"
packet_size = 1200
scheduler = "strict"

[[stream]]
id = 0
name = "video"
reliability = "partial"
max_retransmissions = 1
ordering = "partial"
deadline = "300ms"
priority = 1

[[stream]]
id = 1
name = "control"
reliability = "full"
ordering = "full"
priority = 0
"#;

    /// Rate and duration values are typed errors with the texts a descriptor error quotes.
    #[test]
    fn bad_values_are_typed_and_named() {
        assert_eq!(
            RateValue::BitsPerSecond(-1.0).bits_per_second(),
            Err(ValueError::NotPositiveRate(-1.0))
        );
        assert_eq!(
            DurationValue::Seconds(0.0)
                .duration()
                .unwrap_err()
                .to_string(),
            "0 is not a positive number of seconds"
        );
        assert!(matches!(
            RateValue::Text("fast".into()).bits_per_second(),
            Err(ValueError::Units(_))
        ));
    }
    #[test]
    fn parses_the_example_and_its_json_form() {
        let descriptor = Descriptor::from_toml(EXAMPLE).unwrap();
        assert_eq!(descriptor.rate_control, RateControlKind::Gtfrc);
        assert_eq!(descriptor.target_rate_bytes(), Some(1.5e6 / 8.0));
        assert_eq!(
            descriptor.streams[0].deadline_duration(),
            Some(Duration::from_millis(300))
        );
        let again = Descriptor::from_json(&descriptor.to_json()).unwrap();
        assert_eq!(again, descriptor);
        assert_eq!(
            descriptor.ordering_domain(&descriptor.streams[0]),
            (0, true)
        );
        assert_eq!(
            descriptor.ordering_domain(&descriptor.streams[1]),
            (FULL_ORDER_DOMAIN, true)
        );
    }

    #[test]
    fn invalid_descriptors_name_the_field() {
        let cases = [
            (
                EXAMPLE.replace("target_rate = \"1.5Mbps\"", ""),
                "target_rate",
            ),
            (EXAMPLE.replace("1.5Mbps", "fast"), "target_rate"),
            (EXAMPLE.replace("300ms", "-3ms"), "stream[0].deadline"),
            (EXAMPLE.replace("id = 1", "id = 0"), "stream[1].id"),
            (
                EXAMPLE.replace("packet_size = 1200", "packet_size = 20"),
                "packet_size",
            ),
            (
                EXAMPLE
                    .replace("max_retransmissions = 1\n", "")
                    .replace("deadline = \"300ms\"", ""),
                "stream[0].reliability",
            ),
            (
                EXAMPLE.replace("priority = 0", "priority = 0\ncolour = 3"),
                "colour",
            ),
            (EXAMPLE.replace("\"strict\"", "\"fifo\""), "fifo"),
        ];
        for (text, needle) in cases {
            let error = Descriptor::from_toml(&text).unwrap_err().to_string();
            assert!(error.contains(needle), "{error:?} should name {needle:?}");
        }
        assert!(Descriptor::from_json("{").is_err());
        assert!(Descriptor::from_json(r#"{"stream": []}"#)
            .unwrap_err()
            .to_string()
            .contains("at least one"));
    }

    #[test]
    fn packet_size_cannot_change_mid_session() {
        let current = Descriptor::from_toml(EXAMPLE).unwrap();
        let mut next = current.clone();
        next.rate_control = RateControlKind::Tfrc;
        assert!(next.check_change_from(&current).is_ok());
        next.packet_size = 1000;
        assert!(next
            .check_change_from(&current)
            .unwrap_err()
            .to_string()
            .contains("packet_size"));
    }
}
