//! The ledgers behind the loss intervals' proofs ([`crate::wire::LossIntervals`]).
//!
//! Every data packet carries a 16-bit mark that only its sender can compute
//! ([`crate::wire::PacketMarker`]). The receiver sums the marks of what it received
//! ([`ReceivedLedger`]); the sender keeps the running sum of the marks it sent
//! ([`SentLedger`]), so that the sum over any recent range of packets costs it two lookups.
//! A data part whose sum matches was received whole: RFC 4342 §9.2, "the receiver cannot
//! successfully lie about the data length of a loss interval unless it also guesses the ECN
//! nonce sum" — here a 16-bit sum instead of RFC 3540's one bit per interval.

use core::time::Duration;

use crate::deque::Deque;
use crate::time::Instant;

/// Most received packets waiting above a pending gap; beyond it the oldest are dropped (only a
/// sender reordering by thousands of packets gets there, and its receiver then reports an
/// unproven data part, which costs it feedback, not correctness).
const MAX_UNSETTLED: usize = 4096;
/// Most declared-lost ranges waiting to be settled.
const MAX_LOST_RANGES: usize = 4096;
/// Most sums kept at requested sequence numbers (two per interval are needed).
const MAX_SUMS: usize = 64;

/// The receiver's running sum of the marks it received, settled in sequence order.
///
/// Every packet at or below `settled` was received (its mark is in `sum`) or declared lost
/// (RFC 5348 §5.1; it adds nothing). Received packets above a pending gap wait in `unsettled`;
/// gaps declared lost wait in `lost`. The sum below and through a requested packet (an
/// interval's start and its lossy part's last loss) is kept when settling passes it, so that
/// the sum of a data part is a difference of two kept sums.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReceivedLedger {
    origin: Option<u64>,
    settled: u64,
    sum: u16,
    /// The packet right after the settled ones when nothing else waits (the usual case, a
    /// packet in order), kept apart so that it costs no queue operation.
    in_order: Option<(u64, u16)>,
    unsettled: Deque<(u64, u16)>,
    lost: Deque<(u64, u64)>,
    requests: Deque<u64>,
    /// (sequence, sum of the marks below it, sum through it).
    sums: Deque<(u64, u16, u16)>,
}

impl ReceivedLedger {
    /// Starts the ledger at `first`, the first packet the receiver expects (the first sent).
    pub(crate) fn start(&mut self, first: u64) {
        if self.origin.is_none() {
            self.origin = Some(first);
            self.settled = first.saturating_sub(1);
        }
    }

    /// The first packet the receiver expected.
    pub(crate) fn origin(&self) -> Option<u64> {
        self.origin
    }

    /// The highest settled packet and the sum of the marks received up to it.
    pub(crate) fn settled(&self) -> Option<(u64, u16)> {
        self.origin
            .filter(|origin| self.settled >= *origin)
            .map(|_| (self.settled, self.sum))
    }

    /// Whether `sequence` is settled already (or before the origin).
    fn is_settled(&self, sequence: u64) -> bool {
        self.origin
            .is_some_and(|origin| sequence < origin || sequence <= self.settled)
    }

    /// A packet received (not a duplicate) with its mark.
    pub(crate) fn received(&mut self, sequence: u64, mark: u16) {
        if self.is_settled(sequence) {
            return;
        }
        if self.in_order.is_none() && self.unsettled.is_empty() && sequence == self.settled + 1 {
            self.in_order = Some((sequence, mark));
            return;
        }
        if let Some(waiting) = self.in_order.take() {
            self.unsettled.push_front(waiting);
        }
        let index = self
            .unsettled
            .partition_point(|&(stored, _)| stored < sequence);
        if self
            .unsettled
            .get(index)
            .is_some_and(|&(stored, _)| stored == sequence)
        {
            return;
        }
        self.unsettled.insert(index, (sequence, mark));
        if self.unsettled.len() > MAX_UNSETTLED {
            self.unsettled.pop_front();
        }
    }

    /// Packets [first, end) declared lost.
    pub(crate) fn lost(&mut self, first: u64, end: u64) {
        if first < end {
            let index = self.lost.partition_point(|&(stored, _)| stored < first);
            self.lost.insert(index, (first, end));
            if self.lost.len() > MAX_LOST_RANGES {
                self.lost.pop_front();
            }
        }
    }

    /// Asks for the sums below and through `sequence` once settled.
    pub(crate) fn request(&mut self, sequence: u64) {
        if self.is_settled(sequence) {
            return;
        }
        let index = self.requests.partition_point(|&stored| stored < sequence);
        if self.requests.get(index) != Some(&sequence) {
            self.requests.insert(index, sequence);
        }
    }

    /// Forgets a request or a kept sum that is no longer needed.
    pub(crate) fn forget(&mut self, sequence: u64) {
        self.requests.retain(|&stored| stored != sequence);
        self.sums.retain(|&(stored, _, _)| stored != sequence);
    }

    /// Forgets the kept sums below `sequence` (older than every interval still reported).
    pub(crate) fn forget_below(&mut self, sequence: u64) {
        self.sums.retain(|&(stored, _, _)| stored >= sequence);
    }

    /// The kept sums, for lookups at sequences that never increase from one to the next (a
    /// feedback's interval boundaries, newest first): each lookup goes on from where the last
    /// one stopped, so a feedback's lookups together read the kept sums once.
    pub(crate) fn sums_descending(&self) -> SumsDescending<'_> {
        SumsDescending {
            ledger: self,
            index: self.sums.len(),
            last: u64::MAX,
        }
    }

    fn keep(&mut self, sequence: u64, below: u16, through: u16) {
        self.sums.push_back((sequence, below, through));
        if self.sums.len() > MAX_SUMS {
            self.sums.pop_front();
        }
    }

    /// Settles received packet `sequence` (the next one), keeping its sums if asked for.
    fn settle_received(&mut self, sequence: u64, mark: u16) {
        while self
            .requests
            .front()
            .is_some_and(|&stored| stored < sequence)
        {
            self.requests.pop_front();
        }
        let below = self.sum;
        self.sum = self.sum.wrapping_add(mark);
        if self.requests.front() == Some(&sequence) {
            self.requests.pop_front();
            self.keep(sequence, below, self.sum);
        }
        self.settled = sequence;
    }

    /// Settles as far as received and declared-lost packets reach.
    pub(crate) fn settle(&mut self) {
        if self.origin.is_none() {
            return;
        }
        if let Some((sequence, mark)) = self.in_order.take() {
            if sequence == self.settled + 1 {
                self.settle_received(sequence, mark);
            } else {
                self.unsettled.push_front((sequence, mark));
            }
        }
        loop {
            let next = self.settled + 1;
            while self
                .unsettled
                .front()
                .is_some_and(|&(sequence, _)| sequence < next)
            {
                self.unsettled.pop_front();
            }
            while self
                .requests
                .front()
                .is_some_and(|&sequence| sequence < next)
            {
                self.requests.pop_front();
            }
            if let Some(&(sequence, mark)) = self.unsettled.front() {
                if sequence == next {
                    self.unsettled.pop_front();
                    self.settle_received(sequence, mark);
                    continue;
                }
            }
            match self.lost.front().copied() {
                Some((first, end)) if first <= next && end > next => {
                    self.lost.pop_front();
                    while let Some(&sequence) = self.requests.front().filter(|&&s| s < end) {
                        self.requests.pop_front();
                        self.keep(sequence, self.sum, self.sum);
                    }
                    self.settled = end - 1;
                }
                Some((_, end)) if end <= next => {
                    self.lost.pop_front();
                }
                _ => break,
            }
        }
    }
}

/// Lookups of a [`ReceivedLedger`]'s kept sums at non-increasing sequences
/// ([`ReceivedLedger::sums_descending`]). The sums are kept in increasing sequence order (a
/// packet's sums are kept when it settles, and packets settle in order).
pub(crate) struct SumsDescending<'a> {
    ledger: &'a ReceivedLedger,
    /// Entries at and above it hold sequences above the last one looked up.
    index: usize,
    /// The last sequence looked up.
    last: u64,
}

impl SumsDescending<'_> {
    /// The kept (sequence, below, through) of `sequence`, if any. A sequence above the last one
    /// looked up (which a consistent history never asks) starts over from the newest.
    fn entry(&mut self, sequence: u64) -> Option<(u64, u16, u16)> {
        if sequence > self.last {
            self.index = self.ledger.sums.len();
        }
        self.last = sequence;
        while let Some(&entry) = self
            .index
            .checked_sub(1)
            .and_then(|i| self.ledger.sums.get(i))
        {
            if entry.0 <= sequence {
                return (entry.0 == sequence).then_some(entry);
            }
            self.index -= 1;
        }
        None
    }

    /// Sum of the marks received below `sequence`, if kept.
    pub(crate) fn below(&mut self, sequence: u64) -> Option<u16> {
        if Some(sequence) == self.ledger.origin {
            return Some(0);
        }
        self.entry(sequence).map(|entry| entry.1)
    }

    /// Sum of the marks received up to and including `sequence`, if kept.
    pub(crate) fn through(&mut self, sequence: u64) -> Option<u16> {
        self.entry(sequence).map(|entry| entry.2)
    }
}

/// Slots of the receiver's mark ring: a power of two (so that sequence numbers keep their slot
/// across the 2^32 wrap) that holds a whole proof window below a run ending
/// [`crate::wire::PROOF_MAX_OFFSET`] packets under the newest packet.
pub(crate) const MARK_SLOTS: usize = 128;
const _: () = assert!(
    MARK_SLOTS.is_power_of_two()
        && MARK_SLOTS > crate::wire::PROOF_WINDOW as usize + crate::wire::PROOF_MAX_OFFSET as usize
);

/// One received packet's mark, with the run of consecutive received packets that ends at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MarkSlot {
    sequence: u32,
    mark: u16,
    /// Consecutive packets received up to and including this one (at least 1), as far as the
    /// ring held them when this slot was last updated.
    run: u32,
    /// Sum (mod 2^16) of the marks of those `run` packets.
    run_sum: u16,
}

/// The receiver's marks of recently received packets, by sequence number modulo
/// [`MARK_SLOTS`]: what a feedback's receipt proof sums ([`crate::wire::ReceiptProof`]).
///
/// Each slot also keeps the run of consecutive packets ending at it and that run's mark sum,
/// so that the sum of the last `n` packets of a run is a difference of two slots' sums: a
/// proof costs two lookups instead of a walk over up to [`crate::wire::PROOF_WINDOW`] slots.
/// A packet that fills a gap joins the runs on either side: the slots after it (at most
/// [`MARK_SLOTS`], as many as the ring holds consecutively) are brought up to date.
#[derive(Debug, Clone)]
pub(crate) struct RecentMarks {
    slots: Box<[Option<MarkSlot>; MARK_SLOTS]>,
    /// The newest packet inserted (in sequence order, across the wrap).
    newest: Option<u32>,
}

impl Default for RecentMarks {
    fn default() -> RecentMarks {
        RecentMarks {
            slots: Box::new([None; MARK_SLOTS]),
            newest: None,
        }
    }
}

impl RecentMarks {
    fn slot(&self, sequence: u32) -> Option<&MarkSlot> {
        self.slots[sequence as usize % MARK_SLOTS]
            .as_ref()
            .filter(|slot| slot.sequence == sequence)
    }

    /// The mark of packet `sequence`, if the ring holds it.
    pub(crate) fn mark(&self, sequence: u32) -> Option<u16> {
        self.slot(sequence).map(|slot| slot.mark)
    }

    /// Packet `sequence` arrived with `mark` (a copy replaces the earlier mark; a packet
    /// older than the one in its slot replaces it too, as the ring always kept the latest
    /// arrival).
    pub(crate) fn insert(&mut self, sequence: u32, mark: u16) {
        if self
            .newest
            .is_none_or(|newest| crate::wire::sequence_distance(newest, sequence) > 0)
        {
            self.newest = Some(sequence);
        }
        let evicted_newer = self.slots[sequence as usize % MARK_SLOTS]
            .map(|slot| slot.sequence)
            .filter(|&old| crate::wire::sequence_distance(sequence, old) > 0);
        self.link(sequence, mark);
        self.relink_after(sequence);
        if let Some(old) = evicted_newer {
            // The packets after the one evicted no longer continue its run.
            self.relink_after(old);
        }
    }

    /// Writes packet `sequence`'s slot, its run continuing the packet before it if the ring
    /// holds that one; whether the slot changed.
    fn link(&mut self, sequence: u32, mark: u16) -> bool {
        let (run, run_sum) = match self.slot(sequence.wrapping_sub(1)) {
            Some(before) => (
                before.run.saturating_add(1),
                before.run_sum.wrapping_add(mark),
            ),
            None => (1, mark),
        };
        let slot = Some(MarkSlot {
            sequence,
            mark,
            run,
            run_sum,
        });
        let index = sequence as usize % MARK_SLOTS;
        let changed = self.slots[index] != slot;
        self.slots[index] = slot;
        changed
    }

    /// Brings the runs of the packets after `sequence` up to date, as far as they change
    /// (bounded: the ring holds at most [`MARK_SLOTS`] consecutive packets).
    fn relink_after(&mut self, sequence: u32) {
        let mut next = sequence.wrapping_add(1);
        for _ in 0..MARK_SLOTS {
            let Some(mark) = self.mark(next) else {
                break;
            };
            if !self.link(next, mark) {
                break;
            }
            next = next.wrapping_add(1);
        }
    }

    /// The run of consecutive received packets ending at `end`, at most `window` long: its
    /// length and the sum of its marks, as a walk over the ring from `end` down gives them.
    /// When `end` is less than `MARK_SLOTS − window` below the newest packet, no packet of the
    /// run's last `window` can have left the ring and the sum is a difference of two slots'
    /// sums; otherwise the ring is walked.
    pub(crate) fn run_ending(&self, end: u32, window: u16) -> (u16, u16) {
        let newest = self.newest.unwrap_or(end);
        if (newest.wrapping_sub(end) as usize) < MARK_SLOTS - usize::from(window) {
            let Some(last) = self.slot(end) else {
                return (0, 0);
            };
            let length = last.run.min(u32::from(window));
            if length == last.run {
                return (length as u16, last.run_sum);
            }
            let before = self
                .slot(end.wrapping_sub(length))
                .expect("a run longer than `length` holds the packet before its last `length`");
            return (length as u16, last.run_sum.wrapping_sub(before.run_sum));
        }
        let (mut length, mut sum) = (0u16, 0u16);
        while length < window {
            let Some(mark) = self.mark(end.wrapping_sub(u32::from(length))) else {
                break;
            };
            sum = sum.wrapping_add(mark);
            length += 1;
        }
        (length, sum)
    }
}

/// What the sender remembers of one sent packet.
#[derive(Debug, Clone, Copy, Default)]
struct SentRecord {
    at: Instant,
    /// Sum of the marks of every packet sent before this one.
    marks_before: u16,
    /// Payload bytes sent before this one.
    payload_before: u64,
    /// The R this packet carried (the receiver's R_m), microseconds.
    rtt_micros: u32,
    /// Sent after a no-feedback expiry and before the next feedback taken: a silence in which
    /// the receiver's timing of losses (interpolated, RFC 5348 §5.2) cannot be checked.
    silent: bool,
    /// The sender's round (feedbacks taken and no-feedback expiries before it: ns-2's
    /// `round_id`).
    round: u32,
}

/// Most packets the sent ledger remembers.
const MAX_SENT_RECORDS: usize = 1 << 17;
/// Fewest packets it keeps, however old.
const MIN_SENT_RECORDS: usize = 256;
/// How many R back it keeps packets (more are kept while fewer than the minimum).
const SENT_SPAN_RTTS: u32 = 8;
/// Most entries of each cache of facts already checked.
const MAX_CACHED: usize = 32;

/// The sender's record of recent packets (index = packets sent before it) and of facts about
/// older ones that a proof already established: the running mark sum at the start of a data
/// part (so that a long open interval stays checkable after its start left the record) and
/// the intervals whose proofs were checked.
#[derive(Debug, Clone)]
pub(crate) struct SentLedger {
    first: u64,
    records: Deque<SentRecord>,
    marks: u16,
    payload: u64,
    /// (index, sum of the marks sent before it).
    anchors: Deque<(u64, u16)>,
    lossy_checked: Deque<(u64, u32)>,
    closed_checked: Deque<(u64, u32, u32, u16)>,
    closed_memo: ClosedMemo,
    /// The newest first packet of a lossy part the one-event cache forgot while the closed
    /// intervals are checked ([`SentLedger::check_closed`], [`ClosedMemo`]).
    forgotten_lossy: Option<u64>,
    /// Where [`SentLedger::first_sent_after`] last found its answer (an index).
    window_hint: u64,
}

impl Default for SentLedger {
    /// An empty ledger whose bounded caches have their full room from the start, so that a
    /// settled session does not allocate when they reach it.
    fn default() -> SentLedger {
        SentLedger {
            first: 0,
            records: Deque::default(),
            marks: 0,
            payload: 0,
            anchors: Deque::with_capacity(MAX_CACHED + 1),
            lossy_checked: Deque::with_capacity(MAX_CACHED + 1),
            closed_checked: Deque::with_capacity(MAX_CACHED + 1),
            closed_memo: ClosedMemo::default(),
            forgotten_lossy: None,
            window_hint: 0,
        }
    }
}

impl SentLedger {
    /// Records the next packet, sent at `at` with `mark` and `payload` bytes; `rtt_micros` is
    /// the sender's R the packet carries (0: none yet), which bounds how far back the record
    /// reaches; `silent` and `round` as [`SentRecord`] says.
    pub(crate) fn record(
        &mut self,
        at: Instant,
        mark: u16,
        payload: u64,
        rtt_micros: u32,
        (silent, round): (bool, u32),
    ) {
        // Packets older than SENT_SPAN_RTTS R go (R = 0: none yet, keep them), before the new
        // one comes in, so that a ring at its steady length does not grow for it.
        let span_nanos = u64::from(rtt_micros) * 1000 * u64::from(SENT_SPAN_RTTS);
        let now = at.as_nanos();
        while self.records.len() >= MAX_SENT_RECORDS
            || (self.records.len() >= MIN_SENT_RECORDS
                && span_nanos > 0
                && self
                    .records
                    .front()
                    .is_some_and(|front| now.saturating_sub(front.at.as_nanos()) > span_nanos))
        {
            self.records.pop_front();
            self.first += 1;
        }
        self.records.push_back(SentRecord {
            at,
            marks_before: self.marks,
            payload_before: self.payload,
            rtt_micros,
            silent,
            round,
        });
        self.marks = self.marks.wrapping_add(mark);
        self.payload += payload;
    }

    fn get(&self, index: u64) -> Option<&SentRecord> {
        index
            .checked_sub(self.first)
            .and_then(|offset| self.records.get(usize::try_from(offset).ok()?))
    }

    /// Index of the next packet to be sent.
    fn next(&self) -> u64 {
        self.first + self.records.len() as u64
    }

    /// Sum of the marks of the packets sent before packet `index`, if known.
    fn marks_before(&self, index: u64) -> Option<u16> {
        if index == self.next() {
            return Some(self.marks);
        }
        if let Some(record) = self.get(index) {
            return Some(record.marks_before);
        }
        self.anchors
            .iter()
            .find(|anchor| anchor.0 == index)
            .map(|anchor| anchor.1)
    }

    /// Payload bytes sent before packet `index`, if remembered.
    fn payload_before(&self, index: u64) -> Option<u64> {
        if index == self.next() {
            return Some(self.payload);
        }
        self.get(index).map(|record| record.payload_before)
    }

    /// When packet `index` was sent, if remembered.
    pub(crate) fn sent_at(&self, index: u64) -> Option<Instant> {
        self.get(index).map(|record| record.at)
    }

    /// The R packet `index` carried, if remembered.
    fn rtt_of(&self, index: u64) -> Option<Duration> {
        self.get(index)
            .map(|record| Duration::from_micros(u64::from(record.rtt_micros)))
    }

    /// Payload bytes of packets `first..=last` among those remembered.
    fn payload_between(&self, first: u64, last: u64) -> u64 {
        let first = first.max(self.first);
        let end = (last + 1).min(self.next());
        if end <= first {
            return 0;
        }
        match (self.payload_before(first), self.payload_before(end)) {
            (Some(before), Some(through)) => through.saturating_sub(before),
            _ => 0,
        }
    }

    /// The first remembered packet sent after `at`.
    ///
    /// Found from where the last search ended (`window_hint`): X_recv's window starts a little
    /// later at each feedback, a few records on, so the search reads the records next to the
    /// answer instead of a binary search's dozen scattered ones (cache misses that cost the
    /// feedback more than its instructions). Send times never decrease, so the answer is the
    /// one `partition_point` gives.
    fn first_sent_after(&mut self, at: Instant) -> u64 {
        const STEPS: usize = 64;
        let len = self.records.len();
        let mut offset = usize::try_from(self.window_hint.saturating_sub(self.first))
            .unwrap_or(len)
            .min(len);
        let before_is_in = offset == 0 || self.records[offset - 1].at <= at;
        let mut found = false;
        if before_is_in {
            for _ in 0..STEPS {
                if offset == len || self.records[offset].at > at {
                    found = true;
                    break;
                }
                offset += 1;
            }
        }
        if !found {
            offset = self.records.partition_point(|record| record.at <= at);
        }
        self.window_hint = self.first + offset as u64;
        self.window_hint
    }

    /// Whether the sum of the marks of packets `first..=last` is `sum`; `None` when the ledger
    /// no longer knows.
    pub(crate) fn sum_matches(&self, first: u64, last: u64, sum: u16) -> Option<bool> {
        let through = self.marks_before(last + 1)?;
        let before = self.marks_before(first)?;
        Some(through.wrapping_sub(before) == sum)
    }

    /// Keeps the mark sum before packet `index` once it leaves the record.
    fn remember_anchor(&mut self, index: u64) {
        // The newest anchor first: the open interval's data part keeps its start from one
        // feedback to the next until a loss closes it.
        if self.anchors.back().is_some_and(|anchor| anchor.0 == index)
            || self.anchors.iter().any(|anchor| anchor.0 == index)
        {
            return;
        }
        if let Some(before) = self.marks_before(index) {
            self.anchors.push_back((index, before));
            if self.anchors.len() > MAX_CACHED {
                self.anchors.pop_front();
            }
        }
    }
}

/// Why a feedback's loss intervals were not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FalseIntervals {
    /// A data part's sum is wrong (a packet in it was lost), or the intervals contradict what
    /// was sent or reported before: a proven lie.
    Proven,
    /// The open interval's data part starts before what the sender remembers (its ledger and
    /// the sums it kept at the data parts it checked): nothing to check it against. An honest
    /// receiver's open interval was checked while its start was recent.
    Unknown,
}

/// A feedback's loss intervals, checked: what p is recomputed from, twice.
///
/// As claimed (`open`, `closed`): every interval as the receiver counts it. The p these give
/// (with the most a receiver's unproven rules can lengthen them) is the least an honest receiver
/// reports: below it is a proven lie.
///
/// As the sender reads them (`open_counted`, `closed_counted`): a lossy part that spans more
/// than a loss event can (RFC 5348 §5.2: the losses within one RTT of the first; here
/// [`SPAN_SLACK_RTTS`] R of sending, or [`ROUND_SLACK`] rounds under ns-2's rule, outside a
/// silence) is not taken as one event: its interval counts from its last loss. A tail is a loss
/// not yet detected (RFC 5348 §5.1: it waits for NDUPACK later packets): it is taken when it is
/// new, short ([`MAX_SHORT_TAIL`] packets) or within [`SPAN_SLACK_RTTS`] R of sending; one that
/// stays (the same first packet as the last feedback's tail) and is longer is left out of I_0.
/// A receiver cannot move a tail on without covering what it leaves by a data part (proven) or
/// a lossy part (a loss event). The sender uses the larger of the reported p and
/// the p of this reading: a receiver gains nothing by merging loss events into long lossy parts
/// or by a long tail, and an honest one (whose interpolated loss times, §5.2, may stray from the
/// send times in an outage or a burst) is never refused for it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CheckedIntervals {
    /// I_0 in packets as the receiver counts it (highest − start + 1).
    pub(crate) open: u64,
    /// I_0 as the sender reads it.
    pub(crate) open_counted: u64,
    /// I_0's data part (packets proven received).
    pub(crate) open_data: u64,
    /// The first packet of I_0's tail, if it has one.
    pub(crate) tail_first: Option<u64>,
    /// Payload bytes sent before the first packet the feedback does not account for (past I_0's
    /// data part, a short tail, and the receipt proof's run): what the receiver has reported
    /// received or lost so far, if the ledger still knows.
    pub(crate) accounted_payload: Option<u64>,
    /// Whether Veno stretched I_0.
    pub(crate) open_stretched: bool,
    /// The closed intervals, newest first: (packets as claimed, packets as read, stretched).
    pub(crate) closed: [(u64, u64, bool); crate::loss_history::INTERVALS_AVERAGED],
    /// How many closed intervals (the synthetic one included).
    pub(crate) closed_count: usize,
    /// The synthetic interval's length as claimed (the oldest closed one), if present.
    pub(crate) synthetic: Option<u64>,
    /// The first packet of the interval after the synthetic one (the first loss event).
    pub(crate) first_event: Option<u64>,
    /// Payload bytes of the packets sent in the window asked that the intervals account for:
    /// proven received (data parts) or inside a loss event (lossy parts, which a receiver can
    /// claim only by reporting a loss event); of the open interval's tail, a short one or the
    /// receipt proof's run.
    pub(crate) proven_payload: u64,
    /// The R the window spans (set by the sender).
    pub(crate) window_rtt: Duration,
    /// The first packet the receiver's history reaches (set by the sender).
    pub(crate) origin: u64,
    /// The most the synthetic interval may count (set by the sender).
    pub(crate) synthetic_cap: f64,
}

impl CheckedIntervals {
    /// Whether the sender reads every interval as the receiver claims it (I_0, the closed
    /// ones, and a synthetic interval within its cap): then both readings give the same p.
    pub(crate) fn read_as_claimed(&self) -> bool {
        self.open_counted == self.open
            && self.closed[..self.closed_count]
                .iter()
                .all(|&(claimed, read, _)| claimed == read)
            && self
                .synthetic
                .is_none_or(|length| length as f64 <= self.synthetic_cap)
    }
}

/// Up to a dozen spans of packets (first, length), without allocating.
#[derive(Debug, Default)]
struct Spans {
    items: [(u64, u64); 12],
    len: usize,
}

impl Spans {
    /// Adds a span; one that starts where the last ends, or ends where it starts, extends it
    /// (the intervals are pushed newest first, each ending where the one before starts, so a
    /// feedback's spans are usually one or two): the payload of joined spans is the sum of
    /// theirs, whatever the window cuts off ([`SentLedger::payload_in_window`]).
    fn push(&mut self, (first, length): (u64, u64)) {
        if let Some(last) = self.len.checked_sub(1).and_then(|i| self.items.get_mut(i)) {
            if last.0 + last.1 == first {
                last.1 += length;
                return;
            }
            if first + length == last.0 {
                *last = (first, length + last.1);
                return;
            }
        }
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = (first, length);
            self.len += 1;
        }
    }
}

/// The closed intervals of the last feedback whose closed intervals were read without a doubt.
/// A receiver repeats its closed intervals until its next loss event, and their reading then
/// depends on nothing that changed: each data part's sum is cached once checked, and each lossy
/// part found to be one event is cached as such. So when a feedback's closed intervals are
/// these, from the same open start, [`SentLedger::check_closed`] reads each as it claims
/// without the per-interval cache lookups. Kept only when every lossy part was one event (one
/// found not to be is not cached, and a later R may judge it again), and dropped when the
/// one-event cache forgets a lossy part that starts among them (a later R could judge it again).
/// The sums' cache forgetting one of them changes nothing: a data part whose sum was right stays
/// right (its marks are fixed), or is taken as reported once the ledger forgets it.
#[derive(Debug, Clone, Copy, Default)]
struct ClosedMemo {
    /// Whether `open_start` and `intervals` hold a feedback's closed intervals.
    valid: bool,
    open_start: u64,
    /// The first packet of the oldest of them (not the synthetic interval, which has none).
    oldest_first: u64,
    count: usize,
    intervals: [crate::wire::LossInterval; crate::loss_history::INTERVALS_AVERAGED],
}

impl ClosedMemo {
    /// Whether `closed`, from `open_start`, are the intervals kept.
    fn holds(&self, open_start: u64, closed: &[crate::wire::LossInterval]) -> bool {
        self.valid && self.open_start == open_start && self.intervals[..self.count] == *closed
    }

    /// Keeps `closed` from `open_start`, the oldest starting at `oldest_first`, if every one of
    /// them was read as claimed; else forgets.
    fn keep(
        &mut self,
        open_start: u64,
        oldest_first: u64,
        closed: &[crate::wire::LossInterval],
        as_claimed: bool,
    ) {
        self.valid = as_claimed && closed.len() <= self.intervals.len();
        if self.valid {
            self.open_start = open_start;
            self.oldest_first = oldest_first;
            self.count = closed.len();
            self.intervals[..closed.len()].copy_from_slice(closed);
        }
    }
}

/// What checking a feedback's intervals needs to know besides the ledger.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CheckContext {
    /// Packets sent so far (the next index).
    pub(crate) sent: u64,
    /// The open interval's first packet, as an index.
    pub(crate) open_start: u64,
    /// The sender's R now.
    pub(crate) rtt: Duration,
    /// The first packet the receiver proved, from its first accepted feedback.
    pub(crate) receiver_start: Option<u64>,
    /// The first loss event's first packet, from the first feedback that reported it.
    pub(crate) first_event: Option<u64>,
    /// Packets sent in (t_echo − 2R, echo]: the window whose proven payload bounds X_recv.
    pub(crate) window: (Instant, u64),
    /// The receipt proof's run ([`crate::wire::ReceiptProof`], checked): first packet and
    /// length. Its packets above the intervals' data (in the tail) were received too.
    pub(crate) receipt_run: (u64, u64),
    /// The receiver joins losses to a loss event by rounds as well as by time (ns-2.35's
    /// `PreciseLoss_`: a loss starts a new event only when revealed by a packet of a later
    /// round than the event's, [`crate::Profile::Ns2`]).
    pub(crate) rounds: bool,
    /// Packets an earlier feedback proved received before any loss (the data part of its
    /// loss-free open interval): first and last. The synthetic interval stands for them once a
    /// loss happened.
    pub(crate) loss_free: Option<(u64, u64)>,
    /// The first packet of the tail of the last feedback taken, if it had one.
    pub(crate) previous_tail: Option<u64>,
}

/// How much longer than R (in send time) a lossy part or a tail may span: a loss event holds
/// the losses within one RTT of its first (RFC 5348 §5.2), judged by arrival times, which the
/// path's delay variation may spread from the send times; the slack covers a queue that
/// drains by up to R between the event's first and last loss.
const SPAN_SLACK_RTTS: u32 = 2;

/// Under ns-2.35's rounds, the rounds a loss event may span: its first loss's packet is sent in
/// one round, revealed by a packet of that round or the next, and every loss that packet's
/// round reveals joins the event (sent up to the end of that round).
const ROUND_SLACK: u32 = 2;

/// A tail of at most this many packets is taken whatever its span: a gap waits for NDUPACK
/// later packets before it is declared lost (RFC 5348 §5.1), so at a low packet rate an honest
/// tail (a burst of lost packets and the one or two after it) spans many R of sending, over
/// several feedbacks: in the paper scenarios, 9 to 16 packets in 358 of 92,629 feedbacks with
/// 8 as the bound, 2 of 92,430 above 16 (e003's 64 flows through one queue). A receiver gains at most
/// these packets on I_0 by claiming such a tail.
const MAX_SHORT_TAIL: u32 = 16;

impl SentLedger {
    /// Checks a feedback's loss intervals ([`crate::wire::LossIntervals`]) against what was
    /// sent: contiguous intervals within the packets sent, every data part's sum right, and a
    /// history that reaches back as the receiver's must (to its first packet before any loss;
    /// to the one synthetic interval, unmoved, until eight loss events have passed). Reads
    /// the lossy parts and the tail as [`CheckedIntervals`] says, into `checked` (a fresh
    /// `CheckedIntervals::default()`: only what the check finds is written).
    pub(crate) fn check(
        &mut self,
        intervals: &crate::wire::LossIntervals,
        context: &CheckContext,
        checked: &mut CheckedIntervals,
    ) -> Result<(), FalseIntervals> {
        let entries = intervals.iter().as_slice();
        let Some((open, closed)) = entries.split_first() else {
            return Err(FalseIntervals::Proven);
        };
        let mut proven = Spans::default();
        self.check_open(open, intervals.tail, context, checked, &mut proven)?;
        self.check_closed(closed, context, checked, &mut proven)?;
        if let (Some((first, last)), Some(first_event)) = (context.loss_free, checked.first_event) {
            let last = last.min(first_event.saturating_sub(1));
            if last >= first {
                proven.push((first, last - first + 1));
            }
        }
        // The history must reach back as the receiver's does.
        if let (Some(claimed), Some(known)) = (checked.first_event, context.first_event) {
            if claimed != known {
                return Err(FalseIntervals::Proven);
            }
        }
        if closed.is_empty() {
            // No loss ever: the open interval starts at the receiver's first packet, and
            // nothing in it was lost.
            if open.lossy != 0
                || context
                    .receiver_start
                    .is_some_and(|first| first != context.open_start)
            {
                return Err(FalseIntervals::Proven);
            }
        } else if checked.synthetic.is_none()
            && closed.len() < crate::loss_history::INTERVALS_AVERAGED
        {
            // Fewer than eight loss events and no synthetic interval: history cut short.
            return Err(FalseIntervals::Proven);
        }
        checked.proven_payload = self.payload_in_window(&proven, context.window);
        Ok(())
    }

    /// The open interval: its lossy part, its data part (checked), its tail, how the sender
    /// reads them, what they account for, written to `checked` (fresh); the spans it proves go
    /// to `proven`.
    fn check_open(
        &mut self,
        open: &crate::wire::LossInterval,
        tail: u32,
        context: &CheckContext,
        checked: &mut CheckedIntervals,
        proven: &mut Spans,
    ) -> Result<(), FalseIntervals> {
        let start = context.open_start;
        let short_tail = tail <= MAX_SHORT_TAIL;
        let tail = u64::from(tail);
        let total = open.span() + tail;
        if open.is_synthetic() || total == 0 || start + total > context.sent {
            return Err(FalseIntervals::Proven);
        }
        let (rtt, rounds) = (context.rtt, context.rounds);
        let data_first = start + u64::from(open.lossy);
        if open.data > 0 && self.marks_before(data_first).is_none() {
            return Err(FalseIntervals::Unknown);
        }
        self.check_data(data_first, open.data, open.sum)?;
        if open.data > 0 {
            self.remember_anchor(data_first);
        }
        let lossy_read = if self.lossy_is_one_event(start, open.lossy, rtt, rounds) {
            u64::from(open.lossy)
        } else {
            1
        };
        let tail_first = data_first + u64::from(open.data);
        let tail_read = if short_tail
            || context.previous_tail != Some(tail_first)
            || self.spans_one_event(tail_first, tail_first + tail - 1, rtt, rounds)
        {
            tail
        } else {
            0
        };
        // Accounted for: up to the data part's end, a short tail's, or the receipt run's.
        let (run_first, run_length) = context.receipt_run;
        let run_end = run_first + run_length;
        let mut accounted_end = tail_first.max(run_end);
        proven.push((start, u64::from(open.lossy) + u64::from(open.data)));
        if short_tail {
            // A pending loss and the few packets after it, taken as received as its span is
            // (at most MAX_SHORT_TAIL packets of X_recv's window).
            accounted_end = accounted_end.max(tail_first + tail);
            proven.push((tail_first, tail));
        } else if run_end > tail_first {
            // Of a long tail, the receipt proof's run (checked) is known received.
            let first = run_first.max(tail_first);
            proven.push((first, run_end - first));
        }
        checked.open = total;
        checked.open_counted = lossy_read + u64::from(open.data) + tail_read;
        checked.open_data = u64::from(open.data);
        checked.tail_first = (tail > 0).then_some(tail_first);
        checked.accounted_payload = self.payload_before(accounted_end.min(context.sent));
        checked.open_stretched = open.is_stretched();
        Ok(())
    }

    /// Drops the [`ClosedMemo`].
    pub(crate) fn forget_closed_memo(&mut self) {
        self.closed_memo.valid = false;
    }

    /// The one-event cache forgot the lossy part starting at `first`: the [`ClosedMemo`] goes if
    /// the part may be one of its intervals'.
    fn forgot_lossy(&mut self, first: u64) {
        self.forgotten_lossy = self.forgotten_lossy.max(Some(first));
        if self.closed_memo.valid && first >= self.closed_memo.oldest_first {
            self.closed_memo.valid = false;
        }
    }

    /// The closed intervals, newest first, each ending where the newer one starts: their data
    /// parts checked (once each), how the sender reads them; the spans go to `proven`. The
    /// intervals the last such check read without a doubt ([`ClosedMemo`]) read the same again
    /// without the caches.
    fn check_closed(
        &mut self,
        closed: &[crate::wire::LossInterval],
        context: &CheckContext,
        checked: &mut CheckedIntervals,
        proven: &mut Spans,
    ) -> Result<(), FalseIntervals> {
        let known = self.closed_memo.holds(context.open_start, closed);
        self.forgotten_lossy = None;
        let mut as_claimed = true;
        let mut end = context.open_start;
        for (position, interval) in closed.iter().enumerate() {
            if interval.is_synthetic() {
                if position + 1 != closed.len() {
                    return Err(FalseIntervals::Proven);
                }
                let length = u64::from(interval.data);
                checked.synthetic = Some(length);
                checked.first_event = Some(end);
                checked.closed[checked.closed_count] = (length, length, false);
                checked.closed_count += 1;
                break;
            }
            let span = interval.span();
            let Some(first) = end.checked_sub(span).filter(|_| span > 0) else {
                return Err(FalseIntervals::Proven);
            };
            let read = if known {
                span
            } else {
                self.check_closed_one(position, first, interval, context)?
            };
            as_claimed &= read == span;
            proven.push((first, span));
            checked.closed[checked.closed_count] = (span, read, interval.is_stretched());
            checked.closed_count += 1;
            end = first;
        }
        // The one-event cache may have forgotten during this check a lossy part it read (one
        // starting at or after the oldest interval's first packet, `end`).
        if !known && self.forgotten_lossy.is_none_or(|first| first < end) {
            self.closed_memo
                .keep(context.open_start, end, closed, as_claimed);
        }
        Ok(())
    }

    /// One closed interval, `position` places from the newest, starting at packet `first`: its
    /// data part checked (once: cached), and how many packets the sender reads it as (its span
    /// if its lossy part can be one loss event, else its data part and one loss).
    fn check_closed_one(
        &mut self,
        position: usize,
        first: u64,
        interval: &crate::wire::LossInterval,
        context: &CheckContext,
    ) -> Result<u64, FalseIntervals> {
        let key = (first, interval.lossy, interval.data, interval.sum);
        // Intervals enter the cache as they close, so the one `position` places from the
        // newest is usually as far from the cache's end: looked at first.
        let likely = self
            .closed_checked
            .len()
            .checked_sub(position + 1)
            .and_then(|index| self.closed_checked.get(index));
        if likely != Some(&key) && !self.closed_checked.iter().rev().any(|done| *done == key) {
            let data_first = first + u64::from(interval.lossy);
            self.check_data(data_first, interval.data, interval.sum)?;
            self.closed_checked.push_back(key);
            if self.closed_checked.len() > MAX_CACHED {
                // The ClosedMemo stays: an interval whose sum was right reads the same checked
                // again (see there).
                self.closed_checked.pop_front();
            }
        }
        Ok(
            if self.lossy_is_one_event(first, interval.lossy, context.rtt, context.rounds) {
                interval.span()
            } else {
                u64::from(interval.data) + 1
            },
        )
    }

    /// Payload of the `proven` spans' packets sent in the window (after its start, up to the
    /// echoed packet).
    fn payload_in_window(&mut self, proven: &Spans, (window_start, echo): (Instant, u64)) -> u64 {
        let window_first = self.first_sent_after(window_start);
        proven.items[..proven.len]
            .iter()
            .filter(|(_, length)| *length > 0)
            .map(|&(first, length)| {
                let last = (first + length - 1).min(echo);
                let first = first.max(window_first);
                if last < first {
                    0
                } else {
                    self.payload_between(first, last)
                }
            })
            .sum()
    }

    /// A data part of `length` packets from `first` must sum to `sum`. Packets the ledger no
    /// longer remembers (sent more than [`SENT_SPAN_RTTS`] R ago, and not anchored by an
    /// earlier proof) are taken as reported: the sum of a part checked while it was recent is
    /// cached, so only history older than the record can be rearranged, and only among
    /// intervals of fixed total span.
    fn check_data(&self, first: u64, length: u32, sum: u16) -> Result<(), FalseIntervals> {
        if length == 0 {
            return Ok(());
        }
        match self.sum_matches(first, first + u64::from(length) - 1, sum) {
            Some(false) => Err(FalseIntervals::Proven),
            Some(true) | None => Ok(()),
        }
    }

    /// Whether a lossy part of `length` packets from `first` can be one loss event (cached).
    fn lossy_is_one_event(&mut self, first: u64, length: u32, rtt: Duration, rounds: bool) -> bool {
        if length <= 1
            || self
                .lossy_checked
                .iter()
                .rev()
                .any(|checked| *checked == (first, length))
        {
            return true;
        }
        let one = self.spans_one_event(first, first + u64::from(length) - 1, rtt, rounds);
        if one {
            self.lossy_checked.push_back((first, length));
            if self.lossy_checked.len() > MAX_CACHED {
                if let Some((forgotten, _)) = self.lossy_checked.pop_front() {
                    self.forgot_lossy(forgotten);
                }
            }
        }
        one
    }

    /// Whether packets `first..=last` were sent within [`SPAN_SLACK_RTTS`] R (the larger of
    /// the sender's R now and the R the first of them carried), leaving out those sent in a
    /// silence (no feedback taken since a no-feedback expiry: during an outage the sender slows
    /// down while the receiver spreads the lost packets evenly over the gap, RFC 5348 §5.2, and a
    /// receiver that goes silent to merge loss events pays for it with halvings, §4.4), or,
    /// where losses join an event by rounds (`rounds`), within [`ROUND_SLACK`] rounds. Packets
    /// the ledger no longer remembers pass.
    fn spans_one_event(&self, first: u64, last: u64, rtt: Duration, rounds: bool) -> bool {
        let (Some(from), Some(to)) = (self.get(first), self.get(last)) else {
            return true;
        };
        if rounds && to.round.wrapping_sub(from.round) <= ROUND_SLACK {
            return true;
        }
        let allowance = rtt.max(self.rtt_of(first).unwrap_or(Duration::ZERO)) * SPAN_SLACK_RTTS;
        if to.at - from.at <= allowance {
            return true;
        }
        // Packets sent in a silence, or before the sender had an RTT (the receiver then had no
        // R_m either, and joins every loss it sees at once into one event), are not judged.
        let heard = |index: &u64| {
            self.get(*index)
                .is_some_and(|record| !record.silent && record.rtt_micros > 0)
        };
        match (
            (first..=last)
                .find(heard)
                .and_then(|index| self.sent_at(index)),
            (first..=last)
                .rev()
                .find(heard)
                .and_then(|index| self.sent_at(index)),
        ) {
            (Some(from), Some(to)) => to - from <= allowance,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The receipt proof's run as a walk over the ring gives it (what the receiver computed
    /// before [`RecentMarks`] kept runs): the reference the fast path must match.
    fn walked(marks: &RecentMarks, end: u32, window: u16) -> (u16, u16) {
        let (mut length, mut sum) = (0u16, 0u16);
        while length < window {
            let Some(mark) = marks.mark(end.wrapping_sub(u32::from(length))) else {
                break;
            };
            sum = sum.wrapping_add(mark);
            length += 1;
        }
        (length, sum)
    }

    proptest! {
        /// Searching from the last answer finds what a binary search over the whole ledger finds:
        /// packets sent at times that may repeat, the ledger forgetting its oldest records once
        /// they are more than 8 R old (R = 1 µs here), and a query after each packet, at a time
        /// some way back (rising, as X_recv's window start does) or anywhere.
        #[test]
        fn first_sent_after_from_the_hint_is_the_binary_search(
            steps in proptest::collection::vec(
                (0u64..3_000, 0u64..20_000, any::<bool>()),
                1..700,
            ),
        ) {
            let mut ledger = SentLedger::default();
            let mut at = 0;
            for (gap, back, anywhere) in steps {
                at += gap;
                ledger.record(Instant::from_nanos(at), 1, 100, 1, (false, 0));
                let query = if anywhere { back * 100 } else { at.saturating_sub(back) };
                let query = Instant::from_nanos(query);
                let expected = ledger.first
                    + ledger.records.partition_point(|record| record.at <= query) as u64;
                prop_assert_eq!(ledger.first_sent_after(query), expected);
            }
            prop_assert!(ledger.first > 0 || ledger.records.len() < MIN_SENT_RECORDS + 50);
        }

        /// Arrivals in any order (late packets, copies with other marks, gaps, jumps beyond the
        /// ring, the 2^32 wrap): every run the proof may ask for is the walk's.
        #[test]
        fn runs_from_kept_sums_are_the_walks(
            start in prop_oneof![Just(u32::MAX - 200), any::<u32>()],
            steps in proptest::collection::vec((-20i64..300, any::<u16>()), 1..400),
        ) {
            let mut marks = RecentMarks::default();
            let mut next = start;
            for (step, mark) in steps {
                // Mostly the next packet; sometimes an earlier one (late or a copy) or a jump.
                let sequence = match step {
                    0..=200 => next,
                    201..=280 => next.wrapping_add((step - 200) as u32),
                    _ => next.wrapping_sub(step.unsigned_abs() as u32),
                };
                marks.insert(sequence, mark);
                if crate::wire::sequence_distance(next, sequence) >= 0 {
                    next = sequence.wrapping_add(1);
                }
                let newest = marks.newest.expect("a packet was inserted");
                for below in 0..80u32 {
                    let end = newest.wrapping_sub(below);
                    prop_assert_eq!(
                        marks.run_ending(end, crate::wire::PROOF_WINDOW),
                        walked(&marks, end, crate::wire::PROOF_WINDOW),
                        "end {} newest {}", end, newest
                    );
                }
            }
        }
    }
}
