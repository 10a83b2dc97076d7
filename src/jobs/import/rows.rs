//! The lines of a dataset directory, as written (see docs/dataset-format.md). Field names are
//! the files' camelCase; the set of allowed fields of each file is derived from these types.

use crate::domain::{Model, ModelSpec, Slug};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A field named by a problem (when serde could tell which) and what is wrong with it.
pub type FieldError = (Option<String>, String);

/// A line type of a dataset file.
pub trait Row: Default + Serialize + DeserializeOwned {
    /// Reads one line's JSON object.
    fn from_object(object: Map<String, Value>) -> Result<Self, FieldError> {
        deserialize_naming_field(object)
    }
}

impl Row for BrandRow {}
impl Row for SeriesRow {}
impl Row for ComplicationRow {}
impl Row for CaliberRow {}
impl Row for ProviderRow {}
impl Row for CandidateRow {}

impl Row for ModelRow {
    /// serde loses the field path inside `flatten`, so the spec's fields are read on their own.
    fn from_object(object: Map<String, Value>) -> Result<Self, FieldError> {
        // Once per import, not per line: a million lines made it a fifth of the parse.
        static SPEC_FIELDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        let spec_fields = SPEC_FIELDS.get_or_init(allowed_fields::<ModelSpec>);
        let (spec, rest): (Map<String, Value>, Map<String, Value>) = object
            .into_iter()
            .partition(|(key, _)| spec_fields.contains(key));
        let mut row: ModelRow = deserialize_naming_field(rest)?;
        row.spec = deserialize_naming_field(spec)?;
        Ok(row)
    }
}

fn deserialize_naming_field<T: DeserializeOwned>(
    object: Map<String, Value>,
) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(Value::Object(object)).map_err(|e| {
        let message = e.inner().to_string();
        (field_named(&e.path().to_string(), &message), message)
    })
}

/// The field a serde error is about: its path, or when it has none (`.` at the root, `?` where
/// the JSON itself is broken) the field a "missing field" message names.
pub(crate) fn field_named(path: &str, message: &str) -> Option<String> {
    match path {
        "." | "?" | "" => field_in_message(message),
        _ => Some(path.to_owned()),
    }
}

/// serde names a missing or repeated field only in its message: "missing field `name`",
/// "duplicate field `name`".
fn field_in_message(message: &str) -> Option<String> {
    let rest = (message.strip_prefix("missing field `"))
        .or_else(|| message.strip_prefix("duplicate field `"))?;
    Some(rest.split('`').next()?.to_owned())
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrandRow {
    pub slug: String,
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub highlight_rank: Option<u32>,
    pub description: Option<String>,
    pub country: Option<String>,
    pub founded: Option<i32>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeriesRow {
    pub slug: String,
    pub brand: String,
    pub name: String,
    pub description: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComplicationRow {
    pub slug: String,
    pub name: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaliberRow {
    pub slug: String,
    pub brand: String,
    pub reference: String,
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub parent: Option<String>,
    pub diameter: Option<f64>,
    pub height: Option<f64>,
    pub jewels: Option<u32>,
    pub frequency: Option<u32>,
    pub power_reserve: Option<u32>,
    #[serde(default)]
    pub complications: Vec<String>,
}

/// One of a model line's `pictures`. Its unknown fields are refused like a line's own: the
/// import otherwise passed over a misspelt `croppedUrl` and showed the picture uncropped.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PictureRow {
    pub url: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub cropped_url: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRow {
    pub slug: String,
    pub brand: String,
    pub series: String,
    pub name: String,
    pub reference_number: String,
    #[serde(default)]
    pub alternate_references: Vec<String>,
    pub caliber: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub pictures: Vec<PictureRow>,
    #[serde(flatten)]
    pub spec: ModelSpec,
}

impl ModelRow {
    /// The line that imports as `model`, given the slugs of its brand and series and its
    /// calibre as `brandSlug/caliberSlug`.
    pub fn of(model: &Model, brand: &Slug, series: &Slug, caliber: Option<String>) -> ModelRow {
        ModelRow {
            slug: model.slug.to_string(),
            brand: brand.to_string(),
            series: series.to_string(),
            name: model.name.clone(),
            reference_number: model.reference_number.clone(),
            alternate_references: model.alternate_references.clone(),
            caliber,
            description: model.description.clone(),
            pictures: model
                .pictures
                .iter()
                .map(|p| PictureRow {
                    url: p.url.clone(),
                    kind: p.kind.as_str().to_owned(),
                    cropped_url: p.cropped_url.clone(),
                })
                .collect(),
            spec: model.spec.clone(),
        }
    }
}

/// A line of candidates.jsonl: a photograph proposed for a model's FRONT picture.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateRow {
    /// `brandSlug/modelSlug`.
    pub model: String,
    pub query: Option<String>,
    /// The image, fetched and re-hosted.
    pub url: String,
    /// Where the image was found.
    pub source_url: Option<String>,
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub rank: Option<u32>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRow {
    pub slug: String,
    pub name: String,
    pub url: String,
}

/// Field names a row type accepts: the keys of its default value serialised to JSON, so the
/// list can never drift from the type.
pub fn allowed_fields<T: Default + Serialize>() -> Vec<String> {
    match serde_json::to_value(T::default()) {
        Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_rows_accept_every_field_of_the_full_model_spec() {
        let fields = allowed_fields::<ModelRow>();
        for name in [
            "referenceNumber",
            "releaseYear",
            "bandWidth",
            "dialNickname",
            "pictures",
        ] {
            assert!(
                fields.contains(&name.to_string()),
                "{name} missing from {fields:?}"
            );
        }
        assert!(!fields.contains(&"spec".to_string()));
        assert_eq!(
            allowed_fields::<PictureRow>(),
            ["croppedUrl", "type", "url"]
        );
    }
}
