//! How `serve` holds connections (issue 45), through the binary over raw TCP: a head or a body
//! that stops coming is closed by its timeout, a connection over the cap waits to be accepted,
//! SIGTERM exits within its grace whatever a client holds open, and the statuses hyper answers
//! before the router are pinned. No wait here asserts a speed: each is bounded by a generous
//! deadline, only so that a regression fails instead of hanging.

use crate::support::ServeProcess;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The bound on every wait for the server (the timeouts under test are a second or two).
const DEADLINE: Duration = Duration::from_secs(30);

fn connect(serve: &ServeProcess) -> TcpStream {
    let authority = serve
        .base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("authority");
    let stream = TcpStream::connect(authority).expect("connect");
    stream.set_read_timeout(Some(DEADLINE)).expect("timeout");
    stream
}

/// An answer read off a connection kept alive: its head, and its body by Content-Length.
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }
}

fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = stream.read(&mut byte).expect("read the head");
        let sofar = String::from_utf8_lossy(&head).into_owned();
        assert_eq!(read, 1, "closed in the middle of a head: {sofar:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("a UTF-8 head");
    let status = head
        .get(9..12)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {head:?}"));
    let mut answer = Answer {
        status,
        head,
        body: Vec::new(),
    };
    if status != 100 {
        let length: usize = answer
            .header("content-length")
            .unwrap_or_else(|| panic!("a Content-Length: {:?}", answer.head))
            .parse()
            .expect("a length");
        answer.body = vec![0; length];
        stream.read_exact(&mut answer.body).expect("read the body");
    }
    answer
}

fn get(stream: &mut TcpStream, path: &str) -> Answer {
    write!(stream, "GET {path} HTTP/1.1\r\nHost: catalogue\r\n\r\n").expect("send");
    read_answer(stream)
}

/// Reads until the server closes `stream` (end of stream or reset), at most [`DEADLINE`];
/// what came before the close.
fn until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return received,
            Ok(read) => received.extend_from_slice(&buffer[..read]),
            Err(error)
                if matches!(
                    error.kind(),
                    ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                ) =>
            {
                return received
            }
            Err(error) => panic!("still open after {DEADLINE:?} ({error}): never closed"),
        }
    }
}

/// The head of a POST to the login route whose body is announced but not yet sent: hyper
/// answers `100 Continue` once the handler asks for the body, so the request is then in the
/// handler's hands, reading.
const LOGIN_HEAD: &str = "POST /v1/auth/login HTTP/1.1\r\nHost: catalogue\r\n\
    Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";

fn login_reading_its_body(serve: &ServeProcess) -> TcpStream {
    let mut stream = connect(serve);
    stream.write_all(LOGIN_HEAD.as_bytes()).expect("send");
    assert_eq!(read_answer(&mut stream).status, 100);
    stream
}

#[test]
fn keep_alive_holds_and_a_head_not_sent_in_time_is_closed() {
    let data = tempfile::tempdir().expect("dir");
    // The idle timeout out of the way: what closes here is the header-read timeout.
    let serve = ServeProcess::start_with(
        data.path(),
        &[
            "--header-read-timeout-secs",
            "1",
            "--idle-timeout-secs",
            "600",
        ],
    );

    // Three requests on one connection, each answered in full.
    let mut kept = connect(&serve);
    for path in ["/v1/brands", "/healthz", "/v1/brands/rolex"] {
        let answer = get(&mut kept, path);
        assert_eq!(answer.status, 200, "{path}: {}", answer.head);
        assert_ne!(answer.header("connection"), Some("close"), "{path}");
    }
    // Then left without a next request: closed, as hyper restarts the clock at each answer.
    assert_eq!(until_closed(&mut kept), b"");

    // A head that stops half-way, as the 20 connections of the attack: closed,
    // unanswered.
    let mut partial = connect(&serve);
    partial
        .write_all(b"GET /v1/brands HTTP/1.1\r\nHost: catalogue\r\nAccept: appl")
        .expect("send");
    assert_eq!(until_closed(&mut partial), b"");

    // A connection that never says anything: the same.
    assert_eq!(until_closed(&mut connect(&serve)), b"");

    // The server still answers.
    assert_eq!(get(&mut connect(&serve), "/v1/brands").status, 200);
    serve.stop();
}

#[test]
fn a_body_that_stops_coming_is_closed_by_the_idle_timeout() {
    let data = tempfile::tempdir().expect("dir");
    let serve = ServeProcess::start_with(
        data.path(),
        &[
            "--header-read-timeout-secs",
            "600",
            "--idle-timeout-secs",
            "1",
        ],
    );
    // The head in, the handler waiting for a body that never comes.
    assert_eq!(until_closed(&mut login_reading_its_body(&serve)), b"");
    assert_eq!(get(&mut connect(&serve), "/healthz").status, 200);
    serve.stop();
}

/// hyper answers a request it cannot parse itself, before the router, with an empty body and
/// no JSON envelope (docs/operations.md, "Errors answered before the router"). Pinned here so
/// that a change of hyper, or of how the service meets these, is noticed.
#[test]
fn heads_hyper_refuses_are_answered_400_414_431_with_an_empty_body() {
    let data = tempfile::tempdir().expect("dir");
    let serve = ServeProcess::start(data.path());
    let long_uri = format!("/v1/models?q={}", "a".repeat(70 * 1024));
    let large_header = format!("X-Filler: {}\r\n", "b".repeat(500 * 1024));
    for (case, head, status) in [
        (
            "a malformed request line",
            "GET /v1/brands HTTP/1.1 extra\r\nHost: catalogue\r\n\r\n".to_owned(),
            400,
        ),
        (
            "a malformed header",
            "GET /v1/brands HTTP/1.1\r\nHost catalogue\r\n\r\n".to_owned(),
            400,
        ),
        (
            "a 70 KB URI",
            format!("GET {long_uri} HTTP/1.1\r\nHost: catalogue\r\n\r\n"),
            414,
        ),
        (
            "500 KB of headers",
            format!("GET /v1/brands HTTP/1.1\r\nHost: catalogue\r\n{large_header}\r\n"),
            431,
        ),
    ] {
        let mut stream = connect(&serve);
        // hyper may answer before it has read all of a large head: a write cut short by its
        // close is not the point here.
        let _ = stream.write_all(head.as_bytes());
        let answer = read_answer(&mut stream);
        assert_eq!(answer.status, status, "{case}: {}", answer.head);
        assert_eq!(answer.header("content-length"), Some("0"), "{case}");
        assert!(answer.body.is_empty(), "{case}");
        assert_eq!(until_closed(&mut stream), b"", "{case}: then closed");
    }
    serve.stop();
}

#[test]
fn at_the_connection_cap_the_next_connection_waits_for_one_to_close() {
    let data = tempfile::tempdir().expect("dir");
    let serve = ServeProcess::start_with(
        data.path(),
        &[
            "--max-connections",
            "1",
            "--header-read-timeout-secs",
            "600",
        ],
    );
    // Answered, then kept open: it holds the one slot.
    let mut holder = connect(&serve);
    assert_eq!(get(&mut holder, "/healthz").status, 200);

    let mut next = connect(&serve);
    write!(next, "GET /v1/brands HTTP/1.1\r\nHost: catalogue\r\n\r\n").expect("send");
    // Not accepted while the holder is open: nothing comes back (a slow server would not
    // answer either: this cannot fail for want of speed).
    next.set_read_timeout(Some(Duration::from_secs(1)))
        .expect("timeout");
    let mut byte = [0u8; 1];
    let waited = next.read(&mut byte).expect_err("no answer at the cap");
    assert!(
        matches!(waited.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{waited}"
    );
    drop(holder);
    next.set_read_timeout(Some(DEADLINE)).expect("timeout");
    assert_eq!(read_answer(&mut next).status, 200);
    serve.stop();
}

#[test]
fn sigterm_with_a_partial_head_open_exits_once_the_grace_is_over() {
    let data = tempfile::tempdir().expect("dir");
    let mut serve = ServeProcess::start_with(
        data.path(),
        &[
            "--shutdown-grace-secs",
            "1",
            "--header-read-timeout-secs",
            "600",
        ],
    );
    // A head that stops half-way, the first thing on its connection. (A second request's
    // partial head counts as idle to hyper, and is closed as soon as the shutdown begins.)
    let mut partial = connect(&serve);
    partial
        .write_all(b"GET /v1/brands HTTP/1.1\r\nHost: cata")
        .expect("send");
    // Time for the server to accept the connection and read those bytes (else it is closed
    // at once when the shutdown begins: the exit below holds either way).
    std::thread::sleep(Duration::from_millis(500));
    serve.terminate();
    let closing = serve
        .wait_for_log("shutdown grace over")
        .unwrap_or_else(|| panic!("no end of the grace logged:\n{}", serve.log));
    assert!(closing.contains("closed=1"), "{closing}");
    assert_eq!(until_closed(&mut partial), b"");
    let log = serve.stopped();
    assert!(log.contains("shutting down: no new connections"), "{log}");
}

#[test]
fn sigterm_lets_a_request_in_flight_finish_then_exits() {
    let data = tempfile::tempdir().expect("dir");
    let mut serve = ServeProcess::start_with(data.path(), &["--shutdown-grace-secs", "30"]);
    let address_file = data.path().join("server.addr");
    assert!(address_file.exists());
    let mut in_flight = login_reading_its_body(&serve);
    serve.terminate();
    serve
        .wait_for_log("shutting down: no new connections")
        .unwrap_or_else(|| panic!("no shutdown logged:\n{}", serve.log));
    // The rest of the body, after the shutdown began: the request is still answered (a JSON
    // refusal of `{}`), and the connection then closed.
    in_flight.write_all(b"{}").expect("send the body");
    let answer = read_answer(&mut in_flight);
    assert_eq!(answer.status, 400, "{}", answer.head);
    let body: serde_json::Value = serde_json::from_slice(&answer.body).expect("a JSON error");
    assert_eq!(body["error"], "invalid_request", "{body}");
    assert_eq!(answer.header("connection"), Some("close"));
    assert_eq!(until_closed(&mut in_flight), b"");
    let log = serve.stopped();
    assert!(
        log.contains("every open connection finished within the shutdown grace"),
        "{log}"
    );
    assert!(!address_file.exists(), "server.addr removed");
}
