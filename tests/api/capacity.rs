//! Back-pressure: with every request slot taken, a request is refused at once with 503 and
//! `Retry-After` in the error envelope, and answered again as soon as a slot is free.

use crate::support::TestApp;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use watch_catalogue::api::layers::capacity::CapacityConfig;
use watch_catalogue::config::ApiConfig;

#[tokio::test]
async fn over_capacity_a_request_is_refused_with_503_and_retry_after_until_a_slot_frees() {
    let config = ApiConfig {
        capacity: CapacityConfig {
            running: 1,
            waiting: 0,
        },
        ..ApiConfig::default()
    };
    let app = TestApp::build().config(config).start().await;
    let authority = app
        .base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("authority")
        .to_owned();

    // A sign-in whose body has not arrived yet holds the one slot.
    let body = r#"{"username":"nobody","password":"not-the-password"}"#;
    let mut held = tokio::net::TcpStream::connect(&authority)
        .await
        .expect("connect");
    let head = format!(
        "POST /v1/auth/login HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        body.len(),
        &body[..1]
    );
    held.write_all(head.as_bytes()).await.expect("send head");

    let client = reqwest::Client::new();
    let mut refused = None;
    for _ in 0..100 {
        let response = client
            .get(format!("{}/v1/brands", app.base))
            .send()
            .await
            .expect("request");
        if response.status() == 503 {
            refused = Some(response);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = refused.expect("a request refused while the slot is held");
    assert_eq!(refused.headers()["retry-after"], "1");
    let error: serde_json::Value = refused.json().await.expect("JSON");
    assert_eq!(
        error,
        serde_json::json!({
            "docs": "/v1/openapi.json#/paths/~1brands/get",
            "error": "internal_error",
            "hint": "retry after 1 seconds",
            "message": "the server is busy: every request slot is taken",
        })
    );

    // The held request completes, and frees its slot.
    held.write_all(&body.as_bytes()[1..])
        .await
        .expect("send the rest");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(30), held.read_to_string(&mut answer))
        .await
        .expect("answered in time")
        .expect("read");
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    let (status, _) = app.get("/v1/brands").await;
    assert_eq!(status, 200);
}
