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
//! - TCP flows are the kernel's: `variant` reno/newreno/sack all run the kernel's `reno`
//!   congestion control (with SACK as the kernel negotiates it), or `--tcp-congestion`.

use core::time::Duration;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use tfrc_output::{
    coefficient_of_variation, BottleneckSummary, FlowIdentity, FlowSummary, FlowTotals,
    LinkSummary, RowFile, RunWriter, StateRow, Summary,
};
use tfrc_proto::Instant;
use tfrc_scenario::{Capacity, FlowKind, FlowSpec, LinkDirectionSpec, Scenario};
use tfrc_sim::{
    CbrParams, CbrSource, FlowId, LossConfig, OnOffDistribution, OnOffParams, OnOffSource,
    TimeWindow, TrafficSource,
};

use crate::spec::{CapacitySpec, DirectionSpec, MarkerSpec};
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

fn direction_spec(spec: &LinkDirectionSpec) -> DirectionSpec {
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
        queue: queue_config(&spec.queue),
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
    },
    /// A UDP source (CBR, Pareto or exponential on/off) and a sink that counts its payloads.
    Udp,
}

impl Endpoint {
    /// The endpoint of one flow of a scenario.
    pub fn new(flow: &FlowSpec) -> Result<Endpoint> {
        Ok(match &flow.kind {
            FlowKind::Tfrc(tfrc) => Endpoint::Tfrc(tfrc_sim::simulation::tfrc_config(
                tfrc,
                flow.packet_size.saturating_sub(UDP_OVERHEAD),
                &format!("flow {}", flow.name),
            )?),
            FlowKind::Tcp(_) => Endpoint::Tcp {
                mss: flow.packet_size.saturating_sub(40).clamp(88, 1460),
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
            bail!("too many flows for one testbed: {}", flows.len());
        }
        let endpoints = flows.iter().map(Endpoint::new).collect::<Result<_>>()?;
        let ports: Vec<u16> = (0..flows.len()).map(|i| FIRST_PORT + i as u16).collect();
        let port_of: HashMap<&str, u16> = flows
            .iter()
            .zip(&ports)
            .map(|(flow, port)| (flow.name.as_str(), *port))
            .collect();
        let nodes: Vec<String> = scenario.nodes().iter().map(|n| n.to_string()).collect();
        let degree = |node: &str| {
            scenario
                .links
                .iter()
                .filter(|link| link.between.iter().any(|end| end == node))
                .count()
        };
        let hosts: Vec<String> = nodes
            .iter()
            .filter(|node| {
                degree(node) == 1
                    || flows
                        .iter()
                        .any(|flow| flow.from == **node || flow.to == **node)
            })
            .cloned()
            .collect();
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
                let mut direction = direction_spec(spec);
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
                                        anyhow!("marker on {from}->{to}: no flow named {name}")
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
                topology.links.push(TopologyLink {
                    from: from.clone(),
                    to: to.clone(),
                    spec: direction,
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
            .ok_or_else(|| anyhow!("node {name} has no namespace"))
    }
}

/// `tfrc testbed run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The scenario file (the simulator's format).
    pub scenario: PathBuf,
    /// Output directory (flows.csv, state.csv, links.csv, summary.json, scenario.toml).
    #[arg(long, default_value = "out/testbed")]
    pub out: PathBuf,
    /// Override a key, as `tfrc sim --set` (e.g. `--set duration=30s`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// With a `[sweep]`: run the variant whose name contains this text (e.g. `profile=rfc5348`).
    #[arg(long)]
    pub variant: Option<String>,
    /// Kernel congestion control of the TCP flows.
    #[arg(long, default_value = "reno")]
    pub tcp_congestion: String,
    /// Run the emulator thread as SCHED_FIFO 10.
    #[arg(long)]
    pub realtime: bool,
}

/// Runs `tfrc testbed run`.
pub fn run(args: &RunArgs) -> Result<()> {
    let mut scenario = Scenario::from_path(&args.scenario)?;
    scenario.apply_sets(&args.set)?;
    let mut variants = scenario.expand()?;
    if let Some(wanted) = &args.variant {
        variants.retain(|variant| variant.name.contains(wanted.as_str()));
    }
    if variants.len() != 1 {
        bail!(
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
    let scenario = variants.remove(0);
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let plan = Plan::new(&scenario)?;
    let interval = scenario.output.interval;
    let state_interval = scenario.output.state_sampling_interval();
    let duration = scenario.duration;

    let mut config = TestbedConfig::new(plan.topology.clone());
    config.seed = scenario.seed;
    config.links_csv = Some((args.out.join("links.csv"), interval));
    config.realtime_priority = args.realtime.then_some(10);
    config.flow_interval = interval;
    // Goodput: what each receiving application got, counted by it (TFRC payload of accepted
    // packets, bytes a TCP sink read, UDP payloads a sink received).
    let delivered: Vec<Arc<AtomicU64>> = plan.flows.iter().map(|_| Arc::default()).collect();
    config.tracked_flows = plan
        .flows
        .iter()
        .zip(&plan.ports)
        .zip(&delivered)
        .map(|((flow, port), delivered)| {
            Ok(TrackedFlow {
                flow: FlowId::from(*port),
                from: plan.host_index(&flow.from)?,
                to: plan.host_index(&flow.to)?,
                delivered_payload: Some(delivered.clone()),
            })
        })
        .collect::<Result<_>>()?;
    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, interrupted.clone())?;
    }
    let testbed = Testbed::up(config)?;
    let origin = testbed
        .origin()
        .ok_or_else(|| anyhow!("the emulator did not start"))?;
    eprintln!(
        "testbed {}: {} hosts, {} flows, {} s",
        testbed.prefix(),
        plan.topology.hosts.len(),
        plan.flows.len(),
        duration.as_secs_f64()
    );
    // state.csv rows (the output schema's), with the index of their flow for sorting.
    let states: Arc<Mutex<Vec<(usize, StateRow)>>> = Arc::default();
    let mut workers = Vec::new();
    let stop = Arc::new(AtomicBool::new(false));
    for (index, (flow, port)) in plan.flows.iter().zip(&plan.ports).enumerate() {
        let to = testbed.host(&flow.to)?.clone();
        let from = testbed.host(&flow.from)?.clone();
        let address: SocketAddr = format!("{}:{port}", to.address).parse()?;
        let start = origin + flow.start;
        let stop_at = origin + flow.stop_time(duration).min(duration);
        let delivered = delivered[index].clone();
        match plan.endpoints[index].clone() {
            Endpoint::Tfrc(config) => {
                let receiver_stop = stop.clone();
                workers.push(in_namespace(&to.namespace, move || -> Result<()> {
                    let receiver = tfrc_udp::UdpReceiver::bind(tfrc_udp::ReceiverOptions {
                        report_interval: None,
                        delivered_payload: Some(delivered),
                        ..tfrc_udp::ReceiverOptions::new(address)
                    })?;
                    receiver.run(&receiver_stop, &mut |_| {})?;
                    Ok(())
                })?);
                let target_bps = config.target_rate.map(|bytes| bytes * 8.0);
                let states = states.clone();
                let (flow_name, flow_kind) = (flow.name.clone(), flow.kind_name());
                let sender_stop = stop.clone();
                workers.push(in_namespace(&from.namespace, move || -> Result<()> {
                    sleep_until(start, &sender_stop);
                    let mut options = tfrc_udp::SenderOptions::new(address);
                    options.duration = stop_at.saturating_duration_since(start);
                    options.report_interval = Some(state_interval);
                    let (rtt_ref, fixed_feedbacks) = (config.rtt_ref, config.feedbacks_per_rtt);
                    options.config = config;
                    let sender = tfrc_udp::UdpSender::new(options)?;
                    sender.run(&sender_stop, &mut |interval| {
                        let elapsed = origin.elapsed().as_secs_f64();
                        let step = state_interval.as_secs_f64();
                        let rtt = interval.rtt_ms.map(|ms| ms / 1000.0);
                        // The receiver's rule (`Config::feedbacks_per_rtt`, then `rtt_ref`).
                        let feedbacks = match (fixed_feedbacks, rtt, rtt_ref) {
                            (Some(count), _, _) => u64::from(count),
                            (None, Some(rtt), Some(reference)) => {
                                ((rtt / reference.as_secs_f64()) as u64).max(1)
                            }
                            _ => 1,
                        };
                        let time_s = (elapsed / step).round() * step;
                        let mut rows = states.lock().unwrap_or_else(|p| p.into_inner());
                        rows.push((
                            index,
                            StateRow {
                                x_bps: Some(interval.sending_rate_bits_per_second),
                                x_recv_bps: Some(interval.x_recv_bits_per_second),
                                p: Some(interval.p),
                                rtt_s: rtt,
                                target_bps,
                                feedbacks_per_rtt: Some(feedbacks as f64),
                                ..StateRow::empty(time_s, &flow_name, flow_kind)
                            },
                        ));
                    })?;
                    Ok(())
                })?);
            }
            Endpoint::Tcp { mss } => {
                let listener_stop = stop.clone();
                workers.push(in_namespace(&to.namespace, move || -> Result<()> {
                    let listener = TcpListener::bind(address)?;
                    listener.set_nonblocking(true)?;
                    let mut stream = loop {
                        match listener.accept() {
                            Ok((stream, _)) => break stream,
                            Err(_) if listener_stop.load(Ordering::Relaxed) => return Ok(()),
                            Err(_) => std::thread::sleep(Duration::from_millis(5)),
                        }
                    };
                    stream.set_nonblocking(false)?;
                    stream.set_read_timeout(Some(Duration::from_millis(200)))?;
                    let mut buffer = vec![0u8; 1 << 16];
                    while !listener_stop.load(Ordering::Relaxed) {
                        match stream.read(&mut buffer) {
                            Ok(0) => break,
                            Ok(read) => {
                                delivered.fetch_add(read as u64, Ordering::Relaxed);
                            }
                            Err(error)
                                if matches!(
                                    error.kind(),
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) => {}
                            Err(_) => break,
                        }
                    }
                    Ok(())
                })?);
                let congestion = args.tcp_congestion.clone();
                let sender_stop = stop.clone();
                workers.push(in_namespace(&from.namespace, move || -> Result<()> {
                    sleep_until(start, &sender_stop);
                    let stream = connect_tcp(address, &congestion, mss)?;
                    let mut stream = stream;
                    stream.set_write_timeout(Some(Duration::from_millis(100)))?;
                    let chunk = vec![0x5a; 1 << 16];
                    while std::time::Instant::now() < stop_at
                        && !sender_stop.load(Ordering::Relaxed)
                    {
                        match stream.write(&chunk) {
                            Ok(_) => {}
                            Err(error)
                                if matches!(
                                    error.kind(),
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) => {}
                            Err(_) => break,
                        }
                    }
                    // Abort: data still queued would otherwise be counted after the stop.
                    let linger = libc::linger {
                        l_onoff: 1,
                        l_linger: 0,
                    };
                    // SAFETY: valid socket and a linger struct of the given size.
                    unsafe {
                        libc::setsockopt(
                            stream.as_raw_fd(),
                            libc::SOL_SOCKET,
                            libc::SO_LINGER,
                            (&linger as *const libc::linger).cast(),
                            core::mem::size_of::<libc::linger>() as libc::socklen_t,
                        );
                    }
                    Ok(())
                })?);
            }
            Endpoint::Udp => {
                let sink_stop = stop.clone();
                workers.push(in_namespace(&to.namespace, move || -> Result<()> {
                    let socket = UdpSocket::bind(address)?;
                    socket.set_read_timeout(Some(Duration::from_millis(100)))?;
                    let mut buffer = vec![0u8; 65_536];
                    while !sink_stop.load(Ordering::Relaxed) {
                        if let Ok(received) = socket.recv(&mut buffer) {
                            delivered.fetch_add(received as u64, Ordering::Relaxed);
                        }
                    }
                    Ok(())
                })?);
                let source = udp_source(flow, scenario.seed, index, stop_at - start)?;
                let sender_stop = stop.clone();
                workers.push(in_namespace(&from.namespace, move || -> Result<()> {
                    sleep_until(start, &sender_stop);
                    run_udp_source(source, address, start, &sender_stop)
                })?);
            }
        }
    }
    // Run for the scenario's duration (plus a little for the last packets in flight).
    let end = origin + duration;
    while std::time::Instant::now() < end && !interrupted.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let flow_log = testbed.flow_log();
    stop.store(true, Ordering::Relaxed);
    let mut errors = Vec::new();
    for worker in workers {
        match worker.join() {
            Ok(Ok(())) => {}
            Ok(Err(error)) => errors.push(format!("{error:#}")),
            Err(_) => errors.push("a flow thread panicked".into()),
        }
    }
    let report = testbed.shutdown()?;
    let states = std::mem::take(&mut *states.lock().unwrap_or_else(|p| p.into_inner()));
    write_outputs(args, &scenario, &plan, &flow_log, &states, &report)?;
    for error in &errors {
        eprintln!("warning: {error}");
    }
    eprintln!("wrote {}", args.out.display());
    Ok(())
}

fn sleep_until(at: std::time::Instant, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let now = std::time::Instant::now();
        if now >= at {
            return;
        }
        std::thread::sleep((at - now).min(Duration::from_millis(20)));
    }
}

fn connect_tcp(address: SocketAddr, congestion: &str, mss: u32) -> Result<TcpStream> {
    // SAFETY: creating a socket with constant arguments.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // SAFETY: fd is a new socket owned by nobody else.
    let socket = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let mss = mss as libc::c_int;
    // SAFETY: valid socket, option values of the given lengths.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            (&mss as *const libc::c_int).cast(),
            core::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        if libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            congestion.as_ptr().cast(),
            congestion.len() as libc::socklen_t,
        ) != 0
        {
            bail!(
                "TCP congestion control {congestion:?} is not available: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    let SocketAddr::V4(v4) = address else {
        bail!("the testbed uses IPv4");
    };
    let sockaddr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: v4.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*v4.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    let mut attempts = 0;
    loop {
        // SAFETY: valid socket and sockaddr_in of the given length.
        let result = unsafe {
            libc::connect(
                fd,
                (&sockaddr as *const libc::sockaddr_in).cast(),
                core::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if result == 0 {
            break;
        }
        attempts += 1;
        if attempts > 50 {
            bail!(
                "cannot connect to {address}: {}",
                std::io::Error::last_os_error()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(TcpStream::from(socket))
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
        _ => bail!("flow {} is not a UDP source", flow.name),
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

fn write_outputs(
    args: &RunArgs,
    scenario: &Scenario,
    plan: &Plan,
    flow_log: &FlowLog,
    states: &[(usize, StateRow)],
    report: &crate::testbed::TestbedReport,
) -> Result<()> {
    let interval = scenario.output.interval;
    let duration = scenario.duration;
    let intervals = (duration.as_nanos() / interval.as_nanos().max(1)) as usize;
    let mut writer = RunWriter::with_files(&args.out, &[RowFile::Flows, RowFile::State])?;
    // flows.csv
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
                (&flow.name, flow.kind_name()),
                interval.as_secs_f64(),
            ))?;
        }
    }
    // state.csv
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
    // summary.json
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
        flow_summaries.push(FlowSummary {
            mean_p,
            mean_rtt_s: mean_rtt,
            cov_sent_100ms: coefficient_of_variation(&counts),
            // The testbed's receivers run in their own threads; their feedback counts are not
            // collected.
            feedbacks: None,
            ..FlowSummary::from_totals(
                FlowIdentity {
                    name: &flow.name,
                    kind: flow.kind_name(),
                    from: &flow.from,
                    to: &flow.to,
                },
                (start, stop),
                totals,
            )
        });
    }
    let seconds = duration.as_secs_f64();
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
        tool: format!("tfrc {} (testbed)", env!("CARGO_PKG_VERSION")),
        scenario: scenario.name.clone(),
        seed: scenario.seed,
        duration_s: seconds,
        interval_s: interval.as_secs_f64(),
    };
    let summary = Summary::new(run, flow_summaries, bottleneck, links);
    std::fs::write(
        args.out.join("summary.json"),
        serde_json::to_string_pretty(&summary)? + "\n",
    )?;
    std::fs::write(args.out.join("scenario.toml"), scenario.to_toml_string())?;
    Ok(())
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
        options.emit(&mut block);
        let payload = 972 - tfrc_proto::wire::DATA_HEADER_LEN as u32;
        let receiver = tfrc_udp::control::FlowOptions::parse(&block)
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
        assert_eq!(plan.endpoints[1], Endpoint::Tcp { mss: 960 });
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
