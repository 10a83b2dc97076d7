//! The lines of a dataset directory, as written (see docs/dataset-format.md). Field names are
//! the files' camelCase; the set of allowed fields of each file is derived from these types.

use crate::domain::ModelSpec;
use serde::{Deserialize, Serialize};

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

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
        for name in ["referenceNumber", "releaseYear", "bandWidth", "dialNickname", "pictures"] {
            assert!(fields.contains(&name.to_string()), "{name} missing from {fields:?}");
        }
        assert!(!fields.contains(&"spec".to_string()));
        assert_eq!(allowed_fields::<PictureRow>(), ["croppedUrl", "type", "url"]);
    }
}
