//! The documents callers hand to [`CatalogueIndex::rebuild`](crate::CatalogueIndex::rebuild).

/// A brand, with its counts for the "catalogue depth" sort.
#[derive(Debug, Clone, Default)]
pub struct BrandDoc {
    pub id: u64,
    pub name: String,
    pub aliases: Vec<String>,
    pub description: Option<String>,
    pub model_count: u64,
}

/// A series of one brand.
#[derive(Debug, Clone, Default)]
pub struct SeriesDoc {
    pub id: u64,
    pub brand_id: u64,
    pub name: String,
    pub description: Option<String>,
    pub model_count: u64,
}

/// A model, with what its brand and series contribute to text search.
#[derive(Debug, Clone, Default)]
pub struct ModelDoc {
    pub id: u64,
    pub brand_id: u64,
    pub series_id: u64,
    pub caliber_id: Option<u64>,
    pub name: String,
    /// The brand's name and aliases, so `rolex submariner` and `jlc reverso` find models.
    pub brand_names: Vec<String>,
    pub series_name: String,
    pub description: Option<String>,
    /// Normalised primary reference first, then the normalised alternates.
    pub normalized_references: Vec<String>,
    pub release_year: Option<i32>,
    pub diameter: Option<f64>,
    pub case_materials: Vec<String>,
    /// What the specification filters and facets read, beside the fields above.
    pub spec: ModelSpecDoc,
    pub listing_count: u64,
    pub has_front_picture: bool,
}

/// A model's specification as it is filtered and faceted: words as the catalogue writes them
/// (the index folds their case), the movement's type and complications from its calibre.
#[derive(Debug, Clone, Default)]
pub struct ModelSpecDoc {
    pub dial_colors: Vec<String>,
    pub bezel_materials: Vec<String>,
    pub band_materials: Vec<String>,
    pub movement_type: Option<String>,
    /// Complication slugs.
    pub complications: Vec<String>,
    pub water_resistance: Option<f64>,
    pub limited: bool,
    pub discontinued: bool,
}

/// Any document of the catalogue index.
// Models are nearly every document: boxing the large variant would allocate once more per
// model to save space on the few brands and series.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum CatalogueDoc {
    Brand(BrandDoc),
    Series(SeriesDoc),
    Model(ModelDoc),
}
