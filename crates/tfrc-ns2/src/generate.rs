//! From a scenario to an ns-2 Tcl script (see `docs/ns2.md` for the mapping table).
//!
//! The script builds the topology with one `simplex-link` per link direction (so asymmetric
//! links map directly), attaches one agent pair per flow and schedules two sampling procedures
//! that print cumulative counters on standard output, one line per flow or link direction:
//!
//! ```text
//! F <interval index> <flow index> <sent packets> <sent bytes> <received packets | -> <received bytes>
//! S <sample index> <flow index> <TFRC rate_ in bytes/s>
//! S <sample index> <flow index> <cwnd> <ssthresh> <rtt s | -> <srtt s | -> <rto s | ->
//! L <interval index> <direction index> <queue bytes> <queue packets> <arrivals> <departures> <departure bytes> <drops> <average queue | ->
//! ```
//!
//! [`crate::convert_samples`] turns these into the toolkit's CSV files using the [`Layout`]
//! returned here.

use core::fmt::Write as _;
use core::time::Duration;
use std::collections::BTreeMap;
use std::path::Path;

use tfrc_scenario::{
    Capacity, FlowKind, FlowSpec, LinkDirectionSpec, LossModel, QueueSpec, Scenario, TcpProfile,
    TcpVariant, TfrcProfile, TfrcVariant,
};

use crate::error::Ns2Error;
use crate::routing::Topology;
use crate::tcl;

/// Bytes ns-2's TCP agents add to `packetSize_` on the wire (`tcpip_base_hdr_size_`). A
/// scenario's `packet_size` counts headers, so the agent gets `packet_size − 40`.
pub const NS2_TCP_HEADER_BYTES: u32 = 40;

/// ns-2's TFRC header (`Agent/TFRC set headersize_ 32`). The generated script runs TFRC with
/// `useHeaders_ false`, so it lies inside `packet_size`, as the simulator's ns-2 profile has it.
pub const NS2_TFRC_HEADER_BYTES: u32 = 32;

/// Rate and queue of the access links that give marked flows their own source node (see
/// [`generate`]): fast enough that they never delay or drop anything that matters.
const ACCESS_LINK_RATE: &str = "100Gb";
const ACCESS_LINK_QUEUE: u32 = 100_000;

/// The DiffServ code points of the generated dsRED queues: in profile, out of profile, and
/// unmarked (packets no marker selected; RIO treats them as out of profile, as our simulator).
const CODE_POINT_IN: u32 = 10;
const CODE_POINT_OUT: u32 = 11;
const CODE_POINT_UNMARKED: u32 = 0;

/// dsRED's fixed EWMA weight (`redQueue::config` sets `q_w = 0.002`).
const DSRED_WEIGHT: f64 = 0.002;

/// TCP's window when the scenario gives none ("unlimited"): far above any window a finite
/// queue allows.
const UNLIMITED_TCP_WINDOW: u32 = 100_000;

/// A generated ns-2 script and what it could not express.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The Tcl script (run with `ns script.tcl`).
    pub tcl: String,
    /// Scenario features ns-2 cannot express, one human-readable line each, starting with the
    /// scenario key (`flow.a.target_rate: …`). The script runs without them (or with the
    /// substitute the line names).
    pub unsupported: Vec<String>,
    /// Mappings that are faithful only approximately (e.g. `rtt_ref` to a fixed
    /// `NumFeedback_`), one line each, starting with the scenario key.
    pub notes: Vec<String>,
    /// What the converter needs to turn the script's output into the toolkit's files.
    pub layout: Layout,
}

/// The shape of a generated run: flows, link directions and sampling times, in output order.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Scenario (or sweep variant) name.
    pub scenario: String,
    /// The sweep grid's `(label, value)` pairs of the variant (empty outside a sweep).
    pub parameters: Vec<(String, String)>,
    /// The scenario seed.
    pub seed: u64,
    /// Run length.
    pub duration: Duration,
    /// `[output] interval`.
    pub interval: Duration,
    /// Ends of the output intervals (`flows.csv`/`links.csv` rows), in order.
    pub flow_times: Vec<Duration>,
    /// State sampling times (`state.csv` rows), in order.
    pub state_times: Vec<Duration>,
    /// The flows, in scenario order (after `count` expansion).
    pub flows: Vec<FlowLayout>,
    /// The link directions: forward then reverse of each link, in scenario order.
    pub directions: Vec<LinkDirectionLayout>,
    /// The TFRC flow whose sink prints its loss event rate (`printLoss_ 1`): the first TFRC
    /// flow. ns-2.35 binds neither the sender's nor the sink's p, and the sink prints it
    /// (`time: T loss_rate: P`) without naming its flow, so only one sink may print.
    pub loss_rate_flow: Option<usize>,
}

/// One flow of a generated run.
#[derive(Debug, Clone)]
pub struct FlowLayout {
    /// Flow name (`name.3` for an instance of a `count` flow).
    pub name: String,
    /// The `kind` column of `flows.csv`: the scenario's kind (`tfrc`, `tcp`, `cbr`, `pareto`, `exp-onoff`).
    pub kind: tfrc_output::FlowKind,
    /// Sending node.
    pub from: String,
    /// Receiving node.
    pub to: String,
    /// Start time.
    pub start: Duration,
    /// Stop time (the run's duration when the scenario gives none).
    pub stop: Duration,
    /// Packet size on the wire, headers included.
    pub packet_size: u32,
    /// Which counters the script prints for it.
    pub sample: SampleKind,
    /// `NumFeedback_` of a TFRC sink.
    pub feedbacks_per_rtt: Option<u32>,
    /// Indices into [`Layout::directions`] of the link directions its data crosses.
    pub data_path: Vec<usize>,
}

/// Which counters the generated script samples for a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleKind {
    /// `Agent/TFRC` and `Agent/TFRCSink`: `ndatapack_`, `ndatabytes_`, sink `bytes_`, `rate_`.
    Tfrc,
    /// `Agent/TCP*` and `Agent/TCPSink*`: `ndatapack_`, `ndatabytes_`, sink `bytes_`, `cwnd_`,
    /// `ssthresh_`, `rtt_`, `srtt_`, `rttvar_`, `backoff_`.
    Tcp,
    /// `Agent/UDP` with a traffic generator and `Agent/LossMonitor`: a flow monitor on the first
    /// link counts what was sent, the loss monitor's `npkts_`/`bytes_` what arrived.
    Udp,
}

/// One link direction of a generated run.
#[derive(Debug, Clone)]
pub struct LinkDirectionLayout {
    /// Sending node.
    pub from: String,
    /// Receiving node.
    pub to: String,
    /// The rate ns-2 uses, in bits/s: the link's constant rate, or for a trace the mean rate of
    /// its schedule over the run.
    pub capacity_bps: u64,
    /// Whether the scenario gives a trace (ns-2 then changes the link's rate every
    /// [`TRACE_BIN`] to follow it).
    pub trace_driven: bool,
}

/// One scenario link direction as the generator sees it.
struct DirectionPlan<'a> {
    from: usize,
    to: usize,
    spec: &'a LinkDirectionSpec,
    /// Scenario key prefix: `link[1]` or `link[1].reverse`.
    key: String,
    capacity_bps: u64,
    /// For a trace: the rate changes `(time, bits/s)` that make the ns-2 link follow it.
    rate_changes: Vec<(Duration, u64)>,
    /// Indices of the markers on this direction.
    markers: Vec<usize>,
}

/// Where the flows of one (source node, set of markers) group attach: a private node behind an
/// access link, so that ns-2's dsRED policy table (keyed on source and destination node) can
/// tell them apart from other flows of the same node.
struct AccessNode {
    id: usize,
    attached_to: usize,
    markers: Vec<usize>,
}

/// Writes an ns-2.35 Tcl script for `scenario`.
///
/// The scenario must be concrete: a scenario with a `[sweep]` is refused (expand it with
/// [`Scenario::expand`] and generate each variant). Flows with `count` are expanded here.
/// Features ns-2 cannot express are listed in [`Generated::unsupported`]; the error cases are
/// those where no script can be written at all (an unreadable trace, a TCP packet no larger
/// than its headers, a flow between unconnected nodes).
pub fn generate(scenario: &Scenario) -> Result<Generated, Ns2Error> {
    if !scenario.sweep.is_empty() {
        return Err(generate_error(
            scenario,
            "sweep",
            format!(
                "the scenario has a [sweep] of {} variants: expand it and generate each \
                 variant (`tfrc ns2` runs each into DIR/<variant name>/)",
                scenario.variant_count()
            ),
        ));
    }
    let scenario = scenario.expand_counts();
    Generator::new(&scenario)?.write()
}

fn generate_error(scenario: &Scenario, key: &str, message: String) -> Ns2Error {
    Ns2Error::Generate {
        file: scenario.file().to_owned(),
        key: key.to_owned(),
        message,
    }
}

struct Generator<'a> {
    scenario: &'a Scenario,
    topology: Topology,
    directions: Vec<DirectionPlan<'a>>,
    access_nodes: Vec<AccessNode>,
    /// For each flow, the node its agent attaches to (a scenario node or an access node).
    attach: Vec<usize>,
    flows: Vec<FlowLayout>,
    unsupported: Vec<String>,
    notes: Vec<String>,
}

impl<'a> Generator<'a> {
    fn new(scenario: &'a Scenario) -> Result<Generator<'a>, Ns2Error> {
        let topology = Topology::new(scenario);
        let mut generator = Generator {
            scenario,
            topology,
            directions: Vec::new(),
            access_nodes: Vec::new(),
            attach: Vec::new(),
            flows: Vec::new(),
            unsupported: Vec::new(),
            notes: Vec::new(),
        };
        generator.plan_directions()?;
        generator.plan_markers();
        generator.plan_flows()?;
        Ok(generator)
    }

    /// See [`Layout::loss_rate_flow`].
    fn loss_rate_flow(&self) -> Option<usize> {
        self.flows
            .iter()
            .position(|flow| flow.sample == SampleKind::Tfrc)
    }

    fn node(&self, name: &str) -> usize {
        // Validation guarantees every endpoint is a node of some link.
        self.topology.id(name).unwrap_or(0)
    }

    fn plan_directions(&mut self) -> Result<(), Ns2Error> {
        let scenario = self.scenario;
        for (index, link) in scenario.links.iter().enumerate() {
            let a = self.node(&link.between[0]);
            let b = self.node(&link.between[1]);
            for (from, to, spec, key) in [
                (a, b, &link.forward, format!("link[{index}]")),
                (b, a, &link.reverse, format!("link[{index}].reverse")),
            ] {
                let (capacity_bps, rate_changes) = match &spec.capacity {
                    Capacity::Rate(rate) => (rate.bits_per_second(), Vec::new()),
                    Capacity::Trace { path, offset, .. } => {
                        let schedule = TraceFile::read(path)
                            .and_then(|trace| trace.rate_schedule(*offset, scenario.duration))
                            .map_err(|message| {
                                generate_error(scenario, &format!("{key}.trace"), message)
                            })?;
                        self.unsupported.push(format!(
                            "{key}.trace: ns-2 links have no delivery opportunities; the link's \
                             rate follows the trace {} in {} ms bins ({} rate changes, mean {} bit/s)",
                            path.display(),
                            TRACE_BIN.as_millis(),
                            schedule.changes.len(),
                            schedule.mean_bps
                        ));
                        (schedule.mean_bps, schedule.changes)
                    }
                };
                self.directions.push(DirectionPlan {
                    from,
                    to,
                    spec,
                    key,
                    capacity_bps,
                    rate_changes,
                    markers: Vec::new(),
                });
            }
        }
        Ok(())
    }

    fn direction_index(&self, from: usize, to: usize) -> Option<usize> {
        self.directions
            .iter()
            .position(|direction| direction.from == from && direction.to == to)
    }

    fn plan_markers(&mut self) {
        let scenario = self.scenario;
        for (index, marker) in scenario.markers.iter().enumerate() {
            let from = self.node(&marker.link[0]);
            let to = self.node(&marker.link[1]);
            if let Some(direction) = self.direction_index(from, to) {
                self.directions[direction].markers.push(index);
            }
        }
        // Group marked flows by (source node, markers): one access node per group.
        let mut groups: BTreeMap<(usize, Vec<usize>), usize> = BTreeMap::new();
        let first_access_id = self.topology.names().len();
        for flow in &scenario.flows {
            let from = self.node(&flow.from);
            let markers: Vec<usize> = scenario
                .markers
                .iter()
                .enumerate()
                .filter(|(_, marker)| marker.flows.contains(&flow.name))
                .map(|(index, _)| index)
                .collect();
            if markers.is_empty() {
                self.attach.push(from);
                continue;
            }
            let next_id = first_access_id + groups.len();
            let id = *groups.entry((from, markers.clone())).or_insert(next_id);
            if id == next_id {
                self.access_nodes.push(AccessNode {
                    id,
                    attached_to: from,
                    markers,
                });
            }
            self.attach.push(id);
        }
        for (index, marker) in scenario.markers.iter().enumerate() {
            let groups = self
                .access_nodes
                .iter()
                .filter(|node| node.markers.contains(&index))
                .count();
            if groups > 1 {
                self.unsupported.push(format!(
                    "marker[{index}].flows: its flows come from several source nodes or are also \
                     marked elsewhere by different markers; ns-2's dsRED keeps one token bucket \
                     per (source node, destination) policy entry, so the aggregate is split into \
                     {groups} buckets of {} bit/s and {} bytes each",
                    marker.rate.bits_per_second(),
                    marker.bucket
                ));
            }
        }
    }

    /// A dsRED edge re-marks every packet by its own policy table: a flow marked on its way
    /// that then crosses a marked direction where no marker selects it arrives unmarked in
    /// ns-2, while our simulator keeps its colour. Says so for each such direction.
    fn note_lost_colour(&mut self, flow: &FlowSpec, data_path: &[usize]) {
        let scenario = self.scenario;
        let selects = |direction: &DirectionPlan<'_>| {
            direction
                .markers
                .iter()
                .any(|&marker| scenario.markers[marker].flows.contains(&flow.name))
        };
        let Some(first) = data_path
            .iter()
            .position(|&direction| selects(&self.directions[direction]))
        else {
            return;
        };
        for &direction in &data_path[first + 1..] {
            let plan = &self.directions[direction];
            if !plan.markers.is_empty() && !selects(plan) {
                self.notes.push(format!(
                    "flow.{}: marked on {} and then crossing {}, marked by markers that do not \
                     select it: ns-2's dsRED edge there re-marks its packets to the default \
                     (unmarked) code point; our simulator keeps their colour",
                    flow.name, self.directions[data_path[first]].key, plan.key
                ));
            }
        }
    }

    fn plan_flows(&mut self) -> Result<(), Ns2Error> {
        let scenario = self.scenario;
        for (index, flow) in scenario.flows.iter().enumerate() {
            let from = self.node(&flow.from);
            let to = self.node(&flow.to);
            let path = self.topology.path(from, to).ok_or_else(|| {
                generate_error(
                    scenario,
                    &format!("flow[{index}].to"),
                    format!(
                        "no chain of links joins {} to {} (flow {})",
                        flow.from, flow.to, flow.name
                    ),
                )
            })?;
            let data_path: Vec<usize> = path
                .windows(2)
                .filter_map(|pair| self.direction_index(pair[0], pair[1]))
                .collect();
            self.note_lost_colour(flow, &data_path);
            // The kind as the scenario file names it, as the simulator writes it.
            let kind =
                flow.kind_name()
                    .parse()
                    .map_err(|error: tfrc_output::UnknownFlowKind| {
                        generate_error(scenario, &format!("flow[{index}].kind"), error.to_string())
                    })?;
            let sample = match &flow.kind {
                FlowKind::Tfrc(_) => SampleKind::Tfrc,
                FlowKind::Tcp(_) => SampleKind::Tcp,
                FlowKind::Cbr { .. } | FlowKind::Pareto(_) | FlowKind::ExponentialOnOff(_) => {
                    SampleKind::Udp
                }
            };
            if let FlowKind::Tcp(_) = flow.kind {
                if flow.packet_size <= NS2_TCP_HEADER_BYTES {
                    return Err(generate_error(
                        scenario,
                        &format!("flow[{index}].packet_size"),
                        format!(
                            "flow {}: a TCP packet of {} bytes leaves no payload after ns-2's \
                             {NS2_TCP_HEADER_BYTES}-byte TCP/IP header",
                            flow.name, flow.packet_size
                        ),
                    ));
                }
            }
            let feedbacks_per_rtt = match &flow.kind {
                FlowKind::Tfrc(tfrc) => Some(match (tfrc.feedbacks_per_rtt, tfrc.rtt_ref) {
                    // ns-2's NumFeedback_ itself.
                    (Some(count), _) => count,
                    (None, None) => 1,
                    (None, Some(rtt_ref)) => {
                        let base_rtt = self.base_rtt(&data_path, &path, flow);
                        let ratio = base_rtt.as_secs_f64() / rtt_ref.as_secs_f64();
                        let count = (ratio.floor() as u32).max(1);
                        self.notes.push(format!(
                            "flow.{}.rtt_ref: ns-2's sink sends a fixed NumFeedback_ reports per \
                             RTT; mapped to {count} = max(int(R0/rtt_ref), 1) with the base RTT \
                             R0 = {:.6} s of the path (propagation and transmission, no queueing)",
                            flow.name,
                            base_rtt.as_secs_f64()
                        ));
                        count
                    }
                }),
                _ => None,
            };
            self.flows.push(FlowLayout {
                name: flow.name.clone(),
                kind,
                from: flow.from.clone(),
                to: flow.to.clone(),
                start: flow.start,
                stop: flow.stop_time(scenario.duration),
                packet_size: flow.packet_size,
                sample,
                feedbacks_per_rtt,
                data_path,
            });
            self.check_flow_features(flow);
        }
        Ok(())
    }

    /// Propagation of both directions plus one data packet's transmission on each forward hop.
    fn base_rtt(&self, data_path: &[usize], nodes: &[usize], flow: &FlowSpec) -> Duration {
        let mut total = Duration::ZERO;
        for &direction in data_path {
            let plan = &self.directions[direction];
            total += plan.spec.delay;
            total += Duration::from_secs_f64(
                f64::from(flow.packet_size) * 8.0 / plan.capacity_bps as f64,
            );
        }
        for pair in nodes.windows(2).rev() {
            if let Some(back) = self.direction_index(pair[1], pair[0]) {
                total += self.directions[back].spec.delay;
            }
        }
        total
    }

    fn check_flow_features(&mut self, flow: &FlowSpec) {
        let name = &flow.name;
        match &flow.kind {
            FlowKind::Tfrc(tfrc) => {
                if let Some(target) = tfrc.target_rate {
                    self.unsupported.push(format!(
                        "flow.{name}.target_rate: ns-2.35 has no gTFRC; the flow runs plain TFRC \
                         without the {} bit/s floor",
                        target.bits_per_second()
                    ));
                }
                if let Some(veno) = tfrc.veno {
                    self.unsupported.push(format!(
                        "flow.{name}.veno_beta: ns-2.35 has no Veno loss differentiation \
                         (beta = {}, alpha = {}); the flow runs plain TFRC",
                        veno.beta, veno.alpha
                    ));
                }
                if let Some(rate) = tfrc.max_rate {
                    self.unsupported.push(format!(
                        "flow.{name}.max_rate: the translator attaches no application to ns-2's \
                         Agent/TFRC, which sends bulk data; the flow runs without the {} bit/s \
                         cap",
                        rate.bits_per_second()
                    ));
                }
                if tfrc.media.is_some() {
                    self.unsupported.push(format!(
                        "flow.{name}.media: ns-2's Agent/TFRC has no media source (frames, \
                         playout deadlines); the flow sends bulk data"
                    ));
                }
                if tfrc.profile == TfrcProfile::Rfc5348 {
                    self.notes.push(format!(
                        "flow.{name}.profile: \"rfc5348\" asked, but ns-2 runs its own Agent/TFRC \
                         (see docs/ns2.md for where it differs from RFC 5348)"
                    ));
                }
            }
            FlowKind::Tcp(tcp) => {
                if tcp.window.is_none() {
                    self.notes.push(format!(
                        "flow.{name}.window: unlimited maps to window_ {UNLIMITED_TCP_WINDOW}"
                    ));
                }
                if tcp.downloads.is_some() {
                    self.unsupported.push(format!(
                        "flow.{name}.downloads: the translator runs one bulk FTP transfer per \
                         TCP flow; the flow sends bulk data instead of groups of short transfers"
                    ));
                }
                if tcp.variant == TcpVariant::Sack {
                    self.notes.push(format!(
                        "flow.{name}.variant: \"sack\" (RFC 6675 recovery) maps to ns-2's \
                         Agent/TCP/Sack1, whose recovery differs (see docs/ns2-profile.md)"
                    ));
                }
            }
            _ => {}
        }
    }

    fn write(mut self) -> Result<Generated, Ns2Error> {
        let scenario = self.scenario;
        let mut out = String::new();
        self.write_header(&mut out);
        self.write_nodes(&mut out);
        self.write_links(&mut out);
        self.write_flows(&mut out);
        let flowmons = self.write_monitors(&mut out);
        let (flow_times, state_times) = sample_times(scenario);
        self.write_sampling(&mut out, &flowmons, &flow_times, &state_times);
        let _ = writeln!(
            out,
            "$ns at {} \"finish\"\n$ns run",
            tcl::seconds(scenario.duration + Duration::from_micros(1))
        );
        collapse_instances(&mut self.unsupported);
        collapse_instances(&mut self.notes);
        let loss_rate_flow = self.loss_rate_flow();
        let layout = Layout {
            loss_rate_flow,
            scenario: scenario.name.clone(),
            parameters: scenario.variant.clone(),
            seed: scenario.seed,
            duration: scenario.duration,
            interval: scenario.output.interval,
            flow_times,
            state_times,
            flows: self.flows,
            directions: self
                .directions
                .iter()
                .map(|plan| LinkDirectionLayout {
                    from: self.topology.names()[plan.from].clone(),
                    to: self.topology.names()[plan.to].clone(),
                    capacity_bps: plan.capacity_bps,
                    trace_driven: plan.spec.trace().is_some(),
                })
                .collect(),
        };
        // Put the lists at the top of the script as comments, too.
        let mut header = String::new();
        for line in &self.unsupported {
            let _ = writeln!(header, "{}", tcl::comment(&format!("UNSUPPORTED {line}")));
        }
        for line in &self.notes {
            let _ = writeln!(header, "{}", tcl::comment(&format!("NOTE {line}")));
        }
        let tcl_text = match out.find("\nset ns ") {
            Some(position) => {
                let (head, tail) = out.split_at(position + 1);
                format!("{head}{header}{tail}")
            }
            None => out,
        };
        Ok(Generated {
            tcl: tcl_text,
            unsupported: self.unsupported,
            notes: self.notes,
            layout,
        })
    }

    fn write_header(&self, out: &mut String) {
        let scenario = self.scenario;
        let _ = writeln!(
            out,
            "{}",
            tcl::comment(&format!(
                "Generated by `tfrc ns2` from scenario {:?} ({}), seed {}, for ns-2.35.",
                scenario.name,
                scenario.file(),
                scenario.seed
            ))
        );
        let _ = writeln!(
            out,
            "# Prints cumulative counters (F: flows, S: protocol state, L: link directions, R: TCP retransmissions at the end); \
             see docs/ns2.md."
        );
        let _ = writeln!(out, "set ns [new Simulator]");
        let _ = writeln!(
            out,
            "ns-random {}   ;# default RNG (RED drops)",
            tcl::derived_seed(scenario.seed, 0)
        );
        let _ = writeln!(
            out,
            "Agent/TFRC set useHeaders_ false   ;# packet_size counts headers already"
        );
    }

    fn write_nodes(&self, out: &mut String) {
        let _ = writeln!(out, "\n# nodes");
        for (id, name) in self.topology.names().iter().enumerate() {
            let _ = writeln!(out, "set n({id}) [$ns node]   ;# {}", comment_text(name));
        }
        for access in &self.access_nodes {
            let _ = writeln!(
                out,
                "set n({}) [$ns node]   ;# access node of marked flows at {}",
                access.id,
                comment_text(&self.topology.names()[access.attached_to])
            );
        }
    }

    fn write_links(&mut self, out: &mut String) {
        let scenario = self.scenario;
        let names = self.topology.names().to_vec();
        let _ = writeln!(out, "\n# links: one simplex-link per direction");
        let mut notes = Vec::new();
        let mut unsupported = Vec::new();
        for (index, plan) in self.directions.iter().enumerate() {
            let (a, b) = (plan.from, plan.to);
            let queue_class = match (&plan.spec.queue, plan.markers.is_empty()) {
                (_, false) => "dsRED/edge",
                (QueueSpec::DropTail { .. }, true) => "DropTail",
                (QueueSpec::Red(_), true) => "RED",
                (QueueSpec::Rio(_), true) => "dsRED/core",
            };
            let _ = writeln!(
                out,
                "$ns simplex-link $n({a}) $n({b}) {} {} {queue_class}   ;# d{index} {} -> {} ({})",
                plan.capacity_bps,
                tcl::seconds(plan.spec.delay),
                comment_text(&names[a]),
                comment_text(&names[b]),
                plan.key
            );
            for (at, rate) in &plan.rate_changes {
                let _ = writeln!(
                    out,
                    "$ns at {} \"[[$ns link $n({a}) $n({b})] link] set bandwidth_ {rate}\"",
                    tcl::seconds(*at)
                );
            }
            let queue = format!("[[$ns link $n({a}) $n({b})] queue]");
            match (&plan.spec.queue, plan.markers.is_empty()) {
                (QueueSpec::DropTail { limit }, true) => {
                    let _ = writeln!(out, "$ns queue-limit $n({a}) $n({b}) {limit}");
                }
                (QueueSpec::Red(red), true) => {
                    let _ = writeln!(out, "$ns queue-limit $n({a}) $n({b}) {}", red.limit);
                    let _ = writeln!(out, "set q {queue}");
                    let _ = writeln!(
                        out,
                        "$q set thresh_ {}; $q set maxthresh_ {}; $q set linterm_ {}; \
                         $q set q_weight_ {}; $q set gentle_ {}",
                        tcl::number(red.min_th),
                        tcl::number(red.max_th),
                        tcl::number(1.0 / red.max_p),
                        tcl::number(red.weight),
                        if red.gentle { "true" } else { "false" }
                    );
                    // `setbit_`: mark ECT packets instead of dropping them early (RFC 3168).
                    let _ = writeln!(
                        out,
                        "$q set wait_ true; $q set setbit_ {}; $q set queue_in_bytes_ false; \
                         $q set bytes_ false; $q set adaptive_ 0; $q set cautious_ 0; \
                         $q set mean_pktsize_ 500",
                        if red.ecn { "true" } else { "false" }
                    );
                    let _ = writeln!(out, "set redq({index}) $q");
                }
                (QueueSpec::Rio(rio), true) => {
                    if (rio.weight - DSRED_WEIGHT).abs() > 1e-12 {
                        unsupported.push(format!(
                            "{}.queue.weight: dsRED fixes the RIO weight at 0.002; {} is not used",
                            plan.key, rio.weight
                        ));
                    }
                    let _ = writeln!(out, "$ns queue-limit $n({a}) $n({b}) {}", rio.limit);
                    write_dsred_common(out, &queue, "RIO-C", rio.ecn);
                    write_rio_thresholds(
                        out,
                        rio.min_in,
                        rio.max_in,
                        rio.p_in,
                        rio.min_out,
                        rio.max_out,
                        rio.p_out,
                    );
                }
                (queue_spec, false) => {
                    let (limit, mode, ecn) = match queue_spec {
                        QueueSpec::DropTail { limit } => (limit.saturating_sub(1), "DROP", false),
                        QueueSpec::Red(red) => (red.limit, "WRED", red.ecn),
                        QueueSpec::Rio(rio) => (rio.limit, "RIO-C", rio.ecn),
                    };
                    let _ = writeln!(out, "$ns queue-limit $n({a}) $n({b}) {limit}");
                    write_dsred_common(out, &queue, mode, ecn);
                    match queue_spec {
                        QueueSpec::DropTail { .. } => {
                            let _ = writeln!(
                                out,
                                "$q configQ 0 0 {limit} {limit} 1; $q configQ 0 1 {limit} {limit} 1"
                            );
                        }
                        QueueSpec::Red(red) => {
                            notes.push(format!(
                                "{}.queue: a marked RED direction maps to dsRED/edge in WRED mode \
                                 with the RED thresholds for both colours (weight 0.002, no gentle \
                                 mode, no wait_ spacing)",
                                plan.key
                            ));
                            write_rio_thresholds(
                                out, red.min_th, red.max_th, red.max_p, red.min_th, red.max_th,
                                red.max_p,
                            );
                        }
                        QueueSpec::Rio(rio) => {
                            if (rio.weight - DSRED_WEIGHT).abs() > 1e-12 {
                                unsupported.push(format!(
                                    "{}.queue.weight: dsRED fixes the RIO weight at 0.002; {} is not used",
                                    plan.key, rio.weight
                                ));
                            }
                            write_rio_thresholds(
                                out,
                                rio.min_in,
                                rio.max_in,
                                rio.p_in,
                                rio.min_out,
                                rio.max_out,
                                rio.p_out,
                            );
                        }
                    }
                    for &marker_index in &plan.markers {
                        let marker = &scenario.markers[marker_index];
                        for access in self
                            .access_nodes
                            .iter()
                            .filter(|access| access.markers.contains(&marker_index))
                        {
                            let _ = writeln!(
                                out,
                                "$q addPolicyEntry [$n({}) id] -1 TokenBucket {CODE_POINT_IN} {} {}   ;# marker[{marker_index}]",
                                access.id,
                                marker.rate.bits_per_second(),
                                marker.bucket
                            );
                        }
                    }
                    let _ = writeln!(
                        out,
                        "$q addPolicyEntry -1 -1 Null {CODE_POINT_UNMARKED}   ;# every other packet: unmarked"
                    );
                    let _ = writeln!(
                        out,
                        "$q addPolicerEntry TokenBucket {CODE_POINT_IN} {CODE_POINT_OUT}; \
                         $q addPolicerEntry Null {CODE_POINT_UNMARKED}"
                    );
                }
            }
            self.write_loss(out, index, plan, &mut unsupported);
        }
        for access in &self.access_nodes {
            let (a, b) = (access.id, access.attached_to);
            let _ = writeln!(
                out,
                "$ns duplex-link $n({a}) $n({b}) {ACCESS_LINK_RATE} 0 DropTail   ;# access link of marked flows"
            );
            let _ = writeln!(
                out,
                "$ns queue-limit $n({a}) $n({b}) {ACCESS_LINK_QUEUE}; $ns queue-limit $n({b}) $n({a}) {ACCESS_LINK_QUEUE}"
            );
        }
        if !self.access_nodes.is_empty() {
            notes.push(
                "marker: marked flows attach to an access node behind a 100 Gb/s, 0 ms link, \
                 because ns-2's dsRED policy table tells flows apart by source node only"
                    .to_owned(),
            );
        }
        self.notes.extend(notes);
        self.unsupported.extend(unsupported);
    }

    fn write_loss(
        &self,
        out: &mut String,
        index: usize,
        plan: &DirectionPlan<'_>,
        unsupported: &mut Vec<String>,
    ) {
        let Some(loss) = &plan.spec.loss else {
            return;
        };
        let key = format!("{}.loss", plan.key);
        let rate = match loss.model {
            LossModel::Bernoulli { rate } => rate,
            LossModel::Exponential { mean_gap } => {
                unsupported.push(format!(
                    "{key}: exponential time gaps (mean {} s) have no ns-2 error model; the ns-2 \
                     run has no loss on this direction",
                    tcl::seconds(mean_gap)
                ));
                return;
            }
            LossModel::GilbertElliott { .. } => {
                unsupported.push(format!(
                    "{key}: the per-packet Gilbert-Elliott chain has no faithful ns-2 error model \
                     (ErrorModel/TwoState draws sojourn times, not per-packet transitions); the \
                     ns-2 run has no loss on this direction"
                ));
                return;
            }
        };
        let (a, b) = (plan.from, plan.to);
        let seed = tcl::derived_seed(self.scenario.seed, 1 + index as u64);
        let initial = if loss.start.is_zero() { rate } else { 0.0 };
        let _ = writeln!(
            out,
            "set rng(l{index}) [new RNG]; $rng(l{index}) seed {seed}; $rng(l{index}) next-substream"
        );
        let _ = writeln!(
            out,
            "set rv(l{index}) [new RandomVariable/Uniform]; $rv(l{index}) use-rng $rng(l{index})"
        );
        let _ = writeln!(
            out,
            "set em({index}) [new ErrorModel]; $em({index}) unit pkt; $em({index}) set rate_ {}; \
             $em({index}) ranvar $rv(l{index}); $em({index}) drop-target [new Agent/Null]",
            tcl::number(initial)
        );
        let _ = writeln!(
            out,
            "$ns lossmodel $em({index}) $n({a}) $n({b})   ;# {key}: Bernoulli {}",
            tcl::number(rate)
        );
        if !loss.start.is_zero() {
            let _ = writeln!(
                out,
                "$ns at {} \"$em({index}) set rate_ {}\"",
                tcl::seconds(loss.start),
                tcl::number(rate)
            );
        }
        if let Some(stop) = loss.stop {
            let _ = writeln!(
                out,
                "$ns at {} \"$em({index}) set rate_ 0\"",
                tcl::seconds(stop)
            );
        }
    }

    fn write_flows(&mut self, out: &mut String) {
        let scenario = self.scenario;
        let _ = writeln!(out, "\n# flows (fid_ = index + 1)");
        for (index, flow) in scenario.flows.iter().enumerate() {
            let fid = index + 1;
            let source = self.attach[index];
            let destination = self.node(&flow.to);
            let size = flow.packet_size;
            let _ = writeln!(
                out,
                "{}",
                tcl::comment(&format!("flow {} ({})", flow.name, flow.kind_name()))
            );
            let (stop_target, start_target) = match &flow.kind {
                FlowKind::Tfrc(tfrc) => {
                    let feedbacks = self.flows[index].feedbacks_per_rtt.unwrap_or(1);
                    let _ = writeln!(
                        out,
                        "set src({index}) [new Agent/TFRC]; $src({index}) set packetSize_ {size}; \
                         $src({index}) set ca_ {}",
                        u8::from(tfrc.oscillation_damping)
                    );
                    let _ = write!(
                        out,
                        "set snk({index}) [new Agent/TFRCSink]; $snk({index}) set NumFeedback_ {feedbacks}; \
                         $snk({index}) set discount_ {}",
                        u8::from(tfrc.history_discounting)
                    );
                    if tfrc.ecn {
                        // `TfrcAgent::sendpkt()`: "if (ecn_) hf->ect() = 1"; the sink counts a CE
                        // mark as a loss (`TfrcSinkAgent::recv()`, `ECN_RCVD`).
                        let _ = write!(out, "; $src({index}) set ecn_ 1");
                    }
                    if let (TfrcVariant::Sp, Some(nominal), Some(header)) =
                        (tfrc.variant, tfrc.nominal_segment_size, tfrc.header_size)
                    {
                        // ns-2.35's TFRC-SP: `voip_` (the equation with `fsize_`, the rate times
                        // size_/(size_ + headersize_), at most `voip_max_pkt_rate_` = 100
                        // packets/s) and the sink's `ShortIntervals_ 1` (N/K for intervals of
                        // under `ShortRtts_` = 2 RTTs), as its own TFRC-SP tests
                        // (tcl/test/test-suite-friendly.tcl) run it. With `useHeaders_ false`
                        // size_ is the whole packet, so ns-2's s_true counts the 32-byte header.
                        let _ = write!(
                            out,
                            "; $src({index}) set voip_ 1; $src({index}) set fsize_ {nominal}; \
                             $src({index}) set headersize_ {header}; $snk({index}) set ShortIntervals_ 1"
                        );
                    }
                    if self.loss_rate_flow() == Some(index) {
                        // TfrcSinkAgent::est_loss_WALI prints "time: T loss_rate: P" each
                        // time it computes p (a feedback), once p > 0.
                        let _ = write!(out, "; $snk({index}) set printLoss_ 1");
                    }
                    let _ = writeln!(out);
                    (format!("$src({index})"), format!("$src({index})"))
                }
                FlowKind::Tcp(tcp) => {
                    let (agent, sink) = match (tcp.variant, tcp.delayed_ack) {
                        // `Agent/TCP` is Tahoe in ns-2; Reno is its own class.
                        (TcpVariant::Reno, false) => ("Agent/TCP/Reno", "Agent/TCPSink"),
                        (TcpVariant::Reno, true) => ("Agent/TCP/Reno", "Agent/TCPSink/DelAck"),
                        (TcpVariant::NewReno, false) => ("Agent/TCP/Newreno", "Agent/TCPSink"),
                        (TcpVariant::NewReno, true) => {
                            ("Agent/TCP/Newreno", "Agent/TCPSink/DelAck")
                        }
                        (TcpVariant::Sack, false) => ("Agent/TCP/Sack1", "Agent/TCPSink/Sack1"),
                        (TcpVariant::Sack, true) => {
                            ("Agent/TCP/Sack1", "Agent/TCPSink/Sack1/DelAck")
                        }
                    };
                    let window = tcp.window.unwrap_or(UNLIMITED_TCP_WINDOW);
                    let _ = writeln!(
                        out,
                        "set src({index}) [new {agent}]; $src({index}) set packetSize_ {}; \
                         $src({index}) set window_ {window}",
                        size - NS2_TCP_HEADER_BYTES
                    );
                    if tcp.profile == TcpProfile::Rfc {
                        // The RFC reading of the three ns-2.35 defaults `SenderConfig::ns2`
                        // follows: no SYN round trip, rounded halving, RFC 6298's 1 s initial
                        // RTO. `reset` re-runs `TcpAgent::reset()` (`rtt_init`,
                        // `set_initial_window`), which read them when the agent was created.
                        let _ = writeln!(
                            out,
                            "$src({index}) set syn_ false; $src({index}) set precisionReduce_ false; \
                             $src({index}) set rtxcur_init_ 1.0; $src({index}) reset"
                        );
                    }
                    let _ = write!(out, "set snk({index}) [new {sink}]");
                    if tcp.delayed_ack {
                        // The simulator's sink (tfrc-tcp) waits 100 ms, ns-2's default
                        // (`Agent/TCPSink/DelAck set interval_ 100ms`); written out so that
                        // both sides visibly run the same timer.
                        let _ = write!(out, "; $snk({index}) set interval_ 0.1");
                    }
                    let _ = writeln!(out);
                    let _ = writeln!(
                        out,
                        "set app({index}) [new Application/FTP]; $app({index}) attach-agent $src({index})"
                    );
                    (format!("$app({index})"), format!("$app({index})"))
                }
                FlowKind::Cbr { rate } => {
                    write_udp_agents(out, index, size);
                    let _ = writeln!(
                        out,
                        "set app({index}) [new Application/Traffic/CBR]; $app({index}) attach-agent $src({index}); \
                         $app({index}) set packetSize_ {size}; $app({index}) set rate_ {}; $app({index}) set random_ 0",
                        rate.bits_per_second()
                    );
                    (format!("$app({index})"), format!("$app({index})"))
                }
                FlowKind::Pareto(on_off) | FlowKind::ExponentialOnOff(on_off) => {
                    write_udp_agents(out, index, size);
                    let class = match on_off.shape {
                        Some(_) => "Application/Traffic/Pareto",
                        None => "Application/Traffic/Exponential",
                    };
                    let seed = tcl::derived_seed(scenario.seed, 1_000_000 + index as u64);
                    let _ = writeln!(
                        out,
                        "set app({index}) [new {class}]; $app({index}) attach-agent $src({index}); \
                         $app({index}) set packetSize_ {size}; $app({index}) set rate_ {}; \
                         $app({index}) set burst_time_ {}; $app({index}) set idle_time_ {}",
                        on_off.rate.bits_per_second(),
                        tcl::seconds(on_off.burst),
                        tcl::seconds(on_off.idle)
                    );
                    if let Some(shape) = on_off.shape {
                        let _ = writeln!(out, "$app({index}) set shape_ {}", tcl::number(shape));
                    }
                    let _ = writeln!(
                        out,
                        "set rng(f{index}) [new RNG]; $rng(f{index}) seed {seed}; $rng(f{index}) next-substream; \
                         $app({index}) use-rng $rng(f{index})"
                    );
                    (format!("$app({index})"), format!("$app({index})"))
                }
            };
            let _ = writeln!(
                out,
                "$src({index}) set fid_ {fid}; $ns attach-agent $n({source}) $src({index}); \
                 $ns attach-agent $n({destination}) $snk({index}); $ns connect $src({index}) $snk({index})"
            );
            let _ = writeln!(
                out,
                "$ns at {} \"{start_target} start\"",
                tcl::seconds(flow.start)
            );
            if let Some(stop) = flow.stop {
                if stop < scenario.duration {
                    let _ = writeln!(out, "$ns at {} \"{stop_target} stop\"", tcl::seconds(stop));
                }
            }
        }
    }

    /// Queue monitors on every scenario direction (a flow monitor where a UDP flow starts, to
    /// count what it sends) and flow monitors on the access links of marked UDP flows. Returns,
    /// for each UDP flow, the monitor key that counts its sent packets. Attached after the loss
    /// models, so arrivals include packets the loss model then drops.
    fn write_monitors(&self, out: &mut String) -> BTreeMap<usize, String> {
        let mut udp_monitor: BTreeMap<usize, String> = BTreeMap::new();
        let mut flowmon_keys: Vec<(String, usize, usize)> = Vec::new();
        for (index, flow) in self.flows.iter().enumerate() {
            if flow.sample != SampleKind::Udp {
                continue;
            }
            let source = self.attach[index];
            let key = if let Some(access) = self.access_nodes.iter().find(|a| a.id == source) {
                let key = format!("a{}", access.id);
                if !flowmon_keys.iter().any(|(k, _, _)| *k == key) {
                    flowmon_keys.push((key.clone(), access.id, access.attached_to));
                }
                key
            } else if let Some(&first) = flow.data_path.first() {
                let key = format!("d{first}");
                if !flowmon_keys.iter().any(|(k, _, _)| *k == key) {
                    let plan = &self.directions[first];
                    flowmon_keys.push((key.clone(), plan.from, plan.to));
                }
                key
            } else {
                continue;
            };
            udp_monitor.insert(index, key);
        }
        let _ = writeln!(out, "\n# monitors (after the loss models)");
        for (key, a, b) in &flowmon_keys {
            let _ = writeln!(
                out,
                "set fm({key}) [$ns makeflowmon Fid]; $ns attach-fmon [$ns link $n({a}) $n({b})] $fm({key})"
            );
        }
        for (index, plan) in self.directions.iter().enumerate() {
            let key = format!("d{index}");
            if flowmon_keys.iter().any(|(k, _, _)| *k == key) {
                let _ = writeln!(out, "set qm({index}) $fm({key})");
            } else {
                let _ = writeln!(
                    out,
                    "set qm({index}) [$ns monitor-queue $n({}) $n({}) \"\"]",
                    plan.from, plan.to
                );
            }
        }
        udp_monitor
    }

    fn write_sampling(
        &self,
        out: &mut String,
        udp_monitor: &BTreeMap<usize, String>,
        flow_times: &[Duration],
        state_times: &[Duration],
    ) {
        let list = |indices: Vec<usize>| {
            indices
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        };
        let of_kind = |kind: SampleKind| {
            self.flows
                .iter()
                .enumerate()
                .filter(|(_, flow)| flow.sample == kind)
                .map(|(index, _)| index)
                .collect::<Vec<_>>()
        };
        let times = |times: &[Duration]| {
            times
                .iter()
                .map(|time| tcl::seconds(*time))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let udp: Vec<String> = udp_monitor
            .iter()
            .map(|(index, key)| format!("{index} {key}"))
            .collect();
        // A file of their own: ns-2's C code prints to stdout through another buffer, and
        // the two would interleave within lines.
        let _ = writeln!(
            out,
            "\n# sampling: cumulative counters into {SAMPLES_FILE}\nset samples_out [open {SAMPLES_FILE} w]"
        );
        let _ = writeln!(
            out,
            "set tfrc_flows {{{}}}",
            list(of_kind(SampleKind::Tfrc))
        );
        let _ = writeln!(out, "set tcp_flows {{{}}}", list(of_kind(SampleKind::Tcp)));
        let _ = writeln!(out, "set udp_flows {{{}}}", udp.join(" "));
        let _ = writeln!(
            out,
            "set directions {{{}}}",
            list((0..self.directions.len()).collect())
        );
        let _ = writeln!(out, "set flow_times {{{}}}", times(flow_times));
        let _ = writeln!(out, "set state_times {{{}}}", times(state_times));
        out.push_str(SAMPLING_PROCEDURES);
        if !flow_times.is_empty() {
            let _ = writeln!(out, "$ns at [lindex $flow_times 0] \"sample_flows 0\"");
        }
        if !state_times.is_empty() {
            let _ = writeln!(out, "$ns at [lindex $state_times 0] \"sample_state 0\"");
        }
    }
}

/// Where the script writes its samples (in its working directory).
pub const SAMPLES_FILE: &str = "ns2-samples.txt";

/// The sampling procedures, the same for every script (they read the lists set above them).
const SAMPLING_PROCEDURES: &str = r#"proc udp_sent {key i} {
    global fm fmflow
    if {![info exists fmflow($key,$i)]} {
        foreach f [$fm($key) flows] { set fmflow($key,[expr {[$f set flowid_] - 1}]) $f }
        if {![info exists fmflow($key,$i)]} { return "0 0" }
    }
    set f $fmflow($key,$i)
    return "[$f set parrivals_] [$f set barrivals_]"
}
proc average_queue {d} {
    global redq
    if {[info exists redq($d)]} { return [$redq($d) set ave_] }
    return "-"
}
proc sample_flows {k} {
    global ns src snk qm tfrc_flows tcp_flows udp_flows directions flow_times samples_out
    foreach i $tfrc_flows {
        puts $samples_out "F $k $i [$src($i) set ndatapack_] [$src($i) set ndatabytes_] - [$snk($i) set bytes_]"
    }
    foreach i $tcp_flows {
        set p [$src($i) set ndatapack_]
        puts $samples_out "F $k $i $p [expr {[$src($i) set ndatabytes_] + 40 * $p}] - [$snk($i) set bytes_]"
    }
    foreach {i key} $udp_flows {
        puts $samples_out "F $k $i [udp_sent $key $i] [$snk($i) set npkts_] [$snk($i) set bytes_]"
    }
    foreach d $directions {
        set m $qm($d)
        puts $samples_out "L $k $d [$m set size_] [$m set pkts_] [$m set parrivals_] [$m set pdepartures_] [$m set bdepartures_] [$m set pdrops_] [average_queue $d]"
    }
    set next [expr {$k + 1}]
    if {$next < [llength $flow_times]} { $ns at [lindex $flow_times $next] "sample_flows $next" }
}
proc sample_state {k} {
    global ns src tfrc_flows tcp_flows state_times samples_out
    foreach i $tfrc_flows {
        puts $samples_out "S $k $i [$src($i) set rate_]"
    }
    foreach i $tcp_flows {
        set a $src($i)
        set tick [$a set tcpTick_]
        set rtt [$a set rtt_]
        set srtt [$a set srtt_]
        if {$srtt > 0} { set srtt_s [expr {$srtt / 8.0 * $tick}] } else { set srtt_s "-" }
        if {$rtt > 0} {
            set rtt_s [expr {$rtt * $tick}]
            # TcpAgent::rtt_timeout with rfc2988_: t_rtxcur_ clamped to minrto_, times the backoff
            set rtxcur [expr {((([$a set rttvar_] << 3) + $srtt) >> 3) * $tick}]
            set minrto [$a set minrto_]
            if {$rtxcur < $minrto} { set rtxcur $minrto }
            set rto [expr {$rtxcur * [$a set backoff_]}]
            set maxrto [$a set maxrto_]
            if {$rto > $maxrto} { set rto $maxrto }
        } else { set rtt_s "-"; set rto "-" }
        puts $samples_out "S $k $i [$a set cwnd_] [$a set ssthresh_] $rtt_s $srtt_s $rto"
    }
    set next [expr {$k + 1}]
    if {$next < [llength $state_times]} { $ns at [lindex $state_times $next] "sample_state $next" }
}
proc finish {} {
    global src tcp_flows samples_out
    # TcpAgent: nrexmit_ counts retransmission timeouts, nrexmitpack_ retransmitted packets.
    foreach i $tcp_flows { puts $samples_out "R $i [$src($i) set nrexmit_] [$src($i) set nrexmitpack_]" }
    close $samples_out
    flush stdout
    exit 0
}
"#;

/// The dsRED set-up every RIO/WRED/DROP direction shares; `ecn` sets dsRED's `ecn_` (mark ECT
/// packets instead of dropping them early, `dsREDQueue::enque`).
fn write_dsred_common(out: &mut String, queue: &str, mode: &str, ecn: bool) {
    let _ = writeln!(out, "set q {queue}");
    let _ = writeln!(
        out,
        "$q meanPktSize 500; $q set numQueues_ 1; $q setNumPrec 2; $q setMREDMode {mode}"
    );
    if ecn {
        let _ = writeln!(out, "$q set ecn_ 1");
    }
    let _ = writeln!(
        out,
        "$q addPHBEntry {CODE_POINT_IN} 0 0; $q addPHBEntry {CODE_POINT_OUT} 0 1; \
         $q addPHBEntry {CODE_POINT_UNMARKED} 0 1"
    );
}

fn write_rio_thresholds(
    out: &mut String,
    min_in: f64,
    max_in: f64,
    p_in: f64,
    min_out: f64,
    max_out: f64,
    p_out: f64,
) {
    let _ = writeln!(
        out,
        "$q configQ 0 0 {} {} {}; $q configQ 0 1 {} {} {}",
        tcl::number(min_in),
        tcl::number(max_in),
        tcl::number(p_in),
        tcl::number(min_out),
        tcl::number(max_out),
        tcl::number(p_out)
    );
}

fn write_udp_agents(out: &mut String, index: usize, size: u32) {
    let _ = writeln!(
        out,
        "set src({index}) [new Agent/UDP]; $src({index}) set packetSize_ {size}; \
         set snk({index}) [new Agent/LossMonitor]"
    );
}

/// A node name for a comment at the end of a Tcl line (names are letters, digits, `_`, `-`,
/// `.`, so nothing to escape; kept as a guard).
fn comment_text(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .collect()
}

/// Ends of the output intervals and the state sampling times: multiples of the interval up to
/// the duration, plus the duration itself when it is not a multiple (a shorter last interval).
fn sample_times(scenario: &Scenario) -> (Vec<Duration>, Vec<Duration>) {
    let multiples = |step: Duration| {
        let mut times = Vec::new();
        if step.is_zero() {
            return times;
        }
        let mut time = step;
        while time <= scenario.duration {
            times.push(time);
            time += step;
        }
        if times.last() != Some(&scenario.duration) {
            times.push(scenario.duration);
        }
        times
    };
    (
        multiples(scenario.output.interval),
        multiples(scenario.output.state_sampling_interval()),
    )
}

/// Width of the bins in which an ns-2 link follows a delivery trace: its rate changes at most
/// once per bin.
pub const TRACE_BIN: Duration = Duration::from_millis(100);

/// Most bins a trace-driven link may have in one run (a rate change is one `$ns at` line).
const MAX_TRACE_BINS: u64 = 1_000_000;

/// A Mahimahi delivery trace as ns-2 uses it: how many 1500-byte opportunities each
/// millisecond of one period has. As in Mahimahi and the simulator (`tfrc_sim::trace`), the
/// trace repeats with a period `P` equal to its last time: a line `t` is an opportunity at
/// `t`, `t + P`, `t + 2P`, … of the trace's time, so a last line `P` is one at `P`, `2P`, … but
/// not at 0.
struct TraceFile {
    /// Opportunities at each millisecond `0 .. P` of the second and later passes; a line `t`
    /// counts at `t mod P`.
    per_millisecond: Vec<u32>,
    /// Lines equal to `P`: counted at slot 0, but absent from the trace's time 0.
    at_period: u32,
}

/// The rate changes that make an ns-2 link follow a trace, and their mean over the run.
struct RateSchedule {
    changes: Vec<(Duration, u64)>,
    mean_bps: u64,
}

/// Bits one delivery opportunity carries.
const OPPORTUNITY_BITS: u64 = 1500 * 8;

impl TraceFile {
    fn read(path: &Path) -> Result<TraceFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read the trace {}: {error}", path.display()))?;
        let mut times = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let millisecond: u64 = line.parse().map_err(|_| {
                format!(
                    "{}:{}: expected a time in milliseconds, got {line:?}",
                    path.display(),
                    number + 1
                )
            })?;
            times.push(millisecond);
        }
        let period = times.iter().copied().max().unwrap_or(0);
        if period == 0 {
            return Err(format!(
                "the trace {} has no delivery opportunities after 0 ms, so no rate",
                path.display()
            ));
        }
        let length = usize::try_from(period)
            .ok()
            .filter(|&length| length <= 100_000_000)
            .ok_or_else(|| format!("the trace {} is longer than 100000 s", path.display()))?;
        let mut per_millisecond = vec![0u32; length];
        let mut at_period = 0u32;
        for time in times {
            let slot = (time % period) as usize;
            per_millisecond[slot] = per_millisecond[slot].saturating_add(1);
            if time == period {
                at_period = at_period.saturating_add(1);
            }
        }
        Ok(TraceFile {
            per_millisecond,
            at_period,
        })
    }

    /// Opportunities at millisecond `time` of the trace's own time.
    fn at(&self, time: u64) -> u64 {
        let period = self.per_millisecond.len() as u64;
        let slot = u64::from(self.per_millisecond[(time % period) as usize]);
        if time == 0 {
            slot - u64::from(self.at_period)
        } else {
            slot
        }
    }

    /// The link's rate per [`TRACE_BIN`] of a run of `duration` whose time 0 is the trace's
    /// time `offset`: the bin's opportunities over the bin. A run of bins without an
    /// opportunity shares the opportunities of the next bin that has some (an ns-2 link cannot
    /// stop), so every opportunity's bytes are delivered by the end of the bin it is in;
    /// trailing empty bins keep the last rate. Only changes are listed, the first at 0.
    fn rate_schedule(&self, offset: Duration, duration: Duration) -> Result<RateSchedule, String> {
        let bin_ms = TRACE_BIN.as_millis() as u64;
        let run_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let bins = run_ms.div_ceil(bin_ms);
        if bins > MAX_TRACE_BINS {
            return Err(format!(
                "a trace-driven link in ns-2 changes its rate every {bin_ms} ms; a run of {} s \
                 needs more than {MAX_TRACE_BINS} changes",
                duration.as_secs()
            ));
        }
        let period = self.per_millisecond.len() as u64;
        let offset_ms = u64::try_from(offset.as_millis()).unwrap_or(0) % period;
        let mut changes: Vec<(Duration, u64)> = Vec::new();
        let mut pending_from: Option<u64> = None;
        let mut total_bits: u64 = 0;
        for bin in 0..bins {
            let start = bin * bin_ms;
            let end = (start + bin_ms).min(run_ms);
            let opportunities: u64 = (start..end).map(|t| self.at(offset_ms + t)).sum();
            let from = pending_from.unwrap_or(bin);
            if opportunities == 0 {
                pending_from = Some(from);
                continue;
            }
            pending_from = None;
            total_bits += opportunities * OPPORTUNITY_BITS;
            let span_ms = end - from * bin_ms;
            let rate = (opportunities * OPPORTUNITY_BITS * 1000 / span_ms).max(1);
            if changes.last().map(|&(_, last)| last) != Some(rate) {
                changes.push((Duration::from_millis(from * bin_ms), rate));
            }
        }
        if changes.is_empty() {
            return Err(format!(
                "the trace offers no delivery opportunity in the run's {} s",
                duration.as_secs_f64()
            ));
        }
        let mean_bps = (total_bits * 1000 / run_ms.max(1)).max(1);
        Ok(RateSchedule { changes, mean_bps })
    }
}

/// Merges lines that differ only by the instance number of a `count` flow
/// (`flow.veno.1.veno_beta: …`, `flow.veno.2.veno_beta: …`) into one line naming the range.
fn collapse_instances(lines: &mut Vec<String>) {
    let mut collapsed: Vec<(String, Vec<String>)> = Vec::new();
    for line in lines.drain(..) {
        let pattern = instance_pattern(&line);
        match (&pattern, collapsed.last_mut()) {
            (Some((template, instance)), Some((last_template, instances)))
                if last_template == template =>
            {
                instances.push(instance.clone());
            }
            (Some((template, instance)), _) => {
                collapsed.push((template.clone(), vec![instance.clone()]));
            }
            (None, _) => collapsed.push((line, Vec::new())),
        }
    }
    for (template, instances) in collapsed {
        let line = match instances.len() {
            0 => template,
            1 => template
                .replacen('\u{0}', &instances[0], 1)
                .replacen('\u{1}', "", 1),
            n => template
                .replacen(
                    '\u{0}',
                    &format!("{{{}…{}}}", instances[0], instances[n - 1]),
                    1,
                )
                .replacen('\u{1}', &format!(" ({n} flows)"), 1),
        };
        lines.push(line);
    }
}

/// For `flow.<base>.<number>.<rest>`, the line with the number replaced by a placeholder, and
/// the number.
fn instance_pattern(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("flow.")?;
    let key_end = rest.find(':')?;
    let key = &rest[..key_end];
    let segments: Vec<&str> = key.split('.').collect();
    // base … number . key: the number is the second-to-last segment.
    if segments.len() < 3 {
        return None;
    }
    let number = segments[segments.len() - 2];
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let base = segments[..segments.len() - 2].join(".");
    let last = segments[segments.len() - 1];
    let message = rest[key_end..].replace(&format!("{base}.{number}"), &format!("{base}.*"));
    Some((
        format!("flow.{base}.\u{0}.{last}\u{1}{message}"),
        number.to_owned(),
    ))
}
