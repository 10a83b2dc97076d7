//! Provider snapshots: the revisit lifecycle over successive snapshots (create, delist,
//! reactivate, id and history kept), each matching outcome, the guards against empty or mostly
//! invalid snapshots, and listing counts in the catalogue.

use crate::support::*;
use serde_json::{json, Value};
use watch_catalogue::api::config::ApiConfig;
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::domain::{Condition, ListingStatus, MatchOutcome, ModelId, Slug};
use watch_catalogue::jobs::import::{import, DirectorySource};
use watch_catalogue::jobs::ingest::{ingest, IngestError, IngestReport};
use watch_catalogue::jobs::snapshot_rules::{Refusal, SnapshotRules};

const A1: &str = r#"{"sourceId":"a1","url":"https://c24.example/a1","title":"Rolex Submariner Date","brand":"Rolex","reference":"126610 LN","price":12500,"currency":"EUR","condition":"Unworn","availability":"In stock"}"#;
const A2: &str = r#"{"sourceId":"a2","url":"https://c24.example/a2","title":"Rolex Submariner Date 16610 full set","brand":"ROLEX SA"}"#;
const A3: &str = r#"{"sourceId":"a3","url":"https://c24.example/a3","title":"Nautilus","brand":"Patek Philippe","reference":"5711/1A"}"#;
const A4: &str =
    r#"{"sourceId":"a4","url":"https://c24.example/a4","brand":"Rolex","reference":"999999"}"#;
const A5: &str = r#"{"sourceId":"a5","url":"https://c24.example/a5","brand":"Tudor","reference":"79030N","status":"RESERVED","price":3500,"currency":"GBP","condition":"Used (Very good)","pictures":["https://c24.example/a5.jpg"]}"#;
const A6_BAD: &str = r#"{"sourceId":"a6"}"#;
const A7: &str = r#"{"sourceId":"a7","url":"https://c24.example/a7","title":"Tudor 79030N or 91450?","brand":"Tudor"}"#;

struct Catalogue {
    app: App,
    dir: tempfile::TempDir,
}

/// The lifecycle tests delist most of a small stock on purpose: the stock guard's share is
/// lifted for them (its own tests are in `data_safety`).
fn any_share() -> SnapshotRules {
    SnapshotRules {
        max_delist: 1.0,
        ..SnapshotRules::default()
    }
}

fn catalogue() -> Catalogue {
    let dir = tempfile::tempdir().expect("dir");
    let app = App::open(&DataDir::new(dir.path()), 16 << 20).expect("open");
    import(
        &app.store().write_turn(),
        &DirectorySource(test_catalogue()),
    )
    .expect("import");
    Catalogue { app, dir }
}

impl Catalogue {
    fn ingest(&self, lines: &[&str]) -> Result<IngestReport, IngestError> {
        ingest(
            &self.app.store().write_turn(),
            "chrono24",
            "snapshot",
            lines.join("\n").as_bytes(),
            &any_share(),
        )
    }

    fn listing(&self, code: &str) -> watch_catalogue::domain::Listing {
        let provider = self
            .app
            .store()
            .listings()
            .provider_by_slug(&Slug::parse("chrono24").expect("slug"))
            .expect("read")
            .expect("provider");
        self.app
            .store()
            .listings()
            .listing_by_source(provider.id, code)
            .expect("read")
            .expect("listing")
    }

    fn model(&self, brand: &str, slug: &str) -> ModelId {
        let brand = self
            .app
            .store()
            .catalogue()
            .brand_by_slug(&Slug::parse(brand).expect("slug"))
            .expect("read")
            .expect("brand");
        self.app
            .store()
            .catalogue()
            .model_by_slug(brand.id, &Slug::parse(slug).expect("slug"))
            .expect("read")
            .expect("model")
            .id
    }

    fn active_count(&self, brand: &str, slug: &str) -> u64 {
        self.app
            .store()
            .listings()
            .listing_count(self.model(brand, slug))
            .expect("count")
    }
}

#[test]
fn snapshots_create_delist_and_reactivate_keeping_ids_and_history() {
    let c = catalogue();
    let first = c
        .ingest(&[A1, A2, A3, A4, A5, A6_BAD, A7])
        .expect("first snapshot");
    assert_eq!(
        (
            first.created,
            first.refreshed,
            first.delisted,
            first.reactivated
        ),
        (6, 0, 0, 0)
    );
    assert_eq!((first.matched, first.unmatched), (3, 3));
    assert_eq!(first.skipped.count(), 1);
    assert_eq!(
        (
            first.skipped.first()[0].line,
            first.skipped.first()[0].field.as_deref()
        ),
        (6, Some("url")),
        "{:?}",
        first.skipped
    );
    assert!(first.skipped.first()[0]
        .message
        .contains("missing field `url`"));
    let a2_id = c.listing("a2").id;
    assert_eq!(c.active_count("rolex", "submariner-date-16610"), 1);
    assert_eq!(
        c.active_count("tudor", "black-bay-fifty-eight-79030n"),
        0,
        "RESERVED is not ACTIVE"
    );

    let changed_a1 = A1.replace("12500", "12000");
    let a5_active = A5.replace(r#","status":"RESERVED""#, "");
    let second = c
        .ingest(&[&changed_a1, A3, &a5_active])
        .expect("second snapshot");
    assert_eq!(
        (
            second.created,
            second.refreshed,
            second.delisted,
            second.reactivated
        ),
        (0, 3, 3, 0)
    );
    let a2 = c.listing("a2");
    assert_eq!(a2.status, ListingStatus::Delisted);
    assert!(a2.delisted_at.is_some());
    assert_eq!(c.listing("a1").details.price, Some(12000));
    assert_eq!(c.active_count("rolex", "submariner-date-16610"), 0);
    assert_eq!(c.active_count("tudor", "black-bay-fifty-eight-79030n"), 1);

    let third = c
        .ingest(&[&changed_a1, A2, A3, &a5_active])
        .expect("third snapshot");
    assert_eq!(
        (
            third.created,
            third.refreshed,
            third.delisted,
            third.reactivated
        ),
        (0, 3, 0, 1)
    );
    let a2 = c.listing("a2");
    assert_eq!(a2.id, a2_id, "a listing that comes back keeps its id");
    assert_eq!(a2.status, ListingStatus::Active);
    assert_eq!(a2.delisted_at, None);
    let history: Vec<ListingStatus> = a2.history.iter().map(|change| change.status).collect();
    assert_eq!(
        history,
        [
            ListingStatus::Active,
            ListingStatus::Delisted,
            ListingStatus::Active
        ]
    );
    assert_eq!(
        c.listing("a4").status,
        ListingStatus::Delisted,
        "still gone"
    );
    assert_eq!(c.active_count("rolex", "submariner-date-16610"), 1);
}

#[test]
fn each_matching_outcome_is_recorded() {
    let c = catalogue();
    c.ingest(&[A1, A2, A3, A4, A5, A7]).expect("snapshot");
    let a1 = c.listing("a1");
    assert_eq!(
        a1.model_id,
        Some(c.model("rolex", "submariner-date-126610ln"))
    );
    assert_eq!(a1.matching, MatchOutcome::Matched { from_title: false });
    assert_eq!(
        a1.details.scraped_reference.as_deref(),
        Some("126610 LN"),
        "seller text kept verbatim"
    );
    assert_eq!(a1.details.condition, Some(Condition::Unworn));
    let a2 = c.listing("a2");
    assert_eq!(
        (a2.model_id, a2.matching),
        (
            Some(c.model("rolex", "submariner-date-16610")),
            MatchOutcome::Matched { from_title: true }
        )
    );
    assert_eq!(c.listing("a3").matching, MatchOutcome::UnknownBrand);
    assert_eq!(c.listing("a4").matching, MatchOutcome::UnknownReference);
    let a5 = c.listing("a5");
    assert_eq!(
        a5.model_id,
        Some(c.model("tudor", "black-bay-fifty-eight-79030n")),
        "an alternate reference matches"
    );
    assert_eq!(
        (a5.status, a5.reserved_at.is_some()),
        (ListingStatus::Reserved, true)
    );
    assert_eq!(a5.details.condition, Some(Condition::VeryGood));
    assert_eq!(a5.pictures.len(), 1);
    let a7 = c.listing("a7");
    assert_eq!((a7.model_id, a7.matching), (None, MatchOutcome::Ambiguous));
}

#[test]
fn an_empty_or_mostly_invalid_snapshot_changes_nothing() {
    let c = catalogue();
    c.ingest(&[A1, A2]).expect("snapshot");
    let generation = c.app.store().generation().expect("generation");
    assert!(matches!(
        c.ingest(&[]),
        Err(IngestError::Refused {
            refusal: Refusal::Empty,
            ..
        })
    ));
    assert!(matches!(
        c.ingest(&["", "not json", A6_BAD]),
        Err(IngestError::Refused {
            refusal: Refusal::Empty,
            ..
        })
    ));
    assert!(matches!(
        c.ingest(&[A1, "not json", A6_BAD, "{}"]),
        Err(IngestError::Refused {
            refusal: Refusal::MostlyInvalid {
                invalid: 3,
                total: 4,
                ..
            },
            ..
        })
    ));
    assert_eq!(c.app.store().generation().expect("generation"), generation);
    assert_eq!(
        c.listing("a2").status,
        ListingStatus::Active,
        "nothing was delisted"
    );
    assert!(matches!(
        ingest(
            &c.app.store().write_turn(),
            "nope",
            "snapshot",
            A1.as_bytes(),
            &SnapshotRules::default()
        ),
        Err(IngestError::UnknownProvider(_))
    ));
}

#[tokio::test]
async fn listing_counts_reach_the_catalogue() {
    let c = catalogue();
    c.ingest(&[A1, A2, A5]).expect("snapshot");
    c.app.prepare(false).expect("reindex");
    let Catalogue { app, dir } = c;
    let server = TestApp::serving(app, dir, ApiConfig::default()).await;
    let item = &server.ok("/v1/models?q=126610ln").await["data"][0];
    assert_eq!(item["listingCount"], 1);
    let rolex = server.ok("/v1/brands/rolex").await;
    assert_eq!(rolex["stats"]["listingCount"], 2);
    let series = server.ok("/v1/brands/rolex/series/submariner").await;
    assert_eq!(series["stats"]["listingCount"], 2);
}

#[test]
fn the_ingest_command_reports_and_refuses_through_the_binary() {
    let data = tempfile::tempdir().expect("dir");
    let binary = || binary(data.path());
    assert!(binary()
        .arg("import")
        .arg(test_catalogue())
        .output()
        .expect("run")
        .status
        .success());
    let snapshot = data.path().join("chrono24.jsonl");
    std::fs::write(&snapshot, [A1, A2, A6_BAD].join("\n")).expect("write");
    let output = binary()
        .args(["ingest", "--provider", "chrono24"])
        .arg(&snapshot)
        .output()
        .expect("run");
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{out}{err}");
    assert!(out.contains("ingested chrono24: 2 created, 0 refreshed, 0 reactivated, 0 delisted; 2 matched, 0 unmatched; 1 lines skipped"), "{out}");
    assert!(
        err.contains(&format!(
            "skipped {}:3: field `url`: missing field `url`",
            snapshot.display()
        )),
        "{err}"
    );
    let output = binary()
        .args(["ingest", "--provider", "chrono24", "--max-invalid", "2"])
        .arg(&snapshot)
        .output()
        .expect("run");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr)
        .contains("--max-invalid is a share between 0 and 1"));
    let output = binary().arg("match").output().expect("run");
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && out.contains("matched 0 of 0 unmatched listings"),
        "{out}"
    );
    let output = binary()
        .args(["ingest", "--provider", "nope"])
        .arg(&snapshot)
        .output()
        .expect("run");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no provider with slug `nope`"));
    std::fs::write(&snapshot, "").expect("write");
    let output = binary()
        .args(["ingest", "--provider", "chrono24"])
        .arg(&snapshot)
        .output()
        .expect("run");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("rather than delisting"));
}

#[test]
fn match_links_unmatched_listings_once_the_catalogue_has_their_model() {
    let c = catalogue();
    c.ingest(&[A1, A4]).expect("snapshot");
    assert_eq!(c.listing("a4").matching, MatchOutcome::UnknownReference);
    let nothing = watch_catalogue::jobs::matching::rematch_unmatched(&c.app.store().write_turn())
        .expect("rematch");
    assert_eq!((nothing.tried, nothing.matched), (1, 0));
    let dataset = tempfile::tempdir().expect("dataset");
    std::fs::write(
        dataset.path().join("models.jsonl"),
        r#"{"slug":"test-999999","brand":"rolex","series":"submariner","name":"Test","referenceNumber":"999999"}"#,
    )
    .expect("write");
    import(
        &c.app.store().write_turn(),
        &DirectorySource(dataset.path().to_owned()),
    )
    .expect("import the new model");
    let report = watch_catalogue::jobs::matching::rematch_unmatched(&c.app.store().write_turn())
        .expect("rematch");
    assert_eq!((report.tried, report.matched), (1, 1));
    let a4 = c.listing("a4");
    assert_eq!(
        (a4.model_id, a4.matching),
        (
            Some(c.model("rolex", "test-999999")),
            MatchOutcome::Matched { from_title: false }
        )
    );
    assert_eq!(c.active_count("rolex", "test-999999"), 1);
}

/// fixtures/revisits/README.md, replayed through the binary: the import ingests the three
/// bundled feeds, the second chrono24 snapshot delists six listings, the third brings one back
/// with its id and history.
#[test]
fn the_fixture_revisits_replay_as_documented() {
    let data = tempfile::tempdir().expect("dir");
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let run = |args: &[&str]| {
        let output = binary(data.path()).args(args).output().expect("run");
        let out = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{args:?}: {out}");
        out
    };
    let fixtures_dir = fixtures.to_str().expect("utf-8 path");
    let imported = run(&["import", fixtures_dir]);
    for line in [
        "ingested chrono24: 180 created, 0 refreshed, 0 reactivated, 0 delisted; 145 matched, 35 unmatched",
        "ingested ebay: 160 created, 0 refreshed, 0 reactivated, 0 delisted; 129 matched, 31 unmatched",
        "ingested watchbox: 140 created, 0 refreshed, 0 reactivated, 0 delisted; 115 matched, 25 unmatched",
    ] {
        assert!(imported.contains(line), "{line} in {imported}");
    }
    let revisit = |n: u8| {
        let file = fixtures.join(format!("revisits/chrono24-{n}.jsonl"));
        run(&[
            "ingest",
            "--provider",
            "chrono24",
            file.to_str().expect("utf-8 path"),
        ])
    };
    let second = revisit(2);
    assert!(second.contains(
        "ingested chrono24: 2 created, 174 refreshed, 0 reactivated, 6 delisted; 5 matched, 0 unmatched"
    ));
    // 176 in the snapshot and 6 delisted; the time each part took follows.
    assert!(
        second.contains("182 listings written in ")
            && second.contains(" in 1 commits; indexes up to date after "),
        "{second}"
    );
    assert!(revisit(3).contains(
        "ingested chrono24: 0 created, 176 refreshed, 1 reactivated, 0 delisted; 0 matched, 0 unmatched"
    ));

    let app = App::open(&DataDir::new(data.path()), 16 << 20).expect("open");
    let chrono24 = app
        .store()
        .listings()
        .provider_by_slug(&Slug::parse("chrono24").expect("slug"))
        .expect("read")
        .expect("provider");
    let back = app
        .store()
        .listings()
        .listing_by_source(chrono24.id, "CH24-66590249")
        .expect("read")
        .expect("listing");
    let statuses: Vec<ListingStatus> = back.history.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        [
            ListingStatus::Active,
            ListingStatus::Delisted,
            ListingStatus::Active
        ]
    );
    assert_eq!(
        (back.status, back.delisted_at),
        (ListingStatus::Active, None)
    );
    let gone = app
        .store()
        .listings()
        .listing_by_source(chrono24.id, "CH24-96334741")
        .expect("read")
        .expect("kept after delisting");
    assert_eq!(gone.status, ListingStatus::Delisted);
    assert!(gone.delisted_at.is_some());
    assert!(
        app.index_is_current().expect("current"),
        "the indexes followed every write"
    );
    let id_of = |code: &str| {
        let listings = app.store().listings();
        let listing = listings.listing_by_source(chrono24.id, code);
        listing.expect("read").expect("listing").id.to_string()
    };
    let (repriced, returned) = (id_of("CH24-75331516"), id_of("CH24-66590249"));
    drop(app);

    // Each price as the revisits saw it, in euros and in dollars at the bundled ECB day.
    let serve = ServeProcess::start(data.path());
    let history = |id: &str| -> Vec<(String, Value, Value, Value)> {
        let body = http_get(&serve.base, &format!("/listings/{id}"));
        let points = body["priceHistory"]
            .as_array()
            .expect("priceHistory")
            .clone();
        (points.iter())
            .map(|p| {
                assert_eq!(p["ratesDate"], "2025-05-09", "{p}");
                let fields = (
                    p["price"].clone(),
                    p["currency"].clone(),
                    p["priceUSD"].clone(),
                );
                (
                    p["event"].as_str().expect("event").to_owned(),
                    fields.0,
                    fields.1,
                    fields.2,
                )
            })
            .collect()
    };
    let eur = |event: &str, price: u64, usd: u64| {
        (event.to_owned(), json!(price), json!("EUR"), json!(usd))
    };
    assert_eq!(
        history(&repriced),
        [eur("listed", 55990, 63000), eur("changed", 54300, 61098)]
    );
    let returned = history(&returned);
    let events: Vec<&str> = returned.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(events, ["listed", "delisted", "relisted"]);
    serve.stop();
}
