//! Times the rebuild of the kept groups of unmatched listings alone (what `reindex` ends with)
//! on a data dir no server holds. With `--cleared`, the groups' six keyspaces (bytes 93-98) are
//! removed first, so every key is written, as the migration to schema 10 does:
//!
//!     cargo run --release --example groups_rebuild -- DATA_DIR [--cleared]
use std::time::Instant;
use watch_catalogue::store::Store;

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("DATA_DIR"));
    let store_dir = dir.join("store");
    if std::env::args().any(|a| a == "--cleared") {
        // sled's cache bounded as the binary's, and the keys removed a batch of 20,000 at a
        // time: one batch per keyspace held millions of keys and grew past 20 GB at 10M listings.
        let db = watch_catalogue::store::sled_config(&store_dir, 256 << 20)
            .open()
            .expect("sled");
        let started = Instant::now();
        let mut removed = 0;
        for space in 93u8..=98 {
            loop {
                let keys: Vec<sled::IVec> = (db.scan_prefix([space]).keys())
                    .take(20_000)
                    .collect::<Result<_, _>>()
                    .expect("keys");
                if keys.is_empty() {
                    break;
                }
                let mut batch = sled::Batch::default();
                removed += keys.len();
                keys.into_iter().for_each(|key| batch.remove(key));
                db.apply_batch(batch).expect("clear");
            }
        }
        db.flush().expect("flush");
        println!(
            "cleared {removed} keys in {:?}; {}",
            started.elapsed(),
            peak()
        );
    }
    let store = Store::open(&store_dir, 256 << 20).expect("open");
    let turn = store.write_turn();
    let started = Instant::now();
    let rebuilt = store.rebuild_unmatched_groups(&turn).expect("rebuild");
    println!("{rebuilt:?} in {:?}; {}", started.elapsed(), peak());
}

/// The process's peak resident memory so far, as Linux reports it.
fn peak() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmHWM:"));
    line.unwrap_or("VmHWM: unknown")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
