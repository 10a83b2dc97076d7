//! Facet counts: for each facet asked, how many matching models have each value, counted from
//! fast fields in one pass over the matches. Facets whose own filter is not set share a pass;
//! a facet whose filter is set is counted without it, as faceted navigation expects.

use crate::collector::terms_of;
use crate::generation_cache::GenerationCache;
use crate::not_models::NotModelsCache;
use crate::query::{Bounds, Filters};
use crate::schema::{names, Fields};
use crate::spec::SpecTerm;
use std::collections::HashMap;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, RowId, StrColumn};
use tantivy::schema::Field;
use tantivy::{DocId, Score, Searcher, SegmentReader, COLLECT_BLOCK_BUFFER_LEN};

/// Most values a facet returns, most frequent first.
pub(crate) const MAX_FACET_VALUES: usize = 100;

/// What models are counted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Facet {
    Brand,
    Series,
    Term(SpecTerm),
    /// 1-mm buckets: a model of 40.5 mm counts in 40.
    Diameter,
}

/// One value of a facet.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FacetValue {
    /// A brand or series id.
    Id(u64),
    /// A worded value, lowercased.
    Text(String),
    /// The whole millimetres of a diameter bucket.
    Millimetres(u64),
}

/// A facet's values and their model counts, most frequent first, then by value; at most
/// [`MAX_FACET_VALUES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FacetCounts {
    pub facet: Facet,
    pub values: Vec<(FacetValue, u64)>,
}

impl Facet {
    pub const ALL: [Facet; 7] = [
        Facet::Brand,
        Facet::Series,
        Facet::Term(SpecTerm::CaseMaterial),
        Facet::Term(SpecTerm::DialColor),
        Facet::Term(SpecTerm::MovementType),
        Facet::Term(SpecTerm::Complication),
        Facet::Diameter,
    ];

    /// `filters` without this facet's own constraint.
    pub(crate) fn exclude_from(self, filters: &Filters) -> Filters {
        let mut out = filters.clone();
        match self {
            Facet::Brand => out.brand_id = None,
            Facet::Series => out.series_id = None,
            Facet::Term(term) => {
                out.spec.terms.remove(&term);
            }
            Facet::Diameter => out.spec.diameter = Bounds::default(),
        }
        out
    }
}

/// `facets` grouped by the filters each is counted under, in first-asked order.
pub(crate) fn passes(filters: &Filters, facets: &[Facet]) -> Vec<(Filters, Vec<Facet>)> {
    let mut out: Vec<(Filters, Vec<Facet>)> = Vec::new();
    for &facet in facets {
        let under = facet.exclude_from(filters);
        match out.iter_mut().find(|(f, _)| *f == under) {
            Some((_, group)) => group.push(facet),
            None => out.push((under, vec![facet])),
        }
    }
    out
}

/// Counts kept for one searcher generation, by pass: faceted navigation asks the same counts
/// again and again (the first page; a brand's page counts brands over the whole catalogue), and
/// a count over a million models is costly (docs/decisions.md, D-52). A new generation starts
/// afresh, so counts are never stale.
pub(crate) struct FacetCache {
    kept: GenerationCache<String, Vec<FacetCounts>>,
    keep_from: std::time::Duration,
}

impl Default for FacetCache {
    fn default() -> FacetCache {
        FacetCache {
            kept: GenerationCache::holding_at_most(KEPT_PASSES),
            keep_from: KEEP_FROM,
        }
    }
}

/// Passes kept per generation at most; then the cache starts again. A pass holds at most
/// seven facets of 100 values: a full cache is a few megabytes, whatever a client asks.
const KEPT_PASSES: usize = 256;
/// Only passes that took this long are kept: a brand's own facets count at once, and keeping
/// them would push out the costly ones.
const KEEP_FROM: std::time::Duration = std::time::Duration::from_millis(2);

impl FacetCache {
    /// A cache that keeps every pass, however quick: for tests on small indexes.
    #[cfg(test)]
    pub(crate) fn keeping_every_pass() -> FacetCache {
        FacetCache {
            keep_from: std::time::Duration::ZERO,
            ..FacetCache::default()
        }
    }

    /// How many passes are kept.
    #[cfg(test)]
    pub(crate) fn kept(&self) -> usize {
        self.kept.len()
    }

    /// The counts of the pass `key` at `generation`, counted by `count` unless kept.
    pub(crate) fn get_or_count(
        &self,
        generation: u64,
        key: String,
        count: impl FnOnce() -> crate::IndexResult<Vec<FacetCounts>>,
    ) -> crate::IndexResult<Vec<FacetCounts>> {
        if let Some(counts) = self.kept.get(generation, &key) {
            return Ok(counts);
        }
        let started = std::time::Instant::now();
        let counts = count()?;
        if started.elapsed() >= self.keep_from {
            self.kept.keep(generation, key, counts.clone());
        }
        Ok(counts)
    }
}

/// Counts the values of `facets` over the matching documents.
pub(crate) struct FacetCollector {
    pub facets: Vec<Facet>,
}

/// Values below this are counted in a vector indexed by value; larger ones in a map. Brand and
/// series ids, term ordinals and millimetres are all far below it.
const DENSE_VALUES: u64 = 1 << 18;

/// Counts of u64 values.
enum Counts {
    Dense(Vec<u64>),
    Sparse(HashMap<u64, u64>),
    /// Each value as it comes, counted when done: for a few documents' values.
    Listed(Vec<u64>),
}

impl Counts {
    fn up_to(max: u64) -> Counts {
        match max < DENSE_VALUES {
            true => Counts::Dense(vec![0; max as usize + 1]),
            false => Counts::Sparse(HashMap::new()),
        }
    }

    fn add(&mut self, value: u64) {
        match self {
            Counts::Dense(counts) => {
                if let Some(count) = counts.get_mut(value as usize) {
                    *count += 1;
                }
            }
            Counts::Sparse(counts) => *counts.entry(value).or_default() += 1,
            Counts::Listed(values) => values.push(value),
        }
    }

    fn into_nonzero(self) -> Vec<(u64, u64)> {
        match self {
            Counts::Dense(counts) => (0..).zip(counts).filter(|&(_, count)| count > 0).collect(),
            Counts::Sparse(counts) => counts.into_iter().collect(),
            Counts::Listed(mut values) => {
                values.sort_unstable();
                values
                    .chunk_by(|a, b| a == b)
                    .map(|run| (run[0], run.len() as u64))
                    .collect()
            }
        }
    }
}

/// Where a facet's values come from in a segment: a u64 column (ids, term ordinals) or the
/// diameter column, bucketed to whole millimetres.
enum Source {
    Ids(Column<u64>),
    Ords(StrColumn),
    Millimetres(Column<f64>),
    Absent,
}

/// How a segment reads one facet, and what it has counted.
struct Counter {
    source: Source,
    counts: Counts,
}

pub(crate) struct FacetSegment {
    counters: Vec<Counter>,
    scratch: Scratch,
}

/// A facet's values with their counts, sorted by value, each value once.
type Counted = Vec<(FacetValue, u64)>;

impl Counter {
    /// A counter of `facet` over many of `segment`'s documents.
    fn of(facet: Facet, segment: &SegmentReader) -> tantivy::Result<Counter> {
        let source = Counter::source(facet, segment)?;
        let max = match &source {
            Source::Ids(column) => column.max_value(),
            Source::Ords(column) => column.num_terms() as u64,
            Source::Millimetres(column) => bucket(column.max_value()).unwrap_or(0),
            Source::Absent => 0,
        };
        Ok(Counter {
            source,
            counts: Counts::up_to(max),
        })
    }

    /// A counter of `facet` over a few of `segment`'s documents.
    fn of_few(facet: Facet, segment: &SegmentReader) -> tantivy::Result<Counter> {
        Ok(Counter {
            source: Counter::source(facet, segment)?,
            counts: Counts::Listed(Vec::new()),
        })
    }

    fn source(facet: Facet, segment: &SegmentReader) -> tantivy::Result<Source> {
        let fast = segment.fast_fields();
        let source = match facet {
            Facet::Brand => Source::Ids(fast.u64(names::BRAND_ID)?),
            Facet::Series => Source::Ids(fast.u64(names::SERIES_ID)?),
            Facet::Term(term) => fast
                .str(term.field_name())?
                .map_or(Source::Absent, Source::Ords),
            Facet::Diameter => fast
                .column_opt(names::DIAMETER)?
                .map_or(Source::Absent, Source::Millimetres),
        };
        Ok(source)
    }

    /// Counts the values of `docs` (ascending), each value of a many-valued field.
    fn count(&mut self, docs: &[DocId], scratch: &mut Scratch) {
        let counts = &mut self.counts;
        match &self.source {
            Source::Ids(column) => scratch.ids(column, docs).iter(),
            Source::Ords(column) => scratch.ids(column.ords(), docs).iter(),
            Source::Millimetres(column) => {
                let diameters = scratch.diameters(column, docs).iter();
                diameters
                    .filter_map(|&d| bucket(d))
                    .for_each(|b| counts.add(b));
                return;
            }
            Source::Absent => return,
        }
        .for_each(|&v| counts.add(v));
    }

    /// The values counted and their counts, sorted by value.
    fn tally(self) -> Counted {
        let mut counted = self.counts.into_nonzero();
        counted.sort_unstable();
        match self.source {
            Source::Ids(_) => counted
                .into_iter()
                .map(|(id, n)| (FacetValue::Id(id), n))
                .collect(),
            Source::Millimetres(_) => counted
                .into_iter()
                .map(|(mm, n)| (FacetValue::Millimetres(mm), n))
                .collect(),
            Source::Ords(column) => {
                // Ordinals are in the order of their terms' bytes, which is `String`'s order.
                let mut texts = terms_of(&column, counted.iter().map(|&(ord, _)| ord).collect());
                counted
                    .into_iter()
                    .filter_map(|(ord, n)| Some((FacetValue::Text(texts.remove(&ord)?), n)))
                    .collect()
            }
            Source::Absent => Counted::new(),
        }
    }
}

/// Whole millimetres of a diameter; `None` for what no watch measures.
pub(crate) fn bucket(diameter: f64) -> Option<u64> {
    (diameter.is_finite() && (0.0..1e6).contains(&diameter)).then(|| diameter.floor() as u64)
}

/// Buffers for a block's values, reused from block to block.
#[derive(Default)]
struct Scratch {
    docs: Vec<DocId>,
    rows: Vec<RowId>,
    ids: Vec<u64>,
    diameters: Vec<f64>,
}

impl Scratch {
    fn ids(&mut self, column: &Column<u64>, docs: &[DocId]) -> &[u64] {
        self.rows_of(column, docs);
        values(column, &self.rows, &mut self.ids)
    }

    fn diameters(&mut self, column: &Column<f64>, docs: &[DocId]) -> &[f64] {
        self.rows_of(column, docs);
        values(column, &self.rows, &mut self.diameters)
    }

    /// The rows of `docs`' values in `column`, read a block at a time: a value at a time, an
    /// optional column's rank of each document took most of a facet count (docs/decisions.md,
    /// D-52).
    fn rows_of<T>(&mut self, column: &Column<T>, docs: &[DocId]) {
        self.docs.clear();
        self.rows.clear();
        (column.index).docids_to_rowids(docs, &mut self.docs, &mut self.rows);
    }
}

/// The values of `column` at `rows`, into `out`.
fn values<'a, T: Copy + Default + PartialOrd + std::fmt::Debug + Send + Sync + 'static>(
    column: &Column<T>,
    rows: &[RowId],
    out: &'a mut Vec<T>,
) -> &'a [T] {
    out.clear();
    out.resize(rows.len(), T::default());
    column.values.get_vals(rows, out);
    out
}

impl Collector for FacetCollector {
    type Fruit = Vec<FacetCounts>;
    type Child = FacetSegment;

    fn for_segment(&self, _: u32, segment: &SegmentReader) -> tantivy::Result<FacetSegment> {
        let counters = self
            .facets
            .iter()
            .map(|&facet| Counter::of(facet, segment))
            .collect::<tantivy::Result<_>>()?;
        Ok(FacetSegment {
            counters,
            scratch: Scratch::default(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, segments: Vec<Vec<Counted>>) -> tantivy::Result<Vec<FacetCounts>> {
        let mut totals: Vec<Counted> = vec![Counted::new(); self.facets.len()];
        for segment in segments {
            for (total, counted) in totals.iter_mut().zip(segment) {
                *total = merge_sum(std::mem::take(total), counted);
            }
        }
        Ok(self
            .facets
            .iter()
            .zip(totals)
            .map(|(&facet, total)| FacetCounts {
                facet,
                values: most_frequent(total),
            })
            .collect())
    }
}

/// The [`MAX_FACET_VALUES`] most frequent of `values`, most frequent first, then by value.
fn most_frequent(mut values: Vec<(FacetValue, u64)>) -> Vec<(FacetValue, u64)> {
    let order = |a: &(FacetValue, u64), b: &(FacetValue, u64)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
    if values.len() > MAX_FACET_VALUES {
        values.select_nth_unstable_by(MAX_FACET_VALUES - 1, order);
        values.truncate(MAX_FACET_VALUES);
    }
    values.sort_unstable_by(order);
    values
}

impl SegmentCollector for FacetSegment {
    type Fruit = Vec<Counted>;

    fn collect(&mut self, doc: DocId, _: Score) {
        self.collect_block(&[doc]);
    }

    fn collect_block(&mut self, docs: &[DocId]) {
        for counter in &mut self.counters {
            counter.count(docs, &mut self.scratch);
        }
    }

    fn harvest(self) -> Vec<Counted> {
        self.counters.into_iter().map(Counter::tally).collect()
    }
}

/// The counts of `facets` over every model, none filtered out: the first page of faceted
/// navigation. A pass over a million models is slow (docs/decisions.md, D-52); here each
/// value's count is its
/// term's document frequency in each segment, less the values of the segment's documents that
/// are not live models, read from the columns as a pass would. The same counts as
/// [`FacetCollector`] over every model.
///
/// Values are kept in lists sorted by value (the term dictionaries' order) and summed by
/// merging them: hashing each of tens of thousands of series into a map took most of the time
/// (docs/decisions.md, D-52).
pub(crate) fn every_model(
    searcher: &Searcher,
    fields: &Fields,
    not_models: &NotModelsCache,
    facets: &[Facet],
) -> tantivy::Result<Vec<FacetCounts>> {
    let mut totals: Vec<Signed> = vec![Signed::new(); facets.len()];
    let not_models = not_models.of(searcher, fields)?;
    for (segment, not_models) in searcher.segment_readers().iter().zip(not_models) {
        for (total, &facet) in totals.iter_mut().zip(facets) {
            // Brands and series carry a brand id and no other faceted field (`Fields::document`):
            // only the brand facet counts them.
            let others = match facet {
                Facet::Brand => &not_models.not_live_models,
                _ => &not_models.deleted,
            };
            let counted = term_frequencies(segment, fields, facet)?;
            let counted = merge_sum(counted, values_of(facet, segment, others)?);
            *total = merge_sum(std::mem::take(total), counted);
        }
    }
    Ok(facets
        .iter()
        .zip(totals)
        .map(|(&facet, total)| FacetCounts {
            facet,
            values: most_frequent(
                total
                    .into_iter()
                    .filter_map(|(value, n)| {
                        u64::try_from(n).ok().filter(|&n| n > 0).map(|n| (value, n))
                    })
                    .collect(),
            ),
        })
        .collect())
}

/// A facet's values with signed counts, sorted by value, each value once.
type Signed = Vec<(FacetValue, i64)>;

/// The sum of two value-sorted lists, sorted by value.
fn merge_sum<N: std::ops::Add<Output = N> + Default>(
    a: Vec<(FacetValue, N)>,
    b: Vec<(FacetValue, N)>,
) -> Vec<(FacetValue, N)> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let mut b = b.into_iter().peekable();
    for (value, n) in a {
        while let Some(before) = b.next_if(|(v, _)| *v < value) {
            out.push(before);
        }
        let same = b
            .next_if(|(v, _)| *v == value)
            .map_or_else(N::default, |(_, m)| m);
        out.push((value, n + same));
    }
    out.extend(b);
    out
}

/// The counts of `facet`'s values over `docs` of `segment`, negated, sorted by value.
fn values_of(facet: Facet, segment: &SegmentReader, docs: &[DocId]) -> tantivy::Result<Signed> {
    if docs.is_empty() {
        return Ok(Signed::new());
    }
    let mut counter = Counter::of_few(facet, segment)?;
    let mut scratch = Scratch::default();
    for block in docs.chunks(COLLECT_BLOCK_BUFFER_LEN) {
        counter.count(block, &mut scratch);
    }
    Ok(counter
        .tally()
        .into_iter()
        .map(|(value, n)| (value, -(n as i64)))
        .collect())
}

/// A facet's value from its field's term bytes.
type ValueOfTerm = fn(&[u8]) -> Option<FacetValue>;

/// Each value of `facet` in `segment` and the number of its documents (deleted ones included),
/// from the term dictionary of the facet's indexed field, sorted by value (the dictionary's
/// order: big-endian numbers, then text by bytes as `String` orders it).
fn term_frequencies(
    segment: &SegmentReader,
    fields: &Fields,
    facet: Facet,
) -> tantivy::Result<Signed> {
    let (field, value_of): (Field, ValueOfTerm) = match facet {
        Facet::Brand => (fields.brand_id, |bytes| u64_term(bytes).map(FacetValue::Id)),
        Facet::Series => (fields.series_id, |bytes| {
            u64_term(bytes).map(FacetValue::Id)
        }),
        Facet::Diameter => (fields.diameter_mm, |bytes| {
            u64_term(bytes).map(FacetValue::Millimetres)
        }),
        Facet::Term(term) => (fields.spec_term(term), |bytes| {
            std::str::from_utf8(bytes)
                .ok()
                .map(|text| FacetValue::Text(text.to_owned()))
        }),
    };
    let inverted = segment.inverted_index(field)?;
    let mut terms = inverted.terms().stream()?;
    let mut out = Vec::new();
    while terms.advance() {
        if let Some(value) = value_of(terms.key()) {
            out.push((value, i64::from(terms.value().doc_freq)));
        }
    }
    Ok(out)
}

/// The value of a u64 field's term.
fn u64_term(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}
