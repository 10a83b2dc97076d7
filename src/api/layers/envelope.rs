//! Every failure leaves as our JSON error: a handler's `ApiError` is rendered with the `docs`
//! link of its route, and any other error response (axum's empty 405, a 413, a 404 from a
//! layer) is replaced by the matching `ApiError`, keeping its headers; a 405's `Allow` names
//! what the route table says its path answers. A console page's own error page (HTML, rendered
//! by `crate::console`) is left as it is: a person reads it in a browser.

use super::BodyLimit;
use crate::api::error::{internal_because, ApiError};
use axum::extract::{MatchedPath, Request};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

pub async fn render_errors(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let method = request.method().clone();
    let limit = BodyLimit::of(&request);
    let response = next.run(request).await;
    // A 405 has no operation of its method: its link names the path's entry.
    let operation = (response.status() != StatusCode::METHOD_NOT_ALLOWED).then_some(&method);
    let docs = docs_link(route.as_deref(), operation);
    if let Some(error) = response.extensions().get::<ApiError>().cloned() {
        return keep_headers(response, error.to_response(docs));
    }
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error())
        || is_json(&response)
        || response.extensions().get::<PageShown>().is_some()
    {
        return response;
    }
    let error = match status {
        StatusCode::NOT_FOUND => ApiError::not_found(
            "no such path",
            "paths start with /v1; GET /v1/openapi.json lists them",
        ),
        StatusCode::METHOD_NOT_ALLOWED => ApiError::MethodNotAllowed {
            allow: allowed_methods(route.as_deref(), &response),
        },
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::body_too_large(limit),
        status if status.is_server_error() => {
            internal_because(format!("a layer answered {status} without a body"))
        }
        status => ApiError::invalid(
            format!("the request was rejected ({status})"),
            "see the endpoint's documentation",
        ),
    };
    keep_headers(response, error.to_response(docs))
}

/// Marks an error answered as a page of the console rather than as JSON.
#[derive(Debug, Clone, Copy)]
pub struct PageShown;

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// The methods `route` answers, from the route table: axum sets its own `Allow` only once the
/// response has left every layer, this one included, so it cannot be read here.
fn allowed_methods(route: Option<&str>, response: &Response) -> String {
    match route {
        Some(route) => crate::api::allowed_methods(route),
        None => response
            .headers()
            .get(header::ALLOW)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("GET, HEAD")
            .to_owned(),
    }
}

/// `replacement`, carrying the headers the original response set that it does not.
fn keep_headers(original: Response, mut replacement: Response) -> Response {
    for (name, value) in original.headers() {
        if name != header::CONTENT_TYPE
            && name != header::CONTENT_LENGTH
            && !replacement.headers().contains_key(name)
        {
            replacement
                .headers_mut()
                .insert(name.clone(), value.clone());
        }
    }
    replacement
}

/// The operation's address in the OpenAPI document, e.g.
/// `/v1/openapi.json#/paths/~1models~1%7BbrandSlug%7D~1%7Bslug%7D/get`; the path's entry when
/// `method` is `None`; the whole document for a path outside the API.
pub fn docs_link(route: Option<&str>, method: Option<&axum::http::Method>) -> Option<String> {
    let Some(route) = route else {
        return Some("/v1/openapi.json".to_owned());
    };
    let path = route
        .strip_prefix("/v1")
        .filter(|p| !p.is_empty())
        .unwrap_or(route);
    if !crate::api::v1_paths().contains(&path) {
        // Operations endpoints and media URLs are not operations of the document.
        return Some("/v1/openapi.json".to_owned());
    }
    let pointer = path
        .replace('~', "~0")
        .replace('/', "~1")
        .replace('{', "%7B")
        .replace('}', "%7D");
    let operation = method
        .map(|m| format!("/{}", m.as_str().to_lowercase()))
        .unwrap_or_default();
    Some(format!("/v1/openapi.json#/paths/{pointer}{operation}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Method;

    #[test]
    fn docs_links_point_at_the_operation() {
        assert_eq!(
            docs_link(Some("/v1/models/{brandSlug}/{slug}"), Some(&Method::GET)).as_deref(),
            Some("/v1/openapi.json#/paths/~1models~1%7BbrandSlug%7D~1%7Bslug%7D/get")
        );
        assert_eq!(
            docs_link(Some("/brands"), Some(&Method::GET)).as_deref(),
            Some("/v1/openapi.json#/paths/~1brands/get")
        );
        assert_eq!(
            docs_link(Some("/v1/brands"), None).as_deref(),
            Some("/v1/openapi.json#/paths/~1brands")
        );
        assert_eq!(
            docs_link(None, Some(&Method::GET)).as_deref(),
            Some("/v1/openapi.json")
        );
        assert_eq!(
            docs_link(Some("/media/pictures/{id}"), Some(&Method::GET)).as_deref(),
            Some("/v1/openapi.json")
        );
    }
}
