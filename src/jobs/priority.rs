//! Work that runs beside more urgent work at a lower priority: a write's duplicate pass beside
//! the catalogue index rebuild, the server's start-up reads beside its first requests. The work
//! and every rayon task it spawns run on a pool of their own whose threads are niced; the
//! caller's thread keeps its priority.

/// How much lower than the process such work runs (a nice increment).
pub const LOWER_NICE: i32 = 10;

/// Runs `work` on threads named `name-N` at [`LOWER_NICE`] below the process, its nested rayon
/// work too; on the shared threads when no pool can be made.
pub fn at_lower_priority<T: Send>(name: &'static str, work: impl FnOnce() -> T + Send) -> T {
    LowerPriority::new(name).run(work)
}

/// Threads at [`LOWER_NICE`] kept for work sent again and again (the listing mover's read
/// before each of its writes), made once rather than per call as [`at_lower_priority`]'s.
pub struct LowerPriority {
    pool: Option<rayon::ThreadPool>,
}

impl LowerPriority {
    /// Makes the threads, named `name-N`; none when they cannot be made (the work then runs
    /// on the shared threads at their priority).
    pub fn new(name: &'static str) -> LowerPriority {
        let pool = rayon::ThreadPoolBuilder::new()
            .thread_name(move |i| format!("{name}-{i}"))
            .start_handler(move |_| lower_this_thread(name))
            .build()
            .map_err(|error| tracing::debug!(%error, name, "the work runs on the shared threads"))
            .ok();
        LowerPriority { pool }
    }

    /// Runs `work` and its nested rayon work on the lowered threads.
    pub fn run<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
        match &self.pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }
}

/// Lowers the calling thread alone to [`LOWER_NICE`] below the process, for good: for a
/// thread of its own that does nothing else (Linux keeps a nice value per thread).
pub fn lower_this_thread(name: &str) {
    #[cfg(target_os = "linux")]
    if let Err(error) = rustix::process::nice(LOWER_NICE) {
        tracing::debug!(%error, name, "a thread keeps its priority");
    }
    #[cfg(not(target_os = "linux"))]
    let _ = name;
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use rayon::prelude::*;

    fn nice() -> i32 {
        rustix::process::getpriority_process(None).expect("nice")
    }

    #[test]
    fn the_work_runs_on_threads_of_lower_priority_and_its_nested_work_too() {
        let caller = nice();
        let expected = (caller + LOWER_NICE).min(19);
        let (name, nice_in_work, nested) = at_lower_priority("lowered", || {
            let nested: Vec<i32> = (0..64).into_par_iter().map(|_| nice()).collect();
            let name = std::thread::current().name().map(str::to_owned);
            (name, nice(), nested)
        });
        assert!(name.is_some_and(|n| n.starts_with("lowered-")));
        assert_eq!(nice_in_work, expected);
        assert!(
            nice_in_work > caller || caller == 19,
            "lower than the caller ({caller}): {nice_in_work}"
        );
        assert!(nested.iter().all(|&n| n == expected), "{nested:?}");
        assert_eq!(nice(), caller, "the caller's thread keeps its priority");
    }

    #[test]
    fn kept_threads_run_each_work_sent_at_lower_priority_on_the_same_threads() {
        let caller = nice();
        let expected = (caller + LOWER_NICE).min(19);
        let lowered = LowerPriority::new("kept");
        let runs: Vec<_> = (0..20)
            .map(|_| {
                lowered.run(|| {
                    let name = std::thread::current().name().map(str::to_owned);
                    let id = std::thread::current().id();
                    (id, name, nice(), rayon::current_num_threads())
                })
            })
            .collect();
        assert!(runs.iter().all(|(_, name, at, _)| {
            name.as_deref().is_some_and(|n| n.starts_with("kept-")) && *at == expected
        }));
        let threads: std::collections::HashSet<_> = runs.iter().map(|run| run.0).collect();
        assert!(
            threads.len() <= runs[0].3,
            "20 runs on the pool's {} threads, not on threads made for each: {}",
            runs[0].3,
            threads.len()
        );
        assert_eq!(nice(), caller, "the caller's thread keeps its priority");
    }
}
