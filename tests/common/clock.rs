//! The daemon's clock in a test: a file of Unix seconds the daemon reads
//! as "now" (`--test-clock-file`), moved by the test instead of sleeping
//! for time to pass.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};

/// A clock file, starting at the system clock's time.
pub(crate) struct TestClock {
    _dir: tempfile::TempDir,
    path: PathBuf,
    now: AtomicI64,
}

impl TestClock {
    /// A clock at the system clock's time now.
    pub(crate) fn at_system_time() -> TestClock {
        let dir = tempfile::tempdir().unwrap();
        let clock = TestClock {
            path: dir.path().join("clock"),
            _dir: dir,
            now: AtomicI64::new(sitemapd_scheduler::Timestamp::now().unix()),
        };
        clock.write();
        clock
    }

    /// The daemon's arguments for this clock.
    pub(crate) fn args(&self) -> [&str; 2] {
        ["--test-clock-file", self.path.to_str().unwrap()]
    }

    /// The clock's time, Unix seconds.
    pub(crate) fn now(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }

    /// Moves the clock `secs` later.
    pub(crate) fn advance(&self, secs: i64) {
        self.now.fetch_add(secs, Ordering::SeqCst);
        self.write();
    }

    /// The file written whole: a temporary file renamed over it, so that
    /// the daemon never reads it half written.
    fn write(&self) {
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, self.now().to_string()).unwrap();
        std::fs::rename(&tmp, &self.path).unwrap();
    }
}
