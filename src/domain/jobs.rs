//! Batch jobs submitted to a running server (`/admin/jobs`): what was asked, where it stands,
//! and what it reported. The record is bookkeeping: the job's own writes go through the writer.

use super::{JobId, Timestamp};
use serde::{Deserialize, Serialize};

/// What a job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobKind {
    /// A provider's full snapshot, ingested.
    Snapshot,
    /// An ECB daily rates file, loaded.
    Rates,
    /// Every unmatched listing tried again.
    Match,
    /// Indexes rebuilt from the store, then the duplicate finder's full pass.
    Reindex,
    /// The duplicate finder's full pass.
    Duplicates,
}

impl JobKind {
    /// The name the API and the audit trail use.
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Snapshot => "snapshot",
            JobKind::Rates => "rates",
            JobKind::Match => "match",
            JobKind::Reindex => "reindex",
            JobKind::Duplicates => "duplicates",
        }
    }
}

/// Where a job stands. `Interrupted`: the server stopped (or died) before it finished; what it
/// committed stays, and submitting it again completes the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobState {
    Queued,
    Running,
    Succeeded,
    Failed,
    Interrupted,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Interrupted => "interrupted",
        }
    }

    /// True once the job will not change again.
    pub fn is_finished(self) -> bool {
        !matches!(self, JobState::Queued | JobState::Running)
    }
}

/// How far a job is: `done` of `total` `unit`s (0 of 0 while not yet known).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobProgress {
    pub done: u64,
    pub total: u64,
    pub unit: String,
}

/// One submitted job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: JobId,
    pub kind: JobKind,
    /// What the job is about, when it names something: the provider's slug, the index.
    pub subject: Option<String>,
    pub state: JobState,
    pub progress: JobProgress,
    /// The user who submitted it.
    pub submitted_by: String,
    pub submitted_at: Timestamp,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    /// What the CLI prints for the same work, once there is something to say.
    pub report: Option<String>,
    /// Why it failed or stopped.
    pub error: Option<String>,
}

impl JobRecord {
    /// The record of a job just submitted.
    pub fn queued(
        id: JobId,
        kind: JobKind,
        subject: Option<String>,
        submitted_by: String,
        unit: &str,
    ) -> JobRecord {
        JobRecord {
            id,
            kind,
            subject,
            state: JobState::Queued,
            progress: JobProgress {
                done: 0,
                total: 0,
                unit: unit.to_owned(),
            },
            submitted_by,
            submitted_at: Timestamp::now(),
            started_at: None,
            finished_at: None,
            report: None,
            error: None,
        }
    }

    /// Ends the job as `state`, now.
    pub fn finish(&mut self, state: JobState, report: Option<String>, error: Option<String>) {
        self.state = state;
        self.finished_at = Some(Timestamp::now());
        self.report = report;
        self.error = error;
    }
}
