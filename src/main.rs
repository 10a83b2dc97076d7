//! `watch-catalogue`: serve the API, or run a batch job on a data dir no server holds.

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
use watch_catalogue::app::App;
use watch_catalogue::auth::SessionPolicy;
use watch_catalogue::config::{
    ApiConfig, DataDir, Deprecation, RateLimitConfig, ServeConfig, DEFAULT_ADDR,
    DEFAULT_CACHE_BYTES, DEFAULT_DATA_DIR, DEFAULT_MEDIA_BASE_URL, DEFAULT_RATE_LIMIT,
    DEFAULT_RATE_WINDOW_SECS,
};
use watch_catalogue::domain::{Role, Username};
use watch_catalogue::jobs::dataset::import_dataset;
use watch_catalogue::jobs::duplicates;
use watch_catalogue::jobs::import::{DatasetSource, DirectorySource};
use watch_catalogue::jobs::ingest;
use watch_catalogue::jobs::listing_writes::WrittenListings;
use watch_catalogue::jobs::matching::rematch_unmatched;
use watch_catalogue::jobs::pictures::{run_pass, PictureWorker, WorkerConfig};
use watch_catalogue::jobs::rates::load_rates;
use watch_catalogue::jobs::users::{self, Actor};
use watch_catalogue::jobs::writer::{WriteError, Written};
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
    /// sled page cache in bytes.
    #[arg(long, global = true, env = "WATCH_CATALOGUE_CACHE_BYTES", default_value_t = DEFAULT_CACHE_BYTES)]
    cache_bytes: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API; an empty data dir is first filled with the bundled fixtures.
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
            value_delimiter = ','
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
        /// Do not run the image worker in the server.
        #[arg(long, env = "WATCH_CATALOGUE_NO_PICTURE_WORKER")]
        no_picture_worker: bool,
        #[command(flatten)]
        pictures: PictureArgs,
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
        /// Share of invalid lines above which the snapshot is refused whole.
        #[arg(long, default_value_t = watch_catalogue::jobs::ingest::DEFAULT_MAX_INVALID)]
        max_invalid: f64,
    },
    /// Try every unmatched listing again (after an import added models).
    Match,
    /// Load an ECB daily reference-rates file (eurofxref-daily.xml) as the rates in force.
    Rates {
        /// The ECB's XML file.
        file: PathBuf,
    },
    /// Rebuild the search indexes from the store, then the duplicate finder's pairs.
    Reindex,
    /// The duplicate finder: `--rebuild` runs its full pass over every model.
    Duplicates {
        /// Find every model's pairs afresh (on every core).
        #[arg(long, required = true)]
        rebuild: bool,
    },
    /// Bring the store up to this binary's schema, in place (stop the server first).
    Migrate,
    /// Print the OpenAPI document of the API.
    Openapi,
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
    /// A network the fetcher may reach although it is not public (CIDR, e.g. 127.0.0.1/32);
    /// repeat or comma-separate. By default only public addresses are fetched from.
    #[arg(
        long = "fetch-allow",
        env = "WATCH_CATALOGUE_FETCH_ALLOW",
        value_delimiter = ','
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
                ..defaults.fetch
            },
            concurrency: self.fetch_concurrency.max(1),
            crop_size: self.crop_size.max(1),
            enabled,
            crop_slots: defaults.crop_slots,
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

fn run(cli: Cli) -> anyhow::Result<()> {
    let data_dir = DataDir::new(cli.data_dir);
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
            no_picture_worker,
            pictures,
        } => {
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
                ..ApiConfig::default()
            };
            let config = ServeConfig {
                data_dir,
                addr,
                cache_bytes: cli.cache_bytes,
                api,
                pictures: pictures.config(!no_picture_worker),
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
            anyhow::ensure!(dir.is_dir(), "{} is not a dataset directory", dir.display());
            let app = App::open(&data_dir, cli.cache_bytes)?;
            let source = DirectorySource(dir);
            let imported = app
                .writer
                .run(|turn| import_dataset(turn, &source, &app.media))?
                .value;
            println!("imported {}\n{}", source.describe(), imported.catalogue);
            for (provider, report) in imported.feeds {
                print_ingest(&provider, &report);
            }
            app.prepare(false)
        }
        Command::Ingest {
            provider,
            file,
            max_invalid,
        } => {
            anyhow::ensure!(
                (0.0..=1.0).contains(&max_invalid),
                "--max-invalid is a share between 0 and 1, not {max_invalid}"
            );
            let snapshot = std::fs::File::open(&file)
                .with_context(|| format!("opening {}", file.display()))?;
            let app = App::open(&data_dir, cli.cache_bytes)?;
            let name = file.display().to_string();
            let snapshot = std::io::BufReader::new(snapshot);
            let result = app
                .writer
                .run(|turn| ingest::ingest(turn, &provider, &name, snapshot, max_invalid));
            if let Err(WriteError::Job(
                ingest::IngestError::EmptySnapshot { problems }
                | ingest::IngestError::MostlyInvalid { problems, .. },
            )) = &result
            {
                problems.iter().take(20).for_each(|p| eprintln!("  {p}"));
            }
            let done = result?;
            print_ingest(&provider, &done.value);
            print_write_times(&done.value.written, &done);
            Ok(())
        }
        Command::Match => {
            let app = App::open(&data_dir, cli.cache_bytes)?;
            let done = app.writer.run(rematch_unmatched)?;
            let report = &done.value;
            println!(
                "matched {} of {} unmatched listings; store generation {}",
                report.matched, report.tried, report.written.generation.0
            );
            print_write_times(&report.written, &done);
            Ok(())
        }
        Command::Rates { file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let app = App::open(&data_dir, cli.cache_bytes)?;
            let report = app
                .writer
                .run(|turn| load_rates(turn, &text))
                .with_context(|| format!("loading {}", file.display()))?
                .value;
            println!(
                "loaded the ECB rates of {}: {} currencies per euro, {} in the USD table; store generation {}",
                report.date, report.currencies, report.convertible, report.generation.0
            );
            Ok(())
        }
        Command::Migrate => {
            println!(
                "{}",
                watch_catalogue::app::migrate(&data_dir, cli.cache_bytes)?
            );
            Ok(())
        }
        Command::User { action } => {
            let app = App::open(&data_dir, cli.cache_bytes)?;
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
            fetch_pictures(&data_dir, cli.cache_bytes, config)
        }
        Command::Openapi => {
            println!("{}", watch_catalogue::api::openapi::document_json());
            Ok(())
        }
        Command::Reindex => {
            let app = App::open(&data_dir, cli.cache_bytes)?;
            let started = std::time::Instant::now();
            let (catalogue, listings) = app.writer.rebuild_indexes()?;
            println!(
                "indexed {} catalogue documents at store generation {}",
                catalogue.documents, catalogue.generation
            );
            println!(
                "indexed {} listings at store generation {}; both in {:.2?}",
                listings.documents,
                listings.generation,
                started.elapsed()
            );
            rebuild_duplicates(&app)
        }
        Command::Duplicates { rebuild: _ } => {
            let app = App::open(&data_dir, cli.cache_bytes)?;
            rebuild_duplicates(&app)
        }
    }
}

/// The request slots of `serve`: the defaults, or what the flags set.
fn capacity(running: Option<usize>, waiting: Option<usize>) -> CapacityConfig {
    let default = CapacityConfig::default();
    CapacityConfig {
        running: running.unwrap_or(default.running),
        waiting: waiting.unwrap_or(default.waiting),
    }
}

/// The duplicate finder's full pass, reported.
fn rebuild_duplicates(app: &App) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let pairs = app.writer.run(duplicates::rebuild)?.value;
    let took = started.elapsed();
    let groups = duplicates::groups(&app.store)?;
    println!(
        "duplicates: {pairs} pairs in {} groups, found in {took:.2?}",
        groups.len()
    );
    Ok(())
}

/// How long a listings write and the index updates after it took: on millions of listings
/// either can dominate.
fn print_write_times<T>(written: &WrittenListings, done: &Written<T>) {
    println!(
        "{} listings written in {:.1} s in {} commits; indexes up to date after {:.1} s more",
        written.listings,
        done.write_took.as_secs_f64(),
        written.commits,
        done.index_took.as_secs_f64()
    );
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

/// One line per skipped snapshot line, then what the ingest did.
fn print_ingest(provider: &str, report: &ingest::IngestReport) {
    for problem in &report.skipped {
        eprintln!("skipped {problem}");
    }
    println!(
        "ingested {provider}: {} created, {} refreshed, {} reactivated, {} delisted; {} matched, {} unmatched; {} lines skipped; store generation {}",
        report.created, report.refreshed, report.reactivated, report.delisted, report.matched, report.unmatched,
        report.skipped.len(), report.written.generation.0
    );
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
