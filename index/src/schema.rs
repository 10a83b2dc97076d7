//! The schema: one index, a `kind` field telling brands, series and models apart. Text fields
//! for search, raw fields for exact terms, fast fields for every filter, sort and stat.

use crate::docs::{BrandDoc, CatalogueDoc, ModelDoc, SeriesDoc};
use crate::query::{DocKind, ReferencePrefixes, TextFields};
use crate::spec::{spec_key, SpecTerm};
use crate::tokenizer::{FOLDED, REFERENCE_PREFIX};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, FAST,
};
use tantivy::TantivyDocument;

/// Fast-field names read by the collectors.
pub mod names {
    pub const ID: &str = "id";
    pub const BRAND_ID: &str = "brand_id";
    pub const SERIES_ID: &str = "series_id";
    pub const NAME_SORT: &str = "name_sort";
    /// Every normalised reference of a model, a column only (`model_texts`).
    pub const REFERENCES: &str = "references";
    pub const REF_SORT: &str = "ref_sort";
    pub const NEWEST: &str = "newest_key";
    pub const LISTING_COUNT: &str = "listing_count";
    pub const MODEL_COUNT: &str = "model_count";
    pub const RELEASE_YEAR: &str = "release_year";
    pub const DIAMETER: &str = "diameter";
    pub const CASE_MATERIAL: &str = "case_material";
    pub const CALIBER_ID: &str = "caliber_id";
    pub const WATER_RESISTANCE: &str = "water_resistance";
}

/// Handles on every field.
#[derive(Clone)]
pub struct Fields {
    pub kind: Field,
    /// Kind and id in one term, unique across kinds: what an update deletes by.
    pub doc_key: Field,
    pub id: Field,
    pub brand_id: Field,
    pub series_id: Field,
    pub caliber_id: Field,
    pub has_front_picture: Field,
    pub name: Field,
    pub aliases: Field,
    pub brand_name: Field,
    pub series_name: Field,
    /// A model's name and series name as words scoped by its brand (`{brand id}:{word}`): the
    /// brand's models sharing a word are that word's postings alone, so the models named like a
    /// reconciliation group are found without seeking the words along every model of the brand
    /// (docs/decisions.md, D-178).
    pub brand_name_words: Field,
    pub brand_series_words: Field,
    pub description: Field,
    /// A model's words from every text field, without frequencies: whether a model holds a word
    /// at all is one term, so a search's matches are one postings intersection.
    pub model_words: Field,
    pub name_sort: Field,
    pub references: Field,
    pub ref_sort: Field,
    pub ref_exact: Field,
    pub ref_prefix: Field,
    pub newest_key: Field,
    pub listing_count: Field,
    pub model_count: Field,
    pub release_year: Field,
    pub diameter: Field,
    /// The diameter's whole millimetres as a term: the `diameter` facet of every model is
    /// counted from these terms' document frequencies ([`crate::facets::every_model`]).
    pub diameter_mm: Field,
    /// Case materials as the catalogue writes them: what brand and series stats list.
    pub case_material: Field,
    /// The worded specification fields, lowercased, in [`SpecTerm::ALL`] order: what filters
    /// match and facets count (case materials again, folded, so `Steel` and `steel` are one).
    pub spec_terms: [Field; 6],
    pub water_resistance: Field,
    /// Flags (1 or 0) of models only.
    pub limited: Field,
    pub discontinued: Field,
    pub has_listings: Field,
}

/// A u64 that is filtered on (indexed) and read by collectors (fast).
pub(crate) fn filter_options() -> NumericOptions {
    exact_number().set_fast()
}

/// A u64 only matched by its value, never scored: indexed without the norms tantivy's
/// `INDEXED` adds (a byte a document each, written, merged and never read).
pub(crate) fn exact_number() -> NumericOptions {
    NumericOptions::default().set_indexed()
}

/// A string only matched whole (or as a range of terms), never scored: `STRING` without norms.
pub(crate) fn exact_string() -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("raw")
            .set_index_option(IndexRecordOption::Basic)
            .set_fieldnorms(false),
    )
}

/// Searchable words: lowercased, accents folded, with frequencies and norms for scoring but
/// no positions: no query reads them (no phrase), and writing them was a share of every
/// document indexed (docs/decisions.md, D-41).
pub(crate) fn text_options() -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(FOLDED)
            .set_index_option(IndexRecordOption::WithFreqs),
    )
}

/// Words only looked up for presence: no frequencies, positions or norms.
pub(crate) fn presence_options() -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(FOLDED)
            .set_index_option(IndexRecordOption::Basic)
            .set_fieldnorms(false),
    )
}

/// Words already folded and scoped by [`brand_scoped_words`], scored like the name fields.
pub(crate) fn brand_scoped_options() -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("whitespace")
            .set_index_option(IndexRecordOption::WithFreqs),
    )
}

/// The term of `word` (folded) among brand `brand_id`'s models' words.
pub(crate) fn brand_scoped(brand_id: u64, word: &str) -> String {
    format!("{brand_id}:{word}")
}

/// `text`'s folded words, each scoped by `brand_id`, as the whitespace tokenizer reads them.
fn brand_scoped_words(brand_id: u64, text: &str) -> String {
    let words: Vec<String> = crate::query::folded_words(text)
        .iter()
        .map(|word| brand_scoped(brand_id, word))
        .collect();
    words.join(" ")
}

/// Normalised references, indexed with their prefixes.
pub(crate) fn prefix_options() -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(REFERENCE_PREFIX)
            .set_index_option(IndexRecordOption::Basic)
            .set_fieldnorms(false),
    )
}

pub fn build() -> (Schema, Fields) {
    // Norms only on the scored word fields (`text_options`): every other indexed field is a
    // filter or a constant-score match (docs/decisions.md, D-41).
    let mut s = Schema::builder();
    let filter = filter_options();
    let text = text_options();
    let prefixes = prefix_options();
    let fields = Fields {
        kind: s.add_u64_field("kind", exact_number()),
        doc_key: s.add_u64_field("doc_key", exact_number()),
        id: s.add_u64_field(names::ID, FAST),
        brand_id: s.add_u64_field(names::BRAND_ID, filter.clone()),
        series_id: s.add_u64_field(names::SERIES_ID, filter.clone()),
        caliber_id: s.add_u64_field(names::CALIBER_ID, filter.clone()),
        has_front_picture: s.add_u64_field("has_front_picture", exact_number()),
        name: s.add_text_field("name", text.clone()),
        aliases: s.add_text_field("aliases", text.clone()),
        brand_name: s.add_text_field("brand_name", text.clone()),
        series_name: s.add_text_field("series_name", text.clone()),
        brand_name_words: s.add_text_field("brand_name_words", brand_scoped_options()),
        brand_series_words: s.add_text_field("brand_series_words", brand_scoped_options()),
        description: s.add_text_field("description", text),
        model_words: s.add_text_field("model_words", presence_options()),
        name_sort: s.add_text_field(names::NAME_SORT, exact_string() | FAST),
        ref_sort: s.add_text_field(names::REF_SORT, FAST),
        references: s.add_text_field(names::REFERENCES, FAST),
        ref_exact: s.add_text_field("ref_exact", exact_string()),
        ref_prefix: s.add_text_field("ref_prefix", prefixes),
        newest_key: s.add_u64_field(names::NEWEST, FAST),
        listing_count: s.add_u64_field(names::LISTING_COUNT, FAST),
        model_count: s.add_u64_field(names::MODEL_COUNT, FAST),
        release_year: s.add_u64_field(names::RELEASE_YEAR, FAST),
        diameter: s.add_f64_field(names::DIAMETER, FAST),
        diameter_mm: s.add_u64_field("diameter_mm", exact_number()),
        case_material: s.add_text_field(names::CASE_MATERIAL, exact_string() | FAST),
        spec_terms: SpecTerm::ALL
            .map(|term| s.add_text_field(term.field_name(), exact_string() | FAST)),
        water_resistance: s.add_f64_field(names::WATER_RESISTANCE, FAST),
        limited: s.add_u64_field("limited", exact_number()),
        discontinued: s.add_u64_field("discontinued", exact_number()),
        has_listings: s.add_u64_field("has_listings", exact_number()),
    };
    (s.build(), fields)
}

/// Ids fit in 40 bits in `newest_key`; a catalogue has far fewer than 10^12 records.
const ID_BITS: u32 = 40;

/// Orders models newest first: release year descending (unknown last), then most recently
/// added (highest id) first. Sorted descending.
pub fn newest_key(release_year: Option<i32>, id: u64) -> u64 {
    let year = release_year.map_or(0, |y| u64::from(y.clamp(0, 0xFFFF) as u16) + 1);
    (year << ID_BITS) | (id & ((1 << ID_BITS) - 1))
}

/// The `doc_key` of a document: ids fit in 56 bits, the kind takes the top byte.
pub fn doc_key(kind: DocKind, id: u64) -> u64 {
    ((kind as u64) << 56) | (id & ((1 << 56) - 1))
}

/// The `doc_key` a request's model id finds: an id over 56 bits, which no record has, finds a
/// key no document has (kind byte 0 is no kind's), never the model its low bits name.
pub fn requested_model_key(id: u64) -> u64 {
    match id >> 56 {
        0 => doc_key(DocKind::Model, id),
        _ => 0,
    }
}

/// How names sort: case-insensitively.
pub fn sort_name(name: &str) -> String {
    // Cut to a length the term dictionary takes (tantivy drops a term over 65,530 bytes), so
    // every document has a sort-name term: the first page by name is read from those terms.
    let mut sort = name.to_lowercase();
    if sort.len() > SORT_NAME_BYTES {
        let cut = (0..=SORT_NAME_BYTES)
            .rev()
            .find(|&i| sort.is_char_boundary(i))
            .unwrap_or(0);
        sort.truncate(cut);
    }
    sort
}

/// Longest sort name kept, in bytes.
const SORT_NAME_BYTES: usize = 1024;

impl Fields {
    /// Where `q` looks in the catalogue.
    pub(crate) fn text_fields(&self) -> TextFields {
        TextFields {
            words: vec![
                (self.name, 3.0),
                (self.aliases, 2.0),
                (self.brand_name, 1.5),
                (self.series_name, 1.5),
                (self.description, 0.5),
            ],
            ref_exact: self.ref_exact,
            ref_prefix: self.reference_prefixes(),
        }
    }

    /// How a reference prefix is looked up: short ones as terms, long ones as ranges.
    pub(crate) fn reference_prefixes(&self) -> ReferencePrefixes {
        ReferencePrefixes::Indexed {
            prefixes: self.ref_prefix,
            whole: self.ref_exact,
        }
    }

    pub fn document(&self, doc: &CatalogueDoc) -> TantivyDocument {
        let mut out = TantivyDocument::new();
        match doc {
            CatalogueDoc::Brand(brand) => self.brand(&mut out, brand),
            CatalogueDoc::Series(series) => self.series(&mut out, series),
            CatalogueDoc::Model(model) => self.model(&mut out, model),
        }
        out
    }

    fn common(&self, out: &mut TantivyDocument, kind: DocKind, id: u64, name: &str) {
        out.add_u64(self.kind, kind as u64);
        out.add_u64(self.doc_key, doc_key(kind, id));
        out.add_u64(self.id, id);
        out.add_text(self.name, name);
        out.add_text(self.name_sort, sort_name(name));
    }

    fn brand(&self, out: &mut TantivyDocument, brand: &BrandDoc) {
        self.common(out, DocKind::Brand, brand.id, &brand.name);
        out.add_u64(self.brand_id, brand.id);
        for alias in &brand.aliases {
            out.add_text(self.aliases, alias);
        }
        if let Some(description) = &brand.description {
            out.add_text(self.description, description);
        }
        out.add_u64(self.model_count, brand.model_count);
    }

    fn series(&self, out: &mut TantivyDocument, series: &SeriesDoc) {
        self.common(out, DocKind::Series, series.id, &series.name);
        out.add_u64(self.brand_id, series.brand_id);
        if let Some(description) = &series.description {
            out.add_text(self.description, description);
        }
        out.add_u64(self.model_count, series.model_count);
    }

    fn model(&self, out: &mut TantivyDocument, model: &ModelDoc) {
        self.common(out, DocKind::Model, model.id, &model.name);
        out.add_u64(self.brand_id, model.brand_id);
        out.add_u64(self.series_id, model.series_id);
        if let Some(caliber) = model.caliber_id {
            out.add_u64(self.caliber_id, caliber);
        }
        out.add_u64(self.has_front_picture, u64::from(model.has_front_picture));
        for name in &model.brand_names {
            out.add_text(self.brand_name, name);
        }
        out.add_text(self.series_name, &model.series_name);
        let scoped = |text| brand_scoped_words(model.brand_id, text);
        out.add_text(self.brand_name_words, scoped(&model.name));
        out.add_text(self.brand_series_words, scoped(&model.series_name));
        if let Some(description) = &model.description {
            out.add_text(self.description, description);
        }
        let words = [&model.name, &model.series_name]
            .into_iter()
            .chain(&model.brand_names)
            .chain(&model.description);
        for text in words {
            out.add_text(self.model_words, text);
        }
        if let Some(primary) = model.normalized_references.first() {
            out.add_text(self.ref_sort, primary);
        }
        for reference in &model.normalized_references {
            out.add_text(self.ref_exact, reference);
            out.add_text(self.ref_prefix, reference);
            out.add_text(self.references, reference);
        }
        out.add_u64(self.newest_key, newest_key(model.release_year, model.id));
        out.add_u64(self.listing_count, model.listing_count);
        if let Some(year) = model.release_year.and_then(|y| u64::try_from(y).ok()) {
            out.add_u64(self.release_year, year);
        }
        if let Some(diameter) = model.diameter {
            out.add_f64(self.diameter, diameter);
            if let Some(mm) = crate::facets::bucket(diameter) {
                out.add_u64(self.diameter_mm, mm);
            }
        }
        for material in &model.case_materials {
            out.add_text(self.case_material, material);
        }
        self.model_spec(out, model);
    }

    fn model_spec(&self, out: &mut TantivyDocument, model: &ModelDoc) {
        for term in SpecTerm::ALL {
            let mut keys: Vec<String> = term.values(model).iter().map(|v| spec_key(v)).collect();
            keys.sort_unstable();
            keys.dedup();
            for key in keys.iter().filter(|k| !k.is_empty()) {
                out.add_text(self.spec_term(term), key);
            }
        }
        if let Some(metres) = model.spec.water_resistance {
            out.add_f64(self.water_resistance, metres);
        }
        let flags = [
            (self.limited, model.spec.limited),
            (self.discontinued, model.spec.discontinued),
            (self.has_listings, model.listing_count > 0),
        ];
        for (field, set) in flags {
            out.add_u64(field, u64::from(set));
        }
    }

    /// The field of a worded specification field.
    pub fn spec_term(&self, term: SpecTerm) -> Field {
        self.spec_terms[term as usize]
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_scored_word_fields_carry_norms() {
        let (schema, _) = super::build();
        let with_norms: Vec<&str> = (schema.fields())
            .filter(|(_, entry)| entry.has_fieldnorms())
            .map(|(_, entry)| entry.name())
            .collect();
        assert_eq!(
            with_norms,
            [
                "name",
                "aliases",
                "brand_name",
                "series_name",
                "brand_name_words",
                "brand_series_words",
                "description"
            ]
        );
    }
}
