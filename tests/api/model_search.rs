//! `GET /models` searched like a collector: typo-tolerant words, filters by specification and
//! facet counts. Counts are worked out by hand from tests/data/catalogue.

use crate::support::*;
use serde_json::{json, Value};

/// Slugs of every model the query selects, by name.
async fn slugs(app: &TestApp, query: &str) -> Vec<String> {
    let body = app
        .ok(&format!("/v1/models?pageSize=100&sort=name_asc&{query}"))
        .await;
    assert_eq!(
        body["total"].as_u64(),
        Some(body["data"].as_array().map_or(0, Vec::len) as u64),
        "{query}: {body}"
    );
    slugs_of(&body["data"])
}

#[tokio::test]
async fn words_match_with_typos_and_the_last_as_a_prefix_but_never_numbers() {
    let app = TestApp::start().await;
    // 10 letters take two typos, 7 letters one; a transposition is one typo.
    assert_eq!(
        app.slugs("/v1/models?q=speedmastr").await,
        ["speedmaster-silver-snoopy-award"]
    );
    assert_eq!(
        app.slugs("/v1/models?q=exlporer").await,
        ["explorer-124270"]
    );
    assert_eq!(
        slugs(&app, "q=rolex%20submarinr").await,
        [
            "submariner-date-126610ln",
            "submariner-date-126610lv",
            "submariner-date-16610"
        ]
    );
    // Search as you type: the last word is a prefix.
    assert_eq!(
        app.slugs("/v1/models?q=speedm").await,
        ["speedmaster-silver-snoopy-award"]
    );
    // A four-letter word takes no typo.
    assert_eq!(app.ok("/v1/models?q=tudr%20ranger").await["total"], 0);
    // References and numbers match only as they are.
    assert_eq!(
        app.slugs("/v1/models?q=126610").await,
        ["submariner-date-126610ln", "submariner-date-126610lv"]
    );
    assert_eq!(app.ok("/v1/models?q=126611").await["total"], 0);
    assert_eq!(app.ok("/v1/models?q=126610lx").await["total"], 0);
    // typoTolerance=false: as typed.
    for q in ["speedmastr", "speedm", "exlporer"] {
        let path = format!("/v1/models?q={q}&typoTolerance=false");
        assert_eq!(app.ok(&path).await["total"], 0, "{path}");
    }
    assert_eq!(
        app.slugs("/v1/models?q=speedmaster&typoTolerance=false")
            .await,
        ["speedmaster-silver-snoopy-award"]
    );
    assert_error(
        &app,
        "/v1/models?q=speedm&typoTolerance=maybe",
        400,
        "invalid_request",
        "typoTolerance is true or false",
    )
    .await;
}

#[tokio::test]
async fn specification_filters_select_and_combine() {
    let app = TestApp::start().await;
    let cases: &[(&str, &[&str])] = &[
        // Case-insensitive, any of.
        (
            "caseMaterial=Oystersteel",
            &[
                "explorer-124270",
                "gmt-master-ii-126710blro",
                "submariner-date-126610ln",
                "submariner-date-126610lv",
            ],
        ),
        (
            "caseMaterial=titanium&caseMaterial=OYSTERSTEEL&maxDiameter=38",
            &["explorer-124270"],
        ),
        // A value given twice, in two spellings, is one value.
        (
            "caseMaterial=titanium&caseMaterial=Titanium",
            &["prospex-diver-2254-50"],
        ),
        (
            "complication=gmt&complication=GMT&complication=date",
            &["gmt-master-ii-126710blro"],
        ),
        ("dialColor=black&brand=seiko", &["sarb033"]),
        ("bezelMaterial=ceramic", &["submariner-date-126610ln"]),
        ("bandMaterial=oystersteel", &["submariner-date-126610ln"]),
        // All of.
        (
            "complication=date&complication=gmt",
            &["gmt-master-ii-126710blro"],
        ),
        (
            "minDiameter=39&maxDiameter=39.5",
            &["1926-91450", "black-bay-fifty-eight-79030n"],
        ),
        (
            "minDiameter=42",
            &["prospex-diver-2254-50", "speedmaster-silver-snoopy-award"],
        ),
        ("minWaterResistance=300", &["submariner-date-126610ln"]),
        ("minWaterResistance=300.5", &[]),
        (
            "maxYear=2000",
            &["seamaster-diver-300m-2254-50", "submariner-date-16610"],
        ),
        ("minYear=2021", &["explorer-124270"]),
        ("limited=true", &["speedmaster-silver-snoopy-award"]),
        (
            "discontinued=true",
            &[
                "sarb033",
                "seamaster-diver-300m-2254-50",
                "submariner-date-16610",
            ],
        ),
        (
            "caseMaterial=stainless%20steel&minDiameter=41&discontinued=false",
            &["heritage-ranger-79910", "speedmaster-silver-snoopy-award"],
        ),
        ("q=submariner&discontinued=true", &["submariner-date-16610"]),
        (
            "movementType=Automatic&minDiameter=42",
            &["prospex-diver-2254-50"],
        ),
    ];
    for (query, expected) in cases {
        assert_eq!(slugs(&app, query).await, *expected, "{query}");
    }
    assert_eq!(slugs(&app, "movementType=automatic").await.len(), 10);
    assert_eq!(slugs(&app, "complication=date").await.len(), 9);
    assert_eq!(slugs(&app, "limited=false").await.len(), 11);
    // hasListings against the listing counts the list shows.
    let all = app.ok("/v1/models?pageSize=100&sort=name_asc").await;
    let listed: Vec<&str> = all["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter(|m| m["listingCount"].as_u64() > Some(0))
        .map(|m| m["slug"].as_str().expect("slug"))
        .collect();
    assert!(!listed.is_empty() && listed.len() < 12, "{listed:?}");
    assert_eq!(slugs(&app, "hasListings=true").await, listed);
    assert_eq!(
        slugs(&app, "hasListings=false").await.len(),
        12 - listed.len()
    );
}

/// A movement type the dataset format documents finds the models that have it: none, rather
/// than a refusal, when no model has it today.
#[tokio::test]
async fn a_documented_movement_type_no_model_has_is_an_empty_page() {
    let app = TestApp::start().await;
    let (status, body) = app.get("/v1/models?movementType=kinetic").await;
    assert_eq!(
        (status, &body["total"]),
        (200, &serde_json::json!(0)),
        "{body}"
    );
    let (status, body) = app
        .get("/v1/models?movementType=Kinetic&movementType=automatic")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["total"],
        app.ok("/v1/models?movementType=automatic").await["total"]
    );
}

#[tokio::test]
async fn bad_specification_values_are_refused_naming_what_is_allowed() {
    let app = TestApp::start().await;
    let cases = [
        (
            "caseMaterial=gold",
            "caseMaterial is one of: oystersteel, stainless steel, titanium",
        ),
        (
            "caseMaterial=titanium&caseMaterial=",
            "caseMaterial is one of",
        ),
        ("dialColor=green", "dialColor is one of: black"),
        (
            "movementType=clockwork",
            "movementType is one of: automatic",
        ),
        (
            "complication=tourbillon",
            "complication is one of: date, gmt",
        ),
        (
            "minDiameter=abc",
            "minDiameter is in millimetres, from 0 to 100",
        ),
        (
            "maxDiameter=101",
            "maxDiameter is in millimetres, from 0 to 100",
        ),
        ("minDiameter=-1", "from 0 to 100"),
        ("minDiameter=NaN", "from 0 to 100"),
        (
            "minDiameter=42&maxDiameter=40",
            "give minDiameter at most maxDiameter",
        ),
        ("minWaterResistance=deep", "minWaterResistance is in metres"),
        ("minYear=20", "minYear is a release year"),
        ("minYear=2020&maxYear=2010", "give minYear at most maxYear"),
        ("limited=yes", "limited is true or false"),
        ("discontinued=1", "discontinued is true or false"),
        ("hasListings=", "hasListings is true or false"),
        (
            "facets=price",
            "facet is one of: brand, series, caseMaterial",
        ),
        ("facets=brand,", "facet is one of"),
    ];
    for (query, hint) in cases {
        assert_error(
            &app,
            &format!("/v1/models?{query}"),
            400,
            "invalid_request",
            hint,
        )
        .await;
    }
    // A message names the parameter and the value.
    let (_, body) = app.get("/v1/models?caseMaterial=Gold").await;
    assert_eq!(body["message"], "unknown caseMaterial `Gold`");
}

fn facet(body: &Value, name: &str) -> Vec<(String, u64)> {
    body["facets"][name]
        .as_array()
        .unwrap_or_else(|| panic!("no facet {name}: {body}"))
        .iter()
        .map(|v| {
            let value = v["value"].as_str().expect("value").to_owned();
            (value, v["count"].as_u64().expect("count"))
        })
        .collect()
}

fn pairs(expected: &[(&str, u64)]) -> Vec<(String, u64)> {
    expected.iter().map(|(v, n)| (v.to_string(), *n)).collect()
}

#[tokio::test]
async fn facets_count_the_matching_models_by_value() {
    let app = TestApp::start().await;
    let every = "brand,series,caseMaterial,dialColor,movementType,complication,diameter";
    let body = app.ok(&format!("/v1/models?facets={every}")).await;
    assert_eq!(body["total"], 12);
    assert_eq!(
        keys(&body["facets"]),
        [
            "brand",
            "caseMaterial",
            "complication",
            "dialColor",
            "diameter",
            "movementType",
            "series"
        ]
    );
    assert_eq!(
        facet(&body, "brand"),
        pairs(&[("rolex", 5), ("tudor", 3), ("omega", 2), ("seiko", 2)])
    );
    assert_eq!(
        body["facets"]["brand"][0],
        json!({"value": "rolex", "name": "Rolex", "count": 5})
    );
    let series = facet(&body, "series");
    assert_eq!(series.len(), 10);
    assert_eq!(series[0], ("rolex/submariner".to_string(), 3));
    assert!(series[1..].iter().all(|(_, n)| *n == 1), "{series:?}");
    assert_eq!(
        facet(&body, "caseMaterial"),
        pairs(&[("stainless steel", 7), ("oystersteel", 4), ("titanium", 1)])
    );
    assert_eq!(facet(&body, "dialColor"), pairs(&[("black", 2)]));
    assert_eq!(facet(&body, "movementType"), pairs(&[("automatic", 10)]));
    assert_eq!(
        facet(&body, "complication"),
        pairs(&[("date", 9), ("gmt", 1)])
    );
    assert_eq!(
        body["facets"]["complication"][1],
        json!({"value": "gmt", "name": "GMT", "count": 1})
    );
    assert_eq!(
        facet(&body, "diameter"),
        pairs(&[
            ("41", 4),
            ("39", 2),
            ("40", 2),
            ("42", 2),
            ("36", 1),
            ("38", 1)
        ])
    );
    // Without `facets`, no `facets` key.
    assert!(app.ok("/v1/models").await.get("facets").is_none());
}

#[tokio::test]
async fn a_facet_leaves_out_its_own_filter_and_follows_the_others() {
    let app = TestApp::start().await;
    let body = app
        .ok("/v1/models?caseMaterial=titanium&facets=caseMaterial,brand,diameter")
        .await;
    assert_eq!(slugs_of(&body["data"]), ["prospex-diver-2254-50"]);
    // Every material, as if no material were chosen.
    assert_eq!(
        facet(&body, "caseMaterial"),
        pairs(&[("stainless steel", 7), ("oystersteel", 4), ("titanium", 1)])
    );
    // The titanium models' brands and diameters.
    assert_eq!(facet(&body, "brand"), pairs(&[("seiko", 1)]));
    assert_eq!(facet(&body, "diameter"), pairs(&[("42", 1)]));
    // With text and a brand: the brand facet shows every brand the text finds.
    let body = app
        .ok("/v1/models?q=diver&brand=omega&facets=brand,diameter")
        .await;
    assert_eq!(body["total"], 1);
    assert_eq!(facet(&body, "brand"), pairs(&[("omega", 1), ("seiko", 1)]));
    assert_eq!(facet(&body, "diameter"), pairs(&[("41", 1)]));
    // A typo counts as the search does.
    let body = app.ok("/v1/models?q=submarinr&facets=diameter").await;
    assert_eq!(body["total"], 3);
    assert_eq!(facet(&body, "diameter"), pairs(&[("41", 2), ("40", 1)]));
    // An id that names no model: an empty page, empty facets.
    let body = app.ok("/v1/models?id=nope&facets=brand").await;
    assert_eq!(body["total"], 0);
    assert_eq!(body["facets"], json!({"brand": []}));
}

/// Models carry their calibre's type and complications in the index: a calibre changed by a
/// later import moves them between filters and facets, though no model was written.
#[tokio::test]
async fn a_calibre_changed_by_an_import_moves_its_models_between_filters() {
    use watch_catalogue::jobs::import::{import, DirectorySource};
    let app = TestApp::start().await;
    assert_eq!(
        app.ok("/v1/models?movementType=automatic").await["total"],
        10
    );
    let (status, body) = app.get("/v1/models?movementType=manual").await;
    assert_eq!(
        (status, &body["total"]),
        (200, &json!(0)),
        "no model is manual yet"
    );

    let dataset = tempfile::tempdir().expect("dataset");
    let changed = r#"{"slug":"3235","brand":"rolex","reference":"3235","type":"manual","jewels":31,"frequency":28800,"powerReserve":70,"complications":["date","gmt"]}"#;
    std::fs::write(dataset.path().join("calibers.jsonl"), changed).expect("calibres");
    let source = DirectorySource(dataset.path().to_owned());
    app.app
        .writer()
        .run(|turn| import(turn, &source))
        .expect("import");

    let manual = ["submariner-date-126610ln", "submariner-date-126610lv"];
    assert_eq!(slugs(&app, "movementType=manual").await, manual);
    assert_eq!(
        app.ok("/v1/models?movementType=automatic").await["total"],
        8
    );
    assert_eq!(
        slugs(&app, "complication=gmt").await,
        [
            "gmt-master-ii-126710blro",
            "submariner-date-126610ln",
            "submariner-date-126610lv"
        ]
    );
    let body = app.ok("/v1/models?facets=complication").await;
    assert_eq!(
        facet(&body, "complication"),
        pairs(&[("date", 9), ("gmt", 3)])
    );
}
