//! Reading a query batch, `{key: {query, type, limit, properties, type_strict}}`, as the 0.2
//! schema reads it (a query or at least one property, no other field), at most
//! [`MAX_QUERIES`] queries; the properties the catalogue understands become [`Clues`].

use super::entity::EntityType;
use crate::api::error::ApiError;
use crate::api::requests::refuse_repeated_key;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Most queries in one batch (OpenRefine sends 10 by default).
pub const MAX_QUERIES: usize = 50;
/// Candidates per query when the query sets no `limit`.
pub const DEFAULT_LIMIT: usize = 5;
/// Most candidates per query, whatever `limit` says.
pub const MAX_LIMIT: usize = 25;

/// One query, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The free text, trimmed; may be empty when properties say it all.
    pub text: String,
    pub kind: EntityType,
    pub limit: usize,
    pub clues: Clues,
}

pub use crate::jobs::w3c_candidates::Clues;

/// The property ids [`Clues`] reads, with their names: `suggest/property` offers them.
pub const QUERY_PROPERTIES: [(&str, &str); 5] = [
    ("brand", "Brand"),
    ("reference", "Reference number"),
    ("series", "Series"),
    ("caliber", "Caliber (movement reference)"),
    ("year", "Year (of production or purchase)"),
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuery {
    query: Option<String>,
    #[serde(rename = "type")]
    kind: Option<OneOrMany<String>>,
    limit: Option<f64>,
    properties: Option<Vec<RawProperty>>,
    /// Read so that a bad value is refused; every type but the query's own is ignored anyway.
    #[serde(rename = "type_strict")]
    _type_strict: Option<TypeStrict>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum TypeStrict {
    Any,
    Should,
    All,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    fn into_vec(self) -> Vec<T> {
        match self {
            OneOrMany::One(one) => vec![one],
            OneOrMany::Many(many) => many,
        }
    }
}

#[derive(Deserialize)]
struct RawProperty {
    pid: String,
    v: OneOrMany<PropertyValue>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum PropertyValue {
    Text(String),
    Number(serde_json::Number),
    /// Accepted as the schema allows; no understood property is a flag.
    Flag(#[allow(dead_code)] bool),
    Entity {
        id: String,
        name: Option<String>,
    },
}

impl PropertyValue {
    /// The value as text: a reconciled value by its name, else its id (`brands/rolex` read as
    /// `rolex`); a flag says nothing the catalogue reads.
    fn text(&self) -> Option<String> {
        let text = match self {
            PropertyValue::Text(text) => text.clone(),
            PropertyValue::Number(number) => number.to_string(),
            PropertyValue::Flag(_) => return None,
            PropertyValue::Entity { id, name } => name
                .clone()
                .unwrap_or_else(|| id.rsplit('/').next().unwrap_or(id).to_owned()),
        };
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_owned())
    }
}

/// A batch, read from its JSON text: each key with its query, in key order.
pub fn parse_batch(json: &str) -> Result<Vec<(String, Query)>, ApiError> {
    let value: Value = serde_json::from_str(json).map_err(|e| {
        ApiError::invalid(format!("`queries` is not JSON: {e}"), BATCH_HINT.to_owned())
    })?;
    refuse_repeated_key(json, "`queries`", BATCH_HINT)?;
    read_batch(value)
}

const BATCH_HINT: &str = "send an object of queries, e.g. {\"q0\": {\"query\": \"Rolex 16610LV\", \"limit\": 3}}; see https://reconciliation-api.github.io/specs/0.2/";

/// A batch already parsed as JSON (a JSON body).
pub fn read_batch(value: Value) -> Result<Vec<(String, Query)>, ApiError> {
    let Value::Object(map) = value else {
        return Err(ApiError::invalid(
            "a query batch is a JSON object of queries",
            BATCH_HINT,
        ));
    };
    if map.len() > MAX_QUERIES {
        return Err(ApiError::invalid(
            format!("the batch has {} queries", map.len()),
            format!("send at most {MAX_QUERIES} queries per batch"),
        ));
    }
    let queries: BTreeMap<String, Value> = map.into_iter().collect();
    queries
        .into_iter()
        .map(|(key, value)| {
            let query = read_query(value).map_err(|problem| {
                ApiError::invalid(format!("query `{key}`: {problem}"), BATCH_HINT)
            })?;
            Ok((key, query))
        })
        .collect()
}

fn read_query(value: Value) -> Result<Query, String> {
    let raw: RawQuery = serde_path_to_error::deserialize(value).map_err(|e| {
        let at = e.path().to_string();
        match at.as_str() {
            "." => e.into_inner().to_string(),
            _ => format!("{at}: {}", e.into_inner()),
        }
    })?;
    let properties = raw.properties.unwrap_or_default();
    if raw.query.is_none() && properties.is_empty() {
        return Err("a query needs `query` or at least one property".into());
    }
    let kind = raw
        .kind
        .map(OneOrMany::into_vec)
        .unwrap_or_default()
        .iter()
        .find_map(|id| EntityType::parse(id))
        .unwrap_or(EntityType::Model);
    Ok(Query {
        text: raw.query.unwrap_or_default().trim().to_owned(),
        kind,
        limit: limit_of(raw.limit),
        clues: clues_of(properties),
    })
}

/// `limit`, whole and within 1 to [`MAX_LIMIT`]; [`DEFAULT_LIMIT`] when absent.
fn limit_of(limit: Option<f64>) -> usize {
    match limit {
        // Saturating: a float beyond usize becomes its maximum, NaN 0.
        Some(limit) => (limit.floor() as usize).clamp(1, MAX_LIMIT),
        None => DEFAULT_LIMIT,
    }
}

/// The first usable value of each understood property (for `year`, the first value that
/// holds a year).
fn clues_of(properties: Vec<RawProperty>) -> Clues {
    let mut clues = Clues::default();
    for property in properties {
        let values: Vec<String> = property
            .v
            .into_vec()
            .iter()
            .filter_map(PropertyValue::text)
            .collect();
        let slot = match property.pid.as_str() {
            "brand" => &mut clues.brand,
            "reference" => &mut clues.reference,
            "series" => &mut clues.series,
            "caliber" => &mut clues.caliber,
            "year" => {
                clues.year = clues.year.or(values.iter().find_map(|v| year_in(v)));
                continue;
            }
            _ => continue,
        };
        if slot.is_none() {
            *slot = values.into_iter().next();
        }
    }
    clues
}

/// The first run of four digits that can be a year of a wristwatch (`2003`, `ca. 1968`).
fn year_in(text: &str) -> Option<i32> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|run| run.len() == 4)
        .filter_map(|run| run.parse().ok())
        .find(|year| (1800..=2200).contains(year))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(query: Value) -> Result<Query, String> {
        read_query(query)
    }

    #[test]
    fn a_full_query_is_read_and_unknown_properties_and_types_are_ignored() {
        let query = one(json!({
            "query": " Submariner ",
            "type": ["DifferentiatedPerson", "caliber"],
            "limit": 3.7,
            "type_strict": "should",
            "properties": [
                {"pid": "brand", "v": {"id": "brands/rolex"}},
                {"pid": "reference", "v": 16610},
                {"pid": "year", "v": ["unknown", "ca. 2003"]},
                {"pid": "colour", "v": "green"},
                {"pid": "series", "v": true}
            ]
        }))
        .expect("valid");
        assert_eq!(query.text, "Submariner");
        assert_eq!(query.kind, EntityType::Caliber);
        assert_eq!(query.limit, 3);
        assert_eq!(
            query.clues,
            Clues {
                brand: Some("rolex".into()),
                reference: Some("16610".into()),
                series: None,
                caliber: None,
                year: Some(2003),
            }
        );
        let plain = one(json!({"query": "x", "limit": -4})).expect("valid");
        assert_eq!((plain.kind, plain.limit), (EntityType::Model, 1));
        assert_eq!(
            one(json!({"query": "x"})).expect("valid").limit,
            DEFAULT_LIMIT
        );
        assert_eq!(
            one(json!({"query": "x", "limit": 1e300}))
                .expect("valid")
                .limit,
            MAX_LIMIT
        );
    }

    #[test]
    fn malformed_queries_are_refused_naming_the_problem() {
        for (query, says) in [
            (json!({"limit": 1}), "needs `query`"),
            (json!({"properties": []}), "needs `query`"),
            (json!({"query": "x", "props": []}), "unknown field `props`"),
            (json!({"query": 5}), "query"),
            (json!({"query": "x", "type_strict": "some"}), "type_strict"),
            (json!({"query": "x", "properties": [{"pid": "brand"}]}), "v"),
            (json!("x"), "RawQuery"),
        ] {
            let problem = one(query.clone()).expect_err("refused");
            assert!(problem.contains(says), "{query}: {problem}");
        }
    }

    #[test]
    fn a_batch_has_at_most_fifty_queries() {
        let batch = |n: usize| {
            Value::Object(
                (0..n)
                    .map(|i| (format!("q{i}"), json!({"query": "Rolex"})))
                    .collect(),
            )
        };
        assert_eq!(read_batch(batch(MAX_QUERIES)).expect("valid").len(), 50);
        assert!(read_batch(batch(MAX_QUERIES + 1)).is_err());
        assert!(read_batch(json!([])).is_err());
        assert!(parse_batch("{").is_err());
        assert!(read_batch(json!({})).expect("empty is valid").is_empty());
    }
}
