//! sled's start-up on small memory pages.
//!
//! Opening a sled store builds its whole page table in memory: one small allocation or more per
//! sled page, 896,019 pages for the 1M-model store of 2.2 GB. mimalloc asks the kernel for
//! transparent huge pages on its arenas (`madvise(MADV_HUGEPAGE)`), so the first touch of each
//! 2 MiB region has the kernel zero all of it (`clear_page_erms`: 71 % of a warm start's `perf`
//! samples), which made loading the page table 2 to 5 times slower (bench/RESULTS.md, "Ready
//! after a restart (issue 16 part 7)"). The process therefore runs on small pages while a store
//! opens, and goes back to huge pages afterwards: serving keeps the pages its reads were
//! measured with. The switch is `prctl(PR_SET_THP_DISABLE)`, which holds for the whole process
//! (the kernel keeps it per address space), so overlapping openings share one switch: the first
//! one in turns huge pages off, the last one out turns them back on.

use std::sync::Mutex;

/// The openings under way, and whether the first of them turned huge pages off (it did not when
/// they were off already, e.g. set by an operator: then they stay off).
struct Switch {
    holders: usize,
    restore: bool,
}

static SWITCH: Mutex<Switch> = Mutex::new(Switch {
    holders: 0,
    restore: false,
});

/// Small pages for the process until every guard is dropped.
#[must_use = "huge pages come back when the guard drops"]
pub struct SmallPages {
    _private: (),
}

impl SmallPages {
    /// Turns transparent huge pages off for the process (unless a guard already did). A kernel
    /// that refuses only leaves the start-up slower, so it is logged, not an error.
    pub fn while_loading() -> SmallPages {
        let mut switch = lock();
        if switch.holders == 0 {
            switch.restore = match thp::disabled() {
                Ok(true) => false,
                Ok(false) => match thp::set_disabled(true) {
                    Ok(()) => true,
                    Err(error) => {
                        tracing::debug!(%error, "transparent huge pages left on while the store opens");
                        false
                    }
                },
                Err(error) => {
                    tracing::debug!(%error, "transparent huge pages: state unknown, left alone");
                    false
                }
            };
        }
        switch.holders += 1;
        SmallPages { _private: () }
    }

    /// True when transparent huge pages are off for this process; `None` where it is unknown.
    pub fn huge_pages_disabled() -> Option<bool> {
        thp::disabled().ok()
    }
}

impl Drop for SmallPages {
    fn drop(&mut self) {
        let mut switch = lock();
        switch.holders = switch.holders.saturating_sub(1);
        if switch.holders == 0 && switch.restore {
            switch.restore = false;
            if let Err(error) = thp::set_disabled(false) {
                tracing::warn!(%error, "transparent huge pages could not be turned back on");
            }
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, Switch> {
    // The counter is updated in one step under the lock: a poisoned one is still consistent.
    SWITCH
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(target_os = "linux")]
mod thp {
    pub fn disabled() -> std::io::Result<bool> {
        Ok(rustix::thread::transparent_huge_pages_are_disabled()?)
    }

    pub fn set_disabled(disabled: bool) -> std::io::Result<()> {
        Ok(rustix::thread::disable_transparent_huge_pages(disabled)?)
    }
}

/// Elsewhere there is no such switch: nothing to do.
#[cfg(not(target_os = "linux"))]
mod thp {
    pub fn disabled() -> std::io::Result<bool> {
        Err(std::io::ErrorKind::Unsupported.into())
    }

    pub fn set_disabled(_disabled: bool) -> std::io::Result<()> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}
