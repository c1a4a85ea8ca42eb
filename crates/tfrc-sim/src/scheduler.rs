//! The discrete-event queue of the simulator.
//!
//! Events are ordered by `(time, insertion sequence)`: two events at the same instant come out
//! in the order they were scheduled, so runs are reproducible. Cancelling leaves a tombstone
//! that is skipped when it reaches the front, which makes `cancel` O(1) amortized.
//!
//! The queue is a 4-ary min-heap of 16-byte keys: half the levels of a binary heap, and the
//! four children of a node side by side in 64 bytes. `std`'s `BinaryHeap` spent 12 % of a
//! 1024-flow e003 run in `pop`'s sift-down; with this heap the run went from 1.0–1.1 s to
//! 0.78 s (bench/sim-speed, docs/performance.md). Keys are unique, so any correct heap pops
//! the same order.

use tfrc_proto::Instant;

/// Handle of a scheduled event, used to cancel it.
///
/// A handle stays unique: once its event has fired or been cancelled, cancelling it again
/// does nothing, even if its storage was reused by a later event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventId {
    slot: u32,
    generation: u64,
}

/// Bits of a [`Key`] holding the slot index: at most 2^24 (16.7 million) events pending at once.
const SLOT_BITS: u32 = 24;
/// Most events pending at once.
pub const MAX_PENDING_EVENTS: usize = 1 << SLOT_BITS;

/// Heap key packed in one integer so that the heap compares and moves 16 bytes: the time in
/// the high 64 bits, then the insertion sequence (40 bits, 10^12 events per run), then the slot.
/// Ordering the integers orders by time, then by insertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key(u128);

impl Key {
    fn new(time: Instant, sequence: u64, slot: u32) -> Key {
        let low = (u128::from(sequence) << SLOT_BITS) | u128::from(slot);
        Key((u128::from(time.as_nanos()) << 64) | (low & u128::from(u64::MAX)))
    }

    fn time(self) -> Instant {
        Instant::from_nanos((self.0 >> 64) as u64)
    }

    fn slot(self) -> u32 {
        (self.0 as u32) & ((1 << SLOT_BITS) - 1)
    }
}

/// Storage of one event; `event` is `None` for a cancelled event (a tombstone).
#[derive(Debug)]
struct Slot<E> {
    generation: u64,
    event: Option<E>,
}

/// A discrete-event queue of events of type `E`.
///
/// ```
/// use tfrc_proto::Instant;
/// use tfrc_sim::Scheduler;
///
/// let mut scheduler = Scheduler::new();
/// scheduler.schedule(Instant::from_millis(2), "late");
/// let early = scheduler.schedule(Instant::from_millis(1), "cancelled");
/// scheduler.schedule(Instant::from_millis(2), "late, second");
/// assert!(scheduler.cancel(early));
/// assert_eq!(scheduler.peek_time(), Some(Instant::from_millis(2)));
/// assert_eq!(scheduler.pop(), Some((Instant::from_millis(2), "late")));
/// assert_eq!(scheduler.pop(), Some((Instant::from_millis(2), "late, second")));
/// assert_eq!(scheduler.pop(), None);
/// ```
#[derive(Debug)]
pub struct Scheduler<E> {
    heap: QuaternaryHeap,
    slots: Vec<Slot<E>>,
    free_slots: Vec<u32>,
    next_sequence: u64,
    pending: usize,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Scheduler<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Scheduler {
            heap: QuaternaryHeap::default(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            next_sequence: 0,
            pending: 0,
        }
    }

    /// Schedules `event` at `at`. Events in the past are allowed; they simply come out first.
    pub fn schedule(&mut self, at: Instant, event: E) -> EventId {
        let slot = match self.free_slots.pop() {
            Some(slot) => slot,
            None => {
                // A capacity limit like running out of memory: a simulation has a few pending
                // events per flow and link, far below it.
                assert!(
                    self.slots.len() < MAX_PENDING_EVENTS,
                    "more than {MAX_PENDING_EVENTS} events pending at once"
                );
                let slot = self.slots.len() as u32;
                self.slots.push(Slot {
                    generation: 0,
                    event: None,
                });
                slot
            }
        };
        let storage = &mut self.slots[slot as usize];
        storage.event = Some(event);
        let id = EventId {
            slot,
            generation: storage.generation,
        };
        self.heap.push(Key::new(at, self.next_sequence, slot));
        self.next_sequence += 1;
        self.pending += 1;
        id
    }

    /// Cancels a pending event. Returns whether it was pending (false if it already fired or
    /// was already cancelled).
    pub fn cancel(&mut self, id: EventId) -> bool {
        match self.slots.get_mut(id.slot as usize) {
            Some(slot) if slot.generation == id.generation && slot.event.is_some() => {
                // The key stays in the heap as a tombstone until it reaches the front.
                slot.event = None;
                self.pending -= 1;
                true
            }
            _ => false,
        }
    }

    /// Removes and returns the earliest pending event with its time.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        self.pop_until(Instant::MAX)
    }

    /// Removes and returns the earliest pending event if it is due at or before `limit`.
    ///
    /// Tombstones are dropped here, when they reach the front, and nowhere else: a tombstone
    /// at the front due after `limit` means every pending event is too (none is earlier than
    /// the smallest key). Looking for tombstones after every pop, to keep the front live,
    /// cost 2.4 % of a run's instructions.
    pub fn pop_until(&mut self, limit: Instant) -> Option<(Instant, E)> {
        while let Some(key) = self.heap.peek() {
            if key.time() > limit {
                return None;
            }
            self.heap.pop();
            if let Some(event) = self.release(key.slot()) {
                self.pending -= 1;
                return Some((key.time(), event));
            }
        }
        None
    }

    /// Time of the earliest pending event (drops the tombstones in front of it).
    pub fn peek_time(&mut self) -> Option<Instant> {
        self.discard_cancelled_front();
        self.heap.peek().map(Key::time)
    }

    /// Number of pending (not cancelled) events.
    pub fn len(&self) -> usize {
        self.pending
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.pending == 0
    }

    /// Frees a slot whose heap entry was removed and returns its event, if not cancelled.
    fn release(&mut self, slot: u32) -> Option<E> {
        let storage = &mut self.slots[slot as usize];
        storage.generation += 1;
        self.free_slots.push(slot);
        storage.event.take()
    }

    /// Drops tombstones from the front so that `peek_time` sees a live event.
    fn discard_cancelled_front(&mut self) {
        while let Some(key) = self.heap.peek() {
            if self.slots[key.slot() as usize].event.is_some() {
                break;
            }
            let slot = key.slot();
            self.heap.pop();
            self.release(slot);
        }
    }
}

/// Children of a node of [`QuaternaryHeap`].
const ARITY: usize = 4;

/// A min-heap of keys in which node `i`'s children are `4i + 1 ..= 4i + 4`.
#[derive(Debug, Default)]
struct QuaternaryHeap {
    keys: Vec<Key>,
}

impl QuaternaryHeap {
    fn peek(&self) -> Option<Key> {
        self.keys.first().copied()
    }

    fn push(&mut self, key: Key) {
        // Move parents down into the hole until `key` fits.
        let mut hole = self.keys.len();
        self.keys.push(key);
        while hole > 0 {
            let parent = (hole - 1) / ARITY;
            if self.keys[parent] <= key {
                break;
            }
            self.keys[hole] = self.keys[parent];
            hole = parent;
        }
        self.keys[hole] = key;
    }

    fn pop(&mut self) -> Option<Key> {
        let last = self.keys.pop()?;
        let Some(&top) = self.keys.first() else {
            return Some(last);
        };
        // Move the smallest child up into the hole until `last` fits. The children are read
        // as one slice per level (a node with four, the common case, as an array), which keeps
        // the bounds checks out of the comparisons: they were a third of the pop.
        let keys = &mut self.keys[..];
        let mut hole = 0;
        loop {
            let first = ARITY * hole + 1;
            let (offset, smallest) = if let Some(children) = keys
                .get(first..first + ARITY)
                .and_then(|children| <&[Key; ARITY]>::try_from(children).ok())
            {
                // A tournament: the smaller of each pair, then the smaller of the two (one
                // general loop over the slice took 4 % more instructions in a whole run).
                let left = if children[1] < children[0] {
                    (1, children[1])
                } else {
                    (0, children[0])
                };
                let right = if children[3] < children[2] {
                    (3, children[3])
                } else {
                    (2, children[2])
                };
                if right.1 < left.1 {
                    right
                } else {
                    left
                }
            } else {
                let Some(children) = keys.get(first..).filter(|children| !children.is_empty())
                else {
                    break;
                };
                let mut best = (0, children[0]);
                for (offset, &key) in children.iter().enumerate().skip(1) {
                    if key < best.1 {
                        best = (offset, key);
                    }
                }
                best
            };
            if last <= smallest {
                break;
            }
            keys[hole] = smallest;
            hole = first + offset;
        }
        keys[hole] = last;
        Some(top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ties_come_out_in_insertion_order() {
        let mut scheduler = Scheduler::new();
        let t = Instant::from_millis(5);
        for i in 0..10 {
            scheduler.schedule(t, i);
        }
        scheduler.schedule(Instant::from_millis(1), 100);
        assert_eq!(scheduler.len(), 11);
        assert_eq!(scheduler.pop(), Some((Instant::from_millis(1), 100)));
        let order: Vec<_> = std::iter::from_fn(|| scheduler.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, (0..10).collect::<Vec<_>>());
        assert!(scheduler.is_empty());
        assert_eq!(scheduler.peek_time(), None);
    }

    #[test]
    fn cancel_is_exact_and_ids_are_not_reused() {
        let mut scheduler = Scheduler::new();
        let a = scheduler.schedule(Instant::from_millis(1), 'a');
        let b = scheduler.schedule(Instant::from_millis(2), 'b');
        assert!(scheduler.cancel(a));
        assert!(!scheduler.cancel(a), "second cancel is a no-op");
        assert_eq!(scheduler.peek_time(), Some(Instant::from_millis(2)));
        assert_eq!(scheduler.len(), 1);
        // The freed slot is reused, but the stale handle must not cancel the new event.
        let c = scheduler.schedule(Instant::from_millis(3), 'c');
        assert!(!scheduler.cancel(a));
        assert_eq!(scheduler.pop(), Some((Instant::from_millis(2), 'b')));
        assert!(!scheduler.cancel(b), "already fired");
        assert!(scheduler.cancel(c));
        assert_eq!(scheduler.pop(), None);
        assert!(scheduler.is_empty());
    }

    #[test]
    fn tombstones_in_front_neither_hide_nor_release_a_later_event() {
        let mut scheduler = Scheduler::new();
        let early = scheduler.schedule(Instant::from_millis(1), 'a');
        let middle = scheduler.schedule(Instant::from_millis(2), 'b');
        scheduler.schedule(Instant::from_millis(5), 'c');
        assert!(scheduler.cancel(early));
        assert!(scheduler.cancel(middle));
        assert_eq!(scheduler.len(), 1);
        // Both tombstones are due by 3 ms, the live event is not.
        assert_eq!(scheduler.pop_until(Instant::from_millis(3)), None);
        assert_eq!(scheduler.len(), 1);
        let late = scheduler.schedule(Instant::from_millis(4), 'd');
        assert!(scheduler.cancel(late));
        assert_eq!(scheduler.peek_time(), Some(Instant::from_millis(5)));
        assert_eq!(scheduler.pop_until(Instant::from_millis(4)), None);
        assert_eq!(
            scheduler.pop_until(Instant::from_millis(5)),
            Some((Instant::from_millis(5), 'c'))
        );
        assert!(scheduler.is_empty());
        assert_eq!(scheduler.pop(), None);
    }

    #[test]
    fn pop_until_respects_the_limit() {
        let mut scheduler = Scheduler::new();
        scheduler.schedule(Instant::from_millis(10), ());
        assert_eq!(scheduler.pop_until(Instant::from_millis(9)), None);
        assert_eq!(
            scheduler.pop_until(Instant::from_millis(10)),
            Some((Instant::from_millis(10), ()))
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Whatever is scheduled and cancelled, pops come out sorted by (time, insertion) and
        /// contain exactly the events not cancelled.
        #[test]
        fn pops_are_sorted_and_complete(
            times in proptest::collection::vec(0u64..50, 1..200),
            cancel_mask in proptest::collection::vec(any::<bool>(), 200),
        ) {
            let mut scheduler = Scheduler::new();
            let ids: Vec<_> = times
                .iter()
                .enumerate()
                .map(|(i, &t)| scheduler.schedule(Instant::from_nanos(t), i))
                .collect();
            let mut expected: Vec<(u64, usize)> = Vec::new();
            for (i, id) in ids.into_iter().enumerate() {
                if cancel_mask[i] {
                    prop_assert!(scheduler.cancel(id));
                } else {
                    expected.push((times[i], i));
                }
            }
            expected.sort();
            prop_assert_eq!(scheduler.len(), expected.len());
            let mut got = Vec::new();
            while let Some((t, i)) = scheduler.pop() {
                got.push((t.as_nanos(), i));
            }
            prop_assert_eq!(got, expected);
        }
    }
}
