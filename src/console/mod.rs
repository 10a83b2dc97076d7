//! The console: the back office in a browser, under `/console/`. HTML rendered on the server
//! from compile-time templates (askama, every value escaped), one stylesheet and one script
//! embedded in the binary, behind the API's guard and session (`api::back_office::guard` sends
//! an anonymous caller to the sign-in page). It reads through the same services as the API and
//! writes only through the API's own endpoints.

mod pages;

use crate::api::listings::MediaBase;
use crate::api::AppState;
use crate::app::App;
use axum::extract::{Path, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{from_fn, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

use crate::api::back_office::{CONSOLE_HOME, CONSOLE_SIGN_IN};

/// What a console page may load and do: its own stylesheet, script and pictures (and those of
/// the media host, when pictures are served from one), nothing inline, never inside a frame.
fn content_security_policy(media: Option<&MediaBase>) -> String {
    let media_host = media.and_then(|media| media_origin(&media.0));
    let pictures = media_host
        .map(|origin| format!(" {origin}"))
        .unwrap_or_default();
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:{pictures}; \
         connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )
}

/// The origin of a media base URL on another host (`https://cdn.example`), if it is one; a
/// path of this service (`/media`) has none.
fn media_origin(base: &str) -> Option<&str> {
    let rest = base
        .strip_prefix("https://")
        .or_else(|| base.strip_prefix("http://"))?;
    let host = rest.split('/').next().unwrap_or_default();
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']');
    let origin = &base[..base.len() - rest.len() + host.len()];
    (!host.is_empty() && host.chars().all(plain)).then_some(origin)
}

/// The console's routes, each answer with [`security_headers`]; merged into the API's router
/// inside its layers (who the caller is, their budget, a request slot, the guard).
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route(
            "/console",
            get(|| async { Redirect::permanent(CONSOLE_HOME) }),
        )
        .route(CONSOLE_HOME, get(pages::home))
        .route(
            CONSOLE_SIGN_IN,
            get(pages::sign_in).post(pages::sign_in_form),
        )
        .route("/console/audit", get(pages::audit))
        .route("/console/duplicates", get(pages::duplicates))
        .route("/console/reconciliation", get(pages::reconciliation))
        .route("/console/reconciliation/new-model", get(pages::new_model))
        .route("/console/users", get(pages::users))
        .route("/console/unmatched", get(pages::unmatched))
        .route("/console/jobs", get(pages::jobs))
        .route("/console/pictures", get(pages::pictures))
        .route("/console/assets/{name}", get(asset))
        .layer(from_fn(pages::error_pages))
        .layer(from_fn(security_headers))
        .with_state(AppState::new(app))
}

/// The embedded assets: name, content type, bytes.
const ASSETS: [(&str, &str, &str); 2] = [
    (
        "console.css",
        "text/css; charset=utf-8",
        include_str!("assets/console.css"),
    ),
    (
        "console.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/console.js"),
    ),
];

/// `GET /console/assets/{name}`: an embedded asset, or 404.
async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(known, _, _)| *known == name) {
        Some((_, content_type, body)) => (
            [
                (header::CONTENT_TYPE, *content_type),
                // Embedded in this binary: a new release may change them, so a browser asks again.
                (header::CACHE_CONTROL, "no-cache"),
            ],
            *body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}

/// Sets the console's security headers on every answer: the Content-Security-Policy, no
/// framing, no type sniffing, no referrer beyond the origin, and pages never stored.
async fn security_headers(request: Request, next: Next) -> Response {
    let policy = content_security_policy(request.extensions().get::<MediaBase>());
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let policy = HeaderValue::from_str(&policy)
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'"));
    let set = [
        (header::CONTENT_SECURITY_POLICY, policy),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        ),
    ];
    for (name, value) in set {
        headers.insert(name, value);
    }
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("private, no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pictures_may_come_from_the_media_host_and_from_nowhere_else() {
        let policy = |base: &str| content_security_policy(Some(&MediaBase(base.into())));
        assert!(policy("/media").contains("img-src 'self' data:;"));
        assert!(policy("https://cdn.example/media/")
            .contains("img-src 'self' data: https://cdn.example;"));
        assert!(policy("http://127.0.0.1:9000").contains("data: http://127.0.0.1:9000;"));
        for odd in [
            "https://",
            "https://a b/",
            "https://x;script-src *",
            "ftp://cdn",
        ] {
            assert!(policy(odd).contains("img-src 'self' data:;"), "{odd}");
        }
        assert!(content_security_policy(None).contains("frame-ancestors 'none'"));
    }
}
