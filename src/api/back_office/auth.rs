//! `POST /auth/login`, `POST /auth/logout` and `GET /auth/session`: opening, ending and
//! naming an admin session. A failed login answers one 401 whether the name or the password
//! was wrong, after the same work, and failures are throttled per client IP and per name from
//! that IP: a stranger's failures never lock a user out of an address that has not failed.

use super::{Caller, ClientIp, LOGIN_WINDOW};
use crate::api::config::RateLimitConfig;
#[allow(unused_imports)] // named in the OpenAPI annotations
use crate::api::error::ErrorBody;
use crate::api::error::{ApiError, ApiResult};
use crate::api::layers::capacity::Work;
use crate::api::layers::rate_limit::RateLimiter;
use crate::api::requests::{Credentials, JsonBody};
use crate::api::views::back_office::SessionView;
use crate::auth::{check_credentials, new_token, SessionPolicy};
use crate::clock::Clock;
use crate::domain::{Session, Username};
use crate::jobs::users::{audit_entry, Actor};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

/// Failed logins allowed per client IP (whatever the names), and per user name from one client
/// IP, in each 15-minute window.
pub const FAILURES_PER_IP: u32 = 20;
pub const FAILURES_PER_NAME: u32 = 5;

/// The session rules, the failure budgets of logins, and the clock both are measured by.
pub struct SignIn {
    pub sessions: SessionPolicy,
    clock: Clock,
    by_ip: RateLimiter<IpAddr>,
    /// Keyed by name and address, never by name alone: a budget of the name shared by every
    /// address would let anyone lock its user out with five wrong passwords.
    by_name: RateLimiter<(String, IpAddr)>,
}

impl SignIn {
    /// The budgets keep at most `limits.max_clients` keys each, as the request budgets do.
    pub fn new(sessions: SessionPolicy, limits: &RateLimitConfig, clock: Clock) -> SignIn {
        let budget = RateLimitConfig {
            window: LOGIN_WINDOW,
            ..limits.clone()
        };
        SignIn {
            sessions,
            clock,
            by_ip: RateLimiter::named("login", FAILURES_PER_IP, &budget),
            by_name: RateLimiter::named("login", FAILURES_PER_NAME, &budget),
        }
    }

    /// `Retry-After` seconds when either budget is spent.
    fn refused(&self, ip: IpAddr, name: &str, now: Instant) -> Option<u64> {
        [
            self.by_ip.peek(ip, now),
            self.by_name.peek(name_key(name, ip), now),
        ]
        .into_iter()
        .filter(|decision| !decision.allowed)
        .map(|decision| decision.reset)
        .max()
    }

    fn count_failure(&self, ip: IpAddr, name: &str, now: Instant) {
        self.by_ip.check(ip, now);
        self.by_name.check(name_key(name, ip), now);
    }

    /// A right password from `ip` clears the name's failures there: a user who mistyped and
    /// then signed in starts again with the full budget.
    fn count_success(&self, ip: IpAddr, name: &str) {
        self.by_name.forget(&name_key(name, ip));
    }

    /// Keys the failure budgets hold now (for tests of the memory bound).
    pub fn tracked_keys(&self) -> usize {
        self.by_ip.tracked_clients() + self.by_name.tracked_clients()
    }
}

/// The key a name's failures from `ip` are counted under: the name when it could be a user's,
/// else one shared key, so long made-up names cost no memory (a key is at most a user name of
/// 64 bytes and an address) nor slip past the budget.
fn name_key(name: &str, ip: IpAddr) -> (String, IpAddr) {
    let name = match Username::parse(name) {
        Ok(name) => name.to_string(),
        Err(_) => "\u{0}not a user name".to_owned(),
    };
    (name, ip)
}

/// Opens a session and sets its cookie (HttpOnly, SameSite=Strict, Path=/, Secure behind
/// TLS, Max-Age the session's absolute lifetime).
#[utoipa::path(post, path = "/auth/login", operation_id = "login", tag = "auth",
    request_body = Credentials,
    responses((status = 200, description = "Signed in; the session cookie is set", body = SessionView),
        (status = 401, description = "unauthorized: wrong username or password (one answer for both)", body = ErrorBody),
        (status = 403, description = "forbidden: the request came from another origin", body = ErrorBody)))]
pub async fn login(
    work: Work,
    Extension(sign_in): Extension<Arc<SignIn>>,
    Extension(ClientIp(ip)): Extension<ClientIp>,
    JsonBody(credentials): JsonBody<Credentials>,
) -> ApiResult<Response> {
    let (cookie, body) = open_session(&work, &sign_in, ip, credentials).await?;
    Ok(([(header::SET_COOKIE, cookie)], Json(body)).into_response())
}

/// Checks `credentials` under the sign-in throttle and opens a session, audited: the session
/// cookie to set and who signed in. What `POST /auth/login` and the console's sign-in form do.
pub async fn open_session(
    work: &Work,
    sign_in: &SignIn,
    ip: IpAddr,
    credentials: Credentials,
) -> ApiResult<(String, SessionView)> {
    let now = sign_in.clock.instant();
    let name = credentials.username.clone();
    if let Some(retry_after) = sign_in.refused(ip, &name, now) {
        return Err(ApiError::RateLimited { retry_after });
    }
    // Argon2 is tens of milliseconds of one core: off the async workers (docs/decisions.md,
    // D-103).
    let user = work
        .run(move |app| {
            let user = Username::parse(&credentials.username)
                .ok()
                .map(|name| app.store().sessions().user(&name))
                .transpose()?
                .flatten();
            Ok(check_credentials(user.as_ref(), &credentials.password).cloned())
        })
        .await?;
    let Some(user) = user else {
        sign_in.count_failure(ip, &name, now);
        tracing::info!(client = %ip, "login failed");
        return Err(ApiError::BadCredentials);
    };
    sign_in.count_success(ip, &name);
    let (token, token_hash) = new_token()?;
    let opened = sign_in.clock.timestamp();
    let session = Session {
        token_hash,
        user: user.name,
        role: user.role,
        created_at: opened,
        last_seen_at: opened,
    };
    let actor = Actor::User(session.user.clone());
    let session = work
        .run(move |app| {
            let entry = audit_entry(
                app.store(),
                &actor,
                "auth.login",
                vec![format!("user:{}", session.user)],
                format!("from {ip}"),
            )?;
            app.store().sessions().open_session(&session, &entry)?;
            Ok(session)
        })
        .await?;
    let cookie = sign_in.sessions.cookie(&token);
    let body = SessionView {
        username: session.user.to_string(),
        role: session.role.as_str(),
    };
    Ok((cookie, body))
}

/// Ends the caller's session and clears its cookie.
#[utoipa::path(post, path = "/auth/logout", operation_id = "logout", tag = "auth",
    responses((status = 204, description = "Signed out; the session cookie is cleared"),
        (status = 401, description = "unauthorized: no session to end", body = ErrorBody)))]
pub async fn logout(
    work: Work,
    Extension(sign_in): Extension<Arc<SignIn>>,
    Extension(caller): Extension<Caller>,
) -> ApiResult<Response> {
    let Caller::Signed(signed) = caller else {
        return Err(ApiError::Unauthorized);
    };
    let actor = Actor::User(signed.user.name.clone());
    let target = vec![format!("user:{}", signed.user.name)];
    work.run(move |app| {
        let entry = audit_entry(app.store(), &actor, "auth.logout", target, "")?;
        Ok(app
            .store()
            .sessions()
            .close_session(&signed.session, Some(&entry))?)
    })
    .await?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sign_in(max_clients: usize) -> SignIn {
        let limits = RateLimitConfig {
            max_clients,
            ..RateLimitConfig::default()
        };
        SignIn::new(SessionPolicy::default(), &limits, Clock::system())
    }

    fn ip(n: u32) -> IpAddr {
        IpAddr::from(n.to_be_bytes())
    }

    #[test]
    fn a_name_is_throttled_only_at_the_address_it_failed_from() {
        let sign_in = sign_in(1_000);
        let now = Instant::now();
        for _ in 0..FAILURES_PER_NAME {
            assert_eq!(sign_in.refused(ip(1), "ana", now), None);
            sign_in.count_failure(ip(1), "ana", now);
        }
        assert!(sign_in.refused(ip(1), "ana", now).is_some());
        assert_eq!(sign_in.refused(ip(2), "ana", now), None, "another address");
        assert_eq!(sign_in.refused(ip(1), "vic", now), None, "another name");
        // A right password clears the name's failures at that address.
        sign_in.count_failure(ip(2), "ana", now);
        sign_in.count_success(ip(2), "ana");
        assert_eq!(
            sign_in.by_name.peek(name_key("ana", ip(2)), now).remaining,
            5
        );
    }

    #[test]
    fn the_budgets_stay_bounded_and_keep_spent_ones_under_a_flood_of_names_and_addresses() {
        let sign_in = sign_in(1_000);
        let now = Instant::now();
        for _ in 0..FAILURES_PER_NAME {
            sign_in.count_failure(ip(1), "ana", now);
        }
        for n in 0..50_000u32 {
            sign_in.count_failure(ip(n + 2), &format!("guess{n}"), now);
            // Looking costs no memory.
            sign_in.refused(ip(n + 100_000), &format!("look{n}"), now);
        }
        let bound = 2 * (1_000 + 16);
        assert!(
            sign_in.tracked_keys() <= bound,
            "{}",
            sign_in.tracked_keys()
        );
        assert!(
            sign_in.refused(ip(1), "ana", now).is_some(),
            "a spent budget outlives the flood of one-failure keys"
        );
    }
}
