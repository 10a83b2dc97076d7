//! The API's one error type. Each variant is one row of the spec's code table: stable code,
//! HTTP status, message and hint. Lower layers' errors map here once, each by its
//! [`ErrorCode`] (`error/codes.rs`), and their detail goes to the log, never to the client. A
//! handler's error travels in the response's extensions so the error layer can add the `docs`
//! link of the route it came from.

mod codes;

pub use codes::{ErrorCode, ECB_HINT};

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
    /// A login named no user, or a wrong password: one answer for both (401).
    BadCredentials,
    /// `GET /metrics` without the metrics token the server was given, or with another: one
    /// answer for both (401, with `WWW-Authenticate: Bearer`).
    TokenRequired,
    /// The session may not do this (403).
    Forbidden,
    /// The resource does not exist (404).
    NotFound {
        message: String,
        hint: Option<String>,
    },
    /// Over budget (429); retry after this many seconds.
    RateLimited { retry_after: u64 },
    /// A server fault (500); its cause was logged when it was made (see [`Logged`]).
    Internal(Logged),
    /// The service cannot answer now (503): its index is being rebuilt, or every request
    /// slot is taken (then with `Retry-After`, in seconds).
    Unavailable {
        message: String,
        retry_after: Option<u64>,
    },
}

/// Proof that the cause of an [`ApiError::Internal`] went to the log: only this module's
/// constructors make one, so no 500 is ever silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Logged(());

/// Where an error row appears in the OpenAPI document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Documented {
    /// On every operation.
    Everywhere,
    /// On the operations that need an admin session.
    AdminRoutes,
    /// Not on v1 operations (the operations endpoints answer it).
    Nowhere,
}

/// One row of the error table: the stable code, its HTTP status, what it means to a client,
/// and where the OpenAPI document lists it. The status, the body's `error` and the document's
/// error responses all come from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorRow {
    pub code: &'static str,
    pub status: StatusCode,
    pub meaning: &'static str,
    pub documented: Documented,
}

const fn row(
    code: &'static str,
    status: StatusCode,
    meaning: &'static str,
    documented: Documented,
) -> ErrorRow {
    ErrorRow {
        code,
        status,
        meaning,
        documented,
    }
}

/// Every error the API answers, in status order.
pub const ERROR_TABLE: [ErrorRow; 8] = [
    row(
        "invalid_request",
        StatusCode::BAD_REQUEST,
        "a parameter or the path shape was rejected",
        Documented::Everywhere,
    ),
    row(
        "unauthorized",
        StatusCode::UNAUTHORIZED,
        "no valid admin session; log in at POST /v1/auth/login",
        Documented::AdminRoutes,
    ),
    row(
        "forbidden",
        StatusCode::FORBIDDEN,
        "the session's role may not do this, or the request came from another origin",
        Documented::AdminRoutes,
    ),
    row(
        "not_found",
        StatusCode::NOT_FOUND,
        "no such resource or path",
        Documented::Everywhere,
    ),
    row(
        "invalid_request",
        StatusCode::METHOD_NOT_ALLOWED,
        "the path does not answer this method (see Allow)",
        Documented::Everywhere,
    ),
    row(
        "rate_limited",
        StatusCode::TOO_MANY_REQUESTS,
        "over budget; retry after Retry-After seconds",
        Documented::Everywhere,
    ),
    row(
        "internal_error",
        StatusCode::INTERNAL_SERVER_ERROR,
        "server fault; safe to retry with backoff",
        Documented::Everywhere,
    ),
    row(
        "internal_error",
        StatusCode::SERVICE_UNAVAILABLE,
        "busy (every request slot taken: retry after Retry-After seconds), or not ready yet (an index is being rebuilt: retry with backoff)",
        Documented::Everywhere,
    ),
];

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

    /// This error's row of [`ERROR_TABLE`].
    pub fn row(&self) -> &'static ErrorRow {
        let status = match self {
            ApiError::InvalidRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Unauthorized | ApiError::BadCredentials | ApiError::TokenRequired => {
                StatusCode::UNAUTHORIZED
            }
            ApiError::Forbidden => StatusCode::FORBIDDEN,
            ApiError::NotFound { .. } => StatusCode::NOT_FOUND,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
        };
        ERROR_TABLE
            .iter()
            .find(|row| row.status == status)
            .unwrap_or(&ERROR_TABLE[6])
    }

    /// The stable machine-readable code.
    pub fn code(&self) -> &'static str {
        self.row().code
    }

    pub fn status(&self) -> StatusCode {
        self.row().status
    }

    /// "the request body is too large", with the configured limit in the hint.
    pub fn body_too_large(limit: usize) -> ApiError {
        ApiError::invalid(
            "the request body is too large",
            format!("send at most {}", human_bytes(limit)),
        )
    }

    pub fn body(&self, docs: Option<String>) -> ErrorBody {
        let (message, hint) = match self {
            ApiError::InvalidRequest { message, hint } | ApiError::NotFound { message, hint } => {
                (message.clone(), hint.clone())
            }
            ApiError::MethodNotAllowed { allow } => (
                "method not allowed on this path".into(),
                Some(format!("this path answers {allow}")),
            ),
            ApiError::Unauthorized => (
                "this endpoint needs an admin session".into(),
                Some("log in with POST /v1/auth/login".into()),
            ),
            ApiError::BadCredentials => ("wrong username or password".into(), None),
            ApiError::TokenRequired => (
                "this endpoint needs the metrics token".into(),
                Some(
                    "send `Authorization: Bearer <token>` with the token the server was given"
                        .into(),
                ),
            ),
            ApiError::Forbidden => ("this session may not do this".into(), None),
            ApiError::RateLimited { retry_after } => (
                "too many requests".into(),
                Some(format!("retry after {retry_after} seconds")),
            ),
            ApiError::Internal(_) => ("the server failed; retry with backoff".into(), None),
            ApiError::Unavailable {
                message,
                retry_after,
            } => (
                message.clone(),
                Some(match retry_after {
                    Some(seconds) => format!("retry after {seconds} seconds"),
                    None => "retry with backoff".into(),
                }),
            ),
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
            ApiError::RateLimited { retry_after }
            | ApiError::Unavailable {
                retry_after: Some(retry_after),
                ..
            } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
            ApiError::TokenRequired => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"metrics\""),
                );
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
    internal_because(crate::domain::causes(error))
}

/// Logs why the server failed (an invariant of the store broken, a panic) and answers
/// `internal_error`.
pub fn internal_because(cause: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %cause, "request failed");
    ApiError::Internal(Logged(()))
}

/// `1048576` -> `1 MiB`: whole binary units when the size is one, else bytes.
fn human_bytes(bytes: usize) -> String {
    const UNITS: [(&str, usize); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    UNITS
        .iter()
        .find(|(_, size)| bytes >= *size && bytes % size == 0)
        .map(|(unit, size)| format!("{} {unit}", bytes / size))
        .unwrap_or_else(|| format!("{bytes} bytes"))
}

/// Result alias of handlers.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_one_row_and_every_error_finds_its_own() {
        for (i, row) in ERROR_TABLE.iter().enumerate() {
            let twins = ERROR_TABLE
                .iter()
                .filter(|r| r.status == row.status)
                .count();
            assert_eq!(twins, 1, "row {i} ({}) shares its status", row.code);
        }
        let errors = [
            ApiError::invalid("m", "h"),
            ApiError::MethodNotAllowed {
                allow: "GET".into(),
            },
            ApiError::Unauthorized,
            ApiError::Forbidden,
            ApiError::not_found("m", "h"),
            ApiError::RateLimited { retry_after: 1 },
            internal_because("test"),
            ApiError::Unavailable {
                message: "m".into(),
                retry_after: Some(1),
            },
        ];
        let statuses: Vec<u16> = errors.iter().map(|e| e.status().as_u16()).collect();
        assert_eq!(statuses, [400, 405, 401, 403, 404, 429, 500, 503]);
        let codes: Vec<&str> = errors.iter().map(ApiError::code).collect();
        assert_eq!(
            codes,
            [
                "invalid_request",
                "invalid_request",
                "unauthorized",
                "forbidden",
                "not_found",
                "rate_limited",
                "internal_error",
                "internal_error"
            ]
        );
    }

    #[test]
    fn the_body_limit_hint_names_the_configured_size() {
        let hint = |limit| match ApiError::body_too_large(limit) {
            ApiError::InvalidRequest { hint, .. } => hint.unwrap_or_default(),
            other => panic!("{other:?}"),
        };
        assert_eq!(hint(1 << 20), "send at most 1 MiB");
        assert_eq!(hint(64 << 10), "send at most 64 KiB");
        assert_eq!(hint(4 << 30), "send at most 4 GiB");
        assert_eq!(hint(1000), "send at most 1000 bytes");
    }
}
