//! The typo tier counted, not ranked: what a page the exact matches fill still needs for its
//! `total`. Each word's matches (as typed, and through a form) become a bitset of the segment,
//! the words' bitsets are intersected a machine word at a time, and the tier is the documents
//! every word matched less those every word matched as typed. A common word's bitset is the one
//! the exact search kept ([`DenseWords`]), so a correctly spelt search of common words does
//! not read their postings again; tantivy's conjunction of unions did, a window at a time
//! (bench/RESULTS.md, "The typo tier counted as bitsets").

use super::tier::Tier;
use crate::not_models::NotModels;
use crate::pruned::DenseWords;
use crate::query::for_each_doc;
use crate::IndexResult;
use std::sync::Arc;
use tantivy::{DocId, DocSet, SegmentReader, Term, TERMINATED};

/// One bit a document of a segment.
struct Bits(Vec<u64>);

impl Bits {
    fn empty(max_doc: DocId) -> Bits {
        Bits(vec![0; (max_doc as usize).div_ceil(64)])
    }

    fn insert(&mut self, doc: DocId) {
        if let Some(word) = self.0.get_mut(doc as usize / 64) {
            *word |= 1 << (doc % 64);
        }
    }

    fn remove(&mut self, doc: DocId) {
        if let Some(word) = self.0.get_mut(doc as usize / 64) {
            *word &= !(1 << (doc % 64));
        }
    }

    fn insert_docs_of(&mut self, reader: &SegmentReader, term: &Term) -> IndexResult<()> {
        Ok(for_each_doc(reader, term, |doc| self.insert(doc))?)
    }

    fn and(&mut self, other: &Bits) {
        for (mine, theirs) in self.0.iter_mut().zip(&other.0) {
            *mine &= *theirs;
        }
    }

    fn and_not(&mut self, other: &Bits) {
        for (mine, theirs) in self.0.iter_mut().zip(&other.0) {
            *mine &= !*theirs;
        }
    }

    fn len(&self) -> usize {
        self.0.iter().map(|word| word.count_ones() as usize).sum()
    }

    fn docs(&self) -> impl Iterator<Item = DocId> + '_ {
        self.0.iter().enumerate().flat_map(|(at, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros();
                    rest &= rest - 1;
                    at as DocId * 64 + bit
                })
            })
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
        let mut every_word: Option<Bits> = None;
        let mut every_word_typed: Option<Bits> = None;
        for (word, typed) in self.words.iter().zip(&self.typed) {
            let mut matched = self.typed_docs(reader, typed, dense)?;
            match every_word_typed.as_mut() {
                Some(all) => all.and(&matched),
                None => every_word_typed = Some(Bits(matched.0.clone())),
            }
            for term in word.form_terms() {
                matched.insert_docs_of(reader, &term)?;
            }
            match every_word.as_mut() {
                Some(all) => all.and(&matched),
                None => every_word = Some(matched),
            }
        }
        let (Some(mut tier), Some(exact)) = (every_word, every_word_typed) else {
            return Ok(0);
        };
        tier.and_not(&exact);
        for &doc in &not_models.not_live_models {
            tier.remove(doc);
        }
        for term in &self.whole {
            for_each_doc(reader, term, |doc| tier.remove(doc))?;
        }
        let Some(filter) = &self.filter else {
            return Ok(tier.len());
        };
        let mut filter = filter.scorer(reader, 1.0)?;
        let mut count = 0;
        for doc in tier.docs() {
            if filter.doc() < doc && filter.seek(doc) == TERMINATED {
                break;
            }
            count += usize::from(filter.doc() == doc);
        }
        Ok(count)
    }

    /// The documents a word matches as typed (`typed`, its terms): the bitset the exact search
    /// kept for its word when it is common, with the word's references added; else postings.
    fn typed_docs(
        &self,
        reader: &SegmentReader,
        typed: &[Term],
        dense: &DenseWords,
    ) -> IndexResult<Bits> {
        let (kept, rest) = match typed.split_first() {
            Some((word, rest)) => match dense.kept(reader, word) {
                Some(common) => (Some(Bits(common.bits().to_vec())), rest),
                None => (None, typed),
            },
            None => (None, typed),
        };
        let mut docs = kept.unwrap_or_else(|| Bits::empty(reader.max_doc()));
        for term in rest {
            docs.insert_docs_of(reader, term)?;
        }
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
