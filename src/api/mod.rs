//! HTTP API (axum). Every route is registered here, grouped as in the spec; one module per
//! resource group holds its handlers. The same routes answer under `/v1` and unversioned.

mod assemble;
mod brands;
mod calibers;
pub mod error;
mod models;
pub mod params;
mod sitemap;
pub mod views;

use crate::app::App;
use axum::routing::get;
use axum::Router;
use error::ApiError;
use std::sync::Arc;

/// Shared state of every handler.
pub type AppState = Arc<App>;

/// The whole API: the versioned routes under `/v1`, and the same routes unversioned.
pub fn router(app: AppState) -> Router {
    let v1 = Router::new()
        // Brands and series
        .route("/brands", get(brands::list_brands))
        .route("/brands/highlighted", get(brands::highlighted_brands))
        .route("/brands/{slug}", get(brands::get_brand))
        .route("/brands/{brandSlug}/series", get(brands::list_series))
        .route(
            "/brands/{brandSlug}/series/{seriesSlug}",
            get(brands::get_series),
        )
        // Models
        .route("/models", get(models::list_models))
        .route("/models/{brandSlug}/{slug}", get(models::get_model))
        // Calibers
        .route("/calibers/{brandSlug}/{ref}", get(calibers::get_caliber))
        // Sitemap
        .route("/sitemap/models", get(sitemap::models))
        .route("/sitemap/catalog", get(sitemap::catalog))
        .route("/sitemap/calibers", get(sitemap::calibers))
        .with_state(app);
    Router::new()
        .nest("/v1", v1.clone())
        .merge(v1)
        .fallback(unknown_path)
}

async fn unknown_path() -> ApiError {
    ApiError::not_found(
        "no such path",
        "paths start with /v1; see the API reference in the README",
    )
}
