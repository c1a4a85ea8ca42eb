//! Semantics of the mechanisms under loss, over the deterministic in-process link.

use core::time::Duration;

use etp::descriptor::{
    Descriptor, DurationValue, OrderingKind, RateControlKind, RateValue, ReliabilityKind,
    StreamDescriptor,
};
use etp::harness::{Harness, LinkConfig};
use etp::{Event, MessageOptions, Policy};

fn lossy(delay_ms: u64, loss: f64) -> LinkConfig {
    LinkConfig {
        loss,
        reorder: 0.05,
        reorder_delay: Duration::from_millis(7),
        ..LinkConfig::delay(Duration::from_millis(delay_ms))
    }
}

fn descriptor(rate: RateControlKind, streams: Vec<StreamDescriptor>) -> Descriptor {
    let mut descriptor = Descriptor::single_stream(rate);
    descriptor.streams = streams;
    if rate == RateControlKind::Fixed {
        descriptor.fixed_rate = Some(RateValue::Text("4Mbps".into()));
    }
    descriptor
}

fn connected(
    descriptor: Descriptor,
    forward: LinkConfig,
    backward: LinkConfig,
    seed: u64,
) -> Harness {
    let mut harness =
        Harness::new(descriptor, Policy::permissive(), forward, backward, seed).unwrap();
    harness.run_for(Duration::from_millis(500));
    assert!(
        harness.client_events().contains(&Event::Connected),
        "{:?}",
        harness.client_events()
    );
    assert!(harness.server().is_some());
    harness
}

/// A message of `length` bytes whose first bytes encode `index`.
fn message(index: u32, length: usize) -> Vec<u8> {
    let mut data = vec![(index % 251) as u8; length.max(4)];
    data[..4].copy_from_slice(&index.to_be_bytes());
    data
}

fn index_of(data: &[u8]) -> u32 {
    u32::from_be_bytes([data[0], data[1], data[2], data[3]])
}

#[test]
fn full_reliability_delivers_every_message_once_and_in_order() {
    let stream = StreamDescriptor::new(0);
    let mut harness = connected(
        descriptor(RateControlKind::Fixed, vec![stream]),
        lossy(20, 0.05),
        lossy(20, 0.05),
        1,
    );
    let count = 300u32;
    let mut received = Vec::new();
    for index in 0..count {
        // Sizes from one byte to several packets.
        let length = 1 + (index as usize * 997) % 5000;
        let now = harness.now();
        harness
            .client()
            .send(now, 0, message(index, length), MessageOptions::default())
            .unwrap();
        harness.run_for(Duration::from_millis(5));
        while let Some(message) = harness.server().unwrap().recv() {
            received.push(index_of(&message.data));
        }
    }
    harness.run_for(Duration::from_secs(5));
    while let Some(message) = harness.server().unwrap().recv() {
        received.push(index_of(&message.data));
    }
    assert_eq!(received, (0..count).collect::<Vec<_>>());
    let stats = harness.client().stats();
    assert!(
        stats.data_packets_lost > 0,
        "the link must have lost packets"
    );
    assert!(stats.total().fragments_retransmitted > 0);
    assert_eq!(harness.client().buffered_bytes(), 0);
}

fn drain(harness: &mut Harness, into: &mut Vec<etp::Message>) {
    while let Some(message) = harness.server().unwrap().recv() {
        into.push(message);
    }
}

#[test]
fn partial_reliability_with_zero_retransmissions_retransmits_nothing() {
    let mut stream = StreamDescriptor::new(0);
    stream.reliability = ReliabilityKind::Partial;
    stream.max_retransmissions = Some(0);
    stream.ordering = OrderingKind::Partial;
    let mut harness = connected(
        descriptor(RateControlKind::Fixed, vec![stream]),
        lossy(20, 0.1),
        lossy(20, 0.0),
        2,
    );
    let count = 400u32;
    let mut received = Vec::new();
    for index in 0..count {
        let now = harness.now();
        harness
            .client()
            .send(now, 0, message(index, 600), MessageOptions::default())
            .unwrap();
        harness.run_for(Duration::from_millis(4));
        drain(&mut harness, &mut received);
    }
    harness.run_for(Duration::from_secs(3));
    drain(&mut harness, &mut received);
    let client = harness.client().stats();
    assert_eq!(client.total().fragments_retransmitted, 0);
    assert!(client.data_packets_lost > 0);
    let indices: Vec<u32> = received.iter().map(|m| index_of(&m.data)).collect();
    // In order, no duplicates, some missing, and each loss accounted for.
    assert!(indices.windows(2).all(|pair| pair[0] < pair[1]));
    assert!((indices.len() as u32) < count);
    let abandoned = client.total().messages_abandoned;
    assert_eq!(indices.len() as u64 + abandoned, u64::from(count));
    assert_eq!(
        harness.server().unwrap().stats().messages_missing,
        abandoned
    );
}

#[test]
fn deadlines_drop_what_is_late_and_nothing_else() {
    // 50 ms one way, no loss: a 30 ms deadline can never be met, an 80 ms one always is.
    let mut tight = StreamDescriptor::new(0);
    tight.deadline = Some(DurationValue::millis(30));
    tight.ordering = OrderingKind::Partial;
    let mut loose = StreamDescriptor::new(1);
    loose.deadline = Some(DurationValue::millis(80));
    loose.ordering = OrderingKind::Partial;
    let mut harness = connected(
        descriptor(RateControlKind::Fixed, vec![tight, loose]),
        LinkConfig::delay(Duration::from_millis(50)),
        LinkConfig::delay(Duration::from_millis(50)),
        3,
    );
    let mut received = Vec::new();
    let mut sent_at = std::collections::HashMap::new();
    for index in 0..100u32 {
        let now = harness.now();
        for stream in [0u16, 1] {
            let key = index * 2 + u32::from(stream);
            harness
                .client()
                .send(now, stream, message(key, 300), MessageOptions::default())
                .unwrap();
            sent_at.insert(key, now);
        }
        harness.run_for(Duration::from_millis(10));
        drain(&mut harness, &mut received);
    }
    harness.run_for(Duration::from_secs(1));
    drain(&mut harness, &mut received);
    let server = harness.server().unwrap().stats();
    assert_eq!(server.streams[&0].messages_delivered, 0);
    assert_eq!(server.streams[&0].messages_late_at_receiver, 100);
    assert_eq!(server.streams[&1].messages_delivered, 100);
    assert_eq!(server.streams[&1].messages_late_at_receiver, 0);
    assert!(received.iter().all(|m| m.stream == 1));

    // With loss and full reliability, every message is either delivered within its deadline or
    // counted late (at the sender or at the receiver) — none vanishes, none is late yet delivered.
    let mut stream = StreamDescriptor::new(0);
    stream.deadline = Some(DurationValue::millis(90));
    stream.ordering = OrderingKind::None;
    let mut harness = connected(
        descriptor(RateControlKind::Fixed, vec![stream]),
        lossy(30, 0.08),
        lossy(30, 0.0),
        4,
    );
    let mut received = Vec::new();
    let mut sent_at = std::collections::HashMap::new();
    let count = 300u32;
    for index in 0..count {
        let now = harness.now();
        harness
            .client()
            .send(now, 0, message(index, 2500), MessageOptions::default())
            .unwrap();
        sent_at.insert(index, now);
        harness.run_for(Duration::from_millis(8));
        drain(&mut harness, &mut received);
    }
    harness.run_for(Duration::from_secs(1));
    drain(&mut harness, &mut received);
    for message in &received {
        let latency = message.completed_at - sent_at[&index_of(&message.data)];
        assert!(
            latency <= Duration::from_millis(90),
            "delivered after {latency:?}"
        );
    }
    // No end asked to act at an instant and then did nothing (a FORWARD due but not sent).
    assert_eq!(harness.stalls(), 0);
    let client = harness.client().stats().total();
    let server = harness.server().unwrap().stats().total();
    assert!(server.messages_late_at_receiver + client.messages_late_at_sender > 0);
    assert_eq!(
        client.messages_abandoned, 0,
        "full reliability abandons nothing"
    );
    // At the receiver: delivered, complete but late, incomplete at the deadline, or never seen
    // (dropped late at the sender before any byte arrived).
    let missing = harness.server().unwrap().stats().messages_missing;
    assert_eq!(
        received.len() as u64
            + server.messages_late_at_receiver
            + server.messages_expired_incomplete
            + missing,
        u64::from(count),
        "client {client:?} server {server:?}"
    );
    assert!(missing <= client.messages_late_at_sender);
}

#[test]
fn streams_keep_their_priorities_under_a_rate_limit() {
    // Fixed 1 Mb/s; stream 0 (priority 0) offers 0.4 Mb/s, stream 1 (priority 3) 2 Mb/s.
    let mut urgent = StreamDescriptor::new(0);
    urgent.ordering = OrderingKind::Partial;
    let mut bulk = StreamDescriptor::new(1);
    bulk.ordering = OrderingKind::Partial;
    bulk.priority = 3;
    let mut descriptor = descriptor(RateControlKind::Fixed, vec![urgent, bulk]);
    descriptor.fixed_rate = Some(RateValue::Text("1Mbps".into()));
    descriptor.send_buffer = 200_000;
    descriptor.max_message_size = 10_000;
    let mut harness = connected(
        descriptor,
        LinkConfig::delay(Duration::from_millis(10)),
        LinkConfig::delay(Duration::from_millis(10)),
        5,
    );
    let mut received = Vec::new();
    let mut sent_at = std::collections::HashMap::new();
    for tick in 0..1000u32 {
        let now = harness.now();
        // Every 10 ms: 500 bytes urgent (0.4 Mb/s), 2500 bytes bulk (2 Mb/s).
        let _ = harness
            .client()
            .send(now, 0, message(tick, 500), MessageOptions::default());
        sent_at.insert(tick, now);
        let _ = harness
            .client()
            .send(now, 1, message(tick, 2500), MessageOptions::default());
        harness.run_for(Duration::from_millis(10));
        drain(&mut harness, &mut received);
    }
    harness.run_for(Duration::from_millis(100));
    drain(&mut harness, &mut received);
    let server = harness.server().unwrap().stats();
    let urgent_bytes = server.streams[&0].bytes_delivered as f64;
    let bulk_bytes = server.streams[&1].bytes_delivered as f64;
    let seconds = 10.0;
    // The urgent stream gets all it offers, the bulk one the rest of the 1 Mb/s.
    assert_eq!(server.streams[&0].messages_delivered, 1000);
    assert!((urgent_bytes * 8.0 / seconds - 400_000.0).abs() < 1.0);
    let bulk_rate = bulk_bytes * 8.0 / seconds;
    assert!(
        bulk_rate > 450_000.0 && bulk_rate < 620_000.0,
        "bulk {bulk_rate}"
    );
    // And its messages do not wait behind the bulk ones.
    let worst = received
        .iter()
        .filter(|m| m.stream == 0)
        .map(|m| m.completed_at - sent_at[&index_of(&m.data)])
        .max()
        .unwrap();
    assert!(worst < Duration::from_millis(40), "urgent waited {worst:?}");
}

#[test]
fn reconfiguring_tfrc_to_gtfrc_raises_the_rate_floor_without_reconnecting() {
    let mut stream = StreamDescriptor::new(0);
    stream.reliability = ReliabilityKind::None;
    stream.ordering = OrderingKind::None;
    let tfrc = descriptor(RateControlKind::Tfrc, vec![stream]);
    let link = LinkConfig {
        loss: 0.03,
        ..LinkConfig::delay(Duration::from_millis(50))
    };
    let mut harness = connected(
        tfrc.clone(),
        link.clone(),
        LinkConfig::delay(Duration::from_millis(50)),
        6,
    );
    let connection_id = harness.client().connection_id();
    let greedy = |harness: &mut Harness, seconds: u64| {
        let start = harness.server().unwrap().stats().total().bytes_delivered;
        for _ in 0..seconds * 100 {
            let now = harness.now();
            while harness.client().buffered_bytes() < 50_000 {
                harness
                    .client()
                    .send(now, 0, vec![7u8; 1000], MessageOptions::default())
                    .unwrap();
            }
            harness.run_for(Duration::from_millis(10));
            while harness.server().unwrap().recv().is_some() {}
        }
        let end = harness.server().unwrap().stats().total().bytes_delivered;
        (end - start) as f64 * 8.0 / seconds as f64
    };
    greedy(&mut harness, 10);
    let tfrc_rate = greedy(&mut harness, 10);
    let mut gtfrc = tfrc.clone();
    gtfrc.rate_control = RateControlKind::Gtfrc;
    gtfrc.target_rate = Some(RateValue::Text("1.5Mbps".into()));
    let now = harness.now();
    harness.client().reconfigure(now, gtfrc).unwrap();
    // The request is acknowledged within a few round trips; it waits behind the data already
    // admitted by TFRC's rate (at 3 % loss, a few hundred kb/s), so allow up to 5 s.
    let mut waited = Duration::ZERO;
    while waited < Duration::from_secs(5)
        && !harness
            .client_events()
            .iter()
            .any(|event| matches!(event, Event::Reconfigured { by_peer: false, .. }))
    {
        harness.run_for(Duration::from_millis(50));
        waited += Duration::from_millis(50);
    }
    println!("TFRC {tfrc_rate:.0} b/s; reconfigured after {waited:?}");
    assert!(
        waited < Duration::from_secs(5),
        "no Reconfigured event within 5 s"
    );
    let gtfrc_rate = greedy(&mut harness, 10);
    let stats = harness.client().stats();
    assert_eq!(stats.rate_control, Some(RateControlKind::Gtfrc));
    assert!(stats.sending_rate.unwrap() >= 1.5e6 / 8.0);
    assert!(
        tfrc_rate < 1.2e6,
        "TFRC alone should be below the floor, got {tfrc_rate}"
    );
    // The floor counts headers; 3 % of the packets are lost on the way.
    assert!(
        gtfrc_rate > 1.5e6 * 0.8,
        "gTFRC delivered {gtfrc_rate} bit/s"
    );
    assert!(gtfrc_rate > 2.0 * tfrc_rate);
    // Same connection, one handshake.
    assert_eq!(harness.client().connection_id(), connection_id);
    assert_eq!(stats.epoch, 0);
    let connects = harness
        .client_events()
        .iter()
        .filter(|e| **e == Event::Connected)
        .count();
    assert_eq!(connects, 1);
}

#[test]
fn tfrc_sp_sends_small_packets_at_most_every_10_ms_and_both_ends_follow_rfc_4828() {
    // A VoIP-like session: 200-byte datagrams, 20 ms frames of 100 bytes, over a 100 ms RTT.
    // RFC 4828 §3: "TFRC-SP enforces a Min Interval between packets of 10 ms".
    let text = r#"
        rate_control = "tfrc-sp"
        packet_size = 200
        [[stream]]
        id = 0
        reliability = "none"
        ordering = "none"
        deadline = "150ms"
    "#;
    let descriptor = Descriptor::from_toml(text).expect("tfrc-sp is a rate control");
    assert_eq!(descriptor.rate_control, RateControlKind::TfrcSp);
    assert_eq!(RateControlKind::TfrcSp.name(), "tfrc-sp");
    let mut harness = connected(
        descriptor,
        LinkConfig {
            loss: 0.01,
            ..LinkConfig::delay(Duration::from_millis(50))
        },
        LinkConfig::delay(Duration::from_millis(50)),
        11,
    );
    assert_eq!(
        harness.server().unwrap().descriptor().rate_control,
        RateControlKind::TfrcSp
    );
    // Greedy for 20 s: messages of 100 bytes, always some waiting.
    let sent_before = harness.client().stats().data_packets_sent;
    let start = harness.now();
    for _ in 0..2000 {
        let now = harness.now();
        while harness.client().unsent_bytes() < 2_000 {
            harness
                .client()
                .send(now, 0, vec![1u8; 100], MessageOptions::default())
                .unwrap();
        }
        harness.run_for(Duration::from_millis(10));
        while harness.server().unwrap().recv().is_some() {}
    }
    let seconds = (harness.now() - start).as_secs_f64();
    let packets = harness.client().stats().data_packets_sent - sent_before;
    // At most 100 packets a second (a few timer slack packets aside), whatever the equation.
    assert!(
        (packets as f64) <= 100.0 * seconds * 1.02,
        "{packets} packets in {seconds} s"
    );
    // The codec-facing rate is the same cap: at most one 200-byte datagram's fragment per 10 ms.
    let sendable = harness.client().sendable_rate().unwrap();
    let fragment = 200 - 22 - 32 - 28;
    assert!(
        sendable <= fragment as f64 * 100.0 * 1.001,
        "{sendable} bytes/s"
    );
    assert!(harness.client().stats().loss_event_rate > 0.0);
    assert_eq!(harness.stalls(), 0);
}

#[test]
fn forward_frames_never_starve_messages_that_fill_a_packet() {
    // 50-byte messages in datagrams that hold exactly one (50 + 28 + 22 + 32 = 132 bytes), a
    // tight deadline and losses: messages are abandoned, FORWARD frames are due, and yet
    // messages keep flowing. (A FORWARD repeated in every packet until acknowledged once left
    // no room for any message, and the connection sent only FORWARDs.)
    let mut stream = StreamDescriptor::new(0);
    stream.reliability = ReliabilityKind::None;
    stream.ordering = OrderingKind::None;
    stream.deadline = Some(DurationValue::millis(120));
    let mut descriptor = descriptor(RateControlKind::Fixed, vec![stream]);
    descriptor.packet_size = 132;
    descriptor.fixed_rate = Some(RateValue::Text("60kbps".into()));
    let mut harness = connected(
        descriptor,
        lossy(50, 0.05),
        LinkConfig::delay(Duration::from_millis(50)),
        12,
    );
    let mut delivered = 0;
    for _ in 0..1000 {
        let now = harness.now();
        harness
            .client()
            .send(now, 0, vec![5u8; 50], MessageOptions::default())
            .unwrap();
        harness.run_for(Duration::from_millis(20));
        while harness.server().unwrap().recv().is_some() {
            delivered += 1;
        }
    }
    let client = harness.client().stats();
    // 5 % loss: about 950 of 1000 arrive; each takes one packet (a split costs a second).
    assert!(delivered >= 900, "{delivered} delivered, {client:?}");
    assert!(client.data_packets_sent <= 1100, "{client:?}");
    assert_eq!(harness.stalls(), 0);
}

#[test]
fn the_tfrc_rate_that_carries_a_message_rate_counts_the_headers() {
    // A 132-byte datagram: 22 (ETP data) + 32 (TFRC) + 28 (fragment) + 50 bytes of message.
    assert_eq!(etp::fragment_room(132), 50);
    // TFRC's s is 78 bytes: 50 bytes/packet of audio at 2500 bytes/s is 50 packets/s, which
    // TFRC counts as 50 · 78 = 3900 bytes/s.
    assert!((etp::tfrc_rate_carrying(132, 2500.0) - 3900.0).abs() < 1e-9);
    // Too small for any message: no division by zero.
    assert_eq!(etp::fragment_room(60), 0);
    assert!(etp::tfrc_rate_carrying(60, 1000.0).is_finite());
}
