//! `watch-catalogue compact` through the binary: every record kept, byte for byte; a data dir a
//! server holds refused; a compaction killed part-way leaving the store whole and usable.

use crate::support::{binary, run_cli, send_signal, spawn_until_held, when_unlocked, ServeProcess};
use std::path::Path;

/// Every record of the store in `data`, tree by tree, as sled holds it.
fn records(data: &Path) -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    let store = data.join("store");
    let db = when_unlocked(|| watch_catalogue::store::sled_config(&store, 64 << 20).open())
        .expect("the store");
    let mut all = Vec::new();
    for name in db.tree_names() {
        let tree = db.open_tree(&name).expect("tree");
        for entry in tree.iter() {
            let (key, value) = entry.expect("record");
            all.push((name.to_vec(), key.to_vec(), value.to_vec()));
        }
    }
    all
}

/// A data dir holding the bundled fixtures, imported by the binary.
fn imported() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let (ok, text) = run_cli(
        &dir.path().join("data"),
        &["import", fixtures.to_str().expect("a path")],
        None,
        &[],
    );
    assert!(ok, "{text}");
    dir
}

/// `compact` on `data`, spawned and held by the test pacing after its first batch: the test
/// then kills or stops it mid-copy without racing it.
fn held_compaction(
    data: &Path,
) -> (
    std::process::Child,
    std::io::Lines<std::io::BufReader<std::process::ChildStderr>>,
) {
    let mut command = binary(data);
    command
        .arg("compact")
        .env("WATCH_CATALOGUE_TEST_HOLD_AFTER_CHUNKS", "1");
    spawn_until_held(command, "compact")
}

#[test]
fn compact_keeps_every_record_byte_for_byte_and_the_service_answers_as_before() {
    let dir = imported();
    let data = dir.path().join("data");
    let before = records(&data);
    assert!(before.len() > 5_000, "{} records", before.len());
    let (ok, text) = run_cli(&data, &["compact"], None, &[]);
    assert!(ok, "{text}");
    assert!(text.contains("store compacted: "), "{text}");
    assert!(text.contains(&format!("{} keys", before.len())), "{text}");
    assert!(text.contains("compact done:"), "{text}");
    assert!(!data.join("store.compacting").exists());
    assert_eq!(records(&data), before, "the records after compact");
    // The search indexes still belong to the store: no rebuild, the same answers.
    let serve = ServeProcess::start(&data);
    let model = crate::support::http_get(&serve.base, "/models/rolex/submariner-date-126610ln");
    assert_eq!(model["referenceNumber"], "126610LN");
    let log = serve.stop();
    assert!(!log.contains("rebuilt"), "{log}");
}

#[test]
fn compact_refuses_a_data_dir_a_server_holds() {
    let dir = imported();
    let data = dir.path().join("data");
    let serve = ServeProcess::start(&data);
    let (ok, text) = run_cli(&data, &["compact"], None, &[]);
    assert!(!ok, "{text}");
    assert!(text.contains("is held by the server"), "{text}");
    assert!(!data.join("store.compacting").exists());
    serve.stop();
}

#[test]
fn a_compaction_killed_part_way_leaves_the_store_whole_and_the_next_command_tidies_up() {
    let dir = imported();
    let data = dir.path().join("data");
    let before = records(&data);
    let (mut compact, _) = held_compaction(&data);
    compact.kill().expect("kill");
    compact.wait().expect("wait");
    assert!(data.join("store.compacting").exists(), "killed mid-copy");

    let (ok, text) = run_cli(&data, &["user", "list"], None, &[("RUST_LOG", "warn")]);
    assert!(ok, "{text}");
    assert!(
        text.contains("unfinished copy of the store was removed"),
        "{text}"
    );
    assert!(!data.join("store.compacting").exists());
    assert_eq!(records(&data), before);
    let (ok, text) = run_cli(&data, &["compact"], None, &[]);
    assert!(ok, "{text}");
    assert_eq!(records(&data), before);
}

#[test]
fn a_compaction_stopped_by_sigterm_removes_its_copy_and_says_so() {
    let dir = imported();
    let data = dir.path().join("data");
    let before = records(&data);
    let (mut compact, rest) = held_compaction(&data);
    send_signal(&compact, "-TERM");
    let said: Vec<String> = rest.map_while(Result::ok).collect();
    let status = compact.wait().expect("wait");
    let said = said.join("\n");
    assert!(!status.success(), "{said}");
    assert!(said.contains("compact stopped: "), "{said}");
    assert!(
        said.contains("stopped by a signal: the copy was removed"),
        "{said}"
    );
    assert!(!data.join("store.compacting").exists());
    assert_eq!(records(&data), before);
}
