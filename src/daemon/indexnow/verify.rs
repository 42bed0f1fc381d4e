//! Verifying a key: its key file fetched (no redirect followed, through the
//! daemon's address guard), the host's robots.txt read when it holds the
//! key, the outcome settled in the keys table and noted in the store, and
//! the URLs held for it applied or dropped.

use std::sync::Arc;
use std::time::Duration;

use sitemapd_discovery::robots::RobotsOutcome;
use sitemapd_discovery::{FetchError, Fetcher, Validators};
use sitemapd_parser::{NormUrl, RobotsRules};

use super::keys::{KeyId, Settled, Verdict};
use super::{Intake, apply, label};

/// The largest key file read: a key is 128 bytes at most.
const MAX_KEY_FILE: u64 = 1_024;
/// The longest reason kept for a refused key (it is answered with every
/// 403 until the key is tried again).
const MAX_REASON: usize = 300;

/// How long a key file's fetch may take in all (the fetcher's own
/// timeouts do not count its wait for the host's politeness gate).
const FETCH_TIMEOUT: Duration = Duration::from_secs(60);

/// A verification's place in the keys table: settled when it ends, as
/// unreachable if it ends without a verdict (a panic, a task dropped), so
/// that its slot and its held URLs are never kept for good.
struct Settling<'a> {
    intake: &'a Intake,
    id: &'a KeyId,
    done: bool,
}

impl Settling<'_> {
    fn settle(&mut self, verdict: &Verdict) -> Settled {
        self.done = true;
        let now = self.intake.now();
        let mut tables = self.intake.tables();
        let settled = tables.keys.settle(self.id, verdict, now);
        if let Some(day) = settled.new_host_unused {
            tables.new_hosts.give_back(day);
        }
        settled
    }
}

impl Drop for Settling<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.settle(&Verdict::Unreachable("the verification stopped".into()));
        }
    }
}

/// Verifies `id`: fetches its key file, settles it, and when the file
/// holds the key reads the host's robots.txt and applies the URLs held for
/// it (else drops them).
pub(super) async fn verify(intake: Arc<Intake>, id: KeyId) {
    let mut settling = Settling {
        intake: &intake,
        id: &id,
        done: false,
    };
    let verdict = tokio::time::timeout(FETCH_TIMEOUT, key_file_verdict(&intake.key_fetcher, &id))
        .await
        .unwrap_or_else(|_| {
            Verdict::Unreachable(format!(
                "the key file {} did not answer within {} s",
                id.location,
                FETCH_TIMEOUT.as_secs()
            ))
        });
    let settled = settling.settle(&verdict);
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
        note(&intake, &id, settled.revoked).await;
    }
    intake.update_gauge();
    if verdict == Verdict::Holds {
        // Its rules before its URLs: a URL they disallow is stored blocked.
        if tokio::time::timeout(FETCH_TIMEOUT, read_robots(&intake, &id))
            .await
            .is_err()
        {
            tracing::info!(host = %id.host, "robots.txt not read within the time allowed");
        }
    }
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
/// last says what the table says). A revoked key whose host has another
/// verified one changes nothing there.
async fn note(intake: &Arc<Intake>, id: &KeyId, revoked: bool) {
    let _one = intake.noting.lock().await;
    let verified = intake.tables().keys.host_verified(&id.host);
    if revoked && verified {
        return;
    }
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
