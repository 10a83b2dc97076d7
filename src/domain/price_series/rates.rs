//! The rates a series converts at. ECB tables are per euro, so a period's prices are pivoted
//! through the euro at its own table: whole units of any currency into millionths of a euro
//! (rounded half up), the period's figures taken on those, then each figure into the requested
//! currency (rounded to whole units, half up). A euro's millionth is fine enough that a price
//! already in the requested currency reads back as itself for every currency quoted at less
//! than a million per euro, and the order of prices is the order of their euro values.

use super::periods::{format_day, parse_day, Period};
use crate::domain::rates::EcbRates;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Millionths of a euro in a euro.
const MICROS: u128 = 1_000_000;

/// How many days before a period's first day the latest stored ECB day may be for the period
/// to convert at it (a week of holidays); older, the period converts at the rates in force.
pub const PERIOD_RATES_REACH_DAYS: i32 = 7;

/// A rate per euro as `mantissa / 10^scale`, exactly as published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PerEuro {
    mantissa: u128,
    ten_to_scale: u128,
}

/// One ECB day as a series converts with it: units of each currency per euro, exact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EuroRates {
    /// The day, `YYYY-MM-DD`.
    pub date: String,
    per_euro: BTreeMap<String, PerEuro>,
}

impl EuroRates {
    /// The rates of `day`, the euro's own among them. A rate that is no positive decimal
    /// (never stored: files are checked when loaded) is left out.
    pub fn of(day: &EcbRates) -> EuroRates {
        let mut per_euro = BTreeMap::new();
        per_euro.insert(
            "EUR".to_owned(),
            PerEuro {
                mantissa: 1,
                ten_to_scale: 1,
            },
        );
        for (currency, rate) in &day.rates {
            let Ok(rate) = rate.parse::<Decimal>() else {
                continue;
            };
            let mantissa = u128::try_from(rate.mantissa()).unwrap_or(0);
            if mantissa == 0 {
                continue;
            }
            let ten_to_scale = 10u128.pow(rate.scale());
            per_euro.insert(
                currency.clone(),
                PerEuro {
                    mantissa,
                    ten_to_scale,
                },
            );
        }
        EuroRates {
            date: day.date.clone(),
            per_euro,
        }
    }

    /// True when the day quotes `currency` (the euro always).
    pub fn quotes(&self, currency: &str) -> bool {
        self.per_euro.contains_key(currency)
    }

    /// `price` whole units of `currency` in millionths of a euro, rounded half up; `None` for a
    /// currency the day does not quote, or an amount past `u64`.
    pub fn to_micro_euros(&self, price: u64, currency: &str) -> Option<u64> {
        let rate = self.per_euro.get(currency)?;
        let scaled = u128::from(price)
            .checked_mul(MICROS)?
            .checked_mul(rate.ten_to_scale)?;
        u64::try_from(divide_half_up(scaled, rate.mantissa)).ok()
    }

    /// `micros` millionths of a euro in whole units of `currency`, rounded half up; `None` for a
    /// currency the day does not quote, or an amount past `u64`.
    pub fn from_micro_euros(&self, micros: u64, currency: &str) -> Option<u64> {
        let rate = self.per_euro.get(currency)?;
        let product = u128::from(micros).checked_mul(rate.mantissa)?;
        let divisor = rate.ten_to_scale.checked_mul(MICROS)?;
        u64::try_from(divide_half_up(product, divisor)).ok()
    }
}

/// `n / d` rounded half up (the conversions' rule: half away from zero, on amounts that are
/// never negative).
fn divide_half_up(n: u128, d: u128) -> u128 {
    let (quotient, rest) = (n / d, n % d);
    // `rest < d`, so `rest + rest` cannot overflow where `d` fits in half of u128: every rate
    // and divisor here does by far.
    quotient + u128::from(rest >= d - rest)
}

/// Which table a period's prices converted at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RatesKind {
    /// The latest ECB day stored on or before the period's last day, at most
    /// [`PERIOD_RATES_REACH_DAYS`] before its first.
    Period,
    /// The rates in force: no stored day is near enough the period.
    Current,
}

impl RatesKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RatesKind::Period => "period",
            RatesKind::Current => "current",
        }
    }
}

/// The table a period converts at, and which one it is.
#[derive(Debug, Clone)]
pub struct PeriodRates {
    pub kind: RatesKind,
    /// `None` before any rates are loaded.
    pub rates: Option<Arc<EuroRates>>,
}

impl PeriodRates {
    /// The day of the table, `YYYY-MM-DD`.
    pub fn date(&self) -> Option<&str> {
        self.rates.as_ref().map(|rates| rates.date.as_str())
    }
}

/// Every stored ECB day and the rates in force, as a series reads them: which table each
/// period converts at.
#[derive(Debug, Clone, Default)]
pub struct RatesHistory {
    /// Oldest first.
    days: Vec<Arc<EuroRates>>,
    in_force: Option<Arc<EuroRates>>,
}

impl RatesHistory {
    /// The history of `days` (in any order) with `in_force` the rates in force.
    pub fn new(days: Vec<EcbRates>, in_force: Option<&EcbRates>) -> RatesHistory {
        let mut days: Vec<Arc<EuroRates>> = days
            .iter()
            .map(|day| Arc::new(EuroRates::of(day)))
            .collect();
        days.sort_by(|a, b| a.date.cmp(&b.date));
        let in_force = in_force.map(|in_force| {
            (days.iter())
                .find(|day| day.date == in_force.date)
                .cloned()
                .unwrap_or_else(|| Arc::new(EuroRates::of(in_force)))
        });
        RatesHistory { days, in_force }
    }

    /// The stored day `date`, when it is stored.
    pub fn day(&self, date: &str) -> Option<Arc<EuroRates>> {
        let at = self
            .days
            .binary_search_by(|day| day.date.as_str().cmp(date))
            .ok()?;
        Some(self.days[at].clone())
    }

    /// The table `period` converts at: the latest stored day on or before its last day when
    /// that is no more than [`PERIOD_RATES_REACH_DAYS`] before its first, else the rates in
    /// force.
    pub fn for_period(&self, period: Period) -> PeriodRates {
        let last_day = format_day(period.last_day());
        let through = self
            .days
            .partition_point(|day| day.date.as_str() <= last_day.as_str());
        let near = through
            .checked_sub(1)
            .map(|at| &self.days[at])
            .filter(|day| {
                parse_day(&day.date).is_some_and(|date| {
                    date.to_julian_day() + PERIOD_RATES_REACH_DAYS >= period.start.to_julian_day()
                })
            });
        match near {
            Some(day) => PeriodRates {
                kind: RatesKind::Period,
                rates: Some(day.clone()),
            },
            None => PeriodRates {
                kind: RatesKind::Current,
                rates: self.in_force.clone(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::price_series::{parse_day, Interval};
    use proptest::prelude::*;

    fn day(date: &str, usd: &str, jpy: &str) -> EcbRates {
        EcbRates {
            date: date.to_owned(),
            rates: vec![
                ("USD".to_owned(), usd.to_owned()),
                ("JPY".to_owned(), jpy.to_owned()),
                ("IDR".to_owned(), "18234.56".to_owned()),
            ],
        }
    }

    #[test]
    fn prices_pivot_through_the_euro_in_millionths_rounded_half_up() {
        let rates = EuroRates::of(&day("2025-05-09", "1.1252", "163.36"));
        // 1000 USD / 1.1252 = 888.7308922857...
        assert_eq!(rates.to_micro_euros(1000, "USD"), Some(888_730_892));
        assert_eq!(rates.to_micro_euros(7, "EUR"), Some(7_000_000));
        assert_eq!(rates.from_micro_euros(888_730_892, "USD"), Some(1000));
        // 9.182174 euros: 1,499.99994 yen.
        assert_eq!(rates.from_micro_euros(9_182_174, "JPY"), Some(1_500));
        assert_eq!(
            rates.from_micro_euros(500_000, "EUR"),
            Some(1),
            "half a euro: up"
        );
        assert_eq!(rates.from_micro_euros(499_999, "EUR"), Some(0));
        assert_eq!(rates.to_micro_euros(1, "GBP"), None, "not quoted that day");
        assert_eq!(rates.from_micro_euros(1, "GBP"), None);
        assert_eq!(rates.to_micro_euros(u64::MAX, "EUR"), None, "past u64");
        assert!(rates.quotes("EUR") && rates.quotes("USD") && !rates.quotes("CHF"));
    }

    proptest! {
        /// A price in the requested currency reads back as itself, and the pivot keeps order.
        #[test]
        fn a_price_round_trips_and_order_is_kept(a in 0u64..10_000_000_000, b in 0u64..10_000_000_000, which in 0usize..4) {
            let rates = EuroRates::of(&day("2025-05-09", "1.1252", "163.36"));
            let currency = ["EUR", "USD", "JPY", "IDR"][which];
            let there = rates.to_micro_euros(a, currency).expect("converts");
            prop_assert_eq!(rates.from_micro_euros(there, currency), Some(a));
            let (low, high) = (a.min(b), a.max(b));
            prop_assert!(rates.to_micro_euros(low, currency) <= rates.to_micro_euros(high, currency));
        }
    }

    #[test]
    fn a_period_converts_at_its_own_day_within_a_week_of_it_else_at_the_rates_in_force() {
        let days = vec![
            day("2025-05-09", "1.1252", "163.36"),
            day("2025-05-02", "1.1300", "164.00"),
            day("2025-06-02", "1.1400", "165.00"),
        ];
        let history = RatesHistory::new(days.clone(), Some(&days[2]));
        let week = |date: &str| Period::containing(Interval::Week, parse_day(date).expect("day"));
        let at = |date: &str| {
            let rates = history.for_period(week(date));
            (rates.kind, rates.date().map(str::to_owned))
        };
        let period = |date: &str| (RatesKind::Period, Some(date.to_owned()));
        let current = (RatesKind::Current, Some("2025-06-02".to_owned()));
        assert_eq!(at("2025-05-07"), period("2025-05-09"));
        // The week of 12 May has no day of its own: Friday 9 May is 3 days before it.
        assert_eq!(at("2025-05-14"), period("2025-05-09"));
        // The week of 19 May: 10 days after the last day, too far.
        assert_eq!(at("2025-05-21"), current);
        assert_eq!(at("2025-04-01"), current, "before every stored day");
        assert_eq!(at("2025-06-03"), period("2025-06-02"));
        assert!(history.day("2025-05-02").is_some() && history.day("2025-05-03").is_none());
        let empty = RatesHistory::default().for_period(week("2025-05-07"));
        assert_eq!((empty.kind, empty.date()), (RatesKind::Current, None));
    }
}
