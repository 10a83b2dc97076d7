//! Times relevance-ordered text searches of models on an existing catalogue index, the pruned
//! path against every match scored, and checks that both give the same page and total:
//!
//! `cargo run --release -p catalogue-index --example search_timing -- DATA/index "gold" "summit gold"`
//!
//! `REPS` (default 20) sets how many times each search runs; the best time is printed.
//! `TYPOS=1` searches with typo tolerance, as `GET /models` does by default.

use catalogue_index::{CatalogueIndex, DocKind, Filters, SearchRequest, SortOrder, TextQuery};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .expect("usage: search_timing INDEX_DIR QUERY...");
    let index = CatalogueIndex::open(std::path::Path::new(&dir)).expect("open the index");
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    for text in args {
        let request = request(&text);
        let mut best = f64::MAX;
        let mut hits = index.search(&request).expect("search");
        for _ in 0..reps {
            let started = Instant::now();
            hits = index.search(&request).expect("search");
            best = best.min(started.elapsed().as_secs_f64() * 1e3);
        }
        let started = Instant::now();
        let every = index.search_exhaustively(&request).expect("search");
        let every_ms = started.elapsed().as_secs_f64() * 1e3;
        let same = hits.ids == every.ids && hits.total == every.total;
        println!(
            "{text:24} pruned {best:6.2} ms  every match scored {every_ms:6.2} ms  total {:7}  same page: {same}",
            hits.total
        );
    }
}

/// What `GET /models?q=TEXT&pageSize=24` asks of the index.
fn request(text: &str) -> SearchRequest {
    let mut request = SearchRequest::filtered(DocKind::Model, Filters::default());
    request.text = Some(TextQuery {
        typo_tolerance: std::env::var("TYPOS").is_ok_and(|v| v == "1"),
        text: text.to_owned(),
        normalized_reference: text
            .chars()
            .flat_map(char::to_lowercase)
            .filter(|c| c.is_alphanumeric())
            .collect(),
    });
    request.sort = SortOrder::Relevance;
    request.limit = 24;
    request
}
