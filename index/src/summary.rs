//! What every brand and series list item shows besides its record: per brand its series and
//! model counts and its lead model with a FRONT picture, per series its model count and lead
//! model. Asked per item, these were two or three searches each (~150 for a page of 50); here
//! they are one pass over the live model and series documents of a searcher, kept until the
//! reader reloads ([`SummaryCache`]).
//!
//! A lead is ranked by [`SortOrder::Lead`]'s own key reader ([`NumberKey`]) with the id as
//! tie-break, as [`crate::collector::TopIds`] ranks it, so a summary's lead is the model
//! [`crate::CatalogueIndex::lead_model`] finds.

use crate::collector::{NumberKey, SortKey};
use crate::query::{DocKind, SortOrder};
use crate::schema::{names, Fields};
use crate::IndexResult;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use tantivy::columnar::Column;
use tantivy::postings::SegmentPostings;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Searcher, SegmentReader, Term, TERMINATED};

/// A brand's counts and lead model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BrandSummary {
    pub series_count: usize,
    pub model_count: usize,
    /// Its model with a FRONT picture that ranks first by [`SortOrder::Lead`].
    pub lead_model: Option<u64>,
}

/// A series' model count and lead model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeriesSummary {
    pub model_count: usize,
    /// Its model that ranks first by [`SortOrder::Lead`].
    pub lead_model: Option<u64>,
}

/// The summaries of every brand and series of one searcher generation.
#[derive(Debug, Default)]
pub struct GroupSummaries {
    brands: HashMap<u64, BrandSummary>,
    series: HashMap<u64, SeriesSummary>,
}

impl GroupSummaries {
    /// The brand's summary; zeros for a brand without documents.
    pub fn brand(&self, id: u64) -> BrandSummary {
        self.brands.get(&id).copied().unwrap_or_default()
    }

    /// The series' summary; zeros for a series without models.
    pub fn series(&self, id: u64) -> SeriesSummary {
        self.series.get(&id).copied().unwrap_or_default()
    }

    /// One pass over the live documents of every segment of `searcher`.
    pub(crate) fn of(searcher: &Searcher, fields: &Fields) -> IndexResult<GroupSummaries> {
        let mut tally = Tally::default();
        for segment in searcher.segment_readers() {
            tally.add_segment(segment, fields)?;
        }
        Ok(tally.finish())
    }
}

/// A lead candidate's rank: its [`NumberKey`], then its id. Smaller ranks first.
type LeadRank = (u64, u64, u64);

fn offer(lead: &mut Option<LeadRank>, rank: LeadRank) {
    if lead.is_none_or(|best| rank < best) {
        *lead = Some(rank);
    }
}

#[derive(Default)]
struct Group {
    series_count: usize,
    model_count: usize,
    lead: Option<LeadRank>,
}

impl Group {
    fn lead_model(&self) -> Option<u64> {
        self.lead.map(|(_, _, id)| id)
    }
}

#[derive(Default)]
struct Tally {
    brands: HashMap<u64, Group>,
    series: HashMap<u64, Group>,
}

impl Tally {
    fn add_segment(&mut self, segment: &SegmentReader, fields: &Fields) -> tantivy::Result<()> {
        let fast = segment.fast_fields();
        let brand_ids = fast.u64(names::BRAND_ID)?;
        let series_ids = fast.u64(names::SERIES_ID)?;
        let ids = fast.u64(names::ID)?;
        let lead = lead_key(segment)?;
        for_each_live(segment, fields.kind, DocKind::Series as u64, |doc| {
            if let Some(brand) = brand_ids.first(doc) {
                self.brands.entry(brand).or_default().series_count += 1;
            }
        })?;
        let mut front = Postings::of(segment, fields.has_front_picture, 1)?;
        for_each_live(segment, fields.kind, DocKind::Model as u64, |doc| {
            let (primary, secondary) = lead.of(doc);
            // A model without id ranks last, as in the collector.
            let rank = (primary, secondary, ids.first(doc).unwrap_or(u64::MAX));
            let has_front = front.holds(doc);
            self.add_model(&brand_ids, &series_ids, doc, rank, has_front);
        })?;
        Ok(())
    }

    fn add_model(
        &mut self,
        brand_ids: &Column<u64>,
        series_ids: &Column<u64>,
        doc: DocId,
        rank: LeadRank,
        has_front: bool,
    ) {
        if let Some(brand) = brand_ids.first(doc) {
            let group = self.brands.entry(brand).or_default();
            group.model_count += 1;
            // A brand's picture comes from a model that has one.
            if has_front {
                offer(&mut group.lead, rank);
            }
        }
        if let Some(series) = series_ids.first(doc) {
            let group = self.series.entry(series).or_default();
            group.model_count += 1;
            offer(&mut group.lead, rank);
        }
    }

    fn finish(self) -> GroupSummaries {
        let brands = self.brands.into_iter().map(|(id, group)| {
            let summary = BrandSummary {
                series_count: group.series_count,
                model_count: group.model_count,
                lead_model: group.lead_model(),
            };
            (id, summary)
        });
        let series = self.series.into_iter().map(|(id, group)| {
            let summary = SeriesSummary {
                model_count: group.model_count,
                lead_model: group.lead_model(),
            };
            (id, summary)
        });
        GroupSummaries {
            brands: brands.collect(),
            series: series.collect(),
        }
    }
}

/// The reader of [`SortOrder::Lead`]'s key, taken from the order itself so that the two can
/// never drift apart.
fn lead_key(segment: &SegmentReader) -> tantivy::Result<NumberKey> {
    match SortOrder::Lead.key() {
        SortKey::Number {
            primary,
            secondary,
            descending,
        } => NumberKey::open(segment.fast_fields(), primary, secondary, descending),
        other => Err(tantivy::TantivyError::InternalError(format!(
            "the lead order ranks by {other:?}, not by numbers"
        ))),
    }
}

/// Calls `visit` on each live (not deleted) document of `segment` holding `value` in `field`,
/// in document order.
fn for_each_live(
    segment: &SegmentReader,
    field: Field,
    value: u64,
    mut visit: impl FnMut(DocId),
) -> tantivy::Result<()> {
    let Postings(Some(mut postings)) = Postings::of(segment, field, value)? else {
        return Ok(());
    };
    let mut doc = postings.doc();
    while doc != TERMINATED {
        if !segment.is_deleted(doc) {
            visit(doc);
        }
        doc = postings.advance();
    }
    Ok(())
}

/// The documents of one term of a segment; `None` when no document holds it.
struct Postings(Option<SegmentPostings>);

impl Postings {
    fn of(segment: &SegmentReader, field: Field, value: u64) -> tantivy::Result<Postings> {
        let term = Term::from_field_u64(field, value);
        let postings = segment
            .inverted_index(field)?
            .read_postings(&term, IndexRecordOption::Basic)?;
        Ok(Postings(postings))
    }

    /// Whether `doc` holds the term. Asked in ascending `doc` order, so the postings only move
    /// forward: one walk for the whole segment.
    fn holds(&mut self, doc: DocId) -> bool {
        let Some(postings) = &mut self.0 else {
            return false;
        };
        if postings.doc() < doc {
            postings.seek(doc);
        }
        postings.doc() == doc
    }
}

/// The summaries of the newest searcher generation asked for. A reload (every commit) makes a
/// new generation, whose summaries are built again, so they are never stale; one build at a
/// time, and a build is never started twice for one generation.
#[derive(Default)]
pub(crate) struct SummaryCache {
    latest: RwLock<Option<(u64, Arc<GroupSummaries>)>>,
    building: Mutex<()>,
    /// Set while a background build runs: requests meanwhile search instead of waiting.
    in_background: AtomicBool,
}

impl SummaryCache {
    /// The summaries of searcher generation `generation` (or of a newer one), built by `build`
    /// when none is kept; a request arriving during a build waits for it.
    pub(crate) fn get_or_build(
        &self,
        generation: u64,
        build: impl FnOnce() -> IndexResult<GroupSummaries>,
    ) -> IndexResult<Arc<GroupSummaries>> {
        if let Some(found) = self.at_least(generation) {
            return Ok(found);
        }
        let _building = self.building.lock().unwrap_or_else(PoisonError::into_inner);
        // Another request may have built it while this one waited.
        if let Some(found) = self.at_least(generation) {
            return Ok(found);
        }
        let built = Arc::new(build()?);
        self.keep(generation, built.clone());
        Ok(built)
    }

    /// Starts building the summaries of `generation` on a thread of their own, unless a
    /// background build is under way (it will be followed by another when a request finds its
    /// result already behind).
    pub(crate) fn build_in_background(
        self: &Arc<Self>,
        generation: u64,
        build: impl FnOnce() -> IndexResult<GroupSummaries> + Send + 'static,
    ) {
        if self.in_background.swap(true, Ordering::AcqRel) {
            return;
        }
        let cache = Arc::clone(self);
        let started = std::thread::Builder::new()
            .name("group-summaries".into())
            .spawn(move || {
                if let Err(error) = cache.get_or_build(generation, build) {
                    tracing::warn!(%error, "building the brand and series summaries failed");
                }
                cache.in_background.store(false, Ordering::Release);
            });
        if let Err(error) = started {
            tracing::warn!(%error, "could not start building the brand and series summaries");
            self.in_background.store(false, Ordering::Release);
        }
    }

    /// Keeps `built` unless newer summaries are kept: generations only grow, and an older
    /// searcher's summaries never replace a newer one's.
    fn keep(&self, generation: u64, built: Arc<GroupSummaries>) {
        let mut latest = self.latest.write().unwrap_or_else(PoisonError::into_inner);
        if latest.as_ref().is_none_or(|(kept, _)| *kept < generation) {
            *latest = Some((generation, built));
        }
    }

    /// The kept summaries when they are of `generation` or a newer one: a newer searcher saw
    /// every commit this one saw.
    pub(crate) fn at_least(&self, generation: u64) -> Option<Arc<GroupSummaries>> {
        let latest = self.latest.read().unwrap_or_else(PoisonError::into_inner);
        latest
            .as_ref()
            .filter(|(kept, _)| *kept >= generation)
            .map(|(_, summaries)| summaries.clone())
    }
}

#[cfg(test)]
mod tests;
