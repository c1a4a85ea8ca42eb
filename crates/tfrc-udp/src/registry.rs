//! The process-wide table of flows driven by this crate, read by the logger
//! ([`crate::logger`]) and by tests.
//!
//! Each TFRC sender, TFRC receiver flow and TCP socket opened through this crate registers a
//! [`FlowProbe`]. TFRC event loops publish a copy of their state into it after every loop
//! iteration (an uncontended lock and a copy of ~300 bytes); TCP probes are sampled with
//! `getsockopt(TCP_INFO)` when read. Probes of finished flows stay listed for a short while so
//! that a logger sees their last state.

use core::time::Duration;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use tfrc_proto::{ReceiverStats, SenderState, SenderStats};

use crate::tcp_info::TcpInfo;

/// How long a finished flow stays listed, so that loggers write its last row.
const FINISHED_LINGER: Duration = Duration::from_secs(10);

/// The state of a TFRC sender, as logged.
#[derive(Debug, Clone, Copy)]
pub struct SenderSnapshot {
    /// Congestion state of the core.
    pub state: SenderState,
    /// Counters of the core.
    pub stats: SenderStats,
    /// Datagrams the socket refused to send (buffer full, unreachable peer).
    pub send_errors: u64,
    /// Application rate cap, bytes/s (`--max-rate`).
    pub max_rate: Option<f64>,
}

/// The state of one TFRC receiver flow, as logged.
#[derive(Debug, Clone, Copy)]
pub struct ReceiverSnapshot {
    /// Counters of the core.
    pub stats: ReceiverStats,
    /// Loss event rate p.
    pub loss_event_rate: f64,
    /// X_recv of the latest feedback, bytes/s.
    pub x_recv: f64,
    /// R_m, the sender's RTT estimate from its packets.
    pub rtt: Option<Duration>,
    /// Veno backlog N of the latest packet.
    pub veno_backlog: f64,
}

/// What a probe holds.
#[derive(Debug, Clone, Copy)]
pub enum FlowSnapshot {
    /// A TFRC sender.
    TfrcSender(SenderSnapshot),
    /// A TFRC receiver flow.
    TfrcReceiver(ReceiverSnapshot),
    /// A TCP socket.
    Tcp(TcpInfo),
}

/// Which kind of flow a probe describes (fixes its CSV schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowKind {
    /// A TFRC sender.
    TfrcSender,
    /// A TFRC receiver flow.
    TfrcReceiver,
    /// A TCP socket.
    Tcp,
}

impl FlowKind {
    /// The protocol part of a log file name: `tfrc` or `tcp`.
    pub fn protocol(self) -> &'static str {
        match self {
            FlowKind::TfrcSender | FlowKind::TfrcReceiver => "tfrc",
            FlowKind::Tcp => "tcp",
        }
    }
}

/// One flow's entry in the registry.
#[derive(Debug)]
pub struct FlowProbe {
    kind: FlowKind,
    flow_id: String,
    local_port: u16,
    started: std::time::Instant,
    snapshot: Mutex<Option<FlowSnapshot>>,
    tcp_socket: Mutex<Option<Arc<TcpStream>>>,
    finished: AtomicBool,
    finished_at: Mutex<Option<std::time::Instant>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking holder cannot leave a snapshot half-written (it is a plain copy): go on.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl FlowProbe {
    /// The kind of flow.
    pub fn kind(&self) -> FlowKind {
        self.kind
    }

    /// The flow id used in log file names: `<session-id-hex>-sender`, `<session-id-hex>-receiver`
    /// for TFRC, `<local-port>-<remote-address>-<remote-port>` for TCP.
    pub fn flow_id(&self) -> &str {
        &self.flow_id
    }

    /// The local UDP or TCP port of the flow.
    pub fn local_port(&self) -> u16 {
        self.local_port
    }

    /// When the flow was registered.
    pub fn started(&self) -> std::time::Instant {
        self.started
    }

    /// Replaces the published state (TFRC event loops call this after every iteration).
    pub fn publish(&self, snapshot: FlowSnapshot) {
        *lock(&self.snapshot) = Some(snapshot);
    }

    /// The flow's current state: a fresh `TCP_INFO` for TCP sockets still open, else the latest
    /// published snapshot.
    pub fn sample(&self) -> Option<FlowSnapshot> {
        if let Some(stream) = lock(&self.tcp_socket).as_ref() {
            if let Ok(info) = TcpInfo::from_socket(stream) {
                return Some(FlowSnapshot::Tcp(info));
            }
        }
        *lock(&self.snapshot)
    }

    /// Marks the flow finished: a TCP probe takes a last sample and lets go of its socket.
    pub fn finish(&self) {
        if let Some(stream) = lock(&self.tcp_socket).take() {
            if let Ok(info) = TcpInfo::from_socket(&stream) {
                self.publish(FlowSnapshot::Tcp(info));
            }
        }
        *lock(&self.finished_at) = Some(std::time::Instant::now());
        self.finished.store(true, Ordering::Release);
    }

    /// True once [`FlowProbe::finish`] was called.
    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
}

/// Marks its probe finished when dropped, so that every exit path (errors included) ends the
/// flow's log.
#[derive(Debug)]
pub struct ProbeGuard(Arc<FlowProbe>);

impl ProbeGuard {
    /// The probe.
    pub fn probe(&self) -> &Arc<FlowProbe> {
        &self.0
    }
}

impl Drop for ProbeGuard {
    fn drop(&mut self) {
        self.0.finish();
    }
}

fn registry() -> &'static Mutex<Vec<Arc<FlowProbe>>> {
    static REGISTRY: OnceLock<Mutex<Vec<Arc<FlowProbe>>>> = OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(Vec::new()))
}

fn prune(probes: &mut Vec<Arc<FlowProbe>>) {
    probes.retain(|probe| {
        lock(&probe.finished_at).is_none_or(|finished| finished.elapsed() < FINISHED_LINGER)
    });
}

fn register(probe: FlowProbe) -> ProbeGuard {
    let probe = Arc::new(probe);
    let mut probes = lock(registry());
    prune(&mut probes);
    probes.push(Arc::clone(&probe));
    ProbeGuard(probe)
}

/// Registers a TFRC flow (sender or receiver side) whose loop will [`FlowProbe::publish`].
pub fn register_tfrc(kind: FlowKind, flow_id: String, local_port: u16) -> ProbeGuard {
    register(FlowProbe {
        kind,
        flow_id,
        local_port,
        started: std::time::Instant::now(),
        snapshot: Mutex::new(None),
        tcp_socket: Mutex::new(None),
        finished: AtomicBool::new(false),
        finished_at: Mutex::new(None),
    })
}

/// The flow id of a TCP connection: `<local-port>-<remote-address>-<remote-port>` (IPv6 colons
/// written as `_` so that the id is a portable file name).
pub fn tcp_flow_id(local_port: u16, remote: std::net::SocketAddr) -> String {
    format!(
        "{local_port}-{}-{}",
        remote.ip().to_string().replace(':', "_"),
        remote.port()
    )
}

/// Registers a TCP socket of this process; it is sampled with `TCP_INFO` whenever read.
pub fn register_tcp(stream: Arc<TcpStream>) -> std::io::Result<ProbeGuard> {
    let local_port = stream.local_addr()?.port();
    let remote = stream.peer_addr()?;
    Ok(register(FlowProbe {
        kind: FlowKind::Tcp,
        flow_id: tcp_flow_id(local_port, remote),
        local_port,
        started: std::time::Instant::now(),
        snapshot: Mutex::new(None),
        tcp_socket: Mutex::new(Some(stream)),
        finished: AtomicBool::new(false),
        finished_at: Mutex::new(None),
    }))
}

/// Every listed probe (live ones and recently finished ones).
pub fn probes() -> Vec<Arc<FlowProbe>> {
    let mut probes = lock(registry());
    prune(&mut probes);
    probes.clone()
}
