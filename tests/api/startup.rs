//! Start-up: an index missing or behind its store is rebuilt before the server answers, and
//! the bundled fixtures hold the cases the service exists for.

use crate::support::{
    binary, generation, new_data_dir, reopen, run_when_unlocked, test_catalogue, ServeProcess,
};
use std::collections::{HashMap, HashSet};
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::domain::normalize_reference;
use watch_catalogue::jobs::import::fixtures::EmbeddedFixtures;
use watch_catalogue::jobs::import::{import, import_with_media, DirectorySource};
use watch_catalogue::store::RecordKind;

#[test]
fn an_index_behind_its_store_or_deleted_is_rebuilt_by_prepare() {
    let dir = tempfile::tempdir().expect("dir");
    let data_dir = DataDir::new(dir.path());
    {
        let app = App::open(&data_dir, 1 << 20).expect("open");
        import(
            &app.store().write_turn(),
            &DirectorySource(test_catalogue()),
        )
        .expect("import");
        assert_eq!(app.index().generation().expect("generation"), None);
        assert!(!app.index_is_current().expect("current"));
        app.prepare(false).expect("prepare");
        assert_eq!(app.index().generation().expect("generation"), Some(1));
    }
    std::fs::remove_dir_all(data_dir.index()).expect("delete the index");
    let app = reopen(&data_dir, 1 << 20);
    assert!(!app.index_is_current().expect("current"));
    app.prepare(true).expect("prepare");
    assert!(app.index_is_current().expect("current"));
    assert_eq!(
        app.index()
            .count(catalogue_index::DocKind::Model, &Default::default())
            .expect("count"),
        12
    );
    // `prepare(true)` seeds only an empty store: the test catalogue is still all there is.
    assert_eq!(app.store().count(RecordKind::Brand), 5);
}

/// What the API tests' waits for a data dir's lock rely on: opening a data dir an app still
/// holds fails naming the lock, and the waits then open it once the app is dropped, in this
/// process and in a child.
#[test]
fn a_data_dir_still_held_is_opened_once_it_is_released() {
    let dir = tempfile::tempdir().expect("dir");
    let data_dir = DataDir::new(dir.path());
    let held_for_a_moment = || {
        let app = reopen(&data_dir, 1 << 20);
        let refused = App::open(&data_dir, 1 << 20)
            .err()
            .expect("the lock is held");
        assert!(
            format!("{refused:#}").contains("could not acquire lock"),
            "{refused:#}"
        );
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            drop(app);
        })
    };
    let held = held_for_a_moment();
    let (_, text) = run_when_unlocked(|| {
        let mut command = binary(dir.path());
        command.arg("import").arg(test_catalogue());
        command
    })
    .unwrap_or_else(|text| panic!("{text}"));
    assert!(text.contains("store generation 1"), "{text}");
    held.join().expect("released");
    let held = held_for_a_moment();
    assert_eq!(
        reopen(&data_dir, 1 << 20).store().count(RecordKind::Brand),
        5
    );
    held.join().expect("released");
    let held = held_for_a_moment();
    assert_eq!(generation(dir.path()), 1);
    held.join().expect("released");
}

#[test]
fn the_bundled_fixtures_import_and_cover_the_catalogue_cases() {
    let dir = tempfile::tempdir().expect("dir");
    let app = App::open(&DataDir::new(dir.path()), 16 << 20).expect("open");
    import_with_media(
        &app.store().write_turn(),
        &EmbeddedFixtures,
        Some(app.media()),
    )
    .expect("the bundled fixtures import cleanly");
    let store = app.store();
    // The fixtures' own pictures are in the media store at once: nothing to fetch.
    let gmt = store
        .catalogue()
        .all_models()
        .filter_map(Result::ok)
        .find(|m| m.slug.as_str() == "gmt-master-ii-116710ln")
        .expect("the GMT-Master II");
    let front = gmt.pictures.first().expect("a picture");
    let record = store
        .pictures()
        .picture(front.id)
        .expect("read")
        .expect("a record");
    assert!(record.fetched().is_some(), "{record:?}");
    assert!(store.count(RecordKind::Brand) >= 25);
    assert!(store.count(RecordKind::Series) >= 80);
    assert!(store.count(RecordKind::Model) >= 400);
    assert!(store.count(RecordKind::Caliber) >= 60);
    assert!(!store
        .catalogue()
        .highlighted_brands()
        .expect("highlighted")
        .is_empty());

    let models: Vec<_> = store
        .catalogue()
        .all_models()
        .collect::<Result<_, _>>()
        .expect("models");
    let calibers: Vec<_> = store
        .catalogue()
        .calibers()
        .collect::<Result<_, _>>()
        .expect("calibers");
    assert!(
        models.iter().any(|m| m.spec.limited_amount.is_some()),
        "a limited edition"
    );
    assert!(
        models.iter().any(|m| m.spec.discontinuation_year.is_some()),
        "a discontinued model"
    );
    assert!(
        models.iter().any(|m| !m.alternate_references.is_empty()),
        "alternate references"
    );
    assert!(
        models.iter().any(|m| m.pictures.is_empty()),
        "a model without pictures"
    );
    assert!(
        models.iter().any(|m| m.spec.thickness.is_none()),
        "an empty field left null"
    );
    assert!(
        calibers.iter().any(|c| c.parent_id.is_some()),
        "a calibre with a parent"
    );

    let mut brands_by_reference: HashMap<String, HashSet<u64>> = HashMap::new();
    for model in &models {
        brands_by_reference
            .entry(normalize_reference(&model.reference_number))
            .or_default()
            .insert(model.brand_id.0);
    }
    assert!(
        brands_by_reference.values().any(|brands| brands.len() > 1),
        "a reference in two brands"
    );

    let mut brands_by_caliber: HashMap<u64, HashSet<u64>> = HashMap::new();
    for model in &models {
        if let Some(caliber) = model.caliber_id {
            brands_by_caliber
                .entry(caliber.0)
                .or_default()
                .insert(model.brand_id.0);
        }
    }
    let makers_shared: HashSet<String> = calibers
        .iter()
        .filter(|c| brands_by_caliber.get(&c.id.0).is_some_and(|b| b.len() > 1))
        .map(|c| {
            store
                .catalogue()
                .brand(c.brand_id)
                .expect("brand")
                .expect("brand exists")
                .slug
                .to_string()
        })
        .filter(|slug| ["eta", "sellita", "miyota"].contains(&slug.as_str()))
        .collect();
    assert!(
        makers_shared.len() >= 2,
        "movement makers' calibres run by several brands: {makers_shared:?}"
    );
    let mut base_variants: HashMap<(u64, String), usize> = HashMap::new();
    for model in &models {
        let reference = normalize_reference(&model.reference_number);
        let base: String = reference.chars().take_while(char::is_ascii_digit).collect();
        if base.len() >= 4 && base.len() < reference.len() {
            *base_variants.entry((model.brand_id.0, base)).or_default() += 1;
        }
    }
    assert!(
        base_variants.values().any(|n| *n > 1),
        "base variants of one reference"
    );
}

/// An address in use is said at once, before a new data dir is filled with the fixtures; the
/// next start on a free address imports them as usual.
#[test]
fn an_address_in_use_is_refused_before_the_fixtures_are_imported() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = taken.local_addr().expect("address").to_string();
    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("data");
    let output = binary(&data)
        .args(["serve", "--addr", &addr])
        .output()
        .expect("serve");
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains(&format!("binding {addr}")), "{said}");
    assert!(said.contains("another server"), "{said}");
    assert!(
        !data.join("store").exists(),
        "no store was opened, nothing imported"
    );
}

/// sled's first flush after an open walks every segment of the store (D-208): `serve` makes it
/// as it opens the store, at every start, rather than leaving it to the first request that
/// writes (that its record moves no generation is the store's unit test).
#[test]
fn serve_makes_the_stores_first_flush_as_it_opens_it() {
    let data = new_data_dir();
    let opened_at = |path: &std::path::Path| {
        let app = reopen(&DataDir::new(path), 1 << 20);
        let opened = app.store().opened_at().expect("read");
        opened.expect("the open recorded")
    };
    let mut serve = ServeProcess::start(data.path());
    assert!(serve.has_logged("store's first flush done"));
    serve.stop();
    let first = opened_at(data.path());

    let mut serve = ServeProcess::start(data.path());
    assert!(serve.has_logged("store's first flush done"));
    serve.stop();
    assert!(opened_at(data.path()) > first, "the second start recorded");
}

/// `serve` reads both search indexes once as its port opens, so that a cold start's first
/// requests find them in the OS's cache (D-232).
#[test]
fn serve_reads_its_search_indexes_ahead_as_it_opens() {
    let data = new_data_dir();
    let mut serve = ServeProcess::start(data.path());
    let line = serve
        .line_holding("search indexes read ahead")
        .unwrap_or_else(|| panic!("no read-ahead:\n{}", serve.log));
    let bytes: u64 = line
        .split("bytes=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no byte count in {line}"));
    assert!(bytes > 100_000, "the fixtures' indexes are read: {line}");
    serve.stop();
}

/// `serve` reads the listings index's column of reconciliation groups through before it
/// listens, and maps its indexes' files asking the OS for the pages it touches alone: a first
/// text search over the groups after a cold start read 8 MiB around each page it touched
/// (D-241).
#[test]
fn serve_maps_its_index_files_to_be_read_a_page_at_a_time() {
    let data = new_data_dir();
    let mut serve = ServeProcess::start(data.path());
    let column = serve
        .line_holding("group column read ahead")
        .unwrap_or_else(|| panic!("no read of the group column:\n{}", serve.log));
    assert!(
        !column.contains("bytes=0 "),
        "the fixtures' unmatched listings have groups: {column}"
    );
    assert!(
        serve.log.find("group column read ahead") < serve.log.find("serving the watch catalogue"),
        "read before the port opens:\n{}",
        serve.log
    );
    let mut flags = Vec::new();
    for index in ["index", "listings-index"] {
        let mapped = serve.flags_of_files_mapped_from(&data.path().join(index));
        assert!(!mapped.is_empty(), "{index}'s files are mapped");
        flags.extend(mapped);
    }
    serve.stop();
    for flags in flags {
        // `rr`: the mapping is advised random, read a page at a time.
        assert!(flags.split_whitespace().any(|flag| flag == "rr"), "{flags}");
    }
}

/// `serve` turns transparent huge pages off for its process, as the batch commands do (D-237).
/// Kernels before 6.x write no `THP_enabled` line: nothing to check there.
#[test]
fn serve_runs_without_transparent_huge_pages() {
    let data = new_data_dir();
    let serve = ServeProcess::start(data.path());
    let enabled = serve.status_line("THP_enabled");
    serve.stop();
    if let Some(enabled) = enabled {
        assert_eq!(enabled, "0", "huge pages left on for the server");
    }
}
