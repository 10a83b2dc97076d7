//! `catalogue-bench jpegs`: product-shot-like JPEGs for the image pipeline bench
//! (bench/pictures.sh): a dark round watch (case, lighter dial, strap) at a varying offset and
//! size on a white or light grey background, with a little noise, so every file differs and
//! the crop has a real box to find.

use anyhow::Context;
use image::codecs::jpeg::JpegEncoder;
use image::{Rgb, RgbImage};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::path::Path;

/// What `write_jpegs` did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub written: usize,
    /// Already there (a cache from an earlier run), left as they were.
    pub kept: usize,
    pub bytes: u64,
}

/// Writes `DIR/0000.jpg`… (`count` files of `size`×`size`), in parallel, skipping the
/// files that exist. Picture `n` depends only on `seed` and `n`.
pub fn write_jpegs(
    out: &Path,
    count: usize,
    size: u32,
    quality: u8,
    seed: u64,
) -> anyhow::Result<Written> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let results: Vec<anyhow::Result<(bool, u64)>> = (0..count)
        .into_par_iter()
        .map(|n| {
            let path = out.join(format!("{n:04}.jpg"));
            if let Ok(meta) = std::fs::metadata(&path) {
                return Ok((false, meta.len()));
            }
            let image = watch_shot(size, seed.wrapping_add(n as u64));
            let mut jpeg = Vec::new();
            JpegEncoder::new_with_quality(&mut jpeg, quality)
                .encode_image(&image)
                .context("encoding")?;
            // Temp file + rename: an interrupted run leaves no truncated picture in the cache.
            let temp = out.join(format!(".{n:04}.jpg.tmp"));
            std::fs::write(&temp, &jpeg).with_context(|| format!("writing {}", temp.display()))?;
            std::fs::rename(&temp, &path)?;
            Ok((true, jpeg.len() as u64))
        })
        .collect();
    let mut written = Written::default();
    for result in results {
        let (new, bytes) = result?;
        if new {
            written.written += 1;
        } else {
            written.kept += 1;
        }
        written.bytes += bytes;
    }
    Ok(written)
}

/// One picture: background 215–250 grey (slightly tinted), a strap through the case,
/// a dark case (radius 14–30 % of the side) with a lighter dial, ±4 noise per channel.
pub fn watch_shot(size: u32, seed: u64) -> RgbImage {
    let mut rng = SmallRng::seed_from_u64(seed);
    let side = f64::from(size);
    let radius = side * rng.random_range(0.14..0.30);
    let cx = rng.random_range(radius + side * 0.02..side - radius - side * 0.02);
    // The strap reaches 1.5 radii above and below the centre, inside the frame.
    let cy = rng.random_range(radius * 1.5 + side * 0.02..side - radius * 1.5 - side * 0.02);
    let grey: i16 = rng.random_range(215..=250);
    let tint: [i16; 3] = [0, rng.random_range(-4..=4), rng.random_range(-6..=2)];
    let case: i16 = rng.random_range(20..=55);
    let dial: i16 = case + rng.random_range(25..=70);
    let strap = radius * 0.62;
    let mut noise = (seed as u32) | 1;
    RgbImage::from_fn(size, size, |x, y| {
        // xorshift32: cheap per-pixel noise.
        noise ^= noise << 13;
        noise ^= noise >> 17;
        noise ^= noise << 5;
        let jitter = (noise % 9) as i16 - 4;
        let (dx, dy) = (f64::from(x) - cx, f64::from(y) - cy);
        let d2 = dx * dx + dy * dy;
        let base = if d2 <= (radius * 0.8) * (radius * 0.8) {
            [dial; 3]
        } else if d2 <= radius * radius || (dx.abs() <= strap && dy.abs() <= radius * 1.5) {
            [case; 3]
        } else {
            [grey + tint[0], grey + tint[1], grey + tint[2]]
        };
        Rgb(base.map(|v| (v + jitter).clamp(0, 255) as u8))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pictures_differ_and_are_cached() {
        assert_ne!(watch_shot(64, 1), watch_shot(64, 2));
        assert_eq!(watch_shot(64, 3), watch_shot(64, 3));
        let dir = tempfile::tempdir().expect("tempdir");
        let first = write_jpegs(dir.path(), 3, 64, 85, 7).expect("write");
        assert_eq!((first.written, first.kept), (3, 0));
        let again = write_jpegs(dir.path(), 4, 64, 85, 7).expect("write");
        assert_eq!((again.written, again.kept), (1, 3));
        assert!(image::open(dir.path().join("0003.jpg")).is_ok());
    }
}
