//! `catalogue-bench generate --models N [--listings M] [--base-variants R]
//! [--alternate-overlaps R] --out DIR` writes a generated dataset directory (with provider
//! snapshots of M listings in `listings/`, and the planted pairs in `planted-pairs.jsonl`);
//! `catalogue-bench scale --models N [--listings M]` also imports it, ingests and matches its
//! listings, and reindexes both indexes, reporting wall time, CPU time (cores used) and peak
//! memory of each step;
//! `catalogue-bench load --base http://127.0.0.1:8080 --concurrency 32 --duration 10s` drives a
//! running service over HTTP with a mix of realistic requests (see [`catalogue_bench::load`]);
//! `--dump-requests FILE` also writes the requests it learnt, for the peers of bench/peers/;
//! `catalogue-bench export-peers --data-dir DIR --out OUT` writes a data dir's store as
//! tab-separated files for those peers (see [`export`]);
//! `catalogue-bench replay --data-dir DIR --requests FILE` sends those requests to the router
//! in-process, each kind alone, for the in-process side of the comparison;
//! `catalogue-bench jpegs --count 1000 --size 2000 --out DIR` writes product-shot-like JPEGs
//! for the image pipeline bench (bench/pictures.sh);
//! `catalogue-bench duplicates-recall --data-dir DIR --planted FILE` reads the duplicate
//! finder's groups and reports how many planted pairs they hold (bench/duplicates.sh).

mod export;
mod pictures;
mod recall;

/// The allocator the server ships with (see src/main.rs), so figures measure what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::Context;
use catalogue_bench::{generate_dataset, load, CatalogueShape, ListingShape};
use clap::{Parser, Subcommand};
use rayon::prelude::*;
use std::path::PathBuf;
use std::time::Instant;
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::domain::MatchOutcome;
use watch_catalogue::jobs::import::{import, DirectorySource};
use watch_catalogue::jobs::ingest::ingest_dataset_feeds;
use watch_catalogue::jobs::matching::match_listing;
use watch_catalogue::jobs::reindex;
use watch_catalogue::jobs::snapshot_rules::SnapshotRules;
use watch_catalogue::store::WriteTurn;

#[derive(Parser)]
#[command(name = "catalogue-bench")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a generated dataset directory.
    Generate {
        #[arg(long)]
        models: usize,
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        #[command(flatten)]
        listings: ListingArgs,
        #[command(flatten)]
        plants: PlantArgs,
    },
    /// Generate, import, ingest and match the listings, and reindex, timing each step.
    Scale {
        #[arg(long)]
        models: usize,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        #[command(flatten)]
        listings: ListingArgs,
        #[command(flatten)]
        plants: PlantArgs,
        /// Where to keep the dataset and the data dir (a temporary directory when absent).
        #[arg(long)]
        work_dir: Option<PathBuf>,
    },
    /// Drive a running service over HTTP with a mix of requests learnt from it, reporting
    /// latency per kind. Start the server with `--rate-limit 1000000000`: its default per-IP
    /// budget (600 requests per 60 s) otherwise answers most requests with 429.
    Load {
        /// The service, without `/v1`.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        base: String,
        /// Clients, each with one request in flight on a keep-alive connection.
        #[arg(long, default_value_t = 32)]
        concurrency: usize,
        /// Measured time (10s, 500ms, 2m).
        #[arg(long, default_value = "10s", value_parser = load::parse_duration)]
        duration: std::time::Duration,
        /// Time run first and left out of the figures.
        #[arg(long, default_value = "0s", value_parser = load::parse_duration)]
        warmup: std::time::Duration,
        /// `default`, or `kind=weight,…` (kinds: model_by_slugs, reference_search,
        /// text_search_1w, text_search_2w, text_search_3w, models_filtered, listings_filtered,
        /// listing_stats, listing_by_id, text_search_typo, models_faceted; the last two are not
        /// in `default`).
        #[arg(long, default_value = "default")]
        mix: load::Mix,
        /// One kind alone (overrides --mix).
        #[arg(long)]
        only: Option<load::Kind>,
        /// Fixes the requests sent (and the sample learnt at start).
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Models read in full at start, for references and search words.
        #[arg(long, default_value_t = 64)]
        sample_models: usize,
        /// Requests a second in all, sent on schedule (an open loop; each timed from when it
        /// was due); by default each client sends again as soon as it is answered.
        #[arg(long, value_parser = load::parse_rate)]
        rate: Option<f64>,
        /// Also write the figures as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write every kind's request pool here, as JSON lines `{"kind", "url"}`, once learnt
        /// (what bench/peers/ translates into SQL).
        #[arg(long)]
        dump_requests: Option<PathBuf>,
        /// With `--dump-requests`: stop once they are written, without running the load.
        #[arg(long, requires = "dump_requests")]
        dump_only: bool,
    },
    /// Write a data dir's store as tab-separated files (PostgreSQL COPY text format) for the
    /// peers of bench/peers/: brands, series, providers, calibers, rates, models, listings.
    /// Stop the server on that data dir first (sled locks it).
    ExportPeers {
        /// The service's data dir (holding `store/`).
        #[arg(long)]
        data_dir: PathBuf,
        /// Directory for the files and `manifest.json`.
        #[arg(long)]
        out: PathBuf,
        /// Gzip each file (`NAME.tsv.gz`).
        #[arg(long)]
        gzip: bool,
    },
    /// Send the requests of a `load --dump-requests` file to the service's router in-process
    /// (every layer and the JSON, no socket), each kind alone, reporting as `load` does. Stop
    /// the server on that data dir first (sled locks it).
    Replay {
        #[command(flatten)]
        config: export::ReplayConfig,
        /// Also write the figures as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Report how many of a generated dataset's planted pairs (`planted-pairs.jsonl`) the
    /// duplicate finder found in a data dir it was imported into, by signal, and what it found
    /// beyond them. Stop the server on that data dir first (sled locks it).
    DuplicatesRecall {
        #[command(flatten)]
        config: recall::RecallConfig,
    },
    /// Write `COUNT` distinct product-shot-like JPEGs (a dark round watch at a varying offset
    /// on a light background, a little noise) as `OUT/0000.jpg`…, keeping those already there.
    Jpegs {
        #[arg(long, default_value_t = 1000)]
        count: usize,
        /// Side in pixels (square pictures).
        #[arg(long, default_value_t = 2000)]
        size: u32,
        #[arg(long, default_value_t = 90)]
        quality: u8,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(clap::Args)]
struct ListingArgs {
    /// Listings to generate, as provider snapshots in `listings/` (none by default).
    #[arg(long, default_value_t = 0)]
    listings: usize,
    /// Share of the listings given to one hot model (the first of the biggest brand), so one
    /// model has many: 0.012 gives ~11,600 ACTIVE listings of 1M.
    #[arg(long, default_value_t = 0.012)]
    hot_share: f64,
}

#[derive(clap::Args)]
struct PlantArgs {
    /// Share of models planted as a base variant of the model before them (another letter
    /// suffix, dial code, maker's prefix or last segment); 0 leaves a seed's catalogue as it
    /// was.
    #[arg(long, default_value_t = 0.0)]
    base_variants: f64,
    /// Share of models planted as an alternate overlap with the model before them (one's
    /// primary reference is the other's alternate); 0 leaves a seed's catalogue as it was.
    #[arg(long, default_value_t = 0.0)]
    alternate_overlaps: f64,
}

impl PlantArgs {
    fn shape(&self, models: usize, seed: u64) -> CatalogueShape {
        CatalogueShape {
            base_variants: self.base_variants,
            alternate_overlaps: self.alternate_overlaps,
            ..CatalogueShape::new(models, seed)
        }
    }
}

impl ListingArgs {
    fn shape(&self) -> ListingShape {
        ListingShape {
            listings: self.listings,
            hot_share: self.hot_share,
        }
    }
}

/// User + system CPU seconds of this process so far (Linux `/proc`, 100 ticks a second).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// Resets the peak resident memory, so each step reports its own (Linux: `clear_refs` 5).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident memory in MiB since the last reset (Linux `/proc`).
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Runs one step, printing a table row: wall and CPU time, cores used, the step's peak RSS,
/// and, when `items` is given, the rate (items per wall second).
fn timed<T>(
    step: &str,
    items: Option<usize>,
    work: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    reset_peak_rss();
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    let out = work()?;
    let wall = wall.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    let rate = items.map_or(String::new(), |n| {
        format!("{:.0}/s", n as f64 / wall.max(1e-9))
    });
    println!(
        "| {step:<16} | {wall:>8.2} s | {cpu:>8.2} s | {:>5.2} | {:>9.0} MiB | {rate:>11} |",
        cpu / wall.max(1e-9),
        peak_rss_mib()
    );
    Ok(out)
}

fn dir_size_mib(path: &std::path::Path) -> f64 {
    watch_catalogue::data_dir::folder_bytes(path) as f64 / (1024.0 * 1024.0)
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Generate {
            models,
            out,
            seed,
            listings,
            plants,
        } => {
            let (generated, listed) =
                generate_dataset(&plants.shape(models, seed), &listings.shape(), &out)?;
            println!("wrote {generated} to {}", out.display());
            if listed.listings > 0 {
                println!("listings: {}", serde_json::to_string_pretty(&listed)?);
            }
        }
        Command::Scale {
            models,
            seed,
            listings,
            plants,
            work_dir,
        } => scale(&plants.shape(models, seed), &listings.shape(), work_dir)?,
        Command::DuplicatesRecall { config } => recall::run(&config)?,
        Command::Load {
            base,
            concurrency,
            duration,
            warmup,
            mix,
            only,
            seed,
            sample_models,
            rate,
            json,
            dump_requests,
            dump_only,
        } => {
            let config = load::LoadConfig {
                concurrency,
                duration,
                warmup,
                seed,
                mix: only.map_or(mix, load::Mix::only),
                sample_models,
                rate,
                ..load::LoadConfig::new(base)
            };
            if let Some(path) = dump_requests {
                write_requests(&config, &path)?;
                if dump_only {
                    return Ok(());
                }
            }
            run_load(&config, json)?;
        }
        Command::ExportPeers {
            data_dir,
            out,
            gzip,
        } => {
            let started = Instant::now();
            let report = export::export_peers(&data_dir, &out, gzip)?;
            println!("{}", serde_json::to_string_pretty(&report.manifest)?);
            eprintln!(
                "exported {} to {} in {:.1} s",
                data_dir.display(),
                out.display(),
                started.elapsed().as_secs_f64()
            );
        }
        Command::Replay { config, json } => {
            print_report(&export::replay(&config)?, json)?;
        }
        Command::Jpegs {
            count,
            size,
            quality,
            seed,
            out,
        } => {
            let started = Instant::now();
            let done = pictures::write_jpegs(&out, count, size, quality, seed)?;
            println!(
                "jpegs: {} written, {} kept, {:.1} MiB in all, in {} ({:.1} s)",
                done.written,
                done.kept,
                done.bytes as f64 / (1024.0 * 1024.0),
                out.display(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

/// Learns the requests as a load run would (same seed, same sample) and writes them as JSON
/// lines to `path`.
fn write_requests(config: &load::LoadConfig, path: &std::path::Path) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let base = config.base.trim_end_matches('/');
    let targets = runtime.block_on(async {
        let client = load::client(config.concurrency, config.timeout)?;
        load::discover(&client, base, config.seed, config.sample_models).await
    })?;
    std::fs::write(path, load::request_lines(&targets))
        .with_context(|| format!("writing {}", path.display()))?;
    let counts: Vec<String> = targets
        .pools
        .iter()
        .map(|(kind, pool)| format!("{kind} {}", pool.len()))
        .collect();
    eprintln!(
        "wrote the requests to {}: {}",
        path.display(),
        counts.join(", ")
    );
    Ok(())
}

fn run_load(config: &load::LoadConfig, json: Option<PathBuf>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    eprintln!(
        "load: {} at concurrency {}{}, mix {}, warm-up {:?}, {:?} measured, seed {}",
        config.base,
        config.concurrency,
        config.rate.map_or(String::new(), |rate| format!(
            ", {rate} requests/s on schedule"
        )),
        config.mix.name,
        config.warmup,
        config.duration,
        config.seed
    );
    let report = runtime.block_on(load::run(config))?;
    print_report(&report, json)
}

/// The figures as a table, errors and warnings, and as JSON in `json` when given.
fn print_report(report: &load::LoadReport, json: Option<PathBuf>) -> anyhow::Result<()> {
    println!("{}", report.markdown());
    println!(
        "{:.3} s measured, concurrency {}, mix {}, seed {}",
        report.measured_secs, report.concurrency, report.mix, report.seed
    );
    for kind in report.kinds.iter().filter(|k| k.errors > 0) {
        println!(
            "{}: errors {:?}; first: {}",
            kind.kind,
            kind.errors_by_status,
            kind.first_error.as_deref().unwrap_or("")
        );
    }
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
    if let Some(path) = json {
        std::fs::write(&path, serde_json::to_string_pretty(report)?)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn scale(
    shape: &CatalogueShape,
    listings: &ListingShape,
    work_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    let temp = tempfile::tempdir()?;
    let work = work_dir.unwrap_or_else(|| temp.path().to_owned());
    let (dataset, data) = (work.join("dataset"), DataDir::new(work.join("data")));
    println!(
        "| step             |       wall |        cpu | cores |      peak RSS |        rate |"
    );
    println!(
        "|------------------|------------|------------|-------|---------------|-------------|"
    );
    let (_, listed) = timed("generate", None, || {
        Ok(generate_dataset(shape, listings, &dataset)?)
    })?;
    let app = App::open(&data, 256 << 20)?;
    // Each step in a write turn of its own, the indexes left to the steps that time them.
    let models = shape.models;
    timed("import", Some(models), || {
        Ok(import(
            &app.store().write_turn(),
            &DirectorySource(dataset.clone()),
        )?)
    })?;
    // The dataset's provider snapshots, as `watch-catalogue import` ingests them.
    let ingest_all = |turn: &WriteTurn<'_>| {
        Ok(ingest_dataset_feeds(
            turn,
            &DirectorySource(dataset.clone()),
            &SnapshotRules::default(),
        )?)
    };
    let with_listings = listed.listings > 0;
    let feeds: Vec<String> = if with_listings {
        let reports = timed("ingest + match", Some(listed.listings), || {
            ingest_all(&app.store().write_turn())
        })?;
        // Summaries only: the reports hold every listing written, which would count in the
        // peak memory of the steps after.
        reports
            .into_iter()
            .map(|(provider, feed)| {
                format!(
                    "{provider}: {} created, {} matched, {} unmatched, {} lines skipped",
                    feed.created,
                    feed.matched,
                    feed.unmatched,
                    feed.skipped.count()
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    let stored = if with_listings {
        timed("match only", Some(listed.listings), || {
            // Every stored listing matched again, read-only: matching's own cost.
            app.store()
                .listings()
                .all_listings_parallel()
                .map(|listing| Ok(match_listing(app.store(), &listing?.details)?.outcome))
                .collect::<anyhow::Result<Vec<MatchOutcome>>>()
        })?
    } else {
        Vec::new()
    };
    let report = timed("reindex", None, || {
        Ok(reindex::rebuild(app.store(), app.index())?)
    })?;
    let listings_report = timed(
        "reindex listings",
        with_listings.then_some(listed.listings),
        || Ok(reindex::rebuild_listings(app.store(), app.listings())?),
    )?;
    let sizes = (
        dir_size_mib(&dataset),
        dir_size_mib(&dataset.join("listings")),
        dir_size_mib(&data.store()),
        dir_size_mib(&data.index()),
        dir_size_mib(&data.listings_index()),
    );
    if with_listings {
        // A provider's next snapshot, unchanged: every listing refreshed (nothing to match),
        // then taken into the listings index incrementally, as `watch-catalogue ingest` does.
        let before = app.store().listings_generation()?;
        let turn = app.store().write_turn();
        let again = timed("re-ingest same", Some(listed.listings), || {
            ingest_all(&turn)
        })?;
        let changes = turn.changes();
        drop(turn);
        let refreshed: usize = again.iter().map(|(_, feed)| feed.refreshed).sum();
        anyhow::ensure!(
            refreshed == listed.listings,
            "an unchanged snapshot refreshes every listing ({refreshed} of {})",
            listed.listings
        );
        timed("index re-ingest", Some(listed.listings), || {
            reindex::index_listing_changes(app.store(), app.listings(), &changes, before)?;
            app.prepare(false)
        })?;
    }
    drop(app);
    let reopened = timed("reopen", None, || {
        App::open(&data, 256 << 20).context("reopen")
    })?;
    anyhow::ensure!(
        reopened.index_is_current()?,
        "the indexes should be current after reindex"
    );
    println!(
        "\n{} documents, {} listing documents; dataset {:.0} MiB (listings {:.0} MiB), store {:.0} MiB, index {:.0} MiB, listings index {:.0} MiB",
        report.documents,
        listings_report.documents,
        sizes.0,
        sizes.1,
        sizes.2,
        sizes.3,
        sizes.4,
    );
    for feed in &feeds {
        println!("{feed}");
    }
    if with_listings {
        let count = |wanted: fn(&MatchOutcome) -> bool| stored.iter().filter(|o| wanted(o)).count();
        println!(
            "generated: {} named, {} title only, {} unknown brand, {} unknown reference, {} ambiguous, {} unpriced, {} reserved; hot model {:?}",
            listed.named,
            listed.title_only,
            listed.unknown_brand,
            listed.unknown_reference,
            listed.ambiguous,
            listed.unpriced,
            listed.reserved,
            listed.hot,
        );
        println!(
            "matched: {} by reference, {} from the title; unmatched: {} unknown brand, {} unknown reference, {} ambiguous",
            count(|o| *o == MatchOutcome::Matched { from_title: false }),
            count(|o| *o == MatchOutcome::Matched { from_title: true }),
            count(|o| *o == MatchOutcome::UnknownBrand),
            count(|o| *o == MatchOutcome::UnknownReference),
            count(|o| *o == MatchOutcome::Ambiguous),
        );
    }
    Ok(())
}
