//! `GET /console/sign-in`: the form the script posts to the API's own `/v1/auth/login`.

use super::*;

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
