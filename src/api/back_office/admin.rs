//! The `/admin` reads: `GET /admin/stats` (the catalogue's counts, kept by the writes
//! themselves), `GET /admin/unmatched-listings` (the listings matched to no model, with why)
//! and `GET /admin/audit` (the audit trail of back-office writes, newest first). The batch jobs
//! under `/admin` are in `admin_jobs`.

use crate::api::assemble;
use crate::api::error::ApiResult;
use crate::api::layers::capacity::Work;
use crate::api::listings::{listing_context, provider_id, status_filter, MediaBase};
use crate::api::params::{parse_choice, PageParams, Pagination, Params};
use crate::api::views::back_office::{AdminStats, AuditEntryView, UnmatchedListing};
use crate::api::views::Page;
#[allow(unused_imports)] // named in the OpenAPI annotations
use crate::api::views::{AuditPage, UnmatchedListingPage};
use crate::app::App;
use crate::domain::MatchOutcome;
use crate::store::{AuditFilter, Counted};
use axum::{Extension, Json};
use catalogue_index::{ListingFilters, ListingQuery, ListingSort};
use serde::Deserialize;

/// The spec's admin counts, read from the counters every write keeps: no scan.
#[utoipa::path(get, path = "/admin/stats", operation_id = "admin_stats", tag = "admin",
    responses((status = 200, description = "The catalogue's counts", body = AdminStats)))]
pub async fn stats(work: Work) -> ApiResult<Json<AdminStats>> {
    work.run(|app| {
        let count = |counted| app.store().count_of(counted);
        Ok(Json(AdminStats {
            brands: count(Counted::Brands)?,
            series: count(Counted::Series)?,
            models: count(Counted::Models)?,
            calibers: count(Counted::Calibers)?,
            providers: count(Counted::Providers)?,
            listings: count(Counted::Listings)?,
            unmatched_listings: count(Counted::UnmatchedListings)?,
        }))
    })
    .await
}

/// Query of `GET /admin/unmatched-listings`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct UnmatchedParams {
    /// Provider slug.
    pub provider: Option<String>,
    /// Brand slug: listings whose text resolved to that brand (a reference it lacks).
    pub brand: Option<String>,
    /// unknownBrand, unknownReference, ambiguous or noReference.
    pub reason: Option<String>,
    /// `true`: DELISTED listings too (hidden by default).
    #[param(value_type = Option<bool>)]
    pub include_delisted: Option<String>,
}

/// Listings matched to no model, newest first, with the reason each did not match.
#[utoipa::path(get, path = "/admin/unmatched-listings", operation_id = "admin_unmatched_listings", tag = "admin",
    params(PageParams, UnmatchedParams),
    responses((status = 200, description = "A page of unmatched listings", body = UnmatchedListingPage)))]
pub async fn unmatched_listings(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(params): Params<UnmatchedParams>,
) -> ApiResult<Json<Page<UnmatchedListing>>> {
    let pagination = page.pagination()?;
    work.run(move |app| unmatched_page(app, &params, pagination, &media))
        .await
        .map(Json)
}

/// One page of the unmatched listings `params` keeps: what `GET /admin/unmatched-listings`
/// answers and the console's page of them shows.
pub fn unmatched_page(
    app: &App,
    params: &UnmatchedParams,
    pagination: Pagination,
    media: &MediaBase,
) -> ApiResult<Page<UnmatchedListing>> {
    let reason = parse_choice("reason", params.reason.as_deref(), &super::reason_choices())?;
    let include_delisted = status_filter(None, params.include_delisted.as_deref())?;
    let brand = params
        .brand
        .as_deref()
        .map(|slug| assemble::brand_by_slug(app, slug))
        .transpose()?;
    let filters = ListingFilters {
        brand_id: brand.map(|b| b.id.0),
        provider_id: params
            .provider
            .as_deref()
            .map(|slug| provider_id(app, slug))
            .transpose()?,
        unmatched: true,
        unmatched_reason: reason.and_then(MatchOutcome::reason_code),
        ..include_delisted
    };
    let query = ListingQuery {
        text: None,
        filters,
        sort: ListingSort::Newest,
        offset: pagination.offset(),
        limit: pagination.page_size,
    };
    let hits = app.listings().search(&query)?;
    let context = listing_context(app, None, media)?;
    // Read once: the view and the reason come from the same record, so a listing gone since
    // the search cannot shift one listing's reason onto another, and one matched since (by a
    // write between the search and the read) is left out rather than given a false reason.
    let data = assemble::listing_views_with(app, &hits.ids, &context, |listing, view| {
        Some(UnmatchedListing {
            listing: view,
            unmatched_reason: listing.matching.reason()?,
        })
    })?;
    Ok(pagination.wrap(data, hits.total))
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
    work: Work,
    Params(page): Params<PageParams>,
    Params(params): Params<AuditParams>,
) -> ApiResult<Json<Page<AuditEntryView>>> {
    let pagination = page.pagination()?;
    work.run(move |app| {
        // The whole trail, or the entries by a user, of an action or both: each a list of
        // keys of its own, with its count, so a page reads only its entries.
        let filter = AuditFilter {
            user: params.user.as_deref(),
            action: params.action.as_deref(),
        };
        let (entries, total) =
            app.store()
                .audit()
                .page(filter, pagination.offset(), pagination.page_size)?;
        let data = entries.into_iter().map(AuditEntryView::from).collect();
        Ok(Json(pagination.wrap(data, total)))
    })
    .await
}
