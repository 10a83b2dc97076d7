//! `watch-catalogue import DIR`: reads a dataset directory (docs/dataset-format.md), checks
//! every line and every parent slug, and upserts by slug in one atomic store write. Any problem
//! rejects the whole import with file, line and field named, and nothing is written. Records
//! equal to what the store holds are left alone, so importing twice changes nothing.

mod calibers;
pub mod fixtures;
mod kinds;
mod one;
mod parse;
mod picture_candidates;
pub mod rows;

pub use one::{build_model, RowTarget};
pub use parse::{parse_object, LineProblems};

use super::progress::JobControl;
use crate::domain::{
    normalize_reference, Brand, BrandId, CaliberId, Complication, ComplicationId, FetchState,
    Fetched, Model, ModelId, Picture, PictureId, PictureRecord, PictureType, Provider, Series,
    SeriesId, Slug, Timestamp,
};
use crate::media::fetch::{decode, is_web_url};
use crate::media::look::look;
use crate::media::{FetchSettings, MediaStore};
use crate::store::{
    RecordKind, Store, StoreError, StoreGeneration, StoreResult, WriteBatch, WriteTurn,
};
use parse::read_rows;
use rows::{
    BrandRow, CaliberRow, CandidateRow, ComplicationRow, ModelRow, PictureRow, ProviderRow,
    SeriesRow,
};
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, Read};
use std::path::PathBuf;

/// Where dataset files come from: a directory, or the fixtures embedded in the binary.
pub trait DatasetSource {
    /// Human-readable origin, for logs.
    fn describe(&self) -> String;
    /// The file's lines, or `None` when the dataset has no such file.
    fn open(&self, file: &str) -> std::io::Result<Option<Box<dyn BufRead + '_>>>;
    /// The bytes of a picture file the dataset ships, by its path relative to the dataset, or
    /// `None` when it has no such file (or ships no files at all).
    fn picture(&self, _path: &RelativePath) -> std::io::Result<Option<Vec<u8>>> {
        Ok(None)
    }
}

/// A path inside a dataset: relative, of plain names only (no `..`, no root), so that reading
/// it never leaves the dataset's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelativePath(PathBuf);

impl RelativePath {
    /// `text` as a path inside the dataset, or `None` when it is a URL or would leave it.
    pub fn parse(text: &str) -> Option<RelativePath> {
        use std::path::Component;
        let path = std::path::Path::new(text);
        let plain = !text.is_empty()
            && !text.contains("://")
            && path.components().all(|c| matches!(c, Component::Normal(_)));
        plain.then(|| RelativePath(path.to_owned()))
    }
}

/// A dataset directory on disk.
pub struct DirectorySource(pub PathBuf);

impl DatasetSource for DirectorySource {
    fn describe(&self) -> String {
        self.0.display().to_string()
    }
    fn open(&self, file: &str) -> std::io::Result<Option<Box<dyn BufRead + '_>>> {
        match std::fs::File::open(self.0.join(file)) {
            Ok(f) => Ok(Some(Box::new(std::io::BufReader::new(f)))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads at most the fetcher's size cap; a symbolic link out of the directory is refused
    /// like a missing file.
    fn picture(&self, path: &RelativePath) -> std::io::Result<Option<Vec<u8>>> {
        let root = self.0.canonicalize()?;
        let file = match root.join(&path.0).canonicalize() {
            Ok(file) if file.starts_with(&root) => file,
            Ok(_) => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut bytes = Vec::new();
        let cap = crate::media::FetchSettings::default().max_bytes;
        std::fs::File::open(file)?
            .take(cap + 1)
            .read_to_end(&mut bytes)?;
        Ok(Some(bytes))
    }
}

/// One thing wrong with one line of the dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub line: usize,
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Line 0: a problem with the whole file (an XML file is not read line by line).
        match self.line {
            0 => write!(f, "{}: ", self.file)?,
            line => write!(f, "{}:{line}: ", self.file)?,
        }
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Brand slugs that would be shadowed by a fixed path under `/brands/`.
const RESERVED_BRAND_SLUGS: [&str; 1] = ["highlighted"];

/// Most problems printed; the rest are counted.
const PROBLEMS_SHOWN: usize = 50;

/// Why an import wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{} problem(s) in the dataset; nothing was imported:\n{}", .0.len(), list_problems(.0))]
    Invalid(Vec<Problem>),
    #[error("reading {file}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ImportError {
    fn io(file: &str, source: std::io::Error) -> ImportError {
        ImportError::Io {
            file: file.to_owned(),
            source,
        }
    }
}

fn list_problems(problems: &[Problem]) -> String {
    let mut out: Vec<String> = problems
        .iter()
        .take(PROBLEMS_SHOWN)
        .map(|p| format!("  {p}"))
        .collect();
    if problems.len() > PROBLEMS_SHOWN {
        out.push(format!(
            "  ... and {} more",
            problems.len() - PROBLEMS_SHOWN
        ));
    }
    out.join("\n")
}

/// What an import changed, per kind of record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub generation: StoreGeneration,
    pub kinds: Vec<(&'static str, KindCounts)>,
}

impl ImportReport {
    /// True when the store already held every record exactly.
    pub fn changed_nothing(&self) -> bool {
        self.kinds
            .iter()
            .all(|(_, c)| c.created == 0 && c.updated == 0)
    }
}

/// Records created, updated and left unchanged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindCounts {
    pub created: usize,
    pub updated: usize,
    pub unchanged: usize,
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (kind, c) in &self.kinds {
            writeln!(
                f,
                "{kind:>13}: {} created, {} updated, {} unchanged",
                c.created, c.updated, c.unchanged
            )?;
        }
        write!(f, "store generation {}", self.generation.0)
    }
}

/// Imports `source` into the turn's store: all of it, or nothing.
pub fn import(
    turn: &WriteTurn<'_>,
    source: &dyn DatasetSource,
) -> Result<ImportReport, ImportError> {
    import_with_media(turn, source, None)
}

/// [`import`], storing the picture files the dataset ships (`pictures[].url` a path inside the
/// dataset) in `media`; without it, such a picture is a problem.
pub fn import_with_media(
    turn: &WriteTurn<'_>,
    source: &dyn DatasetSource,
    media: Option<&MediaStore>,
) -> Result<ImportReport, ImportError> {
    import_counted(turn, source, media, &JobControl::default())
}

/// [`import_with_media`], counting the lines it checks into `progress` (added to what it
/// counted before: an import's snapshots count on after its catalogue).
pub fn import_counted(
    turn: &WriteTurn<'_>,
    source: &dyn DatasetSource,
    media: Option<&MediaStore>,
    progress: &JobControl,
) -> Result<ImportReport, ImportError> {
    let started = std::time::Instant::now();
    let mut problems = Vec::new();
    let brands = read_rows::<BrandRow>(source, "brands.jsonl", &mut problems)?;
    let series = read_rows::<SeriesRow>(source, "series.jsonl", &mut problems)?;
    let complications = read_rows::<ComplicationRow>(source, "complications.jsonl", &mut problems)?;
    let calibers = read_rows::<CaliberRow>(source, "calibers.jsonl", &mut problems)?;
    let models = read_rows::<ModelRow>(source, "models.jsonl", &mut problems)?;
    let providers = read_rows::<ProviderRow>(source, "providers.jsonl", &mut problems)?;
    let candidates = read_rows::<CandidateRow>(source, "candidates.jsonl", &mut problems)?;

    let read_took = started.elapsed();
    let lines = [
        brands.len(),
        series.len(),
        complications.len(),
        calibers.len(),
        models.len(),
        providers.len(),
        candidates.len(),
    ];
    let (done_before, _) = progress.progress();
    let total = done_before + lines.iter().sum::<usize>() as u64;
    progress.set_total(total);
    let mut run = Run::new(turn, problems)?;
    run.files = Some(PictureFiles { source, media });
    run.progress = Some(progress);
    let mut kinds = vec![
        ("brands", run.import_kind::<Brand>(brands)?),
        ("series", run.import_kind::<Series>(series)?),
        (
            "complications",
            run.import_kind::<Complication>(complications)?,
        ),
        ("calibers", run.calibers(calibers)?),
    ];
    kinds.push(("models", run.import_kind::<Model>(models)?));
    kinds.push(("providers", run.import_kind::<Provider>(providers)?));
    kinds.push(("candidates", run.candidates(candidates)?));
    kinds.push(("rates", run.rates(source)?));

    if !run.problems.is_empty() {
        return Err(ImportError::Invalid(run.problems));
    }
    let checked_took = started.elapsed() - read_took;
    let generation = turn.commit(run.batch)?;
    tracing::debug!(?read_took, ?checked_took, took = ?started.elapsed(), "import written");
    // Lines skipped before their check (a blank line) are done too.
    let (done, _) = progress.progress();
    progress.advance(total.saturating_sub(done));
    Ok(ImportReport { generation, kinds })
}

/// State of one import: the pending batch, the keys claimed so far, the problems found.
struct Run<'a> {
    store: &'a Store,
    batch: WriteBatch<'a>,
    problems: Vec<Problem>,
    now: Timestamp,
    file: &'static str,
    line: usize,
    /// The id of every record this import claimed, by kind and key: later lines and files
    /// resolve their parents here before the store.
    claimed: FxHashMap<(RecordKind, kinds::Key), u64>,
    /// Each calibre's parent, once resolved against the whole file.
    caliber_parents: HashMap<CaliberId, Option<CaliberId>>,
    /// Where picture files shipped with a dataset come from and go; `None` outside an import.
    files: Option<PictureFiles<'a>>,
    /// Where the lines checked are counted, one by one.
    progress: Option<&'a JobControl>,
}

/// The dataset a picture file is read from and the media store it is kept in.
struct PictureFiles<'a> {
    source: &'a dyn DatasetSource,
    media: Option<&'a MediaStore>,
}

type Rows<T> = Vec<(usize, T)>;
type ImportResult<T> = Result<T, ImportError>;

impl<'a> Run<'a> {
    fn new(turn: &'a WriteTurn<'a>, problems: Vec<Problem>) -> ImportResult<Run<'a>> {
        let mut run = Run::over(turn.store(), turn.batch()?);
        run.problems = problems;
        Ok(run)
    }

    /// A run that adds to `batch`, which a caller commits with the rest of its write.
    fn over(store: &'a Store, batch: WriteBatch<'a>) -> Run<'a> {
        Run {
            store,
            batch,
            problems: Vec::new(),
            now: Timestamp::now(),
            file: "",
            line: 0,
            claimed: FxHashMap::default(),
            caliber_parents: HashMap::new(),
            files: None,
            progress: None,
        }
    }

    fn at(&mut self, file: &'static str, line: usize) {
        self.file = file;
        self.line = line;
    }

    /// [`Run::at`] a line checked for the first time: one more line counted.
    fn checking(&mut self, file: &'static str, line: usize) {
        self.at(file, line);
        if let Some(progress) = self.progress {
            progress.tick();
        }
    }

    fn problem(&mut self, field: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            file: self.file.to_owned(),
            line: self.line,
            field: Some(field.to_owned()),
            message: message.into(),
        });
    }

    fn slug(&mut self, field: &str, value: &str) -> Option<Slug> {
        Slug::parse(value)
            .map_err(|e| self.problem(field, e.to_string()))
            .ok()
    }

    fn required_text(&mut self, field: &str, value: &str) -> bool {
        let ok = !value.trim().is_empty();
        if !ok {
            self.problem(field, "must not be empty");
        }
        ok
    }

    /// The first line that used `key` in this file, recording it if new.
    fn first_use<K: std::hash::Hash + Eq>(
        seen: &mut FxHashMap<K, usize>,
        key: K,
        line: usize,
    ) -> Option<usize> {
        match seen.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(line);
                None
            }
        }
    }

    fn brand(&mut self, field: &str, value: &str) -> ImportResult<Option<BrandId>> {
        let Some(slug) = self.slug(field, value) else {
            return Ok(None);
        };
        if let Some(&id) = self.claimed.get(&(RecordKind::Brand, (None, slug.clone()))) {
            return Ok(Some(BrandId(id)));
        }
        match self.store.catalogue().brand_by_slug(&slug)? {
            Some(brand) => Ok(Some(brand.id)),
            None => {
                self.problem(
                    field,
                    format!("no brand with slug `{slug}` in brands.jsonl or the store"),
                );
                Ok(None)
            }
        }
    }

    fn complication(&mut self, field: &str, value: &str) -> ImportResult<Option<ComplicationId>> {
        let Some(slug) = self.slug(field, value) else {
            return Ok(None);
        };
        if let Some(&id) = self
            .claimed
            .get(&(RecordKind::Complication, (None, slug.clone())))
        {
            return Ok(Some(ComplicationId(id)));
        }
        match self.store.catalogue().complication_by_slug(&slug)? {
            Some(complication) => Ok(Some(complication.id)),
            None => {
                self.problem(field, format!("no complication with slug `{slug}`"));
                Ok(None)
            }
        }
    }

    /// Resolves a `"brandSlug/caliberSlug"` reference to a calibre.
    fn caliber_ref(&mut self, field: &str, value: &str) -> ImportResult<Option<CaliberId>> {
        let found = self.scoped_ref(
            field,
            value,
            RecordKind::Caliber,
            "calibre",
            |store, brand, slug| {
                Ok(store
                    .catalogue()
                    .caliber_by_slug(brand, slug)?
                    .map(|c| c.id.0))
            },
        )?;
        Ok(found.map(CaliberId))
    }

    /// Resolves a `"brandSlug/modelSlug"` reference to a model.
    fn model_ref(&mut self, field: &str, value: &str) -> ImportResult<Option<ModelId>> {
        let found = self.scoped_ref(
            field,
            value,
            RecordKind::Model,
            "model",
            |store, brand, slug| {
                Ok(store
                    .catalogue()
                    .model_by_slug(brand, slug)?
                    .map(|m| m.id.0))
            },
        )?;
        Ok(found.map(ModelId))
    }

    /// Resolves `"brandSlug/slug"` to the id of a brand-scoped record of `kind` this import
    /// claimed or the store holds, recording a problem naming the `noun` when there is none.
    fn scoped_ref(
        &mut self,
        field: &str,
        value: &str,
        kind: RecordKind,
        noun: &str,
        stored: impl FnOnce(&Store, BrandId, &Slug) -> StoreResult<Option<u64>>,
    ) -> ImportResult<Option<u64>> {
        let Some((brand_slug, slug)) = value.split_once('/') else {
            self.problem(
                field,
                format!("`{value}` is not of the form brandSlug/{noun}Slug"),
            );
            return Ok(None);
        };
        let (Some(brand), Some(slug)) = (self.brand(field, brand_slug)?, self.slug(field, slug))
        else {
            return Ok(None);
        };
        if let Some(&id) = self.claimed.get(&(kind, (Some(brand), slug.clone()))) {
            return Ok(Some(id));
        }
        match stored(self.store, brand, &slug)? {
            Some(id) => Ok(Some(id)),
            None => {
                let file = match kind {
                    RecordKind::Model => "models.jsonl",
                    _ => "calibers.jsonl",
                };
                self.problem(field, format!("no {noun} `{value}` in {file} or the store"));
                Ok(None)
            }
        }
    }

    /// The ECB rates of `rates.xml`, when the dataset has one (a daily file, or a history of
    /// many days): each day written if it differs from the day stored, the newest in force
    /// unless a later day is.
    fn rates(&mut self, source: &dyn DatasetSource) -> ImportResult<KindCounts> {
        const FILE: &str = "rates.xml";
        let mut counts = KindCounts::default();
        let Some(mut reader) = source.open(FILE).map_err(|e| ImportError::io(FILE, e))? else {
            return Ok(counts);
        };
        let mut text = String::new();
        reader
            .read_to_string(&mut text)
            .map_err(|e| ImportError::io(FILE, e))?;
        let days = match crate::domain::rates::parse_ecb_days(&text) {
            Ok(days) => days,
            Err(error) => {
                self.problems.push(Problem {
                    file: FILE.to_owned(),
                    line: 0,
                    field: None,
                    message: error.to_string(),
                });
                return Ok(counts);
            }
        };
        for day in days {
            match self.store.rates().day(&day.date)? {
                None => counts.created += 1,
                Some(stored) if stored == day => {
                    counts.unchanged += 1;
                    continue;
                }
                Some(_) => counts.updated += 1,
            }
            self.batch.put_rates(&day)?;
        }
        Ok(counts)
    }

    fn series_of(
        &mut self,
        brand: BrandId,
        brand_slug: &str,
        slug: Slug,
    ) -> ImportResult<Option<SeriesId>> {
        if let Some(&id) = self
            .claimed
            .get(&(RecordKind::Series, (Some(brand), slug.clone())))
        {
            return Ok(Some(SeriesId(id)));
        }
        match self.store.catalogue().series_by_slug(brand, &slug)? {
            Some(series) => Ok(Some(series.id)),
            None => {
                self.problem(
                    "series",
                    format!("no series `{slug}` in brand `{brand_slug}`"),
                );
                Ok(None)
            }
        }
    }

    fn reference(&mut self, field: &str, value: &str) -> bool {
        let ok = !normalize_reference(value).is_empty();
        if !ok {
            self.problem(field, format!("`{value}` has no letters or digits"));
        }
        ok
    }

    /// The model's pictures, keeping the ids of pictures it already had (matched by URL).
    fn pictures(
        &mut self,
        rows: Vec<PictureRow>,
        existing: Option<&[Picture]>,
    ) -> ImportResult<Option<Vec<Picture>>> {
        let mut pictures = Vec::with_capacity(rows.len());
        for row in rows {
            let kind = match row.kind.as_str() {
                "FRONT" => PictureType::Front,
                "BACK" => PictureType::Back,
                "SIDE" => PictureType::Side,
                "DETAIL" => PictureType::Detail,
                "LIFESTYLE" => PictureType::Lifestyle,
                other => {
                    self.problem("pictures", format!("unknown picture type `{other}`; use FRONT, BACK, SIDE, DETAIL or LIFESTYLE"));
                    return Ok(None);
                }
            };
            if !self.required_text("pictures", &row.url) {
                return Ok(None);
            }
            let kept = existing
                .and_then(|old| old.iter().find(|p| p.url == row.url))
                .map(|p| p.id.0);
            let id = self.id_for(kept, RecordKind::Picture)?;
            if kept.is_none()
                && !is_web_url(&row.url)
                && !self.picture_file(PictureId(id), &row.url)?
            {
                return Ok(None);
            }
            pictures.push(Picture {
                id: PictureId(id),
                url: row.url,
                kind,
                cropped_url: row.cropped_url,
            });
        }
        Ok(Some(pictures))
    }

    /// Stores the picture file at `path` inside the dataset as picture `id`, fetched and to be
    /// cropped by the image worker; false after recording a problem.
    fn picture_file(&mut self, id: PictureId, path: &str) -> ImportResult<bool> {
        let Some(relative) = RelativePath::parse(path) else {
            self.problem(
                "pictures",
                format!("`{path}` is neither an http(s) URL nor a path inside the dataset"),
            );
            return Ok(false);
        };
        let Some(PictureFiles { source, media }) = self.files else {
            self.problem(
                "pictures",
                format!("`{path}`: picture files come only with a dataset import"),
            );
            return Ok(false);
        };
        let bytes = source
            .picture(&relative)
            .map_err(|e| ImportError::io(path, e))?;
        let Some(bytes) = bytes else {
            self.problem(
                "pictures",
                format!("no picture file `{path}` in the dataset"),
            );
            return Ok(false);
        };
        let Some(media) = media else {
            self.problem(
                "pictures",
                format!("`{path}`: this import keeps no picture files"),
            );
            return Ok(false);
        };
        let decoded = match decode(bytes, &FetchSettings::default()) {
            Ok(decoded) => decoded,
            Err(error) => {
                self.problem("pictures", format!("`{path}`: {error}"));
                return Ok(false);
            }
        };
        let hash = media
            .put(&decoded.bytes)
            .map_err(|e| ImportError::io("media", e))?;
        let record = PictureRecord {
            state: FetchState::Fetched(Fetched {
                hash,
                format: decoded.format,
                width: decoded.image.width(),
                height: decoded.image.height(),
                cropped: None,
            }),
            ..PictureRecord::pending(id, format!("dataset:{path}"), self.now)
        };
        self.batch.put_picture(&record);
        self.batch.put_look(id, look(&decoded.image));
        Ok(true)
    }

    fn id_for(&mut self, existing: Option<u64>, kind: RecordKind) -> ImportResult<u64> {
        match existing {
            Some(id) => Ok(id),
            None => Ok(self.batch.allocate_id(kind)?),
        }
    }

    fn times(&self, existing: Option<(Timestamp, Timestamp)>) -> (Timestamp, Timestamp) {
        existing.unwrap_or((self.now, self.now))
    }

    /// Counts `record` and adds it to the batch when it is new or differs from the stored
    /// version (`touch` then sets its update time).
    fn upsert<T: PartialEq>(
        &mut self,
        existing: Option<T>,
        mut record: T,
        counts: &mut KindCounts,
        touch: impl Fn(&mut T, Timestamp),
        put: impl FnOnce(&mut WriteBatch<'a>, Option<&T>, &T),
    ) {
        match &existing {
            None => counts.created += 1,
            Some(old) if *old == record => {
                counts.unchanged += 1;
                return;
            }
            Some(_) => {
                counts.updated += 1;
                touch(&mut record, self.now);
            }
        }
        put(&mut self.batch, existing.as_ref(), &record);
    }
}

#[cfg(test)]
mod tests;
