//! What holds on every catalogue route: bad parameters, the unversioned alias, unknown paths.

use crate::support::*;

const LISTS: [&str; 6] = [
    "/v1/brands",
    "/v1/brands/rolex/series",
    "/v1/models",
    "/v1/sitemap/models",
    "/v1/sitemap/catalog",
    "/v1/sitemap/calibers",
];

#[tokio::test]
async fn bad_paging_values_are_rejected_on_every_list() {
    let app = TestApp::start().await;
    for list in LISTS {
        let max = if list.contains("sitemap") {
            50_000
        } else {
            100
        };
        for (query, parameter) in [
            ("page=abc".to_owned(), "page"),
            ("page=0".to_owned(), "page"),
            ("page=-1".to_owned(), "page"),
            ("page=1.5".to_owned(), "page"),
            ("pageSize=0".to_owned(), "pageSize"),
            ("pageSize=-5".to_owned(), "pageSize"),
            (format!("pageSize={}", max + 1), "pageSize"),
            ("pageSize=ten".to_owned(), "pageSize"),
        ] {
            assert_error(
                &app,
                &format!("{list}?{query}"),
                400,
                "invalid_request",
                parameter,
            )
            .await;
        }
        let (_, body) = app.get(&format!("{list}?page=0")).await;
        let docs = body["docs"].as_str().unwrap_or("");
        assert!(
            docs.starts_with("/v1/openapi.json#/paths/~1") && docs.ends_with("/get"),
            "{list}: {body}"
        );
        assert_eq!(keys(&body), ["docs", "error", "hint", "message"], "{list}");
        let (status, body) = app
            .get(&format!("{list}?pageSize={max}&unknownParameter=1"))
            .await;
        assert_eq!(status, 200, "{list}: {body}");
    }
}

#[tokio::test]
async fn unknown_sorts_are_rejected_on_every_sorted_list() {
    let app = TestApp::start().await;
    for (list, allowed) in [
        ("/v1/brands", "name_asc, name_desc, models_desc, relevance"),
        (
            "/v1/brands/rolex/series",
            "name_asc, name_desc, models_desc, relevance",
        ),
        (
            "/v1/models",
            "relevance, newest, name_asc, name_desc, reference_asc",
        ),
    ] {
        for sort in ["price_asc", "NAME_ASC", "", "name_asc%20"] {
            assert_error(
                &app,
                &format!("{list}?sort={sort}"),
                400,
                "invalid_request",
                allowed,
            )
            .await;
        }
    }
}

#[tokio::test]
async fn overlong_text_is_rejected() {
    let app = TestApp::start().await;
    let q = "a".repeat(201);
    assert_error(
        &app,
        &format!("/v1/models?q={q}"),
        400,
        "invalid_request",
        "reference",
    )
    .await;
}

#[tokio::test]
async fn every_route_answers_the_same_without_the_version_prefix() {
    let app = TestApp::start().await;
    for path in [
        "/brands?sort=models_desc",
        "/brands/highlighted",
        "/brands/rolex",
        "/brands/rolex/series",
        "/brands/rolex/series/submariner",
        "/models?q=126610&sort=name_desc",
        "/models/rolex/submariner-date-126610ln",
        "/calibers/eta/2824-2",
        "/sitemap/models",
        "/sitemap/catalog",
        "/sitemap/calibers",
        "/brands/nope",
        "/models?page=0",
    ] {
        assert_eq!(
            app.get(&format!("/v1{path}")).await,
            app.get(path).await,
            "{path}"
        );
    }
}

#[tokio::test]
async fn unknown_paths_are_json_404s() {
    let app = TestApp::start().await;
    for path in [
        "/v1/nope",
        "/nope",
        "/v1/models/rolex",
        "/v2/models",
        "/v1/brands/rolex/series/submariner/x",
    ] {
        let (status, body) = app.get(path).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (404, Some("not_found")),
            "{path}"
        );
    }
}

#[tokio::test]
async fn unreadable_path_segments_are_json_errors() {
    let app = TestApp::start().await;
    for path in [
        "/v1/brands/%FF",
        "/v1/models/rolex/%C3%28",
        "/v1/calibers/%FF/x",
        "/v1/brands/%FF/series/x",
    ] {
        let (status, body) = app.get(path).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some("invalid_request")),
            "{path}: {body}"
        );
    }
}
