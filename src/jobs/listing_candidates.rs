//! Listing candidates: the pictures of a model's matched listings, grouped by look (copies of
//! one photograph), ranked by how many listings and then providers show each, then newest, and
//! kept as the model's picture-review candidates after the dataset's. The image worker ranks
//! the models whose listings changed once their pictures are fetched.

use super::context::JobContext;
use crate::domain::{
    CandidateId, CandidateOrigin, Listing, ListingId, Look, ModelId, PictureCandidate, PictureId,
    ProviderId, Timestamp,
};
use crate::store::{RecordKind, Store, StoreError, WriteBatch, WriteTurn};
use catalogue_index::{ListingFilters, ListingIndex, ListingQuery, ListingSort};
use std::collections::BTreeSet;

/// Newest listings of a model whose pictures are considered: enough to see which photographs
/// recur, bounded for a model with a hundred thousand listings.
pub const LISTINGS_CONSIDERED: usize = 500;
/// Listing candidates kept per model.
pub const LISTING_CANDIDATES: usize = 5;
/// Stale models ranked per write turn: small turns, so a running ingest waits little.
const MODELS_PER_TURN: usize = 32;
/// Stale models one worker pass ranks at most.
const MODELS_PER_PASS: usize = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum CandidateError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] catalogue_index::IndexError),
    #[error(transparent)]
    Reindex(#[from] crate::jobs::reindex::ReindexError),
}

/// One listing picture the worker has fetched.
#[derive(Debug, Clone)]
struct Shown {
    picture: PictureId,
    listing: ListingId,
    provider: ProviderId,
    look: Look,
    image_url: String,
    page_url: String,
}

/// Copies of one photograph across listings, newest picture first.
#[derive(Debug)]
struct Photograph {
    copies: Vec<Shown>,
}

impl Photograph {
    fn newest(&self) -> &Shown {
        &self.copies[0]
    }

    fn listings(&self) -> usize {
        self.copies
            .iter()
            .map(|c| c.listing)
            .collect::<BTreeSet<_>>()
            .len()
    }

    fn providers(&self) -> usize {
        self.copies
            .iter()
            .map(|c| c.provider)
            .collect::<BTreeSet<_>>()
            .len()
    }

    fn contains(&self, picture: PictureId) -> bool {
        self.copies.iter().any(|c| c.picture == picture)
    }
}

/// Ranks every stale model once (at most [`MODELS_PER_PASS`]), a few per write turn; returns
/// how many were ranked. A model some of whose listing pictures are still to be fetched stays
/// stale, and is ranked again by a later pass.
pub fn rank_stale(context: &JobContext) -> Result<usize, CandidateError> {
    let stale = context
        .store()
        .pictures()
        .candidates_stale(MODELS_PER_PASS)?;
    for models in stale.chunks(MODELS_PER_TURN) {
        context
            .writer()
            .run_in_background(|turn| rank_models(turn, context.listings(), models))
            .map_err(|error| match error {
                crate::jobs::writer::WriteError::Job(error) => error,
                crate::jobs::writer::WriteError::Index(error) => CandidateError::Reindex(error),
            })?;
    }
    Ok(stale.len())
}

/// Ranks the listing candidates of `models` in one commit.
pub fn rank_models(
    turn: &WriteTurn<'_>,
    index: &ListingIndex,
    models: &[ModelId],
) -> Result<(), CandidateError> {
    let mut batch = turn.batch()?;
    for &model in models {
        let settled = rank_model(turn.store(), index, &mut batch, model)?;
        if settled {
            batch.clear_candidates_stale(model);
        }
    }
    turn.commit(batch)?;
    Ok(())
}

/// Replaces `model`'s listing candidates with the photographs its listings show now, keeping
/// the id of a candidate whose photograph is still shown and every selected one. True when
/// every picture considered was fetched (or given up on).
fn rank_model(
    store: &Store,
    index: &ListingIndex,
    batch: &mut WriteBatch<'_>,
    model: ModelId,
) -> Result<bool, CandidateError> {
    if store.catalogue().model(model)?.is_none() {
        return Ok(true);
    }
    let listings = newest_listings(store, index, model)?;
    let (shown, settled) = fetched_pictures(store, &listings)?;
    let mut photographs = group_by_look(shown);
    photographs.sort_by(|a, b| {
        (b.listings(), b.providers(), b.newest().picture).cmp(&(
            a.listings(),
            a.providers(),
            a.newest().picture,
        ))
    });
    photographs.truncate(LISTING_CANDIDATES);

    let existing = store.pictures().candidates_of(model)?;
    let after_rank = existing
        .iter()
        .filter(|c| c.origin == CandidateOrigin::Dataset)
        .map(|c| c.rank)
        .max()
        .unwrap_or(0);
    let mut kept: Vec<CandidateId> = Vec::new();
    for (position, photograph) in photographs.iter().enumerate() {
        let found = existing.iter().find(|c| {
            matches!(c.origin, CandidateOrigin::Listings { .. }) && photograph.contains(c.picture)
        });
        let candidate = listing_candidate(
            store,
            batch,
            model,
            photograph,
            after_rank + 1 + position as u32,
            found,
        )?;
        kept.push(candidate.id);
        if found != Some(&candidate) {
            batch.put_candidate(&candidate);
        }
    }
    let mut remaining = 0;
    for candidate in &existing {
        let dropped = matches!(candidate.origin, CandidateOrigin::Listings { .. })
            && candidate.selected_at.is_none()
            && !kept.contains(&candidate.id);
        if dropped {
            batch.remove_candidate(candidate);
        } else if !kept.contains(&candidate.id) {
            remaining += 1;
        }
    }
    let review = store.pictures().picture_review(model)?;
    batch.put_picture_review(model, &review, remaining + kept.len() > 0);
    Ok(settled)
}

/// The candidate a photograph makes: the existing one updated, or a new one of its newest copy.
fn listing_candidate(
    store: &Store,
    batch: &mut WriteBatch<'_>,
    model: ModelId,
    photograph: &Photograph,
    rank: u32,
    existing: Option<&PictureCandidate>,
) -> Result<PictureCandidate, CandidateError> {
    let origin = CandidateOrigin::Listings {
        listings: photograph.listings() as u32,
        providers: photograph.providers() as u32,
    };
    if let Some(existing) = existing {
        return Ok(PictureCandidate {
            rank,
            origin,
            ..existing.clone()
        });
    }
    let newest = photograph.newest();
    let size = store
        .pictures()
        .picture(newest.picture)?
        .and_then(|p| p.fetched().map(|f| (f.width, f.height)));
    Ok(PictureCandidate {
        id: CandidateId(batch.allocate_id(RecordKind::Candidate)?),
        model_id: model,
        picture: newest.picture,
        image_url: newest.image_url.clone(),
        page_url: Some(newest.page_url.clone()),
        query: None,
        width: size.map(|s| s.0),
        height: size.map(|s| s.1),
        rank,
        origin,
        selected_at: None,
        created_at: Timestamp::now(),
    })
}

fn newest_listings(
    store: &Store,
    index: &ListingIndex,
    model: ModelId,
) -> Result<Vec<Listing>, CandidateError> {
    let hits = index.search(&ListingQuery {
        text: None,
        filters: ListingFilters {
            model_id: Some(model.0),
            ..ListingFilters::default()
        },
        sort: ListingSort::Newest,
        offset: 0,
        limit: LISTINGS_CONSIDERED,
    })?;
    let mut listings = Vec::with_capacity(hits.ids.len());
    for id in hits.ids {
        // The index may lag a write by a moment: the store says which model it is of now.
        if let Some(listing) = store.listings().listing(ListingId(id))? {
            if listing.model_id == Some(model) {
                listings.push(listing);
            }
        }
    }
    Ok(listings)
}

/// The fetched pictures of `listings`, newest first, and whether none is still to be fetched.
fn fetched_pictures(
    store: &Store,
    listings: &[Listing],
) -> Result<(Vec<Shown>, bool), CandidateError> {
    let mut shown = Vec::new();
    let mut settled = true;
    for listing in listings {
        for picture in &listing.pictures {
            match store.pictures().picture_look(picture.id)? {
                Some(look) => shown.push(Shown {
                    picture: picture.id,
                    listing: listing.id,
                    provider: listing.provider_id,
                    look,
                    image_url: picture.source_url.clone(),
                    page_url: listing.details.url.clone(),
                }),
                None => {
                    let record = store.pictures().picture(picture.id)?;
                    settled &= !record.is_some_and(|r| r.may_be_due());
                }
            }
        }
    }
    shown.sort_by_key(|s| std::cmp::Reverse(s.picture));
    Ok((shown, settled))
}

/// Groups pictures (newest first) into photographs: each joins the first group whose newest
/// copy it looks like.
fn group_by_look(shown: Vec<Shown>) -> Vec<Photograph> {
    let mut photographs: Vec<Photograph> = Vec::new();
    for picture in shown {
        match photographs
            .iter_mut()
            .find(|p| p.newest().look.is_alike(picture.look))
        {
            Some(photograph) => photograph.copies.push(picture),
            None => photographs.push(Photograph {
                copies: vec![picture],
            }),
        }
    }
    photographs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(picture: u64, listing: u64, provider: u64, look: u64) -> Shown {
        Shown {
            picture: PictureId(picture),
            listing: ListingId(listing),
            provider: ProviderId(provider),
            look: Look(look),
            image_url: format!("http://img/{picture}.jpg"),
            page_url: format!("http://shop/{listing}"),
        }
    }

    #[test]
    fn alike_pictures_group_with_the_newest_copy_first() {
        let photographs = group_by_look(vec![
            shown(9, 3, 1, 0b1111),
            shown(7, 2, 2, 0),
            shown(5, 1, 1, u64::MAX),
            shown(4, 1, 1, 0b1),
        ]);
        assert_eq!(photographs.len(), 2);
        assert_eq!(photographs[0].newest().picture, PictureId(9));
        assert_eq!(photographs[0].listings(), 3);
        assert_eq!(photographs[0].providers(), 2);
        assert_eq!(photographs[1].copies.len(), 1);
    }
}
