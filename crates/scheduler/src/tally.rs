//! Counts kept, not scanned: per host, how many of its URL records are in
//! each state ([`Tally`]), stored in its host record (`h` ‖ host; key
//! layouts 4 to 7 kept them under `t` ‖ host) and changed in the same
//! atomic batch as the records they count (by
//! [`UrlWrites`](crate::writes::UrlWrites)). `stats` adds up one small
//! record per host instead of reading every URL; `stats --check`
//! ([`Store::check`](crate::Store::check)) recounts them from the records
//! and names any host whose kept counts differ.

use serde::{Deserialize, Serialize};

use crate::record::{Lapse, Record, StoredOutcome, UrlRecord};

/// The last-fetch outcomes a [`Tally`] counts, in its `outcomes` order.
pub(crate) const OUTCOMES: [StoredOutcome; 5] = [
    StoredOutcome::Changed,
    StoredOutcome::NotModified,
    StoredOutcome::Gone,
    StoredOutcome::Error(0),
    StoredOutcome::Redirected,
];

/// One host's URL records counted by state. Signed, so that a change
/// (one record's contribution less another's) is a `Tally` too; a stored
/// count is never below zero unless the counts were damaged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Tally {
    /// In the queue: neither retired nor blocked.
    pub active: i64,
    /// Retired (absent from their sitemaps).
    pub retired: i64,
    /// Not retired, disallowed by robots.txt.
    pub blocked: i64,
    /// Active and gone (probed only).
    pub gone: i64,
    /// Active and moved for good (probed only).
    pub moved: i64,
    /// Active and never fetched.
    pub never_fetched: i64,
    /// Active with a lastmod.
    pub with_lastmod: i64,
    /// Active with a lease held (granted, neither completed nor leased
    /// again; one that ran out is counted until then).
    pub leases: i64,
    /// Every record (retired ones too) by its last fetch's outcome, in
    /// [`OUTCOMES`] order.
    pub outcomes: [i64; 5],
    /// Completed by a URL frontier client, out of the queue for good
    /// (format version 6).
    pub completed: i64,
}

/// [`Tally`] as format versions 4 and 5 wrote it: without `completed`.
#[derive(Deserialize)]
struct TallyV5 {
    active: i64,
    retired: i64,
    blocked: i64,
    gone: i64,
    moved: i64,
    never_fetched: i64,
    with_lastmod: i64,
    leases: i64,
    outcomes: [i64; 5],
}

impl Record for Tally {
    fn from_older(version: u8, body: &[u8]) -> Result<Self, postcard::Error> {
        if version >= 6 {
            // Unchanged since version 6.
            return postcard::from_bytes(body);
        }
        let v: TallyV5 = postcard::from_bytes(body)?;
        Ok(Tally {
            active: v.active,
            retired: v.retired,
            blocked: v.blocked,
            gone: v.gone,
            moved: v.moved,
            never_fetched: v.never_fetched,
            with_lastmod: v.with_lastmod,
            leases: v.leases,
            outcomes: v.outcomes,
            completed: 0,
        })
    }
}

impl Tally {
    /// Records holding a lease (running or run out).
    pub(crate) fn leases(&self) -> i64 {
        self.leases
    }

    /// One more lease.
    pub(crate) fn add_lease(&mut self) {
        self.leases += 1;
    }

    /// What one record adds to its host's counts.
    pub(crate) fn of(rec: &UrlRecord) -> Tally {
        let mut t = Tally::default();
        if let Some(outcome) = rec.fetch.last_outcome {
            t.outcomes[outcome_index(outcome)] = 1;
        }
        // A client's "completed" is final: it stands over a retirement.
        if rec.completed {
            t.completed = 1;
            return t;
        }
        if rec.retired {
            t.retired = 1;
            return t;
        }
        if rec.blocked {
            t.blocked = 1;
            return t;
        }
        t.active = 1;
        t.gone = i64::from(rec.lapsed == Some(Lapse::Gone));
        t.moved = i64::from(rec.lapsed == Some(Lapse::Moved));
        t.never_fetched = i64::from(rec.fetch.last_fetch.is_none());
        t.with_lastmod = i64::from(rec.lastmod.is_some());
        t.leases = i64::from(rec.schedule.lease.is_some());
        t
    }

    /// Adds `other` times `sign` (1 or −1) to every count.
    pub(crate) fn add(&mut self, other: &Tally, sign: i64) {
        let pairs = [
            (&mut self.active, other.active),
            (&mut self.retired, other.retired),
            (&mut self.blocked, other.blocked),
            (&mut self.gone, other.gone),
            (&mut self.moved, other.moved),
            (&mut self.never_fetched, other.never_fetched),
            (&mut self.with_lastmod, other.with_lastmod),
            (&mut self.leases, other.leases),
            (&mut self.completed, other.completed),
        ];
        for (mine, theirs) in pairs {
            *mine = mine.saturating_add(theirs.saturating_mul(sign));
        }
        for (mine, theirs) in self.outcomes.iter_mut().zip(other.outcomes) {
            *mine = mine.saturating_add(theirs.saturating_mul(sign));
        }
    }

    /// Every count zero.
    pub(crate) fn is_zero(&self) -> bool {
        *self == Tally::default()
    }
}

/// A kept count as a number of records: a count below zero (damaged
/// counts) reads as none.
pub(crate) fn count(n: i64) -> u64 {
    n.max(0).unsigned_abs()
}

fn outcome_index(outcome: StoredOutcome) -> usize {
    match outcome {
        StoredOutcome::Changed => 0,
        StoredOutcome::NotModified => 1,
        StoredOutcome::Gone => 2,
        StoredOutcome::Error(_) => 3,
        StoredOutcome::Redirected => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{FetchState, Schedule, StoredReason};

    fn record() -> UrlRecord {
        UrlRecord::new(1_700_000_000, &[])
    }

    #[test]
    fn a_record_counts_once_in_its_state() {
        let new = Tally::of(&record());
        assert_eq!((new.active, new.never_fetched, new.leases), (1, 1, 0));
        let mut fetched = record();
        fetched.fetch = FetchState {
            last_fetch: Some(1),
            last_outcome: Some(StoredOutcome::Error(503)),
            ..FetchState::default()
        };
        fetched.lapsed = Some(Lapse::Gone);
        fetched.schedule = Schedule {
            due: 5,
            score: 1.0,
            reason: StoredReason::New,
            lease: Some((1, 5)),
        };
        let t = Tally::of(&fetched);
        assert_eq!(
            (t.active, t.never_fetched, t.gone, t.leases, t.outcomes[3]),
            (1, 0, 1, 1, 1)
        );
        fetched.retired = true;
        let t = Tally::of(&fetched);
        assert_eq!((t.active, t.retired, t.gone, t.outcomes[3]), (0, 1, 0, 1));
        let mut blocked = record();
        blocked.blocked = true;
        let t = Tally::of(&blocked);
        assert_eq!((t.active, t.blocked, t.never_fetched), (0, 1, 0));
        let mut completed = record();
        completed.completed = true;
        let t = Tally::of(&completed);
        assert_eq!((t.active, t.completed, t.never_fetched), (0, 1, 0));
    }

    /// Counts written before `completed` was kept read with none.
    #[test]
    fn version_5_counts_read_with_none_completed() {
        let mut t = Tally::of(&record());
        t.completed = 0;
        let mut bytes = crate::record::encode(&t);
        bytes.truncate(bytes.len() - 1); // the varint 0 of `completed`
        bytes[0] = 5;
        assert_eq!(crate::record::decode::<Tally>(&bytes).unwrap(), t);
    }

    /// A count's place in `outcomes` is its kind's place in [`OUTCOMES`].
    #[test]
    fn outcomes_are_counted_in_their_own_slot() {
        for (i, kind) in OUTCOMES.iter().enumerate() {
            assert_eq!(outcome_index(*kind), i, "{}", kind.name());
        }
        assert_eq!(outcome_index(StoredOutcome::Error(503)), 3);
    }

    #[test]
    fn a_change_is_the_difference_and_undoes_itself() {
        let (a, mut b) = (record(), record());
        b.retired = true;
        let mut change = Tally::of(&b);
        change.add(&Tally::of(&a), -1);
        assert_eq!(
            (change.active, change.retired, change.never_fetched),
            (-1, 1, -1)
        );
        let mut total = Tally::of(&a);
        total.add(&change, 1);
        assert_eq!(total, Tally::of(&b));
        change.add(&change.clone(), -1);
        assert!(change.is_zero());
    }
}
