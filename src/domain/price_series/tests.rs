use super::*;
use crate::domain::price_history::{AskingPrice, PriceEvent, PricePoint};
use crate::domain::rates::EcbRates;
use proptest::prelude::*;

const HOUR: i64 = 3_600_000;

fn at(text: &str) -> Timestamp {
    let day = parse_day(&text[..10]).expect("a day");
    let hours: i64 = text[11..13].parse().expect("hours");
    Timestamp(midnight(day).0 + hours * HOUR)
}

fn asking(price: Option<u64>, currency: &str) -> AskingPrice {
    AskingPrice {
        price,
        currency: Some(currency.to_owned()),
    }
}

fn point(when: &str, event: PriceEvent, price: Option<u64>, currency: &str) -> PricePoint {
    PricePoint {
        at: at(when),
        event,
        asking: asking(price, currency),
    }
}

fn rates_day(date: &str, usd: &str) -> EcbRates {
    EcbRates {
        date: date.to_owned(),
        rates: vec![
            ("USD".to_owned(), usd.to_owned()),
            ("JPY".to_owned(), "163.36".to_owned()),
        ],
    }
}

/// One ECB day, 2025-05-09 (a Friday), in force.
fn one_day() -> RatesHistory {
    let day = rates_day("2025-05-09", "1.1252");
    RatesHistory::new(vec![day.clone()], Some(&day))
}

/// Four listings over the weeks of 28 April, 5 May and 12 May 2025.
fn four_listings() -> Vec<Vec<PricePoint>> {
    use PriceEvent::*;
    vec![
        // A: 1,000 EUR, 900 from Wednesday, delisted the next Monday.
        vec![
            point("2025-05-05T10", Listed, Some(1000), "EUR"),
            point("2025-05-07T10", Changed, Some(900), "EUR"),
            point("2025-05-12T12", Delisted, Some(900), "EUR"),
        ],
        // B: 1,125 USD.
        vec![point("2025-05-06T09", Listed, Some(1125), "USD")],
        // C: no price.
        vec![point("2025-05-13T09", Listed, None, "EUR")],
        // D: two days in April, back in May at a new price.
        vec![
            point("2025-04-28T08", Listed, Some(2000), "EUR"),
            point("2025-04-30T08", Delisted, Some(2000), "EUR"),
            point("2025-05-14T08", Relisted, Some(2000), "EUR"),
            point("2025-05-14T08", Changed, Some(2100), "EUR"),
        ],
    ]
}

const EUROS: u64 = 1_000_000;
/// 1,125 USD at 1.1252 a euro: 999.822253...
const B_IN_EUROS: u64 = 999_822_254;

fn figures(
    active: u64,
    priced: u64,
    prices: Option<(u64, u64, u64)>,
    listed: u64,
    delisted: u64,
) -> PeriodFigures {
    PeriodFigures {
        active,
        priced,
        prices,
        listed,
        delisted,
    }
}

fn weeks(fold: &ModelFold) -> Vec<(String, PeriodFigures, RatesKind)> {
    (fold.chunks.iter())
        .filter(|(interval, _, _)| *interval == Interval::Week)
        .flat_map(|(_, _, chunk)| chunk.periods(Interval::Week))
        .map(|(period, folded)| {
            (
                format_day(period.start),
                folded.figures.clone(),
                folded.kind,
            )
        })
        .collect()
}

#[test]
fn a_week_counts_its_active_listings_at_their_prices_at_its_end() {
    let fold = fold_model(&four_listings(), at("2025-05-15T00"), &one_day()).expect("a fold");
    assert_eq!(
        weeks(&fold),
        [
            // D alone, listed and delisted; no stored day on or before 4 May: the rates in force.
            (
                "2025-04-28".to_owned(),
                figures(1, 1, Some((2000 * EUROS, 2000 * EUROS, 2000 * EUROS)), 1, 1),
                RatesKind::Current
            ),
            // A at 900 (its price at the week's end), B; the median the mean of the two.
            (
                "2025-05-05".to_owned(),
                figures(2, 2, Some((900 * EUROS, 949_911_127, B_IN_EUROS)), 2, 0),
                RatesKind::Period
            ),
            // A delisted on Monday (its last price), B, C unpriced, D back at 2,100; Friday 9
            // May is within a week before Monday 12.
            (
                "2025-05-12".to_owned(),
                figures(4, 3, Some((900 * EUROS, B_IN_EUROS, 2100 * EUROS)), 1, 1),
                RatesKind::Period
            ),
        ]
    );
    assert_eq!(
        fold.active,
        ActivePrices {
            folded_at: at("2025-05-15T00"),
            unpriced: 1,
            by_currency: vec![("EUR".into(), vec![2100]), ("USD".into(), vec![1125])],
        }
    );
    let months: Vec<u64> = (fold.chunks.iter())
        .filter(|(interval, _, _)| *interval == Interval::Month)
        .flat_map(|(_, _, chunk)| chunk.periods(Interval::Month))
        .map(|(_, folded)| folded.figures.active)
        .collect();
    assert_eq!(months, [1, 4], "April: D; May: all four");
}

#[test]
fn an_answer_is_the_folded_periods_then_the_carried_forward_ones_empty_before_the_first() {
    let rates = one_day();
    let fold = fold_model(&four_listings(), at("2025-05-15T00"), &rates).expect("a fold");
    let chunks: Vec<SeriesChunk> = (fold.chunks.iter())
        .filter(|(interval, _, _)| *interval == Interval::Week)
        .map(|(_, _, chunk)| chunk.clone())
        .collect();
    let week = |date: &str| Period::containing(Interval::Week, parse_day(date).expect("day"));
    let answer = series(
        week("2025-04-21"),
        week("2025-05-19"),
        Some(&fold.active),
        &chunks,
        &rates,
    );
    type Seen<'a> = (String, u64, Option<(u64, u64, u64)>, &'a str);
    let seen: Vec<Seen> = (answer.iter())
        .map(|p| {
            let eur = p.prices_in("EUR");
            (
                format_day(p.period.start),
                p.figures.active,
                eur,
                p.kind.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("2025-04-21".to_owned(), 0, None, "current"),
            (
                "2025-04-28".to_owned(),
                1,
                Some((2000, 2000, 2000)),
                "current"
            ),
            ("2025-05-05".to_owned(), 2, Some((900, 950, 1000)), "period"),
            (
                "2025-05-12".to_owned(),
                4,
                Some((900, 1000, 2100)),
                "period"
            ),
            // Carried forward: B and D priced, C not; 9 May is 10 days before the 19th.
            (
                "2025-05-19".to_owned(),
                3,
                Some((1000, 1550, 2100)),
                "current"
            ),
        ]
    );
    assert_eq!(answer[4].figures.listed + answer[4].figures.delisted, 0);
    assert_eq!(answer[4].figures.priced, 2);
    // In dollars, B's own price reads back as itself.
    assert_eq!(answer[2].prices_in("USD").map(|p| p.2), Some(1125));
    assert_eq!(
        answer[2].prices_in("CHF"),
        None,
        "a currency the day does not quote"
    );
    let never_folded = series(week("2025-05-05"), week("2025-05-12"), None, &[], &rates);
    assert!(never_folded
        .iter()
        .all(|p| p.figures == PeriodFigures::default()));
}

#[test]
fn no_listing_no_fold() {
    assert_eq!(fold_model(&[], Timestamp(0), &one_day()), None);
}

/// What a revisit of a listing does.
#[derive(Debug, Clone)]
enum Revisit {
    Change(u64, &'static str),
    Unprice,
    Delist,
    Relist(Option<(u64, &'static str)>),
}

fn revisit() -> impl Strategy<Value = Revisit> {
    let currency = prop::sample::select(vec!["EUR", "USD", "JPY", "XXX"]);
    prop_oneof![
        (1u64..500_000, currency.clone()).prop_map(|(p, c)| Revisit::Change(p, c)),
        Just(Revisit::Unprice),
        Just(Revisit::Delist),
        prop::option::of((1u64..500_000, currency)).prop_map(Revisit::Relist),
    ]
}

/// A listing's price history as `price_history` makes it, from its first price and its
/// revisits, each some hours after the one before.
fn timeline(start: i64, first: u64, revisits: &[(i64, Revisit)]) -> Vec<PricePoint> {
    let mut at = Timestamp(start);
    let mut asking = asking(Some(first), "EUR");
    let mut points = vec![PricePoint {
        at,
        event: PriceEvent::Listed,
        asking: asking.clone(),
    }];
    let mut active = true;
    for (hours, revisit) in revisits {
        at = Timestamp(at.0 + hours * HOUR);
        let mut push = |event, asking: &AskingPrice| {
            points.push(PricePoint {
                at,
                event,
                asking: asking.clone(),
            })
        };
        match revisit {
            Revisit::Change(price, currency) if active => {
                asking = self::asking(Some(*price), currency);
                push(PriceEvent::Changed, &asking);
            }
            Revisit::Unprice if active => {
                asking = AskingPrice {
                    price: None,
                    currency: None,
                };
                push(PriceEvent::Changed, &asking);
            }
            Revisit::Delist if active => {
                active = false;
                push(PriceEvent::Delisted, &asking);
            }
            Revisit::Relist(new) if !active => {
                active = true;
                push(PriceEvent::Relisted, &asking);
                if let Some((price, currency)) = new {
                    asking = self::asking(Some(*price), currency);
                    push(PriceEvent::Changed, &asking);
                }
            }
            _ => {}
        }
    }
    points
}

/// 2025-01-06, a Monday.
const BASE: i64 = 1_736_121_600_000;

fn listings() -> impl Strategy<Value = Vec<Vec<PricePoint>>> {
    let one = (
        0i64..24 * 70,
        1u64..500_000,
        prop::collection::vec((1i64..24 * 21, revisit()), 0..6),
    )
        .prop_map(|(start, first, revisits)| timeline(BASE + start * HOUR, first, &revisits));
    prop::collection::vec(one, 1..12)
}

/// Days of rates with a gap of weeks between them, and a last one in force.
fn spread_rates() -> RatesHistory {
    let days = vec![
        rates_day("2025-01-08", "1.03"),
        rates_day("2025-01-31", "1.04"),
        rates_day("2025-02-03", "1.05"),
        rates_day("2025-03-20", "1.09"),
        rates_day("2025-06-02", "1.14"),
    ];
    RatesHistory::new(days.clone(), days.last())
}

proptest! {
    /// Nothing observed between two folds: the later fold's periods after the earlier one's
    /// last are what the earlier one carries forward, and the periods both folded agree.
    #[test]
    fn carried_forward_periods_are_what_a_fresh_fold_finds(
        timelines in listings(),
        weeks_later in 1i64..30,
    ) {
        let rates = spread_rates();
        let latest = timelines.iter().filter_map(|t| t.last()).map(|p| p.at).max().expect("a point");
        let earlier = fold_model(&timelines, latest, &rates).expect("a fold");
        let later_at = Timestamp(latest.0 + weeks_later * 7 * 24 * HOUR);
        let later = fold_model(&timelines, later_at, &rates).expect("a fold");
        for interval in Interval::ALL {
            let chunks = |fold: &ModelFold| -> Vec<SeriesChunk> {
                (fold.chunks.iter())
                    .filter(|(i, _, _)| *i == interval)
                    .map(|(_, _, chunk)| chunk.clone())
                    .collect()
            };
            let first_at = timelines.iter().filter_map(|t| t.first()).map(|p| p.at).min().expect("a point");
            let first = Period::containing(interval, day_of(first_at));
            let last = Period::containing(interval, day_of(later_at));
            let carried = series(first, last, Some(&earlier.active), &chunks(&earlier), &rates);
            let fresh = series(first, last, Some(&later.active), &chunks(&later), &rates);
            prop_assert_eq!(carried.len(), fresh.len());
            for (c, f) in carried.iter().zip(&fresh) {
                prop_assert_eq!(&c.figures, &f.figures, "{:?} {}", interval, format_day(c.period.start));
                prop_assert_eq!(c.kind, f.kind);
                prop_assert_eq!(c.rates_date(), f.rates_date());
                for currency in ["EUR", "USD", "JPY"] {
                    prop_assert_eq!(c.prices_in(currency), f.prices_in(currency));
                }
            }
        }
    }
}
