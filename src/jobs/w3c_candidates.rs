//! The candidates of one W3C reconciliation query (`/reconcile`): the catalogue models,
//! calibres or brands a row may name, each scored by the signals it is made of. About models:
//! the listing matcher alone decides `match` (brand + normalised reference, exactly one model,
//! never a name), the store's reference keys and the catalogue index propose the rest.
//! Read-only; the API turns a [`Scored`] into the protocol's candidate.

use super::duplicates::text_similarity;
use super::matching::match_listing;
use crate::domain::{
    normalize_reference, reference_base, text_runs, Brand, BrandId, Caliber, ListingDetails, Model,
    ModelId, Slug, TextRun,
};
use crate::store::{cached, Store, StoreError, StoreResult};
use catalogue_index::{
    CatalogueIndex, DocKind, Filters, GenerationCache, IndexError, SearchRequest, SortOrder,
};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Why candidates could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CandidatesError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
}

type Result<T> = std::result::Result<T, CandidatesError>;

/// What a query is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Model,
    Caliber,
    Brand,
}

/// One query: its text (already cut to what a search reads), what it is about, how many
/// candidates it wants, and what its understood properties say.
#[derive(Debug, Clone)]
pub struct CandidateQuery<'q> {
    pub text: &'q str,
    pub kind: Kind,
    pub limit: usize,
    pub clues: &'q Clues,
}

/// What the understood properties say; the rest are ignored, as the protocol asks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Clues {
    pub brand: Option<String>,
    pub reference: Option<String>,
    pub series: Option<String>,
    pub caliber: Option<String>,
    pub year: Option<i32>,
}

/// The record a candidate names, by the slugs its protocol id is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    Model { brand: Slug, model: Slug },
    Caliber { brand: Slug, caliber: Slug },
    Brand { brand: Slug },
}

/// A feature's value: a signal that holds or not, or a similarity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FeatureValue {
    Flag(bool),
    Number(f64),
}

/// A candidate, scored: 100 for a match, else at most 99, and the features the score is made of.
#[derive(Debug, Clone)]
pub struct Scored {
    pub named: Named,
    pub name: String,
    pub description: String,
    pub score: f64,
    pub matched: bool,
    pub features: Vec<(&'static str, FeatureValue)>,
}

/// How a model is named in results: brand, name and reference, as a collector writes it.
pub fn model_label(brand: &Brand, model: &Model) -> String {
    format!("{} {} {}", brand.name, model.name, model.reference_number)
}

/// How a calibre is named in results: brand and reference, then its own name when that says
/// more (`Rolex 3135`, `ETA 2824-2 (Elaborated)`); a name that already holds the reference is
/// used alone, with the brand in front when it lacks it.
pub fn caliber_label(brand: &Brand, caliber: &Caliber) -> String {
    let name = caliber.name.as_deref().unwrap_or("").trim();
    let holds =
        |text: &str, part: &str| normalize_reference(text).contains(&normalize_reference(part));
    if name.is_empty() {
        format!("{} {}", brand.name, caliber.reference)
    } else if !holds(name, &caliber.reference) {
        format!("{} {} ({name})", brand.name, caliber.reference)
    } else if holds(name, &brand.name) {
        name.to_owned()
    } else {
        format!("{} {name}", brand.name)
    }
}

/// Models weighed per source (reference keys, reference base, names, search) before ranking.
const POOL: usize = 40;

/// What candidates are read from: the store and the catalogue index.
#[derive(Clone, Copy)]
pub struct Catalogue<'a> {
    pub store: &'a Store,
    pub index: &'a CatalogueIndex,
    pub brand_names: &'a KeptBrandNames,
}

/// The candidates of `query`, unordered (the API orders them by score, then by protocol id).
pub fn candidates(at: Catalogue<'_>, query: &CandidateQuery<'_>) -> Result<Vec<Scored>> {
    match query.kind {
        Kind::Model => model_candidates(at, query),
        Kind::Caliber => caliber_candidates(at, query),
        Kind::Brand => brand_candidates(at, query),
    }
}

/// What a query says about a watch, read once: its text, the brand the matcher resolved, and
/// the reference keys it holds.
struct Reading<'q> {
    text: &'q str,
    clues: &'q Clues,
    /// When the brand was written with a typo: the text, and the `brand` property when it was
    /// that, with the brand's name written right (names are compared with these).
    corrected: Option<(String, Option<String>)>,
    brand: Option<BrandId>,
    /// The matcher's verdict: the one model brand + reference name, if any.
    matched: Option<ModelId>,
    /// Normalised reference keys: the `reference` property whole, and every run of the text
    /// and of that property holding a digit (`16610lv`, `16610`). They find candidates.
    keys: BTreeSet<String>,
    /// The keys the query says, which the signals compare: see [`Reading::settle`].
    said: BTreeSet<String>,
    /// The reference bases of what the query says.
    said_bases: BTreeSet<String>,
    /// The runs holding a digit, of the text and of the `reference` property.
    runs: Vec<Vec<TextRun>>,
}

impl<'q> Reading<'q> {
    fn of(at: Catalogue<'_>, query: &CandidateQuery<'q>) -> StoreResult<Reading<'q>> {
        let text = query.text;
        let clues = query.clues;
        let details = ListingDetails {
            title: (!text.is_empty()).then(|| text.to_owned()),
            scraped_brand: clues.brand.clone(),
            scraped_reference: clues.reference.clone(),
            ..ListingDetails::default()
        };
        // The listing matcher, as is: a row matches exactly when a listing saying the same
        // would.
        let decided = match_listing(at.store, &details)?;
        let whole: BTreeSet<String> = clues
            .reference
            .iter()
            .map(|r| normalize_reference(r))
            .filter(|r| !r.is_empty())
            .collect();
        let runs: Vec<Vec<TextRun>> = [Some(text), clues.reference.as_deref()]
            .into_iter()
            .flatten()
            .map(|field| {
                let mut runs = text_runs(field);
                runs.retain(|run| run.key.chars().any(|c| c.is_ascii_digit()));
                runs
            })
            .collect();
        let keys = whole
            .iter()
            .cloned()
            .chain(runs.iter().flatten().map(|run| run.key.clone()))
            .collect();
        let typo = match decided.brand_id {
            Some(_) => None,
            None => match clues.brand.as_deref() {
                Some(written) => brand_with_a_typo(at, written)?
                    .map(|typo| (typo.brand, text.to_owned(), Some(typo.corrected))),
                None => brand_with_a_typo(at, text)?.map(|typo| (typo.brand, typo.corrected, None)),
            },
        };
        let (brand, corrected) = match typo {
            Some((brand, text, brand_text)) => (Some(brand), Some((text, brand_text))),
            None => (decided.brand_id, None),
        };
        Ok(Reading {
            text,
            clues,
            corrected,
            brand,
            matched: decided.model_id,
            keys,
            said: whole,
            said_bases: BTreeSet::new(),
            runs,
        })
    }

    /// Narrows the keys to what the query says, given every reference of the models weighed:
    /// a run inside a longer run that is such a reference is not said on its own (`16610 LV`
    /// says 16610LV, not 16610 as well), as the matcher reads it.
    fn settle(&mut self, references: &BTreeSet<String>) {
        for runs in &self.runs {
            let shadowed = |run: &TextRun| {
                runs.iter()
                    .any(|other| other.covers(run) && references.contains(&other.key))
            };
            self.said.extend(
                runs.iter()
                    .filter(|run| !shadowed(run))
                    .map(|run| run.key.clone()),
            );
        }
        // Bases read from the references as written too: a dial code after a hyphen
        // (`M79030N-0001`) is only recognised before normalising.
        let written = self.clues.reference.iter().map(String::as_str);
        let words = self.text.split_whitespace();
        self.said_bases = self
            .said
            .iter()
            .map(String::as_str)
            .chain(written)
            .chain(words)
            .filter_map(reference_base)
            .collect();
    }

    /// The text names are compared with: the query, else the properties that name.
    fn name_text(&self) -> String {
        let (text, brand) = match &self.corrected {
            Some((text, brand)) => (text.as_str(), brand.as_ref().or(self.clues.brand.as_ref())),
            None => (self.text, self.clues.brand.as_ref()),
        };
        if !text.is_empty() {
            return text.to_owned();
        }
        [
            brand,
            self.clues.series.as_ref(),
            self.clues.reference.as_ref(),
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join(" ")
    }
}

/// A brand written with one typo (`Rolexx`, `Patek Philipe`): the brand, and the text with
/// its name written right in place of the typo.
struct TypoBrand {
    brand: BrandId,
    corrected: String,
}

/// A brand's name as a typo is looked for in it: lowercased, its length and words counted.
#[derive(Debug)]
pub struct BrandName {
    id: BrandId,
    name: String,
    lower: String,
    length: usize,
    words: usize,
}

/// Every brand's name, kept per store generation (any write moves it; a brand added without a
/// model too): a query whose brand the matcher did not find compares them all, and reads them
/// from the store once a generation rather than once a query.
pub type KeptBrandNames = GenerationCache<(), Arc<[BrandName]>>;

fn brand_names(at: Catalogue<'_>) -> StoreResult<Arc<[BrandName]>> {
    let edition = at.store.generation()?.0;
    if let Some(names) = at.brand_names.get(edition, &()) {
        return Ok(names);
    }
    let names: Arc<[BrandName]> = (at.store.catalogue().brands())
        .map(|brand| {
            brand.map(|brand| {
                let lower = brand.name.to_lowercase();
                BrandName {
                    id: brand.id,
                    length: lower.chars().count(),
                    words: lower.split_whitespace().count(),
                    lower,
                    name: brand.name,
                }
            })
        })
        .collect::<StoreResult<Vec<_>>>()?
        .into();
    at.brand_names.keep(edition, (), names.clone());
    Ok(names)
}

/// The one brand whose name `text` writes with one typo, when the matcher named none: its models
/// become candidates, as a model's words tolerate a typo, but never a match (only the matcher
/// decides one). Names shorter than five letters are too short to tell a typo from another word.
fn brand_with_a_typo(at: Catalogue<'_>, text: &str) -> StoreResult<Option<TypoBrand>> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let names = brand_names(at)?;
    let mut found = names.iter().filter_map(|brand| {
        if brand.length < 5 || brand.words > lower.len() {
            return None;
        }
        let near = |window: &[String]| {
            let written = window.join(" ");
            written.chars().count().abs_diff(brand.length) <= 1
                && strsim::damerau_levenshtein(&written, &brand.lower) <= 1
        };
        let at = lower.windows(brand.words).position(near)?;
        Some((brand, at))
    });
    let (Some((brand, at)), None) = (found.next(), found.next()) else {
        return Ok(None);
    };
    let mut corrected: Vec<&str> = words[..at].to_vec();
    corrected.push(&brand.name);
    corrected.extend(&words[at + brand.words..]);
    Ok(Some(TypoBrand {
        brand: brand.id,
        corrected: corrected.join(" "),
    }))
}

fn model_candidates(at: Catalogue<'_>, query: &CandidateQuery<'_>) -> Result<Vec<Scored>> {
    let mut reading = Reading::of(at, query)?;
    let ids = model_pool(at, &reading)?;
    let models = at.store.catalogue().models(&ids)?;
    let references = models
        .iter()
        .flat_map(|m| m.references().map(normalize_reference))
        .collect();
    reading.settle(&references);
    let mut context = Context::default();
    let mut found = Vec::with_capacity(models.len());
    for model in &models {
        if let Some(candidate) = model_candidate(at, &reading, model, &mut context)? {
            found.push(candidate);
        }
    }
    Ok(found)
}

/// The models worth weighing, without repeats: the match, the brand's models by reference key
/// and by reference base, by name words, and what the catalogue search finds for the text and
/// for each key (across brands when no brand is known).
fn model_pool(at: Catalogue<'_>, reading: &Reading<'_>) -> Result<Vec<ModelId>> {
    let mut ids: Vec<ModelId> = reading.matched.into_iter().collect();
    if let Some(brand) = reading.brand {
        for key in &reading.keys {
            ids.extend(at.store.catalogue().model_ids_by_reference(brand, key)?);
        }
        for base in reading.keys.iter().filter_map(|k| reference_base(k)) {
            let near = at
                .index
                .models_with_reference_prefix(brand.0, &base, POOL)?;
            ids.extend(near.into_iter().map(ModelId));
        }
        let named = at
            .index
            .models_named_like(brand.0, &reading.name_text(), POOL)?;
        ids.extend(named.into_iter().map(ModelId));
    }
    let texts = std::iter::once(reading.name_text()).chain(reading.keys.iter().cloned());
    for text in texts.filter(|t| !t.is_empty()) {
        let hits = at.index.search(&search(&text, reading.brand))?;
        ids.extend(hits.ids.into_iter().map(ModelId));
    }
    if let (true, Some(brand)) = (ids.is_empty(), reading.brand) {
        // A reference the brand lacks finds nothing by itself: the brand's models its words
        // find stay candidates (never a match), rather than none.
        let words: Vec<String> = (reading.name_text().split_whitespace())
            .filter(|word| !word.chars().any(|c| c.is_ascii_digit()))
            .map(str::to_owned)
            .collect();
        let hits = at.index.search(&search(&words.join(" "), Some(brand)))?;
        ids.extend(hits.ids.into_iter().map(ModelId));
    }
    let mut seen = BTreeSet::new();
    ids.retain(|id| seen.insert(*id));
    Ok(ids)
}

/// The catalogue search of `GET /models?q=` (every word, or the whole text as a reference or
/// its prefix), within `brand` when known.
fn search(text: &str, brand: Option<BrandId>) -> SearchRequest {
    SearchRequest {
        kind: DocKind::Model,
        text: Some(super::typed_text(text)),
        filters: Filters {
            brand_id: brand.map(|b| b.0),
            ..Filters::default()
        },
        sort: SortOrder::Relevance,
        offset: 0,
        limit: POOL,
    }
}

/// Brands, series and calibres read while weighing one query's models, each read once.
#[derive(Default)]
struct Context {
    brands: HashMap<BrandId, Option<Brand>>,
    series: HashMap<crate::domain::SeriesId, Option<String>>,
    calibers: HashMap<crate::domain::CaliberId, Option<Caliber>>,
}

fn model_candidate(
    at: Catalogue<'_>,
    reading: &Reading<'_>,
    model: &Model,
    context: &mut Context,
) -> StoreResult<Option<Scored>> {
    let Some(brand) = cached(&mut context.brands, model.brand_id, || {
        at.store.catalogue().brand(model.brand_id)
    })?
    .cloned() else {
        return Ok(None);
    };
    let series = cached(&mut context.series, model.series_id, || {
        Ok(at
            .store
            .catalogue()
            .series(model.series_id)?
            .map(|s| s.name))
    })?
    .cloned();
    let caliber = match model.caliber_id {
        Some(id) => cached(&mut context.calibers, id, || {
            at.store.catalogue().caliber(id)
        })?
        .cloned(),
        None => None,
    };
    let label = model_label(&brand, model);
    let signals = Signals::weigh(reading, model, &label, series.as_deref(), caliber.as_ref());
    Ok(Some(Scored {
        named: Named::Model {
            brand: brand.slug.clone(),
            model: model.slug.clone(),
        },
        score: signals.score(),
        matched: signals.matched,
        description: describe(&brand, model, series.as_deref()),
        features: signals.features(),
        name: label,
    }))
}

/// `Rolex · Submariner · 16610LV · 2003–2010`: what sets a candidate apart in a list.
fn describe(brand: &Brand, model: &Model, series: Option<&str>) -> String {
    let years = match (model.spec.release_year, model.spec.discontinuation_year) {
        (Some(from), Some(to)) => Some(format!("{from}–{to}")),
        (Some(from), None) => Some(format!("since {from}")),
        (None, Some(to)) => Some(format!("until {to}")),
        (None, None) => None,
    };
    [
        Some(brand.name.as_str()),
        series,
        Some(&model.reference_number),
    ]
    .into_iter()
    .flatten()
    .map(str::to_owned)
    .chain(years)
    .collect::<Vec<_>>()
    .join(" · ")
}

/// Why a model is a candidate. The score is made of these alone (docs/decisions.md, D-146).
struct Signals {
    matched: bool,
    same_reference: bool,
    alternate_reference: bool,
    base_variant: bool,
    name_similarity: f64,
    brand_match: bool,
    /// Set only for the properties the query gave.
    series_match: Option<bool>,
    caliber_match: Option<bool>,
    year_match: Option<bool>,
}

impl Signals {
    fn weigh(
        reading: &Reading<'_>,
        model: &Model,
        label: &str,
        series: Option<&str>,
        caliber: Option<&Caliber>,
    ) -> Signals {
        let primary = normalize_reference(&model.reference_number);
        let alternates: Vec<String> = model
            .alternate_references
            .iter()
            .map(|r| normalize_reference(r))
            .collect();
        let bases: BTreeSet<String> = model.references().filter_map(reference_base).collect();
        let keys = &reading.said;
        let clues = reading.clues;
        let same = |wanted: Option<&String>, have: &[&str]| {
            wanted.map(|w| {
                have.iter()
                    .any(|h| normalize_reference(h) == normalize_reference(w))
            })
        };
        Signals {
            matched: reading.matched == Some(model.id),
            same_reference: keys.contains(&primary),
            alternate_reference: alternates.iter().any(|a| keys.contains(a)),
            base_variant: reading.said_bases.iter().any(|b| bases.contains(b)),
            name_similarity: text_similarity(&reading.name_text(), label),
            brand_match: reading.brand == Some(model.brand_id),
            series_match: same(
                clues.series.as_ref(),
                &series.into_iter().collect::<Vec<_>>(),
            ),
            caliber_match: same(
                clues.caliber.as_ref(),
                &caliber
                    .map(|c| vec![c.reference.as_str(), c.slug.as_str()])
                    .unwrap_or_default(),
            ),
            year_match: clues.year.map(|year| in_production(model, year)),
        }
    }

    /// 100 for a match; otherwise at most 99: reference 60 (same), 55 (alternate) or 35
    /// (base variant), brand 15, name similarity up to 15, each property that agrees 4.
    fn score(&self) -> f64 {
        if self.matched {
            return 100.0;
        }
        let reference = if self.same_reference {
            60.0
        } else if self.alternate_reference {
            55.0
        } else if self.base_variant {
            35.0
        } else {
            0.0
        };
        let agreeing = [self.series_match, self.caliber_match, self.year_match]
            .into_iter()
            .filter(|m| *m == Some(true))
            .count() as f64;
        let brand = if self.brand_match { 15.0 } else { 0.0 };
        let score = reference + brand + 15.0 * self.name_similarity + 4.0 * agreeing;
        (score.min(99.0) * 10.0).round() / 10.0
    }

    fn features(&self) -> Vec<(&'static str, FeatureValue)> {
        let flag = |id, value| (id, FeatureValue::Flag(value));
        let mut features = vec![
            flag("sameReference", self.same_reference),
            flag("alternateReference", self.alternate_reference),
            flag("baseVariant", self.base_variant),
            (
                "nameSimilarity",
                FeatureValue::Number((self.name_similarity * 1000.0).round() / 1000.0),
            ),
            flag("brandMatch", self.brand_match),
        ];
        let given = [
            ("seriesMatch", self.series_match),
            ("caliberMatch", self.caliber_match),
            ("yearInProduction", self.year_match),
        ];
        features.extend(
            given
                .into_iter()
                .filter_map(|(id, value)| value.map(|v| flag(id, v))),
        );
        features
    }
}

/// True when `year` falls within the model's production years, as far as they are known.
fn in_production(model: &Model, year: i32) -> bool {
    let spec = &model.spec;
    spec.release_year.is_none_or(|from| from <= year)
        && spec.discontinuation_year.is_none_or(|to| year <= to)
        && (spec.release_year.is_some() || spec.discontinuation_year.is_some())
}

/// Calibres: the brand's calibre whose reference is a key of the query matches when it is the
/// only one; without a brand, calibres whose slug is a key are candidates, never a match.
fn caliber_candidates(at: Catalogue<'_>, query: &CandidateQuery<'_>) -> Result<Vec<Scored>> {
    let reading = Reading::of(at, query)?;
    let mut found: Vec<(Brand, Caliber)> = Vec::new();
    match reading.brand {
        Some(brand_id) => {
            for key in &reading.keys {
                if let Some(caliber) = at.store.catalogue().caliber_by_reference(brand_id, key)? {
                    if let Some(brand) = at.store.catalogue().brand(brand_id)? {
                        found.push((brand, caliber));
                    }
                }
            }
        }
        None => {
            for slug in reading.keys.iter().filter_map(|k| Slug::parse(k).ok()) {
                for caliber in at.store.catalogue().calibers_with_slug(&slug)? {
                    if let Some(brand) = at.store.catalogue().brand(caliber.brand_id)? {
                        found.push((brand, caliber));
                    }
                }
            }
        }
    }
    let mut seen = BTreeSet::new();
    found.retain(|(_, caliber)| seen.insert(caliber.id));
    let unique = reading.brand.is_some() && found.len() == 1;
    let name_text = reading.name_text();
    Ok(found
        .iter()
        .map(|(brand, caliber)| {
            let label = caliber_label(brand, caliber);
            let similarity = text_similarity(&name_text, &label);
            let brand_match = reading.brand == Some(brand.id);
            named_candidate(
                Named::Caliber {
                    brand: brand.slug.clone(),
                    caliber: caliber.slug.clone(),
                },
                label,
                caliber.kind.clone().unwrap_or_default(),
                Verdict {
                    matched: unique,
                    base: if brand_match { 80.0 } else { 60.0 },
                    similarity,
                    extra: ("brandMatch", brand_match),
                },
            )
        })
        .collect())
}

/// Brands: the text (or the `brand` property) that is exactly one brand's name, slug or alias
/// matches it; brands the catalogue search finds for the text are candidates.
fn brand_candidates(at: Catalogue<'_>, query: &CandidateQuery<'_>) -> Result<Vec<Scored>> {
    let text = match query.clues.brand.as_deref() {
        Some(brand) if query.text.is_empty() => brand,
        _ => query.text,
    };
    let exact = at
        .store
        .catalogue()
        .brand_by_alias(&normalize_reference(text))?;
    let mut request = search(text, None);
    request.kind = DocKind::Brand;
    let searched = at.index.search(&request)?.ids.into_iter().map(BrandId);
    let typo = match exact.is_empty() {
        true => brand_with_a_typo(at, text)?.map(|typo| typo.brand),
        false => None,
    };
    let mut seen = BTreeSet::new();
    let mut found = Vec::new();
    for id in exact.iter().copied().chain(typo).chain(searched) {
        if !seen.insert(id) {
            continue;
        }
        let Some(brand) = at.store.catalogue().brand(id)? else {
            continue;
        };
        let is_named = exact.contains(&id);
        found.push(named_candidate(
            Named::Brand {
                brand: brand.slug.clone(),
            },
            brand.name.clone(),
            brand.country.clone().unwrap_or_default(),
            Verdict {
                matched: is_named && exact.len() == 1,
                base: if is_named { 85.0 } else { 0.0 },
                similarity: text_similarity(text, &brand.name),
                extra: ("exactName", is_named),
            },
        ));
    }
    Ok(found)
}

/// How a calibre or brand candidate scores: 100 for a match, else its base plus up to 14 for
/// name similarity, at most 99.
struct Verdict {
    matched: bool,
    base: f64,
    similarity: f64,
    extra: (&'static str, bool),
}

fn named_candidate(named: Named, name: String, description: String, v: Verdict) -> Scored {
    let score = if v.matched {
        100.0
    } else {
        ((v.base + 14.0 * v.similarity).min(99.0) * 10.0).round() / 10.0
    };
    Scored {
        named,
        name,
        score,
        matched: v.matched,
        description,
        features: vec![
            (
                "nameSimilarity",
                FeatureValue::Number((v.similarity * 1000.0).round() / 1000.0),
            ),
            (v.extra.0, FeatureValue::Flag(v.extra.1)),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_inside_a_longer_reference_is_not_said_on_its_own() {
        let clues = Clues::default();
        let runs = |text: &str| {
            let mut runs = text_runs(text);
            runs.retain(|run| run.key.chars().any(|c| c.is_ascii_digit()));
            vec![runs]
        };
        let settled = |text: &str, references: &[&str]| {
            let mut reading = Reading {
                text,
                clues: &clues,
                corrected: None,
                brand: None,
                matched: None,
                keys: BTreeSet::new(),
                said: BTreeSet::new(),
                said_bases: BTreeSet::new(),
                runs: runs(text),
            };
            reading.settle(&references.iter().map(|r| r.to_string()).collect());
            (reading.said, reading.said_bases)
        };
        let said = |text: &str, references: &[&str]| settled(text, references).0;
        let both = ["16610", "16610lv"];
        assert!(!said("Rolex 16610 LV", &both).contains("16610"));
        assert!(said("Rolex 16610 LV", &both).contains("16610lv"));
        // Nothing longer is a reference: the base reference is what the text says.
        assert!(said("Rolex 16610 Kermit", &both).contains("16610"));
        // The base comes from the reference as written: its dial code dropped.
        let (_, bases) = settled("Tudor M79030N-0001", &["m79030n0001", "79030n"]);
        assert!(bases.contains("79030"), "{bases:?}");
    }

    #[test]
    fn only_a_match_scores_100() {
        let signals = Signals {
            matched: false,
            same_reference: true,
            alternate_reference: true,
            base_variant: true,
            name_similarity: 1.0,
            brand_match: true,
            series_match: Some(true),
            caliber_match: Some(true),
            year_match: Some(true),
        };
        assert_eq!(signals.score(), 99.0);
        assert_eq!(
            Signals {
                matched: true,
                ..signals
            }
            .score(),
            100.0
        );
    }
}
