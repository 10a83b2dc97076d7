//! `GET` and `POST /reconcile`: the manifest, a query batch or a data-extension query, read
//! from the query string, a form body (what OpenRefine sends) or a JSON body; JSONP on GET.
//! Batches run on the blocking pool: fifty queries are fifty matcher runs and searches.

use super::extend::{extend, ExtensionQuery};
use super::query_batch::{parse_batch, read_batch, Query};
use super::query_candidates::candidates;
use crate::api::error::{internal, ApiError, ApiResult};
use crate::api::layers::capacity::Work;
use crate::api::layers::BodyLimit;
use crate::api::params::Params;
use crate::api::requests::refuse_repeated_key;
use crate::api::views::w3c::{Manifest, QueryResult};
use crate::app::App;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Query string of `GET /reconcile` (and the fields of a form posted to it).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams, utoipa::ToSchema)]
#[into_params(parameter_in = Query)]
pub struct ServiceParams {
    /// A query batch, as JSON text: `{"q0": {"query": "Rolex 16610LV", "limit": 3}}`. Without
    /// it (and without `extend`) the answer is the service manifest.
    #[param(min_length = 1)]
    #[schema(min_length = 1)]
    queries: Option<String>,
    /// A data-extension query, as JSON text: `{"ids": [...], "properties": [{"id": "reference"}]}`.
    #[param(min_length = 1)]
    #[schema(min_length = 1)]
    extend: Option<String>,
    /// JSONP: the answer wrapped in a call of this function (GET only).
    #[param(pattern = "^[A-Za-z_$.][A-Za-z0-9_$.]{0,63}$")]
    #[schema(pattern = "^[A-Za-z_$.][A-Za-z0-9_$.]{0,63}$")]
    callback: Option<String>,
}

/// What a request to the service asks for.
enum Ask {
    Manifest,
    Queries(Vec<(String, Query)>),
    Extend(ExtensionQuery),
}

impl Ask {
    fn from_fields(queries: Option<&str>, extend: Option<&str>) -> ApiResult<Ask> {
        match (queries, extend) {
            (Some(_), Some(_)) => Err(ApiError::invalid(
                "`queries` and `extend` were both sent",
                "send a query batch or an extension query, one per request",
            )),
            (Some(queries), None) => Ok(Ask::Queries(parse_batch(queries)?)),
            (None, Some(extension)) => Ok(Ask::Extend(ExtensionQuery::parse(extension)?)),
            (None, None) => Ok(Ask::Manifest),
        }
    }

    /// A JSON body: `{"queries": ...}` or `{"extend": ...}` (each as JSON text or inline),
    /// else the body is the batch itself.
    fn from_json(body: &[u8]) -> ApiResult<Ask> {
        let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
            ApiError::invalid(
                format!("the JSON body could not be read: {e}"),
                JSON_BODY_HINT,
            )
        })?;
        refuse_repeated_key(&String::from_utf8_lossy(body), "the body", JSON_BODY_HINT)?;
        let field = |name| value.as_object().and_then(|o| o.get(name)).cloned();
        match (field("queries"), field("extend")) {
            (Some(serde_json::Value::String(text)), None) => Ask::from_fields(Some(&text), None),
            (Some(queries), None) => Ok(Ask::Queries(read_batch(queries)?)),
            (None, Some(serde_json::Value::String(text))) => Ask::from_fields(None, Some(&text)),
            (None, Some(extension)) => Ok(Ask::Extend(ExtensionQuery::read(extension)?)),
            _ => Ok(Ask::Queries(read_batch(value)?)),
        }
    }
}

const JSON_BODY_HINT: &str = "send a query batch as one JSON object";

/// The manifest, a query batch's results or an extension's values.
#[utoipa::path(get, path = "/reconcile", operation_id = "reconcile_get", tag = "reconcile",
    params(ServiceParams),
    responses((status = 200, description = "Without `queries` and `extend`: the service manifest. With `queries`: the candidates of each query, by key. With `extend`: the values of each id (W3C Reconciliation API 0.2 schemas). With `callback`, the same as JavaScript (JSONP).", content_type = "application/json", body = Object)))]
pub async fn reconcile_get(
    work: Work,
    headers: HeaderMap,
    Params(params): Params<ServiceParams>,
) -> ApiResult<Response> {
    let jsonp = Jsonp::parse(params.callback.as_deref())?;
    let ask = Ask::from_fields(params.queries.as_deref(), params.extend.as_deref())?;
    let mut response = jsonp.answer_value(answer(&work, &headers, ask).await?);
    // The manifest's URLs follow these headers: a shared cache must key on them too.
    response.headers_mut().append(
        axum::http::header::VARY,
        axum::http::HeaderValue::from_static("host, x-forwarded-proto"),
    );
    Ok(response)
}

/// A query batch or an extension query, posted as a form (`queries=...`, what OpenRefine
/// sends) or as JSON.
#[utoipa::path(post, path = "/reconcile", operation_id = "reconcile_post", tag = "reconcile",
    request_body(content = ServiceParams, content_type = "application/x-www-form-urlencoded",
        description = "`queries` or `extend` as JSON text. A JSON body (application/json) may instead be the batch itself, or `{\"queries\": ...}` / `{\"extend\": ...}`."),
    responses((status = 200, description = "The candidates of each query, by key; or the values of each id", content_type = "application/json", body = Object)))]
pub async fn reconcile_post(
    work: Work,
    headers: HeaderMap,
    Params(params): Params<ServiceParams>,
    request: Request,
) -> ApiResult<Response> {
    let limit = BodyLimit::of(&request);
    let too_large = |status: StatusCode| {
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::body_too_large(limit)
        } else {
            ApiError::invalid(
                "the body could not be read",
                "send a form (queries=...) or JSON",
            )
        }
    };
    let ask = match content_type(&headers) {
        Some(kind) if kind.starts_with("application/x-www-form-urlencoded") => {
            let Form(form) = Form::<ServiceParams>::from_request(request, &())
                .await
                .map_err(|e| too_large(e.status()))?;
            Ask::from_fields(
                form.queries.as_deref().or(params.queries.as_deref()),
                form.extend.as_deref().or(params.extend.as_deref()),
            )?
        }
        Some(kind) if kind.starts_with("application/json") => {
            let body = Bytes::from_request(request, &())
                .await
                .map_err(|e| too_large(e.status()))?;
            Ask::from_json(&body)?
        }
        _ => Ask::from_fields(params.queries.as_deref(), params.extend.as_deref())?,
    };
    if matches!(ask, Ask::Manifest) {
        // The manifest is a GET's answer: a POST carries something to answer.
        return Err(ApiError::invalid(
            "`queries` or `extend` is required in a POST",
            "post a form (queries=...) or JSON; GET /v1/reconcile answers the service manifest",
        ));
    }
    Ok(Json(answer(&work, &headers, ask).await?).into_response())
}

fn content_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase)
}

async fn answer(work: &Work, headers: &HeaderMap, ask: Ask) -> ApiResult<serde_json::Value> {
    let value = match ask {
        Ask::Manifest => serde_json::to_value(Manifest::for_request(headers)),
        Ask::Queries(queries) => {
            serde_json::to_value(work.run(move |app| results(app, &queries)).await?)
        }
        Ask::Extend(query) => serde_json::to_value(work.run(move |app| extend(app, &query)).await?),
    };
    value.map_err(|e| internal(&e))
}

fn results(app: &App, queries: &[(String, Query)]) -> ApiResult<BTreeMap<String, QueryResult>> {
    queries
        .iter()
        .map(|(key, query)| {
            let result = candidates(app, query)?;
            Ok((key.clone(), QueryResult { result }))
        })
        .collect()
}

/// A JSONP callback name, checked: letters, digits, `_`, `$` and `.`, not starting with a
/// digit, at most 64 characters; so the answer can only ever call a function.
pub struct Jsonp(Option<String>);

impl Jsonp {
    pub fn parse(callback: Option<&str>) -> ApiResult<Jsonp> {
        let Some(name) = callback else {
            return Ok(Jsonp(None));
        };
        let valid = !name.is_empty()
            && name.len() <= 64
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_$.".contains(c));
        if valid {
            Ok(Jsonp(Some(name.to_owned())))
        } else {
            Err(ApiError::invalid(
                format!("`callback` is no function name: `{name}`"),
                "a JavaScript name: letters, digits, _, $ and dots, e.g. callback=jQuery123_456",
            ))
        }
    }

    /// `value` as JSON, or as a call of the callback when one was given.
    pub fn answer(&self, value: &impl Serialize) -> Response {
        match serde_json::to_value(value) {
            Ok(value) => self.answer_value(value),
            Err(e) => internal(&e).into_response(),
        }
    }

    fn answer_value(&self, value: serde_json::Value) -> Response {
        let Some(name) = &self.0 else {
            return Json(value).into_response();
        };
        let mut response = format!("/**/{name}({value});").into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/javascript; charset=utf-8"),
        );
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_function_names_are_callbacks() {
        for good in ["cb", "jQuery1234_5678", "$.x", "_a1"] {
            assert!(Jsonp::parse(Some(good)).is_ok(), "{good}");
        }
        for bad in [
            "",
            "1a",
            "alert(1)",
            "a b",
            "x;y",
            "<script>",
            &"a".repeat(65),
        ] {
            assert!(Jsonp::parse(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_json_body_is_the_batch_or_names_queries_or_extend() {
        let batch = br#"{"q0": {"query": "Rolex 16610"}}"#;
        assert!(matches!(Ask::from_json(batch), Ok(Ask::Queries(q)) if q.len() == 1));
        let wrapped = br#"{"queries": "{\"q0\": {\"query\": \"x\"}}"}"#;
        assert!(matches!(Ask::from_json(wrapped), Ok(Ask::Queries(q)) if q.len() == 1));
        let extension = br#"{"extend": {"ids": [], "properties": []}}"#;
        assert!(matches!(Ask::from_json(extension), Ok(Ask::Extend(_))));
        assert!(Ask::from_json(b"[1]").is_err());
        assert!(Ask::from_fields(Some("{}"), Some("{}")).is_err());
    }

    #[test]
    fn a_key_given_twice_anywhere_is_refused_by_its_path() {
        let named = |ask: ApiResult<Ask>, path: &str| match ask {
            Err(ApiError::InvalidRequest { message, .. }) => {
                message.contains(&format!("`{path}` twice"))
            }
            _ => false,
        };
        let body = |text: &str| Ask::from_json(text.as_bytes());
        let field = |queries: Option<&str>, extend: Option<&str>| Ask::from_fields(queries, extend);
        assert!(named(
            body(r#"{"q0": {"query": "a"}, "q0": {"query": "b"}}"#),
            "q0"
        ));
        assert!(named(
            body(r#"{"q0": {"query": "a", "limit": 1, "limit": 2}}"#),
            "q0.limit"
        ));
        assert!(named(
            body(r#"{"extend": {"ids": [], "ids": ["x"], "properties": []}}"#),
            "extend.ids"
        ));
        assert!(named(
            field(Some(r#"{"q0": {"query": "a", "query": "b"}}"#), None),
            "q0.query"
        ));
        assert!(named(
            field(None, Some(r#"{"ids": ["a"], "ids": [], "properties": []}"#)),
            "ids"
        ));
        assert!(body(r#"{"q0": {"query": "a"}, "q1": {"query": "a"}}"#).is_ok());
    }
}
