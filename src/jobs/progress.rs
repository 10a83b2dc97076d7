//! A running job's progress and its stop flag, shared between the job (which counts and checks
//! between chunks) and whoever watches or stops it (the server's job runner, its shutdown).
//! The server's jobs also write their progress to their record as they go (see
//! [`JobControl::recording`]), so a process that dies mid-job leaves the last progress behind.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest a job's recorded progress lags behind its live progress while it advances: a
/// record write (and a store flush) at most this often, whatever the job's grain.
pub const RECORD_EVERY: Duration = Duration::from_secs(1);

/// Writes `(done, total)` where the job's record keeps it.
type Recorder = Box<dyn Fn(u64, u64) + Send + Sync>;

/// How far a job is, and whether it was asked to stop at its next chunk boundary.
#[derive(Default)]
pub struct JobControl {
    done: AtomicU64,
    total: AtomicU64,
    stop: AtomicBool,
    recorder: Option<Recorder>,
    /// The least time between two recorded advances.
    interval: Duration,
    /// When [`JobControl::advance`] last recorded; `None` before it first did.
    recorded_at: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for JobControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (done, total) = self.progress();
        f.debug_struct("JobControl")
            .field("done", &done)
            .field("total", &total)
            .field("stop", &self.should_stop())
            .field("recording", &self.recorder.is_some())
            .finish()
    }
}

impl JobControl {
    /// A control whose progress is also handed to `recorder`: when the total is set, at the
    /// first advance, and then at most every [`RECORD_EVERY`]. It is called on the job's
    /// thread before the new figures are shown to watchers, so what a watcher saw of a first
    /// advance is on record even if the process dies right after.
    pub fn recording(recorder: impl Fn(u64, u64) + Send + Sync + 'static) -> JobControl {
        JobControl {
            recorder: Some(Box::new(recorder)),
            interval: RECORD_EVERY,
            ..JobControl::default()
        }
    }

    /// The amount of work, once it is known (a snapshot's valid lines).
    pub fn set_total(&self, total: u64) {
        self.record(self.done.load(Ordering::Relaxed), total);
        self.total.store(total, Ordering::Relaxed);
    }

    /// `amount` more units committed.
    pub fn advance(&self, amount: u64) {
        if self.recording_due() {
            let (done, total) = self.progress();
            self.record(done.saturating_add(amount), total);
        }
        self.done.fetch_add(amount, Ordering::Relaxed);
    }

    /// True when an advance now should be recorded (and from now on counts as the last one).
    fn recording_due(&self) -> bool {
        if self.recorder.is_none() {
            return false;
        }
        let mut recorded_at = self
            .recorded_at
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = Instant::now();
        let due = recorded_at.is_none_or(|at| now.duration_since(at) >= self.interval);
        if due {
            *recorded_at = Some(now);
        }
        due
    }

    fn record(&self, done: u64, total: u64) {
        if let Some(recorder) = &self.recorder {
            recorder(done, total);
        }
    }

    /// Done and total so far.
    pub fn progress(&self) -> (u64, u64) {
        (
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }

    /// Asks the job to stop at its next chunk boundary (SIGTERM).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// True once [`JobControl::stop`] was called.
    pub fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn progress_is_recorded_at_the_total_the_first_advance_and_then_at_a_bounded_rate() {
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let control = JobControl {
            // Long enough that no pause of the test reaches it.
            interval: Duration::from_secs(3600),
            ..JobControl::recording({
                let recorded = recorded.clone();
                move |done, total| recorded.lock().expect("lock").push((done, total))
            })
        };
        control.set_total(120_000);
        control.advance(50_000);
        // Within the interval of the last record: shown, not yet recorded.
        control.advance(50_000);
        assert_eq!(control.progress(), (100_000, 120_000));
        assert_eq!(
            *recorded.lock().expect("lock"),
            [(0, 120_000), (50_000, 120_000)]
        );
        *control.recorded_at.lock().expect("lock") = Instant::now().checked_sub(control.interval);
        control.advance(20_000);
        assert_eq!(
            recorded.lock().expect("lock").last(),
            Some(&(120_000, 120_000))
        );
        // A control that records nothing still counts.
        let plain = JobControl::default();
        plain.set_total(3);
        plain.advance(2);
        assert_eq!(plain.progress(), (2, 3));
    }
}
