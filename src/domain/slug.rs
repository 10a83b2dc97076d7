//! `Slug`: the stable, human-readable identity that brand-scoped paths take.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest slug accepted; long enough for `model-name-reference` forms.
pub const MAX_SLUG_LEN: usize = 120;

/// Lowercase ASCII letters and digits in runs joined by single hyphens.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Slug(String);

/// Why a string is not a slug.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{value}` is not a slug: {reason} (slugs are lowercase letters, digits and single hyphens)"
)]
pub struct SlugError {
    value: String,
    reason: &'static str,
}

impl Slug {
    /// Validates `value` as a slug.
    pub fn parse(value: &str) -> Result<Slug, SlugError> {
        let fail = |reason| {
            Err(SlugError {
                value: value.chars().take(MAX_SLUG_LEN).collect(),
                reason,
            })
        };
        if value.is_empty() {
            return fail("it is empty");
        }
        if value.len() > MAX_SLUG_LEN {
            return fail("it is longer than 120 characters");
        }
        if !value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return fail("it has a character other than a-z, 0-9 or -");
        }
        if value.starts_with('-') || value.ends_with('-') || value.contains("--") {
            return fail("hyphens must join two letters or digits");
        }
        Ok(Slug(value.to_owned()))
    }

    /// The slug as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Slug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_lowercase_words_joined_by_hyphens() {
        for ok in [
            "rolex",
            "submariner-date-126610ln",
            "a-lange-sohne",
            "3235",
            "sw200-1",
        ] {
            assert_eq!(Slug::parse(ok).map(|s| s.to_string()), Ok(ok.to_string()));
        }
    }

    #[test]
    fn rejects_everything_else() {
        for bad in [
            "",
            "Rolex",
            "a b",
            "-a",
            "a-",
            "a--b",
            "é",
            "a/b",
            &"a".repeat(121),
        ] {
            assert!(Slug::parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
