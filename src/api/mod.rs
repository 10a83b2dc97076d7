//! HTTP API (axum). Every route is registered here, grouped as in the spec; one module per
//! resource group holds its handlers. The same routes answer under `/v1` and unversioned.

pub(crate) mod assemble;
pub mod back_office;
pub mod brands;
mod calibers;
pub mod config;
pub mod error;
pub mod layers;
pub mod listings;
mod media;
mod model_search;
pub mod models;
pub mod openapi;
mod ops;
pub mod params;
mod rates;
pub mod requests;
mod sitemap;
pub mod stats_groups;
pub mod stats_history;
pub mod views;
mod w3c_reconcile;

use crate::api::config::ApiConfig;
use crate::app::App;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::http::Method;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::{self, MethodRouter};
use axum::{Extension, Router};
use error::ApiError;
use layers::metrics::Metrics;
use layers::rate_limit::Budgets;
use std::sync::Arc;

/// Shared state of every handler: the app, reached only through a [`layers::capacity::Work`].
pub type AppState = layers::capacity::Served;

/// The whole service: the API under `/v1` and unversioned, the operations endpoints, and the
/// shared layers around all of it. Pure: it starts nothing and writes nothing (the job runner
/// and the image worker are `serve`'s, `crate::server`).
pub fn router(app: Arc<App>, config: &ApiConfig) -> Router {
    router_with_pages(app, config, Router::new())
}

/// [`router`] with `pages` (the console's, `crate::console::router`) inside the same layers:
/// the same caller, budget, request slot and guard.
pub fn router_with_pages(app: Arc<App>, config: &ApiConfig, pages: Router) -> Router {
    let served = AppState::new(app.clone());
    let metrics = Arc::new(Metrics::new());
    let budgets = Arc::new(Budgets::new(config));
    let identity = Arc::new(back_office::Identity {
        app: app.clone(),
        sessions: config.sessions,
        clock: config.clock.clone(),
    });
    let sign_in = Arc::new(back_office::auth::SignIn::new(
        config.sessions,
        &config.rate_limit,
        config.clock.clone(),
    ));
    // Outermost first: who the caller is, then their budget, then a request slot, then the
    // back-office guard, all before any route or fallback answers.
    let api = Router::new()
        .nest("/v1", v1_routes(served.clone()))
        .merge(v1_routes(served.clone()))
        .route(
            "/media/pictures/{id}",
            routing::get(media::original).with_state(served.clone()),
        )
        .route(
            "/media/pictures/{id}/cropped",
            routing::get(media::cropped).with_state(served.clone()),
        )
        .merge(pages)
        .fallback(unknown_path)
        .layer(Extension(Arc::new(listings::StatsCache::default())))
        // The day a price series ends by default is today, by the server's clock.
        .layer(Extension(config.clock.clone()))
        .layer(Extension(listings::MediaBase(
            config.media_base_url.as_str().into(),
        )))
        .layer(Extension(sign_in))
        .layer(Extension(back_office::admin_jobs::SnapshotLimit(
            config.snapshot_limit,
        )))
        .layer(DefaultBodyLimit::max(config.body_limit))
        .layer(from_fn(back_office::guard))
        .layer(from_fn_with_state(
            Arc::new(layers::capacity::Capacity::new(config.capacity)),
            layers::capacity::admit,
        ))
        .layer(from_fn_with_state(budgets, layers::rate_limit::limit_rate))
        .layer(from_fn_with_state(identity, back_office::identify));
    let ops = ops::router(ops::OpsState {
        app,
        metrics: metrics.clone(),
        metrics_token: config.metrics_token.clone(),
    });
    layers::shared(api.merge(ops), config, metrics)
}

/// Who may call a route. The back office's session guard and the OpenAPI document's security
/// requirements and 401/403 rows read it from the route table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Public,
    /// An admin session is required (`/admin`, `/picture-review`, `/reconciliation`,
    /// `/duplicate-models`).
    Admin,
}

/// What clients and CDNs may keep of a route's answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    /// A weak ETag, 304 on `If-None-Match`, `public, max-age=60`: catalogue reads.
    Shared,
    /// `private, no-store` on every answer.
    NoStore,
}

/// Which web pages may call a route from their own origin (CORS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origins {
    /// Only pages of the service's own origin (no CORS headers).
    Same,
    /// Any origin: `Access-Control-Allow-Origin: *`, preflights answered.
    Any,
}

/// The methods a row of the route table answers: the `Allow` of its 405s, HEAD beside GET.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Methods {
    get: bool,
    post: bool,
    put: bool,
    delete: bool,
}

impl Methods {
    /// GET (and HEAD) only: a read.
    pub const GET: Methods = Methods {
        get: true,
        post: false,
        put: false,
        delete: false,
    };

    /// The `Allow` header's value: `GET, HEAD, POST`.
    pub fn allow(&self) -> String {
        [
            (self.get, "GET, HEAD"),
            (self.post, "POST"),
            (self.put, "PUT"),
            (self.delete, "DELETE"),
        ]
        .into_iter()
        .filter(|(answered, _)| *answered)
        .map(|(_, names)| names)
        .collect::<Vec<_>>()
        .join(", ")
    }

    /// True when `method` is answered (HEAD where GET is).
    pub fn answers(&self, method: &Method) -> bool {
        match *method {
            Method::GET | Method::HEAD => self.get,
            Method::POST => self.post,
            Method::PUT => self.put,
            Method::DELETE => self.delete,
            _ => false,
        }
    }
}

/// A row's handlers and the methods they answer, built as axum's `get(a).post(b)` is, so the
/// table that builds the router also says what each path answers.
pub struct Handlers {
    router: MethodRouter<AppState>,
    methods: Methods,
}

/// Handlers of a path that answers GET (and HEAD) with `handler`.
pub fn get<H: Handler<T, AppState>, T: 'static>(handler: H) -> Handlers {
    Handlers {
        router: routing::get(handler),
        methods: Methods::GET,
    }
}

/// Handlers of a path that answers POST with `handler`.
pub fn post<H: Handler<T, AppState>, T: 'static>(handler: H) -> Handlers {
    Handlers {
        router: routing::post(handler),
        methods: Methods {
            post: true,
            ..Methods::default()
        },
    }
}

/// Handlers of a path that answers PUT with `handler`.
pub fn put<H: Handler<T, AppState>, T: 'static>(handler: H) -> Handlers {
    Handlers {
        router: routing::put(handler),
        methods: Methods {
            put: true,
            ..Methods::default()
        },
    }
}

/// Handlers of a path that answers DELETE with `handler`.
pub fn delete<H: Handler<T, AppState>, T: 'static>(handler: H) -> Handlers {
    Handlers {
        router: routing::delete(handler),
        methods: Methods {
            delete: true,
            ..Methods::default()
        },
    }
}

impl Handlers {
    /// These handlers, and `handler` for POST.
    pub fn post<H: Handler<T, AppState>, T: 'static>(self, handler: H) -> Handlers {
        Handlers {
            router: self.router.post(handler),
            methods: Methods {
                post: true,
                ..self.methods
            },
        }
    }

    /// These handlers, and `handler` for PUT.
    pub fn put<H: Handler<T, AppState>, T: 'static>(self, handler: H) -> Handlers {
        Handlers {
            router: self.router.put(handler),
            methods: Methods {
                put: true,
                ..self.methods
            },
        }
    }
}

/// One row of the v1 route table: path, handler, access, caching and origins. Built only by
/// [`Route::public`], [`Route::private`], [`Route::cross_origin`] and [`Route::admin`], so an
/// admin route can never be publicly cacheable nor called from another origin.
pub struct Route {
    path: &'static str,
    handler: MethodRouter<AppState>,
    methods: Methods,
    access: Access,
    caching: Caching,
    origins: Origins,
}

impl Route {
    /// A public read that any cache may keep for a minute.
    pub fn public(path: &'static str, handlers: Handlers) -> Route {
        Route {
            path,
            handler: handlers.router,
            methods: handlers.methods,
            access: Access::Public,
            caching: Caching::Shared,
            origins: Origins::Same,
        }
    }

    /// A public read that any cache may keep and any origin's pages may call: the W3C
    /// reconciliation service.
    pub fn cross_origin(path: &'static str, handlers: Handlers) -> Route {
        Route {
            origins: Origins::Any,
            ..Route::public(path, handlers)
        }
    }

    /// A public route whose answer is the caller's own (sign-in): never stored by a cache.
    pub fn private(path: &'static str, handlers: Handlers) -> Route {
        Route {
            path,
            handler: handlers.router,
            methods: handlers.methods,
            access: Access::Public,
            caching: Caching::NoStore,
            origins: Origins::Same,
        }
    }

    /// A back-office route: admin session required, never stored by a cache.
    pub fn admin(path: &'static str, handlers: Handlers) -> Route {
        Route {
            path,
            handler: handlers.router,
            methods: handlers.methods,
            access: Access::Admin,
            caching: Caching::NoStore,
            origins: Origins::Same,
        }
    }

    /// The handler with the layers its caching and origins call for.
    fn layered(self) -> MethodRouter<AppState> {
        let handler = match self.caching {
            Caching::Shared => self.handler.route_layer(from_fn(layers::caching::etag)),
            Caching::NoStore => self.handler.route_layer(from_fn(layers::caching::no_store)),
        };
        match self.origins {
            Origins::Same => handler,
            // Around the whole method router: preflights (OPTIONS) and 405s get it too.
            Origins::Any => handler.layer(layers::cors::any_origin()),
        }
    }
}

/// A route's path, methods, access and caching, without its handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoutePolicy {
    pub path: &'static str,
    pub methods: Methods,
    pub access: Access,
    pub caching: Caching,
}

/// Every v1 route, as the spec's tables list them. One table builds the router and tells the
/// OpenAPI document and its coverage test what the router serves, and how.
fn v1_table() -> Vec<Route> {
    vec![
        // Brands and series
        Route::public("/brands", get(brands::list_brands)),
        Route::public("/brands/highlighted", get(brands::highlighted_brands)),
        Route::public("/brands/{slug}", get(brands::get_brand)),
        Route::public("/brands/{brandSlug}/series", get(brands::list_series)),
        Route::public(
            "/brands/{brandSlug}/series/{seriesSlug}",
            get(brands::get_series),
        ),
        // Models
        Route::public("/models", get(models::list_models)),
        Route::public("/models/{brandSlug}/{slug}", get(models::get_model)),
        Route::public("/models/compare", get(models::compare_models)),
        // Calibers
        Route::public("/calibers/{brandSlug}/{ref}", get(calibers::get_caliber)),
        // Listings
        Route::public("/listings", get(listings::list_listings)),
        Route::public("/listings/stats", get(listings::listing_stats)),
        Route::public(
            "/listings/stats/history",
            get(stats_history::listing_stats_history),
        ),
        Route::public("/listings/{id}", get(listings::get_listing)),
        // Rates
        Route::public("/rates", get(rates::get_rates)),
        // Sitemap
        Route::public("/sitemap/models", get(sitemap::models)),
        Route::public("/sitemap/catalog", get(sitemap::catalog)),
        Route::public("/sitemap/calibers", get(sitemap::calibers)),
        // The W3C reconciliation service (OpenRefine's protocol; not the back office's
        // /reconciliation below)
        Route::cross_origin(
            "/reconcile",
            get(w3c_reconcile::reconcile_get).post(w3c_reconcile::reconcile_post),
        ),
        Route::cross_origin(
            "/reconcile/suggest/entity",
            get(w3c_reconcile::suggest_entity),
        ),
        Route::cross_origin("/reconcile/suggest/type", get(w3c_reconcile::suggest_type)),
        Route::cross_origin(
            "/reconcile/suggest/property",
            get(w3c_reconcile::suggest_property),
        ),
        Route::cross_origin("/reconcile/preview", get(w3c_reconcile::preview)),
        Route::cross_origin(
            "/reconcile/propose_properties",
            get(w3c_reconcile::propose_properties),
        ),
        // Sessions
        Route::private("/auth/login", post(back_office::auth::login)),
        Route::private("/auth/logout", post(back_office::auth::logout)),
        Route::private("/auth/session", get(back_office::auth::session)),
        // Back office
        Route::admin("/admin/stats", get(back_office::admin::stats)),
        Route::admin(
            "/admin/unmatched-listings",
            get(back_office::admin::unmatched_listings),
        ),
        Route::admin("/admin/audit", get(back_office::admin::audit)),
        // Batch jobs
        Route::admin(
            "/admin/providers/{slug}/snapshot",
            post(back_office::admin_jobs::submit_snapshot),
        ),
        Route::admin("/admin/rates", post(back_office::admin_jobs::submit_rates)),
        Route::admin("/admin/match", post(back_office::admin_jobs::submit_match)),
        Route::admin(
            "/admin/reindex",
            post(back_office::admin_jobs::submit_reindex),
        ),
        Route::admin(
            "/admin/duplicates/rebuild",
            post(back_office::admin_jobs::submit_duplicates),
        ),
        Route::admin("/admin/jobs", get(back_office::admin_jobs::list_jobs)),
        Route::admin("/admin/jobs/{id}", get(back_office::admin_jobs::get_job)),
        Route::admin(
            "/admin/users",
            get(back_office::admin_users::list).post(back_office::admin_users::add),
        ),
        Route::admin(
            "/admin/users/{name}",
            delete(back_office::admin_users::remove),
        ),
        Route::admin(
            "/admin/users/{name}/role",
            put(back_office::admin_users::set_role),
        ),
        Route::admin(
            "/admin/users/{name}/password",
            put(back_office::admin_users::set_password),
        ),
        // Reconciliation
        Route::admin("/reconciliation", get(back_office::reconciliation::groups)),
        Route::admin(
            "/reconciliation/link",
            post(back_office::reconciliation::link),
        ),
        Route::admin(
            "/reconciliation/models",
            post(back_office::reconciliation::create_model),
        ),
        Route::admin(
            "/reconciliation/models/update",
            post(back_office::reconciliation::update_model),
        ),
        // Duplicate models
        Route::admin(
            "/duplicate-models",
            get(back_office::duplicate_models::groups),
        ),
        Route::admin(
            "/duplicate-models/merge",
            post(back_office::duplicate_models::merge),
        ),
        Route::admin(
            "/duplicate-models/dismiss",
            post(back_office::duplicate_models::dismiss),
        ),
        // Picture review
        Route::admin("/picture-review", get(back_office::picture_review::queue)),
        Route::admin(
            "/picture-review/candidates/{id}/select",
            post(back_office::picture_review::select),
        ),
        Route::admin(
            "/picture-review/pictures/{id}/keep",
            post(back_office::picture_review::keep),
        ),
        Route::admin(
            "/picture-review/models/{id}/front-picture",
            get(back_office::picture_review::front_picture)
                .put(back_office::picture_review::set_front_picture),
        ),
    ]
}

/// The policies of v1's operations (the OpenAPI document itself aside), in table order.
pub fn v1_policies() -> &'static [RoutePolicy] {
    static POLICIES: std::sync::OnceLock<Vec<RoutePolicy>> = std::sync::OnceLock::new();
    POLICIES.get_or_init(|| {
        v1_table()
            .into_iter()
            .map(|route| RoutePolicy {
                path: route.path,
                methods: route.methods,
                access: route.access,
                caching: route.caching,
            })
            .collect()
    })
}

/// What a path of the API answers, for the `Allow` of its 405: the route table's row for a v1
/// route (matched with or without `/v1`); every other route (the OpenAPI document, media, the
/// operations endpoints) is a read.
pub fn allowed_methods(route: &str) -> String {
    let path = route
        .strip_prefix("/v1")
        .filter(|path| !path.is_empty())
        .unwrap_or(route);
    v1_policies()
        .iter()
        .find(|policy| policy.path == path)
        .map_or_else(|| "GET, HEAD".to_owned(), |policy| policy.methods.allow())
}

/// The paths of v1's operations (the OpenAPI document itself aside).
pub fn v1_paths() -> &'static [&'static str] {
    static PATHS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    PATHS.get_or_init(|| v1_policies().iter().map(|policy| policy.path).collect())
}

/// The paths `router` serves outside v1 (all reads, no session): the media files, then the
/// operations endpoints of `ops.rs`. Kept by hand beside them; README's endpoint table is checked
/// against these and v1's table (`tests/api/readme.rs`, which also requests each of these).
pub const OUTSIDE_V1_PATHS: [&str; 5] = [
    "/media/pictures/{id}",
    "/media/pictures/{id}/cropped",
    "/healthz",
    "/readyz",
    "/metrics",
];

/// The router of `table`, each route with the layers its row calls for.
fn routes_of(table: Vec<Route>) -> Router<AppState> {
    table.into_iter().fold(Router::new(), |router, route| {
        let path = route.path;
        router.route(path, route.layered())
    })
}

fn v1_routes(app: AppState) -> Router {
    routes_of(v1_table())
        // The machine-readable description of all of the above.
        .route("/openapi.json", routing::get(openapi::document))
        .with_state(app)
}

async fn unknown_path() -> ApiError {
    ApiError::not_found(
        "no such path",
        "paths start with /v1; see the API reference in the README",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{header, Request, StatusCode};
    use tower::ServiceExt;

    async fn cache_control(table: Vec<Route>, path: &str) -> (StatusCode, Option<String>, bool) {
        let dir = tempfile::tempdir().expect("dir");
        let data = crate::data_dir::DataDir::new(dir.path());
        let app = Arc::new(App::open(&data, 1 << 20).expect("app"));
        let router = routes_of(table)
            .with_state(AppState::new(app))
            .layer(from_fn_with_state(
                Arc::new(layers::capacity::Capacity::new(Default::default())),
                layers::capacity::admit,
            ));
        let response = router
            .oneshot(Request::get(path).body(Body::empty()).expect("request"))
            .await
            .expect("response");
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        (
            response.status(),
            header(header::CACHE_CONTROL),
            header(header::ETAG).is_some(),
        )
    }

    #[tokio::test]
    async fn building_the_router_starts_nothing_and_writes_nothing() {
        use crate::domain::{JobId, JobKind, JobRecord, JobState};
        let dir = tempfile::tempdir().expect("dir");
        let data = crate::data_dir::DataDir::new(dir.path());
        let app = Arc::new(App::open(&data, 1 << 20).expect("app"));
        let mut left = JobRecord::queued(JobId(1), JobKind::Match, None, "ana".into(), "listings");
        left.state = JobState::Running;
        app.store().jobs().put_job(&left).expect("put");
        let spooled = app.jobs().spool_file().expect("spool file");
        let _router = router(app.clone(), &ApiConfig::default());
        // `serve` interrupts a previous process's jobs and empties the spool; the router not.
        let job = app
            .store()
            .jobs()
            .job(JobId(1))
            .expect("read")
            .expect("job");
        assert_eq!(job.state, JobState::Running);
        assert!(spooled.path().exists(), "the spool is left alone");
    }

    #[tokio::test]
    async fn a_handler_outside_the_admit_layer_is_a_500_not_work_without_a_slot() {
        let dir = tempfile::tempdir().expect("dir");
        let data = crate::data_dir::DataDir::new(dir.path());
        let app = Arc::new(App::open(&data, 1 << 20).expect("app"));
        let router = routes_of(v1_table()).with_state(AppState::new(app));
        let response = router
            .oneshot(
                Request::get("/brands")
                    .body(Body::empty())
                    .expect("request"),
            )
            .await
            .expect("response");
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[tokio::test]
    async fn an_admin_route_is_never_publicly_cacheable() {
        let probe = || get(|| async { axum::Json(serde_json::json!({"ok": true})) });
        let table = vec![
            Route::admin("/admin/probe", probe()),
            Route::public("/public/probe", probe()),
        ];
        assert_eq!(
            cache_control(table, "/admin/probe").await,
            (StatusCode::OK, Some("private, no-store".into()), false)
        );
        let table = vec![Route::public("/public/probe", probe())];
        assert_eq!(
            cache_control(table, "/public/probe").await,
            (StatusCode::OK, Some("public, max-age=60".into()), true)
        );
        for policy in v1_policies() {
            if policy.access == Access::Admin {
                assert_eq!(policy.caching, Caching::NoStore, "{}", policy.path);
            }
        }
    }
}
