//! The README's examples, run. Every `$ ` command of its `sh` blocks runs as written (curl
//! through `sh`, `watch-catalogue` as the binary built for the tests) against the server its
//! port names, and what it prints is compared with what the README shows: timestamps aside,
//! `…` standing for any text, a `# total N: a, b, …` line for a page's total and first slugs.
//! README ports stand for servers the test starts on free ports: 8080 the bundled fixtures
//! (the back office signed in as its examples do), 8088 the picture review's set-up, 8089 the
//! duplicates', 8090 the revisits' (each described in the README's prose), 8765 the pictures
//! served to 8088.

use crate::support::ServeProcess;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The password of `ana` in the README.
const PASSWORD: &str = "correct horse battery staple";

/// One `$ ` command of a README `sh` block and the lines shown after it.
struct Example {
    line: usize,
    command: String,
    shown: Vec<String>,
}

/// The `$ ` commands of every `sh` block of `readme`, continuation lines (`\`) joined.
fn examples(readme: &str) -> Vec<Example> {
    let mut examples: Vec<Example> = Vec::new();
    let mut in_block = false;
    let mut in_sh = false;
    let mut continued = false;
    // Lines before a block's first `$ ` (a synopsis) belong to no example.
    let mut first_of_block = 0;
    for (index, line) in readme.lines().enumerate() {
        if line.starts_with("```") {
            in_block = !in_block;
            in_sh = in_block && line.trim() == "```sh";
            first_of_block = examples.len();
            continued = false;
            continue;
        }
        if !in_sh {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            examples.push(Example {
                line: index + 1,
                command: command.trim_end_matches('\\').trim().to_owned(),
                shown: Vec::new(),
            });
            continued = line.ends_with('\\');
        } else if let Some(example) = examples[first_of_block..].last_mut() {
            if continued {
                example.command.push(' ');
                example.command.push_str(line.trim_end_matches('\\').trim());
                continued = line.ends_with('\\');
            } else {
                example.shown.push(line.to_owned());
            }
        }
    }
    examples
}

/// `command` without a trailing `# comment` outside quotes.
fn without_comment(command: &str) -> &str {
    let mut quote = None;
    for (at, c) in command.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(open), c) if c == open => quote = None,
            (None, '#') if command[..at].ends_with(' ') => return command[..at].trim_end(),
            _ => {}
        }
    }
    command
}

/// `text` with every RFC 3339 timestamp and HTTP date as a placeholder.
fn without_times(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let stamp = rest.len() >= 20
            && bytes[at..at + 4].iter().all(u8::is_ascii_digit)
            && rest.as_bytes()[4] == b'-'
            && rest.as_bytes()[10] == b'T';
        if stamp {
            let end = rest.find('Z').map_or(rest.len(), |z| z + 1);
            out.push_str("<time>");
            at += end;
            continue;
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        at += c.len_utf8();
    }
    out.lines()
        .map(|line| {
            if line.to_ascii_lowercase().starts_with("date: ") {
                "date: <time>".to_owned()
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `actual` holds the pieces of `shown` split at `…`, in order, the first at its start
/// and the last at its end.
fn matches_with_elisions(shown: &str, actual: &str) -> bool {
    let pieces: Vec<&str> = shown.split('…').collect();
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if !actual.starts_with(first) {
        return false;
    }
    let mut at = first.len();
    if pieces.len() == 1 {
        return actual.len() == at;
    }
    for piece in &pieces[1..pieces.len() - 1] {
        match actual[at..].find(piece) {
            Some(found) => at += found + piece.len(),
            None => return false,
        }
    }
    actual.len() >= at + last.len() && actual.ends_with(last)
}

/// A `# total N: a, b, …` (or `# a, b, c`) line against a JSON page.
fn matches_summary(summary: &str, actual: &str) -> Result<(), String> {
    let page: serde_json::Value =
        serde_json::from_str(actual).map_err(|e| format!("not JSON ({e}): {actual}"))?;
    let (total, slugs) = match summary.strip_prefix("total ") {
        Some(rest) => {
            let (total, slugs) = rest.split_once(':').unwrap_or((rest, ""));
            (
                Some(total.trim().parse::<u64>().map_err(|e| e.to_string())?),
                slugs,
            )
        }
        None => (None, summary),
    };
    if let Some(total) = total {
        if page["total"] != total {
            return Err(format!("total {} shown, {} answered", total, page["total"]));
        }
    }
    let answered: Vec<&str> = page["data"]
        .as_array()
        .map(|data| {
            data.iter()
                .filter_map(|item| item["slug"].as_str())
                .collect()
        })
        .unwrap_or_default();
    for (index, slug) in slugs
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .enumerate()
    {
        if slug == "…" {
            break;
        }
        let found = answered.get(index).copied().unwrap_or("");
        let same = match slug.strip_prefix('…') {
            Some(tail) => found.ends_with(tail),
            None => found == slug,
        };
        if !same {
            return Err(format!("item {index}: `{slug}` shown, `{found}` answered"));
        }
    }
    Ok(())
}

/// Whether `actual` is what `shown` shows.
fn compare(shown: &[String], actual: &str) -> Result<(), String> {
    // A terminal's prompts: the tests give the password on standard input.
    let shown: Vec<&str> = shown
        .iter()
        .map(String::as_str)
        .filter(|line| !matches!(*line, "password:" | "again:"))
        .collect();
    if shown.is_empty() {
        return Ok(());
    }
    let actual = without_times(actual.trim_end());
    if shown.iter().all(|line| line.starts_with("# ")) {
        let summaries: Vec<&str> = shown.iter().map(|line| &line[2..]).collect();
        return summaries
            .iter()
            .try_for_each(|summary| matches_summary(summary, &actual));
    }
    let shown: Vec<String> = shown.iter().map(|line| without_times(line)).collect();
    if !actual.contains('\n') {
        // One line of JSON, wrapped in the README for reading.
        let joined: String = shown.iter().map(|line| line.trim_start()).collect();
        return if matches_with_elisions(&joined, &actual) {
            Ok(())
        } else {
            Err(format!("shown:\n{joined}\nanswered:\n{actual}"))
        };
    }
    compare_lines(&shown, &actual)
}

/// Line by line, in any order (headers come in the server's order, which the README need not
/// keep): every line shown is a line printed, a line with `…` matching with elisions, a
/// header by its name whatever its case; a status line shown first is the first printed; a
/// line `…` stands for lines left out.
fn compare_lines(shown: &[String], actual: &str) -> Result<(), String> {
    let lines: Vec<String> = actual
        .lines()
        .map(|line| header_lowercased(line.trim_end_matches('\r')))
        .collect();
    if let Some(status) = shown.first().filter(|line| line.starts_with("HTTP/")) {
        if lines.first() != Some(status) {
            return Err(format!("`{status}` shown, printed:\n{actual}"));
        }
    }
    for expected in shown.iter().filter(|line| line.trim() != "…") {
        let expected = header_lowercased(expected);
        if !lines
            .iter()
            .any(|line| matches_with_elisions(&expected, line))
        {
            return Err(format!("`{expected}` shown, not printed:\n{actual}"));
        }
    }
    Ok(())
}

/// Headers whose values differ from one request to the next: a random id, the budget left, a
/// tag and a length of a body that holds timestamps.
const VARYING_HEADERS: [&str; 5] = [
    "x-request-id",
    "ratelimit-remaining",
    "ratelimit-reset",
    "etag",
    "content-length",
];

/// A header line with its name lowercased (HTTP/1.1 sends them as written, the README as
/// curl shows them), the value of a [`VARYING_HEADERS`] one left out.
fn header_lowercased(line: &str) -> String {
    match line.split_once(": ") {
        Some((name, _)) if VARYING_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h)) => {
            format!("{}: <varies>", name.to_ascii_lowercase())
        }
        Some((name, value)) if !name.contains(' ') && !name.starts_with('{') => {
            format!("{}: {value}", name.to_ascii_lowercase())
        }
        _ => line.to_owned(),
    }
}

/// A server the README's examples address by one port, in a folder of its own (its data dir
/// `data/`, curl's cookie `jar`).
struct Scenario {
    folder: tempfile::TempDir,
    serve: Option<ServeProcess>,
    args: Vec<String>,
}

impl Scenario {
    fn data(&self) -> PathBuf {
        self.folder.path().join("data")
    }

    fn start(&mut self) {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        self.serve = Some(ServeProcess::start_with(&self.data(), &args));
    }

    fn stop(&mut self) {
        if let Some(serve) = self.serve.take() {
            serve.stop();
        }
    }

    /// `127.0.0.1:PORT` of the running server.
    fn address(&self) -> String {
        let base = &self.serve.as_ref().expect("a running server").base;
        base.trim_start_matches("http://")
            .trim_end_matches("/v1")
            .to_owned()
    }

    /// Runs `command` in this scenario's folder, the test binary first on `PATH`.
    fn run(&self, command: &str, stdin: &str) -> String {
        let bin = PathBuf::from(env!("CARGO_BIN_EXE_watch-catalogue"));
        let path = format!(
            "{}:{}",
            bin.parent().expect("bin dir").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut child = Command::new("sh")
            .args(["-c", command])
            .current_dir(self.folder.path())
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sh");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("write stdin");
        let output = child.wait_with_output().expect("run");
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        if !output.status.success() {
            text.push_str(&String::from_utf8_lossy(&output.stderr));
        }
        text
    }

    /// `ana` added as an admin (the server stopped, as the README's back office does) and
    /// signed in with curl's cookie jar.
    fn with_ana(&mut self) {
        self.stop();
        let added = self.run(
            "watch-catalogue user add ana --role admin",
            &format!("{PASSWORD}\n"),
        );
        assert!(added.contains("added ana"), "{added}");
        self.start();
        let login = format!(
            "curl -s -c jar -H 'content-type: application/json' -d '{{\"username\":\"ana\",\"password\":\"{PASSWORD}\"}}' http://{}/v1/auth/login",
            self.address()
        );
        let answer = self.run(&login, "");
        assert!(answer.contains("\"role\":\"admin\""), "{answer}");
    }
}

/// A fresh data dir served (`serve` fills it with the bundled fixtures), with `args`.
fn fixtures_scenario(args: &[&str]) -> Scenario {
    let mut scenario = Scenario {
        folder: tempfile::tempdir().expect("dir"),
        serve: None,
        args: args.iter().map(|a| (*a).to_owned()).collect(),
    };
    scenario.start();
    scenario
}

/// The revisits' set-up as the README's prose gives it: the bundled fixtures imported as
/// taken on 14 April 2025, chrono24's two revisit snapshots ingested as taken two and four
/// weeks later (D-214), every model's price series folded, and the server started.
fn revisits_scenario() -> Scenario {
    let mut scenario = Scenario {
        folder: tempfile::tempdir().expect("dir"),
        serve: None,
        args: Vec::new(),
    };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let import = format!(
        "watch-catalogue import {} --observed-at 2025-04-14T09:00:00Z",
        fixtures.display()
    );
    let imported = scenario.run(&import, "");
    assert!(imported.contains("ingested chrono24"), "{imported}");
    let revisits = [
        ("chrono24-2.jsonl", "2025-04-28T09:00:00Z"),
        ("chrono24-3.jsonl", "2025-05-12T09:00:00Z"),
    ];
    for (snapshot, taken) in revisits {
        let file = fixtures.join("revisits").join(snapshot);
        let command = format!(
            "watch-catalogue ingest --provider chrono24 --observed-at {taken} {}",
            file.display()
        );
        let ingested = scenario.run(&command, "");
        assert!(ingested.contains("ingested chrono24"), "{ingested}");
    }
    let folded = scenario.run("watch-catalogue reindex --index series", "");
    assert!(folded.contains("folded the price series"), "{folded}");
    scenario.start();
    scenario
}

/// Serves `pictures` (path to PNG bytes) on a free loopback port until the test ends.
fn picture_server(pictures: BTreeMap<&'static str, Vec<u8>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        // Bounded: the picture worker fetches each picture once or twice.
        for stream in listener.incoming().take(64).flatten() {
            let mut stream = stream;
            let mut request = [0u8; 2048];
            let read = stream.read(&mut request).unwrap_or(0);
            let head = String::from_utf8_lossy(&request[..read]);
            let path = head.split_whitespace().nth(1).unwrap_or("");
            let response = match pictures.get(path) {
                Some(png) => {
                    let mut bytes = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        png.len()
                    )
                    .into_bytes();
                    bytes.extend_from_slice(png);
                    bytes
                }
                None => b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_vec(),
            };
            let _ = stream.write_all(&response);
        }
    });
    port
}

/// A plain PNG of `width` x `height`.
fn png(width: u32, height: u32, shade: u8) -> Vec<u8> {
    let image = image::RgbImage::from_pixel(width, height, image::Rgb([shade, shade, 200]));
    let mut bytes = std::io::Cursor::new(Vec::new());
    image
        .write_to(&mut bytes, image::ImageFormat::Png)
        .expect("png");
    bytes.into_inner()
}

/// The README's `candidates.jsonl`: its one `jsonl` block.
fn readme_candidates(readme: &str) -> &str {
    readme
        .split_once("```jsonl\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(block, _)| block)
        .expect("README.md shows candidates.jsonl in a jsonl block")
}

/// The picture review's set-up as the README's prose gives it: the fixtures served, then, the
/// server stopped, a dataset of the README's `candidates.jsonl` (its pictures served by this
/// test on `picture_port` for 8765) imported, and the server started again allowed to fetch
/// from 127.0.0.1, `ana` signed in.
fn pictures_scenario(picture_port: u16, candidates: &str) -> Scenario {
    let mut scenario = fixtures_scenario(&["--fetch-allow", "127.0.0.1/32"]);
    scenario.stop();
    let dataset = scenario.folder.path().join("candidates");
    std::fs::create_dir_all(&dataset).expect("dataset dir");
    let candidates = candidates.replace("127.0.0.1:8765", &format!("127.0.0.1:{picture_port}"));
    std::fs::write(dataset.join("candidates.jsonl"), candidates).expect("candidates");
    let imported = scenario.run("watch-catalogue import candidates", "");
    assert!(imported.contains("candidates: 2 created"), "{imported}");
    scenario.with_ana();
    scenario
}

/// What the README's example commands print, each compared with what it shows.
#[test]
fn every_readme_example_prints_what_the_readme_shows() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let examples = examples(&readme);
    assert!(examples.len() > 40, "{} examples", examples.len());
    let picture_port = picture_server(BTreeMap::from([
        ("/front-a.png", png(600, 400, 40)),
        ("/front-b.png", png(500, 500, 90)),
    ]));
    let mut scenarios: BTreeMap<u16, Scenario> = BTreeMap::new();
    let mut problems = Vec::new();
    let catalogue = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/catalogue");
    for example in &examples {
        let command = without_comment(&example.command);
        let port = [8080, 8088, 8089, 8090]
            .into_iter()
            .find(|port| command.contains(&format!("127.0.0.1:{port}")))
            .unwrap_or(8080);
        let scenario = scenarios.entry(port).or_insert_with(|| match port {
            8088 => pictures_scenario(picture_port, readme_candidates(&readme)),
            8089 => {
                let mut scenario = fixtures_scenario(&[]);
                scenario.with_ana();
                scenario
            }
            8090 => revisits_scenario(),
            _ => fixtures_scenario(&[]),
        });
        let offline = command.starts_with("watch-catalogue user");
        if offline {
            scenario.stop();
        }
        let readme_address = format!("127.0.0.1:{port}");
        let address = scenario
            .serve
            .as_ref()
            .map_or_else(|| readme_address.clone(), |_| scenario.address());
        let command = command
            .replace(&readme_address, &address)
            .replace("127.0.0.1:8765", &format!("127.0.0.1:{picture_port}"))
            .replace("cargo run --release --", "watch-catalogue")
            .replace(
                " tests/data/catalogue",
                &format!(" {}", catalogue.display()),
            )
            .replace("/tmp/watch-data", "imported-data");
        let printed = scenario
            .run(&command, &format!("{PASSWORD}\n{PASSWORD}\n"))
            .replace(&address, &readme_address)
            .replace(&format!("127.0.0.1:{picture_port}"), "127.0.0.1:8765")
            .replace(&catalogue.display().to_string(), "tests/data/catalogue");
        if offline {
            scenario.start();
        }
        if let Err(problem) = compare(&example.shown, &printed) {
            problems.push(format!(
                "README.md:{}: `{}`\n{problem}",
                example.line, example.command
            ));
        }
    }
    for (_, mut scenario) in scenarios {
        scenario.stop();
    }
    assert!(
        problems.is_empty(),
        "{} of {} README examples print otherwise than shown:\n\n{}",
        problems.len(),
        examples.len(),
        problems.join("\n\n")
    );
}

#[test]
fn the_comparison_reads_elisions_summaries_and_headers() {
    assert!(matches_with_elisions(
        r#"{"a":1,…,"c":3}"#,
        r#"{"a":1,"b":2,"c":3}"#
    ));
    assert!(!matches_with_elisions(
        r#"{"a":1,…,"c":4}"#,
        r#"{"a":1,"b":2,"c":3}"#
    ));
    assert!(!matches_with_elisions(r#"{"a":1}"#, r#"{"a":1,"b":2}"#));
    let page = r#"{"data":[{"slug":"x-01-001"},{"slug":"x-01-002"}],"total":5}"#;
    assert!(matches_summary("total 5: x-01-001, …-01-002", page).is_ok());
    assert!(matches_summary("total 4: x-01-001", page).is_err());
    assert!(matches_summary("x-01-002", page).is_err());
    let shown = [
        "HTTP/1.1 200 OK".to_owned(),
        "ETag: W/\"1\"".to_owned(),
        "…".to_owned(),
    ];
    assert!(compare(&shown, "HTTP/1.1 200 OK\netag: W/\"1\"\nvary: x\n").is_ok());
    assert!(compare(&shown, "HTTP/1.1 404 Not Found\netag: W/\"1\"\n").is_err());
    assert_eq!(without_times("at 2026-11-24T09:04:04.523Z."), "at <time>.");
}
