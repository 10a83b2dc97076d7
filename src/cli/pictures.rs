//! The image worker's flags, shared by `serve` and `pictures fetch`, their assembly into the
//! worker's [`WorkerConfig`], and `pictures fetch`: one pass of the worker on a stopped data dir.

use super::args::parse_net;
use super::Local;
use anyhow::Context;
use clap::{Args, Subcommand};
use std::sync::Arc;
use std::time::Duration;
use watch_catalogue::jobs::pictures::{
    cores, run_pass, PictureWorker, WorkerConfig, DEFAULT_CONCURRENCY, DEFAULT_CROP_SIZE,
};
use watch_catalogue::media::fetch::{
    DEFAULT_CONNECT_TIMEOUT_SECS, DEFAULT_MAX_BYTES, DEFAULT_MAX_PIXELS, DEFAULT_TOTAL_TIMEOUT_SECS,
};
use watch_catalogue::media::{AllowedNets, FetchSettings};

#[derive(Subcommand)]
pub enum PicturesAction {
    /// Fetch and crop the pending pictures (and failed ones due a retry, and lost crops).
    Fetch {
        #[command(flatten)]
        pictures: PictureArgs,
    },
}

/// Settings of the image worker, shared by `serve` and `pictures fetch`.
#[derive(Args)]
pub struct PictureArgs {
    /// A network the fetcher may reach although it is not public (address or CIDR, e.g.
    /// 127.0.0.1 or 10.0.0.0/8); repeat or comma-separate. By default only public addresses
    /// are fetched from.
    #[arg(
        long = "fetch-allow",
        env = "WATCH_CATALOGUE_FETCH_ALLOW",
        value_delimiter = ',',
        value_parser = parse_net
    )]
    fetch_allow: Vec<ipnet::IpNet>,
    /// Seconds to wait for a connection to a picture's source.
    #[arg(long, env = "WATCH_CATALOGUE_FETCH_CONNECT_TIMEOUT_SECS", default_value_t = DEFAULT_CONNECT_TIMEOUT_SECS)]
    fetch_connect_timeout_secs: u64,
    /// Seconds a whole fetch may take, redirects included.
    #[arg(long, env = "WATCH_CATALOGUE_FETCH_TIMEOUT_SECS", default_value_t = DEFAULT_TOTAL_TIMEOUT_SECS)]
    fetch_timeout_secs: u64,
    /// Largest picture fetched, in bytes.
    #[arg(long, env = "WATCH_CATALOGUE_FETCH_MAX_BYTES", default_value_t = DEFAULT_MAX_BYTES)]
    fetch_max_bytes: u64,
    /// Fetches in flight at once.
    #[arg(long, env = "WATCH_CATALOGUE_FETCH_CONCURRENCY", default_value_t = DEFAULT_CONCURRENCY)]
    fetch_concurrency: usize,
    /// Side of a cropped picture, in pixels, at most.
    #[arg(long, env = "WATCH_CATALOGUE_CROP_SIZE", default_value_t = DEFAULT_CROP_SIZE)]
    crop_size: u32,
    /// Largest picture taken, in pixels; a larger one is refused from its header, undecoded.
    #[arg(long, env = "WATCH_CATALOGUE_FETCH_MAX_PIXELS", default_value_t = DEFAULT_MAX_PIXELS)]
    fetch_max_pixels: u64,
    /// Pixels decoded and cropped at once, summed over the pictures in hand (the worker's
    /// decoding memory grows with it) [default: --fetch-max-pixels].
    #[arg(long, env = "WATCH_CATALOGUE_DECODE_BUDGET_PIXELS")]
    decode_budget_pixels: Option<u64>,
}

impl PictureArgs {
    /// The worker's settings; `enabled` is whether `serve` runs it.
    pub fn config(self, enabled: bool) -> WorkerConfig {
        let defaults = WorkerConfig::default();
        WorkerConfig {
            fetch: FetchSettings {
                allow: AllowedNets(self.fetch_allow),
                connect_timeout: Duration::from_secs(self.fetch_connect_timeout_secs.max(1)),
                total_timeout: Duration::from_secs(self.fetch_timeout_secs.max(1)),
                max_bytes: self.fetch_max_bytes,
                max_pixels: self.fetch_max_pixels.max(1),
                ..defaults.fetch
            },
            concurrency: self.fetch_concurrency.max(1),
            crop_size: self.crop_size.max(1),
            enabled,
            crop_slots: defaults.crop_slots,
            decode_budget_pixels: self.decode_budget_pixels,
        }
    }
}

/// `pictures ...` on a stopped data dir.
pub fn run(action: PicturesAction, local: &Local) -> anyhow::Result<()> {
    match action {
        PicturesAction::Fetch { pictures } => {
            // A stopped data dir has no requests to keep a core for.
            let config = WorkerConfig {
                crop_slots: Some(cores()),
                ..pictures.config(true)
            };
            fetch(local, config)
        }
    }
}

/// `pictures fetch`: one pass of the image worker over a stopped data dir. SIGTERM or SIGINT
/// ends the pass where it stands, as the server's stop does: the states written stay, and the
/// pictures being fetched are due again.
fn fetch(local: &Local, config: WorkerConfig) -> anyhow::Result<()> {
    let app = Arc::new(local.open()?);
    let worker = Arc::new(PictureWorker::new(app.media().clone(), &config)?);
    let pass = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(async {
            tokio::select! {
                biased;
                () = watch_catalogue::server::shutdown_signal() => None,
                pass = run_pass(app.job_context(), &worker) => Some(pass),
            }
        });
    let Some(pass) = pass else {
        app.store().flush()?;
        anyhow::bail!("stopped by a signal: the pictures handled are written, and the next `pictures fetch` takes the rest");
    };
    let report = pass?;
    let waiting = match report.waiting_for_host {
        0 => String::new(),
        n => format!(", {n} left for a host that looks down"),
    };
    println!(
        "pictures: {} fetched, {} cropped again, {} failed{waiting}; listing candidates ranked for {} models",
        report.fetched, report.cropped, report.failed, report.ranked
    );
    app.store().flush()?;
    Ok(())
}
