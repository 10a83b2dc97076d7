//! The reconciliation group through a real server: the groups of unmatched listings and their
//! filters, linking a group or listings to a model, creating and updating a model from a
//! group, every 400 and 404 (each changing nothing), references another model holds, a link
//! kept through re-ingests and re-matching, and the audit trail. The test feeds leave e7
//! (Invicta), e8 (Omega 9999) and e11 (Rolex, no reference) unmatched; `CHRONO24` adds more.

use crate::support::{feed, SessionClient, TestApp};
use reqwest::Method;
use serde_json::{json, Value};
use watch_catalogue::domain::{Role, Slug};
use watch_catalogue::jobs::matching::rematch_unmatched;

/// A snapshot of the second provider: two more claims of Omega 9999 (one spelled `99-99`), an
/// Omega whose reference is only in its title, a second Invicta, and a Rolex 16610LV, a
/// reference the catalogue lacks.
const CHRONO24: &str = r#"{"sourceId":"c1","url":"https://www.chrono24.com/c1","title":"Omega Seamaster Aqua Terra 9999 blue","brand":"Omega","reference":"9999","price":2500,"currency":"USD"}
{"sourceId":"c2","url":"https://www.chrono24.com/c2","title":"OMEGA Aqua Terra","brand":"OMEGA","reference":"99-99","price":1800,"currency":"USD"}
{"sourceId":"c3","url":"https://www.chrono24.com/c3","title":"Omega Seamaster Aqua Terra ref 9999","brand":"Omega","price":2100,"currency":"USD"}
{"sourceId":"c4","url":"https://www.chrono24.com/c4","title":"Invicta 8926OB automatic","brand":"INVICTA","reference":"8926OB","price":80,"currency":"USD"}
{"sourceId":"c5","url":"https://www.chrono24.com/c5","title":"Rolex Submariner 16610LV Kermit","brand":"Rolex","reference":"16610LV","price":12000,"currency":"USD"}"#;

/// The id of model `seamaster-diver-300m-2254-50` (Omega 2254.50) in the test catalogue.
const SEAMASTER: &str = "9";

async fn app() -> TestApp {
    let app = TestApp::build().user("ana", Role::Admin).start().await;
    feed(&app, "chrono24", CHRONO24);
    app
}

/// Our id of the listing `code` of `provider`.
fn id_of(app: &TestApp, provider: &str, code: &str) -> String {
    let store = &app.app.store();
    let provider = store
        .listings()
        .provider_by_slug(&Slug::parse(provider).expect("slug"))
        .expect("read")
        .expect("provider");
    store
        .listings()
        .listing_by_source(provider.id, code)
        .expect("read")
        .expect("listing")
        .id
        .to_string()
}

async fn post(admin: &SessionClient<'_>, path: &str, body: Value) -> (u16, Value) {
    admin.call(Method::POST, path, Some(body)).await
}

/// The group whose reference is `reference` (normalised), or whose brand is `brand` without a
/// reference when `reference` is empty.
async fn group(admin: &SessionClient<'_>, brand: &str, reference: &str) -> Value {
    let groups = admin.ok("/v1/reconciliation?pageSize=100").await;
    groups["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|g| {
            let named = g["brand"]["slug"] == brand
                || g["brand"].as_str().map(str::to_lowercase).as_deref() == Some(brand);
            let reference = (!reference.is_empty()).then_some(reference);
            named && g["reference"].as_str() == reference
        })
        .cloned()
        .unwrap_or_else(|| panic!("no group {brand} {reference}: {groups}"))
}

fn ids(value: &Value) -> Vec<String> {
    let mut ids: Vec<String> = value
        .as_array()
        .expect("array")
        .iter()
        .map(|v| v.as_str().expect("id").to_owned())
        .collect();
    ids.sort();
    ids
}

/// The list item of model `id`, with its `listingCount`.
async fn model_item(app: &TestApp, id: &str) -> Value {
    app.ok(&format!("/v1/models?id={id}")).await["data"][0].clone()
}

async fn unmatched_count(admin: &SessionClient<'_>) -> u64 {
    admin.ok("/v1/admin/stats").await["unmatchedListings"]
        .as_u64()
        .expect("count")
}

/// The ids of the unmatched listings the back office lists.
async fn unmatched_ids(admin: &SessionClient<'_>) -> Vec<String> {
    let page = admin.ok("/v1/admin/unmatched-listings?pageSize=100").await;
    let data: Vec<Value> = page["data"].as_array().expect("data").to_vec();
    ids(&Value::from(
        data.iter().map(|l| l["id"].clone()).collect::<Vec<_>>(),
    ))
}

/// Everything a refused request must leave as it was: the store generation, the counts, the
/// groups, the listings, the audit trail.
async fn state(app: &TestApp, admin: &SessionClient<'_>) -> (u64, Vec<Value>) {
    let generation = app.app.store().generation().expect("generation").0;
    let mut reads = Vec::new();
    for path in [
        "/v1/admin/stats",
        "/v1/reconciliation?pageSize=100",
        "/v1/listings?pageSize=100",
        "/v1/models?pageSize=100",
        "/v1/admin/audit?pageSize=100",
    ] {
        reads.push(admin.ok(path).await);
    }
    (generation, reads)
}

#[tokio::test]
async fn groups_gather_unmatched_listings_by_the_identity_their_sellers_claim() {
    let app = app().await;
    let admin = app.session("ana").await;
    let page = admin.ok("/v1/reconciliation").await;
    let counts: Vec<u64> = page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|g| g["listingCount"].as_u64().expect("count"))
        .collect();
    assert_eq!(counts, [3, 2, 1, 1, 1], "largest first: {page}");
    assert_eq!(
        page["total"].as_u64(),
        Some(5),
        "Omega 9999, Invicta, Rolex without reference, Omega without, Rolex 16610LV"
    );

    let omega = group(&admin, "omega", "9999").await;
    assert_eq!(omega["id"].as_str().map(str::len), Some(16));
    assert_eq!(
        omega["brand"],
        json!({"id": "3", "name": "Omega", "slug": "omega"})
    );
    assert_eq!(
        omega["spellings"],
        json!(["9999", "99-99"]),
        "most used first"
    );
    assert_eq!(omega["reason"], "unknownReference");
    assert_eq!(
        omega["providers"],
        json!([
            {"id": "1", "name": "Chrono24", "slug": "chrono24", "listingCount": 2},
            {"id": "2", "name": "eBay", "slug": "ebay", "listingCount": 1}
        ])
    );
    assert_eq!(omega["priceRangeUSD"], json!({"low": 1800, "high": 2500}));
    assert_eq!(omega["exampleTitles"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        omega["candidates"][0]["slug"],
        "seamaster-diver-300m-2254-50"
    );
    assert_eq!(omega["candidates"][0]["signal"], "name");

    let invicta = group(&admin, "invicta", "8926ob").await;
    assert_eq!(invicta["reason"], "unknownBrand");
    assert!(invicta["brand"].is_string(), "the seller's text: {invicta}");
    assert_eq!(invicta["candidates"], json!([]), "no brand, no candidates");

    let kermit = group(&admin, "rolex", "16610lv").await;
    let first = &kermit["candidates"][0];
    assert_eq!(
        (&first["slug"], &first["signal"]),
        (&json!("submariner-date-16610"), &json!("baseReference")),
        "{kermit}"
    );
    assert!(first["score"].as_f64().is_some_and(|s| s > 0.7 && s < 1.0));
    let rolex = group(&admin, "rolex", "").await;
    assert_eq!(rolex["reason"], "ambiguous");
    assert!(rolex["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .all(|c| c["signal"] == "name"));

    for (query, expected) in [
        ("brand=omega", 2),
        ("provider=chrono24", 4),
        ("provider=ebay", 3),
        ("reason=unknownBrand", 1),
        ("reason=noReference", 1),
        ("provider=chrono24&reason=unknownReference", 2),
        ("provider=ebay&reason=unknownBrand", 1),
        ("brand=omega&reason=unknownReference", 1),
        ("q=aqua%20terra", 2),
        ("q=99-9", 1),
        ("q=kermit&brand=rolex", 1),
        ("q=nothing-like-it", 0),
        // The start of a brand text inside its word, and of a reference too short to be
        // searched as one: found by the group's texts alone (D-240).
        ("q=invi", 1),
        ("q=89", 1),
    ] {
        let page = admin.ok(&format!("/v1/reconciliation?{query}")).await;
        assert_eq!(page["total"], expected, "{query}: {page}");
    }
    let second = admin.ok("/v1/reconciliation?pageSize=1&page=2").await;
    assert_eq!(second["data"][0]["id"], invicta["id"]);
    assert_eq!(second["totalPages"], 5);
    for (query, status) in [
        ("reason=nope", 400),
        ("pageSize=0", 400),
        ("brand=nope", 404),
        ("provider=nope", 404),
    ] {
        let (got, body) = admin.get(&format!("/v1/reconciliation?{query}")).await;
        assert_eq!(got, status, "{query}: {body}");
    }
}

/// A text finds the groups of unmatched listings alone: the matched Submariners (e1–e5) count
/// for no group, nor does a listing once delisted (c5, Kermit), though each still holds the words.
#[tokio::test]
async fn a_text_finds_no_group_through_matched_or_delisted_listings() {
    let app = app().await;
    let admin = app.session("ana").await;
    let total = |text: &'static str| {
        let admin = &admin;
        async move { admin.ok(&format!("/v1/reconciliation?q={text}")).await["total"].clone() }
    };
    // e11 (Rolex, no reference) and c5 (Rolex 16610LV).
    assert_eq!(total("submariner").await, 2);
    assert_eq!(total("kermit").await, 1);
    let without_kermit: Vec<&str> = CHRONO24.lines().filter(|l| !l.contains("\"c5\"")).collect();
    feed(&app, "chrono24", &without_kermit.join("\n"));
    assert_eq!(total("submariner").await, 1);
    assert_eq!(total("kermit").await, 0);
}

#[tokio::test]
async fn linking_a_group_shows_everywhere_at_once_and_is_audited() {
    let app = app().await;
    let admin = app.session("ana").await;
    let omega = group(&admin, "omega", "9999").await;
    let unmatched = unmatched_count(&admin).await;
    let groups = admin.ok("/v1/reconciliation").await["total"].clone();
    assert_eq!(model_item(&app, SEAMASTER).await["listingCount"], 1);

    let body = json!({"group": omega["id"], "model": SEAMASTER});
    let (status, done) = post(&admin, "/v1/reconciliation/link", body).await;
    assert_eq!(status, 200, "{done}");
    let group_listings = vec![
        id_of(&app, "chrono24", "c1"),
        id_of(&app, "chrono24", "c2"),
        id_of(&app, "ebay", "e8"),
    ];
    let mut expected = group_listings.clone();
    expected.sort();
    assert_eq!(ids(&done["linkedListings"]), expected);
    assert_eq!(done["matchedListings"], json!([]));
    assert_eq!(done["model"]["listingCount"], 4);

    for id in &group_listings {
        let listing = app.ok(&format!("/v1/listings/{id}")).await;
        assert_eq!(listing["modelId"], SEAMASTER, "{listing}");
        assert_eq!(listing["model"]["slug"], "seamaster-diver-300m-2254-50");
    }
    assert_eq!(model_item(&app, SEAMASTER).await["listingCount"], 4);
    let scoped = app
        .ok(&format!("/v1/listings?modelId={SEAMASTER}&pageSize=100"))
        .await;
    assert_eq!(scoped["total"], 4);
    assert_eq!(unmatched_count(&admin).await, unmatched - 3);
    let still = unmatched_ids(&admin).await;
    assert!(group_listings.iter().all(|id| !still.contains(id)));
    let after = admin.ok("/v1/reconciliation").await["total"].clone();
    assert_eq!(after.as_u64(), groups.as_u64().map(|g| g - 1));

    let audit = admin.ok("/v1/admin/audit?action=reconciliation.link").await;
    let entry = &audit["data"][0];
    assert_eq!(entry["user"], "ana");
    let targets = entry["targets"].as_array().expect("targets");
    assert_eq!(targets[0], format!("model:{SEAMASTER}"));
    for id in &group_listings {
        assert!(targets.contains(&json!(format!("listing:{id}"))), "{entry}");
    }
    assert!(entry["detail"]
        .as_str()
        .is_some_and(|d| d.contains(omega["id"].as_str().expect("id"))));
}

/// The candidates of the group `brand` `reference` on the first page: (slug, signal) each.
async fn candidates(
    admin: &SessionClient<'_>,
    brand: &str,
    reference: &str,
) -> Vec<(Value, Value)> {
    group(admin, brand, reference).await["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| (c["slug"].clone(), c["signal"].clone()))
        .collect()
}

#[tokio::test]
async fn candidates_are_kept_through_links_and_found_again_once_a_model_is_written() {
    let app = app().await;
    let admin = app.session("ana").await;
    let before = candidates(&admin, "rolex", "16610lv").await;
    assert_eq!(
        before[0],
        (json!("submariner-date-16610"), json!("baseReference"))
    );

    // A link moves listing counts only: the models' words, and so the candidates kept, stand.
    let edition = app.app.index().model_text_edition();
    let omega = group(&admin, "omega", "9999").await;
    let body = json!({"group": omega["id"], "model": SEAMASTER});
    assert_eq!(post(&admin, "/v1/reconciliation/link", body).await.0, 200);
    assert_eq!(app.app.index().model_text_edition(), edition);
    assert_eq!(candidates(&admin, "rolex", "16610lv").await, before);

    // A model the group's reference begins with, created from another group: the kept
    // candidates are of an older edition, and the new model is one of them now.
    let invicta = group(&admin, "invicta", "8926ob").await;
    let fields = json!({"brand": "rolex", "series": "submariner", "name": "Submariner Green", "referenceNumber": "16610LV-97200"});
    let body = json!({"group": invicta["id"], "fields": fields});
    let (status, done) = post(&admin, "/v1/reconciliation/models", body).await;
    assert_eq!(status, 200, "{done}");
    assert!(app.app.index().model_text_edition() > edition);
    let created = &done["model"]["slug"];
    assert!(!before.iter().any(|(slug, _)| slug == created));
    let after = candidates(&admin, "rolex", "16610lv").await;
    assert!(after.iter().any(|(slug, _)| slug == created), "{after:?}");
}

#[tokio::test]
async fn listings_are_linked_by_id_matched_or_not_with_every_count_moved() {
    let app = app().await;
    let admin = app.session("ana").await;
    // e7 (Invicta, an unknown brand), and e1 (matched to the 126610LN, model 1) moved to the
    // 126610LV (model 2): a person corrects a match.
    let (before_1, before_2) = (model_item(&app, "1").await, model_item(&app, "2").await);
    let body = json!({"listings": ["7", "1", "7"], "model": "2"});
    let (status, done) = post(&admin, "/v1/reconciliation/link", body).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(ids(&done["linkedListings"]), ["1", "7"], "each once");
    let count = |item: &Value| item["listingCount"].as_u64().expect("count");
    assert_eq!(count(&model_item(&app, "1").await), count(&before_1) - 1);
    assert_eq!(count(&model_item(&app, "2").await), count(&before_2) + 2);
    let e7 = app.ok("/v1/listings/7").await;
    assert_eq!(e7["modelId"], "2");
    let rolex = app.ok("/v1/listings?brand=rolex&pageSize=100").await;
    assert!(
        rolex["data"]
            .as_array()
            .expect("data")
            .iter()
            .any(|l| l["id"] == "7"),
        "a listing linked to a Rolex is a Rolex listing"
    );
    assert!(!unmatched_ids(&admin).await.contains(&"7".to_owned()));
}

#[tokio::test]
async fn a_link_survives_reingest_and_rematching_until_the_sellers_reference_changes() {
    let app = TestApp::build().user("ana", Role::Admin).start().await;
    let admin = app.session("ana").await;
    let body = json!({"listings": ["8"], "model": SEAMASTER});
    assert_eq!(post(&admin, "/v1/reconciliation/link", body).await.0, 200);

    let snapshot =
        std::fs::read_to_string(crate::support::test_feeds().join("listings/ebay.jsonl"))
            .expect("the test feed");
    let e8 = r#""sourceId":"e8","url":"https://www.ebay.com/itm/e8","title":"Omega Seamaster mystery reference","brand":"Omega","reference":"9999","price":2000"#;
    assert!(snapshot.contains(e8), "the test feed's e8");
    // The same snapshot with another price and title: the seller still claims Omega 9999.
    let repriced = snapshot.replace(
        e8,
        r#""sourceId":"e8","url":"https://www.ebay.com/itm/e8","title":"Omega Seamaster, price cut","brand":"Omega","reference":"9999","price":1700"#,
    );
    feed(&app, "ebay", &repriced);
    let listing = app.ok("/v1/listings/8").await;
    assert_eq!(
        (&listing["modelId"], &listing["price"]),
        (&json!(SEAMASTER), &json!(1700))
    );
    let rematched = app.app.writer().run(rematch_unmatched).expect("match");
    assert_eq!(rematched.value.matched, 0);
    assert_eq!(app.ok("/v1/listings/8").await["modelId"], SEAMASTER);
    assert_eq!(model_item(&app, SEAMASTER).await["listingCount"], 2);

    // The seller now claims another reference: matching decides again, and finds nothing.
    feed(
        &app,
        "ebay",
        &repriced.replace(r#""reference":"9999""#, r#""reference":"9998""#),
    );
    let listing = app.ok("/v1/listings/8").await;
    assert_eq!(listing["modelId"], Value::Null);
    let unmatched = admin
        .ok("/v1/admin/unmatched-listings?reason=unknownReference")
        .await;
    assert!(unmatched["data"]
        .as_array()
        .expect("data")
        .iter()
        .any(|l| l["id"] == "8"));
    assert_eq!(model_item(&app, SEAMASTER).await["listingCount"], 1);
}

#[tokio::test]
async fn a_model_created_from_a_group_takes_its_listings_and_every_other_that_now_matches() {
    let app = app().await;
    let admin = app.session("ana").await;
    let omega = group(&admin, "omega", "9999").await;
    let stats = admin.ok("/v1/admin/stats").await;
    let fields = json!({"series": "seamaster", "name": "Seamaster Aqua Terra", "diameter": 38.5});
    let body = json!({"group": omega["id"], "fields": fields});
    let (status, done) = post(&admin, "/v1/reconciliation/models", body).await;
    assert_eq!(status, 200, "{done}");
    let model = &done["model"];
    assert_eq!(
        model["slug"], "seamaster-aqua-terra-9999",
        "name + reference"
    );
    assert_eq!(
        model["referenceNumber"], "9999",
        "the group's most used spelling"
    );
    // c3 named 9999 only in its title: it matches on its own now.
    let c3 = id_of(&app, "chrono24", "c3");
    assert_eq!(ids(&done["matchedListings"]), std::slice::from_ref(&c3));
    assert_eq!(done["linkedListings"].as_array().map(Vec::len), Some(3));
    assert_eq!(model["listingCount"], 4);
    let id = model["id"].as_str().expect("id").to_owned();

    let page = app.ok("/v1/models/omega/seamaster-aqua-terra-9999").await;
    assert_eq!(page["diameter"], 38.5);
    assert_eq!(page["series"]["slug"], "seamaster");
    assert_eq!(page["alternateReferences"], json!([]));
    assert_eq!(model_item(&app, &id).await["listingCount"], 4);
    assert_eq!(
        app.ok("/v1/models?q=99-99").await["data"][0]["id"],
        id.as_str()
    );
    assert_eq!(app.ok("/v1/brands/omega").await["modelCount"], 3);
    let scoped = app.ok(&format!("/v1/listings?modelId={id}")).await;
    assert_eq!(scoped["total"], 4);
    assert_eq!(
        app.ok(&format!("/v1/listings/{c3}")).await["modelId"],
        id.as_str()
    );
    let now = admin.ok("/v1/admin/stats").await;
    let count = |stats: &Value, name: &str| stats[name].as_u64().expect("count");
    assert_eq!(count(&now, "models"), count(&stats, "models") + 1);
    assert_eq!(
        count(&now, "unmatchedListings"),
        count(&stats, "unmatchedListings") - 4
    );
    assert_eq!(
        admin.ok("/v1/reconciliation").await["total"],
        3,
        "both Omega groups are resolved"
    );

    // A later listing of that reference matches on its own.
    let later = format!(
        "{CHRONO24}\n{}",
        r#"{"sourceId":"c6","url":"https://www.chrono24.com/c6","title":"Omega Aqua Terra","brand":"Omega","reference":"9999","price":2600,"currency":"USD"}"#
    );
    feed(&app, "chrono24", &later);
    let c6 = id_of(&app, "chrono24", "c6");
    assert_eq!(
        app.ok(&format!("/v1/listings/{c6}")).await["modelId"],
        id.as_str()
    );

    // A derived slug another model has is numbered; the group's reference joins the others.
    let invicta = group(&admin, "invicta", "8926ob").await;
    let fields = json!({"brand": "omega", "series": "seamaster", "name": "Seamaster Aqua", "referenceNumber": "Terra 9999"});
    let body = json!({"group": invicta["id"], "fields": fields});
    let (status, done) = post(&admin, "/v1/reconciliation/models", body).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["model"]["slug"], "seamaster-aqua-terra-9999-2");
    let page = app.ok("/v1/models/omega/seamaster-aqua-terra-9999-2").await;
    assert_eq!(page["alternateReferences"], json!(["8926OB"]));

    let audit = admin
        .ok("/v1/admin/audit?action=reconciliation.create")
        .await;
    assert_eq!(audit["total"], 2);
    let entry = &audit["data"][1];
    assert_eq!(entry["user"], "ana");
    assert!(entry["targets"]
        .as_array()
        .expect("targets")
        .contains(&json!(format!("listing:{c3}"))));
}

#[tokio::test]
async fn a_model_made_from_an_unknown_brands_group_learns_its_brand_text_and_the_next_snapshot_matches(
) {
    let app = app().await;
    let admin = app.session("ana").await;
    let invicta = group(&admin, "invicta", "8926ob").await;
    assert_eq!(invicta["reason"], "unknownBrand");
    let fields = json!({"brand": "omega", "series": "seamaster", "name": "Diver"});
    let body = json!({"group": invicta["id"], "fields": fields});
    let (status, done) = post(&admin, "/v1/reconciliation/models", body).await;
    assert_eq!(status, 200, "{done}");
    let alias = done["learnt"]["brandAlias"]
        .as_str()
        .expect("an alias learnt");
    assert_eq!(alias.to_lowercase(), "invicta", "{done}");
    assert_eq!(done["learnt"]["reference"], "8926OB");
    let model = done["model"]["id"].as_str().expect("id").to_owned();

    // The next snapshot's new listing of that brand text matches the model on its own.
    let later = format!(
        "{CHRONO24}\n{}",
        r#"{"sourceId":"c9","url":"https://www.chrono24.com/c9","title":"Invicta Pro Diver","brand":"Invicta","reference":"8926-OB","price":90,"currency":"USD"}"#
    );
    feed(&app, "chrono24", &later);
    let c9 = id_of(&app, "chrono24", "c9");
    let listing = app.ok(&format!("/v1/listings/{c9}")).await;
    assert_eq!(listing["modelId"], model.as_str(), "{listing}");

    let audit = admin
        .ok("/v1/admin/audit?action=reconciliation.create")
        .await;
    let entry = &audit["data"][0];
    assert!(
        entry["targets"]
            .as_array()
            .expect("targets")
            .contains(&json!("brand:3")),
        "{entry}"
    );
    assert!(
        entry["detail"]
            .as_str()
            .expect("detail")
            .contains("brand alias"),
        "{entry}"
    );

    // A link teaches nothing; a create from a group of a known brand learns no alias.
    let omega = group(&admin, "omega", "9999").await;
    let fields = json!({"series": "seamaster", "name": "Seamaster Aqua Terra"});
    let body = json!({"group": omega["id"], "fields": fields});
    let (status, done) = post(&admin, "/v1/reconciliation/models", body).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        done["learnt"],
        json!({"brandAlias": null, "reference": "9999"})
    );
}

#[tokio::test]
async fn a_model_updated_from_a_group_takes_its_reference_and_matches_later_listings() {
    let app = app().await;
    let admin = app.session("ana").await;
    let omega = group(&admin, "omega", "9999").await;
    let fields = json!({"description": "Also sold as the 9999."});
    let body = json!({"group": omega["id"], "model": SEAMASTER, "fields": fields});
    let (status, done) = post(&admin, "/v1/reconciliation/models/update", body).await;
    assert_eq!(status, 200, "{done}");
    let c3 = id_of(&app, "chrono24", "c3");
    assert_eq!(ids(&done["matchedListings"]), [c3]);
    assert_eq!(
        done["model"]["listingCount"], 5,
        "e10, the group's three, c3"
    );

    let page = app
        .ok("/v1/models/omega/seamaster-diver-300m-2254-50")
        .await;
    assert_eq!(page["alternateReferences"], json!(["9999"]));
    assert_eq!(page["description"], "Also sold as the 9999.");
    assert_eq!(
        page["referenceNumber"], "2254.50",
        "fields not given are kept"
    );
    assert_eq!(
        app.ok("/v1/models?q=9999").await["data"][0]["id"],
        SEAMASTER
    );

    let later = format!(
        "{CHRONO24}\n{}",
        r#"{"sourceId":"c6","url":"https://www.chrono24.com/c6","title":"Omega","brand":"Omega","reference":"9999","price":2600,"currency":"USD"}"#
    );
    feed(&app, "chrono24", &later);
    let c6 = id_of(&app, "chrono24", "c6");
    assert_eq!(
        app.ok(&format!("/v1/listings/{c6}")).await["modelId"],
        SEAMASTER
    );
    let audit = admin
        .ok("/v1/admin/audit?action=reconciliation.update&user=ana")
        .await;
    assert_eq!(audit["total"], 1);
    assert_eq!(audit["data"][0]["targets"][0], format!("model:{SEAMASTER}"));
}

/// Sends each request, expecting `status` and a message naming `names`, and checks that
/// nothing changed.
async fn refused(
    app: &TestApp,
    admin: &SessionClient<'_>,
    status: u16,
    cases: Vec<(&str, Value, &str)>,
) {
    let before = state(app, admin).await;
    for (path, body, names) in cases {
        let (got, error) = post(admin, path, body.clone()).await;
        assert_eq!(got, status, "{path} {body}: {error}");
        let code = if status == 400 {
            "invalid_request"
        } else {
            "not_found"
        };
        assert_eq!(error["error"], code, "{error}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(names),
            "{path} {body}: {message:?} lacks {names:?}"
        );
        assert!(error["hint"].is_string(), "{error}");
    }
    assert!(
        before == state(app, admin).await,
        "a refused write changed nothing"
    );
}

#[tokio::test]
async fn every_bad_body_is_a_400_naming_its_field_and_changes_nothing() {
    let app = app().await;
    let admin = app.session("ana").await;
    let omega = group(&admin, "omega", "9999").await["id"].clone();
    let invicta = group(&admin, "invicta", "8926ob").await["id"].clone();
    let link = "/v1/reconciliation/link";
    let create = "/v1/reconciliation/models";
    let update = "/v1/reconciliation/models/update";
    let named = |extra: Value| {
        let mut fields = json!({"series": "seamaster", "name": "Aqua Terra"});
        if let (Some(fields), Value::Object(extra)) = (fields.as_object_mut(), extra) {
            fields.extend(extra);
        }
        fields
    };
    let cases = vec![
        (link, json!({"model": SEAMASTER}), "`group`"),
        (
            link,
            json!({"group": omega, "listings": ["8"], "model": SEAMASTER}),
            "`listings`",
        ),
        (
            link,
            json!({"listings": [], "model": SEAMASTER}),
            "`listings`",
        ),
        (link, json!({"group": omega}), "model"),
        (link, json!({"group": 5, "model": SEAMASTER}), "group"),
        (
            link,
            json!({"group": omega, "model": SEAMASTER, "extra": 1}),
            "extra",
        ),
        (create, json!({"group": omega}), "fields"),
        (
            create,
            json!({"group": omega, "fields": {"name": "X"}}),
            "fields.series",
        ),
        (
            create,
            json!({"group": invicta, "fields": named(json!({}))}),
            "fields.brand",
        ),
        (
            update,
            json!({"group": omega, "model": SEAMASTER, "fields": {"brand": "seiko"}}),
            "fields.brand",
        ),
        (
            update,
            json!({"group": omega, "model": SEAMASTER, "fields": {"referenceNumber": "--"}}),
            "fields.referenceNumber",
        ),
        (
            update,
            json!({"group": omega, "model": SEAMASTER, "fields": {"name": null}}),
            "fields.name",
        ),
        (update, json!({"group": omega, "model": "1"}), "`group`"),
    ];
    // One model field wrong at a time, the rest of the fields fine.
    let wrong_fields = [
        (json!({"series": "nope"}), "fields.series"),
        (json!({"colour": "red"}), "fields.colour"),
        (json!({"diameter": "big"}), "fields.diameter"),
        (json!({"slug": "Bad Slug"}), "fields.slug"),
        (json!({"name": " "}), "fields.name"),
        (json!({"brand": "rolex"}), "fields.brand"),
        (
            json!({"pictures": [{"url": "https://x/y.jpg", "type": "TOP"}]}),
            "fields.pictures",
        ),
        (
            json!({"pictures": [{"url": "https://x/y.jpg", "type": "FRONT", "cropedUrl": "z"}]}),
            "fields.pictures[0].cropedUrl",
        ),
    ];
    let cases = cases.into_iter().chain(wrong_fields.map(|(wrong, names)| {
        (
            create,
            json!({"group": omega, "fields": named(wrong)}),
            names,
        )
    }));
    refused(&app, &admin, 400, cases.collect()).await;
    // Read as a JSON value, a field given twice would be its last value, without a word.
    let before = state(&app, &admin).await;
    let twice = format!(
        r#"{{"group": {omega}, "fields": {{"series": "seamaster", "name": "X", "name": "Aqua Terra"}}}}"#
    );
    let response = app
        .send(
            admin
                .request(Method::POST, create)
                .header("content-type", "application/json")
                .body(twice),
        )
        .await;
    assert_eq!(response.status().as_u16(), 400);
    let body: Value = response.json().await.expect("json");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("`fields.name` twice"), "{body}");
    assert!(before == state(&app, &admin).await, "nothing changed");
    let response = app
        .send(
            admin
                .request(Method::POST, link)
                .header("content-type", "application/json")
                .body("{not json"),
        )
        .await;
    assert_eq!(response.status().as_u16(), 400);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"], "invalid_request");
}

#[tokio::test]
async fn a_reference_another_model_of_the_brand_has_is_a_400_naming_that_model() {
    let app = app().await;
    let admin = app.session("ana").await;
    let omega = group(&admin, "omega", "9999").await["id"].clone();
    let cases = vec![
        (
            "/v1/reconciliation/models",
            json!({"group": omega, "fields": {"series": "seamaster", "name": "X", "referenceNumber": "2254-50"}}),
            "`fields.referenceNumber`: reference `2254-50` belongs to model 9 (`seamaster-diver-300m-2254-50`",
        ),
        (
            "/v1/reconciliation/models",
            json!({"group": omega, "fields": {"series": "speedmaster", "name": "X", "alternateReferences": ["311.32.42.30.04.003"]}}),
            "`fields.alternateReferences`: reference `311.32.42.30.04.003` belongs to model 10 (`speedmaster-silver-snoopy-award`",
        ),
        (
            "/v1/reconciliation/models/update",
            json!({"group": omega, "model": "10", "fields": {"alternateReferences": ["2254.50"]}}),
            "belongs to model 9 (`seamaster-diver-300m-2254-50`",
        ),
    ];
    refused(&app, &admin, 400, cases).await;
    let rolex = group(&admin, "rolex", "16610lv").await["id"].clone();
    let body =
        json!({"group": rolex, "model": "3", "fields": {"alternateReferences": ["126610-LV"]}});
    let (status, error) = post(&admin, "/v1/reconciliation/models/update", body).await;
    assert_eq!(status, 400);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("model 2 (`submariner-date-126610lv`")),
        "{error}"
    );
}

#[tokio::test]
async fn unknown_groups_listings_and_models_are_404_and_change_nothing() {
    let app = app().await;
    let admin = app.session("ana").await;
    let omega = group(&admin, "omega", "9999").await["id"].clone();
    let fields = json!({"series": "seamaster", "name": "Aqua Terra"});
    let cases = vec![
        (
            "/v1/reconciliation/link",
            json!({"group": "0000000000000000", "model": SEAMASTER}),
            "group of unmatched listings with id `0000000000000000`",
        ),
        (
            "/v1/reconciliation/link",
            json!({"listings": ["8", "999"], "model": SEAMASTER}),
            "listing with id `999`",
        ),
        (
            "/v1/reconciliation/link",
            json!({"listings": ["abc"], "model": SEAMASTER}),
            "listing with id `abc`",
        ),
        (
            "/v1/reconciliation/link",
            json!({"group": omega, "model": "999"}),
            "model with id `999`",
        ),
        (
            "/v1/reconciliation/link",
            json!({"group": omega, "model": "x"}),
            "model with id `x`",
        ),
        (
            "/v1/reconciliation/models",
            json!({"group": "nope", "fields": fields}),
            "group of unmatched listings with id `nope`",
        ),
        (
            "/v1/reconciliation/models/update",
            json!({"group": omega, "model": "999"}),
            "model with id `999`",
        ),
        (
            "/v1/reconciliation/models/update",
            json!({"group": "nope", "model": SEAMASTER}),
            "group of unmatched listings with id `nope`",
        ),
    ];
    refused(&app, &admin, 404, cases).await;
    // A group linked is gone: its id is a 404 from then on.
    let body = json!({"group": omega, "model": SEAMASTER});
    assert_eq!(
        post(&admin, "/v1/reconciliation/link", body.clone())
            .await
            .0,
        200
    );
    assert_eq!(post(&admin, "/v1/reconciliation/link", body).await.0, 404);
}
