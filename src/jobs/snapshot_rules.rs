//! What a provider's snapshot must pass before anything of it is written: not empty, not too
//! many invalid lines, and not delisting too much of the provider's stock (the usual operator
//! mistakes: a truncated file, a broken export, another provider's file). The problems of a
//! snapshot are kept bounded: the first ones and a count.

use super::import::Problem;
use super::users::Actor;
use crate::domain::{ListingId, ListingStatus, Timestamp};
use crate::store::{Store, StoreError};
use rayon::prelude::*;
use std::collections::HashMap;

/// Share of invalid lines at which a snapshot is refused (and nothing is delisted).
pub const DEFAULT_MAX_INVALID: f64 = 0.5;

/// Share of the provider's stock a snapshot may delist before it is refused.
pub const DEFAULT_MAX_DELIST: f64 = 0.2;

/// A snapshot that keeps less than this share of the provider's stock is taken for another
/// provider's file, whatever share may be delisted.
const FOREIGN_BELOW: f64 = 0.01;

/// Problems kept with their text; past this many only the count grows.
pub const PROBLEMS_KEPT: usize = 1000;

/// The limits a snapshot is checked against before it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotRules {
    /// Share of invalid lines (0 to 1) at which the snapshot is refused.
    pub max_invalid: f64,
    /// Share of the provider's stock (0 to 1) the snapshot may delist.
    pub max_delist: f64,
    /// The stock guard overridden, and by whom: the override goes into the audit trail.
    pub mass_delist_allowed_by: Option<Actor>,
    /// When the snapshot was taken, for an archived one replayed (D-214): its listings are
    /// seen, priced and delisted at that instant rather than now.
    pub observed_at: Option<Timestamp>,
}

impl Default for SnapshotRules {
    fn default() -> SnapshotRules {
        SnapshotRules {
            max_invalid: DEFAULT_MAX_INVALID,
            max_delist: DEFAULT_MAX_DELIST,
            mass_delist_allowed_by: None,
            observed_at: None,
        }
    }
}

/// Why a share given for `maxInvalid` or `maxDelist` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} is a share between 0 and 1, not `{text}`")]
pub struct ShareError {
    pub name: &'static str,
    pub text: String,
}

/// `text` as a share between 0 and 1, for the option or parameter `name`.
pub fn parse_share(name: &'static str, text: &str) -> Result<f64, ShareError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|share| (0.0..=1.0).contains(share))
        .ok_or_else(|| ShareError {
            name,
            text: text.to_owned(),
        })
}

/// Why a time given for `--observed-at` or `observedAt` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} is an RFC 3339 time (2025-04-07T09:30:00Z) or a day (2025-04-07), not `{text}`")]
pub struct ObservedAtError {
    pub name: &'static str,
    pub text: String,
}

/// `text` as the instant a snapshot was taken, for the option or parameter `name`.
pub fn parse_observed_at(name: &'static str, text: &str) -> Result<Timestamp, ObservedAtError> {
    Timestamp::parse(text.trim()).ok_or_else(|| ObservedAtError {
        name,
        text: text.to_owned(),
    })
}

/// The first [`PROBLEMS_KEPT`] problems of a snapshot and how many there were in all: a
/// snapshot of millions of bad lines costs a count, not a list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problems {
    first: Vec<Problem>,
    count: usize,
}

impl Problems {
    pub fn push(&mut self, problem: Problem) {
        self.count += 1;
        if self.first.len() < PROBLEMS_KEPT {
            self.first.push(problem);
        }
    }

    /// Every problem found, kept or not.
    pub fn count(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The problems kept, in line order.
    pub fn first(&self) -> &[Problem] {
        &self.first
    }

    /// Problems counted but not kept.
    pub fn not_kept(&self) -> usize {
        self.count - self.first.len()
    }
}

/// Why a snapshot was refused by its lines or by what it would do to the stock: the fact, in
/// counts; [`Refusal::advice`] says what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("the snapshot has no valid listing; refusing it rather than delisting the provider's whole stock")]
    Empty,
    #[error("{invalid} of {total} lines are invalid, {max:.0}% or more; refusing the snapshot rather than delisting listings it lost")]
    MostlyInvalid {
        invalid: usize,
        total: usize,
        max: f64,
    },
    #[error("the snapshot would delist {} of provider `{provider}`'s {} listings in stock ({:.1}%, over the {:.0}% allowed)", .effect.delisted, .effect.stock(), .effect.share() * 100.0, .max * 100.0)]
    MassDelist {
        provider: String,
        effect: StockEffect,
        max: f64,
    },
    #[error("the snapshot keeps {} of provider `{provider}`'s {} listings in stock and would delist the other {} (another provider's file?)", .effect.kept, .effect.stock(), .effect.delisted)]
    Foreign {
        provider: String,
        effect: StockEffect,
    },
    #[error("the snapshot is dated {}, after now", .observed_at.to_rfc3339())]
    ObservedInFuture { observed_at: Timestamp },
    #[error("the snapshot is dated {}, before provider `{provider}`'s last snapshot, seen {}", .observed_at.to_rfc3339(), .last.to_rfc3339())]
    ObservedBeforeLast {
        provider: String,
        observed_at: Timestamp,
        last: Timestamp,
    },
}

impl Refusal {
    /// What the operator can do about it.
    pub fn advice(&self) -> &'static str {
        match self {
            Refusal::Empty | Refusal::MostlyInvalid { .. } => {
                "fix the lines reported and send the snapshot again, or raise --max-invalid (maxInvalid)"
            }
            Refusal::MassDelist { .. } => {
                "check that the file is this provider's whole snapshot; if the provider really dropped that much stock, allow it with --allow-mass-delist (allowMassDelist=true) or raise --max-delist (maxDelist)"
            }
            Refusal::Foreign { .. } => {
                "check --provider (the slug in the URL) and the file; if the provider really replaced its whole stock, allow it with --allow-mass-delist (allowMassDelist=true)"
            }
            Refusal::ObservedInFuture { .. } | Refusal::ObservedBeforeLast { .. } => {
                "replay a provider's archived snapshots oldest first, each dated (--observed-at, observedAt) at or after the one before it and not after now; a listing's history only moves forward"
            }
        }
    }
}

/// Refuses a snapshot of `valid` rows among `total` non-blank lines when it is empty or has
/// `max_invalid` or more of its lines invalid.
pub fn check_lines(
    valid: usize,
    problems: &Problems,
    total: usize,
    max_invalid: f64,
) -> Result<(), Refusal> {
    if valid == 0 {
        return Err(Refusal::Empty);
    }
    let invalid = problems.count();
    if invalid > 0 && invalid as f64 >= total as f64 * max_invalid {
        return Err(Refusal::MostlyInvalid {
            invalid,
            total,
            max: max_invalid * 100.0,
        });
    }
    Ok(())
}

/// Refuses a snapshot dated `observed_at` when that is after `now`, or before the last time
/// any of the provider's listings `known` was seen, priced or delisted: a listing's history is
/// kept in time order, so a provider's snapshots are replayed oldest first.
pub fn check_observed_at(
    store: &Store,
    provider: &str,
    known: &HashMap<String, ListingId>,
    observed_at: Timestamp,
    now: Timestamp,
) -> Result<Result<(), Refusal>, StoreError> {
    if observed_at > now {
        return Ok(Err(Refusal::ObservedInFuture { observed_at }));
    }
    let ids: Vec<ListingId> = known.values().copied().collect();
    let last = ids
        .par_iter()
        .map(|&id| Ok(store.listings().listing(id)?.map(|l| l.last_observed_at())))
        .collect::<Result<Vec<Option<Timestamp>>, StoreError>>()?
        .into_iter()
        .flatten()
        .max();
    Ok(match last {
        Some(last) if last > observed_at => Err(Refusal::ObservedBeforeLast {
            provider: provider.to_owned(),
            observed_at,
            last,
        }),
        _ => Ok(()),
    })
}

/// What a snapshot would do to the provider's stock: the listings in stock (not DELISTED)
/// before it that it keeps, and those it would delist, by id in code order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StockEffect {
    /// Listings in stock the snapshot names (counted up to what the decision needs).
    pub kept: usize,
    /// Listings in stock the snapshot leaves out: they would be delisted.
    pub delisted: usize,
    /// Their ids, in the order of their codes.
    pub to_delist: Vec<ListingId>,
}

impl StockEffect {
    /// The provider's listings in stock before the snapshot (as far as they were counted).
    pub fn stock(&self) -> usize {
        self.kept + self.delisted
    }

    /// Share of the stock the snapshot would delist.
    pub fn share(&self) -> f64 {
        match self.stock() {
            0 => 0.0,
            stock => self.delisted as f64 / stock as f64,
        }
    }

    /// Counts what a snapshot naming `seen` would do to the provider's listings `known` (code
    /// to id, delisted ones included). Only the listings it leaves out are all read (they are
    /// read again to be delisted); those it names are read only until there are enough in
    /// stock for the guard to let the snapshot through, which for a usual snapshot is a few
    /// times the number it delists.
    pub fn of(
        store: &Store,
        known: &HashMap<String, ListingId>,
        seen: &HashMap<String, usize>,
        max_delist: f64,
    ) -> Result<StockEffect, StoreError> {
        let mut missing: Vec<(&String, ListingId)> = known
            .iter()
            .filter(|(code, _)| !seen.contains_key(*code))
            .map(|(code, &id)| (code, id))
            .collect();
        missing.sort_unstable();
        let in_stock = |id: ListingId| -> Result<bool, StoreError> {
            Ok(store
                .listings()
                .listing(id)?
                .is_some_and(|listing| listing.status != ListingStatus::Delisted))
        };
        let to_delist = missing
            .par_iter()
            .map(|&(_, id)| Ok(in_stock(id)?.then_some(id)))
            .collect::<Result<Vec<Option<ListingId>>, StoreError>>()?
            .into_iter()
            .flatten()
            .collect::<Vec<_>>();
        let delisted = to_delist.len();
        let named: Vec<ListingId> = known
            .iter()
            .filter(|(code, _)| seen.contains_key(*code))
            .map(|(_, &id)| id)
            .collect();
        let kept = count_up_to(&named, enough_kept(delisted, max_delist), in_stock)?;
        Ok(StockEffect {
            kept,
            delisted,
            to_delist,
        })
    }

    /// The guard's verdict on this effect for `provider` under `rules`: `Ok(None)` when it
    /// passes, `Ok(Some(refusal))` when it would have been refused but the rules override it.
    pub fn judge(&self, provider: &str, rules: &SnapshotRules) -> Result<Option<Refusal>, Refusal> {
        let refusal = if self.delisted == 0 {
            None
        } else if (self.kept as f64) < self.stock() as f64 * FOREIGN_BELOW {
            Some(Refusal::Foreign {
                provider: provider.to_owned(),
                effect: self.clone(),
            })
        } else if self.share() > rules.max_delist {
            Some(Refusal::MassDelist {
                provider: provider.to_owned(),
                effect: self.clone(),
                max: rules.max_delist,
            })
        } else {
            None
        };
        match (refusal, &rules.mass_delist_allowed_by) {
            (Some(refusal), None) => Err(refusal),
            (refusal, _) => Ok(refusal),
        }
    }
}

/// Listings in stock the snapshot must keep for `delisted` to be within both rules: past this
/// count the guard's verdict cannot change, so no more are read.
fn enough_kept(delisted: usize, max_delist: f64) -> usize {
    if delisted == 0 {
        return 0;
    }
    let delisted = delisted as f64;
    let for_share = if max_delist > 0.0 {
        delisted * (1.0 - max_delist) / max_delist
    } else {
        f64::INFINITY
    };
    let for_foreign = delisted * FOREIGN_BELOW / (1.0 - FOREIGN_BELOW);
    let enough = for_share.max(for_foreign).floor() + 1.0;
    if enough >= usize::MAX as f64 {
        usize::MAX
    } else {
        enough as usize
    }
}

/// How many of `ids` pass `test`, read a block at a time on all cores, stopping once `enough`
/// have.
fn count_up_to(
    ids: &[ListingId],
    enough: usize,
    test: impl Fn(ListingId) -> Result<bool, StoreError> + Sync,
) -> Result<usize, StoreError> {
    const BLOCK: usize = 16_384;
    let mut count = 0;
    for block in ids.chunks(BLOCK) {
        if count >= enough {
            break;
        }
        count += block
            .par_iter()
            .map(|&id| test(id).map(usize::from))
            .sum::<Result<usize, StoreError>>()?;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(line: usize) -> Problem {
        Problem {
            file: "feed".into(),
            line,
            field: None,
            message: "bad".into(),
        }
    }

    #[test]
    fn problems_keep_the_first_and_count_the_rest() {
        let mut problems = Problems::default();
        for line in 1..=PROBLEMS_KEPT + 5 {
            problems.push(problem(line));
        }
        assert_eq!(problems.count(), PROBLEMS_KEPT + 5);
        assert_eq!(problems.first().len(), PROBLEMS_KEPT);
        assert_eq!(problems.first()[0].line, 1);
        assert_eq!(problems.not_kept(), 5);
    }

    #[test]
    fn half_the_lines_invalid_is_refused_and_none_invalid_never_is() {
        let mut half = Problems::default();
        half.push(problem(1));
        assert!(matches!(
            check_lines(1, &half, 2, DEFAULT_MAX_INVALID),
            Err(Refusal::MostlyInvalid {
                invalid: 1,
                total: 2,
                ..
            })
        ));
        let mut third = Problems::default();
        third.push(problem(1));
        assert_eq!(check_lines(2, &third, 3, DEFAULT_MAX_INVALID), Ok(()));
        assert_eq!(check_lines(3, &Problems::default(), 3, 0.0), Ok(()));
        assert_eq!(
            check_lines(0, &Problems::default(), 0, 1.0),
            Err(Refusal::Empty)
        );
    }

    fn effect(kept: usize, delisted: usize) -> StockEffect {
        StockEffect {
            kept,
            delisted,
            to_delist: Vec::new(),
        }
    }

    #[test]
    fn the_stock_guard_refuses_past_the_share_or_a_foreign_file_unless_overridden() {
        let rules = SnapshotRules::default();
        assert_eq!(
            effect(80, 20).judge("p", &rules),
            Ok(None),
            "20 % is allowed"
        );
        assert!(matches!(
            effect(79, 21).judge("p", &rules),
            Err(Refusal::MassDelist { .. })
        ));
        assert!(matches!(
            effect(0, 120).judge("p", &rules),
            Err(Refusal::Foreign { .. })
        ));
        let everything = SnapshotRules {
            max_delist: 1.0,
            ..SnapshotRules::default()
        };
        assert_eq!(effect(5, 95).judge("p", &everything), Ok(None));
        assert!(
            matches!(
                effect(0, 95).judge("p", &everything),
                Err(Refusal::Foreign { .. })
            ),
            "a share of 1 still refuses a file that keeps none of the stock"
        );
        let allowed = SnapshotRules {
            mass_delist_allowed_by: Some(Actor::Cli),
            ..SnapshotRules::default()
        };
        assert!(matches!(
            effect(1, 119_999).judge("p", &allowed),
            Ok(Some(Refusal::Foreign { .. }))
        ));
        assert_eq!(effect(10, 0).judge("p", &rules), Ok(None));
        assert_eq!(effect(0, 0).judge("p", &rules), Ok(None), "no stock yet");
    }

    #[test]
    fn the_count_stops_once_the_verdict_cannot_change() {
        // 20 delisted at 20 %: 80 kept let it through, so the 81st is enough.
        assert_eq!(enough_kept(20, 0.2), 81);
        assert_eq!(enough_kept(0, 0.2), 0, "nothing delisted: nothing to read");
        assert_eq!(enough_kept(99, 1.0), 2);
        assert_eq!(enough_kept(5, 0.0), usize::MAX);
        let ids: Vec<ListingId> = (1..=100_000).map(ListingId).collect();
        let read = std::sync::atomic::AtomicUsize::new(0);
        let counted = count_up_to(&ids, 10, |_| {
            read.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(true)
        })
        .expect("count");
        assert!(counted >= 10);
        assert!(read.into_inner() < ids.len(), "stopped after a block");
    }
}
