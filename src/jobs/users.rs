//! `watch-catalogue user ...`: adding, removing and changing back-office users. Removing a
//! user, changing a role or a password ends every session of that user in the same write, and
//! each change goes into the audit trail with it.

use crate::auth::{hash_password, AuthError};
use crate::domain::{AuditEntry, Role, Timestamp, User, Username};
use crate::store::{Store, StoreError, StoreResult, WriteBatch, WriteTurn};

/// Who did a back-office write: a signed-in user, or the operator at the host's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    User(Username),
    Cli,
}

impl Actor {
    pub fn name(&self) -> String {
        match self {
            Actor::User(name) => name.to_string(),
            Actor::Cli => "cli".to_owned(),
        }
    }
}

/// An audit entry for `actor` doing `action` to `targets` now, with a fresh id.
pub fn audit_entry(
    store: &Store,
    actor: &Actor,
    action: &str,
    targets: Vec<String>,
    detail: impl Into<String>,
) -> StoreResult<AuditEntry> {
    Ok(AuditEntry {
        id: store.audit().next_audit_id()?,
        at: Timestamp::now(),
        user: actor.name(),
        action: action.to_owned(),
        targets,
        detail: detail.into(),
    })
}

/// Why a user change was refused; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    #[error("a user named `{0}` exists already")]
    Exists(Username),
    #[error("no user named `{0}`")]
    Unknown(Username),
    /// An admin removing or demoting their own account from a session: refused, so the
    /// back office always keeps the admin who is using it (the operator at the host may).
    #[error("`{0}` is your own account: another admin, or `watch-catalogue user` at the host, may change it")]
    OwnAccount(Username),
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Adds `name` with `role` and `password`.
pub fn add_user(
    turn: &WriteTurn<'_>,
    actor: &Actor,
    name: &Username,
    role: Role,
    password: &str,
) -> Result<User, UserError> {
    let store = turn.store();
    if store.sessions().user(name)?.is_some() {
        return Err(UserError::Exists(name.clone()));
    }
    let now = Timestamp::now();
    let user = User {
        name: name.clone(),
        role,
        password_hash: hash_password(password)?,
        created_at: now,
        updated_at: now,
    };
    let mut batch = turn.batch()?;
    batch.put_user(&user);
    let detail = format!("role {}", role.as_str());
    batch.put_audit(&audit_entry(
        store,
        actor,
        "user.add",
        targets(name),
        detail,
    )?);
    turn.commit(batch)?;
    Ok(user)
}

/// Removes `name` and ends their sessions; answers how many sessions ended.
pub fn remove_user(
    turn: &WriteTurn<'_>,
    actor: &Actor,
    name: &Username,
) -> Result<usize, UserError> {
    not_own_account(actor, name)?;
    let store = turn.store();
    existing(store, name)?;
    let mut batch = turn.batch()?;
    batch.remove_user(name);
    let ended = end_sessions(store, &mut batch, name)?;
    let detail = format!("{ended} sessions ended");
    batch.put_audit(&audit_entry(
        store,
        actor,
        "user.remove",
        targets(name),
        detail,
    )?);
    turn.commit(batch)?;
    Ok(ended)
}

/// Gives `name` a new password and ends their sessions.
pub fn set_password(
    turn: &WriteTurn<'_>,
    actor: &Actor,
    name: &Username,
    password: &str,
) -> Result<User, UserError> {
    let hash = hash_password(password)?;
    change(turn, actor, name, "user.passwd", |user| {
        user.password_hash = hash
    })
}

/// Gives `name` a new role and ends their sessions.
pub fn set_role(
    turn: &WriteTurn<'_>,
    actor: &Actor,
    name: &Username,
    role: Role,
) -> Result<User, UserError> {
    if role != Role::Admin {
        not_own_account(actor, name)?;
    }
    change(turn, actor, name, "user.role", |user| user.role = role)
}

/// Refuses a signed-in admin's change that would take the back office away from them.
fn not_own_account(actor: &Actor, name: &Username) -> Result<(), UserError> {
    match actor {
        Actor::User(own) if own == name => Err(UserError::OwnAccount(name.clone())),
        _ => Ok(()),
    }
}

/// Every user, by name.
pub fn list_users(store: &Store) -> StoreResult<Vec<User>> {
    store.sessions().users().collect()
}

/// Applies `edit` to `name`, ends their sessions and records `action`, in one write.
fn change(
    turn: &WriteTurn<'_>,
    actor: &Actor,
    name: &Username,
    action: &str,
    edit: impl FnOnce(&mut User),
) -> Result<User, UserError> {
    let store = turn.store();
    let mut user = existing(store, name)?;
    edit(&mut user);
    user.updated_at = Timestamp::now();
    let mut batch = turn.batch()?;
    batch.put_user(&user);
    let ended = end_sessions(store, &mut batch, name)?;
    let detail = format!("role {}; {ended} sessions ended", user.role.as_str());
    batch.put_audit(&audit_entry(store, actor, action, targets(name), detail)?);
    turn.commit(batch)?;
    Ok(user)
}

fn existing(store: &Store, name: &Username) -> Result<User, UserError> {
    store
        .sessions()
        .user(name)?
        .ok_or_else(|| UserError::Unknown(name.clone()))
}

/// Adds the removal of every session of `name` to `batch`; returns how many.
fn end_sessions(store: &Store, batch: &mut WriteBatch<'_>, name: &Username) -> StoreResult<usize> {
    let sessions = store.sessions().sessions_of(name)?;
    for token in &sessions {
        batch.remove_session(name, token);
    }
    Ok(sessions.len())
}

fn targets(name: &Username) -> Vec<String> {
    vec![format!("user:{name}")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Session, TokenHash};

    fn session(store: &Store, name: &Username, byte: u8) -> Session {
        let session = Session {
            token_hash: TokenHash([byte; 32]),
            user: name.clone(),
            role: Role::Admin,
            created_at: Timestamp::now(),
            last_seen_at: Timestamp::now(),
        };
        let audit = audit_entry(store, &Actor::User(name.clone()), "auth.login", vec![], "")
            .expect("audit");
        store
            .sessions()
            .open_session(&session, &audit)
            .expect("open");
        session
    }

    #[test]
    fn a_session_signed_out_is_not_brought_back_by_a_request_that_read_it_before() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let ana = Username::parse("ana").expect("name");
        let mut read = session(&store, &ana, 1);
        store
            .sessions()
            .close_session(&read, None)
            .expect("sign out");
        read.last_seen_at = Timestamp(read.last_seen_at.0 + 60_000);
        store.sessions().touch_session(&read).expect("touch");
        assert_eq!(
            store.sessions().session(&read.token_hash).expect("read"),
            None
        );
    }

    #[test]
    fn a_session_is_touched_but_not_while_the_store_makes_its_first_flush() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let ana = Username::parse("ana").expect("name");
        let opened = session(&store, &ana, 1);
        let seen = Session {
            last_seen_at: Timestamp(opened.last_seen_at.0 + 60_000),
            ..opened.clone()
        };
        let stored = |store: &Store| store.sessions().session(&opened.token_hash).expect("read");
        {
            let _flushing = store.as_in_its_first_flush();
            store.sessions().touch_session(&seen).expect("put off");
            assert_eq!(stored(&store), Some(opened.clone()), "not written");
        }
        store.sessions().touch_session(&seen).expect("touch");
        assert_eq!(stored(&store), Some(seen));
    }

    #[test]
    fn removing_a_user_or_changing_a_role_ends_their_sessions_and_is_audited() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let ana = Username::parse("ana").expect("name");
        let bob = Username::parse("bob").expect("name");
        let cli = Actor::Cli;
        for name in [&ana, &bob] {
            add_user(
                &store.write_turn(),
                &cli,
                name,
                Role::Admin,
                "a long password",
            )
            .expect("add");
        }
        let duplicate = add_user(
            &store.write_turn(),
            &cli,
            &ana,
            Role::Viewer,
            "another password",
        );
        assert!(matches!(duplicate, Err(UserError::Exists(_))));
        let kept = session(&store, &bob, 2);
        session(&store, &ana, 1);
        session(&store, &ana, 3);
        assert_eq!(
            store.sessions().sessions_of(&ana).expect("sessions").len(),
            2
        );

        set_role(&store.write_turn(), &cli, &ana, Role::Viewer).expect("role");
        assert!(store
            .sessions()
            .sessions_of(&ana)
            .expect("sessions")
            .is_empty());
        assert!(store
            .sessions()
            .session(&TokenHash([1; 32]))
            .expect("read")
            .is_none());
        assert_eq!(
            store.sessions().session(&kept.token_hash).expect("read"),
            Some(kept)
        );

        session(&store, &ana, 4);
        remove_user(&store.write_turn(), &cli, &ana).expect("remove");
        assert!(store.sessions().user(&ana).expect("read").is_none());
        assert!(store
            .sessions()
            .session(&TokenHash([4; 32]))
            .expect("read")
            .is_none());
        let unknown = remove_user(&store.write_turn(), &cli, &ana);
        assert!(matches!(unknown, Err(UserError::Unknown(_))));

        let actions: Vec<String> = store
            .audit()
            .audit_newest_first()
            .map(|entry| entry.expect("entry").action)
            .filter(|action| action.starts_with("user."))
            .collect();
        assert_eq!(
            actions,
            ["user.remove", "user.role", "user.add", "user.add"]
        );
    }

    #[test]
    fn a_weak_password_is_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let ana = Username::parse("ana").expect("name");
        let refused = add_user(&store.write_turn(), &Actor::Cli, &ana, Role::Admin, "short");
        assert!(matches!(
            refused,
            Err(UserError::Auth(AuthError::WeakPassword))
        ));
        assert!(store.sessions().user(&ana).expect("read").is_none());
        assert_eq!(store.audit().audit_newest_first().count(), 0);
    }
}
