//! The documents of one listing id, found by a binary search of the id column: what a
//! replaced listing's old document is deleted by. Segments keep their documents in ascending
//! id order (the index is sorted by id), so no id is indexed as a term: one term of its own
//! per listing was about a third of what indexing a listing cost (docs/decisions.md, D-41).

use super::names;
use tantivy::columnar::Column;
use tantivy::query::{ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};

/// The documents whose id is the listing's (more than one only while a replaced one awaits
/// its delete).
#[derive(Debug, Clone, Copy)]
pub(super) struct ListingById(pub u64);

impl Query for ListingById {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(*self))
    }
}

impl Weight for ListingById {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let ids = reader.fast_fields().u64(names::ID)?;
        let docs = docs_with_id(&ids, reader.max_doc(), self.0);
        Ok(Box::new(ConstScorer::new(docs, boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let ids = reader.fast_fields().u64(names::ID)?;
        if ids.first(doc) == Some(self.0) {
            Ok(Explanation::new("ListingById", 1.0))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} is not listing {}",
                self.0
            )))
        }
    }
}

/// The run of documents holding `id` in a segment of `max_doc` documents sorted by id.
fn docs_with_id(ids: &Column<u64>, max_doc: DocId, id: u64) -> DocRun {
    let id_of = |doc: DocId| ids.first(doc).unwrap_or(u64::MAX);
    let (mut low, mut high) = (0, max_doc);
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
    DocRun { doc: low, end }
}

/// Consecutive documents `doc..end`.
struct DocRun {
    doc: DocId,
    end: DocId,
}

impl DocSet for DocRun {
    fn advance(&mut self) -> DocId {
        self.doc = (self.doc + 1).min(self.end);
        self.doc()
    }

    fn doc(&self) -> DocId {
        if self.doc < self.end {
            self.doc
        } else {
            TERMINATED
        }
    }

    fn size_hint(&self) -> u32 {
        self.end.saturating_sub(self.doc)
    }
}

#[cfg(test)]
mod tests {
    use crate::query::TextQuery;
    use crate::{ListingDoc, ListingIndex, ListingQuery, ListingSort};

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
}
