//! Values worked out from one segment, kept while the searcher's segments include it: a
//! segment's documents never change, so only its deletes (when the key names them) or a merge
//! that retires it make a value stale.

use crate::schema::names;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
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

/// Each segment's id column, opened once: opening one reads its table of blocks, which was a
/// twelfth of a one-word search at a million models.
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
