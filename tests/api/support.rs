//! `TestApp`: the real router over a temporary data dir holding the test catalogue
//! (tests/data/catalogue). Its requests are driven through the router in process (no socket);
//! the same router is also served on an ephemeral loopback port (`base`), for the tests of what
//! only a real connection shows (its client address, timeouts, streamed bodies).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use watch_catalogue::api::config::ApiConfig;
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::domain::{Role, Username};
use watch_catalogue::jobs::import::{import_with_media, DirectorySource};
use watch_catalogue::jobs::ingest::{ingest, ingest_dataset_feeds};
use watch_catalogue::jobs::queue::Jobs;
use watch_catalogue::jobs::snapshot_rules::SnapshotRules;
use watch_catalogue::jobs::users::{self, Actor};

pub fn test_catalogue() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/catalogue")
}

/// Provider snapshots for the test catalogue (`listings/SLUG.jsonl`), ingested by every
/// [`TestApp`] after its import.
pub fn test_feeds() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/feeds")
}

pub struct TestApp {
    /// The loopback address the router is also served on.
    pub base: String,
    /// The served data dir, for tests that act on it as the CLI would.
    pub app: Arc<App>,
    /// What [`TestApp::send`] drives in process.
    router: axum::Router,
    /// The address the in-process requests come from, as the accept loop would tell it.
    peer: std::net::SocketAddr,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// How long one in-process request may take before the test fails (as the client's timeout).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How a [`TestApp`] is set up: `TestApp::build().dataset(dir).config(config).start()`. By
/// default the test catalogue and its provider feeds, default layer settings, indexes built.
pub struct TestAppBuilder {
    dataset: PathBuf,
    config: ApiConfig,
    indexed: bool,
    users: Vec<(String, Role)>,
}

/// The password of every user a [`TestAppBuilder`] adds.
pub const TEST_PASSWORD: &str = "test password 123";

impl TestAppBuilder {
    /// The dataset directory imported (its catalogue), then the test feeds ingested.
    pub fn dataset(mut self, dataset: &Path) -> TestAppBuilder {
        self.dataset = dataset.to_owned();
        self
    }

    /// The API's layer settings (rate limits, proxies, media base, versioning).
    pub fn config(mut self, config: ApiConfig) -> TestAppBuilder {
        self.config = config;
        self
    }

    /// A back-office user (password [`TEST_PASSWORD`]); [`TestApp::session`] signs in as them.
    pub fn user(mut self, name: &str, role: Role) -> TestAppBuilder {
        self.users.push((name.to_owned(), role));
        self
    }

    /// Leaves the search indexes unbuilt: a server that is not ready.
    pub fn unindexed(mut self) -> TestAppBuilder {
        self.indexed = false;
        self
    }

    /// Imports through the data dir's writer, then serves on an ephemeral loopback port.
    pub async fn start(self) -> TestApp {
        let dir = tempfile::tempdir().expect("temp dir");
        let app = App::open(&DataDir::new(dir.path()), 16 << 20).expect("open data dir");
        let catalogue = DirectorySource(self.dataset);
        let feeds = DirectorySource(test_feeds());
        if self.indexed {
            app.writer()
                .run(|turn| import_with_media(turn, &catalogue, Some(app.media())))
                .expect("import the dataset");
            app.writer()
                .run(|turn| ingest_dataset_feeds(turn, &feeds, &SnapshotRules::default()))
                .expect("ingest the test feeds");
        } else {
            // Straight to the store, past the writer that would index it.
            import_with_media(&app.store().write_turn(), &catalogue, Some(app.media()))
                .expect("import the dataset");
        }
        for (name, role) in &self.users {
            let name = Username::parse(name).expect("user name");
            app.writer()
                .run(|turn| users::add_user(turn, &Actor::Cli, &name, *role, TEST_PASSWORD))
                .expect("add user");
        }
        TestApp::serving(app, dir, self.config).await
    }
}

impl TestApp {
    /// A server over the test catalogue and feeds.
    pub async fn start() -> TestApp {
        Self::build().start().await
    }

    /// A server set up step by step; see [`TestAppBuilder`].
    pub fn build() -> TestAppBuilder {
        TestAppBuilder {
            dataset: test_catalogue(),
            config: ApiConfig::default(),
            indexed: true,
            users: Vec::new(),
        }
    }

    /// Serves an opened, prepared app (the test keeps `dir` alive through the returned value).
    pub async fn serving(app: App, dir: tempfile::TempDir, config: ApiConfig) -> TestApp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let app = Arc::new(app);
        // What `serve` starts beside the router: the job runner (not the image worker).
        Jobs::start(app.job_context()).expect("start the job runner");
        // The router `serve` builds: the API and the console inside the same layers.
        let pages = watch_catalogue::console::router(app.clone());
        let router = watch_catalogue::api::router_with_pages(app.clone(), &config, pages);
        // The accept loop `serve` runs, with its default timeouts and cap.
        tokio::spawn(watch_catalogue::connections::serve_connections(
            listener,
            router.clone(),
            Default::default(),
            std::future::pending(),
        ));
        TestApp {
            base: format!("http://{addr}"),
            app,
            router,
            peer: std::net::SocketAddr::from(([127, 0, 0, 1], 40_000)),
            // Redirects are answers to check, never followed.
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            _dir: dir,
        }
    }

    /// Sends `request` to this server: through the router in process (`tower`'s `oneshot`, the
    /// client address a loopback one), or over the loopback socket when its body is a stream.
    pub async fn send(&self, request: reqwest::RequestBuilder) -> reqwest::Response {
        let request = request.build().expect("a request");
        let Some(body) = request
            .body()
            .map(|body| body.as_bytes().map(<[u8]>::to_vec))
        else {
            return self.oneshot(request, Vec::new()).await;
        };
        match body {
            Some(bytes) => self.oneshot(request, bytes).await,
            None => self.client.execute(request).await.expect("request"),
        }
    }

    async fn oneshot(&self, request: reqwest::Request, body: Vec<u8>) -> reqwest::Response {
        use tower::ServiceExt;
        let url = request.url();
        let (method, path) = (request.method().clone(), url.path().to_owned());
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let mut http = axum::http::Request::builder()
            .method(request.method().clone())
            .uri(target)
            .body(axum::body::Body::from(body))
            .expect("an http request");
        *http.headers_mut() = request.headers().clone();
        // As a client on the wire sends it: the manifest's URLs are read from it.
        if let Some(host) = url.host_str() {
            let authority = match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_owned(),
            };
            http.headers_mut()
                .entry(axum::http::header::HOST)
                .or_insert(authority.parse().expect("a host header"));
        }
        http.extensions_mut()
            .insert(axum::extract::ConnectInfo(self.peer));
        let response = tokio::time::timeout(REQUEST_TIMEOUT, self.router.clone().oneshot(http))
            .await
            .expect("answered within the request timeout")
            .expect("the router answers");
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX)
            .await
            .expect("the whole body");
        let content_type = parts
            .headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        // A compressed body is checked uncompressed by the tests that ask for it.
        if !parts
            .headers
            .contains_key(axum::http::header::CONTENT_ENCODING)
        {
            crate::conformance::check_answer(
                &method,
                &path,
                parts.status.as_u16(),
                content_type,
                &bytes,
            );
        }
        reqwest::Response::from(axum::http::Response::from_parts(parts, bytes.to_vec()))
    }

    /// A request builder for `method` on `path`.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, format!("{}{path}", self.base))
    }

    /// GETs `path` (with its `/v1` prefix or not) and returns status and JSON body.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let response = self.send(self.request(reqwest::Method::GET, path)).await;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap_or("").to_owned());
        let body: Value = response
            .json()
            .await
            .unwrap_or_else(|e| panic!("{path}: body is not JSON: {e}"));
        assert_eq!(content_type.as_deref(), Some("application/json"), "{path}");
        (status, body)
    }

    /// GETs `path`, asserting 200, and returns the body.
    pub async fn ok(&self, path: &str) -> Value {
        let (status, body) = self.get(path).await;
        assert_eq!(status, 200, "{path}: {body}");
        body
    }

    /// Signs in as `name` (added with [`TestAppBuilder::user`]) and returns a client that
    /// carries the session cookie.
    pub async fn session(&self, name: &str) -> SessionClient<'_> {
        self.session_with(name, TEST_PASSWORD).await
    }

    /// Signs in as `name` with `password`, asserting it opens a session.
    pub async fn session_with(&self, name: &str, password: &str) -> SessionClient<'_> {
        let response = self
            .send(
                self.request(reqwest::Method::POST, "/v1/auth/login")
                    .json(&serde_json::json!({"username": name, "password": password})),
            )
            .await;
        assert_eq!(response.status().as_u16(), 200, "login as {name}");
        let cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .expect("session cookie")
            .to_owned();
        SessionClient { app: self, cookie }
    }

    /// The `slug` of each item of a list page's `data`.
    pub async fn slugs(&self, path: &str) -> Vec<String> {
        slugs_of(&self.ok(path).await["data"])
    }
}

pub fn slugs_of(items: &Value) -> Vec<String> {
    items
        .as_array()
        .expect("array")
        .iter()
        .map(|item| item["slug"].as_str().expect("slug").to_owned())
        .collect()
}

/// Asserts an error body: status, code, and a hint mentioning `hint_has`.
pub async fn assert_error(app: &TestApp, path: &str, status: u16, code: &str, hint_has: &str) {
    let (got, body) = app.get(path).await;
    assert_eq!(got, status, "{path}: {body}");
    assert_eq!(body["error"], code, "{path}: {body}");
    assert!(body["message"].is_string(), "{path}: {body}");
    let hint = body["hint"]
        .as_str()
        .unwrap_or_else(|| panic!("{path}: no hint in {body}"));
    assert!(
        hint.contains(hint_has),
        "{path}: hint {hint:?} lacks {hint_has:?}"
    );
}

/// Asserts the list-page envelope and returns `data`'s length.
pub fn assert_page(body: &Value, page: u64, page_size: u64, total: u64) -> usize {
    assert_eq!(body["page"], page, "{body}");
    assert_eq!(body["pageSize"], page_size, "{body}");
    assert_eq!(body["total"], total, "{body}");
    assert_eq!(body["totalPages"], total.div_ceil(page_size), "{body}");
    body["data"].as_array().expect("data").len()
}

/// Copies the test catalogue's files into `to`, for a test that edits its dataset.
pub fn copy_test_catalogue(to: &Path) {
    for entry in std::fs::read_dir(test_catalogue()).expect("catalogue") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

/// A copy of the test catalogue in a directory of its own.
pub fn test_catalogue_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dataset dir");
    copy_test_catalogue(dir.path());
    dir
}

/// Ingests `snapshot` as the full stock of `provider`, as `watch-catalogue ingest
/// --allow-mass-delist` would (tests replace a stock on purpose).
pub fn feed(app: &TestApp, provider: &str, snapshot: &str) {
    app.app
        .writer()
        .run(|turn| {
            ingest(
                turn,
                provider,
                "test",
                snapshot.as_bytes(),
                &SnapshotRules {
                    mass_delist_allowed_by: Some(Actor::Cli),
                    ..SnapshotRules::default()
                },
            )
        })
        .expect("ingest");
}

/// The keys of a JSON object, sorted.
pub fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value.as_object().expect("object").keys().cloned().collect();
    keys.sort();
    keys
}

/// The real `watch-catalogue` binary on `data_dir`, quiet unless something goes wrong.
pub fn binary(data_dir: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_watch-catalogue"));
    command
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "warn");
    command
}

/// What a job held by the test pacing logs (`WATCH_CATALOGUE_TEST_HOLD_AFTER_CHUNKS`).
pub const HELD: &str = "job held until stopped";

/// Spawns `command` (the binary, logging at info to a pipe) and returns it, with the rest of
/// its log, once it logged that its job holds ([`HELD`]): a test then stops or kills it
/// mid-job without racing it. Fails naming `what` when it ended first.
pub fn spawn_until_held(
    mut command: std::process::Command,
    what: &str,
) -> (
    std::process::Child,
    std::io::Lines<std::io::BufReader<std::process::ChildStderr>>,
) {
    use std::io::BufRead;
    let mut child = command
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect(what);
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = std::io::BufReader::new(stderr).lines();
    let held = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.contains(HELD));
    assert!(held, "{what} ended before it held after a chunk");
    (child, lines)
}

/// Sends `signal` (`-TERM`, `-KILL`) to `child` by pid, as an operator's `kill` would.
pub fn send_signal(child: &std::process::Child, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success(), "kill {signal}");
}

/// Runs the binary on `data_dir` with `args`, `stdin` written to it and `env` set (and the
/// admin credentials' variables cleared unless given): whether it succeeded, and its standard
/// output then error.
pub fn run_cli(
    data_dir: &Path,
    args: &[&str],
    stdin: Option<&str>,
    env: &[(&str, &str)],
) -> (bool, String) {
    use std::io::Write;
    let mut command = binary(data_dir);
    command
        .env_remove("WATCH_CATALOGUE_USER")
        .env_remove("WATCH_CATALOGUE_PASSWORD");
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).expect("stdin");
    }
    drop(input);
    let output = child.wait_with_output().expect("wait");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// `attempt`, tried again for up to 10 s while it fails on a data dir's lock. An `App` dropped
/// in this process can keep its directory locked a moment longer (sled's shared thread pool
/// holds the handle's file; seen on a loaded CI machine), so whatever opens that directory
/// next, here or in a child process, waits for it, as the store's own tests do
/// (`store::tests::reopen`). Any other failure is returned at once.
pub fn when_unlocked<T, E: std::fmt::Display>(
    mut attempt: impl FnMut() -> Result<T, E>,
) -> Result<T, E> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match attempt() {
            Err(error)
                if format!("{error:#}").contains("could not acquire lock")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10))
            }
            done => return done,
        }
    }
}

/// Opens an app on `data_dir` just after one on it was dropped in this process.
pub fn reopen(data_dir: &DataDir, cache_bytes: u64) -> App {
    when_unlocked(|| App::open(data_dir, cache_bytes)).unwrap_or_else(|e| panic!("reopen: {e:#}"))
}

/// The binary's `command`, run again while it finds the data dir locked (see
/// [`when_unlocked`]): its output and text, or the text of a run that failed otherwise.
pub fn run_when_unlocked(
    mut command: impl FnMut() -> std::process::Command,
) -> Result<(std::process::Output, String), String> {
    when_unlocked(|| {
        let (output, text) = crate::cli::run(&mut command());
        if output.status.success() {
            Ok((output, text))
        } else {
            Err(text)
        }
    })
}

/// The store generation of `data_dir` (the binary must have released it).
pub fn generation(data_dir: &Path) -> u64 {
    let store = DataDir::new(data_dir).store();
    // As anyhow's, whose `{:#}` names the sled error under the store's.
    when_unlocked(|| {
        watch_catalogue::store::Store::open(&store, 1 << 20).map_err(anyhow::Error::from)
    })
    .expect("store")
    .generation()
    .expect("generation")
    .0
}

/// `watch-catalogue serve` on `data_dir` as a child process, with its log read as it comes.
pub struct ServeProcess {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    /// Everything logged so far.
    pub log: String,
    /// The API's base URL, with its `/v1`.
    pub base: String,
}

impl ServeProcess {
    /// Starts `serve` on a free port and waits until it logs its base URL (the port is open).
    pub fn start(data_dir: &Path) -> ServeProcess {
        ServeProcess::start_with(data_dir, &[])
    }

    /// [`ServeProcess::start`] with more arguments to `serve`.
    pub fn start_with(data_dir: &Path, args: &[&str]) -> ServeProcess {
        ServeProcess::start_with_env(data_dir, args, &[])
    }

    /// [`ServeProcess::start_with`] with more environment variables (a test pacing of jobs).
    /// Started again while it finds the data dir locked: an `App` this test dropped just before
    /// can hold the lock a moment longer (see [`when_unlocked`]).
    pub fn start_with_env(data_dir: &Path, args: &[&str], env: &[(&str, String)]) -> ServeProcess {
        when_unlocked(|| ServeProcess::try_start(data_dir, args, env))
            .unwrap_or_else(|log| panic!("serve did not start in time:\n{log}"))
    }

    /// One start of `serve`: the process once it logs its base URL, or its log if it ended or
    /// said nothing of it within two minutes.
    fn try_start(
        data_dir: &Path,
        args: &[&str],
        env: &[(&str, String)],
    ) -> Result<ServeProcess, String> {
        use std::io::BufRead;
        let mut child = binary(data_dir)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .envs(env.iter().map(|(name, value)| (name, value)))
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn serve");
        let stderr = child.stderr.take().expect("stderr");
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut serve = ServeProcess {
            child,
            lines,
            log: String::new(),
            base: String::new(),
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        serve.base = loop {
            let Some(line) = serve.next_line(deadline) else {
                let _ = serve.child.kill();
                let _ = serve.child.wait();
                return Err(std::mem::take(&mut serve.log));
            };
            if let Some(start) = line.find("base=") {
                break line[start + 5..]
                    .split_whitespace()
                    .next()
                    .expect("base")
                    .to_owned();
            }
        };
        Ok(serve)
    }

    fn next_line(&mut self, deadline: std::time::Instant) -> Option<String> {
        let wait = deadline.saturating_duration_since(std::time::Instant::now());
        let line = self.lines.recv_timeout(wait).ok()?;
        self.log.push_str(&line);
        self.log.push('\n');
        Some(line)
    }

    /// Sends `signal` (`-TERM`, `-KILL`) to the server by pid.
    fn signal(&self, signal: &str) {
        send_signal(&self.child, signal);
    }

    /// The server's resident memory, in kB, as the kernel counts it (`VmRSS`).
    pub fn resident_kb(&self) -> u64 {
        self.status_line("VmRSS")
            .and_then(|value| value.trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    /// The flags (`VmFlags` of `/proc/PID/smaps`) of each of the server's mappings of a file
    /// in `dir`.
    pub fn flags_of_files_mapped_from(&self, dir: &Path) -> Vec<String> {
        let smaps = std::fs::read_to_string(format!("/proc/{}/smaps", self.child.id()))
            .expect("the server's mappings");
        catalogue_index::flags_of_mappings_in(&smaps, dir)
    }

    /// The value of the server's `/proc/PID/status` line `name`, when the kernel writes one.
    pub fn status_line(&self, name: &str) -> Option<String> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the server's status");
        status
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .map(|value| value.trim().to_owned())
    }

    /// SIGKILL by pid, as a crash or the OOM killer would end it: nothing flushed, nothing
    /// cleaned up. Returns the log so far.
    pub fn kill(mut self) -> String {
        self.signal("-KILL");
        let _ = self.child.wait();
        while self.lines.try_recv().is_ok() {}
        std::mem::take(&mut self.log)
    }

    /// SIGTERM, then waits for a clean exit after the store is flushed; returns the whole log.
    pub fn stop(self) -> String {
        self.terminate();
        self.stopped()
    }

    /// Sends SIGTERM and returns at once; [`ServeProcess::stopped`] waits for the exit.
    pub fn terminate(&self) {
        self.signal("-TERM");
    }

    /// True once the log holds `needle`, in a line already read or one to come (waiting 30 s
    /// at most).
    pub fn has_logged(&mut self, needle: &str) -> bool {
        self.log.contains(needle) || self.wait_for_log(needle).is_some()
    }

    /// The first line of the log holding `needle`, logged already or waited for (30 s at most).
    pub fn line_holding(&mut self, needle: &str) -> Option<String> {
        match self.log.lines().find(|line| line.contains(needle)) {
            Some(line) => Some(line.to_owned()),
            None => self.wait_for_log(needle),
        }
    }

    /// Waits (30 s at most) for a line of the log holding `needle`, which it returns.
    pub fn wait_for_log(&mut self, needle: &str) -> Option<String> {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let line = self.next_line(deadline)?;
            if line.contains(needle) {
                return Some(line);
            }
        }
    }

    /// After SIGTERM: waits (two minutes at most, then it is killed and the test fails) for a
    /// clean exit after the store is flushed; returns the whole log. A job under way stops at
    /// its next chunk's end first, which a debug build on a busy machine is slow to reach.
    pub fn stopped(mut self) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while !self.log.contains("store flushed") && self.next_line(deadline).is_some() {}
        let status = loop {
            match self.child.try_wait().expect("wait") {
                Some(status) => break status,
                None if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                None => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    panic!(
                        "serve still running two minutes after SIGTERM:\n{}",
                        self.log
                    );
                }
            }
        };
        // The rest of the log, up to its end (the pipe closed with the process).
        let rest = std::time::Instant::now() + Duration::from_secs(5);
        while self.next_line(rest).is_some() {}
        assert!(
            status.success(),
            "exit status {status} after SIGTERM:\n{}",
            self.log
        );
        assert!(self.log.contains("stopped; store flushed"), "{}", self.log);
        std::mem::take(&mut self.log)
    }
}

/// A test that fails while its server runs must not leave the server running (on a data dir
/// its `TempDir` is about to delete): std's `Child` neither kills nor waits when dropped.
impl Drop for ServeProcess {
    fn drop(&mut self) {
        // Already reaped after `stop` or `kill`: std then sends no signal to a reused pid.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Signs in to the API at `base` (with its `/v1`) as `name`; the session cookie
/// (`watch_catalogue_session=<token>`).
pub async fn sign_in(client: &reqwest::Client, base: &str, name: &str) -> String {
    let login = client
        .post(format!("{base}/auth/login"))
        .json(&serde_json::json!({"username": name, "password": TEST_PASSWORD}))
        .send()
        .await
        .expect("login");
    assert_eq!(login.status().as_u16(), 200, "login as {name}");
    login
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .expect("session cookie")
        .to_owned()
}

/// A one-shot HTTP/1.1 GET over std (no async runtime), asserting 200; the JSON body.
pub fn http_get(base: &str, path: &str) -> Value {
    use std::io::{Read, Write};
    let authority = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("authority");
    let prefix = base
        .trim_start_matches("http://")
        .trim_start_matches(authority);
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "GET {prefix}{path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    serde_json::from_str(body).expect("JSON body")
}

/// A server on `dataset` with the admin `ana`: the back office's tests.
pub async fn admin_app(dataset: &Path) -> TestApp {
    TestApp::build()
        .dataset(dataset)
        .user("ana", Role::Admin)
        .start()
        .await
}

/// A server on the test catalogue with the admin `ana` and the viewer `vic`.
pub async fn admin_and_viewer_app() -> TestApp {
    TestApp::build()
        .user("ana", Role::Admin)
        .user("vic", Role::Viewer)
        .start()
        .await
}

/// A client signed in to a [`TestApp`]: every request carries the session cookie.
pub struct SessionClient<'a> {
    pub app: &'a TestApp,
    /// `watch_catalogue_session=<token>`.
    pub cookie: String,
}

impl SessionClient<'_> {
    /// A request builder for `method` on `path`, with the session cookie.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.app
            .request(method, path)
            .header("cookie", self.cookie.clone())
    }

    /// Sends `method` to `path` with an optional JSON body; status and JSON body (null when
    /// there is none).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = self.app.send(request).await;
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// GETs `path` with the session.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// GETs `path` with the session, asserting 200.
    pub async fn ok(&self, path: &str) -> Value {
        let (status, body) = self.get(path).await;
        assert_eq!(status, 200, "{path}: {body}");
        body
    }
}

/// A new data dir as `serve` makes it on an empty folder (the bundled fixtures due at its first
/// start), for tests that run a command on it before serving: every command but `serve` and
/// `import` refuses a folder that is not a data dir.
pub fn new_data_dir() -> tempfile::TempDir {
    use watch_catalogue::data_dir::{self, Expect, Found};
    let dir = tempfile::tempdir().expect("dir");
    let data_dir = DataDir::new(dir.path());
    let found = data_dir::check(&data_dir, Expect::ExistingOrNew).expect("a new data dir");
    assert_eq!(found, Found::New);
    data_dir::fixtures_due(&data_dir).expect("fixtures due");
    dir
}

/// A concrete path of a route template (`{id}` and the like become `1`).
pub fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "1"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}
