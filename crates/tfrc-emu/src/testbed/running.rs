//! A running testbed: `up` makes the namespaces, TUN devices and the state file, starts the
//! crash watchdog and the emulator thread; `shutdown` (or drop) removes everything.

use core::time::Duration;
use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use tfrc_proto::Instant;
use tfrc_sim::rng::derive_seed;
use tfrc_sim::{LinkCounters, LinkDirection};

use super::emulator::Emulator;
use super::netns::{ip, remove_namespace, remove_stale, unavailable_reason, HostInfo, StateFile};
use super::tun::create_tun;
use super::{
    host_address, FlowLog, TestbedConfig, Topology, MTU, NAME_PREFIX, STATE_DIRECTORY, TUN_NAME,
};
use crate::error::{invalid, Error, IoContext, Result};
use crate::linklog::LinkName;
use crate::network::Network;

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
        check_can_start(&config)?;
        remove_stale();
        let topology = &config.topology;
        let routes = host_routes(topology);
        let links = build_links(&config)?;
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
        let state_file = write_state_file(&config.prefix, &hosts)?;
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
        let tuns = testbed.make_hosts()?;
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

    /// Creates each host's namespace with its loopback up and its TUN device addressed and up;
    /// returns the TUN devices (host order), which the emulator serves.
    fn make_hosts(&self) -> Result<Vec<File>> {
        let mut tuns = Vec::new();
        for host in &self.hosts {
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
        Ok(tuns)
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
            .ok_or_else(|| Error::Failed("the watchdog has no stdin".into()))?;
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
                Error::Invalid(format!(
                    "no host {name:?} in this testbed; hosts: {}",
                    self.hosts
                        .iter()
                        .map(|host| host.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
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
                .map_err(|_| Error::Failed("the emulator thread panicked".into()))?,
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

/// Refuses a testbed this machine cannot make (not root, no TUN, no `ip`), an invalid
/// topology, or a prefix that is not the testbed's (cleanup finds namespaces by it).
fn check_can_start(config: &TestbedConfig) -> Result<()> {
    if let Some(reason) = unavailable_reason() {
        return Err(Error::Unavailable(reason));
    }
    config.topology.validate()?;
    if !config.prefix.starts_with(NAME_PREFIX) || config.prefix.len() > 40 {
        invalid!("the prefix must start with {NAME_PREFIX:?} and be at most 40 characters");
    }
    Ok(())
}

/// Routes between every pair of hosts, `routes[from][to]` (host indices): the link
/// directions between their nodes, `None` when they are not connected or the same host.
fn host_routes(topology: &Topology) -> Vec<Vec<Option<Arc<[usize]>>>> {
    let host_count = topology.hosts.len();
    let mut routes: Vec<Vec<Option<Arc<[usize]>>>> = vec![vec![None; host_count]; host_count];
    for (from, from_node) in topology.attachment.iter().enumerate() {
        for (to, to_node) in topology.attachment.iter().enumerate() {
            if from != to {
                routes[from][to] = topology.route(from_node, to_node).map(Arc::from);
            }
        }
    }
    routes
}

/// The simulator's link directions of the topology (topology order), each seeded from the
/// testbed's seed and its name.
fn build_links(config: &TestbedConfig) -> Result<Vec<LinkDirection>> {
    config
        .topology
        .links
        .iter()
        .map(|link| {
            let label = format!("testbed:{}->{}", link.from, link.to);
            Ok(link
                .spec
                .to_config(Instant::ZERO)?
                .build(derive_seed(config.seed, &label))?)
        })
        .collect()
}

/// Writes the state file of testbed `prefix` (what to remove after a crash) and returns its
/// path.
fn write_state_file(prefix: &str, hosts: &[HostInfo]) -> Result<PathBuf> {
    std::fs::create_dir_all(STATE_DIRECTORY)
        .with_context(|| format!("cannot create {STATE_DIRECTORY}"))?;
    let state_file = Path::new(STATE_DIRECTORY).join(format!("{prefix}.json"));
    let state = StateFile {
        pid: std::process::id(),
        prefix: prefix.to_owned(),
        hosts: hosts.to_vec(),
    };
    std::fs::write(&state_file, serde_json::to_string_pretty(&state)?)
        .with_context(|| format!("cannot write {}", state_file.display()))?;
    Ok(state_file)
}
