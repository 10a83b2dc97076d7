//! The server's batch jobs: submitted jobs wait in one queue, and one runner task runs them in
//! submission order through the writer, on the blocking pool, so reads never wait. Each job's
//! record in the store says where it stands; a job left unfinished when the process ended is
//! marked interrupted at the next start, and a stop (SIGTERM) ends a snapshot at a chunk boundary.

use super::batch::{self, Batch};
use super::context::JobContext;
use super::progress::{JobControl, TestPacing};
use super::users::{audit_entry, Actor};
use crate::domain::{causes, JobId, JobRecord, JobState, Timestamp};
use crate::store::StoreResult;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::{mpsc, watch};

/// The job queue of one data dir. Idle until [`Jobs::start`] (the CLI never starts it).
pub struct Jobs {
    /// Where posted snapshots wait for their job (`<data dir>/spool`).
    spool: PathBuf,
    runner: OnceLock<Runner>,
    /// The running job and its control, and whether a stop was asked for: one lock, so a
    /// job starting as the stop arrives is stopped too.
    state: Mutex<RunState>,
    /// Held from a job's id to its place in the queue: ids grow in the order jobs run.
    submitting: Mutex<()>,
    files: AtomicU64,
}

#[derive(Default)]
struct RunState {
    running: Option<(JobId, Arc<JobControl>)>,
    stopping: bool,
}

struct Runner {
    queue: mpsc::UnboundedSender<Queued>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// A submitted job waiting its turn.
struct Queued {
    record: JobRecord,
    batch: Batch,
    /// The posted body the job reads, removed once the job is done with it.
    _spooled: Option<SpoolFile>,
}

/// A file under the spool directory, removed when dropped.
#[derive(Debug)]
pub struct SpoolFile {
    path: PathBuf,
}

impl SpoolFile {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SpoolFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Why a job was not queued.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error("the server is shutting down; submit the job again once it is back")]
    Stopping,
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// What a job that never finished says.
const INTERRUPTED: &str =
    "the server stopped before the job finished; what it committed stays: submit it again to complete the work";

impl Jobs {
    pub fn new(spool: PathBuf) -> Jobs {
        Jobs {
            spool,
            runner: OnceLock::new(),
            state: Mutex::new(RunState::default()),
            submitting: Mutex::new(()),
            files: AtomicU64::new(0),
        }
    }

    /// Marks the jobs a previous process left unfinished as interrupted, empties the spool, and
    /// starts the runner task (once; later calls do nothing). Outside a tokio runtime (a router
    /// driven in-process by a bench) nothing starts, and submissions are answered 503.
    pub fn start(context: &Arc<JobContext>) -> StoreResult<()> {
        let jobs = &context.queue();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Ok(());
        };
        if jobs.runner.get().is_some() {
            return Ok(());
        }
        interrupt_unfinished(context)?;
        let _ = std::fs::remove_dir_all(&jobs.spool);
        let (queue, received) = mpsc::unbounded_channel();
        let (stop, stopped) = watch::channel(false);
        let runner = Runner {
            queue,
            stop,
            task: Mutex::new(None),
        };
        if jobs.runner.set(runner).is_ok() {
            let task = runtime.spawn(run_jobs(context.clone(), received, stopped));
            if let Some(runner) = jobs.runner.get() {
                *lock(&runner.task) = Some(task);
            }
        }
        Ok(())
    }

    /// Where posted bodies wait for their job.
    pub fn spool_dir(&self) -> &Path {
        &self.spool
    }

    /// A new, empty file for a posted body.
    pub fn spool_file(&self) -> std::io::Result<SpoolFile> {
        std::fs::create_dir_all(&self.spool)?;
        let n = self.files.fetch_add(1, Ordering::Relaxed);
        let path = self
            .spool
            .join(format!("body-{}-{n}.part", std::process::id()));
        std::fs::File::create(&path)?;
        Ok(SpoolFile { path })
    }

    /// Records `batch` as queued by `actor`, with its audit entry, and queues it. Blocking: the
    /// record is flushed before the job is acknowledged.
    pub fn submit(
        &self,
        context: &JobContext,
        actor: &Actor,
        batch: Batch,
        spooled: Option<SpoolFile>,
    ) -> Result<JobRecord, SubmitError> {
        let runner = self.runner.get().ok_or(SubmitError::Stopping)?;
        if lock(&self.state).stopping {
            return Err(SubmitError::Stopping);
        }
        let store = &context.store();
        let _in_order = lock(&self.submitting);
        let id = store.jobs().next_job_id()?;
        let record = JobRecord::queued(
            id,
            batch.kind(),
            batch.subject(),
            actor.name(),
            batch.unit(),
        );
        let mut targets = vec![format!("job:{id}")];
        targets.extend(
            batch
                .subject()
                .filter(|_| matches!(batch, Batch::Snapshot { .. }))
                .map(|slug| format!("provider:{slug}")),
        );
        let detail = batch.submitted_detail();
        let audit = audit_entry(store, actor, "job.submit", targets, detail)?;
        store.jobs().submit_job(&record, &audit)?;
        let queued = Queued {
            record: record.clone(),
            batch,
            _spooled: spooled,
        };
        if let Err(mpsc::error::SendError(queued)) = runner.queue.send(queued) {
            interrupt(context, queued.record);
            return Err(SubmitError::Stopping);
        }
        Ok(record)
    }

    /// The job's record, with the live progress when it is the one running.
    pub fn job(&self, context: &JobContext, id: JobId) -> StoreResult<Option<JobRecord>> {
        Ok(context
            .store()
            .jobs()
            .job(id)?
            .map(|record| self.live(record)))
    }

    /// `record` with the live progress when it is the running job's.
    pub fn live(&self, mut record: JobRecord) -> JobRecord {
        if let Some((running, control)) = &lock(&self.state).running {
            if *running == record.id && record.state == JobState::Running {
                (record.progress.done, record.progress.total) = control.progress();
            }
        }
        record
    }

    /// Whether a job is running now.
    pub fn is_running(&self) -> bool {
        lock(&self.state).running.is_some()
    }

    /// Asks the running job to stop at its next chunk boundary and the runner to start no
    /// other (SIGTERM); queued jobs are marked interrupted.
    pub fn stop(&self) {
        let mut state = lock(&self.state);
        state.stopping = true;
        if let Some((_, control)) = &state.running {
            control.stop();
        }
        drop(state);
        if let Some(runner) = self.runner.get() {
            let _ = runner.stop.send(true);
        }
    }

    /// Waits for the runner to end after [`Jobs::stop`]: the running job recorded as it ended.
    pub async fn finished(&self) {
        let task = self
            .runner
            .get()
            .and_then(|runner| lock(&runner.task).take());
        if let Some(task) = task {
            if let Err(error) = task.await {
                tracing::error!(%error, "the job runner failed");
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs queued jobs one at a time until a stop; then marks those still queued interrupted.
async fn run_jobs(
    context: Arc<JobContext>,
    mut queue: mpsc::UnboundedReceiver<Queued>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let next = tokio::select! {
            biased;
            _ = stop.wait_for(|stop| *stop) => None,
            next = queue.recv() => next,
        };
        let Some(job) = next else { break };
        let context = context.clone();
        if let Err(error) = tokio::task::spawn_blocking(move || run_queued(&context, job)).await {
            tracing::error!(%error, "a job's task failed");
        }
    }
    queue.close();
    while let Ok(job) = queue.try_recv() {
        interrupt(&context, job.record);
    }
}

/// Runs `job` below the requests' priority, with every thread it starts (tantivy's writers
/// too): readers stay fast during a job, which takes what they leave (D-201). The indexes'
/// writers of updates it made are let go after it, so their threads do not stay there.
fn run_queued(context: &JobContext, job: Queued) {
    super::priority::at_lower_priority("job", || run_one(context, job));
    context.writer().let_go_of_index_writers();
}

/// Runs one job through the writer and records how it ended.
fn run_one(context: &JobContext, job: Queued) {
    let Queued {
        mut record,
        batch,
        _spooled,
    } = job;
    let running = JobRecord {
        state: JobState::Running,
        started_at: Some(Timestamp::now()),
        ..record.clone()
    };
    let control = Arc::new(recording_progress(context, running.clone()));
    {
        let mut state = lock(&context.queue().state);
        if state.stopping {
            drop(state);
            return interrupt(context, record);
        }
        state.running = Some((record.id, control.clone()));
    }
    record = running;
    save(context, &record);
    tracing::info!(job = %record.id, kind = record.kind.as_str(), "job started");
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        batch::run(context, &batch, &control)
    }));
    lock(&context.queue().state).running = None;
    (record.progress.done, record.progress.total) = control.progress();
    match outcome {
        Ok(Ok(report)) => record.finish(JobState::Succeeded, Some(report.to_string()), None),
        Ok(Err(error)) => {
            let state = if error.is_interrupted() {
                JobState::Interrupted
            } else {
                JobState::Failed
            };
            record.finish(state, error.report(), Some(causes(&error)));
        }
        Err(_) => record.finish(
            JobState::Failed,
            None,
            Some("the job panicked; see the server's log".into()),
        ),
    }
    tracing::info!(job = %record.id, state = record.state.as_str(), error = record.error.as_deref().unwrap_or(""), "job ended");
    save(context, &record);
}

/// The control of the running job `running`, which writes the job's progress to its record as
/// it goes (see [`JobControl::recording`]): a process that dies mid-job leaves the record with
/// the last progress written, and the restart that marks it interrupted keeps it. Paced as the
/// environment asks: by tests only, see [`TestPacing`].
fn recording_progress(context: &JobContext, running: JobRecord) -> JobControl {
    let store = context.store().clone();
    JobControl::recording(move |done, total| {
        let mut record = running.clone();
        (record.progress.done, record.progress.total) = (done, total);
        if let Err(error) = store.jobs().put_job(&record) {
            tracing::error!(job = %record.id, %error, "recording a job's progress");
        }
    })
    .paced(TestPacing::from_env())
}

/// Marks `record` interrupted, now.
fn interrupt(context: &JobContext, mut record: JobRecord) {
    record.finish(JobState::Interrupted, None, Some(INTERRUPTED.into()));
    save(context, &record);
}

/// Marks every job still queued or running in the store interrupted: their process is gone.
fn interrupt_unfinished(context: &JobContext) -> StoreResult<()> {
    let unfinished: Vec<JobRecord> = context
        .store()
        .jobs()
        .jobs_newest_first()
        .filter(|job| job.as_ref().map_or(true, |job| !job.state.is_finished()))
        .collect::<StoreResult<_>>()?;
    for record in unfinished {
        tracing::warn!(job = %record.id, "a job left unfinished by the last process: interrupted");
        interrupt(context, record);
    }
    Ok(())
}

/// A job's record is bookkeeping: failing to write it is logged, and the job's own outcome
/// (committed or not) stands.
fn save(context: &JobContext, record: &JobRecord) {
    if let Err(error) = context.store().jobs().put_job(record) {
        tracing::error!(job = %record.id, %error, "recording where a job stands");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::JobKind;
    use crate::jobs::context::test_context;

    /// A snapshot job of a file that is gone, recorded as queued: it fails when it runs.
    fn failing_job(context: &JobContext, dir: &std::path::Path) -> Queued {
        let batch = Batch::Snapshot {
            provider: "chrono24".into(),
            file: dir.join("gone.jsonl"),
            name: "gone.jsonl".into(),
            rules: Default::default(),
        };
        let record = JobRecord::queued(JobId(1), JobKind::Snapshot, None, "ana".into(), "listings");
        context.store().jobs().put_job(&record).expect("put");
        Queued {
            record,
            batch,
            _spooled: None,
        }
    }

    fn job_one(context: &JobContext) -> JobRecord {
        let jobs = context.store().jobs();
        jobs.job(JobId(1)).expect("read").expect("job")
    }

    #[test]
    fn a_queued_job_runs_and_leaves_no_writer_of_updates_made_on_its_threads() {
        let dir = tempfile::tempdir().expect("dir");
        let context = test_context(dir.path());
        let doc = catalogue_index::ListingDoc {
            id: 1,
            ..Default::default()
        };
        context.listings().upsert(&[doc], 1).expect("an update");
        assert!(context.listings().keeps_a_writer_of_updates());
        run_queued(&context, failing_job(&context, dir.path()));
        assert_eq!(job_one(&context).state, JobState::Failed);
        assert!(!context.listings().keeps_a_writer_of_updates());
        assert!(!context.writer().catalogue().keeps_a_writer_of_updates());
    }

    #[test]
    fn a_job_that_fails_is_recorded_failed_with_its_reason_and_the_runner_goes_on() {
        let dir = tempfile::tempdir().expect("dir");
        let context = test_context(dir.path());
        run_one(&context, failing_job(&context, dir.path()));
        let job = job_one(&context);
        assert_eq!(job.state, JobState::Failed);
        assert!(job.started_at.is_some() && job.finished_at.is_some());
        assert!(
            job.error
                .as_deref()
                .unwrap_or("")
                .starts_with("opening gone.jsonl"),
            "{job:?}"
        );
        assert!(lock(&context.queue().state).running.is_none());
    }

    #[test]
    fn jobs_left_queued_or_running_are_interrupted_at_start() {
        let dir = tempfile::tempdir().expect("dir");
        let context = test_context(dir.path());
        for (id, state) in [
            (1, JobState::Succeeded),
            (2, JobState::Running),
            (3, JobState::Queued),
        ] {
            let mut record =
                JobRecord::queued(JobId(id), JobKind::Match, None, "ana".into(), "listings");
            record.state = state;
            context.store().jobs().put_job(&record).expect("put");
        }
        interrupt_unfinished(&context).expect("interrupt");
        let states: Vec<JobState> = context
            .store()
            .jobs()
            .jobs_newest_first()
            .map(|job| job.expect("job").state)
            .collect();
        assert_eq!(
            states,
            [
                JobState::Interrupted,
                JobState::Interrupted,
                JobState::Succeeded
            ]
        );
    }
}
