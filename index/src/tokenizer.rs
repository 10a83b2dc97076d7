//! Tokenizers. `reference_prefix` turns each normalised reference into its short prefixes, so
//! a term lookup finds `126610ln` from `12661` (a longer prefix reads whole references' terms).
//! `folded` is the text analyzer: words, lowercased, accents folded (`Söhne` finds `sohne`).

use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer, Token,
    TokenStream, Tokenizer,
};
use tantivy::Index;

/// Name under which the reference tokenizer is registered.
pub const REFERENCE_PREFIX: &str = "reference_prefix";
/// Name under which the text analyzer is registered.
pub const FOLDED: &str = "folded";
/// Shortest prefix indexed and searched: shorter ones would match most of a brand.
pub const MIN_REFERENCE_PREFIX: usize = 3;
/// Longest prefix indexed as a term. A longer one is shared by few references, so a search
/// reads the range of whole references that start with it instead: the longer prefixes were
/// nearly one unique term each per reference, most of what indexing the catalogue's prefixes
/// cost (docs/decisions.md, D-42).
pub const MAX_INDEXED_REFERENCE_PREFIX: usize = 6;

/// Whether `prefix` is short enough to be a term of the prefix field.
pub fn is_indexed_prefix(prefix: &str) -> bool {
    prefix.chars().count() <= MAX_INDEXED_REFERENCE_PREFIX
}

/// Emits the prefixes of [`MIN_REFERENCE_PREFIX`] to [`MAX_INDEXED_REFERENCE_PREFIX`]
/// characters of each whitespace-separated normalised reference, and a reference shorter than
/// that minimum whole. Input is already normalised by the caller.
#[derive(Clone, Default)]
pub struct ReferencePrefixTokenizer {
    token: Token,
}

/// Token stream of [`ReferencePrefixTokenizer`].
pub struct ReferencePrefixStream<'a> {
    tokens: std::vec::IntoIter<Token>,
    current: &'a mut Token,
}

impl Tokenizer for ReferencePrefixTokenizer {
    type TokenStream<'a> = ReferencePrefixStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        let mut tokens = Vec::new();
        let mut offset = 0;
        for word in text.split_whitespace() {
            let start = text[offset..].find(word).map_or(offset, |i| offset + i);
            offset = start + word.len();
            let ends = word
                .char_indices()
                .map(|(i, _)| i)
                .skip(1)
                .chain([word.len()]);
            for (chars, end) in ends.enumerate().map(|(n, end)| (n + 1, end)) {
                if chars > MAX_INDEXED_REFERENCE_PREFIX {
                    break;
                }
                if chars < MIN_REFERENCE_PREFIX && end < word.len() {
                    continue;
                }
                tokens.push(Token {
                    offset_from: start,
                    offset_to: start + end,
                    position: tokens.len(),
                    text: word[..end].to_owned(),
                    position_length: 1,
                });
            }
        }
        ReferencePrefixStream {
            tokens: tokens.into_iter(),
            current: &mut self.token,
        }
    }
}

impl TokenStream for ReferencePrefixStream<'_> {
    fn advance(&mut self) -> bool {
        match self.tokens.next() {
            Some(token) => {
                *self.current = token;
                true
            }
            None => false,
        }
    }
    fn token(&self) -> &Token {
        self.current
    }
    fn token_mut(&mut self) -> &mut Token {
        self.current
    }
}

/// The analyzer for names and descriptions.
pub fn folded_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// Registers both tokenizers on `index`; needed on every open, tantivy does not persist them.
pub fn register(index: &Index) {
    index
        .tokenizers()
        .register(REFERENCE_PREFIX, ReferencePrefixTokenizer::default());
    index.tokenizers().register(FOLDED, folded_analyzer());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<String> {
        let mut tokenizer = ReferencePrefixTokenizer::default();
        let mut stream = tokenizer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    #[test]
    fn emits_prefixes_from_three_to_six_characters_and_a_short_reference_whole() {
        assert_eq!(tokens("126610ln"), ["126", "1266", "12661", "126610"]);
        assert_eq!(tokens("ab 5711"), ["ab", "571", "5711"]);
        assert_eq!(tokens("ßü1234"), ["ßü1", "ßü12", "ßü123", "ßü1234"]);
        assert!(tokens("").is_empty());
        assert!(is_indexed_prefix("126610") && !is_indexed_prefix("126610l"));
    }
}
