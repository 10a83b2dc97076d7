//! Listings' price histories as ingests keep them (D-205): a change is one key, the first
//! price and the delistings are the listing's own record, a revisit that changes nothing
//! writes nothing.

use crate::domain::price_history::{price_history, PriceEvent};
use crate::domain::{Listing, ListingId, Timestamp};
use crate::jobs::ingest::{ingest, IngestError};
use crate::jobs::snapshot_rules::{Refusal, SnapshotRules};
use crate::jobs::users::Actor;
use crate::store::Store;
use proptest::prelude::*;
use serde_json::json;

fn store(dir: &std::path::Path) -> Store {
    let store = Store::open(dir, 1 << 22).expect("store");
    crate::jobs::import::fixtures::import_fixtures(&store.write_turn(), dir);
    store
}

/// A chrono24 line of listing `code` at `price` EUR.
fn line(code: &str, price: u64) -> String {
    json!({
        "sourceId": code,
        "url": format!("https://www.chrono24.com/{code}.htm"),
        "title": "Tudor Royal M28500-0005",
        "brand": "Tudor",
        "reference": "M28500-0005",
        "price": price,
        "currency": "EUR",
    })
    .to_string()
}

/// Ingests a chrono24 snapshot of `lines`; the listings it leaves out are delisted.
fn revisit(store: &Store, lines: &[String]) {
    // A price change is keyed by its millisecond: two revisits within one would be one change
    // (a crawl's snapshots are hours apart; these, a few milliseconds in a fast run).
    std::thread::sleep(std::time::Duration::from_millis(2));
    let rules = SnapshotRules {
        mass_delist_allowed_by: Some(Actor::Cli),
        ..SnapshotRules::default()
    };
    let text = lines.join("\n");
    ingest(
        &store.write_turn(),
        "chrono24",
        "test",
        text.as_bytes(),
        &rules,
    )
    .expect("ingest");
}

fn listing(store: &Store, code: &str) -> Listing {
    (store.listings().all_listings())
        .map(|l| l.expect("listing"))
        .find(|l| l.provider_code == code)
        .expect("the listing")
}

fn history(store: &Store, id: ListingId) -> Vec<(PriceEvent, Option<u64>)> {
    let listing = store.listings().listing(id).expect("read").expect("kept");
    let stored = store.price_changes().of(id).expect("changes");
    (price_history(&listing, &stored).into_iter())
        .map(|point| (point.event, point.asking.price))
        .collect()
}

fn stored_changes(store: &Store, id: ListingId) -> usize {
    store.price_changes().of(id).expect("changes").len()
}

#[test]
fn a_price_changed_over_three_revisits_is_its_first_price_and_three_changes() {
    let dir = tempfile::tempdir().expect("dir");
    let store = store(dir.path());
    let steady = line("STEADY", 5000);
    revisit(&store, &[line("A", 9000), steady.clone()]);
    let id = listing(&store, "A").id;
    assert_eq!(stored_changes(&store, id), 0, "a new listing writes no key");
    for price in [8800, 8800, 8500, 8100] {
        revisit(&store, &[line("A", price), steady.clone()]);
    }
    use PriceEvent::*;
    assert_eq!(
        history(&store, id),
        [
            (Listed, Some(9000)),
            (Changed, Some(8800)),
            (Changed, Some(8500)),
            (Changed, Some(8100))
        ]
    );
    assert_eq!(
        stored_changes(&store, id),
        4,
        "the first price and each change"
    );
    let steady = listing(&store, "STEADY").id;
    assert_eq!(
        stored_changes(&store, steady),
        0,
        "five revisits, no change"
    );
}

#[test]
fn a_delisting_is_the_last_asking_price_and_a_relisting_the_price_it_comes_back_at() {
    let dir = tempfile::tempdir().expect("dir");
    let store = store(dir.path());
    let other = line("OTHER", 100);
    revisit(&store, &[line("A", 9000), other.clone()]);
    revisit(&store, &[line("A", 8800), other.clone()]);
    revisit(&store, std::slice::from_ref(&other));
    let id = listing(&store, "A").id;
    use PriceEvent::*;
    assert_eq!(
        history(&store, id),
        [
            (Listed, Some(9000)),
            (Changed, Some(8800)),
            (Delisted, Some(8800))
        ]
    );
    revisit(&store, &[line("A", 8000), other]);
    assert_eq!(
        history(&store, id),
        [
            (Listed, Some(9000)),
            (Changed, Some(8800)),
            (Delisted, Some(8800)),
            (Relisted, Some(8800)),
            (Changed, Some(8000))
        ]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Whatever a listing's revisits do (its price, gone, back), its history is the price it
    /// was first seen at, then each revisit that changed the price or brought it back or
    /// took it away, at the prices the revisits saw.
    #[test]
    fn a_history_is_what_the_revisits_saw(seen in prop::collection::vec(prop::option::of(1u64..4), 1..8)) {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        let other = line("OTHER", 100);
        revisit(&store, &[line("A", 1000), other.clone()]);
        use PriceEvent::*;
        let mut expected = vec![(Listed, Some(1000))];
        let (mut price, mut listed) = (1000, true);
        for step in seen {
            match step {
                Some(at) => {
                    let asked = at * 1000;
                    revisit(&store, &[line("A", asked), other.clone()]);
                    if !listed {
                        expected.push((Relisted, Some(price)));
                    }
                    if asked != price {
                        expected.push((Changed, Some(asked)));
                    }
                    (price, listed) = (asked, true);
                }
                None => {
                    revisit(&store, std::slice::from_ref(&other));
                    if listed {
                        expected.push((Delisted, Some(price)));
                    }
                    listed = false;
                }
            }
        }
        let id = listing(&store, "A").id;
        prop_assert_eq!(history(&store, id), expected);
    }
}

/// Ingests a chrono24 snapshot of `lines` taken at `at` (D-214).
fn replay(store: &Store, lines: &[String], at: Timestamp) -> Result<(), IngestError> {
    let rules = SnapshotRules {
        mass_delist_allowed_by: Some(Actor::Cli),
        observed_at: Some(at),
        ..SnapshotRules::default()
    };
    let text = lines.join("\n");
    let turn = store.write_turn();
    ingest(&turn, "chrono24", "archived", text.as_bytes(), &rules).map(|_| ())
}

fn dated_history(store: &Store, id: ListingId) -> Vec<(PriceEvent, Timestamp)> {
    let listing = store.listings().listing(id).expect("read").expect("kept");
    let stored = store.price_changes().of(id).expect("changes");
    (price_history(&listing, &stored).into_iter())
        .map(|point| (point.event, point.at))
        .collect()
}

const DAY: i64 = 86_400_000;

#[test]
fn archived_snapshots_replayed_with_their_dates_date_the_listings_and_their_histories() {
    let dir = tempfile::tempdir().expect("dir");
    let store = store(dir.path());
    let first = Timestamp(Timestamp::now().0 - 60 * DAY);
    let (second, third) = (Timestamp(first.0 + 7 * DAY), Timestamp(first.0 + 14 * DAY));
    let other = line("OTHER", 100);
    replay(&store, &[line("A", 9000), other.clone()], first).expect("first");
    replay(&store, &[line("A", 8800), other.clone()], second).expect("second");
    replay(&store, std::slice::from_ref(&other), third).expect("third");
    let a = listing(&store, "A");
    assert_eq!(a.created_at, first);
    assert_eq!(a.last_seen_at, second);
    assert_eq!(a.delisted_at, Some(third));
    use PriceEvent::*;
    assert_eq!(
        dated_history(&store, a.id),
        [(Listed, first), (Changed, second), (Delisted, third)]
    );
    assert_eq!(listing(&store, "OTHER").last_seen_at, third);
}

#[test]
fn a_snapshot_dated_before_the_providers_last_or_after_now_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let store = store(dir.path());
    let last = Timestamp(Timestamp::now().0 - 30 * DAY);
    replay(&store, &[line("A", 9000)], last).expect("first");
    let before = store
        .listings()
        .listing(listing(&store, "A").id)
        .expect("read");
    let earlier = replay(&store, &[line("A", 1), line("B", 2)], Timestamp(last.0 - 1));
    assert!(
        matches!(
            earlier,
            Err(IngestError::Refused { refusal: Refusal::ObservedBeforeLast { last: at, .. }, .. })
                if at == last
        ),
        "{:?}",
        earlier.err().map(|e| e.to_string())
    );
    let later = Timestamp(Timestamp::now().0 + DAY);
    let future = replay(&store, &[line("A", 1)], later);
    assert!(
        matches!(
            future,
            Err(IngestError::Refused {
                refusal: Refusal::ObservedInFuture { .. },
                ..
            })
        ),
        "{:?}",
        future.err().map(|e| e.to_string())
    );
    let after = store
        .listings()
        .listing(listing(&store, "A").id)
        .expect("read");
    assert_eq!(before, after, "nothing written");
    assert_eq!(store.listings().all_listings().count(), 1, "no B");
    // The same instant as the last snapshot is allowed: a snapshot is not before itself.
    replay(&store, &[line("A", 8000)], last).expect("the same instant");
}
