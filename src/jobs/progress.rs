//! A running job's progress and its stop flag, shared between the job (which counts and checks
//! between chunks) and whoever watches or stops it (the server's job runner, its shutdown).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How far a job is, and whether it was asked to stop at its next chunk boundary.
#[derive(Debug, Default)]
pub struct JobControl {
    done: AtomicU64,
    total: AtomicU64,
    stop: AtomicBool,
}

impl JobControl {
    /// The amount of work, once it is known (a snapshot's valid lines).
    pub fn set_total(&self, total: u64) {
        self.total.store(total, Ordering::Relaxed);
    }

    /// `amount` more units committed.
    pub fn advance(&self, amount: u64) {
        self.done.fetch_add(amount, Ordering::Relaxed);
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
