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

/// The TFRC core configuration of a scenario flow: the one mapping from a scenario's `[[flow]]`
/// to `tfrc_proto::Config`, used by the simulator and the testbed.
///
/// `wire_size` is the size of a full TFRC packet, header included: the scenario's
/// `packet_size`, which counts headers for every kind of flow, less what the carrier adds below
/// TFRC (nothing in the simulator, 28 bytes of IP and UDP in the testbed).
/// - RFC 5348 profile: s = `wire_size − 32`, since §3.1 defines s as "the segment size in
///   bytes (excluding IP and transport protocol headers)"; the sender puts the 32-byte header
///   on top, so packets are `wire_size` bytes.
/// - ns-2 profile: ns-2 with `useHeaders_ false`, as the ns-2 translator runs the same
///   scenario: packets are `wire_size` bytes and the equation uses s = `wire_size`.
///
/// The simulator sends exactly on schedule (timer granularity 0), as ns-2 does.
pub fn tfrc_config(
    spec: &TfrcSpec,
    wire_size: u32,
    key: &str,
) -> Result<tfrc_proto::Config, SimulationError> {
    let header = tfrc_proto::wire::DATA_HEADER_LEN as u32;
    if wire_size <= header {
        return Err(SimulationError::scenario(
            key,
            format!(
                "a TFRC packet_size must exceed the {header}-byte TFRC header, got {wire_size}"
            ),
        ));
    }
    let packet_size = match spec.profile {
        TfrcProfile::Rfc5348 => wire_size - header,
        TfrcProfile::Ns2 => wire_size,
    };
    let config = tfrc_proto::Config {
        packet_size,
        ns2_use_headers: false,
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
/// goodputs enter the Jain index ([`tfrc_output::is_protocol_kind`]).
pub fn is_protocol(kind: &FlowKind) -> bool {
    tfrc_output::is_protocol_kind(kind.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scenario's `packet_size` counts headers for every kind of flow. RFC 5348 §3.1 "s is
    /// the segment size in bytes (excluding IP and transport protocol headers)": s is the
    /// packet less the 32-byte TFRC header, which the sender puts back on top. The ns-2 profile
    /// is ns-2 with `useHeaders_ false`, as the translator runs the scenario: s is the packet.
    #[test]
    fn tfrc_s_excludes_the_header_under_rfc_5348_only() {
        let rfc = tfrc_config(&TfrcSpec::default(), 1000, "flow").unwrap();
        assert_eq!(rfc.packet_size, 968);
        assert_eq!(rfc.header_outside_s(), 32);
        let ns2 = TfrcSpec {
            profile: TfrcProfile::Ns2,
            ..TfrcSpec::default()
        };
        let ns2 = tfrc_config(&ns2, 1000, "flow").unwrap();
        assert_eq!((ns2.packet_size, ns2.header_outside_s()), (1000, 0));
        let error = tfrc_config(&TfrcSpec::default(), 32, "flow[2]").unwrap_err();
        assert!(error.to_string().contains("flow[2]"), "{error}");
        assert!(error.to_string().contains("32-byte TFRC header"), "{error}");
    }
}
