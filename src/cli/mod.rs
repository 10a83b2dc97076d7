//! The binary's edge: the command line parsed ([`args`]), each command's flags turned into the
//! settings its layers own, and the command run on the data dir or against a running server.
//! No job logic: every write is a job of the library run through its writer.

mod args;
mod batch;
mod client;
mod import;
mod pictures;
mod progress;
mod serve;
mod stop;
mod users;

pub use args::Cli;

use args::Command;
use client::Submission;
use watch_catalogue::app::App;
use watch_catalogue::data_dir::{self, DataDir, Expect, Found, DEFAULT_CACHE_BYTES};
use watch_catalogue::jobs::batch::Batch;

/// The data dir a command opens, and the sled page cache it opens the store with.
pub struct Local {
    pub data_dir: DataDir,
    pub cache_bytes: u64,
}

impl Local {
    fn open(&self) -> anyhow::Result<App> {
        App::open(&self.data_dir, self.cache_bytes)
    }

    /// The store opened once more after a job, so that sled snapshots it and the next start
    /// replays none of the job's log.
    fn snapshot_store(&self) {
        watch_catalogue::app::snapshot_store(&self.data_dir, self.cache_bytes);
    }
}

/// Runs the command `cli` names: the data dir checked first (a new one filled with the bundled
/// fixtures before `serve` opens it), then the command's own module.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let local = Local {
        data_dir: DataDir::new(cli.data_dir),
        cache_bytes: cli.cache_bytes.unwrap_or(cli.command.default_cache_bytes()),
    };
    let found = match cli.command.data_dir_expected() {
        Some(expect) => Some(data_dir::check(&local.data_dir, expect)?),
        None => None,
    };
    if matches!(cli.command, Command::Serve(_)) && found == Some(Found::New) {
        data_dir::fixtures_due(&local.data_dir)?;
    }
    match cli.command {
        Command::Serve(args) => serve::run(args, local),
        Command::Import { dir, observed_at } => import::run(&local, dir, observed_at),
        Command::Ingest(args) => batch::ingest(args, &local),
        Command::Match { remote } => batch::run(remote, &local, Submission::Match, Batch::Match),
        Command::Rates { file, remote } => batch::rates(file, remote, &local),
        Command::Reindex { index, remote } => batch::run(
            remote,
            &local,
            Submission::Reindex(index),
            Batch::Reindex(index),
        ),
        Command::Duplicates {
            action: batch::DuplicatesAction::Rebuild { remote },
        } => batch::run(remote, &local, Submission::Duplicates, Batch::Duplicates),
        Command::Compact => compact(&local),
        Command::Migrate => {
            println!(
                "{}",
                watch_catalogue::app::migrate(&local.data_dir, local.cache_bytes)?
            );
            Ok(())
        }
        Command::User { action, server } => users::run(action, server.as_deref(), &local),
        Command::Pictures { action } => pictures::run(action, &local),
        Command::Openapi => {
            println!("{}", watch_catalogue::api::openapi::document_json());
            Ok(())
        }
    }
}

/// `compact`: the store copied, checked and swapped in, its progress shown; SIGTERM stops the
/// copy with the store as it was.
fn compact(local: &Local) -> anyhow::Result<()> {
    let control = std::sync::Arc::new(
        watch_catalogue::jobs::progress::JobControl::default()
            .paced(watch_catalogue::jobs::progress::TestPacing::from_env()),
    );
    stop::stop_on_signal(control.clone());
    let compacted = {
        let _shown = progress::watch(control.clone(), "compact", "keys");
        watch_catalogue::app::compact(&local.data_dir, local.cache_bytes, &control)?
    };
    match compacted {
        Some(compaction) => {
            println!("{compaction}");
            Ok(())
        }
        None => anyhow::bail!("stopped by a signal: the copy was removed, the store is as it was"),
    }
}

impl Command {
    /// What the command may find at `--data-dir`; `None` when it does not open one.
    fn data_dir_expected(&self) -> Option<Expect> {
        match self {
            Command::Serve(_) | Command::Import { .. } => Some(Expect::ExistingOrNew),
            Command::Openapi => None,
            Command::Ingest(batch::IngestArgs { remote, .. })
            | Command::Match { remote }
            | Command::Rates { remote, .. }
            | Command::Reindex { remote, .. }
            | Command::Duplicates {
                action: batch::DuplicatesAction::Rebuild { remote },
            } => remote.server.is_none().then_some(Expect::Existing),
            Command::User { server, .. } => server.is_none().then_some(Expect::Existing),
            Command::Migrate | Command::Compact | Command::Pictures { .. } => {
                Some(Expect::Existing)
            }
        }
    }

    /// The page cache when `--cache-bytes` is not given.
    fn default_cache_bytes(&self) -> u64 {
        match self {
            Command::Import { .. } => import::IMPORT_CACHE_BYTES,
            _ => DEFAULT_CACHE_BYTES,
        }
    }
}
