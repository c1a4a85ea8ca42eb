//! A `VecDeque` whose copies keep their room.
//!
//! `VecDeque::clone` allocates exactly the entries it copies, so the first push on a copy of a
//! ring at its steady length grows it: reallocates and moves every entry. A copy of an endpoint
//! (the simulator's and the benchmarks' snapshots, a driver that forks a session) would then
//! pay, on its next packets, allocations the original never makes. [`Deque`] clones with the
//! original's capacity, so a copy behaves as the original does, allocation included.

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};

/// A `VecDeque` (every method of which it offers through `Deref`) cloned with its capacity.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Deque<T>(VecDeque<T>);

impl<T> Default for Deque<T> {
    fn default() -> Deque<T> {
        Deque(VecDeque::new())
    }
}

impl<T> Deque<T> {
    /// An empty deque with room for `capacity` entries.
    pub(crate) fn with_capacity(capacity: usize) -> Deque<T> {
        Deque(VecDeque::with_capacity(capacity))
    }
}

impl<T: Clone> Clone for Deque<T> {
    fn clone(&self) -> Deque<T> {
        let mut copy = VecDeque::with_capacity(self.0.capacity());
        copy.extend(self.0.iter().cloned());
        Deque(copy)
    }
}

impl<'a, T> IntoIterator for &'a Deque<T> {
    type Item = &'a T;
    type IntoIter = std::collections::vec_deque::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut Deque<T> {
    type Item = &'a mut T;
    type IntoIter = std::collections::vec_deque::IterMut<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

impl<T> Deref for Deque<T> {
    type Target = VecDeque<T>;

    fn deref(&self) -> &VecDeque<T> {
        &self.0
    }
}

impl<T> DerefMut for Deque<T> {
    fn deref_mut(&mut self) -> &mut VecDeque<T> {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_keeps_the_room_of_the_original() {
        let mut original = Deque::with_capacity(64);
        for value in 0..40u32 {
            original.push_back(value);
        }
        let copy = original.clone();
        assert_eq!(
            copy.iter().collect::<Vec<_>>(),
            original.iter().collect::<Vec<_>>()
        );
        assert!(
            copy.capacity() >= original.capacity(),
            "{} < {}",
            copy.capacity(),
            original.capacity()
        );
        // A plain VecDeque's copy has no room beyond its entries (why Deque exists); if the
        // standard library ever changes that, this type can go.
        let plain: VecDeque<u32> = original.0.clone();
        assert!(plain.capacity() < original.capacity());
    }
}
