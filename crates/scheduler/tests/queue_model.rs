//! The queue against its reference model (tests/model): random sequences
//! of sitemap reads, pushes, URL frontier puts, leases (any size, per-host,
//! host, queue and per-queue limits, time to live, spacing, one queue or
//! all), peeks, completions of every outcome, robots.txt changes and clock
//! moves (none, seconds, hours, days), on a store in memory and on disk.
//! After every step the store's answer must be the model's, every peek of
//! `k` the first `k` of a peek of `n`, and `Store::check` clean. Seeded:
//! a failure names its seed and step, and the steps before it.

mod model;

use std::collections::HashMap;
use std::time::Duration;

use model::{Ask, Model, Rng, Spacing};
use sitemapd_parser::{HostKey, Lastmod, NormUrl, RobotsRules, UrlEntry, date::Precision};
use sitemapd_scheduler::{
    Completion, DiscoveredUrl, KnownUrl, LeaseRequest, Outcome, Politeness, Store, StoreOptions,
    Timestamp, UrlStatus,
};

const T0: i64 = 1_700_000_000;

const HOSTS: [&str; 4] = ["a.example", "b.example", "c.example:8080", "d.example"];
const PATHS: [&str; 10] = [
    "/",
    "/p1",
    "/p22",
    "/news/today",
    "/private/x",
    "/a/b/c/d/e/f",
    "/zz-important.html",
    "/items/000001",
    "/items/000002",
    "/items/000003",
];
const QUEUES: [&str; 3] = ["queue_mysite", "another_queue", "a.example"];

fn url(host: &str, path: &str) -> String {
    format!("https://{host}{path}")
}

fn host_key(host: &str) -> HostKey {
    NormUrl::parse(&format!("https://{host}/"))
        .unwrap()
        .host_key()
}

/// The test's world: the store, its model, and what each host's sitemap
/// says of each URL (its lastmod), with the host's honesty.
struct World {
    store: Store,
    model: Model,
    now: i64,
    rng: Rng,
    lastmods: HashMap<String, i64>,
    truthful: HashMap<&'static str, bool>,
    log: Vec<String>,
    leases: usize,
    /// What the runs reached: URLs handed out per class, leases of one
    /// queue and spaced `Now` that handed something out, trusted hosts.
    reached: Reached,
}

/// What a run reached, so that a generator that stops reaching a case
/// fails the test instead of passing it by.
#[derive(Debug, Default, Clone, Copy)]
struct Reached {
    handed_by_class: [usize; 5],
    one_queue: usize,
    now_spacing: usize,
    expired_again: usize,
    /// Handed out ahead of their turn: announced changes and validation
    /// samples paid for by their credits.
    paid: usize,
    trusted_hosts: usize,
    duplicates: u64,
}

impl std::ops::AddAssign for Reached {
    fn add_assign(&mut self, o: Reached) {
        for (a, b) in self.handed_by_class.iter_mut().zip(o.handed_by_class) {
            *a += b;
        }
        self.one_queue += o.one_queue;
        self.now_spacing += o.now_spacing;
        self.expired_again += o.expired_again;
        self.paid += o.paid;
        self.trusted_hosts += o.trusted_hosts;
        self.duplicates += o.duplicates;
    }
}

impl World {
    fn new(store: Store, options: &StoreOptions, seed: u64) -> World {
        let mut rng = Rng(seed);
        let truthful = HOSTS.iter().map(|h| (*h, rng.chance(75))).collect();
        let params = &options.params;
        World {
            model: Model::new(
                options.min_delay,
                params.validation_share,
                params.announced_share,
            ),
            store,
            now: T0,
            rng,
            lastmods: HashMap::new(),
            truthful,
            log: Vec::new(),
            leases: 0,
            reached: Reached::default(),
        }
    }

    fn ts(&self) -> Timestamp {
        Timestamp::from_unix(self.now)
    }

    /// Reads every URL's and host's state from the store into the model.
    fn sync(&mut self) {
        let now = self.ts();
        for view in self.store.export() {
            let v = view.unwrap();
            let norm = NormUrl::parse(&v.url).unwrap();
            let queued = matches!(
                v.status,
                UrlStatus::Queued | UrlStatus::Gone | UrlStatus::Moved
            );
            let urgency = serde_json::to_value(v.urgency).unwrap();
            let reason = serde_json::to_value(v.reason).unwrap();
            self.model.sync_url(
                &v.url,
                norm.host_key().as_str(),
                &v.queue,
                urgency.as_str().unwrap(),
                v.due.unix(),
                v.score,
                v.priority,
                v.lastmod.map(Timestamp::unix),
                queued,
                v.leased_until.map(Timestamp::unix),
                reason.as_str().unwrap(),
            );
        }
        for host in HOSTS {
            let key = host_key(host);
            let view = self.store.host(&key).unwrap();
            let rules = self.store.robots(&key).unwrap();
            let h = self
                .model
                .hosts
                .entry(key.as_str().to_string())
                .or_default();
            h.next_allowed = view.next_allowed.unix();
            h.trusted = view.lastmod_trusted;
            h.probation = view.lastmod_probation;
            h.crawl_delay = rules.as_ref().and_then(|r| r.crawl_delay);
            h.disallow = match rules {
                Some(r) if !r.allows(&NormUrl::parse(&url(host, "/private/x")).unwrap()) => {
                    vec!["/private/".to_string()]
                }
                _ => Vec::new(),
            };
        }
        let _ = now;
    }

    fn step(&mut self, step: usize) {
        let op = self.rng.below(100);
        match op {
            0..=17 => self.ingest(),
            18..=39 => self.lease(),
            40..=54 => self.complete(),
            55..=69 => self.clock(),
            70..=74 => self.notify(),
            75..=80 => self.put(),
            81..=84 => self.robots(),
            85..=89 => self.peek(),
            _ => self.ingest(),
        }
        let report = self.store.check().unwrap();
        assert!(
            report.is_ok(),
            "step {step}: {report:?}\n{}",
            self.log.join("\n")
        );
        self.sync();
    }

    /// A sitemap read of one host: some of its URLs, each with a priority
    /// and a lastmod that moves now and then.
    fn ingest(&mut self) {
        let host = self.rng.pick(&HOSTS);
        let sitemap = url(host, "/sitemap.xml");
        let mut ingest = self.store.ingest(self.ts());
        let mut listed = Vec::new();
        for path in PATHS {
            if !self.rng.chance(70) {
                continue;
            }
            let u = url(host, path);
            // Now and then listed twice: merged, counted once.
            let twice = self.rng.chance(5);
            let mut entry = UrlEntry::new(NormUrl::parse(&u).unwrap());
            entry.priority = self
                .rng
                .pick(&[None, Some(0.1), Some(0.5), Some(1.0), Some(0.8)]);
            if self.rng.chance(60) {
                let lastmod = self.lastmods.entry(u.clone()).or_insert(T0 - 86_400);
                if self.rng.chance(30) {
                    *lastmod = self.now - self.rng.below(600) as i64;
                }
                entry.lastmod = Some(Lastmod {
                    unix_seconds: *lastmod,
                    nanos: 0,
                    precision: Precision::Second,
                });
            }
            ingest.entry(&sitemap, &entry).unwrap();
            if twice {
                ingest.entry(&sitemap, &entry).unwrap();
            }
            listed.push((path, twice));
        }
        let fetch = sitemapd_scheduler::SitemapFetch {
            status: 200,
            complete: true,
            ..Default::default()
        };
        ingest.sitemap_fetched(&sitemap, &fetch).unwrap();
        let stats = ingest.finish().unwrap();
        let twice = listed.iter().filter(|(_, t)| *t).count() as u64;
        assert_eq!(stats.duplicates, twice, "{stats:?}");
        assert_eq!(
            stats.entries,
            stats.new + stats.updated + stats.unchanged + stats.revived + stats.duplicates
        );
        self.reached.duplicates += twice;
        self.log
            .push(format!("{}: ingest {host} {listed:?}", self.now));
    }

    fn ask(&mut self) -> Ask {
        let n = self.rng.pick(&[1, 2, 3, 5, 8, 20, 100]);
        let mut per_queue = HashMap::new();
        if self.rng.chance(30) {
            for q in QUEUES.iter().chain(HOSTS.iter()) {
                if self.rng.chance(40) {
                    per_queue.insert(q.to_string(), self.rng.below(3) as usize);
                }
            }
        }
        let names: Vec<&str> = QUEUES.iter().chain(HOSTS.iter()).copied().collect();
        Ask {
            n,
            per_host: self.rng.pick(&[1, 2, 3, 10, 100]),
            max_hosts: self.rng.pick(&[1, 2, 3, usize::MAX, usize::MAX]),
            max_queues: self.rng.pick(&[1, 2, usize::MAX, usize::MAX]),
            ttl: self.rng.pick(&[1, 30, 300, 3_600]),
            spacing: if self.rng.chance(30) {
                Spacing::Now
            } else {
                Spacing::Spaced
            },
            queue: if self.rng.chance(15) {
                Some(self.rng.pick(&names).to_string())
            } else {
                None
            },
            per_queue,
            queue_cap: usize::MAX,
        }
    }

    fn lease(&mut self) {
        let ask = self.ask();
        let request = LeaseRequest::new(ask.n)
            .per_host(ask.per_host)
            .max_hosts(ask.max_hosts)
            .max_queues(ask.max_queues)
            .ttl(Duration::from_secs(ask.ttl as u64))
            .politeness(match ask.spacing {
                Spacing::Spaced => Politeness::Spaced,
                Spacing::Now => Politeness::Now,
            });
        let expected = self.model.lease(&ask, self.now);
        let per_queue = ask.per_queue.clone();
        let got = self
            .store
            .lease_admitting(&request, ask.queue.as_deref(), self.ts(), |q| {
                per_queue.get(q).copied().unwrap_or(usize::MAX)
            })
            .unwrap();
        self.leases += 1;
        let got_urls: Vec<(String, String, i64, bool)> = got
            .iter()
            .map(|l| {
                let expired = l.reason == sitemapd_scheduler::policy::Reason::LeaseExpired;
                (l.url.clone(), l.queue.clone(), l.not_before.unix(), expired)
            })
            .collect();
        let want: Vec<(String, String, i64, bool)> = expected
            .iter()
            .map(|h| (h.url.clone(), h.queue.clone(), h.not_before, h.expired))
            .collect();
        self.log
            .push(format!("{}: lease {ask:?} -> {got_urls:?}", self.now));
        assert_eq!(
            got_urls,
            want,
            "lease at {}\n{}",
            self.now,
            self.log.join("\n")
        );
        for l in &got {
            assert_eq!(
                l.expires,
                Some(Timestamp::from_unix(self.now + ask.ttl.max(1)))
            );
            let class = self.model.urls[&l.url].class as usize;
            self.reached.handed_by_class[class] += 1;
            self.reached.expired_again +=
                usize::from(l.reason == sitemapd_scheduler::policy::Reason::LeaseExpired);
        }
        self.reached.paid += expected.iter().filter(|h| h.paid).count();
        if !got.is_empty() {
            self.reached.one_queue += usize::from(ask.queue.is_some());
            self.reached.now_spacing += usize::from(ask.spacing == Spacing::Now);
        }
    }

    fn peek(&mut self) {
        let n = self.rng.pick(&[1, 3, 10, 50]);
        let got: Vec<String> = self
            .store
            .peek(n, self.ts())
            .unwrap()
            .into_iter()
            .map(|l| l.url)
            .collect();
        let want = self.model.peek(n, self.now);
        self.log.push(format!("{}: peek {n} -> {got:?}", self.now));
        assert_eq!(got, want, "peek at {}\n{}", self.now, self.log.join("\n"));
        // A peek of k is the first k of a peek of n.
        let k = self.rng.below(n as u64) as usize;
        let first: Vec<String> = self
            .store
            .peek(k, self.ts())
            .unwrap()
            .into_iter()
            .map(|l| l.url)
            .collect();
        assert_eq!(first, got[..k.min(got.len())], "peek {k} of {n}");
    }

    /// Outcomes for some leased URLs (and now and then one not leased): a
    /// truthful host says changed exactly when its lastmod moved since the
    /// last fetch.
    fn complete(&mut self) {
        let known: Vec<(String, bool)> = self
            .model
            .urls
            .iter()
            .map(|(url, u)| (url.clone(), u.lease.is_some()))
            .collect();
        let mut done = Vec::new();
        for (u, leased) in &known {
            if !(*leased || self.rng.chance(3)) || !self.rng.chance(70) {
                continue;
            }
            let view = self.store.url(u).unwrap().unwrap();
            let host = HOSTS
                .iter()
                .copied()
                .find(|h| u.contains(&format!("//{h}/")))
                .unwrap();
            let moved = view
                .lastmod
                .zip(view.last_fetch)
                .is_some_and(|(l, f)| l > f);
            let outcome = match self.rng.below(100) {
                0..=69 if self.truthful[host] => {
                    if moved || view.last_fetch.is_none() {
                        Outcome::Changed
                    } else {
                        Outcome::NotModified
                    }
                }
                0..=69 => {
                    if self.rng.chance(50) {
                        Outcome::Changed
                    } else {
                        Outcome::NotModified
                    }
                }
                70..=77 => Outcome::Error(503),
                78..=83 => Outcome::Gone(self.rng.pick(&[404, 410])),
                84..=89 => Outcome::Redirected {
                    to: url(host, self.rng.pick(&PATHS)),
                    status: self.rng.pick(&[301, 302]),
                },
                _ => Outcome::NotModified,
            };
            done.push((u.clone(), Completion::from(outcome)));
        }
        let unknown = self
            .store
            .complete_all(done.iter().map(|(u, c)| (u.as_str(), c)), self.ts())
            .unwrap();
        assert!(unknown.is_empty());
        // Every outcome records its status; a 410 retires the URL at once,
        // and the view says so both ways.
        for (u, c) in &done {
            let view = self.store.url(u).unwrap().unwrap();
            let status = match &c.outcome {
                Outcome::Changed => 200,
                Outcome::NotModified => 304,
                Outcome::Gone(s) | Outcome::Error(s) => *s,
                Outcome::Redirected { status, .. } => *status,
                _ => unreachable!(),
            };
            if done.iter().filter(|(v, _)| v == u).count() == 1 {
                assert_eq!(view.last_status, Some(status), "{u}");
            }
            if c.outcome == Outcome::Gone(410) && view.status != UrlStatus::Completed {
                // Gone, unless its sitemaps retired it before.
                assert!(view.retired, "{u}");
                assert!(
                    matches!(view.status, UrlStatus::Gone | UrlStatus::Retired),
                    "{u}"
                );
            }
            assert_eq!(
                view.retired,
                matches!(
                    view.status,
                    UrlStatus::Retired | UrlStatus::Gone | UrlStatus::Moved
                )
            );
        }
        self.log.push(format!(
            "{}: complete {:?}",
            self.now,
            done.iter()
                .map(|(u, c)| (u, c.outcome.name()))
                .collect::<Vec<_>>()
        ));
    }

    fn clock(&mut self) {
        let by = self
            .rng
            .pick(&[0, 1, 2, 5, 30, 299, 301, 3_600, 86_400, 3 * 86_400]);
        self.now += by;
        self.log.push(format!("{}: clock +{by}", self.now));
    }

    fn notify(&mut self) {
        let host = self.rng.pick(&HOSTS);
        let u = url(host, self.rng.pick(&PATHS));
        self.store.notify_all([u.as_str()], self.ts()).unwrap();
        self.log.push(format!("{}: notify {u}", self.now));
        // A push is due now, ahead of every other class.
        let view = self.store.url(&u).unwrap().unwrap();
        if view.status == UrlStatus::Queued {
            assert_eq!(view.urgency, sitemapd_scheduler::policy::Urgency::Pushed);
            assert_eq!(view.due, self.ts());
        }
    }

    /// A URL frontier client's put: discovered or known, in a queue.
    fn put(&mut self) {
        let host = self.rng.pick(&HOSTS);
        let u = url(host, self.rng.pick(&PATHS));
        let queue = if self.rng.chance(70) {
            Some(self.rng.pick(&QUEUES).to_string())
        } else {
            None
        };
        if self.rng.chance(40) {
            let item = DiscoveredUrl {
                url: u.clone(),
                metadata: vec![("depth".into(), vec!["1".into()])],
                queue: queue.clone(),
            };
            let known = self.store.url(&u).unwrap().map(|v| v.queue);
            self.store.discover([item], self.ts()).unwrap();
            self.log
                .push(format!("{}: discover {u} in {queue:?}", self.now));
            // A URL the store held stays in its queue; a new one is in the
            // queue it was put in (its host's when none).
            let view = self.store.url(&u).unwrap().unwrap();
            let expected = known.unwrap_or_else(|| queue.clone().unwrap_or(host.to_string()));
            assert_eq!(view.queue, expected);
        } else {
            let refetch = match self.rng.below(3) {
                0 => None,
                1 => Some(self.now - 10),
                _ => Some(self.now + self.rng.below(7_200) as i64),
            };
            let item = KnownUrl {
                url: u.clone(),
                refetch: refetch.map(Timestamp::from_unix),
                metadata: Vec::new(),
                queue: queue.clone(),
            };
            self.store
                .put_known(vec![item], self.ts(), |_, _| None)
                .unwrap();
            self.log.push(format!(
                "{}: known {u} in {queue:?} at {refetch:?}",
                self.now
            ));
            // In the queue it was put in, due at its date or completed.
            let view = self.store.url(&u).unwrap().unwrap();
            assert_eq!(view.queue, queue.clone().unwrap_or(host.to_string()));
            match refetch {
                None => assert_eq!(view.status, UrlStatus::Completed),
                Some(at) if view.status == UrlStatus::Queued => {
                    assert_eq!((view.due.unix(), view.leased_until), (at, None));
                }
                Some(_) => {}
            }
        }
    }

    fn robots(&mut self) {
        let host = self.rng.pick(&HOSTS);
        let disallow = self.rng.chance(50);
        let delay = self.rng.pick(&[None, Some(2.0), Some(5.0), Some(0.5)]);
        let rules = if disallow {
            vec![(false, "/private/".to_string())]
        } else {
            Vec::new()
        };
        let rules = RobotsRules::new(rules, delay);
        self.store
            .set_robots(&host_key(host), &rules, self.ts())
            .unwrap();
        self.log.push(format!(
            "{}: robots {host} disallow {disallow} delay {delay:?}",
            self.now
        ));
    }
}

/// The store's options for `seed`: announced changes given a share of each
/// lease ahead of new URLs, from none (the default) to all; one, three or
/// sixteen partitions (a lease merging the queues of several, completions
/// split over them).
fn options(seed: u64) -> StoreOptions {
    let mut options = StoreOptions::default();
    options.params.announced_share = [0.0, 0.25, 0.5, 1.0][seed as usize % 4];
    options.partitions = [1, 3, 16][seed as usize % 3];
    options
}

fn run(store: Store, options: &StoreOptions, seed: u64, steps: usize) -> (usize, Reached) {
    let mut world = World::new(store, options, seed);
    world.sync();
    for step in 0..steps {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| world.step(step)));
        if let Err(e) = result {
            eprintln!("seed {seed}, step {step}");
            std::panic::resume_unwind(e);
        }
    }
    world.reached.trusted_hosts = world.model.hosts.values().filter(|h| h.trusted).count();
    (world.leases, world.reached)
}

#[test]
fn the_queue_is_its_model_in_memory() {
    let (mut leases, mut reached) = (0, Reached::default());
    for seed in 1..=60 {
        let options = options(seed);
        let store = Store::in_memory(options.clone()).unwrap();
        let (l, r) = run(store, &options, seed, 120);
        leases += l;
        reached += r;
    }
    println!("{leases} leases compared; reached {reached:?}");
    assert!(leases > 1_000, "{leases} leases compared");
    // Every class handed out, leases of one queue and spaced for now,
    // leases run out and handed out again, hosts that earned trust, and
    // sitemaps that list a URL twice.
    assert!(
        reached.handed_by_class.iter().all(|&n| n > 0),
        "{reached:?}"
    );
    assert!(
        reached.one_queue > 0 && reached.now_spacing > 0,
        "{reached:?}"
    );
    assert!(
        reached.expired_again > 0 && reached.trusted_hosts > 0,
        "{reached:?}"
    );
    assert!(reached.duplicates > 0, "{reached:?}");
}

#[test]
fn the_queue_is_its_model_on_disk() {
    for seed in 1_001..=1_006 {
        let dir = tempfile::tempdir().unwrap();
        let options = options(seed);
        let store = Store::open(dir.path(), options.clone()).unwrap();
        run(store, &options, seed, 80);
    }
}
