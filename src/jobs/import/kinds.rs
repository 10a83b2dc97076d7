//! The one skeleton every record kind of a dataset is imported by: each line is checked, its
//! slug claimed (once per file, within its brand for brand-scoped kinds), given the id the
//! store already has for it or a new one, built into a record, and upserted. A [`Kind`] says
//! only what differs: its fields, its parents, its record.

use super::rows::{BrandRow, ComplicationRow, ModelRow, ProviderRow, SeriesRow};
use super::RESERVED_BRAND_SLUGS;
use super::{ImportResult, KindCounts, Rows, Run};
use crate::domain::{
    Brand, BrandId, CaliberId, Complication, ComplicationId, Model, ModelId, Picture, PictureId,
    Provider, ProviderId, Series, SeriesId, Slug, Timestamp,
};
use crate::store::{RecordKind, Store, StoreResult, WriteBatch};
use rustc_hash::FxHashMap;

/// A record's natural key in a dataset: its slug, within a brand for brand-scoped kinds.
pub(super) type Key = (Option<BrandId>, Slug);

/// `id`, `stamps` and `touch` of a record with an id newtype and creation and update times.
macro_rules! stamped_record {
    () => {
        fn id(&self) -> u64 {
            self.id.0
        }
        fn stamps(&self) -> Option<(Timestamp, Timestamp)> {
            Some((self.created_at, self.updated_at))
        }
        fn touch(&mut self, now: Timestamp) {
            self.updated_at = now;
        }
    };
}
pub(super) use stamped_record;

/// Looks a brand-scoped key up; a key without a brand names nothing.
pub(super) fn in_brand<T>(
    key: &Key,
    lookup: impl FnOnce(BrandId, &Slug) -> StoreResult<Option<T>>,
) -> StoreResult<Option<T>> {
    match key.0 {
        Some(brand) => lookup(brand, &key.1),
        None => Ok(None),
    }
}

/// What one record kind brings to the skeleton.
pub(super) trait Kind: PartialEq {
    type Row;
    /// What checking a line resolved besides its key (parents' ids).
    type Checked;
    const FILE: &'static str;
    const RECORD: RecordKind;
    /// The kind in problems: "duplicate {NOUN} slug".
    const NOUN: &'static str;

    /// Checks the line's own fields and parents, recording a problem for each fault; `None`
    /// when there was one.
    fn check(run: &mut Run<'_>, row: &Self::Row) -> ImportResult<Option<(Key, Self::Checked)>>;
    /// The brand slug the line names, for problems about brand-scoped slugs.
    fn brand_text(_row: &Self::Row) -> Option<&str> {
        None
    }
    fn stored(store: &Store, key: &Key) -> StoreResult<Option<Self>>
    where
        Self: Sized;
    fn id(&self) -> u64;
    /// Creation and update times, for kinds that have them.
    fn stamps(&self) -> Option<(Timestamp, Timestamp)>;
    fn touch(&mut self, now: Timestamp);
    /// The record of a claimed line; `None` after recording a problem.
    fn build(
        run: &mut Run<'_>,
        row: Self::Row,
        checked: Self::Checked,
        claim: &Claim<Self>,
    ) -> ImportResult<Option<Self>>
    where
        Self: Sized;
    fn put(batch: &mut WriteBatch<'_>, old: Option<&Self>, new: &Self);
}

/// What claiming a line's key settled: its id, the stored version, the times it keeps.
pub(super) struct Claim<R> {
    pub key: Key,
    pub id: u64,
    /// Boxed: a `Claimed` line is moved several times, and a model record inline made it
    /// twice the size, mostly of nothing (an import of new models finds none).
    pub existing: Option<Box<R>>,
    /// Creation and update times the record keeps (now, for a new one).
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A line whose key was claimed, its record not built yet.
pub(super) struct Claimed<K: Kind> {
    pub line: usize,
    pub row: K::Row,
    pub checked: K::Checked,
    pub claim: Claim<K>,
}

impl Run<'_> {
    /// Imports every line of one kind.
    pub(super) fn import_kind<K: Kind>(&mut self, rows: Rows<K::Row>) -> ImportResult<KindCounts> {
        let started = std::time::Instant::now();
        let claimed = self.claim::<K>(rows)?;
        let claimed_took = started.elapsed();
        let counts = self.settle::<K>(claimed)?;
        let settled_took = started.elapsed() - claimed_took;
        tracing::debug!(
            file = K::FILE,
            ?claimed_took,
            ?settled_took,
            "import: lines checked"
        );
        Ok(counts)
    }

    /// Checks every line and claims its key, so that a line may name any other line of its
    /// file (a calibre's parent) whatever their order.
    pub(super) fn claim<K: Kind>(&mut self, rows: Rows<K::Row>) -> ImportResult<Vec<Claimed<K>>> {
        let mut seen = FxHashMap::default();
        seen.reserve(rows.len());
        self.claimed.reserve(rows.len());
        let mut claimed = Vec::with_capacity(rows.len());
        for (line, row) in rows {
            self.checking(K::FILE, line);
            let Some((key, checked)) = K::check(self, &row)? else {
                continue;
            };
            if let Some(first) = Self::first_use(&mut seen, key.clone(), line) {
                let scope = K::brand_text(&row)
                    .map(|brand| format!(" in brand `{brand}`"))
                    .unwrap_or_default();
                self.problem(
                    "slug",
                    format!(
                        "duplicate {} slug `{}`{scope} (first on line {first})",
                        K::NOUN,
                        key.1
                    ),
                );
                continue;
            }
            let existing = K::stored(self.store, &key)?.map(Box::new);
            let id = self.id_for(existing.as_deref().map(K::id), K::RECORD)?;
            let (created_at, updated_at) = self.times(existing.as_deref().and_then(K::stamps));
            // Resolvable by later lines and files of this import from now on.
            self.claimed.insert((K::RECORD, key.clone()), id);
            claimed.push(Claimed {
                line,
                row,
                checked,
                claim: Claim {
                    key,
                    id,
                    existing,
                    created_at,
                    updated_at,
                },
            });
        }
        Ok(claimed)
    }

    /// Builds and upserts every claimed line.
    pub(super) fn settle<K: Kind>(&mut self, claimed: Vec<Claimed<K>>) -> ImportResult<KindCounts> {
        let mut counts = KindCounts::default();
        for Claimed {
            line,
            row,
            checked,
            claim,
        } in claimed
        {
            self.at(K::FILE, line);
            if let Some(record) = K::build(self, row, checked, &claim)? {
                self.upsert(
                    claim.existing.map(|existing| *existing),
                    record,
                    &mut counts,
                    K::touch,
                    |batch, old, new| K::put(batch, old, new),
                );
            }
        }
        Ok(counts)
    }
}

impl Kind for Brand {
    type Row = BrandRow;
    type Checked = ();
    const FILE: &'static str = "brands.jsonl";
    const RECORD: RecordKind = RecordKind::Brand;
    const NOUN: &'static str = "brand";

    fn check(run: &mut Run<'_>, row: &BrandRow) -> ImportResult<Option<(Key, ())>> {
        let slug = run.slug("slug", &row.slug);
        let named = run.required_text("name", &row.name);
        let Some(slug) = slug.filter(|_| named) else {
            return Ok(None);
        };
        if RESERVED_BRAND_SLUGS.contains(&slug.as_str()) {
            run.problem(
                "slug",
                format!("`{slug}` is reserved: GET /brands/{slug} is another endpoint"),
            );
            return Ok(None);
        }
        Ok(Some(((None, slug), ())))
    }
    fn stored(store: &Store, key: &Key) -> StoreResult<Option<Brand>> {
        store.catalogue().brand_by_slug(&key.1)
    }
    stamped_record!();
    fn build(
        _: &mut Run<'_>,
        row: BrandRow,
        _: (),
        claim: &Claim<Brand>,
    ) -> ImportResult<Option<Brand>> {
        Ok(Some(Brand {
            id: BrandId(claim.id),
            slug: claim.key.1.clone(),
            name: row.name,
            aliases: row.aliases,
            highlight_rank: row.highlight_rank,
            description: row.description,
            country: row.country,
            founded: row.founded,
            created_at: claim.created_at,
            updated_at: claim.updated_at,
        }))
    }
    fn put(batch: &mut WriteBatch<'_>, old: Option<&Brand>, new: &Brand) {
        batch.put_brand(old, new);
    }
}

impl Kind for Series {
    type Row = SeriesRow;
    type Checked = BrandId;
    const FILE: &'static str = "series.jsonl";
    const RECORD: RecordKind = RecordKind::Series;
    const NOUN: &'static str = "series";

    fn check(run: &mut Run<'_>, row: &SeriesRow) -> ImportResult<Option<(Key, BrandId)>> {
        let slug = run.slug("slug", &row.slug);
        let brand = run.brand("brand", &row.brand)?;
        let named = run.required_text("name", &row.name);
        let (Some(slug), Some(brand), true) = (slug, brand, named) else {
            return Ok(None);
        };
        Ok(Some(((Some(brand), slug), brand)))
    }
    fn brand_text(row: &SeriesRow) -> Option<&str> {
        Some(&row.brand)
    }
    fn stored(store: &Store, key: &Key) -> StoreResult<Option<Series>> {
        in_brand(key, |brand, slug| {
            store.catalogue().series_by_slug(brand, slug)
        })
    }
    stamped_record!();
    fn build(
        _: &mut Run<'_>,
        row: SeriesRow,
        brand: BrandId,
        claim: &Claim<Series>,
    ) -> ImportResult<Option<Series>> {
        Ok(Some(Series {
            id: SeriesId(claim.id),
            brand_id: brand,
            slug: claim.key.1.clone(),
            name: row.name,
            description: row.description,
            created_at: claim.created_at,
            updated_at: claim.updated_at,
        }))
    }
    fn put(batch: &mut WriteBatch<'_>, old: Option<&Series>, new: &Series) {
        batch.put_series(old, new);
    }
}

impl Kind for Complication {
    type Row = ComplicationRow;
    type Checked = ();
    const FILE: &'static str = "complications.jsonl";
    const RECORD: RecordKind = RecordKind::Complication;
    const NOUN: &'static str = "complication";

    fn check(run: &mut Run<'_>, row: &ComplicationRow) -> ImportResult<Option<(Key, ())>> {
        let slug = run.slug("slug", &row.slug);
        let named = run.required_text("name", &row.name);
        Ok(slug.filter(|_| named).map(|slug| ((None, slug), ())))
    }
    fn stored(store: &Store, key: &Key) -> StoreResult<Option<Complication>> {
        store.catalogue().complication_by_slug(&key.1)
    }
    fn id(&self) -> u64 {
        self.id.0
    }
    fn stamps(&self) -> Option<(Timestamp, Timestamp)> {
        None
    }
    fn touch(&mut self, _: Timestamp) {}
    fn build(
        _: &mut Run<'_>,
        row: ComplicationRow,
        _: (),
        claim: &Claim<Complication>,
    ) -> ImportResult<Option<Complication>> {
        Ok(Some(Complication {
            id: ComplicationId(claim.id),
            slug: claim.key.1.clone(),
            name: row.name,
        }))
    }
    fn put(batch: &mut WriteBatch<'_>, old: Option<&Complication>, new: &Complication) {
        batch.put_complication(old, new);
    }
}

/// A model line's parents: brand, series, calibre.
pub(super) type ModelParents = (BrandId, SeriesId, Option<CaliberId>);

impl Kind for Model {
    type Row = ModelRow;
    type Checked = ModelParents;
    const FILE: &'static str = "models.jsonl";
    const RECORD: RecordKind = RecordKind::Model;
    const NOUN: &'static str = "model";

    fn check(run: &mut Run<'_>, row: &ModelRow) -> ImportResult<Option<(Key, ModelParents)>> {
        let slug = run.slug("slug", &row.slug);
        let brand = run.brand("brand", &row.brand)?;
        let series = match (brand, run.slug("series", &row.series)) {
            (Some(brand), Some(series)) => run.series_of(brand, &row.brand, series)?,
            _ => None,
        };
        let caliber = match &row.caliber {
            Some(caliber) => run.caliber_ref("caliber", caliber)?.map(Some),
            None => Some(None),
        };
        let named = run.required_text("name", &row.name);
        let referenced = run.reference("referenceNumber", &row.reference_number);
        let alternates_ok = row
            .alternate_references
            .iter()
            .all(|r| run.reference("alternateReferences", r));
        let (Some(slug), Some(brand), Some(series), Some(caliber), true, true, true) = (
            slug,
            brand,
            series,
            caliber,
            named,
            referenced,
            alternates_ok,
        ) else {
            return Ok(None);
        };
        // A merged model's path redirects to its keeper for good: its slug is never taken again.
        if let Some(keeper) = run.store.duplicates().merged_slug(brand, &slug)? {
            run.problem(
                "slug",
                format!("`{slug}` belonged to a model merged into model {keeper}, whose address it now redirects to; choose another slug"),
            );
            return Ok(None);
        }
        Ok(Some(((Some(brand), slug), (brand, series, caliber))))
    }
    fn brand_text(row: &ModelRow) -> Option<&str> {
        Some(&row.brand)
    }
    fn stored(store: &Store, key: &Key) -> StoreResult<Option<Model>> {
        in_brand(key, |brand, slug| {
            store.catalogue().model_by_slug(brand, slug)
        })
    }
    stamped_record!();
    fn build(
        run: &mut Run<'_>,
        row: ModelRow,
        (brand, series, caliber): ModelParents,
        claim: &Claim<Model>,
    ) -> ImportResult<Option<Model>> {
        let kept = claim.existing.as_ref().map(|m| m.pictures.as_slice());
        let Some(mut pictures) = run.pictures(row.pictures, kept)? else {
            return Ok(None);
        };
        if let Some(old) = &claim.existing {
            let review = run.store.pictures().picture_review(old.id)?;
            keep_protected(&mut pictures, &old.pictures, &review.protected);
        }
        Ok(Some(Model {
            id: ModelId(claim.id),
            brand_id: brand,
            series_id: series,
            slug: claim.key.1.clone(),
            name: row.name,
            reference_number: row.reference_number,
            alternate_references: row.alternate_references,
            caliber_id: caliber,
            description: row.description,
            spec: row.spec,
            pictures,
            created_at: claim.created_at,
            updated_at: claim.updated_at,
        }))
    }
    fn put(batch: &mut WriteBatch<'_>, old: Option<&Model>, new: &Model) {
        batch.put_model(old, new);
        // A new picture the dataset gives no crop for goes to the image worker, in the same
        // write as its model, queued in a group with the pictures around it: two keys a
        // picture fewer, a fifth of the keys a million models cost sled (docs/decisions.md,
        // D-114). Its id was allocated as its model was
        // built, after those of the models put before it.
        let known = |id| old.is_some_and(|m| m.pictures.iter().any(|p| p.id == id));
        for picture in &new.pictures {
            // A picture file of the dataset has its record already (`Run::picture_file`).
            let fetched = !crate::media::fetch::is_web_url(&picture.url);
            if picture.cropped_url.is_none() && !known(picture.id) && !fetched {
                batch.queue_allocated_picture(picture.id, picture.url.clone(), new.updated_at);
            }
        }
    }
}

/// A picture a person protected stays whatever the dataset now says: in the place of the
/// dataset's picture of its type, or added when the dataset has none of that type.
fn keep_protected(pictures: &mut Vec<Picture>, old: &[Picture], protected: &[PictureId]) {
    for picture in old.iter().filter(|p| protected.contains(&p.id)) {
        if pictures.iter().any(|p| p.id == picture.id) {
            continue;
        }
        match pictures.iter_mut().find(|p| p.kind == picture.kind) {
            Some(replaced) => *replaced = picture.clone(),
            None => pictures.push(picture.clone()),
        }
    }
}

impl Kind for Provider {
    type Row = ProviderRow;
    type Checked = ();
    const FILE: &'static str = "providers.jsonl";
    const RECORD: RecordKind = RecordKind::Provider;
    const NOUN: &'static str = "provider";

    fn check(run: &mut Run<'_>, row: &ProviderRow) -> ImportResult<Option<(Key, ())>> {
        let slug = run.slug("slug", &row.slug);
        let named = run.required_text("name", &row.name);
        let linked = run.required_text("url", &row.url);
        Ok(slug
            .filter(|_| named && linked)
            .map(|slug| ((None, slug), ())))
    }
    fn stored(store: &Store, key: &Key) -> StoreResult<Option<Provider>> {
        store.listings().provider_by_slug(&key.1)
    }
    stamped_record!();
    fn build(
        _: &mut Run<'_>,
        row: ProviderRow,
        _: (),
        claim: &Claim<Provider>,
    ) -> ImportResult<Option<Provider>> {
        Ok(Some(Provider {
            id: ProviderId(claim.id),
            slug: claim.key.1.clone(),
            name: row.name,
            url: row.url,
            created_at: claim.created_at,
            updated_at: claim.updated_at,
        }))
    }
    fn put(batch: &mut WriteBatch<'_>, old: Option<&Provider>, new: &Provider) {
        batch.put_provider(old, new);
    }
}
