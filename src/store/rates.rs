//! The rates area: the ECB rates in force, the conversion table every price goes through, and
//! how often writes through this store have changed them.
//! Keyspaces: the meta key `MetaKey::Rates` (a record, written by `WriteBatch::put_rates`).

use super::keys::MetaKey;
use super::{Store, StoreError, StoreResult};
use crate::domain::rates::{ConversionTable, EcbRates};
use std::sync::atomic::Ordering;

/// The store's rates: see [`Store::rates`].
#[derive(Clone, Copy)]
pub struct Rates<'s>(pub(super) &'s Store);

impl<'s> Rates<'s> {
    /// The ECB rates in force, as published; `None` before any were loaded.
    pub fn in_force(self) -> StoreResult<Option<EcbRates>> {
        self.0.get(MetaKey::Rates.key())
    }

    /// The conversion table of the rates in force; `None` before any are loaded.
    pub fn table_in_force(self) -> StoreResult<Option<ConversionTable>> {
        self.in_force()?
            .map(|ecb| {
                ConversionTable::from_ecb(&ecb).map_err(|e| StoreError::Corrupt {
                    key: b"rates".to_vec(),
                    reason: e.to_string(),
                })
            })
            .transpose()
    }

    /// How many writes through this store (and its clones) changed the rates in force since it
    /// was opened: a conversion table read at one count holds until the count moves.
    pub fn epoch(self) -> u64 {
        self.0.rates_epoch.load(Ordering::Acquire)
    }
}
