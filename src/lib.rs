//! The watch catalogue service.
//!
//! sled is the store of record ([`store`]); every write lands there first, as one atomic batch
//! that bumps a generation counter. tantivy (crate `catalogue-index`) holds derived data: it is
//! rebuilt from sled by [`jobs::reindex`] with rayon, and each index commit records the store
//! generation it reflects, so a server never answers from an index behind its store. The
//! [`api`] handlers validate a query, ask the index for ids, totals and stats, then read the
//! records from sled. [`domain`] holds the vocabulary all of them share.

pub mod api;
pub mod app;
pub mod auth;
pub mod clock;
pub mod connections;
pub mod console;
pub mod data_dir;
pub mod domain;
pub mod jobs;
pub mod media;
pub mod server;
pub mod store;

#[cfg(test)]
mod layering;
