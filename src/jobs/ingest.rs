//! `watch-catalogue ingest --provider SLUG FILE`: FILE is the provider's full current snapshot
//! (one JSON object per line). Listings in it are created or refreshed, listings of the provider
//! missing from it become DELISTED (record and history kept), DELISTED ones that reappear are
//! reactivated. New and changed listings are matched. Bad lines are reported and skipped; a
//! snapshot that is empty, half invalid or would delist too much of the provider's stock is
//! refused whole, before anything is written (`snapshot_rules`), so a broken feed or another
//! provider's file never delists a provider's stock. The write is committed in chunks, the
//! listing counts with the last, and delisting comes last: a crash part-way leaves no listing
//! wrongly delisted, and running the same snapshot again completes it (docs/decisions.md, D-28,
//! D-15).

use super::import::rows::field_named;
use super::import::{DatasetSource, Problem};
use super::listing_writes::{ListingWrites, WrittenListings};
use super::loaded_catalogue::{CatalogueBeforeTheTurn, JobCatalogue};
use super::matching::{match_listing, MatchCatalogue};
use super::progress::{JobControl, Stopped};
use super::snapshot_rules::{
    check_lines, check_observed_at, Problems, Refusal, SnapshotRules, StockEffect,
};
use super::users::audit_entry;
use crate::domain::rates::check_currency;
use crate::domain::{
    Availability, Condition, Listing, ListingDetails, ListingId, ListingPicture, ListingStatus,
    Match, PictureId, Provider, ProviderId, Slug, StatusChange, Timestamp,
};
use crate::store::{RecordKind, Store, StoreError, WriteTurn};
use rayon::prelude::*;
use serde::Deserialize;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::io::BufRead;

pub use super::snapshot_rules::DEFAULT_MAX_INVALID;

/// One line of a provider snapshot.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FeedRow {
    source_id: String,
    url: String,
    title: Option<String>,
    brand: Option<String>,
    reference: Option<String>,
    price: Option<u64>,
    currency: Option<String>,
    year: Option<i32>,
    condition: Option<String>,
    availability: Option<String>,
    status: Option<String>,
    country_code: Option<String>,
    country: Option<String>,
    city: Option<String>,
    state: Option<String>,
    box_available: Option<bool>,
    papers_available: Option<bool>,
    #[serde(default)]
    pictures: Vec<String>,
}

/// Why an ingest wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("no provider with slug `{0}` (providers come from a dataset's providers.jsonl)")]
    UnknownProvider(String),
    /// Refused before anything was written, with the problems of its lines.
    #[error("{refusal}; nothing was written ({})", refusal.advice())]
    Refused {
        refusal: Refusal,
        problems: Box<Problems>,
    },
    #[error("{file}: {error}")]
    Feed {
        file: String,
        error: Box<IngestError>,
    },
    /// Stopped between two chunks (SIGTERM): delisting comes last, so no listing the
    /// snapshot holds was delisted.
    #[error(
        "{0}; no listing was delisted wrongly, and submitting the snapshot again completes it"
    )]
    Interrupted(Stopped),
    #[error("reading the snapshot")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What an ingest did.
pub struct IngestReport {
    pub created: usize,
    pub refreshed: usize,
    pub reactivated: usize,
    pub delisted: usize,
    pub matched: usize,
    pub unmatched: usize,
    /// Lines reported and skipped.
    pub skipped: Problems,
    /// What the stock guard would have refused, when its override let the snapshot through.
    pub overridden: Option<Refusal>,
    /// What the write of every listing created or changed committed.
    pub written: WrittenListings,
}

/// Counts of what an ingest did, gathered before the write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    created: usize,
    refreshed: usize,
    reactivated: usize,
    delisted: usize,
    matched: usize,
    unmatched: usize,
}

/// Ingests `snapshot` (named `name` in problem reports) as the full current stock of the
/// provider `provider_slug`.
pub fn ingest(
    turn: &WriteTurn<'_>,
    provider_slug: &str,
    name: &str,
    snapshot: impl BufRead,
    rules: &SnapshotRules,
) -> Result<IngestReport, IngestError> {
    ingest_controlled(
        turn,
        provider_slug,
        name,
        snapshot,
        rules,
        &JobControl::default(),
    )
}

/// [`ingest`], counting committed listings into `control` and stopping at the first chunk
/// boundary after `control` is told to stop (nothing is delisted then).
pub fn ingest_controlled(
    turn: &WriteTurn<'_>,
    provider_slug: &str,
    name: &str,
    snapshot: impl BufRead,
    rules: &SnapshotRules,
    control: &JobControl,
) -> Result<IngestReport, IngestError> {
    // An unknown provider is said before a long file is read.
    provider(turn.store(), provider_slug)?;
    let snapshot = ReadSnapshot::of(name, snapshot)?;
    let ready = ReadyToWrite::of(turn.store(), provider_slug, snapshot, rules)?;
    ingest_ready(turn, ready, rules, control)
}

/// A snapshot read and parsed, before the write turn it is ingested in: its valid rows in the
/// snapshot's order, and what the reading found.
pub struct ReadSnapshot {
    rows: Vec<FeedRow>,
    read: SnapshotRead,
}

impl ReadSnapshot {
    /// Reads `snapshot` (named `name` in problem reports) whole: it writes nothing, and a job
    /// does it before it takes the write turn, so a person's write does not wait for the
    /// reading of a large file (D-225).
    pub fn of(name: &str, snapshot: impl BufRead) -> Result<ReadSnapshot, IngestError> {
        let mut rows = Vec::new();
        let read = read_snapshot(name, snapshot, |row| rows.push(row))?;
        Ok(ReadSnapshot { rows, read })
    }
}

/// A snapshot ready for its write: read, checked against its provider's stock, and with the
/// catalogue its lines are matched against, none of which writes. A job makes it before it
/// takes the write turn (D-225); the writes committed from the checks on are gathered, for the
/// catalogue to learn them once the turn is taken. The checks need no update: only an ingest
/// changes a listing's code or status, and jobs run one at a time.
pub struct ReadyToWrite<'s> {
    provider: Provider,
    rows: Vec<FeedRow>,
    checked: Checked<'s>,
    catalogue: CatalogueBeforeTheTurn<'s>,
}

impl<'s> ReadyToWrite<'s> {
    /// Checks `snapshot` as the full stock of `provider_slug` and loads the catalogue for it;
    /// refused as [`ingest`] refuses it.
    pub fn of(
        store: &'s Store,
        provider_slug: &str,
        snapshot: ReadSnapshot,
        rules: &SnapshotRules,
    ) -> Result<ReadyToWrite<'s>, IngestError> {
        let provider = provider(store, provider_slug)?;
        let ReadSnapshot { rows, read } = snapshot;
        // What a line needs to know, read once for the job rather than once per line: the
        // provider's listings by their code (read by the checks), and (for a large snapshot)
        // the catalogue.
        let checked = Checked::of(store, &provider, rows.len(), read, rules)?;
        let catalogue = CatalogueBeforeTheTurn::for_listings(store, rows.len())?;
        Ok(ReadyToWrite {
            provider,
            rows,
            checked,
            catalogue,
        })
    }
}

/// [`ingest_controlled`] of a snapshot made ready before the turn.
pub fn ingest_ready(
    turn: &WriteTurn<'_>,
    ready: ReadyToWrite<'_>,
    rules: &SnapshotRules,
    control: &JobControl,
) -> Result<IngestReport, IngestError> {
    let writes = match control.pacing().chunk_listings {
        Some(chunk) => ListingWrites::in_chunks_of(turn, chunk)?,
        None => ListingWrites::new(turn)?,
    };
    ingest_with(writes, ready, rules, control)
}

/// The provider of `slug`, if there is one.
pub fn provider(store: &Store, slug: &str) -> Result<Provider, IngestError> {
    Slug::parse(slug)
        .ok()
        .map(|slug| store.listings().provider_by_slug(&slug))
        .transpose()?
        .flatten()
        .ok_or_else(|| IngestError::UnknownProvider(slug.to_owned()))
}

/// Reads `snapshot` as [`ingest`] would and refuses it as it would (empty, half invalid,
/// delisting too much of `provider_slug`'s stock), writing nothing and keeping no row: a
/// server checks a posted snapshot before queueing it. The problems of the lines that would be
/// skipped.
pub fn check_snapshot(
    store: &Store,
    provider_slug: &str,
    name: &str,
    snapshot: impl BufRead,
    rules: &SnapshotRules,
) -> Result<Problems, IngestError> {
    let provider = provider(store, provider_slug)?;
    let mut valid = 0usize;
    let read = read_snapshot(name, snapshot, |_| valid += 1)?;
    Ok(Checked::of(store, &provider, valid, read, rules)?.problems)
}

/// A snapshot that passed every check, with what they found: the problems of its lines, the
/// provider's listings and what the snapshot would do to their stock
/// (with the refusal an override let through, if any).
struct Checked<'a> {
    problems: Problems,
    known: KnownListings<'a>,
    effect: StockEffect,
    overridden: Option<Refusal>,
}

impl<'a> Checked<'a> {
    /// Checks `read`, `valid` of whose lines are rows, against `rules` and the stock of
    /// `provider`: refused when it is empty, half invalid, or the stock guard refuses it.
    fn of(
        store: &'a Store,
        provider: &Provider,
        valid: usize,
        read: SnapshotRead,
        rules: &SnapshotRules,
    ) -> Result<Checked<'a>, IngestError> {
        let SnapshotRead {
            problems,
            lines,
            codes: seen,
        } = read;
        if let Err(refusal) = check_lines(valid, &problems, lines, rules.max_invalid) {
            return Err(refused(refusal, problems));
        }
        let known = KnownListings::of(store, provider.id)?;
        if let Some(observed_at) = rules.observed_at {
            let slug = provider.slug.as_str();
            let dated = check_observed_at(store, slug, &known.ids, observed_at, Timestamp::now())?;
            if let Err(refusal) = dated {
                return Err(refused(refusal, problems));
            }
        }
        let effect = StockEffect::of(store, &known.ids, &seen, rules.max_delist)?;
        match effect.judge(provider.slug.as_str(), rules) {
            Ok(overridden) => Ok(Checked {
                problems,
                known,
                effect,
                overridden,
            }),
            Err(refusal) => Err(refused(refusal, problems)),
        }
    }
}

fn refused(refusal: Refusal, problems: Problems) -> IngestError {
    IngestError::Refused {
        refusal,
        problems: Box::new(problems),
    }
}

/// [`ingest`] through `writes`, which sets the chunk size.
fn ingest_with(
    writes: ListingWrites<'_>,
    ready: ReadyToWrite<'_>,
    rules: &SnapshotRules,
    control: &JobControl,
) -> Result<IngestReport, IngestError> {
    let store = writes.turn().store();
    let ReadyToWrite {
        provider,
        rows,
        checked,
        catalogue,
    } = ready;
    let Checked {
        problems,
        known,
        effect,
        overridden,
    } = checked;
    // With what people wrote since the checks (a link, a model made, a merge); the lines are
    // read from the store in the turn.
    let (mut catalogue, _) = catalogue.in_the_turn()?;
    // After what the job did before (an import's earlier snapshots), this snapshot's lines.
    let (done_before, _) = control.progress();
    control.set_total(done_before + rows.len() as u64);
    let mut rows = rows.into_iter();
    // Each chunk's size asked again: it shrinks while a person is at work beside the job.
    let mut next_chunk = |size: usize| -> Vec<FeedRow> { rows.by_ref().take(size).collect() };
    let mut run = Run {
        store,
        provider,
        writes,
        now: rules.observed_at.unwrap_or_else(Timestamp::now),
        tally: Tally::default(),
    };
    let mut prepared = prepare(&known, &catalogue, next_chunk(run.writes.chunk()))?;
    loop {
        let pending = prepared.len() as u64;
        for line in prepared {
            run.upsert(line)?;
        }
        let chunk = next_chunk(run.writes.chunk());
        if chunk.is_empty() {
            break;
        }
        // The next chunk is read and matched while this one commits.
        prepared = run
            .writes
            .commit_chunk_while(|| prepare(&known, &catalogue, chunk))??;
        control.advance(pending);
        // Between chunks, before the delistings: a stop leaves no listing wrongly delisted.
        let boundary = run.writes.between_chunks(control)?;
        if boundary.stop {
            return Err(IngestError::Interrupted(Stopped::at(control, "listings")));
        }
        if let Some(others) = boundary.others {
            // What the next chunk read, and the catalogue it was matched against, may have
            // changed meanwhile (a person's link, a merge): read and matched again.
            catalogue.others_wrote(&others)?;
            prepared = prepared
                .into_par_iter()
                .map(|line| line.again(&known, catalogue.get()))
                .collect::<Result<_, _>>()?;
        }
    }
    // The last chunk commits with the delistings: a snapshot within one chunk is one write.
    run.delist(&effect.to_delist, control)?;
    if let (Some(refusal), Some(actor)) = (&overridden, &rules.mass_delist_allowed_by) {
        let targets = vec![format!("provider:{}", run.provider.slug)];
        let detail = format!("stock guard overridden: {refusal}");
        let entry = audit_entry(store, actor, "ingest.allow_mass_delist", targets, detail)?;
        run.writes.batch().put_audit(&entry);
    }
    let Run { writes, tally, .. } = run;
    let written = writes.commit()?;
    let (done, total) = control.progress();
    control.advance(total.saturating_sub(done));
    Ok(IngestReport {
        created: tally.created,
        refreshed: tally.refreshed,
        reactivated: tally.reactivated,
        delisted: tally.delisted,
        matched: tally.matched,
        unmatched: tally.unmatched,
        skipped: problems,
        overridden,
        written,
    })
}

/// One snapshot line with what the store knows of it and, when new or changed, its match.
struct Prepared {
    code: String,
    target: ListingStatus,
    sources: Vec<String>,
    details: ListingDetails,
    existing: Option<Listing>,
    /// `None` when the details are unchanged, or a person's link stands: the listing keeps its
    /// match.
    found: Option<Match>,
}

/// The provider's listings as (its code, our id), read from the source keys once per job:
/// a line's listing is then one read by id, and a new line none.
struct KnownListings<'a> {
    store: &'a Store,
    ids: HashMap<String, ListingId>,
}

impl<'a> KnownListings<'a> {
    fn of(store: &'a Store, provider: ProviderId) -> Result<KnownListings<'a>, StoreError> {
        let ids = store
            .listings()
            .listing_codes_of_provider(provider)?
            .into_iter()
            .collect();
        Ok(KnownListings { store, ids })
    }

    /// The provider's listing with code `code`, as
    /// [`Listings::listing_by_source`](crate::store::Listings::listing_by_source) reads it.
    fn listing(&self, code: &str) -> Result<Option<Listing>, StoreError> {
        match self.ids.get(code) {
            Some(&id) => self.store.listings().listing(id),
            None => Ok(None),
        }
    }
}

/// Reads what is known of each row of `chunk` and matches what changed, independently per
/// line: on all cores.
fn prepare(
    known: &KnownListings<'_>,
    catalogue: &JobCatalogue<'_>,
    chunk: Vec<FeedRow>,
) -> Result<Vec<Prepared>, StoreError> {
    chunk
        .into_par_iter()
        .map(|row| Prepared::read(known, catalogue.get(), row))
        .collect()
}

impl Prepared {
    fn read(
        known: &KnownListings<'_>,
        catalogue: &dyn MatchCatalogue,
        row: FeedRow,
    ) -> Result<Prepared, StoreError> {
        let target = if row.status.as_deref() == Some("RESERVED") {
            ListingStatus::Reserved
        } else {
            ListingStatus::Active
        };
        let line = Prepared {
            sources: row.pictures.clone(),
            code: row.source_id.clone(),
            target,
            details: details_of(row),
            existing: None,
            found: None,
        };
        line.again(known, catalogue)
    }

    /// The line with its listing read (again) from the store, and matched (again) when new or
    /// changed.
    fn again(
        self,
        known: &KnownListings<'_>,
        catalogue: &dyn MatchCatalogue,
    ) -> Result<Prepared, StoreError> {
        let existing = known.listing(&self.code)?;
        // A person's link stands while the seller's claim does, whatever else changed.
        let rematch = existing
            .as_ref()
            .is_none_or(|old| old.details != self.details && !old.keeps_link(&self.details));
        let found = rematch
            .then(|| match_listing(catalogue, &self.details))
            .transpose()?;
        Ok(Prepared {
            existing,
            found,
            ..self
        })
    }
}

/// Ingests the snapshots a dataset carries (`listings/SLUG.jsonl`, one per provider), each as
/// its own write, in provider slug order. Returns what each did, by provider slug.
pub fn ingest_dataset_feeds(
    turn: &WriteTurn<'_>,
    source: &dyn DatasetSource,
    rules: &SnapshotRules,
) -> Result<Vec<(String, IngestReport)>, IngestError> {
    ingest_dataset_feeds_controlled(turn, source, rules, &JobControl::default())
}

/// [`ingest_dataset_feeds`], each snapshot counted into `control` and stopped at a chunk
/// boundary once it is told to.
pub fn ingest_dataset_feeds_controlled(
    turn: &WriteTurn<'_>,
    source: &dyn DatasetSource,
    rules: &SnapshotRules,
    control: &JobControl,
) -> Result<Vec<(String, IngestReport)>, IngestError> {
    let mut slugs: Vec<String> = turn
        .store()
        .listings()
        .providers()
        .map(|p| p.map(|p| p.slug.to_string()))
        .collect::<Result<_, _>>()?;
    slugs.sort();
    let mut reports = Vec::new();
    for slug in slugs {
        let file = format!("listings/{slug}.jsonl");
        if let Some(snapshot) = source.open(&file)? {
            let report = ingest_controlled(turn, &slug, &file, snapshot, rules, control).map_err(
                |error| IngestError::Feed {
                    file,
                    error: Box::new(error),
                },
            )?;
            reports.push((slug, report));
        }
    }
    Ok(reports)
}

/// Lines parsed side by side at a time: enough to keep every core busy, few enough that a
/// block's text is a few megabytes.
const PARSE_BLOCK: usize = 16_384;

/// What reading a snapshot found besides its valid rows.
struct SnapshotRead {
    problems: Problems,
    /// Non-blank lines.
    lines: usize,
    /// The code (`sourceId`) of each valid row, with its line.
    codes: HashMap<String, usize>,
}

/// Hands each valid row to `keep`, in the snapshot's order, and says what else it found. Lines
/// are parsed and checked on all cores a block at a time (on one core, parsing was a large
/// share of a big ingest's time: docs/decisions.md, D-28). Three
/// blocks are in hand at once: while the pool parses one, this thread takes in the rows of the
/// one before (only the check for a code seen before runs in order) and reads the lines of the
/// one after; done one after the other, they left a core idle.
fn read_snapshot(
    name: &str,
    snapshot: impl BufRead,
    mut keep: impl FnMut(FeedRow),
) -> Result<SnapshotRead, IngestError> {
    let started = std::time::Instant::now();
    let mut read = SnapshotRead {
        problems: Problems::default(),
        lines: 0,
        codes: HashMap::new(),
    };
    let mut lines = snapshot.lines().enumerate();
    let mut parsed = parse_block(name, next_block(&mut lines)?);
    let mut block = next_block(&mut lines)?;
    while !parsed.is_empty() {
        let mut next = Vec::new();
        // `in_place_scope`: the reading stays on this thread, so the snapshot need not be `Send`.
        let after = rayon::in_place_scope(|scope| {
            scope.spawn(|_| next = parse_block(name, block));
            read.take(name, parsed, &mut keep);
            next_block(&mut lines)
        });
        parsed = next;
        block = after?;
    }
    tracing::debug!(lines = read.lines, took = ?started.elapsed(), "snapshot read");
    Ok(read)
}

impl SnapshotRead {
    /// Takes in a block's parsed lines, in order: each valid row whose code was not seen before
    /// goes to `keep`; every other line is a problem.
    fn take(
        &mut self,
        name: &str,
        parsed: Vec<(usize, Result<FeedRow, Problem>)>,
        keep: &mut impl FnMut(FeedRow),
    ) {
        self.lines += parsed.len();
        for (number, row) in parsed {
            let row = row.and_then(|row| match self.codes.entry(row.source_id.clone()) {
                Entry::Occupied(first) => Err(problem(
                    name,
                    number,
                    Some("sourceId"),
                    format!(
                        "`{}` appears twice (first on line {})",
                        row.source_id,
                        first.get()
                    ),
                )),
                Entry::Vacant(code) => {
                    code.insert(number);
                    Ok(row)
                }
            });
            match row {
                Ok(row) => keep(row),
                Err(problem) => self.problems.push(problem),
            }
        }
    }
}

/// Each line of `block` as a row or the problem that refuses it, on all cores.
fn parse_block(name: &str, block: Vec<(usize, String)>) -> Vec<(usize, Result<FeedRow, Problem>)> {
    block
        .into_par_iter()
        .map(|(number, line)| (number, parse_line(name, number, &line)))
        .collect()
}

/// The next [`PARSE_BLOCK`] non-blank lines, each with its line number (from 1).
fn next_block(
    lines: &mut impl Iterator<Item = (usize, std::io::Result<String>)>,
) -> Result<Vec<(usize, String)>, IngestError> {
    let mut block = Vec::with_capacity(PARSE_BLOCK);
    for (index, line) in lines.by_ref() {
        let line = line?;
        if !line.trim().is_empty() {
            block.push((index + 1, line));
            if block.len() == PARSE_BLOCK {
                break;
            }
        }
    }
    Ok(block)
}

/// Line `number` as a row, or the problem that refuses it (anything but a repeated code).
fn parse_line(name: &str, number: usize, line: &str) -> Result<FeedRow, Problem> {
    let row = read_row(line)
        .map_err(|(field, message)| problem(name, number, field.as_deref(), message))?;
    let invalid = if row.source_id.trim().is_empty() {
        Some(("sourceId", "must not be empty".to_owned()))
    } else if row.url.trim().is_empty() {
        Some(("url", "must not be empty".to_owned()))
    } else if let Some(Err(e)) = row.currency.as_deref().map(check_currency) {
        Some(("currency", e.to_string()))
    } else if !matches!(
        row.status.as_deref(),
        None | Some("ACTIVE") | Some("RESERVED")
    ) {
        Some(("status", "is ACTIVE or RESERVED when given".to_owned()))
    } else {
        None
    };
    match invalid {
        Some((field, message)) => Err(problem(name, number, Some(field), message)),
        None => Ok(row),
    }
}

/// What a line that is not a JSON object is told: a CSV, a JSON array or text given for a
/// snapshot fails on its first line with this, not with a parser's message.
const NOT_AN_OBJECT: &str = "is not a JSON object: a snapshot is JSON Lines, one listing object \
     per line (docs/dataset-format.md); a CSV file, a JSON array or plain text is not";

/// A line's row: one JSON object and nothing after it but whitespace (a second object glued to
/// the first is refused, not dropped). On failure, the field at fault when there is one, and
/// serde's message. Only a failing line is read again with its path tracked, to name the field.
fn read_row(line: &str) -> Result<FeedRow, (Option<String>, String)> {
    if !line.trim_start().starts_with('{') {
        return Err((None, NOT_AN_OBJECT.to_owned()));
    }
    let mut json = serde_json::Deserializer::from_str(line);
    let row = match FeedRow::deserialize(&mut json) {
        Ok(row) => row,
        Err(_) => serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(line))
            .map_err(|e| {
            let message = e.inner().to_string();
            (field_named(&e.path().to_string(), &message), message)
        })?,
    };
    json.end().map_err(|e| (None, e.to_string()))?;
    Ok(row)
}

fn problem(name: &str, line: usize, field: Option<&str>, message: String) -> Problem {
    Problem {
        file: name.to_owned(),
        line,
        field: field.map(str::to_owned),
        message,
    }
}

struct Run<'a> {
    store: &'a Store,
    provider: Provider,
    writes: ListingWrites<'a>,
    now: Timestamp,
    tally: Tally,
}

impl Run<'_> {
    fn upsert(&mut self, line: Prepared) -> Result<(), IngestError> {
        let Prepared {
            code,
            target,
            sources,
            details,
            existing,
            found,
        } = line;
        let mut listing = match &existing {
            Some(old) => {
                let mut listing = old.clone();
                if listing.details != details {
                    listing.details = details;
                    listing.updated_at = self.now;
                }
                if old.status == ListingStatus::Delisted {
                    self.tally.reactivated += 1;
                } else {
                    self.tally.refreshed += 1;
                }
                if old.status != target {
                    listing.updated_at = self.now;
                }
                listing.set_status(target, self.now);
                listing
            }
            None => {
                self.tally.created += 1;
                Listing {
                    id: ListingId(self.writes.batch().allocate_id(RecordKind::Listing)?),
                    provider_id: self.provider.id,
                    provider_code: code,
                    details,
                    pictures: Vec::new(),
                    status: target,
                    history: vec![StatusChange {
                        status: target,
                        at: self.now,
                    }],
                    brand_id: None,
                    model_id: None,
                    matching: crate::domain::MatchOutcome::UnknownBrand,
                    last_seen_at: self.now,
                    delisted_at: None,
                    reserved_at: (target == ListingStatus::Reserved).then_some(self.now),
                    created_at: self.now,
                    updated_at: self.now,
                }
            }
        };
        if let Some(found) = found {
            listing.apply_match(found);
            match found.model_id {
                Some(_) => self.tally.matched += 1,
                None => self.tally.unmatched += 1,
            }
        }
        listing.last_seen_at = self.now;
        listing.pictures = self.pictures(&sources, existing.as_ref())?;
        self.writes.put(existing.as_ref(), listing);
        Ok(())
    }

    /// A new picture's id, pending in the same write: the image worker finds it there. Queued
    /// in a group with the pictures around it, a fraction of a key (`WriteBatch::queue_picture`).
    fn new_picture(&mut self, source: &str) -> Result<PictureId, IngestError> {
        Ok(self
            .writes
            .batch()
            .queue_picture(source.to_owned(), self.now)?)
    }

    /// Pictures in the snapshot's order, keeping the ids of those already known by source URL.
    fn pictures(
        &mut self,
        sources: &[String],
        existing: Option<&Listing>,
    ) -> Result<Vec<ListingPicture>, IngestError> {
        let mut pictures = Vec::with_capacity(sources.len());
        for source in sources.iter().filter(|s| !s.trim().is_empty()) {
            let known = existing
                .and_then(|l| l.pictures.iter().find(|p| &p.source_url == source))
                .map(|p| p.id);
            let id = match known {
                Some(id) => id,
                None => self.new_picture(source)?,
            };
            pictures.push(ListingPicture {
                id,
                source_url: source.clone(),
            });
        }
        Ok(pictures)
    }

    /// Delists `ids`, the listings in stock the snapshot left out (`StockEffect::to_delist`,
    /// in code order). Listings this snapshot created are in it, so the codes known before it
    /// are all there are. Each is read as it is delisted: what others wrote between two
    /// chunks is kept. A stop between chunks leaves the rest in stock, where running the
    /// snapshot again delists them.
    fn delist(&mut self, ids: &[ListingId], control: &JobControl) -> Result<(), IngestError> {
        for &id in ids {
            let Some(old) = self.store.listings().listing(id)? else {
                continue;
            };
            if old.status == ListingStatus::Delisted {
                continue;
            }
            let mut listing = old.clone();
            listing.set_status(ListingStatus::Delisted, self.now);
            listing.updated_at = self.now;
            self.tally.delisted += 1;
            self.writes.put(Some(&old), listing);
            if self.writes.commit_if_full()? && self.writes.between_chunks(control)?.stop {
                return Err(IngestError::Interrupted(Stopped::at(control, "listings")));
            }
        }
        Ok(())
    }
}

/// The seller's fields, verbatim where they are text; condition and availability mapped onto
/// our scales, or null when they cannot be.
fn details_of(row: FeedRow) -> ListingDetails {
    ListingDetails {
        url: row.url,
        title: row.title,
        scraped_brand: row.brand,
        scraped_reference: row.reference,
        price: row.price,
        currency: row.currency,
        year: row.year,
        condition: row.condition.as_deref().and_then(Condition::from_seller),
        availability: row
            .availability
            .as_deref()
            .and_then(Availability::from_seller),
        reserved: row.status.as_deref() == Some("RESERVED"),
        country_code: row.country_code,
        country: row.country,
        city: row.city,
        state: row.state,
        box_available: row.box_available,
        papers_available: row.papers_available,
    }
}

/// A store holding the bundled catalogue and its provider feeds ingested: the listings the
/// matching tests decide again.
#[cfg(test)]
pub(crate) fn fixture_store_with_feeds(dir: &std::path::Path) -> Store {
    use crate::jobs::import::fixtures::EmbeddedFixtures;
    let store = Store::open(dir, 1 << 22).expect("store");
    let turn = store.write_turn();
    crate::jobs::import::fixtures::import_fixtures(&turn, dir);
    ingest_dataset_feeds(&turn, &EmbeddedFixtures, &SnapshotRules::default()).expect("feeds");
    drop(turn);
    store
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_is_no_json_object_says_a_snapshot_is_json_lines() {
        for line in [
            "sourceId,url,title,price",
            "c-1,https://www.chrono24.com/1,Rolex 16610,9500",
            "[{\"sourceId\": \"1\"}]",
            "42",
        ] {
            let Err((field, message)) = read_row(line) else {
                panic!("{line} was read as a row")
            };
            assert_eq!(field, None, "{line}");
            assert!(
                message.contains("JSON Lines") && !message.contains("FeedRow"),
                "{message}"
            );
        }
        assert!(read_row(r#"  {"sourceId": 1}"#).is_err_and(|(_, m)| !m.contains("JSON Lines")));
    }
    use crate::domain::ModelId;
    use crate::jobs::import::fixtures::EmbeddedFixtures;

    fn fixture_store(dir: &std::path::Path) -> Store {
        let store = Store::open(dir, 1 << 22).expect("store");
        crate::jobs::import::fixtures::import_fixtures(&store.write_turn(), dir);
        store
    }

    fn snapshot(file: &str) -> String {
        EmbeddedFixtures::text(file).expect("bundled").to_owned()
    }

    /// `feed`, read and made ready as chrono24's snapshot.
    fn ready<'s>(
        store: &'s Store,
        name: &str,
        feed: &str,
        rules: &SnapshotRules,
    ) -> ReadyToWrite<'s> {
        let read = ReadSnapshot::of(name, feed.as_bytes()).expect("read");
        ReadyToWrite::of(store, "chrono24", read, rules).expect("ready")
    }

    /// A job makes its snapshot ready before it takes the write turn (D-225): a person's write
    /// in between (here a model given the reference the lines claim) is what its catalogue,
    /// loaded before it, matches against once the turn is taken.
    #[test]
    fn a_write_between_the_checks_and_the_turn_is_matched_against() {
        let dir = tempfile::tempdir().expect("dir");
        let store = fixture_store(dir.path());
        let model = store
            .catalogue()
            .all_models()
            .next()
            .expect("a model")
            .expect("read");
        let brand = store
            .catalogue()
            .brand(model.brand_id)
            .expect("read")
            .expect("brand");
        let feed: Vec<String> = (0..5)
            .map(|i| {
                format!(
                    r#"{{"sourceId":"zz-{i}","url":"https://example.com/zz/{i}","title":"{} ZZ-4242","brand":"{}","reference":"ZZ-4242","price":{},"currency":"EUR"}}"#,
                    brand.name,
                    brand.name,
                    1000 + i
                )
            })
            .collect();
        let rules = SnapshotRules {
            max_delist: 1.0,
            ..SnapshotRules::default()
        };
        let mut ready = ready(&store, "feed", &feed.join("\n"), &rules);
        // As for a large snapshot: the catalogue read into memory, as it stands now.
        ready.catalogue = CatalogueBeforeTheTurn::loaded(&store).expect("load");
        let turn = store.write_turn();
        let mut batch = turn.batch().expect("batch");
        let mut taught = model.clone();
        taught.alternate_references.push("ZZ-4242".into());
        batch.put_model(Some(&model), &taught);
        turn.commit(batch).expect("commit");
        drop(turn);
        let turn = store.write_turn();
        let done = ingest_ready(&turn, ready, &rules, &JobControl::default()).expect("ingest");
        assert_eq!((done.created, done.matched), (5, 5));
        let listing = store
            .listings()
            .listing_by_source(ProviderId(1), "zz-0")
            .expect("read")
            .expect("listing");
        assert_eq!(listing.model_id, Some(model.id));
    }

    /// Listings without their timestamps (each run has its own clock), and every model's count.
    fn contents(store: &Store) -> (Vec<String>, Vec<(ModelId, u64)>) {
        let mut listings: Vec<String> = store
            .listings()
            .all_listings()
            .map(|l| {
                let l = l.expect("listing");
                format!(
                    "{} {} {:?} {:?} {:?} {:?} {:?}",
                    l.id.0,
                    l.provider_code,
                    l.status,
                    l.model_id,
                    l.matching,
                    l.pictures.iter().map(|p| p.id.0).collect::<Vec<_>>(),
                    l.history.iter().map(|h| h.status).collect::<Vec<_>>()
                )
            })
            .collect();
        listings.sort();
        let mut counts: Vec<(ModelId, u64)> = store
            .listings()
            .all_listings()
            .filter_map(|l| l.expect("listing").model_id)
            .map(|m| (m, store.listings().listing_count(m).expect("count")))
            .collect();
        counts.sort();
        counts.dedup();
        (listings, counts)
    }

    #[test]
    fn a_stop_ends_the_ingest_at_a_chunk_boundary_and_running_it_again_completes_it() {
        let feed = snapshot("listings/chrono24.jsonl");
        let lines = feed.lines().filter(|l| !l.trim().is_empty()).count();
        let dir = tempfile::tempdir().expect("dir");
        let store = fixture_store(dir.path());
        let turn = store.write_turn();
        let in_chunks_of_7 = |control: &JobControl| {
            let writes = ListingWrites::in_chunks_of(&turn, 7).expect("writes");
            let rules = SnapshotRules::default();
            ingest_with(
                writes,
                ready(&store, "feed", &feed, &rules),
                &rules,
                control,
            )
        };
        let control = JobControl::default();
        control.stop();
        let stopped = in_chunks_of_7(&control);
        let said = match stopped {
            Err(error @ IngestError::Interrupted(_)) => error.to_string(),
            _ => panic!("not stopped"),
        };
        assert!(
            said.contains(&format!("after 7 of {lines} listings")),
            "{said}"
        );
        assert_eq!(control.progress(), (7, lines as u64), "one chunk committed");
        let control = JobControl::default();
        let done = in_chunks_of_7(&control).expect("again");
        assert_eq!((done.refreshed, done.created), (7, lines - 7));
        assert_eq!(control.progress(), (lines as u64, lines as u64));
    }

    #[test]
    fn a_snapshot_in_small_chunks_writes_what_one_chunk_writes() {
        let feed = snapshot("listings/chrono24.jsonl");
        let revisit = feed.lines().skip(10).collect::<Vec<_>>().join("\n");
        let run = |chunk: usize| {
            let dir = tempfile::tempdir().expect("dir");
            let store = fixture_store(dir.path());
            let before = store.generation().expect("generation").0;
            let turn = store.write_turn();
            let writes = ListingWrites::in_chunks_of(&turn, chunk).expect("writes");
            let rules = SnapshotRules::default();
            let first = ingest_with(
                writes,
                ready(&store, "feed", &feed, &rules),
                &rules,
                &JobControl::default(),
            )
            .expect("ingest");
            let feed_changes = turn.changes();
            drop(turn);
            let turn = store.write_turn();
            let writes = ListingWrites::in_chunks_of(&turn, chunk).expect("writes");
            let second = ingest_with(
                writes,
                ready(&store, "revisit", &revisit, &rules),
                &rules,
                &JobControl::default(),
            )
            .expect("revisit");
            drop(turn);
            (before, first, feed_changes, second, contents(&store))
        };
        let (before, whole, whole_changes, _, expected) = run(usize::MAX);
        assert_eq!(whole.written.commits, 1);
        let (_, chunked, changes, revisit, got) = run(7);
        assert_eq!(got, expected, "same listings, ids, history and counts");

        let rows = whole.created;
        assert!(rows > 7 * 3, "the fixture feed spans several chunks");
        assert_eq!(chunked.written.commits as usize, rows.div_ceil(7));
        assert_eq!(changes.commits, chunked.written.commits);
        assert_eq!(changes.first_generation.0, before + 1);
        assert!(changes.is_contiguous());
        assert_eq!(changes.listings.len(), rows);
        assert_eq!(chunked.written.listings, rows);
        assert_eq!(changes.recounted, whole_changes.recounted);
        // Delisting the ten missing listings comes after the refreshed ones, in chunks too.
        assert_eq!(revisit.delisted, 10);
        assert_eq!(revisit.written.listings, rows);
        assert_eq!(revisit.written.commits as usize, rows.div_ceil(7));
    }

    /// An ingest of `lines` as chrono24's snapshot, in a write turn of its own.
    fn ingest_lines(store: &Store, lines: impl Iterator<Item = String>) -> IngestReport {
        let feed: Vec<String> = lines.collect();
        let turn = store.write_turn();
        let writes = ListingWrites::new(&turn).expect("writes");
        let control = JobControl::default();
        let feed = feed.join("\n");
        let rules = SnapshotRules {
            max_invalid: 0.0,
            max_delist: 1.0,
            ..SnapshotRules::default()
        };
        ingest_with(
            writes,
            ready(store, "feed", &feed, &rules),
            &rules,
            &control,
        )
        .expect("ingest")
    }

    /// A feed line of a new listing with `pictures` pictures.
    fn line(n: usize, pictures: usize) -> String {
        let pictures: Vec<String> = (0..pictures)
            .map(|p| format!("https://img.example/{n}-{p}.jpg"))
            .collect();
        serde_json::json!({
            "sourceId": format!("NEW-{n}"),
            "url": format!("https://shop.example/{n}"),
            "title": "Tudor Royal M28500-0005",
            "brand": "Tudor Watch",
            "reference": "M28500-0005",
            "price": 1659,
            "currency": "EUR",
            "condition": "Used (Fair)",
            "availability": "In stock",
            "pictures": pictures,
        })
        .to_string()
    }

    #[test]
    fn a_new_listing_costs_its_record_and_a_share_of_a_source_key_and_a_pending_pictures_key() {
        use crate::store::RecordKind::{
            Listing, ListingSource, ListingSourceGroup, PendingPictures, PictureDue, PictureState,
            UnmatchedCount, UnmatchedGroup, UnmatchedMember, UnmatchedOrder, UnmatchedPrice,
        };
        let dir = tempfile::tempdir().expect("dir");
        let store = fixture_store(dir.path());
        let spaces = [
            Listing,
            ListingSource,
            ListingSourceGroup,
            PendingPictures,
            PictureState,
            PictureDue,
            UnmatchedGroup,
            UnmatchedMember,
            UnmatchedPrice,
            UnmatchedOrder,
            UnmatchedCount,
        ];
        let count = |store: &Store| (spaces.map(|s| store.keys_in(s)), store.keys_total());
        let (before, total_before) = count(&store);
        let due_before = store.pictures().pictures_maybe_due().expect("due").len();
        let (listings, pictures) = (40, 3);
        let done = ingest_lines(&store, (0..listings).map(|n| line(n, pictures)));
        assert_eq!(done.created, listings);
        let (after, total_after) = count(&store);
        let added: Vec<usize> = after.iter().zip(before).map(|(a, b)| a - b).collect();
        // 40 sources in one key, where the old form wrote 40; 120 pictures, sixteen to a
        // key: 8 keys, where the old form wrote 240. The 40 are unmatched (the catalogue has
        // no such Tudor), all of one group: its record, a member key each, one key for their
        // one price, its place in three orders (all, brand, provider and reason: those by
        // provider alone and by reason alone are merged from the last, D-233) and the counts
        // of all five.
        assert_eq!(added, [listings, 0, 1, 8, 0, 0, 1, listings, 1, 3, 5]);
        // Besides: the counters the first listings and pictures of the store start.
        let others = total_after - total_before - added.iter().sum::<usize>();
        assert!(others <= 6, "{others} other keys");
        for listing in store.listings().all_listings() {
            for picture in listing.expect("listing").pictures {
                let record = store
                    .pictures()
                    .picture(picture.id)
                    .expect("read")
                    .expect("record");
                assert_eq!(record.source_url, picture.source_url);
                assert_eq!(record.state, crate::domain::FetchState::Pending);
            }
        }
        let due = store.pictures().pictures_maybe_due().expect("due").len();
        assert_eq!(due - due_before, listings * pictures);
    }

    #[test]
    fn listings_a_store_before_source_groups_holds_are_found_again_not_duplicated() {
        let dir = tempfile::tempdir().expect("dir");
        let store = fixture_store(dir.path());
        let ingest =
            |lines: std::ops::Range<usize>| ingest_lines(&store, lines.map(|n| line(n, 1)));
        assert_eq!(ingest(0..5).created, 5);
        // As a store of schema 5 holds them: a key per listing, no group.
        let ungrouped = store.ungroup_listing_sources();
        assert_eq!(ungrouped, 5);
        let listings = store.count(crate::store::RecordKind::Listing);
        // Three known through the old keys, two new ones into a group.
        let again = ingest(2..9);
        assert_eq!(again.created, 4);
        assert_eq!(store.count(crate::store::RecordKind::Listing), listings + 4);
        let provider = store
            .listings()
            .provider_by_slug(&crate::domain::Slug::parse("chrono24").expect("slug"))
            .expect("read")
            .expect("provider");
        let codes = store
            .listings()
            .listing_codes_of_provider(provider.id)
            .expect("codes");
        let mut named: Vec<&str> = codes.iter().map(|(code, _)| code.as_str()).collect();
        named.retain(|code| code.starts_with("NEW-"));
        named.sort_unstable();
        let expected: Vec<String> = (0..9).map(|n| format!("NEW-{n}")).collect();
        assert_eq!(
            named,
            expected.iter().map(String::as_str).collect::<Vec<_>>()
        );
        let found = store
            .listings()
            .listing_by_source(provider.id, "NEW-3")
            .expect("read")
            .expect("listing");
        assert_eq!(found.provider_code, "NEW-3");
    }

    #[test]
    fn a_line_with_more_than_its_object_is_a_problem_and_none_of_it_is_kept() {
        // A second object glued to the first (a newline lost) was read as the first alone.
        let text = format!("{}{}\n{}  \n", line(1, 0), line(2, 0), line(3, 0));
        let mut kept = Vec::new();
        let read = read_snapshot("feed.jsonl", text.as_bytes(), |row| {
            kept.push(row.source_id)
        })
        .expect("read");
        assert_eq!(kept, ["NEW-3"], "whitespace after an object is fine");
        let [problem] = read.problems.first() else {
            panic!("one problem: {:?}", read.problems);
        };
        assert_eq!((problem.line, problem.field.as_deref()), (1, None));
        assert!(
            problem.message.contains("trailing characters"),
            "{}",
            problem.message
        );
    }

    #[test]
    fn a_snapshot_of_several_parse_blocks_is_read_in_order_with_each_problem_at_its_line() {
        // Lines 1..=N are valid, but for a blank line, a line that is not JSON, a bad currency
        // and a code repeated across a block boundary: every problem names its own line.
        let lines = 2 * PARSE_BLOCK + 5;
        let (blank, not_json, unknown, no_code, twice) = (10, 20, 30, 40, 50);
        let (bad_currency, again) = (PARSE_BLOCK + 7, 2 * PARSE_BLOCK + 2);
        let text: String = (1..=lines)
            .map(|n| match n {
                _ if n == blank => String::new(),
                _ if n == not_json => "{not json".to_owned(),
                _ if n == unknown => line(n, 0).replace("\"url\"", "\"link\""),
                _ if n == no_code => format!("{{\"url\":\"https://shop.example/{n}\"}}"),
                _ if n == twice => line(n, 0).replacen('{', "{\"title\":\"x\",", 1),
                _ if n == bad_currency => line(n, 0).replace("\"EUR\"", "\"EURO\""),
                _ if n == again => line(3, 0),
                _ => line(n, 0),
            } + "\n")
            .collect();
        let mut kept = Vec::new();
        let read = read_snapshot("feed.jsonl", text.as_bytes(), |row| {
            kept.push(row.source_id)
        })
        .expect("read");
        let problems: Vec<(usize, Option<&str>)> = (read.problems.first().iter())
            .map(|p| (p.line, p.field.as_deref()))
            .collect();
        assert_eq!(
            problems,
            [
                (not_json, None),
                (unknown, Some("link")),
                (no_code, Some("sourceId")),
                (twice, Some("title")),
                (bad_currency, Some("currency")),
                (again, Some("sourceId")),
            ]
        );
        assert!(read.problems.first()[5].message.contains("first on line 3"));
        assert_eq!(read.lines, lines - 1, "the blank line is not counted");
        let expected: Vec<String> = (1..=lines)
            .filter(|n| {
                ![
                    blank,
                    not_json,
                    unknown,
                    no_code,
                    twice,
                    bad_currency,
                    again,
                ]
                .contains(n)
            })
            .map(|n| format!("NEW-{n}"))
            .collect();
        assert_eq!(kept, expected, "rows in the snapshot's order");
        assert_eq!(read.codes.len(), expected.len());
        assert_eq!(read.codes.get("NEW-3"), Some(&3));
    }
}

#[cfg(test)]
#[path = "price_history_tests.rs"]
mod price_history_tests;
