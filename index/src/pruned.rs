//! Relevance-ranked text search over models, pruned: the page is found without scoring every
//! match. The scores and the matches are those of [`query::build`]'s nested boolean query; only
//! the way to the best `k` differs (docs/decisions.md, D-39).
//!
//! A model matches when every word of the text is in one of its text fields or is one of its
//! references (or a reference prefix), or when the whole text is a reference (or a prefix).
//! Models holding one of those reference terms are few: they are scored one by one first. The
//! others can only match through their words, and their score is the sum of the words' field
//! scores, found three ways:
//! - without filters, when every word is common in a large segment: [`DenseWords`] keeps each
//!   such word whole (a bitset of its documents and, per document, its frequency in each text
//!   field), so the matches are an AND of bitsets and each is scored from those frequencies and
//!   the field norms, as tantivy's term scorers would, without a postings list. One word is
//!   walked a frequency pattern at a time, the patterns that can score most first, and stops
//!   when no pattern left can reach the best `k`; several words skip the matches whose
//!   patterns cannot;
//! - one word otherwise: a pure disjunction of its field terms that tantivy's block-max WAND
//!   prunes, each candidate then checked for the word and the filters;
//! - several words otherwise: the models holding every word (one postings intersection, which
//!   also gives the total) are few beside any word's postings. They are scored a field term at
//!   a time, the terms that can add most first, and after each term those that cannot reach
//!   the best `k` whatever the rest adds are dropped (term-at-a-time pruning).
//!
//! The last two score the models kept again in one fixed order, so that equal models score
//! equal; the first sums in that same order. The index keeps each segment in id order, so a
//! later candidate that only ties the worst kept score loses on id and WAND may skip it. The
//! total is the intersection of the words' postings in `model_words` (for one word with no
//! filters on a segment without deletes, the term's document frequency), plus the
//! reference-only matches.

mod dense;

pub(crate) use dense::DenseWords;
pub(crate) use dense::{fields_of, CommonWord};

use crate::query::{self, SearchRequest, TextQuery};
use crate::schema::Fields;
use crate::segment_cache::IdColumns;
use crate::tokenizer::MIN_REFERENCE_PREFIX;
use crate::top_k::TopK;
use crate::IndexResult;
use std::collections::BinaryHeap;
use std::sync::Arc;
use tantivy::fastfield::AliveBitSet;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{
    Bm25Weight, BooleanQuery, BoostQuery, EnableScoring, Occur, Query, Scorer, TermQuery, Weight,
};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Score, Searcher, SegmentReader, Term, TERMINATED};

/// One word of the text: where it counts as present, how it scores in each text field, and the
/// reference terms that also make it match.
struct Word {
    present: Box<dyn Weight>,
    fields: Vec<Box<dyn Weight>>,
    /// The same (field, boost) terms as `fields`, for scoring many candidates a block at a time.
    field_terms: Vec<FieldTerm>,
    references: Vec<Reference>,
}

/// A word in one text field and its BM25 weight with the field's boost: what
/// [`TermQuery`] scores, read here straight from the postings blocks.
struct FieldTerm {
    term: Term,
    weight: Bm25Weight,
}

/// A reference term and the constant it adds to a model's score.
struct Reference {
    weight: Box<dyn Weight>,
    score: Score,
}

/// The search, turned into weights once for the whole searcher.
struct Plan {
    words: Vec<Word>,
    /// The whole text as a reference and as a reference prefix.
    whole: Vec<Reference>,
    /// The request's filters other than the kind (only models have the fields searched here).
    filter: Option<Box<dyn Weight>>,
    /// Every field term of the one word, boosted: what WAND prunes. `None` for several words,
    /// which the conjunction pass scores instead.
    disjunction: Option<Box<dyn Weight>>,
    /// Models with every word in a text field, passing the filters: the bulk of the total.
    every_word: Box<dyn Weight>,
    /// Each word's term in `model_words`, for intersecting common words as bitsets.
    word_terms: Vec<Term>,
}

/// The best `k` model ids for `request` (a relevance-ordered search of models with text) and the
/// number of matches; `None` when the text has no word, which the plain query answers cheaply.
pub(crate) fn search(
    searcher: &Searcher,
    fields: &Fields,
    request: &SearchRequest,
    text: &TextQuery,
    k: usize,
    dense: &DenseWords,
    id_columns: &IdColumns,
) -> IndexResult<Option<(Vec<u64>, usize)>> {
    let Some(plan) = Plan::new(searcher, fields, request, text)? else {
        return Ok(None);
    };
    let live: Vec<_> = searcher
        .segment_readers()
        .iter()
        .map(|reader| reader.segment_id())
        .collect();
    dense.keep_only(&live);
    let mut total = 0;
    let mut kept = Vec::new();
    for (reader, ids) in searcher
        .segment_readers()
        .iter()
        .zip(id_columns.of(searcher)?)
    {
        let segment = plan.segment(reader, k, dense)?;
        total += segment.total;
        kept.extend(segment.best.into_iter().map(|best| {
            let id = ids.first(best.doc).unwrap_or(u64::MAX);
            (best.rank, id)
        }));
    }
    kept.sort_unstable();
    Ok(Some((
        kept.into_iter().take(k).map(|(_, id)| id).collect(),
        total,
    )))
}

/// What one segment contributes: its best `k` and its number of matches.
struct SegmentResult {
    best: Vec<Kept>,
    total: usize,
}

/// A kept document; `rank` orders best first (score descending), `doc` breaks ties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Kept {
    rank: u32,
    doc: DocId,
}

impl Kept {
    fn new(score: Score, doc: DocId) -> Kept {
        // Scores are non-negative, so their bit patterns order like the floats.
        Kept {
            rank: !score.max(0.0).to_bits(),
            doc,
        }
    }

    fn score(self) -> Score {
        f32::from_bits(!self.rank)
    }
}

/// The best `k` documents of a segment.
struct Best(TopK<Kept>);

impl Best {
    fn new(k: usize) -> Best {
        Best(TopK::new(k))
    }

    fn offer(&mut self, kept: Kept) {
        self.0.offer(kept);
    }

    /// The worst kept score once `k` are kept.
    fn worst_when_full(&self) -> Option<Score> {
        self.0.worst_when_full().map(|worst| worst.score())
    }

    /// The score a document met after `doc` must beat to be kept. Documents come in id order,
    /// so one that only ties the worst kept loses on id, unless that worst came from the
    /// reference pass and lies further on.
    fn threshold(&self, doc: DocId) -> Score {
        match self.0.worst_when_full() {
            Some(worst) => {
                let score = worst.score();
                if worst.doc < doc || score <= 0.0 {
                    score
                } else {
                    f32::from_bits(score.to_bits() - 1)
                }
            }
            _ => Score::MIN,
        }
    }
}

fn term_weight(
    searcher: &Searcher,
    term: Term,
    boost: Option<Score>,
) -> IndexResult<Box<dyn Weight>> {
    let query: Box<dyn Query> = match boost {
        Some(boost) => Box::new(BoostQuery::new(
            Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)),
            boost,
        )),
        None => Box::new(TermQuery::new(term, IndexRecordOption::Basic)),
    };
    let scoring = match boost {
        Some(_) => EnableScoring::enabled_from_searcher(searcher),
        None => EnableScoring::disabled_from_searcher(searcher),
    };
    Ok(query.weight(scoring)?)
}

impl Plan {
    fn new(
        searcher: &Searcher,
        fields: &Fields,
        request: &SearchRequest,
        text: &TextQuery,
    ) -> IndexResult<Option<Plan>> {
        let words = query::words_of(&text.text);
        // Each reference term takes a bit of a u64 in the reference pass; a text of over 31
        // words is answered by the plain query.
        if words.is_empty() || 2 * (words.len() + 1) > 64 {
            return Ok(None);
        }
        let text_fields = fields.text_fields();
        let reference = |field, value: &str, score| -> IndexResult<Reference> {
            Ok(Reference {
                weight: term_weight(searcher, Term::from_field_text(field, value), None)?,
                score,
            })
        };
        let references =
            |value: &str, [exact, prefix]: [Score; 2]| -> IndexResult<Vec<Reference>> {
                let mut out = vec![reference(text_fields.ref_exact, value, exact)?];
                if value.chars().count() >= MIN_REFERENCE_PREFIX {
                    // A term or a range of whole references: either way one bit of the pass.
                    let starting = fields.reference_prefixes().query(value, 1.0);
                    out.push(Reference {
                        weight: starting.weight(EnableScoring::disabled_from_searcher(searcher))?,
                        score: prefix,
                    });
                }
                Ok(out)
            };
        let mut plan_words = Vec::with_capacity(words.len());
        let mut disjunction: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for word in &words {
            let mut scored = Vec::with_capacity(text_fields.words.len());
            let mut field_terms = Vec::with_capacity(text_fields.words.len());
            for &(field, boost) in &text_fields.words {
                let term = Term::from_field_text(field, word);
                scored.push(term_weight(searcher, term.clone(), Some(boost))?);
                field_terms.push(FieldTerm {
                    weight: Bm25Weight::for_terms(searcher, std::slice::from_ref(&term))?
                        .boost_by(boost),
                    term: term.clone(),
                });
                disjunction.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(
                        Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)),
                        boost,
                    )),
                ));
            }
            plan_words.push(Word {
                present: term_weight(
                    searcher,
                    Term::from_field_text(fields.model_words, word),
                    None,
                )?,
                fields: scored,
                field_terms,
                references: references(word, query::WORD_REFERENCE_SCORES)?,
            });
        }
        let whole = match text.normalized_reference.as_str() {
            "" => Vec::new(),
            whole => references(whole, query::WHOLE_REFERENCE_SCORES)?,
        };
        let filter_clauses = query::filter_clauses(fields, &request.filters);
        let unscored = EnableScoring::disabled_from_searcher(searcher);
        let every_word: Box<dyn Query> = if words.len() == 1 && filter_clauses.is_empty() {
            Box::new(TermQuery::new(
                Term::from_field_text(fields.model_words, &words[0]),
                IndexRecordOption::Basic,
            ))
        } else {
            let mut clauses: Vec<(Occur, Box<dyn Query>)> = words
                .iter()
                .map(|word| {
                    let term = Term::from_field_text(fields.model_words, word);
                    let query: Box<dyn Query> =
                        Box::new(TermQuery::new(term, IndexRecordOption::Basic));
                    (Occur::Must, query)
                })
                .collect();
            clauses.extend(query::filter_clauses(fields, &request.filters));
            Box::new(BooleanQuery::new(clauses))
        };
        let filter = match filter_clauses.is_empty() {
            true => None,
            false => Some(BooleanQuery::new(filter_clauses).weight(unscored)?),
        };
        Ok(Some(Plan {
            words: plan_words,
            whole,
            filter,
            disjunction: match words.len() {
                1 => Some(
                    BooleanQuery::new(disjunction)
                        .weight(EnableScoring::enabled_from_searcher(searcher))?,
                ),
                _ => None,
            },
            every_word: every_word.weight(unscored)?,
            word_terms: words
                .iter()
                .map(|word| Term::from_field_text(fields.model_words, word))
                .collect(),
        }))
    }

    fn segment(
        &self,
        reader: &SegmentReader,
        k: usize,
        dense: &DenseWords,
    ) -> IndexResult<SegmentResult> {
        let mut best = Best::new(k);
        let reference_docs = self.reference_pass(reader, &mut best)?;
        let in_text = if k == 0 {
            self.every_word.count(reader)? as usize
        } else if let Some(common) = self.common_words(reader, dense)? {
            match common.as_slice() {
                [one] => {
                    self.common_word_pass(reader, one, &reference_docs.docs, &mut best)?;
                    self.every_word.count(reader)? as usize
                }
                _ => self.common_words_pass(reader, &common, &reference_docs.docs, &mut best)?,
            }
        } else if let Some(disjunction) = &self.disjunction {
            self.text_pass(&**disjunction, reader, &reference_docs.docs, &mut best)?;
            self.every_word.count(reader)? as usize
        } else {
            self.conjunction_pass(reader, &reference_docs.docs, &mut best)?
        };
        let total = in_text + reference_docs.only;
        Ok(SegmentResult {
            best: best.0.into_vec(),
            total,
        })
    }

    /// Scores every live model that holds one of the reference terms, and returns those models
    /// and how many of the matches among them the word count misses (a word matched only as a
    /// reference, or the whole text as one).
    fn reference_pass(
        &self,
        reader: &SegmentReader,
        best: &mut Best,
    ) -> IndexResult<ReferenceDocs> {
        let hits = self.reference_hits(reader)?;
        let mut scan = Scan::new(self, reader)?;
        let mut only = 0;
        let mut docs = Vec::with_capacity(hits.len());
        for (doc, hit) in hits {
            docs.push(doc);
            if !scan.is_candidate(doc) {
                continue;
            }
            let mut words_match = true;
            let mut in_text = true;
            let mut score: Score = 0.0;
            let mut bit = 0;
            for (w, word) in self.words.iter().enumerate() {
                let present = scan.has_word(w, doc);
                let mut as_reference: Score = 0.0;
                let mut is_reference = false;
                for reference in &word.references {
                    if hit & (1 << bit) != 0 {
                        as_reference += reference.score;
                        is_reference = true;
                    }
                    bit += 1;
                }
                in_text &= present;
                words_match &= present || is_reference;
                score += scan.word_score(w, doc) + as_reference;
            }
            let mut whole_match = false;
            let mut whole_score: Score = 0.0;
            for reference in &self.whole {
                if hit & (1 << bit) != 0 {
                    whole_score += reference.score;
                    whole_match = true;
                }
                bit += 1;
            }
            if !words_match && !whole_match {
                continue;
            }
            let score = if words_match {
                score + whole_score
            } else {
                whole_score
            };
            only += usize::from(!in_text);
            best.offer(Kept::new(score, doc));
        }
        Ok(ReferenceDocs { docs, only })
    }

    /// Every document holding a reference term, in doc order, with one bit per term (the words'
    /// terms first, then the whole text's).
    fn reference_hits(&self, reader: &SegmentReader) -> IndexResult<Vec<(DocId, u64)>> {
        let terms = self
            .words
            .iter()
            .flat_map(|word| &word.references)
            .chain(&self.whole);
        let mut hits: Vec<(DocId, u64)> = Vec::new();
        for (bit, reference) in terms.enumerate() {
            let mut postings = reference.weight.scorer(reader, 1.0)?;
            let mut doc = postings.doc();
            while doc != TERMINATED {
                hits.push((doc, 1 << bit));
                doc = postings.advance();
            }
        }
        hits.sort_unstable();
        hits.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 |= next.1;
            }
            same
        });
        Ok(hits)
    }

    /// The block-max WAND pass over the word's field terms (`disjunction`), skipping the
    /// reference pass's documents.
    fn text_pass(
        &self,
        disjunction: &dyn Weight,
        reader: &SegmentReader,
        reference_docs: &[DocId],
        best: &mut Best,
    ) -> IndexResult<()> {
        let mut scan = Scan::new(self, reader)?;
        let mut skip = reference_docs.iter().copied().peekable();
        let mut threshold = best.threshold(0);
        disjunction.for_each_pruning(threshold, reader, &mut |doc, _| {
            if is_next_of(&mut skip, doc) || !scan.is_candidate(doc) {
                return threshold;
            }
            if (0..self.words.len()).all(|w| scan.has_word(w, doc)) {
                let score = (0..self.words.len()).map(|w| scan.word_score(w, doc)).sum();
                best.offer(Kept::new(score, doc));
                threshold = best.threshold(doc);
            }
            threshold
        })?;
        Ok(())
    }
}

impl Plan {
    /// Scores every model holding every word (and passing the filters), skipping the reference
    /// pass's documents; returns how many there are. Several words make the matches a fraction
    /// of any one word's postings, so they are gathered first and then scored a field term at a
    /// time, each term's postings walked once beside them.
    fn conjunction_pass(
        &self,
        reader: &SegmentReader,
        reference_docs: &[DocId],
        best: &mut Best,
    ) -> IndexResult<usize> {
        let (mut candidates, count) = self.every_word_docs(reader, reference_docs)?;
        let mut partial = vec![0.0; candidates.len()];
        let mut terms: Vec<&FieldTerm> = self
            .words
            .iter()
            .flat_map(|word| &word.field_terms)
            .collect();
        terms.sort_by(|a, b| b.bound().total_cmp(&a.bound()));
        let mut rest: Score = terms.iter().map(|term| term.bound()).sum();
        let mut scratch = Vec::with_capacity(partial.len());
        for term in terms {
            term.add_scores(reader, &candidates, &mut partial)?;
            rest -= term.bound();
            let rest = rest.max(0.0);
            drop_hopeless(
                &mut candidates,
                &mut partial,
                rest,
                best.0.k(),
                &mut scratch,
            );
        }
        let mut scan = Scan::new(self, reader)?;
        for doc in candidates {
            let score = (0..self.words.len()).map(|w| scan.word_score(w, doc)).sum();
            best.offer(Kept::new(score, doc));
        }
        Ok(count)
    }

    /// The live documents holding every word and passing the filters, less the reference
    /// pass's, in doc order; and how many there are, the reference pass's included.
    fn every_word_docs(
        &self,
        reader: &SegmentReader,
        reference_docs: &[DocId],
    ) -> IndexResult<(Vec<DocId>, usize)> {
        let alive = reader.alive_bitset();
        let mut skip = reference_docs.iter().copied().peekable();
        let mut candidates = Vec::new();
        let mut count = 0;
        let mut matches = self.every_word.scorer(reader, 1.0)?;
        let mut doc = matches.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|alive| alive.is_alive(doc)) {
                count += 1;
                if !is_next_of(&mut skip, doc) {
                    candidates.push(doc);
                }
            }
            doc = matches.advance();
        }
        Ok((candidates, count))
    }

    /// The words kept whole in [`DenseWords`], when there are no filters and every word is
    /// common here.
    fn common_words(
        &self,
        reader: &SegmentReader,
        dense: &DenseWords,
    ) -> IndexResult<Option<Vec<Arc<CommonWord>>>> {
        if self.filter.is_some() {
            return Ok(None);
        }
        let mut common = Vec::with_capacity(self.words.len());
        for (word, presence) in self.words.iter().zip(&self.word_terms) {
            let field_terms = word.field_terms.iter().map(|term| &term.term);
            match dense.word(reader, presence, field_terms)? {
                Some(kept) => common.push(kept),
                None => return Ok(None),
            }
        }
        Ok(Some(common))
    }

    /// Scores the live models holding every word (all common here) that can reach the best
    /// `k`, skipping the reference pass's documents, from each word's field frequencies and the
    /// field norms: what the field terms' scorers would give, summed in the same order, so equal
    /// to [`Scan`]'s scores bit for bit. Returns how many models hold every word, the reference
    /// pass's included.
    fn common_words_pass(
        &self,
        reader: &SegmentReader,
        common: &[Arc<CommonWord>],
        reference_docs: &[DocId],
        best: &mut Best,
    ) -> IndexResult<usize> {
        let scorer = CodeScorer::new(self, reader)?;
        let bounds: Vec<Vec<Score>> = common
            .iter()
            .enumerate()
            .map(|(w, word)| scorer.word_bounds(w, word))
            .collect();
        let walk = CommonWalk {
            common,
            bounds: &bounds,
            reference_docs,
            alive: reader.alive_bitset(),
            scorer: &scorer,
        };
        match common.len() {
            2 => walk.by_pairs(best),
            _ => walk.every_document(best),
        }
    }

    /// Scores the documents of the one word (common here) a code at a time, the codes that can
    /// score most first, until no code left can reach the best `k`; skips the reference pass's
    /// documents. The word's best are most often in a few codes (in the name, a short one).
    fn common_word_pass(
        &self,
        reader: &SegmentReader,
        common: &CommonWord,
        reference_docs: &[DocId],
        best: &mut Best,
    ) -> IndexResult<()> {
        let scorer = CodeScorer::new(self, reader)?;
        let mut codes: Vec<(Score, u16, &[DocId])> = common
            .by_code()
            .map(|(code, docs)| (scorer.word_bound(0, code, common), code, docs))
            .collect();
        codes.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (bound, code, docs) in codes {
            if best.worst_when_full().is_some_and(|worst| bound < worst) {
                break;
            }
            // Documents come in doc order within a code only: postings are read afresh for each
            // code that needs them.
            let mut exact = None;
            for &doc in docs {
                if reader.is_deleted(doc) || reference_docs.binary_search(&doc).is_ok() {
                    continue;
                }
                let score = scorer.word_score_or_postings(&mut exact, 0, code, doc)?;
                best.offer(Kept::new(score, doc));
            }
        }
        Ok(())
    }
}

/// Scores words from their codes ([`dense::field_frequency`]) and the field norms.
struct CodeScorer<'a> {
    plan: &'a Plan,
    reader: &'a SegmentReader,
    words: &'a [Word],
    /// Each text field's norms, in the order of a word's `field_terms`.
    norms: Vec<FieldNormReader>,
    /// Per word and field, the score of a frequency of one at each field norm: most matches.
    once: Vec<Vec<[Score; 256]>>,
}

impl<'a> CodeScorer<'a> {
    fn new(plan: &'a Plan, reader: &'a SegmentReader) -> IndexResult<CodeScorer<'a>> {
        let norms = plan.words[0]
            .field_terms
            .iter()
            .map(|term| dense::field_norms(reader, term.term.field()))
            .collect::<IndexResult<Vec<_>>>()?;
        let once = plan
            .words
            .iter()
            .map(|word| {
                word.field_terms
                    .iter()
                    .map(|term| std::array::from_fn(|norm| term.weight.score(norm as u8, 1)))
                    .collect()
            })
            .collect();
        Ok(CodeScorer {
            plan,
            reader,
            words: &plan.words,
            norms,
            once,
        })
    }

    /// Word `w`'s score in `doc`, its code there `code`: each text field's BM25 summed in field
    /// order, as [`Scan::word_score`] does, so equal to it bit for bit. `None` when a field
    /// holds the word too often for the code to say how often.
    fn word_score(&self, w: usize, code: u16, doc: DocId) -> Option<Score> {
        let mut score: Score = 0.0;
        for (field, term) in self.words[w].field_terms.iter().enumerate() {
            let norm = || self.norms[field].fieldnorm_id(doc);
            score += match dense::field_frequency(code, field) {
                0 => continue,
                1 => self.once[w][field][norm() as usize],
                dense::FREQUENCY_AT_LEAST => return None,
                frequency => term.weight.score(norm(), frequency),
            };
        }
        Some(score)
    }

    /// [`CodeScorer::word_score`], or the word's score from its postings when the code cannot
    /// say (a word seven times or more in a field). `exact` holds those postings, made on
    /// first need; it only moves forward, so documents must come in doc order while it lives.
    fn word_score_or_postings(
        &self,
        exact: &mut Option<Scan<'a>>,
        w: usize,
        code: u16,
        doc: DocId,
    ) -> IndexResult<Score> {
        if let Some(score) = self.word_score(w, code, doc) {
            return Ok(score);
        }
        let scan = match exact {
            Some(scan) => scan,
            None => exact.insert(Scan::new(self.plan, self.reader)?),
        };
        Ok(scan.word_score(w, doc))
    }

    /// [`CodeScorer::word_bound`] of word `w` for each code `common` holds, by number.
    fn word_bounds(&self, w: usize, common: &CommonWord) -> Vec<Score> {
        common
            .codes()
            .iter()
            .map(|&code| self.word_bound(w, code, common))
            .collect()
    }

    /// The most word `w` (`common` here) scores in any document with `code`: each field at the
    /// shortest norm of a document with the word there (BM25 falls as the field grows), and a
    /// field with the word too often for the code at the term's bound. Float sums keep order,
    /// so no document's score exceeds it.
    fn word_bound(&self, w: usize, code: u16, common: &CommonWord) -> Score {
        let mut bound: Score = 0.0;
        for (field, term) in self.words[w].field_terms.iter().enumerate() {
            bound += match dense::field_frequency(code, field) {
                0 => continue,
                dense::FREQUENCY_AT_LEAST => term.bound(),
                frequency => term.weight.score(common.least_norm(field), frequency),
            };
        }
        bound
    }
}

/// The code numbers of a word, the highest of `bounds` first.
fn by_bound(bounds: &[Score]) -> Vec<usize> {
    let mut numbers: Vec<usize> = (0..bounds.len()).collect();
    numbers.sort_by(|&a, &b| bounds[b].total_cmp(&bounds[a]));
    numbers
}

/// The common words of a search and what [`Plan::common_words_pass`] scores their documents
/// with.
struct CommonWalk<'a> {
    common: &'a [Arc<CommonWord>],
    /// Each word's bound per code number.
    bounds: &'a [Vec<Score>],
    reference_docs: &'a [DocId],
    alive: Option<&'a AliveBitSet>,
    scorer: &'a CodeScorer<'a>,
}

impl CommonWalk<'_> {
    /// Two words: their documents met a pair of codes at a time, the codes that can score most
    /// first; a pair whose bound misses the worst kept is never walked. The best `k` lie in a
    /// few rare pairs (both words in a short name, or in the name and the series), most
    /// documents in pairs that score little, so most are never walked (docs/decisions.md,
    /// D-40).
    /// The count is the words' bitsets intersected.
    fn by_pairs(&self, best: &mut Best) -> IndexResult<usize> {
        let [first, second] = [&self.bounds[0], &self.bounds[1]];
        let seconds = by_bound(second);
        // Pairs in descending bound, so the worst kept rises as early as it can: each of the
        // first word's codes with the next of the second's it has not met (a k-way merge).
        // Bounds are sums of BM25 scores, never negative: their bit patterns order like them.
        let key = |n0: usize, at: usize| {
            let bound = first[n0] + seconds.get(at).map_or(0.0, |&n1| second[n1]);
            (bound.max(0.0).to_bits(), n0, at)
        };
        let mut next: BinaryHeap<(u32, usize, usize)> = (0..first.len())
            .filter(|_| !seconds.is_empty())
            .map(|n0| key(n0, 0))
            .collect();
        while let Some((pair_bound, n0, at)) = next.pop() {
            let pair_bound = f32::from_bits(pair_bound);
            if best
                .worst_when_full()
                .is_some_and(|worst| pair_bound < worst)
            {
                break;
            }
            self.pair([n0, seconds[at]], best)?;
            if at + 1 < seconds.len() {
                next.push(key(n0, at + 1));
            }
        }
        Ok(dense::count_in_all(self.common, self.alive))
    }

    /// Offers every live document with the first word's code numbered `pair[0]` and the
    /// second's numbered `pair[1]`. Walks the shorter of the two codes' documents, in doc
    /// order, which the postings read for a code that cannot say a frequency need
    /// ([`CodeScorer::word_score_or_postings`]): they are read afresh for each pair.
    fn pair(&self, pair: [usize; 2], best: &mut Best) -> IndexResult<()> {
        let [first, second] = [&self.common[0], &self.common[1]];
        let (walked, other, other_number) =
            match first.docs_numbered(pair[0]).len() <= second.docs_numbered(pair[1]).len() {
                true => (first.docs_numbered(pair[0]), second, pair[1]),
                false => (second.docs_numbered(pair[1]), first, pair[0]),
            };
        let numbers = pair.map(|n| n as u8);
        let mut exact = None;
        for &doc in walked {
            if other.number_at(doc).map(usize::from) != Some(other_number)
                || self.alive.is_some_and(|alive| !alive.is_alive(doc))
                || self.reference_docs.binary_search(&doc).is_ok()
            {
                continue;
            }
            self.offer(doc, &numbers, &mut exact, best)?;
        }
        Ok(())
    }

    /// Three words or more: every document holding them all, in doc order, each dropped when
    /// its codes' bound misses the worst kept. Returns how many are live.
    fn every_document(&self, best: &mut Best) -> IndexResult<usize> {
        let mut skip = self.reference_docs.iter().copied().peekable();
        let mut count = 0;
        let mut exact = None;
        dense::for_each_in_all(self.common, |doc, numbers| {
            if self.alive.is_some_and(|alive| !alive.is_alive(doc)) {
                return Ok(());
            }
            count += 1;
            if is_next_of(&mut skip, doc) {
                return Ok(());
            }
            self.offer(doc, numbers, &mut exact, best)
        })?;
        Ok(count)
    }

    /// Scores `doc`, whose codes are those numbered `numbers`, and offers it, unless its codes'
    /// bound misses the worst kept. `exact` only moves forward: documents come in doc order.
    fn offer<'s>(
        &'s self,
        doc: DocId,
        numbers: &[u8],
        exact: &mut Option<Scan<'s>>,
        best: &mut Best,
    ) -> IndexResult<()> {
        if let Some(worst) = best.worst_when_full() {
            let mut bound: Score = 0.0;
            for (bounds, &number) in self.bounds.iter().zip(numbers) {
                bound += bounds[usize::from(number)];
            }
            if bound < worst {
                return Ok(());
            }
        }
        let mut score: Score = 0.0;
        for (w, (word, &number)) in self.common.iter().zip(numbers).enumerate() {
            let code = word.codes()[usize::from(number)];
            score += self.scorer.word_score_or_postings(exact, w, code, doc)?;
        }
        best.offer(Kept::new(score, doc));
        Ok(())
    }
}

/// Whether `doc` is the next of the ascending `docs` not before it (moving past those before).
fn is_next_of(docs: &mut std::iter::Peekable<impl Iterator<Item = DocId>>, doc: DocId) -> bool {
    while docs.next_if(|&d| d < doc).is_some() {}
    docs.peek() == Some(&doc)
}

/// Float sums taken in different orders differ in their last bits: a candidate is only dropped
/// when its bound misses the bar by more than that.
const BOUND_MARGIN: Score = 1e-4;

/// Drops the candidates that cannot reach the best `k` whatever the terms not yet added give
/// them (at most `rest`): the `k`-th best partial score is a floor for the `k`-th best score.
/// `scratch` is room to find the `k`-th best partial score in, reused term after term.
fn drop_hopeless(
    candidates: &mut Vec<DocId>,
    partial: &mut Vec<Score>,
    rest: Score,
    k: usize,
    scratch: &mut Vec<Score>,
) {
    if k == 0 || candidates.len() <= k {
        return;
    }
    scratch.clear();
    scratch.extend_from_slice(partial);
    let (_, &mut kth, _) = scratch.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    let bar = kth - BOUND_MARGIN * kth.abs() - rest;
    let mut kept = 0;
    for i in 0..candidates.len() {
        if partial[i] >= bar {
            candidates[kept] = candidates[i];
            partial[kept] = partial[i];
            kept += 1;
        }
    }
    candidates.truncate(kept);
    partial.truncate(kept);
}

impl FieldTerm {
    /// The most this term adds to any document's score.
    fn bound(&self) -> Score {
        self.weight.max_score()
    }

    /// Adds to `scores[i]` what this term scores in `candidates[i]` (ascending), as
    /// [`TermQuery`]'s scorer would: BM25 of the term frequency and the field norm.
    fn add_scores(
        &self,
        reader: &SegmentReader,
        candidates: &[DocId],
        scores: &mut [Score],
    ) -> IndexResult<()> {
        let field = self.term.field();
        let Some(mut postings) = reader
            .inverted_index(field)?
            .read_block_postings(&self.term, IndexRecordOption::WithFreqs)?
        else {
            return Ok(());
        };
        let norms = dense::field_norms(reader, field)?;
        let mut next = 0;
        while let Some(&target) = candidates.get(next) {
            let mut at = postings.seek(target);
            let docs = postings.docs();
            let Some(&last) = docs.last().filter(|&&last| last >= target) else {
                break;
            };
            let freqs = postings.freqs();
            while let Some(&doc) = candidates.get(next).filter(|&&doc| doc <= last) {
                while docs[at] < doc {
                    at += 1;
                }
                if docs[at] == doc {
                    // A field indexed without frequencies counts each term once, as tantivy does.
                    let freq = freqs.get(at).copied().unwrap_or(1);
                    scores[next] += self.weight.score(norms.fieldnorm_id(doc), freq);
                }
                next += 1;
            }
        }
        Ok(())
    }
}

struct ReferenceDocs {
    docs: Vec<DocId>,
    only: usize,
}

/// Per-segment postings, each only ever moved forward: the passes meet documents in doc order.
struct Scan<'a> {
    reader: &'a SegmentReader,
    filter: Option<Box<dyn Scorer>>,
    present: Vec<Box<dyn Scorer>>,
    fields: Vec<Vec<Box<dyn Scorer>>>,
}

fn holds(postings: &mut dyn Scorer, doc: DocId) -> bool {
    if postings.doc() < doc {
        postings.seek(doc);
    }
    postings.doc() == doc
}

impl<'a> Scan<'a> {
    fn new(plan: &Plan, reader: &'a SegmentReader) -> IndexResult<Scan<'a>> {
        let scorer = |weight: &dyn Weight| weight.scorer(reader, 1.0);
        Ok(Scan {
            reader,
            filter: plan.filter.as_deref().map(scorer).transpose()?,
            present: plan
                .words
                .iter()
                .map(|word| scorer(&*word.present))
                .collect::<Result<_, _>>()?,
            fields: plan
                .words
                .iter()
                .map(|word| word.fields.iter().map(|f| scorer(&**f)).collect())
                .collect::<Result<_, _>>()?,
        })
    }

    /// Live and passing the filters.
    fn is_candidate(&mut self, doc: DocId) -> bool {
        !self.reader.is_deleted(doc)
            && self
                .filter
                .as_mut()
                .is_none_or(|filter| holds(filter.as_mut(), doc))
    }

    fn has_word(&mut self, word: usize, doc: DocId) -> bool {
        holds(self.present[word].as_mut(), doc)
    }

    /// The word's score in `doc`: its field scores summed in field order, so that two documents
    /// with the same statistics score exactly the same.
    fn word_score(&mut self, word: usize, doc: DocId) -> Score {
        let mut score: Score = 0.0;
        for field in 0..self.fields[word].len() {
            score += self.field_score(word, field, doc);
        }
        score
    }

    /// What the word adds to `doc`'s score through one field (0 when the field lacks it).
    fn field_score(&mut self, word: usize, field: usize, doc: DocId) -> Score {
        let postings = self.fields[word][field].as_mut();
        match holds(postings, doc) {
            true => postings.score(),
            false => 0.0,
        }
    }
}

#[cfg(test)]
mod tests;
