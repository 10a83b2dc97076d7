//! The back office through a real server: the guard over every back-office route of the
//! route table, sessions (login, logout, expiry, throttling, revocation, cookie flags), the
//! admin budget, the counts, the unmatched listings and the audit trail.

use crate::support::{concrete, TestApp, TEST_PASSWORD};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;
use watch_catalogue::api::back_office::auth::FAILURES_PER_NAME;
use watch_catalogue::api::back_office::{is_back_office, LOGIN_WINDOW};
use watch_catalogue::api::config::ApiConfig;
use watch_catalogue::api::{v1_policies, Access};
use watch_catalogue::auth::{SessionPolicy, DEFAULT_ABSOLUTE, DEFAULT_IDLE};
use watch_catalogue::clock::SteppedClock;
use watch_catalogue::domain::{Role, Username};
use watch_catalogue::jobs::users::{self, Actor};

async fn app() -> TestApp {
    crate::support::admin_and_viewer_app().await
}

async fn login(app: &TestApp, username: &str, password: &str) -> reqwest::Response {
    app.send(
        app.request(Method::POST, "/v1/auth/login")
            .json(&json!({"username": username, "password": password})),
    )
    .await
}

#[tokio::test]
async fn every_back_office_route_answers_401_then_403_then_serves_an_admin() {
    let app = app().await;
    let admin = app.session("ana").await;
    let viewer = app.session("vic").await;
    let routes: Vec<_> = v1_policies()
        .iter()
        .filter(|policy| is_back_office(policy.path))
        .collect();
    assert!(routes.len() >= 3, "the table has back-office routes");
    for policy in v1_policies() {
        assert_eq!(
            policy.access == Access::Admin,
            is_back_office(policy.path),
            "{}: registered as admin exactly when under a back-office group",
            policy.path
        );
    }
    for policy in routes {
        let path = concrete(policy.path);
        for prefix in ["/v1", ""] {
            let path = format!("{prefix}{path}");
            for method in [Method::GET, Method::POST, Method::PUT, Method::DELETE] {
                let response = app.send(app.request(method.clone(), &path)).await;
                assert_eq!(response.status().as_u16(), 401, "anonymous {method} {path}");
                let body: Value = response.json().await.expect("json");
                assert_eq!(body["error"], "unauthorized");
                let (status, body) = viewer.call(method.clone(), &path, None).await;
                assert_eq!(
                    (status, &body["error"]),
                    (403, &json!("forbidden")),
                    "{path}"
                );
            }
            let (status, body) = admin.get(&path).await;
            assert!(
                !matches!(status, 401 | 403),
                "an admin passes the guard of {path}: {status} {body}"
            );
        }
    }
    // Paths no route serves in those groups are guarded too: nothing leaks through a 404.
    for path in [
        "/v1/admin/nope",
        "/reconciliation/9/anything",
        "/duplicate-models",
    ] {
        let (status, _) = app.get(path).await;
        assert_eq!(status, 401, "{path}");
    }
}

#[tokio::test]
async fn a_session_opens_names_its_user_and_ends_with_logout() {
    let app = app().await;
    let response = login(&app, "ana", TEST_PASSWORD).await;
    assert_eq!(response.status().as_u16(), 200);
    let cookie = response
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("cookie")
        .to_owned();
    let (pair, flags) = cookie.split_once("; ").expect("flags");
    let (name, token) = pair.split_once('=').expect("pair");
    assert_eq!(name, "watch_catalogue_session");
    assert_eq!(token.len(), 64, "256 bits, hex");
    assert_eq!(flags, "HttpOnly; SameSite=Strict; Path=/; Max-Age=43200");
    assert_eq!(
        response.json::<Value>().await.expect("json"),
        json!({"username": "ana", "role": "admin"})
    );
    let session = app.session("ana").await;
    assert_eq!(
        session.ok("/v1/auth/session").await,
        json!({"username": "ana", "role": "admin"})
    );
    let (status, _) = session.call(Method::POST, "/v1/auth/logout", None).await;
    assert_eq!(status, 204);
    let (status, body) = session.get("/v1/auth/session").await;
    assert_eq!((status, &body["error"]), (401, &json!("unauthorized")));
    let (status, _) = session.get("/v1/admin/stats").await;
    assert_eq!(status, 401, "the cookie opens nothing once logged out");
}

#[tokio::test]
async fn a_wrong_name_and_a_wrong_password_get_one_answer_and_failures_are_throttled() {
    let app = app().await;
    let mut bodies = Vec::new();
    for (name, password) in [("nobody", TEST_PASSWORD), ("ana", "not the password")] {
        let response = login(&app, name, password).await;
        assert_eq!(response.status().as_u16(), 401);
        assert!(response.headers().get("set-cookie").is_none());
        bodies.push(response.json::<Value>().await.expect("json"));
    }
    assert_eq!(bodies[0], bodies[1], "nothing tells which users exist");
    assert_eq!(bodies[0]["error"], "unauthorized");
    // Five failures per name in a window; ana has one.
    for _ in 0..4 {
        assert_eq!(
            login(&app, "ana", "still wrong").await.status().as_u16(),
            401
        );
    }
    let refused = login(&app, "ana", TEST_PASSWORD).await;
    assert_eq!(
        refused.status().as_u16(),
        429,
        "even the right password waits"
    );
    let retry_after: u64 = refused
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!(retry_after > 0 && retry_after <= 15 * 60);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["error"], "rate_limited");
    // Another name is not held up by ana's failures.
    assert_eq!(
        login(&app, "vic", TEST_PASSWORD).await.status().as_u16(),
        200
    );
}

#[tokio::test]
async fn the_login_throttle_lifts_when_its_window_rolls_over() {
    let time = SteppedClock::new();
    let app = app_on(&time, SessionPolicy::default()).await;
    for _ in 0..FAILURES_PER_NAME {
        assert_eq!(login(&app, "ana", "a guess").await.status().as_u16(), 401);
    }
    let retry_after = |response: &reqwest::Response| -> Option<u64> {
        response
            .headers()
            .get("retry-after")?
            .to_str()
            .ok()?
            .parse()
            .ok()
    };
    let refused = login(&app, "ana", TEST_PASSWORD).await;
    assert_eq!(refused.status().as_u16(), 429);
    assert_eq!(retry_after(&refused), Some(LOGIN_WINDOW.as_secs()));
    time.advance(LOGIN_WINDOW - Duration::from_secs(1));
    let refused = login(&app, "ana", TEST_PASSWORD).await;
    assert_eq!(refused.status().as_u16(), 429, "a second before the end");
    assert_eq!(retry_after(&refused), Some(1));
    time.advance(Duration::from_secs(1));
    assert_eq!(
        login(&app, "ana", TEST_PASSWORD).await.status().as_u16(),
        200,
        "a fresh window"
    );
}

#[tokio::test]
async fn a_login_from_another_origin_is_refused() {
    let app = app().await;
    let response = app
        .send(
            app.request(Method::POST, "/v1/auth/login")
                .header("origin", "https://evil.example")
                .json(&json!({"username": "ana", "password": TEST_PASSWORD})),
        )
        .await;
    assert_eq!(response.status().as_u16(), 403);
    assert!(response.headers().get("set-cookie").is_none());
}

/// A server with admin `ana` whose sessions follow `policy`, and whose windows and session
/// limits read `time`.
async fn app_on(time: &SteppedClock, policy: SessionPolicy) -> TestApp {
    let config = ApiConfig {
        sessions: policy,
        clock: time.clock(),
        ..ApiConfig::default()
    };
    TestApp::build()
        .user("ana", Role::Admin)
        .config(config)
        .start()
        .await
}

#[tokio::test]
async fn a_session_ends_at_its_idle_limit() {
    let time = SteppedClock::new();
    let app = app_on(&time, SessionPolicy::default()).await;
    let session = app.session("ana").await;
    assert_eq!(session.get("/v1/admin/stats").await.0, 200);
    time.advance(DEFAULT_IDLE - Duration::from_millis(1));
    assert_eq!(session.get("/v1/admin/stats").await.0, 200, "just in time");
    time.advance(DEFAULT_IDLE);
    assert_eq!(session.get("/v1/admin/stats").await.0, 401, "idle too long");
    assert_eq!(
        session.get("/v1/auth/session").await.0,
        401,
        "it stays ended"
    );
}

#[tokio::test]
async fn a_session_in_use_ends_at_its_absolute_limit() {
    let time = SteppedClock::new();
    let app = app_on(&time, SessionPolicy::default()).await;
    let session = app.session("ana").await;
    let hour = Duration::from_secs(3600);
    // Used every hour, well within the idle limit, for all but the last minute of its life.
    for hour_of_use in 1..DEFAULT_ABSOLUTE.as_secs() / 3600 {
        time.advance(hour);
        let (status, body) = session.get("/v1/auth/session").await;
        assert_eq!(status, 200, "hour {hour_of_use}: {body}");
    }
    time.advance(hour - Duration::from_secs(60));
    assert_eq!(
        session.get("/v1/auth/session").await.0,
        200,
        "a minute left"
    );
    time.advance(Duration::from_secs(60));
    assert_eq!(
        session.get("/v1/auth/session").await.0,
        401,
        "absolute limit"
    );
}

#[tokio::test]
async fn removing_a_user_or_changing_a_role_ends_their_sessions_at_once() {
    let app = TestApp::build()
        .user("ana", Role::Admin)
        .user("bob", Role::Admin)
        .start()
        .await;
    let ana = app.session("ana").await;
    let bob = app.session("bob").await;
    assert_eq!(ana.get("/v1/admin/stats").await.0, 200);
    // Through the same jobs `watch-catalogue user role` and `user remove` run.
    let demoted = users_of(&app, |turn| {
        users::set_role(turn, &Actor::Cli, &name("ana"), Role::Viewer).map(|_| ())
    });
    assert!(demoted);
    assert_eq!(ana.get("/v1/admin/stats").await.0, 401, "session ended");
    assert_eq!(
        bob.get("/v1/admin/stats").await.0,
        200,
        "others keep theirs"
    );
    assert!(users_of(&app, |turn| users::remove_user(
        turn,
        &Actor::Cli,
        &name("bob")
    )
    .map(|_| ())));
    assert_eq!(bob.get("/v1/admin/stats").await.0, 401);
}

fn name(text: &str) -> Username {
    Username::parse(text).expect("name")
}

/// Runs a user job on the server's own data dir, as the CLI would on the host.
fn users_of(
    app: &TestApp,
    job: impl FnOnce(&watch_catalogue::store::WriteTurn<'_>) -> Result<(), users::UserError>,
) -> bool {
    app.app.writer().run(job).is_ok()
}

#[tokio::test]
async fn an_admin_has_a_budget_of_their_own() {
    let app = app().await;
    let admin = app.session("ana").await;
    let response = app
        .send(admin.request(Method::GET, "/v1/admin/stats"))
        .await;
    let policy = response
        .headers()
        .get("ratelimit-policy")
        .and_then(|v| v.to_str().ok())
        .expect("policy")
        .to_owned();
    assert_eq!(policy, "6000;w=60;policy=admin");
    assert_eq!(
        response
            .headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok()),
        Some("private, no-store")
    );
    let public = app.send(app.request(Method::GET, "/v1/models")).await;
    assert_eq!(
        public
            .headers()
            .get("ratelimit-policy")
            .and_then(|v| v.to_str().ok()),
        Some("600;w=60;policy=public")
    );
}

#[tokio::test]
async fn stats_count_what_the_public_api_lists() {
    let app = app().await;
    let admin = app.session("ana").await;
    let stats = admin.ok("/v1/admin/stats").await;
    let total = |path: &str| {
        let path = path.to_owned();
        let app = &app;
        async move { app.ok(&path).await["total"].as_u64().expect("total") }
    };
    assert_eq!(stats["brands"], total("/v1/brands").await);
    assert_eq!(stats["models"], total("/v1/models").await);
    assert_eq!(stats["listings"], total("/v1/listings").await);
    assert_eq!(
        stats["unmatchedListings"],
        total("/v1/listings?unmatched=true").await
    );
    let unmatched = admin.ok("/v1/admin/unmatched-listings?pageSize=100").await;
    assert_eq!(unmatched["total"], stats["unmatchedListings"]);
    let reasons: Vec<&str> = unmatched["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|l| l["unmatchedReason"].as_str().expect("reason"))
        .collect();
    assert!(!reasons.is_empty());
    for reason in &reasons {
        let only = admin
            .ok(&format!(
                "/v1/admin/unmatched-listings?reason={reason}&pageSize=100"
            ))
            .await;
        assert!(only["data"]
            .as_array()
            .expect("data")
            .iter()
            .all(|l| l["unmatchedReason"] == *reason));
        let expected = reasons.iter().filter(|r| r == &reason).count();
        assert_eq!(only["total"], expected, "{reason}");
    }
    let (status, body) = admin.get("/v1/admin/unmatched-listings?reason=nope").await;
    assert_eq!((status, &body["error"]), (400, &json!("invalid_request")));
    assert!(
        body["hint"].as_str().unwrap_or("").contains("noReference"),
        "{body}"
    );
}

#[tokio::test]
async fn the_audit_trail_names_who_did_what_newest_first() {
    let app = app().await;
    let admin = app.session("ana").await;
    app.session("vic").await;
    let audit = admin.ok("/v1/admin/audit").await;
    let actions: Vec<(&str, &str)> = audit["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|e| {
            (
                e["user"].as_str().expect("user"),
                e["action"].as_str().expect("action"),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("vic", "auth.login"),
            ("ana", "auth.login"),
            ("cli", "user.add"),
            ("cli", "user.add"),
        ]
    );
    let logins = admin.ok("/v1/admin/audit?action=auth.login&user=ana").await;
    assert_eq!(logins["total"], 1);
    let text = audit.to_string();
    assert!(!text.contains(TEST_PASSWORD) && !text.contains(&admin.cookie[24..]));
}

#[tokio::test]
async fn every_list_of_the_audit_trail_pages_newest_first_with_its_total() {
    let app = app().await;
    let ana = app.session("ana").await;
    for _ in 0..3 {
        app.session("vic").await;
        app.session("ana").await;
    }
    let whole = ana.ok("/v1/admin/audit?pageSize=100").await;
    let whole = whole["data"].as_array().expect("data").clone();
    assert_eq!(whole.len(), 9, "two users added, seven logins");
    let lists = [
        (None, None),
        (Some("ana"), None),
        (Some("vic"), None),
        (Some("cli"), None),
        (None, Some("auth.login")),
        (None, Some("user.add")),
        (Some("ana"), Some("auth.login")),
        (Some("cli"), Some("user.add")),
        (Some("cli"), Some("auth.login")),
        (Some("zoe"), None),
        (None, Some("user.remove")),
        (Some(""), None),
    ];
    for (user, action) in lists {
        let listed = |entry: &&Value| {
            user.is_none_or(|user| entry["user"] == user)
                && action.is_none_or(|action| entry["action"] == action)
        };
        let expected: Vec<&Value> = whole.iter().filter(listed).collect();
        let mut query: Vec<String> = vec!["pageSize=2".into()];
        query.extend(user.map(|user| format!("user={user}")));
        query.extend(action.map(|action| format!("action={action}")));
        let mut paged = Vec::new();
        for page in 1..=6 {
            let path = format!("/v1/admin/audit?{}&page={page}", query.join("&"));
            let body = ana.ok(&path).await;
            assert_eq!(body["total"], expected.len(), "{path}");
            assert_eq!(body["totalPages"], expected.len().div_ceil(2), "{path}");
            paged.extend(body["data"].as_array().expect("data").clone());
        }
        assert_eq!(
            paged.iter().collect::<Vec<_>>(),
            expected,
            "{user:?} {action:?}"
        );
    }
    for bad in ["page=0", "page=x", "pageSize=0", "pageSize=101"] {
        let (status, body) = ana.get(&format!("/v1/admin/audit?user=ana&{bad}")).await;
        assert_eq!(
            (status, &body["error"]),
            (400, &json!("invalid_request")),
            "{bad}"
        );
    }
}

/// `watch-catalogue user add` with the password on standard input.
pub fn add_user_through_the_binary(data: &std::path::Path, name: &str) -> String {
    use std::io::Write;
    let mut child = crate::support::binary(data)
        .args(["user", "add", name, "--role", "admin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{TEST_PASSWORD}\n").as_bytes())
        .expect("password");
    let output = child.wait_with_output().expect("wait");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Through the real binary: a user added on the host signs in, the session survives a restart
/// of the server, and `user remove` ends it.
#[tokio::test]
async fn a_session_survives_a_restart_and_ends_when_its_user_is_removed() {
    use crate::support::{binary, ServeProcess};
    let data = crate::support::new_data_dir();
    assert_eq!(
        add_user_through_the_binary(data.path(), "ana"),
        "added ana (admin)\n"
    );
    let client = reqwest::Client::new();
    let serve = ServeProcess::start(data.path());
    let cookie = crate::support::sign_in(&client, &serve.base, "ana").await;
    let log = serve.stop();
    assert!(!log.contains(&cookie[24..]), "no token in the log");
    assert!(!log.contains(TEST_PASSWORD), "no password in the log");

    let whoami = |base: String, cookie: String| async move {
        let response = reqwest::Client::new()
            .get(format!("{base}/auth/session"))
            .header("cookie", cookie)
            .send()
            .await
            .expect("session");
        response.status().as_u16()
    };
    let serve = ServeProcess::start(data.path());
    assert_eq!(
        whoami(serve.base.clone(), cookie.clone()).await,
        200,
        "after a restart"
    );
    serve.stop();

    let output = binary(data.path())
        .args(["user", "remove", "ana"])
        .output()
        .expect("remove");
    assert!(output.status.success(), "{output:?}");
    let serve = ServeProcess::start(data.path());
    assert_eq!(whoami(serve.base.clone(), cookie).await, 401, "removed");
    serve.stop();
}

#[tokio::test]
async fn failures_from_one_address_are_throttled_whatever_the_names() {
    let app = app().await;
    for n in 0..20 {
        let name = format!("guess{n}");
        assert_eq!(
            login(&app, &name, "wrong password").await.status().as_u16(),
            401
        );
    }
    let refused = login(&app, "ana", TEST_PASSWORD).await;
    assert_eq!(
        refused.status().as_u16(),
        429,
        "the address has spent its failures"
    );
    assert!(refused.headers().get("retry-after").is_some());
}

#[tokio::test]
async fn delisted_unmatched_listings_show_only_when_asked() {
    let app = app().await;
    let admin = app.session("ana").await;
    // eBay's next snapshot lacks e7, an unmatched listing: it becomes DELISTED.
    let feed = std::fs::read_to_string(crate::support::test_feeds().join("listings/ebay.jsonl"))
        .expect("feed");
    let next: Vec<&str> = feed
        .lines()
        .filter(|line| !line.contains(r#""sourceId":"e7""#))
        .collect();
    app.app
        .writer()
        .run(|turn| {
            watch_catalogue::jobs::ingest::ingest(
                turn,
                "ebay",
                "next",
                next.join("\n").as_bytes(),
                &Default::default(),
            )
        })
        .expect("ingest");
    let listed = admin.ok("/v1/admin/unmatched-listings?pageSize=100").await;
    let all = admin
        .ok("/v1/admin/unmatched-listings?pageSize=100&includeDelisted=true")
        .await;
    let delisted = |page: &Value| {
        page["data"]
            .as_array()
            .expect("data")
            .iter()
            .filter(|l| l["status"] == "DELISTED")
            .count()
    };
    assert_eq!(delisted(&listed), 0);
    assert_eq!(delisted(&all), 1, "e7");
    assert_eq!(
        all["total"].as_u64().expect("total") - listed["total"].as_u64().expect("total"),
        delisted(&all) as u64
    );
    let (status, body) = admin
        .get("/v1/admin/unmatched-listings?includeDelisted=maybe")
        .await;
    assert_eq!((status, &body["error"]), (400, &json!("invalid_request")));
}

/// `watch-catalogue user` through the real binary: list, role, passwd (from stdin, never an
/// argument), and the refusals, each a non-zero exit that changes nothing.
#[test]
fn the_user_commands_change_users_and_refuse_bad_input() {
    let data = crate::support::new_data_dir();
    add_user_through_the_binary(data.path(), "ana");
    let run =
        |args: &[&str], stdin: Option<&str>| crate::support::run_cli(data.path(), args, stdin, &[]);
    let (ok, text) = run(&["user", "role", "ana", "viewer"], None);
    assert!(ok, "{text}");
    assert_eq!(text, "ana is now viewer; their sessions are ended\n");
    let (ok, text) = run(&["user", "passwd", "ana"], Some("another long password\n"));
    assert!(ok, "{text}");
    assert_eq!(text, "password of ana changed; their sessions are ended\n");
    let (ok, text) = run(&["user", "list"], None);
    assert!(ok && text.starts_with("ana\tviewer\tsince "), "{text}");
    for (args, stdin, says) in [
        (
            &["user", "add", "ana"][..],
            Some("a long password\n"),
            "exists already",
        ),
        (
            &["user", "add", "Bad Name"][..],
            Some("a long password\n"),
            "is not a username",
        ),
        (
            &["user", "add", "bob"][..],
            Some("short\n"),
            "at least 10 characters",
        ),
        (
            &["user", "add", "bob"][..],
            None,
            "no password on standard input",
        ),
        (&["user", "role", "ana", "root"][..], None, "is not a role"),
        (
            &["user", "remove", "nobody"][..],
            None,
            "no user named `nobody`",
        ),
    ] {
        let (ok, text) = run(args, stdin);
        assert!(!ok && text.contains(says), "{args:?}: {text}");
    }
    let (_, text) = run(&["user", "list"], None);
    assert_eq!(text.lines().count(), 1, "nothing was added: {text}");
}

/// A server that believes the loopback's `X-Forwarded-For`: each test request names its client.
async fn behind_a_proxy() -> TestApp {
    let config = ApiConfig {
        rate_limit: watch_catalogue::api::config::RateLimitConfig {
            trusted_proxies: vec!["127.0.0.1/32".parse().expect("net")],
            ..Default::default()
        },
        ..ApiConfig::default()
    };
    TestApp::build()
        .user("ana", Role::Admin)
        .config(config)
        .start()
        .await
}

/// A login as `username` from `client` (as the trusted proxy forwards it).
async fn login_from(app: &TestApp, client: &str, username: &str, password: &str) -> u16 {
    app.send(
        app.request(Method::POST, "/v1/auth/login")
            .header("x-forwarded-for", client)
            .json(&json!({"username": username, "password": password})),
    )
    .await
    .status()
    .as_u16()
}

#[tokio::test]
async fn a_strangers_failures_never_lock_a_user_out_of_an_address_that_has_not_failed() {
    let app = behind_a_proxy().await;
    let stranger = "203.0.113.7";
    for _ in 0..5 {
        assert_eq!(login_from(&app, stranger, "ana", "a guess").await, 401);
    }
    assert_eq!(
        login_from(&app, stranger, "ana", TEST_PASSWORD).await,
        429,
        "the failing address is still throttled for the name"
    );
    assert_eq!(
        login_from(&app, "198.51.100.20", "ana", TEST_PASSWORD).await,
        200,
        "ana signs in from her own address"
    );
    // Straight from the loopback (no forwarded client) too.
    assert_eq!(
        login(&app, "ana", TEST_PASSWORD).await.status().as_u16(),
        200
    );
}

#[tokio::test]
async fn a_session_in_use_outlives_a_short_idle_limit() {
    let time = SteppedClock::new();
    let short = SessionPolicy {
        idle: Duration::from_millis(1_000),
        ..SessionPolicy::default()
    };
    let app = app_on(&time, short).await;
    let session = app.session("ana").await;
    // Used every 350 ms for 1.4 s: each use is well within the idle limit of the one before,
    // though the whole is longer than the limit.
    for step in 1..=4 {
        time.advance(Duration::from_millis(350));
        let (status, body) = session.get("/v1/auth/session").await;
        assert_eq!(status, 200, "use {step}: {body}");
    }
    time.advance(Duration::from_millis(1_000));
    assert_eq!(session.get("/v1/auth/session").await.0, 401, "then idle");
}

#[tokio::test]
async fn the_valid_session_cookie_counts_whichever_comes_first() {
    let app = app().await;
    let stale = app.session("ana").await;
    let (status, _) = stale.call(Method::POST, "/v1/auth/logout", None).await;
    assert_eq!(status, 204);
    let valid = app.session("ana").await;
    let unknown = format!("watch_catalogue_session={}", "0".repeat(64));
    for (cookie, what) in [
        (
            format!("watch_catalogue_session=bogus; {}", valid.cookie),
            "a malformed one first",
        ),
        (
            format!("{}; {}", stale.cookie, valid.cookie),
            "a logged-out one first",
        ),
        (
            format!("{unknown}; {}", valid.cookie),
            "an unknown one first",
        ),
        (
            format!("{}; {unknown}", valid.cookie),
            "the valid one first",
        ),
    ] {
        let response = app
            .send(
                app.request(Method::GET, "/v1/admin/stats")
                    .header("cookie", cookie),
            )
            .await;
        assert_eq!(response.status().as_u16(), 200, "{what}");
    }
    // In two `Cookie` lines as well.
    let response = app
        .send(
            app.request(Method::GET, "/v1/auth/session")
                .header("cookie", stale.cookie.clone())
                .header("cookie", valid.cookie.clone()),
        )
        .await;
    assert_eq!(response.status().as_u16(), 200, "two Cookie lines");
    // Without a valid one, still no session.
    let response = app
        .send(
            app.request(Method::GET, "/v1/admin/stats")
                .header("cookie", format!("{}; {unknown}", stale.cookie)),
        )
        .await;
    assert_eq!(response.status().as_u16(), 401);
}
