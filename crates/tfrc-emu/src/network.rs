//! A set of emulated link directions and the packets crossing them.
//!
//! The network elements ([`LinkDirection`]) see only [`PacketMeta`]; the bodies wait here,
//! keyed by [`PacketMeta::id`], together with the route (a list of link-direction indices) and
//! where the packet goes once it leaves the last one. The driver calls, with wall-clock time
//! mapped onto [`Instant`]:
//! 1. [`Network::send`] for each packet read from a socket or TUN device;
//! 2. [`Network::poll_timeout`] for when to wake up;
//! 3. [`Network::deliver_due`] at or after that time, which moves packets from hop to hop and
//!    hands out those that left their last hop.
//!
//! A packet leaving hop `i` at time `t` enters hop `i + 1` at the time of the call that
//! observes it (at most the driver's wake-up lateness after `t`).

use std::collections::HashMap;
use std::sync::Arc;

use tfrc_proto::Instant;
use tfrc_sim::{Arrival, FlowId, LinkDirection, LinkSample, PacketMeta};

/// A packet waiting inside the network.
#[derive(Debug)]
struct InFlight<D> {
    body: Vec<u8>,
    route: Arc<[usize]>,
    hop: usize,
    destination: D,
}

/// What happened to a packet given to [`Network::send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOutcome {
    /// The packet entered its first link direction (or, with an empty route, is due at once).
    Accepted,
    /// The first link direction dropped it.
    Dropped,
}

/// A packet that has crossed its whole route.
#[derive(Debug)]
pub struct Delivered<D> {
    /// The packet's metadata as the last hop left it (colour, CE mark).
    pub meta: PacketMeta,
    /// The body given to [`Network::send`].
    pub body: Vec<u8>,
    /// The destination given to [`Network::send`].
    pub destination: D,
}

/// Link directions plus the bodies of the packets inside them.
#[derive(Debug)]
pub struct Network<D> {
    links: Vec<LinkDirection>,
    packets: HashMap<u64, InFlight<D>>,
    /// Packets with an empty route, delivered at the next [`Network::deliver_due`].
    immediate: Vec<Delivered<D>>,
    next_id: u64,
    /// Packets dropped at an intermediate hop (the first hop's drops are reported by `send`).
    pub dropped_inside: u64,
}

impl<D> Network<D> {
    /// A network of these link directions (indices are the positions in `links`).
    pub fn new(links: Vec<LinkDirection>) -> Self {
        Network {
            links,
            packets: HashMap::new(),
            immediate: Vec::new(),
            next_id: 1,
            dropped_inside: 0,
        }
    }

    /// The link directions.
    pub fn links(&self) -> &[LinkDirection] {
        &self.links
    }

    /// Snapshots of every link direction, in order.
    pub fn samples(&self) -> Vec<LinkSample> {
        self.links.iter().map(LinkDirection::sample).collect()
    }

    /// Packets currently inside the network.
    pub fn packets_inside(&self) -> usize {
        self.packets.len() + self.immediate.len()
    }

    /// A packet enters the network at `now` along `route`; `size_bytes` is what the links count
    /// (the IP packet size); `ecn` is the ECN field of its IP header (RFC 3168: 0 not-ECT, 1
    /// ECT(1), 2 ECT(0), 3 CE): an ECN-capable packet may be marked CE by a RED or RIO queue with
    /// `ecn` instead of being dropped, and a CE packet stays CE ([`Delivered::meta`]`.ce`).
    #[allow(clippy::too_many_arguments)]
    pub fn send(
        &mut self,
        now: Instant,
        flow: FlowId,
        size_bytes: u32,
        ecn: u8,
        body: Vec<u8>,
        route: Arc<[usize]>,
        destination: D,
    ) -> SendOutcome {
        let id = self.next_id;
        self.next_id += 1;
        let mut meta = PacketMeta::new(id, flow, size_bytes.max(1));
        meta.set_ecn_field(ecn);
        let Some(&first) = route.first() else {
            self.immediate.push(Delivered {
                meta,
                body,
                destination,
            });
            return SendOutcome::Accepted;
        };
        match self.links[first].handle_arrival(now, meta) {
            Arrival::Accepted => {
                self.packets.insert(
                    id,
                    InFlight {
                        body,
                        route,
                        hop: 0,
                        destination,
                    },
                );
                SendOutcome::Accepted
            }
            Arrival::Dropped(_) => SendOutcome::Dropped,
        }
    }

    /// The earliest time at which [`Network::deliver_due`] has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.immediate.is_empty() {
            return Some(Instant::ZERO);
        }
        self.links
            .iter()
            .filter_map(LinkDirection::poll_timeout)
            .min()
    }

    /// Moves every packet due by `now` to its next hop, and appends to `out` those that left
    /// their last hop.
    pub fn deliver_due(&mut self, now: Instant, out: &mut Vec<Delivered<D>>) {
        out.append(&mut self.immediate);
        loop {
            let mut moved = false;
            for index in 0..self.links.len() {
                while let Some(meta) = self.links[index].poll_delivery(now) {
                    moved = true;
                    let Some(mut packet) = self.packets.remove(&meta.id) else {
                        continue;
                    };
                    packet.hop += 1;
                    match packet.route.get(packet.hop).copied() {
                        None => out.push(Delivered {
                            meta,
                            body: packet.body,
                            destination: packet.destination,
                        }),
                        Some(next) => {
                            if self.links[next].handle_arrival(now, meta).is_accepted() {
                                self.packets.insert(meta.id, packet);
                            } else {
                                self.dropped_inside += 1;
                            }
                        }
                    }
                }
            }
            if !moved {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;
    use tfrc_sim::{DropTail, Transmitter};

    fn link(rate: u64, delay_ms: u64) -> LinkDirection {
        LinkDirection::new(
            Transmitter::fixed_rate(rate).unwrap(),
            Duration::from_millis(delay_ms),
            Box::new(DropTail::new(50).unwrap()),
        )
    }

    #[test]
    fn a_packet_crosses_two_hops_with_both_delays() {
        // 1000 bytes: 8 ms at 1 Mb/s + 20 ms, then 0.8 ms at 10 Mb/s + 5 ms.
        let mut network = Network::new(vec![link(1_000_000, 20), link(10_000_000, 5)]);
        let route: Arc<[usize]> = Arc::from(vec![0, 1]);
        let outcome = network.send(Instant::ZERO, 1, 1000, 0, vec![7; 10], route, "b");
        assert_eq!(outcome, SendOutcome::Accepted);
        let mut out = Vec::new();
        let mut now = Instant::ZERO;
        while out.is_empty() {
            now = network.poll_timeout().expect("a packet is inside");
            network.deliver_due(now, &mut out);
        }
        assert_eq!(now, Instant::from_nanos(33_800_000));
        assert_eq!(out[0].body, vec![7; 10]);
        assert_eq!(out[0].destination, "b");
        assert_eq!(network.packets_inside(), 0);
        assert_eq!(network.poll_timeout(), None);
    }

    #[test]
    fn overflow_at_the_first_hop_is_reported() {
        let mut network = Network::new(vec![LinkDirection::new(
            Transmitter::fixed_rate(1_000_000).unwrap(),
            Duration::ZERO,
            Box::new(DropTail::new(2).unwrap()),
        )]);
        let route: Arc<[usize]> = Arc::from(vec![0]);
        let outcomes: Vec<SendOutcome> = (0..4)
            .map(|_| network.send(Instant::ZERO, 1, 1000, 0, Vec::new(), route.clone(), ()))
            .collect();
        // One in transmission, one waiting (ns-2's DropTail holds limit − 1), two dropped.
        assert_eq!(
            outcomes,
            [
                SendOutcome::Accepted,
                SendOutcome::Accepted,
                SendOutcome::Dropped,
                SendOutcome::Dropped
            ]
        );
        assert_eq!(network.packets_inside(), 2);
    }
}
