//! `user ...`: the back office's users managed by the operator at the host (`cli` in the audit
//! trail); passwords from standard input, never from arguments.

use super::Local;
use anyhow::Context;
use clap::Subcommand;
use std::io::IsTerminal;
use watch_catalogue::app::App;
use watch_catalogue::domain::{Role, Username};
use watch_catalogue::jobs::users::{self, Actor};

#[derive(Subcommand)]
pub enum UserAction {
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

/// `watch-catalogue user ...` on the data dir.
pub fn run(action: UserAction, local: &Local) -> anyhow::Result<()> {
    let app = local.open()?;
    manage(&app, action)
}

fn manage(app: &App, action: UserAction) -> anyhow::Result<()> {
    let actor = Actor::Cli;
    let parse_role = |role: &str| {
        Role::parse(role).with_context(|| format!("`{role}` is not a role: admin or viewer"))
    };
    match action {
        UserAction::Add { name, role } => {
            let (name, role) = (Username::parse(&name)?, parse_role(&role)?);
            let password = read_password()?;
            app.writer()
                .run(|turn| users::add_user(turn, &actor, &name, role, &password))?;
            println!("added {name} ({})", role.as_str());
        }
        UserAction::List => {
            for user in users::list_users(app.store())? {
                let since = user.created_at.to_rfc3339();
                println!("{}\t{}\tsince {since}", user.name, user.role.as_str());
            }
        }
        UserAction::Remove { name } => {
            let name = Username::parse(&name)?;
            app.writer()
                .run(|turn| users::remove_user(turn, &actor, &name))?;
            println!("removed {name}; their sessions are ended");
        }
        UserAction::Passwd { name } => {
            let name = Username::parse(&name)?;
            let password = read_password()?;
            app.writer()
                .run(|turn| users::set_password(turn, &actor, &name, &password))?;
            println!("password of {name} changed; their sessions are ended");
        }
        UserAction::Role { name, role } => {
            let (name, role) = (Username::parse(&name)?, parse_role(&role)?);
            app.writer()
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
