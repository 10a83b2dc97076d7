//! What every index of this crate shares: it is derived data, opened (or recreated when its
//! schema changed), read through a manually reloaded reader, and committed with the store
//! generation it reflects as payload.

use crate::folder::IndexFolder;
use crate::tokenizer;
use crate::updates_merge::UpdatesMergePolicy;
use crate::{IndexError, IndexResult};
use rayon::prelude::*;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use tantivy::directory::Advice;
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

/// How the OS reads an index's files in when a search touches a page it does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FileAccess {
    /// With the OS's read-around of each such page (its disk's read-ahead, 8 MiB on the scale
    /// run's machine): for what reads segments through, as batch commands and merges do.
    #[default]
    ReadAround,
    /// That page alone: for a server, which reads its indexes' files ahead once at its start
    /// and then touches a few scattered pages a request. With read-around, a first text
    /// search over the reconciliation groups after a cold start read 28 pages, 216 MB, and
    /// took 150-250 ms; with this (and its column of groups read ahead), 200-340 pages, 6-23
    /// MB, and 86-107 ms (docs/decisions.md, D-241).
    PageAlone,
}

impl FileAccess {
    fn advice(self) -> Advice {
        match self {
            FileAccess::ReadAround => Advice::Normal,
            FileAccess::PageAlone => Advice::Random,
        }
    }
}

/// The flags (`VmFlags`) of each mapping of a file in `dir` that `smaps`, a process's
/// `/proc/PID/smaps`, lists: `rr` among them for a file mapped [`FileAccess::PageAlone`]. For
/// the tests that check how a process maps its indexes (this crate's and a started server's):
/// not an API.
#[doc(hidden)]
pub fn flags_of_mappings_in(smaps: &str, dir: &Path) -> Vec<String> {
    let mut flags = Vec::new();
    let mut mapped_from_dir = false;
    for line in smaps.lines() {
        match line.strip_prefix("VmFlags:") {
            Some(value) if mapped_from_dir => flags.push(value.trim().to_owned()),
            Some(_) => {}
            // A mapping's first line ends in its file's path, if any: address range,
            // permissions, offset, device, inode, path; its other lines are `Name: value`.
            None if !line.starts_with(|c: char| c.is_ascii_uppercase()) => {
                mapped_from_dir = line
                    .split_whitespace()
                    .nth(5)
                    .is_some_and(|path| Path::new(path).starts_with(dir));
            }
            None => {}
        }
    }
    flags
}

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
    /// The writer of incremental updates ([`Derived::replace`]), kept from one to the next so
    /// that the merges tantivy starts after a commit run beside the requests that follow, not
    /// inside the one that committed: waiting for them made one back-office write in about
    /// seven take 40-60 ms more at the scale run (docs/decisions.md, D-200). Let go, its
    /// merges waited for, before any other writer is made.
    updates: Mutex<Option<IndexWriter<TantivyDocument>>>,
}

impl Derived {
    /// Opens the index in `dir`, creating it, or recreating it when it was written with another
    /// schema or other settings, or cannot be read: it is derived data. A recreated index has no
    /// generation. Its files are read in as `access` says.
    pub fn open(
        dir: &Path,
        schema: Schema,
        settings: IndexSettings,
        access: FileAccess,
    ) -> IndexResult<Derived> {
        std::fs::create_dir_all(dir)?;
        let directory = || IndexFolder::open(dir, access.advice());
        let exists = Index::exists(&directory()?).unwrap_or(false);
        // In the folder, empty here, through a directory with the same advice.
        let create = |schema, settings| -> IndexResult<Index> {
            Ok(Index::create(directory()?, schema, settings)?)
        };
        let index = match exists.then(|| Index::open(directory()?)) {
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
        Ok(Derived {
            index,
            reader,
            updates: Mutex::new(None),
        })
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
        let writer = self.writer(threads, bytes)?;
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
    /// with `generation`, through the kept writer of updates. A failure lets that writer go, so
    /// nothing it held uncommitted reaches a later commit.
    pub fn replace(
        &self,
        changes: impl IntoIterator<Item = (Box<dyn Query>, Option<TantivyDocument>)>,
        generation: u64,
    ) -> IndexResult<()> {
        let changes = changes.into_iter().map(|(old, doc)| (Some(old), doc));
        self.update_through_kept_writer(|writer| Self::replace_with(writer, changes, generation))
    }

    /// Deletes the documents `old` matches, then adds `docs`, and commits with `generation`,
    /// through the kept writer of updates: [`Derived::replace`] with one delete for all, when
    /// no two of `docs` replace the same document (one query per document costs a scorer per
    /// query and segment as tantivy applies its deletes; docs/decisions.md, D-250).
    pub fn delete_then_add(
        &self,
        old: Box<dyn Query>,
        docs: impl IntoIterator<Item = TantivyDocument>,
        generation: u64,
    ) -> IndexResult<()> {
        let changes =
            std::iter::once((Some(old), None)).chain(docs.into_iter().map(|doc| (None, Some(doc))));
        self.update_through_kept_writer(|writer| Self::replace_with(writer, changes, generation))
    }

    /// Runs `update` (which commits) through the kept writer of updates, made if none is kept;
    /// a failure lets that writer go, so nothing it held uncommitted reaches a later commit.
    fn update_through_kept_writer(
        &self,
        update: impl FnOnce(&mut IndexWriter<TantivyDocument>) -> IndexResult<()>,
    ) -> IndexResult<()> {
        let mut kept = self.kept_updates();
        let mut writer = match kept.take() {
            Some(writer) => writer,
            None => self.updates_writer()?,
        };
        match update(&mut writer) {
            Ok(()) => {
                *kept = Some(writer);
                drop(kept);
                Ok(self.reader.reload()?)
            }
            Err(error) => {
                let _ = writer.rollback();
                let _ = writer.wait_merging_threads();
                Err(error)
            }
        }
    }

    /// Deletes and adds `changes` in their order, each a query of documents to delete and a
    /// document to add after them, and commits with `generation`.
    fn replace_with(
        writer: &mut IndexWriter<TantivyDocument>,
        changes: impl IntoIterator<Item = (Option<Box<dyn Query>>, Option<TantivyDocument>)>,
        generation: u64,
    ) -> IndexResult<()> {
        let started = std::time::Instant::now();
        for (old, doc) in changes {
            if let Some(old) = old {
                writer.delete_query(old)?;
            }
            if let Some(doc) = doc {
                writer.add_document(doc)?;
            }
        }
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&generation.to_string());
        prepared.commit()?;
        tracing::debug!(took = ?started.elapsed(), "index updated");
        Ok(())
    }

    /// [`Derived::replace`] of many documents at once (a snapshot recounted a fifth of the
    /// catalogue), then every segment merged into one: the index is left as a rebuild leaves
    /// it, one segment without deletes, for less than a rebuild's work (the changed documents
    /// indexed, the others merged rather than indexed again; docs/decisions.md, D-246).
    pub fn replace_into_one_segment(
        &self,
        changes: impl IntoIterator<Item = (Box<dyn Query>, Option<TantivyDocument>)>,
        generation: u64,
    ) -> IndexResult<()> {
        let started = std::time::Instant::now();
        let (threads, bytes) = RebuildShape::OneSegment.writer();
        let mut writer = self.writer(threads, bytes)?;
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        let changes = changes.into_iter().map(|(old, doc)| (Some(old), doc));
        if let Err(error) = Self::replace_with(&mut writer, changes, generation) {
            let _ = writer.rollback();
            return Err(error);
        }
        // Searchable at once; the merge only changes how the same documents are laid out.
        self.reader.reload()?;
        let replaced = started.elapsed();
        let segments = self.segment_ids()?;
        if segments.len() > 1 {
            // The commit is what counts: a failed merge leaves the same answers in more
            // segments, for the next rebuild or merge to take.
            if let Err(error) = writer.merge(&segments).wait() {
                tracing::warn!(%error, "merging the catalogue index into one segment failed");
            }
        }
        writer.wait_merging_threads()?;
        self.reader.reload()?;
        tracing::debug!(?replaced, segments = segments.len(), took = ?started.elapsed(), "index replaced and merged into one segment");
        Ok(())
    }

    /// A writer of updates: one thread, and the merges of [`UpdatesMergePolicy`].
    fn updates_writer(&self) -> IndexResult<IndexWriter<TantivyDocument>> {
        let writer = self.open_writer(1, UPDATE_WRITER_BYTES)?;
        writer.set_merge_policy(Box::new(UpdatesMergePolicy::default()));
        Ok(writer)
    }

    fn kept_updates(&self) -> MutexGuard<'_, Option<IndexWriter<TantivyDocument>>> {
        self.updates
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether a writer of updates is kept now.
    pub fn keeps_a_writer_of_updates(&self) -> bool {
        self.kept_updates().is_some()
    }

    /// Lets the kept writer of updates go once its merges are done, which frees the index's
    /// lock for another writer.
    pub fn release_updates(&self) -> IndexResult<()> {
        if let Some(writer) = self.kept_updates().take() {
            writer.wait_merging_threads()?;
        }
        Ok(())
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

    /// A writer of `threads` threads and `bytes` of memory, made once the kept writer of
    /// updates is let go.
    fn writer(&self, threads: usize, bytes: usize) -> IndexResult<IndexWriter<TantivyDocument>> {
        self.release_updates()?;
        self.open_writer(threads, bytes)
    }

    /// A writer of `threads` threads and `bytes` of memory. tantivy's writer lock is a file
    /// lock, and a process being spawned holds a copy of every open file until its `exec`: a
    /// lock just released by the previous writer can read as busy for that moment (a test
    /// spawning `curl` beside another's import and ingest hit it). Only one writer of an index
    /// runs at a time here, so a busy lock is that moment: tried again for a few seconds.
    fn open_writer(
        &self,
        threads: usize,
        bytes: usize,
    ) -> IndexResult<IndexWriter<TantivyDocument>> {
        let deadline = std::time::Instant::now() + LOCK_PATIENCE;
        loop {
            match self.index.writer_with_num_threads(threads, bytes) {
                Err(tantivy::TantivyError::LockFailure(
                    tantivy::directory::error::LockError::LockBusy,
                    _,
                )) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                answer => return Ok(answer?),
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

/// A merge the kept writer of updates started is waited for rather than cut off as the index
/// closes, so it leaves no half-written segment files behind.
impl Drop for Derived {
    fn drop(&mut self) {
        if let Err(error) = self.release_updates() {
            tracing::warn!(%error, "a merge of the index's updates failed as it closed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derived(dir: &Path) -> Derived {
        derived_with(dir, FileAccess::default())
    }

    fn derived_with(dir: &Path, access: FileAccess) -> Derived {
        let mut schema = Schema::builder();
        schema.add_u64_field("id", tantivy::schema::INDEXED | tantivy::schema::FAST);
        schema.add_u64_field("stored", tantivy::schema::STORED);
        Derived::open(dir, schema.build(), IndexSettings::default(), access).expect("index")
    }

    /// The flags of each of this process's mappings of a file in `dir`.
    #[cfg(target_os = "linux")]
    fn flags_of_files_mapped_from(dir: &Path) -> Vec<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        flags_of_mappings_in(&smaps, dir)
    }

    /// A server's index asks the OS for the page a search touches alone (`rr`: read at
    /// random), a batch command's for the OS's read-around.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_index_opened_to_read_pages_alone_asks_the_os_not_to_read_around_them() {
        for (access, alone) in [
            (FileAccess::PageAlone, true),
            (FileAccess::ReadAround, false),
        ] {
            let dir = tempfile::tempdir().expect("dir");
            let written = derived(dir.path());
            written.replace([put(&written, 1)], 1).expect("a segment");
            drop(written);
            let index = derived_with(dir.path(), access);
            assert_eq!(ids(&index), [1]);
            let flags = flags_of_files_mapped_from(dir.path());
            assert!(!flags.is_empty(), "the segment's files are mapped");
            for flags in flags {
                let random = flags.split_whitespace().any(|flag| flag == "rr");
                assert_eq!(random, alone, "{access:?}: {flags}");
            }
        }
    }

    fn field(index: &Derived, name: &str) -> tantivy::schema::Field {
        index.index.schema().get_field(name).expect("field")
    }

    /// The change that puts document `id` in place of any with that id.
    fn put(index: &Derived, id: u64) -> (Box<dyn Query>, Option<TantivyDocument>) {
        let term = tantivy::Term::from_field_u64(field(index, "id"), id);
        let old = tantivy::query::TermQuery::new(term, tantivy::schema::IndexRecordOption::Basic);
        (Box::new(old), Some(tantivy::doc!(field(index, "id") => id)))
    }

    fn ids(index: &Derived) -> Vec<u64> {
        let searcher = index.reader.searcher();
        let mut ids: Vec<u64> = (searcher.segment_readers().iter())
            .flat_map(|segment| {
                let column = segment.fast_fields().u64("id").ok();
                let alive = segment.doc_ids_alive().collect::<Vec<_>>();
                alive
                    .into_iter()
                    .filter_map(move |doc| column.as_ref()?.first(doc))
            })
            .collect();
        ids.sort_unstable();
        ids
    }

    /// tantivy's file list is replaced without a sync (`folder`): where a crash leaves it
    /// empty, the index is read as it was, not refused nor made again.
    #[test]
    fn an_index_whose_file_list_a_crash_emptied_is_read_as_it_was() {
        let dir = tempfile::tempdir().expect("dir");
        let index = derived(dir.path());
        index.replace([put(&index, 3)], 1).expect("update");
        drop(index);
        std::fs::write(dir.path().join(".managed.json"), b"").expect("emptied");
        let index = derived(dir.path());
        assert_eq!(index.generation().expect("generation"), Some(1));
        assert_eq!(ids(&index), [3]);
        index
            .replace([put(&index, 4)], 2)
            .expect("an update after it");
        assert_eq!(ids(&index), [3, 4]);
    }

    #[test]
    fn updates_keep_their_writer_and_a_rebuild_after_them_still_gets_the_lock() {
        let dir = tempfile::tempdir().expect("dir");
        let index = derived(dir.path());
        // Enough commits for the merge policy to start merges in the kept writer.
        for id in 0..40u64 {
            index
                .replace([put(&index, id % 25)], id + 1)
                .expect("update");
        }
        assert!(
            index.kept_updates().is_some(),
            "the writer of updates is kept"
        );
        assert_eq!(ids(&index), (0..25).collect::<Vec<_>>());
        assert_eq!(index.generation().expect("generation"), Some(40));
        let docs = (100..103u64)
            .into_par_iter()
            .map(|id| Ok::<_, IndexError>(tantivy::doc!(field(&index, "id") => id)));
        let rebuilt = index.rebuild(docs, Vec::new, 41, RebuildShape::OneSegment);
        assert_eq!(rebuilt.expect("rebuild takes the lock"), 3);
        assert!(index.kept_updates().is_none(), "let go for the rebuild");
        assert_eq!(ids(&index), [100, 101, 102]);
        index
            .replace([put(&index, 7)], 42)
            .expect("an update after it");
        assert_eq!(ids(&index), [7, 100, 101, 102]);
    }

    #[test]
    fn the_updates_merge_their_small_segments_and_leave_a_larger_one_be() {
        let dir = tempfile::tempdir().expect("dir");
        let index = derived(dir.path());
        let docs = (0..300u64)
            .into_par_iter()
            .map(|id| Ok::<_, IndexError>(tantivy::doc!(field(&index, "id") => id)));
        index
            .rebuild(docs, Vec::new, 1, RebuildShape::OneSegment)
            .expect("rebuild");
        let larger = index.segment_ids().expect("segments");
        for id in 1000..1012u64 {
            index.replace([put(&index, id)], id).expect("update");
        }
        index.release_updates().expect("merges done");
        let segments = index.segment_ids().expect("segments");
        // tantivy's own policy counts every segment below 10,000 documents as 10,000, and
        // would have merged the 300 with the first seven of a document each.
        assert!(segments.contains(&larger[0]), "{segments:?}");
        assert!(segments.len() <= 4, "the twelve merged: {segments:?}");
        assert_eq!(ids(&index).len(), 312);
    }

    #[test]
    fn a_failed_update_leaves_nothing_for_the_next_commit() {
        let dir = tempfile::tempdir().expect("dir");
        let index = derived(dir.path());
        index.replace([put(&index, 1)], 1).expect("update");
        // A term of a field that is not indexed: tantivy refuses the deletion it asks.
        let unindexed = tantivy::Term::from_field_u64(field(&index, "stored"), 0);
        let refused =
            tantivy::query::TermQuery::new(unindexed, tantivy::schema::IndexRecordOption::Basic);
        let failing: Vec<(Box<dyn Query>, Option<TantivyDocument>)> =
            vec![put(&index, 2), (Box::new(refused), None)];
        assert!(index.replace(failing, 2).is_err());
        index.replace([put(&index, 3)], 3).expect("the next update");
        assert_eq!(ids(&index), [1, 3], "document 2 was never committed");
        assert_eq!(index.generation().expect("generation"), Some(3));
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
        assert!(index.open_writer(1, UPDATE_WRITER_BYTES).is_ok());
        releasing.join().expect("released");
    }
}
