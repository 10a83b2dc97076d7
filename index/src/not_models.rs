//! The documents of each segment that are not live models (its brands, series and deleted
//! documents), kept per segment and delete state. The first page by name and the facets of
//! every model skip them; listing a segment's deleted documents reads every document's bit,
//! so it is done once a commit, not once a request (docs/decisions.md, D-52).

use crate::query::{for_each_doc, DocKind};
use crate::schema::Fields;
use crate::segment_cache::SegmentCache;
use std::sync::Arc;
use tantivy::index::SegmentId;
use tantivy::{DocId, Opstamp, Searcher, SegmentReader, Term};

/// One segment's documents that are not live models, each list ascending.
#[derive(Debug)]
pub(crate) struct NotModels {
    /// Its deleted documents, of any kind.
    pub deleted: Vec<DocId>,
    /// Its brands and series, and its deleted documents.
    pub not_live_models: Vec<DocId>,
    /// The other documents, its live models, as bits (one `u64` a machine word).
    live_models: Vec<u64>,
}

/// A segment's documents are fixed; its deletes are named by the opstamp of their commit.
type SegmentState = (SegmentId, Option<Opstamp>);

/// [`NotModels`] of the segments last asked for.
#[derive(Default)]
pub(crate) struct NotModelsCache {
    kept: SegmentCache<SegmentState, NotModels>,
}

impl NotModelsCache {
    /// The [`NotModels`] of each of `searcher`'s segments, in its order. Those of segments no
    /// longer searched are dropped.
    pub(crate) fn of(
        &self,
        searcher: &Searcher,
        fields: &Fields,
    ) -> tantivy::Result<Vec<Arc<NotModels>>> {
        self.kept.of(
            searcher,
            |segment| (segment.segment_id(), segment.delete_opstamp()),
            |segment| NotModels::of(segment, fields),
        )
    }
}

impl NotModels {
    fn of(segment: &SegmentReader, fields: &Fields) -> tantivy::Result<NotModels> {
        let deleted: Vec<DocId> = match segment.alive_bitset() {
            Some(alive) if segment.num_deleted_docs() > 0 => (0..segment.max_doc())
                .filter(|&doc| alive.is_deleted(doc))
                .collect(),
            _ => Vec::new(),
        };
        let mut not_live_models = deleted.clone();
        for kind in [DocKind::Brand, DocKind::Series] {
            let term = Term::from_field_u64(fields.kind, kind as u64);
            for_each_doc(segment, &term, |doc| not_live_models.push(doc))?;
        }
        // Three ascending runs: the stable sort finds and merges them in one pass.
        not_live_models.sort();
        not_live_models.dedup();
        Ok(NotModels {
            live_models: live_models(segment.max_doc(), &not_live_models),
            deleted,
            not_live_models,
        })
    }

    /// Its live models as bits, one `u64` a machine word: the typo tier keeps only those.
    pub(crate) fn live_models(&self) -> &[u64] {
        &self.live_models
    }
}

/// The bits of the documents below `max_doc` but those of `not_live`.
fn live_models(max_doc: DocId, not_live: &[DocId]) -> Vec<u64> {
    let mut bits = vec![u64::MAX; (max_doc as usize).div_ceil(64)];
    if let Some(last) = bits.last_mut() {
        let used = max_doc % 64;
        if used != 0 {
            *last = (1 << used) - 1;
        }
    }
    for &doc in not_live {
        if let Some(word) = bits.get_mut(doc as usize / 64) {
            *word &= !(1 << (doc % 64));
        }
    }
    bits
}
