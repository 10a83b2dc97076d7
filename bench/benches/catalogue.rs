//! Criterion benches over a generated catalogue (100,000 models by default; set
//! `CATALOGUE_BENCH_MODELS` to change it): a model by its slugs and `q` searches, both through
//! the real router in-process and at the store/index layer beneath it.
//!
//! Run: `cargo bench -p catalogue-bench --bench catalogue`

/// The allocator the server ships with (see src/main.rs), so figures measure what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use catalogue_bench::{generate_catalogue, CatalogueShape};
use catalogue_index::{DocKind, Filters, SearchRequest, SortOrder, TextQuery};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::sync::Arc;
use tower::ServiceExt;
use watch_catalogue::app::App;
use watch_catalogue::config::DataDir;
use watch_catalogue::domain::{normalize_reference, Slug};
use watch_catalogue::jobs::import::{import, DirectorySource};

struct Setup {
    app: Arc<App>,
    router: axum::Router,
    runtime: tokio::runtime::Runtime,
    brand_slug: String,
    model_slug: String,
    reference: String,
    _dir: tempfile::TempDir,
}

/// The bench sends everything from one client: lift the per-IP budget, as the docs say to.
fn unlimited() -> watch_catalogue::config::ApiConfig {
    let rate_limit = watch_catalogue::config::RateLimitConfig {
        limit: u32::MAX,
        ..Default::default()
    };
    watch_catalogue::config::ApiConfig {
        rate_limit,
        ..Default::default()
    }
}

fn setup() -> Setup {
    let models = std::env::var("CATALOGUE_BENCH_MODELS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("dir");
    generate_catalogue(
        &CatalogueShape { models, seed: 42 },
        &dir.path().join("dataset"),
    )
    .expect("generate");
    let app = App::open(&DataDir::new(dir.path().join("data")), 256 << 20).expect("open");
    import(&app.store, &DirectorySource(dir.path().join("dataset"))).expect("import");
    app.prepare(false).expect("reindex");
    let model = app
        .store
        .all_models()
        .nth(models / 2)
        .expect("a model")
        .expect("decoded");
    let brand = app
        .store
        .brand(model.brand_id)
        .expect("read")
        .expect("brand");
    let app = Arc::new(app);
    Setup {
        router: watch_catalogue::api::router(app.clone(), &unlimited()),
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime"),
        brand_slug: brand.slug.to_string(),
        model_slug: model.slug.to_string(),
        reference: model.reference_number.clone(),
        app,
        _dir: dir,
    }
}

impl Setup {
    fn get(&self, uri: &str) -> usize {
        let request = Request::get(uri).body(Body::empty()).expect("request");
        let response = self
            .runtime
            .block_on(self.router.clone().oneshot(request))
            .expect("response");
        assert_eq!(response.status(), StatusCode::OK, "{uri}");
        let body = self
            .runtime
            .block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
            .expect("body");
        body.len()
    }
}

fn search(text: &str) -> SearchRequest {
    let mut request = SearchRequest::filtered(DocKind::Model, Filters::default());
    request.text = Some(TextQuery {
        text: text.to_owned(),
        normalized_reference: normalize_reference(text),
    });
    request.sort = SortOrder::Relevance;
    request.limit = 24;
    request
}

fn benches(c: &mut Criterion) {
    let s = setup();
    let model_uri = format!("/v1/models/{}/{}", s.brand_slug, s.model_slug);
    let brand_slug = Slug::parse(&s.brand_slug).expect("slug");
    let model_slug = Slug::parse(&s.model_slug).expect("slug");

    let mut group = c.benchmark_group("model_by_slugs");
    group.bench_function("http_in_process", |b| {
        b.iter(|| black_box(s.get(&model_uri)))
    });
    group.bench_function("store", |b| {
        b.iter(|| {
            let brand = s
                .app
                .store
                .brand_by_slug(&brand_slug)
                .expect("read")
                .expect("brand");
            black_box(
                s.app
                    .store
                    .model_by_slug(brand.id, &model_slug)
                    .expect("read")
                    .expect("model"),
            )
        })
    });
    group.finish();

    let mut group = c.benchmark_group("q_search_top24");
    let exact = s.reference.replace(' ', "%20").replace('/', "%2F");
    let prefix: String = normalize_reference(&s.reference).chars().take(4).collect();
    for (name, q) in [
        ("one_word", "diver"),
        ("two_words", "ocean%20master"),
        ("three_words", "royal%20diver%20date"),
        ("reference_exact", exact.as_str()),
        ("reference_prefix", prefix.as_str()),
    ] {
        let uri = format!("/v1/models?q={q}&pageSize=24");
        group.bench_function(format!("http_in_process/{name}"), |b| {
            b.iter(|| black_box(s.get(&uri)))
        });
    }
    for (name, q) in [
        ("one_word", "diver"),
        ("two_words", "ocean master"),
        ("reference_exact", s.reference.as_str()),
    ] {
        let request = search(q);
        group.bench_function(format!("index/{name}"), |b| {
            b.iter(|| {
                let hits = s.app.index.search(&request).expect("search");
                assert!(hits.total > 0, "{q} found nothing");
                black_box(hits)
            })
        });
    }
    group.finish();
}

criterion_group!(catalogue, benches);
criterion_main!(catalogue);
