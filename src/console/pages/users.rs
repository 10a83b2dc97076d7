//! `GET /console/users` (admins only): the back office's users, with the forms that add a
//! colleague, change a role and revoke access through `/v1/admin/users`.

use super::*;
use crate::api::error::ApiError;
use crate::api::views::back_office::UserView;
use crate::jobs::users::list_users;

/// A user as the page lists them: the signed-in admin's own row has no controls.
pub struct UserRow {
    pub user: UserView,
    pub own: bool,
}

#[derive(Template)]
#[template(path = "users.html", config = "src/console/askama.toml")]
struct UsersPage {
    signed: Option<Signed>,
    users: Vec<UserRow>,
}

/// `GET /console/users`: every user and their role; a viewer is refused (403), as the API
/// refuses them the users' endpoints.
pub async fn users(work: Work, SignedCaller(signed): SignedCaller) -> ApiResult<Response> {
    if signed.user.role != Role::Admin {
        return Err(ApiError::Forbidden);
    }
    let page = work
        .run(move |app| {
            let users = (list_users(app.store())?.into_iter())
                .map(|user| UserRow {
                    own: user.name == signed.user.name,
                    user: user.into(),
                })
                .collect();
            Ok(UsersPage {
                signed: Some(Signed::of(&signed)),
                users,
            })
        })
        .await?;
    render(&page)
}
