//! The documents of a set of listing ids, found by binary searches of the id column: what
//! replaced listings' old documents are deleted by, one query for a write's set (D-250). Segments keep their documents in ascending
//! id order (the index is sorted by id), so no id is indexed as a term: one term of its own
//! per listing was about a third of what indexing a listing cost (docs/decisions.md, D-41).
//! The deletes of one write share each segment's opened id column ([`IdColumns`]): opening it
//! decodes the whole column's block table, which per delete made a merge moving thousands of
//! listings spend seconds (D-215).

use super::names;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use tantivy::columnar::Column;
use tantivy::index::SegmentId;
use tantivy::query::{ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};

/// Each segment's id column, opened once for every delete of one write.
#[derive(Clone)]
pub(super) struct IdColumns(Arc<KeptIdColumns>);

struct KeptIdColumns {
    columns: Mutex<HashMap<SegmentId, Column<u64>>>,
    /// Segments kept at most: a long load's merges retire segments, whose columns (and files)
    /// would otherwise be held to its end.
    most: usize,
    /// Columns opened, for the tests.
    opened: std::sync::atomic::AtomicUsize,
}

/// Segments whose columns one write keeps at most.
const MAX_KEPT_SEGMENTS: usize = 64;

impl Default for IdColumns {
    fn default() -> IdColumns {
        IdColumns::holding_at_most(MAX_KEPT_SEGMENTS)
    }
}

impl IdColumns {
    fn holding_at_most(most: usize) -> IdColumns {
        IdColumns(Arc::new(KeptIdColumns {
            columns: Mutex::default(),
            most: most.max(1),
            opened: Default::default(),
        }))
    }

    fn of(&self, reader: &SegmentReader) -> tantivy::Result<Column<u64>> {
        let kept = &self.0;
        let mut columns = (kept.columns.lock()).unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(column) = columns.get(&reader.segment_id()) {
            return Ok(column.clone());
        }
        if columns.len() >= kept.most {
            columns.clear();
        }
        let column = reader.fast_fields().u64(names::ID)?;
        kept.opened
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        columns.insert(reader.segment_id(), column.clone());
        Ok(column)
    }
}

impl std::fmt::Debug for IdColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IdColumns")
    }
}

/// The documents of a set of listing ids (more than one an id only while a replaced one awaits
/// its delete): one write's replaced listings, deleted by one query. tantivy runs each delete
/// query against every segment, so one query per id cost a scorer per id and segment: writes
/// of 250 listings at random ids into an index of 23 segments spent 12 % of their CPU in those
/// scorers (docs/decisions.md, D-250).
#[derive(Debug, Clone)]
pub(super) struct ListingsByIds {
    /// Ascending, without repeats.
    ids: Arc<[u64]>,
    columns: IdColumns,
}

impl ListingsByIds {
    pub fn new(mut ids: Vec<u64>, columns: IdColumns) -> ListingsByIds {
        ids.sort_unstable();
        ids.dedup();
        ListingsByIds {
            ids: ids.into(),
            columns,
        }
    }
}

impl Query for ListingsByIds {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for ListingsByIds {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let ids = self.columns.of(reader)?;
        let max_doc = reader.max_doc();
        // Only the ids within the segment's range can be in it.
        let first = self.ids.partition_point(|&id| id < ids.min_value());
        let last = self.ids.partition_point(|&id| id <= ids.max_value());
        let mut docs = Vec::new();
        let mut from = 0;
        for &id in &self.ids[first..last.max(first)] {
            let run = docs_with_id(&ids, from, max_doc, id);
            from = run.end;
            docs.extend(run);
        }
        Ok(Box::new(ConstScorer::new(Docs { docs, at: 0 }, boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let ids = self.columns.of(reader)?;
        match ids.first(doc) {
            Some(id) if self.ids.binary_search(&id).is_ok() => {
                Ok(Explanation::new("ListingsByIds", 1.0))
            }
            _ => Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} is none of the listings"
            ))),
        }
    }
}

/// The run of documents holding `id` among documents `from..max_doc` of a segment sorted by id
/// (`from` at or before the run).
fn docs_with_id(ids: &Column<u64>, from: DocId, max_doc: DocId, id: u64) -> Range<DocId> {
    let id_of = |doc: DocId| ids.first(doc).unwrap_or(u64::MAX);
    let (mut low, mut high) = (from, max_doc);
    while low < high {
        let middle = low + (high - low) / 2;
        if id_of(middle) < id {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    let end = (low..max_doc)
        .find(|&doc| id_of(doc) != id)
        .unwrap_or(max_doc);
    low..end
}

/// Documents in ascending order.
struct Docs {
    docs: Vec<DocId>,
    at: usize,
}

impl DocSet for Docs {
    fn advance(&mut self) -> DocId {
        self.at = (self.at + 1).min(self.docs.len());
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.docs.get(self.at).copied().unwrap_or(TERMINATED)
    }

    fn size_hint(&self) -> u32 {
        (self.docs.len() - self.at) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::{IdColumns, ListingsByIds};
    use crate::query::TextQuery;
    use crate::{ListingDoc, ListingIndex, ListingQuery, ListingSort};
    use std::sync::atomic::Ordering;
    use tantivy::query::Weight;
    use tantivy::DocSet;

    fn doc(id: u64, title: &str) -> ListingDoc {
        ListingDoc {
            id,
            title: Some(title.to_owned()),
            ..ListingDoc::default()
        }
    }

    /// The ids of the listings with `word` in their title, oldest first.
    fn titled(index: &ListingIndex, word: &str) -> Vec<u64> {
        let query = ListingQuery {
            text: Some(TextQuery {
                text: word.to_owned(),
                normalized_reference: word.to_owned(),
                typo_tolerance: false,
            }),
            filters: Default::default(),
            sort: ListingSort::Oldest,
            offset: 0,
            limit: 100,
        };
        index.search(&query).expect("search").ids
    }

    /// Replacing documents across segments, in the segment being written, and of ids at either
    /// end of a segment leaves one document per id: the binary search finds each old one.
    #[test]
    fn a_replaced_listing_leaves_one_document_wherever_its_old_one_was() {
        let index = ListingIndex::in_memory().expect("index");
        let first: Vec<ListingDoc> = (1..=50).map(|id| doc(id, "old")).collect();
        index.upsert(&first, 1).expect("first");
        let second: Vec<ListingDoc> = (40..=60).map(|id| doc(id, "older")).collect();
        index.upsert(&second, 2).expect("second");
        let replaced: Vec<ListingDoc> = [1, 25, 45, 50, 60, 61]
            .into_iter()
            .chain([25, 61])
            .map(|id| doc(id, "new"))
            .collect();
        index.upsert(&replaced, 3).expect("replaced");
        assert_eq!(index.len(), 61);
        let mut load = index.load().expect("load");
        for id in [2, 50, 61, 62] {
            load.replace(&doc(id, "loaded")).expect("replace");
        }
        load.commit(&index, 4).expect("commit");
        assert_eq!(index.len(), 62);
        assert_eq!(titled(&index, "new"), [1, 25, 45, 60]);
        assert_eq!(titled(&index, "loaded"), [2, 50, 61, 62]);
        assert_eq!(titled(&index, "older").len(), 21 - 3);
    }

    /// The documents each id's query finds in each segment, with `columns` shared by them all.
    fn found(index: &ListingIndex, ids: &[u64], columns: &IdColumns) -> usize {
        let searcher = index.derived.reader.searcher();
        let mut found = 0;
        for &id in ids {
            for segment in searcher.segment_readers() {
                let query = ListingsByIds::new(vec![id], columns.clone());
                let mut docs = query.scorer(segment, 1.0).expect("scorer");
                while docs.doc() != tantivy::TERMINATED {
                    found += 1;
                    docs.advance();
                }
            }
        }
        found
    }

    /// Listings 1 to 60, written 20 at a time: a segment each.
    fn listings_1_to_60_in_three_writes() -> ListingIndex {
        let index = ListingIndex::in_memory().expect("index");
        for (generation, ids) in [(1..=20), (21..=40), (41..=60)].into_iter().enumerate() {
            let docs: Vec<ListingDoc> = ids.map(|id| doc(id, "watch")).collect();
            index.upsert(&docs, generation as u64 + 1).expect("upsert");
        }
        index
    }

    /// One query for a set of ids finds each id's documents in whichever segment holds them,
    /// at either end of a segment, and none for ids no segment holds or outside a segment's
    /// range.
    #[test]
    fn one_query_finds_the_documents_of_every_id_of_a_set_across_segments() {
        let index = listings_1_to_60_in_three_writes();
        let searcher = index.derived.reader.searcher();
        assert!(searcher.segment_readers().len() > 1);
        let wanted = vec![61, 40, 1, 20, 21, 33, 0, 60, 33, 1_000];
        let query = ListingsByIds::new(wanted, IdColumns::default());
        let mut found = Vec::new();
        for segment in searcher.segment_readers() {
            let ids = segment.fast_fields().u64(super::names::ID).expect("ids");
            let mut docs = query.scorer(segment, 1.0).expect("scorer");
            while docs.doc() != tantivy::TERMINATED {
                found.extend(ids.first(docs.doc()));
                docs.advance();
            }
        }
        found.sort_unstable();
        assert_eq!(found, [1, 20, 21, 33, 40, 60]);
    }

    /// The deletes of one write open each segment's id column once, whatever their number,
    /// and a write keeping fewer segments than it meets still finds every id.
    #[test]
    fn one_writes_deletes_open_each_segments_id_column_once() {
        let index = listings_1_to_60_in_three_writes();
        let segments = index.derived.reader.searcher().segment_readers().len();
        assert!(segments > 1, "the index has {segments} segment");
        let ids: Vec<u64> = (1..=60).collect();

        let shared = IdColumns::default();
        assert_eq!(found(&index, &ids, &shared), 60);
        assert_eq!(shared.0.opened.load(Ordering::Relaxed), segments);

        let fewer = IdColumns::holding_at_most(1);
        assert_eq!(found(&index, &ids, &fewer), 60);
        assert!(fewer.0.columns.lock().expect("lock").len() <= 1);
    }
}
