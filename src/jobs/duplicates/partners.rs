//! Where the duplicate finder looks up a model's possible partners: the store's reference and
//! base keys, for the few models a write touched, or a table of every model's summary held in
//! memory, for the full pass over a whole catalogue. One rule ([`pairs_among`]) reads either.

use crate::domain::{normalize_reference, BrandId, DuplicatePair, DuplicateSignal, Model, ModelId};
use crate::store::{Store, StoreResult};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

/// What the finder reads of a model: its brand, its name lowercased (for the name score), its
/// normalised references (the primary first) and their bases.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub id: ModelId,
    pub brand: BrandId,
    name: Box<str>,
    primary: Box<str>,
    /// Every reference normalised, the primary first; empty ones left out.
    references: Box<[Box<str>]>,
    /// The distinct bases of the references as written, in order.
    bases: Box<[Box<str>]>,
}

impl Summary {
    pub fn of(model: &Model) -> Summary {
        let references = model
            .references()
            .map(normalize_reference)
            .filter(|r| !r.is_empty())
            .map(String::into_boxed_str)
            .collect();
        Summary {
            id: model.id,
            brand: model.brand_id,
            name: model.name.to_lowercase().into_boxed_str(),
            primary: normalize_reference(&model.reference_number).into_boxed_str(),
            references,
            bases: model
                .reference_bases()
                .into_iter()
                .map(String::into_boxed_str)
                .collect(),
        }
    }

    /// Its bases, as [`Model::reference_bases`] gives them.
    pub fn bases(&self) -> impl Iterator<Item = &str> {
        self.bases.iter().map(|b| &**b)
    }

    fn has_reference(&self, normalized: &str) -> bool {
        self.references.iter().any(|r| &**r == normalized)
    }

    fn has_base(&self, base: &str) -> bool {
        self.bases.iter().any(|b| &**b == base)
    }
}

/// How alike two texts already lowercased are, 0 to 1: Jaro-Winkler, the measure of a pair's
/// name score and of the reconciliation service's `nameSimilarity`.
pub fn lowercased_similarity(a: &str, b: &str) -> f64 {
    strsim::jaro_winkler(a, b)
}

/// A lookup of models by reference and by base, within a brand.
pub trait Partners {
    /// The models of `brand` with the normalised reference `normalized`.
    fn by_reference(&self, brand: BrandId, normalized: &str) -> StoreResult<Vec<ModelId>>;
    /// The models of `brand` with a reference of base `base`.
    fn by_base(&self, brand: BrandId, base: &str) -> StoreResult<Vec<ModelId>>;
    /// The summary of model `id`, if it exists.
    fn summary(&self, id: ModelId) -> StoreResult<Option<Cow<'_, Summary>>>;
    /// True when an admin dismissed the pair of `a` and `b`.
    fn is_dismissed(&self, a: ModelId, b: ModelId) -> StoreResult<bool>;
}

/// `model`'s pairs among `partners`: each other model of its brand it shares a reference or a
/// reference base with, by the strongest signal, dismissed pairs left out.
pub fn pairs_among(partners: &impl Partners, model: &Summary) -> StoreResult<Vec<DuplicatePair>> {
    let mut strongest: BTreeMap<ModelId, DuplicateSignal> = BTreeMap::new();
    let mut note = |other: ModelId, signal: DuplicateSignal| {
        if other != model.id {
            let best = strongest.entry(other).or_insert(signal);
            *best = (*best).min(signal);
        }
    };
    // Read once per partner, however many references they share.
    let mut others: FxHashMap<ModelId, Option<Cow<'_, Summary>>> = FxHashMap::default();
    for reference in model.references.iter() {
        for other in partners.by_reference(model.brand, reference)? {
            let found = match others.entry(other) {
                std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(partners.summary(other)?)
                }
            };
            let both_primary = *reference == model.primary
                && found.as_ref().is_some_and(|m| m.primary == model.primary);
            note(
                other,
                if both_primary {
                    DuplicateSignal::SameReference
                } else {
                    DuplicateSignal::AlternateOverlap
                },
            );
        }
    }
    for base in model.bases.iter() {
        for other in partners.by_base(model.brand, base)? {
            note(other, DuplicateSignal::BaseVariant);
        }
    }
    let mut pairs = Vec::with_capacity(strongest.len());
    for (other, signal) in strongest {
        if partners.is_dismissed(model.id, other)? {
            continue;
        }
        let found = match others.remove(&other) {
            Some(found) => found,
            None => partners.summary(other)?,
        };
        if let Some(found) = found.filter(|m| m.brand == model.brand) {
            pairs.push(DuplicatePair::new(
                model.id,
                other,
                signal,
                name_score(model, &found),
            ));
        }
    }
    Ok(pairs)
}

/// How alike the names of two models are, 0 to 1, the same whichever of them asks: the smaller
/// id's name goes first, so that writing each pair from one end only (the full pass) does not
/// rest on strsim's Jaro-Winkler being symmetric, which its documentation does not promise.
fn name_score(x: &Summary, y: &Summary) -> f64 {
    let (first, second) = if x.id < y.id { (x, y) } else { (y, x) };
    lowercased_similarity(&first.name, &second.name)
}

/// The store's keys: what a write's refresh of a few models reads.
pub struct InStore<'a>(pub &'a Store);

impl Partners for InStore<'_> {
    fn by_reference(&self, brand: BrandId, normalized: &str) -> StoreResult<Vec<ModelId>> {
        self.0.catalogue().model_ids_by_reference(brand, normalized)
    }
    fn by_base(&self, brand: BrandId, base: &str) -> StoreResult<Vec<ModelId>> {
        self.0.duplicates().model_ids_by_base(brand, base)
    }
    fn summary(&self, id: ModelId) -> StoreResult<Option<Cow<'_, Summary>>> {
        Ok(self
            .0
            .catalogue()
            .model(id)?
            .map(|m| Cow::Owned(Summary::of(&m))))
    }
    fn is_dismissed(&self, a: ModelId, b: ModelId) -> StoreResult<bool> {
        self.0.duplicates().is_dismissed(a, b)
    }
}

/// Every model's summary, read once, and its models by a hash of brand and reference or base:
/// the full pass's lookups are then a hash probe or two in memory instead of a store read or
/// scan each (docs/decisions.md, D-135). Some 250 bytes a model
/// by the sizes of its fields (not measured alone).
pub struct InMemory {
    /// In id order.
    summaries: Vec<Summary>,
    /// Each model's place in `summaries`.
    at: FxHashMap<ModelId, u32>,
    references: Texts,
    bases: Texts,
    /// (smaller id, larger id).
    dismissed: FxHashSet<(ModelId, ModelId)>,
}

/// Places in [`InMemory::summaries`] by a hash of brand and text, in runs of one list.
struct Texts {
    places: Vec<u32>,
    runs: FxHashMap<u64, (u32, u32)>,
}

impl Texts {
    /// `texts` of every summary, keyed.
    fn of(summaries: &[Summary], texts: fn(&Summary) -> &[Box<str>]) -> Texts {
        let mut keyed: Vec<(u64, u32)> = summaries
            .par_iter()
            .enumerate()
            .flat_map_iter(|(place, s)| {
                texts(s)
                    .iter()
                    .map(move |t| (text_key(s.brand, t), place as u32))
            })
            .collect();
        keyed.par_sort_unstable();
        let mut runs = FxHashMap::default();
        for (start, run) in keyed.chunk_by(|a, b| a.0 == b.0).scan(0u32, |at, run| {
            let start = *at;
            *at += run.len() as u32;
            Some((start, run))
        }) {
            runs.insert(run[0].0, (start, run.len() as u32));
        }
        Texts {
            places: keyed.into_iter().map(|(_, place)| place).collect(),
            runs,
        }
    }

    fn under(&self, key: u64) -> &[u32] {
        self.runs.get(&key).map_or(&[], |&(start, len)| {
            &self.places[start as usize..(start + len) as usize]
        })
    }
}

impl InMemory {
    /// Reads every model and every dismissed pair of `store`.
    pub fn read(store: &Store) -> StoreResult<InMemory> {
        let mut summaries: Vec<Summary> = store
            .catalogue()
            .all_models_parallel()
            .map(|model| model.map(|m| Summary::of(&m)))
            .collect::<StoreResult<_>>()?;
        summaries.par_sort_unstable_by_key(|s| s.id);
        let at = summaries
            .iter()
            .zip(0u32..)
            .map(|(s, place)| (s.id, place))
            .collect();
        let references = Texts::of(&summaries, |s| &s.references);
        let bases = Texts::of(&summaries, |s| &s.bases);
        let dismissed = store.duplicates().dismissed_pairs()?.into_iter().collect();
        Ok(InMemory {
            summaries,
            at,
            references,
            bases,
            dismissed,
        })
    }

    pub fn get(&self, id: ModelId) -> Option<&Summary> {
        self.summaries.get(*self.at.get(&id)? as usize)
    }

    /// Every model's summary, in id order.
    pub fn summaries(&self) -> &[Summary] {
        &self.summaries
    }

    /// The models of `brand` under its `text` in `texts` that `has` it: a hash shared by two
    /// texts never pairs their models.
    fn find(
        &self,
        texts: &Texts,
        brand: BrandId,
        text: &str,
        has: impl Fn(&Summary, &str) -> bool,
    ) -> Vec<ModelId> {
        texts
            .under(text_key(brand, text))
            .iter()
            .filter_map(|&place| self.summaries.get(place as usize))
            .filter(|s| s.brand == brand && has(s, text))
            .map(|s| s.id)
            .collect()
    }
}

/// A hash of a brand and a text, to find the text's models without holding it a second time.
fn text_key(brand: BrandId, text: &str) -> u64 {
    let mut hasher = FxHasher::default();
    brand.0.hash(&mut hasher);
    text.hash(&mut hasher);
    hasher.finish()
}

impl Partners for InMemory {
    fn by_reference(&self, brand: BrandId, normalized: &str) -> StoreResult<Vec<ModelId>> {
        Ok(self.find(&self.references, brand, normalized, Summary::has_reference))
    }
    fn by_base(&self, brand: BrandId, base: &str) -> StoreResult<Vec<ModelId>> {
        Ok(self.find(&self.bases, brand, base, Summary::has_base))
    }
    fn summary(&self, id: ModelId) -> StoreResult<Option<Cow<'_, Summary>>> {
        Ok(self.get(id).map(Cow::Borrowed))
    }
    fn is_dismissed(&self, a: ModelId, b: ModelId) -> StoreResult<bool> {
        Ok(self.dismissed.contains(&(a.min(b), a.max(b))))
    }
}
