//! Provider snapshots over a generated catalogue (`listings/provider-N.jsonl`, the format of
//! `watch-catalogue ingest`), deterministic for a seed, as messy as sellers write them:
//!
//! - ~75% name a catalogue model: the brand by its name, an alias, its slug or in another
//!   case, the reference respelled (separators and case changed, letters and digits kept);
//! - ~8% give no reference: it is only in the title (and for a third of those the brand too);
//! - ~8% name brands the catalogue does not know;
//! - ~7% name a known brand and a reference none of its models has;
//! - ~2% name a reference several models of the brand share (when the catalogue has any);
//! - ~8% are unpriced; prices are in USD, EUR, GBP, CHF, JPY or HKD, mostly the seller's
//!   country's currency, around a per-model base price; ~3% are RESERVED.
//!
//! Models are picked by a long-tailed popularity (Zipf-like over a shuffled rank), and one
//! "hot" model (the first of the biggest brand with a reference no other model of the brand
//! shares) takes a fixed share on top, so the stats bench has one model with many listings.

use crate::{reference, style_of, title, CatalogueInfo, ModelInfo};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use watch_catalogue::domain::normalize_reference;

/// Shape of the generated listings.
#[derive(Debug, Clone)]
pub struct ListingShape {
    pub listings: usize,
    /// Share of all listings given to the hot model (on top of its popularity).
    pub hot_share: f64,
}

impl ListingShape {
    /// `listings` listings with the default hot share (1.2%: 12,000 of 1M, ~11,600 ACTIVE).
    pub fn new(listings: usize) -> ListingShape {
        ListingShape {
            listings,
            hot_share: 0.012,
        }
    }
}

/// A provider the generator writes a snapshot for.
pub struct ProviderSpec {
    pub slug: &'static str,
    pub name: &'static str,
    /// Share of the listings.
    weight: u32,
    /// How this provider spells its listing ids.
    id_prefix: &'static str,
}

pub const PROVIDERS: [ProviderSpec; 4] = [
    ProviderSpec {
        slug: "provider-1",
        name: "Provider One",
        weight: 40,
        id_prefix: "P1-",
    },
    ProviderSpec {
        slug: "provider-2",
        name: "Provider Two",
        weight: 30,
        id_prefix: "",
    },
    ProviderSpec {
        slug: "provider-3",
        name: "Provider Three",
        weight: 20,
        id_prefix: "lst_",
    },
    ProviderSpec {
        slug: "provider-4",
        name: "Provider Four",
        weight: 10,
        id_prefix: "w",
    },
];

/// The model with a fixed share of the listings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HotModel {
    pub brand: String,
    pub model: String,
    pub reference: String,
    /// Its listings naming it well (brand and reference, or reference in the title): its fixed
    /// share and what its popularity gave it.
    pub listings: usize,
    /// Of those, not RESERVED: what `GET /listings/stats` counts once ingested.
    pub active: usize,
}

/// What was written, by what the generator meant each listing to be.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListingsGenerated {
    pub listings: usize,
    pub per_provider: Vec<(String, usize)>,
    /// Brand and reference of one model, the reference unique in its brand: should match.
    pub named: usize,
    /// Reference (unique in its brand) only in the title: should match from the title.
    pub title_only: usize,
    pub unknown_brand: usize,
    pub unknown_reference: usize,
    /// A reference several models of the brand share (given, or only in the title).
    pub ambiguous: usize,
    pub unpriced: usize,
    pub reserved: usize,
    pub hot: Option<HotModel>,
}

const UNKNOWN_BRANDS: &[&str] = &[
    "Atelier Nordlys",
    "Maison Verdier",
    "Kurofune",
    "Halden & Söhne",
    "Orbis Horology",
    "Vantor",
    "Celadon Watch Co.",
    "Brun Frères",
    "Skagerrak Instruments",
    "Montclair",
];

/// (seller's phrase or none, weight)
const CONDITIONS: &[(Option<&str>, u32)] = &[
    (Some("Unworn"), 15),
    (Some("New"), 6),
    (Some("Brand new"), 3),
    (Some("Like new"), 4),
    (Some("Mint"), 2),
    (Some("Used (Very good)"), 20),
    (Some("Excellent"), 5),
    (Some("Pre-owned - Good"), 12),
    (Some("Used (Good)"), 10),
    (Some("Used (Fair)"), 5),
    (Some("For parts"), 1),
    (Some("Vintage"), 3),
    (None, 14),
];

const AVAILABILITIES: &[(Option<&str>, u32)] = &[
    (Some("In stock"), 50),
    (Some("Available now"), 8),
    (Some("Ready to ship"), 5),
    (Some("On request"), 8),
    (Some("Sold"), 8),
    (Some("Sold out"), 2),
    (None, 19),
];

/// (code, units per US dollar, roughly the rates written to rates.xml)
const CURRENCIES: &[(&str, f64)] = &[
    ("USD", 1.0),
    ("EUR", 0.8887),
    ("GBP", 0.7534),
    ("CHF", 0.8312),
    ("JPY", 145.2),
    ("HKD", 7.778),
];

struct Place {
    code: &'static str,
    country: &'static str,
    city: &'static str,
    state: Option<&'static str>,
    currency: &'static str,
    weight: u32,
}

const PLACES: &[Place] = &[
    Place {
        code: "US",
        country: "United States",
        city: "New York",
        state: Some("NY"),
        currency: "USD",
        weight: 20,
    },
    Place {
        code: "US",
        country: "United States",
        city: "Miami",
        state: Some("FL"),
        currency: "USD",
        weight: 8,
    },
    Place {
        code: "US",
        country: "United States",
        city: "Los Angeles",
        state: Some("CA"),
        currency: "USD",
        weight: 6,
    },
    Place {
        code: "DE",
        country: "Germany",
        city: "Munich",
        state: None,
        currency: "EUR",
        weight: 14,
    },
    Place {
        code: "FR",
        country: "France",
        city: "Paris",
        state: None,
        currency: "EUR",
        weight: 6,
    },
    Place {
        code: "IT",
        country: "Italy",
        city: "Milan",
        state: None,
        currency: "EUR",
        weight: 7,
    },
    Place {
        code: "NL",
        country: "Netherlands",
        city: "Amsterdam",
        state: None,
        currency: "EUR",
        weight: 3,
    },
    Place {
        code: "GB",
        country: "United Kingdom",
        city: "London",
        state: None,
        currency: "GBP",
        weight: 10,
    },
    Place {
        code: "CH",
        country: "Switzerland",
        city: "Geneva",
        state: None,
        currency: "CHF",
        weight: 9,
    },
    Place {
        code: "JP",
        country: "Japan",
        city: "Tokyo",
        state: None,
        currency: "JPY",
        weight: 8,
    },
    Place {
        code: "HK",
        country: "Hong Kong",
        city: "Hong Kong",
        state: None,
        currency: "HKD",
        weight: 7,
    },
];

const TITLE_EXTRAS: &[&str] = &[
    "",
    "",
    "",
    " Full Set",
    " Box & Papers",
    " 2021",
    " B&P",
    " Watch only",
];

fn weighted<T: Copy>(rng: &mut SmallRng, choices: &[(T, u32)]) -> T {
    let total: u32 = choices.iter().map(|(_, w)| w).sum();
    let mut roll = rng.random_range(0..total);
    for (choice, weight) in choices {
        if roll < *weight {
            return *choice;
        }
        roll -= weight;
    }
    choices[choices.len() - 1].0
}

fn weighted_index(rng: &mut SmallRng, weights: impl Iterator<Item = u32> + Clone) -> usize {
    let total: u32 = weights.clone().sum();
    let mut roll = rng.random_range(0..total);
    for (i, weight) in weights.enumerate() {
        if roll < weight {
            return i;
        }
        roll -= weight;
    }
    0
}

/// `reference` as a seller might write it: its letters and digits in order (case aside), split
/// at separators and digit/letter boundaries, joined by another separator. `one_word` keeps it
/// free of spaces (a title word).
pub fn respell(rng: &mut SmallRng, reference: &str, one_word: bool) -> String {
    let mode = rng.random_range(0..10);
    if mode < 3 {
        return reference.to_owned();
    }
    if mode == 3 {
        return reference.to_lowercase();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut previous_digit: Option<bool> = None;
    for c in reference.chars() {
        if !c.is_alphanumeric() {
            previous_digit = None;
            continue;
        }
        let digit = c.is_ascii_digit();
        match parts.last_mut() {
            Some(part) if previous_digit == Some(digit) => part.push(c),
            _ => parts.push(c.to_string()),
        }
        previous_digit = Some(digit);
    }
    let separators: &[&str] = if one_word {
        &["", "-", ".", "/"]
    } else {
        &["", " ", "-", ".", "/"]
    };
    let joined = parts.join(separators[rng.random_range(0..separators.len())]);
    match rng.random_range(0..3) {
        0 => joined.to_lowercase(),
        1 => joined.to_uppercase(),
        _ => joined,
    }
}

/// Models by popularity: a shuffled rank, weights 1/(rank + 20).
struct Popularity {
    by_rank: Vec<usize>,
    cumulative: Vec<f64>,
}

impl Popularity {
    fn new(rng: &mut SmallRng, models: usize) -> Popularity {
        let mut by_rank: Vec<usize> = (0..models).collect();
        for i in (1..by_rank.len()).rev() {
            by_rank.swap(i, rng.random_range(0..=i));
        }
        let mut total = 0.0;
        let cumulative = (0..models)
            .map(|rank| {
                total += 1.0 / (rank as f64 + 20.0);
                total
            })
            .collect();
        Popularity {
            by_rank,
            cumulative,
        }
    }

    fn pick(&self, rng: &mut SmallRng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(0.0);
        let roll = rng.random::<f64>() * total;
        let rank = self
            .cumulative
            .partition_point(|c| *c < roll)
            .min(self.by_rank.len() - 1);
        self.by_rank[rank]
    }
}

/// What a listing is meant to be.
#[derive(Clone, Copy)]
enum Kind {
    /// Brand and reference of this model.
    Named(usize),
    /// This model's reference only in the title.
    TitleOnly(usize),
    UnknownBrand,
    /// A known brand (this model's) with a reference none of its models has.
    UnknownReference(usize),
}

/// Writes `listing.listings` listings over the catalogue `info` into `dir/listings/`, one
/// snapshot per provider of [`PROVIDERS`] (none when there are no listings or no models).
pub fn generate_listings(
    info: &CatalogueInfo,
    shape: &ListingShape,
    seed: u64,
    dir: &Path,
) -> std::io::Result<ListingsGenerated> {
    let mut out = ListingsGenerated::default();
    if shape.listings == 0 || info.models.is_empty() {
        return Ok(out);
    }
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x4c49_5354_494e_4753);
    let listings_dir = dir.join("listings");
    std::fs::create_dir_all(&listings_dir)?;

    // How many models of its brand each normalised reference (primary or alternate) names.
    let mut named: HashMap<(usize, String), usize> = HashMap::new();
    for model in &info.models {
        for reference in std::iter::once(&model.reference).chain(&model.alternates) {
            *named
                .entry((model.brand, normalize_reference(reference)))
                .or_default() += 1;
        }
    }
    let unique =
        |model: &ModelInfo| named[&(model.brand, normalize_reference(&model.reference))] == 1;
    let is_unique: Vec<bool> = info.models.iter().map(unique).collect();
    let ambiguous: Vec<usize> = (0..info.models.len()).filter(|&m| !is_unique[m]).collect();
    let hot = info.models.iter().position(|m| m.brand == 0 && unique(m));

    let popularity = Popularity::new(&mut rng, info.models.len());
    // A popular model whose reference is its own in its brand (ambiguous ones have their own
    // share): re-rolled a few times, since the catalogue repeats some references in a brand.
    let pick = |rng: &mut SmallRng| {
        let mut model = popularity.pick(rng);
        for _ in 0..8 {
            if is_unique[model] {
                break;
            }
            model = popularity.pick(rng);
        }
        model
    };
    // Base asking price in US dollars per model: log-uniform from $300 to $80,000.
    let base_usd: Vec<f64> = (0..info.models.len())
        .map(|_| 300.0 * (80_000.0f64 / 300.0).powf(rng.random::<f64>()))
        .collect();

    let mut writers = PROVIDERS
        .iter()
        .map(|p| File::create(listings_dir.join(format!("{}.jsonl", p.slug))).map(BufWriter::new))
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut per_provider = vec![0usize; PROVIDERS.len()];
    let mut hot_listings = (0, 0);

    for _ in 0..shape.listings {
        let provider = weighted_index(&mut rng, PROVIDERS.iter().map(|p| p.weight));
        per_provider[provider] += 1;
        let spec = &PROVIDERS[provider];
        let source_id = format!("{}{:07}", spec.id_prefix, per_provider[provider]);
        let is_hot = hot.is_some() && rng.random_bool(shape.hot_share);
        let kind = match (is_hot, hot) {
            (true, Some(model)) => Kind::Named(model),
            _ => match rng.random_range(0..100) {
                0..75 => Kind::Named(pick(&mut rng)),
                75..83 => Kind::TitleOnly(pick(&mut rng)),
                83..91 => Kind::UnknownBrand,
                91..98 => Kind::UnknownReference(pick(&mut rng)),
                _ if !ambiguous.is_empty() => {
                    Kind::Named(ambiguous[rng.random_range(0..ambiguous.len())])
                }
                _ => Kind::Named(pick(&mut rng)),
            },
        };
        let mut row = Map::new();
        let mut put = |key: &str, value: Value| {
            row.insert(key.to_owned(), value);
        };
        put("sourceId", source_id.clone().into());
        put(
            "url",
            format!("https://{}.example/listings/{source_id}", spec.slug).into(),
        );
        let extra = TITLE_EXTRAS[rng.random_range(0..TITLE_EXTRAS.len())];
        let base = match kind {
            Kind::Named(m) | Kind::TitleOnly(m) | Kind::UnknownReference(m) => base_usd[m],
            Kind::UnknownBrand => 300.0 * (30_000.0f64 / 300.0).powf(rng.random::<f64>()),
        };
        match kind {
            Kind::Named(m) => {
                let model = &info.models[m];
                let brand = brand_as_written(&mut rng, info, model.brand);
                let reference = respell(&mut rng, &model.reference, false);
                put(
                    "title",
                    format!("{brand} {} {reference}{extra}", model.name).into(),
                );
                put("brand", brand.into());
                put("reference", reference.into());
                if is_unique[m] {
                    out.named += 1;
                } else {
                    out.ambiguous += 1;
                }
            }
            Kind::TitleOnly(m) => {
                let model = &info.models[m];
                let reference = respell(&mut rng, &model.reference, true);
                if rng.random_bool(1.0 / 3.0) {
                    // The brand only in the title too, by its name.
                    let brand = &info.brands[model.brand].name;
                    put(
                        "title",
                        format!("{brand} {} {reference}{extra}", model.name).into(),
                    );
                } else {
                    let brand = brand_as_written(&mut rng, info, model.brand);
                    put(
                        "title",
                        format!("{} Ref. {reference}{extra}", model.name).into(),
                    );
                    put("brand", brand.into());
                }
                if is_unique[m] {
                    out.title_only += 1;
                } else {
                    out.ambiguous += 1;
                }
            }
            Kind::UnknownBrand => {
                let brand = UNKNOWN_BRANDS[rng.random_range(0..UNKNOWN_BRANDS.len())];
                let (style, base) = (
                    style_of(rng.random_range(0..4)),
                    rng.random_range(10_000..999_999),
                );
                let reference = reference(&mut rng, style, base);
                put(
                    "title",
                    format!("{brand} {} {reference}{extra}", title(&mut rng, 2)).into(),
                );
                put("brand", brand.into());
                if rng.random_bool(0.7) {
                    put("reference", reference.into());
                }
                out.unknown_brand += 1;
            }
            Kind::UnknownReference(m) => {
                let model = &info.models[m];
                let brand = brand_as_written(&mut rng, info, model.brand);
                let base = rng.random_range(10_000..999_999);
                let made_up = reference(&mut rng, style_of(model.brand), base);
                let made_up = respell(&mut rng, &made_up, false);
                put(
                    "title",
                    format!("{brand} {} {made_up}{extra}", model.name).into(),
                );
                put("brand", brand.into());
                put("reference", made_up.into());
                out.unknown_reference += 1;
            }
        }
        let place = &PLACES[weighted_index(&mut rng, PLACES.iter().map(|p| p.weight))];
        let currency = if rng.random_bool(0.85) {
            place.currency
        } else {
            CURRENCIES[rng.random_range(0..CURRENCIES.len())].0
        };
        if rng.random_bool(0.08) {
            out.unpriced += 1;
            if rng.random_bool(0.5) {
                put("currency", currency.into());
            }
        } else {
            let per_usd = CURRENCIES
                .iter()
                .find(|(code, _)| *code == currency)
                .map_or(1.0, |(_, rate)| *rate);
            let amount = base * rng.random_range(0.75..1.35) * per_usd;
            let step = match currency {
                "JPY" => 1_000.0,
                "HKD" => 100.0,
                _ if amount < 10_000.0 => 10.0,
                _ => 100.0,
            };
            put(
                "price",
                (((amount / step).round() * step).max(step) as u64).into(),
            );
            put("currency", currency.into());
        }
        if rng.random_bool(0.55) {
            put("year", rng.random_range(1965..=2025).into());
        }
        if let Some(condition) = weighted(&mut rng, CONDITIONS) {
            put("condition", condition.into());
        }
        if let Some(availability) = weighted(&mut rng, AVAILABILITIES) {
            put("availability", availability.into());
        }
        let reserved = rng.random_bool(0.03);
        if reserved {
            put("status", "RESERVED".into());
            out.reserved += 1;
        }
        if rng.random_bool(0.9) {
            put("countryCode", place.code.into());
            put("country", place.country.into());
            put("city", place.city.into());
            if let Some(state) = place.state {
                put("state", state.into());
            }
        }
        if rng.random_bool(0.7) {
            put("boxAvailable", rng.random_bool(0.6).into());
            put("papersAvailable", rng.random_bool(0.5).into());
        }
        let pictures: Vec<Value> = (0..rng.random_range(0..=4))
            .map(|k| format!("https://img.{}.example/{source_id}/{k}.jpg", spec.slug).into())
            .collect();
        if !pictures.is_empty() {
            put("pictures", pictures.into());
        }
        if let (Kind::Named(m) | Kind::TitleOnly(m), Some(hot)) = (kind, hot) {
            if m == hot {
                hot_listings.0 += 1;
                hot_listings.1 += usize::from(!reserved);
            }
        }
        let writer = &mut writers[provider];
        serde_json::to_writer(&mut *writer, &row)?;
        writer.write_all(b"\n")?;
    }
    for writer in &mut writers {
        writer.flush()?;
    }
    out.listings = shape.listings;
    out.per_provider = PROVIDERS
        .iter()
        .zip(per_provider)
        .map(|(p, n)| (p.slug.to_owned(), n))
        .collect();
    out.hot = hot.map(|m| {
        let model = &info.models[m];
        HotModel {
            brand: info.brands[model.brand].slug.clone(),
            model: model.slug.clone(),
            reference: model.reference.clone(),
            listings: hot_listings.0,
            active: hot_listings.1,
        }
    });
    Ok(out)
}

/// The brand `b` as a seller writes it: its name (as is, upper or lower case), alias or slug.
fn brand_as_written(rng: &mut SmallRng, info: &CatalogueInfo, b: usize) -> String {
    let brand = &info.brands[b];
    match rng.random_range(0..20) {
        0..10 => brand.name.clone(),
        10..13 => brand.name.to_uppercase(),
        13..15 => brand.name.to_lowercase(),
        15..18 => brand.alias.clone(),
        _ => brand.slug.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{generate_dataset, CatalogueShape};

    const KEYS: &[&str] = &[
        "sourceId",
        "url",
        "title",
        "brand",
        "reference",
        "price",
        "currency",
        "year",
        "condition",
        "availability",
        "status",
        "countryCode",
        "country",
        "city",
        "state",
        "boxAvailable",
        "papersAvailable",
        "pictures",
    ];

    fn generate(dir: &Path) -> ListingsGenerated {
        let (_, listed) =
            generate_dataset(&CatalogueShape::new(500, 7), &ListingShape::new(3_000), dir)
                .expect("generate");
        listed
    }

    #[test]
    fn listings_are_deterministic_for_a_seed_and_valid_snapshot_lines() {
        let (a, b) = (
            tempfile::tempdir().expect("dir"),
            tempfile::tempdir().expect("dir"),
        );
        let listed = generate(a.path());
        assert_eq!(generate(b.path()), listed);
        assert_eq!(listed.listings, 3_000);
        assert!(listed.hot.is_some());
        let mut lines = 0;
        for provider in &PROVIDERS {
            let file = format!("listings/{}.jsonl", provider.slug);
            let read = |dir: &Path| std::fs::read_to_string(dir.join(&file)).expect("read");
            let text = read(a.path());
            assert_eq!(text, read(b.path()), "{file}");
            let count = text.lines().count();
            assert!(count > 0, "{file} is empty");
            lines += count;
            for line in text.lines() {
                let row: Map<String, Value> = serde_json::from_str(line).expect("a JSON object");
                for key in ["sourceId", "url"] {
                    assert!(
                        row.get(key)
                            .and_then(Value::as_str)
                            .is_some_and(|v| !v.is_empty()),
                        "{key} in {line}"
                    );
                }
                for key in row.keys() {
                    assert!(KEYS.contains(&key.as_str()), "unknown key {key} in {line}");
                }
                if let Some(reference) = row.get("reference").and_then(Value::as_str) {
                    assert!(!normalize_reference(reference).is_empty(), "{line}");
                }
            }
        }
        assert_eq!(lines, listed.listings);
    }

    #[test]
    fn respelling_keeps_letters_and_digits() {
        let mut rng = SmallRng::seed_from_u64(1);
        for reference in ["126610LN", "310.30.42.50.01.001", "SPB143J1", "5711/1A-010"] {
            for _ in 0..50 {
                let respelled = respell(&mut rng, reference, true);
                assert!(!respelled.contains(' '), "{respelled}");
                assert_eq!(
                    normalize_reference(&respelled),
                    normalize_reference(reference)
                );
            }
        }
    }

    #[test]
    fn generated_listings_ingest_and_match_as_meant() {
        use watch_catalogue::app::App;
        use watch_catalogue::data_dir::DataDir;
        use watch_catalogue::jobs::import::{import, DirectorySource};
        use watch_catalogue::jobs::ingest::ingest_dataset_feeds;
        use watch_catalogue::jobs::snapshot_rules::SnapshotRules;
        let dir = tempfile::tempdir().expect("dir");
        let dataset = dir.path().join("dataset");
        let listed = generate(&dataset);
        let app = App::open(&DataDir::new(dir.path().join("data")), 1 << 20).expect("open");
        import(&app.store().write_turn(), &DirectorySource(dataset.clone())).expect("import");
        let feeds = ingest_dataset_feeds(
            &app.store().write_turn(),
            &DirectorySource(dataset),
            &SnapshotRules::default(),
        )
        .expect("ingest");
        assert_eq!(feeds.len(), PROVIDERS.len());
        let created: usize = feeds.iter().map(|(_, r)| r.created).sum();
        let matched: usize = feeds.iter().map(|(_, r)| r.matched).sum();
        assert!(feeds.iter().all(|(_, r)| r.skipped.is_empty()));
        assert_eq!(created, listed.listings);
        // Meant to match: named and title-only listings (a made-up reference may exist).
        let meant = listed.named + listed.title_only;
        assert!(
            matched >= meant && matched <= meant + listed.unknown_reference / 20,
            "{matched} matched, {meant} meant to"
        );
        let hot = listed.hot.expect("hot model");
        let brand = app
            .store()
            .catalogue()
            .brand_by_slug(&watch_catalogue::domain::Slug::parse(&hot.brand).expect("slug"))
            .expect("read")
            .expect("brand");
        let model = app
            .store()
            .catalogue()
            .model_by_slug(
                brand.id,
                &watch_catalogue::domain::Slug::parse(&hot.model).expect("slug"),
            )
            .expect("read")
            .expect("model");
        assert_eq!(
            app.store()
                .listings()
                .listing_count(model.id)
                .expect("count"),
            hot.active as u64
        );
        app.prepare(false).expect("index");
    }
}
