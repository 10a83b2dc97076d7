//! The duplicate finder below the API: the groups the server keeps between requests, joined
//! again after each write only around the models it touched, against the groups joined from
//! every stored pair (equal after each of a long run of random merges, dismissals, reference
//! edits and new models); and the full pass mending reference-base keys of another rule.

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::domain::{Model, ModelId};
use watch_catalogue::jobs::duplicates;
use watch_catalogue::jobs::import::{import, DirectorySource};
use watch_catalogue::jobs::merge;
use watch_catalogue::jobs::users::Actor;

/// A small deterministic generator: the run is the same on every machine.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// A reference from a small pool, so that many models share one, an alternate or a base.
fn reference(rng: &mut Lcg) -> String {
    let base = 1000 + rng.below(50);
    match rng.below(4) {
        0 => format!("{base}"),
        1 => format!("{base}LN"),
        2 => format!("{base}-00{}", rng.below(3)),
        _ => format!("M{base}"),
    }
}

fn model_line(rng: &mut Lcg, at: usize) -> String {
    let brand = ["rolex", "tudor"][at % 2];
    // Few alternates: each may bridge two groups.
    let alternates = match rng.below(5) {
        0 => format!(r#""{}""#, reference(rng)),
        _ => String::new(),
    };
    format!(
        r#"{{"slug":"m-{at}","brand":"{brand}","series":"{brand}-line","name":"Model {}","referenceNumber":"{}","alternateReferences":[{alternates}]}}"#,
        rng.below(5),
        reference(rng),
    )
}

fn write_dataset(dir: &Path, models: &str) {
    let brands = r#"{"slug":"rolex","name":"Rolex"}
{"slug":"tudor","name":"Tudor"}"#;
    let series = r#"{"slug":"rolex-line","brand":"rolex","name":"Line"}
{"slug":"tudor-line","brand":"tudor","name":"Line"}"#;
    std::fs::write(dir.join("brands.jsonl"), brands).expect("brands");
    std::fs::write(dir.join("series.jsonl"), series).expect("series");
    std::fs::write(dir.join("models.jsonl"), models).expect("models");
}

/// An app over an empty data dir, and a directory to write its datasets in.
fn empty_app() -> (tempfile::TempDir, tempfile::TempDir, App) {
    let data = tempfile::tempdir().expect("data dir");
    let dataset = tempfile::tempdir().expect("dataset");
    let app = App::open(&DataDir::new(data.path()), 1 << 24).expect("app");
    (data, dataset, app)
}

fn import_models(app: &App, dir: &Path, models: &str) {
    write_dataset(dir, models);
    let source = DirectorySource(dir.to_owned());
    app.writer()
        .run(|turn| import(turn, &source))
        .expect("import");
}

#[test]
fn groups_joined_again_around_a_write_equal_groups_joined_from_every_pair() {
    let (_data, dataset, app) = empty_app();
    let mut rng = Lcg(7);
    let mut models = String::new();
    let mut next = 0;
    for _ in 0..80 {
        writeln!(models, "{}", model_line(&mut rng, next)).expect("line");
        next += 1;
    }
    import_models(&app, dataset.path(), &models);
    let mut kept = app.duplicate_groups().expect("groups");
    assert!(kept.len() > 5, "the pool makes groups: {}", kept.len());
    let actor = Actor::Cli;
    let mut regrouped = 0;
    for step in 0..60 {
        let before = app
            .store()
            .duplicates()
            .duplicates_generation()
            .expect("generation");
        let group = kept[rng.below(kept.len())].clone();
        match rng.below(4) {
            0 => {
                let (keeper, duplicate) = (group.models[0], group.models[1]);
                app.writer()
                    .run(|turn| merge::merge(turn, app.listings(), &actor, keeper, &[duplicate]))
                    .expect("merge");
            }
            1 => {
                let ids: Vec<ModelId> = group.models.iter().take(3).copied().collect();
                app.writer()
                    .run(|turn| merge::dismiss(turn, &actor, &ids))
                    .expect("dismiss");
            }
            _ => {
                // A new model, or a grouped one edited: its slug again, other references.
                let at = if rng.below(2) == 0 {
                    next += 1;
                    next - 1
                } else {
                    let id = group.models[rng.below(group.models.len())];
                    let model = app
                        .store()
                        .catalogue()
                        .model(id)
                        .expect("read")
                        .expect("model");
                    model.slug.to_string()[2..].parse().expect("m-N")
                };
                import_models(&app, dataset.path(), &model_line(&mut rng, at));
            }
        }
        let after = app
            .store()
            .duplicates()
            .duplicates_generation()
            .expect("generation");
        if after != before {
            assert!(
                app.store()
                    .duplicates()
                    .duplicates_touched_between(before, after)
                    .expect("read")
                    .is_some(),
                "step {step}: the write's touched models are known"
            );
            regrouped += 1;
        }
        kept = app.duplicate_groups().expect("groups");
        let joined = duplicates::groups(app.store()).expect("all groups");
        assert_eq!(*kept, joined, "step {step}");
        if kept.is_empty() {
            break;
        }
    }
    assert!(regrouped > 30, "most steps changed pairs: {regrouped}");
}

fn base_keys(app: &App) -> HashSet<Vec<u8>> {
    app.store()
        .duplicates()
        .model_base_keys(&BTreeSet::new())
        .expect("keys")
        .into_iter()
        .collect()
}

/// Keys as another rule would have written them: `model` keyed under a base it does not have
/// instead of its keys `stored`.
fn skew_base_keys(app: &App, model: &Model, stored: &HashSet<Vec<u8>>) {
    let turn = app.store().write_turn();
    let mut batch = turn.batch().expect("batch");
    batch.remove_base_keys(stored.iter().cloned());
    let elsewhere = Model {
        reference_number: "77770LN".into(),
        ..model.clone()
    };
    let bases = elsewhere.reference_bases();
    batch.put_missing_base_keys(
        (elsewhere.brand_id, elsewhere.id),
        bases.iter().map(String::as_str),
        &mut HashSet::new(),
    );
    turn.commit_derived(batch).expect("commit");
}

#[test]
fn the_full_pass_brings_reference_base_keys_to_today_s_rule() {
    let (_data, dataset, app) = empty_app();
    let line = |slug: &str, reference: &str| {
        format!(
            r#"{{"slug":"{slug}","brand":"rolex","series":"rolex-line","name":"Sub","referenceNumber":"{reference}"}}"#
        )
    };
    import_models(&app, dataset.path(), &line("m-0", "1000LN"));
    let first = base_keys(&app);
    import_models(&app, dataset.path(), &line("m-1", "1000"));
    let today = base_keys(&app);
    let m0 = app
        .store()
        .catalogue()
        .model(ModelId(1))
        .expect("read")
        .expect("m-0");
    assert_eq!(m0.slug.to_string(), "m-0");
    let m0_pairs = || {
        app.store()
            .duplicates()
            .duplicate_pairs_of(m0.id)
            .expect("pairs")
    };
    assert!(!m0_pairs().is_empty());

    skew_base_keys(&app, &m0, &first);
    let skewed = base_keys(&app);
    assert_ne!(skewed, today);
    app.writer().run(duplicates::rebuild).expect("full pass");
    assert_eq!(
        base_keys(&app),
        today,
        "missing keys written, the stale one removed"
    );
    assert!(!m0_pairs().is_empty());

    // After a write, the models it created keep the keys it gave them: skewed again, m-0's are
    // mended only when m-0 is not taken for created.
    skew_base_keys(&app, &m0, &first);
    assert_eq!(base_keys(&app), skewed);
    for (created, expected, why) in [
        (m0.id, &skewed, "a created model is not rekeyed"),
        (ModelId(2), &today, "the others are"),
    ] {
        let created = BTreeSet::from([created]);
        app.writer()
            .run(|turn| duplicates::full_pass(turn, &created))
            .expect("full pass");
        assert_eq!(&base_keys(&app), expected, "{why}");
    }
}

/// Every model's pairs as the full pass finds them in memory and as a write's refresh finds
/// them through the store's keys, on a random catalogue of two brands sharing one reference
/// pool, with merged models and dismissed pairs: the pass over the imported models writes no
/// pair the refreshes had not, and each model's stored pairs are those the store's keys give.
#[test]
fn the_full_pass_in_memory_finds_the_pairs_the_store_s_keys_give() {
    let (_data, dataset, app) = empty_app();
    let mut rng = Lcg(11);
    let lines: Vec<String> = (0..240).map(|at| model_line(&mut rng, at)).collect();
    import_models(&app, dataset.path(), &lines.join("\n"));
    let groups = app.duplicate_groups().expect("groups");
    assert!(groups.len() > 10, "the pool makes groups: {}", groups.len());
    let actor = Actor::Cli;
    for group in groups.iter().step_by(3) {
        let ids: Vec<ModelId> = group.models.iter().take(3).copied().collect();
        app.writer()
            .run(|turn| merge::dismiss(turn, &actor, &ids))
            .expect("dismiss");
    }
    for group in groups.iter().skip(1).step_by(5) {
        let (keeper, duplicate) = (group.models[0], group.models[1]);
        app.writer()
            .run(|turn| merge::merge(turn, app.listings(), &actor, keeper, &[duplicate]))
            .expect("merge");
    }
    let stored_pairs = |id| {
        let mut pairs = app
            .store()
            .duplicates()
            .duplicate_pairs_of(id)
            .expect("pairs");
        pairs.sort_by_key(|p| (p.a, p.b));
        pairs
    };
    let before = app
        .store()
        .duplicates()
        .duplicates_generation()
        .expect("generation");
    app.writer().run(duplicates::rebuild).expect("full pass");
    assert_eq!(
        app.store()
            .duplicates()
            .duplicates_generation()
            .expect("generation"),
        before,
        "the full pass finds what the refreshes kept, and writes nothing"
    );
    let mut paired = 0;
    for id in app.store().catalogue().model_ids().expect("ids") {
        let model = app
            .store()
            .catalogue()
            .model(id)
            .expect("read")
            .expect("model");
        let mut through_keys = duplicates::pairs_for(app.store(), &model).expect("pairs");
        through_keys.sort_by_key(|p| (p.a, p.b));
        paired += usize::from(!through_keys.is_empty());
        assert_eq!(stored_pairs(id), through_keys, "{}", model.slug);
    }
    assert!(paired > 100, "most models pair: {paired}");
    let dismissed = app
        .store()
        .duplicates()
        .dismissed_pairs()
        .expect("dismissed");
    assert!(!dismissed.is_empty());
    for (a, b) in dismissed {
        assert!(
            !stored_pairs(a).iter().any(|p| p.b == b),
            "dismissed {a:?}/{b:?} stays apart"
        );
    }
}
