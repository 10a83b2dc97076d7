//! Marketplace listings: what a provider publishes about one watch for sale, kept attributed to
//! that provider, with its lifecycle (`status`) separate from the seller's stock state
//! (`availability`), and its history of status changes.

use super::{normalize_reference, BrandId, ListingId, ModelId, PictureId, ProviderId, Timestamp};
use serde::{Deserialize, Serialize};

/// The marketplace lifecycle of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ListingStatus {
    Active,
    Reserved,
    Delisted,
}

impl ListingStatus {
    pub const ALL: [ListingStatus; 3] = [
        ListingStatus::Active,
        ListingStatus::Reserved,
        ListingStatus::Delisted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ListingStatus::Active => "ACTIVE",
            ListingStatus::Reserved => "RESERVED",
            ListingStatus::Delisted => "DELISTED",
        }
    }
}

/// The seller's stock state, independent of the lifecycle: a SOLD listing still at its source
/// stays ACTIVE until it disappears.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Availability {
    InStock,
    OnRequest,
    Sold,
}

impl Availability {
    pub const ALL: [Availability; 3] = [
        Availability::InStock,
        Availability::OnRequest,
        Availability::Sold,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Availability::InStock => "IN_STOCK",
            Availability::OnRequest => "ON_REQUEST",
            Availability::Sold => "SOLD",
        }
    }

    /// Maps a seller's phrasing ("In stock", "available", "on request", "sold"); `None` when
    /// it cannot be read.
    pub fn from_seller(text: &str) -> Option<Availability> {
        let key = fold(text);
        match key.as_str() {
            "instock" | "available" | "availablenow" | "ready" | "readytoship" => {
                Some(Availability::InStock)
            }
            "onrequest" | "priceonrequest" | "availableonrequest" | "order" | "toorder" => {
                Some(Availability::OnRequest)
            }
            "sold" | "soldout" | "outofstock" => Some(Availability::Sold),
            _ => None,
        }
    }
}

/// The condition of the watch, on the scale sellers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Condition {
    New,
    Unworn,
    VeryGood,
    Good,
    Fair,
    Poor,
}

impl Condition {
    pub const ALL: [Condition; 6] = [
        Condition::New,
        Condition::Unworn,
        Condition::VeryGood,
        Condition::Good,
        Condition::Fair,
        Condition::Poor,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Condition::New => "NEW",
            Condition::Unworn => "UNWORN",
            Condition::VeryGood => "VERY_GOOD",
            Condition::Good => "GOOD",
            Condition::Fair => "FAIR",
            Condition::Poor => "POOR",
        }
    }

    /// Maps common phrasings ("Unworn", "Used (Very good)", "brand new", "Pre-owned - Good")
    /// onto the scale; `None` when the text says nothing we can map, never a guess.
    pub fn from_seller(text: &str) -> Option<Condition> {
        // Whole words, most specific first: "very good" before "good", "like new" before
        // "new"; "Newly serviced" or "Renewed" say nothing about the condition.
        const PHRASES: [(&[&str], Condition); 13] = [
            (&["unworn"], Condition::Unworn),
            (&["like", "new"], Condition::Unworn),
            (&["as", "new"], Condition::Unworn),
            (&["mint"], Condition::Unworn),
            (&["brand", "new"], Condition::New),
            (&["new"], Condition::New),
            (&["very", "good"], Condition::VeryGood),
            (&["excellent"], Condition::VeryGood),
            (&["good"], Condition::Good),
            (&["fair"], Condition::Fair),
            (&["acceptable"], Condition::Fair),
            (&["poor"], Condition::Poor),
            (&["for", "parts"], Condition::Poor),
        ];
        let words: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        PHRASES
            .iter()
            .find(|(phrase, _)| words.windows(phrase.len()).any(|run| run == *phrase))
            .map(|(_, condition)| *condition)
    }
}

/// Lowercase letters and digits only, so "Used (Very good)" reads as "usedverygood".
fn fold(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// One change of a listing's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusChange {
    pub status: ListingStatus,
    pub at: Timestamp,
}

/// A listing's picture: re-hosted under the service's media URL, the source kept for the
/// image worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListingPicture {
    pub id: PictureId,
    pub source_url: String,
}

/// What comes with the watch, as buyers price it: its box and its papers, one of them, or
/// neither. Said only when the seller said both (docs/decisions.md, D-206).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoxPapers {
    FullSet,
    BoxOnly,
    PapersOnly,
    Neither,
}

impl BoxPapers {
    pub const ALL: [BoxPapers; 4] = [
        BoxPapers::FullSet,
        BoxPapers::BoxOnly,
        BoxPapers::PapersOnly,
        BoxPapers::Neither,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BoxPapers::FullSet => "fullSet",
            BoxPapers::BoxOnly => "boxOnly",
            BoxPapers::PapersOnly => "papersOnly",
            BoxPapers::Neither => "neither",
        }
    }

    /// What the seller's two answers make; `None` unless both were given. One answer alone
    /// does not say which: a box without word of the papers may be a full set or not, and no
    /// box without word of the papers is not yet "neither".
    pub fn of(box_available: Option<bool>, papers_available: Option<bool>) -> Option<BoxPapers> {
        match (box_available?, papers_available?) {
            (true, true) => Some(BoxPapers::FullSet),
            (true, false) => Some(BoxPapers::BoxOnly),
            (false, true) => Some(BoxPapers::PapersOnly),
            (false, false) => Some(BoxPapers::Neither),
        }
    }
}

/// What a provider says about a listing, as read from its snapshot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListingDetails {
    pub url: String,
    /// The seller's text, verbatim.
    pub title: Option<String>,
    pub scraped_brand: Option<String>,
    pub scraped_reference: Option<String>,
    /// Whole units of `currency`.
    pub price: Option<u64>,
    pub currency: Option<String>,
    pub year: Option<i32>,
    pub condition: Option<Condition>,
    pub availability: Option<Availability>,
    pub reserved: bool,
    pub country_code: Option<String>,
    pub country: Option<String>,
    pub city: Option<String>,
    pub state: Option<String>,
    pub box_available: Option<bool>,
    pub papers_available: Option<bool>,
}

/// How matching ended for a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MatchOutcome {
    /// Brand and reference hit exactly one model; `from_title` when the reference was found in
    /// the title because the seller gave none.
    Matched { from_title: bool },
    /// The seller's brand is no brand, slug or alias of the catalogue.
    UnknownBrand,
    /// The seller's reference field names no model of the brand.
    UnknownReference,
    /// The reference hits several models of the brand, or the text names several references
    /// or brands: a person decides.
    Ambiguous,
    /// The seller gave no reference, and the title names none of the brand's references.
    NoReference,
    /// A person linked the listing to its model in the back office. Kept while the seller's
    /// brand and reference text stay the same ([`Listing::keeps_link`]). Last, so the stored
    /// variant indices of the others never move.
    Linked,
}

impl MatchOutcome {
    /// Why a listing is unmatched, as the back office names it (`unmatchedReason`).
    pub fn reason(self) -> Option<&'static str> {
        match self {
            MatchOutcome::Matched { .. } | MatchOutcome::Linked => None,
            MatchOutcome::UnknownBrand => Some("unknownBrand"),
            MatchOutcome::UnknownReference => Some("unknownReference"),
            MatchOutcome::Ambiguous => Some("ambiguous"),
            MatchOutcome::NoReference => Some("noReference"),
        }
    }

    /// Every reason, in the order the back office lists them.
    pub const REASONS: [MatchOutcome; 4] = [
        MatchOutcome::UnknownBrand,
        MatchOutcome::UnknownReference,
        MatchOutcome::Ambiguous,
        MatchOutcome::NoReference,
    ];

    /// The reason's code in the listings index; `None` when matched.
    pub fn reason_code(self) -> Option<u64> {
        match self {
            MatchOutcome::Matched { .. } | MatchOutcome::Linked => None,
            MatchOutcome::UnknownBrand => Some(1),
            MatchOutcome::UnknownReference => Some(2),
            MatchOutcome::Ambiguous => Some(3),
            MatchOutcome::NoReference => Some(4),
        }
    }
}

/// A listing as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listing {
    pub id: ListingId,
    pub provider_id: ProviderId,
    /// The provider's own id of the listing.
    pub provider_code: String,
    pub details: ListingDetails,
    pub pictures: Vec<ListingPicture>,
    pub status: ListingStatus,
    pub history: Vec<StatusChange>,
    /// The brand the seller's text resolved to, matched to a model or not.
    pub brand_id: Option<BrandId>,
    /// The catalogue model it is matched to; `None` while unmatched.
    pub model_id: Option<ModelId>,
    pub matching: MatchOutcome,
    pub last_seen_at: Timestamp,
    pub delisted_at: Option<Timestamp>,
    pub reserved_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// What matching found for a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match {
    pub brand_id: Option<BrandId>,
    pub model_id: Option<ModelId>,
    pub outcome: MatchOutcome,
}

impl Listing {
    /// The model whose `listingCount` this listing adds to: its model, while ACTIVE.
    pub fn counted_for(&self) -> Option<ModelId> {
        self.model_id
            .filter(|_| self.status == ListingStatus::Active)
    }

    /// What matching last found for this listing.
    pub fn current_match(&self) -> Match {
        Match {
            brand_id: self.brand_id,
            model_id: self.model_id,
            outcome: self.matching,
        }
    }

    /// Records what matching found.
    pub fn apply_match(&mut self, found: Match) {
        self.brand_id = found.brand_id;
        self.model_id = found.model_id;
        self.matching = found.outcome;
    }

    /// True when a person linked this listing and `details` still make the seller's claim the
    /// link was decided on: the same brand and reference text, and the same title when no
    /// reference was given (the title is then what matching reads). Price, condition and the
    /// rest may change without undoing a person's decision.
    pub fn keeps_link(&self, details: &ListingDetails) -> bool {
        let old = &self.details;
        let no_reference = details
            .scraped_reference
            .as_deref()
            .is_none_or(|r| normalize_reference(r).is_empty());
        self.matching == MatchOutcome::Linked
            && old.scraped_brand == details.scraped_brand
            && old.scraped_reference == details.scraped_reference
            && (!no_reference || old.title == details.title)
    }

    /// The last instant a snapshot said anything of this listing: first seen, seen again (a
    /// price change among it), delisted or back. An admin's link or edit is not one.
    pub fn last_observed_at(&self) -> Timestamp {
        let changed = self.history.last().map(|change| change.at);
        [
            Some(self.created_at),
            Some(self.last_seen_at),
            changed,
            self.delisted_at,
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(self.created_at)
    }

    /// Moves to `status` at `at`, recording the change; no-op when already there.
    pub fn set_status(&mut self, status: ListingStatus, at: Timestamp) {
        if self.status == status {
            return;
        }
        self.status = status;
        self.history.push(StatusChange { status, at });
        match status {
            ListingStatus::Delisted => self.delisted_at = Some(at),
            ListingStatus::Reserved => {
                self.delisted_at = None;
                self.reserved_at.get_or_insert(at);
            }
            ListingStatus::Active => {
                self.delisted_at = None;
                self.reserved_at = None;
            }
        }
    }
}

/// For tests: an ACTIVE listing of provider 1 matched to `model` since `at`, asking `price`
/// in `currency`.
#[cfg(test)]
pub(crate) fn matched_listing(
    id: ListingId,
    model: ModelId,
    (price, currency): (Option<u64>, &str),
    at: Timestamp,
) -> Listing {
    Listing {
        id,
        provider_id: ProviderId(1),
        provider_code: format!("TEST-{id}"),
        details: ListingDetails {
            url: format!("https://example.com/{id}"),
            price,
            currency: Some(currency.to_owned()),
            ..ListingDetails::default()
        },
        pictures: Vec::new(),
        status: ListingStatus::Active,
        history: vec![StatusChange {
            status: ListingStatus::Active,
            at,
        }],
        brand_id: None,
        model_id: Some(model),
        matching: MatchOutcome::Matched { from_title: false },
        last_seen_at: at,
        delisted_at: None,
        reserved_at: None,
        created_at: at,
        updated_at: at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_and_papers_are_a_group_only_when_both_are_known() {
        let cases = [
            ((Some(true), Some(true)), Some(BoxPapers::FullSet)),
            ((Some(true), Some(false)), Some(BoxPapers::BoxOnly)),
            ((Some(false), Some(true)), Some(BoxPapers::PapersOnly)),
            ((Some(false), Some(false)), Some(BoxPapers::Neither)),
            ((Some(false), None), None),
            ((None, Some(false)), None),
            ((Some(true), None), None),
            ((None, Some(true)), None),
            ((None, None), None),
        ];
        for ((box_available, papers_available), expected) in cases {
            assert_eq!(
                BoxPapers::of(box_available, papers_available),
                expected,
                "box {box_available:?}, papers {papers_available:?}"
            );
        }
    }

    #[test]
    fn seller_phrasings_map_onto_the_condition_scale_or_stay_unknown() {
        for (text, expected) in [
            ("Unworn", Some(Condition::Unworn)),
            ("Used (Very good)", Some(Condition::VeryGood)),
            ("Pre-owned - Good", Some(Condition::Good)),
            ("Brand new", Some(Condition::New)),
            ("New", Some(Condition::New)),
            ("Used (Fair)", Some(Condition::Fair)),
            ("Used (Poor)", Some(Condition::Poor)),
            ("Like new", Some(Condition::Unworn)),
            ("Used", None),
            ("", None),
            ("Newly serviced", None),
            ("Renewed", None),
            ("Good as new", Some(Condition::Unworn)),
            ("NEW OLD STOCK", Some(Condition::New)),
            ("Used (Very Good)", Some(Condition::VeryGood)),
            ("Pre-owned - for parts", Some(Condition::Poor)),
        ] {
            assert_eq!(Condition::from_seller(text), expected, "{text}");
        }
        assert_eq!(
            Availability::from_seller("In stock"),
            Some(Availability::InStock)
        );
        assert_eq!(
            Availability::from_seller("Price on request"),
            Some(Availability::OnRequest)
        );
        assert_eq!(Availability::from_seller("sold"), Some(Availability::Sold));
        assert_eq!(Availability::from_seller("maybe"), None);
    }

    /// An ACTIVE listing first seen at time 1.
    fn listing(details: ListingDetails) -> Listing {
        let t = Timestamp;
        Listing {
            id: ListingId(1),
            provider_id: ProviderId(1),
            provider_code: "a".into(),
            details,
            pictures: vec![],
            status: ListingStatus::Active,
            history: vec![StatusChange {
                status: ListingStatus::Active,
                at: t(1),
            }],
            brand_id: None,
            model_id: None,
            matching: MatchOutcome::UnknownBrand,
            last_seen_at: t(1),
            delisted_at: None,
            reserved_at: None,
            created_at: t(1),
            updated_at: t(1),
        }
    }

    #[test]
    fn a_link_stands_while_the_sellers_brand_and_reference_text_stand() {
        let details = ListingDetails {
            url: "https://x".into(),
            title: Some("Invicta Pro Diver".into()),
            scraped_brand: Some("Invicta".into()),
            scraped_reference: Some("8926OB".into()),
            price: Some(90),
            ..ListingDetails::default()
        };
        let mut linked = listing(details.clone());
        assert!(!linked.keeps_link(&details), "not linked: matching decides");
        linked.matching = MatchOutcome::Linked;
        let repriced = ListingDetails {
            price: Some(95),
            title: Some("Invicta Pro Diver, price drop".into()),
            ..details.clone()
        };
        assert!(
            linked.keeps_link(&repriced),
            "price and title of a referenced listing"
        );
        let rereferenced = ListingDetails {
            scraped_reference: Some("8926".into()),
            ..details.clone()
        };
        assert!(!linked.keeps_link(&rereferenced));
        let rebranded = ListingDetails {
            scraped_brand: None,
            ..details.clone()
        };
        assert!(!linked.keeps_link(&rebranded));
        // Without a reference the title is what matching read, so it must stand too.
        let unreferenced = ListingDetails {
            scraped_reference: Some("-".into()),
            ..details
        };
        linked.details = unreferenced.clone();
        assert!(linked.keeps_link(&unreferenced));
        let retitled = ListingDetails {
            title: Some("Invicta 8926OB".into()),
            ..unreferenced
        };
        assert!(!linked.keeps_link(&retitled));
    }

    #[test]
    fn status_changes_keep_history_and_timestamps() {
        let t = Timestamp;
        let mut listing = listing(ListingDetails {
            url: "https://x".into(),
            ..ListingDetails::default()
        });
        listing.set_status(ListingStatus::Delisted, t(2));
        assert_eq!(listing.delisted_at, Some(t(2)));
        listing.set_status(ListingStatus::Delisted, t(3));
        listing.set_status(ListingStatus::Active, t(4));
        assert_eq!(listing.delisted_at, None);
        let statuses: Vec<_> = listing.history.iter().map(|c| (c.status, c.at)).collect();
        assert_eq!(
            statuses,
            [
                (ListingStatus::Active, t(1)),
                (ListingStatus::Delisted, t(2)),
                (ListingStatus::Active, t(4))
            ]
        );
        listing.set_status(ListingStatus::Reserved, t(5));
        assert_eq!(listing.reserved_at, Some(t(5)));
    }
}
