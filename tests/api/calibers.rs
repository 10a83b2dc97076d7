//! `GET /calibers/{brandSlug}/{ref}`.

use crate::support::*;
use serde_json::json;

#[tokio::test]
async fn a_caliber_has_its_specification_and_every_model_across_brands() {
    let app = TestApp::start().await;
    let eta = app.ok("/v1/calibers/eta/2824-2").await;
    assert_eq!(
        keys(&eta),
        [
            "brand",
            "complications",
            "diameter",
            "frequency",
            "height",
            "id",
            "jewels",
            "modelCount",
            "models",
            "name",
            "parent",
            "powerReserve",
            "reference",
            "slug",
            "type"
        ]
    );
    assert_eq!(eta["reference"], "2824-2");
    assert_eq!(eta["type"], "automatic");
    assert_eq!(
        (eta["diameter"].as_f64(), eta["height"].as_f64()),
        (Some(25.6), Some(4.6))
    );
    assert_eq!(
        (
            eta["jewels"].as_u64(),
            eta["frequency"].as_u64(),
            eta["powerReserve"].as_u64()
        ),
        (Some(25), Some(28800), Some(38))
    );
    assert_eq!(
        eta["complications"],
        json!([{"id": eta["complications"][0]["id"], "slug": "date", "name": "Date"}])
    );
    assert!(eta["parent"].is_null());
    assert_eq!(eta["modelCount"], 3);
    assert_eq!(
        slugs_of(&eta["models"]),
        [
            "1926-91450",
            "heritage-ranger-79910",
            "prospex-diver-2254-50"
        ]
    );
    let brands: Vec<&str> = eta["models"]
        .as_array()
        .expect("models")
        .iter()
        .map(|m| m["brand"]["slug"].as_str().expect("slug"))
        .collect();
    assert_eq!(brands, ["tudor", "tudor", "seiko"]);
}

#[tokio::test]
async fn a_caliber_is_found_by_slug_or_any_spelling_of_its_reference() {
    let app = TestApp::start().await;
    for path in [
        "/v1/calibers/tudor/2824",
        "/v1/calibers/tudor/t2824",
        "/v1/calibers/tudor/T-2824",
        "/v1/calibers/tudor/T%202824",
    ] {
        let caliber = app.ok(path).await;
        assert_eq!(caliber["reference"], "T2824", "{path}");
        assert_eq!(caliber["parent"]["slug"], "2824-2", "{path}");
        assert_eq!(caliber["parent"]["brand"]["slug"], "eta", "{path}");
        assert_eq!(
            slugs_of(&caliber["models"]),
            ["black-bay-fifty-eight-79030n"],
            "{path}"
        );
    }
    assert_eq!(app.ok("/v1/calibers/eta/2824.2").await["slug"], "2824-2");
    assert_eq!(app.ok("/v1/calibers/seiko/6R15").await["slug"], "6r15");
    let unused = app.ok("/v1/calibers/tudor/3135").await;
    assert_eq!(
        (
            unused["modelCount"].as_u64(),
            unused["models"].as_array().map(Vec::len)
        ),
        (Some(0), Some(0))
    );
}

#[tokio::test]
async fn unknown_calibers_are_404() {
    let app = TestApp::start().await;
    assert_error(
        &app,
        "/v1/calibers/eta/nope",
        404,
        "not_found",
        "/v1/sitemap/calibers",
    )
    .await;
    assert_error(
        &app,
        "/v1/calibers/rolex/2824-2",
        404,
        "not_found",
        "/v1/sitemap/calibers",
    )
    .await;
    assert_error(
        &app,
        "/v1/calibers/nope/2824-2",
        404,
        "not_found",
        "/v1/brands",
    )
    .await;
}
