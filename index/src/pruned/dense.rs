//! A segment's most common words kept whole: the documents holding each as a bitset, and per
//! document how often the word is in each text field. Several common words are then intersected
//! a machine word at a time, and their matches scored from the field frequencies and the field
//! norms, without walking a postings list of a text field (docs/decisions.md, D-40).

use crate::IndexResult;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use tantivy::fastfield::AliveBitSet;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::index::SegmentId;
use tantivy::postings::Postings;
use tantivy::schema::Field;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Score, SegmentReader, Term, TERMINATED};

/// A word is kept when at least one document in this many holds it: its bitset is then at most
/// two bytes a posting.
const DENSE_AT: u32 = 16;
/// What the words kept may take at most: 96 MiB, about 80 words over a segment of a million
/// documents when each is in a fifth of them.
const KEPT_BYTES_AT_MOST: usize = 96 << 20;
/// Segments smaller than this intersect their postings: it is quick there, and the small
/// segments incremental updates make would otherwise fill the words kept.
const SEGMENT_DOCS_AT_LEAST: u32 = 1 << 16;
/// Bits of a field's frequency in a code; the largest value means "this many or more", and the
/// exact frequency is then read from the field's postings.
const FREQUENCY_BITS: u32 = 3;
pub(crate) const FREQUENCY_AT_LEAST: u32 = (1 << FREQUENCY_BITS) - 1;
/// Text fields a code holds at most (five times three bits in a `u16`).
pub(crate) const CODED_FIELDS_AT_MOST: usize = (u16::BITS / FREQUENCY_BITS) as usize;
/// How many codes there can be.
const CODES: usize = 1 << (CODED_FIELDS_AT_MOST * FREQUENCY_BITS as usize);
/// Different codes a word kept has at most: each document holds its code's number in a byte.
const CODES_HELD_AT_MOST: usize = 1 << u8::BITS;

/// A common word of one segment.
pub(crate) struct CommonWord {
    /// One bit a document, set where the word is.
    bits: Vec<u64>,
    /// How many documents hold the word before each machine word of `bits`: with the bits
    /// below a document's, its place in `code_of`.
    before: Vec<u32>,
    /// For each document holding the word, in doc order, the number of its code in `codes`:
    /// a byte a posting, where most searches spend their time reading.
    code_of: Vec<u8>,
    /// The codes held, ascending: the word's frequency in each text field
    /// ([`field_frequency`]).
    codes: Vec<u16>,
    /// Per text field, the shortest norm (id) of a document holding the word there: no
    /// document's field scores more than that norm gives.
    least_norms: Vec<u8>,
    /// The documents holding the word ordered by code, then by doc: what a search of the word
    /// alone walks a code at a time, the codes that can score most first.
    by_code: Vec<DocId>,
    /// Where each code's documents end in `by_code`, in the order of `codes`.
    code_ends: Vec<u32>,
    /// Per machine word of `bits`, the most its documents score as a loose form of a word,
    /// with the scores of the codes (by number) it was worked out from
    /// ([`CommonWord::best_by_machine_word`]): made the first time the word is a form.
    loose_best: OnceLock<(Vec<Score>, Arc<[Score]>)>,
}

/// The text fields a code holds the word in, as bits (bit `f` for the field at `f`).
pub(crate) fn fields_of(code: u16) -> usize {
    (0..CODED_FIELDS_AT_MOST)
        .filter(|&field| field_frequency(code, field) > 0)
        .fold(0, |set, field| set | 1 << field)
}

/// The frequency of the text field at `field` in a code, [`FREQUENCY_AT_LEAST`] at most.
pub(crate) fn field_frequency(code: u16, field: usize) -> u32 {
    (u32::from(code) >> (field as u32 * FREQUENCY_BITS)) & FREQUENCY_AT_LEAST
}

impl CommonWord {
    fn bytes(&self) -> usize {
        self.bits.len() * 8
            + self.before.len() * 4
            + self.least_norms.len()
            + self.code_of.len()
            + self.codes.len() * 2
            + self.by_code.len() * 4
            + self.code_ends.len() * 4
            // The loose best, counted before it is made: a word is kept once, its best made
            // later, and the room must hold both.
            + self.bits.len() * 4
    }

    /// The shortest norm (id) among the documents with the word in the text field at `field`.
    pub(crate) fn least_norm(&self, field: usize) -> u8 {
        self.least_norms.get(field).copied().unwrap_or(0)
    }

    /// One bit a document, set where the word is.
    pub(crate) fn bits(&self) -> &[u64] {
        &self.bits
    }

    /// The codes held; a document's code is one of these, by number.
    pub(crate) fn codes(&self) -> &[u16] {
        &self.codes
    }

    /// The documents whose code is the one numbered `number` (ascending).
    pub(crate) fn docs_numbered(&self, number: usize) -> &[DocId] {
        let start = match number {
            0 => 0,
            n => self.code_ends.get(n - 1).copied().unwrap_or(0),
        };
        let end = self.code_ends.get(number).copied().unwrap_or(start);
        &self.by_code[start as usize..end as usize]
    }

    /// The number of `doc`'s code, when it holds the word.
    pub(crate) fn number_at(&self, doc: DocId) -> Option<u8> {
        self.place(doc).map(|place| self.code_of[place])
    }

    /// Per machine word, the most one of its documents scores when each code scores
    /// `by_number` (by the code's number). Worked out once, by the first caller, and shared
    /// with every caller that scores the codes alike: the typo tier is the only one, and its
    /// scores of a code are the text fields' fixed weights. `None` for other scores.
    pub(crate) fn best_by_machine_word(&self, by_number: &[Score]) -> Option<Arc<[Score]>> {
        let (scored_by, best) = self.loose_best.get_or_init(|| {
            let best = (self.bits.iter().zip(&self.before))
                .map(|(bits, &before)| {
                    let numbers = &self.code_of[before as usize..][..bits.count_ones() as usize];
                    (numbers.iter())
                        .map(|&n| by_number.get(usize::from(n)).copied().unwrap_or(0.0))
                        .fold(0.0, Score::max)
                })
                .collect();
            (by_number.to_vec(), best)
        });
        (scored_by.as_slice() == by_number).then(|| best.clone())
    }

    /// Each code held, with its documents (ascending).
    pub(crate) fn by_code(&self) -> impl Iterator<Item = (u16, &[DocId])> + '_ {
        (self.codes.iter())
            .enumerate()
            .map(|(number, &code)| (code, self.docs_numbered(number)))
    }
}

/// Common words per segment, made on first use. Segments never change but for deletes, which
/// the caller applies, so a word kept stays right for its segment's life.
pub(crate) struct DenseWords {
    kept: Mutex<Kept>,
    segment_docs_at_least: u32,
    bytes_at_most: usize,
}

#[derive(Default)]
struct Kept {
    words: HashMap<(SegmentId, Term), Arc<CommonWord>>,
    /// Common words that have too many different codes to keep: remembered, so that no
    /// search makes them again only to throw them away.
    refused: HashSet<(SegmentId, Term)>,
    bytes: usize,
    /// Words made so far (tests of what is made again).
    #[cfg(test)]
    made: usize,
}

impl Default for DenseWords {
    fn default() -> DenseWords {
        DenseWords::for_segments_of(SEGMENT_DOCS_AT_LEAST)
    }
}

impl DenseWords {
    /// Words kept in segments of at least `docs` documents (tests take small ones too).
    pub(crate) fn for_segments_of(docs: u32) -> DenseWords {
        DenseWords {
            kept: Mutex::default(),
            segment_docs_at_least: docs,
            bytes_at_most: KEPT_BYTES_AT_MOST,
        }
    }

    /// The same, keeping at most `bytes` (tests of a full cache).
    #[cfg(test)]
    pub(crate) fn with_room_for(docs: u32, bytes: usize) -> DenseWords {
        DenseWords {
            bytes_at_most: bytes,
            ..DenseWords::for_segments_of(docs)
        }
    }

    /// The word whose presence term is `word` (it holds every document with the word in one of
    /// `field_terms`, the text fields), when it is common in `reader`'s segment; `None` when it
    /// is not, when there are too many fields or different codes to keep, or when no more room
    /// is left (the caller then reads postings instead).
    pub(crate) fn word<'t>(
        &self,
        reader: &SegmentReader,
        word: &Term,
        field_terms: impl ExactSizeIterator<Item = &'t Term>,
    ) -> IndexResult<Option<Arc<CommonWord>>> {
        if reader.max_doc() < self.segment_docs_at_least || field_terms.len() > CODED_FIELDS_AT_MOST
        {
            return Ok(None);
        }
        let inverted = reader.inverted_index(word.field())?;
        let Some(info) = inverted.get_term_info(word)? else {
            return Ok(None);
        };
        if info.doc_freq.saturating_mul(DENSE_AT) < reader.max_doc() {
            return Ok(None);
        }
        let key = (reader.segment_id(), word.clone());
        {
            let kept = self.lock();
            if let Some(common) = kept.words.get(&key) {
                return Ok(Some(common.clone()));
            }
            // Full: a word made now would be thrown away, and made again by every search.
            if kept.bytes >= self.bytes_at_most || kept.refused.contains(&key) {
                return Ok(None);
            }
        }
        let mut postings = inverted.read_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
        let mut common = CommonWord::holding(reader.max_doc(), &mut postings);
        let mut codes = vec![0u16; common.code_of.len()];
        for (field, term) in field_terms.enumerate() {
            common.add_field(reader, field, term, &mut codes)?;
        }
        #[cfg(test)]
        {
            self.lock().made += 1;
        }
        if !common.number(&codes) {
            self.lock().refused.insert(key);
            return Ok(None);
        }
        let common = Arc::new(common);
        // Searches that made words at once may have filled the room meanwhile: this one then
        // serves only its search. Two of the same word are equal, and one is kept.
        let mut kept = self.lock();
        if kept.bytes < self.bytes_at_most && !kept.words.contains_key(&key) {
            kept.bytes += common.bytes();
            kept.words.insert(key, common.clone());
        }
        Ok(Some(common))
    }

    /// How many words are kept, how many were refused, and how many were made.
    #[cfg(test)]
    pub(crate) fn len(&self) -> (usize, usize, usize) {
        let kept = self.lock();
        (kept.words.len(), kept.refused.len(), kept.made)
    }

    /// Forgets the words of segments not in `live` (merged away).
    pub(crate) fn keep_only(&self, live: &[SegmentId]) {
        let mut kept = self.lock();
        kept.words.retain(|(segment, _), _| live.contains(segment));
        kept.refused.retain(|(segment, _)| live.contains(segment));
        kept.bytes = kept.words.values().map(|common| common.bytes()).sum();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl CommonWord {
    /// The documents of `postings` (the word's presence), every field frequency still 0.
    fn holding(max_doc: DocId, postings: &mut impl DocSet) -> CommonWord {
        let mut bits = vec![0u64; (max_doc as usize).div_ceil(64)];
        let mut doc = postings.doc();
        while doc != TERMINATED {
            bits[doc as usize / 64] |= 1 << (doc % 64);
            doc = postings.advance();
        }
        let mut before = Vec::with_capacity(bits.len());
        let mut held = 0u32;
        for word in &bits {
            before.push(held);
            held += word.count_ones();
        }
        CommonWord {
            bits,
            before,
            code_of: vec![0; held as usize],
            codes: Vec::new(),
            least_norms: Vec::new(),
            by_code: Vec::new(),
            code_ends: Vec::new(),
            loose_best: OnceLock::new(),
        }
    }

    /// Keeps `codes` (one a document holding the word, in doc order) as numbers into the codes
    /// held, and orders the documents by code; `false` when there are too many different codes.
    fn number(&mut self, codes: &[u16]) -> bool {
        let mut held = vec![false; CODES];
        for &code in codes {
            held[usize::from(code)] = true;
        }
        self.codes = (0..CODES)
            .filter(|&code| held[code])
            .filter_map(|code| u16::try_from(code).ok())
            .collect();
        if self.codes.len() > CODES_HELD_AT_MOST {
            return false;
        }
        let mut number = vec![0u8; CODES];
        for (n, &code) in self.codes.iter().enumerate() {
            number[usize::from(code)] = n as u8;
        }
        self.code_of = codes
            .iter()
            .map(|&code| number[usize::from(code)])
            .collect();
        self.order_by_code();
        true
    }

    /// Fills `by_code` and `code_ends` from the code numbers (a counting sort: documents stay
    /// in doc order within a code).
    fn order_by_code(&mut self) {
        let mut ends = vec![0u32; self.codes.len()];
        for &n in &self.code_of {
            ends[usize::from(n)] += 1;
        }
        let mut next: Vec<u32> = Vec::with_capacity(ends.len());
        let mut total = 0;
        for count in &mut ends {
            next.push(total);
            total += *count;
            *count = total;
        }
        let docs = self.bits.iter().enumerate().flat_map(|(at, &word)| {
            (0..64)
                .filter(move |bit| word & (1 << bit) != 0)
                .map(move |bit| at as DocId * 64 + bit)
        });
        self.by_code = vec![0; self.code_of.len()];
        // Documents and code numbers are both in doc order.
        for (doc, &n) in docs.zip(&self.code_of) {
            let at = &mut next[usize::from(n)];
            self.by_code[*at as usize] = doc;
            *at += 1;
        }
        self.code_ends = ends;
    }

    /// Records the word's frequency in the text field at `field` (`term` there) for each
    /// document holding it, into `codes` (one a document holding the word). Documents of other
    /// kinds that have the field (brands) are not among the word's and are passed over.
    fn add_field(
        &mut self,
        reader: &SegmentReader,
        field: usize,
        term: &Term,
        codes: &mut [u16],
    ) -> IndexResult<()> {
        self.least_norms.resize(field + 1, u8::MAX);
        let Some(mut postings) = reader
            .inverted_index(term.field())?
            .read_postings(term, IndexRecordOption::WithFreqs)?
        else {
            return Ok(());
        };
        let shift = field as u32 * FREQUENCY_BITS;
        let norms = field_norms(reader, term.field())?;
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if let Some(place) = self.place(doc) {
                self.least_norms[field] = self.least_norms[field].min(norms.fieldnorm_id(doc));
                // A field indexed without frequencies counts each term once, as tantivy does.
                let frequency = postings.term_freq().clamp(1, FREQUENCY_AT_LEAST);
                codes[place] |= (frequency as u16) << shift;
            }
            doc = postings.advance();
        }
        Ok(())
    }

    /// Where `doc`'s code is, when it holds the word.
    fn place(&self, doc: DocId) -> Option<usize> {
        let at = doc as usize / 64;
        let bit = doc % 64;
        let word = *self.bits.get(at)?;
        (word & (1 << bit) != 0)
            .then(|| self.before[at] as usize + (word & ((1 << bit) - 1)).count_ones() as usize)
    }
}

/// A field's norms, or a norm of 1 everywhere for a field kept without them, as tantivy's term
/// scorer reads them.
pub(crate) fn field_norms(reader: &SegmentReader, field: Field) -> IndexResult<FieldNormReader> {
    Ok(match reader.fieldnorms_readers().get_field(field)? {
        Some(norms) => norms,
        None => FieldNormReader::constant(reader.max_doc(), 1),
    })
}

/// How many live documents hold all of `words` (at least one): their bitsets intersected a
/// machine word at a time, each document checked against `alive` only in a segment with deletes.
pub(crate) fn count_in_all(words: &[Arc<CommonWord>], alive: Option<&AliveBitSet>) -> usize {
    let machine_words = words.iter().map(|w| w.bits.len()).min().unwrap_or(0);
    let mut count = 0;
    for at in 0..machine_words {
        let mut all = words.iter().fold(u64::MAX, |all, w| all & w.bits[at]);
        match alive {
            None => count += all.count_ones() as usize,
            Some(alive) => {
                while all != 0 {
                    let doc = at as DocId * 64 + all.trailing_zeros();
                    all &= all - 1;
                    count += usize::from(alive.is_alive(doc));
                }
            }
        }
    }
    count
}

/// Calls `each` with every document holding all of `words` (at least one), ascending, and the
/// number of each word's code there (in its [`CommonWord::codes`]), in the order of `words`;
/// stops at its first error.
pub(crate) fn for_each_in_all(
    words: &[Arc<CommonWord>],
    mut each: impl FnMut(DocId, &[u8]) -> IndexResult<()>,
) -> IndexResult<()> {
    let machine_words = words.iter().map(|w| w.bits.len()).min().unwrap_or(0);
    let mut codes = vec![0u8; words.len()];
    for at in 0..machine_words {
        let mut all = words.iter().fold(u64::MAX, |all, w| all & w.bits[at]);
        while all != 0 {
            let bit = all.trailing_zeros();
            all &= all - 1;
            for (code, w) in codes.iter_mut().zip(words) {
                let below = (w.bits[at] & ((1 << bit) - 1)).count_ones();
                *code = w.code_of[(w.before[at] + below) as usize];
            }
            each(at as DocId * 64 + bit, &codes)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word held by `docs` (ascending, below 320), its codes not yet numbered.
    fn holding(docs: &[DocId]) -> CommonWord {
        let mut bits = vec![0u64; 5];
        for &doc in docs {
            bits[doc as usize / 64] |= 1 << (doc % 64);
        }
        let before = bits
            .iter()
            .scan(0, |held, word| {
                let before = *held;
                *held += word.count_ones();
                Some(before)
            })
            .collect();
        CommonWord {
            bits,
            before,
            code_of: vec![0; docs.len()],
            codes: Vec::new(),
            least_norms: Vec::new(),
            by_code: Vec::new(),
            code_ends: Vec::new(),
            loose_best: OnceLock::new(),
        }
    }

    #[test]
    fn a_word_with_more_different_codes_than_a_byte_numbers_is_not_kept() {
        let mut word = holding(&(0..300).collect::<Vec<_>>());
        let codes: Vec<u16> = (1..=300).collect();
        assert!(!word.number(&codes), "300 different codes");
        assert!(word.number(&codes.iter().map(|c| c % 256).collect::<Vec<_>>()));
        assert_eq!(word.codes().len(), 256);
    }

    #[test]
    fn each_machine_word_keeps_the_most_its_documents_score_as_a_loose_form() {
        // Docs 0 and 3 in machine word 0, 64 in word 1, 200 in word 3.
        let mut word = holding(&[0, 3, 64, 200]);
        assert!(word.number(&[1, 1 << 3, 1 | 1 << 3, 2 << 12]));
        assert_eq!(fields_of(1 | 1 << 3), 0b11);
        // Codes ascending: 1, 8, 9, 8192.
        let by_number = [3.0, 2.0, 5.0, 0.5];
        let best = word.best_by_machine_word(&by_number).map(|b| b.to_vec());
        assert_eq!(best, Some(vec![3.0, 5.0, 0.0, 0.5, 0.0]));
        assert!(
            word.best_by_machine_word(&[1.0, 1.0, 1.0, 1.0]).is_none(),
            "scored otherwise than the first caller"
        );
    }

    #[test]
    fn a_code_holds_each_fields_frequency_in_its_own_bits() {
        let code: u16 = 1 | (7 << 3) | (2 << 12);
        let frequencies: Vec<u32> = (0..CODED_FIELDS_AT_MOST)
            .map(|field| field_frequency(code, field))
            .collect();
        assert_eq!(frequencies, [1, 7, 0, 0, 2]);
    }

    #[test]
    fn the_documents_in_all_words_are_counted_and_found_by_code() {
        let word = |docs: &[DocId], codes: &[u16]| {
            let mut word = holding(docs);
            assert!(word.number(codes));
            Arc::new(word)
        };
        let a = word(&[1, 5, 64, 130, 131], &[10, 11, 10, 13, 10]);
        let b = word(&[5, 63, 130, 131, 190], &[20, 21, 22, 23, 24]);
        assert_eq!(
            count_in_all(&[a.clone(), b.clone()], None),
            3,
            "5, 130, 131"
        );
        let code_at = |w: &CommonWord, doc| w.number_at(doc).map(|n| w.codes()[usize::from(n)]);
        assert_eq!(code_at(&a, 130), Some(13));
        assert_eq!(code_at(&b, 130), Some(22));
        assert_eq!(code_at(&b, 64), None);
        let numbered: Vec<Vec<DocId>> = (0..4).map(|n| a.docs_numbered(n).to_vec()).collect();
        assert_eq!(numbered, [vec![1, 64, 131], vec![5], vec![130], vec![]]);
        let by_code: Vec<(u16, Vec<DocId>)> = a
            .by_code()
            .map(|(code, docs)| (code, docs.to_vec()))
            .collect();
        assert_eq!(
            by_code,
            [(10, vec![1, 64, 131]), (11, vec![5]), (13, vec![130])]
        );
        assert_eq!(a.place(64), Some(2));
        assert_eq!(a.place(63), None);
        assert_eq!(a.place(10_000), None);
    }
}
