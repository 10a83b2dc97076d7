//! Threads for a page's reads that may wait on the disk: a page of groups reads hundreds of
//! listing records and runs a hundred index searches, and right after a start most of them
//! miss the OS cache. On the shared pool (one thread a core) two reads wait at a time; here
//! [`READ_THREADS`] do, while the work stays the same when nothing waits (D-202).

use std::sync::OnceLock;

/// Reads in flight at once: a virtual disk answers many at the cost of one.
pub const READ_THREADS: usize = 16;

static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();

/// Runs `work` (and its rayon tasks) on the read pool; on the shared threads when no pool
/// can be made.
pub fn with_waiting_reads<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    let pool = POOL.get_or_init(|| {
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(READ_THREADS)
            .thread_name(|i| format!("page-reads-{i}"))
            .build();
        built
            .map_err(|error| tracing::warn!(%error, "page reads run on the shared threads"))
            .ok()
    });
    match pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
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
}
