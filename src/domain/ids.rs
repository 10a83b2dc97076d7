//! Numeric ids, one newtype per entity, rendered as decimal strings in the API.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A string that is not the decimal form of an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not an id: ids are decimal numbers without leading zeros")]
pub struct IdError;

/// Declares id newtypes: `u64` inside, canonical decimal strings outside.
macro_rules! id_type {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub struct $name(pub u64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            /// Only canonical decimal forms parse, so one id has one spelling (`07` is not `7`).
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.parse::<u64>() {
                    Ok(value) if value.to_string() == s => Ok(Self(value)),
                    _ => Err(IdError),
                }
            }
        }
    )*};
}

id_type!(
    /// A brand's id.
    BrandId,
    /// A series' id.
    SeriesId,
    /// A model's id.
    ModelId,
    /// A movement's id.
    CaliberId,
    /// A complication's id.
    ComplicationId,
    /// A marketplace provider's id.
    ProviderId,
    /// A picture's id.
    PictureId,
    /// A listing's id, stable across revisits.
    ListingId,
    /// A picture-review candidate's id.
    CandidateId,
    /// A batch job's id (`/admin/jobs/{id}`).
    JobId,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_only_canonical_decimal() {
        assert_eq!("42".parse::<ModelId>(), Ok(ModelId(42)));
        assert!("042".parse::<ModelId>().is_err());
        assert!("+42".parse::<ModelId>().is_err());
        assert!("abc".parse::<ModelId>().is_err());
        assert!("".parse::<ModelId>().is_err());
    }
}
