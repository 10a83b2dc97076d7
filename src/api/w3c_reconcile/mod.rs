//! The W3C Entity Reconciliation API 0.2 under `/reconcile` (what OpenRefine speaks): public,
//! cross-origin, answering spreadsheets' rows with catalogue models. Not the back office's
//! `/reconciliation` of unmatched listings (`api::back_office::reconciliation`).

mod entity;
mod extend;
mod manifest;
mod preview;
mod query_batch;
mod query_candidates;
mod service;
mod suggest;

pub use extend::propose_properties;
pub use preview::preview;
pub use service::{reconcile_get, reconcile_post, ServiceParams};
// utoipa's path macros generate these beside each handler.
pub use extend::__path_propose_properties;
pub use preview::__path_preview;
pub use service::{__path_reconcile_get, __path_reconcile_post};
pub use suggest::{__path_suggest_entity, __path_suggest_property, __path_suggest_type};
pub use suggest::{suggest_entity, suggest_property, suggest_type};

/// Where the service lives, relative to the version prefix.
pub const SERVICE_PATH: &str = "/reconcile";
