//! Testbed mode (root): network namespaces joined through TUN devices that the emulator serves.
//!
//! Each host gets a network namespace `<prefix>-<host>` (prefix `tfrcemu<pid>` by default)
//! holding a loopback and one TUN device `tfrc0` with address `10.200.0.<k>/24` (k = host
//! number from 1). Every IP packet a host sends to another host's address goes down its TUN
//! device, through the emulated link directions on the route between them (the simulator's
//! elements, driven with wall-clock time), and up the destination's TUN device. So any traffic,
//! kernel TCP (reno, cubic, bbr) included, crosses the emulated topology. Addresses exist only
//! inside these namespaces; the host's own network is not touched.
//!
//! **Cleanup guarantees.** What an `up` creates is written to a state file
//! (`/run/tfrc-emu/<prefix>.json`). It is removed:
//! - by [`Testbed::shutdown`] or on drop (processes left in the namespaces are killed, then the
//!   namespaces deleted; TUN devices vanish with the emulator's file descriptors);
//! - by `tfrc testbed down`, which signals the serving process and removes what it listed;
//! - after a crash (even `SIGKILL`) of the process that made them: a watchdog shell started by
//!   `up`, in its own process group, blocks reading a pipe whose only writer is that process;
//!   the pipe closes when it dies, and the watchdog deletes the namespaces and the state file;
//! - and `up` first removes the leftovers of dead testbed processes (state files whose process
//!   is gone, namespaces named `tfrcemu<pid>-…` of a dead pid).
//!
//! **Flows.** The markers select packets by *flow id*: the lower of the source and destination
//! ports of a TCP or UDP packet (the server's port for both directions of a connection), 0 for
//! other packets.

use core::time::Duration;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use tfrc_proto::Instant;
use tfrc_sim::rng::derive_seed;
use tfrc_sim::{FlowId, LinkCounters, LinkDirection};

use crate::linklog::{LinkLog, LinkName};
use crate::network::{Delivered, Network};
use crate::realtime::unix_nanos_now;
use crate::realtime::{Clock, Waiter, DEFAULT_SPIN_MARGIN};
use crate::spec::{DirectionSpec, LinkSpec};
use tfrc_sim::pcap::PcapWriter;
use tfrc_sim::ECN_MASK;

/// Where state files live.
pub const STATE_DIRECTORY: &str = "/run/tfrc-emu";
/// Prefix of every namespace a testbed creates.
pub const NAME_PREFIX: &str = "tfrcemu";
/// Name of the TUN device inside each namespace.
pub const TUN_NAME: &str = "tfrc0";
/// MTU of the TUN devices.
pub const MTU: usize = 1500;

/// The address of host number `index` (from 0): `10.200.0.<index + 1>`.
pub fn host_address(index: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 200, 0, (index + 1) as u8)
}

/// One direction of a link between two nodes of the topology.
#[derive(Debug, Clone)]
pub struct TopologyLink {
    /// Node it leaves.
    pub from: String,
    /// Node it reaches.
    pub to: String,
    /// Its elements.
    pub spec: DirectionSpec,
}

/// Nodes, link directions between them, and the hosts (namespaces) attached to nodes.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    /// Host names (namespaces), in address order.
    pub hosts: Vec<String>,
    /// The node each host sits at (hosts at one node talk without crossing any link).
    pub attachment: Vec<String>,
    /// Link directions.
    pub links: Vec<TopologyLink>,
}

impl Topology {
    /// The relay-like topology: `senders` hosts `s1…` at node `left`, `receivers` hosts `r1…`
    /// at node `right`, and one duplex link `left`↔`right` (forward: left → right).
    pub fn dumbbell(senders: usize, receivers: usize, link: &LinkSpec) -> Topology {
        let mut topology = Topology::default();
        for index in 1..=senders {
            topology.hosts.push(format!("s{index}"));
            topology.attachment.push("left".into());
        }
        for index in 1..=receivers {
            topology.hosts.push(format!("r{index}"));
            topology.attachment.push("right".into());
        }
        topology.links.push(TopologyLink {
            from: "left".into(),
            to: "right".into(),
            spec: link.forward.clone(),
        });
        topology.links.push(TopologyLink {
            from: "right".into(),
            to: "left".into(),
            spec: link.reverse.clone(),
        });
        topology
    }

    /// Checks names and sizes.
    pub fn validate(&self) -> Result<()> {
        if self.hosts.len() < 2 {
            bail!(
                "a testbed needs at least two hosts, got {}",
                self.hosts.len()
            );
        }
        if self.hosts.len() > 250 {
            bail!("a testbed has at most 250 hosts, got {}", self.hosts.len());
        }
        if self.attachment.len() != self.hosts.len() {
            bail!("every host needs a node");
        }
        for host in &self.hosts {
            let valid = !host.is_empty()
                && host.len() <= 32
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !valid {
                bail!("host name {host:?}: use 1 to 32 ASCII letters, digits, '_' or '-'");
            }
        }
        let mut seen = std::collections::HashSet::new();
        for host in &self.hosts {
            if !seen.insert(host) {
                bail!("host {host:?} is given twice");
            }
        }
        Ok(())
    }

    /// The route (link-direction indices) from node `from` to node `to`: the fewest-hop route
    /// of `tfrc_scenario::route` (the simulator's), or `None` if the nodes are not connected.
    pub fn route(&self, from: &str, to: &str) -> Option<Vec<usize>> {
        let edges: Vec<(&str, &str)> = self
            .links
            .iter()
            .map(|link| (link.from.as_str(), link.to.as_str()))
            .collect();
        tfrc_scenario::route::fewest_hops(&edges, from, to)
    }
}

/// What `up` is asked to build.
#[derive(Debug, Clone)]
pub struct TestbedConfig {
    /// Prefix of the namespace names (default `tfrcemu<pid>`); must start with `tfrcemu`.
    pub prefix: String,
    /// Hosts and links.
    pub topology: Topology,
    /// Seed of the links' random elements.
    pub seed: u64,
    /// `links.csv` of every link direction and its interval.
    pub links_csv: Option<(PathBuf, Duration)>,
    /// A pcap capture of every packet leaving its route (raw IP).
    pub pcap: Option<PathBuf>,
    /// Run the emulator thread as `SCHED_FIFO` at this priority.
    pub realtime_priority: Option<i32>,
    /// Flows whose data packets the emulator counts (for `flows.csv`), and the interval of
    /// the counts.
    pub tracked_flows: Vec<TrackedFlow>,
    /// Interval of the tracked flows' counts.
    pub flow_interval: Duration,
}

/// A flow counted by the emulator: packets of flow id `flow` going from host `from` to host
/// `to` (indices in the topology) are its data packets.
#[derive(Debug, Clone)]
pub struct TrackedFlow {
    /// Flow id (its port).
    pub flow: FlowId,
    /// Sending host index.
    pub from: usize,
    /// Receiving host index.
    pub to: usize,
    /// The application payload the receiving application got, counted by that application
    /// and sampled with the emulator's counts (`flows.csv`'s goodput); `None`: not counted.
    pub delivered_payload: Option<Arc<std::sync::atomic::AtomicU64>>,
}

/// Cumulative counts of one tracked flow, in the output schema's terms: bytes are IP packets
/// entering the first link of the route (`sent`) or delivered to the destination host (`recv`);
/// goodput is what the receiving application got (its own count, sampled by the emulator with
/// the others).
pub use tfrc_output::FlowTotals;

/// What the emulator counted for the tracked flows, on its own clock.
#[derive(Debug, Clone, Default)]
pub struct FlowLog {
    /// Cumulative totals at the end of each interval: `intervals[i][flow]`.
    pub intervals: Vec<Vec<FlowTotals>>,
    /// Data packets sent per 100 ms bin: `sent_per_100ms[flow][bin]`.
    pub sent_per_100ms: Vec<Vec<u32>>,
    /// Cumulative totals now.
    pub totals: Vec<FlowTotals>,
}

impl FlowLog {
    fn new(flows: usize) -> Self {
        FlowLog {
            intervals: Vec::new(),
            sent_per_100ms: vec![Vec::new(); flows],
            totals: vec![FlowTotals::default(); flows],
        }
    }
}

impl TestbedConfig {
    /// A testbed with a prefix unique in this process: `tfrcemu<pid>`, then `tfrcemu<pid>n2`…
    pub fn new(topology: Topology) -> Self {
        static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let count = COUNT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let prefix = if count == 0 {
            format!("{NAME_PREFIX}{pid}")
        } else {
            format!("{NAME_PREFIX}{pid}n{}", count + 1)
        };
        TestbedConfig {
            prefix,
            topology,
            seed: 1,
            links_csv: None,
            pcap: None,
            realtime_priority: None,
            tracked_flows: Vec::new(),
            flow_interval: Duration::from_secs(1),
        }
    }
}

/// One host of a running testbed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Host name.
    pub name: String,
    /// Its network namespace.
    pub namespace: String,
    /// Its address.
    pub address: Ipv4Addr,
}

/// The state file of a testbed: what to remove.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StateFile {
    /// The process serving the testbed.
    pub pid: u32,
    /// The namespace prefix.
    pub prefix: String,
    /// The hosts.
    pub hosts: Vec<HostInfo>,
}

/// Why the root-only parts cannot run here, or `None` when they can (root, `/dev/net/tun`,
/// `ip`).
pub fn unavailable_reason() -> Option<String> {
    if effective_uid() != 0 {
        return Some("the testbed needs root (network namespaces and TUN devices)".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(output) if output.status.success() => None,
        _ => Some("the `ip` command (iproute2) is missing".into()),
    }
}

/// The effective user id of this process.
#[allow(unsafe_code)]
fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() }
}

/// Sends `signal` to process `pid`. Only a single process is signalled: a pid of 0 or above
/// `i32::MAX` (which `kill` would read as a process group, or all processes) is refused.
#[allow(unsafe_code)]
pub fn signal_process(pid: u32, signal: libc::c_int) -> std::io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .ok()
        .filter(|&pid| pid > 0)
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: kill takes plain integers and touches no memory of ours; at worst the process
    // is gone (ESRCH).
    if unsafe { libc::kill(pid, signal) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Runs `ip` with these arguments; an error quotes the command and its stderr.
fn ip(arguments: &[&str]) -> Result<()> {
    let output = Command::new("ip")
        .args(arguments)
        .stdin(Stdio::null())
        .output()
        .context("cannot run `ip` (iproute2)")?;
    if !output.status.success() {
        bail!(
            "`ip {}` failed: {}",
            arguments.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// Names of the existing network namespaces.
pub fn list_namespaces() -> Vec<String> {
    let Ok(output) = Command::new("ip").args(["netns", "list"]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Kills every process inside `namespace`, then deletes it. Errors are ignored (it may be gone).
pub fn remove_namespace(namespace: &str) {
    if let Ok(output) = Command::new("ip")
        .args(["netns", "pids", namespace])
        .output()
    {
        for pid in String::from_utf8_lossy(&output.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse::<u32>() {
                // A pid read from the kernel; at worst the process is gone.
                let _ = signal_process(pid, libc::SIGKILL);
            }
        }
    }
    let _ = Command::new("ip")
        .args(["netns", "del", namespace])
        .stderr(Stdio::null())
        .status();
}

fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The pid embedded in a namespace name `tfrcemu<pid>-<host>`, if any.
fn pid_of_namespace(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(NAME_PREFIX)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Removes the leftovers of testbeds whose serving process is dead: their state files and
/// namespaces. Returns the namespaces removed.
pub fn remove_stale() -> Vec<String> {
    let mut removed = Vec::new();
    if let Ok(entries) = std::fs::read_dir(STATE_DIRECTORY) {
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Ok(state) = serde_json::from_str::<StateFile>(&text) else {
                continue;
            };
            if !process_alive(state.pid) {
                for host in &state.hosts {
                    remove_namespace(&host.namespace);
                    removed.push(host.namespace.clone());
                }
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    for namespace in list_namespaces() {
        if let Some(pid) = pid_of_namespace(&namespace) {
            if !process_alive(pid) {
                remove_namespace(&namespace);
                removed.push(namespace);
            }
        }
    }
    removed
}

/// The state files of running testbeds.
pub fn running_testbeds() -> Vec<(PathBuf, StateFile)> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(STATE_DIRECTORY) {
        for entry in entries.flatten() {
            let path = entry.path();
            if let Ok(text) = std::fs::read_to_string(&path) {
                if let Ok(state) = serde_json::from_str::<StateFile>(&text) {
                    if process_alive(state.pid) {
                        found.push((path, state));
                    }
                }
            }
        }
    }
    found.sort_by(|a, b| a.1.prefix.cmp(&b.1.prefix));
    found
}

/// Runs `work` on a new thread that has entered the network namespace `namespace`; sockets it
/// opens live there. Returns what `work` returns.
pub fn in_namespace<T: Send + 'static>(
    namespace: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>> {
    let path = format!("/var/run/netns/{namespace}");
    let file = File::open(&path).with_context(|| format!("no network namespace {namespace}"))?;
    let (ready_sender, ready) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name(format!("ns-{namespace}"))
        .spawn(move || {
            if let Err(error) = enter_network_namespace(&file) {
                let _ = ready_sender.send(Err(error));
                panic!("setns failed");
            }
            let _ = ready_sender.send(Ok(()));
            work()
        })?;
    match ready.recv() {
        Ok(Ok(())) => Ok(handle),
        Ok(Err(error)) => Err(anyhow!("cannot enter namespace {namespace}: {error}")),
        Err(_) => Err(anyhow!("cannot enter namespace {namespace}")),
    }
}

/// Moves the calling thread into the network namespace that `namespace` (an open
/// `/var/run/netns/…` file) refers to.
#[allow(unsafe_code)]
fn enter_network_namespace(namespace: &File) -> std::io::Result<()> {
    // SAFETY: setns takes a descriptor, valid for the call since `namespace` is borrowed, and a
    // constant; it touches no memory of ours and changes only the calling thread's namespace.
    if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `struct ifreq` as TUNSETIFF reads it: the interface name and its flags.
#[repr(C)]
struct InterfaceRequest {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    padding: [u8; 22],
}

// The size of `struct ifreq`, which TUNSETIFF reads and writes whole.
const _: () = assert!(core::mem::size_of::<InterfaceRequest>() == 40);

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// Attaches the TUN device `tun` (an open `/dev/net/tun`) to the interface `request` names,
/// creating it with `request`'s flags.
#[allow(unsafe_code)]
fn set_tun_interface(tun: &File, request: &mut InterfaceRequest) -> std::io::Result<()> {
    // SAFETY: the descriptor is valid for the call (`tun` is borrowed), and TUNSETIFF reads and
    // writes one `struct ifreq`, which `InterfaceRequest` lays out (`#[repr(C)]`, 40 bytes)
    // and `request` borrows mutably for the call.
    let result = unsafe {
        libc::ioctl(
            tun.as_raw_fd(),
            TUNSETIFF as _,
            request as *mut InterfaceRequest,
        )
    };
    if result < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Creates the TUN device `tfrc0` inside `namespace` and returns it, open (non-blocking). The
/// device disappears when the file is closed.
fn create_tun(namespace: &str) -> Result<File> {
    let handle = in_namespace(namespace, || -> std::io::Result<File> {
        // std opens with O_CLOEXEC.
        let tun = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/net/tun")?;
        let mut request = InterfaceRequest {
            name: [0; libc::IFNAMSIZ],
            flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
            padding: [0; 22],
        };
        request.name[..TUN_NAME.len()].copy_from_slice(TUN_NAME.as_bytes());
        set_tun_interface(&tun, &mut request)?;
        Ok(tun)
    })?;
    handle
        .join()
        .map_err(|_| anyhow!("the TUN thread of {namespace} panicked"))?
        .with_context(|| format!("cannot create the TUN device in {namespace}"))
}

/// What a testbed's emulator counted.
#[derive(Debug, Clone, Default)]
pub struct TestbedReport {
    /// Seconds served.
    pub seconds: f64,
    /// Per link direction (topology order): its counters.
    pub links: Vec<LinkCounters>,
    /// Packets read from the TUN devices.
    pub packets_in: u64,
    /// Packets written to the TUN devices.
    pub packets_out: u64,
    /// Packets not for a testbed host (IPv6, other addresses), dropped.
    pub foreign_packets: u64,
    /// Packets with no route between their hosts, dropped.
    pub unroutable_packets: u64,
}

/// A running testbed: namespaces, TUN devices and the emulator thread.
#[derive(Debug)]
pub struct Testbed {
    prefix: String,
    hosts: Vec<HostInfo>,
    state_file: PathBuf,
    watchdog: Option<(Child, ChildStdin)>,
    stop: Arc<AtomicBool>,
    emulator: Option<JoinHandle<Result<TestbedReport>>>,
    torn_down: bool,
    flow_log: Arc<std::sync::Mutex<FlowLog>>,
    started: Arc<std::sync::OnceLock<std::time::Instant>>,
}

impl Testbed {
    /// Creates the namespaces and TUN devices and starts serving them on a new thread.
    pub fn up(config: TestbedConfig) -> Result<Testbed> {
        if let Some(reason) = unavailable_reason() {
            bail!("{reason}");
        }
        config.topology.validate()?;
        if !config.prefix.starts_with(NAME_PREFIX) || config.prefix.len() > 40 {
            bail!("the prefix must start with {NAME_PREFIX:?} and be at most 40 characters");
        }
        remove_stale();
        // Routes between every pair of hosts.
        let topology = &config.topology;
        let host_count = topology.hosts.len();
        let mut routes: Vec<Vec<Option<Arc<[usize]>>>> = vec![vec![None; host_count]; host_count];
        for (from, from_node) in topology.attachment.iter().enumerate() {
            for (to, to_node) in topology.attachment.iter().enumerate() {
                if from != to {
                    routes[from][to] = topology.route(from_node, to_node).map(Arc::from);
                }
            }
        }
        let links = topology
            .links
            .iter()
            .map(|link| {
                let label = format!("testbed:{}->{}", link.from, link.to);
                Ok(link
                    .spec
                    .to_config(Instant::ZERO)?
                    .build(derive_seed(config.seed, &label))?)
            })
            .collect::<Result<Vec<LinkDirection>>>()?;

        let hosts: Vec<HostInfo> = topology
            .hosts
            .iter()
            .enumerate()
            .map(|(index, name)| HostInfo {
                name: name.clone(),
                namespace: format!("{}-{name}", config.prefix),
                address: host_address(index),
            })
            .collect();
        std::fs::create_dir_all(STATE_DIRECTORY)
            .with_context(|| format!("cannot create {STATE_DIRECTORY}"))?;
        let state_file = Path::new(STATE_DIRECTORY).join(format!("{}.json", config.prefix));
        let state = StateFile {
            pid: std::process::id(),
            prefix: config.prefix.clone(),
            hosts: hosts.clone(),
        };
        std::fs::write(&state_file, serde_json::to_string_pretty(&state)?)
            .with_context(|| format!("cannot write {}", state_file.display()))?;
        let mut testbed = Testbed {
            prefix: config.prefix.clone(),
            hosts,
            state_file,
            watchdog: None,
            stop: Arc::new(AtomicBool::new(false)),
            emulator: None,
            torn_down: false,
            flow_log: Arc::new(std::sync::Mutex::new(FlowLog::new(
                config.tracked_flows.len(),
            ))),
            started: Arc::new(std::sync::OnceLock::new()),
        };
        testbed.watchdog = Some(testbed.start_watchdog()?);
        let mut tuns = Vec::new();
        for host in &testbed.hosts {
            ip(&["netns", "add", &host.namespace])?;
            ip(&["-n", &host.namespace, "link", "set", "lo", "up"])?;
            let tun = create_tun(&host.namespace)?;
            let address = format!("{}/24", host.address);
            ip(&[
                "-n",
                &host.namespace,
                "addr",
                "add",
                &address,
                "dev",
                TUN_NAME,
            ])?;
            ip(&[
                "-n",
                &host.namespace,
                "link",
                "set",
                TUN_NAME,
                "mtu",
                &MTU.to_string(),
                "up",
            ])?;
            tuns.push(tun);
        }
        let names = topology
            .links
            .iter()
            .map(|link| LinkName {
                from: link.from.clone(),
                to: link.to.clone(),
                capacity_bits_per_second: link.spec.rate_bits_per_second(),
            })
            .collect();
        let emulator = Emulator {
            tuns,
            tracked: config.tracked_flows.clone(),
            flow_interval: config.flow_interval,
            flow_log: testbed.flow_log.clone(),
            started: testbed.started.clone(),
            routes,
            network: Network::new(links),
            names,
            links_csv: config.links_csv.clone(),
            pcap: config.pcap.clone(),
            realtime_priority: config.realtime_priority,
        };
        let stop = testbed.stop.clone();
        testbed.emulator = Some(
            std::thread::Builder::new()
                .name("tfrc-emu-testbed".into())
                .spawn(move || emulator.serve(&stop))?,
        );
        while testbed.started.get().is_none() && testbed.is_serving() {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(testbed)
    }

    /// Starts the watchdog that removes everything if this process dies without cleaning up.
    fn start_watchdog(&self) -> Result<(Child, ChildStdin)> {
        let mut script = String::from("read _unused; ");
        for host in &self.hosts {
            script.push_str(&format!(
                "for p in $(ip netns pids {0} 2>/dev/null); do kill -9 $p; done; ip netns del {0} 2>/dev/null; ",
                host.namespace
            ));
        }
        script.push_str(&format!("rm -f {}", self.state_file.display()));
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("cannot start the cleanup watchdog (sh)")?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| anyhow!("the watchdog has no stdin"))?;
        Ok((child, stdin))
    }

    /// The namespace prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The hosts.
    pub fn hosts(&self) -> &[HostInfo] {
        &self.hosts
    }

    /// One host by name.
    pub fn host(&self, name: &str) -> Result<&HostInfo> {
        self.hosts
            .iter()
            .find(|host| host.name == name)
            .ok_or_else(|| {
                anyhow!(
                    "no host {name:?} in this testbed; hosts: {}",
                    self.hosts
                        .iter()
                        .map(|host| host.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }

    /// A command that runs `program` inside `host`'s namespace.
    pub fn command(&self, host: &str, program: &str) -> Result<Command> {
        let host = self.host(host)?;
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &host.namespace, program]);
        Ok(command)
    }

    /// The moment of the emulator's time zero (loss windows, traces, `links.csv` and the flow
    /// counts are relative to it).
    pub fn origin(&self) -> Option<std::time::Instant> {
        self.started.get().copied()
    }

    /// What the emulator counted for the tracked flows so far.
    pub fn flow_log(&self) -> FlowLog {
        self.flow_log
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }

    /// Whether the emulator thread is still serving.
    pub fn is_serving(&self) -> bool {
        self.emulator
            .as_ref()
            .is_some_and(|handle| !handle.is_finished())
    }

    /// Stops the emulator and removes namespaces, devices and the state file.
    pub fn shutdown(mut self) -> Result<TestbedReport> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<TestbedReport> {
        if self.torn_down {
            return Ok(TestbedReport::default());
        }
        self.torn_down = true;
        self.stop.store(true, Ordering::Relaxed);
        let report = match self.emulator.take() {
            Some(handle) => handle
                .join()
                .map_err(|_| anyhow!("the emulator thread panicked"))?,
            None => Ok(TestbedReport::default()),
        };
        for host in &self.hosts {
            remove_namespace(&host.namespace);
        }
        let _ = std::fs::remove_file(&self.state_file);
        if let Some((mut child, stdin)) = self.watchdog.take() {
            drop(stdin);
            let _ = child.wait();
        }
        report
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// The emulator loop of a testbed.
struct Emulator {
    /// The TUN device of each host (host order).
    tuns: Vec<File>,
    tracked: Vec<TrackedFlow>,
    flow_interval: Duration,
    flow_log: Arc<std::sync::Mutex<FlowLog>>,
    started: Arc<std::sync::OnceLock<std::time::Instant>>,
    routes: Vec<Vec<Option<Arc<[usize]>>>>,
    /// Destination: (source host, destination host, flow id).
    network: Network<(usize, usize, FlowId)>,
    names: Vec<LinkName>,
    links_csv: Option<(PathBuf, Duration)>,
    pcap: Option<PathBuf>,
    realtime_priority: Option<i32>,
}

/// The ECN field of an IPv4 packet (the low two bits of its TOS byte, RFC 3168 §5); 0 for
/// anything shorter than an IPv4 header ([`classify`] refuses those).
pub fn ipv4_ecn(packet: &[u8]) -> u8 {
    match packet {
        [first, tos, ..] if first >> 4 == 4 && packet.len() >= 20 => tos & ECN_MASK,
        _ => 0,
    }
}

/// Sets the ECN field of an IPv4 packet to `ecn` and its header checksum to match (the header
/// is the IHL's length, options included). Packets that are not IPv4, or whose field already
/// holds `ecn`, are left alone.
pub fn set_ipv4_ecn(packet: &mut [u8], ecn: u8) {
    if packet.len() < 20 || packet[0] >> 4 != 4 || packet[1] & ECN_MASK == ecn & ECN_MASK {
        return;
    }
    let header = usize::from(packet[0] & 0x0f) * 4;
    if header < 20 || packet.len() < header {
        return;
    }
    packet[1] = (packet[1] & !ECN_MASK) | (ecn & ECN_MASK);
    packet[10..12].copy_from_slice(&[0, 0]);
    let checksum = tfrc_sim::pcap::internet_checksum(&packet[..header]);
    packet[10..12].copy_from_slice(&checksum.to_be_bytes());
}

/// Source host index, destination host index and flow id of an IPv4 packet between testbed
/// hosts, or `None` for anything else.
pub fn classify(packet: &[u8]) -> Option<(usize, FlowId)> {
    if packet.len() < 20 || packet[0] >> 4 != 4 {
        return None;
    }
    let destination = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
    let [10, 200, 0, last] = destination.octets() else {
        return None;
    };
    if last == 0 || last == 255 {
        return None;
    }
    let header = usize::from(packet[0] & 0x0f) * 4;
    let protocol = packet[9];
    let fragment_offset = u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff;
    let flow = if (protocol == 6 || protocol == 17)
        && fragment_offset == 0
        && packet.len() >= header + 4
    {
        let source_port = u16::from_be_bytes([packet[header], packet[header + 1]]);
        let destination_port = u16::from_be_bytes([packet[header + 2], packet[header + 3]]);
        FlowId::from(source_port.min(destination_port))
    } else {
        0
    };
    Some((usize::from(last) - 1, flow))
}

impl Emulator {
    fn serve(mut self, stop: &AtomicBool) -> Result<TestbedReport> {
        if let Some(priority) = self.realtime_priority {
            tfrc_udp::pacing::set_realtime_priority(priority)
                .context("cannot use real-time scheduling (needs root or CAP_SYS_NICE)")?;
        }
        let origin = std::time::Instant::now();
        let clock = Clock::from_origin(origin);
        let _ = self.started.set(origin);
        let waiter = Waiter::new(clock, DEFAULT_SPIN_MARGIN);
        let tracked_index = |source: usize, destination: usize, flow: FlowId| {
            self.tracked.iter().position(|tracked| {
                tracked.flow == flow && tracked.from == source && tracked.to == destination
            })
        };
        let mut totals = vec![FlowTotals::default(); self.tracked.len()];
        let mut next_flow_row = Instant::ZERO + self.flow_interval;
        let fds: Vec<RawFd> = self.tuns.iter().map(AsRawFd::as_raw_fd).collect();
        let mut report = TestbedReport::default();
        let mut link_log = match &self.links_csv {
            Some((path, interval)) => Some(LinkLog::create(path, self.names.clone(), *interval)?),
            None => None,
        };
        let mut pcap = match &self.pcap {
            Some(path) => Some(PcapWriter::create(path)?),
            None => None,
        };
        let mut buffer = vec![0u8; 65_536];
        let mut delivered: Vec<Delivered<(usize, usize, FlowId)>> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let mut deadline = self.network.poll_timeout();
            if let Some(log) = &link_log {
                deadline = Some(deadline.map_or(log.next_due(), |at| at.min(log.next_due())));
            }
            if !self.tracked.is_empty() {
                deadline = Some(deadline.map_or(next_flow_row, |at| at.min(next_flow_row)));
            }
            let _ = waiter.wait(&fds, deadline);
            for (source, mut tun) in self.tuns.iter().enumerate() {
                for _ in 0..64 {
                    // Non-blocking: an error (EAGAIN) means nothing more to read.
                    let length = match tun.read(&mut buffer) {
                        Ok(length) if length > 0 => length,
                        _ => break,
                    };
                    let now = clock.now();
                    report.packets_in += 1;
                    let packet = &buffer[..length];
                    let Some((destination, flow)) = classify(packet) else {
                        report.foreign_packets += 1;
                        continue;
                    };
                    let Some(route) = self
                        .routes
                        .get(source)
                        .and_then(|row| row.get(destination))
                        .and_then(Clone::clone)
                    else {
                        report.unroutable_packets += 1;
                        continue;
                    };
                    if let Some(index) = tracked_index(source, destination, flow) {
                        totals[index].sent_bytes += length as u64;
                        totals[index].sent_packets += 1;
                        let bin = (now.as_nanos() / 100_000_000) as usize;
                        let mut log = self.flow_log.lock().unwrap_or_else(|p| p.into_inner());
                        let bins = &mut log.sent_per_100ms[index];
                        if bins.len() <= bin {
                            bins.resize(bin + 1, 0);
                        }
                        bins[bin] += 1;
                    }
                    let _ = self.network.send(
                        now,
                        flow,
                        length as u32,
                        ipv4_ecn(packet),
                        packet.to_vec(),
                        route,
                        (source, destination, flow),
                    );
                }
            }
            let now = clock.now();
            self.network.deliver_due(now, &mut delivered);
            for mut packet in delivered.drain(..) {
                let ecn = packet.meta.ecn_field();
                set_ipv4_ecn(&mut packet.body, ecn);
                let (source, destination, flow) = packet.destination;
                if let Some(index) = tracked_index(source, destination, flow) {
                    totals[index].recv_bytes += packet.body.len() as u64;
                    totals[index].recv_packets += 1;
                }
                let written = (&self.tuns[destination]).write(&packet.body);
                if matches!(written, Ok(written) if written > 0) {
                    report.packets_out += 1;
                }
                if let Some(writer) = &mut pcap {
                    writer.write_packet(unix_nanos_now(), &packet.body)?;
                }
            }
            if let Some(log) = &mut link_log {
                log.write_due(now, &self.network.samples())?;
            }
            if !self.tracked.is_empty() {
                for (totals, tracked) in totals.iter_mut().zip(&self.tracked) {
                    if let Some(counter) = &tracked.delivered_payload {
                        totals.goodput_bytes = counter.load(std::sync::atomic::Ordering::Relaxed);
                    }
                }
                let mut log = self.flow_log.lock().unwrap_or_else(|p| p.into_inner());
                while next_flow_row <= now {
                    log.intervals.push(totals.clone());
                    next_flow_row += self.flow_interval;
                }
                log.totals.clone_from(&totals);
            }
        }
        if let Some(log) = &mut link_log {
            log.flush()?;
        }
        if let Some(writer) = pcap.take() {
            writer.finish()?;
        }
        report.seconds = clock.now().as_nanos() as f64 / 1e9;
        report.links = self
            .network
            .samples()
            .iter()
            .map(|sample| sample.counters)
            .collect();
        Ok(report)
    }
}

/// Writes `text` to standard output and flushes (for `up`'s banner, read by scripts).
pub fn print_flush(text: &str) {
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "{text}");
    let _ = stdout.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The TUN path reads the ECN field of the IPv4 header and writes CE back with a header
    /// checksum that still verifies (options included); other packets are left alone.
    #[test]
    fn ipv4_ecn_is_read_and_set_with_a_valid_checksum() {
        for ihl in [5u8, 6] {
            let header = usize::from(ihl) * 4;
            let mut packet = vec![0u8; header + 8];
            packet[0] = 0x40 | ihl;
            packet[1] = 0xb8 | 0b10; // DSCP EF, ECT(0)
            packet[8] = 64;
            packet[9] = 17;
            packet[12..16].copy_from_slice(&[10, 200, 0, 1]);
            packet[16..20].copy_from_slice(&[10, 200, 0, 2]);
            let checksum = tfrc_sim::pcap::internet_checksum(&packet[..header]);
            packet[10..12].copy_from_slice(&checksum.to_be_bytes());
            assert_eq!(ipv4_ecn(&packet), 0b10);
            set_ipv4_ecn(&mut packet, tfrc_sim::ECN_CE);
            assert_eq!(ipv4_ecn(&packet), 0b11);
            assert_eq!(packet[1] & !0b11, 0xb8, "the DSCP is kept");
            assert_eq!(tfrc_sim::pcap::internet_checksum(&packet[..header]), 0);
        }
        let mut ipv6 = vec![0x60u8; 40];
        set_ipv4_ecn(&mut ipv6, tfrc_sim::ECN_CE);
        assert_eq!(ipv6, vec![0x60u8; 40]);
        assert_eq!(ipv4_ecn(&[0x45, 0b11]), 0);
    }

    #[test]
    fn routes_follow_link_directions() {
        let link = LinkSpec::default();
        let topology = Topology::dumbbell(2, 1, &link);
        assert_eq!(topology.route("left", "right"), Some(vec![0]));
        assert_eq!(topology.route("right", "left"), Some(vec![1]));
        assert_eq!(topology.route("left", "left"), Some(vec![]));
        assert_eq!(topology.route("left", "nowhere"), None);
        let mut chain = Topology::default();
        for (from, to) in [("a", "b"), ("b", "c"), ("c", "b"), ("b", "a")] {
            chain.links.push(TopologyLink {
                from: from.into(),
                to: to.into(),
                spec: DirectionSpec::default(),
            });
        }
        assert_eq!(chain.route("a", "c"), Some(vec![0, 1]));
        assert_eq!(chain.route("c", "a"), Some(vec![2, 3]));
    }

    #[test]
    fn packets_are_classified_by_destination_and_lower_port() {
        let packet = tfrc_sim::pcap::ipv4_udp_packet(
            "10.200.0.1:40000".parse().unwrap(),
            "10.200.0.3:5201".parse().unwrap(),
            b"x",
        );
        assert_eq!(classify(&packet), Some((2, 5201)));
        let outside = tfrc_sim::pcap::ipv4_udp_packet(
            "10.200.0.1:40000".parse().unwrap(),
            "192.0.2.1:5201".parse().unwrap(),
            b"x",
        );
        assert_eq!(classify(&outside), None);
        assert_eq!(classify(&[0x60; 40]), None);
        assert_eq!(classify(&[]), None);
    }

    #[test]
    fn bad_host_names_are_refused() {
        let mut topology = Topology::dumbbell(1, 1, &LinkSpec::default());
        topology.hosts[0] = "bad name".into();
        assert!(topology
            .validate()
            .unwrap_err()
            .to_string()
            .contains("bad name"));
        assert_eq!(pid_of_namespace("tfrcemu1234-s1"), Some(1234));
        assert_eq!(pid_of_namespace("other"), None);
    }
}
