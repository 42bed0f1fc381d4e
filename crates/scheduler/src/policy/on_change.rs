//! Crawl on change, shared by the policies that do it (`lastmod`,
//! `lambda-crawl`): when the sitemap says a page changed after its last
//! fetch, and when a URL that is crawled on change and has not changed is
//! due.

use super::{Due, HostState, Params, Reason, UrlState, add_secs};
use crate::time::Timestamp;
use sitemapd_parser::date::{self, Precision};

/// Whether a lastmod (start of its period, `None` precision = second) may be
/// after a fetch at `last_fetch`: the latest instant of its period is.
pub fn lastmod_is_newer(
    lastmod: Timestamp,
    precision: Option<Precision>,
    last_fetch: Timestamp,
) -> bool {
    latest(lastmod, precision) > last_fetch
}

/// The last second of the lastmod's period ([`date::Lastmod::latest`]).
pub(super) fn latest(lastmod: Timestamp, precision: Option<Precision>) -> Timestamp {
    Timestamp::from_unix(
        date::Lastmod {
            unix_seconds: lastmod.unix(),
            nanos: 0,
            precision: precision.unwrap_or(Precision::Second),
        }
        .latest(),
    )
}

/// Whether every change of the page is observed: its host's lastmods are
/// complete ([`HostState::lastmod_complete`]) and its lastmod is exact (to
/// the second: one value per change, the change's time). Such a page can
/// be crawled on change, and its change rate counted from its lastmods.
pub fn every_change_observed(url: &UrlState, host: &HostState) -> bool {
    host.lastmod_complete
        && url.lastmod.is_some()
        && matches!(
            url.lastmod_precision,
            None | Some(Precision::Second | Precision::Fraction)
        )
}

/// Whether the sitemap says the page changed after a fetch at
/// `last_fetch`: its lastmod is after it, or, for a coarse lastmod whose
/// period holds the fetch ([`lastmod_is_newer`]), the lastmod moved while a
/// read at or after the fetch still showed the older value
/// ([`UrlState::lastmod_moved_after`]). An exact lastmod, or a period over
/// before the fetch, says by itself that the fetch saw the change (a late
/// sitemap moving it afterwards is no news).
pub fn lastmod_says_changed(
    lastmod: Timestamp,
    precision: Option<Precision>,
    moved_after: Option<Timestamp>,
    last_fetch: Timestamp,
) -> bool {
    lastmod > last_fetch
        || (lastmod_is_newer(lastmod, precision, last_fetch)
            && moved_after.is_some_and(|read| read >= last_fetch))
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
