//! ECB daily reference rates and the conversion table every price goes through.
//!
//! The ECB publishes, for one day, how many units of each currency one euro buys, as decimal
//! strings. We keep those strings as published and derive one table from them: units of each
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
}

/// Parses the ECB's daily XML (`eurofxref-daily.xml`: gesmes envelope, `Cube` elements).
pub fn parse_ecb_xml(xml: &str) -> Result<EcbRates, RatesError> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut date = None;
    let mut rates: Vec<(String, String)> = Vec::new();
    loop {
        match reader
            .read_event()
            .map_err(|e| RatesError::Xml(e.to_string()))?
        {
            Event::Eof => break,
            Event::Start(element) | Event::Empty(element)
                if element.local_name().as_ref() == b"Cube" =>
            {
                let mut attributes = BTreeMap::new();
                for attribute in element.attributes() {
                    let attribute = attribute.map_err(|e| RatesError::Xml(e.to_string()))?;
                    let value = attribute
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map_err(|e| RatesError::Xml(e.to_string()))?;
                    attributes.insert(
                        String::from_utf8_lossy(attribute.key.local_name().as_ref()).into_owned(),
                        value.into_owned(),
                    );
                }
                if let Some(time) = attributes.get("time") {
                    date = Some(check_date(time)?);
                }
                if let (Some(currency), Some(rate)) =
                    (attributes.get("currency"), attributes.get("rate"))
                {
                    let currency = check_currency(currency)?;
                    check_rate(&currency, rate)?;
                    if rates.iter().any(|(c, _)| *c == currency) {
                        return Err(RatesError::Duplicate(currency));
                    }
                    rates.push((currency, rate.clone()));
                }
            }
            _ => {}
        }
    }
    let date = date.ok_or(RatesError::MissingDate)?;
    if !rates.iter().any(|(c, _)| c == "USD") {
        return Err(RatesError::MissingUsd);
    }
    Ok(EcbRates { date, rates })
}

fn check_date(text: &str) -> Result<String, RatesError> {
    let bytes = text.as_bytes();
    let shape = bytes.len() == 10 && bytes[4] == b'-' && bytes[7] == b'-';
    let digits = bytes
        .iter()
        .enumerate()
        .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit());
    if shape && digits {
        Ok(text.to_owned())
    } else {
        Err(RatesError::BadDate(text.to_owned()))
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
