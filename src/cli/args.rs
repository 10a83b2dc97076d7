//! The command tree as clap parses it: the global options, one variant per command, and the
//! value parsers several commands share. Each command group's own options live in its module
//! (`serve`, `batch`, `pictures`, `users`), beside the code that turns them into settings.

use super::batch::{DuplicatesAction, IngestArgs, Remote};
use super::pictures::PicturesAction;
use super::serve::ServeArgs;
use super::users::UserAction;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use watch_catalogue::domain::Timestamp;
use watch_catalogue::jobs::writer::IndexChoice;

/// Default data directory, relative to the working directory.
const DEFAULT_DATA_DIR: &str = "./data";

#[derive(Parser)]
#[command(
    name = "watch-catalogue",
    version,
    about = "Search-engine-backed catalogue service for wristwatches"
)]
pub struct Cli {
    /// Data directory (sled store in store/, search index in index/).
    #[arg(long, global = true, env = "WATCH_CATALOGUE_DATA_DIR", default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// sled page cache in bytes [default: 268435456; 536870912 for import].
    #[arg(long, global = true, env = "WATCH_CATALOGUE_CACHE_BYTES")]
    pub cache_bytes: Option<u64>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
// Parsed once at start: the size of `serve`'s many flags costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Serve the API; a new data dir (an absent or empty folder) is first filled with the
    /// bundled fixtures.
    Serve(ServeArgs),
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
        /// Manage them through the server at this URL (e.g. http://127.0.0.1:8080) while it
        /// runs, signed in as the admin WATCH_CATALOGUE_USER with WATCH_CATALOGUE_PASSWORD
        /// (asked for on a terminal), instead of opening the data dir.
        #[arg(long, global = true)]
        server: Option<String>,
    },
    /// Import a dataset directory (docs/dataset-format.md): all of it, or nothing.
    Import {
        /// The dataset directory.
        dir: PathBuf,
        /// When its providers' snapshots were taken (RFC 3339, or a day for its midnight
        /// UTC), as `ingest --observed-at`. Default: now.
        #[arg(long, value_name = "TIME", value_parser = super::batch::observed_at("--observed-at"))]
        observed_at: Option<Timestamp>,
    },
    /// Ingest a provider's full current snapshot (one JSON object per line): create, refresh,
    /// delist, reactivate, match.
    Ingest(IngestArgs),
    /// Try every unmatched listing again (after an import added models).
    Match {
        #[command(flatten)]
        remote: Remote,
    },
    /// Load an ECB reference-rates file, daily (eurofxref-daily.xml) or a history
    /// (eurofxref-hist-90d.xml): every day is kept, the newest in force unless a later day is.
    Rates {
        /// The ECB's XML file.
        file: PathBuf,
        #[command(flatten)]
        remote: Remote,
    },
    /// Rebuild the search indexes from the store, then the duplicate finder's pairs, and fold
    /// every model's price series again.
    Reindex {
        /// catalogue, listings, series (the models' price series) or all.
        #[arg(long, default_value = "all", value_parser = parse_index)]
        index: IndexChoice,
        #[command(flatten)]
        remote: Remote,
    },
    /// The duplicate finder: `duplicates rebuild` runs its full pass over every model.
    // The usage names the one action, so that the old `duplicates --rebuild` is answered with
    // the command that replaced it.
    #[command(override_usage = "watch-catalogue duplicates rebuild [OPTIONS]")]
    Duplicates {
        #[command(subcommand)]
        action: DuplicatesAction,
    },
    /// Bring the store up to this binary's schema, in place (stop the server first).
    Migrate,
    /// Copy the store into a fresh one, compare every record, and swap the copy in: gives back
    /// the space sled's files hold beyond their records (stop the server first; needs free
    /// disk for the copy).
    Compact,
    /// Print the OpenAPI document of the API.
    Openapi,
}

fn parse_index(text: &str) -> Result<IndexChoice, String> {
    IndexChoice::parse(text).ok_or_else(|| format!("`{text}` is not {}", IndexChoice::names()))
}

/// A network as `--trusted-proxy` and `--fetch-allow` take it: an address (`127.0.0.1`, `::1`,
/// meaning that one address, its /32 or /128) or a CIDR (`10.0.0.0/8`). ipnet's own parser
/// wants the prefix, so a plain address, which the help promises, needs this one.
pub fn parse_net(text: &str) -> Result<ipnet::IpNet, String> {
    let text = text.trim();
    if let Ok(net) = text.parse::<ipnet::IpNet>() {
        return Ok(net);
    }
    text.parse::<std::net::IpAddr>()
        .map(ipnet::IpNet::from)
        .map_err(|_| {
            format!("`{text}` is neither an address (127.0.0.1, ::1) nor a CIDR (10.0.0.0/8)")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_tree_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_network_is_an_address_or_a_cidr() {
        let net = |text: &str| parse_net(text).map(|net| net.to_string());
        assert_eq!(net("127.0.0.1"), Ok("127.0.0.1/32".into()));
        assert_eq!(net(" ::1 "), Ok("::1/128".into()));
        assert_eq!(net("10.0.0.0/8"), Ok("10.0.0.0/8".into()));
        assert_eq!(net("2001:db8::/32"), Ok("2001:db8::/32".into()));
        for bad in ["", "localhost", "10.0.0.0/33", "127.0.0.1/", "1.2.3"] {
            assert!(parse_net(bad).is_err(), "{bad}");
        }
        let one = parse_net("127.0.0.1").expect("net");
        assert!(one.contains(&"127.0.0.1".parse::<std::net::IpAddr>().expect("ip")));
        assert!(!one.contains(&"127.0.0.2".parse::<std::net::IpAddr>().expect("ip")));
    }
}
