//! `GET /console/audit`: the audit trail, filtered by user and action as `GET /admin/audit` is.

use super::*;

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
