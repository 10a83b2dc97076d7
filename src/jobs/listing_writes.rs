//! Listing writes together with the change they make to each model's count of ACTIVE listings.
//! A large write (a snapshot of millions of listings) is committed in chunks of at most
//! [`CHUNK_LISTINGS`], so its memory stays bounded, and holds its count changes for its last
//! commit: written per chunk they were two keys in five of an ingest (a model's count again in
//! every chunk), and a reader sees the new counts when the listings index shows the listings.
//! The store is marked while counts are held; a process that dies holding them leaves the
//! mark, and the next open counts again (`store::recount`). Counts stay held while the write
//! lets other writers in between its chunks: theirs are written over the stored counts, and
//! the held changes added to them with the last commit.

use super::progress::{between_chunks, Boundary, JobControl};
use super::reindex::indexed_alike;
use crate::domain::{Listing, ModelId};
use crate::store::{Changes, ListingWrite, StoreGeneration, StoreResult, WriteBatch, WriteTurn};
use std::collections::HashMap;

/// Listings one store commit takes at most. Past a few tens of thousands a sled batch gets no
/// faster per listing, while its memory keeps growing (docs/decisions.md, D-28).
pub const CHUNK_LISTINGS: usize = 50_000;

/// Listings a chunk holds at most while a person is at work beside the write: a person's write
/// waits for the chunk under way, committed and indexed, and 50,000 new listings take 2–3 s
/// where 10,000 take well under one (D-216).
pub const CHUNK_LISTINGS_BESIDE_A_PERSON: usize = 10_000;

/// How long after a person was last seen at work (a signed-in request, or their write waiting
/// for the turn) a write keeps its chunks short: an admin working through groups clicks again
/// within it.
pub const A_PERSON_AT_WORK: std::time::Duration = std::time::Duration::from_secs(120);

/// A pending write of listings, inside a write turn.
pub struct ListingWrites<'a> {
    turn: &'a WriteTurn<'a>,
    /// Listings a chunk holds at most.
    chunk: usize,
    /// Whether its chunks shrink to [`CHUNK_LISTINGS_BESIDE_A_PERSON`] while a person is at
    /// work ([`ListingWrites::new`] only: a chunk size asked for is kept).
    yields_to_people: bool,
    pending: Pending<'a>,
    done: WrittenListings,
    /// The count changes of the chunks committed so far, for the last commit; `None` until a
    /// chunk commits ahead of it (the store is marked from then on).
    held: Option<HashMap<ModelId, i64>>,
}

/// The uncommitted chunk: its batch, the change of each model's ACTIVE listing count, and how
/// many listings it writes.
struct Pending<'a> {
    batch: WriteBatch<'a>,
    counts: HashMap<ModelId, i64>,
    listings: usize,
    /// The listings written, for the turn's listing sink (none kept when it has none).
    indexed: Vec<ListingWrite>,
}

/// What a write of listings committed, for its report (the indexes learn the ids from the
/// turn's [`Changes`](crate::store::Changes)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrittenListings {
    /// The generation of the last commit (the store's, when nothing was written).
    pub generation: StoreGeneration,
    /// Store commits made.
    pub commits: u64,
    /// Listings written (a listing written twice counts twice).
    pub listings: usize,
}

impl WrittenListings {
    fn absorb(&mut self, later: WrittenListings) {
        if later.commits > 0 {
            self.generation = later.generation;
            self.commits += later.commits;
            self.listings += later.listings;
        }
    }
}

/// How a chunk is committed.
#[derive(Debug, Clone, Copy)]
enum Commit {
    /// The whole write, in one commit: atomic when it fits one sled batch.
    Whole,
    /// One of several commits of a write (`WriteTurn::commit_part`).
    Part,
}

impl<'a> Pending<'a> {
    fn new(turn: &'a WriteTurn<'a>) -> StoreResult<Pending<'a>> {
        Ok(Pending {
            batch: turn.batch()?,
            counts: HashMap::new(),
            listings: 0,
            indexed: Vec::new(),
        })
    }

    /// Commits, then hands what was written to the turn's listing sink: only what committed
    /// reaches the index.
    fn commit_and_tell(
        mut self,
        turn: &WriteTurn<'_>,
        how: Commit,
    ) -> StoreResult<WrittenListings> {
        let indexed = std::mem::take(&mut self.indexed);
        let written = self.commit(turn, how)?;
        if let Some(sink) = turn.listing_sink() {
            if written.commits > 0 {
                sink.committed(indexed);
            }
        }
        Ok(written)
    }

    /// Adds the new counts to the batch and commits it.
    fn commit(mut self, turn: &WriteTurn<'_>, how: Commit) -> StoreResult<WrittenListings> {
        let store = turn.store();
        for (model, delta) in std::mem::take(&mut self.counts) {
            if delta != 0 {
                let count = (store.listings().listing_count(model)? as i64 + delta).max(0) as u64;
                self.batch.set_listing_count(model, count);
            }
        }
        if self.listings == 0 && self.batch.is_empty() {
            return Ok(WrittenListings {
                generation: store.generation()?,
                commits: 0,
                listings: 0,
            });
        }
        Ok(WrittenListings {
            generation: match how {
                Commit::Whole => turn.commit(self.batch)?,
                Commit::Part => turn.commit_part(self.batch)?,
            },
            commits: 1,
            listings: self.listings,
        })
    }
}

impl<'a> ListingWrites<'a> {
    /// A write in chunks of [`CHUNK_LISTINGS`], shorter while a person is at work beside it.
    pub fn new(turn: &'a WriteTurn<'a>) -> StoreResult<ListingWrites<'a>> {
        let mut writes = ListingWrites::in_chunks_of(turn, CHUNK_LISTINGS)?;
        writes.yields_to_people = true;
        Ok(writes)
    }

    /// A write of any size committed as one atomic commit of `batch`, which may already hold
    /// other records of the same write (a model the listings are linked to, an audit entry).
    pub fn in_one_commit(
        turn: &'a WriteTurn<'a>,
        batch: WriteBatch<'a>,
    ) -> StoreResult<ListingWrites<'a>> {
        let mut writes = ListingWrites::in_chunks_of(turn, usize::MAX)?;
        writes.pending.batch = batch;
        Ok(writes)
    }

    /// A write committed in chunks of at most `chunk` listings (at least one).
    pub fn in_chunks_of(turn: &'a WriteTurn<'a>, chunk: usize) -> StoreResult<ListingWrites<'a>> {
        Ok(ListingWrites {
            turn,
            chunk: chunk.max(1),
            yields_to_people: false,
            pending: Pending::new(turn)?,
            done: WrittenListings {
                generation: turn.store().generation()?,
                commits: 0,
                listings: 0,
            },
            held: None,
        })
    }

    /// The batch of the pending chunk, for allocating ids. Ids are read from the committed
    /// counter on first use, so a chunk allocates only after the previous one committed.
    pub fn batch(&mut self) -> &mut WriteBatch<'a> {
        &mut self.pending.batch
    }

    pub fn turn(&self) -> &'a WriteTurn<'a> {
        self.turn
    }

    /// Listings the next chunk holds at most.
    pub fn chunk(&self) -> usize {
        let person_at_work = || (self.turn.store()).a_person_at_work_within(A_PERSON_AT_WORK);
        if self.yields_to_people && person_at_work() {
            self.chunk.min(CHUNK_LISTINGS_BESIDE_A_PERSON)
        } else {
            self.chunk
        }
    }

    /// Writes `new` over `old`, adjusting the counts of the models either is counted for.
    pub fn put(&mut self, old: Option<&Listing>, new: Listing) {
        let pending = &mut self.pending;
        if let Some(model) = old.and_then(Listing::counted_for) {
            *pending.counts.entry(model).or_default() -= 1;
        }
        if let Some(model) = new.counted_for() {
            *pending.counts.entry(model).or_default() += 1;
        }
        pending.batch.put_listing(old, &new);
        pending.listings += 1;
        if self.turn.listing_sink().is_some() {
            pending.indexed.push(match old {
                None => ListingWrite::Created(new),
                Some(old) if indexed_alike(old, &new) => ListingWrite::Same,
                Some(_) => ListingWrite::Changed(new),
            });
        }
    }

    /// Commits the pending chunk when it is full; true when it did.
    pub fn commit_if_full(&mut self) -> StoreResult<bool> {
        // Asked per listing written: whether a person is at work only once a short chunk is
        // pending.
        let pending = self.pending.listings;
        let full =
            pending >= self.chunk.min(CHUNK_LISTINGS_BESIDE_A_PERSON) && pending >= self.chunk();
        if full {
            self.commit_chunk_while(|| ())?;
        }
        Ok(full)
    }

    /// [`between_chunks`] for this write (nothing may be pending): the counts it holds for
    /// models that the writers let in deleted are let go. Only a merge deletes a model, and it
    /// moved the model's listings, this write's among them, to the keeper, counting them there.
    pub fn between_chunks(&mut self, control: &JobControl) -> StoreResult<Boundary> {
        let boundary = between_chunks(self.turn, control);
        if let Some(others) = &boundary.others {
            self.let_go_of_deleted(others)?;
        }
        Ok(boundary)
    }

    fn let_go_of_deleted(&mut self, others: &Changes) -> StoreResult<()> {
        let Some(held) = &mut self.held else {
            return Ok(());
        };
        let catalogue = self.turn.store().catalogue();
        for model in &others.models {
            if held.contains_key(model) && !catalogue.has_model(*model)? {
                held.remove(model);
            }
        }
        Ok(())
    }

    /// Commits the pending chunk while `meanwhile` runs beside it, and starts the next chunk.
    /// `meanwhile` must not write to the store.
    pub fn commit_chunk_while<T: Send>(
        &mut self,
        meanwhile: impl FnOnce() -> T + Send,
    ) -> StoreResult<T> {
        let mut chunk = std::mem::replace(&mut self.pending, Pending::new(self.turn)?);
        self.hold(&mut chunk.counts)?;
        let turn = self.turn;
        let (committed, value) =
            rayon::join(move || chunk.commit_and_tell(turn, Commit::Part), meanwhile);
        match committed {
            Ok(committed) => self.done.absorb(committed),
            Err(error) => {
                // The held counts now include a chunk that may be part-written: none is
                // written, and the store's mark stays for the next open to count again.
                self.held = None;
                return Err(error);
            }
        }
        Ok(value)
    }

    /// Takes a chunk's count changes into the held ones, marking the store first (durable before
    /// the chunk's records) when they are the first held.
    fn hold(&mut self, counts: &mut HashMap<ModelId, i64>) -> StoreResult<()> {
        let held = match &mut self.held {
            Some(held) => held,
            None => {
                let mut mark = self.turn.batch()?;
                mark.hold_listing_counts(true);
                self.turn.commit_derived(mark)?;
                self.held.insert(HashMap::new())
            }
        };
        for (model, delta) in counts.drain() {
            *held.entry(model).or_default() += delta;
        }
        Ok(())
    }

    /// Commits `last` with every held count change, then clears the store's mark: a death
    /// between the two leaves the mark, and the next open counts what is already right.
    fn commit_with_held(&mut self, mut last: Pending<'a>) -> StoreResult<WrittenListings> {
        let Some(held) = self.held.take() else {
            return last.commit_and_tell(self.turn, Commit::Whole);
        };
        for (model, delta) in held {
            *last.counts.entry(model).or_default() += delta;
        }
        let written = last.commit_and_tell(self.turn, Commit::Part)?;
        let mut clear = self.turn.batch()?;
        clear.hold_listing_counts(false);
        self.turn.commit_derived(clear)?;
        Ok(written)
    }

    /// Commits what is pending; returns everything written.
    pub fn commit(mut self) -> StoreResult<WrittenListings> {
        let pending = std::mem::replace(&mut self.pending, Pending::new(self.turn)?);
        let last = self.commit_with_held(pending)?;
        self.done.absorb(last);
        Ok(self.done)
    }
}

/// A write ended without [`ListingWrites::commit`] (stopped between chunks, or failed outside
/// a commit) still writes the counts of the chunks it committed; what was pending is dropped.
/// One whose commit failed, or whose counts fail to be written here, leaves the store marked,
/// and its next open counts again.
impl Drop for ListingWrites<'_> {
    fn drop(&mut self) {
        // Unwinding from a panic, nothing more is written: the mark stays for the next open.
        if self.held.is_none() || std::thread::panicking() {
            return;
        }
        let settled = Pending::new(self.turn).and_then(|none| self.commit_with_held(none));
        if let Err(error) = settled {
            tracing::warn!(%error, "listing counts held by an unfinished write not written; the next start counts them");
        }
    }
}

/// For tests: every model's count as the listings make it, and as the store keeps it (for
/// every model a listing names).
#[cfg(test)]
pub(crate) fn counts(
    store: &crate::store::Store,
) -> (
    std::collections::BTreeMap<ModelId, u64>,
    std::collections::BTreeMap<ModelId, u64>,
) {
    let listings: Vec<Listing> = store
        .listings()
        .all_listings()
        .map(|l| l.expect("listing"))
        .collect();
    let mut made = std::collections::BTreeMap::new();
    for model in listings.iter().filter_map(Listing::counted_for) {
        *made.entry(model).or_default() += 1;
    }
    let kept = listings
        .iter()
        .filter_map(|l| l.model_id)
        .map(|m| (m, store.listings().listing_count(m).expect("count")))
        .filter(|(_, count)| *count > 0)
        .collect();
    (made, kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ListingStatus;
    use crate::jobs::ingest::fixture_store_with_feeds;
    use crate::store::{Counted, Store};

    /// The listed and unmatched counters, as kept.
    fn counters(store: &Store) -> (u64, u64) {
        let count = |c| store.count_of(c).expect("count");
        (count(Counted::Listings), count(Counted::UnmatchedListings))
    }

    /// Delists up to `n` ACTIVE matched listings in chunks of two, each a count change, and
    /// returns the write still open after its chunks but the last committed.
    fn delist<'a>(store: &Store, turn: &'a WriteTurn<'a>, n: usize) -> ListingWrites<'a> {
        let active: Vec<Listing> = store
            .listings()
            .all_listings()
            .map(|l| l.expect("listing"))
            .filter(|l| l.counted_for().is_some())
            .take(n)
            .collect();
        assert_eq!(
            active.len(),
            n,
            "the fixtures have {n} ACTIVE matched listings"
        );
        let mut writes = ListingWrites::in_chunks_of(turn, 2).expect("writes");
        for old in active {
            let mut new = old.clone();
            new.set_status(ListingStatus::Delisted, old.updated_at);
            writes.put(Some(&old), new);
            writes.commit_if_full().expect("chunk");
        }
        writes
    }

    /// A person whose write finds the turn taken (by a job) makes the job's chunks short for a
    /// while, as a signed-in request does; a chunk size asked for, and a person who did not
    /// have to wait, change nothing.
    #[test]
    fn a_writes_chunks_are_short_once_a_person_waited_for_the_turn_beside_it() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path(), 1 << 22).expect("open");
        drop(store.write_turn());
        std::thread::scope(|threads| {
            let turn = store.write_turn();
            let writes = ListingWrites::new(&turn).expect("writes");
            assert_eq!(writes.chunk(), CHUNK_LISTINGS, "no person waited yet");
            threads.spawn(|| drop(store.write_turn()));
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while !store.a_person_at_work_within(A_PERSON_AT_WORK) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the person never came"
                );
                std::thread::yield_now();
            }
            assert_eq!(writes.chunk(), CHUNK_LISTINGS_BESIDE_A_PERSON);
            let asked = ListingWrites::in_chunks_of(&turn, 70_000).expect("writes");
            assert_eq!(asked.chunk(), 70_000, "a size asked for is kept");
            // The writes, then the turn, end here: the person's write goes in.
        });
    }

    #[test]
    fn a_person_signed_in_makes_a_writes_chunks_short() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path(), 1 << 22).expect("open");
        let turn = store.write_turn();
        let writes = ListingWrites::new(&turn).expect("writes");
        assert_eq!(writes.chunk(), CHUNK_LISTINGS);
        store.note_a_person_at_work();
        assert_eq!(writes.chunk(), CHUNK_LISTINGS_BESIDE_A_PERSON);
    }

    #[test]
    fn a_write_in_chunks_holds_its_counts_for_its_last_commit() {
        let dir = tempfile::tempdir().expect("dir");
        let store = fixture_store_with_feeds(dir.path());
        let (before, kept) = counts(&store);
        assert_eq!(before, kept);
        let turn = store.write_turn();
        let writes = delist(&store, &turn, 5);
        assert!(
            store.listings().listing_counts_held().expect("mark"),
            "marked while held"
        );
        assert_eq!(
            counts(&store).1,
            before,
            "no count moved before the last commit"
        );
        let written = writes.commit().expect("commit");
        assert_eq!((written.listings, written.commits), (5, 3));
        assert!(!store.listings().listing_counts_held().expect("mark"));
        let (made, kept) = counts(&store);
        assert_eq!(kept, made, "the counts are the listings'");
        assert_ne!(made, before, "five listings left their models' counts");
        assert_eq!(
            turn.changes().commits,
            3,
            "the marks are no commits of the turn"
        );
    }

    #[test]
    fn a_write_dropped_between_chunks_writes_the_counts_of_what_it_committed() {
        let dir = tempfile::tempdir().expect("dir");
        let store = fixture_store_with_feeds(dir.path());
        let turn = store.write_turn();
        // Four listings in two chunks committed, the fifth pending and dropped.
        drop(delist(&store, &turn, 5));
        assert!(!store.listings().listing_counts_held().expect("mark"));
        let (made, kept) = counts(&store);
        assert_eq!(kept, made);
        let delisted = store
            .listings()
            .all_listings()
            .filter(|l| l.as_ref().expect("listing").status == ListingStatus::Delisted)
            .count();
        assert_eq!(delisted, 4);
    }

    /// A copy of the files of `from` as they are: what a process that died now leaves.
    fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).expect("dir");
        for entry in std::fs::read_dir(from).expect("read dir") {
            let entry = entry.expect("entry");
            let target = to.join(entry.file_name());
            if entry.file_type().expect("type").is_dir() {
                copy_dir(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).expect("copy");
            }
        }
    }

    #[test]
    fn a_store_left_holding_counts_counts_again_when_opened() {
        let dir = tempfile::tempdir().expect("dir");
        let store = fixture_store_with_feeds(dir.path());
        let right = counters(&store);
        let (before, _) = counts(&store);
        let died = tempfile::tempdir().expect("dir");
        {
            let turn = store.write_turn();
            let writes = delist(&store, &turn, 5);
            // Every commit is flushed: the files now are what a death between chunks leaves.
            copy_dir(dir.path(), died.path());
            drop(writes);
        }
        let store = Store::open(died.path(), 1 << 22).expect("open");
        assert!(!store.listings().listing_counts_held().expect("mark"));
        let (made, kept) = counts(&store);
        // Four listings of the chunks committed left their counts, which were held, not written.
        assert_ne!(made, before);
        assert_eq!(kept, made, "counted again at open");
        assert_eq!(counters(&store), (right.0 - 4, right.1));
    }
}
