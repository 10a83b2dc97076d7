//! Batch jobs that write the store: `import` of a dataset directory, provider snapshot
//! `ingest`, re-`match`ing, loading `rates`, `reindex`, and the back office's writes (`users`,
//! `reconciliation`, `picture_review`, `merge`), the image worker (`pictures`, its pauses per
//! host `picture_hosts`) and the `listing_candidates` it ranks for picture review, and the
//! folder of models' price series (`series_folder`, over `price_series`), and the
//! `listing_mover` that moves a large merge's listings after it answers. Each runs inside the one
//! [`writer::Writer`] of its data dir, whether the CLI or the server started it, and reaches
//! nothing but what its [`context::JobContext`] holds.

pub mod batch;
pub mod context;
pub mod dataset;
pub mod doorbell;
pub mod duplicates;
pub mod import;
pub mod ingest;
pub mod listing_candidates;
pub mod listing_load;
pub mod listing_mover;
pub mod listing_writes;
pub mod loaded_catalogue;
pub mod matching;
pub mod merge;
pub mod nearest_models;
pub mod picture_hosts;
pub mod picture_review;
pub mod pictures;
pub mod price_series;
pub mod priority;
pub mod progress;
pub mod queue;
pub mod rates;
pub mod read_pool;
pub mod reconciliation;
pub mod reindex;
pub mod series_folder;
pub mod snapshot_rules;
pub mod unmatched_groups;
pub mod users;
pub mod w3c_candidates;
pub mod writer;

/// `text` searched as typed (no typo tolerance), its reference form beside it: what a search
/// the back office or the reconciliation service runs for a person's words asks the indexes.
pub fn typed_text(text: &str) -> catalogue_index::TextQuery {
    catalogue_index::TextQuery {
        typo_tolerance: false,
        text: text.to_owned(),
        normalized_reference: crate::domain::normalize_reference(text),
    }
}
