//! Encoding of stored values. A record is one layout version byte, then its bincode encoding
//! (bincode 2, standard config, through serde); ids and counters are 8-byte big-endian integers
//! with no version byte. Which types are records, and the layout of each, is the table below.

use super::{StoreError, StoreResult};
use crate::domain::rates::EcbRates;
use crate::domain::{
    AuditEntry, Brand, Caliber, Complication, JobRecord, Listing, Model, PictureCandidate,
    PictureRecord, PictureReview, Provider, Series, Session, User,
};

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// A type the store keeps as a record value: under its keyspace's id keys, or (the rates) under
/// a meta key. Its values start with [`StoredRecord::LAYOUT`].
pub trait StoredRecord: serde::Serialize + serde::de::DeserializeOwned {
    /// What the record is, for error messages.
    const KIND: &'static str;
    /// The version of this kind's stored layout. Changing the type's fields or their order
    /// changes its layout: bump this and add a migration step (docs/decisions.md, D-04).
    const LAYOUT: u8;
}

macro_rules! stored_records {
    ($($record:ty => $kind:literal, layout $layout:literal;)*) => {
        $(impl StoredRecord for $record {
            const KIND: &'static str = $kind;
            const LAYOUT: u8 = $layout;
        })*
    };
}

// Every kind starts at layout 1 in schema 3 (0 is never written, so a zeroed value is caught).
stored_records! {
    Brand => "brand", layout 1;
    Series => "series", layout 1;
    Complication => "complication", layout 1;
    Caliber => "calibre", layout 1;
    Model => "model", layout 1;
    Provider => "provider", layout 1;
    Listing => "listing", layout 1;
    EcbRates => "rates", layout 1;
    crate::domain::price_history::AskingPrice => "asking price", layout 1;
    User => "user", layout 1;
    Session => "session", layout 1;
    AuditEntry => "audit entry", layout 1;
    PictureRecord => "picture", layout 1;
    PictureCandidate => "picture candidate", layout 1;
    PictureReview => "picture review", layout 1;
    JobRecord => "job", layout 1;
    super::pending::PendingGroup => "pending pictures", layout 1;
    super::sources::SourceGroup => "listing sources", layout 1;
    super::unmatched::GroupRecord => "group of unmatched listings", layout 2;
    super::duplicates::KeptGroups => "kept duplicate groups", layout 1;
    super::price_series::LogEntry => "series log entry", layout 1;
    super::price_series::FoldProgress => "series fold progress", layout 1;
    crate::domain::price_series::SeriesChunk => "series periods", layout 1;
    crate::domain::price_series::ActivePrices => "series state", layout 1;
}

pub fn encode<T: StoredRecord>(value: &T) -> Vec<u8> {
    let mut out = vec![T::LAYOUT];
    // Encoding our own plain structs into a Vec cannot fail: no maps of unknown length,
    // no I/O. A failure here is a programming error in a record type.
    bincode::serde::encode_into_std_write(value, &mut out, config())
        .expect("stored record types encode");
    out
}

/// Reads a record, refusing a value of another layout and one with bytes left over: a value
/// that does not read back exactly is corrupt, never half-read.
pub fn decode<T: StoredRecord>(key: &[u8], bytes: &[u8]) -> StoreResult<T> {
    let corrupt = |reason: String| StoreError::Corrupt {
        key: key.to_vec(),
        reason,
    };
    let (layout, body) = bytes
        .split_first()
        .ok_or_else(|| corrupt(format!("empty {} record", T::KIND)))?;
    if *layout != T::LAYOUT {
        return Err(corrupt(format!(
            "{} record of layout {layout}; this binary reads layout {}",
            T::KIND,
            T::LAYOUT
        )));
    }
    let (value, read) = bincode::serde::decode_from_slice(body, config())
        .map_err(|e| corrupt(format!("{} record: {e}", T::KIND)))?;
    if read != body.len() {
        return Err(corrupt(format!(
            "{} record followed by {} unread bytes",
            T::KIND,
            body.len() - read
        )));
    }
    Ok(value)
}

pub fn encode_u64(value: u64) -> [u8; 8] {
    value.to_be_bytes()
}

pub fn decode_u64(key: &[u8], bytes: &[u8]) -> StoreResult<u64> {
    let raw: [u8; 8] = bytes.try_into().map_err(|_| StoreError::Corrupt {
        key: key.to_vec(),
        reason: format!("expected 8 bytes, found {}", bytes.len()),
    })?;
    Ok(u64::from_be_bytes(raw))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{ComplicationId, Slug};

    fn complication() -> Complication {
        Complication {
            id: ComplicationId(3),
            slug: Slug::parse("date").expect("slug"),
            name: "Date".into(),
        }
    }

    #[test]
    fn a_record_is_its_layout_byte_then_its_bincode_encoding() {
        let bytes = encode(&complication());
        assert_eq!(bytes[0], Complication::LAYOUT);
        let plain = bincode::serde::encode_to_vec(complication(), config()).expect("encode");
        assert_eq!(bytes[1..], plain[..]);
        assert_eq!(
            decode::<Complication>(b"k", &bytes).expect("decode"),
            complication()
        );
    }

    #[test]
    fn a_value_of_another_layout_or_with_bytes_left_over_is_corrupt_not_misread() {
        let good = encode(&complication());
        let mut other_layout = good.clone();
        other_layout[0] = 2;
        let mut longer = good.clone();
        longer.push(0);
        // A value written before layout bytes: its first byte is the id, 3.
        let unversioned = good[1..].to_vec();
        for (bytes, expected) in [
            (&other_layout[..], "complication record of layout 2"),
            (&longer[..], "followed by 1 unread bytes"),
            (&unversioned[..], "complication record of layout 3"),
            (&[][..], "empty complication record"),
            (&good[..2], "complication record: "),
        ] {
            match decode::<Complication>(b"k", bytes) {
                Err(StoreError::Corrupt { reason, .. }) => {
                    assert!(reason.contains(expected), "{reason:?} lacks {expected:?}")
                }
                other => panic!("{bytes:?} read as {other:?}"),
            }
        }
    }
}
