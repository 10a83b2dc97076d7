//! `GET /sitemap/models`, `/sitemap/catalog`, `/sitemap/calibers`: every entity that has a
//! page, as list pages of slugs and last-modified dates (up to 50,000 entries a page, the
//! sitemap protocol's cap, which is also the default).

use super::assemble::Lookups;
use super::error::ApiResult;
use super::listings::MediaBase;
use super::params::{Pagination, Params, MAX_SITEMAP_PAGE_SIZE};
use super::views::{CaliberSitemapEntry, CatalogSitemapEntry, ModelSitemapEntry, Page};
#[allow(unused_imports)] // named in the OpenAPI annotations
use super::views::{CaliberSitemapPage, CatalogSitemapPage, ModelSitemapPage};
use crate::api::layers::capacity::Work;
use crate::domain::{Brand, BrandId, ModelId};
use axum::{Extension, Json};
use catalogue_index::{DocKind, Filters, SearchRequest};
use serde::Deserialize;
use std::collections::HashMap;

/// Query of the sitemap lists.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct SitemapParams {
    /// Page number, from 1.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 2147483647, default = 1)]
    page: Option<String>,
    /// Entries per page, 1 to 50,000 (the sitemap protocol's cap).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 50000, default = 50000)]
    page_size: Option<String>,
}

impl SitemapParams {
    fn pagination(&self) -> ApiResult<Pagination> {
        Pagination::parse(
            self.page.as_deref(),
            self.page_size.as_deref(),
            MAX_SITEMAP_PAGE_SIZE,
            MAX_SITEMAP_PAGE_SIZE,
        )
    }
}

/// Every model's URL identity and last-modified date, in id order.
#[utoipa::path(get, path = "/sitemap/models", operation_id = "list_sitemap_models", tag = "sitemap", params(SitemapParams),
    responses((status = 200, description = "A page of model entries", body = ModelSitemapPage)))]
pub async fn models(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Params(params): Params<SitemapParams>,
) -> ApiResult<Json<Page<ModelSitemapEntry>>> {
    work.run(move |app| {
        let pagination = params.pagination()?;
        let mut request = SearchRequest::filtered(DocKind::Model, Filters::default());
        request.offset = pagination.offset();
        request.limit = pagination.page_size;
        let hits = app.index().search(&request)?;
        let ids: Vec<ModelId> = hits.ids.iter().map(|id| ModelId(*id)).collect();
        let mut lookups = Lookups::new(&media);
        let mut data = Vec::with_capacity(ids.len());
        for model in app.store().catalogue().models(&ids)? {
            if let Some(brand) = lookups.brand(app, model.brand_id)? {
                data.push(ModelSitemapEntry {
                    id: model.id.to_string(),
                    brand_slug: brand.slug.to_string(),
                    slug: model.slug.to_string(),
                    last_modified: model.updated_at.to_rfc3339(),
                });
            }
        }
        Ok(Json(pagination.wrap(data, hits.total)))
    })
    .await
}

fn brands_by_id(app: &crate::app::App) -> ApiResult<HashMap<BrandId, Brand>> {
    Ok(app
        .store()
        .catalogue()
        .brands()
        .map(|b| b.map(|b| (b.id, b)))
        .collect::<Result<_, _>>()?)
}

/// Every brand, each followed by its series, by slug.
#[utoipa::path(get, path = "/sitemap/catalog", operation_id = "list_sitemap_catalog", tag = "sitemap", params(SitemapParams),
    responses((status = 200, description = "A page of brand and series entries", body = CatalogSitemapPage)))]
pub async fn catalog(
    work: Work,
    Params(params): Params<SitemapParams>,
) -> ApiResult<Json<Page<CatalogSitemapEntry>>> {
    work.run(move |app| {
        let pagination = params.pagination()?;
        let brands = brands_by_id(app)?;
        let mut entries: Vec<((String, String), CatalogSitemapEntry)> = brands
            .values()
            .map(|b| {
                let entry = CatalogSitemapEntry {
                    kind: "brand",
                    brand_slug: b.slug.to_string(),
                    series_slug: None,
                    last_modified: b.updated_at.to_rfc3339(),
                };
                ((b.slug.to_string(), String::new()), entry)
            })
            .collect();
        for series in app.store().catalogue().all_series() {
            let series = series?;
            if let Some(brand) = brands.get(&series.brand_id) {
                let entry = CatalogSitemapEntry {
                    kind: "series",
                    brand_slug: brand.slug.to_string(),
                    series_slug: Some(series.slug.to_string()),
                    last_modified: series.updated_at.to_rfc3339(),
                };
                entries.push(((brand.slug.to_string(), series.slug.to_string()), entry));
            }
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Json(
            pagination.slice(entries.into_iter().map(|(_, e)| e).collect()),
        ))
    })
    .await
}

/// Every movement, by brand slug then slug.
#[utoipa::path(get, path = "/sitemap/calibers", operation_id = "list_sitemap_calibers", tag = "sitemap", params(SitemapParams),
    responses((status = 200, description = "A page of calibre entries", body = CaliberSitemapPage)))]
pub async fn calibers(
    work: Work,
    Params(params): Params<SitemapParams>,
) -> ApiResult<Json<Page<CaliberSitemapEntry>>> {
    work.run(move |app| {
        let pagination = params.pagination()?;
        let brands = brands_by_id(app)?;
        let mut entries = Vec::new();
        for caliber in app.store().catalogue().calibers() {
            let caliber = caliber?;
            if let Some(brand) = brands.get(&caliber.brand_id) {
                entries.push(CaliberSitemapEntry {
                    brand_slug: brand.slug.to_string(),
                    slug: caliber.slug.to_string(),
                    reference: caliber.reference,
                    last_modified: caliber.updated_at.to_rfc3339(),
                });
            }
        }
        entries.sort_by(|a, b| (&a.brand_slug, &a.slug).cmp(&(&b.brand_slug, &b.slug)));
        Ok(Json(pagination.slice(entries)))
    })
    .await
}
