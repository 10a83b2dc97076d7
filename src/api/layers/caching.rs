//! Caching for clients and CDNs, per route as the route table says: catalogue and sitemap reads
//! get a weak `ETag` over the JSON body, a public `Cache-Control`, and `304 Not Modified` when
//! `If-None-Match` already has it; back-office routes get `private, no-store` on every answer.

use crate::domain::Fnv1a;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use std::hash::Hasher;

/// How long clients and CDNs may reuse a catalogue read without asking again.
pub const CACHE_CONTROL: &str = "public, max-age=60";

/// What a back-office answer may be kept as: nowhere but the one request.
pub const NO_STORE: &str = "private, no-store";

/// Marks every answer of the route as not to be stored by any cache (a CDN in front of the
/// service must never hand one session's view to another client).
pub async fn no_store(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_STORE));
    response
}

pub async fn etag(request: Request, next: Next) -> Response {
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    let if_none_match = request.headers().get(header::IF_NONE_MATCH).cloned();
    let response = next.run(request).await;
    if response.status() != StatusCode::OK {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(collected) = body.collect().await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let bytes = collected.to_bytes();
    let tag = etag_of(&bytes);
    parts.headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    if let Ok(value) = HeaderValue::from_str(&tag) {
        parts.headers.insert(header::ETAG, value);
    }
    if if_none_match
        .as_ref()
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| matches(v, &tag))
    {
        parts.status = StatusCode::NOT_MODIFIED;
        parts.headers.remove(header::CONTENT_LENGTH);
        parts.headers.remove(header::CONTENT_TYPE);
        return Response::from_parts(parts, Body::empty());
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// A weak tag: equal bodies, equal tags (the same for every encoding of the body).
fn etag_of(bytes: &[u8]) -> String {
    // FNV-1a: stable across processes and releases, unlike std's hasher seeds.
    let mut hasher = Fnv1a::default();
    hasher.write(bytes);
    format!("W/\"{:016x}\"", hasher.finish())
}

/// `If-None-Match` is `*` or a list of tags; weak comparison ignores the `W/` prefix.
pub(crate) fn matches(if_none_match: &str, tag: &str) -> bool {
    let bare = |t: &str| t.trim().trim_start_matches("W/").to_owned();
    if_none_match.trim() == "*"
        || if_none_match
            .split(',')
            .any(|candidate| bare(candidate) == bare(tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_stable_and_compare_weakly() {
        assert_eq!(etag_of(b"{}"), etag_of(b"{}"));
        assert_ne!(etag_of(b"{}"), etag_of(b"[]"));
        let tag = etag_of(b"{}");
        assert!(matches(&tag, &tag));
        assert!(matches(
            &format!("\"x\", {}", tag.trim_start_matches("W/")),
            &tag
        ));
        assert!(matches("*", &tag));
        assert!(!matches("W/\"0000000000000000\"", &tag));
    }
}
