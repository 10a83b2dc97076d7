//! `GET /rates`: the ECB's figures as published and the USD table every conversion uses.

use super::error::{ApiError, ApiResult};
use super::views::{EcbTable, RatesView, UsdTable};
use crate::api::layers::capacity::Work;
use axum::Json;

const ROUNDING: &str = "usd[C] = ecb[C] / ecb[USD] in exact decimal arithmetic, rounded to 10 decimal places \
    half to even; a price converts through this table and is rounded to whole units, half away from zero";

/// The ECB's daily reference rates as published, and the USD table derived from them.
#[utoipa::path(get, path = "/rates", operation_id = "get_rates", tag = "rates",
    responses((status = 200, description = "The rates in force", body = RatesView)))]
pub async fn get_rates(work: Work) -> ApiResult<Json<RatesView>> {
    work.run(move |app| {
        let missing = || {
            ApiError::not_found(
                "no exchange rates are loaded",
                "an operator loads the ECB's daily file with `watch-catalogue rates FILE`",
            )
        };
        let ecb = app.store().rates().in_force()?.ok_or_else(missing)?;
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
