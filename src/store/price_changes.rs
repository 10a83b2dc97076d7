//! The price changes of listings (`priceHistory`, D-205): a key per change of a listing's
//! asking price or currency, written by the write that sees it (`WriteBatch::put_listing`),
//! the first change with the price before it, dated at the listing's creation. A listing
//! whose price never changed has no key: its record holds its one price.
//! Keyspaces: `ListingPriceChange`.

use super::codec::{decode, encode};
use super::keys::Keyspace;
use super::write::Operation;
use super::{Store, StoreError, StoreResult};
use crate::domain::price_history::{AskingPrice, PriceObservation};
use crate::domain::{Listing, ListingId, Timestamp};
use std::collections::HashSet;

fn listing_prefix(listing: ListingId) -> Vec<u8> {
    Keyspace::ListingPriceChange.id_key(listing.0)
}

/// Times order as their keys: the sign bit flipped, so an instant before 1970 sorts first.
fn change_key(listing: ListingId, at: Timestamp) -> Vec<u8> {
    let mut key = listing_prefix(listing);
    key.extend_from_slice(&((at.0 as u64) ^ (1 << 63)).to_be_bytes());
    key
}

fn time_of(key: &[u8]) -> Option<Timestamp> {
    let tail: [u8; 8] = key.get(key.len().checked_sub(8)?..)?.try_into().ok()?;
    Some(Timestamp((u64::from_be_bytes(tail) ^ (1 << 63)) as i64))
}

/// The store's listing price changes: see [`Store::price_changes`].
#[derive(Clone, Copy)]
pub struct PriceChanges<'s>(pub(super) &'s Store);

impl PriceChanges<'_> {
    /// `listing`'s stored observations, oldest first: none while its price never changed.
    pub fn of(self, listing: ListingId) -> StoreResult<Vec<PriceObservation>> {
        let mut observations = Vec::new();
        for entry in self.0.db.scan_prefix(listing_prefix(listing)) {
            let (key, value) = entry?;
            let at = time_of(&key).ok_or_else(|| StoreError::Corrupt {
                key: key.to_vec(),
                reason: "a price change key of an unexpected shape".into(),
            })?;
            let asking: AskingPrice = decode(&key, &value)?;
            observations.push(PriceObservation { at, asking });
        }
        Ok(observations)
    }
}

/// A change one write saw: the listing's price before and after, and when.
struct Change {
    listing: ListingId,
    created_at: Timestamp,
    before: AskingPrice,
    at: Timestamp,
    after: AskingPrice,
}

/// The price changes one write makes, keyed at commit.
#[derive(Default)]
pub(super) struct ChangeWrites(Vec<Change>);

impl ChangeWrites {
    /// Records the change from `old` to `new`, if their asking prices differ.
    pub fn listing_written(&mut self, old: Option<&Listing>, new: &Listing) {
        let Some(old) = old else {
            return;
        };
        if AskingPrice::same(&old.details, &new.details) {
            return;
        }
        self.0.push(Change {
            listing: new.id,
            created_at: old.created_at,
            before: AskingPrice::of(&old.details),
            // A writer that changes the price moves one of them to its time.
            at: new.updated_at.max(new.last_seen_at),
            after: AskingPrice::of(&new.details),
        });
    }

    /// The keys of the changes, and of each listing's price before its first change when the
    /// store has none of its changes yet: read against the store inside the write turn.
    pub fn into_operations(self, store: &Store) -> StoreResult<Vec<Operation>> {
        let mut operations = Vec::with_capacity(self.0.len() * 2);
        let mut seen: HashSet<ListingId> = HashSet::new();
        for change in self.0 {
            let first = seen.insert(change.listing)
                && (store.db.scan_prefix(listing_prefix(change.listing)))
                    .next()
                    .transpose()?
                    .is_none();
            if first {
                let key = change_key(change.listing, change.created_at);
                operations.push((key, Some(encode(&change.before))));
            }
            let key = change_key(change.listing, change.at);
            operations.push((key, Some(encode(&change.after))));
        }
        Ok(operations)
    }
}
