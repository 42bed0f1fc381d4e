//! One site: robots.txt, then its sitemaps breadth first (or the probes),
//! children through the depth, cycle, cap and I3 checks.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use sitemapd_parser::{NormUrl, SitemapRef};
use tokio::time::Instant;
use tracing::{Instrument, debug, info_span};

use super::event::{SiteTotals, SkipReason, Via, WalkEvent};
use super::sitemap::{Outcome, SiteState, Task, walk_sitemap};
use super::{Closed, Emit, Remembered, Seed, Walker};
use crate::robots::RobotsOutcome;

/// Walks one seed to its end; a closed consumer ends it early.
pub(super) async fn walk_site(walker: Walker, seed: Seed, emit: Emit) {
    let span = info_span!("site", seed = %seed.url());
    let _ = run(walker, seed, emit).instrument(span).await;
}

async fn run(walker: Walker, seed: Seed, emit: Emit) -> Result<(), Closed> {
    let started = Instant::now();
    let config = walker.config.clone();
    let site_url = Arc::new(seed.url().clone());
    let mut totals = SiteTotals::new(seed.url().clone());
    let mut queue: VecDeque<Task> = VecDeque::new();
    match &seed {
        Seed::Sitemap(url) => {
            queue.push_back(Task::top(&site_url, url.clone(), Via::Seed, Vec::new()))
        }
        Seed::Site(site) => {
            let robots_url = site
                .root()
                .join("/robots.txt")
                .unwrap_or_else(|_| site.root());
            let report = walker
                .robots
                .report(&walker.fetcher, config.robots_ttl, &robots_url)
                .await;
            let robots = match &report.outcome {
                RobotsOutcome::Parsed { robots } => Some(robots.clone()),
                _ => None,
            };
            let unreachable = matches!(report.outcome, RobotsOutcome::Unreachable { .. });
            let from_cache = report.from_cache;
            let declared = report.sitemaps.clone();
            let robots_at = report.url.clone();
            emit.send(WalkEvent::Robots(report)).await?;
            // R5: a sitemap listed in this robots.txt may list this host's URLs.
            let authorised = vec![site.root()];
            let cap = config.max_sitemaps_per_site;
            for url in declared.iter().take(cap) {
                queue.push_back(Task::top(
                    &site_url,
                    url.clone(),
                    Via::Robots,
                    authorised.clone(),
                ));
            }
            if let Some(example) = declared.get(cap) {
                emit.send(WalkEvent::ChildrenSkipped {
                    site: site_url.clone(),
                    parent: robots_at,
                    reason: SkipReason::Cap,
                    count: (declared.len() - cap) as u64,
                    example: example.clone(),
                })
                .await?;
            }
            if queue.is_empty() && config.probe && !unreachable {
                // R6: probing is our own initiative, so robots.txt rules apply.
                for url in config.probe_paths.iter().filter_map(|p| site.join(p).ok()) {
                    // robots.txt unchanged since an earlier walk probed: only
                    // the paths that were sitemaps then (the memory knows
                    // them) are worth a request.
                    let remembered = from_cache.then(|| walker.remembers(&url)).flatten();
                    if from_cache && remembered.is_none() {
                        debug!(%url, "robots.txt from the cache: probe not remembered, skipped");
                        continue;
                    }
                    if robots.as_ref().is_some_and(|r| !r.is_allowed(&url)) {
                        emit.send(WalkEvent::ProbeMissed {
                            site: site_url.clone(),
                            url,
                            reason: "disallowed by robots.txt".into(),
                        })
                        .await?;
                    } else {
                        let mut task = Task::top(&site_url, url, Via::Probe, Vec::new());
                        task.remembered = remembered;
                        queue.push_back(task);
                    }
                }
            }
        }
    }
    let state = SiteState {
        visited: Mutex::new(queue.iter().map(|t| t.url.clone()).collect()),
    };
    let mut running = FuturesUnordered::new();
    let limit = config.sitemap_concurrency.max(1);
    loop {
        while running.len() < limit {
            let Some(task) = queue.pop_front() else { break };
            running.push(walk_sitemap(&walker, &state, task, &emit));
        }
        let Some(result) = running.next().await else {
            break;
        };
        let (task, outcome) = result?;
        match outcome {
            Outcome::Read {
                entries,
                bytes,
                children,
            } => {
                totals.sitemaps += 1;
                totals.entries += entries;
                totals.bytes += bytes;
                let queued = admit_children(&walker, &state, &task, children, &emit).await?;
                queue.extend(queued);
            }
            Outcome::NotDue { children } => {
                totals.not_due += 1;
                let queued = admit_children(&walker, &state, &task, children, &emit).await?;
                queue.extend(queued);
            }
            Outcome::Failed => totals.failed += 1,
            Outcome::Quiet => {}
        }
    }
    totals.duration = started.elapsed();
    emit.send(WalkEvent::SiteDone(totals)).await
}

/// Filters an index's children (depth, follow rule, seen, cap, I3) into tasks; reports
/// what was skipped, one event per reason. A child the memory marks not due
/// is admitted whatever I3 says: it will not be fetched, only descended
/// through.
async fn admit_children(
    walker: &Walker,
    state: &SiteState,
    parent: &Task,
    children: Vec<SitemapRef>,
    emit: &Emit,
) -> Result<Vec<Task>, Closed> {
    let config = &walker.config;
    let mut skipped: HashMap<SkipReason, (u64, NormUrl)> = HashMap::new();
    let mut admitted = Vec::new();
    {
        let mut visited = state.visited.lock().unwrap_or_else(|e| e.into_inner());
        for child in children {
            let reason = if parent.depth + 1 > config.max_depth {
                Some(SkipReason::Depth)
            } else if config
                .follow
                .as_ref()
                .is_some_and(|follow| !follow(&child.loc))
            {
                Some(SkipReason::NotFollowed)
            } else if visited.contains(&child.loc) {
                Some(SkipReason::Seen)
            } else if visited.len() >= config.max_sitemaps_per_site {
                Some(SkipReason::Cap)
            } else {
                None
            };
            // Asked once per child: for I3 here, for conditional GET later.
            let remembered = match reason {
                None => walker.recall(&child.loc),
                Some(_) => Remembered::default(),
            };
            let reason = reason.or_else(|| {
                (!remembered.not_due && not_changed(&remembered, &child))
                    .then_some(SkipReason::NotChanged)
            });
            match reason {
                Some(reason) => {
                    skipped.entry(reason).or_insert((0, child.loc.clone())).0 += 1;
                }
                None => {
                    visited.insert(child.loc.clone());
                    admitted.push(parent.child(child.loc, remembered));
                }
            }
        }
    }
    for (reason, (count, example)) in skipped {
        emit.send(WalkEvent::ChildrenSkipped {
            site: parent.site.clone(),
            parent: parent.url.clone(),
            reason,
            count,
            example,
        })
        .await?;
    }
    Ok(admitted)
}

/// I3: the index says the child has not changed since we last fetched it.
fn not_changed(remembered: &Remembered, child: &SitemapRef) -> bool {
    let (Some(fetched_at), Some(lastmod)) = (remembered.fetched_at, child.lastmod) else {
        return false;
    };
    let fetched = match fetched_at.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(_) => return false,
    };
    // `2024-05-01` says "some time that day": skip only when the whole
    // period the lastmod names ended before our fetch.
    lastmod.latest() < fetched
}
