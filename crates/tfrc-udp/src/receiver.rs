//! A TFRC receiver serving several flows on one UDP socket: one thread, one event loop.
//!
//! Flows are demultiplexed by the session id in bytes 4..8 of every data packet. A flow is created
//! by the first data packet of an unknown session that carries valid flow options
//! ([`crate::control::FlowOptions`]); it is bound to that packet's source address and session token (the nonce's upper half), and
//! later packets that disagree are counted as spoofed and dropped.
//!
//! # Bounded state
//! - At most `max_flows` flows at once; data for new sessions beyond that is counted as rejected.
//! - A flow that receives nothing for `idle_timeout` is closed ("idle_timeout") — this is how a
//!   sender that crashed or was killed is noticed.
//! - A flow the sender ended ([`crate::control::EndOfSession`]) is answered with an
//!   [`crate::control::EndAcknowledgement`] and kept `linger` longer as a closed entry, so that
//!   a repeated END gets the same answer and late data is counted as stray instead of opening a
//!   new flow. Closed entries count toward `max_flows` too.
//! - Each flow's core bounds its own loss-history memory (`Config::max_tracked_gaps`).

use core::time::Duration;
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use socket2::{Domain, Protocol, Socket, Type};
use tfrc_proto::adversary::Lie;
use tfrc_proto::wire::{self, Packet, PacketKind};
use tfrc_proto::{Instant, ReceiveError, Receiver, ReceiverStats};

use crate::batch::{EcnCodepoint, Offload, ReceiveBuffers};
use crate::clock::{unix_time_seconds, Clock, CpuMeter, CpuUtilization};
use crate::control::{self, CookieJar, EndAcknowledgement, EndOfSession, FlowOptions, Hello};
use crate::csvlog::FlowCsv;
use crate::pacing::{lower_timer_slack, poll_readable};
use crate::registry::{self, FlowKind, FlowSnapshot, ProbeGuard, ReceiverSnapshot};
use crate::schedule::OutputTimers;
use crate::sender::{RttAccumulator, RttSummary};

/// Receive buffer asked for (the kernel caps it at `net.core.rmem_max` unless root).
const RECEIVE_BUFFER_BYTES: usize = 8 << 20;
/// Datagrams read before timers are looked at (at least; one GRO train of up to 64 more may
/// end the round): at 1 µs per datagram about 100 µs, short against the feedback interval, so
/// feedback is not delayed behind a long read burst.
const MAX_READS_PER_ROUND: usize = 64;

/// What a receiver is asked to do.
#[derive(Debug, Clone)]
pub struct ReceiverOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Most flows (open and lingering) at once.
    pub max_flows: usize,
    /// A flow with no packet for this long is closed.
    pub idle_timeout: Duration,
    /// How long a finished flow is remembered.
    pub linger: Duration,
    /// Interval of the reports given to the callback; `None` = none.
    pub report_interval: Option<Duration>,
    /// One CSV file for the state of every flow (rows carry the flow id), and its interval.
    pub log: Option<(PathBuf, Duration)>,
    /// Stop after the first flow ends.
    pub once: bool,
    /// If given, the payload bytes of every data packet accepted (duplicates excluded, all
    /// flows) are added to it as they arrive: the goodput a testbed samples on its own clock.
    pub delivered_payload: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Pass reverse requests ([`control::ReverseRequest`], `tfrc send -R`) on as
    /// [`ReceiverEvent::ReverseRequested`] (once per address and request id); when false they
    /// are counted and dropped.
    pub accept_reverse: bool,
    /// A datagram to send from this receiver's socket until its first flow starts (`tfrc send
    /// -R`'s reverse request, so that the flow comes back to this socket).
    pub announce: Option<Announce>,
    /// Lies told in every feedback ([`tfrc_proto::adversary::Lie`]): for testing a sender's
    /// defences; empty for an honest receiver.
    pub lies: Vec<tfrc_proto::adversary::Lie>,
}

/// What [`ReceiverOptions::announce`] sends, how often, and for how long at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announce {
    /// Where to.
    pub to: SocketAddr,
    /// The datagram.
    pub datagram: Vec<u8>,
    /// Sent again this often while no flow has started.
    pub every: Duration,
    /// With no flow started this long after the run began, the run fails
    /// ([`ReceiverError::NoAnswer`]).
    pub give_up_after: Duration,
}

impl ReceiverOptions {
    /// Defaults: 64 flows, 10 s idle timeout, 2 s linger, 1 s reports, runs until stopped.
    pub fn new(listen: SocketAddr) -> ReceiverOptions {
        ReceiverOptions {
            listen,
            max_flows: 64,
            idle_timeout: Duration::from_secs(10),
            linger: Duration::from_secs(2),
            report_interval: Some(Duration::from_secs(1)),
            log: None,
            once: false,
            delivered_payload: None,
            accept_reverse: false,
            announce: None,
            lies: Vec::new(),
        }
    }
}

/// Why a receiver could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReceiverError {
    /// A socket or file operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// `max_flows` was zero.
    #[error("max flows must be at least 1")]
    MaxFlows,
    /// An announce went unanswered: no flow started.
    #[error("no flow came from {to} within {after:?}: is `tfrc recv` listening there?")]
    NoAnswer {
        /// Where the announce went.
        to: SocketAddr,
        /// How long the receiver waited.
        after: Duration,
    },
}

/// Fastest packet rate an END may claim ([`plausible_end`]): 100 million packets per second,
/// beyond any link.
pub const MAX_PLAUSIBLE_PACKET_RATE: f64 = 1e8;

/// Whether an END's totals can be true given what this receiver saw: at least as many packets
/// sent as the highest sequence number received plus one (the sender numbers from 0) and as
/// packets received; bytes between a bare header and the largest datagram per packet; and no
/// more than [`MAX_PLAUSIBLE_PACKET_RATE`] over the duration it gives (an END claiming 2^64 − 1
/// packets would need 5,800 years at that rate).
pub fn plausible_end(end: &EndOfSession, stats: &ReceiverStats, highest: Option<u64>) -> bool {
    let sent = end.packets_sent;
    let numbered = highest.map_or(0, |highest| highest.saturating_add(1));
    let bytes_fit = u128::from(end.bytes_sent) >= u128::from(sent) * wire::DATA_HEADER_LEN as u128
        && u128::from(end.bytes_sent) <= u128::from(sent) * 65_535;
    let seconds = Duration::from_nanos(end.duration_nanos).as_secs_f64();
    let rate_fits = sent as f64 <= MAX_PLAUSIBLE_PACKET_RATE * seconds + 1.0;
    sent >= numbered && sent >= stats.packets && bytes_fit && rate_fits
}

fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> ReceiverError {
    let context = context.into();
    move |source| ReceiverError::Io { context, source }
}

/// Counters of the whole receiver (beyond each flow's core counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReceiverCounters {
    /// Datagrams read.
    pub datagrams: u64,
    /// Not a TFRC data packet or END, or a new session without valid flow options.
    pub malformed: u64,
    /// A known session's packet with the wrong session token or from another address.
    pub spoofed: u64,
    /// Data or END for a session that is closed or unknown.
    pub stray: u64,
    /// New sessions refused because `max_flows` flows were open.
    pub rejected_flows: u64,
    /// ENDs whose totals cannot be true ([`plausible_end`]): the flow closes, the totals are
    /// not used.
    pub implausible_ends: u64,
    /// Cookies sent in answer to hellos.
    pub cookies_sent: u64,
    /// Data of new sessions without a cookie this receiver gave to their address (strangers,
    /// spoofed sources, senders that skipped the hello): dropped, no state kept.
    pub unverified: u64,
    /// Flows opened.
    pub flows_opened: u64,
    /// Flows ended by their sender.
    pub flows_completed: u64,
    /// Flows closed after `idle_timeout` without packets.
    pub flows_expired: u64,
    /// Feedback packets sent.
    pub feedbacks_sent: u64,
    /// Feedback or acknowledgements the socket refused to send.
    pub send_errors: u64,
    /// Reverse requests passed on (repeats of one request are counted once).
    pub reverse_requests: u64,
    /// Reverse requests dropped: not accepted by this receiver, or malformed.
    pub reverse_refused: u64,
}

/// Why a flow ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowEnd {
    /// The sender sent its end of session.
    Completed,
    /// Nothing arrived for `idle_timeout`.
    IdleTimeout,
    /// The receiver was stopped.
    Interrupted,
}

/// One flow's part of an interval report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FlowInterval {
    /// Flow id: `<session-id-hex>-receiver`.
    pub flow_id: String,
    /// Data packets received in the interval.
    pub packets: u64,
    /// Bytes received in the interval (TFRC headers included).
    pub bytes: u64,
    /// Bytes over the interval, bits/s.
    pub bits_per_second: f64,
    /// Packets declared lost in the interval.
    pub lost: u64,
    /// Loss event rate p at the end of the interval.
    pub p: f64,
    /// R_m from the sender's packets, seconds.
    pub rtt_s: Option<f64>,
}

/// An interval report: every active flow and their sum.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReceiverInterval {
    /// Start, seconds since the first flow began.
    pub start: f64,
    /// End, seconds since the first flow began.
    pub end: f64,
    /// Length, seconds.
    pub seconds: f64,
    /// Per flow.
    pub streams: Vec<FlowInterval>,
    /// Packets, bytes and losses of all flows; rate over the interval.
    pub sum: IntervalSum,
}

/// Sum of an interval over the flows.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct IntervalSum {
    /// Packets received.
    pub packets: u64,
    /// Bytes received.
    pub bytes: u64,
    /// bits/s.
    pub bits_per_second: f64,
    /// Packets declared lost.
    pub lost: u64,
}

/// The end-of-flow summary.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FlowSummary {
    /// Flow id: `<session-id-hex>-receiver`.
    pub flow_id: String,
    /// Session id, hexadecimal.
    pub session_id: String,
    /// The sender's address.
    pub peer: String,
    /// Why the flow ended.
    pub reason: FlowEnd,
    /// First packet, seconds since the first flow of this receiver began.
    pub start: f64,
    /// From the first to the last data packet, seconds.
    pub seconds: f64,
    /// Data packets received (duplicates excluded).
    pub packets: u64,
    /// Bytes received, TFRC headers included (the UDP payload).
    pub bytes: u64,
    /// Payload bytes after the TFRC header.
    pub payload_bytes: u64,
    /// bytes over seconds, bits/s.
    pub bits_per_second: f64,
    /// payload bytes over seconds, bits/s.
    pub goodput_bps: f64,
    /// Packets declared lost by the loss detection.
    pub lost: u64,
    /// Packets the sender says it sent (from its end of session).
    pub sender_packets: Option<u64>,
    /// Bytes (headers included) the sender says it sent (from its end of session).
    pub sender_bytes: Option<u64>,
    /// 1 − received/sent when the sender said how many it sent, else lost/(received + lost).
    pub loss_ratio: f64,
    /// Loss events.
    pub loss_events: u64,
    /// Data packets that arrived marked Congestion Experienced (ECN, RFC 3168); each counts as
    /// a lost packet in the loss events (RFC 5348 §5.1), not in `lost`.
    pub ecn_marked: u64,
    /// Time-weighted mean of p.
    pub mean_p: f64,
    /// p at the end.
    pub final_p: f64,
    /// R_m seen in data packets.
    pub rtt: RttSummary,
    /// Duplicates.
    pub duplicates: u64,
    /// Reordered packets.
    pub reordered: u64,
    /// Malformed or foreign packets the flow's core refused.
    pub refused: u64,
    /// Feedback packets produced.
    pub feedbacks: u64,
    /// Interarrival jitter of the data packets (RFC 3550 §6.4.1, [`Jitter`]), ms.
    pub jitter_ms: f64,
}

/// The result of a receiver run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReceiverReport {
    /// Every flow that ended, in order.
    pub streams: Vec<FlowSummary>,
    /// Receiver-wide counters.
    pub counters: ReceiverCounters,
    /// CPU use of the process while it ran.
    pub cpu_utilization_percent: CpuUtilization,
}

/// What the receiver tells its caller while running.
#[derive(Debug)]
pub enum ReceiverEvent<'a> {
    /// A flow began.
    FlowStarted {
        /// Flow id.
        flow_id: &'a str,
        /// Sender address.
        peer: SocketAddr,
    },
    /// An interval report.
    Interval(&'a ReceiverInterval),
    /// A flow ended.
    FlowEnded(&'a FlowSummary),
    /// A client asks for a flow to be sent to it (with [`ReceiverOptions::accept_reverse`]).
    ReverseRequested {
        /// The client's address: where the flow goes.
        peer: SocketAddr,
        /// What it asks for.
        request: control::ReverseRequest,
    },
}

/// One open flow.
struct Flow {
    session_id: u32,
    nonce: u32,
    peer: SocketAddr,
    receiver: Receiver,
    probe: ProbeGuard,
    first_packet: Instant,
    last_packet: Instant,
    interval_stats: ReceiverStats,
    p_integral: f64,
    last_accounted: Instant,
    rtt: RttAccumulator,
    last_rtt: Option<Duration>,
    jitter: Jitter,
    /// The feedback sent before the latest one (kept when lying with `replay`).
    previous_feedback: Vec<u8>,
}

/// Interarrival jitter as RFC 3550 §6.4.1 defines it for RTP: "the mean deviation (smoothed
/// absolute value) of the difference D in packet spacing at the receiver compared to the sender
/// for a pair of packets", J(i) = J(i-1) + (|D(i-1,i)| - J(i-1))/16, taken over the data
/// packets in order of arrival; here in nanoseconds from each packet's send timestamp (the
/// sender's clock) and arrival time (this receiver's): the clocks' offset cancels in D. It is
/// iperf3's `jitter_ms` for UDP.
#[derive(Debug, Clone, Copy, Default)]
pub struct Jitter {
    last_transit: Option<i128>,
    jitter_nanos: f64,
}

impl Jitter {
    /// Takes a packet sent at `sent_nanos` (sender's clock) that arrived at `arrival_nanos`.
    pub fn record(&mut self, sent_nanos: u64, arrival_nanos: u64) {
        let transit = i128::from(arrival_nanos) - i128::from(sent_nanos);
        if let Some(last) = self.last_transit {
            let difference = (transit - last).unsigned_abs() as f64;
            self.jitter_nanos += (difference - self.jitter_nanos) / 16.0;
        }
        self.last_transit = Some(transit);
    }

    /// The jitter, milliseconds.
    pub fn millis(&self) -> f64 {
        self.jitter_nanos / 1e6
    }
}

impl Flow {
    /// The flow its first data packet opens (`receiver` has taken it; it was sent at
    /// `sent_nanos` on the sender's clock and carried `packet_nonce`).
    fn new(
        session_id: u32,
        packet_nonce: u32,
        peer: SocketAddr,
        receiver: Receiver,
        probe: ProbeGuard,
        now: Instant,
        sent_nanos: u64,
    ) -> Flow {
        let mut flow = Flow {
            session_id,
            // The session token: the control datagrams' nonce (the lower half of a data
            // packet's nonce is its mark, which changes from packet to packet).
            nonce: packet_nonce & 0xffff_0000,
            peer,
            receiver,
            probe,
            first_packet: now,
            last_packet: now,
            interval_stats: ReceiverStats::default(),
            p_integral: 0.0,
            last_accounted: now,
            rtt: RttAccumulator::default(),
            last_rtt: None,
            jitter: Jitter::default(),
            previous_feedback: Vec::new(),
        };
        flow.jitter.record(sent_nanos, now.as_nanos());
        flow.record_rtt();
        flow
    }

    /// Takes one of the flow's data packets (sent at `sent_nanos`): the core's receiver, then
    /// this driver's accounting of it (p's time integral, jitter, the goodput counter, R_m).
    fn receive(
        &mut self,
        now: Instant,
        bytes: &[u8],
        sent_nanos: u64,
        ce: bool,
        delivered: Option<&std::sync::atomic::AtomicU64>,
    ) -> Result<(), ReceiveError> {
        self.account(now);
        let payload_before = self.receiver.stats().payload_bytes;
        self.receiver.handle_packet_ecn(now, bytes, ce)?;
        self.jitter.record(sent_nanos, now.as_nanos());
        if let Some(counter) = delivered {
            let delivered = self.receiver.stats().payload_bytes - payload_before;
            counter.fetch_add(delivered, std::sync::atomic::Ordering::Relaxed);
        }
        self.last_packet = now;
        self.record_rtt();
        Ok(())
    }

    /// Adds the sender's R_m to the flow's RTT summary each time it changes.
    fn record_rtt(&mut self) {
        if let Some(rtt) = self.receiver.rtt() {
            if self.last_rtt != Some(rtt) {
                self.rtt.record(rtt);
                self.last_rtt = Some(rtt);
            }
        }
    }

    /// The answer to the sender's END: this receiver's totals.
    fn acknowledgement(&self) -> EndAcknowledgement {
        let stats = self.receiver.stats();
        EndAcknowledgement {
            session_id: self.session_id,
            nonce: self.nonce,
            packets_received: stats.packets,
            bytes_received: stats.bytes,
            packets_lost: stats.lost,
            loss_events: stats.loss_events,
            loss_event_rate_raw: wire::encode_loss_event_rate(self.receiver.loss_event_rate()),
            duplicates: stats.duplicates,
            jitter_micros: (self.jitter.millis() * 1e3)
                .round()
                .clamp(0.0, f64::from(u32::MAX)) as u32,
        }
    }

    /// The flow's end-of-flow summary; `end` is the sender's (credible) END if it sent one,
    /// `timeline` the receiver's first packet.
    fn summary(
        &self,
        reason: FlowEnd,
        end: Option<EndOfSession>,
        timeline: Instant,
    ) -> FlowSummary {
        let stats = self.receiver.stats();
        let p = self.receiver.loss_event_rate();
        let seconds = (self.last_packet - self.first_packet).as_secs_f64();
        let per_second = |bytes: u64| {
            if seconds > 0.0 {
                bytes as f64 * 8.0 / seconds
            } else {
                0.0
            }
        };
        let sender_packets = end.map(|end| end.packets_sent);
        FlowSummary {
            flow_id: self.flow_id(),
            session_id: format!("{:08x}", self.session_id),
            peer: self.peer.to_string(),
            reason,
            start: (self.first_packet - timeline).as_secs_f64(),
            seconds,
            packets: stats.packets,
            bytes: stats.bytes,
            payload_bytes: stats.payload_bytes,
            bits_per_second: per_second(stats.bytes),
            goodput_bps: per_second(stats.payload_bytes),
            lost: stats.lost,
            sender_packets,
            sender_bytes: end.map(|end| end.bytes_sent),
            loss_ratio: loss_ratio(&stats, sender_packets),
            loss_events: stats.loss_events,
            ecn_marked: stats.ecn_marked,
            mean_p: if seconds > 0.0 {
                self.p_integral
                    / (self.last_accounted - self.first_packet)
                        .as_secs_f64()
                        .max(1e-9)
            } else {
                p
            },
            final_p: p,
            rtt: self.rtt.summary(),
            duplicates: stats.duplicates,
            reordered: stats.reordered,
            refused: stats.malformed + stats.foreign,
            feedbacks: stats.feedbacks,
            jitter_ms: self.jitter.millis(),
        }
    }

    fn flow_id(&self) -> String {
        format!("{:08x}-receiver", self.session_id)
    }

    fn snapshot(&self) -> FlowSnapshot {
        FlowSnapshot::TfrcReceiver(ReceiverSnapshot {
            stats: self.receiver.stats(),
            loss_event_rate: self.receiver.loss_event_rate(),
            x_recv: self.receiver.x_recv(),
            rtt: self.receiver.rtt(),
            veno_backlog: self.receiver.veno_backlog(),
        })
    }

    fn account(&mut self, now: Instant) {
        self.p_integral +=
            self.receiver.loss_event_rate() * (now - self.last_accounted).as_secs_f64();
        self.last_accounted = now;
    }
}

/// A flow's loss ratio: 1 − received/sent when the sender said how many it sent, else
/// lost/(received + lost).
fn loss_ratio(stats: &ReceiverStats, sender_packets: Option<u64>) -> f64 {
    match sender_packets {
        Some(sent) if sent > 0 => (1.0 - stats.packets as f64 / sent as f64).max(0.0),
        _ if stats.packets + stats.lost > 0 => {
            stats.lost as f64 / (stats.packets + stats.lost) as f64
        }
        _ => 0.0,
    }
}

/// A flow that ended, remembered for `linger`.
struct ClosedFlow {
    nonce: u32,
    acknowledgement: Option<EndAcknowledgement>,
    peer: SocketAddr,
    until: Instant,
}

/// A TFRC receiver bound to its socket, ready to [`UdpReceiver::run`].
pub struct UdpReceiver {
    options: ReceiverOptions,
    socket: UdpSocket,
    clock: Clock,
    flows: HashMap<u32, Flow>,
    closed: HashMap<u32, ClosedFlow>,
    counters: ReceiverCounters,
    summaries: Vec<FlowSummary>,
    timeline_start: Option<Instant>,
    csv: Option<FlowCsv>,
    /// GRO and batched receives ([`crate::batch`]).
    offload: Offload,
    buffers: ReceiveBuffers,
    feedback: [u8; wire::MAX_FEEDBACK_LEN],
    /// Makes and checks the cookies of new senders ([`control::Cookie`]).
    cookies: CookieJar,
    /// The latest reverse requests passed on, (address, request id), most recent last: a
    /// client repeats its request until the flow's first packet, each repeat is not a new flow.
    reverse_seen: std::collections::VecDeque<(SocketAddr, u32)>,
}

impl core::fmt::Debug for UdpReceiver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("UdpReceiver")
            .field("listen", &self.socket.local_addr().ok())
            .field("flows", &self.flows.len())
            .field("counters", &self.counters)
            .finish()
    }
}

impl UdpReceiver {
    /// Binds the socket (with a large receive buffer) and opens the log file if any.
    pub fn bind(options: ReceiverOptions) -> Result<UdpReceiver, ReceiverError> {
        if options.max_flows == 0 {
            return Err(ReceiverError::MaxFlows);
        }
        let listen = options.listen;
        let socket = Socket::new(
            Domain::for_address(listen),
            Type::DGRAM,
            Some(Protocol::UDP),
        )
        .map_err(io_error("cannot create a UDP socket"))?;
        set_large_receive_buffer(&socket);
        if options.accept_reverse {
            // Reverse flows leave from this port ([`crate::SenderOptions::share_port`]), which
            // takes SO_REUSEPORT on both sockets. A plain bind first, so that a port another
            // socket holds is still an error here rather than silently shared.
            std::net::UdpSocket::bind(listen)
                .map_err(io_error(format!("cannot listen on {listen}")))?;
            socket
                .set_reuse_port(true)
                .map_err(io_error("cannot share the port (SO_REUSEPORT)"))?;
        }
        socket
            .bind(&listen.into())
            .map_err(io_error(format!("cannot listen on {listen}")))?;
        socket
            .set_nonblocking(true)
            .map_err(io_error("cannot make the socket non-blocking"))?;
        let csv = match &options.log {
            Some((path, _)) => Some(FlowCsv::create(path, FlowKind::TfrcReceiver).map_err(
                io_error(format!("cannot create log file {}", path.display())),
            )?),
            None => None,
        };
        let socket: UdpSocket = socket.into();
        let offload =
            Offload::new(&socket, true).map_err(io_error("cannot set up the socket's offloads"))?;
        Ok(UdpReceiver {
            options,
            socket,
            offload,
            buffers: ReceiveBuffers::new(),
            clock: Clock::new(),
            flows: HashMap::new(),
            closed: HashMap::new(),
            counters: ReceiverCounters::default(),
            summaries: Vec::new(),
            timeline_start: None,
            csv,
            feedback: [0; wire::MAX_FEEDBACK_LEN],
            cookies: {
                use rand::RngCore;
                let mut random = rand::rngs::OsRng;
                CookieJar::new((random.next_u64(), random.next_u64()))
            },
            reverse_seen: std::collections::VecDeque::new(),
        })
    }

    /// The address the receiver listens on (with the port the system chose for port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Counters so far.
    pub fn counters(&self) -> ReceiverCounters {
        self.counters
    }

    /// Serves flows until `stop` is set (or, with `once`, until the first flow ends).
    pub fn run(
        mut self,
        stop: &AtomicBool,
        on_event: &mut dyn FnMut(ReceiverEvent<'_>),
    ) -> Result<ReceiverReport, ReceiverError> {
        lower_timer_slack();
        let cpu = CpuMeter::start();
        let started = self.clock.now();
        let log_interval = self.options.log.as_ref().map(|(_, interval)| *interval);
        let mut timers = OutputTimers::new(self.options.report_interval, log_interval);
        let mut next_announce = self.options.announce.as_ref().map(|_| started);
        while !stop.load(Ordering::Relaxed) {
            self.announce(started, &mut next_announce)?;
            self.read_datagrams(on_event);
            let now = self.clock.now();
            if self.timeline_start.is_none() {
                if let Some(first) = self.flows.values().map(|flow| flow.first_packet).min() {
                    self.timeline_start = Some(first);
                    timers.start(first);
                }
            }
            self.fire_timers(now);
            self.expire(now, on_event);
            if let Some((start, end)) = timers.report_due(now) {
                self.report_interval(start, end, on_event);
            }
            if timers.log_due(now) {
                self.write_log_rows(now);
            }
            for flow in self.flows.values() {
                flow.probe.probe().publish(flow.snapshot());
            }
            if self.options.once && !self.summaries.is_empty() && self.flows.is_empty() {
                break;
            }
            self.wait(now, timers.next_due().chain(next_announce));
        }
        // Stopped: close every open flow with its summary.
        let now = self.clock.now();
        let sessions: Vec<u32> = self.flows.keys().copied().collect();
        for session in sessions {
            self.close_flow(session, now, FlowEnd::Interrupted, None, on_event);
        }
        Ok(ReceiverReport {
            streams: core::mem::take(&mut self.summaries),
            counters: self.counters,
            cpu_utilization_percent: cpu.utilization(),
        })
    }

    /// Reverse mode ([`ReceiverOptions::announce`]): sends the request every `every` until
    /// the first flow starts; an error once `give_up_after` has passed without one.
    fn announce(
        &mut self,
        started: Instant,
        next_announce: &mut Option<Instant>,
    ) -> Result<(), ReceiverError> {
        let (Some(due), Some(announce)) = (*next_announce, &self.options.announce) else {
            return Ok(());
        };
        let now = self.clock.now();
        if self.timeline_start.is_some() || !self.summaries.is_empty() {
            *next_announce = None;
        } else if now - started >= announce.give_up_after {
            return Err(ReceiverError::NoAnswer {
                to: announce.to,
                after: announce.give_up_after,
            });
        } else if now >= due {
            if self
                .socket
                .send_to(&announce.datagram, announce.to)
                .is_err()
            {
                self.counters.send_errors += 1;
            }
            *next_announce = Some(now + announce.every);
        }
        Ok(())
    }

    /// Sleeps until a datagram arrives or the next timer, a flow's or one of the loop's
    /// (`loop_timers`), is due.
    fn wait(&self, now: Instant, loop_timers: impl Iterator<Item = Instant>) {
        let deadline = loop_timers.fold(self.next_deadline(now), |deadline, due| deadline.min(due));
        let timeout = if deadline == Instant::MAX {
            Some(Duration::from_secs(1))
        } else {
            Some(deadline - self.clock.now())
        };
        poll_readable(Some(self.socket.as_raw_fd()), timeout);
    }

    /// Passes a reverse request on once per (address, request id), if this receiver accepts
    /// them.
    fn handle_reverse(
        &mut self,
        bytes: &[u8],
        from: SocketAddr,
        on_event: &mut dyn FnMut(ReceiverEvent<'_>),
    ) {
        /// Requests remembered to recognise repeats.
        const REMEMBERED: usize = 64;
        let request = match control::ReverseRequest::parse(bytes) {
            Ok(request) if self.options.accept_reverse => request,
            _ => {
                self.counters.reverse_refused += 1;
                return;
            }
        };
        if self.reverse_seen.contains(&(from, request.request_id)) {
            return;
        }
        if self.reverse_seen.len() == REMEMBERED {
            self.reverse_seen.pop_front();
        }
        self.reverse_seen.push_back((from, request.request_id));
        self.counters.reverse_requests += 1;
        on_event(ReceiverEvent::ReverseRequested {
            peer: from,
            request,
        });
    }

    fn next_deadline(&self, now: Instant) -> Instant {
        let mut deadline = Instant::MAX;
        for flow in self.flows.values() {
            if let Some(timer) = flow.receiver.poll_timeout() {
                deadline = deadline.min(timer);
            }
            deadline = deadline.min(flow.last_packet + self.options.idle_timeout);
        }
        for closed in self.closed.values() {
            deadline = deadline.min(closed.until);
        }
        deadline.max(now)
    }

    fn read_datagrams(&mut self, on_event: &mut dyn FnMut(ReceiverEvent<'_>)) {
        let mut buffers = core::mem::take(&mut self.buffers);
        let mut read = 0;
        while read < MAX_READS_PER_ROUND {
            match self.offload.receive(&self.socket, &mut buffers) {
                Ok(()) => {
                    let now = self.clock.now();
                    for datagram in buffers.datagrams() {
                        read += 1;
                        self.counters.datagrams += 1;
                        // RFC 3168's Congestion Experienced, read from the IP header
                        // (`IP_RECVTOS`): the core counts it as a lost packet (RFC 5348 §5.1).
                        let ce = datagram.ecn == Some(EcnCodepoint::Ce);
                        self.dispatch(now, datagram.bytes, datagram.from, ce, on_event);
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                // WouldBlock, or an ICMP error from an earlier send: nothing more to read now.
                Err(_) => break,
            }
        }
        self.buffers = buffers;
    }

    /// Routes one datagram: a control datagram to its handler, a data packet to its flow or,
    /// from a session not seen before, to [`UdpReceiver::open_flow`].
    fn dispatch(
        &mut self,
        now: Instant,
        bytes: &[u8],
        from: SocketAddr,
        ce: bool,
        on_event: &mut dyn FnMut(ReceiverEvent<'_>),
    ) {
        if let Some(kind) = control::control_kind(bytes) {
            match kind {
                control::ControlKind::End => self.handle_end(now, bytes, from, on_event),
                control::ControlKind::Hello => self.answer_hello(now, bytes, from),
                control::ControlKind::Reverse => self.handle_reverse(bytes, from, on_event),
                _ => self.counters.malformed += 1,
            }
            return;
        }
        let Ok(packet) = Packet::new_checked(bytes) else {
            self.counters.malformed += 1;
            return;
        };
        if packet.kind() != PacketKind::Data {
            self.counters.malformed += 1;
            return;
        }
        let session = packet.session_id();
        if let Some(flow) = self.flows.get_mut(&session) {
            if from != flow.peer {
                self.counters.spoofed += 1;
                return;
            }
            let delivered = self.options.delivered_payload.as_deref();
            match flow.receive(now, bytes, packet.timestamp(), ce, delivered) {
                Ok(()) => {}
                Err(ReceiveError::ForeignSession) => self.counters.spoofed += 1,
                Err(_) => self.counters.malformed += 1,
            }
            self.send_feedback(session, now);
        } else if self.closed.contains_key(&session) {
            self.counters.stray += 1;
        } else {
            self.open_flow(now, bytes, &packet, from, ce, on_event);
        }
    }

    /// A data packet of a session not seen before: opens its flow if [`UdpReceiver::admit`]
    /// lets it in, and answers it.
    fn open_flow(
        &mut self,
        now: Instant,
        bytes: &[u8],
        packet: &Packet<&[u8]>,
        from: SocketAddr,
        ce: bool,
        on_event: &mut dyn FnMut(ReceiverEvent<'_>),
    ) {
        let Some(receiver) = self.admit(now, bytes, packet, from, ce) else {
            return;
        };
        if let Some(counter) = &self.options.delivered_payload {
            counter.fetch_add(
                receiver.stats().payload_bytes,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        let session = packet.session_id();
        let local_port = self.local_addr().map_or(0, |address| address.port());
        let flow_id = format!("{session:08x}-receiver");
        let probe = registry::register_tfrc(FlowKind::TfrcReceiver, flow_id.clone(), local_port);
        let flow = Flow::new(
            session,
            packet.nonce(),
            from,
            receiver,
            probe,
            now,
            packet.timestamp(),
        );
        self.flows.insert(session, flow);
        self.counters.flows_opened += 1;
        on_event(ReceiverEvent::FlowStarted {
            flow_id: &flow_id,
            peer: from,
        });
        self.send_feedback(session, now);
    }

    /// The core receiver for a new session, having taken its first packet, or `None` (and the
    /// reason counted): the packet must announce valid flow options with a cookie this
    /// receiver gave to this address for this session, and there must be room for a flow.
    fn admit(
        &mut self,
        now: Instant,
        bytes: &[u8],
        packet: &Packet<&[u8]>,
        from: SocketAddr,
        ce: bool,
    ) -> Option<Receiver> {
        let Ok(options) = FlowOptions::parse(packet.payload()) else {
            self.counters.malformed += 1;
            return None;
        };
        let elapsed = Duration::from_nanos(now.as_nanos());
        let session = packet.session_id();
        if !self
            .cookies
            .check(options.cookie, from, session, packet.nonce(), elapsed)
        {
            self.counters.unverified += 1;
            return None;
        }
        let Some(config) = options.receiver_config(packet.payload().len() as u32) else {
            self.counters.malformed += 1;
            return None;
        };
        if self.flows.len() + self.closed.len() >= self.options.max_flows {
            self.counters.rejected_flows += 1;
            return None;
        }
        let Ok(mut receiver) = Receiver::new(config) else {
            self.counters.malformed += 1;
            return None;
        };
        if receiver.handle_packet_ecn(now, bytes, ce).is_err() {
            self.counters.malformed += 1;
            return None;
        }
        Some(receiver)
    }

    fn handle_end(
        &mut self,
        now: Instant,
        bytes: &[u8],
        from: SocketAddr,
        on_event: &mut dyn FnMut(ReceiverEvent<'_>),
    ) {
        let Ok(end) = EndOfSession::parse(bytes) else {
            self.counters.malformed += 1;
            return;
        };
        if let Some(flow) = self.flows.get(&end.session_id) {
            if flow.nonce != end.nonce || flow.peer != from {
                self.counters.spoofed += 1;
                return;
            }
            let acknowledgement =
                self.close_flow(end.session_id, now, FlowEnd::Completed, Some(end), on_event);
            if let Some(acknowledgement) = acknowledgement {
                self.send_acknowledgement(&acknowledgement, from);
            }
            return;
        }
        match self.closed.get(&end.session_id) {
            Some(closed) if closed.nonce == end.nonce && closed.peer == from => {
                if let Some(acknowledgement) = closed.acknowledgement {
                    self.send_acknowledgement(&acknowledgement, from);
                }
            }
            Some(_) => self.counters.spoofed += 1,
            None => self.counters.stray += 1,
        }
    }

    /// Answers a hello with the cookie for its sender's address and session: no state kept.
    fn answer_hello(&mut self, now: Instant, bytes: &[u8], from: SocketAddr) {
        let Ok(hello) = Hello::parse(bytes) else {
            self.counters.malformed += 1;
            return;
        };
        let elapsed = Duration::from_nanos(now.as_nanos());
        let cookie = hello.answer(
            self.cookies
                .make(from, hello.session_id, hello.nonce, elapsed),
        );
        let mut buffer = [0u8; control::COOKIE_LEN];
        let length = cookie.emit(&mut buffer);
        match self.socket.send_to(&buffer[..length], from) {
            Ok(_) => self.counters.cookies_sent += 1,
            Err(_) => self.counters.send_errors += 1,
        }
    }

    fn send_acknowledgement(&mut self, acknowledgement: &EndAcknowledgement, to: SocketAddr) {
        let mut buffer = [0u8; control::END_ACK_LEN];
        let length = acknowledgement.emit(&mut buffer);
        if self.socket.send_to(&buffer[..length], to).is_err() {
            self.counters.send_errors += 1;
        }
    }

    /// Sends every feedback packet the flow's core has ready.
    fn send_feedback(&mut self, session: u32, now: Instant) {
        let Some(flow) = self.flows.get_mut(&session) else {
            return;
        };
        while let Some(mut length) = flow.receiver.poll_transmit(now, &mut self.feedback) {
            if !self.options.lies.is_empty() {
                length = Lie::apply_all(&self.options.lies, &mut self.feedback[..length]);
            }
            let mut copies = vec![&self.feedback[..length]];
            let replays = Lie::replays(&self.options.lies);
            if replays {
                copies.push(&self.feedback[..length]);
                if !flow.previous_feedback.is_empty() {
                    copies.push(&flow.previous_feedback);
                }
            }
            for copy in copies {
                match self.socket.send_to(copy, flow.peer) {
                    Ok(_) => self.counters.feedbacks_sent += 1,
                    Err(_) => self.counters.send_errors += 1,
                }
            }
            if replays {
                flow.previous_feedback = self.feedback[..length].to_vec();
            }
        }
    }

    fn fire_timers(&mut self, now: Instant) {
        let due: Vec<u32> = self
            .flows
            .values()
            .filter(|flow| {
                flow.receiver
                    .poll_timeout()
                    .is_some_and(|timer| timer <= now)
            })
            .map(|flow| flow.session_id)
            .collect();
        for session in due {
            if let Some(flow) = self.flows.get_mut(&session) {
                flow.receiver.handle_timeout(now);
            }
            self.send_feedback(session, now);
        }
    }

    fn expire(&mut self, now: Instant, on_event: &mut dyn FnMut(ReceiverEvent<'_>)) {
        self.closed.retain(|_, closed| closed.until > now);
        let idle: Vec<u32> = self
            .flows
            .values()
            .filter(|flow| now - flow.last_packet >= self.options.idle_timeout)
            .map(|flow| flow.session_id)
            .collect();
        for session in idle {
            self.close_flow(session, now, FlowEnd::IdleTimeout, None, on_event);
        }
    }

    /// Ends a flow: summary, last log row, closed entry. Returns the acknowledgement to send.
    /// The totals of an END that cannot be true ([`plausible_end`]) are not used.
    fn close_flow(
        &mut self,
        session: u32,
        now: Instant,
        reason: FlowEnd,
        end: Option<EndOfSession>,
        on_event: &mut dyn FnMut(ReceiverEvent<'_>),
    ) -> Option<EndAcknowledgement> {
        let mut flow = self.flows.remove(&session)?;
        let last = flow.last_packet;
        flow.account(last.max(flow.last_accounted));
        match reason {
            FlowEnd::Completed => self.counters.flows_completed += 1,
            FlowEnd::IdleTimeout => self.counters.flows_expired += 1,
            FlowEnd::Interrupted => {}
        }
        let acknowledgement = flow.acknowledgement();
        let end = self.credible_end(end, &flow);
        let timeline = self.timeline_start.unwrap_or(flow.first_packet);
        let summary = flow.summary(reason, end, timeline);
        // The last row of this flow, then the probe is finished (dropped with the flow).
        flow.probe.probe().publish(flow.snapshot());
        if let Some(csv) = &mut self.csv {
            let time = (now - flow.first_packet).as_secs_f64();
            let _ = csv.write(time, unix_time_seconds(), &flow.flow_id(), &flow.snapshot());
        }
        on_event(ReceiverEvent::FlowEnded(&summary));
        self.summaries.push(summary);
        let acknowledgement = (reason == FlowEnd::Completed).then_some(acknowledgement);
        self.closed.insert(
            session,
            ClosedFlow {
                nonce: flow.nonce,
                acknowledgement,
                peer: flow.peer,
                until: now + self.options.linger,
            },
        );
        acknowledgement
    }

    /// The sender's END, if it came and its totals can be true for this flow
    /// ([`plausible_end`]); one that cannot is counted and left out.
    fn credible_end(&mut self, end: Option<EndOfSession>, flow: &Flow) -> Option<EndOfSession> {
        let end = end?;
        let highest = flow.receiver.highest_sequence();
        if plausible_end(&end, &flow.receiver.stats(), highest) {
            Some(end)
        } else {
            self.counters.implausible_ends += 1;
            None
        }
    }

    fn report_interval(
        &mut self,
        start: Instant,
        end: Instant,
        on_event: &mut dyn FnMut(ReceiverEvent<'_>),
    ) {
        let seconds = (end - start).as_secs_f64();
        let timeline = self.timeline_start.unwrap_or(start);
        let mut streams = Vec::new();
        let mut sum = IntervalSum::default();
        let mut flows: Vec<&mut Flow> = self.flows.values_mut().collect();
        flows.sort_by_key(|flow| flow.first_packet);
        for flow in flows {
            let stats = flow.receiver.stats();
            let packets = stats.packets - flow.interval_stats.packets;
            let bytes = stats.bytes - flow.interval_stats.bytes;
            let lost = stats.lost - flow.interval_stats.lost;
            flow.interval_stats = stats;
            let bits_per_second = if seconds > 0.0 {
                bytes as f64 * 8.0 / seconds
            } else {
                0.0
            };
            sum.packets += packets;
            sum.bytes += bytes;
            sum.lost += lost;
            streams.push(FlowInterval {
                flow_id: flow.flow_id(),
                packets,
                bytes,
                bits_per_second,
                lost,
                p: flow.receiver.loss_event_rate(),
                rtt_s: flow.receiver.rtt().map(|rtt| rtt.as_secs_f64()),
            });
        }
        if streams.is_empty() {
            return;
        }
        sum.bits_per_second = if seconds > 0.0 {
            sum.bytes as f64 * 8.0 / seconds
        } else {
            0.0
        };
        let interval = ReceiverInterval {
            start: (start - timeline).as_secs_f64(),
            end: (end - timeline).as_secs_f64(),
            seconds,
            streams,
            sum,
        };
        on_event(ReceiverEvent::Interval(&interval));
    }

    fn write_log_rows(&mut self, now: Instant) {
        let Some(csv) = &mut self.csv else {
            return;
        };
        let unix = unix_time_seconds();
        let mut flows: Vec<&Flow> = self.flows.values().collect();
        flows.sort_by_key(|flow| flow.first_packet);
        for flow in flows {
            let time = (now - flow.first_packet).as_secs_f64();
            let _ = csv.write(time, unix, &flow.flow_id(), &flow.snapshot());
        }
    }
}

/// Asks for a large receive buffer: `SO_RCVBUFFORCE` (root may exceed `rmem_max`), else
/// `SO_RCVBUF`. Best effort.
fn set_large_receive_buffer(socket: &Socket) {
    if force_receive_buffer_size(socket, RECEIVE_BUFFER_BYTES).is_err() {
        let _ = socket.set_recv_buffer_size(RECEIVE_BUFFER_BYTES);
    }
}

/// `setsockopt(SOL_SOCKET, SO_RCVBUFFORCE, bytes)`, which socket2 does not wrap (it has only
/// `SO_RCVBUF`). Needs `CAP_NET_ADMIN`.
fn force_receive_buffer_size(socket: &Socket, bytes: usize) -> std::io::Result<()> {
    let size = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    crate::sockopt::set_int(
        socket.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_RCVBUFFORCE,
        size,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_follows_rfc_3550() {
        // Constant transit: no jitter. Then one packet 16 ms late: |D| = 16 ms and J = 0 +
        // (16 - 0)/16 = 1 ms; the next on time again: |D| = 16 ms, J = 1 + (16 - 1)/16 =
        // 1.9375 ms.
        let mut jitter = Jitter::default();
        for i in 0..10u64 {
            jitter.record(i * 20_000_000, i * 20_000_000 + 5_000_000_000);
        }
        assert_eq!(jitter.millis(), 0.0);
        jitter.record(200_000_000, 5_216_000_000);
        assert!((jitter.millis() - 1.0).abs() < 1e-12);
        jitter.record(220_000_000, 5_220_000_000);
        assert!(
            (jitter.millis() - 1.9375).abs() < 1e-12,
            "{}",
            jitter.millis()
        );
    }
}
