//! The HTTP contract held by shared layers on every route: version and rate-limit headers,
//! JSON 405s, docs links, budgets and 429s, trusted proxies, deprecation headers, ETags and
//! 304s, compression, request ids, and the operations endpoints.

use crate::support::*;
use reqwest::header::HeaderMap;
use reqwest::Method;
use std::time::Duration;
use watch_catalogue::api::config::{ApiConfig, Deprecation, RateLimitConfig};
use watch_catalogue::clock::SteppedClock;

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("no {name} header in {headers:?}"))
}

fn number(headers: &HeaderMap, name: &str) -> u64 {
    header(headers, name)
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not an integer"))
}

fn limited(limit: u32, window: Duration, trusted: &[&str]) -> ApiConfig {
    ApiConfig {
        rate_limit: RateLimitConfig {
            limit,
            window,
            trusted_proxies: trusted.iter().map(|t| t.parse().expect("net")).collect(),
            ..RateLimitConfig::default()
        },
        ..ApiConfig::default()
    }
}

#[tokio::test]
async fn every_response_names_the_version_and_its_rate_limit() {
    let app = TestApp::start().await;
    for (method, path, status) in [
        (Method::GET, "/v1/brands", 200),
        (Method::GET, "/brands/rolex", 200),
        (Method::GET, "/v1/openapi.json", 200),
        (Method::GET, "/v1/nope", 404),
        (Method::GET, "/v1/models?page=0", 400),
        (Method::POST, "/v1/brands", 405),
        (Method::HEAD, "/v1/brands", 200),
    ] {
        let response = app.send(app.request(method.clone(), path)).await;
        assert_eq!(response.status().as_u16(), status, "{method} {path}");
        let headers = response.headers();
        assert_eq!(header(headers, "x-api-version"), "v1", "{path}");
        assert_eq!(number(headers, "ratelimit-limit"), 600, "{path}");
        assert_eq!(
            header(headers, "ratelimit-policy"),
            "600;w=60;policy=public",
            "{path}"
        );
        assert!(number(headers, "ratelimit-remaining") < 600, "{path}");
        assert!(
            (1..=60).contains(&number(headers, "ratelimit-reset")),
            "{path}"
        );
        assert!(
            headers.get("deprecation").is_none() && headers.get("sunset").is_none(),
            "{path}"
        );
    }
    // The operations endpoints sit outside the API's budget but still name the version.
    let health = app.send(app.request(Method::GET, "/healthz")).await;
    assert_eq!(header(health.headers(), "x-api-version"), "v1");
}

#[tokio::test]
async fn a_wrong_method_is_a_json_405_naming_the_allowed_ones() {
    let app = TestApp::start().await;
    for (method, path) in [
        (Method::POST, "/v1/models"),
        (Method::DELETE, "/v1/brands/rolex"),
        (Method::PUT, "/sitemap/models"),
    ] {
        let response = app.send(app.request(method.clone(), path)).await;
        assert_eq!(response.status().as_u16(), 405, "{method} {path}");
        assert!(
            header(response.headers(), "allow").contains("GET"),
            "{path}"
        );
        let body: serde_json::Value = response.json().await.expect("json");
        assert_eq!(body["error"], "invalid_request", "{path}: {body}");
        assert!(
            body["hint"].as_str().unwrap_or("").contains("GET"),
            "{body}"
        );
        let docs = body["docs"].as_str().unwrap_or("");
        assert!(
            docs.starts_with("/v1/openapi.json#/paths/~1")
                && !docs.ends_with(&format!("/{}", method.as_str().to_lowercase())),
            "{body}"
        );
    }
}

#[tokio::test]
async fn errors_link_to_their_operation_in_the_openapi_document() {
    let app = TestApp::start().await;
    for (path, docs) in [
        ("/v1/models?sort=x", "/v1/openapi.json#/paths/~1models/get"),
        ("/models?pageSize=0", "/v1/openapi.json#/paths/~1models/get"),
        (
            "/v1/brands/nope",
            "/v1/openapi.json#/paths/~1brands~1%7Bslug%7D/get",
        ),
        (
            "/v1/calibers/eta/nope",
            "/v1/openapi.json#/paths/~1calibers~1%7BbrandSlug%7D~1%7Bref%7D/get",
        ),
        ("/v1/no/such/path", "/v1/openapi.json"),
    ] {
        let (_, body) = app.get(path).await;
        assert_eq!(body["docs"], docs, "{path}");
    }
    let document = app.ok("/v1/openapi.json").await;
    assert!(document["paths"]["/calibers/{brandSlug}/{ref}"]["get"].is_object());
}

#[tokio::test]
async fn budgets_count_down_refuse_with_429_and_roll_over() {
    let time = SteppedClock::new();
    let config = ApiConfig {
        clock: time.clock(),
        ..limited(3, Duration::from_secs(60), &[])
    };
    let app = TestApp::build().config(config).start().await;
    for remaining in [2, 1, 0] {
        let response = app.send(app.request(Method::GET, "/v1/brands/rolex")).await;
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(number(response.headers(), "ratelimit-remaining"), remaining);
        assert_eq!(number(response.headers(), "ratelimit-reset"), 60);
        assert_eq!(
            header(response.headers(), "ratelimit-policy"),
            "3;w=60;policy=public"
        );
    }
    let refused = app.send(app.request(Method::GET, "/v1/brands")).await;
    assert_eq!(refused.status().as_u16(), 429);
    let headers = refused.headers().clone();
    assert_eq!(number(&headers, "ratelimit-remaining"), 0);
    assert_eq!(number(&headers, "retry-after"), 60);
    assert_eq!(number(&headers, "ratelimit-reset"), 60);
    assert_eq!(header(&headers, "x-api-version"), "v1");
    let body: serde_json::Value = refused.json().await.expect("json");
    assert_eq!(body["error"], "rate_limited");
    time.advance(Duration::from_millis(59_500));
    let refused = app.send(app.request(Method::GET, "/v1/brands")).await;
    assert_eq!(refused.status().as_u16(), 429, "half a second left");
    assert_eq!(number(refused.headers(), "retry-after"), 1, "rounded up");
    time.advance(Duration::from_millis(500));
    let again = app.send(app.request(Method::GET, "/v1/brands")).await;
    assert_eq!(again.status().as_u16(), 200, "the window rolled over");
    assert_eq!(number(again.headers(), "ratelimit-remaining"), 2);
    assert_eq!(number(again.headers(), "ratelimit-reset"), 60);
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_budget() {
    let trusted = TestApp::build()
        .config(limited(2, Duration::from_secs(60), &["127.0.0.0/8"]))
        .start()
        .await;
    let from = |app: &TestApp, client: &str| {
        app.request(Method::GET, "/v1/brands")
            .header("x-forwarded-for", format!("{client}, 127.0.0.1"))
    };
    for (client, status) in [
        ("198.51.100.1", 200),
        ("198.51.100.1", 200),
        ("198.51.100.1", 429),
        ("198.51.100.2", 200),
    ] {
        let got = trusted.send(from(&trusted, client)).await.status().as_u16();
        assert_eq!(got, status, "{client}");
    }
    // Without a trusted proxy the header is ignored: every request is the socket peer's.
    let untrusted = TestApp::build()
        .config(limited(2, Duration::from_secs(60), &[]))
        .start()
        .await;
    for (client, status) in [
        ("198.51.100.1", 200),
        ("198.51.100.2", 200),
        ("198.51.100.3", 429),
    ] {
        assert_eq!(
            untrusted
                .send(from(&untrusted, client))
                .await
                .status()
                .as_u16(),
            status,
            "{client}"
        );
    }
}

#[tokio::test]
async fn a_winding_down_version_says_so_on_every_response() {
    let deprecation = Deprecation::new(
        "2099-01-01",
        "https://api.example/v2",
        std::time::SystemTime::now(),
    )
    .expect("valid");
    let config = ApiConfig {
        deprecation: Some(deprecation),
        ..limited(2, Duration::from_secs(60), &[])
    };
    let app = TestApp::build().config(config).start().await;
    for (path, status) in [
        ("/v1/brands", 200),
        ("/brands/nope", 404),
        ("/v1/models?page=x", 429),
    ] {
        let response = app.send(app.request(Method::GET, path)).await;
        assert_eq!(response.status().as_u16(), status, "{path}");
        let headers = response.headers();
        assert_eq!(header(headers, "deprecation"), "true", "{path}");
        assert_eq!(
            header(headers, "sunset"),
            "Thu, 01 Jan 2099 00:00:00 GMT",
            "{path}"
        );
        assert_eq!(
            header(headers, "link"),
            "<https://api.example/v2>; rel=\"successor-version\"",
            "{path}"
        );
        assert_eq!(header(headers, "x-api-version"), "v1", "{path}");
    }
}

#[tokio::test]
async fn catalogue_reads_carry_an_etag_and_answer_304_when_unchanged() {
    let app = TestApp::start().await;
    for path in ["/v1/brands/rolex", "/v1/models?q=126610", "/sitemap/models"] {
        let first = app.send(app.request(Method::GET, path)).await;
        let etag = header(first.headers(), "etag").to_owned();
        assert!(etag.starts_with("W/\""), "{etag}");
        assert_eq!(
            header(first.headers(), "cache-control"),
            "public, max-age=60"
        );
        let cached = app
            .send(
                app.request(Method::GET, path)
                    .header("if-none-match", &etag),
            )
            .await;
        assert_eq!(cached.status().as_u16(), 304, "{path}");
        assert_eq!(header(cached.headers(), "etag"), etag);
        assert!(cached.bytes().await.expect("body").is_empty());
        let stale = app
            .send(
                app.request(Method::GET, path)
                    .header("if-none-match", "W/\"0\""),
            )
            .await;
        assert_eq!(stale.status().as_u16(), 200, "{path}");
    }
    let error = app.send(app.request(Method::GET, "/v1/brands/nope")).await;
    assert!(error.headers().get("etag").is_none());
}

#[tokio::test]
async fn responses_are_compressed_when_the_client_asks() {
    let app = TestApp::start().await;
    let plain = app
        .send(app.request(Method::GET, "/v1/models"))
        .await
        .bytes()
        .await
        .expect("body");
    for encoding in ["gzip", "br", "zstd"] {
        let response = app
            .send(
                app.request(Method::GET, "/v1/models")
                    .header("accept-encoding", encoding),
            )
            .await;
        assert_eq!(header(response.headers(), "content-encoding"), encoding);
        let body = response.bytes().await.expect("body");
        assert!(
            body.len() < plain.len(),
            "{encoding}: {} >= {}",
            body.len(),
            plain.len()
        );
    }
}

#[tokio::test]
async fn every_response_carries_a_request_id() {
    let app = TestApp::start().await;
    let assigned = app.send(app.request(Method::GET, "/v1/nope")).await;
    assert_eq!(
        header(assigned.headers(), "x-request-id").len(),
        36,
        "a UUID is assigned"
    );
    let echoed = app
        .send(
            app.request(Method::GET, "/v1/brands")
                .header("x-request-id", "client-42"),
        )
        .await;
    assert_eq!(header(echoed.headers(), "x-request-id"), "client-42");
}

#[tokio::test]
async fn operations_endpoints_report_health_readiness_and_metrics() {
    let app = TestApp::start().await;
    assert_eq!(
        app.ok("/healthz").await,
        serde_json::json!({"status": "ok"})
    );
    assert_eq!(
        app.ok("/readyz").await,
        serde_json::json!({"status": "ready", "storeGeneration": 2, "indexGeneration": 2, "listingsIndexGeneration": 2})
    );
    app.ok("/v1/brands").await;
    app.get("/v1/brands/nope").await;
    let metrics = app.send(app.request(Method::GET, "/metrics")).await;
    assert!(header(metrics.headers(), "content-type").starts_with("text/plain; version=0.0.4"));
    let text = metrics.text().await.expect("text");
    for line in [
        "http_requests_total{route=\"/v1/brands\",method=\"GET\",status=\"200\"} 1",
        "http_requests_total{route=\"/v1/brands/{slug}\",method=\"GET\",status=\"404\"} 1",
        "http_request_duration_seconds_bucket{le=",
        "index_generation 2",
        "store_generation 2",
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }
    let not_ready = TestApp::build().unindexed().start().await;
    let (status, body) = not_ready.get("/readyz").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (503, Some("internal_error")),
        "{body}"
    );
}

/// Error bodies compared whole: code, message, hint and docs link are one contract, and a
/// field that appears, disappears or changes wording shows here.
#[tokio::test]
async fn error_bodies_are_whole_and_stable() {
    let app = TestApp::start().await;
    for (path, status, body) in [
        (
            "/v1/models?pageSize=0",
            400,
            serde_json::json!({
                "error": "invalid_request",
                "message": "`pageSize` must be an integer from 1 to 100, not `0`",
                "hint": "pageSize is an integer from 1 to 100 (default 24)",
                "docs": "/v1/openapi.json#/paths/~1models/get"
            }),
        ),
        (
            "/v1/brands/nope",
            404,
            serde_json::json!({
                "error": "not_found",
                "message": "no brand with slug `nope`",
                "hint": "GET /v1/brands lists the brands and their slugs",
                "docs": "/v1/openapi.json#/paths/~1brands~1%7Bslug%7D/get"
            }),
        ),
        (
            "/v1/no/such/path",
            404,
            serde_json::json!({
                "error": "not_found",
                "message": "no such path",
                "hint": "paths start with /v1; see the API reference in the README",
                "docs": "/v1/openapi.json"
            }),
        ),
    ] {
        let (got_status, got) = app.get(path).await;
        assert_eq!((got_status, got), (status, body), "{path}");
    }
    let response = app
        .send(app.request(Method::DELETE, "/v1/brands/rolex"))
        .await;
    assert_eq!(response.status().as_u16(), 405);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(
        body,
        serde_json::json!({
            "error": "invalid_request",
            "message": "method not allowed on this path",
            "hint": "this path answers GET, HEAD",
            "docs": "/v1/openapi.json#/paths/~1brands~1%7Bslug%7D"
        })
    );
}

#[tokio::test]
async fn a_405_allows_what_the_route_table_says_the_path_answers() {
    use watch_catalogue::api::v1_policies;
    let app = TestApp::build()
        .user("ana", watch_catalogue::domain::Role::Admin)
        .start()
        .await;
    let admin = app.session("ana").await;
    let allow_of = |response: &reqwest::Response| header(response.headers(), "allow").to_owned();
    for (path, allow) in [
        ("/v1/auth/login", "POST"),
        ("/auth/login", "POST"),
        ("/v1/admin/match", "POST"),
        ("/v1/reconcile", "GET, HEAD, POST"),
        ("/v1/brands", "GET, HEAD"),
        (
            "/v1/picture-review/models/1/front-picture",
            "GET, HEAD, PUT",
        ),
    ] {
        let response = app.send(admin.request(Method::DELETE, path)).await;
        assert_eq!(response.status().as_u16(), 405, "{path}");
        assert_eq!(allow_of(&response), allow, "{path}");
        let body: serde_json::Value = response.json().await.expect("json");
        assert_eq!(body["hint"], format!("this path answers {allow}"), "{body}");
    }
    // Every row of the table: a method it lacks is a 405 naming the ones it has, and those
    // are the ones the OpenAPI document lists for the path.
    let doc = app.ok("/v1/openapi.json").await;
    for policy in v1_policies() {
        let documented: Vec<&str> = doc["paths"][policy.path]
            .as_object()
            .unwrap_or_else(|| panic!("{} is not documented", policy.path))
            .keys()
            .map(String::as_str)
            .collect();
        for method in [
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::DELETE,
        ] {
            let lower = method.as_str().to_lowercase();
            let listed = documented.contains(&lower.as_str())
                || (method == Method::HEAD && documented.contains(&"get"));
            assert_eq!(
                policy.methods.answers(&method),
                listed,
                "{method} {}",
                policy.path
            );
        }
        let path = concrete(policy.path);
        let response = app
            .send(admin.request(Method::PATCH, &format!("/v1{path}")))
            .await;
        assert_eq!(response.status().as_u16(), 405, "PATCH {path}");
        assert_eq!(allow_of(&response), policy.methods.allow(), "{path}");
    }
}

#[tokio::test]
async fn a_client_request_id_is_echoed_only_when_short_and_plain() {
    let app = TestApp::start().await;
    let id_of = |headers: &HeaderMap| header(headers, "x-request-id").to_owned();
    let is_uuid =
        |id: &str| id.len() == 36 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    let plain = format!("trace.{}_end-1", "a".repeat(100));
    assert!(plain.len() <= 128);
    for id in [
        "client-42",
        "0f8e1c2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b",
        plain.as_str(),
    ] {
        let response = app
            .send(
                app.request(Method::GET, "/v1/brands")
                    .header("x-request-id", id),
            )
            .await;
        assert_eq!(id_of(response.headers()), id, "kept");
    }
    let huge = "a".repeat(100 * 1024);
    let long = "a".repeat(129);
    for id in [
        huge.as_str(),
        long.as_str(),
        "two words",
        "<script>",
        "a/b",
        "a;b",
    ] {
        let response = app
            .send(
                app.request(Method::GET, "/v1/brands")
                    .header("x-request-id", id),
            )
            .await;
        assert_eq!(response.status().as_u16(), 200);
        let given = id_of(response.headers());
        assert!(is_uuid(&given), "{given:.80} replaced {id:.80}");
    }
    // Two ids: neither is chosen, a fresh one is made.
    let response = app
        .send(
            app.request(Method::GET, "/v1/brands")
                .header("x-request-id", "one")
                .header("x-request-id", "two"),
        )
        .await;
    let ids: Vec<_> = response.headers().get_all("x-request-id").iter().collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(is_uuid(ids[0].to_str().expect("ascii")), "{ids:?}");
}
