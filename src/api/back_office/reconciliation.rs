//! The reconciliation group: `GET /reconciliation` (unmatched listings grouped by the identity
//! their sellers claim, with the nearest catalogue models) and the three writes that resolve a
//! group: link it to a model, create a model from it, or update a model for it.

use super::nearest_models::{example_titles, nearest_models, Candidate};
use super::{actor, blocking, write, Caller};
use crate::api::assemble::{self, Lookups};
use crate::api::error::{ApiError, ApiResult};
use crate::api::listings::{provider_id, MediaBase};
#[allow(unused_imports)] // named in the OpenAPI annotations
use crate::api::params::ReconciliationGroupPage;
use crate::api::params::{parse_choice, parse_text, JsonBody, Page, PageParams, Params};
use crate::api::views::{EntityRef, ModelListItem};
use crate::api::AppState;
use crate::app::App;
use crate::domain::{
    normalize_reference, ClaimedBrand, ListingId, MatchOutcome, ModelId, ProviderId,
};
use crate::jobs::reconciliation::{self, Group, ReconcileError, Reconciled, Selection};
use crate::jobs::users::Actor;
use crate::store::WriteTurn;
use axum::extract::State;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Listing ids one link takes at most: a link is one atomic write.
pub const MAX_LINKED_LISTINGS: usize = 1000;
/// Example titles shown per group.
const EXAMPLE_TITLES: usize = 3;

/// Query of `GET /reconciliation`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GroupParams {
    /// Brand slug: groups of listings whose text resolved to that brand.
    brand: Option<String>,
    /// Provider slug: groups with at least one listing of that provider.
    provider: Option<String>,
    /// unknownBrand, unknownReference, ambiguous or noReference: groups of that reason.
    reason: Option<String>,
    /// Words found in the group's brand, reference spellings or titles, or the start of its
    /// reference in any spelling.
    q: Option<String>,
}

/// The brand a group's sellers claim: a brand of the catalogue, or their text when it is none.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum ClaimedBrandView {
    Known(EntityRef),
    /// The seller's brand text, verbatim (its most used spelling).
    Text(String),
}

/// How many of a group's listings a provider published.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderCount {
    #[serde(flatten)]
    pub provider: EntityRef,
    #[schema(example = 2)]
    pub listing_count: usize,
}

/// Lowest and highest asking price in whole US dollars; null when no listing converts.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PriceRange {
    #[schema(example = 7800)]
    pub low: Option<u64>,
    #[schema(example = 9100)]
    pub high: Option<u64>,
}

/// Unmatched listings whose sellers claim one identity: brand and reference.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconciliationGroup {
    /// Stable while the identity is: what the write operations take.
    #[schema(example = "8bcf32a792c9e612")]
    pub id: String,
    /// `{id, name, slug}` of the brand matching resolved, the seller's brand text when it
    /// resolved none, or null when the seller named none (or two).
    pub brand: Option<ClaimedBrandView>,
    /// The sellers' reference, normalised (letters and digits, lowercase); null when they gave
    /// none.
    #[schema(example = "16610lv")]
    pub reference: Option<String>,
    /// The sellers' spellings of the reference, verbatim, most used first.
    #[schema(example = json!(["16610LV", "16610-LV"]))]
    pub spellings: Vec<String>,
    /// Why most of the listings matched no model: unknownBrand, unknownReference, ambiguous or
    /// noReference.
    #[schema(example = "unknownReference")]
    pub reason: &'static str,
    #[schema(example = 3)]
    pub listing_count: usize,
    /// Listings per provider, most first.
    pub providers: Vec<ProviderCount>,
    #[serde(rename = "priceRangeUSD")]
    pub price_range_usd: PriceRange,
    /// Up to three distinct titles, newest first.
    #[schema(example = json!(["Rolex Submariner 16610LV Kermit"]))]
    pub example_titles: Vec<String>,
    /// The catalogue's nearest models of the same brand, best first (none when the brand is
    /// unknown).
    pub candidates: Vec<Candidate>,
}

/// Unmatched listings grouped by the identity their sellers claim, largest group first.
///
/// Each group names its brand and reference, its reason, providers, prices and example titles,
/// and the catalogue's nearest models. Groups are computed from every unmatched listing on each
/// request (docs/decisions.md).
#[utoipa::path(get, path = "/reconciliation", operation_id = "reconciliation_groups", tag = "reconciliation",
    params(PageParams, GroupParams),
    responses((status = 200, description = "A page of groups of unmatched listings", body = ReconciliationGroupPage)))]
pub async fn groups(
    State(app): State<AppState>,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(params): Params<GroupParams>,
) -> ApiResult<Json<Page<ReconciliationGroup>>> {
    let pagination = page.pagination()?;
    let filter = GroupFilter::parse(&app, &params)?;
    let page = blocking(move || {
        let groups = reconciliation::unmatched_groups(&app.store, &app.listings)?;
        let wanted: Vec<Group> = groups.into_iter().filter(|g| filter.keeps(g)).collect();
        let mut context = GroupContext::new(&app, &media)?;
        pagination
            .slice(wanted)
            .try_map(|group| context.view(&group))
    })
    .await?;
    Ok(Json(page))
}

/// The filters of `GET /reconciliation`, resolved.
struct GroupFilter {
    brand: Option<ClaimedBrand>,
    provider: Option<ProviderId>,
    reason: Option<MatchOutcome>,
    /// Lowercased words, and the whole text as a reference.
    words: Vec<String>,
    reference: String,
}

impl GroupFilter {
    fn parse(app: &App, params: &GroupParams) -> ApiResult<GroupFilter> {
        let reasons: Vec<(&'static str, MatchOutcome)> = MatchOutcome::REASONS
            .iter()
            .filter_map(|&outcome| Some((outcome.reason()?, outcome)))
            .collect();
        let text = parse_text(params.q.as_deref())?.unwrap_or_default();
        Ok(GroupFilter {
            brand: params
                .brand
                .as_deref()
                .map(|slug| assemble::brand_by_slug(app, slug))
                .transpose()?
                .map(|brand| ClaimedBrand::Known(brand.id)),
            provider: params
                .provider
                .as_deref()
                .map(|slug| provider_id(app, slug))
                .transpose()?
                .map(ProviderId),
            reason: parse_choice("reason", params.reason.as_deref(), &reasons)?,
            words: text.split_whitespace().map(str::to_lowercase).collect(),
            reference: normalize_reference(&text),
        })
    }

    fn keeps(&self, group: &Group) -> bool {
        self.brand
            .as_ref()
            .is_none_or(|b| *b == group.identity.brand)
            && self
                .provider
                .is_none_or(|p| group.listings.iter().any(|l| l.provider_id == p))
            && self.reason.is_none_or(|r| reason_of(group) == r)
            && self.matches_text(group)
    }

    /// Every word in the group's brand text, spellings or titles, or the text as a reference
    /// beginning the group's.
    fn matches_text(&self, group: &Group) -> bool {
        if self.words.is_empty() {
            return true;
        }
        let reference = group.identity.reference.as_deref().unwrap_or_default();
        if !self.reference.is_empty() && reference.starts_with(&self.reference) {
            return true;
        }
        let mut haystack = String::new();
        for listing in &group.listings {
            let details = &listing.details;
            for text in [
                &details.scraped_brand,
                &details.scraped_reference,
                &details.title,
            ] {
                haystack.push_str(&text.as_deref().unwrap_or_default().to_lowercase());
                haystack.push('\n');
            }
        }
        self.words
            .iter()
            .all(|word| haystack.contains(word.as_str()))
    }
}

/// The reason most of the group's listings are unmatched (ties go to the order of
/// [`MatchOutcome::REASONS`]).
fn reason_of(group: &Group) -> MatchOutcome {
    let count = |reason: MatchOutcome| {
        group
            .listings
            .iter()
            .filter(|l| l.matching == reason)
            .count()
    };
    MatchOutcome::REASONS
        .iter()
        .copied()
        .rev()
        .max_by_key(|&reason| count(reason))
        .unwrap_or(MatchOutcome::UnknownReference)
}

/// What the group views of one response share: brands, providers and the rates, read once.
struct GroupContext<'a> {
    app: &'a App,
    lookups: Lookups,
    providers: BTreeMap<ProviderId, Option<EntityRef>>,
    table: Option<std::sync::Arc<crate::rates::ConversionTable>>,
}

impl<'a> GroupContext<'a> {
    fn new(app: &'a App, media: &MediaBase) -> ApiResult<GroupContext<'a>> {
        Ok(GroupContext {
            app,
            lookups: Lookups::new(media),
            providers: BTreeMap::new(),
            table: app.conversion_table()?,
        })
    }

    fn view(&mut self, group: &Group) -> ApiResult<ReconciliationGroup> {
        let prices: Vec<u64> = group
            .listings
            .iter()
            .filter_map(|l| {
                let table = self.table.as_deref()?;
                table.usd_price(l.details.price, l.details.currency.as_deref())
            })
            .collect();
        Ok(ReconciliationGroup {
            id: group.id.clone(),
            brand: self.brand(group)?,
            reference: group.identity.reference.clone(),
            spellings: group.spellings(),
            reason: reason_of(group).reason().unwrap_or("unknownReference"),
            listing_count: group.listings.len(),
            providers: self.providers(group)?,
            price_range_usd: PriceRange {
                low: prices.iter().copied().min(),
                high: prices.iter().copied().max(),
            },
            example_titles: example_titles(group, EXAMPLE_TITLES),
            candidates: nearest_models(self.app, group)?,
        })
    }

    fn brand(&mut self, group: &Group) -> ApiResult<Option<ClaimedBrandView>> {
        Ok(match &group.identity.brand {
            ClaimedBrand::Known(id) => self
                .lookups
                .brand(self.app, *id)?
                .map(|brand| ClaimedBrandView::Known(brand.into())),
            ClaimedBrand::Text(_) => most_used(
                group
                    .listings
                    .iter()
                    .filter_map(|l| l.details.scraped_brand.as_deref())
                    .map(str::trim)
                    .filter(|text| !text.is_empty()),
            )
            .map(|text| ClaimedBrandView::Text(text.to_owned())),
        })
    }

    fn providers(&mut self, group: &Group) -> ApiResult<Vec<ProviderCount>> {
        let mut counts: BTreeMap<ProviderId, usize> = BTreeMap::new();
        for listing in &group.listings {
            *counts.entry(listing.provider_id).or_default() += 1;
        }
        let mut out = Vec::with_capacity(counts.len());
        for (id, listing_count) in counts {
            let provider = match self.providers.get(&id) {
                Some(known) => known.clone(),
                None => {
                    let found = self.app.store.provider(id)?.map(|p| EntityRef::from(&p));
                    self.providers.insert(id, found.clone());
                    found
                }
            };
            out.extend(provider.map(|provider| ProviderCount {
                provider,
                listing_count,
            }));
        }
        out.sort_by_key(|count| std::cmp::Reverse(count.listing_count));
        Ok(out)
    }
}

/// The most frequent of `texts` (the first seen, on a tie).
fn most_used<'t>(texts: impl Iterator<Item = &'t str>) -> Option<&'t str> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for text in texts {
        match counts.iter_mut().find(|(t, _)| *t == text) {
            Some((_, n)) => *n += 1,
            None => counts.push((text, 1)),
        }
    }
    let best = counts.iter().map(|(_, n)| *n).max()?;
    counts.into_iter().find(|(_, n)| *n == best).map(|(t, _)| t)
}

/// `POST /reconciliation/link`: a group, or listings by id, and the model to link them to.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"group": "8bcf32a792c9e612", "model": "3"}))]
pub struct LinkBody {
    /// A group id of `GET /reconciliation`; give it or `listings`.
    #[schema(example = "8bcf32a792c9e612")]
    group: Option<String>,
    /// Listing ids (at most 1000), matched or not; give them or `group`.
    #[schema(example = json!(["7", "11"]))]
    listings: Option<Vec<String>>,
    /// The id of the model to link them to.
    #[schema(example = "3")]
    model: String,
}

/// `POST /reconciliation/models`: a group and the fields of the model to make of it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"group": "8bcf32a792c9e612", "fields": {"series": "submariner", "name": "Submariner Date", "bezelColors": ["green"], "releaseYear": 2003}}))]
pub struct CreateModelBody {
    /// A group id of `GET /reconciliation`.
    #[schema(example = "8bcf32a792c9e612")]
    group: String,
    /// The model's fields, as a line of models.jsonl names them (docs/dataset-format.md):
    /// `series` and `name` are required; `brand` defaults to the group's brand (and must be it
    /// when the group has one), `referenceNumber` to the group's most used spelling, `slug` to
    /// one made of name and reference, free in the brand; `alternateReferences`, `caliber`
    /// (`brandSlug/caliberSlug`), `description`, `pictures` and every field of the model
    /// specification are optional. The group's reference becomes one of the model's.
    #[schema(value_type = Object, example = json!({"series": "submariner", "name": "Submariner Date", "bezelColors": ["green"]}))]
    fields: Map<String, Value>,
}

/// `POST /reconciliation/models/update`: a group, the model to update for it, and the fields
/// to change.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"group": "8bcf32a792c9e612", "model": "3", "fields": {"description": "Green bezel, the Kermit."}}))]
pub struct UpdateModelBody {
    /// A group id of `GET /reconciliation`.
    #[schema(example = "8bcf32a792c9e612")]
    group: String,
    /// The id of the model to update.
    #[schema(example = "3")]
    model: String,
    /// Fields to write over the model's, named as in models.jsonl; a field set to null is
    /// cleared. A model keeps its brand. The group's reference is added to
    /// `alternateReferences` unless the model has it.
    #[serde(default)]
    #[schema(value_type = Object, example = json!({"description": "Green bezel, the Kermit."}))]
    fields: Map<String, Value>,
}

/// What a reconciliation wrote.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconciledView {
    /// The model the listings are linked to, as it is now (its `listingCount` included).
    pub model: ModelListItem,
    /// The listings linked by this decision.
    #[schema(example = json!(["7", "11"]))]
    pub linked_listings: Vec<String>,
    /// Other unmatched listings that match on their own once the model was made or changed.
    #[schema(example = json!(["15"]))]
    pub matched_listings: Vec<String>,
}

/// Links a group, or listings by id, to an existing model.
///
/// A person's decision: re-ingests and `watch-catalogue match` keep it while the sellers'
/// brand and reference text stand. One atomic write with its audit entry.
#[utoipa::path(post, path = "/reconciliation/link", operation_id = "reconciliation_link", tag = "reconciliation",
    request_body = LinkBody,
    responses((status = 200, description = "The listings are linked", body = ReconciledView)))]
pub async fn link(
    State(app): State<AppState>,
    Extension(media): Extension<MediaBase>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<LinkBody>,
) -> ApiResult<Json<ReconciledView>> {
    let selection = body.selection()?;
    let model = model_id(&body.model)?;
    reconcile_with(app, &caller, media, move |turn, app, actor| {
        reconciliation::link(turn, &app.listings, actor, &selection, model)
    })
    .await
}

/// Creates a model from a group and links the group to it.
///
/// The fields are checked as an import checks a line of models.jsonl; the group's reference
/// becomes one of the model's, and every other unmatched listing that now matches is matched.
/// One atomic write with its audit entry.
#[utoipa::path(post, path = "/reconciliation/models", operation_id = "reconciliation_create_model", tag = "reconciliation",
    request_body = CreateModelBody,
    responses((status = 200, description = "The model is made and the listings linked", body = ReconciledView)))]
pub async fn create_model(
    State(app): State<AppState>,
    Extension(media): Extension<MediaBase>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<CreateModelBody>,
) -> ApiResult<Json<ReconciledView>> {
    reconcile_with(app, &caller, media, move |turn, app, actor| {
        reconciliation::create_model(turn, &app.listings, actor, &body.group, body.fields)
    })
    .await
}

/// Updates a model from a group and links the group to it.
///
/// The fields are written over the model's, the group's reference is added to its alternates,
/// and every other unmatched listing that now matches is matched, as later listings with that
/// reference will be. One atomic write with its audit entry.
#[utoipa::path(post, path = "/reconciliation/models/update", operation_id = "reconciliation_update_model", tag = "reconciliation",
    request_body = UpdateModelBody,
    responses((status = 200, description = "The model is updated and the listings linked", body = ReconciledView)))]
pub async fn update_model(
    State(app): State<AppState>,
    Extension(media): Extension<MediaBase>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<UpdateModelBody>,
) -> ApiResult<Json<ReconciledView>> {
    let model = model_id(&body.model)?;
    reconcile_with(app, &caller, media, move |turn, app, actor| {
        reconciliation::update_model(turn, &app.listings, actor, &body.group, model, body.fields)
    })
    .await
}

impl LinkBody {
    /// What the body selects: a group or listings, exactly one of them.
    fn selection(&self) -> ApiResult<Selection> {
        match (&self.group, &self.listings) {
            (Some(group), None) => Ok(Selection::Group(group.clone())),
            (None, Some(ids)) => listing_ids(ids).map(Selection::Listings),
            (Some(_), Some(_)) => Err(ApiError::invalid(
                "`group`, `listings`: give one of them, not both",
                "link a group of GET /v1/reconciliation, or listings by id",
            )),
            (None, None) => Err(ApiError::invalid(
                "`group`: a group or listings to link is required",
                "give `group` (an id of GET /v1/reconciliation) or `listings` (listing ids)",
            )),
        }
    }
}

/// Listing ids; an id that is no listing's is a 404.
fn listing_ids(ids: &[String]) -> ApiResult<Vec<ListingId>> {
    if ids.is_empty() || ids.len() > MAX_LINKED_LISTINGS {
        return Err(ApiError::invalid(
            format!(
                "`listings`: give 1 to {MAX_LINKED_LISTINGS} listing ids, not {}",
                ids.len()
            ),
            "link more listings in several requests, or link their group",
        ));
    }
    ids.iter()
        .map(|id| {
            id.parse::<ListingId>()
                .map_err(|_| ApiError::unknown_listing(id))
        })
        .collect()
}

fn model_id(id: &str) -> ApiResult<ModelId> {
    id.parse::<ModelId>()
        .map_err(|_| ApiError::unknown_model(id))
}

/// Runs `job` for the signed-in admin through the data dir's writer, off the async workers
/// (it may wait for a running ingest's turn), and answers what it wrote.
async fn reconcile_with(
    app: AppState,
    caller: &Caller,
    media: MediaBase,
    job: impl FnOnce(&WriteTurn<'_>, &App, &Actor) -> Result<Reconciled, ReconcileError>
        + Send
        + 'static,
) -> ApiResult<Json<ReconciledView>> {
    let actor = actor(caller)?;
    blocking(move || {
        let reconciled = write(&app, |turn| job(turn, &app, &actor))?;
        reconciled_view(&app, &reconciled, &media)
    })
    .await
    .map(Json)
}

fn reconciled_view(
    app: &App,
    reconciled: &Reconciled,
    media: &MediaBase,
) -> ApiResult<ReconciledView> {
    let ids = |ids: &[ListingId]| ids.iter().map(ToString::to_string).collect();
    let model = assemble::model_items(app, &[reconciled.model.0], &mut Lookups::new(media))?
        .pop()
        .ok_or_else(|| ApiError::unknown_model(&reconciled.model.to_string()))?;
    Ok(ReconciledView {
        model,
        linked_listings: ids(&reconciled.linked),
        matched_listings: ids(&reconciled.matched),
    })
}
