//! The listings index written while a large write is written: one long-lived index writer
//! (`ListingLoad`) is fed the listings of each store commit as it lands, on a thread of its
//! own beside sled's apply, and committed once when the job ends, with the generation of its
//! last store commit; its segments are merged once. Before, a write touching over a quarter
//! of the index rebuilt it from the store afterwards (every snapshot of a 10M-listing load),
//! and a smaller one read every listing written back from the store.
//!
//! Crash rule: nothing of the load is visible until its one commit, so a crash part-way leaves
//! the index at its generation before the job, behind the store: the next start rebuilds it,
//! and the snapshot run again completes the store (docs/decisions.md, D-33). A job that lets
//! other writers in between its chunks commits its load first, and loads again after them
//! ([`IndexLoad::again`]): one commit and one merge per part.

use super::reindex::{listing_doc, ReindexReport};
use crate::domain::rates::ConversionTable;
use crate::store::{Changes, ListingSink, ListingWrite};
use catalogue_index::{IndexError, ListingIndex, ListingLoad};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Listings written before the index writer is made: below this, a job's listings are taken
/// into the index afterwards, by id, as before (making a writer of every core's arenas costs
/// more than a few documents).
pub const LOAD_FROM_LISTINGS: usize = 10_000;

/// Store commits' listings waiting for the index thread at most. The index thread takes no
/// document while it flushes a segment (seconds at millions of listings): with room for two
/// commits the write stalled behind each flush; with eight it goes on, and the index thread
/// works through the queue afterwards (docs/decisions.md, D-33). The bound caps memory at about
/// 100 MB more.
const QUEUED_COMMITS: usize = 8;

/// A listing sink feeding one [`ListingLoad`], made once enough listings were committed.
pub struct IndexLoad {
    index: Arc<ListingIndex>,
    /// The rates the load prices listings through.
    table: Mutex<Option<ConversionTable>>,
    /// Listings committed before the writer is made.
    start_at: usize,
    state: Mutex<State>,
    /// Listings the sink was told of, `Same` ones included: the turn's count of listing
    /// writes, when every one went through the sink.
    told: AtomicUsize,
}

enum State {
    /// Too few listings yet for a writer of their own.
    Waiting(Vec<ListingWrite>),
    Feeding {
        queue: SyncSender<Vec<ListingWrite>>,
        worker: JoinHandle<Result<ListingLoad, IndexError>>,
    },
    /// The index writer failed: the index is brought up afterwards, as without a load.
    Failed,
    Finished,
}

impl IndexLoad {
    /// A load into `index`, pricing listings through `table` (the rates in force: a job that
    /// changes them is indexed by a rebuild instead).
    pub fn new(index: Arc<ListingIndex>, table: Option<ConversionTable>) -> IndexLoad {
        IndexLoad {
            index,
            table: Mutex::new(table),
            start_at: LOAD_FROM_LISTINGS,
            state: Mutex::new(State::Waiting(Vec::new())),
            told: AtomicUsize::new(0),
        }
    }

    /// The same load, its writer made once `listings` were committed (tests load a few).
    pub fn starting_at(mut self, listings: usize) -> IndexLoad {
        self.start_at = listings.max(1);
        self
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts the writer and its thread, handing it what waited.
    fn start(&self, waiting: Vec<ListingWrite>) -> State {
        let mut load = match self.index.load() {
            Ok(load) => load,
            Err(error) => {
                tracing::warn!(%error, "opening the listings index for a load; indexing after the write instead");
                return State::Failed;
            }
        };
        let (queue, commits) = sync_channel::<Vec<ListingWrite>>(QUEUED_COMMITS);
        let table = self
            .table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        let worker = std::thread::Builder::new()
            .name("listing-load".into())
            .spawn(move || {
                add_all(&mut load, &waiting, table.as_ref())?;
                for written in commits {
                    add_all(&mut load, &written, table.as_ref())?;
                }
                Ok(load)
            });
        match worker {
            Ok(worker) => State::Feeding { queue, worker },
            Err(error) => {
                tracing::warn!(%error, "starting the listings load thread");
                State::Failed
            }
        }
    }

    /// Commits the load when it holds exactly what the turn wrote to listings; what it did, or
    /// `None` when the index is to be brought up as without a load (nothing was loaded, the
    /// writer failed, or something wrote listings around the sink).
    pub fn finish(&self, changes: &Changes) -> Option<ReindexReport> {
        let state = std::mem::replace(&mut *self.state(), State::Finished);
        let State::Feeding { queue, worker } = state else {
            return None;
        };
        drop(queue);
        let load = match worker.join() {
            Ok(Ok(load)) => load,
            Ok(Err(error)) => {
                tracing::warn!(%error, "loading listings into the index; indexing after the write instead");
                return None;
            }
            Err(_) => {
                tracing::error!(
                    "the listings load thread panicked; indexing after the write instead"
                );
                return None;
            }
        };
        let whole = self.told.load(Ordering::Acquire) == changes.listings.len()
            && changes.is_contiguous()
            && !changes.rates;
        if !whole {
            return None;
        }
        let generation = changes.generation.0;
        match load.commit(&self.index, generation) {
            Ok(documents) => Some(ReindexReport {
                documents,
                generation,
            }),
            Err(error) => {
                tracing::warn!(%error, "committing the listings load; indexing after the write instead");
                None
            }
        }
    }
}

impl IndexLoad {
    /// A load of the listings written from now on, after [`IndexLoad::finish`] committed the
    /// last one's (and other writers wrote), pricing them through `table`.
    pub fn again(&self, table: Option<ConversionTable>) {
        *self
            .table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = table;
        self.told.store(0, Ordering::Release);
        *self.state() = State::Waiting(Vec::new());
    }

    /// No load of the listings written from now on: they are indexed after the write, by id
    /// or by a rebuild (the index fell behind, or the rates moved, while others wrote).
    pub fn give_up(&self) {
        *self.state() = State::Failed;
    }
}

impl ListingSink for IndexLoad {
    fn committed(&self, written: Vec<ListingWrite>) {
        self.told.fetch_add(written.len(), Ordering::AcqRel);
        let mut state = self.state();
        match &mut *state {
            State::Waiting(waiting) => {
                waiting.extend(written);
                if waiting.len() >= self.start_at {
                    let waiting = std::mem::take(waiting);
                    *state = self.start(waiting);
                }
            }
            State::Feeding { queue, .. } => {
                // Sending fails only when the thread ended on an error: `finish` reports it.
                let _ = queue.send(written);
            }
            State::Failed | State::Finished => {}
        }
    }
}

/// Adds each written listing's document: new ones without a delete, changed ones over their
/// old document.
fn add_all(
    load: &mut ListingLoad,
    written: &[ListingWrite],
    table: Option<&ConversionTable>,
) -> Result<(), IndexError> {
    for write in written {
        match write {
            ListingWrite::Created(listing) => load.add(&listing_doc(listing, table))?,
            ListingWrite::Changed(listing) => load.replace(&listing_doc(listing, table))?,
            ListingWrite::Same => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::import::fixtures::EmbeddedFixtures;
    use crate::jobs::ingest::ingest;
    use crate::jobs::reindex::{listings_are_current, rebuild_listings};
    use crate::jobs::snapshot_rules::SnapshotRules;
    use crate::jobs::writer::Writer;
    use crate::store::Store;
    use catalogue_index::{CatalogueIndex, ListingFilters, ListingQuery, ListingSort};

    fn feed(file: &str) -> String {
        EmbeddedFixtures::text(file).expect("bundled").to_owned()
    }

    /// The fixtures' catalogue and rates, no listing, and a listings index current with it.
    fn catalogue(dir: &std::path::Path) -> (Store, Arc<ListingIndex>) {
        let store = Store::open(dir, 1 << 22).expect("store");
        crate::jobs::import::fixtures::import_fixtures(&store.write_turn(), dir);
        let index = Arc::new(ListingIndex::in_memory().expect("index"));
        rebuild_listings(&store, &index).expect("rebuild");
        (store, index)
    }

    /// What an index answers to a few lists: every listing by id, the unmatched ones, by price.
    fn answers(index: &ListingIndex) -> Vec<(Vec<u64>, usize)> {
        let unmatched = ListingFilters {
            unmatched: true,
            ..ListingFilters::default()
        };
        [
            (ListingFilters::default(), ListingSort::Oldest),
            (unmatched, ListingSort::Newest),
            (ListingFilters::default(), ListingSort::PriceAsc),
        ]
        .into_iter()
        .map(|(filters, sort)| {
            let query = ListingQuery {
                text: None,
                filters,
                sort,
                offset: 0,
                limit: 100_000,
            };
            let hits = index.search(&query).expect("search");
            (hits.ids, hits.total)
        })
        .collect()
    }

    fn rebuilt(store: &Store) -> Vec<(Vec<u64>, usize)> {
        let fresh = ListingIndex::in_memory().expect("index");
        rebuild_listings(store, &fresh).expect("rebuild");
        answers(&fresh)
    }

    /// Ingests `text` as chrono24's snapshot in a turn whose listings go to a load, left
    /// unfinished; what the turn changed.
    fn ingest_with_load(
        store: &Store,
        index: &Arc<ListingIndex>,
        text: &str,
    ) -> (Arc<IndexLoad>, Changes) {
        let table = store.rates().table_in_force().expect("rates");
        let load = Arc::new(IndexLoad::new(index.clone(), table).starting_at(1));
        let mut turn = store.write_turn();
        turn.set_listing_sink(load.clone());
        let feed = text.as_bytes();
        ingest(&turn, "chrono24", "feed", feed, &SnapshotRules::default()).expect("ingest");
        (load, turn.changes())
    }

    /// [`ingest_with_load`], the load finished.
    fn ingest_loading(
        store: &Store,
        index: &Arc<ListingIndex>,
        text: &str,
    ) -> Option<ReindexReport> {
        let (load, changes) = ingest_with_load(store, index, text);
        load.finish(&changes)
    }

    #[test]
    fn a_load_indexes_what_a_rebuild_indexes_for_new_changed_and_delisted_listings() {
        let dir = tempfile::tempdir().expect("dir");
        let (store, index) = catalogue(dir.path());
        let text = feed("listings/chrono24.jsonl");
        let loaded = ingest_loading(&store, &index, &text).expect("loaded");
        assert!(loaded.documents > 20);
        assert_eq!(loaded.generation, store.generation().expect("generation").0);
        assert!(listings_are_current(&store, &index).expect("current"));
        assert_eq!(answers(&index), rebuilt(&store));

        // A revisit: ten listings gone (delisted), one repriced, the rest refreshed unchanged.
        let mut lines: Vec<String> = text.lines().skip(10).map(str::to_owned).collect();
        lines[0] = lines[0].replacen("\"price\":", "\"price\":1", 1);
        let loaded = ingest_loading(&store, &index, &lines.join("\n")).expect("loaded");
        assert_eq!(
            loaded.documents, 11,
            "the delisted and the repriced, not the refreshed"
        );
        assert_eq!(answers(&index), rebuilt(&store));
    }

    #[test]
    fn a_writer_job_whose_listings_are_loaded_brings_both_indexes_up_to_it() {
        let dir = tempfile::tempdir().expect("dir");
        let (store, index) = catalogue(dir.path());
        let catalogue = Arc::new(CatalogueIndex::in_memory().expect("index"));
        let writer = Writer::new(store.clone(), catalogue.clone(), index.clone()).loading_from(1);
        writer.catch_up().expect("catch up");
        let run = |text: &str| {
            writer
                .run(|turn| {
                    ingest(
                        turn,
                        "chrono24",
                        "feed",
                        text.as_bytes(),
                        &SnapshotRules::default(),
                    )
                })
                .expect("ingest")
                .indexed
        };
        let text = feed("listings/chrono24.jsonl");
        let first = run(&text);
        assert!(first.listings.documents > 20);
        assert_eq!(answers(&index), rebuilt(&store));
        // The catalogue index was brought up beside the load: its models' listing counts are
        // the store's, as a rebuild of it reads them.
        assert!(first.catalogue.documents > 0);
        let listed = |index: &CatalogueIndex| {
            let everything = catalogue_index::Filters::default();
            index.model_stats(&everything).expect("stats").listing_count
        };
        let listed_after_rebuild = || {
            let fresh = CatalogueIndex::in_memory().expect("index");
            crate::jobs::reindex::rebuild(&store, &fresh).expect("rebuild");
            listed(&fresh)
        };
        assert!(listed(&catalogue) > 0);
        assert_eq!(listed(&catalogue), listed_after_rebuild());

        // Only a load reports just the rewritten documents of a revisit (a patch names every
        // listing the job touched): the load's report is the one the writer returns.
        let lines: Vec<&str> = text.lines().skip(10).collect();
        let revisit = run(&lines.join("\n"));
        assert_eq!(
            revisit.listings.documents, 10,
            "the delisted, not the refreshed"
        );
        assert_eq!(answers(&index), rebuilt(&store));
        assert_eq!(listed(&catalogue), listed_after_rebuild());
    }

    #[test]
    fn a_crash_before_the_load_commits_leaves_the_index_behind_and_a_rerun_completes_it() {
        let dir = tempfile::tempdir().expect("dir");
        let (store, index) = catalogue(dir.path());
        let before = (index.generation().expect("generation"), index.len());
        let text = feed("listings/chrono24.jsonl");
        // The process dies after the job: the store has the snapshot, the load never committed.
        drop(ingest_with_load(&store, &index, &text));
        assert_eq!(
            (index.generation().expect("generation"), index.len()),
            before,
            "nothing of the load is visible"
        );
        assert!(
            !listings_are_current(&store, &index).expect("current"),
            "marked behind"
        );

        // The next start catches up, and the snapshot run again finds every listing there.
        let catalogue = Arc::new(CatalogueIndex::in_memory().expect("index"));
        let writer = Writer::new(store.clone(), catalogue, index.clone());
        writer.catch_up().expect("catch up");
        let again = writer
            .run(|turn| {
                ingest(
                    turn,
                    "chrono24",
                    "feed",
                    text.as_bytes(),
                    &SnapshotRules::default(),
                )
            })
            .expect("again");
        assert_eq!(again.value.created, 0);
        assert!(listings_are_current(&store, &index).expect("current"));
        assert_eq!(answers(&index), rebuilt(&store));
    }
}
