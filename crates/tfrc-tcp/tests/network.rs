//! TCP over a DropTail bottleneck: Reno's sawtooth, throughput against the PFTK model under
//! Bernoulli loss, and fairness between flows.
//!
//! Run with `--nocapture` to see the measured figures.

mod harness;

use core::time::Duration;

use harness::{jain_index, seconds, LinkConfig, Network};
use tfrc_proto::Instant;
use tfrc_tcp::{SenderConfig, Variant};

/// One fast recovery of the sawtooth, seen from the sender.
#[derive(Debug, Clone, Copy)]
struct Halving {
    at: Instant,
    window_before: f64,
    threshold_after: u32,
}

/// Reno alone on a 1 Mb/s, ~50 ms RTT bottleneck with a 20-packet DropTail queue: the window
/// grows by about one packet per round trip, is halved at every overflow, and the link stays
/// busy.
#[test]
fn reno_sawtooth_on_a_droptail_bottleneck() {
    let link = LinkConfig {
        rate_bps: 1_000_000,
        delay: Duration::from_millis(21),
        queue_limit: 20,
        loss_rate: 0.0,
    };
    let base_rtt = link.base_rtt(1040);
    let mut network = Network::new(link, 1);
    network.add_bulk(Variant::Reno, Instant::ZERO);

    let warm_up = Instant::from_secs(10);
    let end = Instant::from_secs(100);
    network.run_until(warm_up, |_, _, _| {});
    let stats_at_warm_up = *network.flows[0].sender.stats();
    let link_at_warm_up = network.stats;

    // Round trips are counted from the sequence space: a round ends when the ACK covers the
    // highest packet sent when it began.
    let mut halvings = Vec::new();
    let mut was_in_recovery = network.flows[0].sender.in_recovery();
    let mut previous_window = network.flows[0].sender.congestion_window();
    let mut round_end = network.flows[0].sender.next_new_sequence();
    let mut rounds = 0u64;
    // Congestion avoidance stretches from a recovery exit to the next entry.
    let mut stretch_start: Option<(f64, u64)> = None;
    let mut total_growth = 0.0;
    let mut total_rounds = 0u64;
    network.run_until(end, |now, _, sender| {
        if sender.first_unacknowledged() > round_end {
            rounds += 1;
            round_end = sender.next_new_sequence();
        }
        let in_recovery = sender.in_recovery();
        if in_recovery && !was_in_recovery {
            halvings.push(Halving {
                at: now,
                window_before: previous_window,
                threshold_after: sender.slow_start_threshold(),
            });
            if let Some((start_window, start_round)) = stretch_start.take() {
                total_growth += previous_window - start_window;
                total_rounds += rounds - start_round;
            }
        }
        if !in_recovery && was_in_recovery {
            stretch_start = Some((sender.congestion_window(), rounds));
        }
        was_in_recovery = in_recovery;
        previous_window = sender.congestion_window();
    });

    let sender = &network.flows[0].sender;
    let timeouts = sender.stats().timeouts - stats_at_warm_up.timeouts;
    let measured = seconds(end - warm_up);
    let bits = (network.stats.transmitted_bytes - link_at_warm_up.transmitted_bytes) * 8;
    let utilization = bits as f64 / (1e6 * measured);
    let growth_per_round = total_growth / total_rounds as f64;
    let cycle = seconds(halvings.last().unwrap().at - halvings[0].at) / (halvings.len() - 1) as f64;
    eprintln!(
        "sawtooth: base RTT {:?}, {} halvings, cycle {:.2} s, windows {:.1}..{:.1}, growth {:.3} packets/round over {} rounds, {} timeouts, utilisation {:.3}",
        base_rtt,
        halvings.len(),
        cycle,
        halvings.iter().map(|h| f64::from(h.threshold_after)).fold(f64::INFINITY, f64::min),
        halvings.iter().map(|h| h.window_before).fold(0.0, f64::max),
        growth_per_round,
        total_rounds,
        timeouts,
        utilization,
    );

    assert!(halvings.len() >= 10, "only {} halvings", halvings.len());
    for halving in &halvings {
        // ssthresh = ⌊cwnd⌋ / 2: the window is halved.
        let ratio = f64::from(halving.threshold_after) / halving.window_before;
        assert!((0.4..=0.55).contains(&ratio), "{halving:?}");
        // Every overflow costs the queue, not the link: the window never drops below what the
        // path holds without queueing (about 6 packets).
        assert!(halving.threshold_after >= 6, "{halving:?}");
    }
    assert!(
        (0.85..=1.15).contains(&growth_per_round),
        "window grew {growth_per_round} packets per round trip"
    );
    assert_eq!(timeouts, 0, "one flow, one loss per overflow: no timeout");
    assert!(utilization >= 0.9, "utilisation {utilization}");
}

/// The full PFTK model (Padhye, Firoiu, Towsley, Kurose, SIGCOMM 1998, eq. 32) in packets per
/// second: `b` packets acknowledged per ACK, loss probability `p`, round-trip time `rtt` and
/// retransmission timeout `t0` in seconds, maximum window `w_max` packets.
fn pftk_packets_per_second(p: f64, rtt: f64, t0: f64, b: f64, w_max: f64) -> f64 {
    let timeout_term = t0 * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    let rate = 1.0 / (rtt * (2.0 * b * p / 3.0).sqrt() + timeout_term);
    rate.min(w_max / rtt)
}

/// What one Bernoulli-loss run measured.
#[derive(Debug)]
struct LossRun {
    loss_rate: f64,
    mean_rtt: f64,
    mean_rto: f64,
    send_rate: f64,
    model_rate: f64,
    timeouts: u64,
}

impl LossRun {
    fn error(&self) -> f64 {
        (self.send_rate - self.model_rate) / self.model_rate
    }
}

/// One bulk flow on a fat, unqueued path (100 ms RTT) with Bernoulli loss `p`: the sending
/// rate (retransmissions included, as PFTK counts) against the model fed with the measured
/// loss rate, mean SRTT and mean RTO.
fn bernoulli_run(variant: Variant, loss_rate: f64, seconds_measured: u64, seed: u64) -> LossRun {
    let link = LinkConfig {
        rate_bps: 100_000_000,
        delay: Duration::from_millis(50),
        queue_limit: 100_000,
        loss_rate,
    };
    let mut network = Network::new(link, seed);
    network.add_bulk(variant, Instant::ZERO);
    let warm_up = Instant::from_secs(20);
    let end = warm_up + Duration::from_secs(seconds_measured);
    network.run_until(warm_up, |_, _, _| {});
    let sent_before = network.flows[0].sender.stats().segments_sent;
    let timeouts_before = network.flows[0].sender.stats().timeouts;
    let link_before = network.stats;

    let (mut rtt_sum, mut rto_sum, mut samples) = (0.0, 0.0, 0u64);
    network.run_until(end, |_, _, sender| {
        if let Some(rtt) = sender.smoothed_rtt() {
            rtt_sum += seconds(rtt);
            rto_sum += seconds(sender.base_retransmission_timeout());
            samples += 1;
        }
    });
    let sender = network.flows[0].sender.stats();
    let offered = network.stats.offered_packets - link_before.offered_packets;
    let dropped = network.stats.random_drops - link_before.random_drops;
    let measured_loss = dropped as f64 / offered as f64;
    let mean_rtt = rtt_sum / samples as f64;
    let mean_rto = rto_sum / samples as f64;
    let send_rate = (sender.segments_sent - sent_before) as f64 / seconds_measured as f64;
    let model_rate = pftk_packets_per_second(measured_loss, mean_rtt, mean_rto, 1.0, 10_000.0);
    LossRun {
        loss_rate: measured_loss,
        mean_rtt,
        mean_rto,
        send_rate,
        model_rate,
        timeouts: sender.timeouts - timeouts_before,
    }
}

/// Relative error to the PFTK model accepted for Reno, the variant the model describes.
/// Measured: −7.5 %, −9 % and −12.5 % at p = 0.5 %, 1 % and 2 % (Reno times out on most windows
/// with two losses, slightly more often than the model assumes); −12 % to −15 % at 2 % over
/// other seeds.
const PFTK_TOLERANCE_RENO: f64 = 0.20;

/// Relative error accepted for NewReno and SACK, which recover from multiple losses per window
/// without a timeout. Measured: −2 % to −5 %.
const PFTK_TOLERANCE_NEWRENO_SACK: f64 = 0.10;

/// Throughput under random loss follows the PFTK model: the measured sending rate against the
/// model fed with the measured loss rate, mean SRTT and mean RTO, 400 s per point.
#[test]
fn throughput_matches_the_pftk_model_under_bernoulli_loss() {
    // PFTK models Reno's window; CUBIC and BBR are not expected to follow it.
    for variant in Variant::ALL
        .into_iter()
        .filter(|variant| !variant.is_modern())
    {
        let tolerance = if variant == Variant::Reno {
            PFTK_TOLERANCE_RENO
        } else {
            PFTK_TOLERANCE_NEWRENO_SACK
        };
        for (loss_rate, seed) in [(0.005, 11), (0.01, 12), (0.02, 13)] {
            let run = bernoulli_run(variant, loss_rate, 400, seed);
            eprintln!(
                "PFTK {variant} p={:.4} rtt={:.4}s rto={:.3}s sent={:.1} pkt/s model={:.1} pkt/s error={:+.1}% timeouts={}",
                run.loss_rate,
                run.mean_rtt,
                run.mean_rto,
                run.send_rate,
                run.model_rate,
                100.0 * run.error(),
                run.timeouts
            );
            assert!(
                run.error().abs() <= tolerance,
                "{variant} p = {loss_rate}: {run:?}"
            );
        }
    }
}

/// Fairness of `count` bulk flows of `variant` with the same RTT on a DropTail bottleneck.
fn jain_for(variant: Variant, count: usize) -> f64 {
    let link = LinkConfig {
        rate_bps: 10_000_000,
        delay: Duration::from_millis(20),
        queue_limit: 50,
        loss_rate: 0.0,
    };
    let mut network = Network::new(link, 3);
    for index in 0..count {
        // Staggered starts, as ns-2 scripts do, so the flows do not move in lockstep.
        let start = Instant::from_millis(37 * index as u64);
        network.add_tcp(SenderConfig::new(variant), start);
    }
    let warm_up = Instant::from_secs(10);
    let end = Instant::from_secs(70);
    network.run_until(warm_up, |_, _, _| {});
    let before: Vec<u64> = network
        .flows
        .iter()
        .map(|flow| flow.sink.delivered_bytes())
        .collect();
    network.run_until(end, |_, _, _| {});
    let shares: Vec<f64> = network
        .flows
        .iter()
        .zip(&before)
        .map(|(flow, before)| (flow.sink.delivered_bytes() - before) as f64)
        .collect();
    let total_bits: f64 = shares.iter().sum::<f64>() * 8.0;
    let index = jain_index(&shares);
    eprintln!(
        "fairness {variant} x{count}: Jain {index:.4}, goodput {:.2} Mb/s, shares (kB) {:?}",
        total_bits / seconds(end - warm_up) / 1e6,
        shares
            .iter()
            .map(|share| (share / 1000.0).round())
            .collect::<Vec<_>>()
    );
    index
}

/// 4 and 8 flows with the same RTT share a DropTail bottleneck fairly (Jain index ≥ 0.95 over
/// a minute).
#[test]
fn flows_with_the_same_rtt_share_fairly() {
    for variant in [Variant::Reno, Variant::Sack] {
        for count in [4, 8] {
            let index = jain_for(variant, count);
            assert!(index >= 0.95, "{variant} x{count}: Jain index {index}");
        }
    }
}
