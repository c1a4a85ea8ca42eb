//! From a [`Scenario`] to the simulator's (and the emulator's) element configurations, and the
//! static routes between nodes.

use std::collections::HashMap;

use tfrc_proto::Instant;
use tfrc_scenario::{
    Capacity, FlowKind, LinkDirectionSpec, LossModel as LossSpecModel, QueueSpec, Scenario,
    TfrcProfile, TfrcSpec,
};

use crate::link::{LinkDirectionConfig, Transmitter};
use crate::loss::{GilbertElliottParams, LossConfig, LossKind, TimeWindow};
use crate::marker::{FlowSelector, TokenBucketConfig};
use crate::packet::FlowId;
use crate::queue::{QueueConfig, RedParams, RioParams, RioThresholds};

use super::SimulationError;

/// Converts one link direction of a scenario into the configuration of a
/// [`crate::LinkDirection`].
///
/// `markers` are the token-bucket markers on this direction, already resolved to flow ids; a
/// trace-driven direction reads its trace file here. The same function serves the simulator and
/// the link emulator, so that a scenario means the same thing in both.
pub fn link_direction_config(
    spec: &LinkDirectionSpec,
    markers: Vec<TokenBucketConfig>,
    trace_start: Instant,
) -> Result<LinkDirectionConfig, SimulationError> {
    let transmitter = match &spec.capacity {
        Capacity::Rate(rate) => Transmitter::fixed_rate(rate.bits_per_second())?,
        Capacity::Trace {
            path,
            offset,
            opportunity,
        } => Transmitter::trace_file(path, *offset, trace_start, (*opportunity).into())?,
    };
    Ok(LinkDirectionConfig {
        transmitter,
        propagation_delay: spec.delay,
        queue: queue_config(&spec.queue),
        markers,
        loss: spec.loss.as_ref().map(|loss| LossConfig {
            kind: loss_kind(&loss.model),
            window: (!loss.start.is_zero() || loss.stop.is_some()).then(|| TimeWindow {
                start: Instant::ZERO + loss.start,
                stop: loss.stop.map(|stop| Instant::ZERO + stop),
            }),
        }),
    })
}

/// The queue configuration for a scenario queue. The parameters the scenario format does not
/// expose keep the element defaults (ns-2's: RED `wait_` on, mean packet size 500 B, no ECN).
pub fn queue_config(spec: &QueueSpec) -> QueueConfig {
    match spec {
        QueueSpec::DropTail { limit } => QueueConfig::DropTail {
            limit: *limit as usize,
        },
        QueueSpec::Red(red) => QueueConfig::Red(RedParams {
            limit: red.limit as usize,
            min_threshold: red.min_th,
            max_threshold: red.max_th,
            max_probability: red.max_p,
            weight: red.weight,
            gentle: red.gentle,
            ..RedParams::default()
        }),
        QueueSpec::Rio(rio) => QueueConfig::Rio(RioParams {
            limit: rio.limit as usize,
            in_profile: RioThresholds {
                min_threshold: rio.min_in,
                max_threshold: rio.max_in,
                max_probability: rio.p_in,
            },
            out_profile: RioThresholds {
                min_threshold: rio.min_out,
                max_threshold: rio.max_out,
                max_probability: rio.p_out,
            },
            weight: rio.weight,
            ..RioParams::default()
        }),
    }
}

/// The loss process for a scenario loss model.
pub fn loss_kind(model: &LossSpecModel) -> LossKind {
    match *model {
        LossSpecModel::Bernoulli { rate } => LossKind::Bernoulli { probability: rate },
        LossSpecModel::Exponential { mean_gap } => LossKind::ExponentialGaps { mean_gap },
        LossSpecModel::GilbertElliott {
            p_good_to_bad,
            p_bad_to_good,
            loss_good,
            loss_bad,
        } => LossKind::GilbertElliott(GilbertElliottParams {
            good_to_bad: p_good_to_bad,
            bad_to_good: p_bad_to_good,
            loss_in_good: loss_good,
            loss_in_bad: loss_bad,
        }),
    }
}

/// The TFRC core configuration of a scenario flow. The simulator sends exactly on schedule
/// (timer granularity 0), as ns-2 does. Under the `ns2` profile, packets carry ns-2's 32-byte
/// header on top of `packet_size` on the wire (ns-2's default `useHeaders_ true`), so the
/// equation uses `packet_size` while links see `packet_size + 32`.
pub fn tfrc_config(
    spec: &TfrcSpec,
    packet_size: u32,
    key: &str,
) -> Result<tfrc_proto::Config, SimulationError> {
    let config = tfrc_proto::Config {
        packet_size,
        target_rate: spec.target_rate.map(|rate| rate.bytes_per_second()),
        rtt_ref: spec.rtt_ref,
        feedbacks_per_rtt: spec.feedbacks_per_rtt,
        veno: spec.veno.map(|veno| tfrc_proto::Veno {
            beta: veno.beta,
            alpha: veno.alpha,
        }),
        history_discounting: spec.history_discounting,
        oscillation_damping: spec.oscillation_damping,
        timer_granularity: core::time::Duration::ZERO,
        profile: match spec.profile {
            TfrcProfile::Rfc5348 => tfrc_proto::Profile::Rfc5348,
            TfrcProfile::Ns2 => tfrc_proto::Profile::Ns2,
        },
        ..tfrc_proto::Config::default()
    };
    config
        .validate()
        .map_err(|error| SimulationError::scenario(key, error.to_string()))?;
    Ok(config)
}

/// Nodes, link directions and next hops of a scenario.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Node names, in order of first appearance in the links.
    pub nodes: Vec<String>,
    /// Link directions as `(from node, to node, link index in the scenario, forward?)`.
    pub directions: Vec<(usize, usize, usize, bool)>,
    /// `next_hop[node][destination]`: the link direction to take, `None` if unreachable or
    /// `node == destination`.
    pub next_hop: Vec<Vec<Option<usize>>>,
}

impl Topology {
    /// Builds the topology and static shortest-path routes (fewest hops, as ns-2's static
    /// routing with unit costs; among equal paths, the one through the link listed first).
    pub fn new(scenario: &Scenario) -> Topology {
        let nodes: Vec<String> = scenario.nodes().into_iter().map(str::to_owned).collect();
        let index: HashMap<&str, usize> = nodes
            .iter()
            .enumerate()
            .map(|(position, name)| (name.as_str(), position))
            .collect();
        let mut directions = Vec::with_capacity(scenario.links.len() * 2);
        for (link_index, link) in scenario.links.iter().enumerate() {
            let a = index[link.between[0].as_str()];
            let b = index[link.between[1].as_str()];
            directions.push((a, b, link_index, true));
            directions.push((b, a, link_index, false));
        }
        // Breadth-first search from every destination over reversed directions gives, for each
        // node, the first hop of a shortest path towards that destination.
        let count = nodes.len();
        let mut incoming: Vec<Vec<usize>> = vec![Vec::new(); count];
        for (direction, &(_, to, _, _)) in directions.iter().enumerate() {
            incoming[to].push(direction);
        }
        let mut next_hop = vec![vec![None; count]; count];
        for destination in 0..count {
            let mut distance = vec![usize::MAX; count];
            distance[destination] = 0;
            let mut frontier = std::collections::VecDeque::from([destination]);
            while let Some(node) = frontier.pop_front() {
                for &direction in &incoming[node] {
                    let from = directions[direction].0;
                    if distance[from] == usize::MAX {
                        distance[from] = distance[node] + 1;
                        next_hop[from][destination] = Some(direction);
                        frontier.push_back(from);
                    }
                }
            }
        }
        Topology {
            nodes,
            directions,
            next_hop,
        }
    }

    /// The index of a node by name.
    pub fn node(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|node| node == name)
    }

    /// The link directions from `from` to `to`, in order; `None` if there is no route.
    pub fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let mut path = Vec::new();
        let mut node = from;
        while node != to {
            let direction = self.next_hop[node][to]?;
            path.push(direction);
            node = self.directions[direction].1;
            if path.len() > self.directions.len() {
                return None;
            }
        }
        Some(path)
    }

    /// `"from->to"` of a link direction.
    pub fn direction_name(&self, direction: usize) -> String {
        let (from, to, _, _) = self.directions[direction];
        format!("{}->{}", self.nodes[from], self.nodes[to])
    }
}

/// Token-bucket marker configurations per link direction, with the scenario's flow names
/// resolved to flow ids (the flows' positions in the scenario).
pub fn markers_by_direction(
    scenario: &Scenario,
    topology: &Topology,
) -> Result<Vec<Vec<TokenBucketConfig>>, SimulationError> {
    let mut by_direction = vec![Vec::new(); topology.directions.len()];
    for (marker_index, marker) in scenario.markers.iter().enumerate() {
        let key = format!("marker[{marker_index}]");
        let from = topology.node(&marker.link[0]);
        let to = topology.node(&marker.link[1]);
        let direction = topology
            .directions
            .iter()
            .position(|&(a, b, _, _)| Some(a) == from && Some(b) == to)
            .ok_or_else(|| {
                SimulationError::scenario(
                    &key,
                    format!("no link from {} to {}", marker.link[0], marker.link[1]),
                )
            })?;
        let mut flows: Vec<FlowId> = Vec::with_capacity(marker.flows.len());
        for name in &marker.flows {
            let position = scenario
                .flows
                .iter()
                .position(|flow| &flow.name == name)
                .ok_or_else(|| SimulationError::scenario(&key, format!("no flow named {name}")))?;
            flows.push(flow_id(position));
        }
        by_direction[direction].push(TokenBucketConfig {
            rate_bits_per_second: marker.rate.bits_per_second(),
            bucket_bytes: marker.bucket,
            flows: FlowSelector::Flows(flows),
        });
    }
    Ok(by_direction)
}

/// Bit set in the [`FlowId`] of a flow's reverse-path packets (TFRC feedback, TCP ACKs), so a
/// marker that selects a flow colours its data packets only, as a DiffServ edge classifying on
/// source and destination addresses would.
pub const REVERSE_PATH_BIT: FlowId = 1 << 31;

/// The [`FlowId`] of the data packets of the flow at `position` in the scenario.
pub fn flow_id(position: usize) -> FlowId {
    FlowId::try_from(position).unwrap_or(REVERSE_PATH_BIT - 1) & !REVERSE_PATH_BIT
}

/// Whether a flow kind is a congestion-controlled protocol (TFRC or TCP), the flows whose
/// goodputs enter the Jain index.
pub fn is_protocol(kind: &FlowKind) -> bool {
    matches!(kind, FlowKind::Tfrc(_) | FlowKind::Tcp(_))
}
