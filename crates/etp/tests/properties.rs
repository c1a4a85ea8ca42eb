//! Property tests: fragmentation and reassembly, and the reliability mechanisms, under random
//! loss and reordering on the in-process link.

use core::time::Duration;

use etp::descriptor::{
    Descriptor, OrderingKind, RateControlKind, RateValue, ReliabilityKind, StreamDescriptor,
};
use etp::harness::{Harness, LinkConfig};
use etp::{MessageOptions, Policy};
use proptest::prelude::*;

fn content(index: u32, length: usize) -> Vec<u8> {
    (0..length)
        .map(|position| (index as usize * 31 + position * 7) as u8)
        .collect()
}

/// Messages received (index, contents) and the sender's counters.
type Outcome = (Vec<(u32, Vec<u8>)>, etp::ConnectionStats);

fn run(
    reliability: ReliabilityKind,
    max_retransmissions: Option<u32>,
    ordering: OrderingKind,
    sizes: &[usize],
    loss: f64,
    reorder: f64,
    seed: u64,
) -> Option<Outcome> {
    let mut stream = StreamDescriptor::new(0);
    stream.reliability = reliability;
    stream.max_retransmissions = max_retransmissions;
    stream.ordering = ordering;
    let mut descriptor = Descriptor::single_stream(RateControlKind::Fixed);
    descriptor.fixed_rate = Some(RateValue::Text("8Mbps".into()));
    descriptor.streams = vec![stream];
    let link = LinkConfig {
        loss,
        reorder,
        reorder_delay: Duration::from_millis(15),
        ..LinkConfig::delay(Duration::from_millis(10))
    };
    let mut harness = Harness::new(descriptor, Policy::permissive(), link.clone(), link, seed)
        .expect("valid set-up");
    // The handshake itself may need retries under heavy loss.
    harness.run_for(Duration::from_secs(3));
    if harness.client().state() != etp::State::Established {
        // Five connection requests all lost: a rare draw at high loss, not a property failure.
        return None;
    }
    let now = harness.now();
    // Each message starts with its index so the receiver can tell which one it is.
    for (index, size) in sizes.iter().enumerate() {
        let mut data = (index as u32).to_be_bytes().to_vec();
        data.extend(content(index as u32, *size));
        harness
            .client()
            .send(now, 0, data, MessageOptions::default())
            .unwrap();
    }
    harness.run_for(Duration::from_secs(20));
    let mut received = Vec::new();
    if let Some(server) = harness.server() {
        while let Some(message) = server.recv() {
            let index = u32::from_be_bytes([
                message.data[0],
                message.data[1],
                message.data[2],
                message.data[3],
            ]);
            received.push((index, message.data[4..].to_vec()));
        }
    }
    assert_eq!(
        harness.stalls(),
        0,
        "the ends must never spin at one instant"
    );
    let stats = harness.client().stats();
    Some((received, stats))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn full_reliability_reassembles_every_message_exactly_once(
        sizes in proptest::collection::vec(0usize..6000, 1..25),
        loss in 0.0f64..0.25,
        reorder in 0.0f64..0.3,
        ordered: bool,
        seed: u64,
    ) {
        let ordering = if ordered { OrderingKind::Full } else { OrderingKind::None };
        let outcome = run(ReliabilityKind::Full, None, ordering, &sizes, loss, reorder, seed);
        prop_assume!(outcome.is_some());
        let (received, _) = outcome.unwrap();
        let mut indices: Vec<u32> = received.iter().map(|(index, _)| *index).collect();
        if ordered {
            prop_assert_eq!(&indices, &(0..sizes.len() as u32).collect::<Vec<_>>());
        } else {
            indices.sort_unstable();
            prop_assert_eq!(&indices, &(0..sizes.len() as u32).collect::<Vec<_>>());
        }
        for (index, data) in &received {
            prop_assert_eq!(data, &content(*index, sizes[*index as usize]));
        }
    }

    #[test]
    fn unreliable_and_partial_deliver_intact_subsets_without_duplicates(
        sizes in proptest::collection::vec(0usize..6000, 1..25),
        loss in 0.0f64..0.25,
        reorder in 0.0f64..0.3,
        max_retransmissions in proptest::option::of(0u32..3),
        seed: u64,
    ) {
        let reliability = if max_retransmissions.is_some() { ReliabilityKind::Partial } else { ReliabilityKind::None };
        let outcome = run(reliability, max_retransmissions, OrderingKind::Partial, &sizes, loss, reorder, seed);
        prop_assume!(outcome.is_some());
        let (received, stats) = outcome.unwrap();
        let indices: Vec<u32> = received.iter().map(|(index, _)| *index).collect();
        prop_assert!(indices.windows(2).all(|pair| pair[0] < pair[1]), "in order, no duplicates: {:?}", indices);
        for (index, data) in &received {
            prop_assert_eq!(data, &content(*index, sizes[*index as usize]));
        }
        let total = stats.total();
        if max_retransmissions.unwrap_or(0) == 0 {
            prop_assert_eq!(total.fragments_retransmitted, 0);
        }
        // Every message is accounted for at the sender.
        prop_assert_eq!(total.messages_acked + total.messages_abandoned, sizes.len() as u64, "{:?}", stats);
        prop_assert!(received.len() as u64 >= total.messages_acked);
    }
}
