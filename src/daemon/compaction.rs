//! The daemon's store compaction: every [`CHECK_EVERY`], the store is
//! compacted if its files have grown past what the settings allow
//! (`scheduler.compact_growth`, `scheduler.compact_floor_mib`;
//! [`sitemapd_scheduler::Store::compact_if_grown`]). sled never gives back
//! the space of rewritten records, so a store being crawled grows without
//! this.

use std::sync::Arc;
use std::time::Duration;

use sitemapd_scheduler::Store;
use tokio::sync::watch;
use tracing::warn;

/// How often the store's size is looked at (a few file sizes read).
pub(super) const CHECK_EVERY: Duration = Duration::from_secs(10);

/// After a compaction failed (a full disk: the copy did not fit), how long
/// before the next try.
const AFTER_FAILURE: Duration = Duration::from_secs(600);

/// Looks at the store's size every [`CHECK_EVERY`] and compacts it when it
/// has grown, until `stop`.
pub(super) async fn run(store: Arc<Store>, mut stop: watch::Receiver<bool>) {
    let mut wait = CHECK_EVERY;
    loop {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let store = store.clone();
        wait = match tokio::task::spawn_blocking(move || store.compact_if_grown()).await {
            // The store logs what a compaction did.
            Ok(Ok(_)) => CHECK_EVERY,
            Ok(Err(e)) => {
                warn!(error = %e, retry_secs = AFTER_FAILURE.as_secs(), "the store could not be compacted");
                AFTER_FAILURE
            }
            Err(e) => {
                warn!(error = %e, "the store's compaction stopped");
                AFTER_FAILURE
            }
        };
    }
}
