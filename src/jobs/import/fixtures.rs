//! The bundled catalogue and provider feeds in `fixtures/`, embedded in the binary so `serve` works from any
//! directory on a fresh machine.

use super::DatasetSource;
use std::io::BufRead;

const FILES: &[(&str, &str)] = &[
    (
        "brands.jsonl",
        include_str!("../../../fixtures/brands.jsonl"),
    ),
    (
        "series.jsonl",
        include_str!("../../../fixtures/series.jsonl"),
    ),
    (
        "complications.jsonl",
        include_str!("../../../fixtures/complications.jsonl"),
    ),
    (
        "calibers.jsonl",
        include_str!("../../../fixtures/calibers.jsonl"),
    ),
    (
        "models.jsonl",
        include_str!("../../../fixtures/models.jsonl"),
    ),
    (
        "providers.jsonl",
        include_str!("../../../fixtures/providers.jsonl"),
    ),
    ("rates.xml", include_str!("../../../fixtures/rates.xml")),
    (
        "listings/chrono24.jsonl",
        include_str!("../../../fixtures/listings/chrono24.jsonl"),
    ),
    (
        "listings/ebay.jsonl",
        include_str!("../../../fixtures/listings/ebay.jsonl"),
    ),
    (
        "listings/watchbox.jsonl",
        include_str!("../../../fixtures/listings/watchbox.jsonl"),
    ),
];

/// The embedded fixtures as a dataset.
pub struct EmbeddedFixtures;

impl EmbeddedFixtures {
    /// The text of the bundled file `file` (`listings/chrono24.jsonl`), if there is one.
    pub fn text(file: &str) -> Option<&'static str> {
        FILES
            .iter()
            .find(|(name, _)| *name == file)
            .map(|(_, text)| *text)
    }
}

impl DatasetSource for EmbeddedFixtures {
    fn describe(&self) -> String {
        "the bundled fixtures".to_owned()
    }

    fn open(&self, file: &str) -> std::io::Result<Option<Box<dyn BufRead + '_>>> {
        Ok(EmbeddedFixtures::text(file).map(|text| Box::new(text.as_bytes()) as Box<dyn BufRead>))
    }
}
