//! Cross-origin calls, for the routes whose row allows any origin (the W3C reconciliation
//! service, which OpenRefine and web pages call from their own origins): answers carry
//! `Access-Control-Allow-Origin: *` and preflights are answered. No credentials: these routes
//! read no session.

use axum::http::{header, Method};
use std::time::Duration;
use tower_http::cors::{Any, CorsLayer};

/// How long a browser may reuse a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// The layer of a route open to any origin.
pub fn any_origin() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([header::CONTENT_TYPE])
        .max_age(PREFLIGHT_MAX_AGE)
}
