//! Reference-number normalisation: the one function that import, matching, search and the
//! duplicate finder share, so `126610 LN`, `126610-ln` and `126610LN` are one key everywhere.

/// Case-folds `reference` and keeps only its letters and digits. Folding comes first: some
/// letters fold to more than one character (`İ` to `i` and a combining dot), and what is not a
/// letter or digit after folding is dropped, so normalising a key again never changes it.
pub fn normalize_reference(reference: &str) -> String {
    reference
        .chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
        fn output_is_alphanumeric_and_already_lowercase(s in "\\PC{0,40}") {
            let key = normalize_reference(&s);
            // Some letters (`𝒢`) count as uppercase yet have no lowercase form: what matters
            // is that folding again changes nothing.
            prop_assert!(key.chars().all(|c| c.is_alphanumeric() && c.to_lowercase().eq([c])));
        }
    }
}
