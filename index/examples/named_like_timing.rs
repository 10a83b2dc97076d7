//! Times `models_named_like` (a `/reconciliation` group's candidates by name) over lines of
//! `brand id<TAB>titles`, three rounds, on a copy of a data dir's catalogue index:
//!
//!     cargo run --release -p catalogue-index --example named_like_timing -- INDEX_DIR PAIRS_TSV
use catalogue_index::CatalogueIndex;
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let index = CatalogueIndex::open(std::path::Path::new(&args[1])).expect("open");
    let pairs: Vec<(u64, String)> = std::fs::read_to_string(&args[2])
        .expect("pairs")
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(b, t)| (b.parse().expect("brand"), t.to_string()))
        .collect();
    let mut found = 0;
    for round in 0..3 {
        let started = Instant::now();
        for (brand, text) in &pairs {
            found += index
                .models_named_like(*brand, text, 20)
                .expect("search")
                .len();
        }
        println!(
            "round {round}: {:?} for {} pairs",
            started.elapsed(),
            pairs.len()
        );
    }
    println!("found {found}");
}
