//! The real `watch-catalogue` binary: import (success, rejection, exit status), reindex,
//! `duplicates rebuild` (and the old `--rebuild` refused), and `serve` on an empty data dir,
//! which imports the bundled fixtures before the port opens.

use crate::support::{binary, generation, http_get, test_catalogue, ServeProcess};
use std::process::{Command, Output};
use std::time::Duration;

pub fn run(command: &mut Command) -> (Output, String) {
    let output = command.output().expect("run watch-catalogue");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output, text)
}

#[test]
fn import_twice_then_reindex() {
    let data = tempfile::tempdir().expect("dir");
    let (output, text) = run(binary(data.path()).arg("import").arg(test_catalogue()));
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("models: 12 created, 0 updated, 0 unchanged"),
        "{text}"
    );
    let (output, text) = run(binary(data.path()).arg("import").arg(test_catalogue()));
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("models: 0 created, 0 updated, 12 unchanged"),
        "{text}"
    );
    assert_eq!(
        generation(data.path()),
        1,
        "a second identical import writes nothing"
    );
    let (output, text) = run(binary(data.path()).arg("reindex"));
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("indexed 27 catalogue documents at store generation 1")
            && text.contains("indexed 0 listings at store generation 1"),
        "{text}"
    );
}

#[test]
fn a_bad_dataset_is_rejected_whole_with_file_line_and_field() {
    let data = tempfile::tempdir().expect("dir");
    let (output, text) = run(binary(data.path()).arg("import").arg(test_catalogue()));
    assert!(output.status.success(), "{text}");
    let cases = [
        ("brands.jsonl", "{\"slug\":\"breguet\",\"name\":\"Breguet\"\n", "brands.jsonl:6: malformed JSON"),
        ("brands.jsonl", "{\"slug\":\"breguet\",\"name\":\"Breguet\",\"colour\":\"red\"}\n", "brands.jsonl:6: field `colour`: unknown field"),
        ("brands.jsonl", "{\"slug\":\"breguet\",\"name\":\"Breguet\",\"slug\":\"zenith\"}\n", "brands.jsonl:6: field `slug`: given twice in the line"),
        ("series.jsonl", "{\"slug\":\"marine\",\"brand\":\"breguet\",\"name\":\"Marine\"}\n", "series.jsonl:11: field `brand`: no brand with slug `breguet`"),
        ("models.jsonl", "{\"slug\":\"x\",\"brand\":\"rolex\",\"series\":\"submariner\",\"name\":\"X\"}\n", "models.jsonl:13: field `referenceNumber`: missing field"),
        ("models.jsonl", "{\"slug\":\"x\",\"brand\":\"rolex\",\"series\":\"submariner\",\"name\":\"X\",\"referenceNumber\":\"1\",\"releaseYear\":\"2020\"}\n", "models.jsonl:13: field `releaseYear`"),
        ("models.jsonl", "{\"slug\":\"sarb033\",\"brand\":\"seiko\",\"series\":\"classic\",\"name\":\"Again\",\"referenceNumber\":\"SARB033\"}\n", "models.jsonl:13: field `slug`: duplicate model slug `sarb033` in brand `seiko` (first on line 12)"),
        ("models.jsonl", "{\"slug\":\"x\",\"brand\":\"rolex\",\"series\":\"submariner\",\"name\":\"X\",\"referenceNumber\":\"1\",\"pictures\":[{\"url\":\"https://x/1.jpg\",\"type\":\"FRONT\",\"cropedUrl\":\"https://x/1c.jpg\"}]}\n", "models.jsonl:13: field `pictures[0].cropedUrl`: unknown field `cropedUrl`"),
        ("models.jsonl", "{\"slug\":\"x\",\"brand\":\"rolex\",\"series\":\"seamaster\",\"name\":\"X\",\"referenceNumber\":\"1\"}\n", "models.jsonl:13: field `series`: no series `seamaster` in brand `rolex`"),
        ("models.jsonl", "{\"slug\":\"x\",\"brand\":\"rolex\",\"series\":\"submariner\",\"name\":\"X\",\"referenceNumber\":\"1\",\"caliber\":\"eta/9999\"}\n", "models.jsonl:13: field `caliber`: no calibre `eta/9999`"),
        ("calibers.jsonl", "{\"slug\":\"x1\",\"brand\":\"eta\",\"reference\":\"X1\",\"parent\":\"eta/x2\"}\n", "calibers.jsonl:10: field `parent`: no calibre `eta/x2`"),
    ];
    for (file, line, expected) in cases {
        let dataset = tempfile::tempdir().expect("dataset");
        crate::support::copy_test_catalogue(dataset.path());
        // A good new brand first, so a rejected import would have had something to write.
        let mut brands =
            std::fs::read_to_string(dataset.path().join("brands.jsonl")).expect("brands");
        if file != "brands.jsonl" {
            brands.push_str("{\"slug\":\"zenith\",\"name\":\"Zenith\"}\n");
            std::fs::write(dataset.path().join("brands.jsonl"), brands).expect("write");
        }
        let path = dataset.path().join(file);
        let mut text = std::fs::read_to_string(&path).expect("read");
        text.push_str(line);
        std::fs::write(&path, text).expect("write");
        let (output, text) = run(binary(data.path()).arg("import").arg(dataset.path()));
        assert!(
            !output.status.success(),
            "{file}: {line} was accepted: {text}"
        );
        assert!(text.contains(expected), "expected {expected:?} in:\n{text}");
        assert!(text.contains("nothing was imported"), "{text}");
        assert_eq!(generation(data.path()), 1, "{expected}: the store changed");
    }
}

#[test]
fn import_of_a_missing_directory_fails() {
    let data = tempfile::tempdir().expect("dir");
    let (output, text) = run(binary(data.path())
        .arg("import")
        .arg(data.path().join("no-such-dir")));
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("no-such-dir is not a dataset directory"),
        "{text}"
    );
}

#[test]
fn serve_on_an_empty_data_dir_imports_the_bundled_fixtures_and_answers() {
    let data = tempfile::tempdir().expect("dir");
    let serve = ServeProcess::start(data.path());
    assert!(
        serve.log.contains("importing the bundled fixtures"),
        "{}",
        serve.log
    );
    assert!(
        serve.log.contains(&data.path().display().to_string()),
        "the log names the data dir:\n{}",
        serve.log
    );
    let body = http_get(&serve.base, "/brands?pageSize=1");
    assert!(body["total"].as_u64().unwrap_or(0) >= 25, "{body}");
    // SIGTERM: in-flight work finishes, the store is flushed, the process exits cleanly.
    serve.stop();
}

#[test]
fn serve_refuses_a_sunset_less_than_six_months_out() {
    let data = tempfile::tempdir().expect("dir");
    let soon =
        httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(30 * 24 * 3600));
    let (output, text) = run(binary(data.path()).args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--sunset",
        &soon,
        "--successor",
        "https://api.example/v2",
    ]));
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("less than six months away"), "{text}");
    let (output, text) =
        run(binary(data.path()).args(["serve", "--addr", "127.0.0.1:0", "--sunset", "2099-01-01"]));
    assert!(
        !output.status.success(),
        "a sunset without a successor: {text}"
    );
    assert!(text.contains("--successor"), "{text}");
}

#[test]
fn the_openapi_command_prints_the_document() {
    let data = tempfile::tempdir().expect("dir");
    let output = binary(data.path()).arg("openapi").output().expect("run");
    assert!(output.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(doc["openapi"], "3.0.3");
}

#[test]
fn duplicates_rebuild_is_a_subcommand_and_the_old_flag_is_refused_with_usage() {
    let data = tempfile::tempdir().expect("dir");
    let (output, text) = run(binary(data.path()).arg("import").arg(test_catalogue()));
    assert!(output.status.success(), "{text}");
    let (output, text) = run(binary(data.path()).args(["duplicates", "rebuild"]));
    assert!(output.status.success(), "{text}");
    assert!(
        text.starts_with("duplicates: 1 pairs in 1 groups, found in "),
        "{text}"
    );
    for args in [&["duplicates", "--rebuild"][..], &["duplicates"][..]] {
        let (output, text) = run(binary(data.path()).args(args));
        assert_eq!(
            output.status.code(),
            Some(2),
            "clap's usage error: {args:?}: {text}"
        );
        assert!(
            text.contains("Usage: watch-catalogue duplicates rebuild [OPTIONS]"),
            "{args:?}: {text}"
        );
        if args.contains(&"--rebuild") {
            assert!(
                text.starts_with("error: unexpected argument '--rebuild' found"),
                "{text}"
            );
        }
    }
}

/// A dataset exported from elsewhere lists calibres children first; a parent cycle is refused
/// naming the whole cycle, and nothing is written.
#[test]
fn calibres_import_in_any_order_and_a_parent_cycle_is_refused() {
    let dataset = tempfile::tempdir().expect("dir");
    crate::support::copy_test_catalogue(dataset.path());
    let calibres = dataset.path().join("calibers.jsonl");
    let lines = std::fs::read_to_string(&calibres).expect("calibres");
    let reversed: Vec<&str> = lines.lines().rev().collect();
    std::fs::write(&calibres, reversed.join("\n")).expect("write");
    let data = tempfile::tempdir().expect("dir");
    let (output, text) = run(binary(data.path()).arg("import").arg(dataset.path()));
    assert!(output.status.success(), "{text}");
    assert!(text.contains("calibers: 9 created"), "{text}");

    let cyclic = lines.replacen(
        r#""slug":"2824-2","brand":"eta","#,
        r#""slug":"2824-2","brand":"eta","parent":"tudor/2824","#,
        1,
    );
    std::fs::write(&calibres, cyclic).expect("write");
    let fresh = tempfile::tempdir().expect("dir");
    let (output, text) = run(binary(fresh.path()).arg("import").arg(dataset.path()));
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains(
            "calibers.jsonl:1: field `parent`: parent cycle: eta/2824-2 -> tudor/2824 -> eta/2824-2"
        ),
        "{text}"
    );
    assert_eq!(generation(fresh.path()), 0, "nothing was written");
}

/// The `snap.*` files of a data dir's sled store, by name (each names the log position it
/// covers).
fn sled_snapshots(data_dir: &std::path::Path) -> Vec<String> {
    let store = watch_catalogue::data_dir::DataDir::new(data_dir).store();
    let mut names: Vec<String> = std::fs::read_dir(store)
        .expect("store dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.starts_with("snap."))
        .collect();
    names.sort();
    names
}

#[test]
fn an_offline_job_leaves_its_writes_in_a_sled_snapshot_so_the_next_open_replays_none() {
    let data = tempfile::tempdir().expect("dir");
    let (output, text) = run(binary(data.path()).arg("import").arg(test_catalogue()));
    assert!(output.status.success(), "{text}");
    let after_import = sled_snapshots(data.path());
    let feed = crate::support::test_feeds().join("listings/ebay.jsonl");
    let (output, text) = run(binary(data.path())
        .args(["ingest", "--provider", "ebay"])
        .arg(feed));
    assert!(output.status.success(), "{text}");
    let after_ingest = sled_snapshots(data.path());
    assert_eq!(after_ingest.len(), 1, "{after_ingest:?}");
    assert_ne!(
        after_ingest, after_import,
        "the job's writes are snapshotted; the job said:\n{text}"
    );
    // Opened again: the store holds every write of the job, and sled had no log to replay,
    // so it wrote no newer snapshot.
    assert_eq!(generation(data.path()), 2);
    assert_eq!(sled_snapshots(data.path()), after_ingest);
}

/// `--trusted-proxy` and `--fetch-allow` take what their help promises, "address or CIDR": a
/// plain address is its /32, and a trusted one is believed (each forwarded client its own
/// budget); anything else is refused naming both forms.
#[tokio::test]
async fn serve_takes_a_plain_address_where_the_help_says_address_or_cidr() {
    let data = tempfile::tempdir().expect("dir");
    let (output, help) = run(binary(data.path()).args(["serve", "--help"]));
    assert!(output.status.success(), "{help}");
    let said = help.matches("address or CIDR").count();
    assert_eq!(said, 2, "both flags say so:\n{help}");
    let serve = ServeProcess::start_with(
        data.path(),
        &[
            "--trusted-proxy",
            "127.0.0.1",
            "--fetch-allow",
            "127.0.0.1,::1",
            "--rate-limit",
            "1",
        ],
    );
    async fn status(base: &str, forwarded: &str) -> u16 {
        reqwest::Client::new()
            .get(format!("{base}/brands?pageSize=1"))
            .header("x-forwarded-for", forwarded)
            .send()
            .await
            .expect("request")
            .status()
            .as_u16()
    }
    let base = serve.base.clone();
    assert_eq!(status(&base, "203.0.113.1").await, 200);
    assert_eq!(
        status(&base, "203.0.113.2").await,
        200,
        "another forwarded client"
    );
    assert_eq!(
        status(&base, "203.0.113.1").await,
        429,
        "the first one's budget is spent"
    );
    serve.stop();
    for flag in ["--trusted-proxy", "--fetch-allow"] {
        let (output, text) =
            run(binary(data.path()).args(["serve", "--addr", "127.0.0.1:0", flag, "localhost"]));
        assert!(!output.status.success(), "{text}");
        assert!(text.contains("neither an address"), "{flag}: {text}");
    }
}

/// Long commands say how far they are on standard error, a line at a time when it is not a
/// terminal: an import's catalogue and snapshots, a snapshot's listings, a reindex's documents, the duplicate
/// finder's models.
#[test]
fn long_commands_say_how_far_they_are_on_standard_error() {
    use crate::support::run_cli;
    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("data");
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let fixtures = fixtures.to_str().expect("a path");
    let (ok, text) = run_cli(&data, &["import", fixtures], None, &[]);
    assert!(ok, "{text}");
    assert!(text.contains("its catalogue, then its snapshots"), "{text}");
    // The catalogue's 844 lines, then the snapshots' 480.
    assert!(text.contains("import done: 1324/1324 lines"), "{text}");
    let ebay = format!("{fixtures}/listings/ebay.jsonl");
    let (ok, text) = run_cli(&data, &["ingest", "--provider", "ebay", &ebay], None, &[]);
    assert!(ok, "{text}");
    assert!(text.contains("snapshot done: 160/160 listings"), "{text}");
    let (ok, text) = run_cli(&data, &["reindex"], None, &[]);
    assert!(ok, "{text}");
    // The indexes' 1,080 documents, then the 440 models whose price series it folds.
    assert!(text.contains("reindex done: 1520/1520 documents"), "{text}");
    let (ok, text) = run_cli(&data, &["duplicates", "rebuild"], None, &[]);
    assert!(ok, "{text}");
    assert!(text.contains("duplicates done: 440/440 models"), "{text}");
}
