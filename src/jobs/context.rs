//! What a job may reach, and all it may: the one writer (and through it the store and both
//! indexes), the media store, the pictures a person waits for and the image worker's paused
//! hosts, the duplicate groups kept between requests, the rates the price series convert at,
//! and the server's job queue. The app layer owns it; jobs never see the app.

use super::batch::Batch;
use super::duplicates::{DuplicateGroups, Group};
use super::picture_hosts::HostPauses;
use super::pictures::UrgentPictures;
use super::price_series::KeptRates;
use super::queue::{Jobs, SpoolFile, SubmitError};
use super::users::Actor;
use super::writer::Writer;
use crate::domain::{JobId, JobRecord};
use crate::media::MediaStore;
use crate::store::{Store, StoreResult};
use catalogue_index::ListingIndex;
use std::sync::{Arc, OnceLock};

/// The handle every job, the job queue and the image worker work through.
pub struct JobContext {
    writer: Writer,
    media: MediaStore,
    urgent_pictures: UrgentPictures,
    /// The server's image worker's paused hosts, once it runs.
    picture_hosts: OnceLock<Arc<HostPauses>>,
    duplicate_groups: DuplicateGroups,
    series_rates: KeptRates,
    queue: Jobs,
}

impl JobContext {
    /// A context writing through `writer`, fetching pictures into `media`, spooling posted
    /// snapshots under `spool`.
    pub fn new(writer: Writer, media: MediaStore, spool: std::path::PathBuf) -> JobContext {
        JobContext {
            writer,
            media,
            urgent_pictures: UrgentPictures::default(),
            picture_hosts: OnceLock::new(),
            duplicate_groups: DuplicateGroups::default(),
            series_rates: KeptRates::default(),
            queue: Jobs::new(spool),
        }
    }

    /// Every change to the store and indexes goes through it.
    pub fn writer(&self) -> &Writer {
        &self.writer
    }

    pub fn store(&self) -> &Store {
        self.writer.store()
    }

    pub fn listings(&self) -> &Arc<ListingIndex> {
        self.writer.listings()
    }

    /// The fetched and cropped pictures (`<data dir>/media`).
    pub fn media(&self) -> &MediaStore {
        &self.media
    }

    /// Pictures a person is waiting for: the image worker takes them first.
    pub fn urgent_pictures(&self) -> &UrgentPictures {
        &self.urgent_pictures
    }

    /// Shows `hosts` (the server's image worker's) to [`JobContext::picture_hosts`]; the first
    /// worker shown stays: a server runs one.
    pub fn show_picture_hosts(&self, hosts: Arc<HostPauses>) {
        let _ = self.picture_hosts.set(hosts);
    }

    /// The hosts the server's image worker has paused, and the pictures it left for them; `None`
    /// while no worker runs.
    pub fn picture_hosts(&self) -> Option<&HostPauses> {
        self.picture_hosts.get().map(|hosts| &**hosts)
    }

    /// The stored ECB days as price series convert with them, kept between folds and
    /// requests.
    pub fn series_rates(&self) -> &KeptRates {
        &self.series_rates
    }

    /// Batch jobs submitted to the server, run one at a time through the writer.
    pub fn queue(&self) -> &Jobs {
        &self.queue
    }

    /// Records `batch` as queued by `actor`, with its audit entry, and queues it (see
    /// [`Jobs::submit`]).
    pub fn submit(
        &self,
        actor: &Actor,
        batch: Batch,
        spooled: Option<SpoolFile>,
    ) -> Result<JobRecord, SubmitError> {
        self.queue.submit(self, actor, batch, spooled)
    }

    /// A job's record, with the live progress when it is the one running.
    pub fn job(&self, id: JobId) -> StoreResult<Option<JobRecord>> {
        self.queue.job(self, id)
    }

    /// The duplicate finder's groups as the store's pairs stand.
    pub fn duplicate_groups(&self) -> StoreResult<Arc<Vec<Arc<Group>>>> {
        self.duplicate_groups.of(self.store())
    }

    /// Reads the duplicate groups the store keeps, unless groups are held already.
    pub fn read_kept_duplicate_groups(&self) -> StoreResult<()> {
        self.duplicate_groups.read_as_kept(self.store())
    }

    /// Has the store keep the duplicate groups as they stand, for the next start to read.
    pub fn keep_duplicate_groups(&self) {
        self.duplicate_groups.keep(self.store());
    }
}

/// For tests: a context over the store in `dir`, the bundled fixtures imported when the store
/// is new (an existing one is opened as a restart would), and indexes in memory, current.
#[cfg(test)]
pub(crate) fn fixture_context(dir: &std::path::Path) -> JobContext {
    let fresh = !dir.join("store").exists();
    let context = test_context(dir);
    if fresh {
        crate::jobs::import::fixtures::import_fixtures(&context.store().write_turn(), dir);
    }
    context.writer().catch_up().expect("catch up");
    context
}

/// For tests: a context over a new store in `dir` and indexes in memory.
#[cfg(test)]
pub(crate) fn test_context(dir: &std::path::Path) -> JobContext {
    use catalogue_index::CatalogueIndex;
    let store = Store::open(&dir.join("store"), 1 << 22).expect("store");
    let catalogue = Arc::new(CatalogueIndex::in_memory().expect("index"));
    let listings = Arc::new(ListingIndex::in_memory().expect("index"));
    JobContext::new(
        Writer::new(store, catalogue, listings),
        MediaStore::new(dir.join("media")),
        dir.join("spool"),
    )
}
