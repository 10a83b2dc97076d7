//! What a job may reach, and all it may: the one writer (and through it the store and both
//! indexes), the media store, the pictures a person waits for, the duplicate groups kept between
//! requests, the rates the price series convert at, and the server's job queue. The app layer owns it; jobs never see the app.

use super::batch::Batch;
use super::duplicates::{DuplicateGroups, Group};
use super::pictures::UrgentPictures;
use super::price_series::KeptRates;
use super::queue::{Jobs, SpoolFile, SubmitError};
use super::users::Actor;
use super::writer::Writer;
use crate::domain::{JobId, JobRecord};
use crate::media::MediaStore;
use crate::store::{Store, StoreResult};
use catalogue_index::ListingIndex;
use std::sync::Arc;

/// The handle every job, the job queue and the image worker work through.
pub struct JobContext {
    writer: Writer,
    media: MediaStore,
    urgent_pictures: UrgentPictures,
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

    /// Has the store keep the duplicate groups as they stand, for the next start to read.
    pub fn keep_duplicate_groups(&self) {
        self.duplicate_groups.keep(self.store());
    }
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
