//! The folder an index's files live in: tantivy's memory-mapped directory, but for how a commit
//! waits for the disk. A commit's new files are synced together just before `meta.json` names
//! them, instead of one after another as each is written; `meta.json` is replaced by exchanging
//! names, which ext4 does not flush as it does a rename over a file (D-248), and tantivy's file
//! list is written over in place, making no file (D-250).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    Advice, AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory,
    TerminatingWrite, WatchCallback, WatchHandle, WritePtr,
};

/// tantivy's list of the files it made, by which it tells what to delete as garbage. Not
/// exported by tantivy; [`tests`] checks a commit still writes it under this name.
const FILE_LIST: &str = ".managed.json";

/// Files synced at once, each on a thread of its own: the disk takes them together (one
/// journal commit for several) where one after another each waits for the last.
const SYNCS_AT_ONCE: usize = 8;

/// Files written whole that may wait for their sync at once. A small commit makes about ten; a
/// load or a rebuild makes hundreds before its one commit, and each waiting file holds a file
/// descriptor (often 1,024 a process): past this, they are synced as the next one ends.
const UNSYNCED_AT_MOST: usize = 64;

/// An index's folder; see the module's doc.
///
/// What a crash can cost. Every file `meta.json` names was synced before it was written, and
/// `meta.json` itself is synced before it takes the old one's name: after any crash the index
/// is a commit tantivy made whole, as with tantivy's own directory. The file list is written
/// over in place without waiting for the disk (D-242, D-250): a crash of the machine can leave
/// the old list, an empty one or one torn between the two. An old list costs only disk: the files made after it are still read wherever
/// `meta.json` names them, but tantivy's clean-up, which deletes only listed files, leaves
/// them on disk once a merge makes them garbage, until the folder is deleted (a start then
/// recreates the index; `reindex` keeps the folder). An empty or torn list is read as every
/// file of the folder ([`IndexFolder::every_file_listed`]). Names listed but gone are harmless
/// (the clean-up counts a missing file as deleted).
#[derive(Debug, Clone)]
pub(crate) struct IndexFolder {
    files: MmapDirectory,
    root: PathBuf,
    unsynced: Arc<UnsyncedFiles>,
}

/// Files written whole since the last sync, kept open to be synced.
#[derive(Debug, Default)]
struct UnsyncedFiles(Mutex<Vec<File>>);

impl UnsyncedFiles {
    fn lock(&self) -> MutexGuard<'_, Vec<File>> {
        // Nothing panics while the lock is held: a poisoned list is still whole.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Keeps `file` to be synced with the others, or syncs them all now when
    /// [`UNSYNCED_AT_MOST`] wait.
    fn add(&self, file: File) -> io::Result<()> {
        let full = {
            let mut files = self.lock();
            files.push(file);
            if files.len() < UNSYNCED_AT_MOST {
                return Ok(());
            }
            std::mem::take(&mut *files)
        };
        // Synced without the lock, so other files end meanwhile.
        sync_together(&full)
    }

    /// Syncs every file waiting. A file whose sync failed is not synced again: the error
    /// fails the commit that asked, and tantivy writes a failed commit's segments anew.
    fn sync(&self) -> io::Result<()> {
        let files = std::mem::take(&mut *self.lock());
        sync_together(&files)
    }
}

impl IndexFolder {
    /// The folder `dir`, its files mapped with `advice`.
    pub(crate) fn open(dir: &Path, advice: Advice) -> Result<IndexFolder, OpenDirectoryError> {
        Ok(IndexFolder {
            files: MmapDirectory::open_with_madvice(dir, advice)?,
            root: dir.to_owned(),
            unsynced: Arc::default(),
        })
    }

    /// Replaces the file `name` (`meta.json`) with `data`: written under a dotted name of its
    /// own (tantivy manages no such file) and synced, then its name exchanged with the old
    /// file's, which is then deleted. A rename over the old file would do as much, but ext4
    /// (`auto_da_alloc`) then writes the new file out first, a disk wait a commit paid for each
    /// file it made. Where names cannot be exchanged (no old file, a file system without it), a
    /// rename.
    fn replace(&self, name: &Path, data: &[u8]) -> io::Result<()> {
        let target = self.root.join(name);
        let next = self.root.join(next_name(name));
        // Left by a crash between an exchange and its delete: the old version.
        remove_if_present(&next)?;
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&next)?;
        file.write_all(data)?;
        file.sync_data()?;
        drop(file);
        let exchanged = rustix::fs::renameat_with(
            rustix::fs::CWD,
            &next,
            rustix::fs::CWD,
            &target,
            rustix::fs::RenameFlags::EXCHANGE,
        );
        match exchanged {
            Ok(()) => remove_if_present(&next),
            Err(_) => std::fs::rename(&next, &target),
        }
    }

    /// Writes `data` over the file `name` (the file list) in place, without waiting for the
    /// disk: no file is made or deleted. tantivy rewrites its list for every file a commit
    /// makes, and on ext4 without a journal (this project's machines) each file made searches
    /// past every inode deleted in the last minutes: a replacement per rewrite, made then
    /// deleted, was half a small commit's files and took them from 0.07 to 0.5 ms each
    /// (docs/decisions.md, D-250). Cut to its new length rather than emptied first, which ext4
    /// (`auto_da_alloc`) would write out as it closes. A crash can leave the list torn, which
    /// [`IndexFolder::atomic_read`] reads as every file of the folder; the list only tells the
    /// clean-up which files it may delete, and it deletes none a commit names.
    fn overwrite(&self, name: &Path, data: &[u8]) -> io::Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.root.join(name))?;
        file.write_all(data)?;
        file.set_len(data.len() as u64)
    }

    /// tantivy's file list naming every file in the folder but the dotted ones.
    fn every_file_listed(&self) -> io::Result<Vec<u8>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.root)? {
            let name = entry?.file_name();
            if let Some(name) = name.to_str().filter(|name| !name.starts_with('.')) {
                names.push(name.to_owned());
            }
        }
        serde_json::to_vec(&names).map_err(io::Error::other)
    }

    /// How many files written whole wait for their sync, for tests.
    #[cfg(test)]
    fn waiting_to_be_synced(&self) -> usize {
        self.unsynced.lock().len()
    }
}

/// The name a replacement of `name` is written under: dotted, as tantivy manages no such file
/// (`.meta.json.next`).
fn next_name(name: &Path) -> std::ffi::OsString {
    let mut next = std::ffi::OsString::new();
    if !name.to_string_lossy().starts_with('.') {
        next.push(".");
    }
    next.push(name.as_os_str());
    next.push(".next");
    next
}

/// Syncs `files`, [`SYNCS_AT_ONCE`] at a time.
fn sync_together(files: &[File]) -> io::Result<()> {
    let threads = files.len().min(SYNCS_AT_ONCE);
    if threads <= 1 {
        return files.iter().try_for_each(File::sync_data);
    }
    std::thread::scope(|scope| {
        let syncing: Vec<_> = (0..threads)
            .map(|first| {
                scope.spawn(move || {
                    files
                        .iter()
                        .skip(first)
                        .step_by(threads)
                        .try_for_each(File::sync_data)
                })
            })
            .collect();
        syncing.into_iter().try_for_each(|thread| {
            thread
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a sync's thread panicked")))
        })
    })
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// A file tantivy writes: handed to its folder to be synced once written whole, rather than
/// synced then (tantivy's own directory syncs each file as it ends it).
struct WrittenFile {
    file: Option<File>,
    unsynced: Arc<UnsyncedFiles>,
}

impl Write for WrittenFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.file {
            Some(file) => file.write(buf),
            None => Err(io::Error::other("a write after the file was ended")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TerminatingWrite for WrittenFile {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        match self.file.take() {
            Some(file) => self.unsynced.add(file),
            None => Ok(()),
        }
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

    /// As tantivy's own directory, but for the sync as the file ends ([`WrittenFile`]).
    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.root.join(path))
            .map_err(|error| match error.kind() {
                io::ErrorKind::AlreadyExists => OpenWriteError::FileAlreadyExists(path.to_owned()),
                _ => OpenWriteError::wrap_io_error(error, path.to_owned()),
            })?;
        let written = WrittenFile {
            file: Some(file),
            unsynced: self.unsynced.clone(),
        };
        Ok(io::BufWriter::new(Box::new(written)))
    }

    /// The file list as written, or, where a crash left it empty or torn, every file of the
    /// folder but the dotted ones (tantivy's locks, a replacement under way): all made by
    /// tantivy, so its clean-up still deletes those no commit names.
    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        let data = self.files.atomic_read(path)?;
        if path != Path::new(FILE_LIST) || serde_json::from_slice::<Vec<PathBuf>>(&data).is_ok() {
            return Ok(data);
        }
        tracing::warn!(dir = %self.root.display(), "the index's file list was unreadable; every file in its folder is listed");
        self.every_file_listed()
            .map_err(|error| OpenReadError::wrap_io_error(error, path.to_owned()))
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        match path == Path::new(FILE_LIST) {
            true => self.overwrite(path, data),
            false => self.replace(path, data),
        }
    }

    /// tantivy asks before it writes `meta.json`, and after its clean-up deleted files: the
    /// files written since are synced first, so `meta.json` never names a file the disk may
    /// not hold.
    fn sync_directory(&self) -> io::Result<()> {
        self.unsynced.sync()?;
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

    /// Commits `count` documents, one a commit: a segment each.
    fn commit_one_by_one(writer: &mut IndexWriter, id: Field, count: u64) {
        for n in 0..count {
            writer.add_document(doc!(id => n)).expect("add");
            writer.commit().expect("commit");
        }
    }

    /// Merges `segments` into one, then deletes what tantivy no longer needs.
    fn merge_and_clean_up(writer: &mut IndexWriter, segments: &[tantivy::index::SegmentId]) {
        writer.merge(segments).wait().expect("merge");
        writer.garbage_collect_files().wait().expect("clean-up");
    }

    /// Whether the folder `dir` holds a file of the segment `uuid`.
    fn has_files_of(dir: &Path, uuid: &str) -> bool {
        std::fs::read_dir(dir)
            .expect("folder")
            .filter_map(|entry| entry.ok())
            .any(|entry| entry.file_name().to_string_lossy().starts_with(uuid))
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
        assert!(!dir.path().join(".managed.json.next").exists());
    }

    /// A commit's files are synced once its segments are made, before `meta.json` names them:
    /// none waits after the commit.
    #[test]
    fn a_commit_syncs_the_files_it_made_before_it_ends() {
        let dir = tempfile::tempdir().expect("dir");
        let folder = IndexFolder::open(dir.path(), Advice::Normal).expect("folder");
        let mut schema = Schema::builder();
        let id = schema.add_u64_field("id", INDEXED | FAST);
        let index =
            Index::create(folder.clone(), schema.build(), Default::default()).expect("index");
        let mut writer: IndexWriter = index
            .writer_with_num_threads(1, 15_000_000)
            .expect("writer");
        writer.add_document(doc!(id => 1u64)).expect("add");
        let prepared = writer.prepare_commit().expect("prepare");
        assert!(
            folder.waiting_to_be_synced() >= 3,
            "the segment's files, written whole, wait for the commit"
        );
        prepared.commit().expect("commit");
        assert_eq!(folder.waiting_to_be_synced(), 0);
    }

    /// A load's or a rebuild's hundreds of files before its one commit do not all wait, each
    /// holding a file descriptor: past [`UNSYNCED_AT_MOST`] they are synced as the next ends.
    #[test]
    fn files_written_past_the_cap_are_synced_as_they_end() {
        let dir = tempfile::tempdir().expect("dir");
        let folder = IndexFolder::open(dir.path(), Advice::Normal).expect("folder");
        for n in 0..UNSYNCED_AT_MOST + 6 {
            let mut file = folder
                .open_write(Path::new(&format!("file-{n}")))
                .expect("open");
            file.write_all(b"data").expect("write");
            file.terminate().expect("end");
            assert!(folder.waiting_to_be_synced() < UNSYNCED_AT_MOST);
        }
        assert_eq!(folder.waiting_to_be_synced(), 6);
        folder.sync_directory().expect("sync");
        assert_eq!(folder.waiting_to_be_synced(), 0);
    }

    /// What a crash between an exchange of names and the delete after it leaves (the old
    /// version under the dotted name) is cleared by the next replacement, and the index reads.
    #[test]
    fn a_replacement_a_crash_left_behind_is_cleared_by_the_next() {
        let dir = tempfile::tempdir().expect("dir");
        let (index, mut writer, id) = index_in(dir.path());
        std::fs::write(dir.path().join(".meta.json.next"), b"old").expect("left");
        commit_one_by_one(&mut writer, id, 2);
        assert!(!dir.path().join(".meta.json.next").exists());
        let reopened = Index::open(IndexFolder::open(dir.path(), Advice::Normal).expect("folder"))
            .expect("the index reads");
        assert_eq!(
            reopened.searchable_segment_ids().expect("segments"),
            index.searchable_segment_ids().expect("segments")
        );
    }

    /// The file list is written over in place, however many times a commit rewrites it: the
    /// same file throughout (on ext4 without a journal each file made costs more the more were
    /// deleted lately), cut to each new list's length.
    #[cfg(unix)]
    #[test]
    fn the_file_list_is_written_over_in_place_and_cut_to_its_length() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("dir");
        let (index, mut writer, id) = index_in(dir.path());
        commit_one_by_one(&mut writer, id, 1);
        let inode = |dir: &Path| std::fs::metadata(dir.join(FILE_LIST)).expect("list").ino();
        let first = inode(dir.path());
        commit_one_by_one(&mut writer, id, 3);
        merge_and_clean_up(
            &mut writer,
            &index.searchable_segment_ids().expect("segments"),
        );
        assert_eq!(inode(dir.path()), first, "the list was made anew");

        let folder = IndexFolder::open(dir.path(), Advice::Normal).expect("folder");
        folder
            .atomic_write(Path::new(FILE_LIST), br#"["a","b","c"]"#)
            .expect("longer");
        folder
            .atomic_write(Path::new(FILE_LIST), br#"["a"]"#)
            .expect("shorter");
        assert_eq!(
            std::fs::read(dir.path().join(FILE_LIST)).expect("list"),
            br#"["a"]"#
        );
    }

    /// An empty file list (a crash of the machine before the disk wrote it) is read as every
    /// file of the folder: the index opens, and a merge's inputs are still deleted as garbage.
    #[test]
    fn an_emptied_file_list_is_read_as_every_file_of_the_folder() {
        for left in [&b""[..], br#"["a"]"b","c"]"#] {
            a_file_list_left_as_is_read_as_every_file_of_the_folder(left);
        }
    }

    /// [`an_emptied_file_list_is_read_as_every_file_of_the_folder`] with the list left as
    /// `left`: empty, or a shorter list written over a longer one and not yet cut.
    fn a_file_list_left_as_is_read_as_every_file_of_the_folder(left: &[u8]) {
        let dir = tempfile::tempdir().expect("dir");
        let (_, mut writer, id) = index_in(dir.path());
        commit_one_by_one(&mut writer, id, 2);
        drop(writer);
        std::fs::write(dir.path().join(FILE_LIST), left).expect("left");
        let folder = IndexFolder::open(dir.path(), Advice::Normal).expect("folder");
        let index = Index::open(folder).expect("the index opens");
        let before = index.searchable_segment_ids().expect("segments");
        assert_eq!(before.len(), 2);
        let mut writer: IndexWriter = index
            .writer_with_num_threads(1, 15_000_000)
            .expect("writer");
        merge_and_clean_up(&mut writer, &before);
        for old in &before {
            let old = old.uuid_string();
            assert!(
                !has_files_of(dir.path(), &old),
                "{old}'s files still in the folder"
            );
        }
    }

    /// Files tantivy no longer needs are still found and deleted: a merge's inputs are gone
    /// from the folder and the list once the merged segment replaced them.
    #[test]
    fn a_merge_s_inputs_are_deleted_as_garbage() {
        let dir = tempfile::tempdir().expect("dir");
        let (index, mut writer, id) = index_in(dir.path());
        commit_one_by_one(&mut writer, id, 3);
        let before = index.searchable_segment_ids().expect("segments");
        assert_eq!(before.len(), 3);
        merge_and_clean_up(&mut writer, &before);
        let listed = listed_files(dir.path());
        for old in &before {
            let old = old.uuid_string();
            assert!(
                !listed.iter().any(|f| f.starts_with(&old)),
                "{old} still listed"
            );
            assert!(
                !has_files_of(dir.path(), &old),
                "{old}'s files still in the folder"
            );
        }
    }
}
