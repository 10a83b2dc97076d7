//! `serve`: its flags, their assembly into the settings each layer owns ([`ServeConfig`] of
//! the server, [`ApiConfig`] of the HTTP layer, [`ConnectionConfig`] of the accept loop, the
//! image worker's), and the runtime the server runs on.

use super::args::parse_net;
use super::pictures::PictureArgs;
use super::Local;
use anyhow::Context;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use watch_catalogue::api::config::{
    ApiConfig, Deprecation, RateLimitConfig, DEFAULT_ADMIN_RATE_LIMIT, DEFAULT_MEDIA_BASE_URL,
    DEFAULT_RATE_LIMIT, DEFAULT_RATE_WINDOW_SECS, DEFAULT_RECONCILE_RATE_LIMIT,
    DEFAULT_SNAPSHOT_LIMIT,
};
use watch_catalogue::api::layers::capacity::CapacityConfig;
use watch_catalogue::api::layers::metrics::MetricsToken;
use watch_catalogue::auth::{SessionPolicy, DEFAULT_ABSOLUTE, DEFAULT_IDLE};
use watch_catalogue::connections::{
    ConnectionConfig, DEFAULT_HEADER_READ_TIMEOUT_SECS, DEFAULT_IDLE_TIMEOUT_SECS,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_SHUTDOWN_GRACE_SECS,
};
use watch_catalogue::server::ServeConfig;

/// Default address `serve` listens on.
const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// `--addr`: a socket address, `localhost:PORT` or a port alone (both on the loopback), else a
/// message with the forms it takes.
fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let port = text.strip_prefix("localhost:").unwrap_or(text);
    match port.parse::<u16>() {
        Ok(port) => Ok(SocketAddr::from(([127, 0, 0, 1], port))),
        Err(_) => Err(format!(
            "`{text}` is not an address to listen on: give an address and a port \
             (127.0.0.1:8080, 0.0.0.0:8080 to listen on every interface, [::1]:8080), \
             localhost:8080, or a port alone (8080, on 127.0.0.1)"
        )),
    }
}

/// Where `serve` reads the metrics token itself from; never a flag.
const METRICS_TOKEN_ENV: &str = "WATCH_CATALOGUE_METRICS_TOKEN";

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on: an address and a port (127.0.0.1:8080, 0.0.0.0:8080, [::1]:8080),
    /// `localhost:PORT`, or a port alone (on 127.0.0.1).
    #[arg(long, env = "WATCH_CATALOGUE_ADDR", default_value = DEFAULT_ADDR, value_parser = parse_addr)]
    addr: SocketAddr,
    /// Requests allowed per client IP and window.
    #[arg(long, env = "WATCH_CATALOGUE_RATE_LIMIT", default_value_t = DEFAULT_RATE_LIMIT)]
    rate_limit: u32,
    /// Length of a rate-limit window, in seconds.
    #[arg(long, env = "WATCH_CATALOGUE_RATE_WINDOW_SECS", default_value_t = DEFAULT_RATE_WINDOW_SECS)]
    rate_window_secs: u64,
    /// A proxy (address or CIDR) whose X-Forwarded-For is believed; repeat or comma-separate.
    #[arg(
        long = "trusted-proxy",
        env = "WATCH_CATALOGUE_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_parser = parse_net
    )]
    trusted_proxies: Vec<ipnet::IpNet>,
    /// Mark v1 as winding down: the date it stops answering (2027-06-30 or an HTTP-date),
    /// at least six months out. Needs --successor.
    #[arg(long, env = "WATCH_CATALOGUE_SUNSET", requires = "successor")]
    sunset: Option<String>,
    /// URL of the version that replaces v1, for the `Link` header.
    #[arg(long, env = "WATCH_CATALOGUE_SUCCESSOR")]
    successor: Option<String>,
    /// Base URL of re-hosted listing pictures (a CDN in production).
    #[arg(long, env = "WATCH_CATALOGUE_MEDIA_BASE_URL", default_value = DEFAULT_MEDIA_BASE_URL)]
    media_base_url: String,
    /// An admin session unused this long ends, in seconds.
    #[arg(long, env = "WATCH_CATALOGUE_SESSION_IDLE_SECS", default_value_t = DEFAULT_IDLE.as_secs())]
    session_idle_secs: u64,
    /// An admin session ends this long after login, in seconds.
    #[arg(long, env = "WATCH_CATALOGUE_SESSION_MAX_SECS", default_value_t = DEFAULT_ABSOLUTE.as_secs())]
    session_max_secs: u64,
    /// The service is reached over TLS (a proxy in front): session cookies are `Secure`.
    #[arg(long, env = "WATCH_CATALOGUE_BEHIND_TLS")]
    behind_tls: bool,
    /// Requests an admin session may make per window (its own budget, policy `admin`).
    #[arg(long, env = "WATCH_CATALOGUE_ADMIN_RATE_LIMIT", default_value_t = DEFAULT_ADMIN_RATE_LIMIT)]
    admin_rate_limit: u32,
    /// Requests a client IP may make per window to the reconciliation service (`/reconcile`,
    /// its own budget, policy `reconcile`).
    #[arg(long, env = "WATCH_CATALOGUE_RECONCILE_RATE_LIMIT", default_value_t = DEFAULT_RECONCILE_RATE_LIMIT)]
    reconcile_rate_limit: u32,
    /// Requests answered at once (default: four per core); their store and index work runs
    /// on the blocking pool.
    #[arg(long, env = "WATCH_CATALOGUE_MAX_RUNNING_REQUESTS")]
    max_running_requests: Option<usize>,
    /// Requests that may wait for a turn (default: 64 per core); any more are answered 503
    /// with Retry-After at once.
    #[arg(long, env = "WATCH_CATALOGUE_MAX_WAITING_REQUESTS")]
    max_waiting_requests: Option<usize>,
    /// Largest snapshot posted to /v1/admin/providers/{slug}/snapshot, in bytes (it is
    /// streamed to disk under the data dir).
    #[arg(long, env = "WATCH_CATALOGUE_SNAPSHOT_LIMIT", default_value_t = DEFAULT_SNAPSHOT_LIMIT)]
    snapshot_limit: u64,
    /// A file holding the bearer token GET /metrics asks for (or set the token itself in
    /// WATCH_CATALOGUE_METRICS_TOKEN). Without either, /metrics answers anyone.
    #[arg(long, env = "WATCH_CATALOGUE_METRICS_TOKEN_FILE")]
    metrics_token_file: Option<PathBuf>,
    /// Do not run the image worker in the server.
    #[arg(long, env = "WATCH_CATALOGUE_NO_PICTURE_WORKER")]
    no_picture_worker: bool,
    #[command(flatten)]
    pictures: PictureArgs,
    #[command(flatten)]
    connections: ConnectionArgs,
}

/// How `serve` holds connections (docs/operations.md, "Connections").
#[derive(Args)]
struct ConnectionArgs {
    /// Seconds a client has to send a request's head (request line and headers) after
    /// connecting or after the previous answer; the connection is closed otherwise. Also how
    /// long a keep-alive connection may wait for its next request.
    #[arg(long, env = "WATCH_CATALOGUE_HEADER_READ_TIMEOUT_SECS", default_value_t = DEFAULT_HEADER_READ_TIMEOUT_SECS)]
    header_read_timeout_secs: u64,
    /// Seconds the server waits on a client (the rest of a body, reading the answer) without a
    /// byte moving before it closes the connection.
    #[arg(long, env = "WATCH_CATALOGUE_IDLE_TIMEOUT_SECS", default_value_t = DEFAULT_IDLE_TIMEOUT_SECS)]
    idle_timeout_secs: u64,
    /// Connections open at once; at the cap the next one waits to be accepted until one closes.
    #[arg(long, env = "WATCH_CATALOGUE_MAX_CONNECTIONS", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// On SIGINT or SIGTERM, seconds the open connections have to finish their requests
    /// before they are closed.
    #[arg(long, env = "WATCH_CATALOGUE_SHUTDOWN_GRACE_SECS", default_value_t = DEFAULT_SHUTDOWN_GRACE_SECS)]
    shutdown_grace_secs: u64,
}

/// `serve`: the server on a multi-threaded runtime until SIGINT or SIGTERM.
pub fn run(args: ServeArgs, local: Local) -> anyhow::Result<()> {
    let config = args.config(local)?;
    // An admin's write or a first search after a start touches memory the process never had;
    // with huge pages each first touch zeroed 2 MiB, the tails of writes and first reads (D-237).
    super::batch::without_transparent_huge_pages();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let served = runtime.block_on(watch_catalogue::server::serve(config));
    // The store is flushed by then; a picture fetch still resolving a host name on a
    // blocking thread must not hold the exit up.
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

impl ServeArgs {
    /// The settings of every layer `serve` starts, from the flags and environment; a sunset
    /// too soon or a metrics token given twice is refused before anything opens.
    fn config(self, local: Local) -> anyhow::Result<ServeConfig> {
        let metrics_token = metrics_token(self.metrics_token_file)?;
        if metrics_token.is_none() && !self.addr.ip().is_loopback() {
            let addr = self.addr;
            tracing::warn!(%addr, "GET /metrics answers anyone who reaches this address: set WATCH_CATALOGUE_METRICS_TOKEN or --metrics-token-file");
        }
        let deprecation = match self.sunset {
            Some(sunset) => Some(Deprecation::new(
                &sunset,
                self.successor.as_deref().unwrap_or(""),
                SystemTime::now(),
            )?),
            None => None,
        };
        let rate_limit = RateLimitConfig {
            limit: self.rate_limit,
            window: Duration::from_secs(self.rate_window_secs.max(1)),
            trusted_proxies: self.trusted_proxies,
            ..RateLimitConfig::default()
        };
        let sessions = SessionPolicy {
            idle: Duration::from_secs(self.session_idle_secs.max(1)),
            absolute: Duration::from_secs(self.session_max_secs.max(1)),
            secure_cookie: self.behind_tls,
        };
        let api = ApiConfig {
            rate_limit,
            deprecation,
            media_base_url: self.media_base_url,
            sessions,
            admin_rate_limit: self.admin_rate_limit,
            reconcile_rate_limit: self.reconcile_rate_limit,
            capacity: capacity(self.max_running_requests, self.max_waiting_requests),
            snapshot_limit: self.snapshot_limit,
            metrics_token,
            ..ApiConfig::default()
        };
        Ok(ServeConfig {
            data_dir: local.data_dir,
            addr: self.addr,
            cache_bytes: local.cache_bytes,
            api,
            pictures: self.pictures.config(!self.no_picture_worker),
            connections: self.connections.config(),
        })
    }
}

impl ConnectionArgs {
    fn config(self) -> ConnectionConfig {
        ConnectionConfig {
            header_read_timeout: Duration::from_secs(self.header_read_timeout_secs.max(1)),
            idle_timeout: Duration::from_secs(self.idle_timeout_secs.max(1)),
            max_connections: self.max_connections.max(1),
            shutdown_grace: Duration::from_secs(self.shutdown_grace_secs),
        }
    }
}

/// The token `GET /metrics` asks for: from `WATCH_CATALOGUE_METRICS_TOKEN`, or the file
/// `--metrics-token-file` names; never a command-line argument, which other users of the host
/// could read in the process list.
fn metrics_token(file: Option<PathBuf>) -> anyhow::Result<Option<MetricsToken>> {
    let from_env = std::env::var_os(METRICS_TOKEN_ENV);
    let text = match (from_env, file) {
        (Some(_), Some(_)) => anyhow::bail!(
            "both {METRICS_TOKEN_ENV} and --metrics-token-file are set: give the metrics token once"
        ),
        (Some(token), None) => token
            .into_string()
            .map_err(|_| anyhow::anyhow!("{METRICS_TOKEN_ENV} is not UTF-8"))?,
        (None, Some(file)) => std::fs::read_to_string(&file)
            .with_context(|| format!("reading the metrics token from {}", file.display()))?,
        (None, None) => return Ok(None),
    };
    Ok(Some(MetricsToken::new(&text)?))
}

/// The request slots of `serve`: the defaults, or what the flags set.
fn capacity(running: Option<usize>, waiting: Option<usize>) -> CapacityConfig {
    let default = CapacityConfig::default();
    CapacityConfig {
        running: running.unwrap_or(default.running),
        waiting: waiting.unwrap_or(default.waiting),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::{Cli, Command};
    use clap::Parser;
    use watch_catalogue::data_dir::DataDir;
    use watch_catalogue::jobs::pictures::WorkerConfig;

    fn serve_args(flags: &[&str]) -> ServeArgs {
        let cli = Cli::try_parse_from([&["watch-catalogue", "serve"], flags].concat())
            .expect("valid flags");
        let Command::Serve(args) = cli.command else {
            panic!("not serve")
        };
        args
    }

    fn serve_config(flags: &[&str]) -> anyhow::Result<ServeConfig> {
        let local = Local {
            data_dir: DataDir::new("data"),
            cache_bytes: 1 << 20,
        };
        serve_args(flags).config(local)
    }

    #[test]
    fn without_flags_every_layer_gets_its_own_defaults() {
        let config = serve_config(&[]).expect("valid settings");
        let (api, defaults) = (&config.api, ApiConfig::default());
        assert_eq!(config.addr, DEFAULT_ADDR.parse().expect("address"));
        assert_eq!(config.cache_bytes, 1 << 20);
        assert_eq!(config.connections, ConnectionConfig::default());
        assert_eq!(api.rate_limit.limit, defaults.rate_limit.limit);
        assert_eq!(api.rate_limit.window, defaults.rate_limit.window);
        assert_eq!(api.rate_limit.max_clients, defaults.rate_limit.max_clients);
        assert!(api.rate_limit.trusted_proxies.is_empty());
        assert_eq!(api.sessions, defaults.sessions);
        assert_eq!(api.capacity, defaults.capacity);
        assert_eq!(api.admin_rate_limit, defaults.admin_rate_limit);
        assert_eq!(api.body_limit, defaults.body_limit);
        assert_eq!(api.snapshot_limit, defaults.snapshot_limit);
        assert_eq!(api.media_base_url, defaults.media_base_url);
        assert_eq!(api.deprecation, None);
        let (pictures, defaults) = (&config.pictures, WorkerConfig::default());
        assert!(pictures.enabled);
        assert_eq!(pictures.concurrency, defaults.concurrency);
        assert_eq!(pictures.crop_size, defaults.crop_size);
        assert_eq!(pictures.crop_slots, defaults.crop_slots);
        assert_eq!(pictures.decode_budget_pixels, None);
        assert_eq!(
            pictures.fetch.connect_timeout,
            defaults.fetch.connect_timeout
        );
        assert_eq!(pictures.fetch.total_timeout, defaults.fetch.total_timeout);
        assert_eq!(pictures.fetch.max_bytes, defaults.fetch.max_bytes);
        assert_eq!(pictures.fetch.max_pixels, defaults.fetch.max_pixels);
        assert_eq!(pictures.fetch.max_redirects, defaults.fetch.max_redirects);
    }

    #[test]
    fn flags_reach_their_layer_and_a_zero_length_or_cap_becomes_one() {
        let config = serve_config(&[
            "--rate-limit=7",
            "--rate-window-secs=0",
            "--trusted-proxy=10.0.0.1,::1",
            "--session-idle-secs=0",
            "--session-max-secs=90",
            "--behind-tls",
            "--max-running-requests=3",
            "--header-read-timeout-secs=0",
            "--max-connections=0",
            "--shutdown-grace-secs=0",
            "--no-picture-worker",
            "--fetch-concurrency=0",
        ])
        .expect("valid settings");
        let api = &config.api;
        assert_eq!(api.rate_limit.limit, 7);
        assert_eq!(api.rate_limit.window, Duration::from_secs(1));
        let proxies: Vec<String> = api
            .rate_limit
            .trusted_proxies
            .iter()
            .map(|net| net.to_string())
            .collect();
        assert_eq!(proxies, ["10.0.0.1/32", "::1/128"]);
        assert_eq!(api.sessions.idle, Duration::from_secs(1));
        assert_eq!(api.sessions.absolute, Duration::from_secs(90));
        assert!(api.sessions.secure_cookie);
        assert_eq!(api.capacity.running, 3);
        assert_eq!(api.capacity.waiting, CapacityConfig::default().waiting);
        assert_eq!(
            config.connections.header_read_timeout,
            Duration::from_secs(1)
        );
        assert_eq!(config.connections.max_connections, 1);
        assert_eq!(
            config.connections.shutdown_grace,
            Duration::ZERO,
            "no grace is a choice"
        );
        assert!(!config.pictures.enabled);
        assert_eq!(config.pictures.concurrency, 1);
    }

    #[test]
    fn a_sunset_needs_a_successor_and_six_months() {
        let cli = Cli::try_parse_from(["watch-catalogue", "serve", "--sunset=2099-01-01"]);
        assert!(cli.is_err(), "--sunset requires --successor");
        let config = serve_config(&["--sunset=2099-01-01", "--successor=https://api.example/v2"])
            .expect("valid settings");
        let deprecation = config.api.deprecation.expect("a deprecation");
        assert_eq!(deprecation.successor, "https://api.example/v2");
        let error = serve_config(&["--sunset=2020-01-01", "--successor=/v2"]).expect_err("refused");
        assert!(
            error.to_string().contains("less than six months away"),
            "{error}"
        );
    }

    #[test]
    fn an_address_may_be_a_port_alone_or_on_localhost_and_anything_else_says_the_forms() {
        for (given, meant) in [
            ("8081", "127.0.0.1:8081"),
            ("localhost:8082", "127.0.0.1:8082"),
            ("0.0.0.0:8080", "0.0.0.0:8080"),
            ("[::1]:8080", "[::1]:8080"),
        ] {
            assert_eq!(
                parse_addr(given),
                Ok(meant.parse().expect("address")),
                "{given}"
            );
        }
        for wrong in ["localhost", "example.com:80", "8080x", "99999"] {
            let said = parse_addr(wrong).expect_err("refused");
            assert!(
                said.contains("127.0.0.1:8080") && said.contains("a port alone"),
                "{said}"
            );
        }
    }
}
