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

fn connected(descriptor: Descriptor, forward: LinkConfig, backward: LinkConfig, seed: u64) -> Harness {
    let mut harness = Harness::new(descriptor, Policy::permissive(), forward, backward, seed).unwrap();
    harness.run_for(Duration::from_millis(500));
    assert!(harness.client_events().contains(&Event::Connected), "{:?}", harness.client_events());
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
        harness.client().send(now, 0, message(index, length), MessageOptions::default()).unwrap();
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
    assert!(stats.data_packets_lost > 0, "the link must have lost packets");
    assert!(stats.total().fragments_retransmitted > 0);
    assert_eq!(harness.client().buffered_bytes(), 0);
}
