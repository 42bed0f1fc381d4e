//! The sitemap tree of `sitemapd discover`: per site, robots.txt, then each
//! sitemap under the index that listed it, with status, entries, bytes and
//! time; probes and skipped children; totals per site and overall.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use sitemapd_discovery::fetch::{is_refusal, is_tls_failure};
use sitemapd_discovery::walk::{RobotsOutcome, SitemapFailure, SitemapReport, SkipReason};
use sitemapd_discovery::{Seed, WalkEvent};
use sitemapd_parser::NormUrl;

use super::words::{bytes, plural};

/// Collects a site's events and prints its tree when the site is done.
#[derive(Default)]
pub(crate) struct Tree {
    sites: HashMap<NormUrl, SiteTree>,
    totals: Totals,
    /// Seeds given without a scheme (tried as `https://`).
    schemeless: HashSet<NormUrl>,
}

#[derive(Default)]
struct SiteTree {
    robots: Option<String>,
    nodes: Vec<Node>,
    notes: Vec<String>,
    /// A fetch of the site failed its TLS handshake.
    tls_failed: bool,
}

/// What a robots.txt that could not be read means: a refusal by the
/// address guard (nothing to wait for), or unreachable (try later).
pub(crate) fn robots_unreachable(reason: &str) -> String {
    if is_refusal(reason) {
        format!("not fetched: {reason}")
    } else {
        format!("unreachable, try later (RFC 9309: assume nothing allowed): {reason}")
    }
}

enum Node {
    Read(Box<SitemapReport>),
    Failed(SitemapFailure),
    NotDue {
        url: NormUrl,
        parent: Option<NormUrl>,
    },
}

impl Node {
    fn url(&self) -> &NormUrl {
        match self {
            Node::Read(r) => &r.url,
            Node::Failed(f) => &f.url,
            Node::NotDue { url, .. } => url,
        }
    }

    fn parent(&self) -> Option<&NormUrl> {
        match self {
            Node::Read(r) => r.parent.as_ref(),
            Node::Failed(f) => f.parent.as_ref(),
            Node::NotDue { parent, .. } => parent.as_ref(),
        }
    }
}

#[derive(Default)]
struct Totals {
    sites: u64,
    sites_without_sitemap: u64,
    sitemaps: u64,
    failed: u64,
    entries: u64,
    bytes: u64,
}

impl Tree {
    /// A tree for a walk of `seeds`, given as `inputs` (to tell the seeds
    /// given without a scheme, tried as `https://`, whose TLS failure
    /// suggests `http://`).
    pub(crate) fn for_seeds<S: AsRef<str>>(inputs: &[S], seeds: &[Seed]) -> Tree {
        let schemeless = inputs
            .iter()
            .zip(seeds)
            .filter(|(input, _)| !input.as_ref().contains("://"))
            .map(|(_, seed)| seed.url().clone())
            .collect();
        Tree {
            schemeless,
            ..Tree::default()
        }
    }

    /// Records one event; prints a site's tree to `out` when it is done.
    pub(crate) fn record(&mut self, event: &WalkEvent, out: &mut impl Write) -> Result<()> {
        match event {
            WalkEvent::Robots(r) => {
                let line = match &r.outcome {
                    RobotsOutcome::Parsed { .. } => format!(
                        "robots.txt {}: {} sitemap{}{}{}",
                        r.status.unwrap_or(200),
                        r.sitemaps.len(),
                        plural(r.sitemaps.len() as u64),
                        r.crawl_delay
                            .map(|d| format!(", crawl-delay {d} s"))
                            .unwrap_or_default(),
                        match r.diagnostics.len() {
                            0 => String::new(),
                            n => format!(", {n} diagnostic{}", plural(n as u64)),
                        }
                    ),
                    RobotsOutcome::Unavailable => format!(
                        "robots.txt {}: unavailable (no rules, no sitemaps)",
                        r.status.map_or("-".into(), |s| s.to_string())
                    ),
                    RobotsOutcome::Unreachable { reason } => {
                        self.site(&r.site).tls_failed |= is_tls_failure(reason);
                        format!("robots.txt {}", robots_unreachable(reason))
                    }
                };
                self.site(&r.site).robots = Some(line);
            }
            WalkEvent::SitemapFetched(r) => {
                self.site(&r.site).nodes.push(Node::Read(r.clone()));
            }
            WalkEvent::SitemapFailed(f) => {
                let site = self.site(&f.site);
                site.tls_failed |= is_tls_failure(&f.error);
                site.nodes.push(Node::Failed(f.clone()));
            }
            WalkEvent::NotDue {
                site, url, parent, ..
            } => {
                self.site(site).nodes.push(Node::NotDue {
                    url: url.clone(),
                    parent: parent.clone(),
                });
            }
            WalkEvent::ProbeMissed { site, url, reason } => {
                let site = self.site(site);
                site.tls_failed |= is_tls_failure(reason);
                site.notes.push(format!("probe {url}: {reason}"));
            }
            WalkEvent::ChildrenSkipped {
                site,
                parent,
                reason,
                count,
                example,
            } => {
                let why = match reason {
                    SkipReason::Depth => "deeper than --max-depth",
                    SkipReason::Cap => "over --max-sitemaps",
                    SkipReason::NotFollowed => "not taken by --follow",
                    other => other.describe(),
                };
                self.site(site).notes.push(format!(
                    "skipped {count} child{} of {parent}: {why} (e.g. {example})",
                    if *count == 1 { "" } else { "ren" }
                ));
            }
            WalkEvent::SiteDone(t) => {
                let tree = self.sites.remove(&t.site).unwrap_or_default();
                self.totals.sites += 1;
                self.totals.sitemaps += t.sitemaps;
                self.totals.failed += t.failed;
                self.totals.entries += t.entries;
                self.totals.bytes += t.bytes;
                if t.sitemaps == 0 {
                    self.totals.sites_without_sitemap += 1;
                }
                writeln!(out, "{}", t.site)?;
                if let Some(robots) = &tree.robots {
                    writeln!(out, "  {robots}")?;
                }
                print_nodes(&tree.nodes, out)?;
                if let Some(why) = &t.aborted {
                    writeln!(out, "  ABORTED: {why}")?;
                }
                for note in &tree.notes {
                    writeln!(out, "  {note}")?;
                }
                if tree.tls_failed && self.schemeless.contains(&t.site) {
                    let http = t.site.as_str().replacen("https://", "http://", 1);
                    writeln!(
                        out,
                        "  hint: given without a scheme, it was tried as https:// and TLS failed; if the site serves plain HTTP, give {http}"
                    )?;
                }
                let counts = counts(t.sitemaps, t.failed, t.entries, t.bytes, t.duration);
                writeln!(out, "  total: {counts}")?;
            }
            WalkEvent::Entry { .. } | WalkEvent::Diagnostic { .. } => {}
            _ => {}
        }
        Ok(())
    }

    fn site(&mut self, site: &NormUrl) -> &mut SiteTree {
        self.sites.entry(site.clone()).or_default()
    }

    /// Sites done with no sitemap read.
    pub(crate) fn sites_without_sitemap(&self) -> u64 {
        self.totals.sites_without_sitemap
    }

    /// Prints the overall totals.
    pub(crate) fn finish(&self, elapsed: Duration, out: &mut impl Write) -> Result<()> {
        let t = &self.totals;
        let counts = counts(t.sitemaps, t.failed, t.entries, t.bytes, elapsed);
        writeln!(out, "total: {} site{}, {counts}", t.sites, plural(t.sites))?;
        Ok(())
    }
}

/// Prints nodes depth first under their parents, in the order they finished.
fn print_nodes(nodes: &[Node], out: &mut impl Write) -> Result<()> {
    let index: HashMap<&NormUrl, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.url(), i))
        .collect();
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        match node.parent().and_then(|p| index.get(p)) {
            Some(&p) if p != i => children.entry(p).or_default().push(i),
            _ => roots.push(i),
        }
    }
    // An explicit stack: the depth is bounded by --max-depth, but a stack
    // costs nothing and cannot overflow.
    let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&i| (i, 1)).collect();
    let mut printed = vec![false; nodes.len()];
    while let Some((i, depth)) = stack.pop() {
        if std::mem::replace(&mut printed[i], true) {
            continue;
        }
        writeln!(out, "{}{}", "  ".repeat(depth), describe(&nodes[i]))?;
        if let Some(kids) = children.get(&i) {
            stack.extend(kids.iter().rev().map(|&k| (k, depth + 1)));
        }
    }
    Ok(())
}

fn describe(node: &Node) -> String {
    match node {
        Node::Failed(f) => format!(
            "{}  FAILED: {} ({}{})",
            f.url,
            f.error,
            duration(f.duration),
            waited(f.waited)
        ),
        Node::NotDue { url, .. } => format!("{url}  not due"),
        Node::Read(r) => {
            let mut s = format!("{}  {}", r.url, r.status);
            if r.not_modified {
                s.push_str(" not modified");
            }
            if let Some(summary) = &r.summary {
                let format = summary.format.map_or("not a sitemap", |f| f.as_str());
                s.push_str(&format!(" {format}"));
                if summary.sitemaps > 0 {
                    s.push_str(&format!(
                        " {} sitemap{}",
                        summary.sitemaps,
                        plural(summary.sitemaps)
                    ));
                }
                if summary.urls > 0 || summary.sitemaps == 0 {
                    s.push_str(&format!(" {} url{}", summary.urls, plural(summary.urls)));
                }
                if summary.gzip_layers > 0 {
                    s.push_str(" gzip");
                }
                let diagnostics: u64 = summary.diagnostics.values().sum();
                if diagnostics > 0 {
                    s.push_str(&format!(" {diagnostics} diagnostic{}", plural(diagnostics)));
                }
                if !summary.complete {
                    s.push_str(" INCOMPLETE");
                }
            }
            s.push_str(&format!(
                ", {}, {}{}",
                bytes(r.bytes),
                duration(r.duration),
                waited(r.waited)
            ));
            if let Some(cut) = &r.cut {
                s.push_str(&format!(", cut: {cut}"));
            }
            if !r.redirects.is_empty() {
                let last = r
                    .redirects
                    .last()
                    .map(|h| h.to.as_str())
                    .unwrap_or_default();
                s.push_str(&format!(
                    ", {} redirect{} to {last}",
                    r.redirects.len(),
                    plural(r.redirects.len() as u64)
                ));
            }
            if r.attempts > 1 {
                s.push_str(&format!(", {} attempts", r.attempts));
            }
            s
        }
    }
}

/// `3 sitemaps read, 1 failed, 40 urls, 2.0 KiB, 12 ms`.
fn counts(sitemaps: u64, failures: u64, urls: u64, received: u64, took: Duration) -> String {
    format!(
        "{sitemaps} sitemap{}{}, {urls} url{}, {}, {}",
        plural(sitemaps),
        failed(failures),
        plural(urls),
        bytes(received),
        duration(took)
    )
}

fn failed(n: u64) -> String {
    if n == 0 {
        " read".into()
    } else {
        format!(" read, {n} failed")
    }
}

/// `, waited 2.0 s`: the time a fetch spent waiting for the host's
/// politeness gate (minimum delay, robots.txt `Crawl-delay`), shown apart
/// from the fetch's own time; nothing under a millisecond.
fn waited(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        String::new()
    } else {
        format!(", waited {}", duration(d))
    }
}

fn duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
