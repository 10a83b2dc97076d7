//! The documents of a segment's most common words, kept as bitsets: several common words are
//! intersected a machine word at a time instead of postings list against postings list, which
//! was the larger part of a two- or three-word search over a million models (bench/RESULTS.md,
//! "Common words as bitsets").

use crate::IndexResult;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tantivy::index::SegmentId;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, SegmentReader, Term, TERMINATED};

/// A word is kept as a bitset when at least one document in this many holds it: the bitset is
/// then at most two bytes a posting.
const DENSE_AT: u32 = 16;
/// Bitsets kept at most: 16 MB of them over segments of a million documents.
const KEPT_AT_MOST: usize = 128;
/// Segments smaller than this intersect their postings: it is quick there, and the small
/// segments incremental updates make would otherwise fill the bitsets kept.
const SEGMENT_DOCS_AT_LEAST: u32 = 1 << 16;

/// One bit a document of its segment, set where the word is.
pub(crate) type Bits = Arc<Vec<u64>>;

/// Bitsets of common words per segment, made on first use. Segments never change but for
/// deletes, which the caller applies, so a bitset stays right for its segment's life.
pub(crate) struct DenseWords {
    kept: Mutex<HashMap<(SegmentId, Term), Bits>>,
    segment_docs_at_least: u32,
}

impl Default for DenseWords {
    fn default() -> DenseWords {
        DenseWords::for_segments_of(SEGMENT_DOCS_AT_LEAST)
    }
}

impl DenseWords {
    /// Bitsets in segments of at least `docs` documents (tests take small ones too).
    pub(crate) fn for_segments_of(docs: u32) -> DenseWords {
        DenseWords {
            kept: Mutex::default(),
            segment_docs_at_least: docs,
        }
    }

    /// The bitset of `term` in `reader`'s segment when the term is common there; `None` when it
    /// is not, or when no more bitsets are kept (the caller intersects postings instead).
    pub(crate) fn bits(&self, reader: &SegmentReader, term: &Term) -> IndexResult<Option<Bits>> {
        if reader.max_doc() < self.segment_docs_at_least {
            return Ok(None);
        }
        let inverted = reader.inverted_index(term.field())?;
        let Some(info) = inverted.get_term_info(term)? else {
            return Ok(None);
        };
        if info.doc_freq.saturating_mul(DENSE_AT) < reader.max_doc() {
            return Ok(None);
        }
        let key = (reader.segment_id(), term.clone());
        {
            let kept = self.lock();
            if let Some(bits) = kept.get(&key) {
                return Ok(Some(bits.clone()));
            }
            // Full: a bitset made now would be thrown away, and made again by every search.
            if kept.len() >= KEPT_AT_MOST {
                return Ok(None);
            }
        }
        let mut bits = vec![0u64; (reader.max_doc() as usize).div_ceil(64)];
        let mut postings = inverted.read_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
        let mut doc = postings.doc();
        while doc != TERMINATED {
            bits[doc as usize / 64] |= 1 << (doc % 64);
            doc = postings.advance();
        }
        let bits = Arc::new(bits);
        // Searches that made bitsets at once may have filled it meanwhile: this one then serves
        // only its search. Two of the same word are equal, and one is kept.
        let mut kept = self.lock();
        if kept.len() < KEPT_AT_MOST {
            kept.entry(key).or_insert_with(|| bits.clone());
        }
        Ok(Some(bits))
    }

    /// How many bitsets are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Forgets the bitsets of segments not in `live` (merged away).
    pub(crate) fn keep_only(&self, live: &[SegmentId]) {
        self.lock().retain(|(segment, _), _| live.contains(segment));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(SegmentId, Term), Bits>> {
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The documents set in every one of `sets` (at least one), ascending.
pub(crate) fn every_set(sets: &[Bits]) -> impl Iterator<Item = DocId> + '_ {
    let words = sets.iter().map(|bits| bits.len()).min().unwrap_or(0);
    (0..words).flat_map(move |at| {
        let mut word = sets.iter().fold(u64::MAX, |all, bits| all & bits[at]);
        std::iter::from_fn(move || {
            (word != 0).then(|| {
                let bit = word.trailing_zeros();
                word &= word - 1;
                at as DocId * 64 + bit
            })
        })
    })
}
