//! The load driver against the real service, in-process on a loopback port over the small test
//! catalogue of the root crate (tests/data): every kind of the default mix is asked, nothing
//! fails, and the report's JSON round-trips. About one second of load.

use catalogue_bench::load::{self, Kind, LoadConfig, LoadReport};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use watch_catalogue::app::App;
use watch_catalogue::config::DataDir;
use watch_catalogue::jobs::import::{import, DirectorySource};
use watch_catalogue::jobs::ingest::{ingest_dataset_feeds, DEFAULT_MAX_INVALID};

fn test_data(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data")
        .join(dir)
}

/// The router over the test catalogue and feeds, rate limit lifted, on 127.0.0.1:0.
async fn serve(dir: &Path) -> String {
    let app = App::open(&DataDir::new(dir), 16 << 20).expect("open data dir");
    import(&app.store, &DirectorySource(test_data("catalogue"))).expect("import");
    ingest_dataset_feeds(
        &app.store,
        &DirectorySource(test_data("feeds")),
        DEFAULT_MAX_INVALID,
    )
    .expect("ingest the test feeds");
    app.prepare(false).expect("index");
    let router = watch_catalogue::api::router(Arc::new(app), &catalogue_bench::unlimited_api());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let service = router.into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_mix_runs_against_the_real_service() {
    let dir = tempfile::tempdir().expect("temp dir");
    let base = serve(dir.path()).await;
    let config = LoadConfig {
        concurrency: 4,
        duration: Duration::from_secs(1),
        timeout: Duration::from_secs(10),
        ..LoadConfig::new(base)
    };
    let report = tokio::time::timeout(Duration::from_secs(60), load::run(&config))
        .await
        .expect("the run ends in time")
        .expect("run");

    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.kinds.len(), Kind::ALL.len(), "{}", report.markdown());
    // Kinds come in decks of 100 (the default weights): 100 requests ask every kind.
    assert!(
        report.overall.count >= 100,
        "too few requests in a second: {}",
        report.markdown()
    );
    for (kind, figures) in Kind::ALL.iter().zip(&report.kinds) {
        assert_eq!(figures.kind, kind.name());
        assert!(figures.pool > 0, "{kind}: empty pool");
        assert!(
            figures.count > 0,
            "{kind}: no request\n{}",
            report.markdown()
        );
        assert_eq!(
            figures.errors, 0,
            "{kind}: {:?} {:?}",
            figures.errors_by_status, figures.first_error
        );
        assert!(figures.p50_us > 0 && figures.p50_us <= figures.max_us);
        assert!(figures.mean_bytes > 0, "{kind}: empty answers");
    }
    assert_eq!(report.overall.errors, 0);
    assert_eq!(
        report.overall.count,
        report.kinds.iter().map(|k| k.count).sum::<u64>()
    );
    assert!(report.measured_secs >= 1.0, "{}", report.measured_secs);

    let json = serde_json::to_string_pretty(&report).expect("to JSON");
    let back: LoadReport = serde_json::from_str(&json).expect("from JSON");
    assert_eq!(back, report);
    assert!(report.markdown().contains("| listing_by_id |"));
}
