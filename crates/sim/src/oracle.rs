//! The `oracle` policy: the upper bound every comparison reports beside the
//! real policies. It knows every page's true change times (a simulation
//! does), so it fetches exactly the pages whose copy is stale (changed since
//! the last fetch, or never fetched), the longest-stale first, as early as
//! the budget and the hosts' politeness allow. No policy that only sees
//! sitemaps and fetch outcomes can beat it on freshness for the same budget.
//!
//! It does not use the store's queue (the store still reads the sitemaps
//! and records the fetches, so its other figures stay comparable).

use std::collections::BTreeSet;

use super::world::World;

/// The policy name the simulator answers with the oracle.
pub const ORACLE: &str = "oracle";

/// Stale pages scanned per URL a tick may fetch: a host at its politeness
/// limit is passed over, but not without end.
const SCAN_PER_FETCH: usize = 64;

/// The oracle's knowledge and its hosts' politeness.
#[derive(Debug)]
pub(crate) struct Oracle {
    /// (stale since, page), oldest first.
    stale: BTreeSet<(i64, u32)>,
    /// Each page's key in `stale`.
    since: Vec<Option<i64>>,
    /// Per host: no fetch before this time.
    next_allowed: Vec<i64>,
    /// Seconds between two fetches of one host.
    spacing: i64,
}

impl Oracle {
    /// An oracle for `world`, fetching one host at most every `spacing`
    /// seconds.
    pub(crate) fn new(world: &World, spacing: i64) -> Oracle {
        Oracle {
            stale: BTreeSet::new(),
            since: vec![None; world.pages.len()],
            next_allowed: vec![i64::MIN; world.hosts as usize],
            spacing: spacing.max(0),
        }
    }

    /// Page `page` appeared or changed at `at`: its copy is stale from then
    /// (or from earlier, if it already was).
    pub(crate) fn stale(&mut self, page: u32, at: i64) {
        let Some(slot) = self.since.get_mut(page as usize) else {
            return;
        };
        if slot.is_none() {
            *slot = Some(at);
            self.stale.insert((at, page));
        }
    }

    /// Page `page` was fetched: its copy is fresh.
    pub(crate) fn fetched(&mut self, page: u32) {
        if let Some(since) = self.since.get_mut(page as usize).and_then(Option::take) {
            self.stale.remove(&(since, page));
        }
    }

    /// Up to `n` (fetch time, URL) pairs for the tick from `t` to
    /// `t + tick`: the longest-stale pages first, each host spaced by the
    /// politeness delay.
    pub(crate) fn choose(
        &mut self,
        world: &World,
        n: usize,
        t: i64,
        tick: i64,
    ) -> Vec<(i64, String)> {
        let mut out = Vec::new();
        for &(_, page) in self.stale.iter().take(n.saturating_mul(SCAN_PER_FETCH)) {
            if out.len() >= n {
                break;
            }
            let Some(p) = world.pages.get(page as usize) else {
                continue;
            };
            let Some(next) = self.next_allowed.get_mut(p.host as usize) else {
                continue;
            };
            let at = (*next).max(t);
            if at >= t.saturating_add(tick) {
                continue;
            }
            *next = at.saturating_add(self.spacing);
            out.push((at, p.entry.loc.to_string()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;

    #[test]
    fn the_longest_stale_first_each_host_spaced() {
        let mut cfg = SimConfig::default();
        cfg.world.pages = 20;
        cfg.world.hosts = 2;
        let world = World::generate(&cfg, 1).unwrap();
        let mut o = Oracle::new(&world, 100);
        let host0: Vec<u32> = (0..20u32)
            .filter(|&p| world.pages[p as usize].host == 0)
            .collect();
        let (a, b) = (host0[0], host0[1]);
        o.stale(b, 10);
        o.stale(a, 20);
        o.stale(a, 5); // already stale since 20: stays
        let chosen = o.choose(&world, 5, 1000, 60);
        // Host 0 can be fetched once in this 60 s tick: the older one.
        assert_eq!(
            chosen,
            [(1000, world.pages[b as usize].entry.loc.to_string())]
        );
        o.fetched(b);
        let next = o.choose(&world, 5, 1100, 60);
        assert_eq!(
            next,
            [(1100, world.pages[a as usize].entry.loc.to_string())]
        );
        o.fetched(a);
        assert!(o.choose(&world, 5, 2000, 60).is_empty());
    }
}
