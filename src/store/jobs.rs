//! The jobs area: the records of batch jobs submitted to a running server, written outside the
//! write turn (a job is submitted while another holds it); submitting one writes its audit
//! entry (the audit area's keyspaces) in the same batch.
//! Keyspaces: `Job`, and the meta key `MetaKey::NextId(Keyspace::Job)`.

use super::codec::{self, decode_u64};
use super::keys::{Keyspace, MetaKey};
use super::{Store, StoreError, StoreResult};
use crate::domain::{AuditEntry, JobId, JobRecord};

/// The store's batch jobs: see [`Store::jobs`].
#[derive(Clone, Copy)]
pub struct Jobs<'s>(pub(super) &'s Store);

impl<'s> Jobs<'s> {
    /// A new job's id: a counter of its own, bumped atomically outside the write turn (a job is
    /// submitted while another holds the turn).
    pub fn next_job_id(self) -> StoreResult<JobId> {
        let key = MetaKey::NextId(Keyspace::Job).key();
        let next = self.0.db.update_and_fetch(&key, |old| {
            let last = old
                .and_then(|bytes| <[u8; 8]>::try_from(bytes).ok())
                .map_or(0, u64::from_be_bytes);
            Some((last + 1).to_be_bytes().to_vec())
        })?;
        let value = next.ok_or_else(|| StoreError::Corrupt {
            key: key.clone(),
            reason: "the job counter vanished while it was bumped".into(),
        })?;
        Ok(JobId(decode_u64(&key, &value)?))
    }

    /// Records a submitted job with the audit entry that says who submitted it: one atomic,
    /// flushed sled batch outside the write turn (bookkeeping, like a session).
    pub fn submit_job(self, job: &JobRecord, audit: &AuditEntry) -> StoreResult<()> {
        let record = (Keyspace::Job.id_key(job.id.0), Some(codec::encode(job)));
        self.0
            .apply_flushed(vec![record], std::slice::from_ref(audit))
    }

    /// Writes where `job` stands, flushed (see [`Jobs::submit_job`]).
    pub fn put_job(self, job: &JobRecord) -> StoreResult<()> {
        self.0
            .db
            .insert(Keyspace::Job.id_key(job.id.0), codec::encode(job))?;
        self.0.db.flush()?;
        Ok(())
    }

    pub fn job(self, id: JobId) -> StoreResult<Option<JobRecord>> {
        self.0.get(Keyspace::Job.id_key(id.0))
    }

    /// Every job, newest first.
    pub fn jobs_newest_first(self) -> impl Iterator<Item = StoreResult<JobRecord>> + 's {
        self.0.all_newest_first(Keyspace::Job)
    }
}
