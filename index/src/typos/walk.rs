//! The typo tier worked out as bits, counted or ranked. The tier is the documents every word
//! matched (as typed or through a form) less those every word matched as typed, so each of its
//! documents holds a form of some word. Each word's matches come a machine word (64 documents) at a
//! time: as typed from the bitset the exact search kept for it ([`DenseWords`]) when it is common,
//! through a common form from that form's bitset (its documents' codes say which text fields hold
//! it, so its score needs no postings), and the rest from sparse lists. A misspelt common word's
//! forms are in most machine words, so its tier is worked out over whole arrays a word at a time
//! ([`TierBits::Dense`]); a correctly spelt word's forms are a few hundred documents beside its
//! hundreds of thousands, so its tier is read only where those are ([`TierBits::Sparse`]), and a
//! count costs little where tantivy's conjunction of unions cost half the search
//! (docs/decisions.md, D-53). A page of the tier scores the machine words that can score most
//! first, bounded by the most their forms score there ([`CommonWord::best_by_machine_word`]).

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
            // at 1M models): setting bits a segment long beats sorting them (docs/decisions.md,
            // D-53).
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

    /// The bits at machine word `at`.
    fn at(&self, at: usize) -> u64 {
        (self.0.binary_search_by_key(&at, |(first, _)| *first)).map_or(0, |found| self.0[found].1)
    }

    /// Sets its bits in `out` (one `u64` a machine word of the segment).
    fn or_into(&self, out: &mut [u64]) {
        for &(at, bits) in &self.0 {
            if let Some(out) = out.get_mut(at) {
                *out |= bits;
            }
        }
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
        Ok(self.tier_bits(reader, not_models, &words)?.count())
    }

    /// The segment's best `k` of the tier as (score key, id), and how many it holds: the
    /// scores are sums of constants ([`super::tier`]), ties go to the smaller document.
    /// Machine words are scored in descending order of the most their documents can score
    /// (from what their forms score there), until none left can reach the worst kept: walked
    /// in document order, a misspelt common word's best (its form in the name, the series and
    /// the description at once) were rare enough that most of the tier was scored before the
    /// page held them.
    pub(super) fn ranked_in(
        &self,
        reader: &SegmentReader,
        ids: &Column<u64>,
        not_models: &NotModels,
        k: usize,
    ) -> IndexResult<(Vec<(u64, u64)>, usize)> {
        let words = self.word_matches(reader)?;
        let tier = self.tier_bits(reader, not_models, &words)?;
        let mut best = TopK::new(k);
        if k > 0 {
            rank(&words, tier.held(&words), &mut best);
        }
        let ranked = (best.into_vec().into_iter())
            .map(|(score, doc)| (score, ids.first(doc).unwrap_or(u64::MAX)))
            .collect();
        Ok((ranked, tier.count()))
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

    /// The tier's bits in the segment (64 documents a machine word): what every word matched,
    /// less what every word matched as typed, less the documents that are not live models or
    /// that the whole text finds as a reference, through the filters.
    fn tier_bits(
        &self,
        reader: &SegmentReader,
        not_models: &NotModels,
        words: &[Arc<WordMatches>],
    ) -> IndexResult<TierBits> {
        let whole = self.whole_reference_docs(reader)?;
        let mut tier = match words.iter().any(|word| !word.kept_forms.is_empty()) {
            true => TierBits::Dense(dense_tier(reader.max_doc(), not_models, words, &whole)),
            false => TierBits::Sparse(sparse_tier(reader.max_doc(), not_models, words, &whole)),
        };
        if let Some(weight) = &self.filter {
            let mut filter = weight.scorer(reader, 1.0)?;
            match &mut tier {
                TierBits::Dense(bits) => filter_tier(filter.as_mut(), bits.iter_mut().enumerate()),
                TierBits::Sparse(held) => filter_tier(
                    filter.as_mut(),
                    held.iter_mut().map(|(at, bits)| (*at, bits)),
                ),
            }
        }
        Ok(tier)
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

/// The tier of one segment as bits (see [`Tier::tier_bits`]): over every machine word when a
/// word has a common form kept whole, whose documents are in most of them (a misspelt common
/// word), else only over the machine words holding a read form, the few hundred where a
/// correctly spelt word's forms are. Walking the machine words holding a form and reading
/// every word's sources at each was half of a misspelt search; working whole arrays a word
/// at a time was twice as slow for correctly spelt words.
enum TierBits {
    /// One `u64` a machine word of the segment.
    Dense(Vec<u64>),
    /// The machine words that may hold some, ascending, with their bits (maybe none).
    Sparse(Vec<(usize, u64)>),
}

/// A machine word holding documents of the tier: its bound's bits (scores are never
/// negative, so their bit patterns order like them), its place and its bits there; ordered
/// by descending bound, then ascending place.
type HeldWord = (u32, Reverse<u32>, u64);

impl TierBits {
    fn count(&self) -> usize {
        match self {
            TierBits::Dense(bits) => bits.iter().map(|bits| bits.count_ones() as usize).sum(),
            TierBits::Sparse(held) => held
                .iter()
                .map(|(_, bits)| bits.count_ones() as usize)
                .sum(),
        }
    }

    /// Each machine word holding documents of the tier, with its bound ([`bounds`]).
    fn held(&self, words: &[Arc<WordMatches>]) -> Vec<HeldWord> {
        let held = |at: usize, bits: u64, bound: Score| (bound.to_bits(), Reverse(at as u32), bits);
        match self {
            TierBits::Dense(tier) => (tier.iter().zip(bounds(words, tier)).enumerate())
                .filter(|(_, (bits, _))| **bits != 0)
                .map(|(at, (&bits, bound))| held(at, bits, bound))
                .collect(),
            TierBits::Sparse(tier) => (tier.iter())
                .filter(|(_, bits)| *bits != 0)
                .map(|&(at, bits)| held(at, bits, bound_at(words, at, bits)))
                .collect(),
        }
    }
}

/// The tier over every machine word of a segment of `max_doc` documents, a word at a time.
fn dense_tier(
    max_doc: DocId,
    not_models: &NotModels,
    words: &[Arc<WordMatches>],
    whole: &[DocId],
) -> Vec<u64> {
    let machine_words = (max_doc as usize).div_ceil(64);
    let mut every_matched = vec![u64::MAX; machine_words];
    let mut every_typed = vec![u64::MAX; machine_words];
    let mut word = vec![0; machine_words];
    for matches in words {
        matches.typed_into(&mut word);
        and_into(&mut every_typed, &word);
        matches.forms_into(&mut word);
        and_into(&mut every_matched, &word);
    }
    let mut tier = every_matched;
    let live = not_models.live_models();
    // The same segment's: as long. Were it shorter, what it lacks is no live model.
    tier.truncate(live.len());
    for ((tier, typed), live) in tier.iter_mut().zip(&every_typed).zip(live) {
        *tier &= !typed & live;
    }
    for &doc in whole {
        if let Some(bits) = tier.get_mut(doc as usize / 64) {
            *bits &= !(1 << (doc % 64));
        }
    }
    tier
}

/// The tier over the machine words holding a read form of some word (no word has a form
/// kept whole), each word's sources read there in ascending order.
fn sparse_tier(
    max_doc: DocId,
    not_models: &NotModels,
    words: &[Arc<WordMatches>],
    whole: &[DocId],
) -> Vec<(usize, u64)> {
    let mut places: Vec<usize> = (words.iter())
        .flat_map(|word| word.read_bits.0.iter().map(|(at, _)| *at))
        .collect();
    places.sort_unstable();
    places.dedup();
    let mut typed_read: Vec<Cursor> = words.iter().map(|w| Cursor(&w.typed.read.0)).collect();
    let mut form_read: Vec<Cursor> = words.iter().map(|w| Cursor(&w.read_bits.0)).collect();
    let whole = SparseBits::of_docs(whole.to_vec(), max_doc);
    let mut whole = Cursor(&whole.0);
    let live = not_models.live_models();
    (places.into_iter())
        .map(|at| {
            let (mut every_typed, mut every_matched) = (u64::MAX, u64::MAX);
            let cursors = typed_read.iter_mut().zip(&mut form_read);
            for (word, (typed_read, form_read)) in words.iter().zip(cursors) {
                let typed = word.typed_kept_at(at) | typed_read.at(at);
                every_typed &= typed;
                every_matched &= typed | form_read.at(at);
            }
            let live = live.get(at).copied().unwrap_or(0);
            (at, every_matched & !every_typed & live & !whole.at(at))
        })
        .collect()
}

/// Reads a [`SparseBits`] list at ascending machine words.
struct Cursor<'a>(&'a [(usize, u64)]);

impl Cursor<'_> {
    /// The bits at machine word `at`, not before the last asked for.
    fn at(&mut self, at: usize) -> u64 {
        while self.0.first().is_some_and(|(first, _)| *first < at) {
            self.0 = &self.0[1..];
        }
        match self.0.first() {
            Some((first, bits)) if *first == at => *bits,
            _ => 0,
        }
    }
}

/// `into &= bits`, machine word by machine word.
fn and_into(into: &mut [u64], bits: &[u64]) {
    for (into, bits) in into.iter_mut().zip(bits) {
        *into &= bits;
    }
}

/// Keeps in each machine word of `tier` (ascending, with its place) the bits whose documents
/// pass `filter`, none once it has none left.
fn filter_tier<'a>(
    filter: &mut dyn tantivy::query::Scorer,
    tier: impl Iterator<Item = (usize, &'a mut u64)>,
) {
    let mut exhausted = false;
    for (at, bits) in tier {
        if exhausted || *bits == 0 {
            *bits = 0;
            continue;
        }
        match filtered(filter, at, *bits) {
            Some(passed) => *bits = passed,
            None => {
                *bits = 0;
                exhausted = true;
            }
        }
    }
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

/// Per machine word, the most one of the tier's documents there can score: each word's
/// typed score where it has typed documents of the tier, each kept form's best there where
/// it holds some, and the read forms' best where they do. The scores are sums of binary
/// fractions, exact in any order ([`super::tier`]), so the bound is never below a score.
fn bounds(words: &[Arc<WordMatches>], tier: &[u64]) -> Vec<Score> {
    let mut bounds = vec![0.0; tier.len()];
    let mut typed = vec![0; tier.len()];
    for word in words {
        word.typed_into(&mut typed);
        for ((bound, typed), tier) in bounds.iter_mut().zip(&typed).zip(tier) {
            if typed & tier != 0 {
                *bound += TYPED_SCORE;
            }
        }
        for form in &word.kept_forms {
            form.add_bounds(tier, &mut bounds);
        }
        for &(at, bits) in &word.read_bits.0 {
            if tier.get(at).is_some_and(|tier| bits & tier != 0) {
                bounds[at] += word.read_best;
            }
        }
    }
    bounds
}

/// The most a document of `tier` (machine word `at`) can score: [`bounds`] for one machine
/// word.
fn bound_at(words: &[Arc<WordMatches>], at: usize, tier: u64) -> Score {
    let mut bound = 0.0;
    for word in words {
        if word.typed_at(at) & tier != 0 {
            bound += TYPED_SCORE;
        }
        for form in &word.kept_forms {
            if form.bits_at(at) & tier != 0 {
                bound += form.best_at(at);
            }
        }
        if word.read_bits.at(at) & tier != 0 {
            bound += word.read_best;
        }
    }
    bound
}

/// Keeps in `best` the best `k` documents of the `held` machine words as (score key, doc):
/// taken in descending bound, ascending within a bound (a heap made in linear time, popped
/// only as far as needed), until the next cannot beat the worst kept (the key of its bound
/// and its first document is no better).
fn rank(words: &[Arc<WordMatches>], held: Vec<HeldWord>, best: &mut TopK<(u64, DocId)>) {
    let mut next = BinaryHeap::from(held);
    let mut typed = vec![0; words.len()];
    while let Some((bound, Reverse(at), mut bits)) = next.pop() {
        let at = at as usize;
        let first = (at * 64) as DocId;
        if (best.worst_when_full()).is_some_and(|worst| (!u64::from(bound), first) >= *worst) {
            return;
        }
        for (typed, word) in typed.iter_mut().zip(words) {
            *typed = word.typed_at(at);
        }
        while bits != 0 {
            let bit = bits.trailing_zeros();
            bits &= bits - 1;
            let doc = first + bit;
            best.offer((!u64::from(score_of(words, &typed, bit, doc).to_bits()), doc));
        }
    }
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
    /// are the same in every search, where working it out per search was a large share of a
    /// misspelt word's (docs/decisions.md, D-53).
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

    fn bits_at(&self, at: usize) -> u64 {
        self.word.bits().get(at).copied().unwrap_or(0)
    }

    /// The most a document of machine word `at` adds.
    fn best_at(&self, at: usize) -> Score {
        match &self.best_by_machine_word {
            Some(best) => best.get(at).copied().unwrap_or(0.0),
            None => self.best_anywhere,
        }
    }

    /// Adds to each machine word's bound the most a document there adds, where the form
    /// holds some of `tier`'s.
    fn add_bounds(&self, tier: &[u64], bounds: &mut [Score]) {
        let held = (self.word.bits().iter().zip(tier)).map(|(bits, tier)| bits & tier != 0);
        match &self.best_by_machine_word {
            Some(best) => {
                for ((bound, held), best) in bounds.iter_mut().zip(held).zip(best.iter()) {
                    if held {
                        *bound += best;
                    }
                }
            }
            None => {
                for (bound, held) in bounds.iter_mut().zip(held) {
                    if held {
                        *bound += self.best_anywhere;
                    }
                }
            }
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

    /// Writes the word's documents as typed into `out` (one `u64` a machine word).
    fn typed_into(&self, out: &mut [u64]) {
        out.fill(0);
        if let Some(kept) = &self.typed.kept {
            for (out, bits) in out.iter_mut().zip(kept.bits()) {
                *out = *bits;
            }
        }
        self.typed.read.or_into(out);
    }

    /// Adds the word's documents through its forms to `out`.
    fn forms_into(&self, out: &mut [u64]) {
        for form in &self.kept_forms {
            for (out, bits) in out.iter_mut().zip(form.word.bits()) {
                *out |= bits;
            }
        }
        self.read_bits.or_into(out);
    }

    /// The word's documents as typed in machine word `at`.
    fn typed_at(&self, at: usize) -> u64 {
        self.typed_kept_at(at) | self.typed.read.at(at)
    }

    /// Those of them in the bitset kept for the word, when it is common.
    fn typed_kept_at(&self, at: usize) -> u64 {
        (self.typed.kept.as_ref()).map_or(0, |kept| kept.bits().get(at).copied().unwrap_or(0))
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
