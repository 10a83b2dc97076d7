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
        let db = sled::Config::new().path(&store_dir).open().expect("sled");
        let started = Instant::now();
        let mut removed = 0;
        for space in 93u8..=98 {
            let mut batch = sled::Batch::default();
            for key in db.scan_prefix([space]).keys() {
                batch.remove(key.expect("key"));
                removed += 1;
            }
            db.apply_batch(batch).expect("clear");
        }
        db.flush().expect("flush");
        println!("cleared {removed} keys in {:?}", started.elapsed());
    }
    let store = Store::open(&store_dir, 256 << 20).expect("open");
    let turn = store.write_turn();
    let started = Instant::now();
    let rebuilt = store.rebuild_unmatched_groups(&turn).expect("rebuild");
    println!("{rebuilt:?} in {:?}", started.elapsed());
}
