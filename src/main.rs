//! `watch-catalogue`: serve the API, or run a batch job on a data dir no server holds, or as a
//! job of the server that holds it (`--server`).

use anyhow::Context;

/// glibc's malloc fragments under sled's allocation pattern: with it, a store read took 2.7x
/// longer once the server's long-lived state was allocated (perf: unlink_chunk and
/// malloc_consolidate on top). mimalloc keeps reads at their cost; see docs/decisions.md.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use clap::{Args, Parser, Subcommand};
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};
use watch_catalogue::api::layers::capacity::CapacityConfig;
use watch_catalogue::api::layers::metrics::MetricsToken;
use watch_catalogue::app::App;
use watch_catalogue::auth::SessionPolicy;
use watch_catalogue::client::{self, Credentials, Submission};
use watch_catalogue::config::{
    ApiConfig, ConnectionConfig, DataDir, Deprecation, RateLimitConfig, ServeConfig, DEFAULT_ADDR,
    DEFAULT_CACHE_BYTES, DEFAULT_DATA_DIR, DEFAULT_HEADER_READ_TIMEOUT_SECS,
    DEFAULT_IDLE_TIMEOUT_SECS, DEFAULT_MAX_CONNECTIONS, DEFAULT_MEDIA_BASE_URL, DEFAULT_RATE_LIMIT,
    DEFAULT_RATE_WINDOW_SECS, DEFAULT_SHUTDOWN_GRACE_SECS, IMPORT_CACHE_BYTES,
};
use watch_catalogue::data_dir::{self, Expect, Found, ImportMark};
use watch_catalogue::domain::{Role, Username};
use watch_catalogue::jobs::batch::{self, Batch, BatchReport};
use watch_catalogue::jobs::dataset::import_dataset;
use watch_catalogue::jobs::import::{DatasetSource, DirectorySource};
use watch_catalogue::jobs::pictures::{run_pass, PictureWorker, WorkerConfig};
use watch_catalogue::jobs::progress::{JobControl, TestPacing};
use watch_catalogue::jobs::snapshot_rules::{self, SnapshotRules};
use watch_catalogue::jobs::users::{self, Actor};
use watch_catalogue::jobs::writer::{IndexChoice, WriteError};
use watch_catalogue::media::{AllowedNets, FetchSettings};

#[derive(Parser)]
#[command(
    name = "watch-catalogue",
    version,
    about = "Search-engine-backed catalogue service for wristwatches"
)]
struct Cli {
    /// Data directory (sled store in store/, search index in index/).
    #[arg(long, global = true, env = "WATCH_CATALOGUE_DATA_DIR", default_value = DEFAULT_DATA_DIR)]
    data_dir: PathBuf,
    /// sled page cache in bytes [default: 268435456; 536870912 for import].
    #[arg(long, global = true, env = "WATCH_CATALOGUE_CACHE_BYTES")]
    cache_bytes: Option<u64>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
// Parsed once at start: the size of `serve`'s many flags costs nothing.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Serve the API; a new data dir (an absent or empty folder) is first filled with the
    /// bundled fixtures.
    Serve {
        /// Address to listen on.
        #[arg(long, env = "WATCH_CATALOGUE_ADDR", default_value = DEFAULT_ADDR)]
        addr: SocketAddr,
        /// Requests allowed per client IP and window.
        #[arg(long, env = "WATCH_CATALOGUE_RATE_LIMIT", default_value_t = DEFAULT_RATE_LIMIT)]
        rate_limit: u32,
        /// Length of a rate-limit window, in seconds.
        #[arg(long, env = "WATCH_CATALOGUE_RATE_WINDOW_SECS", default_value_t = DEFAULT_RATE_WINDOW_SECS)]
        rate_window_secs: u64,
        /// A proxy (address or CIDR) whose X-Forwarded-For is believed; repeat or comma-separate.
        #[arg(
            long = "trusted-proxy",
            env = "WATCH_CATALOGUE_TRUSTED_PROXIES",
            value_delimiter = ',',
            value_parser = watch_catalogue::config::parse_net
        )]
        trusted_proxies: Vec<ipnet::IpNet>,
        /// Mark v1 as winding down: the date it stops answering (2027-06-30 or an HTTP-date),
        /// at least six months out. Needs --successor.
        #[arg(long, env = "WATCH_CATALOGUE_SUNSET", requires = "successor")]
        sunset: Option<String>,
        /// URL of the version that replaces v1, for the `Link` header.
        #[arg(long, env = "WATCH_CATALOGUE_SUCCESSOR")]
        successor: Option<String>,
        /// Base URL of re-hosted listing pictures (a CDN in production).
        #[arg(long, env = "WATCH_CATALOGUE_MEDIA_BASE_URL", default_value = DEFAULT_MEDIA_BASE_URL)]
        media_base_url: String,
        /// An admin session unused this long ends, in seconds.
        #[arg(long, env = "WATCH_CATALOGUE_SESSION_IDLE_SECS", default_value_t = watch_catalogue::auth::DEFAULT_IDLE.as_secs())]
        session_idle_secs: u64,
        /// An admin session ends this long after login, in seconds.
        #[arg(long, env = "WATCH_CATALOGUE_SESSION_MAX_SECS", default_value_t = watch_catalogue::auth::DEFAULT_ABSOLUTE.as_secs())]
        session_max_secs: u64,
        /// The service is reached over TLS (a proxy in front): session cookies are `Secure`.
        #[arg(long, env = "WATCH_CATALOGUE_BEHIND_TLS")]
        behind_tls: bool,
        /// Requests an admin session may make per window (its own budget, policy `admin`).
        #[arg(long, env = "WATCH_CATALOGUE_ADMIN_RATE_LIMIT", default_value_t = watch_catalogue::config::DEFAULT_ADMIN_RATE_LIMIT)]
        admin_rate_limit: u32,
        /// Requests answered at once (default: four per core); their store and index work runs
        /// on the blocking pool.
        #[arg(long, env = "WATCH_CATALOGUE_MAX_RUNNING_REQUESTS")]
        max_running_requests: Option<usize>,
        /// Requests that may wait for a turn (default: 64 per core); any more are answered 503
        /// with Retry-After at once.
        #[arg(long, env = "WATCH_CATALOGUE_MAX_WAITING_REQUESTS")]
        max_waiting_requests: Option<usize>,
        /// Largest snapshot posted to /v1/admin/providers/{slug}/snapshot, in bytes (it is
        /// streamed to disk under the data dir).
        #[arg(long, env = "WATCH_CATALOGUE_SNAPSHOT_LIMIT", default_value_t = watch_catalogue::config::DEFAULT_SNAPSHOT_LIMIT)]
        snapshot_limit: u64,
        /// A file holding the bearer token GET /metrics asks for (or set the token itself in
        /// WATCH_CATALOGUE_METRICS_TOKEN). Without either, /metrics answers anyone.
        #[arg(long, env = "WATCH_CATALOGUE_METRICS_TOKEN_FILE")]
        metrics_token_file: Option<PathBuf>,
        /// Do not run the image worker in the server.
        #[arg(long, env = "WATCH_CATALOGUE_NO_PICTURE_WORKER")]
        no_picture_worker: bool,
        #[command(flatten)]
        pictures: PictureArgs,
        // Boxed, so that `Serve` does not make every `Command` large.
        #[command(flatten)]
        connections: Box<ConnectionArgs>,
    },
    /// The image pipeline on a stopped data dir: `pictures fetch` fetches and crops every
    /// picture that is due, then exits.
    Pictures {
        #[command(subcommand)]
        action: PicturesAction,
    },
    /// Manage back-office users: add, list, remove, passwd, role. Passwords are read from
    /// standard input (asked twice, without echo, on a terminal), never from arguments.
    User {
        #[command(subcommand)]
        action: UserAction,
    },
    /// Import a dataset directory (docs/dataset-format.md): all of it, or nothing.
    Import {
        /// The dataset directory.
        dir: PathBuf,
    },
    /// Ingest a provider's full current snapshot (one JSON object per line): create, refresh,
    /// delist, reactivate, match.
    Ingest {
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
        #[command(flatten)]
        remote: Remote,
    },
    /// Try every unmatched listing again (after an import added models).
    Match {
        #[command(flatten)]
        remote: Remote,
    },
    /// Load an ECB daily reference-rates file (eurofxref-daily.xml) as the rates in force.
    Rates {
        /// The ECB's XML file.
        file: PathBuf,
        #[command(flatten)]
        remote: Remote,
    },
    /// Rebuild the search indexes from the store, then the duplicate finder's pairs.
    Reindex {
        /// catalogue, listings or all.
        #[arg(long, default_value = "all", value_parser = parse_index)]
        index: IndexChoice,
        #[command(flatten)]
        remote: Remote,
    },
    /// The duplicate finder: `--rebuild` runs its full pass over every model.
    Duplicates {
        /// Find every model's pairs afresh (on every core).
        #[arg(long, required = true)]
        rebuild: bool,
        #[command(flatten)]
        remote: Remote,
    },
    /// Bring the store up to this binary's schema, in place (stop the server first).
    Migrate,
    /// Print the OpenAPI document of the API.
    Openapi,
}

/// Where a batch command runs: on the data dir (no server may hold it), or as a job of the
/// server at `--server`, signed in as `WATCH_CATALOGUE_USER` (asked for on a terminal).
#[derive(Args)]
struct Remote {
    /// Submit the job to the server at this URL (e.g. http://127.0.0.1:8080) and follow it,
    /// instead of opening the data dir.
    #[arg(long)]
    server: Option<String>,
}

/// A parser of a share between 0 and 1 for the option `name`.
fn share(name: &'static str) -> impl Fn(&str) -> Result<f64, String> + Clone {
    move |text| snapshot_rules::parse_share(name, text).map_err(|error| error.to_string())
}

fn parse_index(text: &str) -> Result<IndexChoice, String> {
    IndexChoice::parse(text).ok_or_else(|| format!("`{text}` is not catalogue, listings or all"))
}

#[derive(Subcommand)]
enum PicturesAction {
    /// Fetch and crop the pending pictures (and failed ones due a retry, and lost crops).
    Fetch {
        #[command(flatten)]
        pictures: PictureArgs,
    },
}

/// Settings of the image worker, shared by `serve` and `pictures fetch`.
#[derive(Args)]
struct PictureArgs {
    /// A network the fetcher may reach although it is not public (address or CIDR, e.g.
    /// 127.0.0.1 or 10.0.0.0/8); repeat or comma-separate. By default only public addresses
    /// are fetched from.
    #[arg(
        long = "fetch-allow",
        env = "WATCH_CATALOGUE_FETCH_ALLOW",
        value_delimiter = ',',
        value_parser = watch_catalogue::config::parse_net
    )]
    fetch_allow: Vec<ipnet::IpNet>,
    /// Seconds to wait for a connection to a picture's source.
    #[arg(
        long,
        env = "WATCH_CATALOGUE_FETCH_CONNECT_TIMEOUT_SECS",
        default_value_t = 5
    )]
    fetch_connect_timeout_secs: u64,
    /// Seconds a whole fetch may take, redirects included.
    #[arg(long, env = "WATCH_CATALOGUE_FETCH_TIMEOUT_SECS", default_value_t = 30)]
    fetch_timeout_secs: u64,
    /// Largest picture fetched, in bytes.
    #[arg(long, env = "WATCH_CATALOGUE_FETCH_MAX_BYTES", default_value_t = 15 * 1024 * 1024)]
    fetch_max_bytes: u64,
    /// Fetches in flight at once.
    #[arg(long, env = "WATCH_CATALOGUE_FETCH_CONCURRENCY", default_value_t = watch_catalogue::jobs::pictures::DEFAULT_CONCURRENCY)]
    fetch_concurrency: usize,
    /// Side of a cropped picture, in pixels, at most.
    #[arg(long, env = "WATCH_CATALOGUE_CROP_SIZE", default_value_t = watch_catalogue::jobs::pictures::DEFAULT_CROP_SIZE)]
    crop_size: u32,
    /// Largest picture taken, in pixels; a larger one is refused from its header, undecoded.
    #[arg(long, env = "WATCH_CATALOGUE_FETCH_MAX_PIXELS", default_value_t = watch_catalogue::media::fetch::DEFAULT_MAX_PIXELS)]
    fetch_max_pixels: u64,
    /// Pixels decoded and cropped at once, summed over the pictures in hand (the worker's
    /// decoding memory grows with it) [default: --fetch-max-pixels].
    #[arg(long, env = "WATCH_CATALOGUE_DECODE_BUDGET_PIXELS")]
    decode_budget_pixels: Option<u64>,
}

impl PictureArgs {
    fn config(self, enabled: bool) -> WorkerConfig {
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

/// How `serve` holds connections (docs/operations.md, "Connections").
#[derive(Args)]
struct ConnectionArgs {
    /// Seconds a client has to send a request's head (request line and headers) after
    /// connecting or after the previous answer; the connection is closed otherwise. Also how
    /// long a keep-alive connection may wait for its next request.
    #[arg(long, env = "WATCH_CATALOGUE_HEADER_READ_TIMEOUT_SECS", default_value_t = DEFAULT_HEADER_READ_TIMEOUT_SECS)]
    header_read_timeout_secs: u64,
    /// Seconds the server waits on a client (the rest of a body, reading the answer) without a
    /// byte moving before it closes the connection.
    #[arg(long, env = "WATCH_CATALOGUE_IDLE_TIMEOUT_SECS", default_value_t = DEFAULT_IDLE_TIMEOUT_SECS)]
    idle_timeout_secs: u64,
    /// Connections open at once; at the cap the next one waits to be accepted until one closes.
    #[arg(long, env = "WATCH_CATALOGUE_MAX_CONNECTIONS", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// On SIGINT or SIGTERM, seconds the open connections have to finish their requests
    /// before they are closed.
    #[arg(long, env = "WATCH_CATALOGUE_SHUTDOWN_GRACE_SECS", default_value_t = DEFAULT_SHUTDOWN_GRACE_SECS)]
    shutdown_grace_secs: u64,
}

impl ConnectionArgs {
    fn config(self) -> ConnectionConfig {
        ConnectionConfig {
            header_read_timeout: Duration::from_secs(self.header_read_timeout_secs.max(1)),
            idle_timeout: Duration::from_secs(self.idle_timeout_secs.max(1)),
            max_connections: self.max_connections.max(1),
            shutdown_grace: Duration::from_secs(self.shutdown_grace_secs),
        }
    }
}

#[derive(Subcommand)]
enum UserAction {
    /// Add a user; the password comes from standard input.
    Add {
        name: String,
        /// `admin` (the back office) or `viewer` (a session, no back office).
        #[arg(long, default_value = "admin")]
        role: String,
    },
    /// List users and their roles.
    List,
    /// Remove a user and end their sessions.
    Remove { name: String },
    /// Set a user's password (from standard input) and end their sessions.
    Passwd { name: String },
    /// Set a user's role and end their sessions.
    Role { name: String, role: String },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One line of causes, outermost first; no backtrace for an operator's mistake.
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// An import builds its whole checked dataset in memory before it writes (nothing is written
/// when a line is wrong): gigabytes of fresh allocations. With transparent huge pages the kernel
/// zeroes a 2 MiB page at each first touch, and again after mimalloc hands one back: reading and
/// checking a million models took 14.4 s with them, 9.5 s without (bench/RESULTS.md, "Import in
/// parallel"). An offline ingest too, since it got lighter: 6 % shorter and 3 s less kernel time
/// at a million listings without them, no different either way at four million
/// ("Transparent huge pages off for an offline ingest", "The 10M ingest again"). The server keeps
/// them: nothing was measured there.
fn without_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(error) = rustix::thread::disable_transparent_huge_pages(true) {
        tracing::debug!(%error, "transparent huge pages left on");
    }
}

impl Command {
    /// What the command may find at `--data-dir`; `None` when it does not open one.
    fn data_dir_expected(&self) -> Option<Expect> {
        match self {
            Command::Serve { .. } | Command::Import { .. } => Some(Expect::ExistingOrNew),
            Command::Openapi => None,
            Command::Ingest { remote, .. }
            | Command::Match { remote }
            | Command::Rates { remote, .. }
            | Command::Reindex { remote, .. }
            | Command::Duplicates { remote, .. } => {
                remote.server.is_none().then_some(Expect::Existing)
            }
            Command::User { .. } | Command::Migrate | Command::Pictures { .. } => {
                Some(Expect::Existing)
            }
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let data_dir = DataDir::new(cli.data_dir);
    let found = match cli.command.data_dir_expected() {
        Some(expect) => Some(data_dir::check(&data_dir, expect)?),
        None => None,
    };
    if matches!(cli.command, Command::Serve { .. }) && found == Some(Found::New) {
        data_dir::fixtures_due(&data_dir)?;
    }
    let cache_bytes = cli.cache_bytes.unwrap_or(DEFAULT_CACHE_BYTES);
    match cli.command {
        Command::Serve {
            addr,
            rate_limit,
            rate_window_secs,
            trusted_proxies,
            sunset,
            successor,
            media_base_url,
            session_idle_secs,
            session_max_secs,
            behind_tls,
            admin_rate_limit,
            max_running_requests,
            max_waiting_requests,
            snapshot_limit,
            metrics_token_file,
            no_picture_worker,
            pictures,
            connections,
        } => {
            let metrics_token = metrics_token(metrics_token_file)?;
            if metrics_token.is_none() && !addr.ip().is_loopback() {
                tracing::warn!(%addr, "GET /metrics answers anyone who reaches this address: set WATCH_CATALOGUE_METRICS_TOKEN or --metrics-token-file");
            }
            let deprecation = match sunset {
                Some(sunset) => Some(Deprecation::new(
                    &sunset,
                    successor.as_deref().unwrap_or(""),
                    SystemTime::now(),
                )?),
                None => None,
            };
            let rate_limit = RateLimitConfig {
                limit: rate_limit,
                window: Duration::from_secs(rate_window_secs.max(1)),
                trusted_proxies,
                ..RateLimitConfig::default()
            };
            let sessions = SessionPolicy {
                idle: Duration::from_secs(session_idle_secs.max(1)),
                absolute: Duration::from_secs(session_max_secs.max(1)),
                secure_cookie: behind_tls,
            };
            let api = ApiConfig {
                rate_limit,
                deprecation,
                media_base_url,
                sessions,
                admin_rate_limit,
                capacity: capacity(max_running_requests, max_waiting_requests),
                snapshot_limit,
                metrics_token,
                ..ApiConfig::default()
            };
            let config = ServeConfig {
                data_dir,
                addr,
                cache_bytes,
                api,
                pictures: pictures.config(!no_picture_worker),
                connections: connections.config(),
            };
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            let served = runtime.block_on(watch_catalogue::server::serve(config));
            // The store is flushed by then; a picture fetch still resolving a host name on a
            // blocking thread must not hold the exit up.
            runtime.shutdown_timeout(Duration::from_secs(1));
            served
        }
        Command::Import { dir } => {
            let cache_bytes = cli.cache_bytes.unwrap_or(IMPORT_CACHE_BYTES);
            import(&data_dir, cache_bytes, dir)
        }
        Command::Ingest {
            provider,
            file,
            max_invalid,
            max_delist,
            allow_mass_delist,
            remote,
        } => {
            std::fs::File::open(&file).with_context(|| format!("opening {}", file.display()))?;
            let rules = SnapshotRules {
                max_invalid,
                max_delist,
                mass_delist_allowed_by: allow_mass_delist.then_some(Actor::Cli),
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
                &data_dir,
                cache_bytes,
                Batch::Snapshot {
                    provider,
                    file,
                    name,
                    rules,
                },
            )
        }
        Command::Match { remote } => match remote.server {
            Some(server) => run_remote(&server, Submission::Match),
            None => run_local(&data_dir, cache_bytes, Batch::Match),
        },
        Command::Rates { file, remote } => {
            let xml = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            match remote.server {
                Some(server) => run_remote(&server, Submission::Rates { file }),
                None => run_local(&data_dir, cache_bytes, Batch::Rates { xml })
                    .with_context(|| format!("loading {}", file.display())),
            }
        }
        Command::Migrate => {
            println!("{}", watch_catalogue::app::migrate(&data_dir, cache_bytes)?);
            Ok(())
        }
        Command::User { action } => {
            let app = App::open(&data_dir, cache_bytes)?;
            run_user(&app, action)
        }
        Command::Pictures {
            action: PicturesAction::Fetch { pictures },
        } => {
            // A stopped data dir has no requests to keep a core for.
            let config = WorkerConfig {
                crop_slots: Some(watch_catalogue::jobs::pictures::cores()),
                ..pictures.config(true)
            };
            fetch_pictures(&data_dir, cache_bytes, config)
        }
        Command::Openapi => {
            println!("{}", watch_catalogue::api::openapi::document_json());
            Ok(())
        }
        Command::Reindex { index, remote } => match remote.server {
            Some(server) => run_remote(&server, Submission::Reindex(index)),
            None => run_local(&data_dir, cache_bytes, Batch::Reindex(index)),
        },
        Command::Duplicates { rebuild: _, remote } => match remote.server {
            Some(server) => run_remote(&server, Submission::Duplicates),
            None => run_local(&data_dir, cache_bytes, Batch::Duplicates),
        },
    }
}

/// `import DIR`: the dataset into the data dir, marked as under way until it ends, so a crash
/// part-way is found by the next `serve` rather than served or topped up with the demo.
fn import(data_dir: &DataDir, cache_bytes: u64, dir: PathBuf) -> anyhow::Result<()> {
    anyhow::ensure!(dir.is_dir(), "{} is not a dataset directory", dir.display());
    anyhow::ensure!(
        !data_dir::is_marked(&dir),
        "{} is a data dir, not a dataset: the dataset is `import`'s argument, the data dir is --data-dir",
        dir.display()
    );
    let source = std::fs::canonicalize(&dir)
        .unwrap_or_else(|_| dir.clone())
        .display()
        .to_string();
    if let Some(under_way) = data_dir::import_under_way(data_dir)? {
        anyhow::ensure!(
            under_way.source == source,
            "an import of {} into {} (started {}) was cut short: import it again to complete it first, or remove {} to accept the store as it is",
            under_way.source,
            data_dir.path().display(),
            under_way.started_at,
            data_dir.path().join("import-under-way.json").display()
        );
    }
    without_transparent_huge_pages();
    // Marked once the store is ours (its lock taken), before the import's first write.
    let app = App::open(data_dir, cache_bytes)?;
    let mark = ImportMark::begin(data_dir, &source)?;
    let source = DirectorySource(dir);
    let imported = match app
        .writer
        .run(|turn| import_dataset(turn, &source, &app.media))
    {
        Ok(done) => done.value,
        Err(WriteError::Job(error)) if error.is_refusal() => {
            mark.finish()?;
            return Err(error.into());
        }
        Err(error) => return Err(error.into()),
    };
    println!("imported {}\n{}", source.describe(), imported.catalogue);
    for (provider, report) in imported.feeds {
        print_report(&batch::ingest_lines(&provider, &report));
    }
    app.prepare(false)?;
    mark.finish()?;
    drop(app);
    watch_catalogue::app::snapshot_store(data_dir, cache_bytes);
    Ok(())
}

/// A batch job on the data dir, its report printed (skipped lines on standard error), then
/// the store opened once more so that sled snapshots it (`app::snapshot_store`).
fn run_local(data_dir: &DataDir, cache_bytes: u64, job: Batch) -> anyhow::Result<()> {
    let app = App::open(data_dir, cache_bytes)?;
    let control = JobControl::default().paced(TestPacing::from_env());
    match batch::run(&app, &job, &control) {
        Ok(report) => {
            print_report(&report);
            // The next start then replays none of the job's log.
            drop(app);
            watch_catalogue::app::snapshot_store(data_dir, cache_bytes);
            Ok(())
        }
        Err(error) => {
            eprint!("{}", error.report().unwrap_or_default());
            Err(error.into())
        }
    }
}

/// The token `GET /metrics` asks for: from `WATCH_CATALOGUE_METRICS_TOKEN`, or the file
/// `--metrics-token-file` names; never a command-line argument, which other users of the host
/// could read in the process list.
fn metrics_token(file: Option<PathBuf>) -> anyhow::Result<Option<MetricsToken>> {
    let from_env = std::env::var_os(METRICS_TOKEN_ENV);
    let text = match (from_env, file) {
        (Some(_), Some(_)) => anyhow::bail!(
            "both {METRICS_TOKEN_ENV} and --metrics-token-file are set: give the metrics token once"
        ),
        (Some(token), None) => token
            .into_string()
            .map_err(|_| anyhow::anyhow!("{METRICS_TOKEN_ENV} is not UTF-8"))?,
        (None, Some(file)) => std::fs::read_to_string(&file)
            .with_context(|| format!("reading the metrics token from {}", file.display()))?,
        (None, None) => return Ok(None),
    };
    Ok(Some(MetricsToken::new(&text)?))
}

const METRICS_TOKEN_ENV: &str = "WATCH_CATALOGUE_METRICS_TOKEN";

/// The request slots of `serve`: the defaults, or what the flags set.
fn capacity(running: Option<usize>, waiting: Option<usize>) -> CapacityConfig {
    let default = CapacityConfig::default();
    CapacityConfig {
        running: running.unwrap_or(default.running),
        waiting: waiting.unwrap_or(default.waiting),
    }
}

fn print_report(report: &BatchReport) {
    eprint!("{}", report.skipped);
    print!("{}", report.summary);
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

/// `watch-catalogue user ...`, as the operator at the host (`cli` in the audit trail).
fn run_user(app: &App, action: UserAction) -> anyhow::Result<()> {
    let actor = Actor::Cli;
    let parse_role = |role: &str| {
        Role::parse(role).with_context(|| format!("`{role}` is not a role: admin or viewer"))
    };
    match action {
        UserAction::Add { name, role } => {
            let (name, role) = (Username::parse(&name)?, parse_role(&role)?);
            let password = read_password()?;
            app.writer
                .run(|turn| users::add_user(turn, &actor, &name, role, &password))?;
            println!("added {name} ({})", role.as_str());
        }
        UserAction::List => {
            for user in users::list_users(&app.store)? {
                let since = user.created_at.to_rfc3339();
                println!("{}\t{}\tsince {since}", user.name, user.role.as_str());
            }
        }
        UserAction::Remove { name } => {
            let name = Username::parse(&name)?;
            app.writer
                .run(|turn| users::remove_user(turn, &actor, &name))?;
            println!("removed {name}; their sessions are ended");
        }
        UserAction::Passwd { name } => {
            let name = Username::parse(&name)?;
            let password = read_password()?;
            app.writer
                .run(|turn| users::set_password(turn, &actor, &name, &password))?;
            println!("password of {name} changed; their sessions are ended");
        }
        UserAction::Role { name, role } => {
            let (name, role) = (Username::parse(&name)?, parse_role(&role)?);
            app.writer
                .run(|turn| users::set_role(turn, &actor, &name, role))?;
            println!("{name} is now {}; their sessions are ended", role.as_str());
        }
    }
    Ok(())
}

/// A password from standard input: asked twice without echo on a terminal, else its first
/// line. Never an argument, which other users of the host could read in the process list.
fn read_password() -> anyhow::Result<String> {
    if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("password: ")?;
        let again = rpassword::prompt_password("again: ")?;
        anyhow::ensure!(first == again, "the two passwords differ");
        return Ok(first);
    }
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    let password = line.trim_end_matches(['\n', '\r']).to_owned();
    anyhow::ensure!(!password.is_empty(), "no password on standard input");
    Ok(password)
}

/// `pictures fetch`: one pass of the image worker over a stopped data dir.
fn fetch_pictures(
    data_dir: &DataDir,
    cache_bytes: u64,
    config: WorkerConfig,
) -> anyhow::Result<()> {
    let app = std::sync::Arc::new(App::open(data_dir, cache_bytes)?);
    let worker = std::sync::Arc::new(PictureWorker::new(app.media.clone(), &config)?);
    let report = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(run_pass(&app, &worker))?;
    println!(
        "pictures: {} fetched, {} cropped again, {} failed; listing candidates ranked for {} models",
        report.fetched, report.cropped, report.failed, report.ranked
    );
    app.store.flush()?;
    Ok(())
}
