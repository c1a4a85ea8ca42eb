//! One direction of a link: markers → loss model → queue → transmitter → propagation delay.
//!
//! [`LinkDirection`] is sans-IO. The simulator and the real-time emulator drive it the same
//! way:
//! 1. [`LinkDirection::handle_arrival`] for each packet entering the link;
//! 2. [`LinkDirection::poll_timeout`] for when something next happens inside the link (a
//!    packet finishing serialization, a trace opportunity, a packet reaching the far end);
//! 3. at or after that time, [`LinkDirection::handle_timeout`], then
//!    [`LinkDirection::poll_delivery`] until it returns `None`.
//!
//! Calls may come late (a real-time driver wakes up after the deadline): every internal event
//! is processed at its own exact time, not at the time of the call. Calls at the same instant
//! may come in any order: an arrival first processes everything due at or before its time.

use core::time::Duration;
use std::collections::VecDeque;

use tfrc_proto::Instant;

use crate::error::{check_nonzero, ParameterError};
use crate::loss::{LossConfig, LossModel};
use crate::marker::{TokenBucketConfig, TokenBucketMarker};
use crate::packet::{Color, PacketMeta};
use crate::queue::{Enqueue, Queue, QueueConfig, QueueDrop};
use crate::rng::derive_seed;
use crate::trace::{DeliveryTrace, Opportunity, OpportunityUse, TRACE_OPPORTUNITY_BYTES};

/// How a link direction serializes packets.
#[derive(Debug, Clone)]
pub struct Transmitter {
    kind: TransmitterKind,
}

#[derive(Debug, Clone)]
enum TransmitterKind {
    FixedRate {
        bits_per_second: u64,
    },
    Trace {
        trace: DeliveryTrace,
        start: Instant,
        opportunity_use: OpportunityUse,
    },
}

impl Transmitter {
    /// A fixed-rate transmitter: a packet of `s` bytes takes `8·s / rate` seconds (rounded up
    /// to the nanosecond).
    pub fn fixed_rate(bits_per_second: u64) -> Result<Self, ParameterError> {
        check_nonzero("link", "rate", bits_per_second)?;
        Ok(Transmitter {
            kind: TransmitterKind::FixedRate { bits_per_second },
        })
    }

    /// A trace-driven transmitter whose trace time 0 is `start`, with Mahimahi's rule (each
    /// opportunity carries 1500 bytes that the queued packets share).
    pub fn trace(trace: DeliveryTrace, start: Instant) -> Self {
        Self::trace_with(trace, start, OpportunityUse::SharedBytes)
    }

    /// A transmitter driven by the Mahimahi trace in `path`, whose trace time `offset` is the
    /// link's time `start`: how the simulator, the emulator and the testbed all build one.
    pub fn trace_file(
        path: &std::path::Path,
        offset: Duration,
        start: Instant,
        opportunity_use: OpportunityUse,
    ) -> Result<Self, crate::TraceError> {
        let trace = DeliveryTrace::from_file(path)?.starting_at(offset);
        Ok(Self::trace_with(trace, start, opportunity_use))
    }

    /// A trace-driven transmitter with an explicit way of using opportunities.
    pub fn trace_with(
        trace: DeliveryTrace,
        start: Instant,
        opportunity_use: OpportunityUse,
    ) -> Self {
        Transmitter {
            kind: TransmitterKind::Trace {
                trace,
                start,
                opportunity_use,
            },
        }
    }

    /// The rate in bits/s: the fixed rate, or the trace's mean rate.
    pub fn nominal_rate_bits_per_second(&self) -> f64 {
        match &self.kind {
            TransmitterKind::FixedRate { bits_per_second } => *bits_per_second as f64,
            TransmitterKind::Trace { trace, .. } => trace.mean_rate_bits_per_second(),
        }
    }
}

/// Time to serialize `size_bytes` at `bits_per_second`, rounded up to the nanosecond.
pub fn serialization_time(size_bytes: u32, bits_per_second: u64) -> Duration {
    // bits · 10⁹ fits in u64 for packets up to 2.3 GB (a UDP packet is at most 65 507 bytes);
    // larger sizes take the exact u128 path.
    let bits = u64::from(size_bytes) * 8;
    let rate = bits_per_second.max(1);
    let nanos = match bits.checked_mul(1_000_000_000) {
        Some(scaled) => scaled.div_ceil(rate),
        None => {
            let wide = (u128::from(bits) * 1_000_000_000).div_ceil(u128::from(rate));
            u64::try_from(wide).unwrap_or(u64::MAX)
        }
    };
    Duration::from_nanos(nanos)
}

/// Why a link direction dropped a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The queue was full.
    QueueOverflow,
    /// Random early drop by RED/RIO.
    AqmEarly,
    /// RED/RIO drop because the average queue was above the upper threshold.
    AqmForced,
    /// The loss model dropped it on entry.
    LossModel,
}

impl DropReason {
    /// Every reason, in the order of [`DropReason::index`].
    pub const ALL: [DropReason; 4] = [
        DropReason::QueueOverflow,
        DropReason::AqmEarly,
        DropReason::AqmForced,
        DropReason::LossModel,
    ];

    /// Position in per-reason counter arrays.
    pub const fn index(self) -> usize {
        match self {
            DropReason::QueueOverflow => 0,
            DropReason::AqmEarly => 1,
            DropReason::AqmForced => 2,
            DropReason::LossModel => 3,
        }
    }

    /// Lower-case name, for CSV columns.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::QueueOverflow => "overflow",
            DropReason::AqmEarly => "early",
            DropReason::AqmForced => "forced",
            DropReason::LossModel => "loss",
        }
    }
}

impl From<QueueDrop> for DropReason {
    fn from(drop: QueueDrop) -> Self {
        match drop {
            QueueDrop::Overflow => DropReason::QueueOverflow,
            QueueDrop::Early => DropReason::AqmEarly,
            QueueDrop::Forced => DropReason::AqmForced,
        }
    }
}

/// What happened to a packet entering a link direction.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Queued (or directly transmitted); it will come out of [`LinkDirection::poll_delivery`].
    Accepted,
    /// Dropped on entry.
    Dropped(DropReason),
}

impl Arrival {
    /// Whether the packet was accepted.
    pub fn is_accepted(&self) -> bool {
        matches!(self, Arrival::Accepted)
    }
}

/// Cumulative counters of a link direction (differences between two samples give per-interval
/// values for `links.csv`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Packets offered to the link direction.
    pub arrivals: u64,
    /// Bytes offered.
    pub arrival_bytes: u64,
    /// Packets the markers coloured in profile.
    pub marked_in: u64,
    /// Packets the markers coloured out of profile.
    pub marked_out: u64,
    /// Packets an AQM marked Congestion Experienced instead of dropping.
    pub congestion_marks: u64,
    /// Dropped packets, indexed `[DropReason::index()][Color::index()]`.
    pub drops: [[u64; 3]; 4],
    /// Bytes dropped.
    pub drop_bytes: u64,
    /// Packets that finished serialization.
    pub departures: u64,
    /// Bytes that finished serialization.
    pub departure_bytes: u64,
    /// Packets handed to the far end by [`LinkDirection::poll_delivery`].
    pub deliveries: u64,
    /// Bytes handed to the far end.
    pub delivery_bytes: u64,
}

impl LinkCounters {
    /// Drops for one reason, all colours.
    pub fn drops_by_reason(&self, reason: DropReason) -> u64 {
        self.drops[reason.index()].iter().sum()
    }

    /// Drops of one colour, all reasons.
    pub fn drops_by_color(&self, color: Color) -> u64 {
        self.drops.iter().map(|row| row[color.index()]).sum()
    }

    /// All drops.
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().flatten().sum()
    }
}

/// A snapshot of a link direction for reporting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkSample {
    /// Cumulative counters.
    pub counters: LinkCounters,
    /// Packets waiting in the queue (not counting the one being serialized).
    pub queue_packets: usize,
    /// Bytes waiting in the queue.
    pub queue_bytes: u64,
    /// Whether a packet is being serialized.
    pub transmitting: bool,
    /// Packets serialized and still propagating.
    pub in_flight: usize,
    /// The AQM's average queue in packets (RED/RIO), if any.
    pub average_queue: Option<f64>,
}

/// Everything that describes a link direction, for building one from a scenario.
#[derive(Debug, Clone)]
pub struct LinkDirectionConfig {
    /// The transmitter.
    pub transmitter: Transmitter,
    /// One-way propagation delay.
    pub propagation_delay: Duration,
    /// The queue discipline.
    pub queue: QueueConfig,
    /// Markers for disjoint sets of flows, applied first on entry (a packet is coloured by
    /// the first marker that selects its flow).
    pub markers: Vec<TokenBucketConfig>,
    /// Optional loss model, applied on entry after the markers.
    pub loss: Option<LossConfig>,
}

impl LinkDirectionConfig {
    /// Builds the link direction. Its random elements get seeds derived from `seed` (streams
    /// `"queue"` and `"loss"`), so give each link direction its own `seed`, e.g.
    /// `derive_seed(run_seed, "link:a->b")`.
    pub fn build(&self, seed: u64) -> Result<LinkDirection, ParameterError> {
        let queue = self.queue.build(derive_seed(seed, "queue"))?;
        let mut link = LinkDirection::new(self.transmitter.clone(), self.propagation_delay, queue);
        for marker in &self.markers {
            link = link.with_marker(marker.build()?);
        }
        if let Some(loss) = &self.loss {
            link = link.with_loss(loss.build(derive_seed(seed, "loss"))?);
        }
        Ok(link)
    }
}

/// State of the transmitter.
#[derive(Debug)]
enum Service {
    FixedRate {
        bits_per_second: u64,
        /// The packet being serialized and when it finishes.
        current: Option<(PacketMeta, Instant)>,
    },
    Trace {
        trace: DeliveryTrace,
        start: Instant,
        opportunity_use: OpportunityUse,
        /// The next opportunity not yet used or lost.
        next: Opportunity,
        /// The packet being sent and what it still needs (opportunities or bytes).
        current: Option<(PacketMeta, u64)>,
    },
}

/// One direction of a link. See the [module documentation](self) for the call order.
#[derive(Debug)]
pub struct LinkDirection {
    service: Service,
    propagation_delay: Duration,
    queue: Box<dyn Queue>,
    markers: Vec<TokenBucketMarker>,
    loss: Option<LossModel>,
    /// Serialized packets with the time they reach the far end (non-decreasing).
    in_flight: VecDeque<(Instant, PacketMeta)>,
    counters: LinkCounters,
    /// The queue has been told the link is idle (a `dequeue` returned `None`) and nothing
    /// was queued since.
    idle_reported: bool,
}

impl LinkDirection {
    /// A link direction with no markers and no loss model. Tells `queue` the transmitter's
    /// rate (RED and RIO need it to age their averages while idle).
    pub fn new(
        transmitter: Transmitter,
        propagation_delay: Duration,
        mut queue: Box<dyn Queue>,
    ) -> Self {
        queue.set_link_rate(transmitter.nominal_rate_bits_per_second());
        let service = match transmitter.kind {
            TransmitterKind::FixedRate { bits_per_second } => Service::FixedRate {
                bits_per_second,
                current: None,
            },
            TransmitterKind::Trace {
                trace,
                start,
                opportunity_use,
            } => Service::Trace {
                next: trace.first(),
                trace,
                start,
                opportunity_use,
                current: None,
            },
        };
        LinkDirection {
            service,
            propagation_delay,
            queue,
            markers: Vec::new(),
            loss: None,
            in_flight: VecDeque::new(),
            counters: LinkCounters::default(),
            idle_reported: false,
        }
    }

    /// Adds a marker, applied to arriving packets before anything else. Several markers may
    /// serve different flows (one bucket per flow, say); a packet is coloured by the first
    /// marker, in the order added, that selects its flow.
    pub fn with_marker(mut self, marker: TokenBucketMarker) -> Self {
        self.markers.push(marker);
        self
    }

    /// Adds a loss model, applied to each arriving packet after the markers.
    pub fn with_loss(mut self, loss: LossModel) -> Self {
        self.loss = Some(loss);
        self
    }

    /// One-way propagation delay.
    pub fn propagation_delay(&self) -> Duration {
        self.propagation_delay
    }

    /// The queue discipline.
    pub fn queue(&self) -> &dyn Queue {
        self.queue.as_ref()
    }

    /// Cumulative counters.
    pub fn counters(&self) -> &LinkCounters {
        &self.counters
    }

    /// A snapshot of counters and queue state.
    pub fn sample(&self) -> LinkSample {
        let transmitting = match &self.service {
            Service::FixedRate { current, .. } => current.is_some(),
            Service::Trace { current, .. } => current.is_some(),
        };
        LinkSample {
            counters: self.counters,
            queue_packets: self.queue.len_packets(),
            queue_bytes: self.queue.len_bytes(),
            transmitting,
            in_flight: self.in_flight.len(),
            average_queue: self.queue.average_queue(),
        }
    }

    /// A packet enters the link direction at `now`: it is marked, may be lost, then offered
    /// to the queue.
    pub fn handle_arrival(&mut self, now: Instant, mut packet: PacketMeta) -> Arrival {
        self.advance(now);
        self.counters.arrivals += 1;
        self.counters.arrival_bytes += u64::from(packet.size_bytes);
        for marker in &mut self.markers {
            match marker.mark(now, &mut packet) {
                Some(Color::In) => self.counters.marked_in += 1,
                Some(Color::Out) => self.counters.marked_out += 1,
                Some(Color::Unmarked) => {}
                None => continue,
            }
            break;
        }
        if let Some(loss) = &mut self.loss {
            if loss.should_drop(now) {
                return self.record_drop(&packet, DropReason::LossModel);
            }
        }
        match self.queue.enqueue(now, packet) {
            Enqueue::Queued => {}
            Enqueue::QueuedWithCongestionMark => self.counters.congestion_marks += 1,
            Enqueue::Dropped(reason) => return self.record_drop(&packet, reason.into()),
        }
        self.idle_reported = false;
        if let Service::FixedRate {
            bits_per_second,
            current: current @ None,
        } = &mut self.service
        {
            if let Some(next) = self.queue.dequeue(now) {
                *current = Some((
                    next,
                    now + serialization_time(next.size_bytes, *bits_per_second),
                ));
            }
        }
        Arrival::Accepted
    }

    /// When a packet next reaches the far end (or, on a trace-driven link, the next delivery
    /// opportunity while packets wait); `None` if the link direction is empty.
    ///
    /// The end of a packet's serialization on a fixed-rate link needs no wake-up of its own:
    /// nothing outside the link sees it before that packet reaches the far end, and every call
    /// that looks inside ([`LinkDirection::handle_arrival`], [`LinkDirection::poll_delivery`],
    /// [`LinkDirection::handle_timeout`]) first serves the queue up to its `now`, each packet at
    /// the exact time its predecessor finished. Waking only for deliveries halves the events of
    /// a busy link without changing when anything happens.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let transmitter = match &self.service {
            Service::FixedRate { current, .. } => {
                current.map(|(_, done)| done + self.propagation_delay)
            }
            Service::Trace {
                trace,
                start,
                next,
                current,
                ..
            } => {
                (current.is_some() || !self.queue.is_empty()).then(|| trace.time_of(*start, *next))
            }
        };
        let delivery = self.in_flight.front().map(|(at, _)| *at);
        match (transmitter, delivery) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Processes everything due at or before `now` (an early call does nothing).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// The next packet that has reached the far end by `now`, if any. Processes due timeouts
    /// first, so calling [`LinkDirection::handle_timeout`] before is optional.
    #[must_use]
    pub fn poll_delivery(&mut self, now: Instant) -> Option<PacketMeta> {
        self.advance(now);
        self.pop_delivered(now)
    }

    /// Every packet that has reached the far end by `now`, appended to `out` in order: what
    /// [`LinkDirection::poll_delivery`] gives until `None`, with the due timeouts processed once
    /// (nothing else changes the link between those calls).
    pub fn drain_deliveries(&mut self, now: Instant, out: &mut Vec<PacketMeta>) {
        self.advance(now);
        while let Some(packet) = self.pop_delivered(now) {
            out.push(packet);
        }
    }

    /// The next packet in flight if it has reached the far end by `now`.
    fn pop_delivered(&mut self, now: Instant) -> Option<PacketMeta> {
        match self.in_flight.front() {
            Some((at, _)) if *at <= now => {
                let (_, packet) = self.in_flight.pop_front()?;
                self.counters.deliveries += 1;
                self.counters.delivery_bytes += u64::from(packet.size_bytes);
                Some(packet)
            }
            _ => None,
        }
    }

    fn record_drop(&mut self, packet: &PacketMeta, reason: DropReason) -> Arrival {
        self.counters.drops[reason.index()][packet.color.index()] += 1;
        self.counters.drop_bytes += u64::from(packet.size_bytes);
        Arrival::Dropped(reason)
    }

    /// Runs the transmitter up to `now`, each event at its own time.
    fn advance(&mut self, now: Instant) {
        let LinkDirection {
            service,
            propagation_delay,
            queue,
            in_flight,
            counters,
            idle_reported,
            ..
        } = self;
        let mut depart = |packet: PacketMeta, at: Instant| {
            counters.departures += 1;
            counters.departure_bytes += u64::from(packet.size_bytes);
            in_flight.push_back((at + *propagation_delay, packet));
        };
        // Takes the next packet; the first time the queue is found empty, tells it the link
        // went idle (what RED's idle-time ageing needs).
        let mut pull = |queue: &mut Box<dyn Queue>, at: Instant| {
            if queue.is_empty() {
                if !*idle_reported {
                    *idle_reported = true;
                    return queue.dequeue(at);
                }
                return None;
            }
            queue.dequeue(at)
        };
        match service {
            Service::FixedRate {
                bits_per_second,
                current,
            } => {
                while let Some((packet, done)) = *current {
                    if done > now {
                        break;
                    }
                    depart(packet, done);
                    *current = pull(queue, done).map(|next| {
                        (
                            next,
                            done + serialization_time(next.size_bytes, *bits_per_second),
                        )
                    });
                }
            }
            Service::Trace {
                trace,
                start,
                opportunity_use,
                next,
                current,
            } => loop {
                let at = trace.time_of(*start, *next);
                if at > now {
                    break;
                }
                let used = match opportunity_use {
                    OpportunityUse::PacketPerOpportunity => {
                        use_whole_opportunity(current, at, || pull(queue, at), &mut depart)
                    }
                    OpportunityUse::SharedBytes => {
                        use_opportunity_bytes(current, at, || pull(queue, at), &mut depart)
                    }
                };
                if !used {
                    // Nothing (more) to send: the rest of this opportunity and every
                    // opportunity up to now are lost.
                    *next = trace.first_after(*start, now);
                    break;
                }
                *next = trace.following(*next);
            },
        }
    }
}

/// A delivery opportunity at `at`, one packet per opportunity: the packet being sent (or the
/// next one `pull` gives) uses it whole, and departs with the last of the 1500-byte
/// opportunities its size needs. `false` when there is nothing to send.
fn use_whole_opportunity(
    current: &mut Option<(PacketMeta, u64)>,
    at: Instant,
    mut pull: impl FnMut() -> Option<PacketMeta>,
    depart: &mut impl FnMut(PacketMeta, Instant),
) -> bool {
    if current.is_none() {
        *current = pull().map(|packet| {
            let size = u64::from(packet.size_bytes);
            let needed = size.div_ceil(u64::from(TRACE_OPPORTUNITY_BYTES));
            (packet, needed.max(1))
        });
    }
    let Some((packet, remaining)) = current else {
        return false;
    };
    *remaining -= 1;
    if *remaining == 0 {
        depart(*packet, at);
        *current = None;
    }
    true
}

/// A delivery opportunity at `at`, its 1500 bytes shared: packets (the one being sent, then
/// those `pull` gives) take bytes from it until it is used up, each departing when its last
/// byte is sent. `false` when the queue ran dry before the opportunity was used up.
fn use_opportunity_bytes(
    current: &mut Option<(PacketMeta, u64)>,
    at: Instant,
    mut pull: impl FnMut() -> Option<PacketMeta>,
    depart: &mut impl FnMut(PacketMeta, Instant),
) -> bool {
    let mut credit = u64::from(TRACE_OPPORTUNITY_BYTES);
    while credit > 0 {
        if current.is_none() {
            *current = pull().map(|packet| (packet, u64::from(packet.size_bytes)));
        }
        let Some((packet, remaining)) = current else {
            break;
        };
        let sent = credit.min(*remaining);
        *remaining -= sent;
        credit -= sent;
        if *remaining == 0 {
            depart(*packet, at);
            *current = None;
        }
    }
    !(current.is_none() && credit > 0)
}
