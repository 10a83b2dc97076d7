//! The typo tier of a relevance-ordered search, ranked and counted in one walk of its words'
//! matches as bits ([`super::walk`]): the documents every word matched (as typed or through a
//! form) but not every word as typed. The same matches and scores as the tier's query
//! ([`crate::query::only_loosely`]), whose unions of large postings lists a conjunction seeks
//! window by window, slow for a misspelt common word at a million models (docs/decisions.md,
//! D-53).
//!
//! The scores are sums of a few constants that are binary fractions (3, 1.5, 1, 0.75, 0.25),
//! exact in `f32` in any order, so they equal the query's whatever order it adds them in; ties
//! go to the smaller id, as every order here breaks them. The index keeps each segment in id
//! order, so the document order is the id order.

use super::{reference_terms, word_as_typed_terms, Loose, LooseWord, WordForms};
use crate::collector::best_ids;
use crate::not_models::{NotModels, NotModelsCache};
use crate::pruned::DenseWords;
use crate::query::{filter_clauses, SearchRequest};
use crate::schema::Fields;
use crate::segment_cache::IdColumns;
use crate::IndexResult;
use std::sync::Arc;
use tantivy::query::{BooleanQuery, EnableScoring, Query, Weight};
use tantivy::{Searcher, Term};

/// The matches that need a typo or a prefix: the walk's terms and checks, made once for every
/// segment, ranked ([`Tier::ranked`]) or only counted ([`Tier::counted`]).
pub(crate) struct Tier<'a> {
    pub(super) fields: &'a Fields,
    pub(super) words: &'a [LooseWord],
    /// Each word's terms as typed ([`word_as_typed_terms`]), its `model_words` term first.
    pub(super) typed: Vec<Vec<Term>>,
    /// Documents the whole text finds as a reference: exact matches.
    pub(super) whole: Vec<Term>,
    /// The request's other filters, when it has any.
    pub(super) filter: Option<Box<dyn Weight>>,
    /// Each segment's brands, series and deleted documents, in the searcher's order.
    not_models: Vec<Arc<NotModels>>,
    /// The common words kept whole.
    pub(super) dense: &'a DenseWords,
    /// Where each word's matches in a segment are kept, for the searcher's generation.
    pub(super) kept: &'a WordForms,
    pub(super) generation: u64,
}

impl<'a> Tier<'a> {
    pub(super) fn new(
        searcher: &Searcher,
        fields: &'a Fields,
        request: &SearchRequest,
        normalized_reference: &str,
        loose: &'a Loose,
        not_models: &NotModelsCache,
        dense: &'a DenseWords,
    ) -> IndexResult<Tier<'a>> {
        let words = &loose.words;
        let clauses = filter_clauses(fields, &request.filters);
        let filter = match clauses.is_empty() {
            true => None,
            false => Some(
                BooleanQuery::new(clauses)
                    .weight(EnableScoring::disabled_from_searcher(searcher))?,
            ),
        };
        Ok(Tier {
            fields,
            words,
            typed: (words.iter())
                .map(|w| word_as_typed_terms(searcher, fields, &w.word))
                .collect::<tantivy::Result<_>>()?,
            whole: reference_terms(searcher, fields, normalized_reference)?,
            filter,
            not_models: not_models.of(searcher, fields)?,
            dense,
            kept: loose.kept,
            generation: searcher.generation().generation_id(),
        })
    }

    /// The best `k` documents of the tier (ids) and how many it holds, ranked as
    /// [`crate::query::only_loosely`] ranks them; `None` for a text without words.
    pub(crate) fn ranked(
        &self,
        searcher: &Searcher,
        k: usize,
        id_columns: &IdColumns,
    ) -> IndexResult<Option<(Vec<u64>, usize)>> {
        if self.words.is_empty() {
            return Ok(None);
        }
        let mut ranked: Vec<(u64, u64)> = Vec::new();
        let mut total = 0;
        let segments = searcher.segment_readers().iter().zip(&self.not_models);
        for ((reader, not_models), ids) in segments.zip(id_columns.of(searcher)?) {
            let (best, count) = self.ranked_in(reader, &ids, not_models, k)?;
            ranked.extend(best);
            total += count;
        }
        Ok(Some((best_ids(ranked, k), total)))
    }

    /// How many documents the tier holds, without ranking them: for a page the exact matches
    /// fill.
    pub(crate) fn counted(&self, searcher: &Searcher) -> IndexResult<usize> {
        let mut total = 0;
        for (reader, not_models) in searcher.segment_readers().iter().zip(&self.not_models) {
            total += self.count(reader, not_models)?;
        }
        Ok(total)
    }
}
