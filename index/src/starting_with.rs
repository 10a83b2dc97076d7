//! The documents holding a term that starts with a prefix few terms start with: a catalogue
//! reference prefix too long to be indexed as a term of its own. tantivy's range query marks
//! its documents in a bitset of the whole segment and then walks all of it, even when no term
//! starts with the prefix (most words of a text search), which slowed two- and three-word
//! searches (docs/decisions.md, D-42). This reads the few postings into a sorted list.

use tantivy::postings::TermInfo;
use tantivy::query::{ConstScorer, EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::termdict::TermDictionary;
use tantivy::{DocId, DocSet, Score, Searcher, SegmentReader, TantivyError, Term, TERMINATED};

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
        let mut docs = Vec::new();
        each_term_starting_with(inverted.terms(), &self.prefix, |_, info| {
            let mut postings =
                inverted.read_postings_from_terminfo(info, IndexRecordOption::Basic)?;
            let mut doc = postings.doc();
            while doc != TERMINATED {
                docs.push(doc);
                doc = postings.advance();
            }
            Ok(())
        })?;
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

/// The terms of `field` that start with `prefix` in any segment of `searcher`, each once, in
/// byte order: the terms whose postings [`StartingWith`] reads.
pub(crate) fn terms_starting_with(
    searcher: &Searcher,
    field: Field,
    prefix: &str,
) -> tantivy::Result<Vec<Term>> {
    let mut found = std::collections::BTreeSet::new();
    for reader in searcher.segment_readers() {
        let inverted = reader.inverted_index(field)?;
        each_term_starting_with(inverted.terms(), prefix, |text, _| {
            found.insert(text.to_owned());
            Ok(())
        })?;
    }
    Ok(found
        .iter()
        .map(|text| Term::from_field_text(field, text))
        .collect())
}

/// Calls `each` with every term of `terms` that starts with `prefix`, in order.
fn each_term_starting_with(
    terms: &TermDictionary,
    prefix: &str,
    mut each: impl FnMut(&str, &TermInfo) -> tantivy::Result<()>,
) -> tantivy::Result<()> {
    let mut stream = terms.range().ge(prefix.as_bytes()).into_stream()?;
    while stream.advance() && stream.key().starts_with(prefix.as_bytes()) {
        // A text field's terms are its tokens' UTF-8.
        if let Ok(text) = std::str::from_utf8(stream.key()) {
            each(text, stream.value())?;
        }
    }
    Ok(())
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
