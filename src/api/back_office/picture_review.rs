//! The picture-review group: the queue of models with candidate photographs nobody has decided
//! on, and the writes that decide (select a candidate, keep the picture, set and protect the
//! FRONT picture). Writes go through `jobs::picture_review`, one atomic write each.

use super::{actor, write, Caller};
use crate::api::assemble::{media_url, shown_picture};
use crate::api::error::{internal_because, ApiError, ApiResult};
use crate::api::layers::capacity::Work;
use crate::api::listings::MediaBase;
use crate::api::params::{parse_choice, PageParams, Pagination, Params, PathParams};
use crate::api::requests::{FrontPictureBody, JsonBody};
use crate::api::views::back_office::{
    CandidateView, FetchView, FrontPicture, FrontPictureAnswer, ReviewPicture, ReviewQueueItem,
};
use crate::api::views::Page;
#[allow(unused_imports)] // named in the OpenAPI annotations
use crate::api::views::ReviewQueuePage;
use crate::app::App;
use crate::domain::{
    CandidateId, FetchState, Model, ModelId, Picture, PictureCandidate, PictureId, PictureReview,
    ReviewStatus,
};
use crate::jobs::picture_review::{self, ReviewError, ReviewedPicture};
use crate::jobs::users::Actor;
use crate::media::fetch::{is_web_url, MAX_URL_LENGTH};
use crate::store::WriteTurn;
use axum::{Extension, Json};
use serde::Deserialize;

/// Query of `GET /picture-review`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReviewParams {
    /// pending (default): models with candidates nobody has decided on; reviewed: models an
    /// admin decided on; all: both.
    #[param(example = "pending")]
    pub status: Option<String>,
}

pub fn status_schema() -> utoipa::openapi::Object {
    crate::api::params::choice_schema(&STATUSES)
}

const STATUSES: [(&str, &[ReviewStatus]); 3] = [
    ("pending", &[ReviewStatus::Pending]),
    ("reviewed", &[ReviewStatus::Reviewed]),
    ("all", &[ReviewStatus::Pending, ReviewStatus::Reviewed]),
];

/// Models with candidate photographs, pending review by default.
///
/// Each item is the model with its pictures (and `protected` flags) and its candidates, best
/// rank first. Models are in id order.
#[utoipa::path(get, path = "/picture-review", operation_id = "picture_review_queue", tag = "picture-review",
    params(PageParams, ReviewParams),
    responses((status = 200, description = "A page of models to review", body = ReviewQueuePage)))]
pub async fn queue(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(params): Params<ReviewParams>,
) -> ApiResult<Json<Page<ReviewQueueItem>>> {
    let pagination = page.pagination()?;
    let page = work
        .run(move |app| queue_page(app, &params, pagination, &media))
        .await?;
    Ok(Json(page))
}

/// The page `pagination` of the models `params` asks for: what `GET /picture-review` answers
/// and the console's picture review shows a model of.
pub fn queue_page(
    app: &App,
    params: &ReviewParams,
    pagination: Pagination,
    media: &MediaBase,
) -> ApiResult<Page<ReviewQueueItem>> {
    let lists = parse_choice("status", params.status.as_deref(), &STATUSES)?
        .unwrap_or(&[ReviewStatus::Pending]);
    let models = app.store().pictures().review_queue(lists)?;
    pagination
        .slice(models)
        .try_map(|model| queue_item(app, &media.0, model))
}

/// Makes the candidate the model's FRONT picture.
///
/// The FRONT picture (created when there is none) becomes a new picture of the candidate's
/// image, its crop made again by the image pipeline; the candidate is marked selected and the
/// model reviewed. One atomic write with its audit entry.
#[utoipa::path(post, path = "/picture-review/candidates/{id}/select", operation_id = "picture_review_select", tag = "picture-review",
    params(("id" = String, Path, description = "Candidate id")),
    responses((status = 200, description = "The model's new FRONT picture", body = ReviewPicture)))]
pub async fn select(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Extension(caller): Extension<Caller>,
    PathParams(id): PathParams<String>,
) -> ApiResult<Json<ReviewPicture>> {
    let unknown = || ReviewError::UnknownCandidate(id.clone());
    let candidate = id.parse::<CandidateId>().map_err(|_| unknown())?;
    let done = decide(&work, &caller, move |turn, actor| {
        picture_review::select(turn, actor, candidate)
    })
    .await?;
    work.urgent_pictures().push(done.picture);
    answer_picture(&work, media, done).await
}

/// Keeps the model's picture as it is and takes the model out of the pending queue.
///
/// One atomic write with its audit entry; the image is unchanged.
#[utoipa::path(post, path = "/picture-review/pictures/{id}/keep", operation_id = "picture_review_keep", tag = "picture-review",
    params(("id" = String, Path, description = "Picture id of a model picture")),
    responses((status = 200, description = "The picture kept", body = ReviewPicture)))]
pub async fn keep(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Extension(caller): Extension<Caller>,
    PathParams(id): PathParams<String>,
) -> ApiResult<Json<ReviewPicture>> {
    let unknown = || ReviewError::UnknownPicture(id.clone());
    let picture = id.parse::<PictureId>().map_err(|_| unknown())?;
    let done = decide(&work, &caller, move |turn, actor| {
        picture_review::keep(turn, actor, picture)
    })
    .await?;
    answer_picture(&work, media, done).await
}

/// The model's FRONT picture, or its oldest, with its raw source URL, `protected`, review
/// state and fetch state; `picture` is null when the model has none.
#[utoipa::path(get, path = "/picture-review/models/{id}/front-picture", operation_id = "picture_review_front_picture", tag = "picture-review",
    params(("id" = String, Path, description = "Model id")),
    responses((status = 200, description = "The model's FRONT picture", body = FrontPictureAnswer)))]
pub async fn front_picture(
    work: Work,
    Extension(media): Extension<MediaBase>,
    PathParams(id): PathParams<String>,
) -> ApiResult<Json<FrontPictureAnswer>> {
    let model = model_id(&id)?;
    work.run(move |app| {
        let model = app
            .store()
            .catalogue()
            .model(model)?
            .ok_or_else(|| ApiError::unknown_model(&id))?;
        front_picture_answer(app, &media.0, &model)
    })
    .await
    .map(Json)
}

/// Sets the model's FRONT picture by URL and whether it is protected.
///
/// A new `url` replaces the FRONT picture (a new picture id; the image pipeline fetches and
/// crops it), or creates it when the model has none. Without `url`, `protected` is set on the
/// FRONT picture, or the oldest. The model leaves the pending queue. One atomic write with its
/// audit entry.
#[utoipa::path(put, path = "/picture-review/models/{id}/front-picture", operation_id = "picture_review_set_front_picture", tag = "picture-review",
    params(("id" = String, Path, description = "Model id")),
    request_body = FrontPictureBody,
    responses((status = 200, description = "The model's FRONT picture as it is now", body = FrontPictureAnswer)))]
pub async fn set_front_picture(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Extension(caller): Extension<Caller>,
    PathParams(id): PathParams<String>,
    JsonBody(body): JsonBody<FrontPictureBody>,
) -> ApiResult<Json<FrontPictureAnswer>> {
    let model = model_id(&id)?;
    if let Some(url) = body.url.as_deref().filter(|url| !is_web_url(url)) {
        return Err(ApiError::invalid(
            format!(
                "`url`: `{url}` is not an http or https URL of at most {MAX_URL_LENGTH} characters"
            ),
            "give the absolute URL of a JPEG, PNG or WebP image",
        ));
    }
    let replaced = body.url.is_some();
    let done = decide(&work, &caller, move |turn, actor| {
        picture_review::set_front_picture(turn, actor, model, body.url.as_deref(), body.protected)
    })
    .await?;
    if replaced {
        work.urgent_pictures().push(done.picture);
    }
    work.run(move |app| {
        let model = app
            .store()
            .catalogue()
            .model(done.model)?
            .ok_or_else(|| ApiError::unknown_model(&done.model.to_string()))?;
        front_picture_answer(app, &media.0, &model)
    })
    .await
    .map(Json)
}

fn model_id(id: &str) -> ApiResult<ModelId> {
    id.parse::<ModelId>()
        .map_err(|_| ApiError::unknown_model(id))
}

/// Runs a review write for the signed-in admin through the writer, off the async workers.
async fn decide(
    work: &Work,
    caller: &Caller,
    job: impl FnOnce(&WriteTurn<'_>, &Actor) -> Result<ReviewedPicture, ReviewError> + Send + 'static,
) -> ApiResult<ReviewedPicture> {
    let actor = actor(caller)?;
    work.run(move |app| write(app, |turn| job(turn, &actor)))
        .await
}

/// The picture a write acted on, as it is now.
async fn answer_picture(
    work: &Work,
    media: MediaBase,
    done: ReviewedPicture,
) -> ApiResult<Json<ReviewPicture>> {
    work.run(move |app| {
        let gone = || {
            internal_because(format!(
                "model {} vanished after a review write",
                done.model
            ))
        };
        let model = app
            .store()
            .catalogue()
            .model(done.model)?
            .ok_or_else(gone)?;
        let picture = model
            .pictures
            .iter()
            .find(|p| p.id == done.picture)
            .ok_or_else(gone)?;
        let review = app.store().pictures().picture_review(model.id)?;
        review_picture(app, &media.0, picture, &review)
    })
    .await
    .map(Json)
}

fn review_picture(
    app: &App,
    media_base: &str,
    picture: &Picture,
    review: &PictureReview,
) -> ApiResult<ReviewPicture> {
    let shown = shown_picture(app, media_base, picture)?;
    Ok(ReviewPicture {
        id: picture.id.to_string(),
        url: shown.url,
        kind: picture.kind.as_str(),
        cropped_url: shown.cropped_url,
        protected: review.is_protected(picture.id),
    })
}

fn queue_item(app: &App, media_base: &str, model: ModelId) -> ApiResult<ReviewQueueItem> {
    let model =
        app.store().catalogue().model(model)?.ok_or_else(|| {
            internal_because(format!("model {model} in the review queue is gone"))
        })?;
    let brand = app
        .store()
        .catalogue()
        .brand(model.brand_id)?
        .map(|b| b.name);
    let review = app.store().pictures().picture_review(model.id)?;
    let mut candidates = app.store().pictures().candidates_of(model.id)?;
    candidates.sort_by_key(|c| (c.rank, c.id));
    Ok(ReviewQueueItem {
        id: model.id.to_string(),
        name: model.name.clone(),
        reference_number: model.reference_number.clone(),
        slug: model.slug.to_string(),
        brand: brand.unwrap_or_default(),
        query: candidates.iter().find_map(|c| c.query.clone()),
        pictures: model
            .pictures
            .iter()
            .map(|p| review_picture(app, media_base, p, &review))
            .collect::<ApiResult<_>>()?,
        candidates: candidates
            .iter()
            .map(|c| candidate_view(media_base, c))
            .collect(),
    })
}

fn candidate_view(media_base: &str, candidate: &PictureCandidate) -> CandidateView {
    CandidateView {
        id: candidate.id.to_string(),
        url: media_url(media_base, candidate.picture),
        source_url: Some(candidate.source_url().to_owned()),
        width: candidate.width,
        height: candidate.height,
        rank: candidate.rank,
        selected_at: candidate.selected_at.map(|at| at.to_rfc3339()),
    }
}

fn front_picture_answer(
    app: &App,
    media_base: &str,
    model: &Model,
) -> ApiResult<FrontPictureAnswer> {
    let Some(picture) = picture_review::front_or_oldest(model) else {
        return Ok(FrontPictureAnswer { picture: None });
    };
    let review = app.store().pictures().picture_review(model.id)?;
    let shown = shown_picture(app, media_base, picture)?;
    let has_candidates = !app.store().pictures().candidates_of(model.id)?.is_empty();
    let record = shown.record.clone();
    Ok(FrontPictureAnswer {
        picture: Some(FrontPicture {
            picture: ReviewPicture {
                id: picture.id.to_string(),
                url: shown.url,
                kind: picture.kind.as_str(),
                cropped_url: shown.cropped_url,
                protected: review.is_protected(picture.id),
            },
            source_url: record
                .as_ref()
                .map_or_else(|| picture.url.clone(), |r| r.source_url.clone()),
            review: match review.status(has_candidates) {
                Some(ReviewStatus::Pending) => "pending",
                Some(ReviewStatus::Reviewed) => "reviewed",
                None => "none",
            },
            fetch: fetch_view(record.as_ref()),
        }),
    })
}

fn fetch_view(record: Option<&crate::domain::PictureRecord>) -> FetchView {
    let Some(record) = record else {
        return FetchView {
            state: "external",
            reason: None,
            attempts: 0,
            width: None,
            height: None,
        };
    };
    let (state, reason, size) = match &record.state {
        FetchState::Pending => ("pending", None, None),
        FetchState::Fetched(f) => ("fetched", None, Some((f.width, f.height))),
        FetchState::Failed { reason, .. } => ("failed", Some(reason.clone()), None),
    };
    FetchView {
        state,
        reason,
        attempts: record.attempts,
        width: size.map(|s| s.0),
        height: size.map(|s| s.1),
    }
}
