//! Crawl on change, shared by the policies that do it (`lastmod`,
//! `lambda-crawl`): when the sitemap says a page changed after its last
//! fetch, and when a URL that is crawled on change and has not changed is
//! due.

use super::{Due, Params, Reason, UrlState, add_secs};
use crate::time::Timestamp;

/// Whether the sitemap says the page changed after a fetch at
/// `last_fetch`: its lastmod is after it, or the lastmod moved while a
/// read at or after the fetch still showed the older value
/// ([`UrlState::lastmod_moved_after`]), which dates a coarse lastmod's
/// change past a fetch made in its period.
pub fn lastmod_says_changed(
    lastmod: Timestamp,
    moved_after: Option<Timestamp>,
    last_fetch: Timestamp,
) -> bool {
    lastmod > last_fetch || moved_after.is_some_and(|read| read >= last_fetch)
}

/// When a URL crawled on change (its host's lastmods announce every
/// change) and not due for a change is due: a [`Params::validation_share`]
/// of them (by [`UrlState::sample`]) are validation samples due when the
/// rate schedule (`rate_due`) would have them; the others wait for the
/// [`Params::safety_interval`] after the last fetch.
pub(super) fn not_refreshed(
    url: &UrlState,
    params: &Params,
    last: Timestamp,
    rate_due: Timestamp,
    score: f64,
) -> Due {
    let safety = add_secs(last, params.safety_interval);
    if url.sample < params.validation_share && rate_due < safety {
        return Due {
            at: rate_due,
            score,
            reason: Reason::Validation,
        };
    }
    Due {
        at: safety,
        score,
        reason: Reason::Safety,
    }
}
