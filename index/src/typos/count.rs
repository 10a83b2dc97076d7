//! The typo tier counted, not ranked: what a page the exact matches fill still needs for its
//! `total`. The tier is the documents every word matched (as typed or through a form) less those
//! every word matched as typed, so each of its documents holds a form of some word: only the
//! machine words (64 documents) holding a form can hold one. There, each word's matches are read
//! a machine word at a time, its typed matches from the bitset the exact search kept for it
//! ([`DenseWords`]) when it is common; nothing is allocated a segment long. The forms of a
//! correctly spelt word are a few hundred documents beside its hundreds of thousands, so this
//! costs microseconds where tantivy's conjunction of unions, seeking a window at a time, cost
//! half the search (bench/RESULTS.md, "The typo tier counted as bitsets").

use super::tier::Tier;
use crate::not_models::NotModels;
use crate::pruned::{CommonWord, DenseWords};
use crate::query::for_each_doc;
use crate::IndexResult;
use std::sync::Arc;
use tantivy::{DocId, DocSet, SegmentReader, Term, TERMINATED};

/// The bits of some documents of a segment, kept only for the machine words holding one, in
/// ascending order of machine word.
#[derive(Default)]
struct SparseBits(Vec<(usize, u64)>);

impl SparseBits {
    /// The documents holding any of `terms`.
    fn of_terms<'t>(
        reader: &SegmentReader,
        terms: impl IntoIterator<Item = &'t Term>,
    ) -> IndexResult<SparseBits> {
        let mut docs = Vec::new();
        for term in terms {
            for_each_doc(reader, term, |doc| docs.push(doc))?;
        }
        Ok(SparseBits::of_docs(docs, reader.max_doc()))
    }

    /// The bits of `docs` (in any order, repeats allowed) of a segment of `max_doc` documents.
    fn of_docs(mut docs: Vec<DocId>, max_doc: DocId) -> SparseBits {
        let machine_words = (max_doc as usize).div_ceil(64);
        if docs.len() > machine_words {
            // More documents than machine words (the forms of a misspelt common word: 600,000
            // at 1M models): setting bits a segment long beats sorting them, 13 ms of 15.
            let mut bits = vec![0u64; machine_words];
            for doc in docs {
                bits[doc as usize / 64] |= 1 << (doc % 64);
            }
            let held = bits.into_iter().enumerate().filter(|(_, bits)| *bits != 0);
            return SparseBits(held.collect());
        }
        docs.sort_unstable();
        let mut words: Vec<(usize, u64)> = Vec::new();
        for doc in docs {
            let (at, bit) = (doc as usize / 64, 1u64 << (doc % 64));
            match words.last_mut() {
                Some((last, bits)) if *last == at => *bits |= bit,
                _ => words.push((at, bit)),
            }
        }
        SparseBits(words)
    }

    fn machine_words(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().map(|(at, _)| *at)
    }
}

/// Reads a [`SparseBits`] at ascending machine words.
struct Cursor<'a> {
    words: &'a [(usize, u64)],
}

impl Cursor<'_> {
    /// The bits at machine word `at`, not before the last asked for.
    fn at(&mut self, at: usize) -> u64 {
        while self.words.first().is_some_and(|(first, _)| *first < at) {
            self.words = &self.words[1..];
        }
        match self.words.first() {
            Some((first, bits)) if *first == at => *bits,
            _ => 0,
        }
    }
}

/// Ascending documents read as bits at ascending machine words: a list the walk meets in
/// order, where a binary search per match (207,000 of them for a misspelt common word) cost
/// most of the count.
struct Ascending<'a>(&'a [DocId]);

impl Ascending<'_> {
    /// The bits of the documents in machine word `at`, not before the last asked for.
    fn bits_at(&mut self, at: usize) -> u64 {
        let first = at as u64 * 64;
        while self.0.first().is_some_and(|&doc| u64::from(doc) < first) {
            self.0 = &self.0[1..];
        }
        let mut bits = 0;
        while let Some((&doc, rest)) = self.0.split_first() {
            let offset = u64::from(doc) - first;
            if offset >= 64 {
                break;
            }
            bits |= 1 << offset;
            self.0 = rest;
        }
        bits
    }
}

/// The documents a word matches as typed: the bitset the exact search kept when the word is
/// common (and its references, few), or its terms' postings.
struct Typed {
    kept: Option<Arc<CommonWord>>,
    read: SparseBits,
}

impl Typed {
    fn of(reader: &SegmentReader, terms: &[Term], dense: &DenseWords) -> IndexResult<Typed> {
        // The word's `model_words` term comes first ([`super::word_as_typed_terms`]).
        let kept = terms.first().and_then(|word| dense.kept(reader, word));
        let rest = match kept {
            Some(_) => terms.get(1..).unwrap_or_default(),
            None => terms,
        };
        Ok(Typed {
            kept,
            read: SparseBits::of_terms(reader, rest)?,
        })
    }
}

impl Tier<'_> {
    /// How many documents of `reader`'s segment the tier holds: the same number as
    /// [`Tier::segment`] gives, without scores. `not_models` is the segment's
    /// ([`NotModels`]): its brands, series and deleted documents are none of the tier's.
    pub(super) fn count(
        &self,
        reader: &SegmentReader,
        not_models: &NotModels,
        dense: &DenseWords,
    ) -> IndexResult<usize> {
        let typed = (self.typed.iter())
            .map(|terms| Typed::of(reader, terms, dense))
            .collect::<IndexResult<Vec<_>>>()?;
        let forms = (self.words.iter())
            .map(|word| SparseBits::of_terms(reader, &word.form_terms().collect::<Vec<_>>()))
            .collect::<IndexResult<Vec<_>>>()?;
        let mut holding_a_form: Vec<usize> = forms.iter().flat_map(|f| f.machine_words()).collect();
        holding_a_form.sort_unstable();
        holding_a_form.dedup();
        let mut typed_read: Vec<Cursor> =
            typed.iter().map(|t| Cursor { words: &t.read.0 }).collect();
        let mut form_read: Vec<Cursor> = forms.iter().map(|f| Cursor { words: &f.0 }).collect();
        let whole = self.whole_reference_docs(reader)?;
        let mut not_live = Ascending(&not_models.not_live_models);
        let mut whole = Ascending(&whole);
        let mut filter = match &self.filter {
            Some(weight) => Some(weight.scorer(reader, 1.0)?),
            None => None,
        };
        let mut count = 0;
        for at in holding_a_form {
            let (mut every_typed, mut every_matched) = (u64::MAX, u64::MAX);
            for w in 0..typed.len() {
                let kept =
                    (typed[w].kept.as_ref()).map_or(0, |k| k.bits().get(at).copied().unwrap_or(0));
                let as_typed = kept | typed_read[w].at(at);
                every_typed &= as_typed;
                every_matched &= as_typed | form_read[w].at(at);
            }
            let excluded = not_live.bits_at(at) | whole.bits_at(at);
            let mut tier = every_matched & !every_typed & !excluded;
            let Some(filter) = filter.as_mut() else {
                count += tier.count_ones() as usize;
                continue;
            };
            while tier != 0 {
                let doc = (at * 64) as DocId + tier.trailing_zeros();
                tier &= tier - 1;
                if filter.doc() < doc && filter.seek(doc) == TERMINATED {
                    return Ok(count);
                }
                if filter.doc() == doc {
                    count += 1;
                }
            }
        }
        Ok(count)
    }

    /// The documents the whole text finds as a reference (exact matches, never the tier's),
    /// ascending.
    fn whole_reference_docs(&self, reader: &SegmentReader) -> IndexResult<Vec<DocId>> {
        let mut docs = Vec::new();
        for term in &self.whole {
            for_each_doc(reader, term, |doc| docs.push(doc))?;
        }
        docs.sort_unstable();
        Ok(docs)
    }
}

/// The tier's number of matches, counted segment by segment as [`Tier::count`] does;
/// `not_models` holds each segment's, in the searcher's order.
pub(super) fn counted(
    tier: &Tier<'_>,
    readers: &[SegmentReader],
    not_models: &[Arc<NotModels>],
    dense: &DenseWords,
) -> IndexResult<usize> {
    let mut total = 0;
    for (reader, not_models) in readers.iter().zip(not_models) {
        total += tier.count(reader, not_models, dense)?;
    }
    Ok(total)
}
