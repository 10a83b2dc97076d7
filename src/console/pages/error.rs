//! A console page's refusals and failures as a page of the console (status kept), rather than
//! the API's JSON: what was wrong and what to do, with the console's header to go on from.

use super::*;
use crate::api::error::ApiError;
use crate::api::layers::envelope::PageShown;
use axum::extract::Request;
use axum::middleware::Next;

#[derive(Template)]
#[template(path = "error.html", config = "src/console/askama.toml")]
struct ErrorPage {
    signed: Option<Signed>,
    status: u16,
    title: &'static str,
    message: String,
    hint: Option<String>,
}

/// What a viewer refused an admin's page is told.
const ADMINS_ONLY: &str =
    "This page is for admins: an admin can change your role on the users page.";

/// Renders the `ApiError` a console handler answered as an error page of the console; every
/// other answer passes as it is.
pub async fn error_pages(request: Request, next: Next) -> Response {
    let signed = match request.extensions().get::<Caller>() {
        Some(Caller::Signed(signed)) => Some(Signed::of(signed)),
        _ => None,
    };
    let mut response = next.run(request).await;
    let Some(error) = response.extensions_mut().remove::<ApiError>() else {
        return response;
    };
    let body = error.body(None);
    // The API's 403 names no remedy; a person on the console is told who may open the page.
    let hint = match error {
        ApiError::Forbidden => Some(ADMINS_ONLY.to_owned()),
        _ => body.hint,
    };
    let page = ErrorPage {
        signed,
        status: error.status().as_u16(),
        title: error.status().canonical_reason().unwrap_or("Error"),
        message: body.message.unwrap_or_default(),
        hint,
    };
    let Ok(html) = page.render() else {
        // The JSON answer stands.
        response.extensions_mut().insert(error);
        return response;
    };
    let mut shown = with_status(error.status(), Html(html).into_response());
    for (name, value) in response.headers() {
        if name != axum::http::header::CONTENT_TYPE && name != axum::http::header::CONTENT_LENGTH {
            shown.headers_mut().insert(name.clone(), value.clone());
        }
    }
    shown
}

/// A page of the console answered with an error status: marked so that the API's envelope
/// leaves it a page.
pub(super) fn with_status(status: axum::http::StatusCode, page: Response) -> Response {
    let mut page = (status, page).into_response();
    page.extensions_mut().insert(PageShown);
    page
}
