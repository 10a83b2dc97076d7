//! The identity an unmatched listing's seller claims: the brand matching resolved (or the
//! seller's brand text when it resolved none) and the reference the seller gave, normalised.
//! The back office groups unmatched listings by it, under a stable id computed from it.

use super::{normalize_reference, BrandId, Fnv1a, Listing};
use std::hash::Hasher;

/// The brand part of a claimed identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClaimedBrand {
    /// A brand of the catalogue.
    Known(BrandId),
    /// The seller's brand text, normalised like a reference; empty when the seller named none
    /// (or named two brands).
    Text(String),
}

/// What the seller of an unmatched listing claims it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClaimedIdentity {
    pub brand: ClaimedBrand,
    /// The seller's reference field, normalised; `None` when it holds no letter or digit.
    pub reference: Option<String>,
}

impl ClaimedIdentity {
    /// The identity `listing`'s seller claims.
    pub fn of(listing: &Listing) -> ClaimedIdentity {
        let details = &listing.details;
        let brand = match listing.brand_id {
            Some(brand) => ClaimedBrand::Known(brand),
            None => ClaimedBrand::Text(
                details
                    .scraped_brand
                    .as_deref()
                    .map(normalize_reference)
                    .unwrap_or_default(),
            ),
        };
        let reference = details
            .scraped_reference
            .as_deref()
            .map(normalize_reference)
            .filter(|r| !r.is_empty());
        ClaimedIdentity { brand, reference }
    }

    /// A stable id: 16 hex digits of FNV-1a over the identity, the same in every process and
    /// release, so a page read now names the group a write sends later.
    pub fn id(&self) -> String {
        let mut hasher = Fnv1a::default();
        match &self.brand {
            ClaimedBrand::Known(id) => hasher.write(format!("brand:{id}").as_bytes()),
            ClaimedBrand::Text(text) => hasher.write(format!("text:{text}").as_bytes()),
        }
        hasher.write(&[0]);
        if let Some(reference) = &self.reference {
            hasher.write(format!("reference:{reference}").as_bytes());
        }
        format!("{:016x}", hasher.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(brand: ClaimedBrand, reference: Option<&str>) -> ClaimedIdentity {
        ClaimedIdentity {
            brand,
            reference: reference.map(str::to_owned),
        }
    }

    #[test]
    fn ids_are_stable_and_tell_identities_apart() {
        let rolex = identity(ClaimedBrand::Known(BrandId(1)), Some("16610"));
        assert_eq!(rolex.id(), rolex.clone().id());
        assert_eq!(rolex.id().len(), 16);
        // Pinned: a release that changed the id would orphan every id a client holds.
        assert_eq!(rolex.id(), "8bcf32a792c9e612");
        let others = [
            identity(ClaimedBrand::Known(BrandId(1)), None),
            identity(ClaimedBrand::Known(BrandId(2)), Some("16610")),
            identity(ClaimedBrand::Text("1".into()), Some("16610")),
            identity(ClaimedBrand::Text(String::new()), Some("16610")),
            identity(ClaimedBrand::Text(String::new()), None),
        ];
        let mut ids: Vec<String> = others.iter().map(ClaimedIdentity::id).collect();
        ids.push(rolex.id());
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), others.len() + 1);
    }
}
