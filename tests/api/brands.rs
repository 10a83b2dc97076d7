//! `GET /brands`, `/brands/highlighted`, `/brands/{slug}` and the series endpoints.

use crate::support::*;
use serde_json::json;

#[tokio::test]
async fn brand_list_items_carry_counts_and_a_representative_picture() {
    let app = TestApp::start().await;
    let body = app.ok("/v1/brands").await;
    assert_eq!(assert_page(&body, 1, 24, 5), 5);
    let rolex = &body["data"][2];
    assert_eq!(
        keys(rolex),
        ["id", "modelCount", "name", "picture", "seriesCount", "slug"]
    );
    assert_eq!(rolex["slug"], "rolex");
    assert!(rolex["id"].is_string());
    assert_eq!(
        (rolex["seriesCount"].as_u64(), rolex["modelCount"].as_u64()),
        (Some(3), Some(5))
    );
    // The model with most ACTIVE listings (126610LN: e1, e2, e4, e5 of the test feed) wins over
    // the newest one (126610LV, 2020, no listings).
    assert_eq!(
        rolex["picture"],
        json!({"url": "https://cdn.watchcatalogue.example/models/rolex/126610ln/front.jpg", "croppedUrl": "https://cdn.watchcatalogue.example/models/rolex/126610ln/front-cropped.jpg"})
    );
    let eta = &body["data"][0];
    assert_eq!(
        (
            eta["slug"].as_str(),
            eta["modelCount"].as_u64(),
            eta["picture"].is_null()
        ),
        (Some("eta"), Some(0), true)
    );
}

#[tokio::test]
async fn brands_sort_by_name_either_way_and_by_catalogue_depth() {
    let app = TestApp::start().await;
    assert_eq!(
        app.slugs("/v1/brands").await,
        ["eta", "omega", "rolex", "seiko", "tudor"]
    );
    assert_eq!(
        app.slugs("/v1/brands?sort=name_asc").await,
        ["eta", "omega", "rolex", "seiko", "tudor"]
    );
    assert_eq!(
        app.slugs("/v1/brands?sort=name_desc").await,
        ["tudor", "seiko", "rolex", "omega", "eta"]
    );
    // Omega and Seiko both have two models: the tie goes to the lower id.
    assert_eq!(
        app.slugs("/v1/brands?sort=models_desc").await,
        ["rolex", "tudor", "omega", "seiko", "eta"]
    );
    assert_error(
        &app,
        "/v1/brands?sort=newest",
        400,
        "invalid_request",
        "name_asc, name_desc, models_desc",
    )
    .await;
}

#[tokio::test]
async fn brands_search_names_aliases_and_descriptions() {
    let app = TestApp::start().await;
    assert_eq!(app.slugs("/v1/brands?q=watch").await, ["tudor"]);
    assert_eq!(app.slugs("/v1/brands?q=geneva").await, ["rolex"]);
    assert_eq!(app.slugs("/v1/brands?q=ROLEX%20sa").await, ["rolex"]);
    assert_eq!(
        app.slugs("/v1/brands?q=omega&sort=name_desc").await,
        ["omega"]
    );
    assert!(app.slugs("/v1/brands?q=breguet").await.is_empty());
}

#[tokio::test]
async fn brand_pages_past_the_end_are_empty_with_true_totals() {
    let app = TestApp::start().await;
    let last = app.ok("/v1/brands?pageSize=2&page=3").await;
    assert_eq!(assert_page(&last, 3, 2, 5), 1);
    assert_eq!(slugs_of(&last["data"]), ["tudor"]);
    let past = app.ok("/v1/brands?pageSize=2&page=4").await;
    assert_eq!(assert_page(&past, 4, 2, 5), 0);
}

#[tokio::test]
async fn highlighted_brands_follow_the_editorial_rank() {
    let app = TestApp::start().await;
    let body = app.ok("/v1/brands/highlighted").await;
    assert_eq!(keys(&body), ["data"]);
    assert_eq!(slugs_of(&body["data"]), ["tudor", "rolex"]);
    assert_eq!(body["data"][1]["modelCount"], 5);
}

#[tokio::test]
async fn one_brand_has_its_stats() {
    let app = TestApp::start().await;
    let rolex = app.ok("/v1/brands/rolex").await;
    assert_eq!(rolex["name"], "Rolex");
    assert_eq!(rolex["aliases"], json!(["Rolex SA"]));
    assert_eq!(rolex["country"], "Switzerland");
    assert_eq!(rolex["founded"], 1905);
    assert_eq!(
        rolex["stats"],
        json!({
            "yearRange": {"min": 1988, "max": 2021},
            "diameterRange": {"min": 36.0, "max": 41.0},
            "caseMaterials": ["oystersteel", "stainless steel"],
            "movementCount": 3,
            "listingCount": 5
        })
    );
    let eta = app.ok("/v1/brands/eta").await;
    assert_eq!(
        eta["stats"],
        json!({"yearRange": {"min": null, "max": null}, "diameterRange": {"min": null, "max": null}, "caseMaterials": [], "movementCount": 0, "listingCount": 0})
    );
    assert_error(
        &app,
        "/v1/brands/patek-philippe",
        404,
        "not_found",
        "/v1/brands",
    )
    .await;
    assert_error(&app, "/v1/brands/Rolex", 404, "not_found", "/v1/brands").await;
}

#[tokio::test]
async fn series_lists_have_model_counts_and_lead_models() {
    let app = TestApp::start().await;
    let body = app.ok("/v1/brands/rolex/series").await;
    assert_eq!(assert_page(&body, 1, 24, 3), 3);
    assert_eq!(
        slugs_of(&body["data"]),
        ["explorer", "gmt-master-ii", "submariner"]
    );
    let submariner = &body["data"][2];
    assert_eq!(
        keys(submariner),
        ["id", "leadModel", "modelCount", "name", "slug"]
    );
    assert_eq!(submariner["modelCount"], 3);
    // Most listings first (126610LN has four ACTIVE ones), then newest.
    assert_eq!(submariner["leadModel"]["slug"], "submariner-date-126610ln");
    assert_eq!(submariner["leadModel"]["brand"]["slug"], "rolex");
    assert_eq!(
        app.slugs("/v1/brands/rolex/series?q=dive").await,
        ["submariner"]
    );
    assert_eq!(
        app.slugs("/v1/brands/rolex/series?sort=name_desc&pageSize=1")
            .await,
        ["submariner"]
    );
    assert!(app.slugs("/v1/brands/eta/series").await.is_empty());
    assert_error(
        &app,
        "/v1/brands/nope/series",
        404,
        "not_found",
        "/v1/brands",
    )
    .await;
}

#[tokio::test]
async fn one_series_has_its_brand_lead_model_and_stats() {
    let app = TestApp::start().await;
    let series = app.ok("/v1/brands/rolex/series/submariner").await;
    assert_eq!(series["slug"], "submariner");
    assert_eq!(series["description"], "The dive watch of 1953.");
    assert_eq!(
        series["brand"],
        json!({"id": series["brand"]["id"], "name": "Rolex", "slug": "rolex"})
    );
    assert_eq!(series["leadModel"]["slug"], "submariner-date-126610ln");
    assert_eq!(
        series["stats"]["yearRange"],
        json!({"min": 1988, "max": 2020})
    );
    assert_eq!(
        series["stats"]["diameterRange"],
        json!({"min": 40.0, "max": 41.0})
    );
    assert_eq!(series["stats"]["movementCount"], 2);
    assert_error(
        &app,
        "/v1/brands/rolex/series/seamaster",
        404,
        "not_found",
        "/v1/brands/rolex/series",
    )
    .await;
    assert_error(
        &app,
        "/v1/brands/nope/series/submariner",
        404,
        "not_found",
        "/v1/brands",
    )
    .await;
}
