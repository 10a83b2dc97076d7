//! `GET /admin/audit`: the audit trail of back-office writes, newest first.

use crate::api::error::ApiResult;
use crate::api::params::{Page, PageParams, Params};
use crate::api::AppState;
use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};

/// Query of `GET /admin/audit`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditParams {
    /// Only entries by this user (`cli` for commands run on the host).
    user: Option<String>,
    /// Only entries of this action (`auth.login`, `user.add`, `reconciliation.link`, ...).
    action: Option<String>,
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

/// Who changed what, and when, newest first.
#[utoipa::path(get, path = "/admin/audit", operation_id = "admin_audit", tag = "admin",
    params(PageParams, AuditParams),
    responses((status = 200, description = "A page of audit entries", body = AuditPage)))]
pub async fn audit(
    State(app): State<AppState>,
    Params(page): Params<PageParams>,
    Params(params): Params<AuditParams>,
) -> ApiResult<Json<Page<AuditEntryView>>> {
    let pagination = page.pagination()?;
    let wanted = |user: &str, action: &str| {
        params.user.as_deref().is_none_or(|u| u == user)
            && params.action.as_deref().is_none_or(|a| a == action)
    };
    let (mut total, mut data) = (0, Vec::with_capacity(pagination.page_size));
    for entry in app.store.audit_newest_first() {
        let entry = entry?;
        if !wanted(&entry.user, &entry.action) {
            continue;
        }
        if total >= pagination.offset() && data.len() < pagination.page_size {
            data.push(AuditEntryView {
                id: entry.id.to_string(),
                at: entry.at.to_rfc3339(),
                user: entry.user,
                action: entry.action,
                targets: entry.targets,
                detail: entry.detail,
            });
        }
        total += 1;
    }
    Ok(Json(pagination.wrap(data, total)))
}
