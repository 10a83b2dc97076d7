//! The batch commands (`ingest`, `match`, `rates`, `reindex`, `duplicates rebuild`): each runs
//! its job on the data dir (no server may hold it), or submits it to the server at `--server`
//! and follows it; either way the job's report is printed the same.

use super::client::{self, Credentials, Submission};
use super::stop::stop_on_signal;
use super::Local;
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::sync::Arc;
use watch_catalogue::domain::Timestamp;
use watch_catalogue::jobs::batch::{self, Batch, BatchReport};
use watch_catalogue::jobs::progress::{JobControl, TestPacing};
use watch_catalogue::jobs::snapshot_rules::{self, SnapshotRules};
use watch_catalogue::jobs::users::Actor;

/// Where a batch command runs: on the data dir (no server may hold it), or as a job of the
/// server at `--server`, signed in as `WATCH_CATALOGUE_USER` (asked for on a terminal).
#[derive(Args)]
pub struct Remote {
    /// Submit the job to the server at this URL (e.g. http://127.0.0.1:8080) and follow it,
    /// instead of opening the data dir; signed in as the admin WATCH_CATALOGUE_USER with
    /// WATCH_CATALOGUE_PASSWORD (asked for on a terminal).
    #[arg(long)]
    pub server: Option<String>,
}

#[derive(Args)]
pub struct IngestArgs {
    /// The provider's slug.
    #[arg(long)]
    provider: String,
    /// The snapshot file.
    file: PathBuf,
    /// Share of invalid lines (0 to 1) at which the snapshot is refused whole.
    #[arg(long, default_value_t = snapshot_rules::DEFAULT_MAX_INVALID, value_parser = share("--max-invalid"))]
    max_invalid: f64,
    /// Share of the provider's listings in stock (0 to 1) the snapshot may delist; a
    /// snapshot that would delist more is refused whole.
    #[arg(long, default_value_t = snapshot_rules::DEFAULT_MAX_DELIST, value_parser = share("--max-delist"))]
    max_delist: f64,
    /// Ingest even a snapshot that would delist more than --max-delist of the stock, or
    /// that keeps almost none of it (recorded in the audit trail and the report).
    #[arg(long)]
    allow_mass_delist: bool,
    /// When the snapshot was taken (RFC 3339, or a day for its midnight UTC), to replay an
    /// archived one: not after now, nor before the provider's last snapshot. Default: now.
    #[arg(long, value_name = "TIME", value_parser = observed_at("--observed-at"))]
    observed_at: Option<Timestamp>,
    #[command(flatten)]
    pub remote: Remote,
}

#[derive(Subcommand)]
pub enum DuplicatesAction {
    /// Find every model's pairs afresh (on every core).
    Rebuild {
        #[command(flatten)]
        remote: Remote,
    },
}

/// A parser of a share between 0 and 1 for the option `name`.
fn share(name: &'static str) -> impl Fn(&str) -> Result<f64, String> + Clone {
    move |text| snapshot_rules::parse_share(name, text).map_err(|error| error.to_string())
}

/// A parser of the instant a snapshot was taken, for the option `name`.
pub fn observed_at(name: &'static str) -> impl Fn(&str) -> Result<Timestamp, String> + Clone {
    move |text| snapshot_rules::parse_observed_at(name, text).map_err(|error| error.to_string())
}

/// `ingest`: the snapshot file must open before anything is submitted or opened.
pub fn ingest(args: IngestArgs, local: &Local) -> anyhow::Result<()> {
    let IngestArgs {
        provider,
        file,
        max_invalid,
        max_delist,
        allow_mass_delist,
        observed_at,
        remote,
    } = args;
    std::fs::File::open(&file).with_context(|| format!("opening {}", file.display()))?;
    let rules = SnapshotRules {
        max_invalid,
        max_delist,
        mass_delist_allowed_by: allow_mass_delist.then_some(Actor::Cli),
        observed_at,
    };
    if let Some(server) = remote.server {
        return run_remote(
            &server,
            Submission::Snapshot {
                provider,
                file,
                rules,
            },
        );
    }
    without_transparent_huge_pages();
    let name = file.display().to_string();
    run_local(
        local,
        Batch::Snapshot {
            provider,
            file,
            name,
            rules,
        },
    )
}

/// `rates FILE`: the file must read before anything is submitted or opened.
pub fn rates(file: PathBuf, remote: Remote, local: &Local) -> anyhow::Result<()> {
    let xml =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    match remote.server {
        Some(server) => run_remote(&server, Submission::Rates { file }),
        None => run_local(local, Batch::Rates { xml })
            .with_context(|| format!("loading {}", file.display())),
    }
}

/// A job as `submission` to the server `remote` names, or as `job` on the data dir.
pub fn run(
    remote: Remote,
    local: &Local,
    submission: Submission,
    job: Batch,
) -> anyhow::Result<()> {
    match remote.server {
        Some(server) => run_remote(&server, submission),
        None => run_local(local, job),
    }
}

/// A batch job on the data dir, its report printed (skipped lines on standard error), then
/// the store opened once more so that sled snapshots it (`app::snapshot_store`). SIGTERM or
/// SIGINT stops the job at its next chunk boundary.
fn run_local(local: &Local, job: Batch) -> anyhow::Result<()> {
    let app = local.open()?;
    let control = Arc::new(JobControl::default().paced(TestPacing::from_env()));
    stop_on_signal(control.clone());
    let ran = {
        let _shown = super::progress::watch(control.clone(), job.kind().as_str(), job.unit());
        batch::run(app.job_context(), &job, &control)
    };
    match ran {
        Ok(report) => {
            print_report(&report);
            // The next start then replays none of the job's log.
            drop(app);
            local.snapshot_store();
            Ok(())
        }
        Err(error) => {
            eprint!("{}", error.report().unwrap_or_default());
            Err(error.into())
        }
    }
}

/// A batch job submitted to the server at `server` and followed until it ends; its report
/// printed as the local run prints it, and an error when it did not succeed.
fn run_remote(server: &str, submission: Submission) -> anyhow::Result<()> {
    let credentials = Credentials::from_env_or_prompt()?;
    let job = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(client::run(server, &credentials, submission))?;
    let report = job.report.as_deref().unwrap_or_default();
    if job.succeeded() {
        print!("{report}");
        return Ok(());
    }
    eprint!("{report}");
    anyhow::bail!(
        "job {} {}: {}",
        job.id,
        job.state,
        job.error.as_deref().unwrap_or("no reason given")
    )
}

/// A job's report: skipped lines on standard error, the summary on standard output.
pub fn print_report(report: &BatchReport) {
    eprint!("{}", report.skipped);
    print!("{}", report.summary);
}

/// An import builds its whole checked dataset in memory before it writes (nothing is written
/// when a line is wrong): gigabytes of fresh allocations. With transparent huge pages the kernel
/// zeroes a 2 MiB page at each first touch, and again after mimalloc hands one back, which made
/// reading and checking a dataset markedly slower. An offline ingest, lighter since, gains from
/// it too, and so does the server (docs/decisions.md, D-22, D-237).
pub fn without_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(error) = rustix::thread::disable_transparent_huge_pages(true) {
        tracing::debug!(%error, "transparent huge pages left on");
    }
}
