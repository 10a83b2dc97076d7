//! The listings area: providers, their listings, the provider's own id of each, and the number
//! of active listings matched to each model.
//! Keyspaces: `Provider`, `ProviderSlug`, `Listing`, `ListingSource`, `ListingSourceGroup`,
//! `ModelListingCount`, and the meta key `MetaKey::ListingCountsHeld`.

use super::keys::{self, Keyspace};
use super::{recount, sources, Store, StoreResult};
use crate::domain::{Listing, ListingId, ModelId, Provider, ProviderId, Slug};

/// The store's listings: see [`Store::listings`].
#[derive(Clone, Copy)]
pub struct Listings<'s>(pub(super) &'s Store);

impl<'s> Listings<'s> {
    pub fn provider(self, id: ProviderId) -> StoreResult<Option<Provider>> {
        self.0.get(Keyspace::Provider.id_key(id.0))
    }

    pub fn provider_by_slug(self, slug: &Slug) -> StoreResult<Option<Provider>> {
        self.0
            .get_via(keys::provider_slug(slug), Keyspace::Provider)
    }

    pub fn providers(self) -> impl Iterator<Item = StoreResult<Provider>> + 's {
        self.0.all(Keyspace::Provider)
    }

    pub fn listing(self, id: ListingId) -> StoreResult<Option<Listing>> {
        self.0.get(Keyspace::Listing.id_key(id.0))
    }

    /// The provider's listing with the provider's own id `code`. Reads every source of the
    /// provider: for tests and checks, not for a request.
    pub fn listing_by_source(
        self,
        provider: ProviderId,
        code: &str,
    ) -> StoreResult<Option<Listing>> {
        let id = self
            .listing_codes_of_provider(provider)?
            .into_iter()
            .rev()
            .find_map(|(known, id)| (known == code).then_some(id));
        id.map_or(Ok(None), |id| self.listing(id))
    }

    /// Every listing, in id order (for batch jobs; the API never scans).
    pub fn all_listings(self) -> impl Iterator<Item = StoreResult<Listing>> + 's {
        self.0.all(Keyspace::Listing)
    }

    /// Every listing, decoded on rayon's threads.
    pub fn all_listings_parallel(
        self,
    ) -> impl rayon::iter::ParallelIterator<Item = StoreResult<Listing>> + 's {
        self.0.all_parallel(Keyspace::Listing)
    }

    /// Every listing of `provider` as (the provider's own id, our id), delisted ones included,
    /// read from the source keys alone: no listing is decoded. Were a code listed twice, the
    /// later pair is the one in force.
    pub fn listing_codes_of_provider(
        self,
        provider: ProviderId,
    ) -> StoreResult<Vec<(String, ListingId)>> {
        sources::codes_of_provider(self.0, provider)
    }

    /// Active listings matched to the model (kept by the listings jobs; 0 until then).
    pub fn listing_count(self, model: ModelId) -> StoreResult<u64> {
        Ok(self
            .0
            .get_id(keys::model_listing_count(model))?
            .unwrap_or(0))
    }

    /// True while a write of listings in several commits holds its models' listing counts
    /// back for its last commit (`jobs::listing_writes`).
    pub fn listing_counts_held(self) -> StoreResult<bool> {
        recount::counts_held(&self.0.db)
    }
}
