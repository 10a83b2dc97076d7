//! `user ...`: the back office's users, managed by the operator at the host on a stopped data
//! dir (`cli` in the audit trail), or through a running server with `--server` (signed in as an
//! admin, who is named in the audit trail). Passwords come from standard input, never from
//! arguments or URLs.

use super::client::{self, Credentials};
use super::Local;
use anyhow::Context;
use clap::Subcommand;
use reqwest::Method;
use serde_json::{json, Value};
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

/// What a user command did, as it prints it.
enum Done {
    Added { name: String, role: String },
    Listed(Vec<(String, String, String)>),
    Removed { name: String },
    PasswordSet { name: String },
    RoleSet { name: String, role: String },
}

impl Done {
    fn print(&self) {
        match self {
            Done::Added { name, role } => println!("added {name} ({role})"),
            Done::Listed(users) => {
                for (name, role, since) in users {
                    println!("{name}\t{role}\tsince {since}");
                }
            }
            Done::Removed { name } => println!("removed {name}; their sessions are ended"),
            Done::PasswordSet { name } => {
                println!("password of {name} changed; their sessions are ended")
            }
            Done::RoleSet { name, role } => {
                println!("{name} is now {role}; their sessions are ended")
            }
        }
    }
}

/// `watch-catalogue user ...` on the data dir, or through the server at `server`.
pub fn run(action: UserAction, server: Option<&str>, local: &Local) -> anyhow::Result<()> {
    let done = match server {
        Some(server) => through_server(server, action)?,
        None => manage(&local.open()?, action)?,
    };
    done.print();
    Ok(())
}

fn parse_role(role: &str) -> anyhow::Result<Role> {
    Role::parse(role).with_context(|| format!("`{role}` is not a role: admin or viewer"))
}

fn manage(app: &App, action: UserAction) -> anyhow::Result<Done> {
    let actor = Actor::Cli;
    Ok(match action {
        UserAction::Add { name, role } => {
            let (name, role) = (Username::parse(&name)?, parse_role(&role)?);
            let password = read_password(&name)?;
            app.writer()
                .run(|turn| users::add_user(turn, &actor, &name, role, &password))?;
            Done::Added {
                name: name.to_string(),
                role: role.as_str().to_owned(),
            }
        }
        UserAction::List => Done::Listed(
            (users::list_users(app.store())?.into_iter())
                .map(|user| {
                    let since = user.created_at.to_rfc3339();
                    (user.name.to_string(), user.role.as_str().to_owned(), since)
                })
                .collect(),
        ),
        UserAction::Remove { name } => {
            let name = Username::parse(&name)?;
            app.writer()
                .run(|turn| users::remove_user(turn, &actor, &name))?;
            Done::Removed {
                name: name.to_string(),
            }
        }
        UserAction::Passwd { name } => {
            let name = Username::parse(&name)?;
            let password = read_password(&name)?;
            app.writer()
                .run(|turn| users::set_password(turn, &actor, &name, &password))?;
            Done::PasswordSet {
                name: name.to_string(),
            }
        }
        UserAction::Role { name, role } => {
            let (name, role) = (Username::parse(&name)?, parse_role(&role)?);
            app.writer()
                .run(|turn| users::set_role(turn, &actor, &name, role))?;
            Done::RoleSet {
                name: name.to_string(),
                role: role.as_str().to_owned(),
            }
        }
    })
}

/// The same commands through `/v1/admin/users` of the server at `server`, signed in as
/// `WATCH_CATALOGUE_USER` (asked for on a terminal); a new password is read after the admin's
/// and travels in the request's body only.
fn through_server(server: &str, action: UserAction) -> anyhow::Result<Done> {
    let credentials = Credentials::from_env_or_prompt()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let call = |method: Method, path: String, body: Option<Value>, doing: &str| {
        runtime.block_on(client::request(
            server,
            &credentials,
            method,
            &path,
            body,
            doing,
        ))
    };
    let segment = |name: &str| -> anyhow::Result<String> { Ok(Username::parse(name)?.to_string()) };
    Ok(match action {
        UserAction::Add { name, role } => {
            let name = Username::parse(&name)?;
            parse_role(&role)?;
            let password = read_password(&name)?;
            let body = json!({"name": name.as_str(), "role": role, "password": password});
            let user = call(
                Method::POST,
                "/admin/users".into(),
                Some(body),
                "adding the user",
            )?;
            Done::Added {
                name: field(&user, "name"),
                role: field(&user, "role"),
            }
        }
        UserAction::List => {
            let users = call(
                Method::GET,
                "/admin/users".into(),
                None,
                "listing the users",
            )?;
            let users = users["data"].as_array().cloned().unwrap_or_default();
            Done::Listed(
                (users.iter())
                    .map(|u| (field(u, "name"), field(u, "role"), field(u, "createdAt")))
                    .collect(),
            )
        }
        UserAction::Remove { name } => {
            let path = format!("/admin/users/{}", segment(&name)?);
            let removed = call(Method::DELETE, path, None, "removing the user")?;
            Done::Removed {
                name: field(&removed, "name"),
            }
        }
        UserAction::Passwd { name } => {
            let name = Username::parse(&name)?;
            let password = read_password(&name)?;
            let path = format!("/admin/users/{name}/password");
            let body = json!({ "password": password });
            let user = call(Method::PUT, path, Some(body), "setting the password")?;
            Done::PasswordSet {
                name: field(&user, "name"),
            }
        }
        UserAction::Role { name, role } => {
            parse_role(&role)?;
            let path = format!("/admin/users/{}/role", segment(&name)?);
            let user = call(
                Method::PUT,
                path,
                Some(json!({ "role": role })),
                "setting the role",
            )?;
            Done::RoleSet {
                name: field(&user, "name"),
                role: field(&user, "role"),
            }
        }
    })
}

/// A text field of an answer, empty when absent.
fn field(value: &Value, name: &str) -> String {
    value[name].as_str().unwrap_or_default().to_owned()
}

/// The password for `name` from standard input: asked twice without echo on a terminal, else
/// its first line. Never an argument, which other users of the host could read in the process
/// list.
fn read_password(name: &Username) -> anyhow::Result<String> {
    if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password(format!("password of {name}: "))?;
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
