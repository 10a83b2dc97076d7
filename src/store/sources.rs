//! The provider's own id of each listing (its "source"), kept [`PER_GROUP`] to a key for the
//! listings one write creates (`Keyspace::ListingSourceGroup`), instead of one key each
//! (`Keyspace::ListingSource`): a key per listing was sled's largest cost beside the records in an
//! ingest of new listings (docs/decisions.md, D-34). Only ingest reads sources, all of a provider's
//! at once, so nothing is looked up by code and a group is written once, never changed: a listing's
//! source never changes.
//!
//! Stores written before groups keep their `ListingSource` keys, read as before beside the
//! groups ([`codes_of_provider`]).

use super::codec::{decode, decode_u64, encode};
use super::keys;
use super::write::Operation;
use super::{Store, StoreError, StoreResult};
use crate::domain::{ListingId, ProviderId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Listings a group holds at most: about 20 KB of codes and ids, a value sled writes whole.
pub const PER_GROUP: usize = 1024;

/// The provider's own ids of listings created by one write, in id order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceGroup {
    pub listings: Vec<(String, ListingId)>,
}

/// Sources of the listings a write creates, by provider.
#[derive(Debug, Default)]
pub struct SourceWrites {
    created: BTreeMap<ProviderId, Vec<(String, ListingId)>>,
}

impl SourceWrites {
    /// Listing `id`, new, is the provider's listing `code`.
    pub fn created(&mut self, provider: ProviderId, code: String, id: ListingId) {
        self.created.entry(provider).or_default().push((code, id));
    }

    /// One key per [`PER_GROUP`] listings of a provider, under the id of its first.
    pub fn into_operations(self) -> Vec<Operation> {
        let mut out = Vec::new();
        for (provider, mut listings) in self.created {
            listings.sort_unstable_by_key(|&(_, id)| id);
            for chunk in listings.chunks(PER_GROUP) {
                let first = chunk[0].1;
                let group = SourceGroup {
                    listings: chunk.to_vec(),
                };
                out.push((
                    keys::listing_source_group(provider, first),
                    Some(encode(&group)),
                ));
            }
        }
        out
    }
}

/// Every listing of `provider` as (its own id, ours): the keys of a store written before
/// groups, then the groups in the order they were written. Were a code ever in two (a write
/// interrupted after its groups, before its records, then run again), the later comes last,
/// and a map made from this list keeps it.
pub(super) fn codes_of_provider(
    store: &Store,
    provider: ProviderId,
) -> StoreResult<Vec<(String, ListingId)>> {
    let mut out = single_keys(store, provider)?;
    for entry in store
        .db
        .scan_prefix(keys::listing_source_group_prefix(provider))
    {
        let (key, value) = entry?;
        let group: SourceGroup = decode(&key, &value)?;
        out.extend(group.listings);
    }
    Ok(out)
}

/// The sources a store written before groups holds, one key each.
fn single_keys(store: &Store, provider: ProviderId) -> StoreResult<Vec<(String, ListingId)>> {
    let prefix = keys::listing_source_prefix(provider);
    store
        .db
        .scan_prefix(&prefix)
        .map(|entry| {
            let (key, value) = entry?;
            let corrupt = |reason: &str| StoreError::Corrupt {
                key: key.to_vec(),
                reason: reason.to_owned(),
            };
            // The code sits between the prefix and its 0 terminator.
            let code = key
                .get(prefix.len()..key.len().saturating_sub(1))
                .and_then(|bytes| std::str::from_utf8(bytes).ok())
                .ok_or_else(|| corrupt("listing source key without a code"))?;
            Ok((code.to_owned(), ListingId(decode_u64(&key, &value)?)))
        })
        .collect()
}

#[cfg(test)]
impl Store {
    /// Rewrites every source group as a store of schema 5 held it, one `ListingSource` key per
    /// listing; returns how many. For tests of reading such a store.
    pub(crate) fn ungroup_listing_sources(&self) -> usize {
        let groups: Vec<_> = (self.db)
            .scan_prefix(super::keys::Keyspace::ListingSourceGroup.prefix())
            .map(|entry| entry.expect("group"))
            .collect();
        let mut ungrouped = 0;
        for (key, value) in groups {
            let group: SourceGroup = decode(&key, &value).expect("group");
            let provider = super::keys::trailing_id(&key[..key.len() - 8]).expect("provider");
            for (code, id) in group.listings {
                let single = keys::listing_source(ProviderId(provider), &code);
                self.db
                    .insert(single, &super::codec::encode_u64(id.0))
                    .expect("key");
                ungrouped += 1;
            }
            self.db.remove(key).expect("remove");
        }
        ungrouped
    }
}
