//! `catalogue-index`: the tantivy side of the watch catalogue. Brands, series and models are
//! documents of one index; every search, filter, sort, stat and sitemap page is answered here
//! as ids plus totals, and the caller reads the records from its store.
//!
//! The crate knows nothing of the store: callers hand it plain documents ([`BrandDoc`],
//! [`SeriesDoc`], [`ModelDoc`]) with references already normalised, and get ids back.

mod collector;
mod docs;
mod query;
mod schema;
mod tokenizer;

pub use collector::CatalogueStats;
pub use docs::{BrandDoc, CatalogueDoc, ModelDoc, SeriesDoc};
pub use query::{DocKind, Filters, SearchRequest, SortOrder, TextQuery};
pub use tokenizer::{ReferencePrefixTokenizer, MIN_REFERENCE_PREFIX};

use collector::{StatsCollector, TopIds};
use rayon::prelude::*;
use schema::Fields;
use std::path::Path;
use tantivy::directory::MmapDirectory;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument};

/// Failures of the index layer.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("search index")]
    Tantivy(#[from] tantivy::TantivyError),
    #[error("search index directory")]
    Directory(#[from] tantivy::directory::error::OpenDirectoryError),
    #[error("search index I/O")]
    Io(#[from] std::io::Error),
}

/// Result alias of the index layer.
pub type IndexResult<T> = Result<T, IndexError>;

/// One page of matching ids, in order, and how many documents matched in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hits {
    pub ids: Vec<u64>,
    pub total: usize,
}

/// The catalogue index: open once, share between threads.
pub struct CatalogueIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

/// Indexing memory per writer thread; tantivy needs at least 15 MB.
const WRITER_BYTES_PER_THREAD: usize = 128 << 20;

impl CatalogueIndex {
    /// Opens the index in `dir`, creating it (or recreating it, when it was written with another
    /// schema: it is derived data) as needed. A recreated index has no generation.
    pub fn open(dir: &Path) -> IndexResult<CatalogueIndex> {
        std::fs::create_dir_all(dir)?;
        let (schema, fields) = schema::build();
        let exists = Index::exists(&MmapDirectory::open(dir)?).unwrap_or(false);
        let index = match exists.then(|| Index::open_in_dir(dir)) {
            None => Index::create_in_dir(dir, schema)?,
            Some(Ok(index)) if index.schema() == schema => index,
            Some(_) => {
                tracing::warn!(dir = %dir.display(), "search index unreadable or of another schema; recreating it");
                std::fs::remove_dir_all(dir)?;
                std::fs::create_dir_all(dir)?;
                Index::create_in_dir(dir, schema)?
            }
        };
        Self::from_index(index, fields)
    }

    /// An index in memory, for tests and benchmarks.
    pub fn in_memory() -> IndexResult<CatalogueIndex> {
        let (schema, fields) = schema::build();
        Self::from_index(Index::create_in_ram(schema), fields)
    }

    fn from_index(index: Index, fields: Fields) -> IndexResult<CatalogueIndex> {
        tokenizer::register(&index);
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(CatalogueIndex {
            index,
            reader,
            fields,
        })
    }

    /// The store generation the last commit reflects; `None` for an index never built.
    pub fn generation(&self) -> IndexResult<Option<u64>> {
        let metas = self.index.load_metas()?;
        Ok(metas.payload.and_then(|p| p.parse().ok()))
    }

    /// Replaces every document with `docs` (built in parallel by the caller's rayon iterator)
    /// and commits with `generation` as payload. Returns the number of documents indexed.
    pub fn rebuild(
        &self,
        docs: impl ParallelIterator<Item = CatalogueDoc>,
        generation: u64,
    ) -> IndexResult<usize> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut writer: IndexWriter<TantivyDocument> = self
            .index
            .writer_with_num_threads(threads, threads * WRITER_BYTES_PER_THREAD)?;
        writer.delete_all_documents()?;
        let count = docs
            .map(|doc| {
                writer.add_document(self.fields.document(&doc))?;
                Ok(1)
            })
            .try_reduce(|| 0, |a, b| Ok(a + b))
            .map_err(|e: tantivy::TantivyError| e)?;
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&generation.to_string());
        prepared.commit()?;
        writer.wait_merging_threads()?;
        self.reader.reload()?;
        Ok(count)
    }

    /// Ids of one page of `request`, and the total number of matches.
    pub fn search(&self, request: &SearchRequest) -> IndexResult<Hits> {
        let searcher = self.reader.searcher();
        let query = query::build(&self.fields, request);
        let collector = TopIds::new(request.sort, request.offset + request.limit);
        let (ranked, total) = searcher.search(&*query, &collector)?;
        let ids = ranked
            .into_iter()
            .skip(request.offset)
            .take(request.limit)
            .collect();
        Ok(Hits { ids, total })
    }

    /// Figures over the models that `filters` selects.
    pub fn model_stats(&self, filters: &Filters) -> IndexResult<CatalogueStats> {
        let searcher = self.reader.searcher();
        let request = SearchRequest::filtered(DocKind::Model, filters.clone());
        let query = query::build(&self.fields, &request);
        Ok(searcher.search(&*query, &StatsCollector)?)
    }

    /// The model that represents a brand or series: most listings, then newest.
    pub fn lead_model(&self, filters: &Filters) -> IndexResult<Option<u64>> {
        let mut request = SearchRequest::filtered(DocKind::Model, filters.clone());
        request.sort = SortOrder::Lead;
        request.limit = 1;
        Ok(self.search(&request)?.ids.first().copied())
    }

    /// Number of documents of `kind` passing `filters`.
    pub fn count(&self, kind: DocKind, filters: &Filters) -> IndexResult<usize> {
        let request = SearchRequest::filtered(kind, filters.clone());
        let query = query::build(&self.fields, &request);
        Ok(self
            .reader
            .searcher()
            .search(&*query, &tantivy::collector::Count)?)
    }
}

#[cfg(test)]
mod tests;
