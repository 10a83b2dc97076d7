//! `catalogue-bench duplicates-recall`: how many of the generator's planted pairs
//! (`planted-pairs.jsonl`) the duplicate finder found in a data dir, read through
//! `watch_catalogue::jobs::duplicates::groups`, the function `GET /duplicate-models` pages
//! through, and through the stored pairs; and what it found beyond them.

use anyhow::Context;
use catalogue_bench::PlantedPair;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::domain::{BrandId, DuplicateSignal, ModelId, Slug};
use watch_catalogue::jobs::duplicates;
use watch_catalogue::store::Store;

#[derive(clap::Args)]
pub struct RecallConfig {
    /// The data dir (holding `store/`); stop the server on it first (sled locks it).
    #[arg(long)]
    data_dir: PathBuf,
    /// The generator's planted pairs.
    #[arg(long)]
    planted: PathBuf,
    /// Write this many planted sameReference pairs whose group is just the two of them, as
    /// `KEEPER_ID DUPLICATE_ID BRAND_SLUG` lines, for timing merges.
    #[arg(long)]
    candidates: Option<PathBuf>,
    #[arg(long, default_value_t = 5)]
    candidate_count: usize,
    /// Also write the figures as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Recall of one planted signal (or one form of it).
#[derive(Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Recall {
    planted: usize,
    /// Either model not in the store (should be none).
    missing: usize,
    /// A stored pair joins them, by any signal.
    paired: usize,
    /// ... by the planted signal.
    paired_as_planted: usize,
    /// Found by another signal: signal -> count.
    paired_as_other: BTreeMap<String, usize>,
    /// Both models in one group of `groups()`.
    same_group: usize,
    /// The kind of that group: kind -> count.
    group_kinds: BTreeMap<String, usize>,
    /// Sizes of those groups: size bucket -> count.
    group_sizes: BTreeMap<String, usize>,
}

#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    duplicates_generation: u64,
    pairs_scan_secs: f64,
    groups_secs: f64,
    pairs: usize,
    groups: usize,
    recall: BTreeMap<String, Recall>,
    recall_by_form: BTreeMap<String, Recall>,
    /// Stored pairs by signal: all of them, and those that are no planted pair.
    pairs_by_signal: BTreeMap<String, (usize, usize)>,
    /// Groups by kind: all of them, and those without a planted pair.
    groups_by_kind: BTreeMap<String, (usize, usize)>,
    group_sizes: BTreeMap<String, usize>,
    largest_groups: Vec<String>,
}

fn size_bucket(size: usize) -> String {
    match size {
        0..=2 => "2".into(),
        3 => "3".into(),
        4..=5 => "4-5".into(),
        6..=10 => "6-10".into(),
        11..=50 => "11-50".into(),
        51..=500 => "51-500".into(),
        _ => "501+".into(),
    }
}

pub fn run(config: &RecallConfig) -> anyhow::Result<()> {
    let data = DataDir::new(&config.data_dir);
    let store = Store::open(&data.store(), 256 << 20)
        .with_context(|| format!("opening {}", data.store().display()))?;
    // Bumped by every write that changed pairs; a full pass that finds what is stored should
    // leave it as it is.
    let generation = store.duplicates().duplicates_generation()?.0;
    let started = Instant::now();
    let pairs = store.duplicates().duplicate_pairs()?;
    let pairs_scan_secs = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let groups = duplicates::groups(&store)?;
    let groups_secs = started.elapsed().as_secs_f64();
    eprintln!(
        "duplicate_pairs(): {} pairs in {pairs_scan_secs:.2} s; groups(): {} groups in {groups_secs:.2} s; duplicates generation {generation}",
        pairs.len(),
        groups.len()
    );
    let signal_of: HashMap<(ModelId, ModelId), DuplicateSignal> =
        pairs.iter().map(|p| ((p.a, p.b), p.signal)).collect();
    let mut group_of: HashMap<ModelId, usize> = HashMap::new();
    for (at, group) in groups.iter().enumerate() {
        for &id in &group.models {
            group_of.insert(id, at);
        }
    }

    let planted = read_planted(&config.planted)?;
    let mut brands: HashMap<String, Option<BrandId>> = HashMap::new();
    let mut recall: BTreeMap<String, Recall> = BTreeMap::new();
    let mut by_form: BTreeMap<String, Recall> = BTreeMap::new();
    let mut planted_keys: HashMap<(ModelId, ModelId), ()> = HashMap::new();
    let mut groups_with_planted = vec![false; groups.len()];
    let mut candidates = Vec::new();
    for pair in &planted {
        let brand = match brands.get(&pair.brand) {
            Some(brand) => *brand,
            None => {
                let found = store
                    .catalogue()
                    .brand_by_slug(&Slug::parse(&pair.brand)?)?
                    .map(|b| b.id);
                brands.insert(pair.brand.clone(), found);
                found
            }
        };
        let model = |slug: &str| -> anyhow::Result<Option<ModelId>> {
            Ok(match brand {
                Some(brand) => store
                    .catalogue()
                    .model_by_slug(brand, &Slug::parse(slug)?)?
                    .map(|m| m.id),
                None => None,
            })
        };
        let ids = (model(&pair.original)?, model(&pair.planted)?);
        for tally in [
            recall.entry(pair.signal.clone()).or_default(),
            by_form
                .entry(format!("{} / {}", pair.signal, pair.form))
                .or_default(),
        ] {
            tally.planted += 1;
            let (Some(a), Some(b)) = ids else {
                tally.missing += 1;
                continue;
            };
            let key = (a.min(b), a.max(b));
            planted_keys.insert(key, ());
            if let Some(signal) = signal_of.get(&key) {
                tally.paired += 1;
                if signal.as_str() == pair.signal {
                    tally.paired_as_planted += 1;
                } else {
                    *tally
                        .paired_as_other
                        .entry(signal.as_str().into())
                        .or_default() += 1;
                }
            }
            if let (Some(ga), Some(gb)) = (group_of.get(&a), group_of.get(&b)) {
                if ga == gb {
                    tally.same_group += 1;
                    groups_with_planted[*ga] = true;
                    let group = &groups[*ga];
                    *tally
                        .group_kinds
                        .entry(group.kind.as_str().into())
                        .or_default() += 1;
                    *tally
                        .group_sizes
                        .entry(size_bucket(group.models.len()))
                        .or_default() += 1;
                }
            }
        }
        if let (Some(a), Some(b)) = ids {
            let two = group_of
                .get(&a)
                .is_some_and(|g| groups[*g].models.len() == 2 && group_of.get(&b) == Some(g));
            if pair.signal == "sameReference" && two && candidates.len() < config.candidate_count {
                candidates.push(format!("{a} {b} {}", pair.brand));
            }
        }
    }

    let mut pairs_by_signal: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for pair in &pairs {
        let entry = pairs_by_signal
            .entry(pair.signal.as_str().into())
            .or_default();
        entry.0 += 1;
        if !planted_keys.contains_key(&(pair.a, pair.b)) {
            entry.1 += 1;
        }
    }
    let mut groups_by_kind: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut group_sizes: BTreeMap<String, usize> = BTreeMap::new();
    for (group, with_planted) in groups.iter().zip(&groups_with_planted) {
        let entry = groups_by_kind
            .entry(group.kind.as_str().into())
            .or_default();
        entry.0 += 1;
        if !with_planted {
            entry.1 += 1;
        }
        *group_sizes
            .entry(size_bucket(group.models.len()))
            .or_default() += 1;
    }
    let mut largest: Vec<&duplicates::Group> = groups.iter().map(|g| &**g).collect();
    largest.sort_by_key(|g| std::cmp::Reverse(g.models.len()));
    let largest_groups = largest
        .iter()
        .take(5)
        .map(|g| {
            format!(
                "{} models, {}, brand {:?}, oldest reference {}",
                g.models.len(),
                g.kind.as_str(),
                g.brand_name,
                g.reference
            )
        })
        .collect();
    let report = Report {
        duplicates_generation: generation,
        pairs_scan_secs,
        groups_secs,
        pairs: pairs.len(),
        groups: groups.len(),
        recall,
        recall_by_form: by_form,
        pairs_by_signal,
        groups_by_kind,
        group_sizes,
        largest_groups,
    };
    print_report(&report);
    if let Some(path) = &config.candidates {
        let mut out = std::fs::File::create(path)?;
        for line in &candidates {
            writeln!(out, "{line}")?;
        }
    }
    if let Some(path) = &config.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
    }
    Ok(())
}

fn read_planted(path: &Path) -> anyhow::Result<Vec<PlantedPair>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    std::io::BufReader::new(file)
        .lines()
        .map(|line| Ok(serde_json::from_str(&line?)?))
        .collect()
}

fn counts(map: &BTreeMap<String, usize>) -> String {
    map.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_report(report: &Report) {
    println!(
        "{} pairs, {} groups; duplicate_pairs() {:.2} s, groups() {:.2} s",
        report.pairs, report.groups, report.pairs_scan_secs, report.groups_secs
    );
    println!();
    println!("| planted signal / form | planted | models missing | paired | as planted | recall (pair, as planted) | same group | group kind | group size | other signal |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let rows = report
        .recall
        .iter()
        .map(|(k, v)| (format!("**{k}**"), v))
        .chain(report.recall_by_form.iter().map(|(k, v)| (k.clone(), v)));
    for (name, r) in rows {
        println!(
            "| {name} | {} | {} | {} | {} | {:.2} % | {} | {} | {} | {} |",
            r.planted,
            r.missing,
            r.paired,
            r.paired_as_planted,
            100.0 * r.paired_as_planted as f64 / r.planted.max(1) as f64,
            r.same_group,
            counts(&r.group_kinds),
            counts(&r.group_sizes),
            counts(&r.paired_as_other),
        );
    }
    println!();
    println!(
        "| signal | stored pairs | not planted | groups of that kind | without a planted pair |"
    );
    println!("|---|---|---|---|---|");
    for signal in DuplicateSignal::ALL {
        let name = signal.as_str();
        let (pairs, other) = report
            .pairs_by_signal
            .get(name)
            .copied()
            .unwrap_or_default();
        let (groups, bare) = report.groups_by_kind.get(name).copied().unwrap_or_default();
        println!("| {name} | {pairs} | {other} | {groups} | {bare} |");
    }
    println!();
    println!("group sizes: {}", counts(&report.group_sizes));
    for line in &report.largest_groups {
        println!("largest: {line}");
    }
}
