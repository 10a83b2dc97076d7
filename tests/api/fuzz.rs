//! Random requests (methods, paths of known and random segments, query strings, bodies)
//! through the whole router in-process: never a 5xx, and every failure is our JSON error.

use crate::support::test_catalogue;
use axum::body::Body;
use axum::http::{Method, Request};
use axum::Router;
use proptest::prelude::*;
use std::sync::{Arc, OnceLock};
use tower::ServiceExt;
use watch_catalogue::api::config::{ApiConfig, RateLimitConfig};
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::jobs::import::{import, DirectorySource};

struct Target {
    router: Router,
    runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

fn target() -> &'static Target {
    static TARGET: OnceLock<Target> = OnceLock::new();
    TARGET.get_or_init(|| {
        let dir = tempfile::tempdir().expect("dir");
        let app = App::open(&DataDir::new(dir.path()), 16 << 20).expect("open");
        import(
            &app.store().write_turn(),
            &DirectorySource(test_catalogue()),
        )
        .expect("import");
        app.prepare(false).expect("index");
        let config = ApiConfig {
            rate_limit: RateLimitConfig {
                limit: u32::MAX,
                ..RateLimitConfig::default()
            },
            ..ApiConfig::default()
        };
        Target {
            router: watch_catalogue::api::router(Arc::new(app), &config),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            _dir: dir,
        }
    })
}

const WORDS: [&str; 18] = [
    "brands",
    "models",
    "calibers",
    "sitemap",
    "series",
    "highlighted",
    "catalog",
    "rolex",
    "eta",
    "2824-2",
    "submariner",
    "submariner-date-126610ln",
    "openapi.json",
    "healthz",
    "readyz",
    "metrics",
    "v1",
    "..",
];
const PARAMETERS: [&str; 10] = [
    "page",
    "pageSize",
    "q",
    "sort",
    "brand",
    "brandSlug",
    "series",
    "caliber",
    "id",
    "zzz",
];

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(WORDS.to_vec()).prop_map(str::to_owned),
        "[A-Za-z0-9._~%{}-]{0,10}"
    ]
}

/// A real route with its parameters filled by known or random segments.
fn routed_path() -> impl Strategy<Value = String> {
    let templates = watch_catalogue::api::v1_paths();
    (
        proptest::sample::select(vec!["/v1", ""]),
        proptest::sample::select(templates),
        proptest::collection::vec(segment(), 3),
    )
        .prop_map(|(prefix, template, fills)| {
            let mut fills = fills.into_iter();
            let segments: Vec<String> = template
                .split('/')
                .map(|segment| {
                    if segment.starts_with('{') {
                        fills.next().unwrap_or_default()
                    } else {
                        segment.to_owned()
                    }
                })
                .collect();
            format!("{prefix}{}", segments.join("/"))
        })
}

fn path() -> impl Strategy<Value = String> {
    let random = (
        proptest::sample::select(vec!["/v1", "", "/v2", "/V1"]),
        proptest::collection::vec(segment(), 0..5),
    )
        .prop_map(|(prefix, segments)| format!("{prefix}/{}", segments.join("/")));
    prop_oneof![3 => routed_path(), 1 => random]
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn query() -> impl Strategy<Value = String> {
    let pair = (
        proptest::sample::select(PARAMETERS.to_vec()),
        prop_oneof!["[0-9-]{0,4}", "\\PC{0,12}", "[a-z_]{0,12}"],
    );
    proptest::collection::vec(pair, 0..4).prop_map(|pairs| {
        let joined: Vec<String> = pairs
            .into_iter()
            .map(|(k, v)| format!("{k}={}", percent_encode(&v)))
            .collect();
        if joined.is_empty() {
            String::new()
        } else {
            format!("?{}", joined.join("&"))
        }
    })
}

fn method() -> impl Strategy<Value = Method> {
    proptest::sample::select(vec![
        Method::GET,
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_requests_never_fault_and_always_fail_in_json(
        method in method(),
        path in path(),
        query in query(),
        body in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let uri = format!("{path}{query}");
        let Ok(request) = Request::builder().method(method.clone()).uri(&uri).header("content-type", "application/json").body(Body::from(body)) else {
            return Ok(());
        };
        let target = target();
        let response = target.runtime.block_on(target.router.clone().oneshot(request)).expect("infallible");
        let status = response.status();
        prop_assert!(!status.is_server_error(), "{method} {uri} answered {status}");
        if status.is_client_error() && method != Method::HEAD {
            let bytes = target.runtime.block_on(axum::body::to_bytes(response.into_body(), usize::MAX)).expect("body");
            let json: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| TestCaseError::fail(format!("{method} {uri}: not JSON ({e})")))?;
            prop_assert!(json["error"].is_string(), "{method} {uri}: {json}");
        }
    }
}
