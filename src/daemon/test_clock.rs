//! The daemon's clock for tests (`--test-clock-file FILE`, hidden from
//! `--help`): "now" is the Unix seconds written in a file, read again at
//! each use, so that a test that runs the daemon as a process moves its
//! time by rewriting the file instead of sleeping for time to pass.
//!
//! A test writes the file whole (a write to a temporary file, then a
//! rename): a read that finds it missing, empty or half written keeps the
//! last time read, and says so once in the log.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use anyhow::{Context, Result};
use sitemapd_scheduler::{Clock, Timestamp};
use tracing::warn;

/// A clock read from a file of Unix seconds.
#[derive(Debug)]
pub(super) struct FileClock {
    path: PathBuf,
    /// The last time read.
    last: AtomicI64,
    /// Whether the last read failed (said once per run of failures).
    failing: AtomicBool,
}

impl FileClock {
    /// The clock of `path`, which must hold a time now: a file that does
    /// not read or parse stops the daemon at start.
    pub(super) fn open(path: &Path) -> Result<FileClock> {
        let at = read(path).with_context(|| {
            format!(
                "--test-clock-file {}: not a file of Unix seconds",
                path.display()
            )
        })?;
        Ok(FileClock {
            path: path.to_path_buf(),
            last: AtomicI64::new(at.unix()),
            failing: AtomicBool::new(false),
        })
    }
}

impl Clock for FileClock {
    fn now(&self) -> Timestamp {
        match read(&self.path) {
            Ok(at) => {
                self.last.store(at.unix(), Ordering::SeqCst);
                self.failing.store(false, Ordering::SeqCst);
                at
            }
            Err(e) => {
                if !self.failing.swap(true, Ordering::SeqCst) {
                    warn!(
                        file = %self.path.display(),
                        error = %format!("{e:#}"),
                        "the test clock's file does not read: the last time read stands"
                    );
                }
                Timestamp::from_unix(self.last.load(Ordering::SeqCst))
            }
        }
    }
}

/// The time written in `path`: an integer of Unix seconds, blanks around
/// it allowed.
fn read(path: &Path) -> Result<Timestamp> {
    let text = std::fs::read_to_string(path)?;
    let secs: i64 = text
        .trim()
        .parse()
        .with_context(|| format!("{:?} is not a number of seconds", text.trim()))?;
    Ok(Timestamp::from_unix(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }

    #[test]
    fn the_time_is_what_the_file_says_at_each_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clock");
        write(&path, "1700000000\n");
        let clock = FileClock::open(&path).unwrap();
        assert_eq!(clock.now(), Timestamp::from_unix(1_700_000_000));
        write(&path, "  1700000061 ");
        assert_eq!(clock.now(), Timestamp::from_unix(1_700_000_061));
        // Back in time too: the file is the clock.
        write(&path, "-5");
        assert_eq!(clock.now(), Timestamp::from_unix(-5));
    }

    #[test]
    fn a_file_that_does_not_read_keeps_the_last_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clock");
        write(&path, "1000");
        let clock = FileClock::open(&path).unwrap();
        std::fs::write(&path, "").unwrap();
        assert_eq!(clock.now(), Timestamp::from_unix(1_000), "empty");
        std::fs::write(&path, "10x").unwrap();
        assert_eq!(clock.now(), Timestamp::from_unix(1_000), "not a number");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(clock.now(), Timestamp::from_unix(1_000), "gone");
        write(&path, "1002");
        assert_eq!(clock.now(), Timestamp::from_unix(1_002), "back");
    }

    #[test]
    fn a_file_that_does_not_hold_a_time_at_start_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clock");
        let e = FileClock::open(&path).unwrap_err();
        assert!(format!("{e:#}").contains("--test-clock-file"), "{e:#}");
        std::fs::write(&path, "yesterday").unwrap();
        let e = format!("{:#}", FileClock::open(&path).unwrap_err());
        assert!(e.contains("\"yesterday\" is not a number"), "{e}");
    }
}
