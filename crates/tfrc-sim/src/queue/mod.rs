//! Queue disciplines behind one trait: [`DropTail`], [`Red`] and [`Rio`].
//!
//! A queue holds the packets waiting for the transmitter of a [`crate::LinkDirection`]. As in
//! ns-2, the packet being serialized has already left the queue.

use core::fmt;
use std::collections::VecDeque;

use tfrc_proto::Instant;

use crate::error::ParameterError;
use crate::packet::PacketMeta;

mod droptail;
mod red;
mod rio;

pub use droptail::DropTail;
pub use red::{Red, RedParams};
pub use rio::{Rio, RioParams, RioThresholds};

/// Outcome of offering a packet to a queue.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueue {
    /// The packet was queued unchanged.
    Queued,
    /// The packet was queued with its Congestion Experienced bit set (ECN instead of an early
    /// drop).
    QueuedWithCongestionMark,
    /// The packet was dropped.
    Dropped(QueueDrop),
}

/// Why a queue dropped a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueDrop {
    /// The queue was at its hard limit.
    Overflow,
    /// Random early drop by an AQM (RED's "unforced" drop).
    Early,
    /// An AQM drop because the average queue exceeded its upper threshold (part of RED's
    /// "forced" drops; the other part is [`QueueDrop::Overflow`]).
    Forced,
}

/// A queue discipline. Implementations must not panic on any input.
pub trait Queue: fmt::Debug + Send {
    /// Offers an arriving packet at `now`.
    fn enqueue(&mut self, now: Instant, packet: PacketMeta) -> Enqueue;

    /// Takes the next packet to transmit. The link calls this when its transmitter becomes
    /// free; `None` tells the queue the link went idle at `now` (RED uses this to age its
    /// average during idle periods, as ns-2 does).
    fn dequeue(&mut self, now: Instant) -> Option<PacketMeta>;

    /// Number of waiting packets.
    fn len_packets(&self) -> usize;

    /// Bytes of the waiting packets.
    fn len_bytes(&self) -> u64;

    /// Whether no packet is waiting.
    fn is_empty(&self) -> bool {
        self.len_packets() == 0
    }

    /// Tells the queue the rate of the link it feeds (bits/s). RED and RIO derive from it how
    /// many average-sized packets could have been sent during an idle period.
    fn set_link_rate(&mut self, _bits_per_second: f64) {}

    /// The averaged queue length an AQM bases its decisions on (packets), for reporting.
    fn average_queue(&self) -> Option<f64> {
        None
    }
}

/// Parameters of one of the built-in queues, for building a queue from a scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum QueueConfig {
    /// [`DropTail`] with this limit in packets.
    DropTail {
        /// See [`DropTail::new`].
        limit: usize,
    },
    /// [`Red`].
    Red(RedParams),
    /// [`Rio`].
    Rio(RioParams),
}

impl QueueConfig {
    /// Builds the queue, validating its parameters; `seed` seeds its random stream.
    pub fn build(&self, seed: u64) -> Result<Box<dyn Queue>, ParameterError> {
        Ok(match self {
            QueueConfig::DropTail { limit } => Box::new(DropTail::new(*limit)?),
            QueueConfig::Red(params) => Box::new(Red::new(params.clone(), seed)?),
            QueueConfig::Rio(params) => Box::new(Rio::new(params.clone(), seed)?),
        })
    }
}

/// A FIFO of packets with a byte count.
#[derive(Debug, Default, Clone)]
pub(crate) struct Fifo {
    packets: VecDeque<PacketMeta>,
    bytes: u64,
}

impl Fifo {
    pub(crate) fn push(&mut self, packet: PacketMeta) {
        self.bytes += u64::from(packet.size_bytes);
        self.packets.push_back(packet);
    }

    pub(crate) fn pop(&mut self) -> Option<PacketMeta> {
        let packet = self.packets.pop_front()?;
        self.bytes -= u64::from(packet.size_bytes);
        Some(packet)
    }

    pub(crate) fn len(&self) -> usize {
        self.packets.len()
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Decays `average` for `idle_packets` packet times and then folds in one sample, exactly as
/// ns-2's `REDQueue::estimator(q, m + 1, ave, w)`: `ave·(1−w)^(m+1) + w·q`.
pub(crate) fn ewma_with_idle(average: f64, sample: f64, weight: f64, idle_packets: u64) -> f64 {
    let decayed = average * crate::rng::power(1.0 - weight, idle_packets.saturating_add(1));
    decayed + weight * sample
}

/// Number of average-sized packets the link could have sent between `since` and `now`
/// (ns-2's `m = int(ptc * (now - idletime))`); zero when the link rate is unknown.
pub(crate) fn idle_packets(
    packets_per_second: Option<f64>,
    since: Option<Instant>,
    now: Instant,
) -> u64 {
    match (packets_per_second, since) {
        (Some(rate), Some(since)) => {
            let packets = rate * tfrc_proto::time::secs(now - since);
            // `as` saturates for huge values and maps NaN to 0.
            packets as u64
        }
        _ => 0,
    }
}

/// Checks an early-drop curve (RED's, or one RIO class's): `min ≥ 0`, `max > min`, both finite,
/// `max_p` a probability. `names` are the three parameters' names in errors, and
/// `max_expected` what `max` should be.
pub(crate) fn check_drop_curve(
    element: &'static str,
    names: [&'static str; 3],
    [min, max, max_p]: [f64; 3],
    max_expected: &'static str,
) -> Result<(), ParameterError> {
    let valid_min = min.is_finite() && min >= 0.0;
    crate::error::check(
        element,
        names[0],
        min,
        valid_min,
        "a finite number of packets >= 0",
    )?;
    crate::error::check(
        element,
        names[1],
        max,
        max.is_finite() && max > min,
        max_expected,
    )?;
    crate::error::check_probability(element, names[2], max_p)?;
    Ok(())
}

/// Checks the parameters RED and RIO share: a limit of at least 1 packet, the EWMA weight in
/// (0, 1] and a mean packet size of at least 1 byte.
pub(crate) fn check_shared(
    element: &'static str,
    limit: usize,
    weight: f64,
    mean_packet_size: u32,
) -> Result<(), ParameterError> {
    crate::error::check(element, "limit", limit, limit > 0, "at least 1 packet")?;
    let valid_weight = weight > 0.0 && weight <= 1.0;
    crate::error::check(
        element,
        "weight",
        weight,
        valid_weight,
        "a number in (0, 1]",
    )?;
    crate::error::check(
        element,
        "mean_packet_size",
        mean_packet_size,
        mean_packet_size > 0,
        "at least 1 byte",
    )?;
    Ok(())
}

/// Packets per second of `mean_packet_size` bytes a link of `bits_per_second` sends (`None`
/// for a rate of zero or not finite): how RED and RIO count the packets an idle link could have
/// sent (ns-2's `ptc`, used to age the average over an idle period).
pub(crate) fn packet_rate(bits_per_second: f64, mean_packet_size: u32) -> Option<f64> {
    let rate = bits_per_second / (8.0 * f64::from(mean_packet_size));
    (rate.is_finite() && rate > 0.0).then_some(rate)
}
