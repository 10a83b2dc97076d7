//! The pruned search against every match scored ([`CatalogueIndex::search_exhaustively`]) on
//! random catalogues, several segments and deleted documents included.

use crate::{BrandDoc, TextQuery};
use crate::{CatalogueDoc, CatalogueIndex, DocKind, Filters, ModelDoc, SearchRequest, SortOrder};
use proptest::prelude::*;

const WORDS: [&str; 10] = [
    "ocean", "classic", "steel", "polar", "field", "date", "chrono", "diver", "gold", "moon",
];
/// Loose forms of words of [`WORDS`] (a typo or a prefix away), which names and descriptions
/// also hold, so that a typo-tolerant search finds some models as typed and others through a
/// form. Word indexes past [`WORDS`] are these.
const NEAR_FORMS: [&str; 4] = ["oceans", "steels", "golden", "divers"];
const ANY_WORD: usize = WORDS.len() + NEAR_FORMS.len();
/// References; "ocean" is also a word of [`WORDS`], so that a common word is found as typed
/// through a reference in models whose text holds only its form "oceans".
const REFERENCES: [&str; 8] = [
    "126610ln",
    "126610lv",
    "1266",
    "5711a",
    "5711",
    "abc123",
    "ocean",
    "oceensteel",
];

#[derive(Debug, Clone)]
struct Model {
    brand: u64,
    /// The brand's names, as words; empty for the brand's own ("Rolex" or "Oris").
    brand_words: Vec<usize>,
    series: u64,
    name: Vec<usize>,
    description: Vec<usize>,
    references: Vec<usize>,
}

fn model_strategy() -> impl Strategy<Value = Model> {
    (
        1..=2u64,
        0..3u64,
        prop::collection::vec(0..ANY_WORD, 1..4),
        prop::collection::vec(0..ANY_WORD, 0..6),
        prop::collection::vec(0..REFERENCES.len(), 0..3),
    )
        .prop_map(|(brand, series, name, description, references)| Model {
            brand,
            brand_words: Vec::new(),
            series: brand * 10 + series,
            name,
            description,
            references,
        })
}

fn words(indexes: &[usize]) -> String {
    indexes
        .iter()
        .map(|&i| *WORDS.get(i).unwrap_or_else(|| &NEAR_FORMS[i - WORDS.len()]))
        .collect::<Vec<_>>()
        .join(" ")
}

fn doc(id: u64, model: &Model) -> CatalogueDoc {
    CatalogueDoc::Model(ModelDoc {
        id,
        brand_id: model.brand,
        series_id: model.series,
        caliber_id: Some(id % 3),
        name: words(&model.name),
        brand_names: vec![match (model.brand, model.brand_words.is_empty()) {
            (_, false) => words(&model.brand_words),
            (1, true) => "Rolex".into(),
            _ => "Oris".into(),
        }],
        series_name: WORDS[model.series as usize % WORDS.len()].into(),
        description: (!model.description.is_empty()).then(|| words(&model.description)),
        normalized_references: model
            .references
            .iter()
            .map(|&r| REFERENCES[r].to_string())
            .collect(),
        has_front_picture: id % 2 == 0,
        spec: Default::default(),
        ..ModelDoc::default()
    })
}

/// A catalogue built in one rebuild, then models rewritten in later commits (deleting their
/// first documents and adding segments).
fn index_of(models: &[Model], rewritten: &[(usize, Model)]) -> CatalogueIndex {
    let brand = |id, name: &str| {
        CatalogueDoc::Brand(BrandDoc {
            id,
            name: name.into(),
            ..BrandDoc::default()
        })
    };
    // "divers" is a form of "diver": a loose search must not find the brand.
    let brands = vec![brand(1, "Rolex ocean"), brand(2, "Oris divers")];
    crate::tests::rebuilt_then_rewritten(models, brands, rewritten, 3, doc)
}

#[derive(Debug, Clone)]
struct Search {
    words: Vec<String>,
    brand: Option<u64>,
    front_picture: bool,
    offset: usize,
    limit: usize,
}

fn search_strategy() -> impl Strategy<Value = Search> {
    let word = prop_oneof![
        6 => (0..WORDS.len()).prop_map(|i| WORDS[i].to_string()),
        2 => (0..REFERENCES.len()).prop_map(|i| REFERENCES[i].to_string()),
        // Prefixes short enough to be terms and long ones read from whole references.
        1 => (0..REFERENCES.len(), 3..10usize)
            .prop_map(|(i, n)| REFERENCES[i].chars().take(n).collect()),
        1 => Just("rolex".to_string()),
        1 => Just("nowhere".to_string()),
    ];
    (
        prop::collection::vec(word, 1..4),
        prop::option::of(1..=2u64),
        any::<bool>(),
        0..6usize,
        1..8usize,
    )
        .prop_map(|(words, brand, front_picture, offset, limit)| Search {
            words,
            brand,
            front_picture,
            offset,
            limit,
        })
}

fn request(search: &Search) -> SearchRequest {
    let mut request = SearchRequest::filtered(
        DocKind::Model,
        Filters {
            brand_id: search.brand,
            has_front_picture: search.front_picture,
            ..Filters::default()
        },
    );
    request.text = Some(TextQuery {
        typo_tolerance: false,
        text: search.words.join(" "),
        normalized_reference: search.words.concat(),
    });
    request.sort = SortOrder::Relevance;
    request.offset = search.offset;
    request.limit = search.limit;
    request
}

/// A typo-tolerant relevance page of the first `limit` models for `text`, unfiltered.
fn typo_tolerant(text: &str, limit: usize) -> SearchRequest {
    let words: Vec<String> = text.split(' ').map(str::to_owned).collect();
    let mut request = request(&Search {
        words,
        brand: None,
        front_picture: false,
        offset: 0,
        limit,
    });
    request.text = Some(TextQuery {
        typo_tolerance: true,
        text: text.into(),
        normalized_reference: text.replace(' ', ""),
    });
    request
}

/// `search`'s page and total by the pruned path, and by every match scored.
fn pruned_and_exhaustive(
    index: &CatalogueIndex,
    dense: &super::DenseWords,
    search: &Search,
) -> ((Vec<u64>, usize), (Vec<u64>, usize)) {
    let request = request(search);
    let k = request.offset + request.limit;
    let searcher = index.derived.reader.searcher();
    let expected = index
        .exact_ranked(&searcher, &request, k, crate::Pruning::Never)
        .expect("exhaustive");
    let text = request.text.as_ref().expect("text");
    let ids = &index.id_columns;
    let pruned = super::search(&searcher, &index.fields, &request, text, k, dense, ids)
        .expect("pruned")
        .expect("the text has words");
    (pruned, expected)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_pruned_page_and_total_are_those_of_every_match_scored(
        models in prop::collection::vec(model_strategy(), 1..120),
        rewritten in prop::collection::vec((0..1000usize, model_strategy()), 0..10),
        searches in prop::collection::vec(search_strategy(), 1..6),
    ) {
        let index = index_of(&models, &rewritten);
        // Common words kept in segments of any size, so that small catalogues take that path
        // too; and no room to keep any, so that every search reads postings.
        let dense = super::DenseWords::for_segments_of(0);
        let none_kept = super::DenseWords::with_room_for(0, 0);
        for search in &searches {
            let (pruned, expected) = pruned_and_exhaustive(&index, &dense, search);
            prop_assert_eq!(&pruned, &expected, "{:?}", search);
            let (from_postings, _) = pruned_and_exhaustive(&index, &none_kept, search);
            prop_assert_eq!(&from_postings, &expected, "{:?} from postings", search);
        }
    }
}

/// A word of the catalogue misspelt (a letter dropped, two swapped or one replaced), cut to a
/// prefix, or as it is.
fn loose_word_strategy() -> impl Strategy<Value = String> {
    (0..WORDS.len(), 0..4usize, 0..8usize).prop_map(|(w, how, at)| {
        let mut word: Vec<char> = WORDS[w].chars().collect();
        let at = at % word.len();
        match how {
            0 => {
                word.remove(at);
            }
            1 if at + 1 < word.len() => word.swap(at, at + 1),
            2 => word[at] = 'x',
            3 => word.truncate(at.max(2)),
            _ => {}
        }
        word.into_iter().collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// With typo tolerance, the page and total (the typo tier ranked and counted in one pass
    /// over its postings, or counted as bitsets when the exact matches fill the page) are
    /// those of the tier's query with every match scored; with common words kept whole too.
    #[test]
    fn the_typo_tier_is_that_of_its_query_with_every_match_scored(
        models in prop::collection::vec(model_strategy(), 1..120),
        rewritten in prop::collection::vec((0..1000usize, model_strategy()), 0..10),
        searches in prop::collection::vec(
            (search_strategy(), prop::collection::vec(loose_word_strategy(), 0..4)),
            1..6,
        ),
        common_words_kept in any::<bool>(),
    ) {
        let mut index = index_of(&models, &rewritten);
        if common_words_kept {
            index = index.keeping_common_words_of_any_segment();
        }
        for (search, loose) in &searches {
            let mut request = request(search);
            let text = [search.words.as_slice(), loose.as_slice()].concat();
            request.text = Some(TextQuery {
                typo_tolerance: true,
                text: text.join(" "),
                normalized_reference: text.concat(),
            });
            let tier = index.search(&request).expect("search");
            let expected = index.search_exhaustively(&request).expect("exhaustive");
            prop_assert_eq!(&tier, &expected, "{:?}", request.text);
        }
    }
}

#[test]
fn a_page_the_exact_matches_fill_counts_the_typo_tier_from_the_words_kept_whole() {
    let (ocean, steel, oceans) = (0, 2, WORDS.len());
    let ocean_reference = REFERENCES
        .iter()
        .position(|r| *r == "ocean")
        .expect("ocean");
    // A quarter hold both words, a quarter "steel" and the form "oceans", a quarter the same
    // with "ocean" as a reference (exact matches), a quarter "steel" alone.
    let models: Vec<Model> = (0..200)
        .map(|i| Model {
            brand: 1,
            brand_words: vec![],
            // Named "classic".
            series: 11,
            name: match i % 4 {
                0 => vec![ocean, steel],
                1 | 2 => vec![oceans, steel],
                _ => vec![steel],
            },
            description: vec![],
            references: match i % 4 {
                2 => vec![ocean_reference],
                _ => vec![],
            },
        })
        .collect();
    let index = index_of(&models, &[]).keeping_common_words_of_any_segment();
    let request = typo_tolerant("ocean steel", 5);
    let found = index.search(&request).expect("search");
    assert_eq!(found.total, 150, "100 exact matches, 50 through the form");
    assert_eq!(
        found,
        index.search_exhaustively(&request).expect("every match")
    );
    assert!(index.dense_words.len().0 >= 2, "both words were kept whole");
}

#[test]
fn the_typo_tier_counts_no_model_the_whole_text_finds_as_a_reference() {
    let (ocean, steel, steels) = (0, 2, WORDS.len() + 1);
    let whole = REFERENCES
        .iter()
        .position(|r| *r == "oceensteel")
        .expect("reference");
    // Half hold "ocean" (a typo away from "oceen") and "steels" (a prefix of the last word),
    // a quarter of all with the whole text as their reference too: exact matches, never the
    // tier's, though "steel" finds them only through a form. The rest hold "steel" alone.
    let models: Vec<Model> = (0..200)
        .map(|i| Model {
            brand: 1,
            brand_words: vec![],
            series: 11,
            name: match i % 2 {
                0 => vec![ocean, steels],
                _ => vec![steel],
            },
            description: vec![],
            references: match i % 4 {
                0 => vec![whole],
                _ => vec![],
            },
        })
        .collect();
    let index = index_of(&models, &[]).keeping_common_words_of_any_segment();
    let request = typo_tolerant("oceen steel", 5);
    let found = index.search(&request).expect("search");
    assert_eq!(found.total, 100, "50 references, 50 more through the form");
    assert_eq!(
        found,
        index.search_exhaustively(&request).expect("every match")
    );
}

#[test]
fn the_typo_tiers_best_matches_are_found_after_its_first_machine_words() {
    let (ocean, steel) = (0, 2);
    // "ocean" is a typo away from "oceen": in the description of the first 150 models (a
    // quarter of the weight of a name), in the name of the last 50, which rank first.
    let models: Vec<Model> = (0..200)
        .map(|i| Model {
            brand: 1,
            brand_words: vec![],
            series: 11,
            name: match i < 150 {
                true => vec![steel],
                false => vec![ocean, steel],
            },
            description: match i < 150 {
                true => vec![ocean],
                false => vec![],
            },
            references: vec![],
        })
        .collect();
    for kept in [false, true] {
        let mut index = index_of(&models, &[]);
        if kept {
            index = index.keeping_common_words_of_any_segment();
        }
        let request = typo_tolerant("oceen", 5);
        let found = index.search(&request).expect("search");
        let expected = index.search_exhaustively(&request).expect("every match");
        assert_eq!(found, expected, "common words kept: {kept}");
        assert_eq!(found.total, 200);
    }
}

#[test]
fn a_words_matches_kept_for_one_commit_are_not_the_next_ones() {
    let (ocean, steel) = (0, 2);
    let model = |name: Vec<usize>, description: Vec<usize>| Model {
        brand: 1,
        brand_words: vec![],
        series: 11,
        name,
        description,
        references: vec![],
    };
    // Every model named "steel", every other with "ocean" (a typo away from "oceen") in its
    // description: the typo tier of "oceen steel".
    let models: Vec<Model> = (0..200)
        .map(|i| model(vec![steel], if i % 2 == 0 { vec![ocean] } else { vec![] }))
        .collect();
    let index = index_of(&models, &[]).keeping_common_words_of_any_segment();
    let request = typo_tolerant("oceen steel", 5);
    assert_eq!(index.search(&request).expect("search").total, 100);
    // The next commit writes ten of the others again with "ocean" in their names (a segment
    // of their own, their first versions deleted): a search must see them, first on the page.
    let rewritten: Vec<CatalogueDoc> = (0..10u64)
        .map(|i| doc(2 * i + 2, &model(vec![ocean, steel], vec![])))
        .collect();
    index.update(&rewritten, 2).expect("update");
    let found = index.search(&request).expect("search");
    assert_eq!(found.total, 110);
    assert_eq!(found.ids[..3], [2, 4, 6]);
    assert_eq!(
        found,
        index.search_exhaustively(&request).expect("every match")
    );
}

#[test]
fn common_words_are_intersected_as_bitsets_with_the_same_page_and_total() {
    // Every model holds "ocean" or "steel" or both: both words are common in the segment.
    let models: Vec<Model> = (0..200)
        .map(|i| Model {
            brand: 1 + i % 2,
            brand_words: vec![],
            series: 10,
            name: match i % 3 {
                0 => vec![0],
                1 => vec![2],
                _ => vec![0, 2],
            },
            description: vec![(i % 10) as usize],
            references: vec![],
        })
        .collect();
    let index = index_of(&models, &[(7, models[1].clone())]);
    let dense = super::DenseWords::for_segments_of(0);
    for (brand, pages) in [
        (None, [(0, 5), (3, 10), (60, 20)]),
        (Some(1), [(0, 5), (2, 7), (40, 30)]),
    ] {
        for (offset, limit) in pages {
            let search = Search {
                words: vec!["ocean".into(), "steel".into()],
                brand,
                front_picture: false,
                offset,
                limit,
            };
            let (pruned, expected) = pruned_and_exhaustive(&index, &dense, &search);
            assert_eq!(pruned, expected, "brand {brand:?}, offset {offset}");
        }
    }
    assert!(
        dense.len().0 >= 2,
        "the words without a filter were taken as bitsets"
    );
}

#[test]
fn common_words_are_scored_from_their_field_frequencies_as_from_postings() {
    // "ocean" seven to nine times in some descriptions (more than a code holds), once or twice
    // in others, in names of several lengths; "steel" in every name.
    let models: Vec<Model> = (0..150)
        .map(|i| Model {
            brand: 1 + i as u64 % 2,
            brand_words: vec![],
            series: 10 + i as u64 % 3,
            name: [vec![2], vec![0; i % 3], vec![9; i % 4]].concat(),
            description: [vec![0; [0, 1, 2, 7, 8, 9][i % 6]], vec![i % 10]].concat(),
            references: vec![],
        })
        .collect();
    let index = index_of(&models, &[(4, models[9].clone()), (5, models[3].clone())]);
    for words in [
        vec!["ocean"],
        vec!["steel"],
        vec!["ocean", "steel"],
        vec!["moon", "ocean"],
    ] {
        for (offset, limit) in [(0, 5), (3, 10), (40, 30), (0, 200)] {
            let search = Search {
                words: words.iter().map(|w| w.to_string()).collect(),
                brand: None,
                front_picture: false,
                offset,
                limit,
            };
            let dense = super::DenseWords::for_segments_of(0);
            let (pruned, expected) = pruned_and_exhaustive(&index, &dense, &search);
            assert_eq!(pruned, expected, "{words:?}, offset {offset}");
            assert!(dense.len().0 >= words.len(), "{words:?} were kept whole");
            // With no room to keep a word, the postings give the same page.
            let full = super::DenseWords::with_room_for(0, 0);
            let (from_postings, _) = pruned_and_exhaustive(&index, &full, &search);
            assert_eq!(from_postings, expected, "{words:?} from postings");
            assert_eq!(full.len().0, 0);
        }
    }
}

#[test]
fn a_word_with_more_different_codes_than_kept_reads_postings_and_is_not_made_again() {
    // "ocean" in every model, as often as 0-7 times in its name, brand name and description
    // and 0-1 times in its series name: 300 different codes, more than a word kept holds.
    let codes = (0..8usize).flat_map(|name| {
        (0..8usize).flat_map(move |brand| {
            (0..2usize).flat_map(move |series| {
                (0..8usize).map(move |description| (name, brand, series, description))
            })
        })
    });
    let models: Vec<Model> = codes
        .filter(|&code| code != (0, 0, 0, 0))
        .take(300)
        .map(|(name, brand, series, description)| Model {
            brand: 1,
            brand_words: [vec![0; brand], vec![2]].concat(),
            series: 11 - series as u64,
            name: [vec![0; name], vec![9]].concat(),
            description: vec![0; description],
            references: vec![],
        })
        .collect();
    let index = index_of(&models, &[]);
    let dense = super::DenseWords::for_segments_of(0);
    let search = Search {
        words: vec!["ocean".into()],
        brand: None,
        front_picture: false,
        offset: 0,
        limit: 10,
    };
    for _ in 0..2 {
        let (pruned, expected) = pruned_and_exhaustive(&index, &dense, &search);
        assert_eq!(pruned, expected);
        assert_eq!(dense.len(), (0, 1, 1), "refused once, made once");
    }
}

#[test]
fn a_search_of_more_words_than_the_reference_pass_holds_falls_back() {
    let index = index_of(
        &[Model {
            brand: 1,
            brand_words: vec![],
            series: 10,
            name: vec![0],
            description: vec![],
            references: vec![],
        }],
        &[],
    );
    let mut request = request(&Search {
        words: vec!["ocean".into(); 1],
        brand: None,
        front_picture: false,
        offset: 0,
        limit: 5,
    });
    let many: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
    request.text = Some(TextQuery {
        typo_tolerance: false,
        text: many.join(" "),
        normalized_reference: many.concat(),
    });
    let searcher = index.derived.reader.searcher();
    let text = request.text.as_ref().expect("text");
    assert!(super::search(
        &searcher,
        &index.fields,
        &request,
        text,
        5,
        &index.dense_words,
        &index.id_columns
    )
    .expect("pruned")
    .is_none());
    assert_eq!(index.search(&request).expect("search").total, 0);
}

#[test]
fn only_candidates_that_cannot_reach_the_best_k_whatever_the_rest_adds_are_dropped() {
    let mut candidates = vec![1, 2, 3, 4];
    let mut partial = vec![10.0, 2.0, 9.0, 1.0];
    // The 2nd best partial is 9: a candidate needs at least 9 - 7 = 2 now to reach it.
    super::drop_hopeless(&mut candidates, &mut partial, 7.0, 2, &mut Vec::new());
    assert_eq!(candidates, [1, 2, 3]);
    assert_eq!(partial, [10.0, 2.0, 9.0]);
    // No more than k candidates: nothing to drop.
    super::drop_hopeless(&mut candidates, &mut partial, 0.0, 3, &mut Vec::new());
    assert_eq!(candidates, [1, 2, 3]);
    super::drop_hopeless(&mut candidates, &mut partial, 0.5, 1, &mut Vec::new());
    assert_eq!(candidates, [1]);
}
