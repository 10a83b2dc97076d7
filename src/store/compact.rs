//! The store copied into a fresh sled database, every tree key by key in key order, and the
//! copy compared with it record by record: `watch-catalogue compact`, which gives back the
//! space sled's files hold beyond the records in them (page versions not yet reclaimed). The
//! swap of the copy into the store's place is the data dir's ([`crate::data_dir::compaction`]).

use super::{Store, StoreResult};
use std::path::Path;

/// Keys per sled batch written into the copy.
const BATCH_KEYS: usize = 50_000;

/// What a copy holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyReport {
    pub trees: usize,
    pub keys: u64,
    /// Bytes of keys and values: what the records weigh, without sled's overhead.
    pub bytes: u64,
}

/// The copy, open, and what it holds.
pub struct StoreCopy {
    db: sled::Db,
    pub report: CopyReport,
}

/// A copy that is not the store's: the first difference found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the copy differs from the store in tree {tree:?} at key {key:?}")]
pub struct CopyDiffers {
    pub tree: String,
    pub key: Vec<u8>,
}

impl Store {
    /// Copies every tree into a new sled database at `dest`, opened with a page cache of
    /// `cache_bytes`, and flushes it. `batch_done` is told the keys of each batch written and
    /// answers whether to go on; `Ok(None)` when it said stop. The copy stays open (closing
    /// and opening it again could meet sled's lock still held by its threads).
    pub fn copy_into(
        &self,
        dest: &Path,
        cache_bytes: u64,
        batch_done: &mut dyn FnMut(u64) -> bool,
    ) -> StoreResult<Option<StoreCopy>> {
        let copy = super::sled_config(dest, cache_bytes).open()?;
        let mut report = CopyReport::default();
        for name in self.db.tree_names() {
            let (from, to) = (self.db.open_tree(&name)?, copy.open_tree(&name)?);
            report.trees += 1;
            let mut batch = sled::Batch::default();
            let mut in_batch = 0;
            for entry in from.iter() {
                let (key, value) = entry?;
                report.bytes += (key.len() + value.len()) as u64;
                batch.insert(key, value);
                in_batch += 1;
                if in_batch == BATCH_KEYS {
                    to.apply_batch(std::mem::take(&mut batch))?;
                    report.keys += in_batch as u64;
                    in_batch = 0;
                    if !batch_done(BATCH_KEYS as u64) {
                        return Ok(None);
                    }
                }
            }
            to.apply_batch(batch)?;
            report.keys += in_batch as u64;
            if !batch_done(in_batch as u64) {
                return Ok(None);
            }
        }
        copy.flush()?;
        Ok(Some(StoreCopy { db: copy, report }))
    }

    /// Compares every record of the store with `copy`, both read in key order; `counted` is
    /// told the keys compared, a batch at a time.
    pub fn compare_with_copy(
        &self,
        copy: &StoreCopy,
        counted: &mut dyn FnMut(u64),
    ) -> StoreResult<Result<u64, CopyDiffers>> {
        let copy = &copy.db;
        let names = self.db.tree_names();
        if copy.tree_names() != names {
            return Ok(Err(CopyDiffers {
                tree: "(the list of trees)".to_owned(),
                key: Vec::new(),
            }));
        }
        let mut compared = 0;
        for name in names {
            let (ours, theirs) = (self.db.open_tree(&name)?, copy.open_tree(&name)?);
            let mut theirs = theirs.iter();
            for entry in ours.iter() {
                let (key, value) = entry?;
                let same = match theirs.next().transpose()? {
                    Some((other_key, other_value)) => key == other_key && value == other_value,
                    None => false,
                };
                if !same {
                    return Ok(Err(CopyDiffers {
                        tree: String::from_utf8_lossy(&name).into_owned(),
                        key: key.to_vec(),
                    }));
                }
                compared += 1;
                if compared % BATCH_KEYS as u64 == 0 {
                    counted(BATCH_KEYS as u64);
                }
            }
            if let Some((key, _)) = theirs.next().transpose()? {
                return Ok(Err(CopyDiffers {
                    tree: String::from_utf8_lossy(&name).into_owned(),
                    key: key.to_vec(),
                }));
            }
        }
        counted(compared % BATCH_KEYS as u64);
        Ok(Ok(compared))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(records: &[(&[u8], &[u8])], tree: Option<&str>) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(&dir.path().join("store"), 1 << 20).expect("store");
        for (key, value) in records {
            store.db.insert(key, *value).expect("insert");
            if let Some(tree) = tree {
                store
                    .db
                    .open_tree(tree)
                    .expect("tree")
                    .insert(key, *value)
                    .expect("insert");
            }
        }
        (dir, store)
    }

    #[test]
    fn a_copy_holds_every_record_of_every_tree_and_compares_equal() {
        let (dir, store) = store_with(&[(b"a", b"1"), (b"b", b"22")], Some("other"));
        let dest = dir.path().join("copy");
        let copy = store
            .copy_into(&dest, 1 << 20, &mut |_| true)
            .expect("copy")
            .expect("not stopped");
        let report = copy.report;
        // The default tree (with the schema's meta keys) and `other`.
        assert_eq!(report.trees, 2);
        assert!(report.keys >= 4, "{report:?}");
        let compared = store
            .compare_with_copy(&copy, &mut |_| {})
            .expect("read")
            .expect("equal");
        assert_eq!(compared, report.keys);
    }

    #[test]
    fn a_copy_that_lost_or_changed_a_record_is_found_out() {
        let (dir, store) = store_with(&[(b"a", b"1"), (b"b", b"22")], None);
        let dest = dir.path().join("copy");
        let copy = store
            .copy_into(&dest, 1 << 20, &mut |_| true)
            .expect("copy")
            .expect("not stopped");
        copy.db.insert(b"b", b"23".as_slice()).expect("change");
        let differs = store
            .compare_with_copy(&copy, &mut |_| {})
            .expect("read")
            .expect_err("a difference");
        assert_eq!(differs.key, b"b".to_vec());
        copy.db.insert(b"b", b"22".as_slice()).expect("restore");
        copy.db.insert(b"c", b"3".as_slice()).expect("add");
        assert!(store
            .compare_with_copy(&copy, &mut |_| {})
            .expect("read")
            .is_err());
    }
}
