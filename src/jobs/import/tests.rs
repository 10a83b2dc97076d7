use super::*;
use crate::domain::ModelId;
use std::path::Path;

struct Dataset(tempfile::TempDir);

impl Dataset {
    fn new(files: &[(&str, &str)]) -> Dataset {
        let dir = tempfile::tempdir().expect("dir");
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).expect("write");
        }
        Dataset(dir)
    }
    fn source(&self) -> DirectorySource {
        DirectorySource(self.0.path().to_owned())
    }
}

fn store(dir: &Path) -> Store {
    Store::open(dir, 1 << 20).expect("store")
}

const BRANDS: &str = r#"{"slug":"rolex","name":"Rolex"}"#;
const SERIES: &str = r#"{"slug":"submariner","brand":"rolex","name":"Submariner"}"#;
const MODEL: &str = r#"{"slug":"sub","brand":"rolex","series":"submariner","name":"Submariner","referenceNumber":"124060","pictures":[{"url":"https://x/front.jpg","type":"FRONT"}]}"#;

fn counts(report: &ImportReport, kind: &str) -> KindCounts {
    report
        .kinds
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, c)| *c)
        .expect("kind")
}

#[test]
fn a_changed_record_is_updated_in_place_keeping_its_id_creation_time_and_picture_ids() {
    let data = tempfile::tempdir().expect("dir");
    let store = store(data.path());
    let first = Dataset::new(&[
        ("brands.jsonl", BRANDS),
        ("series.jsonl", SERIES),
        ("models.jsonl", MODEL),
    ]);
    import(&store, &first.source()).expect("first import");
    let slug = Slug::parse("sub").expect("slug");
    let before = store
        .model_by_slug(BrandId(1), &slug)
        .expect("read")
        .expect("model");

    std::thread::sleep(std::time::Duration::from_millis(5));
    let changed = MODEL.replace(r#""pictures""#, r#""diameter":41,"pictures""#);
    let second = Dataset::new(&[
        ("brands.jsonl", BRANDS),
        ("series.jsonl", SERIES),
        ("models.jsonl", &changed),
    ]);
    let report = import(&store, &second.source()).expect("second import");
    assert_eq!(
        counts(&report, "models"),
        KindCounts {
            created: 0,
            updated: 1,
            unchanged: 0
        }
    );
    assert_eq!(
        counts(&report, "brands"),
        KindCounts {
            created: 0,
            updated: 0,
            unchanged: 1
        }
    );
    assert_eq!(report.generation, StoreGeneration(2));

    let after = store.model(before.id).expect("read").expect("model");
    assert_eq!(after.spec.diameter, Some(41.0));
    assert_eq!(after.created_at, before.created_at);
    assert!(after.updated_at > before.updated_at);
    assert_eq!(after.pictures[0].id, before.pictures[0].id);
    assert_eq!(
        store
            .model_ids_by_reference(BrandId(1), "124060")
            .expect("ref"),
        vec![ModelId(1)]
    );
}

#[test]
fn a_changed_reference_moves_the_reference_key() {
    let data = tempfile::tempdir().expect("dir");
    let store = store(data.path());
    let first = Dataset::new(&[
        ("brands.jsonl", BRANDS),
        ("series.jsonl", SERIES),
        ("models.jsonl", MODEL),
    ]);
    import(&store, &first.source()).expect("import");
    let renamed = MODEL.replace("124060", "114060");
    let second = Dataset::new(&[("models.jsonl", &renamed)]);
    import(&store, &second.source()).expect("import");
    assert!(store
        .model_ids_by_reference(BrandId(1), "124060")
        .expect("ref")
        .is_empty());
    assert_eq!(
        store
            .model_ids_by_reference(BrandId(1), "114060")
            .expect("ref"),
        vec![ModelId(1)]
    );
}

#[test]
fn parents_already_in_the_store_resolve_in_a_later_import() {
    let data = tempfile::tempdir().expect("dir");
    let store = store(data.path());
    import(
        &store,
        &Dataset::new(&[("brands.jsonl", BRANDS), ("series.jsonl", SERIES)]).source(),
    )
    .expect("import");
    let report =
        import(&store, &Dataset::new(&[("models.jsonl", MODEL)]).source()).expect("import");
    assert_eq!(counts(&report, "models").created, 1);
}

#[test]
fn problems_are_all_reported_and_nothing_is_written() {
    let data = tempfile::tempdir().expect("dir");
    let store = store(data.path());
    let brands = format!("{BRANDS}\n{{\"slug\":\"highlighted\",\"name\":\"H\"}}\n{{\"slug\":\"Bad Slug\",\"name\":\"B\"}}\n[1]\n");
    let models = format!(
        "{MODEL}\n{}",
        MODEL
            .replace("FRONT", "TOP")
            .replace(r#""sub""#, r#""sub2""#)
    );
    let dataset = Dataset::new(&[
        ("brands.jsonl", &brands),
        ("series.jsonl", SERIES),
        ("models.jsonl", &models),
    ]);
    let Err(ImportError::Invalid(problems)) = import(&store, &dataset.source()) else {
        panic!("the import should be rejected");
    };
    let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(shown.len(), 4, "{shown:#?}");
    assert!(
        shown[0].starts_with("brands.jsonl:4: expected a JSON object"),
        "{shown:#?}"
    );
    assert!(
        shown[1].starts_with("brands.jsonl:2: field `slug`: `highlighted` is reserved"),
        "{shown:#?}"
    );
    assert!(
        shown[2].starts_with("brands.jsonl:3: field `slug`: `Bad Slug` is not a slug"),
        "{shown:#?}"
    );
    assert!(
        shown[3].starts_with("models.jsonl:2: field `pictures`: unknown picture type `TOP`"),
        "{shown:#?}"
    );
    assert!(store.is_empty().expect("empty"));
    assert_eq!(store.generation().expect("generation"), StoreGeneration(0));
}
