//! Back-pressure: at most `running` requests do their work at once (their store and index
//! calls on tokio's blocking pool, never on the two async workers), at most `waiting` more wait
//! for a turn, and any beyond are refused at once: 503 with `Retry-After`, in the envelope.

use crate::api::error::ApiError;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// How long a refused client should wait, in seconds: requests take milliseconds, so a slot
/// is soon free again.
const RETRY_AFTER_SECS: u64 = 1;

/// How many requests may run, and wait, at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapacityConfig {
    pub running: usize,
    pub waiting: usize,
}

impl Default for CapacityConfig {
    /// Four per core run (a request's work is CPU and page-cache reads, rarely a disk wait),
    /// and 64 per core may wait: a burst is absorbed, a flood is refused at once rather than
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
    admitted: Arc<Semaphore>,
}

impl Capacity {
    pub fn new(config: CapacityConfig) -> Capacity {
        let running = config.running.max(1);
        Capacity {
            running: Arc::new(Semaphore::new(running)),
            admitted: Arc::new(Semaphore::new(running + config.waiting)),
        }
    }
}

/// Admits the request when a slot is free or one may be waited for, else refuses it.
pub async fn admit(
    State(capacity): State<Arc<Capacity>>,
    request: Request,
    next: Next,
) -> Response {
    let Ok(_admitted) = capacity.admitted.clone().try_acquire_owned() else {
        return busy().into_response();
    };
    // The semaphore is never closed, so this only fails if it were.
    let Ok(_running) = capacity.running.clone().acquire_owned().await else {
        return busy().into_response();
    };
    next.run(request).await
}

fn busy() -> ApiError {
    ApiError::Unavailable {
        message: "the server is busy: every request slot is taken".into(),
        retry_after: Some(RETRY_AFTER_SECS),
    }
}

/// Runs `job`, a handler's store and index calls, on tokio's blocking pool: a slow query then
/// holds one of the admitted slots, never an async worker that other requests need.
pub async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> crate::api::error::ApiResult<T> + Send + 'static,
) -> crate::api::error::ApiResult<T> {
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|error| crate::api::error::internal(&error))?
}
