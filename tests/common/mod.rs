//! What the binary's end-to-end tests share: running `sitemapd` and
//! reading what it printed.
#![allow(dead_code)] // each test binary uses its own subset

use std::process::{Command, Output};

/// The binary under test.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sitemapd"))
}

/// Runs it with `args` and waits.
pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

/// Its stdout, as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// Its stderr, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// Every line of `s` as JSON.
pub fn json_lines(s: &str) -> Vec<serde_json::Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// One request to a loopback server (`Connection: close`): status and body
/// as text.
pub fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    let r = sitemapd_testsite::client::request(addr, method, path, token, body.map(str::as_bytes))
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    (r.status, r.text())
}
