//! Reading sellers' free text (titles, reference fields) for brand names and references: the
//! text is cut into tokens at whitespace and punctuation, and short runs of tokens become
//! candidate keys, each with the span of tokens it covers so that a longer hit can win.

use super::normalize_reference;
use std::borrow::Cow;

/// Longest run of tokens tried as a brand or a reference (`Jaeger Le Coultre`, `16610 T LV`).
pub const MAX_RUN: usize = 3;

/// A stretch of seller text that may be a brand name or a reference: tokens `start..end`,
/// normalised like a reference and joined.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TextRun {
    pub start: usize,
    pub end: usize,
    pub key: String,
}

impl TextRun {
    /// True when `other` lies inside this run and is shorter.
    pub fn covers(&self, other: &TextRun) -> bool {
        self.start <= other.start
            && other.end <= self.end
            && self.end - self.start > other.end - other.start
    }
}

/// Every candidate run of `text`:
/// - runs of 1 to [`MAX_RUN`] tokens, tokens being the letters and digits between whitespace
///   and punctuation (`Ref.16800` -> `16800`, `16610-LV` -> `16610`, `16610lv`);
/// - the same runs with letters glued in front of the first token's digits left out
///   (`Ref116610LN` -> `116610ln`, `Date16613` -> `16613`);
/// - every whitespace-separated word whole, however many tokens it holds
///   (`310.30.42.50.01.001`).
///
/// HTML entities that scrapers leave in titles (`&amp;`) are decoded first, so their names
/// never become tokens. A seller's stock or lot number (`#160-1`, `No. 4471`, `Lot 12`; see
/// [`is_stock_number`]) is no run, nor part of one. Each key appears once per span.
pub fn text_runs(text: &str) -> Vec<TextRun> {
    let text = decode_entities(text);
    let Tokens {
        tokens,
        long_words,
        barred,
    } = tokens_of(&text);
    // Sized up front: growing it from empty was a share of the time spent here.
    let mut runs = Vec::with_capacity(text.len());
    for (first, end, word) in long_words {
        let from = runs.len();
        push_run(&mut runs, from, first, end, &normalize_reference(word));
    }
    // Each token normalised once, not once per run it ends (this runs for every title of an
    // ingest: docs/decisions.md, D-29).
    let normalized: Vec<String> = tokens.iter().map(|t| normalize_reference(t)).collect();
    for start in 0..tokens.len() {
        // Runs of different spans never coincide: only the two heads of one start can repeat
        // a run, so a new run is checked against this start's runs alone.
        if barred[start] {
            continue;
        }
        let from = runs.len();
        let last = (start + 1..(start + MAX_RUN).min(tokens.len()))
            .find(|&at| barred[at])
            .unwrap_or((start + MAX_RUN).min(tokens.len()));
        let tail: usize = normalized[start + 1..last].iter().map(String::len).sum();
        let glued = without_glued_letters(tokens[start]).map(normalize_reference);
        for head in [Some(&normalized[start]), glued.as_ref()]
            .into_iter()
            .flatten()
        {
            let mut key = String::with_capacity(head.len() + tail);
            key.push_str(head);
            push_run(&mut runs, from, start, start + 1, &key);
            for end in start + 2..=last {
                key.push_str(&normalized[end - 1]);
                push_run(&mut runs, from, start, end, &key);
            }
        }
    }
    runs
}

/// Seller text cut for [`text_runs`].
struct Tokens<'t> {
    tokens: Vec<&'t str>,
    /// The whitespace-separated words of more than [`MAX_RUN`] tokens, each with the span of
    /// tokens it covers.
    long_words: Vec<(usize, usize, &'t str)>,
    /// Per token, whether it belongs to a stock number.
    barred: Vec<bool>,
}

/// The tokens of `text`, its long words, and which tokens are a stock number's.
fn tokens_of(text: &str) -> Tokens<'_> {
    let mut tokens: Vec<&str> = Vec::with_capacity(text.len() / 4 + 1);
    let mut barred: Vec<bool> = Vec::with_capacity(tokens.capacity());
    let mut long_words = Vec::new();
    let mut before: [&str; 2] = ["", ""];
    for word in text.split_whitespace() {
        let first = tokens.len();
        tokens.extend(
            word.split(|c: char| !c.is_alphanumeric())
                .filter(|t| !t.is_empty()),
        );
        let stock = is_stock_number(before, word);
        barred.resize(tokens.len(), stock);
        if tokens.len() - first > MAX_RUN && !stock {
            long_words.push((first, tokens.len(), word));
        }
        before = [before[1], word];
    }
    Tokens {
        tokens,
        long_words,
        barred,
    }
}

/// Words that, glued to `#` and a number, name a seller's own stock or lot number (`Lot#12`,
/// `SKU#A-1`), not a reference.
const STOCK_MARKERS: [&str; 6] = ["lot", "stock", "sku", "item", "inventory", "listing"];
/// Words after which `No.` or `#` introduces the reference itself (`Ref. No. 16610`).
const REFERENCE_MARKERS: [&str; 3] = ["ref", "reference", "model"];

/// Whether `word`, after the two words `before` it, is a seller's stock or lot number: a word
/// with a digit that starts with `#` (`Warranty #160-1`) or with a stock word and `#`
/// (`Lot#12`), or a number after `No.` or `Nr` (`No. 4471`). Not after a word that names the
/// reference: `Ref #16610` and `Ref. No. 16610` are the reference; nor `No Date`, nor
/// `lot 16610 or 126610LN` (a lot of watches).
fn is_stock_number(before: [&str; 2], word: &str) -> bool {
    // Every title of an ingest passes here: words are compared as written, nothing allocated.
    let is = |w: &str, names: &[&str]| {
        let bare = w.trim_matches(|c: char| !c.is_alphanumeric());
        names.iter().any(|name| bare.eq_ignore_ascii_case(name))
    };
    if !word.bytes().any(|b| b.is_ascii_digit()) {
        return false;
    }
    if word.starts_with('#') {
        return !is(before[1], &REFERENCE_MARKERS);
    }
    let glued = STOCK_MARKERS.iter().any(|marker| {
        word.get(..marker.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(marker))
            && word[marker.len()..].starts_with('#')
    });
    if glued {
        return true;
    }
    let numbered = word
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .starts_with(|c: char| c.is_ascii_digit());
    numbered && is(before[1], &["no", "nr"]) && !is(before[0], &REFERENCE_MARKERS)
}

/// Pushes the run unless its key is empty or `runs[from..]` holds it already.
fn push_run(runs: &mut Vec<TextRun>, from: usize, start: usize, end: usize, key: &str) {
    let known = runs[from..]
        .iter()
        .any(|r| r.start == start && r.end == end && r.key == key);
    if !key.is_empty() && !known {
        runs.push(TextRun {
            start,
            end,
            key: key.to_owned(),
        });
    }
}

/// `Ref116610LN` -> `116610LN`: the token less the letters in front of its first digit, when
/// it has both.
fn without_glued_letters(token: &str) -> Option<&str> {
    let rest = token.trim_start_matches(|c: char| c.is_alphabetic());
    (rest.len() < token.len() && rest.starts_with(|c: char| c.is_ascii_digit())).then_some(rest)
}

/// The few HTML entities scraped titles carry (`&amp;`, `&quot;`, `&#39;`, `&#x27;`, `&nbsp;`),
/// decoded; anything else is left as written.
pub fn decode_entities(text: &str) -> Cow<'_, str> {
    if !text.contains('&') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        match rest
            .find(';')
            .and_then(|end| Some((entity(&rest[1..end])?, end)))
        {
            Some((decoded, end)) => {
                out.push(decoded);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

fn entity(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "nbsp" => Some(' '),
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `text_runs` as first written (its tokens cut the same way), every run checked against
    /// all before it and every token normalised per run: the reference the faster one is held to.
    fn text_runs_simply(text: &str) -> Vec<TextRun> {
        let text = decode_entities(text);
        let Tokens {
            tokens,
            long_words,
            barred,
        } = tokens_of(&text);
        let mut runs: Vec<TextRun> = Vec::new();
        let push = |runs: &mut Vec<TextRun>, start, end, key: String| {
            let run = TextRun { start, end, key };
            if !run.key.is_empty() && !runs.contains(&run) {
                runs.push(run);
            }
        };
        for (first, end, word) in long_words {
            push(&mut runs, first, end, normalize_reference(word));
        }
        for start in 0..tokens.len() {
            let heads = [Some(tokens[start]), without_glued_letters(tokens[start])];
            for head in heads.into_iter().flatten() {
                let mut key = normalize_reference(head);
                if barred[start] {
                    break;
                }
                push(&mut runs, start, start + 1, key.clone());
                for end in start + 2..=(start + MAX_RUN).min(tokens.len()) {
                    if barred[end - 1] {
                        break;
                    }
                    key.push_str(&normalize_reference(tokens[end - 1]));
                    push(&mut runs, start, end, key.clone());
                }
            }
        }
        runs
    }

    #[test]
    fn a_sellers_stock_or_lot_number_is_no_reference() {
        let title =
            "Rolex Submariner 16613 40mm Steel & Gold Serti Diamond Automatic Warranty #160-1";
        assert!(!has(title, "1601") && !has(title, "160") && has(title, "16613"));
        for (text, not, still) in [
            ("Omega Speedmaster No. 4471 3570.50", "4471", "357050"),
            ("Tudor Black Bay Nr 5521 79230N", "5521", "79230n"),
            ("Rolex Datejust Lot#16234 estate", "16234", "datejust"),
            ("Seiko SKX007 Stock#A-1234", "a1234", "skx007"),
            ("Rolex 16610 item #77", "77", "16610"),
        ] {
            assert!(!has(text, not), "{text}: {not} read as a reference");
            assert!(has(text, still), "{text}: {still} lost");
        }
        // `No.` after `Ref.` introduces the reference itself.
        assert!(has("Rolex Submariner Ref. No. 16610 box", "16610"));
        assert!(has("Rolex Model No 16610", "16610"));
        // A lot of watches is not a lot number.
        assert!(has("Rolex Submariner lot 16610 or 126610LN", "16610"));
        // A stock number never joins its neighbours into a run.
        assert!(!has("Rolex 1660 #1 LV", "16601"));
    }

    fn keys(text: &str) -> Vec<String> {
        text_runs(text).into_iter().map(|r| r.key).collect()
    }

    fn has(text: &str, key: &str) -> bool {
        keys(text).iter().any(|k| k == key)
    }

    #[test]
    fn references_glued_to_punctuation_are_read() {
        for (text, key) in [
            ("Rolex Submariner Date Ref.16800 Matte Dial", "16800"),
            ("Rolex Submariner ref.5513", "5513"),
            ("Rolex Submariner (No Date)5513", "5513"),
            ("Rolex Submariner REF:16610 Box", "16610"),
            ("Rolex Submariner 16610-LV Kermit", "16610lv"),
            ("Rolex Submariner Ref 116610LN, full set", "116610ln"),
            ("Rolex Submariner Ref116610LN", "116610ln"),
            ("Rolex Submariner Date16613 Steel & Gold", "16613"),
            ("Rolex Submariner Ref116610 LN", "116610ln"),
            ("Omega Speedmaster 310.30.42.50.01.001", "31030425001001"),
            ("Rolex Submariner Ref.16610 T LV", "16610tlv"),
            ("SM W6701004", "w6701004"),
        ] {
            assert!(has(text, key), "{key} in {text}: {:?}", keys(text));
        }
    }

    #[test]
    fn runs_stop_at_three_tokens() {
        assert!(has("Jaeger Le Coultre 126610 LN", "jaegerlecoultre"));
        assert!(!has("Jaeger Le Coultre 126610 LN", "jaegerlecoultre126610"));
    }

    #[test]
    fn longer_runs_cover_the_shorter_runs_inside_them() {
        let runs = text_runs("16610 LV");
        let find = |key: &str| runs.iter().find(|r| r.key == key).expect("run");
        assert!(find("16610lv").covers(find("16610")));
        assert!(!find("16610").covers(find("16610lv")));
        assert!(
            !find("16610lv").covers(find("16610lv")),
            "a run does not cover itself"
        );
    }

    #[test]
    fn entities_are_decoded_and_never_become_tokens() {
        assert_eq!(decode_entities("Box &amp; Papers"), "Box & Papers");
        assert_eq!(
            decode_entities("&quot;Kermit&quot; &#39;LV&#x27;"),
            "\"Kermit\" 'LV'"
        );
        assert_eq!(
            decode_entities("AT&T & co &unknown; &"),
            "AT&T & co &unknown; &"
        );
        assert!(!has("Steel &amp; Gold 16613", "amp"));
        assert!(!has("&#39;16610&#39;", "391661039"));
        assert!(has("&#39;16610&#39;", "16610"));
    }

    proptest! {
        #[test]
        fn the_runs_are_those_of_the_simple_reading(
            text in "([A-Za-z0-9.\\-/ ]|Ref|&amp;|é|ß|Ⅻ|\\PC){0,60}"
        ) {
            prop_assert_eq!(text_runs(&text), text_runs_simply(&text));
        }

        #[test]
        fn every_run_lies_within_the_tokens_and_is_a_reference_key(text in "\\PC{0,60}") {
            let tokens = decode_entities(&text)
                .split(|c: char| !c.is_alphanumeric())
                .filter(|t| !t.is_empty())
                .count();
            for run in text_runs(&text) {
                prop_assert!(run.start < run.end && run.end <= tokens, "{run:?} of {tokens}");
                prop_assert!(!run.key.is_empty());
                prop_assert_eq!(normalize_reference(&run.key), run.key.clone());
            }
        }

        #[test]
        fn a_reference_between_any_punctuation_is_found(
            reference in "[0-9]{4,6}[A-Z]{0,2}",
            before in "[ .:(#]{1,2}",
            after in "[ ,.)-]{1,2}",
        ) {
            let text = format!("Rolex Submariner Ref{before}{reference}{after}Box");
            prop_assert!(has(&text, &normalize_reference(&reference)));
        }
    }
}
