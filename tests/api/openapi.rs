//! The OpenAPI document: a valid 3.0 document naming exactly the routes the router serves, and
//! changed only additively against the snapshot committed in tests/api/openapi.snapshot.json.
//! After an intended, additive change: `UPDATE_OPENAPI_SNAPSHOT=1 cargo test --test api openapi`.

use crate::support::*;
use serde_json::Value;
use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use watch_catalogue::domain::Role;

/// A real value for each path parameter, so every documented path can be requested.
pub fn example_path(path: &str) -> String {
    let concrete = match path {
        "/brands/{slug}" => "/brands/rolex".to_owned(),
        "/models/{brandSlug}/{slug}" => "/models/rolex/submariner-date-126610ln".to_owned(),
        "/calibers/{brandSlug}/{ref}" => "/calibers/eta/2824-2".to_owned(),
        "/listings/{id}" => "/listings/1".to_owned(),
        "/admin/jobs/{id}" => "/admin/jobs/1".to_owned(),
        "/picture-review/models/{id}/front-picture" => {
            "/picture-review/models/1/front-picture".to_owned()
        }
        "/reconcile/preview" => {
            "/reconcile/preview?id=models/rolex/submariner-date-16610".to_owned()
        }
        "/models/compare" => {
            "/models/compare?models=rolex/submariner-date-126610ln,rolex/submariner-date-16610"
                .to_owned()
        }
        "/listings/stats" => {
            "/listings/stats?brand=rolex&model=submariner-date-126610ln".to_owned()
        }
        "/listings/stats/history" => {
            "/listings/stats/history?brand=rolex&model=submariner-date-126610ln".to_owned()
        }
        other => other
            .replace("{brandSlug}", "rolex")
            .replace("{seriesSlug}", "submariner"),
    };
    format!("/v1{concrete}")
}

#[tokio::test]
async fn the_document_is_openapi_3_0_and_names_exactly_the_routes_served() {
    let app = TestApp::build().user("ana", Role::Admin).start().await;
    let admin = app.session("ana").await;
    let doc = app.ok("/v1/openapi.json").await;
    assert_eq!(doc, app.ok("/openapi.json").await);
    assert_eq!(doc["openapi"], "3.0.3");
    assert_eq!(doc["info"]["version"], "1.0.0");
    let parsed: openapiv3::OpenAPI =
        serde_json::from_value(doc.clone()).expect("a valid OpenAPI 3.0 document");
    assert_eq!(parsed.servers[0].url, "/v1");

    let documented: BTreeSet<String> = doc["paths"]
        .as_object()
        .expect("paths")
        .keys()
        .cloned()
        .collect();
    let served: BTreeSet<String> = watch_catalogue::api::v1_paths()
        .iter()
        .map(|p| p.to_string())
        .collect();
    assert_eq!(
        documented, served,
        "documented paths differ from the router's"
    );
    // Every documented read answers its example, with a session where it needs one (job 1
    // exists once submitted).
    let (status, _) = admin
        .call(reqwest::Method::POST, "/v1/admin/match", None)
        .await;
    assert_eq!(status, 202);
    for (path, item) in doc["paths"].as_object().expect("paths") {
        if item.get("get").is_none() {
            continue;
        }
        let (status, body) = admin.get(&example_path(path)).await;
        assert_eq!(status, 200, "{path}: {body}");
    }

    let mut operation_ids = HashSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("operations") {
            let id = operation["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            assert!(
                operation_ids.insert(id.to_owned()),
                "operationId {id} is used twice"
            );
            let success = ["204", "202", "201"]
                .into_iter()
                .find(|status| operation["responses"][status].is_object())
                .unwrap_or("200");
            for status in [success, "400", "404", "405", "429", "500"] {
                assert!(
                    operation["responses"][status].is_object(),
                    "{method} {path} lacks a {status} response"
                );
            }
            assert_eq!(
                operation["responses"]["404"]["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorBody"
            );
            let headers = &operation["responses"][success]["headers"];
            for name in [
                "X-API-Version",
                "RateLimit-Limit",
                "RateLimit-Remaining",
                "RateLimit-Reset",
                "RateLimit-Policy",
            ] {
                assert!(
                    headers[name].is_object(),
                    "{method} {path}: {success} lacks {name}"
                );
            }
            // Caching as the route table says: shared reads carry an ETag, the rest no-store.
            let cache = headers["Cache-Control"]["description"].as_str();
            if operation.get("security").is_some() || path.starts_with("/auth/") {
                assert!(headers.get("ETag").is_none(), "{method} {path}");
                if success == "200" {
                    assert_eq!(cache, Some("private, no-store"), "{method} {path}");
                }
            } else if method == "post" {
                // A public POST (the reconciliation service) is not cached at all.
                assert!(headers.get("ETag").is_none(), "{method} {path}");
                assert!(headers.get("Cache-Control").is_none(), "{method} {path}");
            } else {
                assert!(
                    headers["ETag"].is_object(),
                    "{method} {path}: 200 lacks ETag"
                );
                assert_eq!(cache, Some("public, max-age=60"), "{method} {path}");
            }
            assert!(operation["responses"]["429"]["headers"]["Retry-After"].is_object());
        }
    }
    let mut references = Vec::new();
    collect_references(&doc, &mut references);
    assert!(references.len() > 20, "{references:?}");
    for reference in references {
        let pointer = reference
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{reference} is not local"));
        assert!(
            doc.pointer(pointer).is_some(),
            "{reference} resolves to nothing"
        );
    }
    let scheme = &doc["components"]["securitySchemes"]["adminSession"];
    assert_eq!(
        (scheme["type"].as_str(), scheme["in"].as_str()),
        (Some("apiKey"), Some("cookie"))
    );
    let full_model = &doc["components"]["schemas"]["FullModel"]["allOf"][1];
    assert!(
        full_model["required"]
            .as_array()
            .expect("required")
            .contains(&Value::from("description")),
        "nullable fields are present: required"
    );
    let sort = doc["paths"]["/models"]["get"]["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .find(|p| p["name"] == "sort")
        .cloned()
        .expect("sort");
    assert_eq!(
        sort["schema"]["enum"],
        serde_json::json!([
            "relevance",
            "newest",
            "name_asc",
            "name_desc",
            "reference_asc"
        ])
    );
    // A model page carries `facets` only when asked, and only the facets asked.
    let schemas = &doc["components"]["schemas"];
    let page_required = schemas["ModelPage"]["required"]
        .as_array()
        .expect("required");
    assert!(page_required.contains(&Value::from("total")));
    assert!(!page_required.contains(&Value::from("facets")));
    assert!(schemas["FacetsView"]["required"].is_null());
}

fn collect_references(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                out.push(reference.clone());
            }
            map.values().for_each(|v| collect_references(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_references(v, out)),
        _ => {}
    }
}

const PROSE: [&str; 3] = ["description", "summary", "example"];

/// Fails when something in `old` is missing from `new` or has another value: a removed path,
/// parameter, field, enum value or error code, or a changed type.
fn assert_additive(old: &Value, new: &Value, at: &str, problems: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, value) in old {
                if PROSE.contains(&key.as_str()) {
                    continue;
                }
                match new.get(key) {
                    Some(now) => assert_additive(value, now, &format!("{at}/{key}"), problems),
                    None => problems.push(format!("{at}/{key} was removed")),
                }
            }
        }
        (Value::Array(old), Value::Array(new)) => {
            for (index, value) in old.iter().enumerate() {
                let same_name = |v: &&Value| {
                    v.get("name").is_some()
                        && v.get("name") == value.get("name")
                        && v.get("in") == value.get("in")
                };
                // The parts of an `allOf` are one schema: a part grows in place.
                let same_part = || new.get(index).filter(|_| at.ends_with("/allOf"));
                match new
                    .iter()
                    .find(same_name)
                    .or_else(|| new.iter().find(|v| *v == value))
                    .or_else(same_part)
                {
                    Some(now) => assert_additive(value, now, &format!("{at}[{index}]"), problems),
                    None => problems.push(format!("{at}: {value} was removed")),
                }
            }
        }
        (old, new) if old != new => problems.push(format!("{at} changed from {old} to {new}")),
        _ => {}
    }
}

#[tokio::test]
async fn changes_within_v1_are_additive_against_the_committed_snapshot() {
    let current: Value =
        serde_json::from_str(watch_catalogue::api::openapi::document_json()).expect("document");
    let snapshot_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/openapi.snapshot.json");
    if std::env::var_os("UPDATE_OPENAPI_SNAPSHOT").is_some() {
        std::fs::write(
            &snapshot_path,
            watch_catalogue::api::openapi::document_json(),
        )
        .expect("write snapshot");
    }
    let snapshot: Value = serde_json::from_str(
        &std::fs::read_to_string(&snapshot_path).expect("the committed snapshot"),
    )
    .expect("snapshot JSON");
    let mut problems = Vec::new();
    assert_additive(&snapshot, &current, "", &mut problems);
    // A parameter that became required, or a new required one, breaks existing clients too.
    for (path, item) in current["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("operations") {
            for parameter in operation["parameters"].as_array().into_iter().flatten() {
                let before = &snapshot["paths"][path][method];
                // A new operation may require what it likes: no client calls it yet.
                if parameter["required"] == true && parameter["in"] != "path" && !before.is_null() {
                    let before = &before["parameters"];
                    let was_required = before
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|p| p["name"] == parameter["name"] && p["required"] == true);
                    if !was_required {
                        problems.push(format!(
                            "{method} {path}: parameter {} is newly required",
                            parameter["name"]
                        ));
                    }
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "breaking changes to the v1 contract:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_additive_check_catches_removals_and_retypes() {
    let old = serde_json::json!({"paths": {"/a": {"get": {"parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}]}}}, "enum": ["x", "y"]});
    let mut problems = Vec::new();
    let same_plus = serde_json::json!({"paths": {"/a": {"get": {"parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}, {"name": "n", "in": "query"}]}}, "/b": {}}, "enum": ["x", "y", "z"]});
    assert_additive(&old, &same_plus, "", &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    let retyped = serde_json::json!({"paths": {"/a": {"get": {"parameters": [{"name": "q", "in": "query", "schema": {"type": "integer"}}]}}}, "enum": ["x"]});
    assert_additive(&old, &retyped, "", &mut problems);
    assert_eq!(problems.len(), 2, "{problems:?}");
    // A part of an `allOf` may gain a property, never lose one.
    let part = |properties: Value| serde_json::json!({"allOf": [{"$ref": "#/x"}, {"properties": properties}]});
    let mut problems = Vec::new();
    let (a, ab) = (
        part(serde_json::json!({"a": {}})),
        part(serde_json::json!({"a": {}, "b": {}})),
    );
    assert_additive(&a, &ab, "", &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    assert_additive(&ab, &a, "", &mut problems);
    assert_eq!(problems, ["/allOf[1]/properties/b was removed"]);
}
