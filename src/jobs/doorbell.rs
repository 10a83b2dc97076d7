//! The wake-up of a background thread of `serve` (the series folder, the listing mover): rung
//! by each write that leaves it work, stopped once at shutdown. The thread counts the rings
//! before it works, so a ring during its work wakes it again after.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

#[derive(Debug, Default)]
pub struct Doorbell {
    state: Mutex<Rings>,
    rung: Condvar,
    /// The thread works on what a ring left it (see [`Doorbell::working`]).
    working: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default)]
struct Rings {
    rings: u64,
    stopped: bool,
}

impl Doorbell {
    /// A write left the thread work.
    pub fn ring(&self) {
        self.lock().rings += 1;
        self.rung.notify_all();
    }

    /// Stops the thread at its next commit, or wakes it to stop.
    pub fn stop(&self) {
        self.lock().stopped = true;
        self.rung.notify_all();
    }

    pub fn stopped(&self) -> bool {
        self.lock().stopped
    }

    /// Says the thread works now (true) or waits (false): others may wait for it to end (the
    /// series folder folds nothing while the listing mover moves, D-231).
    pub fn set_working(&self, working: bool) {
        (self.working).store(working, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn working(&self) -> bool {
        self.working.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many times it was rung.
    pub fn rings(&self) -> u64 {
        self.lock().rings
    }

    /// Sleeps for `pause` or until a stop, whichever comes first.
    pub fn sleep(&self, pause: std::time::Duration) {
        let state = self.lock();
        if !state.stopped {
            let _ = self.rung.wait_timeout(state, pause);
        }
    }

    /// Waits until a ring after the first `seen` (true), or a stop (false).
    pub fn wait_after(&self, seen: u64) -> bool {
        let mut state = self.lock();
        while state.rings == seen && !state.stopped {
            state = self.rung.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        !state.stopped
    }

    fn lock(&self) -> MutexGuard<'_, Rings> {
        // Nothing panics while it is held: a poisoned lock is still whole.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A thread of `serve` that a doorbell wakes: [`RungThread::stop`] stops its doorbell and
/// waits for it, so what it wrote is written before the store's last flush.
pub struct RungThread {
    doorbell: Arc<Doorbell>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RungThread {
    /// Runs `work` on a thread named `name`; `work` returns once `doorbell` is stopped.
    pub fn spawn(
        name: &str,
        doorbell: Arc<Doorbell>,
        work: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<RungThread> {
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(work)?;
        Ok(RungThread {
            doorbell,
            thread: Some(thread),
        })
    }

    /// Stops it at its next commit and waits for it.
    pub fn stop(mut self) {
        self.doorbell.stop();
        if let Some(thread) = self.thread.take() {
            let name = thread.thread().name().unwrap_or("a background").to_owned();
            if thread.join().is_err() {
                tracing::error!(thread = name, "a background thread panicked");
            }
        }
    }
}
