//! `GET /listings`, `GET /listings/{id}` and `GET /listings/stats`: marketplace listings from
//! the listings index, read back from the store, priced in any currency of `GET /rates`; the
//! stats split by what buyers pay for on request (`groupBy`, in `stats_groups`).

use super::assemble::{self, ListingContext};
use super::error::{ApiError, ApiResult};
use super::params::{
    choice_schema, parse_bool, parse_choice, parse_text_query, parse_whole, resolve_sort,
    PageParams, Params, PathParams, SortParam,
};
use super::stats_groups::{self, StatsGrouping};
#[allow(unused_imports)] // named in the OpenAPI annotations
use super::views::ListingPage;
use super::views::{ListingDetail, ListingStats, ListingView, Page, StatsGroup};
use crate::api::layers::capacity::Work;
use crate::app::App;
use crate::domain::rates::{check_currency, usd_into_display, ConversionTable};
use crate::domain::{
    price_figures, Availability, Condition, ListingId, ListingStatus, Model, ModelId, Slug,
};
use axum::{Extension, Json};
use catalogue_index::{ListingFilters, ListingQuery, ListingSort, PricedListings};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Base URL under which listing pictures are re-hosted.
#[derive(Debug, Clone)]
pub struct MediaBase(pub Arc<str>);

/// `sort` of `GET /listings`.
pub struct ListingSorts;

impl SortParam for ListingSorts {
    type Order = ListingSort;
    const DEFAULT: ListingSort = ListingSort::Newest;
    const RELEVANCE: ListingSort = ListingSort::Relevance;
    const CHOICES: &'static [(&'static str, ListingSort)] = &[
        ("newest", ListingSort::Newest),
        ("oldest", ListingSort::Oldest),
        ("price_asc", ListingSort::PriceAsc),
        ("price_desc", ListingSort::PriceDesc),
        ("relevance", ListingSort::Relevance),
    ];
}

/// Query of `GET /listings`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ListingListParams {
    /// Model slug; needs `brand`, since model slugs are unique within a brand.
    model: Option<String>,
    /// Exact model id.
    model_id: Option<String>,
    /// Brand slug: listings whose text resolved to that brand, matched or not.
    brand: Option<String>,
    /// Provider slug.
    provider: Option<String>,
    /// NEW, UNWORN, VERY_GOOD, GOOD, FAIR or POOR.
    #[param(value_type = Option<String>)]
    condition: Option<String>,
    /// The seller's stock state: IN_STOCK, ON_REQUEST or SOLD.
    #[param(value_type = Option<String>)]
    availability: Option<String>,
    /// ACTIVE, RESERVED or DELISTED (DELISTED needs `includeDelisted=true`).
    #[param(value_type = Option<String>)]
    status: Option<String>,
    /// Lowest price in whole US dollars, inclusive; unpriced listings are left out.
    #[param(value_type = Option<u64>, rename = "minPriceUSD")]
    #[serde(rename = "minPriceUSD")]
    min_price_usd: Option<String>,
    /// Highest price in whole US dollars, inclusive; unpriced listings are left out.
    #[param(value_type = Option<u64>, rename = "maxPriceUSD")]
    #[serde(rename = "maxPriceUSD")]
    max_price_usd: Option<String>,
    /// `true`: only listings matched to no model.
    #[param(value_type = Option<bool>)]
    unmatched: Option<String>,
    /// `true`: DELISTED listings too (hidden by default).
    #[param(value_type = Option<bool>)]
    include_delisted: Option<String>,
    /// Free text over the seller's title, brand and reference; a reference in any spelling.
    q: Option<String>,
    /// Order; `newest` (first seen) by default, `relevance` by default when `q` is given.
    /// Price orders go by `priceUSD`, unpriced listings last.
    #[param(value_type = Option<String>)]
    sort: Option<String>,
    /// A currency of `GET /rates` (USD, EUR, GBP…): adds `convertedPrice` and
    /// `convertedCurrency` to each listing.
    #[param(pattern = "^[A-Za-z]{3}$")]
    currency: Option<String>,
}

/// Listings, filtered and sorted, optionally priced in a display currency.
#[utoipa::path(get, path = "/listings", operation_id = "list_listings", tag = "listings", params(PageParams, ListingListParams),
    responses((status = 200, description = "A page of listings", body = ListingPage)))]
pub async fn list_listings(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(params): Params<ListingListParams>,
) -> ApiResult<Json<Page<ListingView>>> {
    work.run(move |app| {
        let pagination = page.pagination()?;
        let filters = listing_filters(app, &params)?;
        let text = parse_text_query(params.q.as_deref())?;
        let sort = resolve_sort::<ListingSorts>(params.sort.as_deref(), text.is_some())?;
        let context = listing_context(app, params.currency.as_deref(), &media)?;
        let query = ListingQuery {
            sort,
            text,
            filters,
            offset: pagination.offset(),
            limit: pagination.page_size,
        };
        let hits = app.listings().search(&query)?;
        let data = assemble::listing_views(app, &hits.ids, &context)?;
        Ok(Json(pagination.wrap(data, hits.total)))
    })
    .await
}

/// The index filters of a `GET /listings` request.
fn listing_filters(app: &App, params: &ListingListParams) -> ApiResult<ListingFilters> {
    let brand = params
        .brand
        .as_deref()
        .map(|slug| assemble::brand_by_slug(app, slug))
        .transpose()?;
    let by_slug = match (&params.model, &brand) {
        (Some(_), None) => {
            return Err(ApiError::invalid(
                "`model` needs `brand`: model slugs are unique only within a brand",
                "add brand=brandSlug, or scope by modelId",
            ))
        }
        (Some(slug), Some(brand)) => Some(assemble::model_by_slug(app, brand, slug)?.id),
        (None, _) => None,
    };
    let by_id = params
        .model_id
        .as_deref()
        .map(|id| model_by_id(app, id))
        .transpose()?
        .map(|m| m.id);
    let model_id = match (by_slug, by_id) {
        (Some(a), Some(b)) if a != b => {
            return Err(ApiError::invalid(
                "`model` and `modelId` name different models",
                "scope by one of them",
            ))
        }
        (a, b) => a.or(b),
    };
    let unmatched = parse_bool("unmatched", params.unmatched.as_deref())?.unwrap_or(false);
    if unmatched && model_id.is_some() {
        return Err(ApiError::invalid(
            "`unmatched=true` lists listings matched to no model, so it cannot be scoped to one",
            "drop model/modelId, or drop unmatched",
        ));
    }
    let min_price_usd = parse_whole("minPriceUSD", params.min_price_usd.as_deref())?;
    let max_price_usd = parse_whole("maxPriceUSD", params.max_price_usd.as_deref())?;
    if let (Some(min), Some(max)) = (min_price_usd, max_price_usd) {
        if min > max {
            return Err(ApiError::invalid(
                format!("minPriceUSD ({min}) is above maxPriceUSD ({max})"),
                "give a lower bound at most the upper bound",
            ));
        }
    }
    Ok(ListingFilters {
        model_id: model_id.map(|m| m.0),
        brand_id: brand.map(|b| b.id.0),
        provider_id: params
            .provider
            .as_deref()
            .map(|slug| provider_id(app, slug))
            .transpose()?,
        condition: parse_choice(
            "condition",
            params.condition.as_deref(),
            &choices(&Condition::ALL, Condition::as_str),
        )?
        .map(|c| c as u64),
        availability: parse_choice(
            "availability",
            params.availability.as_deref(),
            &choices(&Availability::ALL, Availability::as_str),
        )?
        .map(|a| a as u64),
        min_price_usd,
        max_price_usd,
        unmatched,
        ..status_filter(params.status.as_deref(), params.include_delisted.as_deref())?
    })
}

pub fn condition_schema() -> utoipa::openapi::Object {
    choice_schema(&choices(&Condition::ALL, Condition::as_str))
}

pub fn availability_schema() -> utoipa::openapi::Object {
    choice_schema(&choices(&Availability::ALL, Availability::as_str))
}

pub fn status_schema() -> utoipa::openapi::Object {
    choice_schema(&choices(&ListingStatus::ALL, ListingStatus::as_str))
}

/// `(name, value)` pairs of an enumeration, for [`parse_choice`].
fn choices<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> Vec<(&'static str, T)> {
    all.iter().map(|&value| (name(value), value)).collect()
}

/// The statuses shown: the one asked for, else all but DELISTED unless `includeDelisted`.
pub fn status_filter(
    status: Option<&str>,
    include_delisted: Option<&str>,
) -> ApiResult<ListingFilters> {
    let include_delisted = parse_bool("includeDelisted", include_delisted)?.unwrap_or(false);
    let status = parse_choice(
        "status",
        status,
        &choices(&ListingStatus::ALL, ListingStatus::as_str),
    )?;
    let (statuses, hidden_statuses) = match status {
        Some(ListingStatus::Delisted) if !include_delisted => {
            return Err(ApiError::invalid(
                "DELISTED listings are hidden unless includeDelisted=true",
                "add includeDelisted=true to list DELISTED listings",
            ))
        }
        Some(status) => (vec![status as u64], Vec::new()),
        None if include_delisted => (Vec::new(), Vec::new()),
        None => (Vec::new(), vec![ListingStatus::Delisted as u64]),
    };
    Ok(ListingFilters {
        statuses,
        hidden_statuses,
        ..ListingFilters::default()
    })
}

fn model_by_id(app: &App, id: &str) -> ApiResult<Model> {
    let not_found = || ApiError::unknown_model(id);
    let id = id.parse::<ModelId>().map_err(|_| not_found())?;
    // A merged model's id stands for the model it was merged into.
    let id = app.store().duplicates().merged_into(id)?.unwrap_or(id);
    app.store().catalogue().model(id)?.ok_or_else(not_found)
}

pub fn provider_id(app: &App, slug: &str) -> ApiResult<u64> {
    if let Some(provider) = Slug::parse(slug)
        .ok()
        .map(|slug| app.store().listings().provider_by_slug(&slug))
        .transpose()?
        .flatten()
    {
        return Ok(provider.id.0);
    }
    let mut known: Vec<String> = app
        .store()
        .listings()
        .providers()
        .map(|p| p.map(|p| p.slug.to_string()))
        .collect::<Result<_, _>>()?;
    known.sort();
    Err(ApiError::not_found(
        format!("no provider with slug `{slug}`"),
        format!("provider is one of: {}", known.join(", ")),
    ))
}

/// How a listings response shows listings: the rates in force, read once, and the display
/// currency `currency` asks for.
pub fn listing_context<'a>(
    app: &App,
    currency: Option<&str>,
    media: &'a MediaBase,
) -> ApiResult<ListingContext<'a>> {
    let table = app.conversion_table()?;
    let display = currency
        .map(|raw| display_code(table.as_deref(), raw))
        .transpose()?;
    Ok(ListingContext {
        table,
        display,
        media_base: &media.0,
    })
}

/// The currency code `raw` names, in upper case; 400 for a code the rates cannot convert into.
fn display_code(table: Option<&ConversionTable>, raw: &str) -> ApiResult<String> {
    let supported = |code: &str| code == "USD" || table.is_some_and(|t| t.supports(code));
    match check_currency(&raw.to_ascii_uppercase()) {
        Ok(code) if supported(&code) => Ok(code),
        _ => {
            let codes: Vec<&str> = match table {
                Some(table) => table.currencies().collect(),
                None => vec!["USD"],
            };
            Err(ApiError::invalid(
                format!("unknown currency `{raw}`"),
                format!("currency is one of: {}", codes.join(", ")),
            ))
        }
    }
}

/// Query of `GET /listings/{id}`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListingParams {
    /// A currency of `GET /rates`: adds `convertedPrice` and `convertedCurrency`.
    #[param(pattern = "^[A-Za-z]{3}$")]
    currency: Option<String>,
}

/// One listing, with the model it is matched to (null while unmatched).
#[utoipa::path(get, path = "/listings/{id}", operation_id = "get_listing", tag = "listings",
    params(("id" = String, Path, description = "Listing id"), ListingParams),
    responses((status = 200, description = "The listing", body = ListingDetail)))]
pub async fn get_listing(
    work: Work,
    Extension(media): Extension<MediaBase>,
    PathParams(id): PathParams<String>,
    Params(params): Params<ListingParams>,
) -> ApiResult<Json<ListingDetail>> {
    work.run(move |app| {
        let context = listing_context(app, params.currency.as_deref(), &media)?;
        let not_found = || ApiError::unknown_listing(&id);
        let listing_id = id.parse::<ListingId>().map_err(|_| not_found())?;
        let detail = assemble::listing_detail(app, listing_id, &context)?.ok_or_else(not_found)?;
        Ok(Json(detail))
    })
    .await
}

/// The model whose figures are asked for, and their currency: the query `GET /listings/stats`
/// and `GET /listings/stats/history` share, resolved and refused alike.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FigureParams {
    /// Brand slug.
    #[param(required = true)]
    brand: Option<String>,
    /// Model slug within the brand.
    #[param(required = true)]
    model: Option<String>,
    /// Currency of the figures; USD by default.
    #[param(pattern = "^[A-Za-z]{3}$")]
    currency: Option<String>,
}

impl FigureParams {
    /// `brand` and `model`, both required: a 400 showing a request of `path` otherwise.
    pub fn required(&self, path: &str) -> ApiResult<(&str, &str)> {
        match (self.brand.as_deref(), self.model.as_deref()) {
            (Some(brand), Some(model)) => Ok((brand, model)),
            _ => Err(ApiError::invalid(
                "`brand` and `model` are required",
                format!("GET /v1{path}?brand=rolex&model=submariner-date-126610ln"),
            )),
        }
    }

    pub fn currency(&self) -> Option<&str> {
        self.currency.as_deref()
    }
}

/// The rest of the query of `GET /listings/stats`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct StatsParams {
    /// `condition` or `boxPapers`: the same figures also for each group of the listings'
    /// condition, or of what comes with the watch (box and papers), in `groups`.
    #[param(value_type = Option<String>)]
    group_by: Option<String>,
}

/// Asking prices of a model's ACTIVE listings: count, how many are priced, low, median, high.
///
/// With `groupBy`, the same figures for each group of the listings' condition, or of their box
/// and papers, in `groups`.
#[utoipa::path(get, path = "/listings/stats", operation_id = "listing_stats", tag = "listings", params(FigureParams, StatsParams),
    responses((status = 200, description = "Asking-price figures", body = ListingStats)))]
pub async fn listing_stats(
    work: Work,
    Extension(cache): Extension<Arc<StatsCache>>,
    Params(figures): Params<FigureParams>,
    Params(params): Params<StatsParams>,
) -> ApiResult<Json<ListingStats>> {
    work.run(move |app| {
        let (brand, model) = figures.required("/listings/stats")?;
        let grouping = StatsGrouping::parse(params.group_by.as_deref())?;
        let (model, table, code) = stats_subject(app, brand, model, figures.currency())?;
        Ok(Json(cache.asking_prices(
            app,
            model.id,
            table.as_deref(),
            code,
            grouping,
        )?))
    })
    .await
}

/// The model `brand` and `model` name (404 for either unknown), the rates in force and the
/// currency of its figures `currency` asks for ([`stats_currency`]).
pub fn stats_subject(
    app: &App,
    brand: &str,
    model: &str,
    currency: Option<&str>,
) -> ApiResult<(Model, Option<Arc<ConversionTable>>, String)> {
    let brand = assemble::brand_by_slug(app, brand)?;
    let model = assemble::model_by_slug(app, &brand, model)?;
    let table = app.conversion_table()?;
    let code = stats_currency(table.as_deref(), currency)?;
    Ok((model, table, code))
}

/// The currency of asking-price figures `currency` asks for: USD when absent, else a code of
/// `GET /rates` (400 otherwise).
pub fn stats_currency(
    table: Option<&ConversionTable>,
    currency: Option<&str>,
) -> ApiResult<String> {
    display_code(table, currency.unwrap_or("USD"))
}

/// Asking prices of the model's ACTIVE listings in `code` (a code of `table`, or USD): what
/// `GET /listings/stats` answers and the reconciliation service's median price extends with.
pub fn asking_prices(
    app: &App,
    model: ModelId,
    table: Option<&ConversionTable>,
    code: String,
) -> ApiResult<ListingStats> {
    let listings = app
        .listings()
        .model_prices(model.0, ListingStatus::Active as u64, &code)?;
    let convert = usd_into_display(table, &code);
    Ok(Figures::of(&listings, convert.as_ref()).stats(code))
}

/// [`asking_prices`], and the same figures for each group of `grouping` in `groups`: all of
/// them from one split of the model's listings by the index, the whole made of the groups.
pub fn grouped_asking_prices(
    app: &App,
    model: ModelId,
    table: Option<&ConversionTable>,
    code: String,
    grouping: StatsGrouping,
) -> ApiResult<ListingStats> {
    let split = app.listings().model_prices_by(
        model.0,
        ListingStatus::Active as u64,
        &code,
        grouping.index_grouping(),
    )?;
    let groups = stats_groups::in_key_order(grouping, split);
    let mut whole = PricedListings::default();
    for (_, listings) in &groups {
        whole.count += listings.count;
        whole.priced.extend(&listings.priced);
    }
    let convert = usd_into_display(table, &code);
    let groups = (groups.iter())
        .map(|(key, listings)| Figures::of(listings, convert.as_ref()).group(key))
        .collect();
    Ok(ListingStats {
        group_by: Some(grouping),
        groups: Some(groups),
        ..Figures::of(&whole, convert.as_ref()).stats(code)
    })
}

/// What the stats say of some listings: how many, how many priced, and the low, median and
/// high of the prices that are in the display currency or convert into it.
struct Figures {
    count: usize,
    priced_count: usize,
    prices: Option<(u64, u64, u64)>,
}

impl Figures {
    /// The figures of `listings`; `convert` takes a dollar price into the display currency, for
    /// a listing whose own price is not in it (`None`: the rates cannot).
    fn of(listings: &PricedListings, convert: Option<&impl Fn(u64) -> Option<u64>>) -> Figures {
        let in_display: Vec<u64> = (listings.priced.iter())
            .filter_map(|point| point.own.or_else(|| convert?(point.usd?)))
            .collect();
        Figures {
            count: listings.count,
            priced_count: listings.priced.len(),
            prices: price_figures(in_display),
        }
    }

    /// The body of an ungrouped request, its prices in `currency`.
    fn stats(self, currency: String) -> ListingStats {
        ListingStats {
            count: self.count,
            priced_count: self.priced_count,
            currency,
            low: self.prices.map(|f| f.0),
            median: self.prices.map(|f| f.1),
            high: self.prices.map(|f| f.2),
            group_by: None,
            groups: None,
        }
    }

    fn group(self, key: &'static str) -> StatsGroup {
        StatsGroup {
            key,
            count: self.count,
            priced_count: self.priced_count,
            low: self.prices.map(|f| f.0),
            median: self.prices.map(|f| f.1),
            high: self.prices.map(|f| f.2),
        }
    }
}

/// What a kept figure answers: a model's stats in one currency, whole or grouped.
type StatsKey = (ModelId, String, Option<StatsGrouping>);

/// Listing figures already computed, by model, currency and grouping, with the index reload
/// they were computed from: a figure is served again only while the index has not changed
/// since, so it is never stale. Bounded: when full it starts afresh.
#[derive(Debug, Default)]
pub struct StatsCache(Mutex<HashMap<StatsKey, (u64, ListingStats)>>);

/// Figures kept at most: a few MB (a grouped one is up to seven groups more).
const STATS_KEPT: usize = 20_000;

impl StatsCache {
    /// [`asking_prices`], or [`grouped_asking_prices`] by `grouping`, served from the figures
    /// kept while the listings index is the one they were computed from.
    pub fn asking_prices(
        &self,
        app: &App,
        model: ModelId,
        table: Option<&ConversionTable>,
        code: String,
        grouping: Option<StatsGrouping>,
    ) -> ApiResult<ListingStats> {
        // Read before computing: a reload during the computation leaves the figures marked
        // with the older index, so they are computed again, never served stale.
        let at = app.listings().searcher_generation();
        let key = (model, code.clone(), grouping);
        if let Some(stats) = self.get(&key, at) {
            return Ok(stats);
        }
        let stats = match grouping {
            None => asking_prices(app, model, table, code)?,
            Some(grouping) => grouped_asking_prices(app, model, table, code, grouping)?,
        };
        self.put(key, at, &stats);
        Ok(stats)
    }

    fn get(&self, key: &StatsKey, at: u64) -> Option<ListingStats> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.get(key)
            .filter(|(when, _)| *when == at)
            .map(|(_, stats)| stats.clone())
    }

    fn put(&self, key: StatsKey, at: u64, stats: &ListingStats) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() >= STATS_KEPT {
            kept.clear();
        }
        kept.insert(key, (at, stats.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalogue_index::PricePoint;

    /// Three listings: one unpriced, two priced in another currency than the display one, so
    /// shown through their dollar prices.
    fn three_listings() -> PricedListings {
        PricedListings {
            count: 3,
            priced: vec![
                PricePoint {
                    usd: Some(1_000),
                    own: None,
                },
                PricePoint {
                    usd: Some(3_001),
                    own: None,
                },
            ],
        }
    }

    /// Without `groupBy` the body is the six figures it always was, in their order: a promise
    /// to the API's clients.
    #[test]
    fn the_body_without_group_by_has_no_groups() {
        let in_dollars = |usd: u64| Some(usd);
        let stats = Figures::of(&three_listings(), Some(&in_dollars)).stats("USD".to_owned());
        let body = serde_json::to_string(&stats).unwrap_or_default();
        assert_eq!(
            body,
            r#"{"count":3,"pricedCount":2,"currency":"USD","low":1000,"median":2001,"high":3001}"#
        );
    }

    /// With it, the grouping and its groups follow the figures.
    #[test]
    fn the_body_with_group_by_adds_the_grouping_and_its_groups() {
        let none: Option<&fn(u64) -> Option<u64>> = None;
        let figures = || Figures::of(&three_listings(), none);
        let stats = ListingStats {
            group_by: Some(StatsGrouping::BoxPapers),
            groups: Some(vec![figures().group("unknown")]),
            ..figures().stats("GBP".to_owned())
        };
        let body = serde_json::to_string(&stats).unwrap_or_default();
        assert_eq!(
            body,
            r#"{"count":3,"pricedCount":2,"currency":"GBP","low":null,"median":null,"high":null,"groupBy":"boxPapers","groups":[{"key":"unknown","count":3,"pricedCount":2,"low":null,"median":null,"high":null}]}"#
        );
    }
}
