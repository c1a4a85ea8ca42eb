//! Sender and receiver over a simple link, driven to steady state.

mod common;

use common::{loss_event_rate_from_drops, LinkSpec, Pair};
use core::time::Duration;
use tfrc_proto::{equation, Config, Instant};

/// With no random loss, TFRC fills a 1 Mb/s, 50 ms RTT link (≥ 90 %) and the DropTail queue
/// does not stay full.
#[test]
fn fills_an_unloaded_link_without_a_standing_full_queue() {
    let link = LinkSpec {
        rate_bps: 1e6,
        one_way_delay: Duration::from_millis(25),
        queue_limit: 50,
        loss: 0.0,
        seed: 1,
    };
    let mut pair = Pair::new(Config::default(), link);
    let end = Instant::from_secs(120);
    pair.run_until(end, 5_000_000);
    let throughput = pair.receive_rate(Instant::from_secs(20), end);
    let utilization = throughput * 8.0 / 1e6;
    let drops = pair.trace.dropped_send_times.len() as f64 / pair.trace.send_times.len() as f64;
    let mean_queue = pair.trace.queue_samples.iter().sum::<usize>() as f64
        / pair.trace.queue_samples.len() as f64;
    println!(
        "utilization {utilization:.3}, drop ratio {drops:.4}, mean queue {mean_queue:.1}, max {}",
        pair.trace.max_queue
    );
    assert!(utilization >= 0.90, "utilization {utilization}");
    assert!(utilization <= 1.0 + 1e-9);
    assert!(drops < 0.05, "drop ratio {drops}");
    assert!(pair.trace.max_queue <= 50);
    assert!(mean_queue < 45.0, "mean queue {mean_queue}");
}

/// With random loss and no congestion, the sending rate settles within 20 % of the equation's
/// rate for the loss event rate measured (independently, from the link's drops) and the path RTT.
#[test]
fn tracks_the_equation_under_random_loss() {
    for (loss, seed) in [(0.005, 11), (0.01, 12), (0.03, 13)] {
        let one_way = Duration::from_millis(50);
        let link = LinkSpec {
            rate_bps: 100e6,
            one_way_delay: one_way,
            queue_limit: 1000,
            loss,
            seed,
        };
        let mut pair = Pair::new(Config::default(), link);
        let start = Instant::from_secs(30);
        let end = Instant::from_secs(330);
        pair.run_until(end, 20_000_000);
        let rtt = one_way * 2;
        let p = loss_event_rate_from_drops(&pair.trace, rtt, start, end);
        let expected = equation::throughput(1000.0, rtt.as_secs_f64(), p);
        let measured = pair.send_rate(start, end);
        let ratio = measured / expected;
        // The receiver's own p, averaged over feedbacks, agrees with the independent count.
        let reported: Vec<f64> = pair
            .trace
            .sender_samples
            .iter()
            .filter(|s| s.0 >= start)
            .map(|s| s.2)
            .collect();
        let mean_reported = reported.iter().sum::<f64>() / reported.len() as f64;
        println!(
            "loss {loss}: p measured {p:.5}, p reported {mean_reported:.5}, X_eq {expected:.0} B/s, sent {measured:.0} B/s, ratio {ratio:.3}"
        );
        assert!((0.8..=1.2).contains(&ratio), "loss {loss}: ratio {ratio}");
        assert!(
            (mean_reported / p - 1.0).abs() < 0.3,
            "reported p {mean_reported} vs {p}"
        );
    }
}

/// gTFRC over a lossy link: TFRC alone settles near the equation's rate, gTFRC sends at its target
/// g when g is above that, and never below g.
#[test]
fn gtfrc_holds_its_target_under_loss() {
    let link = LinkSpec {
        rate_bps: 100e6,
        one_way_delay: Duration::from_millis(50),
        queue_limit: 1000,
        loss: 0.02,
        seed: 21,
    };
    let start = Instant::from_secs(20);
    let end = Instant::from_secs(120);
    let mut plain = Pair::new(Config::default(), link.clone());
    plain.run_until(end, 20_000_000);
    let g = 150_000.0; // bytes/s, about twice TFRC's rate at 2 % loss and 100 ms
    let mut guaranteed = Pair::new(
        Config {
            target_rate: Some(g),
            ..Config::default()
        },
        link,
    );
    guaranteed.run_until(end, 20_000_000);
    let plain_rate = plain.send_rate(start, end);
    let g_rate = guaranteed.send_rate(start, end);
    println!("TFRC {plain_rate:.0} B/s, gTFRC {g_rate:.0} B/s, g {g}");
    assert!(plain_rate < 0.8 * g);
    assert!(
        g_rate >= 0.99 * g && g_rate <= 1.05 * g,
        "gTFRC rate {g_rate}"
    );
    assert!(guaranteed.trace.sender_samples.iter().all(|s| s.1 >= g));
}

/// Several feedbacks per RTT on a long-delay path: RTT 1 s with RTT_ref = 100 ms gives ten
/// feedbacks per RTT at steady state, and the link is still filled.
#[test]
fn feedbacks_per_rtt_on_a_long_delay_path() {
    let link = LinkSpec {
        rate_bps: 1e6,
        one_way_delay: Duration::from_millis(500),
        queue_limit: 50,
        loss: 0.0,
        seed: 3,
    };
    let end = Instant::from_secs(200);
    let config = Config {
        rtt_ref: Some(Duration::from_millis(100)),
        ..Config::default()
    };
    let mut pair = Pair::new(config, link);
    pair.run_until(end, 20_000_000);
    let window = (Instant::from_secs(150), end);
    let feedbacks = pair
        .trace
        .feedback_times
        .iter()
        .filter(|&&t| t >= window.0 && t < window.1)
        .count();
    let rtt = pair.sender.state().rtt.unwrap().as_secs_f64();
    let per_rtt = feedbacks as f64 / ((window.1 - window.0).as_secs_f64() / rtt);
    let utilization = pair.receive_rate(Instant::from_secs(100), end) * 8.0 / 1e6;
    println!(
        "RTT {rtt:.3} s, {per_rtt:.1} feedbacks per RTT, N_fb {}, utilization {utilization:.3}",
        pair.receiver.feedbacks_per_rtt()
    );
    let expected = pair.receiver.feedbacks_per_rtt() as f64;
    assert!(expected >= 10.0);
    assert!(
        (per_rtt - expected).abs() <= 0.15 * expected,
        "{per_rtt} vs {expected}"
    );
    // The first loss interval comes from the rate of the last R = 1 s of arrivals during slow start
    // (§6.3.1), about 0.73 Mb/s here, and X stays at X(p) until the open interval outgrows it:
    // measured 0.79 over 100-200 s (0.997 when X_recv was measured since the last feedback).
    assert!(utilization >= 0.7, "utilization {utilization}");
}

/// RFC 5348 §6.2 step 2: X_recv is the rate over the previous R_m seconds, so it never exceeds the
/// bottleneck by more than one packet per R, with one feedback per RTT or four; and X, bounded by
/// 2·X_recv, never exceeds twice that (after the first loss, or throughout with four feedbacks
/// per RTT, slow start included).
#[test]
fn receive_rate_never_exceeds_the_bottleneck_by_more_than_a_packet_per_rtt() {
    let link = LinkSpec {
        rate_bps: 1e6,
        one_way_delay: Duration::from_millis(50),
        queue_limit: 20,
        loss: 0.0,
        seed: 3,
    };
    let capacity = link.rate_bps / 8.0;
    let base_rtt = 2.0 * link.one_way_delay.as_secs_f64();
    for rtt_ref in [None, Some(Duration::from_millis(25))] {
        let config = Config {
            rtt_ref,
            ..Config::default()
        };
        let mut pair = Pair::new(config, link.clone());
        pair.run_until(Instant::from_secs(120), 20_000_000);
        let samples = &pair.trace.feedback_samples;
        assert!(samples.len() > 500, "{} feedbacks", samples.len());
        let bound = capacity + 1000.0 / base_rtt;
        let max_x_recv = samples.iter().map(|s| s.1).fold(0.0, f64::max);
        let after_loss = samples.iter().filter(|s| s.3 > 0.0 || rtt_ref.is_some());
        let max_x = after_loss.map(|s| s.2).fold(0.0, f64::max);
        println!(
            "rtt_ref {rtt_ref:?}: max X_recv {:.0} B/s (bound {bound:.0}), max X {max_x:.0}",
            max_x_recv
        );
        assert!(max_x_recv <= bound, "X_recv {max_x_recv} > {bound}");
        assert!(max_x <= 2.0 * bound, "X {max_x} > {}", 2.0 * bound);
    }
}
