//! The store of record, in sled: every record and every secondary key the API needs, so each
//! lookup is a key or prefix read. One tree with a keyspace byte per key kind, so that a whole
//! write (records, secondary keys and the generation bump) is one atomic `sled::Batch`.
//! Reads go through the store's areas (`store.catalogue()`, `.listings()`, `.sessions()`,
//! `.audit()`, `.jobs()`, `.pictures()`, `.duplicates()`, `.rates()`, `.unmatched()`,
//! `.price_changes()`, `.price_series()`), a file each naming the
//! keyspaces it owns; `Store` itself opens the tree, keeps the generations and applies writes.

mod audit;
mod catalogue;
mod codec;
pub mod compact;
mod duplicates;
mod jobs;
mod keys;
mod listings;
pub mod migrate;
mod pending;
mod pictures;
mod price_changes;
mod price_series;
mod rates;
mod recount;
mod sessions;
mod sources;
mod touch_log;
mod turn;
mod unmatched;
mod write;

pub use audit::{Audit, AuditFilter};
pub use catalogue::Catalogue;
pub use duplicates::{base_key_model, Duplicates};
pub use jobs::Jobs;
pub use listings::Listings;
pub use migrate::{MigrationPolicy, MigrationReport};
pub use pictures::{DuePage, Pictures};
pub use price_changes::PriceChanges;
pub use price_series::{FoldProgress, LogEntries, PriceSeries, SeriesLog};
pub use rates::{NearestDays, Rates};
pub use sessions::Sessions;
pub use turn::{Changes, Interlude, ListingSink, ListingWrite, WriteTurn, WriteWatch};
#[cfg(test)]
pub use unmatched::recompute as recompute_unmatched_groups;
pub use unmatched::{GroupOrder, GroupSummary, GroupsRebuilt, KeptGroup, Member, Unmatched};
pub use write::WriteBatch;

use crate::domain::{AuditEntry, Timestamp};
use codec::{decode, decode_u64, encode_u64, StoredRecord};
pub use keys::Counted;
use keys::{Keyspace, MetaKey};
use rayon::prelude::*;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Version of the store's layout: which keys exist and how their values are encoded. A store of
/// an older version is migrated in place ([`migrate`]); one of a newer version is refused.
/// 3: every record value starts with its layout version byte.
/// 4: the admin counts (`keys::Counted`) are kept as meta counters by every write.
/// 5: every model picture is found by id (`ModelPicture`), reference bases are keyed
///    (`ModelBase`), and every picture has a pipeline record unless the dataset hosts it.
/// 6: the sources of new listings are kept in groups.
/// 7: no calibre -> model keys (`ModelByCaliber`): nothing read them.
/// 8: unmatched listings' groups are kept (`store::unmatched`).
/// 9: the audit trail is keyed by user, by action and by both, each list with its count
///    (`AuditByUser`, `AuditByAction`, `AuditByUserAction`, `AuditCount`).
/// 10: a group of unmatched listings keeps its members and prices as keys of their own
///    (`UnmatchedMember`, `UnmatchedPrice`), its record only the rest.
/// 11: a group's member keys are valued with their listing's title (D-203).
/// 12: every day of ECB rates loaded is kept by date (`RatesDay`), the rates in force among
///    them (D-204).
/// 13: models' price series are folded from a log of the models each write changed
///    (`PriceSeriesTouched`, `PriceSeriesPeriods`, `PriceSeriesState`; D-209).
/// 14: a merge may leave its duplicates' listings for the listing mover
///    (`MergedListingsLeft`, D-231): a binary of 13 would never move them.
/// 15: the groups of unmatched listings by provider alone and by reason alone are walked
///    through their provider-and-reason orders (D-233).
/// 16: no text keys of the groups of unmatched listings (`UnmatchedText`): the listings index
///    finds a group by the start of its reference or brand text (D-240).
pub const SCHEMA_VERSION: u64 = 16;

/// Failures of the store layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store I/O")]
    Sled(#[from] sled::Error),
    #[error("corrupt record under key {key:?}: {reason}")]
    Corrupt { key: Vec<u8>, reason: String },
    #[error("store schema version {found} is older than version {expected}, the one this binary reads; stop the server and run `watch-catalogue migrate` on this data dir")]
    MigrationNeeded { found: u64, expected: u64 },
    #[error("store schema version {found} is newer than version {known}, the newest this binary knows: it was written (or its migration begun) by a newer watch-catalogue, and a store is never migrated down; run that version")]
    NewerSchema { found: u64, known: u64 },
    #[error("store schema version {found} has no migration to version {expected}; re-import the dataset into a new data dir")]
    NoMigration { found: u64, expected: u64 },
}

/// Result alias of the store layer.
pub type StoreResult<T> = Result<T, StoreError>;

/// The counter bumped by each committed write; the index records the generation it reflects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct StoreGeneration(pub u64);

/// Marks the first flush under way while it lives, failed or not.
pub(crate) struct FirstFlushUnderWay<'a>(&'a AtomicBool);

impl<'a> FirstFlushUnderWay<'a> {
    fn mark(flag: &'a AtomicBool) -> Self {
        flag.store(true, Ordering::Release);
        FirstFlushUnderWay(flag)
    }
}

impl Drop for FirstFlushUnderWay<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Keys one sled batch writes at most; see [`WriteTurn::commit`]. sled applies a batch of
/// 50,000 keys (an ingest chunk of refreshed listings) as fast as key-by-key inserts, and much
/// larger ones more slowly, holding gigabytes (docs/decisions.md, D-14): an ingest chunk of
/// 50,000 new listings, 73,000-86,000 keys with its pictures and sources in groups, is applied
/// key by key.
pub const ATOMIC_OPERATIONS: usize = 64_000;

/// How a write's keys reach sled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Applied {
    /// One atomic sled batch when it holds at most [`ATOMIC_OPERATIONS`] keys, else key by key.
    AtomicWhenItFits,
    /// Key by key, on rayon's threads, whatever its size.
    KeyByKey,
}

/// Removes every key of `space`, `per_batch` keys a sled batch (a step or a rebuild that
/// drops a keyspace); the keys removed.
fn clear_keyspace(db: &sled::Db, space: Keyspace, per_batch: usize) -> StoreResult<u64> {
    clear_prefix(db, &space.prefix(), per_batch)
}

/// Removes every key that starts with `prefix`, `per_batch` keys a sled batch; the keys
/// removed.
fn clear_prefix(db: &sled::Db, prefix: &[u8], per_batch: usize) -> StoreResult<u64> {
    let mut removed = 0;
    loop {
        let keys = db
            .scan_prefix(prefix)
            .keys()
            .take(per_batch)
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Ok(removed);
        }
        let mut batch = sled::Batch::default();
        for key in &keys {
            batch.remove(key);
        }
        db.apply_batch(batch)?;
        removed += keys.len() as u64;
    }
}

/// The id a secondary key ends with.
fn secondary_id(key: &[u8]) -> StoreResult<u64> {
    keys::trailing_id(key).ok_or_else(|| StoreError::Corrupt {
        key: key.to_vec(),
        reason: "secondary key without a trailing id".into(),
    })
}

/// Handle on the sled database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    db: sled::Db,
    /// The write turn every clone shares, and who waits for it: see [`WriteTurn`].
    turns: Arc<turn::TurnQueue>,
    /// How many writes through this store changed the rates in force.
    rates_epoch: Arc<AtomicU64>,
    /// How many writes through this store wrote a day of rates, in force or not.
    rate_days_epoch: Arc<AtomicU64>,
    /// Writes applied key by key through this store, counted as each begins and as it ends
    /// (odd: one is under way): see [`ReadAt`].
    key_by_key_writes: Arc<AtomicU64>,
    /// The right to append to the audit trail, inside the write turn or outside it:
    /// see `audit::AppendRight`.
    audit_appends: Arc<Mutex<()>>,
    /// sled's segment size for this store: see [`Store::flush_once_opened`].
    segment_bytes: usize,
    /// True while [`Store::flush_once_opened`] runs: a write then waits for sled's walk.
    first_flush_under_way: Arc<AtomicBool>,
}

/// The store's generation as a reader found it, for values kept per generation (the API's
/// brands, series and model list items). A write applied key by key bumps the generation
/// first, so what is read while it runs may be part-written yet carry its generation: such
/// reads are never kept ([`Store::whole_since`]).
#[derive(Debug, Clone, Copy)]
pub struct ReadAt {
    pub generation: StoreGeneration,
    key_by_key_writes: u64,
}

/// The store by area: each a borrowed view over the one sled tree, reading the keyspaces its
/// module names (and writing them, for the bookkeeping done outside the write turn: sessions,
/// jobs). Every other write goes through the write turn's [`WriteBatch`], whatever its area.
impl Store {
    /// The catalogue area: brands, series, complications, calibres and models.
    pub fn catalogue(&self) -> Catalogue<'_> {
        Catalogue(self)
    }

    /// The listings area: providers, their listings and each model's count of active listings.
    pub fn listings(&self) -> Listings<'_> {
        Listings(self)
    }

    /// The sessions area: back-office users and their sessions.
    pub fn sessions(&self) -> Sessions<'_> {
        Sessions(self)
    }

    /// The audit area: the back office's audit trail.
    pub fn audit(&self) -> Audit<'_> {
        Audit(self)
    }

    /// The jobs area: the records of batch jobs submitted to a running server.
    pub fn jobs(&self) -> Jobs<'_> {
        Jobs(self)
    }

    /// The pictures area: the image pipeline's pictures and picture review.
    pub fn pictures(&self) -> Pictures<'_> {
        Pictures(self)
    }

    /// The duplicates area: the duplicate finder's pairs and dismissals, and merged models.
    pub fn duplicates(&self) -> Duplicates<'_> {
        Duplicates(self)
    }

    /// The rates area: the ECB rates of every day loaded, those in force, and their
    /// conversion tables.
    pub fn rates(&self) -> Rates<'_> {
        Rates(self)
    }

    /// The reconciliation area: unmatched listings grouped by the identity their sellers claim.
    pub fn unmatched(&self) -> Unmatched<'_> {
        Unmatched(self)
    }

    /// Listings' price changes: what their price histories are read from (D-205).
    pub fn price_changes(&self) -> PriceChanges<'_> {
        PriceChanges(self)
    }

    /// Models' price series: the log of models to fold, and what their folds kept (D-209).
    pub fn price_series(&self) -> PriceSeries<'_> {
        PriceSeries(self)
    }

    /// Brings the kept groups of unmatched listings to what the listings make
    /// (`watch-catalogue reindex`), in the caller's write turn: the groups, and the keys that
    /// differed and were written.
    pub fn rebuild_unmatched_groups(&self, _turn: &WriteTurn<'_>) -> StoreResult<GroupsRebuilt> {
        unmatched::rebuild(&self.db)
    }
}

/// How many small flushes [`Store::flush_once_opened`] makes after its filler: sled's walk came
/// at the 7th on the scale run's store (it waits for an epoch of sled's own to pass), and each
/// costs well under a millisecond when there is none.
const FIRST_FLUSHES: u64 = 200;

/// sled's segment size for a store made now: sled's default. Half of it, given to the stores made
/// for a while before, left a 10M-listing store no smaller, and sled's first stabilisation after
/// an open walks the segments in time quadratic in their number (docs/decisions.md, D-219).
pub const SEGMENT_BYTES: usize = 512 << 10;

/// sled's configuration for the store in `dir`, with a page cache of `cache_bytes`. A store made
/// now has segments of [`SEGMENT_BYTES`]; one made before keeps the size it was made with, which
/// sled records in the store's `conf` file and refuses to open with another (`compact` copies a
/// store into a new one of today's size).
pub fn sled_config(dir: &Path, cache_bytes: u64) -> sled::Config {
    sled_config_of(dir, cache_bytes, segment_bytes_of(dir))
}

fn sled_config_of(dir: &Path, cache_bytes: u64, segment_bytes: usize) -> sled::Config {
    sled::Config::new()
        .path(dir)
        .cache_capacity(cache_bytes)
        .segment_size(segment_bytes)
}

/// The segment size of the store in `dir`: the one it was made with, or today's for a new one.
fn segment_bytes_of(dir: &Path) -> usize {
    made_with_segment_bytes(dir).unwrap_or(SEGMENT_BYTES)
}

/// The segment size the store in `dir` was made with, from sled's `conf` file (its lines, then
/// a checksum); `None` for a store not made yet.
fn made_with_segment_bytes(dir: &Path) -> Option<usize> {
    let conf = std::fs::read(dir.join("conf")).ok()?;
    let text = String::from_utf8_lossy(&conf);
    text.lines()
        .find_map(|line| line.strip_prefix("segment_size: "))
        .and_then(|size| size.trim().parse().ok())
}

impl Store {
    /// Opens (or creates) the store in `dir`. A store of an older schema is refused with
    /// [`StoreError::MigrationNeeded`], one of a newer schema with [`StoreError::NewerSchema`].
    pub fn open(dir: &Path, cache_bytes: u64) -> StoreResult<Store> {
        Ok(Store::open_with(dir, cache_bytes, MigrationPolicy::Refuse)?.0)
    }

    /// Opens (or creates) the store in `dir`, first migrating an older schema in place.
    pub fn open_migrating(dir: &Path, cache_bytes: u64) -> StoreResult<(Store, MigrationReport)> {
        Store::open_with(dir, cache_bytes, MigrationPolicy::All)
    }

    /// Opens (or creates) the store in `dir`, migrating an older schema as `policy` allows.
    pub fn open_with(
        dir: &Path,
        cache_bytes: u64,
        policy: MigrationPolicy,
    ) -> StoreResult<(Store, MigrationReport)> {
        let segment_bytes = segment_bytes_of(dir);
        let db = sled_config_of(dir, cache_bytes, segment_bytes).open()?;
        let report = migrate::bring_up_to_date(&db, policy)?;
        recount::recount_if_held(&db)?;
        let store = Store {
            db,
            turns: Arc::default(),
            rates_epoch: Arc::default(),
            rate_days_epoch: Arc::default(),
            key_by_key_writes: Arc::default(),
            audit_appends: Arc::default(),
            segment_bytes,
            first_flush_under_way: Arc::default(),
        };
        Ok((store, report))
    }

    /// The generation of the last committed write (0 for a new store).
    pub fn generation(&self) -> StoreResult<StoreGeneration> {
        Ok(StoreGeneration(
            self.meta(MetaKey::Generation)?.unwrap_or(0),
        ))
    }

    /// The generation to read at, for values kept per generation: see [`ReadAt`].
    pub fn read_at(&self) -> StoreResult<ReadAt> {
        // The count before the generation: a write begun after it moves the count.
        let key_by_key_writes = self.key_by_key_writes.load(Ordering::SeqCst);
        Ok(ReadAt {
            generation: self.generation()?,
            key_by_key_writes,
        })
    }

    /// True when everything read since `at` is whole at its generation: no write was being
    /// applied key by key then, and none has begun since.
    pub fn whole_since(&self, at: &ReadAt) -> bool {
        at.key_by_key_writes % 2 == 0
            && self.key_by_key_writes.load(Ordering::SeqCst) == at.key_by_key_writes
    }

    /// The generation of the last write that changed listings or the rates in force: the
    /// listings index is current when it reflects at least this generation.
    pub fn listings_generation(&self) -> StoreResult<StoreGeneration> {
        Ok(StoreGeneration(
            self.meta(MetaKey::ListingsGeneration)?.unwrap_or(0),
        ))
    }

    /// True when no brand has been written yet.
    pub fn is_empty(&self) -> StoreResult<bool> {
        Ok(self
            .db
            .scan_prefix(Keyspace::Brand.prefix())
            .next()
            .is_none())
    }

    /// Applies `batch` with a generation bump, and flushes it to disk before returning: a write is
    /// acknowledged only once it is durable. A write of up to [`ATOMIC_OPERATIONS`] keys is atomic,
    /// one sled batch. A larger one (an import of a million models) is applied key by key, phase
    /// after phase of `keys::apply_phase` (the generation bump and id counters first, the records
    /// found by a natural key last), each phase's keys on rayon's threads in runs of neighbouring
    /// keys (`apply_phase_in_parallel`): sled holds batches in memory many times over while
    /// applying them (gigabytes for a large import), where plain inserts stay within its cache
    /// (docs/decisions.md, D-14); its audit entries come last, one atomic sled batch with their
    /// lists' keys and counts. A crash part-way then leaves it partly written, with the indexes
    /// marked behind; the batch jobs that write so much are idempotent, and running them again
    /// completes it. Only [`WriteTurn::commit`] calls this.
    fn apply(&self, batch: WriteBatch<'_>) -> StoreResult<(StoreGeneration, turn::BatchChanges)> {
        self.apply_with(batch, true, Applied::AtomicWhenItFits)
    }

    /// Applies one part of a write made of several commits, as [`Store::apply`] but key by key
    /// whatever its size: the whole is atomic in no case, and on both cores a chunk of 50,000
    /// listings lands faster than as one sled batch (docs/decisions.md, D-15). Only
    /// [`WriteTurn::commit_part`] calls this.
    fn apply_part(
        &self,
        batch: WriteBatch<'_>,
    ) -> StoreResult<(StoreGeneration, turn::BatchChanges)> {
        self.apply_with(batch, true, Applied::KeyByKey)
    }

    /// Applies a write of derived data only (the duplicate finder's pairs), which no index
    /// reflects: as [`Store::apply`], without a generation bump.
    fn apply_derived(&self, batch: WriteBatch<'_>) -> StoreResult<turn::BatchChanges> {
        Ok(self.apply_with(batch, false, Applied::AtomicWhenItFits)?.1)
    }

    fn apply_with(
        &self,
        mut batch: WriteBatch<'_>,
        bump_generation: bool,
        applied: Applied,
    ) -> StoreResult<(StoreGeneration, turn::BatchChanges)> {
        let current = self.generation()?.0;
        let generation = StoreGeneration(current + u64::from(bump_generation));
        let bump = Some(encode_u64(generation.0).to_vec());
        let mut operations = vec![(MetaKey::Generation.key(), bump.clone())];
        if batch.touches_listings() {
            operations.push((MetaKey::ListingsGeneration.key(), bump));
        }
        // A counter of its own (derived writes change pairs without a generation bump), moved
        // last: a write applied in several sled batches shows its new count only once all of
        // its pairs are in, so groups joined at that count hold them.
        // Which models it touched goes in the same write, applied before the counter.
        let duplicates_bump = if batch.touches_duplicates() {
            let next = self.meta(MetaKey::DuplicatesGeneration)?.unwrap_or(0) + 1;
            let touched = batch.duplicates_touched().iter().copied();
            let entry = touch_log::entry(&self.db, next, touched, batch.regroups_all())?;
            let counter = (
                MetaKey::DuplicatesGeneration.key(),
                Some(encode_u64(next).to_vec()),
            );
            vec![entry, counter]
        } else {
            Vec::new()
        };
        let touched = batch.duplicates_touched().iter().copied().collect();
        // The models whose listings the write changed, for the series folder: in the same
        // write, so none is lost to a crash after it.
        let (series_models, every_model) = batch.take_series_log();
        let series_entry = match series_models.is_empty() && !every_model {
            true => None,
            false => Some(price_series::log_entry(
                &self.db,
                generation.0,
                series_models,
                every_model,
            )?),
        };
        let audit = batch.take_audit();
        let (written, mut changes) = batch.into_operations()?;
        changes.duplicates = touched;
        changes.series_logged = series_entry.is_some();
        operations.extend(written);
        operations.extend(series_entry);
        operations.extend(duplicates_bump);
        let keys = operations.len();
        let started = std::time::Instant::now();
        if applied == Applied::AtomicWhenItFits && operations.len() <= ATOMIC_OPERATIONS {
            self.apply_atomic(operations, &audit)?;
        } else {
            let _under_way = KeyByKeyWrite::begin(&self.key_by_key_writes);
            // Not atomic anyway: see above.
            // In key order within each phase (stable: two writes of one key keep their order):
            // sled applies neighbouring keys faster (docs/decisions.md, D-14).
            let mut ordered: Vec<(u8, write::Operation)> = operations
                .into_iter()
                .map(|operation| (keys::apply_phase(&operation.0), operation))
                .collect();
            ordered.par_sort_by(|(a, (a_key, _)), (b, (b_key, _))| (a, a_key).cmp(&(b, b_key)));
            for phase in last_write_per_key(ordered).chunk_by(|a, b| a.0 == b.0) {
                self.apply_phase_in_parallel(phase)?;
            }
            // Last, and atomic on their own: an entry, its lists' keys and their counts are
            // never written in part, and an entry names a write that is in.
            if !audit.is_empty() {
                self.apply_atomic(Vec::new(), &audit)?;
            }
        }
        let applied = started.elapsed();
        self.db.flush()?;
        // sled's apply rate is what bounds a large ingest: logged per commit.
        tracing::debug!(keys, ?applied, flushed = ?(started.elapsed() - applied), "store commit");
        // After the write is visible: a reader that sees the new count reads the new rates.
        if changes.rates {
            self.rates_epoch.fetch_add(1, Ordering::Release);
        }
        if changes.rate_days {
            self.rate_days_epoch.fetch_add(1, Ordering::Release);
        }
        Ok((generation, changes))
    }

    /// Inserts and removes one phase's keys, each key once, on rayon's threads in contiguous
    /// runs: sled takes concurrent writes to distinct keys, and its apply, not our code, is
    /// what bounds a large import (docs/decisions.md, D-14).
    fn apply_phase_in_parallel(&self, phase: &[(u8, write::Operation)]) -> StoreResult<()> {
        const RUN: usize = 16_384;
        phase.par_chunks(RUN).try_for_each(|run| {
            for (_, (key, value)) in run {
                match value {
                    Some(value) => self.db.insert(key.as_slice(), value.as_slice())?,
                    None => self.db.remove(key.as_slice())?,
                };
            }
            Ok(())
        })
    }

    /// Flushes every pending write to disk.
    pub fn flush(&self) -> StoreResult<()> {
        self.db.flush()?;
        Ok(())
    }

    /// Writes when the store was opened (`at`, milliseconds) and flushes it, making sled pay
    /// its first stabilisation now. After it opens a store, sled's first flush that
    /// stabilises a new segment walks every segment once per segment
    /// (`SegmentAccountant::stabilize` in sled 0.34), holding the lock every flush takes: 1.9 s
    /// of a core at 26,500 segments, 9 s at the 68,000 of a 10M-listing store of 256 KiB
    /// segments. Left to the first writes after a start (an admin's login, the series
    /// folder's first folds), it held them up as long, and their index stood behind the store
    /// meanwhile (docs/decisions.md, D-208, D-219). sled walks once its log has moved into a
    /// new segment and a later flush has seen that (the 7th at the scale run's store), so the
    /// record is first written over with fillers, each flushed, until the log has moved past two
    /// segments, then written and flushed [`FIRST_FLUSHES`] times (about 30 ms when there is
    /// no walk).
    /// The record is bookkeeping: no generation moves.
    pub fn flush_once_opened(&self, at: Timestamp) -> StoreResult<()> {
        let _under_way = FirstFlushUnderWay::mark(&self.first_flush_under_way);
        // Flushed one by one, as sled logs only the last of the writes of a key between two
        // flushes, and well under a quarter of a segment, which sled would keep apart as a blob.
        const FILLERS_A_SEGMENT: usize = 8;
        let key = MetaKey::OpenedAt.key();
        let filler = vec![0u8; self.segment_bytes / FILLERS_A_SEGMENT];
        for _ in 0..2 * FILLERS_A_SEGMENT + 1 {
            self.db.insert(key.as_slice(), filler.as_slice())?;
            self.flush()?;
        }
        // Each value differs from the last: sled's flush of an unchanged record writes nothing.
        for round in 0..FIRST_FLUSHES {
            self.db.insert(key.as_slice(), encode_u64(round).to_vec())?;
            self.flush()?;
        }
        self.db
            .insert(key.as_slice(), encode_u64(at.0 as u64).to_vec())?;
        self.flush()
    }

    /// True while the first flush after a start runs ([`Store::flush_once_opened`]): a write
    /// made then waits for sled's walk, seconds on a large store.
    pub fn first_flush_under_way(&self) -> bool {
        self.first_flush_under_way.load(Ordering::Acquire)
    }

    /// For tests: the store as while its first flush runs, until the mark is dropped.
    #[cfg(test)]
    pub(crate) fn as_in_its_first_flush(&self) -> FirstFlushUnderWay<'_> {
        FirstFlushUnderWay::mark(&self.first_flush_under_way)
    }

    /// When a server last opened the store ([`Store::flush_once_opened`]).
    pub fn opened_at(&self) -> StoreResult<Option<Timestamp>> {
        Ok(self.meta(MetaKey::OpenedAt)?.map(|ms| Timestamp(ms as i64)))
    }

    /// Applies a bookkeeping write done outside the write turn (a session, a job's record)
    /// with the audit entries that record it: one atomic sled batch, flushed before it returns.
    fn apply_flushed(
        &self,
        operations: Vec<write::Operation>,
        audit: &[AuditEntry],
    ) -> StoreResult<()> {
        self.apply_atomic(operations, audit)?;
        self.flush()
    }

    /// Applies `operations` and the appends of `audit` to the audit trail as one atomic sled
    /// batch, holding the right to append from reading the trail's counts to the write.
    fn apply_atomic(
        &self,
        operations: Vec<write::Operation>,
        audit: &[AuditEntry],
    ) -> StoreResult<()> {
        let right = (!audit.is_empty()).then(|| self.audit_append_right());
        let appended = match &right {
            Some(right) => self.audit().append_operations(audit, right)?,
            None => Vec::new(),
        };
        let mut batch = sled::Batch::default();
        for (key, value) in operations.into_iter().chain(appended) {
            match value {
                Some(value) => batch.insert(key, value),
                None => batch.remove(key),
            }
        }
        self.db.apply_batch(batch)?;
        Ok(())
    }

    fn meta(&self, key: MetaKey) -> StoreResult<Option<u64>> {
        read_meta(&self.db, key)
    }

    fn get<T: StoredRecord>(&self, key: Vec<u8>) -> StoreResult<Option<T>> {
        self.db.get(&key)?.map(|v| decode(&key, &v)).transpose()
    }

    /// The record of `space` that the secondary key `index_key` points at.
    fn get_via<T: StoredRecord>(
        &self,
        index_key: Vec<u8>,
        space: Keyspace,
    ) -> StoreResult<Option<T>> {
        match self.get_id(index_key)? {
            Some(id) => self.get(space.id_key(id)),
            None => Ok(None),
        }
    }

    fn get_id(&self, key: Vec<u8>) -> StoreResult<Option<u64>> {
        self.db.get(&key)?.map(|v| decode_u64(&key, &v)).transpose()
    }

    /// The text after `prefix` (up to its 0 terminator) and the id stored as the value, of
    /// every key under `prefix`, in key order: an index's texts without reading a record.
    fn texts_and_ids_under(&self, prefix: Vec<u8>) -> StoreResult<Vec<(String, u64)>> {
        self.db
            .scan_prefix(&prefix)
            .map(|entry| {
                let (key, value) = entry?;
                let text = key[prefix.len()..].strip_suffix(&[0]).unwrap_or_default();
                Ok((
                    String::from_utf8_lossy(text).into_owned(),
                    decode_u64(&key, &value)?,
                ))
            })
            .collect()
    }

    /// Ids stored as the trailing 8 bytes of every key under `prefix`, in key order.
    fn ids_under(&self, prefix: Vec<u8>) -> StoreResult<Vec<u64>> {
        self.db
            .scan_prefix(&prefix)
            .keys()
            .map(|key| secondary_id(&key?))
            .collect()
    }

    /// At most `limit` trailing ids of `space`'s keys from `from` on, in order, and the next
    /// id after them if there is one.
    fn ids_from(
        &self,
        space: Keyspace,
        from: u64,
        limit: usize,
    ) -> StoreResult<(Vec<u64>, Option<u64>)> {
        let prefix = space.prefix();
        let mut keys = (self.db.range(space.id_key(from)..).keys())
            .take_while(|key| key.as_ref().map_or(true, |key| key.starts_with(&prefix)));
        let mut ids = Vec::new();
        for key in keys.by_ref() {
            let id = secondary_id(&key?)?;
            if ids.len() == limit {
                return Ok((ids, Some(id)));
            }
            ids.push(id);
        }
        Ok((ids, None))
    }

    fn all<T: StoredRecord>(&self, space: Keyspace) -> impl Iterator<Item = StoreResult<T>> + '_ {
        self.db.scan_prefix(space.prefix()).map(|entry| {
            let (key, value) = entry?;
            decode(&key, &value)
        })
    }

    /// Every record of `space`, the greatest id first.
    fn all_newest_first<T: StoredRecord>(
        &self,
        space: Keyspace,
    ) -> impl Iterator<Item = StoreResult<T>> + '_ {
        self.db.scan_prefix(space.prefix()).rev().map(|entry| {
            let (key, value) = entry?;
            decode(&key, &value)
        })
    }

    fn many<T: StoredRecord>(
        &self,
        space: Keyspace,
        ids: impl IntoIterator<Item = u64>,
    ) -> StoreResult<Vec<T>> {
        let mut found = Vec::new();
        for id in ids {
            if let Some(record) = self.get(space.id_key(id))? {
                found.push(record);
            }
        }
        Ok(found)
    }

    fn all_parallel<T: StoredRecord + Send>(
        &self,
        space: Keyspace,
    ) -> impl rayon::iter::ParallelIterator<Item = StoreResult<T>> + '_ {
        use rayon::iter::{ParallelBridge, ParallelIterator};
        self.db
            .scan_prefix(space.prefix())
            .par_bridge()
            .map(|entry| {
                let (key, value) = entry?;
                decode(&key, &value)
            })
    }

    /// Number of records of each kind, by counting their keys (for tests).
    pub fn count(&self, space: Keyspace) -> usize {
        self.db.scan_prefix(space.prefix()).count()
    }

    /// An admin count, as the writes that moved it left it.
    pub fn count_of(&self, counted: Counted) -> StoreResult<u64> {
        Ok(self.meta(MetaKey::Count(counted))?.unwrap_or(0))
    }

    /// How many keys `space` holds (tests count what a write costs sled).
    #[cfg(test)]
    pub(crate) fn keys_in(&self, space: Keyspace) -> usize {
        self.db.scan_prefix(space.prefix()).count()
    }

    /// How many keys the store holds in all.
    #[cfg(test)]
    pub(crate) fn keys_total(&self) -> usize {
        self.db.len()
    }

    /// Writes `key` as `value` (removes it with `None`) past every check: how a test damages
    /// derived keys that a rebuild must repair.
    #[cfg(test)]
    pub(crate) fn damage(&self, key: &[u8], value: Option<&[u8]>) {
        match value {
            Some(value) => self.db.insert(key, value).map(drop),
            None => self.db.remove(key).map(drop),
        }
        .expect("damage");
    }

    /// Every key of `space` with its value, in key order.
    #[cfg(test)]
    pub(crate) fn keys_of(&self, space: Keyspace) -> Vec<(Vec<u8>, Vec<u8>)> {
        (self.db.scan_prefix(space.prefix()))
            .map(|entry| entry.map(|(k, v)| (k.to_vec(), v.to_vec())).expect("key"))
            .collect()
    }
}

/// `map`'s record for `key`, read by `load` the first time it is asked for (a missing record is
/// remembered too): a page or a batch reads each brand, series or provider it names once.
pub fn cached<K: std::hash::Hash + Eq, V>(
    map: &mut std::collections::HashMap<K, Option<V>>,
    key: K,
    load: impl FnOnce() -> StoreResult<Option<V>>,
) -> StoreResult<Option<&V>> {
    let slot = match map.entry(key) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => e.insert(load()?),
    };
    Ok(slot.as_ref())
}

/// A write being applied key by key, counted in [`Store`]'s `key_by_key_writes` from its
/// beginning to its end, also when it fails.
struct KeyByKeyWrite<'a>(&'a AtomicU64);

impl<'a> KeyByKeyWrite<'a> {
    fn begin(count: &'a AtomicU64) -> KeyByKeyWrite<'a> {
        count.fetch_add(1, Ordering::SeqCst);
        KeyByKeyWrite(count)
    }
}

impl Drop for KeyByKeyWrite<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// `ordered` (sorted by phase and key, two writes of one key in write order) with only the
/// last write of each key, so that a phase's keys can be applied in any order.
fn last_write_per_key(mut ordered: Vec<(u8, write::Operation)>) -> Vec<(u8, write::Operation)> {
    // Reversed, the first of equal keys is the last write: `dedup_by` keeps it.
    ordered.reverse();
    ordered.dedup_by(|older, newest| older.1 .0 == newest.1 .0);
    ordered.reverse();
    ordered
}

/// The 8-byte counter under the meta key `key`, if set.
fn read_meta(db: &sled::Db, key: MetaKey) -> StoreResult<Option<u64>> {
    let full_key = key.key();
    db.get(&full_key)?
        .map(|v| decode_u64(&full_key, &v))
        .transpose()
}

pub use keys::Keyspace as RecordKind;

#[cfg(test)]
pub(crate) mod tests;
