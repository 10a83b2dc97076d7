//! The console's pages: sign-in, home (the catalogue's counts, the open work by kind, the
//! newest jobs and audit entries), the duplicate groups one at a time, the groups of unmatched
//! listings to reconcile, the pictures to review, the unmatched listings, the jobs, and the
//! audit trail. Each page is a template filled from the services the API
//! reads through, and the API's own views where it shows the same thing.

use super::{CONSOLE_HOME, CONSOLE_SIGN_IN};
use crate::api::back_office::admin::{self, UnmatchedParams};
use crate::api::back_office::admin_jobs;
use crate::api::back_office::duplicate_models::{self, GroupParams};
use crate::api::back_office::picture_review::{self, ReviewParams};
use crate::api::back_office::reconciliation::{self, GroupParams as ReconciliationParams};
use crate::api::back_office::{Caller, SignedIn};
use crate::api::error::{internal, ApiResult};
use crate::api::layers::capacity::Work;
use crate::api::listings::MediaBase;
use crate::api::models;
use crate::api::params::{PageParams, Pagination, Params};
use crate::api::views::back_office::UnmatchedListing;
use crate::api::views::back_office::{AuditEntryView, JobView, ReviewPicture, ReviewQueueItem};
use crate::api::views::back_office::{
    Candidate, ClaimedBrandView, DuplicateGroup, ReconciliationGroup,
};
use crate::api::views::EntityRef;
use crate::app::App;
use crate::domain::{DuplicateSignal, MatchOutcome, ModelId, ReviewStatus, Role};
use crate::media::fetch::is_web_url;
use crate::store::{AuditFilter, Counted, GroupOrder};
use askama::Template;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Extension;
use serde::Deserialize;
use std::sync::Arc;

/// The signed-in caller of a console page, of either role: the guard sends anyone else to the
/// sign-in page before a handler runs, and so does this extractor should a route miss it.
pub struct SignedCaller(pub Arc<SignedIn>);

impl<S: Send + Sync> FromRequestParts<S> for SignedCaller {
    type Rejection = Redirect;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<SignedCaller, Redirect> {
        match parts.extensions.get::<Caller>() {
            Some(Caller::Signed(signed)) => Ok(SignedCaller(signed.clone())),
            _ => Err(Redirect::to(CONSOLE_SIGN_IN)),
        }
    }
}

/// Jobs and audit entries the home page shows.
const NEWEST_SHOWN: usize = 10;

/// Who is signed in, as every page's header shows them.
pub struct Signed {
    pub name: String,
    pub role: &'static str,
}

impl Signed {
    fn of(signed: &SignedIn) -> Signed {
        Signed {
            name: signed.user.name.to_string(),
            role: signed.user.role.as_str(),
        }
    }
}

#[derive(Template)]
#[template(path = "sign_in.html", config = "src/console/askama.toml")]
struct SignInPage {
    signed: Option<Signed>,
}

/// `GET /console/sign-in`: the form, or home for a caller already signed in.
pub async fn sign_in(Extension(caller): Extension<Caller>) -> ApiResult<Response> {
    if let Caller::Signed(_) = caller {
        return Ok(Redirect::to(CONSOLE_HOME).into_response());
    }
    render(&SignInPage { signed: None })
}

/// A row of the home page's open work.
pub struct Attention {
    pub work: &'static str,
    pub kind: &'static str,
    pub open: u64,
}

#[derive(Template)]
#[template(path = "home.html", config = "src/console/askama.toml")]
struct HomePage {
    signed: Option<Signed>,
    /// True for an admin: the controls that change something are shown.
    writes: bool,
    counts: Vec<(&'static str, u64)>,
    attention: Vec<Attention>,
    jobs: Vec<JobView>,
    audit: Vec<AuditEntryView>,
}

/// `GET /console/`: the home page of a signed-in caller (the guard sent anyone else to sign in).
pub async fn home(work: Work, SignedCaller(signed): SignedCaller) -> ApiResult<Response> {
    let page = work.run(move |app| home_page(app, &signed)).await?;
    render(&page)
}

fn home_page(app: &App, signed: &SignedIn) -> ApiResult<HomePage> {
    let store = app.store();
    let mut counts = Vec::new();
    for (label, counted) in [
        ("brands", Counted::Brands),
        ("series", Counted::Series),
        ("models", Counted::Models),
        ("calibres", Counted::Calibers),
        ("providers", Counted::Providers),
        ("listings", Counted::Listings),
        ("unmatched listings", Counted::UnmatchedListings),
    ] {
        counts.push((label, store.count_of(counted)?));
    }
    let newest = Pagination {
        page: 1,
        page_size: NEWEST_SHOWN,
    };
    let jobs = admin_jobs::job_page(app, newest)?.data;
    let (audit, _) = store
        .audit()
        .page(AuditFilter::default(), 0, NEWEST_SHOWN)?;
    Ok(HomePage {
        signed: Some(Signed::of(signed)),
        writes: signed.user.role == Role::Admin,
        counts,
        attention: attention(app)?,
        jobs,
        audit: audit.into_iter().map(AuditEntryView::from).collect(),
    })
}

/// The open work: duplicate groups by the signal that formed them, groups of unmatched listings
/// by reason, models whose pictures wait for review.
fn attention(app: &App) -> ApiResult<Vec<Attention>> {
    let mut rows = Vec::new();
    let groups = app.duplicate_groups()?;
    for kind in DuplicateSignal::ALL {
        let open = groups.iter().filter(|group| group.kind == kind).count() as u64;
        rows.push(Attention {
            work: "duplicate models",
            kind: kind.as_str(),
            open,
        });
    }
    for reason in MatchOutcome::REASONS {
        let (Some(name), Some(code)) = (reason.reason(), reason.reason_code()) else {
            continue;
        };
        rows.push(Attention {
            work: "reconciliation",
            kind: name,
            open: app.store().unmatched().count(GroupOrder::Reason(code))?,
        });
    }
    let pending = app
        .store()
        .pictures()
        .review_queue(&[ReviewStatus::Pending])?;
    rows.push(Attention {
        work: "picture review",
        kind: "pending",
        open: pending.len() as u64,
    });
    Ok(rows)
}

/// Query of `GET /console/audit` (its page and page size are `PageParams`): an empty field of
/// the filter form is no filter.
#[derive(Debug, Deserialize)]
pub struct AuditQuery {
    user: Option<String>,
    action: Option<String>,
}

#[derive(Template)]
#[template(path = "audit.html", config = "src/console/askama.toml")]
struct AuditPage {
    signed: Option<Signed>,
    user: String,
    action: String,
    entries: Vec<AuditEntryView>,
    total: usize,
    page: usize,
    pages: usize,
    /// Links to the pages beside this one, with the same filters.
    newer: Option<String>,
    older: Option<String>,
}

/// `GET /console/audit`: the audit trail, newest first, filtered by user and action as
/// `GET /admin/audit` is, a page at a time.
pub async fn audit(
    work: Work,
    SignedCaller(signed): SignedCaller,
    Params(page): Params<PageParams>,
    Params(query): Params<AuditQuery>,
) -> ApiResult<Response> {
    let pagination = page.pagination()?;
    let filled = |field: Option<String>| field.map(|f| f.trim().to_owned()).unwrap_or_default();
    let (user, action) = (filled(query.user), filled(query.action));
    let page = work
        .run(move |app| {
            let filter = AuditFilter {
                user: Some(user.as_str()).filter(|u| !u.is_empty()),
                action: Some(action.as_str()).filter(|a| !a.is_empty()),
            };
            let (entries, total) =
                (app.store().audit()).page(filter, pagination.offset(), pagination.page_size)?;
            let filters = [("user", user.as_str()), ("action", action.as_str())];
            let Pager {
                pages,
                previous,
                next,
            } = Pager::list("/console/audit", &filters, pagination, total);
            Ok(AuditPage {
                signed: Some(Signed::of(&signed)),
                newer: previous,
                older: next,
                entries: entries.into_iter().map(AuditEntryView::from).collect(),
                total,
                page: pagination.page,
                pages,
                user,
                action,
            })
        })
        .await?;
    render(&page)
}

/// Links to the pages beside one of a list, with the same filters.
struct Pager {
    pages: usize,
    previous: Option<String>,
    next: Option<String>,
}

impl Pager {
    /// Page `pagination` of `total` items at `path` under `filters`; the links name the page
    /// size.
    fn list(path: &str, filters: &[(&str, &str)], pagination: Pagination, total: usize) -> Pager {
        Pager::new(
            path,
            filters,
            pagination.page,
            Some(pagination.page_size),
            total,
        )
    }

    /// Item `at` of `total` shown one at a time at `path` under `filters`.
    fn one_at_a_time(path: &str, filters: &[(&str, &str)], at: usize, total: usize) -> Pager {
        Pager::new(path, filters, at, None, total)
    }

    fn new(
        path: &str,
        filters: &[(&str, &str)],
        page: usize,
        page_size: Option<usize>,
        total: usize,
    ) -> Pager {
        let pages = total.div_ceil(page_size.unwrap_or(1)).max(1);
        let at = |to: usize| {
            let (to, size) = (to.to_string(), page_size.map(|s| s.to_string()));
            let mut pairs = filters.to_vec();
            pairs.push(("page", &to));
            pairs.extend(size.as_deref().map(|size| ("pageSize", size)));
            link(path, &pairs)
        };
        Pager {
            pages,
            // From past the end, back to the last page.
            previous: (page > 1 && total > 0).then(|| at((page - 1).min(pages))),
            next: (page < pages).then(|| at(page + 1)),
        }
    }
}

/// `path` with the query of `pairs`, those with an empty value left out.
fn link(path: &str, pairs: &[(&str, &str)]) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs.iter().filter(|(_, value)| !value.is_empty()) {
        query.append_pair(name, value);
    }
    format!("{path}?{}", query.finish())
}

/// A choice of the kind filter.
pub struct KindChoice {
    pub value: &'static str,
    pub label: String,
    pub selected: bool,
}

/// A row of the side-by-side table: a field and each model's value of it.
pub struct Row {
    pub label: &'static str,
    pub cells: Vec<String>,
    pub differs: bool,
}

#[derive(Template)]
#[template(path = "duplicates.html", config = "src/console/askama.toml")]
struct DuplicatesPage {
    signed: Option<Signed>,
    writes: bool,
    kinds: Vec<KindChoice>,
    brand: String,
    q: String,
    filtered: bool,
    group: Option<DuplicateGroup>,
    model_ids: String,
    rows: Vec<Row>,
    position: usize,
    total: usize,
    previous: Option<String>,
    next: Option<String>,
}

/// Query of `GET /console/duplicates` beside the filters of `GET /duplicate-models`: which
/// group of those they keep, from 1.
#[derive(Debug, Deserialize)]
pub struct Position {
    page: Option<String>,
}

/// `GET /console/duplicates`: one duplicate group at a time, its models side by side, the
/// fields they differ on marked (as `GET /models/compare` finds them); for an admin, the keeper
/// to choose and the merge and dismiss that `console.js` posts to the API.
pub async fn duplicates(
    work: Work,
    SignedCaller(signed): SignedCaller,
    Extension(media): Extension<MediaBase>,
    Params(filters): Params<GroupParams>,
    Params(position): Params<Position>,
) -> ApiResult<Response> {
    let at = Pagination::parse(position.page.as_deref(), None, 1, 1)?;
    let page = work
        .run(move |app| duplicates_page(app, &signed, &filters, at, &media))
        .await?;
    render(&page)
}

fn duplicates_page(
    app: &App,
    signed: &SignedIn,
    filters: &GroupParams,
    at: Pagination,
    media: &MediaBase,
) -> ApiResult<DuplicatesPage> {
    let found = duplicate_models::group_page(app, filters, at, media)?;
    let group = found.data.into_iter().next();
    let rows = match &group {
        Some(group) => side_by_side_rows(app, group, media)?,
        None => Vec::new(),
    };
    let text = |field: &Option<String>| field.clone().unwrap_or_default();
    let (kind, brand, q) = (text(&filters.kind), text(&filters.brand), text(&filters.q));
    let filters = [("kind", kind.as_str()), ("brand", &brand), ("q", &q)];
    let pager = Pager::one_at_a_time("/console/duplicates", &filters, at.page, found.total);
    let summary = &found.summary;
    let counts = [
        (
            "",
            "all kinds",
            summary.same_reference + summary.alternate_overlap + summary.base_variant,
        ),
        ("sameReference", "same reference", summary.same_reference),
        (
            "alternateOverlap",
            "alternate overlap",
            summary.alternate_overlap,
        ),
        ("baseVariant", "base variant", summary.base_variant),
    ];
    Ok(DuplicatesPage {
        signed: Some(Signed::of(signed)),
        writes: signed.user.role == Role::Admin,
        kinds: (counts.into_iter())
            .map(|(value, label, count)| KindChoice {
                value,
                label: format!("{label} ({count})"),
                selected: kind.as_str() == value || (value.is_empty() && kind == "all"),
            })
            .collect(),
        filtered: !(kind.is_empty() || kind == "all") || !brand.is_empty() || !q.is_empty(),
        model_ids: group.as_ref().map_or(String::new(), |g| {
            g.models
                .iter()
                .map(|m| m.id.as_str())
                .collect::<Vec<_>>()
                .join(",")
        }),
        group,
        rows,
        position: at.page,
        total: found.total,
        previous: pager.previous,
        next: pager.next,
        brand,
        q,
    })
}

/// The fields a person compares duplicates on, as the full model's JSON names them.
const COMPARED_FIELDS: [(&str, &str); 9] = [
    ("reference", "referenceNumber"),
    ("alternates", "alternateReferences"),
    ("series", "series"),
    ("calibre", "caliber"),
    ("released", "releaseYear"),
    ("discontinued", "discontinuationYear"),
    ("diameter", "diameter"),
    ("case", "caseMaterials"),
    ("description", "description"),
];

/// The group's models side by side: the compared fields (marked where the models differ, as
/// `GET /models/compare` finds it), their listing counts and when each was added.
fn side_by_side_rows(app: &App, group: &DuplicateGroup, media: &MediaBase) -> ApiResult<Vec<Row>> {
    let ids: Vec<ModelId> = (group.models.iter())
        .filter_map(|m| m.id.parse().ok())
        .collect();
    let models = app.store().catalogue().models(&ids)?;
    let side = models::side_by_side(app, &models, media)?;
    let mut rows: Vec<Row> = (COMPARED_FIELDS.iter())
        .map(|&(label, field)| Row {
            label,
            cells: side.fields.iter().map(|f| cell(f.get(field))).collect(),
            differs: side.differences.iter().any(|d| d == field),
        })
        .collect();
    let counts: Vec<String> = group
        .models
        .iter()
        .map(|m| m.listing_count.to_string())
        .collect();
    rows.push(Row {
        label: "listings",
        differs: counts.iter().any(|c| *c != counts[0]),
        cells: counts,
    });
    rows.push(Row {
        label: "added",
        cells: group.models.iter().map(|m| m.created_at.clone()).collect(),
        differs: false,
    });
    Ok(rows)
}

/// A field's value as a cell shows it: a name for an entity, a list joined, a dash for none.
fn cell(value: Option<&serde_json::Value>) -> String {
    use serde_json::Value;
    match value {
        None | Some(Value::Null) => "—".into(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(items)) if items.is_empty() => "—".into(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| cell(Some(i)))
            .collect::<Vec<_>>()
            .join(", "),
        // An entity by its name; a calibre without one by its reference.
        Some(Value::Object(entity)) => match entity.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => cell(entity.get("reference")),
        },
        Some(other) => other.to_string(),
    }
}

/// A group of unmatched listings as the reconciliation page shows it.
pub struct GroupCard {
    pub id: String,
    pub brand: String,
    pub reference: String,
    pub reason: &'static str,
    pub listing_count: usize,
    pub spellings: String,
    pub providers: String,
    pub prices: String,
    pub titles: Vec<String>,
    pub candidates: Vec<Candidate>,
}

impl GroupCard {
    fn of(group: ReconciliationGroup) -> GroupCard {
        let dash = |text: String| {
            if text.is_empty() {
                "—".to_owned()
            } else {
                text
            }
        };
        let providers = (group.providers.iter())
            .map(|p| format!("{} {}", p.provider.name, p.listing_count))
            .collect::<Vec<_>>()
            .join(", ");
        let price = |usd: Option<u64>| usd.map_or("?".to_owned(), |p| format!("{p} USD"));
        let range = &group.price_range_usd;
        GroupCard {
            brand: match group.brand {
                Some(ClaimedBrandView::Known(brand)) => brand.name,
                Some(ClaimedBrandView::Text(text)) => format!("“{text}” (no such brand)"),
                None => "no brand".to_owned(),
            },
            reference: group.reference.unwrap_or_else(|| "no reference".to_owned()),
            reason: group.reason,
            listing_count: group.listing_count,
            spellings: dash(group.spellings.join(", ")),
            providers: dash(providers),
            prices: match (range.low, range.high) {
                (None, None) => "—".to_owned(),
                (low, high) if low == high => price(low),
                (low, high) => format!("{} to {}", price(low), price(high)),
            },
            titles: group.example_titles,
            candidates: group.candidates,
            id: group.id,
        }
    }
}

#[derive(Template)]
#[template(path = "reconciliation.html", config = "src/console/askama.toml")]
struct ReconciliationPage {
    signed: Option<Signed>,
    writes: bool,
    reasons: Vec<KindChoice>,
    brand: String,
    provider: String,
    q: String,
    cards: Vec<GroupCard>,
    total: usize,
    page: usize,
    pages: usize,
    previous: Option<String>,
    next: Option<String>,
}

/// `GET /console/reconciliation`: a page of the groups of unmatched listings under the API's
/// filters, each beside its nearest models; for an admin, the link that `console.js` posts to
/// the API.
pub async fn reconciliation(
    work: Work,
    SignedCaller(signed): SignedCaller,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(filters): Params<ReconciliationParams>,
) -> ApiResult<Response> {
    let pagination = page.pagination()?;
    let page = work
        .run(move |app| {
            let found = reconciliation::group_page(app, &filters, pagination, &media)?;
            let text = |field: &Option<String>| field.clone().unwrap_or_default();
            let reason = text(&filters.reason);
            let (brand, provider, q) = (
                text(&filters.brand),
                text(&filters.provider),
                text(&filters.q),
            );
            let filters = [
                ("reason", reason.as_str()),
                ("brand", &brand),
                ("provider", &provider),
                ("q", &q),
            ];
            let Pager {
                pages,
                previous,
                next,
            } = Pager::list("/console/reconciliation", &filters, pagination, found.total);
            let reasons = reason_choices(&reason);
            Ok(ReconciliationPage {
                signed: Some(Signed::of(&signed)),
                writes: signed.user.role == Role::Admin,
                reasons,
                previous,
                next,
                cards: found.data.into_iter().map(GroupCard::of).collect(),
                total: found.total,
                page: pagination.page,
                pages,
                brand,
                provider,
                q,
            })
        })
        .await?;
    render(&page)
}

/// The reasons a group is filtered by, as the API names them.
const REASON_NAMES: [(&str, &str); 4] = [
    ("unknownBrand", "unknown brand"),
    ("unknownReference", "unknown reference"),
    ("ambiguous", "ambiguous"),
    ("noReference", "no reference"),
];

/// An unmatched listing as its page's row shows it.
pub struct UnmatchedRow {
    pub id: String,
    pub title: String,
    /// Its page at the seller's, when it is a web address (never another scheme).
    pub source: Option<String>,
    pub brand: String,
    pub reference: String,
    pub price: String,
    pub reason: &'static str,
    pub seen: String,
}

impl UnmatchedRow {
    fn of(unmatched: UnmatchedListing) -> UnmatchedRow {
        let listing = unmatched.listing;
        let dash = |text: Option<String>| text.unwrap_or_else(|| "—".to_owned());
        UnmatchedRow {
            id: listing.id,
            title: dash(listing.title),
            source: web_address(listing.url),
            brand: dash(listing.scraped_brand),
            reference: dash(listing.scraped_reference),
            price: match (listing.price, listing.currency) {
                (Some(price), Some(currency)) => format!("{price} {currency}"),
                _ => "—".to_owned(),
            },
            reason: unmatched.unmatched_reason,
            seen: listing.last_seen_at,
        }
    }
}

/// `url` when it is a web address: a seller's text is never made a `javascript:` link.
fn web_address(url: String) -> Option<String> {
    is_web_url(&url).then_some(url)
}

#[derive(Template)]
#[template(path = "unmatched.html", config = "src/console/askama.toml")]
struct UnmatchedPage {
    signed: Option<Signed>,
    reasons: Vec<KindChoice>,
    brand: String,
    provider: String,
    rows: Vec<UnmatchedRow>,
    total: usize,
    page: usize,
    pages: usize,
    previous: Option<String>,
    next: Option<String>,
}

/// `GET /console/unmatched`: the listings matched to no model, newest first, with why, under
/// the filters of `GET /admin/unmatched-listings`; each links to its page at the seller's.
pub async fn unmatched(
    work: Work,
    SignedCaller(signed): SignedCaller,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(filters): Params<UnmatchedParams>,
) -> ApiResult<Response> {
    let pagination = page.pagination()?;
    let page = work
        .run(move |app| {
            let found = admin::unmatched_page(app, &filters, pagination, &media)?;
            let text = |field: &Option<String>| field.clone().unwrap_or_default();
            let (reason, brand, provider) = (
                text(&filters.reason),
                text(&filters.brand),
                text(&filters.provider),
            );
            let filters = [
                ("reason", reason.as_str()),
                ("brand", &brand),
                ("provider", &provider),
            ];
            let Pager {
                pages,
                previous,
                next,
            } = Pager::list("/console/unmatched", &filters, pagination, found.total);
            Ok(UnmatchedPage {
                signed: Some(Signed::of(&signed)),
                reasons: reason_choices(&reason),
                previous,
                next,
                rows: found.data.into_iter().map(UnmatchedRow::of).collect(),
                total: found.total,
                page: pagination.page,
                pages,
                brand,
                provider,
            })
        })
        .await?;
    render(&page)
}

/// The reason filter's choices, `chosen` selected.
fn reason_choices(chosen: &str) -> Vec<KindChoice> {
    std::iter::once(("", "every reason"))
        .chain(REASON_NAMES)
        .map(|(value, label)| KindChoice {
            value,
            label: label.to_owned(),
            selected: chosen == value,
        })
        .collect()
}

#[derive(Template)]
#[template(path = "jobs.html", config = "src/console/askama.toml")]
struct JobsPage {
    signed: Option<Signed>,
    writes: bool,
    providers: Vec<EntityRef>,
    jobs: Vec<JobView>,
    /// True while a job shown is queued or running: `console.js` reads the page again.
    live: bool,
    total: usize,
    page: usize,
    pages: usize,
    previous: Option<String>,
    next: Option<String>,
}

/// `GET /console/jobs`: the jobs, newest first, with their progress, reports and errors; for an
/// admin, the buttons that start a match, a reindex or the duplicate finder's pass and the form
/// that uploads a provider's snapshot, each posted by `console.js` to the API.
pub async fn jobs(
    work: Work,
    SignedCaller(signed): SignedCaller,
    Params(page): Params<PageParams>,
) -> ApiResult<Response> {
    let pagination = page.pagination()?;
    let page = work
        .run(move |app| {
            let found = admin_jobs::job_page(app, pagination)?;
            let providers = (app.store().listings().providers())
                .map(|provider| Ok(EntityRef::from(&provider?)))
                .collect::<ApiResult<Vec<_>>>()?;
            let Pager {
                pages,
                previous,
                next,
            } = Pager::list("/console/jobs", &[], pagination, found.total);
            Ok(JobsPage {
                signed: Some(Signed::of(&signed)),
                writes: signed.user.role == Role::Admin,
                providers,
                live: (found.data.iter()).any(|job| matches!(job.state, "queued" | "running")),
                previous,
                next,
                jobs: found.data,
                total: found.total,
                page: pagination.page,
                pages,
            })
        })
        .await?;
    render(&page)
}

#[derive(Template)]
#[template(path = "pictures.html", config = "src/console/askama.toml")]
struct PicturesPage {
    signed: Option<Signed>,
    writes: bool,
    statuses: Vec<KindChoice>,
    filtered: bool,
    model: Option<ReviewQueueItem>,
    /// The model's FRONT picture, if it has one.
    front: Option<ReviewPicture>,
    position: usize,
    total: usize,
    previous: Option<String>,
    next: Option<String>,
}

/// `GET /console/pictures`: one model of the review queue at a time, its front picture beside
/// its candidates with their sources and sizes; for an admin, the choices `console.js` posts to
/// the API (a candidate selected, the picture kept, a picture set by its address).
pub async fn pictures(
    work: Work,
    SignedCaller(signed): SignedCaller,
    Extension(media): Extension<MediaBase>,
    Params(filter): Params<ReviewParams>,
    Params(position): Params<Position>,
) -> ApiResult<Response> {
    let at = Pagination::parse(position.page.as_deref(), None, 1, 1)?;
    let page = work
        .run(move |app| {
            let found = picture_review::queue_page(app, &filter, at, &media)?;
            let status = filter.status.clone().unwrap_or_default();
            let filters = [("status", status.as_str())];
            let pager = Pager::one_at_a_time("/console/pictures", &filters, at.page, found.total);
            let model = found.data.into_iter().next();
            let front = model
                .as_ref()
                .and_then(|m| m.pictures.iter().find(|p| p.kind == "FRONT").cloned());
            let statuses = [
                ("", "waiting for review"),
                ("reviewed", "reviewed"),
                ("all", "all"),
            ]
            .into_iter()
            .map(|(value, label)| KindChoice {
                value,
                label: label.to_owned(),
                selected: status == value || (value.is_empty() && status == "pending"),
            })
            .collect();
            Ok(PicturesPage {
                signed: Some(Signed::of(&signed)),
                writes: signed.user.role == Role::Admin,
                statuses,
                filtered: !(status.is_empty() || status == "pending"),
                model,
                front,
                position: at.page,
                total: found.total,
                previous: pager.previous,
                next: pager.next,
            })
        })
        .await?;
    render(&page)
}

/// A page as HTML; a template that fails to render is a logged 500.
fn render(page: &impl Template) -> ApiResult<Response> {
    let html = page.render().map_err(|error| internal(&error))?;
    Ok(Html(html).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_web_addresses_are_links() {
        for url in ["https://www.ebay.com/itm/1", "HTTP://example.com/a"] {
            assert_eq!(web_address(url.into()).as_deref(), Some(url));
        }
        for url in [
            "javascript:alert(1)",
            "data:text/html,x",
            "//evil.example/",
            "ftp://a/b",
        ] {
            assert_eq!(web_address(url.into()), None, "{url}");
        }
    }

    #[test]
    fn a_cell_shows_names_lists_and_a_dash_for_nothing() {
        assert_eq!(cell(Some(&json!("126610LN"))), "126610LN");
        assert_eq!(cell(Some(&json!(41.0))), "41.0");
        assert_eq!(cell(Some(&json!(["a", "b"]))), "a, b");
        assert_eq!(
            cell(Some(&json!({"name": "Submariner", "slug": "s"}))),
            "Submariner"
        );
        assert_eq!(
            cell(Some(&json!({"name": null, "reference": "3235"}))),
            "3235"
        );
        for nothing in [None, Some(&json!(null)), Some(&json!([]))] {
            assert_eq!(cell(nothing), "—");
        }
    }

    #[test]
    fn every_value_is_escaped() {
        let hostile = "<script>alert(1)</script>";
        let page = HomePage {
            signed: Some(Signed {
                name: hostile.into(),
                role: "admin",
            }),
            writes: true,
            counts: vec![("models", 1)],
            attention: Vec::new(),
            jobs: Vec::new(),
            audit: vec![AuditEntryView {
                id: "1".into(),
                at: "2026-11-29T10:00:00Z".into(),
                user: "ana".into(),
                action: "reconciliation.link".into(),
                targets: Vec::new(),
                detail: r#"<img src=x onerror="alert(2)">"#.into(),
            }],
        };
        let html = page.render().expect("render");
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains("<img src=x"), "{html}");
        assert!(
            html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
            "{html}"
        );
        assert!(
            html.contains("&#60;img src=x onerror=&#34;alert(2)&#34;&#62;"),
            "{html}"
        );
    }
}
