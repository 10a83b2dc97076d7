//! `/v1/admin/users`: an admin adds a colleague, changes a role and revokes access while the
//! server runs, on the same service functions as `watch-catalogue user`; each refusal beside
//! each success, and the password never answered nor in the audit trail.

use crate::support::{admin_and_viewer_app, SessionClient, TestApp, TEST_PASSWORD};
use reqwest::Method;
use serde_json::{json, Value};

const BEA_PASSWORD: &str = "bea's own long password";

async fn add(admin: &SessionClient<'_>, body: Value) -> (u16, Value) {
    admin
        .call(Method::POST, "/v1/admin/users", Some(body))
        .await
}

/// The user changes `ana` made, newest first.
async fn audit_actions(admin: &SessionClient<'_>) -> Vec<(String, String, Value)> {
    let audit = admin.ok("/v1/admin/audit?user=ana&pageSize=100").await;
    let entries = audit["data"].as_array().expect("entries").iter();
    entries
        .filter(|e| e["action"].as_str().is_some_and(|a| a.starts_with("user.")))
        .map(|e| {
            let user = e["user"].as_str().unwrap_or_default().to_owned();
            let action = e["action"].as_str().unwrap_or_default().to_owned();
            (user, action, e["targets"].clone())
        })
        .collect()
}

async fn sign_in(app: &TestApp, name: &str, password: &str) -> u16 {
    let request = app
        .request(Method::POST, "/v1/auth/login")
        .json(&json!({"username": name, "password": password}));
    app.send(request).await.status().as_u16()
}

#[tokio::test]
async fn an_admin_adds_a_colleague_who_signs_in_at_once_and_the_password_is_never_answered() {
    let app = admin_and_viewer_app().await;
    let ana = app.session("ana").await;
    let (status, body) = add(
        &ana,
        json!({"name": "bea", "role": "viewer", "password": BEA_PASSWORD}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["name"], "bea");
    assert_eq!(body["role"], "viewer");
    let mut keys: Vec<_> = body.as_object().expect("object").keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["createdAt", "name", "role", "updatedAt"]);

    assert_eq!(sign_in(&app, "bea", BEA_PASSWORD).await, 200);
    let listed = ana.ok("/v1/admin/users").await;
    let names: Vec<(&str, &str)> = (listed["data"].as_array().expect("data").iter())
        .map(|u| {
            (
                u["name"].as_str().unwrap_or(""),
                u["role"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        names,
        [("ana", "admin"), ("bea", "viewer"), ("vic", "viewer")]
    );

    let audit = ana.ok("/v1/admin/audit?pageSize=100").await.to_string();
    assert!(
        !audit.contains(BEA_PASSWORD),
        "no password in the audit trail"
    );
    assert!(!listed.to_string().contains("argon2"), "no hash answered");
    assert_eq!(
        audit_actions(&ana).await,
        [("ana".to_owned(), "user.add".to_owned(), json!(["user:bea"]))]
    );
}

#[tokio::test]
async fn a_role_change_or_a_removal_ends_the_colleagues_sessions_and_is_audited() {
    let app = admin_and_viewer_app().await;
    let ana = app.session("ana").await;
    let vic = app.session("vic").await;
    assert_eq!(vic.get("/v1/admin/stats").await.0, 403, "a viewer first");

    let (status, body) = ana
        .call(
            Method::PUT,
            "/v1/admin/users/vic/role",
            Some(json!({"role": "admin"})),
        )
        .await;
    assert_eq!((status, &body["role"]), (200, &json!("admin")), "{body}");
    assert_eq!(vic.get("/v1/auth/session").await.0, 401, "session ended");
    let vic = app.session("vic").await;
    assert_eq!(vic.get("/v1/admin/stats").await.0, 200, "an admin now");

    let (status, body) = ana.call(Method::DELETE, "/v1/admin/users/vic", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"name": "vic", "sessionsEnded": 1}));
    assert_eq!(vic.get("/v1/admin/stats").await.0, 401, "revoked");
    assert_eq!(sign_in(&app, "vic", TEST_PASSWORD).await, 401);

    let actions: Vec<String> = audit_actions(&ana).await.into_iter().map(|a| a.1).collect();
    assert_eq!(actions, ["user.remove", "user.role"]);
}

#[tokio::test]
async fn every_refusal_answers_its_error_and_changes_nothing() {
    let app = admin_and_viewer_app().await;
    let ana = app.session("ana").await;
    let vic = app.session("vic").await;
    let good = json!({"name": "bea", "role": "viewer", "password": BEA_PASSWORD});
    let cases: [(Method, &str, Option<Value>, u16, &str); 12] = [
        (
            Method::POST,
            "/v1/admin/users",
            Some(json!({"name": "ana", "role": "viewer", "password": BEA_PASSWORD})),
            400,
            "exists already",
        ),
        (
            Method::POST,
            "/v1/admin/users",
            Some(json!({"name": "bea", "role": "viewer", "password": "short"})),
            400,
            "at least 10",
        ),
        (
            Method::POST,
            "/v1/admin/users",
            Some(json!({"name": "bea", "role": "root", "password": BEA_PASSWORD})),
            400,
            "not a role",
        ),
        (
            Method::POST,
            "/v1/admin/users",
            Some(json!({"name": "Bea Smith", "role": "viewer", "password": BEA_PASSWORD})),
            400,
            "not a username",
        ),
        (
            Method::POST,
            "/v1/admin/users",
            Some(json!({"name": "bea", "role": "viewer", "password": BEA_PASSWORD, "admin": true})),
            400,
            "unknown field",
        ),
        (
            Method::POST,
            "/v1/admin/users",
            Some(json!({"name": "bea", "role": "viewer"})),
            400,
            "password",
        ),
        (
            Method::PUT,
            "/v1/admin/users/nobody/role",
            Some(json!({"role": "admin"})),
            404,
            "no user named `nobody`",
        ),
        (
            Method::PUT,
            "/v1/admin/users/vic/role",
            Some(json!({"role": "owner"})),
            400,
            "not a role",
        ),
        (
            Method::PUT,
            "/v1/admin/users/ana/role",
            Some(json!({"role": "viewer"})),
            400,
            "your own account",
        ),
        (
            Method::DELETE,
            "/v1/admin/users/nobody",
            None,
            404,
            "no user named `nobody`",
        ),
        (
            Method::DELETE,
            "/v1/admin/users/NOT%20A%20NAME",
            None,
            404,
            "not a username",
        ),
        (
            Method::DELETE,
            "/v1/admin/users/ana",
            None,
            400,
            "your own account",
        ),
    ];
    for (method, path, body, status, says) in cases {
        let (answered, error) = ana.call(method.clone(), path, body.clone()).await;
        assert_eq!(answered, status, "{method} {path} {body:?}: {error}");
        assert!(
            error.to_string().contains(says),
            "{method} {path}: {error} should say {says}"
        );
    }
    assert_eq!(
        vic.call(Method::POST, "/v1/admin/users", Some(good.clone()))
            .await
            .0,
        403,
        "a viewer may not add"
    );
    assert_eq!(
        vic.call(Method::DELETE, "/v1/admin/users/ana", None)
            .await
            .0,
        403
    );
    let anonymous = app.request(Method::POST, "/v1/admin/users").json(&good);
    assert_eq!(app.send(anonymous).await.status().as_u16(), 401);
    let forged = ana
        .request(Method::DELETE, "/v1/admin/users/vic")
        .header("origin", "https://evil.example");
    assert_eq!(
        app.send(forged).await.status().as_u16(),
        403,
        "another origin"
    );

    assert!(audit_actions(&ana).await.is_empty(), "nothing written");
    let users = ana.ok("/v1/admin/users").await;
    assert_eq!(users["data"].as_array().map(Vec::len), Some(2));
}
