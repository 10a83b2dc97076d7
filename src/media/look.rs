//! What a picture looks like, as a 64-bit difference hash: the image shrunk to 9 x 8 grey
//! pixels, one bit per pair of neighbours (is the left one brighter?). Copies of one photograph
//! re-encoded, resized or lightly retouched by different sellers differ in a few bits.

use crate::domain::Look;
use image::DynamicImage;

pub fn look(image: &DynamicImage) -> Look {
    // `thumbnail_exact` averages whole source blocks: fast on a 2000 px original, and the
    // averaging is what makes the hash ignore JPEG noise.
    let grey = image.thumbnail_exact(9, 8).to_luma8();
    let mut bits = 0u64;
    for y in 0..8 {
        for x in 0..8 {
            let brighter = grey.get_pixel(x, y).0[0] > grey.get_pixel(x + 1, y).0[0];
            bits = (bits << 1) | u64::from(brighter);
        }
    }
    Look(bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage};

    /// A dark disc of `radius` at (`cx`, `cy`) on white, with `noise` added to every pixel.
    fn disc(size: u32, cx: f32, cy: f32, radius: f32, noise: u8) -> DynamicImage {
        let image = RgbImage::from_fn(size, size, |x, y| {
            let inside = (x as f32 - cx).powi(2) + (y as f32 - cy).powi(2) <= radius.powi(2);
            let jitter = ((x * 31 + y * 17) % (u32::from(noise) + 1)) as u8;
            let base: u8 = if inside { 40 } else { 235 };
            Rgb([base.saturating_add(jitter); 3])
        });
        DynamicImage::ImageRgb8(image)
    }

    #[test]
    fn a_resized_noisy_copy_looks_alike_and_another_picture_does_not() {
        let original = look(&disc(400, 200.0, 200.0, 120.0, 0));
        let copy = look(&disc(250, 125.0, 125.0, 75.0, 12));
        let other = look(&disc(400, 110.0, 290.0, 90.0, 0));
        assert!(original.is_alike(copy), "{}", original.distance(copy));
        assert!(!original.is_alike(other), "{}", original.distance(other));
    }
}
