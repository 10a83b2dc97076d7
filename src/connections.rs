//! The accept loop of `serve`: hyper's HTTP/1.1 on each connection, which axum::serve runs with
//! no timer, no cap and a shutdown that waits for every client. Here:
//!
//! - a **header-read timeout** (hyper's, given tokio's timer): a request head not in within it
//!   closes the connection, unanswered. hyper 1.12 starts that clock when a connection opens
//!   and again when it goes idle after an answer, so it also bounds a keep-alive connection
//!   waiting for its next request;
//! - an **idle timeout** (ours): the connection is closed when the server has waited that long
//!   on the client without a byte moving either way: a body that stops coming, an answer the
//!   client stops reading. A handler at work is not waiting on the client, unless it is
//!   waiting for the request body;
//! - a **cap** on open connections: at the cap the loop accepts nothing more until one closes
//!   (the kernel's listen backlog holds the next ones meanwhile);
//! - a **bounded graceful shutdown**: the listener is closed, idle connections are closed,
//!   requests in flight finish (their connections are closed after them), and what is still
//!   open when the grace is over is closed.
//!
//! Requests reach the router with the client's address as `ConnectInfo<SocketAddr>`, as
//! `into_make_service_with_connect_info` gives it.

use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::response::Response;
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tower::ServiceExt;

/// How `serve` holds its connections: what a client may leave unfinished, how many may be
/// open, and how long a shutdown waits for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionConfig {
    /// A request's head (request line and headers) must be in within this long of the
    /// connection opening or of the previous answer; else the connection is closed,
    /// unanswered. With hyper 1.12 this is also how long a keep-alive connection may wait
    /// for its next request.
    pub header_read_timeout: Duration,
    /// A connection on which the server waits this long on the client (for the rest of a
    /// body, for it to read the answer) without a byte moving is closed. A handler at work
    /// is not waiting on the client.
    pub idle_timeout: Duration,
    /// Connections open at once; the next is accepted when one closes.
    pub max_connections: usize,
    /// On SIGINT or SIGTERM, how long open connections have to finish their requests before
    /// they are closed.
    pub shutdown_grace: Duration,
}

/// Default header-read timeout, in seconds (hyper's own default, once it has a timer).
pub const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 30;
/// Default idle timeout, in seconds.
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 60;
/// Default cap on open connections: each is a file descriptor, and 512 leaves room for the
/// store's and indexes' files under the common soft limit of 1024.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default shutdown grace, in seconds.
pub const DEFAULT_SHUTDOWN_GRACE_SECS: u64 = 30;

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            header_read_timeout: Duration::from_secs(DEFAULT_HEADER_READ_TIMEOUT_SECS),
            idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            shutdown_grace: Duration::from_secs(DEFAULT_SHUTDOWN_GRACE_SECS),
        }
    }
}

/// How long the loop pauses after an accept error that is not one connection's (too many open
/// files, say), as axum::serve does.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_secs(1);

/// How long the connections closed at the end of the grace have to be dropped.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Where the server is in its life; each connection follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Serving,
    /// No new connections; each open one ends after its request in flight.
    Draining,
    /// The grace is over: every connection still open is closed.
    Closing,
}

/// Serves `router` on `listener` until `shutdown` completes, then shuts down within
/// `config.shutdown_grace`. Returns how many connections were closed at the end of the grace.
pub async fn serve_connections(
    listener: TcpListener,
    router: Router,
    config: ConnectionConfig,
    shutdown: impl Future<Output = ()>,
) -> usize {
    // A semaphore's permits count in u32 when taken all at once.
    let max = config.max_connections.clamp(1, u32::MAX as usize);
    let slots = Arc::new(Semaphore::new(max));
    let (phase, following) = watch::channel(Phase::Serving);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout)
        .keep_alive(true);
    let mut shutdown = pin!(shutdown);
    loop {
        // At the cap, wait for a connection to close before accepting another.
        let slot = tokio::select! {
            biased;
            () = &mut shutdown => break,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break, // never closed
            },
        };
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, remote) = match accepted {
            Ok(accepted) => accepted,
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                tracing::error!(%error, "accepting a connection");
                tokio::select! {
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(ACCEPT_ERROR_PAUSE) => continue,
                }
            }
        };
        let connection = Connection {
            http: http.clone(),
            router: router.clone(),
            idle_timeout: config.idle_timeout,
            phase: following.clone(),
            _slot: slot,
        };
        tokio::spawn(connection.serve(stream, remote));
    }
    drop(listener);
    let all = max as u32;
    let open = max - slots.available_permits();
    // Told before it is logged: what follows the log line (a test's next bytes) finds every
    // connection draining already.
    let _ = phase.send(Phase::Draining);
    tracing::info!(
        open,
        grace = ?config.shutdown_grace,
        "shutting down: no new connections; the open ones finish their requests in flight"
    );
    let started = Instant::now();
    if tokio::time::timeout(config.shutdown_grace, slots.acquire_many(all))
        .await
        .is_ok()
    {
        tracing::info!(took = ?started.elapsed(), closed = 0, "every open connection finished within the shutdown grace");
        return 0;
    }
    let closed = max - slots.available_permits();
    let _ = phase.send(Phase::Closing);
    // Each connection drops at once; this only waits for their tasks to see it.
    let _ = tokio::time::timeout(CLOSE_WAIT, slots.acquire_many(all)).await;
    tracing::info!(
        closed,
        grace = ?config.shutdown_grace,
        "shutdown grace over: the connections still open are closed"
    );
    closed
}

/// An accept error that is one client's, not the listener's.
fn is_connection_error(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// One accepted connection, holding its slot until it ends.
struct Connection {
    http: hyper::server::conn::http1::Builder,
    router: Router,
    idle_timeout: Duration,
    phase: watch::Receiver<Phase>,
    _slot: OwnedSemaphorePermit,
}

impl Connection {
    async fn serve(self, stream: TcpStream, remote: SocketAddr) {
        let activity = Arc::new(Activity::new());
        let io = TokioIo::new(Watched {
            stream,
            activity: activity.clone(),
        });
        let service = Service {
            router: self.router,
            remote,
            activity: activity.clone(),
        };
        let mut conn = pin!(self.http.serve_connection(io, service));
        let mut draining = pin!(reached(self.phase.clone(), Phase::Draining));
        let mut closing = pin!(reached(self.phase, Phase::Closing));
        let mut drained = false;
        let idle = self.idle_timeout;
        let check = tokio::time::sleep(idle);
        let mut check = pin!(check);
        loop {
            // The server's phase first: a request whose bytes arrive once the drain has begun
            // is answered with `Connection: close`, however late this task is woken.
            tokio::select! {
                biased;
                () = &mut draining, if !drained => {
                    drained = true;
                    conn.as_mut().graceful_shutdown();
                }
                // Dropping the connection closes it.
                () = &mut closing => return,
                served = conn.as_mut() => {
                    if let Err(error) = served {
                        tracing::debug!(%remote, %error, "connection ended");
                    }
                    return;
                }
                () = &mut check => match activity.idle_deadline(idle) {
                    Some(deadline) if deadline <= Instant::now() => {
                        tracing::debug!(%remote, ?idle, "closing a connection idle too long");
                        return;
                    }
                    Some(deadline) => check.as_mut().reset(deadline),
                    // A handler at work: look again later.
                    None => check.as_mut().reset(Instant::now() + idle),
                },
            }
        }
    }
}

/// Completes once the server reaches `phase` (or is gone).
async fn reached(mut following: watch::Receiver<Phase>, phase: Phase) {
    let _ = following.wait_for(|now| *now >= phase).await;
}

/// What a connection's idle timeout looks at: when a byte last moved (or a handler last
/// started or ended, or began waiting for the body), and whether the server is waiting on
/// the client.
#[derive(Debug)]
struct Activity {
    origin: Instant,
    /// Milliseconds from `origin` to the last activity.
    last: AtomicU64,
    /// Requests whose handler is at work (their response not yet given to hyper).
    handlers: AtomicUsize,
    /// Request bodies their handler is waiting for.
    body_waits: AtomicUsize,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            origin: Instant::now(),
            last: AtomicU64::new(0),
            handlers: AtomicUsize::new(0),
            body_waits: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let millis = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(millis, Ordering::Relaxed);
    }

    /// When the connection becomes idle too long, if the server is waiting on the client:
    /// no handler at work, or one waiting for the request body.
    fn idle_deadline(&self, idle: Duration) -> Option<Instant> {
        let waiting_on_client = self.handlers.load(Ordering::Relaxed) == 0
            || self.body_waits.load(Ordering::Relaxed) > 0;
        waiting_on_client
            .then(|| self.origin + Duration::from_millis(self.last.load(Ordering::Relaxed)) + idle)
    }
}

/// The TCP stream, each byte read or written counted as activity.
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        read
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The router as hyper calls it on one connection: the client's address added to each
/// request, and its handler's work and body waits counted.
#[derive(Clone)]
struct Service {
    router: Router,
    remote: SocketAddr,
    activity: Arc<Activity>,
}

impl hyper::service::Service<hyper::Request<Incoming>> for Service {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        let activity = self.activity.clone();
        let mut request = request.map(|body| {
            Body::new(WatchedBody {
                body,
                activity: activity.clone(),
                waiting: false,
            })
        });
        request.extensions_mut().insert(ConnectInfo(self.remote));
        let at_work = AtWork::new(activity);
        let router = self.router.clone();
        Box::pin(async move {
            let response = router.oneshot(request).await;
            drop(at_work);
            response
        })
    }
}

/// A handler at work, from its request to its response (or its future dropped).
struct AtWork(Arc<Activity>);

impl AtWork {
    fn new(activity: Arc<Activity>) -> AtWork {
        activity.handlers.fetch_add(1, Ordering::Relaxed);
        activity.touch();
        AtWork(activity)
    }
}

impl Drop for AtWork {
    fn drop(&mut self) {
        // The answer is about to be written: the client's wait starts now.
        self.0.touch();
        self.0.handlers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A request body; while its handler waits for the next bytes, the server waits on the client.
struct WatchedBody {
    body: Incoming,
    activity: Arc<Activity>,
    waiting: bool,
}

impl WatchedBody {
    fn set_waiting(&mut self, waiting: bool) {
        if waiting == self.waiting {
            return;
        }
        self.waiting = waiting;
        if waiting {
            self.activity.body_waits.fetch_add(1, Ordering::Relaxed);
            // The handler may have worked a while before asking: the wait starts now.
            self.activity.touch();
        } else {
            self.activity.body_waits.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl hyper::body::Body for WatchedBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        self.set_waiting(frame.is_pending());
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for WatchedBody {
    fn drop(&mut self) {
        self.set_waiting(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::{get, post};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// More than loopback's socket buffers hold, so a client that does not read stalls it.
    const LARGE: usize = 64 << 20;

    /// A router with a handler slower than the idle timeout, one that reads its body, one
    /// with a large answer, and one that answers with the client's address.
    async fn serving(idle: Duration) -> SocketAddr {
        let router = Router::new()
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_millis(2500)).await;
                    "done"
                }),
            )
            .route("/echo", post(|body: String| async move { body }))
            .route("/large", get(|| async { vec![b'x'; LARGE] }))
            .route(
                "/peer",
                get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.to_string() }),
            );
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let config = ConnectionConfig {
            idle_timeout: idle,
            ..ConnectionConfig::default()
        };
        tokio::spawn(serve_connections(
            listener,
            router,
            config,
            std::future::pending(),
        ));
        addr
    }

    /// Everything until the server closes the connection (30 s at most).
    async fn until_closed(stream: &mut TcpStream) -> String {
        let mut text = Vec::new();
        tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut text))
            .await
            .expect("closed within 30 s")
            .expect("read");
        String::from_utf8(text).expect("UTF-8")
    }

    #[tokio::test]
    async fn the_idle_timeout_spares_a_handler_at_work_and_closes_a_stalled_body() {
        let addr = serving(Duration::from_secs(1)).await;

        let mut slow = TcpStream::connect(addr).await.expect("connect");
        slow.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("send");
        let answer = until_closed(&mut slow).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("done"), "{answer}");

        let mut stalled = TcpStream::connect(addr).await.expect("connect");
        stalled
            .write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
            .await
            .expect("send");
        assert_eq!(until_closed(&mut stalled).await, "");

        let mut peer = TcpStream::connect(addr).await.expect("connect");
        let local = peer.local_addr().expect("local");
        peer.write_all(b"GET /peer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("send");
        let answer = until_closed(&mut peer).await;
        assert!(answer.ends_with(&local.to_string()), "{answer}");
    }

    #[tokio::test]
    async fn an_answer_the_client_stops_reading_is_cut_by_the_idle_timeout() {
        let idle = Duration::from_secs(1);
        let addr = serving(idle).await;
        let mut reader = TcpStream::connect(addr).await.expect("connect");
        reader
            .write_all(b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("send");
        // Not reading, for longer than the idle timeout: the server's writes stall meanwhile.
        tokio::time::sleep(3 * idle).await;
        let mut received = 0;
        let mut buffer = vec![0u8; 1 << 16];
        let read_all = async {
            loop {
                match reader.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => received += read,
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(30), read_all)
            .await
            .expect("closed within 30 s");
        assert!(received < LARGE, "cut short: {received} bytes");
    }

    #[test]
    fn a_connection_waits_on_its_client_unless_a_handler_is_at_work() {
        let activity = Arc::new(Activity::new());
        let idle = Duration::from_secs(5);
        assert!(activity.idle_deadline(idle).is_some(), "between requests");
        let at_work = AtWork::new(activity.clone());
        assert_eq!(activity.idle_deadline(idle), None, "a handler at work");
        activity.body_waits.fetch_add(1, Ordering::Relaxed);
        assert!(activity.idle_deadline(idle).is_some(), "waiting for a body");
        activity.body_waits.fetch_sub(1, Ordering::Relaxed);
        drop(at_work);
        assert!(activity.idle_deadline(idle).is_some(), "answered");
    }
}
