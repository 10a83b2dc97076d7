//! The pages of `GET /reconciliation`: kept groups of unmatched listings (`store::unmatched`),
//! largest first, filtered by brand, provider, reason and text. A page reads its own groups;
//! a filter reads the groups of one order (records only, where it checks them), and text the
//! groups its words or prefix find. A shown group is its record, newest members and price
//! bounds (D-177), never every key it has.

use super::reconciliation::ReconcileError;
use crate::domain::{BrandId, ClaimedIdentity, GroupKey, GroupTally};
use crate::domain::{MatchOutcome, ProviderId};
use crate::store::Member;
use crate::store::{GroupOrder, Store, StoreResult};
use catalogue_index::{GroupCounts, ListingFilters, ListingIndex};
use rayon::prelude::*;

/// A group as a page shows it: its summary's tally and newest listings.
#[derive(Debug, Clone)]
pub struct ShownGroup {
    /// [`GroupKey`]'s text, what the API shows and the writes take.
    pub id: String,
    /// Its tally, with each currency's lowest and highest price only.
    pub tally: GroupTally,
    /// Its newest listings with their titles, newest first, at most [`NEWEST_SHOWN`].
    pub newest: Vec<Member>,
}

impl ShownGroup {
    pub fn identity(&self) -> &ClaimedIdentity {
        &self.tally.identity
    }

    /// How many listings it has.
    pub fn listing_count(&self) -> usize {
        self.tally.listings.max(0) as usize
    }

    /// Up to `most` distinct titles of its newest listings (a group of a thousand listings
    /// with one title is not read whole for a few examples: D-169), as its member keys keep
    /// them (D-203).
    pub fn example_titles(&self, most: usize) -> Vec<String> {
        let mut titles: Vec<String> = Vec::new();
        for title in self
            .newest
            .iter()
            .filter_map(|member| member.title.as_ref())
        {
            if titles.len() >= most {
                break;
            }
            if !titles.contains(title) {
                titles.push(title.clone());
            }
        }
        titles
    }
}

/// A shown group's newest listings read: what its example titles and its candidates' titles
/// are taken from (D-169).
pub const NEWEST_SHOWN: usize = 20;

/// The group whose id is `id`, as a page shows it; none for an id no group has.
pub fn one_group(store: &Store, id: &str) -> StoreResult<Option<ShownGroup>> {
    match GroupKey::parse(id) {
        Some(key) => shown_group(store, key),
        None => Ok(None),
    }
}

/// The summary of group `key`, if any listing is in it.
fn shown_group(store: &Store, key: GroupKey) -> StoreResult<Option<ShownGroup>> {
    Ok(store
        .unmatched()
        .summary(key, NEWEST_SHOWN)?
        .map(|summary| ShownGroup {
            id: key.to_string(),
            tally: summary.tally,
            newest: summary.newest,
        }))
}

/// The summaries of the groups `keys` that still have a listing, in the order given, read with
/// many reads waiting at once (cold after a start: `read_pool`).
fn shown_groups(store: &Store, keys: Vec<GroupKey>) -> StoreResult<Vec<ShownGroup>> {
    let read: Vec<Option<ShownGroup>> = super::read_pool::with_waiting_reads(|| {
        keys.into_par_iter()
            .map(|key| shown_group(store, key))
            .collect::<StoreResult<_>>()
    })?;
    Ok(read.into_iter().flatten().collect())
}

/// What a page of groups is filtered by, resolved.
#[derive(Debug, Clone, Default)]
pub struct GroupFilter {
    pub brand: Option<BrandId>,
    pub provider: Option<ProviderId>,
    pub reason: Option<MatchOutcome>,
    /// Words of the group's brand text, reference spellings or titles, or the start of its
    /// reference or brand text.
    pub text: Option<String>,
}

impl GroupFilter {
    /// The one order that holds every group the filter keeps, the narrowest of those it names.
    fn order(&self) -> GroupOrder {
        let reason = self.reason.and_then(MatchOutcome::reason_code);
        match (self.brand, self.provider, reason) {
            (Some(brand), _, _) => GroupOrder::Brand(brand),
            (None, Some(provider), Some(code)) => GroupOrder::ProviderReason(provider, code),
            (None, Some(provider), None) => GroupOrder::Provider(provider),
            (None, None, Some(code)) => GroupOrder::Reason(code),
            (None, None, None) => GroupOrder::All,
        }
    }

    /// True when [`GroupFilter::order`] holds exactly the groups the filter keeps: a brand's
    /// groups are checked for the other filters one by one (a brand has few).
    fn order_is_exact(&self) -> bool {
        self.brand.is_none() || (self.provider.is_none() && self.reason.is_none())
    }

    /// True when the filter names none of brand, provider and reason.
    fn is_open(&self) -> bool {
        self.brand.is_none() && self.provider.is_none() && self.reason.is_none()
    }

    fn keeps(&self, tally: &GroupTally) -> bool {
        self.brand.is_none_or(|b| tally.brand() == Some(b))
            && self
                .provider
                .is_none_or(|p| tally.providers.contains_key(&p))
            && self.reason.is_none_or(|r| tally.reason() == r)
    }
}

/// The `limit` groups after the first `skip` that `filter` keeps, and how many it keeps in all:
/// largest first (then by id), or with a text, those with more listings it finds first (D-167).
pub fn group_page(
    store: &Store,
    listings: &ListingIndex,
    filter: &GroupFilter,
    skip: usize,
    limit: usize,
) -> Result<(Vec<ShownGroup>, usize), ReconcileError> {
    if let Some(text) = filter.text.as_deref() {
        let found = groups_with_text(listings, text, filter.brand)?;
        return page_of_found(store, filter, found, skip, limit);
    }
    let order = filter.order();
    let unmatched = store.unmatched();
    if filter.order_is_exact() {
        // One order holds exactly the groups kept: its count is the total, its keys the page.
        let total = unmatched.count(order)? as usize;
        let keys =
            (unmatched.in_order(order).skip(skip).take(limit)).collect::<StoreResult<_>>()?;
        return Ok((shown_groups(store, keys)?, total));
    }
    // A brand and more: the brand's groups, each read and checked.
    checked_page(store, filter, unmatched.in_order(order), skip, limit)
}

/// The groups of `keys` that `filter` keeps, each record read and checked: the page after
/// `skip` (only its groups read as a page shows them), and how many it keeps in all.
fn checked_page(
    store: &Store,
    filter: &GroupFilter,
    keys: impl Iterator<Item = StoreResult<GroupKey>>,
    skip: usize,
    limit: usize,
) -> Result<(Vec<ShownGroup>, usize), ReconcileError> {
    let mut total = 0;
    let mut page = Vec::with_capacity(limit);
    for key in keys {
        let key = key?;
        let Some(tally) = store.unmatched().tally(key)? else {
            continue;
        };
        if filter.keeps(&tally) {
            if total >= skip && page.len() < limit {
                page.extend(shown_group(store, key)?);
            }
            total += 1;
        }
    }
    Ok((page, total))
}

/// The groups `found` that `filter` keeps, as a page: those with more listings found first,
/// then by id.
fn page_of_found(
    store: &Store,
    filter: &GroupFilter,
    found: GroupCounts,
    skip: usize,
    limit: usize,
) -> Result<(Vec<ShownGroup>, usize), ReconcileError> {
    let mut found: Vec<(GroupKey, u64)> = found
        .into_iter()
        .map(|(key, count)| (GroupKey(key), count))
        .collect();
    if filter.is_open() {
        let total = found.len();
        let page = shown_groups(store, most_found_page(found, skip, limit))?;
        return Ok((page, total));
    }
    found.sort_unstable_by(most_found_first);
    let keys = found.into_iter().map(|(key, _)| Ok(key));
    checked_page(store, filter, keys, skip, limit)
}

/// The order of a text's groups: more listings found first, then by id.
fn most_found_first(a: &(GroupKey, u64), b: &(GroupKey, u64)) -> std::cmp::Ordering {
    b.1.cmp(&a.1).then(a.0.cmp(&b.0))
}

/// The keys of `found` after the first `skip` in [`most_found_first`] order, at most `limit`.
/// Only the page's place in the order is sorted: a common word finds tens of thousands of
/// groups, and sorting them all was most of what was left once they were counted.
fn most_found_page(mut found: Vec<(GroupKey, u64)>, skip: usize, limit: usize) -> Vec<GroupKey> {
    let end = skip.saturating_add(limit).min(found.len());
    if end < found.len() {
        found.select_nth_unstable_by(end, most_found_first);
    }
    found.truncate(end);
    found.sort_unstable_by(most_found_first);
    found.into_iter().skip(skip).map(|(key, _)| key).collect()
}

/// The groups `text` finds, each with how many of its listings the text finds, counted by the
/// listings index from its group column (D-167): a group whose reference or brand text starts
/// with it (letters and digits only, any case) with all of them, and the groups of the
/// unmatched listings whose title, brand or reference holds its words (D-240). A `brand` is a
/// filter of the listings searched: a group's listings all have its brand.
fn groups_with_text(
    listings: &ListingIndex,
    text: &str,
    brand: Option<BrandId>,
) -> Result<GroupCounts, ReconcileError> {
    // A listing has a group exactly when it is unmatched and not DELISTED
    // (`GroupKey::of_listing`), and the count skips those without one: that is the filter, so the
    // text's postings are walked alone rather than each seeked beside the unmatched listings'.
    let filters = ListingFilters {
        brand_id: brand.map(|b| b.0),
        ..ListingFilters::default()
    };
    Ok(listings.unmatched_group_counts(&filters, Some(&super::typed_text(text)))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        #[test]
        fn a_page_of_found_groups_is_that_slice_of_them_all_in_order(
            counts in proptest::collection::vec(0u64..5, 0..200),
            skip in 0usize..220,
            limit in 1usize..60,
        ) {
            // Few distinct counts, so most of the order is decided by the ids.
            let found: Vec<(GroupKey, u64)> = counts
                .iter()
                .enumerate()
                .map(|(i, &count)| (GroupKey((i as u64 * 7919) % 1009), count))
                .collect::<HashMap<_, _>>()
                .into_iter()
                .collect();
            let mut all = found.clone();
            all.sort_by(most_found_first);
            let expected: Vec<GroupKey> =
                all.into_iter().skip(skip).take(limit).map(|(key, _)| key).collect();
            prop_assert_eq!(most_found_page(found, skip, limit), expected);
        }
    }
}
