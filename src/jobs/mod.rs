//! Batch jobs that write the store and rebuild the index: `import` of a dataset directory and
//! `reindex`. Each runs on a data dir no server holds (sled locks it).

pub mod import;
pub mod ingest;
pub mod listing_writes;
pub mod matching;
pub mod reindex;
