//! The API's one error type. Each variant is one row of the spec's code table: stable code,
//! HTTP status, message and hint. Lower layers' errors map here once, and their detail goes to
//! the log, never to the client.

use axum::http::StatusCode;
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
    /// The endpoint needs a session the caller lacks (401).
    Unauthorized,
    /// The session may not do this (403).
    Forbidden,
    /// The resource does not exist (404).
    NotFound {
        message: String,
        hint: Option<String>,
    },
    /// Over budget (429).
    RateLimited,
    /// A server fault (500); the detail is logged, not sent.
    Internal,
}

/// The JSON body of every failure.
#[derive(Debug, Serialize)]
pub struct ErrorBody {
    pub error: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
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
            ApiError::InvalidRequest { .. } => "invalid_request",
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden => "forbidden",
            ApiError::NotFound { .. } => "not_found",
            ApiError::RateLimited => "rate_limited",
            ApiError::Internal => "internal_error",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::InvalidRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden => StatusCode::FORBIDDEN,
            ApiError::NotFound { .. } => StatusCode::NOT_FOUND,
            ApiError::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn body(&self) -> ErrorBody {
        let (message, hint) = match self {
            ApiError::InvalidRequest { message, hint } | ApiError::NotFound { message, hint } => {
                (message.clone(), hint.clone())
            }
            ApiError::Unauthorized => ("this endpoint needs an admin session".into(), None),
            ApiError::Forbidden => ("this session may not do this".into(), None),
            ApiError::RateLimited => ("too many requests".into(), None),
            ApiError::Internal => ("the server failed; retry with backoff".into(), None),
        };
        ErrorBody {
            error: self.code(),
            message: Some(message),
            hint,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status(), Json(self.body())).into_response()
    }
}

/// Logs a lower layer's failure, with its whole chain of causes, and answers `internal_error`.
fn internal(error: &(dyn std::error::Error + 'static)) -> ApiError {
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
