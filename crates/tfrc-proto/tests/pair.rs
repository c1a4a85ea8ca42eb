//! Sender and receiver over a simple link, driven to steady state.

mod common;

use core::time::Duration;
use common::{loss_event_rate_from_drops, LinkSpec, Pair};
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
    println!("utilization {utilization:.3}, drop ratio {drops:.4}, mean queue {mean_queue:.1}, max {}", pair.trace.max_queue);
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
        assert!((mean_reported / p - 1.0).abs() < 0.3, "reported p {mean_reported} vs {p}");
    }
}
