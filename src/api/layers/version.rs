//! `X-API-Version` on every response; and, when the version winds down, `Deprecation: true`,
//! `Sunset` and a `Link` to its successor.

use crate::api::config::Deprecation;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;

/// The headers every response carries, computed once.
pub struct VersionHeaders(Vec<(HeaderName, HeaderValue)>);

/// The version this binary serves.
pub const CURRENT_VERSION: &str = "v1";

impl VersionHeaders {
    pub fn new(deprecation: Option<&Deprecation>) -> VersionHeaders {
        let mut headers = vec![(
            HeaderName::from_static("x-api-version"),
            HeaderValue::from_static(CURRENT_VERSION),
        )];
        if let Some(d) = deprecation {
            let link = format!("<{}>; rel=\"successor-version\"", d.successor);
            let values = [
                ("deprecation", Some("true".to_owned())),
                ("sunset", Some(httpdate::fmt_http_date(d.sunset))),
                ("link", Some(link)),
            ];
            for (name, value) in values {
                if let Some(value) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
                    headers.push((HeaderName::from_static(name), value));
                }
            }
        }
        VersionHeaders(headers)
    }
}

pub async fn add_version_headers(
    State(headers): State<Arc<VersionHeaders>>,
    request: Request,
    next: Next,
) -> Response {
    let mut response = next.run(request).await;
    for (name, value) in &headers.0 {
        response.headers_mut().insert(name.clone(), value.clone());
    }
    response
}
