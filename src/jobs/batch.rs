//! The batch jobs (`ingest`, `rates`, `match`, `reindex`, `duplicates`) as both the CLI and the
//! server's job runner run them: one function does a job's work through the writer and returns
//! the report that the CLI prints and that a job submitted to the server keeps. A stop
//! (SIGTERM) ends a job at its next chunk boundary, and the error says how far it got.

use super::context::JobContext;
use super::duplicates::{self, PassError};
use super::ingest::{self, IngestError, IngestReport};
use super::listing_writes::WrittenListings;
use super::matching::{rematch_ready, MatchError, RematchReady};
use super::price_series::FoldError;
use super::progress::JobControl;
use super::rates::{load_rates, RatesJobError};
use super::reindex::ReindexError;
use super::series_folder::refold_every_model;
use super::snapshot_rules::{Problems, SnapshotRules};
use super::writer::{IndexChoice, WriteError, Written};
use crate::domain::{JobKind, Timestamp};
use crate::store::Counted;
use crate::store::StoreError;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

/// A batch job and what it needs.
#[derive(Debug, Clone)]
pub enum Batch {
    /// `file` is the provider's full snapshot, named `name` in its problems.
    Snapshot {
        provider: String,
        file: PathBuf,
        name: String,
        rules: SnapshotRules,
    },
    /// An ECB rates file's text: a daily file or a history of many days.
    Rates {
        xml: String,
    },
    Match,
    Reindex(IndexChoice),
    Duplicates,
}

/// Problems of a refused snapshot shown with its refusal; the rest are only counted.
pub const PROBLEMS_SHOWN: usize = 20;

impl Batch {
    pub fn kind(&self) -> JobKind {
        match self {
            Batch::Snapshot { .. } => JobKind::Snapshot,
            Batch::Rates { .. } => JobKind::Rates,
            Batch::Match => JobKind::Match,
            Batch::Reindex(_) => JobKind::Reindex,
            Batch::Duplicates => JobKind::Duplicates,
        }
    }

    /// What the job names: the provider's slug, the index.
    pub fn subject(&self) -> Option<String> {
        match self {
            Batch::Snapshot { provider, .. } => Some(provider.clone()),
            Batch::Reindex(which) => Some(which.as_str().to_owned()),
            _ => None,
        }
    }

    /// The audit trail's account of the job's submission: an overridden stock guard is named.
    pub fn submitted_detail(&self) -> String {
        let mut detail = format!("{} job submitted", self.kind().as_str());
        if let Batch::Snapshot { rules, .. } = self {
            if rules.mass_delist_allowed_by.is_some() {
                detail.push_str(" with allowMassDelist: the stock guard is overridden");
            }
        }
        detail
    }

    /// What the job's progress counts.
    pub fn unit(&self) -> &'static str {
        match self {
            Batch::Snapshot { .. } | Batch::Match => "listings",
            Batch::Rates { .. } => "files",
            Batch::Reindex(_) => "documents",
            Batch::Duplicates => "models",
        }
    }
}

/// Why a batch job failed. What it committed before failing stays (an ingest's chunks).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("opening {file}")]
    Open {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Ingest(#[from] WriteError<IngestError>),
    #[error("loading the rates")]
    Rates(#[from] WriteError<RatesJobError>),
    #[error(transparent)]
    Duplicates(#[from] WriteError<PassError>),
    #[error(transparent)]
    Match(#[from] WriteError<MatchError>),
    #[error("rebuilding the indexes")]
    Reindex(#[from] ReindexError),
    #[error("folding the price series")]
    Series(#[from] FoldError),
    #[error("reading the duplicate groups")]
    Read(#[from] StoreError),
}

impl BatchError {
    /// True when the job stopped at a chunk boundary because it was asked to (SIGTERM).
    pub fn is_interrupted(&self) -> bool {
        matches!(
            self,
            BatchError::Ingest(WriteError::Job(IngestError::Interrupted(_)))
                | BatchError::Match(WriteError::Job(MatchError::Stopped(_)))
                | BatchError::Duplicates(WriteError::Job(PassError::Stopped(_)))
                | BatchError::Reindex(ReindexError::Stopped)
                | BatchError::Series(FoldError::Stopped(_))
        )
    }

    /// What a refused snapshot is refused for: its first problems, one a line.
    pub fn report(&self) -> Option<String> {
        match self {
            BatchError::Ingest(WriteError::Job(error)) => refusal(error),
            _ => None,
        }
    }
}

/// The first [`PROBLEMS_SHOWN`] problems of a refused snapshot, one a line.
pub fn refusal(error: &IngestError) -> Option<String> {
    match error {
        IngestError::Refused { problems, .. } => {
            let mut text = String::new();
            for problem in problems.first().iter().take(PROBLEMS_SHOWN) {
                let _ = writeln!(text, "  {problem}");
            }
            if problems.count() > PROBLEMS_SHOWN {
                let _ = writeln!(text, "  and {} more", problems.count() - PROBLEMS_SHOWN);
            }
            Some(text)
        }
        _ => None,
    }
}

/// What a batch job reports, one line per fact: the lines it skipped (the CLI prints them on
/// standard error) and what it did (on standard output). A job's `report` is both, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchReport {
    pub skipped: String,
    pub summary: String,
}

impl std::fmt::Display for BatchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.skipped, self.summary)
    }
}

impl From<String> for BatchReport {
    fn from(summary: String) -> BatchReport {
        BatchReport {
            skipped: String::new(),
            summary,
        }
    }
}

/// Runs `batch` on `app`'s writer, counting into `control`; what it did.
pub fn run(
    context: &JobContext,
    batch: &Batch,
    control: &JobControl,
) -> Result<BatchReport, BatchError> {
    match batch {
        Batch::Snapshot {
            provider,
            file,
            name,
            rules,
        } => {
            let snapshot = std::fs::File::open(file).map_err(|source| BatchError::Open {
                file: name.clone(),
                source,
            })?;
            // Read, checked and with its catalogue before the write turn is taken: people's
            // writes do not wait for those seconds (D-225).
            let ready = ingest::ReadSnapshot::of(name, std::io::BufReader::new(snapshot))
                .and_then(|read| ingest::ReadyToWrite::of(context.store(), provider, read, rules))
                .map_err(|error| BatchError::Ingest(WriteError::Job(error)))?;
            let done = context
                .writer()
                .run(|turn| ingest::ingest_ready(turn, ready, rules, control))?;
            let mut report = ingest_lines(provider, &done.value);
            report
                .summary
                .push_str(&write_times(&done.value.written, &done));
            Ok(report)
        }
        Batch::Rates { xml } => {
            let report = context.writer().run(|turn| load_rates(turn, xml))?.value;
            finished(control, 1);
            Ok(format!("{}\n", report.summary()).into())
        }
        Batch::Match => {
            // The listings to write found before the write turn is taken (D-226).
            let ready = RematchReady::of(context.store(), context.listings())
                .map_err(|error| BatchError::Match(WriteError::Job(error)))?;
            let done = context
                .writer()
                .run(|turn| rematch_ready(turn, ready, control))?;
            let report = &done.value;
            Ok(format!(
                "matched {} of {} unmatched listings; store generation {}\n{}",
                report.matched,
                report.tried,
                report.written.generation.0,
                write_times(&report.written, &done)
            )
            .into())
        }
        Batch::Reindex(which) => {
            control.set_total(documents_to_index(context, *which)?);
            let mut report = String::new();
            let mut done = 0;
            if which.takes_catalogue() || which.takes_listings() {
                let (lines, documents) = rebuild_indexes(context, *which, control)?;
                report.push_str(&lines);
                done += documents;
            }
            if which.takes_series() {
                let (line, models) = refold_series(context, control)?;
                report.push_str(&line);
                done += models;
            }
            finished(control, done as u64);
            Ok(report.into())
        }
        Batch::Duplicates => {
            // The pass counts the models it paired.
            let (report, _) = rebuild_duplicates(context, control)?;
            Ok(report.into())
        }
    }
}

/// Rebuilds the indexes `which` names, then (with the catalogue's) the duplicate pairs: the
/// report's lines, and the documents indexed.
fn rebuild_indexes(
    context: &JobContext,
    which: IndexChoice,
    control: &JobControl,
) -> Result<(String, usize), BatchError> {
    let started = Instant::now();
    let rebuilt = context.writer().rebuild_indexes(which, &|| {
        control.tick();
        control.should_stop()
    })?;
    let mut report = String::new();
    let mut documents = 0;
    let indexes = [
        ("catalogue documents", rebuilt.catalogue),
        ("listings", rebuilt.listings),
    ];
    for (what, rebuilt) in indexes {
        if let Some(rebuilt) = rebuilt {
            documents += rebuilt.documents;
            let _ = writeln!(
                report,
                "indexed {} {what} at store generation {}",
                rebuilt.documents, rebuilt.generation
            );
        }
    }
    if let Some(kept) = rebuilt.unmatched_groups {
        let _ = writeln!(
            report,
            "kept {} groups of unmatched listings ({} keys put right)",
            kept.groups, kept.keys_written
        );
    }
    let _ = writeln!(report, "indexes rebuilt in {:.2?}", started.elapsed());
    // Pairs are found among models: a rebuild of the listings alone leaves them be.
    if which.takes_catalogue() {
        report.push_str(&rebuild_duplicates(context, control)?.0);
    }
    Ok((report, documents))
}

/// Folds every model's price series again: the report's line, and the models folded.
fn refold_series(
    context: &JobContext,
    control: &JobControl,
) -> Result<(String, usize), BatchError> {
    let started = Instant::now();
    let folded = refold_every_model(context, Timestamp::now(), control)?;
    let line = format!(
        "folded the price series of {} models in {:.2?}\n",
        folded.models,
        started.elapsed()
    );
    Ok((line, folded.models))
}

/// Marks a job as all done, `total` units in all, whatever it counted while it ran.
fn finished(control: &JobControl, total: u64) {
    let (done, _) = control.progress();
    control.set_total(total.max(done));
    control.advance(total.saturating_sub(done));
}

/// About how many documents a rebuild of `which` indexes (and models it folds the price series
/// of), from the store's counters: the total its progress shows until the rebuild says how
/// many it did.
fn documents_to_index(context: &JobContext, which: IndexChoice) -> Result<u64, BatchError> {
    let store = context.store();
    let count = |counted| store.count_of(counted);
    let mut documents = 0;
    if which.takes_catalogue() {
        documents += count(Counted::Models)? + count(Counted::Brands)? + count(Counted::Series)?;
    }
    if which.takes_listings() {
        documents += count(Counted::Listings)?;
    }
    // A fold of the price series counts models.
    if which.takes_series() {
        documents += count(Counted::Models)?;
    }
    Ok(documents)
}

/// The duplicate finder's full pass, stopped by `control`: its report line, and the pairs.
fn rebuild_duplicates(
    context: &JobContext,
    control: &JobControl,
) -> Result<(String, usize), BatchError> {
    let started = Instant::now();
    // What the pass reads, read before the write turn is taken (D-230).
    let ready = duplicates::PassReady::of(context.store(), &Default::default())
        .map_err(|error| BatchError::Duplicates(WriteError::Job(error.into())))?;
    let pairs = context
        .writer()
        .run(|turn| duplicates::rebuild_as_job(turn, ready, control))?
        .value;
    let took = started.elapsed();
    // Through the server's kept groups: the full pass leaves them to be joined whole again,
    // and joining them here for the count serves the next `GET /duplicate-models` too.
    let groups = context.duplicate_groups()?;
    let report = format!(
        "duplicates: {pairs} pairs in {} groups, found in {took:.2?}\n",
        groups.len()
    );
    Ok((report, pairs))
}

/// One line per skipped snapshot line (the first [`PROBLEMS_KEPT`] of them), then what the
/// ingest did, and the stock guard's refusal when an override let the snapshot through.
///
/// [`PROBLEMS_KEPT`]: super::snapshot_rules::PROBLEMS_KEPT
pub fn ingest_lines(provider: &str, report: &IngestReport) -> BatchReport {
    let skipped = skipped_lines(&report.skipped);
    let mut summary = format!(
        "ingested {provider}: {} created, {} refreshed, {} reactivated, {} delisted; {} matched, {} unmatched; {} lines skipped; store generation {}\n",
        report.created, report.refreshed, report.reactivated, report.delisted, report.matched,
        report.unmatched, report.skipped.count(), report.written.generation.0
    );
    if let Some(refusal) = &report.overridden {
        let _ = writeln!(summary, "mass delisting allowed: {refusal}");
    }
    BatchReport { skipped, summary }
}

fn skipped_lines(problems: &Problems) -> String {
    let mut skipped = String::new();
    for problem in problems.first() {
        let _ = writeln!(skipped, "skipped {problem}");
    }
    if problems.not_kept() > 0 {
        let _ = writeln!(
            skipped,
            "skipped {} more lines, not listed",
            problems.not_kept()
        );
    }
    skipped
}

/// How long a listings write and the index updates after it took: on millions of listings
/// either can dominate.
fn write_times<T>(written: &WrittenListings, done: &Written<T>) -> String {
    format!(
        "{} listings written in {:.1} s in {} commits; indexes up to date after {:.1} s more\n",
        written.listings,
        done.write_took.as_secs_f64(),
        written.commits,
        done.index_took.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{DuplicatePair, ModelId};
    use crate::jobs::import::fixtures::EmbeddedFixtures;
    use crate::jobs::import::{import, DirectorySource};
    use crate::jobs::progress::TestPacing;
    use crate::jobs::reindex;
    use crate::store::Store;
    use std::path::Path;

    /// The fixtures' catalogue, no listing, both indexes current, in a job context.
    fn context(dir: &Path) -> JobContext {
        let context = crate::jobs::context::test_context(dir);
        let turn = context.store().write_turn();
        crate::jobs::import::import_with_media(&turn, &EmbeddedFixtures, Some(context.media()))
            .expect("fixtures");
        drop(turn);
        context.writer().catch_up().expect("catch up");
        context
    }

    /// A control whose job commits chunks of `chunk` and was told to stop before it began: it
    /// commits its first chunk and stops there.
    fn stopped_after_one_chunk_of(chunk: usize) -> JobControl {
        let control = JobControl::default().paced(TestPacing {
            chunk_listings: Some(chunk),
            ..TestPacing::default()
        });
        control.stop();
        control
    }

    /// `listings` new chrono24 listings of the reference 999999, which no model has yet.
    fn unmatched_snapshot(context: &JobContext, listings: usize) {
        let snapshot: Vec<String> = (0..listings)
            .map(|i| {
                format!(
                    r#"{{"sourceId":"x-{i}","url":"https://example.com/{i}","title":"Rolex Submariner 999999","brand":"Rolex","reference":"999999","price":{},"currency":"USD"}}"#,
                    1000 + i
                )
            })
            .collect();
        let snapshot = snapshot.join("\n");
        context
            .writer()
            .run(|turn| {
                let rules = SnapshotRules::default();
                ingest::ingest(turn, "chrono24", "new", snapshot.as_bytes(), &rules)
            })
            .expect("ingest");
    }

    /// Adds the Rolex Submariner 999999: `match` then links the listings of
    /// [`unmatched_snapshot`].
    fn add_model_999999(context: &JobContext, dir: &Path) {
        let dataset = dir.join("dataset");
        std::fs::create_dir_all(&dataset).expect("dir");
        std::fs::write(
            dataset.join("models.jsonl"),
            r#"{"slug":"sub-999999","brand":"rolex","series":"submariner","name":"Submariner 999999","referenceNumber":"999999"}"#,
        )
        .expect("write");
        let source = DirectorySource(dataset);
        context
            .writer()
            .run(|turn| import(turn, &source))
            .expect("import");
    }

    /// The listings matched to a model.
    fn matched(store: &Store) -> usize {
        store
            .listings()
            .all_listings()
            .filter(|l| l.as_ref().expect("listing").model_id.is_some())
            .count()
    }

    #[test]
    fn a_match_stopped_between_chunks_leaves_its_chunks_whole_says_how_far_it_got_and_completes_when_run_again(
    ) {
        let dir = tempfile::tempdir().expect("dir");
        let context = context(dir.path());
        unmatched_snapshot(&context, 30);
        add_model_999999(&context, dir.path());
        let store = context.store();
        let before = matched(store);
        let error =
            run(&context, &Batch::Match, &stopped_after_one_chunk_of(7)).expect_err("stopped");
        assert!(error.is_interrupted(), "{error}");
        assert!(
            error.to_string().contains("after 7 of 30 listings"),
            "{error}"
        );
        assert_eq!(matched(store), before + 7, "one chunk committed, whole");
        let (made, kept) = crate::jobs::listing_writes::counts(store);
        assert_eq!(
            kept, made,
            "the stopped match wrote the counts of its chunk"
        );
        assert!(!store.listings().listing_counts_held().expect("mark"));
        assert!(reindex::listings_are_current(store, context.listings()).expect("current"));
        run(&context, &Batch::Match, &JobControl::default()).expect("again");
        assert_eq!(matched(store), before + 30);
        let (made, kept) = crate::jobs::listing_writes::counts(store);
        assert_eq!(kept, made);
    }

    /// Every pair, each way it is stored.
    fn pairs_both_ways(store: &Store) -> Vec<(ModelId, ModelId)> {
        let mut found = Vec::new();
        for pair in store.duplicates().duplicate_pairs().expect("pairs") {
            let back = store
                .duplicates()
                .duplicate_pairs_of(pair.b)
                .expect("pairs");
            assert!(
                back.iter()
                    .any(|p| p.a.min(p.b) == pair.a && p.a.max(p.b) == pair.b),
                "{pair:?} is stored both ways"
            );
            assert!(store.catalogue().has_model(pair.a).expect("read"));
            assert!(store.catalogue().has_model(pair.b).expect("read"));
            found.push((pair.a, pair.b));
        }
        found
    }

    #[test]
    fn a_duplicate_pass_stopped_between_chunks_leaves_whole_pairs_says_how_far_it_got_and_completes_when_run_again(
    ) {
        let dir = tempfile::tempdir().expect("dir");
        let context = context(dir.path());
        let store = context.store();
        run(&context, &Batch::Duplicates, &JobControl::default()).expect("full pass");
        let kept = pairs_both_ways(store);
        assert!(!kept.is_empty(), "the fixtures have duplicate pairs");
        // Every pair forgotten: a pass finds them again, chunk by chunk.
        let turn = store.write_turn();
        let mut batch = turn.batch().expect("batch");
        for pair in store.duplicates().duplicate_pairs().expect("pairs") {
            batch.replace_duplicate_pairs(pair.a, &[pair], &[] as &[DuplicatePair]);
        }
        turn.commit_derived(batch).expect("forget");
        drop(turn);
        assert!(pairs_both_ways(store).is_empty());
        let first_chunk: Vec<ModelId> = store
            .catalogue()
            .model_ids()
            .expect("ids")
            .into_iter()
            .take(10)
            .collect();
        let models = store.catalogue().model_ids().expect("ids").len();
        let error = run(
            &context,
            &Batch::Duplicates,
            &stopped_after_one_chunk_of(10),
        )
        .expect_err("stopped");
        assert!(error.is_interrupted(), "{error}");
        assert!(
            error
                .to_string()
                .contains(&format!("after 10 of {models} models paired")),
            "{error}"
        );
        let found = pairs_both_ways(store);
        let of_the_chunk: Vec<(ModelId, ModelId)> = kept
            .iter()
            .copied()
            .filter(|(a, _)| first_chunk.contains(a))
            .collect();
        assert_eq!(found, of_the_chunk, "the pairs of the first chunk's models");
        run(&context, &Batch::Duplicates, &JobControl::default()).expect("again");
        assert_eq!(pairs_both_ways(store), kept);
    }

    #[test]
    fn a_reindex_stopped_commits_nothing_and_leaves_the_indexes_as_they_were() {
        let dir = tempfile::tempdir().expect("dir");
        let context = context(dir.path());
        unmatched_snapshot(&context, 30);
        let index = context.listings();
        let before = (index.generation().expect("generation"), index.len());
        let control = JobControl::default();
        control.stop();
        let error =
            run(&context, &Batch::Reindex(IndexChoice::All), &control).expect_err("stopped");
        assert!(error.is_interrupted(), "{error}");
        assert_eq!(
            (index.generation().expect("generation"), index.len()),
            before
        );
        assert!(reindex::listings_are_current(context.store(), index).expect("current"));
    }

    /// A snapshot job reads its file before it takes the write turn, so a person's write does
    /// not wait for the reading of a large file (D-225). The file is a pipe the test fills in
    /// two halves, taking the write turn in between.
    #[cfg(unix)]
    /// Runs `batch` while the test holds the write turn; true when the job, once it waits for
    /// the turn, has a watch open: it did its reading first (D-226, D-230). A job that read
    /// inside its turn opens its watch only once it has the turn.
    fn read_before_the_turn(context: &JobContext, batch: Batch) -> bool {
        let store = context.store();
        let turn = store.write_turn();
        let read_first = std::thread::scope(|scope| {
            let job = scope.spawn(|| run(context, &batch, &JobControl::default()).map(|_| ()));
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            let read_first = loop {
                let (waiting, watching) = store.waiting_and_watching();
                if waiting > 0 || std::time::Instant::now() > deadline {
                    break waiting > 0 && watching > 0;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            };
            drop(turn);
            job.join().expect("job").expect("the job succeeds");
            read_first
        });
        read_first
    }

    #[test]
    fn a_match_and_a_duplicate_pass_job_read_before_they_take_the_write_turn() {
        let dir = tempfile::tempdir().expect("dir");
        let context = context(dir.path());
        assert!(read_before_the_turn(&context, Batch::Match), "match");
        assert!(
            read_before_the_turn(&context, Batch::Duplicates),
            "duplicates"
        );
    }

    #[test]
    fn a_snapshot_job_reads_its_file_before_it_takes_the_write_turn() {
        use std::io::Write;
        let dir = tempfile::tempdir().expect("dir");
        let context = std::sync::Arc::new(context(dir.path()));
        let fifo = dir.path().join("chrono24.fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.expect("mkfifo").success());
        let feed = include_str!("../../fixtures/listings/chrono24.jsonl");
        let (first, rest) = feed.split_at(feed.len() / 2);
        let batch = Batch::Snapshot {
            provider: "chrono24".to_owned(),
            file: fifo.clone(),
            name: "chrono24.jsonl".to_owned(),
            rules: SnapshotRules::default(),
        };
        let job = std::thread::spawn({
            let context = context.clone();
            move || run(&context, &batch, &JobControl::default()).map(|report| report.summary)
        });
        // Opened once the job opens it to read; the job then waits for the rest of its lines.
        let mut pipe = std::fs::OpenOptions::new()
            .write(true)
            .open(&fifo)
            .expect("pipe");
        pipe.write_all(first.as_bytes()).expect("first half");
        let (taken, turn_was_taken) = std::sync::mpsc::channel();
        std::thread::spawn({
            let context = context.clone();
            move || {
                let _turn = context.store().write_turn();
                let _ = taken.send(());
            }
        });
        let free = turn_was_taken
            .recv_timeout(std::time::Duration::from_secs(10))
            .is_ok();
        pipe.write_all(rest.as_bytes()).expect("second half");
        drop(pipe);
        let summary = job.join().expect("job").expect("ingest");
        assert!(free, "the job held the write turn while it read its file");
        let lines = feed.lines().filter(|l| !l.trim().is_empty()).count();
        assert!(summary.contains(&format!("{lines} created")), "{summary}");
    }
}
