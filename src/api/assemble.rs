//! Building response bodies from records: model list items, brand and series items with their
//! counts, pictures and lead models, calibre views and stats, listings. Handlers call these; nothing else
//! builds a view, so every endpoint shows an entity the same way.

use super::error::{internal_because, ApiError, ApiResult};
use super::listings::MediaBase;
use super::views::*;
use crate::app::{App, ModelCard};
use crate::domain::price_history;
use crate::domain::rates::{display_price, ConversionTable};
use crate::domain::{
    Availability, Brand, BrandId, Caliber, Condition, Listing, ListingId, Model, ModelId, Picture,
    PictureId, PictureRecord, Provider, ProviderId, Series, SeriesId, Slug, Timestamp,
};
use crate::store::{cached, ReadAt};
use catalogue_index::{Filters, GenerationCache};
use std::collections::HashMap;
use std::sync::Arc;

/// Brands and series read while building one response, each read once, and the base URL
/// of re-hosted pictures. Those not read yet, and model cards, come from [`App::kept`] at the
/// store generation the response first needed one at.
pub struct Lookups {
    brands: HashMap<BrandId, Option<Brand>>,
    series: HashMap<SeriesId, Option<Series>>,
    read_at: Option<ReadAt>,
    media_base: Arc<str>,
}

impl Lookups {
    pub fn new(media: &MediaBase) -> Lookups {
        Lookups {
            brands: HashMap::new(),
            series: HashMap::new(),
            read_at: None,
            media_base: media.0.clone(),
        }
    }

    pub fn brand(&mut self, app: &App, id: BrandId) -> ApiResult<Option<&Brand>> {
        let at = self.read_at(app)?;
        Ok(cached(&mut self.brands, id, || {
            kept(app, &app.kept().brands, at, id, || {
                app.store().catalogue().brand(id)
            })
        })?)
    }

    pub fn series(&mut self, app: &App, id: SeriesId) -> ApiResult<Option<&Series>> {
        let at = self.read_at(app)?;
        Ok(cached(&mut self.series, id, || {
            kept(app, &app.kept().series, at, id, || {
                app.store().catalogue().series(id)
            })
        })?)
    }

    /// The model's card, `None` for no such model.
    fn model_card(&mut self, app: &App, id: ModelId) -> ApiResult<Option<Arc<ModelCard>>> {
        let at = self.read_at(app)?;
        Ok(kept(app, &app.kept().model_cards, at, id, || {
            read_model_card(app, id)
        })?)
    }

    /// Read before anything it keeps: what is read after it is at least as new.
    fn read_at(&mut self, app: &App) -> ApiResult<ReadAt> {
        Ok(match self.read_at {
            Some(at) => at,
            None => *self.read_at.insert(app.store().read_at()?),
        })
    }
}

/// The value of `key` kept in `cache` at `at`'s generation, or read by `load` and kept when
/// the store says the read was whole at it.
fn kept<K: std::hash::Hash + Eq + Copy, V: Clone>(
    app: &App,
    cache: &GenerationCache<K, Option<V>>,
    at: ReadAt,
    key: K,
    load: impl FnOnce() -> crate::store::StoreResult<Option<V>>,
) -> crate::store::StoreResult<Option<V>> {
    if let Some(value) = cache.get(at.generation.0, &key) {
        return Ok(value);
    }
    let value = load()?;
    if app.store().whole_since(&at) {
        cache.keep(at.generation.0, key, value.clone());
    }
    Ok(value)
}

fn read_model_card(app: &App, id: ModelId) -> crate::store::StoreResult<Option<Arc<ModelCard>>> {
    let Some(model) = app.store().catalogue().model(id)? else {
        return Ok(None);
    };
    let front_record = match model.front_picture() {
        Some(front) => picture_record(app, front)?,
        None => None,
    };
    Ok(Some(Arc::new(ModelCard {
        listing_count: app.store().listings().listing_count(model.id)?,
        front_record,
        model,
    })))
}

/// The brand with this slug, or 404.
pub fn brand_by_slug(app: &App, slug: &str) -> ApiResult<Brand> {
    Slug::parse(slug)
        .ok()
        .map(|slug| app.store().catalogue().brand_by_slug(&slug))
        .transpose()?
        .flatten()
        .ok_or_else(|| {
            ApiError::not_found(
                format!("no brand with slug `{slug}`"),
                "GET /v1/brands lists the brands and their slugs",
            )
        })
}

/// The brand's model with this slug, or 404.
pub fn model_by_slug(app: &App, brand: &Brand, slug: &str) -> ApiResult<Model> {
    Slug::parse(slug)
        .ok()
        .map(|slug| app.store().catalogue().model_by_slug(brand.id, &slug))
        .transpose()?
        .flatten()
        .ok_or_else(|| {
            ApiError::not_found(
                format!("brand `{}` has no model with slug `{slug}`", brand.slug),
                format!(
                    "GET /v1/models?brand={} lists its models and their slugs",
                    brand.slug
                ),
            )
        })
}

/// The brand's series with this slug, or 404.
pub fn series_by_slug(app: &App, brand: &Brand, slug: &str) -> ApiResult<Series> {
    Slug::parse(slug)
        .ok()
        .map(|slug| app.store().catalogue().series_by_slug(brand.id, &slug))
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

/// List items of the models with these ids, in this order; ids of no model are left out.
pub fn model_items(app: &App, ids: &[u64], lookups: &mut Lookups) -> ApiResult<Vec<ModelListItem>> {
    let mut items = Vec::with_capacity(ids.len());
    for id in ids {
        items.extend(model_item(app, ModelId(*id), lookups)?);
    }
    Ok(items)
}

/// The list item of the model with this id; `None` if it, its brand or its series vanished
/// (never after a clean write).
pub fn model_item(
    app: &App,
    id: ModelId,
    lookups: &mut Lookups,
) -> ApiResult<Option<ModelListItem>> {
    match lookups.model_card(app, id)? {
        Some(card) => card_item(app, &card, lookups),
        None => Ok(None),
    }
}

fn card_item(
    app: &App,
    card: &ModelCard,
    lookups: &mut Lookups,
) -> ApiResult<Option<ModelListItem>> {
    let model = &card.model;
    let brand = lookups.brand(app, model.brand_id)?.map(EntityRef::from);
    let series = lookups.series(app, model.series_id)?.map(EntityRef::from);
    let (Some(brand), Some(series)) = (brand, series) else {
        return Ok(None);
    };
    let front = model
        .front_picture()
        .map(|front| show_picture(&lookups.media_base, front, card.front_record.clone()));
    let cropped = front.as_ref().and_then(|f| f.cropped_url.clone());
    Ok(Some(ModelListItem {
        id: model.id.to_string(),
        name: model.name.clone(),
        reference_number: model.reference_number.clone(),
        slug: model.slug.to_string(),
        thumbnail_is_cropped: cropped.is_some(),
        thumbnail_url: cropped.or_else(|| front.map(|p| p.url)),
        brand,
        series,
        listing_count: card.listing_count,
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

/// A brand's list item: counts, and the FRONT picture of its model with most listings, then newest
/// (from the index's group summaries, computed once per reload rather than searched per item).
pub fn brand_item(app: &App, brand: &Brand, media_base: &str) -> ApiResult<BrandItem> {
    let summary = app.index().brand_summary(brand.id.0)?;
    let lead = match summary.lead_model {
        Some(id) => app.store().catalogue().model(ModelId(id))?,
        None => None,
    };
    let picture = match lead.as_ref().and_then(Model::front_picture) {
        Some(p) => {
            let shown = shown_picture(app, media_base, p)?;
            Some(BrandPicture {
                url: shown.url,
                cropped_url: shown.cropped_url,
            })
        }
        None => None,
    };
    Ok(BrandItem {
        id: brand.id.to_string(),
        name: brand.name.clone(),
        slug: brand.slug.to_string(),
        series_count: summary.series_count,
        model_count: summary.model_count,
        picture,
    })
}

pub fn brand_detail(app: &App, brand: &Brand, media: &MediaBase) -> ApiResult<BrandDetail> {
    Ok(BrandDetail {
        item: brand_item(app, brand, &media.0)?,
        aliases: brand.aliases.clone(),
        description: brand.description.clone(),
        country: brand.country.clone(),
        founded: brand.founded,
        updated_at: brand.updated_at.to_rfc3339(),
        stats: app.index().model_stats(&brand_filter(brand.id))?.into(),
    })
}

/// A series' list item: model count and lead model (most listings, then newest), from the
/// index's group summaries.
pub fn series_item(app: &App, series: &Series, lookups: &mut Lookups) -> ApiResult<SeriesItem> {
    let summary = app.index().series_summary(series.id.0)?;
    let lead_model = match summary.lead_model {
        Some(id) => model_items(app, &[id], lookups)?.pop(),
        None => None,
    };
    Ok(SeriesItem {
        id: series.id.to_string(),
        name: series.name.clone(),
        slug: series.slug.to_string(),
        model_count: summary.model_count,
        lead_model,
    })
}

pub fn series_detail(
    app: &App,
    brand: &Brand,
    series: &Series,
    media: &MediaBase,
) -> ApiResult<SeriesDetail> {
    let mut lookups = Lookups::new(media);
    Ok(SeriesDetail {
        item: series_item(app, series, &mut lookups)?,
        description: series.description.clone(),
        updated_at: series.updated_at.to_rfc3339(),
        brand: brand.into(),
        stats: app.index().model_stats(&series_filter(series.id))?.into(),
    })
}

/// A calibre with its specification, complications and parent.
pub fn caliber_view(app: &App, caliber: &Caliber, lookups: &mut Lookups) -> ApiResult<CaliberView> {
    let brand = lookups
        .brand(app, caliber.brand_id)?
        .map(EntityRef::from)
        .ok_or_else(|| missing("calibre", caliber.id.0, "brand", caliber.brand_id.0))?;
    let mut complications = Vec::with_capacity(caliber.complication_ids.len());
    for id in &caliber.complication_ids {
        if let Some(c) = app.store().catalogue().complication(*id)? {
            complications.push(ComplicationView {
                id: c.id.to_string(),
                slug: c.slug.to_string(),
                name: c.name,
            });
        }
    }
    let parent = match caliber
        .parent_id
        .map(|id| app.store().catalogue().caliber(id))
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
pub fn full_model(app: &App, model: &Model, media: &MediaBase) -> ApiResult<FullModel> {
    let mut lookups = Lookups::new(media);
    let brand = lookups
        .brand(app, model.brand_id)?
        .map(EntityRef::from)
        .ok_or_else(|| missing("model", model.id.0, "brand", model.brand_id.0))?;
    let series = lookups
        .series(app, model.series_id)?
        .map(EntityRef::from)
        .ok_or_else(|| missing("model", model.id.0, "series", model.series_id.0))?;
    let caliber = match model
        .caliber_id
        .map(|id| app.store().catalogue().caliber(id))
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
        spec: (&model.spec).into(),
        brand,
        series,
        caliber,
        pictures: model
            .pictures
            .iter()
            .map(|p| picture_view(app, &media.0, p))
            .collect::<ApiResult<_>>()?,
    })
}

fn picture_view(app: &App, media_base: &str, picture: &Picture) -> ApiResult<PictureView> {
    let shown = shown_picture(app, media_base, picture)?;
    Ok(PictureView {
        url: shown.url,
        cropped_url: shown.cropped_url,
        ..PictureView::from(picture)
    })
}

/// Where a model picture is shown, and its pipeline record when it has one.
pub struct ShownPicture {
    pub url: String,
    pub cropped_url: Option<String>,
    pub record: Option<crate::domain::PictureRecord>,
}

/// Where a model picture is shown. A picture the dataset gave with its crop is hosted by the
/// dataset's publisher: both its URLs are shown as given. Any other goes through the image
/// pipeline: it is shown re-hosted, `{media base}/pictures/{id}`, and its `croppedUrl` is
/// `null` until the worker has made the crop.
pub fn shown_picture(app: &App, media_base: &str, picture: &Picture) -> ApiResult<ShownPicture> {
    Ok(show_picture(
        media_base,
        picture,
        picture_record(app, picture)?,
    ))
}

/// The pipeline's record of `picture`: none for a picture the dataset gave with its crop.
fn picture_record(
    app: &App,
    picture: &Picture,
) -> crate::store::StoreResult<Option<PictureRecord>> {
    match picture.cropped_url {
        Some(_) => Ok(None),
        None => app.store().pictures().picture(picture.id),
    }
}

/// [`shown_picture`] from the record [`picture_record`] read.
fn show_picture(
    media_base: &str,
    picture: &Picture,
    record: Option<PictureRecord>,
) -> ShownPicture {
    if picture.cropped_url.is_some() {
        return ShownPicture {
            url: picture.url.clone(),
            cropped_url: picture.cropped_url.clone(),
            record: None,
        };
    }
    let Some(found) = &record else {
        // No record: written before the pipeline, and never fetched; shown as the dataset said.
        return ShownPicture {
            url: picture.url.clone(),
            cropped_url: None,
            record,
        };
    };
    let cropped = found.fetched().and_then(|f| f.cropped);
    let url = media_url(media_base, picture.id);
    ShownPicture {
        cropped_url: cropped.map(|_| format!("{url}/cropped")),
        url,
        record,
    }
}

/// How listings are shown in one response: the conversion table in force (read once per
/// request), the display currency asked for, if any, and the base URL of re-hosted pictures.
pub struct ListingContext<'a> {
    pub table: Option<Arc<ConversionTable>>,
    pub display: Option<String>,
    pub media_base: &'a str,
}

/// Views of the listings with these ids, in this order.
pub fn listing_views(
    app: &App,
    ids: &[u64],
    context: &ListingContext<'_>,
) -> ApiResult<Vec<ListingView>> {
    listing_views_with(app, ids, context, |_, view| Some(view))
}

/// Each listing with these ids, in this order, read once: what `item` makes of its record and
/// its view (an id no listing has, or one `item` declines, is left out).
pub fn listing_views_with<T>(
    app: &App,
    ids: &[u64],
    context: &ListingContext<'_>,
    item: impl Fn(&Listing, ListingView) -> Option<T>,
) -> ApiResult<Vec<T>> {
    let mut providers = HashMap::new();
    let mut items = Vec::with_capacity(ids.len());
    for &id in ids {
        if let Some(listing) = app.store().listings().listing(ListingId(id))? {
            if let Some(view) = listing_view(app, &listing, &mut providers, context)? {
                items.extend(item(&listing, view));
            }
        }
    }
    Ok(items)
}

/// One listing and the list item of the model it is matched to (null while unmatched); `None`
/// for an unknown id.
pub fn listing_detail(
    app: &App,
    id: ListingId,
    context: &ListingContext<'_>,
) -> ApiResult<Option<ListingDetail>> {
    let Some(listing) = app.store().listings().listing(id)? else {
        return Ok(None);
    };
    let Some(view) = listing_view(app, &listing, &mut HashMap::new(), context)? else {
        return Ok(None);
    };
    let model = match listing.model_id {
        Some(model) => {
            let mut lookups = Lookups::new(&MediaBase(context.media_base.into()));
            model_items(app, &[model.0], &mut lookups)?.pop()
        }
        None => None,
    };
    Ok(Some(ListingDetail {
        listing: view,
        model,
        price_history: price_history(app, &listing)?,
    }))
}

/// `listing`'s price history, each price in US dollars at the rates of its own day (D-205).
fn price_history(app: &App, listing: &Listing) -> ApiResult<Vec<PriceHistoryPoint>> {
    let stored = app.store().price_changes().of(listing.id)?;
    let mut points = Vec::new();
    for point in price_history::price_history(listing, &stored) {
        let at = point.at.to_rfc3339();
        let (rates_date, table) = app.table_on(at.get(..10).unwrap_or_default())?;
        let asking = point.asking;
        points.push(PriceHistoryPoint {
            at,
            event: point.event.as_str(),
            price_usd: table.and_then(|t| t.usd_price(asking.price, asking.currency.as_deref())),
            price: asking.price,
            currency: asking.currency,
            rates_date,
        });
    }
    Ok(points)
}

/// The view of `listing`; `None` if its provider vanished (never after a clean write).
fn listing_view(
    app: &App,
    listing: &Listing,
    providers: &mut HashMap<ProviderId, Option<Provider>>,
    context: &ListingContext<'_>,
) -> ApiResult<Option<ListingView>> {
    let Some(provider) = cached(providers, listing.provider_id, || {
        app.store().listings().provider(listing.provider_id)
    })?
    .map(EntityRef::from) else {
        return Ok(None);
    };
    let table = context.table.as_deref();
    let d = &listing.details;
    let price_usd = table.and_then(|t| t.usd_price(d.price, d.currency.as_deref()));
    let converted = context.display.as_ref().map(|code| {
        let price = display_price(table, d.price, d.currency.as_deref(), code);
        (price, code.clone())
    });
    let time = |t: Timestamp| t.to_rfc3339();
    Ok(Some(ListingView {
        id: listing.id.to_string(),
        model_id: listing.model_id.map(|m| m.to_string()),
        price: d.price,
        currency: d.currency.clone(),
        price_usd,
        converted_price: converted.as_ref().map(|(price, _)| *price),
        converted_currency: converted.map(|(_, code)| code),
        url: d.url.clone(),
        provider_code: Some(listing.provider_code.clone()),
        year: d.year,
        condition: d.condition.map(Condition::as_str),
        availability: d.availability.map(Availability::as_str),
        status: listing.status.as_str(),
        title: d.title.clone(),
        scraped_brand: d.scraped_brand.clone(),
        scraped_reference: d.scraped_reference.clone(),
        country_code: d.country_code.clone(),
        country: d.country.clone(),
        city: d.city.clone(),
        state: d.state.clone(),
        box_available: d.box_available,
        papers_available: d.papers_available,
        last_seen_at: time(listing.last_seen_at),
        delisted_at: listing.delisted_at.map(time),
        reserved_at: listing.reserved_at.map(time),
        created_at: time(listing.created_at),
        updated_at: time(listing.updated_at),
        provider,
        pictures: listing
            .pictures
            .iter()
            .map(|p| ListingPictureView {
                id: p.id.to_string(),
                url: media_url(context.media_base, p.id),
            })
            .collect(),
    }))
}

/// Where the service re-hosts a listing picture.
pub fn media_url(base: &str, picture: PictureId) -> String {
    format!("{}/pictures/{picture}", base.trim_end_matches('/'))
}

/// A record names a parent the store lacks: the store's invariant is broken, so the cause is
/// logged and the client gets `internal_error`.
fn missing(kind: &str, id: u64, parent: &str, parent_id: u64) -> ApiError {
    internal_because(format!(
        "{kind} {id} names {parent} {parent_id}, which the store lacks"
    ))
}
