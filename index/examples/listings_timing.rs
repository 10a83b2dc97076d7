//! Times the listings index at scale without the store: builds (once) an index of `N` synthetic
//! listings shaped like `catalogue-bench generate`'s (15 % UNWORN, 3 % RESERVED, prices
//! log-uniform per model from $300 to $80,000, one model with 116,000 ACTIVE listings), then
//! times the queries of `GET /listings` filtered by condition and price range and of
//! `GET /listings/stats` for that model:
//!
//! `cargo run --release -p catalogue-index --example listings_timing -- DIR 10000000`
//!
//! A range's first request is timed apart: it reads the range's edge buckets, which later
//! requests find kept. The stats are timed through the price collector (every request reads
//! the columns) and through the kept runs: their first request, later ones, and the first
//! after a commit.
//!
//! `REPS` (default 20) sets how many times each query runs; the best and median are printed.

use catalogue_index::{
    Hits, ListingDoc, ListingFilters, ListingIndex, ListingQuery, ListingSort, PricedListings,
};
use std::time::Instant;

const ACTIVE: u64 = 0;
const RESERVED: u64 = 1;
const DELISTED: u64 = 2;
const UNWORN: u64 = 1;
const HOT_MODEL: u64 = 1;
const HOT_LISTINGS: u64 = 116_000;
const MODELS: u64 = 1_000_000;

#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

fn base_price(model: u64) -> f64 {
    let mut rng = Rng(model.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    300.0 * (80_000.0f64 / 300.0).powf(rng.unit())
}

fn listing(id: u64, rng: &mut Rng, n: u64) -> ListingDoc {
    // The hot model's listings are spread through the ids, as a provider's feed would be.
    let hot_every = (n / HOT_LISTINGS).max(1);
    let model_id = if id % hot_every == 0 {
        HOT_MODEL
    } else {
        2 + rng.next() % (MODELS - 1)
    };
    let status = match rng.next() % 100 {
        0..=2 => RESERVED,
        _ if model_id == HOT_MODEL => ACTIVE,
        3 => DELISTED,
        _ => ACTIVE,
    };
    let condition = match rng.next() % 100 {
        0..=14 => Some(UNWORN),
        15..=85 => Some(2 + rng.next() % 4),
        _ => None,
    };
    let priced = rng.next() % 100 < 95;
    let usd = (base_price(model_id) * (0.8 + 0.4 * rng.unit())) as u64;
    let in_euros = rng.next() % 2 == 0;
    ListingDoc {
        id,
        provider_id: 1 + rng.next() % 4,
        model_id: Some(model_id),
        brand_id: Some(model_id / 500),
        status,
        condition,
        price: priced.then_some(if in_euros { usd * 92 / 100 } else { usd }),
        currency: priced.then(|| if in_euros { "EUR" } else { "USD" }.to_owned()),
        price_usd: priced.then_some(usd),
        ..ListingDoc::default()
    }
}

/// The `n` listings of the index, the same every time.
fn listings(n: u64) -> impl Iterator<Item = ListingDoc> {
    let mut rng = Rng(42);
    (1..=n).map(move |id| listing(id, &mut rng, n))
}

fn build(index: &ListingIndex, n: u64) {
    let started = Instant::now();
    let mut load = index.load().expect("writer");
    for doc in listings(n) {
        load.add(&doc).expect("add");
    }
    load.commit(index, 1).expect("commit");
    println!(
        "built {n} listings in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Runs `run` once and prints how long it took: what a cold request pays.
fn once<T>(name: &str, run: impl FnOnce() -> T, describe: impl Fn(&T) -> String) {
    let started = Instant::now();
    let out = run();
    let ms = started.elapsed().as_secs_f64() * 1e3;
    println!("{name:44} once {ms:7.2} ms  {}", describe(&out));
}

fn time<T>(name: &str, reps: usize, mut run: impl FnMut() -> T, describe: impl Fn(&T) -> String) {
    let mut times = Vec::with_capacity(reps);
    let mut last = run();
    for _ in 0..reps {
        let started = Instant::now();
        last = run();
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{name:44} best {:7.2} ms  median {:7.2} ms  {}",
        times[0],
        times[times.len() / 2],
        describe(&last)
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: listings_timing DIR [N]");
    let n: u64 = args.next().map_or(1_000_000, |n| n.parse().expect("N"));
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    std::fs::create_dir_all(&dir).expect("dir");
    let index = ListingIndex::open(std::path::Path::new(&dir)).expect("open");
    if index.len() != n {
        build(&index, n);
    }
    let visible = ListingFilters {
        hidden_statuses: vec![DELISTED],
        ..ListingFilters::default()
    };
    for (low, high) in [(1_000, 5_000), (5_000, 20_000), (300, 2_000)] {
        for sort in [ListingSort::Newest, ListingSort::PriceAsc] {
            let query = ListingQuery {
                text: None,
                filters: ListingFilters {
                    condition: Some(UNWORN),
                    min_price_usd: Some(low),
                    max_price_usd: Some(high),
                    ..visible.clone()
                },
                sort,
                offset: 0,
                limit: 20,
            };
            let name = format!("UNWORN ${low}-{high} {sort:?}");
            let search = || index.search(&query).expect("search");
            let total = |hits: &Hits| format!("total {}", hits.total);
            // The first reads the range's edge buckets, later ones find them kept.
            once(&format!("{name}, first"), search, total);
            time(&name, reps, search, total);
        }
    }
    let by_brand = ListingQuery {
        text: None,
        filters: ListingFilters {
            brand_id: Some(7),
            ..visible.clone()
        },
        sort: ListingSort::PriceAsc,
        offset: 0,
        limit: 20,
    };
    time(
        "brand, PriceAsc",
        reps,
        || index.search(&by_brand).expect("search"),
        |hits| format!("total {}", hits.total),
    );
    let hot = ListingFilters {
        model_id: Some(HOT_MODEL),
        statuses: vec![ACTIVE],
        ..ListingFilters::default()
    };
    let priced = |p: &PricedListings| format!("count {}, priced {}", p.count, p.priced.len());
    time(
        "stats prices of the hot model (EUR)",
        reps,
        || index.prices(&hot, "EUR").expect("prices"),
        priced,
    );
    let kept = || {
        index
            .model_prices(HOT_MODEL, ACTIVE, "EUR")
            .expect("prices")
    };
    once("stats, hot model, runs read (first request)", kept, priced);
    time("stats, hot model, runs kept", reps, kept, priced);
    // A commit that writes the last listing over itself: one delete in the large segment and
    // one new segment, the index's content unchanged.
    let last = listings(n).last().expect("a listing");
    index.upsert(&[last], 2).expect("upsert");
    once("stats, hot model, first after a commit", kept, priced);
    time("stats, hot model, after a commit", reps, kept, priced);
}
