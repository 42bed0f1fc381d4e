//! The real daemon in a test: started on a free loopback port with the test
//! token, its log captured, called through its HTTP API.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{bin, http};

/// The API token the tests start the daemon with.
pub(crate) const TOKEN: &str = "s3cret-token";

/// A running daemon and what it logged.
pub(crate) struct Daemon {
    pub child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
    /// The thread copying stderr into `log`: done when the process is.
    reader: Option<std::thread::JoinHandle<()>>,
    /// What lives as long as the daemon, dropped after it is killed (the
    /// NATS server of a one-node cluster).
    beside: Vec<Box<dyn std::any::Any>>,
}

impl Daemon {
    /// Starts `sitemapd daemon` with `args` (plus a loopback listener on a
    /// free port and the test token) and waits until it listens.
    pub(crate) fn start(store: &std::path::Path, args: &[&str]) -> Daemon {
        Daemon::start_with(store, args, |cmd| cmd.env("SITEMAPD_TOKEN", TOKEN))
    }

    /// [`Daemon::start`], with `token` setting how the token is given.
    pub(crate) fn start_with(
        store: &std::path::Path,
        args: &[&str],
        token: impl FnOnce(&mut Command) -> &mut Command,
    ) -> Daemon {
        Daemon::spawn(store, &[&["--allow-private"][..], args].concat(), token)
    }

    /// [`Daemon::start`] without `--allow-private`: the address guard on,
    /// so nothing on loopback can be fetched.
    pub(crate) fn start_guarded(store: &std::path::Path, args: &[&str]) -> Daemon {
        Daemon::spawn(store, args, |cmd| cmd.env("SITEMAPD_TOKEN", TOKEN))
    }

    fn spawn(
        store: &std::path::Path,
        args: &[&str],
        token: impl FnOnce(&mut Command) -> &mut Command,
    ) -> Daemon {
        let mut cmd = bin();
        token(&mut cmd);
        let mut child = cmd
            .args(["daemon", "--store", store.to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0"])
            .args(if args.contains(&"--min-delay") {
                &[][..]
            } else {
                &["--min-delay", "0"][..]
            })
            .args(args)
            .env("SITEMAPD_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("listening on http://") {
                    let rest = &line[at + "listening on http://".len()..];
                    let addr: String = rest
                        .chars()
                        .take_while(|c| !c.is_whitespace() && *c != '"')
                        .collect();
                    let _ = tx.send(addr);
                }
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("the daemon did not start:\n{}", log.lock().unwrap()))
            .parse()
            .unwrap();
        Daemon {
            child,
            addr,
            log,
            reader: Some(reader),
            beside: Vec::new(),
        }
    }

    /// Keeps `thing` until the daemon is dropped (and killed).
    pub(crate) fn keep(&mut self, thing: impl std::any::Any) {
        self.beside.push(Box::new(thing));
    }

    pub(crate) fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let body = body.map(|b| b.to_string());
        let (status, text) = http(self.addr, method, path, Some(TOKEN), body.as_deref());
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    pub(crate) fn get(&self, path: &str) -> Value {
        let (status, v) = self.call("GET", path, None);
        assert_eq!(status, 200, "GET {path}: {v}");
        v
    }

    pub(crate) fn post(&self, path: &str, body: Value) -> Value {
        let (status, v) = self.call("POST", path, Some(body));
        assert_eq!(status, 200, "POST {path}: {v}");
        v
    }

    pub(crate) fn active(&self) -> u64 {
        self.get("/v1/stats")["stats"]["active"].as_u64().unwrap()
    }

    /// Polls `what` until it holds (120 s at most: only a failure waits
    /// that long, and a busy shared disk makes each acknowledged write slow).
    pub(crate) fn wait_for(&self, what: &str, mut done: impl FnMut(&Daemon) -> bool) {
        let start = Instant::now();
        while !done(self) {
            if start.elapsed() > Duration::from_secs(120) {
                panic!("timed out waiting for {what}; log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// `kill -9`, and waits for the process to end: whether the process
    /// was still running when the signal was sent (its exit status says it
    /// died of SIGKILL), and its whole log.
    pub(crate) fn kill_9(mut self) -> (bool, String) {
        let running = self.child.try_wait().unwrap().is_none();
        self.child.kill().unwrap(); // SIGKILL
        let status = self.child.wait().unwrap();
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        use std::os::unix::process::ExitStatusExt;
        let killed = running && status.signal() == Some(libc::SIGKILL);
        (killed, self.log())
    }

    /// SIGTERM, then waits (at most 15 s): the exit status and how long it took.
    pub(crate) fn terminate(mut self) -> (ExitStatus, Duration, String) {
        let start = Instant::now();
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let took = start.elapsed();
                // The log reader's last lines: it ends at the end of stderr.
                if let Some(reader) = self.reader.take() {
                    reader.join().unwrap();
                }
                return (status, took, self.log());
            }
            if start.elapsed() > Duration::from_secs(15) {
                let _ = self.child.kill();
                panic!("no exit 15 s after SIGTERM:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sets `cmd`'s process limit `resource` (an `RLIMIT_*`) to `limit`, soft
/// and hard, between fork and exec. SIGXFSZ is ignored, so that a write
/// past `RLIMIT_FSIZE` fails with EFBIG (as on a full disk) instead of
/// killing the process.
pub(crate) fn limit_on_exec(
    cmd: &mut std::process::Command,
    resource: libc::__rlimit_resource_t,
    limit: u64,
) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: async-signal-safe calls only, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(resource, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}
