use super::*;

mod every_model;
mod spec_search;

/// An index of `models` (model `i` as id `i + 1`, by `doc`) and `others` in one rebuild
/// (generation 1), then `rewritten` (model `i` modulo their number, as its new version) in
/// updates of `per_commit` (generations 2, 3, …): a document written again deletes its first
/// one and lands in a segment of its own, as a random catalogue with several segments and
/// deletes needs.
pub(crate) fn rebuilt_then_rewritten<M>(
    models: &[M],
    others: Vec<CatalogueDoc>,
    rewritten: &[(usize, M)],
    per_commit: usize,
    doc: impl Fn(u64, &M) -> CatalogueDoc,
) -> CatalogueIndex {
    let id_of = |i: usize| (i % models.len()) as u64 + 1;
    let mut docs: Vec<CatalogueDoc> = (0..).zip(models).map(|(i, m)| doc(id_of(i), m)).collect();
    docs.extend(others);
    let index = CatalogueIndex::in_memory().expect("index");
    index.rebuild(docs.into_par_iter(), 1).expect("rebuild");
    for (generation, chunk) in (2..).zip(rewritten.chunks(per_commit.max(1))) {
        let docs: Vec<CatalogueDoc> = chunk.iter().map(|(i, m)| doc(id_of(*i), m)).collect();
        index.update(&docs, generation).expect("update");
    }
    index
}

fn model(id: u64, brand: u64, name: &str, refs: &[&str], year: Option<i32>) -> CatalogueDoc {
    CatalogueDoc::Model(ModelDoc {
        id,
        brand_id: brand,
        series_id: brand * 10,
        caliber_id: Some(id % 2 + 100),
        name: name.into(),
        brand_names: vec![if brand == 1 { "Rolex" } else { "Tudor" }.into()],
        series_name: "Submariner".into(),
        description: Some("A diver's watch with a rotating bezel".into()),
        normalized_references: refs.iter().map(|r| r.to_string()).collect(),
        release_year: year,
        diameter: Some(40.0 + id as f64),
        case_materials: vec!["stainless steel".into()],
        listing_count: id % 3,
        has_front_picture: id != 4,
        spec: ModelSpecDoc::default(),
    })
}

fn fixture() -> CatalogueIndex {
    let index = CatalogueIndex::in_memory().expect("index");
    let docs = vec![
        model(
            1,
            1,
            "Submariner Date",
            &["126610ln", "126610ln0001"],
            Some(2020),
        ),
        model(2, 1, "Submariner Date", &["126610lv"], Some(2020)),
        model(3, 1, "Submariner", &["124060"], None),
        model(4, 2, "Black Bay", &["79230n"], Some(2016)),
        model(5, 2, "Pelagos", &["124060"], Some(2015)),
        CatalogueDoc::Brand(BrandDoc {
            id: 1,
            name: "Rolex".into(),
            model_count: 3,
            ..Default::default()
        }),
        CatalogueDoc::Brand(BrandDoc {
            id: 2,
            name: "tudor".into(),
            aliases: vec!["Tudor Watch".into()],
            model_count: 2,
            ..Default::default()
        }),
    ];
    use rayon::prelude::*;
    assert_eq!(index.rebuild(docs.into_par_iter(), 7).expect("rebuild"), 7);
    index
}

fn search(index: &CatalogueIndex, q: &str, normalized: &str, sort: SortOrder) -> Vec<u64> {
    let mut request = SearchRequest::filtered(DocKind::Model, Filters::default());
    request.text = Some(TextQuery {
        typo_tolerance: false,
        text: q.into(),
        normalized_reference: normalized.into(),
    });
    request.sort = sort;
    request.limit = 10;
    index.search(&request).expect("search").ids
}

#[test]
fn rebuild_records_the_generation() {
    assert_eq!(fixture().generation().expect("gen"), Some(7));
    assert_eq!(
        CatalogueIndex::in_memory()
            .expect("i")
            .generation()
            .expect("gen"),
        None
    );
}

#[test]
fn an_exact_reference_comes_first_in_any_spelling() {
    let index = fixture();
    assert_eq!(
        search(&index, "126610 ln", "126610ln", SortOrder::Relevance)[0],
        1
    );
    assert_eq!(
        search(
            &index,
            "126610LN-0001",
            "126610ln0001",
            SortOrder::Relevance
        ),
        [1]
    );
}

/// The term dictionaries are built by the patched tantivy-fst (D-243), whose node registry
/// starts small and grows while a dictionary is built: tens of thousands of distinct references
/// in one segment cross every growth step, and each must still lead to its own model.
#[test]
fn every_reference_of_a_large_term_dictionary_is_found() {
    let reference = |i: u64| format!("zq{:06}", (i * 7_919) % 1_000_000);
    let index = CatalogueIndex::in_memory().expect("index");
    let docs: Vec<CatalogueDoc> = (1..=20_000)
        .map(|id| model(id, 1, &format!("Model {id}"), &[&reference(id)], None))
        .collect();
    index.rebuild(docs.into_par_iter(), 1).expect("rebuild");
    for id in (1..=20_000).step_by(11) {
        let r = reference(id);
        assert_eq!(search(&index, &r, &r, SortOrder::Relevance), [id], "{r}");
    }
}

#[test]
fn a_reference_prefix_finds_the_models_it_starts() {
    let index = fixture();
    assert_eq!(
        search(&index, "12661", "12661", SortOrder::Relevance),
        [1, 2]
    );
    assert!(search(&index, "12", "12", SortOrder::Relevance).is_empty());
}

#[test]
fn a_long_reference_prefix_finds_the_models_it_starts_as_a_short_one_does() {
    // Past `MAX_INDEXED_REFERENCE_PREFIX` characters a prefix is no term: the search reads the
    // whole references that start with it, on every path (pruned, plain, typo tier).
    let index = fixture();
    for typo_tolerance in [false, true] {
        for sort in [SortOrder::Relevance, SortOrder::NameAsc] {
            for (text, expected) in [
                ("126610", &[1, 2][..]),
                ("126610l", &[1, 2]),
                ("126610ln", &[1]),
                ("126610ln000", &[1]),
                ("126610lx", &[]),
                ("126610ln00012", &[]),
            ] {
                let mut request = SearchRequest::filtered(DocKind::Model, Filters::default());
                request.text = Some(TextQuery {
                    typo_tolerance,
                    text: text.into(),
                    normalized_reference: text.into(),
                });
                request.sort = sort;
                request.limit = 10;
                let page = index.search(&request).expect("search");
                let mut ids = page.ids.clone();
                ids.sort_unstable();
                let why = format!("{text}, typos {typo_tolerance}, {sort:?}");
                assert_eq!(ids, expected, "{why}");
                assert_eq!(page.total, expected.len(), "{why}");
            }
        }
    }
    for (prefix, expected) in [("126610l", &[1, 2][..]), ("126610ln000", &[1])] {
        let found = index
            .models_with_reference_prefix(1, prefix, 10)
            .expect("search");
        assert_eq!(found, expected, "{prefix}");
    }
}

#[test]
fn the_typo_tier_reads_a_long_reference_prefix_as_the_references_it_starts() {
    // "explorr" needs its form "explorer"; "126610l" is typed as it is, a prefix of model 3's
    // reference past the indexed prefixes' length: the tier reads it from whole references.
    let index = CatalogueIndex::in_memory().expect("index");
    let docs = vec![
        model(1, 1, "Alpha", &["126610ln"], None),
        model(2, 1, "Explorer", &[], None),
        model(3, 1, "Explorer", &["126610ln"], None),
    ];
    index.rebuild(docs.into_par_iter(), 1).expect("rebuild");
    for sort in [SortOrder::Relevance, SortOrder::NameAsc] {
        for text in ["explorr 126610l", "explorer 126610l"] {
            let mut request = SearchRequest::filtered(DocKind::Model, Filters::default());
            request.text = Some(TextQuery {
                typo_tolerance: true,
                text: text.into(),
                normalized_reference: text.replace(' ', ""),
            });
            request.sort = sort;
            request.limit = 10;
            let page = index.search(&request).expect("search");
            assert_eq!((page.ids, page.total), (vec![3], 1), "{text}, {sort:?}");
        }
    }
}

#[test]
fn a_reference_in_two_brands_finds_both() {
    let index = fixture();
    assert_eq!(
        search(&index, "124060", "124060", SortOrder::Relevance),
        [3, 5]
    );
}

#[test]
fn words_must_all_match_across_fields() {
    let index = fixture();
    assert_eq!(
        search(
            &index,
            "rolex submariner",
            "rolexsubmariner",
            SortOrder::NameAsc
        ),
        [3, 1, 2]
    );
    assert!(search(
        &index,
        "rolex pelagos",
        "rolexpelagos",
        SortOrder::Relevance
    )
    .is_empty());
    assert_eq!(
        search(&index, "tudor 79230", "tudor79230", SortOrder::Relevance),
        [4]
    );
}

#[test]
fn sorts_break_ties_by_id() {
    let index = fixture();
    let all = |sort| {
        let mut r = SearchRequest::filtered(DocKind::Model, Filters::default());
        r.sort = sort;
        r.limit = 10;
        index.search(&r).expect("search").ids
    };
    assert_eq!(all(SortOrder::NameAsc), [4, 5, 3, 1, 2]);
    assert_eq!(all(SortOrder::NameDesc), [1, 2, 3, 5, 4]);
    assert_eq!(all(SortOrder::ReferenceAsc), [3, 5, 1, 2, 4]);
    assert_eq!(all(SortOrder::Newest), [2, 1, 4, 5, 3]);
    // Most listings first (2 and 5 have two), then newest.
    assert_eq!(all(SortOrder::Lead), [2, 5, 1, 4, 3]);
}

#[test]
fn pages_and_totals() {
    let index = fixture();
    let mut r = SearchRequest::filtered(DocKind::Model, Filters::default());
    r.sort = SortOrder::IdAsc;
    r.offset = 3;
    r.limit = 10;
    assert_eq!(
        index.search(&r).expect("s"),
        Hits {
            ids: vec![4, 5],
            total: 5
        }
    );
    r.offset = 50;
    assert_eq!(
        index.search(&r).expect("s"),
        Hits {
            ids: vec![],
            total: 5
        }
    );
}

#[test]
fn brands_sort_by_name_case_insensitively_and_by_depth() {
    let index = fixture();
    let mut r = SearchRequest::filtered(DocKind::Brand, Filters::default());
    r.sort = SortOrder::NameDesc;
    r.limit = 10;
    assert_eq!(index.search(&r).expect("s").ids, [2, 1]);
    r.sort = SortOrder::ModelsDesc;
    assert_eq!(index.search(&r).expect("s").ids, [1, 2]);
    r.text = Some(TextQuery {
        typo_tolerance: false,
        text: "watch".into(),
        normalized_reference: "watch".into(),
    });
    assert_eq!(index.search(&r).expect("s").ids, [2]);
}

#[test]
fn stats_and_lead_model_follow_filters() {
    let index = fixture();
    let rolex = Filters {
        brand_id: Some(1),
        ..Default::default()
    };
    let stats = index.model_stats(&rolex).expect("stats");
    assert_eq!(stats.model_count, 3);
    assert_eq!((stats.year_min, stats.year_max), (Some(2020), Some(2020)));
    assert_eq!(
        (stats.diameter_min, stats.diameter_max),
        (Some(41.0), Some(43.0))
    );
    assert_eq!(stats.case_materials, ["stainless steel"]);
    assert_eq!(stats.movement_count, 2);
    assert_eq!(stats.listing_count, 1 + 2);
    assert_eq!(index.lead_model(&rolex).expect("lead"), Some(2));
    let tudor_with_picture = Filters {
        brand_id: Some(2),
        has_front_picture: true,
        ..Default::default()
    };
    assert_eq!(
        index.lead_model(&tudor_with_picture).expect("lead"),
        Some(5)
    );
    let none = Filters {
        brand_id: Some(99),
        ..Default::default()
    };
    assert_eq!(
        index.model_stats(&none).expect("stats"),
        CatalogueStats::default()
    );
}

#[test]
fn open_recreates_an_index_and_keeps_generation_across_reopen() {
    let dir = tempfile::tempdir().expect("dir");
    {
        let index = CatalogueIndex::open(dir.path()).expect("open");
        use rayon::prelude::*;
        index
            .rebuild(Vec::new().into_par_iter(), 3)
            .expect("rebuild");
    }
    let index = CatalogueIndex::open(dir.path()).expect("reopen");
    assert_eq!(index.generation().expect("gen"), Some(3));
}

#[test]
fn the_model_text_edition_moves_with_words_and_not_with_counts() {
    let index = CatalogueIndex::in_memory().expect("index");
    let docs = vec![model(1, 1, "Submariner", &["16610"], None)];
    index
        .rebuild(docs.clone().into_par_iter(), 1)
        .expect("rebuild");
    let rebuilt = index.model_text_edition();
    assert!(rebuilt > 0, "a rebuild is an edition");
    index.update_counts(&docs, 2).expect("recount");
    assert_eq!(index.model_text_edition(), rebuilt);
    assert_eq!(index.generation().expect("generation"), Some(2));
    index.update(&docs, 3).expect("update");
    assert!(index.model_text_edition() > rebuilt);
    let updated = index.model_text_edition();
    index.update_and_remove(&[], &[1], 4).expect("remove");
    assert!(index.model_text_edition() > updated);
}

#[test]
fn model_texts_are_the_lowercased_name_and_every_reference_of_the_live_document() {
    let index = CatalogueIndex::in_memory().expect("index");
    let docs = vec![
        model(1, 1, "Submariner Date", &["126610ln", "126610"], None),
        model(2, 1, "GMT-Master II", &["126710blro"], None),
    ];
    index.rebuild(docs.into_par_iter(), 1).expect("rebuild");
    // Model 2 rewritten in a segment of its own: its first document is deleted.
    index
        .update(
            &[model(2, 1, "GMT-Master II Pepsi", &["126710blro"], None)],
            2,
        )
        .expect("update");
    let mut texts = index.model_texts(&[2, 1, 99]).expect("texts");
    texts.sort_by_key(|t| t.id);
    for text in &mut texts {
        text.references.sort();
    }
    assert_eq!(
        texts,
        [
            ModelText {
                id: 1,
                name: "submariner date".into(),
                references: vec!["126610".into(), "126610ln".into()],
            },
            ModelText {
                id: 2,
                name: "gmt-master ii pepsi".into(),
                references: vec!["126710blro".into()],
            },
        ]
    );
}

#[test]
fn update_replaces_only_the_documents_given() {
    let index = CatalogueIndex::in_memory().expect("index");
    let model = |id: u64, listing_count: u64| ModelDoc {
        id,
        brand_id: 1,
        series_id: 1,
        name: format!("Model {id}"),
        listing_count,
        ..ModelDoc::default()
    };
    let brand = CatalogueDoc::Brand(BrandDoc {
        id: 1,
        name: "Brand".into(),
        ..BrandDoc::default()
    });
    let docs = vec![
        brand,
        CatalogueDoc::Model(model(1, 0)),
        CatalogueDoc::Model(model(2, 5)),
    ];
    index.rebuild(docs.into_par_iter(), 1).expect("rebuild");
    let lead = Filters {
        brand_id: Some(1),
        ..Filters::default()
    };
    assert_eq!(index.lead_model(&lead).expect("lead"), Some(2));
    // Brand 1 and model 1 share an id: the update replaces the model document only.
    index
        .update(&[CatalogueDoc::Model(model(1, 9))], 2)
        .expect("update");
    assert_eq!(index.generation().expect("generation"), Some(2));
    assert_eq!(index.lead_model(&lead).expect("lead"), Some(1));
    assert_eq!(
        index
            .count(DocKind::Model, &Filters::default())
            .expect("count"),
        2
    );
    assert_eq!(
        index
            .count(DocKind::Brand, &Filters::default())
            .expect("count"),
        1
    );
}

#[test]
fn candidates_by_reference_prefix_and_by_name_stay_in_their_brand() {
    let index = fixture();
    for (prefix, expected, why) in [
        ("126610", &[1, 2][..], "a prefix of two"),
        ("126610ln0001", &[1], "an alternate, whole"),
        ("79230", &[], "another brand's"),
        ("1", &[], "too short a prefix is not indexed"),
    ] {
        let found = index
            .models_with_reference_prefix(1, prefix, 10)
            .expect("search");
        assert_eq!(found, expected, "{why}");
    }
    let named = index
        .models_named_like(1, "ROLEX SUBMARINER DATE mystery", 10)
        .expect("search");
    assert_eq!(&named[..2], [1, 2], "two words shared first");
    assert!(named.contains(&3), "one word shared: {named:?}");
    assert_eq!(
        index.models_named_like(2, "Pelagos", 10).expect("search"),
        [5]
    );
    assert_eq!(
        (index.models_named_like(2, "Date Pelagos", 10)).expect("search"),
        [5],
        "another brand's words find none of its models"
    );
    assert!(index
        .models_named_like(1, "  ", 10)
        .expect("search")
        .is_empty());
}
