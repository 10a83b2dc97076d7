//! `catalogue-bench`: a deterministic generator of realistic catalogues (long-tailed brand
//! sizes, each brand's reference style, references repeated across brands, alternates, base
//! variants, near-duplicate models at a known rate), written in the dataset-directory format
//! that `watch-catalogue import` reads, and optionally provider snapshots of marketplace
//! listings over it (see [`listings`]).

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
                if rng.random_bool(DUPLICATE_RATE) {
                    let (duplicate, duplicate_info) =
                        near_duplicate(&mut rng, &original, &original_info, m);
                    writeln!(models, "{duplicate}")?;
                    info.models.push(duplicate_info);
                    generated.models += 1;
                    generated.duplicates += 1;
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
    for mut writer in [brands, series, calibers, models] {
        writer.flush()?;
    }
    Ok((generated, info))
}

/// A second entry of `original` (the `m`-th model of its brand): the same watch with its
/// reference respelled (separators and case), its name changed by one letter or the case of a
/// word, its own slug and no pictures.
fn near_duplicate(
    rng: &mut SmallRng,
    original: &serde_json::Value,
    info: &ModelInfo,
    m: usize,
) -> (serde_json::Value, ModelInfo) {
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
    let slug = format!("{}-{}-{m}", slug_of(&name), slug_of(&reference));
    let mut duplicate = original.clone();
    duplicate["slug"] = json!(slug);
    duplicate["name"] = json!(name);
    duplicate["referenceNumber"] = json!(reference);
    duplicate["pictures"] = json!([]);
    let duplicate_info = ModelInfo {
        slug,
        name,
        reference,
        ..info.clone()
    };
    (duplicate, duplicate_info)
}

/// API settings for benchmarks, which send everything from one client: the per-IP rate limit
/// lifted, as docs/operations.md says to.
pub fn unlimited_api() -> watch_catalogue::config::ApiConfig {
    let rate_limit = watch_catalogue::config::RateLimitConfig {
        limit: u32::MAX,
        ..Default::default()
    };
    watch_catalogue::config::ApiConfig {
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

    #[test]
    fn a_generated_catalogue_imports_and_indexes_cleanly() {
        use watch_catalogue::app::App;
        use watch_catalogue::config::DataDir;
        use watch_catalogue::jobs::import::{import, DirectorySource};
        let dir = tempfile::tempdir().expect("dir");
        let counts = generate_catalogue(
            &CatalogueShape {
                models: 1_000,
                seed: 1,
            },
            &dir.path().join("dataset"),
        )
        .expect("generate");
        let app = App::open(&DataDir::new(dir.path().join("data")), 1 << 20).expect("open");
        let report = import(
            &app.store.write_turn(),
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
        let shape = CatalogueShape {
            models: 20_000,
            seed: 3,
        };
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

    #[test]
    fn generation_is_deterministic_for_a_seed() {
        let (a, b) = (
            tempfile::tempdir().expect("dir"),
            tempfile::tempdir().expect("dir"),
        );
        let shape = CatalogueShape {
            models: 500,
            seed: 7,
        };
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
