//! The console's pages, one module per page, each a template filled from the services the API
//! reads through (and the API's own views where it shows the same thing). This module holds what
//! they share: the signed-in caller, the pager and its links, the reason filter, rendering.

use super::{CONSOLE_HOME, CONSOLE_SIGN_IN};
use crate::api::back_office::admin::{self, UnmatchedParams};
use crate::api::back_office::admin_jobs;
use crate::api::back_office::duplicate_models::{self, GroupParams};
use crate::api::back_office::picture_review::{self, ReviewParams};
use crate::api::back_office::reconciliation::{
    self as reconciliation_api, GroupParams as ReconciliationParams,
};
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

mod audit;
mod duplicates;
mod error;
mod home;
mod jobs;
mod new_model;
mod pictures;
mod reconciliation;
mod sign_in;
mod unmatched;
mod users;

pub use audit::audit;
pub use duplicates::duplicates;
pub use error::error_pages;
pub use home::home;
pub use jobs::jobs;
pub use new_model::new_model;
pub use pictures::pictures;
pub use reconciliation::reconciliation;
pub use sign_in::{sign_in, sign_in_form};
pub use unmatched::unmatched;
pub use users::users;

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

/// A filter's value as its form field and its links show it: empty when it was not given.
fn shown(filter: &Option<String>) -> String {
    filter.clone().unwrap_or_default()
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

/// Query of `GET /console/duplicates` beside the filters of `GET /duplicate-models`: which
/// group of those they keep, from 1.
#[derive(Debug, Deserialize)]
pub struct Position {
    page: Option<String>,
}

/// The reasons a group is filtered by, as the API names them.
const REASON_NAMES: [(&str, &str); 4] = [
    ("unknownBrand", "unknown brand"),
    ("unknownReference", "unknown reference"),
    ("ambiguous", "ambiguous"),
    ("noReference", "no reference"),
];

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

/// A page as HTML; a template that fails to render is a logged 500.
fn render(page: &impl Template) -> ApiResult<Response> {
    let html = page.render().map_err(|error| internal(&error))?;
    Ok(Html(html).into_response())
}
