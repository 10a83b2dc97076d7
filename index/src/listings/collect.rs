//! The collectors of the listings index: a page of ids with the exact total
//! ([`PageCollector`]), the prices of the listings a filter selects ([`PriceCollector`]), and
//! how many it selects of each reconciliation group ([`count_groups`]).
//!
//! Both take documents in blocks where tantivy gives them so (no scores needed; deleted
//! documents are skipped before the block, not one call per document), read the dense price
//! columns for a whole block at once, and check the price range there. Segments are in
//! ascending id order, so within a segment document order is id order: `newest` and `oldest`
//! keep the last or first `k` matches without reading anything, every order breaks ties by
//! document, and only the survivors' ids are read, to merge segments.

use super::{
    names, GroupCounts, ListingSort, PricePoint, PricedListings, AT_MAX_PRICE, AT_MAX_USD, UNPRICED,
};
use crate::segment_cache::SegmentCache;
use crate::top_k::TopK;
use std::collections::VecDeque;
use std::sync::Arc;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, StrColumn};
use tantivy::index::SegmentId;
use tantivy::query::{EnableScoring, Query, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{
    DocId, DocSet, Score, Searcher, SegmentReader, Term, COLLECT_BLOCK_BUFFER_LEN, TERMINATED,
};

/// One column's values for a block of documents; `None` where a document has none.
pub(super) type Values = Vec<Option<u64>>;

/// A dense price column of one segment, with the documents whose real price is the sentinel.
pub(super) struct PriceColumn {
    column: Column<u64>,
    /// Documents (ascending) whose price really is [`UNPRICED`]'s value; nearly always none.
    at_max: Vec<DocId>,
}

impl PriceColumn {
    fn open(segment: &SegmentReader, name: &str, marker: Term) -> tantivy::Result<PriceColumn> {
        Ok(PriceColumn {
            column: segment.fast_fields().u64(name)?,
            at_max: docs_with(segment, &marker)?,
        })
    }
}

/// The columns of a segment that pages and prices read: its two price columns (in each
/// listing's own currency, and in dollars), its ids, and the codes a model's stats are split
/// by.
pub(super) struct SegmentColumns {
    pub own: Arc<PriceColumn>,
    pub usd: Arc<PriceColumn>,
    pub ids: Column<u64>,
    pub groups: Column<u64>,
}

/// Each segment's columns, opened once: opening one reads its table of blocks (a block-wise
/// linear column at 10M listings has 20,000), a share of every page that reads them
/// (docs/decisions.md, D-94).
pub(super) struct KeptColumns {
    kept: SegmentCache<SegmentId, SegmentColumns>,
    price_at_max: Field,
}

impl KeptColumns {
    pub(super) fn new(price_at_max: Field) -> KeptColumns {
        KeptColumns {
            kept: SegmentCache::default(),
            price_at_max,
        }
    }

    /// The columns of each of `searcher`'s segments, in its order.
    pub(super) fn of(&self, searcher: &Searcher) -> tantivy::Result<Vec<Arc<SegmentColumns>>> {
        let marker = |value| Term::from_field_u64(self.price_at_max, value);
        self.kept.of(
            searcher,
            |segment| segment.segment_id(),
            |segment| {
                Ok(SegmentColumns {
                    own: Arc::new(PriceColumn::open(
                        segment,
                        names::PRICE,
                        marker(AT_MAX_PRICE),
                    )?),
                    usd: Arc::new(PriceColumn::open(
                        segment,
                        names::PRICE_USD,
                        marker(AT_MAX_USD),
                    )?),
                    ids: segment.fast_fields().u64(names::ID)?,
                    groups: segment.fast_fields().u64(names::STATS_GROUPS)?,
                })
            },
        )
    }
}

/// A price column read a block at a time.
pub(super) struct DensePrices {
    column: Arc<PriceColumn>,
    raw: Values,
}

impl DensePrices {
    pub(super) fn new(column: &Arc<PriceColumn>) -> DensePrices {
        DensePrices {
            column: Arc::clone(column),
            raw: vec![None; COLLECT_BLOCK_BUFFER_LEN],
        }
    }

    /// The prices of `docs` (`None`: unpriced) into `out`, in the order of `docs`.
    pub(super) fn read(&mut self, docs: &[DocId], out: &mut Values) {
        out.clear();
        let PriceColumn { column, at_max } = &*self.column;
        for chunk in docs.chunks(COLLECT_BLOCK_BUFFER_LEN) {
            let raw = &mut self.raw[..chunk.len()];
            column.first_vals(chunk, raw);
            let resolved = chunk
                .iter()
                .zip(raw.iter())
                .map(|(&doc, &value)| match value {
                    Some(UNPRICED) => at_max.binary_search(&doc).is_ok().then_some(UNPRICED),
                    value => value,
                });
            out.extend(resolved);
        }
    }
}

/// The columns of the segment of `ordinal`: made for the searcher the caller runs on.
pub(super) fn segment_columns(
    columns: &[Arc<SegmentColumns>],
    ordinal: u32,
) -> tantivy::Result<&Arc<SegmentColumns>> {
    columns.get(ordinal as usize).ok_or_else(|| {
        tantivy::TantivyError::InternalError(format!("no columns for segment {ordinal}"))
    })
}

/// The segment's documents with `term` (a marker term: few or none), ascending.
pub(super) fn docs_with(segment: &SegmentReader, term: &Term) -> tantivy::Result<Vec<DocId>> {
    let inverted = segment.inverted_index(term.field())?;
    let mut docs = Vec::new();
    if let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)? {
        let mut doc = postings.doc();
        while doc != TERMINATED {
            docs.push(doc);
            doc = postings.advance();
        }
    }
    Ok(docs)
}

/// The segment's currency column, if any document has a currency.
pub(super) fn currency_column(segment: &SegmentReader) -> tantivy::Result<Option<StrColumn>> {
    segment.fast_fields().str(names::CURRENCY)
}

/// The values of `docs` in `column` (a u64 column, or a string column's ordinals) into `out`
/// (as long as `docs`), read in blocks.
pub(super) fn read_values(column: &Column<u64>, docs: &[DocId], out: &mut [Option<u64>]) {
    for (chunk, out) in docs
        .chunks(COLLECT_BLOCK_BUFFER_LEN)
        .zip(out.chunks_mut(COLLECT_BLOCK_BUFFER_LEN))
    {
        column.first_vals(chunk, out);
    }
}

/// The ordinal of the currency column's value `key` in `column`, if it occurs.
pub(super) fn currency_ord(column: Option<&StrColumn>, key: &str) -> tantivy::Result<Option<u64>> {
    match column {
        Some(column) => Ok(column.dictionary().term_ord(key.as_bytes())?),
        None => Ok(None),
    }
}

/// Counts one selected listing into `out`, and its prices when it has a price: its own too
/// when its currency is the `wanted` one.
pub(super) fn add_listing(
    out: &mut PricedListings,
    price: Option<u64>,
    usd: Option<u64>,
    currency: Option<u64>,
    wanted: Option<u64>,
) {
    out.count += 1;
    let Some(price) = price else { return };
    let own = (currency.is_some() && currency == wanted).then_some(price);
    out.priced.push(PricePoint { usd, own });
}

pub(super) fn in_range(range: Option<(u64, u64)>, price: Option<u64>) -> bool {
    match (range, price) {
        (None, _) => true,
        (Some((min, max)), Some(price)) => min <= price && price <= max,
        (Some(_), None) => false,
    }
}

/// Runs `weight` over `segment` into `collector`: in blocks when no score is needed, the
/// deleted documents taken out of each block first.
fn collect_blocks<C: SegmentCollector>(
    collector: &mut C,
    weight: &dyn Weight,
    segment: &SegmentReader,
    scoring: bool,
) -> tantivy::Result<()> {
    if !scoring {
        return for_each_alive_block(weight, segment, |docs| collector.collect_block(docs));
    }
    weight.for_each(segment, &mut |doc, score| {
        if segment
            .alive_bitset()
            .is_none_or(|alive| alive.is_alive(doc))
        {
            collector.collect(doc, score);
        }
    })
}

/// Runs `weight` over `segment` unscored, giving `each` the blocks of matching documents with
/// the deleted ones taken out.
fn for_each_alive_block(
    weight: &dyn Weight,
    segment: &SegmentReader,
    mut each: impl FnMut(&[DocId]),
) -> tantivy::Result<()> {
    let Some(alive) = segment.alive_bitset() else {
        return weight.for_each_no_score(segment, &mut |docs| each(docs));
    };
    let mut kept = Vec::with_capacity(COLLECT_BLOCK_BUFFER_LEN);
    weight.for_each_no_score(segment, &mut |docs| {
        kept.clear();
        kept.extend(docs.iter().copied().filter(|&doc| alive.is_alive(doc)));
        each(&kept);
    })
}

/// One page of ids (best first, at most `k`) and the exact number of matches.
pub(super) struct PageCollector {
    sort: ListingSort,
    k: usize,
    range: Option<(u64, u64)>,
    /// The searcher's columns, by segment ordinal.
    columns: Vec<Arc<SegmentColumns>>,
}

impl PageCollector {
    pub(super) fn new(
        sort: ListingSort,
        k: usize,
        range: Option<(u64, u64)>,
        columns: Vec<Arc<SegmentColumns>>,
    ) -> PageCollector {
        PageCollector {
            sort,
            k,
            range,
            columns,
        }
    }

    fn needs_prices(&self) -> bool {
        self.range.is_some() || matches!(self.sort, ListingSort::PriceAsc | ListingSort::PriceDesc)
    }
}

/// Survivors a segment makes room for before it sees any match.
const PREALLOCATED: usize = 256;

/// A segment-local rank: smaller first. The last part is the document, which orders like the id.
type LocalKey = (u64, u64, DocId);

/// What a segment keeps of its matches.
enum Kept {
    /// Ascending id: the first `k` matches.
    First(Vec<DocId>),
    /// Descending id: the last `k` matches.
    Last(VecDeque<DocId>),
    /// By score or price: the best `k` keys.
    Ranked(TopK<LocalKey>),
}

pub(super) struct PageSegment {
    sort: ListingSort,
    k: usize,
    range: Option<(u64, u64)>,
    ids: Column<u64>,
    prices: Option<DensePrices>,
    block_prices: Values,
    kept: Kept,
    total: usize,
}

/// A segment's survivors by their merge key (score or price parts, then the id in the order's
/// direction) with their ids, and its number of matches.
pub(super) struct PageFruit {
    ranked: Vec<((u64, u64, u64), u64)>,
    total: usize,
}

impl PageFruit {
    pub(super) fn new(ranked: Vec<((u64, u64, u64), u64)>, total: usize) -> PageFruit {
        PageFruit { ranked, total }
    }
}

impl Collector for PageCollector {
    type Fruit = (Vec<u64>, usize);
    type Child = PageSegment;

    fn for_segment(&self, ordinal: u32, _: &SegmentReader) -> tantivy::Result<PageSegment> {
        let prices = match self.needs_prices() {
            true => Some(DensePrices::new(
                &segment_columns(&self.columns, ordinal)?.usd,
            )),
            false => None,
        };
        // Callers may ask for every match (`k` up to `usize::MAX`): room grows as needed.
        let room = self.k.min(PREALLOCATED);
        let kept = match self.sort {
            ListingSort::Oldest => Kept::First(Vec::with_capacity(room)),
            ListingSort::Newest => Kept::Last(VecDeque::with_capacity(room + 1)),
            _ => Kept::Ranked(TopK::new(self.k)),
        };
        Ok(PageSegment {
            sort: self.sort,
            k: self.k,
            range: self.range,
            ids: segment_columns(&self.columns, ordinal)?.ids.clone(),
            prices,
            block_prices: Vec::with_capacity(COLLECT_BLOCK_BUFFER_LEN),
            kept,
            total: 0,
        })
    }

    fn requires_scoring(&self) -> bool {
        self.sort == ListingSort::Relevance
    }

    fn collect_segment(
        &self,
        weight: &dyn Weight,
        ordinal: u32,
        segment: &SegmentReader,
    ) -> tantivy::Result<PageFruit> {
        let mut collector = self.for_segment(ordinal, segment)?;
        collect_blocks(&mut collector, weight, segment, self.requires_scoring())?;
        Ok(collector.harvest())
    }

    fn merge_fruits(&self, fruits: Vec<PageFruit>) -> tantivy::Result<(Vec<u64>, usize)> {
        let total = fruits.iter().map(|f| f.total).sum();
        let mut all: Vec<_> = fruits.into_iter().flat_map(|f| f.ranked).collect();
        all.sort_unstable();
        let ids = all.into_iter().take(self.k).map(|(_, id)| id).collect();
        Ok((ids, total))
    }
}

impl PageSegment {
    /// Keeps `doc` if it ranks among the segment's best `k` so far.
    fn keep(&mut self, doc: DocId, price: Option<u64>, score: Score) {
        let k = self.k;
        match &mut self.kept {
            Kept::First(first) => {
                if first.len() < k {
                    first.push(doc);
                }
            }
            Kept::Last(last) => {
                last.push_back(doc);
                if last.len() > k {
                    last.pop_front();
                }
            }
            Kept::Ranked(best) => {
                let key = match self.sort {
                    // Scores are non-negative, so their bit patterns order like the floats.
                    ListingSort::Relevance => (!u64::from(score.max(0.0).to_bits()), 0, doc),
                    // Unpriced last either way.
                    ListingSort::PriceDesc => {
                        (u64::from(price.is_none()), !price.unwrap_or(0), doc)
                    }
                    _ => (u64::from(price.is_none()), price.unwrap_or(0), doc),
                };
                best.offer(key);
            }
        }
    }

    fn id(&self, doc: DocId) -> u64 {
        self.ids.first(doc).unwrap_or(u64::MAX)
    }
}

impl SegmentCollector for PageSegment {
    type Fruit = PageFruit;

    fn collect(&mut self, doc: DocId, score: Score) {
        let price = match &mut self.prices {
            Some(prices) => {
                let mut read = std::mem::take(&mut self.block_prices);
                prices.read(&[doc], &mut read);
                let price = read.first().copied().flatten();
                self.block_prices = read;
                price
            }
            None => None,
        };
        if !in_range(self.range, price) {
            return;
        }
        self.total += 1;
        if self.k > 0 {
            self.keep(doc, price, score);
        }
    }

    fn collect_block(&mut self, docs: &[DocId]) {
        let Some(prices) = &mut self.prices else {
            // Nothing to read: every document matches, and only the id orders keep them.
            self.total += docs.len();
            let tail = docs.len().saturating_sub(self.k);
            let docs = if matches!(self.kept, Kept::Last(_)) {
                &docs[tail..]
            } else {
                docs
            };
            for &doc in docs {
                self.keep(doc, None, 0.0);
            }
            return;
        };
        let mut read = std::mem::take(&mut self.block_prices);
        prices.read(docs, &mut read);
        for (&doc, &price) in docs.iter().zip(&read) {
            if in_range(self.range, price) {
                self.total += 1;
                if self.k > 0 {
                    self.keep(doc, price, 0.0);
                }
            }
        }
        self.block_prices = read;
    }

    fn harvest(self) -> PageFruit {
        let ranked = match &self.kept {
            Kept::First(docs) => docs
                .iter()
                .map(|&doc| ((0, 0, self.id(doc)), self.id(doc)))
                .collect(),
            Kept::Last(docs) => docs
                .iter()
                .map(|&doc| ((0, 0, !self.id(doc)), self.id(doc)))
                .collect(),
            Kept::Ranked(best) => best
                .iter()
                .map(|&(a, b, doc)| ((a, b, self.id(doc)), self.id(doc)))
                .collect(),
        };
        PageFruit {
            ranked,
            total: self.total,
        }
    }
}

/// Collects [`PricedListings`]: every selected listing counts, and each priced one gives its
/// US dollar price and, when in `currency`, its own.
pub(super) struct PriceCollector {
    /// The currency column's value for the wanted currency.
    currency_key: String,
    range: Option<(u64, u64)>,
    /// The searcher's columns, by segment ordinal.
    columns: Vec<Arc<SegmentColumns>>,
}

impl PriceCollector {
    pub(super) fn new(
        currency: &str,
        range: Option<(u64, u64)>,
        columns: Vec<Arc<SegmentColumns>>,
    ) -> PriceCollector {
        PriceCollector {
            currency_key: super::currency_key(Some(currency)),
            range,
            columns,
        }
    }
}

pub(super) struct PriceSegment {
    price: DensePrices,
    price_usd: DensePrices,
    currency: Option<Column<u64>>,
    /// Ordinal of the wanted currency in this segment, if it occurs.
    wanted: Option<u64>,
    range: Option<(u64, u64)>,
    /// Prices, dollar prices and currencies of the block at hand, kept to reuse their room.
    block: (Values, Values, Values),
    out: PricedListings,
}

impl Collector for PriceCollector {
    type Fruit = PricedListings;
    type Child = PriceSegment;

    fn for_segment(&self, ordinal: u32, segment: &SegmentReader) -> tantivy::Result<PriceSegment> {
        let currency = currency_column(segment)?;
        let wanted = currency_ord(currency.as_ref(), &self.currency_key)?;
        let columns = segment_columns(&self.columns, ordinal)?;
        Ok(PriceSegment {
            price: DensePrices::new(&columns.own),
            price_usd: DensePrices::new(&columns.usd),
            // Only read when the wanted currency occurs in the segment.
            currency: currency
                .filter(|_| wanted.is_some())
                .map(|c| c.ords().clone()),
            wanted,
            range: self.range,
            block: Default::default(),
            out: PricedListings::default(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn collect_segment(
        &self,
        weight: &dyn Weight,
        ordinal: u32,
        segment: &SegmentReader,
    ) -> tantivy::Result<PricedListings> {
        let mut collector = self.for_segment(ordinal, segment)?;
        collect_blocks(&mut collector, weight, segment, false)?;
        Ok(collector.harvest())
    }

    fn merge_fruits(&self, fruits: Vec<PricedListings>) -> tantivy::Result<PricedListings> {
        let mut out = PricedListings::default();
        for fruit in fruits {
            out.count += fruit.count;
            out.priced.extend(fruit.priced);
        }
        Ok(out)
    }
}

impl SegmentCollector for PriceSegment {
    type Fruit = PricedListings;

    fn collect(&mut self, doc: DocId, _: Score) {
        self.collect_block(&[doc]);
    }

    fn collect_block(&mut self, docs: &[DocId]) {
        let (mut prices, mut usd, mut currencies) = std::mem::take(&mut self.block);
        self.price.read(docs, &mut prices);
        self.price_usd.read(docs, &mut usd);
        currencies.clear();
        currencies.resize(docs.len(), None);
        if let Some(column) = &self.currency {
            read_values(column, docs, &mut currencies);
        }
        for ((&price, &usd), &currency) in prices.iter().zip(&usd).zip(&currencies) {
            if !in_range(self.range, usd) {
                continue;
            }
            add_listing(&mut self.out, price, usd, currency, self.wanted);
        }
        self.block = (prices, usd, currencies);
    }

    fn harvest(self) -> PricedListings {
        self.out
    }
}

/// How many of the documents `query` matches have each value of the `unmatched_group` column;
/// documents without one are not counted. Not a [`Collector`]: one map is counted into across
/// the segments, since a common word's groups recur in every segment; a map per segment, added
/// up after, made a common word's search 8-14 % slower (docs/decisions.md, D-222).
pub(super) fn count_groups(searcher: &Searcher, query: &dyn Query) -> tantivy::Result<GroupCounts> {
    let weight = query.weight(EnableScoring::disabled_from_searcher(searcher))?;
    let mut counts = GroupCounts::default();
    for segment in searcher.segment_readers() {
        let groups = segment.fast_fields().u64(names::UNMATCHED_GROUP)?;
        for_each_alive_block(&*weight, segment, |docs| {
            for &doc in docs {
                if let Some(group) = groups.first(doc) {
                    *counts.entry(group).or_default() += 1;
                }
            }
        })?;
    }
    Ok(counts)
}
