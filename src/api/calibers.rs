//! `GET /calibers/{brandSlug}/{ref}`: `ref` is the calibre's slug or any spelling of its
//! reference (`3235`, `SW200-1`, `sw 200 1`).

use super::assemble::{self, Lookups};
use super::error::{ApiError, ApiResult};
use super::listings::MediaBase;
use super::params::PathParams;
use super::views::CaliberDetail;
use crate::api::layers::capacity::Work;
use crate::domain::{normalize_reference, Slug};
use axum::{Extension, Json};
use catalogue_index::{DocKind, Filters, SearchRequest, SortOrder};

/// One movement with its specification and every model across the catalogue that runs it.
#[utoipa::path(get, path = "/calibers/{brandSlug}/{ref}", operation_id = "get_caliber", tag = "calibers",
    params(("brandSlug" = String, Path, description = "Slug of the calibre's brand (its maker)"), ("ref" = String, Path, description = "Calibre slug, or any spelling of its reference")),
    responses((status = 200, description = "The calibre", body = CaliberDetail)))]
pub async fn get_caliber(
    work: Work,
    Extension(media): Extension<MediaBase>,
    PathParams((brand_slug, reference)): PathParams<(String, String)>,
) -> ApiResult<Json<CaliberDetail>> {
    work.run(move |app| {
        let brand = assemble::brand_by_slug(app, &brand_slug)?;
        let by_slug = match Slug::parse(&reference) {
            Ok(slug) => app.store().catalogue().caliber_by_slug(brand.id, &slug)?,
            Err(_) => None,
        };
        let caliber = match by_slug {
            Some(caliber) => Some(caliber),
            None => app
                .store()
                .catalogue()
                .caliber_by_reference(brand.id, &normalize_reference(&reference))?,
        }
        .ok_or_else(|| {
            ApiError::not_found(
                format!("brand `{}` has no calibre `{reference}`", brand.slug),
                "GET /v1/sitemap/calibers lists every calibre as brandSlug/slug",
            )
        })?;
        let mut request = SearchRequest::filtered(
            DocKind::Model,
            Filters {
                caliber_id: Some(caliber.id.0),
                ..Filters::default()
            },
        );
        request.sort = SortOrder::NameAsc;
        let hits = app.index().search(&request)?;
        let mut lookups = Lookups::new(&media);
        Ok(Json(CaliberDetail {
            caliber: assemble::caliber_view(app, &caliber, &mut lookups)?,
            model_count: hits.total,
            models: assemble::model_items(app, &hits.ids, &mut lookups)?,
        }))
    })
    .await
}
