//! The listings index, apart from the catalogue's so that ingesting a provider's snapshot
//! updates only the listings it touched. Fast fields answer every filter and sort of
//! `GET /listings` and the asking prices of `GET /listings/stats`; the seller's text is
//! searchable.
//!
//! Laid out for the large lists (issue 16): segments keep their documents in ascending id
//! order, so `newest` and `oldest` pages are the last or first matches of each segment and
//! need no column read; prices are dense columns (every document has a value, an unpriced one
//! [`UNPRICED`]), read in blocks, and a price range is checked on those blocks in the collector
//! ([`collect`]); a model's listings of one status are one postings list (`model_status`), what
//! the stats of a model read, with the codes its stats can be split by ([`group_codes`]).

mod bucket_walk;
mod by_id;
mod collect;
mod group_codes;
mod model_prices;
mod price_walk;
#[cfg(test)]
mod proptests;

use crate::derived::{sorted_by, Derived, FileAccess, RebuildShape};
use crate::query::{
    filter, term_u64, terms_starting_with_query, text_query, ReferencePrefixes, TextFields,
    TextQuery,
};
use crate::schema::{exact_number, exact_string, presence_options, text_options};
use crate::{Hits, IndexError, IndexResult};
use bucket_walk::{BucketWalk, EdgeBuckets, EDGE_LISTINGS_KEPT};
use by_id::{IdColumns, ListingsByIds};
use collect::{count_groups, KeptColumns, PageCollector, PriceCollector};
use group_codes::GroupCodes;
use model_prices::{RunCache, RUN_MIN_LEN};
use price_walk::PriceWalk;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use tantivy::collector::Collector;
use tantivy::columnar::ColumnType;
use tantivy::index::SegmentComponent;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextOptions, FAST};
use tantivy::{TantivyDocument, Term};

/// Fast-field names.
mod names {
    pub const ID: &str = "id";
    pub const PRICE_USD: &str = "price_usd";
    pub const PRICE: &str = "price";
    pub const CURRENCY: &str = "currency";
    pub const UNMATCHED_GROUP: &str = "unmatched_group";
    /// The condition and box-and-papers codes of a listing (`group_codes`).
    pub const STATS_GROUPS: &str = "stats_groups";
}

/// What the dense price columns hold for a listing without that price. A real price of
/// `u64::MAX` is told apart by a term of `price_at_max` ([`AT_MAX_PRICE`], [`AT_MAX_USD`]), so
/// the sentinel never reads as a price: not in a range, not in a sort, not in the stats.
pub(crate) const UNPRICED: u64 = u64::MAX;
/// `price_at_max` term of a listing whose own price really is `u64::MAX`.
pub(crate) const AT_MAX_PRICE: u64 = 1;
/// `price_at_max` term of a listing whose US dollar price really is `u64::MAX`.
pub(crate) const AT_MAX_USD: u64 = 2;

/// The currency column's value: every document has one (a dense column reads without a rank),
/// `+` and the code when the listing has a currency, `-` when not.
fn currency_key(currency: Option<&str>) -> String {
    match currency {
        Some(code) => format!("+{code}"),
        None => "-".to_owned(),
    }
}

/// One listing as the index sees it. Enumerations (status, condition, availability) are the
/// caller's codes: the index only compares them.
#[derive(Debug, Clone, Default)]
pub struct ListingDoc {
    pub id: u64,
    pub provider_id: u64,
    pub model_id: Option<u64>,
    /// The brand matching resolved, matched or not.
    pub brand_id: Option<u64>,
    /// Why an unmatched listing is unmatched, as the caller codes it; `None` when matched.
    pub unmatched_reason: Option<u64>,
    pub status: u64,
    pub condition: Option<u64>,
    pub availability: Option<u64>,
    /// Whether the box and the papers come with the watch, as the caller codes the pair; `None`
    /// when not known. A column only: what [`ListingIndex::model_prices_by`] splits by, with the
    /// condition (codes up to 254 each; a larger one is grouped as none).
    pub box_papers: Option<u64>,
    pub price: Option<u64>,
    pub currency: Option<String>,
    /// The price in whole US dollars through the rates in force; `None` when unpriced or in a
    /// currency the rates lack.
    pub price_usd: Option<u64>,
    pub title: Option<String>,
    pub scraped_brand: Option<String>,
    pub scraped_reference: Option<String>,
    /// `scraped_reference`, normalised by the caller.
    pub normalized_reference: Option<String>,
    /// `scraped_brand`, normalised by the caller, for a listing with a reconciliation group
    /// whose brand is not the catalogue's: with `normalized_reference`, the text its group is
    /// found by the start of.
    pub claimed_brand_text: Option<String>,
    /// Runs of title words that read as a reference, normalised ("126610 LN" -> `126610ln`),
    /// so a reference written only in the title is found exactly.
    pub title_references: Vec<String>,
    /// The caller's key of the reconciliation group the listing is in (unmatched, not
    /// delisted); `None` for one in no group. A column: the groups a text finds are counted
    /// from it ([`ListingIndex::unmatched_group_counts`]) without reading a listing, among the
    /// listings with one, whose words are indexed a second time for that search alone.
    pub unmatched_group: Option<u64>,
}

/// What a term of the `group_starts` field holds: its tag byte, then the text whole.
#[derive(Debug, Clone, Copy)]
enum GroupStart {
    Reference,
    BrandText,
}

impl GroupStart {
    fn term(self, text: &str) -> String {
        let tag = match self {
            GroupStart::Reference => 'r',
            GroupStart::BrandText => 'b',
        };
        format!("{tag}{text}")
    }
}

/// Exact-value and range filters; `None` or empty means no constraint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListingFilters {
    pub model_id: Option<u64>,
    pub brand_id: Option<u64>,
    pub provider_id: Option<u64>,
    pub condition: Option<u64>,
    pub availability: Option<u64>,
    /// Any of these statuses.
    pub statuses: Vec<u64>,
    /// None of these statuses. Hiding a rare status is much cheaper than asking for all the
    /// common ones: a union of terms that match most documents is slow at scale
    /// (docs/decisions.md, D-94).
    pub hidden_statuses: Vec<u64>,
    /// Inclusive bounds on the price in US dollars; unpriced listings fail any bound.
    pub min_price_usd: Option<u64>,
    pub max_price_usd: Option<u64>,
    /// Only listings matched to no model.
    pub unmatched: bool,
    /// Only unmatched listings with this reason code.
    pub unmatched_reason: Option<u64>,
}

/// Orders of a listing list; ties go to the lower id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListingSort {
    /// Best text match first.
    Relevance,
    /// First seen most recently first. Ids are allocated as listings are first seen, so this
    /// is descending id.
    Newest,
    Oldest,
    /// By price in US dollars; unpriced listings last.
    PriceAsc,
    PriceDesc,
}

/// One page of a listing list.
#[derive(Debug, Clone)]
pub struct ListingQuery {
    pub text: Option<TextQuery>,
    pub filters: ListingFilters,
    pub sort: ListingSort,
    pub offset: usize,
    pub limit: usize,
}

/// One priced listing, for price statistics: its US dollar price, and its own price when it
/// is in the currency the figures are asked in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PricePoint {
    pub usd: Option<u64>,
    pub own: Option<u64>,
}

/// The listings a filter selects, and the prices of those with one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PricedListings {
    pub count: usize,
    pub priced: Vec<PricePoint>,
}

/// What [`ListingIndex::model_prices_by`] splits a model's listings by: the caller's codes of
/// [`ListingDoc::condition`] or of [`ListingDoc::box_papers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PriceGrouping {
    Condition,
    BoxPapers,
}

/// A model's listings split by a [`PriceGrouping`]: each group's listings and prices under the
/// caller's code (`None`: the listings without one). Only the groups with listings are there.
pub type GroupedPrices = BTreeMap<Option<u64>, PricedListings>;

/// How many listings a search selects in each reconciliation group, by group key. Fx, not
/// SipHash: the keys are already hashes of a group's identity (`GroupKey`), and SipHash was a
/// sixth of counting a common word's groups (docs/decisions.md, D-221).
pub type GroupCounts = rustc_hash::FxHashMap<u64, u64>;

#[derive(Clone)]
struct Fields {
    id: Field,
    provider_id: Field,
    model_id: Field,
    brand_id: Field,
    matched: Field,
    reason: Field,
    status: Field,
    condition: Field,
    availability: Field,
    /// `model_id` and `status` in one term: a model's listings of one status in one postings
    /// list, so its stats read no intersection with a status matching most documents.
    model_status: Field,
    price: Field,
    currency: Field,
    price_usd: Field,
    price_at_max: Field,
    /// The dollar price's [`price_bucket`], and the condition with it ([`condition_bucket`]):
    /// a narrow price range reads the postings of its buckets instead of every candidate's
    /// price.
    price_bucket: Field,
    condition_price_bucket: Field,
    title: Field,
    scraped_brand: Field,
    scraped_reference: Field,
    ref_exact: Field,
    /// The seller's reference, normalised, whole: a reference prefix is read as the range of
    /// this field's terms that start with it, rather than indexing every prefix of every
    /// listing's reference (about half of what indexing a listing cost).
    reference: Field,
    unmatched_group: Field,
    /// The words of `title`, `scraped_brand` and `scraped_reference` again, on the listings
    /// with a reconciliation group only: a word's groups are counted from the postings of the
    /// unmatched listings alone, not of every listing that holds it (docs/decisions.md, D-222).
    group_words: Field,
    /// On the listings with a reconciliation group only, their group's texts whole, each
    /// tagged ([`GroupStart`]): a group is found by the start of its reference or brand text from
    /// a range of terms, its listings all sharing both (docs/decisions.md, D-240).
    group_starts: Field,
    /// Dense: every listing's [`GroupCodes`], 0 when it has none.
    stats_groups: Field,
}

fn build_schema() -> (Schema, Fields) {
    // Only the three word fields are scored (BM25, with their norms); every other field is a
    // filter or a constant-score match, and carries no norms: with them on every field, norms
    // were a sixth of the index (docs/decisions.md, D-41).
    let mut s = Schema::builder();
    let fields = Fields {
        // Not indexed: a listing's document is found by the id column ([`ListingsByIds`]).
        id: s.add_u64_field(names::ID, FAST),
        provider_id: s.add_u64_field("provider_id", exact_number()),
        model_id: s.add_u64_field("model_id", exact_number()),
        brand_id: s.add_u64_field("brand_id", exact_number()),
        matched: s.add_u64_field("matched", exact_number()),
        reason: s.add_u64_field("unmatched_reason", exact_number()),
        status: s.add_u64_field("status", exact_number()),
        condition: s.add_u64_field("condition", exact_number()),
        availability: s.add_u64_field("availability", exact_number()),
        model_status: s.add_text_field("model_status", exact_string()),
        price: s.add_u64_field(names::PRICE, FAST),
        currency: s.add_text_field(names::CURRENCY, TextOptions::default().set_fast("raw")),
        price_usd: s.add_u64_field(names::PRICE_USD, FAST),
        price_at_max: s.add_u64_field("price_at_max", exact_number()),
        price_bucket: s.add_u64_field("price_bucket", exact_number()),
        condition_price_bucket: s.add_u64_field("condition_price_bucket", exact_number()),
        title: s.add_text_field("title", text_options()),
        scraped_brand: s.add_text_field("scraped_brand", text_options()),
        scraped_reference: s.add_text_field("scraped_reference", text_options()),
        ref_exact: s.add_text_field("ref_exact", exact_string()),
        reference: s.add_text_field("reference", exact_string()),
        unmatched_group: s.add_u64_field(names::UNMATCHED_GROUP, FAST),
        group_words: s.add_text_field("group_words", presence_options()),
        group_starts: s.add_text_field("group_starts", exact_string()),
        stats_groups: s.add_u64_field(names::STATS_GROUPS, FAST),
    };
    (s.build(), fields)
}

impl Fields {
    fn document(&self, doc: &ListingDoc) -> TantivyDocument {
        let mut out = TantivyDocument::new();
        out.add_u64(self.id, doc.id);
        out.add_u64(self.provider_id, doc.provider_id);
        out.add_u64(self.matched, u64::from(doc.model_id.is_some()));
        out.add_u64(self.status, doc.status);
        if let Some(model) = doc.model_id {
            out.add_text(self.model_status, model_status(model, doc.status));
        }
        self.add_prices(&mut out, doc);
        let groups = GroupCodes::of(doc.condition, doc.box_papers);
        out.add_u64(self.stats_groups, groups.column_value());
        let optional = [
            (self.model_id, doc.model_id),
            (self.brand_id, doc.brand_id),
            (self.reason, doc.unmatched_reason),
            (self.condition, doc.condition),
            (self.availability, doc.availability),
            (self.unmatched_group, doc.unmatched_group),
        ];
        for (field, value) in optional {
            if let Some(value) = value {
                out.add_u64(field, value);
            }
        }
        let texts = [
            (self.title, &doc.title),
            (self.scraped_brand, &doc.scraped_brand),
            (self.scraped_reference, &doc.scraped_reference),
            (self.ref_exact, &doc.normalized_reference),
            (self.reference, &doc.normalized_reference),
        ];
        for (field, value) in texts {
            if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
                out.add_text(field, value);
            }
        }
        for reference in &doc.title_references {
            out.add_text(self.ref_exact, reference);
        }
        if doc.unmatched_group.is_some() {
            let words = [&doc.title, &doc.scraped_brand, &doc.scraped_reference];
            for value in words.into_iter().flatten().filter(|v| !v.is_empty()) {
                out.add_text(self.group_words, value);
            }
            let starts = [
                (GroupStart::Reference, &doc.normalized_reference),
                (GroupStart::BrandText, &doc.claimed_brand_text),
            ];
            for (kind, value) in starts {
                if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
                    out.add_text(self.group_starts, kind.term(value));
                }
            }
        }
        out
    }

    /// The dense price columns, their `u64::MAX` markers and the dense currency column.
    fn add_prices(&self, out: &mut TantivyDocument, doc: &ListingDoc) {
        let prices = [
            (self.price, doc.price, AT_MAX_PRICE),
            (self.price_usd, doc.price_usd, AT_MAX_USD),
        ];
        for (field, value, marker) in prices {
            out.add_u64(field, value.unwrap_or(UNPRICED));
            if value == Some(UNPRICED) {
                out.add_u64(self.price_at_max, marker);
            }
        }
        out.add_text(self.currency, currency_key(doc.currency.as_deref()));
        if let Some(usd) = doc.price_usd {
            let bucket = price_bucket(usd);
            out.add_u64(self.price_bucket, bucket);
            if let Some(condition) = doc.condition {
                out.add_u64(
                    self.condition_price_bucket,
                    condition_bucket(condition, bucket),
                );
            }
        }
    }

    /// The listings whose dollar price may be in `range` (every one that is), as a union of
    /// price buckets, with the condition when one is asked; `None` when the range spans too
    /// many buckets for their union to be cheaper than reading the prices.
    fn price_buckets(
        &self,
        range: Option<(u64, u64)>,
        condition: Option<u64>,
    ) -> Option<Box<dyn Query>> {
        let terms = self.bucket_terms(range?, condition)?;
        let any = (terms.into_iter())
            .map(|term| {
                let query: Box<dyn Query> =
                    Box::new(TermQuery::new(term, IndexRecordOption::Basic));
                (Occur::Should, query)
            })
            .collect();
        Some(filter(Box::new(BooleanQuery::new(any))))
    }

    /// The bucket terms of `range` by ascending price, with the condition when one is asked;
    /// `None` when the range spans [`MAX_RANGE_BUCKETS`] or more.
    fn bucket_terms(&self, (low, high): (u64, u64), condition: Option<u64>) -> Option<Vec<Term>> {
        let buckets = price_bucket(low)..=price_bucket(high);
        if buckets.end().saturating_sub(*buckets.start()) >= MAX_RANGE_BUCKETS {
            return None;
        }
        Some(
            buckets
                .map(|bucket| self.bucket_term(bucket, condition))
                .collect(),
        )
    }

    /// The term of a price bucket, with the condition when one is asked.
    fn bucket_term(&self, bucket: u64, condition: Option<u64>) -> Term {
        match condition {
            Some(condition) => Term::from_field_u64(
                self.condition_price_bucket,
                condition_bucket(condition, bucket),
            ),
            None => Term::from_field_u64(self.price_bucket, bucket),
        }
    }

    /// The bucket walk of `query` (see `bucket_walk`) when it asks a narrow price range and
    /// nothing else but a condition and the hidden statuses, in an order other than relevance.
    fn bucket_walk(&self, query: &ListingQuery) -> Option<BucketWalk> {
        let f = &query.filters;
        let other_filters = f.model_id.is_some()
            || f.brand_id.is_some()
            || f.provider_id.is_some()
            || f.availability.is_some()
            || f.unmatched
            || f.unmatched_reason.is_some()
            || !f.statuses.is_empty();
        if other_filters || query.text.is_some() || query.sort == ListingSort::Relevance {
            return None;
        }
        let range = price_range(f)?;
        Some(BucketWalk {
            terms: self.bucket_terms(range, f.condition)?,
            range,
            hidden: (f.hidden_statuses.iter())
                .map(|&status| Term::from_field_u64(self.status, status))
                .collect(),
            sort: query.sort,
            k: query.offset.saturating_add(query.limit),
        })
    }

    /// The price walk of `query` (see `price_walk`) when it asks a page by price, not too
    /// deep, with no price range and no text.
    fn price_walk(&self, query: &ListingQuery) -> Option<PriceWalk> {
        let k = query.offset.saturating_add(query.limit);
        let by_price = matches!(query.sort, ListingSort::PriceAsc | ListingSort::PriceDesc);
        if !by_price
            || query.text.is_some()
            || price_range(&query.filters).is_some()
            || k > price_walk::PAGE_AT_MOST
        {
            return None;
        }
        // With a condition, its (condition, bucket) terms stand for the bucket and the
        // condition at once: each bucket then holds that condition's listings only.
        let condition = query.filters.condition;
        let without_condition = ListingFilters {
            condition: None,
            ..query.filters.clone()
        };
        Some(PriceWalk {
            filters: self.query(&query.filters, None),
            in_bucket: self.query(&without_condition, None),
            buckets: (0..=MAX_PRICE_BUCKET)
                .map(|bucket| self.bucket_term(bucket, condition))
                .collect(),
            sort: query.sort,
            k,
        })
    }

    fn text_fields(&self) -> TextFields {
        TextFields {
            words: vec![
                (self.title, 1.0),
                (self.scraped_brand, 1.0),
                (self.scraped_reference, 2.0),
            ],
            ref_exact: self.ref_exact,
            ref_prefix: ReferencePrefixes::Ranges(self.reference),
        }
    }

    /// What [`Fields::text_fields`] find among the listings with a reconciliation group,
    /// unscored: their words from the group-only field, references (few listings each) from
    /// every listing's, those without a group then skipped by the count.
    fn group_text_fields(&self) -> TextFields {
        TextFields {
            words: vec![(self.group_words, 1.0)],
            ref_exact: self.ref_exact,
            ref_prefix: ReferencePrefixes::Ranges(self.reference),
        }
    }

    /// The listings with a group whose reference or brand text starts with `prefix`.
    fn groups_starting_with(&self, prefix: &str) -> [Box<dyn Query>; 2] {
        [GroupStart::Reference, GroupStart::BrandText]
            .map(|kind| terms_starting_with_query(self.group_starts, &kind.term(prefix)))
    }

    /// The query of everything `filters` and `text` ask but the price range, which the
    /// collectors check on blocks of the dense price column.
    fn query(&self, filters: &ListingFilters, text: Option<&TextQuery>) -> Box<dyn Query> {
        let text = text.map(|text| text_query(&self.text_fields(), text));
        self.query_with_text(filters, text)
    }

    /// [`Fields::query`] with the text's query already made.
    fn query_with_text(
        &self,
        filters: &ListingFilters,
        text: Option<Box<dyn Query>>,
    ) -> Box<dyn Query> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        // One model and one status: their one postings list rather than an intersection.
        let (model_id, statuses) = match (filters.model_id, filters.statuses.as_slice()) {
            (Some(model), &[status]) => {
                let term = Term::from_field_text(self.model_status, &model_status(model, status));
                let query = TermQuery::new(term, IndexRecordOption::Basic);
                clauses.push((Occur::Must, filter(Box::new(query))));
                (None, &[][..])
            }
            (model, statuses) => (model, statuses),
        };
        // A narrow price range with a condition: its (condition, bucket) terms stand for the
        // condition's, so the candidates are about those in range.
        let buckets = self.price_buckets(price_range(filters), filters.condition);
        let condition = filters.condition.filter(|_| buckets.is_none());
        clauses.extend(buckets.map(|query| (Occur::Must, query)));
        let exact = [
            (self.model_id, model_id),
            (self.brand_id, filters.brand_id),
            (self.provider_id, filters.provider_id),
            (self.condition, condition),
            (self.availability, filters.availability),
            (self.matched, filters.unmatched.then_some(0)),
            (self.reason, filters.unmatched_reason),
        ];
        for (field, value) in exact {
            if let Some(value) = value {
                clauses.push((Occur::Must, filter(term_u64(field, value))));
            }
        }
        if !statuses.is_empty() {
            let any = statuses
                .iter()
                .map(|&status| (Occur::Should, term_u64(self.status, status)))
                .collect();
            clauses.push((Occur::Must, filter(Box::new(BooleanQuery::new(any)))));
        }
        let hidden = filters
            .hidden_statuses
            .iter()
            .map(|&status| (Occur::MustNot, term_u64(self.status, status)));
        clauses.extend(hidden);
        clauses.extend(text.map(|text| (Occur::Must, text)));
        // Exclusions alone match nothing in tantivy: they need something to exclude from.
        if clauses.iter().all(|(occur, _)| *occur == Occur::MustNot) {
            clauses.push((Occur::Must, Box::new(tantivy::query::AllQuery)));
        }
        Box::new(BooleanQuery::new(clauses))
    }
}

/// The `model_status` term of a model's listings of one status.
fn model_status(model: impl std::fmt::Display, status: u64) -> String {
    format!("{model}/{status}")
}

/// Buckets a price range may span and still be read as their union; a wider range reads
/// every candidate's price (a union of postings is dearer per document than a dense column).
const MAX_RANGE_BUCKETS: u64 = 24;
/// The last price bucket: [`price_bucket`] of `u64::MAX`.
const MAX_PRICE_BUCKET: u64 = 255;

/// A dollar price's bucket: a quarter of a doubling (`4 * log2`, in integers), so that buckets
/// hold about as many listings across the price scale and a range is a handful of them.
/// Non-decreasing in the price: every price of `[low, high]` is in a bucket between theirs.
fn price_bucket(usd: u64) -> u64 {
    match usd {
        0..=3 => usd,
        _ => {
            let doubling = u64::from(63 - usd.leading_zeros());
            4 * doubling + ((usd >> (doubling - 2)) & 3)
        }
    }
}

/// A condition and a price bucket as one term value.
fn condition_bucket(condition: u64, bucket: u64) -> u64 {
    condition << 8 | bucket
}

/// The price range of `filters`, inclusive; `None` when unbounded both ways.
fn price_range(filters: &ListingFilters) -> Option<(u64, u64)> {
    match (filters.min_price_usd, filters.max_price_usd) {
        (None, None) => None,
        (min, max) => Some((min.unwrap_or(0), max.unwrap_or(u64::MAX))),
    }
}

/// Documents written through one long-lived writer during a large write (an ingest of
/// millions of listings): made once, fed as the store commits, committed once at the end with
/// the generation it reflects, its segments merged once. Dropped without
/// [`ListingLoad::commit`], it leaves the index as it was: marked behind a store that moved.
pub struct ListingLoad {
    writer: tantivy::IndexWriter<TantivyDocument>,
    fields: Fields,
    before: Vec<tantivy::index::SegmentId>,
    documents: usize,
    /// The id columns its replacements' deletes find old documents by.
    id_columns: IdColumns,
}

impl ListingLoad {
    /// Adds the document of a listing the index cannot hold yet (a new id).
    pub fn add(&mut self, doc: &ListingDoc) -> IndexResult<()> {
        self.writer.add_document(self.fields.document(doc))?;
        self.documents += 1;
        Ok(())
    }

    /// Writes `doc` over the document with its id, if any.
    pub fn replace(&mut self, doc: &ListingDoc) -> IndexResult<()> {
        self.writer.delete_query(Box::new(ListingsByIds::new(
            vec![doc.id],
            self.id_columns.clone(),
        )))?;
        self.add(doc)
    }

    /// Documents added or replaced so far.
    pub fn documents(&self) -> usize {
        self.documents
    }

    /// Commits everything added with `generation`, then merges what the load made once.
    pub fn commit(self, index: &ListingIndex, generation: u64) -> IndexResult<usize> {
        index
            .derived
            .commit_load(self.writer, &self.before, generation)?;
        Ok(self.documents)
    }
}

/// The listings index: open once, share between threads.
pub struct ListingIndex {
    derived: Derived,
    fields: Fields,
    /// The large models' prices per segment, for [`ListingIndex::model_prices`].
    runs: RunCache,
    /// Each segment's price and id columns, opened once.
    columns: KeptColumns,
    /// The edge buckets of narrow price ranges, for the bucket walk.
    edges: EdgeBuckets,
    /// The folder of its files; none in memory.
    dir: Option<PathBuf>,
}

impl ListingIndex {
    /// Opens the index in `dir`, creating or recreating it as needed.
    pub fn open(dir: &Path) -> IndexResult<ListingIndex> {
        ListingIndex::open_with(dir, FileAccess::default())
    }

    /// [`ListingIndex::open`], its files read in as `access` says.
    pub fn open_with(dir: &Path, access: FileAccess) -> IndexResult<ListingIndex> {
        let (schema, fields) = build_schema();
        Ok(ListingIndex {
            derived: Derived::open(dir, schema, sorted_by(names::ID), access)?,
            columns: KeptColumns::new(fields.price_at_max),
            fields,
            runs: RunCache::new(RUN_MIN_LEN),
            edges: EdgeBuckets::holding_at_most(EDGE_LISTINGS_KEPT),
            dir: Some(dir.to_owned()),
        })
    }

    /// An index in memory, for tests and benchmarks.
    pub fn in_memory() -> IndexResult<ListingIndex> {
        let (schema, fields) = build_schema();
        Ok(ListingIndex {
            derived: Derived::in_memory(schema, sorted_by(names::ID))?,
            columns: KeptColumns::new(fields.price_at_max),
            fields,
            runs: RunCache::new(RUN_MIN_LEN),
            edges: EdgeBuckets::holding_at_most(EDGE_LISTINGS_KEPT),
            dir: None,
        })
    }

    /// The store generation the last commit reflects; `None` for an index never built.
    pub fn generation(&self) -> IndexResult<Option<u64>> {
        self.derived.generation()
    }

    /// Replaces every document with `docs` and commits with `generation`; the first failure of
    /// `docs` leaves the index as it was.
    pub fn rebuild<E: From<IndexError> + Send>(
        &self,
        docs: impl ParallelIterator<Item = Result<ListingDoc, E>>,
        generation: u64,
    ) -> Result<usize, E> {
        self.derived.rebuild(
            docs.map(|doc| doc.map(|doc| self.fields.document(&doc))),
            Vec::new,
            generation,
            RebuildShape::EveryCore,
        )
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

    /// Writes `docs` over the documents with their ids, and commits with `generation`.
    pub fn upsert(&self, docs: &[ListingDoc], generation: u64) -> IndexResult<()> {
        // One delete for every id, then each id's last document: a query per listing cost a
        // scorer per listing and segment (D-250).
        let mut last_of_each: Vec<&ListingDoc> = Vec::with_capacity(docs.len());
        let mut seen = std::collections::HashSet::with_capacity(docs.len());
        for doc in docs.iter().rev() {
            if seen.insert(doc.id) {
                last_of_each.push(doc);
            }
        }
        let old = ListingsByIds::new(seen.into_iter().collect(), IdColumns::default());
        self.derived.delete_then_add(
            Box::new(old),
            last_of_each
                .into_iter()
                .rev()
                .map(|doc| self.fields.document(doc)),
            generation,
        )
    }

    /// A long load of documents: see [`ListingLoad`].
    pub fn load(&self) -> IndexResult<ListingLoad> {
        Ok(ListingLoad {
            before: self.derived.segment_ids()?,
            writer: self.derived.load_writer()?,
            fields: self.fields.clone(),
            documents: 0,
            id_columns: IdColumns::default(),
        })
    }

    /// Number of listings indexed.
    pub fn len(&self) -> u64 {
        self.derived.reader.searcher().num_docs()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ids of one page of `query`, and the total number of matches.
    pub fn search(&self, query: &ListingQuery) -> IndexResult<Hits> {
        let searcher = self.derived.reader.searcher();
        let columns = self.columns.of(&searcher)?;
        let collector = PageCollector::new(
            query.sort,
            query.offset + query.limit,
            price_range(&query.filters),
            columns.clone(),
        );
        let walked = match (
            self.fields.bucket_walk(query),
            self.fields.price_walk(query),
        ) {
            (Some(walk), _) => Some(walk.segment_fruits(&searcher, &columns, &self.edges)?),
            (None, Some(walk)) => Some(walk.segment_fruits(&searcher, &columns, &collector)?),
            (None, None) => None,
        };
        let (ranked, total) = match walked {
            Some(fruits) => collector.merge_fruits(fruits)?,
            None => {
                let tantivy_query = self.fields.query(&query.filters, query.text.as_ref());
                searcher.search(&*tantivy_query, &collector)?
            }
        };
        let ids = ranked
            .into_iter()
            .skip(query.offset)
            .take(query.limit)
            .collect();
        Ok(Hits { ids, total })
    }

    /// How many of the listings `filters` and `text` select are in each reconciliation group,
    /// by the key the caller gave ([`ListingDoc::unmatched_group`]): every match counted from
    /// the column, none read. The text's words are looked up among the listings with a group
    /// only (`group_words`), so they select what the listing-wide fields would among those; a
    /// group whose reference or brand text starts with the text's normalised form has all its
    /// listings selected, so its count is its size.
    pub fn unmatched_group_counts(
        &self,
        filters: &ListingFilters,
        text: Option<&TextQuery>,
    ) -> IndexResult<GroupCounts> {
        let searcher = self.derived.reader.searcher();
        let text = text.map(|text| {
            let mut any = vec![text_query(&self.fields.group_text_fields(), text)];
            if !text.normalized_reference.is_empty() {
                any.extend(self.fields.groups_starting_with(&text.normalized_reference));
            }
            let any = any
                .into_iter()
                .map(|query| (Occur::Should, query))
                .collect();
            Box::new(BooleanQuery::new(any)) as Box<dyn Query>
        });
        let query = self.fields.query_with_text(filters, text);
        Ok(count_groups(&searcher, &*query)?)
    }

    /// Which reload of the index searches answer from now: it changes with every commit, so a
    /// figure computed from the index holds while it stays the same.
    pub fn searcher_generation(&self) -> u64 {
        self.derived.reader.searcher().generation().generation_id()
    }

    /// How many listings `filters` selects, and the prices of the priced ones; `own` prices
    /// are given for listings priced in `currency`.
    pub fn prices(&self, filters: &ListingFilters, currency: &str) -> IndexResult<PricedListings> {
        let searcher = self.derived.reader.searcher();
        let query = self.fields.query(filters, None);
        Ok(searcher.search(
            &*query,
            &PriceCollector::new(currency, price_range(filters), self.columns.of(&searcher)?),
        )?)
    }

    /// Reads each segment's column of reconciliation groups from its file, in order, so that
    /// the OS holds it: a text search over the groups reads it at random, a disk read a page
    /// on a cold start (docs/decisions.md, D-241). Read from the file rather than through its
    /// mapping, which a server asks the OS to read a page at a time ([`FileAccess::PageAlone`]).
    /// The bytes read; none in memory.
    pub fn read_group_column_ahead(&self) -> IndexResult<u64> {
        let Some(dir) = &self.dir else {
            return Ok(0);
        };
        let searcher = self.derived.reader.searcher();
        let mut bytes = 0;
        for segment in searcher.index().searchable_segments()? {
            let reader = (searcher.segment_readers().iter())
                .find(|reader| reader.segment_id() == segment.id());
            let Some(reader) = reader else {
                continue;
            };
            let column = (reader.fast_fields())
                .dynamic_column_handle(names::UNMATCHED_GROUP, ColumnType::U64)?;
            let Some(column) = column else {
                continue;
            };
            let column = column.file_slice().read_bytes()?;
            let file = segment.open_read(SegmentComponent::FastFields);
            let file = file.map_err(tantivy::TantivyError::from)?.read_bytes()?;
            // The column is a slice of the file's one mapping, which the reader holds open.
            if let Some(range) = range_within(file.as_slice(), column.as_slice()) {
                let path = dir.join(segment.relative_path(SegmentComponent::FastFields));
                bytes += read_file_range(&path, range)?;
            }
        }
        Ok(bytes)
    }

    /// Keeps the listings of one `status` of every model large enough for
    /// [`ListingIndex::model_prices`] to keep them, while there is room: so that even their
    /// first request after a start reads no column. How many runs (model and segment) it kept.
    pub fn keep_large_model_prices(&self, status: u64) -> IndexResult<usize> {
        let searcher = self.derived.reader.searcher();
        let suffix = model_status("", status);
        Ok(self.runs.keep_large(
            &searcher,
            &self.columns.of(&searcher)?,
            self.fields.model_status,
            |term| term.ends_with(&suffix),
        )?)
    }

    /// What [`ListingIndex::prices`] gives for one model's listings of one status, with the
    /// large models' listings read once per segment and kept (see `model_prices`).
    pub fn model_prices(
        &self,
        model: u64,
        status: u64,
        currency: &str,
    ) -> IndexResult<PricedListings> {
        let searcher = self.derived.reader.searcher();
        let term = Term::from_field_text(self.fields.model_status, &model_status(model, status));
        Ok(self.runs.prices(
            &searcher,
            &self.columns.of(&searcher)?,
            &term,
            &currency_key(Some(currency)),
        )?)
    }

    /// [`ListingIndex::model_prices`] split by `grouping`, from the same runs: every listing
    /// in exactly one group, all of them read from one searcher.
    pub fn model_prices_by(
        &self,
        model: u64,
        status: u64,
        currency: &str,
        grouping: PriceGrouping,
    ) -> IndexResult<GroupedPrices> {
        let searcher = self.derived.reader.searcher();
        let term = Term::from_field_text(self.fields.model_status, &model_status(model, status));
        Ok(self.runs.grouped_prices(
            &searcher,
            &self.columns.of(&searcher)?,
            &term,
            &currency_key(Some(currency)),
            grouping,
        )?)
    }
}

/// Where `part` lies in `whole`, when it is a slice of it.
fn range_within(whole: &[u8], part: &[u8]) -> Option<Range<u64>> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= whole.len()).then_some(start as u64..end as u64)
}

/// Reads `range` of the file at `path`, in order; the bytes read.
fn read_file_range(path: &Path, range: Range<u64>) -> std::io::Result<u64> {
    use std::io::{Read, Seek};
    let mut file = std::fs::File::open(path)?;
    file.seek(std::io::SeekFrom::Start(range.start))?;
    std::io::copy(
        &mut file.take(range.end - range.start),
        &mut std::io::sink(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_scored_word_fields_carry_norms() {
        let (schema, _) = build_schema();
        let with_norms: Vec<&str> = (schema.fields())
            .filter(|(_, entry)| entry.has_fieldnorms())
            .map(|(_, entry)| entry.name())
            .collect();
        assert_eq!(with_norms, ["title", "scraped_brand", "scraped_reference"]);
    }

    fn doc(id: u64, price_usd: Option<u64>, status: u64) -> ListingDoc {
        ListingDoc {
            id,
            provider_id: 1,
            model_id: (id % 2 == 0).then_some(7),
            brand_id: Some(3),
            status,
            price: price_usd,
            currency: price_usd.map(|_| if id % 3 == 0 { "EUR" } else { "USD" }.to_owned()),
            price_usd,
            title: Some(format!("Rolex Submariner {id}")),
            normalized_reference: Some("126610ln".to_owned()),
            ..ListingDoc::default()
        }
    }

    fn index() -> ListingIndex {
        let index = ListingIndex::in_memory().expect("index");
        let docs = vec![
            doc(1, Some(9000), 0),
            doc(2, None, 0),
            doc(3, Some(12000), 1),
            doc(4, Some(10000), 0),
            doc(5, Some(8000), 2),
        ];
        index
            .rebuild(docs.into_par_iter().map(Ok::<_, IndexError>), 1)
            .expect("rebuild");
        index
    }

    fn ids(index: &ListingIndex, filters: ListingFilters, sort: ListingSort) -> Vec<u64> {
        let query = ListingQuery {
            text: None,
            filters,
            sort,
            offset: 0,
            limit: 10,
        };
        index.search(&query).expect("search").ids
    }

    #[test]
    fn sorts_put_unpriced_listings_last_both_ways() {
        let index = index();
        let all = ListingFilters::default();
        assert_eq!(
            ids(&index, all.clone(), ListingSort::Newest),
            [5, 4, 3, 2, 1]
        );
        assert_eq!(
            ids(&index, all.clone(), ListingSort::Oldest),
            [1, 2, 3, 4, 5]
        );
        assert_eq!(
            ids(&index, all.clone(), ListingSort::PriceAsc),
            [5, 1, 4, 3, 2]
        );
        assert_eq!(ids(&index, all, ListingSort::PriceDesc), [3, 4, 1, 5, 2]);
    }

    #[test]
    fn filters_combine() {
        let index = index();
        let priced = ListingFilters {
            min_price_usd: Some(9000),
            max_price_usd: Some(10000),
            ..ListingFilters::default()
        };
        assert_eq!(ids(&index, priced, ListingSort::Oldest), [1, 4]);
        let visible = ListingFilters {
            statuses: vec![0, 1],
            unmatched: true,
            ..ListingFilters::default()
        };
        assert_eq!(ids(&index, visible, ListingSort::Oldest), [1, 3]);
        let not_delisted = ListingFilters {
            hidden_statuses: vec![2],
            ..ListingFilters::default()
        };
        assert_eq!(ids(&index, not_delisted, ListingSort::Oldest), [1, 2, 3, 4]);
        let not_delisted_and_cheap = ListingFilters {
            hidden_statuses: vec![2],
            max_price_usd: Some(9000),
            ..ListingFilters::default()
        };
        assert_eq!(
            ids(&index, not_delisted_and_cheap, ListingSort::Oldest),
            [1]
        );
        let of_model = ListingFilters {
            model_id: Some(7),
            statuses: vec![0],
            ..ListingFilters::default()
        };
        assert_eq!(ids(&index, of_model, ListingSort::Oldest), [2, 4]);
    }

    #[test]
    fn upsert_replaces_by_id_and_prices_report_own_currency() {
        let index = index();
        index.upsert(&[doc(2, Some(20000), 0)], 2).expect("upsert");
        assert_eq!(index.generation().expect("generation"), Some(2));
        let all = ListingFilters::default();
        assert_eq!(ids(&index, all.clone(), ListingSort::PriceDesc)[0], 2);
        let prices = index.prices(&all, "EUR").expect("prices");
        assert_eq!(prices.count, 5);
        assert_eq!(prices.priced.len(), 5);
        let own: Vec<u64> = prices.priced.iter().filter_map(|p| p.own).collect();
        assert_eq!(own, [12000], "only listing 3 is priced in EUR");
    }

    #[test]
    fn seller_text_and_references_are_searchable() {
        let index = index();
        let search = |text: &str| {
            let query = ListingQuery {
                text: Some(TextQuery {
                    typo_tolerance: false,
                    text: text.to_owned(),
                    normalized_reference: text
                        .chars()
                        .filter(|c| c.is_alphanumeric())
                        .flat_map(char::to_lowercase)
                        .collect(),
                }),
                filters: ListingFilters::default(),
                sort: ListingSort::Oldest,
                offset: 0,
                limit: 10,
            };
            index.search(&query).expect("search").total
        };
        assert_eq!(search("submariner"), 5);
        assert_eq!(search("126610-LN"), 5);
        assert_eq!(search("12661"), 5);
        assert_eq!(search("daytona"), 0);
    }

    /// A word finds the listings whose own reference starts with it (from three characters),
    /// as every prefix indexed as a term did: not those whose title alone holds a reference
    /// that starts with it, and not a reference that merely contains it.
    #[test]
    fn a_reference_prefix_is_read_from_the_dictionary_range() {
        let index = ListingIndex::in_memory().expect("index");
        let listing =
            |id: u64, reference: Option<&str>, title: &str, in_title: &[&str]| ListingDoc {
                id,
                title: Some(title.to_owned()),
                normalized_reference: reference.map(str::to_owned),
                title_references: in_title.iter().map(|r| r.to_string()).collect(),
                ..ListingDoc::default()
            };
        let docs = vec![
            listing(1, Some("126610ln"), "Rolex Submariner", &[]),
            listing(2, Some("126610lv"), "Rolex Submariner Hulk", &[]),
            listing(3, Some("126613lb"), "Rolex Submariner two-tone", &[]),
            listing(4, None, "Rolex 126600 Sea-Dweller", &["126600"]),
            listing(5, Some("a126610"), "Submariner lookalike", &[]),
            listing(6, Some("12"), "Odd reference", &[]),
        ];
        index.upsert(&docs, 1).expect("upsert");
        let search = |text: &str| {
            let query = ListingQuery {
                text: Some(TextQuery {
                    typo_tolerance: false,
                    text: text.to_owned(),
                    normalized_reference: text.to_lowercase().replace(' ', ""),
                }),
                filters: ListingFilters::default(),
                sort: ListingSort::Oldest,
                offset: 0,
                limit: 10,
            };
            index.search(&query).expect("search").ids
        };
        assert_eq!(search("126610"), [1, 2]);
        assert_eq!(search("12661"), [1, 2, 3]);
        assert_eq!(search("126"), [1, 2, 3]);
        assert_eq!(search("126610lv"), [2]);
        assert_eq!(search("12"), [6], "a whole reference, not a prefix");
        assert_eq!(search("126610lvx"), Vec::<u64>::new());
        assert_eq!(search("submariner 126610"), [1, 2]);
        assert_eq!(search("126600"), [4], "the title's reference, exactly");
    }

    /// Every match is counted in its group from the column, however many there are, and a
    /// group's counts in two segments are added; a listing without a group (matched), one the
    /// filters leave out and a deleted document are not.
    #[test]
    fn the_groups_a_text_finds_are_counted_from_the_column() {
        let index = ListingIndex::in_memory().expect("index");
        let listing = |id: u64, group: Option<u64>, title: &str, status: u64| ListingDoc {
            id,
            model_id: group.is_none().then_some(9),
            unmatched_group: group,
            status,
            title: Some(title.to_owned()),
            ..ListingDoc::default()
        };
        let first = vec![
            listing(1, Some(70), "Vantor diver blue", 0),
            listing(3, Some(71), "Vantor chronograph", 0),
            listing(4, Some(72), "Kurofune diver", 0),
            listing(5, None, "Vantor diver matched", 0),
            listing(6, Some(71), "Vantor delisted", 3),
        ];
        index.upsert(&first, 1).expect("upsert");
        // A second segment, finding more groups than the first: the counts are added into it.
        // Listing 4, linked since, is there again without a group: its first document is
        // deleted, not counted.
        let second = vec![
            listing(2, Some(70), "Vantor diver black", 0),
            listing(4, None, "Kurofune diver", 0),
            listing(7, Some(73), "Vantor automatic", 0),
            listing(8, Some(74), "Vantor date", 0),
        ];
        index.upsert(&second, 2).expect("upsert");
        let segments = index.derived.reader.searcher().segment_readers().len();
        assert_eq!(segments, 2);
        let counts = |text: &str| {
            let text = TextQuery {
                typo_tolerance: false,
                text: text.to_owned(),
                normalized_reference: text.to_lowercase().replace(' ', ""),
            };
            let filters = ListingFilters {
                unmatched: true,
                hidden_statuses: vec![3],
                ..ListingFilters::default()
            };
            let mut counts: Vec<(u64, u64)> = index
                .unmatched_group_counts(&filters, Some(&text))
                .expect("counts")
                .into_iter()
                .collect();
            counts.sort_unstable();
            counts
        };
        assert_eq!(counts("vantor"), [(70, 2), (71, 1), (73, 1), (74, 1)]);
        assert_eq!(counts("diver"), [(70, 2)]);
        assert_eq!(counts("kurofune"), []);
        assert_eq!(counts("nothing"), []);
    }

    #[test]
    fn a_slice_is_placed_in_what_it_was_cut_from_and_nowhere_else() {
        let whole = vec![7u8; 100];
        assert_eq!(range_within(&whole, &whole[10..30]), Some(10..30));
        assert_eq!(range_within(&whole, &whole[100..]), Some(100..100));
        let other = vec![7u8; 20];
        assert_eq!(range_within(&whole[..50], &whole[40..60]), None);
        // Two live allocations never overlap.
        assert_eq!(range_within(&whole, &other), None);
    }

    /// The column of groups is read from the files, each segment's bytes of it whole; an index
    /// in memory has no files to read.
    #[test]
    fn the_group_column_is_read_ahead_from_the_files_whole() {
        let dir = tempfile::tempdir().expect("dir");
        let index = ListingIndex::open_with(dir.path(), FileAccess::PageAlone).expect("index");
        for (first, generation) in [(0, 1), (5_000, 2)] {
            let docs: Vec<ListingDoc> = (first..first + 5_000)
                .map(|id| ListingDoc {
                    id,
                    unmatched_group: (id % 3 != 0)
                        .then_some(id.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                    ..ListingDoc::default()
                })
                .collect();
            index.upsert(&docs, generation).expect("upsert");
        }
        let searcher = index.derived.reader.searcher();
        let column_bytes: usize = (searcher.segment_readers().iter())
            .map(|segment| {
                let handle = (segment.fast_fields())
                    .dynamic_column_handle(names::UNMATCHED_GROUP, ColumnType::U64)
                    .expect("column")
                    .expect("a column of groups");
                tantivy::HasLen::len(handle.file_slice())
            })
            .sum();
        assert!(column_bytes > 10_000, "{column_bytes}");
        assert_eq!(
            index.read_group_column_ahead().expect("read"),
            column_bytes as u64
        );
        let in_memory = ListingIndex::in_memory().expect("index");
        assert_eq!(in_memory.read_group_column_ahead().expect("read"), 0);
    }

    /// A group is found by the start of its reference or its brand text, however short or
    /// wherever the start ends (inside a word, before a reference's third character), with
    /// all its listings counted whatever their titles; a listing without a group, or one
    /// whose brand is the catalogue's, is not found by it.
    #[test]
    fn a_group_is_found_by_the_start_of_its_reference_or_brand_text_with_all_its_listings() {
        let index = ListingIndex::in_memory().expect("index");
        let listing = |id: u64, group: Option<u64>, brand: &str, reference: &str| ListingDoc {
            id,
            model_id: group.is_none().then_some(9),
            brand_id: brand.is_empty().then_some(1),
            unmatched_group: group,
            title: Some("a watch".to_owned()),
            normalized_reference: Some(reference.to_owned()).filter(|r| !r.is_empty()),
            claimed_brand_text: Some(brand.to_owned()).filter(|b| !b.is_empty()),
            ..ListingDoc::default()
        };
        let docs = vec![
            listing(1, Some(70), "maisonverdier", "mv100"),
            listing(2, Some(70), "maisonverdier", "mv100"),
            listing(3, Some(71), "maisonverdier", ""),
            listing(4, Some(72), "", "116610ln"),
            listing(5, Some(73), "", "1"),
            // Matched: no group, so neither its brand text nor its reference finds one.
            listing(6, None, "maisonverdier", "116610ln"),
        ];
        index.upsert(&docs, 1).expect("upsert");
        let counts = |prefix: &str| {
            let text = TextQuery {
                typo_tolerance: false,
                text: prefix.to_owned(),
                normalized_reference: prefix.to_owned(),
            };
            let mut counts: Vec<(u64, u64)> = (index
                .unmatched_group_counts(&ListingFilters::default(), Some(&text)))
            .expect("counts")
            .into_iter()
            .collect();
            counts.sort_unstable();
            counts
        };
        assert_eq!(counts("maisonv"), [(70, 2), (71, 1)]);
        assert_eq!(counts("m"), [(70, 2), (71, 1)]);
        assert_eq!(counts("mv1"), [(70, 2)]);
        assert_eq!(counts("1"), [(72, 1), (73, 1)]);
        assert_eq!(counts("11"), [(72, 1)]);
        assert_eq!(counts("verdier"), []);
    }

    /// The group-only fields find exactly what the listing-wide ones find among the listings
    /// with a group: each word in any of the three word fields, a reference whole (the seller's
    /// or one read in the title), a reference by its start, and a brand filter beside them.
    #[test]
    fn a_text_finds_the_same_groups_through_the_group_fields_as_through_every_listing() {
        let index = ListingIndex::in_memory().expect("index");
        // A title's references given apart: "57 11 A" is read as `5711a`, which no word is,
        // nor starts.
        let listing = |id: u64, group: Option<u64>, title: &str, brand: &str, reference: &str| {
            let normalized = reference.to_lowercase().replace([' ', '-', '.'], "");
            ListingDoc {
                id,
                model_id: group.is_none().then_some(9),
                brand_id: Some(id % 2),
                unmatched_group: group,
                title_references: title
                    .contains("57 11 A")
                    .then(|| "5711a".to_owned())
                    .into_iter()
                    .collect(),
                title: Some(title.to_owned()),
                scraped_brand: Some(brand.to_owned()),
                scraped_reference: Some(reference.to_owned()),
                normalized_reference: Some(normalized).filter(|n| !n.is_empty()),
                ..ListingDoc::default()
            }
        };
        let docs = vec![
            listing(1, Some(70), "Vantor Diver blue", "Vantor", "126610LN"),
            listing(2, Some(71), "Chronograph 57 11 A", "Maison Côte", ""),
            listing(3, Some(72), "Kurofune classic", "kurofune", "SBGA-211"),
            listing(
                4,
                None,
                "Vantor Diver classic 57 11 A",
                "Vantor",
                "126610LN",
            ),
            listing(5, Some(73), "Classic Maison", "", "1266"),
            listing(6, None, "Maison classic", "Maison Côte", "SBGA211"),
            listing(7, Some(70), "Vantor", "Vantor Diver", "126610 LN"),
        ];
        index.upsert(&docs, 1).expect("upsert");
        let searcher = index.derived.reader.searcher();
        for text in [
            "vantor",
            "diver",
            "classic",
            "maison",
            "cote",
            "vantor diver",
            "126610LN",
            "1266",
            "12661",
            "5711a",
            "5711",
            "sbga211",
            "sbga",
            "211",
            "classic maison",
            "nothing",
            "diver 126610ln",
        ] {
            let text = TextQuery {
                typo_tolerance: false,
                text: text.to_owned(),
                normalized_reference: text.to_lowercase().replace(' ', ""),
            };
            for brand in [None, Some(0), Some(1)] {
                let filters = ListingFilters {
                    brand_id: brand,
                    ..ListingFilters::default()
                };
                let every_listing = index.fields.query(&filters, Some(&text));
                let expected = count_groups(&searcher, &*every_listing).expect("count");
                let found = index
                    .unmatched_group_counts(&filters, Some(&text))
                    .expect("count");
                assert_eq!(found, expected, "{:?}, brand {brand:?}", text.text);
            }
        }
        // Not an empty comparison: a reference by its start, one read in a title and a word
        // of a seller's reference each find their groups.
        for (text, groups) in [("1266", 2), ("5711a", 1), ("211", 1)] {
            let text = TextQuery {
                typo_tolerance: false,
                text: text.to_owned(),
                normalized_reference: text.to_owned(),
            };
            let found = index.unmatched_group_counts(&ListingFilters::default(), Some(&text));
            assert_eq!(found.expect("count").len(), groups, "{}", text.text);
        }
    }
}
