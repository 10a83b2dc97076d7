//! README's endpoint table: every route the router serves has its row, with the methods it
//! answers and who may call it, and no row names a route that does not exist.

use crate::support::*;
use std::collections::BTreeMap;
use watch_catalogue::api::{allowed_methods, v1_policies, Access, OUTSIDE_V1_PATHS};

/// The section of README.md that lists the endpoints.
const SECTION: &str = "### Every endpoint";

/// A row as README writes it: the methods (`GET, POST`), the access (`public` or `admin`).
type Rows = BTreeMap<String, (String, String)>;

/// The rows of each markdown table in the endpoint section of `readme`, table by table: the path
/// (out of its backticks) to its methods and access, each path once.
fn endpoint_tables(readme: &str) -> Vec<Rows> {
    let section = readme
        .split_once(SECTION)
        .map(|(_, rest)| rest.split("\n### ").next().unwrap_or(rest))
        .unwrap_or_else(|| panic!("README.md has no `{SECTION}` section"));
    let mut tables: Vec<Rows> = Vec::new();
    let mut in_table = false;
    for line in section.lines() {
        let Some(row) = line.strip_prefix('|') else {
            in_table = false;
            continue;
        };
        if !in_table {
            // A table starts with its header row and the delimiter row after it.
            in_table = true;
            tables.push(Rows::new());
            continue;
        }
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        if cells[0].starts_with("---") {
            continue;
        }
        let [methods, path, access, ..] = cells[..] else {
            panic!("README row with fewer than four cells: {line}");
        };
        let path = path.trim_matches('`').to_owned();
        let row = (methods.to_owned(), access.to_owned());
        let table = tables.last_mut().expect("a table");
        assert!(
            table.insert(path.clone(), row).is_none(),
            "README lists {path} twice"
        );
    }
    tables
}

/// README's methods as the route table's `Allow` says them: `GET, POST` -> `GET, HEAD, POST`.
fn as_allow(methods: &str) -> String {
    methods
        .split(',')
        .map(str::trim)
        .map(|method| match method {
            "GET" => "GET, HEAD",
            other => other,
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn access_name(access: Access) -> &'static str {
    match access {
        Access::Public => "public",
        Access::Admin => "admin",
    }
}

/// The v1 routes as README should list them: every row of the route table, and the OpenAPI
/// document the router serves beside it.
fn v1_routes() -> Rows {
    let mut rows: Rows = v1_policies()
        .iter()
        .map(|policy| {
            let row = (
                policy.methods.allow(),
                access_name(policy.access).to_owned(),
            );
            (policy.path.to_owned(), row)
        })
        .collect();
    rows.insert(
        "/openapi.json".to_owned(),
        (allowed_methods("/v1/openapi.json"), "public".to_owned()),
    );
    rows
}

/// The routes outside v1, all public reads.
fn outside_v1_routes() -> Rows {
    OUTSIDE_V1_PATHS
        .iter()
        .map(|path| {
            let row = (allowed_methods(path), "public".to_owned());
            ((*path).to_owned(), row)
        })
        .collect()
}

/// Each table's rows with README's methods spelled as the route table's `Allow`.
fn as_served(table: &Rows) -> Rows {
    table
        .iter()
        .map(|(path, (methods, access))| (path.clone(), (as_allow(methods), access.clone())))
        .collect()
}

/// What differs between the README's rows and the routes: missing, extra, and different rows.
fn differences(readme: &Rows, routes: &Rows) -> Vec<String> {
    let missing = routes
        .iter()
        .filter(|(path, _)| !readme.contains_key(*path))
        .map(|(path, row)| format!("missing from README: {path} {row:?}"));
    let extra = readme
        .keys()
        .filter(|path| !routes.contains_key(*path))
        .map(|path| format!("README names a route the router does not serve: {path}"));
    let different = readme
        .iter()
        .filter_map(|(path, row)| Some((path, row, routes.get(path)?)))
        .filter(|(_, row, served)| row != served)
        .map(|(path, row, served)| format!("{path}: README says {row:?}, the router {served:?}"));
    missing.chain(extra).chain(different).collect()
}

#[test]
fn the_readme_lists_every_route_with_its_methods_and_access() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let tables = endpoint_tables(&readme);
    let [v1, outside_v1] = &tables[..] else {
        panic!(
            "`{SECTION}` should hold two tables, v1's and the routes outside it; found {}",
            tables.len()
        );
    };
    let mut problems = differences(&as_served(v1), &v1_routes());
    problems.extend(differences(&as_served(outside_v1), &outside_v1_routes()));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_comparison_finds_a_missing_an_extra_and_a_wrong_row() {
    let row = |methods: &str, access: &str| (methods.to_owned(), access.to_owned());
    let routes = Rows::from([
        ("/a".to_owned(), row("GET, HEAD", "public")),
        ("/b".to_owned(), row("POST", "admin")),
    ]);
    let readme = as_served(&Rows::from([
        ("/a".to_owned(), row("GET", "public")),
        ("/b".to_owned(), row("POST", "admin")),
    ]));
    assert!(differences(&readme, &routes).is_empty());

    let wrong = as_served(&Rows::from([
        ("/a".to_owned(), row("GET, POST", "public")),
        ("/c".to_owned(), row("GET", "public")),
    ]));
    let problems = differences(&wrong, &routes);
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].contains("missing from README: /b"));
    assert!(problems[1].contains("does not serve: /c"));
    assert!(problems[2].contains("/a: README says"));
}

#[tokio::test]
async fn every_route_outside_v1_is_served() {
    let app = TestApp::start().await;
    for path in OUTSIDE_V1_PATHS {
        let response = app
            .send(app.request(reqwest::Method::GET, &concrete(path)))
            .await;
        let status = response.status();
        let body = response.text().await.expect("body");
        // The fallback answers a path no route serves; anything else is the route's own answer.
        assert!(!body.contains("no such path"), "{path}: {status} {body}");
    }
    let (status, body) = app.get("/nowhere").await;
    assert_eq!(status, 404);
    assert!(body.to_string().contains("no such path"), "{body}");
}
