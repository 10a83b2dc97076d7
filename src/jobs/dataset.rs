//! A dataset directory imported whole, as `watch-catalogue import DIR` and the first start on
//! the bundled fixtures do it: the catalogue all or nothing, then the snapshot of each provider
//! that the dataset carries (`listings/SLUG.jsonl`), each ingested as its own write, in chunks
//! a stop (SIGTERM) ends the import between.

use super::import::{import_counted, DatasetSource, ImportError, ImportReport};
use super::ingest::{ingest_dataset_feeds_controlled, IngestError, IngestReport};
use super::progress::JobControl;
use super::snapshot_rules::SnapshotRules;
use crate::domain::Timestamp;
use crate::media::MediaStore;
use crate::store::WriteTurn;

/// What importing a dataset did.
pub struct DatasetImport {
    pub catalogue: ImportReport,
    /// Each provider's ingest, by provider slug.
    pub feeds: Vec<(String, IngestReport)>,
}

/// Why a dataset import stopped: its catalogue wrote nothing, or a snapshot was refused (the
/// catalogue and the snapshots before it stay written).
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error(transparent)]
    Catalogue(#[from] ImportError),
    #[error(transparent)]
    Listings(#[from] IngestError),
}

impl DatasetError {
    /// True when the import stopped at a refusal that wrote nothing of its own (the dataset
    /// invalid or unreadable, a snapshot refused): what was written before is whole. False when
    /// a write failed part-way.
    pub fn is_refusal(&self) -> bool {
        match self {
            DatasetError::Catalogue(error) => !matches!(error, ImportError::Store(_)),
            DatasetError::Listings(IngestError::Feed { error, .. }) => matches!(
                **error,
                IngestError::Refused { .. } | IngestError::UnknownProvider(_)
            ),
            DatasetError::Listings(_) => false,
        }
    }
}

/// Imports `source`: its catalogue, then its providers' snapshots (taken at `observed_at`, or
/// now), counted into `control` and stopped between two chunks when it is told to.
pub fn import_dataset(
    turn: &WriteTurn<'_>,
    source: &dyn DatasetSource,
    media: &MediaStore,
    observed_at: Option<Timestamp>,
    control: &JobControl,
) -> Result<DatasetImport, DatasetError> {
    let catalogue = import_counted(turn, source, Some(media), control)?;
    let rules = SnapshotRules {
        observed_at,
        ..SnapshotRules::default()
    };
    let feeds = ingest_dataset_feeds_controlled(turn, source, &rules, control)?;
    Ok(DatasetImport { catalogue, feeds })
}
