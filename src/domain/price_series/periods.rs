//! The periods of a series: ISO weeks (Monday to Sunday) or calendar months, in UTC, each
//! named by its first day; days of the calendar as the API writes them (`YYYY-MM-DD`).

use super::super::rates::is_calendar_day;
use super::super::Timestamp;
use time::{Date, Month};

/// A day of the calendar, in UTC.
pub type Day = Date;

const MS_PER_DAY: i64 = 86_400_000;

/// The length of a series' periods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Interval {
    Week,
    Month,
}

impl Interval {
    pub const ALL: [Interval; 2] = [Interval::Week, Interval::Month];

    pub fn as_str(self) -> &'static str {
        match self {
            Interval::Week => "week",
            Interval::Month => "month",
        }
    }

    /// Its byte in the store's keys.
    pub fn code(self) -> u8 {
        match self {
            Interval::Week => 1,
            Interval::Month => 2,
        }
    }
}

/// `text` as a day when it is one of the calendar written `YYYY-MM-DD`.
pub fn parse_day(text: &str) -> Option<Day> {
    if !is_calendar_day(text) {
        return None;
    }
    let number = |from: usize, to: usize| text[from..to].parse::<u16>().ok();
    let month = Month::try_from(u8::try_from(number(5, 7)?).ok()?).ok()?;
    let day = u8::try_from(number(8, 10)?).ok()?;
    Date::from_calendar_date(i32::from(number(0, 4)?), month, day).ok()
}

/// `day` written `YYYY-MM-DD`.
pub fn format_day(day: Day) -> String {
    format!(
        "{:04}-{:02}-{:02}",
        day.year(),
        u8::from(day.month()),
        day.day()
    )
}

/// The first and last days an instant is folded on: listings are seen by the service, so an
/// instant outside them is a clock gone wrong, taken at the nearer edge rather than folded
/// into thousands of empty periods (or past the calendar's end).
fn first_day() -> Day {
    Date::from_calendar_date(1970, Month::January, 1).unwrap_or(Date::MIN)
}

fn last_day() -> Day {
    Date::from_calendar_date(9998, Month::December, 1).unwrap_or(Date::MAX)
}

/// The day (UTC) of the instant `at`, within the years instants are folded in.
pub fn day_of(at: Timestamp) -> Day {
    let days = at.0.div_euclid(MS_PER_DAY);
    let julian = i64::from(first_day().to_julian_day()) + days;
    let clamped = julian.clamp(
        i64::from(first_day().to_julian_day()),
        i64::from(last_day().to_julian_day()),
    );
    i32::try_from(clamped)
        .ok()
        .and_then(|julian| Date::from_julian_day(julian).ok())
        .unwrap_or_else(first_day)
}

/// The instant `day` begins, 00:00 UTC.
pub fn midnight(day: Day) -> Timestamp {
    let days = i64::from(day.to_julian_day()) - i64::from(first_day().to_julian_day());
    Timestamp(days.saturating_mul(MS_PER_DAY))
}

/// One period of a series: the week or the month that begins on `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Period {
    pub interval: Interval,
    pub start: Day,
}

impl Period {
    /// The period of `interval` that holds `day`.
    pub fn containing(interval: Interval, day: Day) -> Period {
        let start = match interval {
            Interval::Week => {
                let back = i32::from(day.weekday().number_days_from_monday());
                Date::from_julian_day(day.to_julian_day() - back).unwrap_or(day)
            }
            Interval::Month => day.replace_day(1).unwrap_or(day),
        };
        Period { interval, start }
    }

    /// Its number of days.
    fn days(self) -> i32 {
        match self.interval {
            Interval::Week => 7,
            Interval::Month => i32::from(self.start.month().length(self.start.year())),
        }
    }

    /// The period after it.
    pub fn next(self) -> Period {
        let julian = self.start.to_julian_day().saturating_add(self.days());
        Period {
            interval: self.interval,
            start: Date::from_julian_day(julian).unwrap_or(Date::MAX),
        }
    }

    /// The period `n` periods before it.
    pub fn back(self, n: u32) -> Period {
        let start = match self.interval {
            Interval::Week => {
                let days = i64::from(n) * 7;
                let julian = i64::from(self.start.to_julian_day()) - days;
                i32::try_from(julian)
                    .ok()
                    .and_then(|julian| Date::from_julian_day(julian).ok())
                    .unwrap_or(Date::MIN)
            }
            Interval::Month => {
                let months = month_number(self.start) - i64::from(n);
                let (year, month) = (months.div_euclid(12), months.rem_euclid(12) + 1);
                i32::try_from(year)
                    .ok()
                    .zip(u8::try_from(month).ok())
                    .and_then(|(year, month)| {
                        let month = Month::try_from(month).ok()?;
                        Date::from_calendar_date(year, month, 1).ok()
                    })
                    .unwrap_or(Date::MIN)
            }
        };
        Period::containing(self.interval, start)
    }

    /// Its last day.
    pub fn last_day(self) -> Day {
        let julian = self.start.to_julian_day().saturating_add(self.days() - 1);
        Date::from_julian_day(julian).unwrap_or(Date::MAX)
    }

    /// The instant it begins.
    pub fn begins(self) -> Timestamp {
        midnight(self.start)
    }

    /// The instant it ends, which is the next one's beginning: not in it.
    pub fn ends(self) -> Timestamp {
        let length = i64::from(self.days()) * MS_PER_DAY;
        Timestamp(self.begins().0.saturating_add(length))
    }

    /// How many periods there are from this one to `last`, both counted (0 when `last` is
    /// before it).
    pub fn count_through(self, last: Period) -> u64 {
        let between = match self.interval {
            Interval::Week => (i64::from(last.start.to_julian_day())
                - i64::from(self.start.to_julian_day()))
            .div_euclid(7),
            Interval::Month => month_number(last.start) - month_number(self.start),
        };
        u64::try_from(between + 1).unwrap_or(0)
    }

    /// This period and every one after it up to `last`, in order.
    pub fn through(self, last: Period) -> impl Iterator<Item = Period> {
        let count = self.count_through(last);
        std::iter::successors(Some(self), |period| Some(period.next())).take(count as usize)
    }
}

/// Months since year 0 of `day`'s month.
fn month_number(day: Day) -> i64 {
    i64::from(day.year()) * 12 + i64::from(u8::from(day.month())) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> Day {
        parse_day(text).expect("a day")
    }

    #[test]
    fn weeks_begin_on_monday_and_months_on_their_first() {
        // 2025-05-09 is a Friday.
        let week = Period::containing(Interval::Week, day("2025-05-09"));
        assert_eq!(format_day(week.start), "2025-05-05");
        assert_eq!(format_day(week.last_day()), "2025-05-11");
        assert_eq!(format_day(week.next().start), "2025-05-12");
        assert_eq!(format_day(week.back(2).start), "2025-04-21");
        let month = Period::containing(Interval::Month, day("2024-02-29"));
        assert_eq!(format_day(month.start), "2024-02-01");
        assert_eq!(format_day(month.last_day()), "2024-02-29");
        assert_eq!(format_day(month.next().start), "2024-03-01");
        assert_eq!(format_day(month.back(14).start), "2022-12-01");
        // An ISO week across a year's end.
        let new_year = Period::containing(Interval::Week, day("2025-01-01"));
        assert_eq!(format_day(new_year.start), "2024-12-30");
    }

    #[test]
    fn a_period_holds_its_instants_from_midnight_to_the_next_ones_midnight() {
        let week = Period::containing(Interval::Week, day("2025-05-05"));
        assert_eq!(week.begins().to_rfc3339(), "2025-05-05T00:00:00Z");
        assert_eq!(week.ends(), week.next().begins());
        assert_eq!(day_of(Timestamp(week.ends().0 - 1)), day("2025-05-11"));
        assert_eq!(day_of(week.ends()), day("2025-05-12"));
        assert_eq!(
            day_of(Timestamp(-5)),
            day("1970-01-01"),
            "before 1970: its edge"
        );
        assert_eq!(format_day(day_of(Timestamp(i64::MAX))), "9998-12-01");
    }

    #[test]
    fn periods_are_counted_both_ends_in() {
        let first = Period::containing(Interval::Week, day("2025-05-09"));
        let last = Period::containing(Interval::Week, day("2025-07-01"));
        assert_eq!(first.count_through(last), 9);
        assert_eq!(first.through(last).count(), 9);
        assert_eq!(last.count_through(first), 0);
        let january = Period::containing(Interval::Month, day("2025-01-31"));
        let december = Period::containing(Interval::Month, day("2025-12-01"));
        assert_eq!(january.count_through(december), 12);
        assert_eq!(january.count_through(january), 1);
    }

    #[test]
    fn days_read_as_the_calendar_has_them() {
        assert_eq!(format_day(day("2024-02-29")), "2024-02-29");
        assert_eq!(parse_day("2025-02-29"), None);
        assert_eq!(parse_day("2025-5-09"), None);
        assert_eq!(format_day(day("0001-01-01")), "0001-01-01");
    }
}
