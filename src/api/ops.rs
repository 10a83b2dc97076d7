//! Operations endpoints, outside the versioned API: `GET /healthz` (the process answers),
//! `GET /readyz` (store open and index current), `GET /metrics` (Prometheus text format; only
//! with the metrics token when the operator set one).

use super::error::{internal, ApiError, ApiResult};
use super::layers::metrics::{Metrics, MetricsToken, Scrape};
use super::views::{Health, Readiness};
use crate::app::App;
use crate::jobs::picture_hosts::HostPauses;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use std::sync::Arc;
use std::time::Instant;

/// State of the operations endpoints.
#[derive(Clone)]
pub struct OpsState {
    pub app: Arc<App>,
    pub metrics: Arc<Metrics>,
    /// Asked for by `GET /metrics` when set.
    pub metrics_token: Option<MetricsToken>,
}

pub fn router(state: OpsState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// On the blocking pool, outside the request slots: a server whose every slot is taken still
/// says whether it is ready.
async fn readyz(State(state): State<OpsState>) -> ApiResult<Json<Readiness>> {
    tokio::task::spawn_blocking(move || readiness(&state.app))
        .await
        .map_err(|error| internal(&error))?
}

fn readiness(app: &App) -> ApiResult<Json<Readiness>> {
    let store_generation = app.store().generation()?.0;
    let index_generation = app.index().generation()?;
    let listings_index_generation = app.listings().generation()?;
    if !app
        .index_is_current()
        .map_err(|error| internal(error.as_ref()))?
    {
        return Err(ApiError::Unavailable {
            message: format!("a search index is behind the store (generation {store_generation}): catalogue index at {index_generation:?}, listings index at {listings_index_generation:?}"),
            retry_after: None,
        });
    }
    Ok(Json(Readiness {
        status: "ready",
        store_generation,
        index_generation,
        listings_index_generation,
    }))
}

async fn metrics(
    State(state): State<OpsState>,
    headers: HeaderMap,
) -> ApiResult<impl IntoResponse> {
    if let Some(token) = &state.metrics_token {
        if !token.admits(&headers) {
            return Err(ApiError::TokenRequired);
        }
    }
    let app = state.app.clone();
    let scrape = tokio::task::spawn_blocking(move || -> ApiResult<_> {
        let hosts = app.job_context().picture_hosts();
        Ok(Scrape {
            store_generation: app.store().generation()?.0,
            index_generation: app.index().generation()?,
            picture_hosts_paused: hosts.map_or(0, |hosts| hosts.paused(Instant::now())),
            pictures_waiting_for_host: hosts.map_or(0, HostPauses::waiting),
        })
    })
    .await
    .map_err(|error| internal(&error))??;
    let text = state.metrics.render(&scrape);
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    ))
}
