//! The back office's bodies: counts, unmatched listings and the audit trail (`/admin`), batch
//! jobs, sessions, reconciliation groups and what a reconciliation wrote, the picture-review
//! queue and FRONT pictures, duplicate-model groups and what a merge or dismissal did.

use super::{EntityRef, ListingView, ModelListItem};
use crate::domain::JobRecord;
use serde::Serialize;

/// The catalogue's counts at the moment of the request.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminStats {
    pub brands: u64,
    pub series: u64,
    pub models: u64,
    pub calibers: u64,
    pub providers: u64,
    /// Listings not DELISTED.
    pub listings: u64,
    /// Listings not DELISTED and matched to no model.
    pub unmatched_listings: u64,
}

/// An unmatched listing: the listing shape, and why it matched no model.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnmatchedListing {
    #[serde(flatten)]
    pub listing: ListingView,
    /// unknownBrand, unknownReference, ambiguous or noReference.
    pub unmatched_reason: &'static str,
}

/// A back-office user, without anything of the password.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub name: String,
    /// admin or viewer.
    pub role: &'static str,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// RFC 3339, UTC: the last change of role or password.
    pub updated_at: String,
}

impl From<crate::domain::User> for UserView {
    fn from(user: crate::domain::User) -> UserView {
        UserView {
            name: user.name.to_string(),
            role: user.role.as_str(),
            created_at: user.created_at.to_rfc3339(),
            updated_at: user.updated_at.to_rfc3339(),
        }
    }
}

/// Every back-office user, by name.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UserList {
    pub data: Vec<UserView>,
}

/// What removing a user did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemovedUser {
    pub name: String,
    /// The user's sessions ended with the removal.
    pub sessions_ended: usize,
}

/// One back-office write.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntryView {
    pub id: String,
    /// RFC 3339, UTC.
    pub at: String,
    pub user: String,
    pub action: String,
    /// The ids touched, as `kind:id`.
    pub targets: Vec<String>,
    pub detail: String,
}

impl From<crate::domain::AuditEntry> for AuditEntryView {
    fn from(entry: crate::domain::AuditEntry) -> AuditEntryView {
        AuditEntryView {
            id: entry.id.to_string(),
            at: entry.at.to_rfc3339(),
            user: entry.user,
            action: entry.action,
            targets: entry.targets,
            detail: entry.detail,
        }
    }
}

/// The signed-in user.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SessionView {
    #[schema(example = "ana")]
    pub username: String,
    /// `admin` or `viewer`.
    #[schema(example = "admin")]
    pub role: &'static str,
}

/// A batch job and where it stands.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobView {
    #[schema(example = "7")]
    pub id: String,
    /// snapshot, rates, match, reindex or duplicates.
    #[schema(example = "snapshot")]
    pub kind: &'static str,
    /// The provider's slug of a snapshot, the index of a reindex.
    #[schema(example = "chrono24")]
    pub subject: Option<String>,
    /// queued, running, succeeded, failed or interrupted.
    #[schema(example = "running")]
    pub state: &'static str,
    pub progress: JobProgressView,
    #[schema(example = "ana")]
    pub submitted_by: String,
    #[schema(example = "2026-11-24T09:04:04.523Z")]
    pub submitted_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// What `watch-catalogue` prints for the same work, one line per fact; a refused
    /// snapshot's first problems.
    pub report: Option<String>,
    /// Why the job failed or stopped.
    pub error: Option<String>,
}

/// `done` of `total` `unit`s; 0 of 0 until known (only a snapshot counts as it goes).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct JobProgressView {
    #[schema(example = 50000)]
    pub done: u64,
    #[schema(example = 120000)]
    pub total: u64,
    #[schema(example = "listings")]
    pub unit: String,
}

impl From<JobRecord> for JobView {
    fn from(job: JobRecord) -> JobView {
        JobView {
            id: job.id.to_string(),
            kind: job.kind.as_str(),
            subject: job.subject,
            state: job.state.as_str(),
            progress: JobProgressView {
                done: job.progress.done,
                total: job.progress.total,
                unit: job.progress.unit,
            },
            submitted_by: job.submitted_by,
            submitted_at: job.submitted_at.to_rfc3339(),
            started_at: job.started_at.map(|t| t.to_rfc3339()),
            finished_at: job.finished_at.map(|t| t.to_rfc3339()),
            report: job.report,
            error: job.error,
        }
    }
}

/// Unmatched listings whose sellers claim one identity: brand and reference.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconciliationGroup {
    /// Stable while the identity is: what the write operations take.
    #[schema(example = "8bcf32a792c9e612")]
    pub id: String,
    /// `{id, name, slug}` of the brand matching resolved, the seller's brand text when it
    /// resolved none, or null when the seller named none (or two).
    pub brand: Option<ClaimedBrandView>,
    /// The sellers' reference, normalised (letters and digits, lowercase); null when they gave
    /// none.
    #[schema(example = "16610lv")]
    pub reference: Option<String>,
    /// The sellers' spellings of the reference, verbatim, most used first.
    #[schema(example = json!(["16610LV", "16610-LV"]))]
    pub spellings: Vec<String>,
    /// Why most of the listings matched no model: unknownBrand, unknownReference, ambiguous or
    /// noReference.
    #[schema(example = "unknownReference")]
    pub reason: &'static str,
    #[schema(example = 3)]
    pub listing_count: usize,
    /// Listings per provider, most first.
    pub providers: Vec<ProviderCount>,
    #[serde(rename = "priceRangeUSD")]
    pub price_range_usd: PriceRange,
    /// Up to three distinct titles, newest first.
    #[schema(example = json!(["Rolex Submariner 16610LV Kermit"]))]
    pub example_titles: Vec<String>,
    /// The catalogue's nearest models of the same brand, best first (none when the brand is
    /// unknown).
    pub candidates: Vec<Candidate>,
}

/// The brand a group's sellers claim: a brand of the catalogue, or their text when it is none.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum ClaimedBrandView {
    Known(EntityRef),
    /// The seller's brand text, verbatim (its most used spelling).
    Text(String),
}

/// How many of a group's listings a provider published.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderCount {
    #[serde(flatten)]
    pub provider: EntityRef,
    #[schema(example = 2)]
    pub listing_count: usize,
}

/// Lowest and highest asking price in whole US dollars; null when no listing converts.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PriceRange {
    #[schema(example = 7800)]
    pub low: Option<u64>,
    #[schema(example = 9100)]
    pub high: Option<u64>,
}

/// What a reconciliation wrote.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconciledView {
    /// The model the listings are linked to, as it is now (its `listingCount` included).
    pub model: ModelListItem,
    /// The listings linked by this decision.
    #[schema(example = json!(["7", "11"]))]
    pub linked_listings: Vec<String>,
    /// Other unmatched listings that match on their own once the model was made or changed.
    #[schema(example = json!(["15"]))]
    pub matched_listings: Vec<String>,
    pub learnt: LearntView,
}

/// What the catalogue learnt of the sellers' text, so that their next listings match.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LearntView {
    /// The brand text sellers used, now an alias of the model's brand (a group of a brand the
    /// catalogue lacked); null when nothing was learnt.
    #[schema(example = "Kurofune")]
    pub brand_alias: Option<String>,
    /// The group's reference as sellers wrote it most, now one of the model's references.
    #[schema(example = "99-99")]
    pub reference: Option<String>,
}

/// A model the group's listings may be of.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    #[schema(example = "3")]
    pub id: String,
    #[schema(example = "Submariner Date")]
    pub name: String,
    #[schema(example = "16610")]
    pub reference_number: String,
    #[schema(example = "submariner-date-16610")]
    pub slug: String,
    /// Similarity from 0 to 1: of the references (normalised Levenshtein) for the reference
    /// signals, of a title and the brand and model name (Sørensen–Dice) for `name`.
    #[schema(example = 0.833)]
    pub score: f64,
    /// referencePrefix, baseReference or name: what found the model.
    #[schema(example = "baseReference")]
    pub signal: &'static str,
}

/// A model in the review queue.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewQueueItem {
    #[schema(example = "3")]
    pub id: String,
    #[schema(example = "Submariner Date")]
    pub name: String,
    #[schema(example = "126610LN")]
    pub reference_number: String,
    #[schema(example = "submariner-date-126610ln")]
    pub slug: String,
    /// The brand's name.
    #[schema(example = "Rolex")]
    pub brand: String,
    /// The image search that found the best-ranked dataset candidate; null when none did.
    #[schema(example = "Rolex 126610LN front")]
    pub query: Option<String>,
    pub pictures: Vec<ReviewPicture>,
    /// Best rank first.
    pub candidates: Vec<CandidateView>,
}

/// A model picture as review shows it: where it is shown, and whether a person protected it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewPicture {
    #[schema(example = "12")]
    pub id: String,
    #[schema(example = "/media/pictures/12")]
    pub url: String,
    /// FRONT, BACK, SIDE, DETAIL or LIFESTYLE.
    #[serde(rename = "type")]
    #[schema(example = "FRONT")]
    pub kind: &'static str,
    /// `null` until the image pipeline has cropped it.
    #[schema(example = "/media/pictures/12/cropped")]
    pub cropped_url: Option<String>,
    /// No automatic process (import, merges, candidate ranking) replaces or re-crops it.
    pub protected: bool,
}

/// A photograph proposed for the model's FRONT picture.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CandidateView {
    #[schema(example = "4")]
    pub id: String,
    /// The re-hosted copy (404 until the image worker has fetched it).
    #[schema(example = "/media/pictures/31")]
    pub url: String,
    /// Where it comes from: the page it was found on, else the image's own URL. Admin-only.
    #[schema(example = "https://www.example.com/watches/126610ln")]
    pub source_url: Option<String>,
    #[schema(example = 2000)]
    pub width: Option<u32>,
    #[schema(example = 2000)]
    pub height: Option<u32>,
    /// 1 is the best; candidates from listings rank after the dataset's.
    #[schema(example = 1)]
    pub rank: u32,
    #[schema(example = "2026-11-24T12:00:00Z")]
    pub selected_at: Option<String>,
}

/// `GET` and `PUT /picture-review/models/{id}/front-picture`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FrontPictureAnswer {
    /// Null when the model has no picture.
    pub picture: Option<FrontPicture>,
}

/// A model's FRONT picture (or its oldest) with what only admins see.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FrontPicture {
    #[serde(flatten)]
    pub picture: ReviewPicture,
    /// The URL the picture is fetched from. Admin-only.
    #[schema(example = "https://images.example.com/126610ln.jpg")]
    pub source_url: String,
    /// pending, reviewed, or none when the model is in neither list.
    #[schema(example = "reviewed")]
    pub review: &'static str,
    pub fetch: FetchView,
}

/// Where the image pipeline is with a picture.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FetchView {
    /// pending, fetched or failed; external for a picture the dataset hosts with its crop.
    #[schema(example = "fetched")]
    pub state: &'static str,
    /// Why the last attempt failed.
    pub reason: Option<String>,
    #[schema(example = 0)]
    pub attempts: u32,
    #[schema(example = 2000)]
    pub width: Option<u32>,
    #[schema(example = 2000)]
    pub height: Option<u32>,
}

/// A page of duplicate groups with the summary per kind.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateGroupPage {
    pub data: Vec<DuplicateGroup>,
    pub page: usize,
    pub page_size: usize,
    /// Groups matching the filters.
    pub total: usize,
    pub total_pages: usize,
    pub summary: KindSummary,
}

/// Groups per kind under the request's filters, `kind` aside.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KindSummary {
    pub same_reference: usize,
    pub alternate_overlap: usize,
    pub base_variant: usize,
}

/// Models that may be one watch entered twice.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateGroup {
    /// The strongest signal that formed the group: sameReference, alternateOverlap or
    /// baseVariant (a base variant is only ever a suggestion).
    #[schema(example = "sameReference")]
    pub kind: &'static str,
    /// How alike the names of the group's closest pair of its kind are, 0 to 1.
    #[schema(example = 0.96)]
    pub name_score: f64,
    /// Oldest first.
    pub models: Vec<DuplicateModel>,
}

/// A model of a duplicate group.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateModel {
    #[schema(example = "3")]
    pub id: String,
    #[schema(example = "Submariner Date")]
    pub name: String,
    #[schema(example = "126610LN")]
    pub reference_number: String,
    #[schema(example = "submariner-date-126610ln")]
    pub slug: String,
    #[schema(example = "Rolex")]
    pub brand_name: String,
    #[schema(example = "rolex")]
    pub brand_slug: String,
    pub alternate_references: Vec<String>,
    pub series: SeriesRef,
    #[schema(example = 4)]
    pub listing_count: u64,
    pub thumbnail_url: Option<String>,
    #[schema(example = "2026-11-24T09:04:04.523Z")]
    pub created_at: String,
}

/// `{name, slug}` of a series.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SeriesRef {
    #[schema(example = "Submariner")]
    pub name: String,
    #[schema(example = "submariner")]
    pub slug: String,
}

/// What a merge did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeView {
    pub keeper: KeeperRef,
    pub merged_models: usize,
    pub moved_listings: usize,
    pub moved_pictures: usize,
    pub added_references: usize,
}

/// The keeper after a merge.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeeperRef {
    pub id: String,
    pub name: String,
    pub reference_number: String,
    pub slug: String,
}

/// What a dismissal did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DismissView {
    /// Pairs not dismissed before.
    pub dismissed_pairs: usize,
}
