//! Key layout: one leading keyspace byte, then big-endian ids and slugs, so prefix scans
//! return a parent's children in id order. Secondary keys end in the id they point at.

use crate::domain::{
    BrandId, CaliberId, CandidateId, ListingId, ModelId, ProviderId, ReviewStatus, SeriesId, Slug,
    TokenHash, Username,
};

/// The kinds of key in the store's single tree. Brand, Series, Complication, Caliber, Model,
/// Provider and Listing hold records (values starting with their layout byte, see `codec`);
/// the others hold an 8-byte id or counter, or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Keyspace {
    Meta = 0,
    Brand = 1,
    BrandSlug = 2,
    BrandHighlight = 3,
    BrandAlias = 4,
    Series = 10,
    SeriesSlug = 11,
    SeriesBareSlug = 12,
    Complication = 20,
    ComplicationSlug = 21,
    Caliber = 30,
    CaliberSlug = 31,
    CaliberBareSlug = 32,
    CaliberReference = 33,
    Model = 40,
    ModelSlug = 41,
    /// Retired: calibre + model id keys that nothing read, a sled insert per model (a
    /// seventh of a million-model import's keys). Schema 7 drops them; none is written.
    ModelByCaliber = 42,
    ModelReference = 43,
    ModelListingCount = 44,
    /// Holds no records: only the id counter of pictures.
    Picture = 45,
    /// Where the image pipeline is with each picture, by picture id: records. A keyspace of
    /// its own, so adding it needed no migration (docs/decisions.md, D-113).
    PictureState = 46,
    /// Ids of the pictures the image worker has something to do for, now or at a retry
    /// time: empty values, so a pass reads only those records, not every picture's. Pictures
    /// still in a `PendingPictures` group have neither a state nor a due key.
    PictureDue = 47,
    /// What each fetched picture looks like (its 8-byte difference hash), by picture id:
    /// how listing pictures that show one photograph are told apart.
    PictureLook = 48,
    /// Picture id -> the id of the model that shows it (8 bytes), kept with the model.
    ModelPicture = 49,
    Provider = 50,
    ProviderSlug = 51,
    Listing = 60,
    /// Provider id + the provider's own listing id: the listing's stable identity.
    ListingSource = 61,
    /// Listing id + time -> the asking price the listing had from then on: a record, written
    /// only when a revisit changes a listing's price or currency, the first with its price
    /// before (`store::price_changes`, D-205). New without a step: no key reads as no change.
    ListingPriceChange = 64,
    // 62 and 63 are retired (a per-provider and a per-model listing key nobody read): each
    // secondary key is one more sled insert per listing, a large share of a 10M-listing ingest
    // (docs/decisions.md, D-07).
    /// Back-office users, by name: records.
    User = 70,
    /// Sessions, by the SHA-256 of their token: records.
    Session = 71,
    /// User name + token hash, to revoke every session of a user.
    SessionByUser = 72,
    /// The audit trail, by id (ids grow with time): records.
    Audit = 73,
    /// User + audit entry id: each user's entries, in id order. New in schema 9.
    AuditByUser = 74,
    /// Action + audit entry id: each action's entries. New in schema 9.
    AuditByAction = 75,
    /// User + action + audit entry id: each user's entries of each action. New in schema 9.
    AuditByUserAction = 76,
    /// The number of entries in each list of the audit trail (the whole trail, a user's, an
    /// action's, a user's of an action), under the list's prefix: 8-byte counters, written in
    /// the same sled batch as the entries. New in schema 9.
    AuditCount = 77,
    /// Picture-review candidates, by id: records.
    Candidate = 80,
    /// Model id + candidate id: a model's candidates.
    CandidateOfModel = 81,
    /// Where a model stands in picture review, by model id: records.
    PictureReview = 82,
    /// Review status byte + model id: the queue's two lists, in model id order.
    ReviewQueue = 83,
    /// Ids of models whose matched listings' pictures changed since their listing candidates
    /// were last ranked: the image worker ranks them again.
    CandidatesStale = 84,
    /// Brand + reference base (`reference_base`) + model id: the models whose references
    /// share a base, for the duplicate finder. Kept with the model.
    ModelBase = 85,
    /// Model id + model id -> signal and name score: the duplicate finder's pairs, stored both
    /// ways so a model's pairs are one prefix scan.
    DuplicatePair = 86,
    /// Smaller model id + larger: pairs an admin dismissed, never offered again.
    DismissedPair = 87,
    /// Brand + slug of a merged model -> the id it was merged into.
    MergedSlug = 88,
    /// Id of a merged model -> the id it was merged into.
    MergedId = 89,
    /// Batch jobs submitted to a running server, by id (ids grow with time): records. Written
    /// outside the write turn, like sessions; a keyspace of its own, so no migration.
    Job = 90,
    /// Pictures queued for the image worker that nothing has happened to yet, up to 16 to a
    /// key, by the id of the first: records (`store::pending`). A picture leaves its group
    /// when its first `PictureState` is written. New in schema 5 without a step: stores
    /// without it read as before.
    PendingPictures = 91,
    /// Provider id + the id of the first listing: the provider's own ids of listings created by
    /// one write, up to 1,024 to a key (`store::sources`), where each had a `ListingSource`
    /// key. New in schema 6; the `ListingSource` keys of older stores are read as before.
    ListingSourceGroup = 92,
    /// Group key (the id of `/reconciliation`'s groups) -> the group of unmatched listings'
    /// record (`store::unmatched`): its tally but the prices. New in schema 8; from schema 10
    /// without its member ids and prices.
    UnmatchedGroup = 93,
    /// Order tag + value + inverted group size + group key: each order's groups, largest first.
    UnmatchedOrder = 94,
    /// Order tag + value -> how many groups the order walks.
    UnmatchedCount = 95,
    /// Retired: text kind + normalised text + 0 + group key -> the group's size, what groups
    /// were found by the start of their reference or brand text before the listings index
    /// found them (D-240). Schema 16 drops them; none is written.
    UnmatchedText = 96,
    /// Group key + currency + 0 + price -> how many of the group's listings ask that price.
    /// New in schema 10, when the prices left the group's record.
    UnmatchedPrice = 97,
    /// Group key + listing id -> nothing: the group's listings. New in schema 10, when the ids
    /// left the group's record.
    UnmatchedMember = 98,
    /// Id of a merged model some of whose listings still name it -> nothing: the listing
    /// mover (`jobs::listing_mover`) moves them to the model it was merged into (`MergedId`),
    /// a chunk a commit, and removes the key with the last. New in schema 14 (D-231).
    MergedListingsLeft = 99,
    /// The ECB's reference rates of each day loaded, by date (`YYYY-MM-DD`, so that key order
    /// is date order): records, written with the rates in force (`store::rates`, D-204). New
    /// in schema 12.
    RatesDay = 100,
    /// Duplicates generation -> the models whose pairs, dismissals or group keys (references,
    /// brand) the write of that generation changed, 8 bytes each: derived, written in the same
    /// batch as the generation, so groups kept at an older generation are joined again around
    /// them, in this process or the next. A write of too many models leaves none (a gap).
    DuplicatesTouched = 110,
    /// The duplicate groups as last joined, a thousand to a key, by chunk number: records,
    /// derived, written outside the write turn at the generation of `MetaKey::DuplicateGroupsKept`.
    KeptDuplicateGroups = 111,
    /// Store generation -> the models whose listings the write of that generation changed (a
    /// price, a status, a model), or every model (a day of rates, a migration): a record,
    /// derived, written in the same batch as the write and removed by the series folder's
    /// write that folded them (`store::series`, D-209). New in schema 13.
    PriceSeriesTouched = 120,
    /// Model id + interval + year -> the model's periods of that interval beginning in that
    /// year, as last folded: records, derived.
    PriceSeriesPeriods = 121,
    /// Model id -> the listings active when the model was last folded, with their prices:
    /// records, derived.
    PriceSeriesState = 122,
}

impl Keyspace {
    pub fn prefix(self) -> Vec<u8> {
        vec![self as u8]
    }

    /// Key of a primary record.
    pub fn id_key(self, id: u64) -> Vec<u8> {
        KeyBuilder::new(self).id(id).done()
    }
}

/// Named single values in the meta keyspace.
#[derive(Debug, Clone, Copy)]
pub enum MetaKey {
    SchemaVersion,
    Generation,
    /// Next id to hand out for records of the given keyspace.
    NextId(Keyspace),
    /// The ECB rates in force: a record, with its layout byte.
    Rates,
    /// The generation of the last write that changed what the listings index holds
    /// (listings, or the rates their US dollar prices come from).
    ListingsGeneration,
    /// A count the admin view reads, kept in the same writes as the records it counts.
    Count(Counted),
    /// The generation of the last write that changed the duplicate finder's pairs.
    DuplicatesGeneration,
    /// Present only while a migration step runs: the step's target schema (8 bytes) and the
    /// last key it rewrote, committed with each chunk so that a re-run resumes after it.
    MigrationCursor,
    /// The duplicates generation the groups under `Keyspace::KeptDuplicateGroups` were joined at.
    DuplicateGroupsKept,
    /// Present only while a write of listings in several commits holds its models' listing
    /// counts back for its last commit (`jobs::listing_writes`): a store opened with it counts
    /// them again (`super::recount`).
    ListingCountsHeld,
    /// When a process last opened the store to serve: written at open, so that sled's first
    /// flush after an open (which walks every segment) happens then (`Store::flush_once_opened`).
    OpenedAt,
    /// How far a drain of the series log that stopped had folded (`price_series::FoldProgress`),
    /// so that the next one resumes there; removed with the entries it names.
    SeriesFoldProgress,
}

impl MetaKey {
    pub fn key(self) -> Vec<u8> {
        let builder = KeyBuilder::new(Keyspace::Meta);
        match self {
            MetaKey::SchemaVersion => builder.text("schema_version"),
            MetaKey::Generation => builder.text("generation"),
            MetaKey::NextId(space) => builder.text("next_id").byte(space as u8),
            MetaKey::Rates => builder.text("rates"),
            MetaKey::ListingsGeneration => builder.text("listings_generation"),
            MetaKey::MigrationCursor => builder.text("migration_cursor"),
            MetaKey::ListingCountsHeld => builder.text("listing_counts_held"),
            MetaKey::DuplicatesGeneration => builder.text("duplicates_generation"),
            MetaKey::DuplicateGroupsKept => builder.text("duplicate_groups_kept"),
            MetaKey::Count(counted) => builder.text("count").byte(counted as u8),
            MetaKey::OpenedAt => builder.text("opened_at"),
            MetaKey::SeriesFoldProgress => builder.text("series_fold_progress"),
        }
        .done()
    }
}

/// What `GET /admin/stats` counts, each kept as a meta counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Counted {
    Brands = 1,
    Series = 2,
    Models = 3,
    Calibers = 4,
    Providers = 5,
    /// Listings not DELISTED.
    Listings = 6,
    /// Listings not DELISTED and matched to no model.
    UnmatchedListings = 7,
}

impl Counted {
    pub const ALL: [Counted; 7] = [
        Counted::Brands,
        Counted::Series,
        Counted::Models,
        Counted::Calibers,
        Counted::Providers,
        Counted::Listings,
        Counted::UnmatchedListings,
    ];
}

struct KeyBuilder(Vec<u8>);

impl KeyBuilder {
    fn new(space: Keyspace) -> Self {
        KeyBuilder(vec![space as u8])
    }
    fn id(mut self, id: u64) -> Self {
        self.0.extend_from_slice(&id.to_be_bytes());
        self
    }
    /// Text followed by a 0 terminator, so `ab` never prefixes `abc`'s entries.
    fn text(mut self, text: &str) -> Self {
        self.0.extend_from_slice(text.as_bytes());
        self.0.push(0);
        self
    }
    /// Text after its length (8 bytes), for text that may hold any byte, a 0 too (a filter
    /// from a query string), where a terminator could be part of the text.
    fn sized_text(mut self, text: &str) -> Self {
        self.0.extend_from_slice(&(text.len() as u64).to_be_bytes());
        self.0.extend_from_slice(text.as_bytes());
        self
    }
    fn byte(mut self, b: u8) -> Self {
        self.0.push(b);
        self
    }
    fn done(self) -> Vec<u8> {
        self.0
    }
}

/// When `key` is applied in a write applied key by key (`Store::apply_with`): the meta
/// counters first (generation, ids, counts), then secondary keys and everything nothing finds
/// by a natural key, then the records found by one (a slug, a provider's source id), parents
/// before children, and last the duplicate finder's counter (groups joined at a count hold
/// every pair written before it). A crash part-way then leaves at worst keys pointing at
/// records not written, never a record its natural key does not reach.
pub fn apply_phase(key: &[u8]) -> u8 {
    use Keyspace::{Brand, Caliber, Complication, Listing, Model, Provider, Series};
    const FOUND_BY_NATURAL_KEY: [Keyspace; 7] = [
        Brand,
        Series,
        Complication,
        Caliber,
        Model,
        Provider,
        Listing,
    ];
    match key.first() {
        // Few meta keys per write: building the one to compare with costs nothing.
        Some(&space) if space == Keyspace::Meta as u8 => {
            if key == MetaKey::DuplicatesGeneration.key() {
                3
            } else {
                0
            }
        }
        Some(&space) if FOUND_BY_NATURAL_KEY.iter().any(|s| *s as u8 == space) => 2,
        _ => 1,
    }
}

/// The id in the last 8 bytes of a secondary key.
pub fn trailing_id(key: &[u8]) -> Option<u64> {
    let tail: [u8; 8] = key.get(key.len().checked_sub(8)?..)?.try_into().ok()?;
    Some(u64::from_be_bytes(tail))
}

pub fn brand_slug(slug: &Slug) -> Vec<u8> {
    KeyBuilder::new(Keyspace::BrandSlug)
        .text(slug.as_str())
        .done()
}
pub fn brand_highlight(rank: u32, brand: BrandId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::BrandHighlight)
        .id(u64::from(rank))
        .id(brand.0)
        .done()
}
pub fn brand_alias_prefix(normalized: &str) -> Vec<u8> {
    KeyBuilder::new(Keyspace::BrandAlias)
        .text(normalized)
        .done()
}
pub fn brand_alias(normalized: &str, brand: BrandId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::BrandAlias)
        .text(normalized)
        .id(brand.0)
        .done()
}
pub fn series_slug(brand: BrandId, slug: &Slug) -> Vec<u8> {
    KeyBuilder::new(Keyspace::SeriesSlug)
        .id(brand.0)
        .text(slug.as_str())
        .done()
}
/// The series slugs of one brand.
pub fn series_slug_prefix(brand: BrandId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::SeriesSlug).id(brand.0).done()
}
pub fn series_bare_slug_prefix(slug: &Slug) -> Vec<u8> {
    KeyBuilder::new(Keyspace::SeriesBareSlug)
        .text(slug.as_str())
        .done()
}
pub fn series_bare_slug(slug: &Slug, series: SeriesId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::SeriesBareSlug)
        .text(slug.as_str())
        .id(series.0)
        .done()
}
pub fn complication_slug(slug: &Slug) -> Vec<u8> {
    KeyBuilder::new(Keyspace::ComplicationSlug)
        .text(slug.as_str())
        .done()
}
pub fn caliber_slug(brand: BrandId, slug: &Slug) -> Vec<u8> {
    KeyBuilder::new(Keyspace::CaliberSlug)
        .id(brand.0)
        .text(slug.as_str())
        .done()
}
pub fn caliber_bare_slug_prefix(slug: &Slug) -> Vec<u8> {
    KeyBuilder::new(Keyspace::CaliberBareSlug)
        .text(slug.as_str())
        .done()
}
pub fn caliber_bare_slug(slug: &Slug, caliber: CaliberId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::CaliberBareSlug)
        .text(slug.as_str())
        .id(caliber.0)
        .done()
}
pub fn caliber_reference(brand: BrandId, normalized: &str) -> Vec<u8> {
    KeyBuilder::new(Keyspace::CaliberReference)
        .id(brand.0)
        .text(normalized)
        .done()
}
pub fn model_slug(brand: BrandId, slug: &Slug) -> Vec<u8> {
    KeyBuilder::new(Keyspace::ModelSlug)
        .id(brand.0)
        .text(slug.as_str())
        .done()
}
pub fn model_reference_prefix(brand: BrandId, normalized: &str) -> Vec<u8> {
    KeyBuilder::new(Keyspace::ModelReference)
        .id(brand.0)
        .text(normalized)
        .done()
}
/// The start of every reference key of `brand` that begins with `normalized` (no terminator).
pub fn model_reference_stem(brand: BrandId, normalized: &str) -> Vec<u8> {
    let mut key = KeyBuilder::new(Keyspace::ModelReference).id(brand.0).done();
    key.extend_from_slice(normalized.as_bytes());
    key
}
/// The reference text of a reference key after its first `stem` bytes, and its model id.
pub fn model_reference_tail(key: &[u8], stem: usize) -> Option<(&str, ModelId)> {
    let id = trailing_id(key)?;
    let text = key.get(stem..key.len().checked_sub(9)?)?;
    Some((std::str::from_utf8(text).ok()?, ModelId(id)))
}
pub fn model_reference(brand: BrandId, normalized: &str, model: ModelId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::ModelReference)
        .id(brand.0)
        .text(normalized)
        .id(model.0)
        .done()
}
/// The brand, reference text and model of a [`model_reference`] key.
pub fn parse_model_reference(key: &[u8]) -> Option<(BrandId, String, ModelId)> {
    let model = trailing_id(key)?;
    let brand: [u8; 8] = key.get(1..9)?.try_into().ok()?;
    // The text sits between the brand id and its 0 terminator, before the model id.
    let text = key.get(9..key.len().checked_sub(9)?)?;
    Some((
        BrandId(u64::from_be_bytes(brand)),
        std::str::from_utf8(text).ok()?.to_owned(),
        ModelId(model),
    ))
}
/// The normalised name and brand of a [`brand_alias`] key.
pub fn parse_brand_alias(key: &[u8]) -> Option<(String, BrandId)> {
    let brand = trailing_id(key)?;
    let text = key.get(1..key.len().checked_sub(9)?)?;
    Some((std::str::from_utf8(text).ok()?.to_owned(), BrandId(brand)))
}
pub fn model_listing_count(model: ModelId) -> Vec<u8> {
    Keyspace::ModelListingCount.id_key(model.0)
}
pub fn provider_slug(slug: &Slug) -> Vec<u8> {
    KeyBuilder::new(Keyspace::ProviderSlug)
        .text(slug.as_str())
        .done()
}
/// The key of `model`'s periods of the interval coded `interval` that begin in `year`.
pub fn price_series_periods(model: ModelId, interval: u8, year: i32) -> Vec<u8> {
    // The sign bit flipped, so that key order is the years' order.
    let year = u64::from((year as u32) ^ (1 << 31));
    KeyBuilder::new(Keyspace::PriceSeriesPeriods)
        .id(model.0)
        .byte(interval)
        .id(year)
        .done()
}
/// The start of every key of `model`'s periods.
pub fn price_series_periods_of(model: ModelId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::PriceSeriesPeriods)
        .id(model.0)
        .done()
}
/// The key of the ECB rates of the day `date` (`YYYY-MM-DD`).
pub fn rates_day(date: &str) -> Vec<u8> {
    KeyBuilder::new(Keyspace::RatesDay).text(date).done()
}
/// The date of a [`rates_day`] key.
pub fn rates_day_date(key: &[u8]) -> Option<&str> {
    let text = key.get(1..)?.strip_suffix(&[0])?;
    std::str::from_utf8(text).ok()
}
/// A listing's source key as stores before schema 6 wrote it, for tests that make one; such
/// keys are read by prefix ([`listing_source_prefix`]).
#[cfg(test)]
pub fn listing_source(provider: ProviderId, code: &str) -> Vec<u8> {
    KeyBuilder::new(Keyspace::ListingSource)
        .id(provider.0)
        .text(code)
        .done()
}
pub fn listing_source_prefix(provider: ProviderId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::ListingSource)
        .id(provider.0)
        .done()
}
pub fn listing_source_group(provider: ProviderId, first: ListingId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::ListingSourceGroup)
        .id(provider.0)
        .id(first.0)
        .done()
}
pub fn listing_source_group_prefix(provider: ProviderId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::ListingSourceGroup)
        .id(provider.0)
        .done()
}
pub fn candidate_of_model_prefix(model: ModelId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::CandidateOfModel)
        .id(model.0)
        .done()
}
pub fn candidate_of_model(model: ModelId, candidate: CandidateId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::CandidateOfModel)
        .id(model.0)
        .id(candidate.0)
        .done()
}
pub fn review_queue_prefix(status: ReviewStatus) -> Vec<u8> {
    KeyBuilder::new(Keyspace::ReviewQueue)
        .byte(status as u8)
        .done()
}
pub fn review_queue(status: ReviewStatus, model: ModelId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::ReviewQueue)
        .byte(status as u8)
        .id(model.0)
        .done()
}
pub fn model_base_prefix(brand: BrandId, base: &str) -> Vec<u8> {
    KeyBuilder::new(Keyspace::ModelBase)
        .id(brand.0)
        .text(base)
        .done()
}
pub fn model_base(brand: BrandId, base: &str, model: ModelId) -> Vec<u8> {
    let mut key = model_base_prefix(brand, base);
    key.extend_from_slice(&model.0.to_be_bytes());
    key
}
pub fn duplicate_pair(model: ModelId, other: ModelId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::DuplicatePair)
        .id(model.0)
        .id(other.0)
        .done()
}
pub fn duplicate_pairs_of(model: ModelId) -> Vec<u8> {
    KeyBuilder::new(Keyspace::DuplicatePair).id(model.0).done()
}
/// The two ids of a pair key (duplicate or dismissed).
pub fn pair_ids(key: &[u8]) -> Option<(ModelId, ModelId)> {
    let first: [u8; 8] = key.get(1..9)?.try_into().ok()?;
    let second: [u8; 8] = key.get(9..17)?.try_into().ok()?;
    Some((
        ModelId(u64::from_be_bytes(first)),
        ModelId(u64::from_be_bytes(second)),
    ))
}
pub fn dismissed_pair(a: ModelId, b: ModelId) -> Vec<u8> {
    let (low, high) = if a < b { (a, b) } else { (b, a) };
    KeyBuilder::new(Keyspace::DismissedPair)
        .id(low.0)
        .id(high.0)
        .done()
}
pub fn merged_slug(brand: BrandId, slug: &Slug) -> Vec<u8> {
    KeyBuilder::new(Keyspace::MergedSlug)
        .id(brand.0)
        .text(slug.as_str())
        .done()
}
pub fn user(name: &Username) -> Vec<u8> {
    KeyBuilder::new(Keyspace::User).text(name.as_str()).done()
}
pub fn session(token: &TokenHash) -> Vec<u8> {
    let mut key = Keyspace::Session.prefix();
    key.extend_from_slice(&token.0);
    key
}
pub fn sessions_of_prefix(name: &Username) -> Vec<u8> {
    KeyBuilder::new(Keyspace::SessionByUser)
        .text(name.as_str())
        .done()
}
pub fn session_of(name: &Username, token: &TokenHash) -> Vec<u8> {
    let mut key = sessions_of_prefix(name);
    key.extend_from_slice(&token.0);
    key
}
/// The start of every key of one list of the audit trail, each key ending in an entry's id:
/// the whole trail (`Audit`, whose keys hold the entries), or the entries by `user`, of
/// `action`, or both (keys holding nothing).
pub fn audit_list(user: Option<&str>, action: Option<&str>) -> Vec<u8> {
    match (user, action) {
        (None, None) => Keyspace::Audit.prefix(),
        (Some(user), None) => KeyBuilder::new(Keyspace::AuditByUser)
            .sized_text(user)
            .done(),
        (None, Some(action)) => KeyBuilder::new(Keyspace::AuditByAction)
            .sized_text(action)
            .done(),
        (Some(user), Some(action)) => KeyBuilder::new(Keyspace::AuditByUserAction)
            .sized_text(user)
            .sized_text(action)
            .done(),
    }
}
/// The key of the number of entries in the audit list whose keys start with `list`.
pub fn audit_count(list: &[u8]) -> Vec<u8> {
    let mut key = Keyspace::AuditCount.prefix();
    key.extend_from_slice(list);
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ProviderId;

    #[test]
    fn a_write_applied_key_by_key_puts_natural_keys_before_their_records() {
        let listing = Keyspace::Listing.id_key(1);
        let source = listing_source(ProviderId(1), "P1-0000001");
        let picture = Keyspace::PictureState.id_key(7);
        let model = Keyspace::Model.id_key(3);
        let brand = Keyspace::Brand.id_key(9);
        let slug = model_slug(BrandId(9), &Slug::parse("sub").expect("slug"));
        let mut keys = vec![
            MetaKey::DuplicatesGeneration.key(),
            listing.clone(),
            model.clone(),
            source.clone(),
            brand.clone(),
            slug.clone(),
            picture.clone(),
            MetaKey::Generation.key(),
        ];
        keys.sort_by(|a, b| (apply_phase(a), a).cmp(&(apply_phase(b), b)));
        assert_eq!(
            keys,
            [
                MetaKey::Generation.key(),
                slug,
                picture,
                source,
                brand,
                model,
                listing,
                MetaKey::DuplicatesGeneration.key(),
            ]
        );
    }
}
