//! The progress line of a walk (`ingest`, `discover`): a spinner with the
//! sitemaps read and URLs seen when stderr is a terminal; plain log lines
//! otherwise.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar on a terminal; plain log lines otherwise.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    /// What the URL count is: `URLs stored`, `URLs`.
    urls_are: &'static str,
    urls: AtomicU64,
    sitemaps: AtomicU64,
    started: Instant,
}

impl Progress {
    /// A spinner on stderr if `show` and stderr is a terminal; `urls_are`
    /// names the URL count in its message (`URLs stored`).
    pub(crate) fn new(urls_are: &'static str, show: bool) -> Self {
        let bar = (show && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Self {
            bar,
            urls_are,
            urls: AtomicU64::default(),
            sitemaps: AtomicU64::default(),
            started: Instant::now(),
        }
    }

    /// One URL entry more.
    pub(crate) fn url(&self) {
        let n = self.urls.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(4096) {
            self.refresh();
        }
    }

    /// One sitemap more (read or failed).
    pub(crate) fn sitemap(&self) {
        self.sitemaps.fetch_add(1, Ordering::Relaxed);
        self.refresh();
    }

    /// Each line of `text`, on stderr.
    pub(crate) fn lines(&self, text: &[u8]) {
        for line in String::from_utf8_lossy(text).lines() {
            self.line(line);
        }
    }

    /// A line as the walk goes, for a log (no terminal): the bar shows the
    /// counts instead, and each site's tree follows when it is done.
    pub(crate) fn log(&self, line: &str) {
        if self.bar.is_none() {
            eprintln!("{line}");
        }
    }

    /// A line on stderr, above the bar.
    pub(crate) fn line(&self, line: &str) {
        match &self.bar {
            Some(bar) => {
                bar.println(line);
                self.refresh();
            }
            None => eprintln!("{line}"),
        }
    }

    /// Runs `f` (a write to stdout, a flush of stderr) with the bar hidden,
    /// so the two do not mix on one terminal.
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    fn refresh(&self) {
        if let Some(bar) = &self.bar {
            let urls = self.urls.load(Ordering::Relaxed);
            let rate = urls as f64 / self.started.elapsed().as_secs_f64().max(0.001);
            bar.set_message(format!(
                "{} sitemaps, {urls} {}, {rate:.0} URLs/s",
                self.sitemaps.load(Ordering::Relaxed),
                self.urls_are
            ));
        }
    }

    /// Clears the bar.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
