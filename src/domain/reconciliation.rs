//! The identity an unmatched listing's seller claims: the brand matching resolved (or the
//! seller's brand text when it resolved none) and the reference the seller gave, normalised.
//! The back office groups unmatched listings by it, under a stable id computed from it, and
//! keeps each group's [`GroupTally`] as the listings come and go.

use super::rates::ConversionTable;
use super::{
    normalize_reference, BrandId, Fnv1a, Listing, ListingStatus, MatchOutcome, ProviderId,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::hash::Hasher;

/// The brand part of a claimed identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ClaimedBrand {
    /// A brand of the catalogue.
    Known(BrandId),
    /// The seller's brand text, normalised like a reference; empty when the seller named none
    /// (or named two brands).
    Text(String),
}

/// What the seller of an unmatched listing claims it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ClaimedIdentity {
    pub brand: ClaimedBrand,
    /// The seller's reference field, normalised; `None` when it holds no letter or digit.
    pub reference: Option<String>,
}

impl ClaimedIdentity {
    /// The identity `listing`'s seller claims.
    pub fn of(listing: &Listing) -> ClaimedIdentity {
        let details = &listing.details;
        let brand = match listing.brand_id {
            Some(brand) => ClaimedBrand::Known(brand),
            None => ClaimedBrand::Text(
                details
                    .scraped_brand
                    .as_deref()
                    .map(normalize_reference)
                    .unwrap_or_default(),
            ),
        };
        let reference = details
            .scraped_reference
            .as_deref()
            .map(normalize_reference)
            .filter(|r| !r.is_empty());
        ClaimedIdentity { brand, reference }
    }

    /// The identity `listing`'s seller claims when it is in a group (unmatched, not DELISTED).
    pub fn of_grouped(listing: &Listing) -> Option<ClaimedIdentity> {
        in_a_group(listing).then(|| ClaimedIdentity::of(listing))
    }

    /// The seller's brand text, when the brand is not the catalogue's.
    pub fn brand_text(self) -> Option<String> {
        match self.brand {
            ClaimedBrand::Text(text) => Some(text),
            ClaimedBrand::Known(_) => None,
        }
    }

    /// A stable id: [`GroupKey::of`] the identity, in 16 hex digits.
    pub fn id(&self) -> String {
        GroupKey::of(self).to_string()
    }
}

/// A group's id as a number: FNV-1a over its identity, the same in every process and release,
/// so a page read now names the group a write sends later. The store keeps groups by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupKey(pub u64);

impl GroupKey {
    pub fn of(identity: &ClaimedIdentity) -> GroupKey {
        let mut hasher = Fnv1a::default();
        match &identity.brand {
            ClaimedBrand::Known(id) => hasher.write(format!("brand:{id}").as_bytes()),
            ClaimedBrand::Text(text) => hasher.write(format!("text:{text}").as_bytes()),
        }
        hasher.write(&[0]);
        if let Some(reference) = &identity.reference {
            hasher.write(format!("reference:{reference}").as_bytes());
        }
        GroupKey(hasher.finish())
    }

    /// The group `listing` is in; `None` for a listing in no group (matched, or DELISTED).
    pub fn of_listing(listing: &Listing) -> Option<GroupKey> {
        ClaimedIdentity::of_grouped(listing).map(|identity| GroupKey::of(&identity))
    }

    /// The key a group id names: exactly 16 lowercase hex digits, as [`GroupKey`] shows it.
    pub fn parse(id: &str) -> Option<GroupKey> {
        let canonical =
            id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        canonical
            .then(|| u64::from_str_radix(id, 16).ok())
            .flatten()
            .map(GroupKey)
    }
}

impl fmt::Display for GroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// True for a listing that is in a reconciliation group: unmatched and not DELISTED.
fn in_a_group(listing: &Listing) -> bool {
    listing.model_id.is_none() && listing.status != ListingStatus::Delisted
}

/// What a group of unmatched listings is made of, counted: kept by the store with every write
/// of its listings, so a page of groups reads one record per group, never its listings. Each
/// count is exact: a listing adds its share when it joins the group and takes the same share
/// away when it leaves (matched, linked, delisted, or its seller's text changed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupTally {
    pub identity: ClaimedIdentity,
    pub listings: i64,
    pub providers: BTreeMap<ProviderId, i64>,
    /// By [`MatchOutcome::reason_code`].
    pub reasons: BTreeMap<u64, i64>,
    /// The seller's reference as written (trimmed), when it holds a letter or digit.
    pub spellings: BTreeMap<String, i64>,
    /// The seller's brand as written (trimmed), when given.
    pub brand_texts: BTreeMap<String, i64>,
    /// Prices with their currency, so the range is converted with the rates of the day.
    pub prices: BTreeMap<(String, u64), i64>,
}

impl GroupTally {
    /// The group `listing` belongs to and its share of it; `None` for a listing in no group
    /// (matched, or DELISTED).
    pub fn of(listing: &Listing) -> Option<(GroupKey, GroupTally)> {
        if !in_a_group(listing) {
            return None;
        }
        let identity = ClaimedIdentity::of(listing);
        let details = &listing.details;
        let one = |key: Option<String>| key.into_iter().map(|k| (k, 1)).collect();
        let tally = GroupTally {
            listings: 1,
            providers: BTreeMap::from([(listing.provider_id, 1)]),
            reasons: listing
                .matching
                .reason_code()
                .into_iter()
                .map(|code| (code, 1))
                .collect(),
            spellings: one(details
                .scraped_reference
                .as_deref()
                .map(str::trim)
                .filter(|r| !normalize_reference(r).is_empty())
                .map(str::to_owned)),
            brand_texts: one(details
                .scraped_brand
                .as_deref()
                .map(str::trim)
                .filter(|b| !b.is_empty())
                .map(str::to_owned)),
            prices: match (details.price, details.currency.as_deref()) {
                (Some(price), Some(currency)) => {
                    BTreeMap::from([((currency.to_owned(), price), 1)])
                }
                _ => BTreeMap::new(),
            },
            identity,
        };
        Some((GroupKey::of(&tally.identity), tally))
    }

    /// A tally of nothing, of `identity`.
    pub fn empty(identity: ClaimedIdentity) -> GroupTally {
        GroupTally {
            identity,
            listings: 0,
            providers: BTreeMap::new(),
            reasons: BTreeMap::new(),
            spellings: BTreeMap::new(),
            brand_texts: BTreeMap::new(),
            prices: BTreeMap::new(),
        }
    }

    /// Adds `other`'s counts (`sign` 1), or takes them away (`sign` -1); a count that reaches
    /// zero is dropped, so equal groups have equal tallies whatever their history.
    pub fn add(&mut self, other: &GroupTally, sign: i64) {
        fn merge<K: Ord + Clone>(into: &mut BTreeMap<K, i64>, from: &BTreeMap<K, i64>, sign: i64) {
            for (key, count) in from {
                let entry = into.entry(key.clone()).or_default();
                *entry += sign * count;
                if *entry == 0 {
                    into.remove(key);
                }
            }
        }
        self.listings += sign * other.listings;
        merge(&mut self.providers, &other.providers, sign);
        merge(&mut self.reasons, &other.reasons, sign);
        merge(&mut self.spellings, &other.spellings, sign);
        merge(&mut self.brand_texts, &other.brand_texts, sign);
        merge(&mut self.prices, &other.prices, sign);
    }

    /// True when no listing is in the group.
    pub fn is_empty(&self) -> bool {
        self.listings <= 0
    }

    /// The brand matching resolved for the group's listings, if it resolved one.
    pub fn brand(&self) -> Option<BrandId> {
        match self.identity.brand {
            ClaimedBrand::Known(brand) => Some(brand),
            ClaimedBrand::Text(_) => None,
        }
    }

    /// The reason most of the group's listings are unmatched (ties go to the order of
    /// [`MatchOutcome::REASONS`]).
    pub fn reason(&self) -> MatchOutcome {
        let count = |reason: MatchOutcome| {
            reason
                .reason_code()
                .and_then(|code| self.reasons.get(&code).copied())
                .unwrap_or(0)
        };
        MatchOutcome::REASONS
            .iter()
            .copied()
            .rev()
            .max_by_key(|&reason| count(reason))
            .unwrap_or(MatchOutcome::UnknownReference)
    }

    /// The sellers' spellings of the reference, most used first (then in text order).
    pub fn spellings(&self) -> Vec<String> {
        most_used_first(&self.spellings)
    }

    /// The brand text sellers used most (then the first in text order).
    pub fn brand_text(&self) -> Option<String> {
        most_used_first(&self.brand_texts).into_iter().next()
    }

    /// The lowest and highest price in US dollars, at `table`'s rates.
    pub fn price_range_usd(&self, table: Option<&ConversionTable>) -> (Option<u64>, Option<u64>) {
        let Some(table) = table else {
            return (None, None);
        };
        let prices = self
            .prices
            .keys()
            .filter_map(|(currency, price)| table.usd_price(Some(*price), Some(currency)));
        prices.fold((None, None), |(low, high), usd| {
            (
                Some(low.map_or(usd, |low: u64| low.min(usd))),
                Some(high.map_or(usd, |high: u64| high.max(usd))),
            )
        })
    }
}

fn most_used_first(counts: &BTreeMap<String, i64>) -> Vec<String> {
    let mut texts: Vec<(&String, i64)> = counts.iter().map(|(text, n)| (text, *n)).collect();
    texts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    texts.into_iter().map(|(text, _)| text.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(brand: ClaimedBrand, reference: Option<&str>) -> ClaimedIdentity {
        ClaimedIdentity {
            brand,
            reference: reference.map(str::to_owned),
        }
    }

    #[test]
    fn ids_are_stable_and_tell_identities_apart() {
        let rolex = identity(ClaimedBrand::Known(BrandId(1)), Some("16610"));
        assert_eq!(rolex.id(), rolex.clone().id());
        assert_eq!(rolex.id().len(), 16);
        // Pinned: a release that changed the id would orphan every id a client holds.
        assert_eq!(rolex.id(), "8bcf32a792c9e612");
        let others = [
            identity(ClaimedBrand::Known(BrandId(1)), None),
            identity(ClaimedBrand::Known(BrandId(2)), Some("16610")),
            identity(ClaimedBrand::Text("1".into()), Some("16610")),
            identity(ClaimedBrand::Text(String::new()), Some("16610")),
            identity(ClaimedBrand::Text(String::new()), None),
        ];
        let mut ids: Vec<String> = others.iter().map(ClaimedIdentity::id).collect();
        ids.push(rolex.id());
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), others.len() + 1);
    }

    #[test]
    fn group_keys_read_back_only_from_their_canonical_id() {
        let key = GroupKey::of(&identity(ClaimedBrand::Known(BrandId(1)), Some("16610")));
        assert_eq!(GroupKey::parse(&key.to_string()), Some(key));
        for bad in [
            "8BCF32A792C9E612",
            "8bcf32a792c9e61",
            "+bcf32a792c9e612",
            "",
            "zz",
        ] {
            assert_eq!(GroupKey::parse(bad), None, "{bad}");
        }
    }
}
