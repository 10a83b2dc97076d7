//! Schema migrations: the ordered steps that rewrite a store of an older schema in place up to
//! [`SCHEMA_VERSION`], and who may run them: `watch-catalogue migrate` every step, `serve` the
//! steps safe at start-up, any other opener none (docs/decisions.md, D-05, D-06).

use super::codec::{decode_u64, encode_u64};
use super::keys::{Counted, Keyspace, MetaKey};
use super::{read_meta, StoreError, StoreResult, ATOMIC_OPERATIONS, SCHEMA_VERSION};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Bound;

/// Which pending steps opening a store may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationPolicy {
    /// None: an older store is refused with [`StoreError::MigrationNeeded`] (batch commands).
    Refuse,
    /// Every pending step when all of them are [`Step::safe_at_startup`]; otherwise none, and
    /// the store is refused as under `Refuse` (`serve`).
    StartupSafe,
    /// Every pending step (`watch-catalogue migrate`).
    All,
}

/// One schema change, `from` -> `to`.
pub struct Step {
    pub from: u64,
    pub to: u64,
    /// What the step changes, for the report.
    pub summary: &'static str,
    /// True when `serve` may run the step unannounced as it starts: it loses nothing, cannot
    /// need an operator's decision, and costs about one pass over the store. A step that drops
    /// or reinterprets data runs only under `watch-catalogue migrate`.
    pub safe_at_startup: bool,
    /// Rewrites the store from `from` to `to`, all but the schema version, which the runner
    /// writes after it (with the cursor's removal, in one batch). Returns the values it
    /// rewrote. It must be idempotent: begun again after a crash or an error part-way, it
    /// finishes the job and does no part of it twice; each step's doc says how.
    run: fn(&sled::Db) -> StoreResult<u64>,
}

/// Every step, oldest first, the last ending at [`SCHEMA_VERSION`]. Schema 1 predates
/// migrations: such a store is refused with [`StoreError::NoMigration`].
pub static STEPS: &[Step] = &[
    Step {
        from: 2,
        to: 3,
        summary: "every record value starts with its layout version byte",
        safe_at_startup: true,
        run: add_layout_bytes,
    },
    Step {
        from: 3,
        to: 4,
        summary: "the admin counts are kept with the records they count",
        safe_at_startup: true,
        run: count_records,
    },
    Step {
        from: 4,
        to: 5,
        summary: "model pictures and reference bases are keyed, and pictures stored before the image pipeline are queued for it",
        safe_at_startup: true,
        run: queue_pictures,
    },
    Step {
        from: 5,
        to: 6,
        summary: "the sources of new listings are kept in groups (nothing rewritten: the older keys are read as before)",
        safe_at_startup: true,
        run: sources_in_groups,
    },
    Step {
        from: 6,
        to: 7,
        summary: "the calibre -> model keys, which nothing read, are dropped",
        safe_at_startup: true,
        run: drop_caliber_keys,
    },
    Step {
        from: 7,
        to: 8,
        summary: "the groups of unmatched listings are kept with the listings",
        safe_at_startup: true,
        run: keep_unmatched_groups,
    },
    Step {
        from: 8,
        to: 9,
        summary: "the audit trail is keyed by user and by action, each list with its count",
        safe_at_startup: true,
        run: key_audit_trail,
    },
    Step {
        from: 9,
        to: 10,
        summary: "the groups of unmatched listings keep their members and prices as keys of their own",
        safe_at_startup: true,
        run: keep_unmatched_groups,
    },
    Step {
        from: 10,
        to: 11,
        summary: "the member keys of the groups of unmatched listings hold each listing's title",
        safe_at_startup: true,
        run: keep_unmatched_groups,
    },
    Step {
        from: 11,
        to: 12,
        summary: "the rates in force are kept as the first day of the rates history",
        safe_at_startup: true,
        run: keep_rates_in_force_as_a_day,
    },
    Step {
        from: 12,
        to: 13,
        summary: "every model's price series is logged to be folded (by the server's series folder, in the background)",
        safe_at_startup: true,
        run: log_every_model_for_series,
    },
    Step {
        from: 13,
        to: 14,
        summary: "a merge may leave its duplicates' listings for the server's listing mover (nothing rewritten)",
        safe_at_startup: true,
        run: nothing_to_rewrite,
    },
    Step {
        from: 14,
        to: 15,
        summary: "the groups of unmatched listings are walked by provider and by reason through their provider-and-reason orders (their own order keys dropped)",
        safe_at_startup: true,
        run: drop_merged_group_orders,
    },
    Step {
        from: 15,
        to: 16,
        summary: "the groups of unmatched listings are found by the start of their reference or brand text in the listings index (their text keys dropped)",
        safe_at_startup: true,
        run: drop_group_text_keys,
    },
];

/// Step 15 -> 16: removes the text keys of the groups of unmatched listings, [`PICTURE_BATCH`]
/// a batch: a text search finds groups by the start of their reference or brand text in the
/// listings index now (D-240), which rebuilds itself with the terms that needs as its schema
/// changed. Idempotent: a re-run removes what is left. Returns the keys removed.
fn drop_group_text_keys(db: &sled::Db) -> StoreResult<u64> {
    super::clear_keyspace(db, Keyspace::UnmatchedText, PICTURE_BATCH)
}

/// Step 14 -> 15: removes the order keys of the groups of unmatched listings by provider alone
/// and by reason alone, [`PICTURE_BATCH`] a batch: those orders are now read as merges of the
/// provider-and-reason orders (D-233), and their counts stay. Idempotent: a re-run removes what
/// is left. Returns the keys removed.
fn drop_merged_group_orders(db: &sled::Db) -> StoreResult<u64> {
    let mut removed = 0;
    for order in super::unmatched::MERGED_ORDER_TAGS {
        removed +=
            super::clear_prefix(db, &[Keyspace::UnmatchedOrder as u8, order], PICTURE_BATCH)?;
    }
    Ok(removed)
}

/// Step 13 -> 14: the listing mover's keys are new, and a store of 13 has none: the step only
/// marks the store, so that a binary of 13 refuses one a merge left listings in. Returns 0.
fn nothing_to_rewrite(_: &sled::Db) -> StoreResult<u64> {
    Ok(0)
}

/// Step 12 -> 13: logs every model for the series folder (D-212), as a write of rates does:
/// the server folds them in the background from its start, or `reindex --index series` does
/// offline. Idempotent: the entry is of the store's generation, written again the same.
/// Returns the entries written (1).
fn log_every_model_for_series(db: &sled::Db) -> StoreResult<u64> {
    let generation = read_meta(db, MetaKey::Generation)?.unwrap_or(0);
    let (key, value) = super::price_series::log_entry(db, generation, Default::default(), true)?;
    if let Some(value) = value {
        db.insert(key, value)?;
    }
    Ok(1)
}

/// Step 11 -> 12: stores the rates in force, if any, under their day, as loading them does
/// from schema 12 on. Idempotent: the record is copied as it is, whatever the day key holds.
/// Returns the records written (0 or 1).
fn keep_rates_in_force_as_a_day(db: &sled::Db) -> StoreResult<u64> {
    let key = MetaKey::Rates.key();
    let Some(value) = db.get(&key)? else {
        return Ok(0);
    };
    let in_force: crate::domain::rates::EcbRates = super::codec::decode(&key, &value)?;
    db.insert(super::keys::rates_day(&in_force.date), value)?;
    Ok(1)
}

/// Step 7 -> 8: groups every unmatched listing by the identity its seller claims and writes
/// the groups and their keys (`super::unmatched`), one pass over the listings. Idempotent: a
/// re-run writes what an earlier one left undone. Returns the groups written.
fn keep_unmatched_groups(db: &sled::Db) -> StoreResult<u64> {
    Ok(super::unmatched::rebuild(db)?.groups)
}

/// Step 8 -> 9: writes the keys of every audit entry in the lists of its user, its action and
/// both, [`PICTURE_BATCH`] a batch, then the count of every list, as appends keep them from
/// then on. It adds keys and loses nothing, in one pass over the trail. Idempotent: the keys
/// are written as they are and the counts counted afresh from the entries, so a re-run after
/// an interruption writes the same. Returns the keys and counts written.
fn key_audit_trail(db: &sled::Db) -> StoreResult<u64> {
    let mut out = ChunkedWrites::new(db);
    let mut counts: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for entry in db.scan_prefix(Keyspace::Audit.prefix()) {
        let (key, value) = entry?;
        let entry: crate::domain::AuditEntry = super::codec::decode(&key, &value)?;
        for key in super::audit::list_keys(&entry) {
            out.put(key, Vec::new())?;
        }
        for key in super::audit::count_keys(&entry) {
            *counts.entry(key).or_default() += 1;
        }
    }
    for (key, count) in counts {
        out.put(key, encode_u64(count).to_vec())?;
    }
    out.finish()
}

/// Step 6 -> 7: removes every `ModelByCaliber` key, [`PICTURE_BATCH`] a batch. They were
/// written with each model and never read; dropping them loses nothing. Idempotent: a re-run
/// removes what is left. Returns the keys removed.
fn drop_caliber_keys(db: &sled::Db) -> StoreResult<u64> {
    super::clear_keyspace(db, Keyspace::ModelByCaliber, PICTURE_BATCH)
}

/// Step 5 -> 6: nothing to rewrite. The version moves so that a binary older than the groups,
/// which would not see them and would take every listing they name for a new one, refuses the
/// store instead of duplicating listings.
fn sources_in_groups(_: &sled::Db) -> StoreResult<u64> {
    Ok(0)
}

/// Sled operations per batch of steps 4 -> 5, 6 -> 7 and 8 -> 9.
const PICTURE_BATCH: usize = 10_000;

/// Step 4 -> 5: writes every model's secondary keys afresh (new among them: picture id ->
/// model, and the reference bases of the duplicate finder), and a pending
/// record (with its due key) for every model picture without a crop from the dataset and every
/// listing picture that has no record yet. Idempotent: the keys are written as they are, and
/// records only where there is none, so a re-run after an interruption finishes the job.
/// Returns the keys and records written.
fn queue_pictures(db: &sled::Db) -> StoreResult<u64> {
    let mut out = ChunkedWrites::new(db);
    for entry in db.scan_prefix(Keyspace::Model.prefix()) {
        let (key, value) = entry?;
        let model: crate::domain::Model = super::codec::decode(&key, &value)?;
        // Every secondary key of the model as today's writes keep them: among them the new
        // picture id -> model and reference base keys.
        for (key, value) in super::write::model_keys(&model) {
            out.put(key, value)?;
        }
        for picture in &model.pictures {
            if picture.cropped_url.is_none() {
                out.queue(picture.id, &picture.url)?;
            }
        }
    }
    for entry in db.scan_prefix(Keyspace::Listing.prefix()) {
        let (key, value) = entry?;
        let listing: crate::domain::Listing = super::codec::decode(&key, &value)?;
        for picture in &listing.pictures {
            out.queue(picture.id, &picture.source_url)?;
        }
    }
    out.finish()
}

/// Inserts applied a sled batch of [`PICTURE_BATCH`] at a time.
struct ChunkedWrites<'d> {
    db: &'d sled::Db,
    batch: sled::Batch,
    in_batch: usize,
    written: u64,
    now: crate::domain::Timestamp,
}

impl<'d> ChunkedWrites<'d> {
    fn new(db: &'d sled::Db) -> Self {
        ChunkedWrites {
            db,
            batch: sled::Batch::default(),
            in_batch: 0,
            written: 0,
            now: crate::domain::Timestamp::now(),
        }
    }

    fn put(&mut self, key: Vec<u8>, value: Vec<u8>) -> StoreResult<()> {
        self.batch.insert(key, value);
        self.written += 1;
        self.in_batch += 1;
        if self.in_batch >= PICTURE_BATCH {
            self.db.apply_batch(std::mem::take(&mut self.batch))?;
            self.in_batch = 0;
        }
        Ok(())
    }

    /// A pending record for picture `id` of `url`, unless it has a record.
    fn queue(&mut self, id: crate::domain::PictureId, url: &str) -> StoreResult<()> {
        if self.db.contains_key(Keyspace::PictureState.id_key(id.0))? {
            return Ok(());
        }
        let pending = crate::domain::PictureRecord::pending(id, url.to_owned(), self.now);
        self.put(
            Keyspace::PictureState.id_key(id.0),
            super::codec::encode(&pending),
        )?;
        self.put(Keyspace::PictureDue.id_key(id.0), Vec::new())
    }

    fn finish(mut self) -> StoreResult<u64> {
        self.db.apply_batch(std::mem::take(&mut self.batch))?;
        Ok(self.written)
    }
}

/// Step 3 -> 4: counts brands, series, models, calibres, providers, listed and unmatched
/// listings once, and stores each count where the writes keep it from then on. Idempotent: it
/// counts afresh whatever the counters hold. Returns the counters written.
fn count_records(db: &sled::Db) -> StoreResult<u64> {
    let keys_in = |space: Keyspace| db.scan_prefix(space.prefix()).count() as u64;
    let listings = super::recount::Tally::of_listings(db)?;
    let counts = [
        (Counted::Brands, keys_in(Keyspace::Brand)),
        (Counted::Series, keys_in(Keyspace::Series)),
        (Counted::Models, keys_in(Keyspace::Model)),
        (Counted::Calibers, keys_in(Keyspace::Caliber)),
        (Counted::Providers, keys_in(Keyspace::Provider)),
        (Counted::Listings, listings.listed),
        (Counted::UnmatchedListings, listings.unmatched),
    ];
    let mut batch = sled::Batch::default();
    for (counted, count) in counts {
        batch.insert(MetaKey::Count(counted).key(), &encode_u64(count));
    }
    db.apply_batch(batch)?;
    Ok(counts.len() as u64)
}

/// What opening a store did to its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationReport {
    /// The schema version the store had; `None` when this open created the store.
    pub found: Option<u64>,
    /// The schema version it has now.
    pub schema: u64,
    /// The steps run, in order; empty when the store was current.
    pub steps: Vec<StepReport>,
}

/// One step run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepReport {
    pub from: u64,
    pub to: u64,
    pub summary: &'static str,
    /// Values rewritten by this run (an interrupted earlier run rewrote the others).
    pub rewritten: u64,
    /// True when the step took up after an interrupted run.
    pub resumed: bool,
}

impl fmt::Display for MigrationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.found {
            None => write!(f, "new store created at schema version {}", self.schema)?,
            Some(found) if self.steps.is_empty() => write!(
                f,
                "store schema version {found} is current: nothing to migrate"
            )?,
            Some(found) => write!(
                f,
                "store migrated from schema version {found} to {}",
                self.schema
            )?,
        }
        for step in &self.steps {
            write!(
                f,
                "\n  {} -> {}: {}: {} values rewritten",
                step.from, step.to, step.summary, step.rewritten
            )?;
            if step.resumed {
                write!(f, " (resumed after an interrupted run)")?;
            }
        }
        Ok(())
    }
}

/// Checks the schema of the store in `db` and runs the pending steps `policy` allows, each
/// followed by its schema version write; a new store gets [`SCHEMA_VERSION`].
pub(super) fn bring_up_to_date(
    db: &sled::Db,
    policy: MigrationPolicy,
) -> StoreResult<MigrationReport> {
    // A cursor names the step under way: one this binary does not know was begun by a newer
    // binary, whose half-rewritten records this one must not read.
    if let Some((to, _)) = read_cursor(db)? {
        if to > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                found: to,
                known: SCHEMA_VERSION,
            });
        }
    }
    let Some(found) = read_meta(db, MetaKey::SchemaVersion)? else {
        db.insert(MetaKey::SchemaVersion.key(), &encode_u64(SCHEMA_VERSION))?;
        db.flush()?;
        return Ok(MigrationReport {
            found: None,
            schema: SCHEMA_VERSION,
            steps: Vec::new(),
        });
    };
    let mut report = MigrationReport {
        found: Some(found),
        schema: found,
        steps: Vec::new(),
    };
    for step in plan(found, STEPS, SCHEMA_VERSION, policy)? {
        let resumed = read_cursor(db)?.is_some();
        let rewritten = (step.run)(db)?;
        let mut done = sled::Batch::default();
        done.insert(MetaKey::SchemaVersion.key(), &encode_u64(step.to));
        done.remove(MetaKey::MigrationCursor.key());
        db.apply_batch(done)?;
        db.flush()?;
        report.schema = step.to;
        report.steps.push(StepReport {
            from: step.from,
            to: step.to,
            summary: step.summary,
            rewritten,
            resumed,
        });
    }
    Ok(report)
}

/// The steps from schema `found` to `current`, in order, if `policy` lets them run.
fn plan(
    found: u64,
    steps: &[Step],
    current: u64,
    policy: MigrationPolicy,
) -> StoreResult<Vec<&Step>> {
    if found > current {
        return Err(StoreError::NewerSchema {
            found,
            known: current,
        });
    }
    let mut plan = Vec::new();
    let mut at = found;
    while at < current {
        let step = steps
            .iter()
            .find(|step| step.from == at && step.to > at)
            .ok_or(StoreError::NoMigration {
                found,
                expected: current,
            })?;
        plan.push(step);
        at = step.to;
    }
    let allowed = match policy {
        MigrationPolicy::Refuse => plan.is_empty(),
        MigrationPolicy::StartupSafe => plan.iter().all(|step| step.safe_at_startup),
        MigrationPolicy::All => true,
    };
    if !allowed {
        return Err(StoreError::MigrationNeeded {
            found,
            expected: current,
        });
    }
    Ok(plan)
}

/// The step under way (its target schema) and the last key it committed, if any.
fn read_cursor(db: &sled::Db) -> StoreResult<Option<(u64, Vec<u8>)>> {
    let key = MetaKey::MigrationCursor.key();
    let Some(value) = db.get(&key)? else {
        return Ok(None);
    };
    let (to, last) = value
        .split_at_checked(8)
        .ok_or_else(|| StoreError::Corrupt {
            key: key.clone(),
            reason: "migration cursor shorter than its 8-byte schema version".into(),
        })?;
    Ok(Some((decode_u64(&key, to)?, last.to_vec())))
}

/// Rewrites through `rewrite` the value of every key under `prefixes` (in ascending order), in
/// sled batches of `chunk` values plus the migration cursor: each batch commits its values
/// with the last key it rewrote, atomically, and is flushed. Begun again for the same step
/// (`to`) after a crash or an error, it starts after that key, so every value is rewritten
/// exactly once however often the step is begun. Returns the values this run rewrote.
fn rewrite_values(
    db: &sled::Db,
    to: u64,
    prefixes: &[Vec<u8>],
    chunk: usize,
    mut rewrite: impl FnMut(&[u8], &[u8]) -> StoreResult<Vec<u8>>,
) -> StoreResult<u64> {
    let resume_after = match read_cursor(db)? {
        Some((cursor_to, last)) if cursor_to == to => Some(last),
        Some((cursor_to, _)) => {
            return Err(StoreError::Corrupt {
                key: MetaKey::MigrationCursor.key(),
                reason: format!("cursor of a step to schema {cursor_to} while migrating to {to}"),
            })
        }
        None => None,
    };
    let commit = |mut batch: sled::Batch, last: &[u8]| -> StoreResult<()> {
        let mut cursor = encode_u64(to).to_vec();
        cursor.extend_from_slice(last);
        batch.insert(MetaKey::MigrationCursor.key(), cursor);
        db.apply_batch(batch)?;
        db.flush()?;
        Ok(())
    };
    let mut rewritten = 0;
    let mut batch = sled::Batch::default();
    let mut in_batch = 0;
    let mut last_key = None;
    for prefix in prefixes {
        let start = match &resume_after {
            Some(cursor) if cursor.starts_with(prefix) => Bound::Excluded(cursor.clone()),
            // Every key under the prefix sorts before the cursor: done by the earlier run.
            Some(cursor) if cursor[..] > prefix[..] => continue,
            _ => Bound::Included(prefix.clone()),
        };
        for entry in db.range((start, Bound::Unbounded)) {
            let (key, value) = entry?;
            if !key.starts_with(prefix) {
                break;
            }
            batch.insert(key.clone(), rewrite(&key, &value)?);
            in_batch += 1;
            rewritten += 1;
            if in_batch == chunk {
                commit(std::mem::take(&mut batch), &key)?;
                in_batch = 0;
            }
            last_key = Some(key);
        }
    }
    if let Some(last) = last_key.filter(|_| in_batch > 0) {
        commit(batch, &last)?;
    }
    Ok(rewritten)
}

/// The layout byte every record kind had in schema 3. Frozen: when a kind's layout moves on,
/// this step still writes what schema 3 meant, and the later step takes it from there.
const SCHEMA_3_LAYOUT: u8 = 1;

/// Where schema 2 kept records (bincode values, with no layout byte): the rates, and the
/// primary keys of the record keyspaces. Ids, counters and empty values are left as they are.
fn schema_2_record_prefixes() -> Vec<Vec<u8>> {
    let mut prefixes = vec![MetaKey::Rates.key()];
    prefixes.extend(
        [
            Keyspace::Brand,
            Keyspace::Series,
            Keyspace::Complication,
            Keyspace::Caliber,
            Keyspace::Model,
            Keyspace::Provider,
            Keyspace::Listing,
        ]
        .map(Keyspace::prefix),
    );
    prefixes
}

fn with_layout_byte(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 1);
    out.push(SCHEMA_3_LAYOUT);
    out.extend_from_slice(value);
    out
}

/// Schema 2 -> 3: prefixes every record value with [`SCHEMA_3_LAYOUT`]. Prefixing twice would
/// corrupt a record, so the step is idempotent by resuming, not by re-doing: see
/// [`rewrite_values`]. Each batch is [`ATOMIC_OPERATIONS`] keys with the cursor.
fn add_layout_bytes(db: &sled::Db) -> StoreResult<u64> {
    rewrite_values(
        db,
        3,
        &schema_2_record_prefixes(),
        ATOMIC_OPERATIONS - 1,
        |_, value| Ok(with_layout_byte(value)),
    )
}

#[cfg(test)]
mod tests;
