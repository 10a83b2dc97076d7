//! The pages of `GET /reconciliation`: kept groups of unmatched listings (`store::unmatched`),
//! largest first, filtered by brand, provider, reason and text. A page reads its own groups;
//! a filter reads the groups of one order (records only, where it checks them), and text the
//! groups its words or prefix find. A shown group is its record, newest members and price
//! bounds (D-177), never every key it has.

use super::reconciliation::ReconcileError;
use crate::domain::{normalize_reference, BrandId, ClaimedIdentity, GroupKey, GroupTally};
use crate::domain::{ListingId, ListingStatus, MatchOutcome, ProviderId};
use crate::store::{GroupOrder, GroupText, Store, StoreResult};
use catalogue_index::{ListingFilters, ListingIndex};
use std::collections::HashMap;

/// A group as a page shows it: its summary's tally and newest listings.
#[derive(Debug, Clone)]
pub struct ShownGroup {
    /// [`GroupKey`]'s text, what the API shows and the writes take.
    pub id: String,
    /// Its tally, with each currency's lowest and highest price only.
    pub tally: GroupTally,
    /// Its newest listings' ids, newest first, at most [`NEWEST_SHOWN`].
    pub newest: Vec<ListingId>,
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
    /// with one title is not read whole for a few examples: D-169).
    pub fn example_titles(&self, store: &Store, most: usize) -> StoreResult<Vec<String>> {
        let mut titles: Vec<String> = Vec::new();
        for &id in &self.newest {
            if titles.len() >= most {
                break;
            }
            let title = store.listings().listing(id)?.and_then(|l| l.details.title);
            if let Some(title) = title.filter(|t| !titles.contains(t)) {
                titles.push(title);
            }
        }
        Ok(titles)
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
        let found = groups_with_text(store, listings, text, filter.brand)?;
        return page_of_found(store, filter, found, skip, limit);
    }
    let order = filter.order();
    let unmatched = store.unmatched();
    if filter.order_is_exact() {
        // One order holds exactly the groups kept: its count is the total, its keys the page.
        let total = unmatched.count(order)? as usize;
        let mut page = Vec::with_capacity(limit);
        for key in unmatched.in_order(order).skip(skip).take(limit) {
            page.extend(shown_group(store, key?)?);
        }
        return Ok((page, total));
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
    found: HashMap<GroupKey, u64>,
    skip: usize,
    limit: usize,
) -> Result<(Vec<ShownGroup>, usize), ReconcileError> {
    let mut found: Vec<(GroupKey, u64)> = found.into_iter().collect();
    found.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if filter.is_open() {
        let mut page = Vec::with_capacity(limit);
        for (key, _) in found.iter().skip(skip).take(limit) {
            page.extend(shown_group(store, *key)?);
        }
        return Ok((page, found.len()));
    }
    let keys = found.into_iter().map(|(key, _)| Ok(key));
    checked_page(store, filter, keys, skip, limit)
}

/// The groups `text` finds, each with how many of its listings the text finds: a group whose
/// reference or brand text starts with it (letters and digits only, any case) with all of them,
/// and the groups of the unmatched listings whose title, brand or reference holds its words,
/// counted by the listings index from its group column (D-167). A `brand` is a filter of the
/// listings searched: a group's listings all have its brand.
fn groups_with_text(
    store: &Store,
    listings: &ListingIndex,
    text: &str,
    brand: Option<BrandId>,
) -> Result<HashMap<GroupKey, u64>, ReconcileError> {
    let mut found: HashMap<GroupKey, u64> = HashMap::new();
    let prefix = normalize_reference(text);
    if !prefix.is_empty() {
        for kind in [GroupText::Reference, GroupText::BrandText] {
            found.extend(store.unmatched().with_text_prefix(kind, &prefix)?);
        }
    }
    let filters = ListingFilters {
        unmatched: true,
        hidden_statuses: vec![ListingStatus::Delisted as u64],
        brand_id: brand.map(|b| b.0),
        ..ListingFilters::default()
    };
    let counted = listings.unmatched_group_counts(&filters, Some(&super::typed_text(text)))?;
    for (key, count) in counted {
        let most = found.entry(GroupKey(key)).or_default();
        *most = (*most).max(count);
    }
    Ok(found)
}
