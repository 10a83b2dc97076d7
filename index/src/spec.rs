//! A model's specification as the index filters and facets it: the worded fields (materials,
//! colours, movement type, complications), each a lowercased term per value, and what a
//! model's vocabulary is (the values the catalogue's models have).

use crate::docs::ModelDoc;
use tantivy::Searcher;

/// A worded specification field: filtered by any of its values (all of them for
/// complications), faceted by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SpecTerm {
    CaseMaterial,
    DialColor,
    BezelMaterial,
    BandMaterial,
    MovementType,
    Complication,
}

impl SpecTerm {
    pub const ALL: [SpecTerm; 6] = [
        SpecTerm::CaseMaterial,
        SpecTerm::DialColor,
        SpecTerm::BezelMaterial,
        SpecTerm::BandMaterial,
        SpecTerm::MovementType,
        SpecTerm::Complication,
    ];

    /// The index field holding the lowercased values.
    pub(crate) fn field_name(self) -> &'static str {
        match self {
            SpecTerm::CaseMaterial => "spec_case_material",
            SpecTerm::DialColor => "spec_dial_color",
            SpecTerm::BezelMaterial => "spec_bezel_material",
            SpecTerm::BandMaterial => "spec_band_material",
            SpecTerm::MovementType => "spec_movement_type",
            SpecTerm::Complication => "spec_complication",
        }
    }

    /// True when a filter of several values needs every one (a model has several
    /// complications; it has one dial colour among the asked ones).
    pub fn needs_all(self) -> bool {
        self == SpecTerm::Complication
    }

    /// The model's values of this field, as the catalogue writes them.
    pub(crate) fn values(self, model: &ModelDoc) -> &[String] {
        let spec = &model.spec;
        match self {
            SpecTerm::CaseMaterial => &model.case_materials,
            SpecTerm::DialColor => &spec.dial_colors,
            SpecTerm::BezelMaterial => &spec.bezel_materials,
            SpecTerm::BandMaterial => &spec.band_materials,
            SpecTerm::MovementType => spec.movement_type.as_slice(),
            SpecTerm::Complication => &spec.complications,
        }
    }
}

/// How a value is indexed and looked up: case folded, so `Stainless Steel` and
/// `stainless steel` are one value.
pub fn spec_key(value: &str) -> String {
    value.trim().to_lowercase()
}

/// Every value of `term` in the index, sorted: the allowed values of its filter. A value whose
/// last model was deleted may linger until its segment is merged.
pub(crate) fn vocabulary(
    searcher: &Searcher,
    field: tantivy::schema::Field,
) -> tantivy::Result<Vec<String>> {
    let mut values = std::collections::BTreeSet::new();
    for reader in searcher.segment_readers() {
        let inverted = reader.inverted_index(field)?;
        let mut terms = inverted.terms().stream()?;
        while terms.advance() {
            if let Ok(value) = std::str::from_utf8(terms.key()) {
                values.insert(value.to_owned());
            }
        }
    }
    Ok(values.into_iter().collect())
}
