//! `/admin/jobs` and the batch jobs submitted under `/admin`: a provider's snapshot
//! (`/admin/providers/{slug}/snapshot`), ECB `/admin/rates`, a `/admin/match`, a
//! `/admin/reindex` or a duplicate pass (`/admin/duplicates/rebuild`) submitted (202 and the
//! job), the jobs listed and read. Bad input is refused before a job is queued; jobs run one at
//! a time in submission order (`jobs::queue`).

use super::{actor, Caller};
use crate::api::error::{internal, ApiError, ApiResult, ECB_HINT};
use crate::api::layers::capacity::Work;
use crate::api::layers::BodyLimit;
use crate::api::params::{PageParams, Pagination, Params, PathParams};
use crate::api::views::back_office::JobView;
#[allow(unused_imports)] // named in the OpenAPI annotations
use crate::api::views::JobPage;
use crate::api::views::Page;
use crate::app::App;
use crate::domain::JobId;
use crate::jobs::batch::Batch;
use crate::jobs::ingest;
use crate::jobs::queue::SpoolFile;
use crate::jobs::snapshot_rules::{
    parse_observed_at, parse_share, SnapshotRules, DEFAULT_MAX_DELIST, DEFAULT_MAX_INVALID,
};
use crate::jobs::writer::IndexChoice;
use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use http_body_util::BodyExt;
use serde::Deserialize;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// The largest snapshot a request may post, in bytes (`ApiConfig::snapshot_limit`).
#[derive(Debug, Clone, Copy)]
pub struct SnapshotLimit(pub u64);

/// Query of `POST /admin/providers/{slug}/snapshot`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct SnapshotParams {
    /// Share of invalid lines at which the snapshot is refused whole, 0 to 1.
    #[param(value_type = Option<f64>, default = 0.5)]
    max_invalid: Option<String>,
    /// Share of the provider's listings in stock the snapshot may delist, 0 to 1; more is
    /// refused whole.
    #[param(value_type = Option<f64>, default = 0.2)]
    max_delist: Option<String>,
    /// Let a snapshot through that would delist more than `maxDelist` of the stock, or that
    /// keeps almost none of it (another provider's file?); the override is audited.
    #[param(value_type = Option<bool>, default = false)]
    allow_mass_delist: Option<String>,
    /// When the snapshot was taken, to replay an archived one (RFC 3339, or a day for its
    /// midnight UTC): its listings are seen, priced and delisted then. Not after now, nor
    /// before the provider's last snapshot. Default: now.
    #[param(value_type = Option<String>, example = "2025-04-07T06:00:00Z")]
    observed_at: Option<String>,
}

/// Query of `POST /admin/reindex`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReindexParams {
    /// catalogue, listings, series (the models' price series) or all (default).
    #[param(example = "all", value_type = Option<String>)]
    index: Option<String>,
}

pub fn index_schema() -> utoipa::openapi::Object {
    let names = IndexChoice::ALL.map(|index| (index.as_str(), ()));
    crate::api::params::choice_schema(&names)
}

/// How much of a snapshot's body is held before it is written to its spool file.
const SPOOL_WRITE: usize = 1 << 20;

/// Submits a provider's full current snapshot (NDJSON, the `ingest` format) to be ingested.
///
/// The body is streamed to a file under the data dir, then checked as `ingest` checks it: an
/// unknown provider is 404; an empty snapshot, one with `maxInvalid` or more of its lines
/// invalid (its first problems in the hint), one that would delist more than `maxDelist` of
/// the provider's listings in stock or that keeps almost none of them is 400, and nothing is
/// queued; so is one dated by `observedAt` after now or before the provider's last snapshot.
/// Listings missing from the snapshot are delisted once every listing in it is written.
#[utoipa::path(post, path = "/admin/providers/{slug}/snapshot", operation_id = "admin_submit_snapshot", tag = "jobs",
    params(("slug" = String, Path, description = "The provider's slug"), SnapshotParams),
    request_body(content = String, content_type = "application/x-ndjson", description = "One listing per line"),
    responses((status = 202, description = "The job, queued; Location names it", body = JobView,
        headers(("Location" = String, description = "/v1/admin/jobs/{id}")))))]
pub async fn submit_snapshot(
    work: Work,
    Extension(caller): Extension<Caller>,
    Extension(SnapshotLimit(limit)): Extension<SnapshotLimit>,
    PathParams(slug): PathParams<String>,
    Params(params): Params<SnapshotParams>,
    body: Body,
) -> ApiResult<Response> {
    let actor = actor(&caller)?;
    let rules = snapshot_rules(&params, &actor)?;
    let provider = slug.clone();
    let spooled = work
        .run(move |app| {
            ingest::provider(app.store(), &provider)?;
            app.jobs().spool_file().map_err(|e| internal(&e))
        })
        .await?;
    let file = tokio::fs::File::create(spooled.path())
        .await
        .map_err(|e| internal(&e))?;
    // The body comes in frames of a few KiB, and each write to a tokio file is a blocking
    // task of its own: written a MiB at a time instead.
    let mut file = tokio::io::BufWriter::with_capacity(SPOOL_WRITE, file);
    let size = copy_capped(body, limit, &mut file).await?;
    file.flush().await.map_err(|e| internal(&e))?;
    drop(file);
    tracing::info!(provider = %slug, bytes = size, "snapshot received");
    let name = format!("snapshot of {slug}");
    let provider = slug.clone();
    let (spooled, name, rules) = work
        .run(move |app| {
            let file = std::fs::File::open(spooled.path()).map_err(|e| internal(&e))?;
            let snapshot = std::io::BufReader::new(file);
            ingest::check_snapshot(app.store(), &provider, &name, snapshot, &rules)?;
            Ok((spooled, name, rules))
        })
        .await?;
    let batch = Batch::Snapshot {
        provider: slug.clone(),
        file: spooled.path().to_owned(),
        name,
        rules,
    };
    submit(&work, actor, batch, Some(spooled)).await
}

/// Submits an ECB reference-rates file to be loaded, a day's or a history of many days.
///
/// The daily file (`eurofxref-daily.xml`) or a history (`eurofxref-hist-90d.xml`,
/// `eurofxref-hist.xml`): every day of it is kept by date. A body that does not parse, or has a
/// day that gives no US dollar table, is 400 and nothing is queued.
#[utoipa::path(post, path = "/admin/rates", operation_id = "admin_submit_rates", tag = "jobs",
    request_body(content = String, content_type = "application/xml", description = "The ECB's daily or history XML"),
    responses((status = 202, description = "The job, queued; Location names it", body = JobView,
        headers(("Location" = String, description = "/v1/admin/jobs/{id}")))))]
pub async fn submit_rates(
    work: Work,
    Extension(caller): Extension<Caller>,
    Extension(BodyLimit(limit)): Extension<BodyLimit>,
    body: Body,
) -> ApiResult<Response> {
    let actor = actor(&caller)?;
    let mut bytes = Vec::new();
    copy_capped(body, limit as u64, &mut bytes).await?;
    let xml = String::from_utf8(bytes)
        .map_err(|_| ApiError::invalid("the rates file is not UTF-8", ECB_HINT))?;
    crate::domain::rates::parse_ecb_days(&xml)
        .and_then(|days| crate::domain::rates::tables_of(&days))?;
    submit(&work, actor, Batch::Rates { xml }, None).await
}

/// Submits a match: every unmatched listing tried again (after an import added models).
#[utoipa::path(post, path = "/admin/match", operation_id = "admin_submit_match", tag = "jobs",
    responses((status = 202, description = "The job, queued; Location names it", body = JobView,
        headers(("Location" = String, description = "/v1/admin/jobs/{id}")))))]
pub async fn submit_match(work: Work, Extension(caller): Extension<Caller>) -> ApiResult<Response> {
    submit(&work, actor(&caller)?, Batch::Match, None).await
}

/// Submits a rebuild of the search indexes, the duplicate pairs and the models' price series.
///
/// `index` names what is rebuilt: the catalogue index (then the duplicate finder's pass), the
/// listings index, every model's price series folded again, or all of them.
#[utoipa::path(post, path = "/admin/reindex", operation_id = "admin_submit_reindex", tag = "jobs",
    params(ReindexParams),
    responses((status = 202, description = "The job, queued; Location names it", body = JobView,
        headers(("Location" = String, description = "/v1/admin/jobs/{id}")))))]
pub async fn submit_reindex(
    work: Work,
    Extension(caller): Extension<Caller>,
    Params(params): Params<ReindexParams>,
) -> ApiResult<Response> {
    let actor = actor(&caller)?;
    let which = params.index.as_deref().unwrap_or("all");
    let which = IndexChoice::parse(which).ok_or_else(|| {
        ApiError::invalid(
            format!("`{which}` is not an index"),
            format!("index is {}", IndexChoice::names()),
        )
    })?;
    submit(&work, actor, Batch::Reindex(which), None).await
}

/// Submits the duplicate finder's full pass over every model.
#[utoipa::path(post, path = "/admin/duplicates/rebuild", operation_id = "admin_submit_duplicates", tag = "jobs",
    responses((status = 202, description = "The job, queued; Location names it", body = JobView,
        headers(("Location" = String, description = "/v1/admin/jobs/{id}")))))]
pub async fn submit_duplicates(
    work: Work,
    Extension(caller): Extension<Caller>,
) -> ApiResult<Response> {
    submit(&work, actor(&caller)?, Batch::Duplicates, None).await
}

/// The jobs submitted to this data dir, newest first.
#[utoipa::path(get, path = "/admin/jobs", operation_id = "admin_list_jobs", tag = "jobs",
    params(PageParams),
    responses((status = 200, description = "A page of jobs", body = JobPage)))]
pub async fn list_jobs(
    work: Work,
    Params(page): Params<PageParams>,
) -> ApiResult<Json<Page<JobView>>> {
    let pagination = page.pagination()?;
    work.run(move |app| job_page(app, pagination))
        .await
        .map(Json)
}

/// The page `pagination` of the jobs, newest first, each with its live progress: what
/// `GET /admin/jobs` answers and the console shows.
pub fn job_page(app: &App, pagination: Pagination) -> ApiResult<Page<JobView>> {
    let (mut total, mut data) = (0, Vec::with_capacity(pagination.page_size));
    for job in app.store().jobs().jobs_newest_first() {
        let job = job?;
        if total >= pagination.offset() && data.len() < pagination.page_size {
            data.push(app.jobs().live(job).into());
        }
        total += 1;
    }
    Ok(pagination.wrap(data, total))
}

/// One job: its state, progress and, once it ended, its report or error.
#[utoipa::path(get, path = "/admin/jobs/{id}", operation_id = "admin_get_job", tag = "jobs",
    params(("id" = String, Path, description = "Job id")),
    responses((status = 200, description = "The job", body = JobView)))]
pub async fn get_job(work: Work, PathParams(id): PathParams<String>) -> ApiResult<Json<JobView>> {
    let unknown = || ApiError::not_found(format!("no job {id}"), "GET /v1/admin/jobs lists them");
    let job = id.parse::<JobId>().map_err(|_| unknown())?;
    let found = work.run(move |app| Ok(app.job_context().job(job)?)).await?;
    found.map(|job| Json(job.into())).ok_or_else(unknown)
}

/// Queues `batch` and answers 202 with the job and its `Location`.
async fn submit(
    work: &Work,
    actor: crate::jobs::users::Actor,
    batch: Batch,
    spooled: Option<SpoolFile>,
) -> ApiResult<Response> {
    let record = work
        .run(move |app| Ok(app.job_context().submit(&actor, batch, spooled)?))
        .await?;
    let location = format!("/v1/admin/jobs/{}", record.id);
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        Json(JobView::from(record)),
    )
        .into_response())
}

/// Copies `body` into `sink` a frame at a time, never holding it whole: 400 past `limit` bytes.
async fn copy_capped(
    body: Body,
    limit: u64,
    sink: &mut (impl AsyncWrite + Unpin),
) -> ApiResult<u64> {
    let mut body = body;
    let mut size = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            ApiError::invalid(
                format!("the body could not be read: {e}"),
                "send the whole body",
            )
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        size += data.len() as u64;
        if size > limit {
            return Err(ApiError::body_too_large(
                usize::try_from(limit).unwrap_or(usize::MAX),
            ));
        }
        sink.write_all(&data).await.map_err(|e| internal(&e))?;
    }
    if size == 0 {
        return Err(ApiError::invalid(
            "the body is empty",
            "send the file in the request body",
        ));
    }
    Ok(size)
}

/// The rules of a snapshot submission: `maxInvalid` and `maxDelist` shares between 0 and 1
/// (by default [`DEFAULT_MAX_INVALID`] and [`DEFAULT_MAX_DELIST`]), `allowMassDelist` true or
/// false, given by `actor`.
fn snapshot_rules(
    params: &SnapshotParams,
    actor: &crate::jobs::users::Actor,
) -> ApiResult<SnapshotRules> {
    let share = |name: &'static str, text: Option<&str>, default: f64| match text {
        None => Ok(default),
        Some(text) => parse_share(name, text),
    };
    let allow = match params.allow_mass_delist.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::invalid(
                format!("allowMassDelist `{other}` is not a boolean"),
                "allowMassDelist is true or false",
            ))
        }
    };
    Ok(SnapshotRules {
        max_invalid: share(
            "maxInvalid",
            params.max_invalid.as_deref(),
            DEFAULT_MAX_INVALID,
        )?,
        max_delist: share(
            "maxDelist",
            params.max_delist.as_deref(),
            DEFAULT_MAX_DELIST,
        )?,
        mass_delist_allowed_by: allow.then(|| actor.clone()),
        observed_at: (params.observed_at.as_deref())
            .map(|text| parse_observed_at("observedAt", text))
            .transpose()?,
    })
}
