//! `watch-catalogue migrate` and `serve` over a data dir of schema 2, written from the frozen
//! store of tests/data/store-v2 (the schema-2 binary's own bytes).

use crate::cli::run;
use crate::support::{binary, generation, http_get, ServeProcess};
use std::path::Path;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::store::SCHEMA_VERSION;

/// A data dir holding only the frozen schema-2 store (no index: start-up builds it).
fn schema_2_data_dir() -> tempfile::TempDir {
    data_dir_from_fixture(None)
}

/// The frozen store, its schema version replaced by `schema` if given, written in one open: a
/// test that opens a sled dir again right after closing it can lose the race for its lock to a
/// child process another test is forking.
fn data_dir_from_fixture(schema: Option<u64>) -> tempfile::TempDir {
    let data = tempfile::tempdir().expect("dir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/store-v2/store.hex");
    let text = std::fs::read_to_string(fixture).expect("fixture");
    let db = sled::open(DataDir::new(data.path()).store()).expect("sled");
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let (key, value) = line.split_once(' ').expect("`key value`");
        db.insert(unhex(key), unhex(value)).expect("insert");
    }
    if let Some(schema) = schema {
        db.insert(b"\0schema_version\0", &schema.to_be_bytes())
            .expect("insert");
    }
    db.flush().expect("flush");
    data
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).expect("hex"))
        .collect()
}

#[test]
fn migrate_brings_a_schema_2_data_dir_up_to_date_and_the_commands_work_on_it() {
    let data = schema_2_data_dir();
    let (output, text) = run(binary(data.path()).arg("reindex"));
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "store schema version 2 is older than version {SCHEMA_VERSION}"
        )) && text.contains("run `watch-catalogue migrate` on this data dir"),
        "{text}"
    );

    let (output, text) = run(binary(data.path()).arg("migrate"));
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains(
            "store migrated from schema version 2 to 16\n  2 -> 3: every record value starts with its layout version byte: 53 values rewritten\n  3 -> 4: the admin counts are kept with the records they count: 7 values rewritten\n  4 -> 5: model pictures and reference bases are keyed, and pictures stored before the image pipeline are queued for it: 58 values rewritten\n  5 -> 6: the sources of new listings are kept in groups (nothing rewritten: the older keys are read as before): 0 values rewritten\n  6 -> 7: the calibre -> model keys, which nothing read, are dropped: 10 values rewritten\n  7 -> 8: the groups of unmatched listings are kept with the listings: 3 values rewritten\n  8 -> 9: the audit trail is keyed by user and by action, each list with its count: 0 values rewritten\n  9 -> 10: the groups of unmatched listings keep their members and prices as keys of their own: 3 values rewritten\n  10 -> 11: the member keys of the groups of unmatched listings hold each listing's title: 3 values rewritten\n  11 -> 12: the rates in force are kept as the first day of the rates history: 1 values rewritten\n  12 -> 13: every model's price series is logged to be folded (by the server's series folder, in the background): 1 values rewritten\n  13 -> 14: a merge may leave its duplicates' listings for the server's listing mover (nothing rewritten): 0 values rewritten\n  14 -> 15: the groups of unmatched listings are walked by provider and by reason through their provider-and-reason orders (their own order keys dropped): 0 values rewritten\n  15 -> 16: the groups of unmatched listings are found by the start of their reference or brand text in the listings index (their text keys dropped): 0 values rewritten"
        ),
        "{text}"
    );
    let (output, text) = run(binary(data.path()).arg("migrate"));
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "store schema version {SCHEMA_VERSION} is current: nothing to migrate"
        )),
        "{text}"
    );
    assert_eq!(generation(data.path()), 4, "migrating is not a write");

    let (output, text) = run(binary(data.path()).arg("reindex"));
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("indexed 27 catalogue documents at store generation 4")
            && text.contains("indexed 11 listings at store generation 4")
            && text.contains("kept 3 groups of unmatched listings (0 keys put right)"),
        "{text}"
    );
    let serve = ServeProcess::start(data.path());
    assert!(
        !serve.log.contains("store migrated"),
        "nothing left to migrate:\n{}",
        serve.log
    );
    let model = http_get(&serve.base, "/models/rolex/submariner-date-126610ln");
    assert_eq!(model["referenceNumber"], "126610LN", "{model}");
    assert_eq!(model["diameter"], 41.0, "{model}");
    serve.stop();
}

#[test]
fn serve_migrates_a_schema_2_store_at_start_up_then_answers_from_it() {
    let data = schema_2_data_dir();
    let serve = ServeProcess::start(data.path());
    assert!(
        serve.log.contains("store migrated at start-up")
            && serve.log.contains("rewritten=53")
            && serve
                .log
                .contains("search index was missing or behind the store: rebuilt"),
        "{}",
        serve.log
    );
    assert!(
        !serve.log.contains("importing the bundled fixtures"),
        "the migrated store is not empty:\n{}",
        serve.log
    );
    let brand = http_get(&serve.base, "/brands/rolex");
    assert_eq!(brand["name"], "Rolex", "{brand}");
    let listings = http_get(&serve.base, "/listings?pageSize=1");
    assert_eq!(listings["total"], 11, "{listings}");
    serve.stop();
    // The migration itself is no write; the image worker may since have recorded its first
    // attempts at the pictures the migration queued.
    assert!(generation(data.path()) >= 4);
}

#[test]
fn migrate_refuses_a_missing_store_and_a_newer_one() {
    let empty = tempfile::tempdir().expect("dir");
    let (output, text) = run(binary(empty.path()).arg("migrate"));
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("is not a data dir"), "{text}");
    assert!(
        !DataDir::new(empty.path()).store().exists(),
        "no store was created"
    );

    let newer = SCHEMA_VERSION + 1;
    let data = data_dir_from_fixture(Some(newer));
    for command in ["migrate", "reindex"] {
        let (output, text) = run(binary(data.path()).arg(command));
        assert!(!output.status.success(), "{command}: {text}");
        assert!(
            text.contains(&format!(
                "store schema version {newer} is newer than version {SCHEMA_VERSION}"
            )) && text.contains("never migrated down"),
            "{command}: {text}"
        );
    }
}
