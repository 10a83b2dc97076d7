//! Back-pressure: a request's store and index work runs on tokio's blocking pool, never on the
//! two async workers, at most `running` jobs at once with at most `waiting` more queued for a
//! turn; a request that would queue beyond that is refused at once with 503 and `Retry-After`.
//! Slots are taken around the work only: a client slow to send its body holds none. A handler
//! reaches the app only through [`Work::run`], so no store or index call can run on an async
//! worker by mistake.

use crate::api::error::{internal, internal_because, ApiError, ApiResult};
use crate::app::App;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
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

/// The server's slots, put on every request by the admit layer for [`Work`] to take.
#[derive(Clone)]
struct Admitted(Arc<Capacity>);

/// Puts the server's slots on the request, for the [`Work`] its handler extracts.
pub async fn admit(
    State(capacity): State<Arc<Capacity>>,
    mut request: Request,
    next: Next,
) -> Response {
    request.extensions_mut().insert(Admitted(capacity));
    next.run(request).await
}

fn busy() -> ApiError {
    ApiError::Unavailable {
        message: "the server is busy: every request slot is taken".into(),
        retry_after: Some(RETRY_AFTER_SECS),
    }
}

/// The router's state: the app, out of a handler's reach but through [`Work::run`].
#[derive(Clone)]
pub struct Served(Arc<App>);

impl Served {
    pub fn new(app: Arc<App>) -> Served {
        Served(app)
    }
}

/// The one way a handler reaches the store and the indexes: [`Work::run`] hands the app to a
/// closure on tokio's blocking pool, in one of the server's slots, so a slow query holds a
/// slot, never an async worker that other requests need. Extracted from a request the admit
/// layer let in; a route outside it answers 500 (a mistake of the router's, shown at once)
/// rather than running without a slot.
#[derive(Clone)]
pub struct Work {
    app: Arc<App>,
    capacity: Arc<Capacity>,
}

impl FromRequestParts<Served> for Work {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, served: &Served) -> ApiResult<Work> {
        let Some(Admitted(capacity)) = parts.extensions.get::<Admitted>().cloned() else {
            return Err(internal_because(
                "a route outside the admit layer: no request slots",
            ));
        };
        Ok(Work {
            app: served.0.clone(),
            capacity,
        })
    }
}

impl Work {
    /// Pictures a person is waiting for (no store access: a queue in memory).
    pub fn urgent_pictures(&self) -> &crate::jobs::pictures::UrgentPictures {
        self.app.urgent_pictures()
    }

    /// The media store's files, read asynchronously (no store access).
    pub fn media(&self) -> &crate::media::MediaStore {
        self.app.media()
    }

    /// Runs `job`, a handler's store and index calls, on the blocking pool in a slot.
    pub async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Arc<App>) -> ApiResult<T> + Send + 'static,
    ) -> ApiResult<T> {
        let slot = self.capacity.take().await?;
        let app = self.app.clone();
        // The slot goes with the job: a client that hangs up does not free it while the job runs.
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            let _counted = app.requests_in_flight().enter();
            job(&app)
        })
        .await
        .map_err(|error| internal(&error))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data_dir::DataDir;

    /// A request's work counts as in flight while it runs, and no longer once it is done: the
    /// start's read-ahead gives way to it (D-239).
    #[tokio::test]
    async fn a_request_s_work_is_counted_in_flight_while_it_runs() {
        let dir = tempfile::tempdir().expect("dir");
        let app = Arc::new(App::open(&DataDir::new(dir.path()), 1 << 20).expect("open"));
        let work = Work {
            app: app.clone(),
            capacity: Arc::new(Capacity::new(CapacityConfig::default())),
        };
        let counted = work
            .run(|app| Ok(app.requests_in_flight().any()))
            .await
            .expect("run");
        assert!(counted, "counted while it ran");
        assert!(!app.requests_in_flight().any(), "not once it was done");
    }
}
