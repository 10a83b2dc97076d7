//! `watch-catalogue rates FILE`: loads an ECB daily reference rates file as the rates in force.
//! The file must parse and give a US dollar table before anything is written.

use crate::domain::rates::{parse_ecb_xml, ConversionTable, RatesError};
use crate::store::{StoreError, StoreGeneration, WriteTurn};

/// What loading rates did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RatesReport {
    /// The ECB's date of the rates.
    pub date: String,
    /// Currencies quoted per euro.
    pub currencies: usize,
    /// Currencies the US dollar table converts.
    pub convertible: usize,
    pub generation: StoreGeneration,
}

/// Why rates were not loaded.
#[derive(Debug, thiserror::Error)]
pub enum RatesJobError {
    #[error("not an ECB rates file")]
    Invalid(#[from] RatesError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Parses `xml` (the ECB's `eurofxref-daily.xml` layout) and writes it as the rates in force.
pub fn load_rates(turn: &WriteTurn<'_>, xml: &str) -> Result<RatesReport, RatesJobError> {
    let rates = parse_ecb_xml(xml)?;
    let table = ConversionTable::from_ecb(&rates)?;
    let mut batch = turn.batch()?;
    batch.put_rates(&rates);
    let generation = turn.commit(batch)?;
    Ok(RatesReport {
        date: rates.date.clone(),
        currencies: rates.rates.len(),
        convertible: table.currencies().count(),
        generation,
    })
}
