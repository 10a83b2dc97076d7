//! The prices of one model's listings of one status, what `GET /listings/stats` reads, kept
//! per segment for the models with many. A segment's documents and columns never change, only
//! which of them are deleted: a run read once serves every later request (the deletes applied
//! as it is read) until the segment is merged away, so after a commit only new segments are
//! read, and the hot model's figures cost one pass over a contiguous run, not four columns. A
//! run keeps each listing's [`GroupCodes`] too, so the figures split by condition or by box and
//! papers come from the same kept run.

use super::collect::{
    add_listing, currency_column, currency_ord, docs_with, read_values, DensePrices,
    SegmentColumns, Values,
};
use super::group_codes::GroupCodes;
use super::{GroupedPrices, PriceGrouping, PricedListings};
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
    /// Two bytes that fit in the padding after `doc`: a point takes no more room with them.
    groups: GroupCodes,
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
            read_values(column.ords(), &docs, &mut currencies);
        }
        let mut groups: Values = vec![None; docs.len()];
        read_values(&columns.groups, &docs, &mut groups);
        let points = docs
            .iter()
            .zip(prices.iter().zip(&usd).zip(&currencies))
            .zip(&groups)
            .map(|((&doc, ((&price, &usd), &currency)), &groups)| RunPoint {
                doc,
                price,
                usd,
                currency,
                groups: GroupCodes::from_column(groups),
            })
            .collect();
        Ok(ModelRun(points))
    }

    /// The run's listings not deleted since it was read.
    fn live<'a>(&'a self, alive: Option<&'a AliveBitSet>) -> impl Iterator<Item = &'a RunPoint> {
        self.0
            .iter()
            .filter(move |point| alive.is_none_or(|alive| alive.is_alive(point.doc)))
    }

    /// Adds the run's live listings to `out`; `wanted` is the ordinal of the currency whose
    /// own prices are asked for, if it occurs in the segment.
    fn add_to(&self, alive: Option<&AliveBitSet>, wanted: Option<u64>, out: &mut PricedListings) {
        for point in self.live(alive) {
            add_listing(out, point.price, point.usd, point.currency, wanted);
        }
    }

    /// [`ModelRun::add_to`], each listing into its group of `grouping`.
    fn add_grouped_to(
        &self,
        alive: Option<&AliveBitSet>,
        wanted: Option<u64>,
        grouping: PriceGrouping,
        out: &mut GroupedPrices,
    ) {
        for point in self.live(alive) {
            let group = out.entry(point.groups.code(grouping)).or_default();
            add_listing(group, point.price, point.usd, point.currency, wanted);
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
        self.each_run(
            searcher,
            columns,
            term,
            currency_key,
            |run, alive, wanted| run.add_to(alive, wanted, &mut out),
        )?;
        Ok(out)
    }

    /// [`RunCache::prices`] split by `grouping`: the same listings, each in its group.
    pub(super) fn grouped_prices(
        &self,
        searcher: &Searcher,
        columns: &[Arc<SegmentColumns>],
        term: &Term,
        currency_key: &str,
        grouping: PriceGrouping,
    ) -> tantivy::Result<GroupedPrices> {
        let mut out = GroupedPrices::new();
        self.each_run(
            searcher,
            columns,
            term,
            currency_key,
            |run, alive, wanted| run.add_grouped_to(alive, wanted, grouping, &mut out),
        )?;
        Ok(out)
    }

    /// Gives `visit` the run of `term` in each segment, with the segment's live documents and
    /// the ordinal of `currency_key` in it, if it occurs.
    fn each_run(
        &self,
        searcher: &Searcher,
        columns: &[Arc<SegmentColumns>],
        term: &Term,
        currency_key: &str,
        mut visit: impl FnMut(&ModelRun, Option<&AliveBitSet>, Option<u64>),
    ) -> tantivy::Result<()> {
        for (segment, columns) in searcher.segment_readers().iter().zip(columns) {
            let run = self.run(searcher, segment, term, columns)?;
            let wanted = currency_ord(currency_column(segment)?.as_ref(), currency_key)?;
            visit(&run, segment.alive_bitset(), wanted);
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`POINTS_KEPT`]'s room was worked out for: the group codes cost a kept run nothing.
    #[test]
    fn a_point_with_its_group_codes_is_as_large_as_without() {
        assert_eq!(std::mem::size_of::<RunPoint>(), 56);
    }
}
