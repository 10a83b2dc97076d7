//! `GET /rates`: the ECB's figures as published and the USD table every conversion uses, for
//! the rates in force or, with `date`, for any day stored.

use super::error::{ApiError, ApiResult};
use super::params::Params;
use super::views::{EcbTable, RatesView, UsdTable};
use crate::api::layers::capacity::Work;
use crate::app::App;
use crate::domain::rates::{is_calendar_day, ConversionTable, EcbRates};
use crate::store::NearestDays;
use axum::Json;
use serde::Deserialize;

const ROUNDING: &str = "usd[C] = ecb[C] / ecb[USD] in exact decimal arithmetic, rounded to 10 decimal places \
    half to even; a price converts through this table and is rounded to whole units, half away from zero";

/// The parameters of `GET /rates`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RatesParams {
    /// A day (YYYY-MM-DD) whose stored rates to answer instead of the rates in force.
    #[param(value_type = Option<String>, format = Date, pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
    date: Option<String>,
}

/// The ECB's daily reference rates as published, and the USD table derived from them.
///
/// The rates in force; with `date`, those of that day as stored, a day not stored being 404.
#[utoipa::path(get, path = "/rates", operation_id = "get_rates", tag = "rates",
    params(RatesParams),
    responses(
        (status = 200, description = "The rates in force, or those of the day `date`", body = RatesView),
        (status = 400, description = "invalid_request: `date` is not a day of the calendar written YYYY-MM-DD", body = ErrorBody),
        (status = 404, description = "not_found: no rates are loaded, or none are stored for the day `date` (the message names the nearest stored days)", body = ErrorBody)))]
pub async fn get_rates(
    work: Work,
    Params(params): Params<RatesParams>,
) -> ApiResult<Json<RatesView>> {
    let date = params.date.map(checked_day).transpose()?;
    work.run(move |app| match date {
        None => rates_in_force(app),
        Some(date) => rates_of_day(app, &date),
    })
    .await
}

fn rates_in_force(app: &App) -> ApiResult<Json<RatesView>> {
    let ecb = app.store().rates().in_force()?.ok_or_else(no_rates)?;
    let table = app.conversion_table()?.ok_or_else(no_rates)?;
    Ok(Json(rates_view(ecb, &table)))
}

fn rates_of_day(app: &App, date: &str) -> ApiResult<Json<RatesView>> {
    let rates = app.store().rates();
    match rates.day_with_table(date)? {
        Some((ecb, table)) => Ok(Json(rates_view(ecb, &table))),
        None => Err(day_not_stored(date, rates.nearest_days(date)?)),
    }
}

/// `date` when it is a day of the calendar written `YYYY-MM-DD`.
fn checked_day(date: String) -> ApiResult<String> {
    if is_calendar_day(&date) {
        Ok(date)
    } else {
        Err(ApiError::invalid(
            format!("`date` must be a day of the calendar written YYYY-MM-DD, not `{date}`"),
            "date is a day such as 2025-05-09; without it the rates in force are answered",
        ))
    }
}

fn no_rates() -> ApiError {
    ApiError::not_found(
        "no exchange rates are loaded",
        "an operator loads the ECB's daily file with `watch-catalogue rates FILE`",
    )
}

/// 404 for a day with no rates stored, naming the stored days either side of it.
fn day_not_stored(date: &str, nearest: NearestDays) -> ApiError {
    let nearest = match (nearest.before, nearest.after) {
        (Some(before), Some(after)) => {
            format!("the nearest stored days are {before} and {after}")
        }
        (Some(before), None) => format!("the nearest stored day is {before}, the latest"),
        (None, Some(after)) => format!("the nearest stored day is {after}, the earliest"),
        (None, None) => return no_rates(),
    };
    ApiError::not_found(
        format!("no rates are stored for {date}; {nearest}"),
        "the ECB publishes no rates on weekends and TARGET holidays; GET /v1/rates without `date` answers the rates in force",
    )
}

fn rates_view(ecb: EcbRates, table: &ConversionTable) -> RatesView {
    RatesView {
        date: ecb.date,
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
    }
}
