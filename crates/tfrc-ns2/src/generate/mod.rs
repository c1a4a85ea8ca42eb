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
//!
//! Generation plans first ([`plan`]: link directions, marker access nodes, flow paths), then
//! writes the Tcl in script order: header and nodes (here), links, queues and loss models
//! ([`links`]), agents ([`flows`]), monitors and the sampling procedures ([`sampling`]). A
//! delivery trace becomes a schedule of rate changes ([`trace`]).

use core::fmt::Write as _;
use core::time::Duration;

use tfrc_scenario::Scenario;

use crate::error::Ns2Error;
use crate::nodes::NodeIds;
use crate::tcl;

mod flows;
mod links;
mod plan;
mod sampling;
mod trace;

use plan::{AccessNode, DirectionPlan};
use sampling::sample_times;
pub use sampling::SAMPLES_FILE;

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

/// The shape of a generated run: flows, link directions and sampling times, in output order
/// (the layout both converters share), each flow with what the script samples of it.
pub type Layout = tfrc_output::external::RunLayout<FlowSampling>;
/// One flow of a generated run.
pub type FlowLayout = tfrc_output::external::FlowLayout<FlowSampling>;
pub use tfrc_output::external::DirectionLayout;

/// What the generated script samples of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowSampling {
    /// Which counters the script prints for it.
    pub sample: SampleKind,
    /// `NumFeedback_` of a TFRC sink.
    pub feedbacks_per_rtt: Option<u32>,
}

/// The TFRC flow whose sink prints its loss event rate (`printLoss_ 1`): the first TFRC flow.
/// ns-2.35 binds neither the sender's nor the sink's p, and the sink prints it
/// (`time: T loss_rate: P`) without naming its flow, so only one sink may print.
pub fn loss_rate_flow(flows: &[FlowLayout]) -> Option<usize> {
    flows
        .iter()
        .position(|flow| flow.extra.sample == SampleKind::Tfrc)
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
    nodes: NodeIds,
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
        let nodes = NodeIds::new(scenario);
        let mut generator = Generator {
            scenario,
            nodes,
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

    fn node(&self, name: &str) -> usize {
        // Validation guarantees every endpoint is a node of some link.
        self.nodes.id(name).unwrap_or(0)
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
        let layout = Layout {
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
                .map(|plan| DirectionLayout {
                    from: self.nodes.names()[plan.from].clone(),
                    to: self.nodes.names()[plan.to].clone(),
                    capacity_bps: plan.capacity_bps,
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
        for (id, name) in self.nodes.names().iter().enumerate() {
            let _ = writeln!(out, "set n({id}) [$ns node]   ;# {}", comment_text(name));
        }
        for access in &self.access_nodes {
            let _ = writeln!(
                out,
                "set n({}) [$ns node]   ;# access node of marked flows at {}",
                access.id,
                comment_text(&self.nodes.names()[access.attached_to])
            );
        }
    }
}

/// A node name for a comment at the end of a Tcl line (names are letters, digits, `_`, `-`,
/// `.`, so nothing to escape; kept as a guard).
fn comment_text(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .collect()
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
