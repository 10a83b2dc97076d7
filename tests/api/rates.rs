//! `GET /rates`, the `rates` command and rates in a dataset.

use crate::support::*;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::store::Store;

#[tokio::test]
async fn rates_publish_the_ecb_figures_unmodified_and_the_usd_table() {
    let app = TestApp::start().await;
    let body = app.ok("/v1/rates").await;
    assert_eq!(keys(&body), ["date", "ecb", "source", "usd"]);
    assert_eq!(body["date"], "2025-05-09");
    assert_eq!(body["ecb"]["base"], "EUR");
    assert_eq!(body["ecb"]["rates"]["USD"], "1.1252");
    assert_eq!(
        body["ecb"]["rates"]["GBP"], "0.84770",
        "the published string, trailing zero kept"
    );
    assert_eq!(body["ecb"]["rates"].as_object().map(|m| m.len()), Some(30));
    assert_eq!(body["usd"]["base"], "USD");
    // By hand: 1 / 1.1252 = 0.888730892285..., 163.36 / 1.1252 = 145.183078563810...
    assert_eq!(body["usd"]["rates"]["USD"], "1");
    assert_eq!(body["usd"]["rates"]["EUR"], "0.8887308923");
    assert_eq!(body["usd"]["rates"]["JPY"], "145.1830785638");
    assert_eq!(body["usd"]["rates"].as_object().map(|m| m.len()), Some(31));
    assert!(body["usd"]["rounding"]
        .as_str()
        .unwrap_or("")
        .contains("half away from zero"));
    assert_eq!(app.ok("/rates").await, body);
}

#[tokio::test]
async fn without_rates_the_endpoint_says_how_to_load_them() {
    let dataset = tempfile::tempdir().expect("dir");
    std::fs::write(
        dataset.path().join("brands.jsonl"),
        "{\"slug\":\"rolex\",\"name\":\"Rolex\"}\n",
    )
    .expect("write");
    let app = TestApp::build().dataset(dataset.path()).start().await;
    assert_error(
        &app,
        "/v1/rates",
        404,
        "not_found",
        "watch-catalogue rates FILE",
    )
    .await;
}

#[test]
fn the_rates_command_loads_a_file_and_refuses_a_bad_one_without_writing() {
    let data = crate::support::new_data_dir();
    let file = test_catalogue().join("rates.xml");
    let output = binary(data.path())
        .arg("rates")
        .arg(&file)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains(
            "loaded the ECB rates of 2025-05-09: 30 currencies per euro, 31 in the USD table"
        ),
        "{text}"
    );
    assert_eq!(generation(data.path()), 1);
    let bad = data.path().join("bad.xml");
    std::fs::write(
        &bad,
        "<Cube time='2025-05-12'><Cube currency='USD' rate='one'/></Cube>",
    )
    .expect("write");
    let output = binary(data.path())
        .arg("rates")
        .arg(&bad)
        .output()
        .expect("run");
    let errors = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        errors.contains("rate `one` of USD is not a positive decimal number"),
        "{errors}"
    );
    assert_eq!(generation(data.path()), 1, "a refused file writes nothing");
    let stored = Store::open(&DataDir::new(data.path()).store(), 1 << 20)
        .expect("store")
        .rates()
        .in_force()
        .expect("read")
        .expect("rates");
    assert_eq!(stored.date, "2025-05-09");
}

#[test]
fn a_dataset_carries_its_rates_and_importing_them_again_changes_nothing() {
    let data = tempfile::tempdir().expect("dir");
    let run = || {
        binary(data.path())
            .arg("import")
            .arg(test_catalogue())
            .output()
            .expect("run")
    };
    let first = String::from_utf8_lossy(&run().stdout).into_owned();
    assert!(first.contains("rates: 1 created"), "{first}");
    let second = String::from_utf8_lossy(&run().stdout).into_owned();
    assert!(
        second.contains("rates: 0 created, 0 updated, 1 unchanged"),
        "{second}"
    );
    assert_eq!(generation(data.path()), 1);
    let dataset = tempfile::tempdir().expect("dataset");
    std::fs::write(
        dataset.path().join("rates.xml"),
        "<Cube><Cube currency='USD' rate='1'/></Cube>",
    )
    .expect("write");
    let output = binary(data.path())
        .arg("import")
        .arg(dataset.path())
        .output()
        .expect("run");
    let errors = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(errors.contains("rates.xml: no rates day found"), "{errors}");
}

/// New rates reprice every listing: `priceUSD` is derived from the rates in force, so loading a
/// day of rates brings the listings index up to date before anything is served.
#[tokio::test]
async fn loading_rates_reprices_listings() {
    let data = tempfile::tempdir().expect("dir");
    let run = |args: &[&std::ffi::OsStr]| {
        let output = binary(data.path()).args(args).output().expect("run");
        assert!(output.status.success(), "{args:?}: {output:?}");
    };
    run(&["import".as_ref(), test_catalogue().as_os_str()]);
    let feed = test_feeds().join("listings/ebay.jsonl");
    run(&[
        "ingest".as_ref(),
        "--provider".as_ref(),
        "ebay".as_ref(),
        feed.as_os_str(),
    ]);
    // The EUR listing e2 (9000 EUR) at 1.1252 USD per EUR: 10127 USD. At 1.25: 11250 USD.
    let rates = data.path().join("rates.xml");
    std::fs::write(
        &rates,
        "<Cube><Cube time='2025-06-02'><Cube currency='USD' rate='1.25'/></Cube></Cube>",
    )
    .expect("write");
    run(&["rates".as_ref(), rates.as_os_str()]);
    let app = watch_catalogue::app::App::open(
        &watch_catalogue::data_dir::DataDir::new(data.path()),
        16 << 20,
    )
    .expect("open");
    assert!(app.index_is_current().expect("current"));
    let listings = app
        .listings()
        .search(&catalogue_index::ListingQuery {
            text: None,
            filters: catalogue_index::ListingFilters {
                min_price_usd: Some(11250),
                max_price_usd: Some(11250),
                ..Default::default()
            },
            sort: catalogue_index::ListingSort::Oldest,
            offset: 0,
            limit: 10,
        })
        .expect("search");
    assert_eq!(listings.ids, [2], "e2 is indexed at its new USD price");
    let app = TestApp::serving(
        app,
        data,
        watch_catalogue::api::config::ApiConfig::default(),
    )
    .await;
    let e2 = app.ok("/v1/listings/2").await;
    assert_eq!(e2["priceUSD"], 11250);
}

#[tokio::test]
async fn rates_loaded_into_a_serving_data_dir_are_in_force_at_once() {
    let app = TestApp::start().await;
    let before = app.ok("/v1/rates").await;
    assert_eq!(before["usd"]["rates"]["EUR"], "0.8887308923");
    let feed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/rates.xml"))
        .expect("rates");
    let newer = feed
        .replace("2025-05-09", "2025-05-12")
        .replace("rate='1.1252'", "rate='1.2500'");
    let app_data = app.app.clone();
    tokio::task::spawn_blocking(move || {
        app_data
            .writer()
            .run(|turn| watch_catalogue::jobs::rates::load_rates(turn, &newer))
            .expect("rates loaded")
    })
    .await
    .expect("job");
    let after = app.ok("/v1/rates").await;
    assert_eq!(after["date"], "2025-05-12");
    assert_eq!(after["usd"]["rates"]["EUR"], "0.8", "1 / 1.25");
}
