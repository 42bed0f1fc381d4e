//! The IndexNow keys the intake knows: each (host, key, key file location)
//! verified, refused, unreachable for now, or being verified with the URLs
//! pushed meanwhile held for it. Bounded: at most `cap` keys (a key refused
//! or unreachable goes first, then the verified key used longest ago; never
//! one being verified) and [`MAX_KEYS_PER_HOST`] per host (a new one only in
//! place of a refusal that may be tried again), `max_held` bytes of URLs
//! held in all and `max_verifying` verifications at once; past those a push
//! is asked to come again (429).

use std::collections::HashMap;

use sitemapd_parser::HostKey;

/// Keys one host may have known at once.
pub(super) const MAX_KEYS_PER_HOST: usize = 8;
/// A key file that could not be read (no answer, a 5xx): seconds before a
/// push tries it again.
pub(super) const RETRY_UNREACHABLE: i64 = 300;
/// A verified key whose re-check could not read its file: seconds before
/// it is checked again (it stays verified meanwhile).
pub(super) const RECHECK_UNREACHABLE: i64 = 600;

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
    /// `new_host`: the day whose new-host place it took, if it took one.
    Pending {
        urls: Vec<String>,
        new_host: Option<i64>,
    },
    /// Its file held it at `verified`; checked again from `checked` on
    /// (later than `verified` when a re-check could not read the file);
    /// last pushed under at `used`; `rechecking` while a verification runs
    /// again.
    Valid {
        checked: i64,
        verified: i64,
        used: i64,
        rechecking: bool,
    },
    /// Its file did not hold it at `checked`, for the reason given.
    Refused { checked: i64, why: String },
    /// Its file could not be read; tried again from `until`.
    Unreachable { until: i64, why: String },
}

impl State {
    /// Being verified: never dropped.
    fn busy(&self) -> bool {
        matches!(
            self,
            State::Pending { .. }
                | State::Valid {
                    rechecking: true,
                    ..
                }
        )
    }
}

/// What a verification found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The file holds the key.
    Holds,
    /// The file answered, and does not hold the key (or is not a key file).
    Refused(String),
    /// The file could not be read now (no answer, a timeout, a 5xx).
    Unreachable(String),
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
    /// Its file could not be read lately: come again in this many seconds.
    Later(u64, String),
    /// Too many URLs held, verifications running, or keys of the host:
    /// come again.
    Busy,
}

/// What a verification settled.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Settled {
    /// The URLs held for it: to apply if it verified, else dropped.
    pub urls: Vec<String>,
    /// The key was verified before (a re-check), and its file no longer
    /// holds it.
    pub revoked: bool,
    /// It took a place of this day's new hosts and did not verify: give
    /// the place back.
    pub new_host_unused: Option<i64>,
}

/// The keys known, within their caps.
pub(super) struct Keys {
    entries: HashMap<KeyId, State>,
    per_host: HashMap<HostKey, usize>,
    /// Keys verified now, per host that has one.
    verified_per_host: HashMap<HostKey, usize>,
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
        let secs = |s: u64| s.min(i64::MAX as u64 / 2) as i64;
        Keys {
            entries: HashMap::new(),
            per_host: HashMap::new(),
            verified_per_host: HashMap::new(),
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
    /// `new_host`: the place of a day's new hosts a verification started
    /// now holds (handed back by [`Keys::settle`] if it fails).
    pub(super) fn admit(
        &mut self,
        id: &KeyId,
        urls: &[String],
        now: i64,
        new_host: Option<i64>,
    ) -> Admit {
        let bytes = bytes(urls);
        let room = self.held.saturating_add(bytes) <= self.max_held;
        let (recheck, retry_refused) = (self.recheck, self.retry_refused);
        let can_verify = self.verifying < self.max_verifying;
        match self.entries.get_mut(id) {
            Some(State::Valid {
                checked,
                used,
                rechecking,
                ..
            }) => {
                *used = now;
                if now.saturating_sub(*checked) < recheck || *rechecking || !can_verify {
                    return Admit::Apply;
                }
                *rechecking = true;
                self.verifying += 1;
                Admit::ApplyAndRecheck
            }
            Some(State::Pending { urls: held, .. }) => {
                if !room {
                    return Admit::Busy;
                }
                held.extend_from_slice(urls);
                self.held += bytes;
                Admit::Held
            }
            Some(State::Refused { checked, why })
                if now.saturating_sub(*checked) < retry_refused =>
            {
                Admit::Refused(why.clone())
            }
            Some(State::Unreachable { until, why }) if now < *until => {
                Admit::Later((*until - now) as u64, why.clone())
            }
            Some(state) => {
                if !room || !can_verify {
                    return Admit::Busy;
                }
                *state = State::Pending {
                    urls: urls.to_vec(),
                    new_host,
                };
                self.held += bytes;
                self.verifying += 1;
                Admit::Verify
            }
            None => {
                if !room || !can_verify || !self.make_room(&id.host, now) {
                    return Admit::Busy;
                }
                self.entries.insert(
                    id.clone(),
                    State::Pending {
                        urls: urls.to_vec(),
                        new_host,
                    },
                );
                *self.per_host.entry(id.host.clone()).or_default() += 1;
                self.held += bytes;
                self.verifying += 1;
                Admit::Verify
            }
        }
    }

    /// Drops keys until one more of `host` fits: of the host's own when it
    /// has its most (only a refusal or an unreachable file that may be tried
    /// again: new keys cannot make a host's key files be fetched more than
    /// [`MAX_KEYS_PER_HOST`] times a refusal period), then of any host (a
    /// refused or unreachable key first, then the verified key used longest
    /// ago). Whether one fits.
    fn make_room(&mut self, host: &HostKey, now: i64) -> bool {
        if self.per_host.get(host).copied().unwrap_or(0) >= MAX_KEYS_PER_HOST {
            let retry_refused = self.retry_refused;
            let expired = self
                .entries
                .iter()
                .find(|(id, state)| {
                    id.host == *host
                        && match state {
                            State::Refused { checked, .. } => {
                                now.saturating_sub(*checked) >= retry_refused
                            }
                            State::Unreachable { until, .. } => now >= *until,
                            _ => false,
                        }
                })
                .map(|(id, _)| id.clone());
            match expired {
                Some(id) => {
                    self.remove(&id);
                }
                None => return false,
            }
        }
        self.entries.len() < self.cap || self.drop_one()
    }

    /// Drops one key not being verified: whether one went.
    fn drop_one(&mut self) -> bool {
        let victim = self
            .entries
            .iter()
            .filter(|(_, state)| !state.busy())
            .min_by_key(|(_, state)| match state {
                State::Refused { .. } | State::Unreachable { .. } => (0, 0),
                State::Valid { used, .. } => (1, *used),
                State::Pending { .. } => (2, 0),
            })
            .map(|(id, _)| id.clone());
        match victim {
            Some(id) => {
                self.remove(&id);
                true
            }
            None => false,
        }
    }

    fn remove(&mut self, id: &KeyId) -> Option<State> {
        let state = self.entries.remove(id)?;
        if let Some(n) = self.per_host.get_mut(&id.host) {
            *n -= 1;
            if *n == 0 {
                self.per_host.remove(&id.host);
            }
        }
        if matches!(state, State::Valid { .. }) {
            self.count_verified(&id.host, true, false);
        }
        Some(state)
    }

    /// Keeps [`Keys::verified_per_host`] as a key of `host` goes from
    /// verified (`was`) or not to verified (`is`) or not.
    fn count_verified(&mut self, host: &HostKey, was: bool, is: bool) {
        match (was, is) {
            (false, true) => *self.verified_per_host.entry(host.clone()).or_default() += 1,
            (true, false) => {
                if let Some(n) = self.verified_per_host.get_mut(host) {
                    *n -= 1;
                    if *n == 0 {
                        self.verified_per_host.remove(host);
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether a push under `id` at `now` would start its verification.
    pub(super) fn would_verify(&self, id: &KeyId, now: i64) -> bool {
        match self.entries.get(id) {
            None => true,
            Some(State::Refused { checked, .. }) => {
                now.saturating_sub(*checked) >= self.retry_refused
            }
            Some(State::Unreachable { until, .. }) => now >= *until,
            Some(_) => false,
        }
    }

    /// The verification of `id` ended at `now` with `verdict`.
    pub(super) fn settle(&mut self, id: &KeyId, verdict: &Verdict, now: i64) -> Settled {
        let was = self.is_verified(id);
        let settled = self.settle_state(id, verdict, now);
        let is = self.is_verified(id);
        self.count_verified(&id.host, was, is);
        settled
    }

    /// [`Keys::settle`]'s change of `id`'s state.
    fn settle_state(&mut self, id: &KeyId, verdict: &Verdict, now: i64) -> Settled {
        self.verifying = self.verifying.saturating_sub(1);
        // Entries being verified are never dropped: it is there.
        let Some(state) = self.entries.get_mut(id) else {
            return Settled::default();
        };
        let refused = |why: &String| State::Refused {
            checked: now,
            why: why.clone(),
        };
        match std::mem::replace(
            state,
            State::Refused {
                checked: now,
                why: String::new(),
            },
        ) {
            State::Pending { urls, new_host } => {
                *state = match verdict {
                    Verdict::Holds => State::Valid {
                        checked: now,
                        verified: now,
                        used: now,
                        rechecking: false,
                    },
                    Verdict::Refused(why) => refused(why),
                    Verdict::Unreachable(why) => State::Unreachable {
                        until: now.saturating_add(RETRY_UNREACHABLE),
                        why: why.clone(),
                    },
                };
                self.held = self.held.saturating_sub(bytes(&urls));
                Settled {
                    urls,
                    revoked: false,
                    new_host_unused: new_host.filter(|_| *verdict != Verdict::Holds),
                }
            }
            State::Valid {
                checked,
                verified,
                used,
                ..
            } => {
                // A file unread for two re-check periods no longer vouches.
                let lost = now.saturating_sub(verified) >= self.recheck.saturating_mul(2);
                let verdict = match verdict {
                    Verdict::Unreachable(why) if lost => &Verdict::Refused(format!(
                        "{why}, since the key was last verified long ago"
                    )),
                    verdict => verdict,
                };
                let revoked = matches!(verdict, Verdict::Refused(_));
                *state = match verdict {
                    Verdict::Holds => State::Valid {
                        checked: now,
                        verified: now,
                        used,
                        rechecking: false,
                    },
                    Verdict::Refused(why) => refused(why),
                    // Still verified; checked again a little later.
                    Verdict::Unreachable(_) => State::Valid {
                        checked: checked.max(
                            now.saturating_sub(self.recheck)
                                .saturating_add(RECHECK_UNREACHABLE),
                        ),
                        verified,
                        used,
                        rechecking: false,
                    },
                };
                Settled {
                    revoked,
                    ..Settled::default()
                }
            }
            other => {
                *state = other;
                Settled::default()
            }
        }
    }

    /// Whether `id` is verified now.
    pub(super) fn is_verified(&self, id: &KeyId) -> bool {
        matches!(self.entries.get(id), Some(State::Valid { .. }))
    }

    /// Whether a key of `host` is verified now.
    pub(super) fn host_verified(&self, host: &HostKey) -> bool {
        self.verified_per_host.contains_key(host)
    }

    /// Hosts with a key verified now.
    pub(super) fn verified_hosts(&self) -> usize {
        self.verified_per_host.len()
    }

    /// [`Keys::verified_hosts`] counted over every entry, for tests of the
    /// kept count.
    #[cfg(test)]
    fn verified_hosts_counted(&self) -> usize {
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
        id_with(host, "0123456789abcdef")
    }

    fn id_with(host: &str, key: &str) -> KeyId {
        KeyId {
            host: sitemapd_parser::NormUrl::parse(&format!("https://{host}/"))
                .unwrap()
                .host_key(),
            key: key.into(),
            location: format!("https://{host}/{key}.txt"),
        }
    }

    fn urls(n: usize) -> Vec<String> {
        // 22 bytes each.
        (0..n)
            .map(|i| format!("https://a.example/{i:04}"))
            .collect()
    }

    fn no(why: &str) -> Verdict {
        Verdict::Refused(why.into())
    }

    #[test]
    fn a_key_is_verified_once_then_applied_and_verified_again_when_due() {
        let mut k = Keys::new(10, 10_000, 4, 3_600, 600);
        let a = id("a.example");
        assert_eq!(k.admit(&a, &urls(2), T, None), Admit::Verify);
        assert_eq!(k.admit(&a, &urls(3), T + 1, None), Admit::Held);
        let settled = k.settle(&a, &Verdict::Holds, T + 2);
        assert_eq!(settled.urls.len(), 5);
        assert_eq!(k.sizes(), (1, 0));
        assert_eq!(k.admit(&a, &urls(1), T + 10, None), Admit::Apply);
        assert_eq!(k.verified_hosts(), 1);
        // An hour on: applied, and verified again once.
        assert_eq!(
            k.admit(&a, &urls(1), T + 3_700, None),
            Admit::ApplyAndRecheck
        );
        assert_eq!(k.admit(&a, &urls(1), T + 3_701, None), Admit::Apply);
        // The file no longer holds it: revoked.
        let settled = k.settle(&a, &no("gone"), T + 3_702);
        assert!(settled.revoked && settled.urls.is_empty());
        assert!(!k.host_verified(&a.host));
        assert_eq!(
            k.admit(&a, &urls(1), T + 3_703, None),
            Admit::Refused("gone".into())
        );
        assert_eq!(k.verified_hosts(), 0);
        // Tried again once the refusal is old enough.
        assert_eq!(k.admit(&a, &urls(1), T + 4_400, None), Admit::Verify);
    }

    #[test]
    fn a_refused_key_drops_its_urls_and_gives_back_its_new_host_place() {
        let mut k = Keys::new(10, 10_000, 4, 3_600, 600);
        let a = id("a.example");
        assert_eq!(k.admit(&a, &urls(4), T, Some(T)), Admit::Verify);
        let settled = k.settle(&a, &no("404"), T + 1);
        assert_eq!(settled.urls.len(), 4, "handed back, to be dropped");
        assert!(!settled.revoked);
        assert_eq!(settled.new_host_unused, Some(T));
        assert!(!k.would_verify(&a, T + 2));
        assert!(k.would_verify(&a, T + 601));
        assert_eq!(k.sizes(), (1, 0));
        assert_eq!(
            k.admit(&a, &urls(1), T + 2, None),
            Admit::Refused("404".into())
        );
    }

    /// A file that cannot be read now is neither a refusal nor a
    /// revocation: the push is asked to come again, and a verified key
    /// stays verified and is checked again later.
    #[test]
    fn an_unreachable_key_file_is_tried_again_and_revokes_nothing() {
        let mut k = Keys::new(10, 10_000, 4, 3_600, 600);
        let a = id("a.example");
        assert_eq!(k.admit(&a, &urls(1), T, None), Admit::Verify);
        let settled = k.settle(&a, &Verdict::Unreachable("503".into()), T);
        assert_eq!(settled.urls.len(), 1);
        assert_eq!(
            k.admit(&a, &urls(1), T + 10, None),
            Admit::Later((RETRY_UNREACHABLE - 10) as u64, "503".into())
        );
        assert_eq!(
            k.admit(&a, &urls(1), T + RETRY_UNREACHABLE, None),
            Admit::Verify
        );
        k.settle(&a, &Verdict::Holds, T + RETRY_UNREACHABLE);
        let later = T + RETRY_UNREACHABLE + 3_600;
        assert_eq!(k.admit(&a, &urls(1), later, None), Admit::ApplyAndRecheck);
        let settled = k.settle(&a, &Verdict::Unreachable("timeout".into()), later);
        assert!(!settled.revoked);
        assert!(k.host_verified(&a.host));
        assert_eq!(k.admit(&a, &urls(1), later + 1, None), Admit::Apply);
        assert_eq!(
            k.admit(&a, &urls(1), later + RECHECK_UNREACHABLE, None),
            Admit::ApplyAndRecheck
        );
        // Unread for two re-check periods since it was verified: revoked.
        let lost = T + RETRY_UNREACHABLE + 2 * 3_600;
        let settled = k.settle(&a, &Verdict::Unreachable("timeout".into()), lost);
        assert!(settled.revoked);
        assert!(!k.host_verified(&a.host));
    }

    #[test]
    fn held_urls_and_verifications_have_caps() {
        let mut k = Keys::new(100, 8 * 22, 2, 3_600, 600);
        assert_eq!(k.admit(&id("a.example"), &urls(6), T, None), Admit::Verify);
        assert_eq!(k.admit(&id("a.example"), &urls(6), T, None), Admit::Busy);
        assert_eq!(k.admit(&id("b.example"), &urls(2), T, None), Admit::Verify);
        assert_eq!(k.admit(&id("c.example"), &urls(1), T, None), Admit::Busy);
        k.settle(&id("a.example"), &Verdict::Holds, T);
        assert_eq!(k.admit(&id("c.example"), &urls(1), T, None), Admit::Verify);
        assert_eq!(k.sizes(), (3, 3 * 22));
    }

    /// Any number of keys: the table stays within its cap, refused keys go
    /// before verified ones, a verified key in use stays, and a key being
    /// verified is never the one dropped.
    #[test]
    fn the_keys_known_stay_within_their_caps() {
        let mut k = Keys::new(50, 100_000, 1_000, 3_600, 600);
        let pending = id("first.example");
        assert_eq!(k.admit(&pending, &urls(1), T, None), Admit::Verify);
        let verified = id("verified.example");
        k.admit(&verified, &urls(1), T, None);
        k.settle(&verified, &Verdict::Holds, T);
        for i in 0..10_000 {
            let host = id(&format!("h{i}.example"));
            if k.admit(&host, &urls(1), T, None) == Admit::Verify {
                k.settle(&host, &no("no"), T);
            }
            assert!(k.sizes().0 <= 50);
            assert_eq!(k.verified_hosts(), k.verified_hosts_counted());
        }
        // Verified keys pushing out the least used verified keys, revoked
        // and re-verified: the count kept is the count of the entries.
        let mut v = Keys::new(20, 100_000, 1_000, 3_600, 600);
        for i in 0..500 {
            let key = id_with(
                &format!("v{}.example", i % 37),
                &format!("key-{:08}", i % 53),
            );
            let now = T + i64::from(i) * 4_000;
            if matches!(
                v.admit(&key, &urls(1), now, None),
                Admit::Verify | Admit::ApplyAndRecheck
            ) {
                let verdict = if i % 3 == 0 { no("no") } else { Verdict::Holds };
                v.settle(&key, &verdict, now);
            }
            assert_eq!(v.verified_hosts(), v.verified_hosts_counted(), "{i}");
        }
        assert!(v.verified_hosts() > 0);
        assert_eq!(k.admit(&pending, &urls(1), T, None), Admit::Held);
        assert_eq!(k.admit(&verified, &urls(1), T, None), Admit::Apply);
        // Random keys of one host: at most a host's worth of key files
        // fetched a refusal period, its verified key and other hosts' kept.
        let mut k = Keys::new(50, 100_000, 1_000, 3_600, 600);
        let other = id("other.example");
        k.admit(&other, &urls(1), T, None);
        k.settle(&other, &no("no"), T);
        let good = id_with("a.example", "good-key-0000001");
        k.admit(&good, &urls(1), T, None);
        k.settle(&good, &Verdict::Holds, T);
        let mut fetched = 0;
        for i in 0..1_000 {
            let key = id_with("a.example", &format!("random-key-{i:05}"));
            match k.admit(&key, &urls(1), T + i, None) {
                Admit::Verify => {
                    fetched += 1;
                    k.settle(&key, &no("no"), T + i);
                }
                other => assert_eq!(other, Admit::Busy),
            }
        }
        // 1,000 s: the first 7 places, and each again after its 600 s.
        assert_eq!(fetched, 2 * (MAX_KEYS_PER_HOST - 1));
        assert!(k.sizes().0 <= MAX_KEYS_PER_HOST + 1);
        assert_eq!(k.admit(&good, &urls(1), T + 1_000, None), Admit::Apply);
        assert_eq!(
            k.admit(&other, &urls(1), T + 10, None),
            Admit::Refused("no".into())
        );
    }
}
