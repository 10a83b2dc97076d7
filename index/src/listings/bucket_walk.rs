//! A narrow price range with no other filter than a condition and the hidden statuses (the
//! marketplace's browse page, `GET /listings?condition=UNWORN&minPriceUSD=…&maxPriceUSD=…`),
//! answered from its price buckets' postings one bucket at a time rather than through tantivy's
//! union of them, a large share of its cost at 10M listings (docs/decisions.md, D-94). Walking
//! bucket by bucket lets each part do only what it must: a bucket strictly inside the range needs
//! no price read (every price in it is in range), a page by id keeps each block's first or last
//! `k`, a page by price ranks only the buckets up to its first `k` (a higher bucket never holds a
//! lower price), and a bucket of a segment with nothing deleted or hidden counts by its document
//! frequency. The range's two edge buckets, which need each listing's price, are kept per segment
//! sorted by price ([`EdgeBucket`]). Pages and totals are the page collector's (a property test
//! compares them).

use super::collect::{docs_with, DensePrices, PageFruit, SegmentColumns, Values};
use super::ListingSort;
use crate::segment_cache::{SegmentPart, SegmentParts};
use crate::top_k::TopK;
use std::sync::Arc;
use tantivy::columnar::Column;
use tantivy::fastfield::AliveBitSet;
use tantivy::index::{InvertedIndexReader, SegmentId};
use tantivy::postings::TermInfo;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, Searcher, SegmentReader, Term};

/// What a bucket walk asks: see the module's doc.
pub(super) struct BucketWalk {
    /// The range's bucket terms, by ascending price; all of one field (the first's).
    pub terms: Vec<Term>,
    /// The dollar price range, inclusive.
    pub range: (u64, u64),
    /// Status terms whose listings are left out.
    pub hidden: Vec<Term>,
    /// Any order but relevance.
    pub sort: ListingSort,
    pub k: usize,
}

impl BucketWalk {
    /// The page fruits of every segment, to merge as the page collector's; `columns` are the
    /// searcher's, by segment, and `edges` the edge buckets kept so far.
    pub(super) fn segment_fruits(
        &self,
        searcher: &Searcher,
        columns: &[Arc<SegmentColumns>],
        edges: &EdgeBuckets,
    ) -> tantivy::Result<Vec<PageFruit>> {
        (searcher.segment_readers().iter().zip(columns))
            .map(|(segment, columns)| {
                let kept = KeptEdges {
                    edges,
                    searcher,
                    segment: segment.segment_id(),
                    hidden_terms: &self.hidden,
                };
                self.segment(segment, columns, kept)
            })
            .collect()
    }

    fn segment(
        &self,
        segment: &SegmentReader,
        columns: &SegmentColumns,
        edges: KeptEdges<'_>,
    ) -> tantivy::Result<PageFruit> {
        let hidden = Hidden::read(segment, &self.hidden)?;
        let alive = segment.alive_bitset();
        let mut walk = SegmentWalk {
            range: self.range,
            alive,
            hidden: &hidden,
            edges,
            prices: DensePrices::new(&columns.usd),
            page: Page::new(self.sort, self.k),
            total: 0,
            kept: Vec::new(),
            block_prices: Vec::new(),
        };
        let last = self.terms.len().saturating_sub(1);
        let mut order: Vec<usize> = (0..self.terms.len()).collect();
        if self.sort == ListingSort::PriceDesc {
            order.reverse();
        }
        if let Some(first) = self.terms.first() {
            let inverted = segment.inverted_index(first.field())?;
            for at in order {
                walk.bucket(&inverted, &self.terms[at], at == 0 || at == last)?;
            }
        }
        Ok(walk.page.harvest(&columns.ids, walk.total))
    }
}

/// Listings kept across all edge buckets, at most (12 bytes each: ~24 MB): at 10M listings an
/// edge bucket of one condition holds 50,000 to 80,000.
pub(super) const EDGE_LISTINGS_KEPT: usize = 2_000_000;

/// The edge buckets kept between requests, by segment, term and hidden statuses.
pub(super) type EdgeBuckets = SegmentParts<(Term, Vec<Term>), EdgeBucket>;

/// An edge bucket's shown listings in one segment, by ascending price then document; deleted
/// ones included, since deletes come later to a segment whose documents never change (the
/// alive bitset is applied as they are read). A range's edge is counted by two binary
/// searches and offered from a contiguous run, where reading each listing's price from the
/// column was half of a narrow range's page.
pub(super) struct EdgeBucket {
    prices: Vec<u64>,
    docs: Vec<DocId>,
}

impl EdgeBucket {
    fn read(
        inverted: &InvertedIndexReader,
        info: &TermInfo,
        hidden: &Hidden,
        prices: &mut DensePrices,
    ) -> tantivy::Result<EdgeBucket> {
        let mut postings =
            inverted.read_block_postings_from_terminfo(info, IndexRecordOption::Basic)?;
        let mut docs = Vec::with_capacity(info.doc_freq as usize);
        loop {
            let block = postings.docs();
            if block.is_empty() {
                break;
            }
            docs.extend(block.iter().copied().filter(|&doc| !hidden.contains(doc)));
            postings.advance();
        }
        let mut read = Vec::with_capacity(docs.len());
        prices.read(&docs, &mut read);
        // Every listing in a bucket has a dollar price.
        let mut by_price: Vec<(u64, DocId)> = (docs.iter().zip(read))
            .filter_map(|(&doc, price)| Some((price?, doc)))
            .collect();
        by_price.sort_unstable();
        let (prices, docs) = by_price.into_iter().unzip();
        Ok(EdgeBucket { prices, docs })
    }

    /// The positions of the listings priced within `range` (inclusive).
    fn within(&self, (low, high): (u64, u64)) -> std::ops::Range<usize> {
        let from = self.prices.partition_point(|&price| price < low);
        let to = self.prices.partition_point(|&price| price <= high);
        from..to.max(from)
    }
}

impl SegmentPart for EdgeBucket {
    fn units(&self) -> usize {
        self.docs.len()
    }
}

/// Where one segment's walk finds its edge buckets.
struct KeptEdges<'a> {
    edges: &'a EdgeBuckets,
    searcher: &'a Searcher,
    segment: SegmentId,
    hidden_terms: &'a [Term],
}

/// One segment's walk over its buckets.
struct SegmentWalk<'a> {
    range: (u64, u64),
    alive: Option<&'a AliveBitSet>,
    hidden: &'a Hidden,
    edges: KeptEdges<'a>,
    prices: DensePrices,
    page: Page,
    total: usize,
    /// The block at hand's live, shown documents, and their prices; kept to reuse their room.
    kept: Vec<DocId>,
    block_prices: Values,
}

impl SegmentWalk<'_> {
    /// Counts the bucket of `term` and offers its documents to the page as it needs them;
    /// an `edge` bucket (the range's first or last) is taken from its kept prices
    /// ([`SegmentWalk::edge`]).
    fn bucket(
        &mut self,
        inverted: &InvertedIndexReader,
        term: &Term,
        edge: bool,
    ) -> tantivy::Result<()> {
        let Some(info) = inverted.get_term_info(term)? else {
            return Ok(());
        };
        if edge {
            return self.edge(inverted, term, &info);
        }
        let ranks = self.page.wants_bucket();
        if !ranks && self.alive.is_none() && self.hidden.is_empty() {
            self.total += info.doc_freq as usize;
            return Ok(());
        }
        let mut postings =
            inverted.read_block_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
        self.page.start_bucket();
        let by_price = self.page.by_price();
        loop {
            let docs = postings.docs();
            if docs.is_empty() {
                return Ok(());
            }
            let (alive, hidden) = (self.alive, self.hidden);
            self.kept.clear();
            self.kept.extend(docs.iter().copied().filter(|&doc| {
                alive.is_none_or(|alive| alive.is_alive(doc)) && !hidden.contains(doc)
            }));
            self.total += self.kept.len();
            if ranks && by_price {
                self.offer_priced_block();
            } else if ranks {
                self.page.offer_block(&self.kept);
            }
            postings.advance();
        }
    }

    /// Counts the live listings of the edge bucket of `term` within the range, and offers
    /// them when the page ranks this bucket.
    fn edge(
        &mut self,
        inverted: &InvertedIndexReader,
        term: &Term,
        info: &TermInfo,
    ) -> tantivy::Result<()> {
        let KeptEdges {
            edges,
            searcher,
            segment,
            hidden_terms,
        } = self.edges;
        let bucket = edges.get_or_make(
            searcher,
            segment,
            (term.clone(), hidden_terms.to_vec()),
            || EdgeBucket::read(inverted, info, self.hidden, &mut self.prices),
            |_| true,
        )?;
        let ranks = self.page.wants_bucket();
        self.page.start_bucket();
        for at in bucket.within(self.range) {
            let doc = bucket.docs[at];
            if self.alive.is_none_or(|alive| alive.is_alive(doc)) {
                self.total += 1;
                if ranks {
                    self.page.offer(doc, bucket.prices[at]);
                }
            }
        }
        Ok(())
    }

    /// Offers the block at hand with its prices read (a page by price ranks this bucket).
    fn offer_priced_block(&mut self) {
        let mut read = std::mem::take(&mut self.block_prices);
        self.prices.read(&self.kept, &mut read);
        for (&doc, &price) in self.kept.iter().zip(&read) {
            self.page.offer(doc, price.unwrap_or(0));
        }
        self.block_prices = read;
    }
}

/// The segment's documents of the hidden statuses, as a bitset; empty when none.
struct Hidden(Vec<u64>);

impl Hidden {
    fn read(segment: &SegmentReader, terms: &[Term]) -> tantivy::Result<Hidden> {
        let mut words = Vec::new();
        for term in terms {
            for doc in docs_with(segment, term)? {
                if words.is_empty() {
                    words = vec![0u64; (segment.max_doc() as usize).div_ceil(64)];
                }
                words[doc as usize / 64] |= 1 << (doc % 64);
            }
        }
        Ok(Hidden(words))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn contains(&self, doc: DocId) -> bool {
        (self.0.get(doc as usize / 64)).is_some_and(|word| word & (1 << (doc % 64)) != 0)
    }
}

/// A segment's best `k` so far, by a key where smaller ranks first (the document last, which
/// orders like the id). Shared with the price walk ([`super::price_walk`]).
pub(super) struct Page {
    sort: ListingSort,
    k: usize,
    best: TopK<(u64, DocId)>,
    /// Documents offered from the bucket at hand (a page by `oldest` takes a bucket's first `k`).
    offered: usize,
}

impl Page {
    pub(super) fn new(sort: ListingSort, k: usize) -> Page {
        Page {
            sort,
            k,
            best: TopK::new(k),
            offered: 0,
        }
    }

    fn by_price(&self) -> bool {
        matches!(self.sort, ListingSort::PriceAsc | ListingSort::PriceDesc)
    }

    /// Whether the next bucket's documents may enter the page: by id always (any bucket may
    /// hold the first or last ids); by price only while the page is short, buckets coming in
    /// price order.
    fn wants_bucket(&self) -> bool {
        self.k > 0 && (!self.by_price() || !self.best.is_full())
    }

    /// Whether `k` are kept.
    pub(super) fn is_full(&self) -> bool {
        self.best.is_full()
    }

    fn start_bucket(&mut self) {
        self.offered = 0;
    }

    /// Offers a block of documents (ascending) of a page by id: of a block only its first or
    /// last `k` can rank, and by `newest` only those above the worst kept (the block is
    /// offered from its end, so the first that does not rank ends it).
    fn offer_block(&mut self, docs: &[DocId]) {
        if self.sort != ListingSort::Newest {
            let first = &docs[..docs.len().min(self.k.saturating_sub(self.offered))];
            for &doc in first {
                self.offer(doc, 0);
            }
            return;
        }
        for &doc in docs.iter().rev().take(self.k) {
            let rank = self.rank(doc, 0);
            if self
                .best
                .worst_when_full()
                .is_some_and(|&(worst, _)| rank >= worst)
            {
                return;
            }
            self.offer(doc, 0);
        }
    }

    pub(super) fn offer(&mut self, doc: DocId, price: u64) {
        self.offered += 1;
        self.best.offer((self.rank(doc, price), doc));
    }

    /// The key `doc` of `price` ranks by, smaller first.
    fn rank(&self, doc: DocId, price: u64) -> u64 {
        match self.sort {
            ListingSort::Newest => u64::from(!doc),
            ListingSort::PriceAsc => price,
            ListingSort::PriceDesc => !price,
            _ => u64::from(doc),
        }
    }

    /// The page's survivors with the merge keys of the page collector's fruit.
    pub(super) fn harvest(self, ids: &Column<u64>, total: usize) -> PageFruit {
        let ranked = (self.best.into_vec().into_iter())
            .map(|(rank, doc)| {
                let id = ids.first(doc).unwrap_or(u64::MAX);
                let key = match self.sort {
                    ListingSort::Newest => (0, 0, !id),
                    ListingSort::PriceAsc | ListingSort::PriceDesc => (0, rank, id),
                    _ => (0, 0, id),
                };
                (key, id)
            })
            .collect();
        PageFruit::new(ranked, total)
    }
}
