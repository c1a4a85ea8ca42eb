//! Tcl of the measurements: queue and flow monitors, the lists the sampling procedures read, the
//! procedures themselves (`sampling.tcl`) and the times they run at.

use core::fmt::Write as _;
use core::time::Duration;
use std::collections::BTreeMap;

use tfrc_scenario::Scenario;

use super::{Generator, SampleKind};
use crate::tcl;

impl Generator<'_> {
    /// Queue monitors on every scenario direction (a flow monitor where a UDP flow starts, to
    /// count what it sends) and flow monitors on the access links of marked UDP flows. Returns,
    /// for each UDP flow, the monitor key that counts its sent packets. Attached after the loss
    /// models, so arrivals include packets the loss model then drops.
    pub(super) fn write_monitors(&self, out: &mut String) -> BTreeMap<usize, String> {
        let mut udp_monitor: BTreeMap<usize, String> = BTreeMap::new();
        let mut flowmon_keys: Vec<(String, usize, usize)> = Vec::new();
        for (index, flow) in self.flows.iter().enumerate() {
            if flow.extra.sample != SampleKind::Udp {
                continue;
            }
            let source = self.attach[index];
            let key = if let Some(access) = self.access_nodes.iter().find(|a| a.id == source) {
                let key = format!("a{}", access.id);
                if !flowmon_keys.iter().any(|(k, _, _)| *k == key) {
                    flowmon_keys.push((key.clone(), access.id, access.attached_to));
                }
                key
            } else if let Some(&first) = flow.data_path.first() {
                let key = format!("d{first}");
                if !flowmon_keys.iter().any(|(k, _, _)| *k == key) {
                    let plan = &self.directions[first];
                    flowmon_keys.push((key.clone(), plan.from, plan.to));
                }
                key
            } else {
                continue;
            };
            udp_monitor.insert(index, key);
        }
        let _ = writeln!(out, "\n# monitors (after the loss models)");
        for (key, a, b) in &flowmon_keys {
            let _ = writeln!(
                out,
                "set fm({key}) [$ns makeflowmon Fid]; $ns attach-fmon [$ns link $n({a}) $n({b})] $fm({key})"
            );
        }
        for (index, plan) in self.directions.iter().enumerate() {
            let key = format!("d{index}");
            if flowmon_keys.iter().any(|(k, _, _)| *k == key) {
                let _ = writeln!(out, "set qm({index}) $fm({key})");
            } else {
                let _ = writeln!(
                    out,
                    "set qm({index}) [$ns monitor-queue $n({}) $n({}) \"\"]",
                    plan.from, plan.to
                );
            }
        }
        udp_monitor
    }

    pub(super) fn write_sampling(
        &self,
        out: &mut String,
        udp_monitor: &BTreeMap<usize, String>,
        flow_times: &[Duration],
        state_times: &[Duration],
    ) {
        let list = |indices: Vec<usize>| {
            indices
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        };
        let of_kind = |kind: SampleKind| {
            self.flows
                .iter()
                .enumerate()
                .filter(|(_, flow)| flow.extra.sample == kind)
                .map(|(index, _)| index)
                .collect::<Vec<_>>()
        };
        let times = |times: &[Duration]| {
            times
                .iter()
                .map(|time| tcl::seconds(*time))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let udp: Vec<String> = udp_monitor
            .iter()
            .map(|(index, key)| format!("{index} {key}"))
            .collect();
        // A file of their own: ns-2's C code prints to stdout through another buffer, and
        // the two would interleave within lines.
        let _ = writeln!(
            out,
            "\n# sampling: cumulative counters into {SAMPLES_FILE}\nset samples_out [open {SAMPLES_FILE} w]"
        );
        let _ = writeln!(
            out,
            "set tfrc_flows {{{}}}",
            list(of_kind(SampleKind::Tfrc))
        );
        let _ = writeln!(out, "set tcp_flows {{{}}}", list(of_kind(SampleKind::Tcp)));
        let _ = writeln!(out, "set udp_flows {{{}}}", udp.join(" "));
        let _ = writeln!(
            out,
            "set directions {{{}}}",
            list((0..self.directions.len()).collect())
        );
        let _ = writeln!(out, "set flow_times {{{}}}", times(flow_times));
        let _ = writeln!(out, "set state_times {{{}}}", times(state_times));
        out.push_str(SAMPLING_PROCEDURES);
        if !flow_times.is_empty() {
            let _ = writeln!(out, "$ns at [lindex $flow_times 0] \"sample_flows 0\"");
        }
        if !state_times.is_empty() {
            let _ = writeln!(out, "$ns at [lindex $state_times 0] \"sample_state 0\"");
        }
    }
}

/// Where the script writes its samples (in its working directory).
pub const SAMPLES_FILE: &str = "ns2-samples.txt";

/// The sampling procedures, the same for every script (they read the lists set above them).
const SAMPLING_PROCEDURES: &str = include_str!("sampling.tcl");

/// Ends of the output intervals and the state sampling times: multiples of the interval up to
/// the duration, plus the duration itself when it is not a multiple (a shorter last interval).
pub(super) fn sample_times(scenario: &Scenario) -> (Vec<Duration>, Vec<Duration>) {
    let times = |step| tfrc_output::external::sample_times(scenario.duration, step);
    (
        times(scenario.output.interval),
        times(scenario.output.state_sampling_interval()),
    )
}
