//! HTTP API (axum). Every route is registered here, grouped as in the spec; one module per
//! resource group holds its handlers. The same routes answer under `/v1` and unversioned.

mod assemble;
mod brands;
mod calibers;
pub mod error;
pub mod layers;
mod listings;
mod models;
pub mod openapi;
mod ops;
pub mod params;
mod rates;
mod sitemap;
pub mod views;

use crate::app::App;
use crate::config::ApiConfig;
use axum::extract::DefaultBodyLimit;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::{get, MethodRouter};
use axum::{Extension, Router};
use error::ApiError;
use layers::metrics::Metrics;
use layers::rate_limit::RateLimiter;
use std::sync::Arc;

/// Shared state of every handler.
pub type AppState = Arc<App>;

/// The whole service: the API under `/v1` and unversioned, the operations endpoints, and the
/// shared layers around all of it.
pub fn router(app: AppState, config: &ApiConfig) -> Router {
    let metrics = Arc::new(Metrics::new());
    let limiter = Arc::new(RateLimiter::new(&config.rate_limit));
    let api = Router::new()
        .nest("/v1", v1_routes(app.clone()))
        .merge(v1_routes(app.clone()))
        .route("/media/pictures/{id}", get(listings::media_not_fetched))
        .fallback(unknown_path)
        .layer(Extension(listings::MediaBase(
            config.media_base_url.as_str().into(),
        )))
        .layer(DefaultBodyLimit::max(config.body_limit))
        .layer(from_fn_with_state(limiter, layers::rate_limit::limit_rate));
    let ops = ops::router(ops::OpsState {
        app,
        metrics: metrics.clone(),
    });
    layers::shared(api.merge(ops), config, metrics)
}

/// Every v1 read, as the spec's tables list them: path and handler. One table builds the router
/// and tells the OpenAPI coverage test what the router serves.
fn v1_table() -> Vec<(&'static str, MethodRouter<AppState>)> {
    vec![
        // Brands and series
        ("/brands", get(brands::list_brands)),
        ("/brands/highlighted", get(brands::highlighted_brands)),
        ("/brands/{slug}", get(brands::get_brand)),
        ("/brands/{brandSlug}/series", get(brands::list_series)),
        (
            "/brands/{brandSlug}/series/{seriesSlug}",
            get(brands::get_series),
        ),
        // Models
        ("/models", get(models::list_models)),
        ("/models/{brandSlug}/{slug}", get(models::get_model)),
        // Calibers
        ("/calibers/{brandSlug}/{ref}", get(calibers::get_caliber)),
        // Listings
        ("/listings", get(listings::list_listings)),
        ("/listings/stats", get(listings::listing_stats)),
        ("/listings/{id}", get(listings::get_listing)),
        // Rates
        ("/rates", get(rates::get_rates)),
        // Sitemap
        ("/sitemap/models", get(sitemap::models)),
        ("/sitemap/catalog", get(sitemap::catalog)),
        ("/sitemap/calibers", get(sitemap::calibers)),
    ]
}

/// The paths of v1's operations (the OpenAPI document itself aside).
pub fn v1_paths() -> &'static [&'static str] {
    static PATHS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    PATHS.get_or_init(|| v1_table().into_iter().map(|(path, _)| path).collect())
}

fn v1_routes(app: AppState) -> Router {
    v1_table()
        .into_iter()
        .fold(Router::new(), |router, (path, handler)| {
            router.route(path, handler)
        })
        // Catalogue and sitemap reads carry ETag and Cache-Control.
        .route_layer(from_fn(layers::caching::etag))
        // The machine-readable description of all of the above.
        .route("/openapi.json", get(openapi::document))
        .with_state(app)
}

async fn unknown_path() -> ApiError {
    ApiError::not_found(
        "no such path",
        "paths start with /v1; see the API reference in the README",
    )
}
