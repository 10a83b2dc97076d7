//! The settings of the HTTP layer: rate limits, sessions, request slots, body and snapshot
//! limits, the metrics token and a version's sunset, each with the default `serve` starts with.
//! The CLI fills [`ApiConfig`] from flags and environment; tests and benches build it directly.

use crate::api::layers::capacity::CapacityConfig;
use crate::api::layers::metrics::MetricsToken;
use crate::auth::SessionPolicy;

/// Settings of the HTTP layers shared by every route.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    pub rate_limit: RateLimitConfig,
    /// Set when the current version winds down.
    pub deprecation: Option<Deprecation>,
    /// Largest accepted request body, in bytes.
    pub body_limit: usize,
    /// Base URL of re-hosted listing pictures (`{base}/pictures/{id}`).
    pub media_base_url: String,
    /// How long admin sessions live, and whether their cookie is `Secure`.
    pub sessions: SessionPolicy,
    /// Requests an admin session may make per rate-limit window (policy `admin`).
    pub admin_rate_limit: u32,
    /// Requests a client IP may make per window to `/reconcile` (policy `reconcile`): a
    /// spreadsheet sends a column in batches, many requests in a row.
    pub reconcile_rate_limit: u32,
    /// Requests answered at once, and waiting for a turn; more are refused with 503.
    pub capacity: CapacityConfig,
    /// Largest snapshot posted to `/admin/providers/{slug}/snapshot`, in bytes: streamed to
    /// the spool, so only disk bounds it.
    pub snapshot_limit: u64,
    /// The bearer token `GET /metrics` asks for; `None`: it answers anyone.
    pub metrics_token: Option<MetricsToken>,
    /// The time rate-limit windows, the login throttle and session limits are measured by: the
    /// system's; a test gives a stepped one (`crate::clock`).
    pub clock: crate::clock::Clock,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            rate_limit: RateLimitConfig::default(),
            deprecation: None,
            body_limit: DEFAULT_BODY_LIMIT,
            media_base_url: DEFAULT_MEDIA_BASE_URL.to_owned(),
            sessions: SessionPolicy::default(),
            admin_rate_limit: DEFAULT_ADMIN_RATE_LIMIT,
            reconcile_rate_limit: DEFAULT_RECONCILE_RATE_LIMIT,
            capacity: Default::default(),
            snapshot_limit: DEFAULT_SNAPSHOT_LIMIT,
            metrics_token: None,
            clock: crate::clock::Clock::system(),
        }
    }
}

/// An admin session's budget: ten times the public one, for working through a backlog.
pub const DEFAULT_ADMIN_RATE_LIMIT: u32 = 6000;
/// Reconciliation requests per client IP and window: a column of 10,000 rows in OpenRefine's
/// batches of 10 is 1,000 requests, through in one window with room to spare; each request is
/// at most 50 queries, so a window's work stays bounded (docs/decisions.md, D-194).
pub const DEFAULT_RECONCILE_RATE_LIMIT: u32 = 1_200;

/// Default base of media URLs: this server's own `/media`, relative to its origin.
pub const DEFAULT_MEDIA_BASE_URL: &str = "/media";

/// Default largest posted snapshot: 4 GiB.
pub const DEFAULT_SNAPSHOT_LIMIT: u64 = 4 << 30;

/// Default largest request body: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// Per-client-IP request budget in fixed windows.
#[derive(Debug, Clone)]
pub struct RateLimitConfig {
    pub limit: u32,
    pub window: std::time::Duration,
    /// Proxies whose `X-Forwarded-For` is believed; the client is then the right-most
    /// untrusted entry.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Most clients tracked at once; memory stays bounded under a flood of distinct IPs.
    pub max_clients: usize,
}

/// The spec's budget: 600 requests per 60 seconds.
pub const DEFAULT_RATE_LIMIT: u32 = 600;
/// The spec's window, in seconds.
pub const DEFAULT_RATE_WINDOW_SECS: u64 = 60;

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            limit: DEFAULT_RATE_LIMIT,
            window: std::time::Duration::from_secs(DEFAULT_RATE_WINDOW_SECS),
            trusted_proxies: Vec::new(),
            max_clients: 100_000,
        }
    }
}

/// The current version is winding down: every response says when it stops and what replaces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deprecation {
    pub sunset: std::time::SystemTime,
    pub successor: String,
}

/// The shortest notice a sunset may give: six months (183 days).
pub const MIN_SUNSET_NOTICE: std::time::Duration = std::time::Duration::from_secs(183 * 24 * 3600);

/// Why a configuration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("sunset `{0}` is neither a date (2027-06-30) nor an HTTP-date (Wed, 30 Jun 2027 00:00:00 GMT)")]
    SunsetFormat(String),
    #[error("sunset {0} is less than six months away; a version announces its end at least six months ahead")]
    SunsetTooSoon(String),
    #[error("a sunset needs a successor URL (--successor)")]
    MissingSuccessor,
}

impl Deprecation {
    /// Parses `sunset` (`YYYY-MM-DD`, midnight UTC, or an HTTP-date) and checks it is at least
    /// six months after `now`.
    pub fn new(
        sunset: &str,
        successor: &str,
        now: std::time::SystemTime,
    ) -> Result<Deprecation, ConfigError> {
        let when = parse_day(sunset)
            .or_else(|| httpdate::parse_http_date(sunset).ok())
            .ok_or_else(|| ConfigError::SunsetFormat(sunset.to_owned()))?;
        if when < now + MIN_SUNSET_NOTICE {
            return Err(ConfigError::SunsetTooSoon(httpdate::fmt_http_date(when)));
        }
        if successor.trim().is_empty() {
            return Err(ConfigError::MissingSuccessor);
        }
        Ok(Deprecation {
            sunset: when,
            successor: successor.to_owned(),
        })
    }
}

fn parse_day(text: &str) -> Option<std::time::SystemTime> {
    let mut parts = text.splitn(3, '-');
    let (year, month, day) = (
        parts.next()?.parse().ok()?,
        parts.next()?.parse::<u8>().ok()?,
        parts.next()?.parse().ok()?,
    );
    let month = time::Month::try_from(month).ok()?;
    let date = time::Date::from_calendar_date(year, month, day).ok()?;
    let seconds = date.midnight().assume_utc().unix_timestamp();
    Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(u64::try_from(seconds).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn a_sunset_is_a_date_or_http_date_at_least_six_months_out() {
        let now = UNIX_EPOCH + Duration::from_secs(1_795_334_400); // 2026-11-22
        let ok = Deprecation::new("2027-06-30", "https://api.example/v2", now).expect("valid");
        assert_eq!(
            httpdate::fmt_http_date(ok.sunset),
            "Wed, 30 Jun 2027 00:00:00 GMT"
        );
        assert!(Deprecation::new("Wed, 30 Jun 2027 00:00:00 GMT", "/v2", now).is_ok());
        assert!(matches!(
            Deprecation::new("2027-01-01", "/v2", now),
            Err(ConfigError::SunsetTooSoon(_))
        ));
        assert!(matches!(
            Deprecation::new("next year", "/v2", now),
            Err(ConfigError::SunsetFormat(_))
        ));
        assert!(matches!(
            Deprecation::new("2027-02-30", "/v2", now),
            Err(ConfigError::SunsetFormat(_))
        ));
        assert_eq!(
            Deprecation::new("2028-01-01", " ", now),
            Err(ConfigError::MissingSuccessor)
        );
    }
}
