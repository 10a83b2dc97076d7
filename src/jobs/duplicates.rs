//! The duplicate finder: pairs of models of one brand that may be one watch entered twice,
//! found through the store's reference and base keys (never by comparing all pairs), kept as
//! pairs in the store and joined into groups when read. Every write that changes models
//! refreshes the pairs of the models it touched; `watch-catalogue duplicates --rebuild` is the
//! full pass, on rayon.

use crate::domain::{
    normalize_reference, reference_base, DuplicatePair, DuplicateSignal, Model, ModelId,
};
use crate::store::{Store, StoreError, StoreResult, WriteTurn};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// Above this many touched models a write's refresh is a full pass instead.
const REFRESH_AT_MOST: usize = 20_000;

/// How alike two model names are, 0 to 1: it ranks pairs within a signal, never forms one.
pub fn name_score(a: &Model, b: &Model) -> f64 {
    strsim::jaro_winkler(&a.name.to_lowercase(), &b.name.to_lowercase())
}

/// `model`'s pairs as the store holds the catalogue now: each other model of its brand it
/// shares a reference or a reference base with, by the strongest signal, dismissed pairs left
/// out.
pub fn pairs_for(store: &Store, model: &Model) -> StoreResult<Vec<DuplicatePair>> {
    let primary = normalize_reference(&model.reference_number);
    let mut strongest: BTreeMap<ModelId, DuplicateSignal> = BTreeMap::new();
    let mut note = |other: ModelId, signal: DuplicateSignal| {
        if other != model.id {
            let best = strongest.entry(other).or_insert(signal);
            *best = (*best).min(signal);
        }
    };
    let mut others: HashMap<ModelId, Option<Model>> = HashMap::new();
    for reference in model.references().map(normalize_reference) {
        if reference.is_empty() {
            continue;
        }
        for other in store.model_ids_by_reference(model.brand_id, &reference)? {
            // Read once per partner, however many references they share.
            let found = match others.entry(other) {
                std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => slot.insert(store.model(other)?),
            };
            let their_primary = found
                .as_ref()
                .map(|m| normalize_reference(&m.reference_number));
            let both_primary = reference == primary && their_primary.as_ref() == Some(&primary);
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
    let mut bases: Vec<String> = model.references().filter_map(reference_base).collect();
    bases.dedup();
    for base in bases {
        for other in store.model_ids_by_base(model.brand_id, &base)? {
            note(other, DuplicateSignal::BaseVariant);
        }
    }
    let mut pairs = Vec::with_capacity(strongest.len());
    for (other, signal) in strongest {
        if store.is_dismissed(model.id, other)? {
            continue;
        }
        let found = match others.remove(&other) {
            Some(found) => found,
            None => store.model(other)?,
        };
        if let Some(found) = found.filter(|m| m.brand_id == model.brand_id) {
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

/// Brings the pairs of `models` (and so of every model they pair with) up to the store in one
/// commit; a model that is gone loses its pairs. Many models make a full pass instead.
pub fn refresh(turn: &WriteTurn<'_>, models: &[ModelId]) -> StoreResult<usize> {
    if models.len() > REFRESH_AT_MOST {
        return rebuild(turn);
    }
    let store = turn.store();
    let mut batch = turn.batch()?;
    let mut pairs = 0;
    for &id in models {
        let old = store.duplicate_pairs_of(id)?;
        let new = match store.model(id)? {
            Some(model) => pairs_for(store, &model)?,
            None => Vec::new(),
        };
        pairs += new.len();
        batch.replace_duplicate_pairs(id, &old, &new);
    }
    turn.commit_derived(batch)?;
    Ok(pairs)
}

/// Models the full pass handles per derived commit: its memory stays bounded by a chunk.
const REBUILD_CHUNK: usize = 20_000;

/// The full pass: every model's reference-base keys written afresh, then every model's pairs, a
/// chunk of models at a time on every core, each chunk's differences in one derived commit;
/// then the pairs of models that are gone. Returns the number of pairs.
pub fn rebuild(turn: &WriteTurn<'_>) -> StoreResult<usize> {
    let store = turn.store();
    let ids = store.model_ids()?;
    rekey_bases(turn, &ids)?;
    // indicatif draws nothing when stderr is not a terminal.
    let progress = indicatif::ProgressBar::new(ids.len() as u64);
    let mut pairs = 0;
    for chunk in ids.chunks(REBUILD_CHUNK) {
        let found: Vec<(ModelId, Vec<DuplicatePair>, Vec<DuplicatePair>)> = chunk
            .par_iter()
            .map(|&id| {
                let new = match store.model(id)? {
                    Some(model) => pairs_for(store, &model)?,
                    None => Vec::new(),
                };
                Ok((id, store.duplicate_pairs_of(id)?, new))
            })
            .collect::<StoreResult<_>>()?;
        let mut batch = turn.batch()?;
        for (id, old, new) in &found {
            // Each pair counted once: by its smaller model.
            pairs += new.iter().filter(|p| p.a == *id).count();
            batch.replace_duplicate_pairs(*id, old, new);
        }
        turn.commit_derived(batch)?;
        progress.inc(chunk.len() as u64);
    }
    progress.finish_and_clear();
    forget_pairs_of_gone_models(turn)?;
    Ok(pairs)
}

/// Writes every model's reference-base keys afresh, so the pass pairs by today's base rule
/// whatever rule wrote the keys it finds.
fn rekey_bases(turn: &WriteTurn<'_>, ids: &[ModelId]) -> StoreResult<()> {
    let store = turn.store();
    for stale in store.model_base_keys()?.chunks(REBUILD_CHUNK * 5) {
        let mut batch = turn.batch()?;
        batch.remove_base_keys(stale.to_vec());
        turn.commit_derived(batch)?;
    }
    for chunk in ids.chunks(REBUILD_CHUNK) {
        let models: Vec<Option<Model>> = chunk
            .par_iter()
            .map(|&id| store.model(id))
            .collect::<StoreResult<_>>()?;
        let mut batch = turn.batch()?;
        for model in models.iter().flatten() {
            batch.put_base_keys(model);
        }
        turn.commit_derived(batch)?;
    }
    Ok(())
}

/// Removes the pairs of models no longer in the store (a store restored mid-merge).
fn forget_pairs_of_gone_models(turn: &WriteTurn<'_>) -> StoreResult<()> {
    let store = turn.store();
    let mut batch = turn.batch()?;
    let mut seen: Option<(ModelId, bool)> = None;
    for pair in store.duplicate_pairs()? {
        let gone = match seen {
            Some((id, gone)) if id == pair.a => gone,
            _ => !store.has_model(pair.a)?,
        };
        seen = Some((pair.a, gone));
        if gone || !store.has_model(pair.b)? {
            batch.replace_duplicate_pairs(pair.a, &[pair], &[]);
        }
    }
    turn.commit_derived(batch)
}

/// A group of models joined by pairs: what `GET /duplicate-models` pages through.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The strongest signal among its pairs.
    pub kind: DuplicateSignal,
    /// Oldest first (`createdAt`, then id).
    pub models: Vec<ModelId>,
    /// The best name similarity among its pairs of its kind.
    pub name_score: f64,
    pub brand: crate::domain::BrandId,
    /// Each model's normalised references, for `q`.
    pub references: Vec<String>,
    /// Ordering keys: the brand's name and the oldest model's reference.
    pub brand_name: String,
    pub reference: String,
}

/// Every group, in the order the API shows them: strongest signal first, then larger, then by
/// brand name and reference.
pub fn groups(store: &Store) -> Result<Vec<Group>, StoreError> {
    let pairs = store.duplicate_pairs()?;
    let mut parent: HashMap<ModelId, ModelId> = HashMap::new();
    fn root(parent: &mut HashMap<ModelId, ModelId>, id: ModelId) -> ModelId {
        let mut at = id;
        while let Some(&up) = parent.get(&at).filter(|&&up| up != at) {
            at = up;
        }
        parent.insert(id, at);
        at
    }
    for pair in &pairs {
        let (ra, rb) = (root(&mut parent, pair.a), root(&mut parent, pair.b));
        if ra != rb {
            parent.insert(ra.max(rb), ra.min(rb));
        }
    }
    let mut members: BTreeMap<ModelId, Vec<ModelId>> = BTreeMap::new();
    let ids: Vec<ModelId> = parent.keys().copied().collect();
    for id in ids {
        let r = root(&mut parent, id);
        members.entry(r).or_default().push(id);
    }
    let mut edges: HashMap<ModelId, (DuplicateSignal, f64)> = HashMap::new();
    for pair in &pairs {
        let r = root(&mut parent, pair.a);
        let best = edges.entry(r).or_insert((pair.signal, pair.name_score));
        if pair.signal < best.0 || (pair.signal == best.0 && pair.name_score > best.1) {
            *best = (pair.signal, pair.name_score);
        }
    }
    // Reading the members is most of the work: on every core.
    let components: Vec<(ModelId, Vec<ModelId>)> = members.into_iter().collect();
    let read: Vec<Option<(DuplicateSignal, f64, Vec<Model>)>> = components
        .par_iter()
        .map(|(r, ids)| {
            let mut models = store.models(ids)?;
            models.sort_by_key(|m| (m.created_at, m.id));
            Ok(edges
                .get(r)
                .filter(|_| models.len() >= 2)
                .map(|&(kind, score)| (kind, score, models)))
        })
        .collect::<StoreResult<_>>()?;
    let mut brands = HashMap::new();
    let mut out = Vec::with_capacity(read.len());
    for (kind, name_score, models) in read.into_iter().flatten() {
        let brand = models[0].brand_id;
        let brand_name = match brands.get(&brand) {
            Some(name) => String::clone(name),
            None => {
                let name = store.brand(brand)?.map(|b| b.name).unwrap_or_default();
                brands.insert(brand, name.clone());
                name
            }
        };
        out.push(Group {
            kind,
            name_score,
            brand,
            references: models
                .iter()
                .flat_map(|m| m.references().map(normalize_reference))
                .collect(),
            reference: models[0].reference_number.clone(),
            brand_name,
            models: models.iter().map(|m| m.id).collect(),
        });
    }
    out.sort_by(|a, b| {
        (
            a.kind,
            std::cmp::Reverse(a.models.len()),
            &a.brand_name,
            &a.reference,
        )
            .cmp(&(
                b.kind,
                std::cmp::Reverse(b.models.len()),
                &b.brand_name,
                &b.reference,
            ))
    });
    Ok(out)
}
