//! The switch to small memory pages while a store opens (`store::SmallPages`). Its own test
//! binary: the switch holds for the whole process, so tests opening stores in parallel in the
//! same process would see it flip under them.

use watch_catalogue::store::{SmallPages, Store};

#[cfg(target_os = "linux")]
#[test]
fn small_pages_while_a_store_opens_and_the_state_before_it_afterwards() {
    let before = SmallPages::huge_pages_disabled().expect("readable on Linux");
    assert!(!before, "the test process starts with huge pages allowed");

    // Nested guards: the first turns huge pages off, only the last one out turns them on.
    let outer = SmallPages::while_loading();
    assert_eq!(SmallPages::huge_pages_disabled(), Some(true));
    let inner = SmallPages::while_loading();
    drop(outer);
    assert_eq!(
        SmallPages::huge_pages_disabled(),
        Some(true),
        "still loading"
    );
    drop(inner);
    assert_eq!(SmallPages::huge_pages_disabled(), Some(false));

    // Opening a store (new, then again with its data) leaves huge pages as they were.
    let dir = tempfile::tempdir().expect("temp dir");
    for _ in 0..2 {
        let store = Store::open(dir.path(), 1 << 20).expect("store opens");
        assert!(store.is_empty().expect("readable"));
        assert_eq!(SmallPages::huge_pages_disabled(), Some(false));
        store.flush().expect("flushed");
    }

    // Huge pages an operator turned off stay off after an opening.
    rustix::thread::disable_transparent_huge_pages(true).expect("settable");
    drop(SmallPages::while_loading());
    assert_eq!(SmallPages::huge_pages_disabled(), Some(true));
    rustix::thread::disable_transparent_huge_pages(false).expect("settable");
}
