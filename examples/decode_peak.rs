//! Peak resident memory of decoding and cropping one picture as the image worker does (probe,
//! decode, look, RGB copy, crop), in a process of its own, per pixel of the picture: what a
//! pixel of the decode budget costs (docs/operations.md, "Memory bounded by design").
//!
//! `cargo run --release --example decode_peak -- SIDE [rgb|rgba]` (a SIDE x SIDE PNG of a dark
//! disc on white; Linux only: it reads the high-water mark in /proc/self/status).

use image::{ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
use std::io::Cursor;
use watch_catalogue::media::crop::crop;
use watch_catalogue::media::fetch::probe;
use watch_catalogue::media::look::look;
use watch_catalogue::media::FetchSettings;

const CROP_SIZE: u32 = 1000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let side: u32 = args
        .next()
        .ok_or("usage: decode_peak SIDE [rgb|rgba]")?
        .parse()?;
    let alpha = args.next().as_deref() == Some("rgba");
    let png = disc_png(side, alpha)?;
    let settings = FetchSettings::default();
    // The drawing's and encoding's own peak is forgotten: the high-water mark starts again.
    std::fs::write("/proc/self/clear_refs", "5")?;
    let before = high_water_kib()?;
    let probed = probe(png, &settings)?;
    let pixels = probed.pixels();
    let decoded = probed.decode(&settings)?;
    let look = look(&decoded.image);
    let cropped = crop(&decoded.image.into_rgb8(), CROP_SIZE);
    let grown = high_water_kib()?.saturating_sub(before) * 1024;
    println!(
        "{side} x {side} {}: the high-water mark grew {} MiB, {:.1} bytes a pixel (crop {:?}, look {look:?})",
        if alpha { "RGBA" } else { "RGB" },
        grown >> 20,
        grown as f64 / pixels as f64,
        cropped.dimensions(),
    );
    Ok(())
}

/// A dark disc on white, a third of the side in radius.
fn disc_png(side: u32, alpha: bool) -> Result<Vec<u8>, image::ImageError> {
    let (centre, radius) = (i64::from(side / 2), i64::from(side / 3));
    let dark = move |x: u32, y: u32| {
        (i64::from(x) - centre).pow(2) + (i64::from(y) - centre).pow(2) <= radius * radius
    };
    let level = move |x, y| if dark(x, y) { 20 } else { 250 };
    let mut bytes = Cursor::new(Vec::new());
    if alpha {
        RgbaImage::from_fn(side, side, |x, y| {
            let v = level(x, y);
            Rgba([v, v, v, 255])
        })
        .write_to(&mut bytes, ImageFormat::Png)?;
    } else {
        RgbImage::from_fn(side, side, |x, y| Rgb([level(x, y); 3]))
            .write_to(&mut bytes, ImageFormat::Png)?;
    }
    Ok(bytes.into_inner())
}

fn high_water_kib() -> Result<u64, Box<dyn std::error::Error>> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .ok_or("no VmHWM in /proc/self/status")?;
    Ok(line.trim().trim_end_matches("kB").trim().parse()?)
}
