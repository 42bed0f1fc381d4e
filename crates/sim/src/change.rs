//! Change processes: when a page changes next. Each page draws from its own
//! random stream (seeded by the run's seed and the page id), and only the
//! world's clock advances it, never the crawler: every policy sees exactly
//! the same changes.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, Geometric};
use rand_pcg::Pcg64Mcg;

use super::config::{Process, WorldConfig};
use super::seed::mix;

/// One page's change stream.
#[derive(Debug, Clone)]
pub(crate) struct Changes {
    rng: Pcg64Mcg,
    /// Changes left in the current burst (`bursty`).
    burst_left: u64,
}

/// `t + secs`, at least one second later.
fn after(t: i64, secs: f64) -> i64 {
    let s = if secs.is_finite() { secs.round() } else { 1e15 };
    t.saturating_add((s as i64).max(1))
}

/// An exponential wait with mean 1/rate (a huge one for a rate that is not a
/// positive number).
fn exp(rng: &mut Pcg64Mcg, rate: f64) -> f64 {
    match Exp::new(rate) {
        Ok(d) if rate > 0.0 => d.sample(rng),
        _ => 1e15,
    }
}

impl Changes {
    /// The stream of page `page` in the run seeded `seed`.
    pub(crate) fn new(seed: u64, page: u32) -> Self {
        Changes {
            rng: Pcg64Mcg::seed_from_u64(mix(seed, 0x1_0000_0000 + u64::from(page))),
            burst_left: 0,
        }
    }

    /// The first change after `birth` of a page changing `lambda` times a
    /// second on average.
    pub(crate) fn first(&mut self, birth: i64, lambda: f64, cfg: &WorldConfig) -> i64 {
        match cfg.process {
            // A random phase within one period.
            Process::Periodic => after(birth, self.rng.random::<f64>() / lambda),
            _ => self.next(birth, lambda, cfg),
        }
    }

    /// The change after the one at `t`.
    pub(crate) fn next(&mut self, t: i64, lambda: f64, cfg: &WorldConfig) -> i64 {
        match cfg.process {
            Process::Poisson => after(t, exp(&mut self.rng, lambda)),
            Process::Periodic => after(t, 1.0 / lambda),
            Process::Bursty => {
                if self.burst_left > 0 {
                    self.burst_left -= 1;
                    return after(t, exp(&mut self.rng, 1.0 / (cfg.burst_gap_minutes * 60.0)));
                }
                // Bursts arrive at λ/m and hold m changes on average
                // (1 + a geometric count with mean m − 1).
                let m = cfg.burst_size.max(1.0);
                self.burst_left = Geometric::new(1.0 / m)
                    .map(|g| g.sample(&mut self.rng))
                    .unwrap_or(0);
                after(t, exp(&mut self.rng, lambda / m))
            }
        }
    }

    /// Whether the sitemap's lastmod reflects this change (probability
    /// `recall`).
    pub(crate) fn reflected(&mut self, recall: f64) -> bool {
        recall >= 1.0 || self.rng.random::<f64>() < recall
    }

    /// How long before the start the last change the lastmod reflects
    /// happened (a page there from the start has a history): exponential
    /// with rate λ·recall, seconds; `None` when recall is 0.
    pub(crate) fn history(&mut self, lambda: f64, recall: f64) -> Option<f64> {
        (recall > 0.0).then(|| exp(&mut self.rng, lambda * recall).min(3650.0 * 86_400.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate_of(process: Process) -> f64 {
        let cfg = WorldConfig {
            process,
            ..WorldConfig::default()
        };
        let lambda = 1.0 / 86_400.0;
        let mut n = 0u64;
        let mut total = 0i64;
        for page in 0..20 {
            let mut c = Changes::new(3, page);
            let mut t = c.first(0, lambda, &cfg);
            while t < 2_000 * 86_400 {
                n += 1;
                let next = c.next(t, lambda, &cfg);
                assert!(next > t);
                t = next;
            }
            total += 2_000 * 86_400;
        }
        n as f64 / total as f64 / lambda
    }

    #[test]
    fn every_process_keeps_the_mean_rate() {
        for p in [Process::Poisson, Process::Periodic, Process::Bursty] {
            let r = rate_of(p);
            assert!((r - 1.0).abs() < 0.05, "{p:?}: {r}");
        }
    }

    #[test]
    fn streams_are_per_page_and_reproducible() {
        let cfg = WorldConfig::default();
        let a: Vec<i64> = (0..5)
            .map(|_| Changes::new(1, 9).next(0, 1e-3, &cfg))
            .collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            Changes::new(1, 9).next(0, 1e-3, &cfg),
            Changes::new(1, 10).next(0, 1e-3, &cfg)
        );
        let mut c = Changes::new(1, 1);
        let hits = (0..10_000).filter(|_| c.reflected(0.3)).count();
        assert!((2_800..3_200).contains(&hits), "{hits}");
        assert!(Changes::new(1, 1).history(1e-3, 0.0).is_none());
    }
}
