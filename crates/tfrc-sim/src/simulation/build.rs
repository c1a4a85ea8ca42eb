//! Building a run, the phase before the event loop: from a concrete [`Scenario`] to the
//! runtime pieces of a [`Simulation`](super::Simulation) ([`Runtime::build`]), and the element
//! configurations and static routes it needs, which the link emulator and the testbed share so
//! that a scenario means the same thing everywhere.

use std::collections::HashMap;
use std::path::Path;

use core::time::Duration;
use tfrc_proto::wire::MAX_FEEDBACK_LEN;
use tfrc_proto::Instant;
use tfrc_scenario::{
    Capacity, FlowKind, FlowSpec, LinkDirectionSpec, LossModel as LossSpecModel, OnOffSpec, Output,
    QueueSpec, Rate, Scenario, TcpSpec, TfrcProfile, TfrcSpec, TfrcVariant,
};
use tfrc_tcp::TcpSink;

use crate::link::{LinkCounters, LinkDirectionConfig, Transmitter};
use crate::loss::{GilbertElliottParams, LossConfig, LossKind, TimeWindow};
use crate::marker::{FlowSelector, TokenBucketConfig};
use crate::packet::FlowId;
use crate::queue::{QueueConfig, RedParams, RioParams, RioThresholds};
use crate::rng::derive_seed;
use crate::scheduler::Scheduler;
use crate::source::{CbrParams, CbrSource, OnOffDistribution, OnOffParams, OnOffSource};

use super::record::{FlowRecord, Recorder};
use super::{set_timer, Event, Flow, LinkState, MediaFlow, Protocol, SimulationError};

/// Everything a run starts from, built from one scenario by [`Runtime::build`];
/// [`Simulation::new`](super::Simulation::new) assembles the simulation from it.
pub(super) struct Runtime {
    /// The scenario as run: flows with `count` expanded, disabled flows left out.
    pub scenario: Scenario,
    /// When the run ends.
    pub end: Instant,
    /// How often outputs are sampled.
    pub sampling: Sampling,
    /// Nodes, link directions and routes.
    pub topology: Topology,
    /// The link directions, indexed as `topology.directions`.
    pub links: Vec<LinkState>,
    /// The flows, in the scenario's order (a flow's index is its [`FlowId`]).
    pub flows: Vec<Flow>,
    /// The bottleneck among the link directions the flows' data crosses: a trace-driven one,
    /// else the slowest ([`tfrc_output::bottleneck_direction`]).
    pub bottleneck: Option<usize>,
    /// The scheduler holding the run's initial events.
    pub scheduler: Scheduler<Event>,
    /// Where rows go: the CSV files of the output directory, if any.
    pub recorder: Recorder,
    /// The largest packet of the run (at least a TFRC feedback packet), which sizes the buffer
    /// TFRC data packets are built in.
    pub largest_packet: usize,
}

impl Runtime {
    /// Builds the runtime of `scenario`, whose flows with `count` are expanded here (a scenario
    /// with a `[sweep]` is refused: it stands for several runs), writing outputs to
    /// `output_dir` if given.
    ///
    /// The steps run in a fixed order, which decides the error a faulty scenario reports (the
    /// first one met) and, with the scheduler's first-scheduled-first-fired rule, the order of
    /// simultaneous events: markers and links, flows, output intervals, initial events, and the
    /// recorder last, so that a scenario that cannot run leaves no output files behind. Every
    /// random element is seeded here from the run's seed and its own name, so the order of the
    /// steps does not change what it draws.
    pub fn build(
        scenario: &Scenario,
        output_dir: Option<&Path>,
    ) -> Result<Runtime, SimulationError> {
        if !scenario.sweep.is_empty() {
            return Err(SimulationError::scenario(
                "sweep",
                "a scenario with a sweep stands for several runs: expand it and run each variant",
            ));
        }
        let scenario = scenario.expand_counts();
        let topology = Topology::new(&scenario);
        let end = Instant::ZERO + scenario.duration;
        let links = build_links(&scenario, &topology)?;
        let (mut flows, data_paths) = build_flows(&scenario, &topology)?;
        let bottleneck = tfrc_output::bottleneck_direction(
            data_paths
                .iter()
                .map(|&direction| (direction, links[direction].capacity_bps)),
        );
        let sampling = Sampling::new(&scenario.output)?;
        let scheduler = initial_events(&mut flows, sampling, end);
        let recorder = Recorder::new(output_dir)?;
        let largest_packet = scenario
            .flows
            .iter()
            .map(|spec| spec.packet_size as usize)
            .fold(MAX_FEEDBACK_LEN, usize::max);
        Ok(Runtime {
            scenario,
            end,
            sampling,
            topology,
            links,
            flows,
            bottleneck,
            scheduler,
            recorder,
            largest_packet,
        })
    }
}

/// The output sampling intervals of a run, both positive (a zero interval would sample forever
/// at time zero).
#[derive(Debug, Clone, Copy)]
pub(super) struct Sampling {
    /// Between two rows of `flows.csv` (and `links.csv`) for each flow (and link direction).
    pub interval: Duration,
    /// Between two rows of `state.csv` for each flow.
    pub state_interval: Duration,
}

impl Sampling {
    /// The intervals of a scenario's `[output]`, or an error at key `output` if one is zero.
    fn new(output: &Output) -> Result<Sampling, SimulationError> {
        let sampling = Sampling {
            interval: output.interval,
            state_interval: output.state_sampling_interval(),
        };
        if sampling.interval.is_zero() || sampling.state_interval.is_zero() {
            return Err(SimulationError::scenario(
                "output",
                "the output intervals must be positive",
            ));
        }
        Ok(sampling)
    }
}

/// The links: every link direction of the topology, in its order, with the token-bucket
/// markers placed on it.
fn build_links(
    scenario: &Scenario,
    topology: &Topology,
) -> Result<Vec<LinkState>, SimulationError> {
    markers_by_direction(scenario, topology)?
        .into_iter()
        .enumerate()
        .map(|(index, markers)| link_state(scenario, topology, index, markers))
        .collect()
}

/// The link direction at `index` of the topology, its random elements (loss, RED) seeded from
/// the run's seed and the direction's index and name. Errors are reported at the key
/// `link[N] (from -> to)`.
fn link_state(
    scenario: &Scenario,
    topology: &Topology,
    index: usize,
    markers: Vec<TokenBucketConfig>,
) -> Result<LinkState, SimulationError> {
    let (from, to, link_index, forward) = topology.directions[index];
    let link = &scenario.links[link_index];
    let spec = if forward {
        &link.forward
    } else {
        &link.reverse
    };
    let key = format!(
        "link[{link_index}] ({} -> {})",
        topology.nodes[from], topology.nodes[to]
    );
    let config =
        link_direction_config(spec, markers, Instant::ZERO).map_err(scenario_error(&key))?;
    let seed = derive_seed(
        scenario.seed,
        &format!("link:{index}:{}", topology.direction_name(index)),
    );
    Ok(LinkState {
        direction: config.build(seed).map_err(scenario_error(&key))?,
        from: from as u32,
        to: to as u32,
        capacity_bps: spec.rate().map(|rate| rate.bits_per_second()),
        timer: None,
        previous: LinkCounters::default(),
    })
}

/// The flows: every flow of the scenario, in its order, and the link directions that the
/// flows' data crosses (every flow's path in turn), among which the bottleneck is.
fn build_flows(
    scenario: &Scenario,
    topology: &Topology,
) -> Result<(Vec<Flow>, Vec<usize>), SimulationError> {
    let mut flows = Vec::with_capacity(scenario.flows.len());
    let mut data_paths = Vec::new();
    for (position, spec) in scenario.flows.iter().enumerate() {
        let (flow, path) = build_flow(scenario, topology, position, spec)?;
        flows.push(flow);
        data_paths.extend(path);
    }
    Ok((flows, data_paths))
}

/// The flow at `position` and the link directions its data crosses. Its random elements are
/// seeded from the run's seed and the flow's position and name (a TFRC flow's mark key too);
/// errors are reported at the key `flow[N] (name)`.
///
/// A flow's active time is `[start, stop)`, its stop clipped to the end of the run; an open-loop
/// source keeps its own start and stop and is active from the outset, while TFRC and TCP flows
/// are started and stopped by events ([`initial_events`]).
fn build_flow(
    scenario: &Scenario,
    topology: &Topology,
    position: usize,
    spec: &FlowSpec,
) -> Result<(Flow, Vec<usize>), SimulationError> {
    let key = format!("flow[{position}] ({})", spec.name);
    let (source_node, destination_node, path) = route(topology, spec, &key)?;
    let start = Instant::ZERO + spec.start;
    let stop = Instant::ZERO + spec.stop_time(scenario.duration).min(scenario.duration);
    let seed = derive_seed(scenario.seed, &format!("flow:{position}:{}", spec.name));
    let protocol = match &spec.kind {
        FlowKind::Tfrc(tfrc) => {
            let (session, nonce) = (position as u32 + 1, seed);
            match etp_media(tfrc, spec.packet_size, (session, nonce), start, &key)? {
                Some(media) => media,
                None => tfrc_endpoints(tfrc, spec.packet_size, (session, nonce), &key)?,
            }
        }
        FlowKind::Tcp(tcp) => tcp_endpoints(tcp, spec.packet_size, (seed, start), &key)?,
        FlowKind::Cbr { rate } => cbr_source(*rate, spec.packet_size, (start, stop), seed, &key)?,
        FlowKind::Pareto(on_off) | FlowKind::ExponentialOnOff(on_off) => {
            let distribution = match &spec.kind {
                FlowKind::Pareto(_) => OnOffDistribution::Pareto {
                    shape: on_off.shape.unwrap_or(1.5),
                },
                _ => OnOffDistribution::Exponential,
            };
            on_off_source(
                on_off,
                distribution,
                spec.packet_size,
                (start, stop),
                seed,
                &key,
            )?
        }
    };
    let record = FlowRecord::new(
        spec.name.clone(),
        spec.kind.output_kind(),
        (spec.from.clone(), spec.to.clone()),
        (start, stop.max(start)),
    );
    let flow = Flow {
        record,
        source_node: source_node as u32,
        destination_node: destination_node as u32,
        active: matches!(protocol, Protocol::Source(_)),
        ecn_capable: matches!(&spec.kind, FlowKind::Tfrc(tfrc) if tfrc.ecn),
        application: match (&spec.kind, &protocol) {
            // A media source's `max_rate` is its codec's top rate, not a data cap.
            (FlowKind::Tfrc(tfrc), Protocol::Tfrc { config, .. }) if tfrc.media.is_none() => {
                tfrc.max_rate.and_then(|rate| {
                    tfrc_proto::CappedApplication::new(
                        config.packet_size,
                        rate.bytes_per_second(),
                        start,
                    )
                })
            }
            _ => None,
        },
        media: match (&spec.kind, &protocol) {
            (FlowKind::Tfrc(tfrc), Protocol::Tfrc { config, .. }) => {
                media_flow(tfrc, config, start, &key)?
            }
            _ => None,
        },
        protocol,
        sender_timer: None,
        receiver_timer: None,
    };
    Ok((flow, path))
}

/// The codec of a TFRC flow's `media`, its top rate the flow's `max_rate`.
fn media_config(
    tfrc: &tfrc_scenario::TfrcSpec,
) -> Option<(&tfrc_scenario::MediaSpec, tfrc_proto::MediaConfig)> {
    let (media, max_rate) = (tfrc.media.as_ref()?, tfrc.max_rate?);
    Some((
        media,
        tfrc_proto::MediaConfig {
            fps: media.fps,
            min_rate: media.min_rate.bytes_per_second(),
            max_rate: max_rate.bytes_per_second(),
            start_rate: media.start_rate.bytes_per_second(),
            deadline: media.deadline,
            pause: media
                .pause
                .zip(media.resume)
                .map(|(pause, resume)| (Instant::ZERO + pause, Instant::ZERO + resume)),
        },
    ))
}

/// A media flow carried by ETP (`media.transport = "etp"`), its connection id and seed the
/// TFRC session and nonce it would have had; `None` for other TFRC flows. The scenario allows
/// ETP media only with the TFRC options a descriptor carries.
fn etp_media(
    tfrc: &tfrc_scenario::TfrcSpec,
    packet_size: u32,
    (session, nonce): (u32, u64),
    start: Instant,
    key: &str,
) -> Result<Option<Protocol>, SimulationError> {
    let Some((media, config)) = media_config(tfrc) else {
        return Ok(None);
    };
    if media.transport != tfrc_scenario::MediaTransport::Etp {
        return Ok(None);
    }
    let rate_control = match (tfrc.variant, tfrc.target_rate) {
        (TfrcVariant::Sp, _) => etp::descriptor::RateControlKind::TfrcSp,
        (TfrcVariant::Standard, Some(_)) => etp::descriptor::RateControlKind::Gtfrc,
        (TfrcVariant::Standard, None) => etp::descriptor::RateControlKind::Tfrc,
    };
    let target_rate = tfrc.target_rate.map(|rate| rate.bytes_per_second());
    super::etp_media::EtpMedia::new(
        config,
        rate_control,
        target_rate,
        packet_size,
        (session, nonce),
        start,
    )
    .map(|media| Some(Protocol::Etp(Box::new(media))))
    .map_err(|message| SimulationError::scenario(&format!("{key}.media"), message))
}

/// A TFRC flow's media source on the bare TFRC core (`media.transport = "tfrc"`); packets carry
/// at most the sender's largest payload.
fn media_flow(
    tfrc: &tfrc_scenario::TfrcSpec,
    config: &tfrc_proto::Config,
    start: Instant,
    key: &str,
) -> Result<Option<Box<MediaFlow>>, SimulationError> {
    let Some((media, media_config)) = media_config(tfrc) else {
        return Ok(None);
    };
    let source = tfrc_proto::MediaSource::new(media_config, config.max_payload(), start)
        .map_err(|error| SimulationError::scenario(&format!("{key}.media"), error.to_string()))?;
    Ok(Some(Box::new(MediaFlow {
        frames: tfrc_proto::FrameLog::new(media.deadline),
        source,
    })))
}

/// The nodes a flow goes between and the link directions its data crosses. A TFRC or TCP flow
/// also needs a route back, for its feedback or ACKs.
fn route(
    topology: &Topology,
    spec: &FlowSpec,
    key: &str,
) -> Result<(usize, usize, Vec<usize>), SimulationError> {
    let node = |name: &str| {
        topology
            .node(name)
            .ok_or_else(|| SimulationError::scenario(key, format!("no node named {name}")))
    };
    let (source, destination) = (node(&spec.from)?, node(&spec.to)?);
    let path = topology.path(source, destination).ok_or_else(|| {
        SimulationError::scenario(key, format!("no route from {} to {}", spec.from, spec.to))
    })?;
    if spec.kind.output_kind().is_congestion_controlled()
        && topology.path(destination, source).is_none()
    {
        return Err(SimulationError::scenario(
            key,
            format!(
                "no route back from {} to {} for feedback",
                spec.to, spec.from
            ),
        ));
    }
    Ok((source, destination, path))
}

/// A TFRC flow's receiver and its sender's configuration, session and nonce: the sender itself
/// is created when the flow starts, as it needs the start time.
fn tfrc_endpoints(
    spec: &TfrcSpec,
    wire_size: u32,
    (session, nonce): (u32, u64),
    key: &str,
) -> Result<Protocol, SimulationError> {
    let config = tfrc_config(spec, wire_size, key)?;
    let receiver = tfrc_proto::Receiver::new(config.clone()).map_err(scenario_error(key))?;
    Ok(Protocol::Tfrc {
        config,
        session,
        nonce,
        sender: None,
        receiver: Box::new(receiver),
    })
}

/// A TCP flow's sink and its sender's configuration (the sender is created when the flow
/// starts), or its short transfers (`downloads`, whose sizes and idle times are drawn from
/// `seed`, the first group at or after `start`). Its segments are the scenario's
/// `packet_size` less the TCP/IP header.
fn tcp_endpoints(
    spec: &TcpSpec,
    packet_size: u32,
    (seed, start): (u64, Instant),
    key: &str,
) -> Result<Protocol, SimulationError> {
    let variant = match spec.variant {
        tfrc_scenario::TcpVariant::Reno => tfrc_tcp::Variant::Reno,
        tfrc_scenario::TcpVariant::NewReno => tfrc_tcp::Variant::NewReno,
        tfrc_scenario::TcpVariant::Sack => tfrc_tcp::Variant::Sack,
        tfrc_scenario::TcpVariant::Cubic => tfrc_tcp::Variant::Cubic,
        tfrc_scenario::TcpVariant::Bbr => tfrc_tcp::Variant::Bbr,
    };
    let (mut config, mut sink_config) = match spec.profile {
        tfrc_scenario::TcpProfile::Rfc => (
            tfrc_tcp::SenderConfig::new(variant),
            tfrc_tcp::SinkConfig::for_variant(variant),
        ),
        tfrc_scenario::TcpProfile::Ns2 => (
            tfrc_tcp::SenderConfig::ns2(variant),
            tfrc_tcp::SinkConfig::for_variant(variant),
        ),
        tfrc_scenario::TcpProfile::Ns3 => (
            tfrc_tcp::SenderConfig::ns3(variant),
            tfrc_tcp::SinkConfig::ns3(variant),
        ),
    };
    config.segment_size = packet_size
        .checked_sub(tfrc_tcp::HEADER_BYTES)
        .filter(|size| *size > 0)
        .ok_or_else(|| {
            SimulationError::scenario(
                key,
                format!(
                    "a TCP packet_size must exceed the {}-byte header, got {packet_size}",
                    tfrc_tcp::HEADER_BYTES
                ),
            )
        })?;
    if let Some(window) = spec.window {
        config.max_window = window;
    }
    // The flow's own seed: BBR draws the phase its gain cycle starts in from it.
    config.seed = seed;
    config.validate().map_err(scenario_error(key))?;
    sink_config.delayed_ack = spec.delayed_ack;
    let sink = TcpSink::new(sink_config.clone()).map_err(scenario_error(key))?;
    if let Some(downloads) = &spec.downloads {
        return Ok(Protocol::Downloads(Box::new(
            super::downloads::Downloads::new(config, sink_config, downloads.clone(), seed, start),
        )));
    }
    Ok(Protocol::Tcp {
        config,
        sender: None,
        sink: Box::new(sink),
    })
}

/// A constant-bit-rate source, without jitter, sending over `[start, stop)`.
fn cbr_source(
    rate: Rate,
    packet_size: u32,
    (start, stop): (Instant, Instant),
    seed: u64,
    key: &str,
) -> Result<Protocol, SimulationError> {
    let params = CbrParams {
        rate_bits_per_second: rate.bits_per_second(),
        packet_size,
        start,
        stop: Some(stop),
        jitter: false,
    };
    let source = CbrSource::new(params, seed).map_err(scenario_error(key))?;
    Ok(Protocol::Source(Box::new(source)))
}

/// An on/off source whose burst and idle times follow `distribution`, sending over
/// `[start, stop)`.
fn on_off_source(
    on_off: &OnOffSpec,
    distribution: OnOffDistribution,
    packet_size: u32,
    (start, stop): (Instant, Instant),
    seed: u64,
    key: &str,
) -> Result<Protocol, SimulationError> {
    let params = OnOffParams {
        rate_bits_per_second: on_off.rate.bits_per_second(),
        packet_size,
        mean_burst_time: on_off.burst,
        mean_idle_time: on_off.idle,
        distribution,
        start,
        stop: Some(stop),
    };
    let source = OnOffSource::new(params, seed).map_err(scenario_error(key))?;
    Ok(Protocol::Source(Box::new(source)))
}

/// The initial events: a new scheduler holding the run's first events. Simultaneous events
/// fire in the order they were scheduled, so the order here is part of the run: for each flow
/// in turn, a source's first wake-up, or a TFRC or TCP flow's start and stop (if it starts
/// before it stops and within the run); then the first flow sample (at the end of a run
/// shorter than the interval) and the first state sample (if within the run).
fn initial_events(flows: &mut [Flow], sampling: Sampling, end: Instant) -> Scheduler<Event> {
    let mut scheduler = Scheduler::new();
    for (position, flow) in flows.iter_mut().enumerate() {
        let id = position as u32;
        match &flow.protocol {
            Protocol::Source(source) => set_timer(
                &mut scheduler,
                &mut flow.sender_timer,
                source.poll_timeout(),
                Instant::ZERO,
                Event::Source(id),
            ),
            // The record keeps `(start, stop.max(start))`: the same test, and the same stop
            // whenever it passes.
            Protocol::Tfrc { .. }
            | Protocol::Tcp { .. }
            | Protocol::Downloads(_)
            | Protocol::Etp(_) => {
                let (start, stop) = (flow.record.start, flow.record.stop);
                if start < stop && start <= end {
                    scheduler.schedule(start, Event::FlowStart(id));
                    scheduler.schedule(stop, Event::FlowStop(id));
                }
            }
        }
    }
    scheduler.schedule(
        (Instant::ZERO + sampling.interval).min(end),
        Event::FlowSample,
    );
    if Instant::ZERO + sampling.state_interval <= end {
        scheduler.schedule(Instant::ZERO + sampling.state_interval, Event::StateSample);
    }
    scheduler
}

/// Turns an element's parameter error into a scenario error at `key`, with the element's
/// message.
fn scenario_error<E: std::fmt::Display>(key: &str) -> impl Fn(E) -> SimulationError + '_ {
    move |error| SimulationError::scenario(key, error.to_string())
}

/// Converts one link direction of a scenario into the configuration of a
/// [`crate::LinkDirection`].
///
/// `markers` are the token-bucket markers on this direction, already resolved to flow ids; a
/// trace-driven direction reads its trace file here. The same function serves the simulator and
/// the link emulator, so that a scenario means the same thing in both.
pub fn link_direction_config(
    spec: &LinkDirectionSpec,
    markers: Vec<TokenBucketConfig>,
    trace_start: Instant,
) -> Result<LinkDirectionConfig, SimulationError> {
    let transmitter = match &spec.capacity {
        Capacity::Rate(rate) => Transmitter::fixed_rate(rate.bits_per_second())?,
        Capacity::Trace {
            path,
            offset,
            opportunity,
        } => Transmitter::trace_file(path, *offset, trace_start, (*opportunity).into())?,
    };
    Ok(LinkDirectionConfig {
        transmitter,
        propagation_delay: spec.delay,
        queue: queue_config(&spec.queue),
        markers,
        loss: spec.loss.as_ref().map(|loss| LossConfig {
            kind: loss_kind(&loss.model),
            window: (!loss.start.is_zero() || loss.stop.is_some()).then(|| TimeWindow {
                start: Instant::ZERO + loss.start,
                stop: loss.stop.map(|stop| Instant::ZERO + stop),
            }),
        }),
    })
}

/// The queue configuration for a scenario queue. The parameters the scenario format does not
/// expose keep the element defaults (ns-2's: RED `wait_` on, mean packet size 500 B).
pub fn queue_config(spec: &QueueSpec) -> QueueConfig {
    match spec {
        QueueSpec::DropTail { limit } => QueueConfig::DropTail {
            limit: *limit as usize,
        },
        QueueSpec::Red(red) => QueueConfig::Red(RedParams {
            limit: red.limit as usize,
            min_threshold: red.min_th,
            max_threshold: red.max_th,
            max_probability: red.max_p,
            weight: red.weight,
            gentle: red.gentle,
            ecn: red.ecn,
            ..RedParams::default()
        }),
        QueueSpec::Rio(rio) => QueueConfig::Rio(RioParams {
            limit: rio.limit as usize,
            in_profile: RioThresholds {
                min_threshold: rio.min_in,
                max_threshold: rio.max_in,
                max_probability: rio.p_in,
            },
            out_profile: RioThresholds {
                min_threshold: rio.min_out,
                max_threshold: rio.max_out,
                max_probability: rio.p_out,
            },
            weight: rio.weight,
            ecn: rio.ecn,
            ..RioParams::default()
        }),
    }
}

/// The loss process for a scenario loss model.
pub fn loss_kind(model: &LossSpecModel) -> LossKind {
    match *model {
        LossSpecModel::Bernoulli { rate } => LossKind::Bernoulli { probability: rate },
        LossSpecModel::Exponential { mean_gap } => LossKind::ExponentialGaps { mean_gap },
        LossSpecModel::GilbertElliott {
            p_good_to_bad,
            p_bad_to_good,
            loss_good,
            loss_bad,
        } => LossKind::GilbertElliott(GilbertElliottParams {
            good_to_bad: p_good_to_bad,
            bad_to_good: p_bad_to_good,
            loss_in_good: loss_good,
            loss_in_bad: loss_bad,
        }),
    }
}

/// The TFRC core configuration of a scenario flow: the one mapping from a scenario's `[[flow]]`
/// to `tfrc_proto::Config`, used by the simulator and the testbed.
///
/// `wire_size` is the size of a full TFRC packet, header included: the scenario's
/// `packet_size`, which counts headers for every kind of flow, less what the carrier adds below
/// TFRC (nothing in the simulator, 28 bytes of IP and UDP in the testbed).
/// - RFC 5348 profile: s = `wire_size − 32`, since §3.1 defines s as "the segment size in
///   bytes (excluding IP and transport protocol headers)"; the sender puts the 32-byte header
///   on top, so packets are `wire_size` bytes.
/// - ns-2 profile: ns-2 with `useHeaders_ false`, as the ns-2 translator runs the same
///   scenario: packets are `wire_size` bytes and the equation uses s = `wire_size`.
///
/// The simulator sends exactly on schedule (timer granularity 0), as ns-2 does.
pub fn tfrc_config(
    spec: &TfrcSpec,
    wire_size: u32,
    key: &str,
) -> Result<tfrc_proto::Config, SimulationError> {
    let header = tfrc_proto::wire::DATA_HEADER_LEN as u32;
    if wire_size <= header {
        return Err(SimulationError::scenario(
            key,
            format!(
                "a TFRC packet_size must exceed the {header}-byte TFRC header, got {wire_size}"
            ),
        ));
    }
    let packet_size = match spec.profile {
        TfrcProfile::Rfc5348 => wire_size - header,
        TfrcProfile::Ns2 => wire_size,
    };
    let config = tfrc_proto::Config {
        packet_size,
        ns2_use_headers: false,
        target_rate: spec.target_rate.map(|rate| rate.bytes_per_second()),
        rtt_ref: spec.rtt_ref,
        feedbacks_per_rtt: spec.feedbacks_per_rtt,
        veno: spec.veno.map(|veno| tfrc_proto::Veno {
            beta: veno.beta,
            alpha: veno.alpha,
        }),
        history_discounting: spec.history_discounting,
        oscillation_damping: spec.oscillation_damping,
        small_packets: (spec.variant == TfrcVariant::Sp).then(|| {
            let defaults = tfrc_proto::SmallPackets::default();
            tfrc_proto::SmallPackets {
                nominal_segment_size: spec
                    .nominal_segment_size
                    .unwrap_or(defaults.nominal_segment_size),
                header_size: spec.header_size.unwrap_or(defaults.header_size),
            }
        }),
        timer_granularity: core::time::Duration::ZERO,
        profile: match spec.profile {
            TfrcProfile::Rfc5348 => tfrc_proto::Profile::Rfc5348,
            TfrcProfile::Ns2 => tfrc_proto::Profile::Ns2,
        },
        ..tfrc_proto::Config::default()
    };
    config
        .validate()
        .map_err(|error| SimulationError::scenario(key, error.to_string()))?;
    Ok(config)
}

/// Nodes, link directions and next hops of a scenario.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Node names, in order of first appearance in the links.
    pub nodes: Vec<String>,
    /// Link directions as `(from node, to node, link index in the scenario, forward?)`.
    pub directions: Vec<(usize, usize, usize, bool)>,
    /// `next_hop[node][destination]`: the link direction to take, `None` if unreachable or
    /// `node == destination`.
    pub next_hop: Vec<Vec<Option<usize>>>,
}

impl Topology {
    /// Builds the topology and static shortest-path routes: fewest hops, as ns-2's static
    /// routing with unit costs, ties broken as [`tfrc_scenario::route`] says (the routes of
    /// [`Scenario::route`]).
    pub fn new(scenario: &Scenario) -> Topology {
        let nodes: Vec<String> = scenario.nodes().into_iter().map(str::to_owned).collect();
        let index: HashMap<&str, usize> = nodes
            .iter()
            .enumerate()
            .map(|(position, name)| (name.as_str(), position))
            .collect();
        let mut directions = Vec::with_capacity(scenario.links.len() * 2);
        for (link_index, link) in scenario.links.iter().enumerate() {
            let a = index[link.between[0].as_str()];
            let b = index[link.between[1].as_str()];
            directions.push((a, b, link_index, true));
            directions.push((b, a, link_index, false));
        }
        // One tree of fewest-hop routes per destination (tfrc_scenario::route, which every
        // consumer of a scenario routes by).
        let edges: Vec<(usize, usize)> = directions.iter().map(|&(a, b, _, _)| (a, b)).collect();
        let trees: Vec<HashMap<usize, usize>> = (0..nodes.len())
            .map(|destination| tfrc_scenario::route::next_hops(&edges, destination))
            .collect();
        let next_hop = (0..nodes.len())
            .map(|node| trees.iter().map(|tree| tree.get(&node).copied()).collect())
            .collect();
        Topology {
            nodes,
            directions,
            next_hop,
        }
    }

    /// The index of a node by name.
    pub fn node(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|node| node == name)
    }

    /// The link directions from `from` to `to`, in order; `None` if there is no route.
    pub fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let mut path = Vec::new();
        let mut node = from;
        while node != to {
            let direction = self.next_hop[node][to]?;
            path.push(direction);
            node = self.directions[direction].1;
            if path.len() > self.directions.len() {
                return None;
            }
        }
        Some(path)
    }

    /// `"from->to"` of a link direction.
    pub fn direction_name(&self, direction: usize) -> String {
        let (from, to, _, _) = self.directions[direction];
        format!("{}->{}", self.nodes[from], self.nodes[to])
    }
}

/// Token-bucket marker configurations per link direction, with the scenario's flow names
/// resolved to flow ids (the flows' positions in the scenario).
pub fn markers_by_direction(
    scenario: &Scenario,
    topology: &Topology,
) -> Result<Vec<Vec<TokenBucketConfig>>, SimulationError> {
    let mut by_direction = vec![Vec::new(); topology.directions.len()];
    for (marker_index, marker) in scenario.markers.iter().enumerate() {
        let key = format!("marker[{marker_index}]");
        let from = topology.node(&marker.link[0]);
        let to = topology.node(&marker.link[1]);
        let direction = topology
            .directions
            .iter()
            .position(|&(a, b, _, _)| Some(a) == from && Some(b) == to)
            .ok_or_else(|| {
                SimulationError::scenario(
                    &key,
                    format!("no link from {} to {}", marker.link[0], marker.link[1]),
                )
            })?;
        let mut flows: Vec<FlowId> = Vec::with_capacity(marker.flows.len());
        for name in &marker.flows {
            let position = scenario
                .flows
                .iter()
                .position(|flow| &flow.name == name)
                .ok_or_else(|| SimulationError::scenario(&key, format!("no flow named {name}")))?;
            flows.push(flow_id(position));
        }
        by_direction[direction].push(TokenBucketConfig {
            rate_bits_per_second: marker.rate.bits_per_second(),
            bucket_bytes: marker.bucket,
            flows: FlowSelector::Flows(flows),
        });
    }
    Ok(by_direction)
}

/// Bit set in the [`FlowId`] of a flow's reverse-path packets (TFRC feedback, TCP ACKs), so a
/// marker that selects a flow colours its data packets only, as a DiffServ edge classifying on
/// source and destination addresses would.
pub const REVERSE_PATH_BIT: FlowId = 1 << 31;

/// The [`FlowId`] of the data packets of the flow at `position` in the scenario.
pub fn flow_id(position: usize) -> FlowId {
    FlowId::try_from(position).unwrap_or(REVERSE_PATH_BIT - 1) & !REVERSE_PATH_BIT
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scenario's `packet_size` counts headers for every kind of flow. RFC 5348 §3.1 "s is
    /// the segment size in bytes (excluding IP and transport protocol headers)": s is the
    /// packet less the 32-byte TFRC header, which the sender puts back on top. The ns-2 profile
    /// is ns-2 with `useHeaders_ false`, as the translator runs the scenario: s is the packet.
    #[test]
    fn tfrc_s_excludes_the_header_under_rfc_5348_only() {
        let rfc = tfrc_config(&TfrcSpec::default(), 1000, "flow").unwrap();
        assert_eq!(rfc.packet_size, 968);
        assert_eq!(rfc.header_outside_s(), 32);
        let ns2 = TfrcSpec {
            profile: TfrcProfile::Ns2,
            ..TfrcSpec::default()
        };
        let ns2 = tfrc_config(&ns2, 1000, "flow").unwrap();
        assert_eq!((ns2.packet_size, ns2.header_outside_s()), (1000, 0));
        let error = tfrc_config(&TfrcSpec::default(), 32, "flow[2]").unwrap_err();
        assert!(error.to_string().contains("flow[2]"), "{error}");
        assert!(error.to_string().contains("32-byte TFRC header"), "{error}");
    }
}
