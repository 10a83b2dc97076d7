//! The summaries against the searches they replace ([`CatalogueIndex::count`] and
//! [`CatalogueIndex::lead_model`]) on random catalogues: several segments, rewritten and
//! removed models and rewritten series (so deleted documents), ties on listings and years.

use crate::{BrandSummary, CatalogueDoc, CatalogueIndex, ModelDoc, SeriesDoc, SeriesSummary};
use proptest::prelude::*;
use rayon::prelude::*;

const BRANDS: u64 = 3;
const SERIES_PER_BRAND: u64 = 3;

#[derive(Debug, Clone)]
struct Model {
    brand: u64,
    series: u64,
    listings: u64,
    year: Option<i32>,
    front: bool,
}

fn model_strategy() -> impl Strategy<Value = Model> {
    (
        1..=BRANDS,
        0..SERIES_PER_BRAND,
        0..3u64,
        prop::option::of(2019..2021i32),
        any::<bool>(),
    )
        .prop_map(|(brand, series, listings, year, front)| Model {
            brand,
            series: series_id(brand, series),
            listings,
            year,
            front,
        })
}

fn series_id(brand: u64, nth: u64) -> u64 {
    brand * 10 + nth
}

fn model_doc(id: u64, model: &Model) -> CatalogueDoc {
    CatalogueDoc::Model(ModelDoc {
        id,
        brand_id: model.brand,
        series_id: model.series,
        name: format!("model {id}"),
        release_year: model.year,
        listing_count: model.listings,
        has_front_picture: model.front,
        spec: Default::default(),
        ..ModelDoc::default()
    })
}

/// Series `nth` of `brand`, moved to `brand` (a rewrite of the same series id deletes the old
/// document, wherever it was).
fn series_doc(brand: u64, id: u64) -> CatalogueDoc {
    CatalogueDoc::Series(SeriesDoc {
        id,
        brand_id: brand,
        name: format!("series {id}"),
        ..SeriesDoc::default()
    })
}

#[derive(Debug, Clone)]
enum Change {
    /// Model `index` (modulo the catalogue) written again as this one.
    Rewrite(usize, Model),
    /// Model `index` removed.
    Remove(usize),
    /// Series of this id written again under this brand.
    MoveSeries(u64, u64),
}

fn change_strategy() -> impl Strategy<Value = Change> {
    prop_oneof![
        4 => (any::<usize>(), model_strategy()).prop_map(|(i, m)| Change::Rewrite(i, m)),
        2 => any::<usize>().prop_map(Change::Remove),
        1 => (1..=BRANDS, 1..=BRANDS, 0..SERIES_PER_BRAND)
            .prop_map(|(to, from, nth)| Change::MoveSeries(series_id(from, nth), to)),
    ]
}

/// The initial catalogue in one rebuild (every series of every brand but the last has a
/// document), then each chunk of `changes` in its own commit: a segment each.
fn index_of(models: &[Model], changes: &[Change]) -> CatalogueIndex {
    let index = CatalogueIndex::in_memory().expect("index");
    let series = (1..BRANDS).flat_map(|brand| {
        (0..SERIES_PER_BRAND).map(move |nth| series_doc(brand, series_id(brand, nth)))
    });
    let docs: Vec<CatalogueDoc> = models
        .iter()
        .enumerate()
        .map(|(i, m)| model_doc(i as u64 + 1, m))
        .chain(series)
        .collect();
    index.rebuild(docs.into_par_iter(), 1).expect("rebuild");
    for (generation, chunk) in changes.chunks(3).enumerate() {
        let mut docs = Vec::new();
        let mut removed = Vec::new();
        for change in chunk {
            let id_of = |i: &usize| (i % models.len()) as u64 + 1;
            match change {
                Change::Rewrite(i, m) => docs.push(model_doc(id_of(i), m)),
                Change::Remove(i) => removed.push(id_of(i)),
                Change::MoveSeries(id, brand) => docs.push(series_doc(*brand, *id)),
            }
        }
        index
            .update_and_remove(&docs, &removed, generation as u64 + 2)
            .expect("update");
    }
    index
}

/// What the per-item searches say of a brand.
fn searched_brand(index: &CatalogueIndex, brand: u64) -> BrandSummary {
    index.searched_brand_summary(brand).expect("searches")
}

/// What the per-item searches say of a series.
fn searched_series(index: &CatalogueIndex, series: u64) -> SeriesSummary {
    index.searched_series_summary(series).expect("searches")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn summaries_equal_the_searches_they_replace(
        models in prop::collection::vec(model_strategy(), 1..40),
        changes in prop::collection::vec(change_strategy(), 0..12),
    ) {
        let index = index_of(&models, &changes);
        let summaries = index.group_summaries().expect("summaries");
        // One brand and one series past those written: both have nothing.
        for brand in 1..=BRANDS + 1 {
            prop_assert_eq!(summaries.brand(brand), searched_brand(&index, brand), "brand {}", brand);
            for nth in 0..=SERIES_PER_BRAND {
                let series = series_id(brand, nth);
                prop_assert_eq!(summaries.series(series), searched_series(&index, series), "series {}", series);
            }
        }
    }
}

#[test]
fn a_commit_makes_new_summaries_and_none_is_built_twice() {
    let model = Model {
        brand: 1,
        series: series_id(1, 0),
        listings: 2,
        year: Some(2020),
        front: true,
    };
    let index = index_of(std::slice::from_ref(&model), &[]);
    let before = index.group_summaries().expect("summaries");
    assert!(std::sync::Arc::ptr_eq(
        &before,
        &index.group_summaries().expect("summaries")
    ));
    assert_eq!(before.brand(1).lead_model, Some(1));

    let moved = Model { brand: 2, ..model };
    index.update(&[model_doc(1, &moved)], 2).expect("update");
    let after = index.group_summaries().expect("summaries");
    assert_eq!(after.brand(1).model_count, 0);
    assert_eq!(after.brand(1).lead_model, None);
    assert_eq!(after.brand(2).model_count, 1);
    assert_eq!(after.brand(2).lead_model, Some(1));
}

#[test]
fn a_request_never_waits_for_a_build_and_answers_the_same() {
    let models: Vec<Model> = (0..6)
        .map(|i| Model {
            brand: 1 + i % 2,
            series: series_id(1 + i % 2, i % 3),
            listings: i,
            year: Some(2000 + i as i32),
            front: i % 3 != 0,
        })
        .collect();
    let index = index_of(&models, &[]);
    // Nothing kept yet: the answer comes from the searches, and a build starts.
    assert_eq!(
        index.brand_summary(1).expect("brand"),
        searched_brand(&index, 1)
    );
    assert_eq!(
        index.series_summary(series_id(2, 1)).expect("series"),
        searched_series(&index, series_id(2, 1))
    );
    let generation = index.derived.reader.searcher().generation().generation_id();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while index.summaries.at_least(generation).is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the background build never landed"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Kept now: the same answers from the summaries.
    for brand in 1..=2 {
        assert_eq!(
            index.brand_summary(brand).expect("brand"),
            searched_brand(&index, brand)
        );
    }
    assert_eq!(
        index.series_summary(series_id(2, 1)).expect("series"),
        searched_series(&index, series_id(2, 1))
    );
}
