//! Typo tolerance, specification filters and facets, on a catalogue small enough to count by
//! hand.

use crate::*;

#[derive(Clone)]
struct M {
    id: u64,
    brand: u64,
    name: &'static str,
    reference: &'static str,
    diameter: Option<f64>,
    materials: &'static [&'static str],
    movement: Option<&'static str>,
    complications: &'static [&'static str],
    year: Option<i32>,
    listings: u64,
}

const MODELS: [M; 6] = [
    M {
        id: 1,
        brand: 1,
        name: "Speedmaster Professional",
        reference: "310.30.42",
        diameter: Some(42.0),
        materials: &["Stainless Steel"],
        movement: Some("manual"),
        complications: &["chronograph"],
        year: Some(2021),
        listings: 3,
    },
    M {
        id: 2,
        brand: 1,
        name: "Speedmastre Reduced",
        reference: "126611",
        diameter: Some(39.5),
        materials: &["stainless steel", "yellow gold"],
        movement: Some("automatic"),
        complications: &["chronograph", "date"],
        year: Some(1995),
        listings: 0,
    },
    M {
        id: 3,
        brand: 2,
        name: "Explorer",
        reference: "126610",
        diameter: Some(39.0),
        materials: &["titanium"],
        movement: Some("automatic"),
        complications: &["date"],
        year: None,
        listings: 1,
    },
    M {
        id: 4,
        brand: 2,
        name: "Seamaster",
        reference: "2254.50",
        diameter: Some(41.9),
        materials: &["stainless steel"],
        movement: Some("Automatic"),
        complications: &[],
        year: Some(1993),
        listings: 0,
    },
    M {
        id: 5,
        brand: 3,
        name: "Calibre 3235 Edition",
        reference: "x1",
        diameter: None,
        materials: &[],
        movement: None,
        complications: &[],
        year: Some(2020),
        listings: 2,
    },
    M {
        id: 6,
        brand: 3,
        name: "Calibre 3236 Edition",
        reference: "x2",
        diameter: Some(40.0),
        materials: &["ceramic"],
        movement: Some("quartz"),
        complications: &[],
        year: Some(2020),
        listings: 0,
    },
];

fn doc(m: &M) -> CatalogueDoc {
    let strings = |values: &[&str]| values.iter().map(|v| v.to_string()).collect();
    CatalogueDoc::Model(ModelDoc {
        id: m.id,
        brand_id: m.brand,
        series_id: m.brand * 10,
        name: m.name.into(),
        normalized_references: vec![m.reference.replace('.', "")],
        release_year: m.year,
        diameter: m.diameter,
        case_materials: strings(m.materials),
        spec: ModelSpecDoc {
            movement_type: m.movement.map(Into::into),
            complications: strings(m.complications),
            limited: m.id == 1,
            water_resistance: Some(m.id as f64 * 100.0),
            ..ModelSpecDoc::default()
        },
        listing_count: m.listings,
        ..ModelDoc::default()
    })
}

fn index() -> CatalogueIndex {
    let index = CatalogueIndex::in_memory().expect("index");
    let mut docs: Vec<CatalogueDoc> = MODELS.iter().map(doc).collect();
    docs.push(CatalogueDoc::Brand(BrandDoc {
        id: 1,
        name: "Omega".into(),
        ..BrandDoc::default()
    }));
    index.rebuild(docs.into_par_iter(), 1).expect("rebuild");
    index
}

fn request(q: Option<&str>, typos: bool, filters: Filters) -> SearchRequest {
    let mut request = SearchRequest::filtered(DocKind::Model, filters);
    request.sort = SortOrder::Relevance;
    request.limit = 10;
    request.text = q.map(|q| TextQuery {
        text: q.into(),
        normalized_reference: q.replace(['.', ' '], "").to_lowercase(),
        typo_tolerance: typos,
    });
    request
}

fn found(index: &CatalogueIndex, request: &SearchRequest) -> (Vec<u64>, usize) {
    let hits = index.search(request).expect("search");
    let exhaustive = index.search_exhaustively(request).expect("search");
    assert_eq!(hits, exhaustive, "pruned and exhaustive agree");
    (hits.ids, hits.total)
}

fn text(index: &CatalogueIndex, q: &str, typos: bool) -> (Vec<u64>, usize) {
    found(index, &request(Some(q), typos, Filters::default()))
}

#[test]
fn a_word_of_five_to_eight_letters_takes_one_typo_and_nine_or_more_two() {
    let index = index();
    // 7 letters, one typo (a transposition counts as one).
    assert_eq!(text(&index, "exlporer", true), (vec![3], 1));
    assert_eq!(text(&index, "explorr", true), (vec![3], 1));
    // Two typos in 8 letters are too many.
    assert_eq!(text(&index, "exlporr", true).1, 0);
    // 11 letters, two typos: both speedmasters, the exact one first.
    assert_eq!(text(&index, "speedmaster", true), (vec![1, 2], 2));
    assert_eq!(text(&index, "speedmastr", true).1, 2);
    assert_eq!(text(&index, "spedmastr", true).1, 2);
    // Four letters: no typo.
    assert_eq!(text(&index, "edtion calibre", true).1, 2);
    assert_eq!(
        text(&index, "calibre edit", true).1,
        2,
        "last word as a prefix"
    );
    assert_eq!(text(&index, "speedm", true), (vec![1, 2], 2));
}

#[test]
fn a_words_forms_are_found_again_after_a_commit() {
    let index = index();
    assert_eq!(text(&index, "navitmer", true).1, 0, "no navitimer yet");
    let navitimer = M {
        id: 7,
        name: "Navitimer Chronograph",
        reference: "210.30.42",
        ..MODELS[0].clone()
    };
    index.update(&[doc(&navitimer)], 2).expect("update");
    assert_eq!(text(&index, "navitmer", true), (vec![7], 1));
}

#[test]
fn without_typo_tolerance_words_match_as_typed() {
    let index = index();
    assert_eq!(text(&index, "speedmaster", false), (vec![1], 1));
    assert_eq!(text(&index, "speedmastr", false).1, 0);
    assert_eq!(text(&index, "speedm", false).1, 0);
}

#[test]
fn numbers_and_references_are_never_fuzzed() {
    let index = index();
    assert_eq!(text(&index, "126610", true), (vec![3], 1));
    assert_eq!(text(&index, "126612", true).1, 0);
    assert_eq!(text(&index, "calibre 3235", true), (vec![5], 1));
    assert_eq!(text(&index, "calibre 3237", true).1, 0);
}

#[test]
fn exact_matches_rank_above_typo_matches_and_other_orders_sort_both() {
    let index = index();
    // "speedmastre" is model 2's exact word and one typo from model 1's.
    assert_eq!(text(&index, "speedmastre", true), (vec![2, 1], 2));
    let mut by_id = request(Some("speedmastre"), true, Filters::default());
    by_id.sort = SortOrder::IdAsc;
    assert_eq!(found(&index, &by_id), (vec![1, 2], 2));
    // A page the exact matches fill still counts the typo ones.
    let mut first = request(Some("speedmastre"), true, Filters::default());
    first.limit = 1;
    assert_eq!(found(&index, &first), (vec![2], 2));
    // Paging crosses from the exact matches to the typo ones.
    let mut second = request(Some("speedmastre"), true, Filters::default());
    second.offset = 1;
    second.limit = 1;
    assert_eq!(found(&index, &second), (vec![1], 2));
}

fn terms(term: SpecTerm, values: &[&str]) -> SpecFilters {
    SpecFilters {
        terms: [(term, values.iter().map(|v| v.to_string()).collect())].into(),
        ..SpecFilters::default()
    }
}

fn ids_with(index: &CatalogueIndex, spec: SpecFilters) -> Vec<u64> {
    let filters = Filters {
        spec,
        ..Filters::default()
    };
    let mut request = request(None, true, filters);
    request.sort = SortOrder::IdAsc;
    found(index, &request).0
}

#[test]
fn specification_filters_match_case_insensitively_and_combine() {
    let index = index();
    let material = |values: &[&str]| ids_with(&index, terms(SpecTerm::CaseMaterial, values));
    assert_eq!(material(&["STAINLESS STEEL"]), [1, 2, 4]);
    assert_eq!(material(&["titanium", "ceramic"]), [3, 6], "any of");
    let complications = |values: &[&str]| ids_with(&index, terms(SpecTerm::Complication, values));
    assert_eq!(complications(&["date"]), [2, 3]);
    assert_eq!(complications(&["date", "chronograph"]), [2], "all of");
    assert_eq!(
        ids_with(&index, terms(SpecTerm::MovementType, &["automatic"])),
        [2, 3, 4]
    );
    let diameter = |min, max| {
        let spec = SpecFilters {
            diameter: Bounds { min, max },
            ..SpecFilters::default()
        };
        ids_with(&index, spec)
    };
    assert_eq!(
        diameter(Some(39.5), Some(41.9)),
        [2, 4, 6],
        "bounds included"
    );
    assert_eq!(diameter(None, Some(39.0)), [3]);
    let years = SpecFilters {
        release_year: Bounds {
            min: Some(1995),
            max: Some(2020),
        },
        ..SpecFilters::default()
    };
    assert_eq!(ids_with(&index, years), [2, 5, 6]);
    let flags = |spec: SpecFilters| ids_with(&index, spec);
    assert_eq!(
        flags(SpecFilters {
            limited: Some(true),
            ..SpecFilters::default()
        }),
        [1]
    );
    assert_eq!(
        flags(SpecFilters {
            has_listings: Some(false),
            ..SpecFilters::default()
        }),
        [2, 4, 6]
    );
    assert_eq!(
        flags(SpecFilters {
            min_water_resistance: Some(450.0),
            ..SpecFilters::default()
        }),
        [5, 6]
    );
    let combined = SpecFilters {
        has_listings: Some(false),
        ..terms(SpecTerm::CaseMaterial, &["stainless steel"])
    };
    assert_eq!(ids_with(&index, combined), [2, 4]);
    // Text and filters together, through the pruned path.
    let filters = Filters {
        spec: terms(SpecTerm::MovementType, &["manual"]),
        ..Filters::default()
    };
    assert_eq!(
        found(&index, &request(Some("speedmaster"), true, filters)),
        (vec![1], 1)
    );
}

#[test]
fn the_vocabulary_is_every_value_lowercased() {
    let index = index();
    assert_eq!(
        index
            .vocabulary(SpecTerm::MovementType)
            .expect("vocabulary"),
        ["automatic", "manual", "quartz"]
    );
    assert_eq!(
        index.vocabulary(SpecTerm::DialColor).expect("vocabulary"),
        Vec::<String>::new()
    );
}

fn counts(index: &CatalogueIndex, request: &SearchRequest, facet: Facet) -> Vec<(FacetValue, u64)> {
    let facets = index.facets(request, &[facet]).expect("facets");
    assert_eq!(facets.len(), 1);
    facets
        .into_iter()
        .next()
        .map(|f| f.values)
        .unwrap_or_default()
}

#[test]
fn facets_count_models_by_value_most_frequent_first() {
    let index = index();
    let all = request(None, true, Filters::default());
    let text = |s: &str| FacetValue::Text(s.into());
    assert_eq!(
        counts(&index, &all, Facet::Term(SpecTerm::CaseMaterial)),
        [
            (text("stainless steel"), 3),
            (text("ceramic"), 1),
            (text("titanium"), 1),
            (text("yellow gold"), 1)
        ]
    );
    assert_eq!(
        counts(&index, &all, Facet::Diameter),
        [
            (FacetValue::Millimetres(39), 2),
            (FacetValue::Millimetres(40), 1),
            (FacetValue::Millimetres(41), 1),
            (FacetValue::Millimetres(42), 1)
        ]
    );
    assert_eq!(
        counts(&index, &all, Facet::Brand),
        [
            (FacetValue::Id(1), 2),
            (FacetValue::Id(2), 2),
            (FacetValue::Id(3), 2)
        ]
    );
    let speedmasters = request(Some("speedmastr"), true, Filters::default());
    assert_eq!(
        counts(&index, &speedmasters, Facet::Term(SpecTerm::Complication)),
        [(text("chronograph"), 2), (text("date"), 1)]
    );
}

#[test]
fn a_facet_is_counted_without_its_own_filter() {
    let index = index();
    let filters = Filters {
        brand_id: Some(2),
        spec: terms(SpecTerm::CaseMaterial, &["titanium"]),
        ..Filters::default()
    };
    let request = request(None, true, filters);
    assert_eq!(found(&index, &request).1, 1);
    // Brand 2's materials, whatever the material filter says.
    assert_eq!(
        counts(&index, &request, Facet::Term(SpecTerm::CaseMaterial)),
        [
            (FacetValue::Text("stainless steel".into()), 1),
            (FacetValue::Text("titanium".into()), 1)
        ]
    );
    // Titanium models of any brand.
    assert_eq!(
        counts(&index, &request, Facet::Brand),
        [(FacetValue::Id(2), 1)]
    );
    // Both filters hold for the others.
    assert_eq!(
        counts(&index, &request, Facet::Diameter),
        [(FacetValue::Millimetres(39), 1)]
    );
}

#[test]
fn a_loose_search_runs_only_when_a_word_has_another_form() {
    let index = index();
    let searcher = index.derived.reader.searcher();
    let loosens = |q: &str, typo_tolerance: bool| {
        let text = TextQuery {
            text: q.into(),
            normalized_reference: String::new(),
            typo_tolerance,
        };
        crate::typos::loose_matches(&searcher, &index.fields, &text, &index.word_forms)
            .expect("terms")
            .is_some()
    };
    assert!(!loosens("explorer", true), "no other word is near");
    assert!(!loosens("calibre 3235", true), "numbers have no loose form");
    assert!(
        loosens("speedmaster", true),
        "speedmastre is two typos away"
    );
    assert!(loosens("explorr", true));
    assert!(loosens("calibre edit", true), "edition starts with edit");
    assert!(!loosens("explorr", false));
}

#[test]
fn long_words_match_as_typed() {
    let index = index();
    let long = format!("speedmastre{}", "x".repeat(20));
    assert_eq!(text(&index, &long, true).1, 0);
    assert_eq!(text(&index, "exlporer", true).1, 1);
}

#[test]
fn kept_facet_counts_follow_the_next_commit() {
    let mut index = index();
    index.facet_cache = crate::facets::FacetCache::keeping_every_pass();
    let all = request(None, true, Filters::default());
    let movement = Facet::Term(SpecTerm::MovementType);
    let text = |s: &str| FacetValue::Text(s.into());
    let before = [
        (text("automatic"), 3),
        (text("manual"), 1),
        (text("quartz"), 1),
    ];
    assert_eq!(counts(&index, &all, movement), before);
    // Kept, then asked again: the same, from the one kept pass.
    assert_eq!(index.facet_cache.kept(), 1);
    assert_eq!(counts(&index, &all, movement), before);
    assert_eq!(index.facet_cache.kept(), 1);
    let mut changed = MODELS[0].clone();
    changed.movement = Some("quartz");
    index.update(&[doc(&changed)], 2).expect("update");
    assert_eq!(
        counts(&index, &all, movement),
        [(text("automatic"), 3), (text("quartz"), 2)]
    );
}
