//! Drives the fixture server with a raw `std::net::TcpStream` client, on 127.0.0.1 only.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::Bytes;
use sitemapd_testsite::{Body, Length, Reply, TestSite, gzip, gzip_zeros};

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn connect(site: &TestSite) -> BufReader<TcpStream> {
    let conn = TcpStream::connect(site.addr()).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    BufReader::new(conn)
}

fn send(conn: &mut BufReader<TcpStream>, method: &str, path: &str, extra: &str) {
    let req = format!("{method} {path} HTTP/1.1\r\nHost: t\r\n{extra}\r\n");
    conn.get_mut().write_all(req.as_bytes()).unwrap();
}

/// GETs `path` and reads until the server resets the connection (it must):
/// everything received before the reset.
fn read_until_reset(site: &TestSite, path: &str) -> Vec<u8> {
    let mut conn = connect(site);
    send(&mut conn, "GET", path, "");
    let mut all = Vec::new();
    let err = conn.read_to_end(&mut all).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionReset);
    all
}

/// Reads one response, framed the way its headers say.
fn read_response(conn: &mut BufReader<TcpStream>, head_only: bool) -> Response {
    let mut line = String::new();
    conn.read_line(&mut line).unwrap();
    let status = line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        conn.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').unwrap();
        headers.push((n.to_owned(), v.trim().to_owned()));
    }
    let mut resp = Response {
        status,
        headers,
        body: Vec::new(),
    };
    if head_only {
        return resp;
    }
    if resp.header("transfer-encoding") == Some("chunked") {
        loop {
            line.clear();
            conn.read_line(&mut line).unwrap();
            let size = usize::from_str_radix(line.trim_end(), 16).unwrap();
            let mut chunk = vec![0; size + 2];
            conn.read_exact(&mut chunk).unwrap();
            assert_eq!(&chunk[size..], b"\r\n");
            if size == 0 {
                break;
            }
            resp.body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(n) = resp.header("content-length") {
        resp.body = vec![0; n.parse().unwrap()];
        conn.read_exact(&mut resp.body).unwrap();
    } else {
        conn.read_to_end(&mut resp.body).unwrap();
    }
    resp
}

fn get(site: &TestSite, path: &str) -> Response {
    let mut conn = connect(site);
    send(&mut conn, "GET", path, "");
    read_response(&mut conn, false)
}

/// Everything the server sends on a fresh connection for one `Connection: close` request.
fn raw(site: &TestSite, path: &str) -> Vec<u8> {
    let mut conn = connect(site);
    send(&mut conn, "GET", path, "Connection: close\r\n");
    let mut all = Vec::new();
    conn.read_to_end(&mut all).unwrap();
    all
}

#[test]
fn ok_with_body_and_content_length() {
    let site = TestSite::start();
    site.route(
        "/robots.txt",
        Reply::ok("User-agent: *\n").header("X-Extra", "1"),
    );
    let resp = get(&site, "/robots.txt");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-length"), Some("14"));
    assert_eq!(resp.header("x-extra"), Some("1"));
    assert_eq!(resp.body, b"User-agent: *\n");
    assert!(site.url("/a").starts_with("http://127.0.0.1:"));
    assert_eq!(
        site.url("/a"),
        format!("http://127.0.0.1:{}/a", site.port())
    );
    assert!(site.addr().ip().is_loopback());
}

#[test]
fn keep_alive_serves_two_requests_on_one_connection() {
    let site = TestSite::start();
    site.route("/a", Reply::ok("first"));
    site.route("/b", Reply::ok(vec![7u8; 100_000]));
    let mut conn = connect(&site);
    send(&mut conn, "GET", "/a", "");
    assert_eq!(read_response(&mut conn, false).body, b"first");
    send(&mut conn, "GET", "/b", "");
    let resp = read_response(&mut conn, false);
    assert_eq!(resp.body.len(), 100_000);
    assert!(resp.header("connection").is_none());
    // HEAD: headers only, and the connection goes on.
    send(&mut conn, "HEAD", "/b", "");
    let head = read_response(&mut conn, true);
    assert_eq!(head.header("content-length"), Some("100000"));
    // A request body is ignored but consumed.
    send(&mut conn, "POST", "/a", "Content-Length: 5\r\n");
    conn.get_mut().write_all(b"hello").unwrap();
    assert_eq!(read_response(&mut conn, false).body, b"first");
    send(&mut conn, "GET", "/a", "Connection: close\r\n");
    let last = read_response(&mut conn, false);
    assert_eq!(last.header("connection"), Some("close"));
    let mut rest = Vec::new();
    assert_eq!(conn.read_to_end(&mut rest).unwrap(), 0, "closed after");
    assert_eq!(site.connections(), 1);
    assert_eq!(site.hits("/a"), 3);
    assert_eq!(site.hits("/b"), 2);
}

#[test]
fn route_seq_serves_in_order_and_repeats_the_last() {
    let site = TestSite::start();
    let replies = vec![Reply::status(503), Reply::status(429), Reply::ok("up")];
    site.route_seq("/s", replies);
    let got: Vec<u16> = (0..5).map(|_| get(&site, "/s").status).collect();
    assert_eq!(got, [503, 429, 200, 200, 200]);
    // Replacing the route starts it over.
    site.route_seq("/s", vec![Reply::status(500), Reply::status(410)]);
    assert_eq!(get(&site, "/s").status, 500);
    assert_eq!(get(&site, "/s").status, 410);
    assert_eq!(site.hits("/s"), 7);
}

#[test]
fn route_fn_sees_the_request_and_hit_numbers() {
    let site = TestSite::start();
    site.route_fn("/f?x=1", |req, n| {
        Reply::ok(format!("{n} {}", req.header("X-Who").unwrap_or("-")))
    });
    let mut conn = connect(&site);
    for expected in ["0 me", "1 me", "2 me"] {
        send(&mut conn, "GET", "/f?x=1", "x-WHO: me\r\n");
        assert_eq!(read_response(&mut conn, false).body, expected.as_bytes());
    }
    assert_eq!(
        get(&site, "/f").status,
        404,
        "the query string is part of the route"
    );
}

#[test]
fn unknown_paths_get_404_with_an_empty_body() {
    let site = TestSite::start();
    let resp = get(&site, "/nothing");
    assert_eq!(resp.status, 404);
    assert_eq!(resp.header("content-length"), Some("0"));
    assert!(resp.body.is_empty());
    site.route("/r", Reply::redirect(301, "/new"));
    let raw = String::from_utf8(raw(&site, "/r")).unwrap();
    assert!(
        raw.starts_with("HTTP/1.1 301 Moved Permanently\r\n"),
        "{raw}"
    );
    assert!(raw.contains("\r\nLocation: /new\r\n"), "{raw}");
    site.route("/teapot", Reply::status(418));
    assert!(raw_text(&site, "/teapot").starts_with("HTTP/1.1 418 Status\r\n"));
}

fn raw_text(site: &TestSite, path: &str) -> String {
    String::from_utf8(raw(site, path)).unwrap()
}

#[test]
fn chunked_encoding_on_the_wire() {
    let site = TestSite::start();
    let body = Body::Repeat {
        chunk: Bytes::from_static(b"ab"),
        count: Some(3),
    };
    site.route("/rep", Reply::ok("").body(body).length(Length::Chunked));
    let text = raw_text(&site, "/rep");
    assert!(
        text.contains("\r\ntransfer-encoding: chunked\r\n"),
        "{text}"
    );
    assert!(!text.contains("content-length"), "{text}");
    assert!(
        text.ends_with("\r\n\r\n2\r\nab\r\n2\r\nab\r\n2\r\nab\r\n0\r\n\r\n"),
        "{text}"
    );

    let big = vec![b'z'; 40_000];
    site.route("/bytes", Reply::ok(big.clone()).length(Length::Chunked));
    site.route("/empty", Reply::ok("").length(Length::Chunked));
    let mut conn = connect(&site);
    send(&mut conn, "GET", "/bytes", "");
    assert_eq!(read_response(&mut conn, false).body, big);
    send(&mut conn, "GET", "/empty", "");
    assert!(read_response(&mut conn, false).body.is_empty());
    assert_eq!(site.connections(), 2, "chunked keeps the connection alive");
}

#[test]
fn length_lie_and_none() {
    let site = TestSite::start();
    site.route("/lie", Reply::ok("short").length(Length::Lie(1000)));
    let text = raw_text(&site, "/lie");
    assert!(text.contains("\r\ncontent-length: 1000\r\n"), "{text}");
    assert!(
        text.ends_with("\r\n\r\nshort"),
        "closed after the short body: {text}"
    );

    site.route("/none", Reply::ok("until close").length(Length::None));
    let mut conn = connect(&site);
    send(&mut conn, "GET", "/none", "");
    let resp = read_response(&mut conn, false);
    assert_eq!(resp.header("connection"), Some("close"));
    assert!(resp.header("content-length").is_none());
    assert_eq!(resp.body, b"until close");
}

#[test]
fn drip_paces_its_chunks() {
    let site = TestSite::start();
    let drip = Body::Drip {
        chunk: Bytes::from_static(b"x"),
        every: Duration::from_millis(100),
        count: Some(2),
    };
    site.route("/drip", Reply::ok("").body(drip));
    let started = Instant::now();
    let resp = get(&site, "/drip");
    assert!(started.elapsed() >= Duration::from_millis(100));
    assert_eq!(resp.header("content-length"), Some("2"));
    assert_eq!(resp.body, b"xx");
}

#[test]
fn endless_bodies_end_when_the_client_leaves() {
    let site = TestSite::start();
    let endless = Body::Repeat {
        chunk: Bytes::from_static(b"0123456789"),
        count: None,
    };
    site.route("/endless", Reply::ok("").body(endless));
    let drip = Body::Drip {
        chunk: Bytes::from_static(b"."),
        every: Duration::from_millis(1),
        count: None,
    };
    site.route("/drip", Reply::ok("").body(drip).length(Length::Chunked));
    for path in ["/endless", "/drip"] {
        let mut conn = connect(&site);
        send(&mut conn, "GET", path, "");
        let mut buf = vec![0; 2_000_000];
        let want = if path == "/drip" { 200 } else { buf.len() };
        conn.read_exact(&mut buf[..want]).unwrap();
    }
    // The server is fine afterwards.
    assert_eq!(get(&site, "/other").status, 404);
}

#[test]
fn reset_after_resets_mid_body() {
    let site = TestSite::start();
    let body = Body::ResetAfter(Bytes::from_static(b"partial"));
    site.route("/reset", Reply::ok("").body(body));
    let all = read_until_reset(&site, "/reset");
    let text = String::from_utf8_lossy(&all);
    assert!(text.contains("\r\ncontent-length: 8\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\npartial"), "{text}");

    let chunked = Reply::ok("").body(Body::ResetAfter(Bytes::from_static(b"abc")));
    site.route("/reset-chunked", chunked.length(Length::Chunked));
    let all = read_until_reset(&site, "/reset-chunked");
    assert!(all.ends_with(b"\r\n\r\n3\r\nabc\r\n"), "no last chunk");
}

#[test]
fn chain_streams_its_parts_in_order() {
    let site = TestSite::start();
    let chain = || {
        Body::Chain(vec![
            Body::Bytes(Bytes::from_static(b"<a>")),
            Body::Repeat {
                chunk: Bytes::from_static(b"xy"),
                count: Some(3),
            },
            Body::Chain(vec![Body::Bytes(Bytes::from_static(b"</a>"))]),
        ])
    };
    site.route("/exact", Reply::ok("").body(chain()));
    let resp = get(&site, "/exact");
    assert_eq!(resp.header("content-length"), Some("13"));
    assert_eq!(resp.body, b"<a>xyxyxy</a>");
    site.route(
        "/chunked",
        Reply::ok("").body(chain()).length(Length::Chunked),
    );
    assert_eq!(get(&site, "/chunked").body, b"<a>xyxyxy</a>");

    // A part without an end: no length, and what follows it is never sent.
    let endless = Body::Chain(vec![
        Body::Bytes(Bytes::from_static(b"head ")),
        Body::Repeat {
            chunk: Bytes::from_static(b"."),
            count: None,
        },
        Body::Bytes(Bytes::from_static(b"never")),
    ]);
    site.route("/endless", Reply::ok("").body(endless));
    let mut conn = connect(&site);
    send(&mut conn, "GET", "/endless", "");
    let mut buf = vec![0; 300_000];
    conn.read_exact(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf);
    assert!(
        text.contains("\r\nconnection: close\r\n\r\nhead ...."),
        "{text:.200}"
    );
    assert!(!text.contains("content-length"));

    // A reset part ends the reply mid-body.
    let reset = Body::Chain(vec![
        Body::Bytes(Bytes::from_static(b"ab")),
        Body::ResetAfter(Bytes::from_static(b"cd")),
        Body::Bytes(Bytes::from_static(b"never")),
    ]);
    site.route("/reset", Reply::ok("").body(reset));
    let all = read_until_reset(&site, "/reset");
    let text = String::from_utf8_lossy(&all);
    assert!(text.contains("\r\ncontent-length: 5\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\nabcd"), "{text}");
}

#[test]
fn raw_replies_carry_their_own_head() {
    let site = TestSite::start();
    let bytes = Bytes::from_static(b"HTTP/1.1 200 OK\r\nX-A: 1\r\n");
    site.route(
        "/raw",
        Reply::status(404)
            .header("X-Ignored", "1")
            .body(Body::Bytes(bytes))
            .length(Length::Raw),
    );
    assert_eq!(raw_text(&site, "/raw"), "HTTP/1.1 200 OK\r\nX-A: 1\r\n");

    // A head that never ends: header lines, forever.
    let endless = Body::Chain(vec![
        Body::Bytes(Bytes::from_static(b"HTTP/1.1 200 OK\r\n")),
        Body::Repeat {
            chunk: Bytes::from_static(b"X-Junk: 0123456789\r\n"),
            count: None,
        },
    ]);
    site.route(
        "/endless-head",
        Reply::ok("").body(endless).length(Length::Raw),
    );
    let mut conn = connect(&site);
    send(&mut conn, "GET", "/endless-head", "");
    let mut buf = vec![0; 1_000_000];
    conn.read_exact(&mut buf).unwrap();
    assert!(buf.starts_with(b"HTTP/1.1 200 OK\r\nX-Junk: 0123456789\r\nX-Junk"));
    assert!(
        !buf.windows(4).any(|w| w == b"\r\n\r\n"),
        "the head never ends"
    );
    assert_eq!(get(&site, "/other").status, 404);
}

#[test]
fn drop_stops_the_server_with_connections_still_open() {
    let site = TestSite::start();
    let stall = Body::Drip {
        chunk: Bytes::new(),
        every: Duration::from_secs(1),
        count: None,
    };
    site.route("/stall", Reply::ok("").body(stall));
    let mut stalled = connect(&site);
    send(&mut stalled, "GET", "/stall", "");
    assert_eq!(read_response(&mut stalled, true).status, 200);
    let mut idle = connect(&site);
    send(&mut idle, "GET", "/", "");
    read_response(&mut idle, false);
    while site.connections() < 2 {
        std::thread::yield_now();
    }
    let started = Instant::now();
    drop(site);
    // A server that waited for its connections would wait for ever (the
    // stall never ends): 10 s is far from both.
    assert!(started.elapsed() < Duration::from_secs(10));
    let mut rest = Vec::new();
    assert!(matches!(stalled.read_to_end(&mut rest), Ok(0) | Err(_)));
    assert!(matches!(idle.read_to_end(&mut rest), Ok(0) | Err(_)));
}

#[test]
fn requests_hits_and_connections_are_counted() {
    let site = TestSite::start();
    site.route("/a", Reply::ok("a"));
    assert_eq!((site.connections(), site.requests().len()), (0, 0));
    get(&site, "/a");
    get(&site, "/b?q");
    let mut conn = connect(&site);
    send(&mut conn, "GET", "/a", "X-Mixed-Case: Value\r\n");
    read_response(&mut conn, false);
    let reqs = site.requests();
    let paths: Vec<&str> = reqs.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/a", "/b?q", "/a"]);
    assert!(reqs.iter().all(|r| r.method == "GET"));
    assert!(reqs[0].at <= reqs[1].at && reqs[1].at <= reqs[2].at);
    assert_eq!(reqs[2].header("x-mixed-case"), Some("Value"));
    assert_eq!(reqs[2].header("X-MIXED-CASE"), Some("Value"));
    assert!(reqs[2].headers.iter().any(|(n, _)| n == "x-mixed-case"));
    assert_eq!(reqs[2].header("absent"), None);
    assert_eq!(
        (site.hits("/a"), site.hits("/b?q"), site.hits("/b")),
        (2, 1, 0)
    );
    assert_eq!(site.connections(), 3);
}

#[test]
fn hostile_requests_do_not_break_the_server() {
    let site = TestSite::start();
    let mut conn = connect(&site);
    let mut huge = b"GET / HTTP/1.1\r\nX: ".to_vec();
    huge.resize(70 * 1024, b'a');
    conn.get_mut().write_all(&huge).unwrap();
    assert_eq!(read_response(&mut conn, true).status, 431);
    let mut conn = connect(&site);
    conn.get_mut().write_all(b"garbage\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut conn, true).status, 400);
    // Hang up mid-head.
    connect(&site).get_mut().write_all(b"GET /x HT").unwrap();
    assert_eq!(get(&site, "/").status, 404);
}

#[test]
fn many_concurrent_connections() {
    let site = TestSite::start();
    site.route("/", Reply::ok(vec![1u8; 50_000]));
    std::thread::scope(|s| {
        for _ in 0..32 {
            s.spawn(|| {
                let mut conn = connect(&site);
                for _ in 0..10 {
                    send(&mut conn, "GET", "/", "");
                    assert_eq!(read_response(&mut conn, false).body.len(), 50_000);
                }
            });
        }
    });
    assert_eq!((site.connections(), site.hits("/")), (32, 320));
}

#[tokio::test]
async fn works_inside_a_tokio_test_and_drop_stops_it() {
    let site = TestSite::start();
    site.route("/", Reply::ok("hi"));
    site.route("/only-here", Reply::ok("this site"));
    let addr = site.addr();
    assert_eq!(get(&site, "/").body, b"hi");
    drop(site);
    // The listener is closed: the connection is refused. The port is free
    // again, though, and another test's server may have taken it: then the
    // connection succeeds, but not to this site (it does not know
    // /only-here).
    if let Ok(conn) = TcpStream::connect(addr) {
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut conn = BufReader::new(conn);
        let mut answer = Vec::new();
        if conn
            .get_mut()
            .write_all(b"GET /only-here HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .is_ok()
        {
            let _ = conn.read_to_end(&mut answer);
        }
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            !answer.contains("this site"),
            "the listener is open: {answer}"
        );
    }
}

#[test]
fn gzip_helpers_round_trip() {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&gzip(b"hello")[..])
        .read_to_end(&mut out)
        .unwrap();
    assert_eq!(out, b"hello");
    let size = 10 * 1024 * 1024 + 3;
    let bomb = gzip_zeros(size);
    assert!(bomb.len() < 20_000, "{} bytes", bomb.len());
    let mut decoded = flate2::read::GzDecoder::new(&bomb[..]);
    let mut total = 0u64;
    let mut buf = vec![0; 1 << 16];
    loop {
        let n = decoded.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        assert!(buf[..n].iter().all(|&b| b == 0));
        total += n as u64;
    }
    assert_eq!(total, size);
}
