//! Serving the API: the data dir opened and made ready before the port opens, then the router
//! on [`crate::connections`]' accept loop until SIGINT or SIGTERM, in-flight requests finished
//! within the shutdown grace, a running job stopped at its next chunk boundary and the store
//! flushed before the process ends.

use crate::api::config::ApiConfig;
use crate::app::App;
use crate::connections::ConnectionConfig;
use crate::data_dir::DataDir;
use crate::jobs::doorbell::RungThread;
use crate::jobs::listing_mover;
use crate::jobs::pictures::{run_until_stopped, PictureWorker, WorkerConfig};
use crate::jobs::queue::Jobs;
use crate::jobs::series_folder::SeriesFolder;
use anyhow::Context;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex};
use tokio::sync::watch;

/// Settings of `serve`.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub data_dir: DataDir,
    pub addr: SocketAddr,
    pub cache_bytes: u64,
    pub api: ApiConfig,
    /// The image worker run in the server.
    pub pictures: WorkerConfig,
    /// How connections are held, and how long the shutdown waits for them.
    pub connections: ConnectionConfig,
}

/// Connections the kernel holds for the server to accept.
const LISTEN_BACKLOG: u32 = 1024;

/// A socket bound to `addr`, not yet listening: the address is ours (another server's is
/// refused here, naming it) while nothing is accepted yet.
fn reserve(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpSocket> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    }?;
    // As the standard library's listeners do on Unix: a restart may take the address again
    // while the last run's connections are in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket
        .bind(addr)
        .with_context(|| format!("binding {addr}: is another server listening there?"))?;
    Ok(socket)
}

/// Opens and prepares the data dir, then serves until SIGINT or SIGTERM, finishing in-flight
/// requests (within the shutdown grace) and flushing the store before returning.
pub async fn serve(config: ServeConfig) -> anyhow::Result<()> {
    // The address is taken first, so one in use is said before a new data dir is filled with
    // the fixtures or a store is opened and prepared; it listens only once the service is
    // ready, so a client is refused until then rather than left waiting.
    let socket = reserve(config.addr)?;
    let (app, first_flush) = tokio::task::spawn_blocking({
        let config = config.clone();
        move || -> anyhow::Result<(App, FirstFlush)> {
            crate::jobs::read_pool::prepare();
            let app = App::open_for_serving(&config.data_dir, config.cache_bytes)?;
            let first_flush = FirstFlush::start(&app);
            app.prepare(true)?;
            Ok((app, first_flush))
        }
    })
    .await??;
    let app = Arc::new(app);
    let background = Background::start(&app, &config.pictures, &first_flush)?;
    // Reading the duplicate groups as kept (joining them all when none are), and reading the
    // large models' ACTIVE prices, take long at a million models (docs/decisions.md, D-136,
    // D-95): done now, in the background, rather than by the first admin to open the duplicate
    // models or the first client to ask a model's stats. At a lower priority: on two cores,
    // at equal priority it took a core from the first requests, which then answered in up to
    // three times their time (D-199). All but the read of the kept groups, a fraction of a
    // second that the first `/duplicate-models` waits for whole (D-228).
    tokio::task::spawn_blocking({
        let app = app.clone();
        move || {
            if let Err(error) = app.read_kept_duplicate_groups() {
                tracing::warn!(%error, "reading the duplicate groups as kept at start-up");
            }
            crate::jobs::priority::at_lower_priority("start-up", || {
                if let Err(error) = app.duplicate_groups() {
                    tracing::warn!(%error, "reading the duplicate groups at start-up");
                }
                keep_large_model_prices(&app);
            })
        }
    });
    read_indexes_ahead(&config.data_dir, app.clone());
    let listener = socket
        .listen(LISTEN_BACKLOG)
        .with_context(|| format!("listening on {}", config.addr))?;
    let origin = format!("http://{}", listener.local_addr()?);
    let base = format!("{origin}/v1");
    // Batch commands run on this data dir name this address rather than fail on sled's lock.
    let address_file = config.data_dir.server_address();
    std::fs::write(&address_file, format!("{origin}\n"))
        .with_context(|| format!("writing {}", address_file.display()))?;
    let data_dir = std::fs::canonicalize(config.data_dir.path())
        .unwrap_or_else(|_| config.data_dir.path().to_owned());
    // Listened for before the address is said: a stop sent as soon as it is said is a clean
    // stop, not the default action's end without the last flush.
    let stop = ShutdownSignal::listen();
    tracing::info!(data_dir = %data_dir.display(), %base, "serving the watch catalogue");
    let pages = crate::console::router(app.clone());
    let router = crate::api::router_with_pages(app.clone(), &config.api, pages);
    crate::connections::serve_connections(listener, router, config.connections, {
        let app = app.clone();
        async move {
            stop.received().await;
            // A running job stops at its next chunk boundary while requests finish.
            app.jobs().stop();
        }
    })
    .await;
    background.stop().await;
    let _ = std::fs::remove_file(&address_file);
    // The next start reads the groups as they stand instead of joining them all.
    tokio::task::spawn_blocking({
        let app = app.clone();
        move || app.keep_duplicate_groups()
    })
    .await?;
    app.store().flush()?;
    tracing::info!("stopped; store flushed");
    Ok(())
}

/// Reads both search indexes' files once, in order, on a thread of their own below the
/// requests' priority, as the port opens, so that the OS has them cached: the 1.1 GB of the
/// scale run's indexes take about a second, where the first requests after a cold start read
/// them a page at a time (a first text search of the groups of unmatched listings took
/// 287-381 ms, 144-220 ms with them read ahead, D-232). It gives the disk way to the requests
/// that run meanwhile ([`give_way`], D-239). The store is left to sled: 19 GB there, most of it
/// never read by a request. A folder that is not there reads nothing. The column a first text
/// search over the groups reads at random is read first, before the port opens
/// ([`read_group_column_ahead`]).
fn read_indexes_ahead(data_dir: &DataDir, app: Arc<App>) {
    read_group_column_ahead(&app);
    let folders = [data_dir.index(), data_dir.listings_index()];
    let spawned = std::thread::Builder::new()
        .name("index-read-ahead".to_owned())
        .spawn(move || {
            crate::jobs::priority::lower_this_thread("index read-ahead");
            let started = std::time::Instant::now();
            let busy = || app.requests_in_flight().any();
            let bytes: u64 = folders
                .iter()
                .map(|folder| read_folder(folder, &busy))
                .sum();
            tracing::info!(bytes, took = ?started.elapsed(), "search indexes read ahead");
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "starting the indexes' read-ahead");
    }
}

/// Reads the listings index's column of reconciliation groups before the port opens: a first
/// text search over the groups reads it at random, a disk read a page after a cold start
/// (1,600-2,500 of them for `q=Classic` at the scale run, D-241); read from its files in order,
/// its 15 MB there take 8-17 ms.
fn read_group_column_ahead(app: &App) {
    let started = std::time::Instant::now();
    match app.listings().read_group_column_ahead() {
        Ok(bytes) => tracing::info!(bytes, took = ?started.elapsed(), "group column read ahead"),
        Err(error) => tracing::warn!(%error, "reading the group column ahead"),
    }
}

/// How long the read-ahead waits for the requests running before each of its reads at most:
/// a cold start's first requests then have the disk to themselves, and a steady load still
/// lets it go on (a MiB every 100 ms).
const GIVE_WAY_AT_MOST: std::time::Duration = std::time::Duration::from_millis(100);

/// Waits while `busy` says requests run, for [`GIVE_WAY_AT_MOST`] at most: on a cold start
/// the read-ahead's reads and a first request's share the disk, and a first text search took
/// 124-345 ms beside them, 148-193 ms when the read-ahead waited (D-239).
fn give_way(busy: &dyn Fn() -> bool) {
    let started = std::time::Instant::now();
    while busy() && started.elapsed() < GIVE_WAY_AT_MOST {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Reads every file of `folder` to its end, giving way to requests ([`give_way`] asks `busy`)
/// before each read; the bytes read.
fn read_folder(folder: &std::path::Path, busy: &dyn Fn() -> bool) -> u64 {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return 0;
    };
    let mut buffer = vec![0; 1 << 20];
    let mut bytes = 0;
    // Regular files alone: a link or a device there (never an index's) could be endless.
    let files = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| std::fs::File::open(e.path()).ok());
    for mut file in files {
        loop {
            give_way(busy);
            let Ok(read @ 1..) = std::io::Read::read(&mut file, &mut buffer) else {
                break;
            };
            bytes += read as u64;
        }
    }
    bytes
}

/// What runs beside the requests: the job queue's runner, the series folder, the listing
/// mover and the image worker. Started by `serve` alone (the router starts nothing), stopped and joined before the
/// store's last flush.
struct Background {
    app: Arc<App>,
    series: RungThread,
    mover: RungThread,
    pictures: Option<(watch::Sender<bool>, tokio::task::JoinHandle<()>)>,
}

impl Background {
    /// Marks the jobs a previous process left unfinished interrupted, empties the spool, starts
    /// the job runner, the series folder (which folds what the log holds at once), the listing
    /// mover (which moves what merges left at once), and the image worker when it is enabled.
    /// The last three write on their own, so they begin once
    /// sled's first flush is done (D-219): a write before it waits for its walk, and the
    /// write's index stands behind the store meanwhile, which `/readyz` says.
    fn start(
        app: &Arc<App>,
        pictures: &WorkerConfig,
        first_flush: &FirstFlush,
    ) -> anyhow::Result<Background> {
        Jobs::start(app.job_context()).context("starting the job runner")?;
        // The series folder waits for a job's end, and for the listing mover's: each of the
        // mover's writes logs the keeper, whose fold reads all its listings (D-224, D-231).
        let a_job_runs = {
            let context = app.job_context().clone();
            move || context.queue().is_running() || context.writer().listing_mover().working()
        };
        let series =
            SeriesFolder::start(app.job_context().clone(), first_flush.waiter(), a_job_runs)
                .context("starting the series folder")?;
        let mover = listing_mover::start(app.job_context().clone(), first_flush.waiter())
            .context("starting the listing mover")?;
        let pictures = match pictures.enabled {
            true => {
                let worker = Arc::new(PictureWorker::new(app.media().clone(), pictures)?);
                let (stop, stopped) = watch::channel(false);
                // Its own task: a fetch or crop never holds up a request.
                let context = app.job_context().clone();
                let first_flush = first_flush.waiter();
                let task = tokio::spawn(async move {
                    let _ = tokio::task::spawn_blocking(first_flush).await;
                    run_until_stopped(context, worker, stopped).await
                });
                Some((stop, task))
            }
            false => None,
        };
        Ok(Background {
            app: app.clone(),
            series,
            mover,
            pictures,
        })
    }

    /// Stops the running job at its next chunk boundary, the series folder and the listing
    /// mover at their next commit and the image worker where it stands, and waits for them.
    async fn stop(self) {
        self.app.jobs().stop();
        let (series, mover) = (self.series, self.mover);
        let threads = tokio::task::spawn_blocking(move || {
            series.stop();
            mover.stop();
        });
        if let Err(error) = threads.await {
            tracing::error!(%error, "stopping the series folder and the listing mover");
        }
        if let Some((stop, task)) = self.pictures {
            let _ = stop.send(true);
            if let Err(error) = task.await {
                tracing::error!(%error, "the image worker's task failed");
            }
        }
        self.app.jobs().finished().await;
    }
}

/// Resolves at the first SIGINT or SIGTERM after it is first polled: `serve` then shuts down,
/// and a batch command on a data dir stops its job at the next chunk boundary.
pub async fn shutdown_signal() {
    ShutdownSignal::listen().received().await
}

/// SIGINT and SIGTERM, listened for from [`ShutdownSignal::listen`] on (inside a runtime), so
/// one sent before [`ShutdownSignal::received`] is first polled is not lost.
pub struct ShutdownSignal {
    #[cfg(unix)]
    signals: Vec<tokio::signal::unix::Signal>,
}

impl ShutdownSignal {
    pub fn listen() -> ShutdownSignal {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let signals = [SignalKind::interrupt(), SignalKind::terminate()]
                .into_iter()
                .filter_map(|kind| signal(kind).ok())
                .collect();
            ShutdownSignal { signals }
        }
        #[cfg(not(unix))]
        ShutdownSignal {}
    }

    /// Resolves at the first of them.
    pub async fn received(self) {
        #[cfg(unix)]
        {
            let mut signals = self.signals;
            if signals.is_empty() {
                return std::future::pending().await;
            }
            let waits = signals.iter_mut().map(|s| Box::pin(s.recv()));
            futures_util::future::select_all(waits).await;
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// sled's first flush after an open, which walks every segment of the store (seconds of a core
/// on a large one: D-208, D-219), made on a thread of its own as soon as the store is open, so
/// that it runs beside the rest of the start-up and the first requests. The port opens without
/// waiting for it: readers need nothing of it; the writers `serve` starts wait for it.
struct FirstFlush {
    done: Arc<(Mutex<bool>, Condvar)>,
}

impl FirstFlush {
    fn start(app: &App) -> FirstFlush {
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let store = app.store().clone();
        let flushed = done.clone();
        let spawned = std::thread::Builder::new()
            .name("first-flush".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                match store.flush_once_opened(crate::domain::Timestamp::now()) {
                    Ok(()) => tracing::info!(took = ?started.elapsed(), "store's first flush done"),
                    Err(error) => tracing::warn!(%error, "the store's first flush at start-up"),
                }
                mark_done(&flushed);
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "starting the store's first flush");
            mark_done(&done);
        }
        FirstFlush { done }
    }

    /// Blocks until the first flush is done (or failed): for a writer's thread.
    fn waiter(&self) -> impl FnOnce() + Send + 'static {
        let done = self.done.clone();
        move || {
            let (flag, changed) = &*done;
            let mut flushed = flag.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            while !*flushed {
                flushed = changed
                    .wait(flushed)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        }
    }
}

fn mark_done(done: &(Mutex<bool>, Condvar)) {
    let (flag, changed) = done;
    *flag.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = true;
    changed.notify_all();
}

/// Keeps the ACTIVE prices of the models with many listings, for `GET /listings/stats`.
fn keep_large_model_prices(app: &App) {
    let started = std::time::Instant::now();
    match (app.listings()).keep_large_model_prices(crate::domain::ListingStatus::Active as u64) {
        Ok(runs) => tracing::info!(runs, took = ?started.elapsed(), "large models' prices kept"),
        Err(error) => tracing::warn!(%error, "keeping the large models' prices at start-up"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data_dir::DataDir;

    /// A writer `serve` starts waits for the store's first flush (D-219): by the time its
    /// waiter returns, the open is recorded.
    #[test]
    fn a_writer_begins_after_the_stores_first_flush() {
        let dir = tempfile::tempdir().expect("tempdir");
        let app = App::open(&DataDir::new(dir.path()), 1 << 20).expect("app");
        assert_eq!(app.store().opened_at().expect("read"), None);
        let first_flush = FirstFlush::start(&app);
        (first_flush.waiter())();
        assert!(app.store().opened_at().expect("read").is_some());
    }

    #[test]
    fn the_read_ahead_reads_every_regular_file_of_a_folder_to_its_end_and_nothing_else() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("a"), vec![7u8; 3 << 20 | 5]).expect("a");
        std::fs::write(dir.path().join("b"), b"ten bytes!").expect("b");
        std::fs::create_dir(dir.path().join("c")).expect("c");
        #[cfg(unix)]
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero")).expect("link");
        assert_eq!(read_folder(dir.path(), &|| false), (3 << 20 | 5) + 10);
        assert_eq!(read_folder(&dir.path().join("none"), &|| false), 0);
    }

    /// Before each read it asks whether requests run, and a load that never ends still lets
    /// it read to the end.
    #[test]
    fn the_read_ahead_asks_before_each_read_and_ends_beside_a_steady_load() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("a"), vec![7u8; 2 << 20 | 5]).expect("a");
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let busy = || {
            asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            true
        };
        assert_eq!(read_folder(dir.path(), &busy), 2 << 20 | 5);
        // Three reads of a MiB or less and the one that finds the end, each asked for at least
        // once.
        assert!(asked.into_inner() >= 4);
    }
}
