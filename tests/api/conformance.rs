//! The OpenAPI document against real answers, read by an independent validator (the
//! jsonschema crate). Every answer a test gets through the router in process passes
//! [`check_answer`]: its status is one its operation documents and its JSON body is valid under
//! the documented schema. `nullable` is read as OpenAPI 3.0.3 says, widening only the `type`
//! beside it, as openapi-core reads it. The tests here add an answer of every documented
//! operation, a 304 of every shared read, and every query parameter tried at the edges its
//! schema draws.

use crate::support::*;
use jsonschema::{Draft, Validator};
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use watch_catalogue::domain::Role;

/// The document, with its schemas as JSON Schema, and a validator per documented answer.
struct Contract {
    document: Value,
    components: Value,
    validators: Mutex<HashMap<String, Arc<Validator>>>,
}

fn contract() -> &'static Contract {
    static CONTRACT: OnceLock<Contract> = OnceLock::new();
    CONTRACT.get_or_init(|| {
        let document: Value = serde_json::from_str(watch_catalogue::api::openapi::document_json())
            .expect("the document is JSON");
        let mut components = document["components"].clone();
        as_json_schema_map(&mut components["schemas"]);
        Contract {
            document,
            components,
            validators: Mutex::new(HashMap::new()),
        }
    })
}

/// An OpenAPI 3.0 schema as the JSON Schema it means: `nullable: true` adds `null` to the
/// `type` beside it (and to nothing else: an `enum` must name `null` itself); examples dropped.
fn as_json_schema(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    if map.remove("nullable") == Some(Value::Bool(true)) {
        if let Some(Value::String(kind)) = map.get("type").cloned() {
            map.insert("type".into(), json!([kind, "null"]));
        }
    }
    map.remove("example");
    for keyword in ["items", "additionalProperties", "not"] {
        if let Some(inner) = map.get_mut(keyword) {
            as_json_schema(inner);
        }
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(members)) = map.get_mut(keyword) {
            members.iter_mut().for_each(as_json_schema);
        }
    }
    if let Some(properties) = map.get_mut("properties") {
        as_json_schema_map(properties);
    }
}

fn as_json_schema_map(schemas: &mut Value) {
    if let Some(map) = schemas.as_object_mut() {
        map.values_mut().for_each(as_json_schema);
    }
}

/// The documented path `path` (with `/v1` or not, no query) answers at: the template whose
/// segments match, literal segments before parameters.
fn template_of(path: &str) -> Option<String> {
    let path = path.strip_prefix("/v1").unwrap_or(path);
    let segments: Vec<&str> = path.split('/').collect();
    let paths = contract().document["paths"].as_object()?;
    paths
        .keys()
        .filter_map(|template| {
            let parts: Vec<&str> = template.split('/').collect();
            if parts.len() != segments.len() {
                return None;
            }
            let mut literals = 0;
            for (part, segment) in parts.iter().zip(&segments) {
                if part.starts_with('{') {
                    continue;
                }
                if part != segment {
                    return None;
                }
                literals += 1;
            }
            Some((literals, template))
        })
        .max_by_key(|(literals, _)| *literals)
        .map(|(_, template)| template.clone())
}

/// The operation of `method` at `template`, when documented.
fn operation(method: &Method, template: &str) -> Option<&'static Value> {
    let operation = &contract().document["paths"][template][method.as_str().to_lowercase()];
    operation.is_object().then_some(operation)
}

/// Asserts an answer of the router is one the document promises; answers outside the
/// documented paths and methods (the console, media, HEAD) are left alone.
pub fn check_answer(
    method: &Method,
    path: &str,
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
) {
    let Some(template) = template_of(path) else {
        return;
    };
    let Some(operation) = operation(method, &template) else {
        return;
    };
    let documented = &operation["responses"][status.to_string()];
    assert!(
        documented.is_object(),
        "{method} {path} answered {status}, which {method} {template} does not document: {}",
        String::from_utf8_lossy(body)
    );
    let Some(schema) = documented["content"]["application/json"]["schema"].as_object() else {
        assert!(
            body.is_empty() || !matches!(status, 204 | 304),
            "{method} {path}: a {status} has a body"
        );
        return;
    };
    if !content_type.is_some_and(|kind| kind.starts_with("application/json")) {
        // JSONP (`callback`) answers JavaScript: the same value, not a JSON body.
        return;
    }
    let instance: Value = serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("{method} {path}: the {status} body is not JSON: {e}"));
    let key = format!("{method} {template} {status}");
    let validator = validator(&key, &Value::Object(schema.clone()));
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .take(5)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{key}: the body is not as documented:\n{}\n{instance:#}",
        errors.join("\n")
    );
}

fn validator(key: &str, schema: &Value) -> Arc<Validator> {
    let mut validators = contract()
        .validators
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    validators
        .entry(key.to_owned())
        .or_insert_with(|| {
            let mut schema = schema.clone();
            as_json_schema(&mut schema);
            let root = json!({"allOf": [schema], "components": contract().components});
            let validator = jsonschema::options()
                .with_draft(Draft::Draft4)
                .build(&root)
                .unwrap_or_else(|e| panic!("{key}: the documented schema does not compile: {e}"));
            Arc::new(validator)
        })
        .clone()
}

/// Every (method, path) the document names.
fn documented_operations() -> BTreeSet<(String, String)> {
    let mut operations = BTreeSet::new();
    for (path, item) in contract().document["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("operations").keys() {
            operations.insert((method.to_uppercase(), path.clone()));
        }
    }
    operations
}

/// One request of the walk over every operation: method, path (with `/v1`), JSON body, and
/// the status it is answered.
type Call = (Method, String, Option<Value>, u16);

/// A request of every operation of the back office and the public API with a JSON body or
/// none, in an order that leaves each one something to act on; `groups` are two ids of
/// `GET /reconciliation`. The picture-review actions meet no candidate in the test catalogue:
/// their 404 is checked here, their successes in tests/api/picture_review.rs.
fn every_operation(groups: [&str; 2]) -> Vec<Call> {
    let call = |method: Method, path: &str, body: Option<Value>, status: u16| {
        (method, path.to_owned(), body, status)
    };
    vec![
        call(Method::GET, "/v1/auth/session", None, 200),
        call(Method::POST, "/v1/admin/match", None, 202),
        call(Method::POST, "/v1/admin/reindex", None, 202),
        call(Method::POST, "/v1/admin/duplicates/rebuild", None, 202),
        call(
            Method::POST,
            "/v1/admin/users",
            Some(json!({"name": "bo", "password": "a long enough passphrase", "role": "viewer"})),
            201,
        ),
        call(
            Method::PUT,
            "/v1/admin/users/bo/role",
            Some(json!({"role": "admin"})),
            200,
        ),
        call(
            Method::PUT,
            "/v1/admin/users/bo/password",
            Some(json!({"password": "another long passphrase"})),
            200,
        ),
        call(Method::DELETE, "/v1/admin/users/bo", None, 200),
        call(
            Method::POST,
            "/v1/reconciliation/link",
            Some(json!({"listings": ["1"], "model": "1"})),
            200,
        ),
        call(
            Method::POST,
            "/v1/reconciliation/models",
            Some(
                json!({"group": groups[0], "fields": {"brand": "rolex", "series": "submariner", "name": "Probe", "referenceNumber": "PROBE-1"}}),
            ),
            200,
        ),
        call(
            Method::POST,
            "/v1/reconciliation/models/update",
            Some(json!({"group": groups[1], "model": "1"})),
            200,
        ),
        call(
            Method::PUT,
            "/v1/picture-review/models/1/front-picture",
            Some(json!({"url": "https://images.example.com/probe.jpg", "protected": true})),
            200,
        ),
        call(
            Method::POST,
            "/v1/picture-review/candidates/1/select",
            None,
            404,
        ),
        call(
            Method::POST,
            "/v1/picture-review/pictures/1/keep",
            None,
            404,
        ),
        call(
            Method::POST,
            "/v1/duplicate-models/dismiss",
            Some(json!({"modelIds": ["1", "2"]})),
            200,
        ),
        call(
            Method::POST,
            "/v1/duplicate-models/merge",
            Some(json!({"keeperId": "1", "duplicateIds": ["2"]})),
            200,
        ),
        call(
            Method::POST,
            "/v1/auth/login",
            Some(json!({"username": "ana", "password": TEST_PASSWORD})),
            200,
        ),
        call(Method::POST, "/v1/auth/logout", None, 204),
    ]
}

#[tokio::test]
async fn every_documented_operation_answers_as_the_document_says() {
    let app = TestApp::build().user("ana", Role::Admin).start().await;
    let admin = app.session("ana").await;
    let mut called = BTreeSet::new();
    let snapshot = std::fs::read(test_feeds().join("listings/ebay.jsonl")).expect("a feed");
    let rates = std::fs::read(test_catalogue().join("rates.xml")).expect("rates");
    for (content_type, path, body) in [
        (
            "application/x-ndjson",
            "/v1/admin/providers/ebay/snapshot",
            snapshot,
        ),
        ("application/xml", "/v1/admin/rates", rates),
    ] {
        let request = admin.request(Method::POST, path);
        let response = app
            .send(request.header("content-type", content_type).body(body))
            .await;
        assert_eq!(response.status(), 202, "{path}");
        called.insert(("POST".to_owned(), path.to_owned()));
    }
    // Every read (job 1 exists now), each answer checked on its way ([`check_answer`]).
    for (method, path) in documented_operations() {
        if method == "GET" {
            let url = crate::openapi::example_path(&path);
            let (status, body) = admin.get(&url).await;
            assert_eq!(status, 200, "GET {url}: {body}");
            called.insert((method, path));
        }
    }
    let queries = json!({"q0": {"query": "Rolex 16610"}}).to_string();
    let form = app
        .request(Method::POST, "/v1/reconcile")
        .form(&[("queries", queries)]);
    assert_eq!(app.send(form).await.status(), 200);
    called.insert(("POST".to_owned(), "/v1/reconcile".to_owned()));

    let groups = admin.ok("/v1/reconciliation").await;
    let group = |i: usize| {
        groups["data"][i]["id"]
            .as_str()
            .expect("a group")
            .to_owned()
    };
    let (first, second) = (group(0), group(1));
    for (method, path, body, expected) in every_operation([&first, &second]) {
        let (status, answer) = admin.call(method.clone(), &path, body).await;
        assert_eq!(status, expected, "{method} {path}: {answer}");
        called.insert((method.to_string(), path));
    }
    let called: BTreeSet<(String, String)> = called
        .into_iter()
        .map(|(method, path)| {
            let template = template_of(&path).unwrap_or(path);
            (method, template)
        })
        .collect();
    let unwalked: Vec<_> = documented_operations()
        .difference(&called)
        .cloned()
        .collect();
    assert!(
        unwalked.is_empty(),
        "operations the walk misses: {unwalked:?}"
    );
}

#[tokio::test]
async fn every_shared_read_answers_the_documented_304_to_its_own_tag() {
    let app = TestApp::start().await;
    for (method, path) in documented_operations() {
        let get = &contract().document["paths"][&path]["get"];
        if method != "GET" || !get["responses"]["304"].is_object() {
            continue;
        }
        let url = crate::openapi::example_path(&path);
        let first = app.send(app.request(Method::GET, &url)).await;
        assert_eq!(first.status(), 200, "{url}");
        let tag = first.headers()["etag"].clone();
        let again = app
            .send(app.request(Method::GET, &url).header("if-none-match", tag))
            .await;
        assert_eq!(again.status(), 304, "{url}");
    }
}

/// Values of a query parameter its schema refuses (each should be a 400) and values it allows
/// (each should be anything but a 400), from the schema alone.
fn edges(schema: &Value) -> (Vec<String>, Vec<String>) {
    let mut refused = Vec::new();
    let mut allowed = Vec::new();
    let schema = if schema["type"] == "array" {
        &schema["items"]
    } else {
        schema
    };
    if let Some(values) = schema["enum"].as_array() {
        allowed.extend(values.iter().filter_map(|v| v.as_str().map(str::to_owned)));
        refused.extend(["".to_owned(), "no-such-value".to_owned()]);
        return (refused, allowed);
    }
    match schema["type"].as_str() {
        Some("integer") | Some("number") => {
            refused.extend(["".to_owned(), "x".to_owned()]);
            if let Some(max) = schema["maximum"].as_i64() {
                allowed.push(max.to_string());
                refused.push((max + 1).to_string());
            }
            if let Some(min) = schema["minimum"].as_i64() {
                allowed.push(min.to_string());
                refused.push((min - 1).to_string());
            }
        }
        Some("boolean") => {
            refused.extend(["".to_owned(), "yes".to_owned()]);
            allowed.extend(["true".to_owned(), "false".to_owned()]);
        }
        Some("string") => {
            let empty = String::new();
            if schema["minLength"].as_u64().unwrap_or(0) > 0 || schema["pattern"].is_string() {
                refused.push(empty);
            } else {
                allowed.push(empty);
            }
        }
        _ => {}
    }
    (refused, allowed)
}

/// Parameter values whose answer depends on another parameter, as their descriptions say.
const DEPENDENT: [(&str, &str, &str); 2] = [
    // DELISTED listings are shown only with includeDelisted=true.
    ("/listings", "status", "DELISTED"),
    // A model slug is one only within a brand: `model` needs `brand`.
    ("/listings", "model", ""),
];

#[tokio::test]
async fn every_query_parameter_is_checked_as_its_schema_says() {
    let app = TestApp::build().user("ana", Role::Admin).start().await;
    let admin = app.session("ana").await;
    let mut problems = Vec::new();
    for (path, item) in contract().document["paths"].as_object().expect("paths") {
        let Some(parameters) = item["get"]["parameters"].as_array() else {
            continue;
        };
        let example = crate::openapi::example_path(path);
        for parameter in parameters.iter().filter(|p| p["in"] == "query") {
            let name = parameter["name"].as_str().expect("a name");
            if example.contains(&format!("?{name}=")) || example.contains(&format!("&{name}=")) {
                continue;
            }
            let separator = if example.contains('?') { '&' } else { '?' };
            let (refused, allowed) = edges(&parameter["schema"]);
            for (value, should_refuse) in refused
                .iter()
                .map(|v| (v, true))
                .chain(allowed.iter().map(|v| (v, false)))
            {
                if DEPENDENT.contains(&(path.as_str(), name, value.as_str())) {
                    continue;
                }
                let encoded: String = form_urlencoded::byte_serialize(value.as_bytes()).collect();
                let url = format!("{example}{separator}{name}={encoded}");
                let (status, body) = admin.get(&url).await;
                if (status == 400) != should_refuse {
                    problems.push(format!("{url}: {status} {body}"));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "parameters whose checks differ from their schema:\n{}",
        problems.join("\n")
    );
}

/// Bodies at the edges of their schemas, where a handler's own checks could drift from the
/// document: each is refused (400) exactly when the document's schema refuses it.
fn edge_bodies() -> Vec<(Method, &'static str, Value)> {
    let link = "/v1/reconciliation/link";
    let dismiss = "/v1/duplicate-models/dismiss";
    vec![
        (
            Method::POST,
            link,
            json!({"group": "0000000000000000", "listings": ["1"], "model": "1"}),
        ),
        (Method::POST, link, json!({"listings": [], "model": "1"})),
        (Method::POST, link, json!({"model": "1"})),
        (
            Method::POST,
            link,
            json!({"group": null, "listings": null, "model": "1"}),
        ),
        (
            Method::POST,
            link,
            json!({"group": null, "listings": ["1"], "model": "1"}),
        ),
        (
            Method::POST,
            link,
            json!({"listings": ["1"], "model": "1", "extra": true}),
        ),
        (Method::POST, dismiss, json!({"modelIds": []})),
        (Method::POST, dismiss, json!({"modelIds": ["1"]})),
        (Method::POST, dismiss, json!({"modelIds": ["1", "2"]})),
        (
            Method::POST,
            "/v1/duplicate-models/merge",
            json!({"keeperId": "1"}),
        ),
        (Method::POST, "/v1/admin/users", json!({"name": "cy"})),
        (
            Method::POST,
            "/v1/admin/users",
            json!({"name": "cy", "password": "a long enough passphrase", "role": "king"}),
        ),
        (
            Method::POST,
            "/v1/admin/users",
            json!({"name": "Cy", "password": "a long enough passphrase", "role": "viewer"}),
        ),
        (
            Method::POST,
            "/v1/admin/users",
            json!({"name": "cy", "password": "short", "role": "viewer"}),
        ),
        (
            Method::PUT,
            "/v1/admin/users/ana/password",
            json!({"password": "short"}),
        ),
        (
            Method::PUT,
            "/v1/admin/users/ana/role",
            json!({"role": "king"}),
        ),
        (Method::PUT, "/v1/admin/users/ana/password", json!({})),
        (
            Method::PUT,
            "/v1/picture-review/models/1/front-picture",
            json!({"protected": "yes"}),
        ),
        (
            Method::POST,
            "/v1/reconciliation/models",
            json!({"group": "0000000000000000"}),
        ),
        (
            Method::POST,
            "/v1/reconciliation/models/update",
            json!({"model": "1"}),
        ),
    ]
}

#[tokio::test]
async fn request_bodies_are_refused_exactly_when_the_document_refuses_them() {
    let app = TestApp::build().user("ana", Role::Admin).start().await;
    let admin = app.session("ana").await;
    let mut problems = Vec::new();
    for (method, path, body) in edge_bodies() {
        let template = template_of(path).expect("a documented path");
        let schema = &operation(&method, &template).expect("a documented operation")["requestBody"]
            ["content"]["application/json"]["schema"];
        let key = format!("{method} {template} request");
        let documented_valid = validator(&key, schema).is_valid(&body);
        let (status, answer) = admin.call(method.clone(), path, Some(body.clone())).await;
        if documented_valid == (status == 400) {
            problems.push(format!(
                "{method} {path} {body}: the document says {}, the server {status} {answer}",
                if documented_valid { "valid" } else { "invalid" }
            ));
        }
    }
    // A POST to the reconciliation service must carry something to answer, as the document's
    // required body says; the manifest is a GET's.
    let (status, answer) = admin.call(Method::POST, "/v1/reconcile", None).await;
    if status != 400 {
        problems.push(format!(
            "POST /v1/reconcile without a body: {status} {answer}"
        ));
    }
    assert!(
        problems.is_empty(),
        "bodies the document and the server judge differently:\n{}",
        problems.join("\n")
    );
}
