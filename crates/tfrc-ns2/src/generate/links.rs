//! Tcl of the link directions: one `simplex-link` each, its queue (DropTail, RED, dsRED for RIO
//! and for marked directions), its loss model; and the access links of marked flows.

use core::fmt::Write as _;

use tfrc_scenario::{LossModel, QueueSpec, RioSpec};

use super::{
    comment_text, DirectionPlan, Generator, ACCESS_LINK_QUEUE, ACCESS_LINK_RATE, CODE_POINT_IN,
    CODE_POINT_OUT, CODE_POINT_UNMARKED, DSRED_WEIGHT,
};
use crate::tcl;

impl Generator<'_> {
    /// Every scenario direction (link, queue, loss model), then the access links; what ns-2
    /// cannot express or only approximates is added to the lists, direction by direction.
    pub(super) fn write_links(&mut self, out: &mut String) {
        let _ = writeln!(out, "\n# links: one simplex-link per direction");
        let mut notes = Vec::new();
        let mut unsupported = Vec::new();
        for (index, plan) in self.directions.iter().enumerate() {
            self.write_simplex_link(out, index, plan);
            let queue = format!("[[$ns link $n({}) $n({})] queue]", plan.from, plan.to);
            if plan.markers.is_empty() {
                write_core_queue(out, index, plan, &queue, &mut unsupported);
            } else {
                write_edge_queue(out, plan, &queue, &mut notes, &mut unsupported);
                self.write_policies(out, plan);
            }
            self.write_loss(out, index, plan, &mut unsupported);
        }
        self.write_access_links(out, &mut notes);
        self.notes.extend(notes);
        self.unsupported.extend(unsupported);
    }

    /// The `simplex-link` of a direction and, for a trace, its rate changes.
    fn write_simplex_link(&self, out: &mut String, index: usize, plan: &DirectionPlan<'_>) {
        let names = self.nodes.names();
        let (a, b) = (plan.from, plan.to);
        let queue_class = match (&plan.spec.queue, plan.markers.is_empty()) {
            (_, false) => "dsRED/edge",
            (QueueSpec::DropTail { .. }, true) => "DropTail",
            (QueueSpec::Red(_), true) => "RED",
            (QueueSpec::Rio(_), true) => "dsRED/core",
        };
        let _ = writeln!(
            out,
            "$ns simplex-link $n({a}) $n({b}) {} {} {queue_class}   ;# d{index} {} -> {} ({})",
            plan.capacity_bps,
            tcl::seconds(plan.spec.delay),
            comment_text(&names[a]),
            comment_text(&names[b]),
            plan.key
        );
        for (at, rate) in &plan.rate_changes {
            let _ = writeln!(
                out,
                "$ns at {} \"[[$ns link $n({a}) $n({b})] link] set bandwidth_ {rate}\"",
                tcl::seconds(*at)
            );
        }
    }

    /// The policy table of a marked direction's dsRED edge: each of its markers' token bucket
    /// for the access node of every flow group it selects, and unmarked for everything else.
    fn write_policies(&self, out: &mut String, plan: &DirectionPlan<'_>) {
        for &marker_index in &plan.markers {
            let marker = &self.scenario.markers[marker_index];
            for access in self
                .access_nodes
                .iter()
                .filter(|access| access.markers.contains(&marker_index))
            {
                let _ = writeln!(
                    out,
                    "$q addPolicyEntry [$n({}) id] -1 TokenBucket {CODE_POINT_IN} {} {}   ;# marker[{marker_index}]",
                    access.id,
                    marker.rate.bits_per_second(),
                    marker.bucket
                );
            }
        }
        let _ = writeln!(
            out,
            "$q addPolicyEntry -1 -1 Null {CODE_POINT_UNMARKED}   ;# every other packet: unmarked"
        );
        let _ = writeln!(
            out,
            "$q addPolicerEntry TokenBucket {CODE_POINT_IN} {CODE_POINT_OUT}; \
             $q addPolicerEntry Null {CODE_POINT_UNMARKED}"
        );
    }

    /// The duplex access links of the marked flows' access nodes (and a note saying why they
    /// exist).
    fn write_access_links(&self, out: &mut String, notes: &mut Vec<String>) {
        for access in &self.access_nodes {
            let (a, b) = (access.id, access.attached_to);
            let _ = writeln!(
                out,
                "$ns duplex-link $n({a}) $n({b}) {ACCESS_LINK_RATE} 0 DropTail   ;# access link of marked flows"
            );
            let _ = writeln!(
                out,
                "$ns queue-limit $n({a}) $n({b}) {ACCESS_LINK_QUEUE}; $ns queue-limit $n({b}) $n({a}) {ACCESS_LINK_QUEUE}"
            );
        }
        if !self.access_nodes.is_empty() {
            notes.push(
                "marker: marked flows attach to an access node behind a 100 Gb/s, 0 ms link, \
                 because ns-2's dsRED policy table tells flows apart by source node only"
                    .to_owned(),
            );
        }
    }

    pub(super) fn write_loss(
        &self,
        out: &mut String,
        index: usize,
        plan: &DirectionPlan<'_>,
        unsupported: &mut Vec<String>,
    ) {
        let Some(loss) = &plan.spec.loss else {
            return;
        };
        let key = format!("{}.loss", plan.key);
        let rate = match loss.model {
            LossModel::Bernoulli { rate } => rate,
            LossModel::Exponential { mean_gap } => {
                unsupported.push(format!(
                    "{key}: exponential time gaps (mean {} s) have no ns-2 error model; the ns-2 \
                     run has no loss on this direction",
                    tcl::seconds(mean_gap)
                ));
                return;
            }
            LossModel::GilbertElliott { .. } => {
                unsupported.push(format!(
                    "{key}: the per-packet Gilbert-Elliott chain has no faithful ns-2 error model \
                     (ErrorModel/TwoState draws sojourn times, not per-packet transitions); the \
                     ns-2 run has no loss on this direction"
                ));
                return;
            }
        };
        let (a, b) = (plan.from, plan.to);
        let seed = tcl::derived_seed(self.scenario.seed, 1 + index as u64);
        let initial = if loss.start.is_zero() { rate } else { 0.0 };
        let _ = writeln!(
            out,
            "set rng(l{index}) [new RNG]; $rng(l{index}) seed {seed}; $rng(l{index}) next-substream"
        );
        let _ = writeln!(
            out,
            "set rv(l{index}) [new RandomVariable/Uniform]; $rv(l{index}) use-rng $rng(l{index})"
        );
        let _ = writeln!(
            out,
            "set em({index}) [new ErrorModel]; $em({index}) unit pkt; $em({index}) set rate_ {}; \
             $em({index}) ranvar $rv(l{index}); $em({index}) drop-target [new Agent/Null]",
            tcl::number(initial)
        );
        let _ = writeln!(
            out,
            "$ns lossmodel $em({index}) $n({a}) $n({b})   ;# {key}: Bernoulli {}",
            tcl::number(rate)
        );
        if !loss.start.is_zero() {
            let _ = writeln!(
                out,
                "$ns at {} \"$em({index}) set rate_ {}\"",
                tcl::seconds(loss.start),
                tcl::number(rate)
            );
        }
        if let Some(stop) = loss.stop {
            let _ = writeln!(
                out,
                "$ns at {} \"$em({index}) set rate_ 0\"",
                tcl::seconds(stop)
            );
        }
    }
}

/// The queue of an unmarked direction: DropTail, RED with its parameters (registered in
/// `redq` for the average-queue samples), or RIO as a dsRED core queue.
fn write_core_queue(
    out: &mut String,
    index: usize,
    plan: &DirectionPlan<'_>,
    queue: &str,
    unsupported: &mut Vec<String>,
) {
    let (a, b) = (plan.from, plan.to);
    match &plan.spec.queue {
        QueueSpec::DropTail { limit } => {
            let _ = writeln!(out, "$ns queue-limit $n({a}) $n({b}) {limit}");
        }
        QueueSpec::Red(red) => {
            let _ = writeln!(out, "$ns queue-limit $n({a}) $n({b}) {}", red.limit);
            let _ = writeln!(out, "set q {queue}");
            let _ = writeln!(
                out,
                "$q set thresh_ {}; $q set maxthresh_ {}; $q set linterm_ {}; \
                 $q set q_weight_ {}; $q set gentle_ {}",
                tcl::number(red.min_th),
                tcl::number(red.max_th),
                tcl::number(1.0 / red.max_p),
                tcl::number(red.weight),
                if red.gentle { "true" } else { "false" }
            );
            // `setbit_`: mark ECT packets instead of dropping them early (RFC 3168).
            let _ = writeln!(
                out,
                "$q set wait_ true; $q set setbit_ {}; $q set queue_in_bytes_ false; \
                 $q set bytes_ false; $q set adaptive_ 0; $q set cautious_ 0; \
                 $q set mean_pktsize_ 500",
                if red.ecn { "true" } else { "false" }
            );
            let _ = writeln!(out, "set redq({index}) $q");
        }
        QueueSpec::Rio(rio) => {
            check_rio_weight(plan, rio, unsupported);
            let _ = writeln!(out, "$ns queue-limit $n({a}) $n({b}) {}", rio.limit);
            write_dsred_common(out, queue, "RIO-C", rio.ecn);
            write_rio(out, rio);
        }
    }
}

/// The dsRED edge queue of a marked direction: DropTail as DROP mode, RED as WRED with its
/// thresholds for both colours, RIO as RIO-C (the policy table follows).
fn write_edge_queue(
    out: &mut String,
    plan: &DirectionPlan<'_>,
    queue: &str,
    notes: &mut Vec<String>,
    unsupported: &mut Vec<String>,
) {
    let (a, b) = (plan.from, plan.to);
    let (limit, mode, ecn) = match &plan.spec.queue {
        QueueSpec::DropTail { limit } => (limit.saturating_sub(1), "DROP", false),
        QueueSpec::Red(red) => (red.limit, "WRED", red.ecn),
        QueueSpec::Rio(rio) => (rio.limit, "RIO-C", rio.ecn),
    };
    let _ = writeln!(out, "$ns queue-limit $n({a}) $n({b}) {limit}");
    write_dsred_common(out, queue, mode, ecn);
    match &plan.spec.queue {
        QueueSpec::DropTail { .. } => {
            let _ = writeln!(
                out,
                "$q configQ 0 0 {limit} {limit} 1; $q configQ 0 1 {limit} {limit} 1"
            );
        }
        QueueSpec::Red(red) => {
            notes.push(format!(
                "{}.queue: a marked RED direction maps to dsRED/edge in WRED mode \
                 with the RED thresholds for both colours (weight 0.002, no gentle \
                 mode, no wait_ spacing)",
                plan.key
            ));
            write_rio_thresholds(
                out, red.min_th, red.max_th, red.max_p, red.min_th, red.max_th, red.max_p,
            );
        }
        QueueSpec::Rio(rio) => {
            check_rio_weight(plan, rio, unsupported);
            write_rio(out, rio);
        }
    }
}

/// dsRED fixes the EWMA weight: a RIO queue asking for another one is listed as unsupported.
fn check_rio_weight(plan: &DirectionPlan<'_>, rio: &RioSpec, unsupported: &mut Vec<String>) {
    if (rio.weight - DSRED_WEIGHT).abs() > 1e-12 {
        unsupported.push(format!(
            "{}.queue.weight: dsRED fixes the RIO weight at 0.002; {} is not used",
            plan.key, rio.weight
        ));
    }
}

/// A RIO queue's in and out thresholds.
fn write_rio(out: &mut String, rio: &RioSpec) {
    write_rio_thresholds(
        out,
        rio.min_in,
        rio.max_in,
        rio.p_in,
        rio.min_out,
        rio.max_out,
        rio.p_out,
    );
}

/// The dsRED set-up every RIO/WRED/DROP direction shares; `ecn` sets dsRED's `ecn_` (mark ECT
/// packets instead of dropping them early, `dsREDQueue::enque`).
pub(super) fn write_dsred_common(out: &mut String, queue: &str, mode: &str, ecn: bool) {
    let _ = writeln!(out, "set q {queue}");
    let _ = writeln!(
        out,
        "$q meanPktSize 500; $q set numQueues_ 1; $q setNumPrec 2; $q setMREDMode {mode}"
    );
    if ecn {
        let _ = writeln!(out, "$q set ecn_ 1");
    }
    let _ = writeln!(
        out,
        "$q addPHBEntry {CODE_POINT_IN} 0 0; $q addPHBEntry {CODE_POINT_OUT} 0 1; \
         $q addPHBEntry {CODE_POINT_UNMARKED} 0 1"
    );
}

pub(super) fn write_rio_thresholds(
    out: &mut String,
    min_in: f64,
    max_in: f64,
    p_in: f64,
    min_out: f64,
    max_out: f64,
    p_out: f64,
) {
    let _ = writeln!(
        out,
        "$q configQ 0 0 {} {} {}; $q configQ 0 1 {} {} {}",
        tcl::number(min_in),
        tcl::number(max_in),
        tcl::number(p_in),
        tcl::number(min_out),
        tcl::number(max_out),
        tcl::number(p_out)
    );
}
