//! The pictures area: where the image pipeline is with each picture, what a fetched picture
//! looks like, the model that shows it, and picture review (candidates, each model's review
//! record, the review queue, the models whose listing candidates are to be ranked again).
//! Keyspaces: `Picture` (its id counter only), `PictureState`, `PictureDue`, `PictureLook`,
//! `PendingPictures` (`super::pending`), `ModelPicture`, `Candidate`, `CandidateOfModel`,
//! `PictureReview`, `ReviewQueue`, `CandidatesStale`.

use super::keys::{self, Keyspace};
use super::{pending, Store, StoreError, StoreResult};
use crate::domain::{
    CandidateId, Look, ModelId, PictureCandidate, PictureId, PictureRecord, PictureReview,
    ReviewStatus,
};

/// One page of the pictures the worker may have work for: see
/// [`Pictures::pictures_maybe_due_page`].
#[derive(Debug)]
pub struct DuePage {
    /// By id.
    pub records: Vec<PictureRecord>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<PictureId>,
}

/// The store's pictures and picture review: see [`Store::pictures`].
#[derive(Clone, Copy)]
pub struct Pictures<'s>(pub(super) &'s Store);

impl<'s> Pictures<'s> {
    /// Where the image pipeline is with picture `id`, if it knows the picture: its state
    /// record, or else the pending record its group holds (`pending`).
    pub fn picture(self, id: PictureId) -> StoreResult<Option<PictureRecord>> {
        if let Some(record) = self.0.get(Keyspace::PictureState.id_key(id.0))? {
            return Ok(Some(record));
        }
        Ok(pending::group_at(self.0, id)?.and_then(|(_, group)| group.find(id)))
    }

    /// The records of the pictures the worker may have work for, by id: those with a state
    /// record and a `PictureDue` key, and the pending ones held in groups.
    pub fn pictures_maybe_due(self) -> StoreResult<Vec<PictureRecord>> {
        let mut all = Vec::new();
        let mut from = Some(PictureId(0));
        while let Some(start) = from {
            let page = self.pictures_maybe_due_page(start, 4_096)?;
            all.extend(page.records);
            from = page.next;
        }
        Ok(all)
    }

    /// [`Pictures::pictures_maybe_due`] a page at a time: those from picture `from` on, at most
    /// `limit` of each kind (state records, pending ones), and where the next page starts.
    /// What a worker holds at once stays bounded however many pictures are queued (20M after
    /// an ingest of 10M listings).
    pub fn pictures_maybe_due_page(self, from: PictureId, limit: usize) -> StoreResult<DuePage> {
        // At least one of each kind, so that every page moves past `from`.
        let limit = limit.max(1);
        let (ids, stated_rest) = self.0.ids_from(Keyspace::PictureDue, from.0, limit)?;
        let mut due = self.0.many(Keyspace::PictureState, ids)?;
        let (pending, pending_rest) = pending::records_from(self.0, from, limit)?;
        due.extend(pending);
        // Stable: were a picture in both, its state record (first) would win.
        due.sort_by_key(|picture| picture.id);
        due.dedup_by_key(|picture| picture.id);
        // Each kind is read whole below the first id it left for the next page.
        let next = (stated_rest.map(PictureId).into_iter())
            .chain(pending_rest)
            .min();
        if let Some(next) = next {
            due.retain(|picture| picture.id < next);
        }
        Ok(DuePage { records: due, next })
    }

    /// What picture `id` looks like, once the worker has fetched it.
    pub fn picture_look(self, id: PictureId) -> StoreResult<Option<Look>> {
        Ok(self.0.get_id(Keyspace::PictureLook.id_key(id.0))?.map(Look))
    }

    /// The model that shows picture `id`, if one does.
    pub fn model_of_picture(self, id: PictureId) -> StoreResult<Option<ModelId>> {
        Ok(self
            .0
            .get_id(Keyspace::ModelPicture.id_key(id.0))?
            .map(ModelId))
    }

    pub fn candidate(self, id: CandidateId) -> StoreResult<Option<PictureCandidate>> {
        self.0.get(Keyspace::Candidate.id_key(id.0))
    }

    /// `model`'s candidates, by id.
    pub fn candidates_of(self, model: ModelId) -> StoreResult<Vec<PictureCandidate>> {
        let ids = self.0.ids_under(keys::candidate_of_model_prefix(model))?;
        self.0.many(Keyspace::Candidate, ids)
    }

    /// Where `model` stands in picture review (nothing decided, nothing protected when the
    /// store has no record).
    pub fn picture_review(self, model: ModelId) -> StoreResult<PictureReview> {
        Ok(self
            .0
            .get(Keyspace::PictureReview.id_key(model.0))?
            .unwrap_or_default())
    }

    /// The models in the given review lists, in id order.
    pub fn review_queue(self, lists: &[ReviewStatus]) -> StoreResult<Vec<ModelId>> {
        let mut ids = Vec::new();
        for list in lists {
            ids.extend(self.0.ids_under(keys::review_queue_prefix(*list))?);
        }
        ids.sort_unstable();
        Ok(ids.into_iter().map(ModelId).collect())
    }

    /// Up to `limit` models whose listing candidates are to be ranked again, by id.
    pub fn candidates_stale(self, limit: usize) -> StoreResult<Vec<ModelId>> {
        self.0
            .db
            .scan_prefix(Keyspace::CandidatesStale.prefix())
            .keys()
            .take(limit)
            .map(|key| {
                let key = key?;
                keys::trailing_id(&key)
                    .map(ModelId)
                    .ok_or_else(|| StoreError::Corrupt {
                        key: key.to_vec(),
                        reason: "stale-candidates key without a model id".into(),
                    })
            })
            .collect()
    }
}
