//! `PictureRecord`: where the image pipeline is with one picture (pending, fetched with the
//! hashes of its stored bytes and crop, or failed with why and when to retry). Pure data.

use super::{PictureId, Timestamp};
use serde::{Deserialize, Serialize};

/// The SHA-256 of a stored file's bytes: its name in the media store and its ETag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContentHash(pub [u8; 32]);

impl ContentHash {
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// An image format the pipeline accepts, decided from the bytes, never from `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImageFormat {
    Jpeg,
    Png,
    WebP,
}

impl ImageFormat {
    pub fn content_type(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Png => "image/png",
            ImageFormat::WebP => "image/webp",
        }
    }
}

/// The fetched original and, once made, its crop (always JPEG).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetched {
    pub hash: ContentHash,
    pub format: ImageFormat,
    pub width: u32,
    pub height: u32,
    /// `None` until cropped, or after the crop was cleared: the worker crops it again.
    pub cropped: Option<ContentHash>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FetchState {
    Pending,
    Fetched(Fetched),
    /// The last attempt failed; the worker tries again from `next_try_at` until it gives up.
    Failed {
        reason: String,
        next_try_at: Option<Timestamp>,
    },
}

/// One picture's progress through the pipeline, keyed by its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PictureRecord {
    pub id: PictureId,
    pub source_url: String,
    pub state: FetchState,
    /// Failed fetches so far; reset by a success.
    pub attempts: u32,
    pub updated_at: Timestamp,
}

impl PictureRecord {
    pub fn pending(id: PictureId, source_url: String, now: Timestamp) -> PictureRecord {
        PictureRecord {
            id,
            source_url,
            state: FetchState::Pending,
            attempts: 0,
            updated_at: now,
        }
    }

    pub fn fetched(&self) -> Option<&Fetched> {
        match &self.state {
            FetchState::Fetched(fetched) => Some(fetched),
            _ => None,
        }
    }

    /// Whether the worker may have something to do for it, now or later: not once it is
    /// cropped, nor after a failure it will not retry.
    pub fn may_be_due(&self) -> bool {
        match &self.state {
            FetchState::Pending => true,
            FetchState::Fetched(fetched) => fetched.cropped.is_none(),
            FetchState::Failed { next_try_at, .. } => next_try_at.is_some(),
        }
    }

    /// Whether the worker has something to do for it at `now`: a fetch, or a missing crop.
    pub fn is_due(&self, now: Timestamp) -> bool {
        match &self.state {
            FetchState::Failed {
                next_try_at: Some(at),
                ..
            } => *at <= now,
            _ => self.may_be_due(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(state: FetchState) -> PictureRecord {
        PictureRecord {
            state,
            ..PictureRecord::pending(PictureId(1), "http://a/b.jpg".into(), Timestamp(0))
        }
    }

    #[test]
    fn the_worker_has_work_for_pending_uncropped_and_retried_pictures_only() {
        let fetched = |cropped| {
            FetchState::Fetched(Fetched {
                hash: ContentHash([1; 32]),
                format: ImageFormat::Png,
                width: 1,
                height: 1,
                cropped,
            })
        };
        let failed = |next_try_at| FetchState::Failed {
            reason: "timed out".into(),
            next_try_at,
        };
        let now = Timestamp(1_000);
        for (state, maybe, due) in [
            (FetchState::Pending, true, true),
            (fetched(None), true, true),
            (fetched(Some(ContentHash([2; 32]))), false, false),
            (failed(None), false, false),
            (failed(Some(Timestamp(999))), true, true),
            (failed(Some(Timestamp(1_001))), true, false),
        ] {
            let picture = with(state);
            assert_eq!(picture.may_be_due(), maybe, "{picture:?}");
            assert_eq!(picture.is_due(now), due, "{picture:?}");
        }
    }
}
