//! A TFRC sender over a UDP socket: one thread, one event loop.
//!
//! # The loop
//! 1. Read every datagram waiting on the socket: feedback goes to the core, which validates it
//!    (session id, nonce, echo) and counts what it rejects. This comes before the timers, so a
//!    report that has arrived is never overtaken by the no-feedback timer.
//! 2. Fire the core's no-feedback timer when due.
//! 3. Send every packet the schedule allows now (the core's `next_send_time`, and with
//!    `max_rate` the application's own schedule) in one batch: one system call with UDP GSO
//!    ([`crate::batch`]). A sender the kernel scheduled late catches up at most
//!    max(t_ipi, t_gran) of its schedule (RFC 5348 §4.6; t_gran is at least 1 ms here, see
//!    [`SenderOptions::config`]).
//! 4. Publish the state for loggers; write interval reports and CSV rows when due.
//! 5. Wait for the earliest deadline with the [`Waiter`] (sleep, then spin), waking early on
//!    feedback.
//!
//! The socket is *connected* to the receiver, so the kernel drops datagrams from any other
//! address; datagrams forged with the receiver's address are caught by the core's checks.
//!
//! # End of a run
//! When the time is up (or the stop flag is set, e.g. by SIGINT) the sender stops sending and
//! repeats an [`EndOfSession`] datagram every max(2·RTT, 20 ms) until the receiver answers with
//! its totals ([`EndAcknowledgement`]) or `end_timeout` has passed.

use core::time::Duration;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use rand::RngCore;
use socket2::{Domain, Protocol, Socket, Type};
use tfrc_proto::{wire, CappedApplication, Config, Instant, Sender, SenderState, SenderStats};

use crate::batch::{EcnCodepoint, Offload};
use crate::clock::{unix_time_seconds, Clock, CpuMeter, CpuUtilization};
use crate::control::{
    Cookie, EndAcknowledgement, EndOfSession, FlowOptions, Hello, FLOW_OPTIONS_LEN,
};
use crate::csvlog::FlowCsv;
use crate::pacing::{
    Histogram, PacingSummary, RecentLateness, TimerCalibration, Waiter,
    MAX_MEASURED_TIMER_GRANULARITY,
};
use crate::registry::{self, FlowKind, FlowSnapshot, ProbeGuard, SenderSnapshot};

/// Most packets sent in one loop iteration (when the schedule is behind); fewer when the GSO
/// limit of 64 KiB per call is lower. The socket is read between batches, so feedback waits at
/// most one batch (tens of microseconds), well within the no-feedback timer (t_RTO = 4R is
/// ~100 µs on loopback).
const MAX_BATCH: usize = 64;
/// Without GSO (one system call per packet, about 5 µs each), at most this many packets per
/// loop iteration, so that the socket is still read every few packets.
const MAX_UNBATCHED: usize = 4;
/// Socket buffer sizes asked for (the kernel may cap them at `net.core.{w,r}mem_max`).
const SEND_BUFFER_BYTES: usize = 4 << 20;
const RECEIVE_BUFFER_BYTES: usize = 1 << 20;

/// What a sender run is asked to do.
#[derive(Debug, Clone)]
pub struct SenderOptions {
    /// The receiver.
    pub destination: SocketAddr,
    /// Local address to send from; default: any address of the destination's family.
    pub bind: Option<SocketAddr>,
    /// How long to send.
    pub duration: Duration,
    /// The core's configuration (segment size, gTFRC target rate, RTT_ref, Veno, …). Unless
    /// `keep_timer_granularity`, its `timer_granularity` (t_gran, default 1 ms) is raised to
    /// the timer error measured at start if that is larger, and while the flow runs to the
    /// largest lateness of the sender's wake-ups over the last second (at most 10 ms) when that
    /// is larger still. t_gran bounds both how early a packet may leave
    /// (t_delta = min(t_ipi/2, t_gran/2)) and how much of its schedule a sender the kernel
    /// preempted may catch up in one burst (max(t_ipi, t_gran)); the 1 ms default is of the
    /// order of a Linux scheduler time slice, so that a sender preempted on a busy machine
    /// keeps its rate.
    pub config: Config,
    /// Use `config.timer_granularity` as it is, even below the measured timer error, for the
    /// whole run.
    pub keep_timer_granularity: bool,
    /// Application rate cap in bytes/s: the application only has data at this rate, so the
    /// sender is data-limited above it (like `iperf -b`). `None` = bulk (always data to send).
    pub max_rate: Option<f64>,
    /// Interval of the reports given to the callback; `None` = no interval reports.
    pub report_interval: Option<Duration>,
    /// CSV file of the sender's state and its sampling interval.
    pub log: Option<(PathBuf, Duration)>,
    /// How long to wait for the receiver's end acknowledgement.
    pub end_timeout: Duration,
    /// How long to wait for the receiver's cookie before the first data packet
    /// ([`crate::control::Hello`]); the run's time starts once it has come.
    pub connect_timeout: Duration,
    /// Run the sending thread in the real-time `SCHED_FIFO` class at this priority, so that
    /// pacing holds on a busy machine (see [`crate::pacing::set_realtime_priority`]).
    pub realtime_priority: Option<i32>,
    /// Bind `bind`'s port beside a receiver that listens there (`SO_REUSEPORT`; both sockets
    /// set it): the flow then leaves from the port its client asked on, so that a relay or NAT
    /// that saw the request lets it back (a reverse flow of `tfrc recv`). The sender's socket is
    /// connected to the destination, and the kernel gives a connected socket every datagram
    /// of its 4-tuple, the listening socket the rest.
    pub share_port: bool,
    /// Send the data packets ECN-capable, ECT(0) in the IP header (RFC 3168), so that an AQM
    /// on the path (the emulator's RED/RIO with `ecn = true`) marks them CE instead of dropping
    /// them; the receiver counts a mark as a loss. Control datagrams stay not-ECT.
    pub ecn: bool,
}

impl SenderOptions {
    /// Defaults: 10 s of bulk data with a plain RFC 5348 configuration, 1 s reports.
    pub fn new(destination: SocketAddr) -> SenderOptions {
        SenderOptions {
            destination,
            bind: None,
            duration: Duration::from_secs(10),
            config: Config::default(),
            keep_timer_granularity: false,
            max_rate: None,
            report_interval: Some(Duration::from_secs(1)),
            log: None,
            end_timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(5),
            realtime_priority: None,
            share_port: false,
            ecn: false,
        }
    }
}

/// Why a sender could not run.
#[derive(Debug, thiserror::Error)]
pub enum SenderError {
    /// The configuration was refused by the core.
    #[error("invalid TFRC configuration: {0}")]
    Config(#[from] tfrc_proto::ConfigError),
    /// The packet size leaves no room for the flow options this driver puts in every payload.
    #[error("packet size {got} is too small: it must be at least {min} bytes (the flow options every payload carries)")]
    PacketTooSmall {
        /// Smallest size.
        min: usize,
        /// Size given.
        got: u32,
    },
    /// The configuration cannot be announced to the receiver.
    #[error(transparent)]
    FlowOptions(#[from] crate::control::FlowOptionsError),
    /// `max_rate` is not a positive finite number.
    #[error("max rate must be a positive number of bytes/s, got {0}")]
    MaxRate(f64),
    /// No cookie came back from the receiver within the connect timeout.
    #[error("no TFRC receiver answered at {destination} within {waited:?}{reason}")]
    NoReceiver {
        /// Where the hellos went.
        destination: SocketAddr,
        /// How long the sender waited.
        waited: Duration,
        /// What the system said, if anything (", the port is unreachable").
        reason: &'static str,
    },
    /// The run was stopped (SIGINT) before the receiver answered.
    #[error("stopped before the receiver answered")]
    Interrupted,
    /// Real-time scheduling was asked for and refused.
    #[error("cannot use real-time scheduling (needs root or CAP_SYS_NICE): {0}")]
    Realtime(std::io::Error),
    /// A socket operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> SenderError {
    let context = context.into();
    move |source| SenderError::Io { context, source }
}

/// One interval report of a running sender.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SenderInterval {
    /// Start of the interval, seconds since the first packet.
    pub start: f64,
    /// End of the interval, seconds since the first packet.
    pub end: f64,
    /// Length of the interval, seconds.
    pub seconds: f64,
    /// Data packets sent in the interval.
    pub packets: u64,
    /// Bytes sent in the interval (TFRC headers included: the UDP payload).
    pub bytes: u64,
    /// Bytes over seconds, in bits/s.
    pub bits_per_second: f64,
    /// The core's sending rate at the end of the interval, bits/s.
    pub sending_rate_bps: f64,
    /// X_recv of the latest feedback, bits/s.
    pub x_recv_bps: f64,
    /// Loss event rate p at the end of the interval.
    pub p: f64,
    /// Smoothed RTT at the end of the interval, seconds (None before the first feedback).
    pub rtt_s: Option<f64>,
    /// Feedback packets accepted in the interval.
    pub feedbacks: u64,
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The requested time was up.
    Time,
    /// The stop flag was set (SIGINT).
    Interrupted,
}

/// Summary statistics of RTT values, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct RttSummary {
    /// Number of values.
    pub samples: u64,
    /// Mean.
    pub mean_s: Option<f64>,
    /// Smallest.
    pub min_s: Option<f64>,
    /// Largest.
    pub max_s: Option<f64>,
}

/// Accumulates RTT values.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RttAccumulator {
    samples: u64,
    sum: f64,
    min: f64,
    max: f64,
}

impl RttAccumulator {
    pub(crate) fn record(&mut self, rtt: Duration) {
        let seconds = rtt.as_secs_f64();
        if self.samples == 0 {
            self.min = seconds;
            self.max = seconds;
        }
        self.samples += 1;
        self.sum += seconds;
        self.min = self.min.min(seconds);
        self.max = self.max.max(seconds);
    }

    pub(crate) fn summary(&self) -> RttSummary {
        if self.samples == 0 {
            return RttSummary::default();
        }
        RttSummary {
            samples: self.samples,
            mean_s: Some(self.sum / self.samples as f64),
            min_s: Some(self.min),
            max_s: Some(self.max),
        }
    }
}

/// What the receiver reported at the end.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ReceiverTotals {
    /// Data packets received.
    pub packets: u64,
    /// Bytes received (TFRC headers included).
    pub bytes: u64,
    /// Packets the receiver declared lost.
    pub lost: u64,
    /// Loss events.
    pub loss_events: u64,
    /// p at the end.
    pub p: f64,
    /// Duplicates.
    pub duplicates: u64,
    /// 1 − received/sent.
    pub loss_ratio: f64,
    /// Bytes received over the sending time, bits/s.
    pub bits_per_second: f64,
    /// Interarrival jitter the receiver measured (RFC 3550 §6.4.1), ms.
    pub jitter_ms: f64,
}

/// The result of a sender run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SenderReport {
    /// Why the run ended.
    pub reason: EndReason,
    /// Time from the first packet to the end of sending, seconds.
    pub seconds: f64,
    /// Data packets sent.
    pub packets: u64,
    /// Bytes sent (TFRC headers included: the UDP payload).
    pub bytes: u64,
    /// Payload bytes after the TFRC header.
    pub payload_bytes: u64,
    /// bytes / seconds in bits/s.
    pub bits_per_second: f64,
    /// Datagrams the socket refused (buffer full, peer unreachable).
    pub send_errors: u64,
    /// ICMP errors reported on the socket (e.g. port unreachable: no receiver).
    pub icmp_errors: u64,
    /// The core's counters (feedbacks accepted, each kind refused, X_recv capped, no-feedback
    /// expiries).
    #[serde(skip)]
    pub stats: SenderStats,
    /// The core's state at the end.
    #[serde(skip)]
    pub final_state: SenderState,
    /// Time-weighted mean of p since the first feedback.
    pub mean_p: f64,
    /// Smoothed RTT after every accepted feedback.
    pub rtt: RttSummary,
    /// Error between scheduled and actual send times.
    pub pacing: PacingSummary,
    /// The largest t_gran (RFC 5348 §4.6) in force during the run, microseconds: the start's
    /// value, or more when the operating system woke the sender later than that (the largest
    /// lateness of a second, at most 10 ms), unless `--timer-granularity` fixed it.
    pub timer_granularity_max_us: f64,
    /// CPU use of the process during the run.
    pub cpu_utilization_percent: CpuUtilization,
    /// The receiver's totals, if it acknowledged the end of the session.
    pub receiver: Option<ReceiverTotals>,
}

/// A TFRC sender bound to its socket, ready to [`UdpSender::run`].
#[derive(Debug)]
pub struct UdpSender {
    options: SenderOptions,
    socket: UdpSocket,
    offload: Offload,
    clock: Clock,
    waiter: Waiter,
    calibration: TimerCalibration,
    session_id: u32,
    /// The key of the data packets' marks ([`tfrc_proto::wire::PacketMarker`]); never sent.
    key: u64,
    /// The nonce of the control datagrams (END): the session token in the upper half, as
    /// the receiver learns it from the data packets.
    nonce: u32,
    config: Config,
}

impl UdpSender {
    /// Opens and connects the socket, measures the timer and draws the session id and nonce
    /// from the operating system's random source.
    pub fn new(options: SenderOptions) -> Result<UdpSender, SenderError> {
        options.config.validate()?;
        // The payload of a full packet must hold the flow options (under the ns-2 profile
        // without `useHeaders_`, s counts the header too).
        let inside_s = wire::DATA_HEADER_LEN - options.config.header_outside_s();
        let min = FLOW_OPTIONS_LEN + inside_s;
        if (options.config.packet_size as usize) < min {
            return Err(SenderError::PacketTooSmall {
                min,
                got: options.config.packet_size,
            });
        }
        FlowOptions::from_config(&options.config)?;
        if let Some(rate) = options.max_rate {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(SenderError::MaxRate(rate));
            }
        }
        let destination = options.destination;
        let domain = Domain::for_address(destination);
        let socket = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))
            .map_err(io_error("cannot create a UDP socket"))?;
        // Best effort: the kernel caps these at its maximum.
        let _ = socket.set_send_buffer_size(SEND_BUFFER_BYTES);
        let _ = socket.set_recv_buffer_size(RECEIVE_BUFFER_BYTES);
        let bind = options.bind.unwrap_or_else(|| {
            if destination.is_ipv4() {
                SocketAddr::from(([0, 0, 0, 0], 0))
            } else {
                SocketAddr::from(([0u16; 8], 0))
            }
        });
        if options.share_port {
            socket
                .set_reuse_port(true)
                .map_err(io_error("cannot share the port (SO_REUSEPORT)"))?;
        }
        socket
            .bind(&bind.into())
            .map_err(io_error(format!("cannot bind to {bind}")))?;
        socket
            .connect(&destination.into())
            .map_err(io_error(format!("cannot connect to {destination}")))?;
        socket
            .set_nonblocking(true)
            .map_err(io_error("cannot make the socket non-blocking"))?;
        let socket: UdpSocket = socket.into();
        let offload = Offload::new(&socket, false)
            .map_err(io_error("cannot set up the socket's offloads"))?;

        let clock = Clock::new();
        let (waiter, calibration) = Waiter::calibrate(clock);
        let mut config = options.config.clone();
        if !options.keep_timer_granularity {
            config.timer_granularity = config
                .timer_granularity
                .max(Duration::from_secs_f64(calibration.granularity_us / 1e6));
        }
        let mut random = rand::rngs::OsRng;
        let key = random.next_u64();
        Ok(UdpSender {
            session_id: random.next_u32(),
            key,
            nonce: u32::from(tfrc_proto::wire::session_token(key)) << 16,
            options,
            socket,
            offload,
            clock,
            waiter,
            calibration,
            config,
        })
    }

    /// "gso" when a system call sends several packets ([`crate::batch`]), else "none".
    pub fn send_offload(&self) -> &'static str {
        self.offload.send_mode()
    }

    /// The local address packets leave from.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// The session id of this flow.
    pub fn session_id(&self) -> u32 {
        self.session_id
    }

    /// The flow id used in logs: `<session-id-hex>-sender`.
    pub fn flow_id(&self) -> String {
        format!("{:08x}-sender", self.session_id)
    }

    /// What the timer calibration measured.
    pub fn calibration(&self) -> TimerCalibration {
        self.calibration
    }

    /// The configuration the core runs with (timer granularity included).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The options of this run.
    pub fn options(&self) -> &SenderOptions {
        &self.options
    }

    /// Asks the receiver for its cookie ([`crate::control::Hello`]): a hello at once, again
    /// 200 ms later and at doubling intervals (at most 1 s apart) until a cookie for this
    /// session comes back or `connect_timeout` has passed. Returns the cookie and the time
    /// since the last hello was sent: a round trip the receiver cannot shorten (it is at most
    /// the real one, an answer to an earlier hello arriving sooner after the last), which the
    /// sender takes as the least RTT sample ([`tfrc_proto::Sender::set_rtt_floor`]).
    fn handshake(&self, stop: &AtomicBool) -> Result<(u64, Duration), SenderError> {
        let hello = Hello {
            session_id: self.session_id,
            nonce: self.nonce,
        };
        let mut request = [0u8; crate::control::HELLO_LEN];
        let length = hello.emit(&mut request);
        let started = std::time::Instant::now();
        let deadline = started + self.options.connect_timeout;
        let mut interval = Duration::from_millis(200);
        let mut next_hello = started;
        let mut last_hello = started;
        let mut unreachable = false;
        let mut answer = [0u8; 2048];
        loop {
            let now = std::time::Instant::now();
            if stop.load(Ordering::Relaxed) {
                return Err(SenderError::Interrupted);
            }
            if now >= deadline {
                return Err(SenderError::NoReceiver {
                    destination: self.options.destination,
                    waited: self.options.connect_timeout,
                    reason: if unreachable {
                        ", the port is unreachable"
                    } else {
                        ""
                    },
                });
            }
            if now >= next_hello {
                // A send refused by an earlier ICMP error is retried at the next hello.
                let _ = self.socket.send(&request[..length]);
                last_hello = std::time::Instant::now();
                next_hello = now + interval;
                interval = (interval * 2).min(Duration::from_secs(1));
            }
            match self.socket.recv(&mut answer) {
                Ok(received) => {
                    if let Ok(cookie) = Cookie::parse(&answer[..received]) {
                        if cookie.session_id == self.session_id && cookie.nonce == self.nonce {
                            return Ok((cookie.cookie, last_hello.elapsed()));
                        }
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => {
                    unreachable = true;
                }
                Err(_) => {
                    let wake = next_hello.min(deadline);
                    let _ = crate::pacing::poll_readable(
                        Some(self.socket.as_raw_fd()),
                        Some(wake.saturating_duration_since(std::time::Instant::now())),
                    );
                }
            }
        }
    }

    /// Sends for the configured time (or until `stop` is set), calling `on_interval` at every
    /// report interval, then ends the session with the receiver.
    pub fn run(
        self,
        stop: &AtomicBool,
        on_interval: &mut dyn FnMut(&SenderInterval),
    ) -> Result<SenderReport, SenderError> {
        if let Some(priority) = self.options.realtime_priority {
            crate::pacing::set_realtime_priority(priority).map_err(SenderError::Realtime)?;
        }
        let (cookie, handshake_rtt) = self.handshake(stop)?;
        let mut run = Run::new(self, cookie)?;
        run.sender.set_rtt_floor(handshake_rtt);
        run.send_phase(stop, on_interval)?;
        run.end_phase();
        Ok(run.report())
    }
}

/// Packets of `segment` bytes one loop iteration may send.
fn batch_capacity(offload: &Offload, segment: usize) -> usize {
    match offload.max_segments(segment) {
        1 => MAX_UNBATCHED,
        gso => gso.min(MAX_BATCH),
    }
}

/// The state of one run.
struct Run {
    flow: UdpSender,
    sender: Sender,
    probe: ProbeGuard,
    flow_options: FlowOptions,
    /// Packets waiting for one system call: `queued` packets of `segment` bytes each.
    batch: Vec<u8>,
    segment: usize,
    queued: usize,
    datagram: Vec<u8>,
    start: Instant,
    sending_ended: Instant,
    /// The application's data under `max_rate`; `None` for bulk data.
    application: Option<CappedApplication>,
    pacing: Histogram,
    /// How late the recent wake-ups were, for t_gran (unless it was given).
    lateness: RecentLateness,
    /// The largest t_gran in force during the run.
    largest_timer_granularity: Duration,
    rtt: RttAccumulator,
    send_errors: u64,
    icmp_errors: u64,
    p_integral: f64,
    p_since: Option<Instant>,
    last_accounted: Instant,
    cpu: CpuMeter,
    csv: Option<FlowCsv>,
    reason: EndReason,
    acknowledgement: Option<EndAcknowledgement>,
    interval_start: Instant,
    interval_stats: SenderStats,
}

impl Run {
    fn new(flow: UdpSender, cookie: u64) -> Result<Run, SenderError> {
        let now = flow.clock.now();
        let sender = Sender::new(flow.config.clone(), flow.session_id, flow.key, now)?;
        let segment = sender.max_payload() + wire::DATA_HEADER_LEN;
        let local_port = flow.local_addr().map_or(0, |address| address.port());
        let probe = registry::register_tfrc(FlowKind::TfrcSender, flow.flow_id(), local_port);
        let csv = match &flow.options.log {
            Some((path, _)) => Some(FlowCsv::create(path, FlowKind::TfrcSender).map_err(
                io_error(format!("cannot create log file {}", path.display())),
            )?),
            None => None,
        };
        let run = Run {
            flow_options: FlowOptions {
                cookie,
                ..FlowOptions::from_config(&flow.config)?
            },
            batch: vec![0; segment * batch_capacity(&flow.offload, segment)],
            segment,
            queued: 0,
            datagram: vec![0; 2048],
            sender,
            probe,
            start: now,
            sending_ended: now,
            application: flow
                .options
                .max_rate
                .and_then(|rate| CappedApplication::new(flow.config.packet_size, rate, now)),
            pacing: Histogram::new(),
            lateness: RecentLateness::new(now),
            largest_timer_granularity: flow.config.timer_granularity,
            rtt: RttAccumulator::default(),
            send_errors: 0,
            icmp_errors: 0,
            p_integral: 0.0,
            p_since: None,
            last_accounted: now,
            cpu: CpuMeter::start(),
            csv,
            reason: EndReason::Time,
            acknowledgement: None,
            interval_start: now,
            interval_stats: SenderStats::default(),
            flow,
        };
        // Readers of the registry see the flow's state from its registration on.
        run.probe.probe().publish(run.snapshot());
        Ok(run)
    }

    fn snapshot(&self) -> FlowSnapshot {
        FlowSnapshot::TfrcSender(SenderSnapshot {
            state: self.sender.state(),
            stats: self.sender.stats(),
            send_errors: self.send_errors,
            max_rate: self.flow.options.max_rate,
        })
    }

    fn write_log_row(&mut self, now: Instant) {
        let snapshot = self.snapshot();
        let flow_id = self.flow.flow_id();
        let time = (now - self.start).as_secs_f64();
        if let Some(csv) = &mut self.csv {
            // A full disk must not stop the flow; the row is lost.
            let _ = csv.write(time, unix_time_seconds(), &flow_id, &snapshot);
        }
    }

    /// Accumulates the time-weighted p up to `now`.
    fn account(&mut self, now: Instant) {
        if let Some(since) = self.p_since {
            self.p_integral +=
                self.sender.state().p * (now - self.last_accounted.max(since)).as_secs_f64();
        }
        self.last_accounted = now;
    }

    fn send_phase(
        &mut self,
        stop: &AtomicBool,
        on_interval: &mut dyn FnMut(&SenderInterval),
    ) -> Result<(), SenderError> {
        let fd = self.flow.socket.as_raw_fd();
        let end = self.start + self.flow.options.duration;
        let report_interval = self.flow.options.report_interval;
        let log_interval = self
            .flow
            .options
            .log
            .as_ref()
            .map(|(_, interval)| *interval);
        let mut next_report = report_interval.map(|interval| self.start + interval);
        let mut next_log = log_interval.map(|_| self.start);
        loop {
            let mut now = self.flow.clock.now();
            if stop.load(Ordering::Relaxed) {
                self.reason = EndReason::Interrupted;
                break;
            }
            if now >= end {
                break;
            }
            // Feedback first: a report waiting in the socket must not be missed by the timer.
            self.read_socket(false);
            now = self.flow.clock.now();
            if now >= self.sender.no_feedback_deadline() {
                self.sender.handle_timeout(now);
            }
            now = self.send_due_packets(now, end)?;
            self.adapt_timer_granularity(now);
            self.account(now);
            self.probe.probe().publish(self.snapshot());

            if let (Some(due), Some(interval)) = (next_report, report_interval) {
                if now >= due {
                    self.report_interval(due, on_interval);
                    next_report = Some(due + interval);
                }
            }
            if let (Some(due), Some(interval)) = (next_log, log_interval) {
                if now >= due {
                    self.write_log_row(now);
                    // Skip missed rows rather than writing a burst of them.
                    let mut next = due + interval;
                    if next <= now {
                        next = now + interval;
                    }
                    next_log = Some(next);
                }
            }

            self.wait(now, end, [next_report, next_log], fd);
        }
        self.sending_ended = self.flow.clock.now();
        // A last partial interval, as iperf3 prints one.
        if let Some(interval) = report_interval {
            let now = self.sending_ended;
            if now - self.interval_start >= interval / 10 {
                self.report_interval(now, on_interval);
            }
        }
        Ok(())
    }

    /// Sends what the schedule (the core's and the application's) allows at `now`, before
    /// `end`, in one batch; returns the clock after.
    fn send_due_packets(&mut self, mut now: Instant, end: Instant) -> Result<Instant, SenderError> {
        while self.queued * self.segment < self.batch.len() {
            let core_ready = self.sender.next_send_time();
            let data_at = self.application.map_or(core_ready, |app| app.next_data());
            let scheduled = core_ready.max(data_at);
            if now < scheduled || now >= end {
                break;
            }
            if data_at > core_ready {
                // The core could have sent earlier but the application had no data.
                self.sender.note_data_limited(now);
            }
            self.queue_packet(now, scheduled)?;
            let t_gran = self.sender.config().timer_granularity;
            if let Some(app) = &mut self.application {
                app.consume(now, t_gran);
            }
            now = self.flow.clock.now();
        }
        self.flush();
        Ok(now)
    }

    /// Waits on socket `fd` until the next packet may go, the no-feedback timer fires, the
    /// run ends or an output (`outputs`: report, log row) is due; or until feedback arrives.
    fn wait(&mut self, now: Instant, end: Instant, outputs: [Option<Instant>; 2], fd: RawFd) {
        let send_at = self.sender.next_send_time().max(
            self.application
                .map_or(Instant::ZERO, |app| app.next_data()),
        );
        let mut deadline = send_at.min(self.sender.no_feedback_deadline()).min(end);
        for due in outputs.into_iter().flatten() {
            deadline = deadline.min(due);
        }
        if deadline > now {
            // Readable or interrupted: loop around to read the socket or see the stop flag.
            // While t_gran is raised (the system woke this thread later than the start's
            // t_gran in the last second), sleep without spinning.
            if self.sender.config().timer_granularity > self.flow.config.timer_granularity {
                let _ = self.flow.waiter.sleep_until(deadline, Some(fd));
            } else {
                let _ = self.flow.waiter.wait_until(deadline, Some(fd));
            }
        }
    }

    /// Builds the next packet into the batch.
    fn queue_packet(&mut self, now: Instant, scheduled: Instant) -> Result<(), SenderError> {
        let start = self.queued * self.segment;
        let slot = &mut self.batch[start..start + self.segment];
        match self.sender.send_padded(now, slot) {
            Ok(length) if length == self.segment => {}
            // Cannot happen: the schedule was checked and every packet has the segment size.
            outcome => {
                return Err(SenderError::Io {
                    context: "the core refused a packet".to_string(),
                    source: std::io::Error::other(format!("{outcome:?}")),
                })
            }
        }
        // Cannot fail either: the segment size was checked to hold the flow options.
        if let Err(error) = self.flow_options.emit(&mut slot[wire::DATA_HEADER_LEN..]) {
            return Err(SenderError::Io {
                context: "the flow options do not fit the packet".to_string(),
                source: std::io::Error::other(error),
            });
        }
        self.pacing.record((now - scheduled).as_nanos() as u64);
        self.lateness.record(now, scheduled);
        self.queued += 1;
        Ok(())
    }

    /// Gives the core t_gran = the start's value or, when larger, the largest lateness of the
    /// last second (at most [`MAX_MEASURED_TIMER_GRANULARITY`]): the granularity at which the
    /// operating system schedules this thread now. A sender descheduled for 5 ms on a busy
    /// machine then sends the 5 ms of packets it owes when it runs again, instead of losing
    /// them for good (with t_gran = 1 ms, a 100 Mb/s flow through `tfrc emulate` with one core
    /// busy sent 60 Mb/s while X allowed 80). Not when `--timer-granularity` was given.
    fn adapt_timer_granularity(&mut self, now: Instant) {
        if self.flow.options.keep_timer_granularity {
            return;
        }
        let measured = self
            .lateness
            .largest(now)
            .min(MAX_MEASURED_TIMER_GRANULARITY);
        let t_gran = self.flow.config.timer_granularity.max(measured);
        if t_gran != self.sender.config().timer_granularity {
            self.sender.set_timer_granularity(t_gran);
            self.largest_timer_granularity = self.largest_timer_granularity.max(t_gran);
        }
    }

    /// Sends the queued packets: one system call with GSO.
    fn flush(&mut self) {
        if self.queued == 0 {
            return;
        }
        let contents = &self.batch[..self.queued * self.segment];
        let outcome = self.flow.offload.send(
            &self.flow.socket,
            self.flow.options.destination,
            contents,
            self.segment,
            self.flow.options.ecn.then_some(EcnCodepoint::Ect0),
        );
        // Refused (buffer full: lost, as a router would drop them) or unreachable (ICMP).
        self.send_errors += (outcome.refused + outcome.unreachable) as u64;
        if outcome.unreachable > 0 {
            self.icmp_errors += 1;
        }
        self.queued = 0;
    }

    /// Reads every waiting datagram. Returns true if an end acknowledgement for this session
    /// arrived (only taken when `end_expected`).
    fn read_socket(&mut self, end_expected: bool) -> bool {
        let mut acknowledged = false;
        let mut datagram = core::mem::take(&mut self.datagram);
        loop {
            match self.flow.socket.recv(&mut datagram) {
                Ok(length) => {
                    let now = self.flow.clock.now();
                    let bytes = &datagram[..length];
                    if let Ok(acknowledgement) = EndAcknowledgement::parse(bytes) {
                        if acknowledgement.session_id == self.flow.session_id
                            && acknowledgement.nonce == self.flow.nonce
                            && end_expected
                        {
                            self.acknowledgement = Some(acknowledgement);
                            acknowledged = true;
                        }
                        // Otherwise: stray or spoofed; nothing to act on.
                        continue;
                    }
                    if Cookie::parse(bytes).is_ok() {
                        // A late answer to a repeated hello: nothing to act on.
                        continue;
                    }
                    // p changes with this feedback: account for the time spent at the old p.
                    self.account(now);
                    if self.sender.handle_packet(now, bytes).is_ok() {
                        if self.p_since.is_none() {
                            self.p_since = Some(now);
                        }
                        if let Some(rtt) = self.sender.state().rtt {
                            self.rtt.record(rtt);
                        }
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => {
                    self.icmp_errors += 1;
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.icmp_errors += 1;
                    break;
                }
            }
        }
        self.datagram = datagram;
        acknowledged
    }

    fn report_interval(&mut self, end: Instant, on_interval: &mut dyn FnMut(&SenderInterval)) {
        let stats = self.sender.stats();
        let state = self.sender.state();
        let seconds = (end - self.interval_start).as_secs_f64();
        let bytes = stats.bytes - self.interval_stats.bytes;
        let interval = SenderInterval {
            start: (self.interval_start - self.start).as_secs_f64(),
            end: (end - self.start).as_secs_f64(),
            seconds,
            packets: stats.packets - self.interval_stats.packets,
            bytes,
            bits_per_second: if seconds > 0.0 {
                bytes as f64 * 8.0 / seconds
            } else {
                0.0
            },
            sending_rate_bps: state.sending_rate * 8.0,
            x_recv_bps: state.x_recv * 8.0,
            p: state.p,
            rtt_s: state.rtt.map(|rtt| rtt.as_secs_f64()),
            feedbacks: stats.feedbacks - self.interval_stats.feedbacks,
        };
        self.interval_start = end;
        self.interval_stats = stats;
        on_interval(&interval);
    }

    fn end_phase(&mut self) {
        let fd = self.flow.socket.as_raw_fd();
        let stats = self.sender.stats();
        let end = EndOfSession {
            session_id: self.flow.session_id,
            nonce: self.flow.nonce,
            packets_sent: stats.packets,
            bytes_sent: stats.bytes,
            duration_nanos: (self.sending_ended - self.start).as_nanos() as u64,
        };
        let mut buffer = [0u8; crate::control::END_LEN];
        let length = end.emit(&mut buffer);
        let repeat = self
            .sender
            .state()
            .rtt
            .map_or(Duration::from_millis(20), |rtt| rtt * 2)
            .max(Duration::from_millis(20));
        let give_up = self.flow.clock.now() + self.flow.options.end_timeout;
        let icmp_before = self.icmp_errors;
        loop {
            let now = self.flow.clock.now();
            if now >= give_up {
                break;
            }
            let _ = self.flow.socket.send(&buffer[..length]);
            let next = (now + repeat).min(give_up);
            loop {
                if self.read_socket(true) {
                    break;
                }
                // Nobody listens: the kernel reported port unreachable.
                if self.icmp_errors > icmp_before + 2 {
                    break;
                }
                if self.flow.clock.now() >= next {
                    break;
                }
                let _ = crate::pacing::poll_readable(Some(fd), Some(next - self.flow.clock.now()));
            }
            if self.acknowledgement.is_some() || self.icmp_errors > icmp_before + 2 {
                break;
            }
        }
        let now = self.flow.clock.now();
        self.account(now);
        self.probe.probe().publish(self.snapshot());
        if self.csv.is_some() {
            self.write_log_row(now);
        }
    }

    fn report(&self) -> SenderReport {
        let stats = self.sender.stats();
        let seconds = (self.sending_ended - self.start).as_secs_f64();
        let per_second = |bytes: u64| {
            if seconds > 0.0 {
                bytes as f64 * 8.0 / seconds
            } else {
                0.0
            }
        };
        let accounted = self
            .p_since
            .map_or(0.0, |since| (self.last_accounted - since).as_secs_f64());
        let receiver = self.acknowledgement.map(|ack| ReceiverTotals {
            packets: ack.packets_received,
            bytes: ack.bytes_received,
            lost: ack.packets_lost,
            loss_events: ack.loss_events,
            p: ack.loss_event_rate(),
            duplicates: ack.duplicates,
            loss_ratio: if stats.packets > 0 {
                (1.0 - ack.packets_received as f64 / stats.packets as f64).max(0.0)
            } else {
                0.0
            },
            bits_per_second: per_second(ack.bytes_received),
            jitter_ms: f64::from(ack.jitter_micros) / 1e3,
        });
        SenderReport {
            reason: self.reason,
            seconds,
            packets: stats.packets,
            bytes: stats.bytes,
            payload_bytes: stats.payload_bytes,
            bits_per_second: per_second(stats.bytes),
            send_errors: self.send_errors,
            icmp_errors: self.icmp_errors,
            stats,
            final_state: self.sender.state(),
            mean_p: if accounted > 0.0 {
                self.p_integral / accounted
            } else {
                self.sender.state().p
            },
            rtt: self.rtt.summary(),
            pacing: PacingSummary::of(&self.pacing),
            timer_granularity_max_us: self.largest_timer_granularity.as_secs_f64() * 1e6,
            cpu_utilization_percent: self.cpu.utilization(),
            receiver,
        }
    }
}
