//! `GET /listings`, `/listings/{id}` and `/listings/stats` over the test feed
//! (tests/data/feeds/listings/ebay.jsonl, listings e1 to e11, ids 1 to 11 in feed order): the
//! spec's shape, every filter and sort, conversions and stats computed by hand, the errors, and
//! a revisit taken into the listings index incrementally.
//!
//! Prices in USD through the test rates (ECB 2025-05-09; usd[EUR] = 0.8887308923,
//! usd[GBP] = 0.7533771774, usd[CHF] = 0.8312300036): e2 9000 EUR / 0.8887308923 = 10126.79
//! -> 10127; e3 12000 GBP -> 15928.27 -> 15928; e6 3500 CHF -> 4210.63 -> 4211. e5 is in AED,
//! which the ECB does not publish: priceUSD null, price kept.

use crate::support::*;
use serde_json::{json, Value};
use watch_catalogue::api::config::ApiConfig;
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::jobs::import::{import, DirectorySource};
use watch_catalogue::jobs::ingest::{ingest, ingest_dataset_feeds};
use watch_catalogue::jobs::snapshot_rules::SnapshotRules;

/// The provider codes of a page, in order.
fn codes(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|l| l["providerCode"].as_str().expect("providerCode").to_owned())
        .collect()
}

fn expect_codes(expected: &str) -> Vec<String> {
    expected.split_whitespace().map(str::to_owned).collect()
}

#[tokio::test]
async fn a_listing_has_every_field_of_the_spec() {
    let app = TestApp::start().await;
    let page = app.ok("/v1/listings?pageSize=100").await;
    assert_page(&page, 1, 100, 11);
    let e1 = page["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|l| l["providerCode"] == "e1")
        .expect("e1");
    assert_eq!(
        keys(e1),
        [
            "availability",
            "boxAvailable",
            "city",
            "condition",
            "country",
            "countryCode",
            "createdAt",
            "currency",
            "delistedAt",
            "id",
            "lastSeenAt",
            "modelId",
            "papersAvailable",
            "pictures",
            "price",
            "priceUSD",
            "provider",
            "providerCode",
            "reservedAt",
            "scrapedBrand",
            "scrapedReference",
            "state",
            "status",
            "title",
            "updatedAt",
            "url",
            "year"
        ]
    );
    assert_eq!(e1["id"], "1");
    assert_eq!(e1["url"], "https://www.ebay.com/itm/e1");
    assert_eq!(
        (
            e1["price"].as_u64(),
            e1["currency"].as_str(),
            e1["priceUSD"].as_u64()
        ),
        (Some(10000), Some("USD"), Some(10000))
    );
    assert_eq!(
        (
            e1["condition"].as_str(),
            e1["availability"].as_str(),
            e1["status"].as_str()
        ),
        (Some("UNWORN"), Some("IN_STOCK"), Some("ACTIVE"))
    );
    assert_eq!(e1["title"], "Rolex Submariner Date 126610LN 2021 full set");
    assert_eq!(
        e1["provider"],
        json!({"id": e1["provider"]["id"], "name": "eBay", "slug": "ebay"})
    );
    assert_eq!(e1["delistedAt"], Value::Null);
    let created = e1["createdAt"].as_str().expect("createdAt");
    assert!(created.ends_with('Z') && created.contains('T'), "{created}");
    // Pictures are re-hosted under the media base, never the source URL; until fetched, 404.
    let pictures = e1["pictures"].as_array().expect("pictures");
    assert_eq!(pictures.len(), 2);
    for picture in pictures {
        let url = picture["url"].as_str().expect("url");
        assert_eq!(
            url,
            format!("/media/pictures/{}", picture["id"].as_str().expect("id"))
        );
        let (status, body) = app.get(url).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (404, Some("not_found")),
            "{body}"
        );
    }

    // The media base is the operator's (a CDN in production); a trailing slash is not doubled.
    let config = ApiConfig {
        media_base_url: "https://media.example/m/".to_owned(),
        ..ApiConfig::default()
    };
    let cdn = TestApp::build().config(config).start().await;
    let e1 = cdn.ok("/v1/listings/1").await;
    let first = &e1["pictures"][0];
    assert_eq!(
        first["url"],
        format!(
            "https://media.example/m/pictures/{}",
            first["id"].as_str().expect("id")
        )
    );

    // The seller's text stays verbatim; what cannot be mapped stays null.
    let e5 = app.ok("/v1/listings/5").await;
    assert_eq!(e5["scrapedReference"], "126610 LN");
    assert_eq!(e5["condition"], Value::Null);
    assert_eq!(
        (e5["price"].as_u64(), e5["priceUSD"].as_u64()),
        (Some(40000), None)
    );
}

#[tokio::test]
async fn one_listing_carries_its_model_or_null() {
    let app = TestApp::start().await;
    let e1 = app.ok("/v1/listings/1").await;
    assert_eq!(e1["providerCode"], "e1");
    assert_eq!(e1["model"]["slug"], "submariner-date-126610ln");
    assert_eq!(e1["model"]["listingCount"], 4);
    assert_eq!(e1["modelId"], e1["model"]["id"]);
    // e9 gives no reference: it is found in the title (`Ref.124270,`), brand included.
    assert_eq!(
        app.ok("/v1/listings/9").await["model"]["slug"],
        "explorer-124270"
    );
    for unmatched in ["7", "8", "11"] {
        let listing = app.ok(&format!("/v1/listings/{unmatched}")).await;
        assert_eq!(
            (&listing["model"], &listing["modelId"]),
            (&Value::Null, &Value::Null)
        );
    }
    for missing in ["999", "abc", "-1"] {
        let (status, body) = app.get(&format!("/v1/listings/{missing}")).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (404, Some("not_found")),
            "{body}"
        );
    }
}

#[tokio::test]
async fn every_filter_selects_what_it_names() {
    let app = TestApp::start().await;
    let model_id = app.ok("/v1/listings/1").await["modelId"]
        .as_str()
        .expect("model id")
        .to_owned();
    let cases = [
        ("", "e1 e2 e3 e4 e5 e6 e7 e8 e9 e10 e11"),
        ("brand=rolex", "e1 e2 e3 e4 e5 e9 e11"),
        (
            "brand=rolex&model=submariner-date-126610ln",
            "e1 e2 e3 e4 e5",
        ),
        (&format!("modelId={model_id}"), "e1 e2 e3 e4 e5"),
        ("brand=tudor", "e6"),
        ("provider=ebay&brand=omega", "e8 e10"),
        ("provider=chrono24", ""),
        ("condition=UNWORN", "e1 e3"),
        ("condition=NEW", "e7"),
        ("availability=SOLD", "e4"),
        ("availability=IN_STOCK", "e1 e2 e3"),
        ("availability=ON_REQUEST", "e6"),
        ("status=RESERVED", "e3"),
        ("status=ACTIVE", "e1 e2 e4 e5 e6 e7 e8 e9 e10 e11"),
        ("minPriceUSD=5000", "e1 e2 e3 e9 e11"),
        ("maxPriceUSD=3000", "e7 e8 e10"),
        ("minPriceUSD=3000&maxPriceUSD=4211", "e6 e10"),
        // A narrow range with a condition reads the (condition, price bucket) terms.
        ("condition=UNWORN&minPriceUSD=9000&maxPriceUSD=10000", "e1"),
        ("condition=UNWORN&minPriceUSD=11000&maxPriceUSD=20000", "e3"),
        ("condition=NEW&minPriceUSD=9000&maxPriceUSD=12000", ""),
        ("unmatched=true", "e7 e8 e11"),
        ("unmatched=false", "e1 e2 e3 e4 e5 e6 e7 e8 e9 e10 e11"),
        ("q=invicta", "e7"),
        ("q=126610-LN", "e1 e2 e3 e4 e5 e11"),
        ("q=124270", "e9"),
        ("q=seamaster&brand=omega", "e8 e10"),
    ];
    for (query, expected) in cases {
        let page = app
            .ok(&format!("/v1/listings?{query}&sort=oldest&pageSize=100"))
            .await;
        assert_eq!(codes(&page), expect_codes(expected), "{query}");
        assert_eq!(
            page["total"].as_u64(),
            Some(expect_codes(expected).len() as u64),
            "{query}"
        );
    }
}

#[tokio::test]
async fn sorts_order_by_first_seen_or_by_usd_price_with_unpriced_last() {
    let app = TestApp::start().await;
    let cases = [
        ("", "e11 e10 e9 e8 e7 e6 e5 e4 e3 e2 e1"),
        ("sort=newest", "e11 e10 e9 e8 e7 e6 e5 e4 e3 e2 e1"),
        // Relevance needs text: without `q` it is the default order.
        ("sort=relevance", "e11 e10 e9 e8 e7 e6 e5 e4 e3 e2 e1"),
        ("sort=oldest", "e1 e2 e3 e4 e5 e6 e7 e8 e9 e10 e11"),
        // 90, 2000, 3000, 4211 (CHF), 7000, 8000, 10000, 10127 (EUR), 15928 (GBP); then the
        // unpriced e4 and the AED-priced e5, by id.
        ("sort=price_asc", "e7 e8 e10 e6 e9 e11 e1 e2 e3 e4 e5"),
        ("sort=price_desc", "e3 e2 e1 e11 e9 e6 e10 e8 e7 e4 e5"),
    ];
    for (query, expected) in cases {
        let page = app.ok(&format!("/v1/listings?{query}&pageSize=100")).await;
        assert_eq!(codes(&page), expect_codes(expected), "{query}");
    }
    let second = app
        .ok("/v1/listings?sort=price_asc&pageSize=4&page=2")
        .await;
    assert_eq!(codes(&second), expect_codes("e9 e11 e1 e2"));
    assert_page(&second, 2, 4, 11);
}

#[tokio::test]
async fn currency_adds_converted_prices_through_the_usd_table() {
    let app = TestApp::start().await;
    let plain = app.ok("/v1/listings?pageSize=1").await;
    assert!(plain["data"][0].get("convertedPrice").is_none());
    assert!(plain["data"][0].get("convertedCurrency").is_none());

    let converted = |page: &Value, code: &str| {
        page["data"]
            .as_array()
            .expect("data")
            .iter()
            .find(|l| l["providerCode"] == code)
            .map(|l| (l["convertedPrice"].clone(), l["convertedCurrency"].clone()))
            .expect("listing")
    };
    let eur = app.ok("/v1/listings?currency=EUR&pageSize=100").await;
    // 10000 USD x 0.8887308923 = 8887.31 -> 8887 EUR; e2 is in EUR already: its own price.
    assert_eq!(converted(&eur, "e1"), (json!(8887), json!("EUR")));
    assert_eq!(converted(&eur, "e2"), (json!(9000), json!("EUR")));
    // No rate for AED, no price for e4: null, but the field is there.
    assert_eq!(converted(&eur, "e5"), (Value::Null, json!("EUR")));
    assert_eq!(converted(&eur, "e4"), (Value::Null, json!("EUR")));
    // USD is the identity; the code is accepted in any case.
    let usd = app.ok("/v1/listings?currency=usd&pageSize=100").await;
    assert_eq!(converted(&usd, "e2"), (json!(10127), json!("USD")));
    assert_eq!(converted(&usd, "e1"), (json!(10000), json!("USD")));
    let one = app.ok("/v1/listings/3?currency=GBP").await;
    assert_eq!(
        (&one["convertedPrice"], &one["convertedCurrency"]),
        (&json!(12000), &json!("GBP"))
    );

    let (status, body) = app.get("/v1/listings?currency=XYZ").await;
    assert_eq!(status, 400);
    let hint = body["hint"].as_str().expect("hint");
    assert!(
        hint.contains("EUR") && hint.contains("USD") && hint.contains("JPY"),
        "{hint}"
    );
}

#[tokio::test]
async fn stats_give_asking_price_figures_of_active_listings() {
    let app = TestApp::start().await;
    // ACTIVE listings of 126610LN: e1 (10000 USD), e2 (9000 EUR = 10127 USD), e4 (unpriced),
    // e5 (40000 AED, no rate); e3 is RESERVED. Median of 10000 and 10127: 10063.5 -> 10064.
    let stats = app
        .ok("/v1/listings/stats?brand=rolex&model=submariner-date-126610ln")
        .await;
    assert_eq!(
        stats,
        json!({"count": 4, "pricedCount": 3, "currency": "USD", "low": 10000, "median": 10064, "high": 10127})
    );
    // In EUR: e1 8887, e2 9000 (its own price); median (8887 + 9000) / 2 = 8943.5 -> 8944.
    let eur = app
        .ok("/v1/listings/stats?brand=rolex&model=submariner-date-126610ln&currency=EUR")
        .await;
    assert_eq!(
        eur,
        json!({"count": 4, "pricedCount": 3, "currency": "EUR", "low": 8887, "median": 8944, "high": 9000})
    );
    let none = app
        .ok("/v1/listings/stats?brand=rolex&model=gmt-master-ii-126710blro")
        .await;
    assert_eq!(
        none,
        json!({"count": 0, "pricedCount": 0, "currency": "USD", "low": null, "median": null, "high": null})
    );
    for (query, status) in [
        ("brand=rolex&model=nope", 404),
        ("brand=nope&model=submariner-date-126610ln", 404),
        ("model=submariner-date-126610ln", 400),
        ("brand=rolex", 400),
        (
            "brand=rolex&model=submariner-date-126610ln&currency=XYZ",
            400,
        ),
    ] {
        let (got, body) = app.get(&format!("/v1/listings/stats?{query}")).await;
        assert_eq!(got, status, "{query}: {body}");
    }
}

#[tokio::test]
async fn bad_parameters_are_json_errors_with_hints() {
    let app = TestApp::start().await;
    let cases = [
        ("status=DELISTED", 400, "includeDelisted=true"),
        ("model=submariner-date-126610ln", 400, "brand="),
        ("brand=nope", 404, "GET /v1/brands"),
        ("brand=rolex&model=nope", 404, "GET /v1/models?brand=rolex"),
        ("modelId=999999", 404, "GET /v1/models"),
        ("provider=nope", 404, "chrono24, ebay"),
        (
            "condition=MINT",
            400,
            "NEW, UNWORN, VERY_GOOD, GOOD, FAIR, POOR",
        ),
        ("availability=gone", 400, "IN_STOCK, ON_REQUEST, SOLD"),
        ("status=GONE", 400, "ACTIVE, RESERVED, DELISTED"),
        ("unmatched=yes", 400, "true or false"),
        ("includeDelisted=1", 400, "true or false"),
        ("minPriceUSD=1.5", 400, "integer"),
        ("maxPriceUSD=-3", 400, "integer"),
        ("minPriceUSD=10&maxPriceUSD=5", 400, "at most"),
        ("sort=cheap", 400, "newest, oldest, price_asc, price_desc"),
        ("unmatched=true&modelId=1", 400, "drop"),
        ("pageSize=101", 400, "pageSize"),
    ];
    for (query, status, hint) in cases {
        let code = if status == 400 {
            "invalid_request"
        } else {
            "not_found"
        };
        assert_error(&app, &format!("/v1/listings?{query}"), status, code, hint).await;
    }
}

#[tokio::test]
async fn a_revisit_reaches_the_listings_index_and_the_catalogue_counts() {
    let dir = tempfile::tempdir().expect("dir");
    let app = App::open(&DataDir::new(dir.path()), 16 << 20).expect("open");
    import(
        &app.store().write_turn(),
        &DirectorySource(test_catalogue()),
    )
    .expect("import");
    ingest_dataset_feeds(
        &app.store().write_turn(),
        &DirectorySource(test_feeds()),
        &SnapshotRules::default(),
    )
    .expect("feeds");
    app.prepare(false).expect("indexes");
    // The next snapshot lacks e10 (the only Seamaster listing) and e2 is cheaper.
    let feed = std::fs::read_to_string(test_feeds().join("listings/ebay.jsonl")).expect("feed");
    let next: Vec<String> = feed
        .lines()
        .filter(|line| !line.contains(r#""sourceId":"e10""#))
        .map(|line| line.replace(r#""price":9000"#, r#""price":8000"#))
        .collect();
    // Through the writer, as `watch-catalogue ingest` and the server's jobs run it: the
    // written listings and the recounted models are taken into the indexes, no rebuild.
    let report = app
        .writer()
        .run(|turn| {
            ingest(
                turn,
                "ebay",
                "next",
                next.join("\n").as_bytes(),
                &SnapshotRules::default(),
            )
        })
        .expect("ingest")
        .value;
    assert_eq!((report.delisted, report.refreshed), (1, 10));
    assert!(
        app.index_is_current().expect("current"),
        "both indexes caught up"
    );
    let app = TestApp::serving(app, dir, ApiConfig::default()).await;

    let visible = app.ok("/v1/listings?pageSize=100").await;
    assert!(!codes(&visible).contains(&"e10".to_owned()));
    assert_eq!(visible["total"], 10);
    assert_eq!(
        app.ok("/v1/listings?includeDelisted=true").await["total"],
        11
    );
    let delisted = app
        .ok("/v1/listings?status=DELISTED&includeDelisted=true")
        .await;
    assert_eq!(codes(&delisted), ["e10"]);
    assert_eq!(delisted["data"][0]["status"], "DELISTED");
    assert!(delisted["data"][0]["delistedAt"].is_string());
    // The refreshed price is what filters, sorts and stats see.
    let e2 = app.ok("/v1/listings/2").await;
    assert_eq!(
        (e2["price"].as_u64(), e2["priceUSD"].as_u64()),
        (Some(8000), Some(9002))
    );
    let stats = app
        .ok("/v1/listings/stats?brand=rolex&model=submariner-date-126610ln")
        .await;
    assert_eq!(
        (stats["low"].as_u64(), stats["high"].as_u64()),
        (Some(9002), Some(10000))
    );
    // The delisted listing left its model's count.
    let seamaster = app.ok("/v1/models?brand=omega&q=2254.50").await;
    assert_eq!(seamaster["data"][0]["listingCount"], 0);
    assert_eq!(
        app.ok("/v1/listings?brand=omega&model=seamaster-diver-300m-2254-50")
            .await["total"],
        0
    );
}

#[tokio::test]
async fn stats_served_again_follow_a_revisit_at_once() {
    let app = TestApp::start().await;
    let path = "/v1/listings/stats?brand=rolex&model=submariner-date-126610ln";
    let grouped = format!("{path}&groupBy=condition");
    let before = app.ok(path).await;
    assert_eq!(before["low"], 10000);
    assert_eq!(app.ok(path).await, before, "the same figures served again");
    // e2 is the one VERY_GOOD listing.
    assert_eq!(app.ok(&grouped).await["groups"][2]["low"], 10127);
    // e2 drops from 9000 EUR (10127 USD) to 8000 EUR (9002 USD): now the lowest.
    let feed = std::fs::read_to_string(test_feeds().join("listings/ebay.jsonl")).expect("feed");
    let next = feed.replace(r#""price":9000"#, r#""price":8000"#);
    let revisit = tokio::task::spawn_blocking({
        let app = app.app.clone();
        move || {
            app.writer()
                .run(|turn| {
                    ingest(
                        turn,
                        "ebay",
                        "next",
                        next.as_bytes(),
                        &SnapshotRules::default(),
                    )
                })
                .map(|_| ())
        }
    });
    revisit.await.expect("job").expect("ingest");
    let after = app.ok(path).await;
    assert_eq!(
        (after["low"].as_u64(), after["high"].as_u64()),
        (Some(9002), Some(10000))
    );
    let after = app.ok(&grouped).await;
    assert_eq!(after["groups"][2]["key"], "VERY_GOOD");
    assert_eq!(after["groups"][2]["low"], 9002);
}
