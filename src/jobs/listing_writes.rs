//! Listing writes together with the change they make to each model's count of ACTIVE listings,
//! committed in one atomic batch so counts never disagree with listings. The listings written
//! are handed back, for the listings index to take them in.

use crate::domain::{Listing, ListingStatus, ModelId};
use crate::store::{Store, StoreGeneration, StoreResult, WriteBatch};
use std::collections::HashMap;

/// A pending write of listings.
pub struct ListingWrites<'a> {
    store: &'a Store,
    pub batch: WriteBatch,
    /// Change of each model's ACTIVE listing count.
    counts: HashMap<ModelId, i64>,
    written: Vec<Listing>,
}

/// A committed write of listings.
pub struct WrittenListings {
    pub generation: StoreGeneration,
    /// The new version of every listing written.
    pub listings: Vec<Listing>,
    /// The models whose count of ACTIVE listings changed.
    pub recounted: Vec<ModelId>,
}

/// The model whose count `listing` adds to: its model, while ACTIVE.
fn counted_for(listing: &Listing) -> Option<ModelId> {
    listing
        .model_id
        .filter(|_| listing.status == ListingStatus::Active)
}

impl<'a> ListingWrites<'a> {
    pub fn new(store: &'a Store) -> StoreResult<ListingWrites<'a>> {
        Ok(ListingWrites {
            store,
            batch: store.batch()?,
            counts: HashMap::new(),
            written: Vec::new(),
        })
    }

    /// Writes `new` over `old`, adjusting the counts of the models either is counted for.
    pub fn put(&mut self, old: Option<&Listing>, new: Listing) {
        if let Some(model) = old.and_then(counted_for) {
            *self.counts.entry(model).or_default() -= 1;
        }
        if let Some(model) = counted_for(&new) {
            *self.counts.entry(model).or_default() += 1;
        }
        self.batch.put_listing(old, &new);
        self.written.push(new);
    }

    /// Adds the new counts to the batch and commits it.
    pub fn commit(mut self) -> StoreResult<WrittenListings> {
        let mut recounted = Vec::new();
        for (model, delta) in std::mem::take(&mut self.counts) {
            if delta != 0 {
                let count = (self.store.listing_count(model)? as i64 + delta).max(0) as u64;
                self.batch.set_listing_count(model, count);
                recounted.push(model);
            }
        }
        recounted.sort_unstable();
        Ok(WrittenListings {
            generation: self.store.commit(self.batch)?,
            listings: self.written,
            recounted,
        })
    }
}
