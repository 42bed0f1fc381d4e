//! World generation: N pages on H hosts, drawn once per seed, the same for
//! every policy (common random numbers: policies are compared on the very
//! same pages and changes).
//!
//! - **Hosts**: each host draws a Pareto(1, α) weight; every host gets one
//!   page and the rest are spread in proportion to the weights, so a few
//!   hosts hold most pages (heavy-tailed pages per host).
//! - **Pages**: `pages` exist at the start; `new_pages × pages` more appear
//!   at uniformly random times during the run, at the end of their host's
//!   list (and so of its last sitemap files).
//! - **Change rates**: λ from a log-normal prior (median, σ of ln λ),
//!   clamped to `[rate_min, rate_max]` per day.
//! - **Importance**: Zipf over a random ranking of the pages, w ∝
//!   1/rank^s, normalised to mean 1; its decile is the sitemap priority.
//! - **Sitemaps**: a host's pages fill its sitemap files in order,
//!   `urls_per_sitemap` each.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal, Pareto};
use rand_pcg::Pcg64Mcg;
use sitemapd_parser::{ChangeFreq, NormUrl, UrlEntry};

use super::SimError;
use super::config::{DAY, SimConfig};
use super::seed::mix;

/// The simulated clock's origin: 2023-11-15T00:00:00Z (a UTC midnight, so
/// day-precision lastmods fall on simulated day boundaries).
pub const EPOCH: i64 = 1_700_006_400;

/// One simulated page.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    /// Its host's index.
    pub host: u32,
    /// Its sitemap file's index (into [`World::sitemaps`]).
    pub sitemap: u32,
    /// Mean changes per second.
    pub lambda: f64,
    /// Importance (mean 1 over all pages).
    pub importance: f64,
    /// When it appears (EPOCH for the pages there from the start).
    pub birth: i64,
    /// Its sitemap entry (lastmod filled in when published).
    pub entry: UrlEntry,
}

/// One sitemap file of a host.
#[derive(Debug, Clone)]
pub(crate) struct SitemapFile {
    /// Its URL.
    pub url: String,
    /// Its host's index.
    pub host: u32,
    /// Its pages, in the order they are listed (births in order).
    pub pages: Vec<u32>,
}

/// The generated world.
#[derive(Debug, Clone)]
pub(crate) struct World {
    /// Pages by id (an id is the number in the URL's path).
    pub pages: Vec<Page>,
    /// Sitemap files, host by host.
    pub sitemaps: Vec<SitemapFile>,
    /// Hosts.
    pub hosts: u32,
}

/// The host name of host `h`.
pub(crate) fn host_name(h: u32) -> String {
    format!("h{h}.sim.example")
}

/// The store's key of host `h`.
pub(crate) fn host_key(h: u32) -> sitemapd_parser::HostKey {
    NormUrl::parse(&format!("https://{}/", host_name(h)))
        .map(|u| u.host_key())
        .expect("a simulated host name is a valid host")
}

/// The URL of page `id` on host `h`.
fn page_url(h: u32, id: u32) -> String {
    format!("https://{}/p/{id}", host_name(h))
}

/// The page id in a URL this world made (`…/p/{id}`).
pub(crate) fn page_id(url: &str) -> Option<u32> {
    url.rsplit_once("/p/")?.1.parse().ok()
}

/// The changefreq nearest the rate (geometric midpoints between hourly,
/// daily, weekly, monthly and yearly).
fn changefreq(lambda_per_day: f64) -> ChangeFreq {
    let interval_days = 1.0 / lambda_per_day;
    let steps: [(f64, ChangeFreq); 5] = [
        (1.0 / 24.0, ChangeFreq::Hourly),
        (1.0, ChangeFreq::Daily),
        (7.0, ChangeFreq::Weekly),
        (30.0, ChangeFreq::Monthly),
        (365.0, ChangeFreq::Yearly),
    ];
    let mut best = ChangeFreq::Yearly;
    for pair in steps.windows(2) {
        let [(lo, f), (hi, _)] = pair else { continue };
        if interval_days < (lo * hi).sqrt() {
            best = *f;
            break;
        }
    }
    best
}

impl World {
    /// Draws the world of `seed`.
    pub(crate) fn generate(cfg: &SimConfig, seed: u64) -> Result<World, SimError> {
        let w = &cfg.world;
        let mut rng = Pcg64Mcg::seed_from_u64(mix(seed, 0x5eed_0001));
        let hosts = w.hosts as usize;
        let initial = w.pages as usize;
        let new = (f64::from(w.pages) * w.new_pages).round() as usize;
        let total = initial + new;

        // Host weights and the cumulative table pages are drawn from.
        let pareto =
            Pareto::new(1.0, w.host_size_alpha).map_err(|e| SimError::World(e.to_string()))?;
        let mut cumulative = Vec::with_capacity(hosts);
        let mut sum = 0.0;
        for _ in 0..hosts {
            sum += pareto.sample(&mut rng).min(1e12);
            cumulative.push(sum);
        }
        let pick = |rng: &mut Pcg64Mcg| {
            let x = rng.random::<f64>() * sum;
            cumulative.partition_point(|c| *c <= x).min(hosts - 1)
        };
        // Initial pages: one per host, the rest by weight; new pages by weight.
        let mut initial_per_host = vec![1usize; hosts];
        for _ in hosts..initial {
            initial_per_host[pick(&mut rng)] += 1;
        }
        let mut new_births: Vec<Vec<i64>> = vec![Vec::new(); hosts];
        let span = cfg.days * DAY;
        for _ in 0..new {
            let h = pick(&mut rng);
            let at = EPOCH + 1 + (rng.random::<f64>() * span) as i64;
            new_births[h].push(at);
        }

        // Importance ranks: a random permutation.
        let mut ranks: Vec<u32> = (0..total as u32).collect();
        ranks.shuffle(&mut rng);
        let zipf = |rank: u32| (f64::from(rank) + 1.0).powf(-w.importance_zipf);
        let norm = total as f64 / (0..total as u32).map(zipf).sum::<f64>();
        let lognormal = LogNormal::new(w.rate_median_per_day.ln(), w.rate_sigma)
            .map_err(|e| SimError::World(e.to_string()))?;

        let mut pages = Vec::with_capacity(total);
        let mut sitemaps = Vec::new();
        let per_file = cfg.sitemap.urls_per_sitemap as usize;
        for h in 0..hosts {
            let births = &mut new_births[h];
            births.sort_unstable();
            let all = std::iter::repeat_n(EPOCH, initial_per_host[h]).chain(births.iter().copied());
            let host = h as u32;
            let mut files_of_host = 0u32;
            for (i, birth) in all.enumerate() {
                if i % per_file == 0 {
                    sitemaps.push(SitemapFile {
                        url: format!("https://{}/sitemap-{files_of_host}.xml", host_name(host)),
                        host,
                        pages: Vec::new(),
                    });
                    files_of_host += 1;
                }
                let id = pages.len() as u32;
                let file = sitemaps.len() - 1;
                sitemaps[file].pages.push(id);
                let per_day = lognormal
                    .sample(&mut rng)
                    .clamp(w.rate_min_per_day, w.rate_max_per_day);
                let rank = ranks[id as usize];
                let url = page_url(host, id);
                let loc =
                    NormUrl::parse(&url).map_err(|e| SimError::World(format!("{url}: {e}")))?;
                let mut entry = UrlEntry::new(loc);
                if cfg.sitemap.hints {
                    entry.changefreq = Some(changefreq(per_day));
                    // Deciles of the importance ranking: the top tenth 1.0.
                    let decile = 10 - (u64::from(rank) * 10 / total as u64) as u32;
                    entry.priority = Some(decile as f32 / 10.0);
                }
                pages.push(Page {
                    host,
                    sitemap: file as u32,
                    lambda: per_day / DAY,
                    importance: zipf(rank) * norm,
                    birth,
                    entry,
                });
            }
        }
        Ok(World {
            pages,
            sitemaps,
            hosts: w.hosts,
        })
    }

    /// Pages there from the start.
    pub(crate) fn initial(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.pages.len() as u32).filter(|&i| self.pages[i as usize].birth == EPOCH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_world_and_shapes() {
        let mut cfg = SimConfig::default();
        cfg.world.pages = 2_000;
        cfg.world.hosts = 50;
        cfg.sitemap.urls_per_sitemap = 100;
        let a = World::generate(&cfg, 7).unwrap();
        let b = World::generate(&cfg, 7).unwrap();
        let c = World::generate(&cfg, 8).unwrap();
        let key = |w: &World| -> Vec<(u32, i64, u64)> {
            w.pages
                .iter()
                .map(|p| (p.host, p.birth, p.lambda.to_bits()))
                .collect()
        };
        assert_eq!(key(&a), key(&b));
        assert_ne!(key(&a), key(&c));
        assert_eq!(a.pages.len(), 2_200);
        assert_eq!(a.initial().count(), 2_000);
        // Heavy tail: the biggest host holds far more than the average 44.
        let mut per_host = vec![0usize; 50];
        for p in &a.pages {
            per_host[p.host as usize] += 1;
        }
        assert!(per_host.iter().all(|&n| n >= 1));
        let max = *per_host.iter().max().unwrap();
        assert!(max > 150, "{max}");
        // Importance has mean 1; the ids are in the URLs.
        let mean = a.pages.iter().map(|p| p.importance).sum::<f64>() / 2_200.0;
        assert!((mean - 1.0).abs() < 1e-9);
        for (i, p) in a.pages.iter().enumerate() {
            assert_eq!(page_id(p.entry.loc.as_str()), Some(i as u32));
            let file = &a.sitemaps[p.sitemap as usize];
            assert!(file.pages.len() <= 100 && file.pages.contains(&(i as u32)));
            assert!(file.url.contains(&host_name(p.host)));
        }
        // The log-normal median.
        let mut rates: Vec<f64> = a.pages.iter().map(|p| p.lambda * DAY).collect();
        rates.sort_by(f64::total_cmp);
        let median = rates[rates.len() / 2];
        assert!((median / 0.1 - 1.0).abs() < 0.1, "{median}");
    }

    #[test]
    fn changefreq_is_the_nearest_category() {
        assert_eq!(changefreq(30.0), ChangeFreq::Hourly);
        assert_eq!(changefreq(1.0), ChangeFreq::Daily);
        assert_eq!(changefreq(0.5), ChangeFreq::Daily);
        assert_eq!(changefreq(0.3), ChangeFreq::Weekly);
        assert_eq!(changefreq(0.1), ChangeFreq::Weekly);
        assert_eq!(changefreq(1.0 / 30.0), ChangeFreq::Monthly);
        assert_eq!(changefreq(1e-3), ChangeFreq::Yearly);
    }
}
