//! A running job's progress and its stop flag, shared between the job (which counts and checks
//! between chunks) and whoever watches or stops it (the server's job runner, its shutdown).
//! The server's jobs also write their progress to their record as they go (see
//! [`JobControl::recording`]), so a process that dies mid-job leaves the last progress behind.
//! Tests of a stop or a crash mid-job pace a job with [`TestPacing`] instead of racing it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The longest a job's recorded progress lags behind its live progress while it advances: a
/// record write (and a store flush) at most this often, whatever the job's grain.
pub const RECORD_EVERY: Duration = Duration::from_secs(1);

/// Writes `(done, total)` where the job's record keeps it.
type Recorder = Box<dyn Fn(u64, u64) + Send + Sync>;

/// For tests only: how snapshot jobs are paced, so that a test stops or kills one mid-job at a
/// chunk it chose instead of racing it. Never set in production: the server's job runner and
/// the CLI's batch commands read it from `WATCH_CATALOGUE_TEST_CHUNK_LISTINGS` (listings per
/// committed chunk, instead of [`crate::jobs::listing_writes::CHUNK_LISTINGS`]) and
/// `WATCH_CATALOGUE_TEST_HOLD_AFTER_CHUNKS` (after committing that many chunks, with its
/// progress recorded, a job holds until it is stopped; the CLI's, until it is killed), both
/// unset by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestPacing {
    pub chunk_listings: Option<usize>,
    pub hold_after_chunks: Option<u64>,
}

impl TestPacing {
    /// The pacing the environment asks for (none unless a test sets the variables).
    pub fn from_env() -> TestPacing {
        fn number<T: std::str::FromStr>(name: &str) -> Option<T> {
            std::env::var(name).ok()?.trim().parse().ok()
        }
        TestPacing {
            chunk_listings: number("WATCH_CATALOGUE_TEST_CHUNK_LISTINGS"),
            hold_after_chunks: number("WATCH_CATALOGUE_TEST_HOLD_AFTER_CHUNKS"),
        }
    }
}

/// How far a job is, and whether it was asked to stop at its next chunk boundary.
#[derive(Default)]
pub struct JobControl {
    done: AtomicU64,
    total: AtomicU64,
    stop: AtomicBool,
    /// Wakes a job held by [`TestPacing::hold_after_chunks`] when it is stopped.
    held: Mutex<()>,
    stopped: Condvar,
    pacing: TestPacing,
    chunks: AtomicU64,
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

    /// This control, paced as `pacing` says (tests only).
    pub fn paced(self, pacing: TestPacing) -> JobControl {
        JobControl { pacing, ..self }
    }

    /// The pacing tests asked for; none by default.
    pub fn pacing(&self) -> TestPacing {
        self.pacing
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
        // Taken after the flag is set, so a job about to hold sees it or is woken.
        let _held = self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.stopped.notify_all();
    }

    /// Called by a job after each chunk it committed (and counted): where the test pacing asks
    /// for it, records the progress and holds until the job is stopped.
    pub fn chunk_committed(&self) {
        let chunks = self.chunks.fetch_add(1, Ordering::Relaxed) + 1;
        if self.pacing.hold_after_chunks != Some(chunks) {
            return;
        }
        let (done, total) = self.progress();
        self.record(done, total);
        tracing::info!(chunks, done, "job held until stopped (test pacing)");
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while !self.should_stop() {
            held = self
                .stopped
                .wait(held)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
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

    #[test]
    fn a_paced_job_holds_after_its_chosen_chunk_with_its_progress_recorded_until_stopped() {
        let (recorded, seen) = std::sync::mpsc::channel();
        let control = Arc::new(
            JobControl::recording(move |done, total| {
                let _ = recorded.send((done, total));
            })
            .paced(TestPacing {
                chunk_listings: Some(10),
                hold_after_chunks: Some(2),
            }),
        );
        control.set_total(30);
        let job = std::thread::spawn({
            let control = control.clone();
            move || {
                for _ in 0..3 {
                    control.advance(10);
                    control.chunk_committed();
                    if control.should_stop() {
                        break;
                    }
                }
            }
        });
        let recorded: Vec<(u64, u64)> = seen.iter().take(3).collect();
        assert_eq!(
            recorded,
            [(0, 30), (10, 30), (20, 30)],
            "recorded at the hold"
        );
        assert!(!job.is_finished(), "held: nothing but a stop ends the hold");
        control.stop();
        job.join().expect("the job ends once stopped");
        assert_eq!(control.progress(), (20, 30), "no chunk after the hold");
        // Unpaced, nothing holds.
        let plain = JobControl::default();
        for _ in 0..3 {
            plain.chunk_committed();
        }
    }
}
