//! `GET /rates`: the ECB's figures as published and the USD table every conversion uses.

use super::error::{ApiError, ApiResult};
use super::layers::capacity::blocking;
use super::AppState;
use axum::extract::State;
use axum::Json;
use serde::Serialize;
use std::collections::BTreeMap;

/// The ECB's reference rates of one day, unmodified.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EcbTable {
    /// Always EUR: the ECB quotes units of each currency per euro.
    base: &'static str,
    /// Units per euro by currency code, each the exact decimal string the ECB published.
    rates: BTreeMap<String, String>,
}

/// The table every conversion uses: units of each currency per US dollar.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UsdTable {
    /// Always USD.
    base: &'static str,
    /// How the table and the conversions are computed.
    rounding: &'static str,
    /// Units per US dollar by currency code, as decimal strings.
    rates: BTreeMap<String, String>,
}

/// `GET /rates`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RatesView {
    /// The day the rates are for (YYYY-MM-DD).
    date: String,
    source: &'static str,
    ecb: EcbTable,
    usd: UsdTable,
}

const ROUNDING: &str = "usd[C] = ecb[C] / ecb[USD] in exact decimal arithmetic, rounded to 10 decimal places \
    half to even; a price converts through this table and is rounded to whole units, half away from zero";

/// The ECB's daily reference rates as published, and the USD table derived from them.
#[utoipa::path(get, path = "/rates", operation_id = "get_rates", tag = "rates",
    responses((status = 200, description = "The rates in force", body = RatesView)))]
pub async fn get_rates(State(app): State<AppState>) -> ApiResult<Json<RatesView>> {
    blocking(move || {
        let missing = || {
            ApiError::not_found(
                "no exchange rates are loaded",
                "an operator loads the ECB's daily file with `watch-catalogue rates FILE`",
            )
        };
        let ecb = app.store.rates().in_force()?.ok_or_else(missing)?;
        let table = app.conversion_table()?.ok_or_else(missing)?;
        Ok(Json(RatesView {
            date: ecb.date.clone(),
            source: "European Central Bank euro foreign exchange reference rates",
            ecb: EcbTable {
                base: "EUR",
                rates: ecb.rates.into_iter().collect(),
            },
            usd: UsdTable {
                base: "USD",
                rounding: ROUNDING,
                rates: table.rates().map(|(c, r)| (c.to_owned(), r)).collect(),
            },
        }))
    })
    .await
}
