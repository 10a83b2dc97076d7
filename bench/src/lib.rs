//! `catalogue-bench`: a deterministic generator of realistic catalogues (long-tailed brand
//! sizes, each brand's reference style, references repeated across brands, alternates, base
//! variants, near-duplicate models at a known rate, and on request planted base variants and
//! alternate overlaps), written in the dataset-directory format that `watch-catalogue import`
//! reads with the planted pairs beside (`planted-pairs.jsonl`, see [`PlantedPair`]), and
//! optionally provider snapshots of marketplace listings over it (see [`listings`]).

mod in_process;
pub mod listings;
pub mod load;

pub use in_process::InProcess;
pub use listings::{generate_listings, HotModel, ListingShape, ListingsGenerated};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Shape of a generated catalogue.
#[derive(Debug, Clone)]
pub struct CatalogueShape {
    pub models: usize,
    pub seed: u64,
    /// Share of models planted as a base variant of the model written just before them: its
    /// reference is the original's with another letter suffix, a dial code, a maker's prefix or
    /// another last segment (what `reference_base` drops), in the same brand and series. 0 (the
    /// default) draws nothing, so a seed's catalogue is what it was before these plants.
    pub base_variants: f64,
    /// Share of models planted as an alternate overlap of the model written just before them:
    /// its primary reference is the original's alternate, or its alternate is the original's
    /// primary reference. 0 (the default) draws nothing.
    pub alternate_overlaps: f64,
}

impl CatalogueShape {
    /// `models` models from `seed`, with near-duplicates only (no planted base variants or
    /// alternate overlaps).
    pub fn new(models: usize, seed: u64) -> CatalogueShape {
        CatalogueShape {
            models,
            seed,
            base_variants: 0.0,
            alternate_overlaps: 0.0,
        }
    }
}

/// Counts of what was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generated {
    pub brands: usize,
    pub series: usize,
    pub calibers: usize,
    pub models: usize,
    /// Of the models, near-duplicates of the model written just before them.
    pub duplicates: usize,
    /// Of the models, planted base variants of the model written just before them.
    pub base_variants: usize,
    /// Of the models, planted alternate overlaps with the model written just before them.
    pub alternate_overlaps: usize,
}

impl std::fmt::Display for Generated {
    /// `1000 models (20 near-duplicates, 5 base variants, 3 alternate overlaps) of 12 brands,
    /// 40 series, 40 calibres`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} models ({} near-duplicates, {} base variants, {} alternate overlaps) of {} brands, {} series, {} calibres",
            self.models,
            self.duplicates,
            self.base_variants,
            self.alternate_overlaps,
            self.brands,
            self.series,
            self.calibers
        )
    }
}

/// The file of planted pairs, written beside the dataset's files (`watch-catalogue import`
/// reads only the files it knows).
pub const PLANTED_PAIRS_FILE: &str = "planted-pairs.jsonl";

/// A pair of models the generator planted, one line of [`PLANTED_PAIRS_FILE`]: the original
/// and the model written right after it, in one brand, and the signal the duplicate finder
/// should pair them by (`sameReference`, `alternateOverlap` or `baseVariant`, the API's
/// spelling).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlantedPair {
    pub brand: String,
    pub original: String,
    pub planted: String,
    pub signal: String,
    /// How the planted model's references were made: `respelled` (a near-duplicate),
    /// `letterSuffix`, `dialCode`, `makerPrefix`, `lastSegment` (base variants),
    /// `primaryIsAlternate`, `alternateIsPrimary` (alternate overlaps).
    pub form: String,
    pub original_reference: String,
    pub planted_reference: String,
}

/// Share of models entered twice: a second entry right after the first, in the same brand and
/// series, its reference respelled (same normalised reference) and its name slightly changed,
/// as when two sources describe one watch. What the back office's duplicate finder must find.
pub const DUPLICATE_RATE: f64 = 0.01;

const WORDS: &[&str] = &[
    "aqua",
    "terra",
    "master",
    "diver",
    "chrono",
    "pilot",
    "field",
    "ocean",
    "classic",
    "heritage",
    "date",
    "gmt",
    "moon",
    "phase",
    "racing",
    "marine",
    "explorer",
    "navigator",
    "royal",
    "sport",
    "skeleton",
    "tourbillon",
    "reserve",
    "automatic",
    "regatta",
    "polar",
    "summit",
    "legacy",
    "vintage",
    "titanium",
    "bronze",
    "carbon",
    "steel",
    "gold",
];
const MATERIALS: &[&str] = &[
    "stainless steel",
    "titanium",
    "yellow gold",
    "rose gold",
    "white gold",
    "bronze",
    "ceramic",
    "platinum",
];
const COLORS: &[&str] = &[
    "black",
    "blue",
    "white",
    "silver",
    "green",
    "grey",
    "champagne",
    "brown",
];

/// How a brand writes its references.
#[derive(Clone, Copy)]
pub(crate) enum ReferenceStyle {
    /// `126610LN`: digits and a letter suffix.
    DigitsSuffix,
    /// `310.30.42.50.01.001`: dotted groups.
    Dotted,
    /// `SPB143J1`: letters, digits, a market code.
    LettersDigits,
    /// `5711/1A-010`: slash and dash.
    Slashed,
}

/// The reference style of the brand generated `b`-th.
pub(crate) fn style_of(b: usize) -> ReferenceStyle {
    [
        ReferenceStyle::DigitsSuffix,
        ReferenceStyle::Dotted,
        ReferenceStyle::LettersDigits,
        ReferenceStyle::Slashed,
    ][b % 4]
}

pub(crate) fn reference(rng: &mut SmallRng, style: ReferenceStyle, base: u32) -> String {
    match style {
        ReferenceStyle::DigitsSuffix => {
            let suffixes = ["LN", "LV", "BLRO", "BLNR", "N", "M", ""];
            format!("{base}{}", suffixes[rng.random_range(0..suffixes.len())])
        }
        ReferenceStyle::Dotted => format!(
            "{}.{}.{}.{}.{:02}.{:03}",
            base % 1000,
            rng.random_range(10..40),
            rng.random_range(36..46),
            rng.random_range(10..60),
            rng.random_range(1..12),
            rng.random_range(1..20)
        ),
        ReferenceStyle::LettersDigits => {
            let letters: String = (0..3)
                .map(|_| rng.random_range(b'A'..=b'Z') as char)
                .collect();
            format!("{letters}{}J1", base % 1000)
        }
        ReferenceStyle::Slashed => format!(
            "{}/{}A-{:03}",
            base % 10000,
            rng.random_range(1..3),
            rng.random_range(1..30)
        ),
    }
}

fn slug_of(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

pub(crate) fn title(rng: &mut SmallRng, words: usize) -> String {
    (0..words)
        .map(|_| {
            let w = WORDS[rng.random_range(0..WORDS.len())];
            format!("{}{}", w[..1].to_uppercase(), &w[1..])
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A generated brand, as listings name it.
#[derive(Debug, Clone)]
pub struct BrandInfo {
    pub slug: String,
    pub name: String,
    pub alias: String,
}

/// A generated model, as listings name it.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    /// Index into [`CatalogueInfo::brands`].
    pub brand: usize,
    pub slug: String,
    pub name: String,
    pub reference: String,
    pub alternates: Vec<String>,
}

/// What was generated, for generating listings over it.
#[derive(Debug, Clone, Default)]
pub struct CatalogueInfo {
    /// The brands that have models (not the movement makers), in generation order.
    pub brands: Vec<BrandInfo>,
    pub models: Vec<ModelInfo>,
}

/// Writes a catalogue of `shape` into `dir` (created if needed).
pub fn generate_catalogue(shape: &CatalogueShape, dir: &Path) -> std::io::Result<Generated> {
    write_catalogue(shape, dir).map(|(generated, _)| generated)
}

/// Writes a catalogue of `shape` and `listings.listings` listings over it (in
/// `listings/provider-N.jsonl`, see [`generate_listings`]) into `dir`.
pub fn generate_dataset(
    shape: &CatalogueShape,
    listings: &ListingShape,
    dir: &Path,
) -> std::io::Result<(Generated, ListingsGenerated)> {
    let (generated, info) = write_catalogue(shape, dir)?;
    let listed = generate_listings(&info, listings, shape.seed, dir)?;
    Ok((generated, listed))
}

/// The ECB reference rates of 2025-05-09 (the bundled fixture's), so listing prices convert.
const RATES_XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">
	<gesmes:subject>Reference rates</gesmes:subject>
	<gesmes:Sender>
		<gesmes:name>European Central Bank</gesmes:name>
	</gesmes:Sender>
	<Cube>
		<Cube time='2025-05-09'>
			<Cube currency='USD' rate='1.1252'/>
			<Cube currency='JPY' rate='163.36'/>
			<Cube currency='GBP' rate='0.84770'/>
			<Cube currency='CHF' rate='0.9353'/>
			<Cube currency='HKD' rate='8.7519'/>
			<Cube currency='SEK' rate='10.9200'/>
			<Cube currency='AUD' rate='1.7572'/>
			<Cube currency='CAD' rate='1.5658'/>
			<Cube currency='SGD' rate='1.4600'/>
		</Cube>
	</Cube>
</gesmes:Envelope>
"#;

fn write_catalogue(
    shape: &CatalogueShape,
    dir: &Path,
) -> std::io::Result<(Generated, CatalogueInfo)> {
    std::fs::create_dir_all(dir)?;
    let mut info = CatalogueInfo::default();
    let mut rng = SmallRng::seed_from_u64(shape.seed);
    // Brand count grows slowly with the catalogue; sizes follow a long tail (Zipf-like).
    let brand_count = (shape.models / 400).clamp(5, 2_000);
    let weights: Vec<f64> = (1..=brand_count).map(|rank| 1.0 / rank as f64).collect();
    let total_weight: f64 = weights.iter().sum();
    let mut sizes: Vec<usize> = weights
        .iter()
        .map(|w| ((w / total_weight) * shape.models as f64) as usize)
        .collect();
    let assigned: usize = sizes.iter().sum();
    sizes[0] += shape.models - assigned;

    let mut brands = BufWriter::new(File::create(dir.join("brands.jsonl"))?);
    let mut series = BufWriter::new(File::create(dir.join("series.jsonl"))?);
    let mut calibers = BufWriter::new(File::create(dir.join("calibers.jsonl"))?);
    let mut models = BufWriter::new(File::create(dir.join("models.jsonl"))?);
    let mut planted = BufWriter::new(File::create(dir.join(PLANTED_PAIRS_FILE))?);
    std::fs::write(dir.join("complications.jsonl"), "{\"slug\":\"date\",\"name\":\"Date\"}\n{\"slug\":\"chronograph\",\"name\":\"Chronograph\"}\n")?;
    let providers: String = listings::PROVIDERS
        .iter()
        .map(|p| {
            format!(
                "{}\n",
                json!({"slug": p.slug, "name": p.name, "url": format!("https://{}.example", p.slug)})
            )
        })
        .collect();
    std::fs::write(dir.join("providers.jsonl"), providers)?;
    std::fs::write(dir.join("rates.xml"), RATES_XML)?;

    // Two movement makers whose calibres many brands run.
    let makers = ["maker-eta", "maker-sellita"];
    let mut generated = Generated {
        brands: 0,
        series: 0,
        calibers: 0,
        models: 0,
        duplicates: 0,
        base_variants: 0,
        alternate_overlaps: 0,
    };
    for (i, maker) in makers.iter().enumerate() {
        writeln!(
            brands,
            "{}",
            json!({"slug": maker, "name": format!("Maker {}", i + 1)})
        )?;
        for c in 0..20 {
            writeln!(
                calibers,
                "{}",
                json!({"slug": format!("m{c}"), "brand": maker, "reference": format!("M{c}-{}", i + 1), "type": "automatic", "frequency": 28800, "complications": ["date"]})
            )?;
            generated.calibers += 1;
        }
        generated.brands += 1;
    }
    // A pool of bases shared across brands, so the same reference appears in several brands.
    let shared_bases: Vec<u32> = (0..200).map(|_| rng.random_range(10_000..99_999)).collect();
    for (b, size) in sizes.iter().enumerate() {
        let brand = format!("brand-{b}");
        let style = style_of(b);
        let name = format!("{} {b}", title(&mut rng, 1));
        info.brands.push(BrandInfo {
            slug: brand.clone(),
            name: name.clone(),
            alias: format!("B{b}"),
        });
        let rank = (b < 6).then_some(b + 1);
        writeln!(
            brands,
            "{}",
            json!({"slug": brand, "name": name, "aliases": [format!("B{b}")], "highlightRank": rank, "description": format!("{} watches since {}.", name, 1800 + b % 200)})
        )?;
        generated.brands += 1;
        let series_count = (size / 40).max(1);
        for s in 0..series_count {
            writeln!(
                series,
                "{}",
                json!({"slug": format!("s{s}"), "brand": brand, "name": title(&mut rng, 2)})
            )?;
        }
        generated.series += series_count;
        let own_calibers = (size / 200).clamp(1, 50);
        for c in 0..own_calibers {
            let parent = (c % 3 == 0).then(|| format!("{}/m{}", makers[c % 2], c % 20));
            writeln!(
                calibers,
                "{}",
                json!({"slug": format!("c{c}"), "brand": brand, "reference": format!("C{c}"), "parent": parent, "type": "automatic", "powerReserve": 38 + c % 40})
            )?;
        }
        generated.calibers += own_calibers;
        let mut base = rng.random_range(10_000..99_999u32);
        let mut previous: Option<(serde_json::Value, ModelInfo)> = None;
        for m in 0..*size {
            if let Some((original, original_info)) = previous.take() {
                // Each draw only when its rate is set, so that a seed's catalogue without
                // these plants is what it always was.
                let plant = if rng.random_bool(DUPLICATE_RATE) {
                    Some(near_duplicate(&mut rng, &original, &original_info, m))
                } else if shape.base_variants > 0.0 && rng.random_bool(shape.base_variants) {
                    base_variant(&mut rng, style, &original, &original_info, m)
                } else if shape.alternate_overlaps > 0.0
                    && rng.random_bool(shape.alternate_overlaps)
                {
                    Some(alternate_overlap(
                        &mut rng,
                        style,
                        &original,
                        &original_info,
                        m,
                    ))
                } else {
                    None
                };
                if let Some(plant) = plant {
                    writeln!(models, "{}", plant.model)?;
                    writeln!(
                        planted,
                        "{}",
                        serde_json::to_string(&PlantedPair {
                            brand: brand.clone(),
                            original: original_info.slug.clone(),
                            planted: plant.info.slug.clone(),
                            signal: plant.signal.into(),
                            form: plant.form.into(),
                            original_reference: original_info.reference.clone(),
                            planted_reference: plant.info.reference.clone(),
                        })?
                    )?;
                    info.models.push(plant.info);
                    generated.models += 1;
                    *match plant.signal {
                        "sameReference" => &mut generated.duplicates,
                        "baseVariant" => &mut generated.base_variants,
                        _ => &mut generated.alternate_overlaps,
                    } += 1;
                    continue;
                }
            }
            // Base variants: a few models in a row share a base with different suffixes.
            if m % 3 == 0 {
                base = if rng.random_bool(0.02) {
                    shared_bases[rng.random_range(0..shared_bases.len())]
                } else {
                    rng.random_range(10_000..999_999)
                };
            }
            let reference_number = reference(&mut rng, style, base);
            let model_name = title(&mut rng, 2);
            let caliber = match rng.random_range(0..10) {
                0 => None,
                1..=3 => Some(format!("{}/m{}", makers[m % 2], rng.random_range(0..20))),
                _ => Some(format!("{brand}/c{}", rng.random_range(0..own_calibers))),
            };
            let alternates: Vec<String> = if rng.random_bool(0.1) {
                vec![format!("{reference_number}-0001")]
            } else {
                vec![]
            };
            let water_resistance = [30, 50, 100, 200, 300][m % 5];
            let picture = rng.random_bool(0.9).then(|| json!([{"url": format!("https://cdn.example/{brand}/{m}/front.jpg"), "type": "FRONT"}]));
            let slug = format!(
                "{}-{}-{m}",
                slug_of(&model_name),
                slug_of(&reference_number)
            );
            let model_info = ModelInfo {
                brand: b,
                slug: slug.clone(),
                name: model_name.clone(),
                reference: reference_number.clone(),
                alternates: alternates.clone(),
            };
            let model = json!({
                    "slug": slug,
                    "brand": brand,
                    "series": format!("s{}", m % series_count),
                    "name": model_name,
                    "referenceNumber": reference_number,
                    "alternateReferences": alternates,
                    "caliber": caliber,
                    "description": format!("{} with a {} dial.", title(&mut rng, 3), COLORS[m % COLORS.len()]),
                    "releaseYear": rng.random_bool(0.85).then(|| rng.random_range(1950..2026)),
                    "diameter": rng.random_bool(0.9).then(|| f64::from(rng.random_range(340..460u32)) / 10.0),
                    "caseMaterials": [MATERIALS[rng.random_range(0..MATERIALS.len())]],
                    "dialColors": [COLORS[rng.random_range(0..COLORS.len())]],
                    "waterResistance": water_resistance,
                    "pictures": picture.unwrap_or_else(|| json!([])),
            });
            writeln!(models, "{model}")?;
            info.models.push(model_info.clone());
            generated.models += 1;
            previous = Some((model, model_info));
        }
    }
    for mut writer in [brands, series, calibers, models, planted] {
        writer.flush()?;
    }
    Ok((generated, info))
}

/// A model planted right after its original, and what the finder should pair them by.
struct Plant {
    model: serde_json::Value,
    info: ModelInfo,
    signal: &'static str,
    form: &'static str,
}

/// `original` as another model: `slug`, `name` and references replaced, no pictures.
fn planted_copy(
    original: &serde_json::Value,
    info: &ModelInfo,
    name: String,
    reference: String,
    alternates: Vec<String>,
    m: usize,
) -> (serde_json::Value, ModelInfo) {
    let slug = format!("{}-{}-{m}", slug_of(&name), slug_of(&reference));
    let mut model = original.clone();
    model["slug"] = json!(slug);
    model["name"] = json!(name);
    model["referenceNumber"] = json!(reference);
    model["alternateReferences"] = json!(alternates);
    model["pictures"] = json!([]);
    let model_info = ModelInfo {
        slug,
        name,
        reference,
        alternates,
        ..info.clone()
    };
    (model, model_info)
}

/// A second entry of `original` (the `m`-th model of its brand): the same watch with its
/// reference respelled (separators and case), its name changed by one letter or the case of a
/// word, its own slug and no pictures. Its alternates are the original's.
fn near_duplicate(
    rng: &mut SmallRng,
    original: &serde_json::Value,
    info: &ModelInfo,
    m: usize,
) -> Plant {
    let reference = if rng.random_bool(0.5) {
        load::respell_dashed(&info.reference).to_uppercase()
    } else {
        load::respell_compact(&info.reference)
    };
    let name = if rng.random_bool(0.5) {
        info.name.to_uppercase()
    } else {
        let mut chars: Vec<char> = info.name.chars().collect();
        let at = rng.random_range(1..chars.len());
        chars.remove(at);
        chars.into_iter().collect()
    };
    let (model, info) = planted_copy(original, info, name, reference, info.alternates.clone(), m);
    Plant {
        model,
        info,
        signal: "sameReference",
        form: "respelled",
    }
}

/// Letter suffixes of [`ReferenceStyle::DigitsSuffix`] references, and a few more.
const SUFFIXES: &[&str] = &["LN", "LV", "BLRO", "BLNR", "N", "M", "", "V", "A", "NR"];

/// A variant of `original` (the `m`-th model of its brand, in `style`): the reference the
/// original's base plus another variant part, so that the two share a `reference_base` and
/// differ as references; the original's name with a dial colour, no alternates (the
/// original's `-0001` alternate would make the pair an alternate overlap). `None` when the
/// original's reference has no base (too short), like `ABC7J1`: nothing to plant.
fn base_variant(
    rng: &mut SmallRng,
    style: ReferenceStyle,
    original: &serde_json::Value,
    info: &ModelInfo,
    m: usize,
) -> Option<Plant> {
    watch_catalogue::domain::reference_base(&info.reference)?;
    let reference = &info.reference;
    // A dial code never `-0001`, the generator's alternate.
    let dial_code = |rng: &mut SmallRng| format!("{reference}-{:04}", rng.random_range(2..100));
    let (form, variant) = match style {
        ReferenceStyle::DigitsSuffix => match rng.random_range(0..3) {
            0 => {
                let digits = reference.trim_end_matches(|c: char| c.is_ascii_alphabetic());
                let suffix = &reference[digits.len()..];
                let others: Vec<&&str> = SUFFIXES.iter().filter(|s| **s != suffix).collect();
                let other = others[rng.random_range(0..others.len())];
                ("letterSuffix", format!("{digits}{other}"))
            }
            1 => ("dialCode", dial_code(rng)),
            _ => ("makerPrefix", format!("M{reference}")),
        },
        ReferenceStyle::Dotted => {
            // `310.30.42.50.01.001`: another last group.
            let (head, last) = reference.rsplit_once('.')?;
            let last: u32 = last.parse().ok()?;
            let other = (last + rng.random_range(1..999)) % 1000;
            ("lastSegment", format!("{head}.{other:03}"))
        }
        ReferenceStyle::LettersDigits => {
            if rng.random_bool(0.5) {
                let letter = rng.random_range(b'A'..=b'Z') as char;
                ("letterSuffix", format!("{reference}{letter}"))
            } else {
                ("dialCode", dial_code(rng))
            }
        }
        ReferenceStyle::Slashed => {
            // `5711/1A-010`: another dial code, or another letter before it.
            let (head, code) = reference.rsplit_once('-')?;
            if rng.random_bool(0.5) {
                let code: u32 = code.parse().ok()?;
                let other = (code + rng.random_range(1..999)) % 1000;
                ("lastSegment", format!("{head}-{other:03}"))
            } else {
                let stem = head.trim_end_matches(|c: char| c.is_ascii_alphabetic());
                let letter = ['G', 'R', 'J', 'P'][rng.random_range(0..4)];
                ("letterSuffix", format!("{stem}{letter}-{code}"))
            }
        }
    };
    let color = COLORS[rng.random_range(0..COLORS.len())];
    let name = format!("{} {}{}", info.name, color[..1].to_uppercase(), &color[1..]);
    let (model, info) = planted_copy(original, info, name, variant, Vec::new(), m);
    Some(Plant {
        model,
        info,
        signal: "baseVariant",
        form,
    })
}

/// A model that shares a reference with `original` (the `m`-th model of its brand, in
/// `style`) where one of the two is an alternate: its primary reference is the original's
/// alternate when it has one (a tenth of models do), else it lists the original's primary
/// reference as its alternate and has a primary of its own. Same name as the original: two sources
/// describing one watch by different references.
fn alternate_overlap(
    rng: &mut SmallRng,
    style: ReferenceStyle,
    original: &serde_json::Value,
    info: &ModelInfo,
    m: usize,
) -> Plant {
    let (form, reference, alternates) = match info.alternates.first() {
        Some(alternate) => ("primaryIsAlternate", alternate.clone(), Vec::new()),
        _ => {
            let base = rng.random_range(10_000..999_999);
            let own = reference(rng, style, base);
            ("alternateIsPrimary", own, vec![info.reference.clone()])
        }
    };
    let (model, info) = planted_copy(original, info, info.name.clone(), reference, alternates, m);
    Plant {
        model,
        info,
        signal: "alternateOverlap",
        form,
    }
}

/// API settings for benchmarks, which send everything from one client: the per-IP rate limit
/// lifted, as docs/operations.md says to.
pub fn unlimited_api() -> watch_catalogue::api::config::ApiConfig {
    let rate_limit = watch_catalogue::api::config::RateLimitConfig {
        limit: u32::MAX,
        ..Default::default()
    };
    watch_catalogue::api::config::ApiConfig {
        rate_limit,
        ..Default::default()
    }
}

/// A query-string value, percent-encoded (everything but unreserved characters).
pub fn query_value(value: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn a_generated_catalogue_imports_and_indexes_cleanly() {
        use watch_catalogue::app::App;
        use watch_catalogue::data_dir::DataDir;
        use watch_catalogue::jobs::import::{import, DirectorySource};
        let dir = tempfile::tempdir().expect("dir");
        let counts =
            generate_catalogue(&CatalogueShape::new(1_000, 1), &dir.path().join("dataset"))
                .expect("generate");
        let app = App::open(&DataDir::new(dir.path().join("data")), 1 << 20).expect("open");
        let report = import(
            &app.store().write_turn(),
            &DirectorySource(dir.path().join("dataset")),
        )
        .expect("the generated dataset is valid");
        assert!(report
            .kinds
            .iter()
            .any(|(kind, c)| *kind == "models" && c.created == counts.models));
        app.prepare(false).expect("index");
        assert!(app.index_is_current().expect("current"));
    }

    #[test]
    fn near_duplicates_come_at_the_known_rate_right_after_their_original() {
        use watch_catalogue::domain::normalize_reference;
        let dir = tempfile::tempdir().expect("dir");
        let shape = CatalogueShape::new(20_000, 3);
        let (counts, info) = write_catalogue(&shape, dir.path()).expect("generate");
        let rate = counts.duplicates as f64 / counts.models as f64;
        assert!(
            (rate - DUPLICATE_RATE).abs() < DUPLICATE_RATE * 0.25,
            "{} duplicates of {} models",
            counts.duplicates,
            counts.models
        );
        let lines = std::fs::read_to_string(dir.path().join("models.jsonl")).expect("read");
        let models: Vec<serde_json::Value> = lines
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        let mut found = 0;
        for (pair, infos) in models.windows(2).zip(info.models.windows(2)) {
            let (first, second) = (&pair[0], &pair[1]);
            let reference = |m: &serde_json::Value| {
                normalize_reference(m["referenceNumber"].as_str().expect("reference"))
            };
            let same_reference = reference(first) == reference(second);
            if same_reference
                && first["brand"] == second["brand"]
                && first["series"] == second["series"]
                && first["description"] == second["description"]
                && first["name"] != second["name"]
            {
                found += 1;
                assert_ne!(first["slug"], second["slug"]);
                assert_eq!(infos[1].reference, second["referenceNumber"]);
            }
        }
        assert_eq!(
            found, counts.duplicates,
            "each duplicate follows its original"
        );
    }

    fn planted_pairs(dir: &Path) -> Vec<PlantedPair> {
        std::fs::read_to_string(dir.join(PLANTED_PAIRS_FILE))
            .expect("read")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect()
    }

    #[test]
    fn base_variants_and_alternate_overlaps_are_planted_at_their_rates_with_their_pairs() {
        use watch_catalogue::domain::{normalize_reference, reference_base};
        let dir = tempfile::tempdir().expect("dir");
        let shape = CatalogueShape {
            base_variants: 0.02,
            alternate_overlaps: 0.03,
            ..CatalogueShape::new(40_000, 5)
        };
        let (counts, info) = write_catalogue(&shape, dir.path()).expect("generate");
        // A plant needs an original just before it (not itself a plant), and a base variant
        // an original whose reference has a base.
        for (planted, rate) in [
            (counts.base_variants, shape.base_variants),
            (counts.alternate_overlaps, shape.alternate_overlaps),
            (counts.duplicates, DUPLICATE_RATE),
        ] {
            let share = planted as f64 / counts.models as f64;
            assert!(
                share > rate * 0.75 && share < rate * 1.1,
                "{planted} of {} models at rate {rate}",
                counts.models
            );
        }
        let pairs = planted_pairs(dir.path());
        assert_eq!(
            pairs.len(),
            counts.duplicates + counts.base_variants + counts.alternate_overlaps
        );
        let by_slug: HashMap<&str, &ModelInfo> =
            info.models.iter().map(|m| (m.slug.as_str(), m)).collect();
        let mut forms = std::collections::BTreeSet::new();
        for pair in &pairs {
            let (a, b) = (
                by_slug[pair.original.as_str()],
                by_slug[pair.planted.as_str()],
            );
            assert_eq!(a.brand, b.brand);
            assert_eq!(info.brands[a.brand].slug, pair.brand);
            assert_eq!(
                (&a.reference, &b.reference),
                (&pair.original_reference, &pair.planted_reference)
            );
            let references = |m: &ModelInfo| -> Vec<String> {
                std::iter::once(&m.reference)
                    .chain(&m.alternates)
                    .map(|r| normalize_reference(r))
                    .collect()
            };
            let shared = references(a).iter().any(|r| references(b).contains(r));
            let same_primary =
                normalize_reference(&a.reference) == normalize_reference(&b.reference);
            match pair.signal.as_str() {
                "sameReference" => assert!(same_primary, "{pair:?}"),
                "alternateOverlap" => assert!(shared && !same_primary, "{pair:?}"),
                "baseVariant" => {
                    assert!(!shared, "{pair:?}");
                    let base = reference_base(&a.reference);
                    assert!(base.is_some(), "{pair:?}");
                    assert_eq!(reference_base(&b.reference), base, "{pair:?}");
                }
                other => panic!("signal {other}"),
            }
            forms.insert(pair.form.clone());
        }
        assert_eq!(
            forms.into_iter().collect::<Vec<_>>(),
            [
                "alternateIsPrimary",
                "dialCode",
                "lastSegment",
                "letterSuffix",
                "makerPrefix",
                "primaryIsAlternate",
                "respelled"
            ]
        );
    }

    #[test]
    fn the_duplicate_finder_pairs_every_planted_pair_by_its_signal() {
        use watch_catalogue::app::App;
        use watch_catalogue::data_dir::DataDir;
        use watch_catalogue::domain::Slug;
        use watch_catalogue::jobs::duplicates;
        use watch_catalogue::jobs::import::{import, DirectorySource};
        let dir = tempfile::tempdir().expect("dir");
        let dataset = dir.path().join("dataset");
        let shape = CatalogueShape {
            base_variants: 0.03,
            alternate_overlaps: 0.03,
            ..CatalogueShape::new(4_000, 11)
        };
        generate_catalogue(&shape, &dataset).expect("generate");
        let app = App::open(&DataDir::new(dir.path().join("data")), 1 << 20).expect("open");
        import(&app.store().write_turn(), &DirectorySource(dataset.clone())).expect("import");
        app.writer().run(duplicates::rebuild).expect("rebuild");
        let signals: HashMap<_, _> = app
            .store()
            .duplicates()
            .duplicate_pairs()
            .expect("pairs")
            .into_iter()
            .map(|p| ((p.a, p.b), p.signal))
            .collect();
        let groups = duplicates::groups(app.store()).expect("groups");
        let pairs = planted_pairs(&dataset);
        assert!(pairs.len() > 150, "{}", pairs.len());
        for pair in pairs {
            let store = app.store();
            let brand = store
                .catalogue()
                .brand_by_slug(&Slug::parse(&pair.brand).expect("slug"))
                .expect("read")
                .expect("brand");
            let id = |slug: &str| {
                store
                    .catalogue()
                    .model_by_slug(brand.id, &Slug::parse(slug).expect("slug"))
                    .expect("read")
                    .expect("model")
                    .id
            };
            let (a, b) = (id(&pair.original), id(&pair.planted));
            let signal = signals.get(&(a.min(b), a.max(b)));
            assert_eq!(
                signal.map(|s| s.as_str()),
                Some(pair.signal.as_str()),
                "{pair:?}"
            );
            assert!(
                groups
                    .iter()
                    .any(|g| g.models.contains(&a) && g.models.contains(&b)),
                "{pair:?}"
            );
        }
    }

    #[test]
    fn generation_is_deterministic_for_a_seed() {
        let (a, b) = (
            tempfile::tempdir().expect("dir"),
            tempfile::tempdir().expect("dir"),
        );
        let shape = CatalogueShape::new(500, 7);
        let counts = generate_catalogue(&shape, a.path()).expect("generate");
        generate_catalogue(&shape, b.path()).expect("generate");
        assert_eq!(counts.models, 500);
        for file in [
            "brands.jsonl",
            "series.jsonl",
            "calibers.jsonl",
            "models.jsonl",
        ] {
            let read = |dir: &Path| std::fs::read(dir.join(file)).expect("read");
            assert_eq!(read(a.path()), read(b.path()), "{file}");
        }
    }
}
