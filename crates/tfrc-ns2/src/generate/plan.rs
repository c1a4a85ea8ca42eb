//! Planning: the link directions ns-2 gets (a trace's rate schedule included), the access nodes
//! that give marked flows their own source node, and each flow's route, sampling and feedback.

use core::time::Duration;
use std::collections::BTreeMap;

use tfrc_scenario::{
    Capacity, FlowKind, FlowSpec, LinkDirectionSpec, Route, TcpProfile, TcpVariant, TfrcProfile,
};

use super::trace::{TraceFile, TRACE_BIN};
use super::{
    generate_error, FlowLayout, FlowSampling, Generator, SampleKind, NS2_TCP_HEADER_BYTES,
    UNLIMITED_TCP_WINDOW,
};
use crate::error::Ns2Error;

/// One scenario link direction as the generator sees it.
pub(super) struct DirectionPlan<'a> {
    pub(super) from: usize,
    pub(super) to: usize,
    pub(super) spec: &'a LinkDirectionSpec,
    /// Scenario key prefix: `link[1]` or `link[1].reverse`.
    pub(super) key: String,
    pub(super) capacity_bps: u64,
    /// For a trace: the rate changes `(time, bits/s)` that make the ns-2 link follow it.
    pub(super) rate_changes: Vec<(Duration, u64)>,
    /// Indices of the markers on this direction.
    pub(super) markers: Vec<usize>,
}

/// Where the flows of one (source node, set of markers) group attach: a private node behind an
/// access link, so that ns-2's dsRED policy table (keyed on source and destination node) can
/// tell them apart from other flows of the same node.
pub(super) struct AccessNode {
    pub(super) id: usize,
    pub(super) attached_to: usize,
    pub(super) markers: Vec<usize>,
}

impl Generator<'_> {
    pub(super) fn plan_directions(&mut self) -> Result<(), Ns2Error> {
        let scenario = self.scenario;
        for (index, link) in scenario.links.iter().enumerate() {
            let a = self.node(&link.between[0]);
            let b = self.node(&link.between[1]);
            for (from, to, spec, key) in [
                (a, b, &link.forward, format!("link[{index}]")),
                (b, a, &link.reverse, format!("link[{index}].reverse")),
            ] {
                let (capacity_bps, rate_changes) = match &spec.capacity {
                    Capacity::Rate(rate) => (rate.bits_per_second(), Vec::new()),
                    Capacity::Trace { path, offset, .. } => {
                        let schedule = TraceFile::read(path)
                            .and_then(|trace| trace.rate_schedule(*offset, scenario.duration))
                            .map_err(|message| {
                                generate_error(scenario, &format!("{key}.trace"), message)
                            })?;
                        self.unsupported.push(format!(
                            "{key}.trace: ns-2 links have no delivery opportunities; the link's \
                             rate follows the trace {} in {} ms bins ({} rate changes, mean {} bit/s)",
                            path.display(),
                            TRACE_BIN.as_millis(),
                            schedule.changes.len(),
                            schedule.mean_bps
                        ));
                        (schedule.mean_bps, schedule.changes)
                    }
                };
                self.directions.push(DirectionPlan {
                    from,
                    to,
                    spec,
                    key,
                    capacity_bps,
                    rate_changes,
                    markers: Vec::new(),
                });
            }
        }
        Ok(())
    }

    pub(super) fn direction_index(&self, from: usize, to: usize) -> Option<usize> {
        self.directions
            .iter()
            .position(|direction| direction.from == from && direction.to == to)
    }

    pub(super) fn plan_markers(&mut self) {
        let scenario = self.scenario;
        for (index, marker) in scenario.markers.iter().enumerate() {
            let from = self.node(&marker.link[0]);
            let to = self.node(&marker.link[1]);
            if let Some(direction) = self.direction_index(from, to) {
                self.directions[direction].markers.push(index);
            }
        }
        // Group marked flows by (source node, markers): one access node per group.
        let mut groups: BTreeMap<(usize, Vec<usize>), usize> = BTreeMap::new();
        let first_access_id = self.nodes.names().len();
        for flow in &scenario.flows {
            let from = self.node(&flow.from);
            let markers: Vec<usize> = scenario
                .markers
                .iter()
                .enumerate()
                .filter(|(_, marker)| marker.flows.contains(&flow.name))
                .map(|(index, _)| index)
                .collect();
            if markers.is_empty() {
                self.attach.push(from);
                continue;
            }
            let next_id = first_access_id + groups.len();
            let id = *groups.entry((from, markers.clone())).or_insert(next_id);
            if id == next_id {
                self.access_nodes.push(AccessNode {
                    id,
                    attached_to: from,
                    markers,
                });
            }
            self.attach.push(id);
        }
        for (index, marker) in scenario.markers.iter().enumerate() {
            let groups = self
                .access_nodes
                .iter()
                .filter(|node| node.markers.contains(&index))
                .count();
            if groups > 1 {
                self.unsupported.push(format!(
                    "marker[{index}].flows: its flows come from several source nodes or are also \
                     marked elsewhere by different markers; ns-2's dsRED keeps one token bucket \
                     per (source node, destination) policy entry, so the aggregate is split into \
                     {groups} buckets of {} bit/s and {} bytes each",
                    marker.rate.bits_per_second(),
                    marker.bucket
                ));
            }
        }
    }

    /// A dsRED edge re-marks every packet by its own policy table: a flow marked on its way
    /// that then crosses a marked direction where no marker selects it arrives unmarked in
    /// ns-2, while our simulator keeps its colour. Says so for each such direction.
    pub(super) fn note_lost_colour(&mut self, flow: &FlowSpec, data_path: &[usize]) {
        let scenario = self.scenario;
        let selects = |direction: &DirectionPlan<'_>| {
            direction
                .markers
                .iter()
                .any(|&marker| scenario.markers[marker].flows.contains(&flow.name))
        };
        let Some(first) = data_path
            .iter()
            .position(|&direction| selects(&self.directions[direction]))
        else {
            return;
        };
        for &direction in &data_path[first + 1..] {
            let plan = &self.directions[direction];
            if !plan.markers.is_empty() && !selects(plan) {
                self.notes.push(format!(
                    "flow.{}: marked on {} and then crossing {}, marked by markers that do not \
                     select it: ns-2's dsRED edge there re-marks its packets to the default \
                     (unmarked) code point; our simulator keeps their colour",
                    flow.name, self.directions[data_path[first]].key, plan.key
                ));
            }
        }
    }

    pub(super) fn plan_flows(&mut self) -> Result<(), Ns2Error> {
        let scenario = self.scenario;
        for (index, flow) in scenario.flows.iter().enumerate() {
            let route = scenario.route(&flow.from, &flow.to).map_err(|_| {
                generate_error(
                    scenario,
                    &format!("flow[{index}].to"),
                    format!(
                        "no chain of links joins {} to {} (flow {})",
                        flow.from, flow.to, flow.name
                    ),
                )
            })?;
            let data_path: Vec<usize> =
                route.hops.iter().map(|hop| hop.direction_index()).collect();
            self.note_lost_colour(flow, &data_path);
            // The kind as the scenario file names it, as the simulator writes it.
            let kind = flow.output_kind();
            let sample = match &flow.kind {
                FlowKind::Tfrc(_) => SampleKind::Tfrc,
                FlowKind::Tcp(_) => SampleKind::Tcp,
                FlowKind::Cbr { .. } | FlowKind::Pareto(_) | FlowKind::ExponentialOnOff(_) => {
                    SampleKind::Udp
                }
            };
            if let FlowKind::Tcp(_) = flow.kind {
                if flow.packet_size <= NS2_TCP_HEADER_BYTES {
                    return Err(generate_error(
                        scenario,
                        &format!("flow[{index}].packet_size"),
                        format!(
                            "flow {}: a TCP packet of {} bytes leaves no payload after ns-2's \
                             {NS2_TCP_HEADER_BYTES}-byte TCP/IP header",
                            flow.name, flow.packet_size
                        ),
                    ));
                }
            }
            let feedbacks_per_rtt = match &flow.kind {
                FlowKind::Tfrc(tfrc) => Some(match (tfrc.feedbacks_per_rtt, tfrc.rtt_ref) {
                    // ns-2's NumFeedback_ itself.
                    (Some(count), _) => count,
                    (None, None) => 1,
                    (None, Some(rtt_ref)) => {
                        let base_rtt = self.base_rtt(&route, &data_path, flow);
                        let ratio = base_rtt.as_secs_f64() / rtt_ref.as_secs_f64();
                        let count = (ratio.floor() as u32).max(1);
                        self.notes.push(format!(
                            "flow.{}.rtt_ref: ns-2's sink sends a fixed NumFeedback_ reports per \
                             RTT; mapped to {count} = max(int(R0/rtt_ref), 1) with the base RTT \
                             R0 = {:.6} s of the path (propagation and transmission, no queueing)",
                            flow.name,
                            base_rtt.as_secs_f64()
                        ));
                        count
                    }
                }),
                _ => None,
            };
            self.flows.push(FlowLayout {
                name: flow.name.clone(),
                kind,
                from: flow.from.clone(),
                to: flow.to.clone(),
                start: flow.start,
                stop: flow.stop_time(scenario.duration),
                packet_size: flow.packet_size,
                data_path,
                extra: FlowSampling {
                    sample,
                    feedbacks_per_rtt,
                },
            });
            self.check_flow_features(flow);
        }
        Ok(())
    }

    /// Propagation of both directions ([`Scenario::path_base_rtt`]) plus one data packet's
    /// transmission on each forward hop.
    pub(super) fn base_rtt(&self, route: &Route, data_path: &[usize], flow: &FlowSpec) -> Duration {
        let transmission: Duration = data_path
            .iter()
            .map(|&direction| {
                Duration::from_secs_f64(
                    f64::from(flow.packet_size) * 8.0
                        / self.directions[direction].capacity_bps as f64,
                )
            })
            .sum();
        self.scenario.path_base_rtt(route) + transmission
    }

    pub(super) fn check_flow_features(&mut self, flow: &FlowSpec) {
        let name = &flow.name;
        match &flow.kind {
            FlowKind::Tfrc(tfrc) => {
                if let Some(target) = tfrc.target_rate {
                    self.unsupported.push(format!(
                        "flow.{name}.target_rate: ns-2.35 has no gTFRC; the flow runs plain TFRC \
                         without the {} bit/s floor",
                        target.bits_per_second()
                    ));
                }
                if let Some(veno) = tfrc.veno {
                    self.unsupported.push(format!(
                        "flow.{name}.veno_beta: ns-2.35 has no Veno loss differentiation \
                         (beta = {}, alpha = {}); the flow runs plain TFRC",
                        veno.beta, veno.alpha
                    ));
                }
                if let Some(rate) = tfrc.max_rate {
                    self.unsupported.push(format!(
                        "flow.{name}.max_rate: the translator attaches no application to ns-2's \
                         Agent/TFRC, which sends bulk data; the flow runs without the {} bit/s \
                         cap",
                        rate.bits_per_second()
                    ));
                }
                if tfrc.media.is_some() {
                    self.unsupported.push(format!(
                        "flow.{name}.media: ns-2's Agent/TFRC has no media source (frames, \
                         playout deadlines); the flow sends bulk data"
                    ));
                }
                if tfrc.profile == TfrcProfile::Rfc5348 {
                    self.notes.push(format!(
                        "flow.{name}.profile: \"rfc5348\" asked, but ns-2 runs its own Agent/TFRC \
                         (see docs/ns2.md for where it differs from RFC 5348)"
                    ));
                }
            }
            FlowKind::Tcp(tcp) => {
                if tcp.window.is_none() {
                    self.notes.push(format!(
                        "flow.{name}.window: unlimited maps to window_ {UNLIMITED_TCP_WINDOW}"
                    ));
                }
                if tcp.downloads.is_some() {
                    self.unsupported.push(format!(
                        "flow.{name}.downloads: the translator runs one bulk FTP transfer per \
                         TCP flow; the flow sends bulk data instead of groups of short transfers"
                    ));
                }
                if tcp.profile == TcpProfile::Ns3 {
                    self.notes.push(format!(
                        "flow.{name}.profile: \"ns3\" asked; ns-2 runs its own agents, set up as \
                         for \"rfc\" (no SYN round trip, rounded halving, 1 s initial RTO)"
                    ));
                }
                if tcp.variant == TcpVariant::Bbr {
                    self.unsupported.push(format!(
                        "flow.{name}.variant: ns-2.35 has no BBR; the flow runs TCP-Linux's \
                         CUBIC (`tfrc ns3` runs ns-3's TcpBbr)"
                    ));
                }
                if tcp.variant == TcpVariant::Cubic {
                    self.notes.push(format!(
                        "flow.{name}.variant: \"cubic\" maps to ns-2's Agent/TCP/Linux with \
                         `select_ca cubic` (Linux 2.6's CUBIC module, HyStart included)"
                    ));
                }
                if tcp.variant == TcpVariant::Sack {
                    self.notes.push(format!(
                        "flow.{name}.variant: \"sack\" (RFC 6675 recovery) maps to ns-2's \
                         Agent/TCP/Sack1, whose recovery differs (see docs/ns2-profile.md)"
                    ));
                }
            }
            _ => {}
        }
    }
}
