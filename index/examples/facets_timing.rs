//! Times the first page of `GET /models` over an existing catalogue index: unfiltered, sorted
//! by name, alone and with all seven facets (the first time, then again from the kept counts):
//!
//! `cargo run --release -p catalogue-index --example facets_timing -- DATA/index`
//!
//! `REPS` (default 20) sets how many times each step runs again; the best and median are
//! printed. With `BRAND=ID` the page is that brand's; with `Q=TEXT` it is that text's, by
//! relevance, typos tolerated as the API does by default. With `REMOVE=N` the first N models by
//! name are removed and committed first, as a merge of duplicates does, so the counts read a
//! segment with deleted documents: **on a copy of the index only**, as its generation moves.

use catalogue_index::{
    CatalogueIndex, DocKind, Facet, Filters, SearchRequest, SortOrder, TextQuery,
};
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
    if let Ok(text) = std::env::var("Q") {
        request.sort = SortOrder::Relevance;
        request.text = Some(TextQuery {
            normalized_reference: text
                .chars()
                .flat_map(char::to_lowercase)
                .filter(|c| c.is_alphanumeric())
                .collect(),
            text,
            typo_tolerance: true,
        });
    }
    let remove: usize = std::env::var("REMOVE")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    if remove > 0 {
        let mut first = request.clone();
        first.limit = remove;
        let ids = index.search(&first).expect("search").ids;
        let generation = index.generation().expect("generation").unwrap_or(0) + 1;
        index
            .update_and_remove(&[], &ids, generation)
            .expect("remove");
        println!("removed {} models, generation {generation}", ids.len());
    }
    let facets = Facet::ALL;
    // Counts are kept per index generation, so each first count opens the index afresh.
    time("facets, first time", reps, || {
        let fresh = CatalogueIndex::open(std::path::Path::new(&dir)).expect("open the index");
        let started = Instant::now();
        let counted = fresh.facets(&request, &facets).expect("facets").len();
        (counted, Some(ms(started)))
    });
    time("facets, again", reps, || {
        (index.facets(&request, &facets).expect("facets").len(), None)
    });
    time("page alone", reps, || {
        (index.search(&request).expect("search").total, None)
    });
}

fn ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}

/// Runs `run` `reps` times and prints the best and median time: the time `run` returns when it
/// measures itself (to leave out its own set-up), else the time of its call.
fn time(name: &str, reps: usize, mut run: impl FnMut() -> (usize, Option<f64>)) {
    let mut last = 0;
    let mut times: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let called = Instant::now();
            let (result, took) = run();
            last = result;
            took.unwrap_or_else(|| ms(called))
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "{name:24}{:8.2} ms best, {:8.2} ms median  ({last})",
        times[0],
        times[times.len() / 2],
    );
}
