//! Reference-number normalisation: the one function that import, matching, search and the
//! duplicate finder share, so `126610 LN`, `126610-ln` and `126610LN` are one key everywhere;
//! and the base that a reference's variants share, for the duplicate finder.

/// Case-folds `reference` and keeps only its letters and digits. Folding comes first: some
/// letters fold to more than one character (`İ` to `i` and a combining dot), and what is not a
/// letter or digit after folding is dropped, so normalising a key again never changes it.
pub fn normalize_reference(reference: &str) -> String {
    if reference.is_ascii() {
        return normalize_ascii(reference);
    }
    normalize_unicode(reference)
}

/// Nearly every reference and seller's word: one byte a character, each folding to one, and
/// ASCII's letters and digits are all the alphanumerics there are below 128. Going by bytes
/// skips Unicode's case tables; the ingest normalises every word of every title
/// (docs/decisions.md, D-29).
fn normalize_ascii(reference: &str) -> String {
    let mut key = String::with_capacity(reference.len());
    for byte in reference.bytes().filter(u8::is_ascii_alphanumeric) {
        key.push(char::from(byte.to_ascii_lowercase()));
    }
    key
}

fn normalize_unicode(reference: &str) -> String {
    reference
        .chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric())
        .collect()
}

/// Shortest base the duplicate finder pairs on: shorter ones (`57`, `3`) are shared by
/// unrelated watches.
pub const MIN_BASE_LEN: usize = 4;

/// The base of a reference, what its variants share (docs/decisions.md, D-133):
/// a trailing dial or bracelet segment is dropped (`5711/1A-010` and `-011`,
/// `310.30.42.50.01.001` and `.002`, `M79030N-0001`), then a trailing run of letters
/// (`126610LN`, `126610LV`), then a maker's one-letter prefix before the digits (`M126610LN`).
/// Normalised like [`normalize_reference`]; `None` when fewer than [`MIN_BASE_LEN`]
/// characters or no digit would be left.
pub fn reference_base(reference: &str) -> Option<String> {
    let segments: Vec<&str> = reference
        .split(|c: char| !c.is_alphanumeric())
        .filter(|s| !s.is_empty())
        .collect();
    let kept = match segments.split_last() {
        Some((last, rest)) if !rest.is_empty() && is_variant_segment(reference, last, rest) => rest,
        _ => &segments[..],
    };
    let joined = normalize_reference(&kept.concat());
    let without_letters = joined.trim_end_matches(|c: char| c.is_alphabetic());
    // A maker's prefix is one letter (`M79030N`); longer leading letters are the reference's
    // own (`XTP975J1`), and dropping them would pair every reference sharing its digits.
    let mut chars = without_letters.chars();
    let one_letter_prefix = chars.next().is_some_and(char::is_alphabetic)
        && chars.next().is_some_and(|c| c.is_ascii_digit());
    let base = if one_letter_prefix {
        &without_letters[without_letters.chars().next().map_or(0, char::len_utf8)..]
    } else {
        without_letters
    };
    let digits = base.chars().any(|c| c.is_ascii_digit());
    (digits && base.chars().count() >= MIN_BASE_LEN).then(|| base.to_owned())
}

/// A last segment that only says which dial or bracelet: digits after a hyphen
/// (`-010`, `-0001`), or the last of three or more segments (`.001`).
fn is_variant_segment(reference: &str, last: &str, rest: &[&str]) -> bool {
    let digits = last.chars().all(|c| c.is_ascii_digit());
    let after_hyphen = reference
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .strip_suffix(last)
        .is_some_and(|before| before.ends_with('-'));
    digits && (after_hyphen || rest.len() >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn variants_share_their_base() {
        for (a, b) in [
            ("126610LN", "126610LV"),
            ("5711/1A-010", "5711/1A-011"),
            ("310.30.42.50.01.001", "310.30.42.50.01.002"),
            ("M126610LN-0001", "126610LN"),
            ("M79030N-0001", "79030N"),
            ("16610", "16610LV"),
        ] {
            assert_eq!(reference_base(a), reference_base(b), "{a} / {b}");
            assert!(reference_base(a).is_some(), "{a}");
        }
        assert_eq!(reference_base("126610LN").as_deref(), Some("126610"));
        assert_eq!(reference_base("5711/1A-010").as_deref(), Some("57111"));
        assert_ne!(reference_base("126610LN"), reference_base("126710BLRO"));
        // A two-segment reference keeps its second segment: 2254.50 is no variant of 2254.80.
        assert_ne!(reference_base("2254.50"), reference_base("2254.80"));
        assert_eq!(reference_base("SARB"), None, "no digit");
        assert_eq!(reference_base("XTP975J1").as_deref(), Some("xtp975j1"));
        assert_ne!(reference_base("XTP975J1"), reference_base("ABC975J1"));
        assert_eq!(reference_base("57-1"), None, "too short");
    }

    #[test]
    fn spacing_case_and_punctuation_do_not_matter() {
        for spelling in [
            "126610LN",
            "126610 ln",
            "126610-LN",
            " 126610.ln ",
            "126610/LN",
        ] {
            assert_eq!(normalize_reference(spelling), "126610ln");
        }
        assert_eq!(normalize_reference("5711/1A-010"), "57111a010");
        assert_eq!(normalize_reference("--"), "");
        // `İ` folds to `i` and a combining dot above, which is no letter: dropped.
        assert_eq!(normalize_reference("İ"), "i");
        assert_eq!(normalize_reference(&normalize_reference("İ")), "i");
    }

    proptest! {
        #[test]
        fn ascii_text_normalises_as_unicode_rules_would(s in "[\\x00-\\x7f]{0,40}") {
            prop_assert_eq!(normalize_ascii(&s), normalize_unicode(&s));
        }

        #[test]
        fn normalisation_is_idempotent(s in "\\PC{0,40}") {
            let once = normalize_reference(&s);
            prop_assert_eq!(normalize_reference(&once), once.clone());
        }

        #[test]
        fn separators_never_change_the_key(s in "[A-Za-z0-9]{1,12}", sep in "[ ./_-]{0,3}") {
            let split = format!("{}{}{}", &s[..1], sep, &s[1..]);
            prop_assert_eq!(normalize_reference(&split), normalize_reference(&s));
        }

        #[test]
        fn a_letter_suffix_or_dial_code_never_changes_the_base(
            digits in "[1-9][0-9]{4,6}",
            letters in "[A-Z]{1,4}",
            code in "[0-9]{3,4}",
        ) {
            let plain = reference_base(&digits);
            prop_assert!(plain.is_some());
            prop_assert_eq!(&reference_base(&format!("{digits}{letters}")), &plain);
            prop_assert_eq!(&reference_base(&format!("{digits}{letters}-{code}")), &plain);
            prop_assert_eq!(&reference_base(&format!("M{digits}{letters}-{code}")), &plain);
        }

        #[test]
        fn the_base_ignores_case_and_spacing_and_is_a_normalised_key(s in "[A-Za-z0-9 ./-]{0,20}") {
            let base = reference_base(&s);
            prop_assert_eq!(&reference_base(&s.to_lowercase()), &base);
            if let Some(base) = base {
                prop_assert_eq!(normalize_reference(&base), base);
            }
        }

        #[test]
        fn output_is_alphanumeric_and_already_lowercase(s in "\\PC{0,40}") {
            let key = normalize_reference(&s);
            // Some letters (`𝒢`) count as uppercase yet have no lowercase form: what matters
            // is that folding again changes nothing.
            prop_assert!(key.chars().all(|c| c.is_alphanumeric() && c.to_lowercase().eq([c])));
        }
    }
}
