//! The people of the back office: users with a role, their sessions (only a hash of each
//! session's token is ever kept), and the audit trail of what they changed.

use super::Timestamp;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A user's login name: 1 to 64 lowercase ASCII letters, digits, `.`, `_` or `-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Username(String);

/// Why a string is not a username.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a username: 1 to 64 lowercase letters, digits, `.`, `_` or `-`")]
pub struct UsernameError(String);

impl Username {
    pub fn parse(value: &str) -> Result<Username, UsernameError> {
        let valid = (1..=64).contains(&value.len())
            && value.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
            });
        if valid {
            Ok(Username(value.to_owned()))
        } else {
            Err(UsernameError(value.chars().take(64).collect()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Username {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a user may do: an admin reads and writes the back office; a viewer has a session but
/// no back-office access (403), for people who should see that they are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    Admin,
    Viewer,
}

impl Role {
    pub fn parse(value: &str) -> Option<Role> {
        match value {
            "admin" => Some(Role::Admin),
            "viewer" => Some(Role::Viewer),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Viewer => "viewer",
        }
    }
}

/// A back-office user. The password is kept only as an argon2id hash in PHC string form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub name: Username,
    pub role: Role,
    pub password_hash: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// SHA-256 of a session token: what the store keys a session by, so that a copy of the store
/// opens no session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TokenHash(pub [u8; 32]);

/// A signed-in user's session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub token_hash: TokenHash,
    pub user: Username,
    /// The user's role at login: a session whose user's role changed since is no longer valid.
    pub role: Role,
    pub created_at: Timestamp,
    /// Last request seen; the idle limit runs from here.
    pub last_seen_at: Timestamp,
}

/// One back-office write: who, when, what, and the ids it touched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: u64,
    pub at: Timestamp,
    /// The user, or `cli` for a command run on the host.
    pub user: String,
    /// What was done: `user.add`, `reconciliation.link`, ...
    pub action: String,
    /// The ids touched, as `kind:id` (`listing:12`, `model:40`, `user:ana`).
    pub targets: Vec<String>,
    /// A short account of the change, never a secret.
    pub detail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_are_short_lowercase_words() {
        for good in ["ana", "ana.lopez", "a_b-c", "x1"] {
            assert!(Username::parse(good).is_ok(), "{good}");
        }
        for bad in ["", "Ana", "ana lopez", "ana@x", &"a".repeat(65)] {
            assert!(Username::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn roles_read_as_written() {
        for role in [Role::Admin, Role::Viewer] {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("root"), None);
    }
}
