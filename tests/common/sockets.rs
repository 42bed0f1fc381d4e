//! Sockets for the flood tests: open-file limits (this process's and the
//! daemon's) and TCP connections from a chosen loopback address.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use super::daemon::{Daemon, TOKEN, limit_on_exec};

/// The daemon's open-file limit in the flood test: low enough that 2,000
/// sockets would exhaust it without a connection cap.
pub(crate) const DAEMON_FDS: u64 = 1024;

/// Raises this process's soft open-file limit to `want` (within the hard
/// limit); the limit there is afterwards.
pub(crate) fn raise_fd_limit(want: u64) -> u64 {
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
pub(crate) fn daemon_with_fd_limit(store: &std::path::Path, args: &[&str]) -> Daemon {
    Daemon::start_with(store, args, |cmd| {
        limit_on_exec(
            cmd.env("SITEMAPD_TOKEN", TOKEN),
            libc::RLIMIT_NOFILE,
            DAEMON_FDS,
        )
    })
}

/// A TCP connection to `to` from the loopback address `from` (127.0.0.1
/// and 127.0.0.2 are two peers to the daemon), given up after `wait`.
pub(crate) fn connect_from(
    from: Ipv4Addr,
    to: SocketAddr,
    wait: Duration,
) -> std::io::Result<TcpStream> {
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

/// Whether the daemon still holds `conn` open (no EOF, no reset, no
/// answer: a refused connection may get a 503 before it is closed).
pub(crate) fn is_open(mut conn: &TcpStream) -> bool {
    conn.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let open = matches!(conn.read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    conn.set_nonblocking(false).unwrap();
    open
}

pub(crate) fn count_open(conns: &[TcpStream]) -> usize {
    conns.iter().filter(|c| is_open(c)).count()
}
