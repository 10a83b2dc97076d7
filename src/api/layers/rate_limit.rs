//! Budgets in fixed windows, with the `RateLimit-*` headers on every response and
//! `429 rate_limited` with `Retry-After` past the budget: per client IP for the public (600
//! requests per 60 s by default), per user for admin sessions (policy `admin`, higher: a
//! reconciliation backlog takes many requests), per client IP for `/reconcile` (policy
//! `reconcile`, higher: a spreadsheet sends a column in batches). A window opens with its first request and
//! rolls over after `window`, as the server's [`Clock`] measures it. Memory is bounded: at
//! most `max_clients` windows are kept, expired ones dropped first. No crate sends these exact
//! headers with fixed windows.

use crate::api::back_office::{Caller, ClientIp};
use crate::api::config::RateLimitConfig;
use crate::api::error::ApiError;
use crate::clock::Clock;
use crate::domain::Username;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SHARDS: usize = 16;

/// The budgets of every client (an IP, a user) seen in the current windows.
pub struct RateLimiter<K = IpAddr> {
    limit: u32,
    window: Duration,
    max_per_shard: usize,
    trusted: Vec<ipnet::IpNet>,
    policy: HeaderValue,
    shards: Vec<Mutex<HashMap<K, Window>>>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    opened: Instant,
    used: u32,
}

/// The outcome of one request against its client's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub remaining: u32,
    /// Whole seconds until the window rolls over (at least 1).
    pub reset: u64,
}

impl RateLimiter<IpAddr> {
    /// The public budget of each client IP.
    pub fn new(config: &RateLimitConfig) -> RateLimiter {
        RateLimiter::named("public", config.limit, config)
    }
}

impl<K: Hash + Eq + Clone> RateLimiter<K> {
    /// A budget of `limit` per `config.window` for each key, named `policy` in the headers.
    pub fn named(policy: &str, limit: u32, config: &RateLimitConfig) -> RateLimiter<K> {
        let policy = format!("{limit};w={};policy={policy}", config.window.as_secs());
        RateLimiter {
            limit,
            window: config.window,
            max_per_shard: config.max_clients.div_ceil(SHARDS).max(1),
            trusted: config.trusted_proxies.clone(),
            policy: HeaderValue::from_str(&policy)
                .unwrap_or(HeaderValue::from_static("600;w=60;policy=public")),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    /// Counts one request of `client` at `now`.
    pub fn check(&self, client: K, now: Instant) -> Decision {
        self.count(client, now, 1)
    }

    /// Where `client` stands at `now`, without counting anything (a login checks its failure
    /// budget before it tries).
    pub fn peek(&self, client: K, now: Instant) -> Decision {
        self.count(client, now, 0)
    }

    fn count(&self, client: K, now: Instant, cost: u32) -> Decision {
        // A poisoned lock only means another request panicked mid-update: the counts are
        // still usable.
        let mut windows = self
            .shard(&client)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let fresh = Window {
            opened: now,
            used: 0,
        };
        let live = |window: &Window| now.duration_since(window.opened) < self.window;
        if cost == 0 {
            // A look keeps nothing: only what is counted takes room.
            let window = windows.get(&client).copied().filter(live);
            return self.decision(window.unwrap_or(fresh), now);
        }
        if !windows.contains_key(&client) && windows.len() >= self.max_per_shard {
            self.make_room(&mut windows, now);
        }
        let window = windows.entry(client).or_insert(fresh);
        if !live(window) {
            *window = fresh;
        }
        let allowed = window.used < self.limit;
        if allowed {
            window.used += cost;
        }
        Decision {
            allowed,
            ..self.decision(*window, now)
        }
    }

    /// Where `window` stands at `now`.
    fn decision(&self, window: Window, now: Instant) -> Decision {
        let left = self
            .window
            .saturating_sub(now.duration_since(window.opened));
        Decision {
            allowed: window.used < self.limit,
            remaining: self.limit - window.used,
            reset: left.as_secs_f64().ceil().max(1.0) as u64,
        }
    }

    /// Drops expired windows; if none expired, drops the client that used least of its budget
    /// (the oldest of those): it gets a fresh budget, the price of bounded memory under a flood
    /// of distinct clients, while a client near or past its limit keeps its count, so a flood
    /// of one-request clients cannot wash out a budget that is spent.
    fn make_room(&self, windows: &mut HashMap<K, Window>, now: Instant) {
        windows.retain(|_, w| now.duration_since(w.opened) < self.window);
        if windows.len() >= self.max_per_shard {
            let victim = windows
                .iter()
                .min_by_key(|(_, w)| (w.used, w.opened))
                .map(|(client, _)| client.clone());
            if let Some(victim) = victim {
                windows.remove(&victim);
            }
        }
    }

    /// Forgets `client`'s window: its next request opens a fresh budget.
    pub fn forget(&self, client: &K) {
        let mut windows = self
            .shard(client)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        windows.remove(client);
    }

    fn shard(&self, client: &K) -> &Mutex<HashMap<K, Window>> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        client.hash(&mut hasher);
        &self.shards[(hasher.finish() as usize) % SHARDS]
    }

    /// Clients tracked now (for tests of the memory bound).
    pub fn tracked_clients(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().map(|m| m.len()).unwrap_or(0))
            .sum()
    }

    /// The client of a request: the socket peer, unless the peer is a trusted proxy, then the
    /// right-most `X-Forwarded-For` entry that is not a trusted proxy.
    pub fn client_ip(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> IpAddr {
        let peer = peer.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        if !self.is_trusted(peer) {
            return peer;
        }
        let forwarded = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok());
        let entries: Vec<&str> = forwarded
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        for entry in entries.iter().rev() {
            match entry.parse::<IpAddr>() {
                Ok(ip) if self.is_trusted(ip) => continue,
                Ok(ip) => return ip,
                // An entry we cannot read ends what we can believe of the chain.
                Err(_) => break,
            }
        }
        peer
    }

    fn is_trusted(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|net| net.contains(&ip))
    }

    pub fn headers(&self, decision: Decision) -> [(HeaderName, HeaderValue); 4] {
        [
            (
                HeaderName::from_static("ratelimit-limit"),
                HeaderValue::from(self.limit),
            ),
            (
                HeaderName::from_static("ratelimit-remaining"),
                HeaderValue::from(decision.remaining),
            ),
            (
                HeaderName::from_static("ratelimit-reset"),
                HeaderValue::from(decision.reset),
            ),
            (
                HeaderName::from_static("ratelimit-policy"),
                self.policy.clone(),
            ),
        ]
    }
}

/// The budgets a request may be counted against (its client IP's, or its admin's), and the
/// clock their windows are measured by.
pub struct Budgets {
    pub public: RateLimiter<IpAddr>,
    pub admin: RateLimiter<Username>,
    /// The reconciliation service's, per client IP (policy `reconcile`).
    pub reconcile: RateLimiter<IpAddr>,
    pub clock: Clock,
}

impl Budgets {
    /// The budgets `config` names, measured by its clock.
    pub fn new(config: &crate::api::config::ApiConfig) -> Budgets {
        let windows = &config.rate_limit;
        Budgets {
            public: RateLimiter::new(windows),
            admin: RateLimiter::named("admin", config.admin_rate_limit, windows),
            reconcile: RateLimiter::named("reconcile", config.reconcile_rate_limit, windows),
            clock: config.clock.clone(),
        }
    }
}

/// True for the reconciliation service's paths (with or without `/v1`), which have a budget
/// of their own.
fn is_reconciliation(path: &str) -> bool {
    let path = path.strip_prefix("/v1").unwrap_or(path);
    path.strip_prefix("/reconcile")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Counts the request against its budget (an admin session's own, the reconciliation
/// service's for its paths, else its client IP's) and
/// says so in the `RateLimit-*` headers; 429 past it. Also tells later layers the client IP.
pub async fn limit_rate(
    State(budgets): State<Arc<Budgets>>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let client = budgets.public.client_ip(peer, request.headers());
    request.extensions_mut().insert(ClientIp(client));
    let admin = request
        .extensions()
        .get::<Caller>()
        .and_then(Caller::admin)
        .map(|signed| signed.user.name.clone());
    let now = budgets.clock.instant();
    let reconciling = is_reconciliation(request.uri().path());
    let (decision, headers) = match (admin, reconciling) {
        (Some(name), _) => {
            let decision = budgets.admin.check(name, now);
            (decision, budgets.admin.headers(decision))
        }
        (None, true) => {
            let decision = budgets.reconcile.check(client, now);
            (decision, budgets.reconcile.headers(decision))
        }
        (None, false) => {
            let decision = budgets.public.check(client, now);
            (decision, budgets.public.headers(decision))
        }
    };
    let mut response = if decision.allowed {
        next.run(request).await
    } else {
        ApiError::RateLimited {
            retry_after: decision.reset,
        }
        .to_response(None)
    };
    for (name, value) in headers {
        response.headers_mut().insert(name, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(limit: u32, trusted: &[&str], max_clients: usize) -> RateLimiter {
        RateLimiter::new(&RateLimitConfig {
            limit,
            window: Duration::from_secs(60),
            trusted_proxies: trusted.iter().map(|t| t.parse().expect("net")).collect(),
            max_clients,
        })
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("ip")
    }

    #[test]
    fn budgets_count_down_refuse_and_roll_over() {
        let limiter = limiter(2, &[], 100);
        let start = Instant::now();
        let a = ip("192.0.2.1");
        assert_eq!(
            limiter.check(a, start),
            Decision {
                allowed: true,
                remaining: 1,
                reset: 60
            }
        );
        assert_eq!(
            limiter.check(a, start + Duration::from_millis(20_500)),
            Decision {
                allowed: true,
                remaining: 0,
                reset: 40
            }
        );
        assert_eq!(
            limiter.check(a, start + Duration::from_secs(59)),
            Decision {
                allowed: false,
                remaining: 0,
                reset: 1
            }
        );
        // Another client has its own budget.
        assert!(limiter.check(ip("192.0.2.2"), start).allowed);
        assert_eq!(
            limiter.check(a, start + Duration::from_secs(60)),
            Decision {
                allowed: true,
                remaining: 1,
                reset: 60
            }
        );
    }

    #[test]
    fn memory_stays_bounded_under_a_flood_of_addresses() {
        let limiter = limiter(10, &[], 1_000);
        let now = Instant::now();
        for i in 0..50_000u32 {
            limiter.check(IpAddr::from(i.to_be_bytes()), now);
        }
        assert!(
            limiter.tracked_clients() <= 1_000 + SHARDS,
            "{}",
            limiter.tracked_clients()
        );
    }

    #[test]
    fn the_client_is_the_right_most_untrusted_forwarded_address() {
        let limiter = limiter(10, &["10.0.0.0/8"], 100);
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            HeaderValue::from_static("203.0.113.9, 198.51.100.7, 10.1.1.1"),
        );
        assert_eq!(
            limiter.client_ip(Some(ip("10.0.0.2")), &headers),
            ip("198.51.100.7")
        );
        // From an untrusted peer the header is ignored.
        assert_eq!(
            limiter.client_ip(Some(ip("192.0.2.5")), &headers),
            ip("192.0.2.5")
        );
        // Without the header, or with garbage, the peer is the client.
        assert_eq!(
            limiter.client_ip(Some(ip("10.0.0.2")), &HeaderMap::new()),
            ip("10.0.0.2")
        );
        headers.insert("x-forwarded-for", HeaderValue::from_static("nonsense"));
        assert_eq!(
            limiter.client_ip(Some(ip("10.0.0.2")), &headers),
            ip("10.0.0.2")
        );
    }
}
