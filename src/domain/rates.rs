//! ECB daily reference rates and the conversion table every price goes through.
//!
//! The ECB publishes, for each day, how many units of each currency one euro buys, as decimal
//! strings: a file for the day, or a history of many. We keep those strings as published and
//! derive one table from each day: units of each
//! currency per US dollar, `usd_to[C] = rate[C] / rate[USD]`, computed in exact decimal
//! arithmetic (never binary floats) and rounded to 10 decimal places, half to even. Every
//! conversion uses that table and rounds the result to whole units, half away from zero.

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Decimal places kept in the derived USD table.
pub const TABLE_SCALE: u32 = 10;

/// One day of ECB reference rates, exactly as published (EUR base).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EcbRates {
    /// The day the rates are for, `YYYY-MM-DD`.
    pub date: String,
    /// Currency code and rate per euro, as the ECB wrote them, in the ECB's order.
    pub rates: Vec<(String, String)>,
}

/// Why a rates file is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RatesError {
    #[error("not readable as XML: {0}")]
    Xml(String),
    #[error("no rates day found (a <Cube time='YYYY-MM-DD'> element)")]
    MissingDate,
    #[error("`{0}` is not a date of the form YYYY-MM-DD")]
    BadDate(String),
    #[error("`{0}` is not a currency code (three capital letters)")]
    BadCurrency(String),
    #[error("rate `{rate}` of {currency} is not a positive decimal number")]
    BadRate { currency: String, rate: String },
    #[error("{0} appears twice")]
    Duplicate(String),
    #[error("the file has no USD rate, so no USD table can be derived")]
    MissingUsd,
    #[error("the day {0} appears twice")]
    DuplicateDay(String),
    #[error("the rate of {0} comes before any day (a <Cube time='YYYY-MM-DD'> element)")]
    RateOutsideDay(String),
    /// What is wrong with one day of a file, naming the day: a history file holds thousands.
    #[error("{date}: {error}")]
    InDay {
        date: String,
        error: Box<RatesError>,
    },
    #[error("the file holds {0} days of rates; a daily file holds one")]
    SeveralDays(usize),
}

impl RatesError {
    fn in_day(self, date: &str) -> RatesError {
        RatesError::InDay {
            date: date.to_owned(),
            error: Box::new(self),
        }
    }

    /// The error itself, without the day it was found in.
    fn without_day(self) -> RatesError {
        match self {
            RatesError::InDay { error, .. } => *error,
            other => other,
        }
    }
}

/// Parses the ECB's daily XML (`eurofxref-daily.xml`: gesmes envelope, `Cube` elements): one
/// day. A file of several days is refused; [`parse_ecb_days`] reads those.
pub fn parse_ecb_xml(xml: &str) -> Result<EcbRates, RatesError> {
    let days = parse_ecb_days(xml).map_err(RatesError::without_day)?;
    match <[EcbRates; 1]>::try_from(days) {
        Ok([day]) => Ok(day),
        Err(days) => Err(RatesError::SeveralDays(days.len())),
    }
}

/// Parses any of the ECB's files of reference rates: the daily one, or a history
/// (`eurofxref-hist-90d.xml`, `eurofxref-hist.xml`: the same envelope, a `<Cube time='...'>` per
/// day). Every day must quote USD, so that each gives a USD table. Oldest day first.
pub fn parse_ecb_days(xml: &str) -> Result<Vec<EcbRates>, RatesError> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut days: Vec<EcbRates> = Vec::new();
    // A rate before any day: refused once the file is known to have a day at all.
    let mut outside_a_day = None;
    loop {
        let element = match reader.read_event().map_err(xml_error)? {
            Event::Eof => break,
            Event::Start(element) | Event::Empty(element)
                if element.local_name().as_ref() == b"Cube" =>
            {
                element
            }
            _ => continue,
        };
        let attributes = cube_attributes(&element)?;
        if let Some(time) = attributes.get("time") {
            start_day(&mut days, time)?;
        }
        if let (Some(currency), Some(rate)) = (attributes.get("currency"), attributes.get("rate")) {
            // A rate belongs to the day opened last, as the ECB nests them.
            match days.last_mut() {
                Some(day) => add_rate(day, currency, rate).map_err(|e| e.in_day(&day.date))?,
                None => outside_a_day = Some(check_rate_of(currency, rate)?),
            }
        }
    }
    finish_days(days, outside_a_day)
}

fn xml_error(error: impl std::fmt::Display) -> RatesError {
    RatesError::Xml(error.to_string())
}

/// The attributes of a `Cube` element by local name, their values unescaped.
fn cube_attributes(
    element: &quick_xml::events::BytesStart<'_>,
) -> Result<BTreeMap<String, String>, RatesError> {
    let mut attributes = BTreeMap::new();
    for attribute in element.attributes() {
        let attribute = attribute.map_err(xml_error)?;
        let value = attribute
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(xml_error)?;
        attributes.insert(
            String::from_utf8_lossy(attribute.key.local_name().as_ref()).into_owned(),
            value.into_owned(),
        );
    }
    Ok(attributes)
}

fn start_day(days: &mut Vec<EcbRates>, time: &str) -> Result<(), RatesError> {
    let date = check_date(time)?;
    if days.iter().any(|day| day.date == date) {
        return Err(RatesError::DuplicateDay(date));
    }
    days.push(EcbRates {
        date,
        rates: Vec::new(),
    });
    Ok(())
}

fn add_rate(day: &mut EcbRates, currency: &str, rate: &str) -> Result<(), RatesError> {
    let currency = check_rate_of(currency, rate)?;
    if day.rates.iter().any(|(c, _)| *c == currency) {
        return Err(RatesError::Duplicate(currency));
    }
    day.rates.push((currency, rate.to_owned()));
    Ok(())
}

/// The currency of a published rate, both checked.
fn check_rate_of(currency: &str, rate: &str) -> Result<String, RatesError> {
    let currency = check_currency(currency)?;
    check_rate(&currency, rate)?;
    Ok(currency)
}

/// The days read, oldest first, once the file is known whole: it has a day, no rate outside
/// one, and a USD rate every day.
fn finish_days(
    mut days: Vec<EcbRates>,
    outside_a_day: Option<String>,
) -> Result<Vec<EcbRates>, RatesError> {
    if days.is_empty() {
        return Err(RatesError::MissingDate);
    }
    if let Some(currency) = outside_a_day {
        return Err(RatesError::RateOutsideDay(currency));
    }
    if let Some(day) = days
        .iter()
        .find(|day| !day.rates.iter().any(|(c, _)| c == "USD"))
    {
        return Err(RatesError::MissingUsd.in_day(&day.date));
    }
    days.sort_by(|a, b| a.date.cmp(&b.date));
    Ok(days)
}

fn check_date(text: &str) -> Result<String, RatesError> {
    if is_calendar_day(text) {
        Ok(text.to_owned())
    } else {
        Err(RatesError::BadDate(text.to_owned()))
    }
}

/// True for a day of the calendar written `YYYY-MM-DD`: the form under which days are keyed,
/// so that the order of the texts is the order of the days.
pub fn is_calendar_day(text: &str) -> bool {
    let bytes = text.as_bytes();
    let shape = bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        });
    if !shape {
        return false;
    }
    // ASCII digits only, so these slices fall on characters and parse.
    let number = |from: usize, to: usize| text[from..to].parse::<u32>().unwrap_or(0);
    let (year, month, day) = (number(0, 4), number(5, 7), number(8, 10));
    (1..=12).contains(&month) && (1..=days_in_month(year, month)).contains(&day)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A currency code: three capital ASCII letters.
pub fn check_currency(text: &str) -> Result<String, RatesError> {
    if text.len() == 3 && text.bytes().all(|b| b.is_ascii_uppercase()) {
        Ok(text.to_owned())
    } else {
        Err(RatesError::BadCurrency(text.to_owned()))
    }
}

/// A published rate: digits with at most one decimal point, greater than zero.
fn check_rate(currency: &str, rate: &str) -> Result<Decimal, RatesError> {
    let plain = !rate.is_empty()
        && rate.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && rate.matches('.').count() <= 1;
    match rate.parse::<Decimal>() {
        Ok(value) if plain && value > Decimal::ZERO => Ok(value),
        _ => Err(RatesError::BadRate {
            currency: currency.to_owned(),
            rate: rate.to_owned(),
        }),
    }
}

/// The USD table of every day of a file, in its order; refused at the first day that gives none.
pub fn tables_of(days: &[EcbRates]) -> Result<Vec<ConversionTable>, RatesError> {
    days.iter()
        .map(|day| ConversionTable::from_ecb(day).map_err(|e| e.in_day(&day.date)))
        .collect()
}

/// Units of each currency per US dollar, derived from one day of ECB rates.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversionTable {
    pub date: String,
    usd_to: BTreeMap<String, Decimal>,
}

impl ConversionTable {
    /// Derives the USD table: EUR is `1 / rate[USD]`, USD is 1, others `rate[C] / rate[USD]`.
    pub fn from_ecb(ecb: &EcbRates) -> Result<ConversionTable, RatesError> {
        let mut per_euro = BTreeMap::new();
        for (currency, rate) in &ecb.rates {
            per_euro.insert(currency.clone(), check_rate(currency, rate)?);
        }
        per_euro.insert("EUR".to_owned(), Decimal::ONE);
        let usd = *per_euro.get("USD").ok_or(RatesError::MissingUsd)?;
        let usd_to = per_euro
            .into_iter()
            .map(|(currency, rate)| {
                let derived = (rate / usd)
                    .round_dp_with_strategy(TABLE_SCALE, RoundingStrategy::MidpointNearestEven);
                (currency, derived.normalize())
            })
            .collect();
        Ok(ConversionTable {
            date: ecb.date.clone(),
            usd_to,
        })
    }

    /// The table as decimal strings, by currency code.
    pub fn rates(&self) -> impl Iterator<Item = (&str, String)> {
        self.usd_to.iter().map(|(c, r)| (c.as_str(), r.to_string()))
    }

    /// Currencies the table converts, sorted.
    pub fn currencies(&self) -> impl Iterator<Item = &str> {
        self.usd_to.keys().map(String::as_str)
    }

    pub fn supports(&self, currency: &str) -> bool {
        self.usd_to.contains_key(currency)
    }

    /// `amount` of `currency` in whole US dollars; `None` for a currency the table lacks.
    pub fn to_usd(&self, amount: u64, currency: &str) -> Option<u64> {
        let rate = self.usd_to.get(currency)?;
        whole(Decimal::from(amount) / rate)
    }

    /// A listing's asking price in whole US dollars; `None` when it has no price, or one in a
    /// currency the table lacks.
    pub fn usd_price(&self, price: Option<u64>, currency: Option<&str>) -> Option<u64> {
        self.to_usd(price?, currency?)
    }

    /// `usd` whole US dollars in whole units of `currency`; `None` for a currency the table lacks.
    pub fn from_usd(&self, usd: u64, currency: &str) -> Option<u64> {
        self.from_usd_into(currency)?.convert(usd)
    }

    /// The conversion of whole US dollars into `currency`, looked up once for many amounts.
    pub fn from_usd_into(&self, currency: &str) -> Option<FromUsd> {
        self.usd_to.get(currency).map(|&rate| FromUsd::new(rate))
    }
}

/// Whole US dollars into whole units of one currency: [`ConversionTable::from_usd`] for many
/// amounts (a model's asking prices), with the rate looked up once and the exact product taken
/// in integers when it fits `Decimal`'s 96 bits, where `Decimal` would be exact too: the same
/// figures, without a decimal multiplication and rounding per amount.
#[derive(Debug, Clone, Copy)]
pub struct FromUsd {
    rate: Decimal,
    /// The rate as `mantissa / 10^scale`.
    mantissa: u128,
    ten_to_scale: u128,
}

/// Products from here on may not be exact in `Decimal`, so they go through it.
const DECIMAL_EXACT_BELOW: u128 = 1 << 96;

impl FromUsd {
    fn new(rate: Decimal) -> FromUsd {
        FromUsd {
            rate,
            // Rates are checked positive when the table is made.
            mantissa: rate.mantissa().unsigned_abs(),
            ten_to_scale: 10u128.pow(rate.scale()),
        }
    }

    /// `usd` in the currency, rounded to whole units half away from zero; `None` past `u64`.
    pub fn convert(&self, usd: u64) -> Option<u64> {
        match u128::from(usd).checked_mul(self.mantissa) {
            Some(product) if product < DECIMAL_EXACT_BELOW => {
                let (units, rest) = (product / self.ten_to_scale, product % self.ten_to_scale);
                let rounded = units + u128::from(2 * rest >= self.ten_to_scale);
                u64::try_from(rounded).ok()
            }
            _ => whole(Decimal::from(usd) * self.rate),
        }
    }
}

/// An asking price shown in `target`: the price itself when already in `target`, else its US
/// dollar price through `table` converted into `target` (USD converts as the identity). `None`
/// when unpriced or when the table cannot convert it.
pub fn display_price(
    table: Option<&ConversionTable>,
    price: Option<u64>,
    currency: Option<&str>,
    target: &str,
) -> Option<u64> {
    let (price, currency) = (price?, currency?);
    if currency == target {
        return Some(price);
    }
    usd_to_display(table, table?.to_usd(price, currency)?, target)
}

/// `usd` whole US dollars in `target`; USD converts as the identity, with or without a table.
pub fn usd_to_display(table: Option<&ConversionTable>, usd: u64, target: &str) -> Option<u64> {
    usd_into_display(table, target)?(usd)
}

/// [`usd_to_display`] into one `target` for many amounts; `None` when `table` cannot convert
/// into it.
pub fn usd_into_display(
    table: Option<&ConversionTable>,
    target: &str,
) -> Option<impl Fn(u64) -> Option<u64>> {
    let rate = match target {
        "USD" => None,
        _ => Some(table?.from_usd_into(target)?),
    };
    Some(move |usd| match &rate {
        None => Some(usd),
        Some(rate) => rate.convert(usd),
    })
}

/// The one rounding rule of conversions: to whole units, half away from zero.
fn whole(value: Decimal) -> Option<u64> {
    value
        .round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero)
        .to_u64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FIXTURE: &str = include_str!("../../fixtures/rates.xml");

    fn table() -> ConversionTable {
        ConversionTable::from_ecb(&parse_ecb_xml(FIXTURE).expect("parse")).expect("table")
    }

    #[test]
    fn the_published_figures_are_kept_exactly() {
        let ecb = parse_ecb_xml(FIXTURE).expect("parse");
        assert_eq!(ecb.date, "2025-05-09");
        assert_eq!(ecb.rates.len(), 30);
        assert_eq!(ecb.rates[0], ("USD".to_owned(), "1.1252".to_owned()));
        // Trailing zeros as published, not as a number would print.
        assert!(ecb
            .rates
            .contains(&("GBP".to_owned(), "0.84770".to_owned())));
        assert!(ecb
            .rates
            .contains(&("SEK".to_owned(), "10.9200".to_owned())));
    }

    #[test]
    fn the_usd_table_is_derived_exactly_and_rounded_to_ten_places() {
        let table = table();
        let rates: BTreeMap<&str, String> = table.rates().collect();
        // By hand: 1 / 1.1252 = 0.88873089228581585496..., 0.84770 / 1.1252 = 0.75337717739068609...,
        // 163.36 / 1.1252 = 145.18307856381087806...
        assert_eq!(rates["USD"], "1");
        assert_eq!(rates["EUR"], "0.8887308923");
        assert_eq!(rates["GBP"], "0.7533771774");
        assert_eq!(rates["JPY"], "145.1830785638");
        assert_eq!(rates.len(), 31);
    }

    #[test]
    fn conversions_round_to_whole_units_half_away_from_zero() {
        let table = table();
        // 1000 EUR / 0.8887308923 = 1125.1999999...: 1125 USD.
        assert_eq!(table.to_usd(1000, "EUR"), Some(1125));
        assert_eq!(table.to_usd(1000, "USD"), Some(1000));
        assert_eq!(table.to_usd(100, "JPY"), Some(1));
        assert_eq!(table.from_usd(1000, "GBP"), Some(753));
        assert_eq!(table.from_usd(0, "GBP"), Some(0));
        assert_eq!(table.to_usd(1000, "XXX"), None);
        assert_eq!(whole(Decimal::new(25, 1)), Some(3));
        assert_eq!(whole(Decimal::new(24999, 4)), Some(2));
    }

    #[test]
    fn display_prices_keep_a_price_already_in_the_currency_and_convert_through_usd() {
        let table = table();
        let t = Some(&table);
        assert_eq!(
            display_price(t, Some(10_000), Some("EUR"), "EUR"),
            Some(10_000)
        );
        // 10,000 EUR = 11,252 USD (10000 / 0.8887308923 = 11251.99...); 11252 * 0.7533771774
        // = 8476.999... GBP.
        assert_eq!(
            display_price(t, Some(10_000), Some("EUR"), "USD"),
            Some(11_252)
        );
        assert_eq!(
            display_price(t, Some(10_000), Some("EUR"), "GBP"),
            Some(8_477)
        );
        assert_eq!(display_price(t, Some(500), Some("AED"), "USD"), None);
        assert_eq!(display_price(t, Some(500), Some("AED"), "AED"), Some(500));
        assert_eq!(display_price(t, None, Some("EUR"), "USD"), None);
        assert_eq!(display_price(None, Some(10), Some("USD"), "USD"), Some(10));
        assert_eq!(display_price(None, Some(10), Some("EUR"), "USD"), None);
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let ok = "<Cube><Cube time='2025-05-09'><Cube currency='USD' rate='1.1'/></Cube></Cube>";
        assert!(parse_ecb_xml(ok).is_ok());
        let cases = [
            ("<Cube><Cube currency='USD' rate='1.1'/></Cube>", RatesError::MissingDate),
            ("<Cube time='09/05/2025'><Cube currency='USD' rate='1.1'/></Cube>", RatesError::BadDate("09/05/2025".into())),
            ("<Cube time='2025-05-09'><Cube currency='usd' rate='1.1'/></Cube>", RatesError::BadCurrency("usd".into())),
            ("<Cube time='2025-05-09'><Cube currency='USD' rate='-1'/></Cube>", RatesError::BadRate { currency: "USD".into(), rate: "-1".into() }),
            ("<Cube time='2025-05-09'><Cube currency='USD' rate='1e3'/></Cube>", RatesError::BadRate { currency: "USD".into(), rate: "1e3".into() }),
            ("<Cube time='2025-05-09'><Cube currency='USD' rate='0'/></Cube>", RatesError::BadRate { currency: "USD".into(), rate: "0".into() }),
            ("<Cube time='2025-05-09'><Cube currency='USD' rate='1'/><Cube currency='USD' rate='2'/></Cube>", RatesError::Duplicate("USD".into())),
            ("<Cube time='2025-05-09'><Cube currency='GBP' rate='0.8'/></Cube>", RatesError::MissingUsd),
        ];
        for (xml, expected) in cases {
            assert_eq!(parse_ecb_xml(xml), Err(expected), "{xml}");
        }
        assert!(matches!(
            parse_ecb_xml("<Cube time='2025-05-09'><Cube currency='USD' rate='1'/></Bad>"),
            Err(RatesError::Xml(_))
        ));
    }

    /// Two days as the ECB's history files nest them, newest first.
    const TWO_DAYS: &str = "<gesmes:Envelope xmlns:gesmes='http://www.gesmes.org/xml/2002-08-01'><Cube>\
        <Cube time='2025-05-12'><Cube currency='USD' rate='1.1106'/><Cube currency='GBP' rate='0.84200'/></Cube>\
        <Cube time='2025-05-09'><Cube currency='USD' rate='1.1252'/><Cube currency='GBP' rate='0.84770'/></Cube>\
        </Cube></gesmes:Envelope>";

    #[test]
    fn a_history_file_gives_every_day_oldest_first_each_with_its_own_rates() {
        let days = parse_ecb_days(TWO_DAYS).expect("parse");
        let dates: Vec<&str> = days.iter().map(|day| day.date.as_str()).collect();
        assert_eq!(dates, ["2025-05-09", "2025-05-12"]);
        assert_eq!(days[0].rates[0], ("USD".to_owned(), "1.1252".to_owned()));
        assert_eq!(days[1].rates[1], ("GBP".to_owned(), "0.84200".to_owned()));
        assert_eq!(tables_of(&days).expect("tables").len(), 2);
        // The daily file is a history of one day.
        assert_eq!(
            parse_ecb_days(FIXTURE).expect("parse"),
            [parse_ecb_xml(FIXTURE).expect("parse")]
        );
        assert_eq!(parse_ecb_xml(TWO_DAYS), Err(RatesError::SeveralDays(2)));
    }

    #[test]
    fn a_history_file_is_refused_whole_naming_the_day_at_fault() {
        let in_day = |date: &str, error: RatesError| RatesError::InDay {
            date: date.to_owned(),
            error: Box::new(error),
        };
        let cases = [
            (
                TWO_DAYS.replace("rate='1.1106'", "rate='n/a'"),
                in_day(
                    "2025-05-12",
                    RatesError::BadRate {
                        currency: "USD".into(),
                        rate: "n/a".into(),
                    },
                ),
            ),
            (
                TWO_DAYS.replace("<Cube currency='USD' rate='1.1106'/>", ""),
                in_day("2025-05-12", RatesError::MissingUsd),
            ),
            (
                TWO_DAYS.replace(
                    "currency='GBP' rate='0.84770'",
                    "currency='USD' rate='0.84770'",
                ),
                in_day("2025-05-09", RatesError::Duplicate("USD".into())),
            ),
            (
                TWO_DAYS.replace("2025-05-12", "2025-05-09"),
                RatesError::DuplicateDay("2025-05-09".into()),
            ),
            (
                TWO_DAYS.replace("2025-05-12", "2025-02-29"),
                RatesError::BadDate("2025-02-29".into()),
            ),
            (
                TWO_DAYS.replace("<Cube>", "<Cube><Cube currency='CHF' rate='0.93'/>"),
                RatesError::RateOutsideDay("CHF".into()),
            ),
        ];
        for (xml, expected) in cases {
            assert_eq!(parse_ecb_days(&xml), Err(expected.clone()), "{xml}");
        }
        let message = parse_ecb_days(&TWO_DAYS.replace("rate='1.1106'", "rate='n/a'"))
            .expect_err("refused")
            .to_string();
        assert_eq!(
            message,
            "2025-05-12: rate `n/a` of USD is not a positive decimal number"
        );
    }

    #[test]
    fn a_day_is_a_day_of_the_calendar_written_year_month_day() {
        for day in [
            "2025-05-09",
            "2024-02-29",
            "2000-02-29",
            "1999-12-31",
            "2025-01-31",
        ] {
            assert!(is_calendar_day(day), "{day}");
        }
        for text in [
            "2025-13-01",
            "2025-00-10",
            "2025-02-29",
            "1900-02-29",
            "2025-04-31",
            "2025-05-00",
            "yesterday",
            "2025-5-09",
            "2025/05/09",
            "20250509",
            "2025-05-09T00",
            "",
            "２０２５-05-09",
        ] {
            assert!(!is_calendar_day(text), "{text}");
        }
    }

    proptest! {
        #[test]
        fn usd_converts_as_the_identity(amount in 0u64..10_000_000_000) {
            prop_assert_eq!(table().to_usd(amount, "USD"), Some(amount));
            prop_assert_eq!(table().from_usd(amount, "USD"), Some(amount));
        }

        #[test]
        fn a_round_trip_through_any_currency_stays_within_rounding(usd in 1u64..100_000_000, index in 0usize..31) {
            let table = table();
            let currency = table.currencies().nth(index).expect("currency").to_owned();
            let there = table.from_usd(usd, &currency).expect("converts");
            let back = table.to_usd(there, &currency).expect("converts");
            // Rounding to whole units of a currency worth more than a dollar (GBP, EUR) loses at
            // most half a unit each way: back within one dollar per unit of that currency's value.
            let unit_in_usd = table.to_usd(1_000_000, &currency).expect("converts") as f64 / 1_000_000.0;
            let tolerance = (unit_in_usd.ceil() as u64).max(1);
            prop_assert!(back.abs_diff(usd) <= tolerance, "{} USD -> {} {} -> {} USD", usd, there, currency, back);
        }

        /// The integer path against `Decimal` itself, from small amounts to the largest.
        #[test]
        fn many_amounts_convert_as_decimal_does(
            usd in prop_oneof![0u64..100_000_000, any::<u64>()],
            index in 0usize..31,
        ) {
            let table = table();
            let currency = table.currencies().nth(index).expect("currency").to_owned();
            let rate = *table.usd_to.get(&currency).expect("rate");
            let by_decimal = whole(Decimal::from(usd) * rate);
            prop_assert_eq!(table.from_usd(usd, &currency), by_decimal);
        }

        #[test]
        fn conversion_is_monotonic(a in 0u64..1_000_000_000, b in 0u64..1_000_000_000, index in 0usize..31) {
            let table = table();
            let currency = table.currencies().nth(index).expect("currency").to_owned();
            let (low, high) = (a.min(b), a.max(b));
            prop_assert!(table.to_usd(low, &currency) <= table.to_usd(high, &currency));
        }
    }
}
