//! Fetching a picture's source URL: http(s) only, every hop's address checked (our own
//! resolver), few redirects, timeouts, a size cap, and bytes that must decode as an image.

use super::address::AllowedNets;
use crate::domain::ImageFormat;
use image::{DynamicImage, ImageReader, Limits};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{redirect, Client, Url};
use std::io::Cursor;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// The fetcher's settings (`serve` and `pictures fetch` flags, docs/operations.md).
#[derive(Debug, Clone)]
pub struct FetchSettings {
    pub allow: AllowedNets,
    pub connect_timeout: Duration,
    pub total_timeout: Duration,
    pub max_bytes: u64,
    /// Decoded pixels at most: a small file may claim a huge image (a decompression bomb).
    pub max_pixels: u64,
    pub max_redirects: usize,
}

/// The pixel cap by default: a 50-megapixel picture (7,071 pixels a side) and no larger.
pub const DEFAULT_MAX_PIXELS: u64 = 50_000_000;
/// Seconds to wait for a connection to a picture's source, by default.
pub const DEFAULT_CONNECT_TIMEOUT_SECS: u64 = 5;
/// Seconds a whole fetch may take by default, redirects included.
pub const DEFAULT_TOTAL_TIMEOUT_SECS: u64 = 30;
/// Largest picture fetched by default, in bytes.
pub const DEFAULT_MAX_BYTES: u64 = 15 * 1024 * 1024;

impl Default for FetchSettings {
    fn default() -> FetchSettings {
        FetchSettings {
            allow: AllowedNets::default(),
            connect_timeout: Duration::from_secs(DEFAULT_CONNECT_TIMEOUT_SECS),
            total_timeout: Duration::from_secs(DEFAULT_TOTAL_TIMEOUT_SECS),
            max_bytes: DEFAULT_MAX_BYTES,
            max_pixels: DEFAULT_MAX_PIXELS,
            max_redirects: 3,
        }
    }
}

/// Why a fetch failed; its text is the reason stored in the picture's record.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("refused: {0}")]
    Refused(String),
    #[error("too many redirects (more than {0})")]
    TooManyRedirects(usize),
    #[error("HTTP status {0}")]
    Status(u16),
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    #[error("timed out")]
    Timeout,
    #[error("request failed: {0}")]
    Request(String),
    #[error("not a JPEG, PNG or WebP image")]
    NotAnImage,
    #[error("image could not be decoded: {0}")]
    Undecodable(String),
}

impl FetchError {
    /// Whether trying again later may succeed (a refusal or a bad body will not).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            FetchError::Timeout | FetchError::Request(_) | FetchError::Status(500..)
        )
    }
}

/// A downloaded, decoded picture.
pub struct Downloaded {
    pub bytes: Vec<u8>,
    pub format: ImageFormat,
    pub image: DynamicImage,
}

/// Whether `url` could be fetched at all: an absolute http or https URL with a host, of a
/// sane length. What it resolves to is checked when it is fetched.
pub fn is_web_url(url: &str) -> bool {
    url.len() <= MAX_URL_LENGTH
        && Url::parse(url).is_ok_and(|u| {
            matches!(u.scheme(), "http" | "https")
                && u.has_host()
                // Credentials in a URL would end up in the store, the audit trail and logs.
                && u.username().is_empty()
                && u.password().is_none()
        })
}

/// Longest URL taken from a dataset or a person (browsers and CDNs agree on about this).
pub const MAX_URL_LENGTH: usize = 2048;

/// Whether `host` is under a name reserved for examples and tests (RFC 2606, RFC 6761): no
/// machine answers for it, so it is refused at once rather than looked up and retried (the
/// bundled fixtures' pictures are under `.example`).
pub fn is_reserved_name(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let under = |name: &str| host == name || host.ends_with(&format!(".{name}"));
    [
        "example",
        "test",
        "invalid",
        "example.com",
        "example.net",
        "example.org",
    ]
    .into_iter()
    .any(under)
}

/// Resolves host names itself and hands reqwest only the addresses the settings permit, so
/// the connection goes to a checked address (no second lookup to race).
struct CheckedResolver {
    allow: AllowedNets,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = self.allow.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let permitted: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| allow.permits(a.ip()))
                .collect();
            if permitted.is_empty() {
                let error = FetchError::Refused(format!("{host} resolves to no public address"));
                return Err(error.into());
            }
            let addrs: Addrs = Box::new(permitted.into_iter());
            Ok(addrs)
        })
    }
}

pub struct Fetcher {
    client: Client,
    settings: FetchSettings,
}

impl Fetcher {
    pub fn new(settings: FetchSettings) -> Result<Fetcher, FetchError> {
        // No proxy, whatever HTTP_PROXY says: a proxy would resolve and connect on our behalf,
        // past the address checks of the resolver below.
        let client = Client::builder()
            .no_proxy()
            .redirect(redirect::Policy::none())
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.total_timeout)
            .dns_resolver(Arc::new(CheckedResolver {
                allow: settings.allow.clone(),
            }))
            .build()
            .map_err(|e| FetchError::Request(e.to_string()))?;
        Ok(Fetcher { client, settings })
    }

    pub fn settings(&self) -> &FetchSettings {
        &self.settings
    }

    /// Downloads `url`, following at most `max_redirects` redirects, each hop checked, and
    /// reads what the bytes are and their size (decoding is left to the caller, within its
    /// decode budget).
    pub async fn fetch(&self, url: &str) -> Result<Probed, FetchError> {
        let bytes = tokio::time::timeout(self.settings.total_timeout, self.download(url))
            .await
            .map_err(|_| FetchError::Timeout)??;
        let settings = self.settings.clone();
        tokio::task::spawn_blocking(move || probe(bytes, &settings))
            .await
            .map_err(|e| FetchError::Undecodable(e.to_string()))?
    }

    async fn download(&self, url: &str) -> Result<Vec<u8>, FetchError> {
        let mut url = Url::parse(url).map_err(|e| FetchError::Refused(e.to_string()))?;
        for _ in 0..=self.settings.max_redirects {
            self.check_url(&url)?;
            let response = self.client.get(url.clone()).send().await.map_err(failure)?;
            if response.status().is_redirection() {
                url = next_hop(&url, &response)?;
                continue;
            }
            if !response.status().is_success() {
                return Err(FetchError::Status(response.status().as_u16()));
            }
            return self.read_capped(response).await;
        }
        Err(FetchError::TooManyRedirects(self.settings.max_redirects))
    }

    /// The scheme, and a literal address (which reqwest connects to without resolving).
    fn check_url(&self, url: &Url) -> Result<(), FetchError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(FetchError::Refused(format!("scheme {}", url.scheme())));
        }
        let host = url
            .host_str()
            .ok_or_else(|| FetchError::Refused("no host".into()))?;
        // An IPv6 literal is written in brackets in a URL.
        let literal = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok();
        match literal {
            Some(ip) if !self.settings.allow.permits(ip) => {
                Err(FetchError::Refused(format!("{ip} is not a public address")))
            }
            None if is_reserved_name(host) => Err(FetchError::Refused(format!(
                "{host} is a name reserved for examples (RFC 2606, RFC 6761): never looked up"
            ))),
            _ => Ok(()),
        }
    }

    async fn read_capped(&self, mut response: reqwest::Response) -> Result<Vec<u8>, FetchError> {
        let cap = self.settings.max_bytes;
        if response.content_length().is_some_and(|n| n > cap) {
            return Err(FetchError::TooLarge(cap));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failure)? {
            if (bytes.len() + chunk.len()) as u64 > cap {
                return Err(FetchError::TooLarge(cap));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }
}

fn next_hop(url: &Url, response: &reqwest::Response) -> Result<Url, FetchError> {
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| FetchError::Status(response.status().as_u16()))?;
    url.join(location)
        .map_err(|e| FetchError::Refused(format!("redirect to {location:?}: {e}")))
}

/// A reqwest error as ours: a refusal by our resolver keeps its reason.
fn failure(error: reqwest::Error) -> FetchError {
    if error.is_timeout() {
        return FetchError::Timeout;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(inner) = source {
        if let Some(FetchError::Refused(reason)) = inner.downcast_ref::<FetchError>() {
            return FetchError::Refused(reason.clone());
        }
        source = inner.source();
    }
    FetchError::Request(error.to_string())
}

/// A picture's bytes, known to be JPEG, PNG or WebP by their content, with the size its header
/// claims, within the pixel cap: nothing decoded yet.
pub struct Probed {
    bytes: Vec<u8>,
    format: ImageFormat,
    width: u32,
    height: u32,
}

impl Probed {
    /// The pixels decoding it makes, as its header says.
    pub fn pixels(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }

    /// Decodes the picture, its buffers within the pixel cap whatever its header claimed.
    pub fn decode(self, settings: &FetchSettings) -> Result<Downloaded, FetchError> {
        let mut reader = reader(&self.bytes)?;
        let mut limits = Limits::default();
        // Four bytes a pixel (RGBA8) is what the largest accepted decode allocates.
        limits.max_alloc = Some(settings.max_pixels.saturating_mul(4));
        reader.limits(limits);
        let image = reader
            .decode()
            .map_err(|e| FetchError::Undecodable(e.to_string()))?;
        if u64::from(image.width()) * u64::from(image.height()) > settings.max_pixels {
            return Err(FetchError::Undecodable("too many pixels".into()));
        }
        Ok(Downloaded {
            bytes: self.bytes,
            format: self.format,
            image,
        })
    }
}

/// Reads the format of `bytes` and the size in their header, and refuses a picture over the
/// pixel cap before anything is decoded.
pub fn probe(bytes: Vec<u8>, settings: &FetchSettings) -> Result<Probed, FetchError> {
    let format = match image::guess_format(&bytes) {
        Ok(image::ImageFormat::Jpeg) => ImageFormat::Jpeg,
        Ok(image::ImageFormat::Png) => ImageFormat::Png,
        Ok(image::ImageFormat::WebP) => ImageFormat::WebP,
        _ => return Err(FetchError::NotAnImage),
    };
    let (width, height) = reader(&bytes)?
        .into_dimensions()
        .map_err(|e| FetchError::Undecodable(e.to_string()))?;
    let probed = Probed {
        bytes,
        format,
        width,
        height,
    };
    if probed.pixels() > settings.max_pixels {
        return Err(FetchError::Undecodable(format!(
            "too many pixels ({width} x {height}, more than {})",
            settings.max_pixels
        )));
    }
    Ok(probed)
}

fn reader(bytes: &[u8]) -> Result<ImageReader<Cursor<&[u8]>>, FetchError> {
    ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| FetchError::Undecodable(e.to_string()))
}

/// Decodes `bytes` as JPEG, PNG or WebP by their content, within the pixel cap.
pub fn decode(bytes: Vec<u8>, settings: &FetchSettings) -> Result<Downloaded, FetchError> {
    probe(bytes, settings)?.decode(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_reserved_for_examples_are_known_and_real_ones_are_not() {
        for reserved in [
            "cdn.watchcatalogue.example",
            "example.com",
            "img.example.org.",
            "a.test",
            "x.INVALID",
        ] {
            assert!(is_reserved_name(reserved), "{reserved}");
        }
        for real in [
            "img.chrono24.com",
            "i.ebayimg.com",
            "example.co",
            "myexample.com",
            "localhost",
        ] {
            assert!(!is_reserved_name(real), "{real}");
        }
    }

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbImage::from_pixel(width, height, image::Rgb([9, 9, 9]));
        let mut bytes = Cursor::new(Vec::new());
        image
            .write_to(&mut bytes, image::ImageFormat::Png)
            .expect("encode");
        bytes.into_inner()
    }

    #[test]
    fn bytes_decide_the_format_and_the_pixel_cap_holds() {
        let settings = FetchSettings {
            max_pixels: 400,
            ..FetchSettings::default()
        };
        let small = decode(png(20, 20), &settings).expect("within the cap");
        assert_eq!((small.format, small.image.width()), (ImageFormat::Png, 20));
        // A small file may claim many pixels: refused from its header, before decoding.
        assert!(matches!(
            probe(png(21, 20), &settings),
            Err(FetchError::Undecodable(reason)) if reason.starts_with("too many pixels (21 x 20")
        ));
        let probed = probe(png(20, 20), &settings).expect("within the cap");
        assert_eq!(probed.pixels(), 400);
        for junk in [
            &b"<html>not an image</html>"[..],
            &[],
            &[0x89, b'P', b'N', b'G'],
        ] {
            assert!(decode(junk.to_vec(), &settings).is_err(), "{junk:?}");
        }
        let mut truncated = png(20, 20);
        truncated.truncate(truncated.len() / 2);
        assert!(matches!(
            decode(truncated, &settings),
            Err(FetchError::Undecodable(_))
        ));
    }
}
