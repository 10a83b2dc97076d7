//! The cost of the shared HTTP layers per request: a trivial route answered bare, and inside
//! every layer the API puts around its routes (request id, compression negotiation, metrics,
//! version headers, JSON errors, panic catching, rate limiting), in-process.
//!
//! Run: `cargo bench -p catalogue-bench --bench middleware`

/// The allocator the server ships with (see src/main.rs), so figures measure what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use axum::Router;
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::sync::Arc;
use tower::ServiceExt;
use watch_catalogue::api::config::{ApiConfig, RateLimitConfig};
use watch_catalogue::api::layers::{self, metrics::Metrics, rate_limit};

fn trivial() -> Router {
    Router::new().route("/ping", get(|| async { "pong" }))
}

fn layered() -> Router {
    // A budget no bench run exhausts, so every request takes the allowed path.
    let config = ApiConfig {
        rate_limit: RateLimitConfig {
            limit: u32::MAX,
            ..RateLimitConfig::default()
        },
        admin_rate_limit: u32::MAX,
        reconcile_rate_limit: u32::MAX,
        ..ApiConfig::default()
    };
    let budgets = Arc::new(rate_limit::Budgets::new(&config));
    let routes = trivial().layer(from_fn_with_state(budgets, rate_limit::limit_rate));
    layers::shared(routes, &config, Arc::new(Metrics::new()))
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("middleware");
    for (name, router) in [("bare", trivial()), ("all_layers", layered())] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let request = Request::get("/ping")
                    .header("accept-encoding", "gzip")
                    .body(Body::empty())
                    .expect("request");
                let response = runtime
                    .block_on(router.clone().oneshot(request))
                    .expect("response");
                assert_eq!(response.status(), StatusCode::OK);
                black_box(response)
            })
        });
    }
    group.finish();
}

criterion_group!(middleware, benches);
criterion_main!(middleware);
