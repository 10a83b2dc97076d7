//! Matching a listing to a catalogue model: the seller's brand resolves through brand names,
//! slugs and aliases (compared like references: letters and digits, case-folded); the seller's
//! reference must hit exactly one model of that brand, by primary or alternate reference. A
//! reference field that is no reference, or no field at all, is searched for runs of tokens
//! that are references of the brand (`domain::text_runs`); the longest hit wins and two
//! different hits leave the listing unmatched as ambiguous: a wrong model is worse than none.
//! So does a title that names a series of the brand, none of them the hit model's.

use super::listing_writes::{ListingWrites, WrittenListings};
use super::loaded_catalogue::{CatalogueBeforeTheTurn, JobCatalogue};
use super::progress::{JobControl, Stopped};
use super::reindex::{listings_are_current, ReindexError};
use crate::domain::{
    normalize_reference, text_runs, BrandId, Listing, ListingDetails, ListingId, Match,
    MatchOutcome, Model, ModelId, SeriesId, TextRun, Timestamp,
};
use crate::store::{Counted, Store, StoreError, StoreResult, WriteTurn};
use catalogue_index::{ListingFilters, ListingIndex, ListingQuery, ListingSort};
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};

/// What matching reads of the catalogue. The store answers it; [`WithModel`] answers it as the
/// store would once a model not yet committed is, so a back-office edit is decided by the same
/// rules before its write.
pub trait MatchCatalogue: Sync {
    /// The brands whose name, slug or alias folds to `normalized`.
    fn brands_by_alias(&self, normalized: &str) -> StoreResult<Vec<BrandId>>;
    /// The brand's models with a primary or alternate reference that folds to `normalized`.
    fn models_by_reference(&self, brand: BrandId, normalized: &str) -> StoreResult<Vec<ModelId>>;
    /// The brand's references that begin with `normalized` and go on, as what follows it and
    /// the model of each.
    fn references_extending(
        &self,
        brand: BrandId,
        normalized: &str,
    ) -> StoreResult<Vec<(String, ModelId)>>;
    /// The models with these ids that exist.
    fn models(&self, ids: &[ModelId]) -> StoreResult<Vec<Model>>;
    /// The brand's series by the keys seller text writes them as ([`series_keys`]).
    fn series_keys(&self, brand: BrandId) -> StoreResult<Cow<'_, SeriesKeys>>;
    /// The series `model` is in, when it exists.
    fn series_of(&self, model: ModelId) -> StoreResult<Option<SeriesId>>;
}

/// A brand's series by their slug normalised as a text run is (`aqua-terra` is `aquaterra`,
/// as `Aqua Terra` in a title is). Slugs, not names: the slug index answers them without a
/// record read, and a slug is its name's letters and digits.
pub type SeriesKeys = HashMap<String, SeriesId>;

/// The keys of series given as `(slug, id)`, for [`MatchCatalogue::series_keys`].
pub fn series_keys<'s>(series: impl IntoIterator<Item = (&'s str, SeriesId)>) -> SeriesKeys {
    series
        .into_iter()
        .map(|(slug, id)| (normalize_reference(slug), id))
        .filter(|(key, _)| !key.is_empty())
        .collect()
}

impl MatchCatalogue for Store {
    fn brands_by_alias(&self, normalized: &str) -> StoreResult<Vec<BrandId>> {
        self.catalogue().brand_by_alias(normalized)
    }
    fn series_keys(&self, brand: BrandId) -> StoreResult<Cow<'_, SeriesKeys>> {
        let slugs = self.catalogue().series_slugs_of_brand(brand)?;
        Ok(Cow::Owned(series_keys(
            slugs.iter().map(|(slug, id)| (slug.as_str(), *id)),
        )))
    }
    fn series_of(&self, model: ModelId) -> StoreResult<Option<SeriesId>> {
        Ok(self.catalogue().model(model)?.map(|model| model.series_id))
    }
    fn models_by_reference(&self, brand: BrandId, normalized: &str) -> StoreResult<Vec<ModelId>> {
        self.catalogue().model_ids_by_reference(brand, normalized)
    }
    fn references_extending(
        &self,
        brand: BrandId,
        normalized: &str,
    ) -> StoreResult<Vec<(String, ModelId)>> {
        self.catalogue()
            .model_references_extending(brand, normalized)
    }
    fn models(&self, ids: &[ModelId]) -> StoreResult<Vec<Model>> {
        self.catalogue().models(ids)
    }
}

/// The store with `model` written over its stored version (or added, when new): what matching
/// will see once the write that holds `model` commits.
pub struct WithModel<'a> {
    pub store: &'a Store,
    pub model: &'a Model,
}

impl WithModel<'_> {
    /// The model's references, normalised.
    fn references(&self) -> impl Iterator<Item = String> + '_ {
        self.model.normalized_references()
    }

    fn in_brand(&self, brand: BrandId) -> bool {
        self.model.brand_id == brand
    }
}

impl MatchCatalogue for WithModel<'_> {
    fn brands_by_alias(&self, normalized: &str) -> StoreResult<Vec<BrandId>> {
        self.store.catalogue().brand_by_alias(normalized)
    }
    fn series_keys(&self, brand: BrandId) -> StoreResult<Cow<'_, SeriesKeys>> {
        self.store.series_keys(brand)
    }
    fn series_of(&self, model: ModelId) -> StoreResult<Option<SeriesId>> {
        if model == self.model.id {
            return Ok(Some(self.model.series_id));
        }
        self.store.series_of(model)
    }
    fn models_by_reference(&self, brand: BrandId, normalized: &str) -> StoreResult<Vec<ModelId>> {
        let mut found = self
            .store
            .catalogue()
            .model_ids_by_reference(brand, normalized)?;
        found.retain(|id| *id != self.model.id);
        if self.in_brand(brand) && self.references().any(|r| r == normalized) {
            found.push(self.model.id);
        }
        Ok(found)
    }
    fn references_extending(
        &self,
        brand: BrandId,
        normalized: &str,
    ) -> StoreResult<Vec<(String, ModelId)>> {
        let mut found = self
            .store
            .catalogue()
            .model_references_extending(brand, normalized)?;
        found.retain(|(_, id)| *id != self.model.id);
        if self.in_brand(brand) {
            let tails = self.references().filter_map(|r| {
                let tail = r.strip_prefix(normalized)?;
                (!tail.is_empty()).then(|| tail.to_owned())
            });
            found.extend(tails.map(|tail| (tail, self.model.id)));
        }
        Ok(found)
    }
    fn models(&self, ids: &[ModelId]) -> StoreResult<Vec<Model>> {
        let mut found = self.store.catalogue().models(ids)?;
        found.retain(|m| m.id != self.model.id);
        if ids.contains(&self.model.id) {
            found.push(self.model.clone());
        }
        Ok(found)
    }
}

/// The brand and model a listing is of, if its text says so unambiguously, and how it ended.
pub fn match_listing(
    store: &(impl MatchCatalogue + ?Sized),
    details: &ListingDetails,
) -> StoreResult<Match> {
    let title = text_runs(details.title.as_deref().unwrap_or(""));
    let brand = match resolve_brand(store, details.scraped_brand.as_deref(), &title)? {
        Resolved::One(brand) => brand,
        Resolved::None => return Ok(unmatched(None, MatchOutcome::UnknownBrand)),
        Resolved::Several => return Ok(unmatched(None, MatchOutcome::Ambiguous)),
    };
    let field = details
        .scraped_reference
        .as_deref()
        .filter(|r| !normalize_reference(r).is_empty());
    let field_runs = field.map(text_runs).unwrap_or_default();
    let (hits, from_title) = match field {
        Some(field) => (
            reference_field_hits(store, brand, field, &field_runs)?,
            false,
        ),
        None => (reference_hits(store, brand, &title)?, true),
    };
    let seller_text = [title.as_slice(), field_runs.as_slice()];
    let found = match Resolved::of(&hits.found) {
        Resolved::One(model) if names_a_variant(store, brand, model, &hits.keys, &seller_text)? => {
            Resolved::Several
        }
        Resolved::One(model) if names_another_series(store, brand, model, &title)? => {
            Resolved::Several
        }
        resolved => resolved,
    };
    Ok(match found {
        Resolved::One(model) => Match {
            brand_id: Some(brand),
            model_id: Some(model),
            outcome: MatchOutcome::Matched { from_title },
        },
        Resolved::None if from_title => unmatched(Some(brand), MatchOutcome::NoReference),
        Resolved::None => unmatched(Some(brand), MatchOutcome::UnknownReference),
        Resolved::Several => unmatched(Some(brand), MatchOutcome::Ambiguous),
    })
}

fn unmatched(brand_id: Option<BrandId>, outcome: MatchOutcome) -> Match {
    Match {
        brand_id,
        model_id: None,
        outcome,
    }
}

/// What a search of seller text found: nothing, exactly one thing, or more than one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolved<T> {
    None,
    One(T),
    Several,
}

impl<T: Copy> Resolved<T> {
    fn of(found: &BTreeSet<T>) -> Resolved<T> {
        let mut all = found.iter();
        match (all.next(), all.next()) {
            (None, _) => Resolved::None,
            (Some(one), None) => Resolved::One(*one),
            (Some(_), Some(_)) => Resolved::Several,
        }
    }
}

/// What the runs of seller text that hit name, and the keys that hit.
struct Hits<T> {
    found: BTreeSet<T>,
    keys: Vec<String>,
}

/// The brand the seller named, or else the one brand the title names (`Grand Seiko` covers the
/// `Seiko` inside it; `Rolex Tudor` names two).
fn resolve_brand(
    store: &(impl MatchCatalogue + ?Sized),
    named: Option<&str>,
    title: &[TextRun],
) -> StoreResult<Resolved<BrandId>> {
    if let Some(named) = named.map(normalize_reference).filter(|b| !b.is_empty()) {
        let brands: BTreeSet<BrandId> = store.brands_by_alias(&named)?.into_iter().collect();
        return Ok(Resolved::of(&brands));
    }
    let hits = outermost_hits(title, |key| store.brands_by_alias(key))?;
    Ok(Resolved::of(&hits.found))
}

/// The models of `brand` the reference field names: the whole field when it is a reference,
/// else the references among its tokens (`XL WSSA0037`, `W51008Q3 2300`).
fn reference_field_hits(
    store: &(impl MatchCatalogue + ?Sized),
    brand: BrandId,
    field: &str,
    runs: &[TextRun],
) -> StoreResult<Hits<ModelId>> {
    let key = normalize_reference(field);
    let whole: BTreeSet<ModelId> = store
        .models_by_reference(brand, &key)?
        .into_iter()
        .collect();
    if whole.is_empty() {
        reference_hits(store, brand, runs)
    } else {
        Ok(Hits {
            found: whole,
            keys: vec![key],
        })
    }
}

/// The models of `brand` whose references are runs of the text.
fn reference_hits(
    store: &(impl MatchCatalogue + ?Sized),
    brand: BrandId,
    runs: &[TextRun],
) -> StoreResult<Hits<ModelId>> {
    outermost_hits(runs, |key| store.models_by_reference(brand, key))
}

/// Everything the runs that hit name, leaving out a hit inside a longer hit (`16610 LV` is the
/// 16610LV, not the 16610 as well).
fn outermost_hits<T: Ord>(
    runs: &[TextRun],
    mut lookup: impl FnMut(&str) -> StoreResult<Vec<T>>,
) -> StoreResult<Hits<T>> {
    let mut hits: Vec<(&TextRun, Vec<T>)> = Vec::new();
    for run in runs {
        let found = lookup(&run.key)?;
        if !found.is_empty() {
            hits.push((run, found));
        }
    }
    let covered = |run: &TextRun| hits.iter().any(|(other, _)| other.covers(run));
    let outermost: Vec<bool> = hits.iter().map(|(run, _)| !covered(run)).collect();
    let mut result = Hits {
        found: BTreeSet::new(),
        keys: Vec::new(),
    };
    for ((run, found), keep) in hits.into_iter().zip(outermost) {
        if keep {
            result.found.extend(found);
            result.keys.push(run.key.clone());
        }
    }
    Ok(result)
}

/// True when the seller's text names what sets a variant apart from `model`, the model its
/// reference `keys` hit: the letters a variant's reference adds (`LV` in "LV Ref-16610"), or
/// the variant's dial nickname or a bezel or dial colour that `model` lacks ("16610 Kermit",
/// "16610 Green"). A Kermit's case says 16610, and a wrong model is worse than none.
fn names_a_variant(
    store: &(impl MatchCatalogue + ?Sized),
    brand: BrandId,
    model: ModelId,
    keys: &[String],
    text: &[&[TextRun]],
) -> StoreResult<bool> {
    let said = |word: &str| text.iter().any(|runs| runs.iter().any(|r| r.key == word));
    let mut variants = BTreeSet::new();
    for key in keys {
        for (added, other) in store.references_extending(brand, key)? {
            if other == model || !added.chars().all(char::is_alphabetic) {
                continue;
            }
            if said(&added) {
                return Ok(true);
            }
            variants.insert(other);
        }
    }
    if variants.is_empty() {
        return Ok(false);
    }
    let own = store
        .models(&[model])?
        .first()
        .map(distinguishing_words)
        .unwrap_or_default();
    for variant in store.models(&variants.into_iter().collect::<Vec<_>>())? {
        if distinguishing_words(&variant)
            .difference(&own)
            .any(|word| said(word))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// True when the title names a series of `brand` and none of those it names is `model`'s: a
/// seller who writes "Submariner" beside a Datejust's reference has not described a Datejust,
/// so which watch it is stays for a person to say. A title naming the model's own series
/// beside another ("Oyster Perpetual Datejust") is no contradiction.
fn names_another_series(
    store: &(impl MatchCatalogue + ?Sized),
    brand: BrandId,
    model: ModelId,
    title: &[TextRun],
) -> StoreResult<bool> {
    let series = store.series_keys(brand)?;
    if series.is_empty() {
        return Ok(false);
    }
    let named: BTreeSet<SeriesId> = title
        .iter()
        .filter_map(|run| series.get(&run.key).copied())
        .collect();
    if named.is_empty() {
        return Ok(false);
    }
    Ok(store
        .series_of(model)?
        .is_some_and(|own| !named.contains(&own)))
}

/// A model's dial nickname and its bezel and dial colours, normalised like text runs.
fn distinguishing_words(model: &Model) -> BTreeSet<String> {
    let spec = &model.spec;
    spec.dial_nickname
        .iter()
        .chain(&spec.bezel_colors)
        .chain(&spec.dial_colors)
        .map(|word| normalize_reference(word))
        .filter(|word| !word.is_empty())
        .collect()
}

/// What a re-match did.
pub struct RematchReport {
    /// Unmatched listings tried.
    pub tried: usize,
    /// Of those, now matched.
    pub matched: usize,
    /// The listings whose match changed, as written.
    pub written: WrittenListings,
}

/// Why a re-match ended before its end; what it committed before stays.
#[derive(Debug, thiserror::Error)]
pub enum MatchError {
    #[error(transparent)]
    Stopped(Stopped),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] ReindexError),
}

/// `watch-catalogue match`: tries every unmatched listing again (after an import added models),
/// on all cores, writing those whose match changed with the listing counts they change. Only
/// the changed listings are held in memory. Reads every listing to find the unmatched ones;
/// [`rematch_unmatched_indexed`] asks the listings index instead.
pub fn rematch_unmatched(turn: &WriteTurn<'_>) -> Result<RematchReport, MatchError> {
    let store = turn.store();
    let ready = RematchReady::among(store, store.listings().all_listings_parallel())?;
    rematch_ready(turn, ready, &JobControl::default())
}

/// [`rematch_unmatched`], reading only the unmatched listings: the listings index, when it is
/// current, names them (one query), and only those are read from the store, by id. A sixth of
/// the listings at the generator's rates, instead of every one. An index behind its store
/// cannot be trusted to name them all: then every listing is read. The listings to write are
/// counted into `control`, and written in chunks; a stop ends it at a chunk boundary.
pub fn rematch_unmatched_indexed(
    turn: &WriteTurn<'_>,
    index: &ListingIndex,
    control: &JobControl,
) -> Result<RematchReport, MatchError> {
    let ready = RematchReady::of(turn.store(), index)?;
    rematch_ready(turn, ready, control)
}

/// The unmatched listings whose match changed, found without writing: a `match` job finds
/// them before it takes the write turn, as reading and matching every unmatched listing takes
/// tens of seconds at 10M listings and a person's write would wait for all of it (D-226). The
/// writes committed meanwhile are gathered: once the turn is taken, the listings they may have
/// touched are read and matched again, so a person's link or merge is never undone.
pub struct RematchReady<'s> {
    catalogue: CatalogueBeforeTheTurn<'s>,
    changed: Vec<(Listing, Match)>,
    tried: usize,
}

impl<'s> RematchReady<'s> {
    /// The unmatched listings the listings index names (every listing when it is behind its
    /// store), matched again.
    pub fn of(store: &'s Store, index: &ListingIndex) -> Result<RematchReady<'s>, MatchError> {
        if !listings_are_current(store, index)? {
            return RematchReady::among(store, store.listings().all_listings_parallel());
        }
        let unmatched = ListingQuery {
            text: None,
            filters: ListingFilters {
                unmatched: true,
                ..ListingFilters::default()
            },
            sort: ListingSort::Oldest,
            offset: 0,
            limit: usize::try_from(index.len()).unwrap_or(usize::MAX).max(1),
        };
        let ids = index
            .search(&unmatched)
            .map_err(|error| MatchError::Index(error.into()))?
            .ids;
        let listings = ids
            .into_par_iter()
            .filter_map(|id| store.listings().listing(ListingId(id)).transpose());
        RematchReady::among(store, listings)
    }

    /// The unmatched ones of `listings` whose match changed, on all cores; only those are held.
    fn among(
        store: &'s Store,
        listings: impl ParallelIterator<Item = StoreResult<Listing>>,
    ) -> Result<RematchReady<'s>, MatchError> {
        // The admin count leaves DELISTED listings out, which `match` tries too: an estimate,
        // only to choose where the catalogue is read from. The listings are read after it.
        let unmatched = store.count_of(Counted::UnmatchedListings)?;
        let catalogue = CatalogueBeforeTheTurn::for_listings(store, unmatched as usize)?;
        let tried = AtomicUsize::new(0);
        let changed: Vec<(Listing, Match)> = listings
            .filter_map(|listing| match listing {
                Ok(old) if old.model_id.is_some() => None,
                Ok(old) => {
                    tried.fetch_add(1, Ordering::Relaxed);
                    rematched(catalogue.get(), old).transpose()
                }
                Err(e) => Some(Err(e)),
            })
            .collect::<StoreResult<_>>()?;
        Ok(RematchReady {
            catalogue,
            changed,
            tried: tried.into_inner(),
        })
    }
}

/// Writes the listings `ready` found in chunks, in `turn`. Between two chunks other writers may
/// write (a person's link, a merge): the rest is then read and matched again, against the
/// catalogue as they left it, as it is for what they wrote before the turn was taken.
pub fn rematch_ready(
    turn: &WriteTurn<'_>,
    ready: RematchReady<'_>,
    control: &JobControl,
) -> Result<RematchReport, MatchError> {
    let store = turn.store();
    let RematchReady {
        catalogue,
        mut changed,
        tried,
    } = ready;
    let (mut catalogue, before_the_turn) = catalogue.in_the_turn()?;
    if before_the_turn.commits > 0 {
        changed = again(store, &catalogue, changed)?;
    }
    control.set_total(changed.len() as u64);
    let mut writes = match control.pacing().chunk_listings {
        Some(chunk) => ListingWrites::in_chunks_of(turn, chunk)?,
        None => ListingWrites::new(turn)?,
    };
    let now = Timestamp::now();
    let mut matched = 0;
    let mut to_write = changed.into_iter();
    loop {
        let chunk: Vec<(Listing, Match)> = to_write.by_ref().take(writes.chunk()).collect();
        let in_chunk = chunk.len() as u64;
        for (old, found) in chunk {
            let mut new = old.clone();
            new.apply_match(found);
            new.updated_at = now;
            matched += usize::from(found.model_id.is_some());
            writes.put(Some(&old), new);
        }
        // The last chunk commits with the held counts.
        if to_write.len() == 0 {
            break;
        }
        writes.commit_chunk_while(|| ())?;
        control.advance(in_chunk);
        let boundary = writes.between_chunks(control)?;
        if boundary.stop {
            return Err(MatchError::Stopped(Stopped::at(control, "listings")));
        }
        if let Some(others) = boundary.others {
            catalogue.others_wrote(&others)?;
            to_write = again(store, &catalogue, to_write.collect())?.into_iter();
        }
    }
    let written = writes.commit()?;
    let (done, total) = control.progress();
    control.advance(total.saturating_sub(done));
    Ok(RematchReport {
        tried,
        matched,
        written,
    })
}

/// `found`'s listings read again and matched against `catalogue`: those whose match still
/// changes, after other writers may have written them.
fn again(
    store: &Store,
    catalogue: &JobCatalogue<'_>,
    found: Vec<(Listing, Match)>,
) -> StoreResult<Vec<(Listing, Match)>> {
    found
        .into_par_iter()
        .filter_map(|(old, _)| {
            let listing = store.listings().listing(old.id).transpose()?;
            listing
                .and_then(|listing| rematched(catalogue.get(), listing))
                .transpose()
        })
        .collect()
}

/// The new match of `listing` when it is unmatched and its match changed, with the listing.
fn rematched(
    catalogue: &dyn MatchCatalogue,
    listing: Listing,
) -> StoreResult<Option<(Listing, Match)>> {
    if listing.model_id.is_some() {
        return Ok(None);
    }
    let found = match_listing(catalogue, &listing.details)?;
    Ok((found != listing.current_match()).then_some((listing, found)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::import::{import, DirectorySource};

    const BRANDS: &str = r#"{"slug":"rolex","name":"Rolex"}
{"slug":"tudor","name":"Tudor"}
{"slug":"seiko","name":"Seiko"}
{"slug":"grand-seiko","name":"Grand Seiko"}
{"slug":"cartier","name":"Cartier"}"#;

    const SERIES: &str = r#"{"slug":"submariner","brand":"rolex","name":"Submariner"}
{"slug":"datejust","brand":"rolex","name":"Datejust"}
{"slug":"santos","brand":"cartier","name":"Santos"}
{"slug":"heritage","brand":"grand-seiko","name":"Heritage"}
{"slug":"presage","brand":"seiko","name":"Presage"}"#;

    /// Rolex, Cartier and Seiko models (brand, slug, reference, alternates); the two 5513s
    /// make one reference that hits two models. Rolex models are Submariners but the Datejust.
    const MODELS: [(&str, &str, &str, &[&str]); 12] = [
        ("rolex", "datejust-1601", "1601", &[]),
        ("rolex", "sub-16610", "16610", &["16610T"]),
        ("rolex", "sub-16610lv", "16610LV", &["16610T LV"]),
        ("rolex", "sub-116610ln", "116610LN", &[]),
        ("rolex", "sub-16613", "16613", &[]),
        ("rolex", "sub-16800", "16800", &[]),
        ("rolex", "sub-5513", "5513", &[]),
        ("rolex", "sub-5513-explorer", "5513-E", &["5513"]),
        ("cartier", "santos-wssa0037", "WSSA0037", &[]),
        ("cartier", "pasha-w6701004", "W6701004", &[]),
        ("cartier", "santos-w51008q3", "W51008Q3", &[]),
        ("grand-seiko", "sbga211", "SBGA211", &[]),
    ];

    struct Catalogue {
        store: Store,
        _dirs: [tempfile::TempDir; 2],
    }

    fn catalogue() -> Catalogue {
        let dataset = tempfile::tempdir().expect("dir");
        let models: Vec<String> = MODELS
            .iter()
            .map(|(brand, slug, reference, alternates)| {
                let series = match *brand {
                    "rolex" if slug.starts_with("datejust") => "datejust",
                    "rolex" => "submariner",
                    "cartier" => "santos",
                    _ => "heritage",
                };
                let mut model = serde_json::json!({"slug": slug, "brand": brand,
                    "series": series, "name": slug, "referenceNumber": reference,
                    "alternateReferences": alternates});
                // The Kermit: a 16610 case with a green bezel.
                match *slug {
                    "sub-16610" => model["bezelColors"] = serde_json::json!(["black"]),
                    "sub-16610lv" => {
                        model["bezelColors"] = serde_json::json!(["green"]);
                        model["dialNickname"] = serde_json::json!("Kermit");
                    }
                    _ => {}
                }
                model.to_string()
            })
            .collect();
        for (file, text) in [
            ("brands.jsonl", BRANDS.to_owned()),
            ("series.jsonl", SERIES.to_owned()),
            ("models.jsonl", models.join("\n")),
        ] {
            std::fs::write(dataset.path().join(file), text).expect("write");
        }
        let data = tempfile::tempdir().expect("dir");
        let store = Store::open(data.path(), 1 << 20).expect("store");
        import(
            &store.write_turn(),
            &DirectorySource(dataset.path().to_owned()),
        )
        .expect("import");
        Catalogue {
            store,
            _dirs: [dataset, data],
        }
    }

    impl Catalogue {
        fn slug_of(&self, found: Match) -> Option<String> {
            let id = found.model_id?;
            let model = self
                .store
                .catalogue()
                .model(id)
                .expect("read")
                .expect("model");
            Some(model.slug.to_string())
        }

        fn title(&self, title: &str) -> Match {
            self.listing(None, None, title)
        }

        fn listing(&self, brand: Option<&str>, reference: Option<&str>, title: &str) -> Match {
            let details = ListingDetails {
                url: "https://example.com/1".to_owned(),
                title: Some(title.to_owned()),
                scraped_brand: brand.map(str::to_owned),
                scraped_reference: reference.map(str::to_owned),
                ..ListingDetails::default()
            };
            match_listing(&self.store, &details).expect("match")
        }
    }

    #[test]
    fn references_glued_to_words_and_punctuation_in_titles_match() {
        let c = catalogue();
        for (title, slug) in [
            ("Rolex Submariner Date Ref.16800 Matte Dial", "sub-16800"),
            ("Rolex Submariner ref.16613 Blue", "sub-16613"),
            ("Rolex Submariner (No Date)16610 full set", "sub-16610"),
            ("Rolex Submariner REF:16610 Box", "sub-16610"),
            ("Rolex Submariner 16610-LV Kermit", "sub-16610lv"),
            ("Rolex Submariner Ref 116610LN, full set", "sub-116610ln"),
            ("Rolex Submariner Ref116610LN", "sub-116610ln"),
            ("Rolex Submariner Date16613 Steel &amp; Gold", "sub-16613"),
            ("Rolex Submariner 16610 V-Serie", "sub-16610"),
            ("Rolex Submariner Ref:16610T von 2005", "sub-16610"),
            ("Rolex Submariner LV Ref.16610 T LV Bj.2006", "sub-16610lv"),
            (
                "Rolex Submariner No Date 40MM Y-Serial Y116610LN 2003",
                "sub-116610ln",
            ),
        ] {
            let found = c.title(title);
            assert_eq!(c.slug_of(found).as_deref(), Some(slug), "{title}");
            assert_eq!(found.outcome, MatchOutcome::Matched { from_title: true });
        }
    }

    #[test]
    fn a_title_naming_another_series_of_the_brand_and_not_the_models_is_ambiguous() {
        let c = catalogue();
        // 1601 is the Datejust's: a seller calling it a Submariner has not described it.
        // The bulk matcher's catalogue in memory decides the same.
        let loaded = crate::jobs::loaded_catalogue::LoadedCatalogue::load(&c.store).expect("load");
        for title in [
            "Rolex Submariner 1601 Steel",
            "Rolex Sub-Mariner 1601 Steel",
        ] {
            let found = c.title(title);
            assert_eq!(found.model_id, None, "{title}");
            assert_eq!(found.outcome, MatchOutcome::Ambiguous, "{title}");
            let details = ListingDetails {
                title: Some(title.to_owned()),
                ..ListingDetails::default()
            };
            assert_eq!(match_listing(&loaded, &details).expect("match"), found);
        }
        for title in [
            "Rolex Datejust 1601 Steel",
            "Rolex 1601 Steel",
            "Rolex Oyster Datejust 1601, Submariner-style bracelet",
        ] {
            assert_eq!(
                c.slug_of(c.title(title)).as_deref(),
                Some("datejust-1601"),
                "{title}"
            );
        }
    }

    #[test]
    fn the_longest_run_that_is_a_reference_wins() {
        let c = catalogue();
        let found = c.title("Rolex Submariner 16610 LV 50th Anniversary");
        assert_eq!(c.slug_of(found).as_deref(), Some("sub-16610lv"));
    }

    #[test]
    fn two_references_or_one_that_hits_two_models_are_ambiguous() {
        let c = catalogue();
        for title in [
            "Rolex Submariner 16610 16610lv Fat Four",
            "Rolex Submariner 16610 Kermit Box/Papers V 16610LV",
            "Rolex Submariner 5513 Meters First",
        ] {
            let found = c.title(title);
            assert_eq!(found.model_id, None, "{title}");
            assert_eq!(found.outcome, MatchOutcome::Ambiguous, "{title}");
            assert!(found.brand_id.is_some(), "{title}");
        }
    }

    #[test]
    fn a_base_reference_beside_what_sets_a_variant_apart_is_ambiguous() {
        let c = catalogue();
        for title in [
            "Rolex Submariner LV Fat Four Ref-16610 Stainless Steel",
            "Rolex Submariner 16610T Kermit 07/2005",
            "Rolex Submariner 16610 40mm Green 50th Anniversary 2005",
        ] {
            let found = c.title(title);
            assert_eq!(found.model_id, None, "{title}");
            assert_eq!(found.outcome, MatchOutcome::Ambiguous, "{title}");
        }
        let found = c.title("Rolex Submariner 16610 Black Bezel");
        assert_eq!(
            c.slug_of(found).as_deref(),
            Some("sub-16610"),
            "its own colour"
        );
        let found = c.title("Rolex Submariner 16610LV Kermit Green");
        assert_eq!(
            c.slug_of(found).as_deref(),
            Some("sub-16610lv"),
            "the variant itself"
        );
    }

    #[test]
    fn references_of_models_the_catalogue_lacks_match_nothing() {
        let c = catalogue();
        for title in [
            "Rolex Submariner 16600 Men's Black",
            "Rolex Submariner 116713ln Stainless Steel Yellow Gold",
            "Rolex Submariner 11661OLV typo",
        ] {
            let found = c.title(title);
            assert_eq!(found.model_id, None, "{title}");
            // Only a reference field is known to be a reference: a title names none.
            assert_eq!(found.outcome, MatchOutcome::NoReference, "{title}");
        }
        let found = c.listing(Some("Rolex"), Some("16600"), "Rolex Submariner");
        assert_eq!(found.outcome, MatchOutcome::UnknownReference);
    }

    #[test]
    fn the_longest_brand_name_wins_and_two_brands_are_ambiguous() {
        let c = catalogue();
        let found = c.title("Grand Seiko SBGA211 Snowflake");
        assert_eq!(c.slug_of(found).as_deref(), Some("sbga211"));
        let found = c.title("Rolex Tudor Submariner 16610");
        assert_eq!(found, unmatched(None, MatchOutcome::Ambiguous));
        let found = c.title("Vintage diver 16610");
        assert_eq!(found, unmatched(None, MatchOutcome::UnknownBrand));
    }

    #[test]
    fn a_model_not_yet_written_is_matched_by_the_same_rules() {
        let c = catalogue();
        let rolex = c
            .store
            .catalogue()
            .brand_by_slug(&crate::domain::Slug::parse("rolex").expect("slug"))
            .expect("read")
            .expect("rolex")
            .id;
        let model = |slug: &str| {
            let slug = crate::domain::Slug::parse(slug).expect("slug");
            c.store
                .catalogue()
                .model_by_slug(rolex, &slug)
                .expect("read")
                .expect("model")
        };
        let matched = |catalogue: &dyn MatchCatalogue, title: &str| {
            let details = ListingDetails {
                title: Some(title.to_owned()),
                ..ListingDetails::default()
            };
            match_listing(catalogue, &details).expect("match")
        };
        // A new model: its reference hits, and it is a variant the base reference may mean.
        let mut new = model("sub-16613");
        new.id = ModelId(999);
        new.reference_number = "16613LB".into();
        new.spec.dial_colors = vec!["Blue".into()];
        let pending = WithModel {
            store: &c.store,
            model: &new,
        };
        let title = "Rolex Submariner 16613LB";
        assert_eq!(matched(&c.store, title).outcome, MatchOutcome::NoReference);
        assert_eq!(matched(&pending, title).model_id, Some(ModelId(999)));
        let title = "Rolex Submariner ref.16613 Blue";
        assert_eq!(
            c.slug_of(matched(&c.store, title)).as_deref(),
            Some("sub-16613")
        );
        assert_eq!(matched(&pending, title).outcome, MatchOutcome::Ambiguous);
        // An edited model: its new alternate hits it, once, and its stored references still do.
        let mut edited = model("sub-16800");
        edited.alternate_references.push("16800 X".into());
        let pending = WithModel {
            store: &c.store,
            model: &edited,
        };
        for title in ["Rolex Submariner 16800X", "Rolex Submariner 16800"] {
            assert_eq!(
                matched(&pending, title).model_id,
                Some(edited.id),
                "{title}"
            );
        }
    }

    /// Words sellers write, as the catalogue above knows them or nearly.
    const WORDS: [&str; 32] = [
        "Rolex",
        "rolex",
        "Tudor",
        "Grand",
        "Seiko",
        "Cartier",
        "Submariner",
        "16610",
        "16610LV",
        "LV",
        "16610T",
        "T",
        "5513",
        "5513-E",
        "E",
        "116610LN",
        "Ref.16613",
        "16800",
        "1661",
        "WSSA0037",
        "W6701004",
        "W51008Q3",
        "SBGA211",
        "XL",
        "Kermit",
        "Green",
        "black",
        "2005",
        "(No Date)16610",
        "-",
        "Datejust",
        "1601",
    ];

    fn seller_text(picks: &[usize]) -> Option<String> {
        let words: Vec<&str> = picks.iter().map(|&i| WORDS[i % WORDS.len()]).collect();
        (!words.is_empty()).then(|| words.join(" "))
    }

    #[test]
    fn a_loaded_catalogue_decides_like_the_store_on_random_listings() {
        use proptest::prelude::*;
        let c = catalogue();
        let loaded = crate::jobs::loaded_catalogue::LoadedCatalogue::load(&c.store).expect("load");
        assert!(loaded.reference_count() >= MODELS.len());
        // Brand fields from the brand words, reference fields mostly from the references.
        let listing = (
            proptest::collection::vec(0..6usize, 0..3),
            proptest::collection::vec(6..WORDS.len(), 0..3),
            proptest::collection::vec(0..WORDS.len(), 0..8),
        );
        let matched = AtomicUsize::new(0);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(2000));
        runner
            .run(&listing, |(brand, reference, title)| {
                let details = ListingDetails {
                    title: seller_text(&title),
                    scraped_brand: seller_text(&brand),
                    scraped_reference: seller_text(&reference),
                    ..ListingDetails::default()
                };
                let from_store = match_listing(&c.store, &details).expect("store");
                let from_memory = match_listing(&loaded, &details).expect("memory");
                prop_assert_eq!(from_store, from_memory, "{:?}", details);
                if from_store.model_id.is_some() {
                    matched.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })
            .expect("same decisions");
        // The seed differs per run; over 2000 cases about 125 match (110-138 in 16 runs, sd
        // about 10), so 50 is far below chance and a decision that stopped matching still fails.
        let matched = matched.into_inner();
        assert!(
            matched > 50,
            "the random listings match often enough to tell: {matched} of 2000"
        );
    }

    #[test]
    fn match_tries_the_unmatched_listings_the_index_names_as_a_scan_finds_them() {
        use crate::jobs::ingest::fixture_store_with_feeds;
        use crate::jobs::reindex::rebuild_listings;
        let dir = tempfile::tempdir().expect("dir");
        let store = fixture_store_with_feeds(dir.path());
        let turn = store.write_turn();
        let unmatched = store
            .listings()
            .all_listings()
            .filter(|l| l.as_ref().expect("listing").model_id.is_none())
            .count();
        assert!(unmatched > 10, "{unmatched}");
        let index = ListingIndex::in_memory().expect("index");
        // Behind its store: every listing is read.
        let scanned =
            rematch_unmatched_indexed(&turn, &index, &JobControl::default()).expect("match");
        rebuild_listings(&store, &index).expect("rebuild");
        let indexed =
            rematch_unmatched_indexed(&turn, &index, &JobControl::default()).expect("match");
        for report in [scanned, indexed] {
            assert_eq!((report.tried, report.matched), (unmatched, 0));
            assert_eq!(report.written.listings, 0, "nothing changed");
        }
    }

    /// A `match` job finds its listings before it takes the write turn (D-226): a person's link
    /// made in between is read again once it has the turn, and kept.
    #[test]
    fn a_link_made_between_the_matching_and_the_turn_is_kept() {
        use crate::jobs::ingest::fixture_store_with_feeds;
        use crate::jobs::reindex::rebuild_listings;
        let dir = tempfile::tempdir().expect("dir");
        let store = fixture_store_with_feeds(dir.path());
        let index = ListingIndex::in_memory().expect("index");
        rebuild_listings(&store, &index).expect("rebuild");
        let listing = store
            .listings()
            .all_listings()
            .map(|l| l.expect("listing"))
            .find(|l| {
                l.matching == MatchOutcome::UnknownReference
                    && l.brand_id.is_some()
                    && l.details.scraped_reference.is_some()
            })
            .expect("an unmatched listing of a known brand");
        let models: Vec<Model> = store
            .catalogue()
            .all_models()
            .map(|m| m.expect("model"))
            .filter(|m| Some(m.brand_id) == listing.brand_id)
            .take(2)
            .collect();
        let [taught, linked_to] = &models[..] else {
            panic!("two models of the listing's brand");
        };
        // A model taught the listing's reference: `match` would match the listing to it.
        let turn = store.write_turn();
        let mut batch = turn.batch().expect("batch");
        let mut with_reference = taught.clone();
        let reference = listing
            .details
            .scraped_reference
            .clone()
            .expect("reference");
        with_reference.alternate_references.push(reference);
        batch.put_model(Some(taught), &with_reference);
        turn.commit(batch).expect("teach");
        drop(turn);
        let ready = RematchReady::of(&store, &index).expect("ready");
        assert!(
            ready
                .changed
                .iter()
                .any(|(l, found)| l.id == listing.id && found.model_id == Some(taught.id)),
            "the job would match the listing to the taught model"
        );
        // Before the job has the turn, a person links the listing to the other model.
        let turn = store.write_turn();
        let mut batch = turn.batch().expect("batch");
        let mut linked = listing.clone();
        linked.apply_match(Match {
            brand_id: listing.brand_id,
            model_id: Some(linked_to.id),
            outcome: MatchOutcome::Linked,
        });
        batch.put_listing(Some(&listing), &linked);
        turn.commit(batch).expect("link");
        drop(turn);
        let turn = store.write_turn();
        rematch_ready(&turn, ready, &JobControl::default()).expect("match");
        let now = store
            .listings()
            .listing(listing.id)
            .expect("read")
            .expect("listing");
        assert_eq!(
            (now.model_id, now.matching),
            (Some(linked_to.id), MatchOutcome::Linked),
            "the person's link stands"
        );
    }

    #[test]
    fn a_reference_field_with_extra_words_is_searched_inside() {
        let c = catalogue();
        for (reference, slug) in [
            ("WSSA0037", "santos-wssa0037"),
            ("wssa0037", "santos-wssa0037"),
            ("XL WSSA0037", "santos-wssa0037"),
            ("SM W6701004", "pasha-w6701004"),
            ("W51008Q3 2300", "santos-w51008q3"),
            ("WSSA0037 or 4072", "santos-wssa0037"),
        ] {
            let found = c.listing(Some("Cartier"), Some(reference), "");
            assert_eq!(c.slug_of(found).as_deref(), Some(slug), "{reference}");
            assert_eq!(found.outcome, MatchOutcome::Matched { from_title: false });
        }
        let found = c.listing(Some("Cartier"), Some("WA0037"), "Cartier WSSA0037");
        assert_eq!(
            found.outcome,
            MatchOutcome::UnknownReference,
            "the title is not read when the seller gave a reference"
        );
        let found = c.listing(Some("Cartier"), Some("-"), "Cartier Santos WSSA0037");
        assert_eq!(c.slug_of(found).as_deref(), Some("santos-wssa0037"));
    }
}
