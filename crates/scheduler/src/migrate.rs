//! Bringing a store written by an older build to the current key layout
//! ([`keys::LAYOUT_VERSION`]) when it is opened.
//!
//! Layout 1 kept due entries as `d` ‖ due ‖ URL; layout 2 adds the urgency
//! class and the priority rank; layout 3 widens the rank (lastmod and URL
//! length after the priority). The migration rebuilds the due index from
//! the URL records: every `d` key is removed, then each active record's
//! entry is written, in batches, and the layout key last. A crash in the
//! middle leaves the layout key unwritten, so the next open starts over:
//! the rebuild is idempotent and the records are never touched.

use crate::error::StoreError;
use crate::keys;
use crate::kv::{Batch, Kv};
use crate::record::{UrlRecord, decode};

/// Keys written per batch while rebuilding.
const BATCH: usize = 10_000;

/// Migrates `kv` to the current layout if it is older; refuses a newer one.
pub(crate) fn to_current_layout(kv: &Kv) -> Result<(), StoreError> {
    match kv.get(keys::LAYOUT)?.as_deref() {
        Some([v]) if *v == keys::LAYOUT_VERSION => return Ok(()),
        Some([v]) if *v > keys::LAYOUT_VERSION => return Err(StoreError::NewerLayout(*v)),
        _ => {}
    }
    let empty = kv.scan_prefix([keys::DUE]).next().is_none();
    if !empty {
        tracing::info!(
            "rebuilding the due index for key layout {}",
            keys::LAYOUT_VERSION
        );
        rebuild_due_index(kv)?;
    }
    kv.insert(keys::LAYOUT, &[keys::LAYOUT_VERSION])?;
    kv.flush()?;
    Ok(())
}

fn rebuild_due_index(kv: &Kv) -> Result<(), StoreError> {
    loop {
        let mut batch = Batch::default();
        let mut n = 0;
        for item in kv.scan_prefix([keys::DUE]).take(BATCH) {
            let (key, _) = item?;
            batch.remove(key);
            n += 1;
        }
        if n == 0 {
            break;
        }
        kv.apply_batch(batch)?;
    }
    let mut batch = Batch::default();
    let mut n = 0;
    for item in kv.scan_prefix([keys::URL]) {
        let (key, value) = item?;
        let Some(url) = key.get(1..).and_then(|u| std::str::from_utf8(u).ok()) else {
            continue;
        };
        // A record that does not decode keeps no entry; `check` names it.
        let Ok(rec) = decode::<UrlRecord>(&value) else {
            continue;
        };
        if rec.queued() {
            batch.insert(rec.due_key(url), &[]);
            n += 1;
        }
        if n == BATCH {
            kv.apply_batch(std::mem::take(&mut batch))?;
            n = 0;
        }
    }
    kv.apply_batch(batch)?;
    Ok(())
}
