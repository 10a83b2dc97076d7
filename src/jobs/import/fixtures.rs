//! The bundled catalogue and provider feeds in `fixtures/`, embedded in the binary so `serve` works from any
//! directory on a fresh machine.

use super::{DatasetSource, RelativePath};
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

/// The fixtures' own pictures (drawn by `fixtures/tools/draw_pictures.py`), which models.jsonl
/// names by path: the demo shows them at once, with no network.
const PICTURES: &[(&str, &[u8])] = &[
    (
        "pictures/gmt-master-ii-116710ln.png",
        include_bytes!("../../../fixtures/pictures/gmt-master-ii-116710ln.png"),
    ),
    (
        "pictures/explorer-124270.png",
        include_bytes!("../../../fixtures/pictures/explorer-124270.png"),
    ),
    (
        "pictures/heritage-black-bay-79220r.png",
        include_bytes!("../../../fixtures/pictures/heritage-black-bay-79220r.png"),
    ),
    (
        "pictures/seamaster-diver-300m-co-axial-2220-80.png",
        include_bytes!("../../../fixtures/pictures/seamaster-diver-300m-co-axial-2220-80.png"),
    ),
    (
        "pictures/seiko-automatic-sarb033.png",
        include_bytes!("../../../fixtures/pictures/seiko-automatic-sarb033.png"),
    ),
    (
        "pictures/tangente-101.png",
        include_bytes!("../../../fixtures/pictures/tangente-101.png"),
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

    fn picture(&self, path: &RelativePath) -> std::io::Result<Option<Vec<u8>>> {
        let wanted = path.0.to_str();
        Ok(PICTURES
            .iter()
            .find(|(name, _)| Some(*name) == wanted)
            .map(|(_, bytes)| bytes.to_vec()))
    }
}

/// Test set-up: the bundled fixtures imported by `turn`, their picture files kept in a media
/// store under `dir` (an import without one refuses them).
#[cfg(test)]
pub(crate) fn import_fixtures(
    turn: &crate::store::WriteTurn<'_>,
    dir: &std::path::Path,
) -> super::ImportReport {
    let media = crate::media::MediaStore::new(dir.join("fixture-media"));
    super::import_with_media(turn, &EmbeddedFixtures, Some(&media)).expect("fixtures")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every picture models.jsonl names by path is embedded, and is an image.
    #[test]
    fn every_picture_the_models_name_by_path_is_embedded() {
        let models = EmbeddedFixtures::text("models.jsonl").unwrap_or_default();
        let mut named = 0;
        for line in models.lines() {
            let model: serde_json::Value = serde_json::from_str(line).expect("a model");
            for picture in model["pictures"].as_array().into_iter().flatten() {
                let url = picture["url"].as_str().unwrap_or_default();
                if url.starts_with("pictures/") {
                    let path = RelativePath::parse(url).expect("a path in the dataset");
                    let bytes = EmbeddedFixtures.picture(&path).expect("read").expect(url);
                    image::load_from_memory(&bytes).expect(url);
                    named += 1;
                }
            }
        }
        assert_eq!(
            named,
            PICTURES.len(),
            "each embedded picture is one a model names"
        );
    }
}
