//! Back-pressure: with every slot taken, a request is refused at once with 503 and
//! `Retry-After` in the error envelope, and answered again as soon as a slot is free; a client
//! slow to send its body holds no slot.

use crate::support::TestApp;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use watch_catalogue::api::config::ApiConfig;
use watch_catalogue::api::layers::capacity::CapacityConfig;
use watch_catalogue::domain::Role;

async fn one_slot() -> TestApp {
    let config = ApiConfig {
        capacity: CapacityConfig {
            running: 1,
            waiting: 0,
        },
        ..ApiConfig::default()
    };
    TestApp::build()
        .config(config)
        .user("ana", Role::Admin)
        .start()
        .await
}

/// GETs `/v1/brands` until it is refused (bounded); the refusal.
async fn first_refusal(app: &TestApp) -> Option<reqwest::Response> {
    let client = reqwest::Client::new();
    for _ in 0..100 {
        let response = client
            .get(format!("{}/v1/brands", app.base))
            .send()
            .await
            .expect("request");
        if response.status() == 503 {
            return Some(response);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

#[tokio::test]
async fn over_capacity_a_request_is_refused_with_503_and_retry_after_until_a_slot_frees() {
    let app = one_slot().await;
    let admin = app.session("ana").await;
    // A dismissal waiting for the write turn, held here, holds the one slot.
    let (release, held) = std::sync::mpsc::channel::<()>();
    let store = app.app.store().clone();
    let (taken, turn_taken) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        let _turn = store.write_turn();
        taken.send(()).expect("signal");
        held.recv_timeout(Duration::from_secs(60)).ok();
    });
    turn_taken.recv().expect("turn taken");
    // Retried while a GET below happens to hold the slot: it is free most of the time.
    let dismissal = async {
        for _ in 0..100 {
            let answer = admin
                .call(
                    Method::POST,
                    "/v1/duplicate-models/dismiss",
                    Some(json!({"modelIds": ["1", "2"]})),
                )
                .await;
            if answer.0 != 503 {
                return answer;
            }
        }
        panic!("the dismissal never got the slot");
    };
    let refused = async {
        let refused = first_refusal(&app)
            .await
            .expect("a request refused while the slot is held");
        assert_eq!(refused.headers()["retry-after"], "1");
        let error: serde_json::Value = refused.json().await.expect("JSON");
        assert_eq!(
            error,
            json!({
                "docs": "/v1/openapi.json#/paths/~1brands/get",
                "error": "internal_error",
                "hint": "retry after 1 seconds",
                "message": "the server is busy: every request slot is taken",
            })
        );
        release.send(()).expect("release the turn");
    };
    let ((status, body), ()) = tokio::join!(dismissal, refused);
    assert_eq!(status, 200, "{body}");
    holder.join().expect("holder");
    let (status, _) = app.get("/v1/brands").await;
    assert_eq!(status, 200, "the slot is free again");
}

#[tokio::test]
async fn a_client_slow_to_send_its_body_holds_no_slot() {
    let app = one_slot().await;
    let authority = app
        .base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("authority")
        .to_owned();
    let mut slow = tokio::net::TcpStream::connect(&authority)
        .await
        .expect("connect");
    let head = format!(
        "POST /v1/auth/login HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
    );
    slow.write_all(head.as_bytes()).await.expect("send head");
    for _ in 0..20 {
        let (status, _) = app.get("/v1/brands").await;
        assert_eq!(status, 200);
    }
}
