//! Unit tests of the sender, one rule each, fed by hand at `now ± Duration`.

use super::*;
use crate::{SackBlock, SinkConfig, TcpSink};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub(super) fn at(millis: u64) -> Instant {
    Instant::from_millis(millis)
}

fn sender_with(config: SenderConfig) -> TcpSender {
    TcpSender::new(config).unwrap()
}

fn sender(variant: Variant) -> TcpSender {
    sender_with(SenderConfig::new(variant))
}

/// A sender in congestion avoidance with `window` packets (initial window = ssthresh = window).
fn sender_in_avoidance(variant: Variant, window: u32) -> TcpSender {
    let mut config = SenderConfig::new(variant);
    config.initial_window = window;
    config.initial_slow_start_threshold = Some(window);
    sender_with(config)
}

pub(super) fn drain(sender: &mut TcpSender, now: Instant) -> Vec<Segment> {
    core::iter::from_fn(|| sender.poll_transmit(now)).collect()
}

pub(super) fn sequences(segments: &[Segment]) -> Vec<u64> {
    segments.iter().map(|segment| segment.sequence).collect()
}

/// Delivers `segments` (except the sequences in `lost`) to `sink` and returns its ACKs.
pub(super) fn deliver(
    sink: &mut TcpSink,
    now: Instant,
    segments: &[Segment],
    lost: &[u64],
) -> Vec<Ack> {
    let mut acks = Vec::new();
    for segment in segments {
        if lost.contains(&segment.sequence) {
            continue;
        }
        sink.handle_segment(now, segment).unwrap();
        while let Some(ack) = sink.poll_ack() {
            acks.push(ack);
        }
    }
    acks
}

/// The ACK of a receiver missing packet `hole` and holding those after it up to `high`
/// (exclusive): cumulative at `hole`, one SACK block `hole + 1 .. high`.
pub(super) fn ack_above_hole(hole: u64, high: u64) -> Ack {
    Ack::with_sack_blocks(hole, &[SackBlock::new(hole + 1, high)])
}

/// Packet 0 lost and 1, 2, 3 SACKed by one ACK each at `now`: RFC 6675's `IsLost(0)` holds.
pub(super) fn sack_the_three_after_the_first(sender: &mut TcpSender, now: Instant) {
    for high in 2..=4 {
        sender.handle_ack(now, &ack_above_hole(0, high)).unwrap();
    }
}

#[test]
fn initial_window_then_slow_start_adds_one_packet_per_ack() {
    let mut sender = sender(Variant::Reno);
    let first = drain(&mut sender, at(0));
    assert_eq!(sequences(&first), vec![0, 1]);
    assert!(first.iter().all(|segment| !segment.retransmission));
    assert!(sender.in_slow_start());
    // RFC 5681 §3.1: cwnd += 1 per ACK in slow start.
    sender.handle_ack(at(100), &Ack::new(1)).unwrap();
    assert_eq!(sender.congestion_window(), 3.0);
    assert_eq!(sequences(&drain(&mut sender, at(100))), vec![2, 3]);
    sender.handle_ack(at(100), &Ack::new(2)).unwrap();
    assert_eq!(sender.congestion_window(), 4.0);
    assert_eq!(sequences(&drain(&mut sender, at(100))), vec![4, 5]);
    assert_eq!(sender.outstanding_packets(), 4);
}

#[test]
fn congestion_avoidance_adds_one_over_cwnd_per_ack() {
    let mut sender = sender_in_avoidance(Variant::Reno, 4);
    assert!(!sender.in_slow_start());
    assert_eq!(drain(&mut sender, at(0)).len(), 4);
    sender.handle_ack(at(100), &Ack::new(1)).unwrap();
    assert!((sender.congestion_window() - 4.25).abs() < 1e-12);
    for next in 2..=4 {
        sender.handle_ack(at(100), &Ack::new(next)).unwrap();
    }
    // About one packet per window of ACKs: 4 → 4.25 → 4.485 → 4.708 → 4.92.
    assert!((sender.congestion_window() - 4.92).abs() < 0.01);
}

#[test]
fn window_limited_by_max_window() {
    let mut config = SenderConfig::new(Variant::Reno);
    config.initial_window = 50;
    config.max_window = 20;
    let mut sender = sender_with(config);
    assert_eq!(drain(&mut sender, at(0)).len(), 20);
}

#[test]
fn reno_fast_retransmit_and_recovery() {
    let mut sender = sender_in_avoidance(Variant::Reno, 10);
    assert_eq!(drain(&mut sender, at(0)).len(), 10);
    sender.handle_ack(at(100), &Ack::new(1)).unwrap(); // packet 1 is lost
    assert_eq!(sequences(&drain(&mut sender, at(100))), vec![10]);
    // RFC 3042: the first two duplicates each release one new packet.
    sender.handle_ack(at(101), &Ack::new(1)).unwrap();
    assert_eq!(sequences(&drain(&mut sender, at(101))), vec![11]);
    sender.handle_ack(at(102), &Ack::new(1)).unwrap();
    assert_eq!(sequences(&drain(&mut sender, at(102))), vec![12]);
    assert!(!sender.in_recovery());
    // RFC 5681 §3.2: the third duplicate retransmits and halves the window.
    sender.handle_ack(at(103), &Ack::new(1)).unwrap();
    assert!(sender.in_recovery());
    assert_eq!(sender.slow_start_threshold(), 5); // ⌊10.1⌋ / 2
    assert_eq!(sender.congestion_window(), 5.0);
    assert_eq!(sender.effective_window(), 8.0); // ssthresh + 3
    let retransmitted = drain(&mut sender, at(103));
    assert_eq!(sequences(&retransmitted), vec![1]);
    assert!(retransmitted[0].retransmission);
    assert_eq!(sender.stats().fast_recoveries, 1);
    // Each further duplicate inflates the window by one; new data flows once it exceeds the
    // 12 packets outstanding above packet 1.
    for step in 0..5 {
        sender.handle_ack(at(104 + step), &Ack::new(1)).unwrap();
    }
    assert_eq!(sequences(&drain(&mut sender, at(110))), vec![13]);
    // The ACK for the retransmission ends fast recovery with cwnd = ssthresh (+1/cwnd).
    sender.handle_ack(at(200), &Ack::new(13)).unwrap();
    assert!(!sender.in_recovery());
    assert!((sender.congestion_window() - 5.2).abs() < 1e-12);
    assert_eq!(sender.effective_window(), 5.2);
    assert_eq!(sender.stats().segments_retransmitted, 1);
}

#[test]
fn reno_partial_ack_ends_recovery_and_blocks_a_second_fast_retransmit() {
    let mut sender = sender_in_avoidance(Variant::Reno, 10);
    let mut sink = TcpSink::new(SinkConfig::new()).unwrap();
    let segments = drain(&mut sender, at(0));
    // Packets 2 and 5 are lost.
    for ack in deliver(&mut sink, at(50), &segments, &[2, 5]) {
        sender.handle_ack(at(100), &ack).unwrap();
    }
    assert!(sender.in_recovery());
    let retransmissions = drain(&mut sender, at(100));
    assert_eq!(retransmissions[0].sequence, 2);
    for ack in deliver(&mut sink, at(150), &retransmissions, &[]) {
        sender.handle_ack(at(200), &ack).unwrap();
    }
    // The partial ACK (for 5) ends Reno's recovery...
    assert_eq!(sender.first_unacknowledged(), 5);
    assert!(!sender.in_recovery());
    // ...and the duplicates that follow cannot start another one (ns-2 `bugFix_`): Reno waits
    // for the timer.
    for _ in 0..5 {
        sender.handle_ack(at(210), &Ack::new(5)).unwrap();
    }
    assert!(!sender.in_recovery());
    assert_eq!(sender.stats().fast_recoveries, 1);
    assert!(drain(&mut sender, at(210))
        .iter()
        .all(|segment| !segment.retransmission));
}

#[test]
fn newreno_partial_ack_retransmits_the_next_hole() {
    let mut sender = sender_in_avoidance(Variant::NewReno, 10);
    let mut sink = TcpSink::new(SinkConfig::new()).unwrap();
    let segments = drain(&mut sender, at(0));
    for ack in deliver(&mut sink, at(50), &segments, &[2, 5]) {
        sender.handle_ack(at(100), &ack).unwrap();
    }
    let retransmissions = drain(&mut sender, at(100));
    assert_eq!(retransmissions[0].sequence, 2);
    let deadline_before = sender.poll_timeout().unwrap();
    // The partial ACK for 5: RFC 6582 §3.2 step 5 retransmits 5 at once and stays in recovery.
    let acks = deliver(&mut sink, at(150), &retransmissions, &[]);
    assert_eq!(acks[0].next_expected(), 5);
    sender.handle_ack(at(200), &acks[0]).unwrap();
    assert!(sender.in_recovery());
    let next = drain(&mut sender, at(200));
    assert_eq!(next[0].sequence, 5);
    assert!(next[0].retransmission);
    // The first partial ACK resets the timer.
    assert!(sender.poll_timeout().unwrap() > deadline_before);
    // The full ACK ends recovery with cwnd = ssthresh (plus the ns-2 per-ACK increase).
    let acks = deliver(&mut sink, at(250), &next, &[]);
    sender.handle_ack(at(300), &acks[0]).unwrap();
    assert!(!sender.in_recovery());
    assert_eq!(sender.slow_start_threshold(), 5);
    assert!((sender.congestion_window() - 5.2).abs() < 1e-12);
    assert_eq!(sender.stats().timeouts, 0);
    assert_eq!(sender.stats().segments_retransmitted, 2);
}

#[test]
fn newreno_partial_ack_deflates_by_the_amount_acknowledged() {
    let mut sender = sender_in_avoidance(Variant::NewReno, 20);
    let segments = drain(&mut sender, at(0));
    assert_eq!(segments.len(), 20);
    for _ in 0..3 {
        sender.handle_ack(at(100), &Ack::new(0)).unwrap();
    }
    let _ = drain(&mut sender, at(100));
    for _ in 0..10 {
        sender.handle_ack(at(101), &Ack::new(0)).unwrap();
    }
    // ssthresh 10, inflation 3 + 10.
    assert_eq!(sender.effective_window(), 23.0);
    let _ = drain(&mut sender, at(101));
    // A partial ACK for 6 packets takes 5 out of the window (RFC 6582: deflate, add one back).
    sender.handle_ack(at(200), &Ack::new(6)).unwrap();
    assert_eq!(sender.effective_window(), 18.0);
    assert_eq!(sender.congestion_window(), 10.0);
}

#[test]
fn sack_recovery_retransmits_only_the_holes() {
    let mut sender = sender_in_avoidance(Variant::Sack, 20);
    let mut sink = TcpSink::new(SinkConfig::for_variant(Variant::Sack)).unwrap();
    let segments = drain(&mut sender, at(0));
    let lost = [3, 7, 8, 12];
    let acks = deliver(&mut sink, at(50), &segments, &lost);
    let mut sent = Vec::new();
    for ack in &acks {
        sender.handle_ack(at(100), ack).unwrap();
        sent.extend(drain(&mut sender, at(100)));
    }
    assert!(sender.in_recovery());
    let retransmitted: Vec<u64> = sent
        .iter()
        .filter(|segment| segment.retransmission)
        .map(|segment| segment.sequence)
        .collect();
    // Every hole with three SACKed packets above it, each once, in order.
    assert_eq!(retransmitted, vec![3, 7, 8, 12]);
    // Deliver everything: one full ACK ends recovery, nothing else is resent.
    let acks = deliver(&mut sink, at(150), &sent, &[]);
    for ack in &acks {
        sender.handle_ack(at(200), ack).unwrap();
        sent.extend(drain(&mut sender, at(200)));
    }
    assert!(!sender.in_recovery());
    assert_eq!(sender.stats().segments_retransmitted, 4);
    assert_eq!(sender.stats().timeouts, 0);
    assert_eq!(sender.slow_start_threshold(), 10);
}

#[test]
fn sack_pipe_limits_sending_in_recovery() {
    let mut sender = sender_in_avoidance(Variant::Sack, 10);
    let _ = drain(&mut sender, at(0));
    // Packet 0 lost; 1..=3 SACKed: IsLost(0) holds.
    sack_the_three_after_the_first(&mut sender, at(100));
    assert!(sender.in_recovery());
    assert_eq!(sender.congestion_window(), 5.0);
    // RFC 6675 SetPipe: 10 outstanding − 3 SACKed − 1 lost + 1 retransmitted = 7 ≥ cwnd 5.
    assert_eq!(sequences(&drain(&mut sender, at(100))), vec![0]);
    assert_eq!(sender.pipe(), 7);
    // Three more SACKs: pipe 4, so one new packet may leave.
    sender
        .handle_ack(at(110), &Ack::with_sack_blocks(0, &[SackBlock::new(1, 7)]))
        .unwrap();
    assert_eq!(sender.pipe(), 4);
    assert_eq!(sequences(&drain(&mut sender, at(110))), vec![10]);
}

#[test]
fn retransmission_timer_backs_off_exponentially_up_to_the_cap() {
    let mut config = SenderConfig::new(Variant::Reno);
    config.max_rto = Duration::from_secs(60);
    let mut sender = sender_with(config);
    let _ = drain(&mut sender, at(0));
    // RFC 6298 §2.1: 1 s before any sample.
    let mut deadline = sender.poll_timeout().unwrap();
    assert_eq!(deadline, at(1000));
    let mut expected_rto = Duration::from_secs(1);
    for expiry in 1..=8 {
        // An early call is a no-op.
        sender.handle_timeout(deadline - Duration::from_nanos(1));
        assert_eq!(sender.stats().timeouts, expiry - 1);
        sender.handle_timeout(deadline);
        assert_eq!(sender.stats().timeouts, expiry);
        // RFC 6298 §5.4: retransmit the earliest unacknowledged packet, only it (cwnd = 1).
        let resent = drain(&mut sender, deadline);
        assert_eq!(sequences(&resent), vec![0]);
        assert!(resent[0].retransmission);
        assert_eq!(sender.congestion_window(), 1.0);
        // §5.5: RTO doubles; §2.5: capped at 60 s.
        expected_rto = (expected_rto * 2).min(Duration::from_secs(60));
        assert_eq!(sender.retransmission_timeout(), expected_rto);
        let next = sender.poll_timeout().unwrap();
        assert_eq!(next - deadline, expected_rto);
        deadline = next;
    }
    assert_eq!(sender.backoff(), 64);
    assert_eq!(sender.slow_start_threshold(), 2);
}

#[test]
fn karn_no_rtt_sample_from_a_retransmission() {
    let mut sender = sender(Variant::Reno);
    let _ = drain(&mut sender, at(0));
    sender.handle_ack(at(100), &Ack::new(1)).unwrap();
    assert_eq!(sender.smoothed_rtt(), Some(Duration::from_millis(100)));
    let rto = sender.retransmission_timeout(); // 100 + 4·50 = 300 ms
    assert_eq!(rto, Duration::from_millis(300));
    let _ = drain(&mut sender, at(100)); // 2, 3
    let deadline = sender.poll_timeout().unwrap();
    sender.handle_timeout(deadline);
    let resent = drain(&mut sender, deadline);
    assert_eq!(sequences(&resent), vec![1]);
    assert_eq!(sender.backoff(), 2);
    // The ACK for the retransmitted packet gives no sample (it could be for either copy) and
    // keeps the backed-off timeout.
    sender
        .handle_ack(deadline + Duration::from_millis(5), &Ack::new(2))
        .unwrap();
    assert_eq!(sender.smoothed_rtt(), Some(Duration::from_millis(100)));
    assert_eq!(sender.latest_rtt(), Some(Duration::from_millis(100)));
    assert_eq!(sender.backoff(), 2);
    assert_eq!(sender.retransmission_timeout(), Duration::from_millis(600));
    // Go-back-N resends 2 and 3: still no sample from their ACK.
    let now = deadline + Duration::from_millis(5);
    let resent = drain(&mut sender, now);
    assert_eq!(sequences(&resent), vec![2, 3]);
    assert!(resent.iter().all(|segment| segment.retransmission));
    let now = now + Duration::from_millis(10);
    sender.handle_ack(now, &Ack::new(4)).unwrap();
    assert_eq!(sender.latest_rtt(), Some(Duration::from_millis(100)));
    assert_eq!(sender.backoff(), 2);
    // A packet sent for the first time after the timeout is timed again; its ACK ends the
    // backoff (ns-2 resets `t_backoff_` with the sample).
    let fresh = drain(&mut sender, now);
    assert!(!fresh[0].retransmission);
    sender
        .handle_ack(
            now + Duration::from_millis(120),
            &Ack::new(fresh[0].sequence + 1),
        )
        .unwrap();
    assert_eq!(sender.latest_rtt(), Some(Duration::from_millis(120)));
    assert_eq!(sender.backoff(), 1);
}

#[test]
fn timestamps_give_an_rtt_sample_across_a_retransmission_and_end_the_backoff() {
    for timestamps in [true, false] {
        let mut config = SenderConfig::new(Variant::Cubic);
        // The RTO alone: no tail loss probe racing it.
        config.rack_tlp = false;
        config.timestamps = timestamps;
        let mut sender = sender_with(config);
        let mut sink = TcpSink::new(SinkConfig::for_variant(Variant::Cubic)).unwrap();
        let first = drain(&mut sender, at(0));
        for ack in deliver(&mut sink, at(50), &first, &[]) {
            sender.handle_ack(at(100), &ack).unwrap();
        }
        assert_eq!(sender.latest_rtt(), Some(Duration::from_millis(100)));
        // The next flight is lost whole; the timer fires and the first hole is resent.
        let lost = drain(&mut sender, at(100));
        let deadline = sender.poll_timeout().unwrap();
        sender.handle_timeout(deadline);
        let resent = drain(&mut sender, deadline);
        assert_eq!(resent[0].sequence, lost[0].sequence);
        assert!(resent[0].retransmission);
        assert_eq!(resent[0].timestamp, deadline);
        assert_eq!(sender.backoff(), 2);
        // The sink echoes the resent copy's timestamp; its ACK is back 81.4 ms after it left.
        let acks = deliver(
            &mut sink,
            deadline + Duration::from_micros(40_700),
            &resent[..1],
            &[],
        );
        let ack = acks.last().unwrap();
        assert_eq!(ack.echo(), Some(deadline));
        let back = deadline + Duration::from_micros(81_400);
        sender.handle_ack(back, ack).unwrap();
        if timestamps {
            // Linux: a millisecond clock read by truncation on both ends.
            let whole = back.as_nanos() / 1_000_000 - deadline.as_nanos() / 1_000_000;
            assert_eq!(sender.latest_rtt(), Some(Duration::from_millis(whole)));
            assert!((81..=82).contains(&whole));
            assert_eq!(sender.backoff(), 1);
        } else {
            // Karn: no sample, and the backoff lasts.
            assert_eq!(sender.latest_rtt(), Some(Duration::from_millis(100)));
            assert_eq!(sender.backoff(), 2);
        }
    }
}

#[test]
fn timestamps_are_ignored_by_ns2s_agents_and_by_acks_that_move_nothing() {
    // Reno with `timestamps` on by hand: ns-2's agents time one segment per round trip and
    // take nothing from the echo.
    let mut config = SenderConfig::new(Variant::Reno);
    config.timestamps = true;
    let mut sender = sender_with(config);
    let _ = drain(&mut sender, at(0));
    sender.handle_ack(at(100), &Ack::new(1)).unwrap();
    let _ = drain(&mut sender, at(100));
    let deadline = sender.poll_timeout().unwrap();
    sender.handle_timeout(deadline);
    let _ = drain(&mut sender, deadline);
    let echoed = Ack::new(2).with_echo(Some(deadline));
    sender
        .handle_ack(deadline + Duration::from_millis(30), &echoed)
        .unwrap();
    assert_eq!(sender.latest_rtt(), Some(Duration::from_millis(100)));
    assert_eq!(sender.backoff(), 2);
    // CUBIC: a duplicate ACK (RTTM: no new data acknowledged) gives no sample either.
    let mut config = SenderConfig::new(Variant::Cubic);
    config.rack_tlp = false;
    let mut sender = sender_with(config);
    let first = drain(&mut sender, at(0));
    sender
        .handle_ack(at(100), &Ack::new(first.len() as u64))
        .unwrap();
    let _ = drain(&mut sender, at(100));
    let deadline = sender.poll_timeout().unwrap();
    sender.handle_timeout(deadline);
    let _ = drain(&mut sender, deadline);
    let duplicate = Ack::new(first.len() as u64).with_echo(Some(deadline));
    sender
        .handle_ack(deadline + Duration::from_millis(30), &duplicate)
        .unwrap();
    assert_eq!(sender.latest_rtt(), Some(Duration::from_millis(100)));
    assert_eq!(sender.backoff(), 2);
}

#[test]
fn minimum_rto_is_respected() {
    let mut sender = sender(Variant::Sack);
    let mut now = at(0);
    let mut next_ack = 0;
    for _ in 0..8 {
        let sent = drain(&mut sender, now);
        now += Duration::from_millis(1);
        next_ack += sent.len() as u64;
        sender.handle_ack(now, &Ack::new(next_ack)).unwrap();
    }
    assert_eq!(sender.smoothed_rtt(), Some(Duration::from_millis(1)));
    // RFC 6298 §2.4 with ns-2's 200 ms floor instead of 1 s.
    assert_eq!(sender.retransmission_timeout(), Duration::from_millis(200));
    let _ = drain(&mut sender, now);
    assert_eq!(
        sender.poll_timeout(),
        Some(now + Duration::from_millis(200))
    );
}

#[test]
fn timer_stops_when_everything_is_acknowledged_and_restarts_on_new_acks() {
    let mut sender = sender(Variant::NewReno);
    let _ = drain(&mut sender, at(0));
    assert_eq!(sender.poll_timeout(), Some(at(1000)));
    // RFC 6298 §5.3: an ACK for new data restarts the timer.
    sender.handle_ack(at(100), &Ack::new(1)).unwrap();
    assert_eq!(
        sender.poll_timeout(),
        Some(at(100) + Duration::from_millis(300))
    );
    // §5.2: all outstanding data acknowledged stops it.
    sender.handle_ack(at(100), &Ack::new(2)).unwrap();
    assert_eq!(sender.poll_timeout(), None);
    // A stale timeout call with no timer does nothing.
    sender.handle_timeout(at(5000));
    assert_eq!(sender.stats().timeouts, 0);
}

#[test]
fn timeout_goes_back_to_slow_start_and_resends_from_the_first_hole() {
    let mut sender = sender_in_avoidance(Variant::NewReno, 8);
    let _ = drain(&mut sender, at(0));
    sender.handle_ack(at(100), &Ack::new(3)).unwrap();
    let _ = drain(&mut sender, at(100));
    let deadline = sender.poll_timeout().unwrap();
    sender.handle_timeout(deadline);
    assert_eq!(sender.slow_start_threshold(), 4);
    assert_eq!(sender.congestion_window(), 1.0);
    assert!(sender.in_slow_start());
    assert_eq!(sequences(&drain(&mut sender, deadline)), vec![3]);
    // Go-back-N: the ACK for 3 lets 4 and 5 out again (slow start, cwnd 2).
    sender.handle_ack(deadline, &Ack::new(4)).unwrap();
    let resent = drain(&mut sender, deadline);
    assert_eq!(sequences(&resent), vec![4, 5]);
    assert!(resent.iter().all(|segment| segment.retransmission));
    // Three duplicates for data sent before the timeout do not trigger fast retransmit
    // (RFC 6582 §3.2 step 1: `recover` was set by the timeout).
    for _ in 0..3 {
        sender.handle_ack(deadline, &Ack::new(4)).unwrap();
    }
    assert!(!sender.in_recovery());
}

#[test]
fn finite_transfer_finishes() {
    let mut config = SenderConfig::new(Variant::Sack);
    config.packet_limit = Some(5);
    let mut sender = sender_with(config);
    let mut sink = TcpSink::new(SinkConfig::for_variant(Variant::Sack)).unwrap();
    let mut now = at(0);
    while !sender.is_finished() {
        let sent = drain(&mut sender, now);
        assert!(sent.iter().all(|segment| segment.sequence < 5));
        now += Duration::from_millis(50);
        for ack in deliver(&mut sink, now, &sent, &[]) {
            sender.handle_ack(now, &ack).unwrap();
        }
        assert!(now < at(10_000), "transfer stalled");
    }
    assert_eq!(sink.delivered_bytes(), 5000);
    assert_eq!(sender.poll_timeout(), None);
    assert!(sender.poll_transmit(now).is_none());
}

#[test]
fn stop_ends_new_data_but_delivers_what_was_sent() {
    let mut sender = sender(Variant::Reno);
    let sent = drain(&mut sender, at(0));
    assert_eq!(sent.len(), 2);
    sender.stop(at(10));
    assert_eq!(sender.stopped_at(), Some(at(10)));
    assert!(!sender.is_finished());
    sender.handle_ack(at(100), &Ack::new(1)).unwrap();
    assert!(drain(&mut sender, at(100)).is_empty());
    // The lost packet 1 is still retransmitted on timeout.
    let deadline = sender.poll_timeout().unwrap();
    sender.handle_timeout(deadline);
    assert_eq!(sequences(&drain(&mut sender, deadline)), vec![1]);
    sender.handle_ack(deadline, &Ack::new(2)).unwrap();
    assert!(sender.is_finished());
    assert_eq!(sender.poll_timeout(), None);
    // Stopping before anything was sent finishes at once.
    let mut idle = sender_with(SenderConfig::new(Variant::Sack));
    idle.stop(at(0));
    assert!(idle.is_finished());
    assert!(idle.poll_transmit(at(0)).is_none());
}

#[test]
fn ack_for_unsent_data_is_refused_and_changes_nothing() {
    let mut sender = sender(Variant::NewReno);
    let _ = drain(&mut sender, at(0));
    let before = sender.clone();
    let result = sender.handle_ack(at(10), &Ack::new(3));
    assert_eq!(
        result,
        Err(AckError::UnsentData {
            acknowledged_up_to: 3,
            sent_up_to: 2
        })
    );
    assert_eq!(sender.congestion_window(), before.congestion_window());
    assert_eq!(sender.first_unacknowledged(), 0);
    assert_eq!(sender.stats().invalid_acks, 1);
    assert!(sender.handle_ack(at(10), &Ack::new(u64::MAX)).is_err());
}

#[test]
fn ack_going_backwards_is_ignored() {
    let mut sender = sender(Variant::Reno);
    let _ = drain(&mut sender, at(0));
    sender.handle_ack(at(100), &Ack::new(2)).unwrap();
    let _ = drain(&mut sender, at(100));
    let window = sender.congestion_window();
    for _ in 0..5 {
        sender.handle_ack(at(101), &Ack::new(1)).unwrap();
    }
    assert_eq!(sender.stats().stale_acks, 5);
    assert_eq!(sender.stats().duplicate_acks, 0);
    assert_eq!(sender.congestion_window(), window);
    assert_eq!(sender.first_unacknowledged(), 2);
}

#[test]
fn duplicate_ack_without_outstanding_data_is_not_a_duplicate() {
    let mut sender = sender(Variant::Sack);
    let _ = drain(&mut sender, at(0));
    sender.handle_ack(at(100), &Ack::new(2)).unwrap();
    sender.stop(at(100));
    for _ in 0..5 {
        sender.handle_ack(at(101), &Ack::new(2)).unwrap();
    }
    assert_eq!(sender.stats().duplicate_acks, 0);
    assert!(!sender.in_recovery());
}

#[test]
fn bogus_sack_blocks_are_clipped_or_ignored() {
    let mut sender = sender_in_avoidance(Variant::Sack, 10);
    let _ = drain(&mut sender, at(0));
    let blocks = [
        SackBlock::new(9, 3),         // reversed
        SackBlock::new(50, u64::MAX), // never sent
        SackBlock::new(0, 0),         // empty
    ];
    sender
        .handle_ack(at(10), &Ack::with_sack_blocks(0, &blocks))
        .unwrap();
    assert_eq!(sender.sacked_packets(), 0);
    // Partly valid: clipped to the outstanding packets 0..10.
    sender
        .handle_ack(
            at(10),
            &Ack::with_sack_blocks(0, &[SackBlock::new(8, 1000)]),
        )
        .unwrap();
    assert_eq!(sender.sacked_packets(), 2);
}

/// Random, mostly nonsensical ACKs and timer calls never panic and keep the invariants.
#[test]
fn random_input_never_panics() {
    // Every variant in each profile (ns-2's agents, the RFCs and Linux, ns-3.37).
    let configs = Variant::ALL.into_iter().flat_map(|variant| {
        [
            SenderConfig::new(variant),
            SenderConfig::ns2(variant),
            SenderConfig::ns3(variant),
        ]
    });
    for config in configs {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut sender = sender_with(config);
        let mut now = Instant::ZERO;
        for _ in 0..20_000 {
            now += Duration::from_micros(rng.next_u64() % 50_000);
            let _ = drain(&mut sender, now);
            let high = sender.next_new_sequence();
            let pick = |rng: &mut ChaCha8Rng| match rng.next_u64() % 4 {
                0 => rng.next_u64(),
                _ => rng.next_u64() % (high + 3),
            };
            match rng.next_u64() % 5 {
                0 => sender.handle_timeout(now),
                1 => sender.handle_timeout(sender.poll_timeout().unwrap_or(now)),
                _ => {
                    let count = (rng.next_u64() % 5) as usize;
                    let blocks: Vec<SackBlock> = (0..count)
                        .map(|_| SackBlock::new(pick(&mut rng), pick(&mut rng)))
                        .collect();
                    let ack = Ack::with_sack_blocks(pick(&mut rng), &blocks);
                    let _ = sender.handle_ack(now, &ack);
                }
            }
            assert!(sender.congestion_window() >= 1.0);
            assert!(sender.first_unacknowledged() <= sender.next_new_sequence());
            assert!(sender.slow_start_threshold() >= 2);
            assert!(sender.retransmission_timeout() <= Duration::from_secs(60));
            assert!(sender.retransmission_timeout() >= Duration::from_millis(200));
        }
        assert!(sender.stats().segments_sent > 0);
    }
}

#[test]
fn ns2_syn_handshake_opens_the_initial_window_one_round_trip_later() {
    let mut config = SenderConfig::ns2(Variant::Sack);
    config.packet_limit = Some(5);
    let mut sender = sender_with(config);
    // ns-2 `syn_ true`, `delay_growth_ true`: a window of one, and sequence 0 is a bare header.
    let syn = drain(&mut sender, at(0));
    assert_eq!(sequences(&syn), vec![0]);
    assert!(syn[0].syn);
    assert_eq!(syn[0].payload_bytes, 0);
    assert_eq!(syn[0].wire_size(), crate::HEADER_BYTES);
    // The sink acknowledges a SYN at once even with delayed ACKs (ns-2 `SYN_immediate_ack_`).
    let mut sink_config = SinkConfig::for_variant(Variant::Sack);
    sink_config.delayed_ack = true;
    let mut sink = TcpSink::new(sink_config).unwrap();
    let acks = deliver(&mut sink, at(50), &syn, &[]);
    // It echoes the SYN's timestamp (RFC 7323 TSecr), which a SACK sender does not read.
    assert_eq!(acks, vec![Ack::new(1).with_echo(Some(at(0)))]);
    // Its ACK opens the initial window of 2 (not 1 + 1 of slow start on top of it) and gives the
    // first RTT sample.
    sender.handle_ack(at(100), &acks[0]).unwrap();
    assert_eq!(sender.congestion_window(), 2.0);
    assert_eq!(sender.smoothed_rtt(), Some(Duration::from_millis(100)));
    let data = drain(&mut sender, at(100));
    assert_eq!(sequences(&data), vec![1, 2]);
    assert!(data
        .iter()
        .all(|segment| !segment.syn && segment.payload_bytes == 1000));
    // `packet_limit` counts data packets: 5 of them follow the SYN.
    let mut now = at(100);
    let mut sent = data;
    while !sender.is_finished() {
        now += Duration::from_millis(50);
        for ack in deliver(&mut sink, now, &sent, &[]) {
            sender.handle_ack(now, &ack).unwrap();
        }
        sink.handle_timeout(now + Duration::from_millis(100));
        while let Some(ack) = sink.poll_ack() {
            sender.handle_ack(now, &ack).unwrap();
        }
        sent = drain(&mut sender, now);
        assert!(sent
            .iter()
            .all(|segment| (1..=5).contains(&segment.sequence)));
        assert!(now < at(10_000), "transfer stalled");
    }
    assert_eq!(sink.delivered_bytes(), 5000);
}

#[test]
fn a_lost_syn_waits_for_the_initial_rto_and_leaves_a_window_of_one() {
    let mut sender = sender_with(SenderConfig::ns2(Variant::Reno));
    let _ = drain(&mut sender, at(0));
    // ns-2.35 `rtxcur_init_ 3.0`.
    assert_eq!(sender.poll_timeout(), Some(at(3000)));
    sender.handle_timeout(at(3000));
    let again = drain(&mut sender, at(3000));
    assert_eq!(sequences(&again), vec![0]);
    assert!(again[0].syn && again[0].retransmission);
    sender.handle_ack(at(3100), &Ack::new(1)).unwrap();
    // RFC 5681 §3.1 / ns-2 `bugfix_ss_`: after a lost SYN the initial window is one segment.
    assert_eq!(sender.congestion_window(), 1.0);
    assert_eq!(sequences(&drain(&mut sender, at(3100))), vec![1]);
}

#[test]
fn precise_halving_keeps_the_unrounded_half_through_the_recovery() {
    // ns-2's option applies to Reno's window; CUBIC and BBR set their own.
    for variant in Variant::ALL
        .into_iter()
        .filter(|variant| !variant.is_modern())
    {
        let mut config = SenderConfig::new(variant);
        config.initial_window = 11;
        config.initial_slow_start_threshold = Some(11);
        config.precise_halving = true;
        let mut sender = sender_with(config);
        let mut sink = TcpSink::new(SinkConfig::for_variant(variant)).unwrap();
        let sent = drain(&mut sender, at(0));
        assert_eq!(sent.len(), 11);
        let mut acks = deliver(&mut sink, at(50), &sent, &[0]).into_iter();
        // Ten duplicate ACKs; the third triggers the fast retransmit.
        for ack in acks.by_ref().take(3) {
            sender.handle_ack(at(100), &ack).unwrap();
        }
        assert!(sender.in_recovery(), "{variant}");
        // ns-2 `precisionReduce_`: cwnd = windowd() / 2 = 5.5, ssthresh = int(5.5) = 5.
        assert_eq!(sender.congestion_window(), 5.5, "{variant}");
        assert_eq!(sender.slow_start_threshold(), 5, "{variant}");
        for ack in acks {
            sender.handle_ack(at(100), &ack).unwrap();
        }
        let resent = drain(&mut sender, at(100));
        assert_eq!(resent[0].sequence, 0, "{variant}");
        let full = deliver(&mut sink, at(150), &resent[..1], &[]);
        sender.handle_ack(at(200), &full[0]).unwrap();
        assert!(!sender.in_recovery(), "{variant}");
        // The recovery ends without rounding the window down to ssthresh: 5.5 + 1/5.5.
        assert!(
            (sender.congestion_window() - (5.5 + 1.0 / 5.5)).abs() < 1e-12,
            "{variant}: {}",
            sender.congestion_window()
        );
    }
}
