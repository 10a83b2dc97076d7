//! The reconciliation area: unmatched listings grouped by the identity their sellers claim,
//! each group kept as one record (its [`GroupTally`] and its listings' ids) by every write of
//! listings, in the same commit (`WriteBatch::put_listing`), with keys that order the groups
//! largest first, alone or by brand, provider, reason or provider and reason, and find them by the start of their
//! reference or brand text. A page of groups reads its page, never the unmatched listings.
//! Keyspaces: `UnmatchedGroup`, `UnmatchedOrder`, `UnmatchedCount`, `UnmatchedText`.

use super::codec::{decode, decode_u64, encode, encode_u64};
use super::keys::Keyspace;
use super::write::Operation;
use super::{Store, StoreResult};
use crate::domain::{BrandId, ClaimedBrand, GroupKey, GroupTally, Listing, ListingId, ProviderId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A group as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptGroup {
    pub tally: GroupTally,
    /// Its listings' ids, ascending: the newest (the greatest id) last.
    pub members: Vec<ListingId>,
}

impl KeptGroup {
    /// Its listings' ids, newest first.
    pub fn newest_first(&self) -> impl Iterator<Item = ListingId> + '_ {
        self.members.iter().rev().copied()
    }
}

/// Which groups an order walks, each largest first (then by id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupOrder {
    All,
    /// Groups of listings resolved to this brand.
    Brand(BrandId),
    /// Groups with at least one listing of this provider.
    Provider(ProviderId),
    /// Groups whose listings are mostly unmatched for this reason (`MatchOutcome::reason_code`).
    Reason(u64),
    /// Groups in both `Provider` and `Reason`: the two filters an admin combines most.
    ProviderReason(ProviderId, u64),
}

impl GroupOrder {
    /// The tag byte and value that start the order's keys.
    fn prefix(self) -> Vec<u8> {
        let (tag, value) = match self {
            GroupOrder::All => (0u8, 0),
            GroupOrder::Brand(brand) => (1, brand.0),
            GroupOrder::Provider(provider) => (2, provider.0),
            GroupOrder::Reason(code) => (3, code),
            // Reason codes are below 16.
            GroupOrder::ProviderReason(provider, code) => (4, provider.0 << 4 | code),
        };
        let mut key = vec![Keyspace::UnmatchedOrder as u8, tag];
        key.extend_from_slice(&value.to_be_bytes());
        key
    }

    fn count_key(self) -> Vec<u8> {
        let mut key = self.prefix();
        key[0] = Keyspace::UnmatchedCount as u8;
        key
    }

    /// The orders a group with `tally` is in.
    fn of(tally: &GroupTally) -> Vec<GroupOrder> {
        let mut orders = vec![GroupOrder::All];
        orders.extend(tally.brand().map(GroupOrder::Brand));
        orders.extend(tally.providers.keys().map(|p| GroupOrder::Provider(*p)));
        if let Some(code) = tally.reason().reason_code() {
            orders.push(GroupOrder::Reason(code));
            let with_reason = |p: &ProviderId| GroupOrder::ProviderReason(*p, code);
            orders.extend(tally.providers.keys().map(with_reason));
        }
        orders
    }
}

/// What the text keys find a group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupText {
    /// The reference the sellers claim, normalised.
    Reference,
    /// The brand text sellers wrote, normalised, for a brand the catalogue lacks.
    BrandText,
}

impl GroupText {
    fn prefix(self, text: &str) -> Vec<u8> {
        let mut key = vec![Keyspace::UnmatchedText as u8, self as u8];
        key.extend_from_slice(text.as_bytes());
        key
    }
}

fn order_key(order: GroupOrder, listings: u64, group: GroupKey) -> Vec<u8> {
    let mut key = order.prefix();
    // Inverted, so a forward scan meets the largest group first.
    key.extend_from_slice(&(u64::MAX - listings).to_be_bytes());
    key.extend_from_slice(&group.0.to_be_bytes());
    key
}

fn group_key(group: GroupKey) -> Vec<u8> {
    Keyspace::UnmatchedGroup.id_key(group.0)
}

fn read_group(db: &sled::Db, group: GroupKey) -> StoreResult<Option<KeptGroup>> {
    let key = group_key(group);
    db.get(&key)?.map(|v| decode(&key, &v)).transpose()
}

fn read_count(db: &sled::Db, order: GroupOrder) -> StoreResult<u64> {
    let key = order.count_key();
    db.get(&key)?.map_or(Ok(0), |v| decode_u64(&key, &v))
}

/// The group in the last 8 bytes of an order or text key.
fn trailing_group(key: &[u8]) -> Option<GroupKey> {
    let tail: [u8; 8] = key.get(key.len().checked_sub(8)?..)?.try_into().ok()?;
    Some(GroupKey(u64::from_be_bytes(tail)))
}

/// The keys a kept group has besides its record: its place in each order, and its text keys
/// (valued with its size, so a text search sorts its groups without reading them).
fn derived_keys(group: GroupKey, tally: &GroupTally) -> Vec<(Vec<u8>, Vec<u8>)> {
    let size = tally.listings.max(0) as u64;
    let mut keys: Vec<(Vec<u8>, Vec<u8>)> = GroupOrder::of(tally)
        .into_iter()
        .map(|order| (order_key(order, size, group), Vec::new()))
        .collect();
    let texts = [
        (GroupText::Reference, tally.identity.reference.as_deref()),
        (
            GroupText::BrandText,
            match &tally.identity.brand {
                ClaimedBrand::Text(text) if !text.is_empty() => Some(text.as_str()),
                _ => None,
            },
        ),
    ];
    for (kind, text) in texts {
        if let Some(text) = text {
            let mut key = kind.prefix(text);
            key.push(0);
            key.extend_from_slice(&group.0.to_be_bytes());
            keys.push((key, encode_u64(size).to_vec()));
        }
    }
    keys
}

/// The store's kept groups: see [`Store::unmatched`].
#[derive(Clone, Copy)]
pub struct Unmatched<'s>(pub(super) &'s Store);

impl<'s> Unmatched<'s> {
    pub fn group(self, group: GroupKey) -> StoreResult<Option<KeptGroup>> {
        read_group(&self.0.db, group)
    }

    /// How many groups `order` walks.
    pub fn count(self, order: GroupOrder) -> StoreResult<u64> {
        read_count(&self.0.db, order)
    }

    /// The groups `order` walks, largest first: keys only, no record decoded.
    pub fn in_order(self, order: GroupOrder) -> impl Iterator<Item = StoreResult<GroupKey>> + 's {
        self.0.db.scan_prefix(order.prefix()).keys().map(|key| {
            let key = key?;
            trailing_group(&key).ok_or_else(|| super::StoreError::Corrupt {
                key: key.to_vec(),
                reason: "an order key without a group".into(),
            })
        })
    }

    /// The groups whose `kind` text starts with `prefix`, each with its size.
    pub fn with_text_prefix(
        self,
        kind: GroupText,
        prefix: &str,
    ) -> StoreResult<Vec<(GroupKey, u64)>> {
        let mut found = Vec::new();
        for entry in self.0.db.scan_prefix(kind.prefix(prefix)) {
            let (key, value) = entry?;
            if let Some(group) = trailing_group(&key) {
                found.push((group, decode_u64(&key, &value)?));
            }
        }
        Ok(found)
    }

    /// Every kept group with its key, for a check against a recomputation.
    #[cfg(test)]
    pub fn all(self) -> impl Iterator<Item = StoreResult<(GroupKey, KeptGroup)>> + 's {
        self.0
            .db
            .scan_prefix(Keyspace::UnmatchedGroup.prefix())
            .map(|entry| {
                let (key, value) = entry?;
                let group = trailing_group(&key).unwrap_or(GroupKey(0));
                Ok((group, decode(&key, &value)?))
            })
    }
}

/// How one write moves the groups: each group it touches, with the share of each listing that
/// joined or left it, in the order of the write.
#[derive(Default)]
pub(super) struct GroupChanges {
    touched: HashMap<GroupKey, Touched>,
}

struct Touched {
    delta: GroupTally,
    /// Listings that joined (true) or left (false), in order: a listing written twice in one
    /// batch may join and leave.
    moves: Vec<(ListingId, bool)>,
}

impl GroupChanges {
    /// Records that the listing `old` is written as `new`.
    pub fn listing_written(&mut self, old: Option<&Listing>, new: &Listing) {
        let was = old.and_then(GroupTally::of);
        let is = GroupTally::of(new);
        // A matched listing, or one whose share of its group is unchanged (a revisit).
        if was == is {
            return;
        }
        if let Some((group, share)) = was {
            self.touch(group, &share, -1, new.id);
        }
        if let Some((group, share)) = is {
            self.touch(group, &share, 1, new.id);
        }
    }

    fn touch(&mut self, group: GroupKey, share: &GroupTally, sign: i64, listing: ListingId) {
        let touched = self.touched.entry(group).or_insert_with(|| Touched {
            delta: GroupTally::empty(share.identity.clone()),
            moves: Vec::new(),
        });
        touched.delta.add(share, sign);
        touched.moves.push((listing, sign > 0));
    }

    /// The writes that bring every touched group, its keys and the order counts up to date,
    /// read against the store inside the write turn.
    pub fn into_operations(self, store: &Store) -> StoreResult<Vec<Operation>> {
        self.into_operations_on(&store.db)
    }

    fn into_operations_on(self, db: &sled::Db) -> StoreResult<Vec<Operation>> {
        let mut operations = Vec::new();
        let mut counts: BTreeMap<GroupOrder, i64> = BTreeMap::new();
        for (group, touched) in self.touched {
            let stored = read_group(db, group)?;
            let before_tally = stored.as_ref().map(|kept| kept.tally.clone());
            let before = before_tally.as_ref();
            let mut kept = stored.unwrap_or_else(|| KeptGroup {
                tally: GroupTally::empty(touched.delta.identity.clone()),
                members: Vec::new(),
            });
            kept.tally.add(&touched.delta, 1);
            apply_moves(&mut kept.members, &touched.moves);
            let after = (!kept.tally.is_empty()).then_some(&kept.tally);
            for order in before.map(GroupOrder::of).unwrap_or_default() {
                *counts.entry(order).or_default() -= 1;
            }
            for order in after.map(GroupOrder::of).unwrap_or_default() {
                *counts.entry(order).or_default() += 1;
            }
            let old_keys = before.map(|t| derived_keys(group, t)).unwrap_or_default();
            let new_keys = after.map(|t| derived_keys(group, t)).unwrap_or_default();
            for (key, _) in &old_keys {
                if !new_keys.iter().any(|(k, _)| k == key) {
                    operations.push((key.clone(), None));
                }
            }
            for pair in new_keys {
                if !old_keys.contains(&pair) {
                    operations.push((pair.0, Some(pair.1)));
                }
            }
            operations.push(match after {
                Some(_) => (group_key(group), Some(encode(&kept))),
                None => (group_key(group), None),
            });
        }
        for (order, delta) in counts {
            if delta != 0 {
                let count = read_count(db, order)? as i64 + delta;
                operations.push(match count {
                    n if n > 0 => (order.count_key(), Some(encode_u64(n as u64).to_vec())),
                    _ => (order.count_key(), None),
                });
            }
        }
        Ok(operations)
    }
}

fn apply_moves(members: &mut Vec<ListingId>, moves: &[(ListingId, bool)]) {
    let mut set: BTreeSet<ListingId> = std::mem::take(members).into_iter().collect();
    for &(listing, joined) in moves {
        if joined {
            set.insert(listing);
        } else {
            set.remove(&listing);
        }
    }
    *members = set.into_iter().collect();
}

/// Every group of `listings`, from scratch and all in memory: the oracle the kept groups are
/// tested against (the migration and `reindex` write them through [`rebuild`]).
#[cfg(test)]
pub fn recompute<'a>(
    listings: impl IntoIterator<Item = &'a Listing>,
) -> BTreeMap<GroupKey, KeptGroup> {
    let mut groups: BTreeMap<GroupKey, KeptGroup> = BTreeMap::new();
    for listing in listings {
        add_to(&mut groups, listing);
    }
    groups
}

#[cfg(test)]
fn add_to(groups: &mut BTreeMap<GroupKey, KeptGroup>, listing: &Listing) {
    if let Some((group, share)) = GroupTally::of(listing) {
        let kept = groups.entry(group).or_insert_with(|| KeptGroup {
            tally: GroupTally::empty(share.identity.clone()),
            members: Vec::new(),
        });
        kept.tally.add(&share, 1);
        kept.members.push(listing.id);
    }
}

/// Listings [`rebuild`] groups per sled batch: the groups a batch touches are held in memory,
/// not every group of the store (a million and a half at the scale run's ten million listings).
const REBUILD_CHUNK: usize = 20_000;

/// Drops every kept group and its keys, and writes them again from the listings the store
/// holds, by the same bookkeeping a write of listings does, a chunk of listings at a time.
/// Idempotent: run again after a crash part-way, it starts over. Returns the groups written.
/// Must run where no other write can (a migration, a write turn).
pub(super) fn rebuild(db: &sled::Db) -> StoreResult<u64> {
    for space in [
        Keyspace::UnmatchedGroup,
        Keyspace::UnmatchedOrder,
        Keyspace::UnmatchedCount,
        Keyspace::UnmatchedText,
    ] {
        super::clear_keyspace(db, space, REBUILD_CHUNK)?;
    }
    let mut changes = GroupChanges::default();
    let mut pending = 0;
    // The scan meets only listing keys, which nothing here writes.
    for entry in db.scan_prefix(Keyspace::Listing.prefix()) {
        let (key, value) = entry?;
        let listing: Listing = decode(&key, &value)?;
        changes.listing_written(None, &listing);
        pending += 1;
        if pending == REBUILD_CHUNK {
            apply(db, std::mem::take(&mut changes).into_operations_on(db)?)?;
            pending = 0;
        }
    }
    apply(db, changes.into_operations_on(db)?)?;
    read_count(db, GroupOrder::All)
}

fn apply(db: &sled::Db, operations: Vec<Operation>) -> StoreResult<()> {
    let mut batch = sled::Batch::default();
    for (key, value) in operations {
        match value {
            Some(value) => batch.insert(key, value),
            None => batch.remove(key),
        }
    }
    Ok(db.apply_batch(batch)?)
}

/// Checks that every order key, text key and order count is exactly what the kept groups call
/// for: what a write's own bookkeeping must leave.
#[cfg(test)]
impl Unmatched<'_> {
    pub(crate) fn check_derived(self) -> Result<(), String> {
        let mut expected: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut counts: BTreeMap<GroupOrder, u64> = BTreeMap::new();
        for entry in self.all() {
            let (group, kept) = entry.map_err(|e| e.to_string())?;
            for order in GroupOrder::of(&kept.tally) {
                *counts.entry(order).or_default() += 1;
            }
            expected.extend(derived_keys(group, &kept.tally));
        }
        for (order, count) in counts {
            expected.insert(order.count_key(), encode_u64(count).to_vec());
        }
        let mut found: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for space in [
            Keyspace::UnmatchedOrder,
            Keyspace::UnmatchedCount,
            Keyspace::UnmatchedText,
        ] {
            for entry in self.0.db.scan_prefix(space.prefix()) {
                let (key, value) = entry.map_err(|e| e.to_string())?;
                found.insert(key.to_vec(), value.to_vec());
            }
        }
        let missing: Vec<_> = expected
            .iter()
            .filter(|(k, v)| found.get(*k) != Some(v))
            .collect();
        let extra: Vec<_> = found
            .keys()
            .filter(|k| !expected.contains_key(*k))
            .collect();
        if missing.is_empty() && extra.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "keys missing or wrong: {missing:?}; keys extra: {extra:?}"
            ))
        }
    }
}
