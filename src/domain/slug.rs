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

    /// A slug made of `text`'s letters and digits (lowercased, ASCII only), each run of
    /// anything else one hyphen, cut at a hyphen to [`MAX_SLUG_LEN`]: `Submariner Date
    /// 126610LN` gives `submariner-date-126610ln`. `None` when `text` has no ASCII letter or
    /// digit.
    pub fn derive(text: &str) -> Option<Slug> {
        let lowered = text.to_ascii_lowercase();
        let words: Vec<&str> = lowered
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|word| !word.is_empty())
            .collect();
        let mut slug = String::new();
        for word in words {
            let extra = usize::from(!slug.is_empty()) + word.len();
            if slug.len() + extra > MAX_SLUG_LEN {
                break;
            }
            if !slug.is_empty() {
                slug.push('-');
            }
            slug.push_str(word);
        }
        Slug::parse(&slug).ok()
    }

    /// `self` with `-n` appended (`-2`, `-3`, …), kept within [`MAX_SLUG_LEN`] by shortening
    /// the slug at a hyphen: the next slug to try when this one is taken.
    pub fn numbered(&self, n: u32) -> Slug {
        let suffix = format!("-{n}");
        let mut base = self.0.as_str();
        while base.len() + suffix.len() > MAX_SLUG_LEN {
            base = match base.rfind('-') {
                Some(cut) => &base[..cut],
                None => &base[..MAX_SLUG_LEN - suffix.len()],
            };
        }
        Slug(format!("{base}{suffix}"))
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
    fn derives_slugs_from_names_and_references() {
        let derive = |text| Slug::derive(text).map(|s| s.to_string());
        assert_eq!(
            derive("Submariner Date 126610LN").as_deref(),
            Some("submariner-date-126610ln")
        );
        assert_eq!(
            derive("  GMT-Master II / 126710.BLRO ").as_deref(),
            Some("gmt-master-ii-126710-blro")
        );
        assert_eq!(derive("1926 ¡91450!").as_deref(), Some("1926-91450"));
        assert_eq!(derive("--- ¿? ---"), None);
        let long = format!("{} 126610LN", "word ".repeat(40));
        let slug = Slug::derive(&long).expect("slug");
        assert!(slug.as_str().len() <= MAX_SLUG_LEN, "{slug}");
        assert!(!slug.as_str().ends_with('-'));
        let numbered = slug.numbered(12);
        assert!(numbered.as_str().ends_with("-12") && numbered.as_str().len() <= MAX_SLUG_LEN);
        assert_eq!(Slug::parse(numbered.as_str()).as_ref(), Ok(&numbered));
        assert_eq!(
            Slug::derive("a").map(|s| s.numbered(2).to_string()),
            Some("a-2".to_owned())
        );
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
