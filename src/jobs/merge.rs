//! The back office's duplicate writes: merge duplicates into a keeper (listings relinked,
//! references folded into its alternates, pictures it lacks moved, empty fields backfilled, the
//! duplicates deleted and their addresses redirected), and dismiss a group's pairs. Each is one
//! atomic write with its audit entry. A merge relinks at most [`MOVED_WITH_THE_MERGE`]
//! listings itself and leaves the rest, recorded in its write, to the listing mover (D-231).

use super::listing_writes::ListingWrites;
use super::read_pool::with_waiting_reads;
use super::reindex::{first_listings_of_model, FirstListings};
use super::users::{audit_entry, Actor};
use crate::domain::{normalize_reference, Listing, Model, ModelId, Timestamp};
use crate::store::{Store, StoreError, WriteTurn};
use catalogue_index::{IndexError, ListingIndex};
use std::collections::BTreeSet;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The request names an impossible combination: the field and why.
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
        hint: &'static str,
    },
    #[error("no model with id `{0}`")]
    UnknownModel(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
}

/// Duplicates one merge takes at most, and models one dismissal: a merge is one atomic write,
/// and a dismissal stores every pair of its models.
pub const MAX_MERGED: usize = 100;
pub const MAX_DISMISSED: usize = 50;

/// Listings a merge relinks in its own write. It leaves the rest to the listing mover
/// (`listing_mover`), which relinks them after the merge answered, [`MOVED_PER_WRITE`] a write:
/// at 30-70 µs a listing, a merge of a model with 20,000 took a second and more (D-231).
pub const MOVED_WITH_THE_MERGE: usize = 250;

/// Listings the listing mover relinks per write: a person's write waits for one such write,
/// at most 50 ms of the writer's time with 250 against 81 with 500 (D-238; links sent during a
/// move at most 62-88 ms against 98-124 ms with 500, 130-320 ms with 1,000, D-231).
pub const MOVED_PER_WRITE: usize = 250;

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    pub keeper: ModelId,
    pub merged_models: usize,
    /// Every listing the duplicates had: those relinked and those left to the listing mover.
    pub moved_listings: usize,
    /// Of those, left to the listing mover.
    pub left_listings: usize,
    pub moved_pictures: usize,
    pub added_references: usize,
}

/// Merges `duplicates` into `keeper`, in the spec's order, in one commit.
pub fn merge(
    turn: &WriteTurn<'_>,
    index: &ListingIndex,
    actor: &Actor,
    keeper: ModelId,
    duplicates: &[ModelId],
) -> Result<Merged, MergeError> {
    check_ids(keeper, duplicates)?;
    let store = turn.store();
    let known = |id: ModelId| -> Result<Model, MergeError> {
        store
            .catalogue()
            .model(id)?
            .ok_or_else(|| MergeError::UnknownModel(id.to_string()))
    };
    let original = known(keeper)?;
    let merged: Vec<Model> = duplicates
        .iter()
        .map(|&id| known(id))
        .collect::<Result<_, _>>()?;
    if merged.iter().any(|m| m.brand_id != original.brand_id) {
        return Err(MergeError::Invalid {
            field: "duplicateIds",
            message: "every duplicate must be of the keeper's brand".into(),
            hint: "a reference repeated across brands is no duplicate; merge within one brand",
        });
    }
    let review = store.pictures().picture_review(keeper)?;
    let mut kept = original.clone();
    let mut result = Merged {
        keeper,
        merged_models: merged.len(),
        moved_listings: 0,
        left_listings: 0,
        moved_pictures: 0,
        added_references: 0,
    };
    let firsts = first_listings_of(turn.store(), index, duplicates, MOVED_WITH_THE_MERGE)?;
    for duplicate in &merged {
        result.added_references += fold_references(&mut kept, duplicate);
        result.moved_pictures += move_pictures(&mut kept, duplicate);
        backfill(&mut kept, duplicate);
    }
    kept.updated_at = Timestamp::now();

    let mut batch = turn.batch()?;
    let mut has_candidates = !store.pictures().candidates_of(keeper)?.is_empty();
    for duplicate in &merged {
        // Before the keeper's write: the keys of the pictures it takes over are its own after.
        batch.merge_model_away(duplicate, keeper);
        for candidate in store.pictures().candidates_of(duplicate.id)? {
            has_candidates = true;
            batch.remove_candidate(&candidate);
            batch.put_candidate(&crate::domain::PictureCandidate {
                model_id: keeper,
                ..candidate
            });
        }
        let pairs = store.duplicates().duplicate_pairs_of(duplicate.id)?;
        let others: Vec<ModelId> = pairs
            .iter()
            .map(|p| if p.a == duplicate.id { p.b } else { p.a })
            .collect();
        batch.forget_dismissed(duplicate.id, &others);
        batch.replace_duplicate_pairs(duplicate.id, &pairs, &[]);
    }
    for (duplicate, first) in duplicates.iter().zip(&firsts) {
        result.moved_listings += first.indexed;
        if first.more {
            result.left_listings += first.indexed - first.listings.len();
            batch.leave_listings_to_the_mover(*duplicate);
        }
    }
    batch.put_model(Some(&original), &kept);
    batch.put_picture_review(keeper, &review, has_candidates);
    let entry = audit_entry(
        store,
        actor,
        "duplicates.merge",
        std::iter::once(format!("model:{keeper}"))
            .chain(duplicates.iter().map(|id| format!("model:{id}")))
            .collect(),
        format!(
            "merged {} models into model {keeper} (`{}`): {} listings{} and {} pictures moved, {} references added",
            merged.len(),
            kept.slug,
            result.moved_listings,
            match result.left_listings {
                0 => String::new(),
                left => format!(" ({left} of them by the listing mover, after this write)"),
            },
            result.moved_pictures,
            result.added_references
        ),
    )?;
    batch.put_audit(&entry);
    let mut writes = ListingWrites::in_one_commit(turn, batch)?;
    for first in firsts {
        relink(&mut writes, first.listings, keeper, kept.updated_at);
    }
    writes.commit()?;
    Ok(result)
}

/// What one write of the listing mover did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MovedLeft {
    /// Listings relinked.
    pub moved: usize,
    /// Whether listings are still left to move.
    pub more: bool,
}

/// Relinks up to [`MOVED_PER_WRITE`] of the listings merges left to the models their
/// duplicates were merged into (following later merges), in one commit, and forgets each
/// merged model none are left of. No audit entry: each merge's own says what it left.
pub fn move_listings_left(
    turn: &WriteTurn<'_>,
    index: &ListingIndex,
) -> Result<MovedLeft, MergeError> {
    let store = turn.store();
    let merged = store.duplicates().merged_with_listings_left()?;
    if merged.is_empty() {
        return Ok(MovedLeft::default());
    }
    let firsts = first_listings_of(store, index, &merged, MOVED_PER_WRITE)?;
    let mut batch = turn.batch()?;
    let mut moves = Vec::new();
    let mut result = MovedLeft::default();
    for (&from, first) in merged.iter().zip(firsts) {
        batch.set_listings_left(from, first.more);
        result.more |= first.more;
        let keeper = store
            .duplicates()
            .merged_into(from)?
            .ok_or_else(|| StoreError::Corrupt {
                key: format!("merged model {from}").into_bytes(),
                reason: "listings left to move from a model merged into none".into(),
            })?;
        moves.push((first.listings, keeper));
    }
    let mut writes = ListingWrites::in_one_commit(turn, batch)?;
    let at = Timestamp::now();
    for (listings, keeper) in moves {
        result.moved += relink(&mut writes, listings, keeper, at);
    }
    writes.commit()?;
    Ok(result)
}

/// Writes each of `listings` as `keeper`'s, updated `at`; returns how many.
fn relink(
    writes: &mut ListingWrites<'_>,
    listings: Vec<Listing>,
    keeper: ModelId,
    at: Timestamp,
) -> usize {
    let moved = listings.len();
    for old in listings {
        let mut new = old.clone();
        new.model_id = Some(keeper);
        new.updated_at = at;
        writes.put(Some(&old), new);
    }
    moved
}

/// The refusals a body can be checked for before anything is read.
fn check_ids(keeper: ModelId, duplicates: &[ModelId]) -> Result<(), MergeError> {
    let invalid = |message: &str| MergeError::Invalid {
        field: "duplicateIds",
        message: message.into(),
        hint: "give the keeper's id as keeperId and the other models of its group as duplicateIds",
    };
    if duplicates.is_empty() || duplicates.len() > MAX_MERGED {
        return Err(invalid(&format!(
            "give 1 to {MAX_MERGED} duplicates, not {}",
            duplicates.len()
        )));
    }
    if duplicates.contains(&keeper) {
        return Err(invalid("the keeper cannot be one of its duplicates"));
    }
    let distinct: BTreeSet<ModelId> = duplicates.iter().copied().collect();
    if distinct.len() != duplicates.len() {
        return Err(invalid("an id is given twice"));
    }
    Ok(())
}

/// Reads, outside the write turn, the listings of `duplicates` a merge of them into `keeper`
/// relinks in its own write, so that its turn finds their records in the OS's cache: on a cold
/// store each is a disk read, and the 250 took a merge 1.7 s while others waited for the turn
/// (D-231). A body [`merge`] refuses before it reads anything is refused here too, unread.
pub fn read_ahead_of_merge(
    store: &Store,
    index: &ListingIndex,
    keeper: ModelId,
    duplicates: &[ModelId],
) -> Result<(), MergeError> {
    check_ids(keeper, duplicates)?;
    first_listings_of(store, index, duplicates, MOVED_WITH_THE_MERGE).map(drop)
}

/// [`read_ahead_of_merge`] for the listing mover's next write; whether any listings are left
/// to move (none: the mover need not take the turn).
pub fn read_ahead_of_move(store: &Store, index: &ListingIndex) -> Result<bool, MergeError> {
    let merged = store.duplicates().merged_with_listings_left()?;
    if merged.is_empty() {
        return Ok(false);
    }
    first_listings_of(store, index, &merged, MOVED_PER_WRITE)?;
    Ok(true)
}

/// The first listings of each of `models` (matched or linked, whatever their status), `limit`
/// in all, the later models' after the earlier ones': read on the read pool, as a merge may
/// move thousands whose records the OS has not cached.
fn first_listings_of(
    store: &Store,
    index: &ListingIndex,
    models: &[ModelId],
    limit: usize,
) -> Result<Vec<FirstListings>, MergeError> {
    with_waiting_reads(|| {
        let mut budget = limit;
        let mut firsts = Vec::new();
        for &model in models {
            let first = first_listings_of_model::<MergeError>(store, index, model, budget)?;
            budget -= first.indexed.min(budget);
            firsts.push(first);
        }
        Ok(firsts)
    })
}

/// Adds the duplicate's references the keeper lacks to its alternates; returns how many.
fn fold_references(keeper: &mut Model, duplicate: &Model) -> usize {
    let mut added = 0;
    for reference in duplicate.references() {
        let key = normalize_reference(reference);
        if key.is_empty() || keeper.references().any(|r| normalize_reference(r) == key) {
            continue;
        }
        keeper.alternate_references.push(reference.to_owned());
        added += 1;
    }
    added
}

/// Moves the duplicate's pictures of each type the keeper has none of: never over one of its
/// own, so never over a protected one. Returns how many.
fn move_pictures(keeper: &mut Model, duplicate: &Model) -> usize {
    let mut moved = 0;
    for picture in &duplicate.pictures {
        if !keeper.pictures.iter().any(|p| p.kind == picture.kind) {
            keeper.pictures.push(picture.clone());
            moved += 1;
        }
    }
    moved
}

/// Fills the keeper's empty fields from the duplicate's.
fn backfill(keeper: &mut Model, duplicate: &Model) {
    fn fill<T: Clone>(into: &mut Option<T>, from: &Option<T>) {
        if into.is_none() {
            into.clone_from(from);
        }
    }
    fn fill_list<T: Clone>(into: &mut Vec<T>, from: &[T]) {
        if into.is_empty() {
            into.extend_from_slice(from);
        }
    }
    fill(&mut keeper.caliber_id, &duplicate.caliber_id);
    fill(&mut keeper.description, &duplicate.description);
    let (k, d) = (&mut keeper.spec, &duplicate.spec);
    fill(&mut k.release_year, &d.release_year);
    fill(&mut k.discontinuation_year, &d.discontinuation_year);
    fill(&mut k.limited_amount, &d.limited_amount);
    fill(&mut k.diameter, &d.diameter);
    fill(&mut k.thickness, &d.thickness);
    fill(&mut k.lug_width, &d.lug_width);
    fill(&mut k.water_resistance, &d.water_resistance);
    fill_list(&mut k.case_materials, &d.case_materials);
    fill(&mut k.bezel, &d.bezel);
    fill_list(&mut k.bezel_materials, &d.bezel_materials);
    fill_list(&mut k.bezel_colors, &d.bezel_colors);
    fill(&mut k.coating, &d.coating);
    fill(&mut k.shape, &d.shape);
    fill(&mut k.glass, &d.glass);
    fill(&mut k.back, &d.back);
    fill(&mut k.dial_nickname, &d.dial_nickname);
    fill(&mut k.dial_finish, &d.dial_finish);
    fill_list(&mut k.dial_colors, &d.dial_colors);
    fill_list(&mut k.dial_materials, &d.dial_materials);
    fill(&mut k.indexes, &d.indexes);
    fill(&mut k.hands, &d.hands);
    fill(&mut k.band_nickname, &d.band_nickname);
    fill_list(&mut k.band_colors, &d.band_colors);
    fill_list(&mut k.band_materials, &d.band_materials);
    fill(&mut k.band_clasp, &d.band_clasp);
    fill(&mut k.band_width, &d.band_width);
}

/// Dismisses every pair of `models` (n(n-1)/2), one commit with its audit entry; returns how
/// many pairs were not dismissed before.
pub fn dismiss(
    turn: &WriteTurn<'_>,
    actor: &Actor,
    models: &[ModelId],
) -> Result<usize, MergeError> {
    let distinct: BTreeSet<ModelId> = models.iter().copied().collect();
    if distinct.len() < 2 {
        return Err(MergeError::Invalid {
            field: "modelIds",
            message: format!(
                "give at least two different model ids, not {}",
                distinct.len()
            ),
            hint: "dismiss the models of a group of GET /v1/duplicate-models",
        });
    }
    let store = turn.store();
    for &id in &distinct {
        if store.catalogue().model(id)?.is_none() {
            return Err(MergeError::UnknownModel(id.to_string()));
        }
    }
    let ids: Vec<ModelId> = distinct.into_iter().collect();
    let mut batch = turn.batch()?;
    let mut new_pairs = 0;
    for (at, &a) in ids.iter().enumerate() {
        for &b in &ids[at + 1..] {
            if !store.duplicates().is_dismissed(a, b)? {
                batch.dismiss_pair(a, b);
                new_pairs += 1;
            }
        }
    }
    for &id in &ids {
        let old = store.duplicates().duplicate_pairs_of(id)?;
        let kept: Vec<_> = old
            .iter()
            .filter(|p| !(ids.contains(&p.a) && ids.contains(&p.b)))
            .copied()
            .collect();
        batch.replace_duplicate_pairs(id, &old, &kept);
    }
    let entry = audit_entry(
        store,
        actor,
        "duplicates.dismiss",
        ids.iter().map(|id| format!("model:{id}")).collect(),
        format!("{new_pairs} pairs dismissed"),
    )?;
    batch.put_audit(&entry);
    turn.commit(batch)?;
    Ok(new_pairs)
}
