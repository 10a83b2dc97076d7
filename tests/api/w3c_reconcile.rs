//! The W3C Reconciliation API 0.2 service under `/v1/reconcile`: every answer validated against
//! the protocol's own JSON Schemas, its example batches sent, and the precision of `match`
//! measured on the bundled fixtures and on the real-data labelled sample
//! (docs/matching-evaluation.md). The schemas and the real listings are read from `../shared`
//! (their provenance asks that they not be copied into the project): the tests that need them
//! are ignored by a plain `cargo test`, with the reason, and run by `cargo test -- --ignored`
//! (CI runs both), failing when `../shared` is absent.

use crate::real_listings::{column, shared_listings, Label, REFERENCES, TITLES};
use crate::support::*;
use jsonschema::{Draft, Registry, Validator};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use watch_catalogue::api::config::ApiConfig;
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::domain::Slug;
use watch_catalogue::jobs::import::{import, DirectorySource};

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Why the tests of the protocol's schemas are ignored by a plain `cargo test`.
const NEEDS_SCHEMAS: &str = "needs ../shared/reconciliation-api-0.2";

/// The protocol's schemas and examples, from `../shared` (never copied into the project).
fn protocol() -> PathBuf {
    let dir = project().join("../shared/reconciliation-api-0.2");
    assert!(
        dir.join("schemas").is_dir(),
        "{} is absent: the protocol's schemas are read from ../shared ({NEEDS_SCHEMAS})",
        dir.display()
    );
    dir
}

/// Validators of the protocol's schemas. The files are "draft 7 style" with the unversioned
/// `$schema` `http://json-schema.org/schema#`, which names no draft: it is dropped and draft 7
/// applied. Every file is registered under its `$id` and under the 0.2 folder's address, so
/// the `$ref`s between them (`type.json`, the manifest's Swagger security definitions) resolve
/// without a network.
struct Schemas {
    registry: Registry<'static>,
    files: HashMap<String, Value>,
}

const SCHEMA_BASE: &str = "https://reconciliation-api.github.io/specs/0.2/schemas/";

impl Schemas {
    fn load(dir: &Path) -> Schemas {
        let mut files = HashMap::new();
        let mut resources = Vec::new();
        for entry in std::fs::read_dir(dir.join("schemas")).expect("schemas") {
            let path = entry.expect("entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("name")
                .to_owned();
            let mut schema: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).expect("read"))
                    .expect("schema JSON");
            if let Some(object) = schema.as_object_mut() {
                object.remove("$schema");
            }
            if let Some(id) = schema["$id"].as_str() {
                resources.push((id.trim_end_matches('#').to_owned(), schema.clone()));
            }
            resources.push((format!("{SCHEMA_BASE}{name}"), schema.clone()));
            files.insert(name, schema);
        }
        let registry = Registry::new()
            .draft(Draft::Draft7)
            .extend(
                resources
                    .into_iter()
                    .map(|(uri, schema)| (uri, Draft::Draft7.create_resource(schema))),
            )
            .expect("schema addresses")
            .prepare()
            .expect("the schemas' $refs resolve");
        Schemas { registry, files }
    }

    fn validator(&self, file: &str) -> Validator {
        let schema = self.files.get(file).unwrap_or_else(|| panic!("no {file}"));
        jsonschema::options()
            .with_draft(Draft::Draft7)
            .with_registry(&self.registry)
            .build(schema)
            .unwrap_or_else(|e| panic!("{file}: {e}"))
    }

    /// Asserts `instance` is valid under `file`, listing every error.
    fn assert_valid(&self, file: &str, instance: &Value) {
        let validator = self.validator(file);
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{file} rejects {instance:#}:\n{}",
            errors.join("\n")
        );
    }
}

/// A query batch posted as a form, as OpenRefine sends it: status and body.
async fn post_form(app: &TestApp, field: &str, json: &Value) -> (u16, Value) {
    let response = app
        .send(
            app.request(reqwest::Method::POST, "/v1/reconcile")
                .form(&[(field, json.to_string())]),
        )
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

/// The candidates of one free-text query (or of `properties`), posted as a form.
async fn reconcile_one(app: &TestApp, query: Value) -> Vec<Value> {
    let (status, body) = post_form(app, "queries", &json!({ "q0": query })).await;
    assert_eq!(status, 200, "{query}: {body}");
    body["q0"]["result"].as_array().expect("result").clone()
}

fn feature(candidate: &Value, id: &str) -> Value {
    candidate["features"]
        .as_array()
        .expect("features")
        .iter()
        .find(|f| f["id"] == id)
        .map(|f| f["value"].clone())
        .unwrap_or_else(|| panic!("no {id} in {candidate}"))
}

#[tokio::test]
#[ignore = "needs ../shared/reconciliation-api-0.2 (the protocol's schemas, not in the project): cargo test -- --ignored"]
async fn the_manifest_is_valid_and_the_routes_are_open_to_any_origin() {
    let app = TestApp::start().await;
    let response = app
        .send(
            app.request(reqwest::Method::GET, "/v1/reconcile")
                .header("origin", "http://127.0.0.1:3333"),
        )
        .await;
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "*",
        "CORS for any origin"
    );
    assert!(response.headers().get("ratelimit-policy").is_some());
    let vary: Vec<&str> = response
        .headers()
        .get_all("vary")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert!(
        vary.iter().any(|v| v.contains("x-forwarded-proto")),
        "its URLs follow the request's headers, so caches key on them: {vary:?}"
    );
    let manifest: Value = response.json().await.expect("JSON");
    assert_eq!(manifest["versions"], json!(["0.2"]));
    let types: Vec<&str> = manifest["defaultTypes"]
        .as_array()
        .expect("types")
        .iter()
        .map(|t| t["id"].as_str().expect("id"))
        .collect();
    assert_eq!(types, ["model", "caliber", "brand"]);
    let host = app.base.trim_start_matches("http://");
    assert_eq!(
        manifest["view"]["url"],
        format!("http://{host}/v1/{{{{id}}}}")
    );
    assert_eq!(
        manifest["suggest"]["entity"]["service_url"],
        format!("http://{host}/v1")
    );
    // The view template opens a result's id: the model's API path.
    let view = manifest["view"]["url"]
        .as_str()
        .expect("url")
        .replace("{{id}}", "models/rolex/submariner-date-16610")
        .replace(&format!("http://{host}"), "");
    assert_eq!(app.ok(&view).await["referenceNumber"], "16610");

    let preflight = app
        .send(
            app.request(reqwest::Method::OPTIONS, "/v1/reconcile")
                .header("origin", "https://example.org")
                .header("access-control-request-method", "POST")
                .header("access-control-request-headers", "content-type"),
        )
        .await;
    assert_eq!(preflight.status().as_u16(), 200);
    assert_eq!(preflight.headers()["access-control-allow-origin"], "*");
    let methods = preflight.headers()["access-control-allow-methods"]
        .to_str()
        .expect("methods");
    assert!(methods.contains("POST"), "{methods}");
    // The back office stays same-origin.
    let admin = app
        .send(
            app.request(reqwest::Method::GET, "/v1/reconciliation")
                .header("origin", "https://example.org"),
        )
        .await;
    assert!(admin.headers().get("access-control-allow-origin").is_none());

    Schemas::load(&protocol()).assert_valid("manifest.json", &manifest);
}

#[tokio::test]
#[ignore = "needs ../shared/reconciliation-api-0.2 (the protocol's schemas, not in the project): cargo test -- --ignored"]
async fn the_protocol_examples_are_answered_or_refused() {
    let dir = protocol();
    let schemas = Schemas::load(&dir);
    // The validators do refuse: a manifest without versions, a result without a score.
    assert!(!schemas
        .validator("manifest.json")
        .is_valid(&json!({"name": "x"})));
    let no_score = json!({"q0": {"result": [{"id": "a", "name": "b"}]}});
    assert!(!schemas
        .validator("reconciliation-result-batch.json")
        .is_valid(&no_score));
    let app = TestApp::start().await;
    let examples = dir.join("examples/reconciliation-query-batch");
    let read = |path: PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
    };
    let mut sent = 0;
    for entry in std::fs::read_dir(examples.join("valid")).expect("valid") {
        let batch = read(entry.expect("entry").path());
        schemas.assert_valid("reconciliation-query-batch.json", &batch);
        let (status, body) = post_form(&app, "queries", &batch).await;
        assert_eq!(status, 200, "{batch}: {body}");
        schemas.assert_valid("reconciliation-result-batch.json", &body);
        let keys =
            |v: &Value| -> Vec<String> { v.as_object().expect("object").keys().cloned().collect() };
        assert_eq!(keys(&body), keys(&batch));
        sent += 1;
    }
    assert!(sent >= 4, "{sent} valid examples");
    for entry in std::fs::read_dir(examples.join("invalid")).expect("invalid") {
        let path = entry.expect("entry").path();
        let batch = read(path.clone());
        let (status, body) = post_form(&app, "queries", &batch).await;
        assert_eq!(status, 400, "{}: {body}", path.display());
        assert_eq!(body["error"], "invalid_request", "{body}");
        assert!(body["message"].as_str().expect("message").contains("q"));
    }
}

#[tokio::test]
#[ignore = "needs ../shared/reconciliation-api-0.2 (the protocol's schemas, not in the project): cargo test -- --ignored"]
async fn free_text_and_properties_match_by_brand_and_reference_only() {
    let app = TestApp::start().await;
    let schemas = Schemas::load(&protocol());
    // Free text alone, through the listing matcher.
    let found = reconcile_one(&app, json!({"query": "Rolex Submariner 16610LV"})).await;
    // The test catalogue has no 16610LV: the 16610 is a base variant, never a match.
    assert!(found.iter().all(|c| c["match"] == false), "{found:#?}");
    let found = reconcile_one(&app, json!({"query": "Rolex Submariner Date 126610 LV"})).await;
    let first = &found[0];
    assert_eq!(first["id"], "models/rolex/submariner-date-126610lv");
    assert_eq!(
        (first["match"].clone(), first["score"].clone()),
        (json!(true), json!(100.0))
    );
    assert_eq!(feature(first, "sameReference"), true);
    assert_eq!(feature(first, "brandMatch"), true);
    assert_eq!(
        first["type"],
        json!([{"id": "model", "name": "Watch model"}])
    );
    // Its base variant 126610LN comes next, not a match, with its signals.
    let variant = found
        .iter()
        .find(|c| c["id"] == "models/rolex/submariner-date-126610ln")
        .expect("the LN is a candidate");
    assert_eq!(variant["match"], false);
    assert_eq!(feature(variant, "baseVariant"), true);
    assert_eq!(feature(variant, "sameReference"), false);
    assert!(feature(variant, "nameSimilarity").as_f64().expect("number") > 0.5);

    // Properties: brand + reference in any spelling, an alternate reference.
    let found = reconcile_one(
        &app,
        json!({"query": "", "properties": [
            {"pid": "brand", "v": "Tudor"}, {"pid": "reference", "v": "79030 N"},
            {"pid": "year", "v": 2019}, {"pid": "caliber", "v": "2824"}]}),
    )
    .await;
    assert_eq!(found[0]["id"], "models/tudor/black-bay-fifty-eight-79030n");
    assert_eq!(found[0]["match"], true);
    assert_eq!(feature(&found[0], "alternateReference"), true);
    assert_eq!(feature(&found[0], "caliberMatch"), true);
    // A name alone never matches; a reference without a brand never matches.
    for query in [
        json!({"query": "Rolex Submariner Date"}),
        json!({"query": "126610LN"}),
        json!({"query": "Explorer", "properties": [{"pid": "series", "v": "Explorer"}]}),
    ] {
        let found = reconcile_one(&app, query.clone()).await;
        assert!(!found.is_empty(), "{query}: candidates expected");
        assert!(
            found.iter().all(|c| c["match"] == false),
            "{query}: {found:#?}"
        );
    }
    // One reference, two brands' models (2254.50 and 2254-50): ambiguous without a brand.
    let found = reconcile_one(&app, json!({"query": "2254.50", "limit": 10})).await;
    assert!(found.len() >= 2, "{found:#?}");
    assert!(found.iter().all(|c| c["match"] == false));
    // Other types: a brand by its alias, a calibre by brand and reference.
    let found = reconcile_one(&app, json!({"query": "Tudor Watch", "type": "brand"})).await;
    assert_eq!(
        (found[0]["id"].clone(), found[0]["match"].clone()),
        (json!("brands/tudor"), json!(true))
    );
    let found = reconcile_one(&app, json!({"query": "Rolex 3135", "type": "caliber"})).await;
    assert_eq!(
        (found[0]["id"].clone(), found[0]["match"].clone()),
        (json!("calibers/rolex/3135"), json!(true))
    );
    let (_, body) = post_form(&app, "queries", &json!({"a": {"query": "Rolex 3135", "type": "caliber"}, "b": {"query": "Omega", "type": ["brand"]}, "c": {"query": "Rolex 16610"}})).await;
    schemas.assert_valid("reconciliation-result-batch.json", &body);
}

#[tokio::test]
async fn batches_come_as_form_json_body_or_get_with_jsonp_and_hold_at_most_50() {
    let app = TestApp::start().await;
    let batch = |n: usize| -> Value {
        Value::Object(
            (0..n)
                .map(|i| (format!("q{i}"), json!({"query": "Rolex 16610", "limit": 1})))
                .collect(),
        )
    };
    let (status, body) = post_form(&app, "queries", &batch(50)).await;
    assert_eq!(status, 200);
    assert_eq!(body.as_object().expect("object").len(), 50);
    assert_eq!(
        body["q49"]["result"][0]["id"],
        "models/rolex/submariner-date-16610"
    );
    let (status, body) = post_form(&app, "queries", &batch(51)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_request");
    assert!(
        body["hint"].as_str().expect("hint").contains("50"),
        "{body}"
    );
    let (status, body) = post_form(&app, "queries", &json!("not a batch")).await;
    assert_eq!(
        (status, body["error"].clone()),
        (400, json!("invalid_request"))
    );

    // A JSON body: the batch itself.
    let response = app
        .send(
            app.request(reqwest::Method::POST, "/v1/reconcile")
                .json(&batch(2)),
        )
        .await;
    assert_eq!(response.status().as_u16(), 200);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["q1"]["result"][0]["match"], true);

    // GET with `queries`, plain and JSONP.
    let encoded = |v: &Value| url_encode(&v.to_string());
    let (status, body) = app
        .get(&format!("/v1/reconcile?queries={}", encoded(&batch(1))))
        .await;
    assert_eq!(
        (status, body["q0"]["result"][0]["match"].clone()),
        (200, json!(true))
    );
    let response = app
        .send(app.request(
            reqwest::Method::GET,
            &format!(
                "/v1/reconcile?queries={}&callback=jQuery_12",
                encoded(&batch(1))
            ),
        ))
        .await;
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .expect("type")
        .starts_with("text/javascript"));
    let text = response.text().await.expect("text");
    let inner = text
        .strip_prefix("/**/jQuery_12(")
        .and_then(|t| t.strip_suffix(");"))
        .unwrap_or_else(|| panic!("not a JSONP call: {text}"));
    let inner: Value = serde_json::from_str(inner).expect("JSON inside");
    assert_eq!(inner["q0"]["result"][0]["match"], true);
    let (status, body) = app.get("/v1/reconcile?callback=alert(1)").await;
    assert_eq!(
        (status, body["error"].clone()),
        (400, json!("invalid_request"))
    );
}

/// Percent-encodes everything but unreserved characters.
fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
#[ignore = "needs ../shared/reconciliation-api-0.2 (the protocol's schemas, not in the project): cargo test -- --ignored"]
async fn suggest_and_property_proposals_follow_the_schemas() {
    let app = TestApp::start().await;
    let schemas = Schemas::load(&protocol());
    for (path, schema) in [
        (
            "/v1/reconcile/suggest/entity?prefix=126610-l",
            "suggest-entities-response.json",
        ),
        (
            "/v1/reconcile/suggest/entity?prefix=Black%20Bay",
            "suggest-entities-response.json",
        ),
        (
            "/v1/reconcile/suggest/entity?prefix=tud&type=brand",
            "suggest-entities-response.json",
        ),
        (
            "/v1/reconcile/suggest/type?prefix=cal",
            "suggest-types-response.json",
        ),
        (
            "/v1/reconcile/suggest/property?prefix=ref",
            "suggest-properties-response.json",
        ),
        (
            "/v1/reconcile/propose_properties?type=model",
            "data-extension-property-proposal.json",
        ),
    ] {
        let body = app.ok(path).await;
        assert!(
            !body["result"]
                .as_array()
                .or(body["properties"].as_array())
                .expect("list")
                .is_empty()
                || path.contains("type=brand"),
            "{path}: {body}"
        );
        schemas.assert_valid(schema, &body);
    }
    let ids = |body: &Value| -> Vec<String> {
        body["result"]
            .as_array()
            .expect("result")
            .iter()
            .map(|r| r["id"].as_str().expect("id").to_owned())
            .collect()
    };
    let by_prefix = app
        .ok("/v1/reconcile/suggest/entity?prefix=126610%20l")
        .await;
    assert_eq!(
        ids(&by_prefix),
        [
            "models/rolex/submariner-date-126610ln",
            "models/rolex/submariner-date-126610lv"
        ]
    );
    let by_name = app
        .ok("/v1/reconcile/suggest/entity?prefix=Black%20Bay")
        .await;
    assert_eq!(ids(&by_name), ["models/tudor/black-bay-fifty-eight-79030n"]);
    assert_eq!(
        ids(&app.ok("/v1/reconcile/suggest/type?prefix=cal").await),
        ["caliber"]
    );
    let properties = app.ok("/v1/reconcile/propose_properties").await;
    let proposed: Vec<&str> = properties["properties"]
        .as_array()
        .expect("properties")
        .iter()
        .map(|p| p["id"].as_str().expect("id"))
        .collect();
    assert!(proposed.contains(&"medianPriceUSD") && proposed.contains(&"caseMaterials"));
    assert_eq!(
        app.ok("/v1/reconcile/propose_properties?type=brand").await["properties"],
        json!([])
    );
}

#[tokio::test]
#[ignore = "needs ../shared/reconciliation-api-0.2 (the protocol's schemas, not in the project): cargo test -- --ignored"]
async fn extension_answers_catalogue_fields_for_up_to_50_ids() {
    let app = TestApp::start().await;
    let query = json!({
        "ids": ["models/rolex/submariner-date-126610ln", "models/tudor/1926-91450", "Q42"],
        "properties": [{"id": "reference"}, {"id": "brand"}, {"id": "caliber"},
            {"id": "caseMaterials"}, {"id": "diameter"}, {"id": "releaseYear"},
            {"id": "listingCount"}, {"id": "medianPriceUSD"}]
    });
    let (status, body) = post_form(&app, "extend", &query).await;
    assert_eq!(status, 200, "{body}");
    let row = &body["rows"]["models/rolex/submariner-date-126610ln"];
    assert_eq!(row["reference"], json!([{"str": "126610LN"}]));
    assert_eq!(
        row["brand"],
        json!([{"id": "brands/rolex", "name": "Rolex"}])
    );
    assert_eq!(row["caliber"][0]["id"], "calibers/rolex/3235");
    assert_eq!(row["caseMaterials"], json!([{"str": "oystersteel"}]));
    assert_eq!(row["diameter"], json!([{"float": 41.0}]));
    assert_eq!(row["releaseYear"], json!([{"int": 2020}]));
    assert!(row["listingCount"][0]["int"].is_i64());
    // The median is the one of GET /listings/stats.
    let stats = app
        .ok("/v1/listings/stats?brand=rolex&model=submariner-date-126610ln")
        .await;
    match stats["median"].as_u64() {
        Some(median) => assert_eq!(row["medianPriceUSD"], json!([{"int": median}])),
        None => assert_eq!(row["medianPriceUSD"], json!([])),
    }
    assert_eq!(row["listingCount"], json!([{"int": stats["count"]}]));
    // The 1926 runs an ETA movement: the calibre is under its own brand.
    assert_eq!(
        body["rows"]["models/tudor/1926-91450"]["caliber"][0]["id"],
        "calibers/eta/2824-2"
    );
    assert_eq!(body["rows"]["Q42"]["reference"], json!([]));
    let meta: Vec<&str> = body["meta"]
        .as_array()
        .expect("meta")
        .iter()
        .map(|m| m["id"].as_str().expect("id"))
        .collect();
    assert_eq!(meta.len(), 8, "{meta:?}");
    let dir = protocol();
    let schemas = Schemas::load(&dir);
    schemas.assert_valid("data-extension-query.json", &query);
    schemas.assert_valid("data-extension-response.json", &body);
    // The protocol's own examples ask another service's properties: each is refused, named.
    for example in ["example-min.json", "example-full.json"] {
        let path = dir
            .join("examples/data-extension-query/valid")
            .join(example);
        let query: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON");
        let (status, body) = post_form(&app, "extend", &query).await;
        assert_eq!(status, 400, "{example}: {body}");
        assert!(
            body["message"]
                .as_str()
                .unwrap_or("")
                .contains("`variantName`"),
            "{body}"
        );
    }
    let too_many: Vec<String> = (0..51).map(|i| format!("models/rolex/x{i}")).collect();
    let (status, body) = post_form(
        &app,
        "extend",
        &json!({"ids": too_many, "properties": [{"id": "reference"}]}),
    )
    .await;
    assert_eq!(
        (status, body["error"].clone()),
        (400, json!("invalid_request"))
    );
}

#[tokio::test]
async fn the_preview_card_escapes_names_and_carries_a_content_security_policy() {
    let dataset = tempfile::tempdir().expect("dir");
    copy_test_catalogue(dataset.path());
    let models = dataset.path().join("models.jsonl");
    let mut text = std::fs::read_to_string(&models).expect("models");
    text.push_str(
        &json!({"slug": "evil-1", "brand": "rolex", "series": "explorer",
        "name": "<script>alert('x')</script> & Co", "referenceNumber": "EV<1>",
        "pictures": [{"url": "https://cdn.example/a.jpg\"onerror=\"alert(1)", "type": "FRONT"}]})
        .to_string(),
    );
    text.push('\n');
    std::fs::write(&models, text).expect("write");
    let app = TestApp::build().dataset(dataset.path()).start().await;
    let response = app
        .send(app.request(
            reqwest::Method::GET,
            "/v1/reconcile/preview?id=models/rolex/evil-1",
        ))
        .await;
    assert_eq!(response.status().as_u16(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .expect("csp")
        .to_owned();
    assert!(
        csp.contains("default-src 'none'") && !csp.contains("script-src"),
        "{csp}"
    );
    assert!(response.headers()["content-type"]
        .to_str()
        .expect("type")
        .starts_with("text/html"));
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    let html = response.text().await.expect("html");
    assert!(!html.contains("<script>"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; Co"),
        "{html}"
    );
    assert!(html.contains("EV&lt;1&gt;"), "{html}");
    assert!(!html.contains("\"onerror"), "{html}");
    let ok = app
        .send(app.request(
            reqwest::Method::GET,
            "/v1/reconcile/preview?id=models/rolex/submariner-date-16610",
        ))
        .await
        .text()
        .await
        .expect("html");
    for part in [
        "Submariner Date",
        "16610",
        "Rolex",
        "Submariner",
        "3135",
        "<img src=",
    ] {
        assert!(ok.contains(part), "{part} in {ok}");
    }
    assert_error(
        &app,
        "/v1/reconcile/preview?id=models/rolex/nope",
        404,
        "not_found",
        "ids",
    )
    .await;
    assert_error(&app, "/v1/reconcile/preview", 400, "invalid_request", "id=").await;
}

/// A query about a model, made of its brand name, name and reference.
type QueryOf = fn(&str, &str, &str) -> Value;

/// Precision on the bundled fixtures: every catalogue model asked for by brand and
/// reference (as properties, and as free text), and by reference alone. `match: true` must
/// name the model asked for, and a reference without a brand never matches.
#[tokio::test]
async fn on_the_bundled_fixtures_match_is_never_wrong() {
    let app = TestApp::build()
        .dataset(&project().join("fixtures"))
        .start()
        .await;
    let mut models = Vec::new();
    let brands: HashMap<String, String> =
        std::fs::read_to_string(project().join("fixtures/brands.jsonl"))
            .expect("brands")
            .lines()
            .map(|l| {
                let b: Value = serde_json::from_str(l).expect("brand");
                (
                    b["slug"].as_str().expect("slug").to_owned(),
                    b["name"].as_str().expect("name").to_owned(),
                )
            })
            .collect();
    for line in std::fs::read_to_string(project().join("fixtures/models.jsonl"))
        .expect("models")
        .lines()
    {
        let m: Value = serde_json::from_str(line).expect("model");
        let brand = m["brand"].as_str().expect("brand").to_owned();
        models.push((
            format!("models/{brand}/{}", m["slug"].as_str().expect("slug")),
            brands[&brand].clone(),
            m["name"].as_str().expect("name").to_owned(),
            m["referenceNumber"].as_str().expect("reference").to_owned(),
        ));
    }
    let forms: [(&str, QueryOf); 3] = [
        (
            "properties",
            |brand, _, reference| json!({"properties": [{"pid": "brand", "v": brand}, {"pid": "reference", "v": reference}]}),
        ),
        (
            "free text",
            |brand, name, reference| json!({"query": format!("{brand} {name} {reference}")}),
        ),
        (
            "reference alone",
            |_, _, reference| json!({"query": reference}),
        ),
    ];
    for (form, make) in forms {
        let (mut matched, mut first, mut wrong) = (0, 0, Vec::new());
        for chunk in models.chunks(50) {
            let batch: serde_json::Map<String, Value> = chunk
                .iter()
                .enumerate()
                .map(|(i, (_, brand, name, reference))| {
                    (format!("q{i}"), make(brand, name, reference))
                })
                .collect();
            let (status, body) = post_form(&app, "queries", &Value::Object(batch)).await;
            assert_eq!(status, 200, "{body}");
            for (i, (id, ..)) in chunk.iter().enumerate() {
                let result = body[format!("q{i}")]["result"]
                    .as_array()
                    .expect("result")
                    .clone();
                first += usize::from(result.first().is_some_and(|c| c["id"] == id.as_str()));
                if form == "free text" && !result.iter().any(|c| c["match"] == true) {
                    eprintln!("  not matched by free text: {id}");
                }
                for candidate in result.iter().filter(|c| c["match"] == true) {
                    matched += 1;
                    if candidate["id"] != id.as_str() {
                        wrong.push(format!("{id} matched {}", candidate["id"]));
                    }
                }
            }
        }
        eprintln!(
            "fixtures, {form}: {} models, {matched} with match: true, {} wrong, {first} with the right model first",
            models.len(),
            wrong.len()
        );
        assert!(wrong.is_empty(), "{form}: {wrong:#?}");
        if form == "reference alone" {
            assert_eq!(matched, 0, "a reference without a brand never matches");
        } else {
            assert!(
                matched * 10 >= models.len() * 9,
                "{form}: only {matched} matched"
            );
        }
    }
}

/// Precision on the real-data labelled sample of the matching evaluation: each row reconciled
/// as a spreadsheet would send it (the title as free text, or the reference field as the
/// `reference` property, with the feed's brand as `brand`).
#[tokio::test]
#[ignore = "needs ../shared/data/listings (real seller text, not in the project): cargo test -- --ignored"]
async fn on_the_real_listings_sample_match_is_never_wrong() {
    let shared = shared_listings();
    let dir = tempfile::tempdir().expect("dir");
    let opened = App::open(&DataDir::new(dir.path()), 16 << 20).expect("open");
    let sample = project().join("tests/data/real-listings");
    let catalogue = DirectorySource(sample.join("catalogue"));
    opened
        .writer()
        .run(|turn| import(turn, &catalogue))
        .expect("import the sample's catalogue");
    let app = TestApp::serving(opened, dir, ApiConfig::default()).await;
    let titles = column(&shared.join(TITLES), "url", "name");
    let refs = column(&shared.join(REFERENCES), "", "reference");
    let labels: Vec<Label> = std::fs::read_to_string(sample.join("labels.jsonl"))
        .expect("labels")
        .lines()
        .map(|l| serde_json::from_str(l).expect("label"))
        .collect();
    let query = |label: &Label| -> Value {
        // The feed's brand when the label has one (the titles file has none: its titles say).
        let mut properties: Vec<Value> = label
            .brand
            .iter()
            .map(|brand| json!({"pid": "brand", "v": brand}))
            .collect();
        match label.file.as_str() {
            TITLES => json!({"query": titles[&label.row].trim(), "properties": properties}),
            REFERENCES => {
                properties.push(json!({"pid": "reference", "v": refs[&label.row].trim()}));
                json!({"properties": properties})
            }
            other => panic!("unknown file {other}"),
        }
    };
    let (mut matched, mut right_first, mut labelled, mut wrong) = (0, 0, 0, Vec::new());
    for chunk in labels.chunks(50) {
        let batch: serde_json::Map<String, Value> = chunk
            .iter()
            .enumerate()
            .map(|(i, label)| (format!("q{i}"), query(label)))
            .collect();
        let (status, body) = post_form(&app, "queries", &Value::Object(batch)).await;
        assert_eq!(status, 200, "{body}");
        for (i, label) in chunk.iter().enumerate() {
            let truth = label.model.as_ref().map(|m| format!("models/{m}"));
            let result = body[format!("q{i}")]["result"]
                .as_array()
                .expect("result")
                .clone();
            labelled += usize::from(truth.is_some());
            let first = result.first().and_then(|c| c["id"].as_str());
            right_first += usize::from(truth.is_some() && first == truth.as_deref());
            if truth.is_some() && first == truth.as_deref() && result[0]["match"] == false {
                eprintln!(
                    "  first but no match: {} row {}: {}",
                    label.file,
                    label.row,
                    query(label)
                );
            }
            for candidate in result.iter().filter(|c| c["match"] == true) {
                matched += 1;
                if Some(candidate["id"].as_str().unwrap_or("")) != truth.as_deref() {
                    wrong.push(format!(
                        "{} row {}: matched {}, labelled {truth:?}",
                        label.file, label.row, candidate["id"]
                    ));
                }
            }
        }
    }
    eprintln!(
        "real sample: {} rows, {labelled} labelled with a model; {matched} with match: true, {} wrong; right model first for {right_first} of {labelled}",
        labels.len(),
        wrong.len()
    );
    assert!(wrong.is_empty(), "match: true was wrong:\n{wrong:#?}");
    // The matcher's recall floor (real_listings.rs): the same rule, so no fewer matches.
    assert!(
        matched as f64 >= crate::real_listings::RECALL_FLOOR * labelled as f64,
        "{matched} of {labelled}"
    );
}

#[tokio::test]
async fn an_id_of_a_model_merged_since_stands_for_the_model_it_was_merged_into() {
    let app = TestApp::start().await;
    let id_of = |slug: &str| {
        let brand = app
            .app
            .store()
            .catalogue()
            .brand_by_slug(&Slug::parse("rolex").expect("slug"))
            .expect("read")
            .expect("rolex");
        app.app
            .store()
            .catalogue()
            .model_by_slug(brand.id, &Slug::parse(slug).expect("slug"))
            .expect("read")
            .expect("model")
            .id
    };
    let (keeper, merged) = (
        id_of("submariner-date-126610ln"),
        id_of("submariner-date-126610lv"),
    );
    let app_data = app.app.clone();
    tokio::task::spawn_blocking(move || {
        app_data
            .writer()
            .run(|turn| {
                watch_catalogue::jobs::merge::merge(
                    turn,
                    app_data.listings(),
                    &watch_catalogue::jobs::users::Actor::Cli,
                    keeper,
                    &[merged],
                )
            })
            .map(|_| ())
    })
    .await
    .expect("job")
    .expect("merge");
    let old = "models/rolex/submariner-date-126610lv";
    let (status, body) = post_form(
        &app,
        "extend",
        &json!({"ids": [old], "properties": [{"id": "reference"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["rows"][old]["reference"], json!([{"str": "126610LN"}]));
    let response = app
        .send(app.request(
            reqwest::Method::GET,
            &format!("/v1/reconcile/preview?id={old}"),
        ))
        .await;
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.text().await.expect("card").contains("126610LN"));
}

/// A seller's stock number (`#160-1`) is not read as a reference: the title of a Submariner
/// 16613 is never `match: true` to the Datejust 1601, on the reconciliation API as in matching.
#[tokio::test]
async fn a_stock_number_in_a_title_is_no_reference_to_match() {
    let app = TestApp::build()
        .dataset(&project().join("fixtures"))
        .start()
        .await;
    let title = "Rolex Submariner 16613 40mm Steel & Gold Serti Diamond Automatic Warranty #160-1";
    let candidates = reconcile_one(&app, json!({ "query": title })).await;
    for candidate in &candidates {
        assert!(
            !candidate["id"]
                .as_str()
                .unwrap_or("")
                .ends_with("datejust-1601"),
            "{candidate}"
        );
    }
    assert!(
        candidates.iter().all(|c| c["match"] != json!(true)),
        "{candidates:?}"
    );
}

/// A property the service has not is refused, naming it and the properties there are: dropped
/// silently, a spreadsheet's new column would stay empty with no word why.
#[tokio::test]
async fn an_unknown_extension_property_is_refused_naming_the_known_ones() {
    let app = TestApp::start().await;
    let query = json!({
        "ids": ["models/rolex/submariner-date-126610ln"],
        "properties": [{"id": "reference"}, {"id": "colour"}]
    });
    let (status, body) = post_form(&app, "extend", &query).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_request")),
        "{body}"
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap_or("")
            .contains("no property `colour`"),
        "{body}"
    );
    let hint = body["hint"].as_str().unwrap_or("");
    assert!(
        hint.contains("reference") && hint.contains("medianPriceUSD"),
        "{hint}"
    );
    let known = json!({"ids": ["models/rolex/submariner-date-126610ln"], "properties": [{"id": "reference"}]});
    assert_eq!(post_form(&app, "extend", &known).await.0, 200);
}

/// A brand written with one typo still finds its models (a spreadsheet's `Rolexx`,
/// `Patek Philipe`), never as a match: only the exact brand and reference decide one.
#[tokio::test]
async fn a_brand_written_with_a_typo_finds_its_models_but_never_matches() {
    let app = TestApp::build()
        .dataset(&project().join("fixtures"))
        .start()
        .await;
    let properties = |brand: &str, reference: &str| json!({"properties": [{"pid": "brand", "v": brand}, {"pid": "reference", "v": reference}]});
    for (query, first) in [
        (
            json!({"query": "Rolexx Submariner 16610LV"}),
            "models/rolex/submariner-date-16610lv",
        ),
        (
            properties("Patek Philipe", "5711/1A-010"),
            "models/patek-philippe/nautilus-5711-1a-010",
        ),
        (
            properties("Omegga", "3570.50.00"),
            "models/omega/speedmaster-professional-moonwatch-3570-50",
        ),
    ] {
        let candidates = reconcile_one(&app, query.clone()).await;
        assert_eq!(
            candidates.first().map(|c| &c["id"]),
            Some(&json!(first)),
            "{query}: {candidates:?}"
        );
        assert!(
            candidates.iter().all(|c| c["match"] != json!(true)),
            "{query}: {candidates:?}"
        );
    }
    // Without a reference, the brand's models by name.
    let named = reconcile_one(&app, json!({"query": "Rolexx Submariner Date"})).await;
    assert!(!named.is_empty(), "the brand's Submariners");
    assert!(
        named.iter().all(|c| c["id"]
            .as_str()
            .unwrap_or("")
            .starts_with("models/rolex/submariner")
            && c["match"] == json!(false)),
        "{named:?}"
    );
    // The brand itself, asked for by type.
    let brands = reconcile_one(&app, json!({"query": "Rolexx", "type": "brand"})).await;
    assert_eq!(
        brands.first().map(|c| (&c["id"], &c["match"])),
        Some((&json!("brands/rolex"), &json!(false))),
        "{brands:?}"
    );
    // The same, spelt right, matches.
    let right = reconcile_one(&app, json!({"query": "Rolex Submariner 16610LV"})).await;
    assert_eq!(right[0]["match"], json!(true), "{right:?}");
    // A brand added since is found with a typo too: the brands' names kept move with it.
    let dataset = tempfile::tempdir().expect("dir");
    std::fs::write(
        dataset.path().join("brands.jsonl"),
        "{\"slug\":\"kurofune\",\"name\":\"Kurofune\"}\n",
    )
    .expect("brands");
    let source = watch_catalogue::jobs::import::DirectorySource(dataset.path().to_owned());
    app.app
        .writer()
        .run(|turn| watch_catalogue::jobs::import::import(turn, &source))
        .expect("import");
    let brands = reconcile_one(&app, json!({"query": "Kurofnue", "type": "brand"})).await;
    assert_eq!(
        brands.first().map(|c| &c["id"]),
        Some(&json!("brands/kurofune")),
        "{brands:?}"
    );
}

/// A spreadsheet's column of 10,000 rows, sent as OpenRefine sends it (batches of 10, one after
/// another, as fast as they are answered), goes through: the reconciliation service has its own
/// budget per client, which the public budget's 600 requests would have cut at row 6,000. Its
/// requests leave the public budget alone; past its own, 429 as anywhere.
#[tokio::test]
async fn a_column_of_ten_thousand_rows_in_batches_of_ten_goes_through() {
    let app = TestApp::start().await;
    let mut public_before = None;
    for batch in 0..1_000 {
        let queries: serde_json::Map<String, Value> = (0..10)
            .map(|row| {
                // Rows the catalogue knows nothing of: the budget is what is tried here.
                let text = format!("row {}", batch * 10 + row);
                (format!("q{row}"), json!({ "query": text, "limit": 1 }))
            })
            .collect();
        let response = app
            .send(
                app.request(reqwest::Method::POST, "/v1/reconcile")
                    .form(&[("queries", Value::Object(queries).to_string())]),
            )
            .await;
        assert_eq!(response.status().as_u16(), 200, "batch {batch}");
        let policy = response.headers()["ratelimit-policy"]
            .to_str()
            .unwrap_or("")
            .to_owned();
        assert_eq!(policy, "1200;w=60;policy=reconcile", "batch {batch}");
        if batch == 0 {
            let public = app
                .send(app.request(reqwest::Method::GET, "/v1/brands"))
                .await;
            public_before = Some(public.headers()["ratelimit-remaining"].clone());
        }
    }
    let public = app
        .send(app.request(reqwest::Method::GET, "/v1/brands"))
        .await;
    let remaining = |value: Option<reqwest::header::HeaderValue>| {
        value
            .and_then(|v| v.to_str().ok()?.parse::<u32>().ok())
            .unwrap_or(0)
    };
    assert_eq!(
        remaining(Some(public.headers()["ratelimit-remaining"].clone())),
        remaining(public_before) - 1,
        "a thousand reconciliation requests took nothing of the public budget"
    );
    // The rest of the reconciliation budget, then a refusal with Retry-After.
    for _ in 0..200 {
        let response = app
            .send(app.request(reqwest::Method::GET, "/v1/reconcile/suggest/type?prefix=m"))
            .await;
        assert_eq!(response.status().as_u16(), 200);
    }
    let refused = app
        .send(app.request(reqwest::Method::GET, "/v1/reconcile/suggest/type?prefix=m"))
        .await;
    assert_eq!(refused.status().as_u16(), 429);
    assert!(refused.headers().get("retry-after").is_some());
}

/// A reference the brand lacks still leaves the brand's models as candidates, by the query's
/// other words (never a match): a spreadsheet row with a typo'd reference is not left empty.
#[tokio::test]
async fn an_unknown_reference_still_gets_its_brands_candidates() {
    let app = TestApp::build()
        .dataset(&project().join("fixtures"))
        .start()
        .await;
    let query =
        json!({"properties": [{"pid": "brand", "v": "Rolex"}, {"pid": "reference", "v": "99999"}]});
    let candidates = reconcile_one(&app, query).await;
    assert!(!candidates.is_empty(), "the brand's candidates");
    assert!(
        candidates.iter().all(
            |c| c["id"].as_str().unwrap_or("").starts_with("models/rolex/")
                && c["match"] == json!(false)
        ),
        "{candidates:?}"
    );
}
