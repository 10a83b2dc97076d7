//! A model's name and references as the catalogue index's columns hold them, read by id: what
//! the back office scores a group's candidates on, so that only the few it shows are read from
//! the store (docs/decisions.md, D-181).

use crate::collector::terms_of;
use crate::query::DocKind;
use crate::schema::{self, names, Fields};
use crate::IndexResult;
use std::collections::HashMap;
use tantivy::columnar::StrColumn;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Searcher, SegmentReader, Term, TERMINATED};

/// A model's words as the index holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelText {
    pub id: u64,
    /// Its name, lowercased.
    pub name: String,
    /// Its primary and alternate references, normalised, in no particular order.
    pub references: Vec<String>,
}

/// The texts of the models `ids` that the index holds, in no particular order.
pub fn read(searcher: &Searcher, fields: &Fields, ids: &[u64]) -> IndexResult<Vec<ModelText>> {
    let mut texts = Vec::with_capacity(ids.len());
    for segment in searcher.segment_readers() {
        let docs = live_docs(segment, fields, ids)?;
        if docs.is_empty() {
            continue;
        }
        let fast = segment.fast_fields();
        let (Some(names), Some(references)) =
            (fast.str(names::NAME_SORT)?, fast.str(names::REFERENCES)?)
        else {
            continue;
        };
        texts.extend(texts_of(&names, &references, docs));
    }
    Ok(texts)
}

/// The segment's live documents of the models `ids`, each with its id.
fn live_docs(
    segment: &SegmentReader,
    fields: &Fields,
    ids: &[u64],
) -> IndexResult<Vec<(u64, DocId)>> {
    let keys = segment.inverted_index(fields.doc_key)?;
    let mut docs = Vec::new();
    for &id in ids {
        let key = Term::from_field_u64(fields.doc_key, schema::doc_key(DocKind::Model, id));
        let Some(mut postings) = keys.read_postings(&key, IndexRecordOption::Basic)? else {
            continue;
        };
        let mut doc = postings.doc();
        while doc != TERMINATED && segment.is_deleted(doc) {
            doc = postings.advance();
        }
        if doc != TERMINATED {
            docs.push((id, doc));
        }
    }
    Ok(docs)
}

/// The texts of `docs`, each column's terms read in one ordered pass.
fn texts_of(names: &StrColumn, references: &StrColumn, docs: Vec<(u64, DocId)>) -> Vec<ModelText> {
    let ords = |column: &StrColumn| -> Vec<Vec<u64>> {
        docs.iter()
            .map(|&(_, doc)| column.term_ords(doc).collect())
            .collect()
    };
    let (name_ords, reference_ords) = (ords(names), ords(references));
    let name_texts = terms_of(names, name_ords.iter().flatten().copied().collect());
    let reference_texts = terms_of(
        references,
        reference_ords.iter().flatten().copied().collect(),
    );
    let text = |texts: &HashMap<u64, String>, ord: &u64| texts.get(ord).cloned();
    docs.iter()
        .zip(name_ords.iter().zip(&reference_ords))
        .map(|(&(id, _), (name, refs))| ModelText {
            id,
            name: name
                .first()
                .and_then(|ord| text(&name_texts, ord))
                .unwrap_or_default(),
            references: refs
                .iter()
                .filter_map(|ord| text(&reference_texts, ord))
                .collect(),
        })
        .collect()
}
