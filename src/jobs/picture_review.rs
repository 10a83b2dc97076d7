//! The back office's picture-review writes: select a candidate as a model's FRONT picture, keep
//! the picture a model has, or set its FRONT picture by URL and protect it. Each is one atomic
//! write with its audit entry, and takes the model out of the pending queue.
//!
//! A replaced picture gets a new id: the bytes behind `/media/pictures/{id}` never change, so
//! the media URLs stay truthfully `immutable`.

use super::users::{audit_entry, Actor};
use crate::domain::{
    CandidateId, FetchState, Model, ModelId, Picture, PictureId, PictureRecord, PictureReview,
    PictureType, Reviewed, Timestamp,
};
use crate::store::{RecordKind, StoreError, WriteBatch, WriteTurn};

/// Why a review write wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("no candidate with id `{0}`")]
    UnknownCandidate(String),
    #[error("no model picture with id `{0}`")]
    UnknownPicture(String),
    #[error("no model with id `{0}`")]
    UnknownModel(String),
    /// The request cannot be done as asked: the field and why.
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
        hint: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The model and picture a write acted on, for the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReviewedPicture {
    pub model: ModelId,
    pub picture: PictureId,
}

/// `POST /picture-review/candidates/{id}/select`: the model's FRONT picture becomes the
/// candidate's image (a new picture, its crop to be made by the worker from the stored
/// original), the candidate is marked selected and the model reviewed.
pub fn select(
    turn: &WriteTurn<'_>,
    actor: &Actor,
    candidate: CandidateId,
) -> Result<ReviewedPicture, ReviewError> {
    let store = turn.store();
    let unknown = || ReviewError::UnknownCandidate(candidate.to_string());
    let mut chosen = store.pictures().candidate(candidate)?.ok_or_else(unknown)?;
    let model = store
        .catalogue()
        .model(chosen.model_id)?
        .ok_or_else(unknown)?;
    let mut batch = turn.batch()?;
    let mut review = store.pictures().picture_review(model.id)?;
    let now = Timestamp::now();
    let source = store.pictures().picture(chosen.picture)?;
    let picture = replace_front(
        &mut batch,
        &mut review,
        &model,
        &chosen.image_url,
        source,
        now,
    )?;
    if let Some(look) = store.pictures().picture_look(chosen.picture)? {
        batch.put_look(picture, look);
    }
    chosen.selected_at = Some(now);
    batch.put_candidate(&chosen);
    let decision = Decision {
        action: "picture-review.select",
        targets: vec![
            format!("candidate:{candidate}"),
            format!("model:{}", model.id),
        ],
        detail: format!(
            "FRONT picture {picture} of model {} from candidate {candidate}",
            model.id
        ),
    };
    decide(turn, batch, actor, model.id, review, decision, now)?;
    Ok(ReviewedPicture {
        model: model.id,
        picture,
    })
}

/// `POST /picture-review/pictures/{id}/keep`: the model keeps its picture and leaves the queue.
pub fn keep(
    turn: &WriteTurn<'_>,
    actor: &Actor,
    picture: PictureId,
) -> Result<ReviewedPicture, ReviewError> {
    let store = turn.store();
    let unknown = || ReviewError::UnknownPicture(picture.to_string());
    let model_id = store
        .pictures()
        .model_of_picture(picture)?
        .ok_or_else(unknown)?;
    let model = store.catalogue().model(model_id)?.ok_or_else(unknown)?;
    if !model.pictures.iter().any(|p| p.id == picture) {
        return Err(unknown());
    }
    let decision = Decision {
        action: "picture-review.keep",
        targets: vec![format!("picture:{picture}"), format!("model:{}", model.id)],
        detail: format!("kept picture {picture} of model {}", model.id),
    };
    let review = store.pictures().picture_review(model.id)?;
    decide(
        turn,
        turn.batch()?,
        actor,
        model.id,
        review,
        decision,
        Timestamp::now(),
    )?;
    Ok(ReviewedPicture {
        model: model.id,
        picture,
    })
}

/// `PUT /picture-review/models/{id}/front-picture`: a new `url` replaces the FRONT picture (or
/// creates it); `protected` is set on the FRONT picture, or the oldest when there is none.
pub fn set_front_picture(
    turn: &WriteTurn<'_>,
    actor: &Actor,
    model: ModelId,
    url: Option<&str>,
    protected: bool,
) -> Result<ReviewedPicture, ReviewError> {
    let store = turn.store();
    let model = store
        .catalogue()
        .model(model)?
        .ok_or_else(|| ReviewError::UnknownModel(model.to_string()))?;
    let mut batch = turn.batch()?;
    let mut review = store.pictures().picture_review(model.id)?;
    let now = Timestamp::now();
    let picture = match url {
        Some(url) => replace_front(&mut batch, &mut review, &model, url, None, now)?,
        None => front_or_oldest(&model)
            .map(|p| p.id)
            .ok_or_else(|| ReviewError::Invalid {
                field: "url",
                message: "the model has no picture yet: give `url` to create its FRONT picture"
                    .into(),
                hint: "send {\"url\": \"https://…\", \"protected\": true}".into(),
            })?,
    };
    review.set_protected(picture, protected);
    let change = match url {
        Some(url) => format!("FRONT picture {picture} from {url}"),
        None => format!("picture {picture}"),
    };
    let decision = Decision {
        action: "picture-review.front-picture",
        targets: vec![format!("model:{}", model.id), format!("picture:{picture}")],
        detail: format!("{change}, protected: {protected}"),
    };
    decide(turn, batch, actor, model.id, review, decision, now)?;
    Ok(ReviewedPicture {
        model: model.id,
        picture,
    })
}

/// The FRONT picture, or else the oldest (lowest id).
pub fn front_or_oldest(model: &Model) -> Option<&Picture> {
    model
        .front_picture()
        .or_else(|| model.pictures.iter().min_by_key(|p| p.id))
}

/// Puts a new FRONT picture of `url` in the place of the model's (or first, when it has none),
/// with the pipeline's record: a copy of `source`'s original when it was fetched (its crop
/// cleared, so the worker makes it), else pending. A protected FRONT picture passes its
/// protection on. Returns the new picture's id.
fn replace_front(
    batch: &mut WriteBatch<'_>,
    review: &mut PictureReview,
    model: &Model,
    url: &str,
    source: Option<PictureRecord>,
    now: Timestamp,
) -> Result<PictureId, ReviewError> {
    let id = PictureId(batch.allocate_id(RecordKind::Picture)?);
    let fetched = source.as_ref().and_then(PictureRecord::fetched).cloned();
    let record = PictureRecord {
        state: match fetched {
            Some(original) => FetchState::Fetched(crate::domain::Fetched {
                cropped: None,
                ..original
            }),
            None => FetchState::Pending,
        },
        ..PictureRecord::pending(id, url.to_owned(), now)
    };
    batch.put_picture(&record);
    let picture = Picture {
        id,
        url: url.to_owned(),
        kind: PictureType::Front,
        cropped_url: None,
    };
    let mut updated = model.clone();
    let old = match updated
        .pictures
        .iter_mut()
        .find(|p| p.kind == PictureType::Front)
    {
        Some(front) => Some(std::mem::replace(front, picture)),
        None => {
            updated.pictures.insert(0, picture);
            None
        }
    };
    updated.updated_at = now;
    batch.put_model(Some(model), &updated);
    if let Some(old) = old.filter(|old| review.is_protected(old.id)) {
        review.set_protected(old.id, false);
        review.set_protected(id, true);
    }
    Ok(id)
}

/// What the audit trail says of a decision.
struct Decision {
    action: &'static str,
    targets: Vec<String>,
    detail: String,
}

/// Commits `batch` with the model's `review` marked decided by `actor` and the decision's
/// audit entry: one atomic write.
fn decide(
    turn: &WriteTurn<'_>,
    mut batch: WriteBatch<'_>,
    actor: &Actor,
    model: ModelId,
    mut review: PictureReview,
    decision: Decision,
    now: Timestamp,
) -> Result<(), ReviewError> {
    let store = turn.store();
    review.reviewed = Some(Reviewed {
        at: now,
        by: actor.name(),
    });
    let has_candidates = !store.pictures().candidates_of(model)?.is_empty();
    batch.put_picture_review(model, &review, has_candidates);
    let entry = audit_entry(
        store,
        actor,
        decision.action,
        decision.targets,
        decision.detail,
    )?;
    batch.put_audit(&entry);
    turn.commit(batch)?;
    Ok(())
}
