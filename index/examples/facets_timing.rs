//! Times the first page of `GET /models` over an existing catalogue index: unfiltered, sorted
//! by name, alone and with all seven facets (the first time, then again from the kept counts):
//!
//! `cargo run --release -p catalogue-index --example facets_timing -- DATA/index`
//!
//! `REPS` (default 20) sets how many times each step runs again; the best and median are
//! printed. With `BRAND=ID` the page is that brand's.

use catalogue_index::{CatalogueIndex, DocKind, Facet, Filters, SearchRequest, SortOrder};
use std::time::Instant;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: facets_timing INDEX_DIR");
    let index = CatalogueIndex::open(std::path::Path::new(&dir)).expect("open the index");
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let filters = Filters {
        brand_id: std::env::var("BRAND").ok().and_then(|b| b.parse().ok()),
        ..Filters::default()
    };
    let mut request = SearchRequest::filtered(DocKind::Model, filters);
    request.sort = SortOrder::NameAsc;
    request.limit = 24;
    let facets = Facet::ALL;
    let started = Instant::now();
    let counts = index.facets(&request, &facets).expect("facets");
    println!(
        "facets, first time      {:8.2} ms  ({} facets)",
        ms(started),
        counts.len()
    );
    time("facets, again", reps, || {
        index.facets(&request, &facets).expect("facets").len()
    });
    time("page alone", reps, || {
        index.search(&request).expect("search").total
    });
}

fn ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}

fn time(name: &str, reps: usize, mut run: impl FnMut() -> usize) {
    let mut times: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let started = Instant::now();
            run();
            ms(started)
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "{name:24}{:8.2} ms best, {:8.2} ms median  ({})",
        times[0],
        times[times.len() / 2],
        run()
    );
}
