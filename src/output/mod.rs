//! How results are written: the JSON Lines / CSV entry contract on stdout,
//! diagnostics and summaries on stderr, the sitemap tree of `discover` and the
//! progress line of a walk.

mod diagnostics;
mod entries;
mod leased;
mod progress;
mod tree;
pub mod words;

use std::io;

pub use diagnostics::DiagnosticSink;
pub use entries::EntrySink;
pub use leased::leased_json;
pub use progress::Progress;
pub use tree::{Tree, robots_unreachable};

/// Whether `e` is a closed stdout (`sitemapd parse … | head`).
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
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
