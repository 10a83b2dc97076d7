//! `GET /brands`, `/brands/highlighted`, `/brands/{slug}`, `/brands/{brandSlug}/series` and
//! `/brands/{brandSlug}/series/{seriesSlug}`.

use super::assemble::{self, Lookups};
use super::error::ApiResult;
use super::listings::MediaBase;
use super::params::{list_request, PageParams, Pagination, Params, PathParams, SortParam};
use super::views::{BrandDetail, BrandItem, HighlightedBrands, Page, SeriesDetail, SeriesItem};
#[allow(unused_imports)] // named in the OpenAPI annotations
use super::views::{BrandPage, SeriesPage};
use crate::api::layers::capacity::Work;
use crate::app::App;
use crate::domain::{BrandId, Series, SeriesId};
use axum::{Extension, Json};
use catalogue_index::{DocKind, Filters, SearchRequest, SortOrder};
use serde::Deserialize;

/// `sort` of the brand and series lists.
pub struct GroupSorts;

impl SortParam for GroupSorts {
    type Order = SortOrder;
    const DEFAULT: SortOrder = SortOrder::NameAsc;
    const RELEVANCE: SortOrder = SortOrder::Relevance;
    const CHOICES: &'static [(&'static str, SortOrder)] = &[
        ("name_asc", SortOrder::NameAsc),
        ("name_desc", SortOrder::NameDesc),
        ("models_desc", SortOrder::ModelsDesc),
        ("relevance", SortOrder::Relevance),
    ];
}

/// Query of `GET /brands` and `GET /brands/{brandSlug}/series`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GroupListParams {
    /// Free text over names, aliases and descriptions.
    q: Option<String>,
    /// Order; `name_asc` by default, `relevance` by default when `q` is given.
    #[param(value_type = Option<String>)]
    sort: Option<String>,
}

fn group_request(
    kind: DocKind,
    filters: Filters,
    params: &GroupListParams,
    pagination: Pagination,
) -> ApiResult<SearchRequest> {
    list_request::<GroupSorts>(
        kind,
        filters,
        params.q.as_deref(),
        params.sort.as_deref(),
        pagination,
    )
}

/// The series of `brand`, by name, at most `most`: the list a form of the console offers.
pub fn series_of(app: &App, brand: BrandId, most: usize) -> ApiResult<Vec<Series>> {
    let filters = Filters {
        brand_id: Some(brand.0),
        ..Filters::default()
    };
    let by_name = GroupListParams {
        q: None,
        sort: None,
    };
    let first = Pagination {
        page: 1,
        page_size: most,
    };
    let hits = (app.index()).search(&group_request(DocKind::Series, filters, &by_name, first)?)?;
    let mut series = Vec::with_capacity(hits.ids.len());
    for id in hits.ids {
        series.extend(app.store().catalogue().series(SeriesId(id))?);
    }
    Ok(series)
}

/// Brands, each with series and model counts and one representative picture.
#[utoipa::path(get, path = "/brands", operation_id = "list_brands", tag = "brands", params(PageParams, GroupListParams),
    responses((status = 200, description = "A page of brands", body = BrandPage)))]
pub async fn list_brands(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(params): Params<GroupListParams>,
) -> ApiResult<Json<Page<BrandItem>>> {
    work.run(move |app| {
        let pagination = page.pagination()?;
        let request = group_request(DocKind::Brand, Filters::default(), &params, pagination)?;
        let hits = app.index().search(&request)?;
        let mut data = Vec::with_capacity(hits.ids.len());
        for id in hits.ids {
            if let Some(brand) = app.store().catalogue().brand(BrandId(id))? {
                data.push(assemble::brand_item(app, &brand, &media.0)?);
            }
        }
        Ok(Json(pagination.wrap(data, hits.total)))
    })
    .await
}

/// Brands in fixed editorial order (a hand-picked row, not a ranking).
#[utoipa::path(get, path = "/brands/highlighted", operation_id = "list_highlighted_brands", tag = "brands",
    responses((status = 200, description = "The editorial row", body = HighlightedBrands)))]
pub async fn highlighted_brands(
    work: Work,
    Extension(media): Extension<MediaBase>,
) -> ApiResult<Json<HighlightedBrands>> {
    work.run(move |app| {
        let data = app
            .store()
            .catalogue()
            .highlighted_brands()?
            .iter()
            .map(|brand| assemble::brand_item(app, brand, &media.0))
            .collect::<ApiResult<_>>()?;
        Ok(Json(HighlightedBrands { data }))
    })
    .await
}

/// One brand, including `stats`.
#[utoipa::path(get, path = "/brands/{slug}", operation_id = "get_brand", tag = "brands",
    params(("slug" = String, Path, description = "Brand slug")),
    responses((status = 200, description = "The brand", body = BrandDetail)))]
pub async fn get_brand(
    work: Work,
    Extension(media): Extension<MediaBase>,
    PathParams(slug): PathParams<String>,
) -> ApiResult<Json<BrandDetail>> {
    work.run(move |app| {
        let brand = assemble::brand_by_slug(app, &slug)?;
        Ok(Json(assemble::brand_detail(app, &brand, &media)?))
    })
    .await
}

/// A brand's series, each with its model count and lead model.
#[utoipa::path(get, path = "/brands/{brandSlug}/series", operation_id = "list_series", tag = "brands",
    params(("brandSlug" = String, Path, description = "Brand slug"), PageParams, GroupListParams),
    responses((status = 200, description = "A page of series", body = SeriesPage)))]
pub async fn list_series(
    work: Work,
    Extension(media): Extension<MediaBase>,
    PathParams(brand_slug): PathParams<String>,
    Params(page): Params<PageParams>,
    Params(params): Params<GroupListParams>,
) -> ApiResult<Json<Page<SeriesItem>>> {
    work.run(move |app| {
        let brand = assemble::brand_by_slug(app, &brand_slug)?;
        let pagination = page.pagination()?;
        let filters = Filters {
            brand_id: Some(brand.id.0),
            ..Filters::default()
        };
        let hits = app.index().search(&group_request(
            DocKind::Series,
            filters,
            &params,
            pagination,
        )?)?;
        let mut lookups = Lookups::new(&media);
        let mut data = Vec::with_capacity(hits.ids.len());
        for id in hits.ids {
            if let Some(series) = app.store().catalogue().series(SeriesId(id))? {
                data.push(assemble::series_item(app, &series, &mut lookups)?);
            }
        }
        Ok(Json(pagination.wrap(data, hits.total)))
    })
    .await
}

/// One series, including its parent brand, lead model and `stats`.
#[utoipa::path(get, path = "/brands/{brandSlug}/series/{seriesSlug}", operation_id = "get_series", tag = "brands",
    params(("brandSlug" = String, Path, description = "Brand slug"), ("seriesSlug" = String, Path, description = "Series slug")),
    responses((status = 200, description = "The series", body = SeriesDetail)))]
pub async fn get_series(
    work: Work,
    Extension(media): Extension<MediaBase>,
    PathParams((brand_slug, series_slug)): PathParams<(String, String)>,
) -> ApiResult<Json<SeriesDetail>> {
    work.run(move |app| {
        let brand = assemble::brand_by_slug(app, &brand_slug)?;
        let series = assemble::series_by_slug(app, &brand, &series_slug)?;
        Ok(Json(assemble::series_detail(app, &brand, &series, &media)?))
    })
    .await
}
