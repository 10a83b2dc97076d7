//! `Timestamp`: milliseconds since the Unix epoch, written as RFC 3339 in UTC.

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// A point in time, stored as Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The current time.
    pub fn now() -> Timestamp {
        let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
        Timestamp((nanos / 1_000_000) as i64)
    }

    /// RFC 3339 in UTC with millisecond precision, e.g. `2026-11-22T08:05:34.123Z`.
    pub fn to_rfc3339(self) -> String {
        let nanos = i128::from(self.0) * 1_000_000;
        OffsetDateTime::from_unix_timestamp_nanos(nanos)
            .ok()
            .and_then(|t| t.format(&Rfc3339).ok())
            .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_rfc3339_utc() {
        assert_eq!(Timestamp(0).to_rfc3339(), "1970-01-01T00:00:00Z");
        assert_eq!(
            Timestamp(1_795_334_734_123).to_rfc3339(),
            "2026-11-22T08:05:34.123Z"
        );
    }
}
