//! Hostile clients of the real `sitemapd daemon` (issue 17, point 1): a
//! flood of half-sent request heads, one client holding every connection.
//! The hostile *servers* are in `tests/hostile_daemon.rs`.

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use common::daemon::{Daemon, TOKEN};

/// The daemon's open-file limit in the flood test: low enough that 2,000
/// sockets would exhaust it without a connection cap.
const DAEMON_FDS: u64 = 1024;

/// Raises this process's soft open-file limit to `want` (within the hard
/// limit); the limit there is afterwards.
fn raise_fd_limit(want: u64) -> u64 {
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        if lim.rlim_cur < want {
            lim.rlim_cur = want.min(lim.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur
    }
}

/// A daemon (with the test token) whose open-file limit is [`DAEMON_FDS`].
fn daemon_with_fd_limit(store: &std::path::Path, args: &[&str]) -> Daemon {
    Daemon::start_with(store, args, |cmd| {
        cmd.env("SITEMAPD_TOKEN", TOKEN);
        unsafe {
            cmd.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: DAEMON_FDS,
                    rlim_max: DAEMON_FDS,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        }
    })
}

/// A TCP connection to `to` from the loopback address `from` (127.0.0.1
/// and 127.0.0.2 are two peers to the daemon), given up after `wait`.
fn connect_from(from: Ipv4Addr, to: SocketAddr, wait: Duration) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let SocketAddr::V4(to) = to else {
        panic!("IPv4 only")
    };
    let sockaddr = |ip: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let stream = TcpStream::from_raw_fd(fd);
        // On Linux the send timeout bounds connect() too.
        let timeout = libc::timeval {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_usec: wait.subsec_micros() as libc::suseconds_t,
        };
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            (&raw const timeout).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
        let local = sockaddr(from, 0);
        if libc::bind(fd, (&raw const local).cast(), len) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let remote = sockaddr(*to.ip(), to.port());
        if libc::connect(fd, (&raw const remote).cast(), len) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(stream)
    }
}

/// Half a request head: the daemon waits for the rest.
const HALF_HEAD: &[u8] = b"POST /v1/lease HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";

/// `n` connections from `from`, each having sent half a head (those the
/// kernel did not let connect are left out).
fn flood(from: Ipv4Addr, to: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        let Ok(mut conn) = connect_from(from, to, Duration::from_secs(1)) else {
            continue;
        };
        let _ = conn.set_write_timeout(Some(Duration::from_secs(1)));
        if conn.write_all(HALF_HEAD).is_ok() {
            held.push(conn);
        }
    }
    held
}

/// Whether the daemon still holds `conn` open (no EOF, no reset, no
/// answer: a refused connection may get a 503 before it is closed).
fn is_open(mut conn: &TcpStream) -> bool {
    conn.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let open = matches!(conn.read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    conn.set_nonblocking(false).unwrap();
    open
}

fn count_open(conns: &[TcpStream]) -> usize {
    conns.iter().filter(|c| is_open(c)).count()
}

/// An authenticated lease from `from`, on a connection of its own: the
/// status and how long the answer took (an error if none came in 5 s).
fn timed_lease(from: Ipv4Addr, to: SocketAddr) -> Result<(u16, Duration), String> {
    let started = Instant::now();
    let mut conn = connect_from(from, to, Duration::from_secs(5))
        .map_err(|e| format!("connect: {e} after {:?}", started.elapsed()))?;
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let req = format!(
        "POST /v1/lease HTTP/1.1\r\nHost: {to}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    conn.write_all(req.as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let mut answer = Vec::new();
    if let Err(e) = conn.read_to_end(&mut answer) {
        return Err(format!(
            "no answer after {:?} ({e}); read {:?}",
            started.elapsed(),
            String::from_utf8_lossy(&answer)
        ));
    }
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status after {took:?}: {text:?}"))?;
    Ok((status, took))
}

const ONE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
const TWO: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// Issue 17, point 1: 2,000 half-sent heads from one address, against a
/// daemon whose open-file limit is 1,024. While the flood runs (once it is
/// past what the limit holds), an authenticated lease from another socket
/// answers within a second; the flood's connections are closed after the
/// head timeout (default 5 s).
#[test]
fn a_flood_of_half_sent_heads_does_not_stop_the_api() {
    let sockets = 2_000;
    let limit = raise_fd_limit(sockets as u64 + 200);
    let sockets = sockets.min(limit as usize - 200);
    let dir = tempfile::tempdir().unwrap();
    let d = daemon_with_fd_limit(&dir.path().join("store"), &[]);
    let (status, _) = timed_lease(ONE, d.addr).expect("lease before the flood");
    assert_eq!(status, 200);

    // The flood, from a thread of its own; `tried` counts the connections
    // made.
    let tried = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let flooding = {
        let (tried, addr) = (tried.clone(), d.addr);
        std::thread::spawn(move || {
            let mut held = Vec::with_capacity(sockets);
            for _ in 0..sockets {
                let one = flood(ONE, addr, 1);
                tried.fetch_add(one.len(), std::sync::atomic::Ordering::Relaxed);
                held.extend(one);
            }
            held
        })
    };
    // Past 1,100 connections (more than 1,024 descriptors hold), or stuck
    // for 3 s (new connections wait for the daemon to accept them).
    let started = Instant::now();
    let (mut last, mut moved) = (0, Instant::now());
    loop {
        let now = tried.load(std::sync::atomic::Ordering::Relaxed);
        if now >= 1_100.min(sockets) || moved.elapsed() > Duration::from_secs(3) {
            break;
        }
        if now != last {
            (last, moved) = (now, Instant::now());
        }
        assert!(started.elapsed() < Duration::from_secs(60), "flood: {now}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let at = tried.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "leasing at {at} connections, {:?} into the flood",
        started.elapsed()
    );
    // Three leases; the best counts (a loaded machine may stall one).
    let mut best = Duration::MAX;
    let mut answers = Vec::new();
    for _ in 0..3 {
        let lease = timed_lease(ONE, d.addr);
        answers.push(format!("{lease:?}"));
        if let Ok((200, took)) = lease {
            best = best.min(took);
        }
    }
    eprintln!("leases: {answers:?}");
    assert!(
        best < Duration::from_secs(1),
        "authenticated leases during a flood of half-sent heads ({at} connections opened): \
         {answers:?}"
    );
    let held = flooding.join().unwrap();
    let flooded = Instant::now();
    assert!(held.len() > 1_500, "only {} sockets connected", held.len());

    // The flood's connections are closed by the head timeout (5 s by
    // default; 30 s before), not held until the client gives up.
    let deadline = flooded + Duration::from_secs(5 + 5);
    loop {
        let open = count_open(&held);
        if open == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{open} of {} half-sent heads still open {:?} after the flood",
            held.len(),
            flooded.elapsed()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let (status, _) = timed_lease(ONE, d.addr).expect("lease after the flood");
    assert_eq!(status, 200);
    assert!(!d.log().contains("panicked"), "{}", d.log());
}

/// Issue 17, point 1, per-peer fairness: with 24 connections at most and
/// 16 per address, a flood from 127.0.0.1 holds at most 16, the 10
/// connections of 127.0.0.2 opened before it are all kept, and 127.0.0.2
/// still leases.
#[test]
fn one_client_cannot_hold_every_slot() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(
        &dir.path().join("store"),
        &[
            "--max-connections",
            "24",
            "--max-connections-per-ip",
            "16",
            "--head-timeout-secs",
            "30",
        ],
    );
    let other = flood(TWO, d.addr, 10);
    assert_eq!(other.len(), 10, "cannot connect from 127.0.0.2");
    let hog = flood(ONE, d.addr, 300);
    // Let the daemon accept them all: a request behind them is answered.
    let behind = timed_lease(TWO, d.addr);
    let (hog_open, other_open) = (count_open(&hog), count_open(&other));
    assert!(
        hog_open <= 16,
        "127.0.0.1 holds {hog_open} of its {} connections (16 per address at most)",
        hog.len()
    );
    assert_eq!(
        other_open, 10,
        "127.0.0.1's flood closed 127.0.0.2's connections"
    );
    assert!(matches!(behind, Ok((200, _))), "{behind:?}");
    let (status, _) = timed_lease(TWO, d.addr).expect("127.0.0.2 leases");
    assert_eq!(status, 200);
    assert_eq!(count_open(&other), 10);
}
