//! Data extension: the model properties a reconciled column can be extended with
//! (`propose_properties`), and their values for up to [`MAX_IDS`] ids (`extend`). Unknown
//! properties are left out and unknown ids get empty rows, as the protocol asks.

use super::entity::{caliber_label, Entity, EntityId, EntityType};
use super::service::Jsonp;
use crate::api::error::{ApiError, ApiResult};
use crate::api::listings::asking_prices;
use crate::api::params::Params;
use crate::api::requests::refuse_repeated_key;
use crate::api::views::w3c::{ExtensionAnswer, MetaView, PropertyView, Proposal, Value};
use crate::app::App;
use crate::domain::{Brand, Model};
use axum::response::Response;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Most ids in one extension query: the batch size of queries.
pub const MAX_IDS: usize = super::query_batch::MAX_QUERIES;

/// A model property an extension can add: its id, name, and the type of an entity value.
#[derive(Debug, Clone, Copy)]
struct ExtensionProperty {
    id: &'static str,
    name: &'static str,
    entity: Option<EntityType>,
}

const fn property(id: &'static str, name: &'static str) -> ExtensionProperty {
    ExtensionProperty {
        id,
        name,
        entity: None,
    }
}

/// Every property of a model an extension can add, in the order proposed.
const PROPERTIES: [ExtensionProperty; 11] = [
    property("reference", "Reference number"),
    ExtensionProperty {
        id: "brand",
        name: "Brand",
        entity: Some(EntityType::Brand),
    },
    property("series", "Series"),
    ExtensionProperty {
        id: "caliber",
        name: "Caliber (movement)",
        entity: Some(EntityType::Caliber),
    },
    property("diameter", "Case diameter (mm)"),
    property("caseMaterials", "Case materials"),
    property("waterResistance", "Water resistance (m)"),
    property("releaseYear", "Release year"),
    property("discontinuationYear", "Discontinuation year"),
    property("listingCount", "Current listings (active)"),
    property("medianPriceUSD", "Median asking price (USD)"),
];

/// The ids and names of every extension property, for `suggest/property`.
pub fn extension_properties() -> impl Iterator<Item = (&'static str, &'static str)> {
    PROPERTIES.iter().map(|p| (p.id, p.name))
}

/// Query of `GET /reconcile/propose_properties`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProposeParams {
    /// The type of the reconciled column; `model` by default (the other types have none).
    #[serde(rename = "type")]
    kind: Option<String>,
    /// Most properties to propose.
    #[param(value_type = Option<u32>, minimum = 0)]
    limit: Option<String>,
    /// JSONP: the answer wrapped in a call of this function.
    #[param(pattern = "^[A-Za-z_$.][A-Za-z0-9_$.]{0,63}$")]
    callback: Option<String>,
}

/// The properties a column of `type` can be extended with.
#[utoipa::path(get, path = "/reconcile/propose_properties", operation_id = "reconcile_propose_properties", tag = "reconcile",
    params(ProposeParams),
    responses((status = 200, description = "Property proposals (W3C Reconciliation API 0.2, data-extension-property-proposal schema)", content_type = "application/json", body = Object)))]
pub async fn propose_properties(Params(params): Params<ProposeParams>) -> ApiResult<Response> {
    let jsonp = Jsonp::parse(params.callback.as_deref())?;
    let kind = params
        .kind
        .unwrap_or_else(|| EntityType::Model.id().to_owned());
    let limit = match params.limit.as_deref() {
        None => PROPERTIES.len(),
        Some(text) => text.trim().parse::<usize>().map_err(|_| {
            ApiError::invalid(
                format!("`limit` must be a whole number, not `{text}`"),
                "e.g. limit=5",
            )
        })?,
    };
    let properties = match EntityType::parse(&kind) {
        Some(EntityType::Model) => PROPERTIES
            .iter()
            .take(limit)
            .map(|p| PropertyView {
                id: p.id,
                name: p.name,
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(jsonp.answer(&Proposal {
        kind,
        properties,
        limit,
    }))
}

/// A data-extension query: the ids of a reconciled column and the properties wanted.
#[derive(Debug, Deserialize)]
pub struct ExtensionQuery {
    ids: Vec<String>,
    properties: Vec<RequestedProperty>,
}

#[derive(Debug, Deserialize)]
struct RequestedProperty {
    id: String,
}

impl ExtensionQuery {
    /// The query in JSON text, checked: at most [`MAX_IDS`] ids.
    pub fn parse(json: &str) -> ApiResult<ExtensionQuery> {
        let value = serde_json::from_str(json).map_err(|e| bad_extension(e.to_string()))?;
        refuse_repeated_key(json, "`extend`", EXTEND_HINT)?;
        Self::read(value)
    }

    /// The query already parsed as JSON (a JSON body).
    pub fn read(value: serde_json::Value) -> ApiResult<ExtensionQuery> {
        let query: ExtensionQuery = serde_path_to_error::deserialize(value)
            .map_err(|e| bad_extension(format!("{}: {}", e.path(), e.inner())))?;
        if query.ids.len() > MAX_IDS {
            return Err(ApiError::invalid(
                format!("the extension query has {} ids", query.ids.len()),
                format!("send at most {MAX_IDS} ids per query"),
            ));
        }
        Ok(query)
    }
}

const EXTEND_HINT: &str = "send {\"ids\": [\"models/rolex/submariner-date-16610\"], \"properties\": [{\"id\": \"reference\"}]}";

fn bad_extension(problem: String) -> ApiError {
    ApiError::invalid(
        format!("`extend` could not be read: {problem}"),
        EXTEND_HINT,
    )
}

/// The values of the known properties asked for, for every id asked for.
/// A property no model has is refused, naming the ones there are: dropped silently, a
/// spreadsheet's new column would stay empty with no word why.
pub fn extend(app: &App, query: &ExtensionQuery) -> ApiResult<ExtensionAnswer> {
    if let Some(unknown) =
        (query.properties.iter()).find(|r| !PROPERTIES.iter().any(|p| p.id == r.id))
    {
        let known: Vec<&str> = PROPERTIES.iter().map(|p| p.id).collect();
        return Err(ApiError::invalid(
            format!("`extend`: no property `{}`", unknown.id),
            format!(
                "the properties are: {} (GET /v1/reconcile/propose_properties?type=model)",
                known.join(", ")
            ),
        ));
    }
    let wanted: Vec<&ExtensionProperty> = PROPERTIES
        .iter()
        .filter(|p| query.properties.iter().any(|r| r.id == p.id))
        .collect();
    let mut rows = BTreeMap::new();
    for id in &query.ids {
        let model = match EntityId::parse(id) {
            Some(parsed) if parsed.kind == EntityType::Model => Entity::read(app, &parsed)?,
            _ => None,
        };
        let mut row = BTreeMap::new();
        for property in &wanted {
            let values = match &model {
                Some(Entity::Model(brand, model)) => values_of(app, brand, model, property.id)?,
                _ => Vec::new(),
            };
            row.insert(property.id, values);
        }
        rows.insert(id.clone(), row);
    }
    let meta = wanted
        .iter()
        .map(|p| MetaView {
            id: p.id,
            name: p.name,
            kind: p.entity.map(EntityType::view),
        })
        .collect();
    Ok(ExtensionAnswer { meta, rows })
}

/// The values of `property` for `model`.
fn values_of(app: &App, brand: &Brand, model: &Model, property: &str) -> ApiResult<Vec<Value>> {
    let text = |s: &str| Value::Str { str: s.to_owned() };
    let spec = &model.spec;
    let year = |y: Option<i32>| y.map(|y| Value::Int { int: i64::from(y) });
    let float = |f: Option<f64>| f.map(|f| Value::Float { float: f });
    Ok(match property {
        "reference" => vec![text(&model.reference_number)],
        "brand" => vec![Value::Entity {
            id: EntityId::brand(&brand.slug).to_string(),
            name: brand.name.clone(),
        }],
        "series" => app
            .store()
            .catalogue()
            .series(model.series_id)?
            .map(|s| text(&s.name))
            .into_iter()
            .collect(),
        "caliber" => caliber_of(app, model)?.into_iter().collect(),
        "diameter" => float(spec.diameter).into_iter().collect(),
        "caseMaterials" => spec.case_materials.iter().map(|m| text(m)).collect(),
        "waterResistance" => float(spec.water_resistance).into_iter().collect(),
        "releaseYear" => year(spec.release_year).into_iter().collect(),
        "discontinuationYear" => year(spec.discontinuation_year).into_iter().collect(),
        "listingCount" => vec![Value::Int {
            int: i64::try_from(app.store().listings().listing_count(model.id)?).unwrap_or(i64::MAX),
        }],
        "medianPriceUSD" => asking_prices(app, model.id, None, "USD".to_owned())?
            .median
            .map(|median| Value::Int {
                int: i64::try_from(median).unwrap_or(i64::MAX),
            })
            .into_iter()
            .collect(),
        _ => Vec::new(),
    })
}

/// The model's calibre as an entity value, under the calibre's own brand (an ETA movement in
/// a Tudor is `calibers/eta/...`).
fn caliber_of(app: &App, model: &Model) -> ApiResult<Option<Value>> {
    let Some(caliber) = model
        .caliber_id
        .map(|id| app.store().catalogue().caliber(id))
        .transpose()?
        .flatten()
    else {
        return Ok(None);
    };
    let Some(maker) = app.store().catalogue().brand(caliber.brand_id)? else {
        return Ok(None);
    };
    Ok(Some(Value::Entity {
        id: EntityId::caliber(&maker.slug, &caliber.slug).to_string(),
        name: caliber_label(&maker, &caliber),
    }))
}
