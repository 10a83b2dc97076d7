//! Values worked out from one segment, kept while the searcher's segments include it: a
//! segment's documents never change, so only its deletes (when the key names them) or a merge
//! that retires it make a value stale.

use crate::schema::names;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use tantivy::columnar::Column;
use tantivy::index::SegmentId;
use tantivy::{Searcher, SegmentReader};

/// A value per segment of the searcher last asked for, under the key `K` names it by.
pub(crate) struct SegmentCache<K, V> {
    kept: Mutex<HashMap<K, Arc<V>>>,
}

impl<K, V> Default for SegmentCache<K, V> {
    fn default() -> SegmentCache<K, V> {
        SegmentCache {
            kept: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq + Clone, V> SegmentCache<K, V> {
    /// The value of each of `searcher`'s segments, in its order: kept under the segment's
    /// `key`, or made by `make`. Values of segments no longer searched are dropped.
    pub(crate) fn of(
        &self,
        searcher: &Searcher,
        key: impl Fn(&SegmentReader) -> K,
        make: impl Fn(&SegmentReader) -> tantivy::Result<V>,
    ) -> tantivy::Result<Vec<Arc<V>>> {
        let keys: Vec<K> = searcher.segment_readers().iter().map(&key).collect();
        let kept = self
            .kept
            .lock()
            .map(|kept| kept.clone())
            .unwrap_or_default();
        let mut out = Vec::with_capacity(keys.len());
        for (segment, key) in searcher.segment_readers().iter().zip(&keys) {
            out.push(match kept.get(key) {
                Some(known) => Arc::clone(known),
                None => Arc::new(make(segment)?),
            });
        }
        if let Ok(mut kept) = self.kept.lock() {
            *kept = keys.into_iter().zip(out.iter().cloned()).collect();
        }
        Ok(out)
    }
}

/// Values worked out from parts of segments (a term's listings), each under its segment and a
/// key `K`, kept across searchers while there is room for them: `most` units in all, a value
/// counting as [`SegmentPart::units`]. When a new value does not fit, the values of segments
/// no longer searched go first, then everything.
pub(crate) struct SegmentParts<K, V> {
    kept: Mutex<Parts<K, V>>,
    most: usize,
}

/// What a part costs to keep, in the units its cache counts.
pub(crate) trait SegmentPart {
    fn units(&self) -> usize;
}

struct Parts<K, V> {
    values: HashMap<(SegmentId, K), Arc<V>>,
    units: usize,
}

impl<K, V> Default for Parts<K, V> {
    fn default() -> Parts<K, V> {
        Parts {
            values: HashMap::new(),
            units: 0,
        }
    }
}

impl<K: Hash + Eq, V: SegmentPart> SegmentParts<K, V> {
    pub(crate) fn holding_at_most(most: usize) -> SegmentParts<K, V> {
        SegmentParts {
            kept: Mutex::default(),
            most,
        }
    }

    /// The value kept for `key` of `segment`.
    fn get(&self, segment: SegmentId, key: K) -> Option<Arc<V>> {
        self.lock().values.get(&(segment, key)).cloned()
    }

    /// Whether `units` more fit beside what is kept.
    pub(crate) fn has_room_for(&self, units: usize) -> bool {
        self.lock().units + units <= self.most
    }

    /// The value kept for `key` of `segment`, or the one `make` makes, then kept when it is
    /// `worth_keeping`.
    pub(crate) fn get_or_make(
        &self,
        searcher: &Searcher,
        segment: SegmentId,
        key: K,
        make: impl FnOnce() -> tantivy::Result<V>,
        worth_keeping: impl FnOnce(&V) -> bool,
    ) -> tantivy::Result<Arc<V>>
    where
        K: Clone,
    {
        if let Some(kept) = self.get(segment, key.clone()) {
            return Ok(kept);
        }
        let made = Arc::new(make()?);
        if worth_keeping(&made) {
            self.keep(searcher, segment, key, Arc::clone(&made));
        }
        Ok(made)
    }

    /// Keeps `value` for `key` of `segment`, making room as the type's doc says; a value larger
    /// than the whole room is not kept.
    fn keep(&self, searcher: &Searcher, segment: SegmentId, key: K, value: Arc<V>) {
        let units = value.units();
        if units > self.most {
            return;
        }
        let mut kept = self.lock();
        if kept.units + units > self.most {
            let live: HashSet<SegmentId> = (searcher.segment_readers().iter())
                .map(SegmentReader::segment_id)
                .collect();
            kept.values.retain(|(segment, _), _| live.contains(segment));
            kept.units = kept.values.values().map(|value| value.units()).sum();
        }
        if kept.units + units > self.most {
            *kept = Parts::default();
        }
        kept.units += units;
        if let Some(replaced) = kept.values.insert((segment, key), value) {
            kept.units -= replaced.units();
        }
    }

    /// How many values are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().values.len()
    }

    fn lock(&self) -> MutexGuard<'_, Parts<K, V>> {
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Each segment's id column, opened once: opening one reads its table of blocks, a noticeable
/// share of a one-word search at a million models (docs/decisions.md, D-40).
#[derive(Default)]
pub(crate) struct IdColumns {
    kept: SegmentCache<SegmentId, Column<u64>>,
}

impl IdColumns {
    /// The id column of each of `searcher`'s segments, in its order.
    pub(crate) fn of(&self, searcher: &Searcher) -> tantivy::Result<Vec<Arc<Column<u64>>>> {
        self.kept.of(
            searcher,
            |segment| segment.segment_id(),
            |segment| segment.fast_fields().u64(names::ID),
        )
    }
}
