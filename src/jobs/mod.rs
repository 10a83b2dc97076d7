//! Batch jobs that write the store: `import` of a dataset directory, provider snapshot
//! `ingest`, re-`match`ing, loading `rates`, `reindex`, and the back office's writes (`users`,
//! `reconciliation`, `picture_review`, `merge`), the image worker (`pictures`) and the
//! `listing_candidates` it ranks for picture review. Each runs inside the one
//! [`writer::Writer`] of its data dir, whether the CLI or the server started it, and reaches
//! nothing but what its [`context::JobContext`] holds.

pub mod batch;
pub mod context;
pub mod dataset;
pub mod duplicates;
pub mod import;
pub mod ingest;
pub mod listing_candidates;
pub mod listing_load;
pub mod listing_writes;
pub mod loaded_catalogue;
pub mod matching;
pub mod merge;
pub mod nearest_models;
pub mod picture_review;
pub mod pictures;
pub mod progress;
pub mod queue;
pub mod rates;
pub mod reconciliation;
pub mod reindex;
pub mod snapshot_rules;
pub mod users;
pub mod w3c_candidates;
pub mod writer;
