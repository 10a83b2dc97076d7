//! The typo tier of a relevance-ordered search, ranked and counted in one pass over its terms'
//! postings: each word's typed terms and forms are read once into per-document sums (its
//! score, how many words it matched, how many as typed), and the documents every word matched
//! but not every word as typed are the tier. The same matches and scores as the tier's query
//! ([`crate::query::only_loosely`]), whose unions of large postings lists a conjunction seeks
//! window by window: a misspelt common word cost 24 ms at 1M models (bench/RESULTS.md,
//! "The typo tier in one pass").
//!
//! The scores are sums of a few constants that are binary fractions (3, 1.5, 1, 0.75, 0.25),
//! exact in `f32` in any order, so they equal the query's whatever order it adds them in; ties
//! go to the smaller id, as every order here breaks them. The index keeps each segment in id
//! order, so the document order is the id order.

use super::{reference_terms, word_as_typed_terms, LooseWord, LOOSE_SHARE, TYPED_SCORE};
use crate::collector::best_ids;
use crate::query::{filter_clauses, for_each_doc, DocKind, SearchRequest};
use crate::schema::Fields;
use crate::segment_cache::IdColumns;
use crate::IndexResult;
use std::collections::BinaryHeap;
use tantivy::columnar::Column;
use tantivy::query::{BitSetDocSet, BooleanQuery, EnableScoring, Query, Weight};
use tantivy::{BitSet, DocSet, Score, Searcher, SegmentReader, Term, TERMINATED};

/// Most words the pass counts per document (a byte each); a longer text takes the query.
const MOST_WORDS: usize = u8::MAX as usize;

/// The best `k` documents of the tier (ids) and how many it holds; `None` when the text has
/// too many words for the pass.
pub(crate) fn ranked(
    searcher: &Searcher,
    fields: &Fields,
    request: &SearchRequest,
    normalized_reference: &str,
    words: &[LooseWord],
    k: usize,
    id_columns: &IdColumns,
) -> IndexResult<Option<(Vec<u64>, usize)>> {
    if words.is_empty() || words.len() > MOST_WORDS {
        return Ok(None);
    }
    let tier = Tier::new(searcher, fields, request, normalized_reference, words)?;
    let mut ranked: Vec<(u64, u64)> = Vec::new();
    let mut total = 0;
    for (reader, ids) in searcher
        .segment_readers()
        .iter()
        .zip(id_columns.of(searcher)?)
    {
        let (best, count) = tier.segment(reader, &ids, k)?;
        ranked.extend(best);
        total += count;
    }
    Ok(Some((best_ids(ranked, k), total)))
}

/// The pass's terms and checks, made once for every segment.
pub(super) struct Tier<'a> {
    pub(super) words: &'a [LooseWord],
    /// Each word's terms as typed ([`word_as_typed_terms`]), its `model_words` term first.
    pub(super) typed: Vec<Vec<Term>>,
    /// Documents the whole text finds as a reference: exact matches.
    pub(super) whole: Vec<Term>,
    /// Documents of another kind than models.
    other_kinds: Vec<Term>,
    /// The request's other filters, when it has any.
    pub(super) filter: Option<Box<dyn Weight>>,
}

impl<'a> Tier<'a> {
    pub(super) fn new(
        searcher: &Searcher,
        fields: &'a Fields,
        request: &SearchRequest,
        normalized_reference: &str,
        words: &'a [LooseWord],
    ) -> IndexResult<Tier<'a>> {
        let clauses = filter_clauses(fields, &request.filters);
        let filter = match clauses.is_empty() {
            true => None,
            false => Some(
                BooleanQuery::new(clauses)
                    .weight(EnableScoring::disabled_from_searcher(searcher))?,
            ),
        };
        Ok(Tier {
            words,
            typed: (words.iter())
                .map(|w| word_as_typed_terms(fields, &w.word))
                .collect(),
            whole: reference_terms(fields, normalized_reference),
            other_kinds: [DocKind::Brand, DocKind::Series]
                .map(|kind| Term::from_field_u64(fields.kind, kind as u64))
                .to_vec(),
            filter,
        })
    }

    /// The segment's best `k` as (score key, id), and its number of matches.
    fn segment(
        &self,
        reader: &SegmentReader,
        ids: &Column<u64>,
        k: usize,
    ) -> IndexResult<(Vec<(u64, u64)>, usize)> {
        let (sums, fewest) = self.sums(reader)?;
        let excluded = self.union(reader, self.whole.iter().chain(&self.other_kinds))?;
        let alive = reader.alive_bitset();
        let mut filter = match &self.filter {
            Some(weight) => Some(weight.scorer(reader, 1.0)?),
            None => None,
        };
        let every = self.words.len() as u8;
        let mut best = BinaryHeap::new();
        let mut count = 0;
        let mut docs = BitSetDocSet::from(fewest);
        while docs.doc() != TERMINATED {
            let doc = docs.doc();
            docs.advance();
            let d = doc as usize;
            if sums.matched[d] != every || sums.typed[d] == every || excluded.contains(doc) {
                continue;
            }
            if alive.is_some_and(|alive| !alive.is_alive(doc)) {
                continue;
            }
            if let Some(filter) = filter.as_mut() {
                let at = match filter.doc() < doc {
                    true => filter.seek(doc),
                    false => filter.doc(),
                };
                if at != doc {
                    continue;
                }
            }
            count += 1;
            // Documents come in id order: one that only ties the worst kept loses on id.
            let key = (!u64::from(sums.score[d].to_bits()), doc);
            if best.len() < k {
                best.push(key);
            } else if best.peek().is_some_and(|worst| key < *worst) {
                best.pop();
                best.push(key);
            }
        }
        let ranked = best
            .into_iter()
            .map(|(score, doc)| (score, ids.first(doc).unwrap_or(u64::MAX)))
            .collect();
        Ok((ranked, count))
    }

    /// Every word's typed terms and forms, read once; with the documents of the word that
    /// matched fewest, among which every match is.
    fn sums(&self, reader: &SegmentReader) -> IndexResult<(Sums, BitSet)> {
        let max_doc = reader.max_doc() as usize;
        let mut sums = Sums {
            score: vec![0.0; max_doc],
            matched: vec![0; max_doc],
            typed: vec![0; max_doc],
        };
        let mut fewest: Option<BitSet> = None;
        for (word, typed) in self.words.iter().zip(&self.typed) {
            // The documents the word matched so far, counted once each.
            let mut seen = BitSet::with_max_value(reader.max_doc());
            for term in typed {
                for_each_doc(reader, term, |doc| {
                    if !seen.contains(doc) {
                        seen.insert(doc);
                        let d = doc as usize;
                        sums.score[d] += TYPED_SCORE;
                        sums.typed[d] += 1;
                        sums.matched[d] += 1;
                    }
                })?;
            }
            for (field, boost, forms) in word.forms.iter() {
                let score = boost * LOOSE_SHARE;
                for form in forms {
                    let term = Term::from_field_text(*field, form);
                    for_each_doc(reader, &term, |doc| {
                        let d = doc as usize;
                        sums.score[d] += score;
                        if !seen.contains(doc) {
                            seen.insert(doc);
                            sums.matched[d] += 1;
                        }
                    })?;
                }
            }
            if fewest
                .as_ref()
                .is_none_or(|fewest| seen.len() < fewest.len())
            {
                fewest = Some(seen);
            }
        }
        // There is a word: `ranked` takes no text without one.
        let fewest = fewest.unwrap_or_else(|| BitSet::with_max_value(reader.max_doc()));
        Ok((sums, fewest))
    }

    /// The documents holding any of `terms`.
    fn union<'t>(
        &self,
        reader: &SegmentReader,
        terms: impl IntoIterator<Item = &'t Term>,
    ) -> IndexResult<BitSet> {
        let mut docs = BitSet::with_max_value(reader.max_doc());
        for term in terms {
            for_each_doc(reader, term, |doc| {
                docs.insert(doc);
            })?;
        }
        Ok(docs)
    }
}

/// Per document of a segment: its score in the tier, the words it matched (as typed or by a
/// form), and the words it matched as typed.
struct Sums {
    score: Vec<Score>,
    matched: Vec<u8>,
    typed: Vec<u8>,
}
