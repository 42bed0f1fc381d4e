//! Verifying a key: its key file fetched (no redirect followed, through the
//! daemon's address guard), the host's robots.txt read when it holds the
//! key, the outcome settled in the keys table and noted in the store, and
//! the URLs held for it applied or dropped.

use std::sync::Arc;

use sitemapd_discovery::robots::RobotsOutcome;
use sitemapd_discovery::{FetchError, Fetcher, Validators};
use sitemapd_parser::{NormUrl, RobotsRules};

use super::keys::{KeyId, Verdict};
use super::{Intake, apply, label};

/// The largest key file read: a key is 128 bytes at most.
const MAX_KEY_FILE: u64 = 1_024;
/// The longest reason kept for a refused key (it is answered with every
/// 403 until the key is tried again).
const MAX_REASON: usize = 300;

/// Verifies `id`: fetches its key file (and the host's robots.txt when it
/// holds the key), settles it, and applies or drops the URLs held for it.
pub(super) async fn verify(intake: Arc<Intake>, id: KeyId) {
    let verdict = key_file_verdict(&intake.key_fetcher, &id).await;
    if verdict == Verdict::Holds {
        read_robots(&intake, &id).await;
    }
    let now = intake.now();
    let settled = {
        let mut tables = intake.tables();
        let settled = tables.keys.settle(&id, &verdict, now);
        if settled.new_host_unused {
            tables.new_hosts.give_back();
        }
        settled
    };
    let metrics = &intake.metrics;
    let result = match (&verdict, settled.revoked) {
        (Verdict::Holds, _) => "verified",
        (Verdict::Refused(_), true) => "revoked",
        (Verdict::Refused(_), false) => "rejected",
        (Verdict::Unreachable(_), _) => "unreachable",
    };
    metrics
        .indexnow_verifications
        .get_or_create(&label(result))
        .inc();
    match &verdict {
        Verdict::Holds => {
            tracing::info!(host = %id.host, location = %id.location, "IndexNow key verified");
        }
        Verdict::Refused(why) | Verdict::Unreachable(why) => {
            tracing::info!(host = %id.host, location = %id.location, why, "IndexNow key {result}");
        }
    }
    if verdict == Verdict::Holds || settled.revoked {
        note(&intake, &id).await;
    }
    intake.update_gauge();
    if settled.urls.is_empty() {
        return;
    }
    if verdict == Verdict::Holds {
        let answer = apply(&intake, &id.host, settled.urls).await;
        if !answer.status.is_success() {
            tracing::warn!(host = %id.host, answer = %answer.body, "URLs held for a verified key were not applied");
        }
    } else {
        metrics
            .indexnow_urls
            .get_or_create(&label("dropped"))
            .inc_by(settled.urls.len() as u64);
    }
}

/// Writes to the store whether the host of `id` has a key verified now, as
/// the keys table says when the write is made (one write at a time, so the
/// last says what the table says).
async fn note(intake: &Arc<Intake>, id: &KeyId) {
    let _one = intake.noting.lock().await;
    let verified = intake.tables().keys.host_verified(&id.host);
    let store = intake.store.clone();
    let host = id.host.clone();
    let at = verified.then(|| intake.clock.now());
    let noted = tokio::task::spawn_blocking(move || store.key_verified(&host, at)).await;
    if let Ok(Err(e)) = noted {
        tracing::warn!(error = %e, "the key's verification was not recorded");
    }
}

/// What the key file at `id.location` says of `id.key`, through `fetcher`
/// (which follows no redirect; a key file on a private address is refused
/// as any fetch is). A file that answers and does not hold the key (or is
/// not one) refuses it; one that cannot be read now (no answer, a 5xx, a
/// 408 or 429) is unreachable, and tried again later.
async fn key_file_verdict(fetcher: &Fetcher, id: &KeyId) -> Verdict {
    let refused = |why: String| Verdict::Refused(why.chars().take(MAX_REASON).collect());
    let url = match NormUrl::parse(&id.location) {
        Ok(url) => url,
        Err(e) => return refused(format!("the key file URL: {e}")),
    };
    let fetched = match fetcher.get(&url, &Validators::default()).await {
        Ok(fetched) => fetched,
        Err(
            e @ (FetchError::Refused(_)
            | FetchError::TooManyRedirects(_)
            | FetchError::RedirectLoop(_)
            | FetchError::BadRedirect(_)
            | FetchError::ContentEncoding(_)),
        ) => {
            return refused(format!(
                "the key file {url} could not be fetched: {e} (a key file is served where it is named)"
            ));
        }
        Err(e) => {
            return Verdict::Unreachable(format!("the key file {url} could not be fetched: {e}"));
        }
    };
    let status = fetched.status;
    if status >= 500 || status == 408 || status == 429 {
        return Verdict::Unreachable(format!("the key file {url} answered {status}"));
    }
    if !fetched.is_success() {
        return refused(format!("the key file {url} answered {status}"));
    }
    let body = match fetched.into_body().read_small(MAX_KEY_FILE + 1).await {
        Ok(body) => body,
        Err(e) => {
            return Verdict::Unreachable(format!("the key file {url} could not be read: {e}"));
        }
    };
    if body.len() as u64 > MAX_KEY_FILE {
        return refused(format!(
            "the key file {url} is larger than {MAX_KEY_FILE} bytes: it is not a key file"
        ));
    }
    let Ok(text) = std::str::from_utf8(&body) else {
        return refused(format!("the key file {url} is not UTF-8 text"));
    };
    if text.trim_start_matches('\u{feff}').trim() != id.key {
        return refused(format!("the key file {url} does not hold the key"));
    }
    Verdict::Holds
}

/// Reads the robots.txt of a verified key's host and records its rules
/// (an unreachable one changes nothing).
async fn read_robots(intake: &Arc<Intake>, id: &KeyId) {
    let Ok(url) = NormUrl::parse(&id.location).and_then(|at| at.join("/robots.txt")) else {
        return;
    };
    let report = sitemapd_discovery::robots::fetch_robots(&intake.fetcher, &url).await;
    let (outcome, rules) = match &report.outcome {
        RobotsOutcome::Parsed { robots } => ("parsed", Some(robots.rules())),
        RobotsOutcome::Unavailable => ("unavailable", Some(RobotsRules::allow_all())),
        RobotsOutcome::Unreachable { .. } => ("unreachable", None),
    };
    intake
        .metrics
        .robots_fetches
        .get_or_create(&label(outcome))
        .inc();
    let Some(rules) = rules else {
        return;
    };
    let store = intake.store.clone();
    let host = id.host.clone();
    let clock = intake.clock.clone();
    let set =
        tokio::task::spawn_blocking(move || store.set_robots(&host, &rules, clock.now())).await;
    if let Ok(Err(e)) = set {
        tracing::warn!(error = %e, "the robots.txt rules read for a push were not recorded");
    }
}
