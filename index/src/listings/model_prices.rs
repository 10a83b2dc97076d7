//! The prices of one model's listings of one status, what `GET /listings/stats` reads, kept
//! per segment for the models with many. A segment's documents and columns never change, only
//! which of them are deleted: a run read once serves every later request (the deletes applied
//! as it is read) until the segment is merged away, so after a commit only new segments are
//! read, and the hot model's figures cost one pass over a contiguous run, not three columns.

use super::collect::{
    add_listing, currency_column, currency_ord, docs_with, read_ords, DensePrices, SegmentColumns,
    Values,
};
use super::PricedListings;
use crate::segment_cache::{SegmentPart, SegmentParts};
use std::sync::Arc;
use tantivy::fastfield::AliveBitSet;
use tantivy::schema::Field;
use tantivy::{DocId, Searcher, SegmentReader, Term};

/// Runs shorter than this are read again each time: reading them costs less than keeping them.
pub(super) const RUN_MIN_LEN: usize = 2_048;
/// Listings kept across all runs, at most (~56 MB): enough for every large model of 10M.
const POINTS_KEPT: usize = 1_000_000;

/// One listing of a run: its document and what the figures need of it.
#[derive(Debug, Clone, Copy)]
struct RunPoint {
    doc: DocId,
    price: Option<u64>,
    usd: Option<u64>,
    /// Its currency's ordinal in the segment's currency column.
    currency: Option<u64>,
}

/// A model's listings of one status in one segment, deleted ones included.
#[derive(Debug)]
struct ModelRun(Vec<RunPoint>);

impl ModelRun {
    /// The documents of `term` in `segment` and their prices, read once in document order.
    fn read(
        segment: &SegmentReader,
        term: &Term,
        columns: &SegmentColumns,
    ) -> tantivy::Result<Self> {
        let docs = docs_with(segment, term)?;
        let (mut prices, mut usd, mut currencies): (Values, Values, Values) = Default::default();
        DensePrices::new(&columns.own).read(&docs, &mut prices);
        DensePrices::new(&columns.usd).read(&docs, &mut usd);
        currencies.resize(docs.len(), None);
        if let Some(column) = currency_column(segment)? {
            read_ords(column.ords(), &docs, &mut currencies);
        }
        let points = docs
            .iter()
            .zip(prices.iter().zip(&usd).zip(&currencies))
            .map(|(&doc, ((&price, &usd), &currency))| RunPoint {
                doc,
                price,
                usd,
                currency,
            })
            .collect();
        Ok(ModelRun(points))
    }

    /// Adds the run's live listings to `out`; `wanted` is the ordinal of the currency whose
    /// own prices are asked for, if it occurs in the segment.
    fn add_to(&self, alive: Option<&AliveBitSet>, wanted: Option<u64>, out: &mut PricedListings) {
        let live = self
            .0
            .iter()
            .filter(|point| alive.is_none_or(|alive| alive.is_alive(point.doc)));
        for point in live {
            add_listing(out, point.price, point.usd, point.currency, wanted);
        }
    }
}

impl SegmentPart for ModelRun {
    fn units(&self) -> usize {
        self.0.len()
    }
}

/// The runs kept between requests, by segment and term: see the module's doc.
pub(super) struct RunCache {
    kept: SegmentParts<Vec<u8>, ModelRun>,
    min_len: usize,
}

impl RunCache {
    /// Keeps the runs of at least `min_len` listings.
    pub(super) fn new(min_len: usize) -> RunCache {
        RunCache {
            kept: SegmentParts::holding_at_most(POINTS_KEPT),
            min_len,
        }
    }

    /// The listings of `term` in `searcher` and the prices of the priced ones, `own` for those
    /// whose currency column holds `currency_key`: what the price collector gives for the same
    /// term, in the same order. `columns` are the searcher's columns, by segment.
    pub(super) fn prices(
        &self,
        searcher: &Searcher,
        columns: &[Arc<SegmentColumns>],
        term: &Term,
        currency_key: &str,
    ) -> tantivy::Result<PricedListings> {
        let mut out = PricedListings::default();
        for (segment, columns) in searcher.segment_readers().iter().zip(columns) {
            let run = self.run(searcher, segment, term, columns)?;
            let wanted = currency_ord(currency_column(segment)?.as_ref(), currency_key)?;
            run.add_to(segment.alive_bitset(), wanted, &mut out);
        }
        Ok(out)
    }

    /// Reads and keeps, in every segment, the runs of the terms of `field` that `wanted`
    /// accepts and that are long enough to keep, while there is room: done once at start, so
    /// that a large model's first request finds its runs too. How many runs were kept.
    pub(super) fn keep_large(
        &self,
        searcher: &Searcher,
        columns: &[Arc<SegmentColumns>],
        field: Field,
        wanted: impl Fn(&str) -> bool,
    ) -> tantivy::Result<usize> {
        let mut kept = 0;
        for (segment, columns) in searcher.segment_readers().iter().zip(columns) {
            let inverted = segment.inverted_index(field)?;
            let mut terms = inverted.terms().stream()?;
            while terms.advance() {
                let listings = terms.value().doc_freq as usize;
                let Ok(text) = std::str::from_utf8(terms.key()) else {
                    continue;
                };
                if listings < self.min_len || !wanted(text) {
                    continue;
                }
                if !self.kept.has_room_for(listings) {
                    return Ok(kept);
                }
                self.run(
                    searcher,
                    segment,
                    &Term::from_field_text(field, text),
                    columns,
                )?;
                kept += 1;
            }
        }
        Ok(kept)
    }

    fn run(
        &self,
        searcher: &Searcher,
        segment: &SegmentReader,
        term: &Term,
        columns: &SegmentColumns,
    ) -> tantivy::Result<Arc<ModelRun>> {
        self.kept.get_or_make(
            searcher,
            segment.segment_id(),
            term.serialized_value_bytes().to_vec(),
            || ModelRun::read(segment, term, columns),
            |run| run.0.len() >= self.min_len,
        )
    }

    /// How many runs are kept.
    #[cfg(test)]
    pub(super) fn kept_runs(&self) -> usize {
        self.kept.len()
    }
}
