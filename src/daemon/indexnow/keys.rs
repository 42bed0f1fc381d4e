//! The IndexNow keys the intake knows: each (host, key, key file location)
//! verified, refused, or being verified with the URLs pushed meanwhile
//! held for it. Bounded: at most `cap` keys (the oldest known dropped
//! first, never one being verified), `max_held` bytes of URLs held in all and
//! `max_verifying` verifications at once; past those a push is asked to
//! come again (429).

use std::collections::{HashMap, VecDeque};

use sitemapd_parser::HostKey;

/// A key as a push names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct KeyId {
    pub host: HostKey,
    pub key: String,
    /// The key file's URL.
    pub location: String,
}

#[derive(Debug)]
enum State {
    /// Its first verification runs; the URLs pushed meanwhile wait for it.
    Pending { urls: Vec<String> },
    /// Its file held it at `checked`; `rechecking` while a verification
    /// runs again.
    Valid { checked: i64, rechecking: bool },
    /// Its file did not hold it at `checked`, for the reason given.
    Refused { checked: i64, why: String },
}

/// What to do with a push.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Admit {
    /// The key is verified: apply the URLs.
    Apply,
    /// Verified, and due to be verified again: apply the URLs and start a
    /// verification (its result is for later pushes).
    ApplyAndRecheck,
    /// New (or refused long enough ago to try again): the URLs are held;
    /// start its verification and answer 202.
    Verify,
    /// Being verified: the URLs are held with the others; answer 202.
    Held,
    /// Its file does not hold it: 403, for this reason.
    Refused(String),
    /// Too many URLs held or verifications running: come again.
    Busy,
}

/// What a verification settled.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Settled {
    /// The URLs held for it: to apply if it verified, else dropped.
    pub urls: Vec<String>,
    /// The key was verified before (a re-check), and no longer is.
    pub revoked: bool,
}

/// The keys known, within their caps.
pub(super) struct Keys {
    entries: HashMap<KeyId, State>,
    /// Every key of `entries` once, oldest first: the order they go in.
    order: VecDeque<KeyId>,
    cap: usize,
    /// Bytes of the URLs held.
    held: usize,
    max_held: usize,
    verifying: usize,
    max_verifying: usize,
    /// Seconds after which a verified key is verified again.
    recheck: i64,
    /// Seconds after which a refused key may be tried again.
    retry_refused: i64,
}

impl Keys {
    pub(super) fn new(
        cap: usize,
        max_held: usize,
        max_verifying: usize,
        recheck_secs: u64,
        retry_refused_secs: u64,
    ) -> Self {
        let secs = |s: u64| s.min(i64::MAX as u64) as i64;
        Keys {
            entries: HashMap::new(),
            order: VecDeque::new(),
            cap: cap.max(1),
            held: 0,
            max_held,
            verifying: 0,
            max_verifying: max_verifying.max(1),
            recheck: secs(recheck_secs),
            retry_refused: secs(retry_refused_secs),
        }
    }

    /// A push of `urls` under `id` at `now`: what to do with it. The URLs
    /// of a push answered [`Admit::Verify`] or [`Admit::Held`] are held.
    pub(super) fn admit(&mut self, id: &KeyId, urls: &[String], now: i64) -> Admit {
        let bytes = bytes(urls);
        let room = self.held.saturating_add(bytes) <= self.max_held;
        match self.entries.get_mut(id) {
            Some(State::Valid {
                checked,
                rechecking,
            }) => {
                if now.saturating_sub(*checked) < self.recheck
                    || *rechecking
                    || self.verifying >= self.max_verifying
                {
                    return Admit::Apply;
                }
                *rechecking = true;
                self.verifying += 1;
                Admit::ApplyAndRecheck
            }
            Some(State::Pending { urls: held }) => {
                if !room {
                    return Admit::Busy;
                }
                held.extend_from_slice(urls);
                self.held += bytes;
                Admit::Held
            }
            Some(State::Refused { checked, why })
                if now.saturating_sub(*checked) < self.retry_refused =>
            {
                Admit::Refused(why.clone())
            }
            known => {
                if !room || self.verifying >= self.max_verifying {
                    return Admit::Busy;
                }
                let pending = State::Pending {
                    urls: urls.to_vec(),
                };
                match known {
                    Some(state) => *state = pending,
                    None => {
                        self.make_room();
                        self.entries.insert(id.clone(), pending);
                        self.order.push_back(id.clone());
                    }
                }
                self.held += bytes;
                self.verifying += 1;
                Admit::Verify
            }
        }
    }

    /// Drops the oldest keys not being verified until one more fits.
    fn make_room(&mut self) {
        let mut passed = 0;
        while self.entries.len() >= self.cap && passed < self.order.len() {
            let Some(oldest) = self.order.pop_front() else {
                return;
            };
            if matches!(self.entries.get(&oldest), Some(State::Pending { .. })) {
                self.order.push_back(oldest);
                passed += 1;
                continue;
            }
            self.entries.remove(&oldest);
        }
    }

    /// The verification of `id` ended at `now`: `Ok` when its file held the
    /// key, else why not.
    pub(super) fn settle(&mut self, id: &KeyId, result: Result<(), String>, now: i64) -> Settled {
        self.verifying = self.verifying.saturating_sub(1);
        let next = match &result {
            Ok(()) => State::Valid {
                checked: now,
                rechecking: false,
            },
            Err(why) => State::Refused {
                checked: now,
                why: why.clone(),
            },
        };
        let Some(state) = self.entries.get_mut(id) else {
            return Settled::default();
        };
        let before = std::mem::replace(state, next);
        match before {
            State::Pending { urls } => {
                self.held = self.held.saturating_sub(bytes(&urls));
                Settled {
                    urls,
                    revoked: false,
                }
            }
            State::Valid { .. } => Settled {
                urls: Vec::new(),
                revoked: result.is_err(),
            },
            State::Refused { .. } => Settled::default(),
        }
    }

    /// Forgets `id`, whose verification was just admitted and will not run:
    /// its URLs are no longer held.
    pub(super) fn forget(&mut self, id: &KeyId) {
        if let Some(State::Pending { urls }) = self.entries.remove(id) {
            self.held = self.held.saturating_sub(bytes(&urls));
            self.verifying = self.verifying.saturating_sub(1);
            self.order.retain(|o| o != id);
        }
    }

    /// Whether a key of `host` is verified now.
    pub(super) fn host_verified(&self, host: &HostKey) -> bool {
        self.entries
            .iter()
            .any(|(id, s)| id.host == *host && matches!(s, State::Valid { .. }))
    }

    /// Hosts with a key verified now.
    pub(super) fn verified_hosts(&self) -> usize {
        let hosts: std::collections::HashSet<&HostKey> = self
            .entries
            .iter()
            .filter(|(_, s)| matches!(s, State::Valid { .. }))
            .map(|(id, _)| &id.host)
            .collect();
        hosts.len()
    }

    /// Keys known, bytes of URLs held.
    #[cfg(test)]
    pub(super) fn sizes(&self) -> (usize, usize) {
        (self.entries.len(), self.held)
    }
}

/// The bytes `urls` take.
fn bytes(urls: &[String]) -> usize {
    urls.iter().map(String::len).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_700_000_000;

    fn id(host: &str) -> KeyId {
        KeyId {
            host: sitemapd_parser::NormUrl::parse(&format!("https://{host}/"))
                .unwrap()
                .host_key(),
            key: "0123456789abcdef".into(),
            location: format!("https://{host}/0123456789abcdef.txt"),
        }
    }

    fn urls(n: usize) -> Vec<String> {
        // 22 bytes each.
        (0..n)
            .map(|i| format!("https://a.example/{i:04}"))
            .collect()
    }

    #[test]
    fn a_key_is_verified_once_then_applied_and_verified_again_when_due() {
        let mut k = Keys::new(10, 10_000, 4, 3_600, 600);
        let a = id("a.example");
        assert_eq!(k.admit(&a, &urls(2), T), Admit::Verify);
        assert_eq!(k.admit(&a, &urls(3), T + 1), Admit::Held);
        let settled = k.settle(&a, Ok(()), T + 2);
        assert_eq!(settled.urls.len(), 5);
        assert_eq!(k.sizes(), (1, 0));
        assert_eq!(k.admit(&a, &urls(1), T + 10), Admit::Apply);
        assert_eq!(k.verified_hosts(), 1);
        // An hour on: applied, and verified again once.
        assert_eq!(k.admit(&a, &urls(1), T + 3_700), Admit::ApplyAndRecheck);
        assert_eq!(k.admit(&a, &urls(1), T + 3_701), Admit::Apply);
        // The file no longer holds it: revoked.
        let settled = k.settle(&a, Err("gone".into()), T + 3_702);
        assert!(settled.revoked && settled.urls.is_empty());
        assert!(!k.host_verified(&a.host));
        assert_eq!(
            k.admit(&a, &urls(1), T + 3_703),
            Admit::Refused("gone".into())
        );
        assert_eq!(k.verified_hosts(), 0);
        // Tried again once the refusal is old enough.
        assert_eq!(k.admit(&a, &urls(1), T + 4_400), Admit::Verify);
    }

    #[test]
    fn a_refused_key_drops_its_urls() {
        let mut k = Keys::new(10, 10_000, 4, 3_600, 600);
        let a = id("a.example");
        assert_eq!(k.admit(&a, &urls(4), T), Admit::Verify);
        let settled = k.settle(&a, Err("404".into()), T + 1);
        assert_eq!(settled.urls.len(), 4, "handed back, to be dropped");
        assert!(!settled.revoked);
        assert_eq!(k.sizes(), (1, 0));
        assert_eq!(k.admit(&a, &urls(1), T + 2), Admit::Refused("404".into()));
    }

    #[test]
    fn held_urls_and_verifications_have_caps() {
        let mut k = Keys::new(100, 8 * 22, 2, 3_600, 600);
        assert_eq!(k.admit(&id("a.example"), &urls(6), T), Admit::Verify);
        assert_eq!(k.admit(&id("a.example"), &urls(6), T), Admit::Busy);
        assert_eq!(k.admit(&id("b.example"), &urls(2), T), Admit::Verify);
        assert_eq!(
            k.admit(&id("c.example"), &urls(1), T),
            Admit::Busy,
            "two running"
        );
        k.settle(&id("a.example"), Ok(()), T);
        assert_eq!(k.admit(&id("c.example"), &urls(1), T), Admit::Verify);
        // One admitted that will not run gives its room back.
        k.forget(&id("c.example"));
        assert_eq!(k.sizes(), (2, 2 * 22));
        assert_eq!(k.admit(&id("d.example"), &urls(1), T), Admit::Verify);
    }

    /// Any number of hosts: the keys known stay within the cap, and a key
    /// being verified is never the one dropped.
    #[test]
    fn the_keys_known_stay_within_their_cap() {
        let mut k = Keys::new(50, 100_000, 1_000, 3_600, 600);
        let first = id("first.example");
        assert_eq!(k.admit(&first, &urls(1), T), Admit::Verify);
        for i in 0..10_000 {
            let host = id(&format!("h{i}.example"));
            if k.admit(&host, &urls(1), T) == Admit::Verify {
                k.settle(&host, Err("no".into()), T);
            }
            assert!(k.sizes().0 <= 50);
        }
        assert_eq!(k.admit(&first, &urls(1), T), Admit::Held);
    }
}
