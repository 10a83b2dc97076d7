//! The layers every route shares, whatever its group: request ids, compression, metrics,
//! version headers, JSON errors, panics caught, and (on the API) rate limits and caching.
//! Handlers never repeat any of this.

pub mod caching;
pub mod capacity;
pub mod cors;
pub mod envelope;
pub mod metrics;
pub mod rate_limit;
pub mod request_id;
pub mod version;

use crate::api::config::ApiConfig;
use crate::api::error::internal_because;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::Response;
use axum::{Extension, Router};
use std::any::Any;
use std::sync::Arc;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

/// Wraps `router` in the shared layers; the last added runs first.
pub fn shared(router: Router, config: &ApiConfig, metrics: Arc<metrics::Metrics>) -> Router {
    let version = Arc::new(version::VersionHeaders::new(config.deprecation.as_ref()));
    router
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(from_fn(envelope::render_errors))
        .layer(Extension(BodyLimit(config.body_limit)))
        .layer(from_fn_with_state(version, version::add_version_headers))
        .layer(from_fn_with_state(metrics, metrics::record))
        .layer(CompressionLayer::new())
        .layer(TraceLayer::new_for_http())
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(from_fn(request_id::keep_plain_ids))
}

/// A handler panicked: log it, answer `internal_error`; the server keeps serving.
fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    internal_because(format!("handler panicked: {detail}")).to_response(None)
}

/// The configured request body limit, carried to whatever reports a body over it.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

impl BodyLimit {
    /// The limit the shared layers put on `request`; the default outside them (unit tests).
    pub fn of<B>(request: &axum::http::Request<B>) -> usize {
        request
            .extensions()
            .get::<BodyLimit>()
            .map_or(crate::api::config::DEFAULT_BODY_LIMIT, |limit| limit.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::requests::JsonBody;
    use axum::body::Body;
    use axum::extract::DefaultBodyLimit;
    use axum::http::{Request, StatusCode};
    use axum::routing::{get, post};
    use tower::ServiceExt;

    async fn panics() -> &'static str {
        panic!("boom")
    }

    /// The shared layers around test-only routes: one that panics, one that takes a body.
    fn app() -> Router {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Body {
            name: String,
            fields: Option<serde_json::Map<String, serde_json::Value>>,
        }
        let config = ApiConfig {
            body_limit: 64,
            ..ApiConfig::default()
        };
        let routes = Router::new()
            .route("/panics", get(panics))
            .route("/fine", get(|| async { "fine" }))
            .route("/body", post(|JsonBody(_): JsonBody<Body>| async { "ok" }))
            .layer(DefaultBodyLimit::max(config.body_limit));
        shared(routes, &config, Arc::new(metrics::Metrics::new()))
    }

    async fn call(app: &Router, request: Request<Body>) -> (StatusCode, serde_json::Value) {
        let response = app.clone().oneshot(request).await.expect("response");
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
        )
    }

    #[tokio::test]
    async fn a_panic_is_a_json_500_and_the_service_keeps_serving() {
        let app = app();
        let (status, body) = call(
            &app,
            Request::get("/panics")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body["error"], "internal_error");
        let response = app
            .clone()
            .oneshot(Request::get("/fine").body(Body::empty()).expect("request"))
            .await
            .expect("response");
        assert_eq!(response.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn bad_bodies_are_400_invalid_request() {
        let app = app();
        let post = |content_type: &str, body: &str| {
            Request::post("/body")
                .header("content-type", content_type)
                .body(Body::from(body.to_owned()))
                .expect("request")
        };
        for (content_type, body, says) in [
            ("application/json", "{\"name\":", "could not be read"),
            ("application/json", "{\"name\":5}", "could not be read"),
            ("application/json", "[]", "could not be read"),
            (
                "application/json",
                r#"{"name":"x","name":"y"}"#,
                "could not be read",
            ),
            (
                "application/json",
                r#"{"name":"x","fields":{"a":1,"a":2}}"#,
                "gives `fields.a` twice",
            ),
            ("text/plain", "{\"name\":\"x\"}", "not declared as JSON"),
            (
                "application/json",
                &format!("{{\"name\":\"{}\"}}", "x".repeat(100)),
                "too large",
            ),
        ] {
            let (status, json) = call(&app, post(content_type, body)).await;
            assert_eq!(
                (status, json["error"].as_str()),
                (StatusCode::BAD_REQUEST, Some("invalid_request")),
                "{body}: {json}"
            );
            assert!(
                json["message"].as_str().unwrap_or("").contains(says),
                "{body}: {json}"
            );
            if says == "too large" {
                assert_eq!(
                    json["hint"], "send at most 64 bytes",
                    "the configured limit"
                );
            }
        }
        for content_type in [
            "application/json",
            "application/json; charset=utf-8",
            "application/merge-patch+json",
        ] {
            let (status, _) =
                call(&app, post(content_type, r#"{"name":"x","fields":{"a":1}}"#)).await;
            assert_eq!(status, StatusCode::OK, "{content_type}");
        }
    }
}
