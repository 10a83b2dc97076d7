//! The service's router driven in-process, without sockets: what the criterion benches measure
//! through every layer, with the per-IP rate limit lifted (the benches send from one client).

use axum::body::{Body, Bytes};
use axum::http::{Request, StatusCode};
use std::sync::Arc;
use tower::ServiceExt;
use watch_catalogue::app::App;

/// The router over one app, and a runtime to drive it.
pub struct InProcess {
    router: axum::Router,
    runtime: tokio::runtime::Runtime,
}

impl InProcess {
    pub fn new(app: Arc<App>) -> InProcess {
        InProcess {
            router: watch_catalogue::api::router(app, &crate::unlimited_api()),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
        }
    }

    /// `GET uri`; panics unless it answers `status`, so a bench never measures an error page
    /// it did not mean to. The body.
    pub fn get(&self, uri: &str, status: StatusCode) -> Bytes {
        let request = Request::get(uri).body(Body::empty()).expect("request");
        let response = self
            .runtime
            .block_on(self.router.clone().oneshot(request))
            .expect("response");
        assert_eq!(response.status(), status, "{uri}");
        self.runtime
            .block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
            .expect("body")
    }
}
