//! Search requests and their translation into tantivy queries. Free text is never parsed as
//! query syntax (`126610-LN` is not an exclusion): words become term queries, and the whole
//! text, normalised as a reference, is tried as an exact reference and as a reference prefix.

use crate::schema::Fields;
use crate::spec::{spec_key, SpecTerm};
use crate::starting_with::{terms_starting_with, StartingWith};
use crate::tokenizer::{folded_analyzer, is_indexed_prefix, MIN_REFERENCE_PREFIX};
use std::collections::BTreeMap;
use std::ops::Bound;
use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, Occur, PhrasePrefixQuery, Query,
    RangeQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{Searcher, Term};

/// What a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    Brand = 1,
    Series = 2,
    Model = 3,
}

/// Orders a result list. Every order breaks ties by ascending id, so results are deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortOrder {
    /// Best text match first.
    Relevance,
    NameAsc,
    NameDesc,
    /// Normalised primary reference, ascending.
    ReferenceAsc,
    /// Release year descending (unknown last), then most recently added.
    Newest,
    /// Most models first ("catalogue depth").
    ModelsDesc,
    IdAsc,
    /// Most listings, then newest: how a brand's picture and a series' lead model are chosen.
    Lead,
}

/// Exact-value filters; `None` means no constraint.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    /// A model's id.
    pub id: Option<u64>,
    pub brand_id: Option<u64>,
    pub series_id: Option<u64>,
    pub caliber_id: Option<u64>,
    /// Only models with a FRONT picture.
    pub has_front_picture: bool,
    /// Constraints on a model's specification.
    pub spec: SpecFilters,
}

/// Filters on a model's specification; each empty or `None` field is no constraint.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecFilters {
    /// Per worded field, the values asked (any of them; all of them for complications),
    /// matched case-insensitively.
    pub terms: BTreeMap<SpecTerm, Vec<String>>,
    /// Millimetres, bounds included.
    pub diameter: Bounds<f64>,
    /// Metres, at least.
    pub min_water_resistance: Option<f64>,
    pub release_year: Bounds<u64>,
    pub limited: Option<bool>,
    pub discontinued: Option<bool>,
    pub has_listings: Option<bool>,
}

/// An inclusive range; an absent bound is open.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bounds<T> {
    pub min: Option<T>,
    pub max: Option<T>,
}

impl<T: Copy> Bounds<T> {
    fn is_open(&self) -> bool {
        self.min.is_none() && self.max.is_none()
    }

    fn terms(&self, term: impl Fn(T) -> Term) -> (Bound<Term>, Bound<Term>) {
        let bound = |value: Option<T>| value.map_or(Bound::Unbounded, |v| Bound::Included(term(v)));
        (bound(self.min), bound(self.max))
    }
}

/// Free text as the user typed it, with its normalised-reference form (computed by the caller's
/// reference normalisation, so the index and the store agree on one key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextQuery {
    pub text: String,
    pub normalized_reference: String,
    /// Words also match with typos, the last one also as a prefix ([`crate::typos`]).
    pub typo_tolerance: bool,
}

/// One list request.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub kind: DocKind,
    pub text: Option<TextQuery>,
    pub filters: Filters,
    pub sort: SortOrder,
    pub offset: usize,
    pub limit: usize,
}

impl SearchRequest {
    /// Every document of `kind` passing `filters`, by id.
    pub fn filtered(kind: DocKind, filters: Filters) -> SearchRequest {
        SearchRequest {
            kind,
            text: None,
            filters,
            sort: SortOrder::IdAsc,
            offset: 0,
            limit: usize::MAX / 2,
        }
    }
}

// Weights: an exact reference outranks anything textual, a reference prefix outranks a word
// found only in a description.
const EXACT_REFERENCE_BOOST: f32 = 200.0;
const REFERENCE_PREFIX_BOOST: f32 = 20.0;
const WORD_IS_REFERENCE_BOOST: f32 = 20.0;
const WORD_IS_REFERENCE_PREFIX_BOOST: f32 = 5.0;

/// The constants a word adds when it is a model's reference, and a prefix of one.
pub(crate) const WORD_REFERENCE_SCORES: [f32; 2] =
    [WORD_IS_REFERENCE_BOOST, WORD_IS_REFERENCE_PREFIX_BOOST];
/// The constants the whole text adds when it is a model's reference, and a prefix of one.
pub(crate) const WHOLE_REFERENCE_SCORES: [f32; 2] = [EXACT_REFERENCE_BOOST, REFERENCE_PREFIX_BOOST];

/// Every document matching `request`, scored by its text (every result scored by the same
/// query, in [`crate::collector::TopIds`], or pruned in [`crate::pruned`] for relevance).
pub fn build(fields: &Fields, request: &SearchRequest) -> Box<dyn Query> {
    let text = request.text.as_ref().map(|text| {
        let query = text_query(&fields.text_fields(), text);
        (Occur::Must, query)
    });
    build_with(fields, request, text.into_iter().collect())
}

/// The documents of the request's kind passing its filters, and `text` clauses.
fn build_with(
    fields: &Fields,
    request: &SearchRequest,
    text: Vec<(Occur, Box<dyn Query>)>,
) -> Box<dyn Query> {
    let mut clauses = kind_clauses(fields, request.kind);
    clauses.extend(filter_clauses(fields, &request.filters));
    clauses.extend(text);
    Box::new(BooleanQuery::new(clauses))
}

/// The documents of `kind`. Models are nearly every document, so they are every document but
/// the few brands and series: excluding short postings lists costs a seek in each, where
/// requiring the models' list cost a seek in a list of a million for every candidate
/// (docs/decisions.md, D-53).
fn kind_clauses(fields: &Fields, kind: DocKind) -> Vec<(Occur, Box<dyn Query>)> {
    let kind_term = |kind: DocKind| filter(term_u64(fields.kind, kind as u64));
    match kind {
        DocKind::Model => vec![
            (Occur::Must, Box::new(AllQuery)),
            (Occur::MustNot, kind_term(DocKind::Brand)),
            (Occur::MustNot, kind_term(DocKind::Series)),
        ],
        other => vec![(Occur::Must, kind_term(other))],
    }
}

/// What `request` matches with its text also taken loosely ([`crate::typos`]): exact matches
/// and typo or prefix matches alike.
pub(crate) fn loosely(
    fields: &Fields,
    request: &SearchRequest,
    text: &TextQuery,
    loose: Box<dyn Query>,
) -> Box<dyn Query> {
    let exact = text_query(&fields.text_fields(), text);
    let either = BooleanQuery::new(vec![(Occur::Should, exact), (Occur::Should, loose)]);
    build_with(fields, request, vec![(Occur::Must, Box::new(either))])
}

/// What `request` matches only loosely, scored by its loose text: the results ranked after
/// every exact match.
pub(crate) fn only_loosely(
    fields: &Fields,
    request: &SearchRequest,
    text: &TextQuery,
    loose: Box<dyn Query>,
) -> Box<dyn Query> {
    let exact = crate::typos::as_typed(fields, text);
    let clauses = vec![(Occur::Must, loose), (Occur::MustNot, exact)];
    build_with(fields, request, clauses)
}

/// A required, unscored clause per constraint of `filters`.
pub(crate) fn filter_clauses(fields: &Fields, filters: &Filters) -> Vec<(Occur, Box<dyn Query>)> {
    let exact = [
        // Ids are only a column: a model's id is found by its document key, one term.
        (
            fields.doc_key,
            filters.id.map(crate::schema::requested_model_key),
        ),
        (fields.brand_id, filters.brand_id),
        (fields.series_id, filters.series_id),
        (fields.caliber_id, filters.caliber_id),
        (
            fields.has_front_picture,
            filters.has_front_picture.then_some(1),
        ),
    ];
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = exact
        .into_iter()
        .filter_map(|(field, value)| Some((Occur::Must, filter(term_u64(field, value?)))))
        .collect();
    clauses.extend(
        spec_clauses(fields, &filters.spec)
            .into_iter()
            .map(|query| (Occur::Must, filter(query))),
    );
    clauses
}

/// A query per constraint of `spec`.
fn spec_clauses(fields: &Fields, spec: &SpecFilters) -> Vec<Box<dyn Query>> {
    let mut out: Vec<Box<dyn Query>> = Vec::new();
    for (&term, values) in spec.terms.iter().filter(|(_, v)| !v.is_empty()) {
        let field = fields.spec_term(term);
        let terms = values
            .iter()
            .map(|value| Term::from_field_text(field, &spec_key(value)));
        if term.needs_all() {
            out.extend(terms.map(term_query));
        } else {
            let any = terms.map(|t| (Occur::Should, term_query(t))).collect();
            out.push(Box::new(BooleanQuery::new(any)));
        }
    }
    if !spec.diameter.is_open() {
        let (min, max) = spec
            .diameter
            .terms(|mm| Term::from_field_f64(fields.diameter, mm));
        out.push(Box::new(RangeQuery::new(min, max)));
    }
    if let Some(metres) = spec.min_water_resistance {
        let min = Bound::Included(Term::from_field_f64(fields.water_resistance, metres));
        out.push(Box::new(RangeQuery::new(min, Bound::Unbounded)));
    }
    if !spec.release_year.is_open() {
        let (min, max) = spec
            .release_year
            .terms(|year| Term::from_field_u64(fields.release_year, year));
        out.push(Box::new(RangeQuery::new(min, max)));
    }
    let flags = [
        (fields.limited, spec.limited),
        (fields.discontinued, spec.discontinued),
        (fields.has_listings, spec.has_listings),
    ];
    for (field, wanted) in flags {
        if let Some(wanted) = wanted {
            out.push(term_u64(field, u64::from(wanted)));
        }
    }
    out
}

pub(crate) fn term_query(term: Term) -> Box<dyn Query> {
    Box::new(TermQuery::new(term, IndexRecordOption::Basic))
}

/// The models of `brand_id` that `query` matches, scored by it.
pub fn brand_models(fields: &Fields, brand_id: u64, query: Box<dyn Query>) -> Box<dyn Query> {
    Box::new(BooleanQuery::new(vec![
        (
            Occur::Must,
            filter(term_u64(fields.kind, DocKind::Model as u64)),
        ),
        (Occur::Must, filter(term_u64(fields.brand_id, brand_id))),
        (Occur::Must, query),
    ]))
}

/// Documents with a reference that begins with `prefix` (normalised; a whole reference is its
/// own prefix, whatever its length).
pub fn reference_prefix(fields: &Fields, prefix: &str) -> Box<dyn Query> {
    fields.reference_prefixes().query(prefix, 1.0)
}

/// The brand's models whose name or series name holds any word of `text`, more words scoring
/// higher; `None` when `text` has no word. Read from the brand-scoped words
/// ([`Fields::brand_name_words`]): a union of the words intersected with the brand sought
/// every word along all the brand's models, most of a `/reconciliation` page's time.
pub fn brand_models_named_like(
    fields: &Fields,
    brand_id: u64,
    text: &str,
) -> Option<Box<dyn Query>> {
    let any: Vec<(Occur, Box<dyn Query>)> = words_of(text)
        .iter()
        .flat_map(|word| {
            let term = crate::schema::brand_scoped(brand_id, word);
            [fields.brand_name_words, fields.brand_series_words].map(|field| {
                let term = Term::from_field_text(field, &term);
                let query = TermQuery::new(term, IndexRecordOption::WithFreqs);
                (Occur::Should, Box::new(query) as Box<dyn Query>)
            })
        })
        .collect();
    (!any.is_empty()).then(|| Box::new(BooleanQuery::new(any)) as Box<dyn Query>)
}

pub(crate) fn filter(query: Box<dyn Query>) -> Box<dyn Query> {
    Box::new(ConstScoreQuery::new(query, 0.0))
}

pub(crate) fn term_u64(field: Field, value: u64) -> Box<dyn Query> {
    term_query(Term::from_field_u64(field, value))
}

fn term_text(field: Field, text: &str, boost: f32) -> Box<dyn Query> {
    let query = TermQuery::new(
        Term::from_field_text(field, text),
        IndexRecordOption::WithFreqs,
    );
    Box::new(BoostQuery::new(Box::new(query), boost))
}

/// A reference hit scores a constant: how often or in how long a list a reference occurs says
/// nothing about relevance, and equal scores fall back to the id order.
fn term_reference(field: Field, reference: &str, score: f32) -> Box<dyn Query> {
    let query = TermQuery::new(
        Term::from_field_text(field, reference),
        IndexRecordOption::Basic,
    );
    Box::new(ConstScoreQuery::new(Box::new(query), score))
}

/// Where free text is looked for: word fields with their weights, and the fields holding
/// normalised references whole and as prefixes.
pub(crate) struct TextFields {
    pub words: Vec<(Field, f32)>,
    pub ref_exact: Field,
    pub ref_prefix: ReferencePrefixes,
}

/// How the references that start with a word are found.
#[derive(Clone, Copy)]
pub(crate) enum ReferencePrefixes {
    /// A short prefix is a term of `prefixes` (the catalogue's), one postings list the pruned
    /// search reads like any term; a longer one (`is_indexed_prefix`) reads the range of the
    /// whole references (`whole`) that start with it, few for such a prefix.
    Indexed { prefixes: Field, whole: Field },
    /// Each reference is one term of the field, whole (the listings'): a prefix reads the
    /// range of terms that start with it. Indexing ten prefixes of every listing's reference
    /// was about half of what indexing a listing cost.
    Ranges(Field),
}

impl ReferencePrefixes {
    /// The documents with a reference that starts with `prefix`, each scored `score`.
    pub(crate) fn query(self, prefix: &str, score: f32) -> Box<dyn Query> {
        match self {
            ReferencePrefixes::Indexed { prefixes, .. } if is_indexed_prefix(prefix) => {
                term_reference(prefixes, prefix, score)
            }
            ReferencePrefixes::Indexed { whole, .. } => {
                let starting = StartingWith {
                    field: whole,
                    prefix: prefix.to_owned(),
                };
                Box::new(ConstScoreQuery::new(Box::new(starting), score))
            }
            ReferencePrefixes::Ranges(field) => Box::new(ConstScoreQuery::new(
                terms_starting_with_query(field, prefix),
                score,
            )),
        }
    }

    /// The terms whose postings hold the documents with a reference that starts with
    /// `prefix`: the prefix's own term when it is indexed, else every whole reference of a
    /// segment of `searcher` that starts with it.
    pub(crate) fn terms(self, searcher: &Searcher, prefix: &str) -> tantivy::Result<Vec<Term>> {
        match self {
            ReferencePrefixes::Indexed { prefixes, .. } if is_indexed_prefix(prefix) => {
                Ok(vec![Term::from_field_text(prefixes, prefix)])
            }
            ReferencePrefixes::Indexed { whole: field, .. } | ReferencePrefixes::Ranges(field) => {
                terms_starting_with(searcher, field, prefix)
            }
        }
    }
}

/// The documents of `field`'s terms that start with `prefix`, read as one range of its terms.
pub(crate) fn terms_starting_with_query(field: Field, prefix: &str) -> Box<dyn Query> {
    // One term: tantivy reads it as the range of terms that start with it.
    let mut starting = PhrasePrefixQuery::new(vec![Term::from_field_text(field, prefix)]);
    starting.set_max_expansions(u32::MAX);
    Box::new(starting)
}

/// Either every word matches (as a word of a text field, or as a reference or its prefix), or
/// the whole text is a reference or a reference prefix.
pub(crate) fn text_query(fields: &TextFields, text: &TextQuery) -> Box<dyn Query> {
    let words = words_of(&text.text);
    let mut alternatives: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    if !words.is_empty() {
        let every_word = words
            .iter()
            .map(|word| (Occur::Must, word_query(fields, word)))
            .collect();
        alternatives.push((Occur::Should, Box::new(BooleanQuery::new(every_word))));
    }
    let whole = text.normalized_reference.as_str();
    if !whole.is_empty() {
        alternatives.push((
            Occur::Should,
            term_reference(fields.ref_exact, whole, EXACT_REFERENCE_BOOST),
        ));
        if whole.chars().count() >= MIN_REFERENCE_PREFIX {
            alternatives.push((
                Occur::Should,
                fields.ref_prefix.query(whole, REFERENCE_PREFIX_BOOST),
            ));
        }
    }
    Box::new(BooleanQuery::new(alternatives))
}

fn word_query(fields: &TextFields, word: &str) -> Box<dyn Query> {
    let mut any: Vec<(Occur, Box<dyn Query>)> = fields
        .words
        .iter()
        .map(|&(field, boost)| (Occur::Should, term_text(field, word, boost)))
        .collect();
    any.push((
        Occur::Should,
        term_reference(fields.ref_exact, word, WORD_IS_REFERENCE_BOOST),
    ));
    if word.chars().count() >= MIN_REFERENCE_PREFIX {
        any.push((
            Occur::Should,
            fields
                .ref_prefix
                .query(word, WORD_IS_REFERENCE_PREFIX_BOOST),
        ));
    }
    Box::new(BooleanQuery::new(any))
}

/// The distinct words of `text` as the text fields index them (lowercased, accents folded),
/// in the order they first occur.
pub(crate) fn words_of(text: &str) -> Vec<String> {
    let mut words = folded_words(text);
    let mut seen = std::collections::HashSet::new();
    words.retain(|word| seen.insert(word.clone()));
    words
}

/// Every word of `text` as the folded fields index it, in order, repeats kept.
pub(crate) fn folded_words(text: &str) -> Vec<String> {
    let mut analyzer = folded_analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut words = Vec::new();
    while let Some(token) = stream.next() {
        words.push(token.text.clone());
    }
    words
}

/// Calls `each` with every document holding `term`, deleted ones included.
pub(crate) fn for_each_doc(
    reader: &tantivy::SegmentReader,
    term: &Term,
    mut each: impl FnMut(tantivy::DocId),
) -> tantivy::Result<()> {
    use tantivy::DocSet;
    let inverted = reader.inverted_index(term.field())?;
    if let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)? {
        let mut doc = postings.doc();
        while doc != tantivy::TERMINATED {
            each(doc);
            doc = postings.advance();
        }
    }
    Ok(())
}
