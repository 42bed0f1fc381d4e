//! Shutdown as docs/daemon.md says it: after SIGINT or SIGTERM
//! the daemon hands out no lease (a lease request in flight answers 503 or
//! is closed unread), takes no new connection (so a health check fails),
//! and exits 0.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::daemon::{Daemon, TOKEN};

/// A request whose head (and for a POST, all but its body) is sent now,
/// the rest later: in flight across the signal.
struct Held {
    stream: TcpStream,
    rest: &'static [u8],
}

impl Held {
    /// On a connection the daemon has accepted and answered once (so the
    /// signal cannot come before the accept), sends `head`.
    fn send(addr: std::net::SocketAddr, head: String, rest: &'static [u8]) -> Held {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let warm = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        stream.write_all(warm.as_bytes()).unwrap();
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        while !seen.ends_with(b"\r\n\r\nok\n") {
            assert_eq!(stream.read(&mut byte).unwrap(), 1, "{seen:?}");
            seen.push(byte[0]);
        }
        stream.write_all(head.as_bytes()).unwrap();
        Held { stream, rest }
    }

    /// Sends the rest and reads the answer: status line and body (empty
    /// when the daemon closed the connection instead).
    fn finish(mut self) -> String {
        let mut answer = String::new();
        if self.stream.write_all(self.rest).is_ok() {
            let _ = self.stream.read_to_string(&mut answer);
        }
        answer
    }
}

fn stopping_refuses_in_flight_requests(signal: i32) {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&dir.path().join("store"), &[]);
    let host = d.addr.to_string();
    let lease = Held::send(
        d.addr,
        format!(
            "POST /v1/lease HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
        ),
        b"{}",
    );
    unsafe { libc::kill(d.child.id() as i32, signal) };
    let start = Instant::now();
    while !d.log().contains("signal received: stopping") {
        assert!(start.elapsed() < Duration::from_secs(10), "{}", d.log());
        std::thread::sleep(Duration::from_millis(10));
    }
    // No lease after the signal: the request in flight answers 503, or its
    // connection is closed before it was read (which of the two depends on
    // whether the server had read its head when the signal came).
    let leased = lease.finish();
    assert!(
        leased.is_empty()
            || (leased.starts_with("HTTP/1.1 503") && leased.contains("no more leases")),
        "{leased}"
    );
    // A new connection (a load balancer's health check) is not served.
    if let Ok(r) = sitemapd_testsite::client::request(d.addr, "GET", "/healthz", None, None) {
        assert_ne!(r.status, 200, "{}", r.text());
    }
    let (status, took, log) = d.terminate();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn sigint_refuses_leases_and_turns_health_red() {
    stopping_refuses_in_flight_requests(libc::SIGINT);
}

#[test]
fn sigterm_refuses_leases_and_turns_health_red() {
    stopping_refuses_in_flight_requests(libc::SIGTERM);
}
