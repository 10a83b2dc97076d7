//! The image worker's pauses per source host: a host whose fetches keep failing the way a host
//! that is down fails (a connection error, a timeout, a 5xx) is left alone for a while, so an
//! outage does not use up the retries of every picture it serves (docs/decisions.md, D-220).

use reqwest::Url;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures in a row after which a host is paused. After a pause, the first failure pauses it
/// again, twice as long.
pub const FAILURES_BEFORE_PAUSE: u32 = 3;
pub const FIRST_PAUSE: Duration = Duration::from_secs(60);
pub const LONGEST_PAUSE: Duration = Duration::from_secs(30 * 60);
/// Hosts counted at once. A feed names its picture hosts, as many as it likes: past this, the
/// hosts not paused are forgotten, and then a new host is not counted (never paused) until a
/// pause ends, so the map and the log's pause lines stay bounded.
pub const MOST_HOSTS: usize = 10_000;

/// What a fetch told about its host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAnswer {
    /// It answered: a picture, a 4xx, a body that is no picture. The host is up.
    Answered,
    /// It did not: no connection, a timeout, a 5xx.
    Failed,
}

/// The hosts the worker has paused, and the failures in a row of those it may pause; how many
/// pictures its last pass left for them. Held in memory (the job context's): a restart tries
/// every host again.
#[derive(Default)]
pub struct HostPauses {
    hosts: Mutex<HashMap<String, HostState>>,
    waiting: AtomicUsize,
}

#[derive(Default)]
struct HostState {
    failures_in_a_row: u32,
    pauses_in_a_row: u32,
    paused_until: Option<Instant>,
}

impl HostState {
    fn is_paused(&self, now: Instant) -> bool {
        self.paused_until.is_some_and(|until| until > now)
    }
}

/// A pause begun: the host and how long, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paused {
    pub host: String,
    pub pause: Duration,
}

impl HostPauses {
    fn hosts(&self) -> std::sync::MutexGuard<'_, HashMap<String, HostState>> {
        self.hosts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the host of `url` is paused at `now`. Asked of every due picture of a pass:
    /// with no host counted (nearly always), the URL is not even parsed.
    pub fn is_paused(&self, url: &str, now: Instant) -> bool {
        let hosts = self.hosts();
        !hosts.is_empty()
            && host_of(url).is_some_and(|host| hosts.get(&host).is_some_and(|s| s.is_paused(now)))
    }

    /// Records what a fetch from `url` told about its host; returns the pause it began, if any.
    /// A failure of a fetch begun before the pause it falls in counts for nothing more.
    pub fn record(&self, url: &str, answer: HostAnswer, now: Instant) -> Option<Paused> {
        let host = host_of(url)?;
        let mut hosts = self.hosts();
        if answer == HostAnswer::Answered {
            hosts.remove(&host);
            return None;
        }
        if hosts.len() >= MOST_HOSTS && !hosts.contains_key(&host) {
            hosts.retain(|_, state| state.is_paused(now));
            if hosts.len() >= MOST_HOSTS {
                return None;
            }
        }
        let state = hosts.entry(host.clone()).or_default();
        if state.is_paused(now) {
            return None;
        }
        state.failures_in_a_row += 1;
        let threshold = if state.pauses_in_a_row > 0 {
            1
        } else {
            FAILURES_BEFORE_PAUSE
        };
        if state.failures_in_a_row < threshold {
            return None;
        }
        let pause = pause_after(state.pauses_in_a_row);
        state.paused_until = Some(now + pause);
        state.pauses_in_a_row += 1;
        state.failures_in_a_row = 0;
        Some(Paused { host, pause })
    }

    /// When the first paused host may be tried again, if one is paused at `now`.
    pub fn next_resume(&self, now: Instant) -> Option<Instant> {
        (self.hosts().values())
            .filter_map(|state| state.paused_until.filter(|&until| until > now))
            .min()
    }

    /// How many hosts are paused at `now` (`/metrics`).
    pub fn paused(&self, now: Instant) -> usize {
        self.hosts()
            .values()
            .filter(|state| state.is_paused(now))
            .count()
    }

    /// Notes how many due pictures a pass left for paused hosts.
    pub fn note_waiting(&self, pictures: usize) {
        self.waiting.store(pictures, Ordering::Relaxed);
    }

    /// How many due pictures the last pass left for paused hosts (`/metrics`).
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }
}

/// The pause after `pauses` in a row: the first, doubled each time, up to the longest.
fn pause_after(pauses: u32) -> Duration {
    FIRST_PAUSE
        .saturating_mul(1u32 << pauses.min(16))
        .min(LONGEST_PAUSE)
}

/// The host and port of `url` (its scheme's default when it names none), lower-case: what a
/// pause is kept by. None for a URL without a host, which the fetcher refuses anyway.
pub fn host_of(url: &str) -> Option<String> {
    let url = Url::parse(url).ok()?;
    let host = url.host_str()?.to_ascii_lowercase();
    Some(match url.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOWN: &str = "http://img.down.example:8080/a.jpg";

    fn fail(pauses: &HostPauses, url: &str, at: Instant) -> Option<Paused> {
        pauses.record(url, HostAnswer::Failed, at)
    }

    #[test]
    fn a_host_pauses_after_three_failures_in_a_row_and_its_answer_ends_the_count() {
        let pauses = HostPauses::default();
        let now = Instant::now();
        assert_eq!(fail(&pauses, DOWN, now), None);
        assert_eq!(fail(&pauses, DOWN, now), None);
        // The host answered (a 404, say): the count starts again.
        assert_eq!(pauses.record(DOWN, HostAnswer::Answered, now), None);
        assert_eq!(fail(&pauses, DOWN, now), None);
        assert_eq!(fail(&pauses, DOWN, now), None);
        assert!(!pauses.is_paused(DOWN, now));
        assert_eq!(pauses.paused(now), 0, "counted, not paused");
        let paused = fail(&pauses, DOWN, now).expect("paused at the third");
        assert_eq!(paused.host, "img.down.example:8080");
        assert_eq!(paused.pause, FIRST_PAUSE);
        assert!(pauses.is_paused(DOWN, now));
        assert!(pauses.is_paused("http://IMG.down.example:8080/other.png", now));
        assert!(
            !pauses.is_paused("http://img.down.example/a.jpg", now),
            "another port"
        );
        assert_eq!(pauses.next_resume(now), Some(now + FIRST_PAUSE));
        assert_eq!(pauses.paused(now), 1);
        assert!(!pauses.is_paused(DOWN, now + FIRST_PAUSE));
        assert_eq!(pauses.next_resume(now + FIRST_PAUSE), None);
        assert_eq!(pauses.paused(now + FIRST_PAUSE), 0, "the pause over");
    }

    #[test]
    fn failures_of_fetches_begun_before_a_pause_do_not_lengthen_it() {
        let pauses = HostPauses::default();
        let now = Instant::now();
        for _ in 0..3 {
            fail(&pauses, DOWN, now);
        }
        assert_eq!(fail(&pauses, DOWN, now), None);
        assert_eq!(pauses.next_resume(now), Some(now + FIRST_PAUSE));
    }

    #[test]
    fn each_failure_after_a_pause_pauses_again_twice_as_long_up_to_the_longest() {
        let pauses = HostPauses::default();
        let mut now = Instant::now();
        for _ in 0..3 {
            fail(&pauses, DOWN, now);
        }
        let mut expected = FIRST_PAUSE;
        for _ in 0..8 {
            now += expected;
            expected = (expected * 2).min(LONGEST_PAUSE);
            let paused = fail(&pauses, DOWN, now).expect("the first failure after a pause");
            assert_eq!(paused.pause, expected);
        }
        assert_eq!(expected, LONGEST_PAUSE);
        // Back up: the next outage starts from three failures and the first pause again.
        now += LONGEST_PAUSE;
        pauses.record(DOWN, HostAnswer::Answered, now);
        assert_eq!(fail(&pauses, DOWN, now), None);
    }

    #[test]
    fn past_the_most_hosts_those_not_paused_are_forgotten_and_then_new_ones_not_counted() {
        let pauses = HostPauses::default();
        let now = Instant::now();
        let url = |n: usize| format!("http://host-{n}.test/a.jpg");
        for _ in 0..3 {
            fail(&pauses, &url(0), now);
        }
        for n in 1..MOST_HOSTS {
            fail(&pauses, &url(n), now);
        }
        assert_eq!(pauses.hosts().len(), MOST_HOSTS);
        // A new host: the 9,999 counted once are forgotten, the paused one kept.
        fail(&pauses, &url(MOST_HOSTS), now);
        assert_eq!(pauses.hosts().len(), 2);
        assert!(pauses.is_paused(&url(0), now));
        // Every counted host paused: a new one is not counted.
        let full = HostPauses::default();
        for n in 0..MOST_HOSTS {
            for _ in 0..3 {
                fail(&full, &url(n), now);
            }
        }
        for _ in 0..5 {
            assert_eq!(fail(&full, &url(MOST_HOSTS), now), None);
        }
        assert_eq!(full.hosts().len(), MOST_HOSTS);
        assert!(!full.is_paused(&url(MOST_HOSTS), now));
    }

    #[test]
    fn a_url_without_a_host_is_never_paused() {
        let pauses = HostPauses::default();
        let now = Instant::now();
        for _ in 0..5 {
            assert_eq!(fail(&pauses, "not a url", now), None);
        }
        assert!(!pauses.is_paused("not a url", now));
        assert_eq!(
            host_of("https://Cdn.Example.org/x.jpg").as_deref(),
            Some("cdn.example.org:443")
        );
    }
}
