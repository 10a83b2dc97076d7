//! `GET /models` (search, filters, sorts) and `GET /models/{brandSlug}/{slug}`.

use crate::support::*;
use serde_json::{json, Value};

const BY_NAME: [&str; 12] = [
    "1926-91450",
    "black-bay-fifty-eight-79030n",
    "explorer-124270",
    "gmt-master-ii-126710blro",
    "heritage-ranger-79910",
    "prospex-diver-2254-50",
    "sarb033",
    "seamaster-diver-300m-2254-50",
    "speedmaster-silver-snoopy-award",
    "submariner-date-126610ln",
    "submariner-date-126610lv",
    "submariner-date-16610",
];

#[tokio::test]
async fn model_list_items_have_the_spec_fields() {
    let app = TestApp::start().await;
    let body = app.ok("/v1/models?q=126610ln").await;
    let item = &body["data"][0];
    assert_eq!(
        keys(item),
        [
            "brand",
            "id",
            "listingCount",
            "name",
            "referenceNumber",
            "series",
            "slug",
            "thumbnailIsCropped",
            "thumbnailUrl"
        ]
    );
    assert!(item["id"].is_string());
    assert_eq!(item["referenceNumber"], "126610LN");
    assert_eq!(
        item["thumbnailUrl"],
        "https://cdn.watchcatalogue.example/models/rolex/126610ln/front-cropped.jpg"
    );
    assert_eq!(item["thumbnailIsCropped"], true);
    assert_eq!(
        item["brand"],
        json!({"id": item["brand"]["id"], "name": "Rolex", "slug": "rolex"})
    );
    assert_eq!(item["series"]["slug"], "submariner");
    // ACTIVE and matched in the test feed: e1, e2, e4 and e5 (e3 is RESERVED).
    assert_eq!(item["listingCount"], 4);
    // A picture the dataset gives without its crop goes through the image pipeline: shown
    // re-hosted, never hotlinked, and uncropped until the worker has cropped it.
    let lv = &app.ok("/v1/models?q=126610lv").await["data"][0];
    let full = app.ok("/v1/models/rolex/submariner-date-126610lv").await;
    let front = &full["pictures"][0];
    assert_eq!(
        front["url"],
        format!(
            "/media/pictures/{}",
            front["id"].as_str().expect("a string")
        )
    );
    assert_eq!(front["croppedUrl"], Value::Null);
    assert_eq!(
        (
            lv["thumbnailUrl"].as_str(),
            lv["thumbnailIsCropped"].as_bool()
        ),
        (front["url"].as_str(), Some(false))
    );
    let explorer = &app.ok("/v1/models?q=124270").await["data"][0];
    assert_eq!(
        (
            explorer["thumbnailUrl"].is_null(),
            explorer["thumbnailIsCropped"].as_bool()
        ),
        (true, Some(false))
    );
}

#[tokio::test]
async fn models_sort_by_name_reference_and_newest() {
    let app = TestApp::start().await;
    assert_eq!(app.slugs("/v1/models").await, BY_NAME);
    assert_eq!(app.slugs("/v1/models?sort=name_asc").await, BY_NAME);
    // Equal names keep ascending ids in both directions.
    let mut desc: Vec<&str> = BY_NAME[..9].iter().rev().copied().collect();
    desc.splice(
        0..0,
        [
            "submariner-date-126610ln",
            "submariner-date-126610lv",
            "submariner-date-16610",
        ],
    );
    assert_eq!(app.slugs("/v1/models?sort=name_desc").await, desc);
    assert_eq!(
        app.slugs("/v1/models?sort=reference_asc").await,
        [
            "explorer-124270",
            "submariner-date-126610ln",
            "submariner-date-126610lv",
            "gmt-master-ii-126710blro",
            "submariner-date-16610",
            "seamaster-diver-300m-2254-50",
            "prospex-diver-2254-50",
            "speedmaster-silver-snoopy-award",
            "heritage-ranger-79910",
            "1926-91450",
            "black-bay-fifty-eight-79030n",
            "sarb033",
        ]
    );
    // Release year descending, unknown last; equal years: most recently added first.
    assert_eq!(
        app.slugs("/v1/models?sort=newest").await,
        [
            "explorer-124270",
            "submariner-date-126610lv",
            "submariner-date-126610ln",
            "1926-91450",
            "black-bay-fifty-eight-79030n",
            "gmt-master-ii-126710blro",
            "speedmaster-silver-snoopy-award",
            "heritage-ranger-79910",
            "sarb033",
            "seamaster-diver-300m-2254-50",
            "submariner-date-16610",
            "prospex-diver-2254-50",
        ]
    );
}

#[tokio::test]
async fn a_reference_in_any_spelling_returns_its_model_first() {
    let app = TestApp::start().await;
    for q in [
        "126610LN",
        "126610%20ln",
        "126610-LN",
        "126610.ln",
        "%20126610LN%20",
    ] {
        let slugs = app.slugs(&format!("/v1/models?q={q}")).await;
        assert_eq!(
            slugs.first().map(String::as_str),
            Some("submariner-date-126610ln"),
            "q={q}: {slugs:?}"
        );
    }
    // Alternate references resolve too.
    assert_eq!(
        app.slugs("/v1/models?q=126610LN-0001").await,
        ["submariner-date-126610ln"]
    );
    assert_eq!(
        app.slugs("/v1/models?q=79030n").await,
        ["black-bay-fifty-eight-79030n"]
    );
    // Words and a reference together.
    assert_eq!(
        app.slugs("/v1/models?q=rolex%2016610").await,
        ["submariner-date-16610"]
    );
}

#[tokio::test]
async fn a_reference_prefix_finds_the_models_it_starts() {
    let app = TestApp::start().await;
    assert_eq!(
        app.slugs("/v1/models?q=12661").await,
        ["submariner-date-126610ln", "submariner-date-126610lv"]
    );
    assert_eq!(
        app.slugs("/v1/models?q=126").await,
        [
            "submariner-date-126610ln",
            "submariner-date-126610lv",
            "gmt-master-ii-126710blro"
        ]
    );
}

#[tokio::test]
async fn a_reference_in_two_brands_returns_both() {
    let app = TestApp::start().await;
    for q in ["2254.50", "2254-50", "225450"] {
        assert_eq!(
            app.slugs(&format!("/v1/models?q={q}")).await,
            ["seamaster-diver-300m-2254-50", "prospex-diver-2254-50"],
            "q={q}"
        );
    }
}

#[tokio::test]
async fn free_text_matches_every_word_and_sort_overrides_relevance() {
    let app = TestApp::start().await;
    let mut submariners = app.slugs("/v1/models?q=submariner").await;
    submariners.sort();
    assert_eq!(
        submariners,
        [
            "submariner-date-126610ln",
            "submariner-date-126610lv",
            "submariner-date-16610"
        ]
    );
    assert_eq!(
        app.slugs("/v1/models?q=rolex%20submariner&sort=newest")
            .await,
        [
            "submariner-date-126610lv",
            "submariner-date-126610ln",
            "submariner-date-16610"
        ]
    );
    assert_eq!(
        app.slugs("/v1/models?q=diver&sort=name_asc").await,
        ["prospex-diver-2254-50", "seamaster-diver-300m-2254-50"]
    );
    assert_eq!(
        app.slugs("/v1/models?q=unknown%20purpose").await,
        ["explorer-124270"]
    );
    assert!(app
        .slugs("/v1/models?q=submariner&brand=tudor")
        .await
        .is_empty());
    assert!(app.slugs("/v1/models?q=patek").await.is_empty());
    // Blank text is no search at all.
    assert_eq!(app.slugs("/v1/models?q=%20%20").await, BY_NAME);
}

#[tokio::test]
async fn filters_by_brand_its_alias_parameter_series_caliber_and_id() {
    let app = TestApp::start().await;
    let tudor = [
        "1926-91450",
        "black-bay-fifty-eight-79030n",
        "heritage-ranger-79910",
    ];
    assert_eq!(app.slugs("/v1/models?brand=tudor").await, tudor);
    assert_eq!(app.slugs("/v1/models?brandSlug=tudor").await, tudor);
    let submariner = [
        "submariner-date-126610ln",
        "submariner-date-126610lv",
        "submariner-date-16610",
    ];
    assert_eq!(app.slugs("/v1/models?series=submariner").await, submariner);
    assert_eq!(
        app.slugs("/v1/models?series=rolex/submariner").await,
        submariner
    );
    assert_eq!(
        app.slugs("/v1/models?series=classic&brand=seiko").await,
        ["sarb033"]
    );
    assert_eq!(
        app.slugs("/v1/models?series=seiko/classic").await,
        ["sarb033"]
    );
    let eta = [
        "1926-91450",
        "heritage-ranger-79910",
        "prospex-diver-2254-50",
    ];
    assert_eq!(app.slugs("/v1/models?caliber=2824-2").await, eta);
    assert_eq!(app.slugs("/v1/models?caliber=eta/2824-2").await, eta);
    assert_eq!(
        app.slugs("/v1/models?caliber=eta/2824-2&brand=tudor").await,
        ["1926-91450", "heritage-ranger-79910"]
    );
    assert_eq!(
        app.slugs("/v1/models?caliber=rolex/3135").await,
        ["submariner-date-16610"]
    );
    assert!(app.slugs("/v1/models?caliber=tudor/3135").await.is_empty());
    let id = app.ok("/v1/models?q=126610ln").await["data"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(
        app.slugs(&format!("/v1/models?id={id}")).await,
        ["submariner-date-126610ln"]
    );
    assert!(app.slugs("/v1/models?id=999999").await.is_empty());
    assert!(app.slugs("/v1/models?id=not-an-id").await.is_empty());
    // An id no model can have, whose low bits are another model's: never that model.
    let beyond_every_id: u64 = (1 << 56) + id.parse::<u64>().expect("a number");
    assert!(app
        .slugs(&format!("/v1/models?id={beyond_every_id}"))
        .await
        .is_empty());
}

#[tokio::test]
async fn unknown_or_ambiguous_filter_slugs_are_explained() {
    let app = TestApp::start().await;
    assert_error(
        &app,
        "/v1/models?brand=nope",
        404,
        "not_found",
        "/v1/brands",
    )
    .await;
    assert_error(
        &app,
        "/v1/models?brandSlug=nope",
        404,
        "not_found",
        "/v1/brands",
    )
    .await;
    assert_error(&app, "/v1/models?series=nope", 404, "not_found", "/series").await;
    assert_error(
        &app,
        "/v1/models?series=submariner&brand=tudor",
        404,
        "not_found",
        "/series",
    )
    .await;
    assert_error(
        &app,
        "/v1/models?series=classic",
        400,
        "invalid_request",
        "seiko/classic",
    )
    .await;
    assert_error(
        &app,
        "/v1/models?series=classic",
        400,
        "invalid_request",
        "tudor/classic",
    )
    .await;
    assert_error(
        &app,
        "/v1/models?caliber=3135",
        400,
        "invalid_request",
        "rolex/3135, tudor/3135",
    )
    .await;
    assert_error(
        &app,
        "/v1/models?caliber=nope",
        404,
        "not_found",
        "/v1/sitemap/calibers",
    )
    .await;
    assert_error(
        &app,
        "/v1/models?caliber=nope/3135",
        404,
        "not_found",
        "/v1/brands",
    )
    .await;
    assert_error(
        &app,
        "/v1/models?sort=oldest",
        400,
        "invalid_request",
        "newest, name_asc, name_desc, reference_asc",
    )
    .await;
}

#[tokio::test]
async fn model_pages_and_totals() {
    let app = TestApp::start().await;
    let page = app.ok("/v1/models?pageSize=5&page=3").await;
    assert_eq!(assert_page(&page, 3, 5, 12), 2);
    assert_eq!(slugs_of(&page["data"]), BY_NAME[10..]);
    let past = app.ok("/v1/models?pageSize=5&page=9").await;
    assert_eq!(assert_page(&past, 9, 5, 12), 0);
    let searched = app.ok("/v1/models?q=12661&pageSize=1&page=2").await;
    assert_eq!(assert_page(&searched, 2, 1, 2), 1);
    assert_eq!(slugs_of(&searched["data"]), ["submariner-date-126610lv"]);
}

const FULL_MODEL_FIELDS: [&str; 37] = [
    "alternateReferences",
    "back",
    "bandClasp",
    "bandColors",
    "bandMaterials",
    "bandNickname",
    "bandWidth",
    "bezel",
    "bezelColors",
    "bezelMaterials",
    "brand",
    "caliber",
    "caseMaterials",
    "coating",
    "description",
    "dialColors",
    "dialFinish",
    "dialMaterials",
    "dialNickname",
    "diameter",
    "discontinuationYear",
    "glass",
    "hands",
    "id",
    "indexes",
    "limitedAmount",
    "lugWidth",
    "name",
    "pictures",
    "referenceNumber",
    "releaseYear",
    "series",
    "shape",
    "slug",
    "thickness",
    "updatedAt",
    "waterResistance",
];

#[tokio::test]
async fn the_full_model_has_every_field_with_its_caliber() {
    let app = TestApp::start().await;
    let model = app.ok("/v1/models/rolex/submariner-date-126610ln").await;
    assert_eq!(keys(&model), FULL_MODEL_FIELDS);
    assert_eq!(model["alternateReferences"], json!(["126610LN-0001"]));
    assert_eq!(
        (
            model["diameter"].as_f64(),
            model["waterResistance"].as_f64()
        ),
        (Some(41.0), Some(300.0))
    );
    assert_eq!(model["releaseYear"], 2020);
    assert_eq!(model["bezelMaterials"], json!(["ceramic"]));
    assert_eq!(model["coating"], json!(null));
    assert_eq!(model["dialMaterials"], json!([]));
    assert!(model["updatedAt"]
        .as_str()
        .expect("updatedAt")
        .ends_with('Z'));
    let pictures = model["pictures"].as_array().expect("pictures");
    assert_eq!(pictures.len(), 2);
    assert_eq!(keys(&pictures[0]), ["croppedUrl", "id", "type", "url"]);
    assert_eq!(
        (pictures[0]["type"].as_str(), pictures[1]["type"].as_str()),
        (Some("FRONT"), Some("SIDE"))
    );
    assert!(pictures[1]["croppedUrl"].is_null());
    let caliber = &model["caliber"];
    assert_eq!(
        (
            caliber["slug"].as_str(),
            caliber["reference"].as_str(),
            caliber["powerReserve"].as_u64()
        ),
        (Some("3235"), Some("3235"), Some(70))
    );
    assert_eq!(caliber["complications"][0]["slug"], "date");
    assert!(caliber["parent"].is_null());
}

#[tokio::test]
async fn empty_fields_stay_empty_and_an_unknown_movement_is_null() {
    let app = TestApp::start().await;
    let explorer = app.ok("/v1/models/rolex/explorer-124270").await;
    assert_eq!(keys(&explorer), FULL_MODEL_FIELDS);
    assert!(explorer["caliber"].is_null());
    assert_eq!(explorer["pictures"], json!([]));
    assert_eq!(explorer["alternateReferences"], json!([]));
    assert!(explorer["thickness"].is_null() && explorer["limitedAmount"].is_null());
    let snoopy = app
        .ok("/v1/models/omega/speedmaster-silver-snoopy-award")
        .await;
    assert_eq!(snoopy["limitedAmount"], 1970);
    let seamaster = app
        .ok("/v1/models/omega/seamaster-diver-300m-2254-50")
        .await;
    assert_eq!(seamaster["discontinuationYear"], 2006);
    let bb58 = app
        .ok("/v1/models/tudor/black-bay-fifty-eight-79030n")
        .await;
    assert_eq!(bb58["caliber"]["parent"]["slug"], "2824-2");
    assert_eq!(bb58["caliber"]["parent"]["brand"]["slug"], "eta");
}

#[tokio::test]
async fn unknown_models_are_404_with_a_hint() {
    let app = TestApp::start().await;
    assert_error(
        &app,
        "/v1/models/rolex/nope",
        404,
        "not_found",
        "/v1/models?brand=rolex",
    )
    .await;
    assert_error(
        &app,
        "/v1/models/omega/submariner-date-126610ln",
        404,
        "not_found",
        "/v1/models?brand=omega",
    )
    .await;
    assert_error(
        &app,
        "/v1/models/nope/submariner-date-126610ln",
        404,
        "not_found",
        "/v1/brands",
    )
    .await;
}

const LN: &str = "rolex/submariner-date-126610ln";
const LV: &str = "rolex/submariner-date-126610lv";

#[tokio::test]
async fn compare_sets_full_models_side_by_side_with_their_differences_and_prices() {
    let app = TestApp::start().await;
    let body = app
        .ok(&format!("/v1/models/compare?models={LN},{LV}&currency=EUR"))
        .await;
    assert_eq!(keys(&body), ["data", "differences"]);
    let data = body["data"].as_array().expect("data");
    assert_eq!(data.len(), 2);
    for (compared, path) in data.iter().zip([LN, LV]) {
        assert_eq!(keys(compared), ["askingPrices", "listingCount", "model"]);
        // Every field of the full model, as its own path answers it.
        assert_eq!(
            compared["model"],
            app.ok(&format!("/v1/models/{path}")).await
        );
        let (brand, slug) = path.split_once('/').expect("brand/slug");
        let stats = format!("/v1/listings/stats?brand={brand}&model={slug}&currency=EUR");
        assert_eq!(compared["askingPrices"], app.ok(&stats).await);
    }
    // The 126610LN's ACTIVE listings e1, e2, e4 and e5: e1 8887 EUR, e2 9000 EUR, e5 unpriced
    // in EUR (AED); computed by hand in listings.rs.
    assert_eq!(data[0]["listingCount"], 4);
    assert_eq!(
        data[0]["askingPrices"],
        json!({"count": 4, "pricedCount": 3, "currency": "EUR", "low": 8887, "median": 8944, "high": 9000})
    );
    // The LV's dataset line leaves most of the specification empty; both are 41 mm Oystersteel
    // Submariner Dates on the 3235 from 2020, so those fields are not named.
    assert_eq!(
        body["differences"],
        json!([
            "alternateReferences",
            "bandClasp",
            "bandMaterials",
            "bandWidth",
            "bezel",
            "bezelColors",
            "bezelMaterials",
            "description",
            "dialColors",
            "glass",
            "lugWidth",
            "referenceNumber",
            "thickness",
            "waterResistance"
        ])
    );
}

#[tokio::test]
async fn compare_names_the_fields_any_model_differs_on_in_the_order_asked() {
    let app = TestApp::start().await;
    let three = format!("/v1/models/compare?models=rolex/submariner-date-16610,{LN},{LV}");
    let body = app.ok(&three).await;
    let slugs: Vec<&str> = (body["data"].as_array().expect("data").iter())
        .map(|compared| compared["model"]["slug"].as_str().expect("slug"))
        .collect();
    assert_eq!(
        slugs,
        [
            "submariner-date-16610",
            "submariner-date-126610ln",
            "submariner-date-126610lv"
        ]
    );
    let differences: Vec<&str> = (body["differences"].as_array().expect("differences").iter())
        .map(|name| name.as_str().expect("a name"))
        .collect();
    // The 16610 has its own calibre, case, size and years; the three share name, brand and
    // series, and each model's own fields are never named.
    for differing in [
        "caliber",
        "caseMaterials",
        "diameter",
        "discontinuationYear",
        "releaseYear",
    ] {
        assert!(differences.contains(&differing), "{differing}: {body}");
    }
    for same in [
        "name",
        "brand",
        "series",
        "id",
        "slug",
        "updatedAt",
        "pictures",
    ] {
        assert!(!differences.contains(&same), "{same}: {body}");
    }
    // USD unless asked: the figures of GET /listings/stats.
    assert_eq!(body["data"][1]["askingPrices"]["currency"], "USD");
    assert_eq!(body["data"][1]["askingPrices"]["median"], 10064);
}

#[tokio::test]
async fn compare_refuses_bad_lists_and_names_unknown_models() {
    let app = TestApp::start().await;
    let seven = [LN; 7].join(",");
    for (query, hint) in [
        ("", "models="),
        ("models=", "models="),
        (&format!("models={LN}") as &str, "models="),
        (&format!("models={seven}"), "models="),
        (&format!("models={LN},rolex"), "models="),
        (&format!("models={LN},/submariner-date-126610lv"), "models="),
        (&format!("models={LN},,{LV}"), "models="),
        (&format!("models={LN},rolex/a/b"), "models="),
        (&format!("models={LN},{LN}"), "each model once"),
        (&format!("models={LN},{LV}&currency=XYZ"), "EUR"),
    ] {
        let path = format!("/v1/models/compare?{query}");
        assert_error(&app, &path, 400, "invalid_request", hint).await;
    }
    let (_, one) = app.get(&format!("/v1/models/compare?models={LN}")).await;
    assert_eq!(
        one["message"],
        "`models` names 1 model; a comparison takes 2 to 6"
    );
    // The list is checked before any model is looked up: too many unknown models are a 400.
    let unknown = ["nope/nope"; 7].join(",");
    let path = format!("/v1/models/compare?models={unknown}");
    assert_error(&app, &path, 400, "invalid_request", "models=").await;
    for (models, named, hint) in [
        (format!("{LN},nope/x"), "`nope`", "GET /v1/brands"),
        (
            format!("{LN},rolex/nope"),
            "`nope`",
            "GET /v1/models?brand=rolex",
        ),
    ] {
        let path = format!("/v1/models/compare?models={models}");
        assert_error(&app, &path, 404, "not_found", hint).await;
        let (_, body) = app.get(&path).await;
        let message = body["message"].as_str().expect("message");
        assert!(message.contains(named), "{message}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_of_models_names_brands_and_series_as_the_latest_write_has_them() {
    let dataset = test_catalogue_copy();
    let app = TestApp::build().dataset(dataset.path()).start().await;
    let series_of = |page: &Value| -> Vec<String> {
        let items = page["data"].as_array().expect("data");
        items
            .iter()
            .map(|item| item["series"]["name"].as_str().expect("name").to_owned())
            .collect()
    };
    // Twice, so that the second page is served from the names kept for the generation.
    for _ in 0..2 {
        let page = app.ok("/v1/models?brand=rolex&series=submariner").await;
        assert!(series_of(&page).iter().all(|name| name == "Submariner"));
    }
    reimport_replacing(
        &app,
        dataset.path(),
        "series.jsonl",
        r#""name":"Submariner""#,
        r#""name":"Submariner Date""#,
    );
    let page = app.ok("/v1/models?brand=rolex&series=submariner").await;
    let names = series_of(&page);
    assert!(!names.is_empty());
    assert!(
        names.iter().all(|name| name == "Submariner Date"),
        "{names:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_of_models_shows_each_model_as_the_latest_write_has_it() {
    let dataset = test_catalogue_copy();
    let app = TestApp::build().dataset(dataset.path()).start().await;
    let page_path = "/v1/models?brand=rolex&series=submariner&sort=name_asc";
    let item = |page: &Value, reference: &str| -> Value {
        page["data"]
            .as_array()
            .expect("data")
            .iter()
            .find(|item| item["referenceNumber"] == reference)
            .cloned()
            .unwrap_or_else(|| panic!("{reference} in {page}"))
    };
    // Twice, so that the second page is served from the cards kept for the generation.
    let before = app.ok(page_path).await;
    let again = app.ok(page_path).await;
    assert_eq!(before["data"], again["data"]);
    let count_before = item(&before, "126610LN")["listingCount"]
        .as_u64()
        .expect("count");

    // A Chrono24 listing of the model (it has none yet): its count moves by one on the next page.
    let listing = r#"{"sourceId":"w1","url":"https://www.chrono24.com/w1","title":"Rolex Submariner Date","brand":"Rolex","reference":"126610LN","price":11000,"currency":"EUR"}"#;
    app.app
        .writer()
        .run(|turn| {
            watch_catalogue::jobs::ingest::ingest(
                turn,
                "chrono24",
                "first",
                listing.as_bytes(),
                &Default::default(),
            )
        })
        .expect("ingest");
    let after = app.ok(page_path).await;
    assert_eq!(
        item(&after, "126610LN")["listingCount"],
        count_before + 1,
        "{after}"
    );

    // A re-import renaming the model: the next page names it so.
    let old_name = item(&after, "126610LN")["name"]
        .as_str()
        .expect("name")
        .to_owned();
    reimport_replacing(
        &app,
        dataset.path(),
        "models.jsonl",
        &format!(r#""name":"{old_name}""#),
        r#""name":"Submariner Date Kermit""#,
    );
    let renamed_page = app.ok(page_path).await;
    assert_eq!(
        item(&renamed_page, "126610LN")["name"],
        "Submariner Date Kermit",
        "{renamed_page}"
    );
}

/// Replaces `from` with `to` in the dataset's `file` (it must hold `from`) and imports the
/// dataset again through the app's writer.
fn reimport_replacing(app: &TestApp, dataset: &std::path::Path, file: &str, from: &str, to: &str) {
    let path = dataset.join(file);
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains(from), "{from} in {file}");
    std::fs::write(&path, text.replace(from, to)).expect("write");
    let source = watch_catalogue::jobs::import::DirectorySource(dataset.to_path_buf());
    app.app
        .writer()
        .run(|turn| watch_catalogue::jobs::import::import(turn, &source))
        .expect("re-import");
}
