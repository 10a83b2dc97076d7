//! The reconciliation group: `GET /reconciliation` (unmatched listings grouped by the identity
//! their sellers claim, with the nearest catalogue models of `jobs::nearest_models`) and the three
//! writes that resolve a group: link it to a model, create a model from it, or update a model
//! for it.

use super::{actor, write, Caller};
use crate::api::assemble::{self, Lookups};
use crate::api::error::{ApiError, ApiResult};
use crate::api::layers::capacity::Work;
use crate::api::listings::{provider_id, MediaBase};
use crate::api::params::{parse_choice, parse_text, PageParams, Pagination, Params};
use crate::api::requests::{CreateModelBody, JsonBody, LinkBody, UpdateModelBody};
use crate::api::views::back_office::Candidate;
use crate::api::views::back_office::{
    ClaimedBrandView, LearntView, PriceRange, ProviderCount, ReconciledView, ReconciliationGroup,
};
#[allow(unused_imports)] // named in the OpenAPI annotations
use crate::api::views::ReconciliationGroupPage;
use crate::api::views::{EntityRef, Page};
use crate::app::App;
use crate::domain::{ClaimedBrand, ListingId, ModelId, ProviderId};
use crate::jobs::nearest_models::{self, GroupSample, NearModel};
use crate::jobs::read_pool;
use crate::jobs::reconciliation::{self, ReconcileError, Reconciled, Selection};
use crate::jobs::unmatched_groups::{self, GroupFilter, ShownGroup};
use crate::jobs::users::Actor;
use crate::store::WriteTurn;
use axum::{Extension, Json};
use rayon::prelude::*;
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
    pub brand: Option<String>,
    /// Provider slug: groups with at least one listing of that provider.
    pub provider: Option<String>,
    /// unknownBrand, unknownReference, ambiguous or noReference: groups of that reason.
    pub reason: Option<String>,
    /// Words of its listings' titles, brands or references, as listing search reads them, or
    /// the start of its reference or brand text in any spelling.
    pub q: Option<String>,
}

/// Unmatched listings grouped by the identity their sellers claim, largest group first.
///
/// Each group names its brand and reference, its reason, providers, prices and example titles,
/// and the catalogue's nearest models. Groups are kept with the listings as they are written,
/// so a page reads its own groups (docs/decisions.md).
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
        .run(move |app| group_page(app, &params, pagination, &media))
        .await?;
    Ok(Json(page))
}

/// The page `pagination` of the groups `params` keeps, each with its candidates: what
/// `GET /reconciliation` answers and the console's reconciliation page shows.
pub fn group_page(
    app: &App,
    params: &GroupParams,
    pagination: Pagination,
    media: &MediaBase,
) -> ApiResult<Page<ReconciliationGroup>> {
    let filter = group_filter(app, params)?;
    let (groups, total) = unmatched_groups::group_page(
        app.store(),
        app.listings(),
        &filter,
        pagination.offset(),
        pagination.page_size,
    )?;
    // Each group's titles and candidates are record reads and a few index searches, cold
    // after a start: the page's are read with many reads waiting at once.
    let samples: Vec<GroupSample> = read_pool::with_waiting_reads(|| {
        groups
            .par_iter()
            .map(|group| sample(app, group))
            .collect::<Result<_, _>>()
    })?;
    let mut context = GroupContext::new(app, media)?;
    pagination
        .wrap(groups.into_iter().zip(samples).collect(), total)
        .try_map(|(group, sample)| context.view(&group, sample))
}

/// The group `id` as `GET /reconciliation` shows it, with its candidates: what the console's
/// form that creates a model from it is filled from. An id no group has is a 404.
pub fn group_view(app: &App, id: &str, media: &MediaBase) -> ApiResult<ReconciliationGroup> {
    let group = unmatched_groups::one_group(app.store(), id)?
        .ok_or_else(|| ReconcileError::UnknownGroup(id.to_owned()))?;
    let sample = sample(app, &group)?;
    GroupContext::new(app, media)?.view(&group, sample)
}

/// A group's example titles and nearest models.
fn sample(app: &App, group: &ShownGroup) -> Result<GroupSample, ReconcileError> {
    let kept = &app.kept().candidates;
    nearest_models::sample(app.store(), app.index(), kept, group)
}

/// The filters of `GET /reconciliation`, resolved.
fn group_filter(app: &App, params: &GroupParams) -> ApiResult<GroupFilter> {
    Ok(GroupFilter {
        brand: params
            .brand
            .as_deref()
            .map(|slug| assemble::brand_by_slug(app, slug))
            .transpose()?
            .map(|brand| brand.id),
        provider: params
            .provider
            .as_deref()
            .map(|slug| provider_id(app, slug))
            .transpose()?
            .map(ProviderId),
        reason: parse_choice("reason", params.reason.as_deref(), &super::reason_choices())?,
        text: parse_text(params.q.as_deref())?.filter(|text| !text.trim().is_empty()),
    })
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

    fn view(&mut self, group: &ShownGroup, sample: GroupSample) -> ApiResult<ReconciliationGroup> {
        let (low, high) = group.tally.price_range_usd(self.table.as_deref());
        let GroupSample {
            mut titles,
            candidates,
        } = sample;
        titles.truncate(EXAMPLE_TITLES);
        Ok(ReconciliationGroup {
            id: group.id.clone(),
            brand: self.brand(group)?,
            reference: group.identity().reference.clone(),
            spellings: group.tally.spellings(),
            reason: group.tally.reason().reason().unwrap_or("unknownReference"),
            listing_count: group.listing_count(),
            providers: self.providers(group)?,
            price_range_usd: PriceRange { low, high },
            example_titles: titles,
            candidates: candidates.into_iter().map(candidate_view).collect(),
        })
    }

    fn brand(&mut self, group: &ShownGroup) -> ApiResult<Option<ClaimedBrandView>> {
        Ok(match &group.identity().brand {
            ClaimedBrand::Known(id) => self
                .lookups
                .brand(self.app, *id)?
                .map(|brand| ClaimedBrandView::Known(brand.into())),
            ClaimedBrand::Text(_) => group.tally.brand_text().map(ClaimedBrandView::Text),
        })
    }

    fn providers(&mut self, group: &ShownGroup) -> ApiResult<Vec<ProviderCount>> {
        let mut out = Vec::with_capacity(group.tally.providers.len());
        for (&id, &listing_count) in &group.tally.providers {
            let listing_count = listing_count.max(0) as usize;
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
    reconcile_with(&work, &caller, media, move |turn, _, actor| {
        reconciliation::link(turn, actor, &selection, model)
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
        learnt: LearntView {
            brand_alias: reconciled.learnt.brand_alias.clone(),
            reference: reconciled.learnt.reference.clone(),
        },
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
