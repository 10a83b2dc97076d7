//! The CLI against a running server (`--server URL`): sign in through the admin session
//! endpoint, submit a batch job (a snapshot streamed from its file, never read whole), follow
//! it (a progress bar on a terminal, plain lines otherwise) and hand back how it ended.

use super::progress::Shown;
use anyhow::Context;
use serde::Deserialize;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;
use watch_catalogue::jobs::writer::IndexChoice;

/// Who the CLI signs in as.
pub struct Credentials {
    pub user: String,
    pub password: String,
}

impl Credentials {
    /// `WATCH_CATALOGUE_USER` and `WATCH_CATALOGUE_PASSWORD`, or asked for on a terminal (the
    /// password without echo). Never an argument, which the host's process list shows.
    pub fn from_env_or_prompt() -> anyhow::Result<Credentials> {
        let terminal = std::io::stdin().is_terminal();
        let user = match std::env::var("WATCH_CATALOGUE_USER") {
            Ok(user) if !user.is_empty() => user,
            _ if terminal => {
                eprint!("user: ");
                let mut line = String::new();
                std::io::stdin().read_line(&mut line)?;
                line.trim().to_owned()
            }
            _ => anyhow::bail!(
                "set WATCH_CATALOGUE_USER and WATCH_CATALOGUE_PASSWORD to sign in to the server"
            ),
        };
        let password = match std::env::var("WATCH_CATALOGUE_PASSWORD") {
            Ok(password) if !password.is_empty() => password,
            _ if terminal => rpassword::prompt_password("password: ")?,
            _ => anyhow::bail!("set WATCH_CATALOGUE_PASSWORD to sign in to the server"),
        };
        Ok(Credentials { user, password })
    }
}

/// A batch job to submit.
pub enum Submission {
    Snapshot {
        provider: String,
        file: PathBuf,
        rules: watch_catalogue::jobs::snapshot_rules::SnapshotRules,
    },
    Rates {
        file: PathBuf,
    },
    Match,
    Reindex(IndexChoice),
    Duplicates,
}

/// A job as `GET /v1/admin/jobs/{id}` answers it (the fields the CLI reads).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub id: String,
    pub state: String,
    pub progress: Progress,
    pub report: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
    pub unit: String,
}

impl Job {
    pub fn succeeded(&self) -> bool {
        self.state == "succeeded"
    }

    fn is_finished(&self) -> bool {
        !matches!(self.state.as_str(), "queued" | "running")
    }
}

/// The error body of a refused request.
#[derive(Debug, Deserialize)]
struct ErrorBody {
    message: Option<String>,
    hint: Option<String>,
}

/// How often a job is asked where it stands.
const POLL_EVERY: Duration = Duration::from_millis(300);

/// Signs in to `server` (its origin, with or without `/v1`), submits `submission`, follows the
/// job until it ends and signs out; the job as it ended.
pub async fn run(
    server: &str,
    credentials: &Credentials,
    submission: Submission,
) -> anyhow::Result<Job> {
    let session = Session::open(server, credentials).await?;
    let job = session.submit(submission).await;
    let job = match job {
        Ok(job) => session.follow(job).await,
        Err(error) => Err(error),
    };
    session.sign_out().await;
    job
}

/// Signs in to `server`, sends one back-office request (`method` on `path` under `/v1`, with
/// `body` as JSON) and signs out; the JSON answered, or the server's refusal as an error that
/// says what was being done. What `user ... --server` does.
pub async fn request(
    server: &str,
    credentials: &Credentials,
    method: reqwest::Method,
    path: &str,
    body: Option<serde_json::Value>,
    doing: &str,
) -> anyhow::Result<serde_json::Value> {
    let session = Session::open(server, credentials).await?;
    let mut request = (session.http)
        .request(method, format!("{}{path}", session.base))
        .header(reqwest::header::COOKIE, &session.cookie)
        .timeout(Duration::from_secs(30));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let answer = async {
        let response = request.send().await.with_context(|| doing.to_owned())?;
        Ok(refused(response, doing).await?.json().await?)
    }
    .await;
    session.sign_out().await;
    answer
}

/// A signed-in client of one server.
struct Session {
    http: reqwest::Client,
    base: String,
    cookie: String,
}

impl Session {
    /// Signs in to `server` (its origin, with or without `/v1`).
    async fn open(server: &str, credentials: &Credentials) -> anyhow::Result<Session> {
        let base = format!(
            "{}/v1",
            server.trim_end_matches('/').trim_end_matches("/v1")
        );
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()?;
        Session::sign_in(http, &base, credentials).await
    }

    async fn sign_in(
        http: reqwest::Client,
        base: &str,
        credentials: &Credentials,
    ) -> anyhow::Result<Session> {
        let response = http
            .post(format!("{base}/auth/login"))
            .timeout(Duration::from_secs(30))
            .json(&serde_json::json!({
                "username": credentials.user,
                "password": credentials.password,
            }))
            .send()
            .await
            .with_context(|| format!("reaching the server at {base}"))?;
        let response = refused(response, "signing in").await?;
        let cookie = response
            .headers()
            .get(reqwest::header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .context("the server answered the sign-in without a session cookie")?
            .to_owned();
        Ok(Session {
            http,
            base: base.to_owned(),
            cookie,
        })
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}{path}", self.base))
            .header(reqwest::header::COOKIE, &self.cookie)
    }

    async fn submit(&self, submission: Submission) -> anyhow::Result<Job> {
        let request = match submission {
            Submission::Snapshot {
                provider,
                file,
                rules,
            } => {
                // Into the path only as a slug: `../rates` must not post to another route.
                let provider = watch_catalogue::domain::Slug::parse(&provider)
                    .map_err(|_| anyhow::anyhow!("`{provider}` is not a provider slug"))?;
                let body = tokio::fs::File::open(&file)
                    .await
                    .with_context(|| format!("opening {}", file.display()))?;
                let size = body.metadata().await?.len();
                self.post(&format!("/admin/providers/{provider}/snapshot"))
                    .query(&snapshot_query(&rules))
                    .header(reqwest::header::CONTENT_TYPE, "application/x-ndjson")
                    .body(uploaded(body, size, file.display().to_string()))
            }
            Submission::Rates { file } => {
                let text = tokio::fs::read(&file)
                    .await
                    .with_context(|| format!("reading {}", file.display()))?;
                self.post("/admin/rates")
                    .header(reqwest::header::CONTENT_TYPE, "application/xml")
                    .body(text)
            }
            Submission::Match => self.post("/admin/match"),
            Submission::Reindex(which) => self
                .post("/admin/reindex")
                .query(&[("index", which.as_str())]),
            Submission::Duplicates => self.post("/admin/duplicates/rebuild"),
        };
        let response = request.send().await.context("submitting the job")?;
        let response = refused(response, "submitting the job").await?;
        Ok(response.json().await?)
    }

    /// Asks where `job` stands until it ends, showing its progress.
    async fn follow(&self, mut job: Job) -> anyhow::Result<Job> {
        let mut shown = Shown::new(format!("job {}", job.id));
        loop {
            let Progress { done, total, unit } = &job.progress;
            shown.show(&job.state, *done, *total, unit);
            if job.is_finished() {
                shown.done();
                return Ok(job);
            }
            tokio::time::sleep(POLL_EVERY).await;
            let response = self
                .http
                .get(format!("{}/admin/jobs/{}", self.base, job.id))
                .header(reqwest::header::COOKIE, &self.cookie)
                .timeout(Duration::from_secs(30))
                .send()
                .await
                .context("asking where the job stands")?;
            job = refused(response, "asking where the job stands")
                .await?
                .json()
                .await?;
        }
    }

    /// Ends the session; a failure only leaves it to expire.
    async fn sign_out(&self) {
        let _ = self
            .post("/auth/logout")
            .timeout(Duration::from_secs(10))
            .send()
            .await;
    }
}

/// `response` when it succeeded; else its error's message and hint.
async fn refused(response: reqwest::Response, doing: &str) -> anyhow::Result<reqwest::Response> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body: Option<ErrorBody> = response.json().await.ok();
    let (message, hint) = body
        .map(|b| (b.message.unwrap_or_default(), b.hint))
        .unwrap_or_default();
    let mut text = format!("{doing}: the server answered {status}: {message}");
    if let Some(hint) = hint {
        text.push_str("\n  ");
        text.push_str(&hint);
    }
    anyhow::bail!(text)
}

/// How much of a snapshot's file is read and sent at once.
const UPLOAD_CHUNK: usize = 1 << 20;

/// `file`'s bytes as a request body streamed from it, its upload shown as it goes.
fn uploaded(file: tokio::fs::File, size: u64, name: String) -> reqwest::Body {
    use futures_util::StreamExt;
    let mut shown = Shown::new(format!("upload of {name}"));
    let mut sent = 0u64;
    // A blocking read of the file per chunk: 4 KiB chunks (the default) made a 449 MB snapshot's
    // upload take 6 s on loopback.
    let stream =
        tokio_util::io::ReaderStream::with_capacity(file, UPLOAD_CHUNK).map(move |chunk| {
            if let Ok(bytes) = &chunk {
                sent += bytes.len() as u64;
                let state = if sent >= size { "sent" } else { "sending" };
                shown.show(state, sent, size, "bytes");
                if sent >= size {
                    shown.done();
                }
            }
            chunk
        });
    reqwest::Body::wrap_stream(stream)
}

/// The query of a snapshot submission that carries `rules`.
fn snapshot_query(
    rules: &watch_catalogue::jobs::snapshot_rules::SnapshotRules,
) -> Vec<(&'static str, String)> {
    let mut query = vec![
        ("maxInvalid", rules.max_invalid.to_string()),
        ("maxDelist", rules.max_delist.to_string()),
    ];
    if rules.mass_delist_allowed_by.is_some() {
        query.push(("allowMassDelist", "true".to_owned()));
    }
    if let Some(at) = rules.observed_at {
        query.push(("observedAt", at.to_rfc3339()));
    }
    query
}

#[cfg(test)]
mod tests {
    use super::snapshot_query;
    use watch_catalogue::domain::Timestamp;
    use watch_catalogue::jobs::snapshot_rules::{parse_observed_at, SnapshotRules};

    /// `ingest --server --observed-at` sends the instant as the server parses it back.
    #[test]
    fn a_snapshot_taken_at_a_time_sends_it_as_observed_at() {
        let at = Timestamp(1_744_621_200_123);
        let rules = SnapshotRules {
            observed_at: Some(at),
            ..SnapshotRules::default()
        };
        let query = snapshot_query(&rules);
        let sent = query
            .iter()
            .find(|(name, _)| *name == "observedAt")
            .map(|(_, value)| value.as_str());
        assert_eq!(sent, Some("2025-04-14T09:00:00.123Z"));
        assert_eq!(parse_observed_at("observedAt", sent.unwrap_or("")), Ok(at));
        let now = snapshot_query(&SnapshotRules::default());
        assert!(now.iter().all(|(name, _)| *name != "observedAt"));
    }
}
