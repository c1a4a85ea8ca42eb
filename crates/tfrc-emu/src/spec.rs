//! The command-line syntax of link elements, shared by `tfrc emulate` and `tfrc testbed up`.
//!
//! Every element is one token (documented in `docs/emulator.md`):
//!
//! | flag | syntax | example |
//! |---|---|---|
//! | `--rate` | a rate (`tfrc_scenario::units`) | `1Mbps`, `800kbps`, `1000000` |
//! | `--delay` | a duration with unit | `25ms` |
//! | `--trace` | a Mahimahi delivery trace file (instead of `--rate`), then optional `:offset=D` (where in the trace time 0 is) and `:opportunity=bytes` (Mahimahi's rule, the default: each opportunity carries 1500 bytes that packets share) or `:opportunity=packet` (one packet per opportunity) | `down.trace`, `up.trace:opportunity=packet` |
//! | `--queue` | `droptail[:LIMIT]`, `red[:KEY=VALUE,…]`, `rio[:KEY=VALUE,…]` | `red:limit=50,min_th=5,max_th=15` |
//! | `--loss` | `bernoulli:P`, `exponential:GAP`, `gilbert-elliott:P_GB:P_BG[:LOSS_GOOD:LOSS_BAD]`, `none`; then optional `:start=D`, `:stop=D` | `bernoulli:0.01:start=30s:stop=90s` |
//! | `--marker` | `token-bucket:RATE:BUCKET_BYTES[:ports=P,P…]` | `token-bucket:800kbps:10000` |
//!
//! Each flag may be repeated; a value prefixed `forward=` (or `fwd=`) sets the forward direction
//! only (from the sender side to the receiver side), `reverse=` (or `rev=`) the reverse direction
//! only; an unprefixed value sets both. A later value overrides an earlier one for the same
//! direction (markers accumulate).

use core::time::Duration;
use std::path::PathBuf;

use tfrc_proto::Instant;
use tfrc_scenario::units::{parse_duration, parse_rate};
use tfrc_sim::{
    FlowId, FlowSelector, GilbertElliottParams, LinkDirectionConfig, LossConfig, LossKind,
    OpportunityUse, QueueConfig, RedParams, RioParams, TimeWindow, TokenBucketConfig, Transmitter,
};

/// A command-line value that could not be understood: names the flag and the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value {value:?} for {flag}: {reason}")]
pub struct SpecError {
    /// The flag (`--queue`).
    pub flag: String,
    /// The value as given.
    pub value: String,
    /// What is wrong with it.
    pub reason: String,
}

impl SpecError {
    fn new(flag: &str, value: &str, reason: impl Into<String>) -> Self {
        SpecError {
            flag: flag.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}

/// Which direction of the emulated link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the sender side (relay: the `--listen` side) to the receiver side.
    Forward,
    /// From the receiver side back to the sender side.
    Reverse,
}

impl Direction {
    /// Both directions, forward first.
    pub const BOTH: [Direction; 2] = [Direction::Forward, Direction::Reverse];

    /// `forward` or `reverse`.
    pub const fn name(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::Reverse => "reverse",
        }
    }
}

/// How fast a direction sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapacitySpec {
    /// A constant rate in bits/s.
    Rate(u64),
    /// A Mahimahi delivery trace file.
    Trace {
        /// The file.
        path: PathBuf,
        /// Where in the trace the emulator's time 0 is.
        offset: Duration,
        /// How queued packets use its opportunities (Mahimahi's shared bytes by default).
        opportunity: OpportunityUse,
    },
}

/// A token-bucket marker of one direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerSpec {
    /// Token rate in bits/s.
    pub rate_bits_per_second: u64,
    /// Bucket depth in bytes.
    pub bucket_bytes: u64,
    /// The flows marked (one shared bucket); `None` = every packet of the direction. In relay
    /// mode a flow is a client's source port, in the testbed the lower port of a TCP/UDP packet.
    pub flows: Option<Vec<FlowId>>,
}

/// Everything that describes one emulated link direction.
#[derive(Debug, Clone, PartialEq)]
pub struct DirectionSpec {
    /// Constant rate or trace.
    pub capacity: CapacitySpec,
    /// One-way propagation delay.
    pub delay: Duration,
    /// The queue.
    pub queue: QueueConfig,
    /// Loss model, if any (its window is relative to the emulator's start).
    pub loss: Option<LossConfig>,
    /// Markers, applied in order.
    pub markers: Vec<MarkerSpec>,
}

impl Default for DirectionSpec {
    /// 10 Mb/s, no delay, DropTail 50, no loss, no marker.
    fn default() -> Self {
        DirectionSpec {
            capacity: CapacitySpec::Rate(10_000_000),
            delay: Duration::ZERO,
            queue: QueueConfig::DropTail { limit: 50 },
            loss: None,
            markers: Vec::new(),
        }
    }
}

impl DirectionSpec {
    /// The simulator's configuration of this direction; a trace file is read here and starts
    /// at `start` (the emulator's time origin).
    pub fn to_config(&self, start: Instant) -> anyhow::Result<LinkDirectionConfig> {
        let transmitter = match &self.capacity {
            CapacitySpec::Rate(bits) => Transmitter::fixed_rate(*bits)?,
            CapacitySpec::Trace {
                path,
                offset,
                opportunity,
            } => Transmitter::trace_file(path, *offset, start, *opportunity)?,
        };
        Ok(LinkDirectionConfig {
            transmitter,
            propagation_delay: self.delay,
            queue: self.queue.clone(),
            markers: self
                .markers
                .iter()
                .map(|marker| TokenBucketConfig {
                    rate_bits_per_second: marker.rate_bits_per_second,
                    bucket_bytes: marker.bucket_bytes,
                    flows: match &marker.flows {
                        None => FlowSelector::All,
                        Some(flows) => FlowSelector::Flows(flows.clone()),
                    },
                })
                .collect(),
            loss: self.loss,
        })
    }

    /// The constant rate in bits/s, `None` for a trace.
    pub fn rate_bits_per_second(&self) -> Option<u64> {
        match self.capacity {
            CapacitySpec::Rate(bits) => Some(bits),
            CapacitySpec::Trace { .. } => None,
        }
    }
}

/// The two directions of an emulated link.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LinkSpec {
    /// Sender side → receiver side.
    pub forward: DirectionSpec,
    /// Receiver side → sender side.
    pub reverse: DirectionSpec,
}

/// The raw values of the per-direction flags, as given on the command line.
#[derive(Debug, Clone, Default)]
pub struct LinkFlags<'a> {
    /// `--rate` values.
    pub rate: &'a [String],
    /// `--delay` values.
    pub delay: &'a [String],
    /// `--trace` values.
    pub trace: &'a [String],
    /// `--queue` values.
    pub queue: &'a [String],
    /// `--loss` values.
    pub loss: &'a [String],
    /// `--marker` values.
    pub marker: &'a [String],
}

impl LinkSpec {
    /// Builds both directions from the flags, starting from the defaults (10 Mb/s, no delay,
    /// DropTail 50).
    pub fn from_flags(flags: &LinkFlags<'_>) -> Result<LinkSpec, SpecError> {
        let mut link = LinkSpec::default();
        for value in flags.rate {
            let (directions, text) = split_direction("--rate", value)?;
            let rate = parse_rate(text)
                .map_err(|error| SpecError::new("--rate", value, error.message()))?;
            if rate.bits_per_second() == 0 {
                return Err(SpecError::new("--rate", value, "the rate must be above 0"));
            }
            for direction in directions {
                link.direction_mut(direction).capacity = CapacitySpec::Rate(rate.bits_per_second());
            }
        }
        for value in flags.trace {
            let (directions, text) = split_direction("--trace", value)?;
            let capacity =
                parse_trace(text).map_err(|reason| SpecError::new("--trace", value, reason))?;
            for direction in directions {
                link.direction_mut(direction).capacity = capacity.clone();
            }
        }
        for value in flags.delay {
            let (directions, text) = split_direction("--delay", value)?;
            let delay = parse_duration(text)
                .map_err(|error| SpecError::new("--delay", value, error.message()))?;
            for direction in directions {
                link.direction_mut(direction).delay = delay;
            }
        }
        for value in flags.queue {
            let (directions, text) = split_direction("--queue", value)?;
            let queue =
                parse_queue(text).map_err(|reason| SpecError::new("--queue", value, reason))?;
            for direction in directions {
                link.direction_mut(direction).queue = queue.clone();
            }
        }
        for value in flags.loss {
            let (directions, text) = split_direction("--loss", value)?;
            let loss =
                parse_loss(text).map_err(|reason| SpecError::new("--loss", value, reason))?;
            for direction in directions {
                link.direction_mut(direction).loss = loss;
            }
        }
        for value in flags.marker {
            let (directions, text) = split_direction("--marker", value)?;
            let marker =
                parse_marker(text).map_err(|reason| SpecError::new("--marker", value, reason))?;
            for direction in directions {
                link.direction_mut(direction).markers.push(marker.clone());
            }
        }
        Ok(link)
    }

    /// One direction.
    pub fn direction(&self, direction: Direction) -> &DirectionSpec {
        match direction {
            Direction::Forward => &self.forward,
            Direction::Reverse => &self.reverse,
        }
    }

    /// One direction, mutable.
    pub fn direction_mut(&mut self, direction: Direction) -> &mut DirectionSpec {
        match direction {
            Direction::Forward => &mut self.forward,
            Direction::Reverse => &mut self.reverse,
        }
    }
}

/// Splits an optional `forward=` / `reverse=` prefix off a value.
fn split_direction<'a>(flag: &str, value: &'a str) -> Result<(Vec<Direction>, &'a str), SpecError> {
    let value_trimmed = value.trim();
    if let Some((prefix, rest)) = value_trimmed.split_once('=') {
        let directions = match prefix {
            "forward" | "fwd" => Some(vec![Direction::Forward]),
            "reverse" | "rev" => Some(vec![Direction::Reverse]),
            "both" => Some(Direction::BOTH.to_vec()),
            _ => None,
        };
        if let Some(directions) = directions {
            if rest.trim().is_empty() {
                return Err(SpecError::new(
                    flag,
                    value,
                    "nothing after the direction prefix",
                ));
            }
            return Ok((directions, rest.trim()));
        }
    }
    if value_trimmed.is_empty() {
        return Err(SpecError::new(flag, value, "empty value"));
    }
    Ok((Direction::BOTH.to_vec(), value_trimmed))
}

/// Parses a trace: `FILE[:offset=D][:opportunity=bytes|packet]` (options at the end, in any
/// order, so a file name may itself hold `:`). The file must exist.
pub fn parse_trace(text: &str) -> Result<CapacitySpec, String> {
    let mut path = text;
    let mut offset = Duration::ZERO;
    let mut opportunity = OpportunityUse::default();
    while let Some((head, option)) = path.rsplit_once(':') {
        if let Some(value) = option.strip_prefix("offset=") {
            offset =
                parse_duration(value).map_err(|error| format!("offset: {}", error.message()))?;
        } else if let Some(value) = option.strip_prefix("opportunity=") {
            opportunity = tfrc_scenario::TraceOpportunity::from_name(value)
                .ok_or_else(|| format!(
                    "opportunity: expected bytes (Mahimahi: 1500 bytes per opportunity shared by the queued packets) or packet (one packet per opportunity), got {value:?}"
                ))?
                .into();
        } else {
            break;
        }
        path = head;
    }
    let path = PathBuf::from(path);
    if !path.is_file() {
        return Err(format!("{}: no such file", path.display()));
    }
    Ok(CapacitySpec::Trace {
        path,
        offset,
        opportunity,
    })
}

/// Parses a queue: `droptail[:LIMIT]`, `red[:KEY=VALUE,…]` (keys `limit`, `min_th`, `max_th`,
/// `max_p`, `weight`, `gentle`, `ecn`), `rio[:KEY=VALUE,…]` (keys `limit`, `min_in`, `max_in`,
/// `p_in`, `min_out`, `max_out`, `p_out`, `weight`, `ecn`). Defaults are the simulator's.
/// Parameters are validated by building the queue once.
pub fn parse_queue(text: &str) -> Result<QueueConfig, String> {
    let (kind, rest) = match text.split_once(':') {
        Some((kind, rest)) => (kind, Some(rest)),
        None => (text, None),
    };
    let config = match kind {
        "droptail" => {
            let limit = match rest {
                None => 50,
                Some(rest) => {
                    let rest = rest.strip_prefix("limit=").unwrap_or(rest);
                    parse_count(rest, "limit")?
                }
            };
            QueueConfig::DropTail { limit }
        }
        "red" => {
            let mut params = RedParams::default();
            for (key, value) in key_values(rest)? {
                match key {
                    "limit" => params.limit = parse_count(value, key)?,
                    "min_th" | "min" => params.min_threshold = parse_number(value, key)?,
                    "max_th" | "max" => params.max_threshold = parse_number(value, key)?,
                    "max_p" | "p" => params.max_probability = parse_number(value, key)?,
                    "weight" | "w" => params.weight = parse_number(value, key)?,
                    "gentle" => params.gentle = parse_bool(value, key)?,
                    "ecn" => params.ecn = parse_bool(value, key)?,
                    _ => {
                        return Err(format!(
                            "unknown RED key `{key}`; expected limit, min_th, max_th, max_p, weight, gentle, ecn"
                        ))
                    }
                }
            }
            QueueConfig::Red(params)
        }
        "rio" => {
            let mut params = RioParams::default();
            for (key, value) in key_values(rest)? {
                match key {
                    "limit" => params.limit = parse_count(value, key)?,
                    "min_in" => params.in_profile.min_threshold = parse_number(value, key)?,
                    "max_in" => params.in_profile.max_threshold = parse_number(value, key)?,
                    "p_in" => params.in_profile.max_probability = parse_number(value, key)?,
                    "min_out" => params.out_profile.min_threshold = parse_number(value, key)?,
                    "max_out" => params.out_profile.max_threshold = parse_number(value, key)?,
                    "p_out" => params.out_profile.max_probability = parse_number(value, key)?,
                    "weight" | "w" => params.weight = parse_number(value, key)?,
                    "ecn" => params.ecn = parse_bool(value, key)?,
                    _ => {
                        return Err(format!(
                            "unknown RIO key `{key}`; expected limit, min_in, max_in, p_in, min_out, max_out, p_out, weight, ecn"
                        ))
                    }
                }
            }
            QueueConfig::Rio(params)
        }
        _ => {
            return Err(format!(
                "unknown queue kind `{kind}`; expected droptail[:LIMIT], red[:KEY=VALUE,…] or rio[:KEY=VALUE,…]"
            ))
        }
    };
    config.build(0).map_err(|error| error.to_string())?;
    Ok(config)
}

/// Parses a loss model: `bernoulli:P`, `exponential:MEAN_GAP`,
/// `gilbert-elliott:P_GB:P_BG[:LOSS_GOOD:LOSS_BAD]` or `none`, optionally followed by
/// `:start=D` and `:stop=D` (times since the emulator started). Validated by building it once.
pub fn parse_loss(text: &str) -> Result<Option<LossConfig>, String> {
    let mut parts: Vec<&str> = text.split(':').collect();
    let mut start = Duration::ZERO;
    let mut stop = None;
    while let Some(last) = parts.last() {
        if let Some(value) = last.strip_prefix("start=") {
            start = parse_duration(value).map_err(|error| format!("start: {}", error.message()))?;
        } else if let Some(value) = last.strip_prefix("stop=") {
            stop =
                Some(parse_duration(value).map_err(|error| format!("stop: {}", error.message()))?);
        } else {
            break;
        }
        parts.pop();
    }
    let kind = match parts.as_slice() {
        ["none"] => return Ok(None),
        ["bernoulli", p] => LossKind::Bernoulli {
            probability: parse_number(p, "probability")?,
        },
        ["exponential", gap] => LossKind::ExponentialGaps {
            mean_gap: parse_duration(gap).map_err(|error| format!("mean gap: {}", error.message()))?,
        },
        ["gilbert-elliott", good_to_bad, bad_to_good] => LossKind::GilbertElliott(
            GilbertElliottParams::gilbert(
                parse_number(good_to_bad, "p_good_to_bad")?,
                parse_number(bad_to_good, "p_bad_to_good")?,
            ),
        ),
        ["gilbert-elliott", good_to_bad, bad_to_good, loss_good, loss_bad] => {
            LossKind::GilbertElliott(GilbertElliottParams {
                good_to_bad: parse_number(good_to_bad, "p_good_to_bad")?,
                bad_to_good: parse_number(bad_to_good, "p_bad_to_good")?,
                loss_in_good: parse_number(loss_good, "loss_good")?,
                loss_in_bad: parse_number(loss_bad, "loss_bad")?,
            })
        }
        _ => {
            return Err(
                "expected bernoulli:P, exponential:MEAN_GAP, gilbert-elliott:P_GB:P_BG[:LOSS_GOOD:LOSS_BAD] or none, optionally followed by :start=D and :stop=D".to_string(),
            )
        }
    };
    if let Some(stop) = stop {
        if stop <= start {
            return Err("stop must be after start".to_string());
        }
    }
    let window = (start > Duration::ZERO || stop.is_some()).then(|| TimeWindow {
        start: Instant::ZERO + start,
        stop: stop.map(|stop| Instant::ZERO + stop),
    });
    let config = LossConfig { kind, window };
    config.build(0).map_err(|error| error.to_string())?;
    Ok(Some(config))
}

/// Parses a marker: `token-bucket:RATE:BUCKET_BYTES[:ports=P,P,…]`.
pub fn parse_marker(text: &str) -> Result<MarkerSpec, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let (rate, bucket, ports) = match parts.as_slice() {
        ["token-bucket", rate, bucket] => (rate, bucket, None),
        ["token-bucket", rate, bucket, ports] => (rate, bucket, Some(ports)),
        _ => return Err("expected token-bucket:RATE:BUCKET_BYTES[:ports=P,P,…]".to_string()),
    };
    let rate = parse_rate(rate).map_err(|error| format!("rate: {}", error.message()))?;
    let bucket: u64 = bucket
        .trim()
        .parse()
        .map_err(|_| format!("bucket: expected a whole number of bytes, got {bucket:?}"))?;
    let flows = match ports {
        None => None,
        Some(ports) => {
            let list = ports
                .strip_prefix("ports=")
                .ok_or_else(|| format!("expected ports=P,P,… after the bucket, got {ports:?}"))?;
            let mut flows = list
                .split(',')
                .map(|port| {
                    port.trim()
                        .parse::<u16>()
                        .map(FlowId::from)
                        .map_err(|_| format!("ports: {port:?} is not a port number"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            flows.sort_unstable();
            flows.dedup();
            Some(flows)
        }
    };
    let spec = MarkerSpec {
        rate_bits_per_second: rate.bits_per_second(),
        bucket_bytes: bucket,
        flows,
    };
    TokenBucketConfig {
        rate_bits_per_second: spec.rate_bits_per_second,
        bucket_bytes: spec.bucket_bytes,
        flows: spec
            .flows
            .clone()
            .map_or(FlowSelector::All, FlowSelector::Flows),
    }
    .build()
    .map_err(|error| error.to_string())?;
    Ok(spec)
}

fn key_values(rest: Option<&str>) -> Result<Vec<(&str, &str)>, String> {
    let Some(rest) = rest else {
        return Ok(Vec::new());
    };
    rest.split(',')
        .filter(|item| !item.trim().is_empty())
        .map(|item| {
            item.split_once('=')
                .map(|(key, value)| (key.trim(), value.trim()))
                .ok_or_else(|| format!("expected KEY=VALUE, got {item:?}"))
        })
        .collect()
}

fn parse_count(text: &str, key: &str) -> Result<usize, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("{key}: expected a whole number of packets, got {text:?}"))
}

fn parse_number(text: &str, key: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        _ => Err(format!("{key}: expected a number, got {text:?}")),
    }
}

fn parse_bool(text: &str, key: &str) -> Result<bool, String> {
    match text.trim() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(format!("{key}: expected true or false, got {text:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_take_an_offset_and_mahimahi_s_shared_bytes_by_default() {
        let directory =
            std::env::temp_dir().join(format!("tfrc-spec-trace-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let file = directory.join("a:b.trace");
        std::fs::write(&file, "1\n2\n").unwrap();
        let name = file.display().to_string();
        let parsed = |text: &str| parse_trace(text);
        assert_eq!(
            parsed(&name),
            Ok(CapacitySpec::Trace {
                path: file.clone(),
                offset: Duration::ZERO,
                opportunity: OpportunityUse::SharedBytes,
            })
        );
        assert_eq!(
            parsed(&format!("{name}:opportunity=packet:offset=480s")),
            Ok(CapacitySpec::Trace {
                path: file.clone(),
                offset: Duration::from_secs(480),
                opportunity: OpportunityUse::PacketPerOpportunity,
            })
        );
        let error = parsed(&format!("{name}:opportunity=shared")).unwrap_err();
        assert!(
            error.contains("bytes") && error.contains("packet"),
            "{error}"
        );
        let error = parsed("/no/such.trace:opportunity=bytes").unwrap_err();
        assert!(error.contains("/no/such.trace: no such file"), "{error}");
        std::fs::remove_dir_all(&directory).ok();
    }

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|value| value.to_string()).collect()
    }

    #[test]
    fn unprefixed_values_set_both_directions_and_prefixes_one() {
        let rate = strings(&["1Mbps", "reverse=64kbps"]);
        let delay = strings(&["25ms"]);
        let loss = strings(&["forward=bernoulli:0.01:start=30s:stop=90s"]);
        let link = LinkSpec::from_flags(&LinkFlags {
            rate: &rate,
            delay: &delay,
            loss: &loss,
            ..LinkFlags::default()
        })
        .unwrap();
        assert_eq!(link.forward.capacity, CapacitySpec::Rate(1_000_000));
        assert_eq!(link.reverse.capacity, CapacitySpec::Rate(64_000));
        assert_eq!(link.forward.delay, Duration::from_millis(25));
        assert_eq!(link.reverse.delay, Duration::from_millis(25));
        let loss = link.forward.loss.unwrap();
        assert_eq!(loss.kind, LossKind::Bernoulli { probability: 0.01 });
        let window = loss.window.unwrap();
        assert_eq!(window.start, Instant::from_millis(30_000));
        assert_eq!(window.stop, Some(Instant::from_millis(90_000)));
        assert!(link.reverse.loss.is_none());
    }

    #[test]
    fn queues_parse_with_defaults_and_overrides() {
        assert_eq!(
            parse_queue("droptail:20").unwrap(),
            QueueConfig::DropTail { limit: 20 }
        );
        assert_eq!(
            parse_queue("droptail").unwrap(),
            QueueConfig::DropTail { limit: 50 }
        );
        let QueueConfig::Red(red) = parse_queue("red:min_th=3,max_th=9,gentle=true").unwrap()
        else {
            panic!("not RED");
        };
        assert_eq!(
            (red.min_threshold, red.max_threshold, red.gentle),
            (3.0, 9.0, true)
        );
        assert_eq!(red.weight, RedParams::default().weight);
        let QueueConfig::Rio(rio) = parse_queue("rio:min_out=5,max_out=15,p_in=0.05").unwrap()
        else {
            panic!("not RIO");
        };
        assert_eq!(rio.out_profile.min_threshold, 5.0);
        assert_eq!(rio.out_profile.max_threshold, 15.0);
        assert_eq!(rio.in_profile.max_probability, 0.05);
        assert_eq!(rio.in_profile.min_threshold, 20.0);
    }

    #[test]
    fn bad_values_name_the_flag_and_the_problem() {
        let cases = [
            ("--queue", "fifo:10"),
            ("--queue", "red:min_th=20,max_th=10"),
            ("--queue", "droptail:many"),
            ("--loss", "bernoulli:1.5"),
            ("--loss", "bernoulli:0.1:start=90s:stop=30s"),
            ("--loss", "uniform:0.1"),
            ("--marker", "token-bucket:fast:1000"),
            ("--marker", "token-bucket:800kbps:0"),
            ("--rate", "1MBps"),
            ("--rate", "forward="),
            ("--delay", "10"),
        ];
        for (flag, value) in cases {
            let values = strings(&[value]);
            let mut flags = LinkFlags::default();
            match flag {
                "--queue" => flags.queue = &values,
                "--loss" => flags.loss = &values,
                "--marker" => flags.marker = &values,
                "--rate" => flags.rate = &values,
                _ => flags.delay = &values,
            }
            let error = LinkSpec::from_flags(&flags).expect_err(value);
            let message = error.to_string();
            assert!(message.contains(flag), "{message}");
            assert!(message.contains(value), "{message}");
        }
    }

    #[test]
    fn markers_and_loss_models_parse() {
        let marker = parse_marker("token-bucket:800kbps:10000:ports=5202,5201").unwrap();
        assert_eq!(marker.rate_bits_per_second, 800_000);
        assert_eq!(marker.bucket_bytes, 10_000);
        assert_eq!(marker.flows, Some(vec![5201, 5202]));
        assert_eq!(parse_loss("none").unwrap(), None);
        let ge = parse_loss("gilbert-elliott:0.01:0.25").unwrap().unwrap();
        assert_eq!(
            ge.kind,
            LossKind::GilbertElliott(GilbertElliottParams::gilbert(0.01, 0.25))
        );
        let exp = parse_loss("exponential:2s").unwrap().unwrap();
        assert_eq!(
            exp.kind,
            LossKind::ExponentialGaps {
                mean_gap: Duration::from_secs(2)
            }
        );
    }
}
