//! The reconciliation group: `GET /reconciliation` (unmatched listings grouped by the identity
//! their sellers claim, with the nearest catalogue models of `jobs::nearest_models`) and the three
//! writes that resolve a group: link it to a model, create a model from it, or update a model
//! for it.

use super::{actor, write, Caller};
use crate::api::assemble::{self, Lookups};
use crate::api::error::{ApiError, ApiResult};
use crate::api::layers::capacity::Work;
use crate::api::listings::{provider_id, MediaBase};
use crate::api::params::{parse_choice, parse_text, PageParams, Params};
use crate::api::requests::{CreateModelBody, JsonBody, LinkBody, UpdateModelBody};
use crate::api::views::back_office::Candidate;
use crate::api::views::back_office::{
    ClaimedBrandView, PriceRange, ProviderCount, ReconciledView, ReconciliationGroup,
};
#[allow(unused_imports)] // named in the OpenAPI annotations
use crate::api::views::ReconciliationGroupPage;
use crate::api::views::{EntityRef, Page};
use crate::app::App;
use crate::domain::{
    normalize_reference, ClaimedBrand, ListingId, MatchOutcome, ModelId, ProviderId,
};
use crate::jobs::nearest_models::{example_titles, nearest_models, NearModel};
use crate::jobs::reconciliation::{self, Group, ReconcileError, Reconciled, Selection};
use crate::jobs::users::Actor;
use crate::store::WriteTurn;
use axum::{Extension, Json};
use serde::Deserialize;
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

/// Unmatched listings grouped by the identity their sellers claim, largest group first.
///
/// Each group names its brand and reference, its reason, providers, prices and example titles,
/// and the catalogue's nearest models. Groups are computed from every unmatched listing on each
/// request (docs/decisions.md).
#[utoipa::path(get, path = "/reconciliation", operation_id = "reconciliation_groups", tag = "reconciliation",
    params(PageParams, GroupParams),
    responses((status = 200, description = "A page of groups of unmatched listings", body = ReconciliationGroupPage)))]
pub async fn groups(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(params): Params<GroupParams>,
) -> ApiResult<Json<Page<ReconciliationGroup>>> {
    let pagination = page.pagination()?;
    let page = work
        .run(move |app| {
            let filter = GroupFilter::parse(app, &params)?;
            let groups = reconciliation::unmatched_groups(app.store(), app.listings())?;
            let wanted: Vec<Group> = groups.into_iter().filter(|g| filter.keeps(g)).collect();
            let mut context = GroupContext::new(app, &media)?;
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
    table: Option<std::sync::Arc<crate::domain::rates::ConversionTable>>,
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
            candidates: nearest_models(self.app.store(), self.app.index(), group)?
                .into_iter()
                .map(candidate_view)
                .collect(),
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
                    let found = self
                        .app
                        .store()
                        .listings()
                        .provider(id)?
                        .map(|p| EntityRef::from(&p));
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

/// Links a group, or listings by id, to an existing model.
///
/// A person's decision: re-ingests and `watch-catalogue match` keep it while the sellers'
/// brand and reference text stand. One atomic write with its audit entry.
#[utoipa::path(post, path = "/reconciliation/link", operation_id = "reconciliation_link", tag = "reconciliation",
    request_body = LinkBody,
    responses((status = 200, description = "The listings are linked", body = ReconciledView)))]
pub async fn link(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<LinkBody>,
) -> ApiResult<Json<ReconciledView>> {
    let selection = body.selection()?;
    let model = model_id(&body.model)?;
    reconcile_with(&work, &caller, media, move |turn, app, actor| {
        reconciliation::link(turn, app.listings(), actor, &selection, model)
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
    work: Work,
    Extension(media): Extension<MediaBase>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<CreateModelBody>,
) -> ApiResult<Json<ReconciledView>> {
    reconcile_with(&work, &caller, media, move |turn, app, actor| {
        reconciliation::create_model(turn, app.listings(), actor, &body.group, body.fields)
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
    work: Work,
    Extension(media): Extension<MediaBase>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<UpdateModelBody>,
) -> ApiResult<Json<ReconciledView>> {
    let model = model_id(&body.model)?;
    reconcile_with(&work, &caller, media, move |turn, app, actor| {
        reconciliation::update_model(turn, app.listings(), actor, &body.group, model, body.fields)
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
    work: &Work,
    caller: &Caller,
    media: MediaBase,
    job: impl FnOnce(&WriteTurn<'_>, &App, &Actor) -> Result<Reconciled, ReconcileError>
        + Send
        + 'static,
) -> ApiResult<Json<ReconciledView>> {
    let actor = actor(caller)?;
    work.run(move |app| {
        let reconciled = write(app, |turn| job(turn, app, &actor))?;
        reconciled_view(app, &reconciled, &media)
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

/// A near model as the back office shows it: the score to three decimals.
fn candidate_view(near: NearModel) -> Candidate {
    Candidate {
        id: near.model.id.to_string(),
        name: near.model.name,
        reference_number: near.model.reference_number,
        slug: near.model.slug.to_string(),
        score: (near.score * 1000.0).round() / 1000.0,
        signal: near.signal.as_str(),
    }
}
