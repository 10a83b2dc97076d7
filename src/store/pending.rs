//! Pictures queued for the image worker that nothing has happened to yet, kept [`PER_GROUP`]
//! to a key (`Keyspace::PendingPictures`) instead of a `PictureState` record and a `PictureDue`
//! key each: a new listing of an ingest then costs two keys and a fraction, not six or seven,
//! and sled's apply rate per key is what bounds a 10M-listing ingest (docs/decisions.md,
//! D-114).
//!
//! A picture is in a group exactly while it has no state record: the first state written for
//! it (`WriteBatch::put_picture`, the worker's first fetch) takes it out of its group in the
//! same commit. Reads look for the state record first, then the group (`Pictures::picture`,
//! `Pictures::pictures_maybe_due`), so stores written before groups existed read as they did.
//!
//! A group's key is the id of the first picture it was written with; its pictures' ids grow,
//! and all were allocated by one write after every id of the groups before it, so the only
//! group that can hold picture `id` is the one with the greatest key at or below `id`.

use super::codec::{decode, encode};
use super::keys::Keyspace;
use super::write::Operation;
use super::{Store, StoreError, StoreResult};
use crate::domain::{PictureId, PictureRecord, Timestamp};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Pictures a group holds at most: a new listing has 2.3 on average, so a group is one key for
/// about seven listings, and a worker's write that takes a picture out rewrites about 1 KB.
pub const PER_GROUP: usize = 16;

/// Pending pictures queued by one write at one time, in id order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingGroup {
    /// When they were queued: the `updated_at` of their pending records.
    pub queued_at: Timestamp,
    /// Each picture's id and source URL.
    pub pictures: Vec<(PictureId, String)>,
}

impl PendingGroup {
    fn record(id: PictureId, source: &str, queued_at: Timestamp) -> PictureRecord {
        PictureRecord::pending(id, source.to_owned(), queued_at)
    }

    /// The pending record of picture `id`, if the group holds it.
    pub fn find(&self, id: PictureId) -> Option<PictureRecord> {
        let (_, source) = self.pictures.iter().find(|(held, _)| *held == id)?;
        Some(PendingGroup::record(id, source, self.queued_at))
    }

    /// The pending record of every picture the group holds, in id order.
    pub fn records(&self) -> impl Iterator<Item = PictureRecord> + '_ {
        (self.pictures.iter()).map(|(id, source)| PendingGroup::record(*id, source, self.queued_at))
    }

    /// Takes picture `id` out; false when the group does not hold it.
    fn take(&mut self, id: PictureId) -> bool {
        let before = self.pictures.len();
        self.pictures.retain(|(held, _)| *held != id);
        self.pictures.len() < before
    }

    /// Whether picture `id`, queued at `at`, can join: the group has room and was queued then.
    fn takes(&self, at: Timestamp) -> bool {
        self.pictures.len() < PER_GROUP && self.queued_at == at
    }
}

/// The group with the greatest key at or below `id`, with its key: the only one that can hold
/// picture `id` (it may not).
pub(super) fn group_at(store: &Store, id: PictureId) -> StoreResult<Option<(u64, PendingGroup)>> {
    let first = Keyspace::PendingPictures.prefix();
    let last = Keyspace::PendingPictures.id_key(id.0);
    match store.db.range(first..=last).next_back() {
        Some(entry) => {
            let (key, value) = entry?;
            let group_key = super::keys::trailing_id(&key).ok_or_else(|| StoreError::Corrupt {
                key: key.to_vec(),
                reason: "pending pictures key without a picture id".into(),
            })?;
            Ok(Some((group_key, decode(&key, &value)?)))
        }
        None => Ok(None),
    }
}

/// At most `limit` pending records held in groups, of pictures from `from` on, in id order,
/// and the id of the next one if there is one.
pub(super) fn records_from(
    store: &Store,
    from: PictureId,
    limit: usize,
) -> StoreResult<(Vec<PictureRecord>, Option<PictureId>)> {
    // The group that may hold `from` starts at or below it.
    let start = group_at(store, from)?.map_or(from.0, |(key, _)| key);
    let prefix = Keyspace::PendingPictures.prefix();
    let groups = (store.db.range(Keyspace::PendingPictures.id_key(start)..)).take_while(|entry| {
        entry
            .as_ref()
            .map_or(true, |(key, _)| key.starts_with(&prefix))
    });
    let mut records = Vec::new();
    for entry in groups {
        let (key, value) = entry?;
        let group: PendingGroup = decode(&key, &value)?;
        for record in group.records().filter(|record| record.id >= from) {
            if records.len() == limit {
                return Ok((records, Some(record.id)));
            }
            records.push(record);
        }
    }
    Ok((records, None))
}

/// A group a batch writes: new, or stored and losing pictures.
#[derive(Debug)]
struct Touched {
    group: PendingGroup,
    /// True when the store holds it: emptied, its key is removed.
    stored: bool,
}

/// What one batch does to the groups: the pictures it queues and the pictures whose first
/// state it writes. Resolved against the store at commit, inside the write turn.
#[derive(Debug, Default)]
pub(super) struct GroupWrites {
    groups: BTreeMap<u64, Touched>,
    /// The key of the group new pictures join, while it has room.
    open: Option<u64>,
    /// Pictures whose state record the batch writes, in the order written.
    stated: Vec<PictureId>,
}

impl GroupWrites {
    /// Queues picture `id` (allocated after every picture queued before it) from `source`.
    pub fn queue(&mut self, id: PictureId, source: String, at: Timestamp) {
        let open = self.open.and_then(|key| self.groups.get_mut(&key));
        // A group is found by its first id, so its ids must grow: see the module's doc.
        debug_assert!(
            (open.as_ref()).is_none_or(|t| t
                .group
                .pictures
                .last()
                .is_some_and(|(last, _)| *last < id)),
            "picture {id:?} queued after a greater id"
        );
        match open {
            Some(touched) if touched.group.takes(at) => touched.group.pictures.push((id, source)),
            _ => {
                let group = PendingGroup {
                    queued_at: at,
                    pictures: vec![(id, source)],
                };
                let stored = false;
                self.groups.insert(id.0, Touched { group, stored });
                self.open = Some(id.0);
            }
        }
    }

    /// Notes that the batch writes picture `id`'s state record: it leaves its group.
    pub fn stated(&mut self, id: PictureId) {
        self.stated.push(id);
    }

    /// The puts and removals of group keys this batch makes, read against `store`.
    pub fn into_operations(mut self, store: &Store) -> StoreResult<Vec<Operation>> {
        if !self.stated.is_empty() {
            // Ids from this one on were allocated by this batch: in no stored group.
            let fresh_from = store
                .meta(super::keys::MetaKey::NextId(Keyspace::Picture))?
                .unwrap_or(1);
            for id in std::mem::take(&mut self.stated) {
                self.take_out(store, id, fresh_from)?;
            }
        }
        Ok(self
            .groups
            .into_iter()
            .filter_map(|(key, touched)| {
                let key_bytes = Keyspace::PendingPictures.id_key(key);
                match (touched.group.pictures.is_empty(), touched.stored) {
                    (false, _) => Some((key_bytes, Some(encode(&touched.group)))),
                    (true, true) => Some((key_bytes, None)),
                    (true, false) => None,
                }
            })
            .collect())
    }

    /// Takes picture `id` out of the group holding it, this batch's or the store's.
    fn take_out(&mut self, store: &Store, id: PictureId, fresh_from: u64) -> StoreResult<()> {
        if let Some((_, touched)) = self.groups.range_mut(..=id.0).next_back() {
            if touched.group.take(id) {
                return Ok(());
            }
        }
        if id.0 >= fresh_from {
            return Ok(());
        }
        if let Some((key, mut group)) = group_at(store, id)? {
            // A group already taken from is the batch's copy, which the lookup above read.
            if !self.groups.contains_key(&key) && group.take(id) {
                let stored = true;
                self.groups.insert(key, Touched { group, stored });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
