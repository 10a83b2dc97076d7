//! The reconciliation area: unmatched listings grouped by the identity their sellers claim,
//! kept by every write of listings in the same commit (`WriteBatch::put_listing`). A group is a
//! small record (its [`GroupTally`] but for the prices), a key per member listing (valued with
//! its title, so a page's example titles are one range read: D-203) and a key per price, so a
//! write costs what it moves, whatever the group's size (D-177); keys order the
//! groups largest first, alone or by brand or by provider and reason (by provider alone or by
//! reason alone, those merged: D-233). A page of groups reads its page (records, newest
//! members, price bounds), never the unmatched listings; a text finds groups in the listings
//! index (D-240). Keyspaces: `UnmatchedGroup`, `UnmatchedMember`, `UnmatchedPrice`,
//! `UnmatchedOrder`, `UnmatchedCount` (and the retired `UnmatchedText`, which no store of
//! today's schema holds).

use super::codec::{decode, decode_u64, encode, encode_u64};
use super::keys::Keyspace;
use super::write::Operation;
use super::{Store, StoreResult};
use crate::domain::{BrandId, GroupKey, GroupTally, Listing, ListingId, MatchOutcome, ProviderId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// A group whole: its tally with every price and its listings, assembled from its keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptGroup {
    pub tally: GroupTally,
    /// Its listings, ascending by id: the newest (the greatest id) last.
    pub members: Vec<Member>,
}

impl KeptGroup {
    /// Its listings' ids, newest first.
    pub fn newest_first(&self) -> impl Iterator<Item = ListingId> + '_ {
        self.members.iter().rev().map(|member| member.id)
    }
}

/// A listing of a group as its member key holds it: its id and its title, kept with the key so
/// a page's example titles are not a listing read each (D-203).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: ListingId,
    pub title: Option<String>,
}

impl Member {
    fn of(listing: &Listing) -> Member {
        Member {
            id: listing.id,
            title: listing.details.title.clone(),
        }
    }

    /// A member key's value: the title's bytes, empty for a listing without one.
    fn value(&self) -> Vec<u8> {
        self.title.clone().unwrap_or_default().into_bytes()
    }

    fn read(key: &[u8], value: &[u8]) -> StoreResult<Member> {
        let id = trailing_group(key)
            .map(|id| ListingId(id.0))
            .ok_or_else(|| corrupt(key, "a member key"))?;
        let title =
            String::from_utf8(value.to_vec()).map_err(|_| corrupt(key, "a member title"))?;
        Ok(Member {
            id,
            title: (!title.is_empty()).then_some(title),
        })
    }
}

/// A group's record: its tally without the prices (those are keys of their own), and how many
/// of its listings are priced in each currency, so a page finds each currency's bounds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRecord {
    pub tally: GroupTally,
    pub currencies: BTreeMap<String, i64>,
}

/// What a page of `/reconciliation` shows of a group (D-177): its tally with only the lowest and
/// highest price of each currency (the same price range at any rates), and its newest listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSummary {
    pub tally: GroupTally,
    /// Its newest listings, newest first, at most the number asked for.
    pub newest: Vec<Member>,
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
            GroupOrder::Provider(provider) => (MERGED_ORDER_TAGS[0], provider.0),
            GroupOrder::Reason(code) => (MERGED_ORDER_TAGS[1], code),
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

    /// Whether the order has keys of its own. A `Provider` or `Reason` order is walked as
    /// the merge of the `ProviderReason` orders it is the union of (every kept group has a
    /// reason): two keys fewer per group, and a group is most of an ingest's keys (D-233).
    fn is_keyed(self) -> bool {
        !matches!(self, GroupOrder::Provider(_) | GroupOrder::Reason(_))
    }

    /// The keyed orders whose union this order is: itself when keyed.
    fn keyed_parts(self, db: &sled::Db) -> StoreResult<Vec<GroupOrder>> {
        Ok(match self {
            GroupOrder::Provider(provider) => (MatchOutcome::REASONS.iter())
                .filter_map(|reason| reason.reason_code())
                .map(|code| GroupOrder::ProviderReason(provider, code))
                .collect(),
            GroupOrder::Reason(code) => providers_with_reason(db, code)?
                .into_iter()
                .map(|provider| GroupOrder::ProviderReason(provider, code))
                .collect(),
            keyed => vec![keyed],
        })
    }

    /// The orders a group with `tally` is in (and counted in).
    pub(crate) fn of(tally: &GroupTally) -> Vec<GroupOrder> {
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

fn order_key(order: GroupOrder, listings: u64, group: GroupKey) -> Vec<u8> {
    let mut key = order.prefix();
    // Inverted, so a forward scan meets the largest group first.
    key.extend_from_slice(&(u64::MAX - listings).to_be_bytes());
    key.extend_from_slice(&group.0.to_be_bytes());
    key
}

/// The tag bytes of the `Provider` and `Reason` orders in [`GroupOrder::prefix`]: their counts'
/// keys have them, and stores of schema 14 and before hold order keys with them, which step
/// 14 -> 15 removes.
pub(super) const MERGED_ORDER_TAGS: [u8; 2] = [2, 3];

/// The bytes every order key starts with: keyspace, tag, value.
const ORDER_PREFIX_BYTES: usize = 10;

/// The providers with a group of reason `code`, from the counts of the `ProviderReason`
/// orders (a count is removed with the order's last group).
fn providers_with_reason(db: &sled::Db, code: u64) -> StoreResult<Vec<ProviderId>> {
    let tag = GroupOrder::ProviderReason(ProviderId(0), 0).count_key();
    let mut providers = Vec::new();
    for key in db.scan_prefix(&tag[..2]).keys() {
        let key = key?;
        let value = trailing_group(&key).ok_or_else(|| corrupt(&key, "an order count key"))?;
        if value.0 & 0xf == code {
            providers.push(ProviderId(value.0 >> 4));
        }
    }
    Ok(providers)
}

/// Orders walked as one: their keys merged largest first (then by id), each group once, as a
/// group with listings of two providers is in the order of each.
struct MergedOrders {
    /// Each order's walk with its next key, while it has one.
    walks: Vec<(sled::Iter, sled::IVec)>,
    last: Option<sled::IVec>,
    /// A failure met while starting the walks, answered first.
    failed: Option<super::StoreError>,
}

impl MergedOrders {
    fn of(db: &sled::Db, order: GroupOrder) -> MergedOrders {
        let mut merged = MergedOrders {
            walks: Vec::new(),
            last: None,
            failed: None,
        };
        match order.keyed_parts(db) {
            Ok(parts) => {
                for part in parts {
                    if let Err(error) = merged.start(db.scan_prefix(part.prefix())) {
                        merged.failed = Some(error);
                    }
                }
            }
            Err(error) => merged.failed = Some(error),
        }
        merged
    }

    /// Keeps `walk` with its first key, unless it has none.
    fn start(&mut self, mut walk: sled::Iter) -> StoreResult<()> {
        if let Some(entry) = walk.next() {
            self.walks.push((walk, entry?.0));
        }
        Ok(())
    }

    /// The next key of every walk, the smallest taken and its walk moved on.
    fn take_smallest(&mut self) -> Option<StoreResult<sled::IVec>> {
        let at = (0..self.walks.len())
            .min_by(|&a, &b| order_suffix(&self.walks[a].1).cmp(order_suffix(&self.walks[b].1)))?;
        let (walk, key) = &mut self.walks[at];
        match walk.next() {
            Some(Ok((next, _))) => Some(Ok(std::mem::replace(key, next))),
            Some(Err(error)) => Some(Err(error.into())),
            None => Some(Ok(self.walks.swap_remove(at).1)),
        }
    }
}

/// What orders an order key: the group's size (inverted) and its id.
fn order_suffix(key: &[u8]) -> &[u8] {
    key.get(ORDER_PREFIX_BYTES..).unwrap_or_default()
}

impl Iterator for MergedOrders {
    type Item = StoreResult<GroupKey>;

    fn next(&mut self) -> Option<StoreResult<GroupKey>> {
        if let Some(error) = self.failed.take() {
            return Some(Err(error));
        }
        loop {
            let key = match self.take_smallest()? {
                Ok(key) => key,
                Err(error) => return Some(Err(error)),
            };
            if self.last.as_deref().map(order_suffix) == Some(order_suffix(&key)) {
                continue;
            }
            let group = trailing_group(&key).ok_or_else(|| corrupt(&key, "an order key"));
            self.last = Some(key);
            return Some(group);
        }
    }
}

fn group_key(group: GroupKey) -> Vec<u8> {
    Keyspace::UnmatchedGroup.id_key(group.0)
}

fn member_key(group: GroupKey, listing: ListingId) -> Vec<u8> {
    let mut key = Keyspace::UnmatchedMember.id_key(group.0);
    key.extend_from_slice(&listing.0.to_be_bytes());
    key
}

/// The start of the price keys of `group` in `currency` (or in every currency, with none).
fn price_prefix(group: GroupKey, currency: Option<&str>) -> Vec<u8> {
    let mut key = Keyspace::UnmatchedPrice.id_key(group.0);
    if let Some(currency) = currency {
        key.extend_from_slice(currency.as_bytes());
        key.push(0);
    }
    key
}

fn price_key(group: GroupKey, currency: &str, price: u64) -> Vec<u8> {
    let mut key = price_prefix(group, Some(currency));
    key.extend_from_slice(&price.to_be_bytes());
    key
}

/// The currency, price and count of a price key of `group` and its value.
fn price_entry(
    group: GroupKey,
    (key, value): (sled::IVec, sled::IVec),
) -> StoreResult<((String, u64), i64)> {
    let price = price_of(group, &key).ok_or_else(|| corrupt(&key, "a price key"))?;
    Ok((price, decode_u64(&key, &value)? as i64))
}

/// The currency and price of a price key of `group`.
fn price_of(group: GroupKey, key: &[u8]) -> Option<(String, u64)> {
    let rest = key.get(price_prefix(group, None).len()..)?;
    let (text, price) = rest.split_at(rest.len().checked_sub(9)?);
    let price: [u8; 8] = price.get(1..)?.try_into().ok()?;
    Some((
        String::from_utf8(text.to_vec()).ok()?,
        u64::from_be_bytes(price),
    ))
}

fn read_record(db: &sled::Db, group: GroupKey) -> StoreResult<Option<GroupRecord>> {
    let key = group_key(group);
    db.get(&key)?.map(|v| decode(&key, &v)).transpose()
}

/// `group` whole: its record, every price key and every member key.
fn read_group(db: &sled::Db, group: GroupKey) -> StoreResult<Option<KeptGroup>> {
    let Some(record) = read_record(db, group)? else {
        return Ok(None);
    };
    let mut tally = record.tally;
    for entry in db.scan_prefix(price_prefix(group, None)) {
        let (price, count) = price_entry(group, entry?)?;
        tally.prices.insert(price, count);
    }
    let members = newest_members(db, group).collect::<StoreResult<Vec<_>>>()?;
    Ok(Some(KeptGroup {
        tally,
        members: members.into_iter().rev().collect(),
    }))
}

/// `group`'s record, each currency's lowest and highest price, and its `newest` newest
/// listings.
fn read_summary(
    db: &sled::Db,
    group: GroupKey,
    newest: usize,
) -> StoreResult<Option<GroupSummary>> {
    let Some(record) = read_record(db, group)? else {
        return Ok(None);
    };
    let mut tally = record.tally;
    for currency in record.currencies.keys() {
        let mut prices = db.scan_prefix(price_prefix(group, Some(currency)));
        let lowest = prices.next().transpose()?;
        let highest = prices.next_back().transpose()?;
        for entry in lowest.into_iter().chain(highest) {
            let (price, count) = price_entry(group, entry)?;
            tally.prices.insert(price, count);
        }
    }
    let newest = newest_members(db, group)
        .take(newest)
        .collect::<StoreResult<_>>()?;
    Ok(Some(GroupSummary { tally, newest }))
}

/// `group`'s listings, newest (the greatest id) first, from its member keys.
fn newest_members(
    db: &sled::Db,
    group: GroupKey,
) -> impl Iterator<Item = StoreResult<Member>> + '_ {
    db.scan_prefix(Keyspace::UnmatchedMember.id_key(group.0))
        .rev()
        .map(|entry| {
            let (key, value) = entry?;
            Member::read(&key, &value)
        })
}

fn corrupt(key: &[u8], what: &str) -> super::StoreError {
    super::StoreError::Corrupt {
        key: key.to_vec(),
        reason: format!("{what} of an unexpected shape"),
    }
}

fn read_count(db: &sled::Db, order: GroupOrder) -> StoreResult<u64> {
    let key = order.count_key();
    db.get(&key)?.map_or(Ok(0), |v| decode_u64(&key, &v))
}

/// The group in the last 8 bytes of an order key.
fn trailing_group(key: &[u8]) -> Option<GroupKey> {
    let tail: [u8; 8] = key.get(key.len().checked_sub(8)?..)?.try_into().ok()?;
    Some(GroupKey(u64::from_be_bytes(tail)))
}

/// The keys a kept group has besides its record: its place in each order.
fn derived_keys(group: GroupKey, tally: &GroupTally) -> Vec<(Vec<u8>, Vec<u8>)> {
    let size = tally.listings.max(0) as u64;
    GroupOrder::of(tally)
        .into_iter()
        .filter(|order| order.is_keyed())
        .map(|order| (order_key(order, size, group), Vec::new()))
        .collect()
}

/// The store's kept groups: see [`Store::unmatched`].
#[derive(Clone, Copy)]
pub struct Unmatched<'s>(pub(super) &'s Store);

impl<'s> Unmatched<'s> {
    pub fn group(self, group: GroupKey) -> StoreResult<Option<KeptGroup>> {
        read_group(&self.0.db, group)
    }

    /// `group`'s tally but the prices (its record alone): what a filter checks.
    pub fn tally(self, group: GroupKey) -> StoreResult<Option<GroupTally>> {
        Ok(read_record(&self.0.db, group)?.map(|record| record.tally))
    }

    /// What a page shows of `group`: its record, each currency's lowest and highest price, and
    /// its `newest` newest listings, never every key it has.
    pub fn summary(self, group: GroupKey, newest: usize) -> StoreResult<Option<GroupSummary>> {
        read_summary(&self.0.db, group, newest)
    }

    /// How many groups `order` walks.
    pub fn count(self, order: GroupOrder) -> StoreResult<u64> {
        read_count(&self.0.db, order)
    }

    /// The groups `order` walks, largest first: keys only, no record decoded.
    pub fn in_order(self, order: GroupOrder) -> impl Iterator<Item = StoreResult<GroupKey>> + 's {
        MergedOrders::of(&self.0.db, order)
    }

    /// Every kept group with its key, for a check against a recomputation.
    #[cfg(test)]
    pub fn all(self) -> impl Iterator<Item = StoreResult<(GroupKey, KeptGroup)>> + 's {
        let db = &self.0.db;
        db.scan_prefix(Keyspace::UnmatchedGroup.prefix())
            .keys()
            .map(move |key| {
                let key = key?;
                let group = trailing_group(&key).ok_or_else(|| corrupt(&key, "a group key"))?;
                let kept = read_group(db, group)?.ok_or_else(|| corrupt(&key, "a group"))?;
                Ok((group, kept))
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
    /// Listings that joined (with their title as it is now) or left (none), in order: a
    /// listing written twice in one batch may join and leave.
    moves: Vec<(ListingId, Option<Member>)>,
}

impl GroupChanges {
    /// Records that the listing `old` is written as `new`.
    pub fn listing_written(&mut self, old: Option<&Listing>, new: &Listing) {
        let was = old.and_then(GroupTally::of);
        let is = GroupTally::of(new);
        // A matched listing, or one whose share of its group is unchanged (a revisit): only
        // a new title changes its member key.
        if was == is {
            let retitled = old.is_some_and(|old| old.details.title != new.details.title);
            if let Some((group, share)) = is.filter(|_| retitled) {
                self.touch(group, &share, 0, new.id, Some(Member::of(new)));
            }
            return;
        }
        if let Some((group, share)) = was {
            self.touch(group, &share, -1, new.id, None);
        }
        if let Some((group, share)) = is {
            self.touch(group, &share, 1, new.id, Some(Member::of(new)));
        }
    }

    /// Adds `share` times `sign` to `group`'s change and records that `listing` joined it (or
    /// was retitled) as `member`, or with none, left it.
    fn touch(
        &mut self,
        group: GroupKey,
        share: &GroupTally,
        sign: i64,
        listing: ListingId,
        member: Option<Member>,
    ) {
        let touched = self.touched.entry(group).or_insert_with(|| Touched {
            delta: GroupTally::empty(share.identity.clone()),
            moves: Vec::new(),
        });
        touched.delta.add(share, sign);
        touched.moves.push((listing, member));
    }

    /// The writes that bring every touched group, its keys and the order counts up to date,
    /// read against the store inside the write turn.
    pub fn into_operations(self, store: &Store) -> StoreResult<Vec<Operation>> {
        self.into_operations_on(&store.db)
    }

    fn into_operations_on(self, db: &sled::Db) -> StoreResult<Vec<Operation>> {
        let mut operations = Vec::new();
        let mut counts: BTreeMap<GroupOrder, i64> = BTreeMap::new();
        for (group, mut touched) in self.touched {
            let stored = read_record(db, group)?;
            let before = stored.as_ref().map(|record| &record.tally);
            let mut record = stored.clone().unwrap_or_else(|| GroupRecord {
                tally: GroupTally::empty(touched.delta.identity.clone()),
                currencies: BTreeMap::new(),
            });
            let prices = std::mem::take(&mut touched.delta.prices);
            record.tally.add(&touched.delta, 1);
            price_operations(db, group, &prices, &mut record.currencies, &mut operations)?;
            member_operations(group, touched.moves, &mut operations);
            let after = (!record.tally.is_empty()).then_some(&record.tally);
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
                Some(_) => (group_key(group), Some(encode(&record))),
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

/// The writes of a group's price keys that `prices` (counts to add, one key per currency and
/// price) calls for, keeping `currencies` (priced listings per currency) with them.
fn price_operations(
    db: &sled::Db,
    group: GroupKey,
    prices: &BTreeMap<(String, u64), i64>,
    currencies: &mut BTreeMap<String, i64>,
    operations: &mut Vec<Operation>,
) -> StoreResult<()> {
    for ((currency, price), &delta) in prices {
        let key = price_key(group, currency, *price);
        let stored = db.get(&key)?.map(|v| decode_u64(&key, &v)).transpose()?;
        let count = stored.unwrap_or(0) as i64 + delta;
        operations.push(match count {
            n if n > 0 => (key, Some(encode_u64(n as u64).to_vec())),
            _ => (key, None),
        });
        let priced = currencies.entry(currency.clone()).or_default();
        *priced += delta;
        if *priced <= 0 {
            currencies.remove(currency);
        }
    }
    Ok(())
}

/// The writes of a group's member keys: each listing's last move in the write wins.
fn member_operations(
    group: GroupKey,
    moves: Vec<(ListingId, Option<Member>)>,
    operations: &mut Vec<Operation>,
) {
    let last: BTreeMap<ListingId, Option<Member>> = moves.into_iter().collect();
    for (listing, joined) in last {
        let key = member_key(group, listing);
        operations.push((key, joined.map(|member| member.value())));
    }
}

/// Every group of `listings`, from scratch and all in memory: the oracle the kept groups are
/// tested against ([`rebuild`] gathers them from the store's scan, leaner: [`Gathered`]).
#[cfg(test)]
pub fn recompute<'a>(
    listings: impl IntoIterator<Item = &'a Listing>,
) -> BTreeMap<GroupKey, KeptGroup> {
    let mut groups: BTreeMap<GroupKey, KeptGroup> = BTreeMap::new();
    for listing in listings {
        if let Some((group, share)) = GroupTally::of(listing) {
            let kept = groups.entry(group).or_insert_with(|| KeptGroup {
                tally: GroupTally::empty(share.identity.clone()),
                members: Vec::new(),
            });
            kept.tally.add(&share, 1);
            kept.members.push(Member::of(listing));
        }
    }
    groups
}

/// Keys [`rebuild`] writes per sled batch. Its writes come in key order, so a batch lands on a
/// few leaves, and sled keeps each version of a leaf the batch rewrote until it ends: at a
/// million listings with every key to write, batches of 20,000 peaked at 3.8 GB, of 5,000 at
/// 3.6 GB, of 1,000 at 0.96 GB and of 250 at 0.77 GB, what a rebuild with nothing to write
/// takes (examples/groups_rebuild).
const REBUILD_CHUNK: usize = 250;

/// The keyspaces of the kept groups, the records last: a rebuild stopped part-way leaves
/// records of the old state beside keys of the new, which the next rebuild finishes.
const KEYSPACES: [Keyspace; 5] = [
    Keyspace::UnmatchedMember,
    Keyspace::UnmatchedPrice,
    Keyspace::UnmatchedOrder,
    Keyspace::UnmatchedCount,
    Keyspace::UnmatchedGroup,
];

/// What a [`rebuild`] found and wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupsRebuilt {
    pub groups: u64,
    /// Keys written or removed: none when the kept groups were already right.
    pub keys_written: u64,
}

/// Brings the kept groups and their keys to exactly what the listings the store holds make
/// (D-179): the groups are gathered in memory in one pass over the listings, then each keyspace
/// is walked beside what it should hold and only the keys that differ are written or removed.
/// Idempotent: run again after a crash part-way, it finishes the job. Must run where no other
/// write can (a migration, a write turn).
pub(super) fn rebuild(db: &sled::Db) -> StoreResult<GroupsRebuilt> {
    let mut gathered = Gathered::default();
    for entry in db.scan_prefix(Keyspace::Listing.prefix()) {
        let (key, value) = entry?;
        gathered.add(&decode(&key, &value)?)?;
    }
    let mut keys_written = 0;
    for space in KEYSPACES {
        keys_written += sync_keyspace(db, space, gathered.expected_keys(space)?)?;
    }
    Ok(GroupsRebuilt {
        groups: gathered.records.len() as u64,
        keys_written,
    })
}

type Pair = (Vec<u8>, Vec<u8>);

/// Every group, held lean for the scale run's 1.3 million: each record encoded (its tally but
/// the prices), the prices and members as flat lists, where a tally is five maps.
#[derive(Default)]
struct Gathered {
    /// Each group's [`GroupRecord`] as stored, its priced counts still empty.
    records: HashMap<GroupKey, Vec<u8>>,
    prices: BTreeMap<(GroupKey, String, u64), i64>,
    members: Vec<(GroupKey, Member)>,
}

impl Gathered {
    fn add(&mut self, listing: &Listing) -> StoreResult<()> {
        let Some((group, mut share)) = GroupTally::of(listing) else {
            return Ok(());
        };
        for ((currency, price), count) in std::mem::take(&mut share.prices) {
            *self.prices.entry((group, currency, price)).or_default() += count;
        }
        self.members.push((group, Member::of(listing)));
        let record = match self.records.get(&group) {
            Some(bytes) => {
                let mut record: GroupRecord = decode(&group_key(group), bytes)?;
                record.tally.add(&share, 1);
                record
            }
            None => GroupRecord {
                tally: share,
                currencies: BTreeMap::new(),
            },
        };
        self.records.insert(group, encode(&record));
        Ok(())
    }

    /// The groups read whole from the store, gathered: what [`Unmatched::check_derived`]
    /// compares the keys with.
    #[cfg(test)]
    fn of_kept(groups: &BTreeMap<GroupKey, KeptGroup>) -> Gathered {
        let mut gathered = Gathered::default();
        for (&group, kept) in groups {
            let mut tally = kept.tally.clone();
            for ((currency, price), count) in std::mem::take(&mut tally.prices) {
                gathered.prices.insert((group, currency, price), count);
            }
            let record = GroupRecord {
                tally,
                currencies: BTreeMap::new(),
            };
            gathered.records.insert(group, encode(&record));
            gathered
                .members
                .extend(kept.members.iter().map(|m| (group, m.clone())));
        }
        gathered
    }

    /// The keys of `space` the groups call for, with their values, in key order.
    fn expected_keys(&self, space: Keyspace) -> StoreResult<Vec<Pair>> {
        let mut keys: Vec<Pair> = match space {
            Keyspace::UnmatchedMember => (self.members.iter())
                .map(|(group, member)| (member_key(*group, member.id), member.value()))
                .collect(),
            Keyspace::UnmatchedPrice => (self.prices.iter())
                .map(|((group, currency, price), &count)| {
                    let value = encode_u64(count as u64).to_vec();
                    (price_key(*group, currency, *price), value)
                })
                .collect(),
            Keyspace::UnmatchedGroup => {
                let mut records = Vec::with_capacity(self.records.len());
                for (&group, bytes) in &self.records {
                    let mut record: GroupRecord = decode(&group_key(group), bytes)?;
                    record.currencies = self.currencies(group);
                    records.push((group_key(group), encode(&record)));
                }
                records
            }
            Keyspace::UnmatchedCount => {
                let mut counts: BTreeMap<GroupOrder, u64> = BTreeMap::new();
                for (&group, bytes) in &self.records {
                    let record: GroupRecord = decode(&group_key(group), bytes)?;
                    for order in GroupOrder::of(&record.tally) {
                        *counts.entry(order).or_default() += 1;
                    }
                }
                (counts.into_iter())
                    .map(|(order, count)| (order.count_key(), encode_u64(count).to_vec()))
                    .collect()
            }
            _ => {
                let mut derived = Vec::new();
                for (&group, bytes) in &self.records {
                    let record: GroupRecord = decode(&group_key(group), bytes)?;
                    derived.extend(
                        (derived_keys(group, &record.tally).into_iter())
                            .filter(|(key, _)| key.first() == Some(&(space as u8))),
                    );
                }
                derived
            }
        };
        keys.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(keys)
    }

    /// How many of `group`'s listings are priced in each currency.
    fn currencies(&self, group: GroupKey) -> BTreeMap<String, i64> {
        let mut currencies: BTreeMap<String, i64> = BTreeMap::new();
        let from = (group, String::new(), 0);
        for ((of, currency, _), count) in self.prices.range(from..) {
            if *of != group {
                break;
            }
            *currencies.entry(currency.clone()).or_default() += count;
        }
        currencies
    }
}

/// Brings `space` to hold exactly `expected` (in key order), writing only the keys that differ;
/// the keys written or removed. Every write is at or behind the key the scan stands on, which
/// the scan has passed.
fn sync_keyspace(db: &sled::Db, space: Keyspace, expected: Vec<Pair>) -> StoreResult<u64> {
    let mut expected = expected.into_iter().peekable();
    let mut writes = Writes::new(db);
    for entry in db.scan_prefix(space.prefix()) {
        let (key, value) = entry?;
        while let Some((missing, value)) = expected.next_if(|(k, _)| k.as_slice() < &*key) {
            writes.put(missing, Some(value))?;
        }
        match expected.next_if(|(k, _)| k.as_slice() == &*key) {
            Some((_, wanted)) if wanted.as_slice() == &*value => {}
            Some((key, wanted)) => writes.put(key, Some(wanted))?,
            None => writes.put(key.to_vec(), None)?,
        }
    }
    for (missing, value) in expected {
        writes.put(missing, Some(value))?;
    }
    writes.finish()
}

/// Writes applied a sled batch of [`REBUILD_CHUNK`] at a time.
struct Writes<'a> {
    db: &'a sled::Db,
    batch: sled::Batch,
    pending: usize,
    written: u64,
}

impl<'a> Writes<'a> {
    fn new(db: &'a sled::Db) -> Writes<'a> {
        Writes {
            db,
            batch: sled::Batch::default(),
            pending: 0,
            written: 0,
        }
    }

    fn put(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) -> StoreResult<()> {
        match value {
            Some(value) => self.batch.insert(key, value),
            None => self.batch.remove(key),
        }
        self.pending += 1;
        if self.pending == REBUILD_CHUNK {
            self.apply()?;
        }
        Ok(())
    }

    fn apply(&mut self) -> StoreResult<()> {
        self.db.apply_batch(std::mem::take(&mut self.batch))?;
        self.written += self.pending as u64;
        self.pending = 0;
        Ok(())
    }

    fn finish(mut self) -> StoreResult<u64> {
        self.apply()?;
        Ok(self.written)
    }
}

/// Checks that every record, member, price and order key and every order count is exactly
/// what the kept groups call for (a record's priced counts those of its price keys), with no key
/// left of a group that is gone: what a write's own bookkeeping must leave.
#[cfg(test)]
impl Unmatched<'_> {
    pub(crate) fn check_derived(self) -> Result<(), String> {
        let groups =
            (self.all().collect::<StoreResult<BTreeMap<_, _>>>()).map_err(|e| e.to_string())?;
        let gathered = Gathered::of_kept(&groups);
        for space in KEYSPACES {
            let expected = gathered.expected_keys(space).map_err(|e| e.to_string())?;
            let expected: BTreeMap<Vec<u8>, Vec<u8>> = expected.into_iter().collect();
            let mut found: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            for entry in self.0.db.scan_prefix(space.prefix()) {
                let (key, value) = entry.map_err(|e| e.to_string())?;
                found.insert(key.to_vec(), value.to_vec());
            }
            let missing: Vec<_> = (expected.iter())
                .filter(|(k, v)| found.get(*k) != Some(v))
                .collect();
            let extra: Vec<_> = (found.keys())
                .filter(|k| !expected.contains_key(*k))
                .collect();
            if !missing.is_empty() || !extra.is_empty() {
                return Err(format!(
                    "{space:?}: keys missing or wrong: {missing:?}; keys extra: {extra:?}"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{ClaimedBrand, ClaimedIdentity};

    fn apply(db: &sled::Db, operations: Vec<Operation>) -> StoreResult<u64> {
        let mut writes = Writes::new(db);
        for (key, value) in operations {
            writes.put(key, value)?;
        }
        writes.finish()
    }

    /// A group of 30 listings written by one write: read whole it is what was written; its
    /// summary has each currency's lowest and highest price and the newest listings asked for.
    #[test]
    fn a_group_is_read_whole_from_its_keys_and_summarised_from_few() {
        let db = sled::Config::new().temporary(true).open().expect("db");
        let identity = ClaimedIdentity {
            brand: ClaimedBrand::Text("vantor".into()),
            reference: None,
        };
        let group = GroupKey::of(&identity);
        let mut changes = GroupChanges::default();
        let prices = [
            ("EUR", 900),
            ("EUR", 100),
            ("EUR", 500),
            ("USD", 70),
            ("EUR", 100),
        ];
        for id in 1..=30u64 {
            let mut share = GroupTally::empty(identity.clone());
            share.listings = 1;
            if let Some((currency, price)) = prices.get(id as usize - 1) {
                share.prices.insert((currency.to_string(), *price), 1);
            }
            let member = Member {
                id: ListingId(id),
                title: Some(format!("title {id}")),
            };
            changes.touch(group, &share, 1, member.id, Some(member));
        }
        apply(&db, changes.into_operations_on(&db).expect("operations")).expect("apply");

        let kept = read_group(&db, group).expect("read").expect("kept");
        assert_eq!(kept.tally.listings, 30);
        let ids: Vec<u64> = kept.members.iter().map(|m| m.id.0).collect();
        assert_eq!(ids, (1..=30).collect::<Vec<_>>());
        let all: Vec<(&str, u64, i64)> = (kept.tally.prices.iter())
            .map(|((currency, price), count)| (currency.as_str(), *price, *count))
            .collect();
        assert_eq!(
            all,
            [
                ("EUR", 100, 2),
                ("EUR", 500, 1),
                ("EUR", 900, 1),
                ("USD", 70, 1)
            ]
        );

        let record = read_record(&db, group).expect("record").expect("kept");
        assert_eq!(
            record.currencies,
            BTreeMap::from([("EUR".into(), 4), ("USD".into(), 1)])
        );
        assert!(
            record.tally.prices.is_empty(),
            "prices are keys of their own"
        );
        let summary = read_summary(&db, group, 20)
            .expect("summary")
            .expect("kept");
        let bounds: Vec<(&str, u64)> = (summary.tally.prices.keys())
            .map(|(currency, price)| (currency.as_str(), *price))
            .collect();
        assert_eq!(bounds, [("EUR", 100), ("EUR", 900), ("USD", 70)]);
        let newest: Vec<u64> = summary.newest.iter().map(|m| m.id.0).collect();
        assert_eq!(newest, (11..=30).rev().collect::<Vec<u64>>());
        assert_eq!(summary.newest[0].title.as_deref(), Some("title 30"));
    }

    /// Groups of one or two providers and two reasons: each order by provider or by reason
    /// walks, merged, exactly the groups it counts, largest first and each once, though only
    /// the provider-and-reason orders have keys.
    #[test]
    fn orders_by_provider_or_by_reason_are_walked_merged_each_group_once() {
        let db = sled::Config::new().temporary(true).open().expect("db");
        let (unknown_brand, no_reference) = (1, 4);
        // (reference, provider, reason) of each listing: "b" has two providers and three
        // listings, "c" and "d" two listings of one provider, the others one.
        let listings = [
            ("a", 1, no_reference),
            ("b", 1, unknown_brand),
            ("b", 2, unknown_brand),
            ("b", 2, unknown_brand),
            ("c", 2, no_reference),
            ("c", 2, no_reference),
            ("d", 1, unknown_brand),
            ("d", 1, unknown_brand),
            ("e", 2, unknown_brand),
        ];
        let mut changes = GroupChanges::default();
        for (id, (reference, provider, code)) in listings.into_iter().enumerate() {
            let identity = ClaimedIdentity {
                brand: ClaimedBrand::Text("vantor".into()),
                reference: Some(reference.into()),
            };
            let mut share = GroupTally::empty(identity.clone());
            share.listings = 1;
            share.providers.insert(ProviderId(provider), 1);
            share.reasons.insert(code, 1);
            let member = Member {
                id: ListingId(id as u64 + 1),
                title: None,
            };
            changes.touch(GroupKey::of(&identity), &share, 1, member.id, Some(member));
        }
        apply(&db, changes.into_operations_on(&db).expect("operations")).expect("apply");
        let walk = |order| {
            (MergedOrders::of(&db, order))
                .collect::<StoreResult<Vec<_>>>()
                .expect("walk")
        };

        let all = walk(GroupOrder::All);
        assert_eq!(all.len(), 5);
        let tally = |group| read_record(&db, group).expect("read").expect("kept").tally;
        let sizes: Vec<i64> = all.iter().map(|&g| tally(g).listings).collect();
        assert_eq!(sizes, [3, 2, 2, 1, 1], "largest first");
        for order in [
            GroupOrder::Provider(ProviderId(1)),
            GroupOrder::Provider(ProviderId(2)),
            GroupOrder::Reason(unknown_brand),
            GroupOrder::Reason(no_reference),
        ] {
            let expected: Vec<GroupKey> = (all.iter().copied())
                .filter(|&group| GroupOrder::of(&tally(group)).contains(&order))
                .collect();
            assert_eq!(walk(order), expected, "{order:?}");
            assert_eq!(
                read_count(&db, order).expect("count"),
                expected.len() as u64
            );
        }
        assert_eq!(walk(GroupOrder::Reason(unknown_brand)).len(), 3, "b once");
        assert_eq!(GroupOrder::All.prefix().len(), ORDER_PREFIX_BYTES);
        for tag in MERGED_ORDER_TAGS {
            let prefix = [Keyspace::UnmatchedOrder as u8, tag];
            assert_eq!(db.scan_prefix(prefix).count(), 0, "no keys of tag {tag}");
        }
    }
}
