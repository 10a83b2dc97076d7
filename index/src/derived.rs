//! What every index of this crate shares: it is derived data, opened (or recreated when its
//! schema changed), read through a manually reloaded reader, and committed with the store
//! generation it reflects as payload.

use crate::tokenizer;
use crate::{IndexError, IndexResult};
use rayon::prelude::*;
use std::path::Path;
use tantivy::directory::MmapDirectory;
use tantivy::query::Query;
use tantivy::schema::Schema;
use tantivy::{
    Index, IndexReader, IndexSettings, IndexSortByField, IndexWriter, Order, ReloadPolicy,
    TantivyDocument,
};

/// How long a writer waits for a lock another handle still holds ([`Derived::writer`]).
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// Indexing memory per writer thread; tantivy needs at least 15 MB.
const WRITER_BYTES_PER_THREAD: usize = 128 << 20;
/// Writer memory of an incremental update, which touches few documents, on one thread: each
/// thread that receives a document makes a segment, and making one costs more than indexing a
/// few documents (its arenas and the writers of every fast field).
const UPDATE_WRITER_BYTES: usize = 32 << 20;

/// Settings of an index whose segments keep their documents in ascending order of the u64 fast
/// field `field`: a collector that meets documents in that order can break ties by it for free.
pub fn sorted_by(field: &str) -> IndexSettings {
    IndexSettings {
        sort_by_field: Some(IndexSortByField {
            field: field.to_string(),
            order: Order::Asc,
        }),
        ..IndexSettings::default()
    }
}

/// Writer memory of a load's one thread: the two threads' worth a load had before.
const LOAD_WRITER_BYTES: usize = 2 * WRITER_BYTES_PER_THREAD;

/// Writer memory of a rebuild into one segment: a million models' catalogue takes about 1 GB.
const ONE_SEGMENT_BYTES: usize = 1536 << 20;

/// How a rebuild's writer uses the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebuildShape {
    /// Every core, flushing segments that tantivy's policy then merges: for an index too large
    /// to hold in memory at once (the listings').
    EveryCore,
    /// One thread with room for the whole index as one segment, so that no merge follows and
    /// the other cores stay free for the work beside it (the duplicate pass after an import):
    /// a million models imported faster (docs/decisions.md, D-43). A
    /// larger index flushes more segments, merged as with `EveryCore`.
    OneSegment,
}

impl RebuildShape {
    fn writer(self) -> (usize, usize) {
        match self {
            RebuildShape::EveryCore => {
                let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
                (threads, threads * WRITER_BYTES_PER_THREAD)
            }
            RebuildShape::OneSegment => (1, ONE_SEGMENT_BYTES),
        }
    }
}

/// A tantivy index and its reader.
pub struct Derived {
    pub index: Index,
    pub reader: IndexReader,
}

impl Derived {
    /// Opens the index in `dir`, creating it, or recreating it when it was written with another
    /// schema or other settings, or cannot be read: it is derived data. A recreated index has no
    /// generation.
    pub fn open(dir: &Path, schema: Schema, settings: IndexSettings) -> IndexResult<Derived> {
        std::fs::create_dir_all(dir)?;
        let exists = Index::exists(&MmapDirectory::open(dir)?).unwrap_or(false);
        let create = |schema, settings| {
            Index::builder()
                .schema(schema)
                .settings(settings)
                .create_in_dir(dir)
        };
        let index = match exists.then(|| Index::open_in_dir(dir)) {
            None => create(schema, settings)?,
            Some(Ok(index))
                if index.schema() == schema
                    && index.settings().sort_by_field == settings.sort_by_field =>
            {
                index
            }
            Some(_) => {
                tracing::warn!(dir = %dir.display(), "search index unreadable or of another schema; recreating it");
                std::fs::remove_dir_all(dir)?;
                std::fs::create_dir_all(dir)?;
                create(schema, settings)?
            }
        };
        Self::from_index(index)
    }

    /// An index in memory, for tests and benchmarks.
    pub fn in_memory(schema: Schema, settings: IndexSettings) -> IndexResult<Derived> {
        let index = Index::builder()
            .schema(schema)
            .settings(settings)
            .create_in_ram()?;
        Self::from_index(index)
    }

    fn from_index(index: Index) -> IndexResult<Derived> {
        tokenizer::register(&index);
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(Derived { index, reader })
    }

    /// The store generation the last commit reflects; `None` for an index never built.
    pub fn generation(&self) -> IndexResult<Option<u64>> {
        let metas = self.index.load_metas()?;
        Ok(metas.payload.and_then(|p| p.parse().ok()))
    }

    /// Replaces every document with `docs`, then the documents `then` makes once `docs` are
    /// all in (those that count what `docs` held), and commits with `generation`. Returns the
    /// number of documents indexed. The first failure of `docs` stops the rebuild before its
    /// commit: the index keeps its previous contents.
    pub fn rebuild<E: From<IndexError> + Send>(
        &self,
        docs: impl ParallelIterator<Item = Result<TantivyDocument, E>>,
        then: impl FnOnce() -> Vec<TantivyDocument>,
        generation: u64,
        shape: RebuildShape,
    ) -> Result<usize, E> {
        let (threads, bytes) = shape.writer();
        let writer = self.writer(threads, bytes).map_err(IndexError::from)?;
        writer.delete_all_documents().map_err(IndexError::from)?;
        let count = docs
            .map(|doc| -> Result<usize, E> {
                writer
                    .add_document(doc?)
                    .map_err(|e| E::from(IndexError::from(e)))?;
                Ok(1)
            })
            .try_reduce(|| 0, |a, b| Ok(a + b))?;
        let then = then();
        let count = count + then.len();
        for doc in then {
            writer.add_document(doc).map_err(IndexError::from)?;
        }
        self.commit(writer, generation)?;
        Ok(count)
    }

    /// Deletes the documents each query matches and adds its new document, if any, and commits
    /// with `generation`.
    pub fn replace(
        &self,
        changes: impl IntoIterator<Item = (Box<dyn Query>, Option<TantivyDocument>)>,
        generation: u64,
    ) -> IndexResult<()> {
        let writer = self.writer(1, UPDATE_WRITER_BYTES)?;
        for (old, doc) in changes {
            writer.delete_query(old)?;
            if let Some(doc) = doc {
                writer.add_document(doc)?;
            }
        }
        self.commit(writer, generation)
    }

    /// A writer for a long load of documents (millions, as the store commits them): one thread,
    /// and no merge while it runs, as [`Derived::commit_load`] merges once at the end. One
    /// thread makes segments that each hold a run of the load's documents in the order given:
    /// documents given in id order (new listings) then make segments whose id ranges do not
    /// overlap, which tantivy merges by stacking them instead of interleaving every posting
    /// (docs/decisions.md, D-33).
    pub fn load_writer(&self) -> IndexResult<IndexWriter<TantivyDocument>> {
        let writer = self.writer(1, LOAD_WRITER_BYTES)?;
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        Ok(writer)
    }

    /// A writer of `threads` threads and `bytes` of memory. tantivy's writer lock is a file
    /// lock, and a process being spawned holds a copy of every open file until its `exec`: a
    /// lock just released by the previous writer can read as busy for that moment (a test
    /// spawning `curl` beside another's import and ingest hit it). Only one writer of an index
    /// runs at a time here, so a busy lock is that moment: tried again for a few seconds.
    fn writer(
        &self,
        threads: usize,
        bytes: usize,
    ) -> tantivy::Result<IndexWriter<TantivyDocument>> {
        let deadline = std::time::Instant::now() + LOCK_PATIENCE;
        loop {
            match self.index.writer_with_num_threads(threads, bytes) {
                Err(tantivy::TantivyError::LockFailure(
                    tantivy::directory::error::LockError::LockBusy,
                    _,
                )) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                answer => return answer,
            }
        }
    }

    /// The segments the index holds now: what a load found before it wrote any.
    pub fn segment_ids(&self) -> IndexResult<Vec<tantivy::index::SegmentId>> {
        Ok(self.index.searchable_segment_ids()?)
    }

    /// Commits a load's `writer` with `generation`, then merges the segments the load made
    /// (those not in `before`) into one: one merge for the whole load instead of merges of
    /// merges while it ran. The commit is what makes the load count; the merge keeps its payload.
    pub fn commit_load(
        &self,
        mut writer: IndexWriter<TantivyDocument>,
        before: &[tantivy::index::SegmentId],
        generation: u64,
    ) -> IndexResult<()> {
        let started = std::time::Instant::now();
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&generation.to_string());
        prepared.commit()?;
        let committed = started.elapsed();
        let made: Vec<_> = self
            .segment_ids()?
            .into_iter()
            .filter(|id| !before.contains(id))
            .collect();
        if made.len() > 1 {
            writer.merge(&made).wait()?;
        }
        writer.wait_merging_threads()?;
        self.reader.reload()?;
        tracing::debug!(?committed, segments = made.len(), took = ?started.elapsed(), "index load committed and merged");
        Ok(())
    }

    fn commit(&self, mut writer: IndexWriter<TantivyDocument>, generation: u64) -> IndexResult<()> {
        let started = std::time::Instant::now();
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&generation.to_string());
        let prepared_took = started.elapsed();
        prepared.commit()?;
        let committed_took = started.elapsed();
        writer.wait_merging_threads()?;
        self.reader.reload()?;
        tracing::debug!(?prepared_took, ?committed_took, took = ?started.elapsed(), "index committed");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derived(dir: &Path) -> Derived {
        let mut schema = Schema::builder();
        schema.add_u64_field("id", tantivy::schema::INDEXED);
        Derived::open(dir, schema.build(), IndexSettings::default()).expect("index")
    }

    #[test]
    fn a_writer_waits_for_a_lock_held_a_moment_longer() {
        let dir = tempfile::tempdir().expect("dir");
        let index = derived(dir.path());
        // The lock file as a spawned child's copy would hold it: another handle, let go soon.
        let held = std::fs::File::open(dir.path().join(".tantivy-writer.lock"))
            .or_else(|_| std::fs::File::create(dir.path().join(".tantivy-writer.lock")));
        let held = held.expect("lock file");
        held.try_lock().expect("locked");
        let at_once = index
            .index
            .writer_with_num_threads::<TantivyDocument>(1, UPDATE_WRITER_BYTES);
        assert!(matches!(
            at_once,
            Err(tantivy::TantivyError::LockFailure(
                tantivy::directory::error::LockError::LockBusy,
                _
            ))
        ));
        let releasing = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(held);
        });
        assert!(index.writer(1, UPDATE_WRITER_BYTES).is_ok());
        releasing.join().expect("released");
    }
}
