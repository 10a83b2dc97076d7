//! `/admin/users`: the back office's users, managed by an admin (in the console or with curl)
//! on the same service functions as `watch-catalogue user` (`jobs::users`). Each change is one
//! write with its audit entry under the admin's name; a password is hashed at once and never
//! echoed, logged or kept in the clear.

use super::{actor, write, Caller};
use crate::api::error::{ApiError, ApiResult};
use crate::api::layers::capacity::Work;
use crate::api::params::PathParams;
use crate::api::requests::{JsonBody, NewUserBody, PasswordBody, RoleBody};
use crate::api::views::back_office::{RemovedUser, UserList, UserView};
use crate::domain::{Role, User, Username};
use crate::jobs::users;
use crate::jobs::users::{Actor, UserError};
use crate::store::WriteTurn;
use axum::http::StatusCode;
use axum::{Extension, Json};

/// Every back-office user, by name, with their role.
#[utoipa::path(get, path = "/admin/users", operation_id = "admin_users", tag = "admin",
    responses((status = 200, description = "The users", body = UserList)))]
pub async fn list(work: Work) -> ApiResult<Json<UserList>> {
    work.run(|app| {
        let data = users::list_users(app.store())?;
        Ok(Json(UserList {
            data: data.into_iter().map(UserView::from).collect(),
        }))
    })
    .await
}

/// Adds a colleague with a role and a password.
///
/// The password is at least 10 characters; it is never answered. One atomic write with its
/// audit entry.
#[utoipa::path(post, path = "/admin/users", operation_id = "admin_add_user", tag = "admin",
    request_body = NewUserBody,
    responses((status = 201, description = "The user is added", body = UserView)))]
pub async fn add(
    work: Work,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<NewUserBody>,
) -> ApiResult<(StatusCode, Json<UserView>)> {
    let actor = actor(&caller)?;
    let name = Username::parse(&body.name)
        .map_err(|e| ApiError::invalid(format!("`name`: {e}"), "for example `bea`"))?;
    let role = role(&body.role)?;
    let user = work
        .run(move |app| {
            write(app, |turn| {
                users::add_user(turn, &actor, &name, role, &body.password)
            })
        })
        .await?;
    Ok((StatusCode::CREATED, Json(user.into())))
}

/// Gives a user another role and ends their sessions.
///
/// An admin may not demote themselves (another admin, or the command line, may). One atomic
/// write with its audit entry.
#[utoipa::path(put, path = "/admin/users/{name}/role", operation_id = "admin_set_user_role", tag = "admin",
    params(("name" = String, Path, description = "User name")),
    request_body = RoleBody,
    responses((status = 200, description = "The user with the new role", body = UserView)))]
pub async fn set_role(
    work: Work,
    Extension(caller): Extension<Caller>,
    PathParams(name): PathParams<String>,
    JsonBody(body): JsonBody<RoleBody>,
) -> ApiResult<Json<UserView>> {
    let role = role(&body.role)?;
    change(&work, &caller, &name, move |turn, actor, name| {
        users::set_role(turn, actor, name, role)
    })
    .await
}

/// Gives a user a new password and ends their sessions.
///
/// The password is at least 10 characters; it is never answered. One atomic write with its
/// audit entry.
#[utoipa::path(put, path = "/admin/users/{name}/password", operation_id = "admin_set_user_password", tag = "admin",
    params(("name" = String, Path, description = "User name")),
    request_body = PasswordBody,
    responses((status = 200, description = "The user; their sessions ended", body = UserView)))]
pub async fn set_password(
    work: Work,
    Extension(caller): Extension<Caller>,
    PathParams(name): PathParams<String>,
    JsonBody(body): JsonBody<PasswordBody>,
) -> ApiResult<Json<UserView>> {
    change(&work, &caller, &name, move |turn, actor, name| {
        users::set_password(turn, actor, name, &body.password)
    })
    .await
}

/// One admin's change of the user named `name` (a name that cannot be one is a 404): one
/// write, the user as it is after it.
async fn change(
    work: &Work,
    caller: &Caller,
    name: &str,
    job: impl FnOnce(&WriteTurn<'_>, &Actor, &Username) -> Result<User, UserError> + Send + 'static,
) -> ApiResult<Json<UserView>> {
    let actor = actor(caller)?;
    let name = known_name(name)?;
    let user = work
        .run(move |app| write(app, |turn| job(turn, &actor, &name)))
        .await?;
    Ok(Json(user.into()))
}

/// Removes a user and ends their sessions: the revocation of a colleague's access.
///
/// An admin may not remove themselves. One atomic write with its audit entry.
#[utoipa::path(delete, path = "/admin/users/{name}", operation_id = "admin_remove_user", tag = "admin",
    params(("name" = String, Path, description = "User name")),
    responses((status = 200, description = "The user is removed", body = RemovedUser)))]
pub async fn remove(
    work: Work,
    Extension(caller): Extension<Caller>,
    PathParams(name): PathParams<String>,
) -> ApiResult<Json<RemovedUser>> {
    let actor = actor(&caller)?;
    let name = known_name(&name)?;
    let shown = name.to_string();
    let sessions_ended = work
        .run(move |app| write(app, |turn| users::remove_user(turn, &actor, &name)))
        .await?;
    Ok(Json(RemovedUser {
        name: shown,
        sessions_ended,
    }))
}

fn role(value: &str) -> ApiResult<Role> {
    Role::parse(value).ok_or_else(|| {
        ApiError::invalid(
            format!("`role`: `{value}` is not a role"),
            "`admin` or `viewer`",
        )
    })
}

/// A user name of the path; one that cannot be a user's names no user (404).
fn known_name(value: &str) -> ApiResult<Username> {
    Username::parse(value)
        .map_err(|e| ApiError::not_found(e.to_string(), "GET /v1/admin/users lists the users"))
}
