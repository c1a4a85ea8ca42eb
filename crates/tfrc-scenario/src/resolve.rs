//! Raw file structs → typed model (defaults and validation), and back.

use core::time::Duration;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::ScenarioError;
use crate::model::{
    Capacity, DownloadsSpec, FlowKind, FlowSpec, Link, LinkDirectionSpec, LossModel, LossSpec,
    MarkerSpec, MediaSpec, MediaTransport, OnOffSpec, Output, QueueSpec, RedSpec, RioSpec, TcpSpec,
    TfrcProfile, TfrcSpec, TfrcVariant, TraceOpportunity, VenoSpec,
};
use crate::raw::{
    flatten, NoneOr, RawDirection, RawDownloads, RawFlow, RawFlowKind, RawLink, RawLoss,
    RawLossModel, RawMarker, RawMedia, RawOutput, RawQueue, RawScenario, RawTcp, RawTfrc,
};
use crate::sweep;
use crate::units::{format_duration, DurationText, Rate, RATE_EXPECTED};
use crate::Scenario;

/// Most instances one flow entry may stand for (`count`).
pub const MAX_FLOW_COUNT: u32 = 100_000;
/// Most flows a scenario may have after `count` expansion.
pub const MAX_TOTAL_FLOWS: u64 = 1_000_000;
/// Most feedbacks per RTT a flow may ask for (`feedbacks_per_rtt`).
pub const MAX_FEEDBACKS_PER_RTT: u32 = 1000;
/// Largest integer a TOML file can hold (seeds and bucket sizes stay within it).
pub const MAX_TOML_INTEGER: u64 = i64::MAX as u64;
/// Largest packet size in bytes (the largest UDP payload).
pub const MAX_PACKET_SIZE: u32 = 65_507;

struct Resolver<'a> {
    file: &'a str,
    base_dir: Option<&'a Path>,
}

type Result<T> = core::result::Result<T, ScenarioError>;

impl Resolver<'_> {
    fn error(&self, key: impl Into<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError::invalid(self.file, key, message)
    }

    fn positive_rate(&self, key: &str, rate: Rate) -> Result<Rate> {
        if rate.is_zero() {
            Err(self.error(
                key,
                format!("expected a rate above zero like \"800kbps\", got {rate}"),
            ))
        } else {
            Ok(rate)
        }
    }

    fn positive_duration(&self, key: &str, duration: Duration) -> Result<Duration> {
        if duration.is_zero() {
            Err(self.error(key, "expected a duration above zero like \"1s\", got 0s"))
        } else {
            Ok(duration)
        }
    }

    /// `value` if it is finite and `accepts` it, else an error saying it expected `expected`.
    fn number(&self, key: &str, value: f64, accepts: bool, expected: &str) -> Result<f64> {
        if value.is_finite() && accepts {
            Ok(value)
        } else {
            Err(self.error(key, format!("expected {expected}, got {value}")))
        }
    }

    fn probability(&self, key: &str, value: f64) -> Result<f64> {
        let accepts = (0.0..=1.0).contains(&value);
        self.number(key, value, accepts, "a probability between 0 and 1")
    }

    /// A probability that must be above zero (a RED/RIO maximum drop probability).
    fn max_probability(&self, key: &str, value: f64) -> Result<f64> {
        let accepts = value > 0.0 && value <= 1.0;
        self.number(key, value, accepts, "a probability above 0 and at most 1")
    }

    fn threshold(&self, key: &str, value: f64) -> Result<f64> {
        self.number(key, value, value >= 0.0, "a number of packets ≥ 0")
    }

    /// Checks that an optional stop time comes after the start.
    fn stop_after(&self, key: &str, start: Duration, stop: Option<Duration>) -> Result<()> {
        match stop {
            Some(stop) if stop <= start => Err(self.error(
                key,
                format!(
                    "expected a stop time after start ({}), got {}",
                    format_duration(start),
                    format_duration(stop)
                ),
            )),
            _ => Ok(()),
        }
    }

    fn ordered(&self, low_key: &str, low: f64, high_key: &str, high: f64) -> Result<()> {
        if low < high {
            Ok(())
        } else {
            let high_name = high_key.rsplit('.').next().unwrap_or(high_key);
            Err(self.error(
                low_key,
                format!("expected a value below {high_name} ({high}), got {low}"),
            ))
        }
    }

    fn node_name(&self, key: &str, name: &str) -> Result<()> {
        if valid_name(name) {
            Ok(())
        } else {
            Err(self.error(
                key,
                format!(
                    "expected a node name made of letters, digits, '_', '-' and '.', got {name:?}"
                ),
            ))
        }
    }

    fn node_pair(&self, key: &str, names: &[String], what: &str) -> Result<[String; 2]> {
        match names {
            [first, second] => {
                self.node_name(key, first)?;
                self.node_name(key, second)?;
                if first == second {
                    return Err(self.error(
                        key,
                        format!("expected two different nodes, got [{first:?}, {second:?}]"),
                    ));
                }
                Ok([first.clone(), second.clone()])
            }
            _ => Err(self.error(
                key,
                format!(
                    "expected {what} like [\"sender\", \"router\"], got {} names",
                    names.len()
                ),
            )),
        }
    }
}

/// Whether `name` is usable as a node or flow name.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Builds the typed scenario from the raw one.
pub(crate) fn resolve(raw: RawScenario, file: &str, base_dir: Option<&Path>) -> Result<Scenario> {
    let resolver = Resolver { file, base_dir };
    let r = &resolver;

    if raw.name.trim().is_empty()
        || raw.name.contains(['/', '\\'])
        || raw.name.chars().any(char::is_control)
        || raw.name.len() > 4096
    {
        return Err(r.error(
            "name",
            format!("expected a non-empty name without '/', '\\' or control characters (it names output folders), got {:?}", raw.name),
        ));
    }
    let duration = r.positive_duration("duration", raw.duration.0)?;
    let seed = raw.seed.unwrap_or(1);

    let links = resolve_links(r, raw.link)?;
    let graph = Graph::new(&links);

    let (flows, seen_names) = resolve_flows(r, raw.flow, duration, &graph)?;

    let markers = resolve_markers(r, raw.marker, (&links, &flows, &seen_names))?;

    let output = resolve_output(r, raw.output.unwrap_or_default(), duration)?;
    let sweep = match raw.sweep {
        Some(table) => sweep::parse_sweep(file, &table)?,
        None => Vec::new(),
    };
    let variant = resolve_variant(r, raw.variant.unwrap_or_default())?;

    let quick = raw.quick.unwrap_or_default();
    check_quick(r, &quick)?;

    Ok(Scenario::assemble(
        raw.name, duration, seed, quick, links, markers, flows, output, sweep, variant, file,
        base_dir,
    ))
}

/// The `[[link]]` tables: at least one, no two joining the same nodes.
fn resolve_links(r: &Resolver<'_>, raw_links: Vec<RawLink>) -> Result<Vec<Link>> {
    if raw_links.is_empty() {
        return Err(r.error(
            "link",
            "expected at least one [[link]] with between = [\"a\", \"b\"], rate and delay",
        ));
    }
    let mut links: Vec<Link> = Vec::with_capacity(raw_links.len());
    for (index, raw_link) in raw_links.into_iter().enumerate() {
        let link = resolve_link(r, index, raw_link)?;
        if let Some(other) = links
            .iter()
            .position(|l| l.joins(&link.between[0], &link.between[1]))
        {
            return Err(r.error(
                format!("link[{index}].between"),
                format!(
                    "nodes {:?} and {:?} are already joined by link[{other}]; a link is duplex, use forward/reverse for per-direction settings",
                    link.between[0], link.between[1]
                ),
            ));
        }
        links.push(link);
    }
    Ok(links)
}

/// The `[[flow]]` tables, and which flow each (instance) name belongs to: names unique after
/// `count` expansion, at most [`MAX_TOTAL_FLOWS`] in all.
fn resolve_flows(
    r: &Resolver<'_>,
    raw_flows: Vec<RawFlow>,
    duration: Duration,
    graph: &Graph,
) -> Result<(Vec<FlowSpec>, HashMap<String, usize>)> {
    let mut flows: Vec<FlowSpec> = Vec::with_capacity(raw_flows.len());
    let mut seen_names: HashMap<String, usize> = HashMap::new();
    let mut total_flows: u64 = 0;
    for (index, raw_flow) in raw_flows.into_iter().enumerate() {
        let flow = resolve_flow(r, index, raw_flow, duration, graph)?;
        let instances = instance_names(&flow);
        total_flows += instances.len() as u64;
        if total_flows > MAX_TOTAL_FLOWS {
            return Err(r.error(
                format!("flow[{index}].count"),
                format!("expected at most {MAX_TOTAL_FLOWS} flows in all after count expansion"),
            ));
        }
        for instance in instances {
            if let Some(other) = seen_names.insert(instance.clone(), index) {
                let key = if flow.count.is_some() && instance != flow.name {
                    format!("flow[{index}].count")
                } else {
                    format!("flow[{index}].name")
                };
                return Err(r.error(
                    key,
                    format!("flow name {instance:?} is already used by flow[{other}]; flow names must be unique"),
                ));
            }
        }
        flows.push(flow);
    }
    Ok((flows, seen_names))
}

/// The `[[marker]]` tables: a flow is marked by at most one marker per link direction.
fn resolve_markers(
    r: &Resolver<'_>,
    raw_markers: Vec<RawMarker>,
    (links, flows, seen_names): (&[Link], &[FlowSpec], &HashMap<String, usize>),
) -> Result<Vec<MarkerSpec>> {
    let mut markers: Vec<MarkerSpec> = Vec::with_capacity(raw_markers.len());
    let mut marked: HashMap<(String, String, String), usize> = HashMap::new();
    for (index, raw_marker) in raw_markers.into_iter().enumerate() {
        let marker = resolve_marker(r, index, raw_marker, links, flows, seen_names)?;
        for name in expand_flow_references(&marker.flows, flows) {
            let key = (marker.link[0].clone(), marker.link[1].clone(), name.clone());
            if let Some(other) = marked.insert(key, index) {
                if other != index {
                    return Err(r.error(
                        format!("marker[{index}].flows"),
                        format!("flow {name:?} is already marked on this link direction by marker[{other}]"),
                    ));
                }
            }
        }
        markers.push(marker);
    }
    Ok(markers)
}

/// The `[variant]` table a sweep's expansion records: label = setting, as strings.
fn resolve_variant(r: &Resolver<'_>, table: toml::Table) -> Result<Vec<(String, String)>> {
    let mut variant = Vec::new();
    for (label, value) in table {
        match value {
            toml::Value::String(text) => variant.push((label, text)),
            other => {
                return Err(r.error(
                    crate::error::join_key("variant", &label),
                    format!(
                        "expected a string (a sweep setting recorded by expansion), got {}",
                        crate::emit::inline(&other)
                    ),
                ))
            }
        }
    }
    Ok(variant)
}

/// `quick`: overrides of the form key.path=value (applied by `--quick`).
fn check_quick(r: &Resolver<'_>, quick: &[String]) -> Result<()> {
    for (index, assignment) in quick.iter().enumerate() {
        if !assignment.contains('=') {
            return Err(r.error(
                format!("quick[{index}]"),
                format!(
                    "expected an override key.path=value like \"duration=60s\", got {assignment:?}"
                ),
            ));
        }
    }
    Ok(())
}

fn resolve_link(r: &Resolver<'_>, index: usize, raw: RawLink) -> Result<Link> {
    resolve_link_at(r, &format!("link[{index}]"), raw)
}

/// One link of the file, its keys named under `prefix` in errors.
fn resolve_link_at(r: &Resolver<'_>, prefix: &str, raw: RawLink) -> Result<Link> {
    let prefix = prefix.to_owned();
    let between = r.node_pair(&format!("{prefix}.between"), &raw.between, "two node names")?;
    let top = RawDirection {
        rate: raw.rate,
        trace: raw.trace,
        trace_offset: raw.trace_offset,
        trace_opportunity: raw.trace_opportunity,
        delay: raw.delay,
        queue: raw.queue,
        loss: raw.loss,
    };
    let forward = resolve_direction(r, &prefix, "forward", &top, raw.forward.as_ref(), true)?;
    let reverse = resolve_direction(r, &prefix, "reverse", &top, raw.reverse.as_ref(), false)?;
    Ok(Link {
        between,
        forward,
        reverse,
    })
}

/// A link from the keys of one `[[link]]` entry other than `between` (the link joins a
/// `sender` side to a `receiver` side), resolved and validated as in a file; errors name the
/// keys under `link`. `tfrc emulate` turns its flags into such a table.
pub fn link_from_table(
    mut table: toml::Table,
    file: &str,
    base_dir: Option<&Path>,
) -> Result<Link> {
    let r = Resolver { file, base_dir };
    if table.contains_key("between") {
        return Err(r.error("link.between", "the two sides are given, not a key here"));
    }
    table.insert(
        "between".to_owned(),
        toml::Value::Array(vec!["sender".into(), "receiver".into()]),
    );
    let raw: RawLink =
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|error| {
            let error = ScenarioError::from_serde(file, error);
            match error.key() {
                Some("") | None => r.error("link", error.message()),
                Some(key) => r.error(format!("link.{key}"), error.message()),
            }
        })?;
    resolve_link_at(&r, "link", raw)
}

/// The capacity set at one level (top or per-direction), if any.
fn level_capacity(
    r: &Resolver<'_>,
    prefix: &str,
    level: &RawDirection,
) -> Result<Option<Capacity>> {
    let trace = flatten(level.trace.clone());
    if level.trace_offset.is_some() && trace.is_none() {
        return Err(r.error(
            format!("{prefix}.trace_offset"),
            "trace_offset needs a trace at the same level (it says where in the trace the run starts)",
        ));
    }
    if level.trace_opportunity.is_some() && trace.is_none() {
        return Err(r.error(
            format!("{prefix}.trace_opportunity"),
            "trace_opportunity needs a trace at the same level (it says how packets use the trace's opportunities)",
        ));
    }
    let opportunity = match level.trace_opportunity.as_deref() {
        None => TraceOpportunity::default(),
        Some(name) => TraceOpportunity::from_name(name).ok_or_else(|| {
            r.error(
                format!("{prefix}.trace_opportunity"),
                format!(
                    "expected \"bytes\" (Mahimahi: each opportunity carries 1500 bytes that packets share) or \"packet\" (one packet per opportunity), got \"{name}\""
                ),
            )
        })?,
    };
    match (flatten(level.rate.clone()), trace) {
        (Some(_), Some(_)) => Err(r.error(
            format!("{prefix}.trace"),
            "expected either rate or trace, not both at the same level",
        )),
        (Some(rate), None) => Ok(Some(Capacity::Rate(
            r.positive_rate(&format!("{prefix}.rate"), rate)?,
        ))),
        (None, Some(path)) => {
            if path.trim().is_empty() {
                return Err(r.error(
                    format!("{prefix}.trace"),
                    "expected the path of a Mahimahi trace file, got an empty string",
                ));
            }
            Ok(Some(Capacity::Trace {
                path: resolve_path(r.base_dir, &path),
                offset: level.trace_offset.map_or(Duration::ZERO, |offset| offset.0),
                opportunity,
            }))
        }
        (None, None) => Ok(None),
    }
}

fn resolve_path(base_dir: Option<&Path>, text: &str) -> PathBuf {
    let path = PathBuf::from(text);
    match base_dir {
        Some(base) if path.is_relative() => {
            let joined = base.join(&path);
            std::path::absolute(&joined).unwrap_or(joined)
        }
        _ => path,
    }
}

fn resolve_direction(
    r: &Resolver<'_>,
    prefix: &str,
    direction: &str,
    top: &RawDirection,
    specific: Option<&RawDirection>,
    top_loss_applies: bool,
) -> Result<LinkDirectionSpec> {
    let empty = RawDirection::default();
    let specific_prefix = format!("{prefix}.{direction}");
    let specific = specific.unwrap_or(&empty);

    let capacity = match level_capacity(r, &specific_prefix, specific)? {
        Some(capacity) => capacity,
        None => match level_capacity(r, prefix, top)? {
            Some(capacity) => capacity,
            None => {
                return Err(r.error(
                    format!("{prefix}.rate"),
                    format!("required key is missing for the {direction} direction (expected {RATE_EXPECTED}, or trace = \"a Mahimahi trace file\")"),
                ))
            }
        },
    };
    let delay =
        match (specific.delay, top.delay) {
            (Some(delay), _) | (None, Some(delay)) => delay.0,
            (None, None) => return Err(r.error(
                format!("{prefix}.delay"),
                "required key is missing (expected the one-way propagation delay like \"24ms\")",
            )),
        };
    let queue = match (&specific.queue, &top.queue) {
        (Some(queue), _) => resolve_queue(r, &format!("{specific_prefix}.queue"), queue)?,
        (None, Some(queue)) => resolve_queue(r, &format!("{prefix}.queue"), queue)?,
        (None, None) => QueueSpec::DEFAULT,
    };
    let loss = match (&specific.loss, &top.loss) {
        (Some(loss), _) => match loss {
            NoneOr::None => None,
            NoneOr::Some(loss) => Some(resolve_loss(r, &format!("{specific_prefix}.loss"), loss)?),
        },
        (None, Some(NoneOr::Some(loss))) if top_loss_applies => {
            Some(resolve_loss(r, &format!("{prefix}.loss"), loss)?)
        }
        _ => None,
    };
    Ok(LinkDirectionSpec {
        capacity,
        delay,
        queue,
        loss,
    })
}

fn resolve_queue(r: &Resolver<'_>, prefix: &str, raw: &RawQueue) -> Result<QueueSpec> {
    let key = |name: &str| format!("{prefix}.{name}");
    let limit = match raw {
        RawQueue::Droptail(keys) => keys.limit,
        RawQueue::Red(keys) => keys.limit,
        RawQueue::Rio(keys) => keys.limit,
    }
    .unwrap_or(50);
    if limit > MAX_QUEUE_PACKETS {
        return Err(r.error(
            key("limit"),
            format!("expected a queue limit of at most {MAX_QUEUE_PACKETS} packets, got {limit}"),
        ));
    }
    if limit == 0 {
        return Err(r.error(
            key("limit"),
            "expected a queue limit of at least 1 packet, got 0",
        ));
    }
    match raw {
        // ns-2's DropTail counts the packet in transmission, so a limit of 1 drops every
        // packet that finds the link busy: the simulator refuses it, so does the file.
        RawQueue::Droptail(_) if limit < 2 => Err(r.error(
            key("limit"),
            format!("expected a DropTail limit of at least 2 packets (the limit includes the packet in transmission), got {limit}"),
        )),
        RawQueue::Droptail(_) => Ok(QueueSpec::DropTail { limit }),
        RawQueue::Red(raw) => {
            let defaults = RedSpec::default();
            let red = RedSpec {
                limit,
                min_th: r.threshold(&key("min_th"), raw.min_th.unwrap_or(defaults.min_th))?,
                max_th: r.threshold(&key("max_th"), raw.max_th.unwrap_or(defaults.max_th))?,
                max_p: r.max_probability(&key("max_p"), raw.max_p.unwrap_or(defaults.max_p))?,
                weight: r.max_probability(&key("weight"), raw.weight.unwrap_or(defaults.weight))?,
                gentle: raw.gentle.unwrap_or(defaults.gentle),
                ecn: raw.ecn.unwrap_or(defaults.ecn),
            };
            r.ordered(&key("min_th"), red.min_th, &key("max_th"), red.max_th)?;
            Ok(QueueSpec::Red(red))
        }
        RawQueue::Rio(raw) => {
            let defaults = RioSpec::default();
            let rio = RioSpec {
                limit,
                min_in: r.threshold(&key("min_in"), raw.min_in.unwrap_or(defaults.min_in))?,
                max_in: r.threshold(&key("max_in"), raw.max_in.unwrap_or(defaults.max_in))?,
                p_in: r.max_probability(&key("p_in"), raw.p_in.unwrap_or(defaults.p_in))?,
                min_out: r.threshold(&key("min_out"), raw.min_out.unwrap_or(defaults.min_out))?,
                max_out: r.threshold(&key("max_out"), raw.max_out.unwrap_or(defaults.max_out))?,
                p_out: r.max_probability(&key("p_out"), raw.p_out.unwrap_or(defaults.p_out))?,
                weight: r.max_probability(&key("weight"), raw.weight.unwrap_or(defaults.weight))?,
                ecn: raw.ecn.unwrap_or(defaults.ecn),
            };
            r.ordered(&key("min_in"), rio.min_in, &key("max_in"), rio.max_in)?;
            r.ordered(&key("min_out"), rio.min_out, &key("max_out"), rio.max_out)?;
            Ok(QueueSpec::Rio(rio))
        }
    }
}

fn resolve_loss(r: &Resolver<'_>, prefix: &str, raw: &RawLoss) -> Result<LossSpec> {
    let kind = match raw.model {
        RawLossModel::Bernoulli(_) => "bernoulli",
        RawLossModel::Exponential(_) => "exponential",
        RawLossModel::GilbertElliott(_) => "gilbert-elliott",
    };
    let key = |name: &str| format!("{prefix}.{name}");
    let required = |name: &str, value: Option<f64>, expected: &str| {
        value.ok_or_else(|| {
            r.error(
                key(name),
                format!("required key is missing for a {kind} loss model (expected {expected})"),
            )
        })
    };
    let model = match &raw.model {
        RawLossModel::Bernoulli(raw) => LossModel::Bernoulli {
            rate: r.probability(
                &key("rate"),
                required("rate", raw.rate, "a loss probability like 0.01")?,
            )?,
        },
        RawLossModel::Exponential(raw) => {
            let mean_gap = raw.mean_gap.map(|d| d.0).ok_or_else(|| {
                r.error(
                    key("mean_gap"),
                    "required key is missing for an exponential loss model (expected the mean time between losses like \"100ms\")",
                )
            })?;
            LossModel::Exponential {
                mean_gap: r.positive_duration(&key("mean_gap"), mean_gap)?,
            }
        }
        RawLossModel::GilbertElliott(raw) => LossModel::GilbertElliott {
            p_good_to_bad: r.probability(
                &key("p_good_to_bad"),
                required(
                    "p_good_to_bad",
                    raw.p_good_to_bad,
                    "a probability between 0 and 1",
                )?,
            )?,
            p_bad_to_good: r.probability(
                &key("p_bad_to_good"),
                required(
                    "p_bad_to_good",
                    raw.p_bad_to_good,
                    "a probability between 0 and 1",
                )?,
            )?,
            loss_good: r.probability(&key("loss_good"), raw.loss_good.unwrap_or(0.0))?,
            loss_bad: r.probability(&key("loss_bad"), raw.loss_bad.unwrap_or(1.0))?,
        },
    };
    let start = raw.start.map_or(Duration::ZERO, |d| d.0);
    let stop = flatten(raw.stop.clone()).map(|d| d.0);
    r.stop_after(&key("stop"), start, stop)?;
    Ok(LossSpec { model, start, stop })
}

fn resolve_flow(
    r: &Resolver<'_>,
    index: usize,
    raw: RawFlow,
    run_duration: Duration,
    graph: &Graph,
) -> Result<FlowSpec> {
    let prefix = format!("flow[{index}]");
    let key = |name: &str| format!("{prefix}.{name}");
    check_flow_ends(r, &prefix, &raw, graph)?;

    let start = raw.start.map_or(Duration::ZERO, |d| d.0);
    if start >= run_duration {
        return Err(r.error(
            key("start"),
            format!(
                "expected a start time before the end of the run ({}), got {}",
                format_duration(run_duration),
                format_duration(start)
            ),
        ));
    }
    let stop = flatten(raw.stop.clone()).map(|d| d.0);
    r.stop_after(&key("stop"), start, stop)?;
    let packet_size = raw.packet_size.unwrap_or(1000);
    if packet_size == 0 || packet_size > MAX_PACKET_SIZE {
        return Err(r.error(
            key("packet_size"),
            format!("expected a packet size from 1 to {MAX_PACKET_SIZE} bytes, got {packet_size}"),
        ));
    }
    let count = flatten(raw.count.clone());
    if let Some(count) = count {
        if count == 0 || count > MAX_FLOW_COUNT {
            return Err(r.error(
                key("count"),
                format!("expected a number of flows from 1 to {MAX_FLOW_COUNT}, got {count}"),
            ));
        }
    }

    let kind = resolve_flow_kind(r, &prefix, &raw.kind, run_duration)?;

    Ok(FlowSpec {
        name: raw.name,
        from: raw.from,
        to: raw.to,
        start,
        stop,
        packet_size,
        count,
        enabled: raw.enabled.unwrap_or(true),
        kind,
    })
}

/// A flow's kind and the keys of that kind.
fn resolve_flow_kind(
    r: &Resolver<'_>,
    prefix: &str,
    kind: &RawFlowKind,
    run_duration: Duration,
) -> Result<FlowKind> {
    let key = |name: &str| format!("{prefix}.{name}");
    let kind = match kind {
        RawFlowKind::Tfrc(raw) => FlowKind::Tfrc(resolve_tfrc(r, prefix, raw, run_duration)?),
        RawFlowKind::Tcp(raw) => FlowKind::Tcp(resolve_tcp(r, prefix, raw)?),
        RawFlowKind::Cbr(raw) => {
            let rate = raw.rate.ok_or_else(|| {
                r.error(
                    key("rate"),
                    format!("required key is missing for a cbr flow (expected {RATE_EXPECTED})"),
                )
            })?;
            FlowKind::Cbr {
                rate: r.positive_rate(&key("rate"), rate)?,
            }
        }
        RawFlowKind::Pareto(keys) => {
            let (rate, burst, idle) =
                on_off_keys(r, prefix, "pareto", keys.rate, keys.burst, keys.idle)?;
            let shape = keys.shape.unwrap_or(1.5);
            if !(shape.is_finite() && shape > 1.0) {
                return Err(r.error(
                    key("shape"),
                    format!("expected a Pareto shape above 1 (finite mean) like 1.5, got {shape}"),
                ));
            }
            FlowKind::Pareto(OnOffSpec {
                rate,
                burst,
                idle,
                shape: Some(shape),
            })
        }
        RawFlowKind::ExpOnoff(keys) => {
            let (rate, burst, idle) =
                on_off_keys(r, prefix, "exp-onoff", keys.rate, keys.burst, keys.idle)?;
            FlowKind::ExponentialOnOff(OnOffSpec {
                rate,
                burst,
                idle,
                shape: None,
            })
        }
    };
    Ok(kind)
}

/// A flow's name, and its two ends: nodes a link joins, distinct, and joined by a path.
fn check_flow_ends(r: &Resolver<'_>, prefix: &str, raw: &RawFlow, graph: &Graph) -> Result<()> {
    let key = |name: &str| format!("{prefix}.{name}");
    if !valid_name(&raw.name) {
        return Err(r.error(
            key("name"),
            format!(
                "expected a flow name made of letters, digits, '_', '-' and '.', got {:?}",
                raw.name
            ),
        ));
    }

    for (field, node) in [("from", &raw.from), ("to", &raw.to)] {
        r.node_name(&key(field), node)?;
        if !graph.has_node(node) {
            return Err(r.error(
                key(field),
                format!(
                    "expected a node that a link joins ({}), got {node:?}",
                    graph.node_list()
                ),
            ));
        }
    }
    if raw.from == raw.to {
        return Err(r.error(
            key("to"),
            format!("expected a node other than from ({:?})", raw.from),
        ));
    }
    if !graph.connected(&raw.from, &raw.to) {
        return Err(r.error(
            key("to"),
            format!("no path of links leads from {:?} to {:?}", raw.from, raw.to),
        ));
    }
    Ok(())
}

/// A TFRC flow's keys: rates, feedback count, Veno, the variant's and the profile's settings,
/// media.
fn resolve_tfrc(
    r: &Resolver<'_>,
    prefix: &str,
    raw: &RawTfrc,
    run_duration: Duration,
) -> Result<TfrcSpec> {
    let key = |name: &str| format!("{prefix}.{name}");
    let target_rate = match flatten(raw.target_rate.clone()) {
        Some(rate) => Some(r.positive_rate(&key("target_rate"), rate)?),
        None => None,
    };
    let (rtt_ref, feedbacks_per_rtt) = resolve_feedback_count(r, prefix, raw)?;
    let veno = resolve_veno(r, prefix, raw)?;
    // ns-2.35 has history discounting (`discount_ 1`) and √RTT spacing (`ca_ 1`) on
    // by default; RFC 5348 leaves both optional (off here).
    let profile = raw.profile.unwrap_or_default();
    let ns2_default = profile == TfrcProfile::Ns2;
    let variant = raw.variant.unwrap_or_default();
    let (nominal_segment_size, header_size) =
        resolve_small_packets(r, prefix, raw, profile, variant)?;
    let max_rate = match flatten(raw.max_rate.clone()) {
        Some(rate) => Some(r.positive_rate(&key("max_rate"), rate)?),
        None => None,
    };
    let media = match flatten(raw.media.clone()) {
        Some(media) => Some(resolve_media(
            r,
            &key("media"),
            media,
            max_rate,
            run_duration,
        )?),
        None => None,
    };
    let spec = TfrcSpec {
        max_rate,
        media,
        ecn: raw.ecn.unwrap_or(false),
        variant,
        nominal_segment_size,
        header_size,
        target_rate,
        rtt_ref,
        feedbacks_per_rtt,
        veno,
        profile,
        history_discounting: raw.history_discounting.unwrap_or(ns2_default),
        oscillation_damping: raw.oscillation_damping.unwrap_or(ns2_default),
    };
    if spec
        .media
        .as_ref()
        .is_some_and(|media| media.transport == MediaTransport::Etp)
    {
        check_etp_media(r, prefix, &spec)?;
    }
    Ok(spec)
}

/// `rtt_ref` and `feedbacks_per_rtt`: the receiver's feedback count, one or the other.
fn resolve_feedback_count(
    r: &Resolver<'_>,
    prefix: &str,
    raw: &RawTfrc,
) -> Result<(Option<Duration>, Option<u32>)> {
    let key = |name: &str| format!("{prefix}.{name}");
    let rtt_ref = match flatten(raw.rtt_ref.clone()) {
        Some(rtt) => Some(r.positive_duration(&key("rtt_ref"), rtt.0)?),
        None => None,
    };
    let feedbacks_per_rtt = flatten(raw.feedbacks_per_rtt.clone());
    match feedbacks_per_rtt {
        Some(count) if count == 0 || count > MAX_FEEDBACKS_PER_RTT => {
            return Err(r.error(
                key("feedbacks_per_rtt"),
                format!(
                    "expected a number of feedbacks per RTT from 1 to {MAX_FEEDBACKS_PER_RTT}, got {count}"
                ),
            ))
        }
        Some(_) if rtt_ref.is_some() => {
            return Err(r.error(
                key("feedbacks_per_rtt"),
                "give either rtt_ref (N = int(RTT/RTT_ref)) or feedbacks_per_rtt (a fixed N), not both",
            ))
        }
        _ => {}
    }
    Ok((rtt_ref, feedbacks_per_rtt))
}

/// `veno_beta` and `veno_alpha`: Veno's loss differentiation, on when `veno_beta` is set.
fn resolve_veno(r: &Resolver<'_>, prefix: &str, raw: &RawTfrc) -> Result<Option<VenoSpec>> {
    let key = |name: &str| format!("{prefix}.{name}");
    let veno = match (
        flatten(raw.veno_beta.clone()),
        flatten(raw.veno_alpha.clone()),
    ) {
        (None, None) => None,
        (None, Some(_)) => {
            return Err(r.error(
                key("veno_alpha"),
                "veno_alpha needs veno_beta (Veno differentiation is on when veno_beta is set)",
            ))
        }
        (Some(beta), alpha) => {
            if !(beta.is_finite() && beta >= 0.0) {
                return Err(r.error(
                    key("veno_beta"),
                    format!("expected a threshold β in packets ≥ 0 like 1, got {beta}"),
                ));
            }
            let alpha = alpha.unwrap_or(3.0);
            if !(alpha.is_finite() && alpha >= 1.0) {
                return Err(r.error(
                    key("veno_alpha"),
                    format!("expected a stretch factor α ≥ 1 like 3, got {alpha}"),
                ));
            }
            Some(VenoSpec { beta, alpha })
        }
    };
    Ok(veno)
}

/// TFRC-SP's `nominal_segment_size` and `header_size` (RFC 4828's defaults), refused for the
/// standard variant and under the ns-2 profile.
fn resolve_small_packets(
    r: &Resolver<'_>,
    prefix: &str,
    raw: &RawTfrc,
    profile: TfrcProfile,
    variant: TfrcVariant,
) -> Result<(Option<u32>, Option<u32>)> {
    let key = |name: &str| format!("{prefix}.{name}");
    let (nominal_segment_size, header_size) = match variant {
        TfrcVariant::Standard => {
            for (name, given) in [
                ("nominal_segment_size", raw.nominal_segment_size),
                ("header_size", raw.header_size),
            ] {
                if given.is_some() {
                    return Err(r.error(
                        key(name),
                        format!("{name} is a TFRC-SP parameter: it needs variant = \"sp\""),
                    ));
                }
            }
            (None, None)
        }
        TfrcVariant::Sp => {
            if profile == TfrcProfile::Ns2 {
                return Err(r.error(
                    key("variant"),
                    "variant = \"sp\" runs under profile = \"rfc5348\" (the translator \
                     runs ns-2's own small-packet mode, voip_, for it)",
                ));
            }
            let defaults = tfrc_proto::SmallPackets::default();
            let nominal = raw
                .nominal_segment_size
                .unwrap_or(defaults.nominal_segment_size);
            if nominal == 0 {
                return Err(r.error(
                    key("nominal_segment_size"),
                    "expected a nominal segment size of at least 1 byte like 1460, got 0",
                ));
            }
            (
                Some(nominal),
                Some(raw.header_size.unwrap_or(defaults.header_size)),
            )
        }
    };
    Ok((nominal_segment_size, header_size))
}

/// A TCP flow's keys: window, `downloads`, variant, delayed ACKs, profile.
fn resolve_tcp(r: &Resolver<'_>, prefix: &str, raw: &RawTcp) -> Result<TcpSpec> {
    let key = |name: &str| format!("{prefix}.{name}");
    let window = flatten(raw.window.clone());
    if window == Some(0) {
        return Err(r.error(
            key("window"),
            "expected a window of at least 1 packet, got 0",
        ));
    }
    let downloads = match flatten(raw.downloads.clone()) {
        Some(downloads) => Some(resolve_downloads(r, &key("downloads"), downloads)?),
        None => None,
    };
    Ok(TcpSpec {
        downloads,
        variant: raw.variant.unwrap_or_default(),
        delayed_ack: raw.delayed_ack.unwrap_or(false),
        window,
        profile: raw.profile.unwrap_or_default(),
    })
}

/// A TCP flow's `downloads` table, RFC 8868 §5.1's defaults where a key is missing.
fn resolve_downloads(r: &Resolver<'_>, prefix: &str, raw: RawDownloads) -> Result<DownloadsSpec> {
    let key = |name: &str| format!("{prefix}.{name}");
    let connections = raw.connections.unwrap_or(30);
    if !(1..=1000).contains(&connections) {
        return Err(r.error(
            key("connections"),
            format!("expected from 1 to 1000 connections, got {connections}"),
        ));
    }
    let min_size = raw.min_size.unwrap_or(30_000);
    let max_size = raw.max_size.unwrap_or(50_000);
    if !(1..=1_000_000_000).contains(&min_size) {
        return Err(r.error(
            key("min_size"),
            format!("expected a transfer size from 1 byte to 1 GB, got {min_size}"),
        ));
    }
    if max_size < min_size || max_size > 1_000_000_000 {
        return Err(r.error(
            key("max_size"),
            format!("expected a size from min_size ({min_size}) to 1 GB, got {max_size}"),
        ));
    }
    let idle = r.positive_duration(
        &key("idle"),
        raw.idle.map_or(Duration::from_secs(10), |d| d.0),
    )?;
    Ok(DownloadsSpec {
        connections,
        min_size,
        max_size,
        idle,
        first: raw.first.unwrap_or_default(),
    })
}

/// A media flow carried by ETP runs the TFRC an ETP descriptor can ask for (`rate_control` =
/// `tfrc`, `gtfrc` with its target rate, or `tfrc-sp` with RFC 4828's defaults): the other TFRC
/// options are refused, naming the key and the way out (`media.transport = "tfrc"`).
fn check_etp_media(r: &Resolver<'_>, prefix: &str, spec: &TfrcSpec) -> Result<()> {
    let key = |name: &str| format!("{prefix}.{name}");
    let defaults = tfrc_proto::SmallPackets::default();
    let refused = [
        ("rtt_ref", spec.rtt_ref.is_some()),
        ("feedbacks_per_rtt", spec.feedbacks_per_rtt.is_some()),
        ("veno_beta", spec.veno.is_some()),
        ("profile", spec.profile != TfrcProfile::Rfc5348),
        ("history_discounting", spec.history_discounting),
        ("oscillation_damping", spec.oscillation_damping),
        ("ecn", spec.ecn),
        (
            "nominal_segment_size",
            spec.nominal_segment_size
                .is_some_and(|size| size != defaults.nominal_segment_size),
        ),
        (
            "header_size",
            spec.header_size
                .is_some_and(|size| size != defaults.header_size),
        ),
        (
            "target_rate",
            spec.target_rate.is_some() && spec.variant == TfrcVariant::Sp,
        ),
    ];
    for (name, set) in refused {
        if set {
            return Err(r.error(
                key(name),
                format!(
                    "an ETP media flow's rate control is what an ETP descriptor names (tfrc, \
                     gtfrc with target_rate, tfrc-sp with variant = \"sp\" and RFC 4828's \
                     defaults); {name} needs media.transport = \"tfrc\""
                ),
            ));
        }
    }
    Ok(())
}

/// A TFRC flow's `media` table; `max_rate` is the flow's, the codec's top rate.
fn resolve_media(
    r: &Resolver<'_>,
    prefix: &str,
    raw: RawMedia,
    max_rate: Option<Rate>,
    run_duration: Duration,
) -> Result<MediaSpec> {
    let key = |name: &str| format!("{prefix}.{name}");
    let Some(max_rate) = max_rate else {
        return Err(r.error(
            prefix,
            "a media source needs the flow's max_rate, the codec's top rate (RFC 8867 §4.3: \
             \"1.5Mbps\")",
        ));
    };
    let fps = raw.fps.unwrap_or(30.0);
    let fps = r.number(
        &key("fps"),
        fps,
        fps > 0.0 && fps <= 1000.0,
        "a frame rate above 0 and at most 1000 like 30",
    )?;
    let min_rate = r.positive_rate(
        &key("min_rate"),
        raw.min_rate.unwrap_or(Rate::from_bits_per_second(150_000)),
    )?;
    if min_rate > max_rate {
        return Err(r.error(
            key("min_rate"),
            format!("expected at most the flow's max_rate ({max_rate}), got {min_rate}"),
        ));
    }
    let start_rate = raw.start_rate.unwrap_or(min_rate);
    if start_rate < min_rate || start_rate > max_rate {
        return Err(r.error(
            key("start_rate"),
            format!("expected a rate between min_rate ({min_rate}) and max_rate ({max_rate}), got {start_rate}"),
        ));
    }
    let deadline = r.positive_duration(
        &key("deadline"),
        raw.deadline.map_or(Duration::from_millis(300), |d| d.0),
    )?;
    let (pause, resume) = resolve_pause(r, prefix, &raw, run_duration)?;
    Ok(MediaSpec {
        fps,
        min_rate,
        start_rate,
        deadline,
        pause,
        resume,
        transport: raw.transport.unwrap_or_default(),
    })
}

/// A media source's `pause` and `resume`: both or neither, the resume after the pause, the
/// pause within the run.
fn resolve_pause(
    r: &Resolver<'_>,
    prefix: &str,
    raw: &RawMedia,
    run_duration: Duration,
) -> Result<(Option<Duration>, Option<Duration>)> {
    let key = |name: &str| format!("{prefix}.{name}");
    let pause = flatten(raw.pause.clone()).map(|d| d.0);
    let resume = flatten(raw.resume.clone()).map(|d| d.0);
    match (pause, resume) {
        (None, None) => {}
        (Some(_), None) => return Err(r.error(key("resume"), "a pause needs its resume time")),
        (None, Some(_)) => return Err(r.error(key("pause"), "a resume needs its pause time")),
        (Some(pause), Some(resume)) => {
            if resume <= pause {
                return Err(r.error(
                    key("resume"),
                    format!(
                        "expected a time after pause ({}), got {}",
                        format_duration(pause),
                        format_duration(resume)
                    ),
                ));
            }
            if pause >= run_duration {
                return Err(r.error(
                    key("pause"),
                    format!(
                        "expected a time before the end of the run ({}), got {}",
                        format_duration(run_duration),
                        format_duration(pause)
                    ),
                ));
            }
        }
    }
    Ok((pause, resume))
}

/// The rate (required) and mean on and off times (default 500 ms, as ns-2) of an on/off flow.
fn on_off_keys(
    r: &Resolver<'_>,
    prefix: &str,
    kind: &str,
    rate: Option<Rate>,
    burst: Option<DurationText>,
    idle: Option<DurationText>,
) -> Result<(Rate, Duration, Duration)> {
    let key = |name: &str| format!("{prefix}.{name}");
    let rate = rate.ok_or_else(|| {
        r.error(
            key("rate"),
            format!(
                "required key is missing for a {kind} flow (expected {RATE_EXPECTED}: the rate during on periods)"
            ),
        )
    })?;
    let rate = r.positive_rate(&key("rate"), rate)?;
    let burst = r.positive_duration(
        &key("burst"),
        burst.map_or(Duration::from_millis(500), |d| d.0),
    )?;
    let idle = r.positive_duration(
        &key("idle"),
        idle.map_or(Duration::from_millis(500), |d| d.0),
    )?;
    Ok((rate, burst, idle))
}

fn resolve_marker(
    r: &Resolver<'_>,
    index: usize,
    raw: RawMarker,
    links: &[Link],
    flows: &[FlowSpec],
    instance_names: &HashMap<String, usize>,
) -> Result<MarkerSpec> {
    let prefix = format!("marker[{index}]");
    let key = |name: &str| format!("{prefix}.{name}");
    let link = r.node_pair(&key("link"), &raw.link, "a link direction [from, to]")?;
    if !links.iter().any(|l| l.joins(&link[0], &link[1])) {
        return Err(r.error(
            key("link"),
            format!(
                "expected the direction of an existing link, but no link joins {:?} and {:?}",
                link[0], link[1]
            ),
        ));
    }
    if raw.flows.is_empty() {
        return Err(r.error(key("flows"), "expected at least one flow name like [\"a\"]"));
    }
    let mut seen = HashSet::new();
    for name in &raw.flows {
        let known = flows.iter().any(|f| &f.name == name) || instance_names.contains_key(name);
        if !known {
            let names: Vec<&str> = flows.iter().map(|f| f.name.as_str()).collect();
            let message = if names.is_empty() {
                format!("got unknown flow {name:?}: the scenario has no [[flow]]")
            } else {
                format!(
                    "expected names of flows ({}), got unknown flow {name:?}",
                    names.join(", ")
                )
            };
            return Err(r.error(key("flows"), message));
        }
        if !seen.insert(name) {
            return Err(r.error(key("flows"), format!("flow {name:?} is listed twice")));
        }
    }
    let rate = r.positive_rate(&key("rate"), raw.rate)?;
    if raw.bucket == 0 {
        return Err(r.error(
            key("bucket"),
            "expected a bucket size in bytes above zero like 10000, got 0",
        ));
    }
    Ok(MarkerSpec {
        link,
        kind: raw.kind.unwrap_or_default(),
        flows: raw.flows,
        rate,
        bucket: raw.bucket,
    })
}

/// Most rows one flow's sampling may write over a run (`duration / interval`): 10 million
/// rows of flows.csv or state.csv are about 1 GB per flow. A finer interval is refused before
/// the run rather than filling the disk.
pub const MAX_ROWS_PER_FLOW: u64 = 10_000_000;

/// Largest queue limit, packets: a million full-size datagrams are 1.5 GB of buffer in the
/// emulator (which holds what it queues) and some seconds of delay at any rate we emulate.
pub const MAX_QUEUE_PACKETS: u32 = 1_000_000;

fn resolve_output(r: &Resolver<'_>, raw: RawOutput, duration: Duration) -> Result<Output> {
    let rows_bounded = |key: &str, interval: Duration| -> Result<Duration> {
        let rows = duration.as_nanos() / interval.as_nanos().max(1);
        if rows > u128::from(MAX_ROWS_PER_FLOW) {
            return Err(r.error(
                key,
                format!(
                    "an interval of {interval:?} over a {duration:?} run writes {rows} rows per flow; at most {MAX_ROWS_PER_FLOW} (use an interval of at least {:?})",
                    Duration::from_nanos(
                        u64::try_from(duration.as_nanos().div_ceil(u128::from(MAX_ROWS_PER_FLOW)))
                            .unwrap_or(u64::MAX)
                    )
                ),
            ));
        }
        Ok(interval)
    };
    let interval = r.positive_duration(
        "output.interval",
        raw.interval.map_or(Duration::from_secs(1), |d| d.0),
    )?;
    let interval = rows_bounded("output.interval", interval)?;
    let state_interval = match flatten(raw.state_interval) {
        Some(d) => Some(rows_bounded(
            "output.state_interval",
            r.positive_duration("output.state_interval", d.0)?,
        )?),
        None => None,
    };
    Ok(Output {
        interval,
        state_interval,
    })
}

/// The names a flow entry stands for: `name`, or `name.1` … `name.N` with `count = N`.
pub(crate) fn instance_names(flow: &FlowSpec) -> Vec<String> {
    match flow.count {
        None => vec![flow.name.clone()],
        Some(count) => (1..=count).map(|i| format!("{}.{i}", flow.name)).collect(),
    }
}

/// Marker flow references → instance names (a counted flow's base name stands for all of them).
pub(crate) fn expand_flow_references(references: &[String], flows: &[FlowSpec]) -> Vec<String> {
    let mut names = Vec::new();
    for reference in references {
        match flows.iter().find(|f| &f.name == reference) {
            Some(flow) => names.extend(instance_names(flow)),
            None => names.push(reference.clone()),
        }
    }
    names
}

/// Nodes and links, for existence and connectivity checks.
struct Graph {
    index: HashMap<String, usize>,
    order: Vec<String>,
    component: Vec<usize>,
}

impl Graph {
    fn new(links: &[Link]) -> Graph {
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut order = Vec::new();
        for link in links {
            for node in &link.between {
                if !index.contains_key(node) {
                    index.insert(node.clone(), order.len());
                    order.push(node.clone());
                }
            }
        }
        // Union-find over the links.
        let mut parent: Vec<usize> = (0..order.len()).collect();
        fn root(parent: &mut [usize], mut node: usize) -> usize {
            while parent[node] != node {
                parent[node] = parent[parent[node]];
                node = parent[node];
            }
            node
        }
        for link in links {
            if let (Some(&a), Some(&b)) = (index.get(&link.between[0]), index.get(&link.between[1]))
            {
                let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
                parent[ra] = rb;
            }
        }
        let component = (0..order.len()).map(|n| root(&mut parent, n)).collect();
        Graph {
            index,
            order,
            component,
        }
    }

    fn has_node(&self, node: &str) -> bool {
        self.index.contains_key(node)
    }

    fn connected(&self, a: &str, b: &str) -> bool {
        match (self.index.get(a), self.index.get(b)) {
            (Some(&a), Some(&b)) => self.component.get(a) == self.component.get(b),
            _ => false,
        }
    }

    fn node_list(&self) -> String {
        let names: Vec<String> = self
            .order
            .iter()
            .take(20)
            .map(|n| format!("{n:?}"))
            .collect();
        let mut list = names.join(", ");
        if self.order.len() > 20 {
            list.push_str(", …");
        }
        list
    }
}
