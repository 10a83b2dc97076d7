//! Prometheus metrics: requests by route, method and status, latency histograms by route, and
//! the store and index generations (read at scrape time).

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use tokio::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: String,
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
        let (store_generation, index_generation) = (Gauge::default(), Gauge::default());
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
        Metrics {
            registry,
            requests,
            latency,
            store_generation,
            index_generation,
        }
    }

    /// The text exposition, with the generations read now.
    pub fn render(&self, store_generation: u64, index_generation: Option<u64>) -> String {
        self.store_generation
            .set(i64::try_from(store_generation).unwrap_or(i64::MAX));
        self.index_generation.set(
            index_generation
                .and_then(|g| i64::try_from(g).ok())
                .unwrap_or(-1),
        );
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

pub async fn record(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let method = request.method().as_str().to_owned();
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
