//! The duplicate-models group: groups of models of one brand that may be one watch entered
//! twice (`GET /duplicate-models`), and the two writes that settle a group: merge its
//! duplicates into a keeper, or dismiss its pairs. Writes go through `jobs::merge`; the full
//! pass of the finder is a batch job, `POST /admin/duplicates/rebuild` (`admin_jobs`).

use super::{actor, write, Caller};
use crate::api::assemble::{self, Lookups};
use crate::api::error::ApiResult;
use crate::api::layers::capacity::Work;
use crate::api::listings::MediaBase;
use crate::api::params::{parse_choice, parse_text, PageParams, Pagination, Params};
use crate::api::requests::{DismissBody, JsonBody, MergeBody};
use crate::api::views::back_office::{
    DismissView, DuplicateGroup, DuplicateGroupPage, DuplicateModel, KeeperRef, KindSummary,
    MergeView, SeriesRef,
};
use crate::api::views::EntityRef;
use crate::app::App;
use crate::domain::{normalize_reference, DuplicateSignal, ModelId};
use crate::jobs::duplicates::Group;
use crate::jobs::merge::{self, MergeError};
use crate::jobs::read_pool;
use axum::{Extension, Json};
use rayon::prelude::*;
use serde::Deserialize;

/// Query of `GET /duplicate-models` (and of the console's triage).
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GroupParams {
    /// A brand's name or slug, or a reference in any spelling (or its start).
    pub q: Option<String>,
    /// all (default), sameReference, alternateOverlap or baseVariant.
    #[param(example = "all")]
    pub kind: Option<String>,
    /// Brand slug.
    pub brand: Option<String>,
}

pub fn kind_schema() -> utoipa::openapi::Object {
    crate::api::params::choice_schema(&KINDS)
}

const KINDS: [(&str, Option<DuplicateSignal>); 4] = [
    ("all", None),
    ("sameReference", Some(DuplicateSignal::SameReference)),
    ("alternateOverlap", Some(DuplicateSignal::AlternateOverlap)),
    ("baseVariant", Some(DuplicateSignal::BaseVariant)),
];

/// Groups of models of one brand that may be one watch entered twice.
///
/// Ordered by signal strength (sameReference, alternateOverlap, baseVariant), then size, then
/// brand and reference; models in a group oldest first. Pairs an admin dismissed are never
/// offered again.
#[utoipa::path(get, path = "/duplicate-models", operation_id = "duplicate_models", tag = "duplicate-models",
    params(PageParams, GroupParams),
    responses((status = 200, description = "A page of duplicate groups", body = DuplicateGroupPage)))]
pub async fn groups(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(params): Params<GroupParams>,
) -> ApiResult<Json<DuplicateGroupPage>> {
    let pagination = page.pagination()?;
    work.run(move |app| group_page(app, &params, pagination, &media))
        .await
        .map(Json)
}

/// The page `pagination` of the duplicate groups `params` keeps, with the count of each kind:
/// what `GET /duplicate-models` answers and the console's triage shows a group of.
pub fn group_page(
    app: &App,
    params: &GroupParams,
    pagination: Pagination,
    media: &MediaBase,
) -> ApiResult<DuplicateGroupPage> {
    let kind = parse_choice("kind", params.kind.as_deref(), &KINDS)?.flatten();
    let text = parse_text(params.q.as_deref())?;
    let brand = params
        .brand
        .as_deref()
        .map(|slug| assemble::brand_by_slug(app, slug))
        .transpose()?
        .map(|b| b.id);
    let filter = Filter::new(app, brand, text.as_deref())?;
    let all = app.duplicate_groups()?;
    let matching: Vec<&Group> = all
        .iter()
        .map(|g| &**g)
        .filter(|g| filter.keeps(g))
        .collect();
    let mut summary = KindSummary::default();
    for group in &matching {
        *match group.kind {
            DuplicateSignal::SameReference => &mut summary.same_reference,
            DuplicateSignal::AlternateOverlap => &mut summary.alternate_overlap,
            DuplicateSignal::BaseVariant => &mut summary.base_variant,
        } += 1;
    }
    let of_kind: Vec<&Group> = matching
        .into_iter()
        .filter(|g| kind.is_none_or(|k| g.kind == k))
        .collect();
    let page = pagination.slice(of_kind);
    // Each group's models, listing counts and pictures are cold reads right after a start:
    // the page's are read with many reads waiting at once, a group and its lookups to a
    // thread (D-202).
    let data = read_pool::with_waiting_reads(|| {
        (page.data.par_iter())
            .map(|group| group_view(app, group, &mut Lookups::new(media)))
            .collect::<ApiResult<Vec<_>>>()
    })?;
    Ok(DuplicateGroupPage {
        data,
        page: page.page,
        page_size: page.page_size,
        total: page.total,
        total_pages: page.total_pages,
        summary,
    })
}

/// Merges the duplicates into the keeper.
///
/// In order: relinks the duplicates' listings (matched and linked) to the keeper, folds their
/// references into its alternates, moves the pictures of types it lacks, backfills its empty
/// fields, then deletes the duplicates, whose paths answer 301 to the keeper's from then on.
/// One atomic write with its audit entry. Past the first 250 listings, the rest are relinked
/// after the answer, 250 a write, within seconds; `movedListings` counts them all.
#[utoipa::path(post, path = "/duplicate-models/merge", operation_id = "duplicate_models_merge", tag = "duplicate-models",
    request_body = MergeBody,
    responses((status = 200, description = "The duplicates are merged into the keeper", body = MergeView)))]
pub async fn merge(
    work: Work,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<MergeBody>,
) -> ApiResult<Json<MergeView>> {
    let actor = actor(&caller)?;
    let keeper = model_id(&body.keeper_id)?;
    let duplicates = body
        .duplicate_ids
        .iter()
        .map(|id| model_id(id))
        .collect::<ApiResult<Vec<_>>>()?;
    work.run(move |app| {
        merge::read_ahead_of_merge(app.store(), app.listings(), keeper, &duplicates)?;
        let merged = write(app, |turn| {
            merge::merge(turn, app.listings(), &actor, keeper, &duplicates)
        })?;
        let model = app
            .store()
            .catalogue()
            .model(merged.keeper)?
            .ok_or_else(|| MergeError::UnknownModel(merged.keeper.to_string()))?;
        Ok(MergeView {
            keeper: KeeperRef {
                id: model.id.to_string(),
                name: model.name,
                reference_number: model.reference_number,
                slug: model.slug.to_string(),
            },
            merged_models: merged.merged_models,
            moved_listings: merged.moved_listings,
            moved_pictures: merged.moved_pictures,
            added_references: merged.added_references,
        })
    })
    .await
    .map(Json)
}

/// Dismisses every pair of the models: the finder never offers them again.
///
/// Answers the pairs not dismissed before. A group whose pairs are all dismissed disappears; a
/// model that pairs with one of them later surfaces with it. One atomic write with its audit
/// entry.
#[utoipa::path(post, path = "/duplicate-models/dismiss", operation_id = "duplicate_models_dismiss", tag = "duplicate-models",
    request_body = DismissBody,
    responses((status = 200, description = "The pairs are dismissed", body = DismissView)))]
pub async fn dismiss(
    work: Work,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<DismissBody>,
) -> ApiResult<Json<DismissView>> {
    let actor = actor(&caller)?;
    let models = body
        .model_ids
        .iter()
        .map(|id| model_id(id))
        .collect::<ApiResult<Vec<_>>>()?;
    work.run(move |app| {
        let dismissed_pairs = write(app, |turn| merge::dismiss(turn, &actor, &models))?;
        Ok(DismissView { dismissed_pairs })
    })
    .await
    .map(Json)
}

/// What `q` and `brand` keep.
struct Filter {
    brand: Option<crate::domain::BrandId>,
    q: Option<TextFilter>,
}

/// `q`: brands whose name or slug it is, and the reference it may begin.
struct TextFilter {
    named: Vec<crate::domain::BrandId>,
    reference: Option<String>,
}

impl Filter {
    fn new(app: &App, brand: Option<crate::domain::BrandId>, q: Option<&str>) -> ApiResult<Filter> {
        let Some(q) = q else {
            return Ok(Filter { brand, q: None });
        };
        let folded = q.trim().to_lowercase();
        let mut named = Vec::new();
        for found in app.store().catalogue().brands() {
            let found = found?;
            if found.name.to_lowercase() == folded || found.slug.as_str() == folded {
                named.push(found.id);
            }
        }
        let reference = Some(normalize_reference(q)).filter(|r| !r.is_empty());
        Ok(Filter {
            brand,
            q: Some(TextFilter { named, reference }),
        })
    }

    /// A `q` that names no brand and holds no reference keeps nothing.
    fn keeps(&self, group: &Group) -> bool {
        if self.brand.is_some_and(|b| b != group.brand) {
            return false;
        }
        let Some(q) = &self.q else {
            return true;
        };
        q.named.contains(&group.brand)
            || q.reference
                .as_ref()
                .is_some_and(|r| group.references.iter().any(|g| g.starts_with(r.as_str())))
    }
}

fn group_view(app: &App, group: &Group, lookups: &mut Lookups) -> ApiResult<DuplicateGroup> {
    let ids: Vec<u64> = group.models.iter().map(|id| id.0).collect();
    let items = assemble::model_items(app, &ids, lookups)?;
    let models = app.store().catalogue().models(&group.models)?;
    let mut views = Vec::with_capacity(models.len());
    for (model, item) in models.iter().zip(items) {
        let series = lookups.series(app, model.series_id)?;
        let brand: EntityRef = item.brand;
        views.push(DuplicateModel {
            id: model.id.to_string(),
            name: model.name.clone(),
            reference_number: model.reference_number.clone(),
            slug: model.slug.to_string(),
            brand_name: brand.name,
            brand_slug: brand.slug,
            alternate_references: model.alternate_references.clone(),
            series: SeriesRef {
                name: series.as_ref().map(|s| s.name.clone()).unwrap_or_default(),
                slug: item.series.slug,
            },
            listing_count: item.listing_count,
            thumbnail_url: item.thumbnail_url,
            created_at: model.created_at.to_rfc3339(),
        });
    }
    Ok(DuplicateGroup {
        kind: group.kind.as_str(),
        name_score: (group.name_score * 1000.0).round() / 1000.0,
        models: views,
    })
}

fn model_id(id: &str) -> ApiResult<ModelId> {
    Ok(id
        .parse::<ModelId>()
        .map_err(|_| MergeError::UnknownModel(id.to_owned()))?)
}
