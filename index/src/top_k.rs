//! The best `k` of what a segment's walk offers, the smallest keys: what every ranked path
//! keeps (models by score, listings by price or date, the typo tier), so that each needs only
//! its key.

use std::collections::BinaryHeap;

/// Room made before anything is offered: callers may ask for every match (`k` up to
/// `usize::MAX`), so the rest grows as needed.
const PREALLOCATED: usize = 256;

/// The `k` smallest keys offered so far: a max-heap whose top is the worst kept.
pub(crate) struct TopK<T> {
    heap: BinaryHeap<T>,
    k: usize,
}

impl<T: Ord> TopK<T> {
    pub(crate) fn new(k: usize) -> TopK<T> {
        TopK {
            heap: BinaryHeap::with_capacity(k.min(PREALLOCATED) + 1),
            k,
        }
    }

    /// Keeps `key` when fewer than `k` are kept or it is smaller than the worst kept, which
    /// it then replaces.
    pub(crate) fn offer(&mut self, key: T) {
        if self.heap.len() < self.k {
            self.heap.push(key);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if key < *worst {
                *worst = key;
            }
        }
    }

    /// Whether `k` are kept: only a key smaller than the worst enters then.
    pub(crate) fn is_full(&self) -> bool {
        self.heap.len() >= self.k
    }

    /// How many it keeps at most.
    pub(crate) fn k(&self) -> usize {
        self.k
    }

    /// The worst key kept, once `k` are.
    pub(crate) fn worst_when_full(&self) -> Option<&T> {
        self.heap.peek().filter(|_| self.is_full())
    }

    /// The keys kept, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.heap.iter()
    }

    /// The keys kept, in no order.
    pub(crate) fn into_vec(self) -> Vec<T> {
        self.heap.into_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_k_keys_offered_are_kept() {
        let mut top = TopK::new(3);
        for key in [5, 1, 9, 3, 7, 2, 3] {
            top.offer(key);
        }
        assert!(top.is_full());
        assert_eq!(top.worst_when_full(), Some(&3));
        let mut kept = top.into_vec();
        kept.sort_unstable();
        assert_eq!(kept, [1, 2, 3]);
    }

    #[test]
    fn nothing_is_kept_for_k_zero_and_everything_below_k() {
        let mut none = TopK::new(0);
        none.offer(1);
        assert_eq!(none.iter().count(), 0);
        assert_eq!(none.worst_when_full(), None, "full, but nothing kept");
        let mut all = TopK::new(usize::MAX);
        for key in (0..1000).rev() {
            all.offer(key);
        }
        assert_eq!(all.iter().count(), 1000);
        assert_eq!(all.worst_when_full(), None, "not full");
    }
}
