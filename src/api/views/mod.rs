//! Every body the API answers, in one place: the public API's here, the back office's in
//! [`back_office`], the W3C reconciliation service's in [`w3c`]. Plain data with the spec's
//! field names and conversions from records; `assemble.rs` and the handlers fill them from the
//! store. Units: millimetres for diameter, thickness, lugWidth, bandWidth and calibre sizes;
//! metres for waterResistance; vph; hours.

pub mod back_office;
pub mod w3c;

use crate::api::params::Pagination;
use crate::api::stats_groups::{group_key_schema, StatsGrouping};
use crate::api::stats_history::{interval_schema, rates_kind_schema};
use crate::domain::{Brand, Caliber, ModelSpec, Picture, Series};
use back_office::{
    AuditEntryView, JobView, ReconciliationGroup, ReviewQueueItem, UnmatchedListing,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// `{id, name, slug}` of a brand or series.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct EntityRef {
    pub id: String,
    pub name: String,
    pub slug: String,
}

impl From<&Brand> for EntityRef {
    fn from(b: &Brand) -> Self {
        EntityRef {
            id: b.id.to_string(),
            name: b.name.clone(),
            slug: b.slug.to_string(),
        }
    }
}

impl From<&Series> for EntityRef {
    fn from(s: &Series) -> Self {
        EntityRef {
            id: s.id.to_string(),
            name: s.name.clone(),
            slug: s.slug.to_string(),
        }
    }
}

/// Element of `GET /models`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelListItem {
    pub id: String,
    pub name: String,
    pub reference_number: String,
    pub slug: String,
    pub thumbnail_url: Option<String>,
    pub thumbnail_is_cropped: bool,
    pub brand: EntityRef,
    pub series: EntityRef,
    pub listing_count: u64,
}

/// A model's picture.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PictureView {
    pub id: String,
    pub url: String,
    /// FRONT, BACK, SIDE, DETAIL or LIFESTYLE.
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub kind: &'static str,
    pub cropped_url: Option<String>,
}

impl From<&Picture> for PictureView {
    fn from(p: &Picture) -> Self {
        PictureView {
            id: p.id.to_string(),
            url: p.url.clone(),
            kind: p.kind.as_str(),
            cropped_url: p.cropped_url.clone(),
        }
    }
}

/// `GET /models/{brandSlug}/{slug}`: every field present, null or [] when empty.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FullModel {
    pub id: String,
    pub name: String,
    pub reference_number: String,
    pub alternate_references: Vec<String>,
    pub slug: String,
    pub description: Option<String>,
    pub updated_at: String,
    // The component name of `ModelSpecBody`: utoipa 4 names a `$ref` after the type as written
    // here, never after its `#[schema(as = ...)]`, and uses no more of it than that name.
    #[serde(flatten)]
    #[schema(value_type = ModelSpec)]
    pub spec: ModelSpecBody,
    pub brand: EntityRef,
    pub series: EntityRef,
    pub caliber: Option<CaliberView>,
    pub pictures: Vec<PictureView>,
}

/// The common specification of a model: every model is comparable field by field.
/// Millimetres for sizes, metres for water resistance. Empty means unknown, never guessed.
// The API's own copy of the domain's `ModelSpec` field list, so the store's layout and the
// dataset format can change without changing the response (docs/decisions.md, D-08). The component
// keeps the name `ModelSpec`; `default` gives every property the `default` it always had.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ModelSpec, default)]
pub struct ModelSpecBody {
    pub release_year: Option<i32>,
    pub discontinuation_year: Option<i32>,
    /// Pieces made, for a limited edition.
    pub limited_amount: Option<u32>,
    /// Case diameter in millimetres.
    pub diameter: Option<f64>,
    /// Case thickness in millimetres.
    pub thickness: Option<f64>,
    /// Width between the lugs in millimetres.
    pub lug_width: Option<f64>,
    /// Water resistance in metres.
    pub water_resistance: Option<f64>,
    pub case_materials: Vec<String>,
    pub bezel: Option<String>,
    pub bezel_materials: Vec<String>,
    pub bezel_colors: Vec<String>,
    pub coating: Option<String>,
    pub shape: Option<String>,
    pub glass: Option<String>,
    pub back: Option<String>,
    pub dial_nickname: Option<String>,
    pub dial_finish: Option<String>,
    pub dial_colors: Vec<String>,
    pub dial_materials: Vec<String>,
    pub indexes: Option<String>,
    pub hands: Option<String>,
    pub band_nickname: Option<String>,
    pub band_colors: Vec<String>,
    pub band_materials: Vec<String>,
    pub band_clasp: Option<String>,
    /// Band width in millimetres.
    pub band_width: Option<f64>,
}

impl From<&ModelSpec> for ModelSpecBody {
    fn from(spec: &ModelSpec) -> Self {
        // Destructured whole, without `..`: a field added to the domain's spec fails to compile
        // here until the API decides what to show of it.
        macro_rules! every_field {
            ($($field:ident),* $(,)?) => {{
                let ModelSpec { $($field),* } = spec.clone();
                ModelSpecBody { $($field),* }
            }};
        }
        every_field!(
            release_year,
            discontinuation_year,
            limited_amount,
            diameter,
            thickness,
            lug_width,
            water_resistance,
            case_materials,
            bezel,
            bezel_materials,
            bezel_colors,
            coating,
            shape,
            glass,
            back,
            dial_nickname,
            dial_finish,
            dial_colors,
            dial_materials,
            indexes,
            hands,
            band_nickname,
            band_colors,
            band_materials,
            band_clasp,
            band_width,
        )
    }
}

/// A complication linked to a calibre.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ComplicationView {
    pub id: String,
    pub slug: String,
    pub name: String,
}

/// The calibre a calibre is built on.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ParentCaliber {
    pub id: String,
    pub slug: String,
    pub reference: String,
    pub name: Option<String>,
    pub brand: EntityRef,
}

/// A movement with its specification.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaliberView {
    pub id: String,
    pub slug: String,
    pub reference: String,
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub brand: EntityRef,
    /// Millimetres.
    pub diameter: Option<f64>,
    /// Millimetres.
    pub height: Option<f64>,
    pub jewels: Option<u32>,
    /// Vibrations per hour (vph).
    pub frequency: Option<u32>,
    /// Hours.
    pub power_reserve: Option<u32>,
    pub complications: Vec<ComplicationView>,
    pub parent: Option<ParentCaliber>,
}

impl ParentCaliber {
    pub fn new(caliber: &Caliber, brand: &Brand) -> ParentCaliber {
        ParentCaliber {
            id: caliber.id.to_string(),
            slug: caliber.slug.to_string(),
            reference: caliber.reference.clone(),
            name: caliber.name.clone(),
            brand: brand.into(),
        }
    }
}

/// `GET /calibers/{brandSlug}/{ref}`: the movement and every model that runs it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaliberDetail {
    #[serde(flatten)]
    pub caliber: CaliberView,
    pub model_count: usize,
    pub models: Vec<ModelListItem>,
}

/// The representative picture of a brand.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrandPicture {
    pub url: String,
    pub cropped_url: Option<String>,
}

/// Element of `GET /brands`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrandItem {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub series_count: usize,
    pub model_count: usize,
    pub picture: Option<BrandPicture>,
}

/// `GET /brands/{slug}`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrandDetail {
    #[serde(flatten)]
    pub item: BrandItem,
    pub aliases: Vec<String>,
    pub description: Option<String>,
    pub country: Option<String>,
    pub founded: Option<i32>,
    pub updated_at: String,
    pub stats: StatsView,
}

/// Element of `GET /brands/{brandSlug}/series`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeriesItem {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub model_count: usize,
    pub lead_model: Option<ModelListItem>,
}

/// `GET /brands/{brandSlug}/series/{seriesSlug}`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeriesDetail {
    #[serde(flatten)]
    pub item: SeriesItem,
    pub description: Option<String>,
    pub updated_at: String,
    pub brand: EntityRef,
    pub stats: StatsView,
}

/// Earliest and latest release year; both null when no model has one.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct YearRange {
    pub min: Option<u64>,
    pub max: Option<u64>,
}

/// Smallest and largest case diameter in millimetres; both null when no model has one.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DiameterRange {
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// Figures over a brand's or a series' models.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatsView {
    pub year_range: YearRange,
    pub diameter_range: DiameterRange,
    pub case_materials: Vec<String>,
    pub movement_count: u64,
    /// ACTIVE listings matched to these models.
    pub listing_count: u64,
}

impl From<catalogue_index::CatalogueStats> for StatsView {
    fn from(s: catalogue_index::CatalogueStats) -> Self {
        StatsView {
            year_range: YearRange {
                min: s.year_min,
                max: s.year_max,
            },
            diameter_range: DiameterRange {
                min: s.diameter_min,
                max: s.diameter_max,
            },
            case_materials: s.case_materials,
            movement_count: s.movement_count,
            listing_count: s.listing_count,
        }
    }
}

/// `GET /sitemap/models` entry.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelSitemapEntry {
    pub id: String,
    pub brand_slug: String,
    pub slug: String,
    pub last_modified: String,
}

/// `GET /sitemap/catalog` entry: a brand (`seriesSlug` null) or a series.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSitemapEntry {
    /// `brand` or `series`.
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub kind: &'static str,
    pub brand_slug: String,
    pub series_slug: Option<String>,
    pub last_modified: String,
}

/// `GET /sitemap/calibers` entry.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaliberSitemapEntry {
    pub brand_slug: String,
    pub slug: String,
    pub reference: String,
    pub last_modified: String,
}

impl From<&crate::domain::Provider> for EntityRef {
    fn from(p: &crate::domain::Provider) -> Self {
        EntityRef {
            id: p.id.to_string(),
            name: p.name.clone(),
            slug: p.slug.to_string(),
        }
    }
}

/// A listing's picture, under the service's own media URL.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ListingPictureView {
    pub id: String,
    pub url: String,
}

/// Element of `GET /listings`: what the provider published, attributed to it. Prices are whole
/// units; timestamps RFC 3339 in UTC.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListingView {
    pub id: String,
    /// null while unmatched.
    pub model_id: Option<String>,
    /// In the listing's own currency.
    pub price: Option<u64>,
    pub currency: Option<String>,
    /// Through the USD table of `GET /rates`; null when unpriced or in a currency it lacks.
    #[serde(rename = "priceUSD")]
    pub price_usd: Option<u64>,
    /// Only with `currency`: the price in that currency (null when it cannot be converted).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u64>)]
    pub converted_price: Option<Option<u64>>,
    /// Only with `currency`: the requested code.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String)]
    pub converted_currency: Option<String>,
    /// The listing at its source.
    pub url: String,
    /// The provider's own id of the listing.
    pub provider_code: Option<String>,
    pub year: Option<i32>,
    /// NEW, UNWORN, VERY_GOOD, GOOD, FAIR or POOR; null when the seller's wording maps to none.
    pub condition: Option<&'static str>,
    /// The seller's stock state: IN_STOCK, ON_REQUEST or SOLD.
    pub availability: Option<&'static str>,
    /// Marketplace lifecycle: ACTIVE, RESERVED or DELISTED.
    pub status: &'static str,
    /// The seller's words, verbatim.
    pub title: Option<String>,
    pub scraped_brand: Option<String>,
    pub scraped_reference: Option<String>,
    pub country_code: Option<String>,
    pub country: Option<String>,
    pub city: Option<String>,
    pub state: Option<String>,
    pub box_available: Option<bool>,
    pub papers_available: Option<bool>,
    pub last_seen_at: String,
    pub delisted_at: Option<String>,
    pub reserved_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub provider: EntityRef,
    pub pictures: Vec<ListingPictureView>,
}

/// `GET /listings/{id}`: the listing and the model it is matched to, or null.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ListingDetail {
    #[serde(flatten)]
    pub listing: ListingView,
    pub model: Option<ModelListItem>,
    /// The asking prices its revisits saw, oldest first: its first price, each change, and
    /// each delisting and relisting at the price it then had.
    #[serde(rename = "priceHistory")]
    pub price_history: Vec<PriceHistoryPoint>,
}

/// A point of a listing's `priceHistory`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PriceHistoryPoint {
    /// RFC 3339 in UTC: when a revisit saw it.
    pub at: String,
    /// `listed`, `changed`, `delisted` or `relisted`.
    #[schema(value_type = String, example = "changed")]
    pub event: &'static str,
    /// In the listing's own currency at the time.
    pub price: Option<u64>,
    pub currency: Option<String>,
    /// Through the USD table of the ECB day `ratesDate`; null when unpriced or in a currency
    /// that table lacks.
    #[serde(rename = "priceUSD")]
    pub price_usd: Option<u64>,
    /// The ECB day whose rates converted `priceUSD`: the latest stored day on or before `at`,
    /// else the rates in force (a later day); null when no rates are loaded.
    pub rates_date: Option<String>,
}

/// `GET /listings/stats`: asking prices of a model's ACTIVE listings.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListingStats {
    /// ACTIVE listings matched to the model.
    pub count: usize,
    /// Of those, the ones with a price.
    pub priced_count: usize,
    /// The currency of `low`, `median` and `high`.
    pub currency: String,
    pub low: Option<u64>,
    /// For an even number of prices, the mean of the two middle ones, rounded half up.
    pub median: Option<u64>,
    pub high: Option<u64>,
    /// Only with `groupBy`: the grouping asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = StatsGrouping)]
    pub group_by: Option<StatsGrouping>,
    /// Only with `groupBy`: the same figures for each of its groups, in `currency`. Every group
    /// is there, in a fixed order (an empty one with zero counts and null prices); their
    /// counts add up to `count`, their priced counts to `pricedCount`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Vec<StatsGroup>)]
    pub groups: Option<Vec<StatsGroup>>,
}

/// One group of `GET /listings/stats?groupBy=`: the figures of the model's ACTIVE listings in
/// it, as the whole's.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatsGroup {
    #[schema(schema_with = group_key_schema)]
    pub key: &'static str,
    pub count: usize,
    pub priced_count: usize,
    pub low: Option<u64>,
    pub median: Option<u64>,
    pub high: Option<u64>,
}

/// `GET /listings/stats/history`: a model's asking prices period by period.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PriceSeriesView {
    /// The brand's slug.
    pub brand: String,
    /// The model's slug.
    pub model: String,
    /// The currency of every period's `low`, `median` and `high`.
    pub currency: String,
    #[schema(schema_with = interval_schema)]
    pub interval: &'static str,
    /// The first day asked for (`YYYY-MM-DD`): the first period is the one holding it.
    #[schema(value_type = String, format = Date)]
    pub from: String,
    /// The last day asked for: the last period is the one holding it.
    #[schema(value_type = String, format = Date)]
    pub to: String,
    /// When the model's figures were last folded (RFC 3339): the periods hold every
    /// observation up to then, and each period after that instant's is carried forward from
    /// the listings active then. Null when no listing of the model has been folded.
    pub as_of: Option<String>,
    /// Every period from `from`'s to `to`'s, oldest first, those with no listing too.
    pub periods: Vec<SeriesPeriodView>,
}

/// One period of `GET /listings/stats/history`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeriesPeriodView {
    /// Its first day: a Monday (an ISO week, UTC), or a month's first.
    #[schema(value_type = String, format = Date)]
    pub start: String,
    /// Its last day: a Sunday, or the month's last.
    #[schema(value_type = String, format = Date)]
    pub end: String,
    /// The model's listings active (not delisted) at any instant of the period.
    pub active_count: u64,
    /// Of those, the ones whose asking price converts at the period's rates.
    pub priced_count: u64,
    /// The lowest, median and highest of their asking prices at the period's end (a listing
    /// delisted within it, its last), in `currency`; null when none is priced, or the
    /// period's rates do not quote `currency`.
    pub low: Option<u64>,
    /// For an even number of prices, the mean of the two middle ones, rounded half up.
    pub median: Option<u64>,
    pub high: Option<u64>,
    /// Listings first seen in the period.
    pub listed_count: u64,
    /// Listings delisted in the period (a relisting is no new listing).
    pub delisted_count: u64,
    /// The ECB day whose rates the period converts at; null when no rates are loaded.
    #[schema(value_type = Option<String>, format = Date)]
    pub rates_date: Option<String>,
    #[schema(schema_with = rates_kind_schema)]
    pub rates: &'static str,
}

/// `GET /models/compare`: two to six full models side by side.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelComparison {
    /// The models in the order `models` named them.
    pub data: Vec<ComparedModel>,
    /// The full model's fields whose values are not the same on every model, in alphabetical
    /// order. `id`, `slug`, `updatedAt` and `pictures` are each model's own and never named.
    pub differences: Vec<String>,
}

/// One model of a comparison, with what the marketplace asks for it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComparedModel {
    pub model: FullModel,
    /// ACTIVE listings matched to the model, as on its model list item.
    pub listing_count: u64,
    /// Asking prices of those listings in the requested `currency`, as `GET /listings/stats`.
    pub asking_prices: ListingStats,
}

/// A list page: `data` plus `page`, `pageSize`, `total`, `totalPages`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[aliases(
    BrandPage = Page<BrandItem>,
    SeriesPage = Page<SeriesItem>,
    ModelSitemapPage = Page<ModelSitemapEntry>,
    CatalogSitemapPage = Page<CatalogSitemapEntry>,
    CaliberSitemapPage = Page<CaliberSitemapEntry>,
    ListingPage = Page<ListingView>,
    UnmatchedListingPage = Page<UnmatchedListing>,
    AuditPage = Page<AuditEntryView>,
    JobPage = Page<JobView>,
    ReconciliationGroupPage = Page<ReconciliationGroup>,
    ReviewQueuePage = Page<ReviewQueueItem>
)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub data: Vec<T>,
    pub page: usize,
    pub page_size: usize,
    pub total: usize,
    pub total_pages: usize,
}

impl<T> Page<T> {
    /// The same page with each item turned into a `U` by `view`; the first failure fails it.
    pub fn try_map<U, E>(self, view: impl FnMut(T) -> Result<U, E>) -> Result<Page<U>, E> {
        Ok(Page {
            data: self.data.into_iter().map(view).collect::<Result<_, E>>()?,
            page: self.page,
            page_size: self.page_size,
            total: self.total,
            total_pages: self.total_pages,
        })
    }
}

/// A validated page makes its [`Page`] here, beside it: `params` stays a leaf.
impl Pagination {
    /// Wraps one page of `data` out of `total` items.
    pub fn wrap<T>(&self, data: Vec<T>, total: usize) -> Page<T> {
        Page {
            data,
            page: self.page,
            page_size: self.page_size,
            total,
            total_pages: total.div_ceil(self.page_size),
        }
    }

    /// The page of an in-memory list.
    pub fn slice<T>(&self, all: Vec<T>) -> Page<T> {
        let total = all.len();
        let data = all
            .into_iter()
            .skip(self.offset())
            .take(self.page_size)
            .collect();
        self.wrap(data, total)
    }
}

/// A page of `GET /models`, with the facet counts when `facets` was given.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelPage {
    pub data: Vec<ModelListItem>,
    pub page: usize,
    pub page_size: usize,
    pub total: usize,
    pub total_pages: usize,
    /// Present when `facets` was given: per facet named, its values with their model counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facets: Option<FacetsView>,
}

impl ModelPage {
    pub fn new(page: Page<ModelListItem>, facets: Option<FacetsView>) -> ModelPage {
        let Page {
            data,
            page,
            page_size,
            total,
            total_pages,
        } = page;
        ModelPage {
            data,
            page,
            page_size,
            total,
            total_pages,
            facets,
        }
    }
}

/// The facets asked, each the values of the models matching `q` and every filter but the
/// facet's own, most frequent first (then by value), at most 100.
#[derive(Debug, Default, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FacetsView {
    /// `value` is the brand slug, `name` its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub brand: Option<Vec<FacetValueView>>,
    /// `value` is `brandSlug/seriesSlug` (what the `series` filter takes), `name` its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<Vec<FacetValueView>>,
    /// `value` is the material, lowercased.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case_material: Option<Vec<FacetValueView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dial_color: Option<Vec<FacetValueView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub movement_type: Option<Vec<FacetValueView>>,
    /// `value` is the complication slug, `name` its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub complication: Option<Vec<FacetValueView>>,
    /// `value` is whole millimetres: `40` counts the models from 40 mm to under 41 mm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diameter: Option<Vec<FacetValueView>>,
}

/// One value of a facet and how many models have it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FacetValueView {
    pub value: String,
    /// The display name of a brand, series or complication; null for the others.
    pub name: Option<String>,
    pub count: u64,
}

/// The editorial row of brands, without paging.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HighlightedBrands {
    pub data: Vec<BrandItem>,
}

/// `GET /rates`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RatesView {
    /// The day the rates are for (YYYY-MM-DD).
    pub date: String,
    pub source: &'static str,
    pub ecb: EcbTable,
    pub usd: UsdTable,
}

/// The ECB's reference rates of one day, unmodified.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EcbTable {
    /// Always EUR: the ECB quotes units of each currency per euro.
    pub base: &'static str,
    /// Units per euro by currency code, each the exact decimal string the ECB published.
    pub rates: BTreeMap<String, String>,
}

/// The table every conversion uses: units of each currency per US dollar.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UsdTable {
    /// Always USD.
    pub base: &'static str,
    /// How the table and the conversions are computed.
    pub rounding: &'static str,
    /// Units per US dollar by currency code, as decimal strings.
    pub rates: BTreeMap<String, String>,
}

/// `GET /healthz`: the process answers.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    pub status: &'static str,
}

/// `GET /readyz`: ready when the indexes reflect the store's last write.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    pub status: &'static str,
    pub store_generation: u64,
    pub index_generation: Option<u64>,
    pub listings_index_generation: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API body carries every field of the domain's spec, under the same name, with the
    /// same value: serialised both ways, a spec with every field set reads the same.
    #[test]
    fn the_model_spec_body_carries_every_field_of_the_domain_spec() {
        let text = |name: &str| Some(name.to_owned());
        let list = |name: &str| vec![name.to_owned(), format!("{name} 2")];
        let spec = ModelSpec {
            release_year: Some(2020),
            discontinuation_year: Some(2023),
            limited_amount: Some(500),
            diameter: Some(41.0),
            thickness: Some(12.5),
            lug_width: Some(21.0),
            water_resistance: Some(300.0),
            case_materials: list("case"),
            bezel: text("bezel"),
            bezel_materials: list("bezel material"),
            bezel_colors: list("bezel colour"),
            coating: text("coating"),
            shape: text("shape"),
            glass: text("glass"),
            back: text("back"),
            dial_nickname: text("dial nickname"),
            dial_finish: text("dial finish"),
            dial_colors: list("dial colour"),
            dial_materials: list("dial material"),
            indexes: text("indexes"),
            hands: text("hands"),
            band_nickname: text("band nickname"),
            band_colors: list("band colour"),
            band_materials: list("band material"),
            band_clasp: text("clasp"),
            band_width: Some(20.0),
        };
        let domain = serde_json::to_value(&spec).expect("domain spec");
        let body = serde_json::to_value(ModelSpecBody::from(&spec)).expect("API body");
        let fields = domain.as_object().expect("object");
        assert!(
            fields.values().all(|value| !value.is_null()),
            "every field set: {domain}"
        );
        assert_eq!(body, domain);
    }
}
