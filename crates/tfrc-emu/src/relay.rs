//! Relay mode: a UDP relay between senders and a receiver, through one emulated duplex link.
//!
//! Senders send to the relay's `listen` address. For each sender address (a *client*) the relay
//! opens its own socket connected to the `forward` address, so the receiver sees one peer per
//! sender and its answers find their way back. Datagrams from a client cross the **forward**
//! direction of the link; the receiver's answers cross the **reverse** direction. No privileges
//! are needed.
//!
//! Packets are counted by the link as UDP payload plus `header_overhead` bytes (28 by default:
//! IPv4 + UDP), so that a 1 Mb/s emulated link carries what a 1 Mb/s wire would. The flow id
//! the markers see is the client's source port.

use core::time::Duration;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use socket2::SockRef;
use tfrc_proto::Instant;
use tfrc_sim::rng::derive_seed;
use tfrc_sim::{LinkCounters, LinkDirection};

use crate::element_syntax::{Direction, LinkSpec};
use crate::error::{Error, IoContext, Result};
use crate::linklog::{LinkLog, LinkName};
use crate::network::{Delivered, Network, SendOutcome};
use crate::realtime::unix_nanos_now;
use crate::realtime::{Clock, KernelStamps, Waiter, Wake, DEFAULT_SPIN_MARGIN};
use tfrc_sim::pcap::{ipv4_udp_packet, PcapWriter};
use tfrc_udp::batch::{Datagram, EcnCodepoint, Offload, ReceiveBuffers};

/// Datagrams read from one socket before looking at the clock again.
const MAX_READS_PER_ROUND: usize = 64;

/// What a relay does.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// Where senders send to.
    pub listen: SocketAddr,
    /// The receiver.
    pub forward: SocketAddr,
    /// The emulated link.
    pub link: LinkSpec,
    /// Seed of the link's random elements (loss, RED/RIO).
    pub seed: u64,
    /// Bytes added to each UDP payload when the link counts it (IPv4 + UDP: 28).
    pub header_overhead: u32,
    /// Most clients served at once. A new sender beyond it takes the slot of the client idle
    /// the longest (least recently used), which is then forgotten.
    pub max_clients: usize,
    /// A client that sent nothing and got no answer for this long is forgotten (its slot and
    /// upstream socket freed): each `tfrc send` uses a new port, so slots would otherwise fill
    /// for good.
    pub client_idle_timeout: Duration,
    /// `links.csv` of both directions and its interval.
    pub links_csv: Option<(PathBuf, Duration)>,
    /// A pcap file of the packets leaving the emulated link (both directions; IPv4 only).
    pub pcap: Option<PathBuf>,
    /// Time spun before each deadline.
    pub spin_margin: Duration,
    /// Stop after this long (`None`: until stopped).
    pub duration: Option<Duration>,
    /// Run the relay thread as `SCHED_FIFO` at this priority (root or `CAP_SYS_NICE`), so that
    /// a busy machine does not delay its wake-ups.
    pub realtime_priority: Option<i32>,
}

impl RelayConfig {
    /// A relay with the default options.
    pub fn new(listen: SocketAddr, forward: SocketAddr, link: LinkSpec) -> Self {
        RelayConfig {
            listen,
            forward,
            link,
            seed: 1,
            header_overhead: 28,
            max_clients: 64,
            client_idle_timeout: DEFAULT_CLIENT_IDLE_TIMEOUT,
            links_csv: None,
            pcap: None,
            spin_margin: DEFAULT_SPIN_MARGIN,
            duration: None,
            realtime_priority: None,
        }
    }
}

/// Totals of a relay run.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RelayReport {
    /// Seconds the relay ran.
    pub seconds: f64,
    /// Clients seen over the run.
    pub clients: usize,
    /// Clients forgotten after `client_idle_timeout` without traffic.
    pub expired_clients: u64,
    /// Clients whose slot a new sender took when `max_clients` were served (least recently
    /// used first).
    pub evicted_clients: u64,
    /// Packets that left the link for a client already forgotten, and were dropped.
    pub orphaned_packets: u64,
    /// Datagrams the sockets refused to send.
    pub send_errors: u64,
    /// Counters of the forward direction.
    #[serde(skip)]
    pub forward: LinkCounters,
    /// Counters of the reverse direction.
    #[serde(skip)]
    pub reverse: LinkCounters,
    /// How late the relay woke after the earliest due event of the link, when that wake-up
    /// delivered packets: 50th percentile, microseconds.
    pub wake_lateness_p50_us: f64,
    /// Same, 99th percentile.
    pub wake_lateness_p99_us: f64,
}

/// Default of [`RelayConfig::client_idle_timeout`].
pub const DEFAULT_CLIENT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a packet goes once it leaves the link: a client by its id (never reused, so a packet
/// of a forgotten client is dropped rather than sent to whoever took its slot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// To the receiver, through the client's upstream socket.
    Receiver(u64),
    /// Back to the client.
    Client(u64),
}

struct Client {
    id: u64,
    address: SocketAddr,
    upstream: UdpSocket,
    /// GSO sends towards the receiver and GRO receives of its answers.
    upstream_offload: Offload,
    /// Last datagram from the client or answer for it (relay clock).
    last_active: Instant,
}

/// A bound relay, ready to [`Relay::run`].
pub struct Relay {
    config: RelayConfig,
    listen: UdpSocket,
    /// GRO receives from senders and GSO sends back to them ([`tfrc_udp::batch`]).
    listen_offload: Offload,
    /// What every socket of the relay is read into (one read at a time).
    receive_buffers: ReceiveBuffers,
    clients: Vec<Client>,
    /// Id of the next client.
    next_client: u64,
    network: Network<Target>,
    /// The time the links were last brought up to ([`Network::deliver_due`]).
    links_time: Instant,
    clock: Clock,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Relay")
            .field("listen", &self.listen.local_addr().ok())
            .field("forward", &self.config.forward)
            .field("clients", &self.clients.len())
            .finish()
    }
}

impl Relay {
    /// Binds the listening socket and builds the link. The clock (and so loss windows and
    /// traces) starts here.
    pub fn bind(config: RelayConfig) -> Result<Relay> {
        if config.max_clients == 0 {
            return Err(Error::Invalid("--max-clients must be at least 1".into()));
        }
        let listen = UdpSocket::bind(config.listen)
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let bound = listen.local_addr()?;
        let forward = config.forward;
        if forward.port() == bound.port()
            && (bound.ip().is_unspecified() || bound.ip() == forward.ip())
        {
            return Err(Error::Invalid(format!(
                "--forward {forward} is the relay's own listen address {bound}: datagrams would \
                 loop through the relay; forward to the receiver's address"
            )));
        }
        listen.set_nonblocking(true)?;
        set_buffers(&listen);
        let listen_offload =
            Offload::new(&listen, true).context("cannot set up the listening socket's offloads")?;
        let clock = Clock::new();
        let links = Direction::BOTH
            .iter()
            .map(|&direction| {
                let spec = config.link.direction(direction);
                let link_config = spec.to_config(Instant::ZERO)?;
                let link: LinkDirection = link_config.build(derive_seed(
                    config.seed,
                    &format!("relay:{}", direction.name()),
                ))?;
                Ok(link)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Relay {
            config,
            listen,
            listen_offload,
            receive_buffers: ReceiveBuffers::new(),
            clients: Vec::new(),
            next_client: 0,
            network: Network::new(links),
            links_time: Instant::ZERO,
            clock,
        })
    }

    /// The address senders send to.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listen.local_addr()
    }

    /// Relays until `stop` is set (or the configured duration ends).
    pub fn run(mut self, stop: &AtomicBool) -> Result<RelayReport> {
        if let Some(priority) = self.config.realtime_priority {
            tfrc_udp::pacing::set_realtime_priority(priority)
                .context("cannot use real-time scheduling (needs root or CAP_SYS_NICE)")?;
        }
        let waiter = Waiter::new(self.clock, self.config.spin_margin);
        let mut report = RelayReport::default();
        let mut link_log = self.create_link_log()?;
        let mut pcap = match &self.config.pcap {
            Some(path) => Some(PcapWriter::create(path)?),
            None => None,
        };
        let forward_route: Arc<[usize]> = Arc::from(vec![0]);
        let reverse_route: Arc<[usize]> = Arc::from(vec![1]);
        let end = self
            .config
            .duration
            .map(|duration| Instant::ZERO + duration);
        let mut batch = Vec::new();
        let mut delivered: Vec<Delivered<Target>> = Vec::new();
        let mut lateness: Vec<u64> = Vec::new();
        let mut fds = vec![self.listen.as_raw_fd()];
        while !stop.load(Ordering::Relaxed) {
            if end.is_some_and(|end| self.clock.now() >= end) {
                break;
            }
            let deadline = self.next_deadline(link_log.as_ref(), end);
            if waiter.wait(&fds, deadline) == Wake::Readable {
                self.read_senders(&mut report, &forward_route)?;
                self.read_answers(&reverse_route);
            }
            let now = self.clock.now();
            self.expire_clients(now, &mut report);
            if fds.len() != self.clients.len() + 1 {
                fds.truncate(1);
                fds.extend(
                    self.clients
                        .iter()
                        .map(|client| client.upstream.as_raw_fd()),
                );
            }
            let due_before = self.network.poll_timeout();
            self.network.deliver_due(now, &mut delivered);
            self.links_time = now;
            if let (Some(due), false) = (due_before, delivered.is_empty()) {
                lateness.push((now - due).as_nanos() as u64);
            }
            self.send_delivered(&mut delivered, &mut batch, &mut report, pcap.as_mut())?;
            if let Some(log) = &mut link_log {
                log.write_due(now, &self.network.samples())?;
            }
        }
        if let Some(log) = &mut link_log {
            log.flush()?;
        }
        if let Some(writer) = pcap.take() {
            writer.finish()?;
        }
        lateness.sort_unstable();
        report.wake_lateness_p50_us = percentile_us(&lateness, 0.5);
        report.wake_lateness_p99_us = percentile_us(&lateness, 0.99);
        report.seconds = self.clock.now().as_nanos() as f64 / 1e9;
        report.clients = usize::try_from(self.next_client).unwrap_or(usize::MAX);
        let samples = self.network.samples();
        report.forward = samples[0].counters;
        report.reverse = samples[1].counters;
        Ok(report)
    }

    /// The `links.csv` writer, if asked for: the forward direction from "sender" to
    /// "receiver", the reverse one back.
    fn create_link_log(&self) -> Result<Option<LinkLog>> {
        let Some((path, interval)) = &self.config.links_csv else {
            return Ok(None);
        };
        let names = Direction::BOTH
            .iter()
            .map(|&direction| {
                let (from, to) = if direction == Direction::Forward {
                    ("sender", "receiver")
                } else {
                    ("receiver", "sender")
                };
                LinkName {
                    from: from.into(),
                    to: to.into(),
                    capacity_bits_per_second: self
                        .config
                        .link
                        .direction(direction)
                        .rate_bits_per_second(),
                }
            })
            .collect();
        Ok(Some(LinkLog::create(path, names, *interval)?))
    }

    /// When the relay must next wake without a datagram: the link's next event, the next
    /// `links.csv` row, or the end of the run, whichever is first.
    fn next_deadline(&self, link_log: Option<&LinkLog>, end: Option<Instant>) -> Option<Instant> {
        let mut deadline = self.network.poll_timeout();
        if let Some(log) = link_log {
            deadline = Some(deadline.map_or(log.next_due(), |at| at.min(log.next_due())));
        }
        if let Some(end) = end {
            deadline = Some(deadline.map_or(end, |at| at.min(end)));
        }
        deadline
    }

    /// Reads datagrams from senders (at least [`MAX_READS_PER_ROUND`] if waiting; one GRO train
    /// more may end the round) into the forward direction. A new sender becomes a client with
    /// its own upstream socket; when `max_clients` are served, it takes the slot of the least
    /// recently active one.
    fn read_senders(&mut self, report: &mut RelayReport, route: &Arc<[usize]>) -> Result<()> {
        let mut buffers = core::mem::take(&mut self.receive_buffers);
        let mut read = 0;
        let mut result = Ok(());
        while read < MAX_READS_PER_ROUND && result.is_ok() {
            if self
                .listen_offload
                .receive(&self.listen, &mut buffers)
                .is_err()
            {
                break;
            }
            let stamps = KernelStamps::read(&self.clock);
            for datagram in buffers.datagrams() {
                read += 1;
                let arrived = self.entry_time(&stamps, datagram.kernel_time);
                result = self.admit(arrived, datagram, report, route);
                if result.is_err() {
                    break;
                }
            }
        }
        self.receive_buffers = buffers;
        result
    }

    /// When a datagram the kernel stamped `kernel_time` enters the link: that time, but never
    /// before the time the links were last brought up to (what they did since cannot be
    /// undone).
    fn entry_time(&self, stamps: &KernelStamps, kernel_time: Option<Duration>) -> Instant {
        stamps.arrival(kernel_time).max(self.links_time)
    }

    /// Puts one datagram from a sender into the forward direction.
    fn admit(
        &mut self,
        arrived: Instant,
        datagram: Datagram<'_>,
        report: &mut RelayReport,
        route: &Arc<[usize]>,
    ) -> Result<()> {
        let from = datagram.from;
        let index = match self.clients.iter().position(|c| c.address == from) {
            Some(index) => index,
            None => {
                if self.clients.len() >= self.config.max_clients {
                    let least_recent = (0..self.clients.len())
                        .min_by_key(|&index| self.clients[index].last_active)
                        .unwrap_or(0);
                    self.clients.swap_remove(least_recent);
                    report.evicted_clients += 1;
                }
                let upstream = connect_upstream(self.config.forward)?;
                let upstream_offload = Offload::new(&upstream, true)
                    .context("cannot set up the upstream socket's offloads")?;
                self.clients.push(Client {
                    id: self.next_client,
                    address: from,
                    upstream,
                    upstream_offload,
                    last_active: arrived,
                });
                self.next_client += 1;
                self.clients.len() - 1
            }
        };
        let client = &mut self.clients[index];
        client.last_active = arrived;
        let size = datagram.bytes.len() as u32 + self.config.header_overhead;
        let _: SendOutcome = self.network.send(
            arrived,
            u32::from(from.port()),
            size,
            ecn_bits(datagram.ecn),
            datagram.bytes.to_vec(),
            route.clone(),
            Target::Receiver(client.id),
        );
        Ok(())
    }

    /// Forgets the clients idle for `client_idle_timeout`.
    fn expire_clients(&mut self, now: Instant, report: &mut RelayReport) {
        let timeout = self.config.client_idle_timeout;
        let before = self.clients.len();
        self.clients
            .retain(|client| now.saturating_duration_since(client.last_active) < timeout);
        report.expired_clients += (before - self.clients.len()) as u64;
    }

    /// Reads the receiver's answers on each client's upstream socket (at least
    /// [`MAX_READS_PER_ROUND`] each if waiting) into the reverse direction, each entering the
    /// link when the kernel received it, as the senders' datagrams do.
    fn read_answers(&mut self, route: &Arc<[usize]>) {
        let mut buffers = core::mem::take(&mut self.receive_buffers);
        for index in 0..self.clients.len() {
            let mut read = 0;
            while read < MAX_READS_PER_ROUND {
                let client = &self.clients[index];
                if client
                    .upstream_offload
                    .receive(&client.upstream, &mut buffers)
                    .is_err()
                {
                    break;
                }
                let stamps = KernelStamps::read(&self.clock);
                for datagram in buffers.datagrams() {
                    read += 1;
                    let arrived = self.entry_time(&stamps, datagram.kernel_time);
                    let client = &mut self.clients[index];
                    client.last_active = arrived;
                    let size = datagram.bytes.len() as u32 + self.config.header_overhead;
                    let _: SendOutcome = self.network.send(
                        arrived,
                        u32::from(client.address.port()),
                        size,
                        ecn_bits(datagram.ecn),
                        datagram.bytes.to_vec(),
                        route.clone(),
                        Target::Client(client.id),
                    );
                }
            }
        }
        self.receive_buffers = buffers;
    }

    /// Sends the packets that left the link to the receiver or back to their client, and
    /// writes them to the capture. Consecutive packets of one destination with the same size
    /// (the last may be shorter) go in one GSO send.
    fn send_delivered(
        &self,
        delivered: &mut Vec<Delivered<Target>>,
        batch: &mut Vec<u8>,
        report: &mut RelayReport,
        mut pcap: Option<&mut PcapWriter>,
    ) -> Result<()> {
        let mut packets = delivered.drain(..).peekable();
        while let Some(first) = packets.next() {
            let id = match first.destination {
                Target::Receiver(id) | Target::Client(id) => id,
            };
            let Some(client) = self.clients.iter().find(|client| client.id == id) else {
                report.orphaned_packets += 1;
                continue;
            };
            let (socket, offload, source, destination) = match first.destination {
                Target::Receiver(_) => (
                    &client.upstream,
                    &client.upstream_offload,
                    client.upstream.local_addr().ok(),
                    self.config.forward,
                ),
                Target::Client(_) => (
                    &self.listen,
                    &self.listen_offload,
                    Some(self.config.forward),
                    client.address,
                ),
            };
            // The ECN field it leaves with; one GSO send carries one field, so a batch holds
            // packets of one codepoint.
            let ecn = codepoint_of(&first);
            // Empty datagrams go one by one (a GSO segment has a size).
            let segment = first.body.len();
            let most = if segment == 0 {
                1
            } else {
                offload.max_segments(segment)
            };
            batch.clear();
            batch.extend_from_slice(&first.body);
            let (mut count, mut last) = (1, segment);
            while count < most
                && last == segment
                && packets.peek().is_some_and(|next| {
                    next.destination == first.destination
                        && next.body.len() <= segment
                        && codepoint_of(next) == ecn
                })
            {
                if let Some(next) = packets.next() {
                    last = next.body.len();
                    batch.extend_from_slice(&next.body);
                    count += 1;
                }
            }
            let outcome = offload.send(socket, destination, batch, segment, ecn);
            report.send_errors += (outcome.refused + outcome.unreachable) as u64;
            if let (Some(writer), Some(SocketAddr::V4(source)), SocketAddr::V4(dest)) =
                (pcap.as_deref_mut(), source, destination)
            {
                let mut bodies: Vec<&[u8]> = batch.chunks(segment.max(1)).collect();
                if bodies.is_empty() {
                    bodies.push(&[]);
                }
                for body in bodies {
                    writer.write_packet(unix_nanos_now(), &ipv4_udp_packet(source, dest, body))?;
                }
            }
        }
        Ok(())
    }
}

/// The value at `fraction` of sorted nanoseconds, in microseconds (0 without values).
fn percentile_us(sorted: &[u64], fraction: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() - 1) as f64 * fraction).round() as usize;
    sorted[index] as f64 / 1000.0
}

fn connect_upstream(forward: SocketAddr) -> Result<UdpSocket> {
    let any: SocketAddr = if forward.is_ipv4() {
        SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, 0))
    } else {
        SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0))
    };
    let socket = UdpSocket::bind(any).context("cannot open a socket towards --forward")?;
    socket
        .connect(forward)
        .with_context(|| format!("cannot connect to {forward}"))?;
    socket.set_nonblocking(true)?;
    set_buffers(&socket);
    Ok(socket)
}

/// Asks for 4 MiB socket buffers (the kernel may cap them); a relay must not lose datagrams
/// in its own sockets during bursts.
fn set_buffers(socket: &UdpSocket) {
    let socket = SockRef::from(socket);
    let _ = socket.set_recv_buffer_size(4 << 20);
    let _ = socket.set_send_buffer_size(4 << 20);
}

/// Starts a relay on its own thread; returns its listening address and the thread's handle.
/// Setting `stop` ends it.
pub fn spawn(
    config: RelayConfig,
    stop: Arc<AtomicBool>,
) -> Result<(SocketAddr, std::thread::JoinHandle<Result<RelayReport>>)> {
    let relay = Relay::bind(config)?;
    let address = relay.local_addr()?;
    let handle = std::thread::Builder::new()
        .name("tfrc-emu-relay".into())
        .spawn(move || relay.run(&stop))?;
    Ok((address, handle))
}

/// The ECN field of a received datagram as bits (0 when not-ECT).
fn ecn_bits(ecn: Option<EcnCodepoint>) -> u8 {
    ecn.map_or(0, |codepoint| codepoint as u8)
}

/// The codepoint a delivered packet leaves with ([`tfrc_sim::PacketMeta::ecn_field`]).
fn codepoint_of<D>(packet: &Delivered<D>) -> Option<EcnCodepoint> {
    EcnCodepoint::from_bits(packet.meta.ecn_field())
}
