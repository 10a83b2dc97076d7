//! The console's pages: sign-in, home (the catalogue's counts, the open work by kind, the
//! newest jobs and audit entries) and the audit trail. Each page is a template filled from the services the API
//! reads through, and the API's own views where it shows the same thing.

use super::{CONSOLE_HOME, CONSOLE_SIGN_IN};
use crate::api::back_office::{Caller, SignedIn};
use crate::api::error::{internal, ApiResult};
use crate::api::layers::capacity::Work;
use crate::api::params::{PageParams, Params};
use crate::api::views::back_office::{AuditEntryView, JobView};
use crate::app::App;
use crate::domain::{DuplicateSignal, MatchOutcome, ReviewStatus, Role};
use crate::store::{AuditFilter, Counted, GroupOrder};
use askama::Template;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Extension;
use serde::Deserialize;

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
pub async fn home(work: Work, Extension(caller): Extension<Caller>) -> ApiResult<Response> {
    let Caller::Signed(signed) = caller else {
        return Ok(Redirect::to(CONSOLE_SIGN_IN).into_response());
    };
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
    let jobs = (store.jobs().jobs_newest_first())
        .take(NEWEST_SHOWN)
        .map(|job| Ok(JobView::from(app.jobs().live(job?))))
        .collect::<ApiResult<_>>()?;
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
    Extension(caller): Extension<Caller>,
    Params(page): Params<PageParams>,
    Params(query): Params<AuditQuery>,
) -> ApiResult<Response> {
    let Caller::Signed(signed) = caller else {
        return Ok(Redirect::to(CONSOLE_SIGN_IN).into_response());
    };
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
            let pages = total.div_ceil(pagination.page_size).max(1);
            let link = |to: usize| audit_link(&user, &action, to, pagination.page_size);
            Ok(AuditPage {
                signed: Some(Signed::of(&signed)),
                newer: (pagination.page > 1).then(|| link(pagination.page - 1)),
                older: (pagination.page < pages).then(|| link(pagination.page + 1)),
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

/// The audit page `page` under the filters `user` and `action` (left out when empty).
fn audit_link(user: &str, action: &str, page: usize, page_size: usize) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (name, value) in [("user", user), ("action", action)] {
        if !value.is_empty() {
            query.append_pair(name, value);
        }
    }
    query.append_pair("page", &page.to_string());
    query.append_pair("pageSize", &page_size.to_string());
    format!("/console/audit?{}", query.finish())
}

/// A page as HTML; a template that fails to render is a logged 500.
fn render(page: &impl Template) -> ApiResult<Response> {
    let html = page.render().map_err(|error| internal(&error))?;
    Ok(Html(html).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

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
