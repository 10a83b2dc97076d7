//! What the first page of every model reads, against what it read before, on random catalogues
//! with brands, series, models rewritten and removed (deleted documents), several segments:
//! the facets counted from term frequencies ([`crate::facets::every_model`]) against the pass
//! over every model ([`crate::facets::FacetCollector`]), and the page by name read from the
//! name terms ([`crate::by_name`]) against every model's name read from its column.

use super::*;
use crate::facets::{every_model, FacetCollector};
use proptest::prelude::*;

const MATERIALS: [&str; 4] = ["Steel", "steel", "Gold", "titanium"];
const COMPLICATIONS: [&str; 3] = ["date", "chronograph", "gmt"];

#[derive(Debug, Clone)]
struct Model {
    brand: u64,
    series: u64,
    diameter: Option<f64>,
    materials: Vec<usize>,
    movement: Option<usize>,
    complications: Vec<usize>,
}

fn model_strategy() -> impl Strategy<Value = Model> {
    (
        1..4u64,
        0..3u64,
        prop::option::of(prop_oneof![
            Just(40.0),
            Just(40.5),
            Just(41.99),
            30.0..46.0f64
        ]),
        prop::collection::vec(0..MATERIALS.len(), 0..3),
        prop::option::of(0..MATERIALS.len()),
        prop::collection::vec(0..COMPLICATIONS.len(), 0..3),
    )
        .prop_map(
            |(brand, series, diameter, materials, movement, complications)| Model {
                brand,
                series: brand * 10 + series,
                diameter,
                materials,
                movement,
                complications,
            },
        )
}

fn doc(id: u64, m: &Model) -> CatalogueDoc {
    CatalogueDoc::Model(ModelDoc {
        id,
        brand_id: m.brand,
        series_id: m.series,
        // Names shared in any case, and an empty one: ties go to the smaller id.
        name: ["Alpha", "alpha", "Beta", "", "gamma", "Ärger"][id as usize % 6].to_owned(),
        diameter: m.diameter,
        case_materials: m
            .materials
            .iter()
            .map(|&i| MATERIALS[i].to_owned())
            .collect(),
        spec: ModelSpecDoc {
            dial_colors: m
                .materials
                .iter()
                .map(|&i| MATERIALS[i].to_owned())
                .collect(),
            movement_type: m
                .movement
                .map(|i| ["automatic", "manual", "quartz", "Manual"][i].into()),
            complications: m
                .complications
                .iter()
                .map(|&i| COMPLICATIONS[i].into())
                .collect(),
            ..ModelSpecDoc::default()
        },
        ..ModelDoc::default()
    })
}

/// A catalogue of `models` and three brands with a series each, then `rewritten` in later
/// commits.
fn catalogue(models: &[Model], rewritten: &[(usize, Model)]) -> CatalogueIndex {
    let mut others = Vec::new();
    for brand in 1..4 {
        others.push(CatalogueDoc::Brand(BrandDoc {
            id: brand,
            name: format!("brand {brand}"),
            ..BrandDoc::default()
        }));
        others.push(CatalogueDoc::Series(SeriesDoc {
            id: brand * 10,
            brand_id: brand,
            name: "alpha".into(),
            ..SeriesDoc::default()
        }));
    }
    rebuilt_then_rewritten(models, others, rewritten, 4, doc)
}

/// Removes the models at `removed` (modulo `models`) in a commit of `generation`, as a merge
/// does.
fn remove(index: &CatalogueIndex, models: usize, removed: &[usize], generation: u64) {
    let removed: Vec<u64> = removed.iter().map(|i| (i % models) as u64 + 1).collect();
    index
        .update_and_remove(&[], &removed, generation)
        .expect("remove");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_models_facets_from_term_frequencies_are_the_pass_over_every_model(
        models in prop::collection::vec(model_strategy(), 1..80),
        rewritten in prop::collection::vec((0..1000usize, model_strategy()), 0..12),
        removed in prop::collection::vec(0..1000usize, 0..4),
    ) {
        let index = catalogue(&models, &rewritten);
        // Counted before and after a commit that only deletes: what is kept of the first
        // count must not outlive its deletes.
        for (generation, removing) in [(100, &[][..]), (101, &removed)] {
            remove(&index, models.len(), removing, generation);
            let searcher = index.derived.reader.searcher();
            let every = SearchRequest::filtered(DocKind::Model, Filters::default());
            let pass = searcher
                .search(&*query::build(&index.fields, &every), &FacetCollector { facets: Facet::ALL.to_vec() })
                .expect("pass");
            let counted = every_model(&searcher, &index.fields, &index.not_models, &Facet::ALL)
                .expect("frequencies");
            prop_assert_eq!(counted, pass);
        }
    }

    #[test]
    fn every_models_page_by_name_from_the_name_terms_is_the_page_from_the_column(
        models in prop::collection::vec(model_strategy(), 1..80),
        rewritten in prop::collection::vec((0..1000usize, model_strategy()), 0..12),
        removed in prop::collection::vec(0..1000usize, 0..4),
        pages in prop::collection::vec((0..90usize, 1..30usize), 1..4),
    ) {
        let index = catalogue(&models, &rewritten);
        for (generation, removing) in [(100, &[][..]), (101, &removed)] {
            remove(&index, models.len(), removing, generation);
            for &(offset, limit) in &pages {
                let mut request = SearchRequest::filtered(DocKind::Model, Filters::default());
                request.sort = SortOrder::NameAsc;
                request.offset = offset;
                request.limit = limit;
                let from_terms = index.search(&request).expect("search");
                let from_column = index.search_exhaustively(&request).expect("exhaustive");
                prop_assert_eq!(from_terms, from_column, "offset {}, limit {}", offset, limit);
            }
        }
    }
}
