//! The picture-review group through a real server: candidates from candidates.jsonl and from
//! the pictures of matched listings (fetched from a local source server), the queue and its
//! statuses, select, keep, the FRONT picture read and set, `protected` honoured by a
//! re-import, every 400 and 404 changing nothing, and the audit trail.

use crate::pictures::{pass, source_server};
use crate::support::{admin_app, feed, keys, test_catalogue_copy, SessionClient, TestApp};
use reqwest::Method;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use watch_catalogue::jobs::import::{import, DirectorySource};

const LV: &str = "/v1/models/rolex/submariner-date-126610lv";

/// The test catalogue with `candidates` as its candidates.jsonl, in a directory of its own.
pub(crate) fn dataset_with(candidates: &str) -> tempfile::TempDir {
    let dir = test_catalogue_copy();
    std::fs::write(dir.path().join("candidates.jsonl"), candidates).expect("write");
    dir
}

/// Two candidates for the 126610LV (the PNG ranked first), one for the 16610.
pub(crate) fn candidates(source: SocketAddr) -> String {
    [
        json!({"model": "rolex/submariner-date-126610lv", "query": "Rolex 126610LV front",
               "url": format!("http://{source}/a.jpg"), "sourceUrl": "https://maker.example/126610lv",
               "width": 640, "height": 480, "rank": 2}),
        json!({"model": "rolex/submariner-date-126610lv", "query": "Rolex 126610LV front",
               "url": format!("http://{source}/b.png"), "rank": 1}),
        json!({"model": "rolex/submariner-date-16610", "url": format!("http://{source}/c.jpg")}),
    ]
    .iter()
    .map(|line| format!("{line}\n"))
    .collect()
}

async fn call(
    admin: &SessionClient<'_>,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    admin.call(method, path, body).await
}

fn model_id(app: &TestApp, slug: &str) -> String {
    let brand = app
        .app
        .store()
        .catalogue()
        .brand_by_slug(&watch_catalogue::domain::Slug::parse("rolex").expect("slug"))
        .expect("read")
        .expect("rolex");
    app.app
        .store()
        .catalogue()
        .model_by_slug(
            brand.id,
            &watch_catalogue::domain::Slug::parse(slug).expect("slug"),
        )
        .expect("read")
        .expect("model")
        .id
        .to_string()
}

fn audit_actions(app: &TestApp) -> Vec<String> {
    app.app
        .store()
        .audit()
        .audit_newest_first()
        .map(|entry| entry.expect("entry").action)
        .collect()
}

/// What a refused write must leave alone: the queue, every model's pictures, the audit trail.
async fn everything(app: &TestApp, admin: &SessionClient<'_>) -> (Value, Value, Vec<String>) {
    (
        admin.ok("/v1/picture-review?status=all&pageSize=100").await,
        app.ok("/v1/models?pageSize=100").await,
        audit_actions(app),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn dataset_candidates_queue_their_models_and_select_makes_a_new_front_picture() {
    let source = source_server().await;
    let dataset = dataset_with(&candidates(source));
    let app = admin_app(dataset.path()).await;
    let admin = app.session("ana").await;

    let queue = admin.ok("/v1/picture-review").await;
    assert_eq!(queue["total"], 2, "{queue}");
    let lv = &queue["data"][0];
    assert_eq!(
        keys(lv),
        [
            "brand",
            "candidates",
            "id",
            "name",
            "pictures",
            "query",
            "referenceNumber",
            "slug"
        ]
    );
    assert_eq!(lv["slug"], "submariner-date-126610lv");
    assert_eq!(lv["brand"], "Rolex");
    assert_eq!(lv["query"], "Rolex 126610LV front");
    assert_eq!(lv["pictures"][0]["protected"], false);
    let ranked: Vec<(&Value, &Value)> = lv["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| (&c["rank"], &c["sourceUrl"]))
        .collect();
    assert_eq!(
        ranked,
        [
            (&json!(1), &json!(format!("http://{source}/b.png"))),
            (&json!(2), &json!("https://maker.example/126610lv")),
        ]
    );
    let chosen = &lv["candidates"][0];
    let chosen_url = chosen["url"].as_str().expect("url").to_owned();
    assert!(chosen_url.starts_with("/media/pictures/"), "{chosen}");
    assert_eq!(chosen["selectedAt"], Value::Null);
    assert_eq!(
        (
            chosen["width"].clone(),
            lv["candidates"][1]["width"].clone()
        ),
        (Value::Null, json!(640))
    );

    // Re-hosted like any picture: 404 until the worker fetches it, then the image itself.
    assert_eq!(app.get(&chosen_url).await.0, 404);
    pass(&app.app, &["127.0.0.1/32"]).await;
    let fetched = app.send(app.request(Method::GET, &chosen_url)).await;
    assert_eq!(fetched.status(), 200);
    assert_eq!(fetched.headers()["content-type"], "image/png");

    let old_front = app.ok(LV).await["pictures"][0]["id"].clone();
    let select = format!(
        "/v1/picture-review/candidates/{}/select",
        chosen["id"].as_str().expect("a string")
    );
    let (status, picture) = call(&admin, Method::POST, &select, None).await;
    assert_eq!(status, 200, "{picture}");
    assert_eq!(
        keys(&picture),
        ["croppedUrl", "id", "protected", "type", "url"]
    );
    assert_eq!(
        (&picture["type"], &picture["croppedUrl"]),
        (&json!("FRONT"), &Value::Null)
    );
    assert_ne!(picture["id"], old_front, "a replaced picture gets a new id");
    let shown = app.ok(LV).await["pictures"][0].clone();
    assert_eq!(shown["id"], picture["id"]);
    assert_eq!(shown["croppedUrl"], Value::Null);

    // The crop is made again from the stored original: nothing may be fetched.
    pass(&app.app, &[]).await;
    let id = picture["id"].as_str().expect("id");
    let cropped = format!("/media/pictures/{id}/cropped");
    assert_eq!(
        app.ok(LV).await["pictures"][0]["croppedUrl"],
        cropped.as_str()
    );
    let crop = app.send(app.request(Method::GET, &cropped)).await;
    assert_eq!(
        (
            crop.status().as_u16(),
            crop.headers()["content-type"].to_str().expect("a header")
        ),
        (200, "image/jpeg")
    );

    let pending = admin.ok("/v1/picture-review").await;
    assert_eq!(pending["total"], 1);
    assert_eq!(pending["data"][0]["slug"], "submariner-date-16610");
    let reviewed = admin.ok("/v1/picture-review?status=reviewed").await;
    assert_eq!(reviewed["data"][0]["slug"], "submariner-date-126610lv");
    assert!(reviewed["data"][0]["candidates"][0]["selectedAt"].is_string());
    assert_eq!(admin.ok("/v1/picture-review?status=all").await["total"], 2);
    assert_eq!(audit_actions(&app)[0], "picture-review.select");
}

#[tokio::test(flavor = "multi_thread")]
async fn keep_takes_the_model_out_of_the_queue_and_refusals_change_nothing() {
    let source = source_server().await;
    let dataset = dataset_with(&candidates(source));
    let app = admin_app(dataset.path()).await;
    let admin = app.session("ana").await;
    let before = everything(&app, &admin).await;

    let listing_picture = app.app.store().listings().all_listings().find_map(|l| {
        l.expect("listing")
            .pictures
            .first()
            .map(|p| p.id.to_string())
    });
    let listing_picture = listing_picture.expect("a listing picture");
    for (path, names) in [
        ("/v1/picture-review/candidates/999/select".to_owned(), "999"),
        ("/v1/picture-review/candidates/abc/select".to_owned(), "abc"),
        ("/v1/picture-review/pictures/999/keep".to_owned(), "999"),
        (
            format!("/v1/picture-review/pictures/{listing_picture}/keep"),
            "model picture",
        ),
    ] {
        let (status, error) = call(&admin, Method::POST, &path, None).await;
        assert_eq!(
            (status, &error["error"]),
            (404, &json!("not_found")),
            "{path}: {error}"
        );
        assert!(
            error["message"].as_str().expect("a string").contains(names),
            "{error}"
        );
    }
    let (status, error) = admin.get("/v1/picture-review?status=done").await;
    assert_eq!((status, &error["error"]), (400, &json!("invalid_request")));
    assert!(
        error["message"]
            .as_str()
            .expect("a string")
            .contains("status"),
        "{error}"
    );
    assert_eq!(
        before,
        everything(&app, &admin).await,
        "a refusal changed something"
    );

    let front = app.ok("/v1/models/rolex/submariner-date-16610").await["pictures"][0].clone();
    let keep = format!(
        "/v1/picture-review/pictures/{}/keep",
        front["id"].as_str().expect("a string")
    );
    let (status, kept) = call(&admin, Method::POST, &keep, None).await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!((&kept["id"], &kept["url"]), (&front["id"], &front["url"]));
    assert_eq!(
        app.ok("/v1/models/rolex/submariner-date-16610").await["pictures"][0],
        front
    );
    let pending = admin.ok("/v1/picture-review").await;
    assert_eq!(pending["total"], 1);
    assert_eq!(pending["data"][0]["slug"], "submariner-date-126610lv");
    assert_eq!(audit_actions(&app)[0], "picture-review.keep");
}

#[tokio::test]
async fn the_front_picture_is_read_set_and_protected_from_a_reimport() {
    let dataset = dataset_with("");
    let app = admin_app(dataset.path()).await;
    let admin = app.session("ana").await;
    let explorer = model_id(&app, "explorer-124270");
    let lv = model_id(&app, "submariner-date-126610lv");
    let path = |id: &str| format!("/v1/picture-review/models/{id}/front-picture");

    assert_eq!(admin.ok(&path(&explorer)).await, json!({"picture": null}));
    let front = admin.ok(&path(&lv)).await["picture"].clone();
    assert_eq!(front["type"], "FRONT");
    assert_eq!(
        front["sourceUrl"],
        "https://cdn.watchcatalogue.example/models/rolex/126610lv/front.jpg"
    );
    assert_eq!(
        (&front["protected"], &front["review"]),
        (&json!(false), &json!("none"))
    );
    assert_eq!(front["fetch"]["state"], "pending");

    let before = everything(&app, &admin).await;
    for (id, body, status, names) in [
        (
            lv.clone(),
            json!({"url": "https://x.example/a.jpg"}),
            400,
            "protected",
        ),
        (
            lv.clone(),
            json!({"url": "ftp://x.example/a.jpg", "protected": true}),
            400,
            "url",
        ),
        (
            lv.clone(),
            json!({"protected": true, "colour": "red"}),
            400,
            "colour",
        ),
        (explorer.clone(), json!({"protected": true}), 400, "url"),
        ("999".to_owned(), json!({"protected": true}), 404, "999"),
        ("abc".to_owned(), json!({"protected": true}), 404, "abc"),
    ] {
        let (got, error) = call(&admin, Method::PUT, &path(&id), Some(body.clone())).await;
        assert_eq!(got, status, "{body}: {error}");
        assert!(
            error["message"].as_str().expect("a string").contains(names),
            "{body}: {error}"
        );
        assert!(error["hint"].is_string(), "{error}");
    }
    assert_eq!(admin.get(&path("999")).await.0, 404);
    assert_eq!(
        before,
        everything(&app, &admin).await,
        "a refusal changed something"
    );

    // A URL creates the FRONT picture of a model that has none.
    let url = "https://images.example/124270.jpg";
    let (status, set) = call(
        &admin,
        Method::PUT,
        &path(&explorer),
        Some(json!({"url": url, "protected": true})),
    )
    .await;
    assert_eq!(status, 200, "{set}");
    let picture = &set["picture"];
    assert_eq!(
        (&picture["sourceUrl"], &picture["protected"]),
        (&json!(url), &json!(true))
    );
    assert_eq!(
        (&picture["review"], &picture["fetch"]["state"]),
        (&json!("reviewed"), &json!("pending"))
    );
    let public = app.ok("/v1/models/rolex/explorer-124270").await;
    assert_eq!(
        public["pictures"][0]["url"],
        format!(
            "/media/pictures/{}",
            picture["id"].as_str().expect("a string")
        )
    );

    // Protecting the 126610LV's FRONT picture keeps it through a re-import that changes it.
    let (status, _) = call(
        &admin,
        Method::PUT,
        &path(&lv),
        Some(json!({"protected": true})),
    )
    .await;
    assert_eq!(status, 200);
    let protected = app.ok(LV).await["pictures"].clone();
    let models = std::fs::read_to_string(dataset.path().join("models.jsonl")).expect("read");
    let changed = models.replace("126610lv/front.jpg", "126610lv/front-2025.jpg");
    std::fs::write(dataset.path().join("models.jsonl"), changed).expect("write");
    reimport(&app, dataset.path());
    assert_eq!(app.ok(LV).await["pictures"], protected);
    let actions = audit_actions(&app);
    assert_eq!(
        &actions[..2],
        [
            "picture-review.front-picture",
            "picture-review.front-picture"
        ]
    );
}

fn reimport(app: &TestApp, dataset: &Path) {
    let source = DirectorySource(PathBuf::from(dataset));
    app.app
        .writer()
        .run(|turn| import(turn, &source))
        .expect("re-import");
}

#[tokio::test(flavor = "multi_thread")]
async fn pictures_of_matched_listings_become_candidates_ranked_by_how_many_show_them() {
    let source = source_server().await;
    let dataset = dataset_with("");
    let app = admin_app(dataset.path()).await;
    let admin = app.session("ana").await;
    // Two listings of two providers show one photograph (same bytes under two URLs); a third
    // shows another. All are matched to the 16610.
    let line = |code: &str, picture: &str| {
        json!({"sourceId": code, "url": format!("https://shop.example/{code}"),
               "title": "Rolex Submariner 16610", "brand": "Rolex", "reference": "16610",
               "pictures": [format!("http://{source}/{picture}")]})
        .to_string()
    };
    for (provider, lines) in [
        ("chrono24", vec![line("p1", "a.jpg"), line("p2", "c.jpg")]),
        ("ebay", vec![line("p3", "same-as-a.jpg")]),
    ] {
        feed(&app, provider, &lines.join("\n"));
    }
    pass(&app.app, &["127.0.0.1/32"]).await;

    let queue = admin.ok("/v1/picture-review").await;
    let item = queue["data"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["slug"] == "submariner-date-16610")
        .unwrap_or_else(|| panic!("the 16610 is queued: {queue}"))
        .clone();
    let candidates = item["candidates"].as_array().expect("candidates");
    assert_eq!(candidates.len(), 2, "{item}");
    assert_eq!(candidates[0]["rank"], 1);
    let shown_by_two = candidates[0]["sourceUrl"].as_str().expect("source");
    assert!(
        ["https://shop.example/p1", "https://shop.example/p3"].contains(&shown_by_two),
        "{item}"
    );
    assert_eq!(candidates[1]["sourceUrl"], "https://shop.example/p2");
    assert_eq!(candidates[0]["width"], 640);
    assert_eq!(item["query"], Value::Null);

    // Ranking again with nothing changed keeps the candidates and their ids.
    pass(&app.app, &["127.0.0.1/32"]).await;
    let again = admin.ok("/v1/picture-review").await;
    assert_eq!(again, queue);
}
