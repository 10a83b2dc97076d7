//! The load driver against the real service, in-process on a loopback port over the small test
//! catalogue of the root crate (tests/data): every kind of the default mix is asked, nothing
//! fails, and the report's JSON round-trips. About one second of load. Then the peers' side
//! through the real binary: `export-peers` and `replay` of the requests the driver learnt.

use catalogue_bench::load::{self, Kind, LoadConfig, LoadReport, Mix};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::jobs::import::{import, DirectorySource};
use watch_catalogue::jobs::ingest::ingest_dataset_feeds;
use watch_catalogue::jobs::snapshot_rules::SnapshotRules;

fn test_data(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data")
        .join(dir)
}

/// A data dir in `dir` holding the test catalogue and feeds, indexed.
fn test_app(dir: &Path) -> App {
    let app = App::open(&DataDir::new(dir), 16 << 20).expect("open data dir");
    import(
        &app.store().write_turn(),
        &DirectorySource(test_data("catalogue")),
    )
    .expect("import");
    ingest_dataset_feeds(
        &app.store().write_turn(),
        &DirectorySource(test_data("feeds")),
        &SnapshotRules::default(),
    )
    .expect("ingest the test feeds");
    app.prepare(false).expect("index");
    app
}

/// The router over the test catalogue and feeds, rate limit lifted, on 127.0.0.1:0.
async fn serve(dir: &Path) -> String {
    let app = test_app(dir);
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
    // The default mix, then every kind it leaves out (issue 18's, added after the scale runs
    // whose mix it is): every kind runs without an error.
    let config = LoadConfig {
        concurrency: 4,
        duration: Duration::from_secs(1),
        timeout: Duration::from_secs(10),
        ..LoadConfig::new(base)
    };
    let mixed: Vec<Kind> = config.mix.weights.iter().map(|(kind, _)| *kind).collect();
    let rest = Mix {
        name: "the rest".into(),
        weights: Kind::ALL
            .into_iter()
            .filter(|kind| !mixed.contains(kind))
            .map(|kind| (kind, 1))
            .collect(),
    };
    assert!(!rest.weights.is_empty());
    let report = run_checked(&config, &mixed).await;
    let rest_kinds: Vec<Kind> = rest.weights.iter().map(|(kind, _)| *kind).collect();
    run_checked(
        &LoadConfig {
            mix: rest,
            ..config
        },
        &rest_kinds,
    )
    .await;
    assert!(report.markdown().contains("| listing_by_id |"));
}

/// Runs `config` and checks that each of `kinds` was sent, answered without an error, and
/// reported.
async fn run_checked(config: &LoadConfig, kinds: &[Kind]) -> LoadReport {
    let report = tokio::time::timeout(Duration::from_secs(60), load::run(config))
        .await
        .expect("the run ends in time")
        .expect("run");

    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.kinds.len(), kinds.len(), "{}", report.markdown());
    // Kinds come in decks of their weights' sum (100 by default): a deck asks every kind.
    let deck: u32 = config.mix.weights.iter().map(|(_, w)| w).sum();
    assert!(
        report.overall.count >= u64::from(deck),
        "too few requests in a second: {}",
        report.markdown()
    );
    for (kind, figures) in kinds.iter().zip(&report.kinds) {
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
    report
}

/// The peers' side of the scale run through the real binary: `export-peers` writes every table
/// with one row per record, and `replay` runs the requests the driver learnt (from a server
/// over another copy of the same data: sled locks a data dir) with no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_and_replay_run_through_the_binary() {
    let served = tempfile::tempdir().expect("temp dir");
    let base = serve(served.path()).await;
    let client = load::client(2, Duration::from_secs(10)).expect("client");
    let targets = load::discover(&client, &base, 42, 16)
        .await
        .expect("discover");
    let work = tempfile::tempdir().expect("temp dir");
    let requests = work.path().join("requests.jsonl");
    std::fs::write(&requests, load::request_lines(&targets)).expect("write requests");

    let data = work.path().join("data");
    drop(test_app(&data));
    let bench = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_catalogue-bench"))
            .args(args)
            .output()
            .expect("run catalogue-bench");
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let data_arg = data.to_str().expect("utf-8 path");
    let export = work.path().join("export");
    let manifest = bench(&[
        "export-peers",
        "--data-dir",
        data_arg,
        "--out",
        export.to_str().expect("utf-8 path"),
    ]);
    let manifest: serde_json::Value = serde_json::from_str(&manifest).expect("manifest JSON");
    let store = watch_catalogue::store::Store::open(&data.join("store"), 1 << 20).expect("store");
    let listings = store.listings().all_listings().count() as u64;
    let models = store.catalogue().all_models().count() as u64;
    drop(store);
    let rows = |table: &str| {
        let tables = manifest["tables"].as_array().expect("tables");
        let entry = tables.iter().find(|t| t["name"] == table).expect(table);
        let file = export.join(entry["file"].as_str().expect("file"));
        let lines = std::fs::read_to_string(file)
            .expect("table file")
            .lines()
            .count() as u64;
        assert_eq!(entry["rows"].as_u64(), Some(lines), "{table}");
        lines
    };
    assert_eq!(rows("listings"), listings);
    assert_eq!(rows("models"), models);

    let json = work.path().join("replay.json");
    bench(&[
        "replay",
        "--data-dir",
        data_arg,
        "--requests",
        requests.to_str().expect("utf-8 path"),
        "--concurrency",
        "2",
        "--duration",
        "200ms",
        "--warmup",
        "0s",
        "--json",
        json.to_str().expect("utf-8 path"),
    ]);
    let report: LoadReport =
        serde_json::from_str(&std::fs::read_to_string(json).expect("read JSON")).expect("JSON");
    assert_eq!(report.kinds.len(), Kind::ALL.len(), "{}", report.markdown());
    for figures in &report.kinds {
        assert!(figures.count > 0, "{}: no request", figures.kind);
        assert_eq!(
            figures.errors, 0,
            "{}: {:?}",
            figures.kind, figures.first_error
        );
    }
}
