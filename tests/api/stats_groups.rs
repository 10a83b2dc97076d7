//! `GET /listings/stats?groupBy=` (issue 51, D-206): the figures split by condition and by box
//! and papers, by hand on the test feed, and on the bundled fixtures against the model's own
//! ACTIVE listings read through `GET /listings`: every group there in its order, the groups
//! adding up to the whole, the whole as without `groupBy`.

use crate::support::*;
use serde_json::{json, Value};
use watch_catalogue::api::config::{ApiConfig, RateLimitConfig};
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;

const SUBMARINER: &str = "/v1/listings/stats?brand=rolex&model=submariner-date-126610ln";

const CONDITION_KEYS: [&str; 7] = [
    "NEW",
    "UNWORN",
    "VERY_GOOD",
    "GOOD",
    "FAIR",
    "POOR",
    "unknown",
];
const BOX_PAPERS_KEYS: [&str; 5] = ["fullSet", "boxOnly", "papersOnly", "neither", "unknown"];

/// An empty group of the body.
fn empty(key: &str) -> Value {
    json!({"key": key, "count": 0, "pricedCount": 0, "low": null, "median": null, "high": null})
}

fn group(key: &str, count: u64, priced: u64, figures: Option<(u64, u64, u64)>) -> Value {
    let (low, median, high) = match figures {
        Some((low, median, high)) => (json!(low), json!(median), json!(high)),
        None => (Value::Null, Value::Null, Value::Null),
    };
    json!({"key": key, "count": count, "pricedCount": priced, "low": low, "median": median, "high": high})
}

/// 126610LN's ACTIVE listings of the test feed: e1 UNWORN with box and papers (10000 USD); e2
/// VERY_GOOD, box and papers not said (9000 EUR = 10127 USD); e4 no condition, unpriced; e5 no
/// condition ("See description"), 40000 AED: priced, but no rate converts it.
#[tokio::test]
async fn the_test_feed_splits_by_hand() {
    let app = TestApp::start().await;
    let whole = app.ok(SUBMARINER).await;
    let by_condition = app.ok(&format!("{SUBMARINER}&groupBy=condition")).await;
    assert_eq!(
        by_condition,
        json!({"count": 4, "pricedCount": 3, "currency": "USD", "low": 10000, "median": 10064, "high": 10127,
        "groupBy": "condition",
        "groups": [
            empty("NEW"),
            group("UNWORN", 1, 1, Some((10000, 10000, 10000))),
            group("VERY_GOOD", 1, 1, Some((10127, 10127, 10127))),
            empty("GOOD"),
            empty("FAIR"),
            empty("POOR"),
            group("unknown", 2, 1, None),
        ]})
    );
    let by_box_papers = app.ok(&format!("{SUBMARINER}&groupBy=boxPapers")).await;
    assert_eq!(
        by_box_papers["groups"],
        json!([
            group("fullSet", 1, 1, Some((10000, 10000, 10000))),
            empty("boxOnly"),
            empty("papersOnly"),
            empty("neither"),
            group("unknown", 3, 2, Some((10127, 10127, 10127))),
        ])
    );
    // In EUR, as the whole: e1 8887, e2 its own 9000.
    let in_euros = app
        .ok(&format!("{SUBMARINER}&groupBy=condition&currency=EUR"))
        .await;
    assert_eq!(in_euros["currency"], "EUR");
    assert_eq!(
        in_euros["groups"][1],
        group("UNWORN", 1, 1, Some((8887, 8887, 8887)))
    );
    assert_eq!(
        in_euros["groups"][2],
        group("VERY_GOOD", 1, 1, Some((9000, 9000, 9000)))
    );
    // Each answer kept apart: the whole asked again has no groups, and is what it was.
    let again = app.ok(SUBMARINER).await;
    assert_eq!(again, whole);
    assert_eq!(
        keys(&again),
        ["count", "currency", "high", "low", "median", "pricedCount"]
    );
}

#[tokio::test]
async fn an_unknown_grouping_is_refused_naming_the_groupings() {
    let app = TestApp::start().await;
    for value in ["colour", "Condition", "box_papers", ""] {
        assert_error(
            &app,
            &format!("{SUBMARINER}&groupBy={value}"),
            400,
            "invalid_request",
            "groupBy is one of: condition, boxPapers",
        )
        .await;
    }
    // A model that does not exist is still a 404 with a grouping.
    let (status, _) = app
        .get("/v1/listings/stats?brand=rolex&model=nope&groupBy=condition")
        .await;
    assert_eq!(status, 404);
}

/// The bundled fixtures as `serve` fills a new data dir with them (480 listings), served with
/// room for a request per model and grouping.
async fn fixtures_app() -> TestApp {
    let dir = new_data_dir();
    let app = App::open(&DataDir::new(dir.path()), 16 << 20).expect("open");
    app.prepare(true).expect("the bundled fixtures");
    let config = ApiConfig {
        rate_limit: RateLimitConfig {
            limit: 100_000,
            ..RateLimitConfig::default()
        },
        ..ApiConfig::default()
    };
    TestApp::serving(app, dir, config).await
}

/// Every model with listings: `(id, brand slug, slug)`.
async fn models_with_listings(app: &TestApp) -> Vec<(String, String, String)> {
    let mut models = Vec::new();
    for page in 1.. {
        let body = app
            .ok(&format!("/v1/models?pageSize=100&page={page}"))
            .await;
        let data = body["data"].as_array().expect("data");
        for model in data.iter().filter(|m| m["listingCount"] != 0) {
            let text = |value: &Value| value.as_str().expect("string").to_owned();
            models.push((
                text(&model["id"]),
                text(&model["brand"]["slug"]),
                text(&model["slug"]),
            ));
        }
        if page >= body["totalPages"].as_u64().expect("totalPages") {
            break;
        }
    }
    models
}

/// The group of `listing` in `grouping`, as D-206 defines them.
fn key_of(listing: &Value, grouping: &str) -> String {
    if grouping == "condition" {
        return listing["condition"]
            .as_str()
            .unwrap_or("unknown")
            .to_owned();
    }
    let pair = (
        listing["boxAvailable"].as_bool(),
        listing["papersAvailable"].as_bool(),
    );
    match pair {
        (Some(true), Some(true)) => "fullSet",
        (Some(true), Some(false)) => "boxOnly",
        (Some(false), Some(true)) => "papersOnly",
        (Some(false), Some(false)) => "neither",
        _ => "unknown",
    }
    .to_owned()
}

/// Low, median (of an even number, the middle two's mean rounded half up) and high.
fn reference_figures(mut prices: Vec<u64>) -> Option<(u64, u64, u64)> {
    prices.sort_unstable();
    let n = prices.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => prices[n / 2],
        _ => (prices[n / 2 - 1] + prices[n / 2]).div_ceil(2),
    };
    Some((prices[0], median, prices[n - 1]))
}

/// The group `key` of `listings` (a model's ACTIVE ones) by hand, in US dollars.
fn reference_group(listings: &[Value], grouping: &str, key: &str) -> Value {
    let members: Vec<&Value> = (listings.iter())
        .filter(|listing| key_of(listing, grouping) == key)
        .collect();
    let priced = members.iter().filter(|l| !l["price"].is_null()).count();
    let dollars = members
        .iter()
        .filter_map(|l| l["priceUSD"].as_u64())
        .collect();
    group(
        key,
        members.len() as u64,
        priced as u64,
        reference_figures(dollars),
    )
}

/// What holds of any grouped body against the body without `groupBy`.
fn assert_adds_up(whole: &Value, grouped: &Value, grouping: &str, keys: &[&str]) {
    let mut top = grouped.as_object().expect("object").clone();
    assert_eq!(top.remove("groupBy"), Some(json!(grouping)));
    let groups = top.remove("groups").expect("groups");
    assert_eq!(
        &Value::Object(top),
        whole,
        "the whole is as without groupBy"
    );
    let groups = groups.as_array().expect("groups");
    let named: Vec<&str> = groups
        .iter()
        .map(|g| g["key"].as_str().expect("key"))
        .collect();
    assert_eq!(named, keys, "every group, in order");
    let sum = |field: &str| {
        groups
            .iter()
            .map(|g| g[field].as_u64().expect(field))
            .sum::<u64>()
    };
    assert_eq!(
        sum("count"),
        whole["count"].as_u64().expect("count"),
        "{grouped}"
    );
    assert_eq!(
        sum("pricedCount"),
        whole["pricedCount"].as_u64().expect("priced"),
        "{grouped}"
    );
    for group in groups {
        assert!(
            group["pricedCount"].as_u64() <= group["count"].as_u64(),
            "{group}"
        );
        match (
            group["low"].as_u64(),
            group["median"].as_u64(),
            group["high"].as_u64(),
        ) {
            (Some(low), Some(median), Some(high)) => {
                assert!(low <= median && median <= high, "{group}")
            }
            (None, None, None) => {}
            _ => panic!("figures all there or all null: {group}"),
        }
    }
}

/// Issue 51's test, on every model of the bundled fixtures that has listings: each grouping's
/// groups add up to the figures without `groupBy`, and each group is what the model's ACTIVE
/// listings of `GET /listings` make of it by hand.
#[tokio::test]
async fn on_the_bundled_fixtures_the_groups_add_up_to_the_whole() {
    let app = fixtures_app().await;
    let models = models_with_listings(&app).await;
    assert!(models.len() > 100, "{} models with listings", models.len());
    let (mut empty_groups, mut priced_groups) = (0, 0);
    for (id, brand, slug) in &models {
        let stats = format!("/v1/listings/stats?brand={brand}&model={slug}");
        let whole = app.ok(&stats).await;
        let page = app
            .ok(&format!(
                "/v1/listings?modelId={id}&status=ACTIVE&pageSize=100"
            ))
            .await;
        let listings = page["data"].as_array().expect("data");
        assert_eq!(page["total"], whole["count"], "{stats}");
        for (grouping, keys) in [
            ("condition", &CONDITION_KEYS[..]),
            ("boxPapers", &BOX_PAPERS_KEYS[..]),
        ] {
            let grouped = app.ok(&format!("{stats}&groupBy={grouping}")).await;
            assert_adds_up(&whole, &grouped, grouping, keys);
            for (at, key) in keys.iter().enumerate() {
                let got = &grouped["groups"][at];
                assert_eq!(
                    got,
                    &reference_group(listings, grouping, key),
                    "{stats} {key}"
                );
                match got["count"].as_u64() {
                    Some(0) => empty_groups += 1,
                    _ if got["low"].is_u64() => priced_groups += 1,
                    _ => {}
                }
            }
        }
    }
    assert!(
        empty_groups > 0 && priced_groups > 0,
        "{empty_groups} {priced_groups}"
    );
}
