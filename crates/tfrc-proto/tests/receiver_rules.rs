//! One RFC 5348 §5–§6 rule per test, plus the feedbacks-per-RTT and Veno receiver extensions.

use core::time::Duration;
use tfrc_proto::wire::{self, DataRepr, FeedbackRepr, Packet};
use tfrc_proto::{equation, Config, Instant, ReceiveError, Receiver, Veno};

const SESSION: u32 = 5;
const NONCE: u32 = 99;

fn data(sequence: u32, rtt: Duration, veno_packets: f64) -> Vec<u8> {
    let repr = DataRepr {
        session_id: SESSION,
        sequence,
        timestamp: u64::from(sequence) * 1_000,
        rtt_micros: rtt.as_micros() as u32,
        veno_backlog_millipackets: (veno_packets * 1000.0) as u32,
        nonce: NONCE,
    };
    // A full-size packet: s = 1000 bytes of payload, the header on top (RFC 5348 §3.1).
    let mut buffer = vec![0u8; wire::DATA_HEADER_LEN + 1000];
    repr.emit(&mut buffer).unwrap();
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

/// Feeds packets `sequences` at 10 ms spacing starting at `start`, firing timers and collecting
/// feedback. Returns (feedbacks, time after the last packet).
fn feed(
    receiver: &mut Receiver,
    sequences: impl IntoIterator<Item = u32>,
    start: Instant,
    spacing: Duration,
    rtt: Duration,
    veno: f64,
) -> (Vec<FeedbackRepr>, Instant) {
    let mut now = start;
    let mut feedbacks = Vec::new();
    for sequence in sequences {
        while let Some(due) = receiver.poll_timeout() {
            if due > now {
                break;
            }
            receiver.handle_timeout(due);
            feedbacks.extend(drain(receiver, due));
        }
        receiver
            .handle_packet(now, &data(sequence, rtt, veno))
            .unwrap();
        feedbacks.extend(drain(receiver, now));
        now += spacing;
    }
    (feedbacks, now)
}

/// Length of the oldest closed loss interval (the synthetic first one after the first loss).
fn first_interval(receiver: &Receiver) -> f64 {
    receiver
        .loss_history()
        .closed_intervals()
        .next()
        .unwrap()
        .length
}

const RTT: Duration = Duration::from_millis(100);
const SPACING: Duration = Duration::from_millis(10);

// RFC 5348 §6.3: the first data packet is answered at once with p = 0 and X_recv = 0, echoing its
// timestamp.
#[test]
fn first_packet_gets_immediate_feedback() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    receiver
        .handle_packet(Instant::from_millis(5), &data(41, RTT, 0.0))
        .unwrap();
    let feedback = drain(&mut receiver, Instant::from_millis(7));
    assert_eq!(feedback.len(), 1);
    let feedback = feedback[0];
    assert_eq!(feedback.echo_sequence, 41);
    assert_eq!(feedback.echo_timestamp, 41_000);
    assert_eq!(feedback.elapsed_micros, 2_000);
    assert_eq!(feedback.x_recv, 0);
    assert_eq!(feedback.loss_event_rate(), 0.0);
    assert_eq!(
        (feedback.session_id, feedback.echo_nonce >> 16),
        (SESSION, NONCE >> 16)
    );
    // The receipt proof covers the one packet received: its mark is NONCE's lower half.
    assert_eq!(
        feedback.proof(),
        wire::ReceiptProof {
            offset: 0,
            length: 1,
            sum: (NONCE & 0xffff) as u16
        }
    );
}

// RFC 5348 §6.2: one feedback per RTT while data arrives, none when no data arrived.
#[test]
fn feedback_once_per_rtt() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    // 2 s of packets every 10 ms with R = 100 ms: about 20 feedbacks.
    let (feedbacks, end) = feed(&mut receiver, 0..200, Instant::ZERO, SPACING, RTT, 0.0);
    assert!(
        (19..=21).contains(&feedbacks.len()),
        "{} feedbacks",
        feedbacks.len()
    );
    // X_recv = 1000 bytes per 10 ms = 100 kB/s, counted over the previous R (§6.2 step 2): the
    // timer fires just before the packet due at the same instant, so the window (t − R, t] holds
    // 9 or 10 packets — within one packet per R.
    let x_recv = feedbacks.last().unwrap().x_recv as f64;
    assert!((90_000.0..=100_000.0).contains(&x_recv), "X_recv {x_recv}");
    // Silence: the timer fires once more at most, then stops.
    let mut quiet = 0;
    let mut now = end;
    for _ in 0..10 {
        now += RTT;
        receiver.handle_timeout(now);
        quiet += drain(&mut receiver, now).len();
    }
    assert!(quiet <= 1);
    assert_eq!(receiver.poll_timeout(), None);
}

// Feedbacks per RTT: with RTT = 1 s and RTT_ref = 100 ms, N_fb = 10 feedbacks per RTT.
#[test]
fn feedbacks_per_rtt_with_rtt_ref() {
    let config = Config {
        rtt_ref: Some(Duration::from_millis(100)),
        ..Config::default()
    };
    let mut receiver = Receiver::new(config).unwrap();
    let rtt = Duration::from_secs(1);
    let (feedbacks, _) = feed(&mut receiver, 0..1000, Instant::ZERO, SPACING, rtt, 0.0);
    assert_eq!(receiver.feedbacks_per_rtt(), 10);
    assert_eq!(
        receiver.feedback_interval(),
        Some(Duration::from_millis(100))
    );
    // 10 s of data: about 10 per second.
    assert!(
        (98..=102).contains(&feedbacks.len()),
        "{} feedbacks",
        feedbacks.len()
    );
    // N_fb = max(int(RTT/RTT_ref), 1): an RTT below RTT_ref still gives one per RTT.
    let config = Config {
        rtt_ref: Some(Duration::from_millis(300)),
        ..Config::default()
    };
    let mut receiver = Receiver::new(config).unwrap();
    let (feedbacks, _) = feed(&mut receiver, 0..200, Instant::ZERO, SPACING, RTT, 0.0);
    assert_eq!(receiver.feedbacks_per_rtt(), 1);
    assert!((19..=21).contains(&feedbacks.len()));
}

// RFC 5348 §5.1: a packet is lost only after NDUPACK = 3 later packets; a late packet before that
// is reordering, not loss.
#[test]
fn loss_needs_three_later_packets_and_tolerates_reordering() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    feed(&mut receiver, 0..50, Instant::ZERO, SPACING, RTT, 0.0);
    // 50 missing; 51, 52 arrive, then 50 arrives late: no loss.
    let start = Instant::from_millis(500);
    feed(
        &mut receiver,
        [51, 52, 50, 53, 54],
        start,
        SPACING,
        RTT,
        0.0,
    );
    assert_eq!(receiver.stats().lost, 0);
    assert_eq!(receiver.stats().reordered, 1);
    assert_eq!(receiver.loss_event_rate(), 0.0);
    // 55 missing; 56, 57 arrive: not yet lost; 58 makes three.
    feed(
        &mut receiver,
        [56, 57],
        Instant::from_millis(600),
        SPACING,
        RTT,
        0.0,
    );
    assert_eq!(receiver.stats().lost, 0);
    feed(
        &mut receiver,
        [58],
        Instant::from_millis(620),
        SPACING,
        RTT,
        0.0,
    );
    assert_eq!(receiver.stats().lost, 1);
    assert_eq!(receiver.stats().loss_events, 1);
    // Duplicates are counted and ignored.
    feed(
        &mut receiver,
        [58, 3],
        Instant::from_millis(630),
        SPACING,
        RTT,
        0.0,
    );
    assert_eq!(receiver.stats().duplicates, 2);
}

// RFC 5348 §5.2: losses within one RTT of a loss event's first loss belong to that event.
#[test]
fn losses_within_one_rtt_form_one_event() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    // Packets every 10 ms, R = 100 ms. Lose 100, 105 (50 ms later) and 120 (200 ms later).
    let sequences = (0..300).filter(|s| ![100, 105, 120].contains(s));
    feed(&mut receiver, sequences, Instant::ZERO, SPACING, RTT, 0.0);
    assert_eq!(receiver.stats().lost, 3);
    assert_eq!(receiver.stats().loss_events, 2);
    let starts: Vec<u64> = receiver
        .loss_history()
        .closed_intervals()
        .map(|i| i.raw_length)
        .collect();
    // The second event starts at 120: the interval closed by it is 120 - 100 = 20 packets.
    assert_eq!(starts[0], 20);
}

// RFC 5348 §5.2: a lost packet's time is interpolated between its neighbours' arrivals, so a burst
// lost in a long gap is split into events one RTT apart.
#[test]
fn lost_packet_times_are_interpolated() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    feed(&mut receiver, 0..100, Instant::ZERO, SPACING, RTT, 0.0);
    // 100..=139 lost (40 packets); 140 arrives 410 ms after 99: interpolated times span 400 ms,
    // so the burst forms events at 100, then at the first packet > 100 ms later, etc.
    let (_, _) = feed(
        &mut receiver,
        140..150,
        Instant::from_millis(990 + 410),
        SPACING,
        RTT,
        0.0,
    );
    assert_eq!(receiver.stats().lost, 40);
    assert_eq!(receiver.stats().loss_events, 4);
}

// RFC 5348 §6.3.1: the first loss interval is synthesised so that the equation gives the receive
// rate: p_first ≈ the p with X(s, R, p) = X_recv.
#[test]
fn first_loss_interval_is_synthesised_from_receive_rate() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    let sequences = (0..300).filter(|s| *s != 250);
    feed(&mut receiver, sequences, Instant::ZERO, SPACING, RTT, 0.0);
    let first = first_interval(&receiver);
    // Receive rate: 1000 bytes / 10 ms = 100 kB/s.
    let p = equation::loss_event_rate_for(1000.0, 0.1, 100_000.0).unwrap();
    assert!(
        (first * p - 1.0).abs() < 0.05,
        "interval {first}, 1/p = {}",
        1.0 / p
    );
    let x = equation::throughput(1000.0, 0.1, 1.0 / first);
    assert!((x - 100_000.0).abs() / 100_000.0 < 0.05);
}

// RFC 5348 §6.3.1 with §6.2's window: whatever the offset of the first loss after a feedback,
// X(p) of the synthetic first interval is the arrival rate (1 MB/s here) within 20 %: the rate's
// bytes and time cover the same span (the R before the packet that revealed the loss).
#[test]
fn first_loss_interval_matches_the_arrival_rate_at_any_offset_after_a_feedback() {
    for offset_ms in [1u32, 2, 5, 20, 50, 99] {
        let mut receiver = Receiver::new(Config::default()).unwrap();
        // One 1000-byte packet per ms; feedbacks at 0 and every 100 ms after.
        let lost = 300 + offset_ms;
        let sequences = (0..lost + 50).filter(|s| *s != lost);
        let (feedbacks, _) = feed(
            &mut receiver,
            sequences,
            Instant::ZERO,
            Duration::from_millis(1),
            RTT,
            0.0,
        );
        // A feedback went out at 300 ms, `offset_ms` before the loss.
        assert!(feedbacks.len() >= 4);
        let first = first_interval(&receiver);
        let x = equation::throughput(1000.0, 0.1, 1.0 / first);
        assert!(
            (x / 1e6 - 1.0).abs() <= 0.2,
            "loss {offset_ms} ms after a feedback: interval {first}, X(p) {x:.0} B/s"
        );
    }
}

// RFC 5348 §6.2 step 2: X_recv is the rate of the packets received in the previous R_m seconds,
// also when a new loss sends the feedback early: a burst just before an early feedback is
// divided by R_m, not by the few milliseconds since the previous feedback.
#[test]
fn x_recv_covers_the_previous_rtt_even_for_an_early_feedback() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    // 100 kB/s (one packet per 10 ms) for 1 s: regular feedbacks report 100 kB/s.
    let (feedbacks, now) = feed(&mut receiver, 0..100, Instant::ZERO, SPACING, RTT, 0.0);
    let regular = feedbacks.last().unwrap().x_recv as f64;
    assert!((regular - 100_000.0).abs() <= 10_000.0, "{regular}");
    // The regular feedback is due at 1.0 s; then a burst of 5 packets 1 ms apart with packet 105
    // lost: 106..=108 reveal it 6-8 ms after the regular feedback.
    let (regular_now, _) = feed(&mut receiver, [100], now, SPACING, RTT, 0.0);
    assert_eq!(regular_now.len(), 1);
    let (early, _) = feed(
        &mut receiver,
        [101, 102, 103, 104, 106, 107, 108],
        now + Duration::from_millis(1),
        Duration::from_millis(1),
        RTT,
        0.0,
    );
    assert_eq!(early.len(), 1, "a new loss event is reported at once");
    // Bytes in the previous 100 ms: 9 packets at 10 ms spacing (≤ 1.0 s) + 7 in the burst.
    let x_recv = early[0].x_recv as f64;
    assert!(x_recv <= 170_000.0, "early X_recv {x_recv}");
    assert!(x_recv >= 150_000.0, "early X_recv {x_recv}");
}

// RFC 5348 §6.1: a new loss event that raises p is reported at once.
#[test]
fn new_loss_event_triggers_immediate_feedback() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    feed(&mut receiver, 0..100, Instant::ZERO, SPACING, RTT, 0.0);
    let now = Instant::from_millis(1000);
    // 100 is missing; 101 and 102 do not make it lost yet. Whatever feedback the regular timer
    // produces now, the next one is not due for another R = 100 ms.
    let (regular, _) = feed(
        &mut receiver,
        [101, 102],
        now,
        Duration::from_millis(1),
        RTT,
        0.0,
    );
    assert!(regular.iter().all(|f| f.loss_event_rate() == 0.0));
    let before = receiver.stats().feedbacks;
    // 103 makes 100 lost: a new loss event, reported 2 ms later instead of up to 100 ms later.
    let (feedbacks, _) = feed(
        &mut receiver,
        [103],
        now + Duration::from_millis(2),
        SPACING,
        RTT,
        0.0,
    );
    assert_eq!(
        feedbacks.len(),
        1,
        "immediate feedback on the new loss event"
    );
    assert_eq!(receiver.stats().feedbacks, before + 1);
    assert!(feedbacks[0].loss_event_rate() > 0.0);
}

// RFC 5348 §5.2 (ECN): a CE-marked packet counts as a loss at its arrival.
#[test]
fn ecn_mark_counts_as_loss() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    feed(&mut receiver, 0..100, Instant::ZERO, SPACING, RTT, 0.0);
    receiver
        .handle_packet_ecn(Instant::from_millis(1000), &data(100, RTT, 0.0), true)
        .unwrap();
    assert_eq!(receiver.stats().ecn_marked, 1);
    assert_eq!(receiver.stats().loss_events, 1);
    assert_eq!(receiver.stats().lost, 0);
    assert!(receiver.loss_event_rate() > 0.0);
}

// Without an RTT from the sender, the receiver answers every data packet.
#[test]
fn without_rtt_every_packet_is_answered() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    let (feedbacks, _) = feed(
        &mut receiver,
        0..5,
        Instant::ZERO,
        Duration::from_secs(1),
        Duration::ZERO,
        0.0,
    );
    assert_eq!(feedbacks.len(), 5);
    assert_eq!(receiver.feedback_interval(), None);
}

// The sender numbers its packets from 0, so a lost packet 0 is a loss like a lost packet 1
// (RFC 5348 §5.1: lost once NDUPACK = 3 later packets have arrived), not an unseen one.
#[test]
fn a_lost_first_packet_is_detected() {
    let lose = |lost: u32| {
        let mut receiver = Receiver::new(Config::default()).unwrap();
        let sequences = (0..200u32).filter(|s| *s != lost);
        feed(&mut receiver, sequences, Instant::ZERO, SPACING, RTT, 0.0);
        (receiver.stats().lost, receiver.loss_event_rate())
    };
    let (lost_0, p_0) = lose(0);
    let (lost_1, p_1) = lose(1);
    assert_eq!((lost_0, lost_1), (1, 1));
    assert!(p_1 > 0.0, "losing packet 1: p = {p_1}");
    assert!(p_0 > 0.0, "losing packet 0: p = {p_0}");
    // Only the first three packets reveal it: the loss needs three later arrivals.
    let mut receiver = Receiver::new(Config::default()).unwrap();
    feed(&mut receiver, 1..3u32, Instant::ZERO, SPACING, RTT, 0.0);
    assert_eq!(receiver.stats().lost, 0);
    feed(
        &mut receiver,
        3..4u32,
        Instant::ZERO + SPACING * 2,
        SPACING,
        RTT,
        0.0,
    );
    assert_eq!(receiver.stats().lost, 1);
}

// Sequence numbers wrap around at 2^32 without false losses, and losses across the wrap count.
#[test]
fn sequence_numbers_wrap() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    let start = u32::MAX - 50;
    let sequences = (0..100u32)
        .map(|i| start.wrapping_add(i))
        .filter(|s| *s != 10);
    feed(&mut receiver, sequences, Instant::ZERO, SPACING, RTT, 0.0);
    assert_eq!(receiver.stats().lost, 1);
    assert_eq!(receiver.stats().packets, 99);
}

// Veno: an interval closed while N < β counts α times; with N ≥ β it counts once. p falls by α
// when every loss is judged non-congestion.
#[test]
fn veno_stretches_non_congestion_intervals() {
    let run = |veno: Option<Veno>, backlog: f64| {
        let config = Config {
            veno,
            ..Config::default()
        };
        let mut receiver = Receiver::new(config).unwrap();
        // A loss every 100 packets (every 1 s at 10 ms spacing: each its own event).
        let sequences = (0..2000).filter(|s| s % 100 != 50);
        feed(
            &mut receiver,
            sequences,
            Instant::ZERO,
            SPACING,
            RTT,
            backlog,
        );
        receiver
    };
    let plain = run(None, 0.0);
    let non_congestion = run(Some(Veno::default()), 0.5);
    let congestion = run(Some(Veno::default()), 2.0);
    let lengths = |r: &Receiver| {
        r.loss_history()
            .closed_intervals()
            .map(|i| i.length)
            .collect::<Vec<_>>()
    };
    assert!(lengths(&plain)[..7].iter().all(|l| *l == 100.0));
    assert!(lengths(&non_congestion)[..7].iter().all(|l| *l == 300.0));
    assert!(lengths(&congestion)[..7].iter().all(|l| *l == 100.0));
    let ratio = plain.loss_event_rate() / non_congestion.loss_event_rate();
    assert!((ratio - 3.0).abs() < 0.05, "p ratio {ratio}");
    assert_eq!(plain.loss_event_rate(), congestion.loss_event_rate());
}

// Untrusted input: malformed, foreign and hostile packets are counted and never panic; a huge
// sequence jump is bounded work.
#[test]
fn hostile_input_is_counted_and_bounded() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    let now = Instant::from_secs(1);
    assert_eq!(
        receiver.handle_packet(now, b"short"),
        Err(ReceiveError::Malformed)
    );
    receiver.handle_packet(now, &data(0, RTT, 0.0)).unwrap();
    let mut foreign = data(1, RTT, 0.0);
    foreign[4] ^= 0xff;
    assert_eq!(
        receiver.handle_packet(now, &foreign),
        Err(ReceiveError::ForeignSession)
    );
    let mut feedback = vec![0u8; wire::MAX_FEEDBACK_LEN];
    FeedbackRepr {
        session_id: SESSION,
        echo_sequence: 0,
        echo_timestamp: 0,
        elapsed_micros: 0,
        x_recv: 0,
        loss_event_rate_raw: 0,
        echo_nonce: NONCE,
        proof_flags: 1,
        intervals: Default::default(),
    }
    .emit(&mut feedback)
    .unwrap();
    assert_eq!(
        receiver.handle_packet(now, &feedback),
        Err(ReceiveError::UnexpectedKind)
    );
    // A jump of 2^31 - 1 sequence numbers, then more packets: bounded events, no hang.
    feed(
        &mut receiver,
        [
            i32::MAX as u32,
            i32::MAX as u32 + 1,
            i32::MAX as u32 + 2,
            i32::MAX as u32 + 3,
        ],
        now,
        SPACING,
        RTT,
        0.0,
    );
    let stats = receiver.stats();
    assert_eq!(stats.malformed, 2);
    assert_eq!(stats.foreign, 1);
    assert!(stats.lost >= (i32::MAX as u64) - 1);
    assert!(stats.loss_events <= 1001);
    assert!(receiver.loss_event_rate() <= 1.0);
}

// RFC 5348 §6.2 step 2 with §3.1: X_recv is compared with X = s/t_ipi, so it counts what s
// counts, payload bytes without the TFRC header. Packets of 1000 + 32 bytes every 10 ms give
// 100 000 bytes/s, not 103 200.
#[test]
fn x_recv_counts_payload_bytes_as_s_does() {
    let mut receiver = Receiver::new(Config::default()).unwrap();
    let (feedbacks, _) = feed(&mut receiver, 0..100, Instant::ZERO, SPACING, RTT, 0.0);
    let rates: Vec<u64> = feedbacks
        .iter()
        .skip(2)
        .map(|feedback| feedback.x_recv)
        .collect();
    assert!(!rates.is_empty());
    // The window (t − R, t] holds 9 or 10 packets of s = 1000 bytes.
    for rate in rates {
        assert!((90_000..=100_000).contains(&rate), "X_recv {rate}");
    }
    assert_eq!(receiver.stats().payload_bytes, 100 * 1000);
    assert_eq!(
        receiver.stats().bytes,
        100 * (1000 + wire::DATA_HEADER_LEN as u64)
    );
}
