//! `watch-catalogue reindex`: rebuilds the search indexes (catalogue, listings) from the store,
//! building documents on all cores with rayon. Each index commit records the store generation
//! read. A listings write is taken into the listings index incrementally.

use super::listing_writes::WrittenListings;
use crate::domain::{
    normalize_reference, text_runs, Brand, BrandId, Listing, Model, Series, SeriesId,
};
use crate::rates::{table_in_force, ConversionTable};
use crate::store::{Store, StoreError, StoreGeneration};
use catalogue_index::{
    BrandDoc, CatalogueDoc, CatalogueIndex, IndexError, ListingDoc, ListingIndex, ModelDoc,
    SeriesDoc,
};
use rayon::prelude::*;
use std::collections::HashMap;

/// Why a reindex failed.
#[derive(Debug, thiserror::Error)]
pub enum ReindexError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
}

/// What a reindex did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReindexReport {
    pub documents: usize,
    pub generation: u64,
}

/// Rebuilds `index` from `store`.
pub fn rebuild(store: &Store, index: &CatalogueIndex) -> Result<ReindexReport, ReindexError> {
    // Read the generation first: a write landing during the rebuild leaves the index marked
    // behind, so it is caught up again rather than wrongly taken as current.
    let generation = store.generation()?.0;
    let brands: Vec<Brand> = store.brands().collect::<Result<_, _>>()?;
    let series: Vec<Series> = store.all_series().collect::<Result<_, _>>()?;
    let models: Vec<(Model, u64)> = store
        .all_models_parallel()
        .map(|model| {
            let model = model?;
            let listings = store.listing_count(model.id)?;
            Ok((model, listings))
        })
        .collect::<Result<_, StoreError>>()?;

    let mut models_per_brand: HashMap<BrandId, u64> = HashMap::new();
    let mut models_per_series: HashMap<SeriesId, u64> = HashMap::new();
    for (model, _) in &models {
        *models_per_brand.entry(model.brand_id).or_default() += 1;
        *models_per_series.entry(model.series_id).or_default() += 1;
    }
    let brand_by_id: HashMap<BrandId, &Brand> = brands.iter().map(|b| (b.id, b)).collect();
    let series_by_id: HashMap<SeriesId, &Series> = series.iter().map(|s| (s.id, s)).collect();

    let brand_docs = brands.par_iter().map(|brand| {
        CatalogueDoc::Brand(BrandDoc {
            id: brand.id.0,
            name: brand.name.clone(),
            aliases: brand.aliases.clone(),
            description: brand.description.clone(),
            model_count: models_per_brand.get(&brand.id).copied().unwrap_or(0),
        })
    });
    let series_docs = series.par_iter().map(|s| {
        CatalogueDoc::Series(SeriesDoc {
            id: s.id.0,
            brand_id: s.brand_id.0,
            name: s.name.clone(),
            description: s.description.clone(),
            model_count: models_per_series.get(&s.id).copied().unwrap_or(0),
        })
    });
    let model_docs = models.par_iter().map(|(model, listings)| {
        CatalogueDoc::Model(model_doc(
            model,
            brand_by_id.get(&model.brand_id).copied(),
            series_by_id.get(&model.series_id).copied(),
            *listings,
        ))
    });
    let documents = index.rebuild(brand_docs.chain(series_docs).chain(model_docs), generation)?;
    Ok(ReindexReport {
        documents,
        generation,
    })
}

/// The index document of `model`.
pub fn model_doc(
    model: &Model,
    brand: Option<&Brand>,
    series: Option<&Series>,
    listing_count: u64,
) -> ModelDoc {
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
    let generation = store.generation()?.0;
    let table = table_in_force(store)?;
    let documents = index.rebuild(
        store
            .all_listings_parallel()
            .map(|listing| Ok::<_, ReindexError>(listing_doc(&listing?, table.as_ref()))),
        generation,
    )?;
    Ok(ReindexReport {
        documents,
        generation,
    })
}

/// Share of the index above which a write is taken in by a whole rebuild: deleting and
/// re-adding most documents one by one costs more than indexing them afresh on all cores
/// (27.7 s against 15.0 s for 1M listings, bench/RESULTS.md).
const REBUILD_ABOVE_SHARE: f64 = 0.25;

/// Takes the listings of a committed write into the listings index: only those listings when
/// the index was current before the write and the write is small, else a whole rebuild.
pub fn index_written_listings(
    store: &Store,
    index: &ListingIndex,
    written: &WrittenListings,
    listings_generation_before: StoreGeneration,
) -> Result<ReindexReport, ReindexError> {
    let at = index.generation()?;
    if at.is_some_and(|g| g >= written.generation.0) {
        // A rebuild since the write already read it.
        return Ok(ReindexReport {
            documents: 0,
            generation: written.generation.0,
        });
    }
    let current_before = at.is_some_and(|g| g >= listings_generation_before.0);
    let written_count = written.ids.len();
    let large = written_count as f64 > index.len() as f64 * REBUILD_ABOVE_SHARE;
    if !current_before || !written.is_contiguous() || (large && written_count > 1000) {
        return rebuild_listings(store, index);
    }
    let table = table_in_force(store)?;
    // Read back from the store: the newest version of each, which is what the index must hold.
    let docs: Vec<ListingDoc> = written
        .ids
        .par_iter()
        .filter_map(|&id| store.listing(id).transpose())
        .map(|listing| Ok(listing_doc(&listing?, table.as_ref())))
        .collect::<Result<_, StoreError>>()?;
    index.upsert(&docs, written.generation.0)?;
    Ok(ReindexReport {
        documents: docs.len(),
        generation: written.generation.0,
    })
}

/// Takes the new listing counts of a committed listings write into the catalogue index, when it
/// was current just before the write; returns false when it was not (a rebuild is needed).
pub fn recount_models(
    store: &Store,
    index: &CatalogueIndex,
    written: &WrittenListings,
) -> Result<bool, ReindexError> {
    let generation = written.generation.0;
    match index.generation()? {
        Some(at) if at == generation => return Ok(true),
        Some(at) if at + 1 == written.first_generation.0 && written.is_contiguous() => {}
        _ => return Ok(false),
    }
    let mut docs = Vec::with_capacity(written.recounted.len());
    for &id in &written.recounted {
        let Some(model) = store.model(id)? else {
            continue;
        };
        let brand = store.brand(model.brand_id)?;
        let series = store.series(model.series_id)?;
        let count = store.listing_count(id)?;
        docs.push(model_doc(&model, brand.as_ref(), series.as_ref(), count));
    }
    index.update_models(&docs, generation)?;
    Ok(true)
}

/// The index document of `listing`, its US dollar price through `table`.
pub fn listing_doc(listing: &Listing, table: Option<&ConversionTable>) -> ListingDoc {
    let details = &listing.details;
    ListingDoc {
        id: listing.id.0,
        provider_id: listing.provider_id.0,
        model_id: listing.model_id.map(|m| m.0),
        brand_id: listing.brand_id.map(|b| b.0),
        status: listing.status as u64,
        condition: details.condition.map(|c| c as u64),
        availability: details.availability.map(|a| a as u64),
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
