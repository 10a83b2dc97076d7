//! `watch-catalogue`: serve the API, or run a batch job on a data dir no server holds, or as a
//! job of the server that holds it (`--server`). The command line itself is [`cli`].

mod cli;

use clap::Parser;
use std::io::IsTerminal;
use std::process::ExitCode;

/// glibc's malloc fragments under sled's allocation pattern, so store reads slowed once the
/// server's long-lived state was allocated; mimalloc keeps reads at their cost
/// (docs/decisions.md, D-73).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    match cli::run(cli::Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One line of causes, outermost first; no backtrace for an operator's mistake.
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
