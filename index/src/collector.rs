//! Collectors. [`TopIds`] ranks documents by a sort order with ascending id as tie-break: each
//! segment keeps its best `k` by a segment-local key (string sorts use the segment's term
//! ordinals, which are in byte order), and only those survivors' strings are read to merge
//! segments. [`StatsCollector`] computes ranges and distinct counts in one pass.

use crate::query::SortOrder;
use crate::schema::names;
use crate::top_k::TopK;
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, StrColumn};
use tantivy::fastfield::FastFieldReaders;
use tantivy::{DocId, Score, SegmentReader};

/// Ranked ids (best first, at most `k`) and the number of matching documents.
pub struct TopIds {
    key: SortKey,
    k: usize,
}

impl TopIds {
    pub fn new(key: SortKey, k: usize) -> TopIds {
        TopIds { key, k }
    }
}

/// What a sort order ranks by, in fast-field terms; every order then breaks ties by ascending id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Best score first.
    Score,
    /// By a u64 column, then optionally a second one in the same direction; missing values
    /// last in either direction.
    Number {
        primary: &'static str,
        secondary: Option<&'static str>,
        descending: bool,
    },
    /// By a string column, byte order.
    Text {
        field: &'static str,
        descending: bool,
    },
}

impl SortOrder {
    /// The fast fields this catalogue order ranks by.
    pub fn key(self) -> SortKey {
        let number = |primary, secondary, descending| SortKey::Number {
            primary,
            secondary,
            descending,
        };
        let text = |field, descending| SortKey::Text { field, descending };
        match self {
            SortOrder::Relevance => SortKey::Score,
            SortOrder::NameAsc => text(names::NAME_SORT, false),
            SortOrder::NameDesc => text(names::NAME_SORT, true),
            SortOrder::ReferenceAsc => text(names::REF_SORT, false),
            SortOrder::Newest => number(names::NEWEST, None, true),
            SortOrder::ModelsDesc => number(names::MODEL_COUNT, None, true),
            SortOrder::IdAsc => number(names::ID, None, false),
            SortOrder::Lead => number(names::LISTING_COUNT, Some(names::NEWEST), true),
        }
    }
}

/// A segment-local ranking key: smaller ranks first.
type LocalKey = (u64, u64, u64);

/// How a segment reads the key of one document.
enum KeySource {
    Score,
    Number(NumberKey),
    /// By a string column's term ordinal.
    Text {
        column: StrColumn,
        descending: bool,
    },
}

pub struct TopIdsSegment {
    ids: Column<u64>,
    source: KeySource,
    k: usize,
    best: TopK<LocalKey>,
    total: usize,
}

/// Merge key across segments.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum GlobalKey {
    Local(u64, u64),
    Text(String),
    TextReversed(Reverse<String>),
}

pub struct SegmentFruit {
    ranked: Vec<(GlobalKey, u64)>,
    total: usize,
}

impl Collector for TopIds {
    type Fruit = (Vec<u64>, usize);
    type Child = TopIdsSegment;

    fn for_segment(&self, _: u32, segment: &SegmentReader) -> tantivy::Result<TopIdsSegment> {
        let fast = segment.fast_fields();
        let source = match self.key {
            SortKey::Score => KeySource::Score,
            SortKey::Number {
                primary,
                secondary,
                descending,
            } => KeySource::Number(NumberKey::open(fast, primary, secondary, descending)?),
            SortKey::Text { field, descending } => KeySource::Text {
                column: fast.str(field)?.ok_or_else(|| {
                    tantivy::TantivyError::SchemaError(format!(
                        "{field} is not a string fast field"
                    ))
                })?,
                descending,
            },
        };
        Ok(TopIdsSegment {
            ids: fast.u64(names::ID)?,
            source,
            k: self.k,
            best: TopK::new(self.k),
            total: 0,
        })
    }

    fn requires_scoring(&self) -> bool {
        self.key == SortKey::Score
    }

    fn merge_fruits(&self, fruits: Vec<SegmentFruit>) -> tantivy::Result<(Vec<u64>, usize)> {
        let total = fruits.iter().map(|f| f.total).sum();
        let all = fruits.into_iter().flat_map(|f| f.ranked).collect();
        Ok((best_ids(all, self.k), total))
    }
}

/// The ids of the `k` smallest (key, id) pairs of every segment's best, in order: how the
/// segments' pages of any ranking merge into one.
pub(crate) fn best_ids<K: Ord>(mut ranked: Vec<(K, u64)>, k: usize) -> Vec<u64> {
    ranked.sort_unstable();
    ranked.into_iter().take(k).map(|(_, id)| id).collect()
}

/// A segment's reader of a [`SortKey::Number`]: ascending or (with `descending`) descending by
/// a u64 column, then optionally a second; missing values last. Shared with the group
/// summaries ([`crate::summary`]), whose leads must rank exactly as [`TopIds`] does.
pub(crate) struct NumberKey {
    primary: Column<u64>,
    secondary: Option<Column<u64>>,
    descending: bool,
}

impl NumberKey {
    pub(crate) fn open(
        fast: &FastFieldReaders,
        primary: &str,
        secondary: Option<&str>,
        descending: bool,
    ) -> tantivy::Result<NumberKey> {
        Ok(NumberKey {
            primary: fast.u64(primary)?,
            secondary: secondary.map(|name| fast.u64(name)).transpose()?,
            descending,
        })
    }

    /// The document's key: smaller ranks first.
    pub(crate) fn of(&self, doc: DocId) -> (u64, u64) {
        (
            ordered(self.primary.first(doc), self.descending),
            self.secondary
                .as_ref()
                .map_or(0, |s| ordered(s.first(doc), self.descending)),
        )
    }
}

fn ordered(value: Option<u64>, descending: bool) -> u64 {
    match (value, descending) {
        (Some(v), false) => v,
        (Some(v), true) => !v,
        (None, _) => u64::MAX,
    }
}

impl SegmentCollector for TopIdsSegment {
    type Fruit = SegmentFruit;

    fn collect(&mut self, doc: DocId, score: Score) {
        self.total += 1;
        if self.k == 0 {
            return;
        }
        let (primary, secondary) = match &self.source {
            // Scores are non-negative, so their bit patterns order like the floats.
            KeySource::Score => (!u64::from(score.max(0.0).to_bits()), 0),
            KeySource::Number(key) => key.of(doc),
            KeySource::Text { column, descending } => {
                (ordered(column.ords().first(doc), *descending), 0)
            }
        };
        // The index keeps each segment in id order, so every document kept so far has a
        // smaller id: one that only ties the worst kept loses on id, read for none of them.
        if (self.best.worst_when_full())
            .is_some_and(|worst| (primary, secondary) >= (worst.0, worst.1))
        {
            return;
        }
        let id = self.ids.first(doc).unwrap_or(u64::MAX);
        self.best.offer((primary, secondary, id));
    }

    fn harvest(self) -> SegmentFruit {
        let best = self.best.into_vec();
        let KeySource::Text { column, descending } = &self.source else {
            let ranked = (best.into_iter())
                .map(|(primary, secondary, id)| (GlobalKey::Local(primary, secondary), id))
                .collect();
            return SegmentFruit {
                ranked,
                total: self.total,
            };
        };
        let descending = *descending;
        let ord_of = |primary: u64| if descending { !primary } else { primary };
        let ords: Vec<u64> = (best.iter())
            .map(|&(primary, _, _)| ord_of(primary))
            .collect();
        let texts = terms_of(column, ords);
        let ranked = (best.into_iter())
            .map(|(primary, _, id)| {
                // A missing ordinal (u64::MAX) resolves to nothing: sorts as "".
                let text = texts.get(&ord_of(primary)).cloned().unwrap_or_default();
                let key = if descending {
                    GlobalKey::TextReversed(Reverse(text))
                } else {
                    GlobalKey::Text(text)
                };
                (key, id)
            })
            .collect();
        SegmentFruit {
            ranked,
            total: self.total,
        }
    }
}

/// The texts of term ordinals, read in one ordered pass over the dictionary: `ord_to_str`
/// decompresses the ordinal's dictionary block again on every call, which made a page of a
/// name-sorted list slow (docs/decisions.md, D-52).
pub(crate) fn terms_of(column: &StrColumn, mut ords: Vec<u64>) -> HashMap<u64, String> {
    ords.retain(|&ord| ord < column.num_terms() as u64);
    ords.sort_unstable();
    ords.dedup();
    let mut texts = Vec::with_capacity(ords.len());
    // A failed read leaves the rest unresolved: they sort as "", as a missing value does.
    let _ = column.dictionary().sorted_ords_to_term_cb(&ords, |bytes| {
        texts.push(String::from_utf8_lossy(bytes).into_owned())
    });
    ords.into_iter().zip(texts).collect()
}

/// Figures over a set of models. Years and diameters are `None` when no model has one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CatalogueStats {
    pub model_count: u64,
    pub year_min: Option<u64>,
    pub year_max: Option<u64>,
    pub diameter_min: Option<f64>,
    pub diameter_max: Option<f64>,
    /// Distinct case materials, sorted.
    pub case_materials: Vec<String>,
    /// Distinct movements run by the models.
    pub movement_count: u64,
    pub listing_count: u64,
}

/// Computes [`CatalogueStats`] over the matching models.
pub struct StatsCollector;

pub struct StatsSegment {
    years: Column<u64>,
    diameters: Option<Column<f64>>,
    materials: Option<StrColumn>,
    calibers: Column<u64>,
    listings: Column<u64>,
    stats: CatalogueStats,
    material_ords: HashSet<u64>,
    caliber_ids: HashSet<u64>,
}

pub struct StatsFruit {
    stats: CatalogueStats,
    materials: HashSet<String>,
    caliber_ids: HashSet<u64>,
}

fn widen<T: PartialOrd + Copy>(min: &mut Option<T>, max: &mut Option<T>, value: T) {
    if min.is_none_or(|m| value < m) {
        *min = Some(value);
    }
    if max.is_none_or(|m| value > m) {
        *max = Some(value);
    }
}

impl Collector for StatsCollector {
    type Fruit = CatalogueStats;
    type Child = StatsSegment;

    fn for_segment(&self, _: u32, segment: &SegmentReader) -> tantivy::Result<StatsSegment> {
        let fast = segment.fast_fields();
        Ok(StatsSegment {
            years: fast.u64(names::RELEASE_YEAR)?,
            diameters: fast.column_opt(names::DIAMETER)?,
            materials: fast.str(names::CASE_MATERIAL)?,
            calibers: fast.u64(names::CALIBER_ID)?,
            listings: fast.u64(names::LISTING_COUNT)?,
            stats: CatalogueStats::default(),
            material_ords: HashSet::new(),
            caliber_ids: HashSet::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<StatsFruit>) -> tantivy::Result<CatalogueStats> {
        let mut out = CatalogueStats::default();
        let mut materials = HashSet::new();
        let mut calibers = HashSet::new();
        for fruit in fruits {
            let s = fruit.stats;
            out.model_count += s.model_count;
            out.listing_count += s.listing_count;
            s.year_min
                .into_iter()
                .chain(s.year_max)
                .for_each(|v| widen(&mut out.year_min, &mut out.year_max, v));
            s.diameter_min
                .into_iter()
                .chain(s.diameter_max)
                .for_each(|v| widen(&mut out.diameter_min, &mut out.diameter_max, v));
            materials.extend(fruit.materials);
            calibers.extend(fruit.caliber_ids);
        }
        out.case_materials = materials.into_iter().collect();
        out.case_materials.sort();
        out.movement_count = calibers.len() as u64;
        Ok(out)
    }
}

impl SegmentCollector for StatsSegment {
    type Fruit = StatsFruit;

    fn collect(&mut self, doc: DocId, _: Score) {
        let s = &mut self.stats;
        s.model_count += 1;
        s.listing_count += self.listings.first(doc).unwrap_or(0);
        if let Some(year) = self.years.first(doc) {
            widen(&mut s.year_min, &mut s.year_max, year);
        }
        if let Some(diameter) = self.diameters.as_ref().and_then(|c| c.first(doc)) {
            widen(&mut s.diameter_min, &mut s.diameter_max, diameter);
        }
        if let Some(materials) = &self.materials {
            self.material_ords.extend(materials.term_ords(doc));
        }
        if let Some(caliber) = self.calibers.first(doc) {
            self.caliber_ids.insert(caliber);
        }
    }

    fn harvest(self) -> StatsFruit {
        let materials = match &self.materials {
            Some(column) => terms_of(column, self.material_ords.into_iter().collect())
                .into_values()
                .collect(),
            None => HashSet::new(),
        };
        StatsFruit {
            stats: self.stats,
            materials,
            caliber_ids: self.caliber_ids,
        }
    }
}
