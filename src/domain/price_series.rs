//! A model's asking prices over time (`GET /listings/stats/history`, D-209): its periods
//! (`periods`), the rates each converts at (`rates`), the fold of its listings' price histories
//! into each period's figures (`fold`), kept by the writer a year of periods to a record, and
//! the answer for any run of periods: the periods folded as kept, the later ones carried
//! forward from the listings active when last folded.

mod fold;
mod periods;
mod rates;

pub use fold::{fold_model, ModelFold};
pub use periods::{day_of, format_day, midnight, parse_day, Day, Interval, Period};
pub use rates::{EuroRates, PeriodRates, RatesHistory, RatesKind};

use super::price_stats::figures_by_rank;
use super::Timestamp;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Periods one answer holds at most.
pub const MAX_PERIODS: u64 = 520;

/// What a period of a model's series counts, its prices in millionths of a euro at the
/// period's table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeriodFigures {
    /// Listings active (not delisted) at any instant of the period.
    pub active: u64,
    /// Of those, the ones whose asking price converts at the period's table.
    pub priced: u64,
    /// Lowest, median and highest of their asking prices at the period's end (a listing
    /// delisted within it, its last); `None` when none is priced.
    pub prices: Option<(u64, u64, u64)>,
    /// Listings first seen in the period.
    pub listed: u64,
    /// Listings delisted in the period (each once).
    pub delisted: u64,
}

/// A period as folded: its figures and the table they are at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldedPeriod {
    pub figures: PeriodFigures,
    pub kind: RatesKind,
    /// The ECB day of the table, `YYYY-MM-DD`; `None` when no rates were loaded.
    pub rates_date: Option<String>,
}

/// Consecutive periods of one interval as folded, those that begin in one year: what one key
/// of the store holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesChunk {
    /// The first period's first day, as a Julian day number.
    first: i32,
    pub periods: Vec<FoldedPeriod>,
}

impl SeriesChunk {
    /// Each period of the chunk with what was folded for it.
    pub fn periods(&self, interval: Interval) -> impl Iterator<Item = (Period, &FoldedPeriod)> {
        let first = Day::from_julian_day(self.first)
            .ok()
            .map(|day| Period::containing(interval, day));
        let periods = first
            .into_iter()
            .flat_map(|first| std::iter::successors(Some(first), |p| Some(p.next())));
        periods.zip(&self.periods)
    }
}

/// The listings of a model active when it was last folded, and their asking prices: what the
/// periods after the last one folded are carried forward from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivePrices {
    /// When the model was folded: its series holds every observation up to then.
    pub folded_at: Timestamp,
    /// Active listings without a price or a currency.
    pub unpriced: u64,
    /// The asking prices of the others, by currency (in its order), each list sorted.
    pub by_currency: Vec<(String, Vec<u64>)>,
}

impl ActivePrices {
    pub fn active(&self) -> u64 {
        let priced: usize = self
            .by_currency
            .iter()
            .map(|(_, prices)| prices.len())
            .sum();
        self.unpriced + priced as u64
    }

    /// A period after the last one folded, nothing having changed since: these listings
    /// active, none listed or delisted, their prices at `rates`. The median is exact across
    /// currencies, each list read by rank where it is kept, never gathered and sorted again.
    pub fn carried_forward(&self, rates: Option<&EuroRates>) -> PeriodFigures {
        let lists: Vec<(&str, &[u64])> = match rates {
            Some(rates) => (self.by_currency.iter())
                .filter(|(currency, _)| rates.quotes(currency))
                .map(|(currency, prices)| {
                    // Converting keeps order, so the prices past `u64` in euros are a tail.
                    let converts =
                        prices.partition_point(|&p| rates.to_micro_euros(p, currency).is_some());
                    (currency.as_str(), &prices[..converts])
                })
                .collect(),
            None => Vec::new(),
        };
        let priced: usize = lists.iter().map(|(_, prices)| prices.len()).sum();
        let prices = rates
            .and_then(|rates| figures_by_rank(priced, |rank| nth_in_euros(&lists, rates, rank)));
        PeriodFigures {
            active: self.active(),
            priced: priced as u64,
            prices,
            listed: 0,
            delisted: 0,
        }
    }
}

/// The `rank`-th smallest (0 the lowest) euro value of the prices of `lists` at `rates`: the
/// least value that more than `rank` of them are at or below, found by halving the values
/// between the lowest and the highest. Each list is sorted and converting keeps order, so how
/// many of a list are at or below a value is one binary search of it.
fn nth_in_euros(lists: &[(&str, &[u64])], rates: &EuroRates, rank: usize) -> u64 {
    let euros = |currency: &str, price: u64| {
        // The lists hold only prices that convert.
        rates.to_micro_euros(price, currency).unwrap_or(u64::MAX)
    };
    let at_or_below = |value: u64| -> usize {
        (lists.iter())
            .map(|(currency, prices)| prices.partition_point(|&p| euros(currency, p) <= value))
            .sum()
    };
    let ends = |pick: fn(&[u64]) -> Option<&u64>| {
        (lists.iter())
            .filter_map(move |(currency, prices)| pick(prices).map(|&p| euros(currency, p)))
    };
    let mut low = ends(<[u64]>::first).min().unwrap_or(0);
    let mut high = ends(<[u64]>::last).max().unwrap_or(0);
    while low < high {
        let middle = low + (high - low) / 2;
        if at_or_below(middle) > rank {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    low
}

/// One period of an answer: its figures and the table that converts them.
#[derive(Debug, Clone)]
pub struct SeriesPeriod {
    pub period: Period,
    pub figures: PeriodFigures,
    pub kind: RatesKind,
    /// The table the figures are at; `None` when no rates are loaded.
    pub rates: Option<Arc<EuroRates>>,
}

impl SeriesPeriod {
    /// The day of its table, `YYYY-MM-DD`.
    pub fn rates_date(&self) -> Option<&str> {
        self.rates.as_ref().map(|rates| rates.date.as_str())
    }

    /// Its lowest, median and highest price in whole units of `currency`, each converted from
    /// euros at its table; `None` when none is priced or the table does not quote `currency`.
    pub fn prices_in(&self, currency: &str) -> Option<(u64, u64, u64)> {
        let (low, median, high) = self.figures.prices?;
        let rates = self.rates.as_ref()?;
        let convert = |micros| rates.from_micro_euros(micros, currency);
        Some((convert(low)?, convert(median)?, convert(high)?))
    }
}

/// The periods `first` to `last` of a model's series: those folded as `chunks` hold them (at
/// the tables they were folded at), each later one than the last folded (that of
/// `active.folded_at`) carried forward from `active` at its own table, and the others (before
/// the model's first listing, or none folded) empty.
pub fn series(
    first: Period,
    last: Period,
    active: Option<&ActivePrices>,
    chunks: &[SeriesChunk],
    rates: &RatesHistory,
) -> Vec<SeriesPeriod> {
    let interval = first.interval;
    let last_folded = active.map(|active| Period::containing(interval, day_of(active.folded_at)));
    let mut folded = chunks
        .iter()
        .flat_map(|chunk| chunk.periods(interval))
        .skip_while(|(period, _)| *period < first)
        .peekable();
    first
        .through(last)
        .map(|period| {
            while folded.next_if(|(at, _)| *at < period).is_some() {}
            if let Some((_, kept)) = folded.next_if(|(at, _)| *at == period) {
                return SeriesPeriod {
                    period,
                    figures: kept.figures.clone(),
                    kind: kept.kind,
                    rates: kept.rates_date.as_deref().and_then(|date| rates.day(date)),
                };
            }
            let table = rates.for_period(period);
            let figures = match (active, last_folded) {
                (Some(active), Some(last_folded)) if period > last_folded => {
                    active.carried_forward(table.rates.as_deref())
                }
                _ => PeriodFigures::default(),
            };
            SeriesPeriod {
                period,
                figures,
                kind: table.kind,
                rates: table.rates,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
