//! A set of packet sequence numbers stored as disjoint half-open ranges.
//!
//! Used by the sender's SACK scoreboard and by the sink's out-of-order bookkeeping. Windows are
//! packet-granular and at most a few thousand packets wide, so a `BTreeMap` of ranges keeps every
//! operation cheap even when each ACK repeats a long SACK block.

use std::collections::BTreeMap;

/// Disjoint, non-adjacent half-open ranges `[start, end)` of sequence numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SequenceRanges {
    /// `start -> end`; ranges never overlap nor touch (touching ranges are merged).
    ranges: BTreeMap<u64, u64>,
    /// Number of sequence numbers covered by all ranges.
    covered: u64,
}

impl SequenceRanges {
    /// An empty set.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds `[start, end)`; returns how many sequence numbers were not covered before.
    pub(crate) fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let mut merged_start = start;
        let mut merged_end = end;
        let mut already_covered = 0;
        // A range starting at or before `start` that reaches it (or touches it) is merged.
        if let Some((&previous_start, &previous_end)) = self.ranges.range(..=start).next_back() {
            if previous_end >= start {
                merged_start = previous_start;
                merged_end = merged_end.max(previous_end);
                already_covered += previous_end.min(end).saturating_sub(start);
                self.ranges.remove(&previous_start);
            }
        }
        // Every range starting inside (or right at the end of) the new one is absorbed.
        loop {
            let next = self
                .ranges
                .range(merged_start..=merged_end)
                .next()
                .map(|(&s, &e)| (s, e));
            let Some((next_start, next_end)) = next else {
                break;
            };
            already_covered += next_end.min(end).saturating_sub(next_start.max(start));
            merged_end = merged_end.max(next_end);
            self.ranges.remove(&next_start);
        }
        self.ranges.insert(merged_start, merged_end);
        let added = (end - start) - already_covered.min(end - start);
        self.covered += added;
        added
    }

    /// Whether `sequence` is in the set.
    pub(crate) fn contains(&self, sequence: u64) -> bool {
        self.range_containing(sequence).is_some()
    }

    /// The range `[start, end)` holding `sequence`, if any.
    pub(crate) fn range_containing(&self, sequence: u64) -> Option<(u64, u64)> {
        self.ranges
            .range(..=sequence)
            .next_back()
            .filter(|(_, &end)| end > sequence)
            .map(|(&start, &end)| (start, end))
    }

    /// Removes every sequence number below `bound`.
    pub(crate) fn remove_below(&mut self, bound: u64) {
        while let Some((&start, &end)) = self.ranges.iter().next() {
            if start >= bound {
                break;
            }
            self.ranges.remove(&start);
            if end > bound {
                self.ranges.insert(bound, end);
                self.covered -= bound - start;
                break;
            }
            self.covered -= end - start;
        }
    }

    /// Number of sequence numbers in the set.
    pub(crate) fn len(&self) -> u64 {
        self.covered
    }

    /// Whether the set is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.covered == 0
    }

    /// Number of members strictly below `bound`.
    pub(crate) fn count_below(&self, bound: u64) -> u64 {
        self.ranges
            .range(..bound)
            .map(|(&start, &end)| end.min(bound) - start)
            .sum()
    }

    /// The `rank`-th highest member (`rank` 1 is the highest), if the set has that many.
    pub(crate) fn nth_highest(&self, rank: u64) -> Option<u64> {
        if rank == 0 {
            return None;
        }
        let mut remaining = rank;
        for (&start, &end) in self.ranges.iter().rev() {
            let length = end - start;
            if remaining <= length {
                return Some(end - remaining);
            }
            remaining -= length;
        }
        None
    }

    /// The smallest sequence number `>= from` that is not in the set.
    pub(crate) fn first_gap_from(&self, from: u64) -> u64 {
        match self.range_containing(from) {
            Some((_, end)) => end,
            None => from,
        }
    }

    /// Calls `visit` with every maximal range `[gap_start, gap_end)` inside `[start, end)` that
    /// holds no member, in increasing order: what a SACK block adds before it is inserted.
    pub(crate) fn for_each_gap(&self, start: u64, end: u64, mut visit: impl FnMut(u64, u64)) {
        let mut cursor = self.first_gap_from(start);
        while cursor < end {
            let next_member = self
                .ranges
                .range(cursor..end)
                .next()
                .map_or(end, |(&range_start, _)| range_start);
            visit(cursor, next_member);
            if next_member >= end {
                break;
            }
            cursor = self.first_gap_from(next_member);
        }
    }

    /// The ranges in increasing order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().map(|(&start, &end)| (start, end))
    }

    /// Empties the set.
    pub(crate) fn clear(&mut self) {
        self.ranges.clear();
        self.covered = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(set: &SequenceRanges) -> Vec<(u64, u64)> {
        set.iter().collect()
    }

    #[test]
    fn insert_merges_overlapping_and_adjacent_ranges() {
        let mut set = SequenceRanges::new();
        assert_eq!(set.insert(10, 12), 2);
        assert_eq!(set.insert(14, 16), 2);
        assert_eq!(collect(&set), vec![(10, 12), (14, 16)]);
        // Adjacent on both sides: one range.
        assert_eq!(set.insert(12, 14), 2);
        assert_eq!(collect(&set), vec![(10, 16)]);
        // Fully covered: nothing new.
        assert_eq!(set.insert(11, 15), 0);
        // Overlapping beyond both ends.
        assert_eq!(set.insert(5, 20), 9);
        assert_eq!(collect(&set), vec![(5, 20)]);
        assert_eq!(set.len(), 15);
        // Empty or reversed ranges are ignored.
        assert_eq!(set.insert(30, 30), 0);
        assert_eq!(set.insert(31, 29), 0);
        assert_eq!(set.len(), 15);
    }

    #[test]
    fn insert_spanning_several_ranges_counts_only_gaps() {
        let mut set = SequenceRanges::new();
        set.insert(1, 3);
        set.insert(5, 7);
        set.insert(9, 11);
        assert_eq!(set.insert(2, 10), 4); // 3, 4, 7, 8
        assert_eq!(collect(&set), vec![(1, 11)]);
        assert_eq!(set.len(), 10);
    }

    #[test]
    fn remove_below_truncates() {
        let mut set = SequenceRanges::new();
        set.insert(1, 4);
        set.insert(6, 10);
        set.remove_below(7);
        assert_eq!(collect(&set), vec![(7, 10)]);
        assert_eq!(set.len(), 3);
        set.remove_below(100);
        assert!(set.is_empty());
    }

    #[test]
    fn gaps_within_a_block() {
        let mut set = SequenceRanges::new();
        set.insert(5, 8);
        set.insert(10, 12);
        let mut gaps = Vec::new();
        set.for_each_gap(3, 15, |start, end| gaps.push((start, end)));
        assert_eq!(gaps, vec![(3, 5), (8, 10), (12, 15)]);
        gaps.clear();
        set.for_each_gap(6, 11, |start, end| gaps.push((start, end)));
        assert_eq!(gaps, vec![(8, 10)]);
        gaps.clear();
        set.for_each_gap(5, 8, |start, end| gaps.push((start, end)));
        assert!(gaps.is_empty());
    }

    #[test]
    fn queries() {
        let mut set = SequenceRanges::new();
        set.insert(3, 5); // 3 4
        set.insert(8, 9); // 8
        set.insert(12, 14); // 12 13
        assert!(set.contains(4) && !set.contains(5) && set.contains(8));
        assert_eq!(set.range_containing(13), Some((12, 14)));
        assert_eq!(set.count_below(4), 1);
        assert_eq!(set.count_below(12), 3);
        assert_eq!(set.count_below(100), 5);
        assert_eq!(set.nth_highest(1), Some(13));
        assert_eq!(set.nth_highest(3), Some(8));
        assert_eq!(set.nth_highest(4), Some(4));
        assert_eq!(set.nth_highest(6), None);
        assert_eq!(set.nth_highest(0), None);
        assert_eq!(set.first_gap_from(3), 5);
        assert_eq!(set.first_gap_from(5), 5);
        assert_eq!(set.first_gap_from(12), 14);
    }
}
