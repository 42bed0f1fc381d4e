//! How results are written: the JSON Lines / CSV entry contract on stdout,
//! diagnostics and summaries on stderr, the sitemap tree of `discover` and the
//! progress line of a walk.

mod diagnostics;
mod entries;
mod json_lines;
mod leased;
mod progress;
mod tree;
pub(crate) mod words;

use std::io;

pub(crate) use diagnostics::DiagnosticSink;
pub(crate) use entries::EntrySink;
pub(crate) use leased::leased_json;
pub(crate) use progress::Progress;
pub(crate) use tree::{Tree, robots_unreachable};

/// Whether `e` is a closed stdout (`sitemapd parse … | head`).
pub(crate) fn is_broken_pipe(e: &anyhow::Error) -> bool {
    let pipe = io::ErrorKind::BrokenPipe;
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == pipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(pipe))
            || c.downcast_ref::<csv::Error>()
                .is_some_and(|c| matches!(c.kind(), csv::ErrorKind::Io(io) if io.kind() == pipe))
    })
}
