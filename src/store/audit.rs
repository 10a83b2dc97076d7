//! The audit area: the back office's audit trail, newest first, whole or by user, by action or
//! both. Each entry is kept under its id and keyed in the lists of its user, its action and the
//! two together, with each list's count, all in the sled batch that appends it, so a page is a
//! reverse range read of one list. Entries are written by the writes they record (a session
//! opened or closed, a job submitted, a batch of the write turn).
//! Keyspaces: `Audit`, `AuditByUser`, `AuditByAction`, `AuditByUserAction`, `AuditCount`.

use super::codec::{self, decode_u64, encode_u64};
use super::keys::{self, Keyspace};
use super::write::Operation;
use super::{secondary_id, Store, StoreResult};
use crate::domain::AuditEntry;
use std::collections::BTreeMap;
use std::sync::MutexGuard;

/// The store's audit trail: see [`Store::audit`].
#[derive(Clone, Copy)]
pub struct Audit<'s>(pub(super) &'s Store);

/// Which entries of the audit trail a page lists: every entry, or those by one user, of one
/// action, or both. A user or action no entry has lists none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditFilter<'a> {
    pub user: Option<&'a str>,
    pub action: Option<&'a str>,
}

impl<'a> AuditFilter<'a> {
    /// The lists `entry` is in besides the whole trail: its user's, its action's, and its
    /// user's of its action.
    fn filtered_lists_of(entry: &'a AuditEntry) -> [AuditFilter<'a>; 3] {
        let (user, action) = (Some(entry.user.as_str()), Some(entry.action.as_str()));
        [
            AuditFilter { user, action: None },
            AuditFilter { user: None, action },
            AuditFilter { user, action },
        ]
    }

    /// The start of the keys of this list.
    fn list(self) -> Vec<u8> {
        keys::audit_list(self.user, self.action)
    }

    /// True when this list holds `entry`: what the keys of the list stand for.
    #[cfg(test)]
    pub(crate) fn lists(self, entry: &AuditEntry) -> bool {
        self.user.is_none_or(|user| user == entry.user)
            && self.action.is_none_or(|action| action == entry.action)
    }
}

impl<'s> Audit<'s> {
    /// A new audit entry's id: sled's id generator, unique and growing across restarts, so an
    /// entry needs no write turn (a login is not held up by a running import).
    pub fn next_audit_id(self) -> StoreResult<u64> {
        Ok(self.0.db.generate_id()? + 1)
    }

    /// The whole audit trail, newest first, every entry decoded: for tests and checks, never
    /// for a page.
    pub fn audit_newest_first(self) -> impl Iterator<Item = StoreResult<AuditEntry>> + 's {
        self.0.all_newest_first(Keyspace::Audit)
    }

    /// The entries of `filter`'s list that follow its newest `skip`, at most `limit`, newest
    /// first, and how many entries the list holds. The count is kept with the list, not
    /// counted; the keys before the page are stepped over without their entries being read.
    pub fn page(
        self,
        filter: AuditFilter<'_>,
        skip: usize,
        limit: usize,
    ) -> StoreResult<(Vec<AuditEntry>, usize)> {
        let list = filter.list();
        let total = self.count_of(&list)?;
        let ids = page_ids(&self.0.db, &list, total, skip, limit)?;
        Ok((self.0.many(Keyspace::Audit, ids)?, total))
    }

    /// How many entries the list whose keys start with `list` holds, as its appends left it.
    fn count_of(self, list: &[u8]) -> StoreResult<usize> {
        let count = self.stored_count(&keys::audit_count(list))?;
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    }

    fn stored_count(self, key: &[u8]) -> StoreResult<u64> {
        match self.0.db.get(key)? {
            Some(value) => decode_u64(key, &value),
            None => Ok(0),
        }
    }

    /// The writes that append `entries`: each entry under its id and in the lists of its user,
    /// its action and both, and the counts of the four lists it is in moved on from the
    /// counts the store holds (read under `_right`, so that no other append moves them before
    /// these writes are applied).
    pub(super) fn append_operations(
        self,
        entries: &[AuditEntry],
        _right: &AppendRight<'_>,
    ) -> StoreResult<Vec<Operation>> {
        let mut operations = Vec::new();
        let mut added: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        for entry in entries {
            let record = codec::encode(entry);
            operations.push((Keyspace::Audit.id_key(entry.id), Some(record)));
            operations.extend(list_keys(entry).map(|key| (key, Some(Vec::new()))));
            for key in count_keys(entry) {
                *added.entry(key).or_default() += 1;
            }
        }
        for (key, added) in added {
            let count = self.stored_count(&key)? + added;
            operations.push((key, Some(encode_u64(count).to_vec())));
        }
        Ok(operations)
    }
}

/// The right to append to the audit trail, held from reading the lists' counts to applying
/// the write that moves them: entries are appended inside the write turn and outside it (a
/// login, a job submitted), so the turn alone would let two appends count over each other.
pub(super) struct AppendRight<'s> {
    _held: MutexGuard<'s, ()>,
}

impl Store {
    /// Waits for the right to append to the audit trail (every clone shares it) and takes it.
    pub(super) fn audit_append_right(&self) -> AppendRight<'_> {
        AppendRight {
            _held: self
                .audit_appends
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        }
    }
}

/// The keys of `entry` in the lists of its user, its action and both (holding nothing): what
/// an append and the migration to schema 9 write besides the entry itself.
pub(super) fn list_keys(entry: &AuditEntry) -> impl Iterator<Item = Vec<u8>> + '_ {
    AuditFilter::filtered_lists_of(entry)
        .into_iter()
        .map(move |filter| {
            let mut key = filter.list();
            key.extend_from_slice(&entry.id.to_be_bytes());
            key
        })
}

/// The count keys of the four lists `entry` is in, the whole trail's first.
pub(super) fn count_keys(entry: &AuditEntry) -> impl Iterator<Item = Vec<u8>> + '_ {
    std::iter::once(AuditFilter::default())
        .chain(AuditFilter::filtered_lists_of(entry))
        .map(|filter| keys::audit_count(&filter.list()))
}

/// The ids of the page of the list whose keys start with `list` (`total` keys, each ending in
/// an entry id) that follows its newest `skip` keys, at most `limit`, newest first. The keys
/// before the page are stepped over from the nearer end: a page near the oldest entries steps
/// over the keys older than it, not the newer.
fn page_ids(
    db: &sled::Db,
    list: &[u8],
    total: usize,
    skip: usize,
    limit: usize,
) -> StoreResult<Vec<u64>> {
    let size = limit.min(total.saturating_sub(skip));
    if size == 0 {
        return Ok(Vec::new());
    }
    let older = total - skip - size;
    let keys = db.scan_prefix(list).keys();
    if skip <= older {
        read_ids(keys.rev(), skip, size)
    } else {
        let mut ids = read_ids(keys, older, size)?;
        ids.reverse();
        Ok(ids)
    }
}

/// The ids ending the `size` keys of `keys` after its first `step_over`.
fn read_ids(
    mut keys: impl Iterator<Item = sled::Result<sled::IVec>>,
    step_over: usize,
    size: usize,
) -> StoreResult<Vec<u64>> {
    for key in keys.by_ref().take(step_over) {
        key?;
    }
    keys.take(size).map(|key| secondary_id(&key?)).collect()
}

#[cfg(test)]
mod tests;
