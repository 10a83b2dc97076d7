//! Listing counts made right after a write that held them back and never wrote them. A write of
//! listings in several commits keeps its models' count changes for its last commit
//! (`jobs::listing_writes`), with the store marked meanwhile; a store opened with the mark
//! still there (the process died part-way) counts every model's ACTIVE listings, and the admin
//! listing counters, from the listings themselves before anything reads them.

use super::codec::{decode, encode_u64};
use super::keys::{self, Counted, Keyspace, MetaKey};
use super::write::listing_counts;
use super::{read_meta, StoreResult};
use crate::domain::{Listing, ModelId};
use rayon::iter::{ParallelBridge, ParallelIterator};
use std::collections::HashMap;

/// What a recount found.
struct Recount {
    /// Listings read.
    listings: u64,
    /// Models with at least one ACTIVE listing.
    models: usize,
}

/// True when a write holds listing counts back (or died holding them).
pub(super) fn counts_held(db: &sled::Db) -> StoreResult<bool> {
    Ok(db.contains_key(MetaKey::ListingCountsHeld.key())?)
}

/// Recounts when the store is marked as holding counts back.
pub(super) fn recount_if_held(db: &sled::Db) -> StoreResult<()> {
    if !counts_held(db)? {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let recount = recount(db)?;
    tracing::warn!(
        listings = recount.listings,
        models = recount.models,
        took = ?started.elapsed(),
        "a write of listings ended before writing the counts it held: counted again"
    );
    Ok(())
}

/// The counts the listings make, from every listing.
#[derive(Default)]
pub(super) struct Tally {
    pub listings: u64,
    /// Listings not DELISTED (`Counted::Listings`).
    pub listed: u64,
    /// Listings not DELISTED with no model (`Counted::UnmatchedListings`).
    pub unmatched: u64,
    /// Each model's ACTIVE listings.
    pub active: HashMap<ModelId, u64>,
}

impl Tally {
    /// Reads every listing of `db`, on all cores.
    pub(super) fn of_listings(db: &sled::Db) -> StoreResult<Tally> {
        db.scan_prefix(Keyspace::Listing.prefix())
            .par_bridge()
            .try_fold(Tally::default, |tally, entry| -> StoreResult<Tally> {
                let (key, value) = entry?;
                Ok(tally.add(&decode::<Listing>(&key, &value)?))
            })
            .try_reduce(Tally::default, |a, b| Ok(a.join(b)))
    }

    fn add(mut self, listing: &Listing) -> Tally {
        let (listed, unmatched) = listing_counts(listing);
        self.listings += 1;
        self.listed += listed as u64;
        self.unmatched += unmatched as u64;
        if let Some(model) = listing.counted_for() {
            *self.active.entry(model).or_default() += 1;
        }
        self
    }

    fn join(mut self, other: Tally) -> Tally {
        self.listings += other.listings;
        self.listed += other.listed;
        self.unmatched += other.unmatched;
        for (model, count) in other.active {
            *self.active.entry(model).or_default() += count;
        }
        self
    }
}

/// Counts every model's ACTIVE listings and the two listing counters afresh, writes them, and
/// clears the mark last: a crash during it leaves the mark, and the next open counts again.
fn recount(db: &sled::Db) -> StoreResult<Recount> {
    let mut tally = Tally::of_listings(db)?;
    // The listings a merge left to the listing mover count for no model until moved (D-231):
    // their model is gone.
    for key in db.scan_prefix(Keyspace::MergedListingsLeft.prefix()).keys() {
        if let Some(model) = keys::trailing_id(&key?) {
            tally.active.remove(&ModelId(model));
        }
    }
    // Counts of models with no ACTIVE listing left are removed, as a model never counted has none.
    for entry in db.scan_prefix(Keyspace::ModelListingCount.prefix()) {
        let (key, _) = entry?;
        let model = keys::trailing_id(&key).map(ModelId);
        if model.is_none_or(|model| !tally.active.contains_key(&model)) {
            db.remove(key)?;
        }
    }
    for (&model, &count) in &tally.active {
        db.insert(keys::model_listing_count(model), &encode_u64(count))?;
    }
    for (counted, count) in [
        (Counted::Listings, tally.listed),
        (Counted::UnmatchedListings, tally.unmatched),
    ] {
        db.insert(MetaKey::Count(counted).key(), &encode_u64(count))?;
    }
    // The counts are in models' index documents: a recount is a write the catalogue index
    // has not seen, even where its generation was the store's (a job that let others write
    // brought the index up to its commits, counts still held).
    let generation = read_meta(db, MetaKey::Generation)?.unwrap_or(0) + 1;
    db.insert(MetaKey::Generation.key(), &encode_u64(generation))?;
    db.flush()?;
    db.remove(MetaKey::ListingCountsHeld.key())?;
    db.flush()?;
    Ok(Recount {
        listings: tally.listings,
        models: tally.active.len(),
    })
}
