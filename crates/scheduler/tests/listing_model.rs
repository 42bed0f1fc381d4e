//! Reads of sitemaps against a model of the merge and retirement rules:
//! whatever mix of complete, cut, failed and not-modified reads, of
//! unchanged and changed lists, in sessions of one or several sitemaps,
//! each URL's retirement, last sighting, lastmod and priority are what the
//! rules say (a read that lists a URL unchanged leaves its record as it
//! was, so these rest on the sitemaps' reads, not on its record alone).

use std::collections::{BTreeMap, HashMap};

use sitemapd_parser::date::Precision;
use sitemapd_parser::{Lastmod, NormUrl, UrlEntry};
use sitemapd_scheduler::{SitemapFetch, Store, StoreOptions, Timestamp};

mod model;
use model::Rng;

const T0: i64 = 1_700_000_000;
const DAY: i64 = 86_400;
/// The store's default `retire_after`.
const K: usize = 3;
/// Complete reads a sitemap remembers.
const RECENT: usize = 8;

/// Three sitemaps on two hosts; the third lists URLs of the first's host
/// too (member keys, and with partitions another partition).
const SITEMAPS: [&str; 3] = [
    "https://a.example/s1.xml",
    "https://a.example/s2.xml",
    "https://b.example/s3.xml",
];

fn pool() -> Vec<String> {
    let mut urls = Vec::new();
    for base in ["https://a.example", "https://b.example", "https://c.org"] {
        for i in 0..14 {
            urls.push(format!("{base}/p{i}"));
        }
    }
    urls
}

/// One listed entry: its URL, priority and lastmod (days before `T0`).
#[derive(Debug, Clone, PartialEq)]
struct Listed {
    url: String,
    priority: Option<f32>,
    lastmod: Option<i64>,
}

fn entry(l: &Listed) -> UrlEntry {
    let mut e = UrlEntry::new(NormUrl::parse(&l.url).unwrap());
    e.priority = l.priority;
    e.lastmod = l.lastmod.map(|at| Lastmod {
        unix_seconds: at,
        nanos: 0,
        precision: Precision::Second,
    });
    e
}

#[derive(Debug, Default)]
struct SitemapModel {
    seq: u64,
    recent: Vec<u64>,
    /// What it lists now.
    list: Vec<Listed>,
}

#[derive(Debug, Clone, PartialEq)]
struct UrlModel {
    /// The last read of each sitemap that listed it.
    sources: BTreeMap<usize, u64>,
    retired: bool,
    last_seen: i64,
    /// The session that last listed it.
    session: i64,
    priority: Option<f32>,
    lastmod: Option<i64>,
}

fn max_priority(a: Option<f32>, b: Option<f32>) -> Option<f32> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

#[derive(Debug, Default)]
struct Model {
    sitemaps: [SitemapModel; 3],
    urls: HashMap<String, UrlModel>,
}

impl Model {
    fn absences(&self, s: usize, last: u64) -> usize {
        self.sitemaps[s]
            .recent
            .iter()
            .filter(|q| **q > last)
            .count()
    }

    /// An entry of the read of sitemap `s` in progress at `now`.
    fn listed(&mut self, s: usize, now: i64, l: &Listed) {
        let q = self.sitemaps[s].seq + 1;
        let m = self.urls.entry(l.url.clone()).or_insert(UrlModel {
            sources: BTreeMap::new(),
            retired: false,
            last_seen: now,
            session: i64::MIN,
            priority: None,
            lastmod: None,
        });
        m.retired = false;
        m.priority = match m.session == now {
            true => max_priority(m.priority, l.priority),
            false => l.priority,
        };
        m.session = now;
        m.lastmod = m.lastmod.max(l.lastmod);
        m.last_seen = now;
        m.sources.insert(s, q);
    }

    /// The end of a 2xx read of sitemap `s` that listed `entries`.
    fn read(&mut self, s: usize, entries: &[Listed], complete: bool) {
        self.sitemaps[s].seq += 1;
        let q = self.sitemaps[s].seq;
        if !complete {
            return;
        }
        let recent = &mut self.sitemaps[s].recent;
        recent.push(q);
        if recent.len() > RECENT {
            recent.remove(0);
        }
        let listed: Vec<&str> = entries.iter().map(|l| l.url.as_str()).collect();
        let absent: Vec<String> = self
            .urls
            .iter()
            .filter(|(u, m)| {
                !m.retired && m.sources.contains_key(&s) && !listed.contains(&u.as_str())
            })
            .map(|(u, _)| u.clone())
            .collect();
        for u in absent {
            let m = &self.urls[&u];
            if m.sources
                .iter()
                .all(|(t, last)| self.absences(*t, *last) >= K)
            {
                self.urls.get_mut(&u).unwrap().retired = true;
            }
        }
    }
}

/// Changes a sitemap's list a little: drops, adds, new values.
fn mutate(rng: &mut Rng, list: &mut Vec<Listed>, pool: &[String], s: usize) {
    let priorities = [None, Some(0.2), Some(0.5), Some(0.8)];
    for _ in 0..1 + rng.below(3) {
        match rng.below(3) {
            0 if !list.is_empty() => {
                let i = rng.below(list.len() as u64) as usize;
                list.remove(i);
            }
            1 => {
                // Its own host's URLs mostly; the third sitemap any.
                let url = &pool[match s {
                    2 => rng.below(pool.len() as u64) as usize,
                    _ => rng.below(14) as usize,
                }];
                if !list.iter().any(|l| &l.url == url) {
                    list.push(Listed {
                        url: url.clone(),
                        priority: priorities[rng.below(4) as usize],
                        lastmod: Some(T0 - 30 * DAY + rng.below(10) as i64 * DAY),
                    });
                }
            }
            _ if !list.is_empty() => {
                let i = rng.below(list.len() as u64) as usize;
                let l = &mut list[i];
                match rng.chance(50) {
                    true => l.priority = priorities[rng.below(4) as usize],
                    false => l.lastmod = Some(T0 - 20 * DAY + rng.below(15) as i64 * DAY),
                }
            }
            _ => {}
        }
    }
}

/// The end of a read, in the store and the model.
fn end(
    ingest: &mut sitemapd_scheduler::Ingest<'_>,
    model: &mut Model,
    (i, fetch, list, reported): &(usize, SitemapFetch, Vec<Listed>, bool),
) {
    if !reported {
        return;
    }
    ingest.sitemap_fetched(SITEMAPS[*i], fetch).unwrap();
    if fetch.status == 200 {
        model.read(*i, list, fetch.complete);
    }
}

fn run(seed: u64, partitions: u16) {
    let mut rng = Rng(seed);
    let pool = pool();
    let s = Store::in_memory(StoreOptions {
        partitions,
        ..StoreOptions::default()
    })
    .unwrap();
    let mut model = Model::default();
    for (i, sm) in model.sitemaps.iter_mut().enumerate() {
        for _ in 0..6 {
            mutate(&mut rng, &mut sm.list, &pool, i);
        }
    }
    for step in 0..40 {
        let now = T0 + step * DAY;
        let mut ingest = s
            .ingest(Timestamp::from_unix(now))
            .with_batch(1 + rng.below(12) as usize);
        let mut order: Vec<usize> = (0..3).filter(|_| rng.chance(60)).collect();
        if rng.chance(50) {
            order.reverse();
        }
        // Their entries interleaved, as reads side by side give them, the
        // ends after; or one read after another, a sitemap sometimes twice.
        let interleaved = rng.chance(50);
        if !interleaved && !order.is_empty() && rng.chance(20) {
            order.push(order[rng.below(order.len() as u64) as usize]);
        }
        // Each read: its sitemap, how it ends, what it lists, whether its
        // end is reported (one that is not ends with the session).
        let mut reads: Vec<(usize, SitemapFetch, Vec<Listed>, bool)> = Vec::new();
        for &i in &order {
            if rng.chance(25) {
                let list = &mut model.sitemaps[i].list;
                mutate(&mut rng, list, &pool, i);
            }
            let mut list = model.sitemaps[i].list.clone();
            let (status, complete) = match rng.below(100) {
                0..=59 => (200, true),
                60..=74 => {
                    list.truncate(rng.below(list.len() as u64 + 1) as usize);
                    (200, false)
                }
                75..=84 => (503, false),
                _ => (304, false),
            };
            if status != 200 {
                list.clear();
            } else if !list.is_empty() && rng.chance(10) {
                // An entry listed twice, the second time with a priority.
                let mut again = list[rng.below(list.len() as u64) as usize].clone();
                again.priority = Some(0.3);
                list.push(again);
            }
            let fetch = SitemapFetch {
                status,
                complete,
                ..SitemapFetch::default()
            };
            let once = order.iter().filter(|&&o| o == i).count() == 1;
            let reported = !(once && status == 200 && rng.chance(10));
            reads.push((i, fetch, list, reported));
        }
        let mut next = vec![0; reads.len()];
        for first in 0..reads.len() {
            let from = if interleaved { 0 } else { first };
            while let Some(r) = {
                let open: Vec<usize> = (from..reads.len())
                    .filter(|&r| next[r] < reads[r].2.len())
                    .take(if interleaved { reads.len() } else { 1 })
                    .collect();
                (!open.is_empty()).then(|| open[rng.below(open.len() as u64) as usize])
            } {
                let (i, _, list, _) = &reads[r];
                let l = &list[next[r]];
                next[r] += 1;
                ingest.entry(SITEMAPS[*i], &entry(l)).unwrap();
                model.listed(*i, now, l);
            }
            if !interleaved {
                end(&mut ingest, &mut model, &reads[first]);
            }
        }
        if interleaved {
            for read in &reads {
                end(&mut ingest, &mut model, read);
            }
        }
        ingest.finish().unwrap();
        for (i, _, list, reported) in &reads {
            // Ended with the session, as a cut read: its entries took the
            // next sequence.
            if !reported && !list.is_empty() {
                model.read(*i, list, false);
            }
        }
        if rng.chance(5) {
            let host = ["a.example", "b.example", "c.org"][rng.below(3) as usize];
            let key = NormUrl::parse(&format!("https://{host}/"))
                .unwrap()
                .host_key();
            s.retire_host(&key).unwrap();
            let prefix = format!("https://{host}/");
            for (url, m) in &mut model.urls {
                m.retired |= url.starts_with(&prefix);
            }
        }
        let context = format!("seed {seed}, {partitions} partitions, step {step}");
        assert!(s.check().unwrap().is_ok(), "{context}");
        let exported: HashMap<String, i64> = s
            .export()
            .map(|v| {
                let v = v.unwrap();
                (v.url.clone(), v.last_seen.unix())
            })
            .collect();
        assert_eq!(exported.len(), model.urls.len(), "{context}");
        for (url, m) in &model.urls {
            let v = s.url(url).unwrap().unwrap();
            assert_eq!(v.retired, m.retired, "{context}: {url} retired");
            assert_eq!(
                v.last_seen.unix(),
                m.last_seen,
                "{context}: {url} last seen"
            );
            assert_eq!(exported[url], m.last_seen, "{context}: {url} exported");
            assert_eq!(v.priority, m.priority, "{context}: {url} priority");
            assert_eq!(
                v.lastmod.map(|t| t.unix()),
                m.lastmod,
                "{context}: {url} lastmod"
            );
        }
        let retired = model.urls.values().filter(|m| m.retired).count() as u64;
        assert_eq!(
            s.stats(Timestamp::from_unix(now)).unwrap().retired,
            retired,
            "{context}"
        );
    }
}

#[test]
fn reads_of_every_kind_keep_the_rules_in_one_partition() {
    for seed in 0..24 {
        run(seed, 1);
    }
}

#[test]
fn reads_of_every_kind_keep_the_rules_in_four_partitions() {
    for seed in 100..124 {
        run(seed, 4);
    }
}

/// A URL two sitemaps list with two priorities keeps the higher while
/// both go on listing it, though the first read of each session leaves
/// its record as it was.
#[test]
fn a_session_of_unchanged_reads_keeps_the_highest_priority() {
    let s = Store::in_memory(StoreOptions::default()).unwrap();
    let listed = |priority| Listed {
        url: "https://a.example/p0".into(),
        priority: Some(priority),
        lastmod: None,
    };
    for day in 0..3 {
        let mut ingest = s.ingest(Timestamp::from_unix(T0 + day * DAY));
        for (sitemap, priority) in [(SITEMAPS[0], 0.8), (SITEMAPS[1], 0.2)] {
            ingest.entry(sitemap, &entry(&listed(priority))).unwrap();
            let fetch = SitemapFetch {
                status: 200,
                complete: true,
                ..SitemapFetch::default()
            };
            ingest.sitemap_fetched(sitemap, &fetch).unwrap();
        }
        ingest.finish().unwrap();
        let view = s.url("https://a.example/p0").unwrap().unwrap();
        assert_eq!(view.priority, Some(0.8), "day {day}");
        assert_eq!(view.last_seen.unix(), T0 + day * DAY, "day {day}");
    }
}
