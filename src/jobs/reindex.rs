//! The search indexes (catalogue, listings) built from the store: whole rebuilds on all cores
//! with rayon (`watch-catalogue reindex`, a start behind the store), and the incremental updates
//! the writer makes after each job. Each index commit records the store generation it reflects.

use crate::domain::rates::ConversionTable;
use crate::domain::{
    normalize_reference, text_runs, BoxPapers, Brand, BrandId, Caliber, CaliberId, ClaimedIdentity,
    ComplicationId, GroupKey, Listing, ListingId, Model, ModelId, Series, SeriesId,
};
use crate::store::{Changes, Store, StoreError, StoreGeneration};
use catalogue_index::{
    BrandDoc, CatalogueDoc, CatalogueIndex, DocKind, Filters, IndexError, ListingDoc,
    ListingFilters, ListingIndex, ListingQuery, ListingSort, ModelDoc, ModelSpecDoc, SeriesDoc,
};
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a reindex failed.
#[derive(Debug, thiserror::Error)]
pub enum ReindexError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
    /// Asked to stop (SIGTERM) before its commit: the index is as it was.
    #[error("stopped before the rebuilt index was committed: the server is shutting down; the index is as it was before, and running the reindex again rebuilds it")]
    Stopped,
}

/// What a reindex did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReindexReport {
    pub documents: usize,
    pub generation: u64,
}

/// Every listing matched or linked to `model` now, whatever its status: those the listings
/// index finds for it that the store says are still its (the index may lag a write under way).
pub fn listings_of_model<E: From<StoreError> + From<IndexError>>(
    store: &Store,
    index: &ListingIndex,
    model: ModelId,
) -> Result<Vec<Listing>, E> {
    Ok(first_listings_of_model::<E>(store, index, model, usize::MAX)?.listings)
}

/// The first listings of a model, oldest first: see [`first_listings_of_model`].
pub struct FirstListings {
    /// Those of the first `limit` the index found that the store says are still the model's.
    pub listings: Vec<Listing>,
    /// How many the index found in all.
    pub indexed: usize,
    /// Whether the index found more than `limit`.
    pub more: bool,
}

/// [`listings_of_model`] for the first `limit` the index finds (a large merge moves them a
/// chunk at a time, D-231).
pub fn first_listings_of_model<E: From<StoreError> + From<IndexError>>(
    store: &Store,
    index: &ListingIndex,
    model: ModelId,
    limit: usize,
) -> Result<FirstListings, E> {
    let query = |limit| ListingQuery {
        text: None,
        filters: ListingFilters {
            model_id: Some(model.0),
            ..ListingFilters::default()
        },
        sort: ListingSort::Oldest,
        offset: 0,
        limit,
    };
    let total = index.search(&query(0))?.total;
    let ids = index.search(&query(total.min(limit)))?.ids;
    // In parallel: the records of a model's listings lie apart in the store, and on a store
    // the OS has not cached each read waits on the disk (run on the read pool, many wait at
    // once).
    let read: Vec<Option<Listing>> = ids
        .into_par_iter()
        .map(|id| store.listings().listing(ListingId(id)))
        .collect::<Result<_, _>>()?;
    Ok(FirstListings {
        listings: read
            .into_iter()
            .flatten()
            .filter(|listing| listing.model_id == Some(model))
            .collect(),
        indexed: total,
        more: total > limit,
    })
}

/// True when the catalogue index reflects the store's last write.
pub fn catalogue_is_current(store: &Store, index: &CatalogueIndex) -> Result<bool, ReindexError> {
    Ok(index.generation()? == Some(store.generation()?.0))
}

/// True when the listings index reflects the store's last listings write (a write of only
/// catalogue records leaves it current).
pub fn listings_are_current(store: &Store, index: &ListingIndex) -> Result<bool, ReindexError> {
    let needed = store.listings_generation()?.0;
    Ok(index.generation()?.is_some_and(|g| g >= needed))
}

/// Rebuilds `index` from `store`.
pub fn rebuild(store: &Store, index: &CatalogueIndex) -> Result<ReindexReport, ReindexError> {
    rebuild_unless(store, index, &|| false)
}

/// [`rebuild`], given up before its commit once `stop` says so.
pub fn rebuild_unless(
    store: &Store,
    index: &CatalogueIndex,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<ReindexReport, ReindexError> {
    // Read the generation first: a write landing during the rebuild leaves the index marked
    // behind, so it is caught up again rather than wrongly taken as current.
    let generation = store.generation()?.0;
    let brands: Vec<Brand> = store.catalogue().brands().collect::<Result<_, _>>()?;
    let series: Vec<Series> = store.catalogue().all_series().collect::<Result<_, _>>()?;
    let models_per_brand = Counts::of(brands.iter().map(|b| b.id));
    let models_per_series = Counts::of(series.iter().map(|s| s.id));
    let brand_by_id: HashMap<BrandId, &Brand> = brands.iter().map(|b| (b.id, b)).collect();
    let series_by_id: HashMap<SeriesId, &Series> = series.iter().map(|s| (s.id, s)).collect();
    let movements = all_movements(store)?;

    // Each model's document is made as it is read, and the model dropped: a million models
    // held at once raised an import's peak (docs/decisions.md, D-43).
    let model_docs = store.catalogue().all_models_parallel().map(|model| {
        if stop() {
            return Err(ReindexError::Stopped);
        }
        let model = model?;
        let listings = store.listings().listing_count(model.id)?;
        models_per_brand.add(model.brand_id);
        models_per_series.add(model.series_id);
        Ok::<_, ReindexError>(CatalogueDoc::Model(model_doc(
            &model,
            brand_by_id.get(&model.brand_id).copied(),
            series_by_id.get(&model.series_id).copied(),
            model.caliber_id.and_then(|id| movements.get(&id)),
            listings,
        )))
    });
    let counted_docs = || {
        let brand_docs = brands
            .iter()
            .map(|brand| CatalogueDoc::Brand(brand_doc(brand, models_per_brand.get(brand.id))));
        let series_docs = series
            .iter()
            .map(|s| CatalogueDoc::Series(series_doc(s, models_per_series.get(s.id))));
        brand_docs.chain(series_docs).collect()
    };
    let documents = index.rebuild_then(model_docs, counted_docs, generation)?;
    Ok(ReindexReport {
        documents,
        generation,
    })
}

/// Models counted per brand or series from rayon's threads as they are read.
struct Counts<K>(HashMap<K, AtomicU64>);

impl<K: std::hash::Hash + Eq + Copy> Counts<K> {
    fn of(keys: impl Iterator<Item = K>) -> Counts<K> {
        Counts(keys.map(|key| (key, AtomicU64::new(0))).collect())
    }

    /// One more model of `key`; a model of a brand or series not read has no document to count
    /// it in.
    fn add(&self, key: K) {
        if let Some(count) = self.0.get(&key) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn get(&self, key: K) -> u64 {
        self.0.get(&key).map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

fn brand_doc(brand: &Brand, model_count: u64) -> BrandDoc {
    BrandDoc {
        id: brand.id.0,
        name: brand.name.clone(),
        aliases: brand.aliases.clone(),
        description: brand.description.clone(),
        model_count,
    }
}

fn series_doc(series: &Series, model_count: u64) -> SeriesDoc {
    SeriesDoc {
        id: series.id.0,
        brand_id: series.brand_id.0,
        name: series.name.clone(),
        description: series.description.clone(),
        model_count,
    }
}

/// What a model's document reads of its calibre: the type and the complications' slugs.
#[derive(Debug, Clone, Default)]
pub struct Movement {
    kind: Option<String>,
    complications: Vec<String>,
}

impl Movement {
    fn of(
        caliber: &Caliber,
        slug_of: impl Fn(ComplicationId) -> Result<Option<String>, StoreError>,
    ) -> Result<Movement, StoreError> {
        let mut complications = Vec::with_capacity(caliber.complication_ids.len());
        for &id in &caliber.complication_ids {
            complications.extend(slug_of(id)?);
        }
        Ok(Movement {
            kind: caliber.kind.clone(),
            complications,
        })
    }

    /// The movement of the calibre `id`, read from the store.
    fn read(store: &Store, id: CaliberId) -> Result<Option<Movement>, StoreError> {
        let Some(caliber) = store.catalogue().caliber(id)? else {
            return Ok(None);
        };
        let slug_of = |c| {
            Ok(store
                .catalogue()
                .complication(c)?
                .map(|c| c.slug.to_string()))
        };
        Movement::of(&caliber, slug_of).map(Some)
    }
}

/// Every calibre's movement, read once for a rebuild.
fn all_movements(store: &Store) -> Result<HashMap<CaliberId, Movement>, StoreError> {
    let slugs: HashMap<ComplicationId, String> = store
        .catalogue()
        .complications()
        .map(|c| c.map(|c| (c.id, c.slug.to_string())))
        .collect::<Result<_, _>>()?;
    store
        .catalogue()
        .calibers()
        .map(|caliber| {
            let caliber = caliber?;
            let movement = Movement::of(&caliber, |id| Ok(slugs.get(&id).cloned()))?;
            Ok((caliber.id, movement))
        })
        .collect()
}

/// The index document of `model`.
pub fn model_doc(
    model: &Model,
    brand: Option<&Brand>,
    series: Option<&Series>,
    movement: Option<&Movement>,
    listing_count: u64,
) -> ModelDoc {
    let spec = &model.spec;
    ModelDoc {
        id: model.id.0,
        brand_id: model.brand_id.0,
        series_id: model.series_id.0,
        caliber_id: model.caliber_id.map(|c| c.0),
        name: model.name.clone(),
        brand_names: brand
            .map(|b| {
                std::iter::once(&b.name)
                    .chain(&b.aliases)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default(),
        series_name: series.map(|s| s.name.clone()).unwrap_or_default(),
        description: model.description.clone(),
        normalized_references: model.references().map(normalize_reference).collect(),
        release_year: model.spec.release_year,
        diameter: model.spec.diameter,
        case_materials: model.spec.case_materials.clone(),
        spec: ModelSpecDoc {
            dial_colors: spec.dial_colors.clone(),
            bezel_materials: spec.bezel_materials.clone(),
            band_materials: spec.band_materials.clone(),
            movement_type: movement.and_then(|m| m.kind.clone()),
            complications: movement
                .map(|m| m.complications.clone())
                .unwrap_or_default(),
            water_resistance: spec.water_resistance,
            limited: spec.limited_amount.is_some(),
            discontinued: spec.discontinuation_year.is_some(),
        },
        listing_count,
        has_front_picture: model.front_picture().is_some(),
    }
}

/// Rebuilds the listings index from the store, on all cores, pricing listings through the
/// rates in force.
pub fn rebuild_listings(
    store: &Store,
    index: &ListingIndex,
) -> Result<ReindexReport, ReindexError> {
    rebuild_listings_unless(store, index, &|| false)
}

/// [`rebuild_listings`], given up before its commit once `stop` says so.
pub fn rebuild_listings_unless(
    store: &Store,
    index: &ListingIndex,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<ReindexReport, ReindexError> {
    let generation = store.generation()?.0;
    let table = store.rates().table_in_force()?;
    let documents = index.rebuild(
        store.listings().all_listings_parallel().map(|listing| {
            if stop() {
                return Err(ReindexError::Stopped);
            }
            Ok(listing_doc(&listing?, table.as_ref()))
        }),
        generation,
    )?;
    Ok(ReindexReport {
        documents,
        generation,
    })
}

/// Share of the index above which a write is taken in by a whole rebuild: deleting and
/// re-adding most documents one by one costs more than indexing them afresh on all cores
/// (docs/decisions.md, D-13).
const REBUILD_ABOVE_SHARE: f64 = 0.25;

/// Takes a turn's listing writes into the listings index: only the listings written, read back
/// from the store, when the index was current before the turn and the write is small; else a
/// whole rebuild (also when the rates moved every US dollar price).
pub fn index_listing_changes(
    store: &Store,
    index: &ListingIndex,
    changes: &Changes,
    listings_generation_before: StoreGeneration,
) -> Result<ReindexReport, ReindexError> {
    let at = index.generation()?;
    if changes.listings.is_empty() && !changes.rates {
        return Ok(ReindexReport {
            documents: 0,
            generation: at.unwrap_or_default(),
        });
    }
    if at.is_some_and(|g| g >= changes.generation.0) {
        // A rebuild since the write already read it.
        return Ok(ReindexReport {
            documents: 0,
            generation: changes.generation.0,
        });
    }
    let current_before = at.is_some_and(|g| g >= listings_generation_before.0);
    let mut ids = changes.listings.clone();
    ids.sort_unstable();
    ids.dedup();
    let large = ids.len() as f64 > index.len() as f64 * REBUILD_ABOVE_SHARE;
    if changes.rates || !current_before || !changes.is_contiguous() || (large && ids.len() > 1000) {
        return rebuild_listings(store, index);
    }
    let table = store.rates().table_in_force()?;
    // Read back from the store: the newest version of each, which is what the index must hold.
    let docs: Vec<ListingDoc> = ids
        .par_iter()
        .filter_map(|&id| store.listings().listing(id).transpose())
        .map(|listing| Ok(listing_doc(&listing?, table.as_ref())))
        .collect::<Result<_, StoreError>>()?;
    index.upsert(&docs, changes.generation.0)?;
    Ok(ReindexReport {
        documents: docs.len(),
        generation: changes.generation.0,
    })
}

/// Models a turn may change before the catalogue index takes them as many: their documents
/// patched and the index merged into one segment, or, when their words changed, rebuilt.
pub const PATCH_MODELS_AT_MOST: usize = 10_000;

/// Takes a turn's catalogue changes into the catalogue index in one commit: the documents of
/// the models written or recounted, and of the brands and series whose model counts may have
/// moved, when the index was current before the turn; else (a rename, a large import, a write between)
/// a whole rebuild. More than `patch_at_most` models ([`PATCH_MODELS_AT_MOST`]) leave the index
/// in one segment.
pub fn index_catalogue_changes(
    store: &Store,
    index: &CatalogueIndex,
    changes: &Changes,
    generation_before: StoreGeneration,
    patch_at_most: usize,
) -> Result<ReindexReport, ReindexError> {
    let generation = changes.generation.0;
    let at = index.generation()?;
    if changes.commits == 0 || at.is_some_and(|g| g >= generation) {
        return Ok(ReindexReport {
            documents: 0,
            generation: at.unwrap_or_default(),
        });
    }
    let models: BTreeSet<ModelId> = changes.models.union(&changes.recounted).copied().collect();
    // A model written with the words it had (its pictures, its specification) moves no
    // listing group's candidates: the model text edition stands (D-207).
    let words_written = changes.model_words;
    let many = models.len() > patch_at_most;
    if at != Some(generation_before.0)
        || !changes.is_contiguous()
        || changes.renamed
        || (many && (words_written || most_of_the_catalogue(index, models.len())?))
    {
        return rebuild(store, index);
    }
    let read_one = |&id: &ModelId| Ok((id, model_document(store, id)?));
    // On all cores only for many: a back-office write's few models are read on its own
    // thread, never queued behind a job's work in rayon's pool.
    let read: Vec<(ModelId, Option<CatalogueDoc>)> = if many {
        models
            .par_iter()
            .map(read_one)
            .collect::<Result<_, ReindexError>>()?
    } else {
        models
            .iter()
            .map(read_one)
            .collect::<Result<_, ReindexError>>()?
    };
    let mut docs = Vec::with_capacity(read.len());
    let mut removed = Vec::new();
    for (id, doc) in read {
        match doc {
            Some(doc) => docs.push(doc),
            None => removed.push(id.0),
        }
    }
    // Counted against the index before this commit: it still holds the turn's starting point.
    docs.extend(count_documents(store, index, changes)?);
    if many {
        // A snapshot recounted a large share of the catalogue: its documents patched, the
        // index merged into one segment as a rebuild would leave it (D-246).
        tracing::debug!(documents = docs.len(), "catalogue patched as many");
        index.update_many(&docs, &removed, generation)?;
    } else if words_written || !removed.is_empty() {
        index.update_and_remove(&docs, &removed, generation)?;
    } else {
        // Listings linked, matched or delisted, or a model's pictures or specification
        // changed: the models' words are those indexed.
        index.update_counts(&docs, generation)?;
    }
    Ok(ReindexReport {
        documents: docs.len(),
        generation,
    })
}

/// Whether `changed` models are enough of the catalogue that indexing every model again costs
/// less than indexing them and merging the rest: read and indexed, a changed document costs
/// about seven times what a merged one does (docs/decisions.md, D-246), so past about two in five.
fn most_of_the_catalogue(index: &CatalogueIndex, changed: usize) -> Result<bool, ReindexError> {
    let models = index.count(DocKind::Model, &Filters::default())?;
    Ok(changed * 5 > models * 2)
}

/// Model `id`'s document as the store holds it now, with its listing count; `None` when the
/// model is gone (merged away).
fn model_document(store: &Store, id: ModelId) -> Result<Option<CatalogueDoc>, ReindexError> {
    let Some(model) = store.catalogue().model(id)? else {
        return Ok(None);
    };
    let brand = store.catalogue().brand(model.brand_id)?;
    let series = store.catalogue().series(model.series_id)?;
    let movement = match model.caliber_id {
        Some(caliber) => Movement::read(store, caliber)?,
        None => None,
    };
    let count = store.listings().listing_count(id)?;
    Ok(Some(CatalogueDoc::Model(model_doc(
        &model,
        brand.as_ref(),
        series.as_ref(),
        movement.as_ref(),
        count,
    ))))
}

/// The brand and series documents of a turn's changes, each with its model count: the count
/// in `index` (as it was before the turn) plus the models the turn moved in or out.
fn count_documents(
    store: &Store,
    index: &CatalogueIndex,
    changes: &Changes,
) -> Result<Vec<CatalogueDoc>, ReindexError> {
    let models_in = |filters: Filters, moved: Option<&i64>| -> Result<u64, ReindexError> {
        let before = index.count(DocKind::Model, &filters)? as i64;
        Ok((before + moved.copied().unwrap_or(0)).max(0) as u64)
    };
    let mut docs = Vec::new();
    for &id in &changes.brands {
        if let Some(brand) = store.catalogue().brand(id)? {
            let filters = Filters {
                brand_id: Some(id.0),
                ..Filters::default()
            };
            let model_count = models_in(filters, changes.brand_models.get(&id))?;
            docs.push(CatalogueDoc::Brand(brand_doc(&brand, model_count)));
        }
    }
    for &id in &changes.series {
        if let Some(series) = store.catalogue().series(id)? {
            let filters = Filters {
                series_id: Some(id.0),
                ..Filters::default()
            };
            let model_count = models_in(filters, changes.series_models.get(&id))?;
            docs.push(CatalogueDoc::Series(series_doc(&series, model_count)));
        }
    }
    Ok(docs)
}

/// True when `a` and `b` have the same index document ([`listing_doc`] reads exactly these
/// fields): a refreshed listing whose seller changed nothing needs no index write.
pub fn indexed_alike(a: &Listing, b: &Listing) -> bool {
    a.id == b.id
        && a.provider_id == b.provider_id
        && a.model_id == b.model_id
        && a.brand_id == b.brand_id
        && a.matching.reason_code() == b.matching.reason_code()
        && a.status == b.status
        && a.details == b.details
}

/// The index document of `listing`, its US dollar price through `table`.
pub fn listing_doc(listing: &Listing, table: Option<&ConversionTable>) -> ListingDoc {
    let details = &listing.details;
    let claimed = ClaimedIdentity::of_grouped(listing);
    ListingDoc {
        id: listing.id.0,
        provider_id: listing.provider_id.0,
        model_id: listing.model_id.map(|m| m.0),
        brand_id: listing.brand_id.map(|b| b.0),
        unmatched_reason: listing.matching.reason_code(),
        status: listing.status as u64,
        condition: details.condition.map(|c| c as u64),
        availability: details.availability.map(|a| a as u64),
        box_papers: BoxPapers::of(details.box_available, details.papers_available)
            .map(|b| b as u64),
        price: details.price,
        currency: details.currency.clone(),
        price_usd: table.and_then(|t| t.usd_price(details.price, details.currency.as_deref())),
        title: details.title.clone(),
        scraped_brand: details.scraped_brand.clone(),
        scraped_reference: details.scraped_reference.clone(),
        normalized_reference: details
            .scraped_reference
            .as_deref()
            .map(normalize_reference),
        title_references: title_references(details.title.as_deref().unwrap_or("")),
        unmatched_group: claimed.as_ref().map(|identity| GroupKey::of(identity).0),
        claimed_brand_text: claimed.and_then(ClaimedIdentity::brand_text),
    }
}

/// The runs of a title that may be references (the ones with a digit), each once: what
/// matching reads, so a listing found by its title's reference is found by searching for it.
fn title_references(title: &str) -> Vec<String> {
    let mut keys: Vec<String> = text_runs(title)
        .into_iter()
        .map(|run| run.key)
        .filter(|key| key.chars().any(|c| c.is_ascii_digit()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}
