//! The due index's runs: how one batch changes them.
//!
//! A lane ([`keys::lane`]: one queue, one host, one urgency class) holds
//! its due entries in runs ([`keys::run`]): a run is keyed by its first
//! entry's place ([`keys::position`]) and holds the entries from there up
//! to the next run's key, at most [`RUN_CAP`], sorted. So an ingest that
//! finds a thousand new URLs of a site writes about thirty keys for their
//! due entries, and a lease reads a lane from its first run in the queue
//! order, entry after entry.
//!
//! A lane's head ([`keys::head`]) is the due time of its first entry:
//! what a lease merges the lanes by. A batch that changes a lane's first
//! entry moves its head in the same batch.
//!
//! [`RunEdits`] collects what one batch does to the runs (entries that
//! leave, entries that join, leases marked), then [`RunEdits::apply`]
//! reads each run it changes once, changes it, cuts it when it grew past
//! [`RUN_CAP`] (each part keyed by its first entry), and moves the heads.
//! The caller holds the store's write lock from reading to applying.

use crate::due_list::Lease;
use crate::error::StoreError;
use crate::hash::{FastMap, FastSet};
use crate::keys::{self, RUN_CAP};
use crate::kv::{Batch, Kv};
use crate::record::{DueList, Listed};

/// Runs a thread decodes or encodes at least ([`crate::parallel::map`]): a
/// run takes a few microseconds, so a batch spreads its runs once it has a
/// few hundred (an ingest's), not for a completion of a hundred URLs.
const RUNS_PER_THREAD: usize = 128;

/// Runs [`locate`] walks past without a place before it seeks instead.
const WALK: usize = 8;

/// What one batch does to one lane.
#[derive(Default)]
struct LaneEdit {
    /// The lane's queue, host and class (for its head).
    queue: String,
    host: String,
    class: u8,
    /// Entries that leave it, by URL (each at its place).
    removed: Vec<(Vec<u8>, String)>,
    /// Entries that join it.
    added: Vec<Listed>,
    /// Runs a lease marked, by key: the run as the lease read it (under
    /// the same lock), how many entries it holds, and the marks by index.
    marked: FastMap<Vec<u8>, Marked>,
}

/// Leases marked on the entries of one run.
struct Marked {
    value: crate::kv::Bytes,
    len: usize,
    marks: Vec<(usize, Lease)>,
}

/// What one batch does to the runs of the due index.
#[derive(Default)]
pub(crate) struct RunEdits {
    lanes: FastMap<Vec<u8>, LaneEdit>,
}

impl RunEdits {
    fn lane(&mut self, lane: &[u8], queue: &str, host: &str, class: u8) -> &mut LaneEdit {
        if !self.lanes.contains_key(lane) {
            let edit = LaneEdit {
                queue: queue.to_string(),
                host: host.to_string(),
                class,
                ..LaneEdit::default()
            };
            self.lanes.insert(lane.to_vec(), edit);
        }
        self.lanes.get_mut(lane).expect("inserted above")
    }

    /// `url`'s entry, at `position` in lane `lane` (of `queue`, `host`,
    /// `class`), leaves it.
    pub(crate) fn remove(
        &mut self,
        (lane, queue, host, class): (&[u8], &str, &str, u8),
        position: Vec<u8>,
        url: &str,
    ) {
        let edit = self.lane(lane, queue, host, class);
        edit.removed.push((position, url.to_string()));
    }

    /// `entry` joins lane `lane` (of `queue`, `host`, `class`).
    pub(crate) fn add(
        &mut self,
        (lane, queue, host, class): (&[u8], &str, &str, u8),
        entry: Listed,
    ) {
        self.lane(lane, queue, host, class).added.push(entry);
    }

    /// The entry at `index` of the run at `run` (as a lease read it:
    /// `value`, of `len` entries) takes `lease`.
    pub(crate) fn mark(
        &mut self,
        run: &[u8],
        index: usize,
        (value, len): (crate::kv::Bytes, usize),
        lease: Lease,
    ) {
        let Some(key) = keys::parse_run(run) else {
            return;
        };
        let lane = run[..key.lane_len].to_vec();
        let (queue, host, class) = (key.queue, key.host, key.class);
        let edit = self.lane(&lane, queue, host, class);
        let marked = edit.marked.entry(run.to_vec()).or_insert(Marked {
            value,
            len,
            marks: Vec::new(),
        });
        marked.marks.push((index, lease));
    }

    /// Adds the changed runs and heads to `batch`. The runs are read lane
    /// by lane; decoding them and encoding what replaces them is spread
    /// over the cores ([`crate::parallel`]), every lane's at once.
    pub(crate) fn apply(self, kv: &Kv, batch: &mut Batch) -> Result<(), StoreError> {
        let mut lanes: Vec<Located> = Vec::with_capacity(self.lanes.len());
        for (lane, edit) in self.lanes {
            if edit.removed.is_empty() && edit.added.is_empty() {
                // Leases only: each run's front rewritten, its entries'
                // bytes kept.
                for (run, m) in edit.marked {
                    remark(batch, run, &m);
                }
            } else {
                lanes.push(locate(kv, lane, edit)?);
            }
        }
        let read: Vec<&crate::kv::Bytes> = lanes
            .iter()
            .flat_map(|l| l.runs.iter().map(|(_, value)| value))
            .collect();
        let mut decoded = crate::parallel::map(read, RUNS_PER_THREAD, |value| {
            crate::due_list::decode(value)
        })
        .into_iter();
        let mut jobs = Vec::new();
        for (at, lane) in lanes.iter_mut().enumerate() {
            let runs: Vec<_> = decoded.by_ref().take(lane.runs.len()).collect();
            jobs.extend(lane.jobs(at, runs, batch));
        }
        // Each rewritten run merged and cut, then every part encoded: a lane
        // new to the store is one job of many parts.
        let cut = crate::parallel::map(jobs, RUNS_PER_THREAD, RunWrite::cut);
        let mut olds: Vec<(usize, Option<Vec<u8>>)> = Vec::with_capacity(cut.len());
        let mut parts: Vec<(usize, Vec<Listed>)> = Vec::new();
        for (j, run) in cut.into_iter().enumerate() {
            olds.push((run.lane, run.old));
            parts.extend(run.parts.into_iter().map(|part| (j, part)));
        }
        let encoded = crate::parallel::map(parts, RUNS_PER_THREAD, |(j, part)| {
            let key = keys::run(&lanes[olds[j].0].lane, &part[0].position());
            (j, key, crate::due_list::encode(&DueList { entries: part }))
        });
        let mut encoded = encoded.into_iter().peekable();
        let mut olds = olds.into_iter().enumerate().peekable();
        for (at, lane) in lanes.iter().enumerate() {
            let mut deleted: FastSet<Vec<u8>> = FastSet::default();
            let mut inserted: Vec<Vec<u8>> = Vec::new();
            while let Some((j, (_, old))) = olds.next_if(|(_, (l, _))| *l == at) {
                let mut old_kept = false;
                while let Some((_, key, value)) = encoded.next_if(|(k, _, _)| *k == j) {
                    old_kept |= old.as_ref() == Some(&key);
                    inserted.push(key.clone());
                    batch.insert(key, value);
                }
                if let (Some(old), false) = (old, old_kept) {
                    batch.remove(old.clone());
                    deleted.insert(old);
                }
            }
            move_head(kv, batch, &lane.lane, &lane.edit, &deleted, &inserted)?;
        }
        Ok(())
    }
}

/// Rewrites the front of the run at `run` (as a lease read it) with the
/// leases `m` marks, its entries' bytes kept.
fn remark(batch: &mut Batch, run: Vec<u8>, m: &Marked) {
    match crate::due_list::remark(&m.value, Some(m.len), &m.marks) {
        Ok(value) => batch.insert(run, value),
        Err(e) => tracing::warn!(error = %e, "corrupt run not marked (stats --check names it)"),
    }
}

/// `lane ‖ position ‖ 0`: the first key after the run key `lane ‖ position`.
fn just_after(lane: &[u8], position: &[u8]) -> Vec<u8> {
    let mut k = keys::run(lane, position);
    k.push(0);
    k
}

/// One lane's edit with the runs it changes, read (not yet decoded).
struct Located {
    lane: Vec<u8>,
    edit: LaneEdit,
    /// Every place the batch changes, in order (an entry that changes in
    /// place is both removed and added there).
    places: Vec<(Vec<u8>, Change)>,
    /// The run (index into `runs`) holding each place: the last run keyed
    /// at or before it; before the lane's first run, that first run; none
    /// in an empty lane.
    owner: Vec<Option<usize>>,
    /// The runs the places fall in, by key, as stored.
    runs: Vec<(Vec<u8>, crate::kv::Bytes)>,
}

/// Reads the runs `edit` changes in `lane`.
fn locate(kv: &Kv, lane: Vec<u8>, mut edit: LaneEdit) -> Result<Located, StoreError> {
    let end = keys::lane_end(&lane);
    // The removed entries' places move here (their URLs stay).
    let mut places: Vec<(Vec<u8>, Change)> = edit
        .removed
        .iter_mut()
        .enumerate()
        .map(|(i, (p, _))| (std::mem::take(p), Change::Remove(i)))
        .chain(
            edit.added
                .iter()
                .enumerate()
                .map(|(i, e)| (e.position(), Change::Add(i))),
        )
        .collect();
    places.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut runs: Vec<(Vec<u8>, crate::kv::Bytes)> = Vec::new();
    let mut owner: Vec<Option<usize>> = vec![None; places.len()];
    // The run holding the place found by a seek, then the lane walked from
    // it run by run while the places stay near (a run the walk passes
    // costs less than a seek); a gap of more than `WALK` runs without a
    // place is crossed by seeking again.
    let mut i = 0;
    while i < places.len() {
        let after = just_after(&lane, &places[i].0);
        let mut current = kv.last_in(lane.clone()..after.clone())?;
        let mut later = kv.range(after..end.clone());
        let mut next = later.next().transpose()?;
        if current.is_none() {
            // Before the lane's first run: that run holds it.
            current = next;
            next = later.next().transpose()?;
        }
        let mut current_at: Option<usize> = None;
        let mut passed = 0;
        loop {
            // Every place before the next run goes to the current one.
            let limit = next.as_ref().map(|(k, _)| &k[lane.len()..]);
            while i < places.len() && limit.is_none_or(|limit| places[i].0[..] < *limit) {
                if current_at.is_none() {
                    current_at = current.take().map(|(key, value)| {
                        runs.push((key.to_vec(), value));
                        runs.len() - 1
                    });
                }
                owner[i] = current_at;
                i += 1;
                passed = 0;
            }
            if i == places.len() || next.is_none() || passed == WALK {
                break;
            }
            current = next;
            current_at = None;
            next = later.next().transpose()?;
            passed += 1;
        }
    }
    Ok(Located {
        lane,
        edit,
        places,
        owner,
        runs,
    })
}

impl Located {
    /// The runs to write (lane number `at`), from the runs as decoded
    /// (`decoded`, in the order of `runs`): the leases marked first (their
    /// places are in the runs as the lease read them), then what leaves
    /// and what joins each run; what joins no run (an empty lane, or a run
    /// that does not decode) makes runs of its own. A run that does not
    /// decode is left as it is for `stats --repair` (its entries cannot be
    /// read), and nothing joins it.
    fn jobs(
        &mut self,
        at: usize,
        decoded: Vec<Result<DueList, crate::record::RecordError>>,
        batch: &mut Batch,
    ) -> Vec<RunWrite> {
        let mut runs: Vec<Option<Vec<Listed>>> = decoded
            .into_iter()
            .map(|d| match d {
                Ok(list) => Some(list.entries),
                Err(e) => {
                    tracing::warn!(error = %e, "corrupt run left for stats --repair");
                    None
                }
            })
            .collect();
        for (run, m) in std::mem::take(&mut self.edit.marked) {
            match self.runs.iter().position(|(key, _)| *key == run) {
                Some(r) => {
                    if let Some(entries) = runs[r].as_mut() {
                        for &(index, lease) in &m.marks {
                            if let Some(entry) = entries.get_mut(index) {
                                entry.lease = Some(lease);
                            }
                        }
                    }
                }
                None => remark(batch, run, &m),
            }
        }
        let mut gone: Vec<FastSet<String>> = vec![FastSet::default(); runs.len()];
        let mut joining: Vec<Vec<usize>> = vec![Vec::new(); runs.len()];
        let mut fresh: Vec<usize> = Vec::new();
        for ((_, change), run) in self.places.iter().zip(&self.owner) {
            let run = run.filter(|&r| runs[r].is_some());
            match (*change, run) {
                (Change::Remove(i), Some(r)) => {
                    gone[r].insert(std::mem::take(&mut self.edit.removed[i].1));
                }
                (Change::Remove(i), None) => tracing::warn!(
                    url = self.edit.removed[i].1,
                    "a due entry to remove was not found (stats --check names it)"
                ),
                (Change::Add(i), Some(r)) => joining[r].push(i),
                (Change::Add(i), None) => fresh.push(i),
            }
        }
        let mut added: Vec<Option<Listed>> = std::mem::take(&mut self.edit.added)
            .into_iter()
            .map(Some)
            .collect();
        let mut take = |indices: &[usize]| -> Vec<Listed> {
            indices.iter().filter_map(|&i| added[i].take()).collect()
        };
        let mut jobs = Vec::new();
        for (r, entries) in runs.into_iter().enumerate() {
            let Some(entries) = entries else { continue };
            jobs.push(RunWrite {
                lane: at,
                old: Some(self.runs[r].0.clone()),
                entries,
                gone: std::mem::take(&mut gone[r]),
                joining: take(&joining[r]),
            });
        }
        if !fresh.is_empty() {
            jobs.push(RunWrite {
                lane: at,
                old: None,
                entries: Vec::new(),
                gone: FastSet::default(),
                joining: take(&fresh),
            });
        }
        jobs
    }
}

/// One run rewritten: its entries as stored, those that leave, those that
/// join.
struct RunWrite {
    /// Its lane's number in the batch.
    lane: usize,
    /// The key it was stored under (`None`: a run new to this batch).
    old: Option<Vec<u8>>,
    entries: Vec<Listed>,
    gone: FastSet<String>,
    joining: Vec<Listed>,
}

/// A run rewritten, not yet encoded: its parts, in order.
struct Cut {
    lane: usize,
    old: Option<Vec<u8>>,
    parts: Vec<Vec<Listed>>,
}

impl RunWrite {
    /// The entries kept and joined, sorted, cut into runs of at most
    /// [`RUN_CAP`].
    fn cut(self) -> Cut {
        let mut entries = self.entries;
        if !self.gone.is_empty() {
            entries.retain(|e| !self.gone.contains(e.url.as_str()));
        }
        merge(&mut entries, self.joining);
        Cut {
            lane: self.lane,
            old: self.old,
            parts: cut(entries),
        }
    }
}

/// A change a batch makes at a place: an entry removed, or one added (by
/// its index in the lane's edit).
#[derive(Debug, Clone, Copy)]
enum Change {
    Remove(usize),
    Add(usize),
}

/// `kept` (a run's entries, what the batch removed gone) with `joining`
/// (what it adds), sorted; an added entry stands for a kept one of its URL
/// (the batch writes each URL once, so this is only a guard).
fn merge(kept: &mut Vec<Listed>, joining: Vec<Listed>) {
    if !kept.is_empty() {
        let urls: FastSet<&str> = joining.iter().map(|e| e.url.as_str()).collect();
        kept.retain(|e| !urls.contains(e.url.as_str()));
    }
    kept.extend(joining);
    kept.sort_by(Listed::order);
}

/// `entries` (sorted) in runs of at most [`RUN_CAP`], as even as can be.
fn cut(entries: Vec<Listed>) -> Vec<Vec<Listed>> {
    if entries.is_empty() {
        return Vec::new();
    }
    let parts = entries.len().div_ceil(RUN_CAP);
    let size = entries.len().div_ceil(parts);
    let mut out = Vec::with_capacity(parts);
    let mut rest = entries.into_iter().peekable();
    while rest.peek().is_some() {
        out.push(rest.by_ref().take(size).collect());
    }
    out
}

/// Moves the head of `lane` to its first entry's due time after this
/// batch (`deleted` and `inserted`: the run keys it removes and writes).
fn move_head(
    kv: &Kv,
    batch: &mut Batch,
    lane: &[u8],
    edit: &LaneEdit,
    deleted: &FastSet<Vec<u8>>,
    inserted: &[Vec<u8>],
) -> Result<(), StoreError> {
    let end = keys::lane_end(lane);
    let due_of = |key: &[u8]| keys::parse_run(key).map(|k| k.first.due);
    let mut before = None;
    let mut stored_first = None;
    for item in kv.range(lane.to_vec()..end) {
        let (key, _) = item?;
        if before.is_none() {
            before = Some(key.to_vec());
        }
        if !deleted.contains(key.as_ref()) {
            stored_first = Some(key.to_vec());
            break;
        }
    }
    let after = inserted.iter().chain(&stored_first).min();
    let (before, after) = (
        before.as_deref().and_then(due_of),
        after.and_then(|k| due_of(k)),
    );
    if before == after {
        return Ok(());
    }
    if let Some(due) = before {
        batch.remove(keys::head(edit.class, due, &edit.queue, &edit.host));
    }
    if let Some(due) = after {
        batch.insert(keys::head(edit.class, due, &edit.queue, &edit.host), []);
    }
    Ok(())
}
