//! `GET /models`, `GET /models/{brandSlug}/{slug}` and `GET /models/compare`.

use super::assemble::{self, Lookups};
use super::error::{internal, ApiError, ApiResult};
use super::listings::{stats_currency, MediaBase, StatsCache};
use super::model_search::{SpecParams, SpecTermParams};
use super::params::{list_request, PageParams, Params, PathParams, SortParam};
#[allow(unused_imports)] // named in the OpenAPI annotations
use super::views::FullModel;
use super::views::{ComparedModel, FacetsView, ModelComparison, ModelPage};
use crate::api::layers::capacity::Work;
use crate::app::App;
use crate::domain::{Brand, Model, ModelId, Slug};
use axum::extract::OriginalUri;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use catalogue_index::{DocKind, FacetCounts, Filters, SortOrder};
use serde::Deserialize;
use std::sync::Arc;

/// `sort` of `GET /models`.
pub struct ModelSorts;

impl SortParam for ModelSorts {
    type Order = SortOrder;
    const DEFAULT: SortOrder = SortOrder::NameAsc;
    const RELEVANCE: SortOrder = SortOrder::Relevance;
    const CHOICES: &'static [(&'static str, SortOrder)] = &[
        ("relevance", SortOrder::Relevance),
        ("newest", SortOrder::Newest),
        ("name_asc", SortOrder::NameAsc),
        ("name_desc", SortOrder::NameDesc),
        ("reference_asc", SortOrder::ReferenceAsc),
    ];
}

/// Query of `GET /models`. `brandSlug` is accepted as an alias of `brand`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ModelListParams {
    /// Free text; also resolves a reference number in any spelling, or a reference prefix.
    q: Option<String>,
    /// Exact model id.
    id: Option<String>,
    /// Brand slug.
    brand: Option<String>,
    /// Alias of `brand`.
    brand_slug: Option<String>,
    /// Series: `brandSlug/seriesSlug`, or a series slug within `brand` or unique across brands.
    series: Option<String>,
    /// Calibre: `brandSlug/caliberSlug`, or a calibre slug only one brand has.
    caliber: Option<String>,
    /// Order; `name_asc` by default, `relevance` by default when `q` is given.
    #[param(value_type = Option<String>)]
    sort: Option<String>,
}

/// Models, searched by text or reference, filtered and sorted.
/// Searched by text (typos tolerated in words) or reference, filtered by catalogue and
/// specification, sorted, and with facet counts when asked.
#[utoipa::path(get, path = "/models", operation_id = "list_models", tag = "models", params(PageParams, ModelListParams, SpecParams, SpecTermParams),
    responses((status = 200, description = "A page of models", body = ModelPage)))]
pub async fn list_models(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(params): Params<ModelListParams>,
    Params(spec): Params<SpecParams>,
    terms: SpecTermParams,
) -> ApiResult<Json<ModelPage>> {
    work.run(move |app| {
        let pagination = page.pagination()?;
        let facets = spec.facets()?;
        let typo_tolerance = spec.typo_tolerance()?;
        let spec_filters = spec.filters(app, terms)?;
        let Some(mut filters) = model_filters(app, &params)? else {
            let empty = facets
                .iter()
                .map(|&facet| FacetCounts {
                    facet,
                    values: Vec::new(),
                })
                .collect();
            let facets = (!facets.is_empty())
                .then(|| FacetsView::of(app, empty))
                .transpose()?;
            return Ok(Json(ModelPage::new(pagination.wrap(Vec::new(), 0), facets)));
        };
        filters.spec = spec_filters;
        let mut request = list_request::<ModelSorts>(
            DocKind::Model,
            filters,
            params.q.as_deref(),
            params.sort.as_deref(),
            pagination,
        )?;
        if let Some(text) = &mut request.text {
            text.typo_tolerance = typo_tolerance;
        }
        let hits = app.index().search(&request)?;
        let data = assemble::model_items(app, &hits.ids, &mut Lookups::new(&media))?;
        let facets = match facets.is_empty() {
            true => None,
            false => Some(FacetsView::of(app, app.index().facets(&request, &facets)?)?),
        };
        Ok(Json(ModelPage::new(
            pagination.wrap(data, hits.total),
            facets,
        )))
    })
    .await
}

/// The index filters of the request; `None` when `id` names no model (an empty page).
fn model_filters(app: &App, params: &ModelListParams) -> ApiResult<Option<Filters>> {
    let mut filters = Filters::default();
    if let Some(id) = &params.id {
        match id.parse::<ModelId>() {
            // A merged model's id stands for the model it was merged into.
            Ok(id) => filters.id = Some(app.store().duplicates().merged_into(id)?.unwrap_or(id).0),
            Err(_) => return Ok(None),
        }
    }
    let brand = match params.brand.as_deref().or(params.brand_slug.as_deref()) {
        Some(slug) => Some(assemble::brand_by_slug(app, slug)?),
        None => None,
    };
    filters.brand_id = brand.as_ref().map(|b| b.id.0);
    if let Some(value) = &params.series {
        filters.series_id = Some(resolve_series(app, value, brand.as_ref())?);
    }
    if let Some(value) = &params.caliber {
        filters.caliber_id = Some(resolve_caliber(app, value)?);
    }
    Ok(Some(filters))
}

/// A filter value naming an entity scoped by brand: `brandSlug/slug`, or a bare slug that
/// must then name exactly one entity.
struct Scoped<'a> {
    parameter: &'static str,
    what: &'static str,
    list_hint: &'a str,
}

impl Scoped<'_> {
    fn not_found(&self, value: &str) -> ApiError {
        ApiError::not_found(
            format!("no {} `{value}`", self.what),
            self.list_hint.to_owned(),
        )
    }

    /// Resolves `value` given lookups by brand + slug and by bare slug (with candidate names).
    fn resolve(
        &self,
        app: &App,
        value: &str,
        scope: Option<&Brand>,
        by_brand: impl Fn(&Brand, &Slug) -> ApiResult<Option<u64>>,
        by_slug: impl Fn(&Slug) -> ApiResult<Vec<(u64, String)>>,
    ) -> ApiResult<u64> {
        if let Some((brand_slug, slug)) = value.split_once('/') {
            let brand = assemble::brand_by_slug(app, brand_slug)?;
            let slug = Slug::parse(slug).map_err(|_| self.not_found(value))?;
            return by_brand(&brand, &slug)?.ok_or_else(|| self.not_found(value));
        }
        let slug = Slug::parse(value).map_err(|_| self.not_found(value))?;
        if let Some(brand) = scope {
            return by_brand(brand, &slug)?.ok_or_else(|| self.not_found(value));
        }
        let mut candidates = by_slug(&slug)?;
        match candidates.len() {
            0 => Err(self.not_found(value)),
            1 => Ok(candidates.remove(0).0),
            _ => {
                let names: Vec<String> = candidates.into_iter().map(|(_, name)| name).collect();
                Err(ApiError::invalid(
                    format!("{} `{value}` exists in several brands", self.what),
                    format!(
                        "name one as {}=brandSlug/{value}: {}",
                        self.parameter,
                        names.join(", ")
                    ),
                ))
            }
        }
    }
}

fn brand_slug_of(app: &App, brand: crate::domain::BrandId) -> ApiResult<String> {
    Ok(app
        .store()
        .catalogue()
        .brand(brand)?
        .map(|b| b.slug.to_string())
        .unwrap_or_default())
}

fn resolve_series(app: &App, value: &str, scope: Option<&Brand>) -> ApiResult<u64> {
    let scoped = Scoped {
        parameter: "series",
        what: "series",
        list_hint: "GET /v1/brands/{brandSlug}/series lists a brand's series and their slugs",
    };
    scoped.resolve(
        app,
        value,
        scope,
        |brand, slug| {
            Ok(app
                .store()
                .catalogue()
                .series_by_slug(brand.id, slug)?
                .map(|s| s.id.0))
        },
        |slug| {
            app.store()
                .catalogue()
                .series_with_slug(slug)?
                .into_iter()
                .map(|s| {
                    Ok((
                        s.id.0,
                        format!("{}/{}", brand_slug_of(app, s.brand_id)?, s.slug),
                    ))
                })
                .collect()
        },
    )
}

/// Calibres belong to their maker (ETA, Sellita...), not to the model's brand, so a bare
/// calibre slug is not scoped by the `brand` filter.
fn resolve_caliber(app: &App, value: &str) -> ApiResult<u64> {
    let scoped = Scoped {
        parameter: "caliber",
        what: "calibre",
        list_hint: "GET /v1/sitemap/calibers lists every calibre as brandSlug/slug",
    };
    scoped.resolve(
        app,
        value,
        None,
        |brand, slug| {
            Ok(app
                .store()
                .catalogue()
                .caliber_by_slug(brand.id, slug)?
                .map(|c| c.id.0))
        },
        |slug| {
            app.store()
                .catalogue()
                .calibers_with_slug(slug)?
                .into_iter()
                .map(|c| {
                    Ok((
                        c.id.0,
                        format!("{}/{}", brand_slug_of(app, c.brand_id)?, c.slug),
                    ))
                })
                .collect()
        },
    )
}

/// The full model: every field present, null or [] when empty.
#[utoipa::path(get, path = "/models/{brandSlug}/{slug}", operation_id = "get_model", tag = "models",
    params(("brandSlug" = String, Path, description = "Brand slug"), ("slug" = String, Path, description = "Model slug, unique within its brand")),
    responses((status = 200, description = "The model", body = FullModel),
        (status = 301, description = "The model was merged into another: `Location` is its path, the body names it")))]
pub async fn get_model(
    work: Work,
    Extension(media): Extension<MediaBase>,
    OriginalUri(uri): OriginalUri,
    PathParams((brand_slug, slug)): PathParams<(String, String)>,
) -> ApiResult<Response> {
    work.run(move |app| {
        let brand = assemble::brand_by_slug(app, &brand_slug)?;
        let model = match assemble::model_by_slug(app, &brand, &slug) {
            Ok(model) => model,
            Err(not_found) => return moved_or(app, &brand, &slug, uri.path(), not_found),
        };
        Ok(Json(assemble::full_model(app, &model, &media)?).into_response())
    })
    .await
}

/// A merged model's path: `301 Moved Permanently` to the model it was merged into, with a
/// JSON body naming it; any other unknown slug: `not_found`.
fn moved_or(
    app: &App,
    brand: &Brand,
    slug: &str,
    path: &str,
    not_found: ApiError,
) -> ApiResult<Response> {
    let Some(keeper) = merged_keeper(app, brand, slug)? else {
        return Err(not_found);
    };
    let prefix = if path.starts_with("/v1/") { "/v1" } else { "" };
    let location = format!("{prefix}/models/{}/{}", brand.slug, keeper.slug);
    let body = serde_json::json!({
        "message": format!("model `{slug}` of brand `{}` was merged into `{}`", brand.slug, keeper.slug),
        "location": location,
        "model": {"id": keeper.id.to_string(), "name": keeper.name, "slug": keeper.slug.to_string()},
    });
    let mut response = (StatusCode::MOVED_PERMANENTLY, Json(body)).into_response();
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    Ok(response)
}

/// The model that the brand's model `slug` was merged into, if it was.
fn merged_keeper(app: &App, brand: &Brand, slug: &str) -> ApiResult<Option<Model>> {
    let keeper = match Slug::parse(slug) {
        Ok(slug) => app.store().duplicates().merged_slug(brand.id, &slug)?,
        Err(_) => None,
    };
    Ok(keeper
        .map(|id| app.store().catalogue().model(id))
        .transpose()?
        .flatten())
}

/// How many models a comparison takes.
const COMPARED: std::ops::RangeInclusive<usize> = 2..=6;

/// Fields each model has its own value of: naming them as differences would say nothing.
const OWN_FIELDS: [&str; 4] = ["id", "slug", "updatedAt", "pictures"];

const COMPARE_EXAMPLE: &str =
    "GET /v1/models/compare?models=rolex/submariner-date-126610ln,tudor/black-bay-fifty-eight-79030n";

/// Query of `GET /models/compare`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CompareParams {
    /// Two to six models, comma-separated, each as `brandSlug/slug`.
    #[param(required = true)]
    models: Option<String>,
    /// Currency of the asking prices; USD by default.
    #[param(pattern = "^[A-Za-z]{3}$")]
    currency: Option<String>,
}

/// Two to six models side by side: every field of the full model, the fields on which they
/// differ, and each model's listing count and asking prices.
#[utoipa::path(get, path = "/models/compare", operation_id = "compare_models", tag = "models", params(CompareParams),
    responses((status = 200, description = "The models side by side", body = ModelComparison)))]
pub async fn compare_models(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Extension(cache): Extension<Arc<StatsCache>>,
    Params(params): Params<CompareParams>,
) -> ApiResult<Json<ModelComparison>> {
    work.run(move |app| {
        let named = compared_names(params.models.as_deref())?;
        let table = app.conversion_table()?;
        let code = stats_currency(table.as_deref(), params.currency.as_deref())?;
        let models = compared_models(app, &named)?;
        let side = side_by_side(app, &models, &media)?;
        let data = (models.iter().zip(side.models))
            .map(|(model, full)| {
                Ok(ComparedModel {
                    model: full,
                    listing_count: app.store().listings().listing_count(model.id)?,
                    asking_prices: cache.asking_prices(
                        app,
                        model.id,
                        table.as_deref(),
                        code.clone(),
                        None,
                    )?,
                })
            })
            .collect::<ApiResult<Vec<_>>>()?;
        Ok(Json(ModelComparison {
            data,
            differences: side.differences,
        }))
    })
    .await
}

/// Models side by side as `GET /models/compare` shows them: each full model, its fields as
/// JSON, and the fields on which they differ (the console's duplicate triage shows the same).
pub struct SideBySide {
    pub models: Vec<FullModel>,
    pub fields: Vec<serde_json::Value>,
    pub differences: Vec<String>,
}

/// `models` side by side.
pub fn side_by_side(app: &App, models: &[Model], media: &MediaBase) -> ApiResult<SideBySide> {
    let models = (models.iter())
        .map(|model| assemble::full_model(app, model, media))
        .collect::<ApiResult<Vec<_>>>()?;
    let fields = (models.iter())
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| internal(&error))?;
    let differences = differing_fields(&fields);
    Ok(SideBySide {
        models,
        fields,
        differences,
    })
}

/// The `(brandSlug, slug)` pairs `models` names: 400 unless two to six, each `brandSlug/slug`.
fn compared_names(models: Option<&str>) -> ApiResult<Vec<(&str, &str)>> {
    let models =
        models.ok_or_else(|| ApiError::invalid("`models` is required", COMPARE_EXAMPLE))?;
    let names: Vec<&str> = models.split(',').map(str::trim).collect();
    if !COMPARED.contains(&names.len()) {
        return Err(ApiError::invalid(
            format!(
                "`models` names {} model{}; a comparison takes {} to {}",
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                COMPARED.start(),
                COMPARED.end()
            ),
            COMPARE_EXAMPLE,
        ));
    }
    (names.into_iter())
        .map(|name| {
            name.split_once('/')
                .filter(|(brand, slug)| {
                    !brand.is_empty() && !slug.is_empty() && !slug.contains('/')
                })
                .ok_or_else(|| {
                    ApiError::invalid(
                        format!("`{name}` in `models` is not brandSlug/slug"),
                        COMPARE_EXAMPLE,
                    )
                })
        })
        .collect()
}

/// The models named, in order: 404 naming the first unknown one, 400 when one is named twice
/// (a merged model's slug stands for the model it was merged into, as on its own path).
fn compared_models(app: &App, named: &[(&str, &str)]) -> ApiResult<Vec<Model>> {
    let mut models: Vec<Model> = Vec::with_capacity(named.len());
    for (brand_slug, slug) in named {
        let brand = assemble::brand_by_slug(app, brand_slug)?;
        let model = match assemble::model_by_slug(app, &brand, slug) {
            Ok(model) => model,
            Err(not_found) => merged_keeper(app, &brand, slug)?.ok_or(not_found)?,
        };
        if models.iter().any(|seen| seen.id == model.id) {
            return Err(ApiError::invalid(
                format!("`models` names `{}/{}` twice", brand.slug, model.slug),
                "name each model once",
            ));
        }
        models.push(model);
    }
    Ok(models)
}

/// The fields of `models` (JSON objects of one shape) whose values are not all the same,
/// leaving out each model's own fields, in alphabetical order.
fn differing_fields(models: &[serde_json::Value]) -> Vec<String> {
    let Some((first, others)) = models.split_first() else {
        return Vec::new();
    };
    let Some(fields) = first.as_object() else {
        return Vec::new();
    };
    let mut differing: Vec<String> = (fields.iter())
        .filter(|(name, _)| !OWN_FIELDS.contains(&name.as_str()))
        .filter(|(name, value)| {
            others
                .iter()
                .any(|other| other.get(name.as_str()) != Some(*value))
        })
        .map(|(name, _)| name.clone())
        .collect();
    differing.sort();
    differing
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differing_fields_name_what_is_not_the_same_everywhere_but_own_fields() {
        let a = json!({"id": "1", "slug": "a", "updatedAt": "x", "pictures": [1],
            "name": "A", "diameter": 41.0, "caseMaterials": ["steel"], "brand": {"slug": "rolex"}});
        let b = json!({"id": "2", "slug": "b", "updatedAt": "y", "pictures": [],
            "name": "A", "diameter": 40.0, "caseMaterials": ["steel"], "brand": {"slug": "rolex"}});
        let c = json!({"id": "3", "slug": "c", "updatedAt": "z", "pictures": [],
            "name": "A", "diameter": 41.0, "caseMaterials": ["steel", "gold"], "brand": {"slug": "rolex"}});
        assert_eq!(differing_fields(&[a.clone(), b.clone()]), ["diameter"]);
        assert_eq!(
            differing_fields(&[a.clone(), b, c]),
            ["caseMaterials", "diameter"]
        );
        assert!(differing_fields(&[a.clone(), a]).is_empty());
    }

    #[test]
    fn compared_names_take_two_to_six_brand_slug_pairs() {
        assert_eq!(
            compared_names(Some("rolex/a, tudor/b")).ok(),
            Some(vec![("rolex", "a"), ("tudor", "b")])
        );
        for bad in [
            None,
            Some(""),
            Some("rolex/a"),
            Some("a/b,c/d,e/f,g/h,i/j,k/l,m/n"),
            Some("rolex/a,rolex"),
            Some("rolex/a,/b"),
            Some("rolex/a,rolex/"),
            Some("rolex/a,r/b/c"),
            Some("rolex/a,,rolex/b"),
        ] {
            let error = compared_names(bad).expect_err("rejected");
            assert_eq!(error.code(), "invalid_request", "{bad:?}");
        }
    }
}
