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

/// The fixture's daily file (2025-05-09) moved to `date` with `usd` dollars to the euro.
fn fixture_day(date: &str, usd: &str) -> String {
    let fixture = std::fs::read_to_string(test_catalogue().join("rates.xml")).expect("rates");
    fixture
        .replace("2025-05-09", date)
        .replace("rate='1.1252'", &format!("rate='{usd}'"))
}

/// Loads `xml` into the serving app as `watch-catalogue rates` would.
async fn load(app: &TestApp, xml: String) -> watch_catalogue::jobs::rates::RatesReport {
    let app_data = app.app.clone();
    tokio::task::spawn_blocking(move || {
        app_data
            .writer()
            .run(|turn| watch_catalogue::jobs::rates::load_rates(turn, &xml))
            .expect("rates loaded")
            .value
    })
    .await
    .expect("job")
}

/// The bundled fixtures (2025-05-09), a later day (2025-05-12) and an earlier one loaded after
/// it (2025-05-07).
async fn app_with_three_days() -> TestApp {
    let app = TestApp::start().await;
    load(&app, fixture_day("2025-05-12", "1.1106")).await;
    let report = load(&app, fixture_day("2025-05-07", "1.1300")).await;
    assert_eq!(report.in_force, "2025-05-12", "an older day stays history");
    app
}

#[tokio::test]
async fn a_stored_day_answers_with_its_own_figures_and_table() {
    let app = app_with_three_days().await;
    let in_force = app.ok("/v1/rates").await;
    assert_eq!(
        in_force["date"], "2025-05-12",
        "the older day loaded last is not in force"
    );
    assert_eq!(in_force["ecb"]["rates"]["USD"], "1.1106");

    let thursday = app.ok("/v1/rates?date=2025-05-07").await;
    assert_eq!(keys(&thursday), ["date", "ecb", "source", "usd"]);
    assert_eq!(thursday["date"], "2025-05-07");
    assert_eq!(thursday["ecb"]["rates"]["USD"], "1.1300");
    // 1 / 1.13 = 0.884955752212..., 0.84770 / 1.13 = 0.750176991150...
    assert_eq!(thursday["usd"]["rates"]["EUR"], "0.8849557522");
    assert_eq!(thursday["usd"]["rates"]["GBP"], "0.7501769912");
    assert_eq!(thursday["usd"]["rounding"], in_force["usd"]["rounding"]);

    let friday = app.ok("/v1/rates?date=2025-05-09").await;
    assert_eq!(friday["ecb"]["rates"]["USD"], "1.1252");
    assert_eq!(friday["usd"]["rates"]["EUR"], "0.8887308923");
    assert_eq!(app.ok("/v1/rates?date=2025-05-12").await, in_force);
}

#[tokio::test]
async fn a_day_not_stored_is_404_naming_the_nearest_stored_days() {
    let app = app_with_three_days().await;
    let cases = [
        ("2025-05-10", "no rates are stored for 2025-05-10; the nearest stored days are 2025-05-09 and 2025-05-12"),
        ("2025-05-08", "no rates are stored for 2025-05-08; the nearest stored days are 2025-05-07 and 2025-05-09"),
        ("2025-05-01", "no rates are stored for 2025-05-01; the nearest stored day is 2025-05-07, the earliest"),
        ("2026-01-01", "no rates are stored for 2026-01-01; the nearest stored day is 2025-05-12, the latest"),
    ];
    for (date, message) in cases {
        let path = format!("/v1/rates?date={date}");
        assert_error(&app, &path, 404, "not_found", "weekends").await;
        assert_eq!(app.get(&path).await.1["message"], message);
    }
}

#[tokio::test]
async fn a_date_that_is_not_a_calendar_day_is_400_and_reads_nothing() {
    let app = TestApp::start().await;
    for date in [
        "2025-13-01",
        "yesterday",
        "2025-02-29",
        "2025-5-9",
        "",
        "2025-05-09%00",
    ] {
        let path = format!("/v1/rates?date={date}");
        assert_error(&app, &path, 400, "invalid_request", "2025-05-09").await;
        let message = app.get(&path).await.1["message"].clone();
        assert!(
            message
                .as_str()
                .unwrap_or("")
                .starts_with("`date` must be a day of the calendar"),
            "{path}: {message}"
        );
    }
}

#[test]
fn the_rates_command_loads_a_history_file_keeping_every_day() {
    let data = crate::support::new_data_dir();
    let run = |file: &std::path::Path| {
        binary(data.path())
            .arg("rates")
            .arg(file)
            .output()
            .expect("run")
    };
    let daily = run(&test_catalogue().join("rates.xml"));
    assert!(daily.status.success(), "{daily:?}");
    // Two days of a history file, newest first as the ECB writes them: the newer comes into
    // force, the older stays history.
    let history = data.path().join("eurofxref-hist.xml");
    let days: String = [("2025-05-12", "1.1106"), ("2025-05-08", "1.1290")]
        .iter()
        .map(|(date, usd)| format!("<Cube time='{date}'><Cube currency='USD' rate='{usd}'/><Cube currency='GBP' rate='0.85'/></Cube>"))
        .collect();
    std::fs::write(&history, format!("<gesmes:Envelope xmlns:gesmes='http://www.gesmes.org/xml/2002-08-01'><Cube>{days}</Cube></gesmes:Envelope>")).expect("write");
    let output = run(&history);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(
        text.contains("loaded 2 days of ECB rates, 2025-05-08 to 2025-05-12: 2 currencies per euro, 3 in the USD table; store generation 2"),
        "{text}"
    );
    let bad = data.path().join("bad-hist.xml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&history)
            .expect("read")
            .replace("2025-05-12", "2025-05-13")
            .replace("rate='1.1290'", "rate='-1'"),
    )
    .expect("write");
    let output = run(&bad);
    let errors = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        errors.contains("2025-05-08: rate `-1` of USD is not a positive decimal number"),
        "{errors}"
    );
    assert_eq!(generation(data.path()), 2, "a refused file writes nothing");
    let store = Store::open(&DataDir::new(data.path()).store(), 1 << 20).expect("store");
    let stored: Vec<String> = store
        .rates()
        .days()
        .collect::<Result<_, _>>()
        .expect("days");
    assert_eq!(stored, ["2025-05-08", "2025-05-09", "2025-05-12"]);
    assert_eq!(
        store
            .rates()
            .in_force()
            .expect("read")
            .map(|r| r.date)
            .as_deref(),
        Some("2025-05-12")
    );
}

/// A past price converts at the table of its own day, kept between requests (D-205): a day
/// filled in afterwards, older than the rates in force, is what the next answer converts at.
#[tokio::test]
async fn a_day_table_kept_for_past_prices_follows_a_day_loaded_later() {
    let app = TestApp::start().await;
    load(&app, fixture_day("2025-05-12", "1.1106")).await;
    let on_saturday = || app.app.table_on("2025-05-10").expect("table");
    assert_eq!(
        on_saturday().0.as_deref(),
        Some("2025-05-09"),
        "the fixture's day"
    );
    let eur = |table: &watch_catalogue::app::DayTable| {
        table.1.as_ref().and_then(|t| t.to_usd(1000, "EUR"))
    };
    assert_eq!(eur(&on_saturday()), Some(1125), "1000 EUR at 1.1252");
    load(&app, fixture_day("2025-05-10", "1.2000")).await;
    assert_eq!(on_saturday().0.as_deref(), Some("2025-05-10"));
    assert_eq!(eur(&on_saturday()), Some(1200), "the day loaded after it");
}
