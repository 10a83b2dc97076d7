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

#[tokio::test]
async fn an_admin_sets_a_colleagues_password_and_only_the_new_one_opens_a_session() {
    let app = admin_and_viewer_app().await;
    let ana = app.session("ana").await;
    let vic = app.session("vic").await;
    let path = "/v1/admin/users/vic/password";
    let (status, body) = ana
        .call(Method::PUT, path, Some(json!({"password": BEA_PASSWORD})))
        .await;
    assert_eq!((status, &body["name"]), (200, &json!("vic")), "{body}");
    assert!(!body.to_string().contains(BEA_PASSWORD));
    assert_eq!(vic.get("/v1/auth/session").await.0, 401, "session ended");
    assert_eq!(sign_in(&app, "vic", TEST_PASSWORD).await, 401);
    assert_eq!(sign_in(&app, "vic", BEA_PASSWORD).await, 200);

    for (path, body, status) in [
        (path, json!({"password": "short"}), 400),
        (
            path,
            json!({"password": BEA_PASSWORD, "role": "admin"}),
            400,
        ),
        (
            "/v1/admin/users/nobody/password",
            json!({"password": BEA_PASSWORD}),
            404,
        ),
    ] {
        assert_eq!(
            ana.call(Method::PUT, path, Some(body)).await.0,
            status,
            "{path}"
        );
    }
    let vic = app.session_with("vic", BEA_PASSWORD).await;
    let refused = vic
        .call(
            Method::PUT,
            "/v1/admin/users/ana/password",
            Some(json!({"password": BEA_PASSWORD})),
        )
        .await;
    assert_eq!(refused.0, 403);
    let anonymous = app
        .request(Method::PUT, path)
        .json(&json!({"password": BEA_PASSWORD}));
    assert_eq!(app.send(anonymous).await.status().as_u16(), 401);
    let actions: Vec<String> = audit_actions(&ana).await.into_iter().map(|a| a.1).collect();
    assert_eq!(actions, ["user.passwd"], "one change written");
}

/// `watch-catalogue user ... --server` through the real binary against a running server: every
/// action, signed in as an admin from the environment, the new password from standard input.
#[tokio::test]
async fn the_user_commands_work_through_a_running_server() {
    use crate::support::{run_cli, ServeProcess};
    let data = crate::support::new_data_dir();
    crate::admin::add_user_through_the_binary(data.path(), "ana");
    let serve = ServeProcess::start(data.path());
    let server = serve.base.trim_end_matches("/v1").to_owned();
    let admin = [
        ("WATCH_CATALOGUE_USER", "ana"),
        ("WATCH_CATALOGUE_PASSWORD", TEST_PASSWORD),
    ];
    let run = |args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]| {
        let mut args = args.to_vec();
        args.extend(["--server", server.as_str()]);
        run_cli(data.path(), &args, stdin, env)
    };
    let password = format!("{BEA_PASSWORD}\n");
    let (ok, text) = run(
        &["user", "add", "bea", "--role", "viewer"],
        Some(&password),
        &admin,
    );
    assert!(ok, "{text}");
    assert_eq!(text, "added bea (viewer)\n");
    let (ok, text) = run(&["user", "list"], None, &admin);
    assert!(ok, "{text}");
    let roles: Vec<(&str, &str)> = (text.lines())
        .map(|line| {
            let mut fields = line.split('\t');
            (fields.next().unwrap_or(""), fields.next().unwrap_or(""))
        })
        .collect();
    assert_eq!(roles, [("ana", "admin"), ("bea", "viewer")], "{text}");
    let (ok, text) = run(&["user", "role", "bea", "admin"], None, &admin);
    assert_eq!(
        (ok, text.as_str()),
        (true, "bea is now admin; their sessions are ended\n")
    );
    let (ok, text) = run(
        &["user", "passwd", "bea"],
        Some("bea's second password\n"),
        &admin,
    );
    assert_eq!(
        (ok, text.as_str()),
        (true, "password of bea changed; their sessions are ended\n")
    );
    let login = reqwest::Client::new()
        .post(format!("{}/auth/login", serve.base))
        .json(&json!({"username": "bea", "password": "bea's second password"}))
        .send()
        .await
        .expect("login");
    assert_eq!(
        login.status().as_u16(),
        200,
        "the new password opens a session"
    );

    for (args, env, says) in [
        (
            &["user", "remove", "ana"][..],
            &admin[..],
            "your own account",
        ),
        (
            &["user", "remove", "nobody"][..],
            &admin[..],
            "no user named `nobody`",
        ),
        (&["user", "list"][..], &[][..], "set WATCH_CATALOGUE_USER"),
        (
            &["user", "list"][..],
            &[
                ("WATCH_CATALOGUE_USER", "ana"),
                ("WATCH_CATALOGUE_PASSWORD", "a wrong guess"),
            ][..],
            "401",
        ),
    ] {
        let (ok, text) = run(args, None, env);
        assert!(!ok && text.contains(says), "{args:?}: {text}");
    }
    let (ok, text) = run(&["user", "remove", "bea"], None, &admin);
    assert_eq!(
        (ok, text.as_str()),
        (true, "removed bea; their sessions are ended\n")
    );
    let log = serve.stop();
    for secret in [BEA_PASSWORD, "bea's second password", TEST_PASSWORD] {
        assert!(!log.contains(secret), "a password in the server's log");
    }
}
