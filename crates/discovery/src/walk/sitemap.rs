//! One sitemap: fetch (conditional), parse as it streams in, forward its
//! entries and diagnostics, report, and hand back its children.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use sitemapd_parser::{Event, NormUrl, ParseOptions, SitemapRef, parse_async};
use tokio::time::Instant;
use tracing::{Instrument, debug, info_span};

use super::event::{MAX_REPORTED_CHILDREN, SitemapFailure, SitemapReport, Via, WalkEvent};
use super::{Closed, Emit, Remembered, Walker};

/// The per-site state shared by its sitemap tasks.
pub(super) struct SiteState {
    /// Every sitemap URL queued or reached by a redirect.
    pub visited: Mutex<HashSet<NormUrl>>,
}

/// A sitemap to walk.
#[derive(Debug, Clone)]
pub(super) struct Task {
    /// The seed whose walk this is.
    pub site: Arc<NormUrl>,
    pub url: NormUrl,
    pub depth: u32,
    pub via: Via,
    pub parent: Option<NormUrl>,
    /// Origins whose robots.txt vouched for this chain (R5), inherited.
    pub authorised: Arc<Vec<NormUrl>>,
    /// What the caller's memory says of it, when already asked (children
    /// are asked once, for I3, when admitted).
    pub remembered: Option<Remembered>,
}

impl Task {
    /// A top-level sitemap (seed, robots or probe).
    pub(super) fn top(
        site: &Arc<NormUrl>,
        url: NormUrl,
        via: Via,
        authorised: Vec<NormUrl>,
    ) -> Self {
        Self {
            site: site.clone(),
            url,
            depth: 0,
            via,
            parent: None,
            authorised: Arc::new(authorised),
            remembered: None,
        }
    }

    /// A child listed by this index, with what the memory said of it.
    pub(super) fn child(&self, url: NormUrl, remembered: Remembered) -> Self {
        Self {
            site: self.site.clone(),
            url,
            depth: self.depth + 1,
            via: Via::Index,
            parent: Some(self.url.clone()),
            authorised: self.authorised.clone(),
            remembered: Some(remembered),
        }
    }
}

/// How a sitemap task ended, for the site's totals and queue.
pub(super) enum Outcome {
    /// Fetched (or not modified) and read.
    Read {
        entries: u64,
        bytes: u64,
        children: Vec<SitemapRef>,
    },
    /// Not fetched: the caller's memory says it is not due. The children
    /// it remembers (none for a leaf), to walk on through.
    NotDue { children: Vec<SitemapRef> },
    /// Reported as failed.
    Failed,
    /// Nothing to count: a probe that missed, a redirect to a sitemap
    /// already walked.
    Quiet,
}

/// Walks one sitemap; `Err` only when the consumer is gone.
pub(super) async fn walk_sitemap(
    walker: &Walker,
    state: &SiteState,
    task: Task,
    emit: &Emit,
) -> Result<(Task, Outcome), Closed> {
    let span = info_span!("sitemap", url = %task.url, depth = task.depth);
    let outcome = run(walker, state, &task, emit).instrument(span).await?;
    Ok((task, outcome))
}

async fn run(
    walker: &Walker,
    state: &SiteState,
    task: &Task,
    emit: &Emit,
) -> Result<Outcome, Closed> {
    let started = Instant::now();
    let remembered = match &task.remembered {
        Some(r) => r.clone(),
        None => walker.recall(&task.url),
    };
    if remembered.not_due {
        debug!("not due: not fetched");
        emit.send(WalkEvent::NotDue {
            site: task.site.clone(),
            url: task.url.clone(),
            parent: task.parent.clone(),
            depth: task.depth,
        })
        .await?;
        return Ok(Outcome::NotDue {
            children: as_refs(remembered.children),
        });
    }
    let fail = |status: Option<u16>, error: String, waited: Duration| {
        if task.via == Via::Probe {
            WalkEvent::ProbeMissed {
                site: task.site.clone(),
                url: task.url.clone(),
                reason: error,
            }
        } else {
            WalkEvent::SitemapFailed(SitemapFailure {
                site: task.site.clone(),
                url: task.url.clone(),
                parent: task.parent.clone(),
                depth: task.depth,
                via: task.via,
                status,
                error,
                duration: started.elapsed().saturating_sub(waited),
                waited,
            })
        }
    };
    let failed = if task.via == Via::Probe {
        Outcome::Quiet
    } else {
        Outcome::Failed
    };
    let (fetched, waited) = walker
        .fetcher
        .get_timed(&task.url, &remembered.validators)
        .await;
    let fetched = match fetched {
        Ok(f) => f,
        Err(e) => {
            debug!(error = %e, "sitemap fetch failed");
            emit.send(fail(e.status(), e.to_string(), waited)).await?;
            return Ok(failed);
        }
    };
    if !fetched.is_success() && !fetched.not_modified() {
        emit.send(fail(
            Some(fetched.status),
            format!("HTTP {}", fetched.status),
            waited,
        ))
        .await?;
        return Ok(failed);
    }
    let redirected_to_seen = fetched.url != task.url
        && !state
            .visited
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(fetched.url.clone());
    if redirected_to_seen {
        debug!(to = %fetched.url, "redirects to a sitemap already walked");
        emit.send(WalkEvent::ChildrenSkipped {
            site: task.site.clone(),
            parent: task.parent.clone().unwrap_or_else(|| (*task.site).clone()),
            reason: super::SkipReason::Seen,
            count: 1,
            example: task.url.clone(),
        })
        .await?;
        return Ok(Outcome::Quiet);
    }
    let mut report = SitemapReport {
        site: task.site.clone(),
        url: task.url.clone(),
        final_url: fetched.url.clone(),
        parent: task.parent.clone(),
        depth: task.depth,
        via: task.via,
        status: fetched.status,
        not_modified: fetched.not_modified(),
        validators: fetched.validators.clone(),
        redirects: fetched.redirects.clone(),
        attempts: fetched.attempts,
        bytes: 0,
        summary: None,
        cut: None,
        children: Vec::new(),
        duration: Default::default(),
        waited,
    };
    if fetched.not_modified() {
        report.duration = started.elapsed().saturating_sub(waited);
        emit.send(WalkEvent::SitemapFetched(Box::new(report)))
            .await?;
        return Ok(Outcome::Read {
            entries: 0,
            bytes: 0,
            children: as_refs(remembered.children),
        });
    }

    let mut authorised = task.authorised.to_vec();
    // A redirect to another origin: the origin that redirected vouched for
    // the target, as its robots.txt would have.
    if fetched.url.origin() != task.url.origin() {
        authorised.push(task.url.root());
    }
    let options = ParseOptions {
        document_url: Some(fetched.url.clone()),
        authorized_origins: authorised,
        ..walker.config.parse.clone()
    };
    let progress = fetched.progress();
    let source = Arc::new(task.url.clone());
    let mut events = parse_async(fetched.into_body(), options);
    let mut children = Vec::new();
    let mut entries = 0;
    while let Some(event) = events.next().await {
        match event {
            Event::Url(entry) => {
                entries += 1;
                emit.send(WalkEvent::Entry {
                    sitemap: source.clone(),
                    entry,
                })
                .await?;
            }
            Event::Sitemap(child) => children.push(child),
            Event::Diagnostic(diagnostic) => {
                emit.send(WalkEvent::Diagnostic {
                    sitemap: source.clone(),
                    diagnostic,
                })
                .await?;
            }
            // An event a later parser adds: nothing the walk forwards.
            _ => {}
        }
    }
    let summary = events.summary().cloned();
    report.bytes = progress.bytes();
    report.cut = progress.error();
    report.duration = started.elapsed().saturating_sub(waited);
    let is_sitemap = summary.as_ref().is_some_and(|s| s.format.is_some());
    if !is_sitemap {
        // An HTML page (a soft 404, a login wall) answered with 200.
        // Or a body cut before its format could be told.
        let why = report
            .cut
            .as_ref()
            .map_or_else(|| "not a sitemap".to_string(), ToString::to_string);
        emit.send(fail(Some(report.status), why, waited)).await?;
        return Ok(failed);
    }
    report.summary = summary;
    report.children = listed(&children);
    let bytes = report.bytes;
    emit.send(WalkEvent::SitemapFetched(Box::new(report)))
        .await?;
    Ok(Outcome::Read {
        entries,
        bytes,
        children,
    })
}

/// Remembered children as the refs an index would list (no lastmod: I3
/// cannot skip them).
fn as_refs(children: Vec<NormUrl>) -> Vec<SitemapRef> {
    children
        .into_iter()
        .map(|loc| SitemapRef { loc, lastmod: None })
        .collect()
}

/// The children an index listed, for its report: in document order, each
/// once, at most [`MAX_REPORTED_CHILDREN`].
fn listed(children: &[SitemapRef]) -> Vec<NormUrl> {
    let mut seen = HashSet::new();
    children
        .iter()
        .filter(|c| seen.insert(&c.loc))
        .take(MAX_REPORTED_CHILDREN)
        .map(|c| c.loc.clone())
        .collect()
}
