//! Autocomplete for OpenRefine's dialogs: `suggest/entity` (a reference prefix in any spelling
//! or name words, through the catalogue search of `GET /models?q=`), `suggest/type` and
//! `suggest/property` (the fixed lists, filtered by prefix).

use super::entity::{model_label, EntityId, EntityType};
use super::extend::extension_properties;
use super::query_batch::QUERY_PROPERTIES;
use super::service::Jsonp;
use crate::api::error::{ApiError, ApiResult};
use crate::api::layers::capacity::Work;
use crate::api::params::{parse_text_query, Params};
use crate::api::views::w3c::{EntitySuggestion, NamedSuggestion, Suggestions};
use crate::app::App;
use crate::domain::{BrandId, ModelId};
use axum::response::Response;
use catalogue_index::{DocKind, Filters, SearchRequest, SortOrder};
use serde::Deserialize;

/// Suggestions per answer.
const SUGGESTIONS: usize = 10;
/// Deepest `cursor` accepted: autocomplete never pages far.
const MAX_CURSOR: usize = 1000;

/// Query of the suggest services.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SuggestParams {
    /// What the user typed so far.
    prefix: Option<String>,
    /// `suggest/entity` only: the type of entity (`model` by default, or `brand`, `caliber`).
    #[serde(rename = "type")]
    kind: Option<String>,
    /// How many suggestions to skip (paging), 0 to 1000.
    #[param(value_type = Option<u32>, minimum = 0, maximum = 1000)]
    cursor: Option<String>,
    /// JSONP: the answer wrapped in a call of this function.
    #[param(pattern = "^[A-Za-z_$.][A-Za-z0-9_$.]{0,63}$")]
    callback: Option<String>,
}

impl SuggestParams {
    /// `cursor`, 0 when absent.
    fn cursor(&self) -> ApiResult<usize> {
        let Some(text) = self.cursor.as_deref() else {
            return Ok(0);
        };
        text.trim()
            .parse::<usize>()
            .ok()
            .filter(|c| *c <= MAX_CURSOR)
            .ok_or_else(|| {
                ApiError::invalid(
                    format!("`cursor` must be a whole number up to {MAX_CURSOR}, not `{text}`"),
                    "send the number of suggestions already shown, e.g. cursor=10",
                )
            })
    }
}

/// Models (or brands, calibres) whose reference starts with `prefix` or whose names hold its
/// words.
#[utoipa::path(get, path = "/reconcile/suggest/entity", operation_id = "reconcile_suggest_entity", tag = "reconcile",
    params(SuggestParams),
    responses((status = 200, description = "Suggested entities (W3C Reconciliation API 0.2, suggest-entities-response schema)", content_type = "application/json", body = Object)))]
pub async fn suggest_entity(
    work: Work,
    Params(params): Params<SuggestParams>,
) -> ApiResult<Response> {
    let jsonp = Jsonp::parse(params.callback.as_deref())?;
    let cursor = params.cursor()?;
    let Some(text) = parse_text_query(params.prefix.as_deref())? else {
        return Ok(jsonp.answer(&Suggestions::<EntitySuggestion> { result: Vec::new() }));
    };
    let kind = params
        .kind
        .as_deref()
        .and_then(EntityType::parse)
        .unwrap_or(EntityType::Model);
    let request = SearchRequest {
        kind: match kind {
            EntityType::Brand => DocKind::Brand,
            EntityType::Model | EntityType::Caliber => DocKind::Model,
        },
        text: Some(text.clone()),
        filters: Filters::default(),
        sort: SortOrder::Relevance,
        offset: cursor,
        limit: SUGGESTIONS,
    };
    let result = work
        .run(move |app| match kind {
            EntityType::Model => model_suggestions(app, &app.index().search(&request)?.ids),
            EntityType::Brand => brand_suggestions(app, &app.index().search(&request)?.ids),
            EntityType::Caliber => caliber_suggestions(app, &text.normalized_reference, cursor),
        })
        .await?;
    Ok(jsonp.answer(&Suggestions { result }))
}

fn model_suggestions(app: &App, ids: &[u64]) -> ApiResult<Vec<EntitySuggestion>> {
    let ids: Vec<ModelId> = ids.iter().copied().map(ModelId).collect();
    let mut found = Vec::new();
    for model in app.store().catalogue().models(&ids)? {
        if let Some(brand) = app.store().catalogue().brand(model.brand_id)? {
            found.push(EntitySuggestion {
                id: EntityId::model(&brand.slug, &model.slug).to_string(),
                name: model_label(&brand, &model),
                description: model.reference_number.clone(),
                notable: [EntityType::Model.view()],
            });
        }
    }
    Ok(found)
}

fn brand_suggestions(app: &App, ids: &[u64]) -> ApiResult<Vec<EntitySuggestion>> {
    let mut found = Vec::new();
    for id in ids {
        if let Some(brand) = app.store().catalogue().brand(BrandId(*id))? {
            found.push(EntitySuggestion {
                id: EntityId::brand(&brand.slug).to_string(),
                description: brand.country.clone().unwrap_or_default(),
                name: brand.name,
                notable: [EntityType::Brand.view()],
            });
        }
    }
    Ok(found)
}

/// Calibres have no search index: those whose slug is the prefix, in any brand.
fn caliber_suggestions(
    app: &App,
    normalized: &str,
    cursor: usize,
) -> ApiResult<Vec<EntitySuggestion>> {
    let Some(slug) = crate::domain::Slug::derive(normalized) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for caliber in app
        .store()
        .catalogue()
        .calibers_with_slug(&slug)?
        .into_iter()
        .skip(cursor)
    {
        if let Some(brand) = app.store().catalogue().brand(caliber.brand_id)? {
            found.push(EntitySuggestion {
                id: EntityId::caliber(&brand.slug, &caliber.slug).to_string(),
                name: super::entity::caliber_label(&brand, &caliber),
                description: caliber.kind.clone().unwrap_or_default(),
                notable: [EntityType::Caliber.view()],
            });
        }
    }
    found.truncate(SUGGESTIONS);
    Ok(found)
}

/// The types whose id or name starts with `prefix` (any case).
#[utoipa::path(get, path = "/reconcile/suggest/type", operation_id = "reconcile_suggest_type", tag = "reconcile",
    params(SuggestParams),
    responses((status = 200, description = "Suggested types (W3C Reconciliation API 0.2, suggest-types-response schema)", content_type = "application/json", body = Object)))]
pub async fn suggest_type(Params(params): Params<SuggestParams>) -> ApiResult<Response> {
    let types = EntityType::ALL.map(|t| (t.id(), t.name()));
    named(&params, types.into_iter())
}

/// The properties (of queries and of extensions) whose id or name starts with `prefix`.
#[utoipa::path(get, path = "/reconcile/suggest/property", operation_id = "reconcile_suggest_property", tag = "reconcile",
    params(SuggestParams),
    responses((status = 200, description = "Suggested properties (W3C Reconciliation API 0.2, suggest-properties-response schema)", content_type = "application/json", body = Object)))]
pub async fn suggest_property(Params(params): Params<SuggestParams>) -> ApiResult<Response> {
    let mut seen = std::collections::BTreeSet::new();
    let all = QUERY_PROPERTIES
        .into_iter()
        .chain(extension_properties())
        .filter(|(id, _)| seen.insert(*id));
    named(&params, all)
}

/// The `(id, name)` pairs whose id or a word of whose name starts with the prefix.
fn named(
    params: &SuggestParams,
    all: impl Iterator<Item = (&'static str, &'static str)>,
) -> ApiResult<Response> {
    let jsonp = Jsonp::parse(params.callback.as_deref())?;
    let cursor = params.cursor()?;
    let prefix = params.prefix.as_deref().unwrap_or("").trim().to_lowercase();
    let starts = |text: &str| {
        let text = text.to_lowercase();
        text.starts_with(&prefix) || text.split_whitespace().any(|w| w.starts_with(&prefix))
    };
    let result = all
        .filter(|(id, name)| starts(id) || starts(name))
        .skip(cursor)
        .map(|(id, name)| NamedSuggestion { id, name })
        .collect();
    Ok(jsonp.answer(&Suggestions { result }))
}
