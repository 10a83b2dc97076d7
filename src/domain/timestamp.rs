//! `Timestamp`: milliseconds since the Unix epoch, written as RFC 3339 in UTC.

use super::price_series::{midnight, parse_day};
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

    /// `text` as an instant: RFC 3339 with its offset (`2025-04-07T09:30:00Z`,
    /// `2025-04-07T11:30:00+02:00`), or a day (`2025-04-07`) for its midnight in UTC.
    pub fn parse(text: &str) -> Option<Timestamp> {
        if let Some(day) = parse_day(text) {
            return Some(midnight(day));
        }
        let at = OffsetDateTime::parse(text, &Rfc3339).ok()?;
        i64::try_from(at.unix_timestamp_nanos() / 1_000_000)
            .ok()
            .map(Timestamp)
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

    #[test]
    fn parses_rfc3339_with_its_offset_or_a_day_at_midnight_utc() {
        let at = Timestamp(1_795_334_734_123);
        assert_eq!(Timestamp::parse("2026-11-22T08:05:34.123Z"), Some(at));
        assert_eq!(Timestamp::parse("2026-11-22T10:05:34.123+02:00"), Some(at));
        assert_eq!(
            Timestamp::parse("2026-11-22"),
            Some(Timestamp(1_795_305_600_000))
        );
        for bad in [
            "",
            "2026-11-31",
            "2026-11-22T08:05",
            "yesterday",
            "1795334734123",
        ] {
            assert_eq!(Timestamp::parse(bad), None, "{bad}");
        }
    }
}
