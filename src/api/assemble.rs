//! Building response bodies from records: model list items, brand and series items with their
//! counts, pictures and lead models, calibre views and stats. Handlers call these; nothing else
//! builds a view, so every endpoint shows an entity the same way.

use super::error::{ApiError, ApiResult};
use super::views::*;
use crate::app::App;
use crate::domain::{Brand, BrandId, Caliber, Model, ModelId, Series, SeriesId, Slug};
use catalogue_index::{DocKind, Filters};
use std::collections::HashMap;

/// Brands and series read while building one response, each read once.
#[derive(Default)]
pub struct Lookups {
    brands: HashMap<BrandId, Option<Brand>>,
    series: HashMap<SeriesId, Option<Series>>,
}

impl Lookups {
    pub fn brand(&mut self, app: &App, id: BrandId) -> ApiResult<Option<&Brand>> {
        cached(&mut self.brands, id, || app.store.brand(id))
    }

    pub fn series(&mut self, app: &App, id: SeriesId) -> ApiResult<Option<&Series>> {
        cached(&mut self.series, id, || app.store.series(id))
    }
}

fn cached<K: std::hash::Hash + Eq, V>(
    map: &mut HashMap<K, Option<V>>,
    key: K,
    load: impl FnOnce() -> crate::store::StoreResult<Option<V>>,
) -> ApiResult<Option<&V>> {
    let slot = match map.entry(key) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => e.insert(load()?),
    };
    Ok(slot.as_ref())
}

/// The brand with this slug, or 404.
pub fn brand_by_slug(app: &App, slug: &str) -> ApiResult<Brand> {
    Slug::parse(slug)
        .ok()
        .map(|slug| app.store.brand_by_slug(&slug))
        .transpose()?
        .flatten()
        .ok_or_else(|| {
            ApiError::not_found(
                format!("no brand with slug `{slug}`"),
                "GET /v1/brands lists the brands and their slugs",
            )
        })
}

/// The brand's series with this slug, or 404.
pub fn series_by_slug(app: &App, brand: &Brand, slug: &str) -> ApiResult<Series> {
    Slug::parse(slug)
        .ok()
        .map(|slug| app.store.series_by_slug(brand.id, &slug))
        .transpose()?
        .flatten()
        .ok_or_else(|| {
            ApiError::not_found(
                format!("brand `{}` has no series with slug `{slug}`", brand.slug),
                format!(
                    "GET /v1/brands/{}/series lists its series and their slugs",
                    brand.slug
                ),
            )
        })
}

/// List items of the models with these ids, in this order.
pub fn model_items(app: &App, ids: &[u64], lookups: &mut Lookups) -> ApiResult<Vec<ModelListItem>> {
    let ids: Vec<ModelId> = ids.iter().map(|id| ModelId(*id)).collect();
    let models = app.store.models(&ids)?;
    models
        .iter()
        .map(|m| model_item(app, m, lookups))
        .collect::<ApiResult<Vec<_>>>()
        .map(|items| items.into_iter().flatten().collect())
}

/// The list item of `model`; `None` if its brand or series vanished (never after a clean write).
pub fn model_item(
    app: &App,
    model: &Model,
    lookups: &mut Lookups,
) -> ApiResult<Option<ModelListItem>> {
    let brand = lookups.brand(app, model.brand_id)?.map(EntityRef::from);
    let series = lookups.series(app, model.series_id)?.map(EntityRef::from);
    let (Some(brand), Some(series)) = (brand, series) else {
        return Ok(None);
    };
    let front = model.front_picture();
    let cropped = front.and_then(|p| p.cropped_url.clone());
    Ok(Some(ModelListItem {
        id: model.id.to_string(),
        name: model.name.clone(),
        reference_number: model.reference_number.clone(),
        slug: model.slug.to_string(),
        thumbnail_is_cropped: cropped.is_some(),
        thumbnail_url: cropped.or_else(|| front.map(|p| p.url.clone())),
        brand,
        series,
        listing_count: app.store.listing_count(model.id)?,
    }))
}

fn brand_filter(brand: BrandId) -> Filters {
    Filters {
        brand_id: Some(brand.0),
        ..Filters::default()
    }
}

fn series_filter(series: SeriesId) -> Filters {
    Filters {
        series_id: Some(series.0),
        ..Filters::default()
    }
}

/// A brand's list item: counts, and the FRONT picture of its model with most listings, then newest.
pub fn brand_item(app: &App, brand: &Brand) -> ApiResult<BrandItem> {
    let filter = brand_filter(brand.id);
    let with_picture = Filters {
        has_front_picture: true,
        ..filter.clone()
    };
    let picture = match app.index.lead_model(&with_picture)? {
        Some(id) => app.store.model(ModelId(id))?.and_then(|m| {
            m.front_picture().map(|p| BrandPicture {
                url: p.url.clone(),
                cropped_url: p.cropped_url.clone(),
            })
        }),
        None => None,
    };
    Ok(BrandItem {
        id: brand.id.to_string(),
        name: brand.name.clone(),
        slug: brand.slug.to_string(),
        series_count: app.index.count(DocKind::Series, &filter)?,
        model_count: app.index.count(DocKind::Model, &filter)?,
        picture,
    })
}

pub fn brand_detail(app: &App, brand: &Brand) -> ApiResult<BrandDetail> {
    Ok(BrandDetail {
        item: brand_item(app, brand)?,
        aliases: brand.aliases.clone(),
        description: brand.description.clone(),
        country: brand.country.clone(),
        founded: brand.founded,
        updated_at: brand.updated_at.to_rfc3339(),
        stats: app.index.model_stats(&brand_filter(brand.id))?.into(),
    })
}

/// A series' list item: model count and lead model (most listings, then newest).
pub fn series_item(app: &App, series: &Series, lookups: &mut Lookups) -> ApiResult<SeriesItem> {
    let filter = series_filter(series.id);
    let lead_model = match app.index.lead_model(&filter)? {
        Some(id) => model_items(app, &[id], lookups)?.pop(),
        None => None,
    };
    Ok(SeriesItem {
        id: series.id.to_string(),
        name: series.name.clone(),
        slug: series.slug.to_string(),
        model_count: app.index.count(DocKind::Model, &filter)?,
        lead_model,
    })
}

pub fn series_detail(app: &App, brand: &Brand, series: &Series) -> ApiResult<SeriesDetail> {
    let mut lookups = Lookups::default();
    Ok(SeriesDetail {
        item: series_item(app, series, &mut lookups)?,
        description: series.description.clone(),
        updated_at: series.updated_at.to_rfc3339(),
        brand: brand.into(),
        stats: app.index.model_stats(&series_filter(series.id))?.into(),
    })
}

/// A calibre with its specification, complications and parent.
pub fn caliber_view(app: &App, caliber: &Caliber, lookups: &mut Lookups) -> ApiResult<CaliberView> {
    let brand = lookups
        .brand(app, caliber.brand_id)?
        .map(EntityRef::from)
        .ok_or(ApiError::Internal)?;
    let mut complications = Vec::with_capacity(caliber.complication_ids.len());
    for id in &caliber.complication_ids {
        if let Some(c) = app.store.complication(*id)? {
            complications.push(ComplicationView {
                id: c.id.to_string(),
                slug: c.slug.to_string(),
                name: c.name,
            });
        }
    }
    let parent = match caliber
        .parent_id
        .map(|id| app.store.caliber(id))
        .transpose()?
        .flatten()
    {
        Some(parent) => lookups
            .brand(app, parent.brand_id)?
            .map(|b| ParentCaliber::new(&parent, b)),
        None => None,
    };
    Ok(CaliberView {
        id: caliber.id.to_string(),
        slug: caliber.slug.to_string(),
        reference: caliber.reference.clone(),
        name: caliber.name.clone(),
        kind: caliber.kind.clone(),
        brand,
        diameter: caliber.diameter,
        height: caliber.height,
        jewels: caliber.jewels,
        frequency: caliber.frequency,
        power_reserve: caliber.power_reserve,
        complications,
        parent,
    })
}

/// The full model.
pub fn full_model(app: &App, model: &Model) -> ApiResult<FullModel> {
    let mut lookups = Lookups::default();
    let brand = lookups
        .brand(app, model.brand_id)?
        .map(EntityRef::from)
        .ok_or(ApiError::Internal)?;
    let series = lookups
        .series(app, model.series_id)?
        .map(EntityRef::from)
        .ok_or(ApiError::Internal)?;
    let caliber = match model
        .caliber_id
        .map(|id| app.store.caliber(id))
        .transpose()?
        .flatten()
    {
        Some(caliber) => Some(caliber_view(app, &caliber, &mut lookups)?),
        None => None,
    };
    Ok(FullModel {
        id: model.id.to_string(),
        name: model.name.clone(),
        reference_number: model.reference_number.clone(),
        alternate_references: model.alternate_references.clone(),
        slug: model.slug.to_string(),
        description: model.description.clone(),
        updated_at: model.updated_at.to_rfc3339(),
        spec: model.spec.clone(),
        brand,
        series,
        caliber,
        pictures: model.pictures.iter().map(PictureView::from).collect(),
    })
}
