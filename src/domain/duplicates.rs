//! The duplicate finder's vocabulary: the signals that pair two models of one brand, strongest
//! first, a pair with its name similarity, and a group of models joined by pairs. Pure data;
//! the finder is `jobs::duplicates`.

use super::{BrandId, ModelId};
use serde::{Deserialize, Serialize};

/// Why two models of one brand may be one watch entered twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum DuplicateSignal {
    /// Equal normalised primary references.
    SameReference = 1,
    /// One model's primary or alternate reference is another's alternate.
    AlternateOverlap = 2,
    /// References that share a base and differ only by a variant part (`reference_base`):
    /// only ever a suggestion, 126610LN and 126610LV are different watches.
    BaseVariant = 3,
}

impl DuplicateSignal {
    pub const ALL: [DuplicateSignal; 3] = [
        DuplicateSignal::SameReference,
        DuplicateSignal::AlternateOverlap,
        DuplicateSignal::BaseVariant,
    ];

    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DuplicateSignal::SameReference => "sameReference",
            DuplicateSignal::AlternateOverlap => "alternateOverlap",
            DuplicateSignal::BaseVariant => "baseVariant",
        }
    }

    pub fn from_byte(byte: u8) -> Option<DuplicateSignal> {
        DuplicateSignal::ALL.into_iter().find(|s| *s as u8 == byte)
    }
}

/// Two models the finder pairs, `a < b`, by their strongest signal, with how alike their
/// names are (0 to 1, strsim's Jaro-Winkler): it ranks pairs within a signal, never forms one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DuplicatePair {
    pub a: ModelId,
    pub b: ModelId,
    pub signal: DuplicateSignal,
    pub name_score: f64,
}

impl DuplicatePair {
    /// The pair of `x` and `y` in order, its score in thousandths (as stored, so that a pair
    /// found again compares equal to the stored one and is not rewritten).
    pub fn new(x: ModelId, y: ModelId, signal: DuplicateSignal, name_score: f64) -> Self {
        let (a, b) = if x < y { (x, y) } else { (y, x) };
        DuplicatePair {
            a,
            b,
            signal,
            name_score: (name_score.clamp(0.0, 1.0) * 1000.0).round() / 1000.0,
        }
    }
}

/// A group of models joined by pairs: what `GET /duplicate-models` pages through, with what
/// it is ordered and filtered by. Kept between requests, and in the store between starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuplicateGroup {
    /// The strongest signal among its pairs.
    pub kind: DuplicateSignal,
    /// Oldest first (`createdAt`, then id).
    pub models: Vec<ModelId>,
    /// The best name similarity among its pairs of its kind.
    pub name_score: f64,
    pub brand: BrandId,
    /// Each model's normalised references, for `q`.
    pub references: Vec<String>,
    /// Ordering keys: the brand's name and the oldest model's reference.
    pub brand_name: String,
    pub reference: String,
}
