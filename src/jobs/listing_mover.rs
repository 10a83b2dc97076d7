//! The listing mover (D-231): relinks the listings a large merge left to the model their
//! duplicate was merged into, [`MOVED_PER_WRITE`](super::merge::MOVED_PER_WRITE) a write. Each
//! write is a background turn of the writer's: it takes its turn in order among the writes of
//! people, but a running job never passes its turn for it (it writes when the job passes for a
//! person, or after the job), so it adds no pass to a job's chunks. `serve` runs it on a thread
//! of its own, at start (listings a stopped process left) and after each write that leaves some.

use super::context::JobContext;
use super::doorbell::RungThread;
use super::merge::{move_listings_left, read_ahead_of_move, MergeError};
use super::priority::LowerPriority;
use super::progress::TestPacing;
use super::writer::WriteError;
use std::sync::Arc;

/// What a drain did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MoveReport {
    /// Listings relinked.
    pub moved: usize,
    /// Writes made.
    pub writes: usize,
    /// Whether listings are still left: stopped, or a write found none it could move (the
    /// listings index behind the store), tried again at the next ring or start.
    pub left: bool,
}

/// Moves what merges left, a write at a time, until none is left, `stop` says so between two
/// writes, or a write moves nothing.
pub fn move_all_left(
    context: &JobContext,
    stop: &dyn Fn() -> bool,
) -> Result<MoveReport, WriteError<MergeError>> {
    let mut report = MoveReport::default();
    // The read runs while a person's write may hold the turn: at a lower priority, its page
    // reads leave that write the cores (D-253).
    let reads = LowerPriority::new("mover-reads");
    loop {
        // Read once before the turn, again (cached) in it: a person's write that waits for the
        // turn then waits for the write alone, not for the disk. Nothing left (a start with
        // none, a merge's listings moved by the drain before): no turn taken.
        let left = reads.run(|| read_ahead_of_move(context.store(), context.listings()));
        if !left.map_err(WriteError::Job)? {
            return Ok(report);
        }
        let moved = context
            .writer()
            .run_in_background(|turn| move_listings_left(turn, context.listings()))?
            .value;
        report.moved += moved.moved;
        report.writes += 1;
        report.left = moved.more;
        if !moved.more || moved.moved == 0 || stop() {
            return Ok(report);
        }
    }
}

/// Starts the mover's thread, which first runs `begin_when` (`serve` waits there for the
/// store's first flush, D-219). Stopped, it ends at its next write.
pub fn start(
    context: Arc<JobContext>,
    begin_when: impl FnOnce() + Send + 'static,
) -> std::io::Result<RungThread> {
    let doorbell = context.writer().listing_mover().clone();
    let held = TestPacing::from_env().hold_listing_mover;
    RungThread::spawn("listing-mover", doorbell.clone(), move || {
        begin_when();
        if held {
            while doorbell.wait_after(doorbell.rings()) {}
            return;
        }
        loop {
            // Counted before the drain: a merge during it wakes the next one.
            let seen = doorbell.rings();
            let started = std::time::Instant::now();
            doorbell.set_working(true);
            let drained = move_all_left(&context, &|| doorbell.stopped());
            doorbell.set_working(false);
            match drained {
                Ok(report) if report.writes > 0 => tracing::info!(
                    moved = report.moved,
                    writes = report.writes,
                    left = report.left,
                    took = ?started.elapsed(),
                    "merged models' listings moved"
                ),
                Ok(_) => {}
                Err(error) => tracing::warn!(
                    error = %crate::domain::causes(&error),
                    "moving merged models' listings; those left are moved at the next merge or start"
                ),
            }
            if !doorbell.wait_after(seen) {
                return;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{matched_listing, ListingId, ModelId, Timestamp};
    use crate::jobs::context::fixture_context;
    use crate::jobs::listing_writes::{counts, ListingWrites};
    use crate::jobs::merge::{merge, Merged, MOVED_PER_WRITE, MOVED_WITH_THE_MERGE};
    use crate::jobs::reindex::listings_of_model;
    use crate::jobs::users::Actor;
    use crate::store::{RecordKind, Store};

    /// The duplicate's listings: two writes of the mover and part of a third after the merge's.
    const LISTINGS: usize = MOVED_WITH_THE_MERGE + 2 * MOVED_PER_WRITE + 17;

    /// Two models of one brand: the keeper and its duplicate.
    fn two_of_a_brand(store: &Store) -> (ModelId, ModelId) {
        let models: Vec<_> = store
            .catalogue()
            .all_models()
            .map(|m| m.expect("model"))
            .collect();
        models
            .iter()
            .find_map(|a| {
                let b = models
                    .iter()
                    .find(|b| b.brand_id == a.brand_id && b.id != a.id)?;
                Some((a.id, b.id))
            })
            .expect("a brand with two models")
    }

    /// `n` active listings matched to `model`, in one write.
    fn listings_of(context: &JobContext, model: ModelId, n: usize) {
        let at = Timestamp::now();
        context
            .writer()
            .run(|turn| {
                let mut writes = ListingWrites::in_one_commit(turn, turn.batch()?)?;
                for _ in 0..n {
                    let id = writes.batch().allocate_id(RecordKind::Listing)?;
                    let price = (Some(1_000 + id % 500), "EUR");
                    writes.put(None, matched_listing(ListingId(id), model, price, at));
                }
                writes.commit().map(|_| ())
            })
            .expect("listings");
    }

    /// The fixtures' store in `dir`, a duplicate of 260 listings merged into its keeper: ten
    /// left to the mover. The context, the keeper and the duplicate.
    fn ten_left(dir: &std::path::Path) -> (JobContext, ModelId, ModelId) {
        let context = fixture_context(dir);
        let (keeper, duplicate) = two_of_a_brand(context.store());
        listings_of(&context, duplicate, MOVED_WITH_THE_MERGE + 10);
        merged(&context, keeper, duplicate);
        (context, keeper, duplicate)
    }

    fn merged(context: &JobContext, keeper: ModelId, duplicate: ModelId) -> Merged {
        context
            .writer()
            .run(|turn| merge(turn, context.listings(), &Actor::Cli, keeper, &[duplicate]))
            .expect("merge")
            .value
    }

    /// How many listings the store and the listings index give `model`.
    fn held_by(context: &JobContext, model: ModelId) -> (usize, usize) {
        let store = context.store();
        let stored = store
            .listings()
            .all_listings()
            .filter(|l| l.as_ref().expect("listing").model_id == Some(model))
            .count();
        let indexed = listings_of_model::<MergeError>(store, context.listings(), model)
            .expect("indexed")
            .len();
        (stored, indexed)
    }

    /// Every count kept is the listings' own, the duplicate keeps none (its listings left to
    /// move count for no model until moved), and the indexes are current.
    fn assert_whole(context: &JobContext, duplicate: ModelId) {
        let store = context.store();
        let (mut made, kept) = counts(store);
        made.remove(&duplicate);
        assert_eq!(kept, made, "every count is the listings'");
        assert_eq!(store.listings().listing_count(duplicate).expect("count"), 0);
        assert!(
            crate::jobs::reindex::listings_are_current(store, context.listings()).expect("current")
        );
    }

    #[test]
    fn a_large_merge_moves_its_first_listings_and_the_mover_the_rest_a_write_at_a_time() {
        let dir = tempfile::tempdir().expect("dir");
        let context = fixture_context(dir.path());
        let (keeper, duplicate) = two_of_a_brand(context.store());
        listings_of(&context, keeper, 3);
        listings_of(&context, duplicate, LISTINGS);

        let doorbell = context.writer().listing_mover();
        let rings = doorbell.rings();
        let merge = merged(&context, keeper, duplicate);
        assert_eq!(doorbell.rings(), rings + 1, "the merge wakes the mover");
        let left = LISTINGS - MOVED_WITH_THE_MERGE;
        assert_eq!(
            (merge.moved_listings, merge.left_listings),
            (LISTINGS, left)
        );
        assert_eq!(held_by(&context, duplicate), (left, left));
        assert_eq!(
            held_by(&context, keeper),
            (3 + MOVED_WITH_THE_MERGE, 3 + MOVED_WITH_THE_MERGE)
        );
        let duplicates = context.store().duplicates();
        assert_eq!(
            duplicates.merged_with_listings_left().expect("left"),
            [duplicate]
        );
        let audit = (context.store().audit().audit_newest_first().next())
            .expect("an entry")
            .expect("audit");
        let said =
            format!("{LISTINGS} listings ({left} of them by the listing mover, after this write)");
        assert!(audit.detail.contains(&said), "{:?}", audit.detail);
        assert_whole(&context, duplicate);

        let report = move_all_left(&context, &|| false).expect("moved");
        assert_eq!(
            report,
            MoveReport {
                moved: left,
                writes: 3,
                left: false
            }
        );
        // Its own writes wake no one: it went on while any were left.
        assert_eq!(doorbell.rings(), rings + 1, "the mover woke itself");
        assert_eq!(held_by(&context, duplicate), (0, 0));
        assert_eq!(held_by(&context, keeper), (3 + LISTINGS, 3 + LISTINGS));
        assert!(duplicates
            .merged_with_listings_left()
            .expect("left")
            .is_empty());
        assert_whole(&context, duplicate);
        assert_eq!(
            move_all_left(&context, &|| false).expect("nothing left"),
            MoveReport {
                moved: 0,
                writes: 0,
                left: false
            }
        );
    }

    #[test]
    fn a_mover_stopped_between_writes_leaves_the_rest_to_the_next_start() {
        let dir = tempfile::tempdir().expect("dir");
        let (keeper, duplicate) = {
            let context = fixture_context(dir.path());
            let (keeper, duplicate) = two_of_a_brand(context.store());
            listings_of(&context, duplicate, LISTINGS);
            merged(&context, keeper, duplicate);
            let report = move_all_left(&context, &|| true).expect("one write");
            assert_eq!(
                report,
                MoveReport {
                    moved: MOVED_PER_WRITE,
                    writes: 1,
                    left: true
                }
            );
            context.store().flush().expect("flush");
            (keeper, duplicate)
        };
        let context = fixture_context(dir.path());
        let left = LISTINGS - MOVED_WITH_THE_MERGE - MOVED_PER_WRITE;
        assert_eq!(held_by(&context, duplicate), (left, left));
        assert_eq!(
            context
                .store()
                .duplicates()
                .merged_with_listings_left()
                .expect("left"),
            [duplicate]
        );
        assert_whole(&context, duplicate);
        let report = move_all_left(&context, &|| false).expect("moved");
        assert_eq!((report.moved, report.left), (left, false));
        assert_eq!(held_by(&context, keeper).0, LISTINGS);
        assert_whole(&context, duplicate);
    }

    #[test]
    fn a_recount_at_open_counts_the_listings_left_for_no_model() {
        let dir = tempfile::tempdir().expect("dir");
        let duplicate = {
            let (context, _, duplicate) = ten_left(dir.path());
            // As a write of listings in several commits that died holding its counts.
            context
                .writer()
                .run(|turn| {
                    let mut batch = turn.batch()?;
                    batch.hold_listing_counts(true);
                    turn.commit(batch)
                })
                .expect("marked");
            context.store().flush().expect("flush");
            duplicate
        };
        let context = fixture_context(dir.path());
        assert!(!context
            .store()
            .listings()
            .listing_counts_held()
            .expect("mark"));
        assert_eq!(held_by(&context, duplicate).0, 10);
        assert_whole(&context, duplicate);
    }

    /// A job asks the turn's queue between two chunks whether someone waits; the mover does
    /// not count, so a job never passes its turn for it (it writes when the job passes for a
    /// person, or after the job).
    #[test]
    fn the_mover_never_makes_a_job_pass_its_turn() {
        let dir = tempfile::tempdir().expect("dir");
        let (context, _, duplicate) = ten_left(dir.path());
        let store = context.store().clone();
        let left = || {
            store
                .duplicates()
                .merged_with_listings_left()
                .expect("left")
        };
        let job = store.write_turn();
        std::thread::scope(|scope| {
            let mover = scope.spawn(|| move_all_left(&context, &|| false).expect("moved"));
            for _ in 0..30 {
                std::thread::sleep(std::time::Duration::from_millis(10));
                assert!(job.let_waiting_write().is_none(), "the job passed its turn");
            }
            assert_eq!(
                left(),
                [duplicate],
                "the mover wrote while the job held the turn"
            );
            drop(job);
            assert_eq!(mover.join().expect("mover").moved, 10);
        });
        assert!(left().is_empty());
    }

    #[test]
    fn listings_left_follow_their_keeper_into_a_later_merge() {
        let dir = tempfile::tempdir().expect("dir");
        let (context, keeper, duplicate) = ten_left(dir.path());
        assert_eq!(held_by(&context, duplicate).0, 10);
        // The keeper is merged in turn, into the duplicate's brand's other model: none is left,
        // so a model of the brand made for it.
        let last = context
            .writer()
            .run(|turn| {
                let mut batch = turn.batch()?;
                let mut model = turn.store().catalogue().model(keeper)?.expect("the keeper");
                model.id = ModelId(batch.allocate_id(RecordKind::Model)?);
                model.slug = crate::domain::Slug::parse("the-last-keeper").expect("slug");
                model.reference_number = "LAST-1".to_owned();
                model.alternate_references.clear();
                batch.put_model(None, &model);
                turn.commit(batch).map(|_| model.id)
            })
            .expect("a model")
            .value;
        let second = merged(&context, last, keeper);
        assert_eq!(second.moved_listings, MOVED_WITH_THE_MERGE);
        let report = move_all_left(&context, &|| false).expect("moved");
        assert_eq!((report.moved, report.left), (10, false));
        assert_eq!(held_by(&context, last).0, MOVED_WITH_THE_MERGE + 10);
        assert_whole(&context, keeper);
        assert_whole(&context, duplicate);
    }
}
