//! Times what a page of `/reconciliation` (all groups, 50 a page) reads, step by step, in a
//! fresh process: sled's cache is empty, the OS's as it is. On a data dir no server holds:
//!
//!     cargo run --release --example page_cost -- DATA_DIR [PAGE]
//!
//! Each step reads what the one before left in sled's cache, so a step's figure is what it
//! adds: the order's keys, the groups' records, their price bounds and newest members, the
//! titles of those members, then the candidates (three index searches per group, the five
//! shown read from the store).
use std::time::{Duration, Instant};
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::jobs::nearest_models::{self, KeptCandidates};
use watch_catalogue::jobs::unmatched_groups::{group_page, GroupFilter};
use watch_catalogue::store::GroupOrder;

const PAGE_SIZE: usize = 50;

fn timed<T>(what: &str, work: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let done = work();
    println!("{what:<40} {:>10.1?}", started.elapsed());
    done
}

fn main() {
    let dir = std::env::args().nth(1).expect("DATA_DIR");
    let page: usize = std::env::args()
        .nth(2)
        .map_or(1, |p| p.parse().expect("page"));
    let skip = (page.max(1) - 1) * PAGE_SIZE;
    let app = timed("open", || {
        App::open(&DataDir::new(dir), 1 << 30).expect("open")
    });
    let store = app.store();
    let keys: Vec<_> = timed("the order's keys", || {
        (store.unmatched().in_order(GroupOrder::All))
            .skip(skip)
            .take(PAGE_SIZE)
            .collect::<Result<_, _>>()
            .expect("keys")
    });
    timed("their records", || {
        for &key in &keys {
            store.unmatched().tally(key).expect("record");
        }
    });
    timed("and their price bounds", || {
        for &key in &keys {
            store.unmatched().summary(key, 0).expect("summary");
        }
    });
    let (groups, total) = timed("and their newest members (the page)", || {
        let all = GroupFilter::default();
        group_page(store, app.listings(), &all, skip, PAGE_SIZE).expect("page")
    });
    timed("their titles", || {
        for group in &groups {
            group.example_titles(10);
        }
    });
    let kept = KeptCandidates::default();
    let mut slowest = Duration::ZERO;
    timed("their candidates", || {
        for group in &groups {
            let started = Instant::now();
            nearest_models::sample(store, app.index(), &kept, group).expect("candidates");
            slowest = slowest.max(started.elapsed());
        }
    });
    println!("page {page} of {total} groups; the slowest group's candidates {slowest:.1?}");
}
