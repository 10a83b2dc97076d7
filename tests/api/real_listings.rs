//! The matcher on real seller text: the hand-labelled sample of `tests/data/real-listings/`
//! (labels only, keyed by file and row) is matched against the listings' own text, read from
//! `../shared/data/listings/` (not in the project: the files carry no licence), so the test is
//! ignored unless asked for (`cargo test -- --ignored`, as CI does), and fails, saying why, when
//! that folder is absent. docs/matching-evaluation.md has the figures.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use watch_catalogue::domain::ListingDetails;
use watch_catalogue::jobs::import::{import, DirectorySource};
use watch_catalogue::jobs::matching::match_listing;
use watch_catalogue::store::Store;

/// Recall measured on the sample when the rule landed (docs/matching-evaluation.md); a change
/// that loses a match it used to make fails here. 333 of 363 since the series rule, which
/// leaves two titles naming another series `ambiguous` by design.
pub const RECALL_FLOOR: f64 = 0.917;

pub const TITLES: &str = "chrono24-rolex-submariner-titles.csv";
pub const REFERENCES: &str = "chrono24-cartier-ap.csv";

/// A row of the labelled sample (tests/data/real-listings/labels.jsonl).
#[derive(serde::Deserialize)]
pub struct Label {
    pub file: String,
    pub row: String,
    /// The brand of the feed the row was scraped from (the references file has no brand).
    pub brand: Option<String>,
    /// `brandSlug/modelSlug`, or null when the text does not say which catalogue model.
    pub model: Option<String>,
}

/// The real listings in `../shared/data/listings`; a test that asked for them fails, saying
/// where they were looked for, when they are absent (they are not part of the project).
pub fn shared_listings() -> PathBuf {
    let shared = project().join("../shared/data/listings");
    for file in [TITLES, REFERENCES] {
        assert!(
            shared.join(file).is_file(),
            "{} is absent: this test needs the real listings of ../shared/data/listings, which \
             are not part of the project (a plain `cargo test` ignores it)",
            shared.join(file).display()
        );
    }
    shared
}

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Column `text` of every row of a CSV file, keyed by column `key`.
pub fn column(path: &Path, key: &str, text: &str) -> HashMap<String, String> {
    let mut reader = csv::Reader::from_path(path).expect("csv");
    let headers = reader.headers().expect("headers").clone();
    let at = |name: &str| headers.iter().position(|h| h == name).expect(name);
    let (key, text) = (at(key), at(text));
    reader
        .records()
        .map(|row| {
            let row = row.expect("row");
            (row[key].to_owned(), row[text].to_owned())
        })
        .collect()
}

/// The listing a label's row describes, as an ingest would read it.
fn details(
    label: &Label,
    titles: &HashMap<String, String>,
    refs: &HashMap<String, String>,
) -> ListingDetails {
    let text = |rows: &HashMap<String, String>| {
        rows.get(&label.row)
            .unwrap_or_else(|| panic!("{} has no row {}", label.file, label.row))
            .trim()
            .to_owned()
    };
    let (title, reference) = match label.file.as_str() {
        TITLES => (Some(text(titles)), None),
        REFERENCES => (None, Some(text(refs))),
        other => panic!("unknown file {other}"),
    };
    ListingDetails {
        url: format!("{}#{}", label.file, label.row),
        title,
        scraped_brand: label.brand.clone(),
        scraped_reference: reference,
        ..ListingDetails::default()
    }
}

#[derive(Default, Debug)]
struct Tally {
    labelled: usize,
    right: usize,
    wrong: Vec<String>,
    missed: Vec<String>,
}

#[test]
#[ignore = "needs ../shared/data/listings (real seller text, not in the project): cargo test -- --ignored"]
fn real_seller_text_matches_with_full_precision_and_the_measured_recall() {
    let shared = shared_listings();
    let data = tempfile::tempdir().expect("dir");
    let store = Store::open(data.path(), 16 << 20).expect("store");
    let sample = project().join("tests/data/real-listings");
    import(
        &store.write_turn(),
        &DirectorySource(sample.join("catalogue")),
    )
    .expect("import the sample's catalogue");
    let titles = column(&shared.join(TITLES), "url", "name");
    let refs = column(&shared.join(REFERENCES), "", "reference");

    let labels = std::fs::read_to_string(sample.join("labels.jsonl")).expect("labels");
    let mut tallies: HashMap<String, Tally> = HashMap::new();
    for line in labels.lines() {
        let label: Label = serde_json::from_str(line).expect("label");
        let listing = details(&label, &titles, &refs);
        let matched = match_listing(&store, &listing).expect("match");
        let found = matched.model_id.map(|id| {
            let model = store.catalogue().model(id).expect("read").expect("model");
            let brand = store
                .catalogue()
                .brand(model.brand_id)
                .expect("read")
                .expect("brand");
            format!("{}/{}", brand.slug, model.slug)
        });
        let tally = tallies.entry(label.file.clone()).or_default();
        tally.labelled += usize::from(label.model.is_some());
        match (&found, &label.model) {
            (Some(found), Some(truth)) if found == truth => tally.right += 1,
            (Some(found), truth) => tally.wrong.push(format!(
                "{} row {}: {:?} matched {found}, labelled {truth:?}",
                label.file,
                label.row,
                listing.title.or(listing.scraped_reference)
            )),
            (None, Some(truth)) => tally.missed.push(format!(
                "row {}: {:?} is {truth}, left {:?}",
                label.row,
                listing.title.or(listing.scraped_reference),
                matched.outcome
            )),
            (None, None) => {}
        }
    }
    let (mut labelled, mut right) = (0, 0);
    for (file, tally) in &tallies {
        eprintln!(
            "{file}: {} labelled with a model, {} matched right, {} missed, {} wrong",
            tally.labelled,
            tally.right,
            tally.missed.len(),
            tally.wrong.len()
        );
        for missed in &tally.missed {
            eprintln!("  missed {missed}");
        }
        labelled += tally.labelled;
        right += tally.right;
    }
    let wrong: Vec<&String> = tallies.values().flat_map(|t| &t.wrong).collect();
    assert!(wrong.is_empty(), "precision below 100 %:\n{wrong:#?}");
    let recall = right as f64 / labelled as f64;
    eprintln!(
        "precision 100 %, recall {:.1} % ({right} of {labelled})",
        recall * 100.0
    );
    assert!(
        recall >= RECALL_FLOOR,
        "recall {recall:.3} below the floor {RECALL_FLOOR}"
    );
}
