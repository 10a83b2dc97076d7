//! The back office: who the caller is (from the session cookie), the one guard in front of the
//! four back-office URL groups, and their handlers, one module named after each group
//! (`admin`, `admin_jobs`, `admin_users`, `reconciliation`, `picture_review`, `duplicate_models`) and `auth`
//! for sign-in. The guard is a layer, never a check in a handler: a route added under a group
//! is guarded before it exists.

pub mod admin;
pub mod admin_jobs;
pub mod admin_users;
pub mod auth;
pub mod duplicate_models;
pub mod picture_review;
pub mod reconciliation;

use super::error::{internal, ApiError, ApiResult, ErrorCode};
use crate::auth::{tokens_in_cookies, SessionPolicy, MAX_SESSION_COOKIES};
use crate::clock::Clock;
use crate::domain::MatchOutcome;
use crate::domain::{Role, Session, User};
use crate::jobs::users::Actor;
use axum::extract::{Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// The groups that need an admin session, under `/v1` and unversioned.
pub const GROUPS: [&str; 4] = [
    "/admin",
    "/picture-review",
    "/reconciliation",
    "/duplicate-models",
];

/// True when `path` (with or without `/v1`) lies in a back-office group.
pub fn is_back_office(path: &str) -> bool {
    let path = path.strip_prefix("/v1").unwrap_or(path);
    GROUPS.iter().any(|group| {
        path.strip_prefix(group)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// The console's home page and its sign-in page (`crate::console`).
pub const CONSOLE_HOME: &str = "/console/";
pub const CONSOLE_SIGN_IN: &str = "/console/sign-in";

/// True when `path` is a console page that needs a session: every console path but its
/// sign-in page and its assets.
fn is_console_page(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/console") else {
        return false;
    };
    (rest.is_empty() || rest.starts_with('/'))
        && path != CONSOLE_SIGN_IN
        && !rest.starts_with("/assets/")
}

/// The sign-in paths: state-changing, so the same origin rule as the back office applies.
fn is_auth(path: &str) -> bool {
    let path = path.strip_prefix("/v1").unwrap_or(path);
    path.starts_with("/auth/")
}

/// Who is calling, as the session cookie says; put on every request by [`identify`].
#[derive(Debug, Clone)]
pub enum Caller {
    Anonymous,
    Signed(Arc<SignedIn>),
}

/// A live session and its user.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub session: Session,
    pub user: User,
}

impl Caller {
    /// The signed-in admin, if the caller is one.
    pub fn admin(&self) -> Option<&SignedIn> {
        match self {
            Caller::Signed(signed) if signed.user.role == Role::Admin => Some(signed),
            _ => None,
        }
    }
}

/// The client's address as the rate limiter resolved it (behind trusted proxies, the
/// forwarded one), for login throttling.
#[derive(Debug, Clone, Copy)]
pub struct ClientIp(pub IpAddr);

/// What [`identify`] needs: the store, the session rules and the clock they are checked by.
pub struct Identity {
    pub app: std::sync::Arc<crate::app::App>,
    pub sessions: SessionPolicy,
    pub clock: Clock,
}

/// Reads the session cookies, if any, into a [`Caller`]: each one sent is tried in order (up
/// to [`MAX_SESSION_COOKIES`]) until one names a session within its idle and absolute limits
/// whose user still exists with the role it signed in with. An ended session is removed.
/// Requests without the cookie cost no store read.
pub async fn identify(
    State(identity): State<Arc<Identity>>,
    mut request: Request,
    next: Next,
) -> Response {
    let tokens: Vec<String> = request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(tokens_in_cookies)
        .take(MAX_SESSION_COOKIES)
        .map(str::to_owned)
        .collect();
    let caller = if tokens.is_empty() {
        Ok(Caller::Anonymous)
    } else {
        let identity = identity.clone();
        tokio::task::spawn_blocking(move || first_signed_in(&identity, &tokens))
            .await
            .unwrap_or_else(|error| Err(internal(&error)))
    };
    match caller {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(error) => error.into_response(),
    }
}

/// The caller of the first of `tokens` that opens a live session; anonymous when none does.
fn first_signed_in(identity: &Identity, tokens: &[String]) -> Result<Caller, ApiError> {
    for token in tokens {
        if let signed @ Caller::Signed(_) = caller_of(identity, token)? {
            return Ok(signed);
        }
    }
    Ok(Caller::Anonymous)
}

fn caller_of(identity: &Identity, token: &str) -> Result<Caller, ApiError> {
    let store = &identity.app.store();
    let Some(mut session) = store.sessions().session(&crate::auth::hash_token(token))? else {
        return Ok(Caller::Anonymous);
    };
    let now = identity.clock.timestamp();
    let user = store.sessions().user(&session.user)?;
    let valid = identity.sessions.is_live(&session, now)
        && user.as_ref().is_some_and(|user| user.role == session.role);
    let Some(user) = user.filter(|_| valid) else {
        store.sessions().close_session(&session, None)?;
        return Ok(Caller::Anonymous);
    };
    // A person at work: a running job keeps its chunks short, so their next write waits less.
    store.note_a_person_at_work();
    if identity.sessions.needs_touch(&session, now) {
        session.last_seen_at = now;
        store.sessions().touch_session(&session)?;
    }
    Ok(Caller::Signed(Arc::new(SignedIn { session, user })))
}

/// The guard of the back-office groups: no session 401 `unauthorized`, a session that is not
/// an admin's 403 `forbidden`, before anything else answers (a 404 or a 400 would tell an
/// anonymous caller which ids exist). A state-changing request to the back office, the console
/// or the sign-in paths whose `Origin` names another origin is 403 too. A console page without
/// a session is a 303 to the console's sign-in page.
pub async fn guard(request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let back_office = is_back_office(path);
    let console = path.starts_with("/console");
    if (back_office || console || is_auth(path)) && is_cross_origin_write(&request) {
        return ApiError::Forbidden.into_response();
    }
    // A console page shows a signed-in caller of either role what an admin sees (a viewer
    // without the controls that write); anyone else is sent to sign in.
    if is_console_page(path)
        && !matches!(
            request.extensions().get::<Caller>(),
            Some(Caller::Signed(_))
        )
    {
        return axum::response::Redirect::to(CONSOLE_SIGN_IN).into_response();
    }
    if back_office {
        let caller = request.extensions().get::<Caller>();
        match caller {
            Some(caller) if caller.admin().is_some() => {}
            Some(Caller::Signed(_)) => return ApiError::Forbidden.into_response(),
            _ => return ApiError::Unauthorized.into_response(),
        }
    }
    next.run(request).await
}

/// A POST, PUT, PATCH or DELETE whose `Origin` is not this service's own (scheme-less
/// comparison of the host, as `Host` names it); a request without `Origin` (curl, a script) is
/// let through, since browsers always send it on such requests.
fn is_cross_origin_write(request: &Request) -> bool {
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) {
        return false;
    }
    let Some(origin) = request.headers().get(header::ORIGIN) else {
        return false;
    };
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, rest)| rest.trim_end_matches('/'));
    origin_host != Some(host) || host.is_empty()
}

/// How long a failure budget window lasts for logins.
pub const LOGIN_WINDOW: Duration = Duration::from_secs(15 * 60);

/// The signed-in admin, who the audit trail names (the guard let only admins in).
pub fn actor(caller: &Caller) -> ApiResult<Actor> {
    caller
        .admin()
        .map(|signed| Actor::User(signed.user.name.clone()))
        .ok_or(ApiError::Forbidden)
}

/// Runs a back-office write through the data dir's writer (call it on the blocking pool: it may
/// wait for a running ingest's turn). A refusal is answered by its [`ErrorCode`]; a failure to
/// index what was committed is a logged 500.
pub fn write<T, E: ErrorCode>(
    app: &crate::app::App,
    job: impl FnOnce(&crate::store::WriteTurn<'_>) -> Result<T, E>,
) -> ApiResult<T> {
    Ok(app.writer().run(job)?.value)
}

/// The `reason` values of the unmatched-listing lists: each reason a listing did not match.
pub fn reason_choices() -> Vec<(&'static str, MatchOutcome)> {
    MatchOutcome::REASONS
        .iter()
        .filter_map(|&outcome| Some((outcome.reason()?, outcome)))
        .collect()
}

pub fn reason_schema() -> utoipa::openapi::Object {
    super::params::choice_schema(&reason_choices())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request with a live session marks a person at work (a running job's chunks shrink,
    /// D-216); one with an unknown token does not.
    #[test]
    fn a_signed_in_caller_is_a_person_at_work_and_an_unknown_token_is_not() {
        use crate::domain::{Role, Session, Username};
        use crate::jobs::listing_writes::A_PERSON_AT_WORK;
        let dir = tempfile::tempdir().expect("dir");
        let data = crate::data_dir::DataDir::new(dir.path());
        let app = std::sync::Arc::new(crate::app::App::open(&data, 1 << 20).expect("app"));
        let identity = Identity {
            app: app.clone(),
            sessions: SessionPolicy::default(),
            clock: Clock::system(),
        };
        let store = app.store();
        let name = Username::parse("ana").expect("name");
        let turn = store.write_turn();
        crate::jobs::users::add_user(
            &turn,
            &crate::jobs::users::Actor::Cli,
            &name,
            Role::Admin,
            "a long password 1",
        )
        .expect("user");
        drop(turn);

        assert!(matches!(
            caller_of(&identity, &"0".repeat(64)),
            Ok(Caller::Anonymous)
        ));
        assert!(!store.a_person_at_work_within(A_PERSON_AT_WORK));

        let (token, token_hash) = crate::auth::new_token().expect("token");
        let now = identity.clock.timestamp();
        let session = Session {
            token_hash,
            user: name.clone(),
            role: Role::Admin,
            created_at: now,
            last_seen_at: now,
        };
        let entry = crate::jobs::users::audit_entry(
            store,
            &crate::jobs::users::Actor::Cli,
            "auth.login",
            vec![],
            String::new(),
        )
        .expect("entry");
        store
            .sessions()
            .open_session(&session, &entry)
            .expect("session");
        assert!(matches!(
            caller_of(&identity, &token),
            Ok(Caller::Signed(_))
        ));
        assert!(store.a_person_at_work_within(A_PERSON_AT_WORK));
    }

    #[test]
    fn the_four_groups_are_back_office_with_and_without_v1() {
        for path in [
            "/admin/stats",
            "/v1/admin",
            "/v1/reconciliation/link",
            "/picture-review/models/1/front-picture",
            "/duplicate-models",
        ] {
            assert!(is_back_office(path), "{path}");
        }
        for path in ["/administrators", "/v1/models", "/auth/login", "/", "/v1"] {
            assert!(!is_back_office(path), "{path}");
        }
    }

    #[test]
    fn every_console_path_but_sign_in_and_assets_needs_a_session() {
        for path in [
            "/console",
            "/console/",
            "/console/duplicates",
            "/console/x/assets/a",
        ] {
            assert!(is_console_page(path), "{path}");
        }
        for path in [
            "/console/sign-in",
            "/console/assets/console.js",
            "/consoles",
            "/v1/console",
            "/",
        ] {
            assert!(!is_console_page(path), "{path}");
        }
    }

    #[test]
    fn a_write_from_another_origin_is_refused_and_one_without_origin_is_not() {
        let request = |method: Method, origin: Option<&str>| {
            let mut builder = Request::builder()
                .method(method)
                .uri("/v1/auth/login")
                .header(header::HOST, "catalogue.example:8080");
            if let Some(origin) = origin {
                builder = builder.header(header::ORIGIN, origin);
            }
            builder.body(axum::body::Body::empty()).expect("request")
        };
        assert!(is_cross_origin_write(&request(
            Method::POST,
            Some("https://evil.example")
        )));
        assert!(!is_cross_origin_write(&request(
            Method::POST,
            Some("https://catalogue.example:8080")
        )));
        assert!(!is_cross_origin_write(&request(Method::POST, None)));
        assert!(!is_cross_origin_write(&request(
            Method::GET,
            Some("https://evil.example")
        )));
    }
}
