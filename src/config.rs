//! Where the service keeps its data and how it is tuned: one struct the CLI fills from flags
//! and environment, and the data-dir layout (`store/` for sled, `index/` for tantivy).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Default data directory, relative to the working directory.
pub const DEFAULT_DATA_DIR: &str = "./data";
/// Default address `serve` listens on.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";
/// Default sled page cache. sled's resident memory can reach several times this figure.
pub const DEFAULT_CACHE_BYTES: u64 = 256 << 20;
/// sled page cache of `import` when none is given: the duplicate pass and the index rebuild
/// read back every model the import wrote, and at a million models this saved 2-3 s of ~60
/// without raising the import's peak, which comes earlier, while it checks the dataset
/// (bench/RESULTS.md, "Import in parallel").
pub const IMPORT_CACHE_BYTES: u64 = 512 << 20;

/// The layout of a data directory.
#[derive(Debug, Clone)]
pub struct DataDir(PathBuf);

impl DataDir {
    pub fn new(path: impl Into<PathBuf>) -> DataDir {
        DataDir(path.into())
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn store(&self) -> PathBuf {
        self.0.join("store")
    }
    /// The catalogue index.
    pub fn index(&self) -> PathBuf {
        self.0.join("index")
    }
    /// The listings index.
    pub fn listings_index(&self) -> PathBuf {
        self.0.join("listings-index")
    }
    /// The content-addressed media store of fetched and cropped pictures.
    pub fn media(&self) -> PathBuf {
        self.0.join("media")
    }
    /// Where posted snapshots wait for their job; emptied at each start.
    pub fn spool(&self) -> PathBuf {
        self.0.join("spool")
    }
    /// The base URL of the server holding this data dir, while it serves.
    pub fn server_address(&self) -> PathBuf {
        self.0.join("server.addr")
    }
}

/// Settings of `serve`.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub data_dir: DataDir,
    pub addr: SocketAddr,
    pub cache_bytes: u64,
    pub api: ApiConfig,
    /// The image worker run in the server.
    pub pictures: crate::jobs::pictures::WorkerConfig,
    /// How connections are held, and how long the shutdown waits for them.
    pub connections: ConnectionConfig,
}

/// How `serve` holds its connections (`crate::connections`): what a client may leave
/// unfinished, how many may be open, and how long a shutdown waits for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionConfig {
    /// A request's head (request line and headers) must be in within this long of the
    /// connection opening or of the previous answer; else the connection is closed,
    /// unanswered. With hyper 1.12 this is also how long a keep-alive connection may wait
    /// for its next request.
    pub header_read_timeout: std::time::Duration,
    /// A connection on which the server waits this long on the client (for the rest of a
    /// body, for it to read the answer) without a byte moving is closed. A handler at work
    /// is not waiting on the client.
    pub idle_timeout: std::time::Duration,
    /// Connections open at once; the next is accepted when one closes.
    pub max_connections: usize,
    /// On SIGINT or SIGTERM, how long open connections have to finish their requests before
    /// they are closed.
    pub shutdown_grace: std::time::Duration,
}

/// Default header-read timeout, in seconds (hyper's own default, once it has a timer).
pub const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 30;
/// Default idle timeout, in seconds.
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 60;
/// Default cap on open connections: each is a file descriptor, and 512 leaves room for the
/// store's and indexes' files under the common soft limit of 1024.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default shutdown grace, in seconds.
pub const DEFAULT_SHUTDOWN_GRACE_SECS: u64 = 30;

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            header_read_timeout: std::time::Duration::from_secs(DEFAULT_HEADER_READ_TIMEOUT_SECS),
            idle_timeout: std::time::Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            shutdown_grace: std::time::Duration::from_secs(DEFAULT_SHUTDOWN_GRACE_SECS),
        }
    }
}

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
    pub sessions: crate::auth::SessionPolicy,
    /// Requests an admin session may make per rate-limit window (policy `admin`).
    pub admin_rate_limit: u32,
    /// Requests answered at once, and waiting for a turn; more are refused with 503.
    pub capacity: crate::api::layers::capacity::CapacityConfig,
    /// Largest snapshot posted to `/admin/providers/{slug}/snapshot`, in bytes: streamed to
    /// the spool, so only disk bounds it.
    pub snapshot_limit: u64,
    /// The bearer token `GET /metrics` asks for; `None`: it answers anyone.
    pub metrics_token: Option<crate::api::layers::metrics::MetricsToken>,
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
            sessions: crate::auth::SessionPolicy::default(),
            admin_rate_limit: DEFAULT_ADMIN_RATE_LIMIT,
            capacity: Default::default(),
            snapshot_limit: DEFAULT_SNAPSHOT_LIMIT,
            metrics_token: None,
            clock: crate::clock::Clock::system(),
        }
    }
}

/// An admin session's budget: ten times the public one, for working through a backlog.
pub const DEFAULT_ADMIN_RATE_LIMIT: u32 = 6000;

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

/// A network as `--trusted-proxy` and `--fetch-allow` take it: an address (`127.0.0.1`, `::1`,
/// meaning that one address, its /32 or /128) or a CIDR (`10.0.0.0/8`). ipnet's own parser
/// wants the prefix, so a plain address, which the help promises, needs this one.
pub fn parse_net(text: &str) -> Result<ipnet::IpNet, String> {
    let text = text.trim();
    if let Ok(net) = text.parse::<ipnet::IpNet>() {
        return Ok(net);
    }
    text.parse::<std::net::IpAddr>()
        .map(ipnet::IpNet::from)
        .map_err(|_| {
            format!("`{text}` is neither an address (127.0.0.1, ::1) nor a CIDR (10.0.0.0/8)")
        })
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
    fn a_network_is_an_address_or_a_cidr() {
        let net = |text: &str| parse_net(text).map(|net| net.to_string());
        assert_eq!(net("127.0.0.1"), Ok("127.0.0.1/32".into()));
        assert_eq!(net(" ::1 "), Ok("::1/128".into()));
        assert_eq!(net("10.0.0.0/8"), Ok("10.0.0.0/8".into()));
        assert_eq!(net("2001:db8::/32"), Ok("2001:db8::/32".into()));
        for bad in ["", "localhost", "10.0.0.0/33", "127.0.0.1/", "1.2.3"] {
            assert!(parse_net(bad).is_err(), "{bad}");
        }
        let one = parse_net("127.0.0.1").expect("net");
        assert!(one.contains(&"127.0.0.1".parse::<std::net::IpAddr>().expect("ip")));
        assert!(!one.contains(&"127.0.0.2".parse::<std::net::IpAddr>().expect("ip")));
    }

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
