//! Back-pressure: a request's store and index work runs on tokio's blocking pool, never on the
//! two async workers, at most `running` jobs at once with at most `waiting` more queued for a
//! turn; a request that would queue beyond that is refused at once with 503 and `Retry-After`.
//! Slots are taken around the work only: a client slow to send its body holds none.

use crate::api::error::{internal, ApiError, ApiResult};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a refused client should wait, in seconds: work takes milliseconds, so a slot is
/// soon free again (docs/decisions.md, D-74).
const RETRY_AFTER_SECS: u64 = 1;

/// How many jobs may run, and wait, at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapacityConfig {
    pub running: usize,
    pub waiting: usize,
}

impl Default for CapacityConfig {
    /// Four per core run (the work is CPU and page-cache reads, rarely a disk wait), and 64
    /// per core may wait: a burst is absorbed, a flood is refused at once rather than
    /// answered late.
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        CapacityConfig {
            running: 4 * cores,
            waiting: 64 * cores,
        }
    }
}

/// The slots of [`CapacityConfig`], shared by every request.
#[derive(Debug)]
pub struct Capacity {
    running: Arc<Semaphore>,
    /// Running and waiting together.
    admitted: Arc<Semaphore>,
}

/// The slots a job holds until it is done.
struct Slot {
    _admitted: OwnedSemaphorePermit,
    _running: OwnedSemaphorePermit,
}

impl Capacity {
    pub fn new(config: CapacityConfig) -> Capacity {
        let running = config.running.max(1);
        Capacity {
            running: Arc::new(Semaphore::new(running)),
            admitted: Arc::new(Semaphore::new(running + config.waiting)),
        }
    }

    /// A running slot, after waiting for one if a waiting place is free; else `busy`.
    async fn take(&self) -> ApiResult<Slot> {
        let admitted = self
            .admitted
            .clone()
            .try_acquire_owned()
            .map_err(|_| busy())?;
        // The semaphore is never closed, so this only fails if it were.
        let running = self
            .running
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| busy())?;
        Ok(Slot {
            _admitted: admitted,
            _running: running,
        })
    }
}

tokio::task_local! {
    /// The slots of the server answering the current request.
    static SLOTS: Arc<Capacity>;
}

/// Makes the server's slots the ones [`blocking`] takes while this request is answered.
pub async fn admit(
    State(capacity): State<Arc<Capacity>>,
    request: Request,
    next: Next,
) -> Response {
    SLOTS.scope(capacity, next.run(request)).await
}

fn busy() -> ApiError {
    ApiError::Unavailable {
        message: "the server is busy: every request slot is taken".into(),
        retry_after: Some(RETRY_AFTER_SECS),
    }
}

/// Runs `job`, a handler's store and index calls, on tokio's blocking pool in one of the
/// server's slots: a slow query holds a slot, never an async worker that other requests need.
/// Outside a request of the server (a unit test of a handler), without a slot.
pub async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    let slot = match SLOTS.try_with(Arc::clone) {
        Ok(capacity) => Some(capacity.take().await?),
        Err(_) => None,
    };
    // The slot goes with the job: a client that hangs up does not free it while the job runs.
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        job()
    })
    .await
    .map_err(|error| internal(&error))?
}
