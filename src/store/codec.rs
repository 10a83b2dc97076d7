//! bincode encoding of stored values (bincode 2, standard config, through serde).

use super::{StoreError, StoreResult};

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

pub fn encode<T: serde::Serialize>(value: &T) -> Vec<u8> {
    // Encoding our own plain structs into a Vec cannot fail: no maps of unknown length,
    // no I/O. A failure here is a programming error in a record type.
    bincode::serde::encode_to_vec(value, config()).expect("stored record types encode")
}

pub fn decode<T: serde::de::DeserializeOwned>(key: &[u8], bytes: &[u8]) -> StoreResult<T> {
    bincode::serde::decode_from_slice(bytes, config())
        .map(|(value, _)| value)
        .map_err(|e| StoreError::Corrupt {
            key: key.to_vec(),
            reason: e.to_string(),
        })
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
