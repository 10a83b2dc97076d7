//! Threads for a page's reads that may wait on the disk: a page of groups reads hundreds of
//! listing records and runs a hundred index searches, and right after a start most of them
//! miss the OS cache. On the shared pool (one thread a core) two reads wait at a time; here
//! [`READ_THREADS`] do, while the work stays the same when nothing waits (D-202). The reads run
//! at the priority of the work that sends them: a pool per nice value (D-223).

use std::sync::{Arc, Mutex};

/// Reads in flight at once: a virtual disk answers many at the cost of one.
pub const READ_THREADS: usize = 16;

/// The pools made so far, by the nice value their threads run at; `None` where none could be
/// made (its work runs on the caller's threads).
static POOLS: Mutex<Vec<(i32, Option<Arc<rayon::ThreadPool>>)>> = Mutex::new(Vec::new());

/// Runs `work` (and its rayon tasks) on the read pool of the calling thread's priority; on the
/// caller's threads when no pool can be made.
pub fn with_waiting_reads<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    match pool_at(this_thread_nice()) {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

/// Makes the read pool of the calling thread's priority now, so that the first request that
/// reads through it does not start its threads (`serve` calls it before the start-up's reads
/// at a lower priority make theirs).
pub fn prepare() {
    pool_at(this_thread_nice());
}

/// The pool whose threads run at `nice`, made on this thread when there is none yet: a thread
/// starts at the nice value of the thread that makes it, so a pool made by work at a lower
/// priority (the server's start-up reads) would have run every later request's reads at that
/// priority too.
fn pool_at(nice: i32) -> Option<Arc<rayon::ThreadPool>> {
    let mut pools = POOLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, pool)) = pools.iter().find(|(at, _)| *at == nice) {
        return pool.clone();
    }
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(READ_THREADS)
        .thread_name(|i| format!("page-reads-{i}"))
        .build();
    let pool = built
        .map(Arc::new)
        .map_err(|error| tracing::warn!(%error, nice, "page reads run on the caller's threads"))
        .ok();
    pools.push((nice, pool.clone()));
    pool
}

/// The calling thread's nice value: Linux keeps one per thread.
fn this_thread_nice() -> i32 {
    #[cfg(target_os = "linux")]
    let nice = rustix::process::getpriority_process(None).unwrap_or(0);
    #[cfg(not(target_os = "linux"))]
    let nice = 0;
    nice
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn work_runs_on_the_read_pool_with_its_threads() {
        let (threads, names) = with_waiting_reads(|| {
            let names: Vec<String> = (0..64)
                .into_par_iter()
                .map(|_| std::thread::current().name().unwrap_or("").to_owned())
                .collect();
            (rayon::current_num_threads(), names)
        });
        assert_eq!(threads, READ_THREADS);
        assert!(
            names.iter().all(|n| n.starts_with("page-reads-")),
            "{names:?}"
        );
    }

    /// The nice value of every thread 64 rayon tasks of the read pool ran on.
    fn nice_of_the_reads() -> Vec<i32> {
        with_waiting_reads(|| {
            (0..64)
                .into_par_iter()
                .map(|_| this_thread_nice())
                .collect()
        })
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_run_at_the_priority_of_the_work_that_sends_them() {
        use crate::jobs::priority::{at_lower_priority, LOWER_NICE};
        let caller = this_thread_nice();
        let lowered = (caller + LOWER_NICE).min(19);
        if lowered == caller {
            eprintln!("the test runs at nice {caller}: no lower priority to tell apart");
            return;
        }
        // The lowered work asks first, as the server's start-up reads do.
        let from_lowered = at_lower_priority("low-reads", nice_of_the_reads);
        let from_caller = nice_of_the_reads();
        assert!(
            from_lowered.iter().all(|&n| n == lowered),
            "{from_lowered:?}"
        );
        assert!(from_caller.iter().all(|&n| n == caller), "{from_caller:?}");
    }
}
