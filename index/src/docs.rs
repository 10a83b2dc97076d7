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
    pub listing_count: u64,
    pub has_front_picture: bool,
}

/// Any document of the catalogue index.
#[derive(Debug, Clone)]
pub enum CatalogueDoc {
    Brand(BrandDoc),
    Series(SeriesDoc),
    Model(ModelDoc),
}
