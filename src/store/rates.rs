//! The rates area: every day of ECB rates loaded, the rates in force (the latest day) and
//! their conversion table, and how often writes through this store have changed them.
//! Keyspaces: `RatesDay` (a record per day, by date) and the meta key `MetaKey::Rates` (a
//! record), both written by `WriteBatch::put_rates`.

use super::keys::{self, Keyspace, MetaKey};
use super::{Store, StoreError, StoreResult};
use crate::domain::rates::{ConversionTable, EcbRates};
use std::ops::Bound;
use std::sync::atomic::Ordering;

/// The store's rates: see [`Store::rates`].
#[derive(Clone, Copy)]
pub struct Rates<'s>(pub(super) &'s Store);

/// The stored days nearest to a date, each side of it, the date itself excluded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NearestDays {
    /// The latest stored day before the date.
    pub before: Option<String>,
    /// The earliest stored day after it.
    pub after: Option<String>,
}

impl<'s> Rates<'s> {
    /// The ECB rates in force, as published; `None` before any were loaded.
    pub fn in_force(self) -> StoreResult<Option<EcbRates>> {
        self.0.get(MetaKey::Rates.key())
    }

    /// The conversion table of the rates in force; `None` before any are loaded.
    pub fn table_in_force(self) -> StoreResult<Option<ConversionTable>> {
        self.in_force()?
            .map(|ecb| table_of(&MetaKey::Rates.key(), &ecb))
            .transpose()
    }

    /// The ECB rates of the day `date` (`YYYY-MM-DD`) as published; `None` when that day is
    /// not stored.
    pub fn day(self, date: &str) -> StoreResult<Option<EcbRates>> {
        self.0.get(keys::rates_day(date))
    }

    /// The day `date` as published and its conversion table; `None` when it is not stored.
    pub fn day_with_table(self, date: &str) -> StoreResult<Option<(EcbRates, ConversionTable)>> {
        let Some(ecb) = self.day(date)? else {
            return Ok(None);
        };
        let table = table_of(&keys::rates_day(date), &ecb)?;
        Ok(Some((ecb, table)))
    }

    /// The conversion table of the latest stored day on or before `date` (`YYYY-MM-DD`), with
    /// that day's date: the rates a price of that date converts at. `None` when no stored day
    /// is on or before it.
    pub fn table_on(self, date: &str) -> StoreResult<Option<(String, ConversionTable)>> {
        let through_date = (
            Bound::Included(Keyspace::RatesDay.prefix()),
            Bound::Included(keys::rates_day(date)),
        );
        let Some(entry) = self.0.db.range(through_date).next_back() else {
            return Ok(None);
        };
        let (key, value) = entry?;
        let ecb: EcbRates = super::codec::decode(&key, &value)?;
        let table = table_of(&key, &ecb)?;
        Ok(Some((ecb.date, table)))
    }

    /// Every stored day as published, oldest first.
    pub fn all_days(self) -> impl Iterator<Item = StoreResult<EcbRates>> + 's {
        self.0.all(Keyspace::RatesDay)
    }

    /// The date of every stored day, oldest first, read from the keys alone.
    pub fn days(self) -> impl Iterator<Item = StoreResult<String>> + 's {
        let store = self.0;
        store
            .db
            .scan_prefix(Keyspace::RatesDay.prefix())
            .keys()
            .map(|key| date_of(&key?))
    }

    /// The stored days nearest to `date` (`YYYY-MM-DD`) on each side: what to offer instead of
    /// a day that is not stored.
    pub fn nearest_days(self, date: &str) -> StoreResult<NearestDays> {
        let db = &self.0.db;
        let key = keys::rates_day(date);
        let before = (
            Bound::Included(Keyspace::RatesDay.prefix()),
            Bound::Excluded(key.clone()),
        );
        let after = (Bound::Excluded(key), Bound::Unbounded);
        let before = db.range(before).keys().next_back().transpose()?;
        let after = db.range(after).keys().next().transpose()?;
        let in_days = |key: &sled::IVec| key.first() == Some(&(Keyspace::RatesDay as u8));
        Ok(NearestDays {
            before: before.map(|key| date_of(&key)).transpose()?,
            after: after.filter(in_days).map(|key| date_of(&key)).transpose()?,
        })
    }

    /// How many writes through this store (and its clones) changed the rates in force since it
    /// was opened: a conversion table read at one count holds until the count moves.
    pub fn epoch(self) -> u64 {
        self.0.rates_epoch.load(Ordering::Acquire)
    }

    /// How many writes through this store (and its clones) wrote a day of rates since it was
    /// opened, an older day too: what [`Rates::table_on`] answers holds until it moves.
    pub fn days_epoch(self) -> u64 {
        self.0.rate_days_epoch.load(Ordering::Acquire)
    }
}

/// The conversion table of stored rates: a stored day always gives one, so failing is a
/// corrupt record.
fn table_of(key: &[u8], ecb: &EcbRates) -> StoreResult<ConversionTable> {
    ConversionTable::from_ecb(ecb).map_err(|e| StoreError::Corrupt {
        key: key.to_vec(),
        reason: e.to_string(),
    })
}

fn date_of(key: &[u8]) -> StoreResult<String> {
    keys::rates_day_date(key)
        .map(str::to_owned)
        .ok_or_else(|| StoreError::Corrupt {
            key: key.to_vec(),
            reason: "rates day key without a UTF-8 date and its terminator".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::rates::parse_ecb_xml;

    /// A day of rates quoting `usd` and `gbp` per euro.
    fn day(date: &str, usd: &str, gbp: &str) -> EcbRates {
        let xml = format!(
            "<Cube><Cube time='{date}'><Cube currency='USD' rate='{usd}'/><Cube currency='GBP' rate='{gbp}'/></Cube></Cube>"
        );
        parse_ecb_xml(&xml).expect("a day")
    }

    /// Puts `days` in one write; whether each became the rates in force.
    fn load(store: &Store, days: &[EcbRates]) -> Vec<bool> {
        let turn = store.write_turn();
        let mut batch = turn.batch().expect("batch");
        let in_force = (days.iter())
            .map(|day| batch.put_rates(day).expect("put"))
            .collect();
        turn.commit(batch).expect("commit");
        in_force
    }

    fn stored_days(store: &Store) -> Vec<String> {
        store
            .rates()
            .days()
            .collect::<StoreResult<_>>()
            .expect("days")
    }

    fn in_force_date(store: &Store) -> Option<String> {
        store
            .rates()
            .in_force()
            .expect("read")
            .map(|rates| rates.date)
    }

    #[test]
    fn every_day_loaded_is_kept_and_the_newest_is_in_force() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), 1 << 20).expect("open");
        let (friday, monday) = (
            day("2025-05-09", "1.1252", "0.84770"),
            day("2025-05-12", "1.1106", "0.84200"),
        );
        assert_eq!(load(&store, std::slice::from_ref(&friday)), [true]);
        assert_eq!(load(&store, std::slice::from_ref(&monday)), [true]);
        assert_eq!(stored_days(&store), ["2025-05-09", "2025-05-12"]);
        assert_eq!(store.rates().day("2025-05-09").expect("read"), Some(friday));
        assert_eq!(store.rates().in_force().expect("read"), Some(monday));
        assert_eq!(store.rates().day("2025-05-10").expect("read"), None);
    }

    #[test]
    fn an_older_day_loaded_is_kept_but_does_not_replace_the_rates_in_force() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), 1 << 20).expect("open");
        let monday = day("2025-05-12", "1.1106", "0.84200");
        load(&store, std::slice::from_ref(&monday));
        let epoch = store.rates().epoch();
        let listings_generation = store.listings_generation().expect("generation");
        let friday = day("2025-05-09", "1.1252", "0.84770");
        assert_eq!(load(&store, std::slice::from_ref(&friday)), [false]);
        assert_eq!(store.rates().in_force().expect("read"), Some(monday));
        assert_eq!(store.rates().day("2025-05-09").expect("read"), Some(friday));
        assert_eq!(store.rates().epoch(), epoch, "no price moved");
        assert_eq!(
            store.listings_generation().expect("generation"),
            listings_generation,
            "the listings index stays current"
        );
    }

    #[test]
    fn a_day_loaded_again_replaces_its_record_and_reprices_only_when_it_changed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), 1 << 20).expect("open");
        load(&store, &[day("2025-05-09", "1.1252", "0.84770")]);
        let corrected = day("2025-05-09", "1.1250", "0.84770");
        let epoch = store.rates().epoch();
        assert_eq!(load(&store, std::slice::from_ref(&corrected)), [true]);
        assert_eq!(
            store.rates().day("2025-05-09").expect("read"),
            Some(corrected.clone())
        );
        assert_eq!(
            store.rates().in_force().expect("read"),
            Some(corrected.clone())
        );
        assert_eq!(store.rates().epoch(), epoch + 1);
        assert_eq!(load(&store, &[corrected]), [true]);
        assert_eq!(
            store.rates().epoch(),
            epoch + 1,
            "the same rates again move no price"
        );
        assert_eq!(stored_days(&store), ["2025-05-09"]);
    }

    #[test]
    fn days_put_in_one_write_leave_the_newest_in_force_whatever_their_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), 1 << 20).expect("open");
        let days = [
            day("2025-05-12", "1.1106", "0.84200"),
            day("2025-05-08", "1.1290", "0.85000"),
            day("2025-05-09", "1.1252", "0.84770"),
        ];
        assert_eq!(load(&store, &days), [true, false, false]);
        assert_eq!(in_force_date(&store).as_deref(), Some("2025-05-12"));
        assert_eq!(
            stored_days(&store),
            ["2025-05-08", "2025-05-09", "2025-05-12"]
        );
    }

    #[test]
    fn a_date_converts_at_the_latest_day_on_or_before_it_and_finds_its_neighbours() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), 1 << 20).expect("open");
        assert_eq!(store.rates().table_on("2025-05-09").expect("read"), None);
        assert_eq!(
            store.rates().nearest_days("2025-05-09").expect("read"),
            NearestDays::default()
        );
        let (friday, monday) = (
            day("2025-05-09", "1.1252", "0.84770"),
            day("2025-05-12", "1.1106", "0.84200"),
        );
        load(&store, &[friday.clone(), monday.clone()]);
        let table_of = |day: &EcbRates| ConversionTable::from_ecb(day).expect("table");
        let on = |date: &str| store.rates().table_on(date).expect("read");
        assert_eq!(on("2025-05-08"), None, "before every stored day");
        assert_eq!(
            on("2025-05-09"),
            Some(("2025-05-09".to_owned(), table_of(&friday)))
        );
        assert_eq!(
            on("2025-05-11"),
            Some(("2025-05-09".to_owned(), table_of(&friday)))
        );
        assert_eq!(
            on("2025-05-12"),
            Some(("2025-05-12".to_owned(), table_of(&monday)))
        );
        assert_eq!(
            on("2026-01-01"),
            Some(("2025-05-12".to_owned(), table_of(&monday)))
        );
        let nearest = |date: &str| store.rates().nearest_days(date).expect("read");
        let days = |before: Option<&str>, after: Option<&str>| NearestDays {
            before: before.map(str::to_owned),
            after: after.map(str::to_owned),
        };
        assert_eq!(
            nearest("2025-05-10"),
            days(Some("2025-05-09"), Some("2025-05-12"))
        );
        assert_eq!(nearest("2025-05-12"), days(Some("2025-05-09"), None));
        assert_eq!(nearest("2025-05-01"), days(None, Some("2025-05-09")));
        assert_eq!(nearest("2025-06-01"), days(Some("2025-05-12"), None));
    }
}
