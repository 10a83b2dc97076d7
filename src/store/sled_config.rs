//! How sled is opened, for the store and for a compaction's copy alike: the page cache asked
//! for, and the size of sled's segments, which a store keeps for its whole life.

use std::path::Path;

/// Segments of a new store: 8 MiB, sixteen times sled's default of 512 KiB. The first flush
/// after sled opens a store walks its segments once per segment (quadratic in their number):
/// about 1.9 s of a core at 26,000 segments of 512 KiB (the scale run's 13.9 GB), taken from
/// the first requests after every start (docs/decisions.md, D-208). At 8 MiB the same store has
/// about 1,700 segments and the walk a 256th of that.
pub const SEGMENT_BYTES: usize = 8 << 20;

/// The sled configuration for the store at `dir`: its own segment size when it exists (sled
/// refuses to open a store at another), [`SEGMENT_BYTES`] for a new one.
pub fn sled_config(dir: &Path, cache_bytes: u64) -> sled::Config {
    let segment = persisted_segment_bytes(dir).unwrap_or(SEGMENT_BYTES);
    warn_of_many_segments(dir, segment);
    sled::Config::new()
        .path(dir)
        .cache_capacity(cache_bytes)
        .segment_size(segment)
}

/// Segments past which the walk of the first flush is worth an operator's word: about 50 ms.
const MANY_SEGMENTS: u64 = 4_096;

/// Logs a store of smaller segments than new stores get, when it has so many that the first
/// write after the start costs a core for a noticeable time: `compact` moves it to
/// [`SEGMENT_BYTES`].
fn warn_of_many_segments(dir: &Path, segment: usize) {
    let file_bytes = std::fs::metadata(dir.join("db")).map_or(0, |meta| meta.len());
    let segments = file_bytes / segment.max(1) as u64;
    if segment < SEGMENT_BYTES && segments > MANY_SEGMENTS {
        tracing::warn!(
            segments,
            segment_bytes = segment,
            "the store has many small segments: the first write after each start walks them \
             (seconds of a core at tens of thousands); `watch-catalogue compact` rewrites it with \
             segments of 8 MiB"
        );
    }
}

/// The segment size sled wrote in the store's `conf` file (`segment_size: N`), if there is one.
/// The file is lines of text then a binary checksum, so it is read as bytes, not as UTF-8.
fn persisted_segment_bytes(dir: &Path) -> Option<usize> {
    let conf = std::fs::read(dir.join("conf")).ok()?;
    String::from_utf8_lossy(&conf)
        .lines()
        .find_map(|line| line.strip_prefix("segment_size:"))
        .and_then(|value| value.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_store_has_large_segments_and_an_old_one_keeps_its_own() {
        let dir = tempfile::tempdir().expect("dir");
        let fresh = dir.path().join("fresh");
        drop(sled_config(&fresh, 1 << 20).open().expect("open"));
        assert_eq!(persisted_segment_bytes(&fresh), Some(SEGMENT_BYTES));

        let old = dir.path().join("old");
        drop(
            sled::Config::new()
                .path(&old)
                .segment_size(512 * 1024)
                .open()
                .expect("an old store"),
        );
        let reopened = sled_config(&old, 1 << 20).open().expect("opens at its own size");
        drop(reopened);
        assert_eq!(persisted_segment_bytes(&old), Some(512 * 1024));
    }
}
