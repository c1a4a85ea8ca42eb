//! From a scenario to the run description the ns-3 program reads (`ns3-run.txt`), and the
//! [`Layout`] the converter needs. See `docs/ns3.md` for the mapping table.
//!
//! The description is plain text, one record per line, fields separated by spaces; times are
//! integer nanoseconds, rates bits/s. Nodes are numbered in [`Scenario::nodes`] order; link
//! direction `d` is `2 × link` (+1 for the reverse), links in file order
//! ([`tfrc_scenario::Hop::direction_index`]); flows are numbered in the order they appear
//! below (flows ns-3 cannot run are left out):
//!
//! ```text
//! seed <seed>
//! duration_ns <run length>
//! flow_times <output interval ends …>
//! state_times <state sampling times …>
//! nodes <count>
//! direction <from> <to> <rate> <delay> <Bernoulli loss rate> <loss start> <loss stop, 0 = none> droptail <limit>
//! direction <from> <to> <rate> <delay> <loss> <start> <stop> red <limit> <min_th> <max_th> <max_p> <weight> <gentle 0|1> <mean packet size>
//! flow tcp <from> <to> <direction of the destination's address> <start> <stop> <packet size> <ns-3 congestion TypeId> <initial cwnd> <delayed ACK 0|1> <window packets, 0 = none> <SACK 0|1>
//! flow cbr <from> <to> <direction> <start> <stop> <packet size> <rate>
//! flow onoff <from> <to> <direction> <start> <stop> <packet size> <rate> <mean on time> <mean off time> <Pareto shape, 0 = exponential>
//! route <node> <direction of the address> <its end: 0 sending, 1 receiving node> <outgoing direction>
//! ```
//!
//! Each direction is a point-to-point channel of its own (so each has its own delay) between
//! a device at its sending node, `10.<d / 256>.<d % 256>.1`, and one at its receiving node,
//! `.2`. A flow's destination address is the destination's end of the last direction of its
//! data path, its source address the source's end of the first. Routes are host routes from
//! the one route function ([`Scenario::route`]): at each node of a flow's data path towards the
//! destination's address, at each node of its ACK path towards the source's, each through the
//! sending device of the route's next direction.

use core::fmt::Write as _;
use core::time::Duration;

use tfrc_scenario::{
    Capacity, FlowKind, FlowSpec, LossModel, QueueSpec, Scenario, TcpProfile, TcpSpec, TcpVariant,
};

use crate::error::Ns3Error;

/// Bytes of the IPv4 and TCP headers of a data segment (no options: the program turns TCP
/// timestamps off). A scenario's `packet_size` counts them, so ns-3's `SegmentSize` is
/// `packet_size − 40`.
pub const NS3_TCP_HEADER_BYTES: u32 = 40;

/// Bytes of the IPv4 and UDP headers: a CBR flow's payload is `packet_size − 28`.
pub const NS3_UDP_HEADER_BYTES: u32 = 28;

/// RED's `MeanPktSize` (bytes), as the ns-2 translator sets `mean_pktsize_` (docs/ns2.md).
const RED_MEAN_PACKET_SIZE: u32 = 500;

/// Largest number of flows (each gets its own sink port from 10000; ns-3's ephemeral ports
/// start at 49152).
const MAX_FLOWS: usize = 39_000;

/// A run description and what it could not express.
#[derive(Debug, Clone)]
pub struct Described {
    /// The run description (`ns3-run.txt`) the program reads.
    pub description: String,
    /// Scenario features the ns-3 run cannot express, one line each, starting with the
    /// scenario key; each says what the run does instead (usually: goes without it).
    pub unsupported: Vec<String>,
    /// Mappings that are faithful only approximately, one line each.
    pub notes: Vec<String>,
    /// What the converter needs to turn the program's samples into the toolkit's files.
    pub layout: Layout,
}

/// The shape of a described run: flows, link directions and sampling times, in output order
/// (the layout both converters share; ns-3 adds nothing per flow).
pub type Layout = tfrc_output::external::RunLayout;
pub use tfrc_output::external::{DirectionLayout, FlowLayout};

/// Writes the ns-3 run description of `scenario`.
///
/// The scenario must be concrete: a scenario with a `[sweep]` is refused (expand it with
/// [`Scenario::expand`]). Flows with `count` are expanded here. Features the run cannot
/// express are listed in [`Described::unsupported`]; the errors are the cases where no run
/// is possible (a trace-driven link, a TCP packet no larger than its headers, a flow between
/// unconnected nodes).
pub fn describe(scenario: &Scenario) -> Result<Described, Ns3Error> {
    describe_with(scenario, BbrModel::default())
}

/// Which ns-3 BBR a `variant = "bbr"` flow runs.
///
/// ns-3.37's `TcpBbr` loses its bandwidth estimate after a retransmission timeout; two later
/// upstream commits fix that path: #1026 "Fix delivery rate estimation bug" (ns-3.41: the ACK
/// phase of a rate sample measured from the acknowledged packet's delivery time, as Linux's
/// `tcp_rate.c`) and #735 "BBR fails to discard invalid samples" (ns-3.42: `UpdateBtlBw` skips a
/// sample by its validity, not by a zero rate). The program applies both to ns-3.37's classes
/// (`ns3/tfrc-ns3.cc`, docs/ns3.md "BBR").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BbrModel {
    /// ns-3.37's `TcpBbr` and `TcpRateLinux` with the upstream fixes #1026 and #735 (the
    /// default: the behaviour upstream ns-3 has had since 3.42).
    #[default]
    UpstreamFixes,
    /// ns-3.37's `TcpBbr` exactly as packaged.
    AsPackaged,
}

impl BbrModel {
    /// The congestion-control TypeId the program creates for a BBR flow.
    pub fn type_id(self) -> &'static str {
        match self {
            BbrModel::UpstreamFixes => "ns3::TfrcTcpBbrUpstreamFixes",
            BbrModel::AsPackaged => "ns3::TcpBbr",
        }
    }
}

/// [`describe`], with the ns-3 BBR that `variant = "bbr"` flows run.
pub fn describe_with(scenario: &Scenario, bbr: BbrModel) -> Result<Described, Ns3Error> {
    if !scenario.sweep.is_empty() {
        return Err(describe_error(
            scenario,
            "sweep",
            format!(
                "the scenario has a [sweep] of {} variants: expand it and describe each \
                 variant (`tfrc ns3` runs each into DIR/<variant name>/)",
                scenario.variant_count()
            ),
        ));
    }
    let scenario = scenario.expand_counts();
    let mut describer = Describer::new(&scenario, bbr);
    describer.links()?;
    describer.flows()?;
    describer.routes();
    describer.markers();
    Ok(describer.finish())
}

fn describe_error(scenario: &Scenario, key: &str, message: String) -> Ns3Error {
    Ns3Error::Describe {
        file: scenario.file().to_owned(),
        key: key.to_owned(),
        message,
    }
}

/// A flow the program runs: its scenario spec and the data and ACK routes (direction indices).
struct PlannedFlow<'a> {
    spec: &'a FlowSpec,
    data_path: Vec<usize>,
    ack_path: Vec<usize>,
}

struct Describer<'a> {
    scenario: &'a Scenario,
    nodes: Vec<&'a str>,
    out: String,
    flows: Vec<PlannedFlow<'a>>,
    directions: Vec<DirectionLayout>,
    unsupported: Vec<String>,
    notes: Vec<String>,
    bbr: BbrModel,
}

impl<'a> Describer<'a> {
    fn new(scenario: &'a Scenario, bbr: BbrModel) -> Describer<'a> {
        let nodes = scenario.nodes();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# tfrc-ns3 run description of scenario {:?} ({}); see docs/ns3.md",
            scenario.name.replace('\n', " "),
            scenario.file().replace('\n', " ")
        );
        let _ = writeln!(out, "seed {}", scenario.seed);
        let _ = writeln!(out, "duration_ns {}", nanos(scenario.duration));
        let (flow_times, state_times) = sample_times(scenario);
        let _ = writeln!(out, "flow_times {}", times_text(&flow_times));
        let _ = writeln!(out, "state_times {}", times_text(&state_times));
        let _ = writeln!(out, "nodes {}", nodes.len());
        Describer {
            scenario,
            nodes,
            out,
            flows: Vec::new(),
            directions: Vec::new(),
            unsupported: Vec::new(),
            notes: Vec::new(),
            bbr,
        }
    }

    fn node(&self, name: &str) -> usize {
        // Validation guarantees every endpoint is a node of some link.
        self.nodes
            .iter()
            .position(|node| *node == name)
            .unwrap_or(0)
    }

    /// `link` and `direction` records.
    fn links(&mut self) -> Result<(), Ns3Error> {
        let scenario = self.scenario;
        for (index, link) in scenario.links.iter().enumerate() {
            let (a, b) = (self.node(&link.between[0]), self.node(&link.between[1]));
            for (spec, key, from, to) in [
                (&link.forward, format!("link[{index}]"), a, b),
                (&link.reverse, format!("link[{index}].reverse"), b, a),
            ] {
                let Capacity::Rate(rate) = &spec.capacity else {
                    return Err(describe_error(
                        scenario,
                        &format!("{key}.trace"),
                        "the ns-3 runner has no trace-driven links (a delivery trace has no \
                         ns-3 point-to-point equivalent)"
                            .to_owned(),
                    ));
                };
                let loss = self.loss_fields(spec.loss.as_ref(), &key);
                let queue = self.queue_fields(&spec.queue, &key);
                let _ = writeln!(
                    self.out,
                    "direction {from} {to} {} {} {loss} {queue}",
                    rate.bits_per_second(),
                    nanos(spec.delay)
                );
                self.directions.push(DirectionLayout {
                    from: self.nodes[from].to_owned(),
                    to: self.nodes[to].to_owned(),
                    capacity_bps: rate.bits_per_second(),
                });
            }
        }
        Ok(())
    }

    /// The loss fields of a `direction` record: the Bernoulli loss rate (`0` for none) and the
    /// times it acts between (stop `0`: to the end); other models are unsupported.
    fn loss_fields(&mut self, loss: Option<&tfrc_scenario::LossSpec>, key: &str) -> String {
        let Some(loss) = loss else {
            return "0 0 0".to_owned();
        };
        match loss.model {
            LossModel::Bernoulli { rate } => format!(
                "{rate} {} {}",
                nanos(loss.start),
                loss.stop.map_or(0, nanos)
            ),
            _ => {
                self.unsupported.push(format!(
                    "{key}.loss: only Bernoulli loss maps to ns-3's RateErrorModel; the \
                     direction runs without loss"
                ));
                "0 0 0".to_owned()
            }
        }
    }

    /// The queue fields of a `direction` record.
    fn queue_fields(&mut self, queue: &QueueSpec, key: &str) -> String {
        match queue {
            QueueSpec::DropTail { limit } => {
                if *limit < 3 {
                    self.notes.push(format!(
                        "{key}.queue.limit: a FifoQueueDisc holds at least one packet, so with \
                         the device queue's and the one in transmission the direction holds 3 \
                         packets, not {limit}"
                    ));
                }
                format!("droptail {limit}")
            }
            QueueSpec::Red(red) => {
                if red.ecn {
                    self.unsupported.push(format!(
                        "{key}.queue.ecn: the ns-3 runner's flows are not ECN-capable; RED drops"
                    ));
                }
                format!(
                    "red {} {} {} {} {} {} {RED_MEAN_PACKET_SIZE}",
                    red.limit,
                    red.min_th,
                    red.max_th,
                    red.max_p,
                    red.weight,
                    u8::from(red.gentle)
                )
            }
            QueueSpec::Rio(rio) => {
                self.unsupported.push(format!(
                    "{key}.queue: ns-3 has no RIO queue; the direction runs DropTail with the \
                     limit {}",
                    rio.limit
                ));
                format!("droptail {}", rio.limit)
            }
        }
    }

    /// `flow` records of the flows ns-3 runs; the others are listed as unsupported.
    fn flows(&mut self) -> Result<(), Ns3Error> {
        let scenario = self.scenario;
        for (index, flow) in scenario.flows.iter().enumerate() {
            let Some(fields) = self.flow_fields(index, flow)? else {
                continue;
            };
            let route = |from: &str, to: &str| {
                scenario
                    .route(from, to)
                    .ok()
                    .filter(|route| !route.hops.is_empty())
                    .map(|route| route.hops.iter().map(|hop| hop.direction_index()).collect())
                    .ok_or_else(|| {
                        describe_error(
                            scenario,
                            &format!("flow[{index}].to"),
                            format!(
                                "no chain of links joins {from} to {to} (flow {})",
                                flow.name
                            ),
                        )
                    })
            };
            let data_path: Vec<usize> = route(&flow.from, &flow.to)?;
            let ack_path: Vec<usize> = route(&flow.to, &flow.from)?;
            let destination_direction = data_path.last().copied().unwrap_or(0);
            let (kind, fields) = fields;
            let _ = writeln!(
                self.out,
                "flow {kind} {} {} {destination_direction} {} {} {} {fields}",
                self.node(&flow.from),
                self.node(&flow.to),
                nanos(flow.start),
                nanos(flow.stop_time(scenario.duration)),
                flow.packet_size,
            );
            self.flows.push(PlannedFlow {
                spec: flow,
                data_path,
                ack_path,
            });
        }
        if self.flows.len() > MAX_FLOWS {
            return Err(describe_error(
                scenario,
                "flow",
                format!(
                    "{} flows; the ns-3 runner takes at most {MAX_FLOWS}",
                    self.flows.len()
                ),
            ));
        }
        Ok(())
    }
}

impl Describer<'_> {
    /// The kind and the kind's own fields of a `flow` record, `None` for a flow the program
    /// cannot run (listed as unsupported, left out of the run).
    fn flow_fields(
        &mut self,
        index: usize,
        flow: &FlowSpec,
    ) -> Result<Option<(&'static str, String)>, Ns3Error> {
        let name = &flow.name;
        match &flow.kind {
            FlowKind::Tcp(tcp) => self.tcp_fields(index, flow, tcp).map(Some),
            FlowKind::Cbr { rate } => {
                self.check_udp_size(index, flow)?;
                Ok(Some(("cbr", rate.bits_per_second().to_string())))
            }
            FlowKind::Tfrc(_) => {
                self.unsupported.push(format!(
                    "flow.{name}: ns-3 has no TFRC (nor gTFRC, TFRC-SP, media sources); the \
                     flow is left out of the run and of the output"
                ));
                Ok(None)
            }
            FlowKind::Pareto(on_off) | FlowKind::ExponentialOnOff(on_off) => {
                self.check_udp_size(index, flow)?;
                self.notes.push(format!(
                    "flow.{name}: {} on/off maps to ns-3's OnOffApplication with {} on and off \
                     times of the given means; ns-2 draws a burst's packet count instead",
                    flow.kind_name(),
                    if on_off.shape.is_some() {
                        "Pareto"
                    } else {
                        "exponential"
                    }
                ));
                Ok(Some((
                    "onoff",
                    format!(
                        "{} {} {} {}",
                        on_off.rate.bits_per_second(),
                        nanos(on_off.burst),
                        nanos(on_off.idle),
                        on_off.shape.unwrap_or(0.0)
                    ),
                )))
            }
        }
    }

    /// A UDP packet must carry a payload after its 28-byte UDP/IP header.
    fn check_udp_size(&self, index: usize, flow: &FlowSpec) -> Result<(), Ns3Error> {
        if flow.packet_size > NS3_UDP_HEADER_BYTES {
            return Ok(());
        }
        Err(describe_error(
            self.scenario,
            &format!("flow[{index}].packet_size"),
            format!(
                "flow {}: a UDP packet of {} bytes leaves no payload after the \
                 {NS3_UDP_HEADER_BYTES}-byte UDP/IP header",
                flow.name, flow.packet_size
            ),
        ))
    }

    /// The fields of a TCP flow's `flow` record.
    fn tcp_fields(
        &mut self,
        index: usize,
        flow: &FlowSpec,
        tcp: &TcpSpec,
    ) -> Result<(&'static str, String), Ns3Error> {
        let name = &flow.name;
        if flow.packet_size <= NS3_TCP_HEADER_BYTES {
            return Err(describe_error(
                self.scenario,
                &format!("flow[{index}].packet_size"),
                format!(
                    "flow {name}: a TCP packet of {} bytes leaves no payload after the \
                     {NS3_TCP_HEADER_BYTES}-byte TCP/IP header",
                    flow.packet_size
                ),
            ));
        }
        let (congestion, initial_window) = self.tcp_variant(name, tcp.variant);
        if tcp.downloads.is_some() {
            self.unsupported.push(format!(
                "flow.{name}.downloads: the ns-3 runner runs one bulk transfer per TCP flow; \
                 the flow sends bulk data instead of groups of short transfers"
            ));
        }
        if tcp.profile == TcpProfile::Ns2 {
            self.notes.push(format!(
                "flow.{name}.profile: \"ns2\" asked; ns-3 runs its own TCP (RFC 6298 timers, \
                 1 s initial RTO)"
            ));
        }
        Ok((
            "tcp",
            format!(
                "{congestion} {initial_window} {} {} {}",
                u8::from(tcp.delayed_ack),
                tcp.window.unwrap_or(0),
                u8::from(tcp.variant.uses_sack())
            ),
        ))
    }

    /// ns-3's congestion control TypeId and initial window (segments) of a TCP variant.
    fn tcp_variant(&mut self, name: &str, variant: TcpVariant) -> (&'static str, u32) {
        match variant {
            TcpVariant::Reno => {
                self.notes.push(format!(
                    "flow.{name}.variant: \"reno\" maps to ns3::TcpLinuxReno without SACK; \
                     ns-3's recovery keeps going on partial ACKs (NewReno-like, with PRR), \
                     where Reno's ends"
                ));
                ("ns3::TcpLinuxReno", 2)
            }
            TcpVariant::NewReno => ("ns3::TcpNewReno", 2),
            TcpVariant::Sack => {
                self.notes.push(format!(
                    "flow.{name}.variant: \"sack\" maps to ns3::TcpNewReno with SACK; ns-3 \
                     recovers with its SACK scoreboard and PRR (TcpPrrRecovery), ours with \
                     RFC 6675"
                ));
                ("ns3::TcpNewReno", 2)
            }
            TcpVariant::Cubic => ("ns3::TcpCubic", 10),
            TcpVariant::Bbr => {
                if self.bbr == BbrModel::UpstreamFixes {
                    self.notes.push(format!(
                        "flow.{name}.variant: \"bbr\" runs ns3::TcpBbr with two upstream fixes \
                         ns-3.37 predates (#1026 delivery-rate ACK phase, ns-3.41; #735 invalid \
                         samples, ns-3.42); --bbr-as-packaged runs it unchanged (docs/ns3.md)"
                    ));
                }
                (self.bbr.type_id(), 10)
            }
        }
    }

    /// `route` records: a host route at every node of every flow's data path (to the
    /// destination's address) and ACK path (to the source's address). Where two flows would
    /// need different next hops at one node for one address (ties in the route function), the
    /// first wins and the run says so.
    fn routes(&mut self) {
        let directions = self.scenario.link_directions();
        // (node, address direction, address end, outgoing direction)
        let mut installed: Vec<(usize, usize, u8, usize)> = Vec::new();
        let mut conflicts = Vec::new();
        for flow in &self.flows {
            let destination = (flow.data_path.last().copied().unwrap_or(0), 1);
            let source = (flow.data_path.first().copied().unwrap_or(0), 0);
            for (path, (address, end)) in [(&flow.data_path, destination), (&flow.ack_path, source)]
            {
                for &out in path {
                    let at = self.node(directions[out].0);
                    match installed
                        .iter()
                        .find(|route| (route.0, route.1, route.2) == (at, address, end))
                    {
                        Some(route) if route.3 != out => conflicts.push(flow.spec.name.clone()),
                        Some(_) => {}
                        None => installed.push((at, address, end, out)),
                    }
                }
            }
        }
        for (at, address, end, out) in installed {
            let _ = writeln!(self.out, "route {at} {address} {end} {out}");
        }
        conflicts.dedup();
        for name in conflicts {
            self.notes.push(format!(
                "flow.{name}: its route and another flow's part ways at a node for the same \
                 address; ns-3's host routes take the first flow's next hop"
            ));
        }
    }

    fn markers(&mut self) {
        for (index, marker) in self.scenario.markers.iter().enumerate() {
            self.unsupported.push(format!(
                "marker[{index}]: ns-3 has no token-bucket marker with RIO; the packets of {} \
                 go unmarked",
                marker.flows.join(", ")
            ));
        }
    }

    fn finish(mut self) -> Described {
        collapse_instances(&mut self.unsupported);
        collapse_instances(&mut self.notes);
        let scenario = self.scenario;
        let (flow_times, state_times) = sample_times(scenario);
        let flows = self
            .flows
            .iter()
            .map(|flow| FlowLayout {
                name: flow.spec.name.clone(),
                kind: flow.spec.output_kind(),
                from: flow.spec.from.clone(),
                to: flow.spec.to.clone(),
                start: flow.spec.start,
                stop: flow.spec.stop_time(scenario.duration),
                packet_size: flow.spec.packet_size,
                data_path: flow.data_path.clone(),
                extra: (),
            })
            .collect();
        let mut description = String::new();
        for line in &self.unsupported {
            let _ = writeln!(description, "# UNSUPPORTED {}", line.replace('\n', " "));
        }
        for line in &self.notes {
            let _ = writeln!(description, "# NOTE {}", line.replace('\n', " "));
        }
        description.push_str(&self.out);
        Described {
            description,
            unsupported: self.unsupported,
            notes: self.notes,
            layout: Layout {
                scenario: scenario.name.clone(),
                parameters: scenario.variant.clone(),
                seed: scenario.seed,
                duration: scenario.duration,
                interval: scenario.output.interval,
                flow_times,
                state_times,
                flows,
                directions: self.directions,
            },
        }
    }
}

/// Merges consecutive lines that differ only by the instance number of a `count` flow
/// (`flow.f.1: …`, `flow.f.2: …`) into one naming the range (`flow.f.{1…8} (8 flows): …`).
fn collapse_instances(lines: &mut Vec<String>) {
    let mut collapsed: Vec<(String, Vec<String>)> = Vec::new();
    for line in lines.drain(..) {
        match (instance_pattern(&line), collapsed.last_mut()) {
            (Some((template, number)), Some((last, numbers))) if *last == template => {
                numbers.push(number);
            }
            (Some((template, number)), _) => collapsed.push((template, vec![number])),
            (None, _) => collapsed.push((line, Vec::new())),
        }
    }
    for (template, numbers) in collapsed {
        let line = match numbers.as_slice() {
            [] => template,
            [one] => template.replacen('\u{0}', one, 1).replacen('\u{1}', "", 1),
            [first, .., last] => template
                .replacen('\u{0}', &format!("{{{first}…{last}}}"), 1)
                .replacen('\u{1}', &format!(" ({} flows)", numbers.len()), 1),
        };
        lines.push(line);
    }
}

/// For `flow.<base>.<number>[.<key>]: <message>`, the line with the number replaced by a
/// placeholder (`\u{0}`, and `\u{1}` where the count goes), and the number.
fn instance_pattern(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("flow.")?;
    let key_end = rest.find(':')?;
    let segments: Vec<&str> = rest[..key_end].split('.').collect();
    let position = (1..segments.len())
        .rev()
        .find(|&i| segments[i].bytes().all(|b| b.is_ascii_digit()) && !segments[i].is_empty())?;
    let base = segments[..position].join(".");
    let number = segments[position];
    let mut key = segments.clone();
    key[position] = "\u{0}";
    let message = rest[key_end..].replace(&format!("{base}.{number}"), &format!("{base}.*"));
    Some((
        format!("flow.{}\u{1}{message}", key.join(".")),
        number.to_owned(),
    ))
}

/// Nanoseconds of a duration, as the description writes times.
fn nanos(duration: Duration) -> u128 {
    duration.as_nanos()
}

fn times_text(times: &[Duration]) -> String {
    times
        .iter()
        .map(|time| nanos(*time).to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Ends of the output intervals and the state sampling times: multiples of the interval up to
/// the duration, plus the duration itself when it is not a multiple (a shorter last interval),
/// as `tfrc ns2` samples (docs/ns2.md, "How the output is produced").
pub(crate) fn sample_times(scenario: &Scenario) -> (Vec<Duration>, Vec<Duration>) {
    let times = |step| tfrc_output::external::sample_times(scenario.duration, step);
    (
        times(scenario.output.interval),
        times(scenario.output.state_sampling_interval()),
    )
}
