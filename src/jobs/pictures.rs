//! The image worker: takes the pictures that are due (pending, failed and due a retry, or
//! fetched without a crop), fetches and crops a few at a time, and records each state and
//! look; then ranks the listing candidates of the models whose listings changed. A host that
//! looks down is paused, its pictures left due for a later pass (`picture_hosts`).
//!
//! A picture is decoded and cropped in one go, once its pixels fit the decode budget
//! (`media::budget`) and a crop slot is free, in that order everywhere (so neither waits on
//! the other in a cycle): a decoded picture never waits, and the pictures in hand decoded at
//! once never pass the budget, whatever their number.

use super::context::JobContext;
use super::picture_hosts::{HostAnswer, HostPauses, LONGEST_PAUSE};
use crate::domain::{FetchState, Fetched, Look, PictureId, PictureRecord, ReviewStatus, Timestamp};
use crate::jobs::listing_candidates::{self, CandidateError};
use crate::media::crop::crop;
use crate::media::fetch::{probe, Downloaded, FetchError, Probed};
use crate::media::look::look;
use crate::media::{DecodeBudget, FetchSettings, Fetcher, MediaStore};
use crate::store::{DuePage, StoreError};
use image::codecs::jpeg::JpegEncoder;
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use tokio::task::JoinSet;

/// Fetches in flight at once: a few, so a slow source does not hold up the rest.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// Side of a crop, in pixels, at most.
pub const DEFAULT_CROP_SIZE: u32 = 1000;
/// Failed attempts after which a transient failure is not retried again.
pub const MAX_ATTEMPTS: u32 = 5;
/// Pictures recorded per commit: small writes, so reads never wait long.
const CHUNK: usize = 16;
/// First retry delay; it doubles with each failed attempt, up to a day.
const FIRST_RETRY_MS: i64 = 60_000;
const LONGEST_RETRY_MS: i64 = 86_400_000;
const CROP_QUALITY: u8 = 88;

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PassReport {
    pub fetched: usize,
    pub cropped: usize,
    pub failed: usize,
    /// Models whose listing candidates were ranked again.
    pub ranked: usize,
    /// Due pictures left for a later pass, their host paused (`picture_hosts`).
    pub waiting_for_host: usize,
}

impl PassReport {
    /// Pictures the pass fetched, cropped or failed: when none, the worker waits before the
    /// next pass (ranking alone does not count, a model may stay stale for a retry).
    pub fn handled(&self) -> usize {
        self.fetched + self.cropped + self.failed
    }
}

/// The worker's settings (`serve` and `pictures fetch` flags, docs/operations.md).
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub fetch: FetchSettings,
    pub concurrency: usize,
    pub crop_size: u32,
    /// `serve` only: whether the worker runs in the server.
    pub enabled: bool,
    /// Crops made at once; `None`: one core fewer than the machine has (at least one), so a
    /// server's worker never takes every core from its requests. `pictures fetch`, with no
    /// requests to answer, uses every core.
    pub crop_slots: Option<usize>,
    /// Pixels decoded and cropped at once, summed over the pictures in hand; `None`: the pixel
    /// cap (`fetch.max_pixels`), so one picture of the largest size at a time.
    pub decode_budget_pixels: Option<u64>,
}

impl Default for WorkerConfig {
    fn default() -> WorkerConfig {
        WorkerConfig {
            fetch: FetchSettings::default(),
            concurrency: DEFAULT_CONCURRENCY,
            crop_size: DEFAULT_CROP_SIZE,
            enabled: true,
            crop_slots: None,
            decode_budget_pixels: None,
        }
    }
}

/// The worker's parts, shared by its tasks.
pub struct PictureWorker {
    pub media: MediaStore,
    pub fetcher: Fetcher,
    pub concurrency: usize,
    pub crop_size: u32,
    /// Crops made at once (`WorkerConfig::crop_slots`; docs/decisions.md, D-120).
    cpu: Arc<tokio::sync::Semaphore>,
    /// Pixels decoded at once (`WorkerConfig::decode_budget_pixels`).
    budget: DecodeBudget,
    /// The source hosts left alone for a while (D-220).
    hosts: Arc<HostPauses>,
}

impl PictureWorker {
    pub fn new(media: MediaStore, config: &WorkerConfig) -> Result<PictureWorker, FetchError> {
        Ok(PictureWorker {
            media,
            fetcher: Fetcher::new(config.fetch.clone())?,
            concurrency: config.concurrency,
            crop_size: config.crop_size,
            cpu: Arc::new(tokio::sync::Semaphore::new(
                config.crop_slots.unwrap_or_else(spare_cores).max(1),
            )),
            budget: DecodeBudget::new(
                config
                    .decode_budget_pixels
                    .unwrap_or(config.fetch.max_pixels),
            ),
            hosts: Arc::default(),
        })
    }

    /// The pixels this worker decodes at once, and how many of them are taken now.
    pub fn decode_budget(&self) -> &DecodeBudget {
        &self.budget
    }
}

/// One core fewer than the machine has, at least one.
fn spare_cores() -> usize {
    cores().saturating_sub(1).max(1)
}

pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |cores| cores.get())
}

/// How long the server's worker waits after a pass that found nothing to do, unless a person
/// asks for a picture sooner.
const IDLE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Pictures a person is waiting for (a candidate selected, a FRONT picture set by URL): the
/// worker takes them before the rest of its pass, and wakes for them when idle.
#[derive(Default)]
pub struct UrgentPictures {
    ids: std::sync::Mutex<Vec<PictureId>>,
    wake: tokio::sync::Notify,
}

impl UrgentPictures {
    pub fn push(&self, id: PictureId) {
        self.ids
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(id);
        self.wake.notify_one();
    }

    fn take(&self) -> Vec<PictureId> {
        std::mem::take(
            &mut *self
                .ids
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }
}

/// The server's worker: passes until `stop` turns true, waiting between idle ones, its paused
/// hosts shown through `context` (`/metrics`). A failed
/// pass is logged and tried again later; it never stops the server. A stop ends a pass where it
/// stands: the states it had written stay, and the pictures it was fetching are due again.
pub async fn run_until_stopped(
    context: Arc<JobContext>,
    worker: Arc<PictureWorker>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    context.show_picture_hosts(worker.hosts.clone());
    loop {
        let pass = tokio::select! {
            biased;
            _ = stop.wait_for(|stop| *stop) => return,
            pass = run_pass(&context, &worker) => pass,
        };
        let wait = match pass {
            Ok(report) if report.handled() > 0 => {
                tracing::info!(?report, "picture worker pass");
                continue;
            }
            Ok(report) => idle_wait(&worker.hosts, &report, std::time::Instant::now()),
            Err(error) => {
                tracing::error!(%error, "picture worker pass failed");
                IDLE_WAIT
            }
        };
        let idle = tokio::time::timeout(wait, context.urgent_pictures().wake.notified());
        tokio::select! {
            biased;
            _ = stop.wait_for(|stop| *stop) => return,
            _ = idle => {}
        }
    }
}

/// How long an idle worker waits: until the first paused host may be tried again when the pass
/// left pictures for one (another pass before would only walk past them again, at millions of
/// pictures a costly read), at least [`IDLE_WAIT`] and at most the longest pause.
fn idle_wait(
    hosts: &HostPauses,
    report: &PassReport,
    now: std::time::Instant,
) -> std::time::Duration {
    if report.waiting_for_host == 0 {
        return IDLE_WAIT;
    }
    (hosts.next_resume(now))
        .map_or(IDLE_WAIT, |at| at - now)
        .clamp(IDLE_WAIT, LONGEST_PAUSE)
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("writing picture states: {0}")]
    Write(String),
    #[error("a worker task stopped: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("ranking listing candidates: {0}")]
    Candidates(#[from] CandidateError),
}

/// A picture's record before a fetch or crop, and after with its look once fetched.
type Handled = (PictureRecord, (PictureRecord, Option<Look>));

/// Handles every picture due now, `concurrency` at a time: a slow source holds one slot, not
/// the others, and pictures a person is waiting for go first. The due pictures are read a page
/// at a time ([`DUE_PAGE`]), so a pass over millions holds a page, not all of them. States are
/// written sixteen to a commit as they finish; then the stale models' listing candidates are
/// ranked.
pub async fn run_pass(
    context: &Arc<JobContext>,
    worker: &Arc<PictureWorker>,
) -> Result<PassReport, WorkerError> {
    let now = Timestamp::now();
    let mut report = PassReport::default();
    // What a reviewer waits for first: the candidates of the models waiting for review, then
    // every other picture in id order (those handled here are no longer due there).
    let awaited = {
        let context = context.clone();
        tokio::task::spawn_blocking(move || awaited_candidates(&context, now)).await??
    };
    // Those it leaves for a paused host are due still, so the walk meets and counts them.
    handle_page(context, worker, awaited, &mut report).await?;
    let mut from = Some(PictureId(0));
    while let Some(start) = from {
        let page = {
            let context = context.clone();
            tokio::task::spawn_blocking(move || due_pictures(&context, now, start)).await??
        };
        report.waiting_for_host += handle_page(context, worker, page.records, &mut report).await?;
        from = page.next;
    }
    worker.hosts.note_waiting(report.waiting_for_host);
    let context = context.clone();
    report.ranked =
        tokio::task::spawn_blocking(move || listing_candidates::rank_stale(&context)).await??;
    Ok(report)
}

/// Pictures read from the store at once by a pass: a few hundred KB.
const DUE_PAGE: usize = 1_024;

/// Models waiting for review whose candidates a pass takes before any other picture: the
/// first ones of the queue, as the review shows them.
const AWAITED_MODELS: usize = 200;

/// The due pictures of the candidates of the first [`AWAITED_MODELS`] models waiting for
/// review, best rank first.
fn awaited_candidates(
    context: &JobContext,
    now: Timestamp,
) -> Result<Vec<PictureRecord>, StoreError> {
    let pictures = context.store().pictures();
    let models = pictures.review_queue(&[ReviewStatus::Pending])?;
    let mut records = Vec::new();
    for model in models.into_iter().take(AWAITED_MODELS) {
        let mut candidates = pictures.candidates_of(model)?;
        candidates.sort_by_key(|candidate| candidate.rank);
        for candidate in candidates {
            records.extend(
                pictures
                    .picture(candidate.picture)?
                    .filter(|record| record.is_due(now)),
            );
        }
    }
    Ok(records)
}

/// Handles the due pictures of one page, and those a person asks for meanwhile; every state
/// is written before it returns, so the next page reads them. Returns how many it left for a
/// paused host.
async fn handle_page(
    context: &Arc<JobContext>,
    worker: &Arc<PictureWorker>,
    due: Vec<PictureRecord>,
    report: &mut PassReport,
) -> Result<usize, WorkerError> {
    let mut left = 0;
    let mut queue: VecDeque<PictureRecord> = due.into();
    let mut started: HashSet<PictureId> = HashSet::new();
    let mut asked: HashSet<PictureId> = HashSet::new();
    let mut tasks = JoinSet::new();
    let mut finished: Vec<Handled> = Vec::new();
    loop {
        for urgent in urgent_pictures(context)? {
            asked.insert(urgent.id);
            queue.push_front(urgent);
        }
        while tasks.len() < worker.concurrency.max(1) {
            let Some(picture) = queue.pop_front() else {
                break;
            };
            if !asked.contains(&picture.id) && waits_for_its_host(worker, &picture) {
                left += 1;
                continue;
            }
            if started.insert(picture.id) {
                let worker = worker.clone();
                tasks.spawn(async move { (picture.clone(), handle(&worker, picture).await) });
            }
        }
        let Some(done) = tasks.join_next().await else {
            break;
        };
        finished.push(done?);
        if finished.len() >= CHUNK || tasks.is_empty() {
            record(context, std::mem::take(&mut finished), report).await?;
        }
    }
    record(context, finished, report).await?;
    Ok(left)
}

/// Whether `picture` needs a fetch from a host that is paused. A person's pictures are fetched
/// whatever their host (the caller's choice): they asked now, and their answer may end the pause.
fn waits_for_its_host(worker: &PictureWorker, picture: &PictureRecord) -> bool {
    picture.fetched().is_none()
        && (worker.hosts).is_paused(&picture.source_url, std::time::Instant::now())
}

/// The records of the pictures a person asked for since the last look, that are due.
fn urgent_pictures(context: &JobContext) -> Result<Vec<PictureRecord>, StoreError> {
    let mut records = Vec::new();
    for id in context.urgent_pictures().take() {
        records.extend(
            context
                .store()
                .pictures()
                .picture(id)?
                .filter(|r| r.may_be_due()),
        );
    }
    Ok(records)
}

/// Writes the states of `finished` in one commit and counts them.
async fn record(
    context: &Arc<JobContext>,
    finished: Vec<Handled>,
    report: &mut PassReport,
) -> Result<(), WorkerError> {
    if finished.is_empty() {
        return Ok(());
    }
    let mut updated = Vec::with_capacity(finished.len());
    for (before, after) in finished {
        tally(report, &before, &after.0);
        updated.push(after);
    }
    let context = context.clone();
    tokio::task::spawn_blocking(move || record_states(&context, updated)).await?
}

/// The page of pictures from `from` on, those of them due at `now`.
fn due_pictures(
    context: &JobContext,
    now: Timestamp,
    from: PictureId,
) -> Result<DuePage, StoreError> {
    let mut page = context
        .store()
        .pictures()
        .pictures_maybe_due_page(from, DUE_PAGE)?;
    page.records.retain(|p| p.is_due(now));
    Ok(page)
}

fn tally(report: &mut PassReport, before: &PictureRecord, after: &PictureRecord) {
    match (&before.state, &after.state) {
        (_, FetchState::Failed { .. }) => report.failed += 1,
        (FetchState::Fetched(_), _) => report.cropped += 1,
        _ => report.fetched += 1,
    }
}

async fn handle(
    worker: &Arc<PictureWorker>,
    picture: PictureRecord,
) -> (PictureRecord, Option<Look>) {
    let outcome = match picture.fetched().cloned() {
        Some(fetched) => recrop(worker.clone(), fetched).await,
        None => fetch_and_crop(worker, &picture.source_url).await,
    };
    let now = Timestamp::now();
    match outcome {
        Ok((fetched, look)) => (
            PictureRecord {
                state: FetchState::Fetched(fetched),
                attempts: 0,
                updated_at: now,
                ..picture
            },
            Some(look),
        ),
        Err(error) => (failed(picture, &error, now), None),
    }
}

/// The record after a failed attempt: retried later with a doubling delay if the failure
/// may pass, else left failed until someone resets it.
fn failed(picture: PictureRecord, error: &FetchError, now: Timestamp) -> PictureRecord {
    let attempts = picture.attempts.saturating_add(1);
    let next_try_at = (error.is_transient() && attempts < MAX_ATTEMPTS)
        .then(|| Timestamp(now.0.saturating_add(retry_delay_ms(attempts))));
    PictureRecord {
        state: FetchState::Failed {
            reason: error.to_string(),
            next_try_at,
        },
        attempts,
        updated_at: now,
        ..picture
    }
}

pub fn retry_delay_ms(attempts: u32) -> i64 {
    let doublings = attempts.saturating_sub(1).min(20);
    (FIRST_RETRY_MS << doublings).min(LONGEST_RETRY_MS)
}

async fn fetch_and_crop(
    worker: &Arc<PictureWorker>,
    url: &str,
) -> Result<(Fetched, Look), FetchError> {
    let fetched = worker.fetcher.fetch(url).await;
    note_host(worker, url, fetched.as_ref().err());
    decode_and_crop(worker.clone(), fetched?).await
}

/// Counts what a fetch from `url` told about its host (`picture_hosts`), and logs a pause it
/// begins.
fn note_host(worker: &PictureWorker, url: &str, error: Option<&FetchError>) {
    let Some(answer) = host_answer(error) else {
        return;
    };
    if let Some(paused) = worker.hosts.record(url, answer, std::time::Instant::now()) {
        tracing::warn!(
            host = %paused.host,
            pause_secs = paused.pause.as_secs(),
            "picture host paused: its last fetches failed as a host that is down fails; its pictures wait"
        );
    }
}

/// What a fetch's outcome tells about its host: nothing when the fetcher refused the URL
/// itself (a private address, a name reserved for examples).
fn host_answer(error: Option<&FetchError>) -> Option<HostAnswer> {
    match error {
        None => Some(HostAnswer::Answered),
        Some(FetchError::Refused(_)) => None,
        Some(error) if error.is_transient() => Some(HostAnswer::Failed),
        Some(_) => Some(HostAnswer::Answered),
    }
}

/// A picture whose crop was cleared: cropped again from the stored original.
async fn recrop(
    worker: Arc<PictureWorker>,
    fetched: Fetched,
) -> Result<(Fetched, Look), FetchError> {
    let probed = {
        let worker = worker.clone();
        tokio::task::spawn_blocking(move || {
            let bytes = worker
                .media
                .read(&fetched.hash)
                .map_err(|e| FetchError::Request(format!("reading the stored original: {e}")))?;
            probe(bytes, worker.fetcher.settings())
        })
        .await
        .map_err(|e| FetchError::Undecodable(e.to_string()))??
    };
    decode_and_crop(worker, probed).await
}

/// Decodes and crops `probed` once its pixels fit the decode budget, then a crop slot is
/// free. Its pixels are given back by the blocking job itself, once the decoded picture is
/// dropped.
async fn decode_and_crop(
    worker: Arc<PictureWorker>,
    probed: Probed,
) -> Result<(Fetched, Look), FetchError> {
    let pixels = worker.budget.reserve(probed.pixels()).await;
    on_crop_slot(worker, move |worker| {
        let cropped = store_and_crop(worker, probed.decode(worker.fetcher.settings())?);
        drop(pixels);
        cropped
    })
    .await
}

/// Runs CPU-heavy `job` on the blocking pool once one of the worker's crop slots is free.
async fn on_crop_slot<T: Send + 'static>(
    worker: Arc<PictureWorker>,
    job: impl FnOnce(&PictureWorker) -> Result<T, FetchError> + Send + 'static,
) -> Result<T, FetchError> {
    let _slot = worker
        .cpu
        .clone()
        .acquire_owned()
        .await
        .map_err(|e| FetchError::Request(e.to_string()))?;
    tokio::task::spawn_blocking(move || job(&worker))
        .await
        .map_err(|e| FetchError::Undecodable(e.to_string()))?
}

fn store_and_crop(
    worker: &PictureWorker,
    downloaded: Downloaded,
) -> Result<(Fetched, Look), FetchError> {
    let stored = |bytes: &[u8]| {
        worker
            .media
            .put(bytes)
            .map_err(|e| FetchError::Request(format!("storing: {e}")))
    };
    let hash = stored(&downloaded.bytes)?;
    let look = look(&downloaded.image);
    let (width, height) = (downloaded.image.width(), downloaded.image.height());
    // `into_rgb8` takes an RGB8 image (most JPEGs) as it is, without a copy.
    let cropped = crop(&downloaded.image.into_rgb8(), worker.crop_size);
    let mut jpeg = Vec::new();
    JpegEncoder::new_with_quality(&mut jpeg, CROP_QUALITY)
        .encode_image(&cropped)
        .map_err(|e| FetchError::Undecodable(format!("encoding the crop: {e}")))?;
    let fetched = Fetched {
        hash,
        format: downloaded.format,
        width,
        height,
        cropped: Some(stored(&jpeg)?),
    };
    Ok((fetched, look))
}

/// Writes the new states and looks in one commit, skipping a picture whose source changed
/// meanwhile.
fn record_states(
    context: &JobContext,
    updated: Vec<(PictureRecord, Option<Look>)>,
) -> Result<(), WorkerError> {
    context
        .writer()
        .run_in_background(|turn| -> Result<(), StoreError> {
            let mut batch = turn.batch()?;
            for (picture, look) in &updated {
                let current = turn.store().pictures().picture(picture.id)?;
                if current.is_some_and(|c| c.source_url == picture.source_url) {
                    batch.put_picture(picture);
                    if let Some(look) = look {
                        batch.put_look(picture.id, *look);
                    }
                }
            }
            turn.commit(batch)?;
            Ok(())
        })
        .map(|_| ())
        .map_err(|e| WorkerError::Write(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_worker_waits_for_the_first_paused_host_when_it_left_pictures_for_one() {
        use super::super::picture_hosts::FIRST_PAUSE;
        use std::time::{Duration, Instant};
        let hosts = HostPauses::default();
        let now = Instant::now();
        let idle = PassReport::default();
        let waiting = PassReport {
            waiting_for_host: 5,
            ..PassReport::default()
        };
        assert_eq!(idle_wait(&hosts, &waiting, now), IDLE_WAIT, "none paused");
        for _ in 0..3 {
            hosts.record("http://down.test/a.jpg", HostAnswer::Failed, now);
        }
        assert_eq!(idle_wait(&hosts, &idle, now), IDLE_WAIT, "none left for it");
        assert_eq!(idle_wait(&hosts, &waiting, now), FIRST_PAUSE);
        let almost = now + FIRST_PAUSE - Duration::from_secs(1);
        assert_eq!(
            idle_wait(&hosts, &waiting, almost),
            IDLE_WAIT,
            "never shorter"
        );
    }

    #[test]
    fn retries_wait_longer_each_time_up_to_a_day() {
        assert_eq!(retry_delay_ms(1), 60_000);
        assert_eq!(retry_delay_ms(2), 120_000);
        assert_eq!(retry_delay_ms(4), 480_000);
        assert_eq!(retry_delay_ms(40), LONGEST_RETRY_MS);
    }
}
