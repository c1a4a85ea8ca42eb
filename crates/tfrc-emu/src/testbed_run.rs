//! Scenario files in the testbed: the simulator's topology built from namespaces, and
//! `tfrc testbed run SCENARIO`, which runs the flows for real and writes the simulator's output
//! files (docs/output-format.md).
//!
//! - Hosts (namespaces) are the nodes that send or receive a flow, and the leaf nodes; the
//!   other nodes are routers inside the emulator. Every link direction is emulated with its
//!   queue, loss model and markers; packets follow a shortest path.
//! - Flow `i` (in file order, after `count` expansion) uses port `5201 + i`; markers select the
//!   ports of their flows.
//! - Sizes: the scenario's `packet_size` counts headers, so TFRC, CBR and on/off flows send UDP
//!   payloads of `packet_size − 28` bytes (an IP packet of `packet_size`; for TFRC that is the
//!   32-byte TFRC header and s = `packet_size − 60` bytes of payload, RFC 5348 §3.1), and TCP
//!   flows use an MSS of `packet_size − 40`.
//! - TFRC options follow the simulator's mapping (`tfrc_sim::simulation::tfrc_config`), the
//!   profile included; the receiver learns the options it acts on (profile, feedbacks per RTT,
//!   Veno, history discounting) from the flow options every data packet carries.
//! - `flows.csv` counts are taken by the emulator on its clock (time zero = when the emulator
//!   started, just before the flows): bytes are IP packet sizes; `sent` counts data packets
//!   entering the first link, `recv` those delivered to the destination host. `goodput` is
//!   what the receiving application got, counted by it and sampled by the emulator with the
//!   rest: the payload of accepted TFRC packets, the bytes a TCP sink read, the UDP payloads a
//!   CBR or on/off sink received.
//! - TCP flows are the kernel's (their `profile` does not apply): `variant = "cubic"` and
//!   `"bbr"` run the kernel's `cubic` and `bbr` modules; reno/newreno/sack all run the kernel's
//!   `reno` congestion control (with SACK as the kernel negotiates it), or `--tcp-congestion`.

use core::time::Duration;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use socket2::{Domain, SockAddr, SockRef, Socket, Type};
use tfrc_output::{
    coefficient_of_variation, BottleneckSummary, FlowIdentity, FlowSummary, FlowTotals,
    LinkSummary, RowFile, RunWriter, StateRow, Summary,
};
use tfrc_proto::Instant;
use tfrc_scenario::{FlowKind, FlowSpec, Scenario, TcpVariant};
use tfrc_sim::{
    CbrParams, CbrSource, FlowId, OnOffDistribution, OnOffParams, OnOffSource, TrafficSource,
};
use tfrc_udp::sender::SenderInterval;
use tfrc_udp::tcp_info::TcpInfo;

use crate::element_syntax::{DirectionSpec, MarkerSpec};
use crate::error::{chain, failed, invalid, Error, IoContext, Result};
use crate::testbed::{
    in_namespace, FlowLog, Testbed, TestbedConfig, Topology, TopologyLink, TrackedFlow,
};

/// First port given to a flow.
pub const FIRST_PORT: u16 = 5201;
/// IPv4 + UDP header bytes.
const UDP_OVERHEAD: u32 = 28;

/// The testbed form of a scenario.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Hosts and link directions.
    pub topology: Topology,
    /// The flows (counts expanded), in file order.
    pub flows: Vec<FlowSpec>,
    /// Each flow's port.
    pub ports: Vec<u16>,
    /// What each flow runs at its ends.
    pub endpoints: Vec<Endpoint>,
}

/// The simulator's queue for a scenario queue (the one conversion the simulator uses too).
pub use tfrc_sim::simulation::queue_config;

/// What a flow runs at its ends on the testbed, decided when the plan is made (so a bad
/// option is refused before any namespace exists).
#[derive(Debug, Clone, PartialEq)]
pub enum Endpoint {
    /// A TFRC flow: the sender's configuration, from the simulator's own mapping
    /// ([`tfrc_sim::simulation::tfrc_config`]) for TFRC packets of `packet_size − 28` bytes (an
    /// IP packet of `packet_size`). The receiver learns every option it acts on from the flow
    /// options each data packet carries (`tfrc_udp::control::FlowOptions`).
    Tfrc(tfrc_proto::Config),
    /// A kernel TCP flow whose sender uses this MSS (`packet_size − 40`, within 88..=1460).
    Tcp {
        /// Maximum segment size, bytes.
        mss: u32,
        /// The kernel congestion-control module the variant names (`cubic`, `bbr`); `None`
        /// for reno/newreno/sack, which run `--tcp-congestion`.
        congestion: Option<&'static str>,
    },
    /// A UDP source (CBR, Pareto or exponential on/off) and a sink that counts its payloads.
    Udp,
}

impl Endpoint {
    /// The endpoint of one flow of a scenario.
    pub fn new(flow: &FlowSpec) -> Result<Endpoint> {
        Ok(match &flow.kind {
            FlowKind::Tfrc(tfrc) if tfrc.media.is_some() => invalid!(
                "flow {}: media sources (key `media`) run in the simulator only; the testbed's \
                 TFRC senders send bulk data or data capped by max_rate",
                flow.name
            ),
            FlowKind::Tfrc(tfrc) => Endpoint::Tfrc(tfrc_sim::simulation::tfrc_config(
                tfrc,
                flow.packet_size.saturating_sub(UDP_OVERHEAD),
                &format!("flow {}", flow.name),
            )?),
            FlowKind::Tcp(tcp) if tcp.downloads.is_some() => invalid!(
                "flow {}: short TCP transfers (key `downloads`) run in the simulator only; the \
                 testbed's TCP flows are bulk transfers",
                flow.name
            ),
            FlowKind::Tcp(tcp) => Endpoint::Tcp {
                mss: flow.packet_size.saturating_sub(40).clamp(88, 1460),
                congestion: match tcp.variant {
                    TcpVariant::Cubic => Some("cubic"),
                    TcpVariant::Bbr => Some("bbr"),
                    TcpVariant::Reno | TcpVariant::NewReno | TcpVariant::Sack => None,
                },
            },
            FlowKind::Cbr { .. } | FlowKind::Pareto(_) | FlowKind::ExponentialOnOff(_) => {
                Endpoint::Udp
            }
        })
    }
}

impl Plan {
    /// Builds the plan of a scenario whose counts are expanded.
    pub fn new(scenario: &Scenario) -> Result<Plan> {
        let flows = scenario.flows.clone();
        if flows.len() > usize::from(u16::MAX - FIRST_PORT) {
            invalid!("too many flows for one testbed: {}", flows.len());
        }
        let endpoints = flows.iter().map(Endpoint::new).collect::<Result<_>>()?;
        let ports: Vec<u16> = (0..flows.len()).map(|i| FIRST_PORT + i as u16).collect();
        let port_of: HashMap<&str, u16> = flows
            .iter()
            .zip(&ports)
            .map(|(flow, port)| (flow.name.as_str(), *port))
            .collect();
        let hosts = plan_hosts(scenario, &flows);
        let mut topology = Topology {
            attachment: hosts.clone(),
            hosts,
            links: Vec::new(),
        };
        for link in &scenario.links {
            let [first, second] = &link.between;
            for (from, to, spec) in [
                (first, second, &link.forward),
                (second, first, &link.reverse),
            ] {
                topology.links.push(TopologyLink {
                    from: from.clone(),
                    to: to.clone(),
                    spec: direction_spec(scenario, (from, to), spec, &port_of)?,
                });
            }
        }
        topology.validate()?;
        Ok(Plan {
            topology,
            flows,
            ports,
            endpoints,
        })
    }

    /// `(flow name, port)` pairs.
    pub fn flow_ports(&self) -> Vec<(String, u16)> {
        self.flows
            .iter()
            .zip(&self.ports)
            .map(|(flow, port)| (flow.name.clone(), *port))
            .collect()
    }

    fn host_index(&self, name: &str) -> Result<usize> {
        self.topology
            .hosts
            .iter()
            .position(|host| host == name)
            .ok_or_else(|| Error::Invalid(format!("node {name} has no namespace")))
    }
}

/// The testbed's hosts (namespaces): the nodes that send or receive a flow, and the leaf nodes;
/// the other nodes are routers inside the emulator.
fn plan_hosts(scenario: &Scenario, flows: &[FlowSpec]) -> Vec<String> {
    let nodes: Vec<String> = scenario.nodes().iter().map(|n| n.to_string()).collect();
    let degree = |node: &str| {
        scenario
            .links
            .iter()
            .filter(|link| link.between.iter().any(|end| end == node))
            .count()
    };
    nodes
        .iter()
        .filter(|node| {
            degree(node) == 1
                || flows
                    .iter()
                    .any(|flow| flow.from == **node || flow.to == **node)
        })
        .cloned()
        .collect()
}

/// The emulated direction `from → to` of a scenario link, with the scenario's markers on it
/// selecting their flows by port (`port_of`: each flow's port, by name).
fn direction_spec(
    scenario: &Scenario,
    (from, to): (&String, &String),
    spec: &tfrc_scenario::LinkDirectionSpec,
    port_of: &HashMap<&str, u16>,
) -> Result<DirectionSpec> {
    let mut direction = DirectionSpec::from_scenario(spec);
    for marker in &scenario.markers {
        if marker.link[0] == *from && marker.link[1] == *to {
            let mut marked: Vec<FlowId> = marker
                .flows
                .iter()
                .map(|name| {
                    port_of
                        .get(name.as_str())
                        .map(|p| FlowId::from(*p))
                        .ok_or_else(|| {
                            Error::Invalid(format!("marker on {from}->{to}: no flow named {name}"))
                        })
                })
                .collect::<Result<_>>()?;
            marked.sort_unstable();
            direction.markers.push(MarkerSpec {
                rate_bits_per_second: marker.rate.bits_per_second(),
                bucket_bytes: marker.bucket,
                flows: Some(marked),
            });
        }
    }
    Ok(direction)
}

/// What `tfrc testbed run` is asked to do.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The scenario file (the simulator's format).
    pub scenario: PathBuf,
    /// Output directory (flows.csv, state.csv, links.csv, summary.json, scenario.toml).
    pub out: PathBuf,
    /// Overridden keys, as `tfrc sim --set` (e.g. `duration=30s`).
    pub set: Vec<String>,
    /// With a `[sweep]`: run the variant whose name contains this text (e.g. `profile=rfc5348`).
    pub variant: Option<String>,
    /// Kernel congestion control of the TCP flows.
    pub tcp_congestion: String,
    /// Run the emulator thread as SCHED_FIFO 10.
    pub realtime: bool,
}

/// Runs `tfrc testbed run`: plan the chosen variant (`plan_run`), bring the testbed up and start
/// the workers of its flows (`launch`), then write the outputs once the duration is over
/// (`collect`).
pub fn run(args: &RunOptions) -> Result<()> {
    let (scenario, plan) = plan_run(args)?;
    let running = launch(args, &scenario, &plan)?;
    collect(args, &scenario, &plan, running)
}

// ---------------------------------------------------------------------------------------------
// Plan: the scenario, with `--set` applied, its chosen variant and the testbed plan (ports,
// topology, each flow's `Endpoint`). Nothing is started yet; a bad option is refused here.

/// Loads the scenario, applies `--set`, picks the variant, creates the output directory and
/// makes the plan.
fn plan_run(args: &RunOptions) -> Result<(Scenario, Plan)> {
    let mut scenario = Scenario::from_path(&args.scenario)?;
    scenario.apply_sets(&args.set)?;
    let scenario = choose_variant(args, &scenario)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let plan = Plan::new(&scenario)?;
    Ok((scenario, plan))
}

/// The one variant of `scenario` that `--variant` selects (the scenario itself without a
/// `[sweep]`).
fn choose_variant(args: &RunOptions, scenario: &Scenario) -> Result<Scenario> {
    let mut variants = scenario.expand()?;
    if let Some(wanted) = &args.variant {
        variants.retain(|variant| variant.name.contains(wanted.as_str()));
    }
    if variants.len() != 1 {
        invalid!(
            "{} gives {} variants{}; choose one with --variant TEXT (names: {})",
            args.scenario.display(),
            variants.len(),
            args.variant
                .as_ref()
                .map(|wanted| format!(" matching {wanted:?}"))
                .unwrap_or_default(),
            scenario
                .expand()?
                .iter()
                .map(|variant| variant.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(variants.remove(0))
}

// ---------------------------------------------------------------------------------------------
// Launch: the testbed up, then each flow's receiver and sender, each on a thread inside its
// host's namespace (one function per `Endpoint` kind).

/// A worker thread of a flow.
type Worker = JoinHandle<Result<()>>;

/// `state.csv` rows (the output schema's), with the index of their flow for sorting.
type States = Arc<Mutex<Vec<(usize, StateRow)>>>;
/// The kernel's `tcp_info` of each flow's TCP sender at its end, by flow index (`None`: not a
/// TCP flow, or it could not be read).
type TcpCounts = Arc<Mutex<Vec<Option<TcpInfo>>>>;

/// A testbed serving the flows of a plan, and the workers running them.
struct Running {
    testbed: Testbed,
    /// The emulator's time zero.
    origin: std::time::Instant,
    /// Set by SIGINT or SIGTERM: end the run early.
    interrupted: Arc<AtomicBool>,
    /// Set when the run ends: the workers return.
    stop: Arc<AtomicBool>,
    workers: Vec<Worker>,
    states: States,
    tcp_counts: TcpCounts,
}

/// Brings the testbed up and starts the workers of every flow.
fn launch(args: &RunOptions, scenario: &Scenario, plan: &Plan) -> Result<Running> {
    let duration = scenario.duration;
    let state_interval = scenario.output.state_sampling_interval();
    // Goodput: what each receiving application got, counted by it (TFRC payload of accepted
    // packets, bytes a TCP sink read, UDP payloads a sink received).
    let delivered: Vec<Arc<AtomicU64>> = plan.flows.iter().map(|_| Arc::default()).collect();
    let config = testbed_config(args, scenario, plan, &delivered)?;
    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, interrupted.clone())?;
    }
    let testbed = Testbed::up(config)?;
    let origin = testbed
        .origin()
        .ok_or_else(|| Error::Failed("the emulator did not start".into()))?;
    eprintln!(
        "testbed {}: {} hosts, {} flows, {} s",
        testbed.prefix(),
        plan.topology.hosts.len(),
        plan.flows.len(),
        duration.as_secs_f64()
    );
    let mut running = Running {
        testbed,
        origin,
        interrupted,
        stop: Arc::new(AtomicBool::new(false)),
        workers: Vec::new(),
        states: Arc::default(),
        tcp_counts: Arc::new(Mutex::new(vec![None; plan.flows.len()])),
    };
    for (index, (flow, port)) in plan.flows.iter().zip(&plan.ports).enumerate() {
        let to = running.testbed.host(&flow.to)?;
        let from = running.testbed.host(&flow.from)?;
        let ends = FlowEnds {
            index,
            from: from.namespace.clone(),
            to: to.namespace.clone(),
            address: SocketAddr::from((to.address, *port)),
            start: origin + flow.start,
            stop_at: origin + flow.stop_time(duration).min(duration),
            delivered: delivered[index].clone(),
            stop: running.stop.clone(),
        };
        let workers = match plan.endpoints[index].clone() {
            Endpoint::Tfrc(config) => {
                launch_tfrc(flow, &ends, config, origin, state_interval, &running.states)?
            }
            Endpoint::Tcp { mss, congestion } => launch_tcp(
                &ends,
                mss,
                congestion.unwrap_or(args.tcp_congestion.as_str()),
                &running.tcp_counts,
            )?,
            Endpoint::Udp => launch_udp(flow, &ends, scenario.seed)?,
        };
        running.workers.extend(workers);
    }
    Ok(running)
}

/// The testbed of a plan: its topology, `links.csv`, and the flows the emulator counts for
/// `flows.csv` (with the goodput counter each receiver adds to).
fn testbed_config(
    args: &RunOptions,
    scenario: &Scenario,
    plan: &Plan,
    delivered: &[Arc<AtomicU64>],
) -> Result<TestbedConfig> {
    let interval = scenario.output.interval;
    let mut config = TestbedConfig::new(plan.topology.clone());
    config.seed = scenario.seed;
    config.links_csv = Some((args.out.join("links.csv"), interval));
    config.realtime_priority = args.realtime.then_some(10);
    config.flow_interval = interval;
    config.tracked_flows = plan
        .flows
        .iter()
        .zip(&plan.ports)
        .zip(delivered)
        .map(|((flow, port), delivered)| {
            Ok(TrackedFlow {
                flow: FlowId::from(*port),
                from: plan.host_index(&flow.from)?,
                to: plan.host_index(&flow.to)?,
                delivered_payload: Some(delivered.clone()),
            })
        })
        .collect::<Result<_>>()?;
    Ok(config)
}

/// What the workers of one flow share.
#[derive(Debug, Clone)]
struct FlowEnds {
    /// The flow's index in the plan.
    index: usize,
    /// Namespace of the sending host.
    from: String,
    /// Namespace of the receiving host.
    to: String,
    /// The receiver's address: the receiving host, the flow's port.
    address: SocketAddr,
    /// When the sender starts.
    start: std::time::Instant,
    /// When the sender stops.
    stop_at: std::time::Instant,
    /// Payload bytes the receiving application got (goodput).
    delivered: Arc<AtomicU64>,
    /// Set when the run ends.
    stop: Arc<AtomicBool>,
}

/// A TFRC flow: a `tfrc_udp` receiver, and a sender with `config` whose interval reports
/// become the flow's `state.csv` rows.
fn launch_tfrc(
    flow: &FlowSpec,
    ends: &FlowEnds,
    config: tfrc_proto::Config,
    origin: std::time::Instant,
    state_interval: Duration,
    states: &States,
) -> Result<[Worker; 2]> {
    let receiver = {
        let worker = ends.clone();
        in_namespace(&ends.to, move || run_tfrc_receiver(worker))?
    };
    // What the scenario's TFRC keys ask of the sender beside its core configuration, as the
    // simulator does: ECT(0) on the data packets of a flow with `ecn = true` (the emulator's
    // RED/RIO with `ecn = true` marks them) and the application's `max_rate` cap.
    let (ecn, max_rate) = match &flow.kind {
        FlowKind::Tfrc(tfrc) => (tfrc.ecn, tfrc.max_rate.map(|rate| rate.bytes_per_second())),
        _ => (false, None),
    };
    let sender = {
        let worker = ends.clone();
        let states = states.clone();
        let (flow_name, flow_kind) = (flow.name.clone(), flow.output_kind());
        in_namespace(&ends.from, move || -> Result<()> {
            sleep_until(worker.start, &worker.stop);
            run_tfrc_sender(
                &worker,
                (config, ecn, max_rate),
                (&flow_name, flow_kind),
                origin,
                state_interval,
                &states,
            )
        })?
    };
    Ok([receiver, sender])
}

/// A kernel TCP flow: a sink that reads and counts what arrives, and a sender that writes as
/// fast as the connection takes (congestion control `congestion`, MSS `mss`) until it stops.
fn launch_tcp(
    ends: &FlowEnds,
    mss: u32,
    congestion: &str,
    counts: &TcpCounts,
) -> Result<[Worker; 2]> {
    let sink = {
        let worker = ends.clone();
        in_namespace(&ends.to, move || run_tcp_sink(&worker))?
    };
    let sender = {
        let worker = ends.clone();
        let congestion = congestion.to_string();
        let counts = counts.clone();
        in_namespace(&ends.from, move || -> Result<()> {
            sleep_until(worker.start, &worker.stop);
            let sender_counts = run_tcp_source(&worker, &congestion, mss)?;
            if let Some(slot) = counts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_mut(worker.index)
            {
                *slot = sender_counts;
            }
            Ok(())
        })?
    };
    Ok([sink, sender])
}

/// A UDP flow: a sink counting the payloads it receives, and the simulator's CBR or on/off
/// source.
fn launch_udp(flow: &FlowSpec, ends: &FlowEnds, seed: u64) -> Result<[Worker; 2]> {
    let sink = {
        let worker = ends.clone();
        in_namespace(&ends.to, move || run_udp_sink(&worker))?
    };
    let source = udp_source(flow, seed, ends.index, ends.stop_at - ends.start)?;
    let sender = {
        let worker = ends.clone();
        in_namespace(&ends.from, move || -> Result<()> {
            sleep_until(worker.start, &worker.stop);
            run_udp_source(source, worker.address, worker.start, &worker.stop)
        })?
    };
    Ok([sink, sender])
}

// ---------------------------------------------------------------------------------------------
// Collect: wait for the duration, stop the workers, shut the testbed down, write the outputs.

/// Waits for the scenario's duration (or a signal), stops and joins the workers, shuts the
/// testbed down and writes the output files; worker errors are printed as warnings.
fn collect(args: &RunOptions, scenario: &Scenario, plan: &Plan, running: Running) -> Result<()> {
    let Running {
        testbed,
        origin,
        interrupted,
        stop,
        workers,
        states,
        tcp_counts,
    } = running;
    // Run for the scenario's duration (plus a little for the last packets in flight).
    let end = origin + scenario.duration;
    while std::time::Instant::now() < end && !interrupted.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let flow_log = testbed.flow_log();
    stop.store(true, Ordering::Relaxed);
    let errors = join_workers(workers);
    let report = testbed.shutdown()?;
    let states = std::mem::take(&mut *states.lock().unwrap_or_else(|p| p.into_inner()));
    let tcp_counts = std::mem::take(&mut *tcp_counts.lock().unwrap_or_else(|p| p.into_inner()));
    write_outputs(
        args,
        scenario,
        plan,
        &flow_log,
        &states,
        &tcp_counts,
        &report,
    )?;
    for error in &errors {
        eprintln!("warning: {error}");
    }
    eprintln!("wrote {}", args.out.display());
    Ok(())
}

/// Joins the workers; returns their errors.
fn join_workers(workers: Vec<Worker>) -> Vec<String> {
    let mut errors = Vec::new();
    for worker in workers {
        match worker.join() {
            Ok(Ok(())) => {}
            Ok(Err(error)) => errors.push(chain(&error)),
            Err(_) => errors.push("a flow thread panicked".into()),
        }
    }
    errors
}

// ---------------------------------------------------------------------------------------------
// The workers.

fn sleep_until(at: std::time::Instant, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let now = std::time::Instant::now();
        if now >= at {
            return;
        }
        std::thread::sleep((at - now).min(Duration::from_millis(20)));
    }
}

/// Receives the flow until the run ends; the receiver counts the payload it accepts as
/// goodput and learns its options from the flow options each data packet carries.
fn run_tfrc_receiver(ends: FlowEnds) -> Result<()> {
    let receiver = tfrc_udp::UdpReceiver::bind(tfrc_udp::ReceiverOptions {
        report_interval: None,
        delivered_payload: Some(ends.delivered),
        ..tfrc_udp::ReceiverOptions::new(ends.address)
    })?;
    receiver.run(&ends.stop, &mut |_| {})?;
    Ok(())
}

/// Sends the flow with `config` (ECN-capable with `ecn`, its application capped at `max_rate`
/// bytes/s if given) until its stop time. Each interval report (every `state_interval`)
/// becomes a `state.csv` row of `flow` (name, kind), at the emulator's time (since `origin`)
/// rounded to the interval.
fn run_tfrc_sender(
    ends: &FlowEnds,
    (config, ecn, max_rate): (tfrc_proto::Config, bool, Option<f64>),
    flow: (&str, tfrc_output::FlowKind),
    origin: std::time::Instant,
    state_interval: Duration,
    states: &States,
) -> Result<()> {
    let mut options = tfrc_udp::SenderOptions::new(ends.address);
    options.duration = ends.stop_at.saturating_duration_since(ends.start);
    options.report_interval = Some(state_interval);
    options.config = config.clone();
    options.ecn = ecn;
    options.max_rate = max_rate;
    let sender = tfrc_udp::UdpSender::new(options)?;
    let step = state_interval.as_secs_f64();
    sender.run(&ends.stop, &mut |report| {
        let time_s = (origin.elapsed().as_secs_f64() / step).round() * step;
        let row = tfrc_state_row(report, &config, time_s, flow);
        let mut rows = states.lock().unwrap_or_else(|p| p.into_inner());
        rows.push((ends.index, row));
    })?;
    Ok(())
}

/// The `state.csv` row of a TFRC sender's interval report.
fn tfrc_state_row(
    report: &SenderInterval,
    config: &tfrc_proto::Config,
    time_s: f64,
    (flow_name, flow_kind): (&str, tfrc_output::FlowKind),
) -> StateRow {
    let rtt = report.rtt_s;
    // The receiver's own rule, at the sender's RTT.
    let feedbacks =
        config.feedbacks_per_rtt_at(rtt.and_then(|rtt| Duration::try_from_secs_f64(rtt).ok()));
    StateRow {
        x_bps: Some(report.sending_rate_bps),
        x_recv_bps: Some(report.x_recv_bps),
        p: Some(report.p),
        rtt_s: rtt,
        target_bps: config.target_rate.map(|bytes| bytes * 8.0),
        feedbacks_per_rtt: Some(f64::from(feedbacks)),
        ..StateRow::empty(time_s, flow_name, flow_kind)
    }
}

/// Accepts the flow's connection and reads it until it closes or the run ends, counting the
/// bytes read as goodput.
fn run_tcp_sink(ends: &FlowEnds) -> Result<()> {
    let listener = TcpListener::bind(ends.address)?;
    listener.set_nonblocking(true)?;
    let mut stream = loop {
        match listener.accept() {
            Ok((stream, _)) => break stream,
            Err(_) if ends.stop.load(Ordering::Relaxed) => return Ok(()),
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_millis(200)))?;
    let mut buffer = vec![0u8; 1 << 16];
    while !ends.stop.load(Ordering::Relaxed) {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => {
                ends.delivered.fetch_add(read as u64, Ordering::Relaxed);
            }
            Err(error) if timed_out(&error) => {}
            Err(_) => break,
        }
    }
    Ok(())
}

/// A socket read or write that only ran into its timeout (the loop checks the stop flag
/// and tries again).
fn timed_out(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Connects and writes until the flow's stop time, then aborts the connection.
/// Returns the kernel's `tcp_info` of the connection at its end (its retransmission and
/// timeout counts).
fn run_tcp_source(ends: &FlowEnds, congestion: &str, mss: u32) -> Result<Option<TcpInfo>> {
    let mut stream = connect_tcp(ends.address, congestion, mss)?;
    stream.set_write_timeout(Some(Duration::from_millis(100)))?;
    let chunk = vec![0x5a; 1 << 16];
    while std::time::Instant::now() < ends.stop_at && !ends.stop.load(Ordering::Relaxed) {
        match stream.write(&chunk) {
            Ok(_) => {}
            Err(error) if timed_out(&error) => {}
            Err(_) => break,
        }
    }
    let counts = TcpInfo::from_socket(&stream).ok();
    // Abort (SO_LINGER with a zero timeout: the close sends a reset): data still queued would
    // otherwise be counted after the stop.
    let _ = SockRef::from(&stream).set_linger(Some(Duration::ZERO));
    Ok(counts)
}

/// A TCP connection to `address` whose sender uses congestion control `congestion` and MSS
/// `mss`; retried for about a second while the sink is not listening yet.
fn connect_tcp(address: SocketAddr, congestion: &str, mss: u32) -> Result<TcpStream> {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    // A refused MSS is not an error: the connection keeps the kernel's.
    let _ = socket.set_tcp_mss(mss);
    socket
        .set_tcp_congestion(congestion.as_bytes())
        .map_err(|error| {
            Error::Invalid(format!(
                "TCP congestion control {congestion:?} is not available: {error}"
            ))
        })?;
    if !address.is_ipv4() {
        invalid!("the testbed uses IPv4");
    }
    let target = SockAddr::from(address);
    let mut attempts = 0;
    while let Err(error) = socket.connect(&target) {
        attempts += 1;
        if attempts > 50 {
            failed!("cannot connect to {address}: {error}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(TcpStream::from(socket))
}

/// Receives the flow's datagrams until the run ends, counting their payloads as goodput.
fn run_udp_sink(ends: &FlowEnds) -> Result<()> {
    let socket = UdpSocket::bind(ends.address)?;
    socket.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut buffer = vec![0u8; 65_536];
    while !ends.stop.load(Ordering::Relaxed) {
        if let Ok(received) = socket.recv(&mut buffer) {
            ends.delivered.fetch_add(received as u64, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// The simulator's traffic source of a UDP flow, with time zero at the flow's start.
fn udp_source(
    flow: &FlowSpec,
    seed: u64,
    index: usize,
    length: Duration,
) -> Result<Box<dyn TrafficSource + Send>> {
    let seed = tfrc_sim::rng::derive_seed(seed, &format!("testbed-flow:{index}"));
    let stop = Some(Instant::ZERO + length);
    Ok(match &flow.kind {
        FlowKind::Cbr { rate } => Box::new(CbrSource::new(
            CbrParams {
                rate_bits_per_second: rate.bits_per_second(),
                packet_size: flow.packet_size,
                start: Instant::ZERO,
                stop,
                jitter: false,
            },
            seed,
        )?),
        FlowKind::Pareto(spec) | FlowKind::ExponentialOnOff(spec) => Box::new(OnOffSource::new(
            OnOffParams {
                rate_bits_per_second: spec.rate.bits_per_second(),
                packet_size: flow.packet_size,
                mean_burst_time: spec.burst,
                mean_idle_time: spec.idle,
                distribution: match spec.shape {
                    Some(shape) => OnOffDistribution::Pareto { shape },
                    None => OnOffDistribution::Exponential,
                },
                start: Instant::ZERO,
                stop,
            },
            seed,
        )?),
        _ => invalid!("flow {} is not a UDP source", flow.name),
    })
}

fn run_udp_source(
    mut source: Box<dyn TrafficSource + Send>,
    address: SocketAddr,
    start: std::time::Instant,
    stop: &AtomicBool,
) -> Result<()> {
    tfrc_udp::pacing::lower_timer_slack();
    let socket = UdpSocket::bind("0.0.0.0:0")?;
    socket.connect(address)?;
    let mut payload = Vec::new();
    while let Some(due) = source.poll_timeout() {
        let at = start + Duration::from_nanos(due.as_nanos());
        sleep_until(at, stop);
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let now = Instant::from_nanos(start.elapsed().as_nanos() as u64);
        let burst = source.handle_timeout(now);
        payload.resize(
            burst.size_bytes.saturating_sub(UDP_OVERHEAD).max(1) as usize,
            0,
        );
        for _ in 0..burst.packets {
            let _ = socket.send(&payload);
        }
    }
    Ok(())
}

/// Sum of `departure_bytes` of the `links.csv` rows of `from → to` with `time_s ≤ until`;
/// `None` if the text has no such column or no such rows.
fn departed_bytes_until(links_csv: &str, from: &str, to: &str, until: f64) -> Option<u64> {
    let mut lines = links_csv.lines();
    let header: Vec<&str> = lines.next()?.split(',').collect();
    let column = |name: &str| header.iter().position(|cell| *cell == name);
    let (time, source, destination, bytes) = (
        column("time_s")?,
        column("from")?,
        column("to")?,
        column("departure_bytes")?,
    );
    let mut total = None;
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let (Some(t), Some(f), Some(d), Some(b)) = (
            cells.get(time).and_then(|v| v.parse::<f64>().ok()),
            cells.get(source),
            cells.get(destination),
            cells.get(bytes).and_then(|v| v.parse::<u64>().ok()),
        ) else {
            continue;
        };
        if *f == from && *d == to && t <= until + 1e-9 {
            total = Some(total.unwrap_or(0) + b);
        }
    }
    total
}

/// Writes the run's output files into `--out`: `flows.csv` and `state.csv` from the
/// emulator's counts and the senders' reports, `summary.json` (the simulator's summary of the
/// same counts) and the scenario as run (`scenario.toml`).
fn write_outputs(
    args: &RunOptions,
    scenario: &Scenario,
    plan: &Plan,
    flow_log: &FlowLog,
    states: &[(usize, StateRow)],
    tcp_counts: &[Option<TcpInfo>],
    report: &crate::testbed::TestbedReport,
) -> Result<()> {
    let sorted = write_rows(args, scenario, plan, flow_log, states)?;
    let flow_summaries = flow_summaries(scenario, plan, flow_log, &sorted, tcp_counts);
    let seconds = scenario.duration.as_secs_f64();
    // Bytes each direction sent during the run: the links.csv rows up to its end. The counters at
    // shutdown also hold what drained after the last flow stopped, which would put utilization
    // above 1.
    let links_csv = std::fs::read_to_string(args.out.join("links.csv")).unwrap_or_default();
    let utilization = |index: usize| {
        let link = &plan.topology.links[index];
        let at_shutdown = report.links.get(index).map_or(0, |c| c.departure_bytes);
        let departed =
            departed_bytes_until(&links_csv, &link.from, &link.to, seconds).unwrap_or(at_shutdown);
        tfrc_output::utilization(departed, link.spec.rate_bits_per_second(), seconds)
    };
    let links: Vec<LinkSummary> = plan
        .topology
        .links
        .iter()
        .zip(&report.links)
        .enumerate()
        .map(|(index, (link, counters))| LinkSummary {
            from: link.from.clone(),
            to: link.to.clone(),
            utilization: utilization(index),
            drops: counters.total_drops(),
            departures: counters.departures,
        })
        .collect();
    let on_data_paths = plan
        .flows
        .iter()
        .filter_map(|flow| plan.topology.route(&flow.from, &flow.to))
        .flatten()
        .map(|index| {
            (
                index,
                plan.topology.links[index].spec.rate_bits_per_second(),
            )
        });
    let bottleneck = tfrc_output::bottleneck_direction(on_data_paths).map(|index| {
        let link = &plan.topology.links[index];
        BottleneckSummary {
            from: link.from.clone(),
            to: link.to.clone(),
            capacity_bps: link.spec.rate_bits_per_second().map(|c| c as f64),
            utilization: utilization(index),
        }
    });
    let run = tfrc_output::RunIdentity {
        tool: format!("{} (testbed)", tfrc_output::tool()),
        scenario: scenario.name.clone(),
        seed: scenario.seed,
        duration_s: seconds,
        interval_s: scenario.output.interval.as_secs_f64(),
        parameters: scenario.variant.clone(),
    };
    let summary = Summary::new(run, flow_summaries, bottleneck, links);
    summary.write(&args.out)?;
    std::fs::write(args.out.join("scenario.toml"), scenario.to_toml_string())?;
    Ok(())
}

/// Writes `flows.csv` (one row per flow per interval, from the emulator's cumulative counts)
/// and `state.csv` (the senders' reports within the run, in time then flow order); returns
/// those state rows.
fn write_rows<'a>(
    args: &RunOptions,
    scenario: &Scenario,
    plan: &Plan,
    flow_log: &FlowLog,
    states: &'a [(usize, StateRow)],
) -> Result<Vec<&'a (usize, StateRow)>> {
    let interval = scenario.output.interval;
    let duration = scenario.duration;
    let intervals = (duration.as_nanos() / interval.as_nanos().max(1)) as usize;
    let mut writer = RunWriter::with_files(&args.out, &[RowFile::Flows, RowFile::State])?;
    let zero = vec![FlowTotals::default(); plan.flows.len()];
    for row in 0..intervals {
        let now = flow_log.intervals.get(row).unwrap_or(&zero);
        let before = match row {
            0 => &zero,
            _ => flow_log.intervals.get(row - 1).unwrap_or(&zero),
        };
        let time_s = interval.as_secs_f64() * (row + 1) as f64;
        for (index, flow) in plan.flows.iter().enumerate() {
            let count = |counts: &[FlowTotals]| counts.get(index).copied().unwrap_or_default();
            let counts = count(now).since(&count(before));
            writer.push(counts.row(
                time_s,
                (&flow.name, flow.output_kind()),
                interval.as_secs_f64(),
            ))?;
        }
    }
    let mut sorted: Vec<&(usize, StateRow)> = states
        .iter()
        .filter(|(_, row)| row.time_s <= duration.as_secs_f64() + 1e-9)
        .collect();
    sorted
        .sort_by(|(a_flow, a), (b_flow, b)| a.time_s.total_cmp(&b.time_s).then(a_flow.cmp(b_flow)));
    for (_, row) in &sorted {
        writer.push(row.clone())?;
    }
    writer.finish()?;
    Ok(sorted)
}

/// Each flow's summary: its totals at the last whole interval, mean p and RTT over its state
/// rows while it ran, and the variation of its packets sent per 100 ms.
fn flow_summaries(
    scenario: &Scenario,
    plan: &Plan,
    flow_log: &FlowLog,
    sorted: &[&(usize, StateRow)],
    tcp_counts: &[Option<TcpInfo>],
) -> Vec<FlowSummary> {
    let duration = scenario.duration;
    let intervals = (duration.as_nanos() / scenario.output.interval.as_nanos().max(1)) as usize;
    let last = flow_log
        .intervals
        .get(intervals.saturating_sub(1))
        .cloned()
        .unwrap_or_else(|| flow_log.totals.clone());
    let mut flow_summaries = Vec::new();
    for (index, flow) in plan.flows.iter().enumerate() {
        let totals = last.get(index).copied().unwrap_or_default();
        let (start, stop) = (flow.start, flow.stop_time(duration).min(duration));
        let (start_s, stop_s) = (start.as_secs_f64(), stop.as_secs_f64());
        let flow_states: Vec<&StateRow> = sorted
            .iter()
            .filter(|(flow, row)| *flow == index && row.time_s >= start_s && row.time_s <= stop_s)
            .map(|(_, row)| row)
            .collect();
        let mean = |values: Vec<f64>| tfrc_output::stats::mean(&values);
        let mean_p = matches!(flow.kind, FlowKind::Tfrc(_))
            .then(|| mean(flow_states.iter().filter_map(|row| row.p).collect()))
            .flatten();
        let mean_rtt = mean(flow_states.iter().filter_map(|row| row.rtt_s).collect());
        let bins = flow_log
            .sent_per_100ms
            .get(index)
            .cloned()
            .unwrap_or_default();
        let (first_bin, last_bin) = ((start_s * 10.0) as usize, (stop_s * 10.0) as usize);
        let counts: Vec<f64> = (first_bin..last_bin)
            .map(|bin| f64::from(bins.get(bin).copied().unwrap_or(0)))
            .collect();
        // The kernel's counts of a TCP sender (TCP_INFO at its end): segments retransmitted
        // (`tcpi_total_retrans`), and RTO expiries (`tcpi_total_rto`, Linux 6.7 on).
        let kernel = tcp_counts.get(index).copied().flatten();
        flow_summaries.push(FlowSummary {
            retransmissions: kernel.map(|info| u64::from(info.total_retrans)),
            timeouts: kernel.and_then(|info| info.total_rto.map(u64::from)),
            mean_p,
            mean_rtt_s: mean_rtt,
            cov_sent_100ms: coefficient_of_variation(&counts),
            // The testbed's receivers run in their own threads; their feedback counts are not
            // collected.
            feedbacks: None,
            ..FlowSummary::from_totals(
                FlowIdentity {
                    name: &flow.name,
                    kind: flow.output_kind(),
                    from: &flow.from,
                    to: &flow.to,
                },
                (start, stop),
                totals,
            )
        });
    }
    flow_summaries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(flows: &str) -> Result<Plan> {
        let text = format!(
            "name = \"plan\"\nduration = \"10s\"\n\
             [[link]]\nbetween = [\"a\", \"b\"]\nrate = \"10Mbps\"\ndelay = \"10ms\"\n\
             queue = {{ kind = \"droptail\", limit = 50 }}\n{flows}"
        );
        let scenario: Scenario = text.parse()?;
        Plan::new(&scenario.expand_counts())
    }

    /// The testbed honours `profile`: a `profile = "ns2"` flow gets ns-2's TFRC (s counting the
    /// 32-byte header, as the simulator runs it), with its feedbacks per RTT and history
    /// discounting, and the receiver is told all of it by the flow options of each packet.
    #[test]
    fn an_ns2_profile_flow_gets_the_simulators_configuration() {
        let plan = plan(
            "[[flow]]\nname = \"t\"\nkind = \"tfrc\"\nfrom = \"a\"\nto = \"b\"\n\
             packet_size = 1000\nprofile = \"ns2\"\nfeedbacks_per_rtt = 4\n\
             history_discounting = true\n",
        )
        .unwrap();
        let Endpoint::Tfrc(config) = &plan.endpoints[0] else {
            panic!("a TFRC flow planned as {:?}", plan.endpoints[0]);
        };
        assert_eq!(config.profile, tfrc_proto::Profile::Ns2);
        // An IP packet of 1000 bytes: 972 bytes of TFRC packet, header inside s (useHeaders_ false).
        assert_eq!(config.packet_size, 972);
        assert_eq!(config.header_outside_s(), 0);
        assert_eq!(config.feedbacks_per_rtt, Some(4));
        assert!(config.history_discounting);
        let simulator = match &plan.flows[0].kind {
            FlowKind::Tfrc(tfrc) => tfrc_sim::simulation::tfrc_config(tfrc, 972, "flow t").unwrap(),
            other => panic!("not TFRC: {other:?}"),
        };
        assert_eq!(*config, simulator);

        // What the testbed's receiver builds from the first packet's flow options.
        let options = tfrc_udp::control::FlowOptions::from_config(config).unwrap();
        let mut block = [0u8; tfrc_udp::control::FLOW_OPTIONS_LEN];
        options.emit(&mut block).unwrap();
        let payload = 972 - tfrc_proto::wire::DATA_HEADER_LEN as u32;
        let receiver = tfrc_udp::control::FlowOptions::parse(&block)
            .ok()
            .and_then(|options| options.receiver_config(payload))
            .unwrap();
        assert_eq!(receiver.profile, tfrc_proto::Profile::Ns2);
        assert_eq!(receiver.packet_size, config.packet_size);
        assert_eq!(receiver.feedbacks_per_rtt, Some(4));
        assert!(receiver.history_discounting);
    }

    #[test]
    fn the_default_profile_keeps_the_header_outside_s_and_tcp_gets_its_mss() {
        let plan = plan(
            "[[flow]]\nname = \"t\"\nkind = \"tfrc\"\nfrom = \"a\"\nto = \"b\"\npacket_size = 1000\n\
             [[flow]]\nname = \"r\"\nkind = \"tcp\"\nfrom = \"a\"\nto = \"b\"\npacket_size = 1000\n\
             [[flow]]\nname = \"c\"\nkind = \"cbr\"\nfrom = \"a\"\nto = \"b\"\nrate = \"1Mbps\"\n",
        )
        .unwrap();
        let Endpoint::Tfrc(config) = &plan.endpoints[0] else {
            panic!("{:?}", plan.endpoints[0]);
        };
        assert_eq!(config.profile, tfrc_proto::Profile::Rfc5348);
        assert_eq!(config.packet_size, 1000 - 28 - 32);
        assert_eq!(
            plan.endpoints[1],
            Endpoint::Tcp {
                mss: 960,
                congestion: None
            }
        );
        assert_eq!(plan.endpoints[2], Endpoint::Udp);
    }

    #[test]
    fn a_bad_tfrc_option_is_refused_when_planning_and_named() {
        let error = plan(
            "[[flow]]\nname = \"tiny\"\nkind = \"tfrc\"\nfrom = \"a\"\nto = \"b\"\npacket_size = 50\n",
        )
        .unwrap_err();
        assert!(format!("{error:#}").contains("tiny"), "{error:#}");
    }
}
