//! Which client `X-Request-Id` is kept: a short, plain one (at most [`MAX_REQUEST_ID_LEN`]
//! characters of `A-Z a-z 0-9 . _ -`), sent once. Any other is dropped before the id layer,
//! which then makes a fresh UUID, so a client cannot make the service echo 100 KB, or
//! characters a log or a header reader would trip on, into every response and log line.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

/// The longest client request id kept: room for a UUID, a trace id and a prefix.
pub const MAX_REQUEST_ID_LEN: usize = 128;

const REQUEST_ID: &str = "x-request-id";

/// Removes the client's `X-Request-Id` unless it is one plain, short id.
pub async fn keep_plain_ids(mut request: Request, next: Next) -> Response {
    let mut ids = request.headers().get_all(REQUEST_ID).iter();
    let keep = match (ids.next(), ids.next()) {
        (Some(id), None) => is_plain(id),
        _ => false,
    };
    if !keep {
        request.headers_mut().remove(REQUEST_ID);
    }
    next.run(request).await
}

/// 1 to [`MAX_REQUEST_ID_LEN`] characters, each a letter, a digit, `.`, `_` or `-`.
pub fn is_plain(id: &HeaderValue) -> bool {
    let id = id.as_bytes();
    (1..=MAX_REQUEST_ID_LEN).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_plain_ids_are_kept() {
        let plain =
            |text: &str| is_plain(&HeaderValue::from_bytes(text.as_bytes()).expect("header"));
        assert!(plain("8d3c0a6e-1b2f-4c5d-9e8f-0a1b2c3d4e5f"));
        assert!(plain("trace_01.A-b"));
        assert!(plain(&"a".repeat(MAX_REQUEST_ID_LEN)));
        assert!(!plain(&"a".repeat(MAX_REQUEST_ID_LEN + 1)));
        assert!(!plain(""));
        for bad in ["a b", "a/b", "<script>", "a;b=c", "é"] {
            assert!(!plain(bad), "{bad}");
        }
    }
}
