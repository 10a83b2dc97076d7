//! The records kept in the store of record; `ModelSpec` is the common specification every
//! model is described to. Their serde form is the store's layout (versioned in `store::codec`)
//! and the dataset's fields; API bodies are `api::views` types built from them.

use super::{BrandId, CaliberId, ComplicationId, ModelId, PictureId, ProviderId, SeriesId};
use super::{Slug, Timestamp};
use serde::{Deserialize, Serialize};

/// A watch brand (or a movement maker, which owns calibres and may have no models).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Brand {
    pub id: BrandId,
    pub slug: Slug,
    pub name: String,
    /// Other names sellers use (`JLC`), for search and listing matching.
    pub aliases: Vec<String>,
    /// Position in the editorial row of `GET /brands/highlighted`; `None` keeps it out.
    pub highlight_rank: Option<u32>,
    pub description: Option<String>,
    pub country: Option<String>,
    pub founded: Option<i32>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A family of models within one brand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub id: SeriesId,
    pub brand_id: BrandId,
    pub slug: Slug,
    pub name: String,
    pub description: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A complication, catalogued once and linked to calibres.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Complication {
    pub id: ComplicationId,
    pub slug: Slug,
    pub name: String,
}

/// A movement. Sizes in millimetres, frequency in vph, power reserve in hours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Caliber {
    pub id: CaliberId,
    pub brand_id: BrandId,
    pub slug: Slug,
    pub reference: String,
    pub name: Option<String>,
    /// `automatic`, `manual`, `quartz`, ... (`type` in the API).
    pub kind: Option<String>,
    /// The movement this one is built on (an ebauche finished by a watch brand).
    pub parent_id: Option<CaliberId>,
    pub diameter: Option<f64>,
    pub height: Option<f64>,
    pub jewels: Option<u32>,
    pub frequency: Option<u32>,
    pub power_reserve: Option<u32>,
    pub complication_ids: Vec<ComplicationId>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// One picture of a model, re-hosted by the service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Picture {
    pub id: PictureId,
    pub url: String,
    pub kind: PictureType,
    /// Produced by the image pipeline; `None` until it has run.
    pub cropped_url: Option<String>,
}

/// What a picture shows. The spec names FRONT; the others are ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum PictureType {
    Front,
    Back,
    Side,
    Detail,
    Lifestyle,
}

impl PictureType {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PictureType::Front => "FRONT",
            PictureType::Back => "BACK",
            PictureType::Side => "SIDE",
            PictureType::Detail => "DETAIL",
            PictureType::Lifestyle => "LIFESTYLE",
        }
    }
}

/// The common specification of a model: every model is comparable field by field.
/// Millimetres for sizes, metres for water resistance. Empty means unknown, never guessed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelSpec {
    pub release_year: Option<i32>,
    pub discontinuation_year: Option<i32>,
    /// Pieces made, for a limited edition.
    pub limited_amount: Option<u32>,
    /// Case diameter in millimetres.
    pub diameter: Option<f64>,
    /// Case thickness in millimetres.
    pub thickness: Option<f64>,
    /// Width between the lugs in millimetres.
    pub lug_width: Option<f64>,
    /// Water resistance in metres.
    pub water_resistance: Option<f64>,
    pub case_materials: Vec<String>,
    pub bezel: Option<String>,
    pub bezel_materials: Vec<String>,
    pub bezel_colors: Vec<String>,
    pub coating: Option<String>,
    pub shape: Option<String>,
    pub glass: Option<String>,
    pub back: Option<String>,
    pub dial_nickname: Option<String>,
    pub dial_finish: Option<String>,
    pub dial_colors: Vec<String>,
    pub dial_materials: Vec<String>,
    pub indexes: Option<String>,
    pub hands: Option<String>,
    pub band_nickname: Option<String>,
    pub band_colors: Vec<String>,
    pub band_materials: Vec<String>,
    pub band_clasp: Option<String>,
    /// Band width in millimetres.
    pub band_width: Option<f64>,
}

/// A catalogue model: unique within its brand by slug, never by reference alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub id: ModelId,
    pub brand_id: BrandId,
    pub series_id: SeriesId,
    pub slug: Slug,
    pub name: String,
    pub reference_number: String,
    pub alternate_references: Vec<String>,
    pub caliber_id: Option<CaliberId>,
    pub description: Option<String>,
    pub spec: ModelSpec,
    pub pictures: Vec<Picture>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Model {
    /// The primary reference followed by the alternates, as written.
    /// True when `other` has the words the catalogue index searches models by (name,
    /// references, brand and series): a model that kept them changed no listing group's
    /// candidates, whatever else changed (its pictures, its specification).
    pub fn same_words(&self, other: &Model) -> bool {
        self.name == other.name
            && self.reference_number == other.reference_number
            && self.alternate_references == other.alternate_references
            && self.brand_id == other.brand_id
            && self.series_id == other.series_id
    }

    pub fn references(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.reference_number.as_str())
            .chain(self.alternate_references.iter().map(String::as_str))
    }

    /// Its references normalised (`normalize_reference`), empty ones left out: what matching
    /// finds it by, and the keys the store keeps of them.
    pub fn normalized_references(&self) -> impl Iterator<Item = String> + '_ {
        self.references()
            .map(super::normalize_reference)
            .filter(|r| !r.is_empty())
    }

    /// The distinct bases of its references (`reference_base`), in order: what the duplicate
    /// finder pairs it by.
    pub fn reference_bases(&self) -> Vec<String> {
        let mut bases: Vec<String> = self
            .references()
            .filter_map(super::reference_base)
            .collect();
        bases.sort_unstable();
        bases.dedup();
        bases
    }

    /// The FRONT picture, if the model has one.
    pub fn front_picture(&self) -> Option<&Picture> {
        self.pictures.iter().find(|p| p.kind == PictureType::Front)
    }
}

/// A marketplace that publishes listings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provider {
    pub id: ProviderId,
    pub slug: Slug,
    pub name: String,
    pub url: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}
