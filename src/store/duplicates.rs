//! The duplicates area: what the duplicate finder reads (models by reference base, its pairs,
//! the pairs an admin dismissed, how many writes changed them) and where merged models went.
//! Keyspaces: `ModelBase`, `DuplicatePair`, `DismissedPair`, `MergedSlug`, `MergedId`, and the
//! meta key `MetaKey::DuplicatesGeneration`.

use super::keys::{self, Keyspace, MetaKey};
use super::{secondary_id, write, Store, StoreError, StoreGeneration, StoreResult};
use crate::domain::{BrandId, DuplicatePair, ModelId, Slug};

/// The store's duplicate pairs and merges: see [`Store::duplicates`].
#[derive(Clone, Copy)]
pub struct Duplicates<'s>(pub(super) &'s Store);

impl<'s> Duplicates<'s> {
    /// How many writes have changed the duplicate finder's pairs or dismissals: groups joined
    /// at this count are current.
    pub fn duplicates_generation(self) -> StoreResult<StoreGeneration> {
        Ok(StoreGeneration(
            self.0.meta(MetaKey::DuplicatesGeneration)?.unwrap_or(0),
        ))
    }

    /// Every model whose duplicate pairs or dismissals the writes after duplicates generation
    /// `after` up to `upto` changed, sorted; `None` when this process did not see them all.
    pub fn duplicates_touched_between(
        self,
        after: StoreGeneration,
        upto: StoreGeneration,
    ) -> Option<Vec<ModelId>> {
        self.0.touch_log().touched_between(after.0, upto.0)
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
    /// writes them afresh).
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
