//! The kept groups of unmatched listings stay equal to a recomputation from the listings after
//! any sequence of the writes that move listings: ingests (new, changed and delisted listings),
//! links, models created and updated from groups, and merges.

use super::{create_model, kept_group, link, update_model, Selection};
use crate::domain::{BrandId, GroupKey, Listing, Model};
use crate::jobs::import::fixtures::EmbeddedFixtures;
use crate::jobs::ingest::ingest;
use crate::jobs::merge::merge;
use crate::jobs::reindex::rebuild_listings;
use crate::jobs::snapshot_rules::SnapshotRules;
use crate::jobs::users::Actor;
use crate::store::{GroupOrder, KeptGroup, Store};
use catalogue_index::ListingIndex;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const PROVIDERS: [&str; 3] = ["chrono24", "ebay", "watchbox"];

#[derive(Debug, Clone)]
enum Op {
    /// A provider's bundled snapshot with some lines left out (delisted) and some references
    /// changed (the listing leaves its group for another).
    Ingest {
        provider: usize,
        seed: u64,
    },
    Link {
        group: usize,
        model: usize,
    },
    Create {
        group: usize,
    },
    Update {
        group: usize,
        model: usize,
    },
    Merge {
        keeper: usize,
        duplicate: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3usize, any::<u64>()).prop_map(|(provider, seed)| Op::Ingest { provider, seed }),
        (any::<usize>(), any::<usize>()).prop_map(|(group, model)| Op::Link { group, model }),
        any::<usize>().prop_map(|group| Op::Create { group }),
        (any::<usize>(), any::<usize>()).prop_map(|(group, model)| Op::Update { group, model }),
        (any::<usize>(), any::<usize>())
            .prop_map(|(keeper, duplicate)| Op::Merge { keeper, duplicate }),
    ]
}

/// The fixtures' catalogue with every provider's snapshot ingested, and a listings index.
fn fixture() -> (tempfile::TempDir, Store, ListingIndex) {
    let dir = tempfile::tempdir().expect("dir");
    let store = Store::open(dir.path(), 1 << 22).expect("store");
    crate::jobs::import::fixtures::import_fixtures(&store.write_turn(), dir.path());
    for provider in PROVIDERS {
        ingest_snapshot(&store, provider, &snapshot(provider, None));
    }
    let index = ListingIndex::in_memory().expect("index");
    rebuild_listings(&store, &index).expect("index");
    (dir, store, index)
}

/// The provider's bundled snapshot; with a seed, about a tenth of its lines left out, a fifth
/// with another reference and a seventh with another title.
fn snapshot(provider: &str, seed: Option<u64>) -> String {
    let text = EmbeddedFixtures::text(&format!("listings/{provider}.jsonl")).expect("bundled");
    let lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(seed) = seed else {
        return text.to_owned();
    };
    let mut out = String::new();
    for (i, line) in lines.enumerate() {
        let pick = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed;
        if pick % 10 == 0 {
            continue;
        }
        let mut row: Value = serde_json::from_str(line).expect("a bundled line");
        if pick % 5 == 1 {
            row["reference"] = json!(format!("{}-{}", pick % 97, i));
        }
        // A revisit that retitles a listing and leaves it in its group (D-203).
        if pick % 7 == 2 {
            let title = row["title"].as_str().unwrap_or_default().to_owned();
            row["title"] = json!(format!("{title} (seen again {})", pick % 13));
        }
        out.push_str(&row.to_string());
        out.push('\n');
    }
    out
}

fn ingest_snapshot(store: &Store, provider: &str, text: &str) {
    let rules = SnapshotRules {
        mass_delist_allowed_by: Some(Actor::Cli),
        ..SnapshotRules::default()
    };
    ingest(
        &store.write_turn(),
        provider,
        "test",
        text.as_bytes(),
        &rules,
    )
    .expect("ingest");
}

fn groups(store: &Store) -> Vec<GroupKey> {
    let all = store.unmatched().in_order(GroupOrder::All);
    all.map(|key| key.expect("order key")).collect()
}

fn models(store: &Store) -> Vec<Model> {
    let all = store.catalogue().all_models();
    all.map(|model| model.expect("model")).collect()
}

/// The slug of a series of `brand`, for a model created there.
fn series_of(store: &Store, brand: BrandId) -> Option<String> {
    let model = models(store).into_iter().find(|m| m.brand_id == brand)?;
    let series = store.catalogue().series(model.series_id).expect("series")?;
    Some(series.slug.to_string())
}

fn pick<T: Clone>(items: &[T], at: usize) -> Option<T> {
    (!items.is_empty()).then(|| items[at % items.len()].clone())
}

/// Runs `op`; a write the service refuses (a reference another model has, a merge across
/// brands) writes nothing, which the check after it covers as well. True when it wrote.
fn run(store: &Store, index: &ListingIndex, op: &Op) -> bool {
    let actor = Actor::Cli;
    let turn = store.write_turn();
    let groups = groups(store);
    let models = models(store);
    let model_id = |at: usize| pick(&models, at).map(|m: Model| m.id);
    match *op {
        Op::Ingest { provider, seed } => {
            drop(turn);
            let provider = PROVIDERS[provider];
            ingest_snapshot(store, provider, &snapshot(provider, Some(seed)));
            true
        }
        Op::Link { group, model } => match (pick(&groups, group), model_id(model)) {
            (Some(group), Some(model)) => {
                link(&turn, &actor, &Selection::Group(group.to_string()), model).is_ok()
            }
            _ => false,
        },
        Op::Create { group } => {
            let Some(key) = pick(&groups, group) else {
                return false;
            };
            let Some(group) = kept_group(store, key).expect("group") else {
                return false;
            };
            let brand = group.brand().or(models.first().map(|m| m.brand_id));
            let Some(series) = brand.and_then(|brand| series_of(store, brand)) else {
                return false;
            };
            let mut fields = serde_json::Map::new();
            fields.insert("series".into(), json!(series));
            fields.insert("name".into(), json!(format!("Made of group {key}")));
            if group.brand().is_none() {
                let brand = brand.and_then(|b| store.catalogue().brand(b).expect("brand"));
                fields.insert("brand".into(), json!(brand.map(|b| b.slug.to_string())));
            }
            create_model(&turn, index, &actor, &key.to_string(), fields).is_ok()
        }
        Op::Update { group, model } => match (pick(&groups, group), model_id(model)) {
            (Some(group), Some(model)) => {
                let fields = serde_json::Map::new();
                update_model(&turn, index, &actor, &group.to_string(), model, fields).is_ok()
            }
            _ => false,
        },
        Op::Merge { keeper, duplicate } => match (model_id(keeper), model_id(duplicate)) {
            (Some(keeper), Some(duplicate)) => {
                merge(&turn, index, &actor, keeper, &[duplicate]).is_ok()
            }
            _ => false,
        },
    }
}

/// The kept groups, their orders and counts equal those recomputed from the listings.
fn assert_kept_equal_recomputed(store: &Store, after: &[Op]) {
    let listings: Vec<Listing> = (store.listings().all_listings())
        .map(|l| l.expect("listing"))
        .collect();
    let expected = crate::store::recompute_unmatched_groups(&listings);
    let kept: BTreeMap<GroupKey, KeptGroup> = (store.unmatched().all())
        .map(|g| g.expect("group"))
        .collect();
    assert_eq!(kept, expected, "after {after:?}");
    store
        .unmatched()
        .check_derived()
        .expect("member, price and order keys");
}

#[test]
fn the_bundled_feeds_make_groups_that_a_recomputation_agrees_with() {
    let (_dir, store, _index) = fixture();
    assert!(
        groups(&store).len() > 10,
        "the fixtures have unmatched listings"
    );
    assert_kept_equal_recomputed(&store, &[]);
    let count = store.unmatched().count(GroupOrder::All).expect("count");
    assert_eq!(count as usize, groups(&store).len());
}

#[test]
fn a_link_empties_its_group_and_keeps_every_other() {
    let (_dir, store, _index) = fixture();
    let before = groups(&store);
    let model = models(&store)[0].id;
    let turn = store.write_turn();
    let linked = link(
        &turn,
        &Actor::Cli,
        &Selection::Group(before[0].to_string()),
        model,
    )
    .expect("link");
    drop(turn);
    assert!(!linked.linked.is_empty());
    assert_eq!(
        groups(&store),
        before[1..],
        "the largest group is gone, the rest in order"
    );
    assert_kept_equal_recomputed(&store, &[]);
}

/// Each kind of write, run until one of it writes (so the property below is not vacuous for
/// any kind), keeps the groups equal to a recomputation.
#[test]
fn every_kind_of_write_keeps_the_groups() {
    let (_dir, store, index) = fixture();
    let kinds: [fn(usize) -> Op; 5] = [
        |n| Op::Ingest {
            provider: n % 3,
            seed: n as u64,
        },
        |n| Op::Link {
            group: n,
            model: n * 7,
        },
        |n| Op::Create { group: n },
        |n| Op::Update {
            group: n,
            model: n * 13,
        },
        |n| Op::Merge {
            keeper: n,
            duplicate: n + 1,
        },
    ];
    for kind in kinds {
        let wrote = (0..200).map(kind).find(|op| {
            let wrote = run(&store, &index, op);
            rebuild_listings(&store, &index).expect("index");
            wrote
        });
        let op = wrote.expect("a write of each kind succeeds for some choice");
        assert_kept_equal_recomputed(&store, std::slice::from_ref(&op));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn kept_groups_equal_a_recomputation_after_any_writes(ops in prop::collection::vec(op(), 1..7)) {
        let (_dir, store, index) = fixture();
        for (done, op) in ops.iter().enumerate() {
            let _wrote = run(&store, &index, op);
            rebuild_listings(&store, &index).expect("index");
            assert_kept_equal_recomputed(&store, &ops[..=done]);
        }
    }
}

/// `reindex`'s rebuild of the groups: a store whose groups are right is left as it is (no key
/// written); every kind of wrong key (a record, a member, a price, an order and a
/// count changed, removed or left over) is put right, and only those keys are written.
#[test]
fn a_rebuild_writes_only_the_keys_that_are_wrong() {
    use crate::store::RecordKind as Space;
    let (_dir, store, _index) = fixture();
    let turn = store.write_turn();
    let right = store.rebuild_unmatched_groups(&turn).expect("rebuild");
    assert_eq!(right.keys_written, 0, "the kept groups were right");
    assert_eq!(right.groups as usize, groups(&store).len());

    let mut damaged = 0;
    for space in [
        Space::UnmatchedGroup,
        Space::UnmatchedMember,
        Space::UnmatchedPrice,
        Space::UnmatchedOrder,
        Space::UnmatchedCount,
    ] {
        let keys = store.keys_of(space);
        let (first, value) = keys.first().expect("the fixtures have keys of each kind");
        store.damage(first, None);
        let (last, _) = keys.last().expect("a key");
        store.damage(last, Some(b"not what it was"));
        let mut stray = first.clone();
        stray.extend_from_slice(b"left over");
        store.damage(&stray, Some(value));
        damaged += 3;
    }
    assert!(
        store.unmatched().check_derived().is_err(),
        "the damage shows"
    );

    let repaired = store.rebuild_unmatched_groups(&turn).expect("rebuild");
    assert_eq!(repaired.keys_written, damaged, "only the damaged keys");
    assert_eq!(repaired.groups, right.groups);
    assert_kept_equal_recomputed(&store, &[]);
}
