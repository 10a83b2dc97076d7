//! What the service reconciles against: three types (models, calibres, brands) and their ids,
//! which are each entity's API path under `/v1` (`models/rolex/submariner-date-16610`), so
//! one view template opens any of them.

use crate::api::error::ApiResult;
use crate::api::views::w3c::TypeView;
use crate::app::App;
use crate::domain::{Brand, Caliber, Model, Slug};

/// A type of the manifest's `defaultTypes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityType {
    Model,
    Caliber,
    Brand,
}

impl EntityType {
    /// In the manifest's order: what a query without a type is about first.
    pub const ALL: [EntityType; 3] = [EntityType::Model, EntityType::Caliber, EntityType::Brand];

    pub fn id(self) -> &'static str {
        match self {
            EntityType::Model => "model",
            EntityType::Caliber => "caliber",
            EntityType::Brand => "brand",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            EntityType::Model => "Watch model",
            EntityType::Caliber => "Caliber (movement)",
            EntityType::Brand => "Brand",
        }
    }

    /// The type with this id; unknown types are `None` (the caller ignores them).
    pub fn parse(id: &str) -> Option<EntityType> {
        EntityType::ALL.into_iter().find(|t| t.id() == id)
    }

    /// The view of this type in results: `{id, name}`.
    pub fn view(self) -> TypeView {
        TypeView {
            id: self.id(),
            name: self.name(),
        }
    }

    /// The API collection its ids start with.
    fn collection(self) -> &'static str {
        match self {
            EntityType::Model => "models",
            EntityType::Caliber => "calibers",
            EntityType::Brand => "brands",
        }
    }
}

/// A reconciled entity's id: `models/{brand}/{model}`, `calibers/{brand}/{caliber}` or
/// `brands/{brand}`, slugs all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityId {
    pub kind: EntityType,
    pub brand: Slug,
    /// The model's or calibre's slug; `None` for a brand.
    pub slug: Option<Slug>,
}

impl EntityId {
    pub fn model(brand: &Slug, model: &Slug) -> EntityId {
        EntityId {
            kind: EntityType::Model,
            brand: brand.clone(),
            slug: Some(model.clone()),
        }
    }

    pub fn caliber(brand: &Slug, caliber: &Slug) -> EntityId {
        EntityId {
            kind: EntityType::Caliber,
            brand: brand.clone(),
            slug: Some(caliber.clone()),
        }
    }

    pub fn brand(brand: &Slug) -> EntityId {
        EntityId {
            kind: EntityType::Brand,
            brand: brand.clone(),
            slug: None,
        }
    }

    /// The id an answer gave; `None` for anything else (an id from another service).
    pub fn parse(id: &str) -> Option<EntityId> {
        let mut parts = id.trim_matches('/').split('/');
        let collection = parts.next()?;
        let kind = EntityType::ALL
            .into_iter()
            .find(|kind| kind.collection() == collection)?;
        let brand = Slug::parse(parts.next()?).ok()?;
        let slug = match kind {
            EntityType::Brand => None,
            EntityType::Model | EntityType::Caliber => Some(Slug::parse(parts.next()?).ok()?),
        };
        parts
            .next()
            .is_none()
            .then_some(EntityId { kind, brand, slug })
    }
}

impl std::fmt::Display for EntityId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.kind.collection(), self.brand)?;
        match &self.slug {
            Some(slug) => write!(f, "/{slug}"),
            None => Ok(()),
        }
    }
}

/// The record an id names, read from the store.
pub enum Entity {
    Model(Brand, Box<Model>),
    Caliber(Brand, Box<Caliber>),
    Brand(Brand),
}

impl Entity {
    /// The entity `id` names; `None` when no such entity exists (any more).
    pub fn read(app: &App, id: &EntityId) -> ApiResult<Option<Entity>> {
        let Some(brand) = app.store().catalogue().brand_by_slug(&id.brand)? else {
            return Ok(None);
        };
        let Some(slug) = &id.slug else {
            return Ok(Some(Entity::Brand(brand)));
        };
        Ok(match id.kind {
            EntityType::Model => {
                // A model merged into another since the id was handed out stands for it, as
                // its API path does (301 to the keeper's).
                let model = match app.store().catalogue().model_by_slug(brand.id, slug)? {
                    Some(model) => Some(model),
                    None => match app.store().duplicates().merged_slug(brand.id, slug)? {
                        Some(keeper) => app.store().catalogue().model(keeper)?,
                        None => None,
                    },
                };
                model.map(|model| Entity::Model(brand, Box::new(model)))
            }
            EntityType::Caliber => app
                .store()
                .catalogue()
                .caliber_by_slug(brand.id, slug)?
                .map(|caliber| Entity::Caliber(brand, Box::new(caliber))),
            EntityType::Brand => Some(Entity::Brand(brand)),
        })
    }
}

pub use crate::jobs::w3c_candidates::{caliber_label, model_label};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_api_paths_and_read_back() {
        for id in [
            "models/rolex/submariner-date-16610",
            "calibers/eta/2824-2",
            "brands/rolex",
        ] {
            let parsed = EntityId::parse(id).expect(id);
            assert_eq!(parsed.to_string(), id);
        }
        for not_ours in [
            "",
            "Q42",
            "models/rolex",
            "brands/rolex/x",
            "models/Rolex/x",
            "people/a/b",
        ] {
            assert_eq!(EntityId::parse(not_ours), None, "{not_ours}");
        }
    }
}
