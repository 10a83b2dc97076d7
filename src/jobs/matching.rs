//! Matching a listing to a catalogue model: the seller's brand resolves through brand names,
//! slugs and aliases (compared like references: letters and digits, case-folded); the seller's
//! reference must hit exactly one model of that brand, by primary or alternate reference. With
//! no reference given, a run of title words that is a reference of the brand is used instead.

use super::listing_writes::{ListingWrites, WrittenListings};
use crate::domain::{
    normalize_reference, BrandId, Listing, ListingDetails, Match, MatchOutcome, ModelId, Timestamp,
};
use crate::store::{Store, StoreResult};
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Longest run of title words tried as a brand or a reference ("Jaeger Le Coultre", "126610 LN").
const MAX_RUN: usize = 3;

/// The brand and model a listing is of, if its text says so unambiguously, and how it ended.
pub fn match_listing(store: &Store, details: &ListingDetails) -> StoreResult<Match> {
    let Some(brand) = resolve_brand(store, details)? else {
        return Ok(Match {
            brand_id: None,
            model_id: None,
            outcome: MatchOutcome::UnknownBrand,
        });
    };
    let given = details
        .scraped_reference
        .as_deref()
        .map(normalize_reference)
        .filter(|r| !r.is_empty());
    let (candidates, from_title) = match given {
        Some(reference) => (
            store
                .model_ids_by_reference(brand, &reference)?
                .into_iter()
                .collect(),
            false,
        ),
        None => (
            title_references(store, brand, details.title.as_deref().unwrap_or(""))?,
            true,
        ),
    };
    let (model_id, outcome) = match candidates.len() {
        0 => (None, MatchOutcome::UnknownReference),
        1 => (
            candidates.into_iter().next(),
            MatchOutcome::Matched { from_title },
        ),
        _ => (None, MatchOutcome::Ambiguous),
    };
    Ok(Match {
        brand_id: Some(brand),
        model_id,
        outcome,
    })
}

/// The brand the seller named, or else the one brand the title names.
fn resolve_brand(store: &Store, details: &ListingDetails) -> StoreResult<Option<BrandId>> {
    if let Some(named) = details
        .scraped_brand
        .as_deref()
        .map(normalize_reference)
        .filter(|b| !b.is_empty())
    {
        let brands = store.brand_by_alias(&named)?;
        return Ok(if brands.len() == 1 {
            brands.first().copied()
        } else {
            None
        });
    }
    let mut found = BTreeSet::new();
    for run in word_runs(details.title.as_deref().unwrap_or("")) {
        found.extend(store.brand_by_alias(&run)?);
    }
    Ok(if found.len() == 1 {
        found.into_iter().next()
    } else {
        None
    })
}

/// Models of `brand` whose reference is a run of title words.
fn title_references(store: &Store, brand: BrandId, title: &str) -> StoreResult<BTreeSet<ModelId>> {
    let mut found = BTreeSet::new();
    for run in word_runs(title) {
        found.extend(store.model_ids_by_reference(brand, &run)?);
    }
    Ok(found)
}

/// Every run of 1 to `MAX_RUN` consecutive words, normalised and joined.
pub fn word_runs(title: &str) -> Vec<String> {
    let words: Vec<&str> = title.split_whitespace().collect();
    let mut runs = Vec::new();
    for start in 0..words.len() {
        for end in start + 1..=(start + MAX_RUN).min(words.len()) {
            let run = normalize_reference(&words[start..end].concat());
            if !run.is_empty() && !runs.contains(&run) {
                runs.push(run);
            }
        }
    }
    runs
}

/// What a re-match did.
pub struct RematchReport {
    /// Unmatched listings tried.
    pub tried: usize,
    /// Of those, now matched.
    pub matched: usize,
    /// The listings whose match changed, as written.
    pub written: WrittenListings,
}

/// `watch-catalogue match`: tries every unmatched listing again (after an import added models),
/// on all cores, writing those whose match changed with the listing counts they change. Only
/// the changed listings are held in memory.
pub fn rematch_unmatched(store: &Store) -> StoreResult<RematchReport> {
    let tried = AtomicUsize::new(0);
    let changed: Vec<(Listing, Match)> = store
        .all_listings_parallel()
        .filter_map(|listing| {
            let old = match listing {
                Ok(old) if old.model_id.is_some() => return None,
                Ok(old) => old,
                Err(e) => return Some(Err(e)),
            };
            tried.fetch_add(1, Ordering::Relaxed);
            match match_listing(store, &old.details) {
                Ok(found) if found == old.current_match() => None,
                Ok(found) => Some(Ok((old, found))),
                Err(e) => Some(Err(e)),
            }
        })
        .collect::<StoreResult<_>>()?;
    let mut writes = ListingWrites::new(store)?;
    let now = Timestamp::now();
    let mut matched = 0;
    for (old, found) in changed {
        let mut new = old.clone();
        new.apply_match(found);
        new.updated_at = now;
        matched += usize::from(found.model_id.is_some());
        writes.put(Some(&old), new);
        writes.commit_if_full()?;
    }
    Ok(RematchReport {
        tried: tried.into_inner(),
        matched,
        written: writes.commit()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_runs_cover_split_references_and_brand_names() {
        let runs = word_runs("Jaeger Le Coultre 126610 LN");
        for expected in ["jaeger", "jaegerlecoultre", "126610ln", "126610"] {
            assert!(
                runs.contains(&expected.to_owned()),
                "{expected} in {runs:?}"
            );
        }
        assert!(
            !runs.contains(&"jaegerlecoultre126610".to_owned()),
            "runs stop at three words"
        );
    }
}
