//! Shared by the bench binaries: run the real `sitemapd` binary as a child
//! and read its wall time and peak RSS (wait4(2)).

use std::process::{Command, Stdio};
use std::time::Instant;

/// One child run.
pub(crate) struct Run {
    /// Wall time.
    pub seconds: f64,
    /// Peak resident set size, KiB.
    pub max_rss_kib: i64,
    /// Its stderr.
    pub stderr: String,
}

/// Runs the `sitemapd` binary with `args`.
pub(crate) fn run(args: &[&str]) -> Run {
    run_program(env!("CARGO_BIN_EXE_sitemapd").as_ref(), args)
}

/// Runs `program` with `args`, stdout to /dev/null.
// The child is reaped by wait4(2), which also reports its peak RSS.
#[allow(clippy::zombie_processes)]
pub(crate) fn run_program(program: &std::path::Path, args: &[&str]) -> Run {
    let start = Instant::now();
    let child = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let output_thread = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut child.stderr.unwrap(), &mut s).unwrap();
        s
    });
    let mut status = 0;
    // SAFETY: plain FFI call on a zeroed rusage owned by this frame.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    Run {
        seconds: start.elapsed().as_secs_f64(),
        max_rss_kib: usage.ru_maxrss,
        stderr: output_thread.join().unwrap(),
    }
}
