//! The sessions area: back-office users and their sessions. Session bookkeeping writes outside
//! the write turn, each call one flushed sled batch; opening and closing a session writes its
//! audit entry (the audit area's keyspaces) in the same batch.
//! Keyspaces: `User`, `Session`, `SessionByUser`.

use super::codec;
use super::keys::{self, Keyspace};
use super::{Store, StoreError, StoreResult};
use crate::domain::{AuditEntry, Session, TokenHash, User, Username};

/// The store's users and sessions: see [`Store::sessions`].
#[derive(Clone, Copy)]
pub struct Sessions<'s>(pub(super) &'s Store);

impl<'s> Sessions<'s> {
    pub fn user(self, name: &Username) -> StoreResult<Option<User>> {
        self.0.get(keys::user(name))
    }

    /// Every user, by name.
    pub fn users(self) -> impl Iterator<Item = StoreResult<User>> + 's {
        self.0.all(Keyspace::User)
    }

    pub fn session(self, token: &TokenHash) -> StoreResult<Option<Session>> {
        self.0.get(keys::session(token))
    }

    /// The token hashes of every session of `name`.
    pub fn sessions_of(self, name: &Username) -> StoreResult<Vec<TokenHash>> {
        let prefix = keys::sessions_of_prefix(name);
        let mut hashes = Vec::new();
        for key in self.0.db.scan_prefix(&prefix).keys() {
            let key = key?;
            let hash: [u8; 32] =
                key[prefix.len()..]
                    .try_into()
                    .map_err(|_| StoreError::Corrupt {
                        key: key.to_vec(),
                        reason: "a session key without a 32-byte token hash".into(),
                    })?;
            hashes.push(TokenHash(hash));
        }
        Ok(hashes)
    }

    /// Session bookkeeping is a small write of its own, outside the write turn: it touches no
    /// catalogue record, id counter or index, and a login must not wait for a running ingest.
    /// Each call is one atomic sled batch, flushed before it returns.
    pub fn open_session(self, session: &Session, audit: &AuditEntry) -> StoreResult<()> {
        let keys = vec![
            (
                keys::session(&session.token_hash),
                Some(codec::encode(session)),
            ),
            (
                keys::session_of(&session.user, &session.token_hash),
                Some(Vec::new()),
            ),
        ];
        self.0.apply_flushed(keys, std::slice::from_ref(audit))
    }

    /// Records that `session` was just used, if its record is still there: a sign-out between
    /// the request's read of the session and this write stays a sign-out. Put off while the
    /// store's first flush after a start runs ([`Store::flush_once_opened`]): a write then
    /// waits for sled's walk, seconds that the request would take (docs/decisions.md, D-229),
    /// and a seen-at may lag that long; a request after it writes it.
    pub fn touch_session(self, session: &Session) -> StoreResult<()> {
        if self.0.first_flush_under_way() {
            tracing::debug!("a session's seen-at is put off until the store's first flush");
            return Ok(());
        }
        let value = codec::encode(session);
        self.0
            .db
            .fetch_and_update(keys::session(&session.token_hash), |record| {
                record.map(|_| value.clone())
            })?;
        Ok(())
    }

    /// Ends `session`, with the audit entry that says so when a person ended it.
    pub fn close_session(self, session: &Session, audit: Option<&AuditEntry>) -> StoreResult<()> {
        let removed = vec![
            (keys::session(&session.token_hash), None),
            (keys::session_of(&session.user, &session.token_hash), None),
        ];
        self.0
            .apply_flushed(removed, audit.map_or(&[], std::slice::from_ref))
    }
}
