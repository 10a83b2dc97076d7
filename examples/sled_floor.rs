//! What sled alone takes to write one record per listing, as an ingest writes them: keys in
//! order, chunks applied key by key on every core and flushed, into a store of its own. The
//! floor of an ingest that keeps one key a listing in sled, with nothing else running
//! (docs/decisions.md, D-36).
//!
//! `cargo run --release --example sled_floor -- DIR [LISTINGS] [VALUE_BYTES] [CHUNK] [SOURCE]`
//! (defaults: 10,000,000 listings of 337 bytes, the scale run's average, 50,000 a chunk).
//! `SOURCE` 1 also writes each listing's source key (provider and code, as the generated feeds
//! number them, to the id), as the store's layout does today: two keys a listing.

use rayon::prelude::*;
use std::time::Instant;

/// The listings keyspace's first byte and a big-endian id, as the store's keys.
fn key(id: u64) -> [u8; 9] {
    let mut key = [0u8; 9];
    key[0] = 60;
    key[1..].copy_from_slice(&id.to_be_bytes());
    key
}

/// The source key of a listing of provider 1 whose code is `P1-` and its number, as the
/// store's listing source keys and the generated feeds' codes.
fn source_key(id: u64) -> Vec<u8> {
    let mut key = vec![61u8];
    key.extend_from_slice(&1u64.to_be_bytes());
    key.extend_from_slice(format!("P1-{:07}", id + 1).as_bytes());
    key
}

/// A value of `bytes` that differs per listing (sled stores values as given).
fn value(id: u64, bytes: usize) -> Vec<u8> {
    let seed = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..bytes)
        .map(|i| (seed >> ((i % 8) * 8)) as u8 ^ i as u8)
        .collect()
}

fn arg(n: usize, default: usize) -> Result<usize, Box<dyn std::error::Error>> {
    Ok(match std::env::args().nth(n) {
        Some(text) => text.parse()?,
        None => default,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: sled_floor DIR [LISTINGS] [VALUE_BYTES] [CHUNK] [SOURCE: 0 or 1]")?;
    let (listings, bytes, chunk) = (arg(2, 10_000_000)?, arg(3, 337)?, arg(4, 50_000)?);
    let sources = arg(5, 0)? == 1;
    let db = watch_catalogue::store::sled_config(std::path::Path::new(&dir), 256 << 20).open()?;
    let started = Instant::now();
    let (mut applying, mut flushing) = (0.0, 0.0);
    for first in (0..listings as u64).step_by(chunk) {
        let last = (first + chunk as u64).min(listings as u64);
        let mut records: Vec<(Vec<u8>, Vec<u8>)> = (first..last)
            .map(|id| (key(id).to_vec(), value(id, bytes)))
            .collect();
        if sources {
            records.extend((first..last).map(|id| (source_key(id), id.to_be_bytes().to_vec())));
        }
        let applied = Instant::now();
        records.par_chunks(16_384).try_for_each(|run| {
            run.iter()
                .try_for_each(|(key, value)| db.insert(key, value.as_slice()).map(drop))
        })?;
        applying += applied.elapsed().as_secs_f64();
        let flushed = Instant::now();
        db.flush()?;
        flushing += flushed.elapsed().as_secs_f64();
        if (last as usize / chunk) % 20 == 0 {
            println!(
                "{last} records, {:.1} s: apply {applying:.1} s, flush {flushing:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    println!(
        "{listings} records of {bytes} bytes (source keys: {sources}) in {:.1} s ({:.0} a second): apply {applying:.1} s, flush {flushing:.1} s",
        started.elapsed().as_secs_f64(),
        listings as f64 / started.elapsed().as_secs_f64()
    );
    Ok(())
}
