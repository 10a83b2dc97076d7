//! `GET /brands`, `/brands/highlighted`, `/brands/{slug}`, `/brands/{brandSlug}/series` and
//! `/brands/{brandSlug}/series/{seriesSlug}`.

use super::assemble::{self, Lookups};
use super::error::ApiResult;
use super::params::{list_request, Page, Pagination, Params, PathParams, SortParam};
use super::views::{BrandDetail, BrandItem, SeriesDetail, SeriesItem};
use super::AppState;
use crate::domain::{BrandId, SeriesId};
use axum::extract::State;
use axum::Json;
use catalogue_index::{DocKind, Filters, SearchRequest, SortOrder};
use serde::{Deserialize, Serialize};

/// `sort` of the brand and series lists.
pub struct GroupSorts;

impl SortParam for GroupSorts {
    const CHOICES: &'static [(&'static str, SortOrder)] = &[
        ("name_asc", SortOrder::NameAsc),
        ("name_desc", SortOrder::NameDesc),
        ("models_desc", SortOrder::ModelsDesc),
        ("relevance", SortOrder::Relevance),
    ];
}

/// Query of `GET /brands` and `GET /brands/{brandSlug}/series`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupListParams {
    page: Option<String>,
    page_size: Option<String>,
    q: Option<String>,
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

pub async fn list_brands(
    State(app): State<AppState>,
    Params(params): Params<GroupListParams>,
) -> ApiResult<Json<Page<BrandItem>>> {
    let pagination = Pagination::list(params.page.as_deref(), params.page_size.as_deref())?;
    let request = group_request(DocKind::Brand, Filters::default(), &params, pagination)?;
    let hits = app.index.search(&request)?;
    let mut data = Vec::with_capacity(hits.ids.len());
    for id in hits.ids {
        if let Some(brand) = app.store.brand(BrandId(id))? {
            data.push(assemble::brand_item(&app, &brand)?);
        }
    }
    Ok(Json(pagination.wrap(data, hits.total)))
}

/// `{data}` without paging.
#[derive(Debug, Serialize)]
pub struct DataOnly<T> {
    data: Vec<T>,
}

pub async fn highlighted_brands(
    State(app): State<AppState>,
) -> ApiResult<Json<DataOnly<BrandItem>>> {
    let data = app
        .store
        .highlighted_brands()?
        .iter()
        .map(|brand| assemble::brand_item(&app, brand))
        .collect::<ApiResult<_>>()?;
    Ok(Json(DataOnly { data }))
}

pub async fn get_brand(
    State(app): State<AppState>,
    PathParams(slug): PathParams<String>,
) -> ApiResult<Json<BrandDetail>> {
    let brand = assemble::brand_by_slug(&app, &slug)?;
    Ok(Json(assemble::brand_detail(&app, &brand)?))
}

pub async fn list_series(
    State(app): State<AppState>,
    PathParams(brand_slug): PathParams<String>,
    Params(params): Params<GroupListParams>,
) -> ApiResult<Json<Page<SeriesItem>>> {
    let brand = assemble::brand_by_slug(&app, &brand_slug)?;
    let pagination = Pagination::list(params.page.as_deref(), params.page_size.as_deref())?;
    let filters = Filters {
        brand_id: Some(brand.id.0),
        ..Filters::default()
    };
    let hits = app.index.search(&group_request(
        DocKind::Series,
        filters,
        &params,
        pagination,
    )?)?;
    let mut lookups = Lookups::default();
    let mut data = Vec::with_capacity(hits.ids.len());
    for id in hits.ids {
        if let Some(series) = app.store.series(SeriesId(id))? {
            data.push(assemble::series_item(&app, &series, &mut lookups)?);
        }
    }
    Ok(Json(pagination.wrap(data, hits.total)))
}

pub async fn get_series(
    State(app): State<AppState>,
    PathParams((brand_slug, series_slug)): PathParams<(String, String)>,
) -> ApiResult<Json<SeriesDetail>> {
    let brand = assemble::brand_by_slug(&app, &brand_slug)?;
    let series = assemble::series_by_slug(&app, &brand, &series_slug)?;
    Ok(Json(assemble::series_detail(&app, &brand, &series)?))
}
