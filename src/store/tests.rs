use super::*;
use crate::domain::{Brand, BrandId, Slug, Timestamp};
use std::time::{Duration, Instant};

/// Runs `open` again while the directory's lock is taken: sled's shared thread pool can hold a
/// dropped handle's file, and with it the lock, a moment longer, so a test that opens a store
/// it just closed would fail now and then.
pub(crate) fn reopen<T>(mut open: impl FnMut() -> StoreResult<T>) -> StoreResult<T> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match open() {
            Err(StoreError::Sled(error)) if is_lock_error(&error) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            other => return other,
        }
    }
}

/// [`reopen`] for a raw sled handle on `dir`.
pub(super) fn reopen_sled(dir: &Path) -> sled::Db {
    reopen(|| Ok(super::sled_config(dir, 1 << 20).open()?)).expect("sled")
}

fn is_lock_error(error: &sled::Error) -> bool {
    matches!(error, sled::Error::Io(io) if io.to_string().contains("could not acquire lock"))
}

fn brand(id: u64, slug: &str, rank: Option<u32>) -> Brand {
    Brand {
        id: BrandId(id),
        slug: Slug::parse(slug).expect("test slug"),
        name: slug.to_uppercase(),
        aliases: vec!["Alias Name".into()],
        highlight_rank: rank,
        description: None,
        country: None,
        founded: None,
        created_at: Timestamp(0),
        updated_at: Timestamp(0),
    }
}

#[test]
fn commit_is_atomic_bumps_generation_and_survives_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = Store::open(dir.path(), 1 << 20).expect("open");
        let turn = store.write_turn();
        assert_eq!(store.generation().expect("gen"), StoreGeneration(0));
        let mut batch = turn.batch().expect("batch");
        let id = batch.allocate_id(RecordKind::Brand).expect("id");
        assert_eq!(id, 1);
        batch.put_brand(None, &brand(id, "rolex", Some(2)));
        batch.put_brand(None, &brand(2, "tudor", Some(1)));
        assert_eq!(turn.commit(batch).expect("commit"), StoreGeneration(1));
        // A batch with nothing in it leaves the generation alone.
        let empty = turn.batch().expect("batch");
        assert_eq!(turn.commit(empty).expect("commit"), StoreGeneration(1));
    }
    let store = reopen(|| Store::open(dir.path(), 1 << 20)).expect("reopen");
    let turn = store.write_turn();
    assert_eq!(store.generation().expect("gen"), StoreGeneration(1));
    let rolex = Slug::parse("rolex").expect("slug");
    assert_eq!(
        store
            .catalogue()
            .brand_by_slug(&rolex)
            .expect("get")
            .map(|b| b.id),
        Some(BrandId(1))
    );
    let order: Vec<_> = store
        .catalogue()
        .highlighted_brands()
        .expect("highlighted")
        .into_iter()
        .map(|b| b.slug.to_string())
        .collect();
    assert_eq!(order, ["tudor", "rolex"]);
    assert_eq!(
        store
            .catalogue()
            .brand_by_alias("aliasname")
            .expect("alias")
            .len(),
        2
    );
    // The id counter was persisted with the batch.
    let mut batch = turn.batch().expect("batch");
    assert_eq!(batch.allocate_id(RecordKind::Brand).expect("id"), 2);
}

#[test]
fn upsert_removes_secondary_keys_the_record_no_longer_has() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), 1 << 20).expect("open");
    let turn = store.write_turn();
    let old = brand(1, "rolex", Some(1));
    let mut batch = turn.batch().expect("batch");
    batch.put_brand(None, &old);
    turn.commit(batch).expect("commit");
    let mut new = old.clone();
    new.highlight_rank = None;
    new.aliases.clear();
    let mut batch = turn.batch().expect("batch");
    batch.put_brand(Some(&old), &new);
    turn.commit(batch).expect("commit");
    assert!(store
        .catalogue()
        .highlighted_brands()
        .expect("h")
        .is_empty());
    assert!(store
        .catalogue()
        .brand_by_alias("aliasname")
        .expect("alias")
        .is_empty());
    assert_eq!(
        store.catalogue().brand_by_alias("rolex").expect("alias"),
        vec![BrandId(1)]
    );
}

#[test]
fn a_store_of_a_newer_schema_version_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = Store::open(dir.path(), 1 << 20).expect("open");
        store
            .db
            .insert(
                MetaKey::SchemaVersion.key(),
                &encode_u64(SCHEMA_VERSION + 1),
            )
            .expect("insert");
        store.flush().expect("flush");
    }
    assert!(matches!(
        reopen(|| Store::open(dir.path(), 1 << 20)),
        Err(StoreError::NewerSchema { .. })
    ));
}

#[test]
fn a_brand_resolves_by_name_alias_or_slug() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), 1 << 20).expect("open");
    let turn = store.write_turn();
    let mut lange = brand(7, "a-lange-sohne", None);
    lange.name = "A. Lange & Söhne".into();
    lange.aliases = vec!["ALS".into()];
    let mut batch = turn.batch().expect("batch");
    batch.put_brand(None, &lange);
    turn.commit(batch).expect("commit");
    for key in ["alangesöhne", "als", "alangesohne"] {
        assert_eq!(
            store.catalogue().brand_by_alias(key).expect("alias"),
            vec![BrandId(7)],
            "{key}"
        );
    }
}

#[test]
fn a_write_larger_than_one_sled_batch_lands_whole_in_order_with_one_generation() {
    use crate::domain::ModelId;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), 1 << 22).expect("open");
    let turn = store.write_turn();
    let mut batch = turn.batch().expect("batch");
    let id = batch.allocate_id(RecordKind::Brand).expect("id");
    batch.put_brand(None, &brand(id, "rolex", None));
    let models = ATOMIC_OPERATIONS as u64 + 10;
    for model in 0..models {
        batch.set_listing_count(ModelId(model), 1);
    }
    // Later writes of a key win, also across chunks.
    batch.set_listing_count(ModelId(0), 7);
    assert_eq!(turn.commit(batch).expect("commit"), StoreGeneration(1));
    assert_eq!(
        store.listings().listing_count(ModelId(0)).expect("count"),
        7
    );
    assert_eq!(
        store
            .listings()
            .listing_count(ModelId(models - 1))
            .expect("count"),
        1
    );
    let rolex = Slug::parse("rolex").expect("slug");
    assert!(store
        .catalogue()
        .brand_by_slug(&rolex)
        .expect("get")
        .is_some());
    // The id counter moved with the write: the next brand gets a fresh id.
    let mut next = turn.batch().expect("batch");
    assert_eq!(next.allocate_id(RecordKind::Brand).expect("id"), 2);
}

#[test]
fn a_large_write_keeps_only_the_last_write_of_each_key_in_key_order() {
    let op = |phase: u8, key: &[u8], value: Option<&[u8]>| {
        (phase, (key.to_vec(), value.map(<[u8]>::to_vec)))
    };
    // Sorted by phase and key, two writes of one key in write order: what `apply_with` makes.
    let ordered = vec![
        op(0, b"a", Some(b"1")),
        op(1, b"b", Some(b"first")),
        op(1, b"b", None),
        op(1, b"b", Some(b"last")),
        op(1, b"c", Some(b"only")),
        op(2, b"d", Some(b"put")),
        op(2, b"d", None),
    ];
    assert_eq!(
        last_write_per_key(ordered),
        vec![
            op(0, b"a", Some(b"1")),
            op(1, b"b", Some(b"last")),
            op(1, b"c", Some(b"only")),
            op(2, b"d", None),
        ]
    );
}

#[test]
fn a_turn_knows_which_models_it_created_and_which_it_only_changed() {
    use crate::domain::{Model, ModelId, SeriesId};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), 1 << 22).expect("open");
    let model = |id: u64, name: &str| Model {
        id: ModelId(id),
        brand_id: BrandId(1),
        series_id: SeriesId(1),
        slug: Slug::parse(&format!("m-{id}")).expect("slug"),
        name: name.into(),
        reference_number: format!("{id}00"),
        alternate_references: Vec::new(),
        caliber_id: None,
        description: None,
        spec: Default::default(),
        pictures: Vec::new(),
        created_at: Timestamp(0),
        updated_at: Timestamp(0),
    };
    {
        let turn = store.write_turn();
        let mut batch = turn.batch().expect("batch");
        batch.put_model(None, &model(1, "One"));
        batch.put_model(None, &model(2, "Two"));
        turn.commit(batch).expect("commit");
        assert_eq!(
            turn.changes().created_models,
            [ModelId(1), ModelId(2)].into()
        );
    }
    let turn = store.write_turn();
    let mut batch = turn.batch().expect("batch");
    batch.put_model(Some(&model(2, "Two")), &model(2, "Two, renamed"));
    batch.put_model(None, &model(3, "Three"));
    turn.commit(batch).expect("commit");
    let changes = turn.changes();
    assert_eq!(changes.models, [ModelId(2), ModelId(3)].into());
    assert_eq!(changes.created_models, [ModelId(3)].into());
}

#[test]
fn reads_are_whole_at_their_generation_unless_a_write_applied_key_by_key_overlaps_them() {
    use crate::domain::ModelId;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), 1 << 22).expect("open");
    let turn = store.write_turn();

    // A small write is one sled batch: a read at the generation before it stays whole.
    let at = store.read_at().expect("read at");
    let mut small = turn.batch().expect("batch");
    small.set_listing_count(ModelId(1), 3);
    turn.commit(small).expect("commit");
    assert!(store.whole_since(&at));

    // A write applied key by key after the read: it may have read part of it.
    let at = store.read_at().expect("read at");
    let mut large = turn.batch().expect("batch");
    for model in 0..ATOMIC_OPERATIONS as u64 + 10 {
        large.set_listing_count(ModelId(model), 1);
    }
    turn.commit(large).expect("commit");
    assert!(!store.whole_since(&at));

    // A read begun while one is applied, whenever it ends.
    let under_way = KeyByKeyWrite::begin(&store.key_by_key_writes);
    let at = store.read_at().expect("read at");
    drop(under_way);
    assert!(!store.whole_since(&at));

    // After it, reads are whole again.
    let at = store.read_at().expect("read at");
    assert!(store.whole_since(&at));
}

/// The areas' module docs, each with the keyspaces it owns.
const AREAS: [(&str, &str); 11] = [
    ("catalogue", include_str!("catalogue.rs")),
    ("listings", include_str!("listings.rs")),
    ("price_changes", include_str!("price_changes.rs")),
    ("price_series", include_str!("price_series.rs")),
    ("sessions", include_str!("sessions.rs")),
    ("audit", include_str!("audit.rs")),
    ("jobs", include_str!("jobs.rs")),
    ("pictures", include_str!("pictures.rs")),
    ("duplicates", include_str!("duplicates.rs")),
    ("rates", include_str!("rates.rs")),
    ("unmatched", include_str!("unmatched.rs")),
];

/// The names of `Keyspace`'s variants, as `keys.rs` declares them.
fn keyspace_names() -> Vec<&'static str> {
    let keys = include_str!("keys.rs");
    let body = keys
        .split_once("pub enum Keyspace {")
        .and_then(|(_, rest)| rest.split_once("\n}"))
        .expect("the Keyspace enum")
        .0;
    body.lines()
        .filter_map(|line| line.trim().split_once(" = "))
        .map(|(name, _)| name)
        .filter(|name| name.chars().all(|c| c.is_ascii_alphanumeric()))
        .collect()
}

/// The plain names in backticks of the `Keyspaces:` paragraph of `source`'s module doc.
fn owned_keyspaces(source: &str) -> Vec<&str> {
    let doc: Vec<&str> = source
        .lines()
        .map_while(|line| line.strip_prefix("//!"))
        .skip_while(|line| !line.contains("Keyspaces:"))
        .collect();
    doc.iter()
        .flat_map(|line| line.split('`').skip(1).step_by(2))
        .filter(|name| name.chars().all(|c| c.is_ascii_alphanumeric()))
        .collect()
}

/// A newcomer finds what reads a keyspace in the one area whose module doc names it; the store
/// itself keeps only the meta keyspace.
#[test]
fn every_keyspace_is_named_by_exactly_one_area() {
    let names = keyspace_names();
    assert!(names.contains(&"Brand") && names.contains(&"ListingSourceGroup"));
    for (area, source) in AREAS {
        for owned in owned_keyspaces(source) {
            assert!(
                names.contains(&owned),
                "{area} names `{owned}`, no keyspace"
            );
        }
    }
    for name in names.into_iter().filter(|name| *name != "Meta") {
        let owners: Vec<&str> = (AREAS.iter())
            .filter(|(_, source)| owned_keyspaces(source).contains(&name))
            .map(|(area, _)| *area)
            .collect();
        assert_eq!(owners.len(), 1, "`{name}` is named by {owners:?}");
    }
}

/// The record of an open is bookkeeping: flushed, read back (the time, not a filler written
/// before it: D-219), and no generation moved, so no index is behind for it (D-208).
#[test]
fn the_record_of_an_open_moves_no_generation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), 1 << 20).expect("open");
    let before = store.generation().expect("generation");
    assert_eq!(store.opened_at().expect("read"), None);
    store
        .flush_once_opened(Timestamp(1_700_000_000_000))
        .expect("flush");
    assert_eq!(store.generation().expect("generation"), before);
    assert_eq!(
        store.opened_at().expect("read"),
        Some(Timestamp(1_700_000_000_000))
    );
}

/// D-219: a store made now has today's segments; one made with another size (256 KiB, as the
/// stores made for a while before) keeps them, as sled refuses a store opened with another
/// size, and works as before.
#[test]
fn a_new_store_has_todays_segments_and_an_older_one_keeps_its_own() {
    let new = tempfile::tempdir().expect("dir");
    drop(Store::open(new.path(), 1 << 20).expect("store"));
    assert_eq!(made_with_segment_bytes(new.path()), Some(SEGMENT_BYTES));

    let older = tempfile::tempdir().expect("dir");
    let older_segments = 256 << 10;
    assert_ne!(older_segments, SEGMENT_BYTES);
    {
        let db = sled::Config::new()
            .path(older.path())
            .segment_size(older_segments)
            .open()
            .expect("a store of 256 KiB segments");
        db.flush().expect("flush");
    }
    let store = reopen(|| Store::open(older.path(), 1 << 20)).expect("it opens");
    let turn = store.write_turn();
    let mut batch = turn.batch().expect("batch");
    batch.put_brand(None, &brand(1, "omega", None));
    turn.commit(batch).expect("a write");
    drop(turn);
    drop(store);
    let store = reopen(|| Store::open(older.path(), 1 << 20)).expect("it opens again");
    assert!(store.catalogue().brand(BrandId(1)).expect("read").is_some());
    assert_eq!(made_with_segment_bytes(older.path()), Some(older_segments));
}

/// Held by the tests that measure sled's file or its writes, so that neither runs beside the other.
static SLED_SPACE_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// sled cleans the segments its rewrites leave behind while the store is written (D-244,
/// vendor/sled/PATCH.md). Each round writes over the same "hot" records; the "cold" ones,
/// written once between them, keep a part of every early segment live, so those segments are
/// queued for cleaning, much as an ingest's keyspaces written side by side leave them.
/// Upstream's cleaner stopped at each segment it emptied until the flusher's next period, about
/// two segments a second. Each round is followed by a little more than one flusher period, so
/// that the flusher has its share of the machine however many tests run beside this one:
/// measured without that pause the file ended at 2.0-2.7x patched here, and 2.8x in a CI run, as
/// the cleaning is the flusher's and its share is time. With it (debug builds, 2026-12-03):
/// 2.1-2.2x patched, also with two busy loops beside it; 3.4-3.5x upstream, which gives nothing
/// back in 30 s of idling either. The test allows 2.8x.
#[test]
fn a_store_rewritten_over_and_over_gives_its_space_back() {
    let _alone = SLED_SPACE_TESTS.lock();
    const KEYS: u64 = 10_000;
    const ROUNDS: u64 = 10;
    const HOT_BYTES: usize = 1_000;
    const COLD_BYTES: usize = 500;
    // sled's flusher runs every 500 ms and cleans for at most half of that.
    const FLUSHER_PERIOD_AND_A_LITTLE: std::time::Duration = std::time::Duration::from_millis(600);
    let dir = tempfile::tempdir().expect("dir");
    let db = super::sled_config(dir.path(), 8 << 20)
        .open()
        .expect("sled");
    let key = |prefix: u8, id: u64| [&[prefix][..], &id.to_be_bytes()].concat();
    for round in 0..ROUNDS {
        for id in 0..KEYS {
            if round == 0 {
                db.insert(key(b'c', id), vec![1; COLD_BYTES]).expect("cold");
            }
            let mut hot = vec![0; HOT_BYTES];
            hot[..8].copy_from_slice(&(round * KEYS + id).to_be_bytes());
            db.insert(key(b'h', id), hot).expect("hot");
        }
        db.flush().expect("flush");
        std::thread::sleep(FLUSHER_PERIOD_AND_A_LITTLE);
    }
    let live = KEYS * (HOT_BYTES + COLD_BYTES) as u64;
    let size = db.size_on_disk().expect("size");
    assert!(
        size * 5 <= live * 14,
        "sled's file is {size} bytes for {live} bytes of records"
    );
}

/// A store reopened and written a little does not write itself again (D-245,
/// vendor/sled/PATCH.md). A band of records removed from its middle leaves free segments
/// there; after a restart sled holds every other segment as active until its first
/// deactivation, and upstream measured "half the file free" against the inactive ones only, so
/// each segment deactivated then was relocated, and the relocations went on relocating: sled's
/// file written again and again while the store sat idle. The store is worked in a process of
/// its own (this test binary run again on [`reopened_store_idle_writes`]), whose written bytes
/// no other test adds to.
#[test]
fn a_reopened_store_written_a_little_does_not_rewrite_itself() {
    let _alone = SLED_SPACE_TESTS.lock();
    let exe = std::env::current_exe().expect("this test binary");
    let child = std::process::Command::new(exe)
        .args([
            "--exact",
            "store::tests::reopened_store_idle_writes",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success(),
        "the child failed: {stdout}{}",
        String::from_utf8_lossy(&child.stderr)
    );
    let figure = |name: &str| -> u64 {
        stdout
            .lines()
            .find_map(|line| line.split_once(name))
            .and_then(|(_, value)| value.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} from the child: {stdout}"))
    };
    // libtest prints the test's name first, on the line of its first output.
    let (idle, file) = (figure("idle writes:"), figure("file:"));
    assert!(
        idle * 10 <= file,
        "{idle} bytes written in 5 s of idling, for a file of {file}"
    );
}

/// The child of [`a_reopened_store_written_a_little_does_not_rewrite_itself`]: prints the
/// bytes this process wrote in the 5 s after the reopened store's write was flushed, and the
/// size of sled's file: 2 MiB patched (debug build, 2026-12-03), 250 MB with upstream's rule
/// beside D-244's cleaner; the relocation downwards alone passes too (its burst ends sooner).
#[test]
#[ignore = "run by a_reopened_store_written_a_little_does_not_rewrite_itself, in a process of its own"]
fn reopened_store_idle_writes() {
    const KEYS: u64 = 100_000;
    const BYTES: usize = 400;
    let dir = tempfile::tempdir().expect("dir");
    let key = |prefix: u8, id: u64| [&[prefix][..], &id.to_be_bytes()].concat();
    {
        let db = super::sled_config(dir.path(), 8 << 20)
            .open()
            .expect("sled");
        for id in 0..KEYS {
            db.insert(key(b'a', id), vec![1; BYTES]).expect("insert");
        }
        db.flush().expect("flush");
        for id in KEYS / 4..KEYS / 2 {
            db.remove(key(b'a', id)).expect("remove");
        }
        db.flush().expect("flush");
    }
    let db = reopen_sled(dir.path());
    for id in 0..1_000 {
        db.insert(key(b'z', id), vec![2; BYTES]).expect("insert");
    }
    db.flush().expect("flush");
    let before = bytes_written_by_this_process();
    std::thread::sleep(Duration::from_secs(5));
    let idle = bytes_written_by_this_process() - before;
    println!("idle writes: {idle}");
    println!("file: {}", db.size_on_disk().expect("size"));
}

/// What this process has written to storage: `write_bytes` of /proc/self/io.
fn bytes_written_by_this_process() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("/proc/self/io");
    io.lines()
        .find_map(|line| line.strip_prefix("write_bytes:"))
        .and_then(|value| value.trim().parse().ok())
        .expect("write_bytes in /proc/self/io")
}
