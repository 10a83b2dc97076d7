//! The duplicates area: what the duplicate finder reads (models by reference base, its pairs,
//! the pairs an admin dismissed, how many writes changed them and which models each touched),
//! where merged models went, and the groups the pairs were last joined into, kept so that a
//! start does not join them again, and the merged models whose listings are still to move.
//! Keyspaces: `ModelBase`, `DuplicatePair`, `DismissedPair`, `MergedSlug`, `MergedId`,
//! `MergedListingsLeft`, `DuplicatesTouched`, `KeptDuplicateGroups`, and the meta keys
//! `MetaKey::DuplicatesGeneration` and `MetaKey::DuplicateGroupsKept`.

use super::codec::{decode, encode, encode_u64};
use super::keys::{self, Keyspace, MetaKey};
use super::{secondary_id, touch_log, write, Store, StoreError, StoreGeneration, StoreResult};
use crate::domain::{BrandId, DuplicateGroup, DuplicatePair, ModelId, Slug};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Groups kept under one key.
const KEPT_GROUPS_PER_KEY: usize = 1_000;

/// Kept duplicate groups, as one key holds them: a record.
#[derive(Serialize, Deserialize)]
pub(super) struct KeptGroups(Vec<DuplicateGroup>);

/// The store's duplicate pairs and merges: see [`Store::duplicates`].
#[derive(Clone, Copy)]
pub struct Duplicates<'s>(pub(super) &'s Store);

impl<'s> Duplicates<'s> {
    /// How many writes have changed the duplicate finder's pairs or dismissals, or what its
    /// groups are ordered by: groups joined at this count are current.
    pub fn duplicates_generation(self) -> StoreResult<StoreGeneration> {
        Ok(StoreGeneration(
            self.0.meta(MetaKey::DuplicatesGeneration)?.unwrap_or(0),
        ))
    }

    /// Every model whose duplicate pairs, dismissals or group keys the writes after duplicates
    /// generation `after` up to `upto` changed, sorted; `None` when one of them left no note of
    /// it (it touched too many, or renamed a brand) or they touched too many.
    pub fn duplicates_touched_between(
        self,
        after: StoreGeneration,
        upto: StoreGeneration,
    ) -> StoreResult<Option<Vec<ModelId>>> {
        touch_log::touched_between(&self.0.db, after.0, upto.0)
    }

    /// The duplicate groups as last kept ([`Duplicates::keep_groups`]), in the order kept,
    /// and the duplicates generation they were joined at.
    pub fn kept_groups(self) -> StoreResult<Option<(StoreGeneration, Vec<DuplicateGroup>)>> {
        let Some(at) = self.0.meta(MetaKey::DuplicateGroupsKept)? else {
            return Ok(None);
        };
        // The chunks' keys first, then the chunks read and decoded as rayon tasks: on the pool
        // the caller runs in (the server reads them with many reads in flight, cold after a
        // start: D-202).
        let keys = (self
            .0
            .db
            .scan_prefix(Keyspace::KeptDuplicateGroups.prefix())
            .keys())
        .collect::<Result<Vec<_>, _>>()?;
        let chunks = keys
            .par_iter()
            .map(|key| match self.0.db.get(key)? {
                Some(value) => decode::<KeptGroups>(key, &value),
                None => Ok(KeptGroups(Vec::new())),
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let groups = chunks.into_iter().flat_map(|chunk| chunk.0).collect();
        Ok(Some((StoreGeneration(at), groups)))
    }

    /// Keeps `groups`, joined at duplicates generation `at`, in place of those kept before, and
    /// forgets which models the writes up to `at` touched. Derived data, written outside the
    /// write turn in one flushed sled batch, like the bookkeeping of sessions: a write going
    /// on meanwhile notes only what comes after `at`.
    pub fn keep_groups(
        self,
        at: StoreGeneration,
        groups: &[Arc<DuplicateGroup>],
    ) -> StoreResult<()> {
        let mut batch: Vec<write::Operation> = Vec::new();
        for key in self
            .0
            .db
            .scan_prefix(Keyspace::KeptDuplicateGroups.prefix())
            .keys()
        {
            batch.push((key?.to_vec(), None));
        }
        for (n, chunk) in groups.chunks(KEPT_GROUPS_PER_KEY).enumerate() {
            let kept = KeptGroups(chunk.iter().map(|group| (**group).clone()).collect());
            batch.push((
                Keyspace::KeptDuplicateGroups.id_key(n as u64),
                Some(encode(&kept)),
            ));
        }
        for key in touch_log::entries_up_to(&self.0.db, at.0)? {
            batch.push((key, None));
        }
        batch.push((
            MetaKey::DuplicateGroupsKept.key(),
            Some(encode_u64(at.0).to_vec()),
        ));
        self.0.apply_flushed(batch, &[])
    }

    /// Models of `brand` one of whose references has the base `base`, by id.
    pub fn model_ids_by_base(self, brand: BrandId, base: &str) -> StoreResult<Vec<ModelId>> {
        Ok(self
            .0
            .ids_under(keys::model_base_prefix(brand, base))?
            .into_iter()
            .map(ModelId)
            .collect())
    }

    /// Every reference-base key, as stored, but those of the models `left_out` (a full pass
    /// writes them afresh); [`base_key_model`] names the model of each.
    pub fn model_base_keys(
        self,
        left_out: &std::collections::BTreeSet<ModelId>,
    ) -> StoreResult<Vec<Vec<u8>>> {
        let mut found = Vec::new();
        for key in self.0.db.scan_prefix(Keyspace::ModelBase.prefix()).keys() {
            let key = key?;
            if !left_out.contains(&ModelId(secondary_id(&key)?)) {
                found.push(key.to_vec());
            }
        }
        Ok(found)
    }

    /// The finder's pairs of `model`.
    pub fn duplicate_pairs_of(self, model: ModelId) -> StoreResult<Vec<DuplicatePair>> {
        self.pairs_under(keys::duplicate_pairs_of(model), |_, _| true)
    }

    /// Every pair of the finder, once each, in key order.
    pub fn duplicate_pairs(self) -> StoreResult<Vec<DuplicatePair>> {
        // Each pair is stored both ways: the way with the smaller id first stands for it.
        self.pairs_under(Keyspace::DuplicatePair.prefix(), |first, second| {
            first < second
        })
    }

    fn pairs_under(
        self,
        prefix: Vec<u8>,
        keep: impl Fn(ModelId, ModelId) -> bool,
    ) -> StoreResult<Vec<DuplicatePair>> {
        let mut pairs = Vec::new();
        for entry in self.0.db.scan_prefix(&prefix) {
            let (key, value) = entry?;
            let corrupt = || StoreError::Corrupt {
                key: key.to_vec(),
                reason: "a duplicate pair is two ids, a signal and a score".into(),
            };
            let (first, second) = keys::pair_ids(&key).ok_or_else(corrupt)?;
            if keep(first, second) {
                let (signal, score) = write::decode_pair(&value).ok_or_else(corrupt)?;
                pairs.push(DuplicatePair::new(first, second, signal, score));
            }
        }
        Ok(pairs)
    }

    pub fn is_dismissed(self, a: ModelId, b: ModelId) -> StoreResult<bool> {
        Ok(self.0.db.contains_key(keys::dismissed_pair(a, b))?)
    }

    /// Every dismissed pair, the smaller id first, in key order.
    pub fn dismissed_pairs(self) -> StoreResult<Vec<(ModelId, ModelId)>> {
        self.0
            .db
            .scan_prefix(Keyspace::DismissedPair.prefix())
            .keys()
            .map(|key| {
                let key = key?;
                keys::pair_ids(&key).ok_or_else(|| StoreError::Corrupt {
                    key: key.to_vec(),
                    reason: "a dismissed pair is two ids".into(),
                })
            })
            .collect()
    }

    /// The live model a merged model `id` was merged into (following later merges), if it was.
    pub fn merged_into(self, id: ModelId) -> StoreResult<Option<ModelId>> {
        self.follow_merges(self.0.get_id(Keyspace::MergedId.id_key(id.0))?)
    }

    /// The live model the merged model once at `brand`/`slug` was merged into, if one was.
    pub fn merged_slug(self, brand: BrandId, slug: &Slug) -> StoreResult<Option<ModelId>> {
        self.follow_merges(self.0.get_id(keys::merged_slug(brand, slug))?)
    }

    /// The merged models some of whose listings still name them, for the listing mover.
    pub fn merged_with_listings_left(self) -> StoreResult<Vec<ModelId>> {
        (self.0.db)
            .scan_prefix(Keyspace::MergedListingsLeft.prefix())
            .keys()
            .map(|key| Ok(ModelId(secondary_id(&key?)?)))
            .collect()
    }

    fn follow_merges(self, mut at: Option<u64>) -> StoreResult<Option<ModelId>> {
        // A keeper merged later into another keeper: follow, a bounded number of times.
        for _ in 0..32 {
            let Some(id) = at else { return Ok(None) };
            match self.0.get_id(Keyspace::MergedId.id_key(id))? {
                Some(next) => at = Some(next),
                None => return Ok(Some(ModelId(id))),
            }
        }
        Ok(at.map(ModelId))
    }
}

/// The model a reference-base key of [`Duplicates::model_base_keys`] belongs to.
pub fn base_key_model(key: &[u8]) -> StoreResult<ModelId> {
    Ok(ModelId(secondary_id(key)?))
}
