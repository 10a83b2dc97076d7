//! `GET /metrics`: its series bounded by the route table whatever clients send (invented
//! methods, paths no route has, any parameter), and the bearer token that guards it when the
//! operator sets one.

use crate::support::*;
use reqwest::Method;
use std::collections::BTreeSet;
use watch_catalogue::api::config::{ApiConfig, RateLimitConfig};
use watch_catalogue::api::layers::metrics::MetricsToken;

const TOKEN: &str = "metrics-token-for-the-tests-0123456789";

/// No rate limit in the way of a flood from one address.
fn unlimited() -> ApiConfig {
    ApiConfig {
        rate_limit: RateLimitConfig {
            limit: 1_000_000,
            ..RateLimitConfig::default()
        },
        ..ApiConfig::default()
    }
}

async fn scrape(app: &TestApp, token: Option<&str>) -> reqwest::Response {
    let request = app.request(Method::GET, "/metrics");
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    app.send(request).await
}

async fn scraped_text(app: &TestApp) -> String {
    let response = scrape(app, None).await;
    assert_eq!(response.status().as_u16(), 200);
    response.text().await.expect("text")
}

/// The series of a scrape: each sample's name and labels, without its value.
fn series(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| line.rsplit_once(' ').map_or(line, |(series, _)| series))
        .map(str::to_owned)
        .collect()
}

/// Request `i` of a flood: in turn an invented method on a route and on no route, a path no
/// route has, and a templated route's parameter; every sixteenth method over 8,000 characters.
async fn vary(app: &TestApp, i: usize) {
    let invented = if i % 16 == 0 {
        format!("INVENTED{i}{}", "X".repeat(8_000))
    } else {
        format!("INVENTED{i}")
    };
    let method = Method::from_bytes(invented.as_bytes()).expect("method");
    let (method, path) = match i % 4 {
        0 => (method, "/v1/brands".to_owned()),
        1 => (method, format!("/nowhere-{i}")),
        2 => (Method::GET, format!("/v1/nowhere-{i}/at/all")),
        _ => (Method::GET, format!("/v1/brands/no-such-brand-{i}")),
    };
    let status = app.send(app.request(method, &path)).await.status();
    assert!(status.is_client_error(), "{path}: {status}");
}

#[tokio::test]
async fn invented_methods_and_paths_add_no_series() {
    let app = TestApp::build().config(unlimited()).start().await;
    for i in 0..4 {
        vary(&app, i).await;
    }
    // The first scrape is counted after it renders: the second one shows it.
    scraped_text(&app).await;
    let before = series(&scraped_text(&app).await);
    for expected in [
        r#"http_requests_total{route="/v1/brands",method="other",status="405"}"#,
        r#"http_requests_total{route="unmatched",method="other",status="404"}"#,
        r#"http_requests_total{route="unmatched",method="GET",status="404"}"#,
        r#"http_requests_total{route="/v1/brands/{slug}",method="GET",status="404"}"#,
    ] {
        assert!(before.contains(expected), "{expected} not in {before:#?}");
    }
    for i in 4..2_004 {
        vary(&app, i).await;
    }
    let text = scraped_text(&app).await;
    assert_eq!(series(&text), before, "2,000 requests added series");
    for made_up in ["INVENTED", "nowhere", "no-such-brand"] {
        assert!(!text.contains(made_up), "{made_up} in:\n{text}");
    }
    assert!(
        text.contains(r#"http_requests_total{route="/v1/brands",method="other",status="405"} 501"#)
    );
}

#[tokio::test]
async fn with_a_token_set_metrics_answer_only_its_bearer() {
    let app = TestApp::build()
        .config(ApiConfig {
            metrics_token: Some(MetricsToken::new(TOKEN).expect("token")),
            ..ApiConfig::default()
        })
        .start()
        .await;
    let refused = serde_json::json!({
        "error": "unauthorized",
        "message": "this endpoint needs the metrics token",
        "hint": "send `Authorization: Bearer <token>` with the token the server was given",
        "docs": "/v1/openapi.json",
    });
    let almost = &TOKEN[..TOKEN.len() - 1];
    for presented in [None, Some("wrong-token-of-enough-length"), Some(almost)] {
        let response = scrape(&app, presented).await;
        assert_eq!(response.status().as_u16(), 401, "{presented:?}");
        assert_eq!(
            response.headers()["www-authenticate"],
            "Bearer realm=\"metrics\""
        );
        assert_eq!(response.headers()["content-type"], "application/json");
        let body: serde_json::Value = response.json().await.expect("json");
        assert_eq!(body, refused, "{presented:?}");
    }
    // The token in another scheme, or bare, is no bearer token.
    for authorization in [format!("Basic {TOKEN}"), TOKEN.to_owned()] {
        let response = app
            .send(
                app.request(Method::GET, "/metrics")
                    .header("authorization", authorization),
            )
            .await;
        assert_eq!(response.status().as_u16(), 401);
    }
    let response = scrape(&app, Some(TOKEN)).await;
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().await.expect("text");
    assert!(
        text.contains(r#"http_requests_total{route="/metrics",method="GET",status="401"} 5"#),
        "{text}"
    );
    // Probes carry no token: health and readiness stay open.
    app.ok("/healthz").await;
    app.ok("/readyz").await;
}

/// `serve` refuses a token it could not guard with, and one given twice, before it opens
/// anything, and says so without repeating the token.
#[test]
fn serve_refuses_a_short_token_or_one_given_twice() {
    let data = tempfile::tempdir().expect("dir");
    // Beside the data dir, not in it: a folder with other files is no data dir.
    let secrets = tempfile::tempdir().expect("dir");
    let token_file = secrets.path().join("metrics-token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).expect("token file");
    let serve = || {
        let mut command = binary(data.path());
        command.args(["serve", "--addr", "127.0.0.1:0"]);
        command
    };
    let (output, text) = crate::cli::run(serve().env("WATCH_CATALOGUE_METRICS_TOKEN", "hunter2"));
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("shorter than 16 characters"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    let (output, text) = crate::cli::run(
        serve()
            .env("WATCH_CATALOGUE_METRICS_TOKEN", TOKEN)
            .arg("--metrics-token-file")
            .arg(&token_file),
    );
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("give the metrics token once"), "{text}");
    assert!(!text.contains(TOKEN), "{text}");
    assert!(!data.path().join("store").exists(), "nothing opened");
}
