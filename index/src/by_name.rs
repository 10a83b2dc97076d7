//! The first page of every model by name (`GET /models` with nothing asked, the first page a
//! client sees): read from the sort names' terms in dictionary order, which is the name order,
//! each term's documents in id order, until the page is full, instead of reading every model's
//! name from its column (docs/decisions.md, D-52). The same page as [`crate::collector::TopIds`] by
//! `name_sort`, whose ties also go to the smaller id.

use crate::collector::best_ids;
use crate::not_models::NotModelsCache;
use crate::schema::{names, Fields};
use crate::IndexResult;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Searcher, SegmentReader, TERMINATED};

/// The `k` first models by name (ids) and the number of models; `None` when a segment's names
/// do not account for its models (the page is then read from the columns).
pub(crate) fn first_models(
    searcher: &Searcher,
    fields: &Fields,
    not_models: &NotModelsCache,
    k: usize,
) -> IndexResult<Option<(Vec<u64>, usize)>> {
    let mut ranked: Vec<Named> = Vec::new();
    let mut total = 0;
    let not_models = not_models.of(searcher, fields)?;
    for (segment, not_models) in searcher.segment_readers().iter().zip(not_models) {
        let others = &not_models.not_live_models;
        let Some((first, models)) = segment_first(segment, fields, others, k)? else {
            return Ok(None);
        };
        ranked.extend(first);
        total += models;
    }
    Ok(Some((best_ids(ranked, k), total)))
}

/// A model's sort name (the term's bytes) and id: the order of the page.
type Named = (Vec<u8>, u64);

/// The segment's `k` first models by (name, id) and its number of models.
/// `others` are the segment's documents that are not live models, ascending.
fn segment_first(
    segment: &SegmentReader,
    fields: &Fields,
    others: &[DocId],
    k: usize,
) -> IndexResult<Option<(Vec<Named>, usize)>> {
    let models = segment.max_doc() as usize - others.len();
    let ids = segment.fast_fields().u64(names::ID)?;
    let inverted = segment.inverted_index(fields.name_sort)?;
    let mut terms = inverted.terms().stream()?;
    let mut first = Vec::with_capacity(k.min(models));
    while first.len() < k.min(models) && terms.advance() {
        let mut postings =
            inverted.read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
        while postings.doc() != TERMINATED && first.len() < k {
            let doc = postings.doc();
            if others.binary_search(&doc).is_err() {
                let id = ids.first(doc).unwrap_or(u64::MAX);
                first.push((terms.key().to_vec(), id));
            }
            postings.advance();
        }
    }
    // Every model has one name term; if not, the walk may have missed one that sorts first.
    Ok((first.len() == k.min(models)).then_some((first, models)))
}
