//! Property tests: the listings index's pages, totals and prices against a simple reference
//! (filter a list of documents, sort it, slice it) on random listings, written in several
//! commits (several segments, replaced documents, so deletes) and random filters.

use super::*;
use proptest::prelude::*;

/// Prices drawn from few values, so ties and ranges on them happen, and the sentinel's value.
fn price() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        2 => Just(None),
        6 => (0u64..6).prop_map(|p| Some(p * 100)),
        1 => Just(Some(u64::MAX)),
        1 => Just(Some(u64::MAX - 1)),
    ]
}

fn small(max: u64) -> impl Strategy<Value = Option<u64>> {
    prop::option::of(0..max)
}

fn listing(id: u64) -> impl Strategy<Value = ListingDoc> {
    let currency = prop::option::of(prop::sample::select(vec!["USD", "EUR", "CHF"]));
    (
        (0u64..2, small(4), small(3), 0u64..3, small(5)),
        (small(3), small(2), price(), price(), currency),
    )
        .prop_map(
            move |(
                (provider_id, model_id, brand_id, status, box_papers),
                (condition, availability, price, price_usd, currency),
            )| {
                ListingDoc {
                    id,
                    provider_id,
                    model_id,
                    brand_id,
                    unmatched_reason: model_id.is_none().then_some(id % 2),
                    status,
                    condition,
                    availability,
                    box_papers,
                    price,
                    currency: currency.map(str::to_owned),
                    price_usd,
                    ..ListingDoc::default()
                }
            },
        )
}

/// Listings with distinct ids in shuffled order, cut into commits, then some of them written
/// again with other values: the final state is the last version of each id.
fn history() -> impl Strategy<Value = Vec<Vec<ListingDoc>>> {
    history_of(|id| listing(id).boxed(), 1..60)
}

/// [`history`] of listings made by `make`, `count` of them.
fn history_of(
    make: fn(u64) -> BoxedStrategy<ListingDoc>,
    count: std::ops::Range<usize>,
) -> impl Strategy<Value = Vec<Vec<ListingDoc>>> {
    prop::collection::btree_set(1u64..4_000, count)
        .prop_flat_map(move |ids| {
            let docs: Vec<_> = ids.into_iter().map(make).collect();
            (docs, 1usize..4)
                .prop_flat_map(|(docs, parts)| (Just(docs).prop_shuffle(), Just(parts)))
        })
        .prop_flat_map(move |(docs, parts)| {
            let rewrites: Vec<_> = docs
                .iter()
                .take(docs.len() / 3)
                .map(|d| make(d.id))
                .collect();
            (Just(docs), Just(parts), rewrites)
        })
        .prop_map(|(docs, parts, rewrites)| {
            let size = docs.len().div_ceil(parts);
            let mut commits: Vec<Vec<ListingDoc>> = docs.chunks(size).map(<[_]>::to_vec).collect();
            commits.push(rewrites);
            commits
        })
}

fn filters() -> impl Strategy<Value = ListingFilters> {
    let statuses = prop::collection::vec(0u64..3, 0..3);
    (
        (small(5), small(4), small(3), small(4), small(3)),
        (
            statuses,
            prop::collection::vec(0u64..3, 0..2),
            price(),
            price(),
        ),
        (any::<bool>(), small(3)),
    )
        .prop_map(
            |(
                (model_id, brand_id, provider_id, condition, availability),
                (statuses, hidden_statuses, min, max),
                (unmatched, reason),
            )| {
                ListingFilters {
                    model_id,
                    brand_id,
                    provider_id,
                    condition,
                    availability,
                    statuses,
                    hidden_statuses,
                    min_price_usd: min,
                    max_price_usd: max,
                    unmatched,
                    unmatched_reason: reason,
                }
            },
        )
}

fn sort() -> impl Strategy<Value = ListingSort> {
    prop::sample::select(vec![
        ListingSort::Relevance,
        ListingSort::Newest,
        ListingSort::Oldest,
        ListingSort::PriceAsc,
        ListingSort::PriceDesc,
    ])
}

/// Page sizes, and every match at once (what the back office's jobs ask).
fn limit() -> impl Strategy<Value = usize> {
    prop_oneof![4 => 0usize..15, 1 => Just(usize::MAX - 20)]
}

/// The final listings of a history, by id.
fn final_state(commits: &[Vec<ListingDoc>]) -> Vec<ListingDoc> {
    let mut by_id = std::collections::BTreeMap::new();
    for doc in commits.iter().flatten() {
        by_id.insert(doc.id, doc.clone());
    }
    by_id.into_values().collect()
}

fn build(commits: &[Vec<ListingDoc>]) -> ListingIndex {
    let index = ListingIndex::in_memory().expect("index");
    let (first, rest) = commits.split_first().expect("a commit");
    index
        .rebuild(first.clone().into_par_iter().map(Ok::<_, IndexError>), 1)
        .expect("rebuild");
    for (generation, docs) in (2..).zip(rest) {
        index.upsert(docs, generation).expect("upsert");
    }
    index
}

fn selects(f: &ListingFilters, d: &ListingDoc) -> bool {
    let same = |want: Option<u64>, have: Option<u64>| want.is_none() || want == have;
    same(f.model_id, d.model_id)
        && same(f.brand_id, d.brand_id)
        && same(f.provider_id, Some(d.provider_id))
        && same(f.condition, d.condition)
        && same(f.availability, d.availability)
        && (f.statuses.is_empty() || f.statuses.contains(&d.status))
        && !f.hidden_statuses.contains(&d.status)
        && f.min_price_usd
            .is_none_or(|min| d.price_usd.is_some_and(|p| p >= min))
        && f.max_price_usd
            .is_none_or(|max| d.price_usd.is_some_and(|p| p <= max))
        && (!f.unmatched || d.model_id.is_none())
        && same(f.unmatched_reason, d.unmatched_reason)
}

/// The page and total as the contract states them: filter, sort (ties to the lower id,
/// unpriced last both ways, no text so every score ties), slice.
fn reference_page(docs: &[ListingDoc], query: &ListingQuery) -> (Vec<u64>, usize) {
    let mut hits: Vec<&ListingDoc> = docs.iter().filter(|d| selects(&query.filters, d)).collect();
    let price_key = |d: &ListingDoc, descending: bool| match d.price_usd {
        Some(p) if descending => (0, u64::MAX - p),
        Some(p) => (0, p),
        None => (1, 0),
    };
    match query.sort {
        ListingSort::Relevance | ListingSort::Oldest => hits.sort_by_key(|d| d.id),
        ListingSort::Newest => hits.sort_by_key(|d| std::cmp::Reverse(d.id)),
        ListingSort::PriceAsc => hits.sort_by_key(|d| (price_key(d, false), d.id)),
        ListingSort::PriceDesc => hits.sort_by_key(|d| (price_key(d, true), d.id)),
    }
    let ids = hits
        .iter()
        .skip(query.offset)
        .take(query.limit)
        .map(|d| d.id)
        .collect();
    (ids, hits.len())
}

/// Each query's page and total from `index` against [`reference_page`] over `docs`.
fn pages_agree(
    index: &ListingIndex,
    docs: &[ListingDoc],
    queries: Vec<(ListingFilters, ListingSort, usize, usize)>,
) -> Result<(), TestCaseError> {
    for (filters, sort, offset, limit) in queries {
        let query = ListingQuery {
            text: None,
            filters,
            sort,
            offset,
            limit,
        };
        let hits = index.search(&query).expect("search");
        let (ids, total) = reference_page(docs, &query);
        prop_assert_eq!(&hits.ids, &ids, "{:?}", query);
        prop_assert_eq!(hits.total, total, "{:?}", query);
    }
    Ok(())
}

fn reference_prices(
    docs: &[ListingDoc],
    filters: &ListingFilters,
    currency: &str,
) -> PricedListings {
    let selected: Vec<&ListingDoc> = docs.iter().filter(|d| selects(filters, d)).collect();
    let priced = selected
        .iter()
        .filter_map(|d| {
            let own = (d.currency.as_deref() == Some(currency)).then_some(d.price?);
            d.price.map(|_| PricePoint {
                usd: d.price_usd,
                own,
            })
        })
        .collect();
    PricedListings {
        count: selected.len(),
        priced,
    }
}

fn sorted(mut listings: PricedListings) -> PricedListings {
    listings.priced.sort_by_key(|p| (p.usd, p.own));
    listings
}

/// The caller's code of `grouping` on `doc`.
fn group_code(doc: &ListingDoc, grouping: PriceGrouping) -> Option<u64> {
    match grouping {
        PriceGrouping::Condition => doc.condition,
        PriceGrouping::BoxPapers => doc.box_papers,
    }
}

/// [`reference_prices`] of each group of `grouping` that has a listing, prices sorted.
fn reference_grouped(
    docs: &[ListingDoc],
    filters: &ListingFilters,
    currency: &str,
    grouping: PriceGrouping,
) -> GroupedPrices {
    let codes: std::collections::BTreeSet<Option<u64>> = (docs.iter())
        .filter(|d| selects(filters, d))
        .map(|d| group_code(d, grouping))
        .collect();
    codes
        .into_iter()
        .map(|code| {
            let in_group: Vec<ListingDoc> = (docs.iter())
                .filter(|d| group_code(d, grouping) == code)
                .cloned()
                .collect();
            (code, sorted(reference_prices(&in_group, filters, currency)))
        })
        .collect()
}

/// Each group's listings with their prices sorted.
fn sorted_groups(groups: GroupedPrices) -> GroupedPrices {
    groups
        .into_iter()
        .map(|(code, listings)| (code, sorted(listings)))
        .collect()
}

/// The groups' listings as one.
fn merged(groups: &GroupedPrices) -> PricedListings {
    let mut all = PricedListings::default();
    for listings in groups.values() {
        all.count += listings.count;
        all.priced.extend(&listings.priced);
    }
    all
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn pages_and_totals_agree_with_the_reference(
        commits in history(),
        queries in prop::collection::vec((filters(), sort(), 0usize..20, limit()), 1..12),
    ) {
        let index = build(&commits);
        let docs = final_state(&commits);
        prop_assert_eq!(index.len(), docs.len() as u64);
        pages_agree(&index, &docs, queries)?;
    }

    #[test]
    fn prices_agree_with_the_reference(
        commits in history(),
        queries in prop::collection::vec((filters(), prop::sample::select(vec!["USD", "EUR", "GBP"])), 1..8),
    ) {
        let index = build(&commits);
        let docs = final_state(&commits);
        for (mut filters, currency) in queries {
            // What the stats ask: one model, one status (the one postings list) - and others.
            if filters.model_id.is_some() {
                filters.statuses.truncate(1);
            }
            let got = index.prices(&filters, currency).expect("prices");
            let want = reference_prices(&docs, &filters, currency);
            prop_assert_eq!(sorted(got), sorted(want), "{:?} {}", filters, currency);
        }
    }
}

/// A listing of the browse page's tests: two conditions, every status, dollar prices dense
/// around a few buckets (so that bucket edges fall between prices).
fn browse_listing(id: u64) -> BoxedStrategy<ListingDoc> {
    let usd = prop_oneof![1 => Just(None), 12 => (90u64..700).prop_map(Some)];
    (small(2), 0u64..3, usd)
        .prop_map(move |(condition, status, price_usd)| ListingDoc {
            id,
            model_id: Some(1),
            status,
            condition,
            price: price_usd,
            currency: Some("USD".into()),
            price_usd,
            ..ListingDoc::default()
        })
        .boxed()
}

/// What the browse page asks: a condition or none, the hidden statuses, and a price range,
/// narrow enough for the bucket walk most of the time.
fn browse_filters() -> impl Strategy<Value = ListingFilters> {
    let bound = prop_oneof![8 => (90u64..700).prop_map(Some), 1 => price()];
    (
        small(2),
        prop::collection::vec(0u64..3, 0..2),
        bound.clone(),
        bound,
    )
        .prop_map(|(condition, hidden_statuses, min, max)| ListingFilters {
            condition,
            hidden_statuses,
            min_price_usd: min,
            max_price_usd: max,
            ..ListingFilters::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The bucket walk's pages and totals (and the union's, when the range is too wide or the
    /// order is relevance) against the reference, on pages small beside a bucket's listings:
    /// asked twice (the second time from the kept edge buckets), then again after one more
    /// commit, so kept edges meet later deletes and a new segment.
    #[test]
    fn browse_pages_agree_with_the_reference(
        commits in history_of(browse_listing, 100..400),
        queries in prop::collection::vec((browse_filters(), sort(), 0usize..4, 1usize..6), 1..12),
    ) {
        let (last, before) = commits.split_last().expect("commits");
        let index = build(before);
        let docs = final_state(before);
        pages_agree(&index, &docs, queries.clone())?;
        pages_agree(&index, &docs, queries.clone())?;
        index.upsert(last, 1_000).expect("upsert");
        pages_agree(&index, &final_state(&commits), queries)?;
    }
}

/// Filters without a price range, as a page by price asks them of the price walk: all of
/// [`filters`] at times, else few (a condition, a brand, hidden statuses), so that pages fill
/// from the buckets as well as need the unpriced listings.
fn filters_without_range() -> impl Strategy<Value = ListingFilters> {
    let few = (
        prop::option::weighted(0.6, 0u64..3),
        prop::option::weighted(0.3, 0u64..3),
        prop::collection::vec(0u64..3, 0..2),
    )
        .prop_map(|(condition, brand_id, hidden_statuses)| ListingFilters {
            condition,
            brand_id,
            hidden_statuses,
            ..ListingFilters::default()
        });
    prop_oneof![1 => filters(), 3 => few].prop_map(|filters| ListingFilters {
        min_price_usd: None,
        max_price_usd: None,
        ..filters
    })
}

fn by_price() -> impl Strategy<Value = ListingSort> {
    prop::sample::select(vec![ListingSort::PriceAsc, ListingSort::PriceDesc])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The price walk's pages and totals against the reference: pages its buckets fill, and
    /// pages that need the unpriced listings too (the page collector's then).
    #[test]
    fn pages_by_price_agree_with_the_reference(
        commits in history_of(|id| listing(id).boxed(), 1..200),
        queries in prop::collection::vec((filters_without_range(), by_price(), 0usize..6, 1usize..8), 1..12),
    ) {
        pages_agree(&build(&commits), &final_state(&commits), queries)?;
    }
}

/// The first page of 20 of `filters` in `sort`, without text.
fn first_page(filters: ListingFilters, sort: ListingSort) -> ListingQuery {
    ListingQuery {
        text: None,
        filters,
        sort,
        offset: 0,
        limit: 20,
    }
}

/// `query` with one change.
fn varied(query: &ListingQuery, change: impl FnOnce(&mut ListingQuery)) -> ListingQuery {
    let mut varied = query.clone();
    change(&mut varied);
    varied
}

/// `query` with a text.
fn with_text(query: &ListingQuery) -> ListingQuery {
    ListingQuery {
        text: Some(crate::query::TextQuery {
            typo_tolerance: false,
            text: "submariner".into(),
            normalized_reference: "submariner".into(),
        }),
        ..query.clone()
    }
}

/// A page by price with filters but no range takes the price walk (so the property above
/// tests it); a range, text, another order or a deep page does not.
#[test]
fn a_page_by_price_without_a_range_takes_the_price_walk() {
    let index = ListingIndex::in_memory().expect("index");
    let by_brand = first_page(
        ListingFilters {
            brand_id: Some(1),
            hidden_statuses: vec![2],
            ..ListingFilters::default()
        },
        ListingSort::PriceAsc,
    );
    assert!(index.fields.price_walk(&by_brand).is_some());
    let others = [
        varied(&by_brand, |q| q.filters.max_price_usd = Some(5_000)),
        varied(&by_brand, |q| q.sort = ListingSort::Newest),
        varied(&by_brand, |q| q.offset = 5_000),
        with_text(&by_brand),
    ];
    for query in others {
        assert!(index.fields.price_walk(&query).is_none(), "{query:?}");
    }
}

/// The browse page's shape takes the bucket walk (so the property above tests it); other
/// filters, text, relevance or a wide range do not.
#[test]
fn the_browse_page_takes_the_bucket_walk() {
    let index = ListingIndex::in_memory().expect("index");
    let browse = first_page(
        ListingFilters {
            condition: Some(1),
            hidden_statuses: vec![2],
            min_price_usd: Some(1_000),
            max_price_usd: Some(5_000),
            ..ListingFilters::default()
        },
        ListingSort::Newest,
    );
    assert!(index.fields.bucket_walk(&browse).is_some());
    let others = [
        varied(&browse, |q| q.filters.brand_id = Some(1)),
        varied(&browse, |q| q.sort = ListingSort::Relevance),
        varied(&browse, |q| q.filters.min_price_usd = Some(1)),
        with_text(&browse),
    ];
    for query in others {
        assert!(index.fields.bucket_walk(&query).is_none(), "{query:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The stats' runs, every one kept (no minimum length), against the reference and the
    /// price collector, whole and split by each grouping: asked twice (the second time from
    /// the kept runs), then again after one more commit, so kept runs meet later deletes and a
    /// new segment; and once from runs too short to keep, read afresh.
    #[test]
    fn model_prices_agree_with_the_reference_across_commits(
        commits in history(),
        asks in prop::collection::vec(
            (0u64..4, 0u64..3, prop::sample::select(vec!["USD", "EUR", "GBP"])),
            1..8,
        ),
    ) {
        let (last, before) = commits.split_last().expect("commits");
        let mut index = build(before);
        index.runs = RunCache::new(0);
        let check = |index: &ListingIndex, docs: &[ListingDoc]| -> Result<(), TestCaseError> {
            for &(model, status, currency) in &asks {
                let filters = ListingFilters {
                    model_id: Some(model),
                    statuses: vec![status],
                    ..ListingFilters::default()
                };
                let got = index.model_prices(model, status, currency).expect("model prices");
                let collected = index.prices(&filters, currency).expect("prices");
                prop_assert_eq!(&got, &collected, "{:?} {}", filters, currency);
                let want = reference_prices(docs, &filters, currency);
                prop_assert_eq!(sorted(got.clone()), sorted(want), "{:?} {}", filters, currency);
                for grouping in [PriceGrouping::Condition, PriceGrouping::BoxPapers] {
                    let groups = index
                        .model_prices_by(model, status, currency, grouping)
                        .expect("grouped");
                    prop_assert_eq!(
                        sorted(merged(&groups)),
                        sorted(got.clone()),
                        "{:?} {} {:?}: the groups hold every listing once", filters, currency, grouping
                    );
                    prop_assert_eq!(
                        sorted_groups(groups),
                        reference_grouped(docs, &filters, currency, grouping),
                        "{:?} {} {:?}", filters, currency, grouping
                    );
                }
            }
            Ok(())
        };
        check(&index, &final_state(before))?;
        check(&index, &final_state(before))?;
        check(&build(before), &final_state(before))?;
        index.upsert(last, 1_000).expect("upsert");
        check(&index, &final_state(&commits))?;
    }
}

/// Kept at start: the runs of the wanted status long enough to keep, and only those.
#[test]
fn the_large_models_runs_of_a_status_are_kept_at_start() {
    let listing = |id, model, status| ListingDoc {
        id,
        model_id: Some(model),
        status,
        price: Some(100 * id),
        currency: Some("EUR".into()),
        price_usd: Some(110 * id),
        ..ListingDoc::default()
    };
    let mut docs: Vec<ListingDoc> = (1..=5).map(|id| listing(id, 7, 0)).collect();
    docs.extend((6..=7).map(|id| listing(id, 8, 0)));
    docs.extend((8..=11).map(|id| listing(id, 7, 10)));
    let mut index = ListingIndex::in_memory().expect("index");
    index.runs = RunCache::new(3);
    index.upsert(&docs, 1).expect("upsert");
    assert_eq!(index.keep_large_model_prices(0).expect("keep"), 1);
    assert_eq!(
        index.runs.kept_runs(),
        1,
        "model 7's five; not model 8's two nor status 10"
    );
    let filters = ListingFilters {
        model_id: Some(7),
        statuses: vec![0],
        ..ListingFilters::default()
    };
    assert_eq!(
        index.model_prices(7, 0, "EUR").expect("kept"),
        index.prices(&filters, "EUR").expect("collected")
    );
    assert_eq!(index.runs.kept_runs(), 1);
}

/// A kept run is what answers again, and a later commit's deletes apply to it: one model's
/// listings, one delisted in a later commit.
#[test]
fn a_kept_run_answers_again_with_later_deletes_applied() {
    let listing = |id, status| ListingDoc {
        id,
        model_id: Some(7),
        status,
        price: Some(100 * id),
        currency: Some("EUR".into()),
        price_usd: Some(110 * id),
        ..ListingDoc::default()
    };
    let mut index = ListingIndex::in_memory().expect("index");
    index.runs = RunCache::new(3);
    let docs: Vec<ListingDoc> = (1..=5).map(|id| listing(id, 0)).collect();
    index.upsert(&docs, 1).expect("upsert");
    let first = index.model_prices(7, 0, "EUR").expect("prices");
    assert_eq!(first.count, 5);
    assert_eq!(index.runs.kept_runs(), 1, "a run of 5 listings is kept");
    index.upsert(&[listing(2, 1)], 2).expect("upsert");
    let after = index.model_prices(7, 0, "EUR").expect("prices");
    assert_eq!(after.count, 4, "the kept run's listing 2 is deleted");
    let owns: Vec<_> = after.priced.iter().map(|point| point.own).collect();
    assert_eq!(owns, [Some(100), Some(300), Some(400), Some(500)]);
    // The new segment holds no listing of model 7 in status 0: a run of none, too short to keep.
    assert_eq!(index.runs.kept_runs(), 1);
    assert_eq!(index.model_prices(7, 1, "USD").expect("prices").count, 1);
}

proptest! {
    /// Buckets never decrease with the price, so a range's buckets hold every price in it.
    #[test]
    fn price_buckets_never_decrease(a in any::<u64>(), b in any::<u64>()) {
        let (low, high) = (a.min(b), a.max(b));
        prop_assert!(price_bucket(low) <= price_bucket(high));
        prop_assert!(price_bucket(high) <= MAX_PRICE_BUCKET);
    }
}

#[test]
fn a_bucket_is_a_quarter_of_a_doubling() {
    let buckets: Vec<u64> = [0, 3, 4, 7, 8, 9, 10, 12, 15, 16, 1_000, 1_023, 1_024, 5_000]
        .into_iter()
        .map(price_bucket)
        .collect();
    assert_eq!(
        buckets,
        [0, 3, 8, 11, 12, 12, 13, 14, 15, 16, 39, 39, 40, 48]
    );
    assert_eq!(
        price_bucket(u64::MAX),
        MAX_PRICE_BUCKET,
        "the price walk's last bucket"
    );
}

/// Prices on both sides of bucket boundaries, in two conditions, against ranges whose ends fall
/// inside, on and beside buckets: what the split into inner and edge buckets must get right
/// (random filters rarely land a narrow range on matching listings).
#[test]
fn narrow_price_ranges_agree_with_the_reference_at_bucket_edges() {
    let prices = [
        999, 1_000, 1_023, 1_024, 1_279, 1_280, 4_095, 4_096, 5_000, 5_001, 6_000, 20_000,
    ];
    let docs: Vec<ListingDoc> = prices
        .iter()
        .enumerate()
        .flat_map(|(i, &price)| {
            (0..2u64).map(move |condition| ListingDoc {
                id: 2 * i as u64 + condition + 1,
                condition: Some(condition),
                price: Some(price),
                currency: Some("USD".into()),
                price_usd: Some(price),
                ..ListingDoc::default()
            })
        })
        .collect();
    let index = build(std::slice::from_ref(&docs));
    let ranges = [
        (1_000, 5_000),
        (1_001, 4_999),
        (1_024, 1_279),
        (1_023, 1_024),
        (1_100, 1_200),
        (4_096, 4_096),
        (999, 20_000),
        (5_000, 1_000),
    ];
    for (min, max) in ranges {
        for condition in [None, Some(1)] {
            for sort in [
                ListingSort::Newest,
                ListingSort::Oldest,
                ListingSort::PriceAsc,
            ] {
                let query = ListingQuery {
                    text: None,
                    filters: ListingFilters {
                        condition,
                        min_price_usd: Some(min),
                        max_price_usd: Some(max),
                        ..ListingFilters::default()
                    },
                    sort,
                    offset: 0,
                    limit: 5,
                };
                let hits = index.search(&query).expect("search");
                let (ids, total) = reference_page(&docs, &query);
                assert_eq!((hits.ids, hits.total), (ids, total), "{query:?}");
            }
        }
    }
}
