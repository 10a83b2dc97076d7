//! The W3C reconciliation service's bodies (`/reconcile`), in the shapes of the Reconciliation
//! API 0.2 schemas: the manifest, a query's candidates and the signals behind each score,
//! suggestions, property proposals and data-extension rows.

use serde::Serialize;
use std::collections::BTreeMap;

/// The service manifest: what `GET /reconcile` answers without `queries` or `extend`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub versions: [&'static str; 1],
    pub name: &'static str,
    pub identifier_space: &'static str,
    pub schema_space: &'static str,
    pub documentation: String,
    pub view: UrlTemplate,
    pub preview: Preview,
    pub default_types: Vec<TypeView>,
    pub suggest: Suggest,
    pub extend: Extend,
}

/// Where an entity is shown: `{{id}}` stands for its id.
#[derive(Debug, Serialize)]
pub struct UrlTemplate {
    pub url: String,
}

/// The preview card's URL template and the frame OpenRefine gives it.
#[derive(Debug, Serialize)]
pub struct Preview {
    pub url: String,
    pub width: u32,
    pub height: u32,
}

/// The three suggest services.
#[derive(Debug, Serialize)]
pub struct Suggest {
    pub entity: Service,
    #[serde(rename = "type")]
    pub kind: Service,
    pub property: Service,
}

/// One service of the manifest: its base URL and path.
#[derive(Debug, Serialize)]
pub struct Service {
    pub service_url: String,
    pub service_path: String,
}

/// The data-extension service.
#[derive(Debug, Serialize)]
pub struct Extend {
    pub propose_properties: Service,
    /// No setting changes what an extension answers.
    pub property_settings: [(); 0],
}

/// A type as the protocol shows it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TypeView {
    pub id: &'static str,
    pub name: &'static str,
}

/// The result of one query.
#[derive(Debug, Serialize)]
pub struct QueryResult {
    pub result: Vec<Candidate>,
}

/// One candidate of a result.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub types: [TypeView; 1],
    /// 0 to 100; 100 only for a match.
    pub score: f64,
    #[serde(rename = "match")]
    pub matched: bool,
    pub description: String,
    pub features: Vec<Feature>,
}

/// One signal behind a score, so a user can see why and set thresholds.
#[derive(Debug, Clone, Serialize)]
pub struct Feature {
    pub id: &'static str,
    pub value: FeatureValue,
}

/// A feature's value: a flag or a number.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(untagged)]
pub enum FeatureValue {
    Flag(bool),
    Number(f64),
}

/// What a suggest service answers.
#[derive(Debug, Serialize)]
pub struct Suggestions<T> {
    pub result: Vec<T>,
}

/// An entity suggested by `suggest/entity`.
#[derive(Debug, Serialize)]
pub struct EntitySuggestion {
    pub id: String,
    pub name: String,
    pub description: String,
    pub notable: [TypeView; 1],
}

/// A type or property suggested by `suggest/type` or `suggest/property`.
#[derive(Debug, Serialize)]
pub struct NamedSuggestion {
    pub id: &'static str,
    pub name: &'static str,
}

/// What `propose_properties` answers: the properties a column of `type` can be extended with.
#[derive(Debug, Serialize)]
pub struct Proposal {
    #[serde(rename = "type")]
    pub kind: String,
    pub properties: Vec<PropertyView>,
    pub limit: usize,
}

/// A property as a proposal and the extension's `meta` name it.
#[derive(Debug, Serialize)]
pub struct PropertyView {
    pub id: &'static str,
    pub name: &'static str,
}

/// What a data-extension query answers: the properties' names, then each id's values.
#[derive(Debug, Serialize)]
pub struct ExtensionAnswer {
    pub meta: Vec<MetaView>,
    pub rows: BTreeMap<String, BTreeMap<&'static str, Vec<Value>>>,
}

/// A property of an extension's answer, with the type of its values when they are entities.
#[derive(Debug, Serialize)]
pub struct MetaView {
    pub id: &'static str,
    pub name: &'static str,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<TypeView>,
}

/// One value of a cell, in the protocol's shapes.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Value {
    Entity { id: String, name: String },
    Str { str: String },
    Float { float: f64 },
    Int { int: i64 },
}
