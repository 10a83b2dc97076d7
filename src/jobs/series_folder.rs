//! The series folder (D-212): drains the log of the models whose listings writes changed
//! (`store.price_series()`), folds each of them again from its listings' price histories
//! (`price_series::fold_of`) and writes their periods and active listings with the log
//! entries it read removed. `serve` runs it on a thread of its own below the requests'
//! priority, once at start and again after each write that logged models; `reindex --index
//! series` folds every model. Offline commands leave the log for the server.

use super::context::JobContext;
use super::doorbell::{Doorbell, RungThread};
use super::price_series::{fold_of, FoldError};
use super::priority::at_lower_priority;
use super::progress::JobControl;
use super::reindex::listings_are_current;
use crate::domain::price_series::ModelFold;
use crate::domain::{ModelId, Timestamp};
use crate::store::{FoldProgress, SeriesLog, StoreError, StoreResult, WriteTurn};
use rayon::prelude::*;
use std::sync::{Arc, Mutex, MutexGuard};

/// Models folded per commit: a few thousand keys, and a person's write waits for the turn no
/// longer than one such commit.
const MODELS_PER_COMMIT: usize = 256;

/// How often the folder looks again whether the job it waits for has ended.
const JOB_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// What a fold did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FoldReport {
    /// Models folded (those gone forgotten).
    pub models: usize,
    /// Log entries drained.
    pub entries: usize,
}

/// The writer's side of the folder: folds run one at a time in a process (two folds of one
/// model committed in the other order would leave the older), and the folder sleeps until a
/// write logs models or it is stopped.
#[derive(Debug, Default)]
pub struct SeriesFolding {
    one_at_a_time: Mutex<()>,
    doorbell: Arc<Doorbell>,
}

impl SeriesFolding {
    /// Rung when a write logged models; stopped at shutdown.
    pub fn doorbell(&self) -> &Doorbell {
        &self.doorbell
    }

    fn one_at_a_time(&self) -> MutexGuard<'_, ()> {
        self.one_at_a_time.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Folds at `now` the models the log names (every model when an entry asks for it), in commits
/// of [`MODELS_PER_COMMIT`], the last of which removes the entries read; stopped between two
/// commits by `stop`, the entries stay. The entries are read in the write turn, so each is
/// whole with its write; a write after that logs its models anew, folded at the next drain.
pub fn fold_logged(
    context: &JobContext,
    now: Timestamp,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<FoldReport, FoldError> {
    let _one = context.writer().series_folding().one_at_a_time();
    let log = logged(context)?;
    if log.is_empty() {
        return Ok(FoldReport::default());
    }
    if let Some(after) = log.resumed_after {
        tracing::info!(entries = log.entries(), %after, "resuming the price series' fold");
    }
    let models = match (log.every_model, log.every_model_after) {
        (true, _) => every_model(context)?,
        (false, None) => log.models.iter().copied().collect(),
        (false, Some(after)) => {
            let mut models = log.models.clone();
            models.extend(every_model(context)?.into_iter().filter(|m| *m > after));
            models.into_iter().collect()
        }
    };
    fold_models(context, &models, &log, now, stop, &|_| {})
}

/// Folds every model at `now` (`reindex --index series`), counting the models into `control`
/// and stopped by it, and removes the entries the log held before.
pub fn refold_every_model(
    context: &JobContext,
    now: Timestamp,
    control: &JobControl,
) -> Result<FoldReport, FoldError> {
    let _one = context.writer().series_folding().one_at_a_time();
    let log = logged(context)?;
    let models = every_model(context)?;
    let (done, total) = control.progress();
    control.set_total(total.max(done + models.len() as u64));
    let report = fold_models(
        context,
        &models,
        &log,
        now,
        &|| control.should_stop(),
        &|folded| control.advance(folded as u64),
    )?;
    match report.models < models.len() {
        true => Err(FoldError::Stopped(report.models)),
        false => Ok(report),
    }
}

/// The log as it stands between two writes, read in a write turn (each entry is then whole
/// with its write) with the progress of a drain that stopped, so that what that drain folded is
/// not folded again, once the listings index, which a fold finds a model's listings through,
/// reflects every write (the writer rebuilds one left behind by a failure first).
fn logged(context: &JobContext) -> Result<SeriesLog, FoldError> {
    let (entries, progress) = context
        .writer()
        .run_in_background(|turn| {
            let series = turn.store().price_series();
            Ok::<_, StoreError>((series.log_entries()?, series.fold_progress()?))
        })?
        .value;
    let log = entries.decode_resuming(progress.as_ref())?;
    if !listings_are_current(context.store(), context.listings())? {
        return Err(FoldError::IndexBehind);
    }
    Ok(log)
}

/// Every model of the catalogue, and every model a fold kept anything of (a model merged away
/// is forgotten).
fn every_model(context: &JobContext) -> StoreResult<Vec<ModelId>> {
    let store = context.store();
    let mut models = store.catalogue().model_ids()?;
    models.extend(store.price_series().models_folded()?);
    models.sort_unstable();
    models.dedup();
    Ok(models)
}

/// Folds `models` a commit at a time, the last commit removing `log`'s entries, and tells
/// `progress` how many each commit folded. `stop` is asked before each model's fold: a stop
/// waits for the folds under way, not for a commit's 256 (a large model's fold reads its
/// listings, seconds when cold: a server's stop once waited 21 s for the rest of a commit,
/// D-234). What was folded is written; the log stays whole for the next drain.
fn fold_models(
    context: &JobContext,
    models: &[ModelId],
    log: &SeriesLog,
    now: Timestamp,
    stop: &(dyn Fn() -> bool + Sync),
    progress: &(dyn Fn(usize) + Sync),
) -> Result<FoldReport, FoldError> {
    let store = context.store();
    let rates = context.series_rates().history(store)?;
    // No model (every model asked of an empty catalogue): one commit, removing the entries.
    let parts: Vec<&[ModelId]> = match models.is_empty() {
        true => vec![&[]],
        false => models.chunks(MODELS_PER_COMMIT).collect(),
    };
    let mut report = FoldReport::default();
    for (at, part) in parts.iter().enumerate() {
        let folds: Vec<(ModelId, Option<ModelFold>)> = part
            .par_iter()
            .filter(|_| !stop())
            .map(|&model| {
                Ok((
                    model,
                    fold_of(store, context.listings(), &rates, model, now)?,
                ))
            })
            .collect::<Result<_, FoldError>>()?;
        let whole = folds.len() == part.len();
        let done = whole && at + 1 == parts.len();
        // Models are folded in ascending order: a whole commit has folded every model up to
        // its last.
        let kept = match (done, whole, part.last()) {
            (true, ..) => Kept::Done(log),
            (false, true, Some(&last)) => Kept::Progress(log.folded_through(last)),
            _ => Kept::AsItWas,
        };
        if !folds.is_empty() || done {
            context
                .writer()
                .run_in_background(|turn| write_folds(turn, &folds, &kept))?;
        }
        report.models += folds.len();
        progress(folds.len());
        if !whole {
            return Ok(report);
        }
    }
    report.entries = log.entries();
    Ok(report)
}

/// What a commit of folds keeps of the drain's progress.
enum Kept<'l> {
    /// The drain is done: the log's entries go, and the progress with them.
    Done(&'l SeriesLog),
    /// How far the drain got.
    Progress(FoldProgress),
    /// The progress stored (a commit cut short by a stop).
    AsItWas,
}

/// Writes `folds` and what `kept` says of the drain: derived data, no generation bump.
fn write_folds(
    turn: &WriteTurn<'_>,
    folds: &[(ModelId, Option<ModelFold>)],
    kept: &Kept<'_>,
) -> StoreResult<()> {
    let mut batch = turn.batch()?;
    for (model, fold) in folds {
        batch.put_series_fold(*model, fold.as_ref())?;
    }
    match kept {
        Kept::Done(log) => batch.forget_series_log(log),
        Kept::Progress(progress) => batch.keep_fold_progress(progress),
        Kept::AsItWas => {}
    }
    turn.commit_derived(batch)
}

/// The folder `serve` runs: a thread below the requests' priority that drains the log at
/// start and after each write that logs models, until stopped.
pub struct SeriesFolder;

impl SeriesFolder {
    /// Starts it on a thread of its own, which first runs `begin_when` (`serve` waits there for
    /// the store's first flush, D-219), and folds nothing while `a_job_runs` (D-224). Stopped,
    /// what it folded is written, the rest of the log kept for the next start.
    pub fn start(
        context: Arc<JobContext>,
        begin_when: impl FnOnce() + Send + 'static,
        a_job_runs: impl Fn() -> bool + Send + Sync + 'static,
    ) -> std::io::Result<RungThread> {
        let doorbell = context.writer().series_folding().doorbell.clone();
        RungThread::spawn("series-folder", doorbell, move || {
            begin_when();
            at_lower_priority("series-fold", || drain_until_stopped(&context, &a_job_runs))
        })
    }
}

/// Drains the log after each write that logs models, until stopped. While a job runs it waits:
/// a fold's write would wait for the job's end anyway (a job passes its turn to a person's
/// write, not to background work), and a fold's reads (a large model's listings and their
/// price histories, seconds of disk when cold) slowed the job's chunks, which a person's write
/// waits for (D-224). A drain a job starts beside stops at its next commit, the rest of the
/// log kept for after the job.
fn drain_until_stopped(context: &JobContext, a_job_runs: &(dyn Fn() -> bool + Sync)) {
    let folding = context.writer().series_folding().doorbell();
    loop {
        while a_job_runs() && !folding.stopped() {
            folding.sleep(JOB_POLL);
        }
        // Counted before the drain: a write during it wakes the next one.
        let seen = folding.rings();
        let started = std::time::Instant::now();
        match fold_logged(context, Timestamp::now(), &|| {
            folding.stopped() || a_job_runs()
        }) {
            Ok(report) if report.entries > 0 => tracing::info!(
                models = report.models,
                entries = report.entries,
                took = ?started.elapsed(),
                "price series folded"
            ),
            Ok(_) => {}
            Err(error) => tracing::warn!(
                error = %crate::domain::causes(&error),
                "folding the price series; the log stays for the next write or start"
            ),
        }
        if folding.stopped() {
            return;
        }
        // A job that began during the drain: what it left is folded once the job ends.
        if a_job_runs() {
            continue;
        }
        if !folding.wait_after(seen) {
            return;
        }
    }
}

#[cfg(test)]
#[path = "price_series_tests.rs"]
mod tests;
