//! Integration tests over a real server on 127.0.0.1:0, one test binary for all of them.

mod admin;
mod brands;
mod calibers;
mod capacity;
mod cli;
mod contract;
mod duplicate_finder;
mod duplicates;
mod fuzz;
mod ingest;
mod jobs;
mod listings;
mod migrate;
mod model_search;
mod models;
mod openapi;
mod picture_review;
mod pictures;
mod protocol;
mod rates;
mod real_listings;
mod reconciliation;
mod sitemap;
mod startup;
mod support;
mod w3c_reconcile;
