//! A small discrete-event test network: TCP flows sharing one DropTail bottleneck.
//!
//! Forward path: every sender feeds one FIFO queue (limit in packets, not counting the packet
//! being transmitted, as in ns-2) served at `rate_bps`, then `delay` of propagation to the
//! sinks. Optional Bernoulli loss (seeded ChaCha8) drops packets before the queue, and chosen
//! first transmissions can be dropped deterministically. Reverse path: ACKs take `delay`,
//! without queueing or loss.
//!
//! Integer time throughout; events at the same instant keep their insertion order.

#![allow(dead_code)]

use core::cmp::{Ordering, Reverse};
use core::time::Duration;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tfrc_proto::Instant;
use tfrc_tcp::{Ack, Segment, SenderConfig, SinkConfig, TcpSender, TcpSink, Variant};

/// The bottleneck.
#[derive(Clone, Debug)]
pub struct LinkConfig {
    /// Transmission rate in bits per second.
    pub rate_bps: u64,
    /// One-way propagation delay (the same for data and ACKs).
    pub delay: Duration,
    /// Packets that may wait in the queue.
    pub queue_limit: usize,
    /// Bernoulli drop probability applied to every data packet before the queue.
    pub loss_rate: f64,
}

impl LinkConfig {
    /// Round-trip time without queueing for a full-sized data packet and a 40-byte ACK.
    pub fn base_rtt(&self, wire_bytes: u32) -> Duration {
        2 * self.delay + self.transmission_time(wire_bytes)
    }

    /// Time to put `bytes` on the wire.
    pub fn transmission_time(&self, bytes: u32) -> Duration {
        let nanos = u128::from(bytes) * 8 * 1_000_000_000 / u128::from(self.rate_bps);
        Duration::from_nanos(nanos as u64)
    }
}

/// Counters of the bottleneck.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinkStats {
    /// Data packets offered to the link (before any drop).
    pub offered_packets: u64,
    /// Packets fully transmitted.
    pub transmitted_packets: u64,
    /// Wire bytes fully transmitted.
    pub transmitted_bytes: u64,
    /// Drops because the queue was full.
    pub queue_drops: u64,
    /// Bernoulli drops.
    pub random_drops: u64,
    /// Deterministic drops of chosen first transmissions.
    pub forced_drops: u64,
}

/// One TCP connection.
pub struct Flow {
    pub sender: TcpSender,
    pub sink: TcpSink,
    pub start: Instant,
    /// Sequence numbers whose first transmission is dropped.
    pub drop_first_transmission: BTreeSet<u64>,
    /// Sequence numbers of retransmissions offered to the link, in order.
    pub retransmissions: Vec<u64>,
}

enum EventKind {
    TransmissionDone,
    SegmentArrival(usize, Segment),
    AckArrival(usize, Ack),
}

struct Event {
    time: Instant,
    order: u64,
    kind: EventKind,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.order) == (other.time, other.order)
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.time, self.order).cmp(&(other.time, other.order))
    }
}

/// Flows over one bottleneck.
pub struct Network {
    pub now: Instant,
    pub link: LinkConfig,
    pub flows: Vec<Flow>,
    pub stats: LinkStats,
    queue: VecDeque<(usize, Segment)>,
    in_service: Option<(usize, Segment)>,
    events: BinaryHeap<Reverse<Event>>,
    next_order: u64,
    rng: ChaCha8Rng,
}

impl Network {
    pub fn new(link: LinkConfig, seed: u64) -> Self {
        Self {
            now: Instant::ZERO,
            link,
            flows: Vec::new(),
            stats: LinkStats::default(),
            queue: VecDeque::new(),
            in_service: None,
            events: BinaryHeap::new(),
            next_order: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// Adds a flow starting at `start`; returns its index.
    pub fn add_flow(&mut self, sender: TcpSender, sink: TcpSink, start: Instant) -> usize {
        self.flows.push(Flow {
            sender,
            sink,
            start,
            drop_first_transmission: BTreeSet::new(),
            retransmissions: Vec::new(),
        });
        self.flows.len() - 1
    }

    /// Adds a flow with the given sender config and the sink ns-2 pairs with its variant.
    pub fn add_tcp(&mut self, config: SenderConfig, start: Instant) -> usize {
        let sink = SinkConfig::for_variant(config.variant);
        self.add_flow(
            TcpSender::new(config).unwrap(),
            TcpSink::new(sink).unwrap(),
            start,
        )
    }

    /// Adds a default bulk flow of `variant`.
    pub fn add_bulk(&mut self, variant: Variant, start: Instant) -> usize {
        self.add_tcp(SenderConfig::new(variant), start)
    }

    /// Runs until `end`, calling `observe(now, flow, sender)` after every ACK a sender takes.
    pub fn run_until(&mut self, end: Instant, mut observe: impl FnMut(Instant, usize, &TcpSender)) {
        loop {
            self.pump();
            let Some(next) = self.next_event_time() else {
                break;
            };
            if next > end {
                break;
            }
            self.now = self.now.max(next);
            self.process_due(&mut observe);
        }
        self.now = self.now.max(end);
    }

    /// Runs until every flow is finished or `limit`; returns whether all finished.
    pub fn run_until_finished(&mut self, limit: Instant) -> bool {
        let step = Duration::from_millis(100);
        while self.now < limit {
            if self.flows.iter().all(|flow| flow.sender.is_finished()) {
                return true;
            }
            let end = (self.now + step).min(limit);
            self.run_until(end, |_, _, _| {});
        }
        self.flows.iter().all(|flow| flow.sender.is_finished())
    }

    fn schedule(&mut self, time: Instant, kind: EventKind) {
        let order = self.next_order;
        self.next_order += 1;
        self.events.push(Reverse(Event { time, order, kind }));
    }

    /// Collects what senders and sinks want to send now.
    fn pump(&mut self) {
        let now = self.now;
        let mut segments = Vec::new();
        let mut acks = Vec::new();
        for (index, flow) in self.flows.iter_mut().enumerate() {
            if flow.start > now {
                continue;
            }
            while let Some(segment) = flow.sender.poll_transmit(now) {
                segments.push((index, segment));
            }
            while let Some(ack) = flow.sink.poll_ack() {
                acks.push((index, ack));
            }
        }
        for (index, segment) in segments {
            self.offer(index, segment);
        }
        let delay = self.link.delay;
        for (index, ack) in acks {
            self.schedule(now + delay, EventKind::AckArrival(index, ack));
        }
    }

    fn next_event_time(&self) -> Option<Instant> {
        let mut next = self.events.peek().map(|Reverse(event)| event.time);
        let mut consider = |time: Option<Instant>| {
            if let Some(time) = time {
                next = Some(next.map_or(time, |current| current.min(time)));
            }
        };
        for flow in &self.flows {
            if flow.start > self.now {
                consider(Some(flow.start));
            } else {
                consider(flow.sender.poll_timeout());
                consider(flow.sink.poll_timeout());
            }
        }
        next
    }

    fn process_due(&mut self, observe: &mut impl FnMut(Instant, usize, &TcpSender)) {
        let now = self.now;
        for flow in &mut self.flows {
            if flow.start > now {
                continue;
            }
            if flow.sender.poll_timeout().is_some_and(|time| time <= now) {
                flow.sender.handle_timeout(now);
            }
            if flow.sink.poll_timeout().is_some_and(|time| time <= now) {
                flow.sink.handle_timeout(now);
            }
        }
        let due = self
            .events
            .peek()
            .is_some_and(|Reverse(event)| event.time <= now);
        if !due {
            return;
        }
        let Some(Reverse(event)) = self.events.pop() else {
            return;
        };
        match event.kind {
            EventKind::TransmissionDone => {
                if let Some((index, segment)) = self.in_service.take() {
                    self.stats.transmitted_packets += 1;
                    self.stats.transmitted_bytes += u64::from(segment.wire_size());
                    let arrival = now + self.link.delay;
                    self.schedule(arrival, EventKind::SegmentArrival(index, segment));
                }
                if let Some(next) = self.queue.pop_front() {
                    self.serve(next);
                }
            }
            EventKind::SegmentArrival(index, segment) => {
                self.flows[index]
                    .sink
                    .handle_segment(now, &segment)
                    .expect("sink accepts the segment");
            }
            EventKind::AckArrival(index, ack) => {
                let sender = &mut self.flows[index].sender;
                sender
                    .handle_ack(now, &ack)
                    .expect("sender accepts the ACK");
                observe(now, index, sender);
            }
        }
    }

    /// A data packet reaches the bottleneck.
    fn offer(&mut self, index: usize, segment: Segment) {
        self.stats.offered_packets += 1;
        let flow = &mut self.flows[index];
        if segment.retransmission {
            flow.retransmissions.push(segment.sequence);
        } else if flow.drop_first_transmission.remove(&segment.sequence) {
            self.stats.forced_drops += 1;
            return;
        }
        if self.link.loss_rate > 0.0 && uniform(&mut self.rng) < self.link.loss_rate {
            self.stats.random_drops += 1;
            return;
        }
        if self.in_service.is_none() {
            self.serve((index, segment));
        } else if self.queue.len() >= self.link.queue_limit {
            self.stats.queue_drops += 1;
        } else {
            self.queue.push_back((index, segment));
        }
    }

    fn serve(&mut self, packet: (usize, Segment)) {
        let done = self.now + self.link.transmission_time(packet.1.wire_size());
        self.in_service = Some(packet);
        self.schedule(done, EventKind::TransmissionDone);
    }
}

/// A uniform number in [0, 1) from 53 random bits.
fn uniform(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Jain's fairness index of `shares`: (Σx)² / (n·Σx²), 1 for equal shares.
pub fn jain_index(shares: &[f64]) -> f64 {
    let sum: f64 = shares.iter().sum();
    let squares: f64 = shares.iter().map(|share| share * share).sum();
    sum * sum / (shares.len() as f64 * squares)
}

/// Seconds in a duration, for rate arithmetic.
pub fn seconds(duration: Duration) -> f64 {
    tfrc_proto::time::secs(duration)
}
