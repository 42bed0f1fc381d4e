//! A reference model of the crawl queue as docs/queue.md states it: the
//! order (urgency class, then due time, queue, host, score, the sitemap's
//! rank, URL), the passes of a lease (paid validation samples, pushes, paid
//! announced changes, announced and changed together, refreshes) and its
//! limits (per host, per queue, hosts and queues at most, robots.txt,
//! politeness), written plainly: every due URL sorted, then taken one by
//! one. It knows nothing of the store's index; it learns each URL's state
//! from the store's views ([`Model::sync_url`]) and predicts what a lease or
//! a peek hands out. The tests of the library (tests/queue_model.rs) and of
//! the daemon (its HTTP API and URLFrontier service) drive both and compare.

#![allow(dead_code)] // each test binary uses part of it

use std::collections::{BTreeMap, HashMap, HashSet};

/// SplitMix64: the seeded stream of numbers the tests draw their steps
/// from.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True `percent` times in a hundred.
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One of `items`.
    pub(crate) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// The classes, as the views name them, in the order of their bytes.
pub(crate) const CLASSES: [&str; 5] = ["pushed", "announced", "changed", "refresh", "validation"];
const PUSHED: u8 = 0;
const ANNOUNCED: u8 = 1;
const CHANGED: u8 = 2;
const REFRESH: u8 = 3;
const VALIDATION: u8 = 4;

/// What the model knows of one URL.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Url {
    pub queue: String,
    pub host: String,
    pub class: u8,
    /// The due time it is queued at (a lease does not move it).
    pub due: i64,
    pub score: f32,
    pub priority: Option<f32>,
    pub lastmod: Option<i64>,
    /// In the due index: queued, gone or moved.
    pub queued: bool,
    /// Its lease's expiry, if it holds one (run out or not).
    pub lease: Option<i64>,
    /// Why it is due, as its view said when no lease hid it.
    pub reason: String,
}

/// What the model knows of one host.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Host {
    pub next_allowed: i64,
    pub trusted: bool,
    pub probation: bool,
    /// Its robots.txt: the path prefixes it disallows, and its
    /// Crawl-delay.
    pub disallow: Vec<String>,
    pub crawl_delay: Option<f64>,
}

/// How a lease spaces a host's URLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spacing {
    /// Over the lease's time to live.
    Spaced,
    /// What may be fetched at once.
    Now,
}

/// A lease asked of the model.
#[derive(Debug, Clone)]
pub(crate) struct Ask {
    pub n: usize,
    pub per_host: usize,
    pub max_hosts: usize,
    pub max_queues: usize,
    pub ttl: i64,
    pub spacing: Spacing,
    /// One queue only.
    pub queue: Option<String>,
    /// URLs each queue may be given at most (absent: `queue_cap`).
    pub per_queue: HashMap<String, usize>,
    /// URLs a queue may be given at most when `per_queue` does not say.
    pub queue_cap: usize,
}

/// A URL a lease hands out, as the model predicts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Handed {
    pub url: String,
    pub queue: String,
    pub not_before: i64,
    /// A lease of it ran out before.
    pub expired: bool,
    /// Handed out ahead of its turn, paid for by a credit.
    pub paid: bool,
}

/// The model: every URL and host it was told of, and the credits.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    pub urls: BTreeMap<String, Url>,
    pub hosts: BTreeMap<String, Host>,
    pub validation_credit: f64,
    pub announced_credit: f64,
    pub validation_share: f64,
    pub announced_share: f64,
    /// The store's lease delay, seconds.
    pub lease_delay: f64,
}

/// The longest Crawl-delay the store honours.
const MAX_CRAWL_DELAY: f64 = 30.0;

impl Model {
    pub(crate) fn new(lease_delay: f64, validation_share: f64, announced_share: f64) -> Model {
        Model {
            urls: BTreeMap::new(),
            hosts: BTreeMap::new(),
            validation_credit: 0.0,
            announced_credit: 0.0,
            validation_share,
            announced_share,
            lease_delay,
        }
    }

    /// What a view of `url` says: its state, but its due time while a
    /// lease holds it (the view shows when it is due again; the queue keeps
    /// its place).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sync_url(
        &mut self,
        url: &str,
        host: &str,
        queue: &str,
        urgency: &str,
        due: i64,
        score: f32,
        priority: Option<f32>,
        lastmod: Option<i64>,
        queued: bool,
        leased_until: Option<i64>,
        reason: &str,
    ) {
        let class = CLASSES
            .iter()
            .position(|c| *c == urgency)
            .unwrap_or_else(|| panic!("urgency {urgency}")) as u8;
        let known = self.urls.get(url);
        let (due, reason) = match (leased_until, known) {
            (Some(_), Some(k)) if k.lease.is_some() => (k.due, k.reason.clone()),
            _ => (due, reason.to_string()),
        };
        self.urls.insert(
            url.to_string(),
            Url {
                queue: queue.to_string(),
                host: host.to_string(),
                class,
                due,
                score,
                priority,
                lastmod,
                queued,
                lease: leased_until,
                reason,
            },
        );
    }

    /// The delay between two URLs of `host` handed out.
    fn delay(&self, host: &str) -> f64 {
        let configured = self.lease_delay;
        match self.hosts.get(host).and_then(|h| h.crawl_delay) {
            Some(d) if d.is_finite() && d > configured => d.min(MAX_CRAWL_DELAY).max(configured),
            _ => configured,
        }
    }

    fn step(&self, host: &str) -> i64 {
        self.delay(host).max(0.0).ceil() as i64
    }

    /// How many URLs `host` may be handed out now.
    fn allowance(&self, host: &str, now: i64, ttl: i64, spacing: Spacing) -> usize {
        let next = self.hosts.get(host).map_or(0, |h| h.next_allowed);
        let step = self.step(host);
        match spacing {
            Spacing::Now if next > now => 0,
            Spacing::Now if step == 0 => usize::MAX,
            Spacing::Now => 1,
            Spacing::Spaced => {
                let horizon = now + ttl;
                if next > horizon {
                    return 0;
                }
                if step == 0 {
                    return usize::MAX;
                }
                let in_ttl = ((ttl as f64 / self.delay(host)).floor() as usize).max(1);
                let until_expiry = ((horizon - next.max(now)) / step) as usize + 1;
                in_ttl.min(until_expiry)
            }
        }
    }

    fn allowed_by_robots(&self, url: &str, host: &str) -> bool {
        let path = url.split_once("://").map_or("/", |(_, rest)| {
            rest.find('/').map_or("/", |at| &rest[at..])
        });
        self.hosts
            .get(host)
            .is_none_or(|h| !h.disallow.iter().any(|p| path.starts_with(p.as_str())))
    }

    /// The queue order within a group of classes served together.
    fn sorted(&self, classes: &[u8], now: i64, queue: Option<&str>) -> Vec<&String> {
        let mut due: Vec<(&String, &Url)> = self
            .urls
            .iter()
            .filter(|(_, u)| {
                u.queued
                    && classes.contains(&u.class)
                    && u.due <= now
                    && u.lease.is_none_or(|until| until <= now)
                    && queue.is_none_or(|q| u.queue == q)
            })
            .collect();
        due.sort_by(|(a_url, a), (b_url, b)| {
            (a.due, &a.queue, &a.host, a.class)
                .cmp(&(b.due, &b.queue, &b.host, b.class))
                .then(b.score.total_cmp(&a.score))
                .then(rank(a, a_url).cmp(&rank(b, b_url)))
                .then(a_url.cmp(b_url))
        });
        due.into_iter().map(|(url, _)| url).collect()
    }

    /// The URLs a lease chooses in order, each with whether a credit paid
    /// for it; `None` for `ask`: a peek, with no limits.
    fn choose(&self, ask: Option<&Ask>, n: usize, now: i64) -> Vec<(String, bool)> {
        let queue = ask.and_then(|a| a.queue.as_deref());
        let samples = self.validation_credit.max(0.0).floor() as usize;
        let announced = self.announced_credit.max(0.0).floor() as usize;
        let mut choice = Choice {
            model: self,
            ask,
            now,
            chosen: Vec::new(),
            taken: HashSet::new(),
            hosts: HashMap::new(),
            queues: HashMap::new(),
        };
        choice.pass(&[PUSHED], queue, n, false);
        let paid = (choice.chosen.len() + samples).min(n);
        choice.pass(&[VALIDATION], queue, paid, true);
        let paid = (choice.chosen.len() + announced).min(n);
        choice.pass(&[ANNOUNCED], queue, paid, true);
        choice.pass(&[ANNOUNCED, CHANGED], queue, n, false);
        choice.pass(&[REFRESH], queue, n, false);
        if ask.is_none() {
            choice.pass(&[VALIDATION], queue, n, false);
        }
        choice.chosen
    }

    /// Whether `u`'s host still has the trust that made it urgent.
    fn trusted_enough(&self, u: &Url) -> bool {
        let host = self.hosts.get(&u.host).cloned().unwrap_or_default();
        match u.class {
            ANNOUNCED => host.trusted,
            CHANGED if u.reason == "lastmod-newer" => host.trusted || host.probation,
            _ => true,
        }
    }

    /// What `peek(n)` shows.
    pub(crate) fn peek(&self, n: usize, now: i64) -> Vec<String> {
        self.choose(None, n, now)
            .into_iter()
            .map(|(u, _)| u)
            .collect()
    }

    /// What a lease hands out, with the politeness clocks and credits it
    /// leaves; applied to the model.
    pub(crate) fn lease(&mut self, ask: &Ask, now: i64) -> Vec<Handed> {
        let chosen = self.choose(Some(ask), ask.n, now);
        let mut out = Vec::new();
        let (mut sampled, mut ahead) = (0usize, 0usize);
        for (url, paid) in chosen {
            let u = &self.urls[&url];
            let host = self.hosts.get(&u.host).cloned().unwrap_or_default();
            let not_before = host.next_allowed.max(now);
            let step = self.step(&u.host);
            // Fetched at once: the next slot counts from the end of this
            // second.
            let end_of_second = i64::from(ask.spacing == Spacing::Now && step > 0);
            self.hosts.entry(u.host.clone()).or_default().next_allowed =
                not_before + step + end_of_second;
            sampled += usize::from(paid && u.class == VALIDATION);
            ahead += usize::from(paid && u.class == ANNOUNCED);
            let expired = u.lease.is_some();
            out.push(Handed {
                queue: u.queue.clone(),
                not_before,
                expired,
                paid,
                url,
            });
        }
        for h in &out {
            if let Some(u) = self.urls.get_mut(&h.url) {
                u.lease = Some(now + ask.ttl.max(1));
            }
        }
        let n = out.len() as f64;
        self.validation_credit = (self.validation_credit - sampled as f64
            + self.validation_share.clamp(0.0, 1.0) * n)
            .clamp(0.0, 16.0);
        self.announced_credit = (self.announced_credit - ahead as f64
            + self.announced_share.clamp(0.0, 1.0) * n)
            .clamp(0.0, 1000.0);
        out
    }
}

/// The sitemap's order among URLs of one lane due at once with one score:
/// the highest priority first, the newest lastmod (none last), the shortest
/// URL.
fn rank(u: &Url, url: &str) -> (u8, bool, std::cmp::Reverse<i64>, usize) {
    let p = match u.priority {
        Some(p) if p > 0.0 => f64::from(p.min(1.0)),
        _ => 0.5,
    };
    let priority = 255 - (p * 250.0).round() as u8;
    (
        priority,
        u.lastmod.is_none(),
        std::cmp::Reverse(u.lastmod.unwrap_or(0)),
        url.len(),
    )
}

/// One lease's choice, pass by pass.
struct Choice<'m> {
    model: &'m Model,
    ask: Option<&'m Ask>,
    now: i64,
    chosen: Vec<(String, bool)>,
    taken: HashSet<String>,
    /// Per host and queue: (given, allowance).
    hosts: HashMap<String, (usize, usize)>,
    queues: HashMap<String, (usize, usize)>,
}

impl Choice<'_> {
    fn hosts_given(&self) -> (usize, usize) {
        let given = self.hosts.values().filter(|(g, _)| *g > 0);
        (given.clone().count(), given.filter(|(g, a)| g >= a).count())
    }

    fn queues_given(&self) -> (usize, usize) {
        let given = self.queues.values().filter(|(g, _)| *g > 0);
        (given.clone().count(), given.filter(|(g, a)| g >= a).count())
    }

    fn done(&self, limit: usize) -> bool {
        let Some(ask) = self.ask else {
            return self.chosen.len() >= limit;
        };
        let (hosts, hosts_full) = self.hosts_given();
        let (queues, queues_full) = self.queues_given();
        self.chosen.len() >= limit
            || (hosts >= ask.max_hosts.max(1) && hosts_full >= hosts)
            || (queues >= ask.max_queues.max(1) && queues_full >= queues)
    }

    fn pass(&mut self, classes: &[u8], queue: Option<&str>, limit: usize, paid: bool) {
        for url in self.model.sorted(classes, self.now, queue) {
            if self.done(limit) {
                return;
            }
            if self.taken.contains(url) {
                continue;
            }
            let u = &self.model.urls[url];
            if let Some(ask) = self.ask {
                let (queues, _) = self.queues_given();
                let (hosts, _) = self.hosts_given();
                let q = *self.queues.entry(u.queue.clone()).or_insert_with(|| {
                    (
                        0,
                        ask.per_queue
                            .get(&u.queue)
                            .copied()
                            .unwrap_or(ask.queue_cap),
                    )
                });
                if q.0 >= q.1 || (q.0 == 0 && queues >= ask.max_queues.max(1)) {
                    continue;
                }
                let allowance =
                    self.model
                        .allowance(&u.host, self.now, ask.ttl.max(1), ask.spacing);
                let h = *self
                    .hosts
                    .entry(u.host.clone())
                    .or_insert((0, allowance.min(ask.per_host.max(1))));
                if h.0 >= h.1 || (h.0 == 0 && hosts >= ask.max_hosts.max(1)) {
                    continue;
                }
            }
            if !self.model.allowed_by_robots(url, &u.host) {
                continue;
            }
            if self.ask.is_some() && !self.model.trusted_enough(u) {
                // Its host lost the trust that made it urgent: passed over
                // (the store reschedules it), no slot used.
                self.taken.insert(url.clone());
                continue;
            }
            if self.ask.is_some() {
                self.hosts.get_mut(&u.host).expect("looked at").0 += 1;
                self.queues.get_mut(&u.queue).expect("looked at").0 += 1;
            }
            self.taken.insert(url.clone());
            self.chosen.push((url.clone(), paid));
        }
    }
}
