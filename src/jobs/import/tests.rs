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
    import(&store.write_turn(), &first.source()).expect("first import");
    let slug = Slug::parse("sub").expect("slug");
    let before = store
        .catalogue()
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
    let report = import(&store.write_turn(), &second.source()).expect("second import");
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

    let after = store
        .catalogue()
        .model(before.id)
        .expect("read")
        .expect("model");
    assert_eq!(after.spec.diameter, Some(41.0));
    assert_eq!(after.created_at, before.created_at);
    assert!(after.updated_at > before.updated_at);
    assert_eq!(after.pictures[0].id, before.pictures[0].id);
    assert_eq!(
        store
            .catalogue()
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
    import(&store.write_turn(), &first.source()).expect("import");
    let renamed = MODEL.replace("124060", "114060");
    let second = Dataset::new(&[("models.jsonl", &renamed)]);
    import(&store.write_turn(), &second.source()).expect("import");
    assert!(store
        .catalogue()
        .model_ids_by_reference(BrandId(1), "124060")
        .expect("ref")
        .is_empty());
    assert_eq!(
        store
            .catalogue()
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
        &store.write_turn(),
        &Dataset::new(&[("brands.jsonl", BRANDS), ("series.jsonl", SERIES)]).source(),
    )
    .expect("import");
    let report = import(
        &store.write_turn(),
        &Dataset::new(&[("models.jsonl", MODEL)]).source(),
    )
    .expect("import");
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
    let Err(ImportError::Invalid(problems)) = import(&store.write_turn(), &dataset.source()) else {
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

const ETA: &str = r#"{"slug":"eta","name":"ETA"}"#;

fn calibre(slug: &str, parent: Option<&str>) -> String {
    match parent {
        Some(parent) => format!(
            r#"{{"slug":"{slug}","brand":"eta","reference":"{slug}","parent":"eta/{parent}"}}"#
        ),
        None => format!(r#"{{"slug":"{slug}","brand":"eta","reference":"{slug}"}}"#),
    }
}

fn import_calibres(store: &Store, lines: &[String]) -> Result<ImportReport, ImportError> {
    let calibres = lines.join("\n");
    let dataset = Dataset::new(&[("brands.jsonl", ETA), ("calibers.jsonl", &calibres)]);
    import(&store.write_turn(), &dataset.source())
}

fn rejected_with(store: &Store, lines: &[String]) -> Vec<String> {
    match import_calibres(store, lines) {
        Err(ImportError::Invalid(problems)) => problems.iter().map(ToString::to_string).collect(),
        other => panic!("the import should be rejected, got {other:?}"),
    }
}

#[test]
fn a_parent_may_come_after_its_children() {
    let data = tempfile::tempdir().expect("dir");
    let store = store(data.path());
    let lines = [
        calibre("2892-a2-dd", Some("2892-a2")),
        calibre("2892-a2", Some("2892")),
        calibre("2892", None),
    ];
    let report = import_calibres(&store, &lines).expect("import");
    assert_eq!(counts(&report, "calibers").created, 3);
    let slug = |s: &str| Slug::parse(s).expect("slug");
    let brand = store
        .catalogue()
        .brand_by_slug(&slug("eta"))
        .expect("read")
        .expect("eta");
    let by_slug = |s: &str| {
        store
            .catalogue()
            .caliber_by_slug(brand.id, &slug(s))
            .expect("read")
            .expect("calibre")
    };
    assert_eq!(by_slug("2892-a2-dd").parent_id, Some(by_slug("2892-a2").id));
    assert_eq!(by_slug("2892-a2").parent_id, Some(by_slug("2892").id));
    assert_eq!(by_slug("2892").parent_id, None);
    // The same file again changes nothing: ids resolve to what the store holds.
    let again = import_calibres(&store, &lines).expect("import");
    assert!(again.changed_nothing(), "{again}");
}

#[test]
fn a_parent_that_exists_nowhere_is_named_with_file_line_and_field() {
    let data = tempfile::tempdir().expect("dir");
    let store = store(data.path());
    let shown = rejected_with(
        &store,
        &[calibre("2892", None), calibre("2824-2", Some("2824"))],
    );
    assert_eq!(
        shown,
        ["calibers.jsonl:2: field `parent`: no calibre `eta/2824` in calibers.jsonl or the store"]
    );
    assert!(store.is_empty().expect("empty"));
}

#[test]
fn a_two_calibre_cycle_is_refused_naming_the_whole_cycle() {
    let data = tempfile::tempdir().expect("dir");
    let store = store(data.path());
    let shown = rejected_with(
        &store,
        &[
            calibre("base", None),
            calibre("a", Some("b")),
            calibre("b", Some("a")),
            calibre("c", Some("a")),
        ],
    );
    assert_eq!(
        shown,
        ["calibers.jsonl:2: field `parent`: parent cycle: eta/a -> eta/b -> eta/a"]
    );
    assert!(store.is_empty().expect("empty"));
}

#[test]
fn a_calibre_that_is_its_own_parent_is_refused() {
    let data = tempfile::tempdir().expect("dir");
    let store = store(data.path());
    let shown = rejected_with(&store, &[calibre("a", Some("a"))]);
    assert_eq!(
        shown,
        ["calibers.jsonl:1: field `parent`: a calibre cannot be its own parent: eta/a -> eta/a"]
    );
}

#[test]
fn a_cycle_through_a_stored_calibre_is_refused() {
    let data = tempfile::tempdir().expect("dir");
    let store = store(data.path());
    import_calibres(&store, &[calibre("a", None), calibre("b", Some("a"))]).expect("import");
    let generation = store.generation().expect("generation");
    // Re-parenting `a` onto its own child `b`, which this file does not mention.
    let shown = rejected_with(&store, &[calibre("a", Some("b"))]);
    assert_eq!(
        shown,
        ["calibers.jsonl:1: field `parent`: parent cycle: eta/a -> eta/b -> eta/a"]
    );
    assert_eq!(store.generation().expect("generation"), generation);
}

/// `n` models of one series, each with a front and a back picture on the web.
fn models_with_pictures(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                r#"{{"slug":"m{i}","brand":"rolex","series":"submariner","name":"Model {i}","referenceNumber":"R{i}","pictures":[{{"url":"https://x/{i}/front.jpg","type":"FRONT"}},{{"url":"https://x/{i}/back.jpg","type":"BACK"}}]}}"#
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn an_import_queues_its_new_pictures_sixteen_to_a_key_and_each_reads_back_pending() {
    use crate::domain::FetchState;
    let data = tempfile::tempdir().expect("dir");
    let store = store(data.path());
    let spaces = [
        RecordKind::PendingPictures,
        RecordKind::PictureState,
        RecordKind::PictureDue,
    ];
    let count = |store: &Store| spaces.map(|s| store.keys_in(s));
    let import_models = |models: &str| {
        let dataset = Dataset::new(&[
            ("brands.jsonl", BRANDS),
            ("series.jsonl", SERIES),
            ("models.jsonl", models),
        ]);
        import(&store.write_turn(), &dataset.source()).expect("import");
    };
    let first = models_with_pictures(40);
    import_models(&first);
    // 80 pictures, sixteen to a key: 5 keys, where a record and a due key each were 160.
    assert_eq!(count(&store), [5, 0, 0]);
    let pending_of = |store: &Store| {
        let mut ids = Vec::new();
        for model in store.catalogue().all_models() {
            for picture in model.expect("model").pictures {
                let record = store
                    .pictures()
                    .picture(picture.id)
                    .expect("read")
                    .expect("record");
                assert_eq!(record.state, FetchState::Pending);
                assert_eq!(record.source_url, picture.url);
                ids.push(picture.id);
            }
        }
        ids
    };
    let pictures = pending_of(&store);
    assert_eq!(pictures.len(), 80);
    let due = store.pictures().pictures_maybe_due().expect("due");
    assert_eq!(due.len(), 80);

    // Again, with one model's front picture changed: only that one is new and queued, in a
    // group of its own after the others.
    let changed = first.replace("https://x/7/front.jpg", "https://x/7/front-2.jpg");
    import_models(&changed);
    assert_eq!(count(&store), [6, 0, 0]);
    let after = pending_of(&store);
    assert_eq!(after.len(), 80);
    assert_eq!(after.iter().filter(|id| !pictures.contains(id)).count(), 1);
}
