//! One data dir opened: the store, both indexes and the one writer that changes them, made
//! ready (the bundled fixtures imported into an empty store, an index behind its store
//! rebuilt). The CLI and the server both work through it.

use crate::data_dir::DataDir;
use crate::data_dir::{self, ImportMark, FIXTURES};
use crate::domain::rates::ConversionTable;
use crate::domain::{causes, Brand, BrandId, Model, ModelId, PictureRecord, Series, SeriesId};
use crate::jobs::context::JobContext;
use crate::jobs::dataset::import_dataset;
use crate::jobs::duplicates;
use crate::jobs::import::fixtures::EmbeddedFixtures;
use crate::jobs::nearest_models::KeptCandidates;
use crate::jobs::pictures::UrgentPictures;
use crate::jobs::progress::JobControl;
use crate::jobs::queue::Jobs;
use crate::jobs::reindex;
use crate::jobs::w3c_candidates::KeptBrandNames;
use crate::jobs::writer::Writer;
use crate::media::MediaStore;
use crate::store::{MigrationPolicy, MigrationReport, Store, StoreError, StoreResult};
use anyhow::Context;
use catalogue_index::{CatalogueIndex, FileAccess, GenerationCache, ListingIndex};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::{Mutex, RwLock};

/// Store, indexes and writer of one data dir.
pub struct App {
    store: Store,
    index: Arc<CatalogueIndex>,
    listings: Arc<ListingIndex>,
    /// The writer, the media store, the job queue: what jobs reach.
    work: Arc<JobContext>,
    /// The conversion table and the store's rates epoch it was read at.
    rates: RwLock<Option<(u64, Option<Arc<ConversionTable>>)>>,
    /// The tables of past days asked for, by day, at the rates epochs (days, in force) they
    /// were read at.
    day_tables: Mutex<((u64, u64), HashMap<String, DayTable>)>,
    /// Where it was opened.
    dir: DataDir,
    /// What pages of models read from the store, as its generation has it: a page shows each
    /// model from four sled reads, a large share of a text search's time over HTTP
    /// (docs/decisions.md, D-81).
    kept: KeptReads,
    /// Requests whose store and index work runs now.
    requests: RequestsInFlight,
}

/// Requests whose store and index work runs now (`api::layers::capacity::Work::run`): what the
/// start's read-ahead of the indexes gives the disk way to (D-239).
#[derive(Debug, Default)]
pub struct RequestsInFlight(AtomicUsize);

impl RequestsInFlight {
    /// Counts a request until the returned guard is dropped (also when its work panics).
    pub fn enter(&self) -> InFlight<'_> {
        self.0.fetch_add(1, Ordering::SeqCst);
        InFlight(self)
    }

    /// Whether any request's work runs now.
    pub fn any(&self) -> bool {
        self.0.load(Ordering::SeqCst) > 0
    }
}

/// One request counted by [`RequestsInFlight::enter`].
pub struct InFlight<'a>(&'a RequestsInFlight);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Store reads kept per store generation (`api::assemble::Lookups`), a generation's at most
/// [`KEPT_NAMES`] brands and series and [`KEPT_MODEL_CARDS`] model cards; and what the
/// back office works out from the catalogue's words alone.
pub struct KeptReads {
    pub brands: GenerationCache<BrandId, Option<Brand>>,
    pub series: GenerationCache<SeriesId, Option<Series>>,
    pub model_cards: GenerationCache<ModelId, Option<Arc<ModelCard>>>,
    /// Reconciliation groups' candidates, kept per model text edition of the catalogue index.
    pub candidates: KeptCandidates,
    /// Every brand's name, for the reconciliation service's typo'd brands, per store generation.
    pub brand_names: KeptBrandNames,
}

/// What a model's list item is made from: the model, its FRONT picture's pipeline record (when
/// the dataset did not give its crop) and its listing count.
#[derive(Debug)]
pub struct ModelCard {
    pub model: Model,
    pub front_record: Option<PictureRecord>,
    pub listing_count: u64,
}

/// Brands or series kept per generation at most (then the cache starts again): a catalogue
/// of a million models has 2,000 brands and 24,000 series.
const KEPT_NAMES: usize = 100_000;

/// Days' conversion tables kept at most (a few kilobytes each): ten years of ECB days.
const DAY_TABLES_KEPT: usize = 2_600;

/// The ECB day whose table converts a past price, and that table (see [`App::table_on`]).
pub type DayTable = (Option<String>, Option<Arc<ConversionTable>>);

/// Model cards kept per generation at most, about a kilobyte each: the models of the pages
/// asked most often within a generation, not the catalogue.
const KEPT_MODEL_CARDS: usize = 50_000;

impl Default for KeptReads {
    fn default() -> KeptReads {
        KeptReads {
            brands: GenerationCache::holding_at_most(KEPT_NAMES),
            series: GenerationCache::holding_at_most(KEPT_NAMES),
            model_cards: GenerationCache::holding_at_most(KEPT_MODEL_CARDS),
            candidates: KeptCandidates::default(),
            brand_names: GenerationCache::holding_at_most(1),
        }
    }
}

/// How [`App::open_with`] opens a data dir: what it does with a store of an older schema, and
/// how the indexes' files are read in.
struct Opening {
    policy: MigrationPolicy,
    index_access: FileAccess,
}

impl App {
    /// Opens the data dir, creating it when absent. A store of an older schema is refused
    /// with the advice to run `watch-catalogue migrate`.
    pub fn open(data_dir: &DataDir, cache_bytes: u64) -> anyhow::Result<App> {
        let opening = Opening {
            policy: MigrationPolicy::Refuse,
            index_access: FileAccess::ReadAround,
        };
        Ok(App::open_with(data_dir, cache_bytes, opening)?.0)
    }

    /// Opens the data dir for `serve`: a store of an older schema is migrated first when every
    /// pending step is safe at start-up (docs/operations.md), and refused otherwise. The
    /// indexes' files are read in a page at a time, as the server reads them all ahead at its
    /// start ([`FileAccess::PageAlone`]).
    pub fn open_for_serving(data_dir: &DataDir, cache_bytes: u64) -> anyhow::Result<App> {
        let opening = Opening {
            policy: MigrationPolicy::StartupSafe,
            index_access: FileAccess::PageAlone,
        };
        let (app, report) = App::open_with(data_dir, cache_bytes, opening)?;
        for step in &report.steps {
            tracing::info!(
                from = step.from,
                to = step.to,
                rewritten = step.rewritten,
                resumed = step.resumed,
                "store migrated at start-up: {}",
                step.summary
            );
        }
        Ok(app)
    }

    fn open_with(
        data_dir: &DataDir,
        cache_bytes: u64,
        opening: Opening,
    ) -> anyhow::Result<(App, MigrationReport)> {
        std::fs::create_dir_all(data_dir.path())
            .with_context(|| format!("creating data dir {}", data_dir.path().display()))?;
        data_dir::ensure_marker(data_dir)?;
        let (store, report) = open_store(data_dir, cache_bytes, opening.policy)?;
        let access = opening.index_access;
        let index = CatalogueIndex::open_with(&data_dir.index(), access).with_context(|| {
            format!("opening the search index in {}", data_dir.index().display())
        })?;
        let listings =
            ListingIndex::open_with(&data_dir.listings_index(), access).with_context(|| {
                format!(
                    "opening the listings index in {}",
                    data_dir.listings_index().display()
                )
            })?;
        let index = Arc::new(index);
        let listings = Arc::new(listings);
        let app = App {
            work: Arc::new(JobContext::new(
                Writer::new(store.clone(), index.clone(), listings.clone()),
                MediaStore::new(data_dir.media()),
                data_dir.spool(),
            )),
            store,
            index,
            listings,
            rates: RwLock::new(None),
            day_tables: Mutex::new(((0, 0), HashMap::new())),
            dir: data_dir.clone(),
            kept: KeptReads::default(),
            requests: RequestsInFlight::default(),
        };
        Ok((app, report))
    }

    /// The store of record, read by area (`store().catalogue()`, …).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The catalogue index (brands, series, models).
    pub fn index(&self) -> &Arc<CatalogueIndex> {
        &self.index
    }

    /// The listings index.
    pub fn listings(&self) -> &Arc<ListingIndex> {
        &self.listings
    }

    /// Store reads kept per store generation, for pages of models.
    pub fn kept(&self) -> &KeptReads {
        &self.kept
    }

    /// What jobs work with: the app's writer, media store, queue and kept duplicate groups.
    pub fn job_context(&self) -> &Arc<JobContext> {
        &self.work
    }

    /// Every change to the store and indexes goes through it.
    pub fn writer(&self) -> &Writer {
        self.work.writer()
    }

    /// The fetched and cropped pictures (`<data dir>/media`).
    pub fn media(&self) -> &MediaStore {
        self.work.media()
    }

    /// Requests whose work runs now.
    pub fn requests_in_flight(&self) -> &RequestsInFlight {
        &self.requests
    }

    /// Pictures a person is waiting for: the image worker takes them first.
    pub fn urgent_pictures(&self) -> &UrgentPictures {
        self.work.urgent_pictures()
    }

    /// Batch jobs submitted to the server, run one at a time through the writer.
    pub fn jobs(&self) -> &Jobs {
        self.work.queue()
    }

    /// The duplicate finder's groups as the store's pairs stand (kept between calls).
    pub fn duplicate_groups(&self) -> StoreResult<Arc<Vec<Arc<duplicates::Group>>>> {
        self.work.duplicate_groups()
    }

    /// Reads the duplicate groups the store keeps, unless groups are held already (`serve`
    /// does it as it starts).
    pub fn read_kept_duplicate_groups(&self) -> StoreResult<()> {
        self.work.read_kept_duplicate_groups()
    }

    /// Has the store keep the duplicate groups as they stand, for the next start to read
    /// rather than join (`serve` does it as it stops).
    pub fn keep_duplicate_groups(&self) {
        self.work.keep_duplicate_groups();
    }

    /// The conversion table of the ECB rates in force, read again only after a write that
    /// changed them (no store read, a shared lock, per request); `None` before rates are loaded.
    pub fn conversion_table(&self) -> StoreResult<Option<Arc<ConversionTable>>> {
        let epoch = self.store.rates().epoch();
        let current = |cached: &Option<(u64, Option<Arc<ConversionTable>>)>| {
            cached
                .as_ref()
                .filter(|(at, _)| *at == epoch)
                .map(|(_, table)| table.clone())
        };
        if let Some(table) = current(&self.rates.read().unwrap_or_else(|p| p.into_inner())) {
            return Ok(table);
        }
        let mut cached = self.rates.write().unwrap_or_else(|p| p.into_inner());
        if let Some(table) = current(&cached) {
            return Ok(table);
        }
        let table = self.store.rates().table_in_force()?.map(Arc::new);
        *cached = Some((epoch, table.clone()));
        Ok(table)
    }

    /// The ECB day whose rates convert a price seen on `day` (`YYYY-MM-DD`) and its table: the
    /// latest stored day on or before it, else the rates in force (a later day); none before
    /// rates are loaded. Kept until a write changes the rates, so a listing's price history
    /// builds no table per request (D-205).
    pub fn table_on(&self, day: &str) -> StoreResult<DayTable> {
        // The fallback is the rates in force: both epochs name what the answer was read at.
        let epoch = (self.store.rates().days_epoch(), self.store.rates().epoch());
        {
            let kept = self.day_tables.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(found) = kept.1.get(day).filter(|_| kept.0 == epoch) {
                return Ok(found.clone());
            }
        }
        let found = match self.store.rates().table_on(day)? {
            Some((date, table)) => (Some(date), Some(Arc::new(table))),
            None => {
                let in_force = self.store.rates().in_force()?.map(|ecb| ecb.date);
                (in_force, self.conversion_table()?)
            }
        };
        let mut kept = self.day_tables.lock().unwrap_or_else(|p| p.into_inner());
        if kept.0 != epoch || kept.1.len() >= DAY_TABLES_KEPT {
            *kept = (epoch, HashMap::new());
        }
        kept.1.insert(day.to_owned(), found.clone());
        Ok(found)
    }

    /// True when both indexes reflect the store's last write.
    pub fn index_is_current(&self) -> anyhow::Result<bool> {
        Ok(reindex::catalogue_is_current(&self.store, &self.index)?
            && reindex::listings_are_current(&self.store, &self.listings)?)
    }

    /// When `seed` (`serve`): imports the bundled fixtures when they are due (`serve` created
    /// the data dir, or their own import was cut short), and refuses a store whose import of a
    /// dataset was cut short. Then rebuilds each index that is missing or behind the store.
    /// Runs before the port opens.
    pub fn prepare(&self, seed: bool) -> anyhow::Result<()> {
        if seed {
            self.seed_unless_imported()?;
        }
        self.catch_up()
    }

    /// The fixtures imported when their import is under way (marked due when `serve` created
    /// the data dir, or cut short); any other import cut short refused, so a half-imported
    /// catalogue is never served nor topped up with the demo. A data dir made by `import` never
    /// gets the demo, even if its store is empty.
    fn seed_unless_imported(&self) -> anyhow::Result<()> {
        match data_dir::import_under_way(&self.dir)? {
            Some(under_way) if under_way.source == FIXTURES => {
                tracing::info!(due_since = %under_way.started_at, "importing the bundled fixtures");
                self.import_fixtures()
            }
            Some(under_way) => anyhow::bail!(
                "an import of {} into {} (started {}) was cut short: run `watch-catalogue import {}` again to complete it; the server does not serve a half-imported catalogue",
                under_way.source,
                self.dir.path().display(),
                under_way.started_at,
                under_way.source
            ),
            None if self.store.is_empty()? => {
                tracing::warn!("the store is empty: import a dataset (`watch-catalogue import DIR`)");
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn import_fixtures(&self) -> anyhow::Result<()> {
        let mark = ImportMark::begin(&self.dir, FIXTURES)?;
        let done = self
            .writer()
            .run(|turn| {
                import_dataset(
                    turn,
                    &EmbeddedFixtures,
                    self.media(),
                    None,
                    &JobControl::default(),
                )
            })
            .context("importing the bundled fixtures")?;
        mark.finish()?;
        tracing::info!(
            generation = done.value.catalogue.generation.0,
            "fixtures imported"
        );
        for (provider, report) in &done.value.feeds {
            tracing::info!(%provider, created = report.created, matched = report.matched, "fixture feed ingested");
        }
        tracing::info!(
            catalogue = done.indexed.catalogue.documents,
            listings = done.indexed.listings.documents,
            generation = done.indexed.catalogue.generation,
            "indexes built"
        );
        Ok(())
    }

    /// Rebuilds each index that is missing or behind the store.
    fn catch_up(&self) -> anyhow::Result<()> {
        let caught_up = self.writer().catch_up()?;
        for (index, report) in [
            ("search index", caught_up.catalogue),
            ("listings index", caught_up.listings),
        ] {
            if let Some(report) = report {
                tracing::info!(
                    documents = report.documents,
                    generation = report.generation,
                    "{index} was missing or behind the store: rebuilt"
                );
            }
        }
        Ok(())
    }
}

/// Brings the store of `data_dir` up to this binary's schema (`watch-catalogue migrate`): every
/// pending step runs. The indexes are left alone: a step that changes what they hold bumps the
/// store generation, and the next start-up rebuilds them.
pub fn migrate(data_dir: &DataDir, cache_bytes: u64) -> anyhow::Result<MigrationReport> {
    let store_dir = data_dir.store();
    anyhow::ensure!(
        store_dir.is_dir(),
        "no store in {}: nothing to migrate",
        store_dir.display()
    );
    let (store, report) = open_store(data_dir, cache_bytes, MigrationPolicy::All)?;
    store.flush()?;
    Ok(report)
}

/// What `watch-catalogue compact` did: the store's size before and after, and what its copy
/// holds.
#[derive(Debug, Clone, Copy)]
pub struct Compaction {
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub copied: crate::store::compact::CopyReport,
}

impl std::fmt::Display for Compaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let trees = match self.copied.trees {
            1 => "1 tree".to_owned(),
            trees => format!("{trees} trees"),
        };
        write!(
            f,
            "store compacted: {} -> {} ({} keys in {trees}, {} of records), every record compared with the original",
            size(self.bytes_before),
            size(self.bytes_after),
            self.copied.keys,
            size(self.copied.bytes)
        )
    }
}

/// `bytes` in MiB below a GiB, else in GiB.
fn size(bytes: u64) -> String {
    const MIB: f64 = (1u64 << 20) as f64;
    let mib = bytes as f64 / MIB;
    if mib < 1024.0 {
        format!("{mib:.1} MiB")
    } else {
        format!("{:.2} GiB", mib / 1024.0)
    }
}

/// Copies the store of `data_dir` into a fresh sled database, compares every record of the
/// copy with the original, and swaps the copy in (`watch-catalogue compact`, the server
/// stopped: the store is opened as every offline command opens it, refused while a server
/// holds it). `progress` counts the keys copied (their total unknown until the copy ends),
/// then the keys compared; a stop (SIGTERM) ends it between two batches of the copy with the
/// store as it was. `Ok(None)` when stopped.
pub fn compact(
    data_dir: &DataDir,
    cache_bytes: u64,
    progress: &JobControl,
) -> anyhow::Result<Option<Compaction>> {
    use crate::data_dir::compaction;
    let (store, _) = open_store(data_dir, cache_bytes, MigrationPolicy::Refuse)?;
    store.flush()?;
    let bytes_before = data_dir::folder_bytes(&data_dir.store());
    let copy_dir = data_dir.compacting_store();
    compaction::remove_copy(data_dir)?;
    let copied = store.copy_into(&copy_dir, cache_bytes, &mut |keys| {
        progress.advance(keys);
        progress.between_chunks_outside_a_turn();
        !progress.should_stop()
    });
    let copy = match copied {
        Ok(Some(copy)) => copy,
        stopped_or_failed => {
            compaction::remove_copy(data_dir)?;
            return stopped_or_failed.map(|_| None).map_err(anyhow::Error::from);
        }
    };
    let copied = copy.report;
    // Each key counts twice: copied, then compared.
    progress.set_total(copied.keys * 2);
    let compared = store.compare_with_copy(&copy, &mut |keys| progress.advance(keys))?;
    drop((copy, store));
    if let Err(differs) = compared {
        compaction::remove_copy(data_dir)?;
        anyhow::bail!("{differs}: the copy was removed and the store left as it was");
    }
    compaction::mark_verified(data_dir)?;
    compaction::swap_in_copy(data_dir)?;
    Ok(Some(Compaction {
        bytes_before,
        bytes_after: data_dir::folder_bytes(&data_dir.store()),
        copied,
    }))
}

/// Opens the store of `data_dir` once more and closes it, after an offline batch job has dropped
/// every handle on it. sled 0.34 writes its snapshot only when a store is opened, after replaying
/// the log written since the last open: without this, the next `serve` replays the whole job's log,
/// from disk after a reboot, a large share of a cold start (docs/decisions.md, D-11). The job pays
/// one open while its log is still in the page cache. It changes no data, so a failure is only
/// logged: the job's writes are flushed already, and the next open replays them as it always did.
///
/// The open is tried again for a few seconds. Once, under the whole test suite's load, a job
/// left no new snapshot: this open had failed. Not reproduced since; the likely cause is sled's
/// I/O threads still holding the store's file, and with it its lock, for a moment after the
/// job's last handle is dropped, the one open error a healthy store can give. Any error is
/// tried again: a lasting one costs the job 5 s before its warning.
///
/// Returns whether the snapshot was written.
pub fn snapshot_store(data_dir: &DataDir, cache_bytes: u64) -> bool {
    const TRIES: u32 = 50;
    const PAUSE: std::time::Duration = std::time::Duration::from_millis(100);
    let started = std::time::Instant::now();
    let open_and_flush = || {
        open_store(data_dir, cache_bytes, MigrationPolicy::Refuse)
            .and_then(|(store, _)| Ok(store.flush()?))
    };
    let mut reopened = open_and_flush();
    for _ in 1..TRIES {
        if reopened.is_ok() {
            break;
        }
        std::thread::sleep(PAUSE);
        reopened = open_and_flush();
    }
    match reopened {
        Ok(()) => {
            tracing::debug!(took = ?started.elapsed(), "store opened again: sled snapshot written");
            true
        }
        Err(error) => {
            tracing::warn!(error = %causes(error.as_ref()), "opening the store again after the job (its snapshot)");
            false
        }
    }
}

fn open_store(
    data_dir: &DataDir,
    cache_bytes: u64,
    policy: MigrationPolicy,
) -> anyhow::Result<(Store, MigrationReport)> {
    let store_dir = data_dir.store();
    Store::open_with(&store_dir, cache_bytes, policy).map_err(|error| {
        if let (StoreError::Sled(_), Some(server)) = (&error, serving_address(data_dir)) {
            return anyhow::anyhow!(
                "the data dir {} is held by the server at {server}: run ingest, rates, match, reindex and duplicates against it with --server {server} (stop it for anything else)",
                data_dir.path().display()
            );
        }
        // sled's lock is the usual I/O failure at open; a schema error speaks for itself.
        let hint = match error {
            StoreError::Sled(_) => " (is another process using this data dir?)",
            _ => "",
        };
        anyhow::Error::new(error).context(format!(
            "opening the store in {}{hint}",
            store_dir.display()
        ))
    })
}

/// The address a server serving `data_dir` wrote when it opened its port (`serve` removes it
/// on exit; one left by a killed server names no live server, but then the store opens).
pub fn serving_address(data_dir: &DataDir) -> Option<String> {
    let text = std::fs::read_to_string(data_dir.server_address()).ok()?;
    let address = text.trim();
    (!address.is_empty()).then(|| address.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_counts_as_in_flight_until_its_guard_drops() {
        let requests = RequestsInFlight::default();
        assert!(!requests.any());
        let first = requests.enter();
        let second = requests.enter();
        drop(first);
        assert!(requests.any());
        drop(second);
        assert!(!requests.any());
    }

    #[test]
    fn the_snapshot_open_waits_for_a_store_another_handle_lets_go_of() {
        const CACHE: u64 = 16 << 20;
        let dir = tempfile::tempdir().expect("dir");
        let data_dir = DataDir::new(dir.path());
        let (held, _) = open_store(&data_dir, CACHE, MigrationPolicy::All).expect("open");
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            drop(held);
        });
        assert!(
            snapshot_store(&data_dir, CACHE),
            "opened once the other handle let go"
        );
        release.join().expect("the releasing thread");
    }
}
