//! `GET /listings/stats/history` (issue 51, D-209): a model's periods by hand on the test feed
//! once folded, empty before, in ECB rates near or far; its parameters refused as they should
//! be and as `/listings/stats` refuses them; a link moving a listing's whole history; and the
//! real binary's folder, at start, after an offline ingest and after a job.

use crate::support::*;
use serde_json::{json, Value};
use watch_catalogue::domain::price_series::{day_of, format_day, Interval, Period};
use watch_catalogue::domain::Timestamp;
use watch_catalogue::jobs::series_folder::fold_logged;

const HISTORY: &str = "/v1/listings/stats/history?brand=rolex&model=submariner-date-126610ln";
const STATS: &str = "/v1/listings/stats?brand=rolex&model=submariner-date-126610ln";

/// Folds what the test app's writes logged, as the server's folder does.
fn fold(app: &TestApp) {
    fold_logged(app.app.job_context(), Timestamp::now(), &|| false).expect("fold");
}

/// A period of the body with no listing, converting at `rates` (2025-05-09, the test
/// catalogue's one ECB day).
fn empty_period(start: &str, end: &str, rates: &str) -> Value {
    json!({"start": start, "end": end, "activeCount": 0, "pricedCount": 0, "low": null,
        "median": null, "high": null, "listedCount": 0, "delistedCount": 0,
        "ratesDate": "2025-05-09", "rates": rates})
}

/// The body's `asOf`, as an instant (RFC 3339 texts leave trailing zeros of the milliseconds
/// out, so they do not compare as texts).
fn as_of(body: &Value) -> time::OffsetDateTime {
    let text = body["asOf"]
        .as_str()
        .unwrap_or_else(|| panic!("no asOf: {body}"));
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .expect("RFC 3339")
}

fn periods(body: &Value) -> &Vec<Value> {
    body["periods"].as_array().expect("periods")
}

/// The first day of the week `n` weeks before this one.
fn weeks_ago(n: u32) -> String {
    let this_week = Period::containing(Interval::Week, day_of(Timestamp::now()));
    format_day(this_week.back(n).start)
}

/// 126610LN's listings of the test feed, all first seen this week: e1 10,000 USD, e2 9,000
/// EUR, e3 12,000 GBP (RESERVED: still listed), e4 unpriced, e5 40,000 AED (a currency the
/// ECB does not quote: unpriced). The one ECB day, 9 May 2025, is far from this week: every
/// recent week converts at the rates in force, that day.
#[tokio::test]
async fn this_week_of_the_test_feed_by_hand_and_nothing_before_the_fold() {
    let app = TestApp::start().await;
    let before = app.ok(HISTORY).await;
    assert_eq!(before["asOf"], Value::Null, "{before}");
    assert_eq!(periods(&before).len(), 13, "a quarter of weeks by default");
    assert!(periods(&before)
        .iter()
        .all(|p| p["activeCount"] == 0 && p["rates"] == "current"));

    fold(&app);
    let body = app.ok(HISTORY).await;
    let today = format_day(day_of(Timestamp::now()));
    assert_eq!(
        (
            &body["brand"],
            &body["model"],
            &body["currency"],
            &body["interval"]
        ),
        (
            &json!("rolex"),
            &json!("submariner-date-126610ln"),
            &json!("USD"),
            &json!("week")
        )
    );
    assert_eq!(
        (body["from"].as_str(), body["to"].as_str()),
        (Some(weeks_ago(12).as_str()), Some(today.as_str()))
    );
    assert!(
        body["asOf"].as_str().is_some_and(|at| at.ends_with('Z')),
        "{body}"
    );
    let weeks = periods(&body);
    assert_eq!(weeks.len(), 13);
    assert_eq!(weeks[0]["start"], weeks_ago(12));
    for week in &weeks[..12] {
        let (start, end) = (
            week["start"].as_str().expect("start"),
            week["end"].as_str().expect("end"),
        );
        assert_eq!(week, &empty_period(start, end, "current"));
    }
    let this_week = &weeks[12];
    // In dollars: e1 its own, e2 9,000 EUR x 1.1252, e3 12,000 GBP / 0.84770 x 1.1252.
    assert_eq!(
        (
            this_week["activeCount"].as_u64(),
            this_week["pricedCount"].as_u64(),
            this_week["listedCount"].as_u64(),
            this_week["delistedCount"].as_u64()
        ),
        (Some(5), Some(3), Some(5), Some(0)),
        "{this_week}"
    );
    assert_eq!(
        (&this_week["low"], &this_week["median"], &this_week["high"]),
        (&json!(10000), &json!(10127), &json!(15928)),
        "{this_week}"
    );
    assert_eq!(
        (&this_week["ratesDate"], &this_week["rates"]),
        (&json!("2025-05-09"), &json!("current"))
    );
    // In euros, e2 is its own price.
    let in_euros = app.ok(&format!("{HISTORY}&currency=eur")).await;
    let this_week = &periods(&in_euros)[12];
    assert_eq!(in_euros["currency"], "EUR");
    assert_eq!(
        (&this_week["low"], &this_week["median"], &this_week["high"]),
        (&json!(8887), &json!(9000), &json!(14156))
    );
    // /listings/stats counts the ACTIVE ones alone, and AED as priced.
    let stats = app.ok(STATS).await;
    assert_eq!(
        (&stats["count"], &stats["pricedCount"]),
        (&json!(4), &json!(3))
    );
}

/// A week or a month of 2025, with no listing yet, present with zero counts: converting at its
/// own day when one is stored within a week before it, at the rates in force otherwise.
#[tokio::test]
async fn periods_without_listings_are_there_at_their_own_rates_or_the_current_ones() {
    let app = TestApp::start().await;
    fold(&app);
    let weeks = app
        .ok(&format!("{HISTORY}&from=2025-04-30&to=2025-05-21"))
        .await;
    assert_eq!(
        periods(&weeks),
        &vec![
            // No stored day on or before its Sunday.
            empty_period("2025-04-28", "2025-05-04", "current"),
            empty_period("2025-05-05", "2025-05-11", "period"),
            // Friday 9 May is three days before it.
            empty_period("2025-05-12", "2025-05-18", "period"),
            // Ten days: too far.
            empty_period("2025-05-19", "2025-05-25", "current"),
        ]
    );
    assert_eq!(
        (&weeks["from"], &weeks["to"]),
        (&json!("2025-04-30"), &json!("2025-05-21"))
    );
    let months = app
        .ok(&format!(
            "{HISTORY}&interval=month&from=2025-05-31&to=2025-06-01"
        ))
        .await;
    assert_eq!(
        periods(&months),
        &vec![
            empty_period("2025-05-01", "2025-05-31", "period"),
            // 9 May is more than a week before 1 June.
            empty_period("2025-06-01", "2025-06-30", "current"),
        ]
    );
    let a_day = app
        .ok(&format!(
            "{HISTORY}&interval=month&from=2025-05-09&to=2025-05-09"
        ))
        .await;
    assert_eq!(periods(&a_day).len(), 1);
}

#[tokio::test]
async fn bad_parameters_are_refused_and_the_model_is_resolved_as_the_stats_do() {
    let app = TestApp::start().await;
    for (query, hint) in [
        ("&interval=day", "interval is one of: week, month"),
        ("&interval=", "interval is one of: week, month"),
        ("&interval=WEEK", "interval is one of: week, month"),
        ("&from=2025-02-30", "from is a day such as 2025-05-09"),
        ("&from=yesterday", "from is a day such as 2025-05-09"),
        ("&to=2025-5-09", "to is a day such as 2025-05-09"),
        ("&to=9999-12-31", "leave `to` out for today"),
        ("&from=2025-05-09&to=2025-05-08", "on or before `to`"),
        ("&currency=XYZ", "currency is one of"),
    ] {
        assert_error(
            &app,
            &format!("{HISTORY}{query}"),
            400,
            "invalid_request",
            hint,
        )
        .await;
    }
    // Unknown brand and model, missing ones, a bad currency: the stats' errors.
    for query in [
        "?brand=nope&model=submariner-date-126610ln",
        "?brand=rolex&model=nope",
        "?brand=rolex",
        "?model=submariner-date-126610ln",
        "?brand=rolex&model=submariner-date-126610ln&currency=XYZ",
    ] {
        let (status, history) = app.get(&format!("/v1/listings/stats/history{query}")).await;
        let (expected, stats) = app.get(&format!("/v1/listings/stats{query}")).await;
        assert_eq!(status, expected, "{query}: {history}");
        assert_eq!(
            (&history["error"], &history["message"]),
            (&stats["error"], &stats["message"]),
            "{query}"
        );
    }
    let (status, body) = app
        .get("/v1/listings/stats/history?brand=rolex&model=nope")
        .await;
    assert_eq!((status, &body["error"]), (404, &json!("not_found")));
}

#[tokio::test]
async fn at_most_520_periods_are_answered() {
    let app = TestApp::start().await;
    let (status, body) = app.get(&format!("{HISTORY}&from={}", weeks_ago(519))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(periods(&body).len(), 520);
    let (status, body) = app.get(&format!("{HISTORY}&from={}", weeks_ago(520))).await;
    assert_eq!(status, 400, "{body}");
    let message = body["message"].as_str().expect("message");
    assert!(
        message.contains("521 weeks") && message.contains("at most 520 periods"),
        "{message}"
    );
    assert_eq!(
        body["hint"],
        "narrow `from` and `to`, or ask for interval=month"
    );
    let months = format!("{HISTORY}&interval=month&to=2025-01-01");
    let (status, _) = app.get(&format!("{months}&from=1981-10-01")).await;
    assert_eq!(status, 200, "520 months");
    let (status, body) = app.get(&format!("{months}&from=1981-09-30")).await;
    assert_eq!(status, 400, "521 months");
    assert_eq!(
        body["hint"], "narrow `from` and `to`",
        "months are the widest interval"
    );
}

/// A person links an unmatched listing to the model: its whole history moves with it.
#[tokio::test]
async fn a_link_moves_a_listings_whole_history_to_its_model() {
    let app = TestApp::build()
        .user("ana", watch_catalogue::domain::Role::Admin)
        .start()
        .await;
    let admin = app.session("ana").await;
    fold(&app);
    let before = app.ok(HISTORY).await;
    let unmatched = app.ok("/v1/listings?unmatched=true&pageSize=50").await;
    let e11 = (unmatched["data"].as_array().expect("data").iter())
        .find(|l| l["providerCode"] == "e11")
        .expect("e11 is unmatched");
    let model = app.ok("/v1/models/rolex/submariner-date-126610ln").await;
    let (status, answer) = admin
        .call(
            reqwest::Method::POST,
            "/v1/reconciliation/link",
            Some(json!({"listings": [e11["id"]], "model": model["id"]})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    fold(&app);
    let after = app.ok(HISTORY).await;
    let (was, is) = (&periods(&before)[12], &periods(&after)[12]);
    assert_eq!(
        is["activeCount"].as_u64(),
        was["activeCount"].as_u64().map(|n| n + 1)
    );
    assert_eq!(
        is["listedCount"].as_u64(),
        was["listedCount"].as_u64().map(|n| n + 1),
        "its first sighting too"
    );
    assert_eq!(
        is["pricedCount"].as_u64(),
        was["pricedCount"].as_u64().map(|n| n + 1)
    );
    assert!(as_of(&after) >= as_of(&before));
}

/// The real binary: the folder folds the bundled fixtures as `serve` starts, the log an
/// offline ingest leaves at the next start, and a job's after the job.
#[tokio::test]
async fn the_server_folds_at_start_after_an_offline_ingest_and_after_a_job() {
    let tudor = "/listings/stats/history?brand=tudor&model=black-bay-fifty-eight-79030n";
    let data = new_data_dir();
    crate::admin::add_user_through_the_binary(data.path(), "ana");
    let mut serve = ServeProcess::start(data.path());
    assert!(serve.has_logged("price series folded"), "{}", serve.log);
    let first = http_get(&serve.base, tudor);
    let this_week = |body: &Value| periods(body).last().expect("this week").clone();
    let listed = this_week(&first)["activeCount"].as_u64().expect("count");
    assert!(listed > 0, "{first}");
    assert_eq!(this_week(&first)["delistedCount"], 0);
    serve.stop();

    // chrono24's second snapshot delists two of them (CH24-66590249, CH24-33969448).
    let revisits = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/revisits");
    let second = revisits.join("chrono24-2.jsonl");
    let (ok, printed) = run_cli(
        data.path(),
        &[
            "ingest",
            "--provider",
            "chrono24",
            second.to_str().expect("path"),
        ],
        None,
        &[],
    );
    assert!(ok, "{printed}");
    let mut serve = ServeProcess::start(data.path());
    assert!(serve.has_logged("price series folded"), "{}", serve.log);
    let delisted = http_get(&serve.base, tudor);
    assert_eq!(this_week(&delisted)["delistedCount"], 2, "{delisted}");
    assert_eq!(
        this_week(&delisted)["activeCount"],
        listed,
        "active earlier in the week"
    );
    assert!(as_of(&delisted) > as_of(&first));

    // The third brings CH24-66590249 back, as a job of the running server.
    let client = reqwest::Client::new();
    let cookie = sign_in(&client, &serve.base, "ana").await;
    let third = std::fs::read(revisits.join("chrono24-3.jsonl")).expect("snapshot");
    let job: Value = client
        .post(format!("{}/admin/providers/chrono24/snapshot", serve.base))
        .header("cookie", &cookie)
        .body(third)
        .send()
        .await
        .expect("post")
        .json()
        .await
        .expect("job");
    // A fold after the one at start.
    assert!(
        serve.wait_for_log("price series folded").is_some(),
        "{job}\n{}",
        serve.log
    );
    let back = http_get(&serve.base, tudor);
    assert!(as_of(&back) > as_of(&delisted), "{back}");
    assert_eq!(
        this_week(&back)["delistedCount"],
        2,
        "a relisting is no new listing"
    );
    assert_eq!(
        this_week(&back)["listedCount"],
        this_week(&delisted)["listedCount"]
    );
    serve.stop();
}

/// `reindex --index series` folds every model offline, the log emptied.
#[test]
fn reindex_folds_every_model_offline() {
    let data = new_data_dir();
    let serve = ServeProcess::start(data.path());
    serve.stop();
    let (ok, printed) = run_cli(data.path(), &["reindex", "--index", "series"], None, &[]);
    assert!(ok, "{printed}");
    assert!(
        printed.contains("folded the price series of 440 models in "),
        "{printed}"
    );
    let (ok, printed) = run_cli(data.path(), &["reindex", "--index", "nope"], None, &[]);
    assert!(
        !ok && printed.contains("is not catalogue, listings, series or all"),
        "{printed}"
    );
}
