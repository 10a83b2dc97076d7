//! Migrations over a frozen store of schema 2 (tests/data/store-v2/store.hex), written by the
//! schema-2 binary itself, so that the test cannot drift with today's encoding.

use super::*;
use crate::domain::{
    AuditEntry, Brand, Caliber, Complication, Listing, ListingStatus, Model, Provider, Series,
    Slug, Timestamp,
};
use crate::store::tests::{reopen, reopen_sled};
use crate::store::{AuditFilter, Store, StoreGeneration};
use std::collections::BTreeMap;
use std::path::Path;

const SCHEMA_2_STORE: &str = include_str!("../../../tests/data/store-v2/store.hex");

type Pairs = BTreeMap<Vec<u8>, Vec<u8>>;

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).expect("hex fixture"))
        .collect()
}

/// Every key and value of the frozen schema-2 store.
fn schema_2_pairs() -> Pairs {
    SCHEMA_2_STORE
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (key, value) = line.split_once(' ').expect("`key value`");
            (unhex(key), unhex(value))
        })
        .collect()
}

/// Writes `pairs` as they are into a sled tree at `dir`, as the binary that made them did.
fn write_raw(dir: &Path, pairs: &Pairs) {
    let db = reopen_sled(dir);
    for (key, value) in pairs {
        db.insert(key, value.as_slice()).expect("insert");
    }
    db.flush().expect("flush");
}

fn raw_pairs(db: &sled::Db) -> Pairs {
    db.iter()
        .map(|entry| {
            let (key, value) = entry.expect("entry");
            (key.to_vec(), value.to_vec())
        })
        .collect()
}

fn is_schema_2_record(key: &[u8]) -> bool {
    schema_2_record_prefixes()
        .iter()
        .any(|prefix| key.starts_with(prefix))
}

/// How the schema-2 binary read a record: bincode, standard config, no layout byte.
fn read_as_schema_2<T: serde::de::DeserializeOwned>(pairs: &Pairs, space: Keyspace) -> Vec<T> {
    pairs
        .iter()
        .filter(|(key, _)| key.first() == Some(&(space as u8)))
        .map(|(_, value)| {
            bincode::serde::decode_from_slice(value, bincode::config::standard())
                .expect("schema-2 record")
                .0
        })
        .collect()
}

fn collect<T>(records: impl Iterator<Item = StoreResult<T>>) -> Vec<T> {
    records.collect::<StoreResult<Vec<T>>>().expect("records")
}

fn slug(text: &str) -> Slug {
    Slug::parse(text).expect("slug")
}

/// The keys step 4 -> 5 adds to the fixture: each model picture's owner key, and a pending
/// record and due key for each picture the image pipeline is to fetch (the fixture has no
/// picture records, being older than the pipeline).
fn queued_picture_keys(before: &Pairs) -> Vec<Vec<u8>> {
    let models: Vec<Model> = read_as_schema_2(before, Keyspace::Model);
    let listings: Vec<Listing> = read_as_schema_2(before, Keyspace::Listing);
    let mut keys = Vec::new();
    let mut queued = Vec::new();
    for model in &models {
        let before_keys = schema_2_pairs();
        keys.extend(
            crate::store::write::model_keys(model)
                .into_iter()
                .map(|(key, _)| key)
                .filter(|key| !before_keys.contains_key(key)),
        );
        for picture in &model.pictures {
            if picture.cropped_url.is_none() {
                queued.push(picture.id.0);
            }
        }
    }
    queued.extend(
        listings
            .iter()
            .flat_map(|l| l.pictures.iter().map(|p| p.id.0)),
    );
    for id in queued {
        keys.push(Keyspace::PictureState.id_key(id));
        keys.push(Keyspace::PictureDue.id_key(id));
    }
    keys
}

#[test]
fn a_schema_2_store_migrates_in_place_and_every_record_reads_back_equal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let before = schema_2_pairs();
    write_raw(dir.path(), &before);
    let records = before.keys().filter(|key| is_schema_2_record(key)).count();
    assert!(records > 40, "the fixture holds records of every kind");

    let (store, report) = reopen(|| Store::open_migrating(dir.path(), 1 << 20)).expect("migrate");
    assert_eq!(report.found, Some(2));
    assert_eq!(report.schema, SCHEMA_VERSION);
    assert_eq!(report.steps.len(), 14, "{report}");
    assert_eq!(report.steps[0].rewritten, records as u64);
    assert_eq!(report.steps[1].rewritten, Counted::ALL.len() as u64);
    assert!(!report.steps[0].resumed);
    // Schema 6 rewrites nothing: the listing sources of schema 2 stay one key each.
    assert_eq!(report.steps[3].rewritten, 0);
    // Schema 7 drops the calibre -> model keys, which schema 2 wrote for every model with a
    // calibre.
    let caliber_keys = |key: &&Vec<u8>| key.first() == Some(&(Keyspace::ModelByCaliber as u8));
    let dropped = before.keys().filter(caliber_keys).count();
    assert!(dropped > 0, "the fixture has models with a calibre");
    assert_eq!(report.steps[4].rewritten, dropped as u64);
    // Schema 9 keys the audit trail, which schema 2 did not have.
    assert_eq!(report.steps[6].rewritten, 0);
    assert!(
        report.to_string().starts_with(&format!(
            "store migrated from schema version 2 to {SCHEMA_VERSION}\n  2 -> 3: "
        )),
        "{report}"
    );

    // Byte for byte: records gained their layout byte, everything else is as it was.
    let after = raw_pairs(&store.db);
    let counters: Vec<Vec<u8>> = Counted::ALL
        .iter()
        .map(|&counted| MetaKey::Count(counted).key())
        .collect();
    let pictures = queued_picture_keys(&before);
    assert!(report.steps[2].rewritten >= pictures.len() as u64);
    // Schema 8 keeps the groups of the unmatched listings, with their keys (schema 10 their
    // members and prices as keys of their own).
    let unmatched = [
        Keyspace::UnmatchedGroup,
        Keyspace::UnmatchedMember,
        Keyspace::UnmatchedPrice,
        Keyspace::UnmatchedOrder,
        Keyspace::UnmatchedCount,
    ];
    let group_keys: Vec<Vec<u8>> = after
        .keys()
        .filter(|key| {
            unmatched
                .iter()
                .any(|space| key.first() == Some(&(*space as u8)))
        })
        .cloned()
        .collect();
    let listings: Vec<Listing> = read_as_schema_2(&before, Keyspace::Listing);
    let groups = super::super::unmatched::recompute(&listings);
    assert!(!groups.is_empty(), "the fixture has unmatched listings");
    assert_eq!(report.steps[5].rewritten, groups.len() as u64);
    let kept: BTreeMap<_, _> = store.unmatched().all().map(|g| g.expect("group")).collect();
    assert_eq!(kept, groups);
    store
        .unmatched()
        .check_derived()
        .expect("member, price and order keys");
    // Schema 12 keeps the rates in force as the first day of the history; schema 13 logs
    // every model for the series folder, under the store's generation.
    let rates_day = [super::super::keys::rates_day("2025-05-09")];
    let generation = before.get(&MetaKey::Generation.key()).map_or(0, |value| {
        decode_u64(b"generation", value).expect("generation")
    });
    let series_log = [Keyspace::PriceSeriesTouched.id_key(generation)];
    assert_eq!(report.steps[10].rewritten, 1);
    let mut expected_keys: Vec<&Vec<u8>> = before
        .keys()
        .filter(|key| !caliber_keys(key))
        .chain(&counters)
        .chain(&pictures)
        .chain(&group_keys)
        .chain(&rates_day)
        .chain(&series_log)
        .collect();
    expected_keys.sort();
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        expected_keys,
        "only the counters, picture, group, rates day and series log keys added, only the calibre keys lost (no cursor left behind)"
    );
    for (key, old) in before.iter().filter(|(key, _)| !caliber_keys(key)) {
        let new = &after[key];
        if *key == MetaKey::SchemaVersion.key() {
            assert_eq!(decode_u64(key, new).expect("version"), SCHEMA_VERSION);
        } else if is_schema_2_record(key) {
            assert_eq!(new[0], SCHEMA_3_LAYOUT, "{key:?}");
            assert_eq!(&new[1..], &old[..], "{key:?}");
        } else {
            assert_eq!(new, old, "{key:?}: not a record, left alone");
        }
    }

    // Every record reads back through the store as the schema-2 binary read it.
    let brands: Vec<Brand> = read_as_schema_2(&before, Keyspace::Brand);
    let models: Vec<Model> = read_as_schema_2(&before, Keyspace::Model);
    let listings: Vec<Listing> = read_as_schema_2(&before, Keyspace::Listing);
    let complications: Vec<Complication> = read_as_schema_2(&before, Keyspace::Complication);
    assert_eq!(
        (brands.len(), models.len(), listings.len()),
        (5, 12, 11),
        "the fixture's catalogue"
    );
    assert_eq!(collect(store.catalogue().brands()), brands);
    assert_eq!(
        collect(store.catalogue().all_series()),
        read_as_schema_2::<Series>(&before, Keyspace::Series)
    );
    assert_eq!(
        collect(store.catalogue().calibers()),
        read_as_schema_2::<Caliber>(&before, Keyspace::Caliber)
    );
    assert_eq!(collect(store.catalogue().all_models()), models);
    assert_eq!(
        collect(store.listings().providers()),
        read_as_schema_2::<Provider>(&before, Keyspace::Provider)
    );
    assert_eq!(collect(store.listings().all_listings()), listings);
    for complication in &complications {
        assert_eq!(
            store
                .catalogue()
                .complication(complication.id)
                .expect("read")
                .as_ref(),
            Some(complication)
        );
    }
    let rates_key = MetaKey::Rates.key();
    let rates: crate::domain::rates::EcbRates =
        bincode::serde::decode_from_slice(&before[&rates_key], bincode::config::standard())
            .expect("schema-2 rates")
            .0;
    assert_eq!(
        store.rates().day(&rates.date).expect("day"),
        Some(rates.clone()),
        "the rates in force are the first day of the history"
    );
    assert_eq!(store.rates().in_force().expect("rates"), Some(rates));

    // Secondary keys still resolve to the migrated records.
    let rolex = store
        .catalogue()
        .brand_by_slug(&slug("rolex"))
        .expect("read")
        .expect("rolex");
    assert_eq!(
        store.catalogue().brand_by_alias("rolex").expect("alias"),
        [rolex.id]
    );
    let submariner = store
        .catalogue()
        .model_ids_by_reference(rolex.id, "126610ln")
        .expect("reference");
    assert_eq!(submariner.len(), 1);
    let model = store
        .catalogue()
        .model(submariner[0])
        .expect("read")
        .expect("the model");
    assert_eq!(model.reference_number, "126610LN");
    assert_eq!(model.spec.diameter, Some(41.0));
    assert_eq!(model.spec.case_materials, ["oystersteel"]);
    assert!(!model.pictures.is_empty(), "pictures survive");
    assert_eq!(
        store
            .catalogue()
            .model_by_slug(rolex.id, &model.slug)
            .expect("read"),
        Some(model.clone())
    );
    let ebay = store
        .listings()
        .provider_by_slug(&slug("ebay"))
        .expect("read")
        .expect("ebay");
    let e9 = store
        .listings()
        .listing_by_source(ebay.id, "e9")
        .expect("read")
        .expect("e9");
    let history: Vec<_> = e9.history.iter().map(|change| change.status).collect();
    assert_eq!(
        history,
        [
            ListingStatus::Active,
            ListingStatus::Delisted,
            ListingStatus::Active
        ]
    );
    assert!(store.listings().listing_count(model.id).expect("count") > 0);
    assert_eq!(
        store.catalogue().brand(rolex.id).expect("read"),
        Some(rolex)
    );

    // The counts the admin view reads, as scanning the records finds them.
    let listings: Vec<Listing> = collect(store.listings().all_listings());
    let listed = listings
        .iter()
        .filter(|l| l.status != ListingStatus::Delisted)
        .count() as u64;
    let unmatched = listings
        .iter()
        .filter(|l| l.status != ListingStatus::Delisted && l.model_id.is_none())
        .count() as u64;
    for (counted, expected) in [
        (Counted::Brands, 5),
        (Counted::Models, 12),
        (Counted::Listings, listed),
        (Counted::UnmatchedListings, unmatched),
    ] {
        assert_eq!(
            store.count_of(counted).expect("count"),
            expected,
            "{counted:?}"
        );
    }
    assert!(unmatched > 0 && listed > unmatched, "the fixture has both");

    // Nothing was written as a new generation: the indexes built before stay current.
    assert_eq!(store.generation().expect("gen"), StoreGeneration(4));
    assert_eq!(
        store.listings_generation().expect("gen"),
        StoreGeneration(4)
    );

    // A second open finds nothing to do and changes nothing.
    drop(store);
    let (store, report) = reopen(|| Store::open_migrating(dir.path(), 1 << 20)).expect("reopen");
    assert_eq!(report.found, Some(SCHEMA_VERSION));
    assert!(report.steps.is_empty());
    assert_eq!(
        report.to_string(),
        format!("store schema version {SCHEMA_VERSION} is current: nothing to migrate")
    );
    assert_eq!(raw_pairs(&store.db), after);
}

#[test]
fn an_old_store_opened_without_migration_says_to_run_migrate_and_is_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let before = schema_2_pairs();
    write_raw(dir.path(), &before);
    let refused = reopen(|| Store::open(dir.path(), 1 << 20))
        .err()
        .expect("refused");
    assert!(
        matches!(
            refused,
            StoreError::MigrationNeeded {
                found: 2,
                expected: SCHEMA_VERSION
            }
        ),
        "{refused:?}"
    );
    assert!(
        refused
            .to_string()
            .contains("run `watch-catalogue migrate` on this data dir"),
        "{refused}"
    );
    let db = reopen_sled(dir.path());
    assert_eq!(raw_pairs(&db), before);
}

#[test]
fn serve_runs_the_steps_because_they_are_safe_at_start_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_raw(dir.path(), &schema_2_pairs());
    let (store, report) =
        reopen(|| Store::open_with(dir.path(), 1 << 20, MigrationPolicy::StartupSafe))
            .expect("serve's open");
    assert_eq!((report.found, report.schema), (Some(2), SCHEMA_VERSION));
    assert_eq!(collect(store.catalogue().brands()).len(), 5);
}

#[test]
fn a_store_of_a_newer_schema_is_refused_by_every_opener() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut pairs = schema_2_pairs();
    pairs.insert(
        MetaKey::SchemaVersion.key(),
        encode_u64(SCHEMA_VERSION + 1).to_vec(),
    );
    write_raw(dir.path(), &pairs);
    for policy in [
        MigrationPolicy::Refuse,
        MigrationPolicy::StartupSafe,
        MigrationPolicy::All,
    ] {
        let refused = reopen(|| Store::open_with(dir.path(), 1 << 20, policy))
            .err()
            .expect("refused");
        assert!(
            matches!(refused, StoreError::NewerSchema { found, known }
                if found == SCHEMA_VERSION + 1 && known == SCHEMA_VERSION),
            "{policy:?}: {refused:?}"
        );
        assert!(
            refused.to_string().contains("never migrated down"),
            "{refused}"
        );
    }
}

#[test]
fn a_migration_begun_by_a_newer_binary_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(reopen(|| Store::open(dir.path(), 1 << 20)).expect("new store"));
    let db = reopen_sled(dir.path());
    let mut cursor = encode_u64(SCHEMA_VERSION + 1).to_vec();
    cursor.push(Keyspace::Brand as u8);
    db.insert(MetaKey::MigrationCursor.key(), cursor)
        .expect("cursor");
    db.flush().expect("flush");
    drop(db);
    let refused = reopen(|| Store::open_migrating(dir.path(), 1 << 20))
        .err()
        .expect("refused");
    assert!(
        matches!(refused, StoreError::NewerSchema { found, known }
            if found == SCHEMA_VERSION + 1 && known == SCHEMA_VERSION),
        "{refused:?}"
    );
}

#[test]
fn an_interrupted_step_resumes_after_its_last_committed_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let before = schema_2_pairs();
    write_raw(dir.path(), &before);
    let records = before.keys().filter(|key| is_schema_2_record(key)).count() as u64;
    {
        let db = reopen_sled(dir.path());
        // Batches of 10; the 25th value fails, as a full disk would: two batches are in.
        let mut seen = 0;
        let failed = rewrite_values(&db, 3, &schema_2_record_prefixes(), 10, |key, value| {
            seen += 1;
            if seen == 25 {
                return Err(StoreError::Corrupt {
                    key: key.to_vec(),
                    reason: "simulated failure".into(),
                });
            }
            Ok(with_layout_byte(value))
        });
        assert!(failed.is_err());
        let cursor = read_cursor(&db).expect("cursor").expect("a cursor");
        assert_eq!(cursor.0, 3);
        assert_eq!(read_meta(&db, MetaKey::SchemaVersion).expect("v"), Some(2));
    }
    assert!(matches!(
        reopen(|| Store::open(dir.path(), 1 << 20)),
        Err(StoreError::MigrationNeeded { found: 2, .. })
    ));
    let (store, report) = reopen(|| Store::open_migrating(dir.path(), 1 << 20)).expect("resume");
    assert!(report.steps[0].resumed, "{report}");
    assert_eq!(report.steps[0].rewritten, records - 20);
    assert!(report.to_string().contains("resumed"), "{report}");
    // Each record has exactly one layout byte: none was rewritten twice, none skipped.
    let after = raw_pairs(&store.db);
    for (key, old) in before.iter().filter(|(key, _)| is_schema_2_record(key)) {
        assert_eq!(after[key], with_layout_byte(old), "{key:?}");
    }
    assert!(!after.contains_key(&MetaKey::MigrationCursor.key()));
    assert_eq!(collect(store.listings().all_listings()).len(), 11);
}

fn no_op(_: &sled::Db) -> StoreResult<u64> {
    Ok(0)
}

#[test]
fn a_plan_chains_steps_in_order_and_serve_runs_only_safe_ones() {
    let step = |from, to, safe_at_startup| Step {
        from,
        to,
        summary: "test",
        safe_at_startup,
        run: no_op,
    };
    let steps = [step(1, 2, true), step(2, 3, false), step(3, 4, true)];
    let route = |found, policy| {
        plan(found, &steps, 4, policy).map(|plan| {
            plan.iter()
                .map(|step| (step.from, step.to))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        route(1, MigrationPolicy::All).expect("all"),
        [(1, 2), (2, 3), (3, 4)]
    );
    assert_eq!(
        route(3, MigrationPolicy::StartupSafe).expect("safe"),
        [(3, 4)]
    );
    assert!(route(4, MigrationPolicy::Refuse)
        .expect("current")
        .is_empty());
    assert!(matches!(
        route(1, MigrationPolicy::StartupSafe),
        Err(StoreError::MigrationNeeded {
            found: 1,
            expected: 4
        })
    ));
    assert!(matches!(
        route(3, MigrationPolicy::Refuse),
        Err(StoreError::MigrationNeeded { .. })
    ));
    assert!(matches!(
        route(0, MigrationPolicy::All),
        Err(StoreError::NoMigration {
            found: 0,
            expected: 4
        })
    ));
    assert!(matches!(
        route(5, MigrationPolicy::All),
        Err(StoreError::NewerSchema { found: 5, known: 4 })
    ));
}

#[test]
fn the_steps_lead_from_schema_2_to_the_current_schema() {
    let route = plan(2, STEPS, SCHEMA_VERSION, MigrationPolicy::All).expect("a route");
    assert_eq!(route.last().map(|step| step.to), Some(SCHEMA_VERSION));
    assert!(matches!(
        plan(1, STEPS, SCHEMA_VERSION, MigrationPolicy::All),
        Err(StoreError::NoMigration { .. })
    ));
}

const USERS: [&str; 3] = ["ana", "vic", "cli"];
const ACTIONS: [&str; 4] = [
    "auth.login",
    "user.add",
    "reconciliation.link",
    "job.submit",
];

/// A trail with users and actions repeated in every combination, its ids growing with gaps
/// as sled's id generator hands them out.
fn audit_trail() -> Vec<AuditEntry> {
    (1..=36_u64)
        .map(|n| AuditEntry {
            id: n * 1_000 + n % 7,
            at: Timestamp(1_800_000_000 + n as i64),
            user: USERS[n as usize % USERS.len()].to_owned(),
            action: ACTIONS[n as usize % ACTIONS.len()].to_owned(),
            targets: vec![format!("listing:{n}")],
            detail: format!("entry {n}"),
        })
        .collect()
}

/// The keys and values of the audit area's keyspaces.
fn audit_pairs(db: &sled::Db) -> Pairs {
    let audit = Keyspace::Audit as u8..=Keyspace::AuditCount as u8;
    raw_pairs(db)
        .into_iter()
        .filter(|(key, _)| audit.contains(&key[0]))
        .collect()
}

#[test]
fn a_schema_7_store_with_an_audit_trail_migrates_to_the_pages_of_a_new_one() {
    let trail = audit_trail();
    // A new store, the trail appended as today's writes append it.
    let new_dir = tempfile::tempdir().expect("tempdir");
    let fresh = reopen(|| Store::open(new_dir.path(), 1 << 20)).expect("new store");
    let turn = fresh.write_turn();
    let mut batch = turn.batch().expect("batch");
    for entry in &trail {
        batch.put_audit(entry);
    }
    turn.commit(batch).expect("append");
    drop(turn);
    // The same trail as schema 7 kept it: each entry under its id, and nothing else.
    let old_dir = tempfile::tempdir().expect("tempdir");
    let mut schema_7 = Pairs::new();
    schema_7.insert(MetaKey::SchemaVersion.key(), encode_u64(7).to_vec());
    for entry in &trail {
        let record = crate::store::codec::encode(entry);
        schema_7.insert(Keyspace::Audit.id_key(entry.id), record);
    }
    write_raw(old_dir.path(), &schema_7);

    let (migrated, report) =
        reopen(|| Store::open_with(old_dir.path(), 1 << 20, MigrationPolicy::StartupSafe))
            .expect("serve migrates it");
    let steps: Vec<(u64, u64)> = report.steps.iter().map(|s| (s.from, s.to)).collect();
    assert_eq!(
        steps,
        [
            (7, 8),
            (8, 9),
            (9, 10),
            (10, 11),
            (11, 12),
            (12, 13),
            (13, 14),
            (14, 15),
            (15, 16)
        ]
    );
    let after = audit_pairs(&migrated.db);
    assert_eq!(
        after,
        audit_pairs(&fresh.db),
        "the keys and counts a new store has"
    );
    let counts = (after.keys())
        .filter(|key| key[0] == Keyspace::AuditCount as u8)
        .count();
    // The whole trail, 3 users, 4 actions, and the 12 pairs (3 and 4 are coprime).
    assert_eq!(counts, 1 + 3 + 4 + 12);
    assert_eq!(
        report.steps[1].rewritten,
        (3 * trail.len() + counts) as u64,
        "three list keys per entry, and the counts"
    );

    let users = USERS.iter().copied().chain(["zoe"]).map(Some);
    let actions = ACTIONS.iter().copied().chain(["user.remove"]).map(Some);
    let users: Vec<Option<&str>> = std::iter::once(None).chain(users).collect();
    let actions: Vec<Option<&str>> = std::iter::once(None).chain(actions).collect();
    for &user in &users {
        for &action in &actions {
            let filter = AuditFilter { user, action };
            for (skip, limit) in [(0, 2), (1, 2), (2, 5), (30, 10)] {
                let page = |store: &Store| store.audit().page(filter, skip, limit).expect("page");
                assert_eq!(page(&migrated), page(&fresh), "{filter:?} {skip} {limit}");
            }
        }
    }
    let ana_logins = AuditFilter {
        user: Some("ana"),
        action: Some("auth.login"),
    };
    let (page, total) = migrated.audit().page(ana_logins, 0, 10).expect("page");
    assert_eq!(
        (page.len(), total),
        (3, 3),
        "ana's logins: entries 12, 24 and 36"
    );
    assert_eq!(page[0].id, 36_001);

    // Run again (after an interruption, say), the step writes what it wrote.
    let rewritten = key_audit_trail(&migrated.db).expect("again");
    assert_eq!(rewritten, report.steps[1].rewritten);
    assert_eq!(audit_pairs(&migrated.db), after);
}

/// Step 10 -> 11: a schema-10 store's member keys, valued empty, gain their listing's title,
/// and a page's example titles read them.
#[test]
fn a_schema_10_store_gains_the_titles_of_its_group_members() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_raw(dir.path(), &schema_2_pairs());
    let (store, _) = reopen(|| Store::open_migrating(dir.path(), 1 << 20)).expect("migrate");
    drop(store);
    let mut schema_10 = Pairs::new();
    schema_10.insert(MetaKey::SchemaVersion.key(), encode_u64(10).to_vec());
    let db = reopen_sled(dir.path());
    for entry in db.scan_prefix(Keyspace::UnmatchedMember.prefix()) {
        let (key, _) = entry.expect("member key");
        schema_10.insert(key.to_vec(), Vec::new());
    }
    for (key, value) in &schema_10 {
        db.insert(key, value.as_slice()).expect("write");
    }
    db.flush().expect("flush");
    drop(db);

    let (store, report) =
        reopen(|| Store::open_with(dir.path(), 1 << 20, MigrationPolicy::StartupSafe))
            .expect("serve migrates it");
    let steps: Vec<(u64, u64)> = report.steps.iter().map(|s| (s.from, s.to)).collect();
    assert_eq!(
        steps,
        [(10, 11), (11, 12), (12, 13), (13, 14), (14, 15), (15, 16)]
    );
    let listings: Vec<Listing> = collect(store.listings().all_listings());
    let kept: BTreeMap<_, _> = store.unmatched().all().map(|g| g.expect("group")).collect();
    assert_eq!(kept, super::super::unmatched::recompute(&listings));
    let titled = (kept.values().flat_map(|group| &group.members))
        .filter(|member| member.title.is_some())
        .count();
    assert!(titled > 0, "the fixture's unmatched listings have titles");
}

/// Step 11 -> 12: a schema-11 store's rates in force become the first stored day, read by
/// date as every day loaded later is; a store without rates gains no day.
#[test]
fn a_schema_11_store_with_rates_in_force_keeps_their_day() {
    let rates = crate::domain::rates::parse_ecb_xml(include_str!("../../../fixtures/rates.xml"))
        .expect("fixture rates");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut schema_11 = Pairs::new();
    schema_11.insert(MetaKey::SchemaVersion.key(), encode_u64(11).to_vec());
    schema_11.insert(MetaKey::Rates.key(), crate::store::codec::encode(&rates));
    write_raw(dir.path(), &schema_11);

    let (store, steps) = served(dir.path());
    assert_eq!(
        steps,
        [
            (11, 12, 1),
            (12, 13, 1),
            (13, 14, 0),
            (14, 15, 0),
            (15, 16, 0)
        ]
    );
    let rates_area = store.rates();
    assert_eq!(
        rates_area.day("2025-05-09").expect("day"),
        Some(rates.clone())
    );
    assert_eq!(collect(rates_area.days()), ["2025-05-09"]);
    let (day, table) = rates_area
        .table_on("2025-06-30")
        .expect("read")
        .expect("a day");
    assert_eq!(day, "2025-05-09");
    assert_eq!(Some(table), rates_area.table_in_force().expect("in force"));
    assert_eq!(rates_area.table_on("2025-05-08").expect("read"), None);

    // Run again (after an interruption, say), the step writes what it wrote.
    let before = raw_pairs(&store.db);
    assert_eq!(keep_rates_in_force_as_a_day(&store.db).expect("again"), 1);
    assert_eq!(raw_pairs(&store.db), before);

    let empty = tempfile::tempdir().expect("tempdir");
    let mut without_rates = Pairs::new();
    without_rates.insert(MetaKey::SchemaVersion.key(), encode_u64(11).to_vec());
    write_raw(empty.path(), &without_rates);
    let (store, report) =
        reopen(|| Store::open_with(empty.path(), 1 << 20, MigrationPolicy::StartupSafe))
            .expect("serve migrates it");
    assert_eq!(report.steps[0].rewritten, 0);
    assert_eq!(collect(store.rates().days()), Vec::<String>::new());
}

/// Step 12 -> 13: a schema-12 store logs every model for the series folder, once however often
/// the step runs; the server folds them from its start.
#[test]
fn a_schema_12_store_logs_every_model_for_the_series_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut schema_12 = Pairs::new();
    schema_12.insert(MetaKey::SchemaVersion.key(), encode_u64(12).to_vec());
    schema_12.insert(MetaKey::Generation.key(), encode_u64(41).to_vec());
    write_raw(dir.path(), &schema_12);
    let (store, steps) = served(dir.path());
    assert_eq!(steps, [(12, 13, 1), (13, 14, 0), (14, 15, 0), (15, 16, 0)]);
    let log = store.price_series().log().expect("log");
    assert!(log.every_model && log.models.is_empty());
    assert_eq!(log.entries(), 1);
    assert_eq!(
        raw_pairs(&store.db)
            .keys()
            .filter(|key| key.first() == Some(&(Keyspace::PriceSeriesTouched as u8)))
            .collect::<Vec<_>>(),
        [&Keyspace::PriceSeriesTouched.id_key(41)]
    );
    let before = raw_pairs(&store.db);
    assert_eq!(log_every_model_for_series(&store.db).expect("again"), 1);
    assert_eq!(raw_pairs(&store.db), before);
}

/// Step 14 -> 15: a schema-14 store's order keys by provider alone and by reason alone go,
/// the groups those orders walk stay the same (now merged from the provider-and-reason
/// orders), and nothing else changes.
#[test]
fn a_schema_14_store_drops_the_order_keys_its_merged_orders_replace() {
    use crate::store::GroupOrder;
    let dir = tempfile::tempdir().expect("tempdir");
    write_raw(dir.path(), &schema_2_pairs());
    let (store, _) = reopen(|| Store::open_migrating(dir.path(), 1 << 20)).expect("migrate");
    let orders: Vec<GroupOrder> = (store.unmatched().all())
        .flat_map(|group| GroupOrder::of(&group.expect("group").1.tally))
        .filter(|order| matches!(order, GroupOrder::Provider(_) | GroupOrder::Reason(_)))
        .collect();
    assert!(
        orders.len() >= 2,
        "the fixture's groups have a provider and a reason"
    );
    let walks = |store: &Store| -> Vec<Vec<_>> {
        (orders.iter())
            .map(|&order| collect(store.unmatched().in_order(order)))
            .collect()
    };
    let walked = walks(&store);
    // Meta keys aside (an open notes when it opened).
    let records = |db: &sled::Db| -> Pairs {
        let mut pairs = raw_pairs(db);
        pairs.retain(|key, _| key.first() != Some(&(Keyspace::Meta as u8)));
        pairs
    };
    let schema_15 = records(&store.db);
    drop(store);
    // What schema 14 kept besides: each group's place in its orders by provider and by reason.
    let db = reopen_sled(dir.path());
    let mut schema_14 = Pairs::new();
    schema_14.insert(MetaKey::SchemaVersion.key(), encode_u64(14).to_vec());
    for key in db.scan_prefix(Keyspace::UnmatchedOrder.prefix()).keys() {
        let key = key.expect("order key");
        if key.get(1) == Some(&4) {
            let mut by_reason = key.to_vec();
            let value = u64::from_be_bytes(key[2..10].try_into().expect("value"));
            by_reason[1] = 3;
            by_reason[2..10].copy_from_slice(&(value & 0xf).to_be_bytes());
            let mut by_provider = key.to_vec();
            by_provider[1] = 2;
            by_provider[2..10].copy_from_slice(&(value >> 4).to_be_bytes());
            schema_14.insert(by_reason, Vec::new());
            schema_14.insert(by_provider, Vec::new());
        }
    }
    assert!(schema_14.len() > 2, "keys of schema 14 to drop");
    for (key, value) in &schema_14 {
        db.insert(key, value.as_slice()).expect("write");
    }
    db.flush().expect("flush");
    drop(db);

    let (store, steps) = served(dir.path());
    let dropped = schema_14.len() as u64 - 1;
    assert_eq!(steps, [(14, 15, dropped), (15, 16, 0)]);
    assert_eq!(records(&store.db), schema_15, "what schema 15 keeps");
    assert_eq!(walks(&store), walked);
    assert_eq!(drop_merged_group_orders(&store.db).expect("again"), 0);
}

/// Step 15 -> 16: a schema-15 store's text keys of the groups of unmatched listings go, and
/// nothing else changes.
#[test]
fn a_schema_15_store_drops_the_text_keys_of_its_groups() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_raw(dir.path(), &schema_2_pairs());
    let (store, _) = reopen(|| Store::open_migrating(dir.path(), 1 << 20)).expect("migrate");
    let records = |db: &sled::Db| -> Pairs {
        let mut pairs = raw_pairs(db);
        pairs.retain(|key, _| key.first() != Some(&(Keyspace::Meta as u8)));
        pairs
    };
    let schema_16 = records(&store.db);
    // What schema 15 kept besides, as it wrote it: kind, text, 0, group key -> size.
    let mut schema_15 = Pairs::new();
    schema_15.insert(MetaKey::SchemaVersion.key(), encode_u64(15).to_vec());
    for group in store.unmatched().all() {
        let (key, kept) = group.expect("group");
        let identity = &kept.tally.identity;
        let brand_text = match &identity.brand {
            crate::domain::ClaimedBrand::Text(text) => Some(text.as_str()),
            crate::domain::ClaimedBrand::Known(_) => None,
        };
        for (kind, text) in [(0u8, identity.reference.as_deref()), (1, brand_text)] {
            if let Some(text) = text.filter(|text| !text.is_empty()) {
                let text_key = [
                    &[Keyspace::UnmatchedText as u8, kind],
                    text.as_bytes(),
                    &[0],
                    &key.0.to_be_bytes(),
                ]
                .concat();
                schema_15.insert(text_key, encode_u64(kept.tally.listings as u64).to_vec());
            }
        }
    }
    assert!(schema_15.len() > 2, "text keys of schema 15 to drop");
    drop(store);
    let db = reopen_sled(dir.path());
    for (key, value) in &schema_15 {
        db.insert(key, value.as_slice()).expect("write");
    }
    db.flush().expect("flush");
    drop(db);

    let (store, steps) = served(dir.path());
    assert_eq!(steps, [(15, 16, schema_15.len() as u64 - 1)]);
    assert_eq!(records(&store.db), schema_16, "what schema 16 keeps");
    assert_eq!(drop_group_text_keys(&store.db).expect("again"), 0);
}

/// The store in `dir` opened as `serve` opens it, and the steps it ran: from, to, rewritten.
fn served(dir: &Path) -> (Store, Vec<(u64, u64, u64)>) {
    let (store, report) = reopen(|| Store::open_with(dir, 1 << 20, MigrationPolicy::StartupSafe))
        .expect("serve migrates it");
    let steps = (report.steps.iter())
        .map(|s| (s.from, s.to, s.rewritten))
        .collect();
    (store, steps)
}
