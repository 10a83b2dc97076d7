//! Models' price series (D-209) as the folder and the requests reach them: the stored ECB days
//! as a series converts with them (kept until a write of rates), one model folded from its
//! listings' price histories (found through the listings index), and a run of a model's
//! periods as the store keeps them and carries them forward. What keeps them is
//! `series_folder`.

use super::reindex::listings_of_model;
use super::writer::WriteError;
use crate::domain::price_history::{price_history, PricePoint};
use crate::domain::price_series::{
    day_of, fold_model, series, ModelFold, Period, RatesHistory, SeriesPeriod,
};
use crate::domain::{ModelId, Timestamp};
use crate::store::{Store, StoreError, StoreResult};
use catalogue_index::{IndexError, ListingIndex};
use std::sync::{Arc, Mutex};

/// Why a model could not be folded.
#[derive(Debug, thiserror::Error)]
pub enum FoldError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("writing the folded series")]
    Write(#[from] WriteError<StoreError>),
    #[error(transparent)]
    Reindex(#[from] super::reindex::ReindexError),
    /// The listings index is behind the store: a fold would miss listings.
    #[error("the listings index is behind the store; the log is kept until it is rebuilt")]
    IndexBehind,
    /// Asked to stop (SIGTERM) between two commits.
    #[error("stopped after folding {0} models: the server is shutting down; their series are written, and folding again completes the rest")]
    Stopped(usize),
}

/// The stored ECB days as a series reads them, read again only after a write of rates through
/// this store: a request converts each of its periods at a table without a store read.
#[derive(Debug, Default)]
pub struct KeptRates(Mutex<Option<(RatesEpochs, Arc<RatesHistory>)>>);

/// The store's counts of writes of rates in force and of days, that a history was read at.
type RatesEpochs = (u64, u64);

impl KeptRates {
    pub fn history(&self, store: &Store) -> StoreResult<Arc<RatesHistory>> {
        // Read before the days: a write during the read leaves them marked with the older
        // epochs, so they are read again.
        let epochs = (store.rates().days_epoch(), store.rates().epoch());
        {
            let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, history)) = kept.as_ref().filter(|(at, _)| *at == epochs) {
                return Ok(history.clone());
            }
        }
        let days = store.rates().all_days().collect::<StoreResult<Vec<_>>>()?;
        let in_force = store.rates().in_force()?;
        let history = Arc::new(RatesHistory::new(days, in_force.as_ref()));
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((epochs, history.clone()));
        Ok(history)
    }
}

/// `model` folded at `now` from every listing matched or linked to it now, whatever its
/// status (a link or a merge moves a listing's whole timeline to its model); `None` when it
/// has none, or is gone.
pub fn fold_of(
    store: &Store,
    index: &ListingIndex,
    rates: &RatesHistory,
    model: ModelId,
    now: Timestamp,
) -> Result<Option<ModelFold>, FoldError> {
    if !store.catalogue().has_model(model)? {
        return Ok(None);
    }
    let timelines = timelines_of(store, index, model)?;
    Ok(fold_model(&timelines, now, rates))
}

/// The price history of each listing of `model`.
pub fn timelines_of(
    store: &Store,
    index: &ListingIndex,
    model: ModelId,
) -> Result<Vec<Vec<PricePoint>>, FoldError> {
    let listings = listings_of_model::<FoldError>(store, index, model)?;
    (listings.iter())
        .map(|listing| {
            let observations = store.price_changes().of(listing.id)?;
            Ok(price_history(listing, &observations))
        })
        .collect()
}

/// A run of a model's periods, and when they were last folded.
#[derive(Debug, Clone)]
pub struct ModelSeries {
    /// `None` when the model was never folded with a listing.
    pub as_of: Option<Timestamp>,
    pub periods: Vec<SeriesPeriod>,
}

/// `model`'s periods from `first` to `last` (one interval): as folded up to the period of its
/// last fold, carried forward after it. Reads the model's state and the keys of the folded
/// years asked for, never its listings.
pub fn model_series(
    store: &Store,
    rates: &RatesHistory,
    model: ModelId,
    first: Period,
    last: Period,
) -> StoreResult<ModelSeries> {
    let active = store.price_series().active(model)?;
    let folded_through = active
        .as_ref()
        .map(|active| Period::containing(first.interval, day_of(active.folded_at)))
        .map(|folded| folded.min(last))
        .filter(|through| *through >= first);
    let chunks = match folded_through {
        Some(through) => store.price_series().chunks(
            model,
            first.interval,
            first.start.year()..=through.start.year(),
        )?,
        None => Vec::new(),
    };
    Ok(ModelSeries {
        as_of: active.as_ref().map(|active| active.folded_at),
        periods: series(first, last, active.as_ref(), &chunks, rates),
    })
}
