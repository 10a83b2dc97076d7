//! The pages of `GET /reconciliation`: kept groups of unmatched listings (`store::unmatched`),
//! largest first, filtered by brand, provider, reason and text. A page reads its own groups;
//! a filter reads the groups of one order, and text the groups its words or prefix find.

use super::reconciliation::{kept_group, Group, ReconcileError};
use crate::domain::{normalize_reference, BrandId, GroupKey, ListingId, MatchOutcome, ProviderId};
use crate::domain::{ClaimedIdentity, ListingStatus};
use crate::store::{GroupOrder, GroupText, Store, StoreResult};
use catalogue_index::{ListingFilters, ListingIndex, ListingQuery, ListingSort};
use std::collections::{BTreeSet, HashMap};

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

/// Unmatched listings a text search takes at most, for the groups they are in: a text every
/// listing has would otherwise read them all.
pub const TEXT_LISTINGS_READ: usize = 10_000;

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

    fn keeps(&self, group: &Group) -> bool {
        let tally = &group.tally;
        self.brand.is_none_or(|b| tally.brand() == Some(b))
            && self
                .provider
                .is_none_or(|p| tally.providers.contains_key(&p))
            && self.reason.is_none_or(|r| tally.reason() == r)
    }
}

/// The `limit` groups after the first `skip` that `filter` keeps, largest first (then by id),
/// and how many it keeps in all.
pub fn group_page(
    store: &Store,
    listings: &ListingIndex,
    filter: &GroupFilter,
    skip: usize,
    limit: usize,
) -> Result<(Vec<Group>, usize), ReconcileError> {
    if let Some(text) = filter.text.as_deref() {
        let found = groups_with_text(store, listings, text)?;
        return page_of_found(store, filter, found, skip, limit);
    }
    let order = filter.order();
    let unmatched = store.unmatched();
    if filter.order_is_exact() {
        // One order holds exactly the groups kept: its count is the total, its keys the page.
        let total = unmatched.count(order)? as usize;
        let mut page = Vec::with_capacity(limit);
        for key in unmatched.in_order(order).skip(skip).take(limit) {
            page.extend(kept_group(store, key?)?);
        }
        return Ok((page, total));
    }
    // A brand and more: the brand's groups, each read and checked.
    checked_page(store, filter, unmatched.in_order(order), skip, limit)
}

/// The groups of `keys` that `filter` keeps, each read and checked: the page after `skip`,
/// and how many it keeps in all.
fn checked_page(
    store: &Store,
    filter: &GroupFilter,
    keys: impl Iterator<Item = StoreResult<GroupKey>>,
    skip: usize,
    limit: usize,
) -> Result<(Vec<Group>, usize), ReconcileError> {
    let mut total = 0;
    let mut page = Vec::with_capacity(limit);
    for key in keys {
        let Some(group) = kept_group(store, key?)? else {
            continue;
        };
        if filter.keeps(&group) {
            if total >= skip && page.len() < limit {
                page.push(group);
            }
            total += 1;
        }
    }
    Ok((page, total))
}

/// The groups `found` (with their sizes) that `filter` keeps, as a page.
fn page_of_found(
    store: &Store,
    filter: &GroupFilter,
    found: HashMap<GroupKey, u64>,
    skip: usize,
    limit: usize,
) -> Result<(Vec<Group>, usize), ReconcileError> {
    let mut found: Vec<(GroupKey, u64)> = found.into_iter().collect();
    found.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if filter.is_open() {
        let mut page = Vec::with_capacity(limit);
        for (key, _) in found.iter().skip(skip).take(limit) {
            page.extend(kept_group(store, *key)?);
        }
        return Ok((page, found.len()));
    }
    let keys = found.into_iter().map(|(key, _)| Ok(key));
    checked_page(store, filter, keys, skip, limit)
}

/// The groups `text` finds, with their sizes: those whose reference or brand text starts with
/// it (letters and digits only, any case), and those of the unmatched listings whose title,
/// brand or reference holds its words, as the listings index finds them.
fn groups_with_text(
    store: &Store,
    listings: &ListingIndex,
    text: &str,
) -> Result<HashMap<GroupKey, u64>, ReconcileError> {
    let mut found: HashMap<GroupKey, u64> = HashMap::new();
    let prefix = normalize_reference(text);
    if !prefix.is_empty() {
        for kind in [GroupText::Reference, GroupText::BrandText] {
            found.extend(store.unmatched().with_text_prefix(kind, &prefix)?);
        }
    }
    let query = ListingQuery {
        text: Some(super::typed_text(text)),
        filters: ListingFilters {
            unmatched: true,
            hidden_statuses: vec![ListingStatus::Delisted as u64],
            ..ListingFilters::default()
        },
        sort: ListingSort::Newest,
        offset: 0,
        limit: TEXT_LISTINGS_READ,
    };
    let mut seen: BTreeSet<GroupKey> = found.keys().copied().collect();
    for id in listings.search(&query)?.ids {
        // The index may lag a write being indexed: the store has the last word.
        let Some(listing) = store.listings().listing(ListingId(id))? else {
            continue;
        };
        let key = GroupKey::of(&ClaimedIdentity::of(&listing));
        if seen.insert(key) {
            if let Some(kept) = store.unmatched().group(key)? {
                found.insert(key, kept.tally.listings.max(0) as u64);
            }
        }
    }
    Ok(found)
}
