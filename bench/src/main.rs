//! `catalogue-bench generate --models N --out DIR` writes a generated dataset directory;
//! `catalogue-bench scale --models N` also imports and reindexes it, reporting wall time, CPU
//! time (cores used) and peak memory of each step.

/// The allocator the server ships with (see src/main.rs), so figures measure what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::Context;
use catalogue_bench::{generate_catalogue, CatalogueShape};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::time::Instant;
use watch_catalogue::app::App;
use watch_catalogue::config::DataDir;
use watch_catalogue::jobs::import::{import, DirectorySource};
use watch_catalogue::jobs::reindex;

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
    },
    /// Generate, import and reindex, timing each step.
    Scale {
        #[arg(long)]
        models: usize,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Where to keep the dataset and the data dir (a temporary directory when absent).
        #[arg(long)]
        work_dir: Option<PathBuf>,
    },
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

/// Peak resident memory in MiB (Linux `/proc`).
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn timed<T>(step: &str, work: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    let out = work()?;
    let wall = wall.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    println!(
        "| {step:<9} | {wall:>8.2} s | {cpu:>8.2} s | {:>5.2} | {:>8.0} MiB |",
        cpu / wall.max(1e-9),
        peak_rss_mib()
    );
    Ok(out)
}

fn dir_size_mib(path: &std::path::Path) -> f64 {
    fn walk(path: &std::path::Path) -> u64 {
        std::fs::read_dir(path)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| match e.metadata() {
                        Ok(m) if m.is_dir() => walk(&e.path()),
                        Ok(m) => m.len(),
                        Err(_) => 0,
                    })
                    .sum()
            })
            .unwrap_or(0)
    }
    walk(path) as f64 / (1024.0 * 1024.0)
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Generate { models, out, seed } => {
            let generated = generate_catalogue(&CatalogueShape { models, seed }, &out)?;
            println!("wrote {generated:?} to {}", out.display());
        }
        Command::Scale {
            models,
            seed,
            work_dir,
        } => {
            let temp = tempfile::tempdir()?;
            let work = work_dir.unwrap_or_else(|| temp.path().to_owned());
            let (dataset, data) = (work.join("dataset"), DataDir::new(work.join("data")));
            println!("| step      |     wall |      cpu | cores |  peak RSS |");
            println!("|-----------|----------|----------|-------|-----------|");
            timed("generate", || {
                Ok(generate_catalogue(
                    &CatalogueShape { models, seed },
                    &dataset,
                )?)
            })?;
            let app = App::open(&data, 256 << 20)?;
            timed("import", || {
                Ok(import(&app.store, &DirectorySource(dataset.clone()))?)
            })?;
            let report = timed("reindex", || Ok(reindex::rebuild(&app.store, &app.index)?))?;
            println!(
                "\n{} documents; dataset {:.0} MiB, store {:.0} MiB, index {:.0} MiB",
                report.documents,
                dir_size_mib(&dataset),
                dir_size_mib(&data.store()),
                dir_size_mib(&data.index())
            );
            drop(app);
            let reopened = timed("reopen", || App::open(&data, 256 << 20).context("reopen"))?;
            anyhow::ensure!(
                reopened.index_is_current()?,
                "the index should be current after reindex"
            );
        }
    }
    Ok(())
}
