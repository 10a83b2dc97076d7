//! `WriteBatch`: the records of one write and all their secondary keys, applied atomically by
//! [`Store::commit`](super::Store::commit). Upserts take the previous version of a record so
//! that secondary keys it no longer has are removed in the same batch.

use super::codec::{encode, encode_u64};
use super::keys::{self, Counted, Keyspace, MetaKey};
use super::pending::GroupWrites;
use super::price_changes::ChangeWrites;
use super::price_series::{self, FoldProgress, SeriesLog};
use super::sources::SourceWrites;
use super::turn::BatchChanges;
use super::unmatched::GroupChanges;
use super::{Store, StoreResult};
use crate::domain::price_history::AskingPrice;
use crate::domain::price_series::ModelFold;
use crate::domain::rates::EcbRates;
use crate::domain::{
    normalize_reference, AuditEntry, Brand, BrandId, Caliber, Complication, DuplicatePair,
    DuplicateSignal, Listing, ListingStatus, Look, Model, ModelId, PictureCandidate, PictureId,
    PictureRecord, PictureReview, Provider, ReviewStatus, Series, Session, Timestamp, TokenHash,
    User, Username,
};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::marker::PhantomData;

/// A key written with its value, or removed (`None`).
pub(super) type Operation = (Vec<u8>, Option<Vec<u8>>);

/// Pending writes, in order; dropped without effect unless committed. Made and committed only
/// inside a [`WriteTurn`](super::WriteTurn), which it cannot outlive.
pub struct WriteBatch<'t> {
    /// Plain byte vectors, turned into sled batches one chunk at a time at commit: holding the
    /// whole write as sled batches instead took gigabytes more at a million models
    /// (docs/decisions.md, D-14).
    operations_in_order: Vec<Operation>,
    operations: usize,
    next_ids: HashMap<Keyspace, u64>,
    /// True when the write changes what the listings index holds.
    touches_listings: bool,
    /// The models whose duplicate pairs or dismissals the write changes (both ends of a pair),
    /// or what their groups are ordered and filtered by (their references, their brand).
    duplicates_touched: BTreeSet<ModelId>,
    /// A brand renamed: every duplicate group's brand name may be stale.
    regroup_all: bool,
    changes: BatchChanges,
    /// How each admin count moves with this write, applied to the stored counts at commit.
    counts: HashMap<Counted, i64>,
    /// Models this write marks (true) for their listing candidates to be ranked again, or
    /// clears the mark of (false): written at commit, a mark only where the store lacks it.
    stale_candidates: HashMap<ModelId, bool>,
    /// Models this write deletes (merged away): no count is kept for them.
    removed_models: HashSet<ModelId>,
    /// Pictures queued in groups, and those leaving theirs (`super::pending`).
    pending: GroupWrites,
    /// Sources of the listings created, written in groups (`super::sources`).
    sources: SourceWrites,
    /// The groups of unmatched listings the write moves (`super::unmatched`).
    unmatched: GroupChanges,
    /// The listings' price changes the write sees (`super::price_changes`).
    price_changes: ChangeWrites,
    /// The models whose listings' prices, statuses or models the write changes, and whether
    /// every model's series is to be folded again (a day of rates): the series log's entry
    /// of the write (`super::price_series`).
    price_series_touched: BTreeSet<ModelId>,
    price_series_every_model: bool,
    /// Entries appended to the audit trail, written at commit with their lists' keys and
    /// counts (`super::audit`).
    audit: Vec<AuditEntry>,
    /// The ECB rates in force as the batch leaves them, once a day of rates was put
    /// (`None`: not read yet); read from the store at the first.
    rates_in_force: Option<Option<EcbRates>>,
    store: Store,
    turn: PhantomData<&'t ()>,
}

impl<'t> WriteBatch<'t> {
    pub(super) fn new(store: &Store) -> StoreResult<WriteBatch<'t>> {
        Ok(WriteBatch {
            operations_in_order: Vec::new(),
            operations: 0,
            next_ids: HashMap::new(),
            touches_listings: false,
            duplicates_touched: BTreeSet::new(),
            regroup_all: false,
            changes: BatchChanges::default(),
            counts: HashMap::new(),
            stale_candidates: HashMap::new(),
            removed_models: HashSet::new(),
            pending: GroupWrites::default(),
            sources: SourceWrites::default(),
            unmatched: GroupChanges::default(),
            price_changes: ChangeWrites::default(),
            price_series_touched: BTreeSet::new(),
            price_series_every_model: false,
            audit: Vec::new(),
            rates_in_force: None,
            store: store.clone(),
            turn: PhantomData,
        })
    }

    /// True when nothing was written to the batch yet.
    pub fn is_empty(&self) -> bool {
        self.operations == 0
    }

    pub(super) fn touches_listings(&self) -> bool {
        self.touches_listings
    }

    pub(super) fn touches_duplicates(&self) -> bool {
        !self.duplicates_touched.is_empty() || self.regroup_all
    }

    /// True when every duplicate group is to be joined again after the write.
    pub(super) fn regroups_all(&self) -> bool {
        self.regroup_all
    }

    /// The models whose duplicate pairs or dismissals the write changes.
    pub(super) fn duplicates_touched(&self) -> &BTreeSet<ModelId> {
        &self.duplicates_touched
    }

    /// The models the write logs for the series folder, and whether it logs every model,
    /// taken out of it: the commit writes them as the write's entry of the log.
    pub(super) fn take_series_log(&mut self) -> (BTreeSet<ModelId>, bool) {
        (
            std::mem::take(&mut self.price_series_touched),
            self.price_series_every_model,
        )
    }

    /// The entries the write appends to the audit trail, taken out of it: the commit writes
    /// them holding the right to append (`super::audit::AppendRight`).
    pub(super) fn take_audit(&mut self) -> Vec<AuditEntry> {
        std::mem::take(&mut self.audit)
    }

    /// The writes in order, after the id counters they moved (a write applied in several
    /// chunks never leaves an id it used free for reuse) and the admin counts they move, and
    /// what they change. Read inside the write turn, so no other write moves a count between.
    pub(super) fn into_operations(self) -> StoreResult<(Vec<Operation>, BatchChanges)> {
        let mut counters: Vec<Operation> = self
            .next_ids
            .into_iter()
            .map(|(space, next)| {
                (
                    MetaKey::NextId(space).key(),
                    Some(encode_u64(next).to_vec()),
                )
            })
            .collect();
        for (counted, delta) in self.counts {
            if delta != 0 {
                let count = self.store.count_of(counted)? as i64 + delta;
                counters.push((
                    MetaKey::Count(counted).key(),
                    Some(encode_u64(count.max(0) as u64).to_vec()),
                ));
            }
        }
        let groups = self.pending.into_operations(&self.store)?;
        let stale = stale_operations(&self.store, self.stale_candidates)?;
        let unmatched = self.unmatched.into_operations(&self.store)?;
        let price_changes = self.price_changes.into_operations(&self.store)?;
        let operations = counters
            .into_iter()
            .chain(self.operations_in_order)
            .chain(groups)
            .chain(self.sources.into_operations())
            .chain(stale)
            .chain(unmatched)
            .chain(price_changes)
            .collect();
        Ok((operations, self.changes))
    }

    fn count(&mut self, counted: Counted, delta: i64) {
        *self.counts.entry(counted).or_default() += delta;
    }

    /// Counts a record of `counted` that did not exist before.
    fn count_new<T>(&mut self, counted: Counted, old: Option<&T>) {
        if old.is_none() {
            self.count(counted, 1);
        }
    }

    /// A fresh id for a record of `space`; ids start at 1 and are never reused.
    pub fn allocate_id(&mut self, space: Keyspace) -> StoreResult<u64> {
        let next = match self.next_ids.get(&space) {
            Some(next) => *next,
            None => self.store.meta(MetaKey::NextId(space))?.unwrap_or(1),
        };
        self.next_ids.insert(space, next + 1);
        Ok(next)
    }

    /// An owned value (an encoded record) is moved into the write, not copied: a million
    /// models' records and keys were copied once more each.
    fn put(&mut self, key: Vec<u8>, value: impl Into<Vec<u8>>) {
        self.operations_in_order.push((key, Some(value.into())));
        self.operations += 1;
    }

    fn remove(&mut self, key: Vec<u8>) {
        self.operations_in_order.push((key, None));
        self.operations += 1;
    }

    /// Replaces the secondary keys `old` had with the ones `new` has. Keys both have, with the
    /// same value, are left alone: a refreshed listing costs one sled write, not three.
    fn reindex_keys(&mut self, old: Vec<(Vec<u8>, Vec<u8>)>, new: Vec<(Vec<u8>, Vec<u8>)>) {
        for (key, _) in &old {
            if !new.iter().any(|(k, _)| k == key) {
                self.remove(key.clone());
            }
        }
        for pair in new {
            if !old.contains(&pair) {
                self.put(pair.0, pair.1);
            }
        }
    }

    pub fn put_brand(&mut self, old: Option<&Brand>, new: &Brand) {
        self.count_new(Counted::Brands, old);
        self.changes.brands.push(new.id);
        self.changes.renamed |=
            old.is_some_and(|old| old.name != new.name || old.aliases != new.aliases);
        // Duplicate groups are ordered by their brand's name.
        self.regroup_all |= old.is_some_and(|old| old.name != new.name);
        self.reindex_keys(old.map(brand_keys).unwrap_or_default(), brand_keys(new));
        self.put(Keyspace::Brand.id_key(new.id.0), encode(new));
    }

    pub fn put_series(&mut self, old: Option<&Series>, new: &Series) {
        self.count_new(Counted::Series, old);
        self.changes.series.push(new.id);
        self.changes.renamed |= old.is_some_and(|old| old.name != new.name);
        self.reindex_keys(old.map(series_keys).unwrap_or_default(), series_keys(new));
        self.put(Keyspace::Series.id_key(new.id.0), encode(new));
    }

    pub fn put_complication(&mut self, old: Option<&Complication>, new: &Complication) {
        let keys_of = |c: &Complication| vec![(keys::complication_slug(&c.slug), id_value(c.id.0))];
        // Models' documents carry the slugs of their calibre's complications.
        self.changes.renamed |= old.is_some_and(|old| old.slug != new.slug);
        self.reindex_keys(old.map(keys_of).unwrap_or_default(), keys_of(new));
        self.put(Keyspace::Complication.id_key(new.id.0), encode(new));
    }

    pub fn put_caliber(&mut self, old: Option<&Caliber>, new: &Caliber) {
        self.count_new(Counted::Calibers, old);
        // Models' documents carry their calibre's type and complications.
        self.changes.renamed |= old.is_some_and(|old| {
            old.kind != new.kind || old.complication_ids != new.complication_ids
        });
        self.reindex_keys(old.map(caliber_keys).unwrap_or_default(), caliber_keys(new));
        self.put(Keyspace::Caliber.id_key(new.id.0), encode(new));
    }

    pub fn put_model(&mut self, old: Option<&Model>, new: &Model) {
        self.count_new(Counted::Models, old);
        let changes = &mut self.changes;
        changes.models.push(new.id);
        if old.is_none() {
            changes.created_models.push(new.id);
        }
        changes.model_words |= old.is_none_or(|old| !old.same_words(new));
        // A model that is new, or moved, changes the model counts of its brand and series.
        for model in old.iter().copied().chain([new]) {
            changes.brands.push(model.brand_id);
            changes.series.push(model.series_id);
        }
        if let Some(old) = old {
            changes.model_moves.push((old.brand_id, old.series_id, -1));
        }
        changes.model_moves.push((new.brand_id, new.series_id, 1));
        if old.is_some_and(|old| changes_its_group(old, new)) {
            self.duplicates_touched.insert(new.id);
        }
        self.reindex_keys(old.map(model_keys).unwrap_or_default(), model_keys(new));
        self.put(Keyspace::Model.id_key(new.id.0), encode(new));
    }

    /// Writes `new`, over `old` when it is not new. A new listing's source (the provider's
    /// own id) joins its write's group (`super::sources`); a listing's source never changes.
    pub fn put_listing(&mut self, old: Option<&Listing>, new: &Listing) {
        self.touches_listings = true;
        self.changes.listings.push(new.id);
        let (was, is) = (old.map(listing_counts), listing_counts(new));
        let (was_listed, was_unmatched) = was.unwrap_or((0, 0));
        self.count(Counted::Listings, is.0 - was_listed);
        self.count(Counted::UnmatchedListings, is.1 - was_unmatched);
        if old.is_none() {
            (self.sources).created(new.provider_id, new.provider_code.clone(), new.id);
        }
        self.put(Keyspace::Listing.id_key(new.id.0), encode(new));
        self.unmatched.listing_written(old, new);
        self.price_changes.listing_written(old, new);
        self.log_series_of(old, new);
        self.mark_candidates_stale(old, new);
    }

    /// A listing new, or whose price, status or model changed, changes its models' series
    /// (the one it left too): logged for the series folder.
    fn log_series_of(&mut self, old: Option<&Listing>, new: &Listing) {
        // On every listing an ingest writes: compared without allocating.
        let unchanged = old.is_some_and(|old| {
            old.model_id == new.model_id
                && old.status == new.status
                && AskingPrice::same(&old.details, &new.details)
        });
        if unchanged {
            return;
        }
        let models = old
            .and_then(|old| old.model_id)
            .into_iter()
            .chain(new.model_id);
        self.price_series_touched.extend(models);
    }

    /// A listing whose model or pictures changed changes what its models' listing candidates
    /// are made of: the image worker ranks them again.
    fn mark_candidates_stale(&mut self, old: Option<&Listing>, new: &Listing) {
        // On every listing an ingest writes: compared without allocating.
        let unchanged = old.is_some_and(|old| {
            old.model_id == new.model_id
                && old
                    .pictures
                    .iter()
                    .map(|p| p.id)
                    .eq(new.pictures.iter().map(|p| p.id))
        });
        if unchanged {
            return;
        }
        let models = old.iter().copied().chain([new]);
        for model in models
            .filter(|l| !l.pictures.is_empty())
            .filter_map(|l| l.model_id)
        {
            if self.stale_candidates.insert(model, true) != Some(true) {
                self.operations += 1;
            }
        }
    }

    /// Sets the number of ACTIVE listings matched to `model`.
    pub fn set_listing_count(&mut self, model: crate::domain::ModelId, count: u64) {
        if self.removed_models.contains(&model) {
            return;
        }
        self.changes.recounted.push(model);
        self.put(keys::model_listing_count(model), encode_u64(count));
    }

    /// Marks the store as holding listing counts back (`held`), or as holding none again: a
    /// write of its own, committed before the first record whose count is held and after the
    /// last count is written (`jobs::listing_writes`).
    pub fn hold_listing_counts(&mut self, held: bool) {
        let key = MetaKey::ListingCountsHeld.key();
        if held {
            self.put(key, []);
        } else {
            self.remove(key);
        }
    }

    /// Stores one day of ECB rates under its date, replacing what was stored for that day, and
    /// makes it the rates in force unless those are of a later day: a day loaded late (history
    /// filled in) never replaces newer rates (docs/decisions.md, D-204). Rates in force left
    /// as they were (the same day loaded again unchanged) reprice nothing. True when the day
    /// is the rates in force after the write.
    pub fn put_rates(&mut self, day: &EcbRates) -> StoreResult<bool> {
        // A day new or changed may change the table any period of any series converts at.
        self.price_series_every_model |= self.store.rates().day(&day.date)?.as_ref() != Some(day);
        self.put(keys::rates_day(&day.date), encode(day));
        self.changes.rate_days = true;
        let in_force = self.rates_in_force()?;
        match in_force {
            Some(current) if current.date > day.date => return Ok(false),
            Some(current) if current == day => return Ok(true),
            _ => {}
        }
        self.touches_listings = true;
        self.changes.rates = true;
        self.put(MetaKey::Rates.key(), encode(day));
        self.rates_in_force = Some(Some(day.clone()));
        Ok(true)
    }

    /// The rates in force as this batch leaves them so far.
    fn rates_in_force(&mut self) -> StoreResult<Option<&EcbRates>> {
        if self.rates_in_force.is_none() {
            self.rates_in_force = Some(self.store.rates().in_force()?);
        }
        Ok(self.rates_in_force.as_ref().and_then(Option::as_ref))
    }

    pub fn put_provider(&mut self, old: Option<&Provider>, new: &Provider) {
        self.count_new(Counted::Providers, old);
        let keys_of = |p: &Provider| vec![(keys::provider_slug(&p.slug), id_value(p.id.0))];
        self.reindex_keys(old.map(keys_of).unwrap_or_default(), keys_of(new));
        self.put(Keyspace::Provider.id_key(new.id.0), encode(new));
    }
}

/// Users, sessions and the audit trail: back-office records with no index behind them.
impl WriteBatch<'_> {
    pub fn put_user(&mut self, user: &User) {
        self.put(keys::user(&user.name), encode(user));
    }

    pub fn remove_user(&mut self, name: &Username) {
        self.remove(keys::user(name));
    }

    pub fn put_session(&mut self, session: &Session) {
        self.put(keys::session(&session.token_hash), encode(session));
        self.put(keys::session_of(&session.user, &session.token_hash), []);
    }

    pub fn remove_session(&mut self, user: &Username, token: &TokenHash) {
        self.remove(keys::session(token));
        self.remove(keys::session_of(user, token));
    }

    /// Appends `entry` (its id from `Audit::next_audit_id`) to the audit trail, in the lists
    /// of its user and its action.
    pub fn put_audit(&mut self, entry: &AuditEntry) {
        self.audit.push(entry.clone());
        self.operations += 1;
    }

    /// Where the image pipeline is with one picture: no index or count depends on it. Its id
    /// stays under `PictureDue` exactly while the worker may still have work for it; a picture
    /// queued in a group (`WriteBatch::queue_picture`) leaves it in the same commit.
    pub fn put_picture(&mut self, picture: &PictureRecord) {
        self.pending.stated(picture.id);
        let id = picture.id.0;
        self.put(Keyspace::PictureState.id_key(id), encode(picture));
        let due = Keyspace::PictureDue.id_key(id);
        if picture.may_be_due() {
            self.put(due, []);
        } else {
            self.remove(due);
        }
    }
}

/// Pictures queued for the image worker in groups (`super::pending`).
impl WriteBatch<'_> {
    /// A new picture's id, pending for the image worker from `at`: the same record as
    /// `put_picture` of `PictureRecord::pending`, held with the pictures queued next to it in
    /// one key instead of two keys of its own.
    pub fn queue_picture(&mut self, source: String, at: Timestamp) -> StoreResult<PictureId> {
        let id = PictureId(self.allocate_id(Keyspace::Picture)?);
        self.queue_allocated_picture(id, source, at);
        Ok(id)
    }

    /// Queues picture `id` as [`WriteBatch::queue_picture`] queues a new one: `id` must have
    /// been allocated by this batch after every picture it queued before (an import's model
    /// pictures, allocated as their models are built).
    pub fn queue_allocated_picture(&mut self, id: PictureId, source: String, at: Timestamp) {
        self.pending.queue(id, source, at);
        self.operations += 1;
    }
}

/// Picture review: candidates, each model's review record and its place in the queue, and what
/// fetched pictures look like. No index or count depends on them.
impl WriteBatch<'_> {
    /// Writes `new`, keeping its model's list of candidates.
    pub fn put_candidate(&mut self, new: &PictureCandidate) {
        self.put(keys::candidate_of_model(new.model_id, new.id), []);
        self.put(Keyspace::Candidate.id_key(new.id.0), encode(new));
    }

    pub fn remove_candidate(&mut self, candidate: &PictureCandidate) {
        self.remove(keys::candidate_of_model(candidate.model_id, candidate.id));
        self.remove(Keyspace::Candidate.id_key(candidate.id.0));
    }

    /// Writes `model`'s review record and puts the model in the queue list it belongs in
    /// (`has_candidates`: whether it has any after this write).
    pub fn put_picture_review(
        &mut self,
        model: ModelId,
        review: &PictureReview,
        has_candidates: bool,
    ) {
        let status = review.status(has_candidates);
        for list in [ReviewStatus::Pending, ReviewStatus::Reviewed] {
            let key = keys::review_queue(list, model);
            if status == Some(list) {
                self.put(key, []);
            } else {
                self.remove(key);
            }
        }
        self.put(Keyspace::PictureReview.id_key(model.0), encode(review));
    }

    /// Forgets `model`'s review record and its place in the queue.
    pub fn remove_picture_review(&mut self, model: ModelId) {
        for list in [ReviewStatus::Pending, ReviewStatus::Reviewed] {
            self.remove(keys::review_queue(list, model));
        }
        self.remove(Keyspace::PictureReview.id_key(model.0));
    }

    pub fn put_look(&mut self, picture: PictureId, look: Look) {
        self.put(Keyspace::PictureLook.id_key(picture.0), encode_u64(look.0));
    }

    /// `model`'s listing candidates were ranked on what the store holds now.
    pub fn clear_candidates_stale(&mut self, model: ModelId) {
        self.stale_candidates.insert(model, false);
        self.operations += 1;
    }
}

/// The duplicate finder's pairs and dismissals, and the redirects of merged models.
impl WriteBatch<'_> {
    /// Replaces `model`'s pairs (`old`, as stored) with `new`, both ways.
    pub fn replace_duplicate_pairs(
        &mut self,
        model: ModelId,
        old: &[DuplicatePair],
        new: &[DuplicatePair],
    ) {
        let other = |p: &DuplicatePair| if p.a == model { p.b } else { p.a };
        for pair in old {
            if !new.iter().any(|n| other(n) == other(pair)) {
                self.remove(keys::duplicate_pair(model, other(pair)));
                self.remove(keys::duplicate_pair(other(pair), model));
                self.duplicates_touched.extend([model, other(pair)]);
            }
        }
        for pair in new {
            if !old.contains(pair) {
                let value = encode_pair(pair);
                self.put(keys::duplicate_pair(model, other(pair)), value.clone());
                self.put(keys::duplicate_pair(other(pair), model), value);
                self.duplicates_touched.extend([model, other(pair)]);
            }
        }
    }

    /// Removes reference-base keys (`Duplicates::model_base_keys`) no model has any more.
    pub fn remove_base_keys(&mut self, stale: impl IntoIterator<Item = Vec<u8>>) {
        for key in stale {
            self.remove(key);
        }
    }

    /// Writes those of the reference-base keys of model `id` of `brand`, whose references have
    /// the `bases` today's rule gives ([`Model::reference_bases`]), that are not in `stored`,
    /// and takes the others out of `stored`: what is left there in the end is stale.
    pub fn put_missing_base_keys<'b>(
        &mut self,
        (brand, id): (BrandId, ModelId),
        bases: impl IntoIterator<Item = &'b str>,
        stored: &mut HashSet<Vec<u8>>,
    ) {
        for (key, value) in base_keys(brand, id, bases) {
            if !stored.remove(&key) {
                self.put(key, value);
            }
        }
    }

    pub fn dismiss_pair(&mut self, a: ModelId, b: ModelId) {
        self.put(keys::dismissed_pair(a, b), []);
        self.duplicates_touched.extend([a, b]);
    }

    /// Forgets dismissals naming `model` (merged away): its id is never used again.
    pub fn forget_dismissed(&mut self, model: ModelId, others: &[ModelId]) {
        for other in others {
            self.remove(keys::dismissed_pair(model, *other));
        }
        self.duplicates_touched.insert(model);
        self.duplicates_touched.extend(others);
    }

    /// Deletes `old`, merged into `keeper`: its record and keys go, its slug and id redirect.
    pub fn merge_model_away(&mut self, old: &Model, keeper: ModelId) {
        self.count(Counted::Models, -1);
        self.changes.models.push(old.id);
        self.changes.model_words = true;
        self.changes.brands.push(old.brand_id);
        self.changes.series.push(old.series_id);
        self.changes
            .model_moves
            .push((old.brand_id, old.series_id, -1));
        self.reindex_keys(model_keys(old), Vec::new());
        self.remove(Keyspace::Model.id_key(old.id.0));
        self.remove(keys::model_listing_count(old.id));
        self.removed_models.insert(old.id);
        self.remove_picture_review(old.id);
        self.put(
            keys::merged_slug(old.brand_id, &old.slug),
            id_value(keeper.0),
        );
        self.put(Keyspace::MergedId.id_key(old.id.0), id_value(keeper.0));
        self.duplicates_touched.extend([old.id, keeper]);
        // Its series goes with it, and its listings' timelines to the keeper.
        self.price_series_touched.extend([old.id, keeper]);
    }

    /// Leaves listings of `merged`, a model this batch merges away, to the listing mover, which
    /// the writer wakes after the commit.
    pub fn leave_listings_to_the_mover(&mut self, merged: ModelId) {
        self.set_listings_left(merged, true);
        self.changes.listings_left = true;
    }

    /// Says whether listings of `merged`, a model an earlier batch merged away, are still left
    /// (`false`: the key goes); the mover's own writes, which wake no one: it goes on while
    /// any are left. Counts are not kept for the merged model.
    pub fn set_listings_left(&mut self, merged: ModelId, left: bool) {
        self.removed_models.insert(merged);
        let key = Keyspace::MergedListingsLeft.id_key(merged.0);
        match left {
            true => self.put(key, []),
            false => self.remove(key),
        }
    }
}

/// The models' price series as the series folder keeps them (`super::price_series`): derived
/// writes, committed without a generation bump.
impl WriteBatch<'_> {
    /// Leaves `model`'s series as `fold` has it; `None` forgets it (no listing, or the model
    /// is gone).
    pub fn put_series_fold(&mut self, model: ModelId, fold: Option<&ModelFold>) -> StoreResult<()> {
        for (key, value) in price_series::fold_operations(&self.store, model, fold)? {
            match value {
                Some(value) => self.put(key, value),
                None => self.remove(key),
            }
        }
        Ok(())
    }

    /// Removes the entries of `log`, and the progress of the drains of them: what they name is
    /// folded.
    pub fn forget_series_log(&mut self, log: &SeriesLog) {
        for (key, _) in price_series::forget_operations(log) {
            self.remove(key);
        }
        self.remove(MetaKey::SeriesFoldProgress.key());
    }

    /// Keeps how far a drain of the series log has folded, for a drain after a stop to resume.
    pub fn keep_fold_progress(&mut self, progress: &FoldProgress) {
        self.put(MetaKey::SeriesFoldProgress.key(), encode(progress));
    }
}

/// The marks of `stale` (see `WriteBatch::stale_candidates`) as writes. A mark the store
/// holds already is not written again: an ingest's chunks mark the same models over and over
/// (docs/decisions.md, D-121), and nothing
/// clears a mark between the read and the commit, both inside the write turn.
fn stale_operations(store: &Store, stale: HashMap<ModelId, bool>) -> StoreResult<Vec<Operation>> {
    let mut operations = Vec::new();
    for (model, marked) in stale {
        let key = Keyspace::CandidatesStale.id_key(model.0);
        if !marked {
            operations.push((key, None));
        } else if !store.db.contains_key(&key)? {
            operations.push((key, Some(Vec::new())));
        }
    }
    Ok(operations)
}

/// A pair's stored value: the signal byte and the name score in thousandths.
fn encode_pair(pair: &DuplicatePair) -> Vec<u8> {
    let score = (pair.name_score.clamp(0.0, 1.0) * 1000.0).round() as u16;
    let mut value = vec![pair.signal as u8];
    value.extend_from_slice(&score.to_be_bytes());
    value
}

pub(super) fn decode_pair(value: &[u8]) -> Option<(DuplicateSignal, f64)> {
    let (&signal, score) = value.split_first()?;
    let score: [u8; 2] = score.try_into().ok()?;
    Some((
        DuplicateSignal::from_byte(signal)?,
        f64::from(u16::from_be_bytes(score)) / 1000.0,
    ))
}

/// True when `new` changes what a duplicate group holding `old` is ordered or filtered by (its
/// references, its brand, its age): the group is joined again, even where no pair changed.
fn changes_its_group(old: &Model, new: &Model) -> bool {
    old.brand_id != new.brand_id
        || old.created_at != new.created_at
        || !old.references().eq(new.references())
}

/// Whether a listing counts as listed (not DELISTED) and as unmatched, as 0 or 1 each.
pub(super) fn listing_counts(listing: &Listing) -> (i64, i64) {
    let listed = listing.status != ListingStatus::Delisted;
    (
        i64::from(listed),
        i64::from(listed && listing.model_id.is_none()),
    )
}

fn id_value(id: u64) -> Vec<u8> {
    encode_u64(id).to_vec()
}

fn brand_keys(brand: &Brand) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = vec![(keys::brand_slug(&brand.slug), id_value(brand.id.0))];
    if let Some(rank) = brand.highlight_rank {
        out.push((keys::brand_highlight(rank, brand.id), Vec::new()));
    }
    // Sellers write a brand by its name, an alias or its slug ("a-lange-sohne" for
    // "A. Lange & Söhne"): all three resolve.
    let slug = brand.slug.to_string();
    let names = std::iter::once(&brand.name)
        .chain(&brand.aliases)
        .chain(std::iter::once(&slug));
    for name in names
        .map(|n| normalize_reference(n))
        .filter(|n| !n.is_empty())
    {
        out.push((keys::brand_alias(&name, brand.id), Vec::new()));
    }
    out
}

fn series_keys(series: &Series) -> Vec<(Vec<u8>, Vec<u8>)> {
    vec![
        (
            keys::series_slug(series.brand_id, &series.slug),
            id_value(series.id.0),
        ),
        (keys::series_bare_slug(&series.slug, series.id), Vec::new()),
    ]
}

fn caliber_keys(caliber: &Caliber) -> Vec<(Vec<u8>, Vec<u8>)> {
    let id = id_value(caliber.id.0);
    vec![
        (
            keys::caliber_slug(caliber.brand_id, &caliber.slug),
            id.clone(),
        ),
        (
            keys::caliber_bare_slug(&caliber.slug, caliber.id),
            Vec::new(),
        ),
        (
            keys::caliber_reference(caliber.brand_id, &normalize_reference(&caliber.reference)),
            id,
        ),
    ]
}

/// The duplicate finder's keys of model `id` of `brand`: brand + base + model, one per base.
fn base_keys<'b>(
    brand: BrandId,
    id: ModelId,
    bases: impl IntoIterator<Item = &'b str>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    bases
        .into_iter()
        .map(|base| (keys::model_base(brand, base, id), Vec::new()))
        .collect()
}

pub(super) fn model_keys(model: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = vec![(
        keys::model_slug(model.brand_id, &model.slug),
        id_value(model.id.0),
    )];
    for picture in &model.pictures {
        out.push((
            Keyspace::ModelPicture.id_key(picture.id.0),
            id_value(model.id.0),
        ));
    }
    for reference in model.normalized_references() {
        out.push((
            keys::model_reference(model.brand_id, &reference, model.id),
            Vec::new(),
        ));
    }
    let bases = model.reference_bases();
    out.extend(base_keys(
        model.brand_id,
        model.id,
        bases.iter().map(String::as_str),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_mark_the_store_holds_is_not_written_again_and_a_clear_always_is() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let mark = |model: u64| Keyspace::CandidatesStale.id_key(model);
        store.db.insert(mark(1), &[]).expect("mark");
        let wanted = HashMap::from([(ModelId(1), true), (ModelId(2), true), (ModelId(3), false)]);
        let mut operations = stale_operations(&store, wanted).expect("operations");
        operations.sort();
        assert_eq!(operations, [(mark(2), Some(Vec::new())), (mark(3), None)]);
    }
}
