//! The one writer of a data dir. Every job that changes the store (import, ingest, match,
//! rates, and the back office's edits) runs through [`Writer::run`], one at a time: it takes
//! the store's write turn, runs the job's reads and commits, then brings both indexes up to
//! exactly what the job committed before the next job may start. A long job lets the writers
//! waiting for the turn in between two of its chunks: the indexes are brought up to its
//! commits so far first, so those writers find them as after a whole job ([`Parts`]). Reads
//! never wait for it.

use super::doorbell::Doorbell;
use super::duplicates;
use super::listing_load::{IndexLoad, LOAD_FROM_LISTINGS};
use super::reindex::{self, ReindexError, ReindexReport};
use super::series_folder::SeriesFolding;
use crate::domain::ModelId;
use crate::store::{
    Changes, GroupsRebuilt, Interlude, Store, StoreError, StoreGeneration, WriteTurn,
};
use catalogue_index::{CatalogueIndex, ListingIndex};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Serialises the writes to one store and keeps its indexes in step with them.
pub struct Writer {
    store: Store,
    catalogue: Arc<CatalogueIndex>,
    listings: Arc<ListingIndex>,
    /// Listings a job writes before its listings go to a load of the index.
    load_from: usize,
    /// Models a job recounts or writes before the catalogue index takes them as many
    /// (`reindex::PATCH_MODELS_AT_MOST`).
    patch_at_most: usize,
    /// Woken when a write logs models for the price series; one fold at a time.
    series: Arc<SeriesFolding>,
    /// Rung when a write leaves listings of a merged model to move (`listing_mover`).
    mover: Arc<Doorbell>,
}

/// A job's result, how long its write took and then the index updates and the duplicate pairs'
/// refresh (side by side), and what those updates indexed (a patch names the documents it
/// rewrote; a rebuild, all of them; summed over the parts of a job that let others write).
#[derive(Debug)]
pub struct Written<T> {
    pub value: T,
    pub write_took: Duration,
    pub index_took: Duration,
    pub indexed: Indexed,
}

/// The documents each index took after a job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Indexed {
    pub catalogue: ReindexReport,
    pub listings: ReindexReport,
}

impl Indexed {
    /// What `self` and then `later` indexed.
    fn then(self, later: Indexed) -> Indexed {
        let add = |a: ReindexReport, b: ReindexReport| ReindexReport {
            documents: a.documents + b.documents,
            generation: a.generation.max(b.generation),
        };
        Indexed {
            catalogue: add(self.catalogue, later.catalogue),
            listings: add(self.listings, later.listings),
        }
    }
}

/// Why a job run by the writer failed: the job itself (whatever it committed before failing is
/// still indexed), or the index update after it (the index stays marked behind, and the next
/// start-up or job rebuilds it).
#[derive(Debug, thiserror::Error)]
pub enum WriteError<E: std::error::Error + 'static> {
    #[error(transparent)]
    Job(E),
    #[error("bringing the indexes up to the write")]
    Index(#[source] ReindexError),
}

/// What a rebuild takes: the catalogue index, the listings index, the models' price series, or
/// all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexChoice {
    Catalogue,
    Listings,
    Series,
    All,
}

impl IndexChoice {
    pub const ALL: [IndexChoice; 4] = [
        IndexChoice::Catalogue,
        IndexChoice::Listings,
        IndexChoice::Series,
        IndexChoice::All,
    ];

    /// `catalogue`, `listings`, `series` or `all`.
    pub fn parse(text: &str) -> Option<IndexChoice> {
        IndexChoice::ALL
            .into_iter()
            .find(|choice| choice.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            IndexChoice::Catalogue => "catalogue",
            IndexChoice::Listings => "listings",
            IndexChoice::Series => "series",
            IndexChoice::All => "all",
        }
    }

    /// The names, as a message lists them: `catalogue, listings, series or all`.
    pub fn names() -> String {
        let names = IndexChoice::ALL.map(IndexChoice::as_str);
        let (last, others) = names.split_last().unwrap_or((&"all", &[]));
        format!("{} or {last}", others.join(", "))
    }

    /// True when it rebuilds the catalogue index (and then the duplicate pairs).
    pub fn takes_catalogue(self) -> bool {
        matches!(self, IndexChoice::Catalogue | IndexChoice::All)
    }

    /// True when it rebuilds the listings index (and the groups of unmatched listings).
    pub fn takes_listings(self) -> bool {
        matches!(self, IndexChoice::Listings | IndexChoice::All)
    }

    /// True when it folds every model's price series again.
    pub fn takes_series(self) -> bool {
        matches!(self, IndexChoice::Series | IndexChoice::All)
    }
}

/// What a catch-up or a rebuild rebuilt, when anything.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CatchUp {
    pub catalogue: Option<ReindexReport>,
    pub listings: Option<ReindexReport>,
    /// The groups of unmatched listings brought up to the listings with the listings index.
    pub unmatched_groups: Option<GroupsRebuilt>,
}

/// The store's generations when a turn began, or was taken back after a pass.
#[derive(Debug, Clone, Copy)]
struct Before {
    generation: StoreGeneration,
    listings: StoreGeneration,
}

impl Before {
    fn of(store: &Store) -> Result<Before, StoreError> {
        Ok(Before {
            generation: store.generation()?,
            listings: store.listings_generation()?,
        })
    }
}

impl Writer {
    pub fn new(
        store: Store,
        catalogue: Arc<CatalogueIndex>,
        listings: Arc<ListingIndex>,
    ) -> Writer {
        Writer {
            store,
            catalogue,
            listings,
            load_from: LOAD_FROM_LISTINGS,
            patch_at_most: reindex::PATCH_MODELS_AT_MOST,
            series: Arc::default(),
            mover: Arc::default(),
        }
    }

    /// The price series folder's wake and turn (`series_folder`).
    pub fn series_folding(&self) -> &SeriesFolding {
        &self.series
    }

    /// The listing mover's wake (`listing_mover`).
    pub fn listing_mover(&self) -> &Arc<Doorbell> {
        &self.mover
    }

    /// The store every job of this writer writes.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The listings index this writer keeps current.
    pub fn listings(&self) -> &Arc<ListingIndex> {
        &self.listings
    }

    /// The catalogue index this writer keeps current.
    pub fn catalogue(&self) -> &Arc<CatalogueIndex> {
        &self.catalogue
    }

    /// Lets both indexes' writers of updates go (their merges done), so the next update makes
    /// its writer on the thread that asks: one made by a job's thread, below the requests'
    /// priority, would leave its threads there for the back-office writes after it (D-201).
    pub fn let_go_of_index_writers(&self) {
        let let_go = [
            ("catalogue", self.catalogue.let_go_of_updates()),
            ("listings", self.listings.let_go_of_updates()),
        ];
        for (index, result) in let_go {
            if let Err(error) = result {
                tracing::warn!(index, %error, "a merge of the index's updates failed");
            }
        }
    }

    /// Loads the listings index from a job's `listings`-th listing write on, instead of from
    /// [`LOAD_FROM_LISTINGS`]: lets a test's small feed take the path of a large ingest.
    pub fn loading_from(mut self, listings: usize) -> Writer {
        self.load_from = listings;
        self
    }

    /// Takes a job's changes to more than `models` models into the catalogue index as many,
    /// instead of more than [`reindex::PATCH_MODELS_AT_MOST`]: lets a test's small feed take the
    /// path of a large snapshot.
    pub fn patching_at_most(mut self, models: usize) -> Writer {
        self.patch_at_most = models;
        self
    }

    /// Runs `job` alone, then takes what it committed into the indexes. The job gets the write
    /// turn: the only way to make and commit a batch. Where the job lets the writers waiting
    /// for the turn in (`WriteTurn::let_waiting_write`), what it committed until then is taken
    /// into the indexes first.
    pub fn run<T, E: std::error::Error + 'static>(
        &self,
        job: impl FnOnce(&WriteTurn<'_>) -> Result<T, E>,
    ) -> Result<Written<T>, WriteError<E>> {
        let asked = Instant::now();
        self.run_in(self.store.write_turn(), asked, job)
    }

    /// [`Writer::run`] for background work no one waits for (the image worker's): a long job
    /// does not let it in between its chunks; it waits for the job to end.
    pub fn run_in_background<T, E: std::error::Error + 'static>(
        &self,
        job: impl FnOnce(&WriteTurn<'_>) -> Result<T, E>,
    ) -> Result<Written<T>, WriteError<E>> {
        let asked = Instant::now();
        self.run_in(self.store.background_write_turn(), asked, job)
    }

    fn run_in<T, E: std::error::Error + 'static>(
        &self,
        mut turn: WriteTurn<'_>,
        asked: Instant,
        job: impl FnOnce(&WriteTurn<'_>) -> Result<T, E>,
    ) -> Result<Written<T>, WriteError<E>> {
        let waited = asked.elapsed();
        let parts = Arc::new(Parts::begin(self).map_err(WriteError::Index)?);
        if let Some(load) = &parts.load {
            turn.set_listing_sink(load.clone());
        }
        turn.set_interlude(parts.clone());
        let started = Instant::now();
        let outcome = job(&turn);
        let write_took = started.elapsed();
        // Whether the job failed or not: what it committed is loaded, and is indexed; the
        // duplicate pairs only after a job that succeeded.
        let indexed = parts.bring_up(&turn, &turn.changes(), outcome.is_ok());
        let index_took = started.elapsed() - write_took;
        // Where a slow write's time went: waiting for the turn, its own reads and commits, or
        // the indexes and duplicate pairs after them.
        tracing::debug!(?waited, ?write_took, ?index_took, "write turn ended");
        match (outcome, indexed) {
            (Ok(value), Ok(indexed)) => Ok(Written {
                value,
                write_took,
                index_took,
                indexed,
            }),
            (Ok(_), Err(error)) => Err(WriteError::Index(error)),
            (Err(error), indexed) => {
                if let Err(index) = indexed {
                    tracing::error!(error = %index, "indexing what a failed job committed");
                }
                Err(WriteError::Job(error))
            }
        }
    }

    /// Rebuilds each index that is missing or behind the store (a first start, a crash between
    /// a commit and its index update, a data dir copied without its indexes), in the turn.
    pub fn catch_up(&self) -> Result<CatchUp, ReindexError> {
        let _turn = self.store.write_turn();
        let mut done = CatchUp::default();
        if !reindex::catalogue_is_current(&self.store, &self.catalogue)? {
            done.catalogue = Some(reindex::rebuild(&self.store, &self.catalogue)?);
        }
        if !reindex::listings_are_current(&self.store, &self.listings)? {
            done.listings = Some(reindex::rebuild_listings(&self.store, &self.listings)?);
        }
        Ok(done)
    }

    /// Rebuilds the chosen indexes from the store (`watch-catalogue reindex`), in the turn;
    /// what each rebuilt index took. A rebuild stopped by `stop` (SIGTERM) commits nothing:
    /// the index is left as it was.
    pub fn rebuild_indexes(
        &self,
        which: IndexChoice,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<CatchUp, ReindexError> {
        let turn = self.store.write_turn();
        let mut done = CatchUp::default();
        if which.takes_catalogue() {
            done.catalogue = Some(reindex::rebuild_unless(&self.store, &self.catalogue, stop)?);
        }
        if which.takes_listings() {
            done.listings = Some(reindex::rebuild_listings_unless(
                &self.store,
                &self.listings,
                stop,
            )?);
            done.unmatched_groups = Some(self.store.rebuild_unmatched_groups(&turn)?);
        }
        Ok(done)
    }
}

/// One run of a job through the writer, in parts: from the turn's start, or from a pass to
/// other writers, to the next pass or the job's end. At the end of each part the indexes (and,
/// after a success, the duplicate pairs) are brought up to what the part committed; a part
/// starts from the store's generations as it finds them, with a load of its own.
struct Parts {
    store: Store,
    catalogue: Arc<CatalogueIndex>,
    listings: Arc<ListingIndex>,
    /// The turn's listing sink, loaded anew in each part.
    load: Option<Arc<IndexLoad>>,
    patch_at_most: usize,
    /// Told when a part logged models for the price series.
    series: Arc<SeriesFolding>,
    /// Told when a part left listings to move.
    mover: Arc<Doorbell>,
    before: Mutex<Before>,
    /// What the parts ended so far indexed.
    indexed: Mutex<Indexed>,
}

impl Parts {
    fn begin(writer: &Writer) -> Result<Parts, ReindexError> {
        let store = &writer.store;
        let before = Before::of(store)?;
        // A load only into an index current with its store: a write into one behind would
        // rebuild it anyway.
        let load = if reindex::listings_are_current(store, &writer.listings)? {
            let table = store.rates().table_in_force()?;
            let load = IndexLoad::new(writer.listings.clone(), table).starting_at(writer.load_from);
            Some(Arc::new(load))
        } else {
            None
        };
        Ok(Parts {
            store: store.clone(),
            catalogue: writer.catalogue.clone(),
            listings: writer.listings.clone(),
            load,
            patch_at_most: writer.patch_at_most,
            series: writer.series.clone(),
            mover: writer.mover.clone(),
            before: Mutex::new(before),
            indexed: Mutex::new(Indexed::default()),
        })
    }

    /// Brings the duplicate pairs (`with_pairs`) and the indexes up to `changes`, the part
    /// just ended; what every part indexed.
    fn bring_up(
        &self,
        turn: &WriteTurn<'_>,
        changes: &Changes,
        with_pairs: bool,
    ) -> Result<Indexed, ReindexError> {
        let before = *lock(&self.before);
        // The duplicate pairs and the indexes are both derived from what the job committed, and
        // neither reads the other: on two cores an import of a million models brings them up
        // side by side (docs/decisions.md, D-141).
        let (duplicates_took, indexed) = rayon::join(
            || {
                let started = Instant::now();
                if with_pairs {
                    refresh_duplicates(turn, changes);
                }
                started.elapsed()
            },
            || self.index_changes(changes, before),
        );
        tracing::debug!(?duplicates_took, "write done");
        if changes.series_logged {
            self.series.doorbell().ring();
        }
        if changes.listings_left {
            self.mover.ring();
        }
        let mut total = lock(&self.indexed);
        *total = total.then(indexed?);
        Ok(*total)
    }

    /// Brings both indexes up to `changes`, side by side: neither reads the other, and after
    /// an ingest of millions of listings each is long work for one core (the load's merge, the
    /// catalogue rebuilt for its recounted models; docs/decisions.md, D-33).
    fn index_changes(&self, changes: &Changes, before: Before) -> Result<Indexed, ReindexError> {
        let ((listings, listings_took), (catalogue, catalogue_took)) = rayon::join(
            || {
                timed(
                    || match self.load.as_ref().and_then(|load| load.finish(changes)) {
                        Some(loaded) => Ok(loaded),
                        None => reindex::index_listing_changes(
                            &self.store,
                            &self.listings,
                            changes,
                            before.listings,
                        ),
                    },
                )
            },
            || {
                timed(|| {
                    reindex::index_catalogue_changes(
                        &self.store,
                        &self.catalogue,
                        changes,
                        before.generation,
                        self.patch_at_most,
                    )
                })
            },
        );
        tracing::debug!(?listings_took, ?catalogue_took, "indexes updated");
        Ok(Indexed {
            listings: listings?,
            catalogue: catalogue?,
        })
    }
}

/// Between two parts of a job: the indexes are brought up to the part that ends before others
/// write, and the next part loads the listings index again when the index is still current
/// and the rates its prices come from did not move.
impl Interlude for Parts {
    fn settle(&self, turn: &WriteTurn<'_>, changes: &Changes) -> bool {
        match self.bring_up(turn, changes, true) {
            Ok(_) => true,
            Err(error) => {
                tracing::error!(%error, "bringing the indexes up to a job's chunks before letting other writers in; the job keeps the turn");
                false
            }
        }
    }

    fn resume(&self, _turn: &WriteTurn<'_>, others: &Changes) {
        let next = Before::of(&self.store).and_then(|before| {
            *lock(&self.before) = before;
            Ok(if others.rates {
                None
            } else {
                Some(self.store.rates().table_in_force()?)
            })
        });
        if let Some(load) = &self.load {
            let current = reindex::listings_are_current(&self.store, &self.listings);
            match (next, current) {
                (Ok(Some(table)), Ok(true)) => load.again(table),
                // Its listings are then indexed after the part, by id or by a rebuild.
                _ => load.give_up(),
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What `work` returned, and how long it took.
fn timed<T>(work: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let value = work();
    (value, started.elapsed())
}

/// Brings the duplicate finder's pairs up to a write that changed models. The pairs are
/// derived: a failure is logged and `watch-catalogue duplicates rebuild` mends it.
fn refresh_duplicates(turn: &WriteTurn<'_>, changes: &Changes) {
    let models: Vec<ModelId> = changes.models.iter().copied().collect();
    if !models.is_empty() {
        if let Err(error) = duplicates::refresh(turn, &models, &changes.created_models) {
            tracing::error!(%error, "refreshing the duplicate pairs of a write's models");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Slug;
    use crate::jobs::import::{import, DatasetSource, ImportError};
    use catalogue_index::{DocKind, Filters, SearchRequest, SortOrder};
    use std::io::BufRead;

    /// A dataset held in memory: file name and text.
    struct Lines(Vec<(&'static str, String)>);

    impl DatasetSource for Lines {
        fn describe(&self) -> String {
            "memory".into()
        }
        fn open(&self, file: &str) -> std::io::Result<Option<Box<dyn BufRead + '_>>> {
            Ok(self
                .0
                .iter()
                .find(|(name, _)| *name == file)
                .map(|(_, text)| Box::new(text.as_bytes()) as Box<dyn BufRead>))
        }
    }

    fn model(slug: &str, reference: &str) -> Lines {
        Lines(vec![(
            "models.jsonl",
            format!(
                r#"{{"slug":"{slug}","brand":"rolex","series":"submariner","name":"Sub {slug}","referenceNumber":"{reference}"}}"#
            ),
        )])
    }

    fn writer(dir: &std::path::Path) -> Writer {
        let store = Store::open(dir, 1 << 22).expect("store");
        let catalogue = Arc::new(CatalogueIndex::in_memory().expect("index"));
        let listings = Arc::new(ListingIndex::in_memory().expect("index"));
        let writer = Writer::new(store, catalogue, listings);
        let brand = Lines(vec![
            ("brands.jsonl", r#"{"slug":"rolex","name":"Rolex"}"#.into()),
            (
                "series.jsonl",
                r#"{"slug":"submariner","brand":"rolex","name":"Submariner"}"#.into(),
            ),
        ]);
        writer.run(|turn| import(turn, &brand)).expect("brand");
        writer
    }

    fn models_of_rolex(writer: &Writer) -> usize {
        let filters = Filters {
            brand_id: Some(1),
            ..Filters::default()
        };
        writer
            .catalogue
            .count(DocKind::Model, &filters)
            .expect("count")
    }

    #[test]
    fn concurrent_jobs_take_turns_ids_generations_and_keys_stay_whole() {
        const THREADS: usize = 6;
        const JOBS: usize = 8;
        let dir = tempfile::tempdir().expect("dir");
        let writer = writer(dir.path());
        let before = writer.store.generation().expect("generation").0;
        std::thread::scope(|scope| {
            for thread in 0..THREADS {
                let writer = &writer;
                scope.spawn(move || {
                    for job in 0..JOBS {
                        let dataset =
                            model(&format!("m-{thread}-{job}"), &format!("R{thread}X{job}"));
                        writer.run(|turn| import(turn, &dataset)).expect("import");
                    }
                });
            }
        });
        let store = &writer.store;
        let jobs = (THREADS * JOBS) as u64;
        assert_eq!(store.generation().expect("generation").0, before + jobs);
        let mut ids = Vec::new();
        for thread in 0..THREADS {
            for job in 0..JOBS {
                let slug = Slug::parse(&format!("m-{thread}-{job}")).expect("slug");
                let brand = crate::domain::BrandId(1);
                let model = store
                    .catalogue()
                    .model_by_slug(brand, &slug)
                    .expect("read")
                    .expect("every model written");
                let by_reference = store
                    .catalogue()
                    .model_ids_by_reference(brand, &format!("r{thread}x{job}"))
                    .expect("read");
                assert_eq!(by_reference, vec![model.id], "{slug}");
                ids.push(model.id.0);
            }
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(
            ids,
            (1..=jobs).collect::<Vec<_>>(),
            "no id used twice, none lost"
        );
        assert_eq!(models_of_rolex(&writer), THREADS * JOBS);
        assert_eq!(
            writer.catalogue.generation().expect("generation"),
            Some(before + jobs),
            "the index followed every write"
        );
    }

    /// A model written with its words unchanged (here its description) leaves the listing
    /// groups' kept candidates standing; a new reference moves them (D-207).
    #[test]
    fn the_model_text_edition_moves_with_a_model_s_words_not_with_the_rest_of_it() {
        let dir = tempfile::tempdir().expect("dir");
        let writer = writer(dir.path());
        writer
            .run(|turn| import(turn, &model("m-1", "10000")))
            .expect("import");
        let edition = writer.catalogue.model_text_edition();
        let described = Lines(vec![(
            "models.jsonl",
            r#"{"slug":"m-1","brand":"rolex","series":"submariner","name":"Sub m-1","referenceNumber":"10000","description":"Steel."}"#.into(),
        )]);
        writer
            .run(|turn| import(turn, &described))
            .expect("describe");
        let brand = crate::domain::BrandId(1);
        let slug = Slug::parse("m-1").expect("slug");
        let read = writer.store.catalogue().model_by_slug(brand, &slug);
        let kept = read.expect("read").expect("model");
        assert_eq!(
            kept.description.as_deref(),
            Some("Steel."),
            "the edit was written"
        );
        assert_eq!(writer.catalogue.model_text_edition(), edition);
        writer
            .run(|turn| import(turn, &model("m-1", "10001")))
            .expect("re-reference");
        assert!(writer.catalogue.model_text_edition() > edition);
    }

    #[test]
    fn a_model_edit_patches_the_catalogue_index_instead_of_rebuilding_it() {
        let dir = tempfile::tempdir().expect("dir");
        let writer = writer(dir.path());
        for n in 0..20 {
            let dataset = model(&format!("m-{n}"), &format!("{n}0000"));
            writer.run(|turn| import(turn, &dataset)).expect("import");
        }
        let edited = model("m-3", "999999");
        let done = writer.run(|turn| import(turn, &edited)).expect("edit");
        // The model, its brand and its series: not the 22 documents of a rebuild.
        assert_eq!(done.indexed.catalogue.documents, 3);
        assert_eq!(models_of_rolex(&writer), 20);
        let generation = writer.store.generation().expect("generation").0;
        assert_eq!(
            writer.catalogue.generation().expect("gen"),
            Some(generation)
        );
    }

    #[test]
    fn a_failed_job_changes_nothing_and_the_next_one_runs() {
        let dir = tempfile::tempdir().expect("dir");
        let writer = writer(dir.path());
        let generation = writer.store.generation().expect("generation");
        let bad = model("Not A Slug", "1");
        let failed = writer.run(|turn| import(turn, &bad));
        assert!(matches!(
            failed,
            Err(WriteError::Job(ImportError::Invalid(_)))
        ));
        assert_eq!(writer.store.generation().expect("generation"), generation);
        let good = model("fine", "1");
        writer.run(|turn| import(turn, &good)).expect("import");
        assert_eq!(models_of_rolex(&writer), 1);
    }

    #[test]
    fn a_snapshot_recounting_many_models_leaves_them_patched_in_one_segment_as_rebuilt() {
        use crate::jobs::import::fixtures::EmbeddedFixtures;
        use crate::jobs::snapshot_rules::SnapshotRules;
        let dir = tempfile::tempdir().expect("dir");
        // Every recounted model counts as many: the fixtures' feed takes a large snapshot's path.
        let writer = fixture_writer(dir.path()).patching_at_most(1);
        let whole = reindex::rebuild(&writer.store, &CatalogueIndex::in_memory().expect("index"))
            .expect("rebuild")
            .documents;
        let feed = EmbeddedFixtures::text("listings/chrono24.jsonl").expect("feed");
        let rules = SnapshotRules::default();
        let done = writer
            .run(|turn| {
                crate::jobs::ingest::ingest(turn, "chrono24", "feed", feed.as_bytes(), &rules)
            })
            .expect("ingest");
        let patched = done.indexed.catalogue.documents;
        assert!(
            patched > 1 && patched < whole,
            "{patched} of {whole}: patched, not rebuilt"
        );
        assert_eq!(writer.catalogue.segment_count().expect("segments"), 1);
        let fresh = CatalogueIndex::in_memory().expect("index");
        reindex::rebuild(&writer.store, &fresh).expect("rebuild");
        assert_eq!(
            catalogue_answers(&writer.catalogue),
            catalogue_answers(&fresh)
        );
        assert!(catalogue_answers(&fresh).1 > 0, "the feed matched listings");
    }

    /// Models by listing count, those with listings, the listings counted, and brands and
    /// series by model count, as `index` holds them.
    fn catalogue_answers(index: &CatalogueIndex) -> (Vec<u64>, u64, Vec<u64>, Vec<Vec<u64>>) {
        let mut by_listings = SearchRequest::filtered(DocKind::Model, Filters::default());
        by_listings.sort = SortOrder::Lead;
        let mut with_listings = Filters::default();
        with_listings.spec.has_listings = Some(true);
        let listed = SearchRequest::filtered(DocKind::Model, with_listings);
        (
            index.search(&by_listings).expect("search").ids,
            index
                .model_stats(&Filters::default())
                .expect("stats")
                .listing_count,
            index.search(&listed).expect("search").ids,
            by_model_count(index),
        )
    }

    /// Brands, then series, by model count as `index` holds the counts (ties by id).
    fn by_model_count(index: &CatalogueIndex) -> Vec<Vec<u64>> {
        [DocKind::Brand, DocKind::Series]
            .into_iter()
            .map(|kind| {
                let mut request = SearchRequest::filtered(kind, Filters::default());
                request.sort = SortOrder::ModelsDesc;
                index.search(&request).expect("search").ids
            })
            .collect()
    }

    fn assert_counts_as_rebuilt(writer: &Writer, step: &str) {
        let fresh = CatalogueIndex::in_memory().expect("index");
        reindex::rebuild(&writer.store, &fresh).expect("rebuild");
        assert_eq!(
            by_model_count(&writer.catalogue),
            by_model_count(&fresh),
            "{step}"
        );
    }

    #[test]
    fn patched_brand_and_series_counts_are_what_a_rebuild_counts() {
        let dir = tempfile::tempdir().expect("dir");
        let writer = writer(dir.path());
        let others = Lines(vec![
            (
                "brands.jsonl",
                "{\"slug\":\"tudor\",\"name\":\"Tudor\"}\n{\"slug\":\"omega\",\"name\":\"Omega\"}".into(),
            ),
            (
                "series.jsonl",
                "{\"slug\":\"bb\",\"brand\":\"tudor\",\"name\":\"BB\"}\n{\"slug\":\"sm\",\"brand\":\"omega\",\"name\":\"SM\"}".into(),
            ),
        ]);
        writer.run(|turn| import(turn, &others)).expect("brands");
        let line = |slug: &str, brand: &str, series: &str| {
            format!(
                r#"{{"slug":"{slug}","brand":"{brand}","series":"{series}","name":"{slug}","referenceNumber":"R-{slug}"}}"#
            )
        };
        let models = [
            ("t1", "tudor", "bb"),
            ("t2", "tudor", "bb"),
            ("t3", "tudor", "bb"),
            ("o1", "omega", "sm"),
            ("r1", "rolex", "submariner"),
            ("r2", "rolex", "submariner"),
        ];
        for (slug, brand, series) in models {
            let one = Lines(vec![("models.jsonl", line(slug, brand, series))]);
            writer.run(|turn| import(turn, &one)).expect("model");
            assert_counts_as_rebuilt(&writer, slug);
        }
        let id = |slug: &str| -> ModelId {
            let brand = writer
                .store
                .catalogue()
                .brand_by_slug(&Slug::parse("tudor").expect("slug"))
                .expect("read")
                .expect("brand");
            writer
                .store
                .catalogue()
                .model_by_slug(brand.id, &Slug::parse(slug).expect("slug"))
                .expect("read")
                .expect("model")
                .id
        };
        let (keeper, merged) = (id("t1"), [id("t2"), id("t3")]);
        writer
            .run(|turn| {
                crate::jobs::merge::merge(
                    turn,
                    &writer.listings,
                    &crate::jobs::users::Actor::Cli,
                    keeper,
                    &merged,
                )
            })
            .expect("merge");
        // Tudor went from three models to one: below Rolex's two now.
        assert_counts_as_rebuilt(&writer, "merge");
    }

    /// The fixtures' catalogue and rates, no listing, and both indexes current with them; the
    /// listings of every job loaded into the index as they commit.
    fn fixture_writer(dir: &std::path::Path) -> Writer {
        let store = Store::open(dir, 1 << 22).expect("store");
        crate::jobs::import::fixtures::import_fixtures(&store.write_turn(), dir);
        let catalogue = Arc::new(CatalogueIndex::in_memory().expect("index"));
        let listings = Arc::new(ListingIndex::in_memory().expect("index"));
        let writer = Writer::new(store, catalogue, listings).loading_from(1);
        writer.catch_up().expect("catch up");
        writer
    }

    /// What the listings index answers to a few lists, and what the catalogue index counts.
    fn answers(writer: &Writer) -> (Vec<(Vec<u64>, usize)>, u64) {
        use catalogue_index::{ListingFilters, ListingQuery, ListingSort};
        let unmatched = ListingFilters {
            unmatched: true,
            ..ListingFilters::default()
        };
        let lists = [ListingFilters::default(), unmatched]
            .into_iter()
            .map(|filters| {
                let query = ListingQuery {
                    text: None,
                    filters,
                    sort: ListingSort::Oldest,
                    offset: 0,
                    limit: 100_000,
                };
                let hits = writer.listings.search(&query).expect("search");
                (hits.ids, hits.total)
            })
            .collect();
        let counted = writer
            .catalogue
            .model_stats(&Filters::default())
            .expect("stats")
            .listing_count;
        (lists, counted)
    }

    /// [`answers`] of indexes rebuilt from the store.
    fn answers_rebuilt(writer: &Writer) -> (Vec<(Vec<u64>, usize)>, u64) {
        let fresh = Writer::new(
            writer.store.clone(),
            Arc::new(CatalogueIndex::in_memory().expect("index")),
            Arc::new(ListingIndex::in_memory().expect("index")),
        );
        reindex::rebuild(&fresh.store, &fresh.catalogue).expect("rebuild");
        reindex::rebuild_listings(&fresh.store, &fresh.listings).expect("rebuild");
        answers(&fresh)
    }

    #[test]
    fn a_job_held_between_chunks_lets_a_merge_in_and_ends_with_its_store_and_indexes_whole() {
        use crate::jobs::import::fixtures::EmbeddedFixtures;
        use crate::jobs::ingest::ingest_controlled;
        use crate::jobs::progress::{JobControl, TestPacing};
        use crate::jobs::snapshot_rules::SnapshotRules;
        const CHUNK: usize = 7;
        let dir = tempfile::tempdir().expect("dir");
        let writer = fixture_writer(dir.path());
        let store = writer.store.clone();
        let feed = EmbeddedFixtures::text("listings/chrono24.jsonl").expect("feed");
        let (recorded, seen) = std::sync::mpsc::channel();
        let control = JobControl::recording(move |done, _| {
            let _ = recorded.send(done);
        })
        .paced(TestPacing {
            chunk_listings: Some(CHUNK),
            hold_after_chunks: Some(1),
            resume_after_writes: Some(1),
            hold_listing_mover: false,
        });
        let rules = SnapshotRules::default();
        let (gone, merged, merged_at, ingested) = std::thread::scope(|scope| {
            let job = scope.spawn(|| {
                writer.run(|turn| {
                    ingest_controlled(turn, "chrono24", "feed", feed.as_bytes(), &rules, &control)
                })
            });
            assert_eq!(seen.iter().find(|&done| done > 0), Some(CHUNK as u64));
            // A model the committed chunk matched, merged into another of its brand.
            let matched = store
                .listings()
                .all_listings()
                .find_map(|l| l.expect("listing").model_id)
                .expect("a listing of the first chunk is matched");
            let model = store
                .catalogue()
                .model(matched)
                .expect("read")
                .expect("model");
            let keeper = store
                .catalogue()
                .all_models()
                .map(|m| m.expect("model"))
                .find(|m| m.brand_id == model.brand_id && m.id != model.id)
                .expect("another model of the brand");
            let merge = writer
                .run(|turn| {
                    let merged = crate::jobs::merge::merge(
                        turn,
                        &writer.listings,
                        &crate::jobs::users::Actor::Cli,
                        keeper.id,
                        &[model.id],
                    )?;
                    Ok::<_, crate::jobs::merge::MergeError>((merged, store.generation()?))
                })
                .expect("the merge goes in while the job holds");
            let ingested = job.join().expect("job").expect("the job finishes");
            (model.id, merge.value.0, merge.value.1, ingested)
        });
        let written = ingested.value.written;
        assert!(merged.moved_listings > 0, "the chunk's listings moved");
        assert!(
            merged_at.0 < written.generation.0,
            "the merge came in before the job's last chunk"
        );
        assert!(written.commits > 2, "the job went on after the merge");
        assert!(
            store
                .listings()
                .all_listings()
                .all(|l| l.expect("listing").model_id != Some(gone)),
            "no listing of the later chunks matched the merged model"
        );
        let (made, kept) = crate::jobs::listing_writes::counts(&store);
        assert_eq!(kept, made, "every count is the listings'");
        assert!(!store.listings().listing_counts_held().expect("mark"));
        assert!(reindex::listings_are_current(&store, &writer.listings).expect("current"));
        assert!(reindex::catalogue_is_current(&store, &writer.catalogue).expect("current"));
        assert_eq!(answers(&writer), answers_rebuilt(&writer));
    }
}
