//! `POST /auth/login`, `POST /auth/logout` and `GET /auth/session`: opening, ending and
//! naming an admin session. A failed login answers one 401 whether the name or the password
//! was wrong, after the same work, and failures are throttled per client IP and per name.

use super::{Caller, ClientIp, LOGIN_WINDOW};
#[allow(unused_imports)] // named in the OpenAPI annotations
use crate::api::error::ErrorBody;
use crate::api::error::{internal, ApiError, ApiResult};
use crate::api::layers::rate_limit::RateLimiter;
use crate::api::params::JsonBody;
use crate::api::AppState;
use crate::auth::{check_credentials, new_token, SessionPolicy};
use crate::config::RateLimitConfig;
use crate::domain::{Session, Timestamp, User, Username};
use crate::jobs::users::{audit_entry, Actor};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::sync::Arc;
use tokio::time::Instant;

/// Failed logins allowed per client IP, and per user name, in each 15-minute window.
pub const FAILURES_PER_IP: u32 = 20;
pub const FAILURES_PER_NAME: u32 = 5;

/// The session rules and the failure budgets of logins.
pub struct SignIn {
    pub sessions: SessionPolicy,
    by_ip: RateLimiter<IpAddr>,
    by_name: RateLimiter<String>,
}

impl SignIn {
    pub fn new(sessions: SessionPolicy, proxies: &RateLimitConfig) -> SignIn {
        let budget = RateLimitConfig {
            window: LOGIN_WINDOW,
            ..proxies.clone()
        };
        SignIn {
            sessions,
            by_ip: RateLimiter::named("login", FAILURES_PER_IP, &budget),
            by_name: RateLimiter::named("login", FAILURES_PER_NAME, &budget),
        }
    }

    /// `Retry-After` seconds when either budget is spent.
    fn refused(&self, ip: IpAddr, name: &str, now: Instant) -> Option<u64> {
        [
            self.by_ip.peek(ip, now),
            self.by_name.peek(name_key(name), now),
        ]
        .into_iter()
        .filter(|decision| !decision.allowed)
        .map(|decision| decision.reset)
        .max()
    }

    fn count_failure(&self, ip: IpAddr, name: &str, now: Instant) {
        self.by_ip.check(ip, now);
        self.by_name.check(name_key(name), now);
    }
}

/// The key a name's failures are counted under: the name when it could be a user's, else one
/// shared key, so a flood of long made-up names cannot fill memory (100,000 keys of a
/// megabyte each) nor slip past the budget.
fn name_key(name: &str) -> String {
    match Username::parse(name) {
        Ok(name) => name.to_string(),
        Err(_) => "\u{0}not a user name".to_owned(),
    }
}

/// What `POST /auth/login` takes.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    #[schema(example = "ana")]
    pub username: String,
    #[schema(example = "correct horse battery staple")]
    pub password: String,
}

/// The signed-in user.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SessionView {
    #[schema(example = "ana")]
    pub username: String,
    /// `admin` or `viewer`.
    #[schema(example = "admin")]
    pub role: &'static str,
}

/// Opens a session and sets its cookie (HttpOnly, SameSite=Strict, Path=/, Secure behind
/// TLS, Max-Age the session's absolute lifetime).
#[utoipa::path(post, path = "/auth/login", operation_id = "login", tag = "auth",
    request_body = Credentials,
    responses((status = 200, description = "Signed in; the session cookie is set", body = SessionView),
        (status = 401, description = "unauthorized: wrong username or password (one answer for both)", body = ErrorBody),
        (status = 403, description = "forbidden: the request came from another origin", body = ErrorBody)))]
pub async fn login(
    State(app): State<AppState>,
    Extension(sign_in): Extension<Arc<SignIn>>,
    Extension(ClientIp(ip)): Extension<ClientIp>,
    JsonBody(credentials): JsonBody<Credentials>,
) -> ApiResult<Response> {
    let now = Instant::now();
    let name = credentials.username.clone();
    if let Some(retry_after) = sign_in.refused(ip, &name, now) {
        return Err(ApiError::RateLimited { retry_after });
    }
    // Argon2 is 30 ms of one core: off the async workers.
    let user = tokio::task::spawn_blocking({
        let app = app.clone();
        move || -> ApiResult<Option<User>> {
            let user = Username::parse(&credentials.username)
                .ok()
                .map(|name| app.store.user(&name))
                .transpose()?
                .flatten();
            Ok(check_credentials(user.as_ref(), &credentials.password).cloned())
        }
    })
    .await
    .map_err(|error| internal(&error))??;
    let Some(user) = user else {
        sign_in.count_failure(ip, &name, now);
        tracing::info!(client = %ip, "login failed");
        return Err(ApiError::BadCredentials);
    };
    let (token, token_hash) = new_token().map_err(|error| internal(&error))?;
    let session = Session {
        token_hash,
        user: user.name,
        role: user.role,
        created_at: Timestamp::now(),
        last_seen_at: Timestamp::now(),
    };
    let actor = Actor::User(session.user.clone());
    let entry = audit_entry(
        &app.store,
        &actor,
        "auth.login",
        vec![format!("user:{}", session.user)],
        format!("from {ip}"),
    )?;
    app.store.open_session(&session, &entry)?;
    let cookie = sign_in.sessions.cookie(&token);
    let body = SessionView {
        username: session.user.to_string(),
        role: session.role.as_str(),
    };
    Ok(([(header::SET_COOKIE, cookie)], Json(body)).into_response())
}

/// Ends the caller's session and clears its cookie.
#[utoipa::path(post, path = "/auth/logout", operation_id = "logout", tag = "auth",
    responses((status = 204, description = "Signed out; the session cookie is cleared"),
        (status = 401, description = "unauthorized: no session to end", body = ErrorBody)))]
pub async fn logout(
    State(app): State<AppState>,
    Extension(sign_in): Extension<Arc<SignIn>>,
    Extension(caller): Extension<Caller>,
) -> ApiResult<Response> {
    let Caller::Signed(signed) = caller else {
        return Err(ApiError::Unauthorized);
    };
    let actor = Actor::User(signed.user.name.clone());
    let target = vec![format!("user:{}", signed.user.name)];
    let entry = audit_entry(&app.store, &actor, "auth.logout", target, "")?;
    app.store.close_session(&signed.session, Some(&entry))?;
    let cookie = sign_in.sessions.expired_cookie();
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, cookie)]).into_response())
}

/// The signed-in user and role.
#[utoipa::path(get, path = "/auth/session", operation_id = "get_session", tag = "auth",
    responses((status = 200, description = "The caller's session", body = SessionView),
        (status = 401, description = "unauthorized: no session", body = ErrorBody)))]
pub async fn session(Extension(caller): Extension<Caller>) -> ApiResult<Json<SessionView>> {
    match caller {
        Caller::Signed(signed) => Ok(Json(SessionView {
            username: signed.user.name.to_string(),
            role: signed.user.role.as_str(),
        })),
        Caller::Anonymous => Err(ApiError::Unauthorized),
    }
}
