//! Cropping a product shot: the background is estimated from the image border, the watch is
//! the box of rows and columns that differ from it, then centred on a square of the background.

use image::{imageops, Rgb, RgbImage};

/// How far a channel may stray from the background and still be background: above JPEG
/// noise and the soft shadows of product shots, well below a watch on white or grey.
const THRESHOLD: u8 = 48;
/// Border pixels sampled for the background, on each side.
const BORDER: u32 = 4;
/// Space left around the watch, as a fraction of its longer side, on each side.
const MARGIN: f32 = 0.05;

/// A box in pixels: left, top, width, height.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

/// The background colour: the per-channel median of the border pixels, so a watch touching
/// one edge or a few noisy pixels do not move it.
pub fn background(image: &RgbImage) -> Rgb<u8> {
    let (w, h) = image.dimensions();
    let border = BORDER.min(w / 2).min(h / 2).max(1);
    let mut channels: [Vec<u8>; 3] = Default::default();
    for (x, y, pixel) in image.enumerate_pixels() {
        if x < border || y < border || x + border >= w || y + border >= h {
            for (c, values) in channels.iter_mut().enumerate() {
                values.push(pixel[c]);
            }
        }
    }
    Rgb(channels.map(|mut values| median(&mut values)))
}

fn median(values: &mut [u8]) -> u8 {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(255)
}

fn differs(pixel: &Rgb<u8>, background: &Rgb<u8>) -> bool {
    pixel
        .0
        .iter()
        .zip(background.0)
        .any(|(p, b)| p.abs_diff(b) > THRESHOLD)
}

/// The box of rows and columns with enough pixels unlike the background: a row or column
/// needs a few (not one) so that isolated noise does not widen the box. `None`: no content.
pub fn content_box(image: &RgbImage, background: &Rgb<u8>) -> Option<Rect> {
    let (w, h) = image.dimensions();
    let mut rows = vec![0u32; h as usize];
    let mut columns = vec![0u32; w as usize];
    for (x, y, pixel) in image.enumerate_pixels() {
        if differs(pixel, background) {
            rows[y as usize] += 1;
            columns[x as usize] += 1;
        }
    }
    let (top, bottom) = span(&rows, (w / 200).max(2))?;
    let (left, right) = span(&columns, (h / 200).max(2))?;
    Some(Rect {
        x: left,
        y: top,
        width: right - left + 1,
        height: bottom - top + 1,
    })
}

/// First and last index whose count reaches `min`.
fn span(counts: &[u32], min: u32) -> Option<(u32, u32)> {
    let first = counts.iter().position(|&c| c >= min)?;
    let last = counts.iter().rposition(|&c| c >= min)?;
    Some((first as u32, last as u32))
}

/// The side of the square canvas around `content`, and where the content goes on it.
pub fn square_around(content: Rect) -> (u32, u32, u32) {
    let longer = content.width.max(content.height);
    let margin = (longer as f32 * MARGIN).round() as u32;
    let side = longer + 2 * margin;
    (
        side,
        (side - content.width) / 2,
        (side - content.height) / 2,
    )
}

/// Where the watch goes on the crop: the crop's side, the watch's size on it, and its top-left
/// corner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub side: u32,
    pub width: u32,
    pub height: u32,
    pub x: u32,
    pub y: u32,
}

/// The square around `content`, scaled down to `max_side` when it is larger: the watch is
/// scaled before it is placed, so the crop is never larger than `max_side` whatever the
/// picture's shape (the square around a 50,000 x 1,000 picture, within the pixel cap, would be
/// 55,000 pixels a side: 9 GB, were it made first and scaled after; docs/decisions.md, D-118).
pub fn placement(content: Rect, max_side: u32) -> Placement {
    let (side, x, y) = square_around(content);
    if side <= max_side {
        return Placement {
            side,
            width: content.width,
            height: content.height,
            x,
            y,
        };
    }
    let scale = f64::from(max_side) / f64::from(side);
    let scaled = |length: u32| ((f64::from(length) * scale).round() as u32).clamp(1, max_side);
    let (width, height) = (scaled(content.width), scaled(content.height));
    Placement {
        side: max_side,
        width,
        height,
        x: (max_side - width) / 2,
        y: (max_side - height) / 2,
    }
}

/// The watch of `image` centred on a square of its background, at most `max_side` pixels.
/// An image with no content apart from its background is squared whole. Beside the picture,
/// it makes only the crop and the watch scaled to it (see [`placement`]).
pub fn crop(image: &RgbImage, max_side: u32) -> RgbImage {
    let background = background(image);
    let (w, h) = image.dimensions();
    let content = content_box(image, &background).unwrap_or(Rect {
        x: 0,
        y: 0,
        width: w,
        height: h,
    });
    let place = placement(content, max_side);
    let watch = imageops::crop_imm(image, content.x, content.y, content.width, content.height);
    let mut canvas = RgbImage::from_pixel(place.side, place.side, background);
    let (x, y) = (i64::from(place.x), i64::from(place.y));
    if (place.width, place.height) == (content.width, content.height) {
        imageops::replace(&mut canvas, &*watch, x, y);
    } else {
        let scaled = imageops::resize(
            &*watch,
            place.width,
            place.height,
            imageops::FilterType::Triangle,
        );
        imageops::replace(&mut canvas, &scaled, x, y);
    }
    canvas
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A dark disc of `radius` at (`cx`, `cy`) on `background`, with ±`noise` per channel.
    pub fn watch_on(
        (w, h): (u32, u32),
        (cx, cy, radius): (i64, i64, i64),
        background: u8,
        noise: u8,
    ) -> RgbImage {
        let mut seed = 0x2545_f491_u32;
        RgbImage::from_fn(w, h, |x, y| {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let jitter = (seed % (u32::from(noise) * 2 + 1)) as i16 - i16::from(noise);
            let (dx, dy) = (i64::from(x) - cx, i64::from(y) - cy);
            let base = if dx * dx + dy * dy <= radius * radius {
                30
            } else {
                i16::from(background)
            };
            let v = (base + jitter).clamp(0, 255) as u8;
            Rgb([v, v, v])
        })
    }

    #[test]
    fn the_content_box_is_the_drawn_disc_despite_noise() {
        for (size, disc, bg) in [
            ((400, 300), (120, 150, 60), 255),
            ((300, 500), (200, 380, 80), 128),
            ((640, 480), (320, 240, 200), 240),
        ] {
            let image = watch_on(size, disc, bg, 12);
            let found = content_box(&image, &background(&image)).expect("content");
            let (cx, cy, r) = disc;
            let expected = (cx - r, cy - r, 2 * r + 1);
            for (got, want) in [
                (i64::from(found.x), expected.0),
                (i64::from(found.y), expected.1),
                (i64::from(found.width), expected.2),
                (i64::from(found.height), expected.2),
            ] {
                assert!((got - want).abs() <= 3, "{found:?} vs disc {disc:?}");
            }
        }
    }

    #[test]
    fn a_soft_shadow_is_background_not_watch() {
        let mut image = watch_on((400, 400), (180, 180, 80), 250, 6);
        // A shadow down and to the right, at most 35 levels darker, fading over 40 pixels.
        for (x, y, pixel) in image.enumerate_pixels_mut() {
            let (dx, dy) = (f64::from(x) - 200.0, f64::from(y) - 200.0);
            let outside = (dx * dx + dy * dy).sqrt() - 80.0;
            let far_from_disc = (f64::from(x) - 180.0).hypot(f64::from(y) - 180.0) > 80.0;
            if far_from_disc && (0.0..40.0).contains(&outside.max(0.0)) {
                let shade = (35.0 * (1.0 - outside.max(0.0) / 40.0)) as u8;
                pixel.0 = pixel.0.map(|v| v.saturating_sub(shade));
            }
        }
        let found = content_box(&image, &background(&image)).expect("content");
        assert!((i64::from(found.x) - 100).abs() <= 3, "{found:?}");
        assert!((i64::from(found.width) - 161).abs() <= 3, "{found:?}");
    }

    #[test]
    fn the_square_leaves_a_margin_and_centres_the_content() {
        let (side, x, y) = square_around(Rect {
            x: 7,
            y: 9,
            width: 200,
            height: 100,
        });
        assert_eq!((side, x, y), (220, 10, 60));
    }

    #[test]
    fn a_crop_is_square_at_most_the_configured_size_with_the_disc_centred() {
        let image = watch_on((1600, 1200), (400, 300, 250), 255, 8);
        let cropped = crop(&image, 500);
        assert_eq!(cropped.dimensions(), (500, 500));
        let found = content_box(&cropped, &background(&cropped)).expect("content");
        let centre = found.x + found.width / 2;
        assert!((i64::from(centre) - 250).abs() <= 3, "{found:?}");
        assert!((i64::from(found.width) - 455).abs() <= 6, "{found:?}");
    }

    #[test]
    fn a_long_narrow_picture_is_scaled_before_it_is_placed() {
        let panorama = Rect {
            x: 0,
            y: 0,
            width: 50_000,
            height: 1_000,
        };
        assert_eq!(
            placement(panorama, 1000),
            Placement {
                side: 1000,
                width: 909,
                height: 18,
                x: 45,
                y: 491
            }
        );
        // A dark band across a wide picture: the crop holds it, scaled, in the middle.
        let mut image = RgbImage::from_pixel(4000, 200, Rgb([250, 250, 250]));
        for y in 70..130 {
            for x in 0..4000 {
                image.put_pixel(x, y, Rgb([20, 20, 20]));
            }
        }
        let cropped = crop(&image, 500);
        assert_eq!(cropped.dimensions(), (500, 500));
        let found = content_box(&cropped, &background(&cropped)).expect("content");
        assert!((i64::from(found.width) - 455).abs() <= 2, "{found:?}");
        assert!(
            (i64::from(found.y) + i64::from(found.height) / 2 - 250).abs() <= 2,
            "{found:?}"
        );
    }

    #[test]
    fn a_blank_image_is_squared_whole() {
        let image = RgbImage::from_pixel(30, 20, Rgb([200, 200, 200]));
        assert_eq!(crop(&image, 1000).dimensions(), (34, 34));
    }
}
