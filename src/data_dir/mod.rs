//! A data dir: its layout ([`DataDir`]: `store/` for sled, `index/` and `listings-index/` for
//! tantivy, `media/`, `spool/`), and what makes a folder one: a marker file written when its
//! store is created (format, created at), and a second one kept while an import into it is
//! under way. Commands check them before they open anything, so a mistyped `--data-dir`, a
//! dataset given as the data dir or an import cut short is refused with the path named instead
//! of being used as found.

pub mod compaction;

use crate::domain::Timestamp;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The layout of a data directory.
#[derive(Debug, Clone)]
pub struct DataDir(PathBuf);

impl DataDir {
    pub fn new(path: impl Into<PathBuf>) -> DataDir {
        DataDir(path.into())
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn store(&self) -> PathBuf {
        self.0.join("store")
    }
    /// The catalogue index.
    pub fn index(&self) -> PathBuf {
        self.0.join("index")
    }
    /// The listings index.
    pub fn listings_index(&self) -> PathBuf {
        self.0.join("listings-index")
    }
    /// The content-addressed media store of fetched and cropped pictures.
    pub fn media(&self) -> PathBuf {
        self.0.join("media")
    }
    /// Where posted snapshots wait for their job; emptied at each start.
    pub fn spool(&self) -> PathBuf {
        self.0.join("spool")
    }
    /// The base URL of the server holding this data dir, while it serves.
    pub fn server_address(&self) -> PathBuf {
        self.0.join("server.addr")
    }
}

/// The bytes of the files under `folder` (0 for one that cannot be read): what a store or an
/// index weighs on disk.
pub fn folder_bytes(folder: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => folder_bytes(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// sled page cache a data dir's store is opened with when none is given. sled's resident
/// memory can reach several times this figure.
pub const DEFAULT_CACHE_BYTES: u64 = 256 << 20;

/// The layout version of a data dir this binary writes and reads.
pub const FORMAT: u32 = 1;

/// What an import under way names as its source when it is the bundled fixtures.
pub const FIXTURES: &str = "the bundled fixtures";

/// `<data dir>/data-dir.json`: this folder is a data dir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Marker {
    pub format: u32,
    pub created_at: String,
}

/// `<data dir>/import-under-way.json`: an import started and has not ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportUnderWay {
    /// The dataset's path as given, or [`FIXTURES`].
    pub source: String,
    pub started_at: String,
}

/// Why a folder is not used as a data dir.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    #[error("{0} is not a data dir: it does not exist (check --data-dir; `serve` or `import` create one)")]
    Missing(PathBuf),
    #[error("{0} is not a data dir: it has no data-dir.json (check --data-dir; `serve` or `import` create one in an empty folder)")]
    NotADataDir(PathBuf),
    #[error("{0} is not empty and is not a data dir (no data-dir.json): refusing to create a store among other files. Is it a dataset? The dataset is `import`'s argument, the data dir is --data-dir")]
    Occupied(PathBuf),
    #[error("{path} is a data dir of format {format}, newer than this binary's {FORMAT}: use the newer binary")]
    Newer { path: PathBuf, format: u32 },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid marker: {source}")]
    BadMarker {
        path: PathBuf,
        source: serde_json::Error,
    },
}

type Result<T> = std::result::Result<T, DataDirError>;

/// What a command may find at its `--data-dir`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A data dir, and nothing else (every command but `serve` and `import`).
    Existing,
    /// A data dir, or an absent or empty folder that becomes one (`serve`, `import`).
    ExistingOrNew,
}

/// What a command found at its `--data-dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A data dir (its marker written now if it is a store from before markers).
    DataDir,
    /// An absent or empty folder, now a data dir whose store was never written.
    New,
}

/// Checks `dir` as a command expecting `expect` may use it, and marks it a data dir when it
/// may be one (a new one, or a store written before markers existed).
pub fn check(dir: &DataDir, expect: Expect) -> Result<Found> {
    let path = dir.path();
    if is_data_dir(dir)? {
        read_marker(dir)?;
        if let Some(interrupted) = compaction::finish_interrupted(dir)? {
            tracing::warn!(data_dir = %path.display(), "{}", <&str>::from(interrupted));
        }
        return Ok(Found::DataDir);
    }
    if has_store_without_marker(dir) {
        write_marker(dir)?;
        return Ok(Found::DataDir);
    }
    match (expect, is_empty_or_absent(path)?) {
        (Expect::Existing, _) if !path.exists() => Err(DataDirError::Missing(path.to_owned())),
        (Expect::Existing, _) => Err(DataDirError::NotADataDir(path.to_owned())),
        (Expect::ExistingOrNew, false) => Err(DataDirError::Occupied(path.to_owned())),
        (Expect::ExistingOrNew, true) => {
            std::fs::create_dir_all(path).map_err(io(path))?;
            write_marker(dir)?;
            Ok(Found::New)
        }
    }
}

/// Writes the marker of `dir` unless it has one: a store opened in process (tests, tools)
/// marks its data dir as the CLI does.
pub fn ensure_marker(dir: &DataDir) -> Result<()> {
    if !is_data_dir(dir)? {
        write_marker(dir)?;
    }
    Ok(())
}

/// True when `path` holds a data dir's marker: what `import` refuses as a dataset.
pub fn is_marked(path: &Path) -> bool {
    marker_path(path).is_file()
}

fn is_data_dir(dir: &DataDir) -> Result<bool> {
    Ok(marker_path(dir.path()).is_file())
}

/// A store written by a binary from before markers: sled's files in `store/`.
fn has_store_without_marker(dir: &DataDir) -> bool {
    dir.store().join("conf").is_file()
}

fn is_empty_or_absent(path: &Path) -> Result<bool> {
    match std::fs::read_dir(path) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(error) => Err(DataDirError::Io {
            path: path.to_owned(),
            source: error,
        }),
    }
}

fn read_marker(dir: &DataDir) -> Result<Marker> {
    let path = marker_path(dir.path());
    let marker: Marker = read_json(&path)?;
    if marker.format > FORMAT {
        return Err(DataDirError::Newer {
            path: dir.path().to_owned(),
            format: marker.format,
        });
    }
    Ok(marker)
}

fn write_marker(dir: &DataDir) -> Result<()> {
    std::fs::create_dir_all(dir.path()).map_err(io(dir.path()))?;
    let marker = Marker {
        format: FORMAT,
        created_at: Timestamp::now().to_rfc3339(),
    };
    write_json(&marker_path(dir.path()), &marker)
}

fn marker_path(dir: &Path) -> PathBuf {
    dir.join("data-dir.json")
}

fn import_path(dir: &DataDir) -> PathBuf {
    dir.path().join("import-under-way.json")
}

/// The import under way in `dir`, if one was started and has not ended (cut short by a crash).
pub fn import_under_way(dir: &DataDir) -> Result<Option<ImportUnderWay>> {
    let path = import_path(dir);
    if !path.is_file() {
        return Ok(None);
    }
    read_json(&path).map(Some)
}

/// Marks the bundled fixtures due in `dir`, a data dir `serve` has just created: the next
/// `App::prepare(true)` imports them, and one cut short is found and done again.
pub fn fixtures_due(dir: &DataDir) -> Result<()> {
    ImportMark::begin(dir, FIXTURES).map(drop)
}

/// An import of `source` under way in a data dir: marked before its first write, unmarked by
/// [`ImportMark::finish`] once it ended. Dropped without finishing (a failed import), the mark
/// stays, and the next `serve` refuses the half-imported store.
#[must_use = "an import's mark is cleared by finish()"]
pub struct ImportMark {
    path: PathBuf,
}

impl ImportMark {
    /// Marks `dir` as having an import of `source` under way, durably, before anything of it
    /// is written.
    pub fn begin(dir: &DataDir, source: &str) -> Result<ImportMark> {
        let path = import_path(dir);
        let mark = ImportUnderWay {
            source: source.to_owned(),
            started_at: Timestamp::now().to_rfc3339(),
        };
        write_json(&path, &mark)?;
        Ok(ImportMark { path })
    }

    /// The import ended: its mark is removed.
    pub fn finish(self) -> Result<()> {
        std::fs::remove_file(&self.path).map_err(io(&self.path))?;
        sync_parent(&self.path)
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read(path).map_err(io(path))?;
    serde_json::from_slice(&text).map_err(|source| DataDirError::BadMarker {
        path: path.to_owned(),
        source,
    })
}

/// Writes `value` to `path` through a temporary file renamed over it, each synced: a crash
/// leaves the old file or the new one, never half of one.
fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let temporary = path.with_extension("json.part");
    let text = serde_json::to_vec_pretty(value).map_err(|source| DataDirError::BadMarker {
        path: path.to_owned(),
        source,
    })?;
    let mut file = std::fs::File::create(&temporary).map_err(io(&temporary))?;
    file.write_all(&text)
        .and_then(|()| file.write_all(b"\n"))
        .and_then(|()| file.sync_all())
        .map_err(io(&temporary))?;
    std::fs::rename(&temporary, path).map_err(io(path))?;
    sync_parent(path)
}

fn sync_parent(path: &Path) -> Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::File::open(parent)
        .and_then(|dir| dir.sync_all())
        .map_err(io(parent))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DataDirError + '_ {
    move |source| DataDirError::Io {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_or_empty_folder_becomes_a_data_dir_only_where_one_may_be_created() {
        let root = tempfile::tempdir().expect("dir");
        let absent = DataDir::new(root.path().join("absent"));
        assert!(matches!(
            check(&absent, Expect::Existing),
            Err(DataDirError::Missing(_))
        ));
        assert!(!absent.path().exists(), "nothing created");
        assert_eq!(
            check(&absent, Expect::ExistingOrNew).expect("new"),
            Found::New
        );
        assert_eq!(
            check(&absent, Expect::Existing).expect("marked"),
            Found::DataDir
        );
        let empty = DataDir::new(root.path().join("empty"));
        std::fs::create_dir(empty.path()).expect("mkdir");
        assert!(matches!(
            check(&empty, Expect::Existing),
            Err(DataDirError::NotADataDir(_))
        ));
    }

    #[test]
    fn a_folder_of_other_files_is_refused_and_left_alone() {
        let root = tempfile::tempdir().expect("dir");
        std::fs::write(root.path().join("brands.jsonl"), "{}\n").expect("write");
        let dir = DataDir::new(root.path());
        for expect in [Expect::Existing, Expect::ExistingOrNew] {
            assert!(check(&dir, expect).is_err());
        }
        assert!(!is_marked(root.path()));
    }

    #[test]
    fn a_store_from_before_markers_is_adopted() {
        let root = tempfile::tempdir().expect("dir");
        let dir = DataDir::new(root.path());
        std::fs::create_dir_all(dir.store()).expect("mkdir");
        std::fs::write(dir.store().join("conf"), "").expect("conf");
        assert_eq!(
            check(&dir, Expect::Existing).expect("adopted"),
            Found::DataDir
        );
        assert!(is_marked(root.path()));
    }

    #[test]
    fn a_newer_format_is_refused() {
        let root = tempfile::tempdir().expect("dir");
        std::fs::write(
            root.path().join("data-dir.json"),
            r#"{"format":99,"createdAt":"2030-01-01T00:00:00.000Z"}"#,
        )
        .expect("write");
        assert!(matches!(
            check(&DataDir::new(root.path()), Expect::Existing),
            Err(DataDirError::Newer { format: 99, .. })
        ));
    }

    #[test]
    fn an_import_mark_stays_until_the_import_finishes() {
        let root = tempfile::tempdir().expect("dir");
        let dir = DataDir::new(root.path());
        check(&dir, Expect::ExistingOrNew).expect("new");
        let mark = ImportMark::begin(&dir, "/data/set").expect("begin");
        let found = import_under_way(&dir).expect("read").expect("under way");
        assert_eq!(found.source, "/data/set");
        mark.finish().expect("finish");
        assert_eq!(import_under_way(&dir).expect("read"), None);
    }
}
