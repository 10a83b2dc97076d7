//! Where a compacted copy of the store is made and how it takes the store's place: a copy in
//! `store.compacting/`, marked verified once checked, swapped in by two renames, and an
//! interrupted compaction finished or undone by the next command before it opens the store.

use super::{io, sync_parent, DataDir, Result};
use std::path::{Path, PathBuf};

/// Written into the copy once every record of it was compared with the store's.
const VERIFIED: &str = "compaction-verified";

impl DataDir {
    /// Where `compact` writes the store's copy.
    pub fn compacting_store(&self) -> PathBuf {
        self.path().join("store.compacting")
    }

    /// Where the store waits, during the swap, until its copy is in place.
    fn store_before_compaction(&self) -> PathBuf {
        self.path().join("store.before-compaction")
    }
}

/// What the start of a command found of a compaction and did with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupted {
    /// A copy left by a compaction stopped before its swap: removed, the store as it was.
    CopyRemoved,
    /// A swap stopped half-way with the copy verified: the copy put in the store's place.
    SwapFinished,
    /// A swap stopped half-way before the copy was verified: the store put back.
    StoreRestored,
}

/// Marks the copy verified: from now on an interrupted swap is finished rather than undone.
pub fn mark_verified(dir: &DataDir) -> Result<()> {
    let path = dir.compacting_store().join(VERIFIED);
    let file = std::fs::File::create(&path).map_err(io(&path))?;
    file.sync_all().map_err(io(&path))?;
    sync_parent(&path)
}

/// Puts the verified copy in the store's place: the store renamed aside, the copy renamed in,
/// the old store removed. A crash between any two steps is finished by
/// [`finish_interrupted`] at the next command's start.
pub fn swap_in_copy(dir: &DataDir) -> Result<()> {
    let (store, copy, aside) = (
        dir.store(),
        dir.compacting_store(),
        dir.store_before_compaction(),
    );
    rename(&store, &aside)?;
    rename(&copy, &store)?;
    remove_marker(&store)?;
    remove(&aside)
}

/// Finishes or undoes a compaction a crash or a kill interrupted, before anything opens the
/// store; `None` when there was none.
pub fn finish_interrupted(dir: &DataDir) -> Result<Option<Interrupted>> {
    let (store, copy, aside) = (
        dir.store(),
        dir.compacting_store(),
        dir.store_before_compaction(),
    );
    if aside.exists() {
        if store.exists() {
            // The copy was renamed in: only the old store was left to remove.
            remove_marker(&store)?;
            remove(&aside)?;
            return Ok(Some(Interrupted::SwapFinished));
        }
        if copy.join(VERIFIED).is_file() {
            rename(&copy, &store)?;
            remove_marker(&store)?;
            remove(&aside)?;
            return Ok(Some(Interrupted::SwapFinished));
        }
        rename(&aside, &store)?;
        remove(&copy)?;
        return Ok(Some(Interrupted::StoreRestored));
    }
    if copy.exists() {
        remove(&copy)?;
        return Ok(Some(Interrupted::CopyRemoved));
    }
    Ok(None)
}

/// Removes a copy left half-made by a compaction that failed.
pub fn remove_copy(dir: &DataDir) -> Result<()> {
    remove(&dir.compacting_store())
}

fn remove_marker(store: &Path) -> Result<()> {
    let marker = store.join(VERIFIED);
    match std::fs::remove_file(&marker) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(io(&marker)(error)),
        _ => Ok(()),
    }
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(io(from))?;
    sync_parent(to)
}

fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(io(path)(error)),
        _ => sync_parent(path),
    }
}

impl From<Interrupted> for &'static str {
    fn from(what: Interrupted) -> &'static str {
        match what {
            Interrupted::CopyRemoved => "a compaction's unfinished copy of the store was removed",
            Interrupted::SwapFinished => {
                "an interrupted compaction's verified copy took the store's place"
            }
            Interrupted::StoreRestored => {
                "an interrupted compaction was undone: the store is as it was"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A data dir whose store, copy and set-aside store hold a file naming which each is.
    fn layout(store: bool, copy: Option<bool>, aside: bool) -> (tempfile::TempDir, DataDir) {
        let folder = tempfile::tempdir().expect("dir");
        let dir = DataDir::new(folder.path());
        let make = |path: PathBuf, name: &str| {
            std::fs::create_dir_all(&path).expect("dir");
            std::fs::write(path.join("which"), name).expect("file");
        };
        if store {
            make(dir.store(), "original");
        }
        if let Some(verified) = copy {
            make(dir.compacting_store(), "copy");
            if verified {
                std::fs::write(dir.compacting_store().join(VERIFIED), "").expect("mark");
            }
        }
        if aside {
            make(dir.store_before_compaction(), "original");
        }
        (folder, dir)
    }

    fn store_is(dir: &DataDir) -> String {
        std::fs::read_to_string(dir.store().join("which")).expect("a store")
    }

    #[test]
    fn every_point_a_compaction_can_stop_at_ends_with_one_whole_store() {
        // Killed while copying: the copy goes, the store stays.
        let (_f, dir) = layout(true, Some(false), false);
        assert_eq!(
            finish_interrupted(&dir).expect("ok"),
            Some(Interrupted::CopyRemoved)
        );
        assert_eq!(store_is(&dir), "original");
        // Killed after the store was set aside, the copy unverified: the store comes back.
        let (_f, dir) = layout(false, Some(false), true);
        assert_eq!(
            finish_interrupted(&dir).expect("ok"),
            Some(Interrupted::StoreRestored)
        );
        assert_eq!(store_is(&dir), "original");
        // The same with the copy verified: the copy goes in.
        let (_f, dir) = layout(false, Some(true), true);
        assert_eq!(
            finish_interrupted(&dir).expect("ok"),
            Some(Interrupted::SwapFinished)
        );
        assert_eq!(store_is(&dir), "copy");
        assert!(!dir.store().join(VERIFIED).exists());
        // Killed after the copy went in: only the old store is left to remove.
        let (_f, dir) = layout(true, None, true);
        assert_eq!(
            finish_interrupted(&dir).expect("ok"),
            Some(Interrupted::SwapFinished)
        );
        assert_eq!(store_is(&dir), "original");
        for (_f, dir) in [layout(true, None, false), layout(false, Some(true), true)] {
            let _ = finish_interrupted(&dir);
            assert!(!dir.store_before_compaction().exists());
            assert!(!dir.compacting_store().exists());
            assert_eq!(finish_interrupted(&dir).expect("ok"), None);
        }
    }

    #[test]
    fn a_verified_copy_is_swapped_in_whole() {
        let (_f, dir) = layout(true, Some(true), false);
        swap_in_copy(&dir).expect("swap");
        assert_eq!(store_is(&dir), "copy");
        assert!(!dir.compacting_store().exists());
        assert!(!dir.store_before_compaction().exists());
        assert!(!dir.store().join(VERIFIED).exists());
    }
}
