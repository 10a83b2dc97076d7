//! Every list of the audit trail, paged, against a filter of the whole trail read afresh:
//! whichever way the entries were appended (a write turn's batch, one applied key by key, a
//! session, a job), and whichever end of the list a page is nearer.

use super::*;
use crate::domain::{JobKind, JobRecord, ModelId, Role, Session, Timestamp, TokenHash, Username};
use proptest::prelude::*;

const USERS: [&str; 3] = ["ana", "vic", "cli"];
const ACTIONS: [&str; 3] = ["auth.login", "job.submit", "reconciliation.link"];

fn entry(store: &Store, user: &str, action: &str) -> AuditEntry {
    AuditEntry {
        id: store.audit().next_audit_id().expect("id"),
        at: Timestamp::now(),
        user: user.to_owned(),
        action: action.to_owned(),
        targets: Vec::new(),
        detail: String::new(),
    }
}

fn new_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("dir");
    let store = Store::open(dir.path(), 1 << 20).expect("open");
    (dir, store)
}

/// How a test appends entries: each way the store has of writing them.
#[derive(Debug, Clone, Copy)]
enum Via {
    /// A write turn's batch, applied as one sled batch.
    Turn,
    /// A write turn's part of a larger write, applied key by key.
    TurnPart,
    /// A session opened, outside the turn (one entry each).
    Login,
    /// A job submitted, outside the turn (one entry each).
    Job,
}

/// Appends entries of `(user, action)` (indexes into [`USERS`] and [`ACTIONS`]) via `via`.
fn append(store: &Store, via: Via, entries: &[(usize, usize)]) {
    let entries: Vec<AuditEntry> = entries
        .iter()
        .map(|&(user, action)| entry(store, USERS[user], ACTIONS[action]))
        .collect();
    match via {
        Via::Turn | Via::TurnPart => {
            let turn = store.write_turn();
            let mut batch = turn.batch().expect("batch");
            // A record beside the entries, as every audited write has.
            batch.set_listing_count(ModelId(1), entries.len() as u64);
            for entry in &entries {
                batch.put_audit(entry);
            }
            let committed = match via {
                Via::Turn => turn.commit(batch),
                _ => turn.commit_part(batch),
            };
            committed.expect("commit");
        }
        Via::Login => {
            for entry in &entries {
                store
                    .sessions()
                    .open_session(&session(entry), entry)
                    .expect("login");
            }
        }
        Via::Job => {
            for entry in &entries {
                let id = store.jobs().next_job_id().expect("job id");
                let job = JobRecord::queued(id, JobKind::Match, None, entry.user.clone(), "l");
                store.jobs().submit_job(&job, entry).expect("submit");
            }
        }
    }
}

fn session(entry: &AuditEntry) -> Session {
    let mut token = [0; 32];
    token[..8].copy_from_slice(&entry.id.to_be_bytes());
    Session {
        token_hash: TokenHash(token),
        user: Username::parse(&entry.user).expect("user"),
        role: Role::Admin,
        created_at: entry.at,
        last_seen_at: entry.at,
    }
}

/// Every list a page may ask for: the whole trail, each user's, each action's, each pair's,
/// and names no entry has (one with a 0 byte, which a key's terminator could be mistaken for).
fn filters() -> Vec<AuditFilter<'static>> {
    let users = USERS.iter().copied().chain(["zoe", "", "ana\0"]);
    let actions = ACTIONS
        .iter()
        .copied()
        .chain(["user.remove", "auth.login\0"]);
    let users: Vec<Option<&str>> = std::iter::once(None).chain(users.map(Some)).collect();
    let actions: Vec<Option<&str>> = std::iter::once(None).chain(actions.map(Some)).collect();
    users
        .iter()
        .flat_map(|&user| {
            actions
                .iter()
                .map(move |&action| AuditFilter { user, action })
        })
        .collect()
}

/// Checks every page of every list against the whole trail, filtered.
fn assert_pages_match_the_whole_trail(store: &Store) -> Result<(), TestCaseError> {
    let whole: Vec<AuditEntry> = (store.audit().audit_newest_first())
        .collect::<StoreResult<_>>()
        .expect("trail");
    for filter in filters() {
        let listed: Vec<&AuditEntry> = whole.iter().filter(|e| filter.lists(e)).collect();
        for limit in [1, 3, 7] {
            for skip in 0..=listed.len() + 1 {
                let (page, total) = store.audit().page(filter, skip, limit).expect("page");
                prop_assert_eq!(total, listed.len(), "{:?}", filter);
                let expected: Vec<&AuditEntry> =
                    listed.iter().copied().skip(skip).take(limit).collect();
                prop_assert_eq!(
                    page.iter().collect::<Vec<_>>(),
                    expected,
                    "{:?} skip {} limit {}",
                    filter,
                    skip,
                    limit
                );
            }
        }
    }
    Ok(())
}

fn via() -> impl Strategy<Value = Via> {
    prop_oneof![
        Just(Via::Turn),
        Just(Via::TurnPart),
        Just(Via::Login),
        Just(Via::Job),
    ]
}

fn appends() -> impl Strategy<Value = Vec<(Via, Vec<(usize, usize)>)>> {
    let entries = prop::collection::vec((0..USERS.len(), 0..ACTIONS.len()), 1..4);
    prop::collection::vec((via(), entries), 0..12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn every_page_of_every_list_is_the_whole_trail_filtered(appends in appends()) {
        let (_dir, store) = new_store();
        for (via, entries) in &appends {
            append(&store, *via, entries);
        }
        assert_pages_match_the_whole_trail(&store)?;
    }
}

#[test]
fn a_page_of_the_audit_trail_is_its_entries_newest_first_with_the_trail_counted() {
    let (_dir, store) = new_store();
    let turn = store.write_turn();
    let mut batch = turn.batch().expect("batch");
    for n in 0..7 {
        batch.put_audit(&entry(&store, "ana", &format!("action.{n}")));
    }
    turn.commit(batch).expect("commit");
    let actions = |skip, limit| {
        let (page, total) = (store.audit())
            .page(AuditFilter::default(), skip, limit)
            .expect("page");
        assert_eq!(total, 7);
        page.into_iter()
            .map(|entry| entry.action)
            .collect::<Vec<_>>()
    };
    assert_eq!(actions(0, 3), ["action.6", "action.5", "action.4"]);
    assert_eq!(actions(4, 2), ["action.2", "action.1"]);
    assert_eq!(actions(6, 3), ["action.0"]);
    assert!(actions(7, 3).is_empty());
}

/// A page decodes its own entries only: entries that cannot be decoded fail the pages that
/// show them and no other, stepped over from either end of a list, filtered or not.
#[test]
fn a_page_reads_no_entry_but_its_own() {
    let (_dir, store) = new_store();
    let user = |n: usize| n % 2;
    let entries: Vec<(usize, usize)> = (0..40).map(|n| (user(n), n % 3)).collect();
    append(&store, Via::Turn, &entries);
    let whole: Vec<AuditEntry> = (store.audit().audit_newest_first())
        .collect::<StoreResult<_>>()
        .expect("trail");
    // Of ana's 20 entries, newest first, the 4th and the 18th.
    let ana: Vec<u64> = (whole.iter())
        .filter(|e| e.user == "ana")
        .map(|e| e.id)
        .collect();
    let broken = [ana[3], ana[17]];
    for id in broken {
        (store.db)
            .insert(Keyspace::Audit.id_key(id), &b""[..])
            .expect("break");
    }
    let ana_only = AuditFilter {
        user: Some("ana"),
        action: None,
    };
    // Stepping over the 4th from the newest end, over the 18th from the oldest, and over the
    // 4th in the whole trail.
    for (filter, skip, limit) in [
        (ana_only, 5, 5),
        (ana_only, 12, 3),
        (AuditFilter::default(), 10, 5),
    ] {
        let (page, _) = (store.audit().page(filter, skip, limit)).expect("a page without them");
        assert!(page.iter().all(|entry| !broken.contains(&entry.id)));
        assert_eq!(page.len(), limit);
    }
    assert!(
        store.audit().page(ana_only, 2, 3).is_err(),
        "the 4th's own page"
    );
    assert!(
        store.audit().page(ana_only, 16, 3).is_err(),
        "the 18th's own page"
    );
}

/// Appends outside the write turn (logins) while the turn appends too: no count loses one.
#[test]
fn appends_in_and_out_of_the_write_turn_at_once_lose_no_count() {
    let (_dir, store) = new_store();
    let logins: Vec<_> = (0..3)
        .map(|thread| {
            let store = store.clone();
            std::thread::spawn(move || {
                for n in 0..40 {
                    append(&store, Via::Login, &[(thread % 2, n % 3)]);
                }
            })
        })
        .collect();
    for n in 0..40 {
        append(&store, Via::Turn, &[(n % 3, 0), (2, n % 3)]);
    }
    for login in logins {
        login.join().expect("logins");
    }
    let whole: Vec<AuditEntry> = (store.audit().audit_newest_first())
        .collect::<StoreResult<_>>()
        .expect("trail");
    assert_eq!(whole.len(), 3 * 40 + 2 * 40);
    for filter in filters() {
        let listed: Vec<&AuditEntry> = whole.iter().filter(|e| filter.lists(e)).collect();
        let (page, total) = store.audit().page(filter, 0, whole.len()).expect("page");
        assert_eq!(total, listed.len(), "{filter:?}");
        assert_eq!(page.iter().collect::<Vec<_>>(), listed, "{filter:?}");
    }
}
