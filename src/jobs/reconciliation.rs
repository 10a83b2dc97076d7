//! The back office's reconciliation writes: unmatched listings linked to a model by a person,
//! after making the model from them or changing one for them. Each is one atomic write with
//! its audit entry; the groups they act on are the unmatched listings by claimed identity.

use super::import::rows::{allowed_fields, ModelRow};
use super::import::{build_model, parse_object, ImportError, LineProblems, Problem, RowTarget};
use super::listing_writes::ListingWrites;
use super::matching::{match_listing, WithModel};
use super::users::{audit_entry, Actor};
use crate::domain::{
    normalize_reference, BrandId, ClaimedBrand, ClaimedIdentity, GroupKey, GroupTally, Listing,
    ListingId, Match, MatchOutcome, Model, ModelId, Slug, Timestamp,
};
use crate::store::{KeptGroup, Store, StoreError, WriteBatch, WriteTurn};
use catalogue_index::{IndexError, ListingFilters, ListingIndex, ListingQuery, ListingSort};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashSet};

/// A kept group of unmatched listings whose sellers claim one identity.
#[derive(Debug, Clone)]
pub struct Group {
    pub key: GroupKey,
    /// [`GroupKey`]'s text, what the API shows and the writes take.
    pub id: String,
    pub tally: GroupTally,
    /// Its listings' ids, newest first.
    pub members: Vec<ListingId>,
}

impl Group {
    fn of(key: GroupKey, kept: KeptGroup) -> Group {
        Group {
            key,
            id: key.to_string(),
            members: kept.newest_first().collect(),
            tally: kept.tally,
        }
    }

    pub fn identity(&self) -> &ClaimedIdentity {
        &self.tally.identity
    }

    /// The sellers' spellings of the reference, most used first (then in text order).
    pub fn spellings(&self) -> Vec<String> {
        self.tally.spellings()
    }

    /// The brand matching resolved for the group's listings, if it resolved one.
    pub fn brand(&self) -> Option<BrandId> {
        self.tally.brand()
    }

    /// Its listings, newest first, read from the store: the cost of a write that takes the
    /// group is its own listings, whatever else is unmatched.
    pub fn listings(&self, store: &Store) -> Result<Vec<Listing>, ReconcileError> {
        let mut listings = Vec::with_capacity(self.members.len());
        for &id in &self.members {
            let listing = store.listings().listing(id)?.ok_or_else(|| {
                ReconcileError::Inconsistent(format!(
                    "group {} names listing {id}, which the store lacks",
                    self.id
                ))
            })?;
            listings.push(listing);
        }
        Ok(listings)
    }
}

/// The kept group `key`, if any listing is in it.
pub fn kept_group(store: &Store, key: GroupKey) -> Result<Option<Group>, ReconcileError> {
    Ok(store
        .unmatched()
        .group(key)?
        .map(|kept| Group::of(key, kept)))
}

/// Why a reconciliation wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The request is refused: each problem with what it is about.
    #[error("{}", problems.iter().map(|(field, message)| format!("{field}: {message}")).collect::<Vec<_>>().join("; "))]
    Invalid {
        problems: Vec<(Field, String)>,
        hint: String,
    },
    #[error("no group of unmatched listings with id `{0}`")]
    UnknownGroup(String),
    #[error("no listing with id `{0}`")]
    UnknownListing(String),
    #[error("no model with id `{0}`")]
    UnknownModel(String),
    /// A record names one the store lacks: an invariant of the store is broken.
    #[error("the store is inconsistent: {0}")]
    Inconsistent(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
}

impl From<ImportError> for ReconcileError {
    fn from(error: ImportError) -> Self {
        match error {
            ImportError::Store(error) => ReconcileError::Store(error),
            other => ReconcileError::Inconsistent(other.to_string()),
        }
    }
}

/// What part of a request an [`ReconcileError::Invalid`] is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// The group, as a whole (its brand, its reference).
    Group,
    /// A field of the model, named as in models.jsonl (`referenceNumber`, `series`); `None`
    /// when no single field is to blame.
    Model(Option<String>),
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Field::Group => f.write_str("group"),
            Field::Model(Some(name)) => write!(f, "model field `{name}`"),
            Field::Model(None) => f.write_str("model fields"),
        }
    }
}

fn invalid(field: Field, message: impl Into<String>, hint: impl Into<String>) -> ReconcileError {
    ReconcileError::Invalid {
        problems: vec![(field, message.into())],
        hint: hint.into(),
    }
}

/// Which listings a link takes.
#[derive(Debug, Clone)]
pub enum Selection {
    /// Every listing of the group with this id.
    Group(String),
    /// These listings, matched or not.
    Listings(Vec<ListingId>),
}

/// What a reconciliation wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    pub model: ModelId,
    /// Listings linked by the person's decision.
    pub linked: Vec<ListingId>,
    /// Other unmatched listings that matched the model made or changed, by the matching rules.
    pub matched: Vec<ListingId>,
    /// What the catalogue learnt of the sellers' text, so their next listings match.
    pub learnt: Learnt,
}

/// The sellers' text a create or update taught the catalogue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Learnt {
    /// The brand text sellers used, made an alias of the model's brand (a group of a brand the
    /// catalogue lacked).
    pub brand_alias: Option<String>,
    /// The group's reference as sellers wrote it most, which the model did not have.
    pub reference: Option<String>,
}

/// Every listing `filters` and `text` select, newest first.
fn listing_ids(
    index: &ListingIndex,
    filters: ListingFilters,
    text: Option<String>,
) -> Result<Vec<ListingId>, IndexError> {
    let query = ListingQuery {
        text: text.as_deref().map(super::typed_text),
        filters,
        sort: ListingSort::Newest,
        offset: 0,
        limit: usize::MAX / 2,
    };
    Ok(index
        .search(&query)?
        .ids
        .into_iter()
        .map(ListingId)
        .collect())
}

/// The group with this id, or [`ReconcileError::UnknownGroup`].
fn group(store: &Store, id: &str) -> Result<Group, ReconcileError> {
    GroupKey::parse(id)
        .map(|key| kept_group(store, key))
        .transpose()?
        .flatten()
        .ok_or_else(|| ReconcileError::UnknownGroup(id.to_owned()))
}

fn model(store: &Store, id: ModelId) -> Result<Model, ReconcileError> {
    store
        .catalogue()
        .model(id)?
        .ok_or_else(|| ReconcileError::UnknownModel(id.to_string()))
}

/// `POST /reconciliation/link`: the selected listings linked to `model`, a person's decision
/// that re-ingests and re-matching keep while the sellers' text is unchanged.
pub fn link(
    turn: &WriteTurn<'_>,
    actor: &Actor,
    selection: &Selection,
    model_id: ModelId,
) -> Result<Reconciled, ReconcileError> {
    let store = turn.store();
    let model = model(store, model_id)?;
    let (listings, about) = match selection {
        Selection::Group(id) => {
            let group = group(store, id)?;
            (group.listings(store)?, format!("group {id}"))
        }
        Selection::Listings(ids) => (listings_by_id(store, ids)?, "listings".to_owned()),
    };
    let write = Write {
        turn,
        actor,
        model: &model,
        change: ModelChange::Kept,
        linked: listings,
        matched: Vec::new(),
        learnt: Learnt::default(),
    };
    write.commit(turn.batch()?, &about)
}

/// The listings with these ids (each once), or [`ReconcileError::UnknownListing`] naming the
/// first that does not exist.
fn listings_by_id(store: &Store, ids: &[ListingId]) -> Result<Vec<Listing>, ReconcileError> {
    let mut seen = HashSet::new();
    let mut listings = Vec::with_capacity(ids.len());
    for &id in ids.iter().filter(|id| seen.insert(**id)) {
        let listing = store
            .listings()
            .listing(id)?
            .ok_or_else(|| ReconcileError::UnknownListing(id.to_string()))?;
        listings.push(listing);
    }
    Ok(listings)
}

/// `POST /reconciliation/models`: a model made of `fields` (a line of models.jsonl, whose
/// brand, reference and slug default to the group's), with the group's reference among its
/// references; the group linked to it, and every other unmatched listing that now matches
/// matched.
pub fn create_model(
    turn: &WriteTurn<'_>,
    index: &ListingIndex,
    actor: &Actor,
    group_id: &str,
    fields: Map<String, Value>,
) -> Result<Reconciled, ReconcileError> {
    let store = turn.store();
    let group = group(store, group_id)?;
    let fields = new_model_fields(store, &group, fields)?;
    let (mut batch, model) = checked_model(turn, &group, fields, RowTarget::New)?;
    check_references_are_free(store, &model, None, &group)?;
    let learnt = learn(store, &mut batch, &group, &model, None)?;
    let about = format!("group {}", group.id);
    let write = Write {
        turn,
        actor,
        model: &model,
        change: ModelChange::Created,
        linked: group.listings(store)?,
        matched: Vec::new(),
        learnt,
    };
    write.with_new_matches(index)?.commit(batch, &about)
}

/// `POST /reconciliation/models/update`: `fields` written over the model's (a model keeps its
/// brand), the group's reference added to its alternates; the group linked to it, and every
/// other unmatched listing that now matches matched.
pub fn update_model(
    turn: &WriteTurn<'_>,
    index: &ListingIndex,
    actor: &Actor,
    group_id: &str,
    model_id: ModelId,
    fields: Map<String, Value>,
) -> Result<Reconciled, ReconcileError> {
    let store = turn.store();
    let old = model(store, model_id)?;
    let group = group(store, group_id)?;
    if group.brand().is_some_and(|brand| brand != old.brand_id) {
        return Err(invalid(
            Field::Group,
            format!(
                "the group's listings are of another brand than model {} (`{}`)",
                old.id, old.slug
            ),
            "update a model of the group's brand, or link the listings with POST /v1/reconciliation/link",
        ));
    }
    let fields = patched_fields(store, &old, fields)?;
    let (mut batch, model) = checked_model(turn, &group, fields, RowTarget::Existing(&old))?;
    check_references_are_free(store, &model, Some(&old), &group)?;
    let learnt = learn(store, &mut batch, &group, &model, Some(&old))?;
    let about = format!("group {}", group.id);
    let write = Write {
        turn,
        actor,
        model: &model,
        change: ModelChange::Updated(&old),
        linked: group.listings(store)?,
        matched: Vec::new(),
        learnt,
    };
    write.with_new_matches(index)?.commit(batch, &about)
}

/// The create request's fields with the group's defaults: its brand and reference when the
/// fields name none, and a slug made of name and reference, free in the brand, when no slug is
/// given. A brand other than the one the group's listings resolved to is refused.
fn new_model_fields(
    store: &Store,
    group: &Group,
    mut fields: Map<String, Value>,
) -> Result<Map<String, Value>, ReconcileError> {
    if let Some(brand) = group.brand() {
        let slug = store
            .catalogue()
            .brand(brand)?
            .ok_or_else(|| ReconcileError::Inconsistent(format!("no brand {brand}")))?
            .slug
            .to_string();
        match fields.get("brand").and_then(Value::as_str) {
            Some(given) if given != slug => {
                return Err(invalid(
                    Field::Model(Some("brand".into())),
                    format!("the group's listings are of brand `{slug}`, not `{given}`"),
                    format!("leave brand out, or give `{slug}`"),
                ))
            }
            _ => {
                fields.entry("brand").or_insert(Value::from(slug));
            }
        }
    }
    if let Some(spelling) = group.spellings().into_iter().next() {
        fields
            .entry("referenceNumber")
            .or_insert(Value::from(spelling));
    }
    if !fields.contains_key("slug") {
        let slug = free_slug(store, &fields)?;
        fields.insert("slug".into(), Value::from(slug.to_string()));
    }
    Ok(fields)
}

/// A slug made of the fields' name and reference, numbered (`-2`, `-3`, …) until no model of
/// their brand has it.
fn free_slug(store: &Store, fields: &Map<String, Value>) -> Result<Slug, ReconcileError> {
    let text = |name: &str| fields.get(name).and_then(Value::as_str).unwrap_or_default();
    let derived = Slug::derive(&format!("{} {}", text("name"), text("referenceNumber")));
    let Some(derived) = derived else {
        return Err(invalid(
            Field::Model(Some("slug".into())),
            "no slug can be made of the name and reference, and none is given",
            "give a name and referenceNumber with letters or digits, or a slug",
        ));
    };
    let brand = Slug::parse(text("brand"))
        .ok()
        .map(|slug| store.catalogue().brand_by_slug(&slug))
        .transpose()?
        .flatten();
    let Some(brand) = brand else {
        // The brand is refused by the model's checks, which name it.
        return Ok(derived);
    };
    let mut slug = derived.clone();
    for n in 2.. {
        if store.catalogue().model_by_slug(brand.id, &slug)?.is_none() {
            break;
        }
        slug = derived.numbered(n);
    }
    Ok(slug)
}

/// The line of models.jsonl that imports as `old`, with `patch`'s fields written over it; a
/// patch may not move the model to another brand.
fn patched_fields(
    store: &Store,
    old: &Model,
    patch: Map<String, Value>,
) -> Result<Map<String, Value>, ReconcileError> {
    let row = model_row(store, old)?;
    if let Some(brand) = patch.get("brand") {
        if brand.as_str() != Some(row.brand.as_str()) {
            return Err(invalid(
                Field::Model(Some("brand".into())),
                format!("a model keeps its brand (`{}`)", row.brand),
                "leave brand out; to file the listings under another brand, create a model there",
            ));
        }
    }
    let Ok(Value::Object(mut fields)) = serde_json::to_value(&row) else {
        return Err(ReconcileError::Inconsistent(format!(
            "model {} does not serialise as a line of models.jsonl",
            old.id
        )));
    };
    fields.extend(patch);
    Ok(fields)
}

/// The line of models.jsonl that imports as `model`.
fn model_row(store: &Store, model: &Model) -> Result<ModelRow, ReconcileError> {
    let missing =
        |what: String| ReconcileError::Inconsistent(format!("model {} names {what}", model.id));
    let brand = store
        .catalogue()
        .brand(model.brand_id)?
        .ok_or_else(|| missing(format!("brand {}", model.brand_id)))?;
    let series = store
        .catalogue()
        .series(model.series_id)?
        .ok_or_else(|| missing(format!("series {}", model.series_id)))?;
    let caliber = match model.caliber_id {
        Some(id) => {
            let caliber = store
                .catalogue()
                .caliber(id)?
                .ok_or_else(|| missing(format!("calibre {id}")))?;
            let maker = store
                .catalogue()
                .brand(caliber.brand_id)?
                .ok_or_else(|| missing(format!("the maker of calibre {id}")))?;
            Some(format!("{}/{}", maker.slug, caliber.slug))
        }
        None => None,
    };
    Ok(ModelRow::of(model, &brand.slug, &series.slug, caliber))
}

/// `fields` read and checked as a line of models.jsonl, the group's reference added to the
/// alternates unless it is one of the model's references already, and the model `target`
/// becomes built by the import's own checks; with the batch that holds any id it took.
fn checked_model<'t>(
    turn: &'t WriteTurn<'_>,
    group: &Group,
    fields: Map<String, Value>,
    target: RowTarget<'_>,
) -> Result<(WriteBatch<'t>, Model), ReconcileError> {
    let mut row: ModelRow =
        parse_object(fields, &allowed_fields::<ModelRow>()).map_err(line_problems)?;
    add_group_reference(&mut row, group);
    let (batch, built) = build_model(turn.store(), turn.batch()?, row, target)?;
    let model = built.map_err(|problems| {
        line_problems(
            problems
                .into_iter()
                .map(|Problem { field, message, .. }| (field, message))
                .collect(),
        )
    })?;
    Ok((batch, model))
}

/// What `model` (made, or changed from `old`) learns of the group's sellers: the brand text
/// they used, as an alias of the model's brand when the catalogue lacked their brand (written
/// to `batch`), and their reference when the model did not have it. Their next listings then
/// match as the group's would have.
fn learn(
    store: &Store,
    batch: &mut WriteBatch<'_>,
    group: &Group,
    model: &Model,
    old: Option<&Model>,
) -> Result<Learnt, ReconcileError> {
    let reference = group.spellings().into_iter().next().filter(|spelling| {
        let key = normalize_reference(spelling);
        let had = old.is_some_and(|old| old.references().any(|r| normalize_reference(r) == key));
        !had && model.references().any(|r| normalize_reference(r) == key)
    });
    let brand_alias = match &group.identity().brand {
        ClaimedBrand::Text(text) if !text.is_empty() => {
            learn_brand_alias(store, batch, group, text, model.brand_id)?
        }
        _ => None,
    };
    Ok(Learnt {
        brand_alias,
        reference,
    })
}

/// Makes the sellers' brand text (as they wrote it most, folding to `key`) an alias of
/// `brand`, unless it names that brand already.
fn learn_brand_alias(
    store: &Store,
    batch: &mut WriteBatch<'_>,
    group: &Group,
    key: &str,
    brand: BrandId,
) -> Result<Option<String>, ReconcileError> {
    if store.catalogue().brand_by_alias(key)?.contains(&brand) {
        return Ok(None);
    }
    let old = store
        .catalogue()
        .brand(brand)?
        .ok_or_else(|| ReconcileError::Inconsistent(format!("no brand {brand}")))?;
    let text = group
        .tally
        .brand_text()
        .filter(|text| normalize_reference(text) == key)
        .unwrap_or_else(|| key.to_owned());
    let mut new = old.clone();
    new.aliases.push(text.clone());
    batch.put_brand(Some(&old), &new);
    Ok(Some(text))
}

/// The group's most used spelling of its reference among the row's alternates, unless the
/// row has that reference already.
fn add_group_reference(row: &mut ModelRow, group: &Group) {
    let Some(spelling) = group.spellings().into_iter().next() else {
        return;
    };
    let key = normalize_reference(&spelling);
    let has = std::iter::once(&row.reference_number)
        .chain(&row.alternate_references)
        .any(|r| normalize_reference(r) == key);
    if !has {
        row.alternate_references.push(spelling);
    }
}

/// Problems with a model's fields as one refusal, each naming its field.
fn line_problems(problems: LineProblems) -> ReconcileError {
    ReconcileError::Invalid {
        problems: problems
            .into_iter()
            .map(|(field, message)| (Field::Model(field), message))
            .collect(),
        hint: "model fields are those of a line of models.jsonl (docs/dataset-format.md)".into(),
    }
}

/// Refuses a reference `model` gains (every one, for a new model) that is a reference of
/// another model of its brand, naming that model: two models with one reference would leave
/// every listing of it ambiguous.
fn check_references_are_free(
    store: &Store,
    model: &Model,
    old: Option<&Model>,
    group: &Group,
) -> Result<(), ReconcileError> {
    let had: BTreeSet<String> = old
        .map(|m| m.references().map(normalize_reference).collect())
        .unwrap_or_default();
    for (position, reference) in model.references().enumerate() {
        let key = normalize_reference(reference);
        if had.contains(&key) {
            continue;
        }
        let holder = store
            .catalogue()
            .model_ids_by_reference(model.brand_id, &key)?
            .into_iter()
            .find(|id| *id != model.id);
        let Some(holder) = holder else {
            continue;
        };
        let holder = self::model(store, holder)?;
        let field = if group.identity().reference.as_deref() == Some(key.as_str()) {
            Field::Group
        } else if position == 0 {
            Field::Model(Some("referenceNumber".into()))
        } else {
            Field::Model(Some("alternateReferences".into()))
        };
        return Err(invalid(
            field,
            format!(
                "reference `{reference}` belongs to model {} (`{}`, {}) of the brand already",
                holder.id, holder.slug, holder.name
            ),
            format!(
                "link the listings to model {} with POST /v1/reconciliation/link, or update it",
                holder.id
            ),
        ));
    }
    Ok(())
}

/// The unmatched listings of `model`'s brand (DELISTED ones too, as `watch-catalogue match`
/// tries them), `skip` aside, that the matching rules match once `model` is written, with what
/// they match (`model`, or another model a changed reference no longer makes ambiguous). Only
/// listings that name one of the references `model` has or had, in their reference field or
/// title, are tried: the listings index finds them, so the cost is theirs, not the brand's.
fn newly_matched(
    store: &Store,
    index: &ListingIndex,
    model: &Model,
    old: Option<&Model>,
    skip: &HashSet<ListingId>,
) -> Result<Vec<(Listing, Match)>, ReconcileError> {
    let references: BTreeSet<String> = model
        .references()
        .chain(old.into_iter().flat_map(Model::references))
        .map(normalize_reference)
        .filter(|r| !r.is_empty())
        .collect();
    let mut tried: HashSet<ListingId> = skip.clone();
    let catalogue = WithModel { store, model };
    let mut matched = Vec::new();
    for reference in references {
        let filters = ListingFilters {
            unmatched: true,
            brand_id: Some(model.brand_id.0),
            ..ListingFilters::default()
        };
        for id in listing_ids(index, filters, Some(reference))? {
            if !tried.insert(id) {
                continue;
            }
            let Some(listing) = store
                .listings()
                .listing(id)?
                .filter(|l| l.model_id.is_none())
            else {
                continue;
            };
            let found = match_listing(&catalogue, &listing.details)?;
            if found.model_id.is_some() {
                matched.push((listing, found));
            }
        }
    }
    matched.sort_by_key(|(listing, _)| std::cmp::Reverse(listing.id));
    Ok(matched)
}

/// What a reconciliation does to the model it links to.
#[derive(Debug, Clone, Copy)]
enum ModelChange<'a> {
    /// Nothing: listings are linked to it as it is.
    Kept,
    Created,
    /// Changed; this is the stored version.
    Updated(&'a Model),
}

impl ModelChange<'_> {
    /// The audit trail's name of the write.
    fn action(self) -> &'static str {
        match self {
            ModelChange::Kept => "reconciliation.link",
            ModelChange::Created => "reconciliation.create",
            ModelChange::Updated(_) => "reconciliation.update",
        }
    }
}

/// One reconciliation write: the model (when made or changed), the listings linked and
/// matched with the counts they move, and the audit entry, in one commit.
struct Write<'a> {
    turn: &'a WriteTurn<'a>,
    actor: &'a Actor,
    model: &'a Model,
    change: ModelChange<'a>,
    linked: Vec<Listing>,
    matched: Vec<(Listing, Match)>,
    learnt: Learnt,
}

impl Write<'_> {
    /// The write with every other unmatched listing that matches once its model is written.
    fn with_new_matches(mut self, index: &ListingIndex) -> Result<Self, ReconcileError> {
        let linked: HashSet<ListingId> = self.linked.iter().map(|l| l.id).collect();
        let old = match self.change {
            ModelChange::Updated(old) => Some(old),
            ModelChange::Kept | ModelChange::Created => None,
        };
        self.matched = newly_matched(self.turn.store(), index, self.model, old, &linked)?;
        Ok(self)
    }

    fn commit(self, mut batch: WriteBatch<'_>, about: &str) -> Result<Reconciled, ReconcileError> {
        let model = self.model;
        match self.change {
            ModelChange::Kept => {}
            ModelChange::Created => batch.put_model(None, model),
            ModelChange::Updated(old) => batch.put_model(Some(old), model),
        }
        let reconciled = Reconciled {
            model: model.id,
            linked: self.linked.iter().map(|l| l.id).collect(),
            matched: self.matched.iter().map(|(l, _)| l.id).collect(),
            learnt: self.learnt.clone(),
        };
        batch.put_audit(&self.audit_entry(&reconciled, about)?);
        let mut writes = ListingWrites::in_one_commit(self.turn, batch)?;
        let now = Timestamp::now();
        let link = Match {
            brand_id: Some(model.brand_id),
            model_id: Some(model.id),
            outcome: MatchOutcome::Linked,
        };
        let changes = self
            .linked
            .into_iter()
            .map(|listing| (listing, link))
            .chain(self.matched);
        for (old, found) in changes {
            let mut new = old.clone();
            new.apply_match(found);
            new.updated_at = now;
            writes.put(Some(&old), new);
        }
        writes.commit()?;
        Ok(reconciled)
    }

    /// Who did it, to which model and listings.
    fn audit_entry(
        &self,
        reconciled: &Reconciled,
        about: &str,
    ) -> Result<crate::domain::AuditEntry, StoreError> {
        let model = self.model;
        let learnt = &reconciled.learnt;
        let brand = learnt
            .brand_alias
            .as_ref()
            .map(|_| format!("brand:{}", model.brand_id));
        let targets = std::iter::once(format!("model:{}", model.id))
            .chain(brand)
            .chain(reconciled.linked.iter().map(|id| format!("listing:{id}")))
            .chain(reconciled.matched.iter().map(|id| format!("listing:{id}")))
            .collect();
        let mut detail = format!(
            "{about}: {} listings linked to model {} (`{}`), {} more matched",
            reconciled.linked.len(),
            model.id,
            model.slug,
            reconciled.matched.len()
        );
        if let Some(alias) = &learnt.brand_alias {
            detail.push_str(&format!("; brand alias `{alias}` learnt"));
        }
        if let Some(reference) = &learnt.reference {
            detail.push_str(&format!("; reference `{reference}` learnt"));
        }
        let store = self.turn.store();
        audit_entry(store, self.actor, self.change.action(), targets, detail)
    }
}

#[cfg(test)]
#[path = "reconciliation_groups_tests.rs"]
mod groups_tests;
