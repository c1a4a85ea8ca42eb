//! TFRC-SP (RFC 4828): one rule per test, each quoting the sentence it checks, against
//! standard TFRC with the same packets.

mod common;

use core::time::Duration;
use tfrc_proto::wire::{self, DataRepr, FeedbackRepr, Packet};
use tfrc_proto::{
    equation, Config, ConfigError, Instant, Profile, Receiver, Sender, SmallPackets,
    SMALL_PACKET_MIN_INTERVAL,
};

const SESSION: u32 = 41;
const NONCE: u32 = 0x5151;
const RTT: Duration = Duration::from_millis(100);

/// A VoIP-like configuration: `payload`-byte segments, TFRC-SP or not.
fn config(payload: u32, small_packets: bool) -> Config {
    Config {
        packet_size: payload,
        small_packets: small_packets.then(SmallPackets::default),
        ..Config::default()
    }
}

fn send(sender: &mut Sender, now: Instant) -> DataRepr {
    let mut buffer = [0u8; 2000];
    let at = now.max(sender.next_send_time());
    let length = sender.send_padded(at, &mut buffer).unwrap();
    DataRepr::parse(&Packet::new_checked(&buffer[..length]).unwrap()).unwrap()
}

fn feedback(data: &DataRepr, x_recv: f64, p: f64) -> Vec<u8> {
    common::honest_feedback(data, u64::from(NONCE), x_recv, p)
}

/// Sends everything the sender allows during one RTT, then a packet answered one RTT later
/// with `x_recv` and `p`. Returns the time of that answer.
fn round(sender: &mut Sender, at: Instant, x_recv: f64, p: f64) -> Instant {
    let mut now = at;
    while sender.next_send_time() < at + RTT {
        now = sender.next_send_time().max(now);
        send(sender, now);
    }
    let data = send(sender, at + RTT);
    let back = Instant::from_nanos(data.timestamp) + RTT;
    sender
        .handle_packet(back, &feedback(&data, x_recv, p))
        .unwrap();
    back
}

/// A sender after slow start and one feedback reporting `p`, every RTT sample exactly RTT.
fn sender_at(config: Config, p: f64) -> Sender {
    let mut sender = Sender::new(config, SESSION, u64::from(NONCE), Instant::ZERO).unwrap();
    let mut t = round(&mut sender, Instant::ZERO, 0.0, 0.0);
    for _ in 0..4 {
        t = round(&mut sender, t, 1e6, 0.0);
    }
    round(&mut sender, t, 1e6, p);
    sender
}

// RFC 4828 §3: "The nominal segment size s defaults to 1460 bytes" in the throughput equation,
// and "X := X * s_true / (s_true + H)" with "The H parameter is set to the constant 40 bytes".
// §4.2's example: "a sender using 120-byte packets needs a TCP-friendly rate of 128 Kbps to send
// 96 Kbps of application data ... reduced by a factor of s_true/(s_true + H) = 120/160".
#[test]
fn the_equation_uses_the_nominal_segment_size_less_the_headers() {
    for p in [0.001, 0.01, 0.1, 0.3] {
        let small = sender_at(config(120, true), p);
        let standard = sender_at(config(120, false), p);
        let r = small.state().rtt.unwrap().as_secs_f64();
        assert_eq!(r, RTT.as_secs_f64());
        // p as carried by the feedback (the wire rounds it).
        let p = small.state().p;
        let expected = equation::throughput(1460.0, r, p) * 120.0 / 160.0;
        assert!(
            (small.state().x_calc / expected - 1.0).abs() < 1e-9,
            "p {p}: X_calc {} vs {expected}",
            small.state().x_calc
        );
        // Standard TFRC with the same packets: s = 120 in the equation, no header factor.
        let plain = equation::throughput(120.0, r, p);
        assert!((standard.state().x_calc / plain - 1.0).abs() < 1e-9);
        // 1460/120 · 120/160 = 9.125 times standard TFRC's rate.
        assert!((small.state().x_calc / standard.state().x_calc - 9.125).abs() < 1e-6);
    }
}

// RFC 4828 §3: "a connection using TFRC-SP MAY instead use a more precise estimate of H ... a
// DCCP connection over IPv4 ... could set H to 20 + 12 = 32 bytes"; and "If the endpoint knows
// the MTU of the path and the derived MSS is less than 1460 bytes, then the endpoint SHOULD set
// the nominal segment size s to MSS bytes."
#[test]
fn header_size_and_nominal_segment_size_are_configurable() {
    let mut config = config(200, true);
    config.small_packets = Some(SmallPackets {
        nominal_segment_size: 536,
        header_size: 32,
    });
    let sender = sender_at(config, 0.05);
    let expected = equation::throughput(536.0, RTT.as_secs_f64(), 0.05) * 200.0 / 232.0;
    assert!((sender.state().x_calc / expected - 1.0).abs() < 1e-9);
}

// RFC 4828 §3: "TFRC-SP enforces a Min Interval between packets of 10 ms." Without loss X grows
// far above 100 packets/s; a TFRC-SP sender still sends at most 100 packets a second (Table 2's
// "Maximum Sending Rate of 100 Packets per Second"), standard TFRC does not.
#[test]
fn packets_are_at_least_ten_ms_apart() {
    let small = sender_at(config(200, true), 0.0);
    let standard = sender_at(config(200, false), 0.0);
    assert!(small.state().x > 100.0 * 200.0, "X {}", small.state().x);
    assert_eq!(small.inter_packet_interval(), SMALL_PACKET_MIN_INTERVAL);
    assert!(standard.inter_packet_interval() < SMALL_PACKET_MIN_INTERVAL);
    // Over one second of sending on schedule: 100 packets, not more.
    let mut sender = small;
    let start = sender.next_send_time();
    let mut sent = 0;
    while sender.next_send_time() < start + Duration::from_secs(1) {
        let at = sender.next_send_time();
        send(&mut sender, at);
        sent += 1;
    }
    assert_eq!(sent, 100);
}

// The Min Interval holds between any two packets: with a 1 ms t_gran a standard sender may
// send up to t_gran/2 early and catch up after being scheduled late (RFC 5348 §4.6); a TFRC-SP
// sender does neither.
#[test]
fn the_min_interval_holds_between_any_two_packets() {
    let mut sender = sender_at(config(200, true), 0.0);
    let first = sender.next_send_time();
    send(&mut sender, first);
    // Not one nanosecond early.
    assert_eq!(sender.next_send_time(), first + SMALL_PACKET_MIN_INTERVAL);
    assert!(!sender.can_send(first + SMALL_PACKET_MIN_INTERVAL - Duration::from_nanos(1)));
    // Woken 35 ms late: one packet now, the next 10 ms later (no burst of the three owed).
    let late = first + Duration::from_millis(45);
    send(&mut sender, late);
    assert!(!sender.can_send(late));
    assert_eq!(sender.next_send_time(), late + SMALL_PACKET_MIN_INTERVAL);
}

#[test]
fn configurations_that_cannot_work_are_refused() {
    let mut zero = config(200, true);
    zero.small_packets = Some(SmallPackets {
        nominal_segment_size: 0,
        header_size: 40,
    });
    assert_eq!(
        zero.validate(),
        Err(ConfigError::SmallPacketSegmentSize),
        "a zero nominal segment size"
    );
    let ns2 = Config {
        profile: Profile::Ns2,
        ..config(200, true)
    };
    let error = ns2.validate().unwrap_err();
    assert_eq!(error, ConfigError::SmallPacketsUnderNs2);
    assert!(error.to_string().contains("voip_"), "{error}");
}

// ---------------------------------------------------------------------------------------------
// Receiver

fn data(sequence: u32, payload: usize) -> Vec<u8> {
    let repr = DataRepr {
        session_id: SESSION,
        sequence,
        timestamp: u64::from(sequence) * 10_000_000,
        rtt_micros: RTT.as_micros() as u32,
        veno_backlog_millipackets: 0,
        nonce: NONCE,
    };
    let mut buffer = vec![0u8; wire::DATA_HEADER_LEN + payload];
    repr.emit(&mut buffer).unwrap();
    buffer
}

/// Feeds 200-byte packets 0..count, one every 10 ms (sequence n arrives at n·10 ms), leaving out
/// those `lost` says; returns the reported p of each feedback.
fn receive(receiver: &mut Receiver, count: u32, lost: impl Fn(u32) -> bool) -> Vec<f64> {
    let mut reported = Vec::new();
    let mut buffer = [0u8; wire::MAX_FEEDBACK_LEN];
    for sequence in (0..count).filter(|s| !lost(*s)) {
        let now = Instant::from_millis(u64::from(sequence) * 10);
        while let Some(due) = receiver.poll_timeout().filter(|due| *due <= now) {
            receiver.handle_timeout(due);
            while let Some(length) = receiver.poll_transmit(due, &mut buffer) {
                let repr = FeedbackRepr::parse(&Packet::new_checked(&buffer[..length]).unwrap());
                reported.push(repr.unwrap().loss_event_rate());
            }
        }
        receiver.handle_packet(now, &data(sequence, 200)).unwrap();
        while let Some(length) = receiver.poll_transmit(now, &mut buffer) {
            let repr = FeedbackRepr::parse(&Packet::new_checked(&buffer[..length]).unwrap());
            reported.push(repr.unwrap().loss_event_rate());
        }
    }
    reported
}

// RFC 4828 §4.4: "for a short loss interval with N packets, including K lost or marked packets,
// the loss interval length is calculated as N/K, instead of as N ... Thus, if eight successive
// loss intervals are short loss intervals with N packets and K losses, the loss event rate is
// calculated as K/N, rather than as 1/N." Here N = 15 packets (150 ms, under two RTTs of
// 100 ms) with K = 3 lost in a row: TFRC-SP reports 0.2, standard TFRC 1/15.
#[test]
fn short_loss_intervals_count_every_lost_packet() {
    let lost = |sequence: u32| sequence >= 100 && sequence % 15 < 3;
    let mut small = Receiver::new(config(200, true)).unwrap();
    let mut standard = Receiver::new(config(200, false)).unwrap();
    receive(&mut small, 400, lost);
    receive(&mut standard, 400, lost);
    let intervals: Vec<_> = small.loss_history().closed_intervals().take(8).collect();
    assert_eq!(intervals.len(), 8);
    for interval in &intervals {
        assert!(interval.short && interval.losses == 3, "{interval:?}");
        assert_eq!(interval.raw_length, 15);
        assert!((interval.length - 5.0).abs() < 1e-12);
    }
    assert!(
        (small.loss_event_rate() - 3.0 / 15.0).abs() < 1e-9,
        "TFRC-SP p {}",
        small.loss_event_rate()
    );
    assert!(
        (standard.loss_event_rate() - 1.0 / 15.0).abs() < 1e-9,
        "standard p {}",
        standard.loss_event_rate()
    );
}

// RFC 4828 §4.4: "the loss event rate is calculated by counting at most one loss event in loss
// intervals longer than two round-trip times": 3 packets lost every 40 (400 ms apart), so both
// variants report 1/40.
#[test]
fn long_loss_intervals_count_one_loss_event() {
    let lost = |sequence: u32| sequence >= 100 && sequence % 40 < 3;
    let mut small = Receiver::new(config(200, true)).unwrap();
    let mut standard = Receiver::new(config(200, false)).unwrap();
    receive(&mut small, 800, lost);
    receive(&mut standard, 800, lost);
    assert!(small
        .loss_history()
        .closed_intervals()
        .take(8)
        .all(|interval| !interval.short && interval.length == 40.0));
    assert!((small.loss_event_rate() - 1.0 / 40.0).abs() < 1e-9);
    assert!((standard.loss_event_rate() - 1.0 / 40.0).abs() < 1e-9);
}

// RFC 4828 §3: "the calculation of the average loss interval can include the most recent loss
// interval only if more than two round-trip times have passed since the beginning of that loss
// interval". After eight short intervals, a loss-free run: standard TFRC lets the growing open
// interval raise the mean at once; TFRC-SP keeps p until two RTTs (20 packets) have passed.
#[test]
fn the_open_interval_counts_only_after_two_rtts() {
    let last_loss = 100 + 15 * 19;
    let lost = |sequence: u32| (100..=last_loss).contains(&sequence) && sequence % 15 < 3;
    let mut small = Receiver::new(config(200, true)).unwrap();
    let mut standard = Receiver::new(config(200, false)).unwrap();
    let event = last_loss - last_loss % 15;
    // 19 packets after the last event's start (190 ms < 2 RTTs): I_0 = 19 is left out.
    receive(&mut small, event + 19, lost);
    receive(&mut standard, event + 19, lost);
    assert!((small.loss_event_rate() - 0.2).abs() < 1e-9);
    assert!(standard.loss_event_rate() < 1.0 / 15.0);
    // 60 packets after it (600 ms): I_0 = 60 counts and raises the mean.
    let mut small = Receiver::new(config(200, true)).unwrap();
    receive(&mut small, event + 60, lost);
    let weights = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];
    let with_open = (60.0 + 5.0 * weights[1..].iter().sum::<f64>()) / 6.0;
    assert!(
        (1.0 / small.loss_event_rate() - with_open).abs() < 1e-6,
        "I_mean {} vs {with_open}",
        1.0 / small.loss_event_rate()
    );
}

// RFC 4828 §1: "In calculating this loss interval, TFRC-SP uses the segment size of 1460 bytes,
// rather than the actual segment size used in the connection." The first loss interval is the
// one whose p makes the equation give the receive rate (RFC 5348 §6.3.1): with s = 1460 for
// TFRC-SP, with s = 200 for standard TFRC.
#[test]
fn the_first_loss_interval_uses_the_nominal_segment_size() {
    let lost = |sequence: u32| sequence == 150;
    let mut small = Receiver::new(config(200, true)).unwrap();
    let mut standard = Receiver::new(config(200, false)).unwrap();
    receive(&mut small, 200, lost);
    receive(&mut standard, 200, lost);
    let first = |receiver: &Receiver| {
        receiver
            .loss_history()
            .closed_intervals()
            .next()
            .unwrap()
            .length
    };
    // Both invert the same receive rate (200 bytes every 10 ms, about 20 000 bytes/s over the
    // last RTT), TFRC-SP with s = 1460 and standard TFRC with s = 200.
    let r = RTT.as_secs_f64();
    let rate_small = equation::throughput(1460.0, r, 1.0 / first(&small));
    let rate_standard = equation::throughput(200.0, r, 1.0 / first(&standard));
    assert!(
        (rate_small / rate_standard - 1.0).abs() < 1e-3,
        "{rate_small} vs {rate_standard}"
    );
    assert!((rate_small / 20_000.0 - 1.0).abs() < 0.15, "{rate_small}");
    // So the TFRC-SP interval is far shorter (7.8 against 69 packets here).
    assert!(
        first(&small) < first(&standard) / 5.0,
        "{} vs {}",
        first(&small),
        first(&standard)
    );
}
