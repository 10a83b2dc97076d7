//! The catalogue as matching reads it, held in memory for one job: brand aliases and each
//! brand's references, loaded once from the same secondary keys the store-backed matcher reads
//! key by key, so a job matching millions of listings does two prefix scans instead of several
//! per listing. Decisions are the store's (a test compares them on random listings); the few
//! model records the variant rule needs are still read from the store. A job that lets other
//! writers in between its chunks brings it up to what they wrote ([`JobCatalogue::others_wrote`]).

use super::matching::{series_keys, MatchCatalogue, SeriesKeys};
use crate::domain::{BrandId, Model, ModelId, Series, SeriesId};
use crate::store::{Changes, Store, StoreResult, WriteWatch};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::RwLock;

/// Brand aliases and references, as the store held them when loaded. Load it inside the write
/// turn of the job that uses it, so no write changes the catalogue under it but those the job
/// lets in, which it is told of.
pub struct LoadedCatalogue {
    store: Store,
    aliases: HashMap<String, Vec<BrandId>>,
    /// Each brand's normalised references, in byte order (the store's key order), with the
    /// models of each, in id order.
    references: HashMap<BrandId, BTreeMap<String, Vec<ModelId>>>,
    series: HashMap<BrandId, SeriesKeys>,
    /// The series of each model read so far: a model's series is read once per job, not once
    /// per listing of it.
    model_series: RwLock<HashMap<ModelId, SeriesId>>,
}

impl LoadedCatalogue {
    /// Reads every brand alias key and model reference key of `store`.
    pub fn load(store: &Store) -> StoreResult<LoadedCatalogue> {
        let aliases = aliases_of(store)?;
        let mut references: HashMap<BrandId, BTreeMap<String, Vec<ModelId>>> = HashMap::new();
        for entry in store.catalogue().model_reference_keys() {
            let (brand, text, model) = entry?;
            references
                .entry(brand)
                .or_default()
                .entry(text)
                .or_default()
                .push(model);
        }
        Ok(LoadedCatalogue {
            store: store.clone(),
            aliases,
            references,
            series: series_of(store)?,
            model_series: RwLock::new(HashMap::new()),
        })
    }

    /// Brings what is held up to `others`, written since it was loaded: every alias read
    /// again after a brand was written, and each model written taken out and its references,
    /// if it is still there, put back from its record (the store's keys are made of them).
    fn others_wrote(&mut self, others: &Changes) -> StoreResult<()> {
        if !others.brands.is_empty() {
            self.aliases = aliases_of(&self.store)?;
        }
        if !others.series.is_empty() {
            self.series = series_of(&self.store)?;
        }
        let model_series = self
            .model_series
            .get_mut()
            .unwrap_or_else(|e| e.into_inner());
        model_series.retain(|model, _| !others.models.contains(model));
        if others.models.is_empty() {
            return Ok(());
        }
        for references in self.references.values_mut() {
            for models in references.values_mut() {
                models.retain(|model| !others.models.contains(model));
            }
            references.retain(|_, models| !models.is_empty());
        }
        let written: Vec<ModelId> = others.models.iter().copied().collect();
        for model in self.store.catalogue().models(&written)? {
            let references = self.references.entry(model.brand_id).or_default();
            for text in model.normalized_references() {
                let models = references.entry(text).or_default();
                models.push(model.id);
                models.sort_unstable();
                models.dedup();
            }
        }
        Ok(())
    }

    /// References loaded, for reports and tests.
    pub fn reference_count(&self) -> usize {
        self.references.values().map(BTreeMap::len).sum()
    }
}

/// Every brand alias key of `store`: the brands each normalised name, slug or alias names.
/// Every brand's [`SeriesKeys`].
fn series_of(store: &Store) -> StoreResult<HashMap<BrandId, SeriesKeys>> {
    let mut by_brand: HashMap<BrandId, Vec<Series>> = HashMap::new();
    for series in store.catalogue().all_series() {
        let series = series?;
        by_brand.entry(series.brand_id).or_default().push(series);
    }
    Ok(by_brand
        .into_iter()
        .map(|(brand, series)| {
            let slugs = series.iter().map(|s| (s.slug.as_str(), s.id));
            (brand, series_keys(slugs))
        })
        .collect())
}

fn aliases_of(store: &Store) -> StoreResult<HashMap<String, Vec<BrandId>>> {
    let mut aliases: HashMap<String, Vec<BrandId>> = HashMap::new();
    for entry in store.catalogue().brand_alias_keys() {
        let (text, brand) = entry?;
        aliases.entry(text).or_default().push(brand);
    }
    Ok(aliases)
}

impl MatchCatalogue for LoadedCatalogue {
    fn brands_by_alias(&self, normalized: &str) -> StoreResult<Vec<BrandId>> {
        Ok(self.aliases.get(normalized).cloned().unwrap_or_default())
    }

    fn models_by_reference(&self, brand: BrandId, normalized: &str) -> StoreResult<Vec<ModelId>> {
        Ok(self
            .references
            .get(&brand)
            .and_then(|references| references.get(normalized))
            .cloned()
            .unwrap_or_default())
    }

    fn references_extending(
        &self,
        brand: BrandId,
        normalized: &str,
    ) -> StoreResult<Vec<(String, ModelId)>> {
        let Some(references) = self.references.get(&brand) else {
            return Ok(Vec::new());
        };
        let from = (Bound::Excluded(normalized), Bound::Unbounded);
        let mut found = Vec::new();
        for (reference, models) in references.range::<str, _>(from) {
            // Byte order: every reference beginning with `normalized` follows it directly.
            let Some(tail) = reference.strip_prefix(normalized) else {
                break;
            };
            found.extend(models.iter().map(|&model| (tail.to_owned(), model)));
        }
        Ok(found)
    }

    fn models(&self, ids: &[ModelId]) -> StoreResult<Vec<Model>> {
        // Only the variant rule asks, for a few listings: not worth a million records in memory.
        self.store.catalogue().models(ids)
    }

    fn series_keys(&self, brand: BrandId) -> StoreResult<Cow<'_, SeriesKeys>> {
        Ok(match self.series.get(&brand) {
            Some(keys) => Cow::Borrowed(keys),
            None => Cow::Owned(SeriesKeys::new()),
        })
    }

    fn series_of(&self, model: ModelId) -> StoreResult<Option<SeriesId>> {
        let cached = self
            .model_series
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&model)
            .copied();
        if cached.is_some() {
            return Ok(cached);
        }
        let Some(series) = self.store.series_of(model)? else {
            return Ok(None);
        };
        self.model_series
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(model, series);
        Ok(Some(series))
    }
}

/// Listings to match from which a job reads the catalogue from memory ([`LoadedCatalogue`])
/// instead of the store: loading reads every alias and reference key once, where the store
/// answers each listing with several prefix scans (docs/decisions.md, D-32).
pub const LOAD_FROM_LISTINGS: usize = 10_000;

/// What matching reads the catalogue through during one job: the store for a few listings,
/// memory for many.
pub enum JobCatalogue<'a> {
    Store(&'a Store),
    Loaded(Box<LoadedCatalogue>),
}

impl<'a> JobCatalogue<'a> {
    /// The catalogue for a job matching up to `listings` listings.
    pub fn for_listings(store: &'a Store, listings: usize) -> StoreResult<JobCatalogue<'a>> {
        Ok(if listings >= LOAD_FROM_LISTINGS {
            let started = std::time::Instant::now();
            let loaded = LoadedCatalogue::load(store)?;
            tracing::debug!(references = loaded.reference_count(), took = ?started.elapsed(), "catalogue loaded for matching");
            JobCatalogue::Loaded(Box::new(loaded))
        } else {
            JobCatalogue::Store(store)
        })
    }

    pub fn get(&self) -> &dyn MatchCatalogue {
        match self {
            JobCatalogue::Store(store) => *store,
            JobCatalogue::Loaded(loaded) => loaded.as_ref(),
        }
    }

    /// Brings the catalogue up to the writes `others` made while the job let them in (the
    /// store is read as it stands anyway).
    pub fn others_wrote(&mut self, others: &Changes) -> StoreResult<()> {
        match self {
            JobCatalogue::Store(_) => Ok(()),
            JobCatalogue::Loaded(loaded) => loaded.others_wrote(others),
        }
    }
}

/// A job's catalogue read before the job takes the write turn, with the writes committed from
/// then on gathered (D-225, D-226): what a snapshot or `match` job prepares outside the turn
/// reads the store after it begins.
pub struct CatalogueBeforeTheTurn<'a> {
    catalogue: JobCatalogue<'a>,
    since: WriteWatch<'a>,
}

impl<'a> CatalogueBeforeTheTurn<'a> {
    /// Starts gathering the writes, then reads the catalogue for `listings` listings.
    pub fn for_listings(store: &'a Store, listings: usize) -> StoreResult<Self> {
        let since = store.watch_writes();
        let catalogue = JobCatalogue::for_listings(store, listings)?;
        Ok(CatalogueBeforeTheTurn { catalogue, since })
    }

    /// The catalogue read into memory whatever the job's size, as for a large one: for tests
    /// of what it learns of the writes after it.
    #[cfg(test)]
    pub fn loaded(store: &'a Store) -> StoreResult<Self> {
        let since = store.watch_writes();
        let catalogue = JobCatalogue::Loaded(Box::new(LoadedCatalogue::load(store)?));
        Ok(CatalogueBeforeTheTurn { catalogue, since })
    }

    /// What matching reads before the turn.
    pub fn get(&self) -> &dyn MatchCatalogue {
        self.catalogue.get()
    }

    /// Once the job has the turn: the catalogue brought up to what was committed since it began,
    /// and those commits (what the job prepared from them may have to be read again).
    pub fn in_the_turn(self) -> StoreResult<(JobCatalogue<'a>, Changes)> {
        let CatalogueBeforeTheTurn {
            mut catalogue,
            since,
        } = self;
        let others = since.changes();
        catalogue.others_wrote(&others)?;
        Ok((catalogue, others))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::ingest::fixture_store_with_feeds;
    use crate::jobs::matching::match_listing;

    #[test]
    fn the_fixture_listings_match_from_memory_as_ingest_matched_them_from_the_store() {
        let dir = tempfile::tempdir().expect("dir");
        // The fixtures' feeds are small: their ingest matched through the store.
        let store = fixture_store_with_feeds(dir.path());
        let loaded = LoadedCatalogue::load(&store).expect("load");
        let mut listings = 0;
        for listing in store.listings().all_listings() {
            let listing = listing.expect("listing");
            let found = match_listing(&loaded, &listing.details).expect("match");
            assert_eq!(found, listing.current_match(), "{:?}", listing.details);
            listings += 1;
        }
        assert!(listings > 100, "{listings} fixture listings");
    }

    #[test]
    fn a_catalogue_told_what_others_wrote_is_the_catalogue_loaded_after_them() {
        let dir = tempfile::tempdir().expect("dir");
        let store = fixture_store_with_feeds(dir.path());
        let mut loaded = LoadedCatalogue::load(&store).expect("load");
        let models: Vec<Model> = store
            .catalogue()
            .all_models()
            .take(3)
            .collect::<StoreResult<_>>()
            .expect("models");
        let [kept, merged, edited] = &models[..] else {
            panic!("the fixtures have three models");
        };
        let brand = store
            .catalogue()
            .brand(kept.brand_id)
            .expect("read")
            .expect("brand");
        let turn = store.write_turn();
        let mut batch = turn.batch().expect("batch");
        let mut renamed = edited.clone();
        renamed.reference_number = "ZZ-4242".into();
        renamed
            .alternate_references
            .push(kept.reference_number.clone());
        batch.put_model(Some(edited), &renamed);
        batch.merge_model_away(merged, kept.id);
        let mut aliased = brand.clone();
        aliased.aliases.push("Brand Sellers Write".into());
        batch.put_brand(Some(&brand), &aliased);
        turn.commit(batch).expect("commit");
        loaded.others_wrote(&turn.changes()).expect("refresh");
        drop(turn);
        let fresh = LoadedCatalogue::load(&store).expect("load");
        assert_eq!(loaded.aliases, fresh.aliases);
        assert_eq!(loaded.references, fresh.references);
        assert_eq!(
            loaded
                .models_by_reference(renamed.brand_id, "zz4242")
                .expect("read"),
            [renamed.id]
        );
    }
}
