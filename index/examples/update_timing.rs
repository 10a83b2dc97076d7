//! Times the listings index's small updates on a copy of a real index, without the store or the
//! server: `ROUNDS` upserts of `BATCH` listings each (ids drawn from the index's range, so each
//! replaces a document, as the listing mover's relinks do), each through the kept writer of
//! updates, its commit and the reader's reload, as a writer turn makes them:
//!
//! `cargo run --release -p catalogue-index --example update_timing -- COPY_OF_INDEX [ROUNDS] [BATCH]`
//!
//! Prints each round's time at p10, p50, p90 and the largest. The index is written to: run it on
//! a copy (`cp -a DATA/listings-index /tmp/li`). With `STRIDE=K`, a round's ids are every K-th
//! from a random start, as the mover relinks a model's listings in id order (one model's 250
//! listings span a few segments); without it, drawn at random (every segment touched).

use catalogue_index::{ListingDoc, ListingIndex};
use std::time::Instant;

#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

fn listing(id: u64, rng: &mut Rng) -> ListingDoc {
    let model_id = 1 + rng.next() % 1_000_000;
    let usd = 300 + rng.next() % 80_000;
    ListingDoc {
        id,
        provider_id: 1 + rng.next() % 4,
        model_id: Some(model_id),
        brand_id: Some(model_id / 500),
        status: 0,
        condition: Some(1 + rng.next() % 5),
        price: Some(usd),
        currency: Some("USD".to_owned()),
        price_usd: Some(usd),
        title: Some(format!("Maison Classic {model_id} automatic steel")),
        scraped_brand: Some("Maison".to_owned()),
        scraped_reference: Some(format!("{model_id}-{}", id % 97)),
        normalized_reference: Some(format!("{model_id}{}", id % 97)),
        title_references: vec![format!("{model_id}")],
        ..ListingDoc::default()
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .expect("usage: update_timing COPY_OF_INDEX [ROUNDS] [BATCH]");
    let rounds: usize = args.next().map_or(100, |n| n.parse().expect("ROUNDS"));
    assert!(rounds > 0, "ROUNDS must be at least 1");
    let batch: u64 = args.next().map_or(250, |n| n.parse().expect("BATCH"));
    let index = ListingIndex::open(std::path::Path::new(&dir)).expect("open");
    let listings = index.len().max(1);
    let mut generation = index.generation().expect("generation").unwrap_or(0);
    let stride: Option<u64> = std::env::var("STRIDE")
        .ok()
        .map(|k| k.parse().expect("STRIDE"));
    let mut rng = Rng(42);
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = rng.next() % listings;
        let docs: Vec<ListingDoc> = (0..batch)
            .map(|at| {
                let drawn = match stride {
                    Some(stride) => start + at * stride,
                    None => rng.next(),
                };
                listing(1 + drawn % listings, &mut rng)
            })
            .collect();
        generation += 1;
        let started = Instant::now();
        index.upsert(&docs, generation).expect("upsert");
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let at = |share: f64| times[((times.len() as f64 * share) as usize).min(times.len() - 1)];
    println!(
        "{rounds} upserts of {batch} into {listings} listings: p10 {:.1} p50 {:.1} p90 {:.1} max {:.1} ms",
        at(0.1),
        at(0.5),
        at(0.9),
        times[times.len() - 1]
    );
}
