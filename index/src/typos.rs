//! Typo tolerance. A word of `q` may also match with typos, the last one also as a prefix; the
//! forms each word reaches are found by walking each text field's term dictionary with the
//! word's Levenshtein automaton, and the matches that need one are a query over those few
//! terms, so a correctly spelt search costs a dictionary walk, not a second search. A page
//! that reaches those matches ranks them in one pass over the terms' postings ([`tier`]).

mod tier;
mod walk;

use crate::generation_cache::GenerationCache;
use crate::not_models::NotModelsCache;
use crate::pruned::DenseWords;
use crate::query::{filter, term_query, words_of, SearchRequest, TextQuery};
use crate::schema::Fields;
use crate::tokenizer::MIN_REFERENCE_PREFIX;
use std::collections::BTreeSet;
use std::sync::Arc;
use tantivy::index::SegmentId;
use tantivy::query::{BooleanQuery, ConstScoreQuery, DfaWrapper, FuzzyTermQuery, Occur, Query};
use tantivy::schema::Field;
use tantivy::{Searcher, SegmentReader, Term};

/// Words of this many characters match with one typo; shorter ones only as they are.
const ONE_TYPO_FROM: usize = 5;
/// Words of this many characters match with two typos.
const TWO_TYPOS_FROM: usize = 9;
/// The last word matches as a prefix from this many characters: one letter would match most
/// of the catalogue.
const PREFIX_FROM: usize = 2;
/// A loose match of a word in a field scores this share of the field's weight.
const LOOSE_SHARE: f32 = 0.5;
/// Among loose matches, a word found as typed scores this: the weight of a name match, above
/// any loose form.
const TYPED_SCORE: f32 = 3.0;
/// Longer words match only as typed: no watch word is this long, and an automaton of two
/// typos grows with the word (a `q` of 200 letters must not cost a second).
const LOOSE_WORD_CHARS: usize = 24;
/// Words of the text after this many match only as typed, for the same reason.
const LOOSE_WORDS: usize = 8;
/// Most loose forms a word takes in one field, in dictionary order: a two-letter prefix can
/// reach thousands of words of descriptions, each a postings list to union.
const MAX_LOOSE_FORMS: usize = 128;

/// Words whose forms are kept per searcher generation at most; then the cache starts again.
/// A word holds at most [`MAX_LOOSE_FORMS`] forms in each text field.
const KEPT_WORDS: usize = 4096;
/// A word's matches in a segment ([`walk::WordMatches`]) kept per searcher generation at
/// most, each of [`KEPT_MATCH_BYTES`] at most: 32 MiB in all. A correctly spelt word's take a
/// few kilobytes (its forms' few hundred documents), a misspelt common word's less (its common
/// forms are the words kept whole, shared).
const KEPT_MATCHES: usize = 1024;
const KEPT_MATCH_BYTES: usize = 32 << 10;

/// The forms of a word in each text field: (field, its weight, the forms found there).
type Forms = Vec<(Field, f32, Vec<String>)>;

/// The forms each word of recent searches reaches, and its matches in each segment, kept per
/// searcher generation: walking five term dictionaries with a word's automaton, and reading its
/// forms' postings by their terms, were large shares of a search (docs/decisions.md, D-53), and
/// the words of searches repeat (a catalogue's vocabulary is small).
pub(crate) struct WordForms {
    kept: GenerationCache<(String, Looseness), Arc<Forms>>,
    matches: GenerationCache<(SegmentId, String, Looseness), Arc<walk::WordMatches>>,
}

impl Default for WordForms {
    fn default() -> WordForms {
        WordForms {
            kept: GenerationCache::holding_at_most(KEPT_WORDS),
            matches: GenerationCache::holding_at_most(KEPT_MATCHES),
        }
    }
}

impl WordForms {
    /// `word`'s matches in `reader`'s segment at `generation`: as kept, or made by `make` (and
    /// kept when small enough).
    fn matches_of(
        &self,
        generation: u64,
        reader: &SegmentReader,
        word: &LooseWord,
        make: impl FnOnce() -> crate::IndexResult<walk::WordMatches>,
    ) -> crate::IndexResult<Arc<walk::WordMatches>> {
        let key = (reader.segment_id(), word.word.clone(), word.looseness);
        if let Some(matches) = self.matches.get(generation, &key) {
            return Ok(matches);
        }
        let matches = Arc::new(make()?);
        if matches.bytes() <= KEPT_MATCH_BYTES {
            self.matches.keep(generation, key, matches.clone());
        }
        Ok(matches)
    }
}

/// How a word may match besides exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Looseness {
    typos: u8,
    prefix: bool,
}

impl Looseness {
    const AS_TYPED: Looseness = Looseness {
        typos: 0,
        prefix: false,
    };

    /// Words with a digit are numbers or references, matched only as they are: `126610`
    /// must never find `126611`.
    fn of(word: &str, is_last: bool) -> Looseness {
        let length = word.chars().count();
        if length > LOOSE_WORD_CHARS || word.chars().any(|c| c.is_ascii_digit()) {
            return Looseness::AS_TYPED;
        }
        let typos = match length {
            n if n >= TWO_TYPOS_FROM => 2,
            n if n >= ONE_TYPO_FROM => 1,
            _ => 0,
        };
        Looseness {
            typos,
            prefix: is_last && length >= PREFIX_FROM,
        }
    }

    fn is_exact(self) -> bool {
        self == Looseness::AS_TYPED
    }

    /// The automaton's query: tantivy's, with a transposition counting as one typo
    /// (Damerau-Levenshtein).
    fn query(self, field: Field, word: &str) -> FuzzyTermQuery {
        let term = Term::from_field_text(field, word);
        match self.prefix {
            true => FuzzyTermQuery::new_prefix(term, self.typos, true),
            false => FuzzyTermQuery::new(term, self.typos, true),
        }
    }
}

/// One word of the text and the terms other than itself it reaches in each text field.
struct LooseWord {
    word: String,
    looseness: Looseness,
    forms: Arc<Forms>,
}

/// The text's loose matches ([`Loose::query`]): every word matches as typed or through one of its forms. With
/// the exact matches taken out ([`as_typed`]) they are the matches that need a typo or a
/// prefix: a model every word of which matched as typed is an exact match, so no clause needs
/// to ask for at least one form (one that did read every form's postings a second time).
/// `None` when typo tolerance is off or no word reaches any term but itself: the loose
/// matches are then the exact ones. Only models are searched loosely.
///
/// Loose matches are ranked among themselves by constants (a word as typed, a form by the
/// weight of the field it is found in), not BM25: each clause is then a term's postings or a
/// small union that seeks cheaply, where the text fields' scored union would be read a window
/// at a time around every candidate.
pub(crate) fn loose_matches<'k>(
    searcher: &Searcher,
    fields: &Fields,
    text: &TextQuery,
    kept: &'k WordForms,
) -> tantivy::Result<Option<Loose<'k>>> {
    if !text.typo_tolerance {
        return Ok(None);
    }
    let words = loose_words(searcher, fields, &text.text, kept)?;
    if words.iter().all(|word| word.forms.is_empty()) {
        return Ok(None);
    }
    Ok(Some(Loose { words, kept }))
}

/// A text's words with their forms, when some word has one.
pub(crate) struct Loose<'k> {
    words: Vec<LooseWord>,
    /// Where the words' matches in each segment are kept.
    kept: &'k WordForms,
}

impl Loose<'_> {
    /// The query of the loose matches: each word as typed or through one of its forms. Built
    /// only by the paths that search with it: a page's typo tier is ranked and counted without
    /// it ([`Loose::tier`]).
    pub(crate) fn query(
        &self,
        searcher: &Searcher,
        fields: &Fields,
    ) -> tantivy::Result<Box<dyn Query>> {
        let words = &self.words;
        let form_terms: Vec<Term> = words.iter().flat_map(LooseWord::form_terms).collect();
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = words
            .iter()
            .map(|w| (Occur::Must, word_or_its_forms(fields, w)))
            .collect();
        // Every loose-only match holds a form, so the forms' union may lead the intersection:
        // worth it when it is smaller than every word's own union (a common word with a rare
        // typo), not when a word matches only through its forms (it would read them twice).
        let forms_size = postings_size(searcher, &form_terms)?;
        let mut smallest_word = u64::MAX;
        for word in words {
            let own: Vec<Term> = word_as_typed_terms(searcher, fields, &word.word)?
                .into_iter()
                .chain(word.form_terms())
                .collect();
            smallest_word = smallest_word.min(postings_size(searcher, &own)?);
        }
        if forms_size < smallest_word {
            let any_form = form_terms
                .into_iter()
                .map(|term| (Occur::Should, term_query(term)))
                .collect();
            clauses.push((Occur::Must, filter(Box::new(BooleanQuery::new(any_form)))));
        }
        Ok(Box::new(BooleanQuery::new(clauses)))
    }

    /// The matches that need a typo or a prefix, ranked or counted in one walk of the words'
    /// matches as bits ([`tier`], [`walk`]) as [`crate::query::only_loosely`] finds them.
    /// `not_models` holds the searcher's segments' brands, series and deleted documents;
    /// `dense` the common words kept whole.
    pub(crate) fn tier<'a>(
        &'a self,
        searcher: &Searcher,
        fields: &'a Fields,
        request: &SearchRequest,
        text: &TextQuery,
        not_models: &NotModelsCache,
        dense: &'a DenseWords,
    ) -> crate::IndexResult<tier::Tier<'a>> {
        tier::Tier::new(
            searcher,
            fields,
            request,
            &text.normalized_reference,
            self,
            not_models,
            dense,
        )
    }
}

/// The models the text matches as typed, unscored: every word is one of the model's words or
/// references (or a reference prefix), or the whole text is a reference (or a prefix). The
/// same models as [`crate::query::text_query`] finds (`model_words` holds every text field's
/// words), by postings that seek cheaply.
pub(crate) fn as_typed(fields: &Fields, text: &TextQuery) -> Box<dyn Query> {
    let words = words_of(&text.text);
    let mut any: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    if !words.is_empty() {
        let every = words
            .iter()
            .map(|w| (Occur::Must, word_as_typed(fields, w)))
            .collect();
        any.push((Occur::Should, Box::new(BooleanQuery::new(every))));
    }
    any.extend(
        references(fields, &text.normalized_reference)
            .into_iter()
            .map(|q| (Occur::Should, q)),
    );
    Box::new(BooleanQuery::new(any))
}

/// A word as typed: one of the model's words, references or reference prefixes.
fn word_as_typed(fields: &Fields, word: &str) -> Box<dyn Query> {
    let as_word = term_query(Term::from_field_text(fields.model_words, word));
    let any = std::iter::once(as_word)
        .chain(references(fields, word))
        .map(|query| (Occur::Should, query))
        .collect();
    Box::new(BooleanQuery::new(any))
}

/// The terms holding [`word_as_typed`]'s documents, its `model_words` term first.
fn word_as_typed_terms(
    searcher: &Searcher,
    fields: &Fields,
    word: &str,
) -> tantivy::Result<Vec<Term>> {
    let mut terms = vec![Term::from_field_text(fields.model_words, word)];
    terms.extend(reference_terms(searcher, fields, word)?);
    Ok(terms)
}

/// `value` as a whole reference and as a reference prefix.
fn references(fields: &Fields, value: &str) -> Vec<Box<dyn Query>> {
    let mut out = Vec::new();
    if !value.is_empty() {
        out.push(term_query(Term::from_field_text(fields.ref_exact, value)));
        if value.chars().count() >= MIN_REFERENCE_PREFIX {
            out.push(fields.reference_prefixes().query(value, 0.0));
        }
    }
    out
}

/// The terms holding [`references`]' documents, each once.
fn reference_terms(
    searcher: &Searcher,
    fields: &Fields,
    value: &str,
) -> tantivy::Result<Vec<Term>> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    let exact = Term::from_field_text(fields.ref_exact, value);
    let mut out = vec![exact.clone()];
    if value.chars().count() >= MIN_REFERENCE_PREFIX {
        let starting = fields.reference_prefixes().terms(searcher, value)?;
        out.extend(starting.into_iter().filter(|term| *term != exact));
    }
    Ok(out)
}

/// How many postings `terms` hold together: what reading their union costs.
fn postings_size(searcher: &Searcher, terms: &[Term]) -> tantivy::Result<u64> {
    let mut size = 0;
    for term in terms {
        size += searcher.doc_freq(term)?;
    }
    Ok(size)
}

/// The word as typed, or any of its forms, each scoring a constant.
fn word_or_its_forms(fields: &Fields, word: &LooseWord) -> Box<dyn Query> {
    let typed = ConstScoreQuery::new(word_as_typed(fields, &word.word), TYPED_SCORE);
    let mut any: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Should, Box::new(typed))];
    for (field, boost, forms) in word.forms.iter() {
        for form in forms {
            let term = term_query(Term::from_field_text(*field, form));
            let scored = ConstScoreQuery::new(term, boost * LOOSE_SHARE);
            any.push((Occur::Should, Box::new(scored)));
        }
    }
    Box::new(BooleanQuery::new(any))
}

impl LooseWord {
    fn form_terms(&self) -> impl Iterator<Item = Term> + '_ {
        self.forms.iter().flat_map(|(field, _, forms)| {
            forms
                .iter()
                .map(move |form| Term::from_field_text(*field, form))
        })
    }
}

/// The words of `text` with their forms in each text field, as `kept` has them for the
/// searcher's generation or found now.
fn loose_words(
    searcher: &Searcher,
    fields: &Fields,
    text: &str,
    kept: &WordForms,
) -> tantivy::Result<Vec<LooseWord>> {
    let generation = searcher.generation().generation_id();
    let words = words_of(text);
    let last = words.len().saturating_sub(1);
    let mut out = Vec::with_capacity(words.len());
    for (i, word) in words.into_iter().enumerate() {
        let looseness = match i < LOOSE_WORDS {
            true => Looseness::of(&word, i == last),
            false => Looseness::AS_TYPED,
        };
        let key = (word, looseness);
        let forms = match kept.kept.get(generation, &key) {
            Some(forms) => forms,
            None => {
                let forms = Arc::new(forms_of(searcher, fields, &key.0, looseness)?);
                kept.kept.keep(generation, key.clone(), forms.clone());
                forms
            }
        };
        out.push(LooseWord {
            word: key.0,
            looseness,
            forms,
        });
    }
    Ok(out)
}

/// The forms of `word` in each text field, found by walking their term dictionaries.
fn forms_of(
    searcher: &Searcher,
    fields: &Fields,
    word: &str,
    looseness: Looseness,
) -> tantivy::Result<Forms> {
    let mut forms = Vec::new();
    if looseness.is_exact() {
        return Ok(forms);
    }
    // One automaton for every field: building one of two typos costs more than walking a
    // dictionary with it.
    let automaton = looseness.query(fields.model_words, word).automaton()?;
    for (field, boost) in fields.text_fields().words {
        let found = forms_in(searcher, field, word, &automaton)?;
        if !found.is_empty() {
            forms.push((field, boost, found));
        }
    }
    Ok(forms)
}

/// The terms of `field` that `automaton` (of `word`) accepts, other than `word`; the first
/// [`MAX_LOOSE_FORMS`] in dictionary order.
fn forms_in(
    searcher: &Searcher,
    field: Field,
    word: &str,
    automaton: &DfaWrapper,
) -> tantivy::Result<Vec<String>> {
    let mut found = BTreeSet::new();
    for reader in searcher.segment_readers() {
        let inverted = reader.inverted_index(field)?;
        let mut terms = inverted.terms().search(automaton).into_stream()?;
        while terms.advance() && found.len() < MAX_LOOSE_FORMS {
            if terms.key() != word.as_bytes() {
                if let Ok(form) = std::str::from_utf8(terms.key()) {
                    found.insert(form.to_owned());
                }
            }
        }
    }
    Ok(found.into_iter().take(MAX_LOOSE_FORMS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn how_loosely_a_word_matches_follows_its_length_and_place() {
        let of = |word: &str, last: bool| {
            let l = Looseness::of(word, last);
            (l.typos, l.prefix)
        };
        assert_eq!(of("rolx", false), (0, false));
        assert_eq!(of("rolex", false), (1, false));
        assert_eq!(of("explorer", false), (1, false));
        assert_eq!(of("submariner", false), (2, false));
        assert_eq!(of("ro", true), (0, true));
        assert_eq!(of("r", true), (0, false));
        assert_eq!(of("speedm", true), (1, true));
        assert_eq!(of("126610ln", true), (0, false), "references never");
        assert_eq!(of("3235", true), (0, false), "numbers never");
        assert_eq!(of(&"a".repeat(LOOSE_WORD_CHARS + 1), true), (0, false));
    }
}
