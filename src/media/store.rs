//! The content-addressed media store: each file is named by the SHA-256 of its bytes
//! (`<media>/ab/cdef…`), so equal bytes are stored once, and written by temp file + rename.

use crate::domain::ContentHash;
use sha2::{Digest, Sha256};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Makes temp names unique within the process; the pid makes them unique across processes.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone)]
pub struct MediaStore {
    root: PathBuf,
}

impl MediaStore {
    pub fn new(root: impl Into<PathBuf>) -> MediaStore {
        MediaStore { root: root.into() }
    }

    pub fn hash(bytes: &[u8]) -> ContentHash {
        ContentHash(Sha256::digest(bytes).into())
    }

    /// Where the file of `hash` is, whether or not it exists.
    pub fn path_of(&self, hash: &ContentHash) -> PathBuf {
        let hex = hash.hex();
        let (dir, rest) = hex.split_at(2);
        self.root.join(dir).join(rest)
    }

    /// Stores `bytes` unless a file of the same hash is there already. A crash leaves at most
    /// a temp file, never a partial file under a hash name.
    pub fn put(&self, bytes: &[u8]) -> io::Result<ContentHash> {
        let hash = Self::hash(bytes);
        let path = self.path_of(&hash);
        if path.exists() {
            return Ok(hash);
        }
        let temp = self.temp_path()?;
        write_synced(&temp, bytes)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::rename(&temp, &path).inspect_err(|_| {
            let _ = std::fs::remove_file(&temp);
        })?;
        Ok(hash)
    }

    pub fn read(&self, hash: &ContentHash) -> io::Result<Vec<u8>> {
        std::fs::read(self.path_of(hash))
    }

    fn temp_path(&self) -> io::Result<PathBuf> {
        let dir = self.root.join("tmp");
        std::fs::create_dir_all(&dir)?;
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        Ok(dir.join(format!("{}.{n}", std::process::id())))
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_bytes_are_stored_once_under_their_hash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let media = MediaStore::new(dir.path());
        let first = media.put(b"same bytes").expect("put");
        let second = media.put(b"same bytes").expect("put");
        assert_eq!(first, second);
        let path = media.path_of(&first);
        assert!(path.starts_with(dir.path().join(&first.hex()[..2])));
        assert_eq!(media.read(&first).expect("read"), b"same bytes");
        let files = std::fs::read_dir(path.parent().expect("dir"))
            .expect("ls")
            .count();
        assert_eq!(files, 1);
        let temps = std::fs::read_dir(dir.path().join("tmp"))
            .expect("ls")
            .count();
        assert_eq!(temps, 0, "no temp file left behind");
    }
}
