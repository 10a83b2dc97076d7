//! `GET /listings/stats/history`: a model's asking prices week by week or month by month
//! (D-209), read from what the series folder keeps of the model, never from its listings: the
//! periods folded, those after the last fold carried forward, each converted at its own rates.

use super::error::{ApiError, ApiResult};
use super::listings::{stats_subject, FigureParams};
use super::params::{choice_schema, parse_choice, Params};
use super::views::{PriceSeriesView, SeriesPeriodView};
use crate::api::layers::capacity::Work;
use crate::clock::Clock;
use crate::domain::price_series::{
    day_of, format_day, parse_day, Day, Interval, Period, RatesKind, SeriesPeriod, MAX_PERIODS,
};
use crate::jobs::price_series::model_series;
use axum::{Extension, Json};
use serde::Deserialize;

const PATH: &str = "/listings/stats/history";

/// Periods before `to`'s that a series without `from` starts at: thirteen in all, a quarter
/// of weeks.
const DEFAULT_PERIODS_BEFORE: u32 = 12;

/// The values of `interval`.
const INTERVALS: [(&str, Interval); 2] = [("week", Interval::Week), ("month", Interval::Month)];

/// The values of a period's `rates`.
const RATES_KINDS: [(&str, RatesKind); 2] = [
    ("period", RatesKind::Period),
    ("current", RatesKind::Current),
];

/// The rest of the query of `GET /listings/stats/history`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryParams {
    /// `week` (ISO weeks, Monday to Sunday, UTC; the default) or `month` (calendar months).
    #[param(value_type = Option<String>)]
    interval: Option<String>,
    /// The first day (YYYY-MM-DD) whose period is answered; by default the period twelve
    /// before `to`'s.
    #[param(value_type = Option<String>, format = Date, pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
    from: Option<String>,
    /// The last day (YYYY-MM-DD) whose period is answered, at the latest today (UTC), the
    /// default.
    #[param(value_type = Option<String>, format = Date, pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
    to: Option<String>,
}

/// A model's asking prices week by week or month by month.
///
/// For each period: its listings active then, how many were priced, low, median and high, and
/// how many were listed and delisted. Each period converts at its own ECB rates (the latest
/// day stored on or before its last day, when no more than 7 days before its first: `rates` is
/// `period`), else at the rates in force (`current`). A model's listings are those matched to
/// it now: a link or a merge moves a listing's whole history. At most 520 periods.
#[utoipa::path(get, path = "/listings/stats/history", operation_id = "listing_stats_history", tag = "listings",
    params(FigureParams, HistoryParams),
    responses(
        (status = 200, description = "Every period from `from`'s to `to`'s", body = PriceSeriesView),
        (status = 400, description = "invalid_request: `brand` or `model` missing, an unknown `interval` or `currency`, `from` or `to` no day of the calendar, `to` after today, `from` after `to`, or more than 520 periods", body = ErrorBody),
        (status = 404, description = "not_found: no such brand, or no such model of it", body = ErrorBody)))]
pub async fn listing_stats_history(
    work: Work,
    Extension(clock): Extension<Clock>,
    Params(figures): Params<FigureParams>,
    Params(params): Params<HistoryParams>,
) -> ApiResult<Json<PriceSeriesView>> {
    work.run(move |app| {
        let (brand, model) = figures.required(PATH)?;
        let interval = parse_choice("interval", params.interval.as_deref(), &INTERVALS)?
            .unwrap_or(Interval::Week);
        let today = day_of(clock.timestamp());
        let (from, to) = days(
            interval,
            params.from.as_deref(),
            params.to.as_deref(),
            today,
        )?;
        let (first, last) = periods(interval, from, to)?;
        let (model, _, currency) = stats_subject(app, brand, model, figures.currency())?;
        let rates = app.job_context().series_rates().history(app.store())?;
        let series = model_series(app.store(), &rates, model.id, first, last)?;
        Ok(Json(PriceSeriesView {
            brand: brand.to_owned(),
            model: model.slug.to_string(),
            interval: interval.as_str(),
            from: format_day(from),
            to: format_day(to),
            as_of: series.as_of.map(|at| at.to_rfc3339()),
            periods: (series.periods.iter())
                .map(|period| period_view(period, &currency))
                .collect(),
            currency,
        }))
    })
    .await
}

/// `from` and `to` as days: `to` today by default and never after it, `from` by default the
/// first day of the period [`DEFAULT_PERIODS_BEFORE`] before `to`'s, and never after `to`.
fn days(
    interval: Interval,
    from: Option<&str>,
    to: Option<&str>,
    today: Day,
) -> ApiResult<(Day, Day)> {
    let to = to.map(|to| day("to", to)).transpose()?.unwrap_or(today);
    if to > today {
        return Err(ApiError::invalid(
            format!(
                "`to` ({}) is after today ({}): a series ends today",
                format_day(to),
                format_day(today)
            ),
            "give a day up to today, or leave `to` out for today",
        ));
    }
    let from = match from {
        Some(from) => day("from", from)?,
        None => {
            Period::containing(interval, to)
                .back(DEFAULT_PERIODS_BEFORE)
                .start
        }
    };
    if from > to {
        return Err(ApiError::invalid(
            format!(
                "`from` ({}) is after `to` ({})",
                format_day(from),
                format_day(to)
            ),
            "give a `from` on or before `to`",
        ));
    }
    Ok((from, to))
}

/// The value of the day parameter `name`, or 400.
fn day(name: &str, value: &str) -> ApiResult<Day> {
    parse_day(value).ok_or_else(|| {
        ApiError::invalid(
            format!("`{name}` must be a day of the calendar written YYYY-MM-DD, not `{value}`"),
            format!("{name} is a day such as 2025-05-09"),
        )
    })
}

/// The first and last periods of `interval` from `from` to `to`, at most [`MAX_PERIODS`].
fn periods(interval: Interval, from: Day, to: Day) -> ApiResult<(Period, Period)> {
    let (first, last) = (
        Period::containing(interval, from),
        Period::containing(interval, to),
    );
    let count = first.count_through(last);
    if count > MAX_PERIODS {
        return Err(ApiError::invalid(
            format!(
                "from {} to {} is {count} {}s: at most {MAX_PERIODS} periods are answered at once",
                format_day(from),
                format_day(to),
                interval.as_str()
            ),
            match interval {
                Interval::Week => "narrow `from` and `to`, or ask for interval=month",
                Interval::Month => "narrow `from` and `to`",
            },
        ));
    }
    Ok((first, last))
}

fn period_view(period: &SeriesPeriod, currency: &str) -> SeriesPeriodView {
    let figures = &period.figures;
    let prices = period.prices_in(currency);
    SeriesPeriodView {
        start: format_day(period.period.start),
        end: format_day(period.period.last_day()),
        active_count: figures.active,
        priced_count: figures.priced,
        low: prices.map(|p| p.0),
        median: prices.map(|p| p.1),
        high: prices.map(|p| p.2),
        listed_count: figures.listed,
        delisted_count: figures.delisted,
        rates_date: period.rates_date().map(str::to_owned),
        rates: period.kind.as_str(),
    }
}

/// The schema of `interval`, the parameter and the field: what it takes.
pub fn interval_schema() -> utoipa::openapi::Object {
    choice_schema(&INTERVALS)
}

/// The schema of a period's `rates`.
pub fn rates_kind_schema() -> utoipa::openapi::Object {
    let mut schema = choice_schema(&RATES_KINDS);
    schema.description = Some(
        "`period`: the period's own ECB day (`ratesDate`, the latest stored on or before its \
         last day, at most 7 days before its first); `current`: no stored day is that near, and \
         the rates in force converted it"
            .to_owned(),
    );
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_and_the_fields_spell_intervals_and_rates_as_the_domain_does() {
        for (name, interval) in INTERVALS {
            assert_eq!(name, interval.as_str());
        }
        for (name, kind) in RATES_KINDS {
            assert_eq!(name, kind.as_str());
        }
    }

    fn day(text: &str) -> Day {
        parse_day(text).expect("a day")
    }

    #[test]
    fn days_default_to_thirteen_periods_ending_today_and_are_refused_out_of_order() {
        let today = day("2025-05-09");
        let (from, to) = days(Interval::Week, None, None, today).expect("days");
        assert_eq!(
            (format_day(from), format_day(to)),
            ("2025-02-10".into(), "2025-05-09".into())
        );
        let (first, last) = periods(Interval::Week, from, to).expect("periods");
        assert_eq!(first.count_through(last), 13);
        let (from, _) = days(Interval::Month, None, Some("2025-03-31"), today).expect("days");
        assert_eq!(format_day(from), "2024-03-01");
        assert!(days(Interval::Week, None, Some("2025-05-10"), today).is_err());
        assert!(days(
            Interval::Week,
            Some("2025-05-09"),
            Some("2025-05-08"),
            today
        )
        .is_err());
        assert!(days(Interval::Week, Some("2025-02-30"), None, today).is_err());
    }

    #[test]
    fn more_than_520_periods_are_refused_naming_the_limit() {
        let (from, to) = (day("2015-01-01"), day("2025-05-09"));
        let error = periods(Interval::Week, from, to).expect_err("too many weeks");
        assert!(
            format!("{error:?}").contains("at most 520 periods"),
            "{error:?}"
        );
        assert!(periods(Interval::Month, from, to).is_ok());
        let edge = Period::containing(Interval::Week, to).back(519).start;
        assert!(periods(Interval::Week, edge, to).is_ok());
        let past = Period::containing(Interval::Week, to).back(520).start;
        assert!(periods(Interval::Week, past, to).is_err());
    }
}
