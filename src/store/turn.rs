//! The store's write turn: one writer at a time per store, whoever holds a clone of it. A batch
//! can only be made and committed inside a turn, so ids, the generation and secondary keys are
//! never raced; reads never take the turn. The turn also gathers what its commits changed, so
//! the indexes can catch up with exactly that.

use super::write::WriteBatch;
use super::{Store, StoreGeneration, StoreResult};
use crate::domain::{BrandId, Listing, ListingId, ModelId, SeriesId};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// The right to write, held from the first read a write depends on to the last index update.
pub struct WriteTurn<'s> {
    store: &'s Store,
    _exclusive: MutexGuard<'s, ()>,
    changes: Mutex<Changes>,
    listing_sink: Option<Arc<dyn ListingSink>>,
}

/// A listing a commit wrote, as the listings index needs to know it.
#[derive(Debug)]
pub enum ListingWrite {
    /// New to the store: no index can hold its id yet.
    Created(Listing),
    /// Written over a version whose index document differs.
    Changed(Listing),
    /// Written over a version with the same index document (a refresh): nothing to index.
    Same,
}

/// Told of the listings each commit of a turn wrote, right after the commit, in commit order:
/// the listings index takes a large write while it is written (`jobs::listing_load`).
pub trait ListingSink: Send + Sync {
    fn committed(&self, written: Vec<ListingWrite>);
}

/// What the commits of one turn changed, for the indexes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// The generation of the first and the last commit, and how many there were.
    pub first_generation: StoreGeneration,
    pub generation: StoreGeneration,
    pub commits: u64,
    /// Listings written, in commit order (a listing written twice appears twice).
    pub listings: Vec<ListingId>,
    /// Models written, and models whose listing count was set.
    pub models: BTreeSet<ModelId>,
    pub recounted: BTreeSet<ModelId>,
    /// Models the turn created (a subset of `models`): every key they have, it wrote by
    /// today's rules, and no key of an older one names them (ids are never used again).
    pub created_models: BTreeSet<ModelId>,
    /// Brands and series written, or whose number of models may have moved.
    pub brands: BTreeSet<BrandId>,
    pub series: BTreeSet<SeriesId>,
    /// How many models each brand and series gained in the turn (negative: lost), so their
    /// counts are the index's before the turn plus these, without a commit in between.
    pub brand_models: BTreeMap<BrandId, i64>,
    pub series_models: BTreeMap<SeriesId, i64>,
    /// A brand or series renamed, or a calibre's type, complications or a complication's slug
    /// changed (models' documents carry them): the catalogue index is rebuilt, not patched.
    pub renamed: bool,
    /// The rates in force changed: every listing's US dollar price may have moved.
    pub rates: bool,
}

impl Changes {
    /// True when the commits were one after another, with no other write in between.
    pub fn is_contiguous(&self) -> bool {
        self.commits == 0 || self.generation.0 + 1 - self.first_generation.0 == self.commits
    }

    fn absorb(&mut self, generation: StoreGeneration, batch: BatchChanges) {
        if self.commits == 0 {
            self.first_generation = generation;
        }
        self.generation = generation;
        self.commits += 1;
        self.listings.extend(batch.listings);
        self.models.extend(batch.models);
        self.created_models.extend(batch.created_models);
        self.recounted.extend(batch.recounted);
        self.brands.extend(batch.brands);
        self.series.extend(batch.series);
        for (brand, series, moved) in batch.model_moves {
            *self.brand_models.entry(brand).or_default() += moved;
            *self.series_models.entry(series).or_default() += moved;
        }
        self.renamed |= batch.renamed;
        self.rates |= batch.rates;
    }
}

/// What one batch changes; see [`Changes`].
#[derive(Debug, Default)]
pub(super) struct BatchChanges {
    pub listings: Vec<ListingId>,
    pub models: Vec<ModelId>,
    pub created_models: Vec<ModelId>,
    pub recounted: Vec<ModelId>,
    pub brands: Vec<BrandId>,
    pub series: Vec<SeriesId>,
    /// A model into (+1) or out of (-1) a brand and series.
    pub model_moves: Vec<(BrandId, SeriesId, i64)>,
    pub renamed: bool,
    pub rates: bool,
}

impl Store {
    /// Waits for the write turn of this store (every clone shares it) and takes it.
    pub fn write_turn(&self) -> WriteTurn<'_> {
        let exclusive = self
            .writes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        WriteTurn {
            store: self,
            _exclusive: exclusive,
            changes: Mutex::new(Changes::default()),
            listing_sink: None,
        }
    }
}

impl<'s> WriteTurn<'s> {
    /// The store, for the reads a write depends on.
    pub fn store(&self) -> &'s Store {
        self.store
    }

    /// Tells `sink` of every listing this turn's commits write from now on.
    pub fn set_listing_sink(&mut self, sink: Arc<dyn ListingSink>) {
        self.listing_sink = Some(sink);
    }

    /// Who is told of the listings committed, if anyone.
    pub fn listing_sink(&self) -> Option<&dyn ListingSink> {
        self.listing_sink.as_deref()
    }

    /// An empty batch; it allocates ids from the counters as committed.
    pub fn batch(&self) -> StoreResult<WriteBatch<'_>> {
        WriteBatch::new(self.store)
    }

    /// Commits `batch` (see [`Store::apply`](super::Store)) and records what it changed.
    pub fn commit(&self, batch: WriteBatch<'_>) -> StoreResult<StoreGeneration> {
        self.commit_with(batch, Store::apply)
    }

    /// Commits one part of a write made of several commits (the chunks of a large write of
    /// listings), applied key by key whatever its size; otherwise as [`WriteTurn::commit`].
    pub fn commit_part(&self, batch: WriteBatch<'_>) -> StoreResult<StoreGeneration> {
        self.commit_with(batch, Store::apply_part)
    }

    fn commit_with(
        &self,
        batch: WriteBatch<'_>,
        apply: fn(&Store, WriteBatch<'_>) -> StoreResult<(StoreGeneration, BatchChanges)>,
    ) -> StoreResult<StoreGeneration> {
        if batch.is_empty() {
            return self.store.generation();
        }
        let (generation, changed) = apply(self.store, batch)?;
        self.changes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .absorb(generation, changed);
        Ok(generation)
    }

    /// Commits a write of derived data only (the duplicate finder's pairs): atomic and durable
    /// like [`WriteTurn::commit`], without a generation bump, so deriving writes nothing a
    /// client or an index would see as a change.
    pub fn commit_derived(&self, batch: WriteBatch<'_>) -> StoreResult<()> {
        if !batch.is_empty() {
            self.store.apply_derived(batch)?;
        }
        Ok(())
    }

    /// What this turn's commits changed so far.
    pub fn changes(&self) -> Changes {
        self.changes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(listings: &[u64], recounted: &[u64]) -> BatchChanges {
        BatchChanges {
            listings: listings.iter().map(|&id| ListingId(id)).collect(),
            recounted: recounted.iter().map(|&id| ModelId(id)).collect(),
            ..BatchChanges::default()
        }
    }

    #[test]
    fn commits_add_up_to_one_change() {
        let mut changes = Changes::default();
        assert!(changes.is_contiguous(), "no commit yet");
        changes.absorb(StoreGeneration(8), batch(&[1, 2], &[5, 9]));
        changes.absorb(StoreGeneration(9), batch(&[3], &[2, 5]));
        assert_eq!(
            (
                changes.first_generation,
                changes.generation,
                changes.commits
            ),
            (StoreGeneration(8), StoreGeneration(9), 2)
        );
        assert_eq!(changes.listings, [1, 2, 3].map(ListingId));
        assert_eq!(
            changes.recounted.iter().map(|m| m.0).collect::<Vec<_>>(),
            [2, 5, 9]
        );
        assert!(changes.is_contiguous());
    }

    #[test]
    fn a_write_between_commits_breaks_contiguity() {
        let mut changes = Changes::default();
        changes.absorb(StoreGeneration(8), batch(&[1], &[]));
        changes.absorb(StoreGeneration(10), batch(&[2], &[]));
        assert!(!changes.is_contiguous());
    }

    #[test]
    fn a_second_turn_waits_for_the_first() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let first = store.write_turn();
        let clone = store.clone();
        let waiting = std::thread::spawn(move || {
            let _second = clone.write_turn();
            std::time::Instant::now()
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        let released = std::time::Instant::now();
        drop(first);
        let entered = waiting.join().expect("thread");
        assert!(
            entered >= released,
            "the second turn began only once the first ended"
        );
    }
}
