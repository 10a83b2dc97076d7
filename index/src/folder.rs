//! The folder an index's files live in: tantivy's memory-mapped directory, but for the list of
//! the files tantivy made (`.managed.json`), which is replaced without waiting for the disk.
//! tantivy rewrites that list, with an `fdatasync`, for every file it creates and after every
//! clean-up: about half the disk waits of a small commit (docs/decisions.md, D-242).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    Advice, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle,
    WritePtr,
};

/// tantivy's list of the files it made, by which it tells what to delete as garbage. Not
/// exported by tantivy; [`tests`] checks a commit still writes it under this name.
const FILE_LIST: &str = ".managed.json";

/// Where the list is written before it replaces the old one. A dotted name: tantivy manages
/// (and so lists) no such file. One fixed name is enough: tantivy writes the list only while it
/// holds its own lock on the list, and one writer at a time works in a folder (its writer lock).
const FILE_LIST_NEXT: &str = ".managed.json.next";

/// An index's folder; see the module's doc.
///
/// What a crash can cost: the list is replaced by a rename, so a reader finds the old list or
/// the new one, and on ext4 with its default `auto_da_alloc` (a rename over a file writes the
/// new file's data first) never a torn one. Where a file system gives an empty list after a
/// crash, tantivy cannot open the index, and
/// [`Derived::open`](crate::derived::Derived::open) recreates it: it is derived data. An old
/// list costs only disk: the files made after it are still read wherever `meta.json` names
/// them, but tantivy's clean-up, which deletes only listed files, leaves them on disk once a
/// merge makes them garbage, until the folder is deleted (a start then recreates the index;
/// `reindex` keeps the folder). Names listed but gone are harmless
/// (the clean-up counts a missing file as deleted). Everything else (the segments' files,
/// `meta.json`, which says what the index holds) is written and synced as tantivy does.
#[derive(Debug, Clone)]
pub(crate) struct IndexFolder {
    files: MmapDirectory,
    root: PathBuf,
}

impl IndexFolder {
    /// The folder `dir`, its files mapped with `advice`.
    pub(crate) fn open(dir: &Path, advice: Advice) -> Result<IndexFolder, OpenDirectoryError> {
        Ok(IndexFolder {
            files: MmapDirectory::open_with_madvice(dir, advice)?,
            root: dir.to_owned(),
        })
    }

    /// Replaces the file list with `data`, leaving the disk to write it when it will.
    fn replace_file_list(&self, data: &[u8]) -> io::Result<()> {
        let next = self.root.join(FILE_LIST_NEXT);
        let mut file = std::fs::File::create(&next)?;
        file.write_all(data)?;
        drop(file);
        std::fs::rename(next, self.root.join(FILE_LIST))
    }
}

impl Directory for IndexFolder {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.files.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.files.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.files.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.files.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.files.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        if path == Path::new(FILE_LIST) {
            self.replace_file_list(data)
        } else {
            self.files.atomic_write(path, data)
        }
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.files.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.files.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.files.watch(watch_callback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::{Field, Schema, FAST, INDEXED};
    use tantivy::{doc, Index, IndexWriter};

    /// An index in `dir` through the folder, a writer of it, and its one field.
    fn index_in(dir: &Path) -> (Index, IndexWriter, Field) {
        let mut schema = Schema::builder();
        let id = schema.add_u64_field("id", INDEXED | FAST);
        let folder = IndexFolder::open(dir, Advice::Normal).expect("folder");
        let index = Index::create(folder, schema.build(), Default::default()).expect("index");
        let writer = index
            .writer_with_num_threads(1, 15_000_000)
            .expect("writer");
        (index, writer, id)
    }

    /// tantivy's file list: a JSON array of file names, which hold no quote.
    fn listed_files(dir: &Path) -> Vec<String> {
        let list = std::fs::read_to_string(dir.join(FILE_LIST)).expect("tantivy's file list");
        list.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    /// The list this folder writes its own way is the one tantivy keeps, under that name, and
    /// it holds every file of a committed segment, so tantivy's clean-up never deletes them.
    #[test]
    fn a_commit_lists_its_segment_s_files_in_tantivy_s_file_list() {
        let dir = tempfile::tempdir().expect("dir");
        let (index, mut writer, id) = index_in(dir.path());
        writer.add_document(doc!(id => 7u64)).expect("add");
        writer.commit().expect("commit");
        let listed = listed_files(dir.path());
        let segment = index.searchable_segment_ids().expect("segments")[0].uuid_string();
        let of_segment: Vec<_> = listed.iter().filter(|f| f.starts_with(&segment)).collect();
        assert!(of_segment.len() >= 3, "listed: {listed:?}");
        for file in of_segment {
            assert!(dir.path().join(file).exists(), "{file} listed but absent");
        }
        assert!(!dir.path().join(FILE_LIST_NEXT).exists());
    }

    /// Files tantivy no longer needs are still found and deleted: a merge's inputs are gone
    /// from the folder and the list once the merged segment replaced them.
    #[test]
    fn a_merge_s_inputs_are_deleted_as_garbage() {
        let dir = tempfile::tempdir().expect("dir");
        let (index, mut writer, id) = index_in(dir.path());
        for n in 0..3u64 {
            writer.add_document(doc!(id => n)).expect("add");
            writer.commit().expect("commit");
        }
        let before = index.searchable_segment_ids().expect("segments");
        assert_eq!(before.len(), 3);
        writer.merge(&before).wait().expect("merge");
        writer.garbage_collect_files().wait().expect("clean-up");
        let listed = listed_files(dir.path());
        for old in &before {
            let old = old.uuid_string();
            assert!(
                !listed.iter().any(|f| f.starts_with(&old)),
                "{old} still listed"
            );
            let left = std::fs::read_dir(dir.path())
                .expect("folder")
                .filter_map(|entry| entry.ok())
                .any(|entry| entry.file_name().to_string_lossy().starts_with(&old));
            assert!(!left, "{old}'s files still in the folder");
        }
    }
}
