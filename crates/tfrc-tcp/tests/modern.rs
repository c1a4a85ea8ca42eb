//! CUBIC and BBR over the test network's DropTail bottleneck: the behaviour their sources
//! describe, measured (`cargo test -p tfrc-tcp --test modern -- --nocapture` prints the figures).

mod harness;

use core::time::Duration;

use harness::{jain_index, LinkConfig, Network};
use tfrc_proto::Instant;
use tfrc_tcp::{BbrMode, SenderConfig, TcpSender, Variant};

/// 10 Mb/s, 20 ms each way: a base RTT of 40.8 ms and a BDP of 49 packets of 1040 bytes.
fn link(queue_limit: usize) -> LinkConfig {
    LinkConfig {
        rate_bps: 10_000_000,
        delay: Duration::from_millis(20),
        queue_limit,
        loss_rate: 0.0,
    }
}

/// The bottleneck's rate in 1040-byte packets per second.
fn link_packet_rate(link: &LinkConfig) -> f64 {
    link.rate_bps as f64 / 8.0 / 1040.0
}

fn seconds(time: Instant) -> f64 {
    (time - Instant::ZERO).as_secs_f64()
}

#[test]
fn bbr_walks_its_state_machine_and_models_the_path() {
    let link = link(100);
    let base_rtt = link.base_rtt(1040);
    let packet_rate = link_packet_rate(&link);
    let mut network = Network::new(link, 1);
    let flow = network.add_bulk(Variant::Bbr, Instant::ZERO);
    let mut modes: Vec<(f64, BbrMode)> = Vec::new();
    let mut probe_bw_rtts = Vec::new();
    let mut observe = |now: Instant, _: usize, sender: &TcpSender| {
        let mode = sender.bbr_mode().expect("a BBR sender");
        if modes.last().is_none_or(|(_, last)| *last != mode) {
            modes.push((seconds(now), mode));
        }
        if mode == BbrMode::ProbeBw && seconds(now) > 5.0 {
            probe_bw_rtts.push(sender.latest_rtt().unwrap().as_secs_f64());
        }
    };
    network.run_until(Instant::from_secs(2), &mut observe);
    let drops_in_startup = network.stats.queue_drops;
    network.run_until(Instant::from_secs(35), &mut observe);
    let sender = &network.flows[flow].sender;
    let (bandwidth, min_rtt) = sender.bbr_model().unwrap();
    let utilization = network.stats.transmitted_bytes as f64 * 8.0 / 35.0 / 10e6;
    let mean_rtt = probe_bw_rtts.iter().sum::<f64>() / probe_bw_rtts.len() as f64;
    eprintln!(
        "BBR modes {modes:?}; bw {bandwidth:.1} pkt/s (link {packet_rate:.1}); min_rtt {min_rtt:?} \
         (base {base_rtt:?}); utilization {utilization:.3}; mean RTT in PROBE_BW {:.1} ms; \
         queue drops {drops_in_startup} in the first 2 s, {} in all",
        mean_rtt * 1e3,
        network.stats.queue_drops
    );
    let sequence: Vec<BbrMode> = modes.iter().map(|(_, mode)| *mode).collect();
    // Linux tcp_bbr.c's diagram: STARTUP → DRAIN → PROBE_BW, then PROBE_RTT when min_rtt is
    // 10 s old ("bbr_min_rtt_win_sec = 10"), back to PROBE_BW.
    assert_eq!(
        &sequence[..3],
        &[BbrMode::Startup, BbrMode::Drain, BbrMode::ProbeBw]
    );
    let probe_rtt_starts: Vec<f64> = modes
        .iter()
        .filter(|(_, mode)| *mode == BbrMode::ProbeRtt)
        .map(|(time, _)| *time)
        .collect();
    assert_eq!(probe_rtt_starts.len(), 3, "{probe_rtt_starts:?}");
    for pair in probe_rtt_starts.windows(2) {
        let gap = pair[1] - pair[0];
        assert!((10.0..10.6).contains(&gap), "PROBE_RTT every {gap} s");
    }
    // The model: the bottleneck's packet rate and its propagation RTT.
    assert!(
        (bandwidth / packet_rate - 1.0).abs() < 0.03,
        "bw {bandwidth}"
    );
    let min_rtt = min_rtt.unwrap();
    assert!(min_rtt >= base_rtt && min_rtt < base_rtt + Duration::from_millis(2));
    // Once STARTUP's overshoot (gain 2.89) is drained, BBR fills the pipe without loss when the
    // buffer holds 2 BDP, and keeps the queue short: pacing at the bottleneck rate, 1.25 × for
    // one phase of eight.
    assert!(utilization > 0.95, "utilization {utilization}");
    assert_eq!(network.stats.queue_drops, drops_in_startup);
    assert!(
        mean_rtt < base_rtt.as_secs_f64() * 1.25,
        "mean RTT {mean_rtt}"
    );
}

#[test]
fn bbr_paces_at_its_gain_times_the_bandwidth() {
    let link = link(100);
    let packet_rate = link_packet_rate(&link);
    let mut network = Network::new(link, 1);
    let flow = network.add_bulk(Variant::Bbr, Instant::ZERO);
    let mut checked = 0;
    network.run_until(Instant::from_secs(8), |now, _, sender| {
        let (rate, gain) = sender.pacing().unwrap();
        let (bandwidth, _) = sender.bbr_model().unwrap();
        if seconds(now) > 3.0 && sender.bbr_mode() == Some(BbrMode::ProbeBw) {
            // Linux bbr_rate_bytes_per_sec: bw × mss × gain × (100 − 1) / 100.
            let expected = bandwidth * 1000.0 * gain * 0.99;
            assert!((rate / expected - 1.0).abs() < 1e-9, "{rate} vs {expected}");
            checked += 1;
        }
    });
    assert!(checked > 1000);
    let sender = &network.flows[flow].sender;
    let (rate, _) = sender.pacing().unwrap();
    assert!(rate < packet_rate * 1000.0 * 1.25);
}

#[test]
fn cubic_reduces_by_beta_and_regrows_along_the_cubic() {
    let link = link(49);
    let mut network = Network::new(link, 1);
    let flow = network.add_bulk(Variant::Cubic, Instant::ZERO);
    let mut reductions: Vec<(f64, f64, f64)> = Vec::new();
    let mut previous = (false, 0.0);
    network.run_until(Instant::from_secs(60), |now, _, sender| {
        let in_recovery = sender.in_recovery();
        if in_recovery && !previous.0 {
            reductions.push((seconds(now), previous.1, sender.congestion_window()));
        }
        previous = (in_recovery, sender.congestion_window());
    });
    let sender = &network.flows[flow].sender;
    let stats = sender.stats();
    let utilization = network.stats.transmitted_bytes as f64 * 8.0 / 60.0 / 10e6;
    eprintln!(
        "CUBIC: {} reductions, first {:?}, utilization {utilization:.3}, timeouts {}",
        reductions.len(),
        &reductions[..reductions.len().min(4)],
        stats.timeouts
    );
    assert!(reductions.len() >= 5);
    for (time, before, after) in &reductions[1..] {
        // RFC 9438 §4.6: cwnd = ⌊0.7 × cwnd⌋ at the fast retransmit.
        let expected = (before * 0.7).floor();
        assert!(
            (after - expected).abs() <= 1.0,
            "at {time} s: {before} → {after}"
        );
    }
    // A buffer of one BDP keeps a loss-based TCP busy: β = 0.7 leaves 70 % of 2 BDP in flight.
    assert!(utilization > 0.95, "utilization {utilization}");
    assert_eq!(stats.timeouts, 0);
    // The epochs last about K = cbrt(W_max (1 − β) / C) seconds plus the climb above W_max.
    let gaps: Vec<f64> = reductions
        .windows(2)
        .map(|pair| pair[1].0 - pair[0].0)
        .collect();
    let w_max = reductions[2].1;
    let k = (w_max * 0.3 / 0.4).cbrt();
    let mean_gap = gaps[1..].iter().sum::<f64>() / (gaps.len() - 1) as f64;
    eprintln!("CUBIC epochs: mean {mean_gap:.2} s, K {k:.2} s (W_max {w_max:.0})");
    assert!(mean_gap > k * 0.8 && mean_gap < k * 2.0);
}

#[test]
fn two_bbr_flows_share_the_bottleneck() {
    let link = link(100);
    let mut network = Network::new(link, 1);
    let mut config = SenderConfig::new(Variant::Bbr);
    let first = network.add_tcp(config.clone(), Instant::ZERO);
    config.seed = 2;
    let second = network.add_tcp(config, Instant::from_secs(1));
    network.run_until(Instant::from_secs(20), |_, _, _| {});
    let before: Vec<u64> = network
        .flows
        .iter()
        .map(|flow| flow.sink.delivered_bytes())
        .collect();
    network.run_until(Instant::from_secs(60), |_, _, _| {});
    let shares: Vec<f64> = [first, second]
        .iter()
        .map(|&index| (network.flows[index].sink.delivered_bytes() - before[index]) as f64)
        .collect();
    let jain = jain_index(&shares);
    eprintln!("two BBR flows, 20–60 s: shares {shares:?}, Jain {jain:.4}");
    assert!(jain > 0.95, "Jain {jain}");
}

#[test]
fn the_same_seed_gives_the_same_run_and_the_seed_moves_bbr_s_first_phase() {
    let run = |seed: u64| {
        let mut network = Network::new(link(60), 3);
        let mut config = SenderConfig::new(Variant::Bbr);
        config.seed = seed;
        network.add_tcp(config, Instant::ZERO);
        network.add_bulk(Variant::Cubic, Instant::from_millis(500));
        let mut trace = Vec::new();
        network.run_until(Instant::from_secs(10), |now, index, sender| {
            trace.push((now, index, sender.congestion_window().to_bits()));
        });
        trace
    };
    assert!(run(5) == run(5), "the same seed gave two runs");
    // Seven starting phases: some of eight seeds must differ.
    let first = run(0);
    assert!(
        (1..8).any(|seed| run(seed) != first),
        "every seed gave the same run"
    );
}
