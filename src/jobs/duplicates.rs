//! The duplicate finder: pairs of models of one brand that may be one watch entered twice,
//! found by reference and reference base (never by comparing all pairs), kept as pairs in the
//! store and joined into groups when read. Every write that changes models refreshes the pairs
//! of the models it touched through the store's keys; `watch-catalogue duplicates rebuild`
//! is the full pass, over every model held in memory, on rayon.

mod partners;

use super::progress::{between_chunks, JobControl, Stopped};
/// A group of models joined by pairs (the domain's `DuplicateGroup`).
pub use crate::domain::DuplicateGroup as Group;
use crate::domain::{normalize_reference, DuplicatePair, DuplicateSignal, Model, ModelId};
use crate::store::{
    base_key_model, Changes, Store, StoreError, StoreGeneration, StoreResult, WriteTurn, WriteWatch,
};
use partners::{pairs_among, InMemory, InStore, Summary};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// Above this many touched models a write's refresh is a full pass instead.
const REFRESH_AT_MOST: usize = 20_000;

/// How alike two names are, 0 to 1: Jaro-Winkler of the lowercased texts, the measure of a
/// pair's name score and of the reconciliation service's `nameSimilarity`.
pub fn text_similarity(a: &str, b: &str) -> f64 {
    partners::lowercased_similarity(&a.to_lowercase(), &b.to_lowercase())
}

/// `model`'s pairs as the store holds the catalogue now: each other model of its brand it
/// shares a reference or a reference base with, by the strongest signal, dismissed pairs left
/// out.
pub fn pairs_for(store: &Store, model: &Model) -> StoreResult<Vec<DuplicatePair>> {
    pairs_among(&InStore(store), &Summary::of(model))
}

/// Why a pass of the duplicate finder ended before its end; what it committed stays, whole
/// chunk by chunk: each chunk's models have the pairs (or base keys) of one reading.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error(transparent)]
    Stopped(Stopped),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Brings the pairs of `models` (and so of every model they pair with) up to the store in one
/// commit; a model that is gone loses its pairs. Many models make a full pass instead, which
/// leaves the reference-base keys of the models the turn `created` as the turn wrote them.
pub fn refresh(
    turn: &WriteTurn<'_>,
    models: &[ModelId],
    created: &BTreeSet<ModelId>,
) -> Result<usize, PassError> {
    if models.len() > REFRESH_AT_MOST {
        return beside_the_index(|| full_pass(turn, created));
    }
    let store = turn.store();
    let mut batch = turn.batch()?;
    let mut pairs = 0;
    for &id in models {
        let old = store.duplicates().duplicate_pairs_of(id)?;
        let new = match store.catalogue().model(id)? {
            Some(model) => pairs_for(store, &model)?,
            None => Vec::new(),
        };
        pairs += new.len();
        batch.replace_duplicate_pairs(id, &old, &new);
    }
    turn.commit_derived(batch)?;
    Ok(pairs)
}

/// Runs `pass` at a lower priority ([`super::priority`]). A write's full pass runs beside the
/// catalogue index rebuild (`Writer::run`), whose one tantivy thread is the longer of the two:
/// at equal priority the pass took a share of that thread's core, and the rebuild finished
/// alone on one core after the pass was done (docs/decisions.md, D-141). The pass now takes
/// what the rebuild leaves.
fn beside_the_index<T: Send>(pass: impl FnOnce() -> T + Send) -> T {
    super::priority::at_lower_priority("duplicates", pass)
}

/// Models the full pass handles per derived commit: the pairs it writes stay bounded by a chunk
/// (the models it reads are held whole, as summaries).
const REBUILD_CHUNK: usize = 20_000;

/// The full pass: every model's reference-base keys written afresh, then every model read
/// once into memory and its pairs found there, a chunk of models at a time on every core, each
/// chunk's differences in one derived commit; then the pairs of models that are gone. Returns
/// the number of pairs.
pub fn rebuild(turn: &WriteTurn<'_>) -> Result<usize, PassError> {
    full_pass(turn, &BTreeSet::new())
}

/// [`rebuild`] as a batch job, from what it read before it took the turn: in chunks of the
/// test pacing's size where it asks, stopped at a chunk boundary when `control` is told to, and
/// letting the writers waiting for the turn in between two chunks. What they changed of models
/// and pairs while the pass held the catalogue in memory, from its reading on, is found again
/// from the store at the end (or at the stop).
pub fn rebuild_as_job(
    turn: &WriteTurn<'_>,
    ready: PassReady<'_>,
    control: &JobControl,
) -> Result<usize, PassError> {
    FullPass::in_the_turn(turn, ready, &BTreeSet::new(), Some(control)).run()
}

/// [`rebuild`], but for the models `created` in this turn, whose base keys the turn wrote by
/// today's rule and which no stale key names: their keys are not loaded to be compared (a
/// million of them after an import of a million new models).
pub fn full_pass(turn: &WriteTurn<'_>, created: &BTreeSet<ModelId>) -> Result<usize, PassError> {
    let ready = PassReady::of(turn.store(), created)?;
    FullPass::in_the_turn(turn, ready, created, None).run()
}

/// What a full pass reads before it writes: every model, every stored pair and every stored
/// reference-base key. A duplicate pass job reads it before it takes the write turn, as at a
/// million models the reading took 27 s, which a person's write sent meanwhile waited for
/// (docs/decisions.md, D-230). The commits made from its start on are watched: once the turn is
/// taken, the models they wrote are left out of the rekeying (their writes keyed them by today's
/// rule) and their pairs found again at the end, as for the writers let in between two chunks.
pub struct PassReady<'s> {
    watch: WriteWatch<'s>,
    every: InMemory,
    pairs: FxHashMap<ModelId, Vec<DuplicatePair>>,
    base_keys: Vec<Vec<u8>>,
}

impl<'s> PassReady<'s> {
    /// Reads what the pass needs, but the base keys of the models `created` (see [`full_pass`]).
    pub fn of(store: &'s Store, created: &BTreeSet<ModelId>) -> StoreResult<PassReady<'s>> {
        let watch = store.watch_writes();
        let started = std::time::Instant::now();
        // The keys before the models: a model written between the two readings is then held
        // as written, and its keys read as before its write, which the pass neither adds to
        // nor takes as stale (its write keyed it by today's rule).
        let base_keys = store.duplicates().model_base_keys(created)?;
        let pairs = pairs_by_smaller_model(store)?;
        let every = InMemory::read(store)?;
        tracing::debug!(took = ?started.elapsed(), "duplicates: the full pass's reading");
        Ok(PassReady {
            watch,
            every,
            pairs,
            base_keys,
        })
    }
}

/// A full pass under way: the catalogue it holds, and between chunks, when it runs as a job,
/// what the writers it let in changed.
struct FullPass<'t, 'c> {
    turn: &'t WriteTurn<'t>,
    every: InMemory,
    /// The stored pairs and base keys as read with `every`, until the pass uses them.
    pairs: FxHashMap<ModelId, Vec<DuplicatePair>>,
    base_keys: Vec<Vec<u8>>,
    created: &'c BTreeSet<ModelId>,
    control: Option<&'c JobControl>,
    chunk: usize,
    /// Models others wrote, or whose pairs or dismissals they changed, while the pass held
    /// the catalogue: what it holds of them may be stale.
    changed_by_others: BTreeSet<ModelId>,
    /// Models others wrote between the pass's reading and its turn: their base keys are as
    /// their writes left them.
    written_since: BTreeSet<ModelId>,
    /// Models whose pairs the pass wrote, of all it holds.
    paired: usize,
}

impl<'t, 'c> FullPass<'t, 'c> {
    /// The pass, its reading `ready` taken into the turn with what was committed since.
    fn in_the_turn(
        turn: &'t WriteTurn<'t>,
        ready: PassReady<'_>,
        created: &'c BTreeSet<ModelId>,
        control: Option<&'c JobControl>,
    ) -> FullPass<'t, 'c> {
        let chunk = control
            .and_then(|control| control.pacing().chunk_listings)
            .unwrap_or(REBUILD_CHUNK)
            .max(1);
        let since = ready.watch.changes();
        FullPass {
            turn,
            every: ready.every,
            pairs: ready.pairs,
            base_keys: ready.base_keys,
            created,
            control,
            chunk,
            changed_by_others: since.models.union(&since.duplicates).copied().collect(),
            written_since: since.models,
            paired: 0,
        }
    }

    fn run(mut self) -> Result<usize, PassError> {
        let started = std::time::Instant::now();
        let stored = std::mem::take(&mut self.pairs);
        self.rekey_bases()?;
        let rekeyed = started.elapsed();
        // The rekeying, each chunk of the pairing and the end each take a second or more at a
        // million models: the writers waiting are let in between them all (D-230).
        self.let_writers_in();
        let mut pairs = 0;
        let models = self.every.summaries().len();
        // The job's progress, when the pass is the job (a reindex counts its documents instead):
        // the command or the server shows it.
        let counted = self.control.filter(|control| control.progress().1 == 0);
        if let Some(control) = counted {
            control.set_total(models as u64);
        }
        let mut from = 0;
        while from < models {
            let to = (from + self.chunk).min(models);
            let found: Vec<(ModelId, Vec<DuplicatePair>)> = self.every.summaries()[from..to]
                .par_iter()
                .map(|model| {
                    let mut new = pairs_among(&self.every, model)?;
                    new.retain(|pair| pair.a == model.id);
                    Ok((model.id, new))
                })
                .collect::<StoreResult<_>>()?;
            let mut batch = self.turn.batch()?;
            for (id, new) in &found {
                let old = stored.get(id).map_or(&[][..], Vec::as_slice);
                pairs += new.len();
                batch.replace_duplicate_pairs(*id, old, new);
            }
            self.turn.commit_derived(batch)?;
            if let Some(control) = counted {
                control.advance((to - from) as u64);
            }
            self.paired = to;
            from = to;
            if from < models {
                self.between_chunks()?;
            }
        }
        self.let_writers_in();
        let paired = started.elapsed();
        forget_pairs_of_gone_models(self.turn, &self.every, &stored)?;
        self.mend()?;
        tracing::debug!(?rekeyed, ?paired, took = ?started.elapsed(), "duplicates: full pass");
        Ok(pairs)
    }

    /// Brings every model's reference-base keys to today's base rule, so the pass pairs by it
    /// whatever rule wrote the keys it finds: missing keys written, stale ones removed, the
    /// rest (all of them, on a store the rule did not change under) left alone. The bases
    /// come from the models the pass holds and the keys from its reading ([`PassReady`]): none
    /// is read again. One part of the pass, before any writer is let in.
    fn rekey_bases(&mut self) -> StoreResult<()> {
        let read = std::mem::take(&mut self.base_keys);
        // A model written since the reading has the keys its write gave it by today's rule:
        // neither added to nor taken as stale from what the pass read of it.
        let others_wrote = |id: ModelId| self.written_since.contains(&id);
        let mut stored = HashSet::with_capacity(read.len());
        for key in read {
            if !others_wrote(base_key_model(&key)?) {
                stored.insert(key);
            }
        }
        let rekeyed: Vec<&Summary> = self
            .every
            .summaries()
            .iter()
            .filter(|model| !self.created.contains(&model.id) && !others_wrote(model.id))
            .collect();
        for chunk in rekeyed.chunks(REBUILD_CHUNK) {
            let mut batch = self.turn.batch()?;
            for model in chunk {
                batch.put_missing_base_keys((model.brand, model.id), model.bases(), &mut stored);
            }
            self.turn.commit_derived(batch)?;
        }
        let stale: Vec<Vec<u8>> = stored.into_iter().collect();
        for chunk in stale.chunks(REBUILD_CHUNK * 5) {
            let mut batch = self.turn.batch()?;
            batch.remove_base_keys(chunk.iter().cloned());
            self.turn.commit_derived(batch)?;
        }
        Ok(())
    }

    /// Between two chunks of the pairs of a pass run as a job: stops when asked (mending
    /// first what the writers let in made stale), else lets the writers waiting in, noting the
    /// models they changed.
    fn between_chunks(&mut self) -> Result<(), PassError> {
        let Some(control) = self.control else {
            return Ok(());
        };
        let boundary = between_chunks(self.turn, control);
        if let Some(others) = &boundary.others {
            self.note(others);
        }
        if boundary.stop {
            self.mend()?;
            return Err(PassError::Stopped(Stopped {
                done: self.paired as u64,
                total: self.every.summaries().len() as u64,
                unit: "models paired",
            }));
        }
        Ok(())
    }

    /// When the pass runs as a job, lets the writers waiting for the turn in, noting what they
    /// changed; a stop is left to the next chunk boundary.
    fn let_writers_in(&mut self) {
        if self.control.is_some() {
            if let Some(others) = self.turn.let_waiting_write() {
                self.note(&others);
            }
        }
    }

    /// Notes the models `others` changed while the pass held them.
    fn note(&mut self, others: &Changes) {
        let changed = others.models.iter().chain(&others.duplicates);
        self.changed_by_others.extend(changed);
    }

    /// The pairs of the models others changed while the pass held them, found afresh from the
    /// store: what the pass wrote from its older reading of them is replaced.
    fn mend(&self) -> Result<(), PassError> {
        if self.changed_by_others.is_empty() {
            return Ok(());
        }
        let models: Vec<ModelId> = self.changed_by_others.iter().copied().collect();
        refresh(self.turn, &models, &BTreeSet::new())?;
        Ok(())
    }
}

/// Every stored pair under its smaller model. The full pass writes each pair from its smaller
/// model only (a pair is found from both ends alike), so what it read before it began is what
/// the store holds of that pair when it gets there: no model's pairs are read again.
fn pairs_by_smaller_model(store: &Store) -> StoreResult<FxHashMap<ModelId, Vec<DuplicatePair>>> {
    let mut by_model: FxHashMap<ModelId, Vec<DuplicatePair>> = FxHashMap::default();
    for pair in store.duplicates().duplicate_pairs()? {
        by_model.entry(pair.a).or_default().push(pair);
    }
    Ok(by_model)
}

/// Removes the pairs of models no longer in the store (a store restored mid-merge): those of
/// the `stored` pairs, as read with `every`, that name a model `every` does not hold. The pairs
/// the pass wrote name models it holds; a model deleted since its reading was deleted by a
/// write whose refresh, or the pass's mending, leaves it no pair. Walking every pair of the
/// store instead took 1.8 s of the write turn at a million models (D-230).
fn forget_pairs_of_gone_models(
    turn: &WriteTurn<'_>,
    every: &InMemory,
    stored: &FxHashMap<ModelId, Vec<DuplicatePair>>,
) -> StoreResult<()> {
    let catalogue = turn.store().catalogue();
    let mut batch = turn.batch()?;
    let named_gone = stored
        .values()
        .flatten()
        .filter(|pair| every.get(pair.a).is_none() || every.get(pair.b).is_none());
    for pair in named_gone {
        if !(catalogue.has_model(pair.a)? && catalogue.has_model(pair.b)?) {
            batch.replace_duplicate_pairs(pair.a, std::slice::from_ref(pair), &[]);
        }
    }
    turn.commit_derived(batch)
}

/// The strongest signal among some pairs, and the best name score among the pairs of it.
type Strongest = (DuplicateSignal, f64);

/// `best` with `pair` taken into account.
fn stronger(best: Option<Strongest>, pair: &DuplicatePair) -> Strongest {
    match best {
        Some((signal, score))
            if signal < pair.signal || (signal == pair.signal && score >= pair.name_score) =>
        {
            (signal, score)
        }
        _ => (pair.signal, pair.name_score),
    }
}

/// The order the API shows groups in: strongest signal first, then larger, then by brand name
/// and reference; the oldest model's id, unique to a group, settles ties.
fn display_order(a: &Group, b: &Group) -> std::cmp::Ordering {
    fn key(g: &Group) -> (DuplicateSignal, Reverse<usize>, &str, &str, Option<ModelId>) {
        (
            g.kind,
            Reverse(g.models.len()),
            &g.brand_name,
            &g.reference,
            g.models.first().copied(),
        )
    }
    key(a).cmp(&key(b))
}

/// A component of pairs with its strongest pair: its models are read, oldest first, and made a
/// group when at least two of them still exist.
fn read_component(
    store: &Store,
    ids: &[ModelId],
    (kind, name_score): Strongest,
) -> StoreResult<Option<(DuplicateSignal, f64, Vec<Model>)>> {
    let mut models = store.catalogue().models(ids)?;
    models.sort_by_key(|m| (m.created_at, m.id));
    Ok((models.len() >= 2).then_some((kind, name_score, models)))
}

/// Brand names by id, each read once.
#[derive(Default)]
struct BrandNames(HashMap<crate::domain::BrandId, String>);

impl BrandNames {
    fn group(
        &mut self,
        store: &Store,
        (kind, name_score, models): (DuplicateSignal, f64, Vec<Model>),
    ) -> StoreResult<Group> {
        let brand = models[0].brand_id;
        let brand_name = match self.0.get(&brand) {
            Some(name) => name.clone(),
            None => {
                let name = store
                    .catalogue()
                    .brand(brand)?
                    .map(|b| b.name)
                    .unwrap_or_default();
                self.0.insert(brand, name.clone());
                name
            }
        };
        Ok(Group {
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
        })
    }
}

/// Every group, in the order the API shows them: strongest signal first, then larger, then by
/// brand name and reference.
pub fn groups(store: &Store) -> StoreResult<Vec<Arc<Group>>> {
    Ok(Grouping::of(store)?.groups.to_vec())
}

/// The duplicate groups a process keeps, and the generation of the pairs they were joined from.
/// After a write that changed pairs they are joined again around the models it touched; all of
/// them only when a write in between left no note of its models (a full pass, a brand renamed)
/// or nothing was kept. The store keeps them between starts ([`DuplicateGroups::keep`]): a
/// start reads them and joins them again around what was written since, so its first request
/// is answered as fast as the next (docs/decisions.md, D-136).
#[derive(Default)]
pub struct DuplicateGroups {
    kept: std::sync::Mutex<Kept>,
    /// For tests: joining every group again is refused, as a start-up join held back.
    #[cfg(test)]
    refuse_whole_joins: bool,
}

/// The groups kept in memory, and the duplicates generation of those the store keeps.
#[derive(Default)]
struct Kept {
    grouping: Option<(StoreGeneration, Grouping)>,
    stored: Option<StoreGeneration>,
}

impl Kept {
    /// Reads the groups the store keeps when none are held, if they were joined at
    /// `generation` or before.
    fn read_as_kept(&mut self, store: &Store, generation: StoreGeneration) -> StoreResult<()> {
        if self.grouping.is_none() {
            self.grouping = read_kept(store, generation)?;
            self.stored = self.grouping.as_ref().map(|(at, _)| *at);
        }
        Ok(())
    }
}

impl DuplicateGroups {
    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reads the groups the store keeps, unless groups are held already; joining them again
    /// around what was written since, or all of them when none are kept, is left to
    /// [`DuplicateGroups::of`]. A start calls it at the requests' priority: the first
    /// `/duplicate-models` waits for this read, not for the rest (docs/decisions.md, D-228).
    pub fn read_as_kept(&self, store: &Store) -> StoreResult<()> {
        let mut guard = self.lock();
        let generation = store.duplicates().duplicates_generation()?;
        guard.read_as_kept(store, generation)
    }

    /// The groups of `store`'s pairs as they stand.
    pub fn of(&self, store: &Store) -> StoreResult<Arc<Vec<Arc<Group>>>> {
        let mut guard = self.lock();
        let kept = &mut *guard;
        let generation = store.duplicates().duplicates_generation()?;
        kept.read_as_kept(store, generation)?;
        if let Some((at, grouping)) = kept.grouping.as_mut() {
            if *at == generation {
                return Ok(grouping.groups());
            }
            let touched = store
                .duplicates()
                .duplicates_touched_between(*at, generation)?;
            if let Some(touched) = touched {
                let started = std::time::Instant::now();
                grouping.regroup(store, &touched)?;
                tracing::debug!(touched = touched.len(), took = ?started.elapsed(), "duplicate groups joined again around a write");
                *at = generation;
                return Ok(grouping.groups());
            }
        }
        #[cfg(test)]
        assert!(
            !self.refuse_whole_joins,
            "every duplicate group joined again"
        );
        let started = std::time::Instant::now();
        let grouping = Grouping::of(store)?;
        let groups = grouping.groups();
        tracing::info!(groups = groups.len(), took = ?started.elapsed(), "duplicate groups joined");
        kept.stored = keep(store, generation, &groups).or(kept.stored);
        kept.grouping = Some((generation, grouping));
        Ok(groups)
    }

    /// Has the store keep the groups as they stand in memory, unless it keeps them already: a
    /// server does it as it stops, so that the next start reads them instead of joining them.
    pub fn keep(&self, store: &Store) {
        let mut guard = self.lock();
        let kept = &mut *guard;
        if let Some((at, grouping)) = &kept.grouping {
            if kept.stored != Some(*at) {
                kept.stored = keep(store, *at, &grouping.groups()).or(kept.stored);
            }
        }
    }
}

/// The groups the store keeps, when they were joined at `generation` or before it (a store
/// does not go back): read, not joined.
fn read_kept(
    store: &Store,
    generation: StoreGeneration,
) -> StoreResult<Option<(StoreGeneration, Grouping)>> {
    let started = std::time::Instant::now();
    let kept = super::read_pool::with_waiting_reads(|| store.duplicates().kept_groups());
    let Some((at, groups)) = kept? else {
        return Ok(None);
    };
    if at > generation {
        return Ok(None);
    }
    let grouping = Grouping::from_groups(groups.into_iter().map(Arc::new).collect());
    tracing::info!(groups = grouping.groups.len(), took = ?started.elapsed(), "duplicate groups read as kept");
    Ok(Some((at, grouping)))
}

/// Has the store keep `groups`, joined at `at`; the generation kept, or `None` when the write
/// failed (logged: the groups are derived, and a start without them joins them).
fn keep(store: &Store, at: StoreGeneration, groups: &[Arc<Group>]) -> Option<StoreGeneration> {
    let started = std::time::Instant::now();
    match store.duplicates().keep_groups(at, groups) {
        Ok(()) => {
            tracing::debug!(groups = groups.len(), took = ?started.elapsed(), "duplicate groups kept in the store");
            Some(at)
        }
        Err(error) => {
            tracing::warn!(%error, "keeping the duplicate groups in the store");
            None
        }
    }
}

/// The groups in the order the API shows them, and each grouped model's group: what the
/// server keeps between requests. After a write it is joined again around the models the write
/// touched ([`Grouping::regroup`]), which gives the groups joining them all would.
#[derive(Debug, Clone, Default)]
pub struct Grouping {
    groups: Arc<Vec<Arc<Group>>>,
    group_of: HashMap<ModelId, Arc<Group>>,
}

impl Grouping {
    /// Joins every stored pair into groups.
    pub fn of(store: &Store) -> StoreResult<Grouping> {
        let pairs = store.duplicates().duplicate_pairs()?;
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
        let mut best: HashMap<ModelId, Strongest> = HashMap::new();
        for pair in &pairs {
            let r = root(&mut parent, pair.a);
            best.insert(r, stronger(best.get(&r).copied(), pair));
        }
        // Reading the members is most of the work: on every core.
        let components: Vec<(ModelId, Vec<ModelId>)> = members.into_iter().collect();
        let read: Vec<Option<(DuplicateSignal, f64, Vec<Model>)>> = components
            .par_iter()
            .map(|(r, ids)| match best.get(r) {
                Some(&strongest) => read_component(store, ids, strongest),
                None => Ok(None),
            })
            .collect::<StoreResult<_>>()?;
        let mut brands = BrandNames::default();
        let mut groups = read
            .into_iter()
            .flatten()
            .map(|component| brands.group(store, component).map(Arc::new))
            .collect::<StoreResult<Vec<_>>>()?;
        groups.sort_by(|a, b| display_order(a, b));
        Ok(Grouping::from_groups(groups))
    }

    /// The grouping of `groups`, already in the order the API shows them.
    fn from_groups(groups: Vec<Arc<Group>>) -> Grouping {
        let group_of = groups
            .iter()
            .flat_map(|g| g.models.iter().map(move |&id| (id, g.clone())))
            .collect();
        Grouping {
            groups: Arc::new(groups),
            group_of,
        }
    }

    /// Every group, in the order the API shows them.
    pub fn groups(&self) -> Arc<Vec<Arc<Group>>> {
        self.groups.clone()
    }

    /// Joins the groups again around `touched`, the models whose pairs or dismissals changed
    /// (both ends of every pair added or removed), as the store holds the pairs now. Only the
    /// components of those models can have changed: a model of an old group that reached a
    /// touched model through pairs still reaches it, or reaches an end of a removed pair.
    pub fn regroup(&mut self, store: &Store, touched: &[ModelId]) -> StoreResult<()> {
        let mut reached: HashSet<ModelId> = HashSet::new();
        let mut brands = BrandNames::default();
        let mut fresh = Vec::new();
        for &start in touched {
            if !reached.insert(start) {
                continue;
            }
            let (ids, strongest) = component(store, start, &mut reached)?;
            if let Some(strongest) = strongest {
                if let Some(read) = read_component(store, &ids, strongest)? {
                    fresh.push(Arc::new(brands.group(store, read)?));
                }
            }
        }
        let mut stale: Vec<Arc<Group>> = reached
            .iter()
            .filter_map(|id| self.group_of.get(id).cloned())
            .collect();
        stale.sort_by(|a, b| display_order(a, b));
        stale.dedup_by(|a, b| Arc::ptr_eq(a, b));
        for group in &stale {
            for id in &group.models {
                self.group_of.remove(id);
            }
        }
        for group in &fresh {
            self.group_of
                .extend(group.models.iter().map(|&id| (id, group.clone())));
        }
        splice(Arc::make_mut(&mut self.groups), &stale, fresh);
        Ok(())
    }
}

/// Above this many groups in and out, [`splice`] filters and sorts instead of moving the list
/// once per group.
const SPLICE_ONE_BY_ONE_AT_MOST: usize = 64;

/// Takes `stale` out of `groups` (in display order) and puts `fresh` in, in order.
fn splice(groups: &mut Vec<Arc<Group>>, stale: &[Arc<Group>], fresh: Vec<Arc<Group>>) {
    if stale.len() + fresh.len() <= SPLICE_ONE_BY_ONE_AT_MOST {
        splice_one_by_one(groups, stale, fresh);
    } else {
        splice_by_sort(groups, stale, fresh);
    }
}

/// [`splice`] for a few groups: each found and moved in place, the list shifted once each.
fn splice_one_by_one(groups: &mut Vec<Arc<Group>>, stale: &[Arc<Group>], fresh: Vec<Arc<Group>>) {
    for group in stale {
        if let Ok(at) = groups.binary_search_by(|g| display_order(g, group)) {
            groups.remove(at);
        }
    }
    for group in fresh {
        let at = groups.partition_point(|g| display_order(g, &group).is_lt());
        groups.insert(at, group);
    }
}

/// [`splice`] for many groups: filtered once, then sorted.
fn splice_by_sort(groups: &mut Vec<Arc<Group>>, stale: &[Arc<Group>], mut fresh: Vec<Arc<Group>>) {
    let gone: HashSet<*const Group> = stale.iter().map(Arc::as_ptr).collect();
    groups.retain(|g| !gone.contains(&Arc::as_ptr(g)));
    groups.append(&mut fresh);
    groups.sort_by(|a, b| display_order(a, b));
}

/// The models `start` reaches through stored pairs (marked in `reached`), and the strongest
/// of those pairs; `None` when it has no pair.
fn component(
    store: &Store,
    start: ModelId,
    reached: &mut HashSet<ModelId>,
) -> StoreResult<(Vec<ModelId>, Option<Strongest>)> {
    let mut ids = Vec::new();
    let mut strongest = None;
    let mut queue = vec![start];
    while let Some(id) = queue.pop() {
        ids.push(id);
        for pair in store.duplicates().duplicate_pairs_of(id)? {
            strongest = Some(stronger(strongest, &pair));
            let other = if pair.a == id { pair.b } else { pair.a };
            if reached.insert(other) {
                queue.push(other);
            }
        }
    }
    ids.sort_unstable();
    Ok((ids, strongest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(at: u64, kind: DuplicateSignal, size: usize, brand: &str) -> Arc<Group> {
        Arc::new(Group {
            kind,
            models: (0..size as u64).map(|i| ModelId(at * 100 + i)).collect(),
            name_score: 0.5,
            brand: crate::domain::BrandId(1),
            references: Vec::new(),
            brand_name: brand.to_owned(),
            reference: format!("R{}", at % 7),
        })
    }

    /// Groups of every kind, size and brand, `at` from `from` on.
    fn groups(from: u64, count: u64) -> Vec<Arc<Group>> {
        (from..from + count)
            .map(|at| {
                let kind = DuplicateSignal::ALL[(at % 3) as usize];
                group(
                    at,
                    kind,
                    2 + (at % 4) as usize,
                    ["A", "B", "C"][(at % 5 % 3) as usize],
                )
            })
            .collect()
    }

    #[test]
    fn both_splices_give_the_list_sorted_afresh() {
        for (kept, out_every, added) in [(50, 7, 3), (300, 2, 90), (10, 1, 40), (0, 1, 5)] {
            let mut all = groups(0, kept);
            all.sort_by(|a, b| display_order(a, b));
            let stale: Vec<Arc<Group>> = all.iter().step_by(out_every).cloned().collect();
            let fresh = groups(1000, added);
            let mut expected: Vec<Arc<Group>> = all
                .iter()
                .filter(|g| !stale.iter().any(|s| Arc::ptr_eq(s, g)))
                .cloned()
                .chain(fresh.iter().cloned())
                .collect();
            expected.sort_by(|a, b| display_order(a, b));
            let mut one_by_one = all.clone();
            splice_one_by_one(&mut one_by_one, &stale, fresh.clone());
            let mut by_sort = all.clone();
            splice_by_sort(&mut by_sort, &stale, fresh.clone());
            assert_eq!(one_by_one, expected, "one by one, {kept} kept");
            assert_eq!(by_sort, expected, "by sort, {kept} kept");
        }
    }

    /// The fixtures' catalogue with a twin of two of its models, its pairs found, through a
    /// writer that keeps them as every write does.
    fn writer_with_pairs(dir: &std::path::Path) -> crate::jobs::writer::Writer {
        use crate::jobs::import::{import, DirectorySource};
        use catalogue_index::{CatalogueIndex, ListingIndex};
        let store = Store::open(&dir.join("store"), 1 << 22).expect("store");
        crate::jobs::import::fixtures::import_fixtures(&store.write_turn(), dir);
        let writer = crate::jobs::writer::Writer::new(
            store,
            Arc::new(CatalogueIndex::in_memory().expect("index")),
            Arc::new(ListingIndex::in_memory().expect("index")),
        );
        writer.catch_up().expect("catch up");
        let twins = dir.join("twins");
        std::fs::create_dir_all(&twins).expect("dir");
        std::fs::write(
            twins.join("models.jsonl"),
            concat!(
                r#"{"slug":"submariner-twin","brand":"rolex","series":"submariner","name":"Submariner Date","referenceNumber":"126610LN"}"#,
                "\n",
                r#"{"slug":"gmt-twin","brand":"rolex","series":"gmt-master-ii","name":"GMT-Master II","referenceNumber":"126710BLRO"}"#,
            ),
        )
        .expect("write");
        writer
            .run(|turn| import(turn, &DirectorySource(twins.clone())))
            .expect("twins");
        writer.run(rebuild).expect("full pass");
        writer
    }

    /// A person's two decisions: `dismissed`'s pairs dismissed, `merged`'s models merged into
    /// its first.
    fn dismiss_one_merge_another(
        writer: &crate::jobs::writer::Writer,
        dismissed: &Group,
        merged: &Group,
    ) {
        use crate::jobs::merge::{dismiss, merge};
        use crate::jobs::users::Actor;
        writer
            .run(|turn| dismiss(turn, &Actor::Cli, &dismissed.models))
            .expect("dismiss");
        writer
            .run(|turn| {
                merge(
                    turn,
                    writer.listings(),
                    &Actor::Cli,
                    merged.models[0],
                    &merged.models[1..],
                )
            })
            .expect("merge");
    }

    #[test]
    fn a_model_written_between_a_pass_jobs_reading_and_its_turn_keeps_the_keys_its_write_gave_it() {
        let dir = tempfile::tempdir().expect("dir");
        let writer = writer_with_pairs(dir.path());
        let store = writer.store();
        let keys_of = |id: ModelId| -> Vec<Vec<u8>> {
            let mut keys = store
                .duplicates()
                .model_base_keys(&BTreeSet::new())
                .expect("keys");
            keys.retain(|key| base_key_model(key).expect("model") == id);
            keys.sort();
            keys
        };
        let model = store
            .catalogue()
            .all_models()
            .map(|m| m.expect("model"))
            .find(|m| m.reference_number == "126710BLRO")
            .expect("the GMT");
        // As a change of the base rule leaves a store: the pass finds the model's keys missing.
        let unkeyed = keys_of(model.id);
        assert!(!unkeyed.is_empty());
        let turn = store.write_turn();
        let mut batch = turn.batch().expect("batch");
        batch.remove_base_keys(unkeyed.clone());
        turn.commit_derived(batch).expect("keys removed");
        drop(turn);
        let ready = PassReady::of(store, &BTreeSet::new()).expect("read");
        // A person gives the model another reference: the write keys it by today's rule.
        let mut edited = model.clone();
        edited.reference_number = "5711A".into();
        edited.alternate_references.clear();
        let turn = store.write_turn();
        let mut batch = turn.batch().expect("batch");
        batch.put_model(Some(&model), &edited);
        turn.commit(batch).expect("edited");
        drop(turn);
        let as_written = keys_of(model.id);
        assert_ne!(as_written, unkeyed);
        let control = JobControl::default();
        writer
            .run(|turn| rebuild_as_job(turn, ready, &control))
            .expect("the pass");
        assert_eq!(
            keys_of(model.id),
            as_written,
            "the keys of the references it no longer has written back"
        );
    }

    #[test]
    fn a_pass_forgets_the_pairs_of_a_model_the_store_no_longer_has() {
        let dir = tempfile::tempdir().expect("dir");
        let writer = writer_with_pairs(dir.path());
        let store = writer.store();
        let kept = store.duplicates().duplicate_pairs().expect("pairs");
        let model = kept[0].a;
        // Stored under the gone model, the smaller id: no chunk of the pass holds it.
        let ghost = DuplicatePair::new(ModelId(0), model, DuplicateSignal::SameReference, 1.0);
        let turn = store.write_turn();
        let mut batch = turn.batch().expect("batch");
        batch.replace_duplicate_pairs(ghost.a, &[], std::slice::from_ref(&ghost));
        turn.commit_derived(batch).expect("a pair of a gone model");
        drop(turn);
        assert!(store
            .duplicates()
            .duplicate_pairs()
            .expect("pairs")
            .contains(&ghost));
        writer.run(rebuild).expect("full pass");
        assert_eq!(store.duplicates().duplicate_pairs().expect("pairs"), kept);
    }

    #[test]
    fn a_dismissal_and_a_merge_between_a_pass_jobs_reading_and_its_turn_stand() {
        let dir = tempfile::tempdir().expect("dir");
        let writer = writer_with_pairs(dir.path());
        let store = writer.store();
        let joined = super::groups(store).expect("groups");
        assert!(joined.len() >= 2, "{joined:?}");
        let (dismissed, merged) = (&joined[0], &joined[1]);
        let ready = PassReady::of(store, &BTreeSet::new()).expect("read");
        dismiss_one_merge_another(&writer, dismissed, merged);
        let control = JobControl::default();
        writer
            .run(|turn| rebuild_as_job(turn, ready, &control))
            .expect("the pass");
        let now = super::groups(store).expect("groups");
        assert!(
            !now.iter().any(|g| g.models == dismissed.models),
            "the dismissed pair paired again: {now:?}"
        );
        let gone = &merged.models[1..];
        assert!(!now
            .iter()
            .any(|g| g.models.iter().any(|m| gone.contains(m))));
        let keys = store
            .duplicates()
            .model_base_keys(&BTreeSet::new())
            .expect("keys");
        let keyed = |key: &Vec<u8>| base_key_model(key).expect("model");
        assert!(
            !keys.iter().any(|key| gone.contains(&keyed(key))),
            "a merged model's base keys written again"
        );
    }

    #[test]
    fn a_start_reads_the_kept_groups_alone_and_leaves_the_join_around_the_writes_since() {
        use crate::jobs::merge::dismiss;
        use crate::jobs::users::Actor;
        let dir = tempfile::tempdir().expect("dir");
        let writer = writer_with_pairs(dir.path());
        let store = writer.store();
        let joined = DuplicateGroups::default()
            .of(store)
            .expect("joined, and kept");
        let kept_at = store.duplicates().duplicates_generation().expect("read");
        writer
            .run(|turn| dismiss(turn, &Actor::Cli, &joined[0].models))
            .expect("dismiss");
        let restarted = DuplicateGroups {
            refuse_whole_joins: true,
            ..DuplicateGroups::default()
        };
        restarted.read_as_kept(store).expect("read as kept");
        let held = |groups: &DuplicateGroups| {
            let kept = groups.lock();
            let grouping = kept.grouping.as_ref();
            grouping.map(|(at, grouping)| (*at, grouping.groups().len()))
        };
        assert_eq!(
            held(&restarted),
            Some((kept_at, joined.len())),
            "the groups as kept, the dismissal not yet joined in"
        );
        let now = restarted
            .of(store)
            .expect("joined again around the dismissal");
        assert_eq!(now.len(), joined.len() - 1);
        assert!(!now.iter().any(|g| g.models == joined[0].models));
        let nothing_kept = tempfile::tempdir().expect("dir");
        let fresh = writer_with_pairs(nothing_kept.path());
        let groups = DuplicateGroups::default();
        groups.read_as_kept(fresh.store()).expect("nothing to read");
        assert_eq!(held(&groups), None, "a join of every pair is left to `of`");
    }

    #[test]
    fn a_start_reads_the_kept_groups_and_joins_them_again_only_around_what_was_written_since() {
        let dir = tempfile::tempdir().expect("dir");
        let writer = writer_with_pairs(dir.path());
        let store = writer.store();
        let first = DuplicateGroups::default();
        let joined = first.of(store).expect("joined, and kept");
        assert!(joined.len() >= 2, "{joined:?}");
        // Written since: a group's pairs dismissed, another's models merged.
        let (dismissed, merged) = (&joined[0], &joined[1]);
        dismiss_one_merge_another(&writer, dismissed, merged);
        let whole = |store: &Store| -> Vec<Group> {
            Grouping::of(store)
                .expect("join")
                .groups()
                .iter()
                .map(|g| (**g).clone())
                .collect()
        };
        let restarted = DuplicateGroups {
            refuse_whole_joins: true,
            ..DuplicateGroups::default()
        };
        let read: Vec<Group> = restarted
            .of(store)
            .expect("read as kept, joined again around the writes")
            .iter()
            .map(|g| (**g).clone())
            .collect();
        assert_eq!(read, whole(store), "what joining every pair gives");
        assert!(
            !read.iter().any(|g| g.models == dismissed.models),
            "the dismissed group is gone"
        );
        // Kept again as they stand (as a server does when it stops): read as they are.
        restarted.keep(store);
        let again = DuplicateGroups {
            refuse_whole_joins: true,
            ..DuplicateGroups::default()
        };
        assert_eq!(
            again.of(store).expect("read"),
            restarted.of(store).expect("kept")
        );
    }

    /// The models a write of `write` in a turn of its own notes as touched after duplicates
    /// generation `at`, and the generation after it.
    fn touched_by(
        store: &Store,
        at: StoreGeneration,
        write: impl FnOnce(&mut crate::store::WriteBatch<'_>),
    ) -> (Option<Vec<ModelId>>, StoreGeneration) {
        let turn = store.write_turn();
        let mut batch = turn.batch().expect("batch");
        write(&mut batch);
        turn.commit(batch).expect("commit");
        drop(turn);
        let now = store.duplicates().duplicates_generation().expect("read");
        let touched = store
            .duplicates()
            .duplicates_touched_between(at, now)
            .expect("read");
        (touched, now)
    }

    #[test]
    fn a_model_whose_references_change_is_joined_again_and_a_renamed_brand_joins_them_all() {
        let dir = tempfile::tempdir().expect("dir");
        let writer = writer_with_pairs(dir.path());
        let store = writer.store();
        let groups = DuplicateGroups::default();
        groups.of(store).expect("joined");
        let at = store.duplicates().duplicates_generation().expect("read");
        // A reference spelt anew, pairs unchanged: what groups are filtered by moved.
        let model = store
            .catalogue()
            .all_models()
            .map(|m| m.expect("model"))
            .find(|m| m.reference_number == "126710BLRO" && !m.alternate_references.is_empty())
            .expect("the GMT");
        let mut respelt = model.clone();
        respelt.alternate_references[0] = respelt.alternate_references[0].to_lowercase();
        let (touched, now) = touched_by(store, at, |batch| batch.put_model(Some(&model), &respelt));
        assert_eq!(touched, Some(vec![model.id]));
        let brand = store
            .catalogue()
            .brand(model.brand_id)
            .expect("read")
            .expect("brand");
        let renamed = crate::domain::Brand {
            name: "Rolex SA".into(),
            ..brand.clone()
        };
        let (touched, _) = touched_by(store, now, |batch| batch.put_brand(Some(&brand), &renamed));
        assert_eq!(touched, None, "every group is joined again");
        let fresh = groups.of(store).expect("joined again");
        assert!(fresh.iter().any(|g| g.brand_name == "Rolex SA"));
    }
}
