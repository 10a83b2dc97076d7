//! The duplicate-models group through a real server, on the test catalogue plus models planted
//! for each signal: groups, their order and filters, `summary` against `kind` totals, a merge
//! with every effect checked through the public API, 301s for a merged model's path, dismissal
//! and a model joining a dismissed pair later, every 400 and 404 changing nothing.

use crate::support::{admin_app, assert_error, keys, test_catalogue_copy, SessionClient};
use reqwest::Method;
use serde_json::{json, Value};
use watch_catalogue::jobs::import::{import, DirectorySource};

/// Planted beside the test catalogue: a second 126610LN (same reference), a model whose
/// primary reference is the Black Bay's alternate (alternate overlap), a 79910B (base variant
/// of the 79910), and a second Omega 2254.50 (same reference; Seiko's 2254-50 is another
/// brand's and must stay out).
const PLANTED: &str = r#"{"slug":"submariner-126610ln-twin","brand":"rolex","series":"submariner","name":"Submariner Date","referenceNumber":"126610LN","alternateReferences":["126610LN-TWIN"],"limitedAmount":500,"pictures":[{"url":"https://cdn.watchcatalogue.example/twin/back.jpg","type":"BACK"}]}
{"slug":"black-bay-58-entry","brand":"tudor","series":"black-bay","name":"Black Bay 58","referenceNumber":"79030N"}
{"slug":"heritage-ranger-79910b","brand":"tudor","series":"heritage","name":"Heritage Ranger","referenceNumber":"79910B"}
{"slug":"seamaster-300m-2254-50-twin","brand":"omega","series":"seamaster","name":"Seamaster 300M","referenceNumber":"2254.50"}
"#;

pub(crate) fn planted_dataset() -> tempfile::TempDir {
    let dir = test_catalogue_copy();
    let models = dir.path().join("models.jsonl");
    let mut text = std::fs::read_to_string(&models).expect("models");
    text.push_str(PLANTED);
    std::fs::write(models, text).expect("write");
    dir
}

/// Each group as its kind and its models' slugs.
fn shapes(page: &Value) -> Vec<(String, Vec<String>)> {
    page["data"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            let slugs = g["models"]
                .as_array()
                .expect("models")
                .iter()
                .map(|m| m["slug"].as_str().expect("slug").to_owned())
                .collect();
            (g["kind"].as_str().expect("kind").to_owned(), slugs)
        })
        .collect()
}

fn shape(kind: &str, slugs: &[&str]) -> (String, Vec<String>) {
    (
        kind.to_owned(),
        slugs.iter().map(|s| s.to_string()).collect(),
    )
}

fn id_of(page: &Value, slug: &str) -> String {
    page["data"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["models"].as_array().expect("models"))
        .find(|m| m["slug"] == slug)
        .unwrap_or_else(|| panic!("{slug} in {page}"))["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

async fn post(admin: &SessionClient<'_>, path: &str, body: Value) -> (u16, Value) {
    admin.call(Method::POST, path, Some(body)).await
}

/// What a refused write must leave alone.
async fn state(admin: &SessionClient<'_>) -> (Value, Value, Value) {
    (
        admin.ok("/v1/duplicate-models?pageSize=100").await,
        admin.ok("/v1/admin/stats").await,
        admin.ok("/v1/admin/audit?pageSize=1").await,
    )
}

#[tokio::test]
async fn groups_join_pairs_by_their_strongest_signal_in_order_and_filter() {
    let dataset = planted_dataset();
    let app = admin_app(dataset.path()).await;
    let admin = app.session("ana").await;

    let all = admin.ok("/v1/duplicate-models").await;
    assert_eq!(
        shapes(&all),
        [
            shape(
                "sameReference",
                &[
                    "submariner-date-126610ln",
                    "submariner-date-126610lv",
                    "submariner-126610ln-twin"
                ]
            ),
            shape(
                "sameReference",
                &[
                    "seamaster-diver-300m-2254-50",
                    "seamaster-300m-2254-50-twin"
                ]
            ),
            shape(
                "alternateOverlap",
                &["black-bay-fifty-eight-79030n", "black-bay-58-entry"]
            ),
            shape(
                "baseVariant",
                &["heritage-ranger-79910", "heritage-ranger-79910b"]
            ),
        ],
        "{all}"
    );
    assert_eq!(all["total"], 4);
    assert_eq!(
        all["summary"],
        json!({"sameReference": 2, "alternateOverlap": 1, "baseVariant": 1})
    );
    let model = &all["data"][0]["models"][0];
    assert_eq!(
        keys(model),
        [
            "alternateReferences",
            "brandName",
            "brandSlug",
            "createdAt",
            "id",
            "listingCount",
            "name",
            "referenceNumber",
            "series",
            "slug",
            "thumbnailUrl"
        ]
    );
    assert_eq!(
        model["series"],
        json!({"name": "Submariner", "slug": "submariner"})
    );
    assert!(all["data"][0]["nameScore"].as_f64().is_some());

    // Each kind's total is the summary's count, and the summary ignores `kind`.
    for (kind, count) in [
        ("sameReference", 2),
        ("alternateOverlap", 1),
        ("baseVariant", 1),
    ] {
        let page = admin.ok(&format!("/v1/duplicate-models?kind={kind}")).await;
        assert_eq!(page["total"], count, "{kind}");
        assert_eq!(page["summary"], all["summary"]);
    }
    for (q, expected) in [
        ("omega", 1),
        ("Omega", 1),
        ("2254-50", 1),
        ("79030", 1),
        ("126610 ln", 1),
        ("seiko", 0),
        ("---", 0),
    ] {
        let page = admin.ok(&format!("/v1/duplicate-models?q={q}")).await;
        assert_eq!(page["total"], expected, "q={q}: {page}");
    }
    let tudor = admin.ok("/v1/duplicate-models?brand=tudor").await;
    assert_eq!(
        tudor["summary"],
        json!({"sameReference": 0, "alternateOverlap": 1, "baseVariant": 1})
    );
    let (status, error) = admin.get("/v1/duplicate-models?kind=twins").await;
    assert_eq!(status, 400);
    assert!(
        error["hint"]
            .as_str()
            .expect("hint")
            .contains("baseVariant"),
        "{error}"
    );
    assert_eq!(admin.get("/v1/duplicate-models?brand=nobody").await.0, 404);
}

#[tokio::test]
async fn a_merge_moves_everything_to_the_keeper_and_its_old_path_redirects() {
    let dataset = planted_dataset();
    let app = admin_app(dataset.path()).await;
    let admin = app.session("ana").await;
    let groups = admin.ok("/v1/duplicate-models").await;
    let keeper = id_of(&groups, "submariner-date-126610ln");
    let twin = id_of(&groups, "submariner-126610ln-twin");
    let tudor = id_of(&groups, "black-bay-58-entry");

    // A listing linked to the twin by a person, to be moved with it.
    let unmatched = admin.ok("/v1/admin/unmatched-listings?pageSize=1").await;
    let listing = unmatched["data"][0]["id"].as_str().expect("id").to_owned();
    let (status, linked) = post(
        &admin,
        "/v1/reconciliation/link",
        json!({"listings": [listing], "model": twin}),
    )
    .await;
    assert_eq!(status, 200, "{linked}");

    let before = state(&admin).await;
    for (body, status, names) in [
        (
            json!({"keeperId": keeper, "duplicateIds": [keeper]}),
            400,
            "keeper",
        ),
        (
            json!({"keeperId": keeper, "duplicateIds": []}),
            400,
            "1 to 100",
        ),
        (
            json!({"keeperId": keeper, "duplicateIds": [twin, twin]}),
            400,
            "twice",
        ),
        (
            json!({"keeperId": keeper, "duplicateIds": (1..=101).map(|id| id.to_string()).collect::<Vec<_>>()}),
            400,
            "not 101",
        ),
        (
            json!({"keeperId": keeper, "duplicateIds": [tudor]}),
            400,
            "brand",
        ),
        (json!({"keeperId": keeper}), 400, "duplicateIds"),
        (
            json!({"keeperId": keeper, "duplicateIds": [twin], "force": true}),
            400,
            "force",
        ),
        (
            json!({"keeperId": "999", "duplicateIds": [twin]}),
            404,
            "999",
        ),
        (
            json!({"keeperId": keeper, "duplicateIds": ["abc"]}),
            404,
            "abc",
        ),
    ] {
        let (got, error) = post(&admin, "/v1/duplicate-models/merge", body.clone()).await;
        assert_eq!(got, status, "{body}: {error}");
        assert!(
            error["message"].as_str().expect("message").contains(names),
            "{body}: {error}"
        );
    }
    assert_eq!(
        before,
        state(&admin).await,
        "a refused merge changed something"
    );

    let models_before = admin.ok("/v1/admin/stats").await["models"]
        .as_u64()
        .expect("count");
    let (status, merged) = post(
        &admin,
        "/v1/duplicate-models/merge",
        json!({"keeperId": keeper, "duplicateIds": [twin]}),
    )
    .await;
    assert_eq!(status, 200, "{merged}");
    assert_eq!(
        merged,
        json!({
            "keeper": {"id": keeper, "name": "Submariner Date", "referenceNumber": "126610LN",
                       "slug": "submariner-date-126610ln"},
            "mergedModels": 1, "movedListings": 1, "movedPictures": 1, "addedReferences": 1
        })
    );

    // Through the public API at once: counts, references, pictures, fields, listings, groups.
    let stats = admin.ok("/v1/admin/stats").await;
    assert_eq!(stats["models"].as_u64(), Some(models_before - 1));
    let full = app.ok("/v1/models/rolex/submariner-date-126610ln").await;
    assert!(full["alternateReferences"]
        .as_array()
        .expect("alts")
        .contains(&json!("126610LN-TWIN")));
    assert_eq!(full["limitedAmount"], 500, "an empty field backfilled");
    let types: Vec<&str> = full["pictures"]
        .as_array()
        .expect("pictures")
        .iter()
        .map(|p| p["type"].as_str().expect("type"))
        .collect();
    assert!(types.contains(&"BACK"), "{types:?}");
    let back = full["pictures"]
        .as_array()
        .expect("pictures")
        .iter()
        .find(|p| p["type"] == "BACK")
        .expect("the moved picture");
    let keep = format!(
        "/v1/picture-review/pictures/{}/keep",
        back["id"].as_str().expect("id")
    );
    let (status, kept) = post(&admin, &keep, json!(null)).await;
    assert_eq!(status, 200, "a moved picture is the keeper's now: {kept}");
    let found = app.ok("/v1/models?q=126610LN-TWIN").await;
    assert_eq!(
        found["data"][0]["slug"], "submariner-date-126610ln",
        "{found}"
    );
    let listings = app.ok(&format!("/v1/listings?modelId={twin}")).await;
    assert!(
        listings["data"]
            .as_array()
            .expect("listings")
            .iter()
            .any(|l| l["id"] == listing.as_str()),
        "{listings}"
    );
    assert_eq!(
        app.ok(&format!("/v1/models?id={twin}")).await["data"][0]["id"],
        keeper.as_str()
    );
    let groups = admin.ok("/v1/duplicate-models").await;
    assert_eq!(
        shapes(&groups)[0],
        shape(
            "sameReference",
            &[
                "seamaster-diver-300m-2254-50",
                "seamaster-300m-2254-50-twin"
            ]
        )
    );
    assert!(shapes(&groups).contains(&shape(
        "baseVariant",
        &["submariner-date-126610ln", "submariner-date-126610lv"]
    )));
    let sitemap = app.ok("/v1/sitemap/models?pageSize=100").await.to_string();
    assert!(!sitemap.contains("submariner-126610ln-twin"));

    // The old path, versioned and not, answers 301 to the keeper's.
    for (path, location) in [
        (
            "/v1/models/rolex/submariner-126610ln-twin",
            "/v1/models/rolex/submariner-date-126610ln",
        ),
        (
            "/models/rolex/submariner-126610ln-twin",
            "/models/rolex/submariner-date-126610ln",
        ),
    ] {
        let response = app.send(app.request(Method::GET, path)).await;
        assert_eq!(response.status().as_u16(), 301, "{path}");
        assert_eq!(response.headers()["location"], location);
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["model"]["id"], keeper.as_str());
    }
    // In a comparison the merged slug stands for the keeper too, so it cannot sit beside it.
    let compared = app
        .ok("/v1/models/compare?models=rolex/submariner-126610ln-twin,rolex/submariner-date-16610")
        .await;
    assert_eq!(compared["data"][0]["model"]["id"], keeper.as_str());
    let twice =
        "/v1/models/compare?models=rolex/submariner-126610ln-twin,rolex/submariner-date-126610ln";
    assert_error(&app, twice, 400, "invalid_request", "each model once").await;
    let audit = admin.ok("/v1/admin/audit?pageSize=2").await;
    assert_eq!(audit["data"][1]["action"], "duplicates.merge", "{audit}");

    // A later model may not take the merged slug.
    let source = DirectorySource(dataset.path().to_owned());
    let refused = app.app.writer().run(|turn| import(turn, &source));
    let error = format!("{:?}", refused.expect_err("the re-import is refused"));
    assert!(
        error.contains("submariner-126610ln-twin") && error.contains("merged"),
        "{error}"
    );
}

#[tokio::test]
async fn dismissed_pairs_are_never_offered_again_until_a_third_model_joins() {
    let dataset = planted_dataset();
    let app = admin_app(dataset.path()).await;
    let admin = app.session("ana").await;
    let groups = admin.ok("/v1/duplicate-models").await;
    let black_bay = id_of(&groups, "black-bay-fifty-eight-79030n");
    let entry = id_of(&groups, "black-bay-58-entry");

    let before = state(&admin).await;
    for (body, status) in [
        (json!({"modelIds": [black_bay]}), 400),
        (json!({"modelIds": [black_bay, black_bay]}), 400),
        (json!({"modelIds": []}), 400),
        (json!({"models": [black_bay, entry]}), 400),
        (json!({"modelIds": [black_bay, "999"]}), 404),
    ] {
        let (got, error) = post(&admin, "/v1/duplicate-models/dismiss", body.clone()).await;
        assert_eq!(got, status, "{body}: {error}");
        assert!(error["hint"].is_string(), "{error}");
    }
    assert_eq!(
        before,
        state(&admin).await,
        "a refused dismissal changed something"
    );

    let ids = json!({"modelIds": [black_bay, entry]});
    let (status, dismissed) = post(&admin, "/v1/duplicate-models/dismiss", ids.clone()).await;
    assert_eq!((status, dismissed), (200, json!({"dismissedPairs": 1})));
    let (_, again) = post(&admin, "/v1/duplicate-models/dismiss", ids).await;
    assert_eq!(again, json!({"dismissedPairs": 0}));
    let after = admin.ok("/v1/duplicate-models").await;
    assert_eq!(after["summary"]["alternateOverlap"], 0, "{after}");
    assert_eq!(after["total"], 3);

    // A third model pairing with both surfaces with them: its own pairs stand.
    let more = tempfile::tempdir().expect("dataset");
    std::fs::write(
        more.path().join("models.jsonl"),
        r#"{"slug":"black-bay-58-bis","brand":"tudor","series":"black-bay","name":"Black Bay 58 bis","referenceNumber":"79030N"}
"#,
    )
    .expect("write");
    let source = DirectorySource(more.path().to_owned());
    app.app
        .writer()
        .run(|turn| import(turn, &source))
        .expect("import");
    let joined = admin
        .ok("/v1/duplicate-models?brand=tudor&kind=sameReference")
        .await;
    assert_eq!(
        shapes(&joined),
        [shape(
            "sameReference",
            &[
                "black-bay-fifty-eight-79030n",
                "black-bay-58-entry",
                "black-bay-58-bis"
            ]
        )],
        "{joined}"
    );
}

#[test]
fn the_full_pass_through_the_binary_finds_what_the_writes_kept() {
    let dataset = planted_dataset();
    let data = tempfile::tempdir().expect("data dir");
    let run = |args: &[&str]| crate::cli::run(crate::support::binary(data.path()).args(args));
    let (output, text) = run(&["import", dataset.path().to_str().expect("path")]);
    assert!(output.status.success(), "{text}");
    let before = crate::support::generation(data.path());
    let pairs_changed = || {
        let app = watch_catalogue::app::App::open(
            &watch_catalogue::data_dir::DataDir::new(data.path()),
            16 << 20,
        )
        .expect("open");
        app.store()
            .duplicates()
            .duplicates_generation()
            .expect("read")
    };
    let after_import = pairs_changed();
    for _ in 0..2 {
        let (output, text) = run(&["duplicates", "rebuild"]);
        assert!(output.status.success(), "{text}");
        assert!(text.contains("duplicates: 6 pairs in 4 groups"), "{text}");
    }
    assert_eq!(
        pairs_changed(),
        after_import,
        "finding the same pairs again writes none"
    );
    let (output, text) = run(&["reindex"]);
    assert!(
        output.status.success() && text.contains("duplicates: 6 pairs in 4 groups"),
        "{text}"
    );
    assert_eq!(
        crate::support::generation(data.path()),
        before,
        "derived writes bump nothing"
    );
    let (output, text) = run(&["duplicates"]);
    assert!(!output.status.success(), "`rebuild` is required: {text}");
}

/// A start reads the duplicate groups as the last process kept them instead of joining every
/// pair again (seconds at a million models), and joins them again only around what was
/// written since: here a dismissal the killed process made after it kept them. Its first
/// `GET /duplicate-models` answers what the server answered before, with no join in its log.
#[tokio::test]
async fn a_start_answers_the_groups_as_kept_without_joining_every_pair_again() {
    use crate::support::ServeProcess;
    let dataset = planted_dataset();
    let data = tempfile::tempdir().expect("data dir");
    let (output, text) = crate::cli::run(
        crate::support::binary(data.path())
            .args(["import", dataset.path().to_str().expect("path")]),
    );
    assert!(output.status.success(), "{text}");
    crate::admin::add_user_through_the_binary(data.path(), "ana");
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .expect("client");
    let groups = |base: String, cookie: String| {
        let client = client.clone();
        async move {
            let page: Value = client
                .get(format!("{base}/duplicate-models?pageSize=50"))
                .header("cookie", cookie)
                .send()
                .await
                .expect("groups")
                .json()
                .await
                .expect("json");
            page
        }
    };

    let mut serve = ServeProcess::start(data.path());
    let cookie = crate::support::sign_in(&client, &serve.base, "ana").await;
    let before = groups(serve.base.clone(), cookie.clone()).await;
    assert!(serve.has_logged("duplicate groups joined"), "{}", serve.log);
    assert_eq!(before["total"], 4, "{before}");
    let first: Vec<&str> = before["data"][0]["models"]
        .as_array()
        .expect("models")
        .iter()
        .map(|m| m["id"].as_str().expect("id"))
        .collect();
    let dismissed = client
        .post(format!("{}/duplicate-models/dismiss", serve.base))
        .header("cookie", &cookie)
        .json(&json!({ "modelIds": first }))
        .send()
        .await
        .expect("dismiss");
    assert_eq!(dismissed.status().as_u16(), 200);
    let after = groups(serve.base.clone(), cookie.clone()).await;
    assert_eq!(after["total"], 3, "{after}");
    // Killed: nothing kept as it stops, only what the writes noted since the start.
    serve.kill();

    let mut serve = ServeProcess::start(data.path());
    let cookie = crate::support::sign_in(&client, &serve.base, "ana").await;
    let read = groups(serve.base.clone(), cookie).await;
    assert_eq!(read, after);
    assert!(
        serve.has_logged("duplicate groups read as kept"),
        "{}",
        serve.log
    );
    let log = serve.stop();
    assert!(!log.contains("duplicate groups joined"), "{log}");
}
