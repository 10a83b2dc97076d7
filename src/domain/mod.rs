//! The catalogue's vocabulary: ids, slugs, references, timestamps, the stored records and the
//! ECB rates with the conversion table derived from them ([`rates`]).
//! Pure data and rules, no I/O: the store, the jobs and the API all speak these types.

mod causes;
mod duplicates;
mod fnv;
mod ids;
mod jobs;
mod json_keys;
mod listing;
mod picture_review;
mod pictures;
pub mod price_history;
pub mod price_series;
mod price_stats;
pub mod rates;
mod reconciliation;
mod records;
mod reference;
mod seller_text;
mod slug;
mod timestamp;
mod users;

pub use causes::causes;
pub use duplicates::{DuplicateGroup, DuplicatePair, DuplicateSignal};
pub use fnv::Fnv1a;
pub use ids::{
    BrandId, CaliberId, CandidateId, ComplicationId, IdError, JobId, ListingId, ModelId, PictureId,
    ProviderId, SeriesId,
};
pub use jobs::{JobKind, JobProgress, JobRecord, JobState};
pub use json_keys::repeated_key;
#[cfg(test)]
pub(crate) use listing::matched_listing;
pub use listing::{
    Availability, BoxPapers, Condition, Listing, ListingDetails, ListingPicture, ListingStatus,
    Match, MatchOutcome, StatusChange,
};
pub use picture_review::{
    CandidateOrigin, Look, PictureCandidate, PictureReview, ReviewStatus, Reviewed,
};
pub use pictures::{ContentHash, FetchState, Fetched, ImageFormat, PictureRecord};
pub use price_stats::price_figures;
pub use reconciliation::{ClaimedBrand, ClaimedIdentity, GroupKey, GroupTally};
pub use records::{
    Brand, Caliber, Complication, Model, ModelSpec, Picture, PictureType, Provider, Series,
};
pub use reference::{normalize_reference, reference_base};
pub use seller_text::{text_runs, TextRun};
pub use slug::{Slug, SlugError};
pub use timestamp::Timestamp;
pub use users::{AuditEntry, Role, Session, TokenHash, User, Username, UsernameError};
