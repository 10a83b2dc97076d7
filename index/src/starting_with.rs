//! The documents holding a term that starts with a prefix few terms start with: a catalogue
//! reference prefix too long to be indexed as a term of its own. tantivy's range weight marks
//! its documents in a bitset of the whole segment and then walks all of it, about 0.02 ms a
//! lookup at a million models even when no term starts with the prefix (most words of a text
//! search); this reads the few postings into a sorted list instead.

use tantivy::query::{ConstScorer, EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentReader, TantivyError, TERMINATED};

/// The documents of a field's terms that start with `prefix` (its own term included).
#[derive(Debug, Clone)]
pub(crate) struct StartingWith {
    pub field: Field,
    pub prefix: String,
}

impl Query for StartingWith {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl StartingWith {
    /// The segment's documents holding a term that starts with the prefix, ascending, once each.
    fn docs(&self, reader: &SegmentReader) -> tantivy::Result<Vec<DocId>> {
        let inverted = reader.inverted_index(self.field)?;
        let prefix = self.prefix.as_bytes();
        let mut terms = inverted.terms().range().ge(prefix).into_stream()?;
        let mut docs = Vec::new();
        while terms.advance() && terms.key().starts_with(prefix) {
            let mut postings =
                inverted.read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
            let mut doc = postings.doc();
            while doc != TERMINATED {
                docs.push(doc);
                doc = postings.advance();
            }
        }
        docs.sort_unstable();
        docs.dedup();
        Ok(docs)
    }
}

impl Weight for StartingWith {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let docs = self.docs(reader)?;
        if docs.is_empty() {
            return Ok(Box::new(EmptyScorer));
        }
        Ok(Box::new(ConstScorer::new(
            SortedDocs { docs, at: 0 },
            boost,
        )))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if self.docs(reader)?.binary_search(&doc).is_ok() {
            Ok(Explanation::new("StartingWith", 1.0))
        } else {
            Err(TantivyError::InvalidArgument(format!(
                "document {doc} holds no term starting with {:?}",
                self.prefix
            )))
        }
    }
}

/// Documents from a sorted list (tantivy keeps its own `VecDocSet` to its tests).
struct SortedDocs {
    docs: Vec<DocId>,
    at: usize,
}

impl DocSet for SortedDocs {
    fn advance(&mut self) -> DocId {
        self.at += 1;
        self.doc()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        let rest = self.docs.get(self.at..).unwrap_or_default();
        self.at += rest.partition_point(|&doc| doc < target);
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.docs.get(self.at).copied().unwrap_or(TERMINATED)
    }

    fn size_hint(&self) -> u32 {
        u32::try_from(self.docs.len()).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_docs_advance_and_seek_as_a_doc_set_does() {
        let mut docs = SortedDocs {
            docs: vec![2, 5, 9],
            at: 0,
        };
        assert_eq!(docs.doc(), 2);
        assert_eq!(docs.seek(2), 2, "a target at the current document stays");
        assert_eq!(docs.seek(3), 5);
        assert_eq!(docs.advance(), 9);
        assert_eq!(docs.seek(10), TERMINATED);
        assert_eq!(docs.advance(), TERMINATED);
        let mut none = SortedDocs {
            docs: Vec::new(),
            at: 0,
        };
        assert_eq!(none.doc(), TERMINATED);
        assert_eq!(none.seek(1), TERMINATED);
    }
}
