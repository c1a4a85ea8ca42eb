//! One ns-2.35 behaviour per test for `Profile::Ns2`, each citing the ns-2 source it follows
//! (`tcp/tfrc.cc`, `tcp/tfrc-sink.cc`, `tcp/formula.h`), side by side with the RFC 5348 profile
//! where the two differ.

mod common;

use common::{LinkSpec, Pair};
use core::time::Duration;
use tfrc_proto::wire::{self, DataRepr, FeedbackRepr, Packet};
use tfrc_proto::{equation, Config, Instant, Receiver, Sender};

const SESSION: u32 = 31;
const NONCE: u32 = 0x5eed;
const S: f64 = 1000.0;

fn sender(config: Config) -> Sender {
    Sender::new(config, SESSION, u64::from(NONCE), Instant::ZERO).unwrap()
}

/// Sends one padded packet at the first allowed time at or after `at`; returns its header and
/// flags.
fn send(sender: &mut Sender, at: Instant) -> (DataRepr, u16) {
    let when = at.max(sender.next_send_time());
    let mut buffer = [0u8; 2100];
    let length = sender.send_padded(when, &mut buffer).unwrap();
    let packet = Packet::new_checked(&buffer[..length]).unwrap();
    (DataRepr::parse(&packet).unwrap(), packet.flags())
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

/// Sends a packet at (or after) `at` and delivers feedback on it `rtt` later; returns the
/// feedback time.
fn round_trip(sender: &mut Sender, at: Instant, rtt: Duration, x_recv: f64, p: f64) -> Instant {
    let (data, _) = send(sender, at);
    let back = Instant::from_nanos(data.timestamp) + rtt;
    sender
        .handle_packet(back, &feedback(&data, x_recv, p))
        .unwrap();
    back
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

// tcp/tfrc.cc TfrcAgent::start(): InitRate_ = 300 bytes/s before any feedback and a
// no-feedback timer of 2·size_/rate_; the RFC starts at one packet per second with 2 s.
#[test]
fn starts_at_init_rate_with_a_two_packet_timer() {
    let ns2 = sender(Config::ns2());
    assert_eq!(ns2.state().x, 300.0);
    assert_eq!(
        ns2.no_feedback_deadline(),
        Instant::ZERO + Duration::from_secs_f64(2.0 * S / 300.0)
    );
    let rfc = sender(Config::default());
    assert_eq!(rfc.state().x, S);
    assert_eq!(rfc.no_feedback_deadline(), Instant::from_secs(2));
}

// tcp/tfrc.cc TfrcAgent::recv(): the first feedback with p > 0 sets rate_ = rcvrate;
// TfrcAgent::increase_rate(): afterwards, when rcvrate > rate_, the rate grows by
// size_/rtt_·min((now − last_change_)/rtt_, 2), capped at min(rcvrate, max(maxrate_, size_/rtt_))
// with maxrate_ = 2·X_recv. RFC 5348 §4.3 step 4 jumps to min(X_calc, recv_limit) instead.
#[test]
fn additive_increase_after_slow_start_versus_rfc_jump() {
    let rtt = Duration::from_millis(100);
    let r = 0.1;
    let mut ns2 = sender(Config::ns2());
    let mut rfc = sender(Config::default());
    for sender in [&mut ns2, &mut rfc] {
        let t1 = round_trip(sender, Instant::ZERO, rtt, 0.0, 0.0);
        round_trip(sender, t1, rtt, 40_000.0, 0.0);
    }
    // ns-2 slow start: the first two feedbacks give the RFC 3390 rate 4·s/R (s ≤ 1095).
    assert!(close(ns2.state().x, 4.0 * S / r), "X = {}", ns2.state().x);

    // Leaving slow start with p = 1 %: X = X_calc (ns-2 with its t_RTO).
    let t3 = round_trip(&mut ns2, Instant::from_millis(300), rtt, 40_000.0, 0.01);
    let x3 = ns2.state().x;
    let expected = equation::throughput_ns2(S, r, 0.01, ns2.equation_rto().as_secs_f64());
    assert!(close(x3, expected), "X {x3} vs X_calc {expected}");
    assert!(!ns2.state().slow_start);

    // p falls to 0.1 %: X_calc is far above X, X_recv is large. ns-2 adds packets per RTT.
    keep_sending(&mut ns2, t3, t3 + rtt);
    let t4 = round_trip(&mut ns2, t3 + rtt, rtt, 1e6, 0.001);
    let x4 = ns2.state().x;
    let x_calc = ns2.state().x_calc;
    assert!(x_calc > 3.0 * x3);
    // last_change_ was last set by slowstart() at the second feedback (t ≈ 0.2 s), so more
    // than 2 RTTs have passed: the multiplier is capped at 2.
    assert!(
        close(x4, x3 + 2.0 * S / r),
        "X {x4}, expected {}",
        x3 + 2.0 * S / r
    );
    // One RTT later: one more packet per RTT.
    keep_sending(&mut ns2, t4, t4 + rtt);
    let t5 = round_trip(&mut ns2, t4 + rtt, rtt, 1e6, 0.001);
    let rounds = ((t5 - t4).as_secs_f64() / r).min(2.0);
    assert!(close(ns2.state().x, x4 + S / r * rounds));
    // A small X_recv caps the increase at max(2·X_recv, s/R) = s/R here.
    round_trip(&mut ns2, t5 + rtt, rtt, 3_000.0, 0.001);
    assert!(close(ns2.state().x, S / r), "X {}", ns2.state().x);

    // The RFC profile, same feedback: X jumps to min(X_calc, recv_limit).
    let t3 = round_trip(&mut rfc, Instant::from_millis(300), rtt, 40_000.0, 0.01);
    let x3_rfc = rfc.state().x;
    keep_sending(&mut rfc, t3, t3 + rtt);
    round_trip(&mut rfc, t3 + rtt, rtt, 1e6, 0.001);
    let state = rfc.state();
    assert!(close(state.x, state.x_calc.min(state.recv_limit)));
    // recv_limit is 2·X_recv with X_recv capped by what the receiver's reports delivered (one
    // RTT at X_calc): still far above ns-2's one-step additive increase of 2·s/R.
    assert!(
        state.x > x3_rfc + 4.0 * S / r,
        "RFC X {} from {x3_rfc}",
        state.x
    );
}

// tcp/tfrc.cc TfrcAgent::update_rtt(): t_rtt_ = int(sample/tcp_tick_ + 0.5) ticks of 100 ms,
// Jacobson's srtt (×8) and rttvar (×4) in fixed point, t_rtxcur_ = srtt + 4·rttvar → tzero_,
// which formula.h's p_to_b() uses as t_RTO; the RFC uses t_RTO = 4R (§3.1).
#[test]
fn rto_estimator_uses_tcp_ticks() {
    let mut ns2 = sender(Config::ns2());
    let mut rfc = sender(Config::default());
    let rtt = Duration::from_millis(250);
    let mut at = Instant::ZERO;
    // By hand: 3 ticks → srtt 24/8, rttvar 6/4 → RTO (6·8 + 24) >> 3 = 9 ticks; then rttvar
    // decays by rttvar>>2 per equal sample: 5, 4, 3, 3 → RTO 8, 7, 6, 6 ticks.
    for expected_ms in [900, 800, 700, 600, 600] {
        at = round_trip(&mut ns2, at, rtt, 40_000.0, 0.01);
        assert_eq!(ns2.equation_rto(), Duration::from_millis(expected_ms));
        let state = ns2.state();
        let r = state.rtt.unwrap().as_secs_f64();
        assert!(close(
            state.x_calc,
            equation::throughput_ns2(S, r, 0.01, expected_ms as f64 / 1000.0)
        ));
    }
    // A 1 s sample (10 ticks): srtt 24 + 7 = 31, rttvar 3 + 7 = 10 → RTO (80 + 31) >> 3 = 13.
    round_trip(&mut ns2, at, Duration::from_secs(1), 40_000.0, 0.01);
    assert_eq!(ns2.equation_rto(), Duration::from_millis(1300));

    round_trip(&mut rfc, Instant::ZERO, rtt, 40_000.0, 0.01);
    assert_eq!(rfc.equation_rto(), rtt * 4);
}

// tcp/tfrc.cc TfrcAgent::recv(): the no-feedback timer is max(2·rtt_, 2·size_/rate_);
// TfrcAgent::reduce_rate_on_no_feedback() halves rate_ itself, counts a round, sets
// UrgentFlag and sends a packet at once (nextpkt()). The RFC's timer is max(4R, 2s/X) (§4.3).
#[test]
fn no_feedback_timer_halves_the_rate() {
    let rtt = Duration::from_millis(100);
    let mut ns2 = sender(Config::ns2());
    let t1 = round_trip(&mut ns2, Instant::ZERO, rtt, 0.0, 0.0);
    // The first feedback's timer uses the rate before it (300 B/s): 2·1000/300 s.
    assert_eq!(
        ns2.no_feedback_deadline(),
        t1 + Duration::from_secs_f64(2.0 * S / 300.0)
    );
    let t2 = round_trip(&mut ns2, t1, rtt, 40_000.0, 0.0);
    let x = ns2.state().x;
    assert!(close(x, 40_000.0));
    // max(2R, 2s/X) = max(200 ms, 50 ms).
    assert_eq!(ns2.no_feedback_deadline(), t2 + Duration::from_millis(200));
    let round = ns2.ns2_round_id().unwrap();
    let deadline = ns2.no_feedback_deadline();
    ns2.handle_timeout(deadline - Duration::from_millis(1)); // early: nothing
    assert!(close(ns2.state().x, x));
    ns2.handle_timeout(deadline);
    assert!(close(ns2.state().x, x / 2.0));
    assert_eq!(ns2.stats().no_feedback_expiries, 1);
    assert_eq!(ns2.ns2_round_id(), Some(round + 1));
    assert!(ns2.can_send(deadline), "a packet leaves at once");
    let (_, flags) = send(&mut ns2, deadline);
    assert_ne!(
        flags & wire::NS2_URGENT_FLAG,
        0,
        "UrgentFlag set after an expiry"
    );
    assert_eq!(u32::from(flags & wire::NS2_ROUND_MASK), round + 1);
    // Next timer from the halved rate: max(200 ms, 2000/20000 s = 100 ms).
    assert_eq!(
        ns2.no_feedback_deadline(),
        deadline + Duration::from_millis(200)
    );
    ns2.handle_timeout(ns2.no_feedback_deadline());
    assert!(close(ns2.state().x, x / 4.0));

    // RFC 5348 §4.3: max(4R, 2s/X) with the X of before the feedback (1 packet/s): 2 s.
    let mut rfc = sender(Config::default());
    let t1 = round_trip(&mut rfc, Instant::ZERO, rtt, 0.0, 0.0);
    assert_eq!(rfc.no_feedback_deadline(), t1 + Duration::from_secs(2));
}

/// A data packet of the ns-2 profile: send time `sequence`·10 ms, R in the header, flags.
fn data(sequence: u32, rtt: Duration, round: u32, urgent: bool) -> Vec<u8> {
    let repr = DataRepr {
        session_id: SESSION,
        sequence,
        timestamp: u64::from(sequence) * 10_000_000,
        rtt_micros: rtt.as_micros() as u32,
        veno_backlog_millipackets: 0,
        nonce: NONCE,
    };
    let mut buffer = vec![0u8; 1000];
    repr.emit(&mut buffer).unwrap();
    Packet::new_unchecked(&mut buffer[..]).set_flags(wire::ns2_flags(round, urgent));
    buffer
}

fn drain(receiver: &mut Receiver, now: Instant) -> Vec<FeedbackRepr> {
    let mut out = Vec::new();
    let mut buffer = [0u8; wire::MAX_FEEDBACK_LEN];
    while let Some(length) = receiver.poll_transmit(now, &mut buffer) {
        out.push(FeedbackRepr::parse(&Packet::new_checked(&buffer[..length]).unwrap()).unwrap());
    }
    out
}

// tcp/tfrc-sink.cc TfrcSinkAgent::recv(): with numPkts_ 1 the first packet past a gap makes
// numPktsSoFar_ >= numPkts_, so the gap is a loss at once; RFC 5348 §5.1 waits for NDUPACK = 3.
// new_loss() with PreciseLoss_ 1: a later loss starts a new event only if it is more than
// rtt_ after the last event and was revealed by a packet of a newer round_id.
#[test]
fn loss_after_one_later_packet_and_precise_loss_rounds() {
    let rtt = Duration::from_millis(100);
    let mut ns2 = Receiver::new(Config::ns2()).unwrap();
    let mut rfc = Receiver::new(Config::default()).unwrap();
    let arrive = |receiver: &mut Receiver, sequence: u32, round: u32| {
        let now = Instant::from_millis(u64::from(sequence) * 10 + 50);
        receiver
            .handle_packet(now, &data(sequence, rtt, round, false))
            .unwrap();
        drain(receiver, now)
    };
    for sequence in 0..10 {
        arrive(&mut ns2, sequence, 1);
        arrive(&mut rfc, sequence, 1);
    }
    // Packet 10 is lost; 11 arrives.
    let reports = arrive(&mut ns2, 11, 1);
    arrive(&mut rfc, 11, 1);
    assert_eq!(ns2.stats().lost, 1);
    assert_eq!(ns2.stats().loss_events, 1);
    assert_eq!(
        reports.len(),
        1,
        "the first loss is reported at once (adjust_history())"
    );
    assert!(reports[0].loss_event_rate() > 0.0);
    assert_eq!(rfc.stats().lost, 0, "RFC: one later packet is not enough");
    arrive(&mut rfc, 12, 1);
    assert_eq!(rfc.stats().lost, 0);
    arrive(&mut rfc, 13, 1);
    assert_eq!(rfc.stats().lost, 1, "RFC: lost after three later packets");

    // Another loss 200 ms later (> R) but revealed by a packet of the same round: no new event.
    for sequence in 12..30 {
        arrive(&mut ns2, sequence, 1);
    }
    arrive(&mut ns2, 31, 1);
    assert_eq!(ns2.stats().lost, 2);
    assert_eq!(
        ns2.stats().loss_events,
        1,
        "same round_id: not a new loss event"
    );
    // The same after a new round: a new event, reported at once.
    for sequence in 32..50 {
        arrive(&mut ns2, sequence, 2);
    }
    let reports = arrive(&mut ns2, 51, 2);
    assert_eq!(ns2.stats().loss_events, 2);
    assert_eq!(
        reports.len(),
        1,
        "every new loss event is reported (congestionEvent)"
    );
}

// tcp/tfrc-sink.cc TfrcSinkAgent::recv(): a new packet arriving at least rtt_/NumFeedback_
// after the last report triggers one; nextpkt() restarts a timer of 1.5·rtt_/NumFeedback_, and
// sendpkt() only reports when data arrived since the last report (last_arrival_ >=
// last_report_sent). UrgentFlag packets are answered at once. NumFeedback_ is N_fb here.
#[test]
fn feedback_timing_with_num_feedback() {
    let rtt = Duration::from_millis(100);
    let config = Config {
        rtt_ref: Some(Duration::from_millis(25)),
        ..Config::ns2()
    };
    let mut receiver = Receiver::new(config).unwrap();
    let mut report_times = Vec::new();
    // Packets every 5 ms for 200 ms; the first is urgent (before the sender's first feedback).
    for sequence in 0..40u32 {
        let now = Instant::from_millis(u64::from(sequence) * 5);
        while let Some(due) = receiver.poll_timeout().filter(|&due| due <= now) {
            receiver.handle_timeout(due);
            report_times.extend(drain(&mut receiver, due).iter().map(|_| due));
        }
        receiver
            .handle_packet(now, &data(sequence, rtt, 1, sequence == 0))
            .unwrap();
        report_times.extend(drain(&mut receiver, now).iter().map(|_| now));
    }
    assert_eq!(receiver.feedbacks_per_rtt(), 4);
    let spacing: Vec<u64> = report_times
        .windows(2)
        .map(|pair| (pair[1] - pair[0]).as_millis() as u64)
        .collect();
    // R/N = 25 ms: a report with the first packet at or after 25 ms past the last one.
    assert_eq!(report_times[0], Instant::ZERO);
    assert!(spacing.iter().all(|&gap| gap == 25), "spacing {spacing:?}");
    let last_report = *report_times.last().unwrap();
    // Data stops just after the last report (at 195 ms; last report at 175 ms): the 1.5·R/N
    // timer reports once at 175 + 37.5 ms, then finds no new data.
    assert_eq!(last_report, Instant::from_millis(175));
    let timer = receiver.poll_timeout().unwrap();
    assert_eq!(timer, last_report + Duration::from_micros(37_500));
    receiver.handle_timeout(timer);
    assert_eq!(drain(&mut receiver, timer).len(), 1);
    let next = receiver.poll_timeout().unwrap();
    assert_eq!(next, timer + Duration::from_micros(37_500));
    receiver.handle_timeout(next);
    assert!(
        drain(&mut receiver, next).is_empty(),
        "no data since the last report"
    );
    // An urgent packet is answered at once even 1 ms after a report.
    let later = next + Duration::from_millis(1);
    receiver
        .handle_packet(later, &data(40, rtt, 2, false))
        .unwrap();
    assert_eq!(
        drain(&mut receiver, later).len(),
        1,
        "new data after R/N: a report"
    );
    let urgent_at = later + Duration::from_millis(1);
    receiver
        .handle_packet(urgent_at, &data(41, rtt, 3, true))
        .unwrap();
    assert_eq!(
        drain(&mut receiver, urgent_at).len(),
        1,
        "UrgentFlag: a report at once"
    );
}

// tcp/tfrc.cc TfrcAgent::sendpkt(): with useHeaders_ the packet is packetSize_ + 32 bytes on
// the wire while p_to_b() uses packetSize_.
#[test]
fn headers_travel_outside_the_equation_size() {
    let mut ns2 = sender(Config::ns2());
    let mut buffer = [0u8; 2000];
    assert_eq!(ns2.send_padded(Instant::ZERO, &mut buffer), Ok(1032));
    assert_eq!(ns2.max_payload(), 1000);
    let mut plain = sender(Config {
        ns2_use_headers: false,
        ..Config::ns2()
    });
    assert_eq!(plain.send_padded(Instant::ZERO, &mut buffer), Ok(1000));
    let too_big = Config {
        packet_size: 65_500,
        ..Config::ns2()
    };
    assert!(too_big
        .validate()
        .unwrap_err()
        .to_string()
        .contains("65475"));
}

// The extensions under the ns-2 profile: gTFRC's G = max(g, X) still holds over a lossy path,
// and NumFeedback_ = N_fb spreads reports over the RTT.
#[test]
fn extensions_work_under_the_ns2_profile() {
    let link = LinkSpec {
        rate_bps: 100e6,
        one_way_delay: Duration::from_millis(50),
        queue_limit: 1000,
        loss: 0.02,
        seed: 21,
    };
    let (start, end) = (Instant::from_secs(20), Instant::from_secs(120));
    let g = 150_000.0;
    let mut plain = Pair::new(Config::ns2(), link.clone());
    plain.run_until(end, 20_000_000);
    let guaranteed_config = Config {
        target_rate: Some(g),
        rtt_ref: Some(Duration::from_millis(25)),
        ..Config::ns2()
    };
    let mut guaranteed = Pair::new(guaranteed_config, link);
    guaranteed.run_until(end, 20_000_000);
    let plain_rate = plain.send_rate(start, end);
    let g_rate = guaranteed.send_rate(start, end);
    println!("ns-2 profile: TFRC {plain_rate:.0} B/s, gTFRC {g_rate:.0} B/s, g {g}");
    assert!(plain_rate < 0.8 * g);
    // send_rate counts packet_size bytes per packet; the header travels on top.
    assert!(
        g_rate >= 0.97 * g && g_rate <= 1.1 * g,
        "gTFRC rate {g_rate}"
    );
    let feedbacks = |pair: &Pair| {
        pair.trace
            .feedback_times
            .iter()
            .filter(|&&t| t >= start && t < end)
            .count() as f64
    };
    let ratio = feedbacks(&guaranteed) / feedbacks(&plain);
    assert!(
        ratio > 2.5,
        "N_fb = 4 should give several times more reports ({ratio:.2})"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Arbitrary data packets (sequence numbers, send timestamps, RTTs, round ids, urgent flags)
    /// and arbitrary datagrams at arbitrary times never panic or stall the ns-2 profile's
    /// endpoints, and the rates stay finite and positive, p in [0, 1].
    #[test]
    fn hostile_input_under_the_ns2_profile(
        steps in proptest::collection::vec(
            (0u64..400, proptest::prelude::any::<u32>(), proptest::prelude::any::<u64>(),
             0u32..5_000_000, proptest::prelude::any::<u16>(),
             proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48)),
            1..120,
        )
    ) {
        let config = Config { rtt_ref: Some(Duration::from_millis(10)), ..Config::ns2() };
        let mut sender = Sender::new(config.clone(), SESSION, u64::from(NONCE), Instant::ZERO).unwrap();
        let mut receiver = Receiver::new(config).unwrap();
        let mut now = Instant::ZERO;
        let mut buffer = [0u8; 1100];
        for (step_ms, sequence, timestamp, rtt_micros, flags, junk) in steps {
            now += Duration::from_millis(step_ms);
            let repr = DataRepr {
                session_id: SESSION,
                sequence,
                timestamp,
                rtt_micros,
                veno_backlog_millipackets: 0,
                nonce: NONCE,
            };
            let mut packet = vec![0u8; 100];
            repr.emit(&mut packet).unwrap();
            Packet::new_unchecked(&mut packet[..]).set_flags(flags);
            let _ = receiver.handle_packet(now, &packet);
            let _ = receiver.handle_packet(now, &junk);
            let _ = sender.handle_packet(now, &junk);
            sender.handle_timeout(now);
            receiver.handle_timeout(now);
            if sender.can_send(now) {
                let length = sender.send_padded(now, &mut buffer).unwrap();
                let _ = receiver.handle_packet(now, &buffer[..length]);
            }
            let mut reports = 0;
            while let Some(length) = receiver.poll_transmit(now, &mut buffer) {
                let _ = sender.handle_packet(now, &buffer[..length]);
                reports += 1;
                proptest::prop_assert!(reports < 4, "feedback storm");
            }
            let state = sender.state();
            proptest::prop_assert!(state.sending_rate.is_finite() && state.sending_rate > 0.0);
            // A feedback may make a packet due at once (ns-2's nextpkt() in slow start), even at
            // time 0. Once the driver has sent what is due, the sender must ask to be woken
            // later, or a driver would spin.
            let mut sent_now = 0;
            while sender.can_send(now) {
                let length = sender.send_padded(now, &mut buffer).unwrap();
                let _ = receiver.handle_packet(now, &buffer[..length]);
                sent_now += 1;
                proptest::prop_assert!(sent_now < 64, "the sender spins at {:?}", now);
            }
            proptest::prop_assert!(sender.poll_timeout().is_some_and(|t| t > now));
            proptest::prop_assert!((0.0..=1.0).contains(&receiver.loss_event_rate()));
        }
    }
}
