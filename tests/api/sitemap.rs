//! `GET /sitemap/models`, `/sitemap/catalog`, `/sitemap/calibers`.

use crate::support::*;

#[tokio::test]
async fn the_models_sitemap_lists_every_model_with_its_last_modified_date() {
    let app = TestApp::start().await;
    let body = app.ok("/v1/sitemap/models").await;
    assert_eq!(assert_page(&body, 1, 50_000, 12), 12);
    let first = &body["data"][0];
    assert_eq!(keys(first), ["brandSlug", "id", "lastModified", "slug"]);
    assert_eq!(
        (first["brandSlug"].as_str(), first["slug"].as_str()),
        (Some("rolex"), Some("submariner-date-126610ln"))
    );
    assert!(first["lastModified"].as_str().expect("date").ends_with('Z'));
    let page = app.ok("/v1/sitemap/models?pageSize=5&page=3").await;
    assert_eq!(assert_page(&page, 3, 5, 12), 2);
    assert_error(
        &app,
        "/v1/sitemap/models?pageSize=50001",
        400,
        "invalid_request",
        "50000",
    )
    .await;
}

#[tokio::test]
async fn the_catalog_sitemap_lists_brands_each_followed_by_its_series() {
    let app = TestApp::start().await;
    let body = app.ok("/v1/sitemap/catalog").await;
    assert_eq!(assert_page(&body, 1, 50_000, 15), 15);
    let entries: Vec<String> = body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|e| {
            format!(
                "{} {}/{}",
                e["type"].as_str().unwrap_or(""),
                e["brandSlug"].as_str().unwrap_or(""),
                e["seriesSlug"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        entries[..4],
        [
            "brand eta/",
            "brand omega/",
            "series omega/seamaster",
            "series omega/speedmaster"
        ]
    );
    assert_eq!(entries[14], "series tudor/heritage");
}

#[tokio::test]
async fn the_calibers_sitemap_lists_every_movement() {
    let app = TestApp::start().await;
    let body = app.ok("/v1/sitemap/calibers").await;
    assert_eq!(assert_page(&body, 1, 50_000, 9), 9);
    let ids: Vec<String> = body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|e| {
            format!(
                "{}/{}",
                e["brandSlug"].as_str().unwrap_or(""),
                e["slug"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        ids,
        [
            "eta/2824-2",
            "eta/2892-2",
            "omega/1120",
            "rolex/3135",
            "rolex/3235",
            "rolex/3285",
            "seiko/6r15",
            "tudor/2824",
            "tudor/3135"
        ]
    );
    assert_eq!(
        keys(&body["data"][0]),
        ["brandSlug", "lastModified", "reference", "slug"]
    );
}
