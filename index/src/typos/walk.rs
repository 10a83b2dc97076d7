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
//! A page of the tier scores the machine words that can score most first, bounded by the most
//! their kept forms score there ([`CommonWord::best_by_machine_word`]).

use super::tier::Tier;
use super::{LooseWord, LOOSE_SHARE, TYPED_SCORE};
use crate::not_models::NotModels;
use crate::pruned::{fields_of, CommonWord, DenseWords};
use crate::query::for_each_doc;
use crate::schema::Fields;
use crate::top_k::TopK;
use crate::IndexResult;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;
use tantivy::columnar::Column;
use tantivy::schema::Field;
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
        // Galloping past the documents before it: a walk of a few hundred machine words (the
        // sparse forms of three correctly spelt words) stepped one by one through all of the
        // segment's 26,000 brands, series and deleted documents, within a walk of 60-114 µs
        // (bench/RESULTS.md, "The excluded documents' cursor gallops").
        let mut end = 1;
        while end < self.0.len() && u64::from(self.0[end]) < first {
            end *= 2;
        }
        let end = end.min(self.0.len());
        let before = self.0[..end].partition_point(|&doc| u64::from(doc) < first);
        self.0 = &self.0[before..];
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
    fn of(
        reader: &SegmentReader,
        text_fields: &[(Field, Score)],
        word: &str,
        terms: &[Term],
        dense: &DenseWords,
    ) -> IndexResult<Typed> {
        // The word's `model_words` term comes first ([`super::word_as_typed_terms`]). Made
        // here when no search has kept it yet: the exact search of `clsasic carbon diver`
        // never keeps `carbon` (its misspelt first word ends it), and reading a common word's
        // postings into a sparse list was half of that search.
        let kept = match terms.first() {
            Some(presence) => {
                dense.word(reader, presence, text_field_terms(text_fields, word).iter())?
            }
            None => None,
        };
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
    /// Machine words are scored in descending order of the most their documents can score
    /// (from the sets of fields their forms are in), until none left can reach the worst kept:
    /// walked in document order, a misspelt common word's best (its form in the name, the
    /// series and the description at once) were rare enough that most of the tier was scored
    /// before the page held them.
    pub(super) fn ranked_in(
        &self,
        reader: &SegmentReader,
        ids: &Column<u64>,
        not_models: &NotModels,
        k: usize,
    ) -> IndexResult<(Vec<(u64, u64)>, usize)> {
        let words = self.word_matches(reader)?;
        let mut count = 0;
        let mut held = Held::for_segment(reader.max_doc(), words.len());
        self.walk(reader, not_models, &words, |at, tier, bits| {
            count += tier.count_ones() as usize;
            held.push(at, tier, bound_at(&words, at, tier, bits), bits);
        })?;
        let mut best = TopK::new(k);
        if k > 0 {
            held.rank(&words, &mut best);
        }
        let ranked = (best.into_vec().into_iter())
            .map(|(score, doc)| (score, ids.first(doc).unwrap_or(u64::MAX)))
            .collect();
        Ok((ranked, count))
    }

    /// Each word's matches in `reader`'s segment, as kept for the generation or read now.
    fn word_matches(&self, reader: &SegmentReader) -> IndexResult<Vec<Arc<WordMatches>>> {
        (self.words.iter().zip(&self.typed))
            .map(|(word, typed)| {
                self.kept.matches_of(self.generation, reader, word, || {
                    WordMatches::of(reader, self.fields, word, typed, self.dense)
                })
            })
            .collect()
    }

    /// Calls `each` with every machine word holding documents of the tier, ascending: its
    /// place, the tier's bits there (through the filters) and each word's bits as typed and
    /// through its read forms.
    fn walk(
        &self,
        reader: &SegmentReader,
        not_models: &NotModels,
        words: &[Arc<WordMatches>],
        mut each: impl FnMut(usize, u64, &[WordBits]),
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
        let mut bits = vec![WordBits::default(); words.len()];
        for at in holding_a_form {
            let (mut every_typed, mut every_matched) = (u64::MAX, u64::MAX);
            for (w, word) in words.iter().enumerate() {
                let typed = bits_at(word.typed.kept.as_deref(), at) | typed_read[w].at(at);
                let read = form_read[w].at(at);
                bits[w] = WordBits { typed, read };
                every_typed &= typed;
                every_matched &= typed | word.kept_form_bits(at) | read;
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
                each(at, tier, &bits);
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
fn holding_a_form(words: &[Arc<WordMatches>], max_doc: DocId) -> impl Iterator<Item = usize> {
    let mut held = vec![0u64; (max_doc as usize).div_ceil(64).div_ceil(64)];
    for at in words.iter().flat_map(|word| word.machine_words()) {
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

/// A word's bits in one machine word: its documents as typed, and through its read forms.
#[derive(Clone, Copy, Default)]
struct WordBits {
    typed: u64,
    read: u64,
}

/// The machine words holding documents of the tier, ascending, each with the most any of
/// them can score and each word's bits there as typed.
struct Held {
    /// Per machine word held: its bound's bits (scores are never negative, so their bit
    /// patterns order like them), and its place in `at`, `tier` and `typed`.
    bounds: Vec<(u32, Reverse<u32>)>,
    at: Vec<usize>,
    tier: Vec<u64>,
    /// The words' bits as typed, a run of one a word per machine word held.
    typed: Vec<u64>,
}

impl Held {
    /// Room for every machine word of a segment of `max_doc` documents searched for `words`
    /// words: a misspelt common word's tier is in most of them, and growing the lists as the
    /// walk went copied them (2 % of a server's time at 32 clients).
    fn for_segment(max_doc: DocId, words: usize) -> Held {
        let machine_words = (max_doc as usize).div_ceil(64);
        Held {
            bounds: Vec::with_capacity(machine_words),
            at: Vec::with_capacity(machine_words),
            tier: Vec::with_capacity(machine_words),
            typed: Vec::with_capacity(machine_words * words),
        }
    }

    fn push(&mut self, at: usize, tier: u64, bound: Score, bits: &[WordBits]) {
        let place = self.at.len() as u32;
        self.bounds.push((bound.to_bits(), Reverse(place)));
        self.at.push(at);
        self.tier.push(tier);
        self.typed.extend(bits.iter().map(|bits| bits.typed));
    }

    /// Keeps in `best` the best `k` documents as (score key, doc): the machine words taken in
    /// descending bound, ascending within a bound (a heap made in linear time, popped only as
    /// far as needed), until the next cannot beat the worst kept (the key of its bound and its
    /// first document is no better).
    fn rank(self, words: &[Arc<WordMatches>], best: &mut TopK<(u64, DocId)>) {
        let mut next = BinaryHeap::from(self.bounds);
        while let Some((bound, Reverse(place))) = next.pop() {
            let place = place as usize;
            let first = (self.at[place] * 64) as DocId;
            if (best.worst_when_full()).is_some_and(|worst| (!u64::from(bound), first) >= *worst) {
                return;
            }
            let typed = &self.typed[place * words.len()..(place + 1) * words.len()];
            let mut tier = self.tier[place];
            while tier != 0 {
                let bit = tier.trailing_zeros();
                tier &= tier - 1;
                let doc = first + bit;
                best.offer((!u64::from(score_of(words, typed, bit, doc).to_bits()), doc));
            }
        }
    }
}

/// The most a document of `tier` (machine word `at`) can score, each word's bits there
/// `bits`: summed as [`score_of`] sums a document's, of terms each no smaller, so never below
/// it (float sums are monotone in each term).
fn bound_at(words: &[Arc<WordMatches>], at: usize, tier: u64, bits: &[WordBits]) -> Score {
    let mut bound = 0.0;
    for (word, bits) in words.iter().zip(bits) {
        if bits.typed & tier != 0 {
            bound += TYPED_SCORE;
        }
        let read = match bits.read & tier {
            0 => 0.0,
            _ => word.read_best,
        };
        bound += word.kept_forms_best_at(at, tier) + read;
    }
    bound
}

/// The score of `doc` (bit `bit` of its machine word), each word's bits there as typed
/// `typed`.
fn score_of(words: &[Arc<WordMatches>], typed: &[u64], bit: u32, doc: DocId) -> Score {
    let mut score = 0.0;
    for (word, typed) in words.iter().zip(typed) {
        if typed & (1 << bit) != 0 {
            score += TYPED_SCORE;
        }
        score += word.kept_forms_score(doc) + read_score(&word.read, doc);
    }
    score
}

/// The bits of a kept word at machine word `at`.
fn bits_at(kept: Option<&CommonWord>, at: usize) -> u64 {
    kept.map_or(0, |k| k.bits().get(at).copied().unwrap_or(0))
}

/// The scores `read` (ascending documents) holds for `doc`, summed in its order.
fn read_score(read: &[(DocId, Score)], doc: DocId) -> Score {
    let from = read.partition_point(|(first, _)| *first < doc);
    (read[from..].iter())
        .take_while(|(first, _)| *first == doc)
        .fold(0.0, |score, (_, add)| score + add)
}

/// A common form of a word, kept whole: each text field holding it in a document adds that
/// field's score (its weight's loose share).
struct KeptForm {
    word: Arc<CommonWord>,
    /// What a document adds, by the number of its code.
    by_number: Vec<Score>,
    /// The most a document adds, per machine word: kept with the word, since a form's scores
    /// are the same in every search, where working it out per search was a third of a
    /// misspelt word's.
    best_by_machine_word: Option<Arc<[Score]>>,
    /// The most a document adds anywhere: the bound of every machine word when the word kept
    /// none for these scores.
    best_anywhere: Score,
}

impl KeptForm {
    fn new(word: Arc<CommonWord>, field_scores: &[Score]) -> KeptForm {
        // Each field's score summed in field order, the same sum for a code and its fields.
        let of_fields = |fields: usize| -> Score {
            (field_scores.iter().enumerate())
                .filter(|(field, _)| fields & 1 << field != 0)
                .map(|(_, score)| *score)
                .sum()
        };
        let by_number: Vec<Score> = (word.codes().iter())
            .map(|&code| of_fields(fields_of(code)))
            .collect();
        KeptForm {
            best_by_machine_word: word.best_by_machine_word(&by_number),
            best_anywhere: by_number.iter().copied().fold(0.0, Score::max),
            word,
            by_number,
        }
    }

    /// The most a document of machine word `at` adds.
    fn best_at(&self, at: usize) -> Score {
        match &self.best_by_machine_word {
            Some(best) => best.get(at).copied().unwrap_or(0.0),
            None => self.best_anywhere,
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
pub(super) struct WordMatches {
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
            let field_terms = text_field_terms(&text_fields, form);
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
            typed: Typed::of(reader, &text_fields, &word.word, typed, dense)?,
            kept_forms,
            read,
            read_bits,
            read_best,
        })
    }

    /// About how many bytes these matches hold beside the common words they share.
    pub(super) fn bytes(&self) -> usize {
        let kept_forms: usize = (self.kept_forms.iter())
            .map(|form| std::mem::size_of::<KeptForm>() + form.by_number.len() * 4)
            .sum();
        std::mem::size_of::<WordMatches>()
            + kept_forms
            + self.read.len() * std::mem::size_of::<(DocId, Score)>()
            + (self.read_bits.0.len() + self.typed.read.0.len())
                * std::mem::size_of::<(usize, u64)>()
    }

    /// The most this word's kept forms add to a document of `tier` (machine word `at`),
    /// summed in the order [`WordMatches::kept_forms_score`] sums.
    fn kept_forms_best_at(&self, at: usize, tier: u64) -> Score {
        (self.kept_forms.iter())
            .filter(|form| bits_at(Some(&form.word), at) & tier != 0)
            .map(|form| form.best_at(at))
            .sum()
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

/// `text`'s term in each of `text_fields` (the fields with their weights), in their order.
fn text_field_terms(text_fields: &[(Field, Score)], text: &str) -> Vec<Term> {
    (text_fields.iter())
        .map(|(field, _)| Term::from_field_text(*field, text))
        .collect()
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
