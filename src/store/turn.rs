//! The store's write turn: one writer at a time per store, whoever holds a clone of it, served
//! in the order they asked. A batch can only be made and committed inside a turn, so ids, the
//! generation and secondary keys are never raced; reads never take the turn. The turn also
//! gathers what its commits changed, so the indexes can catch up with exactly that. A long
//! write lets the writers waiting for the turn go first between two of its commits
//! ([`WriteTurn::let_waiting_write`]) and takes it back after them, told what they changed.

use super::write::WriteBatch;
use super::{Store, StoreGeneration, StoreResult};
use crate::domain::{BrandId, Listing, ListingId, ModelId, SeriesId};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// The right to write, held from the first read a write depends on to the last index update,
/// but for the passes a long write makes between its commits.
pub struct WriteTurn<'s> {
    store: &'s Store,
    /// False only while the turn is passed to other writers.
    holding: AtomicBool,
    changes: Mutex<Changes>,
    listing_sink: Option<Arc<dyn ListingSink>>,
    interlude: Option<Arc<dyn Interlude>>,
}

/// A listing a commit wrote, as the listings index needs to know it.
#[derive(Debug)]
pub enum ListingWrite {
    /// New to the store: no index can hold its id yet.
    Created(Listing),
    /// Written over a version whose index document differs.
    Changed(Listing),
    /// Written over a version with the same index document (a refresh): nothing to index.
    Same,
}

/// Told of the listings each commit of a turn wrote, right after the commit, in commit order:
/// the listings index takes a large write while it is written (`jobs::listing_load`).
pub trait ListingSink: Send + Sync {
    fn committed(&self, written: Vec<ListingWrite>);
}

/// What a turn does around a pass to other writers (`jobs::writer` sets it): the writers let
/// in must find the store's derived data (the indexes) up to every commit before them, as they
/// find it between two whole jobs.
pub trait Interlude: Send + Sync {
    /// Brings what is derived from `changes` (the turn's commits since it was taken, or last
    /// taken back) up to them. False: it could not, and the turn is not passed.
    fn settle(&self, turn: &WriteTurn<'_>, changes: &Changes) -> bool;
    /// The turn is back, after writers that committed `others`.
    fn resume(&self, turn: &WriteTurn<'_>, others: &Changes);
}

/// What the commits of one turn changed, for the indexes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// The generation of the first and the last commit, and how many there were.
    pub first_generation: StoreGeneration,
    pub generation: StoreGeneration,
    pub commits: u64,
    /// Listings written, in commit order (a listing written twice appears twice).
    pub listings: Vec<ListingId>,
    /// Models written, and models whose listing count was set.
    pub models: BTreeSet<ModelId>,
    pub recounted: BTreeSet<ModelId>,
    /// Models the turn created (a subset of `models`): every key they have, it wrote by
    /// today's rules, and no key of an older one names them (ids are never used again).
    pub created_models: BTreeSet<ModelId>,
    /// Brands and series written, or whose number of models may have moved.
    pub brands: BTreeSet<BrandId>,
    pub series: BTreeSet<SeriesId>,
    /// How many models each brand and series gained in the turn (negative: lost), so their
    /// counts are the index's before the turn plus these, without a commit in between.
    pub brand_models: BTreeMap<BrandId, i64>,
    pub series_models: BTreeMap<SeriesId, i64>,
    /// A brand or series renamed, or a calibre's type, complications or a complication's slug
    /// changed (models' documents carry them): the catalogue index is rebuilt, not patched.
    pub renamed: bool,
    /// A model was written with other words than it had, created or merged away: what the
    /// catalogue index's model text edition moves with.
    pub model_words: bool,
    /// The rates in force changed: every listing's US dollar price may have moved.
    pub rates: bool,
    /// A day of rates was written, in force or not: a past price may convert otherwise.
    pub rate_days: bool,
    /// Models whose duplicate pairs or dismissals changed, by any commit, derived ones too:
    /// gathered only for a turn passed to others (what they did to the pairs).
    pub duplicates: BTreeSet<ModelId>,
    /// A commit logged models for the series folder (`store::series`).
    pub series_logged: bool,
    /// A commit left listings of a merged model for the listing mover.
    pub listings_left: bool,
}

impl Changes {
    /// True when the commits were one after another, with no other write in between.
    pub fn is_contiguous(&self) -> bool {
        self.commits == 0 || self.generation.0 + 1 - self.first_generation.0 == self.commits
    }

    fn absorb(&mut self, generation: StoreGeneration, batch: BatchChanges) {
        if self.commits == 0 {
            self.first_generation = generation;
        }
        self.generation = generation;
        self.commits += 1;
        self.listings.extend(batch.listings);
        self.models.extend(batch.models);
        self.created_models.extend(batch.created_models);
        self.recounted.extend(batch.recounted);
        self.brands.extend(batch.brands);
        self.series.extend(batch.series);
        for (brand, series, moved) in batch.model_moves {
            *self.brand_models.entry(brand).or_default() += moved;
            *self.series_models.entry(series).or_default() += moved;
        }
        self.renamed |= batch.renamed;
        self.rates |= batch.rates;
        self.rate_days |= batch.rate_days;
        self.model_words |= batch.model_words;
        self.duplicates.extend(batch.duplicates);
        self.series_logged |= batch.series_logged;
        self.listings_left |= batch.listings_left;
    }
}

/// What one batch changes; see [`Changes`].
#[derive(Debug, Clone, Default)]
pub(super) struct BatchChanges {
    pub listings: Vec<ListingId>,
    pub models: Vec<ModelId>,
    pub created_models: Vec<ModelId>,
    pub recounted: Vec<ModelId>,
    pub brands: Vec<BrandId>,
    pub series: Vec<SeriesId>,
    /// A model into (+1) or out of (-1) a brand and series.
    pub model_moves: Vec<(BrandId, SeriesId, i64)>,
    pub renamed: bool,
    /// A model written with other words than it had (or new, or merged away).
    pub model_words: bool,
    pub rates: bool,
    pub rate_days: bool,
    pub duplicates: Vec<ModelId>,
    pub series_logged: bool,
    pub listings_left: bool,
}

/// Who holds the write turn and who waits for it: tickets drawn in order and served in that
/// order, so a writer that passes its turn and draws again comes after every writer that was
/// waiting. A long write passes its turn only for a writer someone waits for (a person's), not
/// for background work (the image worker's), which waits for it to end. Shared by every clone
/// of a store.
#[derive(Default)]
pub(super) struct TurnQueue {
    state: Mutex<Queue>,
    moved: Condvar,
}

#[derive(Default)]
struct Queue {
    /// The next ticket to draw, and the ticket whose writer has the turn (or will, when it is
    /// the next to draw: no one has the turn).
    drawn: u64,
    serving: u64,
    /// Writers waiting whom someone waits for: a long write passes its turn for them.
    waiting_for_a_person: u64,
    /// What was committed since each turn now passed was passed, by pass.
    passed: Vec<(u64, Changes)>,
    passes: u64,
    /// When a person was last seen at work: signed in to the back office, or their write
    /// waiting for the turn.
    person_at_work: Option<std::time::Instant>,
}

impl TurnQueue {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Nothing panics while the lock is held: a poisoned queue is still whole.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wait<'q>(&self, queue: MutexGuard<'q, Queue>) -> MutexGuard<'q, Queue> {
        self.moved
            .wait(queue)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Draws a ticket and waits until it is served; `for_a_person`: a long write passes its
    /// turn meanwhile.
    fn take(&self, for_a_person: bool) {
        let mut queue = self.lock();
        let ticket = queue.drawn;
        queue.drawn += 1;
        queue.waiting_for_a_person += u64::from(for_a_person);
        // A person who finds the turn taken waits behind a long write, maybe a job's: the job
        // then keeps its chunks short for a while (`ListingWrites::chunk`).
        if for_a_person && queue.serving != ticket {
            queue.person_at_work = Some(std::time::Instant::now());
        }
        // Whoever watches the queue sees a writer come.
        self.moved.notify_all();
        while queue.serving != ticket {
            queue = self.wait(queue);
        }
        queue.waiting_for_a_person -= u64::from(for_a_person);
    }

    /// Ends the turn being served: the next ticket's writer has it.
    fn end(&self) {
        self.lock().serving += 1;
        self.moved.notify_all();
    }

    /// True when a writer someone waits for waits behind the one served.
    fn is_wanted(&self) -> bool {
        self.lock().waiting_for_a_person > 0
    }

    fn note_a_person_at_work(&self) {
        self.lock().person_at_work = Some(std::time::Instant::now());
    }

    fn person_at_work_within(&self, while_ago: std::time::Duration) -> bool {
        (self.lock().person_at_work).is_some_and(|seen| seen.elapsed() <= while_ago)
    }

    /// Notes a commit in the changes of every turn passed now.
    fn note(&self, generation: Option<StoreGeneration>, changes: &BatchChanges) {
        let mut queue = self.lock();
        if queue.passed.is_empty() {
            return;
        }
        for (_, since) in &mut queue.passed {
            match generation {
                Some(generation) => since.absorb(generation, changes.clone()),
                None => since.duplicates.extend(changes.duplicates.iter().copied()),
            }
        }
        drop(queue);
        self.moved.notify_all();
    }

    /// Ends the turn being served, lets others write until `resume` says what they committed
    /// is enough, then draws a ticket and waits for it; what they committed.
    fn pass(&self, resume: &dyn Fn(&Changes) -> bool) -> Changes {
        let mut queue = self.lock();
        let pass = queue.passes;
        queue.passes += 1;
        queue.passed.push((pass, Changes::default()));
        queue.serving += 1;
        self.moved.notify_all();
        loop {
            let since = queue
                .passed
                .iter()
                .find(|(p, _)| *p == pass)
                .map(|(_, c)| c);
            if since.is_none_or(resume) {
                break;
            }
            queue = self.wait(queue);
        }
        drop(queue);
        self.take(false);
        let mut queue = self.lock();
        let at = queue.passed.iter().position(|(p, _)| *p == pass);
        at.map(|at| queue.passed.swap_remove(at).1)
            .unwrap_or_default()
    }

    /// Wakes the writers waiting in [`TurnQueue::pass`] to ask their `resume` again.
    fn wake(&self) {
        let _queue = self.lock();
        self.moved.notify_all();
    }
}

impl Store {
    /// Waits for the write turn of this store (every clone shares it) and takes it, after every
    /// writer that asked before; a long write passes its turn for it between two commits.
    pub fn write_turn(&self) -> WriteTurn<'_> {
        self.turns.take(true);
        self.taken()
    }

    /// [`Store::write_turn`] for background work no one waits for: a long write does not pass
    /// its turn for it, and it waits for that write to end.
    pub fn background_write_turn(&self) -> WriteTurn<'_> {
        self.turns.take(false);
        self.taken()
    }

    fn taken(&self) -> WriteTurn<'_> {
        WriteTurn {
            store: self,
            holding: AtomicBool::new(true),
            changes: Mutex::new(Changes::default()),
            listing_sink: None,
            interlude: None,
        }
    }

    /// Wakes the turns passed to other writers to ask again whether to take the turn back (a
    /// job held by the test pacing, when it is stopped).
    pub fn wake_passed_turns(&self) {
        self.turns.wake();
    }

    /// Starts gathering what every commit from now on changes, for work that reads the store
    /// before it takes the write turn and must then learn what others wrote meanwhile (a
    /// snapshot job's catalogue: D-225).
    pub fn watch_writes(&self) -> WriteWatch<'_> {
        let mut queue = self.turns.lock();
        let id = queue.passes;
        queue.passes += 1;
        queue.passed.push((id, Changes::default()));
        WriteWatch { store: self, id }
    }

    /// For tests: how many writers wait behind the one served, and how many watches
    /// ([`Store::watch_writes`]) and passed turns gather commits now.
    #[cfg(test)]
    pub(crate) fn waiting_and_watching(&self) -> (u64, usize) {
        let queue = self.turns.lock();
        (
            queue.drawn.saturating_sub(queue.serving + 1),
            queue.passed.len(),
        )
    }

    /// Notes that a person is at work (a signed-in request): a long write keeps its chunks
    /// short for a while, so their next write waits less for it.
    pub fn note_a_person_at_work(&self) {
        self.turns.note_a_person_at_work();
    }

    /// True when a person was at work within `while_ago`: signed in to the back office, or
    /// their write waiting for the turn.
    pub fn a_person_at_work_within(&self, while_ago: std::time::Duration) -> bool {
        self.turns.person_at_work_within(while_ago)
    }
}

/// What the commits since [`Store::watch_writes`] changed, gathered as a passed turn's are
/// (its entry is a pass no one resumes); it stops gathering when it is read or dropped.
pub struct WriteWatch<'s> {
    store: &'s Store,
    id: u64,
}

impl WriteWatch<'_> {
    /// What was committed since the watch began.
    pub fn changes(self) -> Changes {
        let mut queue = self.store.turns.lock();
        let at = queue.passed.iter().position(|(id, _)| *id == self.id);
        at.map(|at| std::mem::take(&mut queue.passed[at].1))
            .unwrap_or_default()
    }
}

impl Drop for WriteWatch<'_> {
    fn drop(&mut self) {
        self.store
            .turns
            .lock()
            .passed
            .retain(|(id, _)| *id != self.id);
    }
}

impl Drop for WriteTurn<'_> {
    fn drop(&mut self) {
        if self.holding.load(Ordering::Acquire) {
            self.store.turns.end();
        }
    }
}

impl<'s> WriteTurn<'s> {
    /// The store, for the reads a write depends on.
    pub fn store(&self) -> &'s Store {
        self.store
    }

    /// Tells `sink` of every listing this turn's commits write from now on.
    pub fn set_listing_sink(&mut self, sink: Arc<dyn ListingSink>) {
        self.listing_sink = Some(sink);
    }

    /// Who is told of the listings committed, if anyone.
    pub fn listing_sink(&self) -> Option<&dyn ListingSink> {
        self.listing_sink.as_deref()
    }

    /// Has `interlude` settle and resume around every pass of this turn.
    pub fn set_interlude(&mut self, interlude: Arc<dyn Interlude>) {
        self.interlude = Some(interlude);
    }

    /// An empty batch; it allocates ids from the counters as committed.
    pub fn batch(&self) -> StoreResult<WriteBatch<'_>> {
        WriteBatch::new(self.store)
    }

    /// Commits `batch` (see [`Store::apply`](super::Store)) and records what it changed.
    pub fn commit(&self, batch: WriteBatch<'_>) -> StoreResult<StoreGeneration> {
        self.commit_with(batch, Store::apply)
    }

    /// Commits one part of a write made of several commits (the chunks of a large write of
    /// listings), applied key by key whatever its size; otherwise as [`WriteTurn::commit`].
    pub fn commit_part(&self, batch: WriteBatch<'_>) -> StoreResult<StoreGeneration> {
        self.commit_with(batch, Store::apply_part)
    }

    fn commit_with(
        &self,
        batch: WriteBatch<'_>,
        apply: fn(&Store, WriteBatch<'_>) -> StoreResult<(StoreGeneration, BatchChanges)>,
    ) -> StoreResult<StoreGeneration> {
        if batch.is_empty() {
            return self.store.generation();
        }
        let (generation, changed) = apply(self.store, batch)?;
        self.store.turns.note(Some(generation), &changed);
        self.lock_changes().absorb(generation, changed);
        Ok(generation)
    }

    /// Commits a write of derived data only (the duplicate finder's pairs): atomic and durable
    /// like [`WriteTurn::commit`], without a generation bump, so deriving writes nothing a
    /// client or an index would see as a change.
    pub fn commit_derived(&self, batch: WriteBatch<'_>) -> StoreResult<()> {
        if !batch.is_empty() {
            let changed = self.store.apply_derived(batch)?;
            self.store.turns.note(None, &changed);
        }
        Ok(())
    }

    /// What this turn's commits changed since it was taken, or last taken back after a pass.
    pub fn changes(&self) -> Changes {
        self.lock_changes().clone()
    }

    fn lock_changes(&self) -> MutexGuard<'_, Changes> {
        self.changes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Between two of its commits, lets the writers waiting for the turn write first (after
    /// the interlude settled what this turn committed), then takes it back: what they
    /// committed, or `None` when no one waited or the turn could not be passed. Whatever the
    /// turn's job read before may be stale after them.
    pub fn let_waiting_write(&self) -> Option<Changes> {
        if !self.store.turns.is_wanted() {
            return None;
        }
        self.pass_until(&|_| true)
    }

    /// [`WriteTurn::let_waiting_write`], whether anyone waits or not, taking the turn back
    /// only once `resume` holds of what the others committed (asked after each of their
    /// commits and whenever [`Store::wake_passed_turns`] is called).
    pub fn pass_until(&self, resume: &dyn Fn(&Changes) -> bool) -> Option<Changes> {
        let ours = std::mem::take(&mut *self.lock_changes());
        if let Some(interlude) = &self.interlude {
            if !interlude.settle(self, &ours) {
                *self.lock_changes() = ours;
                return None;
            }
        }
        self.holding.store(false, Ordering::Release);
        let others = self.store.turns.pass(resume);
        self.holding.store(true, Ordering::Release);
        if let Some(interlude) = &self.interlude {
            interlude.resume(self, &others);
        }
        Some(others)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn batch(listings: &[u64], recounted: &[u64]) -> BatchChanges {
        BatchChanges {
            listings: listings.iter().map(|&id| ListingId(id)).collect(),
            recounted: recounted.iter().map(|&id| ModelId(id)).collect(),
            ..BatchChanges::default()
        }
    }

    #[test]
    fn commits_add_up_to_one_change() {
        let mut changes = Changes::default();
        assert!(changes.is_contiguous(), "no commit yet");
        changes.absorb(StoreGeneration(8), batch(&[1, 2], &[5, 9]));
        changes.absorb(StoreGeneration(9), batch(&[3], &[2, 5]));
        assert_eq!(
            (
                changes.first_generation,
                changes.generation,
                changes.commits
            ),
            (StoreGeneration(8), StoreGeneration(9), 2)
        );
        assert_eq!(changes.listings, [1, 2, 3].map(ListingId));
        assert_eq!(
            changes.recounted.iter().map(|m| m.0).collect::<Vec<_>>(),
            [2, 5, 9]
        );
        assert!(changes.is_contiguous());
    }

    #[test]
    fn a_write_between_commits_breaks_contiguity() {
        let mut changes = Changes::default();
        changes.absorb(StoreGeneration(8), batch(&[1], &[]));
        changes.absorb(StoreGeneration(10), batch(&[2], &[]));
        assert!(!changes.is_contiguous());
    }

    fn store(dir: &std::path::Path) -> Store {
        Store::open(dir, 1 << 20).expect("store")
    }

    /// Commits one small write through `turn` (a model's listing count).
    fn commit_one(turn: &WriteTurn<'_>, count: u64) -> StoreGeneration {
        let mut batch = turn.batch().expect("batch");
        batch.set_listing_count(ModelId(1), count);
        turn.commit(batch).expect("commit")
    }

    /// Waits (on the queue, no timing) until `waiting` writers other than the one served have
    /// drawn.
    fn until_waiting(store: &Store, waiting: u64) {
        let queue = &store.turns;
        let mut state = queue.lock();
        while state.drawn < state.serving + 1 + waiting {
            state = queue.wait(state);
        }
    }

    #[test]
    fn a_watch_gathers_the_commits_after_it_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        commit_one(&store.write_turn(), 1);
        let watch = store.watch_writes();
        let unread = store.watch_writes();
        let after = commit_one(&store.write_turn(), 2);
        let changes = watch.changes();
        assert_eq!((changes.commits, changes.generation), (1, after));
        assert_eq!(
            changes.recounted.iter().copied().collect::<Vec<_>>(),
            [ModelId(1)]
        );
        drop(unread);
        assert!(
            store.turns.lock().passed.is_empty(),
            "a watch read or dropped stops"
        );
    }

    #[test]
    fn a_second_turn_waits_for_the_first() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        let first = store.write_turn();
        let (entered, seen) = mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _second = store.write_turn();
                entered.send(()).expect("send");
            });
            until_waiting(&store, 1);
            assert!(seen.try_recv().is_err(), "not while the first is held");
            drop(first);
            seen.recv()
                .expect("the second turn began once the first ended");
        });
    }

    #[test]
    fn a_turn_passed_between_commits_lets_the_waiting_writer_go_first_and_hears_what_it_did() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        let job = store.write_turn();
        assert_eq!(
            job.let_waiting_write(),
            None,
            "no one waits: nothing passed"
        );
        let first = commit_one(&job, 1);
        std::thread::scope(|scope| {
            let admin = scope.spawn(|| {
                let turn = store.write_turn();
                commit_one(&turn, 2)
            });
            until_waiting(&store, 1);
            let others = job.let_waiting_write().expect("passed");
            let admin = admin.join().expect("admin");
            assert_eq!(
                admin.0,
                first.0 + 1,
                "the admin wrote before the job's next chunk"
            );
            assert_eq!((others.commits, others.generation), (1, admin));
        });
        let next = commit_one(&job, 3);
        assert_eq!(next.0, first.0 + 2);
        assert_eq!(
            job.changes().commits,
            1,
            "the job's changes start again after a pass"
        );
    }

    #[test]
    fn background_work_waiting_for_the_turn_waits_for_the_whole_write() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        let job = store.write_turn();
        let first = commit_one(&job, 1);
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                let turn = store.background_write_turn();
                commit_one(&turn, 2)
            });
            until_waiting(&store, 1);
            assert_eq!(
                job.let_waiting_write(),
                None,
                "not passed for background work"
            );
            commit_one(&job, 3);
            drop(job);
            let worker = worker.join().expect("worker");
            assert_eq!(worker.0, first.0 + 2, "after the whole write");
        });
    }

    #[test]
    fn a_turn_passed_until_a_condition_holds_waits_for_it_and_for_a_wake() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        let job = store.write_turn();
        let go = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let writes = scope.spawn(|| {
                for n in 0..2 {
                    let turn = store.write_turn();
                    commit_one(&turn, n);
                }
            });
            let others = job
                .pass_until(&|others| others.commits >= 2)
                .expect("passed");
            writes.join().expect("writes");
            assert_eq!(others.commits, 2);
            // Passed until woken: a flag set from elsewhere, then the wake.
            let waker = scope.spawn(|| {
                until_passed(&store);
                go.store(true, Ordering::Release);
                store.wake_passed_turns();
            });
            let others = job
                .pass_until(&|_| go.load(Ordering::Acquire))
                .expect("passed");
            waker.join().expect("waker");
            assert_eq!(others.commits, 0);
        });
        commit_one(&job, 9);
    }

    /// Waits until a turn is passed.
    fn until_passed(store: &Store) {
        let queue = &store.turns;
        let mut state = queue.lock();
        while state.passed.is_empty() {
            state = queue.wait(state);
        }
    }
}
