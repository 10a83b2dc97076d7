//! Models' price series as the writer logs them and the folder keeps them (D-209), against a
//! recomputation of each period from the listings' price histories alone: revisits that
//! change prices and currencies, delist and relist, and links that move a listing to another
//! model, weeks apart.

use super::{fold_logged, FoldReport, SeriesFolder};
use crate::domain::price_history::{price_history, PriceEvent, PricePoint};
use crate::domain::price_series::{
    day_of, format_day, midnight, parse_day, Interval, Period, PeriodFigures, RatesHistory,
    RatesKind,
};
use crate::domain::rates::{parse_ecb_xml, EcbRates};
use crate::domain::{
    matched_listing, price_figures, Listing, ListingId, ListingStatus, MatchOutcome, ModelId,
    Timestamp,
};
use crate::jobs::context::JobContext;
use crate::jobs::price_series::model_series;
use crate::store::{RecordKind, Store, StoreError};
use proptest::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const HOUR: i64 = 3_600_000;

/// The fixtures' catalogue and rates, with three more days of rates around theirs (9 May 2025)
/// weeks apart, no listing, indexes current.
fn context(dir: &std::path::Path) -> JobContext {
    let context = crate::jobs::context::fixture_context(dir);
    let fixture = parse_ecb_xml(include_str!("../../fixtures/rates.xml")).expect("rates");
    let days = [
        ("2025-04-02", "1.0801"),
        ("2025-04-25", "1.1370"),
        ("2025-06-11", "1.1420"),
    ];
    for (date, usd) in days {
        let mut day = fixture.clone();
        day.date = date.to_owned();
        day.rates.retain(|(currency, _)| currency != "USD");
        day.rates.push(("USD".to_owned(), usd.to_owned()));
        put_rates(&context, &day);
    }
    context
}

fn put_rates(context: &JobContext, day: &EcbRates) {
    context
        .writer()
        .run(|turn| {
            let mut batch = turn.batch()?;
            batch.put_rates(day)?;
            turn.commit(batch)
        })
        .expect("rates");
}

/// Writes `new` over `old` through the writer, as a revisit or a link does.
fn write(context: &JobContext, old: Option<&Listing>, new: &Listing) {
    context
        .writer()
        .run(|turn| {
            let mut batch = turn.batch()?;
            batch.put_listing(old, new);
            turn.commit(batch)
        })
        .expect("write");
}

fn two_models(context: &JobContext) -> [ModelId; 2] {
    let models = context.store().catalogue().model_ids().expect("models");
    [models[0], models[1]]
}

/// A listing first seen at `at`, matched to `model`.
fn created(
    context: &JobContext,
    model: ModelId,
    asking: (Option<u64>, &str),
    at: Timestamp,
) -> Listing {
    let written = context.writer().run(|turn| {
        let mut batch = turn.batch()?;
        let id = batch.allocate_id(RecordKind::Listing)?;
        let listing = matched_listing(ListingId(id), model, asking, at);
        batch.put_listing(None, &listing);
        turn.commit(batch)?;
        Ok::<_, StoreError>(listing)
    });
    written.expect("a listing").value
}

/// What a revisit or a person does to one listing.
#[derive(Debug, Clone)]
enum Step {
    Create {
        other_model: bool,
        price: Option<u64>,
        currency: &'static str,
    },
    Reprice {
        price: Option<u64>,
        currency: &'static str,
    },
    Delist,
    Relist(Option<u64>),
    Reserve,
    Link,
}

fn step() -> impl Strategy<Value = Step> {
    let currency = prop::sample::select(vec!["EUR", "USD", "GBP", "XXX"]);
    let price = prop::option::weighted(0.9, 100u64..90_000);
    prop_oneof![
        3 => (any::<bool>(), price.clone(), currency.clone())
            .prop_map(|(other_model, price, currency)| Step::Create { other_model, price, currency }),
        3 => (price, currency).prop_map(|(price, currency)| Step::Reprice { price, currency }),
        2 => Just(Step::Delist),
        2 => prop::option::of(100u64..90_000).prop_map(Step::Relist),
        1 => Just(Step::Reserve),
        2 => Just(Step::Link),
    ]
}

/// Applies `step` to the `which`-th listing (modulo those made) at `at`.
fn apply(
    context: &JobContext,
    made: &mut Vec<Listing>,
    models: [ModelId; 2],
    which: usize,
    step: &Step,
    at: Timestamp,
) {
    if let Step::Create {
        other_model,
        price,
        currency,
    } = step
    {
        let model = models[usize::from(*other_model)];
        made.push(created(context, model, (*price, currency), at));
        return;
    }
    if made.is_empty() {
        return;
    }
    let at_index = which % made.len();
    let old = made[at_index].clone();
    let mut new = old.clone();
    new.updated_at = at;
    new.last_seen_at = at;
    let delisted = old.status == ListingStatus::Delisted;
    match step {
        Step::Reprice { price, currency } if !delisted => {
            new.details.price = *price;
            new.details.currency = Some((*currency).to_owned());
        }
        Step::Delist if !delisted => new.set_status(ListingStatus::Delisted, at),
        Step::Relist(price) if delisted => {
            new.set_status(ListingStatus::Active, at);
            if let Some(price) = price {
                new.details.price = Some(*price);
            }
        }
        Step::Reserve if !delisted => new.set_status(ListingStatus::Reserved, at),
        Step::Link => {
            let other = models.iter().copied().find(|m| Some(*m) != old.model_id);
            new.model_id = other;
            new.matching = MatchOutcome::Linked;
        }
        _ => return,
    }
    write(context, Some(&old), &new);
    made[at_index] = new;
}

/// The price histories of the listings matched to `model` now, from the store.
fn timelines(store: &Store, model: ModelId) -> Vec<Vec<PricePoint>> {
    (store.listings().all_listings())
        .map(|listing| listing.expect("listing"))
        .filter(|listing| listing.model_id == Some(model))
        .map(|listing| {
            let stored = store.price_changes().of(listing.id).expect("changes");
            price_history(&listing, &stored)
        })
        .collect()
}

/// A period's figures as a reader would count them from the price histories alone: a listing
/// is in when it was listed (not delisted) at any instant of the period, at the price of its
/// last observation before the period ends, in euros at `rates`.
fn recount(
    timelines: &[Vec<PricePoint>],
    period: Period,
    rates: &RatesHistory,
) -> (PeriodFigures, RatesKind, Option<String>) {
    let table = rates.for_period(period);
    let (begins, ends) = (period.begins(), period.ends());
    let mut figures = PeriodFigures::default();
    let mut in_euros = Vec::new();
    for points in timelines {
        let before: Vec<&PricePoint> = points.iter().filter(|p| p.at < begins).collect();
        let within: Vec<&PricePoint> = points
            .iter()
            .filter(|p| p.at >= begins && p.at < ends)
            .collect();
        let listed_after = |upto: &[&PricePoint]| {
            let mut listed = false;
            for point in upto {
                match point.event {
                    PriceEvent::Listed | PriceEvent::Relisted => listed = true,
                    PriceEvent::Delisted => listed = false,
                    PriceEvent::Changed => {}
                }
            }
            listed
        };
        let active = listed_after(&before)
            || (1..=within.len()).any(|n| {
                let upto: Vec<&PricePoint> = before.iter().chain(&within[..n]).copied().collect();
                listed_after(&upto)
            });
        figures.listed += within
            .iter()
            .filter(|p| p.event == PriceEvent::Listed)
            .count() as u64;
        figures.delisted += u64::from(within.iter().any(|p| p.event == PriceEvent::Delisted));
        if !active {
            continue;
        }
        figures.active += 1;
        let last = within.last().or(before.last());
        let price =
            last.and_then(|point| Some((point.asking.price?, point.asking.currency.clone()?)));
        let euros = price
            .and_then(|(price, currency)| table.rates.as_ref()?.to_micro_euros(price, &currency));
        in_euros.extend(euros);
    }
    figures.priced = in_euros.len() as u64;
    figures.prices = price_figures(in_euros);
    (figures, table.kind, table.date().map(str::to_owned))
}

/// Every period of both intervals from the week of 31 March 2025 to three weeks after `now`,
/// for both models, as the store answers and as recounted.
fn check_against_recount(
    context: &JobContext,
    models: [ModelId; 2],
    now: Timestamp,
) -> Result<(), TestCaseError> {
    let store = context.store();
    let rates = context.series_rates().history(store).expect("rates");
    let start = parse_day("2025-03-31").expect("day");
    let later = day_of(Timestamp(now.0 + 21 * 24 * HOUR));
    for model in models {
        let histories = timelines(store, model);
        for interval in Interval::ALL {
            let (first, last) = (
                Period::containing(interval, start),
                Period::containing(interval, later),
            );
            let answer = model_series(store, &rates, model, first, last).expect("series");
            prop_assert_eq!(answer.as_of.is_some(), !histories.is_empty());
            prop_assert_eq!(answer.periods.len() as u64, first.count_through(last));
            for period in &answer.periods {
                let (figures, kind, date) = recount(&histories, period.period, &rates);
                let label = format!(
                    "model {} {} {}",
                    model,
                    interval.as_str(),
                    format_day(period.period.start)
                );
                prop_assert_eq!(&period.figures, &figures, "{}", label);
                prop_assert_eq!(period.kind, kind, "{}", label);
                prop_assert_eq!(period.rates_date().map(str::to_owned), date, "{}", label);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Whatever the revisits and the links did, days or weeks apart, each model's weekly and
    /// monthly series (folded, then carried forward three weeks past the fold) is what the
    /// listings matched to it now recount from their price histories.
    #[test]
    fn a_series_is_what_the_price_histories_recount(
        steps in prop::collection::vec((1i64..24 * 12, 0usize..8, step()), 1..14),
    ) {
        let dir = tempfile::tempdir().expect("dir");
        let context = context(dir.path());
        let models = two_models(&context);
        // Tuesday 1 April 2025.
        let mut at = Timestamp(midnight(parse_day("2025-04-01").expect("day")).0 + 9 * HOUR);
        let mut made = Vec::new();
        for (hours, which, step) in &steps {
            at = Timestamp(at.0 + hours * HOUR);
            apply(&context, &mut made, models, *which, step, at);
        }
        let now = Timestamp(at.0 + HOUR);
        fold_logged(&context, now, &|| false).expect("fold");
        prop_assert!(context.store().price_series().log().expect("log").is_empty());
        check_against_recount(&context, models, now)?;
    }
}

#[test]
fn the_folder_drains_what_writes_logged_and_a_merge_moves_the_timeline() {
    let dir = tempfile::tempdir().expect("dir");
    let context = context(dir.path());
    let store = context.store();
    // The days of rates put logged every model.
    let log = store.price_series().log().expect("log");
    assert!(log.every_model, "a day of rates refolds every model");
    let models = two_models(&context);
    let at = |day: &str| midnight(parse_day(day).expect("day"));
    let first = created(&context, models[0], (Some(1000), "EUR"), at("2025-04-07"));
    let second = created(&context, models[1], (Some(3000), "EUR"), at("2025-04-21"));
    let report = fold_logged(&context, at("2025-05-01"), &|| false).expect("fold");
    let catalogue = store.catalogue().model_ids().expect("models").len();
    assert_eq!(
        report,
        FoldReport {
            models: catalogue,
            entries: log.entries() + 2
        }
    );
    assert!(store.price_series().log().expect("log").is_empty());
    assert_eq!(
        store.price_series().models_folded().expect("folded"),
        models,
        "a model without listings keeps nothing"
    );
    assert_eq!(
        fold_logged(&context, at("2025-05-01"), &|| false).expect("nothing"),
        FoldReport::default()
    );

    // The second model merged into the first: its listing, and its history, move.
    context
        .writer()
        .run(|turn| {
            crate::jobs::merge::merge(
                turn,
                context.listings(),
                &crate::jobs::users::Actor::Cli,
                models[0],
                &[models[1]],
            )
        })
        .expect("merge");
    let logged = store.price_series().log().expect("log");
    assert_eq!(logged.models.iter().copied().collect::<Vec<_>>(), models);
    let report = fold_logged(&context, at("2025-05-02"), &|| false).expect("fold");
    assert_eq!(
        report,
        FoldReport {
            models: 2,
            entries: 1
        }
    );
    assert_eq!(
        store.price_series().models_folded().expect("folded"),
        [models[0]]
    );
    let rates = context.series_rates().history(store).expect("rates");
    let april = Period::containing(Interval::Month, parse_day("2025-04-01").expect("day"));
    let series = model_series(store, &rates, models[0], april, april).expect("series");
    let figures = &series.periods[0].figures;
    assert_eq!((figures.active, figures.listed), (2, 2));
    assert_eq!(series.as_of, Some(at("2025-05-02")));
    assert_eq!(series.periods[0].prices_in("EUR"), Some((1000, 2000, 3000)));
    let gone = model_series(store, &rates, models[1], april, april).expect("series");
    assert_eq!((gone.as_of, gone.periods[0].figures.active), (None, 0));
    let _ = (first, second);
}

#[test]
fn a_revisit_that_changes_nothing_logs_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let context = context(dir.path());
    let models = two_models(&context);
    let at = midnight(parse_day("2025-04-07").expect("day"));
    let listing = created(&context, models[0], (Some(1000), "EUR"), at);
    fold_logged(&context, at, &|| false).expect("fold");
    let mut seen_again = listing.clone();
    seen_again.last_seen_at = Timestamp(at.0 + HOUR);
    seen_again.details.title = Some("retitled".to_owned());
    write(&context, Some(&listing), &seen_again);
    assert!(context
        .store()
        .price_series()
        .log()
        .expect("log")
        .is_empty());
    let mut repriced = seen_again.clone();
    repriced.details.price = Some(900);
    write(&context, Some(&seen_again), &repriced);
    let log = context.store().price_series().log().expect("log");
    assert_eq!(log.models.into_iter().collect::<Vec<_>>(), [models[0]]);
}

/// A stop keeps the log: what it names is folded again at the next drain. It is heard before
/// each model's fold, not only between two commits (D-234): a stop asked for in the second
/// commit's models folds no more of them, and what was folded is written.
#[test]
fn a_drain_stopped_part_way_keeps_the_log() -> Result<(), StoreError> {
    let dir = tempfile::tempdir().expect("dir");
    let context = context(dir.path());
    let log = context.store().price_series().log()?;
    assert!(log.every_model);
    let catalogue = context.store().catalogue().model_ids()?.len();
    let before_the_stop = super::MODELS_PER_COMMIT + 10;
    assert!(
        catalogue > before_the_stop,
        "the fixtures fold in two commits or more, the stop within the second"
    );
    let asked = AtomicUsize::new(0);
    let stop = || asked.fetch_add(1, Ordering::SeqCst) >= before_the_stop;
    let report = fold_logged(&context, Timestamp(0), &stop).expect("stopped");
    assert_eq!(
        report,
        FoldReport {
            models: before_the_stop,
            entries: 0
        }
    );
    assert_eq!(
        context.store().price_series().log()?.entries(),
        log.entries()
    );

    let report = fold_logged(&context, Timestamp(0), &|| false).expect("fold");
    assert_eq!(report.entries, log.entries());
    assert!(context.store().price_series().log()?.is_empty());
    Ok(())
}

/// A drain after a stop resumes where the stopped one's last whole commit ended (D-235): the
/// models it folded are not folded again, but one a write logged since is, below the progress
/// or not; the drain that finishes removes the progress with the entries.
#[test]
fn a_drain_after_a_stop_resumes_after_the_models_already_folded() -> Result<(), StoreError> {
    let dir = tempfile::tempdir().expect("dir");
    let context = context(dir.path());
    let catalogue = context.store().catalogue().model_ids()?;
    let per_commit = super::MODELS_PER_COMMIT;
    assert!(catalogue.len() > per_commit + 10, "two commits or more");
    let entries = context.store().price_series().log()?.entries();
    let asked = AtomicUsize::new(0);
    let stop = || asked.fetch_add(1, Ordering::SeqCst) >= per_commit + 10;
    let stopped = fold_logged(&context, Timestamp(0), &stop).expect("stopped");
    assert_eq!(stopped.models, per_commit + 10);
    let progress = context
        .store()
        .price_series()
        .fold_progress()?
        .expect("kept");
    assert_eq!(
        progress.through,
        catalogue[per_commit - 1],
        "the first commit's last"
    );

    let [first, _] = two_models(&context);
    assert!(first <= progress.through);
    let at = midnight(parse_day("2025-04-07").expect("day"));
    created(&context, first, (Some(1000), "EUR"), at);
    let resumed = fold_logged(&context, at, &|| false).expect("resumed");
    assert_eq!(resumed.models, catalogue.len() - per_commit + 1);
    assert_eq!(
        resumed.entries,
        entries + 1,
        "the stopped drain's and the write's"
    );
    assert!(context.store().price_series().log()?.is_empty());
    assert_eq!(context.store().price_series().fold_progress()?, None);
    Ok(())
}

/// A resumed drain of an entry naming models (not every model) folds only those after the
/// progress: the entry's models up to it were folded by the drain that stopped.
#[test]
fn a_resumed_entry_of_named_models_folds_only_those_after_the_progress() -> Result<(), StoreError> {
    let dir = tempfile::tempdir().expect("dir");
    let context = context(dir.path());
    let at = midnight(parse_day("2025-04-07").expect("day"));
    fold_logged(&context, at, &|| false).expect("the fixtures' log folded");
    let per_commit = super::MODELS_PER_COMMIT;
    let catalogue = context.store().catalogue().model_ids()?;
    let named = &catalogue[..per_commit + 20];
    context
        .writer()
        .run(|turn| {
            let mut batch = turn.batch()?;
            for &model in named {
                let id = ListingId(batch.allocate_id(RecordKind::Listing)?);
                batch.put_listing(None, &matched_listing(id, model, (Some(900), "EUR"), at));
            }
            turn.commit(batch)
        })
        .expect("one write naming them");
    let log = context.store().price_series().log()?;
    assert!(!log.every_model && log.models.len() == named.len() && log.entries() == 1);

    let asked = AtomicUsize::new(0);
    let stop = || asked.fetch_add(1, Ordering::SeqCst) >= per_commit + 10;
    let stopped = fold_logged(&context, at, &stop).expect("stopped");
    assert_eq!(stopped.models, per_commit + 10);
    let resumed = fold_logged(&context, at, &|| false).expect("resumed");
    assert_eq!(
        resumed,
        FoldReport {
            models: 20,
            entries: 1
        }
    );
    assert!(context.store().price_series().log()?.is_empty());
    Ok(())
}

/// The server's folder folds nothing while a job runs, and folds what the writes logged
/// meanwhile once the job has ended (D-224).
#[test]
fn the_folder_waits_for_a_running_job_then_folds_what_was_logged() {
    let dir = tempfile::tempdir().expect("dir");
    let context = Arc::new(context(dir.path()));
    let models = two_models(&context);
    let at = midnight(parse_day("2025-04-07").expect("day"));
    // The days of rates logged every model: folded first, so the log is empty.
    fold_logged(&context, at, &|| false).expect("fold");
    let log_is_empty = || {
        context
            .store()
            .price_series()
            .log()
            .expect("log")
            .is_empty()
    };
    assert!(log_is_empty());
    let job = Arc::new(AtomicBool::new(true));
    let folder = SeriesFolder::start(context.clone(), || {}, {
        let job = job.clone();
        move || job.load(Ordering::SeqCst)
    })
    .expect("folder");
    // The write wakes the folder, which would fold it within milliseconds.
    created(&context, models[0], (Some(1000), "EUR"), at);
    std::thread::sleep(Duration::from_millis(600));
    assert!(!log_is_empty(), "the folder folded while a job ran");
    job.store(false, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !log_is_empty() {
        assert!(
            Instant::now() < deadline,
            "nothing folded after the job ended"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        context
            .store()
            .price_series()
            .models_folded()
            .expect("folded"),
        [models[0]]
    );
    folder.stop();
}
