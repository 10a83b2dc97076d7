//! Listing writes together with the change they make to each model's count of ACTIVE listings,
//! committed so counts never disagree with listings. A large write (a snapshot of millions of
//! listings) is committed in chunks of at most [`CHUNK_LISTINGS`], each atomic with its counts,
//! so its memory stays bounded; the ids written are handed back for the listings index.

use crate::domain::{Listing, ListingId, ListingStatus, ModelId};
use crate::store::{Store, StoreGeneration, StoreResult, WriteBatch};
use std::collections::HashMap;

/// Listings one store commit takes at most. Past a few tens of thousands a sled batch gets no
/// faster per listing, while its memory keeps growing (bench/RESULTS.md, "Chunked writes").
pub const CHUNK_LISTINGS: usize = 50_000;

/// A pending write of listings.
pub struct ListingWrites<'a> {
    store: &'a Store,
    /// Listings a chunk holds at most.
    chunk: usize,
    pending: Pending,
    done: WrittenListings,
}

/// The uncommitted chunk: its batch, the change of each model's ACTIVE listing count, and the
/// ids it writes.
struct Pending {
    batch: WriteBatch,
    counts: HashMap<ModelId, i64>,
    ids: Vec<ListingId>,
}

/// A committed write of listings, in one commit or several consecutive ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenListings {
    /// The generation of the first commit; equal to `generation` for a single commit.
    pub first_generation: StoreGeneration,
    /// The generation of the last commit (the store's, when nothing was written).
    pub generation: StoreGeneration,
    /// Store commits made.
    pub commits: u64,
    /// Every listing written, in write order.
    pub ids: Vec<ListingId>,
    /// The models whose count of ACTIVE listings changed, ascending.
    pub recounted: Vec<ModelId>,
}

impl WrittenListings {
    fn nothing(store: &Store) -> StoreResult<WrittenListings> {
        let generation = store.generation()?;
        Ok(WrittenListings {
            first_generation: generation,
            generation,
            commits: 0,
            ids: Vec::new(),
            recounted: Vec::new(),
        })
    }

    /// True when the commits follow each other with no other write between them, so an index
    /// current just before the first is brought up to date by this write alone.
    pub fn is_contiguous(&self) -> bool {
        self.commits == 0 || self.generation.0 + 1 - self.first_generation.0 == self.commits
    }

    fn absorb(&mut self, later: WrittenListings) {
        if later.commits == 0 {
            return;
        }
        if self.commits == 0 {
            self.first_generation = later.first_generation;
        }
        self.generation = later.generation;
        self.commits += later.commits;
        self.ids.extend(later.ids);
        // Sorted and deduplicated once, by `finish`: a 10M-listing ingest has 200 chunks.
        self.recounted.extend(later.recounted);
    }

    fn finish(mut self) -> WrittenListings {
        self.recounted.sort_unstable();
        self.recounted.dedup();
        self
    }
}

/// The model whose count `listing` adds to: its model, while ACTIVE.
fn counted_for(listing: &Listing) -> Option<ModelId> {
    listing
        .model_id
        .filter(|_| listing.status == ListingStatus::Active)
}

impl Pending {
    fn new(store: &Store) -> StoreResult<Pending> {
        Ok(Pending {
            batch: store.batch()?,
            counts: HashMap::new(),
            ids: Vec::new(),
        })
    }

    /// Adds the new counts to the batch and commits it.
    fn commit(mut self, store: &Store) -> StoreResult<WrittenListings> {
        if self.ids.is_empty() {
            return WrittenListings::nothing(store);
        }
        let mut recounted = Vec::new();
        for (model, delta) in std::mem::take(&mut self.counts) {
            if delta != 0 {
                let count = (store.listing_count(model)? as i64 + delta).max(0) as u64;
                self.batch.set_listing_count(model, count);
                recounted.push(model);
            }
        }
        recounted.sort_unstable();
        let generation = store.commit(self.batch)?;
        Ok(WrittenListings {
            first_generation: generation,
            generation,
            commits: 1,
            ids: self.ids,
            recounted,
        })
    }
}

impl<'a> ListingWrites<'a> {
    pub fn new(store: &'a Store) -> StoreResult<ListingWrites<'a>> {
        ListingWrites::in_chunks_of(store, CHUNK_LISTINGS)
    }

    /// A write committed in chunks of at most `chunk` listings (at least one).
    pub fn in_chunks_of(store: &'a Store, chunk: usize) -> StoreResult<ListingWrites<'a>> {
        Ok(ListingWrites {
            store,
            chunk: chunk.max(1),
            pending: Pending::new(store)?,
            done: WrittenListings::nothing(store)?,
        })
    }

    /// The batch of the pending chunk, for allocating ids. Ids are read from the committed
    /// counter on first use, so a chunk allocates only after the previous one committed.
    pub fn batch(&mut self) -> &mut WriteBatch {
        &mut self.pending.batch
    }

    pub fn store(&self) -> &'a Store {
        self.store
    }

    /// Listings a chunk holds at most.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// Writes `new` over `old`, adjusting the counts of the models either is counted for.
    pub fn put(&mut self, old: Option<&Listing>, new: Listing) {
        let pending = &mut self.pending;
        if let Some(model) = old.and_then(counted_for) {
            *pending.counts.entry(model).or_default() -= 1;
        }
        if let Some(model) = counted_for(&new) {
            *pending.counts.entry(model).or_default() += 1;
        }
        pending.batch.put_listing(old, &new);
        pending.ids.push(new.id);
    }

    /// Commits the pending chunk when it is full.
    pub fn commit_if_full(&mut self) -> StoreResult<()> {
        if self.pending.ids.len() >= self.chunk {
            self.commit_chunk_while(|| ())?;
        }
        Ok(())
    }

    /// Commits the pending chunk while `meanwhile` runs on another core (sled applies a batch
    /// on one), and starts the next chunk. `meanwhile` must not write to the store.
    pub fn commit_chunk_while<T: Send>(
        &mut self,
        meanwhile: impl FnOnce() -> T + Send,
    ) -> StoreResult<T> {
        let chunk = std::mem::replace(&mut self.pending, Pending::new(self.store)?);
        let store = self.store;
        let (committed, value) = rayon::join(move || chunk.commit(store), meanwhile);
        self.done.absorb(committed?);
        Ok(value)
    }

    /// Commits what is pending; returns everything written.
    pub fn commit(mut self) -> StoreResult<WrittenListings> {
        let last = self.pending.commit(self.store)?;
        self.done.absorb(last);
        if self.done.commits == 0 {
            return WrittenListings::nothing(self.store);
        }
        Ok(self.done.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(first: u64, last: u64, ids: &[u64], recounted: &[u64]) -> WrittenListings {
        WrittenListings {
            first_generation: StoreGeneration(first),
            generation: StoreGeneration(last),
            commits: last + 1 - first,
            ids: ids.iter().map(|&id| ListingId(id)).collect(),
            recounted: recounted.iter().map(|&id| ModelId(id)).collect(),
        }
    }

    #[test]
    fn chunks_add_up_to_one_write() {
        let mut all = WrittenListings {
            commits: 0,
            ..written(7, 7, &[], &[])
        };
        all.absorb(written(8, 8, &[1, 2], &[5, 9]));
        all.absorb(written(9, 9, &[3], &[2, 5]));
        let all = all.finish();
        assert_eq!(all, written(8, 9, &[1, 2, 3], &[2, 5, 9]));
        assert!(all.is_contiguous());
    }

    #[test]
    fn a_write_between_chunks_breaks_contiguity() {
        let mut all = written(8, 8, &[1], &[]);
        all.absorb(written(10, 10, &[2], &[]));
        assert_eq!(all.commits, 2);
        assert!(!all.is_contiguous());
    }
}
