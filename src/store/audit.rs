//! The audit area: the back office's audit trail, newest first. Entries are written by the
//! writes they record (a session opened or closed, a job submitted, a batch of the write turn).
//! Keyspaces: `Audit`.

use super::keys::Keyspace;
use super::{Store, StoreResult};
use crate::domain::AuditEntry;

/// The store's audit trail: see [`Store::audit`].
#[derive(Clone, Copy)]
pub struct Audit<'s>(pub(super) &'s Store);

impl<'s> Audit<'s> {
    /// A new audit entry's id: sled's id generator, unique and growing across restarts, so an
    /// entry needs no write turn (a login is not held up by a running import).
    pub fn next_audit_id(self) -> StoreResult<u64> {
        Ok(self.0.db.generate_id()? + 1)
    }

    /// The audit trail, newest first.
    pub fn audit_newest_first(self) -> impl Iterator<Item = StoreResult<AuditEntry>> + 's {
        self.0.all_newest_first(Keyspace::Audit)
    }

    /// The `limit` entries that follow the newest `skip`, newest first, and how many entries
    /// there are: the keys before the page are stepped over and only the page's entries decoded,
    /// so a page of a long trail costs its own entries, not the trail's.
    pub fn page_newest_first(
        self,
        skip: usize,
        limit: usize,
    ) -> StoreResult<(Vec<AuditEntry>, usize)> {
        let mut page = Vec::with_capacity(limit);
        let mut total = 0;
        for entry in self.0.db.scan_prefix(Keyspace::Audit.prefix()).rev() {
            let (key, value) = entry?;
            if total >= skip && page.len() < limit {
                page.push(super::codec::decode(&key, &value)?);
            }
            total += 1;
        }
        Ok((page, total))
    }
}
