//! A long command's progress as a person or a log reads it: a bar on a terminal (indicatif),
//! else a line on standard error when the state changes and every few seconds while the count
//! moves, with the rate and the time left. The same for a job followed on a server
//! (`--server`) and for one run on the data dir ([`watch`]).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use watch_catalogue::jobs::progress::JobControl;

/// The least time between two plain lines while only the count moves.
const LINE_EVERY: Duration = Duration::from_secs(5);
/// How often a job run here is looked at.
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// What is shown of one job.
pub struct Shown {
    bar: Option<indicatif::ProgressBar>,
    /// Whether the bar is drawn with its gauge: not while the total is unknown, where a gauge
    /// of 0 would be drawn full.
    gauge: bool,
    label: String,
    state: Option<String>,
    last_line: Option<Instant>,
    started: Instant,
}

impl Shown {
    /// Progress of the job called `label` (`job 7`, `ingest`).
    pub fn new(label: impl Into<String>) -> Shown {
        let bar = std::io::stderr().is_terminal().then(|| {
            // Hidden until its words and counts are all set: no half-drawn first frame.
            indicatif::ProgressBar::with_draw_target(
                Some(0),
                indicatif::ProgressDrawTarget::hidden(),
            )
        });
        Shown {
            bar,
            gauge: false,
            label: label.into(),
            state: None,
            last_line: None,
            started: Instant::now(),
        }
    }

    /// The job `state` (queued, running, succeeded…), `done` of `total` `unit`.
    pub fn show(&mut self, state: &str, done: u64, total: u64, unit: &str) {
        let elapsed = self.started.elapsed();
        if let Some(bar) = &self.bar {
            let gauge = total > 0;
            if gauge != self.gauge || bar.is_hidden() {
                let template = match gauge {
                    true => "{prefix} [{bar:40}] {msg}",
                    false => "{prefix} {msg}",
                };
                bar.set_style(
                    indicatif::ProgressStyle::with_template(template)
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                self.gauge = gauge;
            }
            bar.set_prefix(format!("{} {state}", self.label));
            bar.set_message(counts(done, total, unit, elapsed));
            bar.set_length(total);
            bar.set_position(done);
            if bar.is_hidden() {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            }
            return;
        }
        let changed = self.state.as_deref() != Some(state);
        let due = self.last_line.is_none_or(|at| at.elapsed() >= LINE_EVERY);
        if changed || due {
            eprintln!("{}", line(&self.label, state, done, total, unit, elapsed));
            self.state = Some(state.to_owned());
            self.last_line = Some(Instant::now());
        }
    }

    /// The bar put away; lines end with the last one shown.
    pub fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// `ingest running: 120000/1000000 listings, 40000/s, about 22 s left`: the rate once
/// something was done, the time left once the total is known.
pub fn line(
    label: &str,
    state: &str,
    done: u64,
    total: u64,
    unit: &str,
    elapsed: Duration,
) -> String {
    format!("{label} {state}: {}", counts(done, total, unit, elapsed))
}

/// `120000/1000000 listings, 40000/s, about 22 s left`: what a line and a bar say.
fn counts(done: u64, total: u64, unit: &str, elapsed: Duration) -> String {
    // A total not known yet (a compaction's copy) is not shown as 0.
    let mut line = if total == 0 && done > 0 {
        format!("{done} {unit}")
    } else {
        format!("{done}/{total} {unit}")
    };
    let seconds = elapsed.as_secs_f64();
    if done > 0 && seconds > 0.0 {
        let rate = done as f64 / seconds;
        line.push_str(&format!(", {rate:.0}/s"));
        if total > done {
            let left = (total - done) as f64 / rate;
            line.push_str(&format!(", about {left:.0} s left"));
        }
    }
    line
}

/// Shows the progress of a job run here, `control`'s counts of `unit`, until dropped.
pub struct Watching {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// What a job run here is: running, or once it ended, done (all counted), stopped (by a
/// signal) or ended (short of its total: it failed, and says why next).
fn state(ending: bool, control: &JobControl, done: u64, total: u64) -> &'static str {
    match (ending, control.should_stop()) {
        (false, _) => "running",
        // A stop asked for after the last chunk ends nothing.
        (true, _) if total > 0 && done >= total => "done",
        (true, true) => "stopped",
        (true, false) => "ended",
    }
}

/// Starts showing `control`'s progress as `label`'s, every [`LOOK_EVERY`], once it counts.
pub fn watch(control: Arc<JobControl>, label: &str, unit: &'static str) -> Watching {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let mut shown = Shown::new(label);
    let thread = std::thread::spawn(move || {
        let mut counted = false;
        loop {
            let ending = stopped.load(Ordering::Relaxed);
            let (done, total) = control.progress();
            counted |= done > 0 || total > 0;
            if counted {
                shown.show(state(ending, &control, done, total), done, total, unit);
            }
            if ending {
                shown.done();
                return;
            }
            std::thread::park_timeout(LOOK_EVERY);
        }
    });
    Watching {
        stop,
        thread: Some(thread),
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_the_count_the_rate_and_the_time_left_once_they_are_known() {
        let second = Duration::from_secs(1);
        assert_eq!(
            line("ingest", "running", 0, 0, "listings", second),
            "ingest running: 0/0 listings"
        );
        assert_eq!(
            line("ingest", "running", 250, 1000, "listings", 5 * second),
            "ingest running: 250/1000 listings, 50/s, about 15 s left"
        );
        assert_eq!(
            line("job 7", "done", 1000, 1000, "listings", 10 * second),
            "job 7 done: 1000/1000 listings, 100/s"
        );
        // A total not known yet is not written as 0.
        assert_eq!(
            line("compact", "running", 500, 0, "keys", 5 * second),
            "compact running: 500 keys, 100/s"
        );
    }

    #[test]
    fn a_job_that_ended_says_whether_it_finished_was_stopped_or_fell_short() {
        let control = JobControl::default();
        assert_eq!(state(false, &control, 5, 10), "running");
        assert_eq!(state(true, &control, 10, 10), "done");
        assert_eq!(state(true, &control, 5, 10), "ended");
        assert_eq!(state(true, &control, 5, 0), "ended");
        control.stop();
        assert_eq!(state(true, &control, 5, 10), "stopped");
        assert_eq!(state(true, &control, 10, 10), "done");
    }
}
