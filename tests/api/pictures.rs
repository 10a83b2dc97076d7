//! The image pipeline end to end: real images served by a local HTTP server, fetched into the
//! media store, cropped, served with immutable caching; and each refusal recorded as Failed.

use crate::support::{assert_error, binary, run_when_unlocked, TestApp};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use image::{ImageFormat, Rgb, RgbImage};
use std::io::Cursor;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use watch_catalogue::api::config::ApiConfig;
use watch_catalogue::app::App;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::domain::{
    FetchState, Fetched, PictureId, PictureRecord, Provider, ProviderId, Slug, Timestamp,
};
use watch_catalogue::jobs::ingest::ingest;
use watch_catalogue::jobs::pictures::{
    run_pass, run_until_stopped, PassReport, PictureWorker, WorkerConfig,
};
use watch_catalogue::media::crop::{background, content_box};
use watch_catalogue::media::{AllowedNets, FetchSettings};
use watch_catalogue::store::{RecordKind, StoreError};

const CROP_SIZE: u32 = 400;
const MAX_BYTES: u64 = 4 << 20;

/// A dark disc (the watch) on a flat background, with noise of ±`noise` on every channel.
pub(crate) fn watch_image(
    size: (u32, u32),
    disc: (u32, u32, u32),
    background: u8,
    noise: u8,
) -> RgbImage {
    let (cx, cy, r) = (i64::from(disc.0), i64::from(disc.1), i64::from(disc.2));
    let mut state = 0x9e37_79b9_u32;
    RgbImage::from_fn(size.0, size.1, |x, y| {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let jitter = i32::from((state >> 24) as u8 % (2 * noise + 1)) - i32::from(noise);
        let (dx, dy) = (i64::from(x) - cx, i64::from(y) - cy);
        let inside = dx * dx + dy * dy <= r * r;
        let base = if inside { 25 } else { i32::from(background) };
        let value = (base + jitter).clamp(0, 255) as u8;
        Rgb([value, value, value])
    })
}

pub(crate) fn encoded(image: &RgbImage, format: ImageFormat) -> Vec<u8> {
    let mut bytes = Cursor::new(Vec::new());
    image.write_to(&mut bytes, format).expect("encode");
    bytes.into_inner()
}

/// A picture the source server serves: a disc (x, y, radius) drawn on a background.
struct Drawn {
    path: &'static str,
    size: (u32, u32),
    disc: (u32, u32, u32),
    background: u8,
    format: ImageFormat,
}

/// Several offsets and sizes, white and grey backgrounds, JPEG, PNG and WebP.
fn drawn() -> Vec<Drawn> {
    let one = |path, size, disc, background, format| Drawn {
        path,
        size,
        disc,
        background,
        format,
    };
    vec![
        one(
            "/a.jpg",
            (640, 480),
            (200, 260, 150),
            255,
            ImageFormat::Jpeg,
        ),
        one("/b.png", (500, 700), (300, 420, 120), 200, ImageFormat::Png),
        one("/c.jpg", (300, 300), (150, 150, 60), 235, ImageFormat::Jpeg),
        one(
            "/d.webp",
            (400, 400),
            (250, 180, 90),
            220,
            ImageFormat::WebP,
        ),
    ]
}

fn octets(bytes: Vec<u8>) -> Response {
    // Deliberately not an image type: the bytes decide, not the header.
    ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response()
}

/// A source server on 127.0.0.1: the drawn pictures (also under a second URL), a text body,
/// an oversized body, a slow answer, a redirect loop, a redirect to a private address.
pub(crate) async fn source_server() -> SocketAddr {
    let mut router = axum::Router::new();
    for d in drawn() {
        let bytes = encoded(&watch_image(d.size, d.disc, d.background, 10), d.format);
        let copy = bytes.clone();
        router = router.route(d.path, get(move || async move { octets(bytes) }));
        if d.path == "/a.jpg" {
            router = router.route("/same-as-a.jpg", get(move || async move { octets(copy) }));
        }
    }
    let router = router
        .route("/text", get(|| async { "not an image at all" }))
        .route(
            "/big",
            get(|| async { octets(vec![0xff; MAX_BYTES as usize + 1]) }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                "too late"
            }),
        )
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route(
            "/to-private",
            get(|| async { Redirect::temporary("http://10.0.0.1/a.jpg") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

pub(crate) fn worker_config(allow: &[&str]) -> WorkerConfig {
    WorkerConfig {
        fetch: FetchSettings {
            allow: AllowedNets(allow.iter().map(|n| n.parse().expect("net")).collect()),
            connect_timeout: Duration::from_secs(1),
            total_timeout: Duration::from_secs(2),
            max_bytes: MAX_BYTES,
            ..FetchSettings::default()
        },
        crop_size: CROP_SIZE,
        ..WorkerConfig::default()
    }
}

fn empty_app() -> (App, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let app = App::open(&DataDir::new(dir.path()), 16 << 20).expect("open");
    (app, dir)
}

/// The server's image worker ends when `serve` asks it to, idle or not, so the shutdown can
/// join it before the store's last flush.
#[tokio::test]
async fn the_image_worker_stops_when_asked_and_can_be_joined() {
    let (app, _dir) = empty_app();
    let app = Arc::new(app);
    let worker = PictureWorker::new(app.media().clone(), &worker_config(&[])).expect("worker");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(run_until_stopped(
        app.job_context().clone(),
        Arc::new(worker),
        stopped,
    ));
    // Idle: nothing is due, so it waits between passes.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!task.is_finished(), "the worker runs until stopped");
    stop.send(true).expect("the worker listens");
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("stopped within 10 s")
        .expect("joined");
}

/// A picture whose crop was cleared is cropped again from the stored original, to the
/// same bytes, by the next pass.
async fn assert_a_cleared_crop_is_made_again(app: &Arc<App>, id: PictureId) {
    let before = state(app, id);
    let mut cleared = before.clone();
    if let FetchState::Fetched(fetched) = &mut cleared.state {
        fetched.cropped = None;
    }
    app.writer()
        .run(|turn| -> Result<(), StoreError> {
            let mut batch = turn.batch()?;
            batch.put_picture(&cleared);
            turn.commit(batch).map(|_| ())
        })
        .expect("clear the crop");
    // Nothing is allowed: the original is read from the media store, not fetched again.
    pass(app, &[]).await;
    assert_eq!(state(app, id).state, before.state);
}

/// Pending records for `urls`, as ingest makes them.
fn seed(app: &App, urls: &[String]) -> Vec<PictureId> {
    app.writer()
        .run(|turn| -> Result<Vec<PictureId>, StoreError> {
            let mut batch = turn.batch()?;
            let mut ids = Vec::new();
            for url in urls {
                let id = PictureId(batch.allocate_id(RecordKind::Picture)?);
                batch.put_picture(&PictureRecord::pending(id, url.clone(), Timestamp::now()));
                ids.push(id);
            }
            turn.commit(batch)?;
            Ok(ids)
        })
        .expect("seed")
        .value
}

pub(crate) async fn pass(app: &Arc<App>, allow: &[&str]) {
    pass_with(app, &worker_config(allow)).await;
}

/// One pass of a worker of `config`, within a minute.
async fn pass_with(app: &Arc<App>, config: &WorkerConfig) {
    let worker = PictureWorker::new(app.media().clone(), config).expect("worker");
    pass_of(app, &Arc::new(worker), Duration::from_secs(60)).await;
}

/// The catalogue imported with `candidates` (candidates.jsonl lines) waiting for review.
fn import_candidates(app: &App, candidates: &str) {
    let dataset = crate::picture_review::dataset_with(candidates);
    let dir = watch_catalogue::jobs::import::DirectorySource(dataset.path().to_owned());
    app.writer()
        .run(|turn| watch_catalogue::jobs::import::import(turn, &dir))
        .expect("import");
}

/// A worker's settings that fetch from loopback one picture at a time.
fn one_at_a_time() -> WorkerConfig {
    WorkerConfig {
        concurrency: 1,
        ..worker_config(&["127.0.0.1/32"])
    }
}

/// An address on loopback nothing listens on: connections to it are refused.
fn closed_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr")
}

/// One pass of `worker`, within `limit`: what it did.
async fn pass_of(app: &Arc<App>, worker: &Arc<PictureWorker>, limit: Duration) -> PassReport {
    tokio::time::timeout(limit, run_pass(app.job_context(), worker))
        .await
        .expect("a pass ends")
        .expect("pass")
}

pub(crate) fn state(app: &App, id: PictureId) -> PictureRecord {
    app.store()
        .pictures()
        .picture(id)
        .expect("read")
        .expect("record")
}

fn failure_reason(app: &App, id: PictureId) -> String {
    match state(app, id).state {
        FetchState::Failed { reason, .. } => reason,
        other => panic!("picture {id} is {other:?}, not failed"),
    }
}

#[tokio::test]
async fn pictures_are_fetched_stored_once_cropped_and_served_immutable() {
    let source = source_server().await;
    let (app, dir) = empty_app();
    let app = Arc::new(app);
    let mut paths: Vec<&str> = drawn().iter().map(|d| d.path).collect();
    paths.push("/same-as-a.jpg");
    let urls: Vec<String> = paths
        .iter()
        .map(|p| format!("http://{source}{p}"))
        .collect();
    let ids = seed(&app, &urls);
    pass(&app, &["127.0.0.1/32"]).await;

    let records: Vec<PictureRecord> = ids.iter().map(|id| state(&app, *id)).collect();
    let fetched: Vec<_> = records
        .iter()
        .map(|r| r.fetched().cloned().unwrap_or_else(|| panic!("{r:?}")))
        .collect();
    assert_eq!(fetched[0].hash, fetched[4].hash, "same bytes, same file");
    let originals = std::fs::read_dir(dir.path().join("media"))
        .expect("media dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name() != "tmp")
        .flat_map(|e| std::fs::read_dir(e.path()).expect("ls"))
        .count();
    // Four originals and four crops; the fifth URL added nothing.
    assert_eq!(originals, 8);

    for (d, picture) in drawn().into_iter().zip(&fetched) {
        assert_eq!((picture.width, picture.height), d.size);
        let crop_hash = picture.cropped.expect("cropped");
        let crop = image::load_from_memory(&app.media().read(&crop_hash).expect("crop"))
            .expect("crop decodes")
            .to_rgb8();
        assert_crop_frames_the_disc(&crop, d.disc.2);
    }
    assert_a_cleared_crop_is_made_again(&app, ids[2]).await;

    let api = TestApp::serving(
        Arc::try_unwrap(app).ok().expect("one owner"),
        dir,
        ApiConfig::default(),
    )
    .await;
    assert_served_immutable(&api, ids[0], "", "image/jpeg", &fetched[0].hash.hex()).await;
    assert_served_immutable(&api, ids[1], "", "image/png", &fetched[1].hash.hex()).await;
    assert_served_immutable(&api, ids[3], "", "image/webp", &fetched[3].hash.hex()).await;
    let cropped = fetched[1].cropped.expect("crop").hex();
    assert_served_immutable(&api, ids[1], "/cropped", "image/jpeg", &cropped).await;
}

/// The crop is square, at most the configured size, and the disc's box is where centring it
/// with a 5 % margin puts it, within a few pixels.
fn assert_crop_frames_the_disc(crop: &RgbImage, radius: u32) {
    let (w, h) = crop.dimensions();
    assert_eq!(w, h, "square");
    let longer = f64::from(2 * radius + 1);
    let margin = (longer * 0.05).round();
    let scale = (f64::from(CROP_SIZE) / (longer + 2.0 * margin)).min(1.0);
    let found = content_box(crop, &background(crop)).expect("a disc");
    for (got, want) in [
        (found.x, margin * scale),
        (found.y, margin * scale),
        (found.width, longer * scale),
        (found.height, longer * scale),
    ] {
        assert!(
            (f64::from(got) - want).abs() <= 4.0,
            "{found:?} in {w}px, radius {radius}"
        );
    }
}

async fn assert_served_immutable(
    api: &TestApp,
    id: PictureId,
    suffix: &str,
    kind: &str,
    hex: &str,
) {
    let path = format!("/media/pictures/{id}{suffix}");
    let response = api.send(api.request(reqwest::Method::GET, &path)).await;
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    let header_of = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(header_of(header::CONTENT_TYPE).as_deref(), Some(kind));
    let etag = format!("\"{hex}\"");
    assert_eq!(header_of(header::ETAG), Some(etag.clone()));
    assert_eq!(
        header_of(header::CACHE_CONTROL).as_deref(),
        Some("public, max-age=31536000, immutable")
    );
    let again = api
        .send(
            api.request(reqwest::Method::GET, &path)
                .header(header::IF_NONE_MATCH, &etag),
        )
        .await;
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
}

#[tokio::test]
async fn refused_sources_leave_a_failed_state_with_the_reason() {
    let source = source_server().await;
    let (app, _dir) = empty_app();
    let app = Arc::new(app);
    let cases = [
        ("/text", "not a JPEG, PNG or WebP image"),
        ("/big", "larger than"),
        ("/slow", "timed out"),
        ("/loop", "too many redirects"),
        ("/to-private", "10.0.0.1 is not a public address"),
    ];
    let urls: Vec<String> = cases
        .iter()
        .map(|c| format!("http://{source}{}", c.0))
        .collect();
    let ids = seed(&app, &urls);
    // A name reserved for examples is refused without a lookup, once.
    let reserved = seed(
        &app,
        &["https://cdn.watchcatalogue.example/a.jpg".to_owned()],
    );
    pass(&app, &["127.0.0.1/32"]).await;
    let found = failure_reason(&app, reserved[0]);
    assert!(found.contains("reserved for examples"), "{found:?}");
    assert!(!matches!(
        state(&app, reserved[0]).state,
        FetchState::Failed {
            next_try_at: Some(_),
            ..
        }
    ));
    for ((path, reason), id) in cases.iter().zip(&ids) {
        let found = failure_reason(&app, *id);
        assert!(found.contains(reason), "{path}: {found:?} lacks {reason:?}");
        assert_eq!(state(&app, *id).attempts, 1);
    }
    let slow = state(&app, ids[2]).state;
    assert!(
        matches!(
            slow,
            FetchState::Failed {
                next_try_at: Some(_),
                ..
            }
        ),
        "a timeout is retried later: {slow:?}"
    );
}

#[tokio::test]
async fn private_addresses_are_refused_unless_allowed() {
    let source = source_server().await;
    let (app, _dir) = empty_app();
    let app = Arc::new(app);
    let port = source.port();
    let urls = [
        format!("http://127.0.0.1:{port}/a.jpg"),
        format!("http://localhost:{port}/a.jpg"),
        format!("http://[::ffff:127.0.0.1]:{port}/a.jpg"),
        "file:///etc/passwd".to_owned(),
    ];
    let ids = seed(&app, &urls);
    pass(&app, &[]).await;
    for (url, id) in urls.iter().zip(&ids) {
        let found = failure_reason(&app, *id);
        assert!(found.starts_with("refused: "), "{url}: {found:?}");
        let retried = matches!(
            state(&app, *id).state,
            FetchState::Failed {
                next_try_at: Some(_),
                ..
            }
        );
        assert!(!retried, "{url}: a refusal is not retried");
    }
}

/// A pass reads its due pictures a page at a time: more than two pages of them, of both forms
/// (state records and pending groups), are each handled once in one pass, none left out.
#[tokio::test]
async fn one_pass_handles_every_due_picture_across_its_pages() {
    let (app, _dir) = empty_app();
    let app = Arc::new(app);
    // Refused at once (a private address, nothing allowed): no connection is made.
    let url = |n: usize| format!("http://127.0.0.1:9/{n}.jpg");
    let stated: Vec<String> = (0..1_300).map(url).collect();
    let mut ids = seed(&app, &stated);
    ids.extend(
        app.writer()
            .run(|turn| -> Result<Vec<PictureId>, StoreError> {
                let mut batch = turn.batch()?;
                let queued = (1_300..2_600)
                    .map(|n| batch.queue_picture(url(n), Timestamp::now()))
                    .collect::<Result<Vec<_>, _>>()?;
                turn.commit(batch)?;
                Ok(queued)
            })
            .expect("queue")
            .value,
    );
    let worker = PictureWorker::new(app.media().clone(), &worker_config(&[])).expect("worker");
    let report = pass_of(&app, &Arc::new(worker), Duration::from_secs(120)).await;
    assert_eq!(report.failed, 2_600);
    for id in ids {
        assert_eq!(state(&app, id).attempts, 1, "picture {id:?}");
    }
}

/// A host that looks down (three connections refused in a row) is paused: its other pictures
/// stay pending, no attempt spent, while a reachable host's pictures are fetched in the same
/// pass; the same worker's next pass leaves them too, and a new worker (a restart) tries again.
#[tokio::test]
async fn a_host_that_looks_down_is_paused_without_spending_its_pictures_attempts() {
    let source = source_server().await;
    let down = closed_port();
    let (app, _dir) = empty_app();
    let app = Arc::new(app);
    let dead: Vec<String> = (0..10).map(|n| format!("http://{down}/{n}.jpg")).collect();
    let dead = seed(&app, &dead);
    let live = seed(&app, &[format!("http://{source}/a.jpg")]);
    // One fetch at a time: exactly three fail before the pause.
    let config = one_at_a_time();
    let worker = Arc::new(PictureWorker::new(app.media().clone(), &config).expect("worker"));
    let minute = Duration::from_secs(60);
    let first = pass_of(&app, &worker, minute).await;
    assert_eq!((first.failed, first.fetched), (3, 1), "{first:?}");
    assert_eq!(first.waiting_for_host, 7);
    for (n, id) in dead.iter().enumerate() {
        let record = state(&app, *id);
        let (attempts, pending) = if n < 3 { (1, false) } else { (0, true) };
        assert_eq!(record.attempts, attempts, "picture {n}: {record:?}");
        assert_eq!(
            record.state == FetchState::Pending,
            pending,
            "picture {n}: {record:?}"
        );
    }
    assert!(state(&app, live[0]).fetched().is_some());
    let second = pass_of(&app, &worker, minute).await;
    assert_eq!(
        (second.handled(), second.waiting_for_host),
        (0, 7),
        "{second:?}"
    );
    let restarted = PictureWorker::new(app.media().clone(), &config).expect("worker");
    let third = pass_of(&app, &Arc::new(restarted), minute).await;
    assert_eq!((third.failed, third.waiting_for_host), (3, 4), "{third:?}");
}

/// `/metrics` shows how many hosts the server's image worker has paused and how many pictures
/// its last pass left for them: 0 and 0 before, 1 and 7 once ten pictures of a dead host met it.
#[tokio::test]
async fn metrics_show_the_paused_picture_hosts_and_the_pictures_left_for_them() {
    let down = closed_port();
    let (app, dir) = empty_app();
    let served = TestApp::serving(app, dir, ApiConfig::default()).await;
    let scrape = || async {
        let response = served
            .send(served.request(reqwest::Method::GET, "/metrics"))
            .await;
        let text = response.text().await.expect("text");
        let value = |name: &str| {
            let line = text
                .lines()
                .find(|line| line.starts_with(&format!("{name} ")));
            line.and_then(|line| line.rsplit_once(' ')?.1.parse::<u64>().ok())
        };
        (
            value("picture_hosts_paused"),
            value("pictures_waiting_for_host"),
        )
    };
    assert_eq!(scrape().await, (Some(0), Some(0)), "no worker yet");
    let dead: Vec<String> = (0..10).map(|n| format!("http://{down}/{n}.jpg")).collect();
    seed(&served.app, &dead);
    // The server's worker, as `serve` runs it, one fetch at a time: three fail, then the pause.
    let worker =
        Arc::new(PictureWorker::new(served.app.media().clone(), &one_at_a_time()).expect("worker"));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(run_until_stopped(
        served.app.job_context().clone(),
        worker,
        stopped,
    ));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut seen = scrape().await;
    while seen != (Some(1), Some(7)) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        seen = scrape().await;
    }
    assert_eq!(seen, (Some(1), Some(7)));
    stop.send(true).expect("the worker listens");
    task.await.expect("joined");
}

/// Candidates a reviewer waits for, on a host that looks down: the pass tries them first, and
/// those it leaves for the paused host are counted once, though its walk in id order meets them
/// again.
#[tokio::test]
async fn candidates_left_for_a_paused_host_are_counted_once() {
    let down = closed_port();
    let candidates: String = (0..5)
        .map(|n| {
            let line = serde_json::json!({"model": "rolex/submariner-date-126610lv",
                "url": format!("http://{down}/candidate-{n}.jpg"), "rank": n + 1});
            format!("{line}\n")
        })
        .collect();
    let (app, _dir) = empty_app();
    let app = Arc::new(app);
    import_candidates(&app, &candidates);
    // One fetch at a time: exactly three fail before the pause.
    let worker = PictureWorker::new(app.media().clone(), &one_at_a_time()).expect("worker");
    let report = pass_of(&app, &Arc::new(worker), Duration::from_secs(60)).await;
    assert_eq!(report.waiting_for_host, 2, "{report:?}");
}

/// Fetched pictures beyond the decode budget wait for it before anything is decoded: with the
/// whole budget taken, the pass's four pictures are downloaded and wait, none decoded nor
/// recorded, until it is given back; then each is decoded and cropped.
#[tokio::test]
async fn pictures_beyond_the_decode_budget_wait_for_it() {
    let source = source_server().await;
    let (app, _dir) = empty_app();
    let app = Arc::new(app);
    let urls: Vec<String> = drawn()
        .iter()
        .map(|d| format!("http://{source}{}", d.path))
        .collect();
    let ids = seed(&app, &urls);
    // The largest drawn picture's pixels (500 x 700): any two of the four at once are more.
    let config = WorkerConfig {
        decode_budget_pixels: Some(500 * 700),
        ..worker_config(&["127.0.0.1/32"])
    };
    let worker = Arc::new(PictureWorker::new(app.media().clone(), &config).expect("worker"));
    let budget = worker.decode_budget();
    assert_eq!((budget.total(), budget.in_use()), (350_000, 0));
    let taken = budget.reserve(budget.total()).await;
    let pass = tokio::spawn({
        let (app, worker) = (app.clone(), worker.clone());
        async move { run_pass(app.job_context(), &worker).await }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while worker.decode_budget().waiting() < ids.len() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} of {} pictures waiting for the budget",
            worker.decode_budget().waiting(),
            ids.len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(worker.decode_budget().in_use(), 350_000);
    assert!(ids
        .iter()
        .all(|id| matches!(state(&app, *id).state, FetchState::Pending)));
    drop(taken);
    tokio::time::timeout(Duration::from_secs(60), pass)
        .await
        .expect("the pass ends")
        .expect("pass task")
        .expect("pass");
    for id in &ids {
        let fetched = state(&app, *id).fetched().cloned();
        assert!(fetched.is_some_and(|f| f.cropped.is_some()), "{id}");
    }
    assert_eq!(
        (
            worker.decode_budget().in_use(),
            worker.decode_budget().waiting()
        ),
        (0, 0)
    );
}

#[tokio::test]
async fn unknown_and_unfetched_pictures_answer_404_json() {
    let (app, dir) = empty_app();
    let ids = seed(&app, &["http://192.0.2.1/never.jpg".to_owned()]);
    let api = TestApp::serving(app, dir, ApiConfig::default()).await;
    for path in [
        format!("/media/pictures/{}", ids[0]),
        format!("/media/pictures/{}/cropped", ids[0]),
        "/media/pictures/999".to_owned(),
        "/media/pictures/x".to_owned(),
    ] {
        assert_error(&api, &path, 404, "not_found", "image worker").await;
    }
}

#[tokio::test]
async fn ingest_and_import_write_a_pending_record_for_each_new_picture() {
    let api = TestApp::start().await;
    let mut sources = Vec::new();
    for listing in api.app.store().listings().all_listings() {
        let pictures = listing.expect("listing").pictures;
        sources.extend(pictures.into_iter().map(|p| (p.id, p.source_url)));
    }
    let listing_pictures = sources.len();
    for model in api.app.store().catalogue().all_models() {
        let pictures = model.expect("model").pictures.into_iter();
        // A picture the dataset already gives a crop for is not fetched.
        let uncropped = pictures.filter(|p| p.cropped_url.is_none());
        sources.extend(uncropped.map(|p| (p.id, p.url)));
    }
    assert!(listing_pictures > 0 && sources.len() > listing_pictures);
    for (id, source) in sources {
        let record = state(&api.app, id);
        assert_eq!(record.source_url, source);
        assert_eq!(record.state, FetchState::Pending);
    }
}

/// Ingests a one-listing snapshot of a new provider, its pictures at `urls`; their ids.
fn ingest_listing(app: &App, urls: &[String]) -> Vec<PictureId> {
    app.writer()
        .run(|turn| -> Result<(), StoreError> {
            let mut batch = turn.batch()?;
            let id = ProviderId(batch.allocate_id(RecordKind::Provider)?);
            let provider = Provider {
                id,
                slug: Slug::parse("test-shop").expect("slug"),
                name: "Test shop".into(),
                url: "https://shop.example".into(),
                created_at: Timestamp::now(),
                updated_at: Timestamp::now(),
            };
            batch.put_provider(None, &provider);
            turn.commit(batch).map(|_| ())
        })
        .expect("provider");
    let line = serde_json::json!({
        "sourceId": "S-1",
        "url": "https://shop.example/1",
        "title": "Rolex Submariner 126610LV",
        "pictures": urls,
    });
    app.writer()
        .run(|turn| {
            ingest(
                turn,
                "test-shop",
                "feed",
                line.to_string().as_bytes(),
                &Default::default(),
            )
        })
        .expect("ingest");
    let listing = app
        .store()
        .listings()
        .all_listings()
        .next()
        .expect("one")
        .expect("listing");
    listing.pictures.into_iter().map(|p| p.id).collect()
}

#[tokio::test]
async fn pictures_an_ingest_queued_are_fetched_and_their_states_read_back() {
    let source = source_server().await;
    let (app, _dir) = empty_app();
    let app = Arc::new(app);
    let urls: Vec<String> = ["/a.jpg", "/text", "/b.png"]
        .iter()
        .map(|p| format!("http://{source}{p}"))
        .collect();
    let ids = ingest_listing(&app, &urls);
    let due: Vec<PictureId> = (app
        .store()
        .pictures()
        .pictures_maybe_due()
        .expect("due")
        .iter())
    .map(|r| r.id)
    .collect();
    assert_eq!(due, ids, "queued for the worker");
    for (id, url) in ids.iter().zip(&urls) {
        let record = state(&app, *id);
        assert_eq!(
            (&record.source_url, &record.state),
            (url, &FetchState::Pending)
        );
    }

    pass(&app, &["127.0.0.1/32"]).await;
    let fetched = |i: usize| state(&app, ids[i]).fetched().cloned();
    assert!(
        fetched(0).is_some_and(|f| f.cropped.is_some()),
        "{:?}",
        state(&app, ids[0])
    );
    assert!(
        fetched(2).is_some_and(|f| f.cropped.is_some()),
        "{:?}",
        state(&app, ids[2])
    );
    assert!(failure_reason(&app, ids[1]).contains("not a JPEG, PNG or WebP image"));
    for (id, url) in ids.iter().zip(&urls) {
        assert_eq!(&state(&app, *id).source_url, url);
    }
    // Nothing left to do: a second pass fetches nothing again.
    assert!(app
        .store()
        .pictures()
        .pictures_maybe_due()
        .expect("due")
        .is_empty());
    let worker =
        PictureWorker::new(app.media().clone(), &worker_config(&["127.0.0.1/32"])).expect("worker");
    let report = run_pass(app.job_context(), &Arc::new(worker))
        .await
        .expect("pass");
    assert_eq!(report.handled(), 0);
}

#[tokio::test]
async fn a_model_picture_links_its_crop_once_the_worker_has_made_it() {
    let api = TestApp::start().await;
    let path = "/v1/models/rolex/submariner-date-126610lv";
    let before = api.ok(path).await;
    let front = &before["pictures"][0];
    assert_eq!(front["type"], "FRONT");
    assert!(front["croppedUrl"].is_null(), "{front}");
    let id: PictureId = front["id"]
        .as_str()
        .expect("id")
        .parse()
        .expect("picture id");

    // What a pass leaves once it has fetched and cropped the picture.
    let mut record = state(&api.app, id);
    let hash = api.app.media().put(b"stand-in bytes").expect("put");
    record.state = FetchState::Fetched(Fetched {
        hash,
        format: watch_catalogue::domain::ImageFormat::Jpeg,
        width: 10,
        height: 10,
        cropped: Some(hash),
    });
    api.app
        .writer()
        .run(|turn| -> Result<(), StoreError> {
            let mut batch = turn.batch()?;
            batch.put_picture(&record);
            turn.commit(batch).map(|_| ())
        })
        .expect("record the crop");

    let crop = format!("/media/pictures/{id}/cropped");
    let after = api.ok(path).await;
    assert_eq!(after["pictures"][0]["croppedUrl"], crop.as_str());
    let list = api.ok("/v1/models?q=126610LV").await;
    let item = &list["data"][0];
    assert_eq!(item["thumbnailUrl"], crop.as_str(), "{item}");
    assert_eq!(item["thumbnailIsCropped"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn pictures_fetch_runs_one_pass_on_a_stopped_data_dir() {
    let source = source_server().await;
    let (app, dir) = empty_app();
    let urls = [
        format!("http://{source}/a.jpg"),
        format!("http://{source}/text"),
    ];
    let ids = seed(&app, &urls);
    drop(app);
    let path = dir.path().to_owned();
    let (_, text) = tokio::task::spawn_blocking(move || {
        run_when_unlocked(|| {
            let mut command = binary(&path);
            command
                .args(["pictures", "fetch", "--fetch-allow", "127.0.0.1/32"])
                .args(["--fetch-timeout-secs", "5"]);
            command
        })
    })
    .await
    .expect("the command ran")
    .unwrap_or_else(|text| panic!("{text}"));
    assert!(
        text.contains("pictures: 1 fetched, 0 cropped again, 1 failed"),
        "{text}"
    );
    let app = App::open(&DataDir::new(dir.path()), 16 << 20).expect("reopen");
    assert!(state(&app, ids[0])
        .fetched()
        .is_some_and(|f| f.cropped.is_some()));
    assert!(failure_reason(&app, ids[1]).contains("not a JPEG"));
}

/// The test catalogue with the 126610LV's FRONT picture at `path` inside the dataset.
fn dataset_shipping(path: &str) -> tempfile::TempDir {
    let dir = crate::support::test_catalogue_copy();
    let models = std::fs::read_to_string(dir.path().join("models.jsonl")).expect("models");
    let shipped = models.replace(
        "https://cdn.watchcatalogue.example/models/rolex/126610lv/front.jpg",
        path,
    );
    assert_ne!(models, shipped);
    std::fs::write(dir.path().join("models.jsonl"), shipped).expect("write");
    std::fs::create_dir(dir.path().join("pictures")).expect("mkdir");
    let png = encoded(
        &watch_image((500, 400), (250, 200, 150), 255, 6),
        ImageFormat::Png,
    );
    std::fs::write(dir.path().join("pictures/lv.png"), png).expect("png");
    std::fs::write(dir.path().join("pictures/notes.png"), "not a picture").expect("text");
    dir
}

#[test]
fn a_dataset_ships_picture_files_beside_it_and_import_stores_them() {
    let dataset = dataset_shipping("pictures/lv.png");
    let data = tempfile::tempdir().expect("data dir");
    // The app opened below is dropped before the later imports, which wait for its lock.
    let import = |dataset: &std::path::Path| {
        run_when_unlocked(|| {
            let mut command = binary(data.path());
            command.arg("import").arg(dataset);
            command
        })
    };
    import(dataset.path()).unwrap_or_else(|text| panic!("{text}"));
    let (output, text) = crate::cli::run(binary(data.path()).args(["pictures", "fetch"]));
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("1 cropped again"),
        "nothing fetched, the file cropped: {text}"
    );

    let app = App::open(&DataDir::new(data.path()), 16 << 20).expect("reopen");
    let lv = app
        .store()
        .catalogue()
        .all_models()
        .map(|m| m.expect("model"))
        .find(|m| m.reference_number == "126610LV")
        .expect("the 126610LV");
    let record = state(&app, lv.pictures[0].id);
    assert_eq!(record.source_url, "dataset:pictures/lv.png");
    let fetched = record.fetched().expect("stored at import");
    assert_eq!(
        (fetched.width, fetched.height, fetched.format),
        (500, 400, watch_catalogue::domain::ImageFormat::Png)
    );
    assert!(fetched.cropped.is_some());
    drop(app);

    // Each refused path is a problem naming it, and the import writes nothing.
    let before = crate::support::generation(data.path());
    for (path, problem) in [
        (
            "pictures/missing.png",
            "no picture file `pictures/missing.png` in the dataset",
        ),
        ("pictures/notes.png", "not a JPEG"),
        (
            "../lv.png",
            "neither an http(s) URL nor a path inside the dataset",
        ),
        (
            "/etc/passwd",
            "neither an http(s) URL nor a path inside the dataset",
        ),
        (
            "ftp://x.example/a.png",
            "neither an http(s) URL nor a path inside the dataset",
        ),
    ] {
        let bad = dataset_shipping(path);
        let text = match import(bad.path()) {
            Ok((_, text)) => panic!("{path} was imported: {text}"),
            Err(text) => text,
        };
        assert!(
            text.contains("models.jsonl:2: field `pictures`") && text.contains(problem),
            "{path}: {text}"
        );
    }
    assert_eq!(crate::support::generation(data.path()), before);
}

/// A pass takes the candidates of the models waiting for review before the listings'
/// pictures, whatever their ids: a reviewer is not kept waiting behind a provider's stock.
#[tokio::test]
async fn a_pass_fetches_the_candidates_a_reviewer_waits_for_first() {
    use std::sync::Mutex;
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let picture = {
        let d = &drawn()[2];
        encoded(&watch_image(d.size, d.disc, d.background, 10), d.format)
    };
    let remember = asked.clone();
    let router = axum::Router::new().route(
        "/{name}",
        get(
            move |axum::extract::Path(name): axum::extract::Path<String>| {
                let (remember, picture) = (remember.clone(), picture.clone());
                async move {
                    remember.lock().expect("lock").push(name);
                    octets(picture)
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let source = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await });

    let (app, _dir) = empty_app();
    let app = Arc::new(app);
    // The listings' pictures come first in id order...
    let listings: Vec<String> = (0..6)
        .map(|i| format!("http://{source}/listing-{i}.jpg"))
        .collect();
    seed(&app, &listings);
    // ...then a dataset whose candidates wait for review.
    import_candidates(&app, &crate::picture_review::candidates(source));
    pass_with(&app, &one_at_a_time()).await;
    let asked = asked.lock().expect("lock").clone();
    let first_listing = (asked.iter().position(|name| name.starts_with("listing-")))
        .expect("the listings' pictures were fetched too");
    let mut candidates = asked[..first_listing].to_vec();
    candidates.sort();
    assert_eq!(candidates, ["a.jpg", "b.png", "c.jpg"], "{asked:?}");
    assert_eq!(asked.len(), 3 + listings.len(), "each once: {asked:?}");
}
