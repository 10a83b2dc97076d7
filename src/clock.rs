//! The one place the server reads the time its windows and limits are measured by: rate-limit
//! windows, the login throttle, and the idle and absolute limits of sessions. In production the
//! [`Clock`] is the system's; a test hands the router a [`SteppedClock`]'s and moves it by hand,
//! so a window rolls over or a session ends without the test waiting for it.

use crate::domain::Timestamp;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the server's windows and limits read the time. `Clock::default()` is the system's.
#[derive(Debug, Clone, Default)]
pub struct Clock(Option<Arc<Stepped>>);

/// A clock standing still at the moment it was made, until [`SteppedClock::advance`] moves it.
#[derive(Debug)]
struct Stepped {
    instant: Instant,
    timestamp: Timestamp,
    elapsed: Mutex<Duration>,
}

impl Clock {
    /// The system's clock: [`Instant::now`] and [`Timestamp::now`].
    pub fn system() -> Clock {
        Clock(None)
    }

    /// Now, for measuring a window (monotonic).
    pub fn instant(&self) -> Instant {
        match &self.0 {
            None => Instant::now(),
            Some(stepped) => stepped.instant + stepped.elapsed(),
        }
    }

    /// Now, as the wall-clock time a session records and is checked against.
    pub fn timestamp(&self) -> Timestamp {
        match &self.0 {
            None => Timestamp::now(),
            Some(stepped) => {
                let elapsed = i64::try_from(stepped.elapsed().as_millis()).unwrap_or(i64::MAX);
                Timestamp(stepped.timestamp.0.saturating_add(elapsed))
            }
        }
    }
}

impl Stepped {
    fn elapsed(&self) -> Duration {
        *self
            .elapsed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// For tests: a clock that stands still until it is moved. [`SteppedClock::clock`] is what the
/// server is given (in `ApiConfig::clock`); the test keeps this handle to move it.
#[derive(Debug, Clone)]
pub struct SteppedClock(Arc<Stepped>);

impl SteppedClock {
    /// A clock stopped at the present moment.
    pub fn new() -> SteppedClock {
        SteppedClock(Arc::new(Stepped {
            instant: Instant::now(),
            timestamp: Timestamp::now(),
            elapsed: Mutex::new(Duration::ZERO),
        }))
    }

    /// The clock to hand the server.
    pub fn clock(&self) -> Clock {
        Clock(Some(self.0.clone()))
    }

    /// Moves the clock on by `by`: every window and limit read through it sees the time passed.
    pub fn advance(&self, by: Duration) {
        let mut elapsed = self
            .0
            .elapsed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *elapsed = elapsed.saturating_add(by);
    }
}

impl Default for SteppedClock {
    fn default() -> Self {
        SteppedClock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stepped_clock_stands_still_until_it_is_moved_and_moves_both_readings() {
        let time = SteppedClock::new();
        let clock = time.clock();
        let (instant, timestamp) = (clock.instant(), clock.timestamp());
        assert_eq!(clock.instant(), instant, "it stands still");
        assert_eq!(clock.timestamp(), timestamp);
        time.advance(Duration::from_millis(1_500));
        assert_eq!(clock.instant(), instant + Duration::from_millis(1_500));
        assert_eq!(clock.timestamp(), Timestamp(timestamp.0 + 1_500));
        assert_eq!(clock.clone().instant(), clock.instant(), "clones share it");
    }

    #[test]
    fn the_system_clock_follows_the_system() {
        let clock = Clock::default();
        let before = (Instant::now(), Timestamp::now());
        let read = (clock.instant(), clock.timestamp());
        assert!(read.0 >= before.0 && read.1 >= before.1);
        assert!(read.0 <= Instant::now() && read.1 <= Timestamp::now());
    }
}
