//! The one-call flow logger: give it local ports and an interval, and it writes one CSV file per
//! matching flow, TFRC or TCP, until stopped.
//!
//! ```no_run
//! use core::time::Duration;
//! // Log every flow on local ports 5000 to 5010, ten rows a second, into the current directory.
//! let logger = tfrc_udp::logger::start("5000-5010", Duration::from_millis(100))?;
//! // ... run transfers (TFRC flows of this crate, or any TCP connection on the host) ...
//! let summary = logger.stop();
//! println!("{} files", summary.files.len());
//! # Ok::<(), tfrc_udp::logger::LoggerError>(())
//! ```
//!
//! # What is logged
//! - **TFRC flows** driven by this crate in the same process (senders and receiver flows, found
//!   in [`crate::registry`]) whose local UDP port matches.
//! - **TCP connections** whose local port matches: connections of *any* process, found with the
//!   kernel's sock_diag interface (as `ss -tin` does) with their `tcp_info`; and sockets opened
//!   through this crate, sampled with `getsockopt(TCP_INFO)` (used when sock_diag is unavailable,
//!   e.g. in a restricted container).
//!
//! # Files
//! `<proto>_<flow-id>_<unix-timestamp>.csv` in the chosen directory, where `proto` is `tfrc` or
//! `tcp`, the flow id is `<session-id-hex>-sender` / `<session-id-hex>-receiver` for TFRC and
//! `<local-port>-<remote-address>-<remote-port>` for TCP, and the timestamp is the Unix time (whole
//! seconds) when the logger first saw the flow. Columns: [`crate::csvlog`] and
//! `docs/udp-tools.md`. Each row is written with one `write` call, so a killed process leaves every
//! row written before the kill.

use core::time::Duration;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::clock::{unix_time_seconds, unix_time_whole_seconds};
use crate::csvlog::FlowCsv;
use crate::diag;
use crate::port_set::{ParseError, PortSet};
use crate::registry::{self, FlowKind, FlowProbe, FlowSnapshot};
use crate::schedule::next_log_time;

/// Why the logger could not start.
#[derive(Debug, thiserror::Error)]
pub enum LoggerError {
    /// The port token could not be read.
    #[error("invalid port token: {0}")]
    Ports(#[from] ParseError),
    /// A zero sampling interval.
    #[error("the sampling interval must be positive")]
    Interval,
    /// The directory does not exist or is not writable.
    #[error("cannot write log files into {path}: {source}")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The sampling thread could not be started.
    #[error("cannot start the logger thread: {0}")]
    Thread(std::io::Error),
}

/// Which flows to log, how often and where.
#[derive(Debug, Clone)]
pub struct LoggerConfig {
    /// Local ports whose flows are logged.
    pub ports: PortSet,
    /// Sampling interval.
    pub interval: Duration,
    /// Directory of the CSV files.
    pub directory: PathBuf,
    /// Log TFRC flows of this process.
    pub tfrc: bool,
    /// Log TCP connections (any process, via sock_diag; own sockets via TCP_INFO).
    pub tcp: bool,
}

impl LoggerConfig {
    /// TFRC and TCP flows on `ports`, every `interval`, into the current directory.
    pub fn new(ports: PortSet, interval: Duration) -> LoggerConfig {
        LoggerConfig {
            ports,
            interval,
            directory: PathBuf::from("."),
            tfrc: true,
            tcp: true,
        }
    }
}

/// One file the logger wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedFile {
    /// Path of the CSV file.
    pub path: PathBuf,
    /// Protocol: `tfrc` or `tcp`.
    pub protocol: &'static str,
    /// Flow id.
    pub flow_id: String,
    /// Data rows written.
    pub rows: u64,
}

/// What the logger did, returned by [`FlowLogger::stop`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoggerSummary {
    /// Every file, in the order flows were first seen.
    pub files: Vec<LoggedFile>,
    /// Files that could not be created or written (full disk, permissions).
    pub write_errors: u64,
    /// True when sock_diag worked (other processes' TCP connections were visible).
    pub kernel_tcp_visible: bool,
}

/// A running logger; stops (writing a last row for every open flow) on [`FlowLogger::stop`] or
/// when dropped.
#[derive(Debug)]
pub struct FlowLogger {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<LoggerSummary>>,
}

/// Starts logging every flow whose local port matches `ports` (`5000`, `5000-5010` or
/// `5000,5002`) every `interval`, into the current directory.
pub fn start(ports: &str, interval: Duration) -> Result<FlowLogger, LoggerError> {
    start_with(LoggerConfig::new(PortSet::parse(ports)?, interval))
}

/// Starts a logger with a full configuration.
pub fn start_with(config: LoggerConfig) -> Result<FlowLogger, LoggerError> {
    if config.interval.is_zero() {
        return Err(LoggerError::Interval);
    }
    check_directory(&config.directory)?;
    let (stop, stopped) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("tfrc-flow-logger".to_string())
        .spawn(move || Sampler::new(config).run(&stopped))
        .map_err(LoggerError::Thread)?;
    Ok(FlowLogger {
        stop: Some(stop),
        thread: Some(thread),
    })
}

fn check_directory(directory: &Path) -> Result<(), LoggerError> {
    let metadata = std::fs::metadata(directory).map_err(|source| LoggerError::Directory {
        path: directory.to_path_buf(),
        source,
    })?;
    if !metadata.is_dir() {
        return Err(LoggerError::Directory {
            path: directory.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    Ok(())
}

impl FlowLogger {
    /// Stops sampling, writes a last row for every open flow and returns what was written.
    pub fn stop(mut self) -> LoggerSummary {
        self.shutdown()
    }

    fn shutdown(&mut self) -> LoggerSummary {
        drop(self.stop.take());
        self.thread
            .take()
            .and_then(|thread| thread.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for FlowLogger {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.shutdown();
        }
    }
}

/// Where an open file's rows come from.
enum Source {
    /// A probe of this process (TFRC flow or own TCP socket).
    Probe(Arc<FlowProbe>),
    /// A kernel TCP socket, identified by its inode.
    Kernel(u32),
}

struct OpenFile {
    csv: FlowCsv,
    flow_id: String,
    protocol: &'static str,
    source: Source,
    first_seen: std::time::Instant,
    index: usize,
}

struct Sampler {
    config: LoggerConfig,
    open: HashMap<String, OpenFile>,
    summary: LoggerSummary,
    /// Probes already logged to the end (finished and closed), by address.
    done: Vec<Arc<FlowProbe>>,
}

impl Sampler {
    fn new(config: LoggerConfig) -> Sampler {
        Sampler {
            config,
            open: HashMap::new(),
            summary: LoggerSummary::default(),
            done: Vec::new(),
        }
    }

    fn run(mut self, stopped: &mpsc::Receiver<()>) -> LoggerSummary {
        let mut next = std::time::Instant::now();
        loop {
            self.sample();
            let now = std::time::Instant::now();
            next = next_log_time(next, self.config.interval, now);
            match stopped.recv_timeout(next - now) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // Stop asked (or the handle dropped): a last row for every open flow.
                _ => break,
            }
        }
        self.sample();
        let mut files: Vec<OpenFile> = self.open.drain().map(|(_, file)| file).collect();
        files.sort_by_key(|file| file.index);
        for file in files {
            self.close(file);
        }
        self.summary.files.sort_by(|a, b| a.path.cmp(&b.path));
        self.summary
    }

    fn key(protocol: &str, flow_id: &str) -> String {
        format!("{protocol}_{flow_id}")
    }

    fn open_file(&mut self, kind: FlowKind, flow_id: &str, source: Source) -> Option<String> {
        let protocol = kind.protocol();
        let key = Sampler::key(protocol, flow_id);
        if self.open.contains_key(&key) {
            return Some(key);
        }
        let name = format!("{protocol}_{flow_id}_{}.csv", unix_time_whole_seconds());
        let path = self.config.directory.join(name);
        match FlowCsv::create(&path, kind) {
            Ok(csv) => {
                let index = self.open.len() + self.summary.files.len();
                self.open.insert(
                    key.clone(),
                    OpenFile {
                        csv,
                        flow_id: flow_id.to_string(),
                        protocol,
                        source,
                        first_seen: std::time::Instant::now(),
                        index,
                    },
                );
                Some(key)
            }
            Err(_) => {
                self.summary.write_errors += 1;
                None
            }
        }
    }

    fn write(&mut self, key: &str, snapshot: &FlowSnapshot, since: Option<std::time::Instant>) {
        let Some(file) = self.open.get_mut(key) else {
            return;
        };
        let start = since.unwrap_or(file.first_seen);
        let time = start.elapsed().as_secs_f64();
        if file
            .csv
            .write(time, unix_time_seconds(), &file.flow_id, snapshot)
            .is_err()
        {
            self.summary.write_errors += 1;
        }
    }

    fn close(&mut self, file: OpenFile) {
        self.summary.files.push(LoggedFile {
            path: file.csv.path().to_path_buf(),
            protocol: file.protocol,
            flow_id: file.flow_id,
            rows: file.csv.rows(),
        });
    }

    /// One round: a row for every wanted flow of this process and, with TCP wanted, every
    /// kernel TCP connection on the ports; the files of flows that ended are closed.
    fn sample(&mut self) {
        let own_tcp = self.sample_probes();
        self.close_vanished_probes();
        if self.config.tcp {
            self.sample_kernel_tcp(&own_tcp);
        }
    }

    /// A row for every wanted flow of this process (probes on the ports); a finished one is
    /// closed after its last row. Returns the flow ids of this process's TCP sockets (sampled
    /// here, not again through the kernel).
    fn sample_probes(&mut self) -> Vec<String> {
        let mut own_tcp = Vec::new();
        for probe in registry::probes() {
            if !self.config.ports.contains(probe.local_port()) {
                continue;
            }
            let wanted = match probe.kind() {
                FlowKind::Tcp => self.config.tcp,
                FlowKind::TfrcSender | FlowKind::TfrcReceiver => self.config.tfrc,
            };
            if !wanted || self.done.iter().any(|done| Arc::ptr_eq(done, &probe)) {
                continue;
            }
            if probe.kind() == FlowKind::Tcp {
                own_tcp.push(probe.flow_id().to_string());
            }
            let finished = probe.is_finished();
            let Some(snapshot) = probe.sample() else {
                continue;
            };
            let Some(key) = self.open_file(
                probe.kind(),
                probe.flow_id(),
                Source::Probe(Arc::clone(&probe)),
            ) else {
                continue;
            };
            self.write(&key, &snapshot, Some(probe.started()));
            if finished {
                self.close_key(&key);
                self.done.push(probe);
            }
        }
        own_tcp
    }

    /// Finished probes that already left the registry: a last row, then close.
    fn close_vanished_probes(&mut self) {
        let vanished: Vec<(String, Arc<FlowProbe>)> = self
            .open
            .iter()
            .filter_map(|(key, file)| match &file.source {
                Source::Probe(probe) if probe.is_finished() => {
                    Some((key.clone(), Arc::clone(probe)))
                }
                _ => None,
            })
            .collect();
        for (key, probe) in vanished {
            if let Some(snapshot) = probe.sample() {
                self.write(&key, &snapshot, Some(probe.started()));
            }
            self.close_key(&key);
            self.done.push(probe);
        }
        self.done.retain(|probe| Arc::strong_count(probe) > 1);
    }

    /// TCP connections of any process (sock_diag) on the ports, but this process's own
    /// (`own_tcp`, sampled through their probes): a row each; the files of connections that
    /// are gone are closed.
    fn sample_kernel_tcp(&mut self, own_tcp: &[String]) {
        let Ok(entries) = diag::dump_tcp_sockets() else {
            return;
        };
        self.summary.kernel_tcp_visible = true;
        let mut seen = Vec::new();
        for entry in entries {
            if !self.config.ports.contains(entry.local.port()) {
                continue;
            }
            let flow_id = registry::tcp_flow_id(entry.local.port(), entry.remote);
            if own_tcp.contains(&flow_id) {
                continue; // sampled through its probe
            }
            let Some(info) = entry.info else {
                continue;
            };
            let key = Sampler::key("tcp", &flow_id);
            // The same address pair reused by a new connection is a new flow.
            if let Some(file) = self.open.get(&key) {
                if matches!(file.source, Source::Kernel(inode) if inode != entry.inode) {
                    self.close_key(&key);
                }
            }
            let Some(key) = self.open_file(FlowKind::Tcp, &flow_id, Source::Kernel(entry.inode))
            else {
                continue;
            };
            self.write(&key, &FlowSnapshot::Tcp(info), None);
            seen.push(key);
        }
        // Kernel connections that are gone: their flow ended.
        let gone: Vec<String> = self
            .open
            .iter()
            .filter(|(key, file)| matches!(file.source, Source::Kernel(_)) && !seen.contains(key))
            .map(|(key, _)| key.clone())
            .collect();
        for key in gone {
            self.close_key(&key);
        }
    }

    /// Closes the open file of `key`, if there is one.
    fn close_key(&mut self, key: &str) {
        if let Some(file) = self.open.remove(key) {
            self.close(file);
        }
    }
}
