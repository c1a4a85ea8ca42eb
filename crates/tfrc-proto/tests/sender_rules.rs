//! One RFC 5348 §4 rule per test, plus the gTFRC and Veno sender extensions.

mod common;

use core::time::Duration;
use tfrc_proto::wire::{self, DataRepr, Packet};
use tfrc_proto::{equation, Config, FeedbackError, Instant, Sender};

const SESSION: u32 = 77;
const NONCE: u32 = 0xabcd;

fn sender(config: Config) -> Sender {
    Sender::new(config, SESSION, u64::from(NONCE), Instant::ZERO).unwrap()
}

/// Sends one padded packet at `now` and returns its parsed header.
fn send(sender: &mut Sender, now: Instant) -> DataRepr {
    let mut buffer = [0u8; 2000];
    let length = sender.send_padded(now, &mut buffer).unwrap();
    DataRepr::parse(&Packet::new_checked(&buffer[..length]).unwrap()).unwrap()
}

/// What a receiver that got every packet up to `data` reports, with its receipt proof.
fn feedback(data: &DataRepr, x_recv: f64, p: f64) -> Vec<u8> {
    common::honest_feedback(data, u64::from(NONCE), x_recv, p)
}

/// Sends every packet the sender allows from `from` until `until`: the traffic behind a large
/// X_recv (the sender caps X_recv by what it sent, [`Sender::handle_packet`]).
fn keep_sending(sender: &mut Sender, from: Instant, until: Instant) {
    let mut at = from.max(sender.next_send_time());
    while at < until {
        send(sender, at);
        at = sender.next_send_time();
    }
}

/// Sends a packet at `at` and feeds back on it `rtt` later. Returns the feedback time.
fn round_trip(sender: &mut Sender, at: Instant, rtt: Duration, x_recv: f64, p: f64) -> Instant {
    let data = send_forced(sender, at);
    let back = Instant::from_nanos(data.timestamp) + rtt;
    sender
        .handle_packet(back, &feedback(&data, x_recv, p))
        .unwrap();
    back
}

/// Sends a packet at the first allowed time at or after `at`.
fn send_forced(sender: &mut Sender, at: Instant) -> DataRepr {
    let when = at.max(sender.next_send_time());
    send(sender, when)
}

// RFC 5348 §4.2: before feedback the sender sends one packet per second and sets the
// no-feedback timer to two seconds.
#[test]
fn initial_rate_is_one_packet_per_second() {
    let mut sender = sender(Config::default());
    assert_eq!(sender.state().sending_rate, 1000.0);
    assert_eq!(sender.inter_packet_interval(), Duration::from_secs(1));
    assert_eq!(sender.poll_timeout(), Some(Instant::ZERO));
    send(&mut sender, Instant::ZERO);
    assert!(!sender.can_send(Instant::from_millis(998)));
    assert!(sender.can_send(Instant::from_millis(1000)));
    assert_eq!(sender.state().rto, Duration::from_secs(2));
}

// RFC 5348 §4.2: on the first feedback with p = 0 the rate becomes W_init/R,
// W_init = min(4s, max(2s, 4380)) = 4000 bytes for s = 1000.
#[test]
fn first_feedback_sets_initial_window_rate() {
    let mut sender = sender(Config::default());
    round_trip(
        &mut sender,
        Instant::ZERO,
        Duration::from_millis(100),
        0.0,
        0.0,
    );
    let state = sender.state();
    assert_eq!(state.rtt, Some(Duration::from_millis(100)));
    assert!((state.x - 40_000.0).abs() < 1e-6, "X = {}", state.x);
}

// RFC 5348 §4.3 step 1: R_sample = (t_now - t_recvdata) - t_delay.
#[test]
fn rtt_sample_subtracts_receiver_delay() {
    let mut sender = sender(Config::default());
    let data = send(&mut sender, Instant::ZERO);
    let mut bytes = feedback(&data, 0.0, 0.0);
    // elapsed = 30 ms held at the receiver
    bytes[20..24].copy_from_slice(&30_000u32.to_be_bytes());
    sender
        .handle_packet(Instant::from_millis(130), &bytes)
        .unwrap();
    assert_eq!(sender.state().rtt, Some(Duration::from_millis(100)));
}

// RFC 5348 §4.3 step 2: R = q*R + (1-q)*R_sample with q = 0.9.
#[test]
fn rtt_is_filtered_with_q_point_nine() {
    let mut sender = sender(Config::default());
    let t = round_trip(
        &mut sender,
        Instant::ZERO,
        Duration::from_millis(100),
        0.0,
        0.0,
    );
    round_trip(&mut sender, t, Duration::from_millis(200), 0.0, 0.0);
    let rtt = sender.state().rtt.unwrap().as_secs_f64();
    assert!((rtt - 0.110).abs() < 1e-6, "R = {rtt}");
    assert_eq!(sender.state().base_rtt, Some(Duration::from_millis(100)));
}

// RFC 5348 §4.3, in this order: "3) Update the timeout interval: RTO = max(4*R, 2*s/X)",
// "4) Update the allowed sending rate", "5) Reset the nofeedback timer to expire after RTO
// seconds": t_RTO takes the new R and the X of before the update.
#[test]
fn no_feedback_timeout_is_max_of_four_rtt_and_two_packets_before_the_rate_update() {
    let mut sender = sender(Config::default());
    let rtt = Duration::from_millis(100);
    // First feedback: X was 1 packet/s (1000 B/s): 2s/X = 2 s > 4R = 400 ms, though X becomes
    // W_init/R = 40 000 B/s in step 4.
    let t = round_trip(&mut sender, Instant::ZERO, rtt, 0.0, 0.0);
    assert_eq!(sender.state().x, 40_000.0);
    assert_eq!(sender.state().rto, Duration::from_secs(2));
    assert_eq!(sender.no_feedback_deadline(), t + Duration::from_secs(2));
    // Second feedback: X was 40 000 B/s: 2s/X = 50 ms < 4R = 400 ms.
    let t = round_trip(&mut sender, t, rtt, 40_000.0, 0.0);
    assert_eq!(sender.state().rto, Duration::from_millis(400));
    assert_eq!(
        sender.no_feedback_deadline(),
        t + Duration::from_millis(400)
    );
    // A short path at a tiny rate: R = 1 ms, p = 1 keeps X near s/t_mbi, so 2s/X (of the X
    // before each feedback) is far above 4R.
    let mut slow =
        Sender::new(Config::default(), SESSION, u64::from(NONCE), Instant::ZERO).unwrap();
    let fast = Duration::from_millis(1);
    let t = round_trip(&mut slow, Instant::ZERO, fast, 0.0, 1.0);
    let before = slow.state().sending_rate;
    round_trip(&mut slow, t, fast, 0.0, 1.0);
    let two_packets = 2.0 * 1000.0 / before;
    assert!((slow.state().rto.as_secs_f64() - two_packets.max(0.004)).abs() < 1e-6);
}

// RFC 5348 §4.3 step 4: in slow start the rate doubles at most once per RTT and is bounded by
// recv_limit = 2 * max(X_recv_set).
#[test]
fn slow_start_doubles_per_rtt_bounded_by_twice_x_recv() {
    let mut sender = sender(Config::default());
    let rtt = Duration::from_millis(100);
    let mut t = round_trip(&mut sender, Instant::ZERO, rtt, 0.0, 0.0);
    assert!((sender.state().x - 40_000.0).abs() < 1e-6);
    // A feedback less than one RTT later does not double.
    t = round_trip(&mut sender, t, Duration::from_millis(100), 40_000.0, 0.0);
    let x1 = sender.state().x;
    let t2 = round_trip(&mut sender, t, Duration::from_millis(10), 40_000.0, 0.0);
    assert_eq!(sender.state().x, x1, "no second doubling within one RTT");
    // After the initial Infinity has aged out (2 RTTs), X_recv bounds the doubling.
    let t3 = round_trip(
        &mut sender,
        t2 + Duration::from_millis(300),
        rtt,
        30_000.0,
        0.0,
    );
    let x = sender.state().x;
    assert!(x <= 2.0 * 40_000.0 + 1e-6, "X = {x}");
    let _ = t3;
}

// RFC 5348 §4.3 step 4: with p > 0, X = max(min(X_calc, recv_limit), s/t_mbi).
#[test]
fn with_loss_rate_follows_equation_bounded_by_receive_limit() {
    let mut sender = sender(Config::default());
    let rtt = Duration::from_millis(100);
    let mut t = round_trip(&mut sender, Instant::ZERO, rtt, 0.0, 0.0);
    for _ in 0..5 {
        keep_sending(&mut sender, t, t + rtt);
        t = round_trip(&mut sender, t + rtt, rtt, 1e6, 0.0);
    }
    keep_sending(&mut sender, t, t + rtt);
    t = round_trip(&mut sender, t + rtt, rtt, 1e6, 0.01);
    let state = sender.state();
    let r = state.rtt.unwrap().as_secs_f64();
    let x_calc = equation::throughput(1000.0, r, 0.01);
    assert!((state.x_calc / x_calc - 1.0).abs() < 1e-6);
    // X_recv = 10^6 is more than this receiver's reports delivered (about one RTT of sending
    // per RTT), so it is capped at twice that; recv_limit is twice the cap.
    assert!(sender.stats().x_recv_capped > 0);
    let expected = x_calc.min(state.recv_limit);
    assert!(
        (state.x / expected - 1.0).abs() < 1e-6,
        "X {} vs min(X_calc {x_calc}, recv_limit {})",
        state.x,
        state.recv_limit
    );
    // A low X_recv caps X at 2 * max(X_recv_set) once older entries age out (the sender
    // keeps sending, so that the receiver's reports deliver more than 10 kB/s).
    keep_sending(&mut sender, t, t + Duration::from_millis(500));
    t = round_trip(
        &mut sender,
        t + Duration::from_millis(500),
        rtt,
        10_000.0,
        0.01,
    );
    assert!(
        (sender.state().x - 20_000.0).abs() < 1e-6,
        "X = {}",
        sender.state().x
    );
    // p = 1: the floor s/t_mbi = 1000/64 B/s holds.
    for _ in 0..3 {
        t = round_trip(&mut sender, t + Duration::from_millis(500), rtt, 1.0, 1.0);
    }
    assert!(sender.state().x >= 1000.0 / 64.0 - 1e-9);
}

// RFC 5348 §4.4: without any feedback, the no-feedback timer halves the rate.
#[test]
fn no_feedback_before_any_feedback_halves() {
    let mut sender = sender(Config::default());
    send(&mut sender, Instant::ZERO);
    sender.handle_timeout(Instant::from_millis(1999));
    assert_eq!(sender.state().x, 1000.0, "an early timeout call is a no-op");
    sender.handle_timeout(Instant::from_secs(2));
    assert_eq!(sender.state().x, 500.0);
    assert_eq!(sender.stats().no_feedback_expiries, 1);
}

// RFC 5348 §4.4: with p > 0 and the rate limited by X_calc, the timer sets the limit to X_calc/2.
#[test]
fn no_feedback_with_loss_halves_via_update_limits() {
    let mut sender = sender(Config::default());
    let rtt = Duration::from_millis(100);
    let mut t = round_trip(&mut sender, Instant::ZERO, rtt, 0.0, 0.0);
    t = round_trip(&mut sender, t, rtt, 1e6, 0.0);
    // p = 20 %: X_calc (about 5 kB/s) is below 2·X_recv even with X_recv capped by what the
    // receiver's reports delivered.
    t = round_trip(&mut sender, t, rtt, 1e6, 0.2);
    let before = sender.state();
    assert!(before.x_calc < 2.0 * before.x_recv, "{before:?}");
    // Keep sending so the sender is not idle, then let the timer expire.
    let deadline = t + before.rto;
    send_forced(&mut sender, t);
    sender.handle_timeout(deadline);
    let after = sender.state();
    assert!(
        (after.x - before.x_calc / 2.0).abs() < 1e-6,
        "{} vs {}",
        after.x,
        before.x_calc / 2.0
    );
    assert!(after.recv_limit <= before.x_calc / 2.0 + 1e-6);
}

/// Lets the no-feedback timer expire `expiries` times, sending one packet after each expiry so
/// the sender is never idle; returns X after each expiry.
fn expire_busy(sender: &mut Sender, from: Instant, expiries: usize) -> Vec<f64> {
    let mut t = from;
    let mut rates = Vec::new();
    for _ in 0..expiries {
        send_forced(sender, t);
        let deadline = sender.no_feedback_deadline();
        sender.handle_timeout(deadline);
        rates.push(sender.state().x);
        t = deadline;
    }
    rates
}

// RFC 5348 §4.4: every expiry halves the allowed rate, "by modifying the sender's cached copy of
// X_recv", down to s/t_mbi; both the X_calc-limited and the X_recv-limited branch.
#[test]
fn no_feedback_halves_at_every_expiry_down_to_the_floor() {
    let floor = 1000.0 / 64.0;
    for (x_recv, p) in [(1e6, 0.02), (20_000.0, 0.0001)] {
        let mut sender = sender(Config::default());
        let rtt = Duration::from_millis(100);
        let mut t = round_trip(&mut sender, Instant::ZERO, rtt, 0.0, 0.0);
        t = round_trip(&mut sender, t, rtt, x_recv, 0.0);
        t = round_trip(&mut sender, t, rtt, x_recv, p);
        let start = sender.state().x;
        let rates = expire_busy(&mut sender, t, 24);
        let mut expected = start;
        for (expiry, &rate) in rates.iter().enumerate() {
            expected = (expected / 2.0).max(floor);
            assert!(
                (rate - expected).abs() <= 1e-6 * expected,
                "x_recv {x_recv}, p {p}: expiry {}: X {rate}, expected {expected} (rates {rates:?})",
                expiry + 1
            );
        }
        assert_eq!(*rates.last().unwrap(), floor);
        // The cached X_recv was halved with X.
        assert!(sender.state().x_recv <= floor);
    }
}

// RFC 5348 §4.4: "(p == 0 && X < 2 * recover_rate)": an idle sender with p = 0 keeps X only when
// X itself is below twice recover_rate (recover_rate = W_init/R = 40 000 B/s at R = 100 ms); the
// X_recv it last heard does not matter.
#[test]
fn idle_sender_without_loss_tests_x_against_recover_rate() {
    let rtt = Duration::from_millis(100);
    let idle_expiries = |sender: &mut Sender, t: Instant, count: usize| -> Vec<f64> {
        sender.note_data_limited(t);
        (0..count)
            .map(|_| {
                let deadline = sender.no_feedback_deadline();
                sender.handle_timeout(deadline);
                sender.state().x
            })
            .collect()
    };

    // X = 320 000 B/s after three doublings, then a feedback (before the next doubling is due)
    // reports X_recv = 30 000: X is halved while X ≥ 2·recover_rate, then held.
    let mut sender = sender(Config::default());
    let mut t = round_trip(&mut sender, Instant::ZERO, rtt, 1e6, 0.0);
    for _ in 0..3 {
        keep_sending(&mut sender, t, t + rtt);
        t = round_trip(&mut sender, t + rtt, rtt, 1e6, 0.0);
    }
    assert_eq!(sender.state().x, 320_000.0);
    t = round_trip(&mut sender, t, Duration::from_millis(50), 30_000.0, 0.0);
    assert_eq!(sender.state().x, 320_000.0);
    assert_eq!(sender.state().x_recv, 30_000.0);
    // The 50 ms sample made R = 95 ms: recover_rate = 4000/0.095 = 42 105 B/s, so 80 000 is
    // already below 2·recover_rate.
    let r = sender.state().rtt.unwrap().as_secs_f64();
    assert!((r - 0.095).abs() < 1e-9, "R {r}");
    assert!(80_000.0 < 2.0 * 4000.0 / r && 160_000.0 >= 2.0 * 4000.0 / r);
    assert_eq!(
        idle_expiries(&mut sender, t, 4),
        [160_000.0, 80_000.0, 80_000.0, 80_000.0]
    );

    // X = W_init/R = 40 000 B/s with a reported X_recv of 120 000: X < 2·recover_rate, so the
    // idle sender keeps X at every expiry.
    let mut other = self::sender(Config::default());
    let t = round_trip(&mut other, Instant::ZERO, rtt, 120_000.0, 0.0);
    assert_eq!(other.state().x, 40_000.0);
    assert_eq!(idle_expiries(&mut other, t, 4), [40_000.0; 4]);
}

// RFC 5348 §4.4: a sender idle since the timer was set, with X_recv below recover_rate, keeps its
// rate.
#[test]
fn idle_sender_below_recover_rate_keeps_rate() {
    let mut sender = sender(Config::default());
    let rtt = Duration::from_millis(100);
    let t = round_trip(&mut sender, Instant::ZERO, rtt, 0.0, 0.0);
    let t = round_trip(&mut sender, t, rtt, 5_000.0, 0.01);
    let x = sender.state().x;
    sender.note_data_limited(t);
    sender.handle_timeout(t + Duration::from_secs(10));
    assert_eq!(sender.state().x, x);
}

/// Sends every packet the schedule allows at `now`, as a driver woken at `now` does; returns how
/// many.
fn send_due(sender: &mut Sender, now: Instant) -> usize {
    let mut sent = 0;
    while sender.can_send(now) && sent < 10_000 {
        send(sender, now);
        sent += 1;
    }
    sent
}

/// A sender with a 40 000 B/s rate (t_ipi = 25 ms) and the given t_gran, its schedule started at
/// 5 s.
fn sender_at_25ms_interval(timer_granularity: Duration) -> (Sender, Instant) {
    let mut sender = sender(Config {
        timer_granularity,
        ..Config::default()
    });
    round_trip(
        &mut sender,
        Instant::ZERO,
        Duration::from_millis(100),
        0.0,
        0.0,
    );
    assert_eq!(sender.inter_packet_interval(), Duration::from_millis(25));
    let t0 = Instant::from_secs(5);
    send_forced(&mut sender, t0);
    (sender, t0)
}

// RFC 5348 §4.6: packets leave every t_ipi = s/X, up to t_delta = min(t_ipi/2, t_gran/2) early.
#[test]
fn pacing_uses_inter_packet_interval_with_allowance() {
    // X = 40000 B/s → t_ipi = 25 ms, t_delta = min(12.5, 2) = 2 ms.
    let (sender, t0) = sender_at_25ms_interval(Duration::from_millis(4));
    assert!(!sender.can_send(t0 + Duration::from_millis(22)));
    assert!(sender.can_send(t0 + Duration::from_millis(23)));
    assert_eq!(sender.next_send_time(), t0 + Duration::from_millis(23));
}

// RFC 5348 §4.6 with the credit bound of its authors' text: "the TFRC sender is not allowed to
// accumulate `credits' of more than max(t_ipi, t_gran) time units". A sender woken 80 ms late
// with t_gran = 100 ms sends the 3 packets it owes (t_nom = 25, 50, 75 ms) at once and keeps its
// schedule; with t_gran = 0 (an exact timer) it sends one and restarts its schedule from now.
#[test]
fn a_late_sender_catches_up_at_most_max_t_ipi_t_gran() {
    let late = Duration::from_millis(80);
    let (mut sender, t0) = sender_at_25ms_interval(Duration::from_millis(100));
    assert_eq!(send_due(&mut sender, t0 + late), 3);
    assert_eq!(
        sender.next_send_time(),
        t0 + Duration::from_millis(100) - Duration::from_micros(12_500)
    );

    let (mut sender, t0) = sender_at_25ms_interval(Duration::ZERO);
    assert_eq!(send_due(&mut sender, t0 + late), 1);
    assert_eq!(
        sender.next_send_time(),
        t0 + late + Duration::from_millis(25)
    );

    // Further behind than the credit (300 ms > max(25, 100) ms): one packet, then the schedule
    // restarts from now: no burst of the 12 packets missed.
    let (mut sender, t0) = sender_at_25ms_interval(Duration::from_millis(100));
    let woken = t0 + Duration::from_millis(300);
    assert_eq!(send_due(&mut sender, woken), 1);
    assert_eq!(
        sender.next_send_time(),
        woken + Duration::from_millis(25) - Duration::from_micros(12_500)
    );
}

// A driver that measures a coarser scheduling than at start raises t_gran during the session
// (`Sender::set_timer_granularity`): the same 80 ms late wake-up that a 1 ms t_gran turns into
// one packet and a restarted schedule gives the 3 packets owed once t_gran is 100 ms.
#[test]
fn a_raised_timer_granularity_lets_a_late_sender_keep_its_schedule() {
    let late = Duration::from_millis(80);
    let (mut sender, t0) = sender_at_25ms_interval(Duration::from_millis(1));
    assert_eq!(send_due(&mut sender, t0 + late), 1);

    let (mut sender, t0) = sender_at_25ms_interval(Duration::from_millis(1));
    sender.set_timer_granularity(Duration::from_millis(100));
    assert_eq!(
        sender.config().timer_granularity,
        Duration::from_millis(100)
    );
    assert_eq!(send_due(&mut sender, t0 + late), 3);
}

// RFC 5348 §4.5: with oscillation prevention, an RTT sample above the √RTT average slows the
// instantaneous rate.
#[test]
fn oscillation_damping_scales_by_sqrt_rtt() {
    let config = Config {
        oscillation_damping: true,
        ..Config::default()
    };
    let mut sender = sender(config);
    let t = round_trip(
        &mut sender,
        Instant::ZERO,
        Duration::from_millis(100),
        0.0,
        0.0,
    );
    let base = sender.inter_packet_interval();
    round_trip(&mut sender, t, Duration::from_millis(400), 0.0, 0.0);
    let x = sender.state().sending_rate;
    let mean = 0.9 * 0.1f64.sqrt() + 0.1 * 0.4f64.sqrt();
    let expected = 1000.0 / (x * mean / 0.4f64.sqrt());
    assert!((sender.inter_packet_interval().as_secs_f64() - expected).abs() < 1e-6);
    assert!(sender.inter_packet_interval() > base / 4);
}

// RFC 5348 §4.3 step 4, data-limited branch: a loss during a data-limited interval halves the
// X_recv_set and sets recv_limit = max(X_recv_set) with X_recv scaled by 0.85.
#[test]
fn data_limited_interval_with_loss_uses_085_x_recv() {
    let mut sender = sender(Config::default());
    let rtt = Duration::from_millis(100);
    let mut t = round_trip(&mut sender, Instant::ZERO, rtt, 0.0, 0.0);
    t = round_trip(&mut sender, t, rtt, 1e6, 0.0);
    // The application runs dry before every packet from now on.
    let mut last = None;
    for i in 0..3 {
        sender.note_data_limited(t);
        let data = send_forced(&mut sender, t + Duration::from_millis(10 * i));
        last = Some(data);
    }
    let data = last.unwrap();
    let at = t + rtt;
    sender
        .handle_packet(at, &feedback(&data, 50_000.0, 0.001))
        .unwrap();
    let state = sender.state();
    // Maximize(0.85 * 50000) after halving the set: the set held at most 1e6 / 2.
    assert!(
        state.recv_limit <= 500_000.0 + 1e-6,
        "recv_limit {}",
        state.recv_limit
    );
    assert!(state.recv_limit >= 0.85 * 50_000.0 - 1e-6);
}

// RFC 5348 §4.5: X_inst = X·R_sqmean/sqrt(R_sample) paces the packets; like X (§4.3: never
// below s/t_mbi), it is floored, so packets are never more than t_mbi = 64 s apart.
#[test]
fn damped_pacing_never_spaces_packets_beyond_t_mbi() {
    let mut sender = sender(Config {
        oscillation_damping: true,
        ..Config::default()
    });
    // R_sqmean from a 10 ms sample, then a 4 s sample: X_inst = 0.145·X.
    let t = round_trip(
        &mut sender,
        Instant::ZERO,
        Duration::from_millis(10),
        0.0,
        0.0,
    );
    let t = round_trip(&mut sender, t, Duration::from_secs(4), 1000.0, 0.5);
    expire_busy(&mut sender, t, 30);
    assert_eq!(sender.state().x, 1000.0 / 64.0);
    assert_eq!(sender.inter_packet_interval(), Duration::from_secs(64));
}

// gTFRC (paper 000, §II): the rate used is G = max(g, X) at every update while feedback arrives.
#[test]
fn gtfrc_never_sends_below_target_while_feedback_arrives() {
    let g = 100_000.0;
    let config = Config {
        target_rate: Some(g),
        ..Config::default()
    };
    let mut sender = sender(config);
    assert_eq!(sender.state().sending_rate, g, "g applies from the start");
    let rtt = Duration::from_millis(100);
    let mut t = round_trip(&mut sender, Instant::ZERO, rtt, 0.0, 0.0);
    t = round_trip(&mut sender, t, rtt, 1e6, 0.0);
    t = round_trip(&mut sender, t, rtt, 1e6, 0.05);
    let state = sender.state();
    assert!(state.x < g, "TFRC alone would send {}", state.x);
    assert_eq!(state.sending_rate, g);
    assert_eq!(sender.inter_packet_interval(), Duration::from_millis(10));
    for _ in 0..4 {
        t = round_trip(&mut sender, t, rtt, 1e6, 0.05);
        assert_eq!(sender.state().sending_rate, g);
    }
    // g may change during the session.
    sender.set_target_rate(Some(2.0 * g)).unwrap();
    assert_eq!(sender.state().sending_rate, 2.0 * g);
    sender.set_target_rate(None).unwrap();
    assert!(sender.state().sending_rate < g);
    assert!(sender.set_target_rate(Some(-1.0)).is_err());
}

// gTFRC without feedback. Paper 000, §II: besides G = max(g, X), "the rest of the TFRC
// protocol ... follow entirely the TFRC specification"; RFC 5348 §4.4: at each expiry of the
// no-feedback timer the sender cuts its sending rate in half. So G halves at every expiry down
// to s/t_mbi, and the first feedback brings back G = max(g, X).
#[test]
fn gtfrc_without_feedback_backs_off_like_tfrc_and_recovers_with_feedback() {
    let g = 100_000.0;
    let floor = 1000.0 / 64.0;
    let mut sender = sender(Config {
        target_rate: Some(g),
        ..Config::default()
    });
    let rtt = Duration::from_millis(100);
    let mut t = round_trip(&mut sender, Instant::ZERO, rtt, 0.0, 0.0);
    t = round_trip(&mut sender, t, rtt, 1e6, 0.0);
    t = round_trip(&mut sender, t, rtt, 1e6, 0.05);
    assert_eq!(sender.state().sending_rate, g);
    // Feedback cut: every expiry halves G, down to the floor. The timer, max(4R, 2s/G), grows as
    // G falls: 11 expiries in the first 30 s (G = g/2^11), the floor after 13.
    let cut = t;
    let mut expected = g;
    let mut expiries = 0;
    let mut at_30_s = g;
    while expiries < 24 {
        send_forced(&mut sender, t);
        let deadline = sender.no_feedback_deadline();
        sender.handle_timeout(deadline);
        expiries += 1;
        expected = (expected / 2.0).max(floor);
        let rate = sender.state().sending_rate;
        assert!(
            (rate - expected).abs() <= 1e-6 * expected,
            "expiry {expiries}: G {rate}, expected {expected}"
        );
        t = deadline;
        if t <= cut + Duration::from_secs(30) {
            at_30_s = rate;
        }
    }
    assert!(at_30_s <= g / 1000.0, "G {at_30_s} 30 s into the cut");
    assert_eq!(
        sender.state().sending_rate,
        floor,
        "after {expiries} expiries"
    );
    assert_eq!(sender.state().target_rate, Some(floor));
    // Feedback back: the floor g holds again.
    round_trip(&mut sender, t, rtt, 1e6, 0.05);
    assert_eq!(sender.state().sending_rate, g.max(sender.state().x));
    assert_eq!(sender.state().target_rate, Some(g));
}

// gTFRC with no feedback at all: the first no-feedback timer (2 s, RFC 5348 §4.2) already cuts G.
#[test]
fn gtfrc_without_any_feedback_does_not_keep_g() {
    let g = 100_000.0;
    let mut sender = sender(Config {
        target_rate: Some(g),
        ..Config::default()
    });
    let mut t = Instant::ZERO;
    for _ in 0..10 {
        send_forced(&mut sender, t);
        let deadline = sender.no_feedback_deadline();
        sender.handle_timeout(deadline);
        t = deadline;
    }
    assert!(
        sender.state().sending_rate < g / 500.0,
        "G {} after 10 expiries",
        sender.state().sending_rate
    );
}

// Veno: N = X·(RTT − BaseRTT)/s is carried in every data packet.
#[test]
fn veno_backlog_is_reported_in_data_packets() {
    let mut sender = sender(Config::default());
    let t = round_trip(
        &mut sender,
        Instant::ZERO,
        Duration::from_millis(100),
        0.0,
        0.0,
    );
    let t = round_trip(&mut sender, t, Duration::from_millis(300), 0.0, 0.0);
    let state = sender.state();
    let rtt = state.rtt.unwrap().as_secs_f64(); // 0.9*0.1 + 0.1*0.3 = 0.12
    let expected = state.sending_rate * (rtt - 0.1) / 1000.0;
    assert!((state.veno_backlog - expected).abs() < 1e-9);
    let data = send_forced(&mut sender, t);
    assert_eq!(
        data.veno_backlog_millipackets,
        (expected * 1000.0).round() as u32
    );
    assert_eq!(data.rtt_micros, 120_000);
}

// Spoofed, stray, replayed or garbage feedback is counted and does not change the rate.
#[test]
fn bad_feedback_is_ignored_and_counted() {
    let mut sender = sender(Config::default());
    let rtt = Duration::from_millis(100);
    let t = round_trip(&mut sender, Instant::ZERO, rtt, 0.0, 0.0);
    let data = send_forced(&mut sender, t);
    let before = sender.state();
    let good = feedback(&data, 1.0, 0.5);

    let mut wrong_nonce = good.clone();
    wrong_nonce[36] ^= 1;
    assert_eq!(
        sender.handle_packet(t, &wrong_nonce),
        Err(FeedbackError::ForeignSession)
    );
    let mut wrong_session = good.clone();
    wrong_session[7] ^= 1;
    assert_eq!(
        sender.handle_packet(t, &wrong_session),
        Err(FeedbackError::ForeignSession)
    );
    let mut future_echo = good.clone();
    future_echo[8..12].copy_from_slice(&1_000_000u32.to_be_bytes());
    assert_eq!(
        sender.handle_packet(t, &future_echo),
        Err(FeedbackError::InvalidEcho)
    );
    assert_eq!(
        sender.handle_packet(t, &good[..20]),
        Err(FeedbackError::Malformed)
    );
    assert_eq!(
        sender.handle_packet(t, b"garbage garbage garbage garbage garbage!"),
        Err(FeedbackError::Malformed)
    );

    assert_eq!(sender.state(), before);
    let stats = sender.stats();
    assert_eq!(
        (stats.foreign, stats.invalid_echo, stats.malformed),
        (2, 1, 2)
    );
    // A replay of an older feedback is ignored too.
    sender.handle_packet(t + rtt, &good).unwrap();
    let old = feedback(
        &DataRepr {
            sequence: 0,
            ..data
        },
        1.0,
        0.9,
    );
    assert_eq!(
        sender.handle_packet(t + rtt, &old),
        Err(FeedbackError::InvalidEcho)
    );
}

#[test]
fn send_errors_are_reported() {
    let mut sender = sender(Config::default());
    let mut small = [0u8; 10];
    assert!(matches!(
        sender.send_padded(Instant::ZERO, &mut small),
        Err(tfrc_proto::SendError::BufferTooSmall { .. })
    ));
    let mut buffer = [0u8; 4000];
    assert!(matches!(
        sender.send_packet(Instant::ZERO, &[0u8; 2000], &mut buffer),
        Err(tfrc_proto::SendError::PayloadTooLarge { .. })
    ));
    sender
        .send_packet(Instant::ZERO, b"hello", &mut buffer)
        .unwrap();
    assert!(matches!(
        sender.send_packet(Instant::from_millis(10), b"x", &mut buffer),
        Err(tfrc_proto::SendError::TooEarly(_))
    ));
}

// RFC 5348 §3.1: "s is the segment size in bytes (excluding IP and transport protocol
// headers)". A full packet carries s bytes of payload with the 32-byte TFRC header on top, and
// the sender paces s payload bytes per t_ipi = s/X (§4.6). ns-2's `useHeaders_ false` (ns-2
// profile with `ns2_use_headers` off) is the one reading that counts the header inside s.
#[test]
fn segment_size_excludes_the_tfrc_header() {
    let mut rfc = sender(Config::default());
    assert_eq!(rfc.max_payload(), 1000);
    let mut buffer = [0u8; 2000];
    assert_eq!(
        rfc.send_padded(Instant::ZERO, &mut buffer),
        Ok(1000 + wire::DATA_HEADER_LEN)
    );
    round_trip(
        &mut rfc,
        Instant::ZERO,
        Duration::from_millis(100),
        0.0,
        0.0,
    );
    // X = W_init/R = 4s/R = 40 000 bytes/s of payload: one s every 25 ms.
    assert_eq!(rfc.inter_packet_interval(), Duration::from_millis(25));
    let too_big = [0u8; 1001];
    assert!(rfc
        .send_packet(Instant::from_secs(5), &too_big, &mut buffer)
        .is_err());

    let mut inside = sender(Config {
        ns2_use_headers: false,
        ..Config::ns2()
    });
    assert_eq!(inside.max_payload(), 1000 - wire::DATA_HEADER_LEN);
    assert_eq!(inside.send_padded(Instant::ZERO, &mut buffer), Ok(1000));
}

// `send_padded_header` is `send_padded` without the padding: the same header, length,
// schedule and counters, packet for packet (RFC profile and ns-2's, whose flags the header
// carries), through feedback that changes the rate.
#[test]
fn a_header_only_send_is_a_padded_send_without_the_padding() {
    for config in [Config::default(), Config::ns2()] {
        let mut padded = sender(config.clone());
        let mut header_only = sender(config);
        let mut at = Instant::ZERO;
        for round in 0..40u32 {
            let mut buffer = [0u8; 2100];
            let length = padded.send_padded(at, &mut buffer).unwrap();
            let mut header = [0xffu8; wire::DATA_HEADER_LEN];
            assert_eq!(header_only.send_padded_header(at, &mut header), Ok(length));
            assert_eq!(header, buffer[..wire::DATA_HEADER_LEN], "round {round}");
            assert_eq!(padded.stats(), header_only.stats());
            assert_eq!(padded.next_send_time(), header_only.next_send_time());
            if round % 4 == 3 {
                let data =
                    DataRepr::parse(&Packet::new_checked(&buffer[..length]).unwrap()).unwrap();
                let reply = feedback(&data, 200_000.0 * f64::from(round), 0.001);
                let when = at + Duration::from_millis(50);
                assert_eq!(
                    padded.handle_packet(when, &reply),
                    header_only.handle_packet(when, &reply)
                );
                at = when;
            }
            at = at.max(padded.next_send_time());
        }
        // Too early is refused the same way.
        let mut header = [0u8; wire::DATA_HEADER_LEN];
        let early = Instant::from_nanos(padded.next_send_time().as_nanos().saturating_sub(1));
        if early < padded.next_send_time() {
            let mut buffer = [0u8; 2100];
            assert_eq!(
                header_only.send_padded_header(early, &mut header),
                padded.send_padded(early, &mut buffer)
            );
        }
    }
}
