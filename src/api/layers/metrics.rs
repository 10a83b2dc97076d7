//! Prometheus metrics: requests by route, method and status, latency histograms by route, and
//! what is read at scrape time ([`Scrape`]): the store and index generations, and the image
//! worker's paused picture hosts.
//!
//! Every label comes from a closed set, so the number of series is bounded by the route table
//! whatever clients send: `route` is the matched route's template (`/v1/brands/{slug}`, never
//! the path asked for) or `unmatched`, `method` one of the nine standard methods or `other`,
//! and `status` a status this server answers.

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use subtle::ConstantTimeEq;
use tokio::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

/// The registry and the metrics the layer and the scrape update.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    store_generation: Gauge,
    index_generation: Gauge,
    picture_hosts_paused: Gauge,
    pictures_waiting_for_host: Gauge,
}

/// What a scrape reads from the app as it is asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scrape {
    pub store_generation: u64,
    /// `None` while the catalogue index reflects no generation (rebuilding).
    pub index_generation: Option<u64>,
    /// Hosts the image worker has paused now (D-220); 0 without a worker.
    pub picture_hosts_paused: usize,
    /// Due pictures the worker's last pass left for a paused host.
    pub pictures_waiting_for_host: usize,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        // 50 µs to ~13 s.
        let latency = Family::<RouteLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.000_05, 2.0, 19))
        });
        let [store_generation, index_generation, picture_hosts_paused, pictures_waiting_for_host] =
            std::array::from_fn(|_| Gauge::default());
        registry.register(
            "http_requests",
            "HTTP requests answered, by route, method and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to answer, by route",
            latency.clone(),
        );
        registry.register(
            "store_generation",
            "Generation of the store's last committed write",
            store_generation.clone(),
        );
        registry.register(
            "index_generation",
            "Store generation the search index reflects",
            index_generation.clone(),
        );
        registry.register(
            "picture_hosts_paused",
            "Picture hosts the image worker leaves alone for now, their fetches having failed as a host that is down fails",
            picture_hosts_paused.clone(),
        );
        registry.register(
            "pictures_waiting_for_host",
            "Due pictures the image worker's last pass left for a paused host",
            pictures_waiting_for_host.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            store_generation,
            index_generation,
            picture_hosts_paused,
            pictures_waiting_for_host,
        }
    }

    /// The text exposition, with what `scrape` read now.
    pub fn render(&self, scrape: &Scrape) -> String {
        (self.store_generation).set(saturating(scrape.store_generation));
        (self.index_generation).set(scrape.index_generation.map_or(-1, saturating));
        (self.picture_hosts_paused).set(saturating(scrape.picture_hosts_paused));
        (self.pictures_waiting_for_host).set(saturating(scrape.pictures_waiting_for_host));
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// A gauge's value: `value`, or the largest a gauge holds.
fn saturating(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

/// The `route` of a request no route matched (the fallback's 404).
const UNMATCHED: &str = "unmatched";

/// The `method` label: the method's name when it is one of HTTP's standard nine, else `other`
/// (a client may invent any number of methods, each as long as it likes).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

pub async fn record(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, MatchedPath::as_str)
        .to_owned();
    let method = method_label(request.method());
    let started = Instant::now();
    let response = next.run(request).await;
    metrics
        .latency
        .get_or_create(&RouteLabels {
            route: route.clone(),
        })
        .observe(started.elapsed().as_secs_f64());
    metrics
        .requests
        .get_or_create(&RequestLabels {
            route,
            method,
            status: response.status().as_u16(),
        })
        .inc();
    response
}

/// The bearer token `GET /metrics` asks for, when the operator set one
/// (`WATCH_CATALOGUE_METRICS_TOKEN` or `--metrics-token-file`). Only its SHA-256 is kept; a
/// presented token is hashed too and the two digests compared in constant time, so neither how
/// long a refusal takes nor how long the token is tells a caller anything. Its `Debug` shows
/// nothing of it, so no log line can.
#[derive(Clone)]
pub struct MetricsToken {
    digest: [u8; 32],
}

/// Why a configured metrics token is refused at start-up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricsTokenError {
    #[error("the metrics token is shorter than {MIN_TOKEN_LENGTH} characters; make one with `openssl rand -hex 32`")]
    TooShort,
    #[error("the metrics token has a character other than a printable ASCII one (no spaces): it travels in an HTTP header")]
    NotPrintable,
}

/// Shortest metrics token accepted.
pub const MIN_TOKEN_LENGTH: usize = 16;

impl MetricsToken {
    /// The token in `text`, surrounding whitespace (a file's last newline) left out.
    pub fn new(text: &str) -> Result<MetricsToken, MetricsTokenError> {
        let token = text.trim();
        if !token.bytes().all(|byte| byte.is_ascii_graphic()) {
            return Err(MetricsTokenError::NotPrintable);
        }
        if token.len() < MIN_TOKEN_LENGTH {
            return Err(MetricsTokenError::TooShort);
        }
        Ok(MetricsToken {
            digest: digest(token),
        })
    }

    /// Whether `headers` carry `Authorization: Bearer <this token>`.
    pub fn admits(&self, headers: &HeaderMap) -> bool {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer_token);
        // Hashed and compared even when there is none, so that a missing token and a wrong
        // one cost the same.
        let matches = digest(presented.unwrap_or_default()).ct_eq(&self.digest);
        presented.is_some() && bool::from(matches)
    }
}

impl std::fmt::Debug for MetricsToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsToken(<redacted>)")
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The token of an `Authorization` value of the Bearer scheme (its name in any case).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn every_invented_method_is_other() {
        for (method, label) in [
            (Method::GET, "GET"),
            (Method::OPTIONS, "OPTIONS"),
            (Method::TRACE, "TRACE"),
            (Method::from_bytes(b"get").expect("method"), "other"),
            (Method::from_bytes(b"PURGE").expect("method"), "other"),
            (
                Method::from_bytes("X".repeat(8_000).as_bytes()).expect("method"),
                "other",
            ),
        ] {
            assert_eq!(method_label(&method), label);
        }
    }

    #[test]
    fn the_token_is_admitted_only_as_a_bearer_token_and_never_shown() {
        let token = MetricsToken::new("  s3cret-token-of-32-characters!!\n").expect("token");
        let admits = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(value).expect("value"),
            );
            token.admits(&headers)
        };
        assert!(admits("Bearer s3cret-token-of-32-characters!!"));
        assert!(admits("bearer  s3cret-token-of-32-characters!! "));
        for wrong in [
            "Bearer s3cret-token-of-32-characters!",
            "Bearer s3cret-token-of-32-characters!!x",
            "Basic s3cret-token-of-32-characters!!",
            "s3cret-token-of-32-characters!!",
            "Bearer",
            "Bearer ",
        ] {
            assert!(!admits(wrong), "{wrong}");
        }
        assert!(!token.admits(&HeaderMap::new()));
        assert_eq!(format!("{token:?}"), "MetricsToken(<redacted>)");
        assert_eq!(
            MetricsToken::new("short").err(),
            Some(MetricsTokenError::TooShort)
        );
        assert_eq!(
            MetricsToken::new("a token with spaces in it").err(),
            Some(MetricsTokenError::NotPrintable)
        );
    }
}
