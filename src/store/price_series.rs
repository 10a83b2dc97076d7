//! The models' price series (D-212): which models each write changed the listings of (a price,
//! a status, a model), logged in the write's own batch, one key per write, until the series
//! folder has folded them; and what the folder keeps of each model: its periods, those of an
//! interval beginning in one year to a key, and the listings active when it was folded.
//! Keyspaces: `PriceSeriesTouched`, `PriceSeriesPeriods`, `PriceSeriesState`.

use super::codec::{decode, encode};
use super::keys::{self, Keyspace, MetaKey};
use super::write::Operation;
use super::{Store, StoreResult};
use crate::domain::price_series::{ActivePrices, Interval, ModelFold, SeriesChunk};
use crate::domain::ModelId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

/// Models an entry names at most: a write that changed the listings of more (an ingest into an
/// empty store) logs every model instead.
const KEEP_MODELS: usize = 100_000;

/// One write's entry of the log: a record.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct LogEntry {
    every_model: bool,
    models: Vec<ModelId>,
}

/// What the log holds: the models its entries name, or every model, and the entries, to
/// remove once they are folded.
#[derive(Debug, Default, Clone)]
pub struct SeriesLog {
    keys: Vec<Vec<u8>>,
    pub models: BTreeSet<ModelId>,
    /// An entry asks for every model to be folded again.
    pub every_model: bool,
    /// An entry a stopped drain had folded up to this model asks for every model: every model
    /// after it is to be folded.
    pub every_model_after: Option<ModelId>,
    /// The model a stopped drain had folded up to, when this log resumes it.
    pub resumed_after: Option<ModelId>,
}

/// How far a drain of the log got before it stopped: every model up to `through` that its
/// `entries` name was folded after their writes. Kept with each commit of folds but the last,
/// which removes it with the entries, so that a drain after a restart resumes there instead of
/// folding a million models again (D-235).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldProgress {
    pub entries: Vec<Vec<u8>>,
    pub through: ModelId,
}

impl SeriesLog {
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// How many writes' entries it holds.
    pub fn entries(&self) -> usize {
        self.keys.len()
    }

    /// The progress of a drain of this log folded through `model`.
    pub fn folded_through(&self, model: ModelId) -> FoldProgress {
        FoldProgress {
            entries: self.keys.clone(),
            through: model,
        }
    }
}

/// The log's entries as stored: keys and values, not yet decoded.
pub struct LogEntries(Vec<(sled::IVec, sled::IVec)>);

impl LogEntries {
    /// The log, every entry counting whole.
    pub fn decode(self) -> StoreResult<SeriesLog> {
        self.decode_resuming(None)
    }

    /// The log, the entries `progress` names counting only for the models after its `through`
    /// (a progress whose entries are not all still there, drained since, counts for nothing).
    pub fn decode_resuming(self, progress: Option<&FoldProgress>) -> StoreResult<SeriesLog> {
        let is_logged = |wanted: &Vec<u8>| self.0.iter().any(|(key, _)| key[..] == wanted[..]);
        let resumed = progress.filter(|p| p.entries.iter().all(is_logged));
        let mut log = SeriesLog {
            resumed_after: resumed.map(|p| p.through),
            ..SeriesLog::default()
        };
        for (key, value) in &self.0 {
            let entry: LogEntry = decode(key, value)?;
            match resumed.filter(|p| p.entries.iter().any(|k| k[..] == key[..])) {
                Some(progress) => {
                    if entry.every_model {
                        log.every_model_after = Some(progress.through);
                    }
                    let after = entry.models.into_iter().filter(|m| *m > progress.through);
                    log.models.extend(after);
                }
                None => {
                    log.every_model |= entry.every_model;
                    log.models.extend(entry.models);
                }
            }
            log.keys.push(key.to_vec());
        }
        Ok(log)
    }
}

/// The store's price series: see [`Store::price_series`].
#[derive(Clone, Copy)]
pub struct PriceSeries<'s>(pub(super) &'s Store);

impl PriceSeries<'_> {
    /// Every entry of the log. Read in a write turn, every entry read is whole with its write.
    pub fn log(self) -> StoreResult<SeriesLog> {
        self.log_entries()?.decode()
    }

    /// Every entry of the log as stored, to decode later ([`LogEntries::decode`]): copied in a
    /// write turn, every entry is whole with its write, and the turn is not held while a
    /// million models are decoded (half a second at the scale run, D-234).
    pub fn log_entries(self) -> StoreResult<LogEntries> {
        let entries = self.0.db.scan_prefix(Keyspace::PriceSeriesTouched.prefix());
        Ok(LogEntries(entries.collect::<Result<_, _>>()?))
    }

    /// How far the last drain that stopped had folded, if it left anything to resume.
    pub fn fold_progress(self) -> StoreResult<Option<FoldProgress>> {
        let key = MetaKey::SeriesFoldProgress.key();
        self.0.db.get(&key)?.map(|v| decode(&key, &v)).transpose()
    }

    /// The listings active when `model` was last folded; `None` when it never was, or had no
    /// listing then.
    pub fn active(self, model: ModelId) -> StoreResult<Option<ActivePrices>> {
        self.0.get(Keyspace::PriceSeriesState.id_key(model.0))
    }

    /// `model`'s folded periods of `interval` that begin in `years`, in order.
    pub fn chunks(
        self,
        model: ModelId,
        interval: Interval,
        years: RangeInclusive<i32>,
    ) -> StoreResult<Vec<SeriesChunk>> {
        let code = interval.code();
        let range = keys::price_series_periods(model, code, *years.start())
            ..=keys::price_series_periods(model, code, *years.end());
        (self.0.db.range(range))
            .map(|entry| {
                let (key, value) = entry?;
                decode(&key, &value)
            })
            .collect()
    }

    /// Every model a fold kept anything of.
    pub fn models_folded(self) -> StoreResult<Vec<ModelId>> {
        Ok(self
            .0
            .ids_under(Keyspace::PriceSeriesState.prefix())?
            .into_iter()
            .map(ModelId)
            .collect())
    }
}

/// The write of the entry of generation `generation`: `models` (or every model), with those of
/// an entry a failed write of that generation left (its keys may be part-applied).
pub(super) fn log_entry(
    db: &sled::Db,
    generation: u64,
    models: BTreeSet<ModelId>,
    every_model: bool,
) -> StoreResult<Operation> {
    let key = Keyspace::PriceSeriesTouched.id_key(generation);
    let mut entry: LogEntry = match db.get(&key)? {
        Some(value) => decode(&key, &value)?,
        None => LogEntry::default(),
    };
    entry.every_model |= every_model;
    entry.models.extend(models);
    entry.models.sort_unstable();
    entry.models.dedup();
    if entry.every_model || entry.models.len() > KEEP_MODELS {
        entry.every_model = true;
        entry.models.clear();
    }
    Ok((key, Some(encode(&entry))))
}

/// The writes that leave `model`'s series as `fold` has it (`None`: nothing kept, the model
/// having no listing or being gone): its chunks that differ from the stored ones written, the
/// stored ones it no longer has removed, and its active listings.
pub(super) fn fold_operations(
    store: &Store,
    model: ModelId,
    fold: Option<&ModelFold>,
) -> StoreResult<Vec<Operation>> {
    let mut stored: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for entry in store.db.scan_prefix(keys::price_series_periods_of(model)) {
        let (key, value) = entry?;
        stored.insert(key.to_vec(), value.to_vec());
    }
    let mut operations = Vec::new();
    let state = Keyspace::PriceSeriesState.id_key(model.0);
    match fold {
        Some(fold) => {
            for (interval, year, chunk) in &fold.chunks {
                let key = keys::price_series_periods(model, interval.code(), *year);
                let value = encode(chunk);
                if stored.remove(&key).as_ref() != Some(&value) {
                    operations.push((key, Some(value)));
                }
            }
            operations.push((state, Some(encode(&fold.active))));
        }
        None => operations.push((state, None)),
    }
    operations.extend(stored.into_keys().map(|key| (key, None)));
    Ok(operations)
}

/// The removal of the entries of `log`, once what they name is folded.
pub(super) fn forget_operations(log: &SeriesLog) -> impl Iterator<Item = Operation> + '_ {
    log.keys.iter().map(|key| (key.clone(), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(raw: &[u64]) -> BTreeSet<ModelId> {
        raw.iter().copied().map(ModelId).collect()
    }

    fn record(store: &Store, generation: u64, models: &[u64], every_model: bool) {
        let (key, value) =
            log_entry(&store.db, generation, ids(models), every_model).expect("entry");
        store.damage(&key, value.as_deref());
    }

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        (dir, store)
    }

    #[test]
    fn the_log_names_the_models_of_every_entry_and_a_retry_shares_its_entry() {
        let (_dir, store) = store();
        assert!(store.price_series().log().expect("log").is_empty());
        record(&store, 3, &[5, 3], false);
        record(&store, 4, &[3, 9], false);
        record(&store, 4, &[1], false);
        let log = store.price_series().log().expect("log");
        assert_eq!((log.entries(), &log.models), (2, &ids(&[1, 3, 5, 9])));
        assert!(!log.every_model);
        let forgotten: Vec<Operation> = forget_operations(&log).collect();
        assert_eq!(
            forgotten,
            [
                (Keyspace::PriceSeriesTouched.id_key(3), None),
                (Keyspace::PriceSeriesTouched.id_key(4), None)
            ]
        );
    }

    #[test]
    fn an_entry_of_too_many_models_or_of_a_day_of_rates_names_every_model() {
        let (_dir, store) = store();
        let many: Vec<u64> = (0..=KEEP_MODELS as u64).collect();
        record(&store, 1, &many, false);
        let log = store.price_series().log().expect("log");
        assert!(log.every_model && log.models.is_empty());
        let (_dir, store) = self::store();
        record(&store, 1, &[2], true);
        assert!(store.price_series().log().expect("log").every_model);
    }
}
