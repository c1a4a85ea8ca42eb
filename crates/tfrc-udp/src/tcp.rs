//! Kernel TCP bulk flows for comparison with TFRC: a sender that writes as fast as the socket
//! takes data with a chosen congestion control (`TCP_CONGESTION`), a receiver that reads and
//! discards, and both sampling `TCP_INFO` at the log interval — what the UMTS paper did with
//! Web100, on today's kernels.
//!
//! Each connection is registered with [`crate::registry`], so the logger can follow it too.

use core::time::Duration;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use socket2::{Domain, Protocol, Socket, Type};

use crate::clock::{unix_time_seconds, CpuMeter, CpuUtilization};
use crate::csvlog::FlowCsv;
use crate::registry::{self, FlowKind, FlowSnapshot, ProbeGuard};
use crate::schedule::OutputTimers;
use crate::sender::{EndReason, RttAccumulator, RttSummary};
use crate::tcp_info::TcpInfo;

/// Size of each write and read.
const CHUNK_BYTES: usize = 128 * 1024;
/// How often blocked reads and writes look at the stop flag.
const POLL_PERIOD: Duration = Duration::from_millis(100);
/// How long the sender waits for the receiver to read everything after the end.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the kernel lists the congestion controls that are loaded.
pub const AVAILABLE_CONGESTION_CONTROLS: &str =
    "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// Why a TCP run could not start or failed.
#[derive(Debug, thiserror::Error)]
pub enum TcpError {
    /// The congestion control could not be set.
    #[error(
        "cannot use TCP congestion control {name:?}: {source} (loaded: {available}; \
         as root, `modprobe tcp_{name}` may load it)"
    )]
    Congestion {
        /// The name asked for.
        name: String,
        /// The kernel's answer.
        source: std::io::Error,
        /// What the kernel lists as loaded.
        available: String,
    },
    /// A socket or file operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> TcpError {
    let context = context.into();
    move |source| TcpError::Io { context, source }
}

/// The congestion controls the kernel has loaded (empty if the list cannot be read).
pub fn available_congestion_controls() -> Vec<String> {
    std::fs::read_to_string(AVAILABLE_CONGESTION_CONTROLS)
        .map(|text| text.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// One TCP flow's part of an interval report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TcpStreamInterval {
    /// Flow id: `<local-port>-<remote-address>-<remote-port>`.
    pub flow_id: String,
    /// Bytes written (sender) or read (receiver) in the interval.
    pub bytes: u64,
    /// Bytes over the interval, bits/s.
    pub bits_per_second: f64,
    /// Congestion window, segments.
    pub cwnd: u32,
    /// Slow-start threshold, segments.
    pub ssthresh: u32,
    /// Smoothed RTT, seconds.
    pub rtt_s: f64,
    /// RTT variation, seconds.
    pub rttvar_s: f64,
    /// Retransmissions in the interval (`tcpi_total_retrans` difference).
    pub retransmits: u32,
    /// The kernel's delivery rate estimate, bits/s.
    pub delivery_rate_bps: Option<u64>,
}

/// An interval report of TCP flows.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TcpInterval {
    /// Start, seconds since the run (or the first connection) began.
    pub start: f64,
    /// End, seconds.
    pub end: f64,
    /// Length, seconds.
    pub seconds: f64,
    /// Per flow.
    pub streams: Vec<TcpStreamInterval>,
    /// Bytes of all flows in the interval.
    pub sum_bytes: u64,
    /// Their rate, bits/s.
    pub sum_bits_per_second: f64,
}

/// The end-of-flow summary of a TCP flow.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TcpFlowSummary {
    /// Flow id.
    pub flow_id: String,
    /// The other end.
    pub peer: String,
    /// Congestion control in use.
    pub congestion: String,
    /// Why the flow ended.
    pub reason: EndReason,
    /// Duration of the transfer, seconds.
    pub seconds: f64,
    /// Bytes written (sender) or read (receiver).
    pub bytes: u64,
    /// bytes over seconds, bits/s.
    pub bits_per_second: f64,
    /// Bytes the peer acknowledged (sender only).
    pub bytes_acked: Option<u64>,
    /// Retransmitted segments over the connection's life.
    pub total_retrans: u32,
    /// Smoothed RTT at every sample.
    pub rtt: RttSummary,
    /// `TCP_INFO` at the end.
    pub final_tcp_info: Option<TcpInfo>,
    /// CPU use of the process during the run.
    pub cpu_utilization_percent: CpuUtilization,
}

/// What a TCP sender run is asked to do.
#[derive(Debug, Clone)]
pub struct TcpSenderOptions {
    /// The receiver.
    pub destination: SocketAddr,
    /// How long to send.
    pub duration: Duration,
    /// Congestion control (`reno`, `cubic`, `bbr`, …); `None` = the system default.
    pub congestion: Option<String>,
    /// Interval of the reports given to the callback; `None` = none.
    pub report_interval: Option<Duration>,
    /// CSV file of `TCP_INFO` samples and its interval.
    pub log: Option<(PathBuf, Duration)>,
}

impl TcpSenderOptions {
    /// Defaults: 10 s with the system's congestion control, 1 s reports.
    pub fn new(destination: SocketAddr) -> TcpSenderOptions {
        TcpSenderOptions {
            destination,
            duration: Duration::from_secs(10),
            congestion: None,
            report_interval: Some(Duration::from_secs(1)),
            log: None,
        }
    }
}

/// Sets `TCP_CONGESTION` on a socket, with an error that lists what is loaded.
fn set_congestion(socket: &Socket, name: &str) -> Result<(), TcpError> {
    socket
        .set_tcp_congestion(name.as_bytes())
        .map_err(|source| TcpError::Congestion {
            name: name.to_string(),
            source,
            available: available_congestion_controls().join(" "),
        })
}

fn congestion_of(socket: &Socket) -> String {
    socket
        .tcp_congestion()
        .map(|name| {
            let name: Vec<u8> = name.into_iter().take_while(|&byte| byte != 0).collect();
            String::from_utf8_lossy(&name).into_owned()
        })
        .unwrap_or_default()
}

/// A connected TCP sender, ready to [`TcpSender::run`].
#[derive(Debug)]
pub struct TcpSender {
    options: TcpSenderOptions,
    stream: Arc<TcpStream>,
    congestion: String,
}

impl TcpSender {
    /// Creates the socket, sets the congestion control and connects (5 s timeout).
    pub fn connect(options: TcpSenderOptions) -> Result<TcpSender, TcpError> {
        let destination = options.destination;
        let socket = Socket::new(
            Domain::for_address(destination),
            Type::STREAM,
            Some(Protocol::TCP),
        )
        .map_err(io_error("cannot create a TCP socket"))?;
        if let Some(name) = &options.congestion {
            set_congestion(&socket, name)?;
        }
        socket
            .connect_timeout(&destination.into(), Duration::from_secs(5))
            .map_err(io_error(format!("cannot connect to {destination}")))?;
        let congestion = congestion_of(&socket);
        let stream: TcpStream = socket.into();
        stream
            .set_write_timeout(Some(POLL_PERIOD))
            .map_err(io_error("cannot set the write timeout"))?;
        Ok(TcpSender {
            options,
            stream: Arc::new(stream),
            congestion,
        })
    }

    /// The congestion control the socket uses.
    pub fn congestion(&self) -> &str {
        &self.congestion
    }

    /// The local address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.stream.local_addr()
    }

    /// The flow id used in logs.
    pub fn flow_id(&self) -> String {
        let local_port = self.local_addr().map_or(0, |address| address.port());
        registry::tcp_flow_id(local_port, self.options.destination)
    }

    /// Writes for the configured time (or until `stop`), sampling `TCP_INFO`, then closes the
    /// sending side and waits (up to 5 s) for the receiver to read everything.
    pub fn run(
        self,
        stop: &AtomicBool,
        on_interval: &mut dyn FnMut(&TcpInterval),
    ) -> Result<TcpFlowSummary, TcpError> {
        let cpu = CpuMeter::start();
        let flow_id = self.flow_id();
        let probe = registry::register_tcp(Arc::clone(&self.stream))
            .map_err(io_error("cannot read the socket's addresses"))?;
        let mut csv = open_log(self.options.log.as_ref())?;
        let written = Arc::new(AtomicU64::new(0));
        let writer_stop = Arc::new(AtomicBool::new(false));
        let writer = spawn_writer(
            Arc::clone(&self.stream),
            Arc::clone(&written),
            Arc::clone(&writer_stop),
        );

        let start = std::time::Instant::now();
        let mut sampler = Sampler::new(
            flow_id.clone(),
            self.options.report_interval,
            self.options.log.as_ref().map(|(_, interval)| *interval),
            start,
        );
        let reason =
            self.sample_while_writing(stop, &writer, &written, &mut sampler, &mut csv, on_interval);
        writer_stop.store(true, Ordering::Relaxed);
        let write_result = writer.join();
        let sending_ended = std::time::Instant::now();
        let seconds = (sending_ended - start).as_secs_f64();
        if sampler.report_due_partial(sending_ended) {
            sampler.report(
                sending_ended,
                self.stream.as_fd(),
                written.load(Ordering::Relaxed),
                on_interval,
            );
        }
        self.drain(stop);
        let final_info = final_tcp_info(&self.stream, csv.as_mut(), &flow_id, start);
        drop(probe);
        match write_result {
            Ok(Ok(())) => {}
            Ok(Err(error)) if sampler.rtt.summary().samples == 0 => {
                return Err(TcpError::Io {
                    context: "writing to the receiver failed".to_string(),
                    source: error,
                })
            }
            // The receiver went away mid-run: report what was sent.
            _ => {}
        }
        let bytes = written.load(Ordering::Relaxed);
        Ok(TcpFlowSummary {
            flow_id,
            peer: self.options.destination.to_string(),
            congestion: self.congestion.clone(),
            reason,
            seconds,
            bytes,
            bits_per_second: if seconds > 0.0 {
                bytes as f64 * 8.0 / seconds
            } else {
                0.0
            },
            bytes_acked: final_info.and_then(|info| info.bytes_acked),
            total_retrans: final_info.map_or(0, |info| info.total_retrans),
            rtt: sampler.rtt.summary(),
            final_tcp_info: final_info,
            cpu_utilization_percent: cpu.utilization(),
        })
    }

    /// Samples `TCP_INFO` (reports and log rows) while the writer thread writes, until the
    /// configured time has passed, the writer has stopped (the receiver went away) or `stop`
    /// is set; says which ended it.
    fn sample_while_writing(
        &self,
        stop: &AtomicBool,
        writer: &JoinHandle<std::io::Result<()>>,
        written: &AtomicU64,
        sampler: &mut Sampler,
        csv: &mut Option<FlowCsv>,
        on_interval: &mut dyn FnMut(&TcpInterval),
    ) -> EndReason {
        let end = sampler.start + self.options.duration;
        loop {
            let now = std::time::Instant::now();
            if stop.load(Ordering::Relaxed) {
                return EndReason::Interrupted;
            }
            if now >= end || writer.is_finished() {
                return EndReason::Time;
            }
            sampler.tick(
                now,
                self.stream.as_fd(),
                written.load(Ordering::Relaxed),
                csv.as_mut(),
                on_interval,
            );
            let wake = sampler.next_due().map_or(end, |due| due.min(end));
            std::thread::sleep(wake.saturating_duration_since(now).min(POLL_PERIOD));
        }
    }

    /// Lets the receiver read everything: closes this side and waits (up to
    /// [`DRAIN_TIMEOUT`], or until `stop`) for the receiver's end of stream.
    fn drain(&self, stop: &AtomicBool) {
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        let _ = self.stream.set_read_timeout(Some(POLL_PERIOD));
        let drain_until = std::time::Instant::now() + DRAIN_TIMEOUT;
        let mut scratch = [0u8; 4096];
        while std::time::Instant::now() < drain_until && !stop.load(Ordering::Relaxed) {
            match (&*self.stream).read(&mut scratch) {
                Ok(0) => break,
                Ok(_) => {}
                Err(error) if is_transient(&error) => {}
                Err(_) => break,
            }
        }
    }
}

/// The `TCP_INFO` log file asked for, created.
fn open_log(log: Option<&(PathBuf, Duration)>) -> Result<Option<FlowCsv>, TcpError> {
    let Some((path, _)) = log else {
        return Ok(None);
    };
    let csv = FlowCsv::create(path, FlowKind::Tcp).map_err(io_error(format!(
        "cannot create log file {}",
        path.display()
    )))?;
    Ok(Some(csv))
}

fn spawn_writer(
    stream: Arc<TcpStream>,
    written: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> JoinHandle<std::io::Result<()>> {
    std::thread::spawn(move || {
        let chunk = vec![0u8; CHUNK_BYTES];
        while !stop.load(Ordering::Relaxed) {
            match (&*stream).write(&chunk) {
                Ok(0) => return Ok(()),
                Ok(count) => {
                    written.fetch_add(count as u64, Ordering::Relaxed);
                }
                Err(error) if is_transient(&error) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    })
}

/// Samples one socket's `TCP_INFO` for interval reports and CSV rows.
struct Sampler {
    flow_id: String,
    report_interval: Option<Duration>,
    start: std::time::Instant,
    timers: OutputTimers<std::time::Instant>,
    interval_start: std::time::Instant,
    interval_bytes: u64,
    interval_retrans: u32,
    rtt: RttAccumulator,
}

impl Sampler {
    fn new(
        flow_id: String,
        report_interval: Option<Duration>,
        log_interval: Option<Duration>,
        start: std::time::Instant,
    ) -> Sampler {
        let mut timers = OutputTimers::new(report_interval, log_interval);
        timers.start(start);
        Sampler {
            flow_id,
            report_interval,
            start,
            timers,
            interval_start: start,
            interval_bytes: 0,
            interval_retrans: 0,
            rtt: RttAccumulator::default(),
        }
    }

    fn next_due(&self) -> Option<std::time::Instant> {
        self.timers
            .next_due()
            .reduce(|first, second| first.min(second))
    }

    fn tick(
        &mut self,
        now: std::time::Instant,
        socket: BorrowedFd<'_>,
        bytes: u64,
        csv: Option<&mut FlowCsv>,
        on_interval: &mut dyn FnMut(&TcpInterval),
    ) {
        if self.timers.log_due(now) {
            if let Some(csv) = csv {
                log_tcp_info(csv, socket, &self.flow_id, now - self.start);
            }
        }
        if let Some((_, due)) = self.timers.report_due(now) {
            self.report(due, socket, bytes, on_interval);
        }
    }

    fn report_due_partial(&self, now: std::time::Instant) -> bool {
        self.report_interval
            .is_some_and(|interval| now - self.interval_start >= interval / 10)
    }

    fn report(
        &mut self,
        end: std::time::Instant,
        socket: BorrowedFd<'_>,
        bytes: u64,
        on_interval: &mut dyn FnMut(&TcpInterval),
    ) {
        let seconds = (end - self.interval_start).as_secs_f64();
        let delta = bytes - self.interval_bytes;
        let info = TcpInfo::from_socket(socket).unwrap_or_default();
        if info.rtt_us > 0 {
            self.rtt
                .record(Duration::from_micros(u64::from(info.rtt_us)));
        }
        let bits_per_second = if seconds > 0.0 {
            delta as f64 * 8.0 / seconds
        } else {
            0.0
        };
        let stream = TcpStreamInterval {
            flow_id: self.flow_id.clone(),
            bytes: delta,
            bits_per_second,
            cwnd: info.snd_cwnd,
            ssthresh: info.snd_ssthresh,
            rtt_s: f64::from(info.rtt_us) / 1e6,
            rttvar_s: f64::from(info.rttvar_us) / 1e6,
            retransmits: info.total_retrans.saturating_sub(self.interval_retrans),
            delivery_rate_bps: info.delivery_rate.map(|rate| rate.saturating_mul(8)),
        };
        let interval = TcpInterval {
            start: (self.interval_start - self.start).as_secs_f64(),
            end: (end - self.start).as_secs_f64(),
            seconds,
            streams: vec![stream],
            sum_bytes: delta,
            sum_bits_per_second: bits_per_second,
        };
        self.interval_start = end;
        self.interval_bytes = bytes;
        self.interval_retrans = info.total_retrans;
        on_interval(&interval);
    }
}

/// What a TCP receiver is asked to do.
#[derive(Debug, Clone)]
pub struct TcpReceiverOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Most connections served at once; more are closed at once.
    pub max_flows: usize,
    /// Interval of the reports; `None` = none.
    pub report_interval: Option<Duration>,
    /// One CSV file of `TCP_INFO` samples of every connection, and its interval.
    pub log: Option<(PathBuf, Duration)>,
    /// Stop after the first connection ends.
    pub once: bool,
}

impl TcpReceiverOptions {
    /// Defaults: 64 connections, 1 s reports, runs until stopped.
    pub fn new(listen: SocketAddr) -> TcpReceiverOptions {
        TcpReceiverOptions {
            listen,
            max_flows: 64,
            report_interval: Some(Duration::from_secs(1)),
            log: None,
            once: false,
        }
    }
}

/// What the TCP receiver tells its caller while running.
#[derive(Debug)]
pub enum TcpReceiverEvent<'a> {
    /// A connection was accepted.
    FlowStarted {
        /// Flow id.
        flow_id: &'a str,
        /// The sender.
        peer: SocketAddr,
        /// Congestion control of the receiving socket.
        congestion: &'a str,
    },
    /// An interval report.
    Interval(&'a TcpInterval),
    /// A connection ended.
    FlowEnded(&'a TcpFlowSummary),
}

/// One accepted connection.
struct Connection {
    flow_id: String,
    peer: SocketAddr,
    stream: Arc<TcpStream>,
    congestion: String,
    received: Arc<AtomicU64>,
    reader: Option<JoinHandle<()>>,
    probe: ProbeGuard,
    started: std::time::Instant,
    interval_bytes: u64,
    interval_retrans: u32,
    rtt: RttAccumulator,
}

/// A listening TCP receiver, ready to [`TcpReceiver::run`].
#[derive(Debug)]
pub struct TcpReceiver {
    options: TcpReceiverOptions,
    listener: TcpListener,
}

impl TcpReceiver {
    /// Binds the listening socket.
    pub fn bind(options: TcpReceiverOptions) -> Result<TcpReceiver, TcpError> {
        let listener = TcpListener::bind(options.listen)
            .map_err(io_error(format!("cannot listen on {}", options.listen)))?;
        listener
            .set_nonblocking(true)
            .map_err(io_error("cannot make the listener non-blocking"))?;
        Ok(TcpReceiver { options, listener })
    }

    /// The address listened on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves connections until `stop` is set (or, with `once`, the first one ends).
    pub fn run(
        self,
        stop: &AtomicBool,
        on_event: &mut dyn FnMut(TcpReceiverEvent<'_>),
    ) -> Result<Vec<TcpFlowSummary>, TcpError> {
        let cpu = CpuMeter::start();
        let mut csv = open_log(self.options.log.as_ref())?;
        let log_interval = self.options.log.as_ref().map(|(_, interval)| *interval);
        let mut served = Served {
            connections: Vec::new(),
            summaries: Vec::new(),
            timeline: None,
            timers: OutputTimers::new(self.options.report_interval, log_interval),
        };
        let reader_stop = Arc::new(AtomicBool::new(false));
        loop {
            let interrupted = stop.load(Ordering::Relaxed);
            if interrupted {
                reader_stop.store(true, Ordering::Relaxed);
            }
            self.accept_waiting(stop, &reader_stop, &mut served, on_event);
            let now = std::time::Instant::now();
            if served.timers.log_due(now) {
                if let Some(csv) = csv.as_mut() {
                    for connection in &served.connections {
                        let elapsed = now - connection.started;
                        log_tcp_info(csv, &connection.stream, &connection.flow_id, elapsed);
                    }
                }
            }
            if let Some((start, due)) = served.timers.report_due(now) {
                let origin = served.timeline.unwrap_or(now);
                report_connections(&mut served.connections, origin, start, due, on_event);
            }
            served.finish_ended(interrupted, &cpu, csv.as_mut(), on_event);
            if interrupted && served.connections.is_empty() {
                break;
            }
            if self.options.once && !served.summaries.is_empty() && served.connections.is_empty() {
                break;
            }
            let wake = served
                .timers
                .next_due()
                .fold(now + POLL_PERIOD / 4, |wake, due| wake.min(due));
            std::thread::sleep(wake.saturating_duration_since(std::time::Instant::now()));
        }
        Ok(served.summaries)
    }

    /// Accepts the connections waiting (beyond `max_flows` they are closed at once); the
    /// first one starts the timeline and the output timers.
    fn accept_waiting(
        &self,
        stop: &AtomicBool,
        reader_stop: &Arc<AtomicBool>,
        served: &mut Served,
        on_event: &mut dyn FnMut(TcpReceiverEvent<'_>),
    ) {
        while !stop.load(Ordering::Relaxed) {
            let Ok((stream, peer)) = self.listener.accept() else {
                break;
            };
            if served.connections.len() >= self.options.max_flows {
                continue; // dropped: closed at once
            }
            let Some(connection) = accept(stream, peer, reader_stop) else {
                continue;
            };
            if served.timeline.is_none() {
                let now = std::time::Instant::now();
                served.timeline = Some(now);
                served.timers.start(now);
            }
            on_event(TcpReceiverEvent::FlowStarted {
                flow_id: &connection.flow_id,
                peer,
                congestion: &connection.congestion,
            });
            served.connections.push(connection);
        }
    }
}

/// What a TCP receiver's loop keeps: its connections, the summaries of those that ended, and
/// its timeline and output timers (from the first connection).
struct Served {
    connections: Vec<Connection>,
    summaries: Vec<TcpFlowSummary>,
    timeline: Option<std::time::Instant>,
    timers: OutputTimers<std::time::Instant>,
}

impl Served {
    /// Ends the connections whose reader finished (end of stream, error or stop).
    fn finish_ended(
        &mut self,
        interrupted: bool,
        cpu: &CpuMeter,
        mut csv: Option<&mut FlowCsv>,
        on_event: &mut dyn FnMut(TcpReceiverEvent<'_>),
    ) {
        let mut index = 0;
        while index < self.connections.len() {
            let finished = self.connections[index]
                .reader
                .as_ref()
                .is_none_or(|reader| reader.is_finished());
            if finished {
                let connection = self.connections.swap_remove(index);
                let summary = finish_connection(connection, interrupted, cpu, csv.as_deref_mut());
                on_event(TcpReceiverEvent::FlowEnded(&summary));
                self.summaries.push(summary);
            } else {
                index += 1;
            }
        }
    }
}

fn accept(stream: TcpStream, peer: SocketAddr, stop: &Arc<AtomicBool>) -> Option<Connection> {
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(POLL_PERIOD)).ok()?;
    let congestion = congestion_of(&socket2::SockRef::from(&stream));
    let stream = Arc::new(stream);
    let probe = registry::register_tcp(Arc::clone(&stream)).ok()?;
    let local_port = stream.local_addr().ok()?.port();
    let received = Arc::new(AtomicU64::new(0));
    let reader = {
        let stream = Arc::clone(&stream);
        let received = Arc::clone(&received);
        let stop = Arc::clone(stop);
        std::thread::spawn(move || {
            let mut buffer = vec![0u8; CHUNK_BYTES];
            while !stop.load(Ordering::Relaxed) {
                match (&*stream).read(&mut buffer) {
                    Ok(0) => return,
                    Ok(count) => {
                        received.fetch_add(count as u64, Ordering::Relaxed);
                    }
                    Err(error) if is_transient(&error) => {}
                    Err(_) => return,
                }
            }
        })
    };
    Some(Connection {
        flow_id: registry::tcp_flow_id(local_port, peer),
        peer,
        stream,
        congestion,
        received,
        reader: Some(reader),
        probe,
        started: std::time::Instant::now(),
        interval_bytes: 0,
        interval_retrans: 0,
        rtt: RttAccumulator::default(),
    })
}

fn report_connections(
    connections: &mut [Connection],
    origin: std::time::Instant,
    start: std::time::Instant,
    end: std::time::Instant,
    on_event: &mut dyn FnMut(TcpReceiverEvent<'_>),
) {
    if connections.is_empty() {
        return;
    }
    let seconds = (end - start).as_secs_f64();
    let rate = |bytes: u64| {
        if seconds > 0.0 {
            bytes as f64 * 8.0 / seconds
        } else {
            0.0
        }
    };
    let mut streams = Vec::new();
    let mut sum = 0;
    for connection in connections.iter_mut() {
        let bytes = connection.received.load(Ordering::Relaxed);
        let delta = bytes - connection.interval_bytes;
        connection.interval_bytes = bytes;
        let info = TcpInfo::from_socket(&connection.stream).unwrap_or_default();
        if info.rtt_us > 0 {
            connection
                .rtt
                .record(Duration::from_micros(u64::from(info.rtt_us)));
        }
        sum += delta;
        streams.push(TcpStreamInterval {
            flow_id: connection.flow_id.clone(),
            bytes: delta,
            bits_per_second: rate(delta),
            cwnd: info.snd_cwnd,
            ssthresh: info.snd_ssthresh,
            rtt_s: f64::from(info.rtt_us) / 1e6,
            rttvar_s: f64::from(info.rttvar_us) / 1e6,
            retransmits: info
                .total_retrans
                .saturating_sub(connection.interval_retrans),
            delivery_rate_bps: info.delivery_rate.map(|rate| rate.saturating_mul(8)),
        });
        connection.interval_retrans = info.total_retrans;
    }
    let interval = TcpInterval {
        start: (start - origin).as_secs_f64(),
        end: (end - origin).as_secs_f64(),
        seconds,
        streams,
        sum_bytes: sum,
        sum_bits_per_second: rate(sum),
    };
    on_event(TcpReceiverEvent::Interval(&interval));
}

fn finish_connection(
    mut connection: Connection,
    interrupted: bool,
    cpu: &CpuMeter,
    csv: Option<&mut FlowCsv>,
) -> TcpFlowSummary {
    if let Some(reader) = connection.reader.take() {
        let _ = reader.join();
    }
    let final_info = final_tcp_info(
        &connection.stream,
        csv,
        &connection.flow_id,
        connection.started,
    );
    let seconds = connection.started.elapsed().as_secs_f64();
    let bytes = connection.received.load(Ordering::Relaxed);
    connection.probe.probe().finish();
    TcpFlowSummary {
        flow_id: connection.flow_id.clone(),
        peer: connection.peer.to_string(),
        congestion: connection.congestion.clone(),
        reason: if interrupted {
            EndReason::Interrupted
        } else {
            EndReason::Time
        },
        seconds,
        bytes,
        bits_per_second: if seconds > 0.0 {
            bytes as f64 * 8.0 / seconds
        } else {
            0.0
        },
        bytes_acked: None,
        total_retrans: final_info.map_or(0, |info| info.total_retrans),
        rtt: connection.rtt.summary(),
        final_tcp_info: final_info,
        cpu_utilization_percent: cpu.utilization(),
    }
}

/// Writes one `tcp_info` row of `socket` (flow `flow_id`, `elapsed` since it started); a
/// socket whose `tcp_info` cannot be read writes nothing.
fn log_tcp_info(csv: &mut FlowCsv, socket: impl AsFd, flow_id: &str, elapsed: Duration) {
    if let Ok(info) = TcpInfo::from_socket(socket) {
        write_tcp_row(csv, info, flow_id, elapsed);
    }
}

/// A finished flow's last `TCP_INFO` (if it can be read), also written as its last log row
/// (flow `flow_id`, started at `started`).
fn final_tcp_info(
    socket: impl AsFd,
    csv: Option<&mut FlowCsv>,
    flow_id: &str,
    started: std::time::Instant,
) -> Option<TcpInfo> {
    let info = TcpInfo::from_socket(socket).ok()?;
    if let Some(csv) = csv {
        write_tcp_row(csv, info, flow_id, started.elapsed());
    }
    Some(info)
}

/// One log row: `info` of flow `flow_id`, `elapsed` since it started.
fn write_tcp_row(csv: &mut FlowCsv, info: TcpInfo, flow_id: &str, elapsed: Duration) {
    let _ = csv.write(
        elapsed.as_secs_f64(),
        unix_time_seconds(),
        flow_id,
        &FlowSnapshot::Tcp(info),
    );
}

/// An I/O error that only means "try again": a socket timeout or an interrupted call.
fn is_transient(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}
