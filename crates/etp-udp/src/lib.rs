//! ETP's UDP driver: ETP connections over a real UDP socket, with a blocking API.
//!
//! The `etp` crate is the sans-IO core (no socket, no thread, no clock of its own); this crate
//! is the I/O around it, as `quinn` is around `quinn-proto`, so that the deterministic
//! simulator, which runs ETP flows too, does not link sockets.
//!
//! [`connect`] and [`listen`] each start one I/O thread per socket that owns the
//! [`Connection`]s (and the [`Listener`]), waits for datagrams or the next timer with `ppoll`
//! (timer slack lowered, as in `tfrc_udp::pacing`), and runs the sans-IO core with the
//! monotonic [`Clock`]. Application threads use [`Session`] handles: `send`, `recv`,
//! `reconfigure`, `stats`, `close`.
//!
//! [`DriverOptions::emulation`] passes every datagram the socket sends through an in-process
//! [`Link`] (delay, rate, loss) before it reaches the kernel: two local endpoints then behave
//! as if joined by a lossy, slow path, without root or `tc`.

use core::time::Duration;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use tfrc_proto::Instant;
use tfrc_udp::clock::Clock;
use tfrc_udp::pacing::{lower_timer_slack, poll_readable};

use etp::connection::{
    CloseReason, Connection, ConnectionStats, Event, Message, MessageOptions, Policy,
    ReconfigureError, SendError, SetupError, State,
};
use etp::descriptor::Descriptor;
use etp::harness::{Link, LinkConfig, LinkConfigError};
use etp::listener::{Listener, ListenerConfig, ListenerOutput};
use etp::wire::{Packet, PacketType};

/// Longest the I/O thread sleeps without looking at its connections.
const MAX_WAIT: Duration = Duration::from_millis(5);
/// Largest datagram read.
const MAX_DATAGRAM: usize = 65_536;

/// Options of an endpoint.
#[derive(Debug, Clone, Default)]
pub struct DriverOptions {
    /// Emulate a path on every datagram this endpoint sends.
    pub emulation: Option<LinkConfig>,
    /// What a listener accepts.
    pub policy: Policy,
    /// Seed of the emulation's losses (the connection ids and secrets always come from the OS).
    pub seed: u64,
}

/// What went wrong with a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Socket error.
    #[error("socket error: {0}")]
    Io(#[from] io::Error),
    /// The connection ended (how is in the reason).
    #[error("connection closed: {0:?}")]
    Closed(CloseReason),
    /// The message was refused.
    #[error(transparent)]
    Send(#[from] SendError),
    /// The change was refused locally.
    #[error(transparent)]
    Reconfigure(#[from] ReconfigureError),
    /// Bad address.
    #[error("{0}")]
    Invalid(String),
    /// The descriptor or the connection built from it was refused locally.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The emulated path's configuration is invalid.
    #[error(transparent)]
    Emulation(#[from] LinkConfigError),
    /// Waited too long.
    #[error("timed out: {0}")]
    TimedOut(&'static str),
}

type Key = (SocketAddr, u32);

struct EndpointState {
    connections: HashMap<Key, Connection>,
    events: HashMap<Key, VecDeque<Event>>,
    listener: Option<Listener>,
    accepted: VecDeque<Key>,
    emulator: Option<Link<(SocketAddr, Vec<u8>)>>,
}

struct Endpoint {
    socket: UdpSocket,
    clock: Clock,
    state: Mutex<EndpointState>,
    changed: Condvar,
    stop: AtomicBool,
}

impl Endpoint {
    fn lock(&self) -> MutexGuard<'_, EndpointState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn transmit(&self, state: &mut EndpointState, now: Instant, peer: SocketAddr, bytes: &[u8]) {
        match &mut state.emulator {
            Some(link) => link.push(now, bytes.len(), (peer, bytes.to_vec())),
            None => {
                // A full socket buffer drops the datagram, like a network would.
                let _ = self.socket.send_to(bytes, peer);
            }
        }
    }

    /// Timers, outgoing datagrams and emulated arrivals; returns the next wake-up time.
    fn service(&self, state: &mut EndpointState, buffer: &mut [u8]) -> Option<Instant> {
        let now = self.clock.now();
        let keys: Vec<Key> = state.connections.keys().copied().collect();
        let mut next: Option<Instant> = None;
        for key in keys {
            let mut outgoing = Vec::new();
            if let Some(connection) = state.connections.get_mut(&key) {
                if connection.poll_timeout().is_some_and(|time| time <= now) {
                    connection.handle_timeout(now);
                }
                while let Some(length) = connection.poll_transmit(now, buffer) {
                    outgoing.push(buffer[..length].to_vec());
                }
                let mut events = Vec::new();
                while let Some(event) = connection.poll_event() {
                    events.push(event);
                }
                if !events.is_empty() {
                    state.events.entry(key).or_default().extend(events);
                }
                if let Some(time) = state.connections[&key].poll_timeout() {
                    next = Some(next.map_or(time, |next: Instant| next.min(time)));
                }
            }
            for bytes in outgoing {
                self.transmit(state, now, key.0, &bytes);
            }
        }
        if let Some(link) = &mut state.emulator {
            while let Some((peer, bytes)) = link.pop_arrived(now) {
                let _ = self.socket.send_to(&bytes, peer);
            }
            if let Some(time) = link.next_arrival() {
                next = Some(next.map_or(time, |next| next.min(time)));
            }
        }
        next
    }

    fn receive(&self, state: &mut EndpointState, peer: SocketAddr, bytes: &[u8], reply: &mut [u8]) {
        let now = self.clock.now();
        let Ok(packet) = Packet::new_checked(bytes) else {
            return;
        };
        let key = (peer, packet.connection_id());
        if packet.packet_type() != PacketType::Init {
            if let Some(connection) = state.connections.get_mut(&key) {
                connection.handle_datagram(now, bytes);
                return;
            }
        }
        let Some(listener) = &mut state.listener else {
            return;
        };
        match listener.handle_datagram(now, peer, bytes, reply) {
            ListenerOutput::Reply(length) => {
                let answer = reply[..length].to_vec();
                self.transmit(state, now, peer, &answer);
            }
            ListenerOutput::Accept(connection) => {
                state.connections.insert(key, *connection);
                state.accepted.push_back(key);
            }
            ListenerOutput::Ignore(_) => {}
        }
    }

    fn run(self: Arc<Self>) {
        lower_timer_slack();
        let mut buffer = vec![0u8; MAX_DATAGRAM];
        let mut reply = vec![0u8; MAX_DATAGRAM];
        while !self.stop.load(Ordering::Relaxed) {
            let next = {
                let mut state = self.lock();
                let next = self.service(&mut state, &mut buffer);
                self.changed.notify_all();
                next
            };
            let now = self.clock.now();
            let wait = next.map_or(MAX_WAIT, |next| (next - now).min(MAX_WAIT));
            if !wait.is_zero() {
                poll_readable(Some(self.socket.as_raw_fd()), Some(wait));
            }
            // Read everything that is there.
            let mut received = Vec::new();
            while let Ok((length, peer)) = self.socket.recv_from(&mut buffer) {
                received.push((peer, buffer[..length].to_vec()));
                if received.len() >= 256 {
                    break;
                }
            }
            if !received.is_empty() {
                let mut state = self.lock();
                for (peer, bytes) in received {
                    self.receive(&mut state, peer, &bytes, &mut reply);
                }
            }
        }
    }
}

/// Stops the I/O thread when the last handle goes.
struct EndpointHandle {
    endpoint: Arc<Endpoint>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for EndpointHandle {
    fn drop(&mut self) {
        self.endpoint.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self
            .thread
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
        {
            let _ = thread.join();
        }
    }
}

fn start(
    socket: UdpSocket,
    listener: Option<Listener>,
    options: &DriverOptions,
) -> Result<Arc<EndpointHandle>, SessionError> {
    socket.set_nonblocking(true)?;
    let emulator = match &options.emulation {
        Some(config) => {
            config.validate()?;
            Some(Link::new(config.clone(), options.seed))
        }
        None => None,
    };
    let endpoint = Arc::new(Endpoint {
        socket,
        clock: Clock::new(),
        state: Mutex::new(EndpointState {
            connections: HashMap::new(),
            events: HashMap::new(),
            listener,
            accepted: VecDeque::new(),
            emulator,
        }),
        changed: Condvar::new(),
        stop: AtomicBool::new(false),
    });
    let runner = Arc::clone(&endpoint);
    let thread = std::thread::Builder::new()
        .name("etp-io".into())
        .spawn(move || runner.run())?;
    Ok(Arc::new(EndpointHandle {
        endpoint,
        thread: Mutex::new(Some(thread)),
    }))
}

fn resolve(address: &str) -> Result<SocketAddr, SessionError> {
    address
        .to_socket_addrs()
        .map_err(|error| SessionError::Invalid(format!("cannot resolve {address:?}: {error}")))?
        .next()
        .ok_or_else(|| SessionError::Invalid(format!("{address:?} resolves to no address")))
}

/// Connects to an ETP listener at `address` with `descriptor`; blocks until the session is
/// established or refused.
pub fn connect(
    address: &str,
    descriptor: Descriptor,
    options: &DriverOptions,
) -> Result<Session, SessionError> {
    let peer = resolve(address)?;
    let local: SocketAddr = if peer.is_ipv4() {
        "0.0.0.0:0".parse().expect("literal")
    } else {
        "[::]:0".parse().expect("literal")
    };
    let socket = UdpSocket::bind(local)?;
    let handle = start(socket, None, options)?;
    let endpoint = &handle.endpoint;
    let connection = Connection::connect(
        endpoint.clock.now(),
        descriptor,
        rand::random(),
        rand::random(),
    )?;
    let key = (peer, connection.connection_id());
    endpoint.lock().connections.insert(key, connection);
    let session = Session { handle, key };
    let mut state = session.handle.endpoint.lock();
    loop {
        let connection = &state.connections[&key];
        match connection.state() {
            State::Established | State::Closing => break,
            State::Closed => {
                let reason = connection
                    .close_reason()
                    .cloned()
                    .unwrap_or(CloseReason::Local);
                return Err(SessionError::Closed(reason));
            }
            State::Connecting => {}
        }
        state = session
            .handle
            .endpoint
            .changed
            .wait_timeout(state, Duration::from_millis(50))
            .map(|(guard, _)| guard)
            .unwrap_or_else(|poisoned| poisoned.into_inner().0);
    }
    drop(state);
    Ok(session)
}

/// A listening socket accepting ETP sessions.
pub struct EtpListener {
    handle: Arc<EndpointHandle>,
}

/// Listens on `address` (e.g. `0.0.0.0:7000`).
pub fn listen(address: &str, options: &DriverOptions) -> Result<EtpListener, SessionError> {
    let socket = UdpSocket::bind(resolve(address)?)?;
    let mut config = ListenerConfig::new(rand::random());
    config.policy = options.policy.clone();
    let handle = start(socket, Some(Listener::new(config)), options)?;
    Ok(EtpListener { handle })
}

impl EtpListener {
    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.handle.endpoint.socket.local_addr()
    }

    /// Waits up to `timeout` for the next session.
    pub fn accept(&self, timeout: Duration) -> Result<Session, SessionError> {
        let deadline = std::time::Instant::now() + timeout;
        let mut state = self.handle.endpoint.lock();
        loop {
            if let Some(key) = state.accepted.pop_front() {
                return Ok(Session {
                    handle: Arc::clone(&self.handle),
                    key,
                });
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(SessionError::TimedOut("no connection request"));
            }
            state = self
                .handle
                .endpoint
                .changed
                .wait_timeout(state, left.min(Duration::from_millis(50)))
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
    }
}

/// One ETP session (either end).
pub struct Session {
    handle: Arc<EndpointHandle>,
    key: Key,
}

impl Session {
    fn with<R>(&self, action: impl FnOnce(&mut Connection, Instant) -> R) -> R {
        let endpoint = &self.handle.endpoint;
        let now = endpoint.clock.now();
        let mut state = endpoint.lock();
        let connection = state
            .connections
            .get_mut(&self.key)
            .expect("a session's connection stays in the map");
        action(connection, now)
    }

    /// The peer's address.
    pub fn peer(&self) -> SocketAddr {
        self.key.0
    }

    /// The clock the session's times are measured on.
    pub fn clock(&self) -> Clock {
        self.handle.endpoint.clock
    }

    /// Queues a message on `stream`.
    pub fn send(
        &self,
        stream: u16,
        data: Vec<u8>,
        options: MessageOptions,
    ) -> Result<(), SessionError> {
        self.with(|connection, now| {
            if let Some(reason) = connection.close_reason() {
                return Err(SessionError::Closed(reason.clone()));
            }
            connection.send(now, stream, data, options)?;
            Ok(())
        })
    }

    /// Waits up to `timeout` for a whole message; `Ok(None)` on timeout, an error once the
    /// connection is closed and every delivered message was read.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Option<Message>, SessionError> {
        let endpoint = &self.handle.endpoint;
        let deadline = std::time::Instant::now() + timeout;
        let mut state = endpoint.lock();
        loop {
            let connection = state
                .connections
                .get_mut(&self.key)
                .expect("a session's connection stays in the map");
            if let Some(message) = connection.recv() {
                return Ok(Some(message));
            }
            if let Some(reason) = connection.close_reason() {
                return Err(SessionError::Closed(reason.clone()));
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            state = endpoint
                .changed
                .wait_timeout(state, left)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
    }

    /// Waits for a whole message.
    pub fn recv(&self) -> Result<Message, SessionError> {
        loop {
            if let Some(message) = self.recv_timeout(Duration::from_secs(3600))? {
                return Ok(message);
            }
        }
    }

    /// Asks the peer to switch descriptors; see [`Connection::reconfigure`].
    pub fn reconfigure(&self, descriptor: Descriptor) -> Result<u32, SessionError> {
        self.with(|connection, now| Ok(connection.reconfigure(now, descriptor)?))
    }

    /// Events so far (connected, reconfigured, closed).
    pub fn events(&self) -> Vec<Event> {
        let mut state = self.handle.endpoint.lock();
        state
            .events
            .remove(&self.key)
            .map(Vec::from)
            .unwrap_or_default()
    }

    /// Counters.
    pub fn stats(&self) -> ConnectionStats {
        self.with(|connection, _| connection.stats())
    }

    /// Bytes waiting at the sender.
    pub fn buffered_bytes(&self) -> u64 {
        self.with(|connection, _| connection.buffered_bytes())
    }

    /// Closes gracefully and waits up to `timeout` for the end.
    pub fn close(&self, timeout: Duration) -> Result<CloseReason, SessionError> {
        self.with(|connection, now| connection.close(now));
        let endpoint = &self.handle.endpoint;
        let deadline = std::time::Instant::now() + timeout;
        let mut state = endpoint.lock();
        loop {
            if let Some(reason) = state.connections[&self.key].close_reason() {
                return Ok(reason.clone());
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(SessionError::TimedOut("close not confirmed"));
            }
            state = endpoint
                .changed
                .wait_timeout(state, left)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etp::descriptor::RateControlKind;

    #[test]
    fn a_session_over_local_udp_with_an_emulated_lossy_path() {
        let options = DriverOptions {
            emulation: Some(LinkConfig {
                loss: 0.05,
                ..LinkConfig::delay(Duration::from_millis(10))
            }),
            policy: Policy::default(),
            seed: 1,
        };
        let listener = listen("127.0.0.1:0", &options).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let client = std::thread::spawn(move || {
            let descriptor = Descriptor::single_stream(RateControlKind::Tfrc);
            let session = connect(&address, descriptor, &options).unwrap();
            for index in 0..30u8 {
                session
                    .send(0, vec![index; 4000], MessageOptions::default())
                    .unwrap();
            }
            let reason = session.close(Duration::from_secs(20)).unwrap();
            (reason, session.stats())
        });
        let server = listener.accept(Duration::from_secs(10)).unwrap();
        for index in 0..30u8 {
            let message = server.recv().unwrap();
            assert_eq!(message.data, vec![index; 4000]);
        }
        let (reason, stats) = client.join().unwrap();
        assert_eq!(reason, CloseReason::Local);
        assert!(stats.data_packets_sent >= 100);
        assert!(matches!(
            server.recv_timeout(Duration::from_secs(1)),
            Err(SessionError::Closed(CloseReason::Peer(_)))
        ));
    }

    #[test]
    fn a_refused_connection_says_why() {
        let options = DriverOptions::default();
        let listener = listen("127.0.0.1:0", &options).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let descriptor = Descriptor::single_stream(RateControlKind::None);
        let error = connect(&address, descriptor, &options).err().unwrap();
        assert!(error.to_string().contains("descriptor refused"), "{error}");
        assert!(connect(
            "no.such.host.invalid:1",
            Descriptor::single_stream(RateControlKind::Tfrc),
            &options
        )
        .is_err());
    }
}
