//! The queue through the real daemon against its reference model
//! (crates/scheduler/tests/model): random sequences of pushes
//! (`POST /v1/notify`), URL frontier puts (PutURLs, discovered and known,
//! in queues), HTTP leases (`POST /v1/lease`: n, per_host, max_hosts,
//! ttl_secs), GetURLs (max_urls_per_queue, max_queues, a key, holds),
//! completions (`POST /v1/complete`) and the clock moving on (the
//! daemon's test clock, `--test-clock-file`). What each
//! lease and GetURLs call hands out, in order (and each URL's not_before),
//! must be what the model predicts; the model learns every URL's state
//! from `GET /v1/urls`. Fewer steps than the library's run (each step is
//! calls to a process): the plumbing of the two APIs, not every case again.

mod common;
#[path = "../crates/scheduler/tests/model/mod.rs"]
mod model;

use std::collections::HashMap;

use common::clock::TestClock;
use common::daemon::{Daemon, TOKEN};
use common::frontier::*;
use model::{Ask, Handed, Model, Rng, Spacing};
use serde_json::{Value, json};
use sitemapd_urlfrontier::proto;

const HOSTS: [&str; 3] = ["a.example", "b.example", "c.example:8080"];
const PATHS: [&str; 10] = [
    "/",
    "/p1",
    "/p22",
    "/news/today",
    "/a/b/c",
    "/zz",
    "/items/1",
    "/items/2",
    "/items/3",
    "/long/path/to/a/page.html",
];
const QUEUES: [&str; 3] = ["queue_mysite", "another_queue", "a.example"];

fn url(host: &str, path: &str) -> String {
    format!("https://{host}{path}")
}

fn host_of(url: &str) -> &str {
    let rest = &url["https://".len()..];
    &rest[..rest.find('/').unwrap_or(rest.len())]
}

struct World {
    d: Daemon,
    /// The daemon's time.
    clock: TestClock,
    rt: tokio::runtime::Runtime,
    c: Client,
    model: Model,
    rng: Rng,
    /// Every URL put in the store.
    urls: Vec<String>,
    /// URLs GetURLs handed out, held in their queue until then (the
    /// service's in-transit count), until a known put releases them.
    holds: HashMap<String, (String, i64)>,
    log: Vec<String>,
    compared: usize,
    /// URLs handed out by the calls compared, by HTTP and by GetURLs.
    handed: (usize, usize),
}

impl World {
    /// What the store says of every URL, into the model.
    fn sync(&mut self) {
        for u in &self.urls {
            let (status, v) = self.d.call("GET", &format!("/v1/urls?url={u}"), None);
            if status == 404 {
                continue;
            }
            let r = &v["record"];
            let queued = matches!(r["status"].as_str(), Some("queued" | "gone" | "moved"));
            self.model.sync_url(
                u,
                host_of(u),
                r["queue"].as_str().unwrap(),
                r["urgency"].as_str().unwrap(),
                r["due"].as_i64().unwrap(),
                r["score"].as_f64().unwrap() as f32,
                r["priority"].as_f64().map(|p| p as f32),
                r["lastmod"].as_i64(),
                queued,
                r["leased_until"].as_i64(),
                r["reason"].as_str().unwrap(),
            );
        }
    }

    /// The model's answer at the second the daemon answered in, one of
    /// `before..=after` (one second: the test's clock moves between calls
    /// only).
    fn predict(
        &mut self,
        ask: &Ask,
        before: i64,
        after: i64,
        got: &[(String, String, Option<i64>)],
    ) -> Vec<Handed> {
        let mut tried = Vec::new();
        for at in before..=after {
            let mut model = self.model.clone();
            let want = model.lease(ask, at);
            let same = want.len() == got.len()
                && want.iter().zip(got).all(|(w, g)| {
                    w.url == g.0 && w.queue == g.1 && g.2.is_none_or(|nb| nb == w.not_before)
                });
            if same {
                self.model = model;
                return want;
            }
            tried.push((at, want));
        }
        panic!(
            "{ask:?} handed out {got:?}; the model said {tried:?}\n{}",
            self.log.join("\n")
        );
    }

    fn notify(&mut self) {
        let urls: Vec<String> = (0..1 + self.rng.below(3))
            .map(|_| url(self.rng.pick(&HOSTS), self.rng.pick(&PATHS)))
            .collect();
        self.d.post("/v1/notify", json!({ "urls": urls }));
        self.log.push(format!("notify {urls:?}"));
        self.remember(&urls);
    }

    fn remember(&mut self, urls: &[String]) {
        for u in urls {
            if !self.urls.contains(u) {
                self.urls.push(u.clone());
            }
        }
    }

    fn put(&mut self) {
        let mut items = Vec::new();
        let mut added = Vec::new();
        for _ in 0..1 + self.rng.below(4) {
            let u = url(self.rng.pick(&HOSTS), self.rng.pick(&PATHS));
            let key = if self.rng.below(3) == 0 {
                ""
            } else {
                self.rng.pick(&QUEUES)
            };
            if items
                .iter()
                .any(|(v, _): &(String, proto::UrlItem)| *v == u)
            {
                continue;
            }
            let item = match self.rng.below(3) {
                0 => discovered_in(&u, key, ""),
                1 => known_in(&u, key, "", 0),
                _ => known_in(
                    &u,
                    key,
                    "",
                    (self.clock.now() + self.rng.below(3) as i64) as u64,
                ),
            };
            if matches!(item.item, Some(proto::url_item::Item::Known(_))) {
                // A known put releases the URL's hold at once.
                self.holds.remove(&u);
            }
            items.push((u.clone(), item));
            added.push(u);
        }
        let rt = &self.rt;
        let c = &mut self.c;
        let acks = rt.block_on(put(c, items.into_iter().map(|(_, i)| i).collect()));
        self.log.push(format!("put {added:?} -> {acks:?}"));
        self.remember(&added);
    }

    fn http_lease(&mut self) {
        let ask = Ask {
            n: self.rng.pick(&[1, 2, 3, 5, 20]),
            per_host: self.rng.pick(&[1, 2, 10]),
            max_hosts: self.rng.pick(&[1, 2, usize::MAX]),
            max_queues: usize::MAX,
            ttl: self.rng.pick(&[1, 2, 30]),
            spacing: Spacing::Spaced,
            queue: None,
            per_queue: HashMap::new(),
            queue_cap: usize::MAX,
        };
        let mut body = json!({ "n": ask.n, "per_host": ask.per_host, "ttl_secs": ask.ttl });
        if ask.max_hosts != usize::MAX {
            body["max_hosts"] = json!(ask.max_hosts);
        }
        let before = self.clock.now();
        let answer = self.d.post("/v1/lease", body);
        let after = self.clock.now();
        let got: Vec<(String, String, Option<i64>)> = answer["urls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["url"].as_str().unwrap().to_string(),
                    self.queue_of(l["url"].as_str().unwrap()),
                    l["not_before"].as_i64(),
                )
            })
            .collect();
        self.log.push(format!("lease {ask:?} -> {got:?}"));
        self.predict(&ask, before, after, &got);
        self.compared += 1;
        self.handed.0 += got.len();
    }

    /// The queue the model has `url` in.
    fn queue_of(&self, url: &str) -> String {
        self.model
            .urls
            .get(url)
            .map_or_else(String::new, |u| u.queue.clone())
    }

    fn get_urls(&mut self) {
        let per_queue = self.rng.pick(&[1u32, 2, 0]);
        let max_queues = self.rng.pick(&[1u32, 2, 0]);
        let key = if self.rng.below(4) == 0 {
            self.rng.pick(&QUEUES)
        } else {
            ""
        };
        let hold = self.rng.pick(&[1u32, 2]);
        let mut params = get(per_queue, max_queues, key, None);
        params.delay_requestable = hold;
        let before = self.clock.now();
        let got = {
            let rt = &self.rt;
            let c = &mut self.c;
            rt.block_on(get_urls(c, params))
        };
        let after = self.clock.now();
        let got: Vec<(String, String, Option<i64>)> =
            got.into_iter().map(|i| (i.url, i.key, None)).collect();
        let limit = |n: u32| if n == 0 { usize::MAX } else { n as usize };
        // The service's per-queue rule: what is in transit counts against
        // max_urls_per_queue.
        let mut admitted = HashMap::new();
        for (queue, until) in self.holds.values() {
            if *until > before {
                *admitted.entry(queue.clone()).or_insert(0usize) += 1;
            }
        }
        let per_queue_left: HashMap<String, usize> = admitted
            .into_iter()
            .map(|(q, held)| (q, limit(per_queue).saturating_sub(held)))
            .collect();
        let ask = Ask {
            n: limit(per_queue)
                .saturating_mul(limit(max_queues))
                .min(10_000),
            per_host: limit(per_queue)
                .saturating_mul(limit(max_queues))
                .min(10_000),
            max_hosts: usize::MAX,
            max_queues: limit(max_queues),
            ttl: i64::from(hold),
            spacing: Spacing::Now,
            queue: (!key.is_empty()).then(|| key.to_string()),
            per_queue: per_queue_left,
            queue_cap: limit(per_queue),
        };
        self.log.push(format!("GetURLs {ask:?} -> {got:?}"));
        let handed = self.predict(&ask, before, after, &got);
        self.handed.1 += handed.len();
        for h in handed {
            self.holds
                .insert(h.url, (h.queue, before + i64::from(hold)));
        }
        self.compared += 1;
    }

    fn complete(&mut self) {
        let leased: Vec<String> = self
            .model
            .urls
            .iter()
            .filter(|(_, u)| u.lease.is_some())
            .map(|(u, _)| u.clone())
            .collect();
        let mut items = Vec::new();
        for u in leased {
            if self.rng.below(3) == 0 {
                continue;
            }
            let item = match self.rng.below(6) {
                0 => json!({ "url": u, "outcome": "gone", "status": 410 }),
                1 => {
                    json!({ "url": u, "outcome": "redirected", "to": url(host_of(&u), "/zz"), "status": 302 })
                }
                2 => json!({ "url": u, "outcome": "changed" }),
                _ => json!({ "url": u, "outcome": "not-modified", "status": 304 }),
            };
            items.push(item);
        }
        if items.is_empty() {
            return;
        }
        self.d.post("/v1/complete", Value::Array(items.clone()));
        for item in &items {
            if let Some(to) = item["to"].as_str() {
                self.remember(&[to.to_string()]);
            }
        }
        self.log.push(format!("complete {}", Value::Array(items)));
    }

    fn step(&mut self, step: usize) {
        match self.rng.below(100) {
            0..=14 => self.notify(),
            15..=34 => self.put(),
            35..=54 => self.http_lease(),
            55..=79 => self.get_urls(),
            80..=89 => self.complete(),
            _ => {
                self.clock.advance(1);
                self.log.push("clock +1 s".into());
            }
        }
        self.sync();
        let _ = step;
    }
}

fn run(seed: u64, steps: usize) -> (usize, (usize, usize)) {
    let dir = tempfile::tempdir().unwrap();
    // No lease delay: the model of politeness is the library run's; here
    // GetURLs and the HTTP lease hand out what the queue order and their
    // limits say, as often as asked.
    let clock = TestClock::at_system_time();
    let (d, addr) = frontier_daemon(&dir, &[&clock.args()[..], &["--lease-delay", "0"]].concat());
    let rt = runtime();
    let c = rt.block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        no_delay(&mut c).await;
        c
    });
    let options = sitemapd_scheduler::StoreOptions::default();
    let params = &options.params;
    let mut world = World {
        d,
        clock,
        rt,
        c,
        model: Model::new(0.0, params.validation_share, params.announced_share),
        rng: Rng(seed),
        urls: Vec::new(),
        holds: HashMap::new(),
        log: Vec::new(),
        compared: 0,
        handed: (0, 0),
    };
    for step in 0..steps {
        world.step(step);
    }
    let compared = (world.compared, world.handed);
    drop(world);
    common::assert_store_checks(&dir.path().join("store"));
    compared
}

#[test]
fn the_daemon_s_queue_is_its_model() {
    let (mut compared, mut http, mut grpc) = (0, 0, 0);
    for seed in 1..=3 {
        let (c, (h, g)) = run(seed, 50);
        compared += c;
        http += h;
        grpc += g;
    }
    println!("{compared} calls compared: {http} URLs leased over HTTP, {grpc} by GetURLs");
    assert!(
        compared > 40 && http > 20 && grpc > 20,
        "{compared}, {http}, {grpc}"
    );
}
