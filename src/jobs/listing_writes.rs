//! Listing writes together with the change they make to each model's count of ACTIVE listings,
//! committed so counts never disagree with listings. A large write (a snapshot of millions of
//! listings) is committed in chunks of at most [`CHUNK_LISTINGS`], each atomic with its counts,
//! so its memory stays bounded; the ids written are handed back for the listings index.

use super::reindex::indexed_alike;
use crate::domain::{Listing, ListingStatus, ModelId};
use crate::store::{ListingWrite, StoreGeneration, StoreResult, WriteBatch, WriteTurn};
use std::collections::HashMap;

/// Listings one store commit takes at most. Past a few tens of thousands a sled batch gets no
/// faster per listing, while its memory keeps growing (bench/RESULTS.md, "Chunked writes").
pub const CHUNK_LISTINGS: usize = 50_000;

/// A pending write of listings, inside a write turn.
pub struct ListingWrites<'a> {
    turn: &'a WriteTurn<'a>,
    /// Listings a chunk holds at most.
    chunk: usize,
    pending: Pending<'a>,
    done: WrittenListings,
}

/// The uncommitted chunk: its batch, the change of each model's ACTIVE listing count, and how
/// many listings it writes.
struct Pending<'a> {
    batch: WriteBatch<'a>,
    counts: HashMap<ModelId, i64>,
    listings: usize,
    /// The listings written, for the turn's listing sink (none kept when it has none).
    indexed: Vec<ListingWrite>,
}

/// What a write of listings committed, for its report (the indexes learn the ids from the
/// turn's [`Changes`](crate::store::Changes)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrittenListings {
    /// The generation of the last commit (the store's, when nothing was written).
    pub generation: StoreGeneration,
    /// Store commits made.
    pub commits: u64,
    /// Listings written (a listing written twice counts twice).
    pub listings: usize,
}

impl WrittenListings {
    fn absorb(&mut self, later: WrittenListings) {
        if later.commits > 0 {
            self.generation = later.generation;
            self.commits += later.commits;
            self.listings += later.listings;
        }
    }
}

/// The model whose count `listing` adds to: its model, while ACTIVE.
fn counted_for(listing: &Listing) -> Option<ModelId> {
    listing
        .model_id
        .filter(|_| listing.status == ListingStatus::Active)
}

impl<'a> Pending<'a> {
    fn new(turn: &'a WriteTurn<'a>) -> StoreResult<Pending<'a>> {
        Ok(Pending {
            batch: turn.batch()?,
            counts: HashMap::new(),
            listings: 0,
            indexed: Vec::new(),
        })
    }

    /// Commits, then hands what was written to the turn's listing sink: only what committed
    /// reaches the index.
    fn commit_and_tell(mut self, turn: &WriteTurn<'_>) -> StoreResult<WrittenListings> {
        let indexed = std::mem::take(&mut self.indexed);
        let written = self.commit(turn)?;
        if let Some(sink) = turn.listing_sink() {
            if written.commits > 0 {
                sink.committed(indexed);
            }
        }
        Ok(written)
    }

    /// Adds the new counts to the batch and commits it.
    fn commit(mut self, turn: &WriteTurn<'_>) -> StoreResult<WrittenListings> {
        let store = turn.store();
        if self.listings == 0 && self.batch.is_empty() {
            return Ok(WrittenListings {
                generation: store.generation()?,
                commits: 0,
                listings: 0,
            });
        }
        for (model, delta) in std::mem::take(&mut self.counts) {
            if delta != 0 {
                let count = (store.listing_count(model)? as i64 + delta).max(0) as u64;
                self.batch.set_listing_count(model, count);
            }
        }
        Ok(WrittenListings {
            generation: turn.commit(self.batch)?,
            commits: 1,
            listings: self.listings,
        })
    }
}

impl<'a> ListingWrites<'a> {
    pub fn new(turn: &'a WriteTurn<'a>) -> StoreResult<ListingWrites<'a>> {
        ListingWrites::in_chunks_of(turn, CHUNK_LISTINGS)
    }

    /// A write of any size committed as one atomic commit of `batch`, which may already hold
    /// other records of the same write (a model the listings are linked to, an audit entry).
    pub fn in_one_commit(
        turn: &'a WriteTurn<'a>,
        batch: WriteBatch<'a>,
    ) -> StoreResult<ListingWrites<'a>> {
        let mut writes = ListingWrites::in_chunks_of(turn, usize::MAX)?;
        writes.pending.batch = batch;
        Ok(writes)
    }

    /// A write committed in chunks of at most `chunk` listings (at least one).
    pub fn in_chunks_of(turn: &'a WriteTurn<'a>, chunk: usize) -> StoreResult<ListingWrites<'a>> {
        Ok(ListingWrites {
            turn,
            chunk: chunk.max(1),
            pending: Pending::new(turn)?,
            done: WrittenListings {
                generation: turn.store().generation()?,
                commits: 0,
                listings: 0,
            },
        })
    }

    /// The batch of the pending chunk, for allocating ids. Ids are read from the committed
    /// counter on first use, so a chunk allocates only after the previous one committed.
    pub fn batch(&mut self) -> &mut WriteBatch<'a> {
        &mut self.pending.batch
    }

    pub fn turn(&self) -> &'a WriteTurn<'a> {
        self.turn
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
        pending.listings += 1;
        if self.turn.listing_sink().is_some() {
            pending.indexed.push(match old {
                None => ListingWrite::Created(new),
                Some(old) if indexed_alike(old, &new) => ListingWrite::Same,
                Some(_) => ListingWrite::Changed(new),
            });
        }
    }

    /// Commits the pending chunk when it is full.
    pub fn commit_if_full(&mut self) -> StoreResult<()> {
        if self.pending.listings >= self.chunk {
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
        let chunk = std::mem::replace(&mut self.pending, Pending::new(self.turn)?);
        let turn = self.turn;
        let (committed, value) = rayon::join(move || chunk.commit_and_tell(turn), meanwhile);
        self.done.absorb(committed?);
        Ok(value)
    }

    /// Commits what is pending; returns everything written.
    pub fn commit(mut self) -> StoreResult<WrittenListings> {
        let last = self.pending.commit_and_tell(self.turn)?;
        self.done.absorb(last);
        Ok(self.done)
    }
}
