//! A running job's progress and its stop flag, shared between the job (which counts and checks
//! between chunks) and whoever watches or stops it (the server's job runner, its shutdown,
//! the CLI's signal handler), and what a job does between two chunks ([`between_chunks`]):
//! stop when asked, or let the writers waiting for the turn go first. The server's jobs also
//! write their progress to their record as they go (see [`JobControl::recording`]), so a
//! process that dies mid-job leaves the last progress behind. Tests of a stop, a crash or a
//! write in the middle of a job pace it with [`TestPacing`] instead of racing it.

use crate::store::{Changes, WriteTurn};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest a job's recorded progress lags behind its live progress while it advances: a
/// record write (and a store flush) at most this often, whatever the job's grain.
pub const RECORD_EVERY: Duration = Duration::from_secs(1);

/// Units [`JobControl::tick`] counts between two looks at whether to record.
const TICKS_PER_LOOK: u64 = 4096;

/// Writes `(done, total)` where the job's record keeps it.
type Recorder = Box<dyn Fn(u64, u64) + Send + Sync>;

/// Wakes whatever a stopped job waits on.
type Waker = Box<dyn Fn() + Send + Sync>;

/// For tests only: how jobs are paced, so that a test stops or kills one, or writes beside it,
/// at a chunk it chose instead of racing it. Never set in production: the server's job runner
/// and the CLI's batch commands read it from `WATCH_CATALOGUE_TEST_CHUNK_LISTINGS` (listings,
/// or models for the duplicate pass, per committed chunk, instead of
/// [`crate::jobs::listing_writes::CHUNK_LISTINGS`]), `WATCH_CATALOGUE_TEST_HOLD_AFTER_CHUNKS`
/// (after committing that many chunks, with its progress recorded, a job holds, its turn
/// passed to other writers, until it is stopped; the CLI's, until it is killed) and
/// `WATCH_CATALOGUE_TEST_RESUME_AFTER_WRITES` (a held job goes on once other writers have
/// committed that many writes), and `WATCH_CATALOGUE_TEST_HOLD_LISTING_MOVER` (`1`: the
/// server's listing mover moves nothing until the next start), all unset by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestPacing {
    pub chunk_listings: Option<usize>,
    pub hold_after_chunks: Option<u64>,
    pub resume_after_writes: Option<u64>,
    pub hold_listing_mover: bool,
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
            resume_after_writes: number("WATCH_CATALOGUE_TEST_RESUME_AFTER_WRITES"),
            hold_listing_mover: number("WATCH_CATALOGUE_TEST_HOLD_LISTING_MOVER") == Some(1),
        }
    }
}

/// How far a job is, and whether it was asked to stop at its next chunk boundary.
#[derive(Default)]
pub struct JobControl {
    done: AtomicU64,
    total: AtomicU64,
    stop: AtomicBool,
    /// Called when the job is stopped: wakes a job held by [`TestPacing::hold_after_chunks`].
    wakers: Mutex<Vec<Waker>>,
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

    /// One unit done, from any thread: work counted an item at a time (the documents of an
    /// index rebuild, on every core). Its record is written as [`JobControl::advance`] writes
    /// it, looked at once every [`TICKS_PER_LOOK`] units rather than at each.
    pub fn tick(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if done % TICKS_PER_LOOK == 0 && self.recording_due() {
            self.record(done, self.total.load(Ordering::Relaxed));
        }
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
        self.stop.store(true, Ordering::Release);
        // Called after the flag is set: a waiter that missed the flag is woken.
        for wake in lock(&self.wakers).iter() {
            wake();
        }
    }

    /// Calls `wake` when the job is stopped: a job waiting on something else than this control.
    pub fn wake_on_stop(&self, wake: impl Fn() + Send + Sync + 'static) {
        lock(&self.wakers).push(Box::new(wake));
    }

    /// Called by a job after each chunk it committed (and counted): true when the test pacing
    /// asks it to hold here, its progress then recorded.
    pub fn chunk_committed(&self) -> bool {
        let chunks = self.chunks.fetch_add(1, Ordering::Relaxed) + 1;
        if self.pacing.hold_after_chunks != Some(chunks) {
            return false;
        }
        let (done, total) = self.progress();
        self.record(done, total);
        tracing::info!(chunks, done, "job held until stopped (test pacing)");
        true
    }

    /// True when a job held by the test pacing goes on, other writers having committed
    /// `writes` while it held: once stopped, or once they made the writes the pacing waits for.
    pub fn hold_ends(&self, writes: u64) -> bool {
        self.should_stop()
            || self
                .pacing
                .resume_after_writes
                .is_some_and(|wanted| writes >= wanted)
    }

    /// True once [`JobControl::stop`] was called.
    pub fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What a job found between two of its chunks.
#[derive(Debug)]
pub struct Boundary {
    /// What other writers committed while the job let them write: what the job read before
    /// may be stale.
    pub others: Option<Changes>,
    /// The job was asked to stop: it ends here, with what it committed.
    pub stop: bool,
}

impl JobControl {
    /// What a job that holds no write turn (`compact`, which writes a copy of the store) does
    /// after each chunk: holds there, until it is stopped or killed, where the test pacing asks,
    /// as [`between_chunks`] does for a job in a turn.
    pub fn between_chunks_outside_a_turn(&self) {
        if self.chunk_committed() {
            while !self.should_stop() {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

/// What a job writing in chunks in `turn` does after each chunk committed (and counted into
/// `control`): holds there where the test pacing asks (its turn passed to other writers
/// meanwhile); otherwise, unless asked to stop, lets the writers waiting for the turn write
/// first, so a person's write waits for one chunk, not for the job.
pub fn between_chunks(turn: &WriteTurn<'_>, control: &JobControl) -> Boundary {
    let others = if control.chunk_committed() {
        let store = turn.store().clone();
        control.wake_on_stop(move || store.wake_passed_turns());
        turn.pass_until(&|others| control.hold_ends(others.commits))
    } else if control.should_stop() {
        None
    } else {
        turn.let_waiting_write()
    };
    Boundary {
        others,
        stop: control.should_stop(),
    }
}

/// Why a job ended before its work was done: it was asked to stop (SIGTERM), and stopped at a
/// chunk boundary, `done` of its `total` units committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("stopped at a chunk boundary after {done} of {total} {unit}: the process is shutting down; what was committed stays, and running the job again completes it")]
pub struct Stopped {
    pub done: u64,
    pub total: u64,
    pub unit: &'static str,
}

impl Stopped {
    /// Where `control`'s job stood, counting `unit`.
    pub fn at(control: &JobControl, unit: &'static str) -> Stopped {
        let (done, total) = control.progress();
        Stopped { done, total, unit }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_from_every_thread_are_all_counted() {
        use rayon::prelude::*;
        let control = JobControl::default();
        control.set_total(10_000);
        (0..10_000).into_par_iter().for_each(|_| control.tick());
        assert_eq!(control.progress(), (10_000, 10_000));
    }
    use crate::domain::ModelId;
    use crate::store::Store;
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

    /// A job of three chunks of ten in a turn of `store`, paced by `pacing`, between its
    /// chunks as [`between_chunks`] has it; where it stopped, and what others wrote meanwhile.
    fn paced_job(store: &Store, control: &JobControl) -> (bool, u64) {
        let turn = store.write_turn();
        let mut others = 0;
        for chunk in 0..3 {
            let mut batch = turn.batch().expect("batch");
            batch.set_listing_count(ModelId(1), chunk);
            turn.commit(batch).expect("commit");
            control.advance(10);
            let boundary = between_chunks(&turn, control);
            others += boundary.others.map_or(0, |others| others.commits);
            if boundary.stop {
                return (true, others);
            }
        }
        (false, others)
    }

    fn paced(hold_after_chunks: u64, resume_after_writes: Option<u64>) -> TestPacing {
        TestPacing {
            chunk_listings: Some(10),
            hold_after_chunks: Some(hold_after_chunks),
            resume_after_writes,
            hold_listing_mover: false,
        }
    }

    /// A control paced by `pacing` whose records come out of the receiver.
    fn recorded(pacing: TestPacing) -> (JobControl, std::sync::mpsc::Receiver<(u64, u64)>) {
        let (record, seen) = std::sync::mpsc::channel();
        let control = JobControl::recording(move |done, total| {
            let _ = record.send((done, total));
        });
        (control.paced(pacing), seen)
    }

    /// Commits one write in a turn of its own.
    fn write_beside(store: &Store) {
        let turn = store.write_turn();
        let mut batch = turn.batch().expect("batch");
        batch.set_listing_count(ModelId(2), 1);
        turn.commit(batch).expect("commit");
    }

    #[test]
    fn a_paced_job_holds_after_its_chosen_chunk_with_its_progress_recorded_and_its_turn_passed() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let (control, seen) = recorded(paced(2, None));
        control.set_total(30);
        std::thread::scope(|scope| {
            let job = scope.spawn(|| paced_job(&store, &control));
            let recorded: Vec<(u64, u64)> = seen.iter().take(3).collect();
            assert_eq!(
                recorded,
                [(0, 30), (10, 30), (20, 30)],
                "recorded at the hold"
            );
            // Held with its turn passed: a write goes in, and the job still holds.
            write_beside(&store);
            assert!(!job.is_finished(), "held: nothing but a stop ends the hold");
            control.stop();
            let (stopped, others) = job.join().expect("the job ends once stopped");
            assert!(stopped);
            assert_eq!(others, 1, "the job heard of the write made while it held");
        });
        assert_eq!(control.progress(), (20, 30), "no chunk after the hold");
    }

    #[test]
    fn a_paced_job_held_until_others_wrote_goes_on_after_their_write() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let (control, seen) = recorded(paced(1, Some(1)));
        control.set_total(30);
        std::thread::scope(|scope| {
            let job = scope.spawn(|| paced_job(&store, &control));
            let at_the_hold = seen.iter().find(|&(done, _)| done == 10);
            assert_eq!(at_the_hold, Some((10, 30)));
            write_beside(&store);
            let (stopped, others) = job.join().expect("job");
            assert!(!stopped, "the job went on to its end");
            assert_eq!(others, 1);
        });
        assert_eq!(control.progress().0, 30);
        // Unpaced, nothing holds.
        let plain = JobControl::default();
        assert!((0..3).all(|_| !plain.chunk_committed()));
    }
}
