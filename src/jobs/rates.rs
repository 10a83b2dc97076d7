//! `watch-catalogue rates FILE`: loads an ECB rates file, a day's or a history of many days.
//! Every day is kept under its date; the newest becomes the rates in force unless a later day
//! already is. The file must parse and give a US dollar table for every day before anything is
//! written.

use crate::domain::rates::{parse_ecb_days, tables_of, RatesError};
use crate::store::{StoreError, StoreGeneration, WriteTurn};

/// What loading rates did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RatesReport {
    /// The newest day of the file.
    pub date: String,
    /// Currencies quoted per euro that day.
    pub currencies: usize,
    /// Currencies that day's US dollar table converts.
    pub convertible: usize,
    /// The oldest day of the file: `date` for a daily file.
    pub first: String,
    /// Days stored, each under its date (a day stored before is replaced).
    pub days: usize,
    /// The day of the rates in force after the load: `date`, unless a later day was in force.
    pub in_force: String,
    pub generation: StoreGeneration,
}

impl RatesReport {
    /// One line for the operator: the days stored, and which rates are in force.
    pub fn summary(&self) -> String {
        let days = match self.days {
            1 => format!("the ECB rates of {}", self.date),
            n => format!("{n} days of ECB rates, {} to {}", self.first, self.date),
        };
        let in_force = if self.in_force == self.date {
            String::new()
        } else {
            format!(
                " (kept as history: the rates of {} stay in force)",
                self.in_force
            )
        };
        format!(
            "loaded {days}: {} currencies per euro, {} in the USD table{in_force}; store generation {}",
            self.currencies, self.convertible, self.generation.0
        )
    }
}

/// Why rates were not loaded.
#[derive(Debug, thiserror::Error)]
pub enum RatesJobError {
    #[error("not an ECB rates file")]
    Invalid(#[from] RatesError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Parses `xml` (the ECB's `eurofxref-daily.xml`, `eurofxref-hist-90d.xml` or
/// `eurofxref-hist.xml`) and stores every day of it in one write, the newest as the rates in
/// force unless a later day is.
pub fn load_rates(turn: &WriteTurn<'_>, xml: &str) -> Result<RatesReport, RatesJobError> {
    let days = parse_ecb_days(xml)?;
    let tables = tables_of(&days)?;
    let (Some(newest), Some(oldest), Some(table)) = (days.last(), days.first(), tables.last())
    else {
        // parse_ecb_days refuses a file without a day.
        return Err(RatesError::MissingDate.into());
    };
    let mut batch = turn.batch()?;
    let mut newest_in_force = false;
    for day in &days {
        newest_in_force = batch.put_rates(day)?;
    }
    let in_force = if newest_in_force {
        Some(newest.date.clone())
    } else {
        turn.store().rates().in_force()?.map(|rates| rates.date)
    };
    let generation = turn.commit(batch)?;
    Ok(RatesReport {
        date: newest.date.clone(),
        currencies: newest.rates.len(),
        convertible: table.currencies().count(),
        first: oldest.date.clone(),
        days: days.len(),
        in_force: in_force.unwrap_or_else(|| newest.date.clone()),
        generation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::rates::{parse_ecb_xml, ConversionTable};
    use crate::store::{Store, StoreGeneration};

    /// One day of the ECB's daily file, quoting `usd` and `gbp` per euro.
    fn daily(date: &str, usd: &str, gbp: &str) -> String {
        format!(
            "<gesmes:Envelope xmlns:gesmes='http://www.gesmes.org/xml/2002-08-01'><Cube>{}</Cube></gesmes:Envelope>",
            day_cube(date, usd, gbp)
        )
    }

    fn day_cube(date: &str, usd: &str, gbp: &str) -> String {
        format!(
            "<Cube time='{date}'><Cube currency='USD' rate='{usd}'/><Cube currency='JPY' rate='163.36'/><Cube currency='GBP' rate='{gbp}'/></Cube>"
        )
    }

    /// A history file of `days`, newest first as the ECB writes them.
    fn history(days: &[(&str, &str, &str)]) -> String {
        let cubes: String = days.iter().map(|(d, u, g)| day_cube(d, u, g)).collect();
        format!("<gesmes:Envelope xmlns:gesmes='http://www.gesmes.org/xml/2002-08-01'><Cube>{cubes}</Cube></gesmes:Envelope>")
    }

    fn load(store: &Store, xml: &str) -> Result<RatesReport, RatesJobError> {
        load_rates(&store.write_turn(), xml)
    }

    fn stored_days(store: &Store) -> Vec<String> {
        store
            .rates()
            .days()
            .collect::<Result<_, _>>()
            .expect("days")
    }

    #[test]
    fn a_conversion_at_a_stored_days_rates_matches_the_ecb_file_of_that_day() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), 1 << 20).expect("open");
        let friday = daily("2025-05-09", "1.1252", "0.84770");
        let monday = daily("2025-05-12", "1.1106", "0.84200");
        load(&store, &friday).expect("friday");
        load(&store, &monday).expect("monday");
        let of_file = |xml: &str| {
            ConversionTable::from_ecb(&parse_ecb_xml(xml).expect("parse")).expect("table")
        };
        let stored = |date: &str| {
            store
                .rates()
                .table_on(date)
                .expect("read")
                .expect("a day")
                .1
        };
        let (price, currency) = (12_500, "GBP");
        let mut by_day = Vec::new();
        for (date, xml) in [("2025-05-09", &friday), ("2025-05-12", &monday)] {
            let at_stored = stored(date).to_usd(price, currency);
            assert_eq!(at_stored, of_file(xml).to_usd(price, currency), "{date}");
            assert_eq!(
                stored(date).from_usd(10_000, "JPY"),
                of_file(xml).from_usd(10_000, "JPY"),
                "{date}"
            );
            by_day.push(at_stored);
        }
        // 12,500 GBP: 12500 * 1.1252 / 0.84770 = 16591.9... USD on Friday, 12500 * 1.1106 /
        // 0.842 = 16487.5... USD on Monday.
        assert_eq!(by_day, [Some(16_592), Some(16_488)]);
        // A weekend day converts at Friday's rates.
        assert_eq!(
            store.rates().table_on("2025-05-11").expect("read"),
            Some(("2025-05-09".to_owned(), of_file(&friday)))
        );
    }

    #[test]
    fn a_history_file_stores_every_day_and_the_newest_comes_into_force() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), 1 << 20).expect("open");
        let report = load(
            &store,
            &history(&[
                ("2025-05-12", "1.1106", "0.84200"),
                ("2025-05-09", "1.1252", "0.84770"),
                ("2025-05-08", "1.1290", "0.85000"),
            ]),
        )
        .expect("loaded");
        assert_eq!(
            report,
            RatesReport {
                date: "2025-05-12".into(),
                currencies: 3,
                convertible: 4,
                first: "2025-05-08".into(),
                days: 3,
                in_force: "2025-05-12".into(),
                generation: StoreGeneration(1),
            }
        );
        assert_eq!(
            report.summary(),
            "loaded 3 days of ECB rates, 2025-05-08 to 2025-05-12: 3 currencies per euro, 4 in the USD table; store generation 1"
        );
        assert_eq!(
            stored_days(&store),
            ["2025-05-08", "2025-05-09", "2025-05-12"]
        );
        let in_force = store.rates().in_force().expect("read").expect("rates");
        assert_eq!(in_force.date, "2025-05-12");
        assert_eq!(in_force.rates[0], ("USD".to_owned(), "1.1106".to_owned()));
    }

    #[test]
    fn an_older_file_is_kept_as_history_and_says_which_rates_stay_in_force() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), 1 << 20).expect("open");
        load(&store, &daily("2025-05-12", "1.1106", "0.84200")).expect("monday");
        let report = load(&store, &daily("2025-05-09", "1.1252", "0.84770")).expect("friday");
        assert_eq!(report.in_force, "2025-05-12");
        assert_eq!(
            report.summary(),
            "loaded the ECB rates of 2025-05-09: 3 currencies per euro, 4 in the USD table (kept as history: the rates of 2025-05-12 stay in force); store generation 2"
        );
        assert_eq!(stored_days(&store), ["2025-05-09", "2025-05-12"]);
    }

    #[test]
    fn a_file_with_one_bad_day_writes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), 1 << 20).expect("open");
        load(&store, &daily("2025-05-07", "1.1300", "0.85100")).expect("loaded");
        let before = (store.generation().expect("generation"), stored_days(&store));
        let without_usd = history(&[
            ("2025-05-12", "1.1106", "0.84200"),
            ("2025-05-09", "1.1252", "0.84770"),
        ])
        .replace("<Cube currency='USD' rate='1.1252'/>", "");
        let error = load(&store, &without_usd).expect_err("refused");
        assert!(
            matches!(&error, RatesJobError::Invalid(RatesError::InDay { date, error })
                if date == "2025-05-09" && **error == RatesError::MissingUsd),
            "{error:?}"
        );
        assert_eq!(
            (store.generation().expect("generation"), stored_days(&store)),
            before
        );
        assert_eq!(
            store
                .rates()
                .in_force()
                .expect("read")
                .map(|r| r.date)
                .as_deref(),
            Some("2025-05-07")
        );
    }
}
