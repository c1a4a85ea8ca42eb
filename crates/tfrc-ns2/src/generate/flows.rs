//! Tcl of the flows: one agent pair per flow (TFRC, TCP, or UDP with a traffic generator),
//! attached, connected, started and stopped.

use core::fmt::Write as _;

use tfrc_scenario::{
    FlowKind, OnOffSpec, Rate, TcpProfile, TcpSpec, TcpVariant, TfrcSpec, TfrcVariant,
};

use super::{loss_rate_flow, Generator, NS2_TCP_HEADER_BYTES, UNLIMITED_TCP_WINDOW};
use crate::tcl;

impl Generator<'_> {
    /// Every flow's agents (by kind), attached to its nodes, connected, started and stopped.
    pub(super) fn write_flows(&mut self, out: &mut String) {
        let scenario = self.scenario;
        let _ = writeln!(out, "\n# flows (fid_ = index + 1)");
        for (index, flow) in scenario.flows.iter().enumerate() {
            let fid = index + 1;
            let source = self.attach[index];
            let destination = self.node(&flow.to);
            let size = flow.packet_size;
            let _ = writeln!(
                out,
                "{}",
                tcl::comment(&format!("flow {} ({})", flow.name, flow.kind_name()))
            );
            let target = match &flow.kind {
                FlowKind::Tfrc(tfrc) => self.write_tfrc_agents(out, index, size, tfrc),
                FlowKind::Tcp(tcp) => write_tcp_agents(out, index, size, tcp),
                FlowKind::Cbr { rate } => write_cbr(out, index, size, *rate),
                FlowKind::Pareto(on_off) | FlowKind::ExponentialOnOff(on_off) => {
                    write_on_off(out, index, size, on_off, scenario.seed)
                }
            };
            let _ = writeln!(
                out,
                "$src({index}) set fid_ {fid}; $ns attach-agent $n({source}) $src({index}); \
                 $ns attach-agent $n({destination}) $snk({index}); $ns connect $src({index}) $snk({index})"
            );
            let _ = writeln!(
                out,
                "$ns at {} \"{target} start\"",
                tcl::seconds(flow.start)
            );
            if let Some(stop) = flow.stop {
                if stop < scenario.duration {
                    let _ = writeln!(out, "$ns at {} \"{target} stop\"", tcl::seconds(stop));
                }
            }
        }
    }

    /// The TFRC agent and sink of flow `index` (ECN, TFRC-SP, the loss-rate print as asked);
    /// returns the Tcl object that starts and stops it.
    fn write_tfrc_agents(
        &self,
        out: &mut String,
        index: usize,
        size: u32,
        tfrc: &TfrcSpec,
    ) -> String {
        let feedbacks = self.flows[index].extra.feedbacks_per_rtt.unwrap_or(1);
        let _ = writeln!(
            out,
            "set src({index}) [new Agent/TFRC]; $src({index}) set packetSize_ {size}; \
                 $src({index}) set ca_ {}",
            u8::from(tfrc.oscillation_damping)
        );
        let _ = write!(
            out,
            "set snk({index}) [new Agent/TFRCSink]; $snk({index}) set NumFeedback_ {feedbacks}; \
                 $snk({index}) set discount_ {}",
            u8::from(tfrc.history_discounting)
        );
        if tfrc.ecn {
            // `TfrcAgent::sendpkt()`: "if (ecn_) hf->ect() = 1"; the sink counts a CE
            // mark as a loss (`TfrcSinkAgent::recv()`, `ECN_RCVD`).
            let _ = write!(out, "; $src({index}) set ecn_ 1");
        }
        if let (TfrcVariant::Sp, Some(nominal), Some(header)) =
            (tfrc.variant, tfrc.nominal_segment_size, tfrc.header_size)
        {
            // ns-2.35's TFRC-SP: `voip_` (the equation with `fsize_`, the rate times
            // size_/(size_ + headersize_), at most `voip_max_pkt_rate_` = 100
            // packets/s) and the sink's `ShortIntervals_ 1` (N/K for intervals of
            // under `ShortRtts_` = 2 RTTs), as its own TFRC-SP tests
            // (tcl/test/test-suite-friendly.tcl) run it. With `useHeaders_ false`
            // size_ is the whole packet, so ns-2's s_true counts the 32-byte header.
            let _ = write!(
                out,
                "; $src({index}) set voip_ 1; $src({index}) set fsize_ {nominal}; \
                     $src({index}) set headersize_ {header}; $snk({index}) set ShortIntervals_ 1"
            );
        }
        if loss_rate_flow(&self.flows) == Some(index) {
            // TfrcSinkAgent::est_loss_WALI prints "time: T loss_rate: P" each
            // time it computes p (a feedback), once p > 0.
            let _ = write!(out, "; $snk({index}) set printLoss_ 1");
        }
        let _ = writeln!(out);
        format!("$src({index})")
    }
}

pub(super) fn write_udp_agents(out: &mut String, index: usize, size: u32) {
    let _ = writeln!(
        out,
        "set src({index}) [new Agent/UDP]; $src({index}) set packetSize_ {size}; \
         set snk({index}) [new Agent/LossMonitor]"
    );
}

/// The TCP agent (Reno, NewReno, SACK, or TCP-Linux's CUBIC) and sink of flow `index`, with an FTP source;
/// returns the Tcl object that starts and stops it.
fn write_tcp_agents(out: &mut String, index: usize, size: u32, tcp: &TcpSpec) -> String {
    let (agent, sink) = match (tcp.variant, tcp.delayed_ack) {
        // `Agent/TCP` is Tahoe in ns-2; Reno is its own class.
        (TcpVariant::Reno, false) => ("Agent/TCP/Reno", "Agent/TCPSink"),
        (TcpVariant::Reno, true) => ("Agent/TCP/Reno", "Agent/TCPSink/DelAck"),
        (TcpVariant::NewReno, false) => ("Agent/TCP/Newreno", "Agent/TCPSink"),
        (TcpVariant::NewReno, true) => ("Agent/TCP/Newreno", "Agent/TCPSink/DelAck"),
        (TcpVariant::Sack, false) => ("Agent/TCP/Sack1", "Agent/TCPSink/Sack1"),
        (TcpVariant::Sack, true) => ("Agent/TCP/Sack1", "Agent/TCPSink/Sack1/DelAck"),
        // ns-2.35's TCP-Linux runs Linux 2.6's congestion-control modules ("select_ca"); it
        // has CUBIC and no BBR (the plan notes BBR as unsupported and runs CUBIC).
        (TcpVariant::Cubic | TcpVariant::Bbr, false) => ("Agent/TCP/Linux", "Agent/TCPSink/Sack1"),
        (TcpVariant::Cubic | TcpVariant::Bbr, true) => {
            ("Agent/TCP/Linux", "Agent/TCPSink/Sack1/DelAck")
        }
    };
    let window = tcp.window.unwrap_or(UNLIMITED_TCP_WINDOW);
    let _ = writeln!(
        out,
        "set src({index}) [new {agent}]; $src({index}) set packetSize_ {}; \
             $src({index}) set window_ {window}",
        size - NS2_TCP_HEADER_BYTES
    );
    if tcp.profile != TcpProfile::Ns2 {
        // The RFC reading of the three ns-2.35 defaults `SenderConfig::ns2`
        // follows (`SenderConfig::ns3` too): no SYN round trip, rounded halving,
        // RFC 6298's 1 s initial RTO. `reset` re-runs `TcpAgent::reset()` (`rtt_init`,
        // `set_initial_window`), which read them when the agent was created.
        let _ = writeln!(
            out,
            "$src({index}) set syn_ false; $src({index}) set precisionReduce_ false; \
                 $src({index}) set rtxcur_init_ 1.0; $src({index}) reset"
        );
    }
    let linux = matches!(tcp.variant, TcpVariant::Cubic | TcpVariant::Bbr);
    if linux {
        // TCP-Linux's documented set-up: timestamps on both sides, the module chosen at time 0.
        let _ = writeln!(
            out,
            "$src({index}) set timestamps_ true; $ns at 0 \"$src({index}) select_ca cubic\""
        );
    }
    let _ = write!(out, "set snk({index}) [new {sink}]");
    if linux {
        let _ = write!(out, "; $snk({index}) set ts_echo_rfc1323_ true");
    }
    if tcp.delayed_ack {
        // The simulator's sink (tfrc-tcp) waits 100 ms, ns-2's default
        // (`Agent/TCPSink/DelAck set interval_ 100ms`); written out so that
        // both sides visibly run the same timer.
        let _ = write!(out, "; $snk({index}) set interval_ 0.1");
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "set app({index}) [new Application/FTP]; $app({index}) attach-agent $src({index})"
    );
    format!("$app({index})")
}

/// A CBR source over UDP for flow `index`; returns the Tcl object that starts and stops it.
fn write_cbr(out: &mut String, index: usize, size: u32, rate: Rate) -> String {
    write_udp_agents(out, index, size);
    let _ = writeln!(
            out,
            "set app({index}) [new Application/Traffic/CBR]; $app({index}) attach-agent $src({index}); \
             $app({index}) set packetSize_ {size}; $app({index}) set rate_ {}; $app({index}) set random_ 0",
            rate.bits_per_second()
        );
    format!("$app({index})")
}

/// A Pareto or exponential on/off source over UDP for flow `index`, with its own random
/// stream; returns the Tcl object that starts and stops it.
fn write_on_off(
    out: &mut String,
    index: usize,
    size: u32,
    on_off: &OnOffSpec,
    seed: u64,
) -> String {
    write_udp_agents(out, index, size);
    let class = match on_off.shape {
        Some(_) => "Application/Traffic/Pareto",
        None => "Application/Traffic/Exponential",
    };
    let seed = tcl::derived_seed(seed, 1_000_000 + index as u64);
    let _ = writeln!(
        out,
        "set app({index}) [new {class}]; $app({index}) attach-agent $src({index}); \
             $app({index}) set packetSize_ {size}; $app({index}) set rate_ {}; \
             $app({index}) set burst_time_ {}; $app({index}) set idle_time_ {}",
        on_off.rate.bits_per_second(),
        tcl::seconds(on_off.burst),
        tcl::seconds(on_off.idle)
    );
    if let Some(shape) = on_off.shape {
        let _ = writeln!(out, "$app({index}) set shape_ {}", tcl::number(shape));
    }
    let _ = writeln!(
        out,
        "set rng(f{index}) [new RNG]; $rng(f{index}) seed {seed}; $rng(f{index}) next-substream; \
             $app({index}) use-rng $rng(f{index})"
    );
    format!("$app({index})")
}
