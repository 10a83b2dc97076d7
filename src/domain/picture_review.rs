//! Picture review: the candidate photographs proposed for a model (from the dataset's
//! `candidates.jsonl` or from the pictures of its listings), and where a model stands in the
//! review queue, with the pictures a person protected from every automatic process. Pure data.

use super::{CandidateId, ModelId, PictureId, Timestamp};
use serde::{Deserialize, Serialize};

/// Where a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CandidateOrigin {
    /// A line of the dataset's `candidates.jsonl`.
    Dataset,
    /// Pictures of listings matched to the model that look alike: how many listings and
    /// providers show one of them.
    Listings { listings: u32, providers: u32 },
}

/// A photograph proposed as a model's FRONT picture. Re-hosted like any picture: its
/// `picture` has a pipeline record, and the raw URLs stay for admins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PictureCandidate {
    pub id: CandidateId,
    pub model_id: ModelId,
    /// The re-hosted copy: `{media base}/pictures/{picture}`.
    pub picture: PictureId,
    /// The URL the image is fetched from.
    pub image_url: String,
    /// Where the image was found (the dataset's `sourceUrl`), if it says.
    pub page_url: Option<String>,
    /// The image search that found it (the dataset's `query`).
    pub query: Option<String>,
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// 1 is the best; listing candidates rank after the dataset's.
    pub rank: u32,
    pub origin: CandidateOrigin,
    pub selected_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

impl PictureCandidate {
    /// The raw source admins see: where the image was found, else the image itself.
    pub fn source_url(&self) -> &str {
        self.page_url.as_deref().unwrap_or(&self.image_url)
    }
}

/// A person's decision on a model's pictures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reviewed {
    pub at: Timestamp,
    /// The admin who decided.
    pub by: String,
}

/// Where a model stands in picture review. A model is pending while it has candidates and
/// nobody has decided; a decision is never undone by an automatic process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PictureReview {
    pub reviewed: Option<Reviewed>,
    /// Model pictures no automatic process may replace or re-crop (import, merges, ranking).
    pub protected: Vec<PictureId>,
}

/// The two lists of the review queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ReviewStatus {
    Pending = 1,
    Reviewed = 2,
}

impl PictureReview {
    pub fn is_protected(&self, picture: PictureId) -> bool {
        self.protected.contains(&picture)
    }

    pub fn set_protected(&mut self, picture: PictureId, protected: bool) {
        self.protected.retain(|p| *p != picture);
        if protected {
            self.protected.push(picture);
        }
    }

    /// The queue list the model belongs in, given whether it has candidates.
    pub fn status(&self, has_candidates: bool) -> Option<ReviewStatus> {
        match (&self.reviewed, has_candidates) {
            (Some(_), _) => Some(ReviewStatus::Reviewed),
            (None, true) => Some(ReviewStatus::Pending),
            (None, false) => None,
        }
    }
}

/// A 64-bit difference hash of an image: two pictures whose hashes differ in few bits look
/// alike (re-encoded, resized or lightly retouched copies of one photograph).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Look(pub u64);

impl Look {
    /// Bits two looks may differ in and still be one photograph.
    pub const ALIKE_BITS: u32 = 10;

    pub fn distance(self, other: Look) -> u32 {
        (self.0 ^ other.0).count_ones()
    }

    pub fn is_alike(self, other: Look) -> bool {
        self.distance(other) <= Self::ALIKE_BITS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_pending_with_candidates_until_someone_decides() {
        let mut review = PictureReview::default();
        assert_eq!(review.status(false), None);
        assert_eq!(review.status(true), Some(ReviewStatus::Pending));
        review.reviewed = Some(Reviewed {
            at: Timestamp(1),
            by: "ada".into(),
        });
        assert_eq!(review.status(true), Some(ReviewStatus::Reviewed));
        assert_eq!(review.status(false), Some(ReviewStatus::Reviewed));
    }

    #[test]
    fn protecting_twice_keeps_one_entry_and_unprotecting_removes_it() {
        let mut review = PictureReview::default();
        review.set_protected(PictureId(3), true);
        review.set_protected(PictureId(3), true);
        assert_eq!(review.protected, vec![PictureId(3)]);
        review.set_protected(PictureId(3), false);
        assert!(!review.is_protected(PictureId(3)));
    }

    #[test]
    fn looks_are_alike_within_ten_bits() {
        assert!(Look(0).is_alike(Look(0b11_1111_1111)));
        assert!(!Look(0).is_alike(Look(0b111_1111_1111)));
    }
}
