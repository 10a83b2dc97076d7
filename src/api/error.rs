//! The API's one error type. Each variant is one row of the spec's code table: stable code,
//! HTTP status, message and hint. Lower layers' errors map here once, and their detail goes to
//! the log, never to the client. A handler's error travels in the response's extensions so the
//! error layer can add the `docs` link of the route it came from.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

/// A failure answered to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// A parameter or the path shape was rejected (400).
    InvalidRequest {
        message: String,
        hint: Option<String>,
    },
    /// The path exists but not with this method (405, still `invalid_request`).
    MethodNotAllowed { allow: String },
    /// The endpoint needs a session the caller lacks (401).
    Unauthorized,
    /// The session may not do this (403).
    Forbidden,
    /// The resource does not exist (404).
    NotFound {
        message: String,
        hint: Option<String>,
    },
    /// Over budget (429); retry after this many seconds.
    RateLimited { retry_after: u64 },
    /// A server fault (500); the detail is logged, not sent.
    Internal,
    /// The service cannot answer yet (503), e.g. its index is being rebuilt.
    Unavailable { message: String },
}

/// The JSON body of every failure.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// Stable machine-readable code: invalid_request, unauthorized, forbidden, not_found,
    /// rate_limited or internal_error.
    pub error: &'static str,
    /// Prose; may be reworded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What to change about the request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Where to read about the endpoint: its operation in the OpenAPI document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docs: Option<String>,
}

impl ApiError {
    pub fn invalid(message: impl Into<String>, hint: impl Into<String>) -> ApiError {
        ApiError::InvalidRequest {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    pub fn not_found(message: impl Into<String>, hint: impl Into<String>) -> ApiError {
        ApiError::NotFound {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    /// The stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidRequest { .. } | ApiError::MethodNotAllowed { .. } => {
                "invalid_request"
            }
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden => "forbidden",
            ApiError::NotFound { .. } => "not_found",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::Internal | ApiError::Unavailable { .. } => "internal_error",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::InvalidRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden => StatusCode::FORBIDDEN,
            ApiError::NotFound { .. } => StatusCode::NOT_FOUND,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn body(&self, docs: Option<String>) -> ErrorBody {
        let (message, hint) = match self {
            ApiError::InvalidRequest { message, hint } | ApiError::NotFound { message, hint } => {
                (message.clone(), hint.clone())
            }
            ApiError::MethodNotAllowed { allow } => (
                "method not allowed on this path".into(),
                Some(format!("this path answers {allow}")),
            ),
            ApiError::Unauthorized => ("this endpoint needs an admin session".into(), None),
            ApiError::Forbidden => ("this session may not do this".into(), None),
            ApiError::RateLimited { retry_after } => (
                "too many requests".into(),
                Some(format!("retry after {retry_after} seconds")),
            ),
            ApiError::Internal => ("the server failed; retry with backoff".into(), None),
            ApiError::Unavailable { message } => {
                (message.clone(), Some("retry with backoff".into()))
            }
        };
        ErrorBody {
            error: self.code(),
            message: Some(message),
            hint,
            docs,
        }
    }

    /// The full response, with `docs` when the route is known.
    pub fn to_response(&self, docs: Option<String>) -> Response {
        let mut response = (self.status(), Json(self.body(docs))).into_response();
        let headers = response.headers_mut();
        match self {
            ApiError::MethodNotAllowed { allow } => {
                if let Ok(value) = HeaderValue::from_str(allow) {
                    headers.insert(header::ALLOW, value);
                }
            }
            ApiError::RateLimited { retry_after } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
            _ => {}
        }
        response.extensions_mut().insert(self.clone());
        response
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.to_response(None)
    }
}

/// Logs a lower layer's failure, with its whole chain of causes, and answers `internal_error`.
pub fn internal(error: &(dyn std::error::Error + 'static)) -> ApiError {
    let mut chain = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    tracing::error!(error = %chain, "request failed");
    ApiError::Internal
}

impl From<crate::store::StoreError> for ApiError {
    fn from(error: crate::store::StoreError) -> Self {
        internal(&error)
    }
}

impl From<catalogue_index::IndexError> for ApiError {
    fn from(error: catalogue_index::IndexError) -> Self {
        internal(&error)
    }
}

/// Result alias of handlers.
pub type ApiResult<T> = Result<T, ApiError>;
