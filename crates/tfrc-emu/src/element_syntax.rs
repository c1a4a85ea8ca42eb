//! The command-line syntax of link elements, shared by `tfrc emulate` and `tfrc testbed up`:
//! the scenario file's own grammar, written as flags. Each flag sets the link-direction key of
//! the same name in a `[[link]]` table (docs/scenario-format.md), which `tfrc-scenario`
//! resolves and validates exactly as in a file ([`tfrc_scenario::link_from_table`]): same keys,
//! same defaults, same checks, same messages.
//!
//! | flag | sets | syntax | example |
//! |---|---|---|---|
//! | `--rate` | `rate` | a rate (`tfrc_scenario::units`) | `1Mbps`, `800kbps`, `1000000` |
//! | `--delay` | `delay` | a duration with unit | `25ms` |
//! | `--trace` | `trace`, `trace_offset`, `trace_opportunity` | `FILE[:offset=D][:opportunity=bytes\|packet]` | `down.trace`, `up.trace:opportunity=packet` |
//! | `--queue` | `queue` | `KIND[:ITEM,…]` | `droptail:50`, `red:limit=50,min_th=5,max_th=15` |
//! | `--loss` | `loss` | `KIND[:ITEM,…]` or `none` | `bernoulli:0.01:start=30s:stop=90s` |
//! | `--marker` | a `[[marker]]` on the direction | `token-bucket:RATE:BUCKET_BYTES[:ports=P,P…]` | `token-bucket:800kbps:10000` |
//!
//! An ITEM is `KEY=VALUE` with the scenario table's keys, or a bare value for the next of the
//! kind's keys in their documented order ([`tfrc_scenario::table_keys`]: a queue's `limit`
//! first; a loss model's own keys, then `start` and `stop`); items are separated by `,` or `:`.
//! Values are TOML scalars (`50`, `0.01`, `true`) or else text (`30s`, `800kbps`).
//!
//! Each flag may be repeated; a value prefixed `forward=` (or `fwd=`) sets the forward direction
//! only (from the sender side to the receiver side), `reverse=` (or `rev=`) the reverse direction
//! only; an unprefixed value sets both. A later value overrides an earlier one for the same
//! direction (markers accumulate). Unset: 10 Mb/s, no delay, DropTail 50, no loss.

use core::time::Duration;
use std::path::PathBuf;

use tfrc_proto::Instant;
use tfrc_scenario::{Capacity, LinkDirectionSpec};
use tfrc_sim::{
    FlowId, FlowSelector, LinkDirectionConfig, LossConfig, OpportunityUse, QueueConfig, TimeWindow,
    TokenBucketConfig, Transmitter,
};
use tfrc_units::{parse_rate, parse_size};

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
    /// The emulated direction of a scenario's link direction, through the simulator's own
    /// conversions of its queue and loss model (markers are added by the caller: the scenario
    /// names their flows, the emulator selects them by port).
    pub fn from_scenario(spec: &LinkDirectionSpec) -> DirectionSpec {
        DirectionSpec {
            capacity: match &spec.capacity {
                Capacity::Rate(rate) => CapacitySpec::Rate(rate.bits_per_second()),
                Capacity::Trace {
                    path,
                    offset,
                    opportunity,
                } => CapacitySpec::Trace {
                    path: path.clone(),
                    offset: *offset,
                    opportunity: (*opportunity).into(),
                },
            },
            delay: spec.delay,
            queue: tfrc_sim::simulation::queue_config(&spec.queue),
            loss: spec.loss.as_ref().map(|loss| LossConfig {
                kind: tfrc_sim::simulation::loss_kind(&loss.model),
                window: (loss.start > Duration::ZERO || loss.stop.is_some()).then(|| TimeWindow {
                    start: Instant::ZERO + loss.start,
                    stop: loss.stop.map(|stop| Instant::ZERO + stop),
                }),
            }),
            markers: Vec::new(),
        }
    }

    /// The simulator's configuration of this direction; a trace file is read here and starts
    /// at `start` (the emulator's time origin).
    pub fn to_config(&self, start: Instant) -> crate::Result<LinkDirectionConfig> {
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
    /// Builds both directions from the flags through the scenario file's grammar (see the
    /// module documentation); unset keys take 10 Mb/s, no delay, DropTail 50, no loss.
    pub fn from_flags(flags: &LinkFlags<'_>) -> Result<LinkSpec, SpecError> {
        let mut tables = FlagTables::default();
        for (flag, key, values) in [
            ("--rate", "rate", flags.rate),
            ("--delay", "delay", flags.delay),
        ] {
            for value in values {
                let (directions, text) = split_direction(flag, value)?;
                for direction in directions {
                    tables.set(direction, key, flag, value, scalar(text));
                }
            }
        }
        for value in flags.trace {
            let (directions, text) = split_direction("--trace", value)?;
            let items =
                trace_items(text).map_err(|reason| SpecError::new("--trace", value, reason))?;
            for direction in directions {
                for (key, item) in &items {
                    tables.set(direction, key, "--trace", value, item.clone());
                }
            }
        }
        for (flag, key, values) in [
            ("--queue", "queue", flags.queue),
            ("--loss", "loss", flags.loss),
        ] {
            for value in values {
                let (directions, text) = split_direction(flag, value)?;
                let item = if key == "loss" && text == "none" {
                    toml::Value::String("none".into())
                } else {
                    kind_table(key, text).map_err(|reason| SpecError::new(flag, value, reason))?
                };
                for direction in directions {
                    tables.set(direction, key, flag, value, item.clone());
                }
            }
        }
        let link = tables.into_link()?;
        let mut spec = LinkSpec {
            forward: DirectionSpec::from_scenario(&link.forward),
            reverse: DirectionSpec::from_scenario(&link.reverse),
        };
        for value in flags.marker {
            let (directions, text) = split_direction("--marker", value)?;
            let marker = parse_marker(text)
                .map_err(|reason| SpecError::new("--marker", value, reason.to_string()))?;
            for direction in directions {
                spec.direction_mut(direction).markers.push(marker.clone());
            }
        }
        Ok(spec)
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

/// The `[link]` tables (forward, reverse) the flags fill, in the scenario file's keys, and
/// the flag value that last set each (direction, key), to name it in errors.
#[derive(Default)]
struct FlagTables {
    tables: [toml::Table; 2],
    origins: Vec<(Direction, &'static str, &'static str, String)>,
}

impl FlagTables {
    /// Sets `key` of `direction` to `item`, from `value` of `flag`. A rate replaces a trace and
    /// a trace a rate, as a later value replaces an earlier.
    fn set(
        &mut self,
        direction: Direction,
        key: &'static str,
        flag: &'static str,
        value: &str,
        item: toml::Value,
    ) {
        let table = &mut self.tables[direction_index(direction)];
        let replaced: &[&str] = match key {
            "rate" => &["trace", "trace_offset", "trace_opportunity"],
            "trace" => &["rate", "trace_offset", "trace_opportunity"],
            _ => &[],
        };
        for old in replaced {
            table.remove(*old);
        }
        table.insert(key.to_owned(), item);
        self.origins
            .retain(|(d, k, _, _)| !(*d == direction && *k == key));
        self.origins.push((direction, key, flag, value.to_owned()));
    }

    /// The link the tables describe (defaults filled: 10 Mb/s, no delay), read by the
    /// scenario's grammar; an error names the flag value that set the bad key.
    fn into_link(self) -> Result<tfrc_scenario::Link, SpecError> {
        let FlagTables {
            mut tables,
            origins,
        } = self;
        for table in &mut tables {
            if !table.contains_key("rate") && !table.contains_key("trace") {
                table.insert("rate".into(), "10Mbps".into());
            }
            table.entry("delay").or_insert_with(|| "0ms".into());
        }
        let [forward, reverse] = tables;
        let mut link_table = toml::Table::new();
        link_table.insert("forward".into(), toml::Value::Table(forward));
        link_table.insert("reverse".into(), toml::Value::Table(reverse));
        tfrc_scenario::link_from_table(link_table, "the link flags", None).map_err(|error| {
            // `link.forward.queue.min_th` names the direction and the flag's key.
            let key = error.key().unwrap_or_default().to_owned();
            let mut parts = key.split('.').skip(1);
            let direction = match parts.next() {
                Some("reverse") => Direction::Reverse,
                _ => Direction::Forward,
            };
            let top = parts.next().unwrap_or_default();
            let origin = origins
                .iter()
                .rev()
                .find(|(d, k, _, _)| *d == direction && *k == top)
                .or_else(|| origins.iter().rev().find(|(_, k, _, _)| *k == top));
            let reason = format!("{key}: {}", error.message());
            match origin {
                Some((_, _, flag, value)) => SpecError::new(flag, value, reason),
                None => SpecError::new("the link flags", "", reason),
            }
        })
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

fn direction_index(direction: Direction) -> usize {
    match direction {
        Direction::Forward => 0,
        Direction::Reverse => 1,
    }
}

/// A flag value as a TOML value: a scalar TOML reads (`50`, `0.01`, `true`), else the text
/// itself (`30s`, `800kbps`), which the scenario's units then parse.
fn scalar(text: &str) -> toml::Value {
    let text = text.trim();
    match format!("value = {text}").parse::<toml::Table>() {
        Ok(mut table) => match table.remove("value") {
            Some(
                value @ (toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_)),
            ) => value,
            _ => toml::Value::String(text.to_owned()),
        },
        Err(_) => toml::Value::String(text.to_owned()),
    }
}

/// `KIND[:ITEM,…]` as the scenario's `section` table (`queue` or `loss`): `kind = KIND` and the
/// items, bare values taking the kind's keys in their documented order.
fn kind_table(section: &str, text: &str) -> Result<toml::Value, String> {
    let (kind, rest) = match text.split_once(':') {
        Some((kind, rest)) => (kind.trim(), rest),
        None => (text.trim(), ""),
    };
    let items = rest
        .split([',', ':'])
        .map(str::trim)
        .filter(|item| !item.is_empty());
    if section == "loss" && kind == "gemodel" {
        return netem_gemodel(items);
    }
    let mut table = toml::Table::new();
    table.insert("kind".into(), kind.into());
    // An unknown kind is left to the scenario's resolution, which names the known ones.
    let Some(mut positional) = tfrc_scenario::table_keys(section, kind) else {
        return Ok(toml::Value::Table(table));
    };
    // Gilbert–Elliott's state losses are named, never positional: netem's `gemodel P R 1-H 1-K`
    // puts the bad state's loss third, the scenario's key order the good state's, and a netem
    // user would read one as the other.
    let hint = if kind == "gilbert-elliott" {
        positional.truncate(2);
        "; name the state losses (loss_bad=…, loss_good=…), or write netem's form \
         gemodel:P%:R%:1-H%:1-K%"
    } else {
        ""
    };
    let mut next = positional.iter();
    for item in items {
        match item.split_once('=') {
            Some((key, value)) => {
                table.insert(key.trim().to_owned(), scalar(value));
            }
            None => {
                let key = next.next().ok_or_else(|| {
                    format!(
                        "{item:?}: a {kind} {section} takes {} bare value(s) ({}); give KEY=VALUE{hint}",
                        positional.len(),
                        positional.join(", ")
                    )
                })?;
                table.insert((*key).to_owned(), scalar(item));
            }
        }
    }
    Ok(toml::Value::Table(table))
}

/// netem's Gilbert–Elliott form, as netem means it (tc-netem(8): `loss gemodel p [ r [ 1-h [
/// 1-k ]]]`): bare values in percent (a `%` sign optional) in that order — p the chance to go
/// from the good state to the bad, r back, 1-h the loss in the bad state, 1-k the loss in the
/// good state — then `start=`/`stop=` items. Defaults as iproute2's `q_netem.c` sets them when a
/// value is left out: r = 1 - p, 1-h = 100 %, 1-k = 0 %. The result is the scenario's
/// `gilbert-elliott` table with probabilities.
fn netem_gemodel<'a>(items: impl Iterator<Item = &'a str>) -> Result<toml::Value, String> {
    const ORDER: [&str; 4] = ["p", "r", "1-h", "1-k"];
    let mut percents = Vec::new();
    let mut table = toml::Table::new();
    table.insert("kind".into(), "gilbert-elliott".into());
    for item in items {
        if let Some((key, value)) = item.split_once('=') {
            match key.trim() {
                key @ ("start" | "stop") => {
                    table.insert(key.to_owned(), scalar(value));
                }
                key => {
                    return Err(format!(
                        "gemodel takes netem's bare percentages (p, r, 1-h, 1-k) and start=, \
                         stop=; not `{key}`"
                    ))
                }
            }
            continue;
        }
        let name = ORDER.get(percents.len()).ok_or_else(|| {
            format!("{item:?}: netem's gemodel takes at most 4 values (p, r, 1-h, 1-k)")
        })?;
        let number = item.strip_suffix('%').unwrap_or(item).trim();
        match number.parse::<f64>() {
            Ok(percent) if (0.0..=100.0).contains(&percent) => percents.push(percent / 100.0),
            _ => {
                return Err(format!(
                    "gemodel {name}: expected a percentage from 0 to 100, got {item:?}"
                ))
            }
        }
    }
    let Some(&p) = percents.first() else {
        return Err("gemodel needs at least p, in percent (gemodel:1%)".to_owned());
    };
    let r = percents.get(1).copied().unwrap_or(1.0 - p);
    let loss_bad = percents.get(2).copied().unwrap_or(1.0);
    let loss_good = percents.get(3).copied().unwrap_or(0.0);
    for (key, value) in [
        ("p_good_to_bad", p),
        ("p_bad_to_good", r),
        ("loss_bad", loss_bad),
        ("loss_good", loss_good),
    ] {
        table.insert(key.into(), toml::Value::Float(value));
    }
    Ok(toml::Value::Table(table))
}

/// `FILE[:offset=D][:opportunity=bytes|packet]` (options at the end, in any order, so a file
/// name may itself hold `:`) as the keys `trace`, `trace_offset`, `trace_opportunity`. The file
/// must exist.
fn trace_items(text: &str) -> Result<Vec<(&'static str, toml::Value)>, String> {
    let mut path = text;
    let mut items = Vec::new();
    while let Some((head, option)) = path.rsplit_once(':') {
        if let Some(value) = option.strip_prefix("offset=") {
            items.push(("trace_offset", scalar(value)));
        } else if let Some(value) = option.strip_prefix("opportunity=") {
            items.push(("trace_opportunity", toml::Value::String(value.to_owned())));
        } else {
            break;
        }
        path = head;
    }
    if !std::path::Path::new(path).is_file() {
        return Err(format!("{path}: no such file"));
    }
    // The trace first: setting it clears the options of an earlier trace.
    items.push(("trace", toml::Value::String(path.to_owned())));
    items.reverse();
    Ok(items)
}

/// Parses a marker: `token-bucket:ITEM,…` with the `[[marker]]` keys `rate` and `bucket`
/// (bare values in that order) and `ports=P,P,…` (the flows it marks by port; none: every
/// packet of the direction shares the bucket).
pub fn parse_marker(text: &str) -> Result<MarkerSpec, MarkerError> {
    let rest = text
        .strip_prefix("token-bucket")
        .ok_or(MarkerError::Syntax)?;
    let rest = match rest {
        "" => "",
        _ => rest.strip_prefix(':').ok_or(MarkerError::Syntax)?,
    };
    let (items, ports) = match rest.split_once("ports=") {
        Some((items, ports)) => (items, Some(ports)),
        None => (rest, None),
    };
    let (mut rate, mut bucket) = (None, None);
    let mut bare = ["rate", "bucket"].into_iter();
    for item in items
        .split([',', ':'])
        .map(str::trim)
        .filter(|item| !item.is_empty())
    {
        let (key, value) = match item.split_once('=') {
            Some((key, value)) => (key.trim(), value.trim()),
            None => (bare.next().ok_or(MarkerError::Syntax)?, item),
        };
        match key {
            "rate" => {
                rate = Some(
                    parse_rate(value).map_err(|error| MarkerError::Rate(error.message().into()))?,
                )
            }
            "bucket" => {
                bucket = Some(
                    parse_size(value)
                        .map_err(|error| MarkerError::Bucket(error.message().into()))?,
                )
            }
            _ => return Err(MarkerError::UnknownKey(key.into())),
        }
    }
    let (Some(rate), Some(bucket)) = (rate, bucket) else {
        return Err(MarkerError::Syntax);
    };
    let flows = match ports {
        None => None,
        Some(list) => {
            let mut flows = list
                .split(',')
                .map(|port| {
                    port.trim()
                        .parse::<u16>()
                        .map(FlowId::from)
                        .map_err(|_| MarkerError::Port(port.into()))
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
    .build()?;
    Ok(spec)
}

/// Why a `--marker` value is refused (the text [`SpecError`] gives as its reason).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MarkerError {
    /// Not `token-bucket:RATE:BUCKET_BYTES[:ports=…]`.
    #[error("expected token-bucket:RATE:BUCKET_BYTES[:ports=P,P,…]")]
    Syntax,
    /// The rate does not parse (the units grammar's message).
    #[error("rate: {0}")]
    Rate(String),
    /// The bucket size does not parse (the units grammar's message).
    #[error("bucket: {0}")]
    Bucket(String),
    /// A key other than `rate`, `bucket`, `ports`.
    #[error("unknown marker key `{0}`; expected rate, bucket, ports")]
    UnknownKey(String),
    /// A port that is not a number from 0 to 65535.
    #[error("ports: {0:?} is not a port number")]
    Port(String),
    /// The token bucket refuses the values.
    #[error(transparent)]
    Parameter(#[from] tfrc_sim::ParameterError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfrc_sim::{GilbertElliottParams, LossKind, RedParams};

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|value| value.to_string()).collect()
    }

    /// Both directions from one flag at a time.
    fn link(flag: &str, values: &[&str]) -> Result<LinkSpec, SpecError> {
        let values = strings(values);
        let mut flags = LinkFlags::default();
        match flag {
            "--queue" => flags.queue = &values,
            "--loss" => flags.loss = &values,
            "--marker" => flags.marker = &values,
            "--rate" => flags.rate = &values,
            "--trace" => flags.trace = &values,
            _ => flags.delay = &values,
        }
        LinkSpec::from_flags(&flags)
    }

    /// A marker with an unknown key is refused with an error that names the valid keys, and
    /// the flag's error quotes the value.
    #[test]
    fn an_unknown_marker_key_names_the_valid_ones() {
        let error = parse_marker("token-bucket:800kbps:10000:color=red").unwrap_err();
        assert_eq!(error, MarkerError::UnknownKey("color".into()));
        assert_eq!(
            error.to_string(),
            "unknown marker key `color`; expected rate, bucket, ports"
        );
        assert_eq!(
            parse_marker("leaky-bucket:1Mbps:100").unwrap_err(),
            MarkerError::Syntax
        );
        assert_eq!(
            parse_marker("token-bucket:1Mbps:100:ports=http")
                .unwrap_err()
                .to_string(),
            "ports: \"http\" is not a port number"
        );
        let error = link("--marker", &["token-bucket:1Mbps:100:color=red"]).unwrap_err();
        assert!(error.to_string().contains("--marker"), "{error}");
    }

    #[test]
    fn traces_take_an_offset_and_mahimahi_s_shared_bytes_by_default() {
        let directory =
            std::env::temp_dir().join(format!("tfrc-spec-trace-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let file = directory.join("a:b.trace");
        std::fs::write(&file, "1\n2\n").unwrap();
        let name = file.display().to_string();
        let capacity = |text: &str| link("--trace", &[text]).map(|link| link.forward.capacity);
        assert_eq!(
            capacity(&name),
            Ok(CapacitySpec::Trace {
                path: file.clone(),
                offset: Duration::ZERO,
                opportunity: OpportunityUse::SharedBytes,
            })
        );
        assert_eq!(
            capacity(&format!("{name}:opportunity=packet:offset=480s")),
            Ok(CapacitySpec::Trace {
                path: file.clone(),
                offset: Duration::from_secs(480),
                opportunity: OpportunityUse::PacketPerOpportunity,
            })
        );
        // The scenario's own message for trace_opportunity.
        let error = capacity(&format!("{name}:opportunity=shared")).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("--trace") && message.contains("trace_opportunity"),
            "{message}"
        );
        assert!(
            message.contains("bytes") && message.contains("packet"),
            "{message}"
        );
        let error = capacity("/no/such.trace:opportunity=bytes").unwrap_err();
        assert!(
            error.reason.contains("/no/such.trace: no such file"),
            "{error}"
        );
        // A trace replaces the rate of its direction only.
        let values = strings(&[&format!("forward={name}")]);
        let rates = strings(&["2Mbps"]);
        let both = LinkSpec::from_flags(&LinkFlags {
            trace: &values,
            rate: &rates,
            ..LinkFlags::default()
        })
        .unwrap();
        assert!(matches!(both.forward.capacity, CapacitySpec::Trace { .. }));
        assert_eq!(both.reverse.capacity, CapacitySpec::Rate(2_000_000));
        std::fs::remove_dir_all(&directory).ok();
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
        // Unset: 10 Mb/s, no delay, DropTail 50.
        assert_eq!(
            LinkSpec::from_flags(&LinkFlags::default()),
            Ok(LinkSpec::default())
        );
    }

    #[test]
    fn queues_take_the_scenario_keys_and_defaults() {
        let queue = |text: &str| link("--queue", &[text]).map(|link| link.forward.queue);
        assert_eq!(
            queue("droptail:20"),
            Ok(QueueConfig::DropTail { limit: 20 })
        );
        assert_eq!(
            queue("droptail:limit=20"),
            Ok(QueueConfig::DropTail { limit: 20 })
        );
        assert_eq!(queue("droptail"), Ok(QueueConfig::DropTail { limit: 50 }));
        let Ok(QueueConfig::Red(red)) = queue("red:min_th=3,max_th=9,gentle=true") else {
            panic!("not RED");
        };
        assert_eq!(
            (red.min_threshold, red.max_threshold, red.gentle),
            (3.0, 9.0, true)
        );
        assert_eq!(red.weight, RedParams::default().weight);
        let Ok(QueueConfig::Rio(rio)) = queue("rio:min_out=5,max_out=15,p_in=0.05") else {
            panic!("not RIO");
        };
        assert_eq!(rio.out_profile.min_threshold, 5.0);
        assert_eq!(rio.out_profile.max_threshold, 15.0);
        assert_eq!(rio.in_profile.max_probability, 0.05);
        assert_eq!(rio.in_profile.min_threshold, 20.0);
        // The scenario file's keys only: its short aliases of old are refused, with the
        // scenario's own suggestion.
        let error = queue("red:min=3").unwrap_err();
        assert!(error.reason.contains("min_th"), "{error}");
    }

    #[test]
    fn the_flags_and_the_scenario_file_give_the_same_direction() {
        let queue = strings(&["red:limit=60,min_th=5,max_th=20,gentle=true"]);
        let loss = strings(&["gilbert-elliott:p_good_to_bad=0.01,p_bad_to_good=0.3,loss_bad=0.5"]);
        let rate = strings(&["4Mbps"]);
        let delay = strings(&["15ms"]);
        let flags = LinkSpec::from_flags(&LinkFlags {
            rate: &rate,
            delay: &delay,
            queue: &queue,
            loss: &loss,
            ..LinkFlags::default()
        })
        .unwrap();
        let scenario: tfrc_scenario::Scenario = r#"
            name = "same"
            duration = "1s"
            [[link]]
            between = ["a", "b"]
            rate = "4Mbps"
            delay = "15ms"
            queue = { kind = "red", limit = 60, min_th = 5, max_th = 20, gentle = true }
            forward = { loss = { kind = "gilbert-elliott", p_good_to_bad = 0.01, p_bad_to_good = 0.3, loss_bad = 0.5 } }
            reverse = { loss = { kind = "gilbert-elliott", p_good_to_bad = 0.01, p_bad_to_good = 0.3, loss_bad = 0.5 } }
            [[flow]]
            name = "f"
            kind = "cbr"
            rate = "1Mbps"
            from = "a"
            to = "b"
        "#
        .parse()
        .unwrap();
        let file = &scenario.links[0];
        assert_eq!(flags.forward, DirectionSpec::from_scenario(&file.forward));
        assert_eq!(flags.reverse, DirectionSpec::from_scenario(&file.reverse));
    }

    #[test]
    fn bad_values_name_the_flag_and_the_problem() {
        let cases = [
            ("--queue", "fifo:10"),
            ("--queue", "red:min_th=20,max_th=10"),
            ("--queue", "droptail:many"),
            ("--queue", "droptail:1"),
            ("--queue", "droptail:5:6"),
            ("--loss", "bernoulli:1.5"),
            ("--loss", "bernoulli:0.1:start=90s:stop=30s"),
            ("--loss", "uniform:0.1"),
            ("--loss", "gilbert-elliott:0.01"),
            ("--loss", "gilbert-elliott:0.01:0.3:0:0.5"),
            ("--loss", "gemodel"),
            ("--loss", "gemodel:150%"),
            ("--loss", "gemodel:1:2:3:4:5"),
            ("--loss", "gemodel:1:loss_bad=0.5"),
            ("--marker", "token-bucket:fast:1000"),
            ("--marker", "token-bucket:800kbps:0"),
            ("--marker", "leaky:800kbps:10"),
            ("--rate", "1MBps"),
            ("--rate", "0"),
            ("--rate", "forward="),
            ("--delay", "10"),
            ("--delay", "reverse=-5ms"),
        ];
        for (flag, value) in cases {
            let error = link(flag, &[value]).expect_err(value);
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
        assert_eq!(
            parse_marker("token-bucket:bucket=10000,rate=800kbps").unwrap(),
            MarkerSpec {
                flows: None,
                ..marker
            }
        );
        let loss = |text: &str| link("--loss", &[text]).unwrap().forward.loss;
        assert_eq!(loss("none"), None);
        assert_eq!(
            loss("gilbert-elliott:0.01:0.25").unwrap().kind,
            LossKind::GilbertElliott(GilbertElliottParams::gilbert(0.01, 0.25))
        );
        // A netem user's `loss gemodel 1% 10% 70% 0.1%`: p, r, then the bad state's loss, then the
        // good state's, in percent.
        let netem = GilbertElliottParams {
            good_to_bad: 0.01,
            bad_to_good: 0.1,
            loss_in_bad: 0.7,
            loss_in_good: 0.001,
        };
        for text in ["gemodel:1%:10%:70%:0.1%", "gemodel:1,10,70,0.1"] {
            let LossKind::GilbertElliott(params) = loss(text).unwrap().kind else {
                panic!("{text}: not Gilbert-Elliott");
            };
            for (got, want) in [
                (params.good_to_bad, netem.good_to_bad),
                (params.bad_to_good, netem.bad_to_good),
                (params.loss_in_bad, netem.loss_in_bad),
                (params.loss_in_good, netem.loss_in_good),
            ] {
                assert!((got - want).abs() < 1e-12, "{text}: {params:?}");
            }
        }
        // The same chain named in the scenario's keys.
        let named = loss("gilbert-elliott:0.01:0.1:loss_bad=0.7,loss_good=0.001").unwrap();
        let LossKind::GilbertElliott(params) = named.kind else {
            panic!("not Gilbert-Elliott");
        };
        assert_eq!((params.loss_in_bad, params.loss_in_good), (0.7, 0.001));
        // iproute2's defaults for what netem's form leaves out: r = 1 - p, 1-h = 100 %, 1-k = 0.
        let LossKind::GilbertElliott(params) = loss("gemodel:5%:start=1s").unwrap().kind else {
            panic!("not Gilbert-Elliott");
        };
        assert!((params.bad_to_good - 0.95).abs() < 1e-12, "{params:?}");
        assert_eq!((params.loss_in_bad, params.loss_in_good), (1.0, 0.0));
        let message = link("--loss", &["gilbert-elliott:0.01:0.3:0.5"])
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("loss_bad=") && message.contains("gemodel"),
            "{message}"
        );
        assert_eq!(
            loss("exponential:mean_gap=2s").unwrap().kind,
            LossKind::ExponentialGaps {
                mean_gap: Duration::from_secs(2)
            }
        );
    }
}
