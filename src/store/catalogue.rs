//! The catalogue area: brands, series, complications, calibres and models, found by id, slug,
//! alias or reference.
//! Keyspaces: `Brand`, `BrandSlug`, `BrandHighlight`, `BrandAlias`, `Series`, `SeriesSlug`,
//! `SeriesBareSlug`, `Complication`, `ComplicationSlug`, `Caliber`, `CaliberSlug`,
//! `CaliberBareSlug`, `CaliberReference`, `Model`, `ModelSlug`, `ModelReference` (and the
//! retired `ModelByCaliber`, which no store of today's schema holds).

use super::keys::{self, Keyspace};
use super::{Store, StoreError, StoreResult};
use crate::domain::{
    Brand, BrandId, Caliber, CaliberId, Complication, ComplicationId, Model, ModelId, Series,
    SeriesId, Slug,
};

/// The store's catalogue: see [`Store::catalogue`].
#[derive(Clone, Copy)]
pub struct Catalogue<'s>(pub(super) &'s Store);

impl<'s> Catalogue<'s> {
    pub fn brand(self, id: BrandId) -> StoreResult<Option<Brand>> {
        self.0.get(Keyspace::Brand.id_key(id.0))
    }

    pub fn brand_by_slug(self, slug: &Slug) -> StoreResult<Option<Brand>> {
        self.0.get_via(keys::brand_slug(slug), Keyspace::Brand)
    }

    pub fn brands(self) -> impl Iterator<Item = StoreResult<Brand>> + 's {
        self.0.all(Keyspace::Brand)
    }

    /// Brands of the editorial row, in `highlightRank` order.
    pub fn highlighted_brands(self) -> StoreResult<Vec<Brand>> {
        let ids = self.0.ids_under(Keyspace::BrandHighlight.prefix())?;
        self.0.many(Keyspace::Brand, ids)
    }

    /// Brand whose alias (folded like a reference) is `normalized`.
    pub fn brand_by_alias(self, normalized: &str) -> StoreResult<Vec<BrandId>> {
        Ok(self
            .0
            .ids_under(keys::brand_alias_prefix(normalized))?
            .into_iter()
            .map(BrandId)
            .collect())
    }

    /// Every brand alias key (a brand's name, alias or slug, normalised) as (text, brand): what
    /// [`Catalogue::brand_by_alias`] reads, for a matcher that holds them in memory.
    pub fn brand_alias_keys(self) -> impl Iterator<Item = StoreResult<(String, BrandId)>> + 's {
        self.parsed_keys(
            Keyspace::BrandAlias,
            keys::parse_brand_alias,
            "brand alias key without its text and id",
        )
    }

    /// Every key of `space`, read by `parse`; `what` says what a key `parse` refuses lacks.
    fn parsed_keys<T: 'static>(
        self,
        space: Keyspace,
        parse: fn(&[u8]) -> Option<T>,
        what: &'static str,
    ) -> impl Iterator<Item = StoreResult<T>> + 's {
        self.0
            .db
            .scan_prefix(space.prefix())
            .keys()
            .map(move |key| {
                let key = key?;
                parse(&key).ok_or_else(|| StoreError::Corrupt {
                    key: key.to_vec(),
                    reason: what.into(),
                })
            })
    }

    pub fn series(self, id: SeriesId) -> StoreResult<Option<Series>> {
        self.0.get(Keyspace::Series.id_key(id.0))
    }

    pub fn series_by_slug(self, brand: BrandId, slug: &Slug) -> StoreResult<Option<Series>> {
        self.0
            .get_via(keys::series_slug(brand, slug), Keyspace::Series)
    }

    /// The slugs of one brand's series and their ids, in slug order, read from the slug index
    /// alone.
    pub fn series_slugs_of_brand(self, brand: BrandId) -> StoreResult<Vec<(String, SeriesId)>> {
        let found = self
            .0
            .texts_and_ids_under(keys::series_slug_prefix(brand))?;
        Ok(found
            .into_iter()
            .map(|(slug, id)| (slug, SeriesId(id)))
            .collect())
    }

    /// Every brand that has a series with this slug.
    pub fn series_with_slug(self, slug: &Slug) -> StoreResult<Vec<Series>> {
        let ids = self.0.ids_under(keys::series_bare_slug_prefix(slug))?;
        self.0.many(Keyspace::Series, ids)
    }

    pub fn all_series(self) -> impl Iterator<Item = StoreResult<Series>> + 's {
        self.0.all(Keyspace::Series)
    }

    pub fn complication(self, id: ComplicationId) -> StoreResult<Option<Complication>> {
        self.0.get(Keyspace::Complication.id_key(id.0))
    }

    pub fn complications(self) -> impl Iterator<Item = StoreResult<Complication>> + 's {
        self.0.all(Keyspace::Complication)
    }

    pub fn complication_by_slug(self, slug: &Slug) -> StoreResult<Option<Complication>> {
        self.0
            .get_via(keys::complication_slug(slug), Keyspace::Complication)
    }

    pub fn caliber(self, id: CaliberId) -> StoreResult<Option<Caliber>> {
        self.0.get(Keyspace::Caliber.id_key(id.0))
    }

    pub fn caliber_by_slug(self, brand: BrandId, slug: &Slug) -> StoreResult<Option<Caliber>> {
        self.0
            .get_via(keys::caliber_slug(brand, slug), Keyspace::Caliber)
    }

    /// The brand's calibre whose normalised reference is `normalized`.
    pub fn caliber_by_reference(
        self,
        brand: BrandId,
        normalized: &str,
    ) -> StoreResult<Option<Caliber>> {
        self.0.get_via(
            keys::caliber_reference(brand, normalized),
            Keyspace::Caliber,
        )
    }

    /// Every calibre, across brands, with this slug.
    pub fn calibers_with_slug(self, slug: &Slug) -> StoreResult<Vec<Caliber>> {
        let ids = self.0.ids_under(keys::caliber_bare_slug_prefix(slug))?;
        self.0.many(Keyspace::Caliber, ids)
    }

    pub fn calibers(self) -> impl Iterator<Item = StoreResult<Caliber>> + 's {
        self.0.all(Keyspace::Caliber)
    }

    pub fn model(self, id: ModelId) -> StoreResult<Option<Model>> {
        self.0.get(Keyspace::Model.id_key(id.0))
    }

    pub fn model_by_slug(self, brand: BrandId, slug: &Slug) -> StoreResult<Option<Model>> {
        self.0
            .get_via(keys::model_slug(brand, slug), Keyspace::Model)
    }

    /// Models in the order of `ids`; ids with no record (deleted since) are skipped.
    pub fn models(self, ids: &[ModelId]) -> StoreResult<Vec<Model>> {
        self.0.many(Keyspace::Model, ids.iter().map(|id| id.0))
    }

    /// Ids of the brand's models whose primary or alternate reference normalises to `normalized`.
    pub fn model_ids_by_reference(
        self,
        brand: BrandId,
        normalized: &str,
    ) -> StoreResult<Vec<ModelId>> {
        Ok(self
            .0
            .ids_under(keys::model_reference_prefix(brand, normalized))?
            .into_iter()
            .map(ModelId)
            .collect())
    }

    /// The brand's references that begin with `normalized` and go on (`16610` -> `lv` of
    /// `16610lv`), as what follows it and the model of each.
    pub fn model_references_extending(
        self,
        brand: BrandId,
        normalized: &str,
    ) -> StoreResult<Vec<(String, ModelId)>> {
        let stem = keys::model_reference_stem(brand, normalized);
        let mut found = Vec::new();
        for key in self.0.db.scan_prefix(&stem).keys() {
            let key = key?;
            let (tail, model) = keys::model_reference_tail(&key, stem.len()).ok_or_else(|| {
                StoreError::Corrupt {
                    key: key.to_vec(),
                    reason: "reference key without its text and id".into(),
                }
            })?;
            if !tail.is_empty() {
                found.push((tail.to_owned(), model));
            }
        }
        Ok(found)
    }

    /// Every reference key, as (brand, normalised reference, model), in key order: keys only,
    /// nothing decoded. What [`Catalogue::model_ids_by_reference`] and
    /// [`Catalogue::model_references_extending`] read, for a matcher that holds them in memory.
    pub fn model_reference_keys(
        self,
    ) -> impl Iterator<Item = StoreResult<(BrandId, String, ModelId)>> + 's {
        self.parsed_keys(
            Keyspace::ModelReference,
            keys::parse_model_reference,
            "reference key without its brand, text and id",
        )
    }

    pub fn all_models(self) -> impl Iterator<Item = StoreResult<Model>> + 's {
        self.0.all(Keyspace::Model)
    }

    /// True when a model has id `id`: a key lookup, nothing decoded.
    pub fn has_model(self, id: ModelId) -> StoreResult<bool> {
        Ok(self.0.db.contains_key(Keyspace::Model.id_key(id.0))?)
    }

    /// Every model's id, in id order: keys only, nothing decoded.
    pub fn model_ids(self) -> StoreResult<Vec<ModelId>> {
        Ok(self
            .0
            .ids_under(Keyspace::Model.prefix())?
            .into_iter()
            .map(ModelId)
            .collect())
    }

    /// Every model, decoded on rayon's threads while sled's iterator feeds them.
    pub fn all_models_parallel(
        self,
    ) -> impl rayon::iter::ParallelIterator<Item = StoreResult<Model>> + 's {
        self.0.all_parallel(Keyspace::Model)
    }
}
