//! The sitemap publisher: what each sitemap file says when the crawler
//! reads it.
//!
//! - A new page is listed `delay` after it appears, with its birth as
//!   lastmod.
//! - A change the lastmod reflects (decided per change with probability
//!   `recall`, by the page's own stream) moves the lastmod `delay` after it
//!   happened; precision `day` writes the start of the change's UTC day
//!   (two changes on one day leave one value), `second` the second, `none`
//!   no lastmod at all.
//! - Liar mode: every entry's lastmod is the file's generation time (the
//!   read), whatever the pages did.
//! - Each host does this its own way ([`SitemapConfig`]'s host mix: noisy,
//!   liar or silent hosts among the others; a turncoat lies from a day on).
//! - Each file has a version that moves whenever what it says changes; it
//!   is the file's ETag, so a crawler that sends the last one gets a 304
//!   (conditional GET) while the file is unchanged.

use std::collections::VecDeque;

use sitemapd_parser::UrlEntry;
use sitemapd_parser::date::{Lastmod, Precision};

use super::config::{HostSitemaps, LastmodPrecision, SitemapConfig};
use super::world::{EPOCH, World};

/// What will show in a file once its delay has passed.
#[derive(Debug, Clone, Copy)]
enum Pending {
    /// The next page of the file is listed.
    Listed,
    /// The page changed at this time.
    Changed(i64),
}

#[derive(Debug, Clone, Default)]
struct FileState {
    /// Its host.
    host: u32,
    /// The ETag's number.
    version: u64,
    /// Pages listed so far (a prefix of the file's pages).
    listed: usize,
    /// (visible from, page, what), in time order (the delay is constant).
    pending: VecDeque<(i64, u32, Pending)>,
    /// Liar mode: the generation-time lastmod of the last read.
    liar_stamp: Option<i64>,
}

/// Every host's sitemap files.
#[derive(Debug, Clone)]
pub(crate) struct Publisher {
    /// What each host's sitemaps do with lastmod.
    hosts: Vec<HostSitemaps>,
    files: Vec<FileState>,
    /// The lastmod each page's entry shows, start of its period.
    shown: Vec<Option<i64>>,
}

impl Publisher {
    /// The files of `world` (of `seed`) before anything is listed.
    pub(crate) fn new(world: &World, cfg: &SitemapConfig, seed: u64) -> Self {
        Publisher {
            hosts: cfg.hosts(world.hosts, seed),
            files: world
                .sitemaps
                .iter()
                .map(|f| FileState {
                    host: f.host,
                    ..FileState::default()
                })
                .collect(),
            shown: vec![None; world.pages.len()],
        }
    }

    /// What the host of `file` does.
    fn host_of(&self, file: u32) -> HostSitemaps {
        let host = self.files.get(file as usize).map_or(0, |f| f.host);
        self.hosts
            .get(host as usize)
            .copied()
            .unwrap_or(HostSitemaps {
                precision: LastmodPrecision::None,
                recall: 0.0,
                delay_secs: 0,
                liar_from_secs: None,
            })
    }

    /// What host `host`'s sitemaps do.
    pub(crate) fn host(&self, host: u32) -> Option<HostSitemaps> {
        self.hosts.get(host as usize).copied()
    }

    /// A page there from the start: listed at once, its lastmod the last
    /// reflected change before the start (`None`: none reflected).
    pub(crate) fn list_initial(&mut self, file: u32, page: u32, lastmod: Option<i64>) {
        let h = self.host_of(file);
        if let Some(f) = self.files.get_mut(file as usize) {
            f.listed += 1;
        }
        let shown = match h.precision {
            LastmodPrecision::None => None,
            p => lastmod.map(|t| quantise(p, t)),
        };
        if let Some(slot) = self.shown.get_mut(page as usize) {
            *slot = shown;
        }
    }

    /// A page appeared at `t`.
    pub(crate) fn born(&mut self, file: u32, page: u32, t: i64) {
        let at = t.saturating_add(self.host_of(file).delay_secs);
        if let Some(f) = self.files.get_mut(file as usize) {
            f.pending.push_back((at, page, Pending::Listed));
            // Its birth is its lastmod.
            f.pending.push_back((at, page, Pending::Changed(t)));
        }
    }

    /// A page changed at `t`, and its lastmod reflects it.
    pub(crate) fn changed(&mut self, file: u32, page: u32, t: i64) {
        let h = self.host_of(file);
        if h.precision == LastmodPrecision::None {
            return;
        }
        let at = t.saturating_add(h.delay_secs);
        if let Some(f) = self.files.get_mut(file as usize) {
            f.pending.push_back((at, page, Pending::Changed(t)));
        }
    }

    /// Generates file `file` at `now` (what changed since the last read
    /// shows, if its delay has passed): its ETag.
    pub(crate) fn generate(&mut self, file: u32, now: i64) -> String {
        let h = self.host_of(file);
        let precision = h.precision;
        let liar_stamp = quantise(precision, now);
        let Some(state) = self.files.get_mut(file as usize) else {
            return String::new();
        };
        let mut moved = false;
        while state.pending.front().is_some_and(|(at, _, _)| *at <= now) {
            let Some((_, page, what)) = state.pending.pop_front() else {
                break;
            };
            match what {
                Pending::Listed => {
                    state.listed += 1;
                    moved = true;
                }
                Pending::Changed(t) if precision != LastmodPrecision::None => {
                    let q = quantise(precision, t);
                    if let Some(slot) = self.shown.get_mut(page as usize)
                        && slot.is_none_or(|old| q > old)
                    {
                        *slot = Some(q);
                        moved = true;
                    }
                }
                Pending::Changed(_) => {}
            }
        }
        if h.lies_at(now) && precision != LastmodPrecision::None {
            moved |= state.liar_stamp != Some(liar_stamp);
            state.liar_stamp = Some(liar_stamp);
        }
        if moved {
            state.version += 1;
        }
        format!("\"v{}\"", state.version)
    }

    /// The entries of file `file` as [`Publisher::generate`] at `now` left
    /// it, handed to `emit` in order.
    pub(crate) fn entries<E>(
        &self,
        world: &mut World,
        file: u32,
        now: i64,
        mut emit: impl FnMut(&UrlEntry) -> Result<(), E>,
    ) -> Result<(), E> {
        let h = self.host_of(file);
        let precision = match h.precision {
            LastmodPrecision::Day => Some(Precision::Day),
            LastmodPrecision::Second => Some(Precision::Second),
            LastmodPrecision::None => None,
        };
        let liar_stamp = quantise(h.precision, now);
        let lies = h.lies_at(now);
        let listed = self.files.get(file as usize).map_or(0, |f| f.listed);
        let Some(pages) = world.sitemaps.get(file as usize).map(|f| {
            let n = listed.min(f.pages.len());
            f.pages[..n].to_vec()
        }) else {
            return Ok(());
        };
        for page in pages {
            let shown = if lies {
                Some(liar_stamp)
            } else {
                self.shown.get(page as usize).copied().flatten()
            };
            let Some(p) = world.pages.get_mut(page as usize) else {
                continue;
            };
            p.entry.lastmod = match (shown, precision) {
                (Some(at), Some(precision)) => Some(Lastmod {
                    unix_seconds: at,
                    nanos: 0,
                    precision,
                }),
                _ => None,
            };
            emit(&p.entry)?;
        }
        Ok(())
    }
}

/// `t` as a lastmod of `precision` writes it (the start of its day).
fn quantise(precision: LastmodPrecision, t: i64) -> i64 {
    match precision {
        LastmodPrecision::Day => t.div_euclid(86_400) * 86_400,
        _ => t,
    }
}

impl HostSitemaps {
    /// Whether its lastmods are the generation time at `now`.
    fn lies_at(&self, now: i64) -> bool {
        self.liar_from_secs
            .is_some_and(|from| now >= EPOCH.saturating_add(from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;
    use crate::world::EPOCH;

    fn world() -> (SimConfig, World) {
        let mut cfg = SimConfig::default();
        cfg.world.pages = 4;
        cfg.world.hosts = 1;
        cfg.world.new_pages = 0.5;
        cfg.sitemap.urls_per_sitemap = 10;
        let w = World::generate(&cfg, 1).unwrap();
        (cfg, w)
    }

    fn read(p: &mut Publisher, w: &mut World, now: i64) -> (String, Vec<(String, Option<i64>)>) {
        let mut out = Vec::new();
        let etag = p.generate(0, now);
        p.entries::<()>(w, 0, now, |e| {
            out.push((
                e.loc.as_str().to_string(),
                e.lastmod.map(|l| l.unix_seconds),
            ));
            Ok(())
        })
        .unwrap();
        (etag, out)
    }

    #[test]
    fn lists_delays_quantises_and_versions() {
        let (mut cfg, mut w) = world();
        cfg.sitemap.lastmod = LastmodPrecision::Day;
        cfg.sitemap.delay_hours = 1.0;
        let mut p = Publisher::new(&w, &cfg.sitemap, 1);
        for i in 0..4 {
            p.list_initial(0, i, Some(EPOCH - 3 * 86_400 + 5));
        }
        let (e1, entries) = read(&mut p, &mut w, EPOCH);
        assert_eq!(entries.len(), 4);
        assert!(entries.iter().all(|(_, l)| *l == Some(EPOCH - 3 * 86_400)));
        // A change shows after the delay, as its day.
        p.changed(0, 2, EPOCH + 100);
        assert_eq!(read(&mut p, &mut w, EPOCH + 200).0, e1, "not yet");
        let (e2, entries) = read(&mut p, &mut w, EPOCH + 3_700);
        assert_ne!(e2, e1);
        assert_eq!(entries[2].1, Some(EPOCH));
        // A second change the same day says nothing new.
        p.changed(0, 2, EPOCH + 5_000);
        assert_eq!(read(&mut p, &mut w, EPOCH + 9_000).0, e2);
        // A new page is listed after the delay with its birth as lastmod.
        let born = w.pages[4].birth;
        p.born(0, 4, born);
        assert_eq!(read(&mut p, &mut w, born).1.len(), 4);
        let (_, entries) = read(&mut p, &mut w, born + 3_600);
        assert_eq!(entries.len(), 5);
        assert_eq!(entries[4].1, Some(born.div_euclid(86_400) * 86_400));
    }

    #[test]
    fn liar_and_none() {
        let (mut cfg, mut w) = world();
        cfg.sitemap.liar = true;
        let mut p = Publisher::new(&w, &cfg.sitemap, 1);
        for i in 0..4 {
            p.list_initial(0, i, Some(EPOCH - 99));
        }
        let (e1, entries) = read(&mut p, &mut w, EPOCH + 10);
        assert!(entries.iter().all(|(_, l)| *l == Some(EPOCH + 10)));
        let (e2, entries) = read(&mut p, &mut w, EPOCH + 20);
        assert_ne!(e1, e2);
        assert!(entries.iter().all(|(_, l)| *l == Some(EPOCH + 20)));

        cfg.sitemap.liar = false;
        cfg.sitemap.lastmod = LastmodPrecision::None;
        let mut p = Publisher::new(&w, &cfg.sitemap, 1);
        for i in 0..4 {
            p.list_initial(0, i, Some(EPOCH - 99));
        }
        let (e1, entries) = read(&mut p, &mut w, EPOCH);
        assert!(entries.iter().all(|(_, l)| l.is_none()));
        p.changed(0, 1, EPOCH + 5);
        assert_eq!(read(&mut p, &mut w, EPOCH + 10).0, e1);
    }
}
