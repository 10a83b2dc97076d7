//! `catalogue-index`: the tantivy side of the watch catalogue. Brands, series and models are
//! documents of one index; every search, filter, sort, stat and sitemap page is answered here
//! as ids plus totals, and the caller reads the records from its store.
//!
//! The crate knows nothing of the store: callers hand it plain documents ([`BrandDoc`],
//! [`SeriesDoc`], [`ModelDoc`]) with references already normalised, and get ids back.

mod by_name;
mod collector;
mod derived;
mod docs;
mod facets;
mod folder;
mod generation_cache;
mod listings;
mod model_texts;
mod not_models;
mod pruned;
mod query;
mod schema;
mod segment_cache;
mod spec;
mod starting_with;
mod summary;
mod tokenizer;
mod top_k;
mod typos;
mod updates_merge;

pub use collector::{CatalogueStats, SortKey};
pub use derived::{flags_of_mappings_in, FileAccess};
pub use docs::{BrandDoc, CatalogueDoc, ModelDoc, ModelSpecDoc, SeriesDoc};
pub use facets::{Facet, FacetCounts, FacetValue};
pub use listings::{
    GroupCounts, GroupedPrices, ListingDoc, ListingFilters, ListingIndex, ListingLoad,
    ListingQuery, ListingSort, PriceGrouping, PricePoint, PricedListings,
};
pub use model_texts::ModelText;
pub use query::{Bounds, DocKind, Filters, SearchRequest, SortOrder, SpecFilters, TextQuery};
pub use spec::{spec_key, SpecTerm};
pub use summary::{BrandSummary, GroupSummaries, SeriesSummary};
pub use tokenizer::{ReferencePrefixTokenizer, MIN_REFERENCE_PREFIX};

use collector::{StatsCollector, TopIds};
use derived::{Derived, RebuildShape};
pub use generation_cache::GenerationCache;
use rayon::prelude::*;
use schema::Fields;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use summary::SummaryCache;
use tantivy::Searcher;

/// Failures of the index layer.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("search index")]
    Tantivy(#[from] tantivy::TantivyError),
    #[error("search index directory")]
    Directory(#[from] tantivy::directory::error::OpenDirectoryError),
    #[error("search index I/O")]
    Io(#[from] std::io::Error),
}

/// Result alias of the index layer.
pub type IndexResult<T> = Result<T, IndexError>;

/// One page of matching ids, in order, and how many documents matched in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hits {
    pub ids: Vec<u64>,
    pub total: usize,
}

impl Hits {
    /// The page of `request` out of its best `offset + limit`.
    fn page(ranked: Vec<u64>, total: usize, request: &SearchRequest) -> Hits {
        let ids = ranked
            .into_iter()
            .skip(request.offset)
            .take(request.limit)
            .collect();
        Hits { ids, total }
    }
}

/// Whether a search may take the pruned path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pruning {
    WhereItApplies,
    Never,
}

/// The catalogue index: open once, share between threads.
pub struct CatalogueIndex {
    derived: Derived,
    fields: Fields,
    summaries: Arc<SummaryCache>,
    dense_words: pruned::DenseWords,
    facet_cache: facets::FacetCache,
    word_forms: typos::WordForms,
    id_columns: segment_cache::IdColumns,
    not_models: not_models::NotModelsCache,
    /// See [`CatalogueIndex::model_text_edition`].
    model_text_edition: AtomicU64,
}

impl CatalogueIndex {
    /// Opens the index in `dir`, creating or recreating it as needed (see [`Derived::open`]).
    pub fn open(dir: &Path) -> IndexResult<CatalogueIndex> {
        CatalogueIndex::open_with(dir, FileAccess::default())
    }

    /// [`CatalogueIndex::open`], its files read in as `access` says.
    pub fn open_with(dir: &Path, access: FileAccess) -> IndexResult<CatalogueIndex> {
        let (schema, fields) = schema::build();
        let settings = derived::sorted_by(schema::names::ID);
        Ok(CatalogueIndex {
            derived: Derived::open(dir, schema, settings, access)?,
            fields,
            summaries: Arc::default(),
            dense_words: pruned::DenseWords::default(),
            facet_cache: facets::FacetCache::default(),
            word_forms: typos::WordForms::default(),
            id_columns: segment_cache::IdColumns::default(),
            not_models: not_models::NotModelsCache::default(),
            model_text_edition: AtomicU64::new(0),
        })
    }

    /// An index in memory, for tests and benchmarks.
    pub fn in_memory() -> IndexResult<CatalogueIndex> {
        let (schema, fields) = schema::build();
        Ok(CatalogueIndex {
            derived: Derived::in_memory(schema, derived::sorted_by(schema::names::ID))?,
            fields,
            summaries: Arc::default(),
            dense_words: pruned::DenseWords::default(),
            facet_cache: facets::FacetCache::default(),
            word_forms: typos::WordForms::default(),
            id_columns: segment_cache::IdColumns::default(),
            not_models: not_models::NotModelsCache::default(),
            model_text_edition: AtomicU64::new(0),
        })
    }

    /// The same index keeping the common words of segments of any size, as the index of a
    /// large catalogue keeps those of its large segments (tests of what is made from them).
    #[cfg(test)]
    pub(crate) fn keeping_common_words_of_any_segment(mut self) -> CatalogueIndex {
        self.dense_words = pruned::DenseWords::for_segments_of(0);
        self
    }

    /// The store generation the last commit reflects; `None` for an index never built.
    pub fn generation(&self) -> IndexResult<Option<u64>> {
        self.derived.generation()
    }

    /// A number that moves, in this process, after every commit that may have changed the
    /// words of a model's document (a rebuild, a model written or removed) and at no commit
    /// that only recounted ([`CatalogueIndex::update_counts`]): what is worked out from the
    /// models' names and references alone can be kept while it stands, though listings come
    /// and go.
    pub fn model_text_edition(&self) -> u64 {
        self.model_text_edition.load(Ordering::SeqCst)
    }

    /// Moves [`CatalogueIndex::model_text_edition`], once the commit is searchable: a value worked
    /// out meanwhile is kept under the edition it began at, so never outlives it.
    fn model_text_edited(&self) {
        self.model_text_edition.fetch_add(1, Ordering::SeqCst);
    }

    /// Replaces every document with `docs` (built in parallel by the caller's rayon iterator)
    /// and commits with `generation` as payload, in one segment where it fits. Returns the
    /// number of documents indexed.
    pub fn rebuild(
        &self,
        docs: impl ParallelIterator<Item = CatalogueDoc>,
        generation: u64,
    ) -> IndexResult<usize> {
        self.rebuild_then(docs.map(Ok::<_, IndexError>), Vec::new, generation)
    }

    /// [`CatalogueIndex::rebuild`] from documents read as they come (`docs`, whose first
    /// failure stops it before its commit), then the documents `then` makes once those are all
    /// in: a brand's and a series' model counts are known only then, and no model is held
    /// meanwhile.
    pub fn rebuild_then<E: From<IndexError> + Send>(
        &self,
        docs: impl ParallelIterator<Item = Result<CatalogueDoc, E>>,
        then: impl FnOnce() -> Vec<CatalogueDoc>,
        generation: u64,
    ) -> Result<usize, E> {
        let indexed = self.derived.rebuild(
            docs.map(|doc| doc.map(|doc| self.fields.document(&doc))),
            || then().iter().map(|doc| self.fields.document(doc)).collect(),
            generation,
            RebuildShape::OneSegment,
        );
        self.model_text_edited();
        indexed
    }

    /// Lets the writer kept between updates go, its merges done: the next update makes a
    /// writer of its own (see `Derived::replace`).
    pub fn let_go_of_updates(&self) -> IndexResult<()> {
        self.derived.release_updates()
    }

    /// Whether a writer of updates is kept now.
    pub fn keeps_a_writer_of_updates(&self) -> bool {
        self.derived.keeps_a_writer_of_updates()
    }

    /// How many segments the index is searched across.
    pub fn segment_count(&self) -> IndexResult<usize> {
        Ok(self.derived.segment_ids()?.len())
    }

    /// Writes `docs` over the documents of the same kind and id (a model's listing count
    /// changed, a model was added), and commits with `generation`.
    pub fn update(&self, docs: &[CatalogueDoc], generation: u64) -> IndexResult<()> {
        self.update_and_remove(docs, &[], generation)
    }

    /// [`CatalogueIndex::update`] of documents whose words are those the index holds: only
    /// their counts changed (a model's listings, a brand's models), so the
    /// [`CatalogueIndex::model_text_edition`] stands.
    pub fn update_counts(&self, docs: &[CatalogueDoc], generation: u64) -> IndexResult<()> {
        self.replace(docs, &[], generation)
    }

    /// [`CatalogueIndex::update`], also removing the documents of the models `removed` (merged
    /// away).
    pub fn update_and_remove(
        &self,
        docs: &[CatalogueDoc],
        removed: &[u64],
        generation: u64,
    ) -> IndexResult<()> {
        let replaced = self.replace(docs, removed, generation);
        self.model_text_edited();
        replaced
    }

    /// [`CatalogueIndex::update_and_remove`] of a large share of the catalogue (a snapshot's
    /// recounted models), left in one segment as a rebuild leaves it, for less work than a
    /// rebuild: only `docs` are indexed, the rest merged. The caller has kept the models' words
    /// as indexed; a model removed moves the [`CatalogueIndex::model_text_edition`].
    pub fn update_many(
        &self,
        docs: &[CatalogueDoc],
        removed: &[u64],
        generation: u64,
    ) -> IndexResult<()> {
        let replaced = self
            .derived
            .replace_into_one_segment(self.changes(docs, removed), generation);
        if !removed.is_empty() {
            self.model_text_edited();
        }
        replaced
    }

    /// Writes `docs` over the documents of the same kind and id, removes the models
    /// `removed`, and commits with `generation`.
    fn replace(&self, docs: &[CatalogueDoc], removed: &[u64], generation: u64) -> IndexResult<()> {
        self.derived
            .replace(self.changes(docs, removed), generation)
    }

    /// What writing `docs` and removing the models `removed` is to the index: each document's
    /// key deleted, and its new document added.
    fn changes<'a>(
        &'a self,
        docs: &'a [CatalogueDoc],
        removed: &'a [u64],
    ) -> impl Iterator<
        Item = (
            Box<dyn tantivy::query::Query>,
            Option<tantivy::TantivyDocument>,
        ),
    > + 'a {
        let model_key =
            |id| query::term_u64(self.fields.doc_key, schema::doc_key(DocKind::Model, id));
        let updates = docs.iter().map(|doc| {
            let (kind, id) = match doc {
                CatalogueDoc::Brand(brand) => (DocKind::Brand, brand.id),
                CatalogueDoc::Series(series) => (DocKind::Series, series.id),
                CatalogueDoc::Model(model) => (DocKind::Model, model.id),
            };
            let key = schema::doc_key(kind, id);
            (
                query::term_u64(self.fields.doc_key, key),
                Some(self.fields.document(doc)),
            )
        });
        let removals = removed.iter().map(move |&id| (model_key(id), None));
        updates.chain(removals)
    }

    /// Ids of one page of `request`, and the total number of matches. A relevance-ordered text
    /// search of models is pruned ([`pruned`]); everything else scores and collects every match.
    pub fn search(&self, request: &SearchRequest) -> IndexResult<Hits> {
        self.search_with(request, Pruning::WhereItApplies)
    }

    /// [`CatalogueIndex::search`] with every match scored and collected, never pruned: what the
    /// pruned search is tested and measured against.
    pub fn search_exhaustively(&self, request: &SearchRequest) -> IndexResult<Hits> {
        self.search_with(request, Pruning::Never)
    }

    /// With typo tolerance, a relevance order puts every exact match first, as the search
    /// without it ranks them, then the matches with typos or a prefix; other orders sort both
    /// alike. One searcher answers the whole request, so both tiers count the same commit.
    fn search_with(&self, request: &SearchRequest, pruning: Pruning) -> IndexResult<Hits> {
        let searcher = self.derived.reader.searcher();
        let k = request.offset.saturating_add(request.limit);
        let loose = self.loose_matches(&searcher, request)?;
        let (ranked, total) = match (loose, request.sort) {
            (None, _) => self.exact_ranked(&searcher, request, k, pruning)?,
            (Some((text, loose)), SortOrder::Relevance) => {
                let (mut ranked, total) = self.exact_ranked(&searcher, request, k, pruning)?;
                let rest = k.saturating_sub(ranked.len());
                let tier = || {
                    loose.tier(
                        &searcher,
                        &self.fields,
                        request,
                        &text,
                        &self.not_models,
                        &self.dense_words,
                    )
                };
                let ranked_tier = match (rest, pruning) {
                    (0, _) | (_, Pruning::Never) => None,
                    _ => tier()?.ranked(&searcher, rest, &self.id_columns)?,
                };
                let only_loose = || -> IndexResult<Box<dyn tantivy::query::Query>> {
                    let query = loose.query(&searcher, &self.fields)?;
                    Ok(query::only_loosely(&self.fields, request, &text, query))
                };
                // A page the exact matches fill needs only the loose ones' number, which
                // counts without scoring.
                let more_total = match (rest, ranked_tier, pruning) {
                    (0, _, Pruning::WhereItApplies) => tier()?.counted(&searcher)?,
                    (0, _, Pruning::Never) => {
                        searcher.search(&*only_loose()?, &tantivy::collector::Count)?
                    }
                    (_, found, _) => {
                        let (more, more_total) = match found {
                            Some(found) => found,
                            None => ranked_in(&searcher, &*only_loose()?, SortKey::Score, rest)?,
                        };
                        ranked.extend(more);
                        more_total
                    }
                };
                (ranked, total + more_total)
            }
            (Some((text, loose)), sort) => {
                let loose = loose.query(&searcher, &self.fields)?;
                let either = query::loosely(&self.fields, request, &text, loose);
                ranked_in(&searcher, &*either, sort.key(), k)?
            }
        };
        Ok(Hits::page(ranked, total, request))
    }

    /// The request's text and its words' loose forms, for the matches that need a typo or a
    /// prefix; `None` when it has none ([`typos`]).
    fn loose_matches(
        &self,
        searcher: &Searcher,
        request: &SearchRequest,
    ) -> IndexResult<Option<(TextQuery, typos::Loose<'_>)>> {
        let Some(text) = request
            .text
            .as_ref()
            .filter(|_| request.kind == DocKind::Model)
        else {
            return Ok(None);
        };
        let loose = typos::loose_matches(searcher, &self.fields, text, &self.word_forms)?;
        Ok(loose.map(|loose| (text.clone(), loose)))
    }

    /// The best `k` exact matches of `request` and their number.
    fn exact_ranked(
        &self,
        searcher: &Searcher,
        request: &SearchRequest,
        k: usize,
        pruning: Pruning,
    ) -> IndexResult<(Vec<u64>, usize)> {
        let pruned = match (&request.text, request.kind, request.sort, pruning) {
            (Some(text), DocKind::Model, SortOrder::Relevance, Pruning::WhereItApplies) => {
                pruned::search(
                    searcher,
                    &self.fields,
                    request,
                    text,
                    k,
                    &self.dense_words,
                    &self.id_columns,
                )?
            }
            (None, DocKind::Model, SortOrder::NameAsc, Pruning::WhereItApplies)
                if request.filters == Filters::default() =>
            {
                by_name::first_models(searcher, &self.fields, &self.not_models, k)?
            }
            _ => None,
        };
        match pruned {
            Some(found) => Ok(found),
            None => {
                let query = query::build(&self.fields, request);
                ranked_in(searcher, &*query, request.sort.key(), k)
            }
        }
    }

    /// The value counts of `facets` over what `request` matches (its page and order aside),
    /// each facet without its own filter; in the order asked. The text's loose query is made
    /// once for every pass.
    pub fn facets(
        &self,
        request: &SearchRequest,
        facets: &[Facet],
    ) -> IndexResult<Vec<FacetCounts>> {
        let searcher = self.derived.reader.searcher();
        let generation = searcher.generation().generation_id();
        let loose = match self.loose_matches(&searcher, request)? {
            Some((text, loose)) => Some((text, loose.query(&searcher, &self.fields)?)),
            None => None,
        };
        let mut counted = Vec::with_capacity(facets.len());
        for (filters, group) in facets::passes(&request.filters, facets) {
            let under = SearchRequest {
                filters,
                ..request.clone()
            };
            // Debug output names every field of the match set: a key no two passes share.
            let key = format!(
                "{:?} {:?} {:?} {group:?}",
                under.kind, under.filters, under.text
            );
            counted.extend(self.facet_cache.get_or_count(generation, key, || {
                let every_model = under.kind == DocKind::Model
                    && under.text.is_none()
                    && under.filters == Filters::default();
                if every_model {
                    let not_models = &self.not_models;
                    return Ok(facets::every_model(
                        &searcher,
                        &self.fields,
                        not_models,
                        &group,
                    )?);
                }
                let query = match &loose {
                    Some((text, loose)) => {
                        query::loosely(&self.fields, &under, text, loose.box_clone())
                    }
                    None => query::build(&self.fields, &under),
                };
                Ok(searcher.search(&*query, &facets::FacetCollector { facets: group })?)
            })?);
        }
        Ok(facets
            .iter()
            .filter_map(|facet| counted.iter().find(|c| c.facet == *facet).cloned())
            .collect())
    }

    /// The values models have for `term`, lowercased and sorted: what its filter accepts.
    pub fn vocabulary(&self, term: SpecTerm) -> IndexResult<Vec<String>> {
        let searcher = self.derived.reader.searcher();
        Ok(spec::vocabulary(&searcher, self.fields.spec_term(term))?)
    }

    /// The brand's models with a primary or alternate reference that begins with `prefix`, a
    /// normalised reference of at least [`MIN_REFERENCE_PREFIX`] characters (or a whole
    /// reference), in id order; at most `limit`.
    pub fn models_with_reference_prefix(
        &self,
        brand_id: u64,
        prefix: &str,
        limit: usize,
    ) -> IndexResult<Vec<u64>> {
        let query = query::brand_models(
            &self.fields,
            brand_id,
            query::reference_prefix(&self.fields, prefix),
        );
        Ok(ranked_in(
            &self.derived.reader.searcher(),
            &*query,
            SortOrder::IdAsc.key(),
            limit,
        )?
        .0)
    }

    /// The brand's models whose name or series name shares a word with `text` (lowercased,
    /// accents folded), those sharing more first; at most `limit`.
    pub fn models_named_like(
        &self,
        brand_id: u64,
        text: &str,
        limit: usize,
    ) -> IndexResult<Vec<u64>> {
        let Some(query) = query::brand_models_named_like(&self.fields, brand_id, text) else {
            return Ok(Vec::new());
        };
        Ok(ranked_in(
            &self.derived.reader.searcher(),
            &*query,
            SortKey::Score,
            limit,
        )?
        .0)
    }

    /// The name (lowercased) and normalised references of the models `ids` the index holds,
    /// in no particular order: what a candidate is scored on without reading it.
    pub fn model_texts(&self, ids: &[u64]) -> IndexResult<Vec<ModelText>> {
        model_texts::read(&self.derived.reader.searcher(), &self.fields, ids)
    }

    /// Figures over the models that `filters` selects.
    pub fn model_stats(&self, filters: &Filters) -> IndexResult<CatalogueStats> {
        let searcher = self.derived.reader.searcher();
        let request = SearchRequest::filtered(DocKind::Model, filters.clone());
        let query = query::build(&self.fields, &request);
        Ok(searcher.search(&*query, &StatsCollector)?)
    }

    /// The model that represents a brand or series: most listings, then newest.
    pub fn lead_model(&self, filters: &Filters) -> IndexResult<Option<u64>> {
        let mut request = SearchRequest::filtered(DocKind::Model, filters.clone());
        request.sort = SortOrder::Lead;
        request.limit = 1;
        Ok(self.search(&request)?.ids.first().copied())
    }

    /// The group summaries of the current searcher, built now if none is kept: what the tests
    /// and benches compare with. Requests ask [`CatalogueIndex::brand_summary`] and
    /// [`CatalogueIndex::series_summary`], which never wait for a build.
    pub fn group_summaries(&self) -> IndexResult<Arc<GroupSummaries>> {
        let searcher = self.derived.reader.searcher();
        let generation = searcher.generation().generation_id();
        self.summaries
            .get_or_build(generation, || GroupSummaries::of(&searcher, &self.fields))
    }

    /// A brand's counts and lead model: from the kept summaries when they are current; else
    /// searched for this brand alone, while the summaries of the new reload are built in the
    /// background (a build is a pass over every model and series, and after every commit of an
    /// ingest no request should wait for one: docs/decisions.md, D-80).
    pub fn brand_summary(&self, brand: u64) -> IndexResult<BrandSummary> {
        self.kept_or_searched(
            |kept| kept.brand(brand),
            || self.searched_brand_summary(brand),
        )
    }

    /// A brand's summary from searches of this brand alone: what the summaries replace.
    pub(crate) fn searched_brand_summary(&self, brand: u64) -> IndexResult<BrandSummary> {
        let filters = Filters {
            brand_id: Some(brand),
            ..Filters::default()
        };
        Ok(BrandSummary {
            series_count: self.count(DocKind::Series, &filters)?,
            model_count: self.count(DocKind::Model, &filters)?,
            lead_model: self.lead_model(&Filters {
                has_front_picture: true,
                ..filters
            })?,
        })
    }

    /// A series' model count and lead model, as [`CatalogueIndex::brand_summary`] finds them.
    pub fn series_summary(&self, series: u64) -> IndexResult<SeriesSummary> {
        self.kept_or_searched(
            |kept| kept.series(series),
            || self.searched_series_summary(series),
        )
    }

    /// A series' summary from searches of this series alone.
    pub(crate) fn searched_series_summary(&self, series: u64) -> IndexResult<SeriesSummary> {
        let filters = Filters {
            series_id: Some(series),
            ..Filters::default()
        };
        Ok(SeriesSummary {
            model_count: self.count(DocKind::Model, &filters)?,
            lead_model: self.lead_model(&filters)?,
        })
    }

    /// `kept` of the current summaries, or `searched` while they are being built.
    fn kept_or_searched<T>(
        &self,
        kept: impl FnOnce(&GroupSummaries) -> T,
        searched: impl FnOnce() -> IndexResult<T>,
    ) -> IndexResult<T> {
        match self.current_summaries() {
            Some(summaries) => Ok(kept(&summaries)),
            None => searched(),
        }
    }

    /// The kept summaries if they are of the current searcher; else `None`, with their build
    /// started in the background unless one is under way.
    fn current_summaries(&self) -> Option<Arc<GroupSummaries>> {
        let searcher = self.derived.reader.searcher();
        let generation = searcher.generation().generation_id();
        if let Some(kept) = self.summaries.at_least(generation) {
            return Some(kept);
        }
        let fields = self.fields.clone();
        self.summaries
            .build_in_background(generation, move || GroupSummaries::of(&searcher, &fields));
        None
    }

    /// Number of documents of `kind` passing `filters`.
    pub fn count(&self, kind: DocKind, filters: &Filters) -> IndexResult<usize> {
        let request = SearchRequest::filtered(kind, filters.clone());
        let query = query::build(&self.fields, &request);
        Ok(self
            .derived
            .reader
            .searcher()
            .search(&*query, &tantivy::collector::Count)?)
    }
}

/// The best `k` ids `query` matches in `searcher` by `key`, and how many it matches.
fn ranked_in(
    searcher: &Searcher,
    query: &dyn tantivy::query::Query,
    key: SortKey,
    k: usize,
) -> IndexResult<(Vec<u64>, usize)> {
    Ok(searcher.search(query, &TopIds::new(key, k))?)
}

/// The catalogue schema's own pieces, for `examples/field_cost.rs` (what each field costs to
/// index): not an API.
#[doc(hidden)]
pub mod schema_parts {
    pub use crate::derived::sorted_by;
    pub use crate::schema::{build, names};
    pub use crate::tokenizer::register;
}

#[cfg(test)]
mod tests;
