//! Criterion benches over a generated catalogue (100,000 models by default; set
//! `CATALOGUE_BENCH_MODELS` to change it): a model by its slugs and `q` searches, both through
//! the real router in-process and at the store/index layer beneath it; `GET /v1/models`
//! filtered and sorted; reference normalisation; and the error path (404 and 400 JSON).
//!
//! Run: `cargo bench -p catalogue-bench --bench catalogue`

/// The allocator the server ships with (see src/main.rs), so figures measure what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use axum::http::StatusCode;
use catalogue_bench::{generate_catalogue, query_value, CatalogueShape, InProcess};
use catalogue_index::{DocKind, Filters, SearchRequest, SortOrder, TextQuery};
use criterion::{criterion_group, criterion_main, Criterion};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::domain::{normalize_reference, Slug};
use watch_catalogue::jobs::import::{import, DirectorySource};

struct Setup {
    app: Arc<App>,
    http: InProcess,
    brand_slug: String,
    model_slug: String,
    reference: String,
    /// The slug of the brand with the most models.
    big_brand: String,
    /// The slug of that brand's series with the most models.
    big_series: String,
    /// `makerSlug/caliberSlug` of the calibre the most models run.
    busy_caliber: String,
    _dir: tempfile::TempDir,
}

/// The key with the largest count, the smallest key on a tie (so the pick is deterministic).
fn most<K: Copy + Ord>(counts: &HashMap<K, usize>) -> K {
    let (key, _) = counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .expect("a count");
    *key
}

fn setup() -> Setup {
    let models = std::env::var("CATALOGUE_BENCH_MODELS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("dir");
    generate_catalogue(
        &CatalogueShape::new(models, 42),
        &dir.path().join("dataset"),
    )
    .expect("generate");
    let app = App::open(&DataDir::new(dir.path().join("data")), 256 << 20).expect("open");
    import(
        &app.store().write_turn(),
        &DirectorySource(dir.path().join("dataset")),
    )
    .expect("import");
    app.prepare(false).expect("reindex");
    let model = app
        .store()
        .catalogue()
        .all_models()
        .nth(models / 2)
        .expect("a model")
        .expect("decoded");
    let brand = app
        .store()
        .catalogue()
        .brand(model.brand_id)
        .expect("read")
        .expect("brand");
    // Real slugs for the list filters: one pass over the models, counting.
    let (mut by_brand, mut by_series, mut by_caliber) =
        (HashMap::new(), HashMap::new(), HashMap::new());
    for model in app.store().catalogue().all_models() {
        let model = model.expect("decoded");
        *by_brand.entry(model.brand_id).or_insert(0) += 1;
        *by_series
            .entry((model.brand_id, model.series_id))
            .or_insert(0) += 1;
        if let Some(caliber) = model.caliber_id {
            *by_caliber.entry(caliber).or_insert(0) += 1;
        }
    }
    let big_brand = app
        .store()
        .catalogue()
        .brand(most(&by_brand))
        .expect("read")
        .expect("brand");
    by_series.retain(|(brand, _), _| *brand == big_brand.id);
    let (_, series) = most(&by_series);
    let big_series = app
        .store()
        .catalogue()
        .series(series)
        .expect("read")
        .expect("series");
    let caliber = app
        .store()
        .catalogue()
        .caliber(most(&by_caliber))
        .expect("read")
        .expect("caliber");
    let maker = app
        .store()
        .catalogue()
        .brand(caliber.brand_id)
        .expect("read")
        .expect("maker");
    let app = Arc::new(app);
    Setup {
        http: InProcess::new(app.clone()),
        brand_slug: brand.slug.to_string(),
        model_slug: model.slug.to_string(),
        reference: model.reference_number.clone(),
        big_brand: big_brand.slug.to_string(),
        big_series: big_series.slug.to_string(),
        busy_caliber: format!("{}/{}", maker.slug, caliber.slug),
        app,
        _dir: dir,
    }
}

impl Setup {
    /// `GET uri` through the router; panics unless it answers `status`. The body's length.
    fn get_status(&self, uri: &str, status: StatusCode) -> usize {
        self.get_body(uri, status).len()
    }

    fn get(&self, uri: &str) -> usize {
        self.get_status(uri, StatusCode::OK)
    }

    fn get_body(&self, uri: &str, status: StatusCode) -> axum::body::Bytes {
        self.http.get(uri, status)
    }

    /// `GET uri` once before measuring it: it must answer `status` with a JSON body, a page
    /// with items for 200 and an `error` code otherwise. What it answered, for the report.
    fn check(&self, uri: &str, status: StatusCode) -> String {
        let body: serde_json::Value =
            serde_json::from_slice(&self.get_body(uri, status)).expect("a JSON body");
        if status == StatusCode::OK {
            let items = body["data"].as_array().map_or(0, Vec::len);
            assert!(items > 0, "{uri}: an empty page");
            format!("{} of total {}", items, body["total"])
        } else {
            let code = body["error"].as_str().expect("an error code");
            assert!(!code.is_empty(), "{uri}: no error code");
            format!("error {code}")
        }
    }
}

fn search(text: &str) -> SearchRequest {
    let mut request = SearchRequest::filtered(DocKind::Model, Filters::default());
    request.text = Some(TextQuery {
        typo_tolerance: false,
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
                .store()
                .catalogue()
                .brand_by_slug(&brand_slug)
                .expect("read")
                .expect("brand");
            black_box(
                s.app
                    .store()
                    .catalogue()
                    .model_by_slug(brand.id, &model_slug)
                    .expect("read")
                    .expect("model"),
            )
        })
    });
    group.finish();

    let mut group = c.benchmark_group("q_search_top24");
    let exact = query_value(&s.reference);
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
                let hits = s.app.index().search(&request).expect("search");
                assert!(hits.total > 0, "{q} found nothing");
                black_box(hits)
            })
        });
        group.bench_function(format!("index_every_match_scored/{name}"), |b| {
            b.iter(|| black_box(s.app.index().search_exhaustively(&request).expect("search")))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("models_list");
    for (name, query) in [
        ("brand_newest", format!("brand={}&sort=newest", s.big_brand)),
        (
            "brand_series_name_asc",
            format!(
                "brand={}&series={}&sort=name_asc",
                s.big_brand, s.big_series
            ),
        ),
        (
            "caliber",
            format!("caliber={}", query_value(&s.busy_caliber)),
        ),
        (
            "reference_asc_page5",
            "sort=reference_asc&page=5".to_owned(),
        ),
    ] {
        let uri = format!("/v1/models?{query}");
        eprintln!("{uri}: {}", s.check(&uri, StatusCode::OK));
        group.bench_function(format!("http_in_process/{name}"), |b| {
            b.iter(|| black_box(s.get(&uri)))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("normalize_reference");
    for (name, reference) in [
        ("digits_suffix", "126610 LN"),
        ("slashed", "5711/1A-010"),
        ("dotted", "310.30.42.50.01.001"),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| normalize_reference(black_box(reference)))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("error_path");
    for (name, uri, status) in [
        (
            "unknown_brand_404",
            "/v1/models/rolex/nope".to_owned(),
            StatusCode::NOT_FOUND,
        ),
        (
            "unknown_model_404",
            format!("/v1/models/{}/nope", s.big_brand),
            StatusCode::NOT_FOUND,
        ),
        (
            "bad_page_size_400",
            "/v1/models?pageSize=abc".to_owned(),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        eprintln!("{uri}: {}", s.check(&uri, status));
        group.bench_function(format!("http_in_process/{name}"), |b| {
            b.iter(|| black_box(s.get_status(&uri, status)))
        });
    }
    group.finish();
}

criterion_group!(catalogue, benches);
criterion_main!(catalogue);
