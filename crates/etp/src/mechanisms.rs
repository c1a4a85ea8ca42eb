//! The small micro-mechanisms besides rate control ([`crate::rate`]): reliability, time control,
//! multiplexing (scheduling of streams) and ordering. Each is a trait with several
//! implementations; [`for_stream`] and [`scheduler_for`] pick them from the descriptor.

use core::fmt;
use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use tfrc_proto::Instant;

use crate::descriptor::{ReliabilityKind, SchedulerKind, StreamDescriptor};

/// Reliability: may a lost fragment be sent again?
pub trait Reliability: fmt::Debug + Send + Sync {
    /// `transmissions` is how many times the fragment was sent so far (1 after the first send);
    /// `deadline` is the message's deadline.
    fn should_retransmit(
        &self,
        transmissions: u32,
        deadline: Option<Instant>,
        now: Instant,
    ) -> bool;
}

/// Nothing is retransmitted.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRetransmission;

impl Reliability for NoRetransmission {
    fn should_retransmit(&self, _: u32, _: Option<Instant>, _: Instant) -> bool {
        false
    }
}

/// Everything lost is retransmitted (time control may still drop a late message).
#[derive(Debug, Clone, Copy, Default)]
pub struct FullReliability;

impl Reliability for FullReliability {
    fn should_retransmit(&self, _: u32, _: Option<Instant>, _: Instant) -> bool {
        true
    }
}

/// At most `max_retransmissions` retransmissions of a fragment, none after the deadline.
#[derive(Debug, Clone, Copy, Default)]
pub struct PartialReliability {
    /// Most retransmissions per fragment; `None` = until the deadline.
    pub max_retransmissions: Option<u32>,
}

impl Reliability for PartialReliability {
    fn should_retransmit(
        &self,
        transmissions: u32,
        deadline: Option<Instant>,
        now: Instant,
    ) -> bool {
        let within_count = self
            .max_retransmissions
            .is_none_or(|max| transmissions.saturating_sub(1) < max);
        let within_time = deadline.is_none_or(|deadline| now < deadline);
        within_count && within_time
    }
}

/// Time control: the deadline of a message.
pub trait TimeControl: fmt::Debug + Send + Sync {
    /// Deadline of a message submitted at `submitted`; `per_message` overrides the stream's.
    fn deadline(&self, submitted: Instant, per_message: Option<Duration>) -> Option<Instant>;
}

/// No deadline unless the message sets one.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDeadline;

impl TimeControl for NoDeadline {
    fn deadline(&self, submitted: Instant, per_message: Option<Duration>) -> Option<Instant> {
        per_message.map(|lifetime| submitted + lifetime)
    }
}

/// Every message of the stream must be delivered within `lifetime` of `send`.
#[derive(Debug, Clone, Copy)]
pub struct StreamDeadline {
    /// Lifetime of a message.
    pub lifetime: Duration,
}

impl TimeControl for StreamDeadline {
    fn deadline(&self, submitted: Instant, per_message: Option<Duration>) -> Option<Instant> {
        Some(submitted + per_message.unwrap_or(self.lifetime))
    }
}

/// The mechanisms of one stream.
#[derive(Debug)]
pub struct StreamMechanisms {
    /// Reliability.
    pub reliability: Box<dyn Reliability>,
    /// Time control.
    pub time: Box<dyn TimeControl>,
}

/// Picks the mechanisms a stream descriptor asks for.
pub fn for_stream(stream: &StreamDescriptor) -> StreamMechanisms {
    let reliability: Box<dyn Reliability> = match stream.reliability {
        ReliabilityKind::None => Box::new(NoRetransmission),
        ReliabilityKind::Full => Box::new(FullReliability),
        ReliabilityKind::Partial => Box::new(PartialReliability {
            max_retransmissions: stream.max_retransmissions,
        }),
    };
    let time: Box<dyn TimeControl> = match stream.deadline_duration() {
        Some(lifetime) => Box::new(StreamDeadline { lifetime }),
        None => Box::new(NoDeadline),
    };
    StreamMechanisms { reliability, time }
}

/// Multiplexing: which stream fills the next piece of a packet.
pub trait Scheduler: fmt::Debug + Send + Sync {
    /// `ready` lists (stream id, priority) of the streams with something to send, in id order.
    fn pick(&mut self, ready: &[(u16, u8)]) -> Option<u16>;
}

/// Strict priority (lower number first); equal priorities take turns.
#[derive(Debug, Clone, Default)]
pub struct StrictPriority {
    last: Option<u16>,
}

impl Scheduler for StrictPriority {
    fn pick(&mut self, ready: &[(u16, u8)]) -> Option<u16> {
        let best = ready.iter().map(|(_, priority)| *priority).min()?;
        let candidates: Vec<u16> = ready
            .iter()
            .filter(|(_, priority)| *priority == best)
            .map(|(id, _)| *id)
            .collect();
        let chosen = match self.last {
            Some(last) => candidates
                .iter()
                .copied()
                .find(|id| *id > last)
                .unwrap_or(candidates[0]),
            None => candidates[0],
        };
        self.last = Some(chosen);
        Some(chosen)
    }
}

/// Smooth weighted round robin: priority `p` has weight `2^(7 - min(p, 7))`.
#[derive(Debug, Clone, Default)]
pub struct WeightedRoundRobin {
    current: BTreeMap<u16, i64>,
}

/// Weight of a priority under [`WeightedRoundRobin`].
pub fn weight_of(priority: u8) -> i64 {
    1 << (7 - priority.min(7))
}

impl Scheduler for WeightedRoundRobin {
    fn pick(&mut self, ready: &[(u16, u8)]) -> Option<u16> {
        if ready.is_empty() {
            return None;
        }
        self.current
            .retain(|id, _| ready.iter().any(|(ready_id, _)| ready_id == id));
        let total: i64 = ready.iter().map(|(_, priority)| weight_of(*priority)).sum();
        let mut best: Option<(u16, i64)> = None;
        for (id, priority) in ready {
            let value = self.current.entry(*id).or_insert(0);
            *value += weight_of(*priority);
            if best.is_none_or(|(_, best_value)| *value > best_value) {
                best = Some((*id, *value));
            }
        }
        let (chosen, _) = best?;
        if let Some(value) = self.current.get_mut(&chosen) {
            *value -= total;
        }
        Some(chosen)
    }
}

/// The scheduler a descriptor asks for.
pub fn scheduler_for(kind: SchedulerKind) -> Box<dyn Scheduler> {
    match kind {
        SchedulerKind::Strict => Box::new(StrictPriority::default()),
        SchedulerKind::Weighted => Box::new(WeightedRoundRobin::default()),
    }
}

/// Ordering at the receiver: holds complete messages of one ordering domain until they may be
/// delivered, and remembers which message numbers are done (delivered or given up) so that
/// duplicates are recognised.
pub trait OrderBuffer<M>: fmt::Debug + Send {
    /// True if message `number` was delivered, given up, or is already held.
    fn is_done(&self, number: u32) -> bool;
    /// A complete message; ignored if done.
    fn insert(&mut self, number: u32, message: M);
    /// Gives up message `number` (it expired incomplete).
    fn skip(&mut self, number: u32);
    /// Every message below `forward` is resolved at the sender: stop waiting for the missing ones.
    fn forward(&mut self, forward: u32);
    /// The next message that may be delivered now.
    fn pop_ready(&mut self) -> Option<(u32, M)>;
    /// Messages held, waiting for an earlier one.
    fn held(&self) -> Box<dyn Iterator<Item = (u32, &M)> + '_>;
    /// Messages skipped without ever being complete (ordered domains only count them here).
    fn missing(&self) -> u64;
    /// Removes a held message (it became useless, e.g. late) and treats it as given up.
    fn remove_held(&mut self, number: u32) -> Option<M>;
}

/// Delivery as soon as complete.
#[derive(Debug)]
pub struct Unordered<M> {
    floor: u32,
    missing: u64,
    done: BTreeSet<u32>,
    ready: VecDeque<(u32, M)>,
}

impl<M> Default for Unordered<M> {
    fn default() -> Self {
        Unordered {
            floor: 0,
            missing: 0,
            done: BTreeSet::new(),
            ready: VecDeque::new(),
        }
    }
}

impl<M: fmt::Debug + Send> OrderBuffer<M> for Unordered<M> {
    fn is_done(&self, number: u32) -> bool {
        number < self.floor || self.done.contains(&number)
    }

    fn insert(&mut self, number: u32, message: M) {
        if self.is_done(number) {
            return;
        }
        self.done.insert(number);
        self.ready.push_back((number, message));
    }

    fn skip(&mut self, number: u32) {
        if number >= self.floor {
            self.done.insert(number);
        }
    }

    fn forward(&mut self, forward: u32) {
        if forward > self.floor {
            let seen = self.done.range(self.floor..forward).count() as u64;
            self.missing += u64::from(forward - self.floor) - seen;
            self.floor = forward;
            self.done = self.done.split_off(&forward);
        }
    }

    fn pop_ready(&mut self) -> Option<(u32, M)> {
        self.ready.pop_front()
    }

    fn held(&self) -> Box<dyn Iterator<Item = (u32, &M)> + '_> {
        Box::new(core::iter::empty())
    }

    fn missing(&self) -> u64 {
        self.missing
    }

    fn remove_held(&mut self, _number: u32) -> Option<M> {
        None
    }
}

/// Delivery in message-number order; gaps wait until completed, skipped or forwarded.
#[derive(Debug)]
pub struct InOrder<M> {
    next: u32,
    forward: u32,
    held: BTreeMap<u32, M>,
    skipped: BTreeSet<u32>,
    missing: u64,
}

impl<M> Default for InOrder<M> {
    fn default() -> Self {
        InOrder {
            next: 0,
            forward: 0,
            held: BTreeMap::new(),
            skipped: BTreeSet::new(),
            missing: 0,
        }
    }
}

impl<M: fmt::Debug + Send> OrderBuffer<M> for InOrder<M> {
    fn is_done(&self, number: u32) -> bool {
        number < self.next || self.held.contains_key(&number) || self.skipped.contains(&number)
    }

    fn insert(&mut self, number: u32, message: M) {
        if !self.is_done(number) {
            self.held.insert(number, message);
        }
    }

    fn skip(&mut self, number: u32) {
        if !self.is_done(number) {
            self.skipped.insert(number);
        }
    }

    fn forward(&mut self, forward: u32) {
        self.forward = self.forward.max(forward);
    }

    fn pop_ready(&mut self) -> Option<(u32, M)> {
        loop {
            if let Some(message) = self.held.remove(&self.next) {
                let number = self.next;
                self.next += 1;
                return Some((number, message));
            }
            if self.skipped.remove(&self.next) {
                self.next += 1;
                continue;
            }
            if self.next < self.forward {
                self.missing += 1;
                self.next += 1;
                continue;
            }
            return None;
        }
    }

    fn held(&self) -> Box<dyn Iterator<Item = (u32, &M)> + '_> {
        Box::new(self.held.iter().map(|(number, message)| (*number, message)))
    }

    fn missing(&self) -> u64 {
        self.missing
    }

    fn remove_held(&mut self, number: u32) -> Option<M> {
        let message = self.held.remove(&number)?;
        self.skipped.insert(number);
        Some(message)
    }
}

/// A new order buffer for a domain.
pub fn order_buffer<M: fmt::Debug + Send + 'static>(ordered: bool) -> Box<dyn OrderBuffer<M>> {
    if ordered {
        Box::new(InOrder::default())
    } else {
        Box::new(Unordered::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_reliability_counts_and_respects_the_deadline() {
        let now = Instant::from_secs(1);
        let k0 = PartialReliability {
            max_retransmissions: Some(0),
        };
        assert!(!k0.should_retransmit(1, None, now));
        let k2 = PartialReliability {
            max_retransmissions: Some(2),
        };
        assert!(k2.should_retransmit(1, None, now));
        assert!(k2.should_retransmit(2, None, now));
        assert!(!k2.should_retransmit(3, None, now));
        assert!(!k2.should_retransmit(1, Some(now), now));
        let until_deadline = PartialReliability::default();
        assert!(until_deadline.should_retransmit(50, Some(now + Duration::from_millis(1)), now));
    }

    #[test]
    fn strict_priority_serves_best_and_rotates_equals() {
        let mut scheduler = StrictPriority::default();
        let ready = [(1, 2), (2, 0), (3, 0)];
        let picks: Vec<u16> = (0..4).filter_map(|_| scheduler.pick(&ready)).collect();
        assert_eq!(picks, vec![2, 3, 2, 3]);
        assert_eq!(scheduler.pick(&[]), None);
    }

    #[test]
    fn weighted_round_robin_shares_by_weight() {
        let mut scheduler = WeightedRoundRobin::default();
        let ready = [(1, 6), (2, 7)]; // weights 2 and 1
        let picks: Vec<u16> = (0..300).filter_map(|_| scheduler.pick(&ready)).collect();
        let ones = picks.iter().filter(|id| **id == 1).count();
        assert_eq!(ones, 200);
    }

    #[test]
    fn in_order_waits_for_gaps_until_forwarded() {
        let mut order = InOrder::default();
        order.insert(1, "b");
        assert_eq!(order.pop_ready(), None);
        order.insert(0, "a");
        assert_eq!(order.pop_ready(), Some((0, "a")));
        assert_eq!(order.pop_ready(), Some((1, "b")));
        order.insert(3, "d");
        order.forward(3);
        assert_eq!(order.pop_ready(), Some((3, "d")));
        assert_eq!(order.missing(), 1);
        assert!(order.is_done(2));
        order.insert(2, "late");
        assert_eq!(order.pop_ready(), None);
    }

    #[test]
    fn unordered_drops_duplicates() {
        let mut order = Unordered::default();
        order.insert(5, 'x');
        order.insert(5, 'y');
        order.forward(3);
        assert!(order.is_done(1));
        assert_eq!(order.missing(), 3);
        assert_eq!(order.pop_ready(), Some((5, 'x')));
        assert_eq!(order.pop_ready(), None);
    }
}
