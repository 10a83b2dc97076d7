//! The fold of a model's listings into its series: one pass over their price histories in time
//! order for each interval, period after period, and the listings left active at the end.

use super::periods::{day_of, Interval, Period};
use super::rates::RatesHistory;
use super::{ActivePrices, FoldedPeriod, PeriodFigures, SeriesChunk};
use crate::domain::price_history::{AskingPrice, PriceEvent, PricePoint};
use crate::domain::{price_figures, Timestamp};
use std::collections::BTreeMap;

/// What a fold of a model keeps: each interval's periods, a year of them to a chunk, and the
/// listings active at its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFold {
    /// Each interval's chunks, by the year their periods begin in.
    pub chunks: Vec<(Interval, i32, SeriesChunk)>,
    pub active: ActivePrices,
}

/// Folds the listings whose price histories are `timelines` (each oldest first, as
/// `price_history` gives it), folded at `now`, into every period of each interval from the one
/// of their first observation to the one of `now` (or of their last observation, when later);
/// `None` for no listing.
pub fn fold_model(
    timelines: &[Vec<PricePoint>],
    now: Timestamp,
    rates: &RatesHistory,
) -> Option<ModelFold> {
    let latest = timelines
        .iter()
        .filter_map(|t| t.last())
        .map(|p| p.at)
        .max()?;
    let folded_at = now.max(latest);
    let mut chunks = Vec::new();
    for interval in Interval::ALL {
        let periods = fold_periods(timelines, interval, folded_at, rates);
        chunks.extend(by_year(periods).map(|(year, chunk)| (interval, year, chunk)));
    }
    Some(ModelFold {
        chunks,
        active: active_prices(timelines, folded_at),
    })
}

/// Where one listing stands after the observations applied so far.
#[derive(Debug, Clone, Copy, Default)]
struct Standing<'a> {
    active: bool,
    asking: Option<&'a AskingPrice>,
}

impl<'a> Standing<'a> {
    fn apply(&mut self, point: &'a PricePoint) {
        self.asking = Some(&point.asking);
        match point.event {
            PriceEvent::Listed | PriceEvent::Relisted => self.active = true,
            PriceEvent::Delisted => self.active = false,
            PriceEvent::Changed => {}
        }
    }

    fn price(&self) -> Option<(u64, &'a str)> {
        let asking = self.asking?;
        Some((asking.price?, asking.currency.as_deref()?))
    }
}

/// Every period of `interval` from the first observation's to `through`'s, each with its
/// figures at its table. A listing is active in a period when it is active at any instant of
/// it; its price is the one of its last observation before the period ends (a delisting
/// records the price it left at).
fn fold_periods(
    timelines: &[Vec<PricePoint>],
    interval: Interval,
    through: Timestamp,
    rates: &RatesHistory,
) -> Vec<(Period, FoldedPeriod)> {
    let Some(first_at) = timelines
        .iter()
        .filter_map(|t| t.first())
        .map(|p| p.at)
        .min()
    else {
        return Vec::new();
    };
    let first = Period::containing(interval, day_of(first_at));
    let last = Period::containing(interval, day_of(through));
    // Every observation in time order; a listing's own in their order.
    let mut observations: Vec<(Timestamp, usize, usize)> = (timelines.iter().enumerate())
        .flat_map(|(listing, points)| {
            (points.iter().enumerate()).map(move |(at, point)| (point.at, listing, at))
        })
        .collect();
    observations.sort_unstable();
    let mut standing = vec![Standing::default(); timelines.len()];
    // The number of the period each listing was last counted active in, and delisted in.
    let mut active_in = vec![usize::MAX; timelines.len()];
    let mut delisted_in = vec![usize::MAX; timelines.len()];
    let mut next = 0;
    let mut folded = Vec::new();
    for (number, period) in first.through(last).enumerate() {
        let mut members: Vec<usize> = (0..timelines.len())
            .filter(|&listing| standing[listing].active)
            .collect();
        for &listing in &members {
            active_in[listing] = number;
        }
        let (mut listed, mut delisted) = (0, 0);
        let ends = period.ends();
        while let Some(&(_, listing, at)) = observations.get(next).filter(|o| o.0 < ends) {
            next += 1;
            let point = &timelines[listing][at];
            standing[listing].apply(point);
            match point.event {
                PriceEvent::Listed => listed += 1,
                PriceEvent::Delisted if delisted_in[listing] != number => {
                    delisted_in[listing] = number;
                    delisted += 1;
                }
                _ => {}
            }
            if standing[listing].active && active_in[listing] != number {
                active_in[listing] = number;
                members.push(listing);
            }
        }
        let table = rates.for_period(period);
        let in_euros: Vec<u64> = (members.iter())
            .filter_map(|&listing| standing[listing].price())
            .filter_map(|(price, currency)| table.rates.as_ref()?.to_micro_euros(price, currency))
            .collect();
        let figures = PeriodFigures {
            active: members.len() as u64,
            priced: in_euros.len() as u64,
            prices: price_figures(in_euros),
            listed,
            delisted,
        };
        folded.push((
            period,
            FoldedPeriod {
                figures,
                kind: table.kind,
                rates_date: table.date().map(str::to_owned),
            },
        ));
    }
    folded
}

/// The listings active once every observation is applied, and their prices by currency.
fn active_prices(timelines: &[Vec<PricePoint>], folded_at: Timestamp) -> ActivePrices {
    let mut by_currency: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    let mut unpriced = 0;
    for points in timelines {
        let mut standing = Standing::default();
        points.iter().for_each(|point| standing.apply(point));
        if !standing.active {
            continue;
        }
        match standing.price() {
            Some((price, currency)) => by_currency.entry(currency).or_default().push(price),
            None => unpriced += 1,
        }
    }
    let by_currency = (by_currency.into_iter())
        .map(|(currency, mut prices)| {
            prices.sort_unstable();
            (currency.to_owned(), prices)
        })
        .collect();
    ActivePrices {
        folded_at,
        unpriced,
        by_currency,
    }
}

/// `periods` (consecutive, in order) in chunks of the periods that begin in one year.
fn by_year(periods: Vec<(Period, FoldedPeriod)>) -> impl Iterator<Item = (i32, SeriesChunk)> {
    let mut chunks: Vec<(i32, SeriesChunk)> = Vec::new();
    for (period, folded) in periods {
        let year = period.start.year();
        match chunks.last_mut() {
            Some((at, chunk)) if *at == year => chunk.periods.push(folded),
            _ => chunks.push((
                year,
                SeriesChunk {
                    first: period.start.to_julian_day(),
                    periods: vec![folded],
                },
            )),
        }
    }
    chunks.into_iter()
}
