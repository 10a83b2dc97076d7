//! Bytes of keys and values in a stopped data dir's store, by keyspace (the key's first byte):
//! what the store's size on disk is made of, before sled's own overhead.
//!
//! `cargo run --release --example store_sizes -- DATA_DIR`

use std::collections::BTreeMap;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: store_sizes DATA_DIR")?;
    let store = std::path::Path::new(&dir).join("store");
    let db = watch_catalogue::store::sled_config(&store, 256 << 20).open()?;
    let mut by_space: BTreeMap<u8, (u64, u64, u64)> = BTreeMap::new();
    for entry in db.iter() {
        let (key, value) = entry?;
        let space = by_space
            .entry(key.first().copied().unwrap_or(0))
            .or_default();
        space.0 += 1;
        space.1 += key.len() as u64;
        space.2 += value.len() as u64;
    }
    let mib = |bytes: u64| bytes as f64 / (1u64 << 20) as f64;
    println!("| keyspace | keys | key MiB | value MiB | bytes a key |");
    println!("|--:|--:|--:|--:|--:|");
    let mut total = (0, 0, 0);
    for (space, (keys, key_bytes, value_bytes)) in &by_space {
        let per_key = (key_bytes + value_bytes) as f64 / *keys as f64;
        println!(
            "| {space} | {keys} | {:.1} | {:.1} | {per_key:.0} |",
            mib(*key_bytes),
            mib(*value_bytes)
        );
        total = (total.0 + keys, total.1 + key_bytes, total.2 + value_bytes);
    }
    println!(
        "| all | {} | {:.1} | {:.1} | |",
        total.0,
        mib(total.1),
        mib(total.2)
    );
    Ok(())
}
