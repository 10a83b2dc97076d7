//! Which models each write of the duplicate finder's pairs or dismissals (or of what its groups
//! are ordered and filtered by) touched, kept in the store beside the pairs
//! (`Keyspace::DuplicatesTouched`, in the write's own batch), so that groups kept at an older
//! duplicates generation, in memory or in the store across a restart, are joined again around
//! those models only instead of around a million.

use super::keys::Keyspace;
use super::write::Operation;
use super::{StoreError, StoreResult};
use crate::domain::ModelId;

/// Models an entry, and the entries read at once, hold at most: more (a full pass) leaves a
/// gap, and readers join every group again instead.
const KEEP_MODELS: usize = 100_000;

/// The write of the entry of duplicates generation `generation`: `models`, with those of an
/// entry a failed write of that generation left (its keys may be part-applied); its removal, a
/// gap, when they are more than [`KEEP_MODELS`] or `gap` (every group is to be joined again).
pub(super) fn entry(
    db: &sled::Db,
    generation: u64,
    models: impl IntoIterator<Item = ModelId>,
    gap: bool,
) -> StoreResult<Operation> {
    let key = Keyspace::DuplicatesTouched.id_key(generation);
    let mut ids = match db.get(&key)? {
        Some(value) => decode(&key, &value)?,
        None => Vec::new(),
    };
    ids.extend(models);
    ids.sort_unstable();
    ids.dedup();
    if gap || ids.len() > KEEP_MODELS {
        return Ok((key, None));
    }
    let value = ids.iter().flat_map(|id| id.0.to_be_bytes()).collect();
    Ok((key, Some(value)))
}

/// Every model touched by the writes after duplicates generation `after` up to `upto`, sorted
/// and each once; `None` when a write in between left no entry, or they hold too many.
pub(super) fn touched_between(
    db: &sled::Db,
    after: u64,
    upto: u64,
) -> StoreResult<Option<Vec<ModelId>>> {
    if upto <= after {
        return Ok(Some(Vec::new()));
    }
    let range =
        Keyspace::DuplicatesTouched.id_key(after + 1)..=Keyspace::DuplicatesTouched.id_key(upto);
    let mut expected = after + 1;
    let mut touched = Vec::new();
    for entry in db.range(range) {
        let (key, value) = entry?;
        if super::keys::trailing_id(&key) != Some(expected) {
            return Ok(None);
        }
        touched.extend(decode(&key, &value)?);
        if touched.len() > KEEP_MODELS {
            return Ok(None);
        }
        expected += 1;
    }
    if expected != upto + 1 {
        return Ok(None);
    }
    touched.sort_unstable();
    touched.dedup();
    Ok(Some(touched))
}

/// The keys of the entries up to duplicates generation `upto`: groups kept at `upto` need none.
pub(super) fn entries_up_to(db: &sled::Db, upto: u64) -> StoreResult<Vec<Vec<u8>>> {
    let range = Keyspace::DuplicatesTouched.id_key(0)..=Keyspace::DuplicatesTouched.id_key(upto);
    db.range(range)
        .keys()
        .map(|key| Ok(key?.to_vec()))
        .collect()
}

fn decode(key: &[u8], value: &[u8]) -> StoreResult<Vec<ModelId>> {
    if value.len() % 8 != 0 {
        return Err(StoreError::Corrupt {
            key: key.to_vec(),
            reason: "touched models that are no 8-byte ids".into(),
        });
    }
    Ok(value
        .chunks_exact(8)
        .filter_map(|id| id.try_into().ok())
        .map(|id| ModelId(u64::from_be_bytes(id)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(raw: &[u64]) -> Vec<ModelId> {
        raw.iter().copied().map(ModelId).collect()
    }

    fn db() -> sled::Db {
        sled::Config::new().temporary(true).open().expect("sled")
    }

    fn record(db: &sled::Db, generation: u64, models: &[u64]) {
        let (key, value) = entry(db, generation, ids(models), false).expect("entry");
        match value {
            Some(value) => db.insert(key, value),
            None => db.remove(key),
        }
        .expect("write");
    }

    #[test]
    fn the_models_of_every_write_in_between_each_once() {
        let db = db();
        record(&db, 1, &[5, 3]);
        record(&db, 2, &[3, 9]);
        record(&db, 3, &[1]);
        let between = |after, upto| touched_between(&db, after, upto).expect("read");
        assert_eq!(between(0, 3), Some(ids(&[1, 3, 5, 9])));
        assert_eq!(between(1, 2), Some(ids(&[3, 9])));
        assert_eq!(between(3, 3), Some(Vec::new()));
    }

    #[test]
    fn a_write_without_an_entry_is_a_gap() {
        let db = db();
        record(&db, 4, &[1]);
        record(&db, 5, &[2]);
        let between = |after, upto| touched_between(&db, after, upto).expect("read");
        assert_eq!(between(2, 5), None, "generation 3 has no entry");
        assert_eq!(between(4, 6), None, "generation 6 has no entry");
        assert_eq!(between(3, 5), Some(ids(&[1, 2])));
        let (key, value) = entry(&db, 6, ids(&[3]), true).expect("entry");
        assert_eq!((key, value), (Keyspace::DuplicatesTouched.id_key(6), None));
    }

    #[test]
    fn a_failed_write_and_its_retry_share_an_entry() {
        let db = db();
        record(&db, 1, &[1]);
        record(&db, 1, &[2]);
        assert_eq!(
            touched_between(&db, 0, 1).expect("read"),
            Some(ids(&[1, 2]))
        );
    }

    #[test]
    fn a_write_too_large_to_keep_leaves_a_gap_and_entries_are_forgotten_up_to_a_generation() {
        let db = db();
        record(&db, 1, &[1]);
        let many: Vec<u64> = (0..KEEP_MODELS as u64 + 1).collect();
        record(&db, 2, &many);
        record(&db, 3, &[7]);
        assert_eq!(touched_between(&db, 0, 3).expect("read"), None);
        assert_eq!(touched_between(&db, 2, 3).expect("read"), Some(ids(&[7])));
        let forgotten = entries_up_to(&db, 2).expect("keys");
        assert_eq!(forgotten, [Keyspace::DuplicatesTouched.id_key(1)]);
    }
}
