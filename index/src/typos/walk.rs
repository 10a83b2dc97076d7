//! The typo tier walked as bits, counted or ranked. The tier is the documents every word
//! matched (as typed or through a form) less those every word matched as typed, so each of its
//! documents holds a form of some word: only the machine words (64 documents) holding a form
//! can hold one. There, each word's matches are read a machine word at a time: as typed from
//! the bitset the exact search kept for it ([`DenseWords`]) when it is common, through a
//! common form from that form's bitset (its documents' codes say which text fields hold it, so
//! its score needs no postings), and the rest from sparse lists. The forms of a correctly
//! spelt word are a few hundred documents beside its hundreds of thousands, so a count costs
//! microseconds where tantivy's conjunction of unions cost half the search (bench/RESULTS.md,
//! "The typo tier counted as bitsets"); a misspelt common word reads no postings of its forms.

use super::tier::Tier;
use super::{LooseWord, LOOSE_SHARE, TYPED_SCORE};
use crate::not_models::NotModels;
use crate::pruned::{field_frequency, CommonWord, DenseWords};
use crate::query::for_each_doc;
use crate::schema::Fields;
use crate::IndexResult;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;
use tantivy::columnar::Column;
use tantivy::{DocId, Score, SegmentReader, Term, TERMINATED};

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
    /// [`Tier::ranked_in`] gives. `not_models` is the segment's ([`NotModels`]): its brands,
    /// series and deleted documents are none of the tier's.
    pub(super) fn count(
        &self,
        reader: &SegmentReader,
        not_models: &NotModels,
    ) -> IndexResult<usize> {
        let words = self.word_matches(reader)?;
        let mut count = 0;
        self.walk(reader, not_models, &words, |_, tier, _| {
            count += tier.count_ones() as usize;
        })?;
        Ok(count)
    }

    /// The segment's best `k` of the tier as (score key, id), and how many it holds: the
    /// scores are sums of constants ([`super::tier`]), ties go to the smaller document.
    pub(super) fn ranked_in(
        &self,
        reader: &SegmentReader,
        ids: &Column<u64>,
        not_models: &NotModels,
        k: usize,
    ) -> IndexResult<(Vec<(u64, u64)>, usize)> {
        let words = self.word_matches(reader)?;
        let mut read: Vec<&[(DocId, Score)]> = words.iter().map(|w| w.read.as_slice()).collect();
        let mut best = BinaryHeap::new();
        let mut count = 0;
        self.walk(reader, not_models, &words, |at, mut tier, typed| {
            count += tier.count_ones() as usize;
            // Later documents lose ties: none here can pass the worst kept when even the
            // best the machine word's matches could score does not.
            if best.len() >= k {
                let bound: Score = (words.iter().zip(typed))
                    .map(|(word, typed)| word.best_at(at, tier, *typed))
                    .sum();
                if best
                    .peek()
                    .is_some_and(|&(worst, _)| bound <= score_of_key(worst))
                {
                    return;
                }
            }
            while tier != 0 {
                let bit = tier.trailing_zeros();
                tier &= tier - 1;
                let doc = (at * 64) as DocId + bit;
                let mut score = 0.0;
                for (w, word) in words.iter().enumerate() {
                    if typed[w] & (1 << bit) != 0 {
                        score += TYPED_SCORE;
                    }
                    score += word.kept_forms_score(doc) + read_score(&mut read[w], doc);
                }
                // Documents come in id order: one that only ties the worst kept loses on id.
                let key = (!u64::from(score.to_bits()), doc);
                if best.len() < k {
                    best.push(key);
                } else if best.peek().is_some_and(|worst| key < *worst) {
                    best.pop();
                    best.push(key);
                }
            }
        })?;
        let ranked = best
            .into_iter()
            .map(|(score, doc)| (score, ids.first(doc).unwrap_or(u64::MAX)))
            .collect();
        Ok((ranked, count))
    }

    fn word_matches(&self, reader: &SegmentReader) -> IndexResult<Vec<WordMatches>> {
        (self.words.iter().zip(&self.typed))
            .map(|(word, typed)| WordMatches::of(reader, self.fields, word, typed, self.dense))
            .collect()
    }

    /// Calls `each` with every machine word holding documents of the tier, ascending: its
    /// place, the tier's bits there (through the filters) and each word's bits as typed.
    fn walk(
        &self,
        reader: &SegmentReader,
        not_models: &NotModels,
        words: &[WordMatches],
        mut each: impl FnMut(usize, u64, &[u64]),
    ) -> IndexResult<()> {
        let holding_a_form = holding_a_form(words, reader.max_doc());
        let mut typed_read: Vec<Cursor> = (words.iter())
            .map(|w| Cursor {
                words: &w.typed.read.0,
            })
            .collect();
        let mut form_read: Vec<Cursor> = (words.iter())
            .map(|w| Cursor {
                words: &w.read_bits.0,
            })
            .collect();
        let whole = self.whole_reference_docs(reader)?;
        let mut not_live = Ascending(&not_models.not_live_models);
        let mut whole = Ascending(&whole);
        let mut filter = match &self.filter {
            Some(weight) => Some(weight.scorer(reader, 1.0)?),
            None => None,
        };
        let mut typed = vec![0u64; words.len()];
        for at in holding_a_form {
            let (mut every_typed, mut every_matched) = (u64::MAX, u64::MAX);
            for (w, word) in words.iter().enumerate() {
                typed[w] = bits_at(word.typed.kept.as_deref(), at) | typed_read[w].at(at);
                every_typed &= typed[w];
                every_matched &= typed[w] | word.kept_form_bits(at) | form_read[w].at(at);
            }
            let excluded = not_live.bits_at(at) | whole.bits_at(at);
            let tier = every_matched & !every_typed & !excluded;
            let tier = match filter.as_mut() {
                Some(filter) => match filtered(filter.as_mut(), at, tier) {
                    Some(tier) => tier,
                    None => return Ok(()),
                },
                None => tier,
            };
            if tier != 0 {
                each(at, tier, &typed);
            }
        }
        Ok(())
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

/// The machine words holding a form of some word, ascending: marked in a bitset of machine
/// words (a common form holds most of them), where sorting their list was a tenth of a
/// misspelt search.
fn holding_a_form(words: &[WordMatches], max_doc: DocId) -> impl Iterator<Item = usize> {
    let mut held = vec![0u64; (max_doc as usize).div_ceil(64).div_ceil(64)];
    for at in words.iter().flat_map(WordMatches::machine_words) {
        held[at / 64] |= 1 << (at % 64);
    }
    held.into_iter().enumerate().flat_map(|(i, mut bits)| {
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                i * 64 + bit
            })
        })
    })
}

/// The bits of `tier` (machine word `at`) whose documents pass `filter`; `None` once it has
/// none left.
fn filtered(filter: &mut dyn tantivy::query::Scorer, at: usize, mut tier: u64) -> Option<u64> {
    let mut passed = 0;
    while tier != 0 {
        let bit = tier.trailing_zeros();
        tier &= tier - 1;
        let doc = (at * 64) as DocId + bit;
        if filter.doc() < doc && filter.seek(doc) == TERMINATED {
            return (passed != 0).then_some(passed);
        }
        if filter.doc() == doc {
            passed |= 1 << bit;
        }
    }
    Some(passed)
}

/// The score a ranking key holds.
fn score_of_key(key: u64) -> Score {
    // Keys are `!u64::from(score.to_bits())`: the low half, inverted back.
    Score::from_bits(!key as u32)
}

/// The bits of a kept word at machine word `at`.
fn bits_at(kept: Option<&CommonWord>, at: usize) -> u64 {
    kept.map_or(0, |k| k.bits().get(at).copied().unwrap_or(0))
}

/// The scores `read` holds for `doc` (ascending documents, not before the last asked for).
fn read_score(read: &mut &[(DocId, Score)], doc: DocId) -> Score {
    while read.first().is_some_and(|(first, _)| *first < doc) {
        *read = &read[1..];
    }
    let mut score = 0.0;
    while let Some(((first, add), rest)) = read.split_first() {
        if *first != doc {
            break;
        }
        score += add;
        *read = rest;
    }
    score
}

/// A common form of a word, kept whole: each text field holding it in a document adds that
/// field's score (its weight's loose share).
struct KeptForm {
    word: Arc<CommonWord>,
    /// What a document adds, by the number of its code.
    by_number: Vec<Score>,
    /// The most a document adds.
    best: Score,
}

impl KeptForm {
    fn new(word: Arc<CommonWord>, field_scores: &[Score]) -> KeptForm {
        let by_number: Vec<Score> = (word.codes().iter())
            .map(|&code| {
                (field_scores.iter().enumerate())
                    .filter(|(field, _)| field_frequency(code, *field) > 0)
                    .map(|(_, score)| *score)
                    .sum()
            })
            .collect();
        let best = by_number.iter().copied().fold(0.0, Score::max);
        KeptForm {
            word,
            by_number,
            best,
        }
    }

    fn score_at(&self, doc: DocId) -> Score {
        (self.word.number_at(doc))
            .and_then(|number| self.by_number.get(usize::from(number)))
            .copied()
            .unwrap_or(0.0)
    }
}

/// One word's matches in a segment: as typed, through its common forms kept whole, and
/// through the others read from their postings.
struct WordMatches {
    typed: Typed,
    kept_forms: Vec<KeptForm>,
    /// The other forms' documents, ascending, once per field and form holding them, each
    /// with that field's score.
    read: Vec<(DocId, Score)>,
    read_bits: SparseBits,
    /// The most the read forms add to a document: every one of their terms' scores.
    read_best: Score,
}

impl WordMatches {
    fn of(
        reader: &SegmentReader,
        fields: &Fields,
        word: &LooseWord,
        typed: &[Term],
        dense: &DenseWords,
    ) -> IndexResult<WordMatches> {
        let text_fields = fields.text_fields().words;
        // Each form with the score of each text field that lists it.
        let mut forms: BTreeMap<&str, Vec<Option<Score>>> = BTreeMap::new();
        let mut read = Vec::new();
        let mut read_best = 0.0;
        for (field, boost, field_forms) in word.forms.iter() {
            let Some(at) = text_fields.iter().position(|(f, _)| f == field) else {
                for form in field_forms {
                    let term = Term::from_field_text(*field, form);
                    for_each_doc(reader, &term, |doc| read.push((doc, boost * LOOSE_SHARE)))?;
                    read_best += boost * LOOSE_SHARE;
                }
                continue;
            };
            for form in field_forms {
                let scores = forms
                    .entry(form.as_str())
                    .or_insert_with(|| vec![None; text_fields.len()]);
                scores[at] = Some(boost * LOOSE_SHARE);
            }
        }
        let mut kept_forms = Vec::new();
        for (form, scores) in forms {
            let field_terms: Vec<Term> = (text_fields.iter())
                .map(|(field, _)| Term::from_field_text(*field, form))
                .collect();
            match kept_form(reader, fields, form, &field_terms, &scores, dense)? {
                Some(word) => {
                    let field_scores: Vec<Score> =
                        scores.iter().map(|s| s.unwrap_or(0.0)).collect();
                    kept_forms.push(KeptForm::new(word, &field_scores));
                }
                None => {
                    for (term, score) in field_terms.iter().zip(&scores) {
                        if let Some(score) = *score {
                            for_each_doc(reader, term, |doc| read.push((doc, score)))?;
                            read_best += score;
                        }
                    }
                }
            }
        }
        read.sort_unstable_by_key(|(doc, _)| *doc);
        let read_bits =
            SparseBits::of_docs(read.iter().map(|(doc, _)| *doc).collect(), reader.max_doc());
        Ok(WordMatches {
            typed: Typed::of(reader, typed, dense)?,
            kept_forms,
            read,
            read_bits,
            read_best,
        })
    }

    /// The most this word adds to a document of `tier` (machine word `at`), its bits as
    /// typed there `typed`.
    fn best_at(&self, at: usize, tier: u64, typed: u64) -> Score {
        let as_typed = match typed & tier {
            0 => 0.0,
            _ => TYPED_SCORE,
        };
        let kept: Score = (self.kept_forms.iter())
            .filter(|form| bits_at(Some(&form.word), at) & tier != 0)
            .map(|form| form.best)
            .sum();
        as_typed + kept + self.read_best
    }

    /// The machine words holding one of the word's forms, ascending within each source.
    fn machine_words(&self) -> impl Iterator<Item = usize> + '_ {
        let kept = self.kept_forms.iter().flat_map(|form| {
            (form.word.bits().iter().enumerate())
                .filter(|(_, bits)| **bits != 0)
                .map(|(at, _)| at)
        });
        kept.chain(self.read_bits.machine_words())
    }

    fn kept_form_bits(&self, at: usize) -> u64 {
        (self.kept_forms.iter()).fold(0, |bits, form| bits | bits_at(Some(&form.word), at))
    }

    fn kept_forms_score(&self, doc: DocId) -> Score {
        self.kept_forms.iter().map(|form| form.score_at(doc)).sum()
    }
}

/// The form kept whole when it is common here and every text field holding it lists it among
/// the word's forms (a field's forms stop at [`super::MAX_LOOSE_FORMS`]): its bits are then
/// exactly the documents the form matches.
fn kept_form(
    reader: &SegmentReader,
    fields: &Fields,
    form: &str,
    field_terms: &[Term],
    scores: &[Option<Score>],
    dense: &DenseWords,
) -> IndexResult<Option<Arc<CommonWord>>> {
    for (term, score) in field_terms.iter().zip(scores) {
        if score.is_none() && reader.inverted_index(term.field())?.doc_freq(term)? > 0 {
            return Ok(None);
        }
    }
    let presence = Term::from_field_text(fields.model_words, form);
    dense.word(reader, &presence, field_terms.iter())
}
