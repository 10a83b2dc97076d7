//! The `/admin` reads: `GET /admin/stats` (the catalogue's counts, kept by the writes
//! themselves), `GET /admin/unmatched-listings` (the listings matched to no model, with why)
//! and `GET /admin/audit` (the audit trail of back-office writes, newest first). The batch jobs
//! under `/admin` are in `admin_jobs`.

use crate::api::assemble;
use crate::api::error::ApiResult;
use crate::api::listings::{listing_context, provider_id, status_filter, MediaBase};
use crate::api::params::{parse_choice, PageParams, Params};
use crate::api::views::back_office::{AdminStats, AuditEntryView, UnmatchedListing};
use crate::api::views::Page;
#[allow(unused_imports)] // named in the OpenAPI annotations
use crate::api::views::{AuditPage, UnmatchedListingPage};
use crate::api::AppState;
use crate::domain::MatchOutcome;
use crate::store::Counted;
use axum::extract::State;
use axum::{Extension, Json};
use catalogue_index::{ListingFilters, ListingQuery, ListingSort};
use serde::Deserialize;

/// The spec's admin counts, read from the counters every write keeps: no scan.
#[utoipa::path(get, path = "/admin/stats", operation_id = "admin_stats", tag = "admin",
    responses((status = 200, description = "The catalogue's counts", body = AdminStats)))]
pub async fn stats(State(app): State<AppState>) -> ApiResult<Json<AdminStats>> {
    let count = |counted| app.store.count_of(counted);
    Ok(Json(AdminStats {
        brands: count(Counted::Brands)?,
        series: count(Counted::Series)?,
        models: count(Counted::Models)?,
        calibers: count(Counted::Calibers)?,
        providers: count(Counted::Providers)?,
        listings: count(Counted::Listings)?,
        unmatched_listings: count(Counted::UnmatchedListings)?,
    }))
}

/// Query of `GET /admin/unmatched-listings`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct UnmatchedParams {
    /// Provider slug.
    provider: Option<String>,
    /// Brand slug: listings whose text resolved to that brand (a reference it lacks).
    brand: Option<String>,
    /// unknownBrand, unknownReference, ambiguous or noReference.
    reason: Option<String>,
    /// `true`: DELISTED listings too (hidden by default).
    #[param(value_type = Option<bool>)]
    include_delisted: Option<String>,
}

/// Listings matched to no model, newest first, with the reason each did not match.
#[utoipa::path(get, path = "/admin/unmatched-listings", operation_id = "admin_unmatched_listings", tag = "admin",
    params(PageParams, UnmatchedParams),
    responses((status = 200, description = "A page of unmatched listings", body = UnmatchedListingPage)))]
pub async fn unmatched_listings(
    State(app): State<AppState>,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(params): Params<UnmatchedParams>,
) -> ApiResult<Json<Page<UnmatchedListing>>> {
    let pagination = page.pagination()?;
    let reasons: Vec<(&'static str, MatchOutcome)> = MatchOutcome::REASONS
        .iter()
        .filter_map(|&outcome| Some((outcome.reason()?, outcome)))
        .collect();
    let reason = parse_choice("reason", params.reason.as_deref(), &reasons)?;
    let brand = params
        .brand
        .as_deref()
        .map(|slug| assemble::brand_by_slug(&app, slug))
        .transpose()?;
    let filters = ListingFilters {
        brand_id: brand.map(|b| b.id.0),
        provider_id: params
            .provider
            .as_deref()
            .map(|slug| provider_id(&app, slug))
            .transpose()?,
        unmatched: true,
        unmatched_reason: reason.and_then(MatchOutcome::reason_code),
        ..status_filter(None, params.include_delisted.as_deref())?
    };
    let query = ListingQuery {
        text: None,
        filters,
        sort: ListingSort::Newest,
        offset: pagination.offset(),
        limit: pagination.page_size,
    };
    let hits = app.listings.search(&query)?;
    let context = listing_context(&app, None, &media)?;
    // Read once: the view and the reason come from the same record, so a listing gone since
    // the search cannot shift one listing's reason onto another, and one matched since (by a
    // write between the search and the read) is left out rather than given a false reason.
    let data = assemble::listing_views_with(&app, &hits.ids, &context, |listing, view| {
        Some(UnmatchedListing {
            listing: view,
            unmatched_reason: listing.matching.reason()?,
        })
    })?;
    Ok(Json(pagination.wrap(data, hits.total)))
}

/// Query of `GET /admin/audit`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditParams {
    /// Only entries by this user (`cli` for commands run on the host).
    user: Option<String>,
    /// Only entries of this action (`auth.login`, `user.add`, `reconciliation.link`, ...).
    action: Option<String>,
}

/// Who changed what, and when, newest first.
#[utoipa::path(get, path = "/admin/audit", operation_id = "admin_audit", tag = "admin",
    params(PageParams, AuditParams),
    responses((status = 200, description = "A page of audit entries", body = AuditPage)))]
pub async fn audit(
    State(app): State<AppState>,
    Params(page): Params<PageParams>,
    Params(params): Params<AuditParams>,
) -> ApiResult<Json<Page<AuditEntryView>>> {
    let pagination = page.pagination()?;
    let wanted = |user: &str, action: &str| {
        params.user.as_deref().is_none_or(|u| u == user)
            && params.action.as_deref().is_none_or(|a| a == action)
    };
    let (mut total, mut data) = (0, Vec::with_capacity(pagination.page_size));
    for entry in app.store.audit().audit_newest_first() {
        let entry = entry?;
        if !wanted(&entry.user, &entry.action) {
            continue;
        }
        if total >= pagination.offset() && data.len() < pagination.page_size {
            data.push(AuditEntryView {
                id: entry.id.to_string(),
                at: entry.at.to_rfc3339(),
                user: entry.user,
                action: entry.action,
                targets: entry.targets,
                detail: entry.detail,
            });
        }
        total += 1;
    }
    Ok(Json(pagination.wrap(data, total)))
}
