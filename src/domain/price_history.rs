//! A listing's asking prices over time (`priceHistory`, D-205): what its revisits saw. Only a
//! change of price or currency is stored (`store::price_changes`); the first price, a delisting
//! and a relisting are read from the listing's own record, so a new listing costs no key.

use super::{Listing, ListingDetails, ListingStatus, Timestamp};
use serde::{Deserialize, Serialize};

/// An asking price as a seller gave it: whole units of its currency, either of them absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskingPrice {
    pub price: Option<u64>,
    pub currency: Option<String>,
}

impl AskingPrice {
    pub fn of(details: &ListingDetails) -> AskingPrice {
        AskingPrice {
            price: details.price,
            currency: details.currency.clone(),
        }
    }

    /// True when `a` and `b` ask the same: compared without allocating, on every listing an
    /// ingest writes.
    pub fn same(a: &ListingDetails, b: &ListingDetails) -> bool {
        a.price == b.price && a.currency == b.currency
    }
}

/// A stored observation: the asking price a listing had from `at` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceObservation {
    pub at: Timestamp,
    pub asking: AskingPrice,
}

/// What a point of a listing's price history records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriceEvent {
    /// Its first price, when it was first seen.
    Listed,
    /// A revisit found another price or currency.
    Changed,
    /// It left its source: its last asking price.
    Delisted,
    /// It came back at its source, at the price it then had.
    Relisted,
}

impl PriceEvent {
    fn rank_at_one_instant(self) -> u8 {
        match self {
            PriceEvent::Listed => 0,
            PriceEvent::Delisted | PriceEvent::Relisted => 1,
            PriceEvent::Changed => 2,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PriceEvent::Listed => "listed",
            PriceEvent::Changed => "changed",
            PriceEvent::Delisted => "delisted",
            PriceEvent::Relisted => "relisted",
        }
    }
}

/// One point of a listing's price history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PricePoint {
    pub at: Timestamp,
    pub event: PriceEvent,
    pub asking: AskingPrice,
}

/// `listing`'s price history, oldest first, from its stored observations (oldest first; none
/// while its price never changed) and its record: its first price when it was created, each
/// change, and each delisting and relisting at the price it then had.
pub fn price_history(listing: &Listing, stored: &[PriceObservation]) -> Vec<PricePoint> {
    let prices: Vec<PriceObservation> = match stored {
        [] => vec![PriceObservation {
            at: listing.created_at,
            asking: AskingPrice::of(&listing.details),
        }],
        _ => stored.to_vec(),
    };
    let mut points: Vec<PricePoint> = Vec::with_capacity(prices.len() + listing.history.len());
    for (i, observation) in prices.iter().enumerate() {
        points.push(PricePoint {
            at: observation.at,
            event: if i == 0 {
                PriceEvent::Listed
            } else {
                PriceEvent::Changed
            },
            asking: observation.asking.clone(),
        });
    }
    let mut was_delisted = false;
    for change in listing.history.iter().skip(1) {
        let is_delisted = change.status == ListingStatus::Delisted;
        let event = match (was_delisted, is_delisted) {
            (false, true) => PriceEvent::Delisted,
            (true, false) => PriceEvent::Relisted,
            _ => continue,
        };
        was_delisted = is_delisted;
        points.push(PricePoint {
            at: change.at,
            event,
            asking: asking_before(&prices, change.at),
        });
    }
    // A status change and a price change at the same instant (a listing back at a new price):
    // the status first, at the price it had before.
    points.sort_by_key(|point| (point.at, point.event.rank_at_one_instant()));
    points
}

/// The price in force just before `at`: the last observation before it (the first if none).
fn asking_before(prices: &[PriceObservation], at: Timestamp) -> AskingPrice {
    let before = prices.partition_point(|p| p.at < at);
    prices[before.saturating_sub(1).min(prices.len() - 1)]
        .asking
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{ListingId, MatchOutcome, ProviderId, StatusChange};

    fn listing(price: u64, history: &[(ListingStatus, i64)]) -> Listing {
        let details = ListingDetails {
            url: "https://example.com/1".into(),
            title: None,
            scraped_brand: None,
            scraped_reference: None,
            price: Some(price),
            currency: Some("EUR".into()),
            year: None,
            condition: None,
            availability: None,
            reserved: false,
            country_code: None,
            country: None,
            city: None,
            state: None,
            box_available: None,
            papers_available: None,
        };
        Listing {
            id: ListingId(1),
            provider_id: ProviderId(1),
            provider_code: "a".into(),
            details,
            pictures: Vec::new(),
            status: history.last().map_or(ListingStatus::Active, |h| h.0),
            history: (history.iter())
                .map(|&(status, at)| StatusChange {
                    status,
                    at: Timestamp(at),
                })
                .collect(),
            brand_id: None,
            model_id: None,
            matching: MatchOutcome::UnknownBrand,
            last_seen_at: Timestamp(0),
            delisted_at: None,
            reserved_at: None,
            created_at: Timestamp(history[0].1),
            updated_at: Timestamp(0),
        }
    }

    fn eur(price: u64, at: i64) -> PriceObservation {
        PriceObservation {
            at: Timestamp(at),
            asking: AskingPrice {
                price: Some(price),
                currency: Some("EUR".into()),
            },
        }
    }

    fn seen(points: &[PricePoint]) -> Vec<(i64, &'static str, Option<u64>)> {
        (points.iter())
            .map(|p| (p.at.0, p.event.as_str(), p.asking.price))
            .collect()
    }

    #[test]
    fn a_listing_never_changed_is_its_one_price_and_its_delisting() {
        let active = listing(900, &[(ListingStatus::Active, 10)]);
        assert_eq!(
            seen(&price_history(&active, &[])),
            [(10, "listed", Some(900))]
        );
        let gone = listing(
            900,
            &[(ListingStatus::Active, 10), (ListingStatus::Delisted, 40)],
        );
        assert_eq!(
            seen(&price_history(&gone, &[])),
            [(10, "listed", Some(900)), (40, "delisted", Some(900))]
        );
    }

    #[test]
    fn changes_delistings_and_relistings_interleave_at_the_prices_then_in_force() {
        let listing = listing(
            700,
            &[
                (ListingStatus::Active, 10),
                (ListingStatus::Delisted, 25),
                (ListingStatus::Active, 30),
                (ListingStatus::Reserved, 35),
            ],
        );
        let stored = [eur(900, 10), eur(800, 20), eur(700, 30)];
        assert_eq!(
            seen(&price_history(&listing, &stored)),
            [
                (10, "listed", Some(900)),
                (20, "changed", Some(800)),
                (25, "delisted", Some(800)),
                (30, "relisted", Some(800)),
                (30, "changed", Some(700)),
            ]
        );
    }
}
