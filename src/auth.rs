//! Credentials and sessions: argon2id password hashes, session tokens (256 bits from the OS, of
//! which only a SHA-256 is ever stored), and the lifetime rules every session is checked by.
//! Nothing here logs or returns a password or a token except to the one caller that made it.

use crate::domain::{Session, Timestamp, TokenHash, User};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;
use std::time::Duration;

/// Argon2id parameters: 19 MiB of memory, 2 passes, 1 lane (OWASP's first recommended set):
/// tens of milliseconds of one core a hash (docs/decisions.md, D-103).
pub const ARGON2_MEMORY_KIB: u32 = 19 * 1024;
pub const ARGON2_PASSES: u32 = 2;
pub const ARGON2_LANES: u32 = 1;

/// Shortest password `user add` and `user passwd` accept.
pub const MIN_PASSWORD_CHARS: usize = 10;

/// Why a credential operation failed (never carrying the secret).
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("passwords are at least {MIN_PASSWORD_CHARS} characters")]
    WeakPassword,
    #[error("hashing the password: {0}")]
    Hash(String),
    #[error("the operating system gave no random bytes: {0}")]
    Random(String),
}

fn argon2() -> Argon2<'static> {
    // The constants are within argon2's bounds; a failure would be a programming error.
    let params =
        Params::new(ARGON2_MEMORY_KIB, ARGON2_PASSES, ARGON2_LANES, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// The argon2id hash of `password`, in PHC string form, with a fresh random salt.
pub fn hash_password(password: &str) -> Result<String, AuthError> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(AuthError::WeakPassword);
    }
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| AuthError::Random(e.to_string()))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| AuthError::Hash(e.to_string()))?;
    argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| AuthError::Hash(e.to_string()))
}

/// True when `password` is the one `hash` was made from.
fn password_matches(hash: &str, password: &str) -> bool {
    PasswordHash::new(hash)
        .map(|parsed| {
            argon2()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
        .unwrap_or(false)
}

/// The user `user` if `password` is theirs. With no such user, a password is still checked
/// against a hash made with the same parameters, so a wrong name costs the same time as a
/// wrong password and the answer tells nothing about which users exist.
pub fn check_credentials<'u>(user: Option<&'u User>, password: &str) -> Option<&'u User> {
    static DECOY: OnceLock<String> = OnceLock::new();
    match user {
        Some(user) => password_matches(&user.password_hash, password).then_some(user),
        None => {
            let decoy = DECOY.get_or_init(|| {
                hash_password("decoy password, never anyone's").unwrap_or_default()
            });
            let _ = password_matches(decoy, password);
            None
        }
    }
}

/// A new session token (64 hex digits, 256 bits from the OS) and the hash the store keeps.
pub fn new_token() -> Result<(String, TokenHash), AuthError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| AuthError::Random(e.to_string()))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let hash = hash_token(&token);
    Ok((token, hash))
}

/// What the store knows a token by.
pub fn hash_token(token: &str) -> TokenHash {
    TokenHash(Sha256::digest(token.as_bytes()).into())
}

/// How long sessions live, and how their cookie is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionPolicy {
    /// A session unused this long ends.
    pub idle: Duration,
    /// A session ends this long after login, however used.
    pub absolute: Duration,
    /// The cookie carries `Secure`: set when the service is reached over TLS (behind a proxy).
    pub secure_cookie: bool,
}

/// Two hours idle, twelve hours in all: a working day with a lunch break.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(2 * 3600);
pub const DEFAULT_ABSOLUTE: Duration = Duration::from_secs(12 * 3600);

impl Default for SessionPolicy {
    fn default() -> Self {
        SessionPolicy {
            idle: DEFAULT_IDLE,
            absolute: DEFAULT_ABSOLUTE,
            secure_cookie: false,
        }
    }
}

/// The longest a session's seen-at is left behind before a request writes it again: the idle
/// limit needs no finer grain, and most requests then cost no write.
pub const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// The share of the idle limit a seen-at may lag by (a quarter): a session used more often
/// than its idle limit stays open however short that limit is.
pub const TOUCH_FRACTION: u32 = 4;

impl SessionPolicy {
    /// True while `session` is within both limits at `now`.
    pub fn is_live(&self, session: &Session, now: Timestamp) -> bool {
        since(session.last_seen_at, now) < self.idle
            && since(session.created_at, now) < self.absolute
    }

    /// How stale a seen-at may get before a request writes it again: a quarter of the idle
    /// limit, at most [`TOUCH_EVERY`]. A session then ends between three quarters of the idle
    /// limit and the whole of it after its last use, never while it is used.
    pub fn touch_after(&self) -> Duration {
        (self.idle / TOUCH_FRACTION).min(TOUCH_EVERY)
    }

    /// True when a request at `now` should write `session`'s seen-at.
    pub fn needs_touch(&self, session: &Session, now: Timestamp) -> bool {
        since(session.last_seen_at, now) >= self.touch_after()
    }

    /// The `Set-Cookie` value that opens a session with `token`: HttpOnly, SameSite=Strict,
    /// Path=/, Secure behind TLS, Max-Age the absolute lifetime.
    pub fn cookie(&self, token: &str) -> String {
        let secure = if self.secure_cookie { "; Secure" } else { "" };
        format!(
            "{SESSION_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{secure}",
            self.absolute.as_secs()
        )
    }

    /// The `Set-Cookie` value that ends the session in the browser.
    pub fn expired_cookie(&self) -> String {
        let secure = if self.secure_cookie { "; Secure" } else { "" };
        format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{secure}")
    }
}

/// The time from `then` to `now` (none when `then` is later).
fn since(then: Timestamp, now: Timestamp) -> Duration {
    Duration::from_millis((now.0 - then.0).max(0) as u64)
}

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "watch_catalogue_session";

/// The most session cookies of one request that are looked up: a browser sends one per path
/// and domain it holds (a stale one beside the live one, say), never dozens.
pub const MAX_SESSION_COOKIES: usize = 8;

/// The session tokens in a `Cookie` header, in order: every cookie of the session's name whose
/// value could be a token (64 hex digits, as [`new_token`] makes them), so a stale or forged
/// cookie sent first hides no valid one after it, and a malformed one costs no store read.
pub fn tokens_in_cookies(header: &str) -> impl Iterator<Item = &str> {
    header.split(';').filter_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        (name == SESSION_COOKIE && is_token_shaped(value)).then_some(value)
    })
}

fn is_token_shaped(value: &str) -> bool {
    value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Role, Username};

    fn user(password: &str) -> User {
        User {
            name: Username::parse("ana").expect("name"),
            role: Role::Admin,
            password_hash: hash_password(password).expect("hash"),
            created_at: Timestamp(0),
            updated_at: Timestamp(0),
        }
    }

    #[test]
    fn a_password_checks_against_its_hash_only() {
        let ana = user("correct horse battery");
        assert!(ana
            .password_hash
            .starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert!(check_credentials(Some(&ana), "correct horse battery").is_some());
        assert!(check_credentials(Some(&ana), "correct horse batterY").is_none());
        assert!(check_credentials(None, "correct horse battery").is_none());
        assert_ne!(
            hash_password("correct horse battery").expect("hash"),
            ana.password_hash,
            "salted: the same password never hashes the same"
        );
        assert!(matches!(
            hash_password("short"),
            Err(AuthError::WeakPassword)
        ));
    }

    #[test]
    fn tokens_are_random_and_stored_only_as_their_hash() {
        let (first, hash) = new_token().expect("token");
        let (second, _) = new_token().expect("token");
        assert_eq!(first.len(), 64);
        assert_ne!(first, second);
        assert_eq!(hash_token(&first), hash);
        assert_ne!(hash_token(&second), hash);
    }

    #[test]
    fn sessions_end_at_the_idle_and_the_absolute_limit() {
        let policy = SessionPolicy {
            idle: Duration::from_secs(10),
            absolute: Duration::from_secs(100),
            secure_cookie: true,
        };
        let session = |created: i64, seen: i64| Session {
            token_hash: TokenHash([0; 32]),
            user: Username::parse("ana").expect("name"),
            role: Role::Admin,
            created_at: Timestamp(created),
            last_seen_at: Timestamp(seen),
        };
        assert!(policy.is_live(&session(0, 95_000), Timestamp(100_000 - 1)));
        assert!(!policy.is_live(&session(0, 0), Timestamp(10_000)), "idle");
        assert!(
            !policy.is_live(&session(0, 99_000), Timestamp(100_000)),
            "absolute"
        );
        let cookie = policy.cookie("abc");
        assert_eq!(
            cookie,
            "watch_catalogue_session=abc; HttpOnly; SameSite=Strict; Path=/; Max-Age=100; Secure"
        );
    }

    #[test]
    fn every_token_shaped_session_cookie_is_found_in_order() {
        let (first, _) = new_token().expect("token");
        let (second, _) = new_token().expect("token");
        let header = format!(
            "watch_catalogue_session=bogus; a=1; watch_catalogue_session={first}; \
             other_session={second};watch_catalogue_session={second}; watch_catalogue_session="
        );
        assert_eq!(
            tokens_in_cookies(&header).collect::<Vec<_>>(),
            [first.as_str(), second.as_str()]
        );
        assert_eq!(tokens_in_cookies("watch_catalogue_session=").count(), 0);
        let long = format!("watch_catalogue_session={first}0");
        assert_eq!(tokens_in_cookies(&long).count(), 0, "65 digits");
    }

    #[test]
    fn a_session_is_touched_after_a_quarter_of_its_idle_limit_at_most_a_minute() {
        let session = |seen: i64| Session {
            token_hash: TokenHash([0; 32]),
            user: Username::parse("ana").expect("name"),
            role: Role::Admin,
            created_at: Timestamp(0),
            last_seen_at: Timestamp(seen),
        };
        let short = SessionPolicy {
            idle: Duration::from_secs(4),
            ..SessionPolicy::default()
        };
        assert_eq!(short.touch_after(), Duration::from_secs(1));
        assert!(!short.needs_touch(&session(0), Timestamp(999)));
        assert!(short.needs_touch(&session(0), Timestamp(1_000)));
        // Used every second, a 4 s session never goes 4 s without a touch.
        let mut seen = session(0);
        for now in (1_000..20_000).step_by(1_000) {
            let now = Timestamp(now);
            assert!(short.is_live(&seen, now), "{now:?}");
            if short.needs_touch(&seen, now) {
                seen.last_seen_at = now;
            }
        }
        assert_eq!(SessionPolicy::default().touch_after(), TOUCH_EVERY);
    }
}
