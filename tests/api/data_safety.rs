//! The operator's usual mistakes, through the real binary: a snapshot that would delist a
//! provider's stock (one line, half invalid, another provider's file), a mistyped or wrong
//! `--data-dir`, swapped `import` arguments, and an import killed part-way. Each is refused
//! and changes nothing; the guard's override is audited.

use crate::cli::run;
use crate::support::{binary, generation, reopen, test_catalogue, test_feeds};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use watch_catalogue::data_dir::DataDir;

/// `count` listings of `provider` (`p1`, `p2`, …), one line each, that the test catalogue
/// matches or not: the guard looks at their codes only.
fn stock(prefix: &str, count: usize) -> Vec<String> {
    (1..=count)
        .map(|n| {
            format!(
                r#"{{"sourceId":"{prefix}{n}","url":"https://shop.example/{prefix}{n}","title":"Rolex Submariner 126610LN","brand":"Rolex","reference":"126610LN","price":{},"currency":"EUR"}}"#,
                9000 + n
            )
        })
        .collect()
}

/// A data dir holding the test catalogue and chrono24's stock of ten listings.
fn data_dir_with_stock() -> (tempfile::TempDir, PathBuf) {
    let data = tempfile::tempdir().expect("dir");
    let (output, text) = run(binary(data.path()).arg("import").arg(test_catalogue()));
    assert!(output.status.success(), "{text}");
    let snapshot = write_snapshot(data.path(), "first", &stock("c", 10));
    let (output, text) = ingest(data.path(), &snapshot, &[]);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("10 created"), "{text}");
    (data, snapshot)
}

fn write_snapshot(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(format!("{name}.jsonl"));
    std::fs::write(&path, lines.join("\n")).expect("write snapshot");
    path
}

fn ingest(data: &Path, snapshot: &Path, flags: &[&str]) -> (Output, String) {
    run(binary(data)
        .args(["ingest", "--provider", "chrono24"])
        .args(flags)
        .arg(snapshot))
}

#[test]
fn a_snapshot_that_would_delist_the_stock_is_refused_and_changes_nothing() {
    let (data, _) = data_dir_with_stock();
    let before = generation(data.path());
    let one_line = write_snapshot(data.path(), "one", &stock("c", 1));
    let mut half_invalid = stock("c", 10)[..5].to_vec();
    half_invalid.extend((0..5).map(|n| format!(r#"{{"sourceId":"bad{n}"}}"#)));
    let half_invalid = write_snapshot(data.path(), "half", &half_invalid);
    let ebay = test_feeds().join("listings/ebay.jsonl");
    let cases = [
        (
            &one_line,
            "would delist 9 of provider `chrono24`'s 10 listings in stock (90.0%, over the 20% allowed)",
        ),
        (&half_invalid, "5 of 10 lines are invalid, 50% or more"),
        (
            &ebay,
            "keeps 0 of provider `chrono24`'s 10 listings in stock and would delist the other 10 (another provider's file?)",
        ),
    ];
    for (snapshot, refusal) in cases {
        let (output, text) = ingest(data.path(), snapshot, &[]);
        assert!(!output.status.success(), "{text}");
        assert!(text.contains(refusal), "{text}");
        assert!(text.contains("nothing was written"), "{text}");
        assert_eq!(generation(data.path()), before, "nothing written: {text}");
    }
    // A share that allows it, and a snapshot that keeps most of the stock, pass.
    let (output, text) = ingest(data.path(), &one_line, &["--max-delist", "0.95"]);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("9 delisted"), "{text}");
    let (output, text) = ingest(data.path(), &one_line, &["--max-delist", "1.5"]);
    assert!(!output.status.success());
    assert!(
        text.contains("--max-delist is a share between 0 and 1, not `1.5`"),
        "{text}"
    );
}

#[test]
fn the_stock_guard_overridden_delists_and_is_in_the_report_and_the_audit_trail() {
    let (data, _) = data_dir_with_stock();
    let one_line = write_snapshot(data.path(), "one", &stock("c", 1));
    let (output, text) = ingest(data.path(), &one_line, &["--allow-mass-delist"]);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("9 delisted"), "{text}");
    assert!(
        text.contains("mass delisting allowed: the snapshot would delist 9 of provider `chrono24`'s 10 listings in stock"),
        "{text}"
    );
    let app = reopen(&DataDir::new(data.path()), 1 << 20);
    let entry = app
        .store()
        .audit()
        .audit_newest_first()
        .next()
        .expect("an entry")
        .expect("read");
    assert_eq!(
        (entry.user.as_str(), entry.action.as_str()),
        ("cli", "ingest.allow_mass_delist")
    );
    assert_eq!(entry.targets, vec!["provider:chrono24".to_owned()]);
    assert!(entry.detail.contains("would delist 9"), "{}", entry.detail);
}

/// `command` with a bound on its time: a `serve` that should have refused to start is
/// killed, and the test fails, rather than hanging.
fn run_bounded(command: &mut Command) -> (Output, String) {
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!(
                "still running after 60 s: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output, text)
}

fn serve(data: &Path) -> (Output, String) {
    run_bounded(binary(data).args(["serve", "--addr", "127.0.0.1:0", "--no-picture-worker"]))
}

/// Every file under `dir`, relative, sorted: what a refused command must leave as it was.
fn files_under(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            files.push(path.strip_prefix(dir).expect("under").display().to_string());
        }
    }
    files.sort();
    files
}

#[test]
fn a_mistyped_data_dir_is_refused_and_not_created() {
    let root = tempfile::tempdir().expect("dir");
    let typo = root.path().join("dtaa");
    let rates = test_catalogue().join("rates.xml");
    let commands: [&[&str]; 6] = [
        &["user", "list"],
        &["match"],
        &["reindex"],
        &["duplicates", "rebuild"],
        &["migrate"],
        &["pictures", "fetch"],
    ];
    for args in commands {
        let (output, text) = run(binary(&typo).args(args));
        assert!(!output.status.success(), "{args:?}: {text}");
        assert!(
            text.contains(&format!("{} is not a data dir", typo.display())),
            "{args:?}: {text}"
        );
    }
    let (output, text) = run(binary(&typo).arg("rates").arg(&rates));
    assert!(
        !output.status.success() && text.contains("is not a data dir"),
        "{text}"
    );
    let (output, text) = run(binary(&typo).args(["user", "add", "ana"]));
    assert!(
        !output.status.success() && text.contains("is not a data dir"),
        "{text}"
    );
    assert!(!typo.exists(), "no data dir was created");
}

#[test]
fn a_folder_of_other_files_is_not_made_a_data_dir() {
    let dataset = crate::support::test_catalogue_copy();
    let before = files_under(dataset.path());
    let (output, text) = serve(dataset.path());
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("is not empty and is not a data dir"),
        "{text}"
    );
    let (output, text) = run(binary(dataset.path()).args(["user", "list"]));
    assert!(
        !output.status.success() && text.contains("has no data-dir.json"),
        "{text}"
    );
    // `import <data dir> --data-dir <dataset>`: the arguments swapped.
    let data = tempfile::tempdir().expect("dir");
    let (output, text) = run(binary(data.path()).arg("import").arg(dataset.path()));
    assert!(output.status.success(), "{text}");
    let (output, text) = run(binary(dataset.path()).arg("import").arg(data.path()));
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("is not empty and is not a data dir"),
        "{text}"
    );
    assert_eq!(
        files_under(dataset.path()),
        before,
        "the dataset is untouched"
    );
    // And a data dir given as the dataset, into a new data dir.
    let other = tempfile::tempdir().expect("dir");
    let (output, text) = run(binary(other.path()).arg("import").arg(data.path()));
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("is a data dir, not a dataset"), "{text}");
}

#[test]
fn an_import_killed_part_way_is_refused_by_serve_never_topped_up_and_completed_by_running_it_again()
{
    let data = tempfile::tempdir().expect("dir");
    let mut child = binary(data.path())
        .arg("import")
        .arg(test_catalogue())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let mark = data.path().join("import-under-way.json");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !mark.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(200));
    }
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    assert!(mark.exists(), "the import's mark outlives it");

    let (output, text) = serve(data.path());
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("was cut short"), "{text}");
    assert!(text.contains("run `watch-catalogue import"), "{text}");
    {
        let app = reopen(&DataDir::new(data.path()), 1 << 20);
        let dataset =
            std::fs::read_to_string(test_catalogue().join("brands.jsonl")).expect("brands");
        for brand in app.store().catalogue().brands() {
            let slug = brand.expect("brand").slug.to_string();
            assert!(
                dataset.contains(&format!(r#""slug":"{slug}""#)),
                "`{slug}` is no brand of the dataset: the demo was mixed in"
            );
        }
    }
    let (output, text) = run(binary(data.path()).arg("import").arg(test_catalogue()));
    assert!(output.status.success(), "{text}");
    assert!(!mark.exists(), "the mark is cleared once the import ends");
}

#[test]
fn serve_fills_only_a_data_dir_it_creates_with_the_fixtures() {
    // A data dir `import` made stays the operator's, even with its dataset refused.
    let data = tempfile::tempdir().expect("dir");
    let broken = tempfile::tempdir().expect("dir");
    std::fs::write(broken.path().join("brands.jsonl"), "not json\n").expect("write");
    let (output, text) = run(binary(data.path()).arg("import").arg(broken.path()));
    assert!(!output.status.success(), "{text}");
    assert!(
        !data.path().join("import-under-way.json").exists(),
        "{text}"
    );
    let app = reopen(&DataDir::new(data.path()), 1 << 20);
    app.prepare(true).expect("prepare");
    assert!(app.store().is_empty().expect("empty"), "no demo in it");
}
