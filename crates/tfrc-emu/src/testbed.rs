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

//!
//! The module is split along its concerns: [`netns`] (namespaces, signals, state files),
//! [`tun`] (the TUN device ioctl), [`ipv4`] (the packet fields the testbed reads and writes),
//! [`running`] (a testbed's life: `up`, `shutdown`) and [`emulator`] (the event loop). The
//! topology, its routes and what `up` is asked to build are here.

mod emulator;
pub mod ipv4;
pub mod netns;
mod running;
mod tun;

use core::time::Duration;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tfrc_sim::FlowId;

use crate::element_syntax::{DirectionSpec, LinkSpec};
use crate::error::{invalid, Result};

pub use ipv4::{classify, ipv4_ecn, set_ipv4_ecn};
pub use netns::{
    in_namespace, list_namespaces, remove_namespace, remove_stale, running_testbeds,
    signal_process, unavailable_reason, HostInfo, StateFile,
};
pub use running::{Testbed, TestbedReport};

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
            invalid!(
                "a testbed needs at least two hosts, got {}",
                self.hosts.len()
            );
        }
        if self.hosts.len() > 250 {
            invalid!("a testbed has at most 250 hosts, got {}", self.hosts.len());
        }
        if self.attachment.len() != self.hosts.len() {
            invalid!("every host needs a node");
        }
        for host in &self.hosts {
            let valid = !host.is_empty()
                && host.len() <= 32
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !valid {
                invalid!("host name {host:?}: use 1 to 32 ASCII letters, digits, '_' or '-'");
            }
        }
        let mut seen = std::collections::HashSet::new();
        for host in &self.hosts {
            if !seen.insert(host) {
                invalid!("host {host:?} is given twice");
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn bad_host_names_are_refused() {
        let mut topology = Topology::dumbbell(1, 1, &LinkSpec::default());
        topology.hosts[0] = "bad name".into();
        assert!(topology
            .validate()
            .unwrap_err()
            .to_string()
            .contains("bad name"));
        assert_eq!(netns::pid_of_namespace("tfrcemu1234-s1"), Some(1234));
        assert_eq!(netns::pid_of_namespace("other"), None);
    }
}
