//! Criterion benches of the listings (issue 4) over a generated dataset of 10,000 models and
//! 1,000,000 listings (set `LISTINGS_BENCH_MODELS` / `LISTINGS_BENCH_LISTINGS` to change it):
//! `GET /v1/listings` filtered and sorted, `GET /v1/listings/stats` of a model with over 10,000
//! ACTIVE listings, both through the real router in-process, and matching one listing.
//!
//! Setup (generate, import, ingest and match, index) takes a minute and a half at 1M listings
//! and several GiB of memory, so it is cached under `target/listings-bench/`: the dataset by its
//! shape, the data dir by the bench binary too (a rebuilt binary may read the store
//! differently), so a rebuild only ingests again. `LISTINGS_BENCH_FRESH=1` ignores the cache.
//!
//! Run: `cargo bench -p catalogue-bench --bench listings`

/// The allocator the server ships with (see src/main.rs), so figures measure what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use axum::http::StatusCode;
use catalogue_bench::{
    generate_dataset, query_value, CatalogueShape, HotModel, InProcess, ListingShape,
};
use catalogue_index::{ListingFilters, ListingQuery, ListingSort};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::Value;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::domain::{Condition, ListingDetails, ListingStatus, Slug};
use watch_catalogue::jobs::import::{import, DirectorySource};
use watch_catalogue::jobs::ingest::ingest_dataset_feeds;
use watch_catalogue::jobs::matching::match_listing;
use watch_catalogue::jobs::snapshot_rules::SnapshotRules;

/// Bump when the generator's output changes, so a cached dataset is not reused.
const GENERATOR_VERSION: u32 = 1;
const SEED: u64 = 42;

struct Setup {
    app: Arc<App>,
    http: InProcess,
    hot: HotModel,
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// This binary's size and modification time: a data dir built by another build is not reused.
fn binary_stamp() -> String {
    let meta = std::env::current_exe().and_then(std::fs::metadata);
    let modified = meta
        .as_ref()
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{:x}-{modified:x}", meta.map_or(0, |m| m.len()))
}

fn seconds_since(start: Instant) -> String {
    format!("{:.1} s", start.elapsed().as_secs_f64())
}

/// The generated dataset of this shape, generated unless cached; its summary's hot model.
fn dataset(root: &Path, models: usize, listings: usize, fresh: bool) -> (PathBuf, HotModel) {
    let dir = root.join("dataset");
    let summary = root.join("summary.json");
    if fresh || !summary.exists() {
        let _ = std::fs::remove_dir_all(root);
        let start = Instant::now();
        let (_, listed) = generate_dataset(
            &CatalogueShape::new(models, SEED),
            &ListingShape::new(listings),
            &dir,
        )
        .expect("generate");
        std::fs::write(
            &summary,
            serde_json::to_vec_pretty(&listed).expect("summary"),
        )
        .expect("write summary");
        eprintln!("setup: generated in {}", seconds_since(start));
    }
    let listed: catalogue_bench::ListingsGenerated =
        serde_json::from_slice(&std::fs::read(&summary).expect("read summary")).expect("summary");
    (dir, listed.hot.expect("a hot model"))
}

fn setup() -> Setup {
    let models = env_usize("LISTINGS_BENCH_MODELS", 10_000);
    let listings = env_usize("LISTINGS_BENCH_LISTINGS", 1_000_000);
    let fresh = std::env::var_os("LISTINGS_BENCH_FRESH").is_some();
    let root = target_dir().join("listings-bench").join(format!(
        "m{models}-l{listings}-s{SEED}-v{GENERATOR_VERSION}"
    ));
    let (dataset, hot) = dataset(&root, models, listings, fresh);

    let data_name = format!("data-{}", binary_stamp());
    let data_path = root.join(&data_name);
    let ready = root.join(format!("{data_name}.ready"));
    if fresh || !ready.exists() {
        // Data dirs of other builds are stale: free their space.
        for entry in std::fs::read_dir(&root).expect("cache dir").flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("data-") {
                let _ = std::fs::remove_dir_all(entry.path());
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let app = App::open(&DataDir::new(&data_path), 256 << 20).expect("open");
        let start = Instant::now();
        import(&app.store().write_turn(), &DirectorySource(dataset.clone())).expect("import");
        eprintln!("setup: catalogue imported in {}", seconds_since(start));
        let start = Instant::now();
        let feeds = ingest_dataset_feeds(
            &app.store().write_turn(),
            &DirectorySource(dataset.clone()),
            &SnapshotRules::default(),
        )
        .expect("ingest");
        let created: usize = feeds.iter().map(|(_, r)| r.created).sum();
        assert_eq!(created, listings, "every generated listing is ingested");
        drop(feeds);
        eprintln!(
            "setup: {listings} listings ingested and matched in {}",
            seconds_since(start)
        );
        let start = Instant::now();
        app.prepare(false).expect("index");
        eprintln!("setup: indexes built in {}", seconds_since(start));
        app.store().flush().expect("flush");
        std::fs::write(&ready, "").expect("mark ready");
    }
    let start = Instant::now();
    let app = App::open(&DataDir::new(&data_path), 256 << 20).expect("open");
    app.prepare(false).expect("index");
    assert!(app.index_is_current().expect("current"));
    eprintln!("setup: data dir opened in {}", seconds_since(start));
    let app = Arc::new(app);
    Setup {
        http: InProcess::new(app.clone()),
        app,
        hot,
    }
}

impl Setup {
    fn response(&self, uri: &str) -> axum::body::Bytes {
        self.http.get(uri, StatusCode::OK)
    }

    fn get(&self, uri: &str) -> usize {
        self.response(uri).len()
    }

    fn json(&self, uri: &str) -> Value {
        serde_json::from_slice(&self.response(uri)).expect("json")
    }
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn details(brand: Option<&str>, reference: Option<&str>, title: &str) -> ListingDetails {
    ListingDetails {
        url: "https://provider-1.example/listings/bench".to_owned(),
        title: Some(title.to_owned()),
        scraped_brand: brand.map(str::to_owned),
        scraped_reference: reference.map(str::to_owned),
        price: Some(9_500),
        currency: Some("EUR".to_owned()),
        year: Some(2021),
        condition: Condition::from_seller("Used (Very good)"),
        availability: None,
        reserved: false,
        country_code: Some("DE".to_owned()),
        country: Some("Germany".to_owned()),
        city: Some("Munich".to_owned()),
        state: None,
        box_available: Some(true),
        papers_available: Some(true),
    }
}

fn benches(c: &mut Criterion) {
    let s = setup();
    let hot = &s.hot;
    let listings = env_usize("LISTINGS_BENCH_LISTINGS", 1_000_000);

    // The stats bench needs its model to have over 10,000 ACTIVE listings.
    let stats_uri = format!("/v1/listings/stats?brand={}&model={}", hot.brand, hot.model);
    let stats = s.json(&stats_uri);
    let count = stats["count"].as_u64().expect("count");
    eprintln!("setup: {stats_uri} -> {stats}");
    if listings >= 1_000_000 {
        assert!(count >= 10_000, "the hot model has {count} ACTIVE listings");
    }

    // A brand of middling size (a third down the long tail), and a reference as a seller of
    // it wrote it.
    let generated_brands = s
        .app
        .store()
        .catalogue()
        .brands()
        .filter(|b| {
            b.as_ref()
                .map_or(true, |b| b.slug.as_str().starts_with("brand-"))
        })
        .count();
    let middle_brand = format!("brand-{}", generated_brands / 3);
    let page = s.json(&format!("/v1/listings?brand={middle_brand}&pageSize=100"));
    let tail_reference = page["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter(|l| l["modelId"].is_string())
        .find_map(|l| text(l, "scrapedReference"))
        .expect("a matched listing with a reference")
        .to_owned();

    let uris = [
        (
            "brand_price_asc/biggest",
            format!("/v1/listings?brand={}&sort=price_asc", hot.brand),
        ),
        (
            "brand_price_asc/middle",
            format!("/v1/listings?brand={middle_brand}&sort=price_asc"),
        ),
        (
            "usd_5k_20k_unworn_newest",
            "/v1/listings?minPriceUSD=5000&maxPriceUSD=20000&condition=UNWORN&sort=newest"
                .to_owned(),
        ),
        // The price ranges of the scale run's profile (docs/decisions.md, D-94), default order
        // (newest).
        (
            "usd_400_5100_unworn",
            "/v1/listings?minPriceUSD=400&maxPriceUSD=5100&condition=UNWORN".to_owned(),
        ),
        (
            "usd_1000_20000_unworn",
            "/v1/listings?minPriceUSD=1000&maxPriceUSD=20000&condition=UNWORN".to_owned(),
        ),
        (
            "usd_200_1400_unworn",
            "/v1/listings?minPriceUSD=200&maxPriceUSD=1400&condition=UNWORN".to_owned(),
        ),
        (
            "model_in_eur/hot",
            format!(
                "/v1/listings?brand={}&model={}&currency=EUR",
                hot.brand, hot.model
            ),
        ),
        (
            "q_reference/hot",
            format!("/v1/listings?q={}", query_value(&hot.reference)),
        ),
        (
            "q_reference/tail",
            format!("/v1/listings?q={}", query_value(&tail_reference)),
        ),
    ];
    for (name, uri) in &uris {
        let page = s.json(uri);
        let total = page["total"].as_u64().expect("total");
        eprintln!("setup: {name}: {uri} -> {total} listings");
        assert!(total > 0, "{uri} found nothing");
    }

    let mut group = c.benchmark_group("listings_http_in_process");
    for (name, uri) in &uris {
        group.bench_function(*name, |b| b.iter(|| black_box(s.get(uri))));
    }
    group.bench_function("stats/hot", |b| b.iter(|| black_box(s.get(&stats_uri))));
    group.finish();

    // The same through the listings index alone, to tell the index from the rest.
    let brand_id = |slug: &str| {
        s.app
            .store()
            .catalogue()
            .brand_by_slug(&Slug::parse(slug).expect("slug"))
            .expect("read")
            .expect("brand")
            .id
    };
    let hot_brand = brand_id(&hot.brand);
    let hot_model = s
        .app
        .store()
        .catalogue()
        .model_by_slug(hot_brand, &Slug::parse(&hot.model).expect("slug"))
        .expect("read")
        .expect("model");
    // What GET /listings asks by default: everything but DELISTED.
    let hidden = vec![ListingStatus::Delisted as u64];
    let page_of = |filters: ListingFilters, sort: ListingSort| ListingQuery {
        text: None,
        filters,
        sort,
        offset: 0,
        limit: 24,
    };
    let queries = [
        (
            "brand_price_asc/biggest",
            page_of(
                ListingFilters {
                    brand_id: Some(hot_brand.0),
                    hidden_statuses: hidden.clone(),
                    ..ListingFilters::default()
                },
                ListingSort::PriceAsc,
            ),
        ),
        (
            "usd_5k_20k_unworn_newest",
            page_of(
                ListingFilters {
                    condition: Some(Condition::Unworn as u64),
                    min_price_usd: Some(5_000),
                    max_price_usd: Some(20_000),
                    hidden_statuses: hidden.clone(),
                    ..ListingFilters::default()
                },
                ListingSort::Newest,
            ),
        ),
        (
            "model_newest/hot",
            page_of(
                ListingFilters {
                    model_id: Some(hot_model.id.0),
                    hidden_statuses: hidden.clone(),
                    ..ListingFilters::default()
                },
                ListingSort::Newest,
            ),
        ),
    ];
    let mut group = c.benchmark_group("listings_index");
    for (name, query) in &queries {
        group.bench_function(*name, |b| {
            b.iter(|| black_box(s.app.listings().search(query).expect("search")))
        });
        // The same query without the status filter, and with it written as the union of the
        // visible statuses (ACTIVE or RESERVED, two terms covering nearly every document):
        // why the service hides DELISTED by exclusion instead.
        let mut unfiltered = query.clone();
        unfiltered.filters.hidden_statuses.clear();
        group.bench_function(format!("{name}/without_status_filter"), |b| {
            b.iter(|| black_box(s.app.listings().search(&unfiltered).expect("search")))
        });
        let mut union = unfiltered.clone();
        union.filters.statuses = vec![ListingStatus::Active as u64, ListingStatus::Reserved as u64];
        group.bench_function(format!("{name}/as_status_union"), |b| {
            b.iter(|| black_box(s.app.listings().search(&union).expect("search")))
        });
    }
    let of_hot_model = ListingFilters {
        model_id: Some(hot_model.id.0),
        statuses: vec![ListingStatus::Active as u64],
        ..ListingFilters::default()
    };
    // Through the price collector, every column read each time; and as the stats read them,
    // from the runs kept per segment (the first iteration reads and keeps them).
    group.bench_function("prices/hot", |b| {
        b.iter(|| {
            black_box(
                s.app
                    .listings()
                    .prices(&of_hot_model, "USD")
                    .expect("prices"),
            )
        })
    });
    group.bench_function("model_prices/hot", |b| {
        b.iter(|| {
            black_box(
                (s.app.listings())
                    .model_prices(hot_model.id.0, ListingStatus::Active as u64, "USD")
                    .expect("prices"),
            )
        })
    });
    group.finish();

    // What a stats request costs when the figures cache does not hold its figures (the first
    // request for a model and currency, or the first after a commit): the prices of the runs
    // kept per segment, the conversion and the figures.
    let mut group = c.benchmark_group("listing_stats_uncached");
    let table = s.app.conversion_table().expect("rates");
    for code in ["USD", "EUR"] {
        group.bench_function(format!("hot/{code}"), |b| {
            b.iter(|| {
                black_box(
                    watch_catalogue::api::listings::asking_prices(
                        &s.app,
                        hot_model.id,
                        table.as_deref(),
                        code.to_owned(),
                    )
                    .expect("stats"),
                )
            })
        });
    }
    group.finish();

    // Matching one listing, as ingest does for each new or changed one.
    let brand = s
        .app
        .store()
        .catalogue()
        .brand(hot_brand)
        .expect("read")
        .expect("brand");
    let alias = brand.aliases.first().cloned().unwrap_or(brand.name.clone());
    let respelled = hot.reference.to_lowercase();
    let cases = [
        (
            "alias_and_reference",
            details(
                Some(&alias),
                Some(&respelled),
                &format!("{alias} {} {respelled}", hot_model.name),
            ),
            true,
        ),
        (
            "reference_in_title",
            details(
                None,
                None,
                &format!(
                    "{} {} {} Full Set",
                    brand.name, hot_model.name, hot.reference
                ),
            ),
            true,
        ),
        (
            "unknown_brand",
            details(
                Some("Maison Verdier"),
                Some("MV-1042"),
                "Maison Verdier Heritage MV-1042",
            ),
            false,
        ),
    ];
    let mut group = c.benchmark_group("match_listing");
    for (name, listing, matches) in &cases {
        let found = match_listing(s.app.store(), listing).expect("match");
        assert_eq!(found.model_id.is_some(), *matches, "{name}: {found:?}");
        group.bench_function(*name, |b| {
            b.iter(|| black_box(match_listing(s.app.store(), listing).expect("match")))
        });
    }
    group.finish();
}

criterion_group!(listings, benches);
criterion_main!(listings);
