//! One module per subcommand.

pub(crate) mod cluster;
pub(crate) mod complete;
pub(crate) mod discover;
pub(crate) mod export;
pub(crate) mod ingest;
pub(crate) mod parse;
pub(crate) mod queue;
pub(crate) mod robots;
pub(crate) mod stats;

/// An error (exit 1, after what the command printed) when its reads
/// passed over records that do not decode: what it printed leaves them out.
pub(crate) fn fail_if_records_passed_over(
    store: &sitemapd_scheduler::Store,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    let health = store.health();
    match health.first_unreadable {
        Some(first) => anyhow::bail!(
            "the store at {} is damaged: {} record read(s) did not decode and were left out \
             (the first: {first}); `sitemapd stats --check` names every one, \
             `sitemapd stats --repair` removes them",
            path.display(),
            health.unreadable_records
        ),
        None => Ok(()),
    }
}

/// Whether a command's input names an http(s) URL rather than a file.
pub(crate) fn is_url(input: &str) -> bool {
    let lower = input.get(..8).unwrap_or(input).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// The error for an input that names a directory where a sitemap file is
/// read (`parse DIR`, `ingest DIR`).
pub(crate) fn directory_given(input: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{input} is a directory, not a sitemap file: give the path of a file (or a URL to fetch)"
    )
}
