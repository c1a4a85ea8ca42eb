//! The simulation loop: a [`Scenario`] run on the network elements of this crate with the very
//! same TFRC core (`tfrc-proto`) and TCP models (`tfrc-tcp`) as everywhere else.
//!
//! One [`Scheduler`] holds every timer: link directions (end of serialization, arrival at the
//! far end), TFRC senders (send schedule and no-feedback timer) and receivers (feedback timer),
//! TCP senders (retransmission timer) and sinks (delayed ACK), open-loop sources, and the
//! sampling of outputs. Each element says when it next needs attention (`poll_timeout`); after
//! every interaction the loop moves that element's single pending event if the time changed.
//! Simultaneous events fire in the order they were scheduled, and every random element owns a
//! generator seeded from the run's seed, so a scenario and a seed always give the same run.
//!
//! Nodes forward packets instantly along static shortest paths (fewest hops). A TFRC or TCP
//! flow's data goes `from` → `to` and its feedback or ACKs come back along the reverse route.
//!
//! # Example
//! ```
//! use tfrc_scenario::Scenario;
//! use tfrc_sim::simulation::Simulation;
//!
//! let scenario = Scenario::from_str_named(
//!     r#"
//!     name = "one-flow"
//!     duration = "20s"
//!     [[link]]
//!     between = ["sender", "receiver"]
//!     rate = "1Mbps"
//!     delay = "25ms"
//!     [[flow]]
//!     name = "a"
//!     kind = "tfrc"
//!     from = "sender"
//!     to = "receiver"
//! "#,
//!     "one-flow.toml",
//! )?;
//! let summary = Simulation::new(&scenario, None)?.finish()?;
//! let flow = &summary.flows[0];
//! assert!(flow.goodput_bps.unwrap() > 800_000.0, "{flow:?}"); // fills most of the 1 Mb/s link
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod build;
mod capture;
mod downloads;
mod etp_media;
pub use capture::TFRC_PORT;
mod record;
mod tfrc_sender;

use std::path::{Path, PathBuf};

use core::time::Duration;
use tfrc_proto::wire::{DATA_HEADER_LEN, MAX_FEEDBACK_LEN};
use tfrc_proto::Instant;
use tfrc_scenario::Scenario;
use tfrc_tcp::{Ack, Segment, TcpSender, TcpSink};

pub use build::{
    flow_id, link_direction_config, loss_kind, markers_by_direction, queue_config, tfrc_config,
    Topology, REVERSE_PATH_BIT,
};
pub use record::{format_time, link_interval_row, COV_BIN};
pub use tfrc_output::{
    coefficient_of_variation, jain_index, BottleneckSummary, FlowSummary, LinkSummary, Rows,
    RunIdentity, StateRow, Summary, SCHEMA_VERSION,
};

use crate::error::{ParameterError, TraceError};
use crate::link::{Arrival, LinkCounters, LinkDirection};
use crate::packet::PacketMeta;
use crate::scheduler::{EventId, Scheduler};
use crate::source::TrafficSource;
use build::Runtime;
use record::{FlowRecord, Recorder};

/// Why a scenario could not be simulated or its results not written.
#[derive(Debug, thiserror::Error)]
pub enum SimulationError {
    /// The scenario asks for something the simulator cannot do (no route, bad parameter).
    #[error("{key}: {message}")]
    Scenario {
        /// The scenario key at fault, e.g. `flow[2]` or `link[0].forward.queue`.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A network element rejected its parameters.
    #[error(transparent)]
    Parameter(#[from] ParameterError),
    /// A delivery trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// An output file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl SimulationError {
    pub(crate) fn scenario(key: &str, message: impl Into<String>) -> SimulationError {
        SimulationError::Scenario {
            key: key.to_owned(),
            message: message.into(),
        }
    }
}

/// Room for the extra header the `ns2` profile puts on top of the packet size.
const NS2_HEADER_ROOM: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Link(u32),
    Sender(u32),
    Receiver(u32),
    Source(u32),
    FlowStart(u32),
    FlowStop(u32),
    FlowSample,
    StateSample,
}

#[derive(Debug, Clone, Copy)]
struct Timer {
    at: Instant,
    id: EventId,
}

/// Makes sure an element is woken up by `want` (never earlier than `now`). A pending event that
/// is already due earlier is kept: the element will be polled then, find nothing to do (an early
/// `handle_timeout` is a no-op for every element) and ask again. Only a wake-up that must come
/// sooner replaces the pending event; this keeps cancelled events (tombstones) out of the
/// scheduler, which would otherwise be most of its work.
fn set_timer(
    scheduler: &mut Scheduler<Event>,
    slot: &mut Option<Timer>,
    want: Option<Instant>,
    now: Instant,
    event: Event,
) {
    let Some(want) = want.map(|at| at.max(now)) else {
        if let Some(old) = slot.take() {
            scheduler.cancel(old.id);
        }
        return;
    };
    if let Some(old) = slot {
        if old.at <= want {
            return;
        }
        scheduler.cancel(old.id);
    }
    *slot = Some(Timer {
        at: want,
        id: scheduler.schedule(want, event),
    });
}

/// What a packet carries; only what the far end needs is kept (TFRC payload is zero padding).
#[derive(Debug, Clone)]
enum Body {
    /// A TFRC data packet's header, and the piece of the media stream a media flow's packet
    /// carries.
    TfrcData([u8; DATA_HEADER_LEN], Option<tfrc_proto::Chunk>),
    /// A TFRC feedback packet (64 to 160 bytes: boxed, so that every packet in flight does not
    /// carry room for the largest).
    TfrcFeedback(Box<[u8]>),
    /// A TCP segment and its connection (0 for a bulk flow; group and index for `downloads`).
    TcpData(u32, Segment),
    /// A TCP ACK and its connection.
    TcpAck(u32, Ack),
    /// An ETP datagram of a media flow, to the receiver's end or back to the sender's.
    Etp {
        to_server: bool,
        datagram: Vec<u8>,
    },
    Udp,
}

#[derive(Debug, Clone)]
struct PacketState {
    flow: u32,
    destination: u32,
    body: Body,
    /// When the packet left its sender (for its one-way delay).
    sent_at: Instant,
}

/// What runs a flow's endpoints: a TFRC or TCP sender (created when the flow starts) and its
/// receiver, or an open-loop source whose packets are simply counted at the far end.
enum Protocol {
    Tfrc {
        config: tfrc_proto::Config,
        session: u32,
        nonce: u64,
        sender: Option<Box<tfrc_proto::Sender>>,
        receiver: Box<tfrc_proto::Receiver>,
    },
    Tcp {
        config: tfrc_tcp::SenderConfig,
        sender: Option<Box<TcpSender>>,
        sink: Box<TcpSink>,
    },
    /// Short TCP transfers (a TCP flow with `downloads`).
    Downloads(Box<downloads::Downloads>),
    /// A media flow carried by ETP (a TFRC flow with `media`, `transport = "etp"`).
    Etp(Box<etp_media::EtpMedia>),
    Source(Box<dyn TrafficSource>),
}

/// One flow of the run, built by [`Runtime::build`]: its endpoints, its nodes, its pending
/// sender-side and receiver-side events, and what is recorded about it.
struct Flow {
    record: FlowRecord,
    source_node: u32,
    destination_node: u32,
    /// Its data packets carry ECT (a TFRC flow with `ecn = true`).
    ecn_capable: bool,
    /// A TFRC flow's application under `max_rate` (`None`: bulk data).
    application: Option<tfrc_proto::CappedApplication>,
    /// A TFRC flow's media source and the frame accounting at its receiver (key `media`).
    media: Option<Box<MediaFlow>>,
    protocol: Protocol,
    active: bool,
    sender_timer: Option<Timer>,
    receiver_timer: Option<Timer>,
}

/// A media flow's source and the log that judges its frames at the receiver.
struct MediaFlow {
    source: tfrc_proto::MediaSource,
    frames: tfrc_proto::FrameLog,
}

/// One link direction of the run, built by [`Runtime::build`]: the element, its nodes, its
/// capacity (none for a trace-driven direction), its pending event and its counters at the last
/// flow sample (the rows of `links.csv` are per interval).
struct LinkState {
    direction: LinkDirection,
    from: u32,
    to: u32,
    capacity_bps: Option<u64>,
    timer: Option<Timer>,
    previous: LinkCounters,
}

/// A packet about to leave a node.
struct Outgoing {
    node: u32,
    flow: u32,
    destination: u32,
    size: u32,
    reverse: bool,
    body: Body,
}

/// Queues a data packet of flow `flow` from `node` to `destination` and counts it as sent:
/// every sender's packets (TFRC, TCP, short transfers, ETP, open-loop sources) leave this way.
fn send_data(
    (outbox, record): (&mut Vec<Outgoing>, &mut FlowRecord),
    now: Instant,
    (flow, node, destination): (usize, u32, u32),
    size: u32,
    body: Body,
) {
    record.record_sent(now, size);
    outbox.push(Outgoing {
        node,
        flow: flow as u32,
        destination,
        size,
        reverse: false,
        body,
    });
}

/// Counters of an ETP media flow's connections ([`Simulation::etp_flow_stats`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtpFlowStats {
    /// The flow's name.
    pub flow: String,
    /// Connections opened: 1, or more when one failed (no answer to its INITs, or the peer
    /// silent for the idle timeout) and the application connected again.
    pub connections: u32,
    /// How often an end asked to act at the instant it had just acted at, over and over, and
    /// was moved on by 1 µs (0 unless ETP has a bug).
    pub stalls: u64,
}

/// One run of one concrete scenario (no sweep left). Create it with [`Simulation::new`], advance
/// it with [`Simulation::run_until`] (e.g. to drive a progress bar) and end it with
/// [`Simulation::finish`], which writes `summary.json` and returns the [`Summary`].
pub struct Simulation {
    name: String,
    /// The sweep grid's `(label, value)` pairs of this variant, for the summary.
    parameters: Vec<(String, String)>,
    seed: u64,
    scenario_toml: String,
    end: Instant,
    interval: Duration,
    state_interval: Duration,
    now: Instant,
    last_flow_sample: Instant,
    scheduler: Scheduler<Event>,
    topology: Topology,
    links: Vec<LinkState>,
    flows: Vec<Flow>,
    packets: Vec<Option<PacketState>>,
    free_packets: Vec<u32>,
    recorder: Recorder,
    output_dir: Option<PathBuf>,
    bottleneck: Option<usize>,
    outbox: Vec<Outgoing>,
    spare_outbox: Vec<Outgoing>,
    delivered: Vec<PacketMeta>,
    data_buffer: Vec<u8>,
    /// A media packet's payload (zeros: the simulator carries only where it is in the stream).
    media_payload: Vec<u8>,
    events: u64,
    failed: Option<SimulationError>,
    /// Packet captures, when asked for ([`Simulation::capture_to`]).
    capture: Option<capture::Capture>,
}

impl std::fmt::Debug for Simulation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Simulation")
            .field("name", &self.name)
            .field("seed", &self.seed)
            .field("now", &self.now)
            .field("end", &self.end)
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

impl Simulation {
    /// Builds the network and flows of `scenario`. A scenario with a `[sweep]` must be expanded
    /// first ([`Scenario::expand`]); flows with `count` are expanded here. With `output_dir`,
    /// `flows.csv`, `state.csv` and `links.csv` are written there as the run goes, and
    /// `summary.json` and `scenario.toml` (the scenario with every default written out) at
    /// [`Simulation::finish`].
    pub fn new(
        scenario: &Scenario,
        output_dir: Option<&Path>,
    ) -> Result<Simulation, SimulationError> {
        let Runtime {
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
        } = Runtime::build(scenario, output_dir)?;
        Ok(Simulation {
            name: scenario.name.clone(),
            parameters: scenario.variant.clone(),
            seed: scenario.seed,
            scenario_toml: scenario.to_toml_string(),
            end,
            interval: sampling.interval,
            state_interval: sampling.state_interval,
            now: Instant::ZERO,
            last_flow_sample: Instant::ZERO,
            scheduler,
            topology,
            links,
            flows,
            packets: Vec::new(),
            free_packets: Vec::new(),
            recorder,
            output_dir: output_dir.map(Path::to_path_buf),
            bottleneck,
            outbox: Vec::new(),
            spare_outbox: Vec::new(),
            delivered: Vec::new(),
            data_buffer: vec![0; largest_packet.max(DATA_HEADER_LEN) + NS2_HEADER_ROOM],
            media_payload: vec![0; largest_packet],
            events: 0,
            failed: None,
            capture: None,
        })
    }

    /// Builds and runs `scenario` to its end; see [`Simulation::new`].
    pub fn run(scenario: &Scenario, output_dir: Option<&Path>) -> Result<Summary, SimulationError> {
        Simulation::new(scenario, output_dir)?.finish()
    }

    /// The simulated time reached.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The end of the run (the scenario's duration).
    pub fn end(&self) -> Instant {
        self.end
    }

    /// Events processed so far.
    pub fn events_processed(&self) -> u64 {
        self.events
    }

    /// The seed of the run.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Captures every packet of each flow as it reaches its destination into
    /// `directory/<flow>.pcap` (see the capture module: IPv4 with synthetic UDP/TCP headers,
    /// TFRC on UDP port [`TFRC_PORT`]); the files are complete after [`Simulation::finish`].
    pub fn capture_to(&mut self, directory: &Path) -> Result<(), SimulationError> {
        let names: Vec<String> = self
            .flows
            .iter()
            .map(|flow| flow.record.name.clone())
            .collect();
        let directions: Vec<(String, String)> = self
            .links
            .iter()
            .map(|link| {
                let node = |index: u32| self.topology.nodes[index as usize].clone();
                (node(link.from), node(link.to))
            })
            .collect();
        let capture = capture::Capture::create(directory, &names, &directions)
            .map_err(|(path, source)| SimulationError::Io { path, source })?;
        self.capture = Some(capture);
        Ok(())
    }

    /// The counters of each TFRC flow's sender that has started, by flow name: what its
    /// feedback validation accepted, capped and refused ([`tfrc_proto::SenderStats`]).
    pub fn tfrc_sender_stats(&self) -> Vec<(String, tfrc_proto::SenderStats)> {
        self.flows
            .iter()
            .filter_map(|flow| match &flow.protocol {
                Protocol::Tfrc {
                    sender: Some(sender),
                    ..
                } => Some((flow.record.name.clone(), sender.stats())),
                _ => None,
            })
            .collect()
    }

    /// The ETP media flows' connection counters, by flow name ([`EtpFlowStats`]).
    pub fn etp_flow_stats(&self) -> Vec<EtpFlowStats> {
        self.flows
            .iter()
            .filter_map(|flow| match &flow.protocol {
                Protocol::Etp(media) => Some(EtpFlowStats {
                    flow: flow.record.name.clone(),
                    connections: media.connections(),
                    stalls: media.stalls(),
                }),
                _ => None,
            })
            .collect()
    }

    /// Processes every event up to `until` (at most the end of the run).
    pub fn run_until(&mut self, until: Instant) -> Result<(), SimulationError> {
        let limit = until.min(self.end);
        while let Some((at, event)) = self.scheduler.pop_until(limit) {
            self.now = at;
            self.events += 1;
            self.handle(event);
            if let Some(error) = self.failed.take() {
                return Err(error);
            }
        }
        self.now = self.now.max(limit);
        Ok(())
    }

    /// Keeps every row of `flows.csv`, `state.csv` and `links.csv` in memory as well (or
    /// instead, without an output directory), each row exactly as its file would read back;
    /// [`Simulation::finish_with_rows`] returns them.
    pub fn keep_rows(&mut self) {
        self.recorder.keep_rows();
    }

    /// Runs to the end, writes `summary.json` and `scenario.toml` (with an output directory)
    /// and returns the summary.
    pub fn finish(self) -> Result<Summary, SimulationError> {
        self.finish_with_rows().map(|(summary, _)| summary)
    }

    /// [`Simulation::finish`], also returning the rows kept in memory (empty unless
    /// [`Simulation::keep_rows`] was called).
    pub fn finish_with_rows(mut self) -> Result<(Summary, Rows), SimulationError> {
        self.run_until(self.end)?;
        self.settle_links();
        if let Some(capture) = self.capture.take() {
            capture
                .finish()
                .map_err(|(path, source)| SimulationError::Io { path, source })?;
        }
        let summary = self.summary();
        let rows = std::mem::take(&mut self.recorder).finish()?;
        if let Some(directory) = &self.output_dir {
            let write = |name: &str, text: String| {
                let path = directory.join(name);
                std::fs::write(&path, text).map_err(|source| SimulationError::Io { path, source })
            };
            summary
                .write(directory)
                .map_err(|error| SimulationError::Io {
                    path: error.path,
                    source: error.source,
                })?;
            write("scenario.toml", self.scenario_toml.clone())?;
        }
        Ok((summary, rows.unwrap_or_default()))
    }

    fn summary(&self) -> Summary {
        let duration = self.end.as_secs_f64();
        let flows: Vec<FlowSummary> = self
            .flows
            .iter()
            .map(|flow| {
                let feedbacks = match &flow.protocol {
                    Protocol::Tfrc { receiver, .. } => Some(receiver.stats().feedbacks),
                    _ => None,
                };
                let mut summary = flow.record.summary(feedbacks);
                if let Some(media) = &flow.media {
                    summary.frames = Some(media.source.stats().frames);
                    summary.frames_on_time = Some(media.frames.stats().on_time);
                    summary.frames_late = Some(media.frames.stats().late);
                }
                if let Protocol::Etp(media) = &flow.protocol {
                    let counts = media.frame_counts();
                    summary.frames = Some(counts.frames);
                    summary.frames_on_time = Some(counts.on_time);
                    summary.frames_late = Some(counts.late);
                }
                if let Protocol::Tcp {
                    sender: Some(sender),
                    ..
                } = &flow.protocol
                {
                    let stats = sender.stats();
                    summary.retransmissions = Some(stats.segments_retransmitted);
                    summary.timeouts = Some(stats.timeouts);
                }
                summary
            })
            .collect();
        let utilization = |link: &LinkState| {
            tfrc_output::utilization(
                link.direction.counters().departure_bytes,
                link.capacity_bps,
                duration,
            )
        };
        let node = |index: u32| self.topology.nodes[index as usize].clone();
        let run = RunIdentity {
            tool: tfrc_output::tool(),
            scenario: self.name.clone(),
            seed: self.seed,
            duration_s: duration,
            interval_s: self.interval.as_secs_f64(),
            parameters: self.parameters.clone(),
        };
        let bottleneck = self.bottleneck.map(|index| {
            let link = &self.links[index];
            BottleneckSummary {
                from: node(link.from),
                to: node(link.to),
                capacity_bps: link.capacity_bps.map(|capacity| capacity as f64),
                utilization: utilization(link),
            }
        });
        let links = self
            .links
            .iter()
            .map(|link| LinkSummary {
                from: node(link.from),
                to: node(link.to),
                utilization: utilization(link),
                drops: link.direction.counters().total_drops(),
                departures: link.direction.counters().departures,
            })
            .collect();
        Summary::new(run, flows, bottleneck, links)
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Link(index) => self.link_event(index as usize),
            Event::Sender(flow) => {
                self.flows[flow as usize].sender_timer = None;
                self.sender_event(flow as usize);
            }
            Event::Receiver(flow) => {
                self.flows[flow as usize].receiver_timer = None;
                self.receiver_event(flow as usize);
            }
            Event::Source(flow) => {
                self.flows[flow as usize].sender_timer = None;
                self.source_event(flow as usize);
            }
            Event::FlowStart(flow) => self.start_flow(flow as usize),
            Event::FlowStop(flow) => self.stop_flow(flow as usize),
            Event::FlowSample => self.flow_sample(),
            Event::StateSample => self.state_sample(),
        }
        self.flush_outbox();
    }

    // --- packets -----------------------------------------------------------------------------

    fn flush_outbox(&mut self) {
        while !self.outbox.is_empty() {
            // Swap in the spare buffer so neither allocates again.
            let mut batch = std::mem::take(&mut self.spare_outbox);
            std::mem::swap(&mut batch, &mut self.outbox);
            for outgoing in batch.drain(..) {
                self.inject(outgoing);
            }
            self.spare_outbox = batch;
        }
    }

    fn inject(&mut self, outgoing: Outgoing) {
        let state = PacketState {
            flow: outgoing.flow,
            destination: outgoing.destination,
            body: outgoing.body,
            sent_at: self.now,
        };
        let slot = match self.free_packets.pop() {
            Some(slot) => {
                self.packets[slot as usize] = Some(state);
                slot
            }
            None => {
                self.packets.push(Some(state));
                (self.packets.len() - 1) as u32
            }
        };
        let mut id = flow_id(outgoing.flow as usize);
        if outgoing.reverse {
            id |= REVERSE_PATH_BIT;
        }
        let mut meta = PacketMeta::new(u64::from(slot), id, outgoing.size);
        // ECT on the data packets of an ECN-capable flow only: feedback stays not-ECT, as
        // RFC 3168 §6.1.4 has it for TCP ("pure acknowledgement packets ... MUST be sent with
        // the not-ECT codepoint").
        meta.ecn_capable = !outgoing.reverse && self.flows[outgoing.flow as usize].ecn_capable;
        self.forward(outgoing.node, meta);
    }

    fn release(&mut self, id: u64) -> Option<PacketState> {
        let state = self.packets.get_mut(id as usize)?.take()?;
        self.free_packets.push(id as u32);
        Some(state)
    }

    fn forward(&mut self, node: u32, meta: PacketMeta) {
        let Some(Some(state)) = self.packets.get(meta.id as usize) else {
            return;
        };
        let destination = state.destination;
        if node == destination {
            self.deliver(meta);
            return;
        }
        let Some(direction) = self.topology.next_hop[node as usize][destination as usize] else {
            // Routes were checked when the flows were built; an unroutable packet is dropped.
            self.release(meta.id);
            return;
        };
        let link = &mut self.links[direction];
        match link.direction.handle_arrival(self.now, meta) {
            Arrival::Accepted => self.schedule_link(direction),
            Arrival::Dropped(_) => {
                self.release(meta.id);
            }
        }
    }

    fn schedule_link(&mut self, index: usize) {
        let link = &mut self.links[index];
        set_timer(
            &mut self.scheduler,
            &mut link.timer,
            link.direction.poll_timeout(),
            self.now,
            Event::Link(index as u32),
        );
    }

    fn link_event(&mut self, index: usize) {
        self.links[index].timer = None;
        let now = self.now;
        let link = &mut self.links[index];
        let to = link.to;
        let mut delivered = std::mem::take(&mut self.delivered);
        link.direction.drain_deliveries(now, &mut delivered);
        self.schedule_link(index);
        if self.capture.is_some() {
            // Link direction files follow the flows' in the capture's file order.
            let file = self.flows.len() + index;
            for meta in &delivered {
                if let Some(Some(state)) = self.packets.get(meta.id as usize) {
                    let state = state.clone();
                    self.capture_into(file, &state, *meta);
                }
            }
        }
        for meta in delivered.drain(..) {
            self.forward(to, meta);
        }
        self.delivered = delivered;
    }

    /// Records `state` in the capture files, if any: in its flow's file (`file` = the flow's
    /// index) when it reached its destination, or in a link direction's file.
    fn capture_into(&mut self, file: usize, state: &PacketState, meta: PacketMeta) {
        let Some(capture) = &mut self.capture else {
            return;
        };
        let flow = &self.flows[state.flow as usize];
        let endpoints = capture::Endpoints {
            source_node: flow.source_node,
            destination_node: flow.destination_node,
            index: state.flow,
        };
        let ecn = meta.ecn_field();
        let (reverse, layer, size) = match &state.body {
            Body::TfrcData(header, _) => (
                false,
                capture::Layer::Udp { payload: header },
                meta.size_bytes,
            ),
            Body::TfrcFeedback(bytes) => (
                true,
                capture::Layer::Udp { payload: bytes },
                meta.size_bytes,
            ),
            Body::TcpData(_, segment) => (
                false,
                capture::Layer::Tcp {
                    sequence: segment.sequence as u32,
                    ack: None,
                },
                segment.payload_bytes,
            ),
            Body::TcpAck(_, ack) => (
                true,
                capture::Layer::Tcp {
                    sequence: 0,
                    ack: Some(ack.next_expected() as u32),
                },
                0,
            ),
            Body::Etp {
                to_server,
                datagram,
            } => (
                !to_server,
                capture::Layer::Udp { payload: datagram },
                meta.size_bytes,
            ),
            Body::Udp => (false, capture::Layer::Udp { payload: &[] }, meta.size_bytes),
        };
        capture.record(file, self.now, endpoints, reverse, layer, size, ecn);
    }

    fn deliver(&mut self, meta: PacketMeta) {
        let Some(state) = self.release(meta.id) else {
            return;
        };
        let now = self.now;
        let flow_index = state.flow as usize;
        // Reached its destination: the flow's own capture file.
        self.capture_into(flow_index, &state, meta);
        let flow = &mut self.flows[flow_index];
        match state.body {
            Body::TfrcData(header, chunk) => {
                self.receive_tfrc_data(flow_index, meta, state.sent_at, (header, chunk));
            }
            Body::TfrcFeedback(bytes) => {
                if let Protocol::Tfrc {
                    sender: Some(sender),
                    ..
                } = &mut flow.protocol
                {
                    let _ = sender.handle_packet(now, &bytes);
                }
                self.sender_event(flow_index);
            }
            Body::TcpData(connection, segment) => {
                self.receive_tcp_data(flow_index, meta, state.sent_at, (connection, &segment));
            }
            Body::TcpAck(connection, ack) => {
                match &mut flow.protocol {
                    Protocol::Tcp {
                        sender: Some(sender),
                        ..
                    } => {
                        let _ = sender.handle_ack(now, &ack);
                    }
                    Protocol::Downloads(downloads) => downloads.handle_ack(now, connection, &ack),
                    _ => {}
                }
                self.sender_event(flow_index);
            }
            Body::Etp {
                to_server: true,
                datagram,
            } => {
                flow.record
                    .record_received(meta.size_bytes, now - state.sent_at);
                if let Protocol::Etp(media) = &mut flow.protocol {
                    let delivered = media.server_datagram(now, &datagram);
                    flow.record.record_goodput(delivered);
                }
                self.receiver_output(flow_index);
            }
            Body::Etp {
                to_server: false,
                datagram,
            } => {
                if let Protocol::Etp(media) = &mut flow.protocol {
                    media.client_datagram(now, &datagram);
                }
                self.sender_event(flow_index);
            }
            Body::Udp => {
                // CBR and on/off packets carry no modelled header (as ns-2's Agent/UDP): the
                // application gets the whole packet.
                flow.record
                    .record_received(meta.size_bytes, now - state.sent_at);
                flow.record.record_goodput(u64::from(meta.size_bytes));
            }
        }
    }

    /// A TFRC data packet at its receiver: counted, its media piece logged, handed to the
    /// receiver (goodput: the payload it accepted, duplicates excluded), then whatever the
    /// receiver sends back.
    fn receive_tfrc_data(
        &mut self,
        index: usize,
        meta: PacketMeta,
        sent_at: Instant,
        (header, chunk): ([u8; DATA_HEADER_LEN], Option<tfrc_proto::Chunk>),
    ) {
        let now = self.now;
        let flow = &mut self.flows[index];
        flow.record.record_received(meta.size_bytes, now - sent_at);
        let size = meta.size_bytes as usize;
        self.data_buffer[..DATA_HEADER_LEN].copy_from_slice(&header);
        if let (Some(chunk), Some(media)) = (chunk, &mut flow.media) {
            media.frames.arrived(now, chunk);
        }
        if let Protocol::Tfrc { receiver, .. } = &mut flow.protocol {
            // Errors are counted by the receiver; simulated packets are well formed.
            // Goodput: the payload of the packets it accepted (duplicates excluded).
            let before = receiver.stats().payload_bytes;
            let _ = receiver.handle_packet_ecn(now, &self.data_buffer[..size], meta.ce);
            let delivered = receiver.stats().payload_bytes - before;
            flow.record.record_goodput(delivered);
        }
        self.receiver_output(index);
    }

    /// A TCP segment at its sink (a bulk flow's, or a download's connection): counted, handed
    /// to the sink (goodput: what it delivered in order), then whatever the sink sends back.
    fn receive_tcp_data(
        &mut self,
        index: usize,
        meta: PacketMeta,
        sent_at: Instant,
        (connection, segment): (u32, &Segment),
    ) {
        let now = self.now;
        let flow = &mut self.flows[index];
        flow.record.record_received(meta.size_bytes, now - sent_at);
        // Goodput: the payload the sink handed up in order (duplicates and
        // out-of-order segments count when the hole before them fills).
        let delivered = match &mut flow.protocol {
            Protocol::Tcp { sink, .. } => {
                let before = sink.delivered_bytes();
                let _ = sink.handle_segment(now, segment);
                sink.delivered_bytes() - before
            }
            Protocol::Downloads(downloads) => downloads.handle_segment(now, connection, segment),
            _ => 0,
        };
        flow.record.record_goodput(delivered);
        self.receiver_output(index);
    }

    // --- endpoints ---------------------------------------------------------------------------

    fn start_flow(&mut self, index: usize) {
        let now = self.now;
        let flow = &mut self.flows[index];
        flow.active = true;
        match &mut flow.protocol {
            Protocol::Tfrc {
                config,
                session,
                nonce,
                sender,
                ..
            } => match tfrc_proto::Sender::new(config.clone(), *session, *nonce, now) {
                Ok(created) => *sender = Some(Box::new(created)),
                Err(error) => {
                    self.failed = Some(SimulationError::scenario(
                        &format!("flow {}", flow.record.name),
                        error.to_string(),
                    ))
                }
            },
            Protocol::Tcp { config, sender, .. } => match TcpSender::new(config.clone()) {
                Ok(created) => *sender = Some(Box::new(created)),
                Err(error) => {
                    self.failed = Some(SimulationError::scenario(
                        &format!("flow {}", flow.record.name),
                        error.to_string(),
                    ))
                }
            },
            Protocol::Etp(media) => {
                if let Err(message) = media.start(now) {
                    self.failed = Some(SimulationError::scenario(
                        &format!("flow {}", flow.record.name),
                        message,
                    ))
                }
            }
            Protocol::Downloads(_) | Protocol::Source(_) => {}
        }
        self.sender_event(index);
    }

    fn stop_flow(&mut self, index: usize) {
        let now = self.now;
        let flow = &mut self.flows[index];
        flow.active = false;
        match &mut flow.protocol {
            Protocol::Tcp {
                sender: Some(sender),
                ..
            } => sender.stop(now),
            Protocol::Downloads(downloads) => downloads.stop(now),
            Protocol::Etp(media) => media.stop(now),
            _ => {}
        }
        // An inactive TFRC sender asks for no wake-up, which cancels its pending timer.
        self.sender_event(index);
    }

    /// Lets a TFRC or TCP sender act at `now` (timers, sending) and re-arms its timer.
    fn sender_event(&mut self, index: usize) {
        let now = self.now;
        let flow = &mut self.flows[index];
        let (source_node, destination) = (flow.source_node, flow.destination_node);
        let outbox = &mut self.outbox;
        let record = &mut flow.record;
        // Every data packet or datagram a sender hands over leaves its source node.
        let mut send = |size: u32, body: Body| {
            send_data(
                (&mut *outbox, &mut *record),
                now,
                (index, source_node, destination),
                size,
                body,
            );
        };
        let want = match &mut flow.protocol {
            Protocol::Tfrc {
                sender: Some(sender),
                ..
            } => flow
                .active
                .then(|| {
                    tfrc_sender::poll(
                        sender,
                        now,
                        (&mut flow.application, &mut flow.media),
                        (&self.media_payload, &mut self.data_buffer),
                        &mut send,
                    )
                })
                .flatten(),
            Protocol::Tcp {
                sender: Some(sender),
                ..
            } => {
                sender.handle_timeout(now);
                while let Some(segment) = sender.poll_transmit(now) {
                    send(segment.wire_size(), Body::TcpData(0, segment));
                }
                sender.poll_timeout()
            }
            Protocol::Downloads(downloads) => {
                let mut send_segment = |connection: u32, segment: Segment| {
                    send(segment.wire_size(), Body::TcpData(connection, segment));
                };
                match downloads.poll_senders(now, flow.active, &mut send_segment) {
                    Ok(want) => want,
                    Err(error) => {
                        self.failed = Some(SimulationError::scenario(
                            &format!("flow {}", flow.record.name),
                            error.to_string(),
                        ));
                        None
                    }
                }
            }
            Protocol::Etp(media) => {
                media.poll_client(now, flow.active, &mut |datagram: &[u8]| {
                    let body = Body::Etp {
                        to_server: true,
                        datagram: datagram.to_vec(),
                    };
                    send(datagram.len() as u32, body);
                })
            }
            _ => None,
        };
        set_timer(
            &mut self.scheduler,
            &mut flow.sender_timer,
            want,
            now,
            Event::Sender(index as u32),
        );
    }

    fn receiver_event(&mut self, index: usize) {
        let now = self.now;
        match &mut self.flows[index].protocol {
            Protocol::Tfrc { receiver, .. } => receiver.handle_timeout(now),
            Protocol::Tcp { sink, .. } => sink.handle_timeout(now),
            // Its sinks' (its receiving end's) timers are handled as it polls them.
            Protocol::Downloads(_) | Protocol::Etp(_) | Protocol::Source(_) => {}
        }
        self.receiver_output(index);
    }

    /// Sends the feedback or ACKs a receiver has ready and re-arms its timer.
    fn receiver_output(&mut self, index: usize) {
        let now = self.now;
        let flow = &mut self.flows[index];
        let (node, destination) = (flow.destination_node, flow.source_node);
        let want = match &mut flow.protocol {
            Protocol::Tfrc { receiver, .. } => {
                let mut buffer = [0u8; MAX_FEEDBACK_LEN];
                while let Some(length) = receiver.poll_transmit(now, &mut buffer) {
                    self.outbox.push(Outgoing {
                        node,
                        flow: index as u32,
                        destination,
                        size: length as u32,
                        reverse: true,
                        body: Body::TfrcFeedback(buffer[..length].into()),
                    });
                }
                receiver.poll_timeout()
            }
            Protocol::Tcp { sink, .. } => {
                while let Some(ack) = sink.poll_ack() {
                    self.outbox.push(Outgoing {
                        node,
                        flow: index as u32,
                        destination,
                        size: ack.wire_size(),
                        reverse: true,
                        body: Body::TcpAck(0, ack),
                    });
                }
                sink.poll_timeout()
            }
            Protocol::Downloads(downloads) => {
                let outbox = &mut self.outbox;
                downloads.poll_sinks(now, &mut |connection, ack: Ack| {
                    outbox.push(Outgoing {
                        node,
                        flow: index as u32,
                        destination,
                        size: ack.wire_size(),
                        reverse: true,
                        body: Body::TcpAck(connection, ack),
                    });
                })
            }
            Protocol::Etp(media) => {
                let outbox = &mut self.outbox;
                let (delivered, want) = media.poll_server(now, &mut |datagram: &[u8]| {
                    outbox.push(Outgoing {
                        node,
                        flow: index as u32,
                        destination,
                        size: datagram.len() as u32,
                        reverse: true,
                        body: Body::Etp {
                            to_server: false,
                            datagram: datagram.to_vec(),
                        },
                    });
                });
                flow.record.record_goodput(delivered);
                want
            }
            Protocol::Source(_) => None,
        };
        set_timer(
            &mut self.scheduler,
            &mut flow.receiver_timer,
            want,
            now,
            Event::Receiver(index as u32),
        );
    }

    fn source_event(&mut self, index: usize) {
        let now = self.now;
        let flow = &mut self.flows[index];
        let Protocol::Source(source) = &mut flow.protocol else {
            return;
        };
        let burst = source.handle_timeout(now);
        for _ in 0..burst.packets {
            send_data(
                (&mut self.outbox, &mut flow.record),
                now,
                (index, flow.source_node, flow.destination_node),
                burst.size_bytes,
                Body::Udp,
            );
        }
        let want = source.poll_timeout();
        set_timer(
            &mut self.scheduler,
            &mut flow.sender_timer,
            want,
            now,
            Event::Source(index as u32),
        );
    }

    // --- sampling ----------------------------------------------------------------------------

    /// Serves every link's queue up to now (a fixed-rate link wakes only for deliveries), so
    /// that its counters and queue count every serialization finished by now.
    fn settle_links(&mut self) {
        let now = self.now;
        for index in 0..self.links.len() {
            self.links[index].direction.handle_timeout(now);
            self.schedule_link(index);
        }
    }

    fn flow_sample(&mut self) {
        self.settle_links();
        let now = self.now;
        let interval_secs = now
            .saturating_duration_since(self.last_flow_sample)
            .as_secs_f64();
        self.last_flow_sample = now;
        if self.recorder.is_recording() {
            for flow in &self.flows {
                if let Err(error) = self.recorder.flow_row(now, &flow.record, interval_secs) {
                    self.failed = Some(error);
                    return;
                }
            }
            for link in &self.links {
                let sample = link.direction.sample();
                let names = (
                    self.topology.nodes[link.from as usize].as_str(),
                    self.topology.nodes[link.to as usize].as_str(),
                );
                if let Err(error) = self.recorder.link_row(
                    now,
                    names,
                    &sample,
                    &link.previous,
                    link.capacity_bps,
                    interval_secs,
                ) {
                    self.failed = Some(error);
                    return;
                }
            }
        }
        for flow in &mut self.flows {
            flow.record.interval = Default::default();
        }
        for link in &mut self.links {
            link.previous = *link.direction.counters();
        }
        if now < self.end {
            self.scheduler
                .schedule((now + self.interval).min(self.end), Event::FlowSample);
        }
    }

    fn state_sample(&mut self) {
        let now = self.now;
        for flow in &mut self.flows {
            if now < flow.record.start || now > flow.record.stop {
                continue;
            }
            let Some(row) = state_row(now, &flow.record, &flow.protocol) else {
                continue;
            };
            if let Some(p) = row.p {
                flow.record.p_sum += p;
                flow.record.p_samples += 1;
            }
            if let Some(rtt) = row.rtt_s {
                flow.record.rtt_sum += rtt;
                flow.record.rtt_samples += 1;
            }
            if self.recorder.is_recording() {
                if let Err(error) = self.recorder.state_row(row) {
                    self.failed = Some(error);
                    return;
                }
            }
        }
        let next = now + self.state_interval;
        if next <= self.end {
            self.scheduler.schedule(next, Event::StateSample);
        }
    }
}

/// The `state.csv` row of a flow's sender at `now`, if it has a sender.
fn state_row(now: Instant, record: &FlowRecord, protocol: &Protocol) -> Option<StateRow> {
    let seconds = |duration: Duration| duration.as_secs_f64();
    let empty = || StateRow::empty(record::seconds(now), &record.name, record.kind);
    match protocol {
        Protocol::Tfrc {
            sender: Some(sender),
            receiver,
            ..
        } => {
            let state = sender.state();
            Some(StateRow {
                x_bps: Some(state.sending_rate * 8.0),
                x_recv_bps: Some(state.x_recv * 8.0),
                p: Some(state.p),
                rtt_s: state.rtt.map(seconds),
                rto_s: Some(seconds(state.rto)),
                target_bps: state.target_rate.map(|rate| rate * 8.0),
                feedbacks_per_rtt: Some(f64::from(receiver.feedbacks_per_rtt())),
                veno_n: Some(state.veno_backlog),
                ..empty()
            })
        }
        Protocol::Tcp {
            sender: Some(sender),
            ..
        } => Some(StateRow {
            rtt_s: sender.latest_rtt().map(seconds),
            rto_s: Some(seconds(sender.retransmission_timeout())),
            cwnd: Some(sender.congestion_window()),
            ssthresh: Some(f64::from(sender.slow_start_threshold())),
            srtt_s: sender.smoothed_rtt().map(seconds),
            ..empty()
        }),
        Protocol::Etp(media) => {
            let state = media.sender_state()?;
            Some(StateRow {
                x_bps: state.x.map(|x| x * 8.0),
                p: Some(state.p),
                rtt_s: state.rtt.map(seconds),
                ..empty()
            })
        }
        _ => None,
    }
}
