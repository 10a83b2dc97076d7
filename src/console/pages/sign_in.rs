//! `/console/sign-in`: the form, which the script posts to the API's own `/v1/auth/login`; a
//! browser without the script posts it here, to the same sign-in.

use super::*;
use crate::api::back_office::auth::{open_session, SignIn};
use crate::api::back_office::ClientIp;
use crate::api::error::ApiError;
use crate::api::requests::Credentials;
use axum::http::header;

#[derive(Template)]
#[template(path = "sign_in.html", config = "src/console/askama.toml")]
struct SignInPage {
    signed: Option<Signed>,
    refused: Option<String>,
}

/// `GET /console/sign-in`: the form, or home for a caller already signed in.
pub async fn sign_in(Extension(caller): Extension<Caller>) -> ApiResult<Response> {
    if let Caller::Signed(_) = caller {
        return Ok(Redirect::to(CONSOLE_HOME).into_response());
    }
    render(&SignInPage {
        signed: None,
        refused: None,
    })
}

/// `POST /console/sign-in` (a form, from this origin only, as the guard checks): signs in as
/// the API does and goes home, or shows the form again saying why (401, or 429 when throttled).
pub async fn sign_in_form(
    work: Work,
    Extension(sign_in): Extension<Arc<SignIn>>,
    Extension(ClientIp(ip)): Extension<ClientIp>,
    form: Result<axum::Form<Credentials>, axum::extract::rejection::FormRejection>,
) -> ApiResult<Response> {
    let axum::Form(credentials) = form.map_err(|rejection| {
        ApiError::invalid(
            format!("the form could not be read: {}", rejection.body_text()),
            "sign in with a name and a password",
        )
    })?;
    match open_session(&work, &sign_in, ip, credentials).await {
        Ok((cookie, _)) => {
            let mut home = Redirect::to(CONSOLE_HOME).into_response();
            if let Ok(cookie) = header::HeaderValue::from_str(&cookie) {
                home.headers_mut().insert(header::SET_COOKIE, cookie);
            }
            Ok(home)
        }
        Err(refused @ (ApiError::BadCredentials | ApiError::RateLimited { .. })) => {
            let message = refused.body(None).message.unwrap_or_default();
            let page = render(&SignInPage {
                signed: None,
                refused: Some(message),
            })?;
            let mut page = super::error::with_status(refused.status(), page);
            if let ApiError::RateLimited { retry_after } = refused {
                page.headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from(retry_after));
            }
            Ok(page)
        }
        Err(other) => Err(other),
    }
}
