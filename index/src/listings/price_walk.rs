//! A page of listings by price with filters but no price range and no text (a brand's listings
//! cheapest first, `GET /listings?brand=…&sort=price_asc`), answered from the price buckets
//! cheapest first (dearest first for `price_desc`; a condition's own buckets when one is asked),
//! each intersected with the other filters, until the page is full: a later bucket never holds a
//! better price, so only the prices of the first few buckets' matches are read, where the page
//! collector read every match's (a million for the largest brand at 10M listings;
//! docs/decisions.md, D-94). The total is the filters' count, which reads no price. Unpriced
//! listings are in no bucket and rank last: a segment whose priced matches do not fill its page,
//! and that has unpriced ones, is collected by the page collector instead (that segment alone).

use super::bucket_walk::Page;
use super::collect::{segment_columns, DensePrices, PageCollector, PageFruit, SegmentColumns};
use super::ListingSort;
use std::sync::Arc;
use tantivy::collector::Collector;
use tantivy::fastfield::AliveBitSet;
use tantivy::postings::SegmentPostings;
use tantivy::query::{EnableScoring, Query, Scorer, Weight};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Searcher, SegmentReader, Term, TERMINATED};

/// Pages deeper than this take the page collector: a walk that reads most buckets to fill
/// them gains nothing (the back office's jobs ask every match).
pub(super) const PAGE_AT_MOST: usize = 1_000;

/// What a price walk asks: see the module's doc.
pub(super) struct PriceWalk {
    /// The filters (everything the request asks: it has no price range and no text).
    pub filters: Box<dyn Query>,
    /// The filters a bucket's listings are checked against: those the bucket terms do not
    /// stand for already (a condition).
    pub in_bucket: Box<dyn Query>,
    /// Every price bucket's term, by ascending price, all of one field.
    pub buckets: Vec<Term>,
    /// `PriceAsc` or `PriceDesc`.
    pub sort: ListingSort,
    pub k: usize,
}

impl PriceWalk {
    /// Every segment's page fruit, to merge as `collector`'s (the page collector of the same
    /// request, which collects the segments the walk cannot answer); `columns` are the
    /// searcher's, by segment.
    pub(super) fn segment_fruits(
        &self,
        searcher: &Searcher,
        columns: &[Arc<SegmentColumns>],
        collector: &PageCollector,
    ) -> tantivy::Result<Vec<PageFruit>> {
        let scoring = EnableScoring::disabled_from_searcher(searcher);
        let counted = self.filters.weight(scoring)?;
        let in_bucket = self.in_bucket.weight(scoring)?;
        let segments = (0u32..).zip(searcher.segment_readers());
        segments
            .map(|(ordinal, segment)| {
                match self.segment(
                    &*counted,
                    &*in_bucket,
                    segment,
                    segment_columns(columns, ordinal)?,
                )? {
                    Some(fruit) => Ok(fruit),
                    None => collector.collect_segment(&*counted, ordinal, segment),
                }
            })
            .collect()
    }

    /// The segment's page fruit from its buckets; `None` when its priced matches do not
    /// fill its page and it has unpriced ones, which no bucket holds.
    fn segment(
        &self,
        counted: &dyn Weight,
        in_bucket: &dyn Weight,
        segment: &SegmentReader,
        columns: &SegmentColumns,
    ) -> tantivy::Result<Option<PageFruit>> {
        let Some(field) = self.buckets.first().map(Term::field) else {
            return Ok(None);
        };
        let total = counted.count(segment)? as usize;
        let mut prices = DensePrices::new(&columns.usd);
        let inverted = segment.inverted_index(field)?;
        let mut page = Page::new(self.sort, self.k);
        let (mut docs, mut read) = (Vec::new(), Vec::new());
        let mut offered = 0;
        let buckets: Box<dyn Iterator<Item = &Term>> = match self.sort {
            ListingSort::PriceDesc => Box::new(self.buckets.iter().rev()),
            _ => Box::new(self.buckets.iter()),
        };
        for term in buckets {
            if page.is_full() {
                break;
            }
            let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)? else {
                continue;
            };
            let mut filters = in_bucket.scorer(segment, 1.0)?;
            docs.clear();
            in_both(
                &mut postings,
                &mut *filters,
                segment.alive_bitset(),
                &mut docs,
            );
            prices.read(&docs, &mut read);
            for (&doc, price) in docs.iter().zip(&read) {
                // Every listing in a bucket has a dollar price.
                if let Some(price) = *price {
                    page.offer(doc, price);
                    offered += 1;
                }
            }
        }
        // Every priced match offered and the page not full: the unpriced ones come next.
        if !page.is_full() && offered < total {
            return Ok(None);
        }
        Ok(Some(page.harvest(&columns.ids, total)))
    }
}

/// Pushes onto `out` the live documents of `bucket` that `filters` matches, ascending.
fn in_both(
    bucket: &mut SegmentPostings,
    filters: &mut dyn Scorer,
    alive: Option<&AliveBitSet>,
    out: &mut Vec<DocId>,
) {
    let mut doc = bucket.doc();
    while doc != TERMINATED {
        let at = match filters.doc() < doc {
            true => filters.seek(doc),
            false => filters.doc(),
        };
        if at == TERMINATED {
            return;
        }
        if at == doc {
            if alive.is_none_or(|alive| alive.is_alive(doc)) {
                out.push(doc);
            }
            doc = bucket.advance();
        } else {
            doc = bucket.seek(at);
        }
    }
}
